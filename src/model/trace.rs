//! The `trace` report: counts per process, syscall and clock, judged once
//! (which calls the vDSO should have served: typed facts, [`TraceFact`],
//! worded in render/trace.rs), from a
//! window of a [`session`](crate::measure::trace::session). `trace` renders it,
//! `check` and `serve` read it.

use super::cost::{Need, Via as CostVia};
use super::lead::{Advice, VsyscallCaller};
use super::policy;
use super::{ClockRef, Status};
use crate::arch::{self, Abi, VdsoFn};
use crate::inspect::host::KernelFacts;
use crate::measure::trace::reach::Seizure;
use crate::measure::trace::session::{Session, Window};
use crate::measure::trace::{Clock, Tally};
use crate::model::kind::Kind as FindingKind;
use crate::progress::Kind;
use crate::words::thousands;
use serde::Serialize;

pub use crate::measure::trace::session::{CommandInfo, ExitStatus};
/// A getrandom row's kind: measure's type, the report's field.
pub use crate::measure::trace::RandomCall;
use crate::progress::Target;

/// The `trace` report (DESIGN keys: target, engine, duration_ns, counts,
/// vsyscall_emulations, lost, findings, command).
#[derive(Debug, Serialize)]
pub struct TraceReport {
    pub target: Target,
    /// The engine that counted.
    pub engine: Kind,
    /// Why it is not the BPF engine, when it is not.
    pub engine_note: Option<String>,
    /// Seccomp engine: how it heard of the calls (`ptrace` or `listener`)
    /// and why a listener; `null` for the other engines.
    pub seccomp_channel: Option<crate::measure::trace::engines::seccomp::ChannelUsed>,
    pub duration_ns: u64,
    pub counts: Vec<CountRow>,
    pub vsyscall_emulations: Vec<VsyscallRow>,
    /// Calls counted but not split by function and clock (perf engine:
    /// sampled records the ring dropped), per process.
    pub unattributed: Vec<UnattributedRow>,
    /// Events the engine could not keep: BPF map inserts refused (the map
    /// was full) or perf records dropped. 0 in normal use.
    pub lost: u64,
    /// getrandom calls that were a process's one start-up key (glibc's
    /// malloc key: at most 8 bytes, `GRND_NONBLOCK`), summed, not rows.
    pub startup_keys: u64,
    /// Processes of a traced tree the engine could not follow.
    pub unfollowed: u64,
    /// Seccomp engine: clock syscalls a signal withdrew while they waited
    /// for vdsoctl (uncounted; the program saw EINTR or ran them again).
    pub withdrawn: u64,
    /// `-- CMD`: processes of the tree found tracing vdsoctl or its
    /// guardian (each killed at sight): what vdsoctl counted may not be
    /// what the tree did.
    pub auditor_seized: Vec<Seizure>,
    /// Traced processes (`-p`) that exited during the trace.
    pub exited: Vec<ExitedRow>,
    /// `-- CMD`: the command and how it ended.
    pub command: Option<CommandInfo>,
    /// Ended early by SIGINT or SIGTERM.
    pub interrupted: bool,
    /// With `--interval`, the reports before the summary: the interval's
    /// bounds from the start of counting.
    pub interval: Option<Interval>,
    /// Typed facts with their data; JSON and the table word them
    /// (render/trace.rs), each as a `Finding` would be.
    pub findings: Vec<TraceFact>,
    /// `--stacks`: calls per process and user stack, busiest first
    /// (`null` without `--stacks`).
    pub stacks: Option<Vec<super::stacks::StackRow>>,
    /// `--stacks`: counted calls whose stack was not kept (`null` without).
    pub stacks_lost: Option<u64>,
    /// `-a`: vdsoctl's own processes (this one, and any running its
    /// executable file), left out of every row and finding; `null` for
    /// other targets, which count what was asked.
    pub vdsoctl_own: Option<OwnLeftOut>,
    /// `--top N` / `--by KEY`: the rows folded by program, name or cgroup
    /// (`null` without either; `counts` keeps every row).
    pub groups: Option<super::group::Groups>,
    /// The wall clock when counting started (interval headers show it).
    #[serde(skip)]
    pub wall_start: Option<std::time::SystemTime>,
    /// The host's auxiliary clocks, as the rows were judged.
    #[serde(skip)]
    pub aux_clocks: arch::AuxClocks,
}

/// The calls of vdsoctl's own processes a system-wide window left out
/// (`measure::trace::own`): by identity, never by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OwnLeftOut {
    /// The processes with calls in the window, by pid (ascending).
    pub pids: Vec<i32>,
    /// Their clock, getrandom and [vsyscall] calls in the window.
    pub calls: u64,
}

impl OwnLeftOut {
    /// From a window's [`Tally::own`].
    pub fn of(tally: &Tally) -> OwnLeftOut {
        let with_calls = tally.own.iter().filter(|(_, n)| **n > 0);
        let mut pids: Vec<i32> = with_calls.clone().map(|((pid, _), _)| *pid).collect();
        pids.dedup();
        OwnLeftOut { pids, calls: super::sum(with_calls.map(|(_, n)| *n)) }
    }
}

/// An interval of `--interval`, from the start of counting.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Interval {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Syscalls of one function (and clock) by one process (or thread).
#[derive(Debug, Clone, Serialize)]
pub struct CountRow {
    pub pid: i32,
    /// The thread, with `--per-thread`.
    pub tid: Option<i32>,
    pub ppid: Option<i32>,
    /// The process's name when it made the calls.
    pub comm: Option<String>,
    /// Its executable and command line, read at first sight and again
    /// after each exec seen (`null`: it exited before it was seen, or could
    /// not be read).
    pub exe: Option<String>,
    pub cmdline: Option<Vec<String>>,
    /// The command line was longer than what is kept (4 KiB).
    pub cmdline_truncated: bool,
    pub syscall: &'static str,
    #[serde(skip)]
    pub func: crate::arch::VdsoFn,
    /// The ABI the calls were made with (`x86_64`, `i386`, ...).
    pub abi: Abi,
    /// Clock id by name (`CLOCK_TAI`, or its number); `null` for syscalls
    /// without one; `other`/`any` from the perf engine's coarser modes.
    pub clock: Option<ClockRef>,
    /// getrandom: what the call was (`by_vdso`, `unserved_flags`,
    /// `startup_key`, `served`); `null` for the other syscalls.
    pub random: Option<RandomCall>,
    pub count: u64,
    /// Over the time the process was traced (until it exited, if it did).
    #[serde(serialize_with = "crate::model::rate")]
    pub per_sec: f64,
    /// Whether this syscall is expected (the vDSO never serves it here).
    pub expected: bool,
    /// The process's cgroup, container and unit (`cgroup`, `container`,
    /// `unit`), read while it lived.
    #[serde(flatten)]
    pub placement: crate::model::cgroup::Placement,
    /// What the calls cost the host (`null`: no per-call figure, as for
    /// 32-bit calls and `other` clocks).
    pub cost: Option<super::cost::Cost>,
    /// When the process started (`Key::start`, ns since boot; 0: unknown):
    /// tells apart two processes that held the pid in turn.
    #[serde(skip)]
    pub start: u64,
    /// `--sites`: the calls by call site, busiest first (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sites: Option<Vec<super::site::SiteRow>>,
}

/// Emulated calls into the [vsyscall] page by one process.
#[derive(Debug, Clone, Serialize)]
pub struct VsyscallRow {
    pub pid: i32,
    pub comm: Option<String>,
    /// As a count row's (the engines key these rows by pid alone).
    pub exe: Option<String>,
    pub cmdline: Option<Vec<String>>,
    pub function: &'static str,
    #[serde(skip)]
    pub func: crate::arch::VdsoFn,
    pub count: u64,
    #[serde(serialize_with = "crate::model::rate")]
    pub per_sec: f64,
    /// What the emulations cost the host (`null`: no executable
    /// [vsyscall] page in vdsoctl to measure one with).
    pub cost: Option<super::cost::Cost>,
}

/// The advice on [vsyscall] calls of `v`: its executable as first seen, or
/// the command's own file for the command's pid.
pub fn vsyscall_advice(target: &Target, v: &VsyscallRow) -> Advice {
    let exe = v.exe.as_deref().or(super::lead::command_file(target, v.pid)).map(str::to_string);
    Advice::Vsyscall(VsyscallCaller { exe, pid: v.pid })
}

/// Clock syscalls counted for a process whose split was lost.
#[derive(Debug, Clone, Serialize)]
pub struct UnattributedRow {
    pub pid: i32,
    pub comm: Option<String>,
    pub count: u64,
}

/// A `-p` target that exited while traced.
#[derive(Debug, Clone, Serialize)]
pub struct ExitedRow {
    pub pid: i32,
    /// Time from the start of counting to its exit.
    pub after_ns: u64,
}

/// The report for one window of a session; a `-p` target that exited has
/// its rate over the time it lived. A bypassed clock is a FAIL only over
/// `fail_over` calls/s (`--fail-over`), else a WARN: a FAIL line means exit 1.
/// `facts`: the kernel it ran on, read by the caller.
pub fn build(session: &Session, w: &Window<'_>, fail_over: Option<f64>, facts: &KernelFacts) -> TraceReport {
    let kernel = facts.version();
    let (tally, elapsed, start, exited) = (w.tally, w.elapsed, w.start, w.exited);
    let secs_of = |pid: i32| {
        let lived = exited.get(&pid).map_or(elapsed, |at| at.saturating_duration_since(start));
        lived.min(elapsed).as_secs_f64().max(1e-9)
    };
    let host = session.sites.then(|| super::site::Host::of(facts));
    let sites = host.as_ref().map(|h| (h, w.seen));
    let cs = clocksource_no_vdso(facts);
    let (mut counts, mut vsyscall_emulations, unattributed) =
        rows(tally, (kernel, facts.aux_clocks, cs), &secs_of, sites);
    // A C library's start-up key (glibc's malloc makes one in every
    // process, as a direct syscall even in glibc 2.41) is summed, not a row
    // each: `trace -a` would list every process that ever ran.
    let startup_keys: u64 = super::sum(counts.iter().filter(|r| is_startup_key(r)).map(|r| r.count));
    counts.retain(|r| !is_startup_key(r));
    for r in &mut counts {
        if let Some(seen) = w.seen.get(r.pid, r.start) {
            // Read before an exec (or a rename) no look caught, the
            // process then named otherwise: another program's identity.
            if seen.comm.is_none() || r.comm.is_none() || seen.comm == r.comm {
                r.exe = seen.identity.exe.clone();
                r.cmdline = seen.identity.cmdline.clone();
                r.cmdline_truncated = seen.identity.cmdline_truncated;
            }
            // The cgroup at first sight, for a process gone by the report.
            if r.placement.cgroup.is_none() {
                r.placement = crate::model::cgroup::Placement::of(seen.cgroup.as_deref());
            }
        }
    }
    for v in &mut vsyscall_emulations {
        if let Some(seen) = w.seen.get(v.pid, 0) {
            v.exe = seen.identity.exe.clone();
            v.cmdline = seen.identity.cmdline.clone();
        }
    }
    // Only the perf engine's --native-only leaves 32-bit calls out.
    let skipped_compat = !session.traces_compat
        && arch::HOST_ABI.and_then(Abi::compat).is_some()
        && !matches!(session.target, Target::All);
    let exited_rows: Vec<ExitedRow> = exited
        .iter()
        .map(|(pid, at)| ExitedRow { pid: *pid, after_ns: at.saturating_duration_since(start).as_nanos() as u64 })
        .collect();
    let mut findings = findings(
        &counts,
        &vsyscall_emulations,
        &unattributed,
        tally,
        elapsed.as_secs_f64(),
        Judging { compat: !skipped_compat, fail_over, engine: session.engine, aux: facts.aux_clocks, clocksource: cs },
        (&session.target, session.sites),
    );
    // The auditor held first: it is why nothing after it can be trusted.
    findings.splice(0..0, w.seized.iter().cloned().map(TraceFact::AuditorSeized));
    if session.sites {
        findings.extend(site_facts(&counts, tally.sites_lost, session.engine));
    }
    TraceReport {
        target: session.target.clone(),
        engine: session.engine,
        engine_note: session.engine_note.clone(),
        seccomp_channel: session.seccomp_channel,
        duration_ns: elapsed.as_nanos() as u64,
        counts,
        vsyscall_emulations,
        unattributed,
        // Calls lost, and program runs the kernel skipped (each perhaps a
        // call): what the counts may be short by.
        lost: tally.lost_records + tally.skipped_runs,
        startup_keys,
        unfollowed: tally.unfollowed,
        withdrawn: tally.withdrawn,
        auditor_seized: w.seized.to_vec(),
        exited: exited_rows,
        // The command is said once, here (`target` only says "command"):
        // an interval's report has it still running (no exit status yet).
        command: command_of(session, w),
        interrupted: w.interrupted,
        interval: w.bounds.map(|(s, e)| Interval { start_ns: s.as_nanos() as u64, end_ns: e.as_nanos() as u64 }),
        findings,
        stacks: session.stacks.then(|| super::stacks::rows(tally, w.seen)),
        stacks_lost: session.stacks.then_some(tally.stacks_lost),
        vdsoctl_own: matches!(session.target, Target::All).then(|| OwnLeftOut::of(tally)),
        groups: None,
        wall_start: w.wall_start,
        aux_clocks: facts.aux_clocks,
    }
}

/// A row that is a process's expected start-up key.
fn is_startup_key(r: &CountRow) -> bool {
    r.expected && r.random == Some(RandomCall::StartupKey)
}

/// The count, [vsyscall] and unattributed rows of a window, busiest first.
fn rows(
    tally: &Tally,
    (kernel, aux, cs): (Option<(u32, u32)>, arch::AuxClocks, bool),
    secs_of: &dyn Fn(i32) -> f64,
    sites: Option<(&super::site::Host, &crate::measure::trace::sight::Sightings)>,
) -> (Vec<CountRow>, Vec<VsyscallRow>, Vec<UnattributedRow>) {
    let comm_of = |pid: i32| tally.comms.get(&pid).cloned();
    let mut counts: Vec<CountRow> = tally
        .counts
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| CountRow {
            pid: k.pid,
            tid: k.tid,
            ppid: tally.parents.get(&k.pid).copied(),
            comm: k.comm.map(|c| c.to_string()).or_else(|| comm_of(k.pid)),
            exe: None,
            cmdline: None,
            cmdline_truncated: false,
            syscall: k.func.name(),
            func: k.func,
            abi: k.abi,
            clock: ClockRef::of(k.clock),
            random: match k.clock {
                Clock::Random(r) => Some(r),
                _ => None,
            },
            count: *v,
            per_sec: *v as f64 / secs_of(k.pid),
            expected: !policy::vdso_serves_call(k.abi, k.func, k.clock, kernel, aux)
                || (cs && policy::clocksource_bound(k.func, k.clock)),
            placement: crate::model::cgroup::Placement::of(tally.cgroups.get(&k.pid).map(String::as_str)),
            cost: None,
            start: k.start,
            sites: sites.map(|(host, seen)| super::site::rows_of(tally, k, secs_of(k.pid), host, seen)),
        })
        .collect();
    counts.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)).then(a.tid.cmp(&b.tid)));
    let mut vsyscall_emulations: Vec<VsyscallRow> = tally
        .vsyscall
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|((pid, f), v)| VsyscallRow {
            pid: *pid,
            comm: comm_of(*pid),
            exe: None,
            cmdline: None,
            function: f.name(),
            func: *f,
            cost: None,
            count: *v,
            per_sec: *v as f64 / secs_of(*pid),
        })
        .collect();
    vsyscall_emulations.sort_by_key(|v| std::cmp::Reverse(v.count));
    let unattributed: Vec<UnattributedRow> = tally
        .unrecorded
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(pid, n)| UnattributedRow { pid: *pid, comm: comm_of(*pid), count: *n })
        .collect();
    (counts, vsyscall_emulations, unattributed)
}

/// The command is said once, in the report's `command` (`target` only says
/// "command"): an interval's report has it still running (no exit status yet).
fn command_of(session: &Session, w: &Window<'_>) -> Option<CommandInfo> {
    let ended = if w.bounds.is_none() { session.command.clone() } else { None };
    ended.or_else(|| match &session.target {
        Target::Command { argv, pid } => Some(CommandInfo { argv: argv.clone(), pid: *pid, exit_status: None }),
        _ => None,
    })
}

impl CountRow {
    /// What the row's calls read: clock_gettime as its clock id (as in
    /// DESIGN's example); the others name the call, so clock_getres is not
    /// mistaken for it.
    pub fn what(&self) -> String {
        match (self.clock.map(ClockRef::text), self.random, self.syscall) {
            (Some(c), _, "clock_gettime") => c,
            (Some(c), _, s) => format!("{s}({c})"),
            (None, Some(r), s) => format!("{s}({})", r.name()),
            (None, None, s) => s.to_string(),
        }
    }
}

/// A rate in syscalls/s, shown precisely enough that the number compares
/// with `threshold` (`--fail-over`) the way the rate does: whole numbers
/// from 10/s (one decimal below, as the table), more decimals while
/// rounding would put it on the other side of the threshold (0.04/s over
/// `--fail-over 0` is `0.04`, never `0`).
pub fn rate_number(per_sec: f64, threshold: Option<f64>) -> String {
    let text = |d: usize| {
        if d == 0 {
            thousands(per_sec.round() as u64)
        } else {
            let t = format!("{per_sec:.d$}");
            let (int, frac) = t.split_once('.').unwrap_or((&t, ""));
            format!("{}.{frac}", int.parse::<u64>().map_or_else(|_| int.to_string(), thousands))
        }
    };
    let mut d = usize::from(per_sec < 10.0);
    while d < 9 {
        let shown: f64 = format!("{per_sec:.d$}").parse().unwrap_or(per_sec);
        let same_side = threshold.is_none_or(|t| (per_sec > t) == (shown > t));
        if same_side && (shown != 0.0 || per_sec == 0.0) {
            break;
        }
        d += 1;
    }
    text(d)
}

/// How counts are judged: whether 32-bit tasks were traced, the
/// `--fail-over` threshold, and the engine that counted (it words the causes).
#[derive(Debug, Clone, Copy)]
pub struct Judging {
    pub compat: bool,
    pub fail_over: Option<f64>,
    pub engine: Kind,
    /// The host's auxiliary clocks (an expected one's line says why).
    pub aux: arch::AuxClocks,
    /// The clocksource has no vDSO mode (hpet, acpi_pm): a fine-grained
    /// clock read is the clocksource's syscall, not the program's bypass.
    pub clocksource: bool,
}

/// Whether the host's clocksource is known to have no vDSO mode.
fn clocksource_no_vdso(facts: &KernelFacts) -> bool {
    facts
        .clocksource
        .as_ref()
        .is_some_and(|c| crate::inspect::kernel::clocksource_has_vdso_mode(&c.current) == Some(false))
}

/// Findings of one clock (or call), ABI and verdict.
type GroupKey = (String, &'static str, Abi, Verdict);

/// The kind of line a count row gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    NotSplit,
    Bypass(Status),
    Expected,
}

/// The calls of one process (or thread) a finding names.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    pub pid: i32,
    /// The thread, with `--per-thread`.
    pub tid: Option<i32>,
    pub comm: Option<String>,
    pub per_sec: f64,
}

/// A group of count rows of one clock (or call), ABI and verdict, busiest
/// first: what one line of `trace`'s findings stands on.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// What the calls read ([`CountRow::what`]).
    pub what: String,
    pub syscall: &'static str,
    pub abi: Abi,
    /// Busiest first; never empty.
    pub callers: Vec<Caller>,
    /// `--fail-over`: the rates are shown as precisely as it needs.
    pub fail_over: Option<f64>,
}

impl Group {
    /// The rate the threshold compares: one process's own, or the group's sum.
    pub fn rate(&self) -> f64 {
        match self.callers.as_slice() {
            [one] => one.per_sec,
            all => all.iter().map(|c| c.per_sec).sum(),
        }
    }

    /// The busiest caller's rate (what a FAIL stands on).
    pub fn top(&self) -> f64 {
        self.callers.first().map_or(0.0, |c| c.per_sec)
    }
}

/// Why a group's syscalls are expected: the vDSO never serves them here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedWhy {
    /// The ABI's vDSO has no such function, by design.
    NotInVdso,
    /// getrandom: the vDSO's own calls (key refill, calls it hands on).
    RandomByVdso,
    /// getrandom: flags the vDSO hands to the kernel.
    RandomUnservedFlags,
    /// getrandom: a C library's start-up key.
    StartupKey,
    /// getrandom: this kernel's vDSO has none (`since`: the Linux release
    /// that brought it to the ABI's vDSO, when known).
    NoVdsoRandom { since: Option<(u32, u32)> },
    /// A clock id the vDSO never serves (CPU-time, alarm, fd clocks).
    ClockNeverServed,
    /// A call the vDSO never serves here.
    CallNeverServed,
    /// A fine-grained clock read on a clocksource without a vDSO mode:
    /// the vDSO's own fallback, the clocksource's syscall.
    ClocksourceNoVdso,
}

/// One finding of `trace`, a typed fact with its data (JSON `findings[]`):
/// its kind and severity are the policy's ([`TraceFact::kind`],
/// [`TraceFact::severity`]), its words render/trace.rs's (its Display and
/// hint; JSON has it as the `Finding` it words).
#[derive(Debug, Clone, PartialEq)]
pub enum TraceFact {
    /// `--no-split`: clock ids not told apart.
    NotSplit(Group),
    /// getrandom syscalls where the vDSO would serve them.
    RandomBypass { group: Group, severity: Status },
    /// Clock syscalls the vDSO would serve (`has_clock`: a clock id, not a
    /// call); `advice`: where to look.
    ClockBypass { group: Group, severity: Status, has_clock: bool, advice: Advice },
    /// An auxiliary clock `id`'s syscalls, expected by the host's `aux` state.
    AuxExpected { group: Group, clock: AuxExpected },
    /// Syscalls the vDSO never serves, and why.
    Expected { group: Group, why: ExpectedWhy },
    /// Emulated [vsyscall] calls of one process.
    Vsyscall {
        pid: i32,
        comm: Option<String>,
        function: &'static str,
        count: u64,
        per_sec: f64,
        fail_over: Option<f64>,
        advice: Advice,
    },
    /// Calls counted for a process but not split (the `unattributed` row).
    Unattributed { pid: i32, comm: Option<String>, count: u64, engine: Kind },
    /// `lost` calls ran uncounted, for this engine's cause.
    Lost { engine: Kind, lost: u64 },
    /// BPF engine: `runs` of its counting programs the kernel skipped (its
    /// recursion guard), each perhaps a traced call.
    Skipped { runs: u64 },
    /// New processes of the tree the engine could not follow.
    Unfollowed { count: u64 },
    /// Seccomp engine: clock syscalls a signal withdrew while they waited.
    Withdrawn { count: u64 },
    /// Seccomp engine, traced: ptrace requests of the tree that take a task
    /// as their tracer (one vdsoctl traces refuses them).
    PtraceRequests { count: u64 },
    /// Perf counters multiplexed: not counting the whole time.
    Multiplexed,
    /// Nothing counted in `secs` (`compat`: 32-bit tasks were traced too).
    Clean { compat: bool, secs: f64 },
    /// `--sites`: a row's busiest site of one class, and its fix.
    /// `fix.who` of libc's `syscall()` is its `caller`, labelled in render.
    Site {
        pid: i32,
        comm: Option<String>,
        count: u64,
        site: Box<super::site::FrameRow>,
        caller: Option<Box<super::site::FrameRow>>,
        fix: super::site::Fix,
    },
    /// Calls counted in their rows but not in a call-site row.
    SitesLost { count: u64 },
    /// `-- CMD`: a process of the tree traced vdsoctl or its guardian.
    AuditorSeized(Seizure),
}

impl TraceFact {
    /// What it is, by the stable id of its kind.
    pub fn kind(&self) -> FindingKind {
        use TraceFact as F;
        match self {
            F::NotSplit(_) | F::ClockBypass { .. } => FindingKind::RawClockSyscall,
            F::RandomBypass { .. } => FindingKind::RandomSyscallObserved,
            F::AuxExpected { .. } => FindingKind::AuxClockSyscall,
            F::Expected { .. } => FindingKind::ClockAlwaysSyscall,
            F::Vsyscall { .. } => FindingKind::VsyscallCall,
            F::Unattributed { .. }
            | F::Lost { .. }
            | F::Skipped { .. }
            | F::Unfollowed { .. }
            | F::Multiplexed
            | F::SitesLost { .. } => FindingKind::NotObservedInFull,
            F::Clean { .. } => FindingKind::ObservedClean,
            F::Site { .. } => FindingKind::Note,
            F::Withdrawn { .. } => FindingKind::CallsWithdrawnBySignal,
            F::PtraceRequests { .. } => FindingKind::PtraceInTracedTree,
            F::AuditorSeized(_) => FindingKind::AuditorPtraced,
        }
    }

    /// Its severity by the policy: a bypass is FAIL only over --fail-over.
    pub fn severity(&self) -> Status {
        use TraceFact as F;
        match self {
            F::RandomBypass { severity, .. } | F::ClockBypass { severity, .. } => *severity,
            F::AuditorSeized(_) => Status::Fail,
            F::Vsyscall { per_sec, fail_over, .. } => severity(*per_sec, *fail_over),
            F::NotSplit(_)
            | F::Unattributed { .. }
            | F::Lost { .. }
            | F::Skipped { .. }
            | F::Unfollowed { .. }
            | F::Withdrawn { .. }
            | F::PtraceRequests { .. }
            | F::Multiplexed
            | F::SitesLost { .. } => Status::Warn,
            F::AuxExpected { .. } | F::Expected { .. } | F::Clean { .. } | F::Site { .. } => Status::Info,
        }
    }

    /// It says calls bypassed the vDSO (an interval says such a WARN once).
    pub fn is_bypass(&self) -> bool {
        matches!(self, TraceFact::RandomBypass { .. } | TraceFact::ClockBypass { .. })
    }
}

impl TraceReport {
    /// `--top`/`--by`: fold the rows by `g` (after their costs are known).
    pub fn group(&mut self, g: super::group::Grouping) {
        use super::group::{fold, key_of, Item};
        let counts = self.counts.iter().map(|r| Item {
            pid: r.pid,
            start: r.start,
            key: key_of(g.by, &r.comm, &r.exe, Some(&r.placement)),
            syscall: r.syscall,
            vsyscall: false,
            clock: r.clock,
            random: r.random,
            count: r.count,
            per_sec: r.per_sec,
            cost: r.cost.as_ref(),
        });
        let vsyscall = self.vsyscall_emulations.iter().map(|v| Item {
            pid: v.pid,
            start: 0,
            key: key_of(g.by, &v.comm, &v.exe, None),
            syscall: v.function,
            vsyscall: true,
            clock: None,
            random: None,
            count: v.count,
            per_sec: v.per_sec,
            cost: v.cost.as_ref(),
        });
        self.groups = Some(fold(g, counts.chain(vsyscall)));
    }

    /// A FAIL among its findings: exit 1.
    pub fn any_fail(&self) -> bool {
        self.findings.iter().any(|f| f.severity() == Status::Fail)
    }
}

/// The findings of a window's rows and tally, as typed facts.
pub fn findings(
    counts: &[CountRow],
    vsyscall: &[VsyscallRow],
    unattributed: &[UnattributedRow],
    tally: &Tally,
    secs: f64,
    how: Judging,
    (target, sites): (&Target, bool),
) -> Vec<TraceFact> {
    let Judging { compat, fail_over, engine, aux, clocksource } = how;
    let lead = |pid: i32| super::lead::Lead::of(target, sites, pid);
    let mut out: Vec<TraceFact> = groups(counts, fail_over)
        .into_iter()
        .map(|(key, rows)| group_fact(key, rows, (fail_over, aux, clocksource), &lead))
        .collect();
    for v in vsyscall {
        out.push(TraceFact::Vsyscall {
            pid: v.pid,
            comm: v.comm.clone(),
            function: v.function,
            count: v.count,
            per_sec: v.per_sec,
            fail_over,
            advice: vsyscall_advice(target, v),
        });
    }
    for u in unattributed {
        out.push(TraceFact::Unattributed { pid: u.pid, comm: u.comm.clone(), count: u.count, engine });
    }
    if tally.lost_records > 0 {
        out.push(TraceFact::Lost { engine, lost: tally.lost_records });
    }
    if tally.skipped_runs > 0 {
        out.push(TraceFact::Skipped { runs: tally.skipped_runs });
    }
    if tally.unfollowed > 0 {
        out.push(TraceFact::Unfollowed { count: tally.unfollowed });
    }
    if tally.withdrawn > 0 {
        out.push(TraceFact::Withdrawn { count: tally.withdrawn });
    }
    if tally.ptrace_requests > 0 {
        out.push(TraceFact::PtraceRequests { count: tally.ptrace_requests });
    }
    if tally.scaled {
        out.push(TraceFact::Multiplexed);
    }
    if counts.is_empty() && vsyscall.is_empty() {
        out.push(TraceFact::Clean { compat, secs });
    }
    out
}

/// A bypass is FAIL (exit 1) only above --fail-over; without it, WARN.
fn severity(per_sec: f64, fail_over: Option<f64>) -> Status {
    match fail_over {
        Some(rate) if per_sec > rate => Status::Fail,
        _ => Status::Warn,
    }
}

/// The count rows grouped by clock (or call), ABI and verdict, FAIL
/// groups first, then WARN, then the expected ones.
fn groups(counts: &[CountRow], fail_over: Option<f64>) -> Vec<(GroupKey, Vec<&CountRow>)> {
    // One line per clock (or call), ABI and verdict, naming the busiest
    // processes: `-a` on a busy host gives a few lines, not one per process.
    let mut groups: Vec<(GroupKey, Vec<&CountRow>)> = Vec::new();
    for r in counts {
        let what = r.what();
        let verdict = match r.clock {
            Some(ClockRef::Any) => Verdict::NotSplit,
            _ if !r.expected => Verdict::Bypass(severity(r.per_sec, fail_over)),
            _ => Verdict::Expected,
        };
        let key = (what, r.syscall, r.abi, verdict);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    groups.sort_by_key(|((_, _, _, v), _)| match v {
        Verdict::Bypass(Status::Fail) => 0,
        Verdict::Bypass(_) => 1,
        Verdict::NotSplit => 2,
        Verdict::Expected => 3,
    });
    groups
}

/// One fact for a group, naming its busiest processes: `-a` on a busy
/// host gives a few lines, not one per process.
fn group_fact(
    (what, syscall, abi, verdict): GroupKey,
    mut rows: Vec<&CountRow>,
    (fail_over, aux, clocksource): (Option<f64>, arch::AuxClocks, bool),
    lead: &dyn Fn(i32) -> super::lead::Lead,
) -> TraceFact {
    rows.sort_by(|a, b| b.per_sec.total_cmp(&a.per_sec).then(a.pid.cmp(&b.pid)));
    let callers =
        rows.iter().map(|r| Caller { pid: r.pid, tid: r.tid, comm: r.comm.clone(), per_sec: r.per_sec }).collect();
    let group = Group { what, syscall, abi, callers, fail_over };
    let first = rows[0];
    match verdict {
        Verdict::NotSplit => TraceFact::NotSplit(group),
        Verdict::Bypass(severity) if first.random.is_some() => TraceFact::RandomBypass { group, severity },
        Verdict::Bypass(severity) => TraceFact::ClockBypass {
            group,
            severity,
            has_clock: first.clock.is_some(),
            advice: Advice::RawSyscalls(lead(first.pid)),
        },
        Verdict::Expected if first.clock.and_then(ClockRef::id).is_some_and(arch::is_aux_clock) => {
            let id = first.clock.and_then(ClockRef::id).unwrap_or(arch::CLOCK_AUX);
            TraceFact::AuxExpected { group, clock: AuxExpected { id, aux } }
        }
        Verdict::Expected => {
            let offered = VdsoFn::from_name(syscall).is_none_or(|f| abi.vdso_offers(f));
            let by_clocksource = clocksource
                && policy::clocksource_bound(
                    first.func,
                    first.clock.and_then(ClockRef::id).map_or(Clock::None, Clock::Id),
                );
            let why = match (offered, first.clock.is_some(), first.random) {
                _ if by_clocksource => ExpectedWhy::ClocksourceNoVdso,
                (false, _, _) => ExpectedWhy::NotInVdso,
                (true, _, Some(RandomCall::ByVdso)) => ExpectedWhy::RandomByVdso,
                (true, _, Some(RandomCall::UnservedFlags)) => ExpectedWhy::RandomUnservedFlags,
                (true, _, Some(RandomCall::StartupKey)) => ExpectedWhy::StartupKey,
                (true, _, Some(RandomCall::Served)) => {
                    let (machine, is_64) = abi.elf();
                    let since = arch::vdso_symbol_row(machine, is_64, VdsoFn::Getrandom).and_then(|s| s.since);
                    ExpectedWhy::NoVdsoRandom { since }
                }
                (true, true, None) => ExpectedWhy::ClockNeverServed,
                (true, false, None) => ExpectedWhy::CallNeverServed,
            };
            TraceFact::Expected { group, why }
        }
    }
}

/// Why an auxiliary clock's syscalls are expected (the vDSO serves one
/// only while it is enabled) by the host's state, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuxExpected {
    pub id: i64,
    pub aux: arch::AuxClocks,
}

/// Why an auxiliary clock's syscalls are expected and how it would be
/// served, worded by render/trace.rs: (why, what to do). For
/// model/command.rs's rows, which take words.
pub fn aux_clock_expected(id: i64, aux: arch::AuxClocks) -> (String, String) {
    let fact = AuxExpected { id, aux };
    (fact.to_string(), fact.fix())
}

/// What a loss means, whatever the engine (the trace was not observed in
/// full: no verdict may call it clean), and the fix for this engine's
/// cause, worded by render/trace.rs: (what, fix). For model/command.rs.
pub fn not_observed_in_full(engine: Kind, lost: u64) -> (String, String) {
    let fact = TraceFact::Lost { engine, lost };
    (fact.to_string(), fact.hint().unwrap_or_default())
}

/// A bypassing process and clock: (pid, process start, syscall, ABI, clock).
type WarnKey = (i32, u64, &'static str, Abi, Option<ClockRef>);

/// The bypass WARNs `trace --interval` has said: a WARN is said once per
/// process and clock, in the first interval that sees it, not again in
/// every interval after (the summary, the whole trace's verdict, says it
/// again). FAIL lines repeat: each interval's exit matters.
#[derive(Debug, Default)]
pub struct WarnedOnce(std::collections::HashSet<WarnKey>);

impl WarnedOnce {
    /// Drop an interval report's bypass WARNs when every process and clock
    /// they stand on was warned of before (`fail_over`: `--fail-over`).
    pub fn apply(&mut self, report: &mut TraceReport, fail_over: Option<f64>) {
        let warn_rows = report.counts.iter().filter(|r| {
            !r.expected && r.clock != Some(ClockRef::Any) && !fail_over.is_some_and(|rate| r.per_sec > rate)
        });
        let keys: Vec<WarnKey> = warn_rows.map(|r| (r.pid, r.start, r.syscall, r.abi, r.clock)).collect();
        let new = keys.iter().filter(|k| !self.0.contains(*k)).count();
        if new == 0 && !keys.is_empty() {
            report.findings.retain(|f| !(f.severity() == Status::Warn && f.is_bypass()));
        }
        self.0.extend(keys);
    }
}

impl TraceReport {
    /// What the rows need per-call costs for: count rows of the host's ABI
    /// or its compat one ([`super::cost::costed`]) of one clock id or none
    /// (not `other` and `any`), and the
    /// [vsyscall] emulations.
    pub fn cost_needs(&self) -> Vec<Need> {
        let mut out: Vec<Need> = self.counts.iter().filter_map(need).collect();
        out.extend(self.vsyscall_emulations.iter().map(|v| (CostVia::Vsyscall, v.func, None)));
        out.sort();
        out.dedup();
        out
    }

    /// Fill each row's cost from `per_call` (ns per call, as
    /// [`TraceReport::cost_needs`] asked); rows it has no figure for stay `None`.
    pub fn apply_costs(&mut self, per_call: &dyn Fn(Need) -> Option<f64>) {
        let window = self.duration_ns;
        for r in &mut self.counts {
            r.cost = need(r).and_then(per_call).map(|ns| super::cost::of(r.count, ns, window));
        }
        for v in &mut self.vsyscall_emulations {
            v.cost = per_call((CostVia::Vsyscall, v.func, None)).map(|ns| super::cost::of(v.count, ns, window));
        }
    }
}

/// A count row's need, if it has one.
fn need(r: &CountRow) -> Option<Need> {
    if !super::cost::costed(r.abi) {
        return None;
    }
    match r.clock {
        None => Some((CostVia::Syscall, r.func, None)),
        Some(c) => c.id().map(|id| (CostVia::Syscall, r.func, Some(id))),
    }
}

/// Site classes per row worth a line each.
const SITE_LINES: usize = 3;

/// One INFO fact per count row and class (its busiest site, at most
/// [`SITE_LINES`] a row), the fix in its hint: they explain the row's
/// verdict, they do not change it. And a WARN when site rows were lost.
fn site_facts(counts: &[CountRow], sites_lost: u64, engine: crate::progress::Kind) -> Vec<TraceFact> {
    let mut out = Vec::new();
    for r in counts {
        let Some(sites) = &r.sites else { continue };
        let mut seen: Vec<super::site::SiteClass> = Vec::new();
        for s in sites {
            if seen.contains(&s.class) || seen.len() == SITE_LINES {
                continue;
            }
            seen.push(s.class);
            let fix = super::site::Fix {
                class: s.class,
                fallback: s.fallback,
                what: r.what(),
                func: r.func,
                // libc's syscall(): its caller, labelled in render/trace.rs.
                who: if s.class == super::site::SiteClass::LibcSyscall { None } else { s.site.object.clone() },
                clocksource: s.clocksource.clone(),
                engine,
            };
            out.push(TraceFact::Site {
                pid: r.pid,
                comm: r.comm.clone(),
                count: s.count,
                site: Box::new(s.site.clone()),
                caller: s.caller.clone().map(Box::new),
                fix,
            });
        }
    }
    if sites_lost > 0 {
        out.push(TraceFact::SitesLost { count: sites_lost });
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An auxiliary clock's expected syscalls say why by the host's state:
    /// disabled (how to enable it), absent (which kernel has them), unknown.
    #[test]
    fn aux_clocks_say_why_they_are_expected() {
        let (why, fix) = aux_clock_expected(17, arch::AuxClocks::Enabled(0b1));
        assert!(why.contains("auxiliary clock 1 by syscall while it is disabled"), "{why}");
        assert!(fix.contains("`echo 1 > /sys/kernel/time/aux_clocks/1/enable`"), "{fix}");
        let (why, fix) = aux_clock_expected(16, arch::AuxClocks::Absent);
        assert!(why.starts_with("this kernel has no auxiliary clocks"), "{why}");
        assert!(fix.contains("/sys/kernel/time/aux_clocks/0/enable"), "{fix}");
        let (why, _) = aux_clock_expected(23, arch::AuxClocks::Unknown);
        assert!(why.contains("only while it is enabled"), "{why}");
    }

    /// 100 CLOCK_MONOTONIC syscalls of process `pid` (named `p{pid}`).
    pub(crate) fn bypass_row(pid: i32, per_sec: f64) -> CountRow {
        CountRow {
            pid,
            tid: None,
            ppid: None,
            comm: Some(format!("p{pid}")),
            exe: None,
            cmdline: None,
            cmdline_truncated: false,
            syscall: "clock_gettime",
            func: crate::arch::VdsoFn::ClockGettime,
            cost: None,
            abi: arch::HOST_ABI.unwrap_or(Abi::X86_64),
            clock: Some(ClockRef::Id(1)),
            random: None,
            count: 100,
            per_sec,
            expected: false,
            placement: Default::default(),
            start: 0,
            sites: None,
        }
    }

    /// A BPF trace's judging: compat counted, no --fail-over, aux clocks
    /// unknown, a clocksource with a vDSO mode.
    fn bpf_judging() -> Judging {
        Judging { compat: true, fail_over: None, engine: Kind::Bpf, aux: arch::AuxClocks::Unknown, clocksource: false }
    }

    /// Program runs the kernel skipped (its recursion guard, on a kernel
    /// that runs the programs preemptible) are said, never silent: the
    /// trace is not observed in full, a WARN, with its own cause.
    #[test]
    fn skipped_program_runs_are_a_loss_said_with_their_cause() {
        let t = Tally { skipped_runs: 6_461, ..Tally::default() };
        let judging = bpf_judging();
        let facts = findings(&[bypass_row(7, 50.0)], &[], &[], &t, 1.0, judging, (&Target::All, false));
        let skipped = facts.iter().find(|f| matches!(f, TraceFact::Skipped { runs: 6_461 })).expect("a Skipped fact");
        assert_eq!(skipped.kind(), FindingKind::NotObservedInFull);
        assert_eq!(skipped.severity(), Status::Warn);
        let words = skipped.to_string();
        assert!(words.contains("skipped 6,461 runs") && words.contains("recursion_misses"), "{words}");
        assert!(skipped.hint().is_some_and(|h| h.contains("--engine seccomp")));
        // None skipped: no such fact.
        let facts = findings(&[bypass_row(7, 50.0)], &[], &[], &Tally::default(), 1.0, judging, (&Target::All, false));
        assert!(!facts.iter().any(|f| matches!(f, TraceFact::Skipped { .. })));
    }

    #[test]
    fn bypass_is_fail_only_over_the_rate() {
        let row = |per_sec: f64| CountRow { comm: Some("loop".into()), ..bypass_row(7, per_sec) };
        let t = Tally::default();
        let sev = |rows: &[CountRow], over| {
            findings(
                rows,
                &[],
                &[],
                &t,
                1.0,
                Judging {
                    compat: true,
                    fail_over: over,
                    engine: Kind::Bpf,
                    aux: arch::AuxClocks::Unknown,
                    clocksource: false,
                },
                (&Target::All, false),
            )[0]
            .severity()
        };
        assert_eq!(sev(&[row(50.0)], None), Status::Warn);
        assert_eq!(sev(&[row(50.0)], Some(0.0)), Status::Fail);
        assert_eq!(sev(&[row(50.0)], Some(50.0)), Status::Warn);
        assert_eq!(sev(&[row(50.0)], Some(10.0)), Status::Fail);
    }

    #[test]
    fn rates_are_as_precise_as_the_threshold() {
        assert_eq!(rate_number(0.4, Some(0.0)), "0.4");
        assert_eq!(rate_number(0.04, Some(0.0)), "0.04");
        assert_eq!(rate_number(0.0004, None), "0.0004");
        assert_eq!(rate_number(0.0, Some(0.0)), "0.0");
        assert_eq!(rate_number(5.0, None), "5.0");
        assert_eq!(rate_number(81_204.4, None), "81,204");
        assert_eq!(rate_number(1000.3, Some(1000.0)), "1,000.3");
        assert_eq!(rate_number(100.4, Some(100.0)), "100.4");
    }

    #[test]
    fn findings_group_processes_by_clock_and_verdict() {
        let row = bypass_row;
        let rows: Vec<CountRow> = (1..=1000).map(|p| row(p, f64::from(p))).collect();
        let t = Tally::default();
        let f = findings(
            &rows,
            &[],
            &[],
            &t,
            1.0,
            Judging {
                compat: true,
                fail_over: Some(500.0),
                engine: Kind::Bpf,
                aux: arch::AuxClocks::Unknown,
                clocksource: false,
            },
            (&Target::All, false),
        );
        assert_eq!(f.len(), 2, "{f:#?}");
        assert_eq!(f[0].severity(), Status::Fail);
        assert!(
            f[0].to_string().contains(
                "from 500 processes (pid 1000 (p1000) 1,000/s, pid 999 (p999) 999/s, pid 998 (p998) 998/s, 497 more)"
            ),
            "{f:#?}"
        );
        assert_eq!(f[1].severity(), Status::Warn);
        assert!(f[1].to_string().contains("from 500 processes (pid 500 (p500) 500/s"), "{f:#?}");
    }

    /// An expected syscall says why: a function the ABI's vDSO lacks by
    /// design (AArch32's clock_getres_time64), or a clock it never serves.
    #[test]
    fn expected_rows_say_why() {
        let t = Tally::default();
        let judging = bpf_judging();
        let arm = CountRow { syscall: "clock_getres_time64", abi: Abi::Arm, expected: true, ..bypass_row(7, 9.0) };
        let f = findings(&[arm], &[], &[], &t, 1.0, judging, (&Target::All, false));
        assert_eq!(f[0].severity(), Status::Info);
        assert!(
            f[0].to_string()
                .ends_with("from pid 7 (p7), arm ABI — expected: the arm vDSO has no clock_getres_time64, by design"),
            "{f:#?}"
        );
        let cpu = CountRow { abi: Abi::Aarch64, clock: Some(ClockRef::Id(2)), expected: true, ..bypass_row(8, 9.0) };
        let f = findings(&[cpu], &[], &[], &t, 1.0, judging, (&Target::All, false));
        assert!(f[0].to_string().ends_with("from pid 8 (p8) — expected: the vDSO never serves this clock id (CPU-time, alarm and fd clocks always enter the kernel)"), "{f:#?}");
    }
}
