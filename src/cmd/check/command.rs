//! `check -- CMD`: the smoke command, run under trace; its facts
//! (`model::command`) judged and worded into rows (`render::observe`).

use crate::error::Result;
use crate::inspect::host::KernelFacts;
use crate::measure::trace::session::{self, TraceRequest, TraceTarget};
use crate::model::check::{CheckReport, CommandEnd, CommandRun};
use crate::model::command::{
    aux_clock_calls, calls_by_name, command_of, random_programs, served_random, Programs, Run,
};
use crate::model::observe::Observation;
use crate::model::random;
use crate::model::trace::TraceReport;
use crate::render::observe::{aux_clock_row, command_row, lost_row, seized_row, withdrawn_row};
use crate::words::{duration_text, shell_words};
use std::ffi::OsString;
use std::time::Duration;

/// The one place `check -- CMD` reaches the trace engine: run the command
/// under trace until it exits and hand back the summary.
/// Whether it was stopped at `timeout` comes with it.
fn trace_command(command: &[OsString], timeout: Option<std::time::Duration>) -> Result<(TraceReport, bool)> {
    // The command's stdout goes to stderr, so vdsoctl's stdout stays the report.
    // Each process is read while it lives, after its last exec: what its
    // getrandom calls are judged by is the program it ran, not the wrapper
    // (a script's `exec`, `env`, `sh -c`) the command line names.
    let traced = session::collect(
        &TraceRequest {
            command_stdout_to_stderr: true,
            sight: true,
            timeout,
            progress: Some(crate::render::trace_progress),
            ..TraceRequest::new(TraceTarget::Command(command.to_vec()))
        },
        &mut |_, _| Ok(()),
    )?;
    Ok((crate::model::trace::build(&traced.session, &traced.window(), None, &KernelFacts::read()), traced.timed_out))
}

/// Trace as `req` says (no intervals) and judge the whole window.
pub(super) fn trace(req: &TraceRequest) -> Result<TraceReport> {
    let traced = session::collect(req, &mut |_, _| Ok(()))?;
    Ok(crate::model::trace::build(&traced.session, &traced.window(), None, &KernelFacts::read()))
}

/// `check -- CMD ARGS`: the smoke command traced, then judged; each
/// process's program is read from what it ran (its executable and command
/// line after its last exec) for its getrandom route.
pub(super) fn gather_command(
    command: &[OsString],
    timeout: Option<std::time::Duration>,
    strict: bool,
) -> Result<CheckReport> {
    let (report, timed_out) = trace_command(command, timeout)?;
    let programs = random_programs(&report)
        .into_iter()
        .filter_map(|(exe, argv)| {
            let info = crate::inspect::exe::command_info(exe.as_deref(), &argv)?;
            Some(((exe, argv), info))
        })
        .collect();
    Ok(command_report(&report, Run { timeout, timed_out, strict }, &programs))
}

/// The audit of a command run under trace: `command` (its exit),
/// `command_trace` (its clock syscalls and [vsyscall] calls),
/// `command_aux_clock:*` (auxiliary clocks served by syscall),
/// `command_random` (its getrandom syscalls, each process's program read
/// by the caller from what it ran: [`Programs`]) and, when the engine
/// lost events, `command_trace_lost`.
fn command_report(report: &TraceReport, run: Run, programs: &Programs) -> CheckReport {
    let (argv, pid) = command_of(report);
    let exit_status = report.command.as_ref().and_then(|c| c.exit_status);
    let limit = run.timeout.filter(|_| run.timed_out).map(duration_text);
    let mut checks = vec![command_row(&argv, &CommandEnd::of(exit_status, limit))];
    checks.extend(seized_row(report));
    // A command's tree is all the tool's to judge: nothing left out.
    match Observation::of_report(report) {
        Observation::Seen(seen) => checks.push(seen.command_row(&argv)),
        Observation::Unseen(_) => {}
    }
    checks.extend(aux_clock_calls(report).into_iter().map(|(id, n)| aux_clock_row(report, id, n)));
    let secs = duration_text(Duration::from_nanos(report.duration_ns));
    let (served, expected) = served_random(report, programs);
    let judged = random::judge_command_random(&served);
    checks.push(crate::render::random::command_random_row(
        &judged,
        expected,
        &secs,
        &shell_words(&argv),
        report.duration_ns,
    ));
    // Calls a signal withdrew (seccomp engine): the program may have seen
    // EINTR it would not alone.
    if report.withdrawn > 0 {
        checks.push(withdrawn_row(report));
    }
    // A loss, any engine's: no verdict calls the tree clean.
    let not_observed_in_full = (report.lost > 0).then(|| {
        let (row, uncounted) = lost_row(report);
        checks.push(row);
        uncounted
    });
    CheckReport {
        calls: calls_by_name(report),
        command: Some(CommandRun { argv, pid, exit_status, timed_out: run.timed_out }),
        not_observed_in_full,
        ..CheckReport::judged(checks, run.strict)
    }
}
