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
