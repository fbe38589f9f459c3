//! `top`'s arguments resolved: the interval's floor, the cgroups looked
//! up, the grouping — every usage error before sampling.

use super::trace::{cgroup_dir, check_interval_and_cgroups};
use crate::cli::TopArgs;
use crate::error::Result;
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
    check_interval_and_cgroups(args.interval, &args.cgroup, ("sample", "sample"))?;
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
