//! What `trace` reads about a process the first time it sees it counted:
//! its identity (executable, command line) and, with `--stacks`, its
//! executable mappings — all gone once it exits, so read while it lives.
//! The wait loop looks every [`SIGHT`] (the BPF engine lists the processes
//! it has counted so far); a process that starts and exits between two
//! looks is reported without them.

use crate::inspect::identity::Identity;
use crate::inspect::symbols::{Frame, Objects, Snapshot};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

/// How often the wait loop looks for new processes.
pub const SIGHT: Duration = Duration::from_millis(50);

/// Processes kept at most (`-a` for hours on a busy host): later ones are
/// reported without exe, command line or named frames.
pub const MAX_SEEN: usize = crate::measure::trace::engines::bpf::MAX_PROCS as usize;

/// A process as first seen.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub identity: Identity,
    /// Its cgroup v2 path.
    pub cgroup: Option<String>,
    /// Its executable mappings and their files (`--stacks`); `None`: not read.
    pub snapshot: Option<Snapshot>,
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
}

impl Sightings {
    pub fn new(with_maps: bool) -> Sightings {
        Sightings { seen: BTreeMap::new(), objects: RefCell::default(), with_maps }
    }

    /// Read every process of `procs` not seen yet, if it is still the one
    /// that started at `start` (a pid used again is another process).
    pub fn look(&mut self, procs: impl IntoIterator<Item = (i32, u64)>) {
        for (pid, start) in procs {
            if self.seen.len() >= MAX_SEEN {
                return;
            }
            if self.seen.contains_key(&(pid, start)) || !crate::inspect::process::is_running(pid, start) {
                continue;
            }
            // `-- CMD`'s child runs vdsoctl until its exec: not the command
            // yet (looked at again next time).
            if crate::inspect::process::runs_this_executable(pid) {
                continue;
            }
            let snapshot = if self.with_maps { Snapshot::of(pid, self.objects.get_mut()).ok() } else { None };
            let identity = Identity::of(pid);
            let cgroup = crate::inspect::cgroup::of_process(pid);
            // Read after: the process did not exit or hand its pid on meanwhile.
            if crate::inspect::process::is_running(pid, start) {
                self.seen.insert((pid, start), Seen { identity, cgroup, snapshot });
            }
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

    /// A pid used again is another process: never given the first one's
    /// identity; an engine without start times goes by the pid alone.
    #[test]
    fn a_reused_pid_is_not_taken_for_the_process_seen_before() {
        let named = |exe: &str| Seen {
            identity: Identity { exe: Some(exe.into()), ..Identity::default() },
            snapshot: None,
            cgroup: None,
        };
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
