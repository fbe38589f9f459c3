//! The `bench` report and how a bench run is judged: shared by the `bench`
//! command, `check`'s clock checks and `serve`'s cost gauges, so no command
//! calls another. The run itself (timing loops, syscall counting, the
//! `--verify` calls) is `measure::bench::run`'s; the verdict rules are
//! `model::policy`'s. Nothing here reads or measures.

use crate::arch::{self, VdsoFn};
use crate::inspect::host::KernelFacts;
/// The path a call takes (libc, vdso, syscall, vsyscall): measure's type, the report's key.
pub use crate::measure::bench::Path;
use crate::measure::bench::{self as m, BenchRequest, BenchRun, Check, CountedBy, Plan, Stats, Target, TargetRun};
use crate::model::kind::Kind;
use crate::model::policy::Verdict;
use crate::model::{policy, ClockRef, Status};
use serde::Serialize;
use std::collections::BTreeMap;

/// The `bench` report (DESIGN keys: results, findings).
#[derive(Debug, Serialize)]
pub struct BenchReport {
    /// One entry per function, clock and path measured.
    pub results: Vec<BenchResult>,
    /// What the run found, typed: render/bench.rs words each (`BenchFact`).
    pub findings: Vec<BenchFact>,
    /// `counted` or `timing` (nothing could count).
    pub basis: Basis,
    /// What counted: `perf` (raw_syscalls:sys_enter, every syscall of the
    /// path), `seccomp` (a filter in a forked child, where perf is refused:
    /// the calls that entered through the function's own syscall); `null`
    /// when timing-based.
    pub counted_by: Option<CountedBy>,
    /// The cross-path checks of `--verify`; `null` without it.
    pub verify: Option<Vec<Check>>,
    pub plan: Plan,
    /// The paths shown, in order.
    pub paths: Vec<Path>,
    /// `--baseline`: what moved since the baseline; absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<super::bench_baseline::BenchBaselineDiff>,
}

/// How the syscall verdicts were reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Syscalls counted (perf, or a seccomp filter: `counted_by`).
    Counted,
    /// Inferred from cost next to the raw syscall's cost.
    Timing,
}

/// One function, clock and path.
#[derive(Debug, Serialize)]
pub struct BenchResult {
    pub function: VdsoFn,
    /// The clock (`CLOCK_*`, or its number); `null` for functions without a clock id.
    pub clock: Option<ClockRef>,
    pub path: Path,
    /// Median ns per call; `null` when not measured (path missing, error).
    pub ns_per_call: Option<f64>,
    /// Syscalls per call counted; `null` when not counted.
    pub syscalls_per_call: Option<f64>,
    /// The verdict for the function and clock (the same on each of its paths).
    pub verdict: Option<Verdict>,
    /// Statistics behind `ns_per_call` (min, max, mean, stddev, rounds, batch).
    pub stats: Option<Stats>,
    /// The error the path gave (`EINVAL`), if any.
    pub error: Option<String>,
}

/// Judge a bench run (`measure::bench::run`) on a kernel: the report, and
/// whether a threshold (`--max-ns`, `--verify`) was crossed.
pub fn judge(run: BenchRun, kernel: &KernelFacts) -> (BenchReport, bool) {
    let mut findings = run_findings(&run);
    let basis = if run.counted() { Basis::Counted } else { Basis::Timing };
    let cx = Context::of(kernel, run.libc.clone());
    let req = &run.req;
    let measured = run.targets.iter().map(Measured::of).collect();
    let (results, mut crossed) = verdicts(measured, basis, req, &cx, &mut findings);
    if req.max_ns.is_some() && !req.paths.contains(&Path::Libc) {
        findings.push(BenchFact::MaxNsWithoutLibc);
    }
    for c in run.verify.iter().flatten().filter(|c| !c.ok) {
        crossed = true;
        findings.push(BenchFact::VerifyFailed { name: c.name.clone(), detail: c.detail.clone() });
    }
    let paths = req.paths.iter().copied().filter(|p| results.iter().any(|r| r.path == *p)).collect();
    let counted_by = if basis == Basis::Counted { run.counted_by } else { None };
    let report =
        BenchReport { results, findings, basis, counted_by, verify: run.verify, plan: run.plan, paths, baseline: None };
    (report, crossed)
}

/// What the run says of vdsoctl's own paths and of counting, before any
/// verdict: its vDSO unusable or a symbol not bound, no [vsyscall] page,
/// syscalls not counted.
fn run_findings(run: &BenchRun) -> Vec<BenchFact> {
    let mut findings = Vec::new();
    if let Some(e) = &run.vdso_error {
        findings.push(BenchFact::VdsoUnusable { error: e.to_string() });
    }
    for name in &run.wrong_version {
        findings.push(BenchFact::WrongVersion { symbol: name.to_string() });
    }
    if run.req.paths.contains(&Path::Vsyscall) && !run.vsyscall_page && arch::HOST_MACHINE == arch::machine::X86_64 {
        findings.push(BenchFact::NoVsyscallPage);
    }
    if let Some(e) = &run.count_error {
        findings.push(BenchFact::NotCounted { error: e.clone(), recount: false });
    }
    if let Some(e) = &run.recount_error {
        findings.push(BenchFact::NotCounted { error: e.clone(), recount: true });
    }
    findings
}

/// What the verdicts depend on besides the measurements: the kernel's
/// facts and the C library the run went through (given by hand in tests).
#[derive(Debug, Clone)]
struct Context {
    kernel_version: Option<(u32, u32)>,
    clocksource: Option<String>,
    /// The C library vdsoctl runs on: name and version (`glibc`, `2.36`).
    libc: (&'static str, Option<String>),
}

impl Context {
    fn of(kernel: &KernelFacts, libc: (&'static str, Option<String>)) -> Context {
        Context {
            kernel_version: kernel.version(),
            clocksource: kernel.clocksource.as_ref().map(|c| c.current.clone()),
            libc,
        }
    }

    fn route(&self, f: VdsoFn) -> policy::LibcRoute {
        policy::LibcRoute::of(f, self.libc.0, self.libc.1.as_deref(), arch::HOST_MACHINE)
    }
}

/// Verdicts and findings for what was measured: the rows shown, and
/// whether `--max-ns` was crossed.
fn verdicts(
    measured: Vec<Measured>,
    basis: Basis,
    req: &BenchRequest,
    cx: &Context,
    findings: &mut Vec<BenchFact>,
) -> (Vec<BenchResult>, bool) {
    let kernel_version = cx.kernel_version;
    let clocksource = cx.clocksource.clone();
    let mut results = Vec::new();
    let mut crossed = false;
    let mut fallback_expected = Vec::new();
    let mut unsupported = Vec::new();
    let mut not_offered = Vec::new();
    let mut too_new = Vec::new();
    let mut vsyscall_costs = Vec::new();
    for Measured { t, rows, errno, answered, shown_paths, vdso_present } in measured {
        let label = label(t);
        findings.extend(disagreement(&label, &answered, errno));
        if let Some(ns) = rows.get(&Path::Vsyscall).filter(|r| r.error.is_none()).and_then(|r| r.ns_per_call) {
            vsyscall_costs.push((label.clone(), ns));
        }
        let enters = |p: Path| -> policy::Enters {
            let r = rows.get(&p)?;
            match basis {
                Basis::Counted => policy::enters_by_count(r.syscalls_per_call),
                Basis::Timing => policy::enters_by_timing(r.ns_per_call, rows.get(&Path::Syscall)?.ns_per_call),
            }
        };
        let offered = policy::own_vdso_offers(t.function, kernel_version);
        let route = cx.route(t.function);
        let verdict = policy::verdict(errno, offered, vdso_present, enters(Path::Libc), enters(Path::Vdso));
        let verdict = policy::explain_libc(verdict, route);
        // A C library that makes the syscall by design is not held to a budget.
        let fast_expected =
            policy::should_be_fast(t.function, t.clock, vdso_present, kernel_version) && route.reads_vdso();
        match verdict {
            Some(v @ (Verdict::LibcBypass | Verdict::KernelFallback | Verdict::Missing)) => {
                match policy::lost_fast_path(v, t.function, t.clock, kernel_version) {
                    Some(lost) => findings.push(BenchFact::LostFastPath {
                        label: label.clone(),
                        lost,
                        clocksource: clocksource.clone(),
                    }),
                    None if v == Verdict::KernelFallback => fallback_expected.push(label.clone()),
                    None => {}
                }
            }
            Some(Verdict::Unsupported) => unsupported.push((label.clone(), t.clock)),
            Some(Verdict::NotOffered) => match policy::own_vdso_offers_from(t.function, kernel_version) {
                Some(since) if !too_new.iter().any(|(l, _)| l == &label) => too_new.push((label.clone(), since)),
                Some(_) => {}
                None if !not_offered.contains(&label) => not_offered.push(label.clone()),
                None => {}
            },
            Some(Verdict::LibcSyscall) => {
                let ns = |p: Path| rows.get(&p).and_then(|r| r.ns_per_call);
                if matches!(route, policy::LibcRoute::Older { .. } | policy::LibcRoute::Never { .. }) {
                    findings.push(BenchFact::LibcSyscall {
                        label: label.clone(),
                        function: t.function,
                        route,
                        libc_ns: ns(Path::Libc),
                        vdso_ns: ns(Path::Vdso),
                    });
                }
            }
            Some(Verdict::Fast) | None => {}
        }
        if let Some(f) = over_max_ns(&label, &rows, req.max_ns, fast_expected) {
            crossed = true;
            findings.push(f);
        }
        for (path, mut r) in rows {
            if shown_paths.contains(&path) {
                r.verdict = verdict;
                results.push(r);
            }
        }
    }
    closing_findings(&fallback_expected, unsupported, &vsyscall_costs, findings);
    if !not_offered.is_empty() {
        findings.push(BenchFact::NotOffered { labels: not_offered });
    }
    for (label, since) in too_new {
        findings.push(BenchFact::TooNew { label, since, kernel: kernel_version });
    }
    (results, crossed)
}

/// The paths disagree: some answer, some fail.
fn disagreement(label: &str, answered: &[(Path, bool)], errno: Option<i32>) -> Option<BenchFact> {
    if !(answered.iter().any(|a| a.1) && answered.iter().any(|a| !a.1)) {
        return None;
    }
    let side = |ok: bool| answered.iter().filter(|a| a.1 == ok).map(|a| a.0).collect();
    Some(BenchFact::PathsDisagree {
        label: label.to_string(),
        answer: side(true),
        fail: side(false),
        errno: errno.map(m::errno_name),
    })
}

/// `--max-ns` crossed through libc by a call that should be fast here.
fn over_max_ns(
    label: &str,
    rows: &BTreeMap<Path, BenchResult>,
    max_ns: Option<f64>,
    fast_expected: bool,
) -> Option<BenchFact> {
    let ns_of = |p: Path| rows.get(&p).and_then(|r| r.ns_per_call);
    let (max, ns) = policy::over_max_ns(max_ns, fast_expected, ns_of(Path::Libc))?;
    Some(BenchFact::OverMaxNs {
        label: label.to_string(),
        max,
        ns,
        vdso_ns: ns_of(Path::Vdso),
        syscall_ns: ns_of(Path::Syscall),
    })
}

/// The findings said once for the whole run: expected kernel fallbacks,
/// clock ids the kernel rejects, what [vsyscall] calls cost.
fn closing_findings(
    fallback_expected: &[String],
    unsupported: Vec<(String, Option<i32>)>,
    vsyscall_costs: &[(String, f64)],
    findings: &mut Vec<BenchFact>,
) {
    if !fallback_expected.is_empty() {
        findings.push(BenchFact::AlwaysSyscall { labels: fallback_expected.to_vec() });
    }
    // Why EINVAL, from what was asked: alarm clocks need an RTC that can
    // wake the system; any other id is one this kernel does not have.
    let (alarms, others): (Vec<_>, Vec<_>) =
        unsupported.into_iter().partition(|(_, clock)| matches!(clock, Some(8) | Some(9)));
    let labels = |v: Vec<(String, Option<i32>)>| v.into_iter().map(|(l, _)| l).collect::<Vec<_>>();
    if !alarms.is_empty() {
        findings.push(BenchFact::Rejected { labels: labels(alarms), alarm: true });
    }
    if !others.is_empty() {
        findings.push(BenchFact::Rejected { labels: labels(others), alarm: false });
    }
    if !vsyscall_costs.is_empty() {
        findings.push(BenchFact::VsyscallCost { costs: vsyscall_costs.to_vec() });
    }
}

/// What a bench run found, as data: render/bench.rs words it (its table
/// lines, its JSON finding); its kind and status are here.
#[derive(Debug, Clone, PartialEq)]
pub enum BenchFact {
    /// vdsoctl's own vDSO could not be used (`error`).
    VdsoUnusable { error: String },
    /// The vDSO exports `symbol` with another version than the C library
    /// expects: it is not bound.
    WrongVersion { symbol: String },
    /// No executable [vsyscall] page in this process: the path is not measured.
    NoVsyscallPage,
    /// Syscalls per call cannot be counted (`error`); `recount`: the
    /// recount failed, after the first counts.
    NotCounted { error: String, recount: bool },
    /// `--max-ns` without the libc path it compares.
    MaxNsWithoutLibc,
    /// A `--verify` check failed.
    VerifyFailed { name: String, detail: String },
    /// `label` loses the fast path (`clocksource`: the current one).
    LostFastPath { label: String, lost: policy::LostFastPath, clocksource: Option<String> },
    /// The C library makes `function`'s syscall by design (`route`), at
    /// these costs.
    LibcSyscall {
        label: String,
        function: VdsoFn,
        route: policy::LibcRoute,
        libc_ns: Option<f64>,
        vdso_ns: Option<f64>,
    },
    /// `label` costs `ns` through libc, over `--max-ns` `max`.
    OverMaxNs { label: String, max: f64, ns: f64, vdso_ns: Option<f64>, syscall_ns: Option<f64> },
    /// The architecture's vDSO does not offer these, by design.
    NotOffered { labels: Vec<String> },
    /// Not offered by this kernel's vDSO yet: from `since` on.
    TooNew { label: String, since: (u32, u32), kernel: Option<(u32, u32)> },
    /// Some paths answer, some fail (with `errno`, by name).
    PathsDisagree { label: String, answer: Vec<Path>, fail: Vec<Path>, errno: Option<String> },
    /// These enter the kernel even through the vDSO (CPU-time clocks).
    AlwaysSyscall { labels: Vec<String> },
    /// The kernel rejects these clock ids (EINVAL); `alarm`: alarm clocks.
    Rejected { labels: Vec<String>, alarm: bool },
    /// What [vsyscall] calls cost, per label, in ns.
    VsyscallCost { costs: Vec<(String, f64)> },
}

impl BenchFact {
    pub fn kind(&self) -> Kind {
        match self {
            BenchFact::VdsoUnusable { .. } => Kind::VdsoUnreadable,
            BenchFact::WrongVersion { .. } => Kind::VdsoExportsBroken,
            BenchFact::NoVsyscallPage | BenchFact::MaxNsWithoutLibc => Kind::Note,
            BenchFact::NotCounted { .. } => Kind::CountsUnavailable,
            BenchFact::VerifyFailed { .. } => Kind::VerifyFailed,
            BenchFact::LostFastPath { .. } => Kind::ClockLostFastPath,
            BenchFact::LibcSyscall { function, .. } if function.kind() == arch::FnKind::Random => {
                Kind::RandomSyscallHostLibc
            }
            BenchFact::LibcSyscall { .. } => Kind::ClockLostFastPath,
            BenchFact::OverMaxNs { .. } => Kind::ClockOverMaxNs,
            BenchFact::NotOffered { .. } => Kind::ClockNotOffered,
            BenchFact::TooNew { .. } => Kind::RandomNotOffered,
            BenchFact::PathsDisagree { .. } => Kind::PathsDisagree,
            BenchFact::AlwaysSyscall { .. } | BenchFact::Rejected { .. } => Kind::ClockAlwaysSyscall,
            BenchFact::VsyscallCost { .. } => Kind::VsyscallCost,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            BenchFact::VdsoUnusable { .. }
            | BenchFact::VerifyFailed { .. }
            | BenchFact::LostFastPath { .. }
            | BenchFact::OverMaxNs { .. } => Status::Fail,
            BenchFact::WrongVersion { .. }
            | BenchFact::NotCounted { .. }
            | BenchFact::MaxNsWithoutLibc
            | BenchFact::LibcSyscall { .. }
            | BenchFact::PathsDisagree { .. } => Status::Warn,
            BenchFact::NoVsyscallPage
            | BenchFact::NotOffered { .. }
            | BenchFact::TooNew { .. }
            | BenchFact::AlwaysSyscall { .. }
            | BenchFact::Rejected { .. }
            | BenchFact::VsyscallCost { .. } => Status::Info,
        }
    }
}

/// One function and clock after timing: its rows per path and what each answered.
struct Measured {
    t: Target,
    rows: BTreeMap<Path, BenchResult>,
    /// The first errno any path gave.
    errno: Option<i32>,
    /// (path, answered without error) for every available path.
    answered: Vec<(Path, bool)>,
    shown_paths: Vec<Path>,
    vdso_present: bool,
}

impl Measured {
    /// The rows of one measured function and clock, every path's, before
    /// any verdict (ns to 0.01, syscalls per call to 0.0001).
    fn of(run: &TargetRun) -> Measured {
        let t = run.target;
        let errno = run.paths.iter().find_map(|p| p.answer.and_then(Result::err));
        let answered = run.paths.iter().filter_map(|p| Some((p.path, p.answer?.is_ok()))).collect();
        let shown_paths = run.paths.iter().filter(|p| p.shown).map(|p| p.path).collect();
        let rows = run
            .paths
            .iter()
            .map(|p| {
                let row = BenchResult {
                    function: t.function,
                    clock: t.clock.map(|c| ClockRef::Id(i64::from(c))),
                    path: p.path,
                    ns_per_call: p.stats.map(|s| round(s.median, 2)),
                    syscalls_per_call: p.syscalls_per_call.map(|s| round(s, 4)),
                    verdict: None,
                    stats: p.stats,
                    error: p.answer.and_then(Result::err).map(m::errno_name),
                };
                (p.path, row)
            })
            .collect();
        Measured { t, rows, errno, answered, shown_paths, vdso_present: run.vdso_present }
    }
}

fn label(t: Target) -> String {
    match t.clock {
        Some(c) => format!("{}({})", t.function.name(), arch::clock_name(i64::from(c))),
        None => t.function.name().to_string(),
    }
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}

impl BenchReport {
    /// Its rows as a baseline keeps them, sorted by function, clock and path.
    pub fn baseline_rows(&self) -> Vec<super::bench_baseline::BaselineBench> {
        let report = self;
        let mut rows: Vec<super::bench_baseline::BaselineBench> = report
            .results
            .iter()
            .map(|r| super::bench_baseline::BaselineBench {
                function: r.function.name().to_string(),
                clock: r.clock.map_or_else(|| "-".to_string(), |c| c.text()),
                path: r.path.name().to_string(),
                ns_per_call: r.ns_per_call,
                mad: r.stats.map(|s| super::bench_baseline::round2(s.mad)),
                syscalls_per_call: r.syscalls_per_call,
                verdict: r.verdict.map(|v| v.name().to_string()),
            })
            .collect();
        rows.sort_by(|a, b| super::bench_baseline::key(a).cmp(&super::bench_baseline::key(b)));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::bench::PathRun;
    use crate::model::Finding;

    /// The facts worded, as render/bench.rs says them.
    fn worded(facts: &[BenchFact]) -> Vec<Finding> {
        facts.iter().map(crate::render::bench::finding).collect()
    }

    fn row(function: VdsoFn, path: Path, ns: f64, syscalls: f64) -> BenchResult {
        BenchResult {
            function,
            clock: None,
            path,
            ns_per_call: Some(ns),
            syscalls_per_call: Some(syscalls),
            verdict: None,
            stats: None,
            error: None,
        }
    }

    fn getrandom(vdso_present: bool) -> Measured {
        let t = Target { function: VdsoFn::Getrandom, clock: None };
        let mut rows = BTreeMap::new();
        rows.insert(Path::Libc, row(t.function, Path::Libc, 650.0, 1.0));
        if vdso_present {
            rows.insert(Path::Vdso, row(t.function, Path::Vdso, 40.0, 0.0));
        }
        rows.insert(Path::Syscall, row(t.function, Path::Syscall, 600.0, 1.0));
        let answered = rows.keys().map(|p| (*p, true)).collect();
        let shown_paths = rows.keys().copied().collect();
        Measured { t, rows, errno: None, answered, shown_paths, vdso_present }
    }

    fn request() -> BenchRequest {
        BenchRequest {
            clocks: vec![],
            functions: vec![VdsoFn::Getrandom],
            paths: vec![Path::Libc, Path::Vdso, Path::Syscall],
            verify: false,
            max_ns: Some(100.0),
            quick: true,
        }
    }

    fn cx(kernel: (u32, u32), libc: &'static str, version: Option<&str>) -> Context {
        Context { kernel_version: Some(kernel), clocksource: None, libc: (libc, version.map(str::to_string)) }
    }

    fn path_run(path: Path, answer: Option<Result<(), i32>>, ns: Option<f64>, syscalls: Option<f64>) -> PathRun {
        let stats = ns.and_then(|ns| Stats::of(&[ns], 1000));
        PathRun { path, answer, shown: path != Path::Vsyscall, stats, syscalls_per_call: syscalls }
    }

    fn run_of(function: VdsoFn, clock: i32, paths: Vec<PathRun>, count_error: Option<&str>) -> BenchRun {
        BenchRun {
            req: BenchRequest {
                clocks: vec![clock],
                functions: vec![function],
                paths: vec![Path::Libc, Path::Vdso, Path::Syscall],
                verify: false,
                max_ns: None,
                quick: true,
            },
            libc: ("glibc", Some("2.41".into())),
            vdso_error: None,
            wrong_version: vec!["__vdso_time"],
            vsyscall_page: true,
            count_error: count_error.map(str::to_string),
            counted_by: count_error.is_none().then_some(CountedBy::Perf),
            recount_error: None,
            plan: Plan::QUICK,
            targets: vec![TargetRun { target: Target { function, clock: Some(clock) }, vdso_present: true, paths }],
            verify: None,
        }
    }

    fn kernel_6_12() -> KernelFacts {
        let clocksource = crate::inspect::kernel::Clocksource { current: "tsc".into(), available: vec!["tsc".into()] };
        KernelFacts {
            release: Some("6.12.0".into()),
            clocksource: Some(clocksource),
            cmdline: None,
            ..Default::default()
        }
    }

    /// A run handed over as data, nothing read: a libc that makes the
    /// syscall for CLOCK_MONOTONIC while the vDSO answers without one is a
    /// bypass, said once as a FAIL after what the run said of the vDSO's
    /// symbols; the rows are rounded, the unshown vsyscall path left out.
    #[test]
    fn a_counted_run_is_judged_from_its_data_alone() {
        let paths = vec![
            path_run(Path::Libc, Some(Ok(())), Some(301.234), Some(1.00004)),
            path_run(Path::Vdso, Some(Ok(())), Some(19.996), Some(0.0)),
            path_run(Path::Syscall, Some(Ok(())), Some(298.0), Some(1.0)),
            path_run(Path::Vsyscall, None, None, None),
        ];
        let (report, crossed) = judge(run_of(VdsoFn::ClockGettime, 1, paths, None), &kernel_6_12());
        assert!(!crossed, "no --max-ns, no --verify");
        assert_eq!(report.basis, Basis::Counted);
        assert_eq!(report.paths, vec![Path::Libc, Path::Vdso, Path::Syscall]);
        let rows: Vec<_> = report.results.iter().map(|r| (r.path, r.ns_per_call, r.syscalls_per_call)).collect();
        assert_eq!(
            rows,
            vec![
                (Path::Libc, Some(301.23), Some(1.0)),
                (Path::Vdso, Some(20.0), Some(0.0)),
                (Path::Syscall, Some(298.0), Some(1.0))
            ]
        );
        assert!(report.results.iter().all(|r| r.verdict == Some(Verdict::LibcBypass)), "{:?}", report.results);
        let said = worded(&report.findings);
        let said: Vec<_> = said.iter().map(|f| (f.severity, f.message.as_str())).collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(
            said[0],
            (
                Status::Warn,
                "the vDSO exports __vdso_time with another version than the C library expects: it is not bound"
            )
        );
        assert_eq!(
            said[1],
            (
                Status::Fail,
                "clock_gettime(CLOCK_MONOTONIC): the C library's call makes syscalls where the direct vDSO call makes none — the vDSO is bypassed"
            )
        );
    }

    /// Syscalls not counted: the verdicts are timing-based and said so
    /// first; a clock id the kernel rejects on every path is EINVAL on each
    /// row, judged unsupported, and said once at the end.
    #[test]
    fn an_uncounted_run_with_a_rejected_clock_says_both() {
        let einval = Some(Err(libc::EINVAL));
        let paths = vec![
            path_run(Path::Libc, einval, None, None),
            path_run(Path::Vdso, einval, None, None),
            path_run(Path::Syscall, einval, None, None),
            path_run(Path::Vsyscall, None, None, None),
        ];
        let run = run_of(VdsoFn::ClockGettime, 10, paths, Some("perf_event_open: EACCES"));
        let (report, crossed) = judge(run, &kernel_6_12());
        assert!(!crossed);
        assert_eq!(report.basis, Basis::Timing);
        assert_eq!(report.results.len(), 3);
        assert!(report.results.iter().all(|r| r.error.as_deref() == Some("EINVAL") && r.ns_per_call.is_none()));
        assert!(report.results.iter().all(|r| r.verdict == Some(Verdict::Unsupported)), "{:?}", report.results);
        let f = &worded(&report.findings);
        assert_eq!(f.len(), 3, "{f:?}");
        assert_eq!(
            (f[0].severity, f[0].message.as_str()),
            (
                Status::Warn,
                "the vDSO exports __vdso_time with another version than the C library expects: it is not bound"
            )
        );
        assert_eq!(f[1].message, "syscalls per call cannot be counted: perf_event_open: EACCES");
        assert!(f[1].hint.as_deref().is_some_and(|h| h.starts_with("verdicts below are timing-based")), "{f:?}");
        assert_eq!(f[2].severity, Status::Info);
        assert!(f[2].message.ends_with("here (EINVAL): this kernel has no such clock id"), "{f:?}");
    }

    /// A kernel whose vDSO lacks getrandom (x86_64 before 6.11): the vdso
    /// path says not offered, no FAIL, the kernel that brings it is named.
    #[test]
    fn getrandom_on_a_kernel_without_it_is_not_offered() {
        if arch::HOST_ABI != Some(arch::Abi::X86_64) {
            return;
        }
        let mut findings = Vec::new();
        let (results, crossed) = verdicts(
            vec![getrandom(false)],
            Basis::Counted,
            &request(),
            &cx((6, 6), "glibc", Some("2.36")),
            &mut findings,
        );
        assert!(!crossed, "--max-ns does not hold a syscall-only call to a budget");
        assert_eq!(results.len(), 2, "libc and syscall rows: {results:?}");
        assert!(results.iter().all(|r| r.verdict == Some(Verdict::NotOffered)), "{results:?}");
        let findings = worded(&findings);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].severity, Status::Info);
        assert_eq!(
            findings[0].message,
            "getrandom: not offered by kernel 6.6's vDSO (the x86_64 vDSO has it from 6.11) — every call is a syscall, whatever the C library"
        );
    }

    /// glibc 2.36 on a kernel that has it: libc-syscall, a WARN naming the
    /// costs and the release that reads it from the vDSO; exit 0.
    #[test]
    fn getrandom_through_an_old_glibc_is_a_warning_with_its_costs() {
        if arch::HOST_ABI != Some(arch::Abi::X86_64) {
            return;
        }
        let mut findings = Vec::new();
        let (results, crossed) = verdicts(
            vec![getrandom(true)],
            Basis::Counted,
            &request(),
            &cx((6, 18), "glibc", Some("2.36")),
            &mut findings,
        );
        assert!(!crossed);
        assert_eq!(results.len(), 3);
        assert!(results.iter().all(|r| r.verdict == Some(Verdict::LibcSyscall)), "{results:?}");
        let findings = worded(&findings);
        assert_eq!(findings.len(), 1, "{findings:?}");
        let f = &findings[0];
        assert_eq!(f.severity, Status::Warn);
        assert_eq!(
            f.message,
            "getrandom: glibc 2.36 makes the getrandom syscall on every call, though this kernel's vDSO serves it (libc 650 ns, vDSO 40.0 ns here)"
        );
        assert!(f.hint.as_deref().unwrap().starts_with("glibc 2.41 reads it from the vDSO"), "{f:?}");
        // glibc 2.41: fast, and held to --max-ns like a clock.
        let mut findings = Vec::new();
        let mut fast = getrandom(true);
        fast.rows.get_mut(&Path::Libc).unwrap().syscalls_per_call = Some(0.0);
        let (results, crossed) =
            verdicts(vec![fast], Basis::Counted, &request(), &cx((6, 18), "glibc", Some("2.41")), &mut findings);
        assert!(results.iter().all(|r| r.verdict == Some(Verdict::Fast)), "{results:?}");
        assert!(crossed, "libc 650 ns is over --max-ns 100: {findings:?}");
        // musl: no release reads it from the vDSO.
        let mut findings = Vec::new();
        verdicts(vec![getrandom(true)], Basis::Counted, &request(), &cx((6, 18), "musl", None), &mut findings);
        let findings = worded(&findings);
        assert!(findings[0].message.contains("no musl release reads getrandom from the vDSO"), "{findings:?}");
    }
}
