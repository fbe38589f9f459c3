//! `maps`: the kernel's special mappings of a process and its vsyscall mode.

use super::Outcome;
use crate::arch;
use crate::error::Result;
use crate::inspect::kernel::{self};
use crate::inspect::Process;
use crate::model::maps::{MapsReport, SpecialMapping, VdsoExport};
use crate::model::policy::VdsoMapping;
use crate::model::timens::TimeNs;
use crate::model::vsyscall::{compat_process_fact, vsyscall_mode};
use crate::model::ProcessRef;
use crate::render::vdso::{timens_finding, vsyscall_finding};
use crate::render::{emit, Output};
use crate::resolve::ProcessRequest;

/// Build the report for an open process: its maps and word size read
/// between two of its execs, never across one.
pub fn gather(process: &mut Process) -> Result<MapsReport> {
    let (maps, target_is_64) =
        process.read_consistent(|p| Ok((p.maps()?, p.exe_header().map_or(arch::HOST_IS_64, |h| h.is_64))))?;
    let cmdline = kernel::cmdline();
    let (vsyscall, facts) = if arch::HOST_MACHINE == arch::machine::X86_64 && !target_is_64 {
        // A 32-bit process has no [vsyscall] page, whatever the host's
        // mode: that mode is what vdsoctl's own (64-bit) mapping says.
        let own = Process::open(None)?.maps()?;
        let (v, mut f) = vsyscall_mode(&own, cmdline.as_deref(), true);
        f.push(compat_process_fact(&v));
        (v, f)
    } else {
        vsyscall_mode(&maps, cmdline.as_deref(), target_is_64)
    };
    let mut findings: Vec<_> = facts.iter().map(vsyscall_finding).collect();
    let mappings: Vec<SpecialMapping> = maps
        .iter()
        .filter(|m| m.is_special())
        .map(|m| SpecialMapping {
            name: m.name().to_string(),
            start: m.start,
            end: m.end,
            size: m.size(),
            perms: m.perms.clone(),
        })
        .collect();
    let start_of = |name: &str| mappings.iter().find(|m| m.name == name).map(|m| (m.start, m.size));
    match VdsoMapping::judge(process.pid(), start_of("[vdso]"), start_of("[vvar]").map(|v| v.0)) {
        VdsoMapping::Mapped { .. } => {}
        bad => findings.insert(0, bad.finding()),
    }
    let time_namespace = process.time_namespace().map(|ns| TimeNs::of(&ns));
    findings.extend(time_namespace.as_ref().and_then(|ns| ns.fact(process.pid())).as_ref().map(timens_finding));
    // A side field: a [vdso] that cannot be read is `null`, not a failure.
    let vdso_exports = process.vdso_image().ok().map(|img| VdsoExport::all(&img));
    Ok(MapsReport { process: ProcessRef::of(process), mappings, vsyscall, time_namespace, vdso_exports, findings })
}

/// `vdsoctl maps [-p PID]`.
pub fn run(req: &ProcessRequest, out: &Output) -> Result<Outcome> {
    let mut process = Process::open(req.pid)?;
    let report = gather(&mut process)?;
    emit(out, &report)?;
    // A FAIL line (no [vdso], a misplaced AT_SYSINFO_EHDR) means exit 1.
    Ok(Outcome::from_crossed(crate::render::any_fail(&report.findings)))
}
