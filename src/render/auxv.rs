//! `auxv`'s report as a table.

use super::{Output, Render};
use crate::model::auxv::AuxvReport;

impl Render for AuxvReport {
    fn render_table(&self, out: &Output) -> String {
        let mut t = out.table(&["KEY", "NAME", "VALUE", "DECODED"]);
        t.wrap("DECODED");
        for e in &self.entries {
            t.add_row(vec![
                e.key.to_string(),
                e.name.clone().unwrap_or_else(|| "-".into()),
                format!("{:#x}", e.value),
                out.text(&e.place.clone().unwrap_or_else(|| e.decoded.text())).into_owned(),
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
