//! `bench`'s report as a table and as Prometheus metrics.

use super::{Output, Prometheus, Render};
use crate::arch::VdsoFn;
use crate::model::bench::{Basis, BenchFact, BenchReport, BenchResult, Path};
use crate::model::policy::Verdict;
use crate::model::ClockRef;
use crate::model::Finding;
use crate::words::ns_text;
use serde::{Serialize, Serializer};

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
                    Basis::Timing => "verdicts are timing-based: neither perf nor seccomp could count syscalls here",
                }
            ),
        );
        if let Some(checks) = &self.verify {
            let failed = checks.iter().filter(|c| !c.ok).count();
            s += &format!("verify: {} checks, {} failed\n", checks.len(), failed);
        }
        s += &out.findings(&self.findings.iter().map(finding).collect::<Vec<_>>());
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

/// A bench fact's message and hint.
fn words(fact: &BenchFact) -> (String, Option<String>) {
    let arch = crate::arch::HOST_ABI.map_or("this", crate::arch::Abi::name);
    match fact {
        BenchFact::VdsoUnusable { error } => (
            format!("vdsoctl's own vDSO could not be used: {error}"),
            Some("every clock read of this process is a syscall; check `vdso=` on the kernel command line".into()),
        ),
        BenchFact::WrongVersion { symbol } => (
            format!("the vDSO exports {symbol} with another version than the C library expects: it is not bound"),
            None,
        ),
        BenchFact::NoVsyscallPage => (
            "no executable [vsyscall] page in this process (vsyscall=none): the vsyscall path is not measured".into(),
            None,
        ),
        BenchFact::NotCounted { error, recount } => (
            format!("syscalls per call cannot be counted: {error}"),
            (!recount).then(|| "verdicts below are timing-based (a path costing half a raw syscall or more counts as entering the kernel)".into()),
        ),
        BenchFact::MaxNsWithoutLibc => ("--max-ns compares the libc path, which --paths left out".into(), None),
        BenchFact::VerifyFailed { name, detail } => (format!("verify: {name} failed: {detail}"), None),
        BenchFact::LostFastPath { label, lost, clocksource } => {
            let (message, hint) = super::host::lost_fast_path(*lost, label, clocksource.as_deref());
            (message, Some(hint))
        }
        BenchFact::LibcSyscall { label, function, route, libc_ns, vdso_ns } => {
            let costs = super::host::cost_pair(*libc_ns, *vdso_ns);
            let (message, hint) = super::host::libc_syscall_words(*function, *route, &costs).unwrap_or_default();
            (format!("{label}: {message}"), Some(hint))
        }
        BenchFact::OverMaxNs { label, max, ns, vdso_ns, syscall_ns } => (
            format!("{label}: {}/call through libc, over --max-ns {max}", ns_text(*ns)),
            Some(match (vdso_ns, syscall_ns) {
                (Some(vdso), Some(sys)) => format!(
                    "the direct vDSO call measured {} here and the syscall {}: see the verdict column; a slow clocksource or a loaded host raises both",
                    ns_text(*vdso),
                    ns_text(*sys)
                ),
                _ => "see the verdict column: a bypass, a slow clocksource or a loaded host".into(),
            }),
        ),
        BenchFact::NotOffered { labels } => (
            format!(
                "{}: the {arch} vDSO does not offer {}, by design — the C library's path is what programs get",
                labels.join(", "),
                if labels.len() == 1 { "it" } else { "them" }
            ),
            None,
        ),
        BenchFact::TooNew { label, since, kernel } => {
            let this = kernel.map_or_else(|| "this kernel".into(), |(a, b)| format!("kernel {a}.{b}"));
            (
                format!(
                    "{label}: not offered by {this}'s vDSO (the {arch} vDSO has it from {}.{}) — every call is a syscall, whatever the C library",
                    since.0, since.1
                ),
                None,
            )
        }
        BenchFact::PathsDisagree { label, answer, fail, errno } => {
            let side = |v: &[Path]| v.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
            (
                format!(
                    "{label}: the paths disagree — {} answer, {} fail with {}",
                    side(answer),
                    side(fail),
                    errno.as_deref().unwrap_or("an error")
                ),
                Some("a program sees a different answer depending on how it calls; compare with `vdsoctl bench --verify`".into()),
            )
        }
        BenchFact::AlwaysSyscall { labels } => (
            format!(
                "{} {} the kernel even through the vDSO, as on every kernel (CPU-time and alarm clocks)",
                labels.join(", "),
                if labels.len() == 1 { "enters" } else { "enter" }
            ),
            None,
        ),
        BenchFact::Rejected { labels, alarm: true } => (
            format!(
                "the kernel rejects {} here (EINVAL): alarm clocks need an RTC that can wake the system",
                labels.join(", ")
            ),
            None,
        ),
        BenchFact::Rejected { labels, alarm: false } => (
            format!("the kernel rejects {} here (EINVAL): this kernel has no such clock id", labels.join(", ")),
            Some("clock ids 0–11 are the kernel's; `vdsoctl bench` with no --clocks measures every one".into()),
        ),
        BenchFact::VsyscallCost { costs } => {
            let costs: Vec<String> = costs.iter().map(|(label, ns)| format!("{label} {}", ns_text(*ns))).collect();
            (
                format!("[vsyscall] calls cost {} with no syscall counted: the kernel emulates them, invisible to strace", costs.join(", ")),
                Some("`vdsoctl trace` counts vsyscall:emulate_vsyscall; rebuild legacy binaries that still call the fixed page".into()),
            )
        }
    }
}

/// A bench fact as a finding, worded (its kind and status the model's).
pub fn finding(fact: &BenchFact) -> Finding {
    let (message, hint) = words(fact);
    let mut finding = Finding::new(fact.kind(), fact.status(), message, hint);
    if let BenchFact::LibcSyscall { route, libc_ns, vdso_ns, .. } = fact {
        let (version, fixed_in) = match route {
            crate::model::policy::LibcRoute::Older { version, since, .. } => {
                (Some(format!("{}.{}", version.0, version.1)), Some(format!("{}.{}", since.0, since.1)))
            }
            _ => (None, None),
        };
        finding.costs = Some(crate::model::row::Costs {
            libc_ns: *libc_ns,
            vdso_ns: *vdso_ns,
            libc_syscalls_per_call: None,
            vdso_syscalls_per_call: None,
            fixed_in,
        });
        finding.libc_version = version;
    }
    finding
}

/// A bench fact as `bench --json`'s `findings[]` has it.
impl Serialize for BenchFact {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        finding(self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    /// Issue 40: model/bench.rs holds no sentence.
    #[test]
    fn model_bench_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/bench.rs"));
        assert!(prose.is_empty(), "prose in model/bench.rs: {prose:?}");
    }
}
