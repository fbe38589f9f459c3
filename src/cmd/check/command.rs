//! `check -- CMD`: the smoke command, run under trace and judged.

use crate::arch::FnKind;
use crate::error::Result;
use crate::measure::session::{self, TraceRequest};
use crate::model::check::{command_check, Check, CheckReport, CommandRun};
use crate::model::policy::{self, RandomSource};
use crate::model::trace::CountRow;
use crate::model::trace::{Target, TraceReport};
use crate::model::ClockRef;
use crate::model::Status;
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

/// The one place `check -- CMD` reaches the trace engine: run the command
/// under trace until it exits and hand back the summary.
/// Whether it was stopped at `timeout` comes with it.
fn trace_command(command: &[OsString], timeout: Option<std::time::Duration>) -> Result<(TraceReport, bool)> {
    // The command's stdout goes to stderr, so vdsoctl's stdout stays the report.
    let traced = session::collect(
        &TraceRequest {
            command: command.to_vec(),
            command_stdout_to_stderr: true,
            timeout,
            progress: Some(crate::render::trace_progress),
            ..Default::default()
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
    let name = |pid: i32, comm: &Option<String>| match comm {
        Some(c) => format!("pid {pid} ({c}) "),
        None => format!("pid {pid} "),
    };
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
            format!("in {secs}: {} — the vDSO is bypassed", bad.join(", ")),
            Some(&format!("`vdsoctl trace -- {}` shows rates per clock id; look for a raw syscall(), a static or old libc (`vdsoctl check --image /`), or LD_PRELOAD", crate::render::shell_words(&argv))),
        )
    });
    checks.push(random_check(&report, &argv, pid, &secs));
    if report.lost > 0 {
        checks.push(Check::new(
            "command_trace_lost",
            Status::Warn,
            format!("{} events were lost by the trace engine: counts are partial", report.lost),
            None,
        ));
    }
    let worst = Status::worst(checks.iter().map(|c| c.status));
    Ok(CheckReport {
        checks,
        status: worst,
        strict,
        command: Some(CommandRun { argv, pid, exit_status, timed_out }),
        ..CheckReport::default()
    })
}

/// Whether a row is getrandom's.
fn is_random(r: &CountRow) -> bool {
    r.func.kind() == FnKind::Random
}

/// `command_random`: the getrandom syscalls the vDSO would have served,
/// judged by where the command's runtime gets its random bytes (read from
/// its files: the process may be gone before anyone looks). Its own pid's
/// rows take its runtime; a child's runtime is not known.
fn random_check(report: &TraceReport, argv: &[String], pid: i32, secs: &str) -> Check {
    let runtime = argv.first().and_then(|a| crate::inspect::exe::command_runtime(std::path::Path::new(a)));
    let machine = crate::arch::HOST_MACHINE;
    let own = match &runtime {
        Some((kind, version)) => policy::random_source(policy::runtime_of(*kind), version.as_deref(), machine),
        None => RandomSource::Unknown,
    };
    let served: Vec<&CountRow> = report.counts.iter().filter(|r| is_random(r) && !r.expected).collect();
    let expected: u64 = report.counts.iter().filter(|r| is_random(r) && r.expected).map(|r| r.count).sum();
    if served.is_empty() {
        return Check::new(
            "command_random",
            Status::Ok,
            format!("in {secs}: no getrandom syscall the vDSO would serve here ({} expected: the vDSO's own key refills, start-up keys, flags it hands to the kernel)", thousands(expected)),
            None,
        );
    }
    let mut worst = Status::Ok;
    let mut lines = Vec::new();
    let mut whys: Vec<String> = Vec::new();
    for r in &served {
        let source = if r.pid == pid { own.clone() } else { RandomSource::Unknown };
        worst = Status::worst([worst, source.status()]);
        let who = match &r.comm {
            Some(c) => format!("pid {} ({c})", r.pid),
            None => format!("pid {}", r.pid),
        };
        lines.push(format!("{who} getrandom ×{}", thousands(r.count)));
        let why = source.why();
        if !whys.contains(&why) {
            whys.push(why);
        }
    }
    Check::new(
        "command_random",
        worst,
        format!("in {secs}: {} — random bytes the vDSO would serve here: {}", lines.join(", "), whys.join("; ")),
        Some(&format!("`vdsoctl trace --sites -- {}` names the code that calls it", crate::render::shell_words(argv))),
    )
}
