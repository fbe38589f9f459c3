//! fork + execve with a gate: the child waits on a pipe until the parent has
//! armed its perf counters (enable_on_exec), then execs. std's `Command`
//! cannot do this — its `spawn` waits for the exec, which the gate holds back.
//! Everything the child does between fork and exec is async-signal-safe:
//! read, close, sigprocmask, signal, dup2, execve, write, _exit.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// A forked child held before its exec.
#[derive(Debug)]
pub struct Gated {
    /// The child's pid.
    pub pid: i32,
    gate: Option<OwnedFd>,
    errors: OwnedFd,
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
/// report stays alone on stdout).
pub fn fork_gated(path: &CString, argv: &[CString], envp: &[CString], stdout_to_stderr: bool) -> io::Result<Gated> {
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());
    let (gate_r, gate_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `empty` is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut empty) };
    // SAFETY: the child only calls async-signal-safe functions on memory
    // prepared above, then execs or _exits; the parent continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: child side; see above. Descriptors are raw ints here so no
        // destructor runs in the child.
        unsafe {
            libc::close(gate_w.as_raw_fd());
            libc::close(err_r.as_raw_fd());
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
    Ok(Gated { pid, gate: Some(gate_w), errors: err_r })
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
