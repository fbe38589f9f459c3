//! `dump` of synthetic vDSO images: emulators' classes and byte orders, hash
//! tables, non-vDSO ELFs and tables claiming more than a vDSO holds.

use super::*;

#[test]
fn synthetic_emulator_vdso_parses_right() {
    let path = tmp("synthetic-emulator-aarch64.so");
    std::fs::write(&path, synth::build(&emulator_spec(true, true, 183))).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    assert_eq!(json["elf"]["class"], "ELF64");
    assert_eq!(json["elf"]["machine"], "aarch64");
    assert_eq!(json["elf"]["soname"], "linux-vdso.so.1");
    assert_eq!(json["hash_tables"], serde_json::json!({"dt_hash": true, "dt_gnu_hash": false}));
    let syms = json["symbols"].as_array().unwrap();
    let names: Vec<&str> = syms.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "LINUX_2.6.39",
            "__kernel_rt_sigreturn",
            "__kernel_gettimeofday",
            "__kernel_clock_gettime",
            "__kernel_clock_getres",
            "__kernel_hidden_probe"
        ]
    );
    let cg = &syms[3];
    assert_eq!((cg["version"].as_str(), cg["version_hidden"].as_bool()), (Some("LINUX_2.6.39"), Some(false)));
    assert_eq!(
        (cg["type"].as_str(), cg["section"].as_str(), cg["size"].as_u64()),
        (Some("FUNC"), Some(".text"), Some(16))
    );
    assert_eq!(syms[5]["version_hidden"], true);
    let versions: Vec<(&str, &str)> = json["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["flags"].as_str().unwrap()))
        .collect();
    assert_eq!(versions, [("linux-vdso.so.1", "BASE"), ("LINUX_2.6.39", "none")]);
    assert_eq!(json["notes"][0]["type_name"], "NT_GNU_ABI_TAG");
    assert_eq!(json["notes"][0]["description"], "OS: Linux, ABI: 3.2.0");
    assert_eq!(json["notes"][1]["description"], "6.18.44");
    // Every symbol arm64's C library binds is there with LINUX_2.6.39: no findings.
    assert_eq!(json["findings"], serde_json::json!([]));
}

#[test]
fn synthetic_foreign_classes_and_byte_orders_match_binutils() {
    // (name, is_64, little-endian, e_machine)
    let shapes = [
        ("aarch64", true, true, 183u16),
        ("ppc64-be", true, false, 21),
        ("arm", false, true, 40),
        ("mips-be", false, false, 8),
        ("riscv64", true, true, 243),
    ];
    for (name, is_64, le, machine) in shapes {
        let path = tmp(&format!("synthetic-{name}.so"));
        std::fs::write(&path, synth::build(&emulator_spec(is_64, le, machine))).unwrap();
        let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
        assert_eq!(json["elf"]["class"], if is_64 { "ELF64" } else { "ELF32" }, "{name}");
        assert_eq!(json["elf"]["endian"], if le { "little" } else { "big" }, "{name}");
        assert_eq!(json["notes"][1]["description"], "6.18.44", "{name}");
        let (Some(t), Some(v), Some(n)) = (
            tool("objdump", &["-T"], &path),
            tool("readelf", &["-V", "--wide"], &path),
            tool("readelf", &["-n"], &path),
        ) else {
            skip(&format!("objdump/readelf cannot read {name} (install binutils-multiarch)"));
            continue;
        };
        assert_matches_binutils(&path, &t, &v, &n);
    }
}

#[test]
fn gnu_hash_only_image_warns_about_musl() {
    let mut bytes = std::fs::read(fixture("x86_64.so")).unwrap();
    // .dynamic is at 0x440; entry 3 is DT_HASH. Make it DT_DEBUG (21).
    assert_eq!(bytes[0x440 + 3 * 16], 4, "fixture layout changed");
    bytes[0x440 + 3 * 16] = 21;
    let path = tmp("gnu-hash-only.so");
    std::fs::write(&path, &bytes).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    assert_eq!(json["hash_tables"], serde_json::json!({"dt_hash": false, "dt_gnu_hash": true}));
    let f = json["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1);
    assert_eq!((f[0]["kind"].as_str(), f[0]["severity"].as_str()), (Some("vdso-gnu-hash-only"), Some("warn")), "{f:?}");
}

#[test]
fn a_wrong_vd_hash_is_named_as_the_reason_no_symbol_binds() {
    let mut bytes = std::fs::read(fixture("x86_64.so")).unwrap();
    // LINUX_2.6's vd_hash (`readelf -V`: 0x3ae75f6), as the file has it.
    let hash = 0x03ae_75f6u32.to_le_bytes();
    let at = bytes.windows(4).position(|w| w == hash).expect("fixture layout changed");
    bytes[at] ^= 1;
    let path = tmp("wrong-vd-hash.so");
    std::fs::write(&path, &bytes).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    let f = json["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!((f[0]["kind"].as_str(), f[0]["severity"].as_str()), (Some("elf-malformed"), Some("warn")), "{f:?}");
    // The version and both hashes.
    let issue = &f[0]["issue"];
    assert_eq!(
        *issue,
        serde_json::json!({"what": "version_hash", "version": "LINUX_2.6", "hash": "0x3ae75f7", "expected": "0x3ae75f6", "others": 0}),
        "{f:?}"
    );
}

/// The x86_64 image grown to `len` bytes (zeros after the image).
fn grown_fixture(len: usize) -> Vec<u8> {
    let mut b = std::fs::read(fixture("x86_64.so")).unwrap();
    b.resize(len, 0);
    b
}

#[test]
fn tables_claiming_more_than_a_vdso_holds_are_capped_with_findings() {
    const LEN: usize = 4 << 20;
    let mut b = grown_fixture(LEN);
    // .dynsym (section 3) over everything from 0x2000 to the end: 174421 entries.
    let count = (LEN - 0x2000) / 24;
    sh64(&mut b, 3, 24, 0x2000);
    sh64(&mut b, 3, 32, (count * 24) as u64);
    // Symbol 1's name: 1000 bytes of 'A' at the end of .dynstr's section range
    // (section 4, widened to cover it).
    let name_at = 0x10000;
    b[name_at..name_at + 1000].fill(b'A');
    sh64(&mut b, 4, 24, 0x10000 - 4);
    sh64(&mut b, 4, 32, 4 + 1001);
    le_u32(&mut b, 0x2000 + 24, 4);
    // .gnu.version_d (section 6): 300 definitions chained at 0x20000.
    let vd = 0x20000;
    for i in 0..300 {
        let at = vd + 20 * i;
        le_u16(&mut b, at, 1);
        le_u16(&mut b, at + 4, i as u16 + 1);
        le_u32(&mut b, at + 16, 20);
    }
    sh64(&mut b, 6, 24, vd as u64);
    sh64(&mut b, 6, 32, 300 * 20);
    sh32(&mut b, 6, 44, 300);
    // .note (section 9): 100 empty notes, then one with an 8 KiB descriptor.
    let notes = 0x30000;
    for i in 0..100 {
        le_u32(&mut b, notes + 12 * i + 8, 0);
    }
    let big = notes + 1200;
    le_u32(&mut b, big + 4, 8192);
    sh64(&mut b, 9, 24, notes as u64);
    sh64(&mut b, 9, 32, 1200 + 12 + 8192);
    let path = tmp("capped.so");
    std::fs::write(&path, &b).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    assert_eq!(json["symbols"].as_array().unwrap().len(), 1023);
    assert_eq!(json["symbols"][0]["name"].as_str().unwrap(), "A".repeat(256));
    assert_eq!(json["versions"].as_array().unwrap().len(), 256);
    assert_eq!(json["notes"].as_array().unwrap().len(), 64);
    let f: Vec<&str> = json["findings"].as_array().unwrap().iter().map(|f| f["message"].as_str().unwrap()).collect();
    for want in [
        format!("the image claims {count} dynamic symbols, more than a vDSO can hold: only the first 1024 were read"),
        "the image claims 300 version definitions, more than a vDSO can hold: only the first 256 were read".into(),
        "the image claims 101 notes, more than a vDSO can hold: only the first 64 were read".into(),
        "1 names are longer than 256 bytes and were cut there".into(),
    ] {
        assert!(f.contains(&want.as_str()), "missing {want:?} in {f:#?}");
    }

    // The same notes minus the empty ones: the 8 KiB descriptor is cut, not decoded.
    let mut b2 = b.clone();
    sh64(&mut b2, 9, 24, big as u64);
    sh64(&mut b2, 9, 32, 12 + 8192);
    let path = tmp("note-cut.so");
    std::fs::write(&path, &b2).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    assert_eq!(
        (json["notes"][0]["size"].as_u64(), json["notes"][0]["data"].as_str().map(str::len)),
        (Some(8192), Some(8192))
    );
    let f: Vec<&str> = json["findings"].as_array().unwrap().iter().map(|f| f["message"].as_str().unwrap()).collect();
    assert!(
        f.contains(
            &format!("the note at offset {big:#x} claims a 8 KiB descriptor: only the first 4 KiB are kept, undecoded")
                .as_str()
        ),
        "{f:#?}"
    );
}

#[test]
fn an_elf_that_is_not_a_vdso_is_listed_under_a_fail_verdict() {
    let mut spec = emulator_spec(true, true, 62);
    spec.soname = "libclock.so.1";
    spec.version = "CLOCK_1.0";
    let path = tmp("not-a-vdso.so");
    std::fs::write(&path, synth::build(&spec)).unwrap();
    let (code, out, err) = run(&["--json", "dump", "--file", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["symbols"].as_array().unwrap().len(), 6);
    assert_eq!(json["versions"][1]["name"], "CLOCK_1.0");
    let f = json["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0]["kind"].as_str(), f[0]["severity"].as_str()), (Some("not-a-vdso"), Some("fail")), "{f:?}");
    // The soname it has instead, as elf.soname.
    assert_eq!(json["elf"]["soname"], "libclock.so.1", "{json}");

    // A real program: no soname, GLIBC versions needed, none defined.
    let (code, out, err) = run(&["dump", "--file", "/bin/ls"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("FAIL: not a vDSO: it has no soname"), "{out}");
    assert!(!out.contains("exports no"), "{out}");
    assert!(out.lines().any(|l| l.contains(" FUNC ") && l.contains("*UND*")), "{out}");
    // What it has is what binutils says it has: every symbol with its
    // needed version in brackets, its notes (a GNU property note among them).
    let (code, out, err) = run(&["--json", "dump", "--file", "/bin/ls"]);
    assert_eq!(code, 1, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let ls = Path::new("/bin/ls");
    let (Some(t), Some(v), Some(n)) =
        (tool("objdump", &["-T"], ls), tool("readelf", &["-V", "--wide"], ls), tool("readelf", &["-n"], ls))
    else {
        return skip("binutils (objdump, readelf) not installed");
    };
    assert_json_matches_binutils(ls, &json, &t, &v, &n);
}
