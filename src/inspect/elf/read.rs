//! The file-backed reader: an ELF object's headers, section names, dynamic
//! entries, strings and symbol tables, read from a [`Source`] (`pread` on a
//! file, or bytes in memory) with every read bounded, so an executable of
//! GiBs is never read whole and a hostile header cannot make us allocate
//! without bound. Total: bad bytes give an `Err` or less, never a panic.
//! What the caller does with what is missing or short is its own policy:
//! the headers say what was claimed and what could be read.

use super::records::{self, Header, Record, Section, Segment, SegmentKind, Sym};
use super::{cstr_at, ident, Ident, Load};
use std::io;

/// Program headers read at most.
pub const MAX_SEGMENTS: usize = 256;
/// Section headers read at most.
pub const MAX_SECTIONS: usize = 4096;
/// Bytes of the section name table read.
const MAX_SECTION_NAMES: u64 = 1 << 20;
/// Bytes a file read allocates ahead of what has arrived, at most.
const READ_STEP: usize = 4 << 20;
/// The first step: a 1 MiB scan of a 10 KiB file zeroes 64 KiB, not 1 MiB
/// (each step doubles, up to [`READ_STEP`]).
const FIRST_READ_STEP: usize = 64 << 10;
/// Bytes of the PT_DYNAMIC segment read.
pub const MAX_DYNAMIC: u64 = 64 * 1024;

/// Where an object's bytes come from.
pub trait Source {
    /// The object's size in bytes.
    fn size(&self) -> u64;
    /// `len` bytes at `off`, fewer at the end of the object.
    fn read_at(&self, off: u64, len: usize) -> io::Result<Vec<u8>>;
}

impl Source for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn read_at(&self, off: u64, len: usize) -> io::Result<Vec<u8>> {
        let rest = usize::try_from(off).ok().and_then(|start| self.get(start..)).unwrap_or(&[]);
        Ok(rest[..rest.len().min(len)].to_vec())
    }
}

impl Source for std::fs::File {
    fn size(&self) -> u64 {
        self.metadata().map_or(0, |m| m.len())
    }
    /// `pread` until `len` bytes or the end of the file (an offset past
    /// `i64::MAX` is past it: nothing, as a slice gives). The buffer grows
    /// a step at a time as bytes arrive (from [`FIRST_READ_STEP`], doubling
    /// up to [`READ_STEP`]), so a length the file cannot hold is never
    /// allocated, without asking the file's size each read.
    fn read_at(&self, off: u64, len: usize) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        // pread refuses a read that ends past i64::MAX (EINVAL): no file
        // has bytes there, so that is its end, as for bytes in memory.
        let room = (i64::MAX as u64).saturating_sub(off);
        let len = len.min(usize::try_from(room).unwrap_or(usize::MAX));
        let mut buf = Vec::new();
        let (mut done, mut step) = (0, FIRST_READ_STEP);
        while done < len {
            buf.resize(done + (len - done).min(step), 0);
            step = (step * 2).min(READ_STEP);
            while done < buf.len() {
                let Some(at) = off.checked_add(done as u64) else { break };
                match FileExt::read_at(self, &mut buf[done..], at) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
            if done < buf.len() {
                break;
            }
        }
        buf.truncate(done);
        Ok(buf)
    }
}

/// What became of the section header table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionTable {
    /// Read, with its names.
    Read,
    /// None in the file (`e_shoff` or `e_shnum` 0).
    Absent,
    /// Named but unreadable: out of the file, a bad entry size or count,
    /// a name table index that names no section.
    Unreadable,
}

/// Why a file's headers cannot be read at all.
#[derive(Debug)]
pub enum HeaderError {
    /// Fewer than 52 bytes, or no `\x7fELF`.
    NotElf,
    /// An unknown class or byte order.
    Ident,
    /// The file header does not decode (goblin's words).
    Header(String),
    /// More program headers than [`MAX_SEGMENTS`].
    TooManySegments(u16),
    /// The program header table runs past the end of the file.
    SegmentsShort,
    Io(io::Error),
}

/// An object's headers: what every other table is found through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headers {
    pub header: Header,
    /// The program headers (at most [`MAX_SEGMENTS`]).
    pub segments: Vec<Segment>,
    /// The section headers with their names; empty unless `table` is `Read`.
    pub sections: Vec<Section>,
    pub table: SectionTable,
    /// The PT_LOAD segments, which map virtual addresses to file offsets.
    loads: Vec<Load>,
}

impl Headers {
    pub fn ident(&self) -> Ident {
        self.header.ident
    }

    /// The PT_LOAD segments.
    pub fn loads(&self) -> &[Load] {
        &self.loads
    }

    /// The file offset of `len` bytes at virtual address `vaddr`, through
    /// the PT_LOAD that holds them all.
    pub fn offset_of(&self, vaddr: u64, len: u64) -> Option<u64> {
        super::offset_in(&self.loads, vaddr, len)
    }

    /// The first segment of a kind.
    pub fn segment(&self, kind: SegmentKind) -> Option<&Segment> {
        self.segments.iter().find(|p| p.kind == kind)
    }

    /// The first section named `name`.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The first section of type `kind`.
    pub fn section_of(&self, kind: u32) -> Option<&Section> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    /// The section `link` names (a symbol table's string table).
    pub fn linked(&self, s: &Section) -> Option<&Section> {
        self.sections.get(s.link as usize)
    }
}

/// Read an object's file header, program headers and named section headers.
pub fn headers(src: &(impl Source + ?Sized)) -> Result<Headers, HeaderError> {
    let head = src.read_at(0, 64).map_err(HeaderError::Io)?;
    if head.len() < 52 || head.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(HeaderError::NotElf);
    }
    let id = ident(&head).ok_or(HeaderError::Ident)?;
    let header = records::header(&head, id).map_err(HeaderError::Header)?;
    let count = usize::from(header.phnum);
    if count > MAX_SEGMENTS {
        return Err(HeaderError::TooManySegments(header.phnum));
    }
    let table = src.read_at(header.phoff, count * id.size_of(Record::Segment)).map_err(HeaderError::Io)?;
    let segments = records::segments(&table, count, id).map_err(|_| HeaderError::SegmentsShort)?;
    let sections = read_sections(src, &header);
    let table = match &sections {
        Some(_) => SectionTable::Read,
        None if header.shoff == 0 || header.shnum == 0 => SectionTable::Absent,
        None => SectionTable::Unreadable,
    };
    let loads = super::loads(&segments);
    Ok(Headers { header, segments, sections: sections.unwrap_or_default(), table, loads })
}

/// Section headers with their names; None when absent or unreadable.
fn read_sections(src: &(impl Source + ?Sized), header: &Header) -> Option<Vec<Section>> {
    let id = header.ident;
    let count = usize::from(header.shnum);
    if header.shoff == 0
        || count == 0
        || count > MAX_SECTIONS
        || usize::from(header.shentsize) != id.size_of(Record::Section)
    {
        return None;
    }
    let table = src.read_at(header.shoff, count * id.size_of(Record::Section)).ok()?;
    let mut sections = records::sections(&table, count, id).ok()?;
    let names = sections.get(usize::from(header.shstrndx))?;
    let names = src.read_at(names.offset, names.size.min(MAX_SECTION_NAMES) as usize).ok()?;
    for s in &mut sections {
        s.name = names.get(s.name_at..).map(cstr_at).unwrap_or_default();
    }
    Some(sections)
}

/// The PT_DYNAMIC entries up to DT_NULL (at most [`MAX_DYNAMIC`] bytes of
/// them); None when there is no dynamic segment.
pub fn dynamic(src: &(impl Source + ?Sized), h: &Headers) -> io::Result<Option<Vec<(u64, u64)>>> {
    let Some(d) = h.segment(SegmentKind::Dynamic) else { return Ok(None) };
    let bytes = src.read_at(d.offset, d.filesz.min(MAX_DYNAMIC) as usize)?;
    Ok(Some(records::dynamic_entries(&bytes, h.ident())))
}

/// The NUL-terminated string at `off`, at most `max` bytes of it.
pub fn string(src: &(impl Source + ?Sized), off: u64, max: usize) -> io::Result<String> {
    Ok(cstr_at(&src.read_at(off, max)?))
}

/// Call `f` with every symbol of the `size` bytes of a symbol table at
/// `offset`, read in chunks of about `chunk` bytes (whole entries).
pub fn for_each_symbol(
    src: &(impl Source + ?Sized),
    ident: Ident,
    (offset, size): (u64, u64),
    chunk: usize,
    mut f: impl FnMut(&Sym),
) -> io::Result<()> {
    let entry = ident.size_of(Record::Symbol) as u64;
    let chunk = (chunk as u64 / entry).max(1) * entry;
    let mut done = 0;
    while done < size {
        let buf = src.read_at(offset.saturating_add(done), (size - done).min(chunk) as usize)?;
        if buf.is_empty() {
            break;
        }
        for sym in records::symbols_in(&buf, ident) {
            f(&sym);
        }
        done += buf.len() as u64;
        if (buf.len() as u64) < chunk {
            break;
        }
    }
    Ok(())
}

/// Call `f` with the `(r_offset, symbol index)` of every entry of the
/// `size` bytes of a relocation table at `offset`, in chunks of about
/// `chunk` bytes (whole entries); `f`'s first error ends the walk.
pub fn for_each_relocation(
    src: &(impl Source + ?Sized),
    ident: Ident,
    (offset, size, rela): (u64, u64, bool),
    chunk: usize,
    mut f: impl FnMut(u64, u32) -> io::Result<()>,
) -> io::Result<()> {
    let entry = records::relocation_size(ident, rela);
    let chunk = (chunk / entry * entry) as u64;
    let mut done = 0u64;
    while done < size {
        let bytes = src.read_at(offset.saturating_add(done), (size - done).min(chunk) as usize)?;
        for (slot, sym) in records::relocations_in(&bytes, ident, rela) {
            f(slot, sym)?;
        }
        if (bytes.len() as u64) < chunk {
            break;
        }
        done += chunk;
    }
    Ok(())
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
