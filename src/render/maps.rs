//! `maps`'s report as a table.

use super::{human_size, Output, Render};
use crate::model::maps::MapsReport;

impl Render for MapsReport {
    fn render_table(&self, out: &Output) -> String {
        let mut t = out.table(&["MAPPING", "START", "END", "SIZE", "PERMS"]);
        for m in &self.mappings {
            t.add_row(vec![
                m.name.clone(),
                format!("{:#x}", m.start),
                format!("{:#x}", m.end),
                human_size(m.size),
                m.perms.clone(),
            ]);
        }
        let mut s = format!("{}\n{t}\n", out.text(&self.process.text()));
        s += &format!("vsyscall: {} (from {})\n", self.vsyscall.mode.as_str(), self.vsyscall.source);
        if let Some(exports) = &self.vdso_exports {
            // One export a line: a vDSO exports a dozen, too many for one row.
            s += "vdso exports:\n";
            for e in exports {
                s += &format!("  {} ({})\n", out.text(&e.name), super::host::export_role_words(e.serves));
            }
        }
        s += &out.findings(&self.findings);
        s
    }
}
