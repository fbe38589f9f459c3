use super::*;
use crate::inspect::elf::records::{PF_R, PF_W, PF_X, PT_LOAD};

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
    f[ph + 4..ph + 8].copy_from_slice(&(PF_X | PF_R).to_le_bytes());
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
    assert_eq!(info.truncated, None);
    assert_eq!(info.vsyscall_sites, 4, "{:?}", info.sites);
    assert_eq!(info.vsyscall_first, Some(0x501000 + (CHUNK - 12 + 7) as u64));
    assert_eq!(info.sites[1].addr, 0x501000 + (CHUNK - 3 + 10) as u64);
    // Truncated: the segment claims more than the file has; no endless loop.
    f.truncate(code_off + CHUNK + 20);
    let cut = read_bytes(&f);
    assert_eq!(cut.vsyscall_sites, 2, "the two sites before the cut");
    let (size, described) = (f.len() as u64, (code_off + size) as u64);
    assert_eq!(cut.truncated, Some(Truncated { size, described }), "said, so the verdict is never OK");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Any damage to a real executable's first 8 KiB (headers, tables,
    /// the start of the code) is an Ok or an Err, never a panic.
    #[test]
    fn damaged_executables_never_panic(
        edits in proptest::collection::vec((0usize..8192, proptest::prelude::any::<u8>()), 1..64),
        cut in 64usize..200_000,
        no_sections in proptest::prelude::any::<bool>(),
    ) {
        static OWN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let own = OWN.get_or_init(|| pread(&File::open("/proc/self/exe").unwrap(), 0, 200_000).unwrap());
        let mut bytes = own[..cut.min(own.len())].to_vec();
        if no_sections && bytes.len() >= 64 {
            // e_shoff, e_shnum (64-bit): read from the segments, imports
            // through the dynamic section.
            bytes[0x28..0x30].fill(0);
            bytes[0x3c..0x3e].fill(0);
        }
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
    f[ph + 4..ph + 8].copy_from_slice(&(PF_W | PF_R).to_le_bytes());
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
    assert_eq!(info.go, Some(GoInfo { version: "go1.21.0".into(), cgo: Some(false), getrandom: Some(false) }));
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
    assert_eq!(info.go, Some(GoInfo { version: "go1.16.15".into(), cgo: Some(false), getrandom: Some(false) }));
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
