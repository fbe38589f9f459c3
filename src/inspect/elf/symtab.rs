//! The function symbols of any ELF object, for naming the code at an
//! address (`trace --sites`, stack frames): `.symtab`, `.dynsym`, and the
//! MiniDebugInfo section `.gnu_debugdata` (an xz-compressed ELF holding a
//! `.symtab` of the functions `.dynsym` lacks, as Fedora and others ship
//! it: <https://sourceware.org/gdb/current/onlinedocs/gdb.html/MiniDebugInfo.html>),
//! with the GNU build-id note to name an object without symbols.
//!
//! Unlike [`parse`](super::parse), which reads a whole vDSO image and caps
//! every table at what a vDSO holds, this reads only the headers, the symbol
//! and string tables and the notes of a file of any size, through
//! [`Source`] (`pread` on a file, or bytes in memory), each read bounded.
//! Total: bad bytes give an `Err` or fewer symbols, never a panic.

use super::{bad, cstr_at, ident, loads, section_table, symbols_in, Ident, Load};
use super::{PT_NOTE, SHT_DYNSYM, SHT_NOBITS, SHT_NOTE, SHT_SYMTAB};
use crate::error::Result;
use goblin::elf::{ProgramHeader, SectionHeader};
use std::io::Write;

/// Bytes of one symbol or string table read at most.
const MAX_TABLE: u64 = 64 << 20;
/// Section headers read at most.
const MAX_SECTIONS: usize = 4096;
/// Bytes `.gnu_debugdata` may decompress to (a MiniDebugInfo ELF is a few MiB).
const MAX_DEBUGDATA: usize = 64 << 20;
/// Bytes kept of one symbol name (a long C++ name is cut, not refused).
const MAX_NAME: usize = 1024;

const NT_GNU_BUILD_ID: u32 = 3;
const STB_GLOBAL: u8 = 1;

/// Where an object's bytes come from.
pub trait Source {
    /// The object's size in bytes.
    fn size(&self) -> u64;
    /// `len` bytes at `off`, fewer at the end; `None` when unreadable.
    fn read_at(&self, off: u64, len: usize) -> Option<Vec<u8>>;
}

impl Source for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn read_at(&self, off: u64, len: usize) -> Option<Vec<u8>> {
        let start = usize::try_from(off).ok()?;
        let rest = self.get(start..)?;
        Some(rest[..rest.len().min(len)].to_vec())
    }
}

impl Source for std::fs::File {
    fn size(&self) -> u64 {
        self.metadata().map_or(0, |m| m.len())
    }
    fn read_at(&self, off: u64, len: usize) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let len = len.min(usize::try_from(self.size().saturating_sub(off)).unwrap_or(usize::MAX));
        let mut buf = vec![0u8; len];
        FileExt::read_exact_at(self, &mut buf, off).ok()?;
        Some(buf)
    }
}

/// Which tables named an object's functions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tables {
    pub symtab: bool,
    pub dynsym: bool,
    /// `.gnu_debugdata` (MiniDebugInfo) decompressed and read.
    pub debugdata: bool,
}

/// A function: `size` bytes from virtual address `start` (0: unknown size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub start: u64,
    pub size: u64,
    pub name: String,
    /// STB_GLOBAL (else weak or local): the name an alias set is shown by.
    pub global: bool,
}

/// The function symbols of one object, sorted by address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectSymbols {
    pub ident: Ident,
    /// `e_type`: 2 ET_EXEC (absolute addresses), 3 ET_DYN.
    pub elf_type: u16,
    /// The PT_LOAD segments: file offset to virtual address.
    pub loads: Vec<Load>,
    pub functions: Vec<Function>,
    /// The GNU build-id, in hex.
    pub build_id: Option<String>,
    pub tables: Tables,
}

impl ObjectSymbols {
    /// The virtual address that file offset `off` is loaded at.
    pub fn vaddr_of_offset(&self, off: u64) -> Option<u64> {
        self.loads.iter().find_map(|l| {
            let delta = off.checked_sub(l.offset)?;
            (delta < l.filesz.max(1)).then(|| l.vaddr.checked_add(delta)).flatten()
        })
    }

    /// The function holding `vaddr` and the offset into it: the closest
    /// start at or below it whose size covers it (an unsized symbol covers
    /// up to the next one).
    pub fn function_at(&self, vaddr: u64) -> Option<(&Function, u64)> {
        let i = self.functions.partition_point(|f| f.start <= vaddr);
        let f = self.functions.get(i.checked_sub(1)?)?;
        let off = vaddr - f.start;
        (f.size == 0 || off < f.size).then_some((f, off))
    }
}

/// The headers an object's tables are found through.
struct Headers {
    ident: Ident,
    elf_type: u16,
    phdrs: Vec<ProgramHeader>,
    /// Section headers with their names.
    shdrs: Vec<(String, SectionHeader)>,
}

fn headers(src: &(impl Source + ?Sized)) -> Result<Headers> {
    let head = src.read_at(0, 64).unwrap_or_default();
    let id = ident(&head).ok_or_else(|| bad("not an ELF file"))?;
    let header = goblin::elf::Elf::parse_header(&head).map_err(|e| bad(format!("ELF header: {e}")))?;
    let ctx = id.ctx();
    let phsize = ProgramHeader::size(ctx);
    let phnum = usize::from(header.e_phnum).min(256);
    let phdrs = match src.read_at(header.e_phoff, phnum * phsize) {
        Some(b) if b.len() == phnum * phsize && phnum > 0 => {
            ProgramHeader::parse(&b, 0, phnum, ctx).map_err(|e| bad(format!("program headers: {e}")))?
        }
        _ => Vec::new(),
    };
    let shsize = SectionHeader::size(ctx);
    let count = usize::from(header.e_shnum);
    let mut shdrs = Vec::new();
    if header.e_shoff != 0 && count > 0 && count <= MAX_SECTIONS && usize::from(header.e_shentsize) == shsize {
        let table = src.read_at(header.e_shoff, count * shsize).unwrap_or_default();
        if let Some(table) = section_table(&table, count, ctx) {
            let names = table
                .get(usize::from(header.e_shstrndx))
                .and_then(|s| src.read_at(s.sh_offset, s.sh_size.min(1 << 20) as usize))
                .unwrap_or_default();
            shdrs = table.into_iter().map(|s| (names.get(s.sh_name..).map(cstr_at).unwrap_or_default(), s)).collect();
        }
    }
    Ok(Headers { ident: id, elf_type: header.e_type, phdrs, shdrs })
}

/// Read an object's function symbols, build-id and load segments.
pub fn object_symbols(src: &(impl Source + ?Sized)) -> Result<ObjectSymbols> {
    let h = headers(src)?;
    let mut tables = Tables::default();
    let mut functions = Vec::new();
    for (kind, flag) in [(SHT_SYMTAB, &mut tables.symtab), (SHT_DYNSYM, &mut tables.dynsym)] {
        if let Some((_, table)) = h.shdrs.iter().find(|(_, s)| s.sh_type == kind) {
            *flag = read_functions(src, &h, table, &mut functions);
        }
    }
    if let Some((_, dd)) = h.shdrs.iter().find(|(n, s)| n == ".gnu_debugdata" && s.sh_type != SHT_NOBITS) {
        if let Some(inner) = debugdata(src, dd) {
            if let Ok(inner) = object_symbols(&inner[..]) {
                tables.debugdata = inner.tables.symtab;
                functions.extend(inner.functions);
            }
        }
    }
    // One name per start: the sized symbol, a global one (the vDSO's
    // `__vdso_clock_gettime` over its weak `clock_gettime`), the one with
    // fewer leading underscores (glibc's `clock_gettime` over its
    // `__clock_gettime`), then the first by name.
    let underscores = |f: &Function| f.name.bytes().take_while(|&b| b == b'_').count();
    functions.sort_by(|a, b| {
        (a.start, b.size, !a.global, underscores(a), &a.name).cmp(&(
            b.start,
            a.size,
            !b.global,
            underscores(b),
            &b.name,
        ))
    });
    functions.dedup_by(|b, a| a.start == b.start);
    let build_id = build_id(src, &h);
    Ok(ObjectSymbols { ident: h.ident, elf_type: h.elf_type, loads: loads(&h.phdrs), functions, build_id, tables })
}

/// The functions of one symbol table, with its linked string table; false
/// when the table could not be read.
fn read_functions(src: &(impl Source + ?Sized), h: &Headers, table: &SectionHeader, out: &mut Vec<Function>) -> bool {
    let Some((_, strtab)) = h.shdrs.get(table.sh_link as usize) else { return false };
    let (Some(syms), Some(strings)) = (
        src.read_at(table.sh_offset, table.sh_size.min(MAX_TABLE) as usize),
        src.read_at(strtab.sh_offset, strtab.sh_size.min(MAX_TABLE) as usize),
    ) else {
        return false;
    };
    for s in symbols_in(&syms, h.ident.ctx()) {
        if !super::is_function(&s) || s.st_shndx == 0 || s.st_value == 0 {
            continue;
        }
        let Some(name) = strings.get(s.st_name..) else { continue };
        let name = &name[..name.len().min(MAX_NAME + 1)];
        let name = cstr_at(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len()).min(MAX_NAME)]);
        if !name.is_empty() {
            out.push(Function { start: s.st_value, size: s.st_size, name, global: s.st_info >> 4 == STB_GLOBAL });
        }
    }
    true
}

/// `.gnu_debugdata` decompressed (xz), at most [`MAX_DEBUGDATA`] bytes.
fn debugdata(src: &(impl Source + ?Sized), sh: &SectionHeader) -> Option<Vec<u8>> {
    let packed = src.read_at(sh.sh_offset, sh.sh_size.min(MAX_TABLE) as usize)?;
    let mut out = Bounded(Vec::new());
    lzma_rs::xz_decompress(&mut &packed[..], &mut out).ok()?;
    Some(out.0)
}

/// A writer that refuses to grow past [`MAX_DEBUGDATA`]: a small section
/// cannot make vdsoctl allocate without bound.
struct Bounded(Vec<u8>);

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_DEBUGDATA {
            return Err(std::io::Error::other("MiniDebugInfo larger than the cap"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The GNU build-id note (sections, else PT_NOTE segments), in hex.
fn build_id(src: &(impl Source + ?Sized), h: &Headers) -> Option<String> {
    let mut regions: Vec<(u64, u64)> =
        h.shdrs.iter().filter(|(_, s)| s.sh_type == SHT_NOTE).map(|(_, s)| (s.sh_offset, s.sh_size)).collect();
    if regions.is_empty() {
        regions = h.phdrs.iter().filter(|p| p.p_type == PT_NOTE).map(|p| (p.p_offset, p.p_filesz)).collect();
    }
    let le = h.ident.little_endian;
    regions.into_iter().find_map(|(off, size)| {
        let region = src.read_at(off, size.min(64 << 10) as usize)?;
        let u32_at = |at: usize| -> Option<u32> {
            let b: [u8; 4] = region.get(at..at.checked_add(4)?)?.try_into().ok()?;
            Some(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
        };
        let up = |v: usize| v.checked_add(3).map(|x| x & !3);
        let mut at = 0usize;
        while at < region.len() {
            let (namesz, descsz, kind) = (u32_at(at)? as usize, u32_at(at + 4)? as usize, u32_at(at + 8)?);
            let desc_at = up(at.checked_add(12)?.checked_add(namesz)?)?;
            let next = up(desc_at.checked_add(descsz)?)?;
            let name = region.get(at + 12..at + 12 + namesz)?;
            if kind == NT_GNU_BUILD_ID && name.starts_with(b"GNU") {
                let desc = region.get(desc_at..desc_at + descsz)?;
                return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
            }
            at = next;
        }
        None
    })
}
