//! `trace`: count clock syscalls and [vsyscall] emulations per process and
//! clock id, in the kernel (a BPF program aggregating in a map, or perf
//! tracepoint counters as the fallback — no ptrace stops), for `-p PID,..`,
//! the whole host (`-a`) or a command (`-- CMD`). Counting lives in
//! `measure::trace::engine`, the session (targets, the wait loop) in
//! `measure::trace::session`, the report in `model::trace`; here: the arguments
//! turned into a request, and the renderers.

use super::Outcome;
use crate::cli::TraceArgs;
use crate::error::{Error, Misuse, Result};
use crate::measure::trace::engine::Plan;
use crate::measure::trace::session::{self, TraceRequest};
pub use crate::model::trace::*;
use crate::render::{any_fail, emit, emit_line, Format, Output};
use std::time::Duration;

/// `vdsoctl trace`.
pub fn run(args: &TraceArgs, out: &Output) -> Result<Outcome> {
    validate(args)?;
    let cgroups = args.cgroup.iter().map(|c| crate::inspect::cgroup::resolve(c)).collect::<Result<Vec<_>>>()?;
    // A FAIL line means exit 1, in an interval's report or the summary's;
    // FAIL is only said above --fail-over.
    let mut interval_failed = false;
    let mut warned = WarnedOnce::default();
    let mut per_call = PerCall::default();
    // An interval's report that cannot be written (a full disk behind
    // stdout) stops neither the trace nor the command: said at the end.
    let mut late = Vec::new();
    let traced = session::collect(&request(args, out, cgroups), &mut |s, w| {
        let mut report = build(s, w, args.fail_over);
        per_call.apply(&mut report);
        interval_failed |= any_fail(&report.findings);
        warned.apply(&mut report, args.fail_over);
        if let (Err(e), true) = (emit_line(out, &report), late.is_empty()) {
            late.push(e);
        }
        Ok(())
    })?;
    let mut report = build(&traced.session, &traced.window(), args.fail_over);
    per_call.apply(&mut report);
    let crossed = interval_failed || any_fail(&report.findings);
    // The report first: a flame graph that cannot be written after the
    // trace loses neither the report nor the command's exit status.
    late.extend(if args.interval.is_some() { emit_line(out, &report) } else { emit(out, &report) }.err());
    if let (Some(path), Some(svg)) = (&args.flamegraph, report.flame_graph(out)) {
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
        let wanted = crate::model::cost::wanted(report);
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
        crate::model::cost::apply(report, &|need| self.0.get(&need).copied().flatten());
    }
}

/// The command line as a typed request.
fn request(args: &TraceArgs, out: &Output, cgroups: Vec<crate::inspect::cgroup::CgroupDir>) -> TraceRequest {
    TraceRequest {
        pids: args.pid.clone(),
        all: args.all,
        command: args.command.clone(),
        duration: args.duration,
        interval: args.interval,
        engine: args.engine,
        plan: Plan {
            all: args.all,
            per_thread: args.per_thread,
            sites: args.sites,
            native_only: args.native_only,
            no_split: args.no_split,
            command: !args.command.is_empty(),
            cgroups,
            stacks: args.stacks,
        },
        command_stdout_to_stderr: out.format != Format::Table,
        timeout: None,
        progress: Some(crate::render::trace_progress),
        sight: true,
    }
}

/// The shortest `--interval`: each interval snapshots every count and
/// prints a report, so a shorter one is all output (1ns wrote 168 MB in
/// 10 s) and could fall behind for ever.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Check what can fail with exit 2 before any tracing starts.
fn validate(args: &TraceArgs) -> Result<()> {
    if let Some(every) = args.interval.filter(|i| *i < MIN_INTERVAL) {
        return Err(Error::Usage(format!(
            "--interval {} is below its floor of 100ms: each interval reads every count and prints a report — use --interval 100ms or more (e.g. 1s)",
            crate::render::duration_text(every),
        )));
    }
    // An empty PATH would name the root cgroup: the whole host, silently.
    if args.cgroup.iter().any(|c| c.trim().is_empty()) {
        return Err(Error::Usage(
            "--cgroup wants a cgroup v2 path (as /proc/PID/cgroup's `0::` line shows it), got an empty one — to count every process, leave --cgroup out (`--cgroup /` says the whole host on purpose)".into(),
        ));
    }
    if !args.cgroup.is_empty() && !args.all {
        return Err(Error::Misuse(Misuse::CgroupNeedsAll));
    }
    if args.cgroup.len() > crate::measure::trace::engines::bpf::MAX_CGROUPS {
        return Err(Error::Usage(format!(
            "--cgroup given {} times: at most {}",
            args.cgroup.len(),
            crate::measure::trace::engines::bpf::MAX_CGROUPS
        )));
    }
    Ok(())
}
