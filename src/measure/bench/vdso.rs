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

use crate::arch::{self, VdsoAbi, VdsoFn};
use crate::error::{Error, Result};
use crate::inspect::elf;
use crate::measure::sys::call::{
    BoundSymbol, VdsoClockFn, VdsoGetcpuFn, VdsoGetrandomFn, VdsoGettimeofdayFn, VdsoImage, VdsoTimeFn,
};
use serde::Serialize;

const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const SHN_UNDEF: usize = 0;

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
    pub function: VdsoFn,
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

fn bad(detail: impl Into<String>) -> Error {
    Error::malformed("the vDSO image", detail)
}

/// Find `abi`'s symbols in a vDSO `image` (bytes from its ELF header on),
/// read by [`elf::parse`] — the reader `dump` uses, so both judge one image
/// the same way.
pub fn resolve(image: &[u8], abi: &VdsoAbi) -> Result<Symbols> {
    let img = elf::parse(image).map_err(|e| match e {
        Error::Malformed { detail, .. } => bad(detail),
        other => other,
    })?;
    bind(&img, abi)
}

/// Bind `abi`'s functions in a parsed image as the C library and the Go
/// runtime do: a defined global or weak function, with the ABI's version
/// when the image is versioned (name and `vd_hash` both checked), at an
/// address inside a PT_LOAD segment.
pub fn bind(img: &elf::Image, abi: &VdsoAbi) -> Result<Symbols> {
    if img.machine != abi.machine || img.is_64 != abi.is_64 {
        return Err(bad(format!(
            "machine {} class {} is not the expected ABI",
            arch::machine_name(img.machine),
            if img.is_64 { 64 } else { 32 }
        )));
    }
    let hash = match (img.has_hash, img.has_gnu_hash) {
        (true, _) => HashTable::Sysv,
        (false, true) => HashTable::Gnu,
        (false, false) => return Err(bad("neither DT_HASH nor DT_GNU_HASH")),
    };
    let mut out = Symbols { hash, resolved: Vec::new(), wrong_version: Vec::new() };
    for sym in &img.symbols {
        if sym.kind != STT_FUNC || !(sym.bind == STB_GLOBAL || sym.bind == STB_WEAK) || sym.shndx == SHN_UNDEF {
            continue;
        }
        let Some(want) = abi.symbols.iter().find(|s| s.name == sym.name) else { continue };
        let version = if img.versioned {
            let def = sym.version.as_ref().and_then(|v| img.version_def(v.index));
            if !def.is_some_and(|d| d.name == abi.version && d.hash_ok()) {
                out.wrong_version.push(want.name);
                continue;
            }
            Some(abi.version)
        } else {
            None
        };
        let Some(offset) = img.offset_of(sym.value, 1).and_then(|o| usize::try_from(o).ok()) else { continue };
        if !out.resolved.iter().any(|x| x.function == want.function) {
            out.resolved.push(Resolved { function: want.function, name: want.name, version, offset });
        }
    }
    Ok(out)
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
    /// `None` also when the vDSO refuses the state-parameters query.
    pub getrandom: Option<VdsoGetrandomFn>,
}

impl OwnVdso {
    /// Resolve from vdsoctl's own `[vdso]` mapping (AT_SYSINFO_EHDR and
    /// /proc/self/maps, read by [`VdsoImage::own`] itself).
    pub fn open() -> Result<OwnVdso> {
        let pid = std::process::id() as i32;
        let image = VdsoImage::own().ok_or(Error::NoVdso { pid })?;
        let (syms, bound) = image.bind()?;
        let sym = |f: VdsoFn| bound.iter().copied().find(|s| s.function() == f);
        Ok(OwnVdso {
            base: image.base(),
            hash: syms.hash,
            clock_gettime: sym(VdsoFn::ClockGettime).and_then(BoundSymbol::clock_fn),
            clock_getres: sym(VdsoFn::ClockGetres).and_then(BoundSymbol::clock_fn),
            gettimeofday: sym(VdsoFn::Gettimeofday).and_then(BoundSymbol::gettimeofday_fn),
            time: sym(VdsoFn::Time).and_then(BoundSymbol::time_fn),
            getcpu: sym(VdsoFn::Getcpu).and_then(BoundSymbol::getcpu_fn),
            getrandom: sym(VdsoFn::Getrandom).and_then(BoundSymbol::getrandom_fn),
            symbols: syms.resolved,
            wrong_version: syms.wrong_version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::Process;

    fn own_image() -> Vec<u8> {
        VdsoImage::own().unwrap().bytes().to_vec()
    }

    fn host_abi() -> &'static VdsoAbi {
        arch::vdso_abi(arch::HOST_MACHINE, arch::HOST_IS_64).unwrap()
    }

    #[test]
    fn resolves_own_clock_gettime_with_version() {
        let img = own_image();
        let syms = resolve(&img, host_abi()).unwrap();
        let cg = syms.resolved.iter().find(|s| s.function == VdsoFn::ClockGettime).unwrap();
        assert_eq!(cg.version, Some(host_abi().version));
        assert!(cg.offset > 0 && cg.offset < img.len());
        assert!(syms.wrong_version.is_empty());
    }

    #[test]
    fn own_vdso_calls_agree_with_libc() {
        let v = OwnVdso::open().unwrap();
        let me = Process::open(None).unwrap();
        assert_eq!(v.base, me.vdso_mapping().unwrap().start);
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
        assert_eq!(elf::elf_hash(b"LINUX_2.6"), 0x03ae_75f6);
    }

    #[test]
    fn a_version_with_a_wrong_vd_hash_binds_nothing_and_dump_says_why() {
        let mut bytes = own_image();
        let want = elf::elf_hash(host_abi().version.as_bytes()).to_ne_bytes();
        let at = bytes.windows(4).position(|w| w == want).unwrap();
        bytes[at] ^= 1;
        let syms = resolve(&bytes, host_abi()).unwrap();
        assert!(syms.resolved.is_empty());
        assert_eq!(
            syms.wrong_version.len(),
            host_abi()
                .symbols
                .iter()
                .filter(|s| { elf::parse(&own_image()).unwrap().symbols.iter().any(|x| x.name == s.name) })
                .count()
        );
        let img = elf::parse(&bytes).unwrap();
        let expected = elf::elf_hash(host_abi().version.as_bytes());
        assert_eq!(
            img.issues,
            vec![elf::Issue::VersionHash {
                name: host_abi().version.to_string(),
                hash: expected ^ 1,
                expected,
                others: 0
            }]
        );
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
