//! `auxv`: the auxiliary vector of any process, decoded with the target's
//! word size, and AT_SYSINFO_EHDR checked against the `[vdso]` mapping.

use super::Outcome;
use crate::arch;
use crate::cli::TargetArgs;
use crate::error::Result;
use crate::inspect::auxv::{AuxEntry, WordSize, AT_SYSINFO_EHDR};
use crate::inspect::maps::Mapping;
use crate::inspect::Process;
use crate::model::policy::SysinfoEhdr;
use crate::model::{hex, hex_opt, Finding, ProcessRef};
use crate::render::{emit, Output, Render};
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

/// An entry's value, typed by its key.
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

impl Decoded {
    /// The value as the table's DECODED column shows it, beside VALUE:
    /// never the same hex again.
    pub fn text(&self) -> String {
        match self {
            Decoded::Address(0) => "null".into(),
            Decoded::Address(_) => "-".into(),
            Decoded::Flags(0) => "none".into(),
            Decoded::Flags(_) => "-".into(),
            Decoded::Count(v) => v.to_string(),
            Decoded::Hwcap { names, .. } if names.is_empty() => "-".into(),
            Decoded::Hwcap { names, .. } => names.join(" "),
            Decoded::Text(s) => s.clone(),
            Decoded::Unreadable(_) => "unreadable".into(),
        }
    }
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

/// How a key's value is best shown.
enum Kind {
    Address,
    Count,
    Flags,
    String,
    Hwcap(u8),
}

fn kind(key: u64) -> Kind {
    match key {
        3 | 7 | 9 | 25 | 32 | 33 => Kind::Address,
        8 => Kind::Flags,
        15 | 24 | 31 => Kind::String,
        16 => Kind::Hwcap(1),
        26 => Kind::Hwcap(2),
        29 | 30 => Kind::Flags,
        34..=37 => Kind::Flags,
        _ => Kind::Count,
    }
}

/// Where an address lies: `in [vdso]`, `in /usr/bin/sleep`, or `unmapped`
/// (VALUE already shows the number).
fn address_text(maps: &[Mapping], addr: u64) -> String {
    match maps.iter().find(|m| m.start <= addr && addr < m.end) {
        Some(m) if !m.name().is_empty() => format!("in {}", m.name()),
        Some(_) => "in an anonymous mapping".into(),
        None => "unmapped".into(),
    }
}

/// Decode entries; strings are read from the target's memory, addresses
/// named by the mapping that holds them.
pub fn decode(process: &Process, entries: &[AuxEntry], machine: u16, maps: &[Mapping]) -> Vec<AuxvRow> {
    entries
        .iter()
        .map(|e| {
            let decoded = match kind(e.key) {
                Kind::Address => Decoded::Address(e.value),
                Kind::Count => Decoded::Count(e.value),
                Kind::Flags => Decoded::Flags(e.value),
                Kind::Hwcap(which) => {
                    let names = if arch::hwcap_bits(machine, which).is_empty() {
                        Vec::new()
                    } else {
                        arch::decode_hwcap(machine, which, e.value)
                    };
                    Decoded::Hwcap { value: e.value, names }
                }
                Kind::String => match process.read_cstring(e.value, 4096) {
                    Ok(bytes) => Decoded::Text(String::from_utf8_lossy(&bytes).into_owned()),
                    Err(_) => Decoded::Unreadable(e.value),
                },
            };
            let place = matches!(decoded, Decoded::Address(a) if a != 0).then(|| address_text(maps, e.value));
            AuxvRow { key: e.key, name: arch::auxv_name(e.key).map(str::to_string), value: e.value, decoded, place }
        })
        .collect()
}

/// Build the report for an open process: the vector, the strings it points
/// to and the maps all read between two of its execs, never across one.
pub fn gather(process: &mut Process) -> Result<AuxvReport> {
    let (entries, word, maps, rows) = process.read_consistent(|p| {
        let (entries, word) = p.auxv()?;
        let machine = p.exe_header().map_or(arch::HOST_MACHINE, |h| h.machine);
        let maps = p.maps()?;
        let rows = decode(p, &entries, machine, &maps);
        Ok((entries, word, maps, rows))
    })?;
    let vdso_start = maps.iter().find(|m| m.name() == "[vdso]").map(|m| m.start);
    let ehdr = crate::inspect::auxv::get(&entries, AT_SYSINFO_EHDR);
    let verdict = SysinfoEhdr::judge(ehdr, vdso_start);
    let matches = verdict.matches();
    let findings = vec![verdict.finding()];
    Ok(AuxvReport {
        process: ProcessRef::of(process),
        word_bits: if word == WordSize::W64 { 64 } else { 32 },
        entries: rows,
        sysinfo_ehdr_matches_vdso: matches,
        vdso_start,
        findings,
    })
}

/// `vdsoctl auxv [-p PID]`.
pub fn run(args: &TargetArgs, out: &Output) -> Result<Outcome> {
    let mut process = Process::open(args.pid)?;
    let report = gather(&mut process)?;
    emit(out, &report)?;
    // A FAIL line (no [vdso], a misplaced AT_SYSINFO_EHDR) means exit 1.
    Ok(Outcome::from_crossed(crate::render::any_fail(&report.findings)))
}

impl Render for AuxvReport {
    fn render_table(&self, out: &Output) -> String {
        let mut t = out.table(&["KEY", "NAME", "VALUE", "DECODED"]);
        t.wrap("DECODED");
        for e in &self.entries {
            t.add_row(vec![
                e.key.to_string(),
                e.name.clone().unwrap_or_else(|| "-".into()),
                format!("{:#x}", e.value),
                out.text(&e.place.clone().unwrap_or_else(|| e.decoded.text())).into_owned(),
            ]);
        }
        format!(
            "pid {} ({}), {}-bit auxv\n{t}\n{}",
            self.process.pid,
            out.text(&self.process.comm),
            self.word_bits,
            out.findings(&self.findings)
        )
    }
}
