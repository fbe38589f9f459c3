//! `dump` integration tests: the committed host images against binutils'
//! own view of them (golden files, and the live tools when present),
//! synthetic images of foreign shapes, malformed input through the binary,
//! and live 64-bit and 32-bit processes.

use super::common::{self, run, run_json, skip, Workload};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso").join(name)
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Output of a binutils tool on a file, run from the file's directory so the
/// file name in the text is the bare name (as in the golden files).
fn tool(prog: &str, args: &[&str], file: &Path) -> Option<String> {
    let out = Command::new(prog)
        .args(args)
        .arg(file.file_name()?)
        .current_dir(file.parent()?)
        .env("LC_ALL", "C")
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One `objdump -T` row: (value, flags, section, size, version, name).
#[derive(Debug, PartialEq, Eq, Clone)]
struct ObjdumpSym {
    value: u64,
    section: String,
    size: u64,
    version: String,
    name: String,
}

fn parse_objdump_t(text: &str) -> Vec<ObjdumpSym> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("DYNAMIC SYMBOL TABLE:") {
            in_table = true;
            continue;
        }
        if !in_table || line.trim().is_empty() {
            continue;
        }
        let width = line.find(' ').expect("value column");
        let value = u64::from_str_radix(&line[..width], 16).expect("hex value");
        let rest = &line[width + 9..];
        let (section, tail) = rest.split_once('\t').expect("tab after section");
        let fields: Vec<&str> = tail.split_whitespace().collect();
        let size = u64::from_str_radix(fields[0], 16).expect("hex size");
        let (version, name) = match fields.len() {
            3 => (fields[1].to_string(), fields[2].to_string()),
            2 => (String::new(), fields[1].to_string()),
            _ => panic!("unexpected objdump row {line:?}"),
        };
        rows.push(ObjdumpSym { value, section: section.to_string(), size, version, name });
    }
    rows
}

/// Our symbols in the same shape, from `--json dump --file`.
fn our_symbols(json: &Value) -> Vec<ObjdumpSym> {
    json["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let version = match (s["version"].as_str(), s["version_hidden"].as_bool().unwrap()) {
                (Some(v), true) => format!("({v})"),
                (Some(v), false) => v.to_string(),
                (None, _) => String::new(),
            };
            ObjdumpSym {
                value: u64::from_str_radix(s["value"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
                section: s["section"].as_str().unwrap_or("").to_string(),
                size: s["size"].as_u64().unwrap(),
                version,
                name: s["name"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

/// (index, flags, name) from `readelf -V --wide`'s version definition section.
fn parse_readelf_v(text: &str) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    let mut in_defs = false;
    for line in text.lines() {
        if line.starts_with("Version definition section") {
            in_defs = true;
            continue;
        }
        if line.starts_with("Version ") {
            in_defs = false;
        }
        if !in_defs || !line.contains("Index:") {
            continue;
        }
        let after = |key: &str| line.split(key).nth(1).unwrap().split_whitespace().next().unwrap().to_string();
        out.push((after("Index:").parse().unwrap(), after("Flags:"), after("Name:")));
    }
    out
}

/// (owner, size, data hex, properties) from `readelf -n`; data from the
/// description bytes or the Build ID line, empty when readelf decoded it
/// otherwise; properties are a GNU property note's "Properties:" text, its
/// continuation lines joined with ", " (as `readelf -n --wide` prints them).
fn parse_readelf_n(text: &str) -> Vec<(String, u64, String, String)> {
    let mut out: Vec<(String, u64, String, String)> = Vec::new();
    let mut in_props = false;
    for line in text.lines() {
        let t = line.trim();
        if in_props && line.starts_with('\t') {
            let p = &mut out.last_mut().unwrap().3;
            p.push_str(", ");
            p.push_str(t);
            continue;
        }
        in_props = false;
        if let Some(hex) = t.strip_prefix("description data:") {
            out.last_mut().unwrap().2 = hex.split_whitespace().collect();
        } else if let Some(props) = t.strip_prefix("Properties:") {
            out.last_mut().unwrap().3 = props.trim().to_string();
            in_props = true;
        } else if let Some(id) = t.strip_prefix("Build ID:") {
            out.last_mut().unwrap().2 = id.trim().to_string();
        } else if line.starts_with("  ") && !line.starts_with("   ") && !t.starts_with("Owner") {
            let mut f = t.split_whitespace();
            let owner = f.next().unwrap().to_string();
            let size = u64::from_str_radix(f.next().unwrap().trim_start_matches("0x"), 16).unwrap();
            out.push((owner, size, String::new(), String::new()));
        }
    }
    out
}

fn our_notes(json: &Value) -> Vec<(String, u64, String, String)> {
    json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let props =
                if n["type_name"] == "NT_GNU_PROPERTY_TYPE_0" { n["description"].as_str().unwrap() } else { "" };
            (
                n["owner"].as_str().unwrap().into(),
                n["size"].as_u64().unwrap(),
                n["data"].as_str().unwrap().into(),
                props.into(),
            )
        })
        .collect()
}

/// Compare our view of `path` with binutils' text (golden or live).
fn assert_matches_binutils(path: &Path, objdump_t: &str, readelf_v: &str, readelf_n: &str) {
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    assert_json_matches_binutils(path, &json, objdump_t, readelf_v, readelf_n);
}

/// [`assert_matches_binutils`] on a document already in hand.
fn assert_json_matches_binutils(path: &Path, json: &Value, objdump_t: &str, readelf_v: &str, readelf_n: &str) {
    let theirs = parse_objdump_t(objdump_t);
    assert!(!theirs.is_empty(), "objdump listed no symbols for {}", path.display());
    assert_eq!(our_symbols(json), theirs, "symbols of {}", path.display());

    let ours: Vec<(u64, String, String)> = json["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (v["index"].as_u64().unwrap(), v["flags"].as_str().unwrap().into(), v["name"].as_str().unwrap().into())
        })
        .collect();
    assert_eq!(ours, parse_readelf_v(readelf_v), "versions of {}", path.display());

    let theirs = parse_readelf_n(readelf_n);
    let ours = our_notes(json);
    assert_eq!(ours.len(), theirs.len(), "notes of {}: {ours:?} vs {theirs:?}", path.display());
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!((&o.0, o.1), (&t.0, t.1), "note owner/size of {}", path.display());
        if !t.2.is_empty() {
            assert_eq!(o.2, t.2, "note data of {}", path.display());
        }
        assert_eq!(o.3, t.3, "GNU properties of {}", path.display());
    }
}

/// Every committed image: this host's two, and the ones carved out of
/// Debian kernel packages (fixtures/vdso/README.md).
const FIXTURES: [&str; 14] = [
    "x86_64",
    "i386",
    "aarch64",
    "aarch64-compat",
    "aarch64-6.12",
    "aarch64-6.12-compat",
    "armhf",
    "riscv64",
    "ppc64el",
    "s390x",
    "s390x-compat",
    "mips64el",
    "mips64el-o32",
    "mips64el-n32",
];

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

/// A minimal ELF shared object writer, enough for a vDSO's shape: one
/// PT_LOAD over the whole file, PT_DYNAMIC, PT_NOTE, DT_HASH only (no
/// DT_GNU_HASH), .dynsym/.dynstr, .gnu.version/.gnu.version_d, a note.
pub mod synth {
    /// What to build.
    pub struct Spec {
        pub is_64: bool,
        pub le: bool,
        pub machine: u16,
        pub soname: &'static str,
        /// The one non-base version every symbol gets.
        pub version: &'static str,
        /// Function symbols; `true` = hidden version.
        pub functions: Vec<(&'static str, bool)>,
        /// (owner, type, desc).
        pub notes: Vec<(&'static str, u32, Vec<u8>)>,
    }

    struct Buf {
        bytes: Vec<u8>,
        le: bool,
        is_64: bool,
    }

    impl Buf {
        fn put(&mut self, off: usize, data: &[u8]) {
            self.bytes[off..off + data.len()].copy_from_slice(data);
        }
        fn u16(&mut self, off: usize, v: u16) -> usize {
            self.put(off, &if self.le { v.to_le_bytes() } else { v.to_be_bytes() });
            off + 2
        }
        fn u32(&mut self, off: usize, v: u32) -> usize {
            self.put(off, &if self.le { v.to_le_bytes() } else { v.to_be_bytes() });
            off + 4
        }
        fn u64(&mut self, off: usize, v: u64) -> usize {
            self.put(off, &if self.le { v.to_le_bytes() } else { v.to_be_bytes() });
            off + 8
        }
        /// A word of the class: Elf64_Addr/Off/Xword or Elf32_Addr/Off/Word.
        fn word(&mut self, off: usize, v: u64) -> usize {
            if self.is_64 {
                self.u64(off, v)
            } else {
                self.u32(off, v as u32)
            }
        }
    }

    fn elf_hash(name: &str) -> u32 {
        let mut h: u32 = 0;
        for &b in name.as_bytes() {
            h = (h << 4).wrapping_add(u32::from(b));
            let g = h & 0xf000_0000;
            if g != 0 {
                h ^= g >> 24;
            }
            h &= !g;
        }
        h
    }

    fn align(v: usize, a: usize) -> usize {
        v.div_ceil(a) * a
    }

    /// Build the image.
    pub fn build(spec: &Spec) -> Vec<u8> {
        let (ehsize, phent, shent, syment, dynent) =
            if spec.is_64 { (64, 56, 64, 24, 16) } else { (52, 32, 40, 16, 8) };
        // .dynstr: "\0soname\0version\0names..."
        let mut dynstr = vec![0u8];
        let stroff = |s: &str, t: &mut Vec<u8>| {
            let at = t.len();
            t.extend_from_slice(s.as_bytes());
            t.push(0);
            at as u32
        };
        let soname_at = stroff(spec.soname, &mut dynstr);
        let version_at = stroff(spec.version, &mut dynstr);
        let fn_at: Vec<u32> = spec.functions.iter().map(|(n, _)| stroff(n, &mut dynstr)).collect();
        // symbols: null, the version's ABS symbol, then the functions.
        let nsym = 2 + spec.functions.len();
        let mut note = Vec::new();
        for (owner, kind, desc) in &spec.notes {
            let mut hdr = Buf { bytes: vec![0; 12], le: spec.le, is_64: spec.is_64 };
            hdr.u32(0, owner.len() as u32 + 1);
            hdr.u32(4, desc.len() as u32);
            hdr.u32(8, *kind);
            note.extend_from_slice(&hdr.bytes);
            note.extend_from_slice(owner.as_bytes());
            note.push(0);
            note.resize(align(note.len(), 4), 0);
            note.extend_from_slice(desc);
            note.resize(align(note.len(), 4), 0);
        }
        let names = [
            "",
            ".hash",
            ".dynsym",
            ".dynstr",
            ".gnu.version",
            ".gnu.version_d",
            ".dynamic",
            ".note",
            ".text",
            ".shstrtab",
        ];
        let mut shstr = Vec::new();
        let name_at: Vec<u32> = names.iter().map(|n| stroff(n, &mut shstr)).collect();
        let ndyn = 10;
        let sizes = [
            0,
            4 * (2 + 1 + nsym),
            nsym * syment,
            dynstr.len(),
            2 * nsym,
            2 * (20 + 8),
            ndyn * dynent,
            note.len(),
            16 * spec.functions.len(),
            shstr.len(),
        ];
        let mut offs = [0usize; 10];
        let mut at = ehsize + 3 * phent;
        for i in 1..10 {
            at = align(at, 8);
            offs[i] = at;
            at += sizes[i];
        }
        let shoff = align(at, 8);
        let total = shoff + 10 * shent;
        let mut b = Buf { bytes: vec![0; total], le: spec.le, is_64: spec.is_64 };

        // ELF header.
        b.put(0, &[0x7f, b'E', b'L', b'F', if spec.is_64 { 2 } else { 1 }, if spec.le { 1 } else { 2 }, 1]);
        let mut o = b.u16(16, 3); // ET_DYN
        o = b.u16(o, spec.machine);
        o = b.u32(o, 1);
        o = b.word(o, 0); // e_entry
        o = b.word(o, ehsize as u64); // e_phoff
        o = b.word(o, shoff as u64);
        o = b.u32(o, 0);
        o = b.u16(o, ehsize as u16);
        o = b.u16(o, phent as u16);
        o = b.u16(o, 3);
        o = b.u16(o, shent as u16);
        o = b.u16(o, 10);
        b.u16(o, 9);

        // Program headers: PT_LOAD (all), PT_DYNAMIC, PT_NOTE.
        let phdrs =
            [(1u32, 5u32, 0usize, total, 0x1000u64), (2, 6, offs[6], sizes[6], 8), (4, 4, offs[7], sizes[7], 4)];
        for (i, (kind, flags, off, size, al)) in phdrs.iter().enumerate() {
            let mut o = ehsize + i * phent;
            o = b.u32(o, *kind);
            if spec.is_64 {
                o = b.u32(o, *flags);
            }
            o = b.word(o, *off as u64);
            o = b.word(o, *off as u64); // vaddr == offset
            o = b.word(o, *off as u64);
            o = b.word(o, *size as u64);
            o = b.word(o, *size as u64);
            if !spec.is_64 {
                o = b.u32(o, *flags);
            }
            b.word(o, *al);
        }

        // .hash: one bucket holding the last symbol, chains walking down.
        let mut o = b.u32(offs[1], 1);
        o = b.u32(o, nsym as u32);
        o = b.u32(o, nsym as u32 - 1);
        for i in 0..nsym {
            o = b.u32(o, if i <= 1 { 0 } else { i as u32 - 1 });
        }

        // .dynsym
        let text_shndx = 8u16;
        let mut syms: Vec<(u32, u8, u16, u64, u64)> = vec![(0, 0, 0, 0, 0), (version_at, 0x11, 0xfff1, 0, 0)];
        for (i, at) in fn_at.iter().enumerate() {
            syms.push((*at, 0x12, text_shndx, (offs[8] + 16 * i) as u64, 16));
        }
        for (i, (name, info, shndx, value, size)) in syms.iter().enumerate() {
            let mut o = offs[2] + i * syment;
            o = b.u32(o, *name);
            if spec.is_64 {
                b.put(o, &[*info, 0]);
                o = b.u16(o + 2, *shndx);
                o = b.u64(o, *value);
                b.u64(o, *size);
            } else {
                o = b.u32(o, *value as u32);
                o = b.u32(o, *size as u32);
                b.put(o, &[*info, 0]);
                b.u16(o + 2, *shndx);
            }
        }
        b.put(offs[3], &dynstr);

        // .gnu.version
        let mut o = b.u16(offs[4], 0);
        o = b.u16(o, 2);
        for (_, hidden) in &spec.functions {
            o = b.u16(o, if *hidden { 0x8002 } else { 2 });
        }

        // .gnu.version_d: BASE (soname) then the version.
        for (i, (flags, name)) in [(1u16, soname_at), (0, version_at)].iter().enumerate() {
            let at = offs[5] + i * 28;
            let mut o = b.u16(at, 1);
            o = b.u16(o, *flags);
            o = b.u16(o, i as u16 + 1);
            o = b.u16(o, 1);
            let text = if i == 0 { spec.soname } else { spec.version };
            o = b.u32(o, elf_hash(text));
            o = b.u32(o, 20);
            o = b.u32(o, if i == 0 { 28 } else { 0 });
            o = b.u32(o, *name);
            b.u32(o, 0);
        }

        // .dynamic
        let dyns: [(u64, u64); 10] = [
            (14, u64::from(soname_at)),
            (4, offs[1] as u64),
            (5, offs[3] as u64),
            (6, offs[2] as u64),
            (10, dynstr.len() as u64),
            (11, syment as u64),
            (0x6fff_fffc, offs[5] as u64),
            (0x6fff_fffd, 2),
            (0x6fff_fff0, offs[4] as u64),
            (0, 0),
        ];
        for (i, (t, v)) in dyns.iter().enumerate() {
            let o = b.word(offs[6] + i * dynent, *t);
            b.word(o, *v);
        }
        b.put(offs[7], &note);
        for i in 0..spec.functions.len() {
            b.put(offs[8] + 16 * i, &[0xc3; 16]);
        }
        b.put(offs[9], &shstr);

        // Section headers: (type, flags, link, info, align, entsize)
        let shdrs: [(u32, u64, u32, u32, u64, u64); 10] = [
            (0, 0, 0, 0, 0, 0),
            (5, 2, 2, 0, 8, 4),
            (11, 2, 3, 2, 8, syment as u64),
            (3, 2, 0, 0, 1, 0),
            (0x6fff_ffff, 2, 2, 0, 2, 2),
            (0x6fff_fffd, 2, 3, 2, 8, 0),
            (6, 3, 3, 0, 8, dynent as u64),
            (7, 2, 0, 0, 4, 0),
            (1, 6, 0, 0, 16, 0),
            (3, 0, 0, 0, 1, 0),
        ];
        for (i, (kind, flags, link, info, al, ent)) in shdrs.iter().enumerate() {
            let mut o = b.u32(shoff + i * shent, name_at[i]);
            o = b.u32(o, *kind);
            o = b.word(o, *flags);
            o = b.word(o, if i == 0 || i == 9 { 0 } else { offs[i] as u64 });
            o = b.word(o, offs[i] as u64);
            o = b.word(o, sizes[i] as u64);
            o = b.u32(o, *link);
            o = b.u32(o, *info);
            o = b.word(o, *al);
            b.word(o, *ent);
        }
        b.bytes
    }

    /// NT_GNU_ABI_TAG's descriptor: OS, major, minor, subminor.
    pub fn abi_tag(le: bool, os: u32, v: [u32; 3]) -> Vec<u8> {
        let mut d = Vec::new();
        for x in [os, v[0], v[1], v[2]] {
            d.extend_from_slice(&if le { x.to_le_bytes() } else { x.to_be_bytes() });
        }
        d
    }
}

/// The shape of an emulator's synthetic aarch64 vDSO (QEMU linux-user,
/// gVisor): `__kernel_*` names, LINUX_2.6.39, only DT_HASH, an ABI tag note.
fn emulator_spec(is_64: bool, le: bool, machine: u16) -> synth::Spec {
    synth::Spec {
        is_64,
        le,
        machine,
        soname: "linux-vdso.so.1",
        version: "LINUX_2.6.39",
        functions: vec![
            ("__kernel_rt_sigreturn", false),
            ("__kernel_gettimeofday", false),
            ("__kernel_clock_gettime", false),
            ("__kernel_clock_getres", false),
            ("__kernel_hidden_probe", true),
        ],
        notes: vec![
            ("GNU", 1, synth::abi_tag(le, 0, [3, 2, 0])),
            ("Linux", 0, {
                let code: u32 = (6 << 16) | (18 << 8) | 44;
                if le { code.to_le_bytes() } else { code.to_be_bytes() }.to_vec()
            }),
        ],
    }
}

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
    assert_eq!(f[0]["severity"], "warn");
    assert!(f[0]["message"].as_str().unwrap().contains("musl looks vDSO symbols up through DT_HASH only"));
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
    assert_eq!(f[0]["severity"], "warn");
    assert_eq!(
        f[0]["message"],
        "version LINUX_2.6's vd_hash is 0x3ae75f7, not the ELF hash of its name (0x3ae75f6): glibc's and Go's vDSO lookups (and bench) bind none of its symbols, so their clock reads take the syscall"
    );
}

/// Patch the x86_64 fixture, write it, run `dump --file`, expect exit 3 and
/// one stderr line containing `needle`.
fn assert_malformed(label: &str, bytes: &[u8], needle: &str) {
    let path = tmp(&format!("malformed-{label}.so"));
    std::fs::write(&path, bytes).unwrap();
    assert_refused(path.to_str().unwrap(), needle);
}

fn assert_refused(path: &str, needle: &str) {
    let (code, out, err) = run(&["dump", "--file", path]);
    assert_eq!(code, 3, "{path}: stdout {out:?} stderr {err:?}");
    assert!(out.is_empty(), "{path}: stdout {out:?}");
    assert_eq!(err.lines().count(), 1, "{path}: {err:?}");
    assert!(err.starts_with("vdsoctl: "), "{err}");
    assert!(err.contains(needle), "{path}: expected {needle:?} in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
}

fn le_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

fn le_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn le_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn malformed_images_exit_3_with_one_line() {
    let good = std::fs::read(fixture("x86_64.so")).unwrap();
    let shoff = 0x1600usize;
    assert_eq!(u64::from_le_bytes(good[40..48].try_into().unwrap()), shoff as u64, "fixture layout changed");

    assert_malformed("truncated-100", &good[..100], "runs past the end of the 100-byte image");
    assert_malformed("truncated-header", &good[..40], "truncated: 40 bytes, an ELF header needs 64");
    assert_malformed("empty", &[], "the image is empty");
    assert_malformed("not-elf", b"#!/bin/sh\necho not an elf\n", "not an ELF file");

    let mut b = good.clone();
    le_u16(&mut b, 60, 0xffff); // e_shnum
    assert_malformed("shnum", &b, "section header table (65535 entries");

    let mut b = good.clone();
    le_u16(&mut b, 56, 0xffff); // e_phnum
    assert_malformed("phnum", &b, "program header table (65535 entries");

    let mut b = good.clone();
    le_u16(&mut b, 62, 200); // e_shstrndx
    assert_malformed("shstrndx", &b, "e_shstrndx 200 names no section");

    let mut b = good.clone();
    le_u64(&mut b, shoff + 3 * 64 + 24, 0x7fff_ffff_0000); // .dynsym sh_offset
    assert_malformed("dynsym-offset", &b, "section 3 (offset 0x7fffffff0000");

    let mut b = good.clone();
    le_u64(&mut b, shoff + 3 * 64 + 32, 1 << 40); // .dynsym sh_size
    assert_malformed("dynsym-size", &b, "section 3");

    let mut b = good.clone();
    assert_eq!(b[0x440 + 5 * 16], 5, "DT_STRTAB expected at .dynamic[5]");
    b[0x440 + 5 * 16] = 21; // DT_STRTAB -> DT_DEBUG: no string table
    assert_malformed("no-strtab", &b, "no DT_STRTAB/DT_STRSZ");

    let mut b = good.clone();
    le_u32(&mut b, shoff + 3 * 64 + 40, 9); // .dynsym sh_link -> .rodata
    assert_malformed("dynsym-link", &b, ".dynsym's sh_link 9 is not a string table");

    // .gnu.version_d at 0x408: entry 1 (0x424) points back to entry 0, and
    // sh_info claims a third entry so the walk would go round.
    let mut b = good.clone();
    le_u32(&mut b, shoff + 6 * 64 + 44, 3);
    le_u32(&mut b, 0x424 + 16, 0u32.wrapping_sub(0x1c));
    assert_malformed("verdef-cycle", &b, "version definition chain loops");
}

#[test]
fn files_that_are_not_images_are_refused() {
    assert_refused("/dev/zero", "/dev/zero is a character device, not a vDSO image file");
    let dir = tmp("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    assert_refused(dir.to_str().unwrap(), "is a directory");
    assert_refused("/nonexistent/vdso.so", "cannot read /nonexistent/vdso.so");

    let sparse = tmp("sparse-1g.so");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    assert_refused(sparse.to_str().unwrap(), "is 1 GiB, more than the 4 MiB limit");
    std::fs::remove_file(&sparse).unwrap();
}

/// The [vdso] bytes of `pid`, read by the test itself.
fn vdso_bytes(pid: i32) -> (u64, Vec<u8>) {
    use std::os::unix::fs::FileExt;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let line = maps.lines().find(|l| l.ends_with("[vdso]")).expect("[vdso] mapping");
    let (start, end) = line.split_whitespace().next().unwrap().split_once('-').unwrap();
    let (start, end) = (u64::from_str_radix(start, 16).unwrap(), u64::from_str_radix(end, 16).unwrap());
    let mut buf = vec![0u8; (end - start) as usize];
    std::fs::File::open(format!("/proc/{pid}/mem")).unwrap().read_exact_at(&mut buf, start).unwrap();
    (start, buf)
}

fn check_live(m32: bool) {
    let bin = common::build_c("wait_ready", m32, &[]);
    let w = Workload::start(Command::new(bin));
    let pid = w.pid();
    let out = tmp(&format!("live-{pid}.so"));
    let json = run_json(&["dump", "-p", &pid.to_string(), "-o", out.to_str().unwrap()]);
    let (start, expect) = vdso_bytes(pid);
    let written = std::fs::read(&out).unwrap();
    assert_eq!(written.len(), expect.len());
    assert!(written == expect, "-o output differs from the [vdso] bytes of pid {pid}");
    assert_eq!(json["process"]["pid"], pid);
    assert!(json["process"]["comm"].as_str().unwrap().starts_with("wait_ready"), "{}", json["process"]);
    assert_eq!(json["elf"]["base"], format!("{start:#x}"));
    assert_eq!(json["elf"]["size"], expect.len() as u64);
    assert_eq!(json["elf"]["class"], if m32 { "ELF32" } else { "ELF64" });
    let cg = json["symbols"].as_array().unwrap().iter().find(|s| s["name"] == "__vdso_clock_gettime").unwrap();
    assert_eq!(cg["version"], "LINUX_2.6");
    assert_eq!(json["findings"], serde_json::json!([]));
    // objdump reads what we wrote.
    if let Some(text) = tool("objdump", &["-T"], &out) {
        assert!(parse_objdump_t(&text).iter().any(|s| s.name == "__vdso_clock_gettime" && s.version == "LINUX_2.6"));
    }
    std::fs::remove_file(&out).unwrap();
}

#[test]
fn live_64bit_process_dump_equals_mapping() {
    check_live(false);
}

#[test]
fn live_32bit_process_dump_equals_mapping() {
    if !common::have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    check_live(true);
}

#[test]
fn own_process_by_default_and_bad_pid() {
    let json = run_json(&["dump"]);
    assert_eq!(json["process"]["comm"], "vdsoctl");
    assert!(json["elf"]["base"].as_str().unwrap().starts_with("0x"));
    let (code, _, err) = run(&["dump", "-p", "999999999"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("no process with pid 999999999"), "{err}");
}

/// Byte offset of section `idx`'s header field `field` in an ELF64 LE image.
fn shdr64(b: &[u8], idx: usize, field: usize) -> usize {
    let shoff = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
    shoff + idx * 64 + field
}

/// Set a 64-bit field of section `idx`'s header.
fn sh64(b: &mut [u8], idx: usize, field: usize, v: u64) {
    let at = shdr64(b, idx, field);
    le_u64(b, at, v);
}

/// Set a 32-bit field of section `idx`'s header.
fn sh32(b: &mut [u8], idx: usize, field: usize, v: u32) {
    let at = shdr64(b, idx, field);
    le_u32(b, at, v);
}

/// Index of the first section of type `sh_type` in an ELF64 LE image.
fn section_of_type(b: &[u8], sh_type: u32) -> usize {
    let shnum = u16::from_le_bytes(b[60..62].try_into().unwrap()) as usize;
    (0..shnum).find(|&i| u32::from_le_bytes(b[shdr64(b, i, 4)..][..4].try_into().unwrap()) == sh_type).unwrap()
}

/// Output of a binutils tool with its stderr, or None when it is not installed.
fn tool_with_stderr(prog: &str, args: &[&str], file: &Path) -> Option<(String, String)> {
    let out = Command::new(prog).args(args).arg(file).env("LC_ALL", "C").output().ok()?;
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

#[test]
fn note_with_bad_sizes_ends_its_area_with_a_finding() {
    let mut b = std::fs::read(fixture("x86_64.so")).unwrap();
    // .note at 0x5a8: "Linux" type 0 (24 bytes), then the build salt at 0x5c0.
    assert_eq!(u32::from_le_bytes(b[0x5c0..0x5c4].try_into().unwrap()), 6, "fixture layout changed");
    le_u32(&mut b, 0x5c0, 0xffff_fff0);
    let path = tmp("note-bad-size.so");
    std::fs::write(&path, &b).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    let notes = json["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["description"], "6.18.44");
    let f = json["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0]["severity"], "warn");
    assert_eq!(
        f[0]["message"],
        "the note at offset 0x5c0 (namesz 0xfffffff0, descsz 0x1e) runs past its area: readelf stops there too (\"note with invalid namesz and/or descsz\"); the notes before it are listed"
    );
    if let Some((out, err)) = tool_with_stderr("readelf", &["-n"], &path) {
        assert!(err.contains("note with invalid namesz and/or descsz"), "{err}");
        assert_eq!(parse_readelf_n(&out).len(), 1, "{out}");
    }
}

#[test]
fn misaligned_note_area_is_decoded_and_flagged_as_readelf_rejects_it() {
    let mut b = std::fs::read(fixture("aarch64.so")).unwrap();
    let note = section_of_type(&b, 7);
    sh64(&mut b, note, 48, 16);
    let off = u64::from_le_bytes(b[shdr64(&b, note, 24)..][..8].try_into().unwrap());
    let path = tmp("note-align-16.so");
    std::fs::write(&path, &b).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    let names: Vec<&str> = json["notes"].as_array().unwrap().iter().map(|n| n["type_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["NT_GNU_BUILD_ID", "LINUX_VERSION_CODE", "LINUX_ELFNOTE_BUILD_SALT"]);
    assert_eq!(json["notes"][1]["description"], "6.1.170");
    let f = json["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        f[0]["message"].as_str().unwrap(),
        format!("the note area at offset {off:#x} has alignment 16: readelf rejects it whole (\"Corrupt note: alignment 16, expecting 4 or 8\"); its notes are decoded here as 4-byte aligned")
    );
    if let Some((out, err)) = tool_with_stderr("readelf", &["-n"], &path) {
        assert!(err.contains("Corrupt note: alignment 16, expecting 4 or 8"), "{err}");
        assert!(!out.contains("Build ID"), "{out}");
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
    assert_eq!(f[0]["severity"], "fail");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("not a vDSO: its soname is libclock.so.1 (a vDSO's is linux-vdso.so.1"),
        "{}",
        f[0]["message"]
    );

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
fn pipes_and_pseudo_files_are_refused_without_reading() {
    let fifo = tmp("a-fifo");
    let _ = std::fs::remove_file(&fifo);
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Nobody writes to it: a read would block forever.
    assert_refused(
        fifo.to_str().unwrap(),
        "is a FIFO (its length is unknown and a read may never end), not a vDSO image file",
    );
    std::fs::remove_file(&fifo).unwrap();
    assert_refused("/proc/self/status", "/proc/self/status is a procfs pseudo-file");
    for pipe in ["/sys/kernel/tracing/trace_pipe", "/sys/kernel/debug/tracing/trace_pipe"] {
        if Path::new(pipe).exists() {
            assert_refused(pipe, "is a tracefs pseudo-file (its size says nothing and a read may never end)");
        }
    }
}

/// Run `dump -o target` on the x86_64 fixture; (code, stderr).
fn dump_to(target: &Path) -> (i32, String) {
    let (code, _, err) =
        run(&["dump", "--file", fixture("x86_64.so").to_str().unwrap(), "-o", target.to_str().unwrap()]);
    (code, err)
}

/// A fresh directory under the test tmp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = tmp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn output_replaces_a_regular_file_whole() {
    let dir = fresh_dir("out-regular");
    let target = dir.join("vdso.so");
    std::fs::write(&target, vec![b'x'; 20000]).unwrap();
    let (code, err) = dump_to(&target);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&target).unwrap() == std::fs::read(fixture("x86_64.so")).unwrap());
    assert_eq!(entries(&dir), ["vdso.so"]);
}

#[test]
fn output_never_writes_through_a_symlink() {
    let dir = fresh_dir("out-symlink");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.join("vdso.so");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let (code, err) = dump_to(&link);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("it is a symbolic link — vdsoctl creates a file or replaces a regular one"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(entries(&dir), ["vdso.so", "victim"]);
}

#[test]
fn output_refuses_fifo_directory_and_devices_without_opening_them() {
    let dir = fresh_dir("out-special");
    let fifo = dir.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let (code, err) = dump_to(&fifo);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("it is a FIFO"), "{err}");
    // Refused without opening: an open for writing would block until a
    // reader came, and none ever does, so this test would hang, not fail.
    let (code, err) = dump_to(&dir);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("it is a directory"), "{err}");
    let (code, err) = dump_to(Path::new("/dev/full"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("refusing to write /dev/full: it is a character device"), "{err}");
    let (code, err) = dump_to(Path::new("/dev/null"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("it is a character device"), "{err}");
    assert_eq!(entries(&dir), ["fifo"]);
}

#[test]
fn output_on_a_full_filesystem_leaves_no_partial_file() {
    if !common::is_root() {
        return skip("mounting a tiny tmpfs needs root");
    }
    let dir = fresh_dir("out-enospc");
    let ok = Command::new("mount").args(["-t", "tmpfs", "-o", "size=4k", "tmpfs"]).arg(&dir).status().unwrap();
    assert!(ok.success(), "mount tmpfs on {}", dir.display());
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(dir.clone());
    let old = dir.join("old.so");
    std::fs::write(&old, b"old").unwrap();
    // 8 KiB into a one-page filesystem: ENOSPC part way.
    let (code, err) = dump_to(&dir.join("new.so"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cannot write") && err.contains("no space left on device (ENOSPC)"), "{err}");
    assert_eq!(entries(&dir), ["old.so"]);
    // Replacing a file that exists: it stays as it was.
    let (code, err) = dump_to(&old);
    assert_eq!(code, 3, "{err}");
    assert_eq!(std::fs::read(&old).unwrap(), b"old");
    assert_eq!(entries(&dir), ["old.so"]);
}
