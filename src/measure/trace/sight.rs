//! What `trace` reads about a process it sees counted: its identity
//! (executable, command line) and, with `--stacks`, its executable
//! mappings — all gone once it exits, so read while it lives. The wait loop
//! looks every [`SIGHT`] (the BPF engine lists the processes it has counted
//! so far); a process that starts and exits between two looks is reported
//! without them.
//!
//! A process is who it is after its last exec: a wrapper script's `exec`,
//! `env`, `sh -c` or a pyenv shim runs the program in the same process,
//! often after the shell already made a call. Two means, together:
//!
//! - every look also checks each process seen and still alive for another
//!   image (`inspect::process::image_mark`, one read of /proc/PID/stat,
//!   whose address-space layout every exec draws anew) and reads it again
//!   when it exec'd — any engine; one read per live process counted, each
//!   look, beside the engine's own listing of them (not with `-a`:
//!   [`Sightings::without_rechecks`]). A traced command's small tree is
//!   looked at every [`SIGHT_COMMAND`];
//! - the BPF engine catches each exec itself (`sched_process_exec`: the
//!   path exec was given and the new image's arguments, `engines::bpf`'s
//!   `execs`), and [`Sightings::after_execs`] names a process by it when
//!   no look saw it after that exec: one gone milliseconds after its exec.
//!
//! The looks alone were measured on this 2-core host under a load of 3–4: a
//! program that lives ~9 ms after its exec (ld.so and 20,000 getrandom
//! calls) was caught 8–18 times in 20, one of ~70 ms always; with the
//! capture, 20 in 20, and 20 in 20 for one that lives ~1 ms (200 calls).
//! Where neither caught the last exec (perf, seccomp: an exec after the last
//! look), what was read before is kept with the comm it had then
//! ([`Seen::comm`]), and a row whose calls carry another name gets no
//! identity (`model::trace`) — unknown, never the wrapper's.

use crate::inspect::identity::Identity;
use crate::inspect::process::{image_mark, is_running, ImageMark};
use crate::inspect::symbols::{Frame, Objects, Snapshot};
use crate::measure::trace::sites::MappedAt;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

/// The page size (`vm_pgoff` counts pages).
fn page_size() -> u64 {
    // SAFETY-free: sysconf has no memory effects.
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok().flatten().map_or(4096, |p| p as u64)
}

/// How often the wait loop looks for new processes.
pub const SIGHT: Duration = Duration::from_millis(50);
/// How often it looks while a traced command's tree is small (at most
/// [`SMALL_TREE`] processes alive): a smoke command's program may live a
/// few milliseconds after its last exec (ld.so and 20,000 getrandom calls:
/// 9 ms here), and a look at a few processes costs microseconds.
pub const SIGHT_COMMAND: Duration = Duration::from_millis(5);
pub const SMALL_TREE: usize = 64;

/// Processes kept at most (`-a` for hours on a busy host): later ones are
/// reported without exe, command line or named frames.
pub const MAX_SEEN: usize = crate::measure::trace::engines::bpf::MAX_PROCS as usize;

/// A process as seen, after the last exec a look caught.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub identity: Identity,
    /// Its cgroup v2 path.
    pub cgroup: Option<String>,
    /// Its executable mappings and their files (`--stacks`); `None`: not read.
    pub snapshot: Option<Snapshot>,
    /// Its comm when read: a process whose calls carry another name
    /// exec'd (or renamed itself) after the last look, and what was read
    /// is not the program that made them.
    pub comm: Option<String>,
    /// The image it ran when read; `None`: gone since (not looked at again).
    image: Option<ImageMark>,
}

/// Processes seen so far, by (pid, start as `Key::start`; 0 when the engine
/// does not know it).
#[derive(Debug, Default)]
pub struct Sightings {
    seen: BTreeMap<(i32, u64), Seen>,
    /// The mapped files of every snapshot, each opened once and parsed at
    /// its first resolve (a cache: resolving fills it, hence the cell).
    objects: RefCell<Objects>,
    /// Also read each process's mappings.
    with_maps: bool,
    /// vdsoctl's own mappings (with maps): its libraries (the C library
    /// the traced command likely loads too) and the host's `[vdso]` image,
    /// to name addresses captured in the kernel ([`Sightings::resolve_mapped`]).
    own: Option<Snapshot>,
    /// Files opened by handle (or tried), by device and inode.
    tried: RefCell<std::collections::HashSet<(String, u64)>>,
    /// Each look checks the processes seen for an exec since.
    recheck: bool,
}

impl Sightings {
    pub fn new(with_maps: bool) -> Sightings {
        let mut objects = Objects::default();
        let own = if with_maps { Snapshot::of(std::process::id() as i32, &mut objects).ok() } else { None };
        Sightings {
            seen: BTreeMap::new(),
            objects: RefCell::new(objects),
            with_maps,
            own,
            tried: RefCell::default(),
            recheck: true,
        }
    }

    /// No look checks the processes seen for an exec (`-a`: a read of
    /// /proc/PID/stat, ~6 µs here, per live process and look would cost
    /// several times the engine's listing of them, a map key each, on a
    /// busy host); the BPF engine's capture of each exec
    /// ([`Sightings::after_execs`]) still names them.
    pub fn without_rechecks(mut self) -> Sightings {
        self.recheck = false;
        self
    }

    /// Hold a file the session knows (the traced command's executable), to
    /// name addresses in it after its processes are gone.
    pub fn add_file(&mut self, path: &std::path::Path) {
        self.objects.get_mut().add_file(path);
    }

    /// Read every process of `procs` not seen yet, if it is still the one
    /// that started at `start` (a pid used again is another process), and
    /// again every one seen that has exec'd since.
    pub fn look(&mut self, procs: impl IntoIterator<Item = (i32, u64)>) {
        let procs: std::collections::BTreeSet<(i32, u64)> = procs.into_iter().collect();
        for (pid, start) in procs {
            if let Some(seen) = self.seen.get(&(pid, start)) {
                let Some(was) = seen.image.as_ref().filter(|_| self.recheck) else { continue };
                match image_mark(pid, start) {
                    Some(now) if now == *was => {}
                    Some(_) => self.read(pid, start),
                    // Gone, or a zombie: what was read stays, never looked at again.
                    None if !is_running(pid, start) => {
                        if let Some(s) = self.seen.get_mut(&(pid, start)) {
                            s.image = None;
                        }
                    }
                    // In the middle of an exec: next look.
                    None => {}
                }
                continue;
            }
            if self.seen.len() >= MAX_SEEN || !is_running(pid, start) {
                continue;
            }
            self.read(pid, start);
        }
    }

    /// Read `pid` as it is now, keeping it only when its image was the same
    /// before and after (it did not exit, hand its pid on or exec meanwhile).
    fn read(&mut self, pid: i32, start: u64) {
        // `-- CMD`'s child runs vdsoctl until its exec: not the command
        // yet (looked at again next time).
        if crate::inspect::process::runs_this_executable(pid) {
            return;
        }
        let Some(image) = image_mark(pid, start) else { return };
        let snapshot = if self.with_maps { Snapshot::of(pid, self.objects.get_mut()).ok() } else { None };
        let identity = Identity::of(pid);
        let cgroup = crate::inspect::cgroup::of_process(pid);
        if image_mark(pid, start).as_ref() == Some(&image) {
            let comm = Some(image.comm().to_string());
            self.seen.insert((pid, start), Seen { identity, cgroup, snapshot, comm, image: Some(image) });
        }
    }

    /// What the engine caught at each process's last exec
    /// ([`Tally::execs`](crate::measure::trace::Tally)): a process seen
    /// with other arguments and another executable exec'd after the look
    /// that read it, and is what the exec ran (its path as exec was given
    /// it, when absolute; no name: none was read). One seen with the same
    /// arguments, or the same executable (a program that rewrote its
    /// argv, as nginx and sshd do), is kept as read.
    pub fn after_execs(&mut self, execs: &BTreeMap<(i32, u64), crate::measure::trace::Exec>) {
        for (&(pid, start), e) in execs {
            let seen = self.seen.get(&(pid, start));
            let same = seen.and_then(|s| s.identity.cmdline.as_deref()).is_some_and(|c| {
                if e.truncated {
                    c.starts_with(&e.argv[..e.argv.len().saturating_sub(1)])
                } else {
                    c == e.argv.as_slice()
                }
            });
            let same_exe = || {
                let theirs = e.exe.as_ref().and_then(|p| std::fs::canonicalize(p).ok());
                let ours = seen.and_then(|s| s.identity.exe.as_deref()).map(std::path::Path::new);
                theirs.is_some_and(|t| ours == Some(t.as_path()))
            };
            if same || same_exe() || (seen.is_none() && self.seen.len() >= MAX_SEEN) {
                continue;
            }
            let identity =
                Identity { exe: e.exe.clone(), cmdline: Some(e.argv.clone()), cmdline_truncated: e.truncated };
            let was = self.seen.remove(&(pid, start)).unwrap_or_default();
            self.seen.insert((pid, start), Seen { identity, comm: None, snapshot: None, ..was });
        }
    }

    /// How long until the next look: [`SIGHT_COMMAND`] for a command's
    /// small tree, else [`SIGHT`].
    pub fn period(&self, command: bool) -> Duration {
        let alive = self.seen.values().filter(|s| s.image.is_some()).count();
        if command && alive <= SMALL_TREE {
            SIGHT_COMMAND
        } else {
            SIGHT
        }
    }

    /// What was read of the process `pid` that started at `start`. Where
    /// one side knows no start (0: the perf engine), the pid alone decides:
    /// the last process seen with it.
    pub fn get(&self, pid: i32, start: u64) -> Option<&Seen> {
        if let Some(s) = self.seen.get(&(pid, start)).or_else(|| self.seen.get(&(pid, 0))) {
            return Some(s);
        }
        let any = self.seen.range((pid, 0)..=(pid, u64::MAX)).next_back().map(|(_, s)| s);
        any.filter(|_| start == 0)
    }
}

impl Sightings {
    /// Name `address` in the process's mappings as first seen; `None` when
    /// they were not read (it exited before it was seen).
    pub fn resolve(&self, pid: i32, start: u64, address: u64) -> Option<Frame> {
        let snapshot = self.get(pid, start)?.snapshot.as_ref()?;
        Some(snapshot.resolve(address, &mut self.objects.borrow_mut()))
    }

    /// Name `address` from its mapping as the kernel captured it at its
    /// site's first call ([`MappedAt`]): through the file (any process's
    /// mapping of it, vdsoctl's own, or a file added), the host's `[vdso]`
    /// for a 64-bit task, or as anonymous memory. `None`: a file nothing
    /// here maps or holds.
    pub fn resolve_mapped(&self, address: u64, at: &MappedAt, is_64: bool) -> Option<Frame> {
        if !at.is_code {
            return Some(Frame::unmapped(address));
        }
        if at.has_file() {
            let in_file = at.in_file(address, page_size());
            let id = (at.dev_text(), at.ino);
            let known = self.objects.borrow().knows(&id.0, id.1);
            if !known && self.tried.borrow_mut().insert(id.clone()) {
                if let Some((file, path)) = open_unseen(at) {
                    self.objects.borrow_mut().add_open((&id.0, id.1), file, path);
                }
            }
            return self.objects.borrow_mut().resolve_in_file((&id.0, id.1), in_file, address, at.is_exe);
        }
        let mut frame = Frame::unmapped(address);
        frame.offset = address.wrapping_sub(at.vm_start);
        if at.vdso == 0 || at.vm_start != at.vdso {
            frame.kind = crate::inspect::symbols::FrameKind::Anonymous;
            return Some(frame);
        }
        // The vDSO: every 64-bit task maps the host's image, which is ours.
        let own = self.own.as_ref().filter(|_| is_64).zip(self.own.as_ref().and_then(Snapshot::vdso_start));
        if let Some((own, start)) = own {
            let mut named = own.resolve(start + frame.offset, &mut self.objects.borrow_mut());
            named.address = address;
            return Some(named);
        }
        frame.kind = crate::inspect::symbols::FrameKind::Vdso;
        frame.object = Some("[vdso]".into());
        // No compat image here: its entry is named from the task's auxv
        // (the instruction that enters the kernel lies within its first
        // bytes; 64 is more than any kernel's __kernel_vsyscall).
        let into = address.wrapping_sub(u64::from(at.sysinfo));
        if at.sysinfo != 0 && into < 64 {
            (frame.symbol, frame.offset) = (Some("__kernel_vsyscall".into()), into);
        }
        Some(frame)
    }
}

/// A file no process vdsoctl saw maps (its processes gone before a look):
/// opened by its inode and generation on the filesystem of its device
/// (`open_by_handle_at`, ext4's handle type), named by the path the kernel
/// gives the descriptor.
fn open_unseen(at: &MappedAt) -> Option<(std::fs::File, String)> {
    let want = format!("{}:{}", at.dev >> 20, at.dev & 0xf_ffff);
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.nth(2)? == want).then(|| w.nth(1).map(str::to_string)).flatten()
    })?;
    let dir = std::fs::File::open(unescape(&mount)).ok()?;
    let file = crate::measure::sys::handle::open_ino32_gen(&dir, at.ino, at.generation).ok()?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let path = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    Some((file, path.to_string_lossy().into_owned()))
}

/// mountinfo's `\ooo` escapes (space, tab, newline, backslash).
fn unescape(field: &str) -> String {
    let mut out = Vec::new();
    let b = field.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let code =
            (b[i] == b'\\').then(|| field.get(i + 1..i + 4)).flatten().and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process looked at while it lives is still named, and its code
    /// still resolved, after it exited.
    #[test]
    fn a_process_seen_alive_is_named_after_it_exits() {
        // sleep's file: /usr/bin/sleep, or busybox where sleep is a link to
        // it (the arm64 guest of scripts/kernel-matrix.sh).
        let path = std::env::var_os("PATH").unwrap_or_default();
        let sleep = std::env::split_paths(&path)
            .find_map(|d| std::fs::canonicalize(d.join("sleep")).ok())
            .expect("sleep on PATH");
        let is_sleep = |p: &str| std::path::Path::new(p) == sleep;
        /// Killed and reaped however the test ends.
        struct Sleep(std::process::Child);
        impl Drop for Sleep {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let child = Sleep(std::process::Command::new("sleep").arg("30").spawn().unwrap());
        let pid = child.0.id() as i32;
        // Until its exec the child runs this test's executable, and its exe
        // link names `sleep` before the exec has mapped sleep's code or set
        // its argv: wait for both (the argv last), a minute at most.
        let mut code = None;
        for _ in 0..60_000 {
            let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
            let maps = crate::inspect::maps::parse(&text).unwrap();
            code = maps.into_iter().find(|m| m.executable() && m.path.as_deref().is_some_and(is_sleep));
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if code.is_some() && argv == b"sleep\x0030\x00" {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut seen = Sightings::new(true);
        seen.look([(pid, 0)]);
        drop(child);
        let s = seen.get(pid, 0).expect("seen while alive");
        assert!(s.identity.exe.as_deref().is_some_and(is_sleep), "{s:?}");
        assert_eq!(s.identity.cmdline.as_deref(), Some(&["sleep".to_string(), "30".into()][..]));
        let code = code.expect("sleep's text mapping");
        let frame = seen.resolve(pid, 0, code.start + 16).expect("a snapshot was taken");
        assert_eq!(frame.kind, crate::inspect::symbols::FrameKind::Object);
        assert!(frame.object.as_deref().is_some_and(is_sleep), "{frame:?}");
        // Gone before it was looked at: nothing is made up.
        let mut late = Sightings::new(true);
        late.look([(pid, 0)]);
        assert!(late.get(pid, 0).is_none() && late.resolve(pid, 0, code.start).is_none());
    }

    /// A process that exec'd after it was seen is read again: its
    /// identity is the program's, not the shell's that exec'd it.
    #[test]
    fn a_process_is_read_again_after_its_exec() {
        // The kernel matrix runs these unit tests in a guest without the
        // checkout and its tools: they need the build host's.
        if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read line; exec sleep 30"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let exe = || std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let shell = exe();
        let argv = || std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        // The shell, once it runs (the fork runs this test until its exec).
        for _ in 0..60_000 {
            if argv().starts_with(b"sh\0") {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut seen = Sightings::new(false);
        seen.look([(pid, 0)]);
        let first = seen.get(pid, 0).expect("seen").identity.clone();
        assert_eq!(first.cmdline.as_deref().and_then(|c| c.first()).map(String::as_str), Some("sh"), "{first:?}");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        for _ in 0..60_000 {
            if argv() == b"sleep\x0030\x00" && exe() != shell {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        seen.look([(pid, 0)]);
        let _ = child.kill();
        let _ = child.wait();
        let s = seen.get(pid, 0).expect("seen");
        assert_eq!(s.identity.cmdline.as_deref(), Some(&["sleep".to_string(), "30".into()][..]), "{s:?}");
        assert_eq!(s.comm.as_deref(), Some("sleep"));
        assert_ne!(s.identity.exe, first.exe);
        // Gone: what was read stays.
        seen.look([(pid, 0)]);
        assert_eq!(seen.get(pid, 0).and_then(|s| s.comm.as_deref()), Some("sleep"));
    }

    /// An exec the engine caught after the last look names the process;
    /// one the look already saw keeps the executable the kernel named.
    #[test]
    fn an_exec_caught_after_the_last_look_names_the_process() {
        use crate::measure::trace::Exec;
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut seen = Sightings::new(false);
        let shell = Identity {
            exe: Some("/usr/bin/dash".into()),
            cmdline: Some(argv(&["sh", "./run"])),
            ..Identity::default()
        };
        seen.seen.insert(
            (7, 100),
            Seen { identity: shell, comm: Some("run".into()), cgroup: Some("/a".into()), ..Seen::default() },
        );
        let ld = Identity {
            exe: Some("/lib/ld-real.so".into()),
            cmdline: Some(argv(&["/lib/ld.so", "./p"])),
            ..Identity::default()
        };
        seen.seen.insert((8, 100), Seen { identity: ld.clone(), ..Seen::default() });
        // A program that rewrote its argv (a title): the same executable, kept.
        let sleep = std::fs::canonicalize("/bin/sleep").unwrap().display().to_string();
        let titled = Identity { exe: Some(sleep), cmdline: Some(argv(&["sleep: worker"])), ..Identity::default() };
        seen.seen.insert((10, 100), Seen { identity: titled.clone(), ..Seen::default() });
        let execs = [
            ((7, 100), Exec { exe: Some("/lib/ld.so".into()), argv: argv(&["/lib/ld.so", "./p"]), truncated: false }),
            ((8, 100), Exec { exe: Some("/lib/ld.so".into()), argv: argv(&["/lib/ld.so", "./p"]), truncated: false }),
            ((9, 100), Exec { exe: None, argv: argv(&["./p"]), truncated: false }),
            ((10, 100), Exec { exe: Some("/bin/sleep".into()), argv: argv(&["sleep", "9"]), truncated: false }),
        ];
        seen.after_execs(&execs.into_iter().collect());
        let s = seen.get(7, 100).unwrap();
        assert_eq!(s.identity.exe.as_deref(), Some("/lib/ld.so"));
        assert_eq!(s.identity.cmdline, Some(argv(&["/lib/ld.so", "./p"])));
        assert_eq!((s.comm.as_deref(), s.cgroup.as_deref()), (None, Some("/a")), "the comm was the shell's");
        assert_eq!(seen.get(8, 100).unwrap().identity, ld, "seen after its exec: kept as read");
        assert_eq!(seen.get(10, 100).unwrap().identity, titled);
        let gone = seen.get(9, 100).unwrap();
        assert_eq!((gone.identity.exe.as_deref(), gone.identity.cmdline.clone()), (None, Some(argv(&["./p"]))));
    }

    /// A pid used again is another process: never given the first one's
    /// identity; an engine without start times goes by the pid alone.
    #[test]
    fn a_reused_pid_is_not_taken_for_the_process_seen_before() {
        let named =
            |exe: &str| Seen { identity: Identity { exe: Some(exe.into()), ..Identity::default() }, ..Seen::default() };
        let mut seen = Sightings::new(false);
        seen.seen.insert((7, 100), named("/bin/first"));
        let exe = |s: Option<&Seen>| s.and_then(|s| s.identity.exe.clone());
        assert_eq!(exe(seen.get(7, 100)).as_deref(), Some("/bin/first"));
        assert_eq!(exe(seen.get(7, 200)), None, "another start: another process");
        assert_eq!(exe(seen.get(7, 0)).as_deref(), Some("/bin/first"), "no start known: the pid decides");
        seen.seen.insert((8, 0), named("/bin/perf-seen"));
        assert_eq!(exe(seen.get(8, 300)).as_deref(), Some("/bin/perf-seen"));
    }
}
