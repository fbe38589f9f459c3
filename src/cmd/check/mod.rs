//! `check`: the whole host audit in one go — every known way the vDSO fast
//! path is lost, each with a status, a detail and a hint — and an exit code
//! for CI.

mod baseline;
mod command;
mod process;
mod walk;

use super::Outcome;
use crate::arch::{self, Abi};
use crate::error::{Error, Result};
use crate::inspect::exe::LibcKind;
use crate::inspect::host::{HostSnapshot, VdsoFacts};
use crate::inspect::Process;
use crate::measure::trace::session::{TraceRequest, TraceTarget};
use crate::model::bench::BenchReport;
use crate::model::binary::{BinaryFacts, HostFacts, WarnKind};
pub use crate::model::check::{BinaryRow, Check, CheckReport, CommandRun, ImageSummary};
use crate::model::host::{clock_request, host_checks, mapping_checks, vdso_symbols_check};
use crate::model::kind::Subject;
use crate::model::observe::{self, Observation, Scope, Unseen};
use crate::model::row::About;
use crate::model::seccomp_profile::LiveFilters;
use crate::model::timens::TimeNs;
use crate::model::trace::ExitStatus;
use crate::model::ProcessRef;
pub use crate::model::Status;
use crate::render::seccomp::{seccomp_row, seccomp_rows};
use crate::render::{emit, Output};
use crate::resolve::{CheckForm, CheckRequest};
use command::{gather_command, trace};
use process::{process_exe_check, ExeCheck};
use std::time::Duration;
use walk::gather_image;

/// Watch `scope` (one process, or every process but vdsoctl) for `window`:
/// what its clock syscalls and [vsyscall] calls were, or why nothing could
/// be seen. `None`: `--trace 0`.
pub fn observe(scope: Scope, window: Option<Duration>) -> Observation {
    let Some(window) = window else { return Observation::Unseen(Unseen::Off) };
    let target = match scope {
        Scope::Process(pid) => TraceTarget::Pids(vec![pid]),
        Scope::Host => TraceTarget::All,
    };
    let req = TraceRequest {
        duration: Some(window),
        command_stdout_to_stderr: true,
        progress: Some(crate::render::trace_progress),
        ..TraceRequest::new(target)
    };
    match trace(&req) {
        Ok(report) => Observation::of_report(&report),
        Err(Error::Facility { what, .. }) => Observation::Unseen(Unseen::NoEngine(what.to_string())),
        Err(e) => Observation::Unseen(Unseen::Failed(e.to_string())),
    }
}

/// The host checks, and with a target its own: (checks, the clock bench,
/// the binary row and its warning kind — left for the observation to judge —
/// and the executable's facts).
type Audited = (Vec<Check>, Option<BenchReport>, Option<(Check, WarnKind)>, Option<BinaryFacts>);

fn audit(me: &Process, target: Option<&Process>, max_ns: Option<f64>) -> Result<Audited> {
    let snap = HostSnapshot::read(me);
    let (mut checks, bench) = host_checks(&snap, crate::measure::bench::run(&clock_request(max_ns)), max_ns);
    let bench = Some(bench);
    let Some(target) = target else { return Ok((checks, bench, None, None)) };
    let host = HostFacts::of(&snap.own, snap.kernel.cmdline.as_deref());
    let vdso = VdsoFacts::read(target);
    let ExeCheck { check: binary, warn_kind, emulator, facts, random } = process_exe_check(target, &vdso, &host);
    let mut target_checks = Vec::new();
    let mut mapped = mapping_checks(&vdso, "process_");
    if let Some(tool) = &emulator {
        crate::render::host::run_by_emulator(&mut mapped, tool);
    }
    target_checks.extend(mapped);
    if emulator.is_none() {
        let musl = facts.as_ref().is_some_and(|f| f.runtime == LibcKind::Musl.name());
        target_checks.push(vdso_symbols_check(&vdso, "process_", musl));
    }
    target_checks.extend(random);
    if let Some((mode, count)) = target.seccomp() {
        let abi = target.exe_header().and_then(|h| Abi::from_elf(h.is_64, h.machine)).or(arch::HOST_ABI);
        let filtered_self = me.seccomp().is_some_and(|(m, _)| m != 0);
        let filters = match mode {
            2 => live_filters(target.pid(), filtered_self),
            _ => LiveFilters::NotFiltered,
        };
        let facts = crate::model::seccomp_profile::live_checks(mode, count, abi, filters);
        target_checks.extend(seccomp_rows(&facts));
        let tids = target.tasks().unwrap_or_default();
        // A thread gone before its status is read is no other thread.
        let differs = |t: &&i32| **t != target.pid() && target.thread_seccomp(**t).is_some_and(|s| s != (mode, count));
        let others = tids.iter().filter(differs);
        target_checks.extend(crate::model::seccomp_profile::other_threads(others.count()).as_ref().map(seccomp_row));
    }
    if let Some(ns) = target.time_namespace().map(|ns| TimeNs::of(&ns)) {
        let f = ns.fact(target.pid()).as_ref().map(crate::render::vdso::timens_finding);
        let row = f.map(|f| Check::of("process_time_namespace".into(), f));
        target_checks.extend(row.map(|row| Check { time_namespace: Some(ns.clone()), ..row }));
    }
    checks.extend(target_checks.into_iter().map(Check::about_process));
    Ok((checks, bench, Some((binary.about_process(), warn_kind)), facts))
}

/// The seccomp filters of `pid`'s main thread, read with
/// PTRACE_SECCOMP_GET_FILTER (needs CAP_SYS_ADMIN: without it, not tried;
/// nor when vdsoctl itself runs under seccomp: the kernel refuses it then).
fn live_filters(pid: i32, filtered_self: bool) -> LiveFilters {
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    if crate::inspect::process::own_capabilities().is_none_or(|c| c & CAP_SYS_ADMIN == 0) {
        return LiveFilters::NeedsRoot;
    }
    if filtered_self {
        return LiveFilters::FilteredTracer;
    }
    match crate::measure::sys::seccomp::thread_filters(pid) {
        Ok(progs) => LiveFilters::Read(progs),
        Err(e) => LiveFilters::Unreadable(e.to_string()),
    }
}

/// A path written after the work is refused before it (exit 3).
fn check_paths(req: &CheckRequest) -> Result<()> {
    let save = req.baseline().and_then(|b| b.save.as_ref());
    for path in [req.export_json.as_ref(), req.export_junit.as_ref(), save].into_iter().flatten() {
        crate::inspect::file::check_replaceable(path)?;
    }
    Ok(())
}

/// Gather every check (`out`: where the image walk may show progress).
pub fn gather(req: &CheckRequest, out: &Output) -> Result<CheckReport> {
    check_paths(req)?;
    let strict = req.strict;
    let (pid, max_ns, trace, fail_over) = match &req.form {
        CheckForm::Profile { file } => return baseline::gather_profile(file, strict),
        CheckForm::Image { root, baseline, select } => {
            let hash = baseline.save.is_some() || baseline.compare.is_some();
            return gather_image(root, select, strict, hash, out);
        }
        CheckForm::Command { argv, timeout, .. } => return gather_command(argv, *timeout, strict),
        CheckForm::Process { pid, max_ns, trace } => (Some(*pid), *max_ns, *trace, None),
        CheckForm::Host { max_ns, trace, fail_over } => (None, *max_ns, *trace, *fail_over),
    };
    // The target first: an unreadable one is "could not inspect" (exit 3),
    // not a failed audit, and is said before any measuring.
    let target = match pid {
        Some(pid) => {
            let target = Process::open(Some(pid))?;
            target.maps()?;
            Some(target)
        }
        None => None,
    };
    let me = Process::open(None)?;
    let scope = target.as_ref().map_or(Scope::Host, |t| Scope::Process(t.pid()));
    // The window runs beside the audit: vdsoctl's own syscalls (its clock
    // bench makes some on purpose) are left out of a host window.
    let (audited, observation) = std::thread::scope(|s| {
        let watching = s.spawn(|| observe(scope, observe::window(trace)));
        let audited = audit(&me, target.as_ref(), max_ns);
        let observation = watching
            .join()
            .unwrap_or_else(|_| Observation::Unseen(Unseen::Failed("the observing thread panicked".into())));
        (audited, observation)
    });
    let (mut checks, bench, binary, facts) = audited?;
    let mut observation = observation;
    if let (Observation::Seen(seen), Some(rate)) = (&mut observation, fail_over) {
        seen.fail_over = rate;
    }
    match binary {
        // `-p`: the binary row says what its code is expected to do, the
        // observation row what it did.
        Some((binary, warn_kind)) => {
            checks.push(observation.judge_binary(binary, warn_kind));
            checks.push(observation.row("process_trace", scope).about_process());
            let random = |c: &Check| c.about == About::Process && c.kind.subject() == Subject::Random;
            if let (Some(i), Scope::Process(pid)) = (checks.iter().position(random), scope) {
                let route = checks.remove(i);
                checks.push(observation.judge_random(route, pid));
            }
        }
        None => {
            checks.push(observation.row("host_trace", scope));
            checks.extend(observation.host_random());
        }
    }
    Ok(CheckReport {
        not_observed: observation.caveat(scope).map(|c| c.to_string()),
        bench,
        binary: facts,
        process: target.as_ref().map(ProcessRef::of),
        ..CheckReport::judged(checks, strict)
    })
}

/// `vdsoctl check`.
pub fn run(req: &CheckRequest, out: &Output) -> Result<Outcome> {
    let command = matches!(req.form, crate::resolve::CheckForm::Command { .. });
    let old = req.baseline().map(|f| baseline::read_old(f, command)).transpose()?.flatten();
    // A bad or expired ignore file is refused before any work.
    let mut selection = req.selection.clone();
    selection.ignores = baseline::read_ignores(req.ignore_file.as_deref())?;
    let mut report = gather(req, out)?;
    report.quiet = req.quiet;
    // The baseline keeps and compares the policy's statuses; the
    // selection comes after it, so --strict never makes a baselined WARN new.
    report.apply_policy(req.form.context());
    let mut late = Vec::new();
    if let Some(files) = req.baseline() {
        late.extend(baseline::apply(files, old.as_ref(), &mut report).err());
        if let (Some(diff), Some(old)) = (report.baseline.clone(), old.as_ref()) {
            report.gate_on_baseline(&diff, old);
        }
    }
    report.select(&selection);
    // A report stdout refuses (a full disk), or an export that cannot be
    // written, keeps the command's status and the verdict's.
    // The report first: a baseline or export that cannot be written loses
    // neither it nor the verdict.
    late.splice(0..0, emit(out, &report).err());
    late.extend(baseline::export(req, &report).err());
    // `check -- CMD`: the command's own failure is the exit status; with a
    // baseline, what is new decides; else the verdict.
    let outcome = match report.command.as_ref().and_then(|c| c.exit_status) {
        Some(ExitStatus::Code(c)) if c != 0 => Outcome::CommandFailed(u8::try_from(c).unwrap_or(1)),
        Some(ExitStatus::Signal(n)) => Outcome::CommandFailed(u8::try_from(128 + n).unwrap_or(255)),
        // The gate made every failing finding FAIL (--strict, --fail-on,
        // what is new since --baseline): a FAIL line is exit 1, and only one.
        _ => Outcome::from_crossed(report.status == Status::Fail),
    };
    outcome.despite(late)
}
