//! What an executable or shared library says about its clock reads: ELF
//! class and machine, static, static-pie or dynamic (PT_INTERP), the
//! libraries it needs, which runtime does its clock_gettime (glibc, musl, Go,
//! other) and its version, whether a static C library in it looks the vDSO
//! up, and where its code (x86_64, i386, arm64) calls the fixed [vsyscall]
//! page or makes raw clock syscalls (decoded by [`crate::inspect::code`] for
//! x86 and [`crate::inspect::code_a64`] for arm64, each site with its
//! address and enclosing function).
//!
//! The ELF structures (header, program and section headers, dynamic entries,
//! symbols, relocations) are read by the crate's one ELF reader,
//! [`crate::inspect::elf::read`], every table with a bounded `pread`, so a
//! hostile header cannot make us allocate or read without bound, and an
//! executable of hundreds of MiB is never read whole: markers and code are
//! scanned in 1 MiB chunks up to [`SCAN_LIMIT`], symbol and relocation
//! tables in 256 KiB chunks.

use crate::error::{Error, Hint, Result};
use crate::inspect::code::{self, Targets};
pub use crate::inspect::code::{Site, Via};
use crate::inspect::code_a64;
use crate::inspect::elf::read::{self as elf_read, HeaderError, Headers, SectionTable, Source};
use crate::inspect::elf::{self, dt, Section, SegmentKind, ET_DYN, SHT_DYNSYM, SHT_REL, SHT_RELA, SHT_SYMTAB};
use crate::inspect::Process;
use serde::Serialize;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The C library (or runtime) that serves a program's clock reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LibcKind {
    Glibc,
    Musl,
    Bionic,
    /// Go programs call the vDSO from their own runtime, with or without cgo.
    Go,
    /// Nothing recognised.
    #[default]
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
    /// The program reads random bytes with the getrandom syscall: its
    /// function table names `internal/syscall/unix.GetRandom`, what
    /// crypto/rand reads through (the linker keeps only what is reached).
    /// `None`: not looked for (Go ≥ 1.24, whose crypto/rand reads the vDSO).
    pub getrandom: Option<bool>,
}

/// Where a file's code was read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Its executable sections (SHF_EXECINSTR).
    #[default]
    Sections,
    /// No section headers (`e_shoff` 0, as a stripped-to-the-bone or
    /// packed program has): its executable PT_LOAD segments, imports from
    /// its dynamic section.
    NoSections,
    /// Section headers it names but that cannot be read (out of the file,
    /// a bad entry size or string table): its segments, as without.
    BadSections,
}

/// A file shorter than its headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Truncated {
    /// Its size in bytes.
    pub size: u64,
    /// Where the furthest thing its headers describe ends.
    pub described: u64,
}

/// Facts about an ELF file relevant to the vDSO fast path; the default is
/// a 32-bit file of machine 0 in which nothing was found yet.
#[derive(Debug, Clone, Default, Serialize)]
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
    /// A static C library in the file (or the C library itself) names its
    /// architecture's vDSO getrandom (`__vdso_getrandom`, `__kernel_getrandom`):
    /// it reads random bytes from the vDSO (glibc ≥ 2.41).
    pub random_lookup: bool,
    /// Code sites that call or jump into the fixed [vsyscall] page (x86_64 only).
    pub vsyscall_sites: u32,
    /// The first such site's virtual address.
    pub vsyscall_first: Option<u64>,
    /// Raw clock and getrandom syscalls made from the code (x86_64, i386,
    /// arm64): `syscall`, `int 0x80`, `sysenter`, `svc #0` or libc's
    /// `syscall()` with such a syscall number, outside the runtime's own
    /// clock and random functions.
    pub clock_sites: u32,
    /// The sites themselves, [vsyscall] calls first, at most [`MAX_SITES`].
    pub sites: Vec<Site>,
    /// Code was scanned (false when no executable section could be read).
    pub code_scanned: bool,
    /// Where its code was found: its executable sections, or its
    /// executable PT_LOAD segments when it has no section headers or they
    /// cannot be read.
    pub layout: Layout,
    /// The file ends before what its headers describe (a segment, the
    /// section header table, a section): its code was not all read.
    pub truncated: Option<Truncated>,
    /// A separate debug-info file (its code sections are NOBITS): not a program.
    pub debug_only: bool,
    /// The runtimes it carries beside its C library (rustix, the getrandom
    /// crate, OpenSSL, libuv, CPython...), each with its release where the
    /// file says it ([`scan_carried`]).
    pub carried: Vec<Carried>,
    /// The vDSO functions whose C library entry (`clock_getres`,
    /// `sched_getcpu`) it imports (undefined in `.dynsym`): where the C
    /// library's own path has a per-architecture gap ([`imported_entries`]).
    pub imports: Vec<crate::arch::VdsoFn>,
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

/// Bytes of the interpreter's path read.
const MAX_STRING: usize = 4096;
/// How much of a file we scan for markers and code, in 1 MiB chunks.
pub const SCAN_LIMIT: u64 = 64 << 20;
const CHUNK: usize = 1 << 20;
/// `go version` looks for the buildinfo blob in the first 64 KiB of the data.
const GO_SEARCH: usize = 64 * 1024;
const GO_MAGIC: &[u8] = b"\xff Go buildinf:";

/// `len` bytes at `offset`, fewer at the end of the file.
fn pread(file: &File, offset: u64, len: usize) -> Result<Vec<u8>> {
    file.read_at(offset, len).map_err(io_error)
}

fn io_error(e: std::io::Error) -> Error {
    Error::from_io("executable", e, Hint::CheckReadable)
}

fn bad(detail: impl Into<String>) -> Error {
    Error::malformed("executable", detail)
}

/// The headers through the one ELF reader, its refusals in this module's words.
fn headers(file: &File) -> Result<Headers> {
    elf_read::headers(file).map_err(|e| match e {
        HeaderError::NotElf => bad("not an ELF file"),
        HeaderError::Ident => bad("unknown ELF class or data encoding"),
        HeaderError::Header(e) => bad(e),
        HeaderError::TooManySegments(count) => bad(format!("{count} program headers")),
        HeaderError::SegmentsShort => bad("program headers past the end of the file"),
        HeaderError::Io(e) => io_error(e),
    })
}

/// Read an ELF file's headers and classify it. Total: any bytes give `Ok`
/// or `Err(Malformed)`; reads are bounded.
pub fn read(file: &File) -> Result<ExeInfo> {
    let h = headers(file)?;
    let layout = match h.table {
        SectionTable::Read => Layout::Sections,
        SectionTable::Absent => Layout::NoSections,
        SectionTable::Unreadable => Layout::BadSections,
    };
    let truncated = truncation(file, &h)?;
    let interp = match h.segment(SegmentKind::Interp) {
        Some(p) => Some(elf_read::string(file, p.offset, (p.filesz as usize).min(MAX_STRING)).map_err(io_error)?),
        None => None,
    };
    let dynamic = read_dynamic(file, &h)?;
    let (needed, soname, flags_1) = dynamic.clone().unwrap_or_default();
    let debug_only = h.section(".text").is_some_and(|s| !s.has_bytes());
    let (id, header) = (h.ident(), h.header);
    let mut info = ExeInfo {
        is_64: id.is_64,
        machine: id.machine,
        little_endian: id.little_endian,
        flags: header.flags,
        elf_type: header.elf_type,
        interp,
        needed,
        soname,
        pie: flags_1 & dt::DF_1_PIE != 0,
        has_dynamic: dynamic.is_some(),
        debug_only,
        layout,
        truncated,
        ..ExeInfo::default()
    };
    if debug_only {
        return Ok(info);
    }
    runtime(file, &h, &mut info)?;
    info.carried = scan_carried(file, &h, &info)?;
    info.imports = imported_entries(file, &h)?;
    if let Some(isa) = Isa::of(info.machine, id.is_64, id.little_endian) {
        sites(file, &h, &mut info, isa)?;
    }
    Ok(info)
}

/// The runtime: Go by its buildinfo, else the C library by the
/// interpreter, DT_NEEDED, DT_SONAME and the markers in the file.
fn runtime(file: &File, h: &Headers, info: &mut ExeInfo) -> Result<()> {
    info.go = read_go_buildinfo(file, h).ok().flatten();
    if let Some(go) = &mut info.go {
        // Before Go 1.18 the blob has no build settings: a Go binary with an
        // interpreter was linked by the system linker for cgo.
        if go.cgo.is_none() {
            go.cgo = Some(info.interp.is_some());
        }
        info.libc = LibcKind::Go;
        info.libc_version = Some(go.version.clone());
        let go_since =
            crate::arch::route(crate::arch::VdsoFn::Getrandom, crate::arch::Runtime::Go).and_then(|r| r.since);
        if go_version(&go.version).zip(go_since).is_some_and(|(v, since)| v < since) {
            go.getrandom = Some(scan_for(file, GO_GETRANDOM)?);
        }
    } else {
        let markers = scan_markers(file, info)?;
        info.vdso_lookup = markers.vdso_lookup;
        info.random_lookup = markers.random_lookup;
        info.libc = classify(info.interp.as_deref(), &info.needed, info.soname.as_deref()).unwrap_or(markers.libc);
        info.libc_version = markers.version;
    }
    Ok(())
}

/// Where the code calls the clock: the sites, [vsyscall] ones first.
fn sites(file: &File, h: &Headers, info: &mut ExeInfo, isa: Isa) -> Result<()> {
    let scan = scan_calls(file, h, info, isa)?;
    let mut sites = scan.sites;
    sites.sort_by_key(|s| (s.via != Via::Vsyscall, s.addr));
    let vsyscall = sites.iter().filter(|s| s.via == Via::Vsyscall).count();
    info.vsyscall_sites = vsyscall.try_into().unwrap_or(u32::MAX);
    info.vsyscall_first = sites.first().filter(|s| s.via == Via::Vsyscall).map(|s| s.addr);
    info.clock_sites = (sites.len() - vsyscall).try_into().unwrap_or(u32::MAX);
    sites.truncate(MAX_SITES);
    info.sites = sites;
    info.code_scanned = scan.scanned;
    Ok(())
}

/// Whether the file ends before what its headers describe: a PT_LOAD's
/// bytes, the section header table, a section with bytes in the file.
fn truncation(file: &File, h: &Headers) -> Result<Option<Truncated>> {
    let size = file.metadata().map_err(io_error)?.len();
    let header = &h.header;
    let loads = h.segments.iter().filter(|p| p.kind == SegmentKind::Load).map(|p| p.offset.saturating_add(p.filesz));
    let table =
        (header.shoff != 0).then(|| header.shoff.saturating_add(u64::from(header.shnum) * u64::from(header.shentsize)));
    let sections = h.sections.iter().filter(|s| s.has_bytes()).map(|s| s.offset.saturating_add(s.size));
    let described = loads.chain(table).chain(sections).max().unwrap_or(0);
    Ok((described > size).then_some(Truncated { size, described }))
}

/// DT_NEEDED names, DT_SONAME and DT_FLAGS_1; None without PT_DYNAMIC.
#[allow(clippy::type_complexity)]
fn read_dynamic(file: &File, h: &Headers) -> Result<Option<(Vec<String>, Option<String>, u64)>> {
    let Some(entries) = elf_read::dynamic(file, h).map_err(io_error)? else { return Ok(None) };
    let mut needed_offsets = Vec::new();
    let (mut strtab, mut soname, mut flags_1) = (None, None, 0);
    for (tag, val) in entries {
        match tag {
            dt::NEEDED => needed_offsets.push(val),
            dt::STRTAB => strtab = Some(val),
            dt::SONAME => soname = Some(val),
            dt::FLAGS_1 => flags_1 = val,
            _ => {}
        }
    }
    // DT_STRTAB is a virtual address: find the PT_LOAD that holds it.
    let Some(strtab_off) = strtab.and_then(|v| h.offset_of(v, 1)) else {
        return Ok(Some((Vec::new(), None, flags_1)));
    };
    let string = |off: u64| elf_read::string(file, strtab_off.saturating_add(off), 256).map_err(io_error);
    let mut names = Vec::new();
    for off in needed_offsets.into_iter().take(256) {
        names.push(string(off)?);
    }
    let soname = soname.map(string).transpose()?;
    Ok(Some((names, soname, flags_1)))
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
        Some(s) if s.has_bytes() => s.offset,
        _ => match h.segments.iter().find(|p| p.kind == SegmentKind::Load && p.writable()) {
            Some(p) => p.offset,
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
    Ok(Some(GoInfo { version, cgo, getrandom: None }))
}

/// The function Go's crypto/rand makes its getrandom syscall in (Go 1.17
/// to 1.23; `crypto/rand.batched` before that calls it too).
const GO_GETRANDOM: &[u8] = b"internal/syscall/unix.GetRandom";

/// `go1.19.8` → (1, 19); `devel …` and other shapes: None.
pub fn go_version(v: &str) -> Option<(u32, u32)> {
    let mut it = v.strip_prefix("go")?.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// Whether `needle` is in the file's first [`SCAN_LIMIT`] bytes (1 MiB
/// chunks, overlapping by the needle's length).
fn scan_for(file: &File, needle: &[u8]) -> Result<bool> {
    let mut offset = 0u64;
    while offset < SCAN_LIMIT {
        let buf = pread(file, offset, CHUNK)?;
        if memchr::memmem::find(&buf, needle).is_some() {
            return Ok(true);
        }
        if buf.len() < CHUNK {
            break;
        }
        offset += (CHUNK - needle.len()) as u64;
    }
    Ok(false)
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
    random_lookup: bool,
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
    let lookup = crate::arch::vdso_symbol(info.machine, info.is_64, crate::arch::VdsoFn::ClockGettime)
        .unwrap_or("__vdso_clock_gettime");
    let vdso_lookup_name = lookup.as_bytes();
    let random_name = crate::arch::vdso_symbol(info.machine, info.is_64, crate::arch::VdsoFn::Getrandom);
    const GLIBC_BANNER: &[u8] = b"release version ";
    const MUSL_BANNER: &[u8] = b"musl libc (";
    let static_like = info.interp.is_none() && !info.is_library();
    let libc_itself = info.soname.as_deref().is_some_and(|s| {
        s.starts_with("libc.so") || s.starts_with("libc.musl") || s.starts_with("ld-musl") || s.starts_with("ld-linux")
    });
    let mut m = Markers { libc: LibcKind::Unknown, vdso_lookup: false, random_lookup: false, version: None };
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
        m.random_lookup |= random_name.is_some_and(|n| has(&buf, n.as_bytes()).is_some());
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

/// Read a file by path: a regular file only, never through a final symlink
/// (the paths come from a process's maps, under its /proc/PID/root, and it
/// may swap one for a FIFO or a link meanwhile: see
/// [`crate::inspect::file::open_regular`]).
pub fn read_path(path: &Path) -> Result<ExeInfo> {
    let (file, _) =
        crate::inspect::file::open_regular(path).map_err(|e| Error::from_io(path, e, Hint::CheckReadable))?;
    read(&file)
}

mod calls;
mod carried;
mod dynamic;
mod ptracer;
mod runtime;

pub use calls::*;
pub use carried::{release, scan_carried, Carried};
pub use ptracer::{ptrace_user, PtraceUser};
pub use runtime::*;

#[cfg(test)]
mod tests;
