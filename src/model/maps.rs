//! `maps`'s report: the kernel's special mappings of a process and its
//! vsyscall mode.

use super::timens::TimeNs;
use super::vsyscall::Vsyscall;
use super::{hex, Finding, ProcessRef};
use serde::Serialize;

/// The `maps` report (DESIGN keys: pid, mappings, vsyscall).
#[derive(Debug, Serialize)]
pub struct MapsReport {
    pub process: ProcessRef,
    pub mappings: Vec<SpecialMapping>,
    pub vsyscall: Vsyscall,
    /// Its time namespace and clock offsets; `null` where the kernel has none.
    pub time_namespace: Option<TimeNs>,
    /// Every function its `[vdso]` exports and what each serves (a
    /// syscall's fast path, or not one; `unknown` to vdsoctl), none
    /// dropped; `null` when the `[vdso]` could not be read.
    pub vdso_exports: Option<Vec<VdsoExport>>,
    pub findings: Vec<Finding>,
}

/// One export of the process's `[vdso]`.
#[derive(Debug, Serialize)]
pub struct VdsoExport {
    pub name: String,
    /// What it serves: `{role, of}` as `dump --json`'s `symbols[].serves`.
    pub serves: crate::arch::ExportRole,
}

impl VdsoExport {
    /// Every export of `img` ([`super::host::exports`]).
    pub fn all(img: &crate::inspect::elf::Image) -> Vec<VdsoExport> {
        super::host::exports(img).into_iter().map(|(name, serves)| VdsoExport { name, serves }).collect()
    }
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
