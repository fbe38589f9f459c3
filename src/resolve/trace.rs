//! `trace`'s arguments resolved: the target stated once, the cgroups looked
//! up, the floors and limits checked — every usage error before tracing.

use crate::cli::TraceArgs;
use crate::error::{Error, Misuse, Result};
use crate::inspect::cgroup::{self, CgroupDir, Lookup};
use crate::measure::trace::engine::{Counting, Plan};
use crate::measure::trace::engines::bpf::MAX_CGROUPS;
use crate::measure::trace::session::{TraceRequest, TraceTarget};
use crate::model::group::Grouping;
use crate::render::{Format, Output};
use std::path::PathBuf;
use std::time::Duration;

/// `trace`: the session to run, and what the command does with its counts.
#[derive(Debug, Clone)]
pub struct TraceJob {
    /// Whom and how to count (with `--interval`, a report each interval).
    pub session: TraceRequest,
    /// `--fail-over RATE`: FAIL (exit 1) above this many syscalls/s.
    pub fail_over: Option<f64>,
    /// `--flamegraph FILE.svg` (only with `--stacks`).
    pub flamegraph: Option<PathBuf>,
    /// `--top N` / `--by KEY`: the rows folded into groups.
    pub grouping: Option<Grouping>,
}

/// The shortest `--interval`: each interval snapshots every count and
/// prints a report, so a shorter one is all output (1ns wrote 168 MB in
/// 10 s) and could fall behind for ever.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The command line's trace, typed; its usage errors in the order they were
/// always said: the interval, the cgroups, then the target.
pub(super) fn resolve(args: &TraceArgs, out: &Output) -> Result<TraceJob> {
    check_flags(args)?;
    let cgroups = args.cgroup.iter().map(|c| cgroup_dir(c)).collect::<Result<Vec<_>>>()?;
    let target = if !args.pid.is_empty() {
        TraceTarget::Pids(args.pid.clone())
    } else if args.all {
        TraceTarget::All
    } else if !args.command.is_empty() {
        TraceTarget::Command(args.command.clone())
    } else {
        return Err(Error::Usage("trace needs one of -p PID[,PID..], -a, or -- CMD ARGS..".into()));
    };
    let session = TraceRequest {
        duration: args.duration,
        interval: args.interval,
        engine: args.engine,
        plan: Plan {
            per_thread: args.per_thread,
            sites: args.sites,
            native_only: args.native_only,
            no_split: args.no_split,
            cgroups,
            stacks: args.stacks,
            channel: args.seccomp_channel,
            ..Plan::default()
        },
        command_stdout_to_stderr: out.format != Format::Table,
        progress: Some(crate::render::trace_progress),
        sight: true,
        ..TraceRequest::new(target)
    };
    // What the chosen engine can never honour, before any work (a pid that
    // does not exist is no reason to hide a usage error).
    Counting::refuse_misuse(session.engine, &session.plan, crate::arch::SITE_REGS.is_some())?;
    let grouping = (args.top.is_some() || args.by.is_some())
        .then(|| Grouping { by: args.by.unwrap_or_default(), top: args.top.map(|n| n as usize) });
    Ok(TraceJob { session, fail_over: args.fail_over, flamegraph: args.flamegraph.clone(), grouping })
}

/// What clap cannot check: `--interval`'s floor and `--cgroup`'s form,
/// target and count.
fn check_flags(args: &TraceArgs) -> Result<()> {
    check_interval_and_cgroups(args.interval, &args.cgroup, ("count", "count"))?;
    if !args.cgroup.is_empty() && !args.all {
        return Err(Error::Misuse(Misuse::CgroupNeedsAll));
    }
    Ok(())
}

/// `--interval`'s floor and `--cgroup`'s form and count, as `trace` and
/// `top` take them (`what`: what an interval reads, and what the command
/// does to every process).
pub(super) fn check_interval_and_cgroups(
    interval: Option<Duration>,
    cgroups: &[String],
    (read, verb): (&str, &str),
) -> Result<()> {
    if let Some(every) = interval.filter(|i| *i < MIN_INTERVAL) {
        return Err(Error::Usage(format!(
            "--interval {} is below its floor of 100ms: each interval reads every {} and prints a report — use --interval 100ms or more (e.g. 1s)",
            crate::render::duration_text(every),
            read,
        )));
    }
    // An empty PATH would name the root cgroup: the whole host, silently.
    if cgroups.iter().any(|c| c.trim().is_empty()) {
        return Err(Error::Usage(format!(
            "--cgroup wants a cgroup v2 path (as /proc/PID/cgroup's `0::` line shows it), got an empty one — to {verb} every process, leave --cgroup out (`--cgroup /` says the whole host on purpose)"
        )));
    }
    if cgroups.len() > MAX_CGROUPS {
        return Err(Error::Usage(format!("--cgroup given {} times: at most {MAX_CGROUPS}", cgroups.len())));
    }
    Ok(())
}

/// A `--cgroup PATH` looked up: a path that names no v2 cgroup is a usage
/// error; one that does not exist (3) or no v2 mount (4) are not.
pub(super) fn cgroup_dir(arg: &str) -> Result<CgroupDir> {
    match cgroup::lookup(arg)? {
        Lookup::Found(dir) => Ok(dir),
        Lookup::NotV2 { mount } => Err(Error::Usage(format!(
            "--cgroup {arg}: not a cgroup v2 path — give it as /proc/PID/cgroup's `0::` line shows it, or as a \
             directory under {}",
            mount.display()
        ))),
        Lookup::NotACgroup { dir } => {
            Err(Error::Usage(format!("--cgroup {arg}: {} is no cgroup directory", dir.display())))
        }
    }
}
