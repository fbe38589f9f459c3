//! One bench run, measured and not judged: which of vdsoctl's own paths
//! could be bound, what each function and clock answered on each path,
//! its timing and its syscalls per call, and the cross-path checks of
//! `--verify`. `model::bench::judge` turns a [`BenchRun`] into the report.

use super::vdso::OwnVdso;
use super::{count_marked, MarkJob, SyscallCounter, Target, MARK_ERRNO};
use super::{measure, syscalls_per_call, verify, vsyscall_serves, BenchRequest, Callers, Check, Path, Plan, Stats};
use crate::measure::sys::call::VsyscallPage;
use crate::measure::sys::seccomp::Program;

/// What a bench run measured, for `model::bench::judge`.
#[derive(Debug)]
pub struct BenchRun {
    /// What was asked.
    pub req: BenchRequest,
    /// The C library the libc path goes through: name and version
    /// (`glibc`, `2.36`).
    pub libc: (&'static str, Option<String>),
    /// Why vdsoctl's own vDSO could not be used; `None` when it was.
    pub vdso_error: Option<String>,
    /// Symbols the vDSO exports with another version than the C library
    /// expects: not bound.
    pub wrong_version: Vec<&'static str>,
    /// An executable `[vsyscall]` page is mapped in this process.
    pub vsyscall_page: bool,
    /// Why syscalls could not be counted (asked before the timing), if not:
    /// the verdicts are then timing-based.
    pub count_error: Option<String>,
    /// How they were counted (`None`: not).
    pub counted_by: Option<CountedBy>,
    /// Why the counter could not be opened again once the timing was done.
    pub recount_error: Option<String>,
    pub plan: Plan,
    /// One per function and clock, in request order.
    pub targets: Vec<TargetRun>,
    /// The cross-path checks of `--verify`; `None` without it.
    pub verify: Option<Vec<Check>>,
}

/// What counted the syscalls of each path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CountedBy {
    /// perf's `raw_syscalls:sys_enter` on vdsoctl's own thread: every
    /// syscall the path made.
    Perf,
    /// A seccomp filter in a forked child (perf refused): the calls that
    /// entered the kernel through the function's own syscall.
    Seccomp,
}

/// One function and clock, measured on every path.
#[derive(Debug, Clone)]
pub struct TargetRun {
    pub target: Target,
    /// vdsoctl's own vDSO has a bound symbol for the function.
    pub vdso_present: bool,
    /// Every path, in [`Path::ALL`] order.
    pub paths: Vec<PathRun>,
}

/// One path of one function and clock.
#[derive(Debug, Clone, Copy)]
pub struct PathRun {
    pub path: Path,
    /// The first call: `Err(errno)`, or `None` when the path cannot call
    /// the function here.
    pub answer: Option<Result<(), i32>>,
    /// Asked for (`--paths`) and possible here: a row of the report.
    pub shown: bool,
    pub stats: Option<Stats>,
    /// Syscalls per call counted; `None` when not counted.
    pub syscalls_per_call: Option<f64>,
}

impl BenchRun {
    /// Whether syscalls were counted (else the verdicts are timing-based).
    pub fn counted(&self) -> bool {
        self.count_error.is_none()
    }
}

/// Measure what `req` asks on vdsoctl's own paths.
pub fn run(req: &BenchRequest) -> BenchRun {
    let (callers, vdso_error, wrong_version) = own_callers();
    // An open syscall tracepoint counter puts every syscall of the system
    // on the tracing slow path (~+100 ns here), so it is opened now only to
    // learn whether counting works, closed for the timing, opened again after.
    // Without perf (no privilege), a seccomp filter in a child counts.
    let perf_error = SyscallCounter::open().err().map(|e| e.to_string());
    let (counted_by, marking, count_error) = match perf_error {
        None => (Some(CountedBy::Perf), None, None),
        // Tried once with nothing to count (a fork, ~1 ms): a filter
        // vdsoctl runs under may refuse seccomp(2), and the timing then
        // needs the raw syscall's cost.
        Some(perf) => match marking_probe(&callers) {
            Ok(p) => (Some(CountedBy::Seccomp), Some(p), None),
            Err(e) => (None, None, Some(format!("{perf}; and no seccomp count: {e}"))),
        },
    };
    let plan = if req.quick { Plan::QUICK } else { Plan::DEFAULT };
    let mut targets = time_targets(&callers, req, counted_by.is_some(), plan);
    let recount_error = match (&counted_by, &marking) {
        (Some(CountedBy::Perf), _) => count_syscalls(&callers, &mut targets).err(),
        (Some(CountedBy::Seccomp), Some(p)) => count_filtered(&callers, &mut targets, p).err(),
        _ => None,
    };
    let checks = req.verify.then(|| verify(&callers, &req.clocks, &req.functions));
    BenchRun {
        req: req.clone(),
        libc: crate::measure::sys::libc::own_libc(),
        vdso_error,
        wrong_version,
        vsyscall_page: callers.vsyscall.is_some(),
        count_error,
        counted_by: if recount_error.is_some() { None } else { counted_by },
        recount_error,
        plan,
        targets,
        verify: checks,
    }
}

/// vdsoctl's own callable paths: its vDSO's bound symbols and the vsyscall
/// page; why the vDSO could not be used, and the symbols not bound.
fn own_callers() -> (Callers, Option<String>, Vec<&'static str>) {
    let (vdso, error) = match OwnVdso::open() {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let wrong_version = vdso.as_ref().map(|v| v.wrong_version.clone()).unwrap_or_default();
    (Callers::new(vdso, VsyscallPage::own()), error, wrong_version)
}

/// Every selected function and clock, in request order.
fn targets(req: &BenchRequest) -> Vec<Target> {
    let mut targets = Vec::new();
    for &function in &req.functions {
        if function.takes_clock() {
            targets.extend(req.clocks.iter().map(|&c| Target { function, clock: Some(c) }));
        } else {
            targets.push(Target { function, clock: None });
        }
    }
    targets
}

/// Call and time every selected function and clock on every path it has:
/// the paths shown, and without counting the libc, vDSO and syscall paths
/// the timing verdict compares.
fn time_targets(callers: &Callers, req: &BenchRequest, counting: bool, plan: Plan) -> Vec<TargetRun> {
    let mut measured = Vec::new();
    for t in targets(req) {
        let mut paths = Vec::new();
        for path in Path::ALL {
            let applicable = path != Path::Vsyscall || vsyscall_serves(t.function);
            let shown =
                req.paths.contains(&path) && applicable && (path != Path::Vsyscall || callers.vsyscall.is_some());
            let answer = callers.call(t, path).map(|r| r.map(|_| ()));
            let needed_for_timing = !counting && path != Path::Vsyscall;
            let usable = matches!(answer, Some(Ok(())));
            let stats = if usable && (shown || needed_for_timing) { measure(callers, t, path, plan) } else { None };
            paths.push(PathRun { path, answer, shown, stats, syscalls_per_call: None });
        }
        measured.push(TargetRun { target: t, vdso_present: callers.available(t, Path::Vdso), paths });
    }
    measured
}

/// The marking filter, once a child has installed it.
fn marking_probe(callers: &Callers) -> Result<Program, String> {
    let p = crate::measure::trace::engines::seccomp::marking_program(MARK_ERRNO as u16).map_err(|e| e.to_string())?;
    count_marked(callers, &[], &p).map_err(|e| format!("seccomp(2) refused: {}", crate::error::errno_text(&e)))?;
    Ok(p)
}

/// [`count_syscalls`] without perf: every path that did not fail but the
/// vsyscall page's (its emulation runs the filter too, where perf sees no
/// syscall), counted under the marking filter in a child. The raw syscall
/// path must come back marked on every call, or the count is not trusted.
fn count_filtered(callers: &Callers, measured: &mut [TargetRun], program: &Program) -> Result<(), String> {
    let mut jobs = Vec::new();
    for mt in measured.iter() {
        for p in mt.paths.iter().filter(|p| matches!(p.answer, Some(Ok(()))) && p.path != Path::Vsyscall) {
            let calls = p.stats.map_or(200, |s| s.batch).clamp(100, 2000);
            jobs.push(MarkJob { target: mt.target, path: p.path, calls });
        }
    }
    let marked = count_marked(callers, &jobs, program)
        .map_err(|e| format!("the seccomp count failed: {}", crate::error::errno_text(&e)))?;
    let unseen = jobs.iter().zip(&marked).find(|(j, m)| j.path == Path::Syscall && **m != j.calls);
    if let Some((j, m)) = unseen {
        return Err(format!("the seccomp count saw {m} of {} raw {} syscalls", j.calls, j.target.function.name()));
    }
    for (j, m) in jobs.iter().zip(marked) {
        let p = measured
            .iter_mut()
            .filter(|mt| mt.target == j.target)
            .flat_map(|mt| mt.paths.iter_mut())
            .find(|p| p.path == j.path);
        if let Some(p) = p {
            p.syscalls_per_call = Some(m as f64 / j.calls as f64);
        }
    }
    Ok(())
}

/// Count syscalls per call of every path that did not fail, timing done.
fn count_syscalls(callers: &Callers, measured: &mut [TargetRun]) -> Result<(), String> {
    let mut c = SyscallCounter::open().map_err(|e| e.to_string())?;
    for mt in measured {
        let t = mt.target;
        for p in mt.paths.iter_mut().filter(|p| !matches!(p.answer, Some(Err(_)))) {
            let n = p.stats.map_or(200, |s| s.batch).clamp(100, 2000);
            p.syscalls_per_call = syscalls_per_call(&mut c, callers, t, p.path, n);
        }
    }
    Ok(())
}
