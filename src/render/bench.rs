//! `bench`'s report as a table and as Prometheus metrics.

use super::{Output, Prometheus, Render};
use crate::arch::VdsoFn;
use crate::model::bench::{Basis, BenchReport, BenchResult, Path};
use crate::model::policy::Verdict;
use crate::model::ClockRef;

/// `12.3`, `1,250` (ns, as the column's header says), the error, or `-`
/// when unknown. The spread is said in the row's prose ([`spread`]), so a
/// noisy host never widens the grid past 80 columns.
fn ns_cell(r: Option<&BenchResult>) -> String {
    match r {
        Some(BenchResult { ns_per_call: Some(ns), .. }) => crate::render::ns_number(*ns),
        Some(BenchResult { error: Some(e), .. }) => e.clone(),
        _ => "-".into(),
    }
}

/// `libc ±4%`: a path's spread, only when it rounds to 1% or more.
fn spread(p: Path, r: Option<&BenchResult>) -> Option<String> {
    let spread = r?.stats?.spread() * 100.0;
    (spread >= 0.5).then(|| format!("{} ±{spread:.0}%", p.name()))
}

/// Syscalls per call as few digits as say it: `0`, `1`, `0.5`, `0.02`.
fn per_call(s: f64) -> String {
    let t = format!("{s:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl Render for BenchReport {
    /// One row per function and clock: the clock without its `CLOCK_`
    /// prefix (as `trace` names it), each path's time in ns (the unit in the
    /// header), and VERDICT, prose with the syscalls each path made: at 80
    /// columns it has no room beside the times and goes under its row.
    fn render_table(&self, out: &Output) -> String {
        let mut header: Vec<String> = vec!["FUNCTION".into(), "CLOCK".into()];
        header.extend(self.paths.iter().map(|p| format!("{} ns", p.name().to_uppercase())));
        header.push("VERDICT".into());
        let refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = out.table(&refs);
        t.wrap("VERDICT");
        // Rows in measurement order, one per function and clock.
        let mut keys: Vec<(VdsoFn, Option<ClockRef>)> = Vec::new();
        for r in &self.results {
            let k = (r.function, r.clock);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (function, clock) in keys {
            let of = |p: Path| self.results.iter().find(|r| r.function == function && r.clock == clock && r.path == p);
            let name = clock.map_or_else(|| "-".into(), |c| c.short());
            let mut row = vec![function.name().to_string(), name];
            row.extend(self.paths.iter().map(|&p| ns_cell(of(p))));
            let counts: Vec<String> = self
                .paths
                .iter()
                .filter_map(|&p| {
                    of(p).and_then(|r| r.syscalls_per_call).map(|s| format!("{} {}", p.name(), per_call(s)))
                })
                .collect();
            let verdict =
                self.results.iter().find(|r| r.function == function && r.clock == clock).and_then(|r| r.verdict);
            let mut prose = verdict.map_or("-", Verdict::name).to_string();
            let spreads: Vec<String> = self.paths.iter().filter_map(|&p| spread(p, of(p))).collect();
            if !spreads.is_empty() {
                prose += &format!("; spread {}", spreads.join(", "));
            }
            if !counts.is_empty() {
                prose += &format!("; syscalls/call: {}", counts.join(", "));
            }
            row.push(prose);
            t.add_row(row);
        }
        let mut s = format!("{t}\n");
        let first = self.results.iter().find_map(|r| r.stats);
        // The footnote wraps at the width like the findings under it.
        s += &out.prose(
            "time per call: ",
            &format!(
                "median of {} timed batches (±: median absolute deviation, shown from 1%); {}",
                first.map_or(self.plan.rounds as usize, |st| st.rounds),
                match self.basis {
                    Basis::Counted => "syscalls/call counted by perf (raw_syscalls:sys_enter) on vdsoctl's own thread",
                    Basis::Timing => "verdicts are timing-based: perf could not count syscalls here",
                }
            ),
        );
        if let Some(checks) = &self.verify {
            let failed = checks.iter().filter(|c| !c.ok).count();
            s += &format!("verify: {} checks, {} failed\n", checks.len(), failed);
        }
        s += &out.findings(&self.findings);
        if let Some(d) = &self.baseline {
            s += &super::baseline::bench_text(d, out);
        }
        s
    }

    fn render_prometheus(&self) -> Option<String> {
        let mut p = Prometheus::default();
        let label =
            |r: &BenchResult| (r.function.name(), r.clock.map(ClockRef::text).unwrap_or_default(), r.path.name());
        // Base unit seconds: promtool rejects `ns` in a name ("abbreviated units").
        p.family("bench_seconds_per_call", "gauge", "Median seconds per call of a clock function through one path.");
        for r in &self.results {
            if let Some(ns) = r.ns_per_call {
                let (f, c, path) = label(r);
                p.sample("bench_seconds_per_call", &[("function", f), ("clock", &c), ("path", path)], ns * 1e-9);
            }
        }
        p.family(
            "bench_syscalls_per_call",
            "gauge",
            "Syscalls per call of a clock function through one path, counted by perf.",
        );
        for r in &self.results {
            if let Some(sc) = r.syscalls_per_call {
                let (f, c, path) = label(r);
                p.sample("bench_syscalls_per_call", &[("function", f), ("clock", &c), ("path", path)], sc);
            }
        }
        Some(p.finish())
    }
}
