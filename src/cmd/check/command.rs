//! `check -- CMD`: the smoke command, run under trace and handed to its
//! judge (`model::command`).

use crate::error::Result;
use crate::inspect::host::KernelFacts;
use crate::measure::trace::session::{self, TraceRequest, TraceTarget};
use crate::model::check::CheckReport;
use crate::model::command::{command_report, random_programs, Run};
use crate::model::trace::TraceReport;
use std::ffi::OsString;

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
