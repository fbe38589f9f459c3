//! The vsyscall mode of a process and of the host, and what it means: the
//! one place that judges it (`maps`, `check`, `serve` and the binary
//! audit all read it from here). What it says is a [`VsyscallFact`],
//! worded in render/vdso.rs.

use super::Status;
use crate::arch;
use crate::inspect::kernel::{self, VsyscallMode};
use crate::inspect::maps::Mapping;
use crate::model::kind::Kind;
use serde::Serialize;

/// How `vsyscall=emulate` is judged, in `maps`' finding and `check`'s row
/// alike: INFO. Under emulate and under xonly alike a legacy call into the
/// page is emulated, trapping into the kernel at the same cost; emulate only
/// leaves the page readable. That is hardening, not the fast path: no clock
/// read is slower for it, so it is said, not warned about.
pub const EMULATE: Status = Status::Info;

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

/// What `maps` says about a vsyscall mode, as data: render/vdso.rs words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VsyscallFact {
    /// The `[vsyscall]` mapping says `mapping`, the kernel command line `cmdline`.
    Disagree { mapping: VsyscallMode, cmdline: VsyscallMode },
    /// A 32-bit process: the kernel gives it no `[vsyscall]` page.
    Compat32,
    /// A 32-bit process, the host's mode `host` read from vdsoctl's own mapping.
    Compat32Host { host: VsyscallMode },
    /// vsyscall=emulate: the page is readable, legacy calls trap.
    Emulate,
}

impl VsyscallFact {
    pub fn kind(&self) -> Kind {
        match self {
            VsyscallFact::Disagree { .. } => Kind::VsyscallMode,
            VsyscallFact::Compat32 | VsyscallFact::Compat32Host { .. } => Kind::Note,
            VsyscallFact::Emulate => Kind::VsyscallEmulate,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            VsyscallFact::Disagree { .. } => Status::Warn,
            VsyscallFact::Compat32 | VsyscallFact::Compat32Host { .. } => Status::Info,
            VsyscallFact::Emulate => EMULATE,
        }
    }
}

/// A 32-bit process's fact: the kernel gives it no [vsyscall] page, and
/// the host's mode `v` is read from vdsoctl's own (64-bit) mapping.
pub fn compat_process_fact(v: &Vsyscall) -> VsyscallFact {
    VsyscallFact::Compat32Host { host: v.mode }
}

/// Decide the vsyscall mode from the mapping (what this process really has)
/// and the kernel command line (what the host was booted with).
pub fn vsyscall_mode(maps: &[Mapping], cmdline: Option<&str>, target_is_64: bool) -> (Vsyscall, Vec<VsyscallFact>) {
    let mut findings = Vec::new();
    let mapping_mode = maps.iter().find(|m| m.name() == "[vsyscall]").and_then(|m| VsyscallMode::from_perms(&m.perms));
    let param = cmdline.and_then(|c| kernel::cmdline_param(c, "vsyscall")).map(str::to_string);
    let param_mode = param.as_deref().and_then(VsyscallMode::from_param);
    let x86_64 = arch::HOST_MACHINE == arch::machine::X86_64;
    let (mode, source) = match (mapping_mode, param_mode) {
        (Some(m), Some(p)) if m == p => (m, "mapping+cmdline"),
        (Some(m), Some(p)) => {
            findings.push(VsyscallFact::Disagree { mapping: m, cmdline: p });
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
        findings.push(VsyscallFact::Compat32);
    }
    if mode == VsyscallMode::Emulate {
        findings.push(VsyscallFact::Emulate);
    }
    (Vsyscall { mode, source: source.into(), mapping_mode, cmdline: param }, findings)
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
            assert_eq!(f[0].status(), Status::Warn);
            let (v, f) = vsyscall_mode(&[], None, false);
            assert_eq!(v.mode, VsyscallMode::None);
            assert_eq!(f[0], VsyscallFact::Compat32);
        }
    }
}
