//! The private directory an archive is applied to goes on every catchable
//! stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT), not only when the audit
//! ends: the signals are blocked and waited for on a thread of their own,
//! which stops the work at its next checkpoint (an entry of a layer, a
//! chunk of a file written, an entry of the walk), removes the directory
//! and exits 128+N, as a process killed by signal N reports. SIGPIPE stays
//! ignored (as Rust programs have it): a closed stdout ends the output, and
//! the audit ends as any does, its directory removed.
//!
//! SIGKILL cannot be caught: what it leaves is what is on disk at that
//! moment, and the walk unlinks each file once it is judged.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, Once};
use std::time::Duration;

/// The stop signal taken (0: none).
static STOP: AtomicI32 = AtomicI32::new(0);
/// The private directories alive now.
static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// The work stopped at a checkpoint and writes nothing more.
static PARKED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());
static ARMED: Once = Once::new();

/// How long the signal thread waits for the work to reach a checkpoint
/// before it removes the directory anyway.
const CHECKPOINT_WAIT: Duration = Duration::from_secs(2);

/// The signals that remove the directory.
fn signals() -> nix::sys::signal::SigSet {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP, Signal::SIGQUIT] {
        set.add(s);
    }
    set
}

/// Block the stop signals in this thread (the main one, before any other
/// exists: threads inherit the mask) and wait for them on a thread of
/// their own. Once per process; a mask that cannot be set leaves the
/// default actions (the directory then goes only at the audit's end).
pub(crate) fn arm() {
    ARMED.call_once(|| {
        let set = signals();
        if set.thread_block().is_err() {
            return;
        }
        let spawned = std::thread::Builder::new().name("vdsoctl-signals".into()).spawn(move || loop {
            if let Ok(sig) = set.wait() {
                stop(sig as i32);
            }
        });
        if spawned.is_err() {
            let _ = set.thread_unblock();
        }
    });
}

/// A stop signal: the work parks, the directories go, vdsoctl exits 128+N.
fn stop(sig: i32) -> ! {
    STOP.store(sig, Ordering::SeqCst);
    if !DIRS.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
        let (lock, cv) = &PARKED;
        let parked = lock.lock().unwrap_or_else(|p| p.into_inner());
        let _ = cv.wait_timeout_while(parked, CHECKPOINT_WAIT, |p| !*p);
    }
    let dirs = DIRS.lock().unwrap_or_else(|p| p.into_inner());
    for d in dirs.iter() {
        let _ = std::fs::remove_dir_all(d);
    }
    std::process::exit(128 + sig)
}

/// Called by the work between steps: after a stop signal it never returns
/// (the signal thread removes the directory and exits).
pub(crate) fn checkpoint() {
    if STOP.load(Ordering::Relaxed) == 0 {
        return;
    }
    let (lock, cv) = &PARKED;
    *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
    cv.notify_all();
    loop {
        std::thread::park();
    }
}

/// A private directory, removed when dropped or on a stop signal.
#[derive(Debug)]
pub(crate) struct Guarded {
    dir: Option<tempfile::TempDir>,
}

impl Guarded {
    pub(crate) fn new(dir: tempfile::TempDir) -> Guarded {
        DIRS.lock().unwrap_or_else(|p| p.into_inner()).push(dir.path().to_path_buf());
        Guarded { dir: Some(dir) }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // Under the lock: the signal thread removes what is listed, and
        // this one removes and unlists it, never both half-way.
        let mut dirs = DIRS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = self.dir.take() {
            dirs.retain(|d| d != dir.path());
            drop(dir);
        }
    }
}
