//! The observation of a smoke command, worded: how `check -- CMD`'s
//! command ended ([`CommandEnd`], model/check.rs), the calls the engine
//! lost, and the auxiliary clocks it served by syscall — each made a
//! [`Check`] row here, once.

use crate::model::check::{Check, CommandEnd};
use crate::model::kind::Kind;
use crate::model::trace::{ExitStatus, TraceReport};
use crate::model::{ClockRef, Status};
use crate::words::{shell_words, thousands};

/// `command`: how the command `argv` ended, and what vdsoctl exits with.
pub fn command_row(argv: &[String], end: &CommandEnd) -> Check {
    let cmd = shell_words(argv);
    let (detail, hint) = match end {
        CommandEnd::TimedOut { limit, status } => (
            format!(
                "`{cmd}` ran past --timeout {limit}: stopped ({})",
                match status {
                    Some(ExitStatus::Signal(n)) => format!("killed by signal {n}"),
                    Some(ExitStatus::Code(c)) => format!("exited with status {c}"),
                    None => "it had not exited yet".into(),
                }
            ),
            Some(match status {
                // What `check` exits with: a failed command's own status, else a FAIL's 1.
                Some(s) if *s != ExitStatus::Code(0) => {
                    format!("the smoke command hung or is slow; vdsoctl exits with its status, {}", s.shell_code())
                }
                Some(_) => "what the command left running hung or is slow (it was killed); vdsoctl exits 1".into(),
                None => "the smoke command hung or is slow; vdsoctl exits 1".into(),
            }),
        ),
        CommandEnd::Passed => (format!("`{cmd}` exited with status 0"), None),
        CommandEnd::Failed(c) => (
            format!("`{cmd}` exited with status {c}"),
            Some(format!("the smoke command itself failed; vdsoctl exits with its status, {c}")),
        ),
        CommandEnd::Killed(n) => (
            format!("`{cmd}` was killed by signal {n}"),
            Some(format!("the smoke command itself failed; vdsoctl exits with {}", 128 + n)),
        ),
        CommandEnd::Interrupted => (format!("`{cmd}`: interrupted before it exited"), None),
    };
    Check::new(end.kind(), "command", end.status(), detail, hint.as_deref())
}

/// `command_trace_lost`, WARN: calls the engine ran but did not count, and
/// the verdict line's words for them.
pub fn lost_row(report: &TraceReport) -> (Check, String) {
    let (what, fix) = crate::model::trace::not_observed_in_full(report.engine, report.lost);
    let row = Check::new(Kind::NotObservedInFull, "command_trace_lost", Status::Warn, what, Some(&fix));
    (row, format!("{} clock syscalls uncounted", thousands(report.lost)))
}

/// `command_trace_withdrawn`, WARN: clock syscalls a signal withdrew while
/// they waited for the seccomp engine (each ran again, or failed EINTR).
pub fn withdrawn_row(report: &TraceReport) -> Check {
    let fact = crate::model::trace::TraceFact::Withdrawn { count: report.withdrawn };
    let fix = fact.hint();
    Check::new(Kind::CallsWithdrawnBySignal, "command_trace_withdrawn", Status::Warn, fact.to_string(), fix.as_deref())
}

/// `command_aux_clock:CLOCK_AUX+N`, INFO: auxiliary clock `id`'s `n`
/// syscalls, expected here, with how the vDSO would serve it.
pub fn aux_clock_row(report: &TraceReport, id: i64, n: u64) -> Check {
    let (why, fix) = crate::model::trace::aux_clock_expected(id, report.aux_clocks);
    let clock = ClockRef::Id(id).text();
    let detail = format!("{clock}: {} syscalls — expected: {why}", thousands(n));
    Check::new(Kind::AuxClockSyscall, format!("command_aux_clock:{clock}"), Status::Info, detail, Some(&fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_end_is_worded_as_it_always_was() {
        let argv = vec!["sleep".to_string(), "5".to_string()];
        let limit = Some("1 s".to_string());
        let row = command_row(&argv, &CommandEnd::of(Some(ExitStatus::Signal(15)), limit.clone()));
        assert_eq!(row.detail, "`sleep 5` ran past --timeout 1 s: stopped (killed by signal 15)");
        assert_eq!(row.hint.as_deref(), Some("the smoke command hung or is slow; vdsoctl exits with its status, 143"));
        let row = command_row(&argv, &CommandEnd::of(Some(ExitStatus::Code(0)), limit.clone()));
        assert!(row.hint.unwrap().starts_with("what the command left running"));
        let row = command_row(&argv, &CommandEnd::of(None, limit));
        assert!(row.detail.ends_with("stopped (it had not exited yet)"), "{}", row.detail);
        let row = command_row(&argv, &CommandEnd::Passed);
        assert_eq!(
            (row.kind, row.status, row.detail.as_str()),
            (Kind::CommandOk, Status::Ok, "`sleep 5` exited with status 0")
        );
        let row = command_row(&argv, &CommandEnd::Failed(3));
        assert_eq!(row.hint.as_deref(), Some("the smoke command itself failed; vdsoctl exits with its status, 3"));
        let row = command_row(&argv, &CommandEnd::Killed(9));
        assert_eq!(row.detail, "`sleep 5` was killed by signal 9");
        assert_eq!(row.hint.as_deref(), Some("the smoke command itself failed; vdsoctl exits with 137"));
        let row = command_row(&argv, &CommandEnd::Interrupted);
        assert_eq!((row.detail.as_str(), row.hint), ("`sleep 5`: interrupted before it exited", None));
    }

    /// Issue 40: model/check.rs's command verdict is a typed fact; its only
    /// words left are the baseline's `class machine` key (not this subject's).
    #[test]
    fn model_check_holds_no_prose_but_a_key() {
        let prose = crate::render::prose::prose(include_str!("../model/check.rs"));
        assert_eq!(prose, ["{} {}"], "prose in model/check.rs");
    }

    /// Issue 40: model/command.rs holds the smoke command's facts; its only
    /// literal with a space is the baseline's `[vsyscall] time` call key.
    #[test]
    fn model_command_holds_no_prose_but_a_key() {
        let prose = crate::render::prose::prose(include_str!("../model/command.rs"));
        assert_eq!(prose, ["[vsyscall] {}"], "prose in model/command.rs");
    }
}
