//! Where a binary's code calls the clock: the syscall instructions,
//! `[vsyscall]` loads and libc `syscall()` calls found by a byte search,
//! decoded from their enclosing function, excused by name or by shape.

use super::*;

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
pub(super) const MAX_PRECISE: usize = 256;

/// A function decoded from its start when the site is this close to it.
pub(super) const MAX_FUNCTION: u64 = 64 * 1024;

/// Bytes read of a symbol or relocation table in one go, and in all.
pub(super) const TABLE_CHUNK: usize = 256 * 1024;

pub(super) const MAX_TABLE: u64 = 64 << 20;

/// `.dynstr`/`.strtab` bytes searched for the name `syscall`.
pub(super) const MAX_STRTAB: u64 = 16 << 20;

/// What the call-site scan found.
pub(super) struct CallScan {
    pub(super) sites: Vec<Site>,
    pub(super) scanned: bool,
}

/// A readable, loaded range of code: file offset, size, virtual address.
#[derive(Clone, Copy)]
pub(super) struct Range {
    pub(super) off: u64,
    pub(super) size: u64,
    pub(super) addr: u64,
}

/// The executable sections (or PF_X segments of a file without sections).
pub(super) fn code_ranges(h: &Headers) -> Vec<Range> {
    let mut ranges: Vec<Range> = h
        .sections
        .iter()
        .filter(|s| s.is_code())
        .map(|s| Range { off: s.offset, size: s.size, addr: s.addr })
        .collect();
    if ranges.is_empty() {
        ranges = h
            .segments
            .iter()
            .filter(|p| p.kind == SegmentKind::Load && p.executable() && p.filesz > 0)
            .map(|p| Range { off: p.offset, size: p.filesz, addr: p.vaddr })
            .collect();
    }
    ranges
}

/// Call every symbol of a symbol table section, read in bounded chunks.
pub(super) fn for_each_symbol(file: &File, h: &Headers, table: &Section, f: impl FnMut(&elf::Sym)) -> Result<()> {
    elf_read::for_each_symbol(file, h.ident(), (table.offset, table.size.min(MAX_TABLE)), TABLE_CHUNK, f)
        .map_err(io_error)
}

/// Call every relocation of a relocation table (SHT_RELA when `rela`)
/// `size` bytes at `offset`, read in bounded chunks.
pub(super) fn for_each_relocation(
    file: &File,
    h: &Headers,
    table: (u64, u64, bool),
    f: impl FnMut(u64, u32) -> std::io::Result<()>,
) -> Result<()> {
    elf_read::for_each_relocation(file, h.ident(), table, TABLE_CHUNK, f).map_err(io_error)
}

/// The offsets of the exact name `name` in a string table section, read
/// in bounded chunks.
pub(super) fn name_offsets(file: &File, strtab: &Section, name: &[u8]) -> Result<Vec<usize>> {
    // Linkers merge a name into the tail of a longer one (`syscall` into
    // `__libc_syscall`): any occurrence followed by its NUL is the name.
    let mut needle = name.to_vec();
    needle.push(0);
    let total = strtab.size.min(MAX_STRTAB);
    let mut out = Vec::new();
    let mut done = 0u64;
    while done < total {
        let buf = pread(file, strtab.offset.saturating_add(done), (total - done).min(TABLE_CHUNK as u64) as usize)?;
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
pub(super) fn string_at(file: &File, strtab: &Section, at: u64) -> Option<String> {
    if at >= strtab.size {
        return None;
    }
    elf_read::string(file, strtab.offset.checked_add(at)?, 512.min((strtab.size - at) as usize)).ok()
}

/// Where calls of libc's `syscall()` land in this file: the function's own
/// address in a static binary (`.symtab`), else the GOT slots its
/// relocations fill (`-fno-plt` calls read them) and the PLT stubs that
/// jump through those slots.
pub(super) fn syscall_targets(file: &File, h: &Headers, isa: Isa, fixed: bool) -> Result<Targets> {
    let mut t = Targets { vsyscall: isa.x86_64(), vsyscall_rel32: isa.x86_64() && fixed, ..Targets::default() };
    if h.sections.is_empty() {
        // No section headers: the imports from the dynamic section.
        dynamic::syscall_imports(file, h, isa, &mut t)?;
        return Ok(t);
    }
    // A defined `syscall` function (static binaries, libc itself).
    if let Some(symtab) = h.section_of(SHT_SYMTAB) {
        if let Some(strtab) = h.linked(symtab) {
            let names = name_offsets(file, strtab, b"syscall")?;
            if !names.is_empty() {
                for_each_symbol(file, h, symtab, |s| {
                    if names.contains(&s.name) && s.is_defined() && s.is_function() {
                        t.syscall_fn.push(s.value);
                    }
                })?;
            }
        }
    }
    // An imported one: the dynamic symbol's index, its relocations, the stubs.
    let Some(dynsym) = h.section_of(SHT_DYNSYM) else { return Ok(t) };
    let Some(dynstr) = h.linked(dynsym) else { return Ok(t) };
    let names = name_offsets(file, dynstr, b"syscall")?;
    if names.is_empty() {
        return Ok(t);
    }
    let mut index = 0u32;
    let mut imported = Vec::new();
    for_each_symbol(file, h, dynsym, |s| {
        if names.contains(&s.name) && !s.is_defined() {
            imported.push(index);
        }
        index = index.wrapping_add(1);
    })?;
    if imported.is_empty() {
        return Ok(t);
    }
    for rel in h.sections.iter().filter(|s| matches!(s.kind, SHT_RELA | SHT_REL)) {
        let table = (rel.offset, rel.size.min(MAX_TABLE), rel.kind == SHT_RELA);
        for_each_relocation(file, h, table, |slot, sym| {
            if imported.contains(&sym) {
                t.syscall_got.push(slot);
            }
            Ok(())
        })?;
    }
    // i386 PIC stubs jump through %ebx, which holds the .got.plt address.
    let got_plt = h.section(".got.plt").map(|s| s.addr);
    for plt in h.sections.iter().filter(|s| s.name.starts_with(".plt")) {
        if !plt.has_bytes() || plt.size > 4 << 20 {
            continue;
        }
        let bytes = pread(file, plt.offset, plt.size as usize)?;
        let stubs = match isa {
            Isa::X86(bits) => code::plt_stubs(&bytes, plt.addr, bits, &t.syscall_got, got_plt),
            Isa::A64 => code_a64::plt_stubs(&bytes, plt.addr, &t.syscall_got),
        };
        t.syscall_fn.extend(stubs);
    }
    Ok(t)
}

/// The vDSO functions whose C library entry (`VdsoFn::libc_function`) the
/// file imports: undefined in `.dynsym`, by exact name (a name merged into
/// a longer one's tail, `time` in `mktime`, is another symbol's only when
/// its `st_name` points there).
pub fn imported_entries(file: &File, h: &Headers) -> Result<Vec<crate::arch::VdsoFn>> {
    let mut out = Vec::new();
    let Some(dynsym) = h.section_of(SHT_DYNSYM) else { return Ok(out) };
    let Some(dynstr) = h.linked(dynsym) else { return Ok(out) };
    let mut wanted = Vec::new();
    for f in crate::arch::VdsoFn::ALL {
        for at in name_offsets(file, dynstr, f.libc_function().as_bytes())? {
            wanted.push((at, f));
        }
    }
    if wanted.is_empty() {
        return Ok(out);
    }
    for_each_symbol(file, h, dynsym, |s| {
        if s.is_defined() {
            return;
        }
        for (at, f) in &wanted {
            if *at == s.name && !out.contains(f) {
                out.push(*f);
            }
        }
    })?;
    Ok(out)
}

/// A function symbol: start, size (0: not said) and name.
pub(super) type Func = (u64, u64, String);

/// The function symbols enclosing each address (`.symtab`, else `.dynsym`),
/// in the order of `addrs`.
pub(super) fn enclosing(file: &File, h: &Headers, addrs: &[u64]) -> Result<Vec<Option<Func>>> {
    let table = h.section_of(SHT_SYMTAB).or_else(|| h.section_of(SHT_DYNSYM));
    let mut best: Vec<Option<(u64, u64, usize)>> = vec![None; addrs.len()];
    let Some(table) = table else { return Ok(vec![None; addrs.len()]) };
    for_each_symbol(file, h, table, |s| {
        if !s.is_function() || !s.is_defined() || s.value == 0 {
            return;
        }
        for (i, &a) in addrs.iter().enumerate() {
            let inside = a >= s.value && (s.size == 0 || a - s.value < s.size);
            // The closest start; a sized symbol over an unsized one at the same address.
            if inside && best[i].is_none_or(|(v, _, _)| s.value > v) {
                best[i] = Some((s.value, s.size, s.name));
            }
        }
    })?;
    let strtab = h.linked(table);
    Ok(best
        .into_iter()
        .map(|b| {
            let (start, size, name) = b?;
            Some((start, size, string_at(file, strtab?, name as u64)?))
        })
        .collect())
}

/// A symbol's name without its version (`@GLIBC_2.17`) and Go's ABI
/// wrapper suffix (`.abi0`): what the runtime tables below compare.
fn symbol_base(name: &str) -> &str {
    let name = name.split('@').next().unwrap_or(name);
    name.strip_suffix(".abi0").unwrap_or(name)
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
pub fn runtime_clock_function(name: &str) -> bool {
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
    let name = symbol_base(name);
    if let Some(go) = name.strip_prefix("runtime.") {
        return go.starts_with("nanotime") || go.starts_with("walltime") || go.starts_with("vdso");
    }
    if name == "time.now" {
        return true;
    }
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    C.contains(&name)
}

/// Whether `name` is one of a C library's or Go's own random-bytes
/// functions, whose getrandom syscall is the library's way to them (glibc
/// before 2.41 has no other; 2.41 keeps `getentropy` and malloc's tcache
/// key on the syscall, and the vDSO call's fallback): by exact name, a
/// GCC clone suffix (`.part.0`, `.constprop.0`, `.isra.0`) set aside. glibc:
/// `__getrandom`, `__getrandom_nocancel`, `getentropy`, `arc4random*`,
/// malloc's `tcache_key_initialize` and `ptmalloc_init`; musl: `getrandom`,
/// `getentropy`; Go: `internal/syscall/unix.GetRandom` and the runtime's
/// `vgetrandom*`.
pub fn runtime_random_function(name: &str) -> bool {
    const C: &[&str] = &[
        "getrandom",
        "__getrandom",
        "__getrandom_nocancel",
        "__getrandom_internal",
        "getentropy",
        "__getentropy",
        "arc4random",
        "__arc4random",
        "arc4random_buf",
        "__arc4random_buf",
        "arc4random_uniform",
        "__arc4random_uniform",
        "tcache_key_initialize",
        "ptmalloc_init",
    ];
    let name = symbol_base(name);
    if name == "internal/syscall/unix.GetRandom" || name.starts_with("runtime.vgetrandom") {
        return true;
    }
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    // GCC's clones keep the function's name before the first dot.
    let base = match name.split_once('.') {
        Some((base, clone))
            if [".part.", ".constprop.", ".isra.", ".cold"].iter().any(|c| format!(".{clone}").starts_with(c)) =>
        {
            base
        }
        _ => name,
    };
    C.contains(&base)
}

/// Whether the raw site at `addr`, in code with no symbol for it, is a
/// runtime's clock function trying its vDSO pointer first
/// ([`code::pointer_guarded`], [`code_a64::pointer_guarded`]).
pub(super) fn guarded_fallback(file: &File, h: &Headers, isa: Isa, addr: u64) -> bool {
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

/// The first pass: candidate sites in every code range, chunk by chunk,
/// within [`SCAN_LIMIT`] bytes in all.
fn candidate_sites(file: &File, ranges: &[Range], isa: Isa, targets: &Targets) -> Result<Vec<Site>> {
    let mut found: std::collections::BTreeMap<u64, Site> = Default::default();
    let mut budget = SCAN_LIMIT;
    'ranges: for r in ranges {
        let size = r.size.min(budget);
        budget -= size;
        let mut done = 0u64;
        while done < size {
            // Each chunk owns [done, done + CHUNK) and reads a margin on both sides.
            let start = done.saturating_sub(code::REACH as u64);
            let end = (done + CHUNK as u64 + 2 * code::REACH as u64).min(size);
            let Some(at) = r.off.checked_add(start) else { break };
            let buf = pread(file, at, (end - start) as usize)?;
            let skip = (done - start) as usize;
            if buf.len() <= skip {
                break;
            }
            let owned = skip..(skip + CHUNK).min(buf.len());
            let base = r.addr.wrapping_add(start);
            for site in window_sites(&buf, base, isa, targets, &owned) {
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
    Ok(found.into_values().collect())
}

/// Find the real [vsyscall] calls and clock syscalls in a file's code
/// (x86_64, i386 or arm64, as `isa` says): candidates by bytes, each decoded in a
/// window before it, then the sites found decoded again from their
/// enclosing function's start and named by it.
pub(super) fn scan_calls(file: &File, h: &Headers, info: &ExeInfo, isa: Isa) -> Result<CallScan> {
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
    let mut sites = candidate_sites(file, &ranges, isa, &targets)?;
    if libc_itself {
        sites.retain(|s| s.via == Via::Vsyscall);
    }
    if sites.is_empty() {
        return Ok(CallScan { sites, scanned });
    }
    let mut sites = precise_sites(file, h, isa, &targets, sites)?;
    if libc_itself {
        sites.retain(|s| s.via == Via::Vsyscall);
    }
    let mut out = Vec::new();
    for site in sites {
        // A program with its runtime linked in: that runtime's clock
        // functions, by name. A library: the clock functions it defines (a
        // C library without a soname, musl's libc.so). Stripped code has
        // no names: a site is excused only where the runtime is known to
        // call the vDSO (a static C library that looks it up, Go) and the
        // site has the shape of its clock function's fallback (a pointer
        // tested, called, then the syscall); any other is reported by
        // address, so a stripped static program's own raw call is seen.
        let excused = match site.symbol.as_deref() {
            Some(name) => {
                (own_runtime || info.is_library()) && (runtime_clock_function(name) || runtime_random_function(name))
            }
            // Random bytes: a stripped static runtime's own getrandom
            // (glibc's getentropy and tcache key, every one before 2.41)
            // cannot be told from the program's by its code: excused, the
            // runtime's verdict says what it does.
            None if own_runtime && site.function.is_some_and(|f| f.kind() == crate::arch::FnKind::Random) => true,
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

/// The precise pass: each site's function decoded from its start to its
/// end (its symbol's size; else to just past the site), the constants
/// followed through all of it, and the sites named by it. A site the
/// function's decode does not confirm is dropped; one it finds that the
/// windows did not (a call far from the load before its loop) is added.
fn precise_sites(file: &File, h: &Headers, isa: Isa, targets: &Targets, mut sites: Vec<Site>) -> Result<Vec<Site>> {
    sites.truncate(MAX_PRECISE);
    let addrs: Vec<u64> = sites.iter().map(|s| s.addr).collect();
    let funcs = enclosing(file, h, &addrs).unwrap_or_else(|_| vec![None; addrs.len()]);
    let mut out: std::collections::BTreeMap<u64, Site> = Default::default();
    let mut decoded: Vec<u64> = Vec::new();
    for (site, func) in sites.into_iter().zip(funcs) {
        let Some((start, size, name)) = func else {
            out.entry(site.addr).or_insert(site);
            continue;
        };
        let at = site.addr - start;
        let len = if size > at && size <= MAX_FUNCTION { size } else { at + code::AFTER as u64 };
        let bytes = match h.offset_of(start, len) {
            Some(off) if at <= MAX_FUNCTION => pread(file, off, len as usize)?,
            _ => Vec::new(),
        };
        let named = |mut s: Site| {
            s.symbol = Some(name.clone());
            s
        };
        let precise = if bytes.is_empty() { None } else { function_sites(&bytes, start, isa, targets, at as usize) };
        match precise {
            Some(precise) => {
                if !decoded.contains(&start) {
                    decoded.push(start);
                    for p in precise {
                        out.insert(p.addr, named(p));
                    }
                }
            }
            None => {
                out.entry(site.addr).or_insert_with(|| named(site));
            }
        }
    }
    Ok(out.into_values().collect())
}

/// The first pass over one chunk of code: candidates by bytes in `owned`,
/// each decoded in a window before it.
pub(super) fn window_sites(buf: &[u8], base: u64, isa: Isa, t: &Targets, owned: &std::ops::Range<usize>) -> Vec<Site> {
    let mut out = Vec::new();
    match isa {
        Isa::X86(bits) => {
            for c in code::candidates(buf, base, bits, t).into_iter().filter(|c| owned.contains(c)) {
                let Some(from) = code::window_start(buf, base, bits, c) else { continue };
                out.extend(code::analyze(buf, base, bits, from, code::reach_after(buf, c), t, &[]));
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
pub(super) fn function_sites(bytes: &[u8], start: u64, isa: Isa, t: &Targets, at: usize) -> Option<Vec<Site>> {
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
