//! `auxv`'s report as a table.

use super::{Output, Render};
use crate::model::auxv::{AuxvReport, Decoded};
use std::fmt;

/// An entry's value as the table's DECODED column shows it, beside VALUE:
/// never the same hex again.
impl fmt::Display for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decoded::Address(0) => f.write_str("null"),
            Decoded::Address(_) => f.write_str("-"),
            Decoded::Flags(0) => f.write_str("none"),
            Decoded::Flags(_) => f.write_str("-"),
            Decoded::Count(v) => write!(f, "{v}"),
            Decoded::Hwcap { names, .. } if names.is_empty() => f.write_str("-"),
            Decoded::Hwcap { names, .. } => f.write_str(&names.join(" ")),
            Decoded::Text(s) => f.write_str(s),
            Decoded::Unreadable(_) => f.write_str("unreadable"),
        }
    }
}

impl Render for AuxvReport {
    fn render_table(&self, out: &Output) -> String {
        let mut t = out.table(&["KEY", "NAME", "VALUE", "DECODED"]);
        t.wrap("DECODED");
        for e in &self.entries {
            t.add_row(vec![
                e.key.to_string(),
                e.name.clone().unwrap_or_else(|| "-".into()),
                format!("{:#x}", e.value),
                out.text(&e.place.clone().unwrap_or_else(|| e.decoded.to_string())).into_owned(),
            ]);
        }
        format!(
            "{}, {}-bit auxv\n{t}\n{}",
            out.text(&self.process.text()),
            self.word_bits,
            out.findings(&self.findings)
        )
    }
}
