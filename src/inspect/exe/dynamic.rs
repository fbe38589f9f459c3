//! Where a file without section headers imports libc's `syscall()`: its
//! relocations (DT_JMPREL, DT_RELA, DT_REL) read through its dynamic
//! section, each one's symbol (DT_SYMTAB, DT_STRTAB) looked at by index,
//! and the PLT stubs that jump through the slots they fill found by
//! decoding the start of its executable segments — what the loader itself
//! reads, so a program the loader runs is read too.

use super::*;
use goblin::elf::dynamic::{
    DT_JMPREL, DT_PLTGOT, DT_PLTREL, DT_PLTRELSZ, DT_REL, DT_RELA, DT_RELASZ, DT_RELSZ, DT_SYMENT, DT_SYMTAB,
};

/// How much of each executable segment's start is decoded for PLT stubs
/// (.init, .plt, .plt.got, .plt.sec come first in it).
const PLT_REACH: u64 = 1 << 20;

/// Distinct symbols looked at by index, at most (a hostile relocation
/// table cannot make it read one per entry).
const MAX_SYMBOLS: usize = 1 << 16;

/// The dynamic-section addresses the import lookup reads.
#[derive(Default)]
struct Dynamic {
    symtab: Option<u64>,
    strtab: Option<u64>,
    syment: Option<u64>,
    pltgot: Option<u64>,
    tables: Vec<(u64, u64, bool)>,
}

fn dynamic(file: &File, h: &Headers) -> Result<Option<Dynamic>> {
    let Some(d) = h.phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else { return Ok(None) };
    let bytes = pread(file, d.p_offset, d.p_filesz.min(MAX_DYNAMIC) as usize)?;
    let mut out = Dynamic::default();
    let (mut jmprel, mut pltrelsz, mut pltrel) = (None, None, None);
    let (mut rela, mut relasz, mut rel, mut relsz) = (None, None, None, None);
    for (tag, val) in elf::dynamic_entries(&bytes, h.ident) {
        match tag {
            DT_SYMTAB => out.symtab = Some(val),
            DT_STRTAB => out.strtab = Some(val),
            DT_SYMENT => out.syment = Some(val),
            DT_PLTGOT => out.pltgot = Some(val),
            DT_JMPREL => jmprel = Some(val),
            DT_PLTRELSZ => pltrelsz = Some(val),
            DT_PLTREL => pltrel = Some(val),
            DT_RELA => rela = Some(val),
            DT_RELASZ => relasz = Some(val),
            DT_REL => rel = Some(val),
            DT_RELSZ => relsz = Some(val),
            _ => {}
        }
    }
    let jmp_rela = pltrel.map_or(h.is_64, |p| p == DT_RELA);
    for (at, size, is_rela) in [(jmprel, pltrelsz, jmp_rela), (rela, relasz, true), (rel, relsz, false)] {
        if let (Some(at), Some(size)) = (at, size) {
            out.tables.push((at, size.min(MAX_TABLE), is_rela));
        }
    }
    Ok(Some(out))
}

/// Fill `t` with the GOT slots of `syscall` and the PLT stubs that jump
/// through them, from the dynamic section of a file without sections.
pub(super) fn syscall_imports(file: &File, h: &Headers, isa: Isa, t: &mut Targets) -> Result<()> {
    let Some(d) = dynamic(file, h)? else { return Ok(()) };
    let (Some(symtab), Some(strtab)) = (d.symtab, d.strtab) else { return Ok(()) };
    let (Some(symtab), Some(strtab)) = (h.offset_of(symtab, 1), h.offset_of(strtab, 1)) else { return Ok(()) };
    let ident = elf::Ident { machine: 0, ..h.ident };
    let syment = goblin::elf::Sym::size(ident.ctx().container) as u64;
    if d.syment.is_some_and(|e| e != syment) {
        return Ok(());
    }
    let mut known: std::collections::HashMap<u32, bool> = Default::default();
    let mut is_syscall = |index: u32| -> Result<bool> {
        if let Some(&k) = known.get(&index) {
            return Ok(k);
        }
        if known.len() >= MAX_SYMBOLS {
            return Ok(false);
        }
        let at = symtab.saturating_add(u64::from(index).saturating_mul(syment));
        let sym = elf::symbols_in(&pread(file, at, syment as usize)?, ident.ctx()).into_iter().next();
        let named = match sym.filter(|s| s.st_shndx == 0) {
            Some(s) => pread(file, strtab.saturating_add(s.st_name as u64), 8)?.as_slice() == b"syscall\0",
            None => false,
        };
        known.insert(index, named);
        Ok(named)
    };
    for (at, size, rela) in d.tables {
        let Some(off) = h.offset_of(at, size) else { continue };
        let entry = if h.is_64 { 8 } else { 4 } * if rela { 3 } else { 2 };
        let chunk = (TABLE_CHUNK / entry * entry) as u64;
        let mut done = 0u64;
        while done < size {
            let bytes = pread(file, off.saturating_add(done), (size - done).min(chunk) as usize)?;
            for (slot, sym) in elf::relocations_in(&bytes, ident, rela) {
                if sym != 0 && is_syscall(sym)? {
                    t.syscall_got.push(slot);
                }
            }
            if (bytes.len() as u64) < chunk {
                break;
            }
            done += chunk;
        }
    }
    if t.syscall_got.is_empty() {
        return Ok(());
    }
    for r in code_ranges(h) {
        let bytes = pread(file, r.off, r.size.min(PLT_REACH) as usize)?;
        let stubs = match isa {
            Isa::X86(bits) => code::plt_stubs(&bytes, r.addr, bits, &t.syscall_got, d.pltgot),
            Isa::A64 => code_a64::plt_stubs(&bytes, r.addr, &t.syscall_got),
        };
        t.syscall_fn.extend(stubs);
    }
    Ok(())
}
