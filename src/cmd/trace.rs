//! `trace`: count clock syscalls and [vsyscall] emulations per process and
//! clock id, in the kernel (a BPF program aggregating in a map, or perf
//! tracepoint counters as the fallback — no ptrace stops), for `-p PID,..`,
//! the whole host (`-a`) or a command (`-- CMD`). Counting lives in
//! `measure::trace::engine`, the session (targets, the wait loop) in
//! `measure::trace::session`, the report in `model::trace`, the request in
//! `resolve`; here: the session run and its reports emitted.

use super::Outcome;
use crate::error::Result;
use crate::inspect::host::KernelFacts;
use crate::measure::trace::session;
pub use crate::model::trace::*;
use crate::render::{emit, emit_line, Output};
use crate::resolve::TraceJob;

/// `vdsoctl trace`.
pub fn run(job: &TraceJob, out: &Output) -> Result<Outcome> {
    let fail_over = job.fail_over;
    // A FAIL line means exit 1, in an interval's report or the summary's;
    // FAIL is only said above --fail-over.
    let mut interval_failed = false;
    let mut warned = WarnedOnce::default();
    let mut per_call = PerCall::default();
    // An interval's report that cannot be written (a full disk behind
    // stdout) stops neither the trace nor the command: said at the end.
    let mut late = Vec::new();
    let traced = session::collect(&job.session, &mut |s, w| {
        let mut report = build(s, w, fail_over, &KernelFacts::read());
        per_call.apply(&mut report);
        if let Some(g) = job.grouping {
            report.group(g);
        }
        interval_failed |= report.any_fail();
        warned.apply(&mut report, fail_over);
        if let (Err(e), true) = (emit_line(out, &report), late.is_empty()) {
            late.push(e);
        }
        Ok(())
    })?;
    let mut report = build(&traced.session, &traced.window(), fail_over, &KernelFacts::read());
    per_call.apply(&mut report);
    if let Some(g) = job.grouping {
        report.group(g);
    }
    let crossed = interval_failed || report.any_fail();
    // The report first: a flame graph that cannot be written after the
    // trace loses neither the report nor the command's exit status.
    late.extend(if job.session.interval.is_some() { emit_line(out, &report) } else { emit(out, &report) }.err());
    if let (Some(path), Some(svg)) = (&job.flamegraph, report.flame_graph(out)) {
        late.extend(svg.and_then(|svg| crate::inspect::file::write_replacing(path, &svg)).err());
    }
    let failed = report.command.as_ref().and_then(|c| c.exit_status).filter(|s| *s != ExitStatus::Code(0));
    let outcome = match failed {
        Some(status) => Outcome::CommandFailed(status.shell_code().clamp(1, 255) as u8),
        None => Outcome::from_crossed(crossed),
    };
    outcome.despite(late)
}

/// What one raw syscall of each (function, clock) costs here, measured
/// once per run as `bench` measures its syscall path (a quick plan: ~0.5 ms
/// each), the first time a report needs it.
#[derive(Default)]
struct PerCall(std::collections::HashMap<crate::model::cost::Need, Option<f64>>);

impl PerCall {
    fn apply(&mut self, report: &mut TraceReport) {
        use crate::measure::bench::{self, Callers, Path, Target};
        use crate::measure::sys::call::VsyscallPage;
        use crate::model::cost::Via;
        let wanted = report.cost_needs();
        // vdsoctl's own [vsyscall] page times an emulation (`None` without one).
        let page = wanted.iter().any(|(via, ..)| *via == Via::Vsyscall).then(VsyscallPage::own).flatten();
        let callers = Callers::new(None, page);
        for need in wanted {
            self.0.entry(need).or_insert_with(|| {
                let (via, function, clock) = need;
                let target = Target { function, clock: clock.and_then(|c| i32::try_from(c).ok()) };
                let path = if via == Via::Vsyscall { Path::Vsyscall } else { Path::Syscall };
                bench::measure(&callers, target, path, bench::Plan::QUICK).map(|s| s.median)
            });
        }
        report.apply_costs(&|need| self.0.get(&need).copied().flatten());
    }
}
