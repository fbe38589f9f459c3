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
/// `command_random` (its getrandom syscalls, each process's program known
/// by `info_of` its command line) and, when the engine lost events,
/// `command_trace_lost`.
pub fn command_report(report: &TraceReport, run: Run, info_of: &dyn Fn(&[String]) -> Option<ExeInfo>) -> CheckReport {
    let (argv, pid) = match &report.target {
        Target::Command { argv, pid } => (argv.clone(), *pid),
        _ => (Vec::new(), 0),
    };
    let exit_status = report.command.as_ref().and_then(|c| c.exit_status);
    let limit = run.timeout.filter(|_| run.timed_out).map(duration_text);
    let mut checks = vec![command_check(&argv, exit_status, limit.as_deref())];
    // A command's tree is all the tool's to judge: nothing left out.
    match Observation::of_report(report, &|_| false) {
        Observation::Seen(seen) => checks.push(Check::of("command_trace".into(), seen.command_finding(&argv))),
        Observation::Unseen(_) => {}
    }
    let secs = duration_text(Duration::from_nanos(report.duration_ns));
    checks.push(random_check(report, &argv, pid, &secs, info_of));
    // A loss, any engine's: no verdict calls the tree clean.
    let not_observed_in_full = (report.lost > 0).then(|| {
        let (what, fix) = super::trace::not_observed_in_full(report.engine, report.lost);
        checks.push(Check::new("command_trace_lost", Status::Warn, what, Some(&fix)));
        format!("{} clock syscalls uncounted", thousands(report.lost))
    });
    CheckReport {
        calls: calls_by_name(report),
        command: Some(CommandRun { argv, pid, exit_status, timed_out: run.timed_out }),
        not_observed_in_full,
        ..CheckReport::judged(checks, run.strict)
    }
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

/// `command_random`: each process's served getrandom syscalls with the
/// route of the program it ran — its command line as first seen, or the
/// command's own for its pid — judged in `model::random`.
fn random_check(
    report: &TraceReport,
    argv: &[String],
    pid: i32,
    secs: &str,
    info_of: &dyn Fn(&[String]) -> Option<ExeInfo>,
) -> Check {
    let served: Vec<ServedRandom> = report
        .counts
        .iter()
        .filter(|r| is_random(r) && !r.expected)
        .map(|row| {
            let cmdline = row.cmdline.as_deref().or((row.pid == pid).then_some(argv));
            let route = cmdline.and_then(info_of).map(|info| random::random_route(&info));
            ServedRandom { row, route }
        })
        .collect();
    let expected: u64 = report.counts.iter().filter(|r| is_random(r) && r.expected).map(|r| r.count).sum();
    random::command_random_check(&served, expected, secs, &shell_words(argv))
}
