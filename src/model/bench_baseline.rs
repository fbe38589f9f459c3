//! `bench --save-baseline` and `--baseline`: per function, clock and path
//! the median ns/call, its spread (MAD), syscalls/call and verdict, as the
//! `bench` kind of the one baseline document (`vdsoctl-baseline/2`), and
//! what moved against one, the way benchstat shows a delta.
//!
//! The rule: with `d = new − old` and `t = max(3 × (mad_old + mad_new),
//! 5% of old)`, a row is `slower` when `d > t`, or when its syscalls/call
//! rose by 0.5 or more, or when its verdict was `fast` and is no longer;
//! `faster` is the mirror; else `unchanged`. Rows on one side only are
//! `added` / `gone`. Only `slower` is a regression (exit 1).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One function, clock and path of a saved bench.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BaselineBench {
    /// `clock_gettime`.
    pub function: String,
    /// `CLOCK_MONOTONIC`; `-` for a function without a clock id.
    pub clock: String,
    /// `libc`, `vdso`, `syscall`, `vsyscall`.
    pub path: String,
    /// Median ns per call; null when not measured.
    pub ns_per_call: Option<f64>,
    /// Median absolute deviation of the per-call cost, ns.
    pub mad: Option<f64>,
    /// Syscalls per call counted by perf; null when not counted.
    pub syscalls_per_call: Option<f64>,
    /// `fast`, `libc-bypass`, ...; null when none.
    pub verdict: Option<String>,
}

pub(super) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub(super) fn key(r: &BaselineBench) -> (&str, &str, &str) {
    (&r.function, &r.clock, &r.path)
}

/// How one row moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Move {
    /// A regression: the only move that exits 1.
    Slower,
    Faster,
    Unchanged,
    /// Measured now, not in the baseline.
    Added,
    /// In the baseline, not measured now.
    Gone,
}

impl Move {
    pub fn name(self) -> &'static str {
        match self {
            Move::Slower => "slower",
            Move::Faster => "faster",
            Move::Unchanged => "unchanged",
            Move::Added => "added",
            Move::Gone => "gone",
        }
    }
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct BenchDelta {
    pub function: String,
    pub clock: String,
    pub path: String,
    /// The baseline's and this run's median ns/call.
    pub old_ns: Option<f64>,
    pub new_ns: Option<f64>,
    /// (new − old) / old, in percent; null when either is unknown.
    pub delta_pct: Option<f64>,
    /// The threshold the difference had to exceed, ns.
    pub threshold_ns: Option<f64>,
    pub old_syscalls_per_call: Option<f64>,
    pub new_syscalls_per_call: Option<f64>,
    pub old_verdict: Option<String>,
    pub new_verdict: Option<String>,
    #[serde(rename = "move")]
    pub moved: Move,
    /// Why: `time`, `syscalls`, `verdict` (empty when unchanged).
    pub reasons: Vec<&'static str>,
}

/// The comparison with a bench baseline (JSON `baseline`).
#[derive(Debug, Clone, Serialize, Default)]
pub struct BenchBaselineDiff {
    pub file: String,
    pub slower: usize,
    pub faster: usize,
    pub unchanged: usize,
    pub added: usize,
    pub gone: usize,
    /// Sorted by function, clock and path.
    pub rows: Vec<BenchDelta>,
}

impl BenchBaselineDiff {
    /// The gate: any row slower.
    pub fn has_regression(&self) -> bool {
        self.slower > 0
    }
}

/// `max(3 × (mad_old + mad_new), 5% of old)`.
pub fn threshold(old: f64, mad_old: Option<f64>, mad_new: Option<f64>) -> f64 {
    (3.0 * (mad_old.unwrap_or(0.0) + mad_new.unwrap_or(0.0))).max(0.05 * old)
}

/// What moved from `old` to `new`.
pub fn compare(file: &str, old: &[BaselineBench], new: &[BaselineBench]) -> BenchBaselineDiff {
    let olds: BTreeMap<_, _> = old.iter().map(|r| (key(r), r)).collect();
    let news: BTreeMap<_, _> = new.iter().map(|r| (key(r), r)).collect();
    let mut keys: Vec<_> = olds.keys().chain(news.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    let mut d = BenchBaselineDiff { file: file.into(), ..Default::default() };
    for k in keys {
        let row = delta(k, olds.get(&k).copied(), news.get(&k).copied());
        match row.moved {
            Move::Slower => d.slower += 1,
            Move::Faster => d.faster += 1,
            Move::Unchanged => d.unchanged += 1,
            Move::Added => d.added += 1,
            Move::Gone => d.gone += 1,
        }
        d.rows.push(row);
    }
    d
}

/// One key's move; `worse` and `better` gather the reasons each way.
fn delta(k: (&str, &str, &str), o: Option<&BaselineBench>, n: Option<&BaselineBench>) -> BenchDelta {
    let (old_ns, new_ns) = (o.and_then(|r| r.ns_per_call), n.and_then(|r| r.ns_per_call));
    let threshold_ns = old_ns.map(|v| round2(threshold(v, o.and_then(|r| r.mad), n.and_then(|r| r.mad))));
    let mut worse = Vec::new();
    let mut better = Vec::new();
    if let (Some(a), Some(b), Some(t)) = (old_ns, new_ns, threshold_ns) {
        if b - a > t {
            worse.push("time");
        } else if a - b > t {
            better.push("time");
        }
    }
    let sc = |r: Option<&BaselineBench>| r.and_then(|r| r.syscalls_per_call);
    if let (Some(a), Some(b)) = (sc(o), sc(n)) {
        if b - a >= 0.5 {
            worse.push("syscalls");
        } else if a - b >= 0.5 {
            better.push("syscalls");
        }
    }
    let verdict = |r: Option<&BaselineBench>| r.and_then(|r| r.verdict.clone());
    let (ov, nv) = (verdict(o), verdict(n));
    if let (Some(a), Some(b)) = (&ov, &nv) {
        if a == "fast" && b != "fast" {
            worse.push("verdict");
        } else if a != "fast" && b == "fast" {
            better.push("verdict");
        }
    }
    let (moved, reasons) = match (o, n) {
        (None, _) => (Move::Added, Vec::new()),
        (_, None) => (Move::Gone, Vec::new()),
        _ if !worse.is_empty() => (Move::Slower, worse),
        _ if !better.is_empty() => (Move::Faster, better),
        _ => (Move::Unchanged, Vec::new()),
    };
    BenchDelta {
        function: k.0.into(),
        clock: k.1.into(),
        path: k.2.into(),
        old_ns,
        new_ns,
        delta_pct: match (old_ns, new_ns) {
            (Some(a), Some(b)) if a > 0.0 => Some(round2((b - a) / a * 100.0)),
            _ => None,
        },
        threshold_ns,
        old_syscalls_per_call: sc(o),
        new_syscalls_per_call: sc(n),
        old_verdict: ov,
        new_verdict: nv,
        moved,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, ns: f64, mad: f64, sc: f64, verdict: &str) -> BaselineBench {
        BaselineBench {
            function: "clock_gettime".into(),
            clock: "CLOCK_MONOTONIC".into(),
            path: path.into(),
            ns_per_call: Some(ns),
            mad: Some(mad),
            syscalls_per_call: Some(sc),
            verdict: Some(verdict.into()),
        }
    }

    #[test]
    fn slower_only_beyond_the_spread() {
        // t = max(3 × (1 + 1), 5% of 20) = 6 ns.
        assert_eq!(threshold(20.0, Some(1.0), Some(1.0)), 6.0);
        let old = [row("libc", 20.0, 1.0, 0.0, "fast")];
        let moved = |ns: f64, sc: f64, v: &str| compare("f", &old, &[row("libc", ns, 1.0, sc, v)]).rows[0].moved;
        assert_eq!(moved(26.0, 0.0, "fast"), Move::Unchanged);
        assert_eq!(moved(26.5, 0.0, "fast"), Move::Slower);
        assert_eq!(moved(13.5, 0.0, "fast"), Move::Faster);
        assert_eq!(moved(14.0, 0.0, "fast"), Move::Unchanged);
        // Fewer ns, but the call now enters the kernel: a regression.
        assert_eq!(moved(10.0, 1.0, "fast"), Move::Slower);
        assert_eq!(moved(20.0, 0.0, "libc-bypass"), Move::Slower);
        // The 5% floor when the spread is nil.
        let calm = [row("vdso", 100.0, 0.0, 0.0, "fast")];
        assert_eq!(compare("f", &calm, &[row("vdso", 104.0, 0.0, 0.0, "fast")]).slower, 0);
        assert_eq!(compare("f", &calm, &[row("vdso", 106.0, 0.0, 0.0, "fast")]).slower, 1);
        let d = compare("f", &old, &[row("vdso", 20.0, 0.0, 0.0, "fast")]);
        assert_eq!((d.added, d.gone, d.has_regression()), (1, 1, false));
    }
}
