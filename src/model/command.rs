//! `check -- CMD`'s verdict: the smoke command's trace judged, row by row.
//! Its clock bypasses are folded and judged by [`super::observe`], as
//! `check -p`'s and the host's are; its getrandom calls by
//! [`super::random`]; its own exit by [`super::check::command_check`].

use super::baseline::BaselineCall;
use super::check::{command_check, Check, CheckReport, CommandRun};
use super::observe::Observation;
use super::random::{self, ServedRandom};
use super::trace::{CountRow, TraceReport};
use super::{ClockRef, Status};
use crate::arch::FnKind;
use crate::inspect::exe::ExeInfo;
use crate::model::kind::Kind;
use crate::progress::Target;
use crate::words::{duration_text, shell_words, thousands};
use std::time::Duration;

/// How the command's trace ended: its `--timeout` and whether it was
/// stopped at it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Run {
    pub timeout: Option<Duration>,
    pub timed_out: bool,
    pub strict: bool,
}

/// The audit of a command run under trace: `command` (its exit),
/// `command_trace` (its clock syscalls and [vsyscall] calls),
/// `command_random` (its getrandom syscalls, each process's program read
/// by the caller from what it ran: [`Programs`]) and, when the engine
/// lost events, `command_trace_lost`.
pub fn command_report(report: &TraceReport, run: Run, programs: &Programs) -> CheckReport {
    let (argv, pid) = command_of(report);
    let exit_status = report.command.as_ref().and_then(|c| c.exit_status);
    let limit = run.timeout.filter(|_| run.timed_out).map(duration_text);
    let mut checks = vec![command_check(&argv, exit_status, limit.as_deref())];
    // A command's tree is all the tool's to judge: nothing left out.
    match Observation::of_report(report) {
        Observation::Seen(seen) => checks.push(Check::of("command_trace".into(), seen.command_finding(&argv))),
        Observation::Unseen(_) => {}
    }
    checks.extend(aux_clock_checks(report));
    let secs = duration_text(Duration::from_nanos(report.duration_ns));
    checks.push(random_check(report, &argv, pid, &secs, programs));
    // A loss, any engine's: no verdict calls the tree clean.
    let not_observed_in_full = (report.lost > 0).then(|| {
        let (what, fix) = super::trace::not_observed_in_full(report.engine, report.lost);
        checks.push(Check::new(Kind::NotObservedInFull, "command_trace_lost", Status::Warn, what, Some(&fix)));
        format!("{} clock syscalls uncounted", thousands(report.lost))
    });
    CheckReport {
        calls: calls_by_name(report),
        command: Some(CommandRun { argv, pid, exit_status, timed_out: run.timed_out }),
        not_observed_in_full,
        ..CheckReport::judged(checks, run.strict)
    }
}

/// `command_aux_clock:CLOCK_AUX+N`, INFO: an auxiliary clock the kernel
/// serves by syscall here (disabled, or a kernel without them) — expected,
/// not a bypass — with how the vDSO would serve it.
fn aux_clock_checks(report: &TraceReport) -> Vec<Check> {
    let mut by_clock: std::collections::BTreeMap<i64, u64> = Default::default();
    for r in report.counts.iter().filter(|r| r.expected) {
        if let Some(id) = r.clock.and_then(ClockRef::id).filter(|id| crate::arch::is_aux_clock(*id)) {
            *by_clock.entry(id).or_insert(0) += r.count;
        }
    }
    let check = |(id, n): (i64, u64)| {
        let (why, fix) = super::trace::aux_clock_expected(id, report.aux_clocks);
        let clock = ClockRef::Id(id).text();
        let detail = format!("{clock}: {} syscalls — expected: {why}", thousands(n));
        Check::new(Kind::AuxClockSyscall, format!("command_aux_clock:{clock}"), Status::Info, detail, Some(&fix))
    };
    by_clock.into_iter().map(check).collect()
}

/// The trace summed per process name, function and clock (no pid: what a
/// baseline compares run to run).
fn calls_by_name(report: &TraceReport) -> Vec<BaselineCall> {
    let mut sums: std::collections::BTreeMap<(String, String, String, bool), u64> = Default::default();
    let comm = |c: &Option<String>| c.clone().unwrap_or_else(|| "?".into());
    for r in &report.counts {
        let clock = r.clock.map_or_else(|| "-".to_string(), ClockRef::text);
        *sums.entry((comm(&r.comm), r.syscall.to_string(), clock, r.expected)).or_insert(0) += r.count;
    }
    for v in &report.vsyscall_emulations {
        *sums.entry((comm(&v.comm), format!("[vsyscall] {}", v.function), "-".into(), false)).or_insert(0) += v.count;
    }
    sums.into_iter()
        .map(|((process, function, clock, expected), count)| BaselineCall { process, function, clock, count, expected })
        .collect()
}

/// Whether a row is getrandom's.
fn is_random(r: &CountRow) -> bool {
    r.func.kind() == FnKind::Random
}

/// What a process ran, as the trace read it after its last exec: its
/// executable (`None`: never seen alive) and command line.
pub type Ran = (Option<String>, Vec<String>);

/// The programs of a command's processes, by what they ran, as read by
/// the caller (`inspect::exe::command_info`) for [`random_programs`].
pub type Programs = Vec<(Ran, ExeInfo)>;

/// The traced command's argv and pid (empty and 0 for another target).
fn command_of(report: &TraceReport) -> (Vec<String>, i32) {
    match &report.target {
        Target::Command { argv, pid } => (argv.clone(), *pid),
        _ => (Vec::new(), 0),
    }
}

/// What the process of a served getrandom row ran: its executable and
/// command line as seen after its last exec (a wrapper's `exec`, `env`, `sh
/// -c`: the program, not the wrapper), or the command's own argv for its
/// pid when it was never seen alive and still bears the name that argv's
/// exec gave it (one that exec'd again unseen ran something else: unknown).
fn row_ran(row: &CountRow, argv: &[String], pid: i32) -> Option<Ran> {
    match &row.cmdline {
        Some(c) => Some((row.exe.clone(), c.clone())),
        None => (row.pid == pid && row.comm.as_ref().is_none_or(|c| argv.first().is_some_and(|a| exec_comm(a) == *c)))
            .then(|| (None, argv.to_vec())),
    }
}

/// The comm an exec of `path` gives (the kernel's: its file name, at most
/// 15 bytes).
fn exec_comm(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path).as_bytes();
    String::from_utf8_lossy(&name[..name.len().min(15)]).into_owned()
}

/// What the processes whose programs [`command_report`] judges ran: one
/// each, for the caller to read before judging.
pub fn random_programs(report: &TraceReport) -> Vec<Ran> {
    let (argv, pid) = command_of(report);
    let mut ran: Vec<Ran> = Vec::new();
    for row in report.counts.iter().filter(|r| is_random(r) && !r.expected) {
        if let Some(r) = row_ran(row, &argv, pid).filter(|r| !ran.contains(r)) {
            ran.push(r);
        }
    }
    ran
}

/// `command_random`: each process's served getrandom syscalls with the
/// route of the program it ran, judged in `model::random`.
fn random_check(report: &TraceReport, argv: &[String], pid: i32, secs: &str, programs: &Programs) -> Check {
    let program = |r: Ran| programs.iter().find(|(p, _)| *p == r).map(|(_, info)| random::random_route(info));
    let served: Vec<ServedRandom> = report
        .counts
        .iter()
        .filter(|r| is_random(r) && !r.expected)
        .map(|row| ServedRandom { row, route: row_ran(row, argv, pid).and_then(program) })
        .collect();
    let expected: u64 = report.counts.iter().filter(|r| is_random(r) && r.expected).map(|r| r.count).sum();
    random::command_random_check(&served, expected, secs, &shell_words(argv))
}
