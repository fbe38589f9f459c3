//! Whether `-- CMD`'s tree reached its auditor with ptrace, and an end to
//! it when it did.
//!
//! vdsoctl and the guardian are not dumpable, so a tree of the same uid
//! cannot ptrace them ([`crate::measure::sys::spawn::out_of_reach`]). A
//! tree with CAP_SYS_PTRACE (run as root, or a file capability) can: no
//! flag of a process takes that capability's reach away, and a tracer
//! that holds vdsoctl (or its guardian) could stop it past its deadlines,
//! or read and rewrite its counts. So a thread of its own looks, every
//! [`LOOK`], at who traces each task of vdsoctl and of the guardian. A
//! tracer that descends from the guardian (the tree's subreaper: every
//! process of the tree does) is the tree's: it is killed at once (its
//! death lets the held task go), and the verdict says so (a FAIL). A
//! tracer outside the tree (`strace -f vdsoctl …`, gdb) is the user's and
//! left alone.
//!
//! What it cannot see: a hold shorter than a look apart, and a tree that
//! stops every thread of vdsoctl at once (this one too). The guardian's own
//! deadline (`--timeout`) still ends such a tree.

use crate::inspect::process;
use crate::measure::sys::spawn;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the tracers are read: 2 × 2 status files, 50 times a second.
pub const LOOK: Duration = Duration::from_millis(20);

/// Which of vdsoctl's processes a tracer of the tree held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Held {
    /// vdsoctl itself (one of its threads).
    Auditor,
    /// The guardian between vdsoctl and the command.
    Guardian,
}

/// A process of the audited tree found tracing vdsoctl or its guardian.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Seizure {
    /// The tracer's pid, and its comm when it was seen.
    pub tracer: i32,
    pub comm: String,
    pub held: Held,
    /// The task it held (a thread id of `held`).
    pub tid: i32,
    /// Whether vdsoctl's SIGKILL reached it (`false`: it was gone first).
    pub killed: bool,
}

/// The looking thread, while the tree runs; dropped unfinished (an
/// error before the command ran), it stops at its next look.
#[derive(Debug)]
pub struct ReachWatch {
    stop: Arc<AtomicBool>,
    looker: Option<JoinHandle<Vec<Seizure>>>,
}

impl ReachWatch {
    /// Start looking at vdsoctl's and `guardian`'s tracers.
    pub fn start(guardian: i32) -> Option<ReachWatch> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let own = std::process::id() as i32;
        let looker = std::thread::Builder::new()
            .name("reach".into())
            .spawn(move || {
                let mut seen = Vec::new();
                while !stopped.load(Ordering::Relaxed) {
                    look(own, guardian, &mut seen);
                    std::thread::park_timeout(LOOK);
                }
                look(own, guardian, &mut seen);
                seen
            })
            .ok()?;
        Some(ReachWatch { stop, looker: Some(looker) })
    }

    /// Stop looking: what was seen, in the order it was.
    pub fn finish(mut self) -> Vec<Seizure> {
        self.stop.store(true, Ordering::Relaxed);
        // Woken, not waited for: a run ends without a look's 20 ms more.
        let looker = self.looker.take();
        if let Some(l) = &looker {
            l.thread().unpark();
        }
        looker.and_then(|l| l.join().ok()).unwrap_or_default()
    }
}

impl Drop for ReachWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One look: each held task of vdsoctl and the guardian whose tracer is
/// of the tree, its tracer killed.
fn look(own: i32, guardian: i32, seen: &mut Vec<Seizure>) {
    for (held, pid) in [(Held::Auditor, own), (Held::Guardian, guardian)] {
        for (tid, tracing_thread) in process::held_tasks(pid) {
            // TracerPid names the tracing thread; its process is killed.
            let Some(tracer) = process::tgid_of(tracing_thread) else { continue };
            if tracer == own || seen.iter().any(|s| s.tracer == tracer && s.held == held) {
                continue;
            }
            // The pidfd first, the tree's mark after: the signal then goes
            // to the very process judged, never to one that took its pid.
            let Ok(fd) = spawn::pidfd_open(tracer) else { continue };
            if !process::descends_from(tracer, guardian) {
                continue;
            }
            let comm = process::comm_of(tracer).unwrap_or_default();
            let killed = spawn::pidfd_kill(fd.as_fd(), libc::SIGKILL).is_ok();
            seen.push(Seizure { tracer, comm, held, tid, killed });
        }
    }
}
