//! Names opened relative to a directory descriptor (`openat(2)`): a walk
//! that opens each directory from its parent's descriptor, one name at a
//! time with `O_NOFOLLOW`, cannot be sent elsewhere by a name swapped for
//! a link mid-walk (a path re-resolved from the root can).
//!
//! `openat2(2)`'s `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` adds nothing
//! here: a name read from a directory is one component (no `/`, and the
//! walk skips `.` and `..`), and `O_NOFOLLOW` already refuses a link as
//! the last (the only) component.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `name`, one component, in the directory `dir`: never followed if it is
/// a link (ELOOP), close-on-exec; `flags` adds the rest (`O_DIRECTORY`,
/// `O_NONBLOCK`, …). Read-only.
pub fn open_in(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY;
    // SAFETY: `name` is NUL-terminated and outlives the call; `dir` is an
    // open descriptor for the call's length. openat returns a new
    // descriptor or -1 and keeps no pointer.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat: open, and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
