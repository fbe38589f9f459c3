//! fork + execve with a gate: the child waits on a pipe until the parent has
//! armed its perf counters (enable_on_exec), then execs. std's `Command`
//! cannot do this — its `spawn` waits for the exec, which the gate holds back.
//! Everything the child does between fork and exec is async-signal-safe:
//! read, close, sigprocmask, signal, dup2, execve, write, _exit, and for the
//! seccomp engine prctl, seccomp, sendmsg and getppid.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// A forked child held before its exec.
#[derive(Debug)]
pub struct Gated {
    /// The child's pid.
    pub pid: i32,
    gate: Option<OwnedFd>,
    errors: OwnedFd,
    /// The listener of the seccomp filter the child installed, when asked.
    pub listener: Option<super::seccomp::Listener>,
}

/// Why a gated fork failed.
#[derive(Debug)]
pub enum GateError {
    /// fork, pipe or socketpair failed.
    Fork(io::Error),
    /// The child could not install the seccomp filter (the errno it got);
    /// it has exited and been reaped.
    Filter(io::Error),
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Fork a child that will `execve(path, argv, envp)` once [`Gated::release`]
/// is called. All strings are built before the fork (no allocation after it).
/// `stdout_to_stderr` points the child's stdout at our stderr (so a JSON
/// report stays alone on stdout). With `filter`, the child sets
/// no_new_privs, installs it with a new listener (which it hands over before
/// waiting at the gate) and asks for SIGKILL when vdsoctl dies: its clock
/// syscalls would fail with ENOSYS once nobody answers them.
pub fn fork_gated(
    path: &CString,
    argv: &[CString],
    envp: &[CString],
    stdout_to_stderr: bool,
    filter: Option<&super::seccomp::Program>,
) -> Result<Gated, GateError> {
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());
    let (gate_r, gate_w) = pipe().map_err(GateError::Fork)?;
    let (err_r, err_w) = pipe().map_err(GateError::Fork)?;
    let (sock_r, sock_w) = super::seccomp::socketpair().map_err(GateError::Fork)?;
    let fprog = filter.map(super::seccomp::Program::fprog);
    let fprog_ptr: *const libc::sock_fprog = fprog.as_ref().map_or(std::ptr::null(), |f| f as *const _);
    // The control message that carries the listener fd, laid out now: the
    // child only writes the fd number into it.
    let mut cmsg_space = [0u64; 4];
    let mut iov_byte = 0u8;
    let mut iov = libc::iovec { iov_base: (&mut iov_byte as *mut u8).cast(), iov_len: 1 };
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg_space.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is arithmetic on a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    // SAFETY: `msg` points at `cmsg_space`, which is larger than one
    // SCM_RIGHTS header with one int; CMSG_FIRSTHDR stays within it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `empty` is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut empty) };
    // SAFETY: the child only calls async-signal-safe functions on memory
    // prepared above, then execs or _exits; the parent continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(GateError::Fork(io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: child side; see above. Descriptors are raw ints here so no
        // destructor runs in the child.
        unsafe {
            libc::close(gate_w.as_raw_fd());
            libc::close(err_r.as_raw_fd());
            libc::close(sock_r.as_raw_fd());
            if !fprog_ptr.is_null() {
                let fail = |errno: i32| {
                    let bytes = errno.to_ne_bytes();
                    libc::write(err_w.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
                    libc::_exit(127);
                };
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    fail(*libc::__errno_location());
                }
                // WAIT_KILLABLE_RECV (5.19): once vdsoctl holds a call, only
                // a fatal signal interrupts it, so no call is seen twice.
                let mut flags = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
                let mut fd = libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, flags, fprog_ptr);
                if fd < 0 && *libc::__errno_location() == libc::EINVAL {
                    flags = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
                    fd = libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, flags, fprog_ptr);
                }
                if fd < 0 {
                    fail(*libc::__errno_location());
                }
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd as libc::c_int);
                if libc::sendmsg(sock_w.as_raw_fd(), &msg, 0) != 1 {
                    fail(*libc::__errno_location());
                }
                libc::close(fd as libc::c_int);
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 || libc::getppid() != parent {
                    libc::_exit(127);
                }
            }
            libc::close(sock_w.as_raw_fd());
            let mut byte = 0u8;
            let n = libc::read(gate_r.as_raw_fd(), (&mut byte as *mut u8).cast(), 1);
            if n != 1 {
                // The parent gave up (closed the gate without releasing).
                libc::_exit(127);
            }
            // The parent blocks SIGINT for its own sigwait and Rust ignores
            // SIGPIPE; the command gets the defaults, as from a shell.
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            if stdout_to_stderr {
                libc::dup2(2, 1);
            }
            libc::execve(path.as_ptr(), argv_ptrs.as_ptr(), envp_ptrs.as_ptr());
            let errno = *libc::__errno_location();
            let bytes = errno.to_ne_bytes();
            libc::write(err_w.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127);
        }
    }
    drop(gate_r);
    drop(err_w);
    drop(sock_w);
    let mut gated = Gated { pid, gate: Some(gate_w), errors: err_r, listener: None };
    if filter.is_some() {
        match super::seccomp::recv_fd(sock_r.as_fd()) {
            Ok(Some(fd)) => gated.listener = Some(super::seccomp::Listener::from_fd(fd)),
            got => {
                // The child failed before sending: its errno is on the pipe.
                let mut buf = [0u8; 4];
                // SAFETY: reading at most 4 bytes into a 4-byte buffer.
                let n = unsafe { libc::read(gated.errors.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                let err = match got {
                    Err(e) => e,
                    _ if n == 4 => io::Error::from_raw_os_error(i32::from_ne_bytes(buf)),
                    _ => io::Error::other("the child exited before installing the filter"),
                };
                gated.gate = None;
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
                return Err(GateError::Filter(err));
            }
        }
    }
    Ok(gated)
}

impl Gated {
    /// Let the child exec; returns the exec's error if it failed (the child
    /// has then exited with 127 and must still be reaped).
    pub fn release(&mut self) -> io::Result<()> {
        if let Some(gate) = self.gate.take() {
            let byte = [1u8];
            // SAFETY: writing one byte from a valid buffer to our pipe end.
            let n = unsafe { libc::write(gate.as_raw_fd(), byte.as_ptr().cast(), 1) };
            if n != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        let mut buf = [0u8; 4];
        // SAFETY: reading at most 4 bytes into a 4-byte buffer. EOF (0) means
        // the exec succeeded and closed the CLOEXEC write end.
        let n = loop {
            let n = unsafe { libc::read(self.errors.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break n;
        };
        if n == 4 {
            return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(buf)));
        }
        Ok(())
    }
}

/// pidfd_open(2): a descriptor that polls readable once the process has
/// exited, so a watcher can block on it instead of polling /proc.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let rc = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `rc` as a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(rc as i32) })
}

/// pidfd_send_signal(2): signal the very process a pidfd refers to (never
/// another that reused its pid).
pub fn pidfd_kill(pidfd: BorrowedFd<'_>, signal: i32) -> io::Result<()> {
    // SAFETY: a live pidfd, a signal number, no siginfo, no flags.
    let rc = unsafe {
        libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), signal, std::ptr::null::<libc::siginfo_t>(), 0)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
