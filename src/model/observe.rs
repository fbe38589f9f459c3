//! What `check` saw a process (or the host) do with its clock reads in a
//! short window, and the policy that judges it: a clock the vDSO serves
//! here that still enters the kernel, or a [vsyscall] call, is a bypass
//! and fails; a clean window proves no bypass (it cannot see the reads the
//! vDSO serves, so it never says "stayed in the vDSO"); nothing observed —
//! no privileges, no engine, `--trace 0` — is said as such, never as OK.
//! `check -p`, the host `check` and `serve`'s audit all judge here; the
//! rows carry typed facts ([`ObservedRow`], [`HostRandom`],
//! [`CommandTrace`], [`Noted`]), worded in render/observe.rs.

use super::binary::WarnKind;
use super::row::{CallSeen, Check, Observed, Said};
use super::trace::TraceReport;
use super::{ClockRef, Status};
use crate::measure::trace::session::{Session, Window};
use crate::measure::trace::Tally;
use crate::model::kind::Kind as FindingKind;
use crate::progress::Kind;
use crate::progress::Target;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;
use std::time::Instant;

/// The window `check` observes for when `--trace` is not given.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);

/// The host audit FAILs only when some process bypasses the vDSO faster
/// than this many calls a second (the sum of its calls), and WARNs below:
/// one raw call in a window (a `date` now and then) must not make a
/// fleet's `vdsoctl_check_failed` flap; a busy loop (100k/s) fails. Like
/// `trace --fail-over`, the rate must be over it, not at it.
pub const HOST_FAIL_OVER: f64 = 100.0;

/// How many bypassing (process, call) pairs a row names before "and N more".
pub const NAMED: usize = 5;

/// One call the vDSO should have served, seen entering the kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bypass {
    pub pid: i32,
    pub comm: Option<String>,
    /// `clock_gettime`, `gettimeofday`, ...; the function (`time`) of an
    /// emulated call into the legacy page (`vsyscall`).
    pub call: &'static str,
    /// The clock id, for calls that take one.
    pub clock: Option<ClockRef>,
    pub count: u64,
    #[serde(serialize_with = "crate::model::rate")]
    pub per_sec: f64,
    /// A call into the [vsyscall] page (emulated), not a syscall.
    pub vsyscall: bool,
    /// The caller's executable, when the trace knows it (a [vsyscall]
    /// caller's is named in the advice).
    #[serde(skip)]
    pub exe: Option<String>,
}

/// What a window showed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Seen {
    pub window: Duration,
    /// The calls that bypassed the vDSO, busiest first.
    pub bypass: Vec<Bypass>,
    /// getrandom syscalls the vDSO would have served: an old runtime's or
    /// raw calls, said on the row, judged by the getrandom checks.
    pub random: u64,
    /// The getrandom syscalls the vDSO would have served, per process,
    /// busiest first (the getrandom rows name them with their rate).
    #[serde(skip)]
    pub random_calls: Vec<Bypass>,
    /// Clock syscalls the vDSO never serves (CPU-time clocks, ...).
    pub expected: u64,
    /// Events the engine dropped: the counts are partial.
    pub lost: u64,
    /// vdsoctl's own processes, left out (by executable identity): its
    /// clock bench makes syscalls on purpose.
    pub left_out: Vec<i32>,
    /// Their calls in the window.
    pub left_out_calls: u64,
    /// The host row FAILs over this many calls/s of one process, WARNs at
    /// or below ([`HOST_FAIL_OVER`] unless `check --fail-over` says).
    #[serde(skip)]
    pub fail_over: f64,
}

/// Why nothing was observed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unseen {
    /// `--trace 0`.
    Off,
    /// No trace engine may run here (privileges, kernel, sandbox): the
    /// engine's own reason.
    NoEngine(String),
    /// The engine ran but the window failed (the target vanished, ...).
    Failed(String),
    /// `serve`: the engine has not finished its first interval yet.
    NotYet,
}

/// The observation: seen, or why not.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    Seen(Seen),
    Unseen(Unseen),
}

/// Bypassing calls `check -- CMD` names (busiest first) before "and N
/// more": a tree of 1,500 processes made a 238 KB line; `trace -- CMD`
/// lists each.
pub const COMMAND_NAMED: usize = 5;

/// `check -- CMD`'s `command_trace` row: the window `seen` of the
/// command `argv` (to run again under `trace --sites`).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandTrace {
    pub seen: Seen,
    pub argv: Vec<String>,
}

impl CommandTrace {
    /// The command's bypasses by count, [vsyscall] calls after the syscalls.
    pub fn by_count(&self) -> Vec<&Bypass> {
        let mut by_count: Vec<&Bypass> = self.seen.bypass.iter().collect();
        by_count.sort_by(|a, b| a.vsyscall.cmp(&b.vsyscall).then(b.count.cmp(&a.count)).then(a.pid.cmp(&b.pid)));
        by_count
    }

    /// Where its bypasses lead.
    pub fn advice(&self) -> super::lead::Advice {
        advice(self.by_count().into_iter(), super::lead::Lead::Command(self.argv.clone()))
    }
}

impl Bypass {
    fn seen(&self) -> CallSeen {
        CallSeen {
            pid: self.pid,
            comm: self.comm.clone(),
            function: self.call.to_string(),
            vsyscall: self.vsyscall,
            clock: self.clock,
            count: self.count,
            per_sec: self.per_sec,
            carried: None,
        }
    }
}

impl Seen {
    /// The window and `calls`, as a row's data.
    fn observed<'a>(&self, calls: impl IntoIterator<Item = &'a Bypass>) -> Observed {
        let window_ns = u64::try_from(self.window.as_nanos()).unwrap_or(u64::MAX);
        let calls = calls.into_iter().map(Bypass::seen).collect();
        Observed { window_ns, calls, left_out: Vec::new(), fail_over: None, groups: None }
    }

    /// `check -- CMD`'s `command_trace` row (`argv`: the command, to run
    /// again under `trace --sites`): any bypass fails, with each process's
    /// calls by count; a clean run passes, saying what it did not see.
    pub fn command_row(&self, argv: &[String]) -> Check {
        let (kind, status) = match self.bypass.is_empty() {
            true => (FindingKind::ObservedClean, Status::Ok),
            false => (bypass_kind(&self.bypass), Status::Fail),
        };
        let row = Check::fact(kind, "command_trace", status, CommandTrace { seen: self.clone(), argv: argv.to_vec() });
        row.seen(self.observed(&self.bypass))
    }
}

/// What the observation means for the audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// No clock syscall the vDSO serves, no [vsyscall] call.
    Clean,
    /// Some went into the kernel: fails.
    Bypassed,
    /// Nothing was observed: informs, never passes or fails.
    NotObserved,
    /// The window failed where it should have run.
    Broken,
}

/// What the row is about: one process, or every process of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Process(i32),
    Host,
}

/// An observation row (`process_trace`, `host_trace`): what `obs` saw of
/// `scope`, worded in render/observe.rs.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedRow {
    pub obs: Observation,
    pub scope: Scope,
}

impl ObservedRow {
    /// The finding's kind and severity (a clean window is INFO, the row's OK).
    pub fn judge(&self) -> (FindingKind, Status) {
        let s = match &self.obs {
            Observation::Unseen(Unseen::Failed(_)) => return (FindingKind::TraceFailed, Status::Warn),
            Observation::Unseen(_) => return (FindingKind::NotObserved, Status::Info),
            Observation::Seen(s) => s,
        };
        if s.bypass.is_empty() {
            return (FindingKind::ObservedClean, Status::Info);
        }
        let busiest = busiest_pids(&s.bypass).first().map_or(0.0, |p| p.1);
        let status = match self.scope {
            Scope::Host if busiest <= s.fail_over => Status::Warn,
            _ => Status::Fail,
        };
        (bypass_kind(&s.bypass), status)
    }

    /// Where the bypasses lead: the process's, or the host's busiest.
    pub fn advice(&self) -> super::lead::Advice {
        let bypass = self.obs.bypass();
        match self.scope {
            Scope::Process(pid) => lead_advice(bypass, pid),
            Scope::Host => {
                let busiest = busiest_pids(bypass).first().map_or(0, |p| p.0);
                super::lead::Advice::Host { busiest, advice: Box::new(lead_advice(bypass, busiest)) }
            }
        }
    }
}

/// What the verdict could not stand on when nothing was observed: said
/// on the verdict line and in JSON `not_observed` (worded in render/observe.rs).
#[derive(Debug, Clone, PartialEq)]
pub struct Caveat {
    pub scope: Scope,
    pub why: Unseen,
}

/// The host's `host_random` row: the processes whose getrandom syscalls
/// the vDSO would have served (`seen.random_calls`, busiest first).
#[derive(Debug, Clone, PartialEq)]
pub struct HostRandom {
    pub seen: Seen,
    /// A process's rate reached [`RANDOM_HOT`].
    pub hot: bool,
}

/// A row another judge made (`said`: its fact or words) with what the
/// observation adds to it (worded in render/observe.rs).
#[derive(Debug, Clone)]
pub struct Noted {
    pub said: Said,
    pub note: Note,
}

/// What an observation adds to a row made without it.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// The binary row: the clean window (this row of it) clears its
    /// unproven warning.
    Clears(Box<ObservedRow>),
    /// The binary row: the window saw bypasses of these clocks (or calls,
    /// for those without one) its verdict did not expect.
    Contradicts(Vec<Bypass>),
    /// The random route: nothing was observed.
    RandomNotObserved,
    /// The random route: the window saw no getrandom syscall of it.
    NoRandomIn(Duration),
    /// The random route: the window saw these getrandom syscalls.
    RandomObserved { window: Duration, calls: Bypass },
}

impl Observation {
    /// The bypasses of a trace report. A system-wide one has vdsoctl's own
    /// processes left out already (`measure::trace::own`: by executable
    /// identity; its clock bench makes syscalls on purpose): named here.
    pub fn of_report(report: &TraceReport) -> Observation {
        let own = report.vdsoctl_own.clone().unwrap_or_default();
        let mut bypass: Vec<Bypass> = report
            .counts
            .iter()
            // getrandom syscalls are the runtime's choice, not a lost clock:
            // counted apart (`random`), never a FAIL here.
            .filter(|r| !r.expected && !is_random(r))
            .map(|r| Bypass {
                pid: r.pid,
                comm: r.comm.clone(),
                call: r.syscall,
                clock: r.clock,
                count: r.count,
                per_sec: r.per_sec,
                vsyscall: false,
                exe: r.exe.clone(),
            })
            .collect::<Vec<_>>()
            .into_iter()
            .chain(report.vsyscall_emulations.iter().map(|v| Bypass {
                pid: v.pid,
                comm: v.comm.clone(),
                call: v.function,
                clock: None,
                count: v.count,
                per_sec: v.per_sec,
                vsyscall: true,
                exe: v.exe.clone().or_else(|| super::lead::command_file(&report.target, v.pid).map(str::to_string)),
            }))
            .collect();
        bypass.sort_by(|a, b| b.per_sec.total_cmp(&a.per_sec).then(a.pid.cmp(&b.pid)));
        let expected = super::sum(report.counts.iter().filter(|r| r.expected && !is_random(r)).map(|r| r.count));
        let random = super::sum(report.counts.iter().filter(|r| !r.expected && is_random(r)).map(|r| r.count));
        let mut random_calls: Vec<Bypass> = Vec::new();
        for r in report.counts.iter().filter(|r| !r.expected && is_random(r)) {
            match random_calls.iter_mut().find(|b| b.pid == r.pid) {
                Some(b) => {
                    b.count = b.count.saturating_add(r.count);
                    b.per_sec += r.per_sec;
                }
                None => random_calls.push(Bypass {
                    pid: r.pid,
                    comm: r.comm.clone(),
                    call: r.syscall,
                    clock: None,
                    count: r.count,
                    per_sec: r.per_sec,
                    vsyscall: false,
                    exe: r.exe.clone(),
                }),
            }
        }
        random_calls.sort_by(|a, b| b.per_sec.total_cmp(&a.per_sec).then(a.pid.cmp(&b.pid)));
        Observation::Seen(Seen {
            window: Duration::from_nanos(report.duration_ns),
            bypass,
            random,
            random_calls,
            expected,
            lost: report.lost,
            left_out: own.pids,
            left_out_calls: own.calls,
            fail_over: HOST_FAIL_OVER,
        })
    }

    /// The observation between two snapshots of an engine that counts
    /// every process (`serve`'s): `earlier` taken at `then`, `later` at
    /// `now`, on the `kernel` the caller read.
    pub fn between(
        earlier: (&Tally, Instant),
        later: (&Tally, Instant),
        engine: Kind,
        kernel: &crate::inspect::host::KernelFacts,
    ) -> Observation {
        let delta = later.0.since(earlier.0);
        let session = Session {
            target: Target::All,
            engine,
            engine_note: None,
            traces_compat: true,
            command: None,
            sites: false,
            stacks: false,
            seccomp_channel: None,
        };
        let window = Window {
            tally: &delta,
            elapsed: later.1.saturating_duration_since(earlier.1),
            start: earlier.1,
            wall_start: None,
            exited: &BTreeMap::new(),
            interrupted: false,
            seized: &[],
            bounds: None,
            seen: &Default::default(),
        };
        Observation::of_report(&super::trace::build(&session, &window, None, kernel))
    }

    /// What a verdict resting on this observation could not see, for its
    /// verdict line and JSON. `None` when seen (or not yet: `serve` says
    /// that on its own row).
    pub fn caveat(&self, scope: Scope) -> Option<Caveat> {
        match self {
            Observation::Seen(_) | Observation::Unseen(Unseen::NotYet) => None,
            Observation::Unseen(why) => Some(Caveat { scope, why: why.clone() }),
        }
    }

    /// The observation row: a bypass fails, a clean window passes, nothing
    /// observed is INFO (never OK by inference).
    pub fn row(&self, name: &str, scope: Scope) -> Check {
        let fact = ObservedRow { obs: self.clone(), scope };
        let (kind, severity) = fact.judge();
        let rate = self.bypass().first().map(|b| b.per_sec);
        let status = match self.judged() {
            Judged::Clean => Status::Ok,
            // FAIL, or on the host a WARN below its rate threshold.
            Judged::Bypassed => severity,
            Judged::NotObserved => Status::Info,
            Judged::Broken => Status::Warn,
        };
        let row = Check { rate, ..Check::fact(kind, name, status, fact) };
        match self {
            Observation::Seen(s) if scope == Scope::Host => {
                let data = Observed {
                    left_out: s.left_out.clone(),
                    fail_over: Some(s.fail_over),
                    groups: Some(by_program(&s.bypass)),
                    ..s.observed(&s.bypass)
                };
                row.seen(data)
            }
            Observation::Seen(s) => row.seen(s.observed(&s.bypass)),
            Observation::Unseen(_) => row,
        }
    }

    /// The host's `host_random` row: the processes whose getrandom
    /// syscalls the vDSO would have served, busiest first with their rate
    /// — INFO below [`RANDOM_HOT`] calls/s of one process, WARN at it (an
    /// older libc or runtime, or raw calls: `check -p PID` says which).
    /// OK when the window saw none (the row is there whenever the window
    /// ran, so two runs have the same rows); `None` when nothing was seen.
    pub fn host_random(&self) -> Option<Check> {
        let Observation::Seen(s) = self else { return None };
        let Some(busiest) = s.random_calls.first() else {
            let fact = HostRandom { seen: s.clone(), hot: false };
            let row = Check::fact(FindingKind::ObservedClean, "host_random", Status::Ok, fact);
            return Some(row.seen(s.observed(&s.random_calls)));
        };
        let hot = busiest.per_sec >= RANDOM_HOT;
        let status = if hot { Status::Warn } else { Status::Info };
        let fact = HostRandom { seen: s.clone(), hot };
        let row = Check::fact(FindingKind::RandomSyscallObserved, "host_random", status, fact);
        Some(row.at_rate(busiest.per_sec).seen(s.observed(&s.random_calls)))
    }

    /// `check -p`'s `process_random` row, judged once from the route the
    /// process's runtime takes (`route`, its row without the window) and
    /// what the window saw of `pid`: a runtime that would make the
    /// syscall, with none seen, is INFO (it is not warned about a call it
    /// did not make); observed calls are the finding, with their rate —
    /// WARN, FAIL over the rate where its runtime reads the vDSO (the
    /// calls are raw).
    pub fn judge_random(&self, route: Check, pid: i32) -> Check {
        let reads_vdso = route.kind == FindingKind::RandomVdso;
        let old_libc = route.kind == FindingKind::RandomSyscallOldLibc;
        let noted = |route: Check, note: Note| {
            let said = Said::Fact(std::sync::Arc::new(Noted { said: route.said.clone(), note }));
            Check { said, ..route }
        };
        let seen = match self {
            Observation::Seen(s) => s,
            Observation::Unseen(_) if old_libc => {
                return noted(Check { status: Status::Info, ..route }, Note::RandomNotObserved);
            }
            Observation::Unseen(_) => return route,
        };
        match seen.random_calls.iter().find(|b| b.pid == pid) {
            None if old_libc => {
                let row = noted(Check { status: Status::Info, ..route }, Note::NoRandomIn(seen.window));
                row.seen(seen.observed([]))
            }
            None => route,
            Some(b) => {
                let status = if reads_vdso && b.per_sec > seen.fail_over { Status::Fail } else { Status::Warn };
                let kind = FindingKind::RandomSyscallObserved;
                let note = Note::RandomObserved { window: seen.window, calls: b.clone() };
                noted(Check { kind, status, rate: Some(b.per_sec), ..route }, note).seen(seen.observed([b]))
            }
        }
    }

    /// How it counts in the audit.
    pub fn judged(&self) -> Judged {
        match self {
            Observation::Seen(s) if s.bypass.is_empty() => Judged::Clean,
            Observation::Seen(_) => Judged::Bypassed,
            Observation::Unseen(Unseen::Failed(_)) => Judged::Broken,
            Observation::Unseen(_) => Judged::NotObserved,
        }
    }

    /// The bypasses seen (none when nothing was observed).
    pub fn bypass(&self) -> &[Bypass] {
        match self {
            Observation::Seen(s) => &s.bypass,
            Observation::Unseen(_) => &[],
        }
    }

    /// Whether the observation proves clean a path the binary alone left
    /// unproven (static with an unknown runtime, 32-bit).
    pub fn clears_unproven(&self) -> bool {
        self.judged() == Judged::Clean
    }

    /// The binary row in the light of the observation: evidence clears a
    /// warning that only said the path was unproven, and contrary evidence
    /// is named on the row itself.
    pub fn judge_binary(&self, binary: Check, warn_kind: WarnKind) -> Check {
        let unproven = warn_kind == WarnKind::Unproven && matches!(binary.status, Status::Warn | Status::Info);
        let Some(note) = self.on_binary(unproven) else { return binary };
        let clears = matches!(note, Note::Clears(_));
        // Cleared: nothing left to do (render drops the hint).
        let said = Said::Fact(std::sync::Arc::new(Noted { said: binary.said.clone(), note }));
        match clears {
            true => Check { kind: FindingKind::ObservedClean, status: Status::Ok, said, ..binary },
            false => Check { said, ..binary },
        }
    }

    /// The clean window's row, as the binary row names it when it clears.
    fn cleared(&self) -> ObservedRow {
        ObservedRow { obs: self.clone(), scope: Scope::Process(0) }
    }

    /// What the observation adds to the row about the process's binary,
    /// whose verdict says what its code is expected to do: a clean window
    /// clears an `unproven` warning; a bypass is named there too, so the
    /// row never stands as the last word beside contrary evidence.
    pub fn on_binary(&self, unproven: bool) -> Option<Note> {
        match self.judged() {
            Judged::Clean if unproven => Some(Note::Clears(Box::new(self.cleared()))),
            Judged::Bypassed => Some(Note::Contradicts(self.bypass().iter().take(NAMED).cloned().collect())),
            _ => None,
        }
    }
}

/// `--trace`'s window: `None` off (`--trace 0`), the default when not given.
pub fn window(trace: Option<Duration>) -> Option<Duration> {
    match trace {
        None => Some(DEFAULT_WINDOW),
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
    }
}

/// Where the bypasses of process `pid` lead ([`super::lead`]): its call
/// sites, and what a [vsyscall] caller is when its calls are those.
fn lead_advice(bypass: &[Bypass], pid: i32) -> super::lead::Advice {
    advice(bypass.iter().filter(|b| b.pid == pid), super::lead::Lead::Pid(pid))
}

/// The advice on `bypass` (one process's, or one command's): `lead` to
/// the raw syscalls' sites, the first [vsyscall] caller's rebuild.
fn advice<'a>(bypass: impl Iterator<Item = &'a Bypass> + Clone, lead: super::lead::Lead) -> super::lead::Advice {
    use super::lead::{Advice, VsyscallCaller};
    let calls = bypass.clone().any(|b| !b.vsyscall);
    let caller = bypass.filter(|b| b.vsyscall).map(|b| VsyscallCaller { exe: b.exe.clone(), pid: b.pid }).next();
    Advice::of(lead, calls, caller)
}

/// getrandom syscalls a second from one process that make a hot loop:
/// the rate the getrandom alert fires at (deploy/vdsoctl.rules.yml).
pub const RANDOM_HOT: f64 = 1000.0;

/// Processes the host's getrandom row names before "and N more".
pub const HOST_NAMED: usize = 5;

/// Whether a row is getrandom's (judged on its own, never a clock's bypass).
fn is_random(r: &super::trace::CountRow) -> bool {
    use crate::arch::FnKind;
    match r.func.kind() {
        FnKind::Random => true,
        FnKind::Clock | FnKind::Cpu | FnKind::Futex => false,
    }
}

/// The processes of `bypass`, each with its calls a second summed,
/// busiest first.
/// The host's bypasses folded by program (its executable, its name when
/// never seen), as `trace --by exe` folds count rows: a churn of one
/// program's short-lived processes is one group, its counts summed.
pub fn by_program(bypass: &[Bypass]) -> super::group::Groups {
    use super::group::{fold, key_of, GroupBy, Grouping, Item};
    let items = bypass.iter().map(|b| Item {
        pid: b.pid,
        start: 0,
        key: key_of(GroupBy::Exe, &b.comm, &b.exe, None),
        syscall: b.call,
        vsyscall: b.vsyscall,
        clock: b.clock,
        random: None,
        count: b.count,
        per_sec: b.per_sec,
        cost: None,
    });
    fold(Grouping { by: GroupBy::Exe, top: None }, items)
}

pub fn busiest_pids(bypass: &[Bypass]) -> Vec<(i32, f64)> {
    let mut pids: Vec<(i32, f64)> = Vec::new();
    for b in bypass {
        match pids.iter_mut().find(|p| p.0 == b.pid) {
            Some(p) => p.1 += b.per_sec,
            None => pids.push((b.pid, b.per_sec)),
        }
    }
    pids.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    pids
}

/// The kind of a window's bypasses: [vsyscall] calls only, or syscalls.
fn bypass_kind(bypass: &[Bypass]) -> FindingKind {
    if bypass.iter().all(|b| b.vsyscall) {
        FindingKind::VsyscallCall
    } else {
        FindingKind::RawClockSyscall
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn seen(bypass: Vec<Bypass>) -> Observation {
        Observation::Seen(Seen {
            window: Duration::from_secs(1),
            bypass,
            random: 0,
            random_calls: Vec::new(),
            expected: 3,
            lost: 0,
            left_out: vec![],
            left_out_calls: 0,
            fail_over: HOST_FAIL_OVER,
        })
    }

    pub(crate) fn mono(pid: i32, per_sec: f64) -> Bypass {
        Bypass {
            pid,
            comm: Some("loop".into()),
            call: "clock_gettime",
            clock: Some(ClockRef::Id(1)),
            count: per_sec as u64,
            per_sec,
            vsyscall: false,
            exe: None,
        }
    }

    fn judge(o: &Observation, scope: Scope) -> (FindingKind, Status) {
        ObservedRow { obs: o.clone(), scope }.judge()
    }

    #[test]
    fn a_bypass_fails_with_its_rate() {
        let o = seen(vec![mono(42, 94_000.0)]);
        assert_eq!(o.judged(), Judged::Bypassed);
        assert_eq!(judge(&o, Scope::Process(42)), (FindingKind::RawClockSyscall, Status::Fail));
        let row = o.row("process_trace", Scope::Process(42));
        assert_eq!((row.kind, row.status, row.rate), (FindingKind::RawClockSyscall, Status::Fail, Some(94_000.0)));
        let mut v = mono(7, 10.0);
        (v.call, v.vsyscall) = ("time", true);
        assert_eq!(judge(&seen(vec![v]), Scope::Process(7)).0, FindingKind::VsyscallCall);
    }

    #[test]
    fn a_clean_window_is_info_and_clears_only_the_unproven() {
        let o = seen(vec![]);
        assert_eq!(judge(&o, Scope::Process(1)), (FindingKind::ObservedClean, Status::Info));
        assert_eq!(o.row("process_trace", Scope::Process(1)).status, Status::Ok);
        assert!(o.clears_unproven());
        assert!(matches!(o.on_binary(true), Some(Note::Clears(_))));
        assert_eq!(o.on_binary(false), None);
        assert_eq!(seen(vec![mono(1, 5.0)]).on_binary(false), Some(Note::Contradicts(vec![mono(1, 5.0)])));
    }

    #[test]
    fn nothing_observed_is_info_and_a_failed_window_warns() {
        let o = Observation::Unseen(Unseen::NoEngine("BPF refused".into()));
        assert_eq!(o.judged(), Judged::NotObserved);
        assert!(!o.clears_unproven());
        assert_eq!(judge(&o, Scope::Host), (FindingKind::NotObserved, Status::Info));
        let failed = Observation::Unseen(Unseen::Failed("gone".into()));
        assert_eq!(judge(&failed, Scope::Host), (FindingKind::TraceFailed, Status::Warn));
        assert_eq!(failed.row("host_trace", Scope::Host).status, Status::Warn);
        assert_eq!(
            o.caveat(Scope::Host),
            Some(Caveat { scope: Scope::Host, why: Unseen::NoEngine("BPF refused".into()) })
        );
        assert_eq!(seen(vec![]).caveat(Scope::Host), None);
        assert_eq!(Observation::Unseen(Unseen::NotYet).caveat(Scope::Host), None);
    }

    #[test]
    fn a_host_fails_only_over_its_rate() {
        assert_eq!(judge(&seen(vec![mono(42, 2.0)]), Scope::Host).1, Status::Warn);
        // The same two calls of one process, asked about with -p, fail.
        assert_eq!(judge(&seen(vec![mono(42, 2.0)]), Scope::Process(42)).1, Status::Fail);
        // Calls of one process add up: 60/s + 60/s is over 100/s.
        let mut b = mono(7, 60.0);
        b.clock = Some(ClockRef::Id(0));
        assert_eq!(judge(&seen(vec![mono(7, 60.0), b]), Scope::Host).1, Status::Fail);
        assert_eq!(judge(&seen(vec![mono(42, 100_000.0)]), Scope::Host).1, Status::Fail);
        // `check --fail-over 0`: any call fails the host.
        let Observation::Seen(mut strict) = seen(vec![mono(42, 0.5)]) else { unreachable!() };
        strict.fail_over = 0.0;
        assert_eq!(judge(&Observation::Seen(strict), Scope::Host).1, Status::Fail);
    }

    #[test]
    fn windows() {
        assert_eq!(window(None), Some(DEFAULT_WINDOW));
        assert_eq!(window(Some(Duration::ZERO)), None);
        assert_eq!(window(Some(Duration::from_millis(300))), Some(Duration::from_millis(300)));
    }

    #[test]
    fn a_command_bypass_fails() {
        let Observation::Seen(s) = seen(vec![mono(7, 20.0)]) else { unreachable!() };
        let row = s.command_row(&["x".into()]);
        assert_eq!(
            (row.name.as_str(), row.kind, row.status),
            ("command_trace", FindingKind::RawClockSyscall, Status::Fail)
        );
        let Observation::Seen(s) = seen(vec![]) else { unreachable!() };
        assert_eq!(s.command_row(&[]).status, Status::Ok);
    }

    /// `process_random` is judged once from the route and the window.
    #[test]
    fn the_random_route_is_judged_with_the_window() {
        let route = |kind| Check::new(kind, "process_random", Status::Warn, "r", None);
        let Observation::Seen(mut s) = seen(vec![]) else { unreachable!() };
        // An old libc that made no getrandom syscall: INFO.
        let quiet = Observation::Seen(s.clone()).judge_random(route(FindingKind::RandomSyscallOldLibc), 7);
        assert_eq!((quiet.kind, quiet.status), (FindingKind::RandomSyscallOldLibc, Status::Info));
        // A hot loop of raw calls where the runtime reads the vDSO: FAIL with its rate.
        let mut hot = mono(7, 298_455.0);
        hot.call = "getrandom";
        s.random_calls = vec![hot];
        let obs = Observation::Seen(s);
        let row = obs.judge_random(route(FindingKind::RandomVdso), 7);
        assert_eq!(
            (row.kind, row.status, row.rate),
            (FindingKind::RandomSyscallObserved, Status::Fail, Some(298_455.0))
        );
        let row = obs.judge_random(route(FindingKind::RandomSyscallOldLibc), 7);
        assert_eq!((row.kind, row.status), (FindingKind::RandomSyscallObserved, Status::Warn));
    }
}
