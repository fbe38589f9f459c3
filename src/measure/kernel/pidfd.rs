//! A handle on one process that a recycled pid cannot redirect
//! (`pidfd_open(2)`, `pidfd_send_signal(2)`, Linux 5.3): the safe face of
//! `sys::spawn`'s pidfd calls for code outside the crate (the tests' clean-up).

use crate::measure::sys::spawn;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A pidfd: refers to the process it was opened on, never to another one
/// that takes its pid after it is reaped.
#[derive(Debug)]
pub struct Pidfd(OwnedFd);

impl Pidfd {
    /// Open a pidfd on `pid` (a process, not a thread).
    pub fn open(pid: i32) -> io::Result<Pidfd> {
        spawn::pidfd_open(pid).map(Pidfd)
    }

    /// Send `signal` to that very process.
    pub fn kill(&self, signal: i32) -> io::Result<()> {
        spawn::pidfd_kill(self.0.as_fd(), signal)
    }
}

impl AsFd for Pidfd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}
