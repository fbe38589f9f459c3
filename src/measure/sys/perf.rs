//! perf_event_open(2) and its ioctls, wrapped so callers hold a typed
//! [`PerfEvent`] (only a perf event descriptor can be mapped as a ring or
//! given its ioctls) and get `io::Error`s with the raw errno kept for
//! classification.

use perf_event_open_sys as pes;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

pub use pes::bindings::perf_event_attr as Attr;

/// A descriptor perf_event_open(2) returned: the only kind the ioctls below
/// and [`super::ring::Mmap::new`] take.
#[derive(Debug)]
pub struct PerfEvent(OwnedFd);

impl PerfEvent {
    /// A second descriptor of the same event (F_DUPFD_CLOEXEC).
    pub fn try_clone(&self) -> io::Result<PerfEvent> {
        self.0.try_clone().map(PerfEvent)
    }
}

impl AsFd for PerfEvent {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// Open a perf event. `pid`/`cpu` as in perf_event_open(2); always CLOEXEC.
pub fn open(attr: &Attr, pid: i32, cpu: i32, group: Option<&PerfEvent>) -> io::Result<PerfEvent> {
    let mut attr = *attr;
    attr.size = std::mem::size_of::<Attr>() as u32;
    let group = group.map_or(-1, |fd| fd.0.as_raw_fd());
    // SAFETY: `attr` is a valid, fully initialised perf_event_attr with its size
    // set; the kernel only reads it (and may write `size` back on E2BIG).
    let fd = unsafe {
        pes::perf_event_open(&mut attr, pid, cpu, group, pes::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    Ok(PerfEvent(unsafe { OwnedFd::from_raw_fd(fd) }))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// PERF_EVENT_IOC_ENABLE.
pub fn enable(fd: &PerfEvent) -> io::Result<()> {
    // SAFETY: fd is a live perf event fd; the ioctl takes an integer argument.
    check(unsafe { pes::ioctls::ENABLE(fd.0.as_raw_fd(), 0) })
}

/// PERF_EVENT_IOC_DISABLE.
pub fn disable(fd: &PerfEvent) -> io::Result<()> {
    // SAFETY: as for `enable`.
    check(unsafe { pes::ioctls::DISABLE(fd.0.as_raw_fd(), 0) })
}

/// PERF_EVENT_IOC_RESET.
pub fn reset(fd: &PerfEvent) -> io::Result<()> {
    // SAFETY: as for `enable`.
    check(unsafe { pes::ioctls::RESET(fd.0.as_raw_fd(), 0) })
}

/// PERF_EVENT_IOC_SET_FILTER with an ftrace filter expression.
pub fn set_filter(fd: &PerfEvent, filter: &CStr) -> io::Result<()> {
    // SAFETY: the kernel copies the NUL-terminated string and does not keep the pointer.
    check(unsafe { pes::ioctls::SET_FILTER(fd.0.as_raw_fd(), filter.as_ptr() as *mut libc::c_char) })
}

/// PERF_EVENT_IOC_SET_OUTPUT: send `fd`'s records to `target`'s ring buffer.
pub fn set_output(fd: &PerfEvent, target: &PerfEvent) -> io::Result<()> {
    // SAFETY: both are live perf event fds.
    check(unsafe { pes::ioctls::SET_OUTPUT(fd.0.as_raw_fd(), target.0.as_raw_fd()) })
}

/// PERF_EVENT_IOC_SET_BPF: run the BPF_PROG_TYPE_PERF_EVENT program `prog`
/// at each of the event's samples (the event keeps its own reference).
pub fn set_bpf(fd: &PerfEvent, prog: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: fd is a live perf event fd; the argument is a program fd by value.
    check(unsafe { pes::ioctls::SET_BPF(fd.0.as_raw_fd(), prog.as_raw_fd() as u32) })
}
