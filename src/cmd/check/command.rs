//! `check -- CMD`: the smoke command, run under trace and judged.

use crate::arch::FnKind;
use crate::error::Result;
use crate::measure::trace::session::{self, TraceRequest, TraceTarget};
use crate::model::check::{command_check, Check, CheckReport, CommandRun};
use crate::model::random::{self, ServedRandom};
use crate::model::trace::CountRow;
use crate::model::trace::TraceReport;
use crate::model::ClockRef;
use crate::model::Status;
use crate::progress::Target;
use crate::render::{duration_text, thousands};
use std::ffi::OsString;

/// The calls of a trace the vDSO should have served, and the [vsyscall]
/// emulations, one line each: `who` before, `rate` after, `no_clock` for
/// a syscall without a clock id.
fn bypassed(
    report: &TraceReport,
    who: impl Fn(i32, &Option<String>) -> String,
    rate: impl Fn(&crate::model::trace::CountRow) -> String,
    no_clock: &str,
) -> Vec<String> {
    // getrandom is judged on its own (`random_check`).
    let calls = report.counts.iter().filter(|r| !r.expected && !is_random(r)).map(|r| {
        let clock = r.clock.map_or_else(|| no_clock.to_string(), ClockRef::text);
        format!("{}{} {clock} ×{}{}", who(r.pid, &r.comm), r.syscall, thousands(r.count), rate(r))
    });
    let vsyscall = report
        .vsyscall_emulations
        .iter()
        .map(|v| format!("{}[vsyscall] {} ×{}", who(v.pid, &v.comm), v.function, thousands(v.count)));
    calls.chain(vsyscall).collect()
}

/// Bypassing rows `command_trace` names (busiest first) before "and N more":
/// a tree of 1,500 processes made a 238 KB line; `trace -- CMD` lists each.
const NAMED: usize = 5;

/// The first [`NAMED`] of `bad`, then how many more, and the whole: calls
/// and processes.
fn bounded(bad: &[String], report: &TraceReport) -> String {
    crate::words::named_first(bad, NAMED, || {
        let rows = report.counts.iter().filter(|r| !r.expected && !is_random(r));
        let calls: u64 = rows.clone().map(|r| r.count).sum::<u64>()
            + report.vsyscall_emulations.iter().map(|v| v.count).sum::<u64>();
        let pids: std::collections::BTreeSet<i32> =
            rows.map(|r| r.pid).chain(report.vsyscall_emulations.iter().map(|v| v.pid)).collect();
        format!("{} calls from {} processes in all", thousands(calls), thousands(pids.len() as u64))
    })
}

/// Where the command's bypasses lead: `trace --sites -- CMD`, and what a
/// [vsyscall] caller is when its calls are those ([`crate::model::lead`]).
fn command_lead(report: &TraceReport, argv: &[String]) -> String {
    use crate::model::lead::{command_file, vsyscall_hint, Lead};
    let lead = Lead::Command(argv.to_vec());
    let calls = report.counts.iter().any(|r| !r.expected && !is_random(r));
    let vsyscall = report
        .vsyscall_emulations
        .first()
        .map(|v| vsyscall_hint(v.exe.as_deref().or(command_file(&report.target, v.pid)), v.pid));
    match (calls, vsyscall) {
        (_, None) => lead.syscall_hint(),
        (false, Some(v)) => v,
        (true, Some(v)) => format!("{}; the [vsyscall] calls are {v}", lead.syscall_hint()),
    }
}

/// The one place `check -- CMD` reaches the trace engine: run the command
/// under trace until it exits and hand back the summary.
/// Whether it was stopped at `timeout` comes with it.
fn trace_command(command: &[OsString], timeout: Option<std::time::Duration>) -> Result<(TraceReport, bool)> {
    // The command's stdout goes to stderr, so vdsoctl's stdout stays the report.
    let traced = session::collect(
        &TraceRequest {
            command_stdout_to_stderr: true,
            timeout,
            progress: Some(crate::render::trace_progress),
            ..TraceRequest::new(TraceTarget::Command(command.to_vec()))
        },
        &mut |_, _| Ok(()),
    )?;
    Ok((crate::model::trace::build(&traced.session, &traced.window(), None), traced.timed_out))
}

/// Trace as `req` says (no intervals) and judge the whole window.
pub(super) fn trace(req: &TraceRequest) -> Result<TraceReport> {
    let traced = session::collect(req, &mut |_, _| Ok(()))?;
    Ok(crate::model::trace::build(&traced.session, &traced.window(), None))
}

/// `check -- CMD ARGS`: the smoke command's clock syscalls and [vsyscall]
/// calls, per process and clock; its own failure fails the check.
pub(super) fn gather_command(
    command: &[OsString],
    timeout: Option<std::time::Duration>,
    strict: bool,
) -> Result<CheckReport> {
    let (report, timed_out) = trace_command(command, timeout)?;
    let (argv, pid) = match &report.target {
        Target::Command { argv, pid } => (argv.clone(), *pid),
        _ => (Vec::new(), 0),
    };
    let mut checks = Vec::new();
    let exit_status = report.command.as_ref().and_then(|c| c.exit_status);
    let limit = timeout.filter(|_| timed_out).map(duration_text);
    checks.push(command_check(&argv, exit_status, limit.as_deref()));
    let name = |pid: i32, comm: &Option<String>| format!("{} ", crate::model::pid_text(pid, comm.as_deref()));
    let bad = bypassed(&report, name, |_| String::new(), "-");
    let expected: u64 = report.counts.iter().filter(|r| r.expected && !is_random(r)).map(|r| r.count).sum();
    let secs = duration_text(std::time::Duration::from_nanos(report.duration_ns));
    checks.push(if bad.is_empty() {
        Check::new(
            "command_trace",
            Status::Ok,
            format!("in {secs}: no clock syscalls the vDSO serves here and no [vsyscall] calls ({} expected syscalls, e.g. CPU-time clocks)", thousands(expected)),
            None,
        )
    } else {
        Check::new(
            "command_trace",
            Status::Fail,
            format!("in {secs}: {} — the vDSO is bypassed", bounded(&bad, &report)),
            Some(&command_lead(&report, &argv)),
        )
    });
    checks.push(random_check(&report, &argv, pid, &secs));
    // A loss, any engine's: no verdict calls the tree clean.
    let not_observed_in_full = (report.lost > 0).then(|| {
        let (what, fix) = crate::model::trace::not_observed_in_full(report.engine, report.lost);
        checks.push(Check::new("command_trace_lost", Status::Warn, what, Some(&fix)));
        format!("{} clock syscalls uncounted", thousands(report.lost))
    });
    let worst = Status::worst(checks.iter().map(|c| c.status));
    Ok(CheckReport {
        checks,
        status: worst,
        strict,
        calls: calls_by_name(&report),
        command: Some(CommandRun { argv, pid, exit_status, timed_out }),
        not_observed_in_full,
        ..CheckReport::default()
    })
}

/// The trace summed per process name, function and clock (no pid: what a
/// baseline compares run to run).
fn calls_by_name(report: &TraceReport) -> Vec<crate::model::baseline::BaselineCall> {
    use crate::model::baseline::BaselineCall;
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

/// `command_random`: each process's served getrandom syscalls with the
/// route of the program it ran — its command line as first seen, or the
/// command's own for its pid — judged in `model::random`.
fn random_check(report: &TraceReport, argv: &[String], pid: i32, secs: &str) -> Check {
    let served: Vec<ServedRandom> = report
        .counts
        .iter()
        .filter(|r| is_random(r) && !r.expected)
        .map(|row| {
            let cmdline = row.cmdline.as_deref().or((row.pid == pid).then_some(argv));
            let route = cmdline.and_then(crate::inspect::exe::command_info).map(|info| random::random_route(&info));
            ServedRandom { row, route }
        })
        .collect();
    let expected: u64 = report.counts.iter().filter(|r| is_random(r) && r.expected).map(|r| r.count).sum();
    random::command_random_check(&served, expected, secs, &crate::render::shell_words(argv))
}
