//! Where a file without section headers imports libc's `syscall()`: its
//! relocations (DT_JMPREL, DT_RELA, DT_REL) read through its dynamic
//! section, each one's symbol (DT_SYMTAB, DT_STRTAB) looked at by index,
//! and the PLT stubs that jump through the slots they fill found by
//! decoding the start of its executable segments — what the loader itself
//! reads, so a program the loader runs is read too.

use super::*;

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
    let Some(entries) = elf_read::dynamic(file, h).map_err(io_error)? else { return Ok(None) };
    let mut out = Dynamic::default();
    let (mut jmprel, mut pltrelsz, mut pltrel) = (None, None, None);
    let (mut rela, mut relasz, mut rel, mut relsz) = (None, None, None, None);
    for (tag, val) in entries {
        match tag {
            dt::SYMTAB => out.symtab = Some(val),
            dt::STRTAB => out.strtab = Some(val),
            dt::SYMENT => out.syment = Some(val),
            dt::PLTGOT => out.pltgot = Some(val),
            dt::JMPREL => jmprel = Some(val),
            dt::PLTRELSZ => pltrelsz = Some(val),
            dt::PLTREL => pltrel = Some(val),
            dt::RELA => rela = Some(val),
            dt::RELASZ => relasz = Some(val),
            dt::REL => rel = Some(val),
            dt::RELSZ => relsz = Some(val),
            _ => {}
        }
    }
    let jmp_rela = pltrel.map_or(h.ident().is_64, |p| p == dt::RELA);
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
    let ident = h.ident();
    let syment = ident.size_of(elf::Record::Symbol) as u64;
    if d.syment.is_some_and(|e| e != syment) {
        return Ok(());
    }
    let mut known: std::collections::HashMap<u32, bool> = Default::default();
    let mut is_syscall = |index: u32| -> std::io::Result<bool> {
        if let Some(&k) = known.get(&index) {
            return Ok(k);
        }
        if known.len() >= MAX_SYMBOLS {
            return Ok(false);
        }
        let at = symtab.saturating_add(u64::from(index).saturating_mul(syment));
        let sym = elf::symbols_in(&file.read_at(at, syment as usize)?, ident).into_iter().next();
        let named = match sym.filter(|s| !s.is_defined()) {
            Some(s) => file.read_at(strtab.saturating_add(s.name as u64), 8)?.as_slice() == b"syscall\0",
            None => false,
        };
        known.insert(index, named);
        Ok(named)
    };
    for (at, size, rela) in d.tables {
        let Some(off) = h.offset_of(at, size) else { continue };
        for_each_relocation(file, h, (off, size, rela), |slot, sym| {
            if sym != 0 && is_syscall(sym)? {
                t.syscall_got.push(slot);
            }
            Ok(())
        })?;
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
