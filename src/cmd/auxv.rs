//! `auxv`: the auxiliary vector of any process, decoded with the target's
//! word size, and AT_SYSINFO_EHDR checked against the `[vdso]` mapping.

use super::Outcome;
use crate::arch;
use crate::error::Result;
use crate::inspect::auxv::{AuxEntry, WordSize, AT_SYSINFO_EHDR};
use crate::inspect::maps::Mapping;
use crate::inspect::Process;
use crate::model::auxv::{AuxvReport, AuxvRow, Decoded};
use crate::model::policy::SysinfoEhdr;
use crate::model::ProcessRef;
use crate::render::{emit, Output};
use crate::resolve::ProcessRequest;

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
pub fn run(req: &ProcessRequest, out: &Output) -> Result<Outcome> {
    let mut process = Process::open(req.pid)?;
    let report = gather(&mut process)?;
    emit(out, &report)?;
    // A FAIL line (no [vdso], a misplaced AT_SYSINFO_EHDR) means exit 1.
    Ok(Outcome::from_crossed(crate::render::any_fail(&report.findings)))
}
