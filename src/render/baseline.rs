//! The comparison with a baseline under the image table: one line per
//! binary or finding at WARN or FAIL on either side, new first.

use super::Output;
use crate::model::baseline::{BaselineDiff, CallDelta, Change, Delta, RuntimeKey, Scope};
use crate::render::thousands;
use serde::Serialize;

/// `glibc 2.36`, `musl`: a runtime as the table and JSON's
/// `runtimes_was`/`runtimes_now` say it.
pub fn runtime_text(r: &RuntimeKey) -> String {
    match &r.version {
        Some(v) => format!("{} {v}", r.runtime),
        None => r.runtime.clone(),
    }
}

/// A call delta's key as JSON `key` says it: `comm function clock`
/// (`[vsyscall] time` for a call into the page).
fn call_key(c: &CallDelta) -> String {
    let function = if c.vsyscall { format!("[vsyscall] {}", c.function) } else { c.function.clone() };
    format!("{} {function} {}", c.process, c.clock)
}

/// A delta's key (its path, name, or call) and detail, worded.
fn key_and_detail(d: &Delta) -> (String, String) {
    match &d.call {
        Some(c) => {
            let count = |c: Option<u64>| c.map_or_else(|| "none".to_string(), |c| format!("×{c}"));
            let detail = format!(
                "syscalls the vDSO should have served: {} then, {} now",
                count(c.was_count),
                count(c.now_count)
            );
            (call_key(c), detail)
        }
        None => (d.key.clone(), d.detail.clone()),
    }
}

impl Serialize for Delta {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            change: Change,
            scope: Scope,
            key: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            call: Option<&'a CallDelta>,
            was: Option<crate::model::Status>,
            now: Option<crate::model::Status>,
            detail: String,
            rebuilt: bool,
        }
        let (key, detail) = key_and_detail(self);
        Wire {
            change: self.change,
            scope: self.scope,
            key,
            call: self.call.as_ref(),
            was: self.was,
            now: self.now,
            detail,
            rebuilt: self.rebuilt,
        }
        .serialize(s)
    }
}

impl Serialize for BaselineDiff {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            file: &'a str,
            new: usize,
            fixed: usize,
            unchanged: usize,
            added_ok: usize,
            removed_ok: usize,
            runtimes_was: Vec<String>,
            runtimes_now: Vec<String>,
            deltas: &'a [Delta],
        }
        Wire {
            file: &self.file,
            new: self.new,
            fixed: self.fixed,
            unchanged: self.unchanged,
            added_ok: self.added_ok,
            removed_ok: self.removed_ok,
            runtimes_was: self.runtimes_was.iter().map(runtime_text).collect(),
            runtimes_now: self.runtimes_now.iter().map(runtime_text).collect(),
            deltas: &self.deltas,
        }
        .serialize(s)
    }
}

fn runtimes(r: &[RuntimeKey]) -> String {
    r.iter().map(runtime_text).collect::<Vec<_>>().join(", ")
}

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
            &format!("runtimes: {} → {}\n", out.text(&runtimes(&d.runtimes_was)), out.text(&runtimes(&d.runtimes_now)));
    }
    for x in &d.deltas {
        let tag = match x.change {
            Change::New => "NEW",
            Change::Fixed => "FIXED",
            Change::Unchanged => "UNCHANGED",
        };
        let rebuilt = if x.rebuilt { ", rebuilt" } else { "" };
        let (key, detail) = key_and_detail(x);
        let head = format!("{tag} {}: {} → {}{rebuilt}", out.text(&key), status(x.was), status(x.now));
        if detail.is_empty() {
            s += &format!("{head}\n");
        } else {
            s += &out.prose(&format!("{head}: "), &out.text(&detail));
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
