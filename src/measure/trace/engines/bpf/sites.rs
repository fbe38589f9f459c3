//! `--sites` in the BPF engine, user space's half: the site rows (which
//! hold the rows' counts then) read back, and the stack-word filter kept
//! (`layout::unread`, judged by `measure::trace::sites::WordFilter`).

use super::layout::{self, key, skey, unread, ABI_NATIVE};
use super::{sum_per_cpu, sys, BpfTracer, MAX_SITES};
use crate::arch;
use crate::inspect::symbols::FrameKind;
use crate::measure::trace::sight::{Sightings, SIGHT};
use crate::measure::trace::sites::{RawSite, SiteLook, WordFilter};
use crate::measure::trace::{Site, Tally};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::time::{Duration, Instant};

/// The site rows (boxed in [`super::Maps`]: most traces have none), and the
/// stack-word filter with what user space knows of it. Their addresses are
/// named by the session's sightings of each process.
#[derive(Debug)]
pub(super) struct SiteMap {
    pub map: sys::Map,
    /// `layout::unread`: the program reads it, [`BpfTracer::tend_sites`] writes it.
    pub unread: sys::Map,
    /// The filter's words as written.
    bits: Vec<u64>,
    filter: WordFilter,
    /// The next look at the site map, and the wait after it: [`SIGHT`]
    /// while sites are new or wait to be judged, doubled while nothing new
    /// turns up (a look reads every key), up to [`LOOK_MAX`].
    pub(super) next_look: Instant,
    every: Duration,
}

/// The longest wait between two looks at the site map.
const LOOK_MAX: Duration = Duration::from_millis(1600);

impl SiteMap {
    /// Create the site map and the filter.
    pub fn create(map: impl Fn(sys::MapSpec<'_>) -> crate::error::Result<sys::Map>) -> crate::error::Result<SiteMap> {
        Ok(SiteMap {
            map: map(super::counters(skey::SIZE, MAX_SITES, "vdsoctl_sites"))?,
            unread: map(sys::MapSpec {
                map_type: super::MAP_ARRAY,
                key_size: 4,
                value_size: 8,
                max_entries: unread::WORDS,
                flags: 0,
                name: "vdsoctl_nowords",
            })?,
            bits: vec![0; unread::WORDS as usize],
            filter: WordFilter::default(),
            next_look: Instant::now(),
            every: SIGHT,
        })
    }

    /// The native site rows' keys, as (pid, start, ip, word); no values.
    fn native_rows(&self) -> Vec<RawSite> {
        let keys = self.map.keys(MAX_SITES + 1).map_while(io::Result::ok);
        let native = keys.filter(|k| layout::split_word(key::WORD.get(k)).0 == ABI_NATIVE);
        native
            .map(|k| (key::TGID.get(&k) as u32 as i32, key::START.get(&k), skey::IP.get(&k), skey::RET.get(&k)))
            .collect()
    }
}

/// Address ranges: a process's executable mappings.
type Ranges = Vec<(u64, u64)>;

/// The session's sightings, for judging sites; an address not code in a
/// process's mappings as first seen is looked up in its mappings now (a
/// library loaded since, an exec), once per process and look.
struct Looked<'a> {
    seen: &'a Sightings,
    /// Per (pid, start), this look: the executable mappings of now (`None`:
    /// gone), and whether the process is gone.
    now: RefCell<HashMap<(i32, u64), Option<Ranges>>>,
    gone: RefCell<HashMap<(i32, u64), bool>>,
}

impl SiteLook for Looked<'_> {
    fn gone(&self, pid: i32, start: u64) -> bool {
        let mut gone = self.gone.borrow_mut();
        *gone.entry((pid, start)).or_insert_with(|| !crate::inspect::process::is_running(pid, start))
    }

    fn is_code(&self, pid: i32, start: u64, addr: u64) -> Option<bool> {
        if self.seen.resolve(pid, start, addr)?.kind != FrameKind::Unmapped {
            return Some(true);
        }
        let mut now = self.now.borrow_mut();
        let code = now.entry((pid, start)).or_insert_with(|| executable_now(pid, start)).as_ref()?;
        Some(code.iter().any(|(lo, hi)| (*lo..*hi).contains(&addr)))
    }

    fn place(&self, pid: i32, start: u64, addr: u64) -> Option<Option<String>> {
        let f = self.seen.resolve(pid, start, addr)?;
        let object = match f.kind {
            FrameKind::Object => f.object.as_deref(),
            FrameKind::Vdso => Some("[vdso]"),
            // Anonymous code is read on: nothing tells two such places apart.
            FrameKind::Anonymous => return Some(None),
            // A syscall's address is code: outside the mappings first seen
            // it is not known (mapped since, or a process seen exiting).
            FrameKind::Unmapped | FrameKind::Vsyscall => return None,
        };
        Some(object.map(|o| {
            let symbol = f.symbol.as_deref().unwrap_or("-");
            format!("{o} {} {symbol}+{:#x}", f.build_id.as_deref().unwrap_or("-"), f.offset)
        }))
    }
}

/// The executable mappings of process `pid` (started at `start`) now;
/// `None` when it is gone or another process holds the pid.
fn executable_now(pid: i32, start: u64) -> Option<Ranges> {
    use crate::inspect::process::{is_running, Process};
    let maps = Process::open(Some(pid)).and_then(|p| p.maps()).ok()?;
    is_running(pid, start).then(|| maps.iter().filter(|m| m.executable()).map(|m| (m.start, m.end)).collect())
}

impl BpfTracer {
    /// `--sites`: judge the native sites counted since the last look, and
    /// set or clear their bits in the stack-word filter ([`WordFilter`]),
    /// naming their words through `seen`. Cheap when not due; a look reads
    /// the site map's keys (no values).
    pub fn tend_sites(&mut self, seen: &Sightings) {
        let Some(sites) = self.maps.sites.as_deref_mut() else { return };
        let now = Instant::now();
        if now < sites.next_look {
            return;
        }
        let rows = sites.native_rows();
        let judged = sites.filter.judged();
        let look = Looked { seen, now: RefCell::default(), gone: RefCell::default() };
        let changes = sites.filter.judge(&rows, &look);
        let busy =
            rows.is_empty() || !changes.is_empty() || sites.filter.judged() > judged || sites.filter.pending() > 0;
        for ((word, bit), on) in changes {
            let w = &mut sites.bits[word as usize];
            *w = if on { *w | 1 << bit } else { *w & !(1 << bit) };
            // A bit not written costs only the read it would have saved.
            let _ = sites.unread.update(&word.to_ne_bytes(), &w.to_ne_bytes(), 0);
        }
        sites.every = if busy { SIGHT } else { (sites.every * 2).min(LOOK_MAX) };
        sites.next_look = now + sites.every;
    }

    /// `--sites`: every site row, summed over CPUs, into `tally.sites`.
    pub(super) fn read_sites(&self, tally: &mut Tally) -> io::Result<()> {
        let host = self.host;
        let Some(sites) = self.maps.sites.as_deref() else { return Ok(()) };
        let mut value = vec![0u8; sites.map.value_size()];
        let mut rows = Vec::new();
        for k in sites.map.keys(MAX_SITES + 1) {
            let k = k?;
            if sites.map.lookup(&k, &mut value)? {
                rows.push((k, sum_per_cpu(&value)));
            }
        }
        let insn_len = arch::SITE_REGS.map_or(0, |r| r.insn_len);
        for (k, n) in rows {
            // The count row's calls are its sites'.
            self.add_row(tally, &k[..key::SIZE], n);
            // [vsyscall] calls have no user registers here: their rows say it.
            let Some(Ok(key)) = Self::row_key(host, &k) else { continue };
            let site = Site { ip: skey::IP.get(&k).saturating_sub(insn_len), ret: skey::RET.get(&k) };
            *tally.sites.entry((key, site)).or_default() += n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Options, Scope};
    use super::*;
    use std::io::BufRead;

    /// fixtures/clock_loop.c built into a fresh directory, or None (said as
    /// a SKIP; a failure in CI) without root, the x86_64 site registers or gcc.
    fn clock_loop_or_skip(ci: bool) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
        if !nix::unistd::geteuid().is_root() && !ci {
            eprintln!("SKIP: loading a BPF program needs root");
            return None;
        }
        if arch::SITE_REGS.is_none() {
            eprintln!("SKIP: --sites reads the user registers on x86_64 only");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("clock_loop");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/clock_loop.c");
        let built = std::process::Command::new("gcc").args(["-O2", "-pthread", "-o"]).arg(&bin).arg(src).status();
        if !built.is_ok_and(|s| s.success()) {
            assert!(!ci, "gcc is required in CI");
            eprintln!("SKIP: no gcc");
            return None;
        }
        Some((dir, bin))
    }

    /// A run, killed and reaped however the test ends.
    struct Run(std::process::Child);
    impl Drop for Run {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// One run of 1,000 calls of `mode` at a fixed address (`setarch -R`),
    /// added as a root of `t` before its calls, left paused after them
    /// (alive, to be looked at).
    fn start_run(t: &BpfTracer, bin: &std::path::Path, mode: &str) -> (Run, i32) {
        let mut c = Run(std::process::Command::new("setarch")
            .args(["-R"])
            .arg(bin)
            .args([mode, "1", "1000", "1", "wait"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("setarch (util-linux)"));
        let mut out = std::io::BufReader::new(c.0.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n");
        let pid = c.0.id() as i32;
        t.add_root(pid, None).unwrap();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGUSR1).unwrap();
        line.clear();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "done\n");
        (c, pid)
    }

    /// Each run's 1,000 calls are all in its row; an inline syscall's word
    /// is read until judged and not after, a leaf's caller read every run.
    fn assert_site_words(tally: &Tally, pids: Vec<(&str, Vec<i32>)>) {
        let words = |pid: i32| -> Vec<(u64, u64)> {
            tally.sites.iter().filter(|((k, _), _)| k.pid == pid).map(|((_, s), n)| (s.ret, *n)).collect()
        };
        let calls = |pid: i32| tally.counts.iter().filter(|(k, _)| k.pid == pid).map(|(_, n)| n).sum::<u64>();
        for (mode, runs) in pids {
            let all: Vec<(u64, Vec<(u64, u64)>)> = runs.iter().map(|p| (calls(*p), words(*p))).collect();
            assert!(
                all.iter().all(|(n, w)| *n == 1000 && w.iter().map(|w| w.1).sum::<u64>() == 1000),
                "{mode}: {all:x?}"
            );
            if mode == "inline" {
                // Read until judged; the same code in the next processes
                // (same address: no ASLR) is not read, and keeps the bit.
                assert_eq!(all[0].1, vec![(0x5ca1_ab1e, 1000)], "read until judged");
                assert_eq!((&all[1].1, &all[2].1), (&vec![(0, 1000)], &vec![(0, 1000)]), "judged: not read");
            } else {
                assert!(all[0].1.len() == 1 && all[0].1[0].0 != 0, "a leaf, read: {all:x?}");
                assert!(all.iter().all(|(_, w)| *w == all[0].1), "the same caller every run: {all:x?}");
            }
        }
    }

    /// `--sites`' stack-word filter, end to end: a site whose word is no
    /// code (an inline syscall in a function with a frame) stops reading
    /// it once judged — the same program run again at the same address
    /// (`setarch -R`: no ASLR) has only unread words — while a leaf
    /// (libc's `syscall()`) goes on reading its caller; each run's calls
    /// are all in its row. Root, BTF and gcc: skips visibly without them,
    /// fails in CI.
    #[test]
    fn sites_stop_reading_a_stack_word_that_names_no_caller() {
        let ci = std::env::var_os("CI").is_some();
        let Some((_dir, bin)) = clock_loop_or_skip(ci) else { return };
        let o =
            Options { scope: Scope::Trees, per_thread: false, stacks: false, cgroups: &[], sites: true, fentry: None };
        let mut t = match BpfTracer::load(&o) {
            Ok(t) => t,
            Err(e) if !ci => return eprintln!("SKIP: the BPF engine cannot load here: {e}"),
            Err(e) => panic!("required facility missing in CI: {e}"),
        };
        t.attach().unwrap();
        let mut seen = crate::measure::trace::sight::Sightings::new(true);
        let mut judge = |t: &mut BpfTracer| {
            seen.look(t.processes());
            t.maps.sites.as_mut().unwrap().next_look = Instant::now();
            t.tend_sites(&seen);
        };
        let mut children = Vec::new();
        let mut pids = Vec::new();
        for mode in ["inline", "raw"] {
            let mut runs = Vec::new();
            for _ in 0..3 {
                let (child, pid) = start_run(&t, &bin, mode);
                judge(&mut t);
                children.push(child);
                runs.push(pid);
            }
            pids.push((mode, runs));
        }
        let tally = t.snapshot().unwrap();
        drop(children);
        assert_site_words(&tally, pids);
    }
}
