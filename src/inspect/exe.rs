//! What an executable or shared library says about its clock reads: ELF
//! class and machine, static, static-pie or dynamic (PT_INTERP), the
//! libraries it needs, which runtime does its clock_gettime (glibc, musl, Go,
//! other) and its version, whether a static C library in it looks the vDSO
//! up, and where its code (x86_64, i386, arm64) calls the fixed [vsyscall]
//! page or makes raw clock syscalls (decoded by [`crate::inspect::code`] for
//! x86 and [`crate::inspect::code_a64`] for arm64, each site with its
//! address and enclosing function).
//!
//! The fixed-size records (header, program and section headers) are parsed
//! by goblin, like the rest of the crate; every table is read with a bounded
//! `pread` first, so a hostile header cannot make us allocate or read without
//! bound, and an executable of hundreds of MiB is never read whole: markers
//! and code are scanned in 1 MiB chunks up to [`SCAN_LIMIT`], symbol and
//! relocation tables in 256 KiB chunks.

use crate::error::{Error, Hint, Result};
use crate::inspect::code::{self, Targets};
pub use crate::inspect::code::{Site, Via};
use crate::inspect::code_a64;
use crate::inspect::elf;
use crate::inspect::Process;
use goblin::container::Ctx;
use goblin::elf::dynamic::{DF_1_PIE, DT_FLAGS_1, DT_NEEDED, DT_SONAME, DT_STRTAB};
use goblin::elf::program_header::{PF_W, PF_X, PT_DYNAMIC, PT_INTERP, PT_LOAD};
use goblin::elf::{ProgramHeader, SectionHeader};
use serde::Serialize;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The C library (or runtime) that serves a program's clock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LibcKind {
    Glibc,
    Musl,
    Bionic,
    /// Go programs call the vDSO from their own runtime, with or without cgo.
    Go,
    /// Nothing recognised.
    #[serde(rename = "other")]
    Unknown,
}

impl LibcKind {
    /// The JSON word: `glibc`, `musl`, `bionic`, `go`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            LibcKind::Glibc => "glibc",
            LibcKind::Musl => "musl",
            LibcKind::Bionic => "bionic",
            LibcKind::Go => "go",
            LibcKind::Unknown => "other",
        }
    }
}

/// How the program gets its C library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Linkage {
    /// PT_INTERP: loaded by a dynamic linker.
    Dynamic,
    /// No PT_INTERP, no dynamic section: everything linked in.
    Static,
    /// No PT_INTERP but a dynamic section: relocates itself (`-static-pie`).
    StaticPie,
}

impl Linkage {
    pub fn name(self) -> &'static str {
        match self {
            Linkage::Dynamic => "dynamic",
            Linkage::Static => "static",
            Linkage::StaticPie => "static-pie",
        }
    }
}

/// Go build information, as `go version` reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoInfo {
    /// `go1.19.8`.
    pub version: String,
    /// `build CGO_ENABLED=` from the module info (Go ≥ 1.18), else from the linkage.
    pub cgo: Option<bool>,
}

/// Facts about an ELF file relevant to the vDSO fast path.
#[derive(Debug, Clone, Serialize)]
pub struct ExeInfo {
    pub is_64: bool,
    pub machine: u16,
    /// `EI_DATA`: little-endian (ELFDATA2LSB) or big.
    pub little_endian: bool,
    /// `e_flags` (the float ABI of 32-bit ARM, the ELF ABI version of ppc64).
    pub flags: u32,
    /// `e_type` (2 ET_EXEC, 3 ET_DYN).
    pub elf_type: u16,
    /// The program interpreter; `None` means statically linked.
    pub interp: Option<String>,
    /// DT_NEEDED entries.
    pub needed: Vec<String>,
    /// DT_SONAME.
    pub soname: Option<String>,
    /// DT_FLAGS_1 has DF_1_PIE: an executable, not a library.
    pub pie: bool,
    pub has_dynamic: bool,
    pub libc: LibcKind,
    /// The runtime's version when the file says it (Go buildinfo, the glibc
    /// or musl library itself); the caller fills in a dynamic program's from
    /// the library it loads.
    pub libc_version: Option<String>,
    pub go: Option<GoInfo>,
    /// A static C library in the file names its architecture's vDSO clock_gettime
    /// (`__vdso_clock_gettime`, `__kernel_clock_gettime` on arm64): it looks
    /// the vDSO up (glibc ≥ 2.31 in static binaries, every musl ≥ 1.1.0).
    pub vdso_lookup: bool,
    /// Code sites that call or jump into the fixed [vsyscall] page (x86_64 only).
    pub vsyscall_sites: u32,
    /// The first such site's virtual address.
    pub vsyscall_first: Option<u64>,
    /// Raw clock syscalls made from the code (x86_64, i386, arm64): `syscall`,
    /// `int 0x80`, `sysenter`, `svc #0` or libc's `syscall()` with a clock
    /// syscall number, outside the runtime's own clock functions.
    pub clock_sites: u32,
    /// The sites themselves, [vsyscall] calls first, at most [`MAX_SITES`].
    pub sites: Vec<Site>,
    /// Code was scanned (false when no executable section could be read).
    pub code_scanned: bool,
    /// A separate debug-info file (its code sections are NOBITS): not a program.
    pub debug_only: bool,
}

impl ExeInfo {
    /// No PT_INTERP: the C library was linked in at build time.
    pub fn is_static(&self) -> bool {
        self.interp.is_none()
    }

    pub fn linkage(&self) -> Linkage {
        if self.is_library() {
            return Linkage::Dynamic;
        }
        match (&self.interp, self.has_dynamic) {
            (Some(_), _) => Linkage::Dynamic,
            (None, true) if self.elf_type == ET_DYN => Linkage::StaticPie,
            (None, _) => Linkage::Static,
        }
    }

    /// A shared library rather than a program: ET_DYN without DF_1_PIE and
    /// without an interpreter (glibc's libc.so.6 has one and is a library
    /// too: its soname says so).
    pub fn is_library(&self) -> bool {
        if self.elf_type != ET_DYN || self.pie {
            return false;
        }
        self.interp.is_none() || self.soname.as_deref().is_some_and(|s| s.starts_with("libc.so"))
    }

    /// The architecture as Debian names it (`amd64`, `arm64`, `armhf`, `ppc64el`...).
    pub fn arch(&self) -> String {
        crate::arch::arch_name(self.machine, self.is_64, self.little_endian, self.flags)
    }

    /// Whether the call-site scan decodes this file's code.
    pub fn code_decodable(&self) -> bool {
        Isa::of(self.machine, self.is_64, self.little_endian).is_some()
    }

    /// The dynamic linker itself (`ld-linux-x86-64.so.2`, `ld-musl-*.so.1`).
    pub fn is_dynamic_linker(&self) -> bool {
        self.soname.as_deref().is_some_and(is_loader_name)
    }
}

fn is_loader_name(name: &str) -> bool {
    name.starts_with("ld-linux") || name.starts_with("ld-musl") || name == "ld.so.1" || name.starts_with("ld64.so")
}

const ET_DYN: u16 = 3;
const SHT_NOBITS: u32 = 8;
const SHF_EXECINSTR: u64 = 4;

/// Header-sized reads are capped so hostile headers cannot make us allocate.
const MAX_PHDRS: usize = 256;
const MAX_SHDRS: usize = 4096;
const MAX_DYNAMIC: u64 = 64 * 1024;
const MAX_STRING: usize = 4096;
const MAX_SHSTRTAB: u64 = 64 * 1024;
/// How much of a file we scan for markers and code, in 1 MiB chunks.
pub const SCAN_LIMIT: u64 = 64 << 20;
const CHUNK: usize = 1 << 20;
/// `go version` looks for the buildinfo blob in the first 64 KiB of the data.
const GO_SEARCH: usize = 64 * 1024;
const GO_MAGIC: &[u8] = b"\xff Go buildinf:";

fn pread(file: &File, offset: u64, len: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let Some(at) = offset.checked_add(done as u64) else { break };
        match file.read_at(&mut buf[done..], at) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from_io("executable", e, Hint::CheckReadable)),
        }
    }
    buf.truncate(done);
    Ok(buf)
}

fn bad(detail: impl Into<String>) -> Error {
    Error::malformed("executable", detail)
}

fn cstr_at(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes.split(|&b| b == 0).next().unwrap_or(&[])).into_owned()
}

/// The parsed headers, for the readers below.
struct Headers {
    is_64: bool,
    le: bool,
    phdrs: Vec<ProgramHeader>,
    loads: Vec<elf::Load>,
    shdrs: Vec<(String, SectionHeader)>,
}

impl Headers {
    /// File offset of a virtual address, through the PT_LOAD that holds it.
    fn offset_of(&self, vaddr: u64, len: u64) -> Option<u64> {
        elf::offset_in(&self.loads, vaddr, len)
    }

    fn word(&self, b: &[u8]) -> u64 {
        let w = if self.is_64 { 8 } else { 4 };
        let mut v = [0u8; 8];
        if self.le {
            v[..w].copy_from_slice(&b[..w]);
            u64::from_le_bytes(v)
        } else {
            v[8 - w..].copy_from_slice(&b[..w]);
            u64::from_be_bytes(v)
        }
    }

    fn section(&self, name: &str) -> Option<&SectionHeader> {
        self.shdrs.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }
}

/// Read an ELF file's headers and classify it. Total: any bytes give `Ok`
/// or `Err(Malformed)`; reads are bounded.
pub fn read(file: &File) -> Result<ExeInfo> {
    let head = pread(file, 0, 64)?;
    if head.len() < 52 || head.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(bad("not an ELF file"));
    }
    let ident = elf::ident(&head).ok_or_else(|| bad("unknown ELF class or data encoding"))?;
    let header = goblin::elf::Elf::parse_header(&head).map_err(|e| bad(e.to_string()))?;
    let (is_64, le, ctx) = (ident.is_64, ident.little_endian, ident.ctx());
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
    let shdrs = read_sections(file, &header, ctx).unwrap_or_default();
    let h = Headers { is_64, le, loads: elf::loads(&phdrs), phdrs, shdrs };

    let interp = match h.phdrs.iter().find(|p| p.p_type == PT_INTERP) {
        Some(p) => Some(cstr_at(&pread(file, p.p_offset, (p.p_filesz as usize).min(MAX_STRING))?)),
        None => None,
    };
    let dynamic = match h.phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) {
        Some(d) => Some(read_dynamic(file, d, &h)?),
        None => None,
    };
    let (needed, soname, flags_1) = dynamic.clone().unwrap_or_default();
    let debug_only = h.section(".text").is_some_and(|s| s.sh_type == SHT_NOBITS);
    let mut info = ExeInfo {
        is_64,
        machine: header.e_machine,
        little_endian: le,
        flags: header.e_flags,
        elf_type: header.e_type,
        interp,
        needed,
        soname,
        pie: flags_1 & DF_1_PIE != 0,
        has_dynamic: dynamic.is_some(),
        libc: LibcKind::Unknown,
        libc_version: None,
        go: None,
        vdso_lookup: false,
        vsyscall_sites: 0,
        vsyscall_first: None,
        clock_sites: 0,
        sites: Vec::new(),
        code_scanned: false,
        debug_only,
    };
    if debug_only {
        return Ok(info);
    }
    info.go = read_go_buildinfo(file, &h).ok().flatten();
    if let Some(go) = &mut info.go {
        // Before Go 1.18 the blob has no build settings: a Go binary with an
        // interpreter was linked by the system linker for cgo.
        if go.cgo.is_none() {
            go.cgo = Some(info.interp.is_some());
        }
        info.libc = LibcKind::Go;
        info.libc_version = Some(go.version.clone());
    } else {
        let markers = scan_markers(file, &info)?;
        info.vdso_lookup = markers.vdso_lookup;
        info.libc = classify(info.interp.as_deref(), &info.needed, info.soname.as_deref()).unwrap_or(markers.libc);
        info.libc_version = markers.version;
    }
    if let Some(isa) = Isa::of(info.machine, is_64, le) {
        let scan = scan_calls(file, &h, &info, isa)?;
        let mut sites = scan.sites;
        sites.sort_by_key(|s| (s.via != Via::Vsyscall, s.addr));
        let vsyscall = sites.iter().filter(|s| s.via == Via::Vsyscall).count();
        info.vsyscall_sites = vsyscall.try_into().unwrap_or(u32::MAX);
        info.vsyscall_first = sites.first().filter(|s| s.via == Via::Vsyscall).map(|s| s.addr);
        info.clock_sites = (sites.len() - vsyscall).try_into().unwrap_or(u32::MAX);
        sites.truncate(MAX_SITES);
        info.sites = sites;
        info.code_scanned = scan.scanned;
    }
    Ok(info)
}

/// Section headers with their names; empty when absent or out of bounds
/// (stripped binaries may have none: the readers fall back to segments).
fn read_sections(file: &File, header: &goblin::elf::Header, ctx: Ctx) -> Option<Vec<(String, SectionHeader)>> {
    let shsize = SectionHeader::size(ctx);
    let count = header.e_shnum as usize;
    if header.e_shoff == 0 || count == 0 || count > MAX_SHDRS || header.e_shentsize as usize != shsize {
        return None;
    }
    let table = pread(file, header.e_shoff, count * shsize).ok()?;
    if table.len() < count * shsize {
        return None;
    }
    // goblin reads offset 0 as "no section headers": parse behind one pad byte.
    let mut padded = Vec::with_capacity(table.len() + 1);
    padded.push(0);
    padded.extend_from_slice(&table);
    let shdrs = SectionHeader::parse(&padded, 1, count, ctx).ok()?;
    let strtab = shdrs.get(header.e_shstrndx as usize)?;
    let names = pread(file, strtab.sh_offset, strtab.sh_size.min(MAX_SHSTRTAB) as usize).ok()?;
    Some(shdrs.into_iter().map(|s| (names.get(s.sh_name..).map(cstr_at).unwrap_or_default(), s)).collect())
}

/// DT_NEEDED names, DT_SONAME and DT_FLAGS_1.
fn read_dynamic(file: &File, dynamic: &ProgramHeader, h: &Headers) -> Result<(Vec<String>, Option<String>, u64)> {
    let bytes = pread(file, dynamic.p_offset, dynamic.p_filesz.min(MAX_DYNAMIC) as usize)?;
    let w = if h.is_64 { 8 } else { 4 };
    let mut needed_offsets = Vec::new();
    let (mut strtab, mut soname, mut flags_1) = (None, None, 0);
    for pair in bytes.chunks_exact(2 * w) {
        let (tag, val) = (h.word(&pair[..w]), h.word(&pair[w..]));
        match tag {
            0 => break,
            DT_NEEDED => needed_offsets.push(val),
            DT_STRTAB => strtab = Some(val),
            DT_SONAME => soname = Some(val),
            DT_FLAGS_1 => flags_1 = val,
            _ => {}
        }
    }
    // DT_STRTAB is a virtual address: find the PT_LOAD that holds it.
    let Some(strtab_off) = strtab.and_then(|v| h.offset_of(v, 1)) else { return Ok((Vec::new(), None, flags_1)) };
    let string = |off: u64| -> Result<String> { Ok(cstr_at(&pread(file, strtab_off.saturating_add(off), 256)?)) };
    let mut names = Vec::new();
    for off in needed_offsets.into_iter().take(256) {
        names.push(string(off)?);
    }
    let soname = soname.map(string).transpose()?;
    Ok((names, soname, flags_1))
}

/// The C library from the interpreter, DT_NEEDED and DT_SONAME; None when
/// they say nothing (a static binary).
pub fn classify(interp: Option<&str>, needed: &[String], soname: Option<&str>) -> Option<LibcKind> {
    let has = |pat: &str| needed.iter().any(|n| n.contains(pat));
    let so = |pat: &str| soname.is_some_and(|s| s.starts_with(pat));
    if so("libc.musl")
        || so("ld-musl")
        || so("libc.so") && !so("libc.so.6") && interp.is_some_and(|i| i.contains("musl"))
    {
        return Some(LibcKind::Musl);
    }
    if so("libc.so.6") || so("ld-linux") {
        return Some(LibcKind::Glibc);
    }
    let interp = interp.unwrap_or("");
    if interp.contains("ld-musl") || has("libc.musl") {
        Some(LibcKind::Musl)
    } else if has("libc.so.6") || interp.contains("ld-linux") {
        Some(LibcKind::Glibc)
    } else if interp.contains("/system/bin/linker") || has("libc.so") && interp.is_empty() && has("liblog.so") {
        Some(LibcKind::Bionic)
    } else if !interp.is_empty() {
        Some(LibcKind::Unknown)
    } else {
        None
    }
}

/// Go's build information blob (`\xff Go buildinf:`), read as `go version`
/// does: in `.go.buildinfo`, else the first 64 KiB of the first writable
/// segment, at a 16-byte boundary. Two layouts:
/// - Go ≥ 1.18 (flag bit 2): the version and module info follow the 32-byte
///   header inline, each a uvarint length and the bytes;
/// - before: two pointers (pointer size at byte 14, big-endian flag in byte
///   15) to Go string headers {data, len} for the version and module info.
fn read_go_buildinfo(file: &File, h: &Headers) -> Result<Option<GoInfo>> {
    let data_off = match h.section(".go.buildinfo") {
        Some(s) if s.sh_type != SHT_NOBITS => s.sh_offset,
        _ => match h.phdrs.iter().find(|p| p.p_type == PT_LOAD && p.p_flags & PF_W != 0) {
            Some(p) => p.p_offset,
            None => return Ok(None),
        },
    };
    let data = pread(file, data_off, GO_SEARCH)?;
    let Some(at) = (0..data.len()).step_by(16).find(|&i| data[i..].starts_with(GO_MAGIC)) else { return Ok(None) };
    let blob = &data[at..];
    if blob.len() < 32 {
        return Ok(None);
    }
    let (ptr_size, flags) = (blob[14] as usize, blob[15]);
    let (version, modinfo) = if flags & 2 != 0 {
        let (version, rest) = uvarint_string(&blob[32..]).ok_or_else(|| bad("Go buildinfo: bad version"))?;
        let modinfo = uvarint_string(rest).map(|(m, _)| m).unwrap_or_default();
        (version.to_vec(), modinfo.to_vec())
    } else {
        if ptr_size != 4 && ptr_size != 8 || blob.len() < 16 + 2 * ptr_size {
            return Ok(None);
        }
        let big = flags & 1 != 0;
        let word = |b: &[u8]| -> u64 {
            let mut v = [0u8; 8];
            if big {
                v[8 - ptr_size..].copy_from_slice(&b[..ptr_size]);
                u64::from_be_bytes(v)
            } else {
                v[..ptr_size].copy_from_slice(&b[..ptr_size]);
                u64::from_le_bytes(v)
            }
        };
        // *string → {data, len} → bytes, each through the PT_LOADs.
        let read_string = |ptr: u64, max: u64| -> Result<Vec<u8>> {
            let Some(off) = h.offset_of(ptr, 2 * ptr_size as u64) else { return Ok(Vec::new()) };
            let hdr = pread(file, off, 2 * ptr_size)?;
            if hdr.len() < 2 * ptr_size {
                return Ok(Vec::new());
            }
            let (data, len) = (word(&hdr), word(&hdr[ptr_size..]));
            match h.offset_of(data, len) {
                Some(off) if len <= max => pread(file, off, len as usize),
                _ => Ok(Vec::new()),
            }
        };
        (read_string(word(&blob[16..]), 256)?, read_string(word(&blob[16 + ptr_size..]), GO_SEARCH as u64)?)
    };
    let version = String::from_utf8_lossy(&version).into_owned();
    if version.is_empty() {
        return Ok(None);
    }
    let has = |m: &[u8]| modinfo.windows(m.len()).any(|w| w == m);
    let cgo = if has(b"CGO_ENABLED=1") {
        Some(true)
    } else if has(b"CGO_ENABLED=0") {
        Some(false)
    } else {
        None
    };
    Ok(Some(GoInfo { version, cgo }))
}

/// A uvarint-length-prefixed string and what follows it.
fn uvarint_string(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (mut len, mut shift, mut i) = (0u64, 0u32, 0usize);
    loop {
        let byte = *b.get(i)?;
        i += 1;
        len |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
    let end = i.checked_add(usize::try_from(len).ok()?)?;
    Some((b.get(i..end)?, b.get(end..)?))
}

/// What a marker scan found.
struct Markers {
    libc: LibcKind,
    vdso_lookup: bool,
    version: Option<String>,
}

/// Look for what each runtime leaves in a file, where the headers do not
/// tell: a static binary (glibc names itself with `GLIBC_TUNABLES`; musl does
/// not, but its clock_gettime looks the vDSO up by name, so
/// `__vdso_clock_gettime` without a glibc marker is taken as musl), and the C
/// library itself (glibc's banner "release version 2.36", musl's dynamic
/// linker "musl libc" with its version).
fn scan_markers(file: &File, info: &ExeInfo) -> Result<Markers> {
    const GLIBC: &[&[u8]] = &[b"GLIBC_TUNABLES", b"GLIBC_PRIVATE"];
    // The name its C library looks clock_gettime up by in this
    // architecture's vDSO (`__kernel_clock_gettime` on arm64, ppc, s390).
    let lookup = crate::arch::vdso_symbol(info.machine, info.is_64, crate::arch::TimeFn::ClockGettime)
        .unwrap_or("__vdso_clock_gettime");
    let vdso_lookup_name = lookup.as_bytes();
    const GLIBC_BANNER: &[u8] = b"release version ";
    const MUSL_BANNER: &[u8] = b"musl libc (";
    let static_like = info.interp.is_none() && !info.is_library();
    let libc_itself = info.soname.as_deref().is_some_and(|s| {
        s.starts_with("libc.so") || s.starts_with("libc.musl") || s.starts_with("ld-musl") || s.starts_with("ld-linux")
    });
    let mut m = Markers { libc: LibcKind::Unknown, vdso_lookup: false, version: None };
    if !static_like && !libc_itself {
        return Ok(m);
    }
    let mut glibc = false;
    let overlap = 64;
    let mut offset = 0u64;
    let has = |buf: &[u8], needle: &[u8]| memchr::memmem::find(buf, needle);
    while offset < SCAN_LIMIT {
        let buf = pread(file, offset, CHUNK)?;
        glibc |= GLIBC.iter().any(|g| has(&buf, g).is_some());
        m.vdso_lookup |= has(&buf, vdso_lookup_name).is_some();
        if m.version.is_none() {
            if let Some(i) = has(&buf, GLIBC_BANNER) {
                m.version = version_at(&buf[i + GLIBC_BANNER.len()..]);
            } else if let Some(i) = has(&buf, MUSL_BANNER) {
                // ld-musl's usage text: "musl libc (x86_64)\nVersion %s\n..."; the
                // version string itself sits near it in .rodata.
                let near = &buf[i.saturating_sub(256)..(i + 256).min(buf.len())];
                m.version = near.split(|&b| b == 0).find_map(|s| {
                    let s = std::str::from_utf8(s).ok()?;
                    (s.split('.').count() == 3
                        && s.split('.').all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit())))
                    .then(|| s.to_string())
                });
            }
        }
        if buf.len() < CHUNK {
            break;
        }
        offset += (CHUNK - overlap) as u64;
    }
    m.libc = if glibc {
        LibcKind::Glibc
    } else if m.vdso_lookup {
        LibcKind::Musl
    } else {
        LibcKind::Unknown
    };
    Ok(m)
}

/// `2.36.` → `2.36`.
fn version_at(b: &[u8]) -> Option<String> {
    let end = b.iter().position(|c| !(c.is_ascii_digit() || *c == b'.')).unwrap_or(b.len().min(16));
    let v = String::from_utf8_lossy(&b[..end]).trim_end_matches('.').to_string();
    v.contains('.').then_some(v)
}

/// The instruction sets whose code the call-site scan decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// x86 in 64-bit (x86_64) or 32-bit (i386) mode: [`code`].
    X86(u32),
    /// A64, little-endian: [`code_a64`].
    A64,
}

impl Isa {
    /// The decoder for an ELF machine, class and byte order, if there is one.
    pub fn of(machine: u16, is_64: bool, little_endian: bool) -> Option<Isa> {
        use crate::arch::machine;
        match (machine, is_64, little_endian) {
            (machine::X86_64, true, true) => Some(Isa::X86(64)),
            (machine::I386, false, true) => Some(Isa::X86(32)),
            (machine::AARCH64, true, true) => Some(Isa::A64),
            _ => None,
        }
    }

    fn x86_64(self) -> bool {
        self == Isa::X86(64)
    }
}

/// The legacy [vsyscall] entry points (x86_64): gettimeofday, time, getcpu.
pub const VSYSCALL_ENTRIES: [u64; 3] = code::VSYSCALL_ENTRIES;

/// Sites kept per file (all are counted).
pub const MAX_SITES: usize = 32;
/// Sites decoded again from their enclosing function's start, per file.
const MAX_PRECISE: usize = 256;
/// A function decoded from its start when the site is this close to it.
const MAX_FUNCTION: u64 = 64 * 1024;
/// Bytes read of a symbol or relocation table in one go, and in all.
const TABLE_CHUNK: usize = 256 * 1024;
const MAX_TABLE: u64 = 64 << 20;
/// `.dynstr`/`.strtab` bytes searched for the name `syscall`.
const MAX_STRTAB: u64 = 16 << 20;

const SHT_SYMTAB: u32 = 2;
const SHT_RELA: u32 = 4;
const SHT_REL: u32 = 9;
const SHT_DYNSYM: u32 = 11;

/// What the call-site scan found.
struct CallScan {
    sites: Vec<Site>,
    scanned: bool,
}

/// A readable, loaded range of code: file offset, size, virtual address.
#[derive(Clone, Copy)]
struct Range {
    off: u64,
    size: u64,
    addr: u64,
}

/// The executable sections (or PF_X segments of a file without sections).
fn code_ranges(h: &Headers) -> Vec<Range> {
    let mut ranges: Vec<Range> = h
        .shdrs
        .iter()
        .filter(|(_, s)| s.sh_flags & SHF_EXECINSTR != 0 && s.sh_type != SHT_NOBITS && s.sh_size > 0)
        .map(|(_, s)| Range { off: s.sh_offset, size: s.sh_size, addr: s.sh_addr })
        .collect();
    if ranges.is_empty() {
        ranges = h
            .phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD && p.p_flags & PF_X != 0 && p.p_filesz > 0)
            .map(|p| Range { off: p.p_offset, size: p.p_filesz, addr: p.p_vaddr })
            .collect();
    }
    ranges
}

/// Call every symbol of a symbol table section, read in bounded chunks.
fn for_each_symbol(
    file: &File,
    h: &Headers,
    table: &SectionHeader,
    mut f: impl FnMut(&goblin::elf::Sym),
) -> Result<()> {
    let ident = elf::Ident { is_64: h.is_64, little_endian: h.le, machine: 0 };
    let size = goblin::elf::Sym::size(ident.ctx().container) as u64;
    let total = table.sh_size.min(MAX_TABLE);
    let chunk = (TABLE_CHUNK as u64 / size) * size;
    let mut done = 0;
    while done < total {
        let buf = pread(file, table.sh_offset.saturating_add(done), (total - done).min(chunk) as usize)?;
        if buf.is_empty() {
            break;
        }
        for sym in elf::symbols_in(&buf, ident.ctx()) {
            f(&sym);
        }
        done += buf.len() as u64;
        if (buf.len() as u64) < chunk {
            break;
        }
    }
    Ok(())
}

/// The offsets of the exact name `name` in a string table section, read
/// in bounded chunks.
fn name_offsets(file: &File, strtab: &SectionHeader, name: &[u8]) -> Result<Vec<usize>> {
    // Linkers merge a name into the tail of a longer one (`syscall` into
    // `__libc_syscall`): any occurrence followed by its NUL is the name.
    let mut needle = name.to_vec();
    needle.push(0);
    let total = strtab.sh_size.min(MAX_STRTAB);
    let mut out = Vec::new();
    let mut done = 0u64;
    while done < total {
        let buf = pread(file, strtab.sh_offset.saturating_add(done), (total - done).min(TABLE_CHUNK as u64) as usize)?;
        out.extend(memchr::memmem::find_iter(&buf, &needle).map(|i| done as usize + i));
        if buf.len() < TABLE_CHUNK || buf.len() <= needle.len() {
            break;
        }
        done += (buf.len() - needle.len()) as u64;
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The NUL-terminated string at `at` of a string table section.
fn string_at(file: &File, strtab: &SectionHeader, at: u64) -> Option<String> {
    if at >= strtab.sh_size {
        return None;
    }
    let b = pread(file, strtab.sh_offset.checked_add(at)?, 512.min((strtab.sh_size - at) as usize)).ok()?;
    Some(cstr_at(&b))
}

/// Where calls of libc's `syscall()` land in this file: the function's own
/// address in a static binary (`.symtab`), else the GOT slots its
/// relocations fill (`-fno-plt` calls read them) and the PLT stubs that
/// jump through those slots.
fn syscall_targets(file: &File, h: &Headers, isa: Isa, fixed: bool) -> Result<Targets> {
    let mut t = Targets { vsyscall: isa.x86_64(), vsyscall_rel32: isa.x86_64() && fixed, ..Targets::default() };
    let linked = |i: u32| h.shdrs.get(i as usize).map(|(_, s)| s.clone());
    // A defined `syscall` function (static binaries, libc itself).
    if let Some((_, symtab)) = h.shdrs.iter().find(|(_, s)| s.sh_type == SHT_SYMTAB) {
        if let Some(strtab) = linked(symtab.sh_link) {
            let names = name_offsets(file, &strtab, b"syscall")?;
            if !names.is_empty() {
                for_each_symbol(file, h, symtab, |s| {
                    if names.contains(&s.st_name) && s.st_shndx != 0 && elf::is_function(s) {
                        t.syscall_fn.push(s.st_value);
                    }
                })?;
            }
        }
    }
    // An imported one: the dynamic symbol's index, its relocations, the stubs.
    let Some((_, dynsym)) = h.shdrs.iter().find(|(_, s)| s.sh_type == SHT_DYNSYM) else { return Ok(t) };
    let Some(dynstr) = linked(dynsym.sh_link) else { return Ok(t) };
    let names = name_offsets(file, &dynstr, b"syscall")?;
    if names.is_empty() {
        return Ok(t);
    }
    let mut index = 0u32;
    let mut imported = Vec::new();
    for_each_symbol(file, h, dynsym, |s| {
        if names.contains(&s.st_name) && s.st_shndx == 0 {
            imported.push(index);
        }
        index = index.wrapping_add(1);
    })?;
    if imported.is_empty() {
        return Ok(t);
    }
    let ident = elf::Ident { is_64: h.is_64, little_endian: h.le, machine: 0 };
    for (_, rel) in h.shdrs.iter().filter(|(_, s)| matches!(s.sh_type, SHT_RELA | SHT_REL)) {
        let rela = rel.sh_type == SHT_RELA;
        let entry = if h.is_64 { 8 } else { 4 } * if rela { 3 } else { 2 };
        let (chunk, total) = ((TABLE_CHUNK / entry * entry) as u64, rel.sh_size.min(MAX_TABLE));
        let mut done = 0u64;
        while done < total {
            let bytes = pread(file, rel.sh_offset.saturating_add(done), (total - done).min(chunk) as usize)?;
            for (slot, sym) in elf::relocations_in(&bytes, ident, rela) {
                if imported.contains(&sym) {
                    t.syscall_got.push(slot);
                }
            }
            if (bytes.len() as u64) < chunk {
                break;
            }
            done += chunk;
        }
    }
    // i386 PIC stubs jump through %ebx, which holds the .got.plt address.
    let got_plt = h.section(".got.plt").map(|s| s.sh_addr);
    for (name, plt) in h.shdrs.iter().filter(|(n, _)| n.starts_with(".plt")) {
        if plt.sh_type == SHT_NOBITS || plt.sh_size > 4 << 20 {
            continue;
        }
        let bytes = pread(file, plt.sh_offset, plt.sh_size as usize)?;
        let _ = name;
        let stubs = match isa {
            Isa::X86(bits) => code::plt_stubs(&bytes, plt.sh_addr, bits, &t.syscall_got, got_plt),
            Isa::A64 => code_a64::plt_stubs(&bytes, plt.sh_addr, &t.syscall_got),
        };
        t.syscall_fn.extend(stubs);
    }
    Ok(t)
}

/// The function symbols enclosing each address (`.symtab`, else `.dynsym`):
/// (start, name) for each, in the order of `addrs`.
fn enclosing(file: &File, h: &Headers, addrs: &[u64]) -> Result<Vec<Option<(u64, String)>>> {
    let table = h
        .shdrs
        .iter()
        .find(|(_, s)| s.sh_type == SHT_SYMTAB)
        .or_else(|| h.shdrs.iter().find(|(_, s)| s.sh_type == SHT_DYNSYM))
        .map(|(_, s)| s.clone());
    let mut best: Vec<Option<(u64, usize)>> = vec![None; addrs.len()];
    let Some(table) = table else { return Ok(vec![None; addrs.len()]) };
    for_each_symbol(file, h, &table, |s| {
        if !elf::is_function(s) || s.st_shndx == 0 || s.st_value == 0 {
            return;
        }
        for (i, &a) in addrs.iter().enumerate() {
            let inside = a >= s.st_value && (s.st_size == 0 || a - s.st_value < s.st_size);
            // The closest start; a sized symbol over an unsized one at the same address.
            if inside && best[i].is_none_or(|(v, _)| s.st_value > v) {
                best[i] = Some((s.st_value, s.st_name));
            }
        }
    })?;
    let strtab = h.shdrs.get(table.sh_link as usize).map(|(_, s)| s.clone());
    Ok(best
        .into_iter()
        .map(|b| {
            let (start, name) = b?;
            Some((start, string_at(file, strtab.as_ref()?, name as u64)?))
        })
        .collect())
}

/// Whether `name` is one of a runtime's own clock functions, whose raw
/// syscall is the fallback of its vDSO call: by exact name (after glibc's
/// `__GI_` alias prefix and a symbol version), never by pattern, so a
/// program's own `read_time` or `my_clock_gettime` is judged on its code.
/// glibc: `__clock_gettime` (`__clock_gettime64` on 32-bit),
/// `__gettimeofday`, `time`, `__clock_getres`, `sched_getcpu` and their
/// public aliases; musl: `__clock_gettime`, `clock_getres`,
/// `clock_getcpuclockid` (its clock_getres checks a CPU-time clock id); Go's runtime
/// package (`runtime.nanotime1`, `runtime.walltime`, `runtime.vdso*`) and
/// its `time.now` (linknamed into the runtime), whose names a program cannot take.
fn runtime_clock_function(name: &str) -> bool {
    const C: &[&str] = &[
        "clock_gettime",
        "__clock_gettime",
        "__clock_gettime64",
        "__clock_gettime_time64",
        "gettimeofday",
        "__gettimeofday",
        "__gettimeofday64",
        "__gettimeofday_time64",
        "time",
        "__time",
        "__time64",
        "clock_getres",
        "__clock_getres",
        "__clock_getres64",
        "__clock_getres_time64",
        "sched_getcpu",
        "__sched_getcpu",
        // They validate a CPU-time clock id with clock_getres (musl).
        "clock_getcpuclockid",
        "__clock_getcpuclockid",
        "pthread_getcpuclockid",
        "getcpu",
        "__getcpu",
    ];
    let name = name.split('@').next().unwrap_or(name);
    let name = name.strip_suffix(".abi0").unwrap_or(name);
    if let Some(go) = name.strip_prefix("runtime.") {
        return go.starts_with("nanotime") || go.starts_with("walltime") || go.starts_with("vdso");
    }
    if name == "time.now" {
        return true;
    }
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    C.contains(&name)
}

/// Whether the raw site at `addr`, in code with no symbol for it, is a
/// runtime's clock function trying its vDSO pointer first
/// ([`code::pointer_guarded`], [`code_a64::pointer_guarded`]).
fn guarded_fallback(file: &File, h: &Headers, isa: Isa, addr: u64) -> bool {
    for before in [code::GUARD as u64, 256, 128, 64] {
        let from = addr.saturating_sub(before);
        let Some(off) = h.offset_of(from, before) else { continue };
        let Ok(bytes) = pread(file, off, before as usize) else { return false };
        return match isa {
            Isa::X86(bits) => code::pointer_guarded(&bytes, from, bits, bytes.len()),
            Isa::A64 => code_a64::pointer_guarded(&bytes, from, bytes.len(), code::GUARD),
        };
    }
    false
}

/// Find the real [vsyscall] calls and clock syscalls in a file's code
/// (x86_64, i386 or arm64, as `isa` says): candidates by bytes, each decoded in a
/// window before it, then the sites found decoded again from their
/// enclosing function's start and named by it.
fn scan_calls(file: &File, h: &Headers, info: &ExeInfo, isa: Isa) -> Result<CallScan> {
    let ranges = code_ranges(h);
    let scanned = !ranges.is_empty();
    let fixed = info.elf_type != ET_DYN;
    let targets = syscall_targets(file, h, isa, fixed).unwrap_or(Targets {
        vsyscall: isa.x86_64(),
        vsyscall_rel32: isa.x86_64() && fixed,
        ..Targets::default()
    });
    // The C library itself serves the clock reads: its raw clock syscalls
    // are its fallbacks, not a bypass. So are a linked-in runtime's.
    let libc_itself = info.is_dynamic_linker()
        || info.soname.as_deref().is_some_and(|s| {
            s.starts_with("libc.so")
                || s.starts_with("libc.musl")
                || s.starts_with("linux-vdso")
                || s.starts_with("linux-gate")
        });
    let own_runtime = info.libc == LibcKind::Go
        || info.interp.is_none() && !info.is_library() && matches!(info.libc, LibcKind::Glibc | LibcKind::Musl);
    let mut found: std::collections::BTreeMap<u64, Site> = Default::default();
    let mut budget = SCAN_LIMIT;
    'ranges: for r in &ranges {
        let size = r.size.min(budget);
        budget -= size;
        let mut done = 0u64;
        while done < size {
            // Each chunk owns [done, done + CHUNK) and reads a margin on both sides.
            let start = done.saturating_sub(code::BEFORE as u64);
            let end = (done + CHUNK as u64 + code::AFTER as u64).min(size);
            let Some(at) = r.off.checked_add(start) else { break };
            let buf = pread(file, at, (end - start) as usize)?;
            let skip = (done - start) as usize;
            if buf.len() <= skip {
                break;
            }
            let owned = skip..(skip + CHUNK).min(buf.len());
            let base = r.addr.wrapping_add(start);
            for site in window_sites(&buf, base, isa, &targets, &owned) {
                found.entry(site.addr).or_insert(site);
            }
            done = start + buf.len() as u64;
            if done >= size || (buf.len() as u64) < end - start {
                break;
            }
            done = start + owned.end as u64;
        }
        if budget == 0 {
            break 'ranges;
        }
    }
    let mut sites: Vec<Site> = found.into_values().collect();
    if libc_itself {
        sites.retain(|s| s.via == Via::Vsyscall);
    }
    if sites.is_empty() {
        return Ok(CallScan { sites, scanned });
    }
    // The precise pass: each site's function decoded from its start, with
    // its branch targets as block starts.
    sites.truncate(MAX_PRECISE);
    let addrs: Vec<u64> = sites.iter().map(|s| s.addr).collect();
    let funcs = enclosing(file, h, &addrs).unwrap_or_else(|_| vec![None; addrs.len()]);
    let mut out = Vec::new();
    for (mut site, func) in sites.into_iter().zip(funcs) {
        if let Some((start, name)) = func {
            let len = site.addr - start;
            if len <= MAX_FUNCTION {
                if let Some(off) = h.offset_of(start, len) {
                    let bytes = pread(file, off, (len + code::AFTER as u64) as usize)?;
                    if let Some(precise) = function_sites(&bytes, start, isa, &targets, len as usize) {
                        match precise.into_iter().find(|p| p.addr == site.addr) {
                            Some(p) => site = p,
                            None => continue,
                        }
                    }
                }
            }
            site.symbol = Some(name);
        }
        // A program with its runtime linked in: that runtime's clock
        // functions, by name. A library: the clock functions it defines (a
        // C library without a soname, musl's libc.so). Stripped code has
        // no names: a site is excused only where the runtime is known to
        // call the vDSO (a static C library that looks it up, Go) and the
        // site has the shape of its clock function's fallback (a pointer
        // tested, called, then the syscall); any other is reported by
        // address, so a stripped static program's own raw call is seen.
        let excused = match site.symbol.as_deref() {
            Some(name) => (own_runtime || info.is_library()) && runtime_clock_function(name),
            None => {
                own_runtime
                    && (info.vdso_lookup || info.libc == LibcKind::Go)
                    && guarded_fallback(file, h, isa, site.addr)
            }
        };
        if site.via != Via::Vsyscall && excused {
            continue;
        }
        out.push(site);
    }
    Ok(CallScan { sites: out, scanned })
}

/// The first pass over one chunk of code: candidates by bytes in `owned`,
/// each decoded in a window before it.
fn window_sites(buf: &[u8], base: u64, isa: Isa, t: &Targets, owned: &std::ops::Range<usize>) -> Vec<Site> {
    let mut out = Vec::new();
    match isa {
        Isa::X86(bits) => {
            for c in code::candidates(buf, base, bits, t).into_iter().filter(|c| owned.contains(c)) {
                let Some(from) = code::sync_start(buf, base, bits, c) else { continue };
                out.extend(code::analyze(buf, base, bits, from, c + code::AFTER, t, &[]));
            }
        }
        Isa::A64 => {
            for c in code_a64::candidates(buf, base, t).into_iter().filter(|c| owned.contains(c)) {
                out.extend(code_a64::analyze(buf, base, c.saturating_sub(code::BEFORE), c + code::AFTER, t, &[]));
            }
        }
    }
    out
}

/// The precise pass over one function (`bytes` from its start at `start`):
/// its sites with its branch targets as block starts, or None when
/// decoding from the start does not land on the site at `at`.
fn function_sites(bytes: &[u8], start: u64, isa: Isa, t: &Targets, at: usize) -> Option<Vec<Site>> {
    match isa {
        Isa::X86(bits) => {
            if !code::lands_on(bytes, bits, at) {
                return None;
            }
            let blocks = code::branch_targets(bytes, start, bits);
            Some(code::analyze(bytes, start, bits, 0, bytes.len(), t, &blocks))
        }
        Isa::A64 => {
            if start % 4 != 0 || at % 4 != 0 {
                return None;
            }
            let blocks = code_a64::branch_targets(bytes, start);
            Some(code_a64::analyze(bytes, start, 0, bytes.len(), t, &blocks))
        }
    }
}

/// Read a file by path: a regular file only, never through a final symlink
/// (the paths come from a process's maps, under its /proc/PID/root, and it
/// may swap one for a FIFO or a link meanwhile: see
/// [`crate::inspect::file::open_regular`]).
pub fn read_path(path: &Path) -> Result<ExeInfo> {
    let (file, _) =
        crate::inspect::file::open_regular(path).map_err(|e| Error::from_io(path, e, Hint::CheckReadable))?;
    read(&file)
}

/// What really runs in a process, when its /proc/PID/exe is not the program.
#[derive(Debug, Clone)]
pub enum Launch {
    /// The executable is the program.
    Direct,
    /// `ld.so PROG`: the dynamic linker is the exe; the program is mapped.
    Loader { loader: PathBuf, program: PathBuf },
    /// An emulator or instrumenter runs the program (valgrind, qemu-user, ...).
    Emulator { tool: String, program: Option<String> },
}

/// The runtime of a live process: its executable, or the program ld.so or
/// an emulator runs, with the info of what actually serves its clock reads.
#[derive(Debug, Clone)]
pub struct ProcessRuntime {
    pub launch: Launch,
    /// The path whose ELF `info` describes.
    pub path: Option<PathBuf>,
    pub info: ExeInfo,
    /// The version of the C library the process has mapped (dynamic programs).
    pub mapped_libc: Option<(LibcKind, Option<String>, PathBuf)>,
}

/// Emulator names recognised from the executable's file name.
fn emulator_of(exe: &Path) -> Option<String> {
    let name = exe.file_name()?.to_string_lossy().into_owned();
    let in_valgrind = exe.components().any(|c| c.as_os_str().to_string_lossy().contains("valgrind"));
    const TOOLS: &[&str] =
        &["memcheck", "helgrind", "drd", "cachegrind", "callgrind", "massif", "dhat", "lackey", "none", "exp-bbv"];
    if let Some(tool) = TOOLS.iter().find(|t| name.starts_with(&format!("{t}-")) && name.ends_with("-linux")) {
        if in_valgrind || name.matches('-').count() >= 2 {
            return Some(format!("valgrind ({tool})"));
        }
    }
    if name.starts_with("qemu-") {
        return Some(format!("qemu-user ({name})"));
    }
    for t in ["box64", "box86", "FEXInterpreter", "FEXLoader", "blink"] {
        if name == t {
            return Some(t.to_string());
        }
    }
    None
}

/// The program argument after a launcher's own options in `cmdline`.
fn program_arg(argv: &[String], options_with_value: &[&str]) -> Option<String> {
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            return it.next().cloned();
        }
        if a.starts_with('-') {
            if options_with_value.contains(&a.as_str()) {
                it.next();
            }
            continue;
        }
        return Some(a.clone());
    }
    None
}

/// Read what really runs in `process`.
pub fn process_runtime(process: &Process) -> Result<ProcessRuntime> {
    let exe = process.exe_file()?;
    let exe_info = read(&exe)?;
    let exe_path = process.exe_path();
    let argv: Vec<String> = process
        .read_file("cmdline")
        .map(|b| {
            b.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
        })
        .unwrap_or_default();
    let maps = process.maps().unwrap_or_default();
    let root = process.proc_path("root");
    let in_root = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
    let mapped_libc = maps.iter().find_map(|m| {
        let name = m.path.as_deref()?;
        let file = Path::new(name).file_name()?.to_string_lossy().into_owned();
        if !(file.starts_with("libc.so") || file.starts_with("libc.musl") || file.starts_with("ld-musl")) {
            return None;
        }
        let info = read_path(&in_root(Path::new(name))).ok()?;
        Some((info.libc, info.libc_version, PathBuf::from(name)))
    });
    // Any other tool that maps no [vdso] but runs another program it has
    // mapped (an emulator vdsoctl does not know by name) is named by its exe.
    let no_vdso = !maps.iter().any(|m| m.name() == "[vdso]");
    let guest = || {
        maps.iter().filter_map(|m| m.path.as_deref()).filter(|p| p.starts_with('/')).find(|p| {
            Some(Path::new(p)) != exe_path.as_deref()
                && read_path(&in_root(Path::new(p))).is_ok_and(|i| !i.is_library() && !i.debug_only)
        })
    };
    let tool = exe_path.as_deref().and_then(emulator_of).or_else(|| {
        let name = exe_path.as_deref()?.file_name()?.to_string_lossy().into_owned();
        (no_vdso && guest().is_some()).then_some(name)
    });
    if let Some(tool) = tool {
        let program = program_arg(&argv, &["--tool", "--log-file", "-L", "-cpu", "-E", "-U"])
            .or_else(|| guest().map(str::to_string));
        return Ok(ProcessRuntime {
            launch: Launch::Emulator { tool, program },
            path: exe_path,
            info: exe_info,
            mapped_libc,
        });
    }
    if exe_info.is_dynamic_linker() {
        let loader = exe_path.clone().unwrap_or_default();
        let candidate = program_arg(
            &argv,
            &["--library-path", "--preload", "--audit", "--argv0", "--glibc-hwcaps-mask", "--glibc-hwcaps-prepend"],
        );
        // The program is a file mapping that is not the loader and not a
        // library: prefer the one the command line names.
        let mapped: Vec<&str> = maps.iter().filter_map(|m| m.path.as_deref()).filter(|p| p.starts_with('/')).collect();
        let mut seen = Vec::new();
        let mut best = None;
        for p in mapped {
            if seen.contains(&p) || Some(Path::new(p)) == exe_path.as_deref() {
                continue;
            }
            seen.push(p);
            let Ok(info) = read_path(&in_root(Path::new(p))) else { continue };
            if info.is_library() || info.debug_only {
                continue;
            }
            let named = candidate.as_deref().is_some_and(|c| Path::new(p).file_name() == Path::new(c).file_name());
            if best.is_none() || named {
                best = Some((PathBuf::from(p), info));
            }
            if named {
                break;
            }
        }
        if let Some((program, mut info)) = best {
            if info.libc_version.is_none() {
                info.libc_version =
                    mapped_libc.as_ref().filter(|(k, _, _)| *k == info.libc).and_then(|(_, v, _)| v.clone());
            }
            return Ok(ProcessRuntime {
                launch: Launch::Loader { loader, program: program.clone() },
                path: Some(program),
                info,
                mapped_libc,
            });
        }
    }
    let mut info = exe_info;
    if info.libc_version.is_none() {
        info.libc_version = mapped_libc.as_ref().filter(|(k, _, _)| *k == info.libc).and_then(|(_, v, _)| v.clone());
    }
    Ok(ProcessRuntime { launch: Launch::Direct, path: exe_path, info, mapped_libc })
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
            assert_eq!(info.linkage(), Linkage::Dynamic);
            assert!(!info.is_library());
        }
        assert!(info.code_scanned);
        assert_eq!(info.vsyscall_sites, 0);
    }

    #[test]
    fn classification() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(classify(Some("/lib/ld-musl-x86_64.so.1"), &n(&["libc.so"]), None), Some(LibcKind::Musl));
        assert_eq!(classify(Some("/lib64/ld-linux-x86-64.so.2"), &n(&["libc.so.6"]), None), Some(LibcKind::Glibc));
        assert_eq!(classify(None, &[], Some("libc.so.6")), Some(LibcKind::Glibc));
        assert_eq!(classify(None, &[], None), None);
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

    #[test]
    fn vsyscall_scan_counts_each_site_once_across_chunks() {
        // One PF_X segment of 2 MiB + a bit, sites straddling the first chunk
        // boundary (the scan reads 1 MiB chunks overlapping by 9 bytes).
        let mut f = go_elf(&[], &[]);
        let code_off = 0x1000usize;
        let size = 2 * CHUNK + 300;
        f.resize(code_off + size, 0x90);
        let ph = 64;
        f[ph + 4..ph + 8].copy_from_slice(&(PF_X | 4).to_le_bytes());
        f[ph + 32..ph + 40].copy_from_slice(&(size as u64).to_le_bytes());
        // mov $0xffffffffff600400,%rax; call *%rax (the call 7 bytes in)
        let mov = [0x48, 0xc7, 0xc0, 0x00, 0x04, 0x60, 0xff, 0xff, 0xd0];
        // movabs $0xffffffffff600000,%rax; call *%rax (the call 10 bytes in)
        let movabs = [0x48, 0xb8, 0x00, 0x00, 0x60, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xd0];
        // the address as data after a ret: no call
        let data = [0xc3, 0x00, 0x04, 0x60, 0xff, 0xff, 0xff, 0xff, 0xff];
        for (at, bytes) in [
            (CHUNK - 12, &mov[..]),
            (CHUNK - 3, &movabs[..]),
            (CHUNK + 50, &mov[..]),
            (CHUNK + 500, &data[..]),
            (2 * CHUNK - 8, &mov[..]),
        ] {
            f[code_off + at..code_off + at + bytes.len()].copy_from_slice(bytes);
        }
        let info = read_bytes(&f);
        assert!(info.code_scanned);
        assert_eq!(info.vsyscall_sites, 4, "{:?}", info.sites);
        assert_eq!(info.vsyscall_first, Some(0x501000 + (CHUNK - 12 + 7) as u64));
        assert_eq!(info.sites[1].addr, 0x501000 + (CHUNK - 3 + 10) as u64);
        // Truncated: the segment claims more than the file has; no endless loop.
        f.truncate(code_off + CHUNK + 20);
        assert_eq!(read_bytes(&f).vsyscall_sites, 2, "the two sites before the cut");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Any damage to a real executable's first 8 KiB (headers, tables,
        /// the start of the code) is an Ok or an Err, never a panic.
        #[test]
        fn damaged_executables_never_panic(
            edits in proptest::collection::vec((0usize..8192, proptest::prelude::any::<u8>()), 1..64),
            cut in 64usize..200_000,
        ) {
            static OWN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
            let own = OWN.get_or_init(|| pread(&File::open("/proc/self/exe").unwrap(), 0, 200_000).unwrap());
            let mut bytes = own[..cut.min(own.len())].to_vec();
            for (at, b) in edits {
                if let Some(x) = bytes.get_mut(at) {
                    *x = b;
                }
            }
            let f = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(f.path(), &bytes).unwrap();
            let _ = read(&File::open(f.path()).unwrap());
        }

        /// Any Go buildinfo blob after the magic (flags, pointer sizes,
        /// lengths, pointers) is read or refused, never a panic.
        #[test]
        fn any_go_buildinfo_never_panics(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut blob = GO_MAGIC.to_vec();
            blob.extend_from_slice(&tail);
            let _ = read_bytes(&go_elf(&blob, &[]));
        }
    }

    #[test]
    fn uvarint_strings() {
        let b = [8, b'g', b'o', b'1', b'.', b'1', b'9', b'.', b'8', 2, b'a', b'b'];
        let (v, rest) = uvarint_string(&b).unwrap();
        assert_eq!(v, b"go1.19.8");
        assert_eq!(uvarint_string(rest).unwrap().0, b"ab");
        assert!(uvarint_string(&[0x80]).is_none());
        assert!(uvarint_string(&[5, b'a']).is_none());
        assert!(uvarint_string(&[0xff; 12]).is_none());
    }

    /// A minimal ELF64 file with one PT_LOAD (RW) holding a buildinfo blob.
    fn go_elf(blob: &[u8], strings: &[(u64, &[u8])]) -> Vec<u8> {
        let mut f = vec![0u8; 0x2000];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2; // 64-bit
        f[5] = 1; // little-endian
        f[6] = 1;
        f[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        f[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86_64
        f[20..24].copy_from_slice(&1u32.to_le_bytes());
        f[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        f[52..54].copy_from_slice(&64u16.to_le_bytes());
        f[54..56].copy_from_slice(&56u16.to_le_bytes());
        f[56..58].copy_from_slice(&1u16.to_le_bytes()); // one phdr
        let ph = 64;
        f[ph..ph + 4].copy_from_slice(&PT_LOAD.to_le_bytes());
        f[ph + 4..ph + 8].copy_from_slice(&(PF_W | 4).to_le_bytes());
        f[ph + 8..ph + 16].copy_from_slice(&0x1000u64.to_le_bytes()); // p_offset
        f[ph + 16..ph + 24].copy_from_slice(&0x501000u64.to_le_bytes()); // p_vaddr
        f[ph + 32..ph + 40].copy_from_slice(&0x1000u64.to_le_bytes()); // p_filesz
        f[ph + 40..ph + 48].copy_from_slice(&0x1000u64.to_le_bytes());
        f[0x1000..0x1000 + blob.len()].copy_from_slice(blob);
        for (vaddr, bytes) in strings {
            let off = (vaddr - 0x501000 + 0x1000) as usize;
            f[off..off + bytes.len()].copy_from_slice(bytes);
        }
        f
    }

    fn read_bytes(bytes: &[u8]) -> ExeInfo {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), bytes).unwrap();
        read(&File::open(f.path()).unwrap()).unwrap()
    }

    #[test]
    fn go_buildinfo_inline_format() {
        let mut blob = GO_MAGIC.to_vec();
        blob.extend_from_slice(&[8, 2]);
        blob.resize(32, 0);
        blob.push(8);
        blob.extend_from_slice(b"go1.21.0");
        let modinfo = b"path\thello\nbuild\tCGO_ENABLED=0\n";
        blob.push(modinfo.len() as u8);
        blob.extend_from_slice(modinfo);
        let info = read_bytes(&go_elf(&blob, &[]));
        assert_eq!(info.libc, LibcKind::Go);
        assert_eq!(info.go, Some(GoInfo { version: "go1.21.0".into(), cgo: Some(false) }));
        assert_eq!(info.linkage(), Linkage::Static);
    }

    #[test]
    fn go_buildinfo_pointer_format() {
        // Go 1.17 and older: pointers to {data, len} string headers.
        let mut blob = GO_MAGIC.to_vec();
        blob.extend_from_slice(&[8, 0]);
        blob.extend_from_slice(&0x501100u64.to_le_bytes()); // *version
        blob.extend_from_slice(&0x501200u64.to_le_bytes()); // *modinfo
        let version_hdr = [0x501300u64.to_le_bytes(), 9u64.to_le_bytes()].concat();
        let modinfo_hdr = [0x501400u64.to_le_bytes(), 4u64.to_le_bytes()].concat();
        let strings: [(u64, &[u8]); 4] =
            [(0x501100, &version_hdr), (0x501200, &modinfo_hdr), (0x501300, b"go1.16.15"), (0x501400, b"path")];
        let info = read_bytes(&go_elf(&blob, &strings));
        assert_eq!(info.go, Some(GoInfo { version: "go1.16.15".into(), cgo: Some(false) }));
        // A pointer outside every segment is no version, not a panic.
        let mut blob2 = GO_MAGIC.to_vec();
        blob2.extend_from_slice(&[8, 0]);
        blob2.extend_from_slice(&u64::MAX.to_le_bytes());
        blob2.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(read_bytes(&go_elf(&blob2, &[])).go, None);
    }

    #[test]
    fn emulators_by_name() {
        assert_eq!(
            emulator_of(Path::new("/usr/libexec/valgrind/memcheck-amd64-linux")).as_deref(),
            Some("valgrind (memcheck)")
        );
        assert_eq!(
            emulator_of(Path::new("/usr/bin/qemu-x86_64-static")).as_deref(),
            Some("qemu-user (qemu-x86_64-static)")
        );
        assert_eq!(emulator_of(Path::new("/usr/bin/bash")), None);
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            program_arg(&argv(&["valgrind.bin", "-q", "--tool", "drd", "./w", "x"]), &["--tool"]).as_deref(),
            Some("./w")
        );
        assert_eq!(
            program_arg(&argv(&["ld.so", "--library-path", "/x", "./p"]), &["--library-path"]).as_deref(),
            Some("./p")
        );
        assert_eq!(program_arg(&argv(&["ld.so"]), &[]), None);
    }
}
