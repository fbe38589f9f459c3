//! `check --save-baseline` and `--baseline`: what an audit judged, as a
//! stable document (no pid, time or host fact; sorted), and what changed
//! against one — per binary and per finding, new / fixed / unchanged, the
//! way `perf diff` shows a delta.
//!
//! A binary is keyed by its path in the image (its content hash says
//! whether it was rebuilt); an image finding (`random:glibc-2.36`,
//! `image_walk`) by its name. The host-context rows (`vdso_symbols`,
//! `vsyscall`) are the runner's, not the image's: never in a baseline.

use super::Status;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The document's `format`: bumped when a key changes meaning.
pub const FORMAT: &str = "vdsoctl-baseline/1";

/// What one audit of an image judged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub format: String,
    /// `image`, `command` (`check -- CMD`) or `bench`.
    pub kind: String,
    /// Every C library and runtime of the image, `glibc 2.36`, sorted.
    #[serde(default)]
    pub runtimes: Vec<String>,
    /// Sorted by path.
    #[serde(default)]
    pub binaries: Vec<BaselineBinary>,
    /// The image's own findings (the command's checks), sorted by name.
    #[serde(default)]
    pub findings: Vec<BaselineFinding>,
    /// `check -- CMD`: the syscalls counted per process name, function and
    /// clock, sorted (absent for an image).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<BaselineCall>,
    /// `bench`: per function, clock and path, sorted (model::bench_baseline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bench: Vec<super::bench_baseline::BaselineBench>,
}

/// `check -- CMD`: one process name's calls of one function and clock.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct BaselineCall {
    /// The process's comm.
    pub process: String,
    /// `clock_gettime`, `getrandom`, `[vsyscall] time`.
    pub function: String,
    /// `CLOCK_MONOTONIC`; `-` for a call without a clock id.
    pub clock: String,
    pub count: u64,
    /// A syscall the vDSO does not serve (a CPU-time clock): no finding.
    pub expected: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BaselineBinary {
    pub path: String,
    /// SHA-256 of its content.
    pub sha256: String,
    /// `ELF64 x86_64`.
    pub class: String,
    /// `glibc 2.36`, `go go1.24.1`, `musl`.
    pub runtime: String,
    /// `ok`, `warn`, `fail`, `info`, `skip` (typed: a misspelled one is
    /// a malformed baseline, not an OK).
    pub status: Status,
    /// The kinds of its findings at WARN or FAIL (doc/FINDINGS.md).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// The verdict's words: the call sites it found are in them.
    pub detail: String,
    /// What its runtime does for random bytes: `vdso`, `syscall`, ...
    pub random: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BaselineFinding {
    pub name: String,
    /// Its kind (doc/FINDINGS.md); absent in a baseline written before kinds.
    #[serde(default)]
    pub kind: Option<String>,
    pub status: Status,
    pub detail: String,
}

impl Baseline {
    /// The baseline of a `bench` run: only its rows (no host fact, time or pid).
    pub fn of_bench(report: &super::bench::BenchReport) -> Baseline {
        Baseline {
            format: FORMAT.into(),
            kind: "bench".into(),
            runtimes: Vec::new(),
            binaries: Vec::new(),
            findings: Vec::new(),
            calls: Vec::new(),
            bench: report.baseline_rows(),
        }
    }
}

pub fn runtime_text(runtime: &str, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("{runtime} {v}"),
        None => runtime.to_string(),
    }
}

/// How one binary or finding moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// WARN or FAIL now, and not as bad before (or absent).
    New,
    /// WARN or FAIL before, and better now (or gone).
    Fixed,
    /// WARN or FAIL in both, as bad.
    Unchanged,
}

/// One line of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    pub change: Change,
    /// `binary`, `finding` or `call` (`check -- CMD`: "comm function clock").
    pub scope: &'static str,
    /// The binary's path or the finding's name.
    pub key: String,
    /// The status in the baseline; null when it was not there.
    pub was: Option<Status>,
    /// The status now; null when it is gone.
    pub now: Option<Status>,
    /// The detail now (the baseline's when gone).
    pub detail: String,
    /// A binary whose content changed (its SHA-256 differs).
    pub rebuilt: bool,
}

/// The comparison with a baseline (JSON `baseline`).
#[derive(Debug, Clone, Serialize, Default)]
pub struct BaselineDiff {
    pub file: String,
    pub new: usize,
    pub fixed: usize,
    pub unchanged: usize,
    /// Binaries added and removed that were OK (not listed one by one).
    pub added_ok: usize,
    pub removed_ok: usize,
    /// The runtimes before and now, when they differ.
    pub runtimes_was: Vec<String>,
    pub runtimes_now: Vec<String>,
    /// New first, then fixed, then unchanged; each by key.
    pub deltas: Vec<Delta>,
}

impl BaselineDiff {
    /// The gate: anything new at WARN or FAIL.
    pub fn has_new(&self) -> bool {
        self.new > 0
    }
}

/// One key's move from `was` to `now`; None when neither is WARN or FAIL.
fn change(was: Option<Status>, now: Option<Status>) -> Option<Change> {
    let (w, n) = (was.unwrap_or(Status::Ok), now.unwrap_or(Status::Ok));
    if w < Status::Warn && n < Status::Warn {
        return None;
    }
    Some(match n.cmp(&w) {
        std::cmp::Ordering::Greater => Change::New,
        std::cmp::Ordering::Less => Change::Fixed,
        std::cmp::Ordering::Equal => Change::Unchanged,
    })
}

/// What changed from `old` to `new`.
pub fn compare(file: &str, old: &Baseline, new: &Baseline) -> BaselineDiff {
    let mut d = BaselineDiff { file: file.into(), ..Default::default() };
    let olds: BTreeMap<&str, &BaselineBinary> = old.binaries.iter().map(|b| (b.path.as_str(), b)).collect();
    let news: BTreeMap<&str, &BaselineBinary> = new.binaries.iter().map(|b| (b.path.as_str(), b)).collect();
    let mut keys: Vec<&str> = olds.keys().chain(news.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (o, n) = (olds.get(k), news.get(k));
        let rebuilt = matches!((o, n), (Some(o), Some(n)) if o.sha256 != n.sha256);
        // A kind at WARN or FAIL the baseline did not have for it is new,
        // though the status be the same (a baseline without kinds: by status).
        let new_kind = matches!((o, n), (Some(o), Some(n)) if !o.kinds.is_empty()
            && n.kinds.iter().any(|k| !o.kinds.contains(k)));
        let moved = match change(o.map(|b| b.status), n.map(|b| b.status)) {
            Some(Change::Unchanged | Change::Fixed) if new_kind => Some(Change::New),
            c => c,
        };
        match moved {
            Some(c) => d.deltas.push(Delta {
                change: c,
                scope: "binary",
                key: k.into(),
                was: o.map(|b| b.status),
                now: n.map(|b| b.status),
                detail: n.or(o).map(|b| b.detail.clone()).unwrap_or_default(),
                rebuilt,
            }),
            None if o.is_none() => d.added_ok += 1,
            None if n.is_none() => d.removed_ok += 1,
            None => {}
        }
    }
    let oldf: BTreeMap<&str, &BaselineFinding> = old.findings.iter().map(|f| (f.name.as_str(), f)).collect();
    let newf: BTreeMap<&str, &BaselineFinding> = new.findings.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut names: Vec<&str> = oldf.keys().chain(newf.keys()).copied().collect();
    names.sort();
    names.dedup();
    for k in names {
        let (o, n) = (oldf.get(k), newf.get(k));
        if let Some(c) = change(o.map(|f| f.status), n.map(|f| f.status)) {
            d.deltas.push(Delta {
                change: c,
                scope: "finding",
                key: k.into(),
                was: o.map(|f| f.status),
                now: n.map(|f| f.status),
                detail: n.or(o).map(|f| f.detail.clone()).unwrap_or_default(),
                rebuilt: false,
            });
        }
    }
    compare_calls(old, new, &mut d);
    d.deltas.sort_by(|a, b| a.change.cmp(&b.change).then_with(|| a.key.cmp(&b.key)));
    d.new = d.deltas.iter().filter(|x| x.change == Change::New).count();
    d.fixed = d.deltas.iter().filter(|x| x.change == Change::Fixed).count();
    d.unchanged = d.deltas.iter().filter(|x| x.change == Change::Unchanged).count();
    if old.runtimes != new.runtimes {
        d.runtimes_was = old.runtimes.clone();
        d.runtimes_now = new.runtimes.clone();
    }
    d
}

/// `check -- CMD`: a bypass (a call the vDSO should have served) by a
/// process name, function and clock is FAIL where it is counted; the
/// expected calls are no finding.
fn compare_calls(old: &Baseline, new: &Baseline, d: &mut BaselineDiff) {
    type Key<'a> = (&'a str, &'a str, &'a str);
    let bad = |b: &'_ Baseline| -> BTreeMap<(String, String, String), u64> {
        let mut m = BTreeMap::new();
        for c in b.calls.iter().filter(|c| !c.expected) {
            *m.entry((c.process.clone(), c.function.clone(), c.clock.clone())).or_insert(0) += c.count;
        }
        m
    };
    let (was, now) = (bad(old), bad(new));
    let mut keys: Vec<&(String, String, String)> = was.keys().chain(now.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let key: Key = (&k.0, &k.1, &k.2);
        let (w, n) = (was.get(k), now.get(k));
        let change = match (w, n) {
            (None, Some(_)) => Change::New,
            (Some(_), None) => Change::Fixed,
            _ => Change::Unchanged,
        };
        let count = |c: Option<&u64>| c.map_or_else(|| "none".to_string(), |c| format!("×{c}"));
        d.deltas.push(Delta {
            change,
            scope: "call",
            key: format!("{} {} {}", key.0, key.1, key.2),
            was: w.map(|_| Status::Fail),
            now: n.map(|_| Status::Fail),
            detail: format!("syscalls the vDSO should have served: {} then, {} now", count(w), count(n)),
            rebuilt: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(s: &str) -> Status {
        serde_json::from_value(serde_json::Value::String(s.into())).unwrap()
    }

    fn bin(path: &str, sha: &str, status: &str) -> BaselineBinary {
        BaselineBinary {
            path: path.into(),
            sha256: sha.into(),
            class: "ELF64 x86_64".into(),
            runtime: "glibc 2.36".into(),
            status: st(status),
            kinds: Vec::new(),
            detail: format!("{path} is {status}"),
            random: "syscall".into(),
        }
    }

    fn base(binaries: Vec<BaselineBinary>, findings: &[(&str, &str)]) -> Baseline {
        Baseline {
            format: FORMAT.into(),
            kind: "image".into(),
            runtimes: vec!["glibc 2.36".into()],
            binaries,
            findings: findings
                .iter()
                .map(|(n, s)| BaselineFinding { name: (*n).into(), kind: None, status: st(s), detail: String::new() })
                .collect(),
            calls: Vec::new(),
            bench: Vec::new(),
        }
    }

    #[test]
    fn new_fixed_and_unchanged() {
        let old = base(
            vec![bin("/a", "1", "ok"), bin("/b", "1", "warn"), bin("/c", "1", "fail"), bin("/gone", "1", "ok")],
            &[("random:glibc-2.36", "warn")],
        );
        let new = base(
            vec![bin("/a", "2", "fail"), bin("/b", "1", "warn"), bin("/c", "2", "ok"), bin("/added", "1", "ok")],
            &[],
        );
        let d = compare("f", &old, &new);
        let got: Vec<_> = d.deltas.iter().map(|x| (x.change, x.key.as_str(), x.rebuilt)).collect();
        assert_eq!(
            got,
            [
                (Change::New, "/a", true),
                (Change::Fixed, "/c", true),
                (Change::Fixed, "random:glibc-2.36", false),
                (Change::Unchanged, "/b", false)
            ]
        );
        assert_eq!((d.new, d.fixed, d.unchanged, d.added_ok, d.removed_ok), (1, 2, 1, 1, 1));
        assert!(d.has_new());
        let same = compare("f", &new, &new);
        assert!(!same.has_new());
        assert_eq!((same.new, same.fixed), (0, 0));
        // A document round-trips byte for byte.
        let text = serde_json::to_string_pretty(&old).unwrap();
        let back: Baseline = serde_json::from_str(&text).unwrap();
        assert_eq!(back, old);
        // A misspelled status is a malformed baseline, never an OK.
        let typo = text.replacen("\"warn\"", "\"wran\"", 1);
        assert!(serde_json::from_str::<Baseline>(&typo).is_err());
    }
}
