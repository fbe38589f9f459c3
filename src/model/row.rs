//! One row of an audit: a finding of a kind about something named, its
//! status after the gate, and what it found — a typed fact that render/
//! words at output time, or words render/ already gave it. Its own module
//! so every judge in model/ can make one without importing the report
//! (model::check) that gathers them.

use crate::model::gate::{Raise, Waiver};
use crate::model::kind::Kind;
use crate::model::Status;
use std::sync::Arc;

/// One check's result (DESIGN keys: name, kind, status, detail, hint,
/// waived, raised, rate). Its JSON is written by render/row.rs, which
/// words [`Check::said`].
#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    /// What it found, by its stable id (doc/FINDINGS.md).
    pub kind: Kind,
    pub status: Status,
    /// What it found: the fact (worded at output) or its words.
    pub said: Said,
    /// The selection that made a WARN or FAIL INFO (`null`: none).
    pub waived: Option<Waiver>,
    /// The selection that made it FAIL (`null`: none).
    pub raised: Option<Raise>,
    /// What the row is about: the host, or the process `-p` audits (its
    /// Prometheus series carry the pid).
    pub about: About,
    /// Calls a second, where the finding is a rate (an observation's
    /// busiest process); absent otherwise.
    pub rate: Option<f64>,
    /// An observation row's window and the calls it names (JSON
    /// `window_ns`, `calls`): what its words say, as data.
    pub observed: Option<Observed>,
    /// What a measured row's paths cost here (JSON `costs`): the host's
    /// `getrandom` row.
    pub costs: Option<Costs>,
    /// `check -p`'s `process_binary` row: the findings of the executable's
    /// verdict, typed as `--image`'s `binaries[].findings` (JSON `findings`).
    pub findings: Option<Vec<crate::model::binary::BinaryFinding>>,
    /// A random-bytes row's facts (JSON `random`): `--image`'s
    /// `random:*` rows and `check -p`'s `process_random`.
    pub random: Option<RandomFacts>,
    /// `check -p`'s `process_time_namespace`: the namespace, as `maps -p`'s
    /// `time_namespace` (JSON `time_namespace`).
    pub time_namespace: Option<crate::model::timens::TimeNs>,
    /// `check -p`'s `process_binary`: how the process runs its program
    /// (JSON `exe`).
    pub exe: Option<ExeRun>,
    /// A seccomp row's fact (JSON `seccomp`: its action, filters, threads).
    pub seccomp: Option<crate::model::seccomp_profile::SeccompFact>,
}

/// How a process runs the program its `process_binary` row judges: the
/// program, the loader it was started through (`ld.so PROG`), or the
/// emulator or instrumenter (`tool`, at `tool_path`) that runs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExeRun {
    pub program: Option<String>,
    pub loader: Option<String>,
    pub tool: Option<String>,
    pub tool_path: Option<String>,
}

/// What a random-bytes row stands on (JSON `random`): the runtime's route
/// (`runtime`, `version`, `path`, as a binary's `random`), the C library,
/// and the image's files or the process's state pages.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RandomFacts {
    #[serde(flatten)]
    pub route: crate::model::random::RandomRoute,
    /// The C library's path: the image's, or the one the process mapped.
    pub libc: Option<String>,
    #[serde(flatten)]
    pub of: RandomOf,
}

/// An image's random row's files, or a process's state pages.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum RandomOf {
    /// `--image`: the programs and libraries that load the C library (or
    /// run the runtime), and the files with raw getrandom syscalls in their code.
    Image { programs: usize, libraries: usize, raw: Vec<String> },
    /// `check -p`: the `dp` state pages' addresses (`null`: its smaps not
    /// read), and the raw getrandom call sites in its code.
    Process {
        #[serde(serialize_with = "crate::model::hex_list_opt")]
        state_pages: Option<Vec<u64>>,
        raw_sites: usize,
    },
}

/// What the C library's call and the direct vDSO call cost here, ns, and
/// the syscalls each made a call (`None`: not measured, or not counted).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Costs {
    pub libc_ns: Option<f64>,
    pub vdso_ns: Option<f64>,
    pub libc_syscalls_per_call: Option<f64>,
    pub vdso_syscalls_per_call: Option<f64>,
    /// The release of the C library that reads it from the vDSO, where
    /// an older one is the finding (`2.41`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_in: Option<String>,
}

/// What an observation row saw, as data (its words are render's).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Observed {
    pub window_ns: u64,
    pub calls: Vec<CallSeen>,
    /// The host's window: vdsoctl's own pids, left out of it.
    pub left_out: Vec<i32>,
    /// The host's window: it FAILs over this many calls/s of one process.
    pub fail_over: Option<f64>,
    /// The host's window: `calls` folded by program (`trace --by exe`'s
    /// groups), busiest first; what its words name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<crate::model::group::Groups>,
}

/// One process's calls of one function (and clock) in a window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CallSeen {
    pub pid: i32,
    pub comm: Option<String>,
    /// `clock_gettime`, `getrandom`; `time` with `vsyscall`.
    pub function: String,
    /// A call into the [vsyscall] page (emulated), not a syscall.
    pub vsyscall: bool,
    pub clock: Option<crate::model::ClockRef>,
    pub count: u64,
    #[serde(serialize_with = "crate::model::rate")]
    pub per_sec: f64,
    /// The runtime the program carries that made these calls itself
    /// (`command_random`: the getrandom crate before 0.3), not its C library.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carried: Option<CarriedCalls>,
}

/// A carried runtime that made a row's calls: its release where the file
/// says it, and the release that reads the vDSO (`None`: none yet).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CarriedCalls {
    pub runtime: crate::arch::Runtime,
    pub version: Option<String>,
    pub fixed_in: Option<String>,
}

/// A fact a row carries, worded by render/ (each subject's file
/// implements it for its facts): model judges and never words.
pub trait Worded: std::fmt::Debug + Send + Sync {
    /// The row's detail and remediation (`None`: nothing to do).
    fn words(&self) -> (String, Option<String>);

    /// The vdsoctl command the remediation says to run next, as argv
    /// (JSON `next`); `None` where it names none.
    fn next(&self) -> Option<Vec<String>> {
        None
    }
}

/// What a row says: a fact, or the words render/ gave it already.
#[derive(Debug, Clone)]
pub enum Said {
    Fact(Arc<dyn Worded>),
    Words { detail: String, hint: Option<String> },
}

/// What a row is about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum About {
    /// The host (vdsoctl's own process and kernel), an image, a command.
    #[default]
    Host,
    /// The process `check -p` audits.
    Process,
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

    /// A check of `kind` with a hint that is ours.
    pub(crate) fn new(
        kind: Kind,
        name: impl Into<String>,
        status: Status,
        detail: impl Into<String>,
        hint: Option<&str>,
    ) -> Check {
        let said = Said::Words { detail: detail.into(), hint: hint.map(str::to_string) };
        Check::said(kind, name, status, said)
    }

    /// A check of `kind` carrying `fact`, worded at output.
    pub fn fact(kind: Kind, name: impl Into<String>, status: Status, fact: impl Worded + 'static) -> Check {
        Check::said(kind, name, status, Said::Fact(Arc::new(fact)))
    }

    /// [`Check::fact`] of a policy finding of `severity`: info passes,
    /// warn and fail stay.
    pub fn judged(kind: Kind, name: impl Into<String>, severity: Status, fact: impl Worded + 'static) -> Check {
        let status = match severity {
            Status::Info => Status::Ok,
            s => s,
        };
        Check::fact(kind, name, status, fact)
    }

    fn said(kind: Kind, name: impl Into<String>, status: Status, said: Said) -> Check {
        Check {
            name: name.into(),
            kind,
            status,
            said,
            waived: None,
            raised: None,
            about: About::Host,
            rate: None,
            observed: None,
            costs: None,
            findings: None,
            random: None,
            time_namespace: None,
            exe: None,
            seccomp: None,
        }
    }

    /// The same check, about the audited process.
    pub fn about_process(self) -> Check {
        Check { about: About::Process, ..self }
    }

    /// The same check, with what its window saw.
    pub fn seen(self, observed: Observed) -> Check {
        Check { observed: Some(observed), ..self }
    }

    /// The same check, about `rate` calls a second.
    pub fn at_rate(self, rate: f64) -> Check {
        Check { rate: Some(rate), ..self }
    }
}
