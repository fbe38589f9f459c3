//! `check -- CMD`'s facts: what the smoke command's processes ran and
//! called, read from its trace. Its rows are made in `cmd/check/command.rs`:
//! its clock bypasses folded and judged by [`super::observe`], as `check
//! -p`'s and the host's are; its getrandom calls by [`super::random`]; its
//! own exit by [`super::check::CommandEnd`], worded in `render/observe.rs`.

use super::baseline::BaselineCall;
use super::random::{self, ServedRandom};
use super::trace::{CountRow, TraceReport};
use super::ClockRef;
use crate::arch::FnKind;
use crate::inspect::exe::ExeInfo;
use crate::progress::Target;
use std::time::Duration;

/// How the command's trace ended: its `--timeout` and whether it was
/// stopped at it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Run {
    pub timeout: Option<Duration>,
    pub timed_out: bool,
    pub strict: bool,
}

/// The auxiliary clocks (`CLOCK_AUX+N`) the kernel served by syscall here
/// (disabled, or a kernel without them) — expected, not a bypass — and
/// how many calls each, by clock id.
pub fn aux_clock_calls(report: &TraceReport) -> std::collections::BTreeMap<i64, u64> {
    let mut by_clock: std::collections::BTreeMap<i64, u64> = Default::default();
    for r in report.counts.iter().filter(|r| r.expected) {
        if let Some(id) = r.clock.and_then(ClockRef::id).filter(|id| crate::arch::is_aux_clock(*id)) {
            super::add(by_clock.entry(id).or_insert(0), r.count);
        }
    }
    by_clock
}

/// The trace summed per process name, function and clock (no pid: what a
/// baseline compares run to run).
pub fn calls_by_name(report: &TraceReport) -> Vec<BaselineCall> {
    type Key = (String, String, bool, String, bool);
    let mut sums: std::collections::BTreeMap<Key, u64> = Default::default();
    let comm = |c: &Option<String>| c.clone().unwrap_or_else(|| "?".into());
    for r in &report.counts {
        let clock = r.clock.map_or_else(|| "-".to_string(), ClockRef::text);
        super::add(sums.entry((comm(&r.comm), r.syscall.to_string(), false, clock, r.expected)).or_insert(0), r.count);
    }
    for v in &report.vsyscall_emulations {
        super::add(sums.entry((comm(&v.comm), v.function.to_string(), true, "-".into(), false)).or_insert(0), v.count);
    }
    sums.into_iter()
        .map(|((process, function, vsyscall, clock, expected), count)| BaselineCall {
            process,
            function,
            vsyscall,
            clock,
            count,
            expected,
        })
        .collect()
}

/// Whether a row is getrandom's.
fn is_random(r: &CountRow) -> bool {
    match r.func.kind() {
        FnKind::Random => true,
        FnKind::Clock | FnKind::Cpu | FnKind::Futex => false,
    }
}

/// What a process ran, as the trace read it after its last exec: its
/// executable (`None`: never seen alive) and command line.
pub type Ran = (Option<String>, Vec<String>);

/// The programs of a command's processes, by what they ran, as read by
/// the caller (`inspect::exe::command_info`) for [`random_programs`].
pub type Programs = Vec<(Ran, ExeInfo)>;

/// The traced command's argv and pid (empty and 0 for another target).
pub fn command_of(report: &TraceReport) -> (Vec<String>, i32) {
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
/// 15 bytes, cut mid-letter if need be), as /proc's comm is read
/// (`words::bytes_text`). A path that holds a `\\` was escaped already
/// (a word that is not UTF-8): its cut is taken as it is.
fn exec_comm(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path).as_bytes();
    let cut = &name[..name.len().min(15)];
    if name.contains(&b'\\') {
        return String::from_utf8_lossy(cut).into_owned();
    }
    crate::words::bytes_text(cut)
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

/// Each process's served getrandom rows with the route of the program it
/// ran (read by the caller: [`Programs`]), and the expected calls' count:
/// what `command_random` judges in `model::random`.
pub fn served_random<'a>(report: &'a TraceReport, programs: &Programs) -> (Vec<ServedRandom<'a>>, u64) {
    let (argv, pid) = command_of(report);
    let program = |r: Ran| programs.iter().find(|(p, _)| *p == r).map(|(_, info)| info);
    let served = report
        .counts
        .iter()
        .filter(|r| is_random(r) && !r.expected)
        .map(|row| {
            let info = row_ran(row, &argv, pid).and_then(program);
            ServedRandom { row, route: info.map(random::random_route), carried: info.and_then(random::carried_random) }
        })
        .collect();
    let expected = super::sum(report.counts.iter().filter(|r| is_random(r) && r.expected).map(|r| r.count));
    (served, expected)
}
