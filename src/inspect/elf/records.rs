//! The fixed-size ELF records, as one set of types for every reader: the
//! file header, program headers (segments), section headers, symbols,
//! dynamic entries and relocations, each decoded from bytes already read
//! (whole entries only, so any bytes are safe). goblin decodes the records
//! here and nowhere else in the crate; what the file means is up to the
//! readers ([`super::read`] for files, [`super::parse`] for a vDSO image).

use super::Ident;
use goblin::container::{Container, Ctx, Endian};
use goblin::elf::{Elf, Header as GHeader, ProgramHeader, SectionHeader, Sym as GSym};

/// `e_type`: a shared object or position-independent executable.
pub const ET_DYN: u16 = 3;

/// Program header types (`p_type`).
pub const PT_LOAD: u32 = 1;
pub const PT_DYNAMIC: u32 = 2;
pub const PT_INTERP: u32 = 3;
pub const PT_NOTE: u32 = 4;

/// Program header flags (`p_flags`).
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

/// Section header types (`sh_type`).
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_STRTAB: u32 = 3;
pub const SHT_RELA: u32 = 4;
pub const SHT_NOTE: u32 = 7;
pub const SHT_NOBITS: u32 = 8;
pub const SHT_REL: u32 = 9;
pub const SHT_DYNSYM: u32 = 11;
pub const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
pub const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
pub const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;

/// `sh_flags`: the section holds code.
pub const SHF_EXECINSTR: u64 = 4;

/// Symbol types (low 4 bits of `st_info`).
pub const STT_FUNC: u8 = 2;
pub const STT_SECTION: u8 = 3;
pub const STT_GNU_IFUNC: u8 = 10;

/// Dynamic section tags (`d_tag`).
pub mod dt {
    pub const NULL: u64 = 0;
    pub const NEEDED: u64 = 1;
    pub const PLTRELSZ: u64 = 2;
    pub const PLTGOT: u64 = 3;
    pub const HASH: u64 = 4;
    pub const STRTAB: u64 = 5;
    pub const SYMTAB: u64 = 6;
    pub const RELA: u64 = 7;
    pub const RELASZ: u64 = 8;
    pub const STRSZ: u64 = 10;
    pub const SYMENT: u64 = 11;
    pub const SONAME: u64 = 14;
    pub const REL: u64 = 17;
    pub const RELSZ: u64 = 18;
    pub const PLTREL: u64 = 20;
    pub const JMPREL: u64 = 23;
    pub const GNU_HASH: u64 = 0x6fff_fef5;
    pub const VERSYM: u64 = 0x6fff_fff0;
    pub const FLAGS_1: u64 = 0x6fff_fffb;
    pub const VERDEF: u64 = 0x6fff_fffc;
    pub const VERDEFNUM: u64 = 0x6fff_fffd;
    pub const VERNEED: u64 = 0x6fff_fffe;
    pub const VERNEEDNUM: u64 = 0x6fff_ffff;
    /// A DT_FLAGS_1 bit: a position-independent executable.
    pub const DF_1_PIE: u64 = 0x0800_0000;
}

/// The ELF file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Class, byte order and `e_machine`.
    pub ident: Ident,
    /// `e_type` (2 ET_EXEC, 3 ET_DYN).
    pub elf_type: u16,
    /// `e_flags` (the float ABI of 32-bit ARM, the ELF ABI version of ppc64).
    pub flags: u32,
    /// `e_entry`.
    pub entry: u64,
    pub phoff: u64,
    pub phentsize: u16,
    pub phnum: u16,
    pub shoff: u64,
    pub shentsize: u16,
    pub shnum: u16,
    pub shstrndx: u16,
}

/// What a program header describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    Load,
    Dynamic,
    Interp,
    Note,
    Other(u32),
}

impl SegmentKind {
    fn of(p_type: u32) -> SegmentKind {
        match p_type {
            PT_LOAD => SegmentKind::Load,
            PT_DYNAMIC => SegmentKind::Dynamic,
            PT_INTERP => SegmentKind::Interp,
            PT_NOTE => SegmentKind::Note,
            other => SegmentKind::Other(other),
        }
    }
}

/// One program header: `filesz` bytes at file `offset`, mapped at `vaddr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub kind: SegmentKind,
    /// `p_flags` ([`PF_X`], [`PF_W`], [`PF_R`]).
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
}

impl Segment {
    /// PF_X: mapped executable.
    pub fn executable(&self) -> bool {
        self.flags & PF_X != 0
    }

    /// PF_W: mapped writable.
    pub fn writable(&self) -> bool {
        self.flags & PF_W != 0
    }
}

/// One section header, with its name once the name table is read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    /// From the section name table; empty when unknown.
    pub name: String,
    /// Offset of the name in the section name table (`sh_name`).
    pub name_at: usize,
    /// `sh_type` (the `SHT_*` constants).
    pub kind: u32,
    /// `sh_flags`.
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub align: u64,
    pub entsize: u64,
}

impl Section {
    /// Its bytes are in the file (not SHT_NOBITS).
    pub fn has_bytes(&self) -> bool {
        self.kind != SHT_NOBITS
    }

    /// SHF_EXECINSTR with bytes in the file.
    pub fn is_code(&self) -> bool {
        self.flags & SHF_EXECINSTR != 0 && self.has_bytes() && self.size > 0
    }
}

/// One symbol table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sym {
    /// Offset of the name in the linked string table (`st_name`).
    pub name: usize,
    pub info: u8,
    pub other: u8,
    pub shndx: usize,
    pub value: u64,
    pub size: u64,
}

impl Sym {
    /// STT_* (low 4 bits of st_info).
    pub fn kind(&self) -> u8 {
        self.info & 0xf
    }

    /// STB_* (high 4 bits of st_info).
    pub fn bind(&self) -> u8 {
        self.info >> 4
    }

    /// STT_FUNC or STT_GNU_IFUNC: a symbol that names code.
    pub fn is_function(&self) -> bool {
        matches!(self.kind(), STT_FUNC | STT_GNU_IFUNC)
    }

    /// Defined in this object (st_shndx not SHN_UNDEF).
    pub fn is_defined(&self) -> bool {
        self.shndx != 0
    }
}

impl Ident {
    fn ctx(&self) -> Ctx {
        let container = if self.is_64 { Container::Big } else { Container::Little };
        Ctx::new(container, if self.little_endian { Endian::Little } else { Endian::Big })
    }

    /// Bytes of one program header.
    pub fn segment_size(&self) -> usize {
        if self.is_64 {
            56
        } else {
            32
        }
    }

    /// Bytes of one section header.
    pub fn section_size(&self) -> usize {
        if self.is_64 {
            64
        } else {
            40
        }
    }

    /// Bytes of one symbol.
    pub fn symbol_size(&self) -> usize {
        if self.is_64 {
            24
        } else {
            16
        }
    }

    /// Bytes of a target word.
    pub fn word_size(&self) -> usize {
        if self.is_64 {
            8
        } else {
            4
        }
    }
}

/// The file header in `head` (the first 52 or 64 bytes), whose
/// identification `ident` has already read; `Err` with goblin's words.
pub fn header(head: &[u8], ident: Ident) -> Result<Header, String> {
    let h: GHeader = Elf::parse_header(head).map_err(|e| e.to_string())?;
    Ok(Header {
        ident: Ident { machine: h.e_machine, ..ident },
        elf_type: h.e_type,
        flags: h.e_flags,
        entry: h.e_entry,
        phoff: h.e_phoff,
        phentsize: h.e_phentsize,
        phnum: h.e_phnum,
        shoff: h.e_shoff,
        shentsize: h.e_shentsize,
        shnum: h.e_shnum,
        shstrndx: h.e_shstrndx,
    })
}

/// `count` program headers at the start of `table`; `Err` when it is short.
pub fn segments(table: &[u8], count: usize, ident: Ident) -> Result<Vec<Segment>, String> {
    if table.len() < count.saturating_mul(ident.segment_size()) {
        return Err(format!("{count} program headers need more than {} bytes", table.len()));
    }
    let phdrs = ProgramHeader::parse(table, 0, count, ident.ctx()).map_err(|e| e.to_string())?;
    Ok(phdrs
        .into_iter()
        .map(|p| Segment {
            kind: SegmentKind::of(p.p_type),
            flags: p.p_flags,
            offset: p.p_offset,
            vaddr: p.p_vaddr,
            filesz: p.p_filesz,
            memsz: p.p_memsz,
            align: p.p_align,
        })
        .collect())
}

/// `count` section headers at the start of `table`, unnamed; `Err` when
/// it is short.
pub fn sections(table: &[u8], count: usize, ident: Ident) -> Result<Vec<Section>, String> {
    if table.len() < count.saturating_mul(ident.section_size()) {
        return Err(format!("{count} section headers need more than {} bytes", table.len()));
    }
    // goblin reads offset 0 as "no section headers": parse behind one pad byte.
    let mut padded = Vec::with_capacity(table.len() + 1);
    padded.push(0);
    padded.extend_from_slice(table);
    let shdrs = SectionHeader::parse(&padded, 1, count, ident.ctx()).map_err(|e| e.to_string())?;
    Ok(shdrs
        .into_iter()
        .map(|s| Section {
            name: String::new(),
            name_at: s.sh_name,
            kind: s.sh_type,
            flags: s.sh_flags,
            addr: s.sh_addr,
            offset: s.sh_offset,
            size: s.sh_size,
            link: s.sh_link,
            info: s.sh_info,
            align: s.sh_addralign,
            entsize: s.sh_entsize,
        })
        .collect())
}

/// The symbols in a slice of a symbol table (`.symtab`, `.dynsym`):
/// whole entries only, so any bytes are safe.
pub fn symbols_in(bytes: &[u8], ident: Ident) -> Vec<Sym> {
    let count = bytes.len() / ident.symbol_size();
    let syms = GSym::parse(bytes, 0, count, ident.ctx()).unwrap_or_default();
    syms.into_iter()
        .map(|s| Sym {
            name: s.st_name,
            info: s.st_info,
            other: s.st_other,
            shndx: s.st_shndx,
            value: s.st_value,
            size: s.st_size,
        })
        .collect()
}

/// A target word (4 or 8 bytes, in the file's byte order) at the start of
/// `b`; `None` when `b` is shorter.
pub fn word(ident: Ident, b: &[u8]) -> Option<u64> {
    let w = ident.word_size();
    let b = b.get(..w)?;
    let mut v = [0u8; 8];
    Some(if ident.little_endian {
        v[..w].copy_from_slice(b);
        u64::from_le_bytes(v)
    } else {
        v[8 - w..].copy_from_slice(b);
        u64::from_be_bytes(v)
    })
}

/// The `(d_tag, d_val)` entries in the bytes of a PT_DYNAMIC segment, up
/// to DT_NULL; whole entries only, so any bytes are safe.
pub fn dynamic_entries(bytes: &[u8], ident: Ident) -> Vec<(u64, u64)> {
    let w = ident.word_size();
    bytes
        .chunks_exact(2 * w)
        .map(|pair| (word(ident, &pair[..w]).unwrap_or(0), word(ident, &pair[w..]).unwrap_or(0)))
        .take_while(|(tag, _)| *tag != dt::NULL)
        .collect()
}

/// Bytes of one relocation entry (SHT_RELA when `rela`, else SHT_REL).
pub fn relocation_size(ident: Ident, rela: bool) -> usize {
    ident.word_size() * if rela { 3 } else { 2 }
}

/// `(r_offset, symbol index)` of each entry in a slice of a relocation
/// table (SHT_RELA when `rela`, else SHT_REL); whole entries only.
pub fn relocations_in(bytes: &[u8], ident: Ident, rela: bool) -> Vec<(u64, u32)> {
    let w = ident.word_size();
    bytes
        .chunks_exact(relocation_size(ident, rela))
        .map(|e| {
            let (offset, info) = (word(ident, e).unwrap_or(0), word(ident, &e[w..]).unwrap_or(0));
            (offset, if ident.is_64 { (info >> 32) as u32 } else { (info >> 8) as u32 })
        })
        .collect()
}
