//! Resolve the clock functions of vdsoctl's own vDSO, the way the C library
//! and the Go runtime (`runtime/vdso_linux.go`) do: from the in-memory image
//! at AT_SYSINFO_EHDR (`getauxval(3)`), follow PT_DYNAMIC to the dynamic
//! symbol and string tables, count symbols with DT_HASH or DT_GNU_HASH, and
//! accept a symbol only with the version node the architecture's
//! `vdso.lds.S` gives it (DT_VERSYM/DT_VERDEF) — an unversioned lookup could
//! bind a symbol that is not the ABI we call.
//!
//! The image is trusted kernel memory, but every read is still bounds-checked:
//! the parser is total over any bytes and is tested that way.

use crate::arch::{self, TimeFn, VdsoAbi};
use crate::error::{Error, Result};
use crate::inspect::maps::Mapping;
use crate::measure::sys::call::{VdsoClockFn, VdsoGetcpuFn, VdsoGettimeofdayFn, VdsoImage, VdsoTimeFn};
use serde::Serialize;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_VERDEF: u64 = 0x6fff_fffc;
const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const SHN_UNDEF: u16 = 0;
const VER_FLG_BASE: u16 = 1;
/// Upper bound on symbols and version definitions walked: a vDSO has ~20.
const MAX_ENTRIES: usize = 4096;

/// Which hash table gave the symbol count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HashTable {
    /// SysV DT_HASH (what musl reads).
    Sysv,
    /// DT_GNU_HASH only.
    Gnu,
}

/// One exported clock function, found with the expected version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolved {
    pub function: TimeFn,
    pub name: &'static str,
    /// `None` when the image has no symbol versioning at all.
    pub version: Option<&'static str>,
    /// Offset of the function from the start of the image.
    pub offset: usize,
}

/// What a walk of the dynamic symbol table found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbols {
    pub hash: HashTable,
    pub resolved: Vec<Resolved>,
    /// Expected symbols present but with another version (named, not bound).
    pub wrong_version: Vec<&'static str>,
}

/// A bounds-checked reader over the image in its own class and byte order.
#[derive(Clone, Copy)]
struct Reader<'a> {
    b: &'a [u8],
    is_64: bool,
    le: bool,
}

impl<'a> Reader<'a> {
    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.b.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    fn u8(&self, at: usize) -> Option<u8> {
        self.b.get(at).copied()
    }
    fn u16(&self, at: usize) -> Option<u16> {
        let v = self.bytes::<2>(at)?;
        Some(if self.le { u16::from_le_bytes(v) } else { u16::from_be_bytes(v) })
    }
    fn u32(&self, at: usize) -> Option<u32> {
        let v = self.bytes::<4>(at)?;
        Some(if self.le { u32::from_le_bytes(v) } else { u32::from_be_bytes(v) })
    }
    fn u64(&self, at: usize) -> Option<u64> {
        let v = self.bytes::<8>(at)?;
        Some(if self.le { u64::from_le_bytes(v) } else { u64::from_be_bytes(v) })
    }
    /// An address-sized word (Elf_Addr, Elf_Off, Elf_Xword/Word in Dyn).
    fn word(&self, at: usize) -> Option<u64> {
        if self.is_64 {
            self.u64(at)
        } else {
            self.u32(at).map(u64::from)
        }
    }
    fn cstr(&self, at: usize) -> Option<&'a [u8]> {
        let rest = self.b.get(at..)?;
        let end = rest.iter().take(256).position(|&c| c == 0)?;
        rest.get(..end)
    }
}

fn bad(detail: impl Into<String>) -> Error {
    Error::malformed("the vDSO image", detail)
}

/// The SysV ELF hash (`vd_hash` of a version definition).
fn elf_hash(name: &[u8]) -> u32 {
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

/// Find `abi`'s symbols in a vDSO `image` (bytes from its ELF header on).
pub fn resolve(image: &[u8], abi: &VdsoAbi) -> Result<Symbols> {
    if image.get(..4) != Some(b"\x7fELF") {
        return Err(bad("no ELF magic at AT_SYSINFO_EHDR"));
    }
    let is_64 = match image.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err(bad("unknown ELF class")),
    };
    let le = match image.get(5) {
        Some(1) => true,
        Some(2) => false,
        _ => return Err(bad("unknown ELF data encoding")),
    };
    let r = Reader { b: image, is_64, le };
    let machine = r.u16(18).ok_or_else(|| bad("truncated ELF header"))?;
    if machine != abi.machine || is_64 != abi.is_64 {
        return Err(bad(format!(
            "machine {} class {} is not the expected ABI",
            arch::machine_name(machine),
            if is_64 { 64 } else { 32 }
        )));
    }
    // Program headers: the first PT_LOAD maps vaddrs to image offsets.
    let (phoff, phentsize, phnum) =
        if is_64 { (r.u64(32), r.u16(54), r.u16(56)) } else { (r.u32(28).map(u64::from), r.u16(42), r.u16(44)) };
    let (phoff, phentsize, phnum) = match (phoff, phentsize, phnum) {
        (Some(o), Some(s), Some(n)) => {
            (usize::try_from(o).map_err(|_| bad("e_phoff"))?, usize::from(s), usize::from(n))
        }
        _ => return Err(bad("truncated ELF header")),
    };
    let mut load: Option<(u64, u64)> = None; // (p_offset, p_vaddr)
    let mut dynamic: Option<(u64, u64)> = None; // (p_offset, p_filesz)
    for i in 0..phnum {
        let at = phentsize.checked_mul(i).and_then(|x| x.checked_add(phoff)).ok_or_else(|| bad("e_phoff"))?;
        let p_type = r.u32(at).ok_or_else(|| bad("program header out of bounds"))?;
        let (off, vaddr, filesz) = if is_64 {
            (r.u64(at + 8), r.u64(at + 16), r.u64(at + 32))
        } else {
            (r.u32(at + 4).map(u64::from), r.u32(at + 8).map(u64::from), r.u32(at + 16).map(u64::from))
        };
        let (Some(off), Some(vaddr), Some(filesz)) = (off, vaddr, filesz) else {
            return Err(bad("program header out of bounds"));
        };
        match p_type {
            PT_LOAD if load.is_none() => load = Some((off, vaddr)),
            PT_DYNAMIC => dynamic = Some((off, filesz)),
            _ => {}
        }
    }
    let (load_off, load_vaddr) = load.ok_or_else(|| bad("no PT_LOAD segment"))?;
    let (dyn_off, dyn_size) = dynamic.ok_or_else(|| bad("no PT_DYNAMIC segment"))?;
    // A vaddr from the dynamic section as an offset into the image.
    let to_off = |vaddr: u64| -> Option<usize> {
        let o = vaddr.checked_sub(load_vaddr)?.checked_add(load_off)?;
        usize::try_from(o).ok().filter(|&o| o < image.len())
    };
    let dyn_ent = if is_64 { 16 } else { 8 };
    let word = if is_64 { 8 } else { 4 };
    let (mut strtab, mut symtab, mut hash, mut gnu_hash, mut versym, mut verdef) = (None, None, None, None, None, None);
    let dyn_off = usize::try_from(dyn_off).map_err(|_| bad("PT_DYNAMIC offset"))?;
    let dyn_count = usize::try_from(dyn_size).unwrap_or(usize::MAX) / dyn_ent;
    for i in 0..dyn_count.min(MAX_ENTRIES) {
        let at = dyn_off + i * dyn_ent;
        let (Some(tag), Some(val)) = (r.word(at), r.word(at + word)) else {
            return Err(bad("dynamic section out of bounds"));
        };
        let slot = match tag {
            DT_NULL => break,
            DT_STRTAB => &mut strtab,
            DT_SYMTAB => &mut symtab,
            DT_HASH => &mut hash,
            DT_GNU_HASH => &mut gnu_hash,
            DT_VERSYM => &mut versym,
            DT_VERDEF => &mut verdef,
            _ => continue,
        };
        *slot = Some(to_off(val).ok_or_else(|| bad(format!("dynamic tag {tag:#x} points outside the image")))?);
    }
    let strtab = strtab.ok_or_else(|| bad("no DT_STRTAB"))?;
    let symtab = symtab.ok_or_else(|| bad("no DT_SYMTAB"))?;
    let (nsyms, table) = match (hash, gnu_hash) {
        (Some(h), _) => (r.u32(h + 4).ok_or_else(|| bad("DT_HASH out of bounds"))? as usize, HashTable::Sysv),
        (None, Some(g)) => (gnu_hash_count(&r, g).ok_or_else(|| bad("DT_GNU_HASH out of bounds"))?, HashTable::Gnu),
        (None, None) => return Err(bad("neither DT_HASH nor DT_GNU_HASH")),
    };
    let sym_ent = if is_64 { 24 } else { 16 };
    let mut out = Symbols { hash: table, resolved: Vec::new(), wrong_version: Vec::new() };
    for i in 0..nsyms.min(MAX_ENTRIES) {
        let at = symtab + i * sym_ent;
        let (name, info, shndx, value) = if is_64 {
            (r.u32(at), r.u8(at + 4), r.u16(at + 6), r.u64(at + 8))
        } else {
            (r.u32(at), r.u8(at + 12), r.u16(at + 14), r.u32(at + 4).map(u64::from))
        };
        let (Some(name), Some(info), Some(shndx), Some(value)) = (name, info, shndx, value) else {
            return Err(bad("symbol table out of bounds"));
        };
        let bind = info >> 4;
        if info & 0xf != STT_FUNC || !(bind == STB_GLOBAL || bind == STB_WEAK) || shndx == SHN_UNDEF {
            continue;
        }
        let Some(name) = r.cstr(strtab + name as usize) else { continue };
        let Some(want) = abi.symbols.iter().find(|s| s.name.as_bytes() == name) else { continue };
        let version = match versym {
            None => None,
            Some(vs) => {
                let idx = r.u16(vs + 2 * i).ok_or_else(|| bad("DT_VERSYM out of bounds"))? & 0x7fff;
                let verdef = verdef.ok_or_else(|| bad("DT_VERSYM without DT_VERDEF"))?;
                if !version_matches(&r, verdef, strtab, idx, abi.version) {
                    out.wrong_version.push(want.name);
                    continue;
                }
                Some(abi.version)
            }
        };
        let Some(offset) = to_off(value) else { continue };
        if !out.resolved.iter().any(|x| x.function == want.function) {
            out.resolved.push(Resolved { function: want.function, name: want.name, version, offset });
        }
    }
    Ok(out)
}

/// The number of symbols a DT_GNU_HASH table covers: the highest bucket
/// start, then along its chain to the end marker (low bit set).
fn gnu_hash_count(r: &Reader, at: usize) -> Option<usize> {
    let nbuckets = r.u32(at)? as usize;
    let symoffset = r.u32(at + 4)? as usize;
    let bloom_size = r.u32(at + 8)? as usize;
    let word = if r.is_64 { 8 } else { 4 };
    let buckets = at.checked_add(16)?.checked_add(bloom_size.checked_mul(word)?)?;
    let mut max = 0usize;
    for i in 0..nbuckets.min(MAX_ENTRIES) {
        max = max.max(r.u32(buckets.checked_add(i * 4)?)? as usize);
    }
    if max < symoffset {
        return Some(symoffset);
    }
    let chains = buckets.checked_add(nbuckets.checked_mul(4)?)?;
    for _ in 0..MAX_ENTRIES {
        let c = r.u32(chains.checked_add((max - symoffset).checked_mul(4)?)?)?;
        max += 1;
        if c & 1 != 0 {
            return Some(max);
        }
    }
    None
}

/// Whether version index `idx` is the non-base definition named `want`.
fn version_matches(r: &Reader, verdef: usize, strtab: usize, idx: u16, want: &str) -> bool {
    let mut at = verdef;
    for _ in 0..MAX_ENTRIES {
        let (Some(flags), Some(ndx), Some(hash), Some(aux), Some(next)) =
            (r.u16(at + 2), r.u16(at + 4), r.u32(at + 8), r.u32(at + 12), r.u32(at + 16))
        else {
            return false;
        };
        if flags & VER_FLG_BASE == 0 && ndx & 0x7fff == idx {
            let name = r.u32(at + aux as usize).and_then(|n| r.cstr(strtab + n as usize));
            return hash == elf_hash(want.as_bytes()) && name == Some(want.as_bytes());
        }
        if next == 0 {
            return false;
        }
        at = match at.checked_add(next as usize) {
            Some(a) => a,
            None => return false,
        };
    }
    false
}

/// vdsoctl's own vDSO with its clock functions bound, each `None` when the
/// kernel does not export it (with the expected version).
#[derive(Debug, Clone)]
pub struct OwnVdso {
    pub base: u64,
    pub hash: HashTable,
    pub symbols: Vec<Resolved>,
    pub wrong_version: Vec<&'static str>,
    pub clock_gettime: Option<VdsoClockFn>,
    pub clock_getres: Option<VdsoClockFn>,
    pub gettimeofday: Option<VdsoGettimeofdayFn>,
    pub time: Option<VdsoTimeFn>,
    pub getcpu: Option<VdsoGetcpuFn>,
}

impl OwnVdso {
    /// Resolve from vdsoctl's own `[vdso]` mapping (from /proc/self/maps).
    pub fn open(maps: &[Mapping]) -> Result<OwnVdso> {
        let pid = std::process::id() as i32;
        let mapping = maps.iter().find(|m| m.name() == "[vdso]").ok_or(Error::NoVdso { pid })?;
        let image =
            VdsoImage::own(mapping).ok_or_else(|| bad("AT_SYSINFO_EHDR is not the start of the [vdso] mapping"))?;
        let abi = arch::vdso_abi(arch::HOST_MACHINE, arch::HOST_IS_64)
            .ok_or_else(|| bad("no vDSO symbol table is known for this architecture"))?;
        let syms = resolve(image.bytes(), abi)?;
        let off = |f: TimeFn| syms.resolved.iter().find(|s| s.function == f).map(|s| s.offset);
        Ok(OwnVdso {
            base: mapping.start,
            hash: syms.hash,
            clock_gettime: off(TimeFn::ClockGettime).and_then(|o| image.clock_gettime(o)),
            clock_getres: off(TimeFn::ClockGetres).and_then(|o| image.clock_getres(o)),
            gettimeofday: off(TimeFn::Gettimeofday).and_then(|o| image.gettimeofday(o)),
            time: off(TimeFn::Time).and_then(|o| image.time(o)),
            getcpu: off(TimeFn::Getcpu).and_then(|o| image.getcpu(o)),
            symbols: syms.resolved,
            wrong_version: syms.wrong_version,
        })
    }

    /// Whether the vDSO exports `f`.
    pub fn has(&self, f: TimeFn) -> bool {
        self.symbols.iter().any(|s| s.function == f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::Process;

    fn own_image() -> Vec<u8> {
        let me = Process::open(None).unwrap();
        let m = me.vdso_mapping().unwrap();
        VdsoImage::own(&m).unwrap().bytes().to_vec()
    }

    fn host_abi() -> &'static VdsoAbi {
        arch::vdso_abi(arch::HOST_MACHINE, arch::HOST_IS_64).unwrap()
    }

    #[test]
    fn resolves_own_clock_gettime_with_version() {
        let img = own_image();
        let syms = resolve(&img, host_abi()).unwrap();
        let cg = syms.resolved.iter().find(|s| s.function == TimeFn::ClockGettime).unwrap();
        assert_eq!(cg.version, Some(host_abi().version));
        assert!(cg.offset > 0 && cg.offset < img.len());
        assert!(syms.wrong_version.is_empty());
    }

    #[test]
    fn own_vdso_calls_agree_with_libc() {
        let maps = Process::open(None).unwrap().maps().unwrap();
        let v = OwnVdso::open(&maps).unwrap();
        let f = v.clock_gettime.unwrap();
        let mut ts = crate::measure::sys::call::zero_timespec();
        assert_eq!(f.call(libc::CLOCK_MONOTONIC, &mut ts), 0);
        assert!(ts.tv_sec > 0 || ts.tv_nsec > 0);
        assert_eq!(f.call(10, &mut ts), -libc::EINVAL);
    }

    #[test]
    fn wrong_version_is_not_bound() {
        let img = own_image();
        let abi = VdsoAbi { version: "LINUX_9.9", ..*host_abi() };
        let syms = resolve(&img, &abi).unwrap();
        assert!(syms.resolved.is_empty());
        assert!(!syms.wrong_version.is_empty());
    }

    #[test]
    fn elf_hash_of_version_names() {
        // `readelf -V` of an x86_64 vDSO: LINUX_2.6 hash 0x3ae75f6.
        assert_eq!(elf_hash(b"LINUX_2.6"), 0x03ae_75f6);
    }

    #[test]
    fn garbage_and_truncations_never_panic() {
        let img = own_image();
        for cut in (0..img.len()).step_by(7) {
            let _ = resolve(&img[..cut], host_abi());
        }
        assert!(resolve(b"", host_abi()).is_err());
        assert!(resolve(b"\x7fELF\x02\x01", host_abi()).is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn mutated_images_never_panic(flips in proptest::collection::vec((0usize..8192, proptest::prelude::any::<u8>()), 1..16)) {
            let mut img = own_image();
            for (at, v) in flips {
                let n = img.len();
                img[at % n] = v;
            }
            let _ = resolve(&img, host_abi());
        }
    }
}
