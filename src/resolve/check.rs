//! `check`'s arguments resolved: which form of the audit (the host, one
//! process, an image, a smoke command, a seccomp profile) as one enum, each
//! with the options it takes.

use crate::cli::CheckArgs;
use crate::error::{Error, Result};
use crate::model::gate::Selection;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// `check`: the form of the audit and what every form takes.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub form: CheckForm,
    /// `--strict`: exit 1 on WARN too.
    pub strict: bool,
    /// `--quiet`: tables show only what is not OK.
    pub quiet: bool,
    /// `--export-json FILE`.
    pub export_json: Option<PathBuf>,
    /// `--export-junit FILE`.
    pub export_junit: Option<PathBuf>,
    /// `--fail-on`, `--allow`, `--strict` (the ignore file is read by the command).
    pub selection: Selection,
    /// `--ignore-file FILE`; else `./.vdsoctlignore` when there is one.
    pub ignore_file: Option<PathBuf>,
}

/// What `check` audits. `trace` is `--trace` as typed: `None` the default
/// window, zero none (`model::observe::window`).
#[derive(Debug, Clone, PartialEq)]
pub enum CheckForm {
    /// `check`: this host, and a window on every process.
    Host { max_ns: Option<f64>, trace: Option<Duration>, fail_over: Option<f64> },
    /// `check -p PID`: the host and one process, and a window on it.
    Process { pid: i32, max_ns: Option<f64>, trace: Option<Duration> },
    /// `check --image ROOT`: every ELF file of an image.
    Image { root: PathBuf, baseline: BaselineFiles, select: crate::inspect::archive::Select },
    /// `check -- CMD`: a smoke command under trace.
    Command { argv: Vec<OsString>, timeout: Option<Duration>, baseline: BaselineFiles },
    /// `check --seccomp-profile FILE`.
    Profile { file: PathBuf },
}

impl CheckForm {
    /// The context its findings are judged in (the policy table's column).
    pub fn context(&self) -> crate::model::gate::Context {
        use crate::model::gate::Context;
        match self {
            CheckForm::Host { .. } => Context::Host,
            CheckForm::Process { .. } => Context::Process,
            CheckForm::Image { .. } => Context::Image,
            CheckForm::Command { .. } => Context::Command,
            CheckForm::Profile { .. } => Context::Profile,
        }
    }
}

/// `--baseline` and `--save-baseline`: only the image and command forms
/// keep one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BaselineFiles {
    /// `--baseline FILE`: compare with it.
    pub compare: Option<PathBuf>,
    /// `--save-baseline FILE`: write the new one.
    pub save: Option<PathBuf>,
}

impl CheckRequest {
    /// The baseline files of the image and command forms.
    pub fn baseline(&self) -> Option<&BaselineFiles> {
        match &self.form {
            CheckForm::Image { baseline, .. } | CheckForm::Command { baseline, .. } => Some(baseline),
            _ => None,
        }
    }
}

/// The form clap's conflicts leave one of; a baseline without an image or
/// a command is a usage error (a CI job with a typo must not go green on
/// an audit that kept nothing).
pub(super) fn resolve(args: &CheckArgs) -> Result<CheckRequest> {
    let baseline = BaselineFiles { compare: args.baseline.clone(), save: args.save_baseline.clone() };
    let form = if let Some(file) = &args.seccomp_profile {
        CheckForm::Profile { file: file.clone() }
    } else if let Some(root) = &args.image {
        let platform = match args.platform.as_deref().map(crate::inspect::archive::Platform::parse) {
            Some(Err(why)) => return Err(Error::Usage(why)),
            Some(Ok(p)) => Some(p),
            None => None,
        };
        let select = crate::inspect::archive::Select { index: args.image_index, platform };
        CheckForm::Image { root: root.clone(), baseline, select }
    } else if !args.command.is_empty() {
        CheckForm::Command { argv: args.command.clone(), timeout: args.timeout, baseline }
    } else if baseline != BaselineFiles::default() {
        return Err(Error::Usage(
            "--baseline and --save-baseline need --image ROOT or -- CMD (what a baseline keeps)".into(),
        ));
    } else if let Some(pid) = args.pid {
        CheckForm::Process { pid, max_ns: args.max_ns, trace: args.trace }
    } else {
        CheckForm::Host { max_ns: args.max_ns, trace: args.trace, fail_over: args.fail_over }
    };
    Ok(CheckRequest {
        form,
        strict: args.strict,
        quiet: args.quiet,
        export_json: args.export_json.clone(),
        export_junit: args.export_junit.clone(),
        selection: Selection {
            fail_on: args.fail_on.clone(),
            allow: args.allow.clone(),
            ignores: Vec::new(),
            strict: args.strict,
        },
        ignore_file: args.ignore_file.clone(),
    })
}
