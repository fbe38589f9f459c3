//! SIGINT and SIGTERM as events rather than handlers: blocked in the
//! calling thread (threads spawned later inherit the mask) and waited for
//! with sigwait on a thread of the caller's own — no handler, no unsafe.

use crate::error::{Error, Result};
use nix::sys::signal::{SigSet, Signal};

/// Block SIGINT and SIGTERM in this thread and return the set to wait on.
pub fn block_stop_signals() -> Result<SigSet> {
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().map_err(|e| Error::Facility {
        what: format!("cannot block SIGINT and SIGTERM: {e}"),
        hint: "retry; report it if it persists".into(),
    })?;
    Ok(signals)
}
