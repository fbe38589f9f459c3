//! `check --save-baseline FILE` and `--baseline FILE`: the baseline
//! written, and the one given read and compared (model::baseline judges).

use crate::cli::CheckArgs;
use crate::error::{Error, Hint, Result};
use crate::model::baseline::{compare, Baseline, FORMAT};
use crate::model::check::CheckReport;
use std::io::Read;

/// A baseline larger than this is no baseline.
const MAX_BASELINE: u64 = 256 << 20;

/// Read the baseline to compare with before writing the new one: the same
/// FILE may be given to both (compare, then update).
pub(super) fn apply(args: &CheckArgs, report: &mut CheckReport) -> Result<()> {
    let now = Baseline::of(report, &report.hashes);
    if let Some(path) = &args.baseline {
        let hint = Hint::Text("pass a file written by `vdsoctl check --image ... --save-baseline FILE`".into());
        let (file, _) = crate::inspect::file::open_regular(path).map_err(|e| Error::from_io(path, e, hint))?;
        let mut text = Vec::new();
        file.take(MAX_BASELINE + 1).read_to_end(&mut text).map_err(|e| Error::from_io(path, e, Hint::CheckReadable))?;
        let malformed = |detail: String| Error::Malformed { what: format!("baseline {}", path.display()), detail };
        if text.len() as u64 > MAX_BASELINE {
            return Err(malformed(format!("larger than {} MiB", MAX_BASELINE >> 20)));
        }
        let old: Baseline = serde_json::from_slice(&text)
            .map_err(|e| malformed(format!("{e} (written by `check --save-baseline`, {FORMAT}?)")))?;
        if old.format != FORMAT {
            return Err(malformed(format!("format {:?}, this vdsoctl reads {FORMAT:?}", old.format)));
        }
        report.baseline = Some(compare(&path.display().to_string(), &old, &now));
    }
    if let Some(path) = &args.save_baseline {
        let mut text = serde_json::to_string_pretty(&now).map_err(|e| Error::malformed("baseline", e.to_string()))?;
        text.push('\n');
        crate::inspect::file::write_replacing(path, text.as_bytes())?;
    }
    Ok(())
}
