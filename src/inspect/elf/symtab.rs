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

use super::read::{self, HeaderError, Headers, Source};
use super::{bad, cstr_at, symbols_in, Ident, Load, Section, SegmentKind, SHT_DYNSYM, SHT_NOTE, SHT_SYMTAB};
use crate::error::Result;
use std::io::Write;

/// Bytes of one symbol or string table read at most.
const MAX_TABLE: u64 = 64 << 20;
/// Bytes `.gnu_debugdata` may decompress to (a MiniDebugInfo ELF is a few MiB).
const MAX_DEBUGDATA: usize = 64 << 20;
/// Bytes kept of one symbol name (a long C++ name is cut, not refused).
const MAX_NAME: usize = 1024;

const NT_GNU_BUILD_ID: u32 = 3;
const STB_GLOBAL: u8 = 1;

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

/// The headers, through the one file-backed reader.
fn headers(src: &(impl Source + ?Sized)) -> Result<Headers> {
    read::headers(src).map_err(|e| match e {
        HeaderError::Header(e) => bad(format!("ELF header: {e}")),
        HeaderError::Io(e) => bad(format!("unreadable: {e}")),
        HeaderError::TooManySegments(n) => bad(format!("{n} program headers")),
        HeaderError::SegmentsShort => bad("program headers past the end of the file"),
        HeaderError::NotElf | HeaderError::Ident => bad("not an ELF file"),
    })
}

/// Read an object's function symbols, build-id and load segments.
pub fn object_symbols(src: &(impl Source + ?Sized)) -> Result<ObjectSymbols> {
    let h = headers(src)?;
    let mut tables = Tables::default();
    let mut functions = Vec::new();
    for (kind, flag) in [(SHT_SYMTAB, &mut tables.symtab), (SHT_DYNSYM, &mut tables.dynsym)] {
        if let Some(table) = h.section_of(kind) {
            *flag = read_functions(src, &h, table, &mut functions);
        }
    }
    if let Some(dd) = h.sections.iter().find(|s| s.name == ".gnu_debugdata" && s.has_bytes()) {
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
    let (ident, elf_type, build_id) = (h.ident(), h.header.elf_type, build_id(src, &h));
    Ok(ObjectSymbols { ident, elf_type, loads: h.loads().to_vec(), functions, build_id, tables })
}

/// The functions of one symbol table, with its linked string table; false
/// when the table could not be read.
fn read_functions(src: &(impl Source + ?Sized), h: &Headers, table: &Section, out: &mut Vec<Function>) -> bool {
    let Some(strtab) = h.linked(table) else { return false };
    let (Ok(syms), Ok(strings)) = (
        src.read_at(table.offset, table.size.min(MAX_TABLE) as usize),
        src.read_at(strtab.offset, strtab.size.min(MAX_TABLE) as usize),
    ) else {
        return false;
    };
    for s in symbols_in(&syms, h.ident()) {
        if !s.is_function() || !s.is_defined() || s.value == 0 {
            continue;
        }
        let Some(name) = strings.get(s.name..) else { continue };
        let name = &name[..name.len().min(MAX_NAME + 1)];
        let name = cstr_at(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len()).min(MAX_NAME)]);
        if !name.is_empty() {
            out.push(Function { start: s.value, size: s.size, name, global: s.bind() == STB_GLOBAL });
        }
    }
    true
}

/// `.gnu_debugdata` decompressed (xz), at most [`MAX_DEBUGDATA`] bytes.
fn debugdata(src: &(impl Source + ?Sized), sh: &Section) -> Option<Vec<u8>> {
    let packed = src.read_at(sh.offset, sh.size.min(MAX_TABLE) as usize).ok()?;
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
        h.sections.iter().filter(|s| s.kind == SHT_NOTE).map(|s| (s.offset, s.size)).collect();
    if regions.is_empty() {
        regions = h.segments.iter().filter(|p| p.kind == SegmentKind::Note).map(|p| (p.offset, p.filesz)).collect();
    }
    let le = h.ident().little_endian;
    regions.into_iter().find_map(|(off, size)| {
        let region = src.read_at(off, size.min(64 << 10) as usize).ok()?;
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
