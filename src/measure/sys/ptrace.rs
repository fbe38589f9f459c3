//! ptrace(2) for the seccomp engine's traced channel: a filter returning
//! `SECCOMP_RET_TRACE` stops the calling thread in a seccomp-stop (a ptrace
//! stop, TASK_TRACED), where a signal sent meanwhile is queued and
//! delivered after the call ran, as alone — never EINTR (issue 42). The
//! tracer is one thread of vdsoctl: it seizes the command before its exec
//! ([`seize`]), and every ptrace request and wait for the tree is made by
//! that very thread ([`wait`], [`Tracee`]).

use std::io;

/// `PTRACE_SEIZE` options: seccomp-stops, every new task of the tree
/// auto-attached, and the tree SIGKILLed should its tracer thread die.
const OPTIONS: libc::c_int = libc::PTRACE_O_TRACESECCOMP
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_EXITKILL;

/// `PTRACE_GET_SYSCALL_INFO` (Linux 5.3) and its seccomp-stop op.
const GET_SYSCALL_INFO: libc::c_uint = 0x420e;
const INFO_SECCOMP: u8 = 3;
/// `PTRACE_SET_SYSCALL_INFO` (Linux 6.16), for architectures without
/// register offsets in [`crate::arch::SKIP_REGS`].
const SET_SYSCALL_INFO: libc::c_uint = 0x4212;

/// `struct ptrace_syscall_info` with its seccomp member.
#[repr(C)]
#[derive(Default)]
struct RawInfo {
    op: u8,
    pad: [u8; 3],
    arch: u32,
    instruction_pointer: u64,
    stack_pointer: u64,
    nr: u64,
    args: [u64; 6],
    ret_data: u32,
    reserved: u32,
}

/// A call at its seccomp-stop: what the filter saw, and whose filter it was
/// (`ret_data`, the low 16 bits of the SECCOMP_RET_TRACE returned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    pub tid: i32,
    pub nr: i32,
    pub arch: u32,
    pub ip: u64,
    pub sp: u64,
    pub args: [u64; 6],
    pub ret_data: u32,
}

/// What [`wait`] saw of one tracee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A seccomp-stop: [`Tracee::call`] reads it.
    Seccomp(Tracee),
    /// A group-stop (a stop signal took effect): [`Tracee::listen`].
    Group(Tracee),
    /// A signal is about to be delivered: [`Tracee::resume`] with it.
    Signal(Tracee, i32),
    /// Any other stop (a fork, clone or vfork event, a new task's first
    /// stop): resume without a signal.
    Event(Tracee),
    /// The task is gone (exited or killed).
    Gone(i32),
    /// No tracee is left.
    NoneLeft,
}

/// A task traced by the calling thread, stopped (only [`wait`] makes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tracee(i32);

fn check(rc: libc::c_long) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Seize `pid` (running, not stopped) for the calling thread, with the
/// engine's options.
pub fn seize(pid: i32) -> io::Result<()> {
    // SAFETY: PTRACE_SEIZE takes a pid and an options word; no memory.
    check(unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0, OPTIONS as libc::c_long) })
}

/// The next stop or exit of any task the calling thread traces (only
/// them: `__WNOTHREAD`, so vdsoctl's own children stay its other threads').
pub fn wait() -> io::Result<Stop> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes one int through a valid pointer.
        let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::__WNOTHREAD) };
        if tid < 0 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(Stop::NoneLeft),
                _ => return Err(err),
            }
        }
        if !libc::WIFSTOPPED(status) {
            return Ok(Stop::Gone(tid));
        }
        let (sig, event) = (libc::WSTOPSIG(status), status >> 16);
        let t = Tracee(tid);
        return Ok(match event {
            0 => Stop::Signal(t, sig),
            libc::PTRACE_EVENT_SECCOMP => Stop::Seccomp(t),
            // A stop signal under PTRACE_SEIZE: a group-stop.
            libc::PTRACE_EVENT_STOP if matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU) => {
                Stop::Group(t)
            }
            _ => Stop::Event(t),
        });
    }
}

impl Tracee {
    /// The call this tracee is stopped in (at a seccomp-stop).
    pub fn call(self) -> io::Result<Stopped> {
        let mut raw = RawInfo::default();
        // SAFETY: the kernel writes at most `size_of::<RawInfo>()` bytes
        // into `raw`, a valid struct of that size.
        let rc =
            unsafe { libc::ptrace(GET_SYSCALL_INFO, self.0, std::mem::size_of::<RawInfo>(), &mut raw as *mut RawInfo) };
        check(rc)?;
        if raw.op != INFO_SECCOMP {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(Stopped {
            tid: self.0,
            nr: raw.nr as i32,
            arch: raw.arch,
            ip: raw.instruction_pointer,
            sp: raw.stack_pointer,
            args: raw.args,
            ret_data: raw.ret_data,
        })
    }

    /// Resume, delivering `sig` (0: none). At a signal-delivery-stop the
    /// signal goes with the siginfo it came with.
    pub fn resume(self, sig: i32) -> io::Result<()> {
        // SAFETY: PTRACE_CONT takes a pid and a signal number; no memory.
        check(unsafe { libc::ptrace(libc::PTRACE_CONT, self.0, 0, sig as libc::c_long) })
    }

    /// Leave a group-stop to its job control: stopped until SIGCONT, as
    /// alone, while its other events still come (`PTRACE_LISTEN`).
    pub fn listen(self) -> io::Result<()> {
        // SAFETY: PTRACE_LISTEN takes a pid; no memory.
        check(unsafe { libc::ptrace(libc::PTRACE_LISTEN, self.0, 0, 0) })
    }

    /// Skip the call it is stopped in, with ENOSYS, as the kernel does
    /// for a `SECCOMP_RET_TRACE` with no tracer; then resume. `call`: the
    /// call as [`Tracee::call`] read it.
    pub fn skip_enosys(self, call: &Stopped) -> io::Result<()> {
        match crate::arch::SKIP_REGS {
            Some(r) => {
                // SAFETY: PTRACE_POKEUSER writes one word of the tracee's
                // saved registers at an offset of `struct user_regs_struct`.
                check(unsafe { libc::ptrace(libc::PTRACE_POKEUSER, self.0, r.nr, -1 as libc::c_long) })?;
                // SAFETY: as above, the return value's register.
                check(unsafe { libc::ptrace(libc::PTRACE_POKEUSER, self.0, r.ret, -(libc::ENOSYS as libc::c_long)) })?;
            }
            None => {
                let mut raw = RawInfo {
                    op: INFO_SECCOMP,
                    arch: call.arch,
                    instruction_pointer: call.ip,
                    stack_pointer: call.sp,
                    nr: u64::MAX,
                    args: call.args,
                    ..RawInfo::default()
                };
                // SAFETY: the kernel reads at most the given size from `raw`.
                check(unsafe {
                    libc::ptrace(SET_SYSCALL_INFO, self.0, std::mem::size_of::<RawInfo>(), &mut raw as *mut RawInfo)
                })?;
            }
        }
        self.resume(0)
    }
}
