//! `dump` integration tests: the committed host images against binutils'
//! own view of them (golden files, and the live tools when present),
//! synthetic images of foreign shapes, malformed input through the binary,
//! and live 64-bit and 32-bit processes.

use super::common::{self, run, run_json, skip, Workload};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod binutils;
mod live;
mod malformed;
mod output;
pub mod synth;
mod synthetic;

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
const FIXTURES: [&str; 16] = [
    "x86_64",
    "i386",
    "x86_64-7.3",
    "i386-7.3",
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

/// Run `dump -o target` on the x86_64 fixture; (code, stderr).
fn dump_to(target: &Path) -> (i32, String) {
    let (code, _, err) =
        run(&["dump", "--file", fixture("x86_64.so").to_str().unwrap(), "-o", target.to_str().unwrap()]);
    (code, err)
}

/// `dump --json` says what every export of a foreign image is for, typed:
/// ppc64's get_syscall_map and sigtramp are no syscall's fast path,
/// riscv64's hwprobe is riscv_hwprobe's (6.5), its getcpu a function of
/// the table; none is unknown, and a non-function symbol has `null`.
#[test]
fn dump_json_names_what_every_export_serves() {
    let serves = |image: &str, name: &str| {
        let doc = run_json(&["dump", "--file", fixture(image).to_str().unwrap()]);
        let syms = doc["symbols"].as_array().unwrap().clone();
        assert!(
            syms.iter()
                .filter(|s| s["type"] == "FUNC")
                .all(|s| s["serves"].is_object() && s["serves"]["role"] != "unknown"),
            "{image}: {syms:?}"
        );
        syms.into_iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("{name} in {image}"))["serves"].clone()
    };
    assert_eq!(
        serves("ppc64el.so", "__kernel_get_syscall_map"),
        serde_json::json!({"role": "not_a_syscall", "of": "syscall_map"})
    );
    assert_eq!(serves("ppc64el.so", "__kernel_sigtramp_rt64")["of"], "sigreturn_trampoline");
    assert_eq!(serves("ppc64el.so", "LINUX_2.6.15"), Value::Null);
    assert_eq!(
        serves("riscv64.so", "__vdso_riscv_hwprobe"),
        serde_json::json!({"role": "fast_path", "of": {"syscall": "riscv_hwprobe", "since": [6, 5]}})
    );
    assert_eq!(serves("riscv64.so", "__vdso_getcpu"), serde_json::json!({"role": "function", "of": "getcpu"}));
    assert_eq!(serves("x86_64.so", "time"), serde_json::json!({"role": "alias", "of": "time"}));
}
