//! Stop signals vdsoctl was started with ignored. A shell's `&` without
//! job control starts its commands with SIGINT and SIGQUIT ignored, and a
//! signal that is ignored is dropped when sent, even while blocked for
//! `sigwait`: `vdsoctl trace -a & … kill -INT $!` would never stop. So
//! vdsoctl takes them back (as `perf record` does), and remembers which
//! they were: the commands it starts get them ignored again, as alone.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bit `s` set: signal `s` was ignored when vdsoctl took it back.
static IGNORED_AT_START: AtomicU64 = AtomicU64::new(0);

/// Give each of `signals` its default action where it is ignored. The
/// caller has blocked them in this thread before any other started (they
/// are waited for, never delivered), so the default action never runs.
pub fn take_back_ignored(signals: &[i32]) -> io::Result<()> {
    for &sig in signals {
        if !(1..64).contains(&sig) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: sigaction reads the disposition into a zeroed struct; no
        // handler is installed.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if old.sa_sigaction == libc::SIG_IGN {
            IGNORED_AT_START.fetch_or(1 << sig, Ordering::SeqCst);
            // SAFETY: SIG_DFL installs no handler, and the signal is blocked
            // (see above).
            if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The signals [`take_back_ignored`] found ignored, as a bit set.
pub(super) fn ignored_at_start() -> u64 {
    IGNORED_AT_START.load(Ordering::SeqCst)
}

/// Ignore again, in a command about to exec, what vdsoctl was started
/// with ignored (`ignored`: [`ignored_at_start`] read before the fork).
///
/// # Safety
/// Only between fork and exec: `signal` is async-signal-safe.
pub(super) unsafe fn ignore_again(ignored: u64) {
    for sig in 1..64 {
        if ignored & (1 << sig) != 0 {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An out-of-range signal is refused, not shifted past the set.
    #[test]
    fn a_signal_out_of_range_is_refused() {
        assert_eq!(take_back_ignored(&[64]).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        assert_eq!(take_back_ignored(&[0]).unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }
}
