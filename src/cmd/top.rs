//! `top`: sample every CPU (or a command) at a fixed rate and report, per
//! program, the share of its CPU in the vDSO and in fallback syscalls.
//! Sampling lives in `measure::sample`, the report in `model::top`, the
//! words in `render::top`; here: the windows turned into reports.

use super::Outcome;
use crate::error::Result;
use crate::measure::sample;
use crate::measure::trace::session::ExitStatus;
use crate::model::top::{build, Sight};
use crate::render::{emit, emit_line, Output};
use crate::resolve::TopJob;

/// `vdsoctl top`.
pub fn run(job: &TopJob, out: &Output) -> Result<Outcome> {
    let req = &job.sample;
    let mut exit = None;
    let refresh = req.interval.is_some() && out.stdout_tty && out.format == crate::render::Format::Table;
    sample::run(req, &mut |w| {
        let sight = if w.sees_kernel { Sight::Full } else { Sight::UserOnly };
        let mut report = build(w.processes.clone(), job.grouping, w.seconds, req.freq_hz, sight);
        report.exit_status = w.exit_status;
        report.interrupted = w.interrupted;
        (report.monotonic_start_ns, report.monotonic_end_ns) = w.monotonic_ns;
        exit = w.exit_status;
        if refresh && !w.last {
            crate::render::clear_screen();
        }
        if req.interval.is_some() {
            emit_line(out, &report)
        } else {
            emit(out, &report)
        }
    })?;
    Ok(match exit.filter(|s| *s != ExitStatus::Code(0)) {
        Some(status) => Outcome::CommandFailed(status.shell_code().clamp(1, 255) as u8),
        None => Outcome::Clean,
    })
}
