//! `maps`: the kernel's special mappings of a process and its vsyscall mode.

use super::Outcome;
use crate::arch;
use crate::cli::TargetArgs;
use crate::error::Result;
use crate::inspect::kernel::{self, VsyscallMode};
use crate::inspect::maps::Mapping;
use crate::inspect::Process;
use crate::model::policy::VdsoMapping;
use crate::model::{hex, Finding, ProcessRef, Severity};
use crate::render::{emit, human_size, Output, Render};
use serde::Serialize;

/// The `maps` report (DESIGN keys: pid, mappings, vsyscall).
#[derive(Debug, Serialize)]
pub struct MapsReport {
    pub process: ProcessRef,
    pub mappings: Vec<SpecialMapping>,
    pub vsyscall: Vsyscall,
    pub findings: Vec<Finding>,
}

/// One bracketed kernel mapping.
#[derive(Debug, Serialize)]
pub struct SpecialMapping {
    pub name: String,
    #[serde(serialize_with = "hex")]
    pub start: u64,
    #[serde(serialize_with = "hex")]
    pub end: u64,
    pub size: u64,
    pub perms: String,
}

/// The vsyscall mode and who said it.
#[derive(Debug, Serialize)]
pub struct Vsyscall {
    pub mode: VsyscallMode,
    /// `mapping`, `cmdline`, `mapping+cmdline`, or `architecture`.
    pub source: String,
    /// What the `[vsyscall]` mapping's permissions say, if it is mapped.
    pub mapping_mode: Option<VsyscallMode>,
    /// The `vsyscall=` value on /proc/cmdline, if any.
    pub cmdline: Option<String>,
}

/// Decide the vsyscall mode from the mapping (what this process really has)
/// and the kernel command line (what the host was booted with).
pub fn vsyscall_mode(maps: &[Mapping], cmdline: Option<&str>, target_is_64: bool) -> (Vsyscall, Vec<Finding>) {
    let mut findings = Vec::new();
    let mapping_mode = maps.iter().find(|m| m.name() == "[vsyscall]").and_then(|m| VsyscallMode::from_perms(&m.perms));
    let param = cmdline.and_then(|c| kernel::cmdline_param(c, "vsyscall")).map(str::to_string);
    let param_mode = param.as_deref().and_then(VsyscallMode::from_param);
    let x86_64 = arch::HOST_MACHINE == arch::machine::X86_64;
    let (mode, source) = match (mapping_mode, param_mode) {
        (Some(m), Some(p)) if m == p => (m, "mapping+cmdline"),
        (Some(m), Some(p)) => {
            findings.push(Finding::new(
                Severity::Warn,
                format!(
                    "the [vsyscall] mapping says {} but vsyscall={} is on the kernel command line",
                    m.as_str(),
                    p.as_str()
                ),
                Some("the mapping is what the process gets; check the boot loader's kernel parameters".into()),
            ));
            (m, "mapping")
        }
        (Some(m), None) => (m, "mapping"),
        (None, _) if !x86_64 => (VsyscallMode::None, "architecture"),
        (None, Some(p)) if target_is_64 => {
            (if p == VsyscallMode::None { p } else { VsyscallMode::None }, "mapping+cmdline")
        }
        (None, _) => (VsyscallMode::None, "mapping"),
    };
    if x86_64 && !target_is_64 {
        findings.push(Finding::new(
            Severity::Info,
            "this is a 32-bit process: the kernel gives it no [vsyscall] page",
            None,
        ));
    }
    if mode == VsyscallMode::Emulate {
        findings.push(Finding::new(
            Severity::Info,
            "vsyscall=emulate: the [vsyscall] page is readable; legacy calls into it trap into the kernel and are invisible to strace",
            Some("`vdsoctl trace -a` counts vsyscall emulations; vsyscall=xonly is the safer default since 5.3".into()),
        ));
    }
    (Vsyscall { mode, source: source.into(), mapping_mode, cmdline: param }, findings)
}

/// Build the report for an open process: its maps and word size read
/// between two of its execs, never across one.
pub fn gather(process: &mut Process) -> Result<MapsReport> {
    let (maps, target_is_64) =
        process.read_consistent(|p| Ok((p.maps()?, p.exe_header().map_or(arch::HOST_IS_64, |h| h.is_64))))?;
    let cmdline = kernel::cmdline();
    let (vsyscall, mut findings) = if arch::HOST_MACHINE == arch::machine::X86_64 && !target_is_64 {
        // A 32-bit process has no [vsyscall] page, whatever the host's
        // mode: that mode is what vdsoctl's own (64-bit) mapping says.
        let own = Process::open(None)?.maps()?;
        let (v, mut f) = vsyscall_mode(&own, cmdline.as_deref(), true);
        f.push(Finding::new(
            Severity::Info,
            format!(
                "this is a 32-bit process: the kernel gives it no [vsyscall] page (the host's mode, {}, is read from vdsoctl's own mapping)",
                v.mode.as_str()
            ),
            None,
        ));
        (v, f)
    } else {
        vsyscall_mode(&maps, cmdline.as_deref(), target_is_64)
    };
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
    Ok(MapsReport { process: ProcessRef::of(process), mappings, vsyscall, findings })
}

/// `vdsoctl maps [-p PID]`.
pub fn run(args: &TargetArgs, out: &Output) -> Result<Outcome> {
    let mut process = Process::open(args.pid)?;
    let report = gather(&mut process)?;
    emit(out, &report)?;
    // A FAIL line (no [vdso], a misplaced AT_SYSINFO_EHDR) means exit 1.
    Ok(Outcome::from_crossed(crate::render::any_fail(&report.findings)))
}

impl Render for MapsReport {
    fn render_table(&self, out: &Output) -> String {
        let mut t = out.table(&["MAPPING", "START", "END", "SIZE", "PERMS"]);
        for m in &self.mappings {
            t.add_row(vec![
                m.name.clone(),
                format!("{:#x}", m.start),
                format!("{:#x}", m.end),
                human_size(m.size),
                m.perms.clone(),
            ]);
        }
        let mut s = format!("pid {} ({})\n{t}\n", self.process.pid, out.text(&self.process.comm));
        s += &format!("vsyscall: {} (from {})\n", self.vsyscall.mode.as_str(), self.vsyscall.source);
        s += &out.findings(&self.findings);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::maps::parse;

    #[test]
    fn vsyscall_mode_sources() {
        let xonly = parse("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]").unwrap();
        let (v, _) = vsyscall_mode(&xonly, Some("quiet"), true);
        if arch::HOST_MACHINE == arch::machine::X86_64 {
            assert_eq!((v.mode, v.source.as_str()), (VsyscallMode::Xonly, "mapping"));
            let (v, _) = vsyscall_mode(&xonly, Some("vsyscall=xonly"), true);
            assert_eq!(v.source, "mapping+cmdline");
            let (v, f) = vsyscall_mode(&xonly, Some("vsyscall=emulate"), true);
            assert_eq!(v.mode, VsyscallMode::Xonly);
            assert_eq!(f[0].severity, Severity::Warn);
            let (v, f) = vsyscall_mode(&[], None, false);
            assert_eq!(v.mode, VsyscallMode::None);
            assert!(f[0].message.contains("32-bit"));
        }
    }
}
