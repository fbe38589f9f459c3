//! The vDSO image as an ELF shared object: header, dynamic symbols with their
//! versions (what `objdump -T` lists), version definitions (`readelf -V`),
//! notes (`readelf -n`) and which hash tables the dynamic section names.
//!
//! The bytes are untrusted: a file anyone handed us, or a mapping another
//! process may have shaped. goblin parses the fixed-size records (header,
//! program and section headers, dynamic entries, symbols), but only after
//! this module has checked every table's offset and count against the
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
//! References: the System V gABI, `elf(5)`, and the GNU symbol versioning
//! spec (`.gnu.version`, `.gnu.version_d`).

use crate::error::{Error, Result};

mod names;
use goblin::container::{Container, Ctx};
use goblin::elf::{Header, ProgramHeader, SectionHeader, Sym};
pub use names::*;
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
const STT_FUNC: u8 = 2;
const STT_SECTION: u8 = 3;
const STT_GNU_IFUNC: u8 = 10;
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_NOTE: u32 = 4;
const SHT_STRTAB: u32 = 3;
const SHT_NOTE: u32 = 7;
const SHT_NOBITS: u32 = 8;
const SHT_DYNSYM: u32 = 11;
const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;
const SHN_UNDEF: usize = 0;
const SHN_LORESERVE: usize = 0xff00;
const SHN_ABS: usize = 0xfff1;
const SHN_COMMON: usize = 0xfff2;
const SHN_XINDEX: usize = 0xffff;
use goblin::elf::dynamic::{
    DT_GNU_HASH, DT_HASH, DT_NULL, DT_SONAME, DT_STRSZ, DT_STRTAB, DT_SYMTAB, DT_VERDEF, DT_VERDEFNUM, DT_VERNEED,
    DT_VERNEEDNUM, DT_VERSYM,
};
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
pub fn loads(phdrs: &[ProgramHeader]) -> Vec<Load> {
    phdrs
        .iter()
        .filter(|p| p.p_type == PT_LOAD)
        .map(|p| Load { vaddr: p.p_vaddr, offset: p.p_offset, filesz: p.p_filesz })
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

impl Ident {
    /// goblin's parsing context for this class and byte order.
    pub fn ctx(&self) -> Ctx {
        let container = if self.is_64 { Container::Big } else { Container::Little };
        let endian =
            if self.little_endian { goblin::container::Endian::Little } else { goblin::container::Endian::Big };
        Ctx::new(container, endian)
    }
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
fn section_headers(
    bytes: &[u8],
    header: &Header,
    ctx: Ctx,
    is_64: bool,
    issues: &mut Vec<Issue>,
) -> Result<Vec<SectionHeader>> {
    let total = bytes.len();
    let mut shdrs = Vec::new();
    if header.e_shoff != 0 {
        let shent: u64 = if is_64 { 64 } else { 40 };
        if u64::from(header.e_shentsize) != shent {
            return Err(bad(format!("e_shentsize is {}, not {shent}", header.e_shentsize)));
        }
        let first = span(total, header.e_shoff, shent).ok_or_else(|| {
            bad(format!("the section header table at offset {:#x} lies outside the {total}-byte image", header.e_shoff))
        })?;
        let mut shnum = u64::from(header.e_shnum);
        if shnum == 0 {
            // Extended numbering: the count is in section 0's sh_size.
            let zero =
                SectionHeader::parse(bytes, first.start, 1, ctx).map_err(|e| bad(format!("section header 0: {e}")))?;
            shnum = zero.first().map_or(0, |s| s.sh_size);
        }
        let table = shnum.checked_mul(shent).and_then(|len| span(total, header.e_shoff, len));
        if table.is_none() {
            return Err(bad(format!(
                "the section header table ({shnum} entries at offset {:#x}) runs past the end of the {total}-byte image",
                header.e_shoff
            )));
        }
        if shnum > caps::SECTIONS {
            issues.push(Issue::Capped { table: "section headers", claimed: shnum, kept: caps::SECTIONS });
        }
        shdrs = SectionHeader::parse(bytes, header.e_shoff as usize, shnum.min(caps::SECTIONS) as usize, ctx)
            .map_err(|e| bad(format!("section headers: {e}")))?;
        for (i, sh) in shdrs.iter().enumerate() {
            if sh.sh_type != SHT_NOBITS && sh.sh_size > 0 && span(total, sh.sh_offset, sh.sh_size).is_none() {
                return Err(bad(format!(
                    "section {i} (offset {:#x}, {} bytes) runs past the end of the {total}-byte image",
                    sh.sh_offset, sh.sh_size
                )));
            }
        }
    }
    Ok(shdrs)
}

/// The span of the section name table (`e_shstrndx`), if there is one.
fn section_names(total: usize, header: &Header, shdrs: &[SectionHeader]) -> Result<Option<Range<usize>>> {
    let mut shstrtab = None;
    if !shdrs.is_empty() {
        let mut idx = usize::from(header.e_shstrndx);
        if idx == SHN_XINDEX {
            idx = shdrs.first().map_or(0, |s| s.sh_link as usize);
        }
        if idx != SHN_UNDEF {
            let sh = shdrs
                .get(idx)
                .ok_or_else(|| bad(format!("e_shstrndx {idx} names no section (there are {})", shdrs.len())))?;
            if sh.sh_type != SHT_STRTAB {
                return Err(bad(format!("e_shstrndx {idx} is not a string table (sh_type {})", sh.sh_type)));
            }
            shstrtab = span(total, sh.sh_offset, sh.sh_size);
        }
    }
    Ok(shstrtab)
}

struct Parser<'a> {
    bytes: &'a [u8],
    le: bool,
    is_64: bool,
    ctx: Ctx,
    header: Header,
    phdrs: Vec<ProgramHeader>,
    shdrs: Vec<SectionHeader>,
    shstrtab: Option<Range<usize>>,
    issues: Vec<Issue>,
    /// Names cut at [`caps::NAME`].
    long_names: Cell<usize>,
}

impl<'a> Parser<'a> {
    /// Check the identification and the header tables, then let goblin read them.
    fn new(bytes: &'a [u8]) -> Result<Parser<'a>> {
        if bytes.is_empty() {
            return Err(bad("the image is empty (0 bytes)"));
        }
        if bytes.len() < 16 || &bytes[..4] != b"\x7fELF" {
            return Err(bad(format!(
                "not an ELF file: the first bytes are {:02x?}, not 7f 45 4c 46 (\\x7fELF)",
                &bytes[..bytes.len().min(4)]
            )));
        }
        let is_64 = match bytes[4] {
            1 => false,
            2 => true,
            c => return Err(bad(format!("unknown ELF class {c} (EI_CLASS must be 1 or 2)"))),
        };
        let le = match bytes[5] {
            1 => true,
            2 => false,
            d => return Err(bad(format!("unknown ELF data encoding {d} (EI_DATA must be 1 or 2)"))),
        };
        let ehsize = if is_64 { 64 } else { 52 };
        if bytes.len() < ehsize {
            return Err(bad(format!("truncated: {} bytes, an ELF header needs {ehsize}", bytes.len())));
        }
        let header = goblin::elf::Elf::parse_header(bytes).map_err(|e| bad(format!("ELF header: {e}")))?;
        let ctx = Ident { is_64, little_endian: le, machine: header.e_machine }.ctx();
        let total = bytes.len();

        let phent: u64 = if is_64 { 56 } else { 32 };
        let phnum = u64::from(header.e_phnum);
        if phnum > 0 {
            if u64::from(header.e_phentsize) != phent {
                return Err(bad(format!("e_phentsize is {}, not {phent}", header.e_phentsize)));
            }
            if span(total, header.e_phoff, phnum * phent).is_none() {
                return Err(bad(format!(
                    "the program header table ({phnum} entries at offset {:#x}) runs past the end of the {total}-byte image",
                    header.e_phoff
                )));
            }
        }
        let mut issues = Vec::new();
        if phnum > caps::SEGMENTS {
            issues.push(Issue::Capped { table: "program headers", claimed: phnum, kept: caps::SEGMENTS });
        }
        let phdrs = ProgramHeader::parse(bytes, header.e_phoff as usize, phnum.min(caps::SEGMENTS) as usize, ctx)
            .map_err(|e| bad(format!("program headers: {e}")))?;
        for (i, ph) in phdrs.iter().enumerate() {
            if ph.p_filesz > 0 && span(total, ph.p_offset, ph.p_filesz).is_none() {
                return Err(bad(format!(
                    "program header {i} (offset {:#x}, {} bytes) runs past the end of the {total}-byte image",
                    ph.p_offset, ph.p_filesz
                )));
            }
        }

        let shdrs = section_headers(bytes, &header, ctx, is_64, &mut issues)?;
        let shstrtab = section_names(total, &header, &shdrs)?;
        Ok(Parser { bytes, le, is_64, ctx, header, phdrs, shdrs, shstrtab, issues, long_names: Cell::new(0) })
    }

    fn u16_at(&self, off: u64) -> Option<u16> {
        let r = span(self.bytes.len(), off, 2)?;
        let b: [u8; 2] = self.bytes.get(r)?.try_into().ok()?;
        Some(if self.le { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) })
    }

    fn u32_at(&self, off: u64) -> Option<u32> {
        let r = span(self.bytes.len(), off, 4)?;
        let b: [u8; 4] = self.bytes.get(r)?.try_into().ok()?;
        Some(if self.le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    }

    fn u64_at(&self, off: u64) -> Option<u64> {
        let r = span(self.bytes.len(), off, 8)?;
        let b: [u8; 8] = self.bytes.get(r)?.try_into().ok()?;
        Some(if self.le { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) })
    }

    /// A word of the class: 8 bytes in ELF64, 4 in ELF32.
    fn word_at(&self, off: u64) -> Option<u64> {
        if self.is_64 {
            self.u64_at(off)
        } else {
            self.u32_at(off).map(u64::from)
        }
    }

    /// [`cstr`] counting cut names.
    fn name(&self, table: &[u8], idx: u64) -> Option<String> {
        cstr(table, idx, &self.long_names)
    }

    /// The dynamic entries up to DT_NULL, at most [`caps::DYNAMIC`] of them.
    fn dynamic(&mut self) -> Result<Vec<(u64, u64)>> {
        let ph = self
            .phdrs
            .iter()
            .find(|p| p.p_type == PT_DYNAMIC)
            .ok_or_else(|| bad("no PT_DYNAMIC segment: this is not a shared object, so it cannot be a vDSO"))?;
        let ent: u64 = if self.is_64 { 16 } else { 8 };
        let count = ph.p_filesz / ent;
        let mut tags = Vec::new();
        for i in 0..count.min(caps::DYNAMIC) {
            let at = ph.p_offset.saturating_add(i * ent);
            let (Some(tag), Some(val)) = (self.word_at(at), self.word_at(at.saturating_add(ent / 2))) else {
                return Err(bad(format!("dynamic entry {i} at offset {at:#x} runs past the end of the image")));
            };
            if tag == DT_NULL {
                return Ok(tags);
            }
            tags.push((tag, val));
        }
        if count > caps::DYNAMIC {
            self.issues.push(Issue::Capped { table: "dynamic entries", claimed: count, kept: caps::DYNAMIC });
        }
        Ok(tags)
    }

    /// A section header's name from .shstrtab.
    fn section_name(&self, idx: usize) -> Option<String> {
        let sh = self.shdrs.get(idx)?;
        let table = self.bytes.get(self.shstrtab.clone()?)?;
        self.name(table, sh.sh_name as u64)
    }

    /// The bytes of section `idx`, bounds already checked in `new`.
    fn section_bytes(&self, sh: &SectionHeader) -> Option<&'a [u8]> {
        self.bytes.get(span(self.bytes.len(), sh.sh_offset, sh.sh_size)?)
    }

    /// A virtual address of the image to a file offset, through PT_LOAD.
    fn vaddr_to_offset(&self, addr: u64) -> Option<u64> {
        offset_in(&loads(&self.phdrs), addr, 1)
    }

    fn run(mut self) -> Result<Image> {
        let total = self.bytes.len();
        let tags = self.dynamic()?;
        let tag = |t: u64| tags.iter().find(|(k, _)| *k == t).map(|(_, v)| *v);

        // The dynamic string table: DT_STRTAB/DT_STRSZ, as the dynamic linker sees it.
        let dynstr: &[u8] = match (tag(DT_STRTAB), tag(DT_STRSZ)) {
            (Some(addr), Some(size)) => {
                let off = self
                    .vaddr_to_offset(addr)
                    .ok_or_else(|| bad(format!("DT_STRTAB {addr:#x} is not inside any PT_LOAD segment")))?;
                let r = span(total, off, size).ok_or_else(|| {
                    bad(format!(
                        "DT_STRTAB at offset {off:#x} with DT_STRSZ {size} runs past the end of the {total}-byte image"
                    ))
                })?;
                &self.bytes[r]
            }
            _ => {
                return Err(bad(
                    "the dynamic section has no DT_STRTAB/DT_STRSZ: there is no string table for symbol names",
                ))
            }
        };
        let soname = tag(DT_SONAME).map(|i| self.name(dynstr, i).unwrap_or_else(|| "<corrupt>".into()));

        let symbols_raw = self.dynsyms(&tag, dynstr)?;
        let (versions, verdef_names) = self.verdefs(&tag, dynstr)?;
        // Versions a non-vDSO needs (`GLIBC_2.3` of /bin/ls), so its undefined
        // symbols read as objdump prints them, in brackets; best effort, a
        // vDSO needs none.
        let needed_names = self.verneed_names(&tag, dynstr);
        let versym = self.versym_offset(&tag)?;

        let mut symbols = Vec::with_capacity(symbols_raw.len().saturating_sub(1));
        for (i, (sym, strtab)) in symbols_raw.iter().enumerate().skip(1) {
            let kind = sym.st_info & 0xf;
            let mut name = self.name(strtab, sym.st_name as u64).unwrap_or_else(|| "<corrupt>".into());
            let section = match sym.st_shndx {
                SHN_UNDEF => Some("*UND*".to_string()),
                SHN_ABS => Some("*ABS*".to_string()),
                SHN_COMMON => Some("*COM*".to_string()),
                n if n >= SHN_LORESERVE => None,
                n => self.section_name(n),
            };
            let version = versym.and_then(|base| self.u16_at(base.checked_add(2 * i as u64)?)).and_then(|raw| {
                let index = raw & !VERSYM_HIDDEN;
                let mut hidden = raw & VERSYM_HIDDEN != 0;
                let name = match index {
                    0 => return None,
                    1 => Some("Base".to_string()),
                    n => verdef_names.iter().find(|(k, _)| *k == n).map(|(_, s)| s.clone()).or_else(|| {
                        let needed = needed_names.iter().find(|(k, _)| *k == n).map(|(_, s)| s.clone());
                        hidden |= needed.is_some();
                        needed
                    }),
                };
                Some(SymVersion { index, name, hidden })
            });
            // objdump names a section symbol by its section.
            if kind == STT_SECTION && name.is_empty() && sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE {
                if let Some(sec) = &section {
                    name = sec.clone();
                }
            }
            // objdump (bfd's elf32-arm) clears the Thumb bit of a function.
            let thumb = self.header.e_machine == EM_ARM
                && !self.is_64
                && matches!(kind, STT_FUNC | STT_GNU_IFUNC)
                && sym.st_value & 1 == 1;
            symbols.push(Symbol {
                name,
                value: if thumb { sym.st_value & !1 } else { sym.st_value },
                thumb,
                size: sym.st_size,
                kind,
                bind: sym.st_info >> 4,
                visibility: sym.st_other & 0x3,
                shndx: sym.st_shndx,
                section,
                version,
            });
        }

        let notes = self.notes();
        let mut wrong = versions.iter().filter(|v| !v.hash_ok());
        if let Some(v) = wrong.next() {
            let expected = elf_hash(v.name.as_bytes());
            let others = wrong.count();
            self.issues.push(Issue::VersionHash { name: v.name.clone(), hash: v.hash, expected, others });
        }
        if self.long_names.get() > 0 {
            self.issues.push(Issue::LongNames { count: self.long_names.get() });
        }
        Ok(Image {
            is_64: self.is_64,
            little_endian: self.le,
            machine: self.header.e_machine,
            elf_type: self.header.e_type,
            soname,
            size: total as u64,
            symbols,
            versions,
            notes,
            has_hash: tag(DT_HASH).is_some(),
            has_gnu_hash: tag(DT_GNU_HASH).is_some(),
            versioned: versym.is_some(),
            loads: loads(&self.phdrs),
            issues: self.issues,
        })
    }

    /// The dynamic symbols with the string table each names. `.dynsym` (what
    /// objdump reads) when there are section headers, else DT_SYMTAB with the
    /// count from DT_HASH's nchain or the DT_GNU_HASH chains.
    fn dynsyms(&mut self, tag: &dyn Fn(u64) -> Option<u64>, dynstr: &'a [u8]) -> Result<Vec<(Sym, &'a [u8])>> {
        let total = self.bytes.len();
        let entsize: u64 = if self.is_64 { 24 } else { 16 };
        let (off, count, strtab) = if let Some(sh) = self.shdrs.iter().find(|s| s.sh_type == SHT_DYNSYM) {
            if sh.sh_entsize != entsize {
                return Err(bad(format!("the .dynsym entry size is {}, not {entsize}", sh.sh_entsize)));
            }
            let link = self.shdrs.get(sh.sh_link as usize).filter(|l| l.sh_type == SHT_STRTAB).ok_or_else(|| {
                bad(format!(".dynsym's sh_link {} is not a string table: symbol names cannot be read", sh.sh_link))
            })?;
            let strtab = self.section_bytes(link).unwrap_or(&[]);
            (sh.sh_offset, sh.sh_size / entsize, strtab)
        } else {
            let addr =
                tag(DT_SYMTAB).ok_or_else(|| bad("no .dynsym section and no DT_SYMTAB: there are no symbols"))?;
            let off = self
                .vaddr_to_offset(addr)
                .ok_or_else(|| bad(format!("DT_SYMTAB {addr:#x} is not inside any PT_LOAD segment")))?;
            let count = if let Some(h) = tag(DT_HASH) {
                let h = self.vaddr_to_offset(h).ok_or_else(|| bad("DT_HASH is not inside any PT_LOAD segment"))?;
                u64::from(self.u32_at(h + 4).ok_or_else(|| bad("DT_HASH runs past the end of the image"))?)
            } else if let Some(g) = tag(DT_GNU_HASH) {
                let g = self.vaddr_to_offset(g).ok_or_else(|| bad("DT_GNU_HASH is not inside any PT_LOAD segment"))?;
                self.gnu_hash_count(g).ok_or_else(|| bad("DT_GNU_HASH runs past the end of the image"))?
            } else {
                return Err(bad("no .dynsym section and no hash table: the number of symbols is unknown"));
            };
            (off, count, dynstr)
        };
        let len = count.saturating_mul(entsize);
        if count > caps::SYMBOLS {
            self.issues.push(Issue::Capped { table: "dynamic symbols", claimed: count, kept: caps::SYMBOLS });
        }
        let count = count.min(caps::SYMBOLS);
        if span(total, off, len).is_none() {
            return Err(bad(format!(
                "the dynamic symbol table ({count} entries at offset {off:#x}) runs past the end of the {total}-byte image"
            )));
        }
        let syms = Sym::parse(self.bytes, off as usize, count as usize, self.ctx)
            .map_err(|e| bad(format!("dynamic symbols: {e}")))?;
        Ok(syms.into_iter().map(|s| (s, strtab)).collect())
    }

    /// Number of symbols a GNU hash table covers: symoffset plus the longest
    /// chain walk, every read bounds-checked.
    fn gnu_hash_count(&self, off: u64) -> Option<u64> {
        let nbuckets = u64::from(self.u32_at(off)?);
        let symoffset = u64::from(self.u32_at(off + 4)?);
        let bloom = u64::from(self.u32_at(off + 8)?);
        let word = if self.is_64 { 8 } else { 4 };
        let buckets = off.checked_add(16)?.checked_add(bloom.checked_mul(word)?)?;
        span(self.bytes.len(), buckets, nbuckets.checked_mul(4)?)?;
        let mut max = 0u64;
        for b in 0..nbuckets {
            max = max.max(u64::from(self.u32_at(buckets + 4 * b)?));
        }
        if max < symoffset {
            return Some(symoffset);
        }
        let chains = buckets + 4 * nbuckets;
        let mut idx = max;
        loop {
            let hash = self.u32_at(chains.checked_add(idx.checked_sub(symoffset)?.checked_mul(4)?)?)?;
            if hash & 1 != 0 {
                return Some(idx + 1);
            }
            idx += 1;
        }
    }

    /// File offset of the `.gnu.version` table, if there is one.
    fn versym_offset(&self, tag: &dyn Fn(u64) -> Option<u64>) -> Result<Option<u64>> {
        if let Some(sh) = self.shdrs.iter().find(|s| s.sh_type == SHT_GNU_VERSYM) {
            return Ok(Some(sh.sh_offset));
        }
        match tag(DT_VERSYM) {
            None => Ok(None),
            Some(addr) => self
                .vaddr_to_offset(addr)
                .map(Some)
                .ok_or_else(|| bad(format!("DT_VERSYM {addr:#x} is not inside any PT_LOAD segment"))),
        }
    }

    /// A version section of type `sh_type`: its start, end, entry count
    /// (sh_info) and the string table it links (else `dynstr`).
    fn version_section(&self, sh_type: u32, dynstr: &'a [u8]) -> Option<(u64, u64, u64, &'a [u8])> {
        let sh = self.shdrs.iter().find(|s| s.sh_type == sh_type)?;
        let strtab = self
            .shdrs
            .get(sh.sh_link as usize)
            .filter(|l| l.sh_type == SHT_STRTAB)
            .and_then(|l| self.section_bytes(l))
            .unwrap_or(dynstr);
        Some((sh.sh_offset, sh.sh_offset.saturating_add(sh.sh_size), u64::from(sh.sh_info), strtab))
    }

    /// (index, name) of every `.gnu.version_r` auxiliary entry, read as far
    /// as it goes (at most [`caps::VERSIONS`] of them, no loop followed twice).
    fn verneed_names(&self, tag: &dyn Fn(u64) -> Option<u64>, dynstr: &'a [u8]) -> Vec<(u16, String)> {
        let total = self.bytes.len() as u64;
        let (start, end, count, strtab) = if let Some(found) = self.version_section(SHT_GNU_VERNEED, dynstr) {
            found
        } else if let Some(off) = tag(DT_VERNEED).and_then(|a| self.vaddr_to_offset(a)) {
            (off, total, tag(DT_VERNEEDNUM).unwrap_or(0), dynstr)
        } else {
            return Vec::new();
        };
        let mut names = Vec::new();
        let mut seen = HashSet::new();
        let mut off = start;
        for _ in 0..count.min(caps::VERSIONS) {
            if !seen.insert(off) || off < start || !fits(off, 16, end) {
                break;
            }
            let (Some(cnt), Some(aux), Some(next)) =
                (self.u16_at(off + 2), self.u32_at(off + 8), self.u32_at(off + 12))
            else {
                break;
            };
            let mut a = off.wrapping_add(u64::from(aux)) & 0xffff_ffff;
            for _ in 0..cnt {
                if names.len() as u64 >= caps::VERSIONS || !seen.insert(a) || a < start || !fits(a, 16, end) {
                    break;
                }
                let (Some(other), Some(name), Some(anext)) =
                    (self.u16_at(a + 6), self.u32_at(a + 8), self.u32_at(a + 12))
                else {
                    break;
                };
                names.push((
                    other & !VERSYM_HIDDEN,
                    self.name(strtab, u64::from(name)).unwrap_or_else(|| "<corrupt>".into()),
                ));
                if anext == 0 {
                    break;
                }
                a = (a + u64::from(anext)) & 0xffff_ffff;
            }
            if next == 0 {
                break;
            }
            off = (off + u64::from(next)) & 0xffff_ffff;
        }
        names
    }

    /// Walk `.gnu.version_d`. Returns the definitions and (index, name) pairs.
    /// The chain is followed as a 32-bit consumer would (offsets wrap at
    /// 2^32), so a `vd_next` that points back is a loop, reported as one.
    #[allow(clippy::type_complexity)]
    fn verdefs(
        &mut self,
        tag: &dyn Fn(u64) -> Option<u64>,
        dynstr: &'a [u8],
    ) -> Result<(Vec<VersionDef>, Vec<(u16, String)>)> {
        let total = self.bytes.len() as u64;
        let (start, end, count, strtab) = if let Some(found) = self.version_section(SHT_GNU_VERDEF, dynstr) {
            found
        } else if let Some(addr) = tag(DT_VERDEF) {
            let off = self
                .vaddr_to_offset(addr)
                .ok_or_else(|| bad(format!("DT_VERDEF {addr:#x} is not inside any PT_LOAD segment")))?;
            (off, total, tag(DT_VERDEFNUM).unwrap_or(0), dynstr)
        } else {
            return Ok((Vec::new(), Vec::new()));
        };
        let mut defs = Vec::new();
        let mut names = Vec::new();
        let mut seen = HashSet::new();
        let mut off = start;
        if count > caps::VERSIONS {
            self.issues.push(Issue::Capped { table: "version definitions", claimed: count, kept: caps::VERSIONS });
        }
        for n in 0..count.min(caps::VERSIONS) {
            if !seen.insert(off) {
                return Err(bad(format!(
                    "the version definition chain loops: entry {n} points back to offset {off:#x} — a 32-bit dynamic linker would never finish walking it"
                )));
            }
            if off < start || !fits(off, VERDEF_SIZE, end) {
                return Err(bad(format!(
                    "version definition {n} at offset {off:#x} runs past the end of its section (DT_VERDEFNUM/sh_info says {count})"
                )));
            }
            let (flags, index, cnt, hash, aux, next) = (
                self.u16_at(off + 2),
                self.u16_at(off + 4),
                self.u16_at(off + 6),
                self.u32_at(off + 8),
                self.u32_at(off + 12),
                self.u32_at(off + 16),
            );
            let (Some(flags), Some(index), Some(cnt), Some(hash), Some(aux), Some(next)) =
                (flags, index, cnt, hash, aux, next)
            else {
                return Err(bad(format!("version definition {n} at offset {off:#x} is truncated")));
            };
            let mut aux_names = Vec::new();
            let mut aux_off = off.wrapping_add(u64::from(aux)) & 0xffff_ffff;
            let mut aux_seen = HashSet::new();
            for _ in 0..u64::from(cnt).min(caps::PARENTS + 1) {
                if !aux_seen.insert(aux_off) {
                    return Err(bad(format!("the auxiliary chain of version definition {n} loops at {aux_off:#x}")));
                }
                if aux_off < start || !fits(aux_off, VERDAUX_SIZE, end) {
                    return Err(bad(format!(
                        "version definition {n}'s auxiliary entry at {aux_off:#x} lies outside its section"
                    )));
                }
                let (Some(name), Some(aux_next)) = (self.u32_at(aux_off), self.u32_at(aux_off + 4)) else {
                    return Err(bad(format!("version auxiliary entry at {aux_off:#x} is truncated")));
                };
                aux_names.push(cstr(strtab, u64::from(name), &self.long_names).unwrap_or_else(|| "<corrupt>".into()));
                if aux_next == 0 {
                    break;
                }
                aux_off = (aux_off + u64::from(aux_next)) & 0xffff_ffff;
            }
            let mut aux_names = aux_names.into_iter();
            let name = aux_names.next().unwrap_or_else(|| "<corrupt>".into());
            names.push((index, name.clone()));
            defs.push(VersionDef { index, flags, name, hash, parents: aux_names.collect() });
            if next == 0 {
                break;
            }
            off = (off + u64::from(next)) & 0xffff_ffff;
        }
        Ok((defs, names))
    }

    /// Notes from SHT_NOTE sections (what readelf -n shows), else PT_NOTE
    /// segments. Decoded as far as they go: a bad note ends its area with
    /// an [`Issue`], the notes before it are kept.
    fn notes(&mut self) -> Vec<Note> {
        let mut regions: Vec<(u64, u64, u64)> = self
            .shdrs
            .iter()
            .filter(|s| s.sh_type == SHT_NOTE)
            .map(|s| (s.sh_offset, s.sh_size, s.sh_addralign))
            .collect();
        if regions.is_empty() {
            regions = self
                .phdrs
                .iter()
                .filter(|p| p.p_type == PT_NOTE)
                .map(|p| (p.p_offset, p.p_filesz, p.p_align))
                .collect();
        }
        let mut notes = Vec::new();
        for (off, size, align) in regions {
            // Both tables were bounds-checked in `new`.
            let Some(region) = span(self.bytes.len(), off, size).and_then(|r| self.bytes.get(r)) else {
                continue;
            };
            // readelf: below 4 reads as 4; 4 and 8 are the only others it takes.
            let align = match align {
                0..=4 => 4,
                8 => 8,
                other => {
                    self.issues.push(Issue::NoteAlignment { offset: off, align: other });
                    4
                }
            };
            self.parse_notes(region, off, align, &mut notes);
        }
        notes
    }

    fn parse_notes(&mut self, region: &[u8], base: u64, align: u64, notes: &mut Vec<Note>) {
        let len = region.len() as u64;
        let le = self.le;
        let read = |at: u64| -> Option<u32> {
            let b: [u8; 4] =
                region.get(usize::try_from(at).ok()?..usize::try_from(at.checked_add(4)?).ok()?)?.try_into().ok()?;
            Some(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
        };
        let up = |v: u64| v.checked_add(align - 1).map(|x| x & !(align - 1));
        let mut at = 0u64;
        while at < len {
            if notes.len() >= caps::NOTES {
                // Count the rest (headers only, nothing kept) to say how many there are.
                let mut more = 0u64;
                while at < len {
                    let (Some(namesz), Some(descsz)) = (read(at), read(at + 4)) else { break };
                    let next = up(at + 12 + u64::from(namesz))
                        .and_then(|d| d.checked_add(u64::from(descsz)))
                        .and_then(up)
                        .filter(|&n| n <= len);
                    let Some(next) = next else { break };
                    more += 1;
                    at = next;
                }
                let kept = caps::NOTES as u64;
                self.issues.push(Issue::Capped { table: "notes", claimed: kept + more, kept });
                return;
            }
            let (Some(namesz), Some(descsz), Some(n_type)) = (read(at), read(at + 4), read(at + 8)) else {
                self.issues.push(Issue::NoteTruncated { offset: base + at, namesz: 0, descsz: 0 });
                return;
            };
            let name_at = at + 12;
            let desc_at = up(name_at + u64::from(namesz));
            let next = desc_at.and_then(|d| d.checked_add(u64::from(descsz))).and_then(up);
            // readelf's test: the padded note must fit in what is left of the area.
            let (Some(desc_at), Some(next)) = (desc_at, next) else {
                self.issues.push(Issue::NoteTruncated { offset: base + at, namesz, descsz });
                return;
            };
            if next > len {
                self.issues.push(Issue::NoteTruncated { offset: base + at, namesz, descsz });
                return;
            }
            let name = region.get(name_at as usize..(name_at + u64::from(namesz)) as usize).unwrap_or(&[]);
            let desc_len = u64::from(descsz).min(caps::NOTE_DESC as u64);
            if desc_len < u64::from(descsz) {
                self.issues.push(Issue::NoteCut { offset: base + at, size: u64::from(descsz) });
            }
            let desc = region.get(desc_at as usize..(desc_at + desc_len) as usize).unwrap_or(&[]).to_vec();
            let owner = name.split(|&b| b == 0).next().unwrap_or(&[]);
            let owner = String::from_utf8_lossy(&owner[..owner.len().min(caps::NAME)]).into_owned();
            let (type_name, description) = if desc_len == u64::from(descsz) {
                names::decode_note(&owner, n_type, &desc, le, self.header.e_machine, self.is_64)
            } else {
                (None, None)
            };
            notes.push(Note { owner, n_type, desc, size: u64::from(descsz), type_name, description });
            at = next;
        }
    }
}

/// The symbols in a slice of a symbol table (`.symtab`, `.dynsym`), as
/// goblin reads them: whole entries only, so any bytes are safe.
pub fn symbols_in(bytes: &[u8], ctx: Ctx) -> Vec<Sym> {
    let size = Sym::size(ctx.container);
    Sym::parse(bytes, 0, bytes.len() / size, ctx).unwrap_or_default()
}

/// `(r_offset, symbol index)` of each entry in a slice of a relocation
/// table (SHT_RELA when `rela`, else SHT_REL); whole entries only.
pub fn relocations_in(bytes: &[u8], ident: Ident, rela: bool) -> Vec<(u64, u32)> {
    let w = if ident.is_64 { 8 } else { 4 };
    let entry = if rela { 3 * w } else { 2 * w };
    let word = |b: &[u8]| -> u64 {
        let mut v = [0u8; 8];
        if ident.little_endian {
            v[..w].copy_from_slice(&b[..w]);
            u64::from_le_bytes(v)
        } else {
            v[8 - w..].copy_from_slice(&b[..w]);
            u64::from_be_bytes(v)
        }
    };
    bytes
        .chunks_exact(entry)
        .map(|e| {
            let (offset, info) = (word(e), word(&e[w..]));
            (offset, if ident.is_64 { (info >> 32) as u32 } else { (info >> 8) as u32 })
        })
        .collect()
}

/// STT_FUNC or STT_GNU_IFUNC: a symbol that names code.
pub fn is_function(sym: &Sym) -> bool {
    matches!(sym.st_info & 0xf, STT_FUNC | STT_GNU_IFUNC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::machine::{AARCH64 as EM_AARCH64, I386 as EM_386, X86_64 as EM_X86_64};

    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn version_codes() {
        assert_eq!(version_code(0x06122c), "6.18.44");
        assert_eq!(version_code(0x050a00), "5.10.0");
    }

    #[test]
    fn gnu_properties_in_readelfs_words() {
        let le = |words: &[u32]| words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        let cases: [(u16, bool, Vec<u8>, &str); 7] = [
            (EM_AARCH64, true, le(&[0xc000_0000, 4, 3, 0]), "AArch64 feature: BTI, PAC"),
            (EM_AARCH64, true, le(&[0xc000_0000, 4, 0x11, 0]), "AArch64 feature: BTI, <unknown: 10>"),
            (EM_X86_64, true, le(&[0xc000_0002, 4, 2, 0]), "x86 feature: SHSTK"),
            (EM_386, false, le(&[0xc000_8002, 4, 0]), "x86 ISA needed: <None>"),
            (EM_X86_64, true, le(&[0xc000_0002, 8, 3, 0]), "x86 feature: <corrupt length: 0x8> "),
            (EM_X86_64, true, le(&[0xc000_0002, 64, 3, 0]), "<corrupt type (0xc0000002) datasz: 0x40>"),
            (EM_X86_64, true, le(&[1, 2, 3]), "<corrupt GNU_PROPERTY_TYPE, size = 0xc>"),
        ];
        for (machine, is_64, desc, want) in cases {
            assert_eq!(gnu_properties(&desc, true, machine, is_64), want);
        }
    }

    #[test]
    fn arm_thumb_bit_cleared_only_for_arm_functions() {
        let img = parse(&fixture("aarch64-compat.so")).unwrap();
        let thumb: Vec<(&str, u64, bool)> = img.symbols.iter().map(|s| (s.name.as_str(), s.value, s.thumb)).collect();
        assert_eq!(
            thumb,
            [
                ("LINUX_2.6", 0, false),
                ("__vdso_gettimeofday", 0x914, true),
                ("__vdso_clock_getres", 0xb34, true),
                ("__vdso_clock_gettime64", 0x5c0, true),
                ("__vdso_clock_gettime", 0x2c8, true)
            ]
        );
        // aarch64 code has no Thumb bit to clear, whatever the value.
        assert!(parse(&fixture("aarch64.so")).unwrap().symbols.iter().all(|s| !s.thumb));
    }

    #[test]
    fn garbage_is_an_error() {
        for bytes in
            [&b""[..], b"\x7fEL", b"#!/bin/sh\necho hi\n", &[0u8; 64], b"\x7fELF\x03\x01\x01\0\0\0\0\0\0\0\0\0"]
        {
            assert!(matches!(parse(bytes), Err(Error::Malformed { .. })), "{bytes:?}");
        }
    }

    #[test]
    fn host_x86_64_fixture() {
        let img = parse(&fixture("x86_64.so")).unwrap();
        assert!(img.is_64 && img.little_endian);
        assert_eq!(img.machine, crate::arch::machine::X86_64);
        assert_eq!(img.soname.as_deref(), Some("linux-vdso.so.1"));
        let cg = img.symbols.iter().find(|s| s.name == "__vdso_clock_gettime").unwrap();
        assert_eq!(cg.version.as_ref().unwrap().display(), "LINUX_2.6");
        assert_eq!(cg.section.as_deref(), Some(".text"));
        assert_eq!(type_name(cg.kind), "FUNC");
        assert_eq!(bind_name(cg.bind), "GLOBAL");
        assert!(img.has_hash && img.has_gnu_hash);
        let names: Vec<_> = img.versions.iter().map(|v| (v.index, v.name.as_str(), v.flags_text())).collect();
        assert_eq!(names, [(1, "linux-vdso.so.1", "BASE".to_string()), (2, "LINUX_2.6", "none".to_string())]);
        let code = img.notes.iter().find(|n| n.owner == "Linux" && n.n_type == 0).unwrap();
        assert_eq!(code.description.as_deref(), Some("6.18.44"));
        let id = img.notes.iter().find(|n| n.owner == "GNU" && n.n_type == 3).unwrap();
        assert_eq!(id.description.as_ref().unwrap().len(), 40);
    }

    /// Everything a caller can do with a parsed image, so a lazy panic in an
    /// accessor or the renderer shows up too.
    fn walk(img: &Image) {
        for s in &img.symbols {
            let _ = (type_name(s.kind), bind_name(s.bind), objdump_flags(s));
            if let Some(v) = &s.version {
                let _ = v.display();
            }
        }
        for v in &img.versions {
            let _ = v.flags_text();
        }
        for n in &img.notes {
            let _ = gnu_properties(&n.desc, img.little_endian, img.machine, img.is_64);
        }
        let _ = elf_type_name(img.elf_type);
        let report = crate::cmd::dump::report(crate::cmd::dump::Source::File { file: "x".into() }, Some(1), img);
        let _ = serde_json::to_string(&report).unwrap();
        for tty in [false, true] {
            let mut out = crate::render::Output::plain(crate::render::Format::Table);
            out.stdout_tty = tty;
            let _ = crate::render::Render::render_table(&report, &out);
        }
    }

    /// Every committed image (fixtures/vdso/README.md).
    const FIXTURES: [&str; 14] = [
        "x86_64.so",
        "i386.so",
        "aarch64.so",
        "aarch64-compat.so",
        "aarch64-6.12.so",
        "aarch64-6.12-compat.so",
        "armhf.so",
        "riscv64.so",
        "ppc64el.so",
        "s390x.so",
        "s390x-compat.so",
        "mips64el.so",
        "mips64el-o32.so",
        "mips64el-n32.so",
    ];

    /// Cases for the mutation test: 256 in the normal suite,
    /// `VDSOCTL_FUZZ_CASES` for scripts/fuzz-dump.sh.
    fn fuzz_cases() -> u32 {
        std::env::var("VDSOCTL_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: fuzz_cases(), failure_persistence: None, ..Default::default() })]

        /// Random byte mutations of the real images, biased to the first
        /// 0x600 bytes where the headers, dynamic section and version
        /// tables live, with "interesting" words (0, all-ones, the size)
        /// and growth to 64 KiB, never panic: parse is Ok or Err, and an Ok walks.
        #[test]
        fn mutated_fixtures_never_panic(
            which in 0usize..FIXTURES.len(),
            edits in proptest::collection::vec((0usize..0x10000, proptest::prelude::any::<u8>(), proptest::prelude::any::<bool>()), 1..24),
            words in proptest::collection::vec((0usize..0x600, 0usize..6), 0..6),
            grow in proptest::option::of(0usize..0x10000),
            cut in proptest::option::of(0usize..0x10000),
        ) {
            let mut bytes = fixture(FIXTURES[which]);
            if let Some(grow) = grow {
                bytes.resize(bytes.len() + grow, 0);
            }
            let len = bytes.len();
            for (at, value, low) in edits {
                let at = if low { at % 0x600.min(len) } else { at % len };
                bytes[at] = value;
            }
            for (at, pick) in words {
                let value: u32 = [0, 1, u32::MAX, 0x7fff_ffff, len as u32, 0x1_0000][pick];
                let at = (at % (len - 4)) & !3;
                bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
            if let Some(cut) = cut {
                bytes.truncate(cut);
            }
            if let Ok(img) = parse(&bytes) {
                walk(&img);
            }
        }
    }

    #[test]
    fn every_prefix_is_handled() {
        for name in FIXTURES {
            let bytes = fixture(name);
            for len in 0..bytes.len() {
                if let Ok(img) = parse(&bytes[..len]) {
                    walk(&img);
                }
            }
            // The ELF content ends before the page padding: any prefix short of
            // the section headers' end must fail.
            assert!(parse(&bytes[..64]).is_err());
        }
    }
}
