//! The files `check` reads and writes beside its audit: `--save-baseline
//! FILE` and `--baseline FILE` (model::baseline judges), and
//! `--seccomp-profile FILE` (model::seccomp_profile judges, render::seccomp
//! words its rows).

use crate::error::{Error, Hint, Result};
use crate::model::baseline::{compare, Baseline};
use crate::model::check::CheckReport;
use crate::model::gate::{parse_ignores, today, Ignore};
use crate::resolve::{BaselineFiles, CheckRequest};
use std::io::Read;

/// The baseline `--baseline FILE` names, read (and a bad one refused)
/// before the audit or the command runs: a bad FILE costs nothing.
/// An image's baseline is compared with an image's audit, a command's
/// with a command's run (`command`: the `-- CMD` form).
pub(super) fn read_old(files: &BaselineFiles, command: bool) -> Result<Option<Baseline>> {
    let (kind, writer) = writer(command);
    files.compare.as_ref().map(|path| crate::cmd::baseline_file::read(path, &[kind], writer)).transpose()
}

/// The kind a form compares, and the command line that writes one.
fn writer(command: bool) -> (&'static str, &'static str) {
    if command {
        ("command", "vdsoctl check --save-baseline FILE -- CMD")
    } else {
        ("image", "vdsoctl check --image ... --save-baseline FILE")
    }
}

/// Compare with `old` (read first, so the same FILE may be given to both:
/// compare, then update), then write the new one. A write that fails is
/// returned for after the report (which is printed all the same).
pub(super) fn apply(files: &BaselineFiles, old: Option<&Baseline>, report: &mut CheckReport) -> Result<()> {
    let mut now = report.baseline_of(&report.hashes, |c| c.detail().into_owned());
    if report.command.is_some() {
        now.arch = crate::cmd::baseline_file::here();
    }
    if let (Some(path), Some(old)) = (&files.compare, old) {
        // An image of another architecture: said once its binaries are known.
        crate::cmd::baseline_file::refuse_other_arch(path, old, &now, writer(report.command.is_some()).1)?;
        report.baseline = Some(compare(&path.display().to_string(), old, &now));
    }
    if let Some(path) = &files.save {
        crate::cmd::baseline_file::write(path, &now)?;
    }
    Ok(())
}

/// An ignore file larger than this is refused.
const MAX_IGNORE: u64 = 1 << 20;

/// The ignore file: `--ignore-file FILE`, else `./.vdsoctlignore` when
/// there is one; parsed, and an entry past its date refused (exit 2).
pub(super) fn read_ignores(path: Option<&std::path::Path>) -> Result<Vec<Ignore>> {
    let default = std::path::Path::new(".vdsoctlignore");
    let path = match path {
        Some(p) => p,
        None if default.is_file() => default,
        None => return Ok(Vec::new()),
    };
    let hint = Hint::Text("pass an ignore file: lines `KIND[=GLOB] [expires=YYYY-MM-DD] REASON`".into());
    let file = std::fs::File::open(path).map_err(|e| Error::from_io(path, e, hint))?;
    let mut text = Vec::new();
    file.take(MAX_IGNORE + 1).read_to_end(&mut text).map_err(|e| Error::from_io(path, e, Hint::CheckReadable))?;
    let name = path.display().to_string();
    if text.len() as u64 > MAX_IGNORE {
        return Err(Error::Usage(format!("{name}: larger than 1 MiB: no ignore file")));
    }
    let text = String::from_utf8_lossy(&text);
    parse_ignores(&name, &text, today()).map_err(|e| Error::Usage(crate::render::ignore_error(&name, &e)))
}

/// A seccomp profile larger than this is no profile.
const MAX_PROFILE: u64 = 16 << 20;

/// `check --seccomp-profile FILE`: the profile's rows, and the verdict.
pub(super) fn gather_profile(path: &std::path::Path, strict: bool) -> Result<CheckReport> {
    let hint = Hint::Text("pass a Docker/OCI seccomp profile, e.g. /usr/share/containers/seccomp.json".into());
    let (file, _) = crate::inspect::file::open_named(path).map_err(|e| Error::from_io(path, e, hint))?;
    let mut text = Vec::new();
    file.take(MAX_PROFILE + 1).read_to_end(&mut text).map_err(|e| Error::from_io(path, e, Hint::CheckReadable))?;
    let malformed = |detail: String| Error::Malformed { what: format!("seccomp profile {}", path.display()), detail };
    if text.len() as u64 > MAX_PROFILE {
        return Err(malformed(format!("larger than {} MiB", MAX_PROFILE >> 20)));
    }
    let profile: serde_json::Value = serde_json::from_slice(&text).map_err(|e| malformed(e.to_string()))?;
    let kernel = crate::inspect::kernel::release().as_deref().and_then(crate::inspect::kernel::parse_version);
    let facts = crate::model::seccomp_profile::checks(&profile, kernel).map_err(|e| malformed(e.to_string()))?;
    Ok(CheckReport::judged(crate::render::seccomp::seccomp_rows(&facts), strict))
}

/// `--export-json FILE` and `--export-junit FILE`: the report as `--json`
/// and `--format junit` print it, written beside the output on stdout.
pub(super) fn export(req: &CheckRequest, report: &CheckReport) -> Result<()> {
    if let Some(path) = &req.export_json {
        let mut text = serde_json::to_string_pretty(report).map_err(|e| Error::malformed("report", e.to_string()))?;
        text.push('\n');
        crate::inspect::file::write_replacing(path, text.as_bytes())?;
    }
    if let Some(path) = &req.export_junit {
        crate::inspect::file::write_replacing(path, report.junit().as_bytes())?;
    }
    Ok(())
}
