//! The comparison with a baseline under the image table: one line per
//! binary or finding at WARN or FAIL on either side, new first.

use super::Output;
use crate::model::baseline::{BaselineDiff, Change};
use crate::render::thousands;

fn status(s: Option<&str>) -> String {
    s.map_or_else(|| "absent".to_string(), str::to_ascii_uppercase)
}

/// The section's text.
pub fn text(d: &BaselineDiff, out: &Output) -> String {
    let mut s = format!(
        "baseline {}: {} new, {} fixed, {} unchanged at WARN or FAIL{} — {}\n",
        out.text(&d.file),
        d.new,
        d.fixed,
        d.unchanged,
        if d.added_ok + d.removed_ok > 0 {
            format!(" ({} OK binaries added, {} removed)", thousands(d.added_ok as u64), thousands(d.removed_ok as u64))
        } else {
            String::new()
        },
        if d.has_new() { "exit 1: something new" } else { "exit 0: nothing new" }
    );
    if !d.runtimes_now.is_empty() || !d.runtimes_was.is_empty() {
        s +=
            &format!("runtimes: {} → {}\n", out.text(&d.runtimes_was.join(", ")), out.text(&d.runtimes_now.join(", ")));
    }
    for x in &d.deltas {
        let tag = match x.change {
            Change::New => "NEW",
            Change::Fixed => "FIXED",
            Change::Unchanged => "UNCHANGED",
        };
        let rebuilt = if x.rebuilt { ", rebuilt" } else { "" };
        let head =
            format!("{tag} {}: {} → {}{rebuilt}", out.text(&x.key), status(x.was.as_deref()), status(x.now.as_deref()));
        if x.detail.is_empty() {
            s += &format!("{head}\n");
        } else {
            s += &out.prose(&format!("{head}: "), &out.text(&x.detail));
        }
    }
    s
}
