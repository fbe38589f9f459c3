//! The comparison with a baseline under the image table: one line per
//! binary or finding at WARN or FAIL on either side, new first.

use super::Output;
use crate::model::baseline::{BaselineDiff, Change};
use crate::render::thousands;

fn status(s: Option<crate::model::Status>) -> String {
    s.map_or_else(|| "absent".to_string(), |s| s.label().to_string())
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
        let head = format!("{tag} {}: {} → {}{rebuilt}", out.text(&x.key), status(x.was), status(x.now));
        if x.detail.is_empty() {
            s += &format!("{head}\n");
        } else {
            s += &out.prose(&format!("{head}: "), &out.text(&x.detail));
        }
    }
    s
}

/// `bench --baseline`: one row per function, clock and path, like benchstat.
pub fn bench_text(d: &crate::model::bench_baseline::BenchBaselineDiff, out: &Output) -> String {
    let mut s = format!(
        "baseline {}: {} slower, {} faster, {} unchanged{} — {}\n",
        out.text(&d.file),
        d.slower,
        d.faster,
        d.unchanged,
        if d.added + d.gone > 0 { format!(" ({} added, {} gone)", d.added, d.gone) } else { String::new() },
        if d.has_regression() { "exit 1: slower" } else { "exit 0: nothing slower" }
    );
    let mut t = out.table(&["FUNCTION", "CLOCK", "PATH", "OLD ns", "NEW ns", "DELTA", "VERDICT"]);
    let ns = |v: Option<f64>| v.map_or_else(|| "-".to_string(), crate::render::ns_number);
    for r in &d.rows {
        let delta = r.delta_pct.map_or_else(|| "-".to_string(), |p| format!("{p:+.1}%"));
        let mut verdict = r.moved.name().to_string();
        if !r.reasons.is_empty() {
            verdict += &format!(" ({})", r.reasons.join(", "));
        }
        let clock = crate::model::ClockRef::short_of(&r.clock).to_string();
        t.add_row(vec![r.function.clone(), clock, r.path.clone(), ns(r.old_ns), ns(r.new_ns), delta, verdict]);
    }
    s += &format!("{t}\n");
    s += &out.prose(
        "rule: ",
        "slower when new − old > max(3 × (MAD old + MAD new), 5% of old), when syscalls/call rose by 0.5 or more, \
         or when the verdict was fast and is not; faster the mirror",
    );
    s
}
