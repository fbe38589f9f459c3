//! `dump`'s report: the vDSO image as `objdump -T` and `readelf` show it,
//! and what the C library can bind in it, judged.

use super::image::{self, ImageProblem};
use super::{hex, hex_opt, ProcessRef};
use crate::arch;
use crate::inspect::elf::{self, Image};
use serde::Serialize;

/// The `dump` report (DESIGN keys: `process` or `file`, elf, symbols,
/// versions, notes, findings).
#[derive(Debug, Serialize)]
pub struct DumpReport {
    #[serde(flatten)]
    pub source: Source,
    pub elf: ElfInfo,
    pub symbols: Vec<SymbolRow>,
    pub versions: Vec<VersionRow>,
    pub notes: Vec<NoteRow>,
    pub hash_tables: HashTables,
    /// What is wrong with the image, typed; JSON has each as a finding
    /// (kind, severity, message, hint), worded in render/vdso.rs.
    pub findings: Vec<ImageProblem>,
}

/// Where the image came from: `"process": {"pid":N,"comm":"..."}` or
/// `"file": "..."`, at the top level of the document.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Source {
    Process { process: ProcessRef },
    File { file: String },
}

/// The ELF header facts.
#[derive(Debug, Serialize)]
pub struct ElfInfo {
    /// `ELF64` or `ELF32`.
    pub class: String,
    /// `little` or `big`.
    pub endian: String,
    /// readelf-style name (`x86_64`, `aarch64`) or hex.
    pub machine: String,
    pub e_machine: u16,
    /// `DYN` for every real vDSO.
    #[serde(rename = "type")]
    pub elf_type: String,
    pub soname: Option<String>,
    /// Image size in bytes.
    pub size: u64,
    /// Runtime address of the mapping; null for a file.
    #[serde(serialize_with = "hex_opt")]
    pub base: Option<u64>,
}

/// One dynamic symbol, as objdump -T shows it.
#[derive(Debug, Serialize)]
pub struct SymbolRow {
    pub name: String,
    /// The version name (`LINUX_2.6`); null when the symbol has none.
    pub version: Option<VersionName>,
    /// A hidden (non-default) version: objdump prints it `(LINUX_2.6)`.
    pub version_hidden: bool,
    /// st_value as `objdump -T` prints it (a 32-bit ARM function's Thumb bit cleared).
    #[serde(serialize_with = "hex")]
    pub value: u64,
    /// A 32-bit ARM Thumb function (st_value had bit 0 set).
    pub thumb: bool,
    pub size: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub bind: String,
    /// `.text`, `*ABS*`, ...; null when the index names no section.
    pub section: Option<String>,
    /// What a defined function symbol is for (`arch::export_role`: a
    /// function of the table, an alias, another syscall's fast path, no
    /// syscall's, or `unknown`); null for the other symbols.
    pub serves: Option<crate::arch::ExportRole>,
}

/// A symbol's version: its definition's name, or the index no definition
/// has (JSON and the table say `<index N>`, render/dump.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionName {
    Named(String),
    Unnamed(u16),
}

/// One version definition (readelf -V).
#[derive(Debug, Serialize)]
pub struct VersionRow {
    pub name: String,
    pub index: u16,
    /// `BASE`, `WEAK`, `none`.
    pub flags: String,
    /// Versions this one inherits from.
    pub parents: Vec<String>,
}

/// One note (readelf -n).
#[derive(Debug, Serialize)]
pub struct NoteRow {
    pub owner: String,
    /// n_type as a number; see `type_name`.
    #[serde(rename = "type")]
    pub n_type: u32,
    pub type_name: Option<String>,
    /// Descriptor size in bytes (n_descsz).
    pub size: u64,
    /// Decoded descriptor (`6.18.44`, build-id hex, `OS: Linux, ABI: 2.6.39`); null when unknown.
    pub description: Option<String>,
    /// The descriptor bytes in hex (the first 4096 of a longer one).
    pub data: String,
}

/// Which symbol hash tables the dynamic section names.
#[derive(Debug, Serialize)]
pub struct HashTables {
    pub dt_hash: bool,
    pub dt_gnu_hash: bool,
}

/// Findings about the image: whether it is a vDSO at all, what the parser
/// read past, and what the C library can bind in it (judged in [`model::image`]).
pub fn findings(img: &Image) -> Vec<ImageProblem> {
    image::problems(img)
}

/// Build the report from a parsed image.
pub fn report(source: Source, base: Option<u64>, img: &Image) -> DumpReport {
    let symbols = img
        .symbols
        .iter()
        .map(|s| SymbolRow {
            name: s.name.clone(),
            version: s
                .version
                .as_ref()
                .map(|v| v.name.clone().map_or(VersionName::Unnamed(v.index), VersionName::Named)),
            version_hidden: s.version.as_ref().is_some_and(|v| v.hidden),
            value: s.value,
            thumb: s.thumb,
            size: s.size,
            kind: elf::type_name(s.kind),
            bind: elf::bind_name(s.bind),
            section: s.section.clone(),
            serves: super::host::is_export(s).then(|| crate::arch::export_role(img.machine, img.is_64, &s.name)),
        })
        .collect();
    let versions = img
        .versions
        .iter()
        .map(|v| VersionRow { name: v.name.clone(), index: v.index, flags: v.flags_text(), parents: v.parents.clone() })
        .collect();
    let notes = img
        .notes
        .iter()
        .map(|n| NoteRow {
            owner: n.owner.clone(),
            n_type: n.n_type,
            type_name: n.type_name.map(str::to_string),
            size: n.size,
            description: n.description.clone(),
            data: n.desc.iter().map(|b| format!("{b:02x}")).collect(),
        })
        .collect();
    DumpReport {
        source,
        elf: ElfInfo {
            class: if img.is_64 { "ELF64" } else { "ELF32" }.into(),
            endian: if img.little_endian { "little" } else { "big" }.into(),
            machine: arch::machine_name(img.machine),
            e_machine: img.machine,
            elf_type: elf::elf_type_name(img.elf_type),
            soname: img.soname.clone(),
            size: img.size,
            base,
        },
        symbols,
        versions,
        notes,
        hash_tables: HashTables { dt_hash: img.has_hash, dt_gnu_hash: img.has_gnu_hash },
        findings: findings(img),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> Image {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso").join(name);
        elf::parse(&std::fs::read(path).unwrap()).unwrap()
    }

    /// Every export of every committed image is accounted for: each
    /// defined function has a role, none is unknown to vdsoctl (ppc64's
    /// get_syscall_map, get_tbfreq, sync_dicache and sigtramp; riscv64's
    /// hwprobe, flush_icache and rt_sigreturn; s390x's restart and
    /// sigreturn trampolines; x86's aliases).
    #[test]
    fn every_export_of_every_image_has_its_role() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "so") {
                continue;
            }
            let img = elf::parse(&std::fs::read(&path).unwrap()).unwrap();
            let r = report(Source::File { file: "x".into() }, None, &img);
            for sym in &r.symbols {
                if let Some(role) = sym.serves {
                    seen += 1;
                    assert_ne!(role, crate::arch::ExportRole::Unknown, "{} in {}", sym.name, path.display());
                }
            }
        }
        assert!(seen > 40, "{seen} exports");
        let role = |name| crate::arch::export_role(crate::arch::machine::PPC64, true, name);
        assert_eq!(
            role("__kernel_get_syscall_map"),
            crate::arch::ExportRole::NotASyscall(crate::arch::NotASyscall::SyscallMap)
        );
        assert_eq!(
            role("__kernel_clock_gettime"),
            crate::arch::ExportRole::Function(crate::arch::VdsoFn::ClockGettime)
        );
        assert_eq!(role("__kernel_new_thing"), crate::arch::ExportRole::Unknown);
        let x86 = |name| crate::arch::export_role(crate::arch::machine::X86_64, true, name);
        assert_eq!(
            x86("__vdso_futex_robust_list64_try_unlock"),
            crate::arch::ExportRole::Function(crate::arch::VdsoFn::FutexRobustList64TryUnlock)
        );
        assert_eq!(
            x86("__vdso_futex_robust_list32_try_unlock"),
            crate::arch::ExportRole::Function(crate::arch::VdsoFn::FutexRobustList32TryUnlock)
        );
        let rv = crate::arch::export_role(crate::arch::machine::RISCV, true, "__vdso_riscv_hwprobe");
        assert!(matches!(rv, crate::arch::ExportRole::FastPath { syscall: "riscv_hwprobe", .. }));
        // JSON: typed, the role and what it is of.
        assert_eq!(serde_json::to_value(rv).unwrap()["role"], "fast_path");
    }

    #[test]
    fn host_images_have_no_findings() {
        assert_eq!(findings(&fixture("x86_64.so")), vec![]);
        assert_eq!(findings(&fixture("i386.so")), vec![]);
    }

    #[test]
    fn missing_symbol_version_and_hash_are_findings() {
        let mut img = fixture("x86_64.so");
        img.symbols.retain(|s| s.name != "__vdso_time");
        for s in img.symbols.iter_mut().filter(|s| s.name == "__vdso_getcpu") {
            s.version.as_mut().unwrap().name = Some("LINUX_9".into());
        }
        img.has_hash = false;
        let f: Vec<_> = findings(&img).iter().map(ImageProblem::finding).collect();
        let text: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 3, "{text:?}");
        assert!(text[0].starts_with("the vDSO exports no __vdso_time: time()"), "{}", text[0]);
        assert!(
            text[1].starts_with("__vdso_getcpu is versioned LINUX_9 but the C library binds LINUX_2.6"),
            "{}",
            text[1]
        );
        assert!(text[2].contains("musl"), "{}", text[2]);
    }

    #[test]
    fn json_keys_follow_design() {
        let img = fixture("x86_64.so");
        let r = report(Source::File { file: "x.so".into() }, None, &img);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["file"], "x.so");
        assert!(v.get("source").is_none() && v.get("process").is_none());
        for k in ["class", "machine", "soname", "size", "base"] {
            assert!(v["elf"].get(k).is_some(), "elf.{k}");
        }
        assert_eq!(v["elf"]["base"], serde_json::Value::Null);
        let cg = v["symbols"].as_array().unwrap().iter().find(|s| s["name"] == "__vdso_clock_gettime").unwrap();
        assert_eq!(cg["version"], "LINUX_2.6");
        assert!(cg["value"].as_str().unwrap().starts_with("0x"));
        for k in ["name", "version", "value", "size", "type", "bind", "section"] {
            assert!(cg.get(k).is_some(), "symbols[].{k}");
        }
        assert_eq!(v["versions"][1]["name"], "LINUX_2.6");
        assert_eq!(v["notes"][0]["description"], "6.18.44");
    }
}
