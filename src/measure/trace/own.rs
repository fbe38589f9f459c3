//! vdsoctl's own processes, left out of what a system-wide trace counts
//! (`trace -a`, `serve`, the host `check`'s window): vdsoctl's clock bench
//! makes raw clock syscalls and calls the `[vsyscall]` page on purpose, so
//! one `vdsoctl check` (22,111 such syscalls) or a second `serve` (~200/s)
//! would otherwise be a finding of every other vdsoctl on the host.
//!
//! Told by identity, never by name: a process is vdsoctl's own when it is
//! this process, or when `/proc/PID/exe` is the file this vdsoctl runs —
//! its (st_dev, st_ino), taken at start ([`ExeId`]). A program copied to
//! `vdsoctl` has another inode and is counted like any other; a hard link
//! to the binary is the binary. This process is also left out in the
//! kernel (the BPF programs' own-tgid test, the perf engine's own pid):
//! vdsoctl spawns no other process of its own (the bench runs in-process;
//! `-- CMD`'s guardian runs this executable and makes no clock syscall,
//! and the command is the user's, counted).
//!
//! Judged on attribution, in user space, while the process lives: the
//! session (every [`SIGHT`](super::sight::SIGHT)) and `serve` (every tick)
//! look at the processes the engine has counted so far. A process is
//! judged at its first look by what it runs then, and one judged own again
//! at every look while it lives (an exec to another file makes it
//! counted). One that ran vdsoctl and exited before any look (a run
//! shorter than a look apart) is not known as vdsoctl's and stays counted. Calls left out are not lost:
//! [`Tally::own`] keeps them per process, and reports say how many.

use crate::inspect::process::{self, ExeId};
use crate::measure::trace::Tally;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Processes judged at most (a busy host over hours): later ones are
/// counted unjudged. Verdicts of processes the engine no longer holds are
/// dropped at each [`Own::strip`].
const MAX_JUDGED: usize = super::sight::MAX_SEEN;

/// Which counted processes are vdsoctl's own, and what they called.
#[derive(Debug)]
pub struct Own {
    /// This process (thread group).
    me: i32,
    /// The running binary's identity, stat'd at start; `None` when
    /// /proc/self/exe cannot be read (then only `me` is left out).
    exe: Option<ExeId>,
    /// Each process looked at, by (pid, start as `Key::start`): whether it
    /// is vdsoctl's own.
    judged: HashMap<(i32, u64), bool>,
    /// Own processes found gone at the last strip: their counts are final
    /// at the next one.
    dying: HashSet<(i32, u64)>,
    /// Own processes whose final count was read: the engine may forget them.
    buried: HashSet<(i32, u64)>,
    /// The final counts of own processes the engine was told to forget.
    retired: u64,
}

impl Own {
    /// This process and the file it runs, as of now.
    pub fn new() -> Own {
        Own::of(std::process::id() as i32, process::own_exe_identity())
    }

    fn of(me: i32, exe: Option<ExeId>) -> Own {
        Own { me, exe, judged: HashMap::new(), dying: HashSet::new(), buried: HashSet::new(), retired: 0 }
    }

    /// Judge every process of `procs` not judged yet, if it still is the
    /// one that started at `start` (a process already gone stays unjudged).
    /// One judged vdsoctl's own is judged again while it lives: if it has
    /// exec'd another file since, it is counted from then on, its whole
    /// rows with it (rows are per process, not per image) — an exec never
    /// hides a program's calls.
    pub fn look(&mut self, procs: impl IntoIterator<Item = (i32, u64)>) {
        for (pid, start) in procs {
            let again = self.judged.get(&(pid, start)) == Some(&true) && pid != self.me;
            if !again && (self.judged.contains_key(&(pid, start)) || self.judged.len() >= MAX_JUDGED) {
                continue;
            }
            if pid == self.me {
                self.judged.insert((pid, start), true);
                continue;
            }
            if !process::is_running(pid, start) {
                // Gone: a verdict stands as it was last judged.
                continue;
            }
            // No file to tell (a zombie, whose exe is gone before its pid,
            // a kernel thread, an exe not ours to read): a verdict stands,
            // and a process never judged is counted.
            let Some(runs) = process::exe_identity(pid) else { continue };
            // Read after: the process did not exit or hand its pid on meanwhile.
            if process::is_running(pid, start) {
                self.judged.insert((pid, start), Some(runs) == self.exe);
            }
        }
    }

    /// Whether process (`pid`, `start`) was judged vdsoctl's own.
    pub fn is_own(&self, pid: i32, start: u64) -> bool {
        pid == self.me || self.judged.get(&(pid, start)) == Some(&true)
    }

    /// The pids of the processes judged vdsoctl's own, each with the start
    /// of the latest such process: what a pid alone (`start` 0: the perf
    /// engine, `[vsyscall]` and unattributed counts) stands for.
    fn own_pids(&self) -> HashMap<i32, u64> {
        let mut pids: HashMap<i32, u64> = HashMap::new();
        for ((pid, start), _) in self.judged.iter().filter(|(_, own)| **own) {
            pids.entry(*pid).and_modify(|s| *s = (*s).max(*start)).or_insert(*start);
        }
        pids.entry(self.me).or_insert(0);
        pids
    }

    /// Move the calls of vdsoctl's own processes out of `tally` (counts,
    /// `[vsyscall]` calls, unattributed calls, sites, stacks) into
    /// [`Tally::own`], per process. Looks at `tally`'s processes first, so
    /// whatever lives now is judged.
    pub fn strip(&mut self, tally: &mut Tally) {
        self.look(tally.processes());
        // Verdicts of processes the engine no longer holds are dropped.
        let held: HashSet<(i32, u64)> = tally.processes().into_iter().collect();
        self.judged.retain(|p, _| held.contains(p));
        // The process each own pid stands for (pid-keyed tallies).
        let own_pids = self.own_pids();
        let mine = |pid: i32, start: u64| self.is_own(pid, start) || start == 0 && own_pids.contains_key(&pid);
        let found: BTreeSet<(i32, u64)> = held.iter().copied().filter(|(pid, start)| mine(*pid, *start)).collect();
        if found.is_empty() {
            return;
        }
        let mut own = std::mem::take(&mut tally.own);
        tally.counts.retain(|k, v| {
            let mine = mine(k.pid, k.start);
            if mine {
                *own.entry((k.pid, k.start)).or_default() += *v;
            }
            !mine
        });
        let of_pid = |pid: &i32| own_pids.get(pid).map(|start| (*pid, *start));
        tally.vsyscall.retain(|(pid, _), v| match of_pid(pid) {
            Some(p) => {
                *own.entry(p).or_default() += *v;
                false
            }
            None => true,
        });
        tally.unrecorded.retain(|pid, v| match of_pid(pid) {
            Some(p) => {
                *own.entry(p).or_default() += *v;
                false
            }
            None => true,
        });
        tally.sites.retain(|(k, _), _| !mine(k.pid, k.start));
        tally.stacks.retain(|k, _| !mine(k.pid, k.start));
        tally.own = own;
        // Gone at the last strip and read again now: final.
        let gone: HashSet<(i32, u64)> = found.iter().copied().filter(|p| !process::is_running(p.0, p.1)).collect();
        for p in gone.iter().filter(|p| self.dying.contains(p)) {
            self.buried.insert(*p);
        }
        self.dying = gone;
    }

    /// Whether the engine may forget process (`pid`, `start`): vdsoctl's
    /// own, found gone at one strip and read again at the next, so its
    /// count is final (and kept in [`Own::left_out`]).
    pub fn forgettable(&self, pid: i32, start: u64) -> bool {
        self.buried.contains(&(pid, start))
    }

    /// After the engine forgot the processes [`Own::forgettable`] named:
    /// their final counts in `last` (the tally of the last strip) are kept.
    pub fn forgot(&mut self, last: &Tally) {
        for p in self.buried.drain() {
            self.retired += last.own.get(&p).copied().unwrap_or(0);
            self.dying.remove(&p);
            self.judged.remove(&p);
        }
    }

    /// Calls of vdsoctl's own processes left out since counting began:
    /// those the engine still holds (in `last`) and those it forgot.
    pub fn left_out(&self, last: &Tally) -> u64 {
        self.retired + last.own.values().sum::<u64>()
    }
}

impl Default for Own {
    fn default() -> Own {
        Own::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{self, VdsoFn};
    use crate::measure::trace::{Clock, Key};

    fn key(pid: i32, start: u64) -> Key {
        Key {
            pid,
            tid: None,
            abi: arch::HOST_ABI.expect("a known ABI"),
            func: VdsoFn::ClockGettime,
            clock: Clock::Id(1),
            comm: None,
            start,
        }
    }

    #[test]
    fn own_calls_move_out_of_the_tally() {
        let me = std::process::id() as i32;
        let mut own = Own::of(me, process::own_exe_identity());
        let mut tally = Tally::default();
        tally.counts.insert(key(me, 0), 22_111);
        // A pid that cannot exist: never judged, so counted.
        tally.counts.insert(key(5_000_000, 7), 40);
        tally.vsyscall.insert((me, VdsoFn::Time), 1_005);
        tally.unrecorded.insert(me, 3);
        own.strip(&mut tally);
        assert_eq!(tally.counts.keys().map(|k| k.pid).collect::<Vec<_>>(), vec![5_000_000]);
        assert!(tally.vsyscall.is_empty() && tally.unrecorded.is_empty());
        assert_eq!(tally.own.get(&(me, 0)), Some(&(22_111 + 1_005 + 3)));
        assert_eq!(own.left_out(&tally), 23_119);
        // A later snapshot: the interval's own calls by difference.
        let mut later = Tally::default();
        later.counts.insert(key(me, 0), 22_200);
        later.vsyscall.insert((me, VdsoFn::Time), 1_005);
        later.unrecorded.insert(me, 3);
        own.strip(&mut later);
        assert_eq!(later.since(&tally).own.get(&(me, 0)), Some(&89));
    }

    #[test]
    fn another_file_is_not_ours_whatever_its_name() {
        // The kernel matrix runs these unit tests in a guest without the
        // checkout and its tools: they need the build host's.
        if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        // A child running `sleep`: another executable, so counted.
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let pid = child.id() as i32;
        let mut own = Own::of(std::process::id() as i32, process::own_exe_identity());
        own.look([(pid, 0)]);
        let judged = own.is_own(pid, 0);
        // The same child, were vdsoctl the file it runs.
        let mut as_if = Own::of(std::process::id() as i32, process::exe_identity(pid));
        as_if.look([(pid, 0)]);
        let as_if_ours = as_if.is_own(pid, 0);
        let _ = child.kill();
        let _ = child.wait();
        assert!(!judged);
        assert!(as_if_ours);
    }

    #[test]
    fn a_gone_process_is_forgotten_once_final_and_its_calls_kept() {
        // A child judged ours (as if its file were vdsoctl's), then gone.
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let pid = child.id() as i32;
        let mut own = Own::of(std::process::id() as i32, process::exe_identity(pid));
        own.look([(pid, 0)]);
        let _ = child.kill();
        let _ = child.wait();
        let mut tally = Tally::default();
        tally.counts.insert(key(pid, 0), 10);
        // Found gone: not final yet.
        own.strip(&mut tally);
        assert!(tally.counts.is_empty() && !own.forgettable(pid, 0));
        // Read again: final, for the engine to forget; its calls stay said.
        let mut again = Tally::default();
        again.counts.insert(key(pid, 0), 12);
        own.strip(&mut again);
        assert!(own.forgettable(pid, 0));
        own.forgot(&again);
        assert!(!own.forgettable(pid, 0));
        assert_eq!(own.left_out(&Tally::default()), 12);
    }

    #[test]
    fn an_exec_to_another_file_is_counted_from_then() {
        // The kernel matrix runs these unit tests in a guest without the
        // checkout and its tools: they need the build host's.
        if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        // A shell that execs `sleep` once told to: judged as if the shell's
        // file were vdsoctl's, it is ours until the exec, not after.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read _; exec sleep 5"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let shell = process::exe_identity(pid);
        let mut own = Own::of(std::process::id() as i32, shell);
        own.look([(pid, 0)]);
        let before = own.is_own(pid, 0);
        drop(child.stdin.take());
        let mut execd = false;
        for _ in 0..400 {
            if process::exe_identity(pid).is_some_and(|id| Some(id) != shell) {
                execd = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        own.look([(pid, 0)]);
        let after = own.is_own(pid, 0);
        let _ = child.kill();
        let _ = child.wait();
        assert!(before && execd);
        assert!(!after);
    }
}
