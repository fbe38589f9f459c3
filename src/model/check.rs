//! The audit's report: one check's result, the image's binaries, the
//! command run, and the audit they make — built by `check` and `serve`,
//! rendered by the render layer.

use super::trace::ExitStatus;
use super::{ProcessRef, Status};
use crate::model::bench::BenchReport;
use crate::model::binary::{BinaryFacts, BinaryFinding};
use crate::model::gate::{Raise, Waiver};
use crate::model::kind::Kind;
use crate::model::observe::{Judged, Observation, Scope};
use crate::model::random::RandomRoute;
use crate::words::shell_words;
use serde::Serialize;

/// One check's result (DESIGN keys: name, kind, status, detail, hint,
/// waived, raised).
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    /// What it found, by its stable id (doc/FINDINGS.md).
    pub kind: Kind,
    pub status: Status,
    pub detail: String,
    /// The remediation; `null` when there is nothing to do.
    pub hint: Option<String>,
    /// The selection that made a WARN or FAIL INFO (`null`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waived: Option<Waiver>,
    /// The selection that made it FAIL (`null`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raised: Option<Raise>,
}

impl Check {
    /// A check from a finding of the policy: info passes, warn and fail stay.
    pub(crate) fn of(name: String, f: crate::model::Finding) -> Check {
        let status = match f.severity {
            Status::Info => Status::Ok,
            s => s,
        };
        Check::new(f.kind, name, status, f.message, f.hint.as_deref())
    }

    /// The observation row: a bypass fails, a clean window passes, nothing
    /// observed is INFO (never OK by inference).
    pub fn observed(name: &str, obs: &Observation, scope: Scope) -> Check {
        let f = obs.finding(scope);
        let status = match obs.judged() {
            Judged::Clean => Status::Ok,
            // FAIL, or on the host a WARN below its rate threshold.
            Judged::Bypassed => f.severity,
            Judged::NotObserved => Status::Info,
            Judged::Broken => Status::Warn,
        };
        Check::new(f.kind, name, status, f.message, f.hint.as_deref())
    }

    /// A check of `kind` with a hint that is ours.
    pub(crate) fn new(
        kind: Kind,
        name: impl Into<String>,
        status: Status,
        detail: impl Into<String>,
        hint: Option<&str>,
    ) -> Check {
        Check {
            name: name.into(),
            kind,
            status,
            detail: detail.into(),
            hint: hint.map(str::to_string),
            waived: None,
            raised: None,
        }
    }
}

/// The audit (DESIGN keys: checks, binaries with --image, status).
#[derive(Debug, Default, Serialize)]
pub struct CheckReport {
    /// `-p`: the process audited (its `process_*` checks carry a `pid`
    /// label in Prometheus).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRef>,
    /// `-p`: the facts about its executable its verdict stands on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<BinaryFacts>,
    pub checks: Vec<Check>,
    /// `--image`: every ELF program and library, failures first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binaries: Option<Vec<BinaryRow>>,
    /// `--image`: what the walk covered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSummary>,
    /// `-- CMD`: the command and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandRun>,
    /// `--baseline`: what changed since the baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<crate::model::baseline::BaselineDiff>,
    /// `--save-baseline`/`--baseline`: each binary's SHA-256, by image path.
    #[serde(skip)]
    pub hashes: std::collections::BTreeMap<String, String>,
    /// `-- CMD`: the calls counted, per process name, function and clock
    /// (what a baseline keeps of the trace).
    #[serde(skip)]
    pub calls: Vec<crate::model::baseline::BaselineCall>,
    /// `-- CMD`: calls ran that the engine did not count (`lost`): what
    /// the verdict line says after its status; JSON `not_observed_in_full`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_observed_in_full: Option<String>,
    /// The worst status among the checks (SKIP counts as OK).
    pub status: Status,
    /// Whether `--strict` made WARN fail the audit.
    pub strict: bool,
    /// What the verdict could not stand on (the clock syscalls, when no
    /// engine could observe them): said on the verdict line and in JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_observed: Option<String>,
    /// `serve` before its first window: the audit's verdict is not known
    /// yet unless the host facts already fail, so no `check_failed 0`.
    #[serde(skip)]
    pub pending: bool,
    /// The quick bench behind the clock checks (its costs go to Prometheus).
    #[serde(skip)]
    pub bench: Option<BenchReport>,
    /// `--quiet`: the table shows only rows that are not OK (JSON keeps all).
    #[serde(skip)]
    pub quiet: bool,
}

impl CheckReport {
    /// A report of `checks` judged: its status the worst of them (SKIP and
    /// INFO count as OK), and of `binaries` with `--image`.
    pub fn judged(checks: Vec<Check>, strict: bool) -> CheckReport {
        CheckReport::judged_with(checks, None, strict)
    }

    /// [`CheckReport::judged`] with an image's binaries, failures first.
    pub fn judged_with(checks: Vec<Check>, binaries: Option<Vec<BinaryRow>>, strict: bool) -> CheckReport {
        let mut binaries = binaries;
        if let Some(rows) = &mut binaries {
            rows.sort_by(|a, b| b.status.cmp(&a.status).then_with(|| a.path.cmp(&b.path)));
        }
        let rows = binaries.iter().flatten().map(|b| b.status);
        let status = Status::worst(rows.chain(checks.iter().map(|c| c.status)));
        CheckReport { checks, binaries, status, strict, ..CheckReport::default() }
    }
}

/// One audited file of an image (DESIGN keys: its facts as flat keys, as
/// they always were, and as one typed `binary` object, as `check -p` has them).
#[derive(Debug, Clone)]
pub struct BinaryRow {
    pub path: String,
    pub binary: BinaryFacts,
    /// The kind of its verdict's reason.
    pub kind: Kind,
    pub status: Status,
    pub detail: String,
    /// Worded for this file (a command to run names it).
    pub hint: Option<String>,
    /// What its runtime does for random bytes (JSON `random`).
    pub random: RandomRoute,
    /// Each finding behind the verdict, gated.
    pub findings: Vec<BinaryFinding>,
}

impl Serialize for BinaryRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            path: &'a str,
            #[serde(flatten)]
            facts: &'a BinaryFacts,
            binary: &'a BinaryFacts,
            kind: Kind,
            status: Status,
            detail: &'a str,
            hint: Option<&'a str>,
            random: &'a RandomRoute,
            findings: &'a [BinaryFinding],
        }
        Wire {
            path: &self.path,
            facts: &self.binary,
            binary: &self.binary,
            kind: self.kind,
            status: self.status,
            detail: &self.detail,
            hint: self.hint.as_deref(),
            random: &self.random,
            findings: &self.findings,
        }
        .serialize(s)
    }
}

/// What the image walk covered.
#[derive(Debug, Clone, Serialize)]
pub struct ImageSummary {
    pub root: String,
    /// What ROOT is: `directory`, `docker-archive`, `oci-archive`, `oci-layout`.
    pub format: &'static str,
    /// Layers applied (0 for a directory).
    pub layers: usize,
    /// Directory entries looked at.
    pub entries: u64,
    /// Directories not entered (other filesystems, /proc /sys /dev, too deep).
    pub skipped: Vec<String>,
    /// What could not be read (directories not listed, files not opened,
    /// ELF files that did not parse), with why.
    pub unreadable: Vec<(String, String)>,
    /// The walk stopped at its entry cap.
    pub truncated: bool,
    /// vdsoctl's own executable, left out (its `bench` calls [vsyscall] on purpose).
    pub excluded: Vec<String>,
}

/// How `check -- CMD` ran the command.
#[derive(Debug, Clone, Serialize)]
pub struct CommandRun {
    pub argv: Vec<String>,
    pub pid: i32,
    pub exit_status: Option<ExitStatus>,
    /// Stopped at `--timeout`.
    pub timed_out: bool,
}

/// How `check -- CMD`'s command ended, judged: status 0 passes; a failure,
/// a signal, an interruption or `--timeout` (`limit`, worded) fails.
pub fn command_check(argv: &[String], exit_status: Option<ExitStatus>, limit: Option<&str>) -> Check {
    match exit_status {
        status if limit.is_some() => Check::new(
            Kind::CommandTimeout,
            "command",
            Status::Fail,
            format!(
                "`{}` ran past --timeout {}: stopped ({})",
                shell_words(argv),
                limit.unwrap_or_default(),
                match status {
                    Some(ExitStatus::Signal(n)) => format!("killed by signal {n}"),
                    Some(ExitStatus::Code(c)) => format!("exited with status {c}"),
                    None => "it had not exited yet".into(),
                }
            ),
            Some(&match status {
                // What `check` exits with: a failed command's own status, else a FAIL's 1.
                Some(s) if s != ExitStatus::Code(0) => {
                    format!("the smoke command hung or is slow; vdsoctl exits with its status, {}", s.shell_code())
                }
                Some(_) => "what the command left running hung or is slow (it was killed); vdsoctl exits 1".into(),
                None => "the smoke command hung or is slow; vdsoctl exits 1".into(),
            }),
        ),
        Some(ExitStatus::Code(0)) => Check::new(
            Kind::CommandOk,
            "command",
            Status::Ok,
            format!("`{}` exited with status 0", shell_words(argv)),
            None,
        ),
        Some(ExitStatus::Code(c)) => Check::new(
            Kind::CommandFailed,
            "command",
            Status::Fail,
            format!("`{}` exited with status {c}", shell_words(argv)),
            Some(&format!("the smoke command itself failed; vdsoctl exits with its status, {c}")),
        ),
        Some(ExitStatus::Signal(n)) => Check::new(
            Kind::CommandFailed,
            "command",
            Status::Fail,
            format!("`{}` was killed by signal {n}", shell_words(argv)),
            Some(&format!("the smoke command itself failed; vdsoctl exits with {}", 128 + n)),
        ),
        None => Check::new(
            Kind::CommandFailed,
            "command",
            Status::Fail,
            format!("`{}`: interrupted before it exited", shell_words(argv)),
            None,
        ),
    }
}
