use super::*;
use crate::arch::machine::{AARCH64 as EM_AARCH64, I386 as EM_386, X86_64 as EM_X86_64};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn version_codes() {
    assert_eq!(version_code(0x06122c), "6.18.44");
    assert_eq!(version_code(0x050a00), "5.10.0");
}

#[test]
fn gnu_properties_in_readelfs_words() {
    let le = |words: &[u32]| words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let cases: [(u16, bool, Vec<u8>, &str); 7] = [
        (EM_AARCH64, true, le(&[0xc000_0000, 4, 3, 0]), "AArch64 feature: BTI, PAC"),
        (EM_AARCH64, true, le(&[0xc000_0000, 4, 0x11, 0]), "AArch64 feature: BTI, <unknown: 10>"),
        (EM_X86_64, true, le(&[0xc000_0002, 4, 2, 0]), "x86 feature: SHSTK"),
        (EM_386, false, le(&[0xc000_8002, 4, 0]), "x86 ISA needed: <None>"),
        (EM_X86_64, true, le(&[0xc000_0002, 8, 3, 0]), "x86 feature: <corrupt length: 0x8> "),
        (EM_X86_64, true, le(&[0xc000_0002, 64, 3, 0]), "<corrupt type (0xc0000002) datasz: 0x40>"),
        (EM_X86_64, true, le(&[1, 2, 3]), "<corrupt GNU_PROPERTY_TYPE, size = 0xc>"),
    ];
    for (machine, is_64, desc, want) in cases {
        assert_eq!(gnu_properties(&desc, true, machine, is_64), want);
    }
}

#[test]
fn arm_thumb_bit_cleared_only_for_arm_functions() {
    let img = parse(&fixture("aarch64-compat.so")).unwrap();
    let thumb: Vec<(&str, u64, bool)> = img.symbols.iter().map(|s| (s.name.as_str(), s.value, s.thumb)).collect();
    assert_eq!(
        thumb,
        [
            ("LINUX_2.6", 0, false),
            ("__vdso_gettimeofday", 0x914, true),
            ("__vdso_clock_getres", 0xb34, true),
            ("__vdso_clock_gettime64", 0x5c0, true),
            ("__vdso_clock_gettime", 0x2c8, true)
        ]
    );
    // aarch64 code has no Thumb bit to clear, whatever the value.
    assert!(parse(&fixture("aarch64.so")).unwrap().symbols.iter().all(|s| !s.thumb));
}

#[test]
fn garbage_is_an_error() {
    for bytes in [&b""[..], b"\x7fEL", b"#!/bin/sh\necho hi\n", &[0u8; 64], b"\x7fELF\x03\x01\x01\0\0\0\0\0\0\0\0\0"] {
        assert!(matches!(parse(bytes), Err(Error::Malformed { .. })), "{bytes:?}");
    }
}

#[test]
fn host_x86_64_fixture() {
    let img = parse(&fixture("x86_64.so")).unwrap();
    assert!(img.is_64 && img.little_endian);
    assert_eq!(img.machine, crate::arch::machine::X86_64);
    assert_eq!(img.soname.as_deref(), Some("linux-vdso.so.1"));
    let cg = img.symbols.iter().find(|s| s.name == "__vdso_clock_gettime").unwrap();
    assert_eq!(cg.version.as_ref().unwrap().display(), "LINUX_2.6");
    assert_eq!(cg.section.as_deref(), Some(".text"));
    assert_eq!(type_name(cg.kind), "FUNC");
    assert_eq!(bind_name(cg.bind), "GLOBAL");
    assert!(img.has_hash && img.has_gnu_hash);
    let names: Vec<_> = img.versions.iter().map(|v| (v.index, v.name.as_str(), v.flags_text())).collect();
    assert_eq!(names, [(1, "linux-vdso.so.1", "BASE".to_string()), (2, "LINUX_2.6", "none".to_string())]);
    let code = img.notes.iter().find(|n| n.owner == "Linux" && n.n_type == 0).unwrap();
    assert_eq!(code.description.as_deref(), Some("6.18.44"));
    let id = img.notes.iter().find(|n| n.owner == "GNU" && n.n_type == 3).unwrap();
    assert_eq!(id.description.as_ref().unwrap().len(), 40);
}

/// Everything a caller can do with a parsed image, so a lazy panic in an
/// accessor shows up too.
fn walk(img: &Image) {
    for s in &img.symbols {
        let _ = (type_name(s.kind), bind_name(s.bind), objdump_flags(s));
        if let Some(v) = &s.version {
            let _ = v.display();
        }
    }
    for v in &img.versions {
        let _ = v.flags_text();
    }
    for n in &img.notes {
        let _ = gnu_properties(&n.desc, img.little_endian, img.machine, img.is_64);
    }
    let _ = elf_type_name(img.elf_type);
    // `dump`'s report and its renderers walk the same images in cmd/dump.rs
    // (every_prefix_of_every_image_renders): a layer below does not import them.
}

/// Every committed image (fixtures/vdso/README.md).
const FIXTURES: [&str; 14] = [
    "x86_64.so",
    "i386.so",
    "aarch64.so",
    "aarch64-compat.so",
    "aarch64-6.12.so",
    "aarch64-6.12-compat.so",
    "armhf.so",
    "riscv64.so",
    "ppc64el.so",
    "s390x.so",
    "s390x-compat.so",
    "mips64el.so",
    "mips64el-o32.so",
    "mips64el-n32.so",
];

/// Cases for the mutation test: 256 in the normal suite,
/// `VDSOCTL_FUZZ_CASES` for scripts/fuzz-dump.sh.
fn fuzz_cases() -> u32 {
    std::env::var("VDSOCTL_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: fuzz_cases(), failure_persistence: None, ..Default::default() })]

    /// Random byte mutations of the real images, biased to the first
    /// 0x600 bytes where the headers, dynamic section and version
    /// tables live, with "interesting" words (0, all-ones, the size)
    /// and growth to 64 KiB, never panic: parse is Ok or Err, and an Ok walks.
    #[test]
    fn mutated_fixtures_never_panic(
        which in 0usize..FIXTURES.len(),
        edits in proptest::collection::vec((0usize..0x10000, proptest::prelude::any::<u8>(), proptest::prelude::any::<bool>()), 1..24),
        words in proptest::collection::vec((0usize..0x600, 0usize..6), 0..6),
        grow in proptest::option::of(0usize..0x10000),
        cut in proptest::option::of(0usize..0x10000),
    ) {
        let mut bytes = fixture(FIXTURES[which]);
        if let Some(grow) = grow {
            bytes.resize(bytes.len() + grow, 0);
        }
        let len = bytes.len();
        for (at, value, low) in edits {
            let at = if low { at % 0x600.min(len) } else { at % len };
            bytes[at] = value;
        }
        for (at, pick) in words {
            let value: u32 = [0, 1, u32::MAX, 0x7fff_ffff, len as u32, 0x1_0000][pick];
            let at = (at % (len - 4)) & !3;
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
        if let Some(cut) = cut {
            bytes.truncate(cut);
        }
        if let Ok(img) = parse(&bytes) {
            walk(&img);
        }
    }
}

#[test]
fn every_prefix_is_handled() {
    for name in FIXTURES {
        let bytes = fixture(name);
        for len in 0..bytes.len() {
            if let Ok(img) = parse(&bytes[..len]) {
                walk(&img);
            }
        }
        // The ELF content ends before the page padding: any prefix short of
        // the section headers' end must fail.
        assert!(parse(&bytes[..64]).is_err());
    }
}
