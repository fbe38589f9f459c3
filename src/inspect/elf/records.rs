//! The fixed-size ELF records, as one set of types for every reader: the
//! file header, program headers (segments), section headers, symbols,
//! dynamic entries and relocations, each decoded from bytes already read
//! (whole entries only, so any bytes are safe). goblin decodes the records
//! here and nowhere else in the crate; what the file means is up to the
//! readers ([`super::read`] for files, [`super::parse`] for a vDSO image).

use super::Ident;
use goblin::container::{Container, Ctx, Endian};
use goblin::elf::{Elf, Header as GHeader, ProgramHeader, SectionHeader, Sym as GSym};

// The constants are the gABI's, as goblin spells them.
/// `e_type`: a shared object or position-independent executable.
pub use goblin::elf::header::ET_DYN;
/// Program header types (`p_type`) and flags (`p_flags`).
pub use goblin::elf::program_header::{PF_R, PF_W, PF_X, PT_DYNAMIC, PT_INTERP, PT_LOAD, PT_NOTE};
/// Section header types (`sh_type`).
pub use goblin::elf::section_header::{SHT_DYNSYM, SHT_NOBITS, SHT_NOTE, SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB};
pub use goblin::elf::section_header::{SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM};
/// Symbol types (low 4 bits of `st_info`).
pub use goblin::elf::sym::{STT_FUNC, STT_GNU_IFUNC, STT_SECTION};

/// `sh_flags`: the section holds code.
pub const SHF_EXECINSTR: u64 = goblin::elf::section_header::SHF_EXECINSTR as u64;

/// Dynamic section tags (`d_tag`) and the DT_FLAGS_1 bit of a
/// position-independent executable.
pub mod dt {
    pub use goblin::elf::dynamic::DF_1_PIE;
    pub use goblin::elf::dynamic::{DT_FLAGS_1 as FLAGS_1, DT_GNU_HASH as GNU_HASH, DT_HASH as HASH};
    pub use goblin::elf::dynamic::{DT_JMPREL as JMPREL, DT_NEEDED as NEEDED, DT_NULL as NULL, DT_PLTGOT as PLTGOT};
    pub use goblin::elf::dynamic::{DT_PLTREL as PLTREL, DT_PLTRELSZ as PLTRELSZ, DT_REL as REL, DT_RELA as RELA};
    pub use goblin::elf::dynamic::{DT_RELASZ as RELASZ, DT_RELSZ as RELSZ, DT_SONAME as SONAME, DT_STRSZ as STRSZ};
    pub use goblin::elf::dynamic::{DT_STRTAB as STRTAB, DT_SYMENT as SYMENT, DT_SYMTAB as SYMTAB};
    pub use goblin::elf::dynamic::{DT_VERDEF as VERDEF, DT_VERDEFNUM as VERDEFNUM, DT_VERSYM as VERSYM};
    pub use goblin::elf::dynamic::{DT_VERNEED as VERNEED, DT_VERNEEDNUM as VERNEEDNUM};
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

    /// Bytes of one record of this class.
    pub fn size_of(&self, record: Record) -> usize {
        let (elf32, elf64) = match record {
            Record::Segment => (32, 56),
            Record::Section => (40, 64),
            Record::Symbol => (16, 24),
            Record::Word => (4, 8),
        };
        if self.is_64 {
            elf64
        } else {
            elf32
        }
    }
}

/// The fixed-size records whose size depends on the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// A program header.
    Segment,
    /// A section header.
    Section,
    Symbol,
    /// A target word (an address, `d_val`).
    Word,
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
    if table.len() < count.saturating_mul(ident.size_of(Record::Segment)) {
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
    if table.len() < count.saturating_mul(ident.size_of(Record::Section)) {
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
    let count = bytes.len() / ident.size_of(Record::Symbol);
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
    let w = ident.size_of(Record::Word);
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
    let w = ident.size_of(Record::Word);
    bytes
        .chunks_exact(2 * w)
        .map(|pair| (word(ident, &pair[..w]).unwrap_or(0), word(ident, &pair[w..]).unwrap_or(0)))
        .take_while(|(tag, _)| *tag != dt::NULL)
        .collect()
}

/// Bytes of one relocation entry (SHT_RELA when `rela`, else SHT_REL).
pub fn relocation_size(ident: Ident, rela: bool) -> usize {
    ident.size_of(Record::Word) * if rela { 3 } else { 2 }
}

/// `(r_offset, symbol index)` of each entry in a slice of a relocation
/// table (SHT_RELA when `rela`, else SHT_REL); whole entries only.
pub fn relocations_in(bytes: &[u8], ident: Ident, rela: bool) -> Vec<(u64, u32)> {
    let w = ident.size_of(Record::Word);
    bytes
        .chunks_exact(relocation_size(ident, rela))
        .map(|e| {
            let (offset, info) = (word(ident, e).unwrap_or(0), word(ident, &e[w..]).unwrap_or(0));
            (offset, if ident.is_64 { (info >> 32) as u32 } else { (info >> 8) as u32 })
        })
        .collect()
}
