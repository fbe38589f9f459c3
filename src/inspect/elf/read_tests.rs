use super::*;
use crate::inspect::elf::{parse, SHT_DYNSYM};
use std::path::PathBuf;

fn fixtures() -> Vec<PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso");
    let mut all: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "so"))
        .collect();
    all.sort();
    assert!(all.len() >= 4, "the vDSO fixtures are missing from {}", dir.display());
    all
}

#[test]
fn a_file_and_its_bytes_read_alike() {
    for path in fixtures() {
        let file = std::fs::File::open(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let (from_file, from_bytes) = (headers(&file).unwrap(), headers(&bytes[..]).unwrap());
        assert_eq!(from_file, from_bytes, "{}", path.display());
        assert_eq!(from_file.table, SectionTable::Read, "{}", path.display());
        assert!(from_file.section(".text").is_some_and(Section::is_code), "{}", path.display());
    }
}

/// The reader and the vDSO image parser see the same load segments and the
/// same dynamic symbols: one set of records under both.
#[test]
fn the_reader_and_the_image_parser_agree() {
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let (h, img) = (headers(&bytes[..]).unwrap(), parse(&bytes).unwrap());
        assert_eq!(h.loads(), img.loads.as_slice(), "{}", path.display());
        assert_eq!((h.ident(), h.header.elf_type), (Ident { machine: img.machine, ..h.ident() }, img.elf_type));
        let dynsym = h.section_of(SHT_DYNSYM).unwrap();
        let mut read = Vec::new();
        for_each_symbol(&bytes[..], h.ident(), (dynsym.offset, dynsym.size), 64, |s| read.push(*s)).unwrap();
        let read: Vec<(u64, u64, u8)> = read.iter().skip(1).map(|s| (s.value, s.size, s.kind())).collect();
        let parsed: Vec<(u64, u64, u8)> =
            img.symbols.iter().map(|s| (s.value | u64::from(s.thumb), s.size, s.kind)).collect();
        assert_eq!(read, parsed, "{}", path.display());
    }
}

#[test]
fn what_cannot_be_read_is_an_error_value() {
    for name in ["i386.so", "x86_64.so"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso").join(name);
        refusals(std::fs::read(path).unwrap());
    }
}

/// A little-endian image's header fields set out of bounds one at a time.
fn refusals(good: Vec<u8>) {
    let h = headers(&good[..]).unwrap();
    let phoff = h.header.phoff as usize;
    let entry = h.ident().size_of(Record::Segment);
    // The program header table cut in its second entry.
    assert!(matches!(headers(&good[..phoff + entry + 1]), Err(HeaderError::SegmentsShort)));
    let mut many = good.clone();
    let at = if h.ident().is_64 { 56 } else { 44 };
    many[at..at + 2].copy_from_slice(&300u16.to_le_bytes());
    assert!(matches!(headers(&many[..]), Err(HeaderError::TooManySegments(300))));
    assert!(matches!(headers(&good[..51]), Err(HeaderError::NotElf)));
    let mut class = good.clone();
    class[4] = 3;
    assert!(matches!(headers(&class[..]), Err(HeaderError::Ident)));
    // Section headers out of the file: read on without them, and said so.
    let mut far = good;
    let at = if h.ident().is_64 { 40 } else { 32 };
    far[at..at + 4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let h = headers(&far[..]).unwrap();
    assert_eq!((h.table, h.sections.len()), (SectionTable::Unreadable, 0));
}

/// A length the file cannot hold is never allocated: the read stops at
/// the end of the file.
#[test]
fn a_file_read_never_outgrows_the_file() {
    let path = &fixtures()[0];
    let file = std::fs::File::open(path).unwrap();
    let size = file.size();
    assert_eq!(file.read_at(0, usize::MAX).unwrap().len() as u64, size);
    assert_eq!(file.read_at(size - 3, 1 << 40).unwrap().len(), 3);
    assert!(file.read_at(size + 1, 1 << 40).unwrap().is_empty());
    // Past what pread takes (EINVAL): past the end, nothing, as from bytes
    // in memory (a hostile e_phoff is "past the end", not "unreadable").
    assert!(file.read_at(u64::MAX, 16).unwrap().is_empty());
    assert!(file.read_at(1 << 63, 16).unwrap().is_empty());
    assert!(file.read_at(i64::MAX as u64, 16).unwrap().is_empty());
}

/// Every prefix of every fixture: an error value or headers whose tables
/// can be walked, never a panic.
#[test]
fn every_prefix_reads_or_refuses() {
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        for len in (0..bytes.len()).step_by(7) {
            let src = &bytes[..len];
            let Ok(h) = headers(src) else { continue };
            for s in h.sections.iter().filter(|s| matches!(s.kind, SHT_DYNSYM | super::super::SHT_SYMTAB)) {
                for_each_symbol(src, h.ident(), (s.offset, s.size), 256, |_| {}).unwrap();
            }
            let _ = dynamic(src, &h).unwrap();
        }
    }
}
