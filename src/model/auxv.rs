//! `auxv`'s report: the auxiliary vector decoded with the target's word
//! size, and AT_SYSINFO_EHDR judged against the `[vdso]` mapping.

use super::{hex, hex_opt, Finding, ProcessRef};
use serde::Serialize;

/// The `auxv` report (DESIGN keys: pid, entries, sysinfo_ehdr_matches_vdso).
#[derive(Debug, Serialize)]
pub struct AuxvReport {
    pub process: ProcessRef,
    /// 32 or 64: the word size the vector was decoded with.
    pub word_bits: u32,
    pub entries: Vec<AuxvRow>,
    /// `null` when either side is missing.
    pub sysinfo_ehdr_matches_vdso: Option<bool>,
    #[serde(serialize_with = "hex_opt")]
    pub vdso_start: Option<u64>,
    pub findings: Vec<Finding>,
}

/// One decoded entry.
#[derive(Debug, Serialize)]
pub struct AuxvRow {
    pub key: u64,
    /// `AT_*` name, `null` for a key this build does not know.
    pub name: Option<String>,
    #[serde(serialize_with = "hex")]
    pub value: u64,
    /// The value in the form that fits the key: a number for a count, the
    /// string for a string key, the flag names for hardware capabilities;
    /// `null` when `value` says it all (addresses, flags, unreadable strings).
    pub decoded: Decoded,
    /// For an address: the mapping it lies in (`in [vdso]`), for the table.
    #[serde(skip)]
    pub place: Option<String>,
}

/// An entry's value, typed by its key; the table's DECODED column words
/// it (render/auxv.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    Address(u64),
    Count(u64),
    Flags(u64),
    /// Hardware capability bits with the names this build knows.
    Hwcap {
        value: u64,
        names: Vec<String>,
    },
    Text(String),
    /// A string pointer whose bytes could not be read.
    Unreadable(u64),
}

impl Serialize for Decoded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Decoded::Count(v) => s.serialize_u64(*v),
            Decoded::Hwcap { names, .. } => names.serialize(s),
            Decoded::Text(t) => s.serialize_str(t),
            Decoded::Address(_) | Decoded::Flags(_) | Decoded::Unreadable(_) => s.serialize_none(),
        }
    }
}
