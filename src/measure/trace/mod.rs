//! What a trace counts, whatever engine counts it: clocks and random calls
//! as keys (`Clock`, `RandomCall`, `Key`), a process's name (`Comm`), and
//! the counts an engine hands back (`Tally`). The engines are in
//! `engines/` (bpf, perf, seccomp), chosen in `engine.rs`; `session.rs`
//! runs a trace to its end.

pub mod engine;
pub mod engines;
pub mod own;
pub mod reach;
pub mod session;
pub mod sight;
pub mod sites;

use crate::arch::{self, Abi, VdsoFn};
use std::collections::BTreeMap;

/// What a count is for beyond its function: the clock id of a clock
/// call, or what decides a getrandom call's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Clock {
    /// The syscall takes no clock id (gettimeofday, time, getcpu).
    None,
    /// A getrandom call, by what its origin and arguments say.
    Random(RandomCall),
    /// A clock id.
    Id(i64),
    /// Clock ids without a counter of their own (CPU clocks of other
    /// threads, fd clocks, invalid ids): a counter filtered on none of the named ones.
    Other,
    /// Every clock id together: `--no-split` counts one total per syscall.
    Any,
}

/// A getrandom syscall as the engines see it at its entry: whether the
/// vDSO made it itself, and whether its flags and size are ones the vDSO
/// serves. Four kinds, so a process cannot make rows without bound; each
/// engine decides the same way (doc/DESIGN.md, "getrandom").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RandomCall {
    /// The syscall instruction lies in the process's `[vdso]`: the vDSO's
    /// own call — its key refill (32 bytes into its `MAP_DROPPABLE` state,
    /// once per thread and reseed) or its fallback (RNG not ready yet).
    ByVdso,
    /// Flags beyond `GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE`: the
    /// vDSO hands those to the kernel.
    UnservedFlags,
    /// At most 8 bytes with `GRND_NONBLOCK` alone, from outside the vDSO:
    /// a C library's start-up key (glibc's malloc tcache key, once a
    /// process, is a direct syscall even in glibc 2.41).
    StartupKey,
    /// Any other: the vDSO would have served it.
    Served,
}

impl RandomCall {
    /// Every kind, in the order of their codes.
    pub const ALL: [RandomCall; 4] =
        [RandomCall::ByVdso, RandomCall::UnservedFlags, RandomCall::StartupKey, RandomCall::Served];

    /// The code the engines store (the BPF key's clock word).
    pub const fn code(self) -> u32 {
        match self {
            RandomCall::ByVdso => 0,
            RandomCall::UnservedFlags => 1,
            RandomCall::StartupKey => 2,
            RandomCall::Served => 3,
        }
    }

    /// The kind of a stored code (an unknown code: served).
    pub fn of_code(code: u64) -> RandomCall {
        RandomCall::ALL.into_iter().find(|r| u64::from(r.code()) == code).unwrap_or(RandomCall::Served)
    }

    /// A call's kind from its arguments, for an engine that sees them in
    /// user space (seccomp): `from_vdso` whether the syscall instruction
    /// lies in the caller's `[vdso]`.
    pub fn of_args(len: u64, flags: u64, from_vdso: bool) -> RandomCall {
        let flags = flags as u32;
        if from_vdso {
            RandomCall::ByVdso
        } else if flags & !GRND_SERVED != 0 {
            RandomCall::UnservedFlags
        } else if flags == GRND_NONBLOCK && len <= STARTUP_KEY_MAX {
            RandomCall::StartupKey
        } else {
            RandomCall::Served
        }
    }

    /// Its name in tables and labels (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            RandomCall::ByVdso => "by_vdso",
            RandomCall::UnservedFlags => "unserved_flags",
            RandomCall::StartupKey => "startup_key",
            RandomCall::Served => "served",
        }
    }
}

/// `GRND_NONBLOCK` (`include/uapi/linux/random.h`).
pub const GRND_NONBLOCK: u32 = 0x1;
/// The flags the vDSO's getrandom serves (`lib/vdso/getrandom.c`):
/// `GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE`.
pub const GRND_SERVED: u32 = 0x7;
/// The largest start-up key: a pointer-sized word.
pub const STARTUP_KEY_MAX: u64 = 8;

/// Static clock ids: the kernel's `MAX_CLOCKS` (16) and its auxiliary
/// clocks (16–23): every id it can name is below this.
pub const STATIC_CLOCKS: i64 = arch::CLOCK_AUX + arch::AUX_CLOCKS;

impl Clock {
    /// The row a call with clock id `id` counts in: a static id as itself,
    /// a dynamic one (a thread's or process's CPU clock, an fd clock) as
    /// its class ([`arch::dynamic_class`]), any other (invalid ids) as
    /// `Other`, so a process cannot make rows without bound by cycling
    /// through ids. Every engine folds this way (issue 19); the perf
    /// engine's 64-bit counters have no class filter and count dynamic ids
    /// as `Other`.
    pub fn of_id(id: i64) -> Clock {
        if (0..STATIC_CLOCKS).contains(&id) {
            Clock::Id(id)
        } else if let Some(class) = arch::dynamic_class(id) {
            Clock::Id(class)
        } else {
            Clock::Other
        }
    }
}

/// A process name as the kernel keeps it (`comm`, at most 15 bytes).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Comm([u8; 16]);

impl Comm {
    /// From the kernel's bytes (NUL-padded; at most 16 are kept).
    pub fn from_bytes(bytes: &[u8]) -> Comm {
        let mut c = [0u8; 16];
        let n = bytes.iter().take(15).position(|&b| b == 0).unwrap_or(bytes.len().min(15));
        c[..n].copy_from_slice(&bytes[..n]);
        Comm(c)
    }
}

impl std::fmt::Display for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // As /proc's comm is read (`inspect::process::comm_of`): bytes that
        // are not UTF-8 as `\xNN`, so every engine names a process alike.
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        f.write_str(&crate::words::bytes_text(&self.0[..end]))
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

/// One row of the count table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub pid: i32,
    /// The thread, when rows are per thread (`--per-thread`).
    pub tid: Option<i32>,
    /// The ABI the calls were made with (a traced tree may hold both).
    pub abi: Abi,
    pub func: VdsoFn,
    pub clock: Clock,
    /// The process's name when it made the calls (an exec changes it);
    /// `None` when the engine does not record it per call (the BPF engine
    /// keeps one name per process, in [`Tally::comms`], so renames and execs
    /// never split a process's rows).
    pub comm: Option<Comm>,
    /// When the process started (the kernel's `start_boottime` of its group
    /// leader, ns since boot), or 0 when the engine does not know it. Two
    /// processes that held the same pid in turn differ here, so their calls
    /// are never merged; an engine that sets it to 0 must not outlive a pid.
    pub start: u64,
}

pub use crate::measure::trace::sites::Site;

/// What a process ran at its last exec, as the engine caught it there
/// (BPF: `sched_process_exec`): the path exec was given (`None` unless
/// absolute) and the arguments (cut at 1 KiB: `truncated`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exec {
    pub exe: Option<String>,
    pub argv: Vec<String>,
    pub truncated: bool,
}

/// Counts at one moment. Subtract two for an interval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub counts: BTreeMap<Key, u64>,
    /// [vsyscall] emulations per (pid, function).
    pub vsyscall: BTreeMap<(i32, VdsoFn), u64>,
    /// Sampled records the kernel dropped (ring buffer full).
    pub lost_records: u64,
    /// A counter ran for less time than it was enabled (multiplexed).
    pub scaled: bool,
    /// Per process: calls counted in its total whose split by function and
    /// clock was lost (perf: the sampled record was dropped; BPF: the detail
    /// map was full), so its rows are short by this much and no more.
    pub unrecorded: BTreeMap<i32, u64>,
    /// New processes of a traced tree the engine could not follow (its
    /// traced set was full).
    pub unfollowed: u64,
    /// Seccomp engine: clock syscalls a signal withdrew while they waited
    /// for vdsoctl, uncounted (the gaps in the notification ids). Each
    /// failed EINTR where the handler lacks SA_RESTART (else it ran again
    /// and was counted then), or its task was killed.
    pub withdrawn: u64,
    /// Seccomp engine, traced: ptrace(2) requests of the tree that take a
    /// task as their tracer (TRACEME, ATTACH, SEIZE): one vdsoctl traces
    /// refuses them (EPERM), where alone it would not.
    pub ptrace_requests: u64,
    /// `--sites`: calls counted in their row whose site row found no room.
    pub sites_lost: u64,
    /// BPF engine: runs of its counting programs the kernel skipped
    /// (`bpf_prog_info.recursion_misses`: another run of the same program
    /// was under way on that CPU, preempted, as on a preemptible 7.x
    /// kernel). Each may have been a traced clock syscall: the counts are
    /// short by at most this many.
    pub skipped_runs: u64,
    /// Parent of each process the engine saw fork.
    pub parents: BTreeMap<i32, i32>,
    /// A name for pids whose rows carry none (`Key::comm` is `None`): the
    /// BPF engine keeps one per process (the last it saw), so renames and
    /// execs never split a process's rows or series. An engine should do
    /// the same: one name per process here, `Key::comm` left `None`.
    pub comms: BTreeMap<i32, String>,
    /// Each process's cgroup v2 path (/proc/PID/cgroup's `0::` line), read
    /// while it lived.
    pub cgroups: BTreeMap<i32, String>,
    /// `--sites`: each row's calls split by call site (the rows' counts
    /// stay in `counts`).
    pub sites: BTreeMap<(Key, Site), u64>,
    /// `--sites`: each site's addresses named while their process lived,
    /// by (pid, process start, address).
    pub frames: BTreeMap<(i32, u64, u64), crate::inspect::symbols::Frame>,
    /// `--sites` (BPF engine): each site address's mapping, captured in the
    /// kernel at the site's first call (named after its process is gone).
    pub mapped: crate::measure::trace::sites::Mapped,
    /// `--stacks` (BPF engine): calls per process and user stack.
    pub stacks: BTreeMap<StackKey, u64>,
    /// `--stacks`: counted calls whose stack was not kept (the stack map
    /// full, or two stacks with one hash).
    pub stacks_lost: u64,
    /// `--sites`: processes, by (pid, start), whose mappings vdsoctl was
    /// refused (not dumpable: setuid, setcap, PR_SET_DUMPABLE), so their
    /// sites stay addresses.
    pub maps_refused: std::collections::BTreeSet<(i32, u64)>,
    /// Calls of vdsoctl's own processes (by pid and start, as
    /// `Key::start`), moved out of every other field by
    /// [`own::Own::strip`]: system-wide traces leave them out.
    pub own: BTreeMap<(i32, u64), u64>,
    /// What each process ran at its last exec, by (pid, start), where the
    /// engine catches execs (BPF).
    pub execs: BTreeMap<(i32, u64), Exec>,
}

/// A process and one user stack it made calls from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StackKey {
    pub pid: i32,
    /// As [`Key::start`].
    pub start: u64,
    /// Return addresses, innermost (the syscall's) first.
    pub frames: Vec<u64>,
    /// The walk filled every slot: the stack may be cut at the depth limit.
    pub full: bool,
    /// The word at the user stack pointer at the stack's first call: a
    /// leaf wrapper's caller, which the walk skips, when it is code (0:
    /// not read).
    pub word: u64,
}

impl Tally {
    /// The processes counted, as (pid, start as `Key::start`; 0 for the
    /// `[vsyscall]` rows, which keep none), in row order (a pid may repeat).
    pub fn processes(&self) -> Vec<(i32, u64)> {
        let rows = self.counts.keys().map(|k| (k.pid, k.start));
        rows.chain(self.vsyscall.keys().map(|k| (k.0, 0))).collect()
    }

    /// The pids counted (a pid may repeat).
    pub fn pids(&self) -> Vec<i32> {
        self.processes().into_iter().map(|(pid, _)| pid).collect()
    }

    /// `self - earlier`, entry by entry (saturating).
    pub fn since(&self, earlier: &Tally) -> Tally {
        let sub = |now: u64, then: Option<&u64>| now.saturating_sub(then.copied().unwrap_or(0));
        Tally {
            counts: self.counts.iter().map(|(k, v)| (*k, sub(*v, earlier.counts.get(k)))).collect(),
            vsyscall: self.vsyscall.iter().map(|(k, v)| (*k, sub(*v, earlier.vsyscall.get(k)))).collect(),
            lost_records: self.lost_records.saturating_sub(earlier.lost_records),
            scaled: self.scaled,
            unrecorded: self.unrecorded.iter().map(|(k, v)| (*k, sub(*v, earlier.unrecorded.get(k)))).collect(),
            unfollowed: self.unfollowed.saturating_sub(earlier.unfollowed),
            withdrawn: self.withdrawn.saturating_sub(earlier.withdrawn),
            ptrace_requests: self.ptrace_requests.saturating_sub(earlier.ptrace_requests),
            sites_lost: self.sites_lost.saturating_sub(earlier.sites_lost),
            skipped_runs: self.skipped_runs.saturating_sub(earlier.skipped_runs),
            parents: self.parents.clone(),
            comms: self.comms.clone(),
            cgroups: self.cgroups.clone(),
            sites: self.sites.iter().map(|(k, v)| (*k, sub(*v, earlier.sites.get(k)))).collect(),
            frames: self.frames.clone(),
            mapped: self.mapped.clone(),
            stacks: self.stacks.iter().map(|(k, v)| (k.clone(), sub(*v, earlier.stacks.get(k)))).collect(),
            stacks_lost: self.stacks_lost.saturating_sub(earlier.stacks_lost),
            maps_refused: self.maps_refused.clone(),
            own: self.own.iter().map(|(k, v)| (*k, sub(*v, earlier.own.get(k)))).collect(),
            execs: self.execs.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
