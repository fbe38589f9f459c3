//! The perf engine: counting clock syscalls and [vsyscall] emulations in the kernel, per
//! process and clock id, without stopping the target (perf_event_open(2) on
//! tracepoints; no ptrace).
//!
//! How each target is counted, and why (figures from scripts/bench-trace.sh
//! and the measurements quoted in the trace commit):
//! - A task of the host ABI: one counter per clock id on
//!   `syscalls:sys_enter_clock_gettime` (`which_clock == N`) plus one
//!   filtered on none of them ("other" clock ids); one counter each
//!   for the clock-less calls. Exact, and cheaper per call than a sampled
//!   record (~30 ns per counter vs ~800 ns per record on the test VM).
//! - A compat (32-bit) task: the per-syscall tracepoints never fire for it,
//!   so `raw_syscalls:sys_enter` filtered on the compat numbers. That
//!   tracepoint refuses filters on `args[]`, so the split comes from sampled
//!   records (args[0]) in a bounded ring buffer. Compat numbers collide with
//!   host syscalls (i386 `time` is x86_64 `rt_sigaction`), so every record
//!   carries its task's ABI (PERF_SAMPLE_REGS_USER) and host-ABI records are
//!   dropped; the samplers' own count says how many records were lost.
//!   These samplers go on every traced task (a 64-bit shell may exec a
//!   32-bit program), unless `--native-only`.
//! - `-a`: per-CPU samplers on `raw_syscalls:sys_enter` for the union of both
//!   ABIs' numbers, each record decoded with its process's ABI.
//! - `vsyscall:emulate_vsyscall` (x86_64): calls into the legacy page fire no
//!   syscall tracepoint at all.

use crate::arch::{self, Abi, FnKind, VdsoFn};
use crate::error::{Error, Facility, Hint, Result};
use crate::inspect::Process;
use crate::measure::kernel::perf::{
    self, CounterSpec, PerfEvent, Reading, Scope, SAMPLE_RAW, SAMPLE_REGS_USER, SAMPLE_TID,
};

/// What every sampler records: the task, the tracepoint's record, and the
/// ABI of the task's user registers (which syscall table the number is from).
const SAMPLES: u64 = SAMPLE_TID | SAMPLE_RAW | SAMPLE_REGS_USER;
use super::super::{Clock, Key, RandomCall, Tally, GRND_NONBLOCK, GRND_SERVED, STARTUP_KEY_MAX};
use crate::measure::kernel::ring::{self, Record, Ring};
use crate::measure::kernel::tracefs::Tracefs;
use std::collections::{BTreeMap, HashMap};

/// Tracepoint ids and record layouts, read once from tracefs.
#[derive(Debug, Clone)]
pub struct Events {
    /// `syscalls:sys_enter_<fn>` for the host ABI's clock syscalls.
    per_syscall: Vec<(VdsoFn, u64)>,
    raw_enter: u64,
    raw_id: (usize, usize),
    raw_arg0: usize,
    /// `vsyscall:emulate_vsyscall` and its `nr` field (offset, size).
    vsyscall: Option<(u64, (usize, usize))>,
    /// `syscalls:sys_enter_getrandom`'s size field: `len` since the
    /// random.c rewrite (5.18), `count` before.
    random_len: &'static str,
    host: Abi,
}

impl Events {
    /// Look every tracepoint up; a missing syscall tracepoint is exit 4.
    pub fn load(tracefs: &Tracefs) -> Result<Events> {
        // The kernel's ABI numbers the tracepoints, whatever vdsoctl was built for.
        let host = crate::inspect::kernel::abi().ok_or(Error::Facility {
            errno: None,
            what: Facility::UnknownSyscallNumbers { machine: crate::inspect::kernel::machine() },
            hint: Hint::UnsupportedArch,
        })?;
        let mut per_syscall = Vec::new();
        for (f, _) in host.vdso_syscalls() {
            per_syscall.push((*f, tracefs.event_id("syscalls", &format!("sys_enter_{}", f.syscall_name()))?));
        }
        let raw_enter = tracefs.event_id("raw_syscalls", "sys_enter")?;
        let format = tracefs.event_format("raw_syscalls", "sys_enter")?;
        let bad = |f: &str| Error::malformed("raw_syscalls:sys_enter format", format!("no `{f}` field"));
        let id = format.field("id").ok_or_else(|| bad("id"))?;
        let args = format.field("args").ok_or_else(|| bad("args"))?;
        let vsyscall = if host.syscall_entry().is_some_and(|e| e.vsyscall) {
            match (
                tracefs.event_id("vsyscall", "emulate_vsyscall"),
                tracefs.event_format("vsyscall", "emulate_vsyscall"),
            ) {
                (Ok(id), Ok(fmt)) => fmt.field("nr").map(|nr| (id, (nr.offset, nr.size))),
                _ => None,
            }
        } else {
            None
        };
        let random_len = match tracefs.event_format("syscalls", "sys_enter_getrandom") {
            Ok(f) if f.field("len").is_none() && f.field("count").is_some() => "count",
            _ => "len",
        };
        Ok(Events {
            per_syscall,
            raw_enter,
            raw_id: (id.offset, id.size),
            raw_arg0: args.offset,
            vsyscall,
            random_len,
            host,
        })
    }

    /// The running kernel's native ABI.
    pub fn host(&self) -> Abi {
        self.host
    }

    /// Decode a `raw_syscalls:sys_enter` record: syscall number and args[0].
    /// A compat task's args are still u64 slots here.
    /// A `raw_syscalls:sys_enter` record's number and first three
    /// arguments (`unsigned long args[6]`, one after the other).
    fn decode_raw(&self, raw: &[u8]) -> Option<(i64, [u64; 3])> {
        let nr = ring::uint_at(raw, self.raw_id.0, self.raw_id.1)? as i64;
        let arg = |i: usize| ring::u64_at(raw, self.raw_arg0 + 8 * i);
        Some((nr, [arg(0)?, arg(1).unwrap_or(0), arg(2).unwrap_or(0)]))
    }

    /// The vsyscall function of an `emulate_vsyscall` record.
    fn decode_vsyscall(&self, raw: &[u8]) -> Option<VdsoFn> {
        let (_, (off, size)) = self.vsyscall?;
        vsyscall_fn(ring::uint_at(raw, off, size)?)
    }

    fn is_vsyscall_record(&self, raw: &[u8]) -> bool {
        let common_type = ring::uint_at(raw, 0, 2);
        matches!(self.vsyscall, Some((id, _)) if common_type == Some(id))
    }
}

/// `syscalls:sys_enter_getrandom` filters, one per kind [`RandomCall::of_args`]
/// decides without an instruction pointer, on `flags` and the size field
/// `len` names (`len`, `count` before 5.18). Together they cover every
/// call once.
pub(in crate::measure::trace) fn random_filters(len: &str) -> [(RandomCall, String); 3] {
    let (nonblock, served, key) = (GRND_NONBLOCK, GRND_SERVED, STARTUP_KEY_MAX);
    [
        (RandomCall::UnservedFlags, format!("flags > {served}")),
        (RandomCall::StartupKey, format!("flags == {nonblock} && {len} <= {key}")),
        (
            RandomCall::Served,
            format!("(flags <= {served} && flags != {nonblock}) || (flags == {nonblock} && {len} > {key})"),
        ),
    ]
}

/// `nr` of `vsyscall:emulate_vsyscall` (the slot: 0, 1, 2).
/// A `syscalls:sys_enter_futex` filter on the `op` field: the bits of
/// `op.value` set, the rest of `op.mask` clear (`op & 512 && !(op & 1024)`).
fn futex_filter(op: arch::FutexOp) -> String {
    (0..32)
        .map(|b| 1u32 << b)
        .filter(|bit| op.mask & bit != 0)
        .map(|bit| if op.value & bit != 0 { format!("op & {bit}") } else { format!("!(op & {bit})") })
        .collect::<Vec<_>>()
        .join(" && ")
}

fn vsyscall_fn(nr: u64) -> Option<VdsoFn> {
    arch::vsyscall::SLOTS.get(usize::try_from(nr).ok()?).copied()
}

/// The clock ids that get a counter of their own.
fn named_clocks() -> impl Iterator<Item = i64> {
    arch::CLOCKS.iter().map(|c| i64::from(c.id))
}

/// What one event contributes to the tally.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Calls of `func` with this clock (or without a clock).
    Count(VdsoFn, Clock),
    /// Compat sampler of a traced tree: its count is every record it took
    /// (any ABI); records decoded as compat give the split.
    Compat,
    /// [vsyscall] emulations of a function.
    Vsyscall(VdsoFn),
}

#[derive(Debug)]
struct Event {
    pid: i32,
    slot: Slot,
    fd: PerfEvent,
}

/// Where a ring's records are attributed.
#[derive(Debug)]
struct Source {
    ring: Ring,
    /// `true`: compat samplers of traced trees (rows go to the traced process
    /// a record descends from; host-ABI records are left to the counters);
    /// `false` (`-a`): every record, by its own pid.
    tree: bool,
}

/// An armed set of counters and samplers.
#[derive(Debug)]
pub struct Tracer {
    events: Events,
    counters: Vec<Event>,
    sources: Vec<Source>,
    sampled: BTreeMap<Key, u64>,
    sampled_vsyscall: BTreeMap<(i32, VdsoFn), u64>,
    lost: u64,
    /// `-a`: sys_enter records delivered (every one, ours or not), to tell
    /// how many the rings dropped without a PERF_RECORD_LOST yet.
    system_delivered: u64,
    abis: HashMap<i32, Abi>,
    comms: HashMap<i32, Option<String>>,
    own_pid: i32,
    /// Traced processes with compat samplers: their records share one ring per CPU.
    compat_roots: Vec<i32>,
    /// Compat records of traced trees, by the pid that made them; credited
    /// to the traced ancestor at snapshot time, once every FORK is in.
    tree_sampled: BTreeMap<Key, u64>,
    /// Host-ABI records the compat samplers of a tree took (colliding
    /// numbers: x86_64 `rt_sigaction` is i386 `time`), by pid.
    host_records: BTreeMap<i32, u64>,
    /// Parent of each process forked in a traced tree (PERF_RECORD_FORK).
    parents: HashMap<i32, i32>,
    cpus: Vec<u32>,
    /// Arm compat samplers on traced trees (off: `--native-only`).
    compat: bool,
    /// One counter per clock id (off: `--no-split`, one per syscall).
    split: bool,
}

/// How a process gets its counters.
#[derive(Debug, Clone, Copy)]
pub struct Attach {
    /// Follow new threads and children (always on for `trace`).
    pub inherit: bool,
    /// Arm now, count from the next exec (`trace -- CMD`).
    pub enable_on_exec: bool,
    /// Open disabled; `Tracer::enable` starts every counter at once, so a
    /// many-threaded target is not counted thread by thread as they open.
    pub start_disabled: bool,
}

impl Tracer {
    /// An empty tracer.
    pub fn new(events: Events) -> Tracer {
        Tracer {
            events,
            counters: Vec::new(),
            sources: Vec::new(),
            sampled: BTreeMap::new(),
            sampled_vsyscall: BTreeMap::new(),
            lost: 0,
            system_delivered: 0,
            abis: HashMap::new(),
            comms: HashMap::new(),
            own_pid: std::process::id() as i32,
            compat_roots: Vec::new(),
            tree_sampled: BTreeMap::new(),
            host_records: BTreeMap::new(),
            parents: HashMap::new(),
            cpus: Vec::new(),
            compat: true,
            split: true,
        }
    }

    /// One counter per clock syscall instead of one per clock id: each
    /// counter a hit evaluates costs ~28 ns here, so this is the cheapest
    /// exact total, at the price of not knowing which clock ids.
    pub fn no_split(&mut self) {
        self.split = false;
    }

    /// Skip the compat samplers on traced trees: cheaper (the
    /// `raw_syscalls:sys_enter` tracepoint costs ~190 ns per syscall of the
    /// tree here) when no 32-bit program will run in it.
    pub fn native_only(&mut self) {
        self.compat = false;
    }

    /// Whether 32-bit (compat) calls of traced trees are counted.
    pub fn traces_compat(&self) -> bool {
        self.compat && self.events.host.compat().is_some()
    }

    /// Arm counters on every thread of `pid` (which has `abi`), re-reading
    /// /proc/PID/task until no thread appeared meanwhile (threads created
    /// after a counter exists on their creator inherit it). Threads that exit
    /// meanwhile are skipped; the process itself vanishing is an error.
    pub fn attach_process(&mut self, process: &Process, abi: Abi, how: Attach) -> Result<()> {
        let pid = process.pid();
        self.abis.insert(pid, abi);
        let mut done: Vec<i32> = Vec::new();
        for _ in 0..8 {
            let tids = match process.tasks() {
                Ok(t) => t,
                Err(e) if done.is_empty() => return Err(e),
                Err(_) => break,
            };
            let new: Vec<i32> = tids.into_iter().filter(|t| !done.contains(t)).collect();
            if new.is_empty() {
                break;
            }
            for tid in new {
                match self.attach_task(pid, tid, abi, how) {
                    Ok(()) => {}
                    Err(Error::NoSuchProcess { .. }) if tid != pid => {}
                    Err(Error::NoSuchProcess { .. }) => return Err(Error::NoSuchProcess { pid }),
                    Err(e) => return Err(e),
                }
                done.push(tid);
            }
        }
        Ok(())
    }

    /// Arm counters on one task (`tid`) of process `pid`: the host ABI's
    /// per-syscall counters (they never fire for a compat task, so they cost
    /// it nothing) and, unless native-only, compat samplers — a 64-bit
    /// process may exec a 32-bit child and the other way round, and each
    /// record says which ABI made it.
    pub fn attach_task(&mut self, pid: i32, tid: i32, abi: Abi, how: Attach) -> Result<()> {
        self.abis.insert(pid, abi);
        let scope = Scope::Thread(tid);
        let spec = |id: u64, filter: Option<String>| CounterSpec {
            tracepoint_id: id,
            filter,
            inherit: how.inherit,
            enable_on_exec: how.enable_on_exec,
            start_disabled: how.start_disabled,
            ..Default::default()
        };
        let mut opened: Vec<Event> = Vec::new();
        for (f, id) in self.events.per_syscall.clone() {
            if f.takes_clock() && !self.split {
                opened.push(self.counter(pid, Slot::Count(f, Clock::Any), &spec(id, None), scope)?);
            } else if f.takes_clock() {
                // Every clock id without a counter of its own, as a filtered
                // counter too: each counter is exact over its own window, so
                // no remainder of "total − named" leaks into `other` while
                // the counters are being attached to a running task.
                let other: Vec<String> = named_clocks().map(|c| format!("which_clock != {c}")).collect();
                opened.push(self.counter(
                    pid,
                    Slot::Count(f, Clock::Other),
                    &spec(id, Some(other.join(" && "))),
                    scope,
                )?);
                for c in named_clocks() {
                    let filter = Some(format!("which_clock == {c}"));
                    opened.push(self.counter(pid, Slot::Count(f, Clock::Id(c)), &spec(id, filter), scope)?);
                }
            } else if let Some(op) = f.futex_op() {
                // sys_enter_futex, only the calls whose op makes them this
                // robust unlock's fallback.
                let filter = Some(futex_filter(op));
                opened.push(self.counter(pid, Slot::Count(f, Clock::None), &spec(id, filter), scope)?);
            } else if f.kind() == FnKind::Random {
                // One filtered counter per kind the arguments decide (the
                // perf engine sees no instruction pointer: no `by_vdso`).
                for (call, filter) in random_filters(self.events.random_len) {
                    let filter = Some(filter);
                    opened.push(self.counter(pid, Slot::Count(f, Clock::Random(call)), &spec(id, filter), scope)?);
                }
            } else {
                opened.push(self.counter(pid, Slot::Count(f, Clock::None), &spec(id, None), scope)?);
            }
        }
        if let Some((id, _)) = self.events.vsyscall {
            for (nr, f) in (0..3).filter_map(|nr| Some((nr, vsyscall_fn(nr)?))) {
                let filter = Some(format!("nr == {nr}"));
                opened.push(self.counter(pid, Slot::Vsyscall(f), &spec(id, filter), scope)?);
            }
        }
        let compat = self.events.host.compat().filter(|_| self.compat || abi != self.events.host);
        if let Some(compat) = compat {
            let nrs: Vec<String> = compat.vdso_numbers().iter().map(|nr| format!("id == {nr}")).collect();
            let s = CounterSpec { track_tasks: true, ..spec(self.events.raw_enter, Some(nrs.join(" || "))) };
            self.attach_compat(pid, tid, &s, &mut opened)?;
        }
        self.counters.extend(opened);
        Ok(())
    }

    /// A compat (32-bit) task's samplers on `raw_syscalls:sys_enter`
    /// (`s`, filtered on the compat numbers): the kernel refuses to mmap an
    /// inherited event that is not bound to a CPU, so one sampler per task
    /// and CPU, one ring per CPU.
    fn attach_compat(&mut self, pid: i32, tid: i32, s: &CounterSpec, opened: &mut Vec<Event>) -> Result<()> {
        if self.cpus.is_empty() {
            self.cpus = crate::inspect::kernel::online_cpus()?;
        }
        if !self.compat_roots.contains(&pid) {
            self.compat_roots.push(pid);
        }
        let pages = ring::pages_per_buffer(self.cpus.len());
        let fresh = self.sources.is_empty();
        for (i, cpu) in self.cpus.clone().into_iter().enumerate() {
            let fd = perf::open_sampler(s, Scope::ThreadOnCpu(tid, cpu), SAMPLES, Ring::watermark(pages))?;
            match self.sources.get(i) {
                Some(src) => perf::set_output(&fd, src.ring.event())?,
                None if fresh => {
                    let dup = fd.try_clone().map_err(|e| Error::Facility {
                        errno: None,
                        what: Facility::PerfFdDup { source: e },
                        hint: Hint::FdLimit,
                    })?;
                    self.sources.push(Source { ring: Ring::new(dup, pages)?, tree: true });
                }
                None => {}
            }
            opened.push(Event { pid, slot: Slot::Compat, fd });
        }
        Ok(())
    }

    fn counter(&self, pid: i32, slot: Slot, spec: &CounterSpec, scope: Scope) -> Result<Event> {
        Ok(Event { pid, slot, fd: perf::open_event(spec, scope, 0, 0)? })
    }

    /// Arm per-CPU samplers for every process on the host (`-a`).
    pub fn attach_system(&mut self, cpus: &[u32]) -> Result<()> {
        let host = self.events.host;
        let mut nrs: Vec<i64> = host.vdso_syscalls().iter().map(|(_, n)| *n).collect();
        if let Some(compat) = host.compat() {
            nrs.extend(compat.vdso_syscalls().iter().map(|(_, n)| *n));
        }
        nrs.sort_unstable();
        nrs.dedup();
        let filter = nrs.iter().map(|n| format!("id == {n}")).collect::<Vec<_>>().join(" || ");
        let pages = ring::pages_per_buffer(cpus.len());
        for &cpu in cpus {
            let spec = CounterSpec {
                tracepoint_id: self.events.raw_enter,
                filter: Some(filter.clone()),
                track_comm: true,
                ..Default::default()
            };
            let fd = perf::open_sampler(&spec, Scope::Cpu(cpu), SAMPLES, Ring::watermark(pages))?;
            let ring = Ring::new(fd, pages)?;
            if let Some((id, _)) = self.events.vsyscall {
                let spec = CounterSpec { tracepoint_id: id, ..Default::default() };
                let vfd = perf::open_sampler(&spec, Scope::Cpu(cpu), SAMPLES, Ring::watermark(pages))?;
                perf::set_output(&vfd, ring.event())?;
                // Kept open (and counted nowhere else) by parking it as a counter.
                self.counters.push(Event { pid: -1, slot: Slot::Vsyscall(VdsoFn::Time), fd: vfd });
            }
            self.sources.push(Source { ring, tree: false });
        }
        Ok(())
    }

    /// Whether any ring buffers need draining.
    pub fn has_rings(&self) -> bool {
        !self.sources.is_empty()
    }

    /// Sleep until a ring needs draining or `timeout_ms` passes, then drain.
    pub fn wait_and_drain(&mut self, timeout_ms: i32) -> Result<()> {
        if self.sources.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(timeout_ms.max(0) as u64));
            return Ok(());
        }
        let rings: Vec<&Ring> = self.sources.iter().map(|s| &s.ring).collect();
        let fds: Vec<_> = rings.iter().map(|r| r.fd()).collect();
        crate::measure::sys::ring::poll_in(&fds, timeout_ms).map_err(|e| Error::Facility {
            errno: None,
            what: Facility::RingPoll { source: e },
            hint: Hint::Retry,
        })?;
        self.drain();
        Ok(())
    }

    /// Move every waiting record into the sampled tallies.
    pub fn drain(&mut self) {
        let mut sources = std::mem::take(&mut self.sources);
        for source in &mut sources {
            let tree = source.tree;
            source.ring.drain(|r| self.take(tree, r));
        }
        self.sources = sources;
    }

    /// The traced process a pid belongs to: itself, the only traced one,
    /// or the traced one its parent chain reaches (FORK records, else /proc
    /// while it still exists); itself when none is found.
    fn root_of(&self, pid: i32) -> i32 {
        match self.compat_roots.as_slice() {
            roots if roots.contains(&pid) => return pid,
            [only] => return *only,
            _ => {}
        }
        let mut at = pid;
        for _ in 0..64 {
            match self.parents.get(&at).copied().or_else(|| crate::inspect::process::parent_of(at)) {
                Some(parent) if self.compat_roots.contains(&parent) => return parent,
                Some(parent) if parent > 1 && parent != at => at = parent,
                _ => break,
            }
        }
        pid
    }

    fn take(&mut self, tree: bool, record: Record<'_>) {
        let (pid, raw, regs_abi) = match record {
            Record::Lost { count } => {
                self.lost += count;
                return;
            }
            Record::Fork { pid, ppid } => {
                if pid != ppid {
                    self.parents.insert(pid as i32, ppid as i32);
                }
                return;
            }
            Record::Comm { pid, comm } => {
                self.comms.insert(pid as i32, Some(crate::words::bytes_text(comm)));
                return;
            }
            Record::Sample { pid, raw, abi, .. } => (pid as i32, raw, abi),
        };
        let vsyscall = self.events.is_vsyscall_record(raw);
        if !tree && !vsyscall {
            self.system_delivered += 1;
        }
        if pid == self.own_pid {
            return;
        }
        if vsyscall {
            if let Some(f) = self.events.decode_vsyscall(raw) {
                *self.sampled_vsyscall.entry((pid, f)).or_default() += 1;
            }
            return;
        }
        let Some((nr, [arg0, arg1, arg2])) = self.events.decode_raw(raw) else { return };
        let host = self.events.host;
        // The ABI of this very record: a process's ABI changes at exec, and
        // a tree may hold both kinds.
        let abi = match regs_abi {
            Some(ring::REGS_ABI_32) => host.compat().unwrap_or(host),
            Some(ring::REGS_ABI_64) => host,
            _ if tree => host.compat().unwrap_or(host),
            _ => self.abi_of(pid),
        };
        if tree && abi == host {
            // A colliding host syscall (or a host clock syscall, which the
            // counters already have): not ours to count here.
            *self.host_records.entry(pid).or_default() += 1;
            return;
        }
        if !tree {
            self.note_process(pid);
            self.abis.insert(pid, abi);
        }
        let Some(func) = abi.vdso_call(nr, arg1) else {
            // A futex call that is no robust unlock (the samplers filter on
            // the number only): delivered, and not ours to count.
            if tree {
                *self.host_records.entry(pid).or_default() += 1;
            }
            return;
        };
        let clock = match func.kind() {
            FnKind::Clock if func.takes_clock() => {
                // A 32-bit task's clockid_t is an int in the low half of the slot.
                let id = if abi == host { arg0 as i64 } else { i64::from(arg0 as u32 as i32) };
                Clock::of_id(id)
            }
            FnKind::Clock | FnKind::Cpu | FnKind::Futex => Clock::None,
            // A record has no user instruction pointer: the vDSO's own
            // calls count as served (doc/DESIGN.md, "getrandom").
            FnKind::Random => Clock::Random(RandomCall::of_args(arg1, arg2, false)),
        };
        let key = Key { pid, tid: None, abi, func, clock, comm: None, start: 0 };
        *if tree { &mut self.tree_sampled } else { &mut self.sampled }.entry(key).or_default() += 1;
    }

    /// Look a process's comm up the first time one of its records is seen.
    fn note_process(&mut self, pid: i32) {
        self.comms.entry(pid).or_insert_with(|| Process::open(Some(pid)).ok().map(|p| p.comm().to_string()));
    }

    /// A process's ABI from its executable (the host's when unknown), and
    /// its comm, looked up the first time one of its records is seen.
    fn abi_of(&mut self, pid: i32) -> Abi {
        if let Some(abi) = self.abis.get(&pid) {
            return *abi;
        }
        let process = Process::open(Some(pid)).ok();
        let abi = process
            .as_ref()
            .and_then(|p| p.exe_header())
            .and_then(|h| Abi::from_elf(h.is_64, h.machine))
            .unwrap_or(self.events.host);
        self.abis.insert(pid, abi);
        self.comms.entry(pid).or_insert_with(|| process.map(|p| p.comm().to_string()));
        abi
    }

    /// Remember (or update) a process's comm for the report.
    pub fn set_comm(&mut self, pid: i32, comm: Option<String>) {
        self.comms.insert(pid, comm);
    }

    /// The processes seen so far: those attached, and those whose records
    /// were decoded (their ABI known).
    pub fn pids(&self) -> Vec<i32> {
        self.abis.keys().copied().collect()
    }

    /// The comm seen for `pid`, if any.
    pub fn comm(&self, pid: i32) -> Option<&str> {
        self.comms.get(&pid).and_then(|c| c.as_deref())
    }

    /// Start every counter opened disabled, back to back.
    pub fn enable(&self) -> Result<()> {
        let fail = |e: std::io::Error| Error::Facility {
            errno: None,
            what: Facility::PerfEnable { source: e },
            hint: Hint::Retry,
        };
        for e in &self.counters {
            crate::measure::sys::perf::enable(&e.fd).map_err(fail)?;
        }
        for s in &self.sources {
            crate::measure::sys::perf::enable(s.ring.event()).map_err(fail)?;
        }
        Ok(())
    }

    /// Stop every counter (the final snapshot then sees no more events).
    pub fn disable(&self) {
        for e in &self.counters {
            let _ = crate::measure::sys::perf::disable(&e.fd);
        }
        for s in &self.sources {
            let _ = crate::measure::sys::perf::disable(s.ring.event());
        }
    }

    /// Read every counter and combine it with the sampled records.
    pub fn snapshot(&mut self) -> Result<Tally> {
        let mut t = Tally::default();
        let mut sampler_counts: BTreeMap<i32, u64> = BTreeMap::new();
        for e in &self.counters {
            if e.pid < 0 {
                continue;
            }
            let r: Reading = perf::read(&e.fd)?;
            match e.slot {
                Slot::Count(f, clock) => {
                    *t.counts
                        .entry(Key {
                            pid: e.pid,
                            tid: None,
                            abi: self.events.host,
                            func: f,
                            clock,
                            comm: None,
                            start: 0,
                        })
                        .or_default() += r.value
                }
                // Bound to one CPU each, these run only while the task is on
                // that CPU: running < enabled there is not multiplexing.
                Slot::Compat => {
                    *sampler_counts.entry(e.pid).or_default() += r.value;
                    continue;
                }
                Slot::Vsyscall(f) => *t.vsyscall.entry((e.pid, f)).or_default() += r.value,
            }
            t.scaled |= r.scaled();
        }
        // A full ring reports its losses only when it has room again, so
        // the samplers' own counts, read before the drain, bound what was
        // delivered.
        let mut system_hits = 0u64;
        for src in self.sources.iter().filter(|s| !s.tree) {
            system_hits += perf::read(src.ring.event())?.value;
        }
        self.drain();
        for (k, v) in &self.sampled {
            *t.counts.entry(*k).or_default() += *v;
        }
        // Traced trees: every record to the traced process it descends from.
        let mut delivered: BTreeMap<i32, u64> = BTreeMap::new();
        for (k, v) in &self.tree_sampled {
            let root = self.root_of(k.pid);
            *t.counts.entry(Key { pid: root, ..*k }).or_default() += *v;
            *delivered.entry(root).or_default() += *v;
        }
        for (pid, v) in &self.host_records {
            *delivered.entry(self.root_of(*pid)).or_default() += *v;
        }
        // Compat calls whose record was lost: what the samplers counted minus
        // every record they delivered (compat or host).
        for (root, counted) in sampler_counts {
            let missing = counted.saturating_sub(delivered.get(&root).copied().unwrap_or(0));
            if missing > 0 {
                t.unrecorded.insert(root, missing);
            }
        }
        // System-wide: vsyscall emulations come from records too.
        if self.sources.iter().any(|s| !s.tree) {
            for (k, v) in &self.sampled_vsyscall {
                t.vsyscall.insert(*k, *v);
            }
        }
        let undelivered = system_hits.saturating_sub(self.system_delivered);
        t.lost_records = self.lost.max(undelivered);
        Ok(t)
    }
}
