//! The typed JSON contract of `bench`.

use super::*;

// ---- bench ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bench {
    results: Vec<BenchResult>,
    findings: Vec<Finding>,
    basis: String,
    counted_by: Option<String>,
    verify: Option<Vec<serde_json::Value>>,
    plan: BenchPlan,
    paths: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchResult {
    function: String,
    clock: Option<Clock>,
    path: String,
    ns_per_call: Option<f64>,
    syscalls_per_call: Option<f64>,
    verdict: Option<String>,
    stats: Option<Stats>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stats {
    median: f64,
    min: f64,
    max: f64,
    mean: f64,
    stddev: Option<f64>,
    mad: f64,
    rounds: usize,
    batch: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchPlan {
    batch_ns: u64,
    rounds: u32,
}

#[test]
fn bench_quick() {
    let _lock = crate::cli::common::system_wide_lock();
    let b: Bench = doc(&["bench", "--quick"], &[0]);
    assert!(["counted", "timing"].contains(&b.basis.as_str()));
    // Counted by something named, or by nothing; root here counts with perf.
    match (b.basis.as_str(), b.counted_by.as_deref()) {
        ("counted", Some("perf" | "seccomp")) | ("timing", None) => {}
        other => panic!("basis and counted_by disagree: {other:?}"),
    }
    if crate::cli::common::is_root() {
        assert_eq!(b.counted_by.as_deref(), Some("perf"));
    }
    assert!(b.verify.is_none());
    assert!(b.plan.batch_ns > 0 && b.plan.rounds > 0);
    assert!(b.paths.iter().all(|p| ["libc", "vdso", "syscall", "vsyscall"].contains(&p.as_str())));
    let mono = b
        .results
        .iter()
        .find(|r| r.function == "clock_gettime" && r.clock == Some(Clock::Name("CLOCK_MONOTONIC".into())))
        .expect("clock_gettime(CLOCK_MONOTONIC) measured");
    assert!(b.paths.contains(&mono.path));
    for r in &b.results {
        if let Some(c) = &r.clock {
            c.assert_well_named();
        }
        if let Some(s) = &r.stats {
            assert!(s.min <= s.median && s.median <= s.max && s.mean > 0.0 && s.mad >= 0.0 && s.rounds > 0);
            assert!(s.batch > 0 && s.stddev.is_none_or(|d| d >= 0.0));
            assert!(r.ns_per_call.is_some());
        }
        assert!(r.syscalls_per_call.is_none_or(|s| s >= 0.0));
        assert!(r.verdict.as_deref().is_none_or(|v| !v.is_empty()) && r.error.as_deref() != Some(""));
    }
    assert!(b.findings.iter().all(|f| !f.message.is_empty()));
}
