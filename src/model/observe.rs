//! What `check` saw a process (or the host) do with its clock reads in a
//! short window, and the policy that judges it: a clock the vDSO serves
//! here that still enters the kernel, or a [vsyscall] call, is a bypass
//! and fails; a clean window proves no bypass (it cannot see the reads the
//! vDSO serves, so it never says "stayed in the vDSO"); nothing observed —
//! no privileges, no engine, `--trace 0` — is said as such, never as OK.
//! `check -p`, the host `check` and `serve`'s audit all judge here.

use super::binary::WarnKind;
use super::row::Check;
use super::trace::TraceReport;
use super::{ClockRef, Finding, Status};
use crate::measure::trace::session::{Session, Window};
use crate::measure::trace::Tally;
use crate::model::kind::Kind as FindingKind;
use crate::progress::Kind;
use crate::progress::Target;
use crate::words::{duration_text, rate_text, thousands};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;
use std::time::Instant;

/// The window `check` observes for when `--trace` is not given.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);

/// What the trace engines need, said where nothing could be observed.
pub const NEEDS: &str = "needs root or CAP_BPF + CAP_PERFMON";

/// The host audit FAILs only when some process bypasses the vDSO faster
/// than this many calls a second (the sum of its calls), and WARNs below:
/// one raw call in a window (a `date` now and then) must not make a
/// fleet's `vdsoctl_check_failed` flap; a busy loop (100k/s) fails. Like
/// `trace --fail-over`, the rate must be over it, not at it.
pub const HOST_FAIL_OVER: f64 = 100.0;

/// How many bypassing (process, call) pairs a row names before "and N more".
const NAMED: usize = 5;

/// One call the vDSO should have served, seen entering the kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bypass {
    pub pid: i32,
    pub comm: Option<String>,
    /// `clock_gettime`, `gettimeofday`, ...; `[vsyscall] time` for an
    /// emulated call into the legacy page.
    pub call: String,
    /// The clock id, for calls that take one.
    pub clock: Option<ClockRef>,
    pub count: u64,
    #[serde(serialize_with = "crate::model::rate")]
    pub per_sec: f64,
    /// A call into the [vsyscall] page (emulated), not a syscall.
    #[serde(skip)]
    pub vsyscall: bool,
    /// The caller's executable, when the trace knows it (a [vsyscall]
    /// caller's is named in the advice).
    #[serde(skip)]
    pub exe: Option<String>,
}

impl Bypass {
    /// `clock_gettime CLOCK_MONOTONIC 94.1k/s (×94,123)`.
    fn text(&self) -> String {
        let clock = self.clock.map_or_else(String::new, |c| format!(" {}", c.text()));
        format!("{}{clock} {} (×{})", self.call, rate_text(self.per_sec), thousands(self.count))
    }

    fn who(&self) -> String {
        super::pid_text(self.pid, self.comm.as_deref())
    }

    /// `pid 42 (loop) clock_gettime CLOCK_TAI ×5,000` (`check -- CMD`'s words:
    /// a command's calls by count, `-` for a syscall without a clock id).
    fn command_text(&self) -> String {
        let clock = match self.clock {
            _ if self.vsyscall => String::new(),
            Some(c) => format!(" {}", c.text()),
            None => " -".into(),
        };
        format!("{} {}{clock} ×{}", self.who(), self.call, thousands(self.count))
    }
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

/// `; 1,000 getrandom syscalls the vDSO would serve`, or nothing.
fn random_text(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("; {} getrandom syscalls the vDSO would serve (an older libc or runtime, or raw calls)", thousands(n))
    }
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
const COMMAND_NAMED: usize = 5;

/// What a bypass row says its calls did, whatever its scope (as `trace`'s
/// findings and the clock checks say it).
const BYPASSED: &str = "the vDSO is bypassed";

impl Seen {
    /// `vdsoctl's own pid 4242 left out: 22,111 calls, ...`.
    fn left_out_text(&self) -> String {
        let pids: Vec<String> = self.left_out.iter().map(i32::to_string).collect();
        let which = if pids.len() == 1 { "pid" } else { "pids" };
        format!(
            "vdsoctl's own {which} {} left out: {} calls, its clock bench makes syscalls on purpose",
            pids.join(","),
            thousands(self.left_out_calls)
        )
    }

    /// A clean window, whatever its scope (`whom`: ` by any process` for the
    /// host's): what it did not see, never that the reads stayed in the vDSO.
    fn clean_text(&self, whom: &str) -> String {
        format!(
            "observed {}: no clock syscall the vDSO serves here and no [vsyscall] call{whom} ({} expected clock syscalls, e.g. CPU-time clocks)",
            duration_text(self.window),
            thousands(self.expected)
        )
    }

    /// `check -- CMD`'s `command_trace` row (`argv`: the command, to run
    /// again under `trace --sites`): any bypass fails, with each process's
    /// calls by count ([vsyscall] calls after the syscalls); a clean run
    /// passes, saying what it did not see.
    pub fn command_finding(&self, argv: &[String]) -> Finding {
        if self.bypass.is_empty() {
            return Finding::new(FindingKind::ObservedClean, Status::Ok, self.clean_text(""), None);
        }
        let mut by_count: Vec<&Bypass> = self.bypass.iter().collect();
        by_count.sort_by(|a, b| a.vsyscall.cmp(&b.vsyscall).then(b.count.cmp(&a.count)).then(a.pid.cmp(&b.pid)));
        let lines: Vec<String> = by_count.iter().map(|b| b.command_text()).collect();
        let named = crate::words::named_first(&lines, COMMAND_NAMED, || {
            let calls: u64 = self.bypass.iter().map(|b| b.count).sum();
            let pids: std::collections::BTreeSet<i32> = self.bypass.iter().map(|b| b.pid).collect();
            format!("{} calls from {} processes in all", thousands(calls), thousands(pids.len() as u64))
        });
        let lead = super::lead::Lead::Command(argv.to_vec());
        Finding::new(
            bypass_kind(&self.bypass),
            Status::Fail,
            format!("observed {}: {named} — {BYPASSED}", duration_text(self.window)),
            Some(advice(by_count.into_iter(), lead).to_string()),
        )
        .of_bypass()
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
                call: r.syscall.to_string(),
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
                call: format!("[vsyscall] {}", v.function),
                clock: None,
                count: v.count,
                per_sec: v.per_sec,
                vsyscall: true,
                exe: v.exe.clone().or_else(|| super::lead::command_file(&report.target, v.pid).map(str::to_string)),
            }))
            .collect();
        bypass.sort_by(|a, b| b.per_sec.total_cmp(&a.per_sec).then(a.pid.cmp(&b.pid)));
        let expected = report.counts.iter().filter(|r| r.expected && !is_random(r)).map(|r| r.count).sum();
        let random = report.counts.iter().filter(|r| !r.expected && is_random(r)).map(|r| r.count).sum();
        let mut random_calls: Vec<Bypass> = Vec::new();
        for r in report.counts.iter().filter(|r| !r.expected && is_random(r)) {
            match random_calls.iter_mut().find(|b| b.pid == r.pid) {
                Some(b) => {
                    b.count += r.count;
                    b.per_sec += r.per_sec;
                }
                None => random_calls.push(Bypass {
                    pid: r.pid,
                    comm: r.comm.clone(),
                    call: r.syscall.to_string(),
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
        };
        let window = Window {
            tally: &delta,
            elapsed: later.1.saturating_duration_since(earlier.1),
            start: earlier.1,
            wall_start: None,
            exited: &BTreeMap::new(),
            interrupted: false,
            bounds: None,
            seen: &Default::default(),
        };
        Observation::of_report(&super::trace::build(&session, &window, None, kernel))
    }

    /// What a verdict resting on this observation could not see, for its
    /// verdict line and JSON: `host facts only; clock syscalls not
    /// observed: needs root or CAP_BPF + CAP_PERFMON`. `None` when seen (or
    /// not yet: `serve` says that on its own row).
    pub fn caveat(&self, scope: Scope) -> Option<String> {
        let facts = match scope {
            Scope::Host => "host facts only",
            Scope::Process(_) => "the binary's facts only",
        };
        let why = match self {
            Observation::Seen(_) | Observation::Unseen(Unseen::NotYet) => return None,
            Observation::Unseen(Unseen::Off) => "(--trace 0)".to_string(),
            Observation::Unseen(Unseen::NoEngine(_)) => format!(": {NEEDS}"),
            Observation::Unseen(Unseen::Failed(why)) => format!(": {why}"),
        };
        Some(format!("{facts}; clock syscalls not observed{}{why}", if why.starts_with('(') { " " } else { "" }))
    }

    /// The observation row: a bypass fails, a clean window passes, nothing
    /// observed is INFO (never OK by inference).
    pub fn row(&self, name: &str, scope: Scope) -> Check {
        let obs = self;
        let f = obs.finding(scope);
        let rate = obs.bypass().first().map(|b| b.per_sec);
        let status = match obs.judged() {
            Judged::Clean => Status::Ok,
            // FAIL, or on the host a WARN below its rate threshold.
            Judged::Bypassed => f.severity,
            Judged::NotObserved => Status::Info,
            Judged::Broken => Status::Warn,
        };
        Check { rate, ..Check::new(f.kind, name, status, f.message, f.hint.as_deref()) }
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
            let detail = format!("observed {}: no getrandom syscall the vDSO would serve", duration_text(s.window));
            return Some(Check::new(FindingKind::ObservedClean, "host_random", Status::Ok, detail, None));
        };
        let named: Vec<String> =
            s.random_calls.iter().take(HOST_NAMED).map(|b| format!("{} {}", b.who(), b.text())).collect();
        let more = s.random_calls.len().saturating_sub(HOST_NAMED);
        let more = if more > 0 { format!("; and {more} more processes") } else { String::new() };
        let hot = busiest.per_sec >= RANDOM_HOT;
        let status = if hot { Status::Warn } else { Status::Info };
        let detail = format!(
            "observed {}: {}{more} — getrandom syscalls the vDSO would serve{}",
            duration_text(s.window),
            named.join("; "),
            if hot {
                format!(" (a hot loop: {} calls/s or more)", thousands(RANDOM_HOT as u64))
            } else {
                String::new()
            }
        );
        let hint = format!("`vdsoctl check -p {}` names its runtime and the release that reads the vDSO", busiest.pid);
        Some(
            Check::new(FindingKind::RandomSyscallObserved, "host_random", status, detail, Some(&hint))
                .at_rate(busiest.per_sec),
        )
    }

    /// `check -p`'s `process_random` row weighed with what the window saw
    /// of `pid`: a runtime that would make the syscall, with none seen, is
    /// INFO (it is not warned about a call it did not make); observed
    /// calls are the finding, with their rate — WARN, FAIL over the rate
    /// where its runtime reads the vDSO (the calls are raw).
    pub fn judge_random(&self, route: Check, pid: i32, reads_vdso: bool) -> Check {
        let seen = match self {
            Observation::Seen(s) => s,
            Observation::Unseen(_) if route.kind == FindingKind::RandomSyscallOldLibc => {
                return Check { status: Status::Info, detail: format!("{}; not observed", route.detail), ..route };
            }
            Observation::Unseen(_) => return route,
        };
        let window = duration_text(seen.window);
        match seen.random_calls.iter().find(|b| b.pid == pid) {
            None if route.kind == FindingKind::RandomSyscallOldLibc => Check {
                status: Status::Info,
                detail: format!("{}; it made no getrandom syscall in the {window} window", route.detail),
                ..route
            },
            None => route,
            Some(b) => {
                let status = if reads_vdso && b.per_sec > seen.fail_over { Status::Fail } else { Status::Warn };
                let detail = format!("observed {window}: {} — {}", b.text(), route.detail);
                Check { kind: FindingKind::RandomSyscallObserved, status, detail, rate: Some(b.per_sec), ..route }
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

    /// The row's sentence and remediation. A clean window says what it did
    /// not see — the vDSO's own reads are invisible to any tracer, so it
    /// never claims the process read clocks at all.
    pub fn finding(&self, scope: Scope) -> Finding {
        let s = match self {
            Observation::Unseen(why) => return unseen_finding(why),
            Observation::Seen(s) => s,
        };
        let secs = duration_text(s.window);
        let lost = if s.lost > 0 {
            format!("; {} events lost by the engine: counts are partial", thousands(s.lost))
        } else {
            String::new()
        };
        if s.bypass.is_empty() {
            let whom = match scope {
                Scope::Process(_) => "",
                Scope::Host => " by any process",
            };
            return Finding::new(
                FindingKind::ObservedClean,
                Status::Info,
                format!(
                    "{}{}{lost}{}",
                    s.clean_text(whom),
                    random_text(s.random),
                    if s.left_out.is_empty() || scope != Scope::Host {
                        String::new()
                    } else {
                        format!("; {}", s.left_out_text())
                    }
                ),
                None,
            );
        }
        let (pids, named, rest) = named_bypasses(&s.bypass, scope);
        let busiest = pids.first().map_or(0, |p| p.0);
        let more = match (rest, scope) {
            (0, _) => String::new(),
            (n, Scope::Host) => format!("; and {n} more processes"),
            (n, Scope::Process(_)) => format!(" and {n} more"),
        };
        let left_out = if s.left_out.is_empty() || scope != Scope::Host {
            String::new()
        } else {
            format!(" ({})", s.left_out_text())
        };
        let what = BYPASSED;
        let hint = match scope {
            Scope::Process(pid) => lead_advice(&s.bypass, pid),
            Scope::Host => super::lead::Advice::Host { busiest, advice: Box::new(lead_advice(&s.bypass, busiest)) },
        }
        .to_string();
        let sep = if scope == Scope::Host { "; " } else { ", " };
        let busiest = pids.first().map_or(0.0, |p| p.1);
        let (status, gate) = match scope {
            Scope::Host if busiest <= s.fail_over => (Status::Warn, format!("; none over {}", threshold(s.fail_over))),
            Scope::Host => (Status::Fail, format!("; over {}", threshold(s.fail_over))),
            Scope::Process(_) => (Status::Fail, String::new()),
        };
        Finding::new(
            bypass_kind(&s.bypass),
            status,
            format!("observed {secs}: {}{more} — {what}{gate}{lost}{left_out}", named.join(sep)),
            Some(hint),
        )
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
        match self.on_binary(unproven) {
            BinaryNote::Clears(why) => Check {
                kind: FindingKind::ObservedClean,
                status: Status::Ok,
                detail: format!("{}; {why}", binary.detail),
                hint: None,
                ..binary
            },
            BinaryNote::Contradicts(why) => Check { detail: format!("{}; {why}", binary.detail), ..binary },
            BinaryNote::None => binary,
        }
    }

    /// What the observation adds to the row about the process's binary,
    /// whose verdict says what its code is expected to do: a clean window
    /// clears an `unproven` warning; a bypass is named there too, so the
    /// row never stands as the last word beside contrary evidence.
    pub fn on_binary(&self, unproven: bool) -> BinaryNote {
        match self.judged() {
            Judged::Clean if unproven => {
                BinaryNote::Clears(format!("cleared by the observation: {}", self.finding(Scope::Process(0)).message))
            }
            Judged::Bypassed => {
                let clocks: Vec<String> = self
                    .bypass()
                    .iter()
                    .take(NAMED)
                    .map(|b| b.clock.map_or_else(|| b.call.clone(), |c| c.text()))
                    .collect();
                BinaryNote::Contradicts(format!(
                    "but observed making syscalls the vDSO serves ({}): see process_trace",
                    clocks.join(", ")
                ))
            }
            _ => BinaryNote::None,
        }
    }
}

/// What an observation says beside a binary's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinaryNote {
    None,
    /// The window was clean: an unproven warning is cleared, with this.
    Clears(String),
    /// The window saw bypasses the verdict did not expect.
    Contradicts(String),
}

fn unseen_finding(why: &Unseen) -> Finding {
    match why {
        Unseen::Off => Finding::new(FindingKind::NotObserved, Status::Info, "not observed (--trace 0)", None),
        Unseen::NoEngine(reason) => Finding::new(
            FindingKind::NotObserved,
            Status::Info,
            format!("not observed ({NEEDS}): {reason}"),
            Some("run as root, or grant CAP_BPF and CAP_PERFMON, to see the clock syscalls".into()),
        ),
        Unseen::Failed(reason) => {
            Finding::new(FindingKind::TraceFailed, Status::Warn, format!("not observed: {reason}"), None)
        }
        Unseen::NotYet => Finding::new(
            FindingKind::NotObserved,
            Status::Info,
            "not observed yet: the trace engine has not finished its first interval",
            None,
        ),
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
const HOST_NAMED: usize = 5;

/// Whether a row is getrandom's (judged on its own, never a clock's bypass).
fn is_random(r: &super::trace::CountRow) -> bool {
    use crate::arch::FnKind;
    match r.func.kind() {
        FnKind::Random => true,
        FnKind::Clock | FnKind::Cpu => false,
    }
}

/// `100 calls/s, the host's FAIL threshold` (`--fail-over 0`: any call).
fn threshold(rate: f64) -> String {
    if rate == HOST_FAIL_OVER {
        format!("{HOST_FAIL_OVER} calls/s, the host's FAIL threshold")
    } else {
        format!("--fail-over {rate} calls/s")
    }
}

/// The bypasses to name: one entry per call (`-p`) or per process, busiest
/// first, with its calls after it (host); the processes by rate, and how
/// many were left unnamed.
fn named_bypasses(bypass: &[Bypass], scope: Scope) -> (Vec<(i32, f64)>, Vec<String>, usize) {
    // One entry per process, busiest first, its calls after it.
    let mut pids: Vec<(i32, f64)> = Vec::new();
    for b in bypass {
        match pids.iter_mut().find(|p| p.0 == b.pid) {
            Some(p) => p.1 += b.per_sec,
            None => pids.push((b.pid, b.per_sec)),
        }
    }
    pids.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let (named, rest) = match scope {
        Scope::Process(_) => {
            (bypass.iter().take(NAMED).map(Bypass::text).collect::<Vec<_>>(), bypass.len().saturating_sub(NAMED))
        }
        Scope::Host => {
            let named = pids
                .iter()
                .take(NAMED)
                .map(|(pid, _)| {
                    let calls: Vec<&Bypass> = bypass.iter().filter(|b| b.pid == *pid).collect();
                    let texts: Vec<String> = calls.iter().take(3).map(|b| b.text()).collect();
                    let more = if calls.len() > 3 { format!(" and {} more", calls.len() - 3) } else { String::new() };
                    format!("{}: {}{more}", calls[0].who(), texts.join(", "))
                })
                .collect();
            (named, pids.len().saturating_sub(NAMED))
        }
    };
    (pids, named, rest)
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
mod tests {
    use super::*;

    fn seen(bypass: Vec<Bypass>) -> Observation {
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

    fn mono(pid: i32, per_sec: f64) -> Bypass {
        Bypass {
            pid,
            comm: Some("loop".into()),
            call: "clock_gettime".into(),
            clock: Some(ClockRef::Id(1)),
            count: per_sec as u64,
            per_sec,
            vsyscall: false,
            exe: None,
        }
    }

    #[test]
    fn a_bypass_fails_naming_clock_and_rate() {
        let o = seen(vec![mono(42, 94_000.0)]);
        assert_eq!(o.judged(), Judged::Bypassed);
        let f = o.finding(Scope::Process(42));
        assert_eq!(f.severity, Status::Fail);
        assert!(f.message.starts_with("observed 1.00 s: clock_gettime CLOCK_MONOTONIC 94"), "{}", f.message);
        assert!(f.message.contains("(×94,000)"), "{}", f.message);
        assert!(f.hint.unwrap().starts_with("`vdsoctl trace --sites -p 42` names the code that makes them"));
        let f = o.finding(Scope::Host);
        assert!(f.message.contains("pid 42 (loop): clock_gettime CLOCK_MONOTONIC"), "{}", f.message);
        let hint = f.hint.unwrap();
        assert!(
            hint.starts_with("`vdsoctl check -p 42` audits the busiest; `vdsoctl trace --sites -p 42` names"),
            "{hint}"
        );
        // A [vsyscall] caller: what it is, no raw syscall() to look for.
        let mut v = mono(7, 10.0);
        v.call = "[vsyscall] time".into();
        v.vsyscall = true;
        let hint = seen(vec![v]).finding(Scope::Process(7)).hint.unwrap();
        assert!(hint.starts_with("legacy code calling the fixed [vsyscall] address"), "{hint}");
        assert!(hint.ends_with("`vdsoctl check -p 7` names the binary and function while it runs"), "{hint}");
        assert!(!hint.contains("raw syscall"), "{hint}");
    }

    #[test]
    fn a_clean_window_never_claims_the_vdso() {
        let f = seen(vec![]).finding(Scope::Process(1));
        assert_eq!(f.severity, Status::Info);
        assert!(!f.message.contains("stayed") && !f.message.contains("go through"), "{}", f.message);
        assert!(seen(vec![]).clears_unproven());
        assert!(
            matches!(seen(vec![]).on_binary(true), BinaryNote::Clears(t) if t.starts_with("cleared by the observation: observed 1.00 s"))
        );
        assert_eq!(seen(vec![]).on_binary(false), BinaryNote::None);
        assert_eq!(
            seen(vec![mono(1, 5.0)]).on_binary(false),
            BinaryNote::Contradicts(
                "but observed making syscalls the vDSO serves (CLOCK_MONOTONIC): see process_trace".into()
            )
        );
    }

    #[test]
    fn nothing_observed_is_said_so() {
        let o = Observation::Unseen(Unseen::NoEngine("BPF refused".into()));
        assert_eq!(o.judged(), Judged::NotObserved);
        assert!(!o.clears_unproven());
        let f = o.finding(Scope::Host);
        assert_eq!(f.message, "not observed (needs root or CAP_BPF + CAP_PERFMON): BPF refused");
        assert_eq!(Observation::Unseen(Unseen::Off).finding(Scope::Host).message, "not observed (--trace 0)");
    }

    #[test]
    fn a_host_fails_only_over_its_rate() {
        let f = seen(vec![mono(42, 2.0)]).finding(Scope::Host);
        assert_eq!(f.severity, Status::Warn, "{}", f.message);
        assert!(f.message.contains("none over 100 calls/s"), "{}", f.message);
        // The same two calls of one process, asked about with -p, fail.
        assert_eq!(seen(vec![mono(42, 2.0)]).finding(Scope::Process(42)).severity, Status::Fail);
        // Calls of one process add up: 60/s + 60/s is over 100/s.
        let mut b = mono(7, 60.0);
        b.clock = Some(ClockRef::Id(0));
        let f = seen(vec![mono(7, 60.0), b]).finding(Scope::Host);
        assert_eq!(f.severity, Status::Fail, "{}", f.message);
        assert_eq!(seen(vec![mono(42, 100_000.0)]).finding(Scope::Host).severity, Status::Fail);
        // `check --fail-over 0`: any call fails the host.
        let Observation::Seen(mut strict) = seen(vec![mono(42, 0.5)]) else { unreachable!() };
        strict.fail_over = 0.0;
        let f = Observation::Seen(strict).finding(Scope::Host);
        assert_eq!(f.severity, Status::Fail, "{}", f.message);
        assert!(f.message.ends_with("; over --fail-over 0 calls/s"), "{}", f.message);
    }

    #[test]
    fn an_unseen_verdict_says_what_it_stands_on() {
        let o = Observation::Unseen(Unseen::NoEngine("EPERM".into()));
        assert_eq!(
            o.caveat(Scope::Host).as_deref(),
            Some("host facts only; clock syscalls not observed: needs root or CAP_BPF + CAP_PERFMON")
        );
        assert_eq!(
            Observation::Unseen(Unseen::Off).caveat(Scope::Host).as_deref(),
            Some("host facts only; clock syscalls not observed (--trace 0)")
        );
        assert_eq!(seen(vec![]).caveat(Scope::Host), None);
        assert_eq!(Observation::Unseen(Unseen::NotYet).caveat(Scope::Host), None);
    }

    #[test]
    fn windows() {
        assert_eq!(window(None), Some(DEFAULT_WINDOW));
        assert_eq!(window(Some(Duration::ZERO)), None);
        assert_eq!(window(Some(Duration::from_millis(300))), Some(Duration::from_millis(300)));
    }

    #[test]
    fn a_command_names_calls_by_count_and_advises_once() {
        let mut v = mono(9, 500.0);
        (v.call, v.clock, v.vsyscall, v.exe) = ("[vsyscall] time".into(), None, true, Some("/opt/a/legacy".into()));
        let Observation::Seen(s) = seen(vec![v, mono(7, 20.0)]) else { unreachable!() };
        let f = s.command_finding(&["./run".into(), "a b".into()]);
        assert_eq!((f.severity, f.bypass), (Status::Fail, true));
        assert_eq!(
            f.message,
            "observed 1.00 s: pid 7 (loop) clock_gettime CLOCK_MONOTONIC ×20, pid 9 (loop) [vsyscall] time ×500 — the vDSO is bypassed"
        );
        let hint = f.hint.unwrap();
        assert!(hint.starts_with("`vdsoctl trace --sites -- ./run 'a b'` names the code that makes them"), "{hint}");
        assert!(hint.contains("; the [vsyscall] calls are legacy code"), "{hint}");
        assert!(hint.ends_with("`vdsoctl check --image /opt/a` names the function that calls it"), "{hint}");
        let Observation::Seen(s) = seen((1..=7).map(|p| mono(p, 1.0)).collect()) else { unreachable!() };
        let f = s.command_finding(&["x".into()]);
        assert!(f.message.ends_with(", and 2 more (7 calls from 7 processes in all) — the vDSO is bypassed"), "{f:?}");
        let Observation::Seen(s) = seen(vec![]) else { unreachable!() };
        assert_eq!(s.command_finding(&[]).severity, Status::Ok);
    }

    #[test]
    fn many_bypasses_are_capped() {
        let o = seen((1..=8).map(|p| mono(p, 100.0 * p as f64)).collect());
        let f = o.finding(Scope::Host);
        assert!(f.message.contains("; and 3 more processes"), "{}", f.message);
        assert!(f.message.starts_with("observed 1.00 s: pid 8 (loop)"), "busiest first: {}", f.message);
    }
}
