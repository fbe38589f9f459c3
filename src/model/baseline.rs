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

/// The document's `format`: bumped when a key changes meaning (2: the
/// runtime, class and call keys are structured, not words).
pub const FORMAT: &str = "vdsoctl-baseline/2";

/// The formats this vdsoctl reads: its own, and 1 (whose `glibc 2.36`,
/// `ELF64 x86_64` and `[vsyscall] time` keys are read into their parts).
pub const READS: [&str; 2] = [FORMAT, "vdsoctl-baseline/1"];

/// A C library or runtime and its version (`glibc` `2.36`, `go`
/// `go1.24.1`, `musl` without one). Format 1 wrote it as one string,
/// `glibc 2.36`, read here into its parts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(from = "RuntimeWire")]
pub struct RuntimeKey {
    pub runtime: String,
    pub version: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RuntimeWire {
    Parts {
        runtime: String,
        #[serde(default)]
        version: Option<String>,
    },
    Words(String),
}

impl From<RuntimeWire> for RuntimeKey {
    fn from(w: RuntimeWire) -> RuntimeKey {
        match w {
            RuntimeWire::Parts { runtime, version } => RuntimeKey { runtime, version },
            RuntimeWire::Words(s) => match s.split_once(char::is_whitespace) {
                Some((r, v)) => RuntimeKey { runtime: r.into(), version: Some(v.into()) },
                None => RuntimeKey { runtime: s, version: None },
            },
        }
    }
}

/// What one audit of an image judged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub format: String,
    /// `image`, `command` (`check -- CMD`) or `bench`.
    pub kind: String,
    /// Every C library and runtime of the image, sorted.
    #[serde(default)]
    pub runtimes: Vec<RuntimeKey>,
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
    /// The machine (`uname -m`: `x86_64`, `aarch64`) a `bench` or a
    /// `check -- CMD` ran on: its times and counts are that machine's, and
    /// a baseline of another is refused. Absent for an image (each binary
    /// keeps its own `machine`) and in a baseline written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
}

impl Baseline {
    /// An empty baseline of `kind`.
    pub fn of_kind(kind: &str) -> Baseline {
        Baseline {
            format: FORMAT.into(),
            kind: kind.into(),
            runtimes: Vec::new(),
            binaries: Vec::new(),
            findings: Vec::new(),
            calls: Vec::new(),
            bench: Vec::new(),
            arch: None,
        }
    }

    /// The machines of an image baseline's binaries, sorted (none for
    /// another kind).
    pub fn machines(&self) -> Vec<&str> {
        let mut m: Vec<&str> = self.binaries.iter().map(|b| b.machine.as_str()).filter(|m| !m.is_empty()).collect();
        m.sort_unstable();
        m.dedup();
        m
    }

    /// Whether `self` (read) was measured on, or is of, another
    /// architecture than `now`: two runs' machines differ, or two images
    /// share no machine. Unknown on either side: not said to differ.
    pub fn other_arch(&self, now: &Baseline) -> bool {
        let runs = matches!((&self.arch, &now.arch), (Some(a), Some(b)) if a != b);
        let (was, is) = (self.machines(), now.machines());
        runs || !was.is_empty() && !is.is_empty() && !was.iter().any(|m| is.contains(m))
    }
}

/// `check -- CMD`: one process name's calls of one function and clock.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct BaselineCall {
    /// The process's comm.
    pub process: String,
    /// `clock_gettime`, `getrandom`; `time` with `vsyscall` (format 1's
    /// `[vsyscall] time` is read so).
    pub function: String,
    /// A call into the [vsyscall] page (emulated), not a syscall.
    #[serde(default)]
    pub vsyscall: bool,
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
    /// `ELF64`.
    pub class: String,
    /// `x86_64` (format 1 wrote it after the class: `ELF64 x86_64`).
    #[serde(default)]
    pub machine: String,
    /// Its C library or runtime.
    pub runtime: RuntimeKey,
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
            arch: None,
        }
    }
}

impl Baseline {
    /// A format-1 document's worded keys read into their parts (the class's
    /// machine, a [vsyscall] call's function), so both compare alike.
    pub fn upgraded(mut self) -> Baseline {
        for b in self.binaries.iter_mut().filter(|b| b.machine.is_empty()) {
            if let Some((class, machine)) = b.class.split_once(char::is_whitespace) {
                (b.class, b.machine) = (class.to_string(), machine.to_string());
            }
        }
        for c in &mut self.calls {
            if let Some(f) = c.function.strip_prefix("[vsyscall]") {
                (c.function, c.vsyscall) = (f.trim_start().to_string(), true);
            }
        }
        self.format = FORMAT.into();
        self
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

/// What a delta is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Binary,
    Finding,
    /// `check -- CMD`: a process name's calls of one function and clock.
    Call,
}

/// `check -- CMD`'s call key and its counts then and now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallDelta {
    pub process: String,
    pub function: String,
    pub vsyscall: bool,
    pub clock: String,
    #[serde(skip)]
    pub was_count: Option<u64>,
    #[serde(skip)]
    pub now_count: Option<u64>,
}

/// One line of the comparison (its JSON, with the call's key worded, is
/// render/baseline.rs's).
#[derive(Debug, Clone)]
pub struct Delta {
    pub change: Change,
    pub scope: Scope,
    /// The binary's path or the finding's name (empty for a call: `call`).
    pub key: String,
    /// The call it is about (scope `call`).
    pub call: Option<CallDelta>,
    /// The status in the baseline; null when it was not there.
    pub was: Option<Status>,
    /// The status now; null when it is gone.
    pub now: Option<Status>,
    /// The detail now (the baseline's when gone).
    pub detail: String,
    /// A binary whose content changed (its SHA-256 differs).
    pub rebuilt: bool,
}

/// The comparison with a baseline (JSON `baseline`, written by render/baseline.rs).
#[derive(Debug, Clone, Default)]
pub struct BaselineDiff {
    pub file: String,
    pub new: usize,
    pub fixed: usize,
    pub unchanged: usize,
    /// Binaries added and removed that were OK (not listed one by one).
    pub added_ok: usize,
    pub removed_ok: usize,
    /// The runtimes before and now, when they differ.
    pub runtimes_was: Vec<RuntimeKey>,
    pub runtimes_now: Vec<RuntimeKey>,
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
                scope: Scope::Binary,
                key: k.into(),
                call: None,
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
                scope: Scope::Finding,
                key: k.into(),
                call: None,
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
    type Key = (String, String, bool, String);
    let bad = |b: &'_ Baseline| -> BTreeMap<Key, u64> {
        let mut m = BTreeMap::new();
        for c in b.calls.iter().filter(|c| !c.expected) {
            super::add(
                m.entry((c.process.clone(), c.function.clone(), c.vsyscall, c.clock.clone())).or_insert(0u64),
                c.count,
            );
        }
        m
    };
    let (was, now) = (bad(old), bad(new));
    let mut keys: Vec<&Key> = was.keys().chain(now.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (w, n) = (was.get(k).copied(), now.get(k).copied());
        let change = match (w, n) {
            (None, Some(_)) => Change::New,
            (Some(_), None) => Change::Fixed,
            _ => Change::Unchanged,
        };
        let (process, function, vsyscall, clock) = k.clone();
        d.deltas.push(Delta {
            change,
            scope: Scope::Call,
            key: String::new(),
            call: Some(CallDelta { process, function, vsyscall, clock, was_count: w, now_count: n }),
            was: w.map(|_| Status::Fail),
            now: n.map(|_| Status::Fail),
            detail: String::new(),
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
            class: "ELF64".into(),
            machine: "x86_64".into(),
            runtime: RuntimeKey { runtime: "glibc".into(), version: Some("2.36".into()) },
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
            runtimes: vec![RuntimeKey { runtime: "glibc".into(), version: Some("2.36".into()) }],
            binaries,
            findings: findings
                .iter()
                .map(|(n, s)| BaselineFinding { name: (*n).into(), kind: None, status: st(s), detail: String::new() })
                .collect(),
            calls: Vec::new(),
            bench: Vec::new(),
            arch: None,
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

    /// Format 1 worded its keys; they are read into their parts.
    #[test]
    fn a_format_1_baseline_is_read_into_parts() {
        let doc = r#"{"format":"vdsoctl-baseline/1","kind":"command","runtimes":["glibc 2.36","musl"],
            "binaries":[{"path":"/a","sha256":"1","class":"ELF64 x86_64","runtime":"go go1.24.1","status":"ok",
            "detail":"","random":"vdso"}],"findings":[],
            "calls":[{"process":"p","function":"[vsyscall] time","clock":"-","count":3,"expected":false}]}"#;
        let b = serde_json::from_str::<Baseline>(doc).unwrap().upgraded();
        let key = |r: &str, v: Option<&str>| RuntimeKey { runtime: r.into(), version: v.map(str::to_string) };
        assert_eq!(b.runtimes, [key("glibc", Some("2.36")), key("musl", None)]);
        assert_eq!((b.binaries[0].class.as_str(), b.binaries[0].machine.as_str()), ("ELF64", "x86_64"));
        assert_eq!(b.binaries[0].runtime, key("go", Some("go1.24.1")));
        assert_eq!((b.calls[0].function.as_str(), b.calls[0].vsyscall), ("time", true));
        assert_eq!(b.format, FORMAT);
    }

    /// Calls at u64::MAX summed per name (two processes of one name): the
    /// sum saturates, and the same bypass on both sides is not new.
    #[test]
    fn calls_at_u64_max_saturate() {
        let call = |count| BaselineCall {
            process: "hot".into(),
            function: "clock_gettime".into(),
            vsyscall: false,
            clock: "CLOCK_MONOTONIC_RAW".into(),
            count,
            expected: false,
        };
        let mut old = base(Vec::new(), &[]);
        old.kind = "command".into();
        old.calls = vec![call(u64::MAX), call(u64::MAX)];
        let mut now = old.clone();
        now.calls = vec![call(u64::MAX)];
        let d = compare("b.json", &old, &now);
        assert_eq!(d.new, 0, "{d:?}");
    }
}
