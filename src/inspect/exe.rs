//! What a process's executable says about its clock reads: ELF class, static
//! or dynamic (PT_INTERP), the libraries it needs, and so which C library (if
//! any) does its clock_gettime. Only the headers are read, never the whole
//! file: an executable can be hundreds of MiB.

use crate::error::{Error, Result};
use goblin::container::{Container, Ctx, Endian};
use goblin::elf::program_header::{PT_DYNAMIC, PT_INTERP, PT_LOAD};
use goblin::elf::ProgramHeader;
use serde::Serialize;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The C library (or runtime) that serves a program's clock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LibcKind {
    Glibc,
    Musl,
    Bionic,
    /// Go programs call the vDSO from their own runtime.
    Go,
    Unknown,
}

/// Facts about an executable relevant to the vDSO fast path.
#[derive(Debug, Clone, Serialize)]
pub struct ExeInfo {
    pub is_64: bool,
    pub machine: u16,
    /// The program interpreter; `None` means statically linked.
    pub interp: Option<String>,
    /// DT_NEEDED entries.
    pub needed: Vec<String>,
    pub libc: LibcKind,
}

impl ExeInfo {
    /// No PT_INTERP: the C library was linked in at build time.
    pub fn is_static(&self) -> bool {
        self.interp.is_none()
    }
}

/// Header-sized reads are capped so hostile headers cannot make us allocate.
const MAX_PHDRS: usize = 256;
const MAX_DYNAMIC: u64 = 64 * 1024;
const MAX_STRING: usize = 4096;
/// How much of a static binary we scan for libc markers, in 1 MiB chunks.
const SCAN_LIMIT: u64 = 64 << 20;

fn pread(file: &File, offset: u64, len: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) => return Err(Error::from_io("executable", e, "check that it is readable")),
        }
    }
    buf.truncate(done);
    Ok(buf)
}

fn bad(detail: impl Into<String>) -> Error {
    Error::malformed("executable", detail)
}

/// Read an executable's headers.
pub fn read(file: &File) -> Result<ExeInfo> {
    let head = pread(file, 0, 64)?;
    if head.len() < 52 || head.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(bad("not an ELF file"));
    }
    let header = goblin::elf::Elf::parse_header(&head).map_err(|e| bad(e.to_string()))?;
    let is_64 = header.e_ident[4] == 2;
    let le = header.e_ident[5] == 1;
    let ctx =
        Ctx::new(if is_64 { Container::Big } else { Container::Little }, if le { Endian::Little } else { Endian::Big });
    let count = header.e_phnum as usize;
    if count > MAX_PHDRS {
        return Err(bad(format!("{count} program headers")));
    }
    let phsize = ProgramHeader::size(ctx);
    let table = pread(file, header.e_phoff, count * phsize)?;
    if table.len() < count * phsize {
        return Err(bad("program headers past the end of the file"));
    }
    let phdrs = ProgramHeader::parse(&table, 0, count, ctx).map_err(|e| bad(e.to_string()))?;
    let interp = match phdrs.iter().find(|p| p.p_type == PT_INTERP) {
        Some(p) => {
            let bytes = pread(file, p.p_offset, (p.p_filesz as usize).min(MAX_STRING))?;
            Some(String::from_utf8_lossy(bytes.split(|&b| b == 0).next().unwrap_or(&[])).into_owned())
        }
        None => None,
    };
    let needed = match phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) {
        Some(dynamic) => read_needed(file, dynamic, &phdrs, is_64, le)?,
        None => Vec::new(),
    };
    let libc = classify(interp.as_deref(), &needed).map_or_else(|| scan_static(file), Ok)?;
    Ok(ExeInfo { is_64, machine: header.e_machine, interp, needed, libc })
}

fn read_needed(
    file: &File,
    dynamic: &ProgramHeader,
    phdrs: &[ProgramHeader],
    is_64: bool,
    le: bool,
) -> Result<Vec<String>> {
    let bytes = pread(file, dynamic.p_offset, dynamic.p_filesz.min(MAX_DYNAMIC) as usize)?;
    let w = if is_64 { 8 } else { 4 };
    let word = |b: &[u8]| -> u64 {
        let mut v = [0u8; 8];
        if le {
            v[..w].copy_from_slice(b);
            u64::from_le_bytes(v)
        } else {
            v[8 - w..].copy_from_slice(b);
            u64::from_be_bytes(v)
        }
    };
    const DT_NEEDED: u64 = 1;
    const DT_STRTAB: u64 = 5;
    let mut needed_offsets = Vec::new();
    let mut strtab = None;
    for pair in bytes.chunks_exact(2 * w) {
        let (tag, val) = (word(&pair[..w]), word(&pair[w..]));
        match tag {
            0 => break,
            DT_NEEDED => needed_offsets.push(val),
            DT_STRTAB => strtab = Some(val),
            _ => {}
        }
    }
    let Some(strtab_vaddr) = strtab else { return Ok(Vec::new()) };
    // DT_STRTAB is a virtual address: find the PT_LOAD that holds it.
    let Some(strtab_off) = phdrs
        .iter()
        .filter(|p| p.p_type == PT_LOAD)
        .find(|p| strtab_vaddr >= p.p_vaddr && strtab_vaddr < p.p_vaddr.saturating_add(p.p_filesz))
        .map(|p| strtab_vaddr - p.p_vaddr + p.p_offset)
    else {
        return Ok(Vec::new());
    };
    let mut names = Vec::new();
    for off in needed_offsets.into_iter().take(256) {
        let bytes = pread(file, strtab_off.saturating_add(off), MAX_STRING)?;
        names.push(String::from_utf8_lossy(bytes.split(|&b| b == 0).next().unwrap_or(&[])).into_owned());
    }
    Ok(names)
}

/// The C library from the interpreter and DT_NEEDED; None for a static binary.
pub fn classify(interp: Option<&str>, needed: &[String]) -> Option<LibcKind> {
    let interp = interp?;
    let has = |pat: &str| needed.iter().any(|n| n.contains(pat));
    Some(if interp.contains("ld-musl") || has("libc.musl") {
        LibcKind::Musl
    } else if has("libc.so.6") || interp.contains("ld-linux") {
        LibcKind::Glibc
    } else if interp.contains("/system/bin/linker") {
        LibcKind::Bionic
    } else {
        LibcKind::Unknown
    })
}

/// A static binary: look for what each runtime leaves in it. Go and glibc
/// name themselves (`Go build ID:`, `GLIBC_TUNABLES`); musl does not, but
/// its clock_gettime looks the vDSO up by name, so `__vdso_clock_gettime`
/// without a glibc marker is taken as musl.
fn scan_static(file: &File) -> Result<LibcKind> {
    const GO: &[u8] = b"Go build ID:";
    const GLIBC: &[&[u8]] = &[b"GLIBC_TUNABLES", b"GLIBC_PRIVATE"];
    const VDSO_LOOKUP: &[u8] = b"__vdso_clock_gettime";
    let chunk = 1 << 20;
    let overlap = 64;
    let mut offset = 0u64;
    let mut looks_up_vdso = false;
    let has = |buf: &[u8], m: &[u8]| buf.windows(m.len()).any(|w| w == m);
    while offset < SCAN_LIMIT {
        let buf = pread(file, offset, chunk)?;
        if has(&buf, GO) {
            return Ok(LibcKind::Go);
        }
        if GLIBC.iter().any(|m| has(&buf, m)) {
            return Ok(LibcKind::Glibc);
        }
        looks_up_vdso |= has(&buf, VDSO_LOOKUP);
        if buf.len() < chunk {
            break;
        }
        offset += (chunk - overlap) as u64;
    }
    Ok(if looks_up_vdso { LibcKind::Musl } else { LibcKind::Unknown })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_executable_is_dynamic_glibc_or_static() {
        let info = read(&File::open("/proc/self/exe").unwrap()).unwrap();
        assert_eq!(info.is_64, cfg!(target_pointer_width = "64"));
        if cfg!(all(target_env = "gnu", not(target_feature = "crt-static"))) {
            assert!(info.interp.as_deref().unwrap().contains("ld-linux"));
            assert!(info.needed.iter().any(|n| n == "libc.so.6"), "{:?}", info.needed);
            assert_eq!(info.libc, LibcKind::Glibc);
        }
    }

    #[test]
    fn classification() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(classify(Some("/lib/ld-musl-x86_64.so.1"), &n(&["libc.so"])), Some(LibcKind::Musl));
        assert_eq!(classify(Some("/lib64/ld-linux-x86-64.so.2"), &n(&["libc.so.6"])), Some(LibcKind::Glibc));
        assert_eq!(classify(None, &[]), None);
    }

    #[test]
    fn non_elf_and_truncated_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [("text", b"#!/bin/sh\n".to_vec()), ("short", b"\x7fELF\x02\x01".to_vec())] {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            assert!(read(&File::open(&p).unwrap()).is_err());
        }
        // absurd phnum
        let mut own = pread(&File::open("/proc/self/exe").unwrap(), 0, 64).unwrap();
        own[56] = 0xff;
        own[57] = 0xff;
        let p = dir.path().join("phnum");
        std::fs::write(&p, own).unwrap();
        assert!(read(&File::open(&p).unwrap()).is_err());
    }
}
