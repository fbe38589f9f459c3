//! The seccomp engine: counting a command's clock syscalls without any
//! privilege. A filter installed in the command before its exec (inherited
//! by everything it forks) stops the clock syscalls of the host ABI and its
//! compat ABI and allows every other syscall. Traced (the default): it
//! returns vdsoctl's `SECCOMP_RET_TRACE`, and a thread of vdsoctl that
//! seized the command at its gate takes each seccomp-stop, counts the call
//! and lets it run; a signal meanwhile waits for the call to end, as alone
//! (issue 42). Where ptrace is refused: `SECCOMP_RET_USER_NOTIF`, a
//! listener thread receives each call and lets it run
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`), and the calls a signal withdrew
//! are counted and said. Exact, per process, clock id and ABI, and for
//! [vsyscall] emulations too (the kernel runs seccomp for them, with the
//! slot as the instruction pointer).
//!
//! Its limits are the mechanism's: every stopped call waits for vdsoctl, so
//! vdsoctl answers until the whole tree has exited (no `-d`), and the
//! command dies with vdsoctl (PR_SET_PDEATHSIG, PTRACE_O_EXITKILL) rather
//! than run on with clock syscalls failing; no_new_privs makes setuid
//! programs in the tree run without their privileges; traced, a program
//! of the tree cannot ptrace its own children (already traced): a command
//! known to (a sanitizer build, a tracer: `inspect::exe::ptrace_user`)
//! counts through the listener instead.

use crate::arch::{self, Abi, FnKind, VdsoFn};
use crate::inspect::exe::PtraceUser;
use crate::inspect::process::{blocked_syscall_sp, boottime_offset_ns, ns_per_tick, read_thread_mem, start_ticks_of};
use crate::measure::sys::ptrace::{self, Stop, Tracee};
use crate::measure::sys::seccomp::{Insn, Listener, Notification, Program, Wake};
use crate::measure::trace::engine::Channel;
use crate::measure::trace::sites::Book;
use own::Own;

pub mod own;
use crate::measure::trace::{Clock, Key, RandomCall, Site, Tally};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Classic BPF opcodes (`include/uapi/linux/bpf_common.h`).
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
/// `offsetof(struct seccomp_data, nr)`, `arch` and `args`.
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
const DATA_ARGS: u32 = 16;

/// The offset of the low 32 bits of syscall argument `i` (a u64 in the
/// kernel's byte order) in `struct seccomp_data`.
fn arg_low(abi: Abi, i: u32) -> u32 {
    DATA_ARGS + 8 * i + if abi.little_endian() { 0 } else { 4 }
}
/// The seccomp actions used (`include/uapi/linux/seccomp.h`).
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const RET_ERRNO: u32 = 0x0005_0000;
/// vdsoctl's `SECCOMP_RET_TRACE`: its data (the low 16 bits) tells a stop
/// of vdsoctl's filter from one of the command's own (`RET_TRACE` of
/// theirs, with other data, or a newer filter of theirs that ties).
const TRACE_DATA: u32 = 0x7664;
const RET_TRACE_OURS: u32 = own::RET_TRACE | TRACE_DATA;

/// The ABIs a filter on this host watches: the kernel's and its compat ABI
/// (the kernel's, not the build's: an i386 vdsoctl may run x86_64 children).
/// An architecture the table does not know is refused, by name: a filter
/// on another architecture's numbers would let every clock call through.
fn watched_abis() -> crate::error::Result<Vec<Abi>> {
    let host = crate::inspect::kernel::abi().or(arch::HOST_ABI).ok_or_else(|| crate::error::Error::Facility {
        errno: None,
        what: crate::error::Facility::UnknownSyscallNumbers { machine: crate::inspect::kernel::machine() },
        hint: crate::error::Hint::UnsupportedArch,
    })?;
    Ok(std::iter::once(host).chain(host.compat()).collect())
}

/// The syscall numbers notified for `abi` whatever their arguments: its
/// clock syscalls, and on x86_64 the same numbers with the x32 bit (x32
/// tasks run with the x86_64 audit arch; their calls are counted as x86_64
/// rows). Not `futex` ([`watched_futex`]).
fn watched_numbers(abi: Abi, traced: bool) -> Vec<u32> {
    let by_nr = || abi.vdso_syscalls().iter().filter(|(f, _)| f.futex_op().is_none());
    let plain = by_nr().map(|(_, nr)| *nr as u32);
    let x32 = abi.x32_bit().into_iter().flat_map(|bit| by_nr().map(move |(_, nr)| (nr | bit) as u32));
    // seccomp(2) too: a program the command installs of its own (see
    // [`own`]). Traced, the kernel itself runs the command's programs
    // beside vdsoctl's, as alone: nothing to model.
    let install = (!traced).then_some(abi.seccomp_syscall() as u32);
    // Traced, ptrace(2) too: a request that takes a task as its tracer
    // finds it traced by vdsoctl (EPERM), and is said (`ptrace_requests`).
    let ptrace = traced.then_some(abi.ptrace_syscall() as u32);
    plain.chain(x32).chain(install).chain(ptrace).collect()
}

/// The `futex` numbers of `abi` notified only when the op (the second
/// argument) carries `FUTEX_ROBUST_UNLOCK`: a robust unlock's fallback
/// ([`arch::VdsoFn::futex_op`]); every other futex call runs untouched.
fn watched_futex(abi: Abi) -> Vec<u32> {
    let mut nrs: Vec<u32> =
        abi.vdso_syscalls().iter().filter(|(f, _)| f.futex_op().is_some()).map(|(_, nr)| *nr as u32).collect();
    nrs.dedup();
    nrs
}

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
    Insn { code, jt, jf, k }
}

/// The filter: per watched ABI, a block that loads the syscall number and
/// jumps to the notify return (`traced`: vdsoctl's RET_TRACE) on a clock
/// syscall (a `futex` one only with `FUTEX_ROBUST_UNLOCK` in its op);
/// everything else is allowed.
pub fn program(traced: bool) -> crate::error::Result<Program> {
    if traced {
        return Ok(Program::traced(filter(traced, RET_TRACE_OURS)?));
    }
    Ok(Program::new(filter(traced, RET_USER_NOTIF)?))
}

/// A filter that fails every clock syscall with `errno`, for a process of
/// vdsoctl's own: `bench` counts without perf by how many calls of a path
/// come back with it (`measure::bench`).
pub fn marking_program(errno: u16) -> crate::error::Result<Program> {
    Ok(Program::plain(filter(true, RET_ERRNO | u32::from(errno))?))
}

/// [`program`]'s instructions, `ret` the watched calls' return.
fn filter(traced: bool, ret: u32) -> crate::error::Result<Vec<Insn>> {
    let blocks: Vec<(Abi, Vec<u32>, Vec<u32>)> =
        watched_abis()?.into_iter().map(|a| (a, watched_numbers(a, traced), watched_futex(a))).collect();
    let len: usize = blocks.iter().map(|(_, nrs, fx)| 4 + nrs.len() + 4 * fx.len()).sum::<usize>() + 2;
    let notify = len - 1;
    let mut insns = Vec::with_capacity(len);
    for (abi, nrs, futex) in &blocks {
        insns.push(insn(LD_W_ABS, 0, 0, DATA_ARCH));
        // Not this ABI: skip the number load, the tests and the ALLOW.
        insns.push(insn(JEQ_K, 0, (nrs.len() + 4 * futex.len() + 2) as u8, abi.audit_arch()));
        insns.push(insn(LD_W_ABS, 0, 0, DATA_NR));
        for nr in futex {
            // Not this number: past the op's test and its ALLOW.
            insns.push(insn(JEQ_K, 0, 3, *nr));
            insns.push(insn(LD_W_ABS, 0, 0, arg_low(*abi, 1)));
            let to_notify = notify - (insns.len() + 1);
            insns.push(insn(JSET_K, to_notify as u8, 0, arch::FUTEX_ROBUST_UNLOCK));
            insns.push(insn(RET_K, 0, 0, RET_ALLOW));
        }
        for nr in nrs {
            let to_notify = notify - (insns.len() + 1);
            insns.push(insn(JEQ_K, to_notify as u8, 0, *nr));
        }
        insns.push(insn(RET_K, 0, 0, RET_ALLOW));
    }
    insns.push(insn(RET_K, 0, 0, RET_ALLOW));
    insns.push(insn(RET_K, 0, 0, ret));
    debug_assert_eq!(insns.len(), len);
    Ok(insns)
}

/// What a notified call is, decoded: which function of which ABI, or a
/// [vsyscall] emulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Syscall {
        abi: Abi,
        func: VdsoFn,
        clock: Clock,
    },
    Vsyscall(VdsoFn),
    /// seccomp(2): the command installs a filter of its own.
    Install {
        is_64: bool,
    },
}

impl Call {
    /// Whether deciding it read the caller (getrandom's origin, from its maps).
    fn reads_caller(self) -> bool {
        matches!(self, Call::Syscall { clock: Clock::Random(_), .. } | Call::Install { .. })
    }
}

/// Decode a notification; `None` for a number the filter should not have
/// sent. `in_vdso` says whether the call's instruction pointer lies in the
/// caller's vDSO (asked of native getrandom calls only).
pub fn decode(n: &Notification, in_vdso: &dyn Fn() -> bool) -> Option<Call> {
    let abi = Abi::from_audit_arch(n.arch)?;
    let mut nr = i64::from(n.nr);
    if let Some(bit) = abi.x32_bit() {
        nr &= !bit;
    }
    if i64::from(n.nr) == abi.seccomp_syscall() {
        return Some(Call::Install { is_64: abi.elf().1 });
    }
    let func = abi.vdso_call(nr, n.args[1])?;
    if abi == Abi::X86_64 && n.ip & !0xfff == arch::vsyscall::BASE {
        return Some(Call::Vsyscall(func));
    }
    // clockid_t is an int: the low 32 bits, signed (CPU clocks of other
    // processes are negative ids; they fold into `Other`, as in every engine).
    let clock = match func.kind() {
        FnKind::Clock if func.takes_clock() => Clock::of_id(i64::from(n.args[0] as u32 as i32)),
        FnKind::Clock | FnKind::Cpu | FnKind::Futex => Clock::None,
        // Only a native task's vDSO has getrandom.
        FnKind::Random => Clock::Random(RandomCall::of_args(
            n.args[1],
            n.args[2],
            abi == abi.native() && abi.vdso_offers(func) && in_vdso(),
        )),
    };
    Some(Call::Syscall { abi, func, clock })
}

/// A thread seen before: its process, and its own start (clock ticks
/// since boot, from /proc/TID/stat), so a reused tid is never taken for
/// the old one. A few hot threads keep their /proc/TID/comm open (a read of
/// it fails ESRCH once that very thread is gone: one pread per recheck);
/// the others are read anew (open, read, close). The fds held are bounded
/// ([`Resolver::max_held`]): a tree of 10,000 processes under
/// `nofile=1024` is counted as exactly as one of ten.
struct Task {
    tgid: i32,
    /// Its process's start ([`Key::start`]): a reused pid is a new process.
    start: u64,
    /// The thread's own start ticks, read again after [`RECHECK`].
    ticks: u64,
    probe: Option<File>,
    checked: Instant,
}

/// A process seen before: the name last read of `/proc/TGID/comm`, and
/// that file kept open while fds may be held.
struct Proc {
    name: String,
    comm: Option<File>,
    read: Instant,
}

/// Threads and processes remembered, bounded: a cache dropped whole when
/// full (entries are read anew from /proc on the next call).
const MAX_TASKS: usize = 4096;

/// At most this many /proc files held open (and at most an eighth of the
/// soft fd limit).
const MAX_HELD: usize = 64;

/// How long a thread's identity and a process's name are taken as read.
/// A tid cannot be reused that fast: reuse needs the pid space to wrap,
/// hundreds of forks even at the smallest pid_max (301).
const RECHECK: std::time::Duration = std::time::Duration::from_millis(1);

struct Resolver {
    tasks: HashMap<i32, Task>,
    procs: HashMap<i32, Proc>,
    /// /proc files held open now, and the most that may be.
    held: usize,
    max_held: usize,
    /// Whether the last [`Resolver::resolve`] read anything of /proc (the
    /// notification must then be checked still valid).
    read: bool,
}

/// A comm as read (`/proc/PID/comm`: its bytes and a line feed), kept as
/// [`crate::words::bytes_text`] writes it: a name that is not UTF-8
/// (`PR_SET_NAME`; a long UTF-8 name an exec cut at 15 bytes) is a name
/// like any other, apart from every other.
fn comm_text(bytes: &[u8]) -> String {
    crate::words::bytes_text(bytes.strip_suffix(b"\n").unwrap_or(bytes))
}

/// The comm of a small /proc file, opened for this read only.
fn read_small(path: &str) -> io::Result<String> {
    let mut buf = [0u8; 64];
    let n = File::open(path)?.read(&mut buf)?;
    Ok(comm_text(&buf[..n]))
}

/// The comm of an open /proc file, read again from its start.
fn reread(f: &File) -> io::Result<String> {
    let mut buf = [0u8; 64];
    let n = f.read_at(&mut buf, 0)?;
    Ok(comm_text(&buf[..n]))
}

/// `Tgid:` and `PPid:` of `/proc/TID/status` (read as bytes: its `Name:`
/// line is the comm, whatever bytes it holds).
fn ids_of(tid: i32) -> io::Result<(i32, Option<i32>)> {
    let mut bytes = Vec::new();
    File::open(format!("/proc/{tid}/status"))?.take(4096).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse::<i32>().ok());
    let tgid = field("Tgid:").ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Tgid"))?;
    Ok((tgid, field("PPid:").filter(|p| *p > 0)))
}

impl Resolver {
    fn new() -> Resolver {
        use nix::sys::resource::{getrlimit, Resource};
        let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(0, |(soft, _)| soft);
        let max_held = usize::try_from(soft / 8).unwrap_or(MAX_HELD).min(MAX_HELD);
        Resolver { tasks: HashMap::new(), procs: HashMap::new(), held: 0, max_held, read: false }
    }

    /// Open `path` to keep, if another fd may be held.
    fn hold(&mut self, path: &str) -> Option<File> {
        if self.held >= self.max_held {
            return None;
        }
        let f = File::open(path).ok()?;
        self.held += 1;
        Some(f)
    }

    fn forget_task(&mut self, tid: i32) {
        if let Some(t) = self.tasks.remove(&tid) {
            self.held -= usize::from(t.probe.is_some());
            self.forget_proc(t.tgid);
        }
    }

    fn forget_proc(&mut self, tgid: i32) {
        if let Some(p) = self.procs.remove(&tgid) {
            self.held -= usize::from(p.comm.is_some());
        }
    }

    /// Whether the thread `tid` seen before is still that thread.
    fn still_same(t: &Task, tid: i32) -> bool {
        match &t.probe {
            Some(f) => reread(f).is_ok(),
            None => start_ticks_of(tid) == Some(t.ticks),
        }
    }

    /// The process of `tid`, read while its call waits; a process seen for
    /// the first time gets its parent recorded in `tally`, and its name
    /// there whenever it changed (a rename, an exec). `None`: /proc did not
    /// say (the thread is gone, or no fd was left to read it).
    fn resolve(&mut self, tid: i32, now: Instant, tally: &Mutex<Tally>) -> Option<(i32, u64)> {
        self.read = false;
        let stale = match self.tasks.get_mut(&tid) {
            Some(t) if now > t.checked + RECHECK => {
                self.read = true;
                let same = Resolver::still_same(t, tid);
                t.checked = now;
                !same
            }
            _ => false,
        };
        if stale {
            self.forget_task(tid);
        }
        if !self.tasks.contains_key(&tid) {
            if self.tasks.len() >= MAX_TASKS {
                self.tasks.clear();
                self.procs.clear();
                self.held = 0;
            }
            self.read = true;
            let mut task = first_sight(tid, now, tally)?;
            task.probe = self.hold(&format!("/proc/{tid}/comm"));
            self.forget_proc(task.tgid);
            self.tasks.insert(tid, task);
        }
        let (tgid, start) = self.tasks.get(&tid).map(|t| (t.tgid, t.start))?;
        let fresh = self.name_of(tgid, now)?;
        if let Some(name) = fresh {
            lock(tally).comms.insert(tgid, name);
        }
        Some((tgid, start))
    }

    /// `Some(Some(name))` when the process's name is new or changed,
    /// `Some(None)` when it is as last read; `None` if it cannot be read.
    fn name_of(&mut self, tgid: i32, now: Instant) -> Option<Option<String>> {
        match self.procs.get_mut(&tgid) {
            Some(p) if now <= p.read + RECHECK => Some(None),
            Some(p) => {
                self.read = true;
                p.read = now;
                let name = match &p.comm {
                    Some(f) => reread(f),
                    None => read_small(&format!("/proc/{tgid}/comm")),
                };
                Some(name.ok().filter(|n| *n != p.name).inspect(|n| p.name.clone_from(n)))
            }
            None => {
                self.read = true;
                let path = format!("/proc/{tgid}/comm");
                let name = read_small(&path).ok()?;
                let comm = self.hold(&path);
                self.procs.insert(tgid, Proc { name: name.clone(), comm, read: now });
                Some(Some(name))
            }
        }
    }
}

/// A thread never seen (or seen as another): its process, that process's
/// start and parent (recorded in `tally`), and its own start.
fn first_sight(tid: i32, now: Instant, tally: &Mutex<Tally>) -> Option<Task> {
    let ticks = start_ticks_of(tid)?;
    let (tgid, ppid) = ids_of(tid).ok()?;
    let parent = if tgid == tid { ppid } else { ids_of(tgid).ok().and_then(|(_, p)| p) };
    if let Some(ppid) = parent {
        lock(tally).parents.insert(tgid, ppid);
    }
    let process_ticks = if tgid == tid { Some(ticks) } else { start_ticks_of(tgid) };
    // ns since boot, as the kernel keeps it (a time namespace shifts
    // /proc's value; the BPF engine keys on the kernel's).
    let start = process_ticks.map_or(0, |t| (t * ns_per_tick()).saturating_add_signed(-boottime_offset_ns()).max(1));
    Some(Task { tgid, start, ticks, probe: None, checked: now })
}

fn lock(t: &Mutex<Tally>) -> std::sync::MutexGuard<'_, Tally> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// State the supervisor thread shares.
#[derive(Default)]
struct Shared {
    tally: Mutex<Tally>,
    /// When the last process holding the filter was gone (the listener hung up).
    ended: Mutex<Option<Instant>>,
}

/// Why the seccomp engine counts through a listener, not ptrace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenerWhy {
    /// The host or a sandbox refuses vdsoctl's ptrace of the command
    /// (YAMA, seccomp, vdsoctl traced itself).
    PtraceRefused,
    /// `--seccomp-channel listener`.
    Asked,
    /// The command is a sanitizer build that stops the world by ptrace:
    /// traced, its leak check would fail.
    Sanitizer,
    /// The command is a tracer (strace, gdb, ltrace, rr): traced, its
    /// ptrace calls would fail EPERM.
    Tracer,
}

impl From<PtraceUser> for ListenerWhy {
    fn from(user: PtraceUser) -> ListenerWhy {
        match user {
            PtraceUser::Sanitizer => ListenerWhy::Sanitizer,
            PtraceUser::Tracer => ListenerWhy::Tracer,
        }
    }
}

/// How the seccomp engine heard of the calls, for the report (`seccomp_channel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ChannelUsed {
    /// `ptrace` (seccomp-stops) or `listener`.
    pub channel: Channel,
    /// The listener's reason (`null` under ptrace).
    pub why: Option<ListenerWhy>,
}

/// The seccomp engine, before and while it supervises a command's tree.
#[derive(Debug)]
pub struct SeccompTracer {
    per_thread: bool,
    /// `--sites`: each call's site read while it waits.
    sites: bool,
    program: Program,
    /// Counting through ptrace (a seccomp-stop per call), not through a
    /// listener: see [`ptrace_allowed`].
    traced: bool,
    /// Not traced: why.
    listener_why: Option<ListenerWhy>,
    shared: Arc<SharedHandle>,
    worker: Option<JoinHandle<()>>,
    /// Closing this (dropping it) tells the supervisor to stop.
    stop: Option<OwnedFd>,
    /// Traced: closed when the tracer thread is done.
    done: Option<std::sync::mpsc::Receiver<()>>,
}

/// Whether this host lets vdsoctl ptrace the command it starts: YAMA's
/// `ptrace_scope` 0 or 1 (vdsoctl is the command's ancestor), 2 with
/// CAP_SYS_PTRACE; no YAMA at all. Elsewhere (scope 3; 2 unprivileged)
/// the engine counts through a listener, and says what that costs
/// (`calls-withdrawn-by-signal`).
pub fn ptrace_allowed() -> bool {
    let scope = std::fs::read("/proc/sys/kernel/yama/ptrace_scope").ok();
    match scope.as_deref().map(|b| b.trim_ascii()) {
        None | Some(b"0") | Some(b"1") => true,
        Some(b"2") => has_cap_sys_ptrace(),
        Some(_) => false,
    }
}

/// CAP_SYS_PTRACE (19) in vdsoctl's effective set.
fn has_cap_sys_ptrace() -> bool {
    let status = std::fs::read("/proc/self/status").unwrap_or_default();
    String::from_utf8_lossy(&status)
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 19) != 0)
}

/// `Shared` behind a Debug-able handle.
struct SharedHandle(Shared);

impl std::fmt::Debug for SharedHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SeccompShared")
    }
}

impl SeccompTracer {
    /// An engine ready to give its filter to a command.
    /// `channel` as asked; `ptrace_user`: the command ptraces its own tree.
    pub fn new(
        per_thread: bool,
        sites: bool,
        channel: Channel,
        ptrace_user: Option<PtraceUser>,
    ) -> crate::error::Result<SeccompTracer> {
        let listener_why = match (channel, ptrace_user) {
            (Channel::Listener, _) => Some(ListenerWhy::Asked),
            (_, _) if !ptrace_allowed() => Some(ListenerWhy::PtraceRefused),
            (Channel::Auto, Some(user)) => Some(user.into()),
            _ => None,
        };
        let traced = listener_why.is_none();
        Ok(SeccompTracer {
            per_thread,
            sites,
            program: program(traced)?,
            traced,
            listener_why,
            shared: Arc::new(SharedHandle(Shared::default())),
            worker: None,
            stop: None,
            done: None,
        })
    }

    /// Count through a listener, not ptrace (before any command is given
    /// the filter).
    pub fn use_listener(&mut self) -> crate::error::Result<()> {
        self.program = program(false)?;
        self.traced = false;
        self.listener_why = Some(ListenerWhy::PtraceRefused);
        Ok(())
    }

    /// Counting through a listener: why.
    pub fn listener_why(&self) -> Option<ListenerWhy> {
        self.listener_why
    }

    /// The channel it counts through, and why.
    pub fn channel(&self) -> ChannelUsed {
        let channel = if self.traced { Channel::Ptrace } else { Channel::Listener };
        ChannelUsed { channel, why: self.listener_why }
    }

    /// Whether it counts through ptrace (the command is seized, no
    /// listener is handed over).
    pub fn is_traced(&self) -> bool {
        self.traced
    }

    /// Trace the tree of `root` (held at its gate, the traced filter
    /// installed): a thread of vdsoctl seizes it, then takes every
    /// seccomp-stop of its tree; `ppid` is its parent (vdsoctl). The seize's
    /// refusal is returned.
    pub fn supervise_traced(&mut self, root: i32, ppid: i32) -> io::Result<()> {
        lock(&self.shared.0.tally).parents.insert(root, ppid);
        let shared = Arc::clone(&self.shared);
        let how = How { per_thread: self.per_thread, sites: self.sites };
        let (up_tx, up_rx) = std::sync::mpsc::channel::<io::Result<()>>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new().name("seccomp".into()).spawn(move || {
            let resolver = Resolver::new();
            let seized = ptrace::seize(root);
            let ok = seized.is_ok();
            let _ = up_tx.send(seized);
            if ok {
                trace_tree(&shared.0, how, resolver);
            }
            drop(done_tx);
        })?;
        let seized = up_rx.recv().unwrap_or_else(|_| Err(io::Error::other("the tracer thread ended")));
        if seized.is_err() {
            let _ = worker.join();
            return seized;
        }
        self.worker = Some(worker);
        self.done = Some(done_rx);
        Ok(())
    }

    /// The filter the command installs before its exec.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Supervise the tree behind `listener`: `root` is the command, `ppid`
    /// its parent (vdsoctl).
    pub fn supervise(&mut self, listener: Listener, root: i32, ppid: i32) -> io::Result<()> {
        lock(&self.shared.0.tally).parents.insert(root, ppid);
        listener.prefer_sync_wake_up();
        let (stop_r, stop_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)?;
        let shared = Arc::clone(&self.shared);
        let how = How { per_thread: self.per_thread, sites: self.sites };
        // The supervisor is up before the command may run: a call waiting
        // for a supervisor not yet there can be withdrawn by a signal
        // before any id was received, and such a gap could not be seen.
        let (up_tx, up_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new().name("seccomp".into()).spawn(move || {
            let serving = Serving::new();
            let _ = up_tx.send(());
            serve_calls(&listener, &stop_r, &shared.0, how, serving)
        })?;
        let _ = up_rx.recv_timeout(std::time::Duration::from_secs(5));
        self.worker = Some(worker);
        self.stop = Some(stop_w);
        Ok(())
    }

    /// When the whole tree was gone, if it is.
    pub fn tree_ended(&self) -> Option<Instant> {
        *self.shared.0.ended.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop answering (a tree still alive then gets ENOSYS for its clock
    /// syscalls: the session calls this once the tree is gone, or gives up).
    pub fn stop(&mut self) {
        self.stop = None;
        // Traced, the thread ends when the last tracee is gone (the
        // session has killed what was left): waited for a while, never
        // for ever (should it outlive vdsoctl, EXITKILL ends the tree).
        if let Some(done) = self.done.take() {
            let ended = done.recv_timeout(std::time::Duration::from_secs(5));
            if matches!(ended, Err(std::sync::mpsc::RecvTimeoutError::Timeout)) {
                self.worker = None;
            }
        }
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }

    /// Counts so far.
    pub fn snapshot(&self) -> Tally {
        lock(&self.shared.0.tally).clone()
    }
}

impl Drop for SeccompTracer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The supervisor: take each notified call, count it, let it run; until
/// the listener hangs up (no process holds the filter) or `stop` closes.
fn serve_calls(listener: &Listener, stop: &OwnedFd, shared: &Shared, how: How, serving: Serving) {
    let Serving { mut resolver, mut own } = serving;
    let mut book = how.sites.then(Book::default);
    let mut ids = Ids::default();
    loop {
        match listener.wait(stop.as_fd()) {
            Ok(Wake::Call) => match listener.recv() {
                Ok(n) => {
                    let withdrawn = ids.next(n.id);
                    if withdrawn > 0 {
                        lock(&shared.tally).withdrawn += withdrawn;
                    }
                    answer(listener, &n, (&mut resolver, &mut own), shared, how.per_thread, book.as_mut())
                }
                // The caller was killed between the wake-up and the receive.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(_) => return,
            },
            Ok(Wake::TreeGone) => {
                *shared.ended.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                return;
            }
            Ok(Wake::Again) => {}
            Ok(Wake::Stop) | Err(_) => return,
        }
    }
}

/// The tracer thread: take every stop of the tree it seized until no
/// tracee is left. A seccomp-stop is a call (counted, then let run, or,
/// stopped by a program of the command's own, skipped with ENOSYS as alone);
/// a signal is delivered as it came (its siginfo untouched); a group-stop
/// stays stopped until SIGCONT (PTRACE_LISTEN), as alone.
fn trace_tree(shared: &Shared, how: How, mut resolver: Resolver) {
    let mut book = how.sites.then(Book::default);
    loop {
        // A tracee killed meanwhile (ESRCH) has nothing left to resume.
        let _ = match ptrace::wait() {
            Ok(Stop::Seccomp(t)) => traced_call(t, &mut resolver, shared, how.per_thread, book.as_mut()),
            Ok(Stop::Group(t)) => t.listen(),
            Ok(Stop::Signal(t, sig)) => t.resume(sig),
            Ok(Stop::Event(t)) => t.resume(0),
            Ok(Stop::Gone(_)) => Ok(()),
            Ok(Stop::NoneLeft) | Err(_) => break,
        };
    }
    *shared.ended.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
}

/// One call at its seccomp-stop: who made it and what it is (read while it
/// is stopped), let run or skipped, and counted once it was let go.
fn traced_call(
    t: Tracee,
    resolver: &mut Resolver,
    shared: &Shared,
    per_thread: bool,
    book: Option<&mut Book>,
) -> io::Result<()> {
    let Ok(c) = t.call() else {
        lock(&shared.tally).lost_records += 1;
        return t.resume(0);
    };
    let n = Notification { id: 0, tid: c.tid, nr: c.nr, arch: c.arch, ip: c.ip, args: c.args };
    let call = decode(&n, &|| crate::inspect::process::in_vdso_of(n.tid, n.ip));
    let ours = c.ret_data == TRACE_DATA;
    if ours && Abi::from_audit_arch(n.arch).is_some_and(|abi| i64::from(n.nr) == abi.ptrace_syscall()) {
        // PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE: the task to trace
        // may be one vdsoctl traces (EPERM, where alone it is not).
        if matches!(n.args[0], 0 | 16 | 0x4206) {
            lock(&shared.tally).ptrace_requests += 1;
        }
        return t.resume(0);
    }
    if !ours && call.is_none() {
        // Another call a program of the command's own traces: alone, with
        // no tracer, the kernel fails it ENOSYS.
        return t.skip_enosys(&c);
    }
    let who = resolver
        .resolve(n.tid, Instant::now(), &shared.tally)
        .or_else(|| resolver.resolve(n.tid, Instant::now(), &shared.tally));
    let site = match (&book, call) {
        (Some(_), Some(Call::Syscall { abi, .. })) => Some(site_of(&n, abi, Some(c.sp))),
        _ => None,
    };
    // A clock call of theirs is made (and counted) and fails ENOSYS, as alone.
    if ours {
        t.resume(0)?;
    } else {
        t.skip_enosys(&c)?;
    }
    record(&mut lock(&shared.tally), who, call, (n.tid, per_thread), book, site);
    Ok(())
}

/// What the supervisor reads before it says it is up.
struct Serving {
    resolver: Resolver,
    own: Own,
}

impl Serving {
    fn new() -> Serving {
        Serving { resolver: Resolver::new(), own: Own::new() }
    }
}

/// The notification ids received so far. The kernel numbers a filter's
/// notifications in order, one a call (`seccomp_next_notify_id`), and
/// vdsoctl's one supervisor receives them in that order, so an id skipped
/// is a call that left before it was received: a signal withdrew it while
/// it waited (the ERESTARTSYS path of seccomp_do_user_notification; with
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` only until it is received).
#[derive(Debug, Default)]
struct Ids {
    last: Option<u64>,
}

impl Ids {
    /// Take `id`; how many ids before it were never received.
    fn next(&mut self, id: u64) -> u64 {
        let skipped = match self.last {
            Some(last) if id > last => id - last - 1,
            _ => 0,
        };
        self.last = Some(self.last.map_or(id, |l| l.max(id)));
        skipped
    }
}

/// One call: who made it (read while it waits, then checked still pending),
/// let it run, and count it once it did.
fn answer(
    listener: &Listener,
    n: &Notification,
    (resolver, own): (&mut Resolver, &mut Own),
    shared: &Shared,
    per_thread: bool,
    book: Option<&mut Book>,
) {
    // A failed read (no fd left, say) is tried once more before the call
    // is let through uncounted, and then it is `lost`, never silently.
    let who = resolver
        .resolve(n.tid, Instant::now(), &shared.tally)
        .or_else(|| resolver.resolve(n.tid, Instant::now(), &shared.tally));
    let call = decode(n, &|| crate::inspect::process::in_vdso_of(n.tid, n.ip));
    if let Some(Call::Install { is_64 }) = call {
        return install(listener, n, who.zip(own::read_program(n, is_64)), own);
    }
    // A clock call the command's own program sends to TRACE: ENOSYS.
    let enosys = match (who, call) {
        (Some((tgid, _)), Some(_)) if !own.is_empty() => {
            let parent = lock(&shared.tally).parents.get(&tgid).copied();
            own.enosys(tgid, parent, n)
        }
        _ => false,
    };
    // --sites: the stack word is read while the call waits (valid if the
    // notification still is, checked next).
    let site = match (&book, call) {
        (Some(_), Some(Call::Syscall { abi, .. })) => Some(site_of(n, abi, None)),
        _ => None,
    };
    // Only what was read of /proc (or of the caller's memory) about this
    // caller needs it still waiting; a cached answer does not.
    let read = resolver.read || call.is_some_and(|c| c.reads_caller()) || site.is_some() || !own.is_empty();
    // Gone while vdsoctl held it (a signal, or its task killed): withdrawn
    // too, though its id was received (no gap says it).
    if read && !listener.id_valid(n.id) {
        lock(&shared.tally).withdrawn += 1;
        return;
    }
    let answered = if enosys { listener.fail(n.id, libc::ENOSYS) } else { listener.resume(n.id) };
    if answered.is_err() {
        lock(&shared.tally).withdrawn += 1;
        return;
    }
    record(&mut lock(&shared.tally), who, call, (n.tid, per_thread), book, site);
}

/// A call that ran: counted for its process (and thread, `per_thread`),
/// or said as lost when who made it or what it was is unknown.
fn record(
    tally: &mut Tally,
    who: Option<(i32, u64)>,
    call: Option<Call>,
    (tid, per_thread): (i32, bool),
    book: Option<&mut Book>,
    site: Option<Site>,
) {
    let (Some((tgid, start)), Some(call)) = (who, call) else {
        // The call ran, and was not counted: said as lost.
        tally.lost_records += 1;
        return;
    };
    match call {
        Call::Vsyscall(func) => *tally.vsyscall.entry((tgid, func)).or_insert(0) += 1,
        Call::Install { .. } => {}
        Call::Syscall { abi, func, clock } => {
            let key = Key { pid: tgid, tid: per_thread.then_some(tid), abi, func, clock, comm: None, start };
            *tally.counts.entry(key).or_insert(0) += 1;
            if let (Some(book), Some(site)) = (book, site) {
                book.note(tgid, start);
                // Outside the mappings taken: it exec'd since (it waits: read them now).
                if !book.maps(tgid, start, site.ip) {
                    book.retake(tgid, start);
                }
                book.name(tally, &key, site);
                *tally.sites.entry((key, site)).or_insert(0) += 1;
            }
        }
    }
}

/// seccomp(2) of the command: the program it installs kept for its process
/// (once the call is known still waiting), and the call let run.
fn install(listener: &Listener, n: &Notification, installed: Option<((i32, u64), Vec<Insn>)>, own: &mut Own) {
    if let Some(((tgid, _), program)) = installed.filter(|_| listener.id_valid(n.id)) {
        own.keep(n.tid, tgid, program, n.args[1]);
    }
    let _ = listener.resume(n.id);
}

/// How the supervisor counts: rows per thread, split by call site.
#[derive(Debug, Clone, Copy)]
struct How {
    per_thread: bool,
    sites: bool,
}

/// Where a waiting call was made from: the instruction (the notification's
/// pointer is past it) and the word at its stack pointer, which
/// /proc/TID/syscall shows while the thread is blocked in the call (`nr
/// args... sp pc`), read through /proc/TID/mem — for a compat call the
/// words eight and three up ([`Site::words`]). A word that cannot be read is 0.
fn site_of(n: &Notification, abi: Abi, sp: Option<u64>) -> Site {
    let ip = n.ip.saturating_sub(arch::SITE_REGS.map_or(0, |r| r.insn_len));
    let word = || -> Option<u64> {
        let sp = sp.or_else(|| blocked_syscall_sp(n.tid))?;
        if abi.elf().1 {
            let mut buf = [0u8; 8];
            read_thread_mem(n.tid, sp, &mut buf)?;
            return Some(u64::from_ne_bytes(buf));
        }
        // 32-bit: the words eight and three up, as the BPF engine packs them.
        let mut buf = [0u8; 36];
        read_thread_mem(n.tid, sp, &mut buf)?;
        let word = |at: usize| u64::from(u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or([0; 4])));
        Some(word(32) | word(12) << 32)
    };
    Site { ip, ret: word().unwrap_or(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the opcodes the filter uses.
    fn run(p: &[Insn], arch: u32, nr: u32) -> u32 {
        run_op(p, arch, nr, 0)
    }

    /// [`run`] of a call whose second argument is `op`.
    fn run_op(p: &[Insn], arch: u32, nr: u32, op: u32) -> u32 {
        let (mut pc, mut a) = (0usize, 0u32);
        let op_at = Abi::from_audit_arch(arch).map(|abi| arg_low(abi, 1));
        loop {
            let i = p[pc];
            match i.code {
                LD_W_ABS if Some(i.k) == op_at => a = op,
                LD_W_ABS => a = if i.k == DATA_ARCH { arch } else { nr },
                JSET_K => pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf }),
                JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                RET_K => return i.k,
                c => panic!("opcode {c:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn clock_syscalls_notify_and_everything_else_runs() {
        let program = program(false).unwrap();
        let p = program.insns();
        assert!(p.len() < 255, "jump offsets are one byte");
        for abi in watched_abis().unwrap() {
            for (f, nr) in abi.vdso_syscalls() {
                let op = f.futex_op().map_or(0, |op| op.value | 1);
                assert_eq!(run_op(p, abi.audit_arch(), *nr as u32, op), RET_USER_NOTIF, "{abi:?} {nr}");
                if f.futex_op().is_some() {
                    // FUTEX_WAKE_PRIVATE, FUTEX_WAIT: not a robust unlock.
                    assert_eq!(run_op(p, abi.audit_arch(), *nr as u32, 129), RET_ALLOW, "{abi:?} {nr}");
                    assert_eq!(run_op(p, abi.audit_arch(), *nr as u32, 0), RET_ALLOW, "{abi:?} {nr}");
                }
            }
            // Some syscall numbers that are not clock syscalls in this ABI.
            for nr in [0u32, 1, 39, 60, 231, 500] {
                if abi.vdso_syscall(i64::from(nr)).is_none() {
                    assert_eq!(run(p, abi.audit_arch(), nr), RET_ALLOW, "{abi:?} {nr}");
                }
            }
        }
        if arch::HOST_ABI == Some(Abi::X86_64) {
            assert_eq!(run(p, Abi::X86_64.audit_arch(), 0x4000_0000 | 228), RET_USER_NOTIF);
            // i386 `time` (13) is x86_64 `rt_sigaction`: decided by arch.
            assert_eq!(run(p, Abi::X86_64.audit_arch(), 13), RET_ALLOW);
            assert_eq!(run(p, Abi::I386.audit_arch(), 13), RET_USER_NOTIF);
        }
        // An arch the filter does not know runs untouched.
        assert_eq!(run(p, 0x8000_0016, 228), RET_ALLOW);
    }

    /// Traced, the same calls stop with vdsoctl's RET_TRACE data, and
    /// seccomp(2) is not watched (the kernel runs the command's programs).
    #[test]
    fn the_traced_filter_stops_clock_syscalls_with_vdsoctls_data() {
        let program = program(true).unwrap();
        assert!(!program.wants_listener());
        let p = program.insns();
        for abi in watched_abis().unwrap() {
            for (f, nr) in abi.vdso_syscalls() {
                let op = f.futex_op().map_or(0, |op| op.value | 1);
                assert_eq!(run_op(p, abi.audit_arch(), *nr as u32, op), own::RET_TRACE | TRACE_DATA, "{abi:?} {nr}");
            }
            assert_eq!(run(p, abi.audit_arch(), abi.seccomp_syscall() as u32), RET_ALLOW, "{abi:?} seccomp(2)");
        }
        assert!(super::program(false).unwrap().wants_listener());
    }

    /// Gaps in the ids are calls withdrawn before they were received; an
    /// id received again (or late) is no gap.
    #[test]
    fn skipped_notification_ids_are_withdrawn_calls() {
        let mut ids = Ids::default();
        let got: Vec<u64> = [7, 8, 9, 12, 13, 13, 20, 15].iter().map(|id| ids.next(*id)).collect();
        assert_eq!(got, [0, 0, 0, 2, 0, 0, 6, 0]);
    }

    #[test]
    fn notifications_decode_to_calls() {
        let n = |arch: u32, nr: i32, ip: u64, arg0: u64| Notification {
            id: 1,
            tid: 1,
            nr,
            arch,
            ip,
            args: [arg0, 0, 0, 0, 0, 0],
        };
        let decode = |n: &Notification| super::decode(n, &|| false);
        let x64 = Abi::X86_64.audit_arch();
        assert_eq!(
            decode(&n(x64, 228, 0x401000, 1)),
            Some(Call::Syscall { abi: Abi::X86_64, func: VdsoFn::ClockGettime, clock: Clock::Id(1) })
        );
        // A thread's CPU clock (-2: this thread's sched clock) is its class;
        // type 7 (-1) is no clock.
        assert_eq!(
            decode(&n(x64, 228, 0x401000, 0xffff_fffe)),
            Some(Call::Syscall { abi: Abi::X86_64, func: VdsoFn::ClockGettime, clock: Clock::Id(-2) })
        );
        assert_eq!(
            decode(&n(x64, 228, 0x401000, 0xffff_ffff)),
            Some(Call::Syscall { abi: Abi::X86_64, func: VdsoFn::ClockGettime, clock: Clock::Other })
        );
        assert_eq!(
            decode(&n(Abi::I386.audit_arch(), 403, 0xf7f0_0000, 4)),
            Some(Call::Syscall { abi: Abi::I386, func: VdsoFn::ClockGettime64, clock: Clock::Id(4) })
        );
        assert_eq!(decode(&n(x64, 201, arch::vsyscall::TIME, 0)), Some(Call::Vsyscall(VdsoFn::Time)));
        assert_eq!(
            decode(&n(x64, 0x4000_0000 | 96, 0x401000, 0)),
            Some(Call::Syscall { abi: Abi::X86_64, func: VdsoFn::Gettimeofday, clock: Clock::None })
        );
        assert_eq!(decode(&n(x64, 1, 0x401000, 0)), None);
        // futex: a robust unlock's fallback by its op, list64 or list32.
        let futex = |arch: u32, nr: i32, op: u64| {
            let n = Notification { id: 1, tid: 1, nr, arch, ip: 0x401000, args: [0x1000, op, 0, 0, 0, 0] };
            super::decode(&n, &|| false)
        };
        let robust = |abi: Abi, func: VdsoFn| Some(Call::Syscall { abi, func, clock: Clock::None });
        assert_eq!(futex(x64, 202, 512 | 128 | 1), robust(Abi::X86_64, VdsoFn::FutexRobustList64TryUnlock));
        assert_eq!(futex(x64, 202, 1024 | 512 | 7), robust(Abi::X86_64, VdsoFn::FutexRobustList32TryUnlock));
        assert_eq!(futex(x64, 202, 129), None, "FUTEX_WAKE_PRIVATE");
        assert_eq!(futex(Abi::I386.audit_arch(), 240, 1536 | 1), robust(Abi::I386, VdsoFn::FutexRobustList32TryUnlock));
    }

    /// getrandom: each kind from its arguments and origin; only a native
    /// call asks whether it was made in the vDSO (i386's has no getrandom).
    #[test]
    fn getrandom_notifications_decode_to_their_kind() {
        let call = |arch: Abi, nr: i32, len: u64, flags: u64, in_vdso: bool| {
            let n = Notification {
                id: 1,
                tid: 1,
                nr,
                arch: arch.audit_arch(),
                ip: 0x7000,
                args: [0x1000, len, flags, 0, 0, 0],
            };
            match super::decode(&n, &|| in_vdso) {
                Some(Call::Syscall { clock: Clock::Random(r), .. }) => r,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(call(Abi::X86_64, 318, 32, 0, true), RandomCall::ByVdso);
        assert_eq!(call(Abi::X86_64, 318, 16, 0, false), RandomCall::Served);
        assert_eq!(call(Abi::X86_64, 318, 16, 0x10, false), RandomCall::UnservedFlags);
        assert_eq!(call(Abi::X86_64, 318, 8, 1, false), RandomCall::StartupKey);
        assert_eq!(call(Abi::X86_64, 318, 9, 1, false), RandomCall::Served);
        assert_eq!(call(Abi::X86_64, 318, 16, 4, false), RandomCall::Served, "GRND_INSECURE is served");
        assert_eq!(call(Abi::I386, 355, 32, 0, true), RandomCall::Served, "no compat vDSO getrandom");
    }
}
