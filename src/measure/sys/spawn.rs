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
    /// With a filter: the guardian process between vdsoctl and the command.
    guardian: Option<Guardian>,
}

/// The guardian of a command's tree (whatever the engine): a process
/// forked by vdsoctl that forks the command, is its tree's subreaper
/// (every orphan of the tree becomes its child, so the tree is what it
/// reaps, and it exits when the last of it is gone), holds a copy of the
/// seccomp filter's listener if there is one, and kills the whole tree
/// once vdsoctl is gone or gives up on it. Without it, a process the
/// command started would outlive a killed vdsoctl with every clock
/// syscall failing ENOSYS (nobody left to answer); with it, no clock
/// syscall of the tree ever fails, and nothing of it outlives vdsoctl.
#[derive(Debug)]
struct Guardian {
    pid: i32,
    /// vdsoctl's end of the life line: closed (vdsoctl exits, is killed, or
    /// calls [`TreeGuard::kill_tree`]) the guardian kills the tree.
    alive: OwnedFd,
    /// The command's raw wait status, written when it exits.
    status: OwnedFd,
}

/// How to learn that the command exited: the command is the guardian's
/// child, which hands its status over.
#[derive(Debug)]
pub struct CommandWait {
    guardian: i32,
    status: OwnedFd,
}

/// How to learn that the command's whole tree is gone: the guardian, its
/// subreaper, exits once it has reaped the last process of it.
#[derive(Debug)]
pub struct TreeWait {
    guardian: i32,
    /// The guardian exited before the command did because vdsoctl let the
    /// tree run on (`-d`): what is left runs on, nothing is killed.
    released: bool,
}

/// Kept while the command's tree may run; dropped, the guardian kills it.
#[derive(Debug, Default)]
pub struct TreeGuard {
    alive: Option<OwnedFd>,
    /// The guardian's pidfd: [`TreeGuard::nudge`] continues it.
    guardian: Option<OwnedFd>,
}

/// What vdsoctl writes on the life line to let the tree run on without it
/// (`-d` with an engine that needs no answer from vdsoctl).
const RELEASE: u8 = b'r';

/// What vdsoctl writes on the life line, with 4 bytes of milliseconds
/// after it, to give the guardian a deadline of its own.
const DEADLINE: u8 = b'd';

impl TreeGuard {
    /// Kill everything left of the command's tree (SIGKILL, through the
    /// guardian).
    pub fn kill_tree(&mut self) {
        self.alive = None;
    }

    /// Let the tree run on without vdsoctl: the guardian exits, leaving it
    /// to the next subreaper (init). Only for a tree without a filter.
    pub fn release(&mut self) {
        if let Some(fd) = self.alive.take() {
            // SAFETY: writing one byte from a valid buffer to our pipe end.
            unsafe { libc::write(fd.as_raw_fd(), [RELEASE].as_ptr().cast(), 1) };
        }
    }

    /// Continue the guardian if the tree stopped it (SIGSTOP to its
    /// parent): a stopped guardian neither reaps nor hands over the
    /// command's status, and vdsoctl would wait for ever.
    pub fn nudge(&self) {
        if let Some(fd) = &self.guardian {
            let _ = pidfd_kill(fd.as_fd(), libc::SIGCONT);
        }
    }
}

/// A raw `waitpid` status, as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Exited(i32),
    Signaled(i32),
}

impl Waited {
    fn of_raw(status: i32) -> Waited {
        if libc::WIFSIGNALED(status) {
            Waited::Signaled(libc::WTERMSIG(status))
        } else {
            Waited::Exited(libc::WEXITSTATUS(status))
        }
    }
}

impl CommandWait {
    /// Block until the command exits; its status, and how to wait for the
    /// rest of its tree.
    pub fn wait(self) -> io::Result<(Waited, TreeWait)> {
        let CommandWait { guardian, status } = self;
        let mut buf = [0u8; 4];
        let got = read_full(status.as_fd(), &mut buf)?;
        if got == 4 {
            return Ok((Waited::of_raw(i32::from_ne_bytes(buf)), TreeWait { guardian, released: false }));
        }
        // The guardian ended before the command did. Killed (a signal): its
        // own end is the best there is, and the tree is ended below. Exited:
        // vdsoctl released the tree at `-d` (the guardian's `_exit(0)`), and
        // it runs on — killing it here raced vdsoctl's own exit.
        let waited = waitpid_retry(guardian)?;
        let released = matches!(waited, Waited::Exited(_));
        Ok((waited, TreeWait { guardian: 0, released }))
    }
}

impl TreeWait {
    /// Block until the whole tree is gone. A guardian killed before it
    /// reaped the tree left its orphans to vdsoctl (a subreaper too):
    /// they are killed, round after round, so nothing of the tree runs on
    /// with nobody to answer its calls.
    pub fn wait(self) {
        let killed = match self.guardian {
            0 => !self.released,
            guardian => matches!(waitpid_retry(guardian), Ok(Waited::Signaled(_))),
        };
        if killed {
            kill_orphans();
        }
    }
}

/// Make vdsoctl not dumpable (`PR_SET_DUMPABLE` 0): a process of the same
/// uid may then neither ptrace it (`PTRACE_SEIZE` fails EPERM) nor read
/// its memory, so a command vdsoctl audits cannot stop, read or rewrite
/// vdsoctl or its guardian (which inherits it). vdsoctl reads its own
/// /proc as before (a process always may). Root's tree keeps
/// CAP_SYS_PTRACE, which no flag of vdsoctl's can take away.
pub fn out_of_reach() {
    // SAFETY: PR_SET_DUMPABLE takes one integer argument.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// Make vdsoctl the subreaper of what it starts: a killed guardian's
/// orphans come to vdsoctl, not to init.
fn become_subreaper() {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes one integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// vdsoctl's children, from every thread's /proc children list.
fn own_children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|text| text.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<i32>>())
        .collect()
}

/// SIGKILL and reap vdsoctl's children until none is left (the orphans of
/// each killed one come next round). Only once the guardian is gone:
/// during a trace vdsoctl has no other child.
fn kill_orphans() {
    loop {
        let children = own_children();
        if children.is_empty() {
            return;
        }
        for pid in &children {
            // SAFETY: kill takes a pid and a signal number.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        for pid in children {
            let _ = waitpid_retry(pid);
        }
    }
}

fn waitpid_retry(pid: i32) -> io::Result<Waited> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes one int through a valid pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(Waited::of_raw(status));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Read until `buf` is full or EOF; how many bytes came.
fn read_full(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading at most the rest of `buf` into it.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match n {
            0 => break,
            n if n > 0 => got += n as usize,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => return Err(io::Error::last_os_error()),
        }
    }
    Ok(got)
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

/// An SCM_RIGHTS message of one fd, laid out before the fork so the
/// processes after it only write or read the fd number.
struct FdMessage {
    // Only pointed into by `msg` (boxed: they stay put when it moves).
    _space: Box<[u64; 4]>,
    _byte: Box<u8>,
    _iov: Box<libc::iovec>,
    msg: libc::msghdr,
}

impl FdMessage {
    fn new() -> FdMessage {
        let mut space = Box::new([0u64; 4]);
        let mut byte = Box::new(0u8);
        let mut iov = Box::new(libc::iovec { iov_base: (&mut *byte as *mut u8).cast(), iov_len: 1 });
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut *iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is arithmetic on a size.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
        // SAFETY: `msg` points at `space`, which is larger than one
        // SCM_RIGHTS header with one int; CMSG_FIRSTHDR stays within it.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        }
        FdMessage { _space: space, _byte: byte, _iov: iov, msg }
    }

    /// Send `fd` (async-signal-safe: sendmsg on memory laid out before).
    ///
    /// # Safety
    /// Only between fork and exec or _exit, on a live socket and fd.
    unsafe fn send(&mut self, sock: i32, fd: i32) -> bool {
        let cmsg = libc::CMSG_FIRSTHDR(&self.msg);
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
        libc::sendmsg(sock, &self.msg, 0) == 1
    }

    /// Receive one fd, or -1 (EOF, an error, no descriptor).
    ///
    /// # Safety
    /// Only between fork and exec or _exit, on a live socket.
    unsafe fn receive(&mut self, sock: i32) -> i32 {
        loop {
            let n = libc::recvmsg(sock, &mut self.msg, libc::MSG_CMSG_CLOEXEC);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n != 1 {
                return -1;
            }
            let cmsg = libc::CMSG_FIRSTHDR(&self.msg);
            if cmsg.is_null() || (*cmsg).cmsg_level != libc::SOL_SOCKET || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
                return -1;
            }
            return std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        }
    }
}

/// Everything the command's side of the fork uses, made before it.
struct CommandSide<'a> {
    path: &'a CString,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    stdout_to_stderr: bool,
    fprog: *const libc::sock_fprog,
    /// The filter is installed with a listener to hand over (else its
    /// calls go to vdsoctl's ptrace tracer: nothing to hand over).
    listener: bool,
    gate_r: i32,
    err_w: i32,
    /// The listener goes to vdsoctl on this socket…
    to_vdsoctl: i32,
    /// …and to the guardian on this one.
    to_guardian: Option<i32>,
    /// The process whose death kills the command (PDEATHSIG).
    parent: libc::pid_t,
    empty: libc::sigset_t,
    /// The signals vdsoctl was started with ignored (`signals`).
    ignored: u64,
}

/// The command's side of the fork: install the filter and hand its
/// listener over, wait at the gate, exec. Never returns.
///
/// # Safety
/// Only in a freshly forked child; async-signal-safe calls only.
unsafe fn command_side(c: &CommandSide<'_>, to_vdsoctl: &mut FdMessage, to_guardian: &mut FdMessage) -> ! {
    let fail = |errno: i32| -> ! {
        let bytes = errno.to_ne_bytes();
        libc::write(c.err_w, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127);
    };
    // The command is the user's program, dumpable as it would be alone
    // (its exec sets that again; until then vdsoctl reads its /proc).
    libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
    if !c.fprog.is_null() {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            fail(*libc::__errno_location());
        }
        if !c.listener {
            // SECCOMP_RET_TRACE: no listener; vdsoctl seizes this process
            // while it waits at the gate (no clock call is made before).
            if libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, c.fprog) != 0 {
                fail(*libc::__errno_location());
            }
            if let Some(sock) = c.to_guardian {
                libc::close(sock);
            }
        }
    }
    if !c.fprog.is_null() && c.listener {
        // WAIT_KILLABLE_RECV (5.19): once vdsoctl holds a call, only a
        // fatal signal interrupts it, so no call is seen twice.
        let mut flags = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
        let mut fd = libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, flags, c.fprog);
        if fd < 0 && *libc::__errno_location() == libc::EINVAL {
            flags = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
            fd = libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, flags, c.fprog);
        }
        if fd < 0 {
            fail(*libc::__errno_location());
        }
        if !to_vdsoctl.send(c.to_vdsoctl, fd as i32) {
            fail(*libc::__errno_location());
        }
        if let Some(sock) = c.to_guardian {
            if !to_guardian.send(sock, fd as i32) {
                fail(*libc::__errno_location());
            }
            libc::close(sock);
        }
        libc::close(fd as libc::c_int);
    }
    if !c.fprog.is_null()
        && (libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 || libc::getppid() != c.parent)
    {
        libc::_exit(127);
    }
    libc::close(c.to_vdsoctl);
    let mut byte = 0u8;
    let n = libc::read(c.gate_r, (&mut byte as *mut u8).cast(), 1);
    if n != 1 {
        // The parent gave up (closed the gate without releasing).
        libc::_exit(127);
    }
    // The parent blocks SIGINT for its own sigwait (the guardian blocks
    // SIGCHLD too) and Rust ignores SIGPIPE; the command gets the
    // defaults, as from a shell.
    libc::sigprocmask(libc::SIG_SETMASK, &c.empty, std::ptr::null_mut());
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    // What vdsoctl was started with ignored, the command is too (alone,
    // `cmd &` ignores SIGINT): vdsoctl took those back for itself.
    super::signals::ignore_again(c.ignored);
    if c.stdout_to_stderr {
        libc::dup2(2, 1);
    }
    libc::execve(c.path.as_ptr(), c.argv, c.envp);
    fail(*libc::__errno_location());
}

/// The guardian's fds, made before the fork.
struct GuardianSide {
    /// Readable (EOF) once vdsoctl is gone or gave up on the tree.
    alive_r: i32,
    status_w: i32,
    from_command: i32,
    /// Closed by the guardian at once: vdsoctl's ends.
    vdsoctl_ends: [i32; 5],
    chld: libc::sigset_t,
}

/// The guardian: fork the command, then reap the tree while vdsoctl lives
/// and kill it when vdsoctl is gone. Never returns.
///
/// # Safety
/// Only in a freshly forked child; async-signal-safe calls only.
unsafe fn guardian_side(
    g: &GuardianSide,
    c: &mut CommandSide<'_>,
    to_vdsoctl: &mut FdMessage,
    to_guardian: &mut FdMessage,
) -> ! {
    for fd in g.vdsoctl_ends {
        libc::close(fd);
    }
    // Orphans of the tree come here, not to init; SIGCHLD read from an fd.
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    libc::sigprocmask(libc::SIG_BLOCK, &g.chld, std::ptr::null_mut());
    let chld_fd = libc::signalfd(-1, &g.chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
    // The guardian dies with nothing to watch if vdsoctl is already gone.
    c.parent = libc::getpid();
    // The raw clone, not libc's fork: this process is the child of a
    // multi-threaded one, where fork's atfork handlers may wait for a lock
    // some thread that is not here held at the first fork.
    // s390's clone takes the new stack first, the flags second.
    let (first, second) = if crate::arch::CLONE_STACK_FIRST {
        (0, libc::SIGCHLD as libc::c_long)
    } else {
        (libc::SIGCHLD as libc::c_long, 0)
    };
    let command = libc::syscall(libc::SYS_clone, first, second, 0, 0, 0) as libc::pid_t;
    if command == 0 {
        libc::close(g.alive_r);
        libc::close(g.status_w);
        libc::close(g.from_command);
        command_side(c, to_vdsoctl, to_guardian);
    }
    if command < 0 {
        let bytes = (*libc::__errno_location()).to_ne_bytes();
        libc::write(c.err_w, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127);
    }
    // Signals for vdsoctl's process group (a closed terminal's SIGHUP, ^C,
    // ^Z) are vdsoctl's to act on: the guardian outlives them, so the tree
    // is never left without it. Only SIGKILL ends it (or SIGSTOP stops
    // it: vdsoctl continues it).
    for sig in [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGPIPE,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
    ] {
        libc::signal(sig, libc::SIG_IGN);
    }
    // The command's pid first; its status when it exits.
    libc::write(g.status_w, command.to_ne_bytes().as_ptr().cast(), 4);
    for fd in [c.gate_r, c.err_w, c.to_vdsoctl, c.to_guardian.unwrap_or(-1), 0, 1, 2] {
        libc::close(fd);
    }
    // The listener's copy: while it is open no clock syscall of the tree
    // fails ENOSYS, whatever becomes of vdsoctl. -1 if the command failed.
    let _listener = to_guardian.receive(g.from_command);
    libc::close(g.from_command);
    let mut tree = Tree { command, status_w: g.status_w, status_sent: false };
    tree.reap_while_watched(g.alive_r, chld_fd);
    tree.kill_all()
}

/// The guardian's view of the tree: the command, and where its status goes.
struct Tree {
    command: i32,
    status_w: i32,
    status_sent: bool,
}

impl Tree {
    /// A child was reaped: the command's status goes to vdsoctl, once.
    ///
    /// # Safety
    /// Async-signal-safe; for the guardian only.
    unsafe fn reaped(&mut self, pid: i32, status: i32) {
        if pid == self.command && !self.status_sent {
            self.status_sent = true;
            libc::write(self.status_w, status.to_ne_bytes().as_ptr().cast(), 4);
        }
    }

    /// Reap the tree as it exits, while vdsoctl lives; `_exit(0)` once no
    /// child is left. Returns when `alive_r` says vdsoctl is gone.
    ///
    /// # Safety
    /// Async-signal-safe; for the guardian only.
    unsafe fn reap_while_watched(&mut self, alive_r: i32, chld_fd: i32) {
        // The deadline vdsoctl may give (ms on CLOCK_MONOTONIC), 0: none.
        let mut deadline: i64 = 0;
        loop {
            let mut fds = [
                libc::pollfd { fd: alive_r, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: chld_fd, events: libc::POLLIN, revents: 0 },
            ];
            // Without a signalfd, look for exits every 50 ms.
            let mut timeout: i32 = if chld_fd < 0 { 50 } else { -1 };
            if deadline > 0 {
                let left = (deadline - monotonic_ms()).max(0);
                if left == 0 {
                    return;
                }
                timeout = if timeout < 0 { left.min(i64::from(i32::MAX)) as i32 } else { timeout.min(left as i32) };
            }
            if libc::poll(fds.as_mut_ptr(), 2, timeout) < 0 && *libc::__errno_location() != libc::EINTR {
                return;
            }
            if fds[0].revents != 0 {
                // A byte: vdsoctl lets the tree run on (it exits) or sets a
                // deadline; EOF: it is gone or gave up, and the tree is killed.
                let mut msg = [0u8; 5];
                let n = libc::read(alive_r, msg.as_mut_ptr().cast(), 1);
                if n == 1 && msg[0] == RELEASE {
                    libc::_exit(0);
                }
                if n == 1 && msg[0] == DEADLINE && libc::read(alive_r, msg[1..].as_mut_ptr().cast(), 4) == 4 {
                    let ms = u32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
                    deadline = monotonic_ms() + i64::from(ms);
                    continue;
                }
                return;
            }
            let mut info = [0u8; 128];
            while chld_fd >= 0 && libc::read(chld_fd, info.as_mut_ptr().cast(), info.len()) > 0 {}
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid > 0 {
                    self.reaped(pid, status);
                    continue;
                }
                if pid < 0 && *libc::__errno_location() == libc::ECHILD {
                    // The whole tree is gone.
                    libc::_exit(0);
                }
                break;
            }
        }
    }

    /// vdsoctl is gone (or gave up, or the deadline passed): kill every child, reap them all, and
    /// again, until none is left — the orphans of each killed one come
    /// here. Each round reads the children once and reaps every zombie
    /// there is: linear in the tree (8,000 zombies: one round).
    ///
    /// # Safety
    /// Async-signal-safe; for the guardian only.
    unsafe fn kill_all(&mut self) -> ! {
        loop {
            kill_children(self.command);
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid > 0 {
                self.reaped(pid, status);
            } else if *libc::__errno_location() != libc::EINTR {
                libc::_exit(0);
            }
            loop {
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid <= 0 {
                    break;
                }
                self.reaped(pid, status);
            }
        }
    }
}

/// CLOCK_MONOTONIC in milliseconds (clock_gettime is async-signal-safe).
///
/// # Safety
/// Async-signal-safe; for the guardian only.
unsafe fn monotonic_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// SIGKILL every child of the calling (single-threaded) process, as
/// /proc/thread-self/children lists them; just `command` where that file
/// is missing (a kernel without CONFIG_PROC_CHILDREN).
///
/// # Safety
/// Async-signal-safe; for the guardian only.
unsafe fn kill_children(command: i32) {
    let fd = libc::open(c"/proc/thread-self/children".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        libc::kill(command, libc::SIGKILL);
        return;
    }
    let mut buf = [0u8; 512];
    let mut pid: i32 = 0;
    loop {
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        if n <= 0 {
            break;
        }
        for &b in &buf[..n as usize] {
            if b.is_ascii_digit() {
                pid = pid.saturating_mul(10).saturating_add(i32::from(b - b'0'));
            } else if pid > 0 {
                libc::kill(pid, libc::SIGKILL);
                pid = 0;
            }
        }
    }
    if pid > 0 {
        libc::kill(pid, libc::SIGKILL);
    }
    libc::close(fd);
}

/// Fork a child that will `execve(path, argv, envp)` once [`Gated::release`]
/// is called. All strings are built before the fork (no allocation after it).
/// `stdout_to_stderr` points the child's stdout at our stderr (so a JSON
/// report stays alone on stdout). With `filter`, the child sets
/// no_new_privs and installs it with a new listener, which it hands over
/// before waiting at the gate. It runs under a guardian (see [`Guardian`])
/// so that neither it nor anything it starts outlives vdsoctl, and vdsoctl
/// becomes a subreaper itself (a killed guardian's orphans come to it).
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
    become_subreaper();
    let (alive_r, alive_w) = pipe().map_err(GateError::Fork)?;
    let (status_r, status_w) = pipe().map_err(GateError::Fork)?;
    let (guard_r, guard_w) = super::seccomp::socketpair().map_err(GateError::Fork)?;
    // The tree must not reach its auditor: vdsoctl (and the guardian,
    // which inherits it) leave ptrace and /proc/PID/mem reach of the
    // processes of the same uid they audit.
    out_of_reach();
    let fprog = filter.map(super::seccomp::Program::fprog);
    let fprog_ptr: *const libc::sock_fprog = fprog.as_ref().map_or(std::ptr::null(), |f| f as *const _);
    let mut to_vdsoctl = FdMessage::new();
    let mut to_guardian = FdMessage::new();
    let (empty, chld) = signal_sets();
    let mut command = CommandSide {
        path,
        argv: argv_ptrs.as_ptr(),
        envp: envp_ptrs.as_ptr(),
        stdout_to_stderr,
        fprog: fprog_ptr,
        listener: filter.is_some_and(super::seccomp::Program::wants_listener),
        gate_r: gate_r.as_raw_fd(),
        err_w: err_w.as_raw_fd(),
        to_vdsoctl: sock_w.as_raw_fd(),
        to_guardian: Some(guard_w.as_raw_fd()),
        parent: std::process::id() as libc::pid_t,
        empty,
        ignored: super::signals::ignored_at_start(),
    };
    let guardian = GuardianSide {
        alive_r: alive_r.as_raw_fd(),
        status_w: status_w.as_raw_fd(),
        from_command: guard_r.as_raw_fd(),
        vdsoctl_ends: [
            gate_w.as_raw_fd(),
            err_r.as_raw_fd(),
            sock_r.as_raw_fd(),
            alive_w.as_raw_fd(),
            status_r.as_raw_fd(),
        ],
        chld,
    };
    // SAFETY: the child only calls async-signal-safe functions on memory
    // prepared above, then execs or _exits; the parent continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(GateError::Fork(io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: child side; see above. Descriptors are raw ints here so no
        // destructor runs in the child.
        unsafe { guardian_side(&guardian, &mut command, &mut to_vdsoctl, &mut to_guardian) }
    }
    drop((gate_r, err_w, sock_w, alive_r, status_w, guard_r, guard_w));
    let gated = Gated { pid, gate: Some(gate_w), errors: err_r, listener: None, guardian: None };
    let guardian = Guardian { pid, alive: alive_w, status: status_r };
    let listener = filter.map(super::seccomp::Program::wants_listener);
    gated.take_over(Some(guardian), listener.map(|wants| (sock_r, wants)))
}

/// The empty signal set (the command's mask) and {SIGCHLD} (the guardian's).
fn signal_sets() -> (libc::sigset_t, libc::sigset_t) {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        (empty, chld)
    }
}

impl Gated {
    /// The parent's side after the fork: with a guardian, learn the
    /// command's pid from it; with a filter, receive the listener.
    fn take_over(
        mut self,
        guardian: Option<Guardian>,
        listener_sock: Option<(OwnedFd, bool)>,
    ) -> Result<Gated, GateError> {
        if let Some(g) = guardian {
            // The guardian says the command's pid first (EOF: it could not fork).
            let mut buf = [0u8; 4];
            let got = read_full(g.status.as_fd(), &mut buf).map_err(GateError::Fork)?;
            if got != 4 {
                let err =
                    self.child_errno().unwrap_or_else(|| io::Error::other("the guardian could not fork the command"));
                self.gate = None;
                let _ = waitpid_retry(g.pid);
                return Err(GateError::Fork(err));
            }
            self.pid = i32::from_ne_bytes(buf);
            self.guardian = Some(g);
        }
        if let Some((sock, false)) = &listener_sock {
            // A traced filter: the socket's EOF says the command installed
            // it (and is dumpable, to be seized) or failed (its errno came
            // first, on the error pipe).
            let _ = super::seccomp::recv_fd(sock.as_fd());
            if let Some(err) = self.child_errno_now() {
                self.abandon();
                return Err(GateError::Filter(err));
            }
        }
        if let Some((sock, true)) = listener_sock {
            match super::seccomp::recv_fd(sock.as_fd()) {
                Ok(Some(fd)) => self.listener = Some(super::seccomp::Listener::from_fd(fd)),
                got => {
                    // The child failed before sending: its errno is on the pipe.
                    let err = match got {
                        Err(e) => e,
                        _ => self
                            .child_errno()
                            .unwrap_or_else(|| io::Error::other("the child exited before installing the filter")),
                    };
                    self.abandon();
                    return Err(GateError::Filter(err));
                }
            }
        }
        Ok(self)
    }
}

impl Gated {
    /// The errno the child (or the guardian) wrote before exiting, if any.
    fn child_errno(&self) -> Option<io::Error> {
        let mut buf = [0u8; 4];
        (read_full(self.errors.as_fd(), &mut buf).ok() == Some(4))
            .then(|| io::Error::from_raw_os_error(i32::from_ne_bytes(buf)))
    }

    /// The errno the child wrote, if it is there now (never blocks: the
    /// error pipe stays open while the child waits at the gate).
    fn child_errno_now(&self) -> Option<io::Error> {
        let mut fds = [libc::pollfd { fd: self.errors.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        // SAFETY: polling one valid pollfd, without waiting.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) } == 1;
        if ready {
            self.child_errno()
        } else {
            None
        }
    }

    /// Give up before the exec: the child exits at the closed gate, and it
    /// (or its guardian, with the tree) is reaped.
    pub fn abandon(mut self) {
        self.gate = None;
        match self.guardian.take() {
            Some(g) => {
                drop(g.alive);
                let _ = waitpid_retry(g.pid);
            }
            None => {
                let _ = waitpid_retry(self.pid);
            }
        }
    }

    /// After [`Gated::release`]: how to wait for the command, and the guard
    /// whose drop kills what is left of its tree.
    pub fn into_wait(mut self) -> io::Result<(CommandWait, TreeGuard)> {
        let g = self.guardian.take().ok_or_else(|| io::Error::other("the command has no guardian"))?;
        let pidfd = pidfd_open(g.pid).ok();
        Ok((CommandWait { guardian: g.pid, status: g.status }, TreeGuard { alive: Some(g.alive), guardian: pidfd }))
    }

    /// The guardian's pid (the tree's subreaper), before the command runs.
    pub fn guardian_pid(&self) -> Option<i32> {
        self.guardian.as_ref().map(|g| g.pid)
    }

    /// A deadline the guardian keeps itself, `after` from now: past it, it
    /// kills the whole tree whatever became of vdsoctl. A root tree may
    /// hold vdsoctl in a ptrace stop (CAP_SYS_PTRACE passes over its
    /// not-dumpable mark) and so keep it from its own `--timeout`; vdsoctl
    /// gives the guardian the moment of its own SIGKILL, before the command
    /// may run (so before it can be stopped), and the tree ends (and the
    /// grabber with it) even then.
    pub fn guardian_deadline(&self, after: std::time::Duration) {
        if let Some(fd) = self.guardian.as_ref().map(|g| &g.alive) {
            let ms = u32::try_from(after.as_millis()).unwrap_or(u32::MAX);
            let mut msg = [DEADLINE, 0, 0, 0, 0];
            msg[1..].copy_from_slice(&ms.to_ne_bytes());
            // SAFETY: writing five bytes from a valid buffer to our pipe end
            // (a pipe write this small is atomic).
            unsafe { libc::write(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len()) };
        }
    }

    /// Let the child exec; returns the exec's error if it failed (the child
    /// has then exited with 127: [`Gated::abandon`] reaps it).
    pub fn release(&mut self) -> io::Result<()> {
        if let Some(gate) = self.gate.take() {
            let byte = [1u8];
            // SAFETY: writing one byte from a valid buffer to our pipe end.
            let n = unsafe { libc::write(gate.as_raw_fd(), byte.as_ptr().cast(), 1) };
            if n != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        // EOF means the exec succeeded and closed the CLOEXEC write end.
        match self.child_errno() {
            Some(e) => Err(e),
            None => Ok(()),
        }
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

/// Run `work` in a forked child under `program` (installed with no
/// listener, after `prime`), and return what it wrote into `out`. The
/// parent's `out` is left as it was: the child fills its own copy and
/// sends it back through a pipe. Both closures run after a fork of a
/// process that may have other threads, so they must not allocate or take
/// a lock (vDSO and libc time calls, raw syscalls, stack buffers only). The
/// child dies with vdsoctl (PDEATHSIG) and is reaped here.
pub fn run_filtered(
    program: &super::seccomp::Program,
    out: &mut [u64],
    prime: impl FnOnce(),
    work: impl FnOnce(&mut [u64]),
) -> io::Result<()> {
    let (r, w) = pipe()?;
    let fprog = program.fprog();
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child only makes the calls below on memory prepared
    // before the fork, runs the caller's non-allocating closures, writes
    // to the pipe and _exits; the parent continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: async-signal-safe calls on prepared memory, then _exit.
        unsafe {
            let w = w.as_raw_fd();
            let send = |bytes: &[u8]| {
                let mut sent = 0;
                while sent < bytes.len() {
                    let n = libc::write(w, bytes[sent..].as_ptr().cast(), bytes.len() - sent);
                    if n <= 0 {
                        libc::_exit(3);
                    }
                    sent += n as usize;
                }
            };
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 || libc::getppid() != parent {
                libc::_exit(2);
            }
            prime();
            let mut status: u64 = 0;
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0
            {
                status = (*libc::__errno_location()).max(1) as u64;
            }
            send(&status.to_ne_bytes());
            if status == 0 {
                work(out);
                let bytes = std::slice::from_raw_parts(out.as_ptr().cast::<u8>(), std::mem::size_of_val(out));
                send(bytes);
            }
            libc::_exit(0);
        }
    }
    drop(w);
    let mut head = [0u8; 8];
    let got = read_full(r.as_fd(), &mut head);
    let mut copy = vec![0u8; std::mem::size_of_val(out)];
    let body_got = match got {
        Ok(8) if u64::from_ne_bytes(head) == 0 => read_full(r.as_fd(), &mut copy),
        _ => Ok(0),
    };
    let waited = waitpid_retry(pid)?;
    match (got?, u64::from_ne_bytes(head)) {
        (8, 0) => {}
        (8, errno) => return Err(io::Error::from_raw_os_error(errno as i32)),
        _ => return Err(io::Error::other(format!("the counting child ended early ({waited:?})"))),
    }
    if body_got? != copy.len() {
        return Err(io::Error::other(format!("the counting child ended early ({waited:?})")));
    }
    for (v, bytes) in out.iter_mut().zip(copy.chunks_exact(8)) {
        *v = u64::from_ne_bytes(bytes.try_into().expect("8 bytes"));
    }
    Ok(())
}
