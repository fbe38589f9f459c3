//! Reading and writing the one baseline document (`vdsoctl-baseline/2`)
//! for `check` and `bench`: each command says which kinds it compares.

use crate::error::{Error, Hint, Result};
use crate::model::baseline::{Baseline, FORMAT, READS};
use std::io::Read;
use std::path::Path;

/// A baseline larger than this is no baseline.
const MAX_BASELINE: u64 = 256 << 20;

/// The baseline at `path`, of one of `kinds`; `writer` names the command
/// line that writes one (the hint).
pub fn read(path: &Path, kinds: &[&str], writer: &str) -> Result<Baseline> {
    let hint = Hint::Text(format!("pass a file written by `{writer}`"));
    let (file, _) = crate::inspect::file::open_named(path).map_err(|e| Error::from_io(path, e, hint))?;
    let mut text = Vec::new();
    file.take(MAX_BASELINE + 1).read_to_end(&mut text).map_err(|e| Error::from_io(path, e, Hint::CheckReadable))?;
    let malformed = |detail: String| Error::Malformed { what: format!("baseline {}", path.display()), detail };
    if text.len() as u64 > MAX_BASELINE {
        return Err(malformed(format!("larger than {} MiB", MAX_BASELINE >> 20)));
    }
    let old: Baseline =
        serde_json::from_slice(&text).map_err(|e| malformed(format!("{e} (written by `{writer}`, {FORMAT}?)")))?;
    if !READS.contains(&old.format.as_str()) {
        return Err(malformed(format!("format {:?}, this vdsoctl reads {}", old.format, READS.join(" or "))));
    }
    if !kinds.contains(&old.kind.as_str()) {
        return Err(malformed(format!(
            "kind {:?}, this compares {} — write one with `{writer}`",
            old.kind,
            kinds.join(" or ")
        )));
    }
    let old = old.upgraded();
    // Times and counts of another architecture compare with nothing here.
    let here = Baseline { arch: crate::inspect::kernel::machine(), ..Baseline::of_kind(&old.kind) };
    refuse_other_arch(path, &old, &here, writer)?;
    Ok(old)
}

/// The one-line refusal of a baseline `old` of another architecture than
/// `now` (the machine it ran on, or an image's binaries).
pub fn refuse_other_arch(path: &Path, old: &Baseline, now: &Baseline, writer: &str) -> Result<()> {
    if !old.other_arch(now) {
        return Ok(());
    }
    let names = |b: &Baseline| b.arch.clone().unwrap_or_else(|| b.machines().join(", "));
    Err(Error::Malformed {
        what: format!("baseline {}", path.display()),
        detail: format!(
            "of {}, this is {}: another architecture's results compare with nothing here — save one here with `{writer}`",
            names(old),
            names(now)
        ),
    })
}

/// The machine this runs on (`uname -m`), kept in a `bench` or `check --
/// CMD` baseline.
pub fn here() -> Option<String> {
    crate::inspect::kernel::machine()
}

/// Write `b` to `path` (replacing it): pretty, sorted, one newline at the end.
pub fn write(path: &Path, b: &Baseline) -> Result<()> {
    let mut text = serde_json::to_string_pretty(b).map_err(|e| Error::malformed("baseline", e.to_string()))?;
    text.push('\n');
    crate::inspect::file::write_replacing(path, text.as_bytes())
}
