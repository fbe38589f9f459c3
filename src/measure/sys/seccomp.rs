//! seccomp user notification (seccomp(2), seccomp_unotify(2)): the raw
//! side of the seccomp engine. A classic-BPF filter, installed in a child
//! before its exec (`measure::sys::spawn`), sends the clock syscalls of the
//! child's whole tree to a listener fd; [`Listener`] receives each one and
//! lets it go on (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`). No privilege is
//! needed: only `PR_SET_NO_NEW_PRIVS` in the child.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// One classic-BPF instruction (`struct sock_filter`).
pub type Insn = libc::sock_filter;

/// A seccomp filter program, built before the fork so the child only reads it.
#[derive(Debug, Clone)]
pub struct Program {
    insns: Vec<Insn>,
    /// Installed with a listener of its own (USER_NOTIF), or without
    /// (SECCOMP_RET_TRACE: the calls go to a ptrace tracer).
    listener: bool,
}

impl Program {
    /// A program of these instructions, installed with a listener. The
    /// kernel checks it (jump targets, lengths) when the child installs
    /// it; a bad one is refused there.
    pub fn new(insns: Vec<Insn>) -> Program {
        Program { insns, listener: true }
    }

    /// A program whose calls go to the command's ptrace tracer: installed
    /// without a listener.
    pub fn traced(insns: Vec<Insn>) -> Program {
        Program { insns, listener: false }
    }

    /// A program whose returns act in the kernel alone (`SECCOMP_RET_ERRNO`):
    /// installed without a listener.
    pub fn plain(insns: Vec<Insn>) -> Program {
        Program { insns, listener: false }
    }

    /// Whether the child installs it with a listener to hand over.
    pub fn wants_listener(&self) -> bool {
        self.listener
    }

    /// The `struct sock_fprog` the kernel takes. It points into `self`: keep
    /// `self` alive and unmoved while it is used.
    pub(super) fn fprog(&self) -> libc::sock_fprog {
        libc::sock_fprog { len: self.insns.len() as u16, filter: self.insns.as_ptr() as *mut Insn }
    }

    /// The instructions.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }
}

/// One notified syscall, as `struct seccomp_notif` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    /// The cookie to answer with.
    pub id: u64,
    /// The calling thread, in the listener's pid namespace.
    pub tid: i32,
    /// The syscall number, in the table of `arch`.
    pub nr: i32,
    /// `AUDIT_ARCH_*` of the call.
    pub arch: u32,
    /// The user instruction pointer (after the syscall instruction, or the
    /// [vsyscall] slot for an emulated vsyscall).
    pub ip: u64,
    pub args: [u64; 6],
}

/// What [`Listener::wait`] woke for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A call waits to be received.
    Call,
    /// Every process that held the filter is gone.
    TreeGone,
    /// The stop fd fired.
    Stop,
    /// Nothing yet (a signal interrupted the wait).
    Again,
}

/// The listener fd of an installed filter.
#[derive(Debug)]
pub struct Listener(OwnedFd);

impl Listener {
    pub(super) fn from_fd(fd: OwnedFd) -> Listener {
        Listener(fd)
    }

    /// Ask the kernel to wake this listener on the caller's CPU and switch
    /// to it at once (`SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`, Linux 6.6): a
    /// notified call then costs a few µs less. Older kernels refuse; fine.
    pub fn prefer_sync_wake_up(&self) -> bool {
        const SYNC_WAKE_UP: libc::c_ulong = 1;
        // SAFETY: SET_FLAGS takes the flags as the argument itself (by
        // value, not through a pointer: a pointer is refused EINVAL).
        unsafe { libc::ioctl(self.0.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS, SYNC_WAKE_UP) == 0 }
    }

    /// Take the next notification (blocks; poll the fd first to wait).
    /// `ENOENT`: the caller went away (killed) between the wake-up and here.
    pub fn recv(&self) -> io::Result<Notification> {
        // SAFETY: seccomp_notif is plain data; the kernel wants it zeroed.
        let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: RECV fills a `struct seccomp_notif` we own.
            let rc = unsafe { libc::ioctl(self.0.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
            if rc == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(Notification {
            id: n.id,
            tid: n.pid as i32,
            nr: n.data.nr,
            arch: n.data.arch,
            ip: n.data.instruction_pointer,
            args: n.data.args,
        })
    }

    /// Wait for a call, or until no process holds the filter any more
    /// (the listener hangs up), or `stop` becomes readable or hangs up.
    pub fn wait(&self, stop: BorrowedFd<'_>) -> io::Result<Wake> {
        let mut pfds = [
            libc::pollfd { fd: self.0.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: stop.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: `pfds` is a valid array of two pollfd structs.
        let rc = unsafe { libc::poll(pfds.as_mut_ptr(), 2, -1) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(Wake::Again) } else { Err(e) };
        }
        Ok(if pfds[0].revents & libc::POLLIN != 0 {
            Wake::Call
        } else if pfds[0].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            Wake::TreeGone
        } else if pfds[1].revents != 0 {
            Wake::Stop
        } else {
            Wake::Again
        })
    }

    /// Whether notification `id` is still pending: its caller neither died
    /// nor was interrupted (what seccomp_unotify(2) asks a supervisor to
    /// check after reading anything about the caller).
    pub fn id_valid(&self, id: u64) -> bool {
        let mut id = id;
        // SAFETY: ID_VALID reads one u64.
        unsafe { libc::ioctl(self.0.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) == 0 }
    }

    /// Let the call run as if no filter were there.
    pub fn resume(&self, id: u64) -> io::Result<()> {
        self.send(libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        })
    }

    /// Answer the call without running it: it fails with `errno`.
    pub fn fail(&self, id: u64, errno: i32) -> io::Result<()> {
        self.send(libc::seccomp_notif_resp { id, val: 0, error: -errno, flags: 0 })
    }

    fn send(&self, resp: libc::seccomp_notif_resp) -> io::Result<()> {
        let mut resp = resp;
        loop {
            // SAFETY: SEND reads a `struct seccomp_notif_resp` we own.
            let rc = unsafe { libc::ioctl(self.0.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
            if rc == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// Receive one fd sent with SCM_RIGHTS on a unix socket; `Ok(None)` at EOF
/// (the sender closed its end without sending).
pub(super) fn recv_fd(sock: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    use std::os::fd::FromRawFd;
    let mut byte = 0u8;
    let mut iov = libc::iovec { iov_base: (&mut byte as *mut u8).cast(), iov_len: 1 };
    let mut space = [0u64; 4];
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&space);
    let n = loop {
        // SAFETY: every pointer in `msg` points at live buffers of the sizes given.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        break n;
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n == 0 {
        return Ok(None);
    }
    // SAFETY: the header was filled by recvmsg; CMSG_FIRSTHDR/CMSG_DATA stay
    // within `space`, and a SCM_RIGHTS message of one fd carries one c_int.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_level != libc::SOL_SOCKET || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "no descriptor in the message"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        Ok(Some(OwnedFd::from_raw_fd(fd)))
    }
}

/// A connected pair of unix stream sockets, close-on-exec.
pub(super) fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair just returned these two descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `PTRACE_SECCOMP_GET_FILTER` (`include/uapi/linux/ptrace.h`, Linux 4.4).
const PTRACE_SECCOMP_GET_FILTER: libc::c_uint = 0x420c;
/// `PTRACE_EVENT_STOP`: the stop `PTRACE_INTERRUPT` asks for.
const PTRACE_EVENT_STOP: i32 = 128;
/// The most filters read from one process: more than a task can hold (the
/// kernel caps the total length of a task's filters at 32768 instructions,
/// each filter counted 4 more than its length: at most 6,553 filters), so
/// every filter is read.
const MAX_FILTERS: libc::c_ulong = 8192;

/// How long a seized thread may take to stop before the read is given up
/// (a thread in uninterruptible sleep stops only when it leaves it).
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A thread vdsoctl has seized with ptrace: detached when dropped, on every
/// path, handing back the signal its stop held (if any) so the thread runs
/// on as if never stopped. (A thread that never stopped cannot be detached
/// by request; the kernel detaches it when vdsoctl exits, resuming it if
/// it stopped meanwhile.)
struct Seized {
    tid: i32,
    signal: libc::c_int,
}

impl Drop for Seized {
    fn drop(&mut self) {
        // SAFETY: PTRACE_DETACH takes no pointer; `data` is a signal number.
        unsafe { libc::ptrace(libc::PTRACE_DETACH as _, self.tid, 0usize, self.signal as libc::c_ulong) };
    }
}

fn ptrace_rc(rc: libc::c_long) -> io::Result<libc::c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl Seized {
    /// Seize `tid` and stop it (`PTRACE_SEIZE` + `PTRACE_INTERRUPT`).
    fn stop(tid: i32) -> io::Result<Seized> {
        // SAFETY: PTRACE_SEIZE with no options takes no pointer.
        ptrace_rc(unsafe { libc::ptrace(libc::PTRACE_SEIZE as _, tid, 0usize, 0usize) })?;
        let mut seized = Seized { tid, signal: 0 };
        // SAFETY: PTRACE_INTERRUPT takes no pointer.
        ptrace_rc(unsafe { libc::ptrace(libc::PTRACE_INTERRUPT as _, tid, 0usize, 0usize) })?;
        let deadline = std::time::Instant::now() + STOP_WAIT;
        loop {
            let mut status = 0;
            // SAFETY: `status` is an int we own.
            let rc = unsafe { libc::waitpid(tid, &mut status, libc::__WALL | libc::WNOHANG) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if rc == 0 {
                if std::time::Instant::now() > deadline {
                    let why = "it did not stop for the read (uninterruptible sleep?)";
                    return Err(io::Error::new(io::ErrorKind::TimedOut, why));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if status >> 16 == PTRACE_EVENT_STOP {
                return Ok(seized);
            }
            // A signal arrived first: keep it for the detach, and resume
            // (with none) to reach the interrupt's stop.
            seized.signal = libc::WSTOPSIG(status);
            // SAFETY: PTRACE_CONT takes no pointer; data 0 is no signal.
            ptrace_rc(unsafe { libc::ptrace(libc::PTRACE_CONT as _, tid, 0usize, 0usize) })?;
        }
    }

    /// Filter `index` of the stopped thread (0 the OLDEST: the kernel's
    /// `get_nth_filter` counts back from the newest); None past the newest.
    fn filter(&self, index: libc::c_ulong) -> io::Result<Option<Vec<Insn>>> {
        let get = |buf: *mut Insn| {
            // SAFETY: with a null buffer the kernel only counts; otherwise
            // `buf` has room for the count it returned for this index.
            ptrace_rc(unsafe { libc::ptrace(PTRACE_SECCOMP_GET_FILTER as _, self.tid, index, buf) })
        };
        let len = match get(std::ptr::null_mut()) {
            Ok(n) => n as usize,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut insns = vec![Insn { code: 0, jt: 0, jf: 0, k: 0 }; len];
        let got = get(insns.as_mut_ptr())? as usize;
        insns.truncate(got.min(len));
        Ok(Some(insns))
    }
}

/// The seccomp filters of thread `tid`, every one, newest first, read
/// with `PTRACE_SECCOMP_GET_FILTER`: the thread is seized, stopped for the
/// read, and detached on every path (it never stays stopped). Needs
/// CAP_SYS_ADMIN (EACCES without it) and ptrace access to `tid`.
pub fn thread_filters(tid: i32) -> io::Result<Vec<Vec<Insn>>> {
    let seized = Seized::stop(tid)?;
    let mut out = Vec::new();
    for index in 0..MAX_FILTERS {
        match seized.filter(index)? {
            Some(p) => out.push(p),
            None => break,
        }
    }
    drop(seized);
    out.reverse();
    Ok(out)
}
