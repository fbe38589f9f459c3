//! The audit's report: one check's result, the image's binaries, the
//! command run, and the audit they make — built by `check` and `serve`,
//! rendered by the render layer.

pub use super::row::Check;
use super::trace::ExitStatus;
use super::{ProcessRef, Status};
use crate::model::baseline::{
    Baseline, BaselineBinary, BaselineDiff, BaselineFinding, Change, RuntimeKey, Scope as DeltaScope, FORMAT,
};
use crate::model::bench::BenchReport;
use crate::model::binary::{BinaryFacts, BinaryFinding};
use crate::model::gate::{self, Context, Raise, Selection, Waiver};
use crate::model::kind::Kind;
use crate::model::random::RandomRoute;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// The worst status among the checks (SKIP counts as OK), after the gate.
    pub status: Status,
    /// Findings the gate waived: ignored, allowed, in the baseline.
    pub waived: Waivers,
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
            /// The kind of its verdict's reason (`kind` is the facts'
            /// executable or library).
            verdict_kind: Kind,
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
            verdict_kind: self.kind,
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
    /// Which image of the archive was audited, of how many (absent for a
    /// directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<crate::inspect::archive::Chosen>,
    /// Directory entries looked at.
    pub entries: u64,
    /// Directories not entered (other filesystems, /proc /sys /dev, too deep).
    pub skipped: Vec<String>,
    /// What could not be read (directories not listed, files not opened,
    /// ELF files that did not parse), with why.
    pub unreadable: Vec<(String, String)>,
    /// Every entry that could not be read; `unreadable` keeps the first
    /// [`crate::inspect::image::KEPT`].
    pub unreadable_count: usize,
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

/// How `check -- CMD`'s command ended, as a fact: status 0 passes; a
/// failure, a signal, an interruption or `--timeout` fails. Worded in
/// `render/observe.rs` (`command_row`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandEnd {
    /// Stopped at `--timeout` (`limit`, worded), with how it ended then
    /// (`None`: it had not exited yet).
    TimedOut { limit: String, status: Option<ExitStatus> },
    /// Exited with status 0.
    Passed,
    /// Exited with a nonzero status.
    Failed(i32),
    /// Killed by a signal.
    Killed(i32),
    /// Interrupted before it exited.
    Interrupted,
}

impl CommandEnd {
    /// The end of a command that exited with `exit_status`, stopped at
    /// `--timeout` `limit` when it was.
    pub fn of(exit_status: Option<ExitStatus>, limit: Option<String>) -> CommandEnd {
        match (exit_status, limit) {
            (status, Some(limit)) => CommandEnd::TimedOut { limit, status },
            (Some(ExitStatus::Code(0)), None) => CommandEnd::Passed,
            (Some(ExitStatus::Code(c)), None) => CommandEnd::Failed(c),
            (Some(ExitStatus::Signal(n)), None) => CommandEnd::Killed(n),
            (None, None) => CommandEnd::Interrupted,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            CommandEnd::TimedOut { .. } => Kind::CommandTimeout,
            CommandEnd::Passed => Kind::CommandOk,
            CommandEnd::Failed(_) | CommandEnd::Killed(_) | CommandEnd::Interrupted => Kind::CommandFailed,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            CommandEnd::Passed => Status::Ok,
            _ => Status::Fail,
        }
    }
}

impl CheckReport {
    /// The gate, once: each finding's status is the policy's for its kind
    /// in `ctx`, then what `sel` selects; the verdict is the worst of them.
    pub fn gate(&mut self, ctx: Context, sel: &Selection) {
        self.apply_policy(ctx);
        self.select(sel);
    }

    /// The policy table's status for each finding's kind in `ctx`: what a
    /// baseline keeps and compares (never what a selection made of it).
    pub fn apply_policy(&mut self, ctx: Context) {
        for c in &mut self.checks {
            c.status = gate::severity(c.kind, ctx, c.status);
        }
        for b in self.binaries.iter_mut().flatten() {
            for f in &mut b.findings {
                f.status = gate::severity(f.kind, ctx, f.status);
            }
            b.restate();
        }
        self.restate();
    }

    /// What the CI selects on top of the policy (and of a baseline, whose
    /// waivers stand): ignores and `--allow` waive, `--fail-on` and
    /// `--strict` raise.
    pub fn select(&mut self, sel: &Selection) {
        for c in self.checks.iter_mut().filter(|c| c.waived.is_none()) {
            let g = sel.gate(c.kind, &c.name, c.status);
            (c.status, c.waived, c.raised) = (g.status, g.waived, g.raised.or(c.raised));
        }
        for b in self.binaries.iter_mut().flatten() {
            for f in b.findings.iter_mut().filter(|f| f.waived.is_none()) {
                let g = sel.gate(f.kind, &b.path, f.status);
                (f.status, f.waived, f.raised) = (g.status, g.waived, g.raised.or(f.raised));
            }
            b.restate();
        }
        self.restate();
    }

    /// `--baseline`: what is as bad as in the baseline is waived (INFO,
    /// "in the baseline"), what is new is raised to FAIL — so the verdict
    /// line, JUnit and the exit code all say the gate's answer.
    pub fn gate_on_baseline(&mut self, diff: &BaselineDiff, old: &Baseline) {
        let change = |scope: DeltaScope, key: &str| {
            diff.deltas.iter().find(|d| d.scope == scope && d.key == key).map(|d| d.change)
        };
        let file = diff.file.clone();
        let moved =
            |status: &mut Status, waived: &mut Option<Waiver>, raised: &mut Option<Raise>, c: Option<Change>| match c {
                Some(Change::New) if *status >= Status::Warn => {
                    (*status, *raised) = (Status::Fail, Some(Raise::NewSinceBaseline));
                }
                Some(Change::Unchanged) if *status >= Status::Warn => {
                    (*status, *waived) = (Status::Info, Some(Waiver::Baselined { file: file.clone() }));
                }
                _ => {}
            };
        let calls = |c: Change| diff.deltas.iter().any(|d| d.scope == DeltaScope::Call && d.change == c);
        let (calls_new, calls_old) = (calls(Change::New), calls(Change::Unchanged));
        for c in &mut self.checks {
            let was = old.findings.iter().find(|f| f.name == c.name);
            // A finding of another kind than the baseline's, though at the
            // same status, is new (as a binary's kinds are).
            let new_kind = was.and_then(|f| f.kind.as_deref()).is_some_and(|k| k != c.kind.id());
            let mut ch = match change(DeltaScope::Finding, &c.name) {
                Some(Change::Unchanged) if new_kind => Some(Change::New),
                ch => ch,
            };
            // The command's observation row: its calls are its deltas, by
            // process name, function and clock — a call bypassed now and
            // not then is new whatever the row's status was.
            if c.name == "command_trace" && ch != Some(Change::New) {
                ch = if calls_new {
                    Some(Change::New)
                } else if calls_old {
                    Some(Change::Unchanged)
                } else {
                    ch
                };
            }
            moved(&mut c.status, &mut c.waived, &mut c.raised, ch);
        }
        for b in self.binaries.iter_mut().flatten() {
            let ch = change(DeltaScope::Binary, &b.path);
            // By kind where the baseline kept them: a finding of a kind the
            // binary had at WARN or FAIL then is as bad as before, another
            // is new, whatever the binary's status says.
            let kept = old.binaries.iter().find(|o| o.path == b.path).map(|o| &o.kinds).filter(|k| !k.is_empty());
            for f in &mut b.findings {
                let ch = match kept {
                    Some(kinds) if f.status >= Status::Warn => {
                        if kinds.iter().any(|k| k == f.kind.id()) {
                            Some(Change::Unchanged)
                        } else {
                            Some(Change::New)
                        }
                    }
                    _ => ch,
                };
                moved(&mut f.status, &mut f.waived, &mut f.raised, ch);
            }
            b.restate();
        }
        self.restate();
    }

    /// The verdict from the rows as they stand.
    fn restate(&mut self) {
        let rows = self.binaries.iter().flatten().map(|b| b.status);
        self.status = Status::worst(rows.chain(self.checks.iter().map(|c| c.status)));
        self.waived = self.waivers();
    }

    /// How many findings a selection or a baseline waived, by why (the
    /// verdict line's and JSON's `waived`).
    pub fn waivers(&self) -> Waivers {
        let binaries = self.binaries.iter().flatten().flat_map(|b| &b.findings).filter_map(|f| f.waived.as_ref());
        let mut w = Waivers::default();
        for waiver in binaries.chain(self.checks.iter().filter_map(|c| c.waived.as_ref())) {
            match waiver {
                Waiver::Ignored { .. } => w.ignored += 1,
                Waiver::Allowed { .. } => w.allowed += 1,
                Waiver::Baselined { .. } => w.baselined += 1,
            }
        }
        w
    }
}

/// Findings waived, by why (JSON `waived`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Waivers {
    pub ignored: usize,
    pub allowed: usize,
    pub baselined: usize,
}

impl BinaryRow {
    /// Its status and kind from its findings as they stand.
    fn restate(&mut self) {
        self.status = crate::model::binary::binary_status(&self.findings);
        let lead = self.findings.iter().filter(|f| f.status == self.status).map(|f| f.kind).next();
        self.kind = lead.or(self.findings.first().map(|f| f.kind)).unwrap_or(self.kind);
    }
}

impl CheckReport {
    /// Its baseline (image or command); `hashes` by image path, `detail`
    /// a check's words (render's, at output).
    pub fn baseline_of(&self, hashes: &BTreeMap<String, String>, detail: impl Fn(&Check) -> String) -> Baseline {
        let report = self;
        let rows = report.binaries.as_deref().unwrap_or_default();
        let mut binaries: Vec<BaselineBinary> = rows
            .iter()
            .map(|b| BaselineBinary {
                path: b.path.clone(),
                sha256: hashes.get(&b.path).cloned().unwrap_or_default(),
                class: b.binary.class.to_string(),
                machine: b.binary.machine.to_string(),
                runtime: RuntimeKey {
                    runtime: b.binary.runtime.to_string(),
                    version: b.binary.runtime_version.clone(),
                },
                status: b.status,
                kinds: b
                    .findings
                    .iter()
                    .filter(|f| f.status >= Status::Warn)
                    .map(|f| f.kind.id().to_string())
                    .collect(),
                detail: b.detail.clone(),
                random: serde_json::to_value(b.random.path)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            })
            .collect();
        binaries.sort_by(|a, b| a.path.cmp(&b.path));
        let mut runtimes: Vec<RuntimeKey> = binaries.iter().map(|b| b.runtime.clone()).collect();
        runtimes.sort();
        runtimes.dedup();
        let mut findings: Vec<BaselineFinding> = report
            .checks
            .iter()
            // The runner's kernel is not the image's: never in its baseline.
            .filter(|c| c.kind != Kind::RunnerKernel)
            .map(|c| BaselineFinding {
                name: c.name.clone(),
                kind: Some(c.kind.id().to_string()),
                status: c.status,
                // A command's details carry its run time: its counts are in `calls`.
                detail: if report.command.is_some() { String::new() } else { detail(c) },
            })
            .collect();
        findings.sort_by(|a, b| a.name.cmp(&b.name));
        let mut calls = report.calls.clone();
        calls.sort();
        let kind = if report.command.is_some() { "command" } else { "image" };
        Baseline {
            format: FORMAT.into(),
            kind: kind.into(),
            runtimes,
            binaries,
            findings,
            calls,
            bench: Vec::new(),
            arch: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_end_keeps_its_kind_and_status() {
        let limit = Some("1 s".to_string());
        let timed_out = CommandEnd::of(Some(ExitStatus::Signal(15)), limit.clone());
        assert_eq!((timed_out.kind(), timed_out.status()), (Kind::CommandTimeout, Status::Fail));
        assert_eq!(CommandEnd::of(None, limit), CommandEnd::TimedOut { limit: "1 s".into(), status: None });
        let passed = CommandEnd::of(Some(ExitStatus::Code(0)), None);
        assert_eq!((passed.kind(), passed.status()), (Kind::CommandOk, Status::Ok));
        for end in [CommandEnd::Failed(3), CommandEnd::Killed(9), CommandEnd::Interrupted] {
            assert_eq!((end.kind(), end.status()), (Kind::CommandFailed, Status::Fail));
        }
        assert_eq!(CommandEnd::of(Some(ExitStatus::Signal(9)), None), CommandEnd::Killed(9));
    }
}
