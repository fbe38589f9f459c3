//! `dump` of the committed fixtures and foreign images, matched against
//! binutils (objdump, readelf) and the golden files.

use super::*;

#[test]
fn fixtures_match_committed_golden_files() {
    for name in FIXTURES {
        let so = fixture(&format!("{name}.so"));
        let golden = |kind: &str| std::fs::read_to_string(fixture(&format!("{name}.{kind}.txt"))).unwrap();
        if std::env::var_os("VDSOCTL_REGEN_GOLDEN").is_some() {
            for (kind, prog, args) in [
                ("objdump-T", "objdump", &["-T"][..]),
                ("readelf-V", "readelf", &["-V", "--wide"][..]),
                ("readelf-n", "readelf", &["-n"][..]),
            ] {
                let text = tool(prog, args, &so).expect("binutils to regenerate golden files");
                std::fs::write(fixture(&format!("{name}.{kind}.txt")), text).unwrap();
            }
        }
        assert_matches_binutils(&so, &golden("objdump-T"), &golden("readelf-V"), &golden("readelf-n"));
    }
}

#[test]
fn fixtures_match_live_binutils() {
    for name in FIXTURES {
        let so = fixture(&format!("{name}.so"));
        let (Some(t), Some(v), Some(n)) =
            (tool("objdump", &["-T"], &so), tool("readelf", &["-V", "--wide"], &so), tool("readelf", &["-n"], &so))
        else {
            return skip("binutils (objdump, readelf) not installed");
        };
        assert_matches_binutils(&so, &t, &v, &n);
    }
}

#[test]
fn host_fixture_content() {
    let json = run_json(&["dump", "--file", fixture("x86_64.so").to_str().unwrap()]);
    assert_eq!(json["file"], fixture("x86_64.so").to_str().unwrap());
    assert_eq!(json["elf"]["class"], "ELF64");
    assert_eq!(json["elf"]["machine"], "x86_64");
    assert_eq!(json["elf"]["soname"], "linux-vdso.so.1");
    assert_eq!(json["elf"]["size"], 8192);
    assert_eq!(json["elf"]["base"], Value::Null);
    let cg = json["symbols"].as_array().unwrap().iter().find(|s| s["name"] == "__vdso_clock_gettime").unwrap();
    assert_eq!(cg["version"], "LINUX_2.6");
    assert_eq!(cg["value"], "0xaf0");
    assert_eq!(cg["size"], 902);
    assert_eq!(cg["type"], "FUNC");
    assert_eq!(cg["bind"], "GLOBAL");
    assert_eq!(cg["section"], ".text");
    assert_eq!(json["hash_tables"], serde_json::json!({"dt_hash": true, "dt_gnu_hash": true}));
    assert_eq!(json["findings"], serde_json::json!([]));
    let code = &json["notes"][0];
    assert_eq!((code["owner"].as_str(), code["type"].as_u64()), (Some("Linux"), Some(0)));
    assert_eq!(code["type_name"], "LINUX_VERSION_CODE");
    assert_eq!(code["description"], "6.18.44");
    assert_eq!(json["notes"][2]["description"], "e17735e083bee5962b452ede4e28f9520fb75fa7");

    let i386 = run_json(&["dump", "--file", fixture("i386.so").to_str().unwrap()]);
    assert_eq!(i386["elf"]["class"], "ELF32");
    assert_eq!(i386["elf"]["soname"], "linux-gate.so.1");
    let names: Vec<&str> = i386["versions"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["linux-gate.so.1", "LINUX_2.6", "LINUX_2.5"]);
    let vsys = i386["symbols"].as_array().unwrap().iter().find(|s| s["name"] == "__kernel_vsyscall").unwrap();
    assert_eq!(vsys["version"], "LINUX_2.5");
}

#[test]
fn table_output_has_every_block() {
    let (code, out, err) = run(&["dump", "--file", fixture("x86_64.so").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ELF64 little-endian x86_64 DYN, soname linux-vdso.so.1, 8 KiB"), "{out}");
    let row = out.lines().find(|l| l.contains("__vdso_clock_gettime")).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cols,
        ["0000000000000af0", "GLOBAL", "FUNC", ".text", "0000000000000386", "LINUX_2.6", "__vdso_clock_gettime"]
    );
    for heading in
        ["Dynamic symbols (13):", "Version definitions (2):", "Notes (3):", "Hash tables: DT_HASH yes, DT_GNU_HASH yes"]
    {
        assert!(out.contains(heading), "missing {heading:?} in\n{out}");
    }
    assert!(out.contains("LINUX_VERSION_CODE (0x0)") && out.contains("6.18.44"), "{out}");
}

#[test]
fn foreign_images_have_the_findings_their_kernels_earn() {
    // arm64 from 6.12 links its vDSO with DT_GNU_HASH only: musl loses it.
    let json = run_json(&["dump", "--file", fixture("aarch64-6.12.so").to_str().unwrap()]);
    assert_eq!(json["hash_tables"], serde_json::json!({"dt_hash": false, "dt_gnu_hash": true}));
    let f: Vec<&str> = json["findings"].as_array().unwrap().iter().map(|f| f["message"].as_str().unwrap()).collect();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("musl looks vDSO symbols up through DT_HASH only"), "{}", f[0]);
    // 6.1's carries DT_HASH, and every symbol arm64's C library binds.
    let json = run_json(&["dump", "--file", fixture("aarch64.so").to_str().unwrap()]);
    assert_eq!(json["findings"], serde_json::json!([]));
    assert_eq!(json["notes"][1]["description"], "6.1.170");
    let json = run_json(&["dump", "--file", fixture("s390x.so").to_str().unwrap()]);
    assert_eq!((json["elf"]["class"].as_str(), json["elf"]["endian"].as_str()), (Some("ELF64"), Some("big")));
    assert_eq!(json["notes"][1]["description"], "6.1.170");
}

fn gnu_property(le: bool, is_64: bool, props: &[(u32, u32)]) -> Vec<u8> {
    let mut d = Vec::new();
    let w = |d: &mut Vec<u8>, v: u32| d.extend_from_slice(&if le { v.to_le_bytes() } else { v.to_be_bytes() });
    for &(kind, bits) in props {
        w(&mut d, kind);
        w(&mut d, 4);
        w(&mut d, bits);
        if is_64 {
            w(&mut d, 0);
        }
    }
    d
}

#[test]
fn gnu_property_notes_in_readelfs_words() {
    // (name, e_machine, properties, what readelf 2.40 prints)
    type Case = (&'static str, u16, Vec<(u32, u32)>, &'static str);
    let cases: [Case; 3] = [
        ("aarch64-bti-pac", 183, vec![(0xc000_0000, 3)], "AArch64 feature: BTI, PAC"),
        (
            "x86_64-ibt-shstk",
            62,
            vec![(0xc000_0002, 3), (0xc000_8002, 3)],
            "x86 feature: IBT, SHSTK, x86 ISA needed: x86-64-baseline, x86-64-v2",
        ),
        ("riscv64-unknown", 243, vec![(0xc000_0000, 1)], "<processor-specific type 0xc0000000 data: 01 00 00 00 >"),
    ];
    for (name, machine, props, want) in cases {
        let mut spec = emulator_spec(true, true, machine);
        spec.notes.push(("GNU", 5, gnu_property(true, true, &props)));
        let path = tmp(&format!("property-{name}.so"));
        std::fs::write(&path, synth::build(&spec)).unwrap();
        let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
        let note = &json["notes"][2];
        assert_eq!(note["type_name"], "NT_GNU_PROPERTY_TYPE_0", "{name}");
        assert_eq!(note["description"], want, "{name}");
        let (Some(t), Some(v), Some(n)) = (
            tool("objdump", &["-T"], &path),
            tool("readelf", &["-V", "--wide"], &path),
            tool("readelf", &["-n"], &path),
        ) else {
            skip("binutils-multiarch (objdump, readelf) not installed");
            continue;
        };
        assert_json_matches_binutils(&path, &json, &t, &v, &n);
    }
}

#[test]
fn thumb_functions_and_section_symbols_as_objdump_prints_them() {
    let json = run_json(&["dump", "--file", fixture("aarch64-compat.so").to_str().unwrap()]);
    let syms = json["symbols"].as_array().unwrap();
    let gtod = syms.iter().find(|s| s["name"] == "__vdso_gettimeofday").unwrap();
    // st_value in the file is 0x915 (readelf --dyn-syms); objdump prints 0x914.
    assert_eq!((gtod["value"].as_str(), gtod["thumb"].as_bool()), (Some("0x914"), Some(true)));
    let funcs: Vec<bool> = syms.iter().filter(|s| s["type"] == "FUNC").map(|s| s["thumb"].as_bool().unwrap()).collect();
    assert_eq!(funcs, [true; 4]);
    let (code, out, _) = run(&["dump", "--file", fixture("aarch64-compat.so").to_str().unwrap()]);
    assert_eq!(code, 0);
    let row = out.lines().find(|l| l.contains("__vdso_gettimeofday")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["00000914", "GLOBAL", "FUNC", "(Thumb)", ".text", "00000220", "LINUX_2.6", "__vdso_gettimeofday"]
    );
    // armhf's vDSO is ARM code: no Thumb bit anywhere.
    let arm = run_json(&["dump", "--file", fixture("armhf.so").to_str().unwrap()]);
    assert!(arm["symbols"].as_array().unwrap().iter().all(|s| s["thumb"] == false));

    let rv = run_json(&["dump", "--file", fixture("riscv64.so").to_str().unwrap()]);
    let first = &rv["symbols"][0];
    assert_eq!(
        (first["name"].as_str(), first["type"].as_str(), first["section"].as_str(), first["bind"].as_str()),
        (Some(".rodata"), Some("SECTION"), Some(".rodata"), Some("LOCAL"))
    );
    assert_eq!(first["version"], Value::Null);
}
