//! The observation of a smoke command, worded: how `check -- CMD`'s
//! command ended ([`CommandEnd`], model/check.rs), the calls the engine
//! lost, and the auxiliary clocks it served by syscall — each made a
//! [`Check`] row here, once.

use crate::model::check::{Check, CommandEnd};
use crate::model::group::{key_of, GroupBy, GroupRow};
use crate::model::kind::Kind;
use crate::model::observe::{
    busiest_pids, Bypass, Caveat, CommandTrace, HostRandom, Note, Noted, Observation, ObservedRow, Scope, Seen, Unseen,
    COMMAND_NAMED, HOST_FAIL_OVER, HOST_NAMED, NAMED, RANDOM_HOT,
};
use crate::model::row::Worded;
use crate::model::trace::{ExitStatus, TraceReport};
use crate::model::{ClockRef, Status};
use crate::words::{duration_text, rate_text};
use crate::words::{shell_words, thousands};

/// `command`: how the command `argv` ended, and what vdsoctl exits with.
pub fn command_row(argv: &[String], end: &CommandEnd) -> Check {
    let cmd = shell_words(argv);
    let (detail, hint) = match end {
        CommandEnd::TimedOut { limit, status } => (
            format!(
                "`{cmd}` ran past --timeout {limit}: stopped ({})",
                match status {
                    Some(ExitStatus::Signal(n)) => format!("killed by signal {n}"),
                    Some(ExitStatus::Code(c)) => format!("exited with status {c}"),
                    None => "it had not exited yet".into(),
                }
            ),
            Some(match status {
                // What `check` exits with: a failed command's own status, else a FAIL's 1.
                Some(s) if *s != ExitStatus::Code(0) => {
                    format!("the smoke command hung or is slow; vdsoctl exits with its status, {}", s.shell_code())
                }
                Some(_) => "what the command left running hung or is slow (it was killed); vdsoctl exits 1".into(),
                None => "the smoke command hung or is slow; vdsoctl exits 1".into(),
            }),
        ),
        CommandEnd::Passed => (format!("`{cmd}` exited with status 0"), None),
        CommandEnd::Failed(c) => (
            format!("`{cmd}` exited with status {c}"),
            Some(format!("the smoke command itself failed; vdsoctl exits with its status, {c}")),
        ),
        CommandEnd::Killed(n) => (
            format!("`{cmd}` was killed by signal {n}"),
            Some(format!("the smoke command itself failed; vdsoctl exits with {}", 128 + n)),
        ),
        CommandEnd::Interrupted => (format!("`{cmd}`: interrupted before it exited"), None),
    };
    Check::new(end.kind(), "command", end.status(), detail, hint.as_deref())
}

/// `command_trace_lost`, WARN: calls the engine ran but did not count, and
/// the verdict line's words for them.
pub fn lost_row(report: &TraceReport) -> (Check, String) {
    let (what, fix) = crate::model::trace::not_observed_in_full(report.engine, report.lost);
    let row = Check::new(Kind::NotObservedInFull, "command_trace_lost", Status::Warn, what, Some(&fix));
    (row, format!("{} clock syscalls uncounted", thousands(report.lost)))
}

/// `command_trace_withdrawn`, WARN: clock syscalls a signal withdrew while
/// they waited for the seccomp engine (each ran again, or failed EINTR).
pub fn withdrawn_row(report: &TraceReport) -> Check {
    let fact = crate::model::trace::TraceFact::Withdrawn { count: report.withdrawn };
    let fix = fact.hint();
    Check::new(Kind::CallsWithdrawnBySignal, "command_trace_withdrawn", Status::Warn, fact.to_string(), fix.as_deref())
}

/// `command_auditor`, FAIL: a process of the tree traced vdsoctl or its
/// guardian (each such tracer's words, one after another).
pub fn seized_row(report: &TraceReport) -> Option<Check> {
    let facts: Vec<_> =
        report.auditor_seized.iter().cloned().map(crate::model::trace::TraceFact::AuditorSeized).collect();
    let first = facts.first()?;
    let what = facts.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
    Some(Check::new(Kind::AuditorPtraced, "command_auditor", Status::Fail, what, first.hint().as_deref()))
}

/// `command_aux_clock:CLOCK_AUX+N`, INFO: auxiliary clock `id`'s `n`
/// syscalls, expected here, with how the vDSO would serve it.
pub fn aux_clock_row(report: &TraceReport, id: i64, n: u64) -> Check {
    let (why, fix) = crate::model::trace::aux_clock_expected(id, report.aux_clocks);
    let clock = ClockRef::Id(id).text();
    let detail = format!("{clock}: {} syscalls — expected: {why}", thousands(n));
    // The calls its words count, as data (JSON `window_ns`, `calls`).
    let calls = report
        .counts
        .iter()
        .filter(|r| r.clock == Some(ClockRef::Id(id)))
        .map(|r| crate::model::row::CallSeen {
            pid: r.pid,
            comm: r.comm.clone(),
            function: r.syscall.to_string(),
            vsyscall: false,
            clock: r.clock,
            count: r.count,
            per_sec: r.per_sec,
            carried: None,
        })
        .collect();
    let observed = crate::model::row::Observed {
        window_ns: report.duration_ns,
        calls,
        left_out: Vec::new(),
        fail_over: None,
        groups: None,
    };
    Check::new(Kind::AuxClockSyscall, format!("command_aux_clock:{clock}"), Status::Info, detail, Some(&fix))
        .seen(observed)
}

// The observation window's rows (model/observe.rs's facts), worded.

/// What the trace engines need, said where nothing could be observed.
pub const NEEDS: &str = "needs root or CAP_BPF + CAP_PERFMON";

/// What a bypass row says its calls did, whatever its scope (as `trace`'s
/// findings and the clock checks say it).
const BYPASSED: &str = "the vDSO is bypassed";

/// `clock_gettime`, `[vsyscall] time`.
fn call_text(b: &Bypass) -> String {
    if b.vsyscall {
        format!("[vsyscall] {}", b.call)
    } else {
        b.call.to_string()
    }
}

/// `clock_gettime CLOCK_MONOTONIC 94.1k/s (×94,123)`.
fn bypass_text(b: &Bypass) -> String {
    calls_text(&call_text(b), b.clock, b.per_sec, b.count)
}

/// `CALL CLOCK RATE (×COUNT)`, a process's or a program's.
fn calls_text(call: &str, clock: Option<ClockRef>, per_sec: f64, count: u64) -> String {
    let clock = clock.map_or_else(String::new, |c| format!(" {}", c.text()));
    format!("{call}{clock} {} (×{})", rate_text(per_sec), thousands(count))
}

fn who(b: &Bypass) -> String {
    crate::render::process::pid_text(b.pid, b.comm.as_deref())
}

/// `pid 42 (loop) clock_gettime CLOCK_TAI ×5,000` (`check -- CMD`'s words:
/// a command's calls by count, `-` for a syscall without a clock id).
fn command_text(b: &Bypass) -> String {
    let clock = match b.clock {
        _ if b.vsyscall => String::new(),
        Some(c) => format!(" {}", c.text()),
        None => " -".into(),
    };
    format!("{} {}{clock} ×{}", who(b), call_text(b), thousands(b.count))
}

/// `; 1,000 getrandom syscalls the vDSO would serve`, or nothing.
fn random_text(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("; {} getrandom syscalls the vDSO would serve (an older libc or runtime, or raw calls)", thousands(n))
    }
}

/// `vdsoctl's own pid 4242 left out: 22,111 calls, ...`.
fn left_out_text(s: &Seen) -> String {
    let pids: Vec<String> = s.left_out.iter().map(i32::to_string).collect();
    let which = if pids.len() == 1 { "pid" } else { "pids" };
    format!(
        "vdsoctl's own {which} {} left out: {} calls, its clock bench makes syscalls on purpose",
        pids.join(","),
        thousands(s.left_out_calls)
    )
}

/// A clean window, whatever its scope (`whom`: ` by any process` for the
/// host's): what it did not see, never that the reads stayed in the vDSO.
fn clean_text(s: &Seen, whom: &str) -> String {
    format!(
        "observed {}: no clock syscall the vDSO serves here and no [vsyscall] call{whom} ({} expected clock syscalls, e.g. CPU-time clocks)",
        duration_text(s.window),
        thousands(s.expected)
    )
}

/// `100 calls/s, where the host check fails` (`--fail-over 0`: any
/// call). Never the word FAIL: that word is a FAIL line's alone (a WARN
/// row saying it read as a FAIL to scripts and to the suite).
fn threshold(rate: f64) -> String {
    if rate == HOST_FAIL_OVER {
        format!("{HOST_FAIL_OVER} calls/s, where the host check fails")
    } else {
        format!("--fail-over {rate} calls/s")
    }
}

/// The bypasses to name: one entry per call (`-p`) or per process, busiest
/// first, with its calls after it (host); and how many were left unnamed.
fn named_bypasses(bypass: &[Bypass], scope: Scope) -> (Vec<String>, usize) {
    let pids = busiest_pids(bypass);
    match scope {
        Scope::Process(_) => {
            (bypass.iter().take(NAMED).map(bypass_text).collect::<Vec<_>>(), bypass.len().saturating_sub(NAMED))
        }
        Scope::Host => {
            // By program (a churn of one program's short-lived processes is
            // one entry); a program of one process is named by its pid.
            let groups = crate::model::observe::by_program(bypass);
            let mut keys: Vec<&Option<String>> = Vec::new();
            for r in &groups.rows {
                if keys.last() != Some(&&r.key) {
                    keys.push(&r.key);
                }
            }
            let mut shown = 0;
            let named = keys
                .iter()
                .take(NAMED)
                .map(|key| {
                    let rows: Vec<&GroupRow> = groups.rows.iter().filter(|r| &r.key == *key).collect();
                    let members: Vec<&Bypass> =
                        bypass.iter().filter(|b| &key_of(GroupBy::Exe, &b.comm, &b.exe, None) == *key).collect();
                    let procs: std::collections::BTreeSet<i32> = members.iter().map(|b| b.pid).collect();
                    shown += procs.len();
                    let (head, texts): (String, Vec<String>) = match procs.len() {
                        1 => (who(members[0]), members.iter().take(3).map(|b| bypass_text(b)).collect()),
                        n => (
                            format!(
                                "{} ({} processes, the busiest pid {})",
                                key.as_deref().unwrap_or("-"),
                                thousands(n as u64),
                                pids.iter().find(|p| procs.contains(&p.0)).map_or(0, |p| p.0)
                            ),
                            rows.iter().take(3).map(|r| group_text(r)).collect(),
                        ),
                    };
                    let lines = if procs.len() == 1 { members.len() } else { rows.len() };
                    let more = if lines > 3 { format!(" and {} more", lines - 3) } else { String::new() };
                    format!("{head}: {}{more}", texts.join(", "))
                })
                .collect();
            (named, pids.len().saturating_sub(shown))
        }
    }
}

/// A program's calls of one function and clock, summed:
/// `clock_gettime CLOCK_MONOTONIC 35.7k/s (×35,700)`.
fn group_text(r: &GroupRow) -> String {
    let call = if r.vsyscall { format!("[vsyscall] {}", r.syscall) } else { r.syscall.to_string() };
    calls_text(&call, r.clock, r.per_sec, r.count)
}

fn unseen_words(why: &Unseen) -> (String, Option<String>) {
    match why {
        Unseen::Off => ("not observed (--trace 0)".into(), None),
        Unseen::NoEngine(reason) => (
            format!("not observed ({NEEDS}): {reason}"),
            Some("run as root, or grant CAP_BPF and CAP_PERFMON, to see the clock syscalls".into()),
        ),
        Unseen::Failed(reason) => (format!("not observed: {reason}"), None),
        Unseen::NotYet => ("not observed yet: the trace engine has not finished its first interval".into(), None),
    }
}

/// The row's sentence and remediation. A clean window says what it did
/// not see — the vDSO's own reads are invisible to any tracer, so it
/// never claims the process read clocks at all.
impl Worded for ObservedRow {
    fn words(&self) -> (String, Option<String>) {
        let s = match &self.obs {
            Observation::Unseen(why) => return unseen_words(why),
            Observation::Seen(s) => s,
        };
        let scope = self.scope;
        let secs = duration_text(s.window);
        let lost = if s.lost > 0 {
            format!("; {} events lost by the engine: counts are partial", thousands(s.lost))
        } else {
            String::new()
        };
        let left_out = !s.left_out.is_empty() && scope == Scope::Host;
        if s.bypass.is_empty() {
            let whom = if scope == Scope::Host { " by any process" } else { "" };
            let own = if left_out { format!("; {}", left_out_text(s)) } else { String::new() };
            return (format!("{}{}{lost}{own}", clean_text(s, whom), random_text(s.random)), None);
        }
        let (named, rest) = named_bypasses(&s.bypass, scope);
        let more = match (rest, scope) {
            (0, _) => String::new(),
            (n, Scope::Host) => format!("; and {n} more processes"),
            (n, Scope::Process(_)) => format!(" and {n} more"),
        };
        let own = if left_out { format!(" ({})", left_out_text(s)) } else { String::new() };
        let sep = if scope == Scope::Host { "; " } else { ", " };
        let gate = match (scope, self.judge().1) {
            (Scope::Host, Status::Warn) => format!("; none over {}", threshold(s.fail_over)),
            (Scope::Host, _) => format!("; over {}", threshold(s.fail_over)),
            (Scope::Process(_), _) => String::new(),
        };
        let detail = format!("observed {secs}: {}{more} — {BYPASSED}{gate}{lost}{own}", named.join(sep));
        (detail, Some(self.advice().to_string()))
    }

    fn next(&self) -> Option<Vec<String>> {
        match &self.obs {
            Observation::Seen(s) if !s.bypass.is_empty() => self.advice().command(),
            _ => None,
        }
    }
}

impl Worded for CommandTrace {
    fn words(&self) -> (String, Option<String>) {
        let s = &self.seen;
        if s.bypass.is_empty() {
            return (clean_text(s, ""), None);
        }
        let lines: Vec<String> = self.by_count().into_iter().map(command_text).collect();
        let named = crate::words::named_first(&lines, COMMAND_NAMED, || {
            let calls: u64 = s.bypass.iter().map(|b| b.count).sum();
            let pids: std::collections::BTreeSet<i32> = s.bypass.iter().map(|b| b.pid).collect();
            format!("{} calls from {} processes in all", thousands(calls), thousands(pids.len() as u64))
        });
        (format!("observed {}: {named} — {BYPASSED}", duration_text(s.window)), Some(self.advice().to_string()))
    }

    fn next(&self) -> Option<Vec<String>> {
        (!self.seen.bypass.is_empty()).then(|| self.advice().command()).flatten()
    }
}

impl Worded for HostRandom {
    fn words(&self) -> (String, Option<String>) {
        let s = &self.seen;
        let Some(busiest) = s.random_calls.first() else {
            return (format!("observed {}: no getrandom syscall the vDSO would serve", duration_text(s.window)), None);
        };
        let named: Vec<String> =
            s.random_calls.iter().take(HOST_NAMED).map(|b| format!("{} {}", who(b), bypass_text(b))).collect();
        let more = s.random_calls.len().saturating_sub(HOST_NAMED);
        let more = if more > 0 { format!("; and {more} more processes") } else { String::new() };
        let detail = format!(
            "observed {}: {}{more} — getrandom syscalls the vDSO would serve{}",
            duration_text(s.window),
            named.join("; "),
            if self.hot {
                format!(" (a hot loop: {} calls/s or more)", thousands(RANDOM_HOT as u64))
            } else {
                String::new()
            }
        );
        let hint = format!("`vdsoctl check -p {}` names its runtime and the release that reads the vDSO", busiest.pid);
        (detail, Some(hint))
    }
}

impl Worded for Noted {
    fn words(&self) -> (String, Option<String>) {
        let (detail, hint) = self.said.words();
        match &self.note {
            Note::Clears(row) => (format!("{detail}; cleared by the observation: {}", row.words().0), None),
            Note::Contradicts(calls) => {
                let clocks: Vec<String> =
                    calls.iter().map(|b| b.clock.map_or_else(|| call_text(b), |c| c.text())).collect();
                let why =
                    format!("but observed making syscalls the vDSO serves ({}): see process_trace", clocks.join(", "));
                (format!("{detail}; {why}"), hint)
            }
            Note::RandomNotObserved => (format!("{detail}; not observed"), hint),
            Note::NoRandomIn(window) => {
                (format!("{detail}; it made no getrandom syscall in the {} window", duration_text(*window)), hint)
            }
            Note::RandomObserved { window, calls } => {
                (format!("observed {}: {} — {detail}", duration_text(*window), bypass_text(calls)), hint)
            }
        }
    }
}

/// `host facts only; clock syscalls not observed: needs root or CAP_BPF +
/// CAP_PERFMON` (the verdict line's and JSON's `not_observed`).
impl std::fmt::Display for Caveat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let facts = match self.scope {
            Scope::Host => "host facts only",
            Scope::Process(_) => "the binary's facts only",
        };
        let why = match &self.why {
            Unseen::Off => " (--trace 0)".to_string(),
            Unseen::NoEngine(_) => format!(": {NEEDS}"),
            Unseen::Failed(why) => format!(": {why}"),
            Unseen::NotYet => String::new(),
        };
        write!(f, "{facts}; clock syscalls not observed{why}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::observe::tests::{mono, seen};
    use crate::model::row::Check;

    fn words(c: &Check) -> (String, Option<String>) {
        c.clone().into_words()
    }

    #[test]
    fn a_bypass_names_its_clock_and_rate() {
        let o = seen(vec![mono(42, 94_000.0)]);
        let (detail, hint) = words(&o.row("process_trace", Scope::Process(42)));
        assert!(detail.starts_with("observed 1.00 s: clock_gettime CLOCK_MONOTONIC 94"), "{detail}");
        assert!(detail.contains("(×94,000)"), "{detail}");
        assert!(hint.unwrap().starts_with("`vdsoctl trace --sites -p 42` names the code that makes them"));
        let (detail, hint) = words(&o.row("host_trace", Scope::Host));
        assert!(detail.contains("pid 42 (loop): clock_gettime CLOCK_MONOTONIC"), "{detail}");
        let hint = hint.unwrap();
        assert!(
            hint.starts_with("`vdsoctl check -p 42` audits the busiest; `vdsoctl trace --sites -p 42` names"),
            "{hint}"
        );
        // A [vsyscall] caller: what it is, no raw syscall() to look for.
        let mut v = mono(7, 10.0);
        (v.call, v.vsyscall) = ("time", true);
        let hint = words(&seen(vec![v]).row("process_trace", Scope::Process(7))).1.unwrap();
        assert!(hint.starts_with("legacy code calling the fixed [vsyscall] address"), "{hint}");
        assert!(hint.ends_with("`vdsoctl check -p 7` names the binary and function while it runs"), "{hint}");
        assert!(!hint.contains("raw syscall"), "{hint}");
    }

    #[test]
    fn a_clean_window_never_claims_the_vdso() {
        let (detail, hint) = words(&seen(vec![]).row("process_trace", Scope::Process(1)));
        assert!(!detail.contains("stayed") && !detail.contains("go through"), "{detail}");
        assert_eq!(hint, None);
        let binary = Check::new(Kind::StaticGlibcNoVdso, "process_binary", Status::Warn, "unproven", Some("run it"));
        let cleared = seen(vec![]).judge_binary(binary.clone(), crate::model::binary::WarnKind::Unproven);
        let (detail, hint) = words(&cleared);
        assert!(detail.starts_with("unproven; cleared by the observation: observed 1.00 s"), "{detail}");
        assert_eq!(hint, None);
        let seen_one = seen(vec![mono(1, 5.0)]);
        let contradicted = seen_one.judge_binary(binary, crate::model::binary::WarnKind::Unproven);
        assert_eq!(
            words(&contradicted),
            (
                "unproven; but observed making syscalls the vDSO serves (CLOCK_MONOTONIC): see process_trace".into(),
                Some("run it".into())
            )
        );
    }

    #[test]
    fn nothing_observed_is_said_so() {
        let o = Observation::Unseen(Unseen::NoEngine("BPF refused".into()));
        assert_eq!(
            words(&o.row("host_trace", Scope::Host)).0,
            "not observed (needs root or CAP_BPF + CAP_PERFMON): BPF refused"
        );
        let off = Observation::Unseen(Unseen::Off);
        assert_eq!(words(&off.row("host_trace", Scope::Host)).0, "not observed (--trace 0)");
        assert_eq!(
            o.caveat(Scope::Host).unwrap().to_string(),
            "host facts only; clock syscalls not observed: needs root or CAP_BPF + CAP_PERFMON"
        );
        assert_eq!(
            off.caveat(Scope::Host).unwrap().to_string(),
            "host facts only; clock syscalls not observed (--trace 0)"
        );
    }

    #[test]
    fn a_host_row_says_its_threshold() {
        let (detail, _) = words(&seen(vec![mono(42, 2.0)]).row("host_trace", Scope::Host));
        assert!(detail.contains("none over 100 calls/s"), "{detail}");
        assert!(!detail.split_whitespace().any(|w| w.trim_end_matches(':') == "FAIL"), "a WARN says no FAIL: {detail}");
        let Observation::Seen(mut strict) = seen(vec![mono(42, 0.5)]) else { unreachable!() };
        strict.fail_over = 0.0;
        let (detail, _) = words(&Observation::Seen(strict).row("host_trace", Scope::Host));
        assert!(detail.ends_with("; over --fail-over 0 calls/s"), "{detail}");
        let named = |p: i32| Bypass { comm: Some(format!("loop{p}")), ..mono(p, 100.0 * p as f64) };
        let o = seen((1..=8).map(named).collect());
        let (detail, _) = words(&o.row("host_trace", Scope::Host));
        assert!(detail.contains("; and 3 more processes"), "{detail}");
        assert!(detail.starts_with("observed 1.00 s: pid 8 (loop8)"), "busiest first: {detail}");
        // One program's eight processes: one entry, its calls summed.
        let o = seen((1..=8).map(|p| mono(p, 100.0 * p as f64)).collect());
        let (detail, _) = words(&o.row("host_trace", Scope::Host));
        assert!(
            detail.starts_with(
                "observed 1.00 s: loop (8 processes, the busiest pid 8): clock_gettime CLOCK_MONOTONIC 3,600/s (×3,600) —"
            ),
            "{detail}"
        );
    }

    #[test]
    fn a_command_names_calls_by_count_and_advises_once() {
        let mut v = mono(9, 500.0);
        (v.call, v.clock, v.vsyscall, v.exe) = ("time", None, true, Some("/opt/a/legacy".into()));
        let Observation::Seen(s) = seen(vec![v, mono(7, 20.0)]) else { unreachable!() };
        let (detail, hint) = words(&s.command_row(&["./run".into(), "a b".into()]));
        assert_eq!(
            detail,
            "observed 1.00 s: pid 7 (loop) clock_gettime CLOCK_MONOTONIC ×20, pid 9 (loop) [vsyscall] time ×500 — the vDSO is bypassed"
        );
        let hint = hint.unwrap();
        assert!(hint.starts_with("`vdsoctl trace --sites -- ./run 'a b'` names the code that makes them"), "{hint}");
        assert!(hint.contains("; the [vsyscall] calls are legacy code"), "{hint}");
        assert!(hint.ends_with("`vdsoctl check --image /opt/a` names the function that calls it"), "{hint}");
        let Observation::Seen(s) = seen((1..=7).map(|p| mono(p, 1.0)).collect()) else { unreachable!() };
        let (detail, _) = words(&s.command_row(&["x".into()]));
        assert!(detail.ends_with(", and 2 more (7 calls from 7 processes in all) — the vDSO is bypassed"), "{detail}");
    }

    #[test]
    fn the_random_route_says_the_window() {
        let route = Check::new(Kind::RandomSyscallOldLibc, "process_random", Status::Warn, "glibc 2.36", Some("h"));
        let (detail, hint) = words(&seen(vec![]).judge_random(route.clone(), 7));
        assert_eq!(
            (detail.as_str(), hint.as_deref()),
            ("glibc 2.36; it made no getrandom syscall in the 1.00 s window", Some("h"))
        );
        let Observation::Seen(mut s) = seen(vec![]) else { unreachable!() };
        let mut hot = mono(7, 2_000.0);
        (hot.call, hot.clock) = ("getrandom", None);
        s.random_calls = vec![hot];
        let (detail, _) = words(&Observation::Seen(s).judge_random(route, 7));
        assert!(detail.starts_with("observed 1.00 s: getrandom 2"), "{detail}");
        assert!(detail.ends_with("(×2,000) — glibc 2.36"), "{detail}");
    }

    #[test]
    fn a_command_end_is_worded_as_it_always_was() {
        let argv = vec!["sleep".to_string(), "5".to_string()];
        let limit = Some("1 s".to_string());
        let row = command_row(&argv, &CommandEnd::of(Some(ExitStatus::Signal(15)), limit.clone()));
        assert_eq!(row.detail(), "`sleep 5` ran past --timeout 1 s: stopped (killed by signal 15)");
        assert_eq!(
            row.hint().as_deref(),
            Some("the smoke command hung or is slow; vdsoctl exits with its status, 143")
        );
        let row = command_row(&argv, &CommandEnd::of(Some(ExitStatus::Code(0)), limit.clone()));
        assert!(row.hint().map(|h| h.into_owned()).unwrap().starts_with("what the command left running"));
        let row = command_row(&argv, &CommandEnd::of(None, limit));
        assert!(row.detail().ends_with("stopped (it had not exited yet)"), "{}", row.detail());
        let row = command_row(&argv, &CommandEnd::Passed);
        assert_eq!(
            (row.kind, row.status, &*row.detail()),
            (Kind::CommandOk, Status::Ok, "`sleep 5` exited with status 0")
        );
        let row = command_row(&argv, &CommandEnd::Failed(3));
        assert_eq!(row.hint().as_deref(), Some("the smoke command itself failed; vdsoctl exits with its status, 3"));
        let row = command_row(&argv, &CommandEnd::Killed(9));
        assert_eq!(row.detail(), "`sleep 5` was killed by signal 9");
        assert_eq!(row.hint().as_deref(), Some("the smoke command itself failed; vdsoctl exits with 137"));
        let row = command_row(&argv, &CommandEnd::Interrupted);
        assert_eq!(
            (&*row.detail(), row.hint().map(|h| h.into_owned())),
            ("`sleep 5`: interrupted before it exited", None)
        );
    }
}
