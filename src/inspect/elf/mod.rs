//! The vDSO image as an ELF shared object: header, dynamic symbols with their
//! versions (what `objdump -T` lists), version definitions (`readelf -V`),
//! notes (`readelf -n`) and which hash tables the dynamic section names.
//!
//! The bytes are untrusted: a file anyone handed us, or a mapping another
//! process may have shaped. [`records`] decodes the fixed-size records
//! (header, program and section headers, dynamic entries, symbols), but only
//! after this module has checked every table's offset and count against the
//! buffer; goblin's own `Elf::parse` walks hash chains and relocations with
//! unchecked arithmetic, so it is not used. The variable-length walks
//! (strings, version chains, notes) are done here with checked reads.
//! Structural damage (a table outside the file, a loop) is an `Err`; a single
//! bad string index reads as `<corrupt>`, as readelf prints it.
//!
//! Every count the file claims is capped at many times what a vDSO holds
//! (a vDSO has a dozen symbols, two or three versions, three notes), and
//! every string and note descriptor is cut at a fixed length, so the parsed
//! image stays a few hundred KiB whatever the tables claim; each cap that
//! bites, and each note area readelf would reject, is an [`Issue`] the
//! report turns into a finding, and the rest is still parsed.
//!
//! Values follow `objdump -T`: on 32-bit ARM a function's Thumb bit (bit 0
//! of st_value) is cleared and kept as [`Symbol::thumb`]; a section symbol
//! with no name is named by its section.
//!
//! Executables and libraries of any size are read through [`read`]: the
//! same records, from a file with every read bounded. This module is the
//! crate's one ELF reader.
//!
//! References: the System V gABI, `elf(5)`, and the GNU symbol versioning
//! spec (`.gnu.version`, `.gnu.version_d`).

use crate::error::{Error, Result};

mod names;
mod parser;
pub mod read;
pub mod records;
pub mod symtab;

pub use names::*;
use parser::Parser;
pub use read::{Headers, Source};
pub use records::{dt, Header, Record, Section, Segment, SegmentKind, Sym, ET_DYN};
pub use records::{SHT_DYNSYM, SHT_REL, SHT_RELA, SHT_SYMTAB};
use records::{SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM};
use records::{SHT_NOTE, SHT_STRTAB};
use records::{STT_FUNC, STT_GNU_IFUNC, STT_SECTION};
use std::cell::Cell;
use std::collections::HashSet;
use std::ops::Range;

/// What the parse errors are about; callers replace it with the file or pid.
pub const WHAT: &str = "ELF image";

/// Caps on what the file claims (a real vDSO is far below each).
pub mod caps {
    /// Dynamic symbols read (a vDSO exports 5 to 30).
    pub const SYMBOLS: u64 = 1024;
    /// Version definitions read (a vDSO defines 2 or 3).
    pub const VERSIONS: u64 = 256;
    /// Parent names kept per version definition.
    pub const PARENTS: u64 = 8;
    /// Notes read (a vDSO has 1 to 4).
    pub const NOTES: usize = 64;
    /// Descriptor bytes kept per note (a build-id is 20).
    pub const NOTE_DESC: usize = 4096;
    /// Bytes kept of one name (symbol, version, section, note owner).
    pub const NAME: usize = 256;
    /// Section headers read (a vDSO has about 20).
    pub const SECTIONS: u64 = 1024;
    /// Program headers read (a vDSO has 4 or 5).
    pub const SEGMENTS: u64 = 256;
    /// Dynamic entries read (a vDSO has about 15).
    pub const DYNAMIC: u64 = 1024;
}

use crate::arch::machine::ARM as EM_ARM;
const SHN_UNDEF: usize = 0;
const SHN_LORESERVE: usize = 0xff00;
const SHN_ABS: usize = 0xfff1;
const SHN_COMMON: usize = 0xfff2;
const SHN_XINDEX: usize = 0xffff;
const VERSYM_HIDDEN: u16 = 0x8000;
pub const VER_FLG_BASE: u16 = 0x1;
const VER_FLG_WEAK: u16 = 0x2;
/// Size of `Elf32_Verdef`/`Elf64_Verdef` (the same in both classes).
const VERDEF_SIZE: u64 = 20;
/// Size of `Elf*_Verdaux`.
const VERDAUX_SIZE: u64 = 8;

/// A parsed vDSO image. Everything is owned, so the report can outlive the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub is_64: bool,
    pub little_endian: bool,
    /// `e_machine`.
    pub machine: u16,
    /// `e_type` (3 = ET_DYN for every real vDSO).
    pub elf_type: u16,
    /// DT_SONAME (`linux-vdso.so.1`, `linux-gate.so.1`, ...).
    pub soname: Option<String>,
    /// Bytes in the image.
    pub size: u64,
    /// Dynamic symbols in table order, without the null symbol at index 0.
    pub symbols: Vec<Symbol>,
    /// Version definitions in chain order.
    pub versions: Vec<VersionDef>,
    pub notes: Vec<Note>,
    /// The dynamic section has DT_HASH (what musl's vDSO lookup needs).
    pub has_hash: bool,
    /// The dynamic section has DT_GNU_HASH.
    pub has_gnu_hash: bool,
    /// There is a symbol version table (`.gnu.version` / DT_VERSYM).
    pub versioned: bool,
    /// The PT_LOAD segments, which map the symbols' addresses to offsets.
    pub loads: Vec<Load>,
    /// What was wrong but read past: caps that bit, notes readelf rejects.
    pub issues: Vec<Issue>,
}

/// One PT_LOAD segment: `filesz` bytes at file `offset` are mapped at `vaddr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    pub vaddr: u64,
    pub offset: u64,
    pub filesz: u64,
}

impl Image {
    /// The image offset of `len` bytes at virtual address `vaddr`, through
    /// the PT_LOAD that holds them (what a dynamic linker does).
    pub fn offset_of(&self, vaddr: u64, len: u64) -> Option<u64> {
        offset_in(&self.loads, vaddr, len)
    }

    /// The non-base version definition with `index`.
    pub fn version_def(&self, index: u16) -> Option<&VersionDef> {
        self.versions.iter().find(|d| d.index == index && d.flags & VER_FLG_BASE == 0)
    }
}

/// The file offset of `len` bytes at `vaddr`, through the load segment that holds them all.
pub fn offset_in(loads: &[Load], vaddr: u64, len: u64) -> Option<u64> {
    loads.iter().find_map(|p| {
        let delta = vaddr.checked_sub(p.vaddr)?;
        (delta.checked_add(len)? <= p.filesz).then(|| p.offset.checked_add(delta)).flatten()
    })
}

/// The PT_LOAD segments of a program header table.
pub fn loads(segments: &[Segment]) -> Vec<Load> {
    segments
        .iter()
        .filter(|p| p.kind == SegmentKind::Load)
        .map(|p| Load { vaddr: p.vaddr, offset: p.offset, filesz: p.filesz })
        .collect()
}

/// Class, byte order and machine: what the first 20 bytes of an ELF file say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ident {
    pub is_64: bool,
    pub little_endian: bool,
    /// `e_machine`.
    pub machine: u16,
}

/// The identification of an ELF file from its first bytes; None when they
/// are not ELF (no magic, an unknown class or byte order, too short).
pub fn ident(head: &[u8]) -> Option<Ident> {
    if head.get(..4)? != b"\x7fELF" {
        return None;
    }
    let is_64 = match head.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let little_endian = match head.get(5)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let m = [*head.get(18)?, *head.get(19)?];
    let machine = if little_endian { u16::from_le_bytes(m) } else { u16::from_be_bytes(m) };
    Some(Ident { is_64, little_endian, machine })
}

/// The SysV ELF hash, as `vd_hash` of a version definition holds it.
pub fn elf_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xf000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

/// Something the parser found wrong and read past; the report words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issue {
    /// A table claims more entries than a vDSO can hold: only `kept` were read.
    Capped { table: &'static str, claimed: u64, kept: u64 },
    /// A note area whose alignment is neither 4 nor 8 (readelf treats 0..3
    /// as 4): readelf rejects the whole area ("Corrupt note: alignment N,
    /// expecting 4 or 8"); its notes are decoded here with 4-byte alignment.
    NoteAlignment { offset: u64, align: u64 },
    /// A note whose sizes run past its area: readelf stops there ("note
    /// with invalid namesz and/or descsz"), and so does this parser.
    NoteTruncated { offset: u64, namesz: u32, descsz: u32 },
    /// A note descriptor longer than [`caps::NOTE_DESC`]: only its start is kept.
    NoteCut { offset: u64, size: u64 },
    /// Names longer than [`caps::NAME`] bytes were cut.
    LongNames { count: usize },
    /// A version definition whose `vd_hash` is not the ELF hash of its
    /// name: glibc's and Go's vDSO lookups (and bench) bind no symbol of it.
    /// `others` more definitions are wrong the same way.
    VersionHash { name: String, hash: u32, expected: u32, others: usize },
}

/// One dynamic symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    /// st_value as `objdump -T` prints it (an offset from the image base in
    /// a vDSO): as in the file, except a 32-bit ARM function's Thumb bit is cleared.
    pub value: u64,
    /// A 32-bit ARM Thumb function: st_value had bit 0 set (cleared in `value`).
    pub thumb: bool,
    pub size: u64,
    /// STT_* (low 4 bits of st_info).
    pub kind: u8,
    /// STB_* (high 4 bits of st_info).
    pub bind: u8,
    /// STV_* (low 2 bits of st_other).
    pub visibility: u8,
    pub shndx: usize,
    /// `.text`, `*ABS*`, `*UND*`, ...; None when the index names no section.
    pub section: Option<String>,
    /// The version from `.gnu.version`; None when there is no table or index 0 (local).
    pub version: Option<SymVersion>,
}

impl Symbol {
    /// A named function (STT_FUNC): what a vDSO exports to be called.
    pub fn is_function(&self) -> bool {
        self.kind == STT_FUNC && !self.name.is_empty()
    }
}

/// A symbol's version binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymVersion {
    /// Index into the version definitions (bit 15 cleared).
    pub index: u16,
    /// The version name; `Base` for index 1; None when no definition has this index.
    pub name: Option<String>,
    /// Bit 15 set: a hidden (non-default) version, shown `(LINUX_2.6)` by objdump.
    pub hidden: bool,
}

impl SymVersion {
    /// The version as `objdump -T` prints it: `LINUX_2.6`, or `(LINUX_2.6)` when hidden.
    pub fn display(&self) -> String {
        let name = self.name.clone().unwrap_or_else(|| format!("<index {}>", self.index));
        if self.hidden {
            format!("({name})")
        } else {
            name
        }
    }
}

/// One entry of `.gnu.version_d`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionDef {
    pub index: u16,
    /// VER_FLG_* bits.
    pub flags: u16,
    pub name: String,
    /// `vd_hash` as the file has it.
    pub hash: u32,
    /// Names of the versions this one inherits from (further `Verdaux` entries).
    pub parents: Vec<String>,
}

impl VersionDef {
    /// Whether `vd_hash` is the ELF hash of the name (what glibc and Go check).
    pub fn hash_ok(&self) -> bool {
        self.hash == elf_hash(self.name.as_bytes())
    }

    /// Flags as readelf prints them: `BASE`, `WEAK`, `none`, unknown bits in hex.
    pub fn flags_text(&self) -> String {
        let mut parts = Vec::new();
        if self.flags & VER_FLG_BASE != 0 {
            parts.push("BASE".to_string());
        }
        if self.flags & VER_FLG_WEAK != 0 {
            parts.push("WEAK".to_string());
        }
        let other = self.flags & !(VER_FLG_BASE | VER_FLG_WEAK);
        if other != 0 {
            parts.push(format!("{other:#x}"));
        }
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(" | ")
        }
    }
}

/// One ELF note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The name field without its NUL (`Linux`, `GNU`).
    pub owner: String,
    pub n_type: u32,
    /// The descriptor bytes (at most [`caps::NOTE_DESC`]).
    pub desc: Vec<u8>,
    /// The descriptor size the note claims (n_descsz).
    pub size: u64,
    /// The type's name when owner and type are known.
    pub type_name: Option<&'static str>,
    /// The decoded descriptor when we know the format; None for unknown notes.
    pub description: Option<String>,
}

/// Parse an image. Total: any bytes give `Ok` or `Err(Error::Malformed)`.
pub fn parse(bytes: &[u8]) -> Result<Image> {
    Parser::new(bytes)?.run()
}

fn bad(detail: impl Into<String>) -> Error {
    Error::malformed(WHAT, detail)
}

/// `off..off+len` if it lies inside a buffer of `total` bytes.
fn span(total: usize, off: u64, len: u64) -> Option<Range<usize>> {
    let end = off.checked_add(len)?;
    if end > total as u64 {
        return None;
    }
    Some(off as usize..end as usize)
}

/// Whether `off..off+len` ends at or before `end`.
fn fits(off: u64, len: u64, end: u64) -> bool {
    off.checked_add(len).is_some_and(|e| e <= end)
}

/// The NUL-terminated string at `idx` of a string table, lossily decoded,
/// cut at [`caps::NAME`] bytes (`long` counts the cuts). None when the index
/// is outside the table or the string has no NUL before the table ends.
fn cstr(table: &[u8], idx: u64, long: &Cell<usize>) -> Option<String> {
    let rest = table.get(usize::try_from(idx).ok()?..)?;
    let window = &rest[..rest.len().min(caps::NAME + 1)];
    match window.iter().position(|&b| b == 0) {
        Some(nul) => Some(String::from_utf8_lossy(&window[..nul]).into_owned()),
        None if rest.len() > caps::NAME && rest[caps::NAME..].contains(&0) => {
            long.set(long.get() + 1);
            Some(String::from_utf8_lossy(&window[..caps::NAME]).into_owned())
        }
        None => None,
    }
}

/// The section headers, each checked against the image; empty when there are none.
fn section_headers(bytes: &[u8], header: &Header, issues: &mut Vec<Issue>) -> Result<Vec<Section>> {
    let total = bytes.len();
    let id = header.ident;
    let mut shdrs = Vec::new();
    if header.shoff != 0 {
        let shent = id.size_of(Record::Section) as u64;
        if u64::from(header.shentsize) != shent {
            return Err(bad(format!("e_shentsize is {}, not {shent}", header.shentsize)));
        }
        let first = span(total, header.shoff, shent).ok_or_else(|| {
            bad(format!("the section header table at offset {:#x} lies outside the {total}-byte image", header.shoff))
        })?;
        let mut shnum = u64::from(header.shnum);
        if shnum == 0 {
            // Extended numbering: the count is in section 0's sh_size.
            let zero = records::sections(&bytes[first], 1, id).map_err(|e| bad(format!("section header 0: {e}")))?;
            shnum = zero.first().map_or(0, |s| s.size);
        }
        let table = shnum.checked_mul(shent).and_then(|len| span(total, header.shoff, len));
        let Some(table) = table else {
            return Err(bad(format!(
                "the section header table ({shnum} entries at offset {:#x}) runs past the end of the {total}-byte image",
                header.shoff
            )));
        };
        if shnum > caps::SECTIONS {
            issues.push(Issue::Capped { table: "section headers", claimed: shnum, kept: caps::SECTIONS });
        }
        shdrs = records::sections(&bytes[table], shnum.min(caps::SECTIONS) as usize, id)
            .map_err(|e| bad(format!("section headers: {e}")))?;
        for (i, sh) in shdrs.iter().enumerate() {
            if sh.has_bytes() && sh.size > 0 && span(total, sh.offset, sh.size).is_none() {
                return Err(bad(format!(
                    "section {i} (offset {:#x}, {} bytes) runs past the end of the {total}-byte image",
                    sh.offset, sh.size
                )));
            }
        }
    }
    Ok(shdrs)
}

/// The span of the section name table (`e_shstrndx`), if there is one.
fn section_names(total: usize, header: &Header, shdrs: &[Section]) -> Result<Option<Range<usize>>> {
    let mut shstrtab = None;
    if !shdrs.is_empty() {
        let mut idx = usize::from(header.shstrndx);
        if idx == SHN_XINDEX {
            idx = shdrs.first().map_or(0, |s| s.link as usize);
        }
        if idx != SHN_UNDEF {
            let sh = shdrs
                .get(idx)
                .ok_or_else(|| bad(format!("e_shstrndx {idx} names no section (there are {})", shdrs.len())))?;
            if sh.kind != SHT_STRTAB {
                return Err(bad(format!("e_shstrndx {idx} is not a string table (sh_type {})", sh.kind)));
            }
            shstrtab = span(total, sh.offset, sh.size);
        }
    }
    Ok(shstrtab)
}

/// A NUL-terminated string at the start of `bytes` (all of them without a
/// NUL), lossily decoded.
pub fn cstr_at(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes.split(|&b| b == 0).next().unwrap_or(&[])).into_owned()
}

pub use records::{dynamic_entries, relocations_in, symbols_in, word};

#[cfg(test)]
mod tests;
