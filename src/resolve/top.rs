//! `top`'s arguments resolved: the interval's floor, the cgroups looked
//! up, the grouping — every usage error before sampling.

use super::trace::{cgroup_dir, MIN_INTERVAL};
use crate::cli::TopArgs;
use crate::error::{Error, Result};
use crate::measure::sample::TopRequest;
use crate::model::group::Grouping;
use crate::render::{Format, Output};
use std::time::Duration;

/// The interval of a `top` without `-d`: refreshed like top(1).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(2);

/// `top`: the sampling to run and how its reports are folded.
#[derive(Debug, Clone)]
pub struct TopJob {
    pub sample: TopRequest,
    pub grouping: Grouping,
}

pub(super) fn resolve(args: &TopArgs, out: &Output) -> Result<TopJob> {
    if let Some(every) = args.interval.filter(|i| *i < MIN_INTERVAL) {
        return Err(Error::Usage(format!(
            "--interval {} is below its floor of 100ms: each interval reads every sample and prints a report — use --interval 100ms or more (e.g. 1s)",
            crate::render::duration_text(every),
        )));
    }
    if args.cgroup.iter().any(|c| c.trim().is_empty()) {
        return Err(Error::Usage(
            "--cgroup wants a cgroup v2 path (as /proc/PID/cgroup's `0::` line shows it), got an empty one — to sample every process, leave --cgroup out".into(),
        ));
    }
    if args.cgroup.len() > crate::measure::trace::engines::bpf::MAX_CGROUPS {
        return Err(Error::Usage(format!(
            "--cgroup given {} times: at most {}",
            args.cgroup.len(),
            crate::measure::trace::engines::bpf::MAX_CGROUPS
        )));
    }
    let cgroups = args.cgroup.iter().map(|c| cgroup_dir(c)).collect::<Result<Vec<_>>>()?;
    // Without -d, a report every interval (a command: until it exits, one
    // report at its end unless --interval is given).
    let interval = match (args.interval, args.duration, args.command.is_empty()) {
        (Some(i), ..) => Some(i),
        (None, None, true) => Some(DEFAULT_INTERVAL),
        _ => None,
    };
    let sample = TopRequest {
        freq_hz: args.freq,
        pids: args.pid.clone(),
        cgroups,
        command: args.command.clone(),
        duration: args.duration,
        interval,
        command_stdout_to_stderr: out.format != Format::Table,
    };
    Ok(TopJob { sample, grouping: Grouping { by: args.by, top: Some(args.top as usize) } })
}
