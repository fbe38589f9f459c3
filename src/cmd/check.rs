//! `check`: being built on its own branch; this placeholder only says so.

use super::Outcome;
use crate::error::{Error, Result};
use crate::output::Output;

/// Not built yet: exits 4 and says so.
pub fn run(_args: &crate::cli::CheckArgs, _out: &Output) -> Result<Outcome> {
    Err(Error::Facility { what: "`check` is not built yet".into(), hint: "use a later build of vdsoctl".into() })
}
