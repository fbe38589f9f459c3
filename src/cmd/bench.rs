//! `bench`: ns/call of each clock function through libc, a direct vDSO call,
//! the raw syscall and (x86_64) the vsyscall page, with the syscalls each path
//! makes counted by perf, so that "fast" is proven, not guessed.

use super::Outcome;
use crate::arch::{self, VdsoFn};
use crate::cli::BenchArgs;
use crate::error::{Error, Result};
use crate::measure::bench::{self as m, BenchRequest, Path};
use crate::model::bench::{measure_report, Basis, BenchReport, BenchResult};
use crate::model::policy::Verdict;
use crate::model::ClockRef;
use crate::render::{emit, Output, Prometheus, Render};

/// The command line as a typed request.
fn select(args: &BenchArgs) -> Result<BenchRequest> {
    let clocks = if args.clocks.is_empty() {
        arch::CLOCKS.iter().map(|c| c.id).collect()
    } else {
        let mut v = Vec::new();
        for c in &args.clocks {
            let id = arch::parse_clock(c).ok_or_else(|| {
                let names: Vec<_> = arch::CLOCKS.iter().map(|c| c.name.trim_start_matches("CLOCK_")).collect();
                Error::Usage(format!("unknown clock {c:?} — use a number or one of {}", names.join(", ")))
            })?;
            if !v.contains(&id) {
                v.push(id);
            }
        }
        v
    };
    let functions = if args.functions.is_empty() && !args.clocks.is_empty() {
        // `--clocks` alone names what to measure and gate: the functions that
        // take a clock, not gettimeofday, time and getcpu beside them.
        m::FUNCTIONS.into_iter().filter(|f| f.takes_clock()).collect()
    } else if args.functions.is_empty() {
        m::FUNCTIONS.to_vec()
    } else {
        let mut v = Vec::new();
        for f in &args.functions {
            let f = m::FUNCTIONS.into_iter().find(|g| g.name().eq_ignore_ascii_case(f.trim())).ok_or_else(|| {
                let names: Vec<_> = m::FUNCTIONS.iter().map(|g| g.name()).collect();
                Error::Usage(format!("unknown function {f:?} — use one of {}", names.join(", ")))
            })?;
            if !v.contains(&f) {
                v.push(f);
            }
        }
        v.sort();
        v
    };
    let paths = if args.paths.is_empty() {
        Path::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for p in &args.paths {
            let p = Path::parse(p)
                .ok_or_else(|| Error::Usage(format!("unknown path {p:?} — use libc, vdso, syscall or vsyscall")))?;
            if !v.contains(&p) {
                v.push(p);
            }
        }
        v.sort();
        v
    };
    let max_ns = crate::model::policy::max_ns(args.max_ns)?;
    Ok(BenchRequest { clocks, functions, paths, verify: args.verify, max_ns, quick: args.quick })
}

/// `vdsoctl bench`.
pub fn run(args: &BenchArgs, out: &Output) -> Result<Outcome> {
    let (report, crossed) = measure_report(&select(args)?)?;
    emit(out, &report)?;
    // A FAIL line (a lost fast path, --max-ns, --verify) means exit 1.
    Ok(Outcome::from_crossed(crossed || crate::render::any_fail(&report.findings)))
}

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
            let name = clock.map_or_else(
                || "-".into(),
                |c| {
                    let t = c.text();
                    t.strip_prefix("CLOCK_").map_or_else(|| t.clone(), str::to_string)
                },
            );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(clocks: &[&str], functions: &[&str], paths: &[&str]) -> BenchArgs {
        BenchArgs {
            clocks: clocks.iter().map(|s| s.to_string()).collect(),
            functions: functions.iter().map(|s| s.to_string()).collect(),
            paths: paths.iter().map(|s| s.to_string()).collect(),
            verify: false,
            max_ns: None,
            quick: true,
        }
    }

    #[test]
    fn selection_parses_and_rejects() {
        let s = select(&args(&["monotonic_raw", "0"], &["time", "clock_gettime"], &["vdso", "libc"])).unwrap();
        assert_eq!(s.clocks, vec![4, 0]);
        assert_eq!(s.functions, vec![VdsoFn::ClockGettime, VdsoFn::Time]);
        assert_eq!(s.paths, vec![Path::Libc, Path::Vdso]);
        assert!(matches!(select(&args(&["bogus"], &[], &[])), Err(Error::Usage(_))));
        assert!(matches!(select(&args(&[], &["clock_gettime64"], &[])), Err(Error::Usage(_))));
        assert!(matches!(select(&args(&[], &[], &["ptrace"])), Err(Error::Usage(_))));
        let all = select(&args(&[], &[], &[])).unwrap();
        assert_eq!(all.clocks.len(), arch::CLOCKS.len());
        assert_eq!(all.functions, m::FUNCTIONS.to_vec());
        // --clocks alone: only the functions that take a clock are measured (and gated).
        let one = select(&args(&["PROCESS_CPUTIME_ID"], &[], &[])).unwrap();
        assert!(!one.functions.is_empty() && one.functions.iter().all(|f| f.takes_clock()), "{:?}", one.functions);
        assert!(!one.functions.contains(&VdsoFn::Time) && !one.functions.contains(&VdsoFn::Getcpu));
    }
}
