//! The typed JSON contract of `dump`, `maps` and `auxv`.

use super::*;

// ---- dump ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Dump {
    process: Option<ProcessRef>,
    file: Option<String>,
    elf: DumpElf,
    symbols: Vec<DumpSymbol>,
    versions: Vec<DumpVersion>,
    notes: Vec<DumpNote>,
    hash_tables: HashTables,
    findings: Vec<Finding>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DumpElf {
    class: String,
    endian: String,
    machine: String,
    e_machine: u16,
    #[serde(rename = "type")]
    elf_type: String,
    soname: Option<String>,
    size: u64,
    base: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DumpSymbol {
    name: String,
    version: Option<String>,
    version_hidden: bool,
    value: String,
    thumb: bool,
    size: u64,
    #[serde(rename = "type")]
    kind: String,
    bind: String,
    section: Option<String>,
    /// What a defined function export is for ({`role`, `of`}); `null` otherwise.
    #[serde(default)]
    serves: Option<ExportRole>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ExportRole {
    role: String,
    #[serde(default)]
    of: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DumpVersion {
    name: String,
    index: u16,
    flags: String,
    parents: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DumpNote {
    owner: String,
    #[serde(rename = "type")]
    n_type: u32,
    type_name: Option<String>,
    size: u64,
    description: Option<String>,
    data: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HashTables {
    dt_hash: bool,
    dt_gnu_hash: bool,
}

#[test]
fn dump_of_a_process_and_of_a_file() {
    let w = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let d: Dump = doc(&["dump", "-p", &w.pid().to_string()], &[0]);
    let p = d.process.expect("dump -p names the process");
    assert_eq!(p.pid, w.pid());
    assert!(p.comm.starts_with("wait_ready"), "{}", p.comm);
    assert!(d.file.is_none());
    assert_eq!((d.elf.class.as_str(), d.elf.endian.as_str()), ("ELF64", "little"));
    assert_eq!(d.elf.e_machine, vdsoctl::arch::HOST_MACHINE);
    assert_eq!(d.elf.soname.as_deref(), Some("linux-vdso.so.1"));
    assert!(d.elf.size > 0 && !d.elf.machine.is_empty() && !d.elf.elf_type.is_empty());
    let base = addr(d.elf.base.as_deref().expect("a live image has a base"));
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", w.pid())).unwrap();
    let vdso = maps.lines().find(|l| l.ends_with("[vdso]")).expect("a [vdso] line");
    let start = u64::from_str_radix(vdso.split('-').next().unwrap(), 16).unwrap();
    assert_eq!(base, start, "the base is where /proc/PID/maps has [vdso]");
    let cg = d.symbols.iter().find(|s| s.name.contains("clock_gettime")).expect("clock_gettime exported");
    assert_eq!((cg.kind.as_str(), cg.thumb), ("FUNC", false));
    assert!(cg.serves.as_ref().is_some_and(|r| ["function", "alias"].contains(&r.role.as_str())), "{cg:?}");
    assert!(["GLOBAL", "WEAK"].contains(&cg.bind.as_str()), "{cg:?}");
    assert!(cg.version.as_deref().is_some_and(|v| v.starts_with("LINUX_")) && !cg.version_hidden);
    assert!(addr(&cg.value) > 0 && cg.size > 0 && cg.section.as_deref() == Some(".text"));
    assert!(d.versions.iter().any(|v| v.index == 1 && v.flags == "BASE" && v.parents.is_empty() && !v.name.is_empty()));
    assert!(d.notes.iter().any(|n| n.owner == "Linux" && n.n_type == 0 && n.size == 4 && !n.data.is_empty()));
    assert!(d.notes.iter().all(|n| n.type_name.is_some() || n.description.is_none()));
    assert!(d.hash_tables.dt_hash || d.hash_tables.dt_gnu_hash);
    assert!(d.findings.iter().all(|f| !f.message.is_empty() && f.hint.as_deref() != Some("")));

    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/vdso/x86_64.so");
    let f: Dump = doc(&["dump", "--file", fixture], &[0]);
    assert_eq!(f.file.as_deref(), Some(fixture));
    assert!(f.process.is_none() && f.elf.base.is_none());
}

// ---- maps ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Maps {
    process: ProcessRef,
    mappings: Vec<Mapping>,
    vsyscall: Vsyscall,
    time_namespace: Option<TimeNamespace>,
    vdso_exports: Option<Vec<VdsoExport>>,
    findings: Vec<Finding>,
}

/// One export of the process's `[vdso]` and what it serves (`maps`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VdsoExport {
    name: String,
    serves: ExportRole,
}

/// A process's time namespace (`maps`), `null` before Linux 5.6.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeNamespace {
    #[allow(dead_code)]
    inode: u64,
    vdsoctl_inode: Option<u64>,
    other: bool,
    offsets: Vec<TimeOffset>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeOffset {
    clock: Clock,
    #[allow(dead_code)]
    seconds: i64,
    #[allow(dead_code)]
    nanoseconds: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mapping {
    name: String,
    start: String,
    end: String,
    size: u64,
    perms: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Vsyscall {
    mode: String,
    source: String,
    mapping_mode: Option<String>,
    cmdline: Option<String>,
}

#[test]
fn maps_of_a_process() {
    let w = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let m: Maps = doc(&["maps", "-p", &w.pid().to_string()], &[0]);
    assert_eq!(m.process.pid, w.pid());
    assert!(m.process.comm.starts_with("wait_ready"));
    let vdso = m.mappings.iter().find(|x| x.name == "[vdso]").expect("[vdso] row");
    assert_eq!(addr(&vdso.end) - addr(&vdso.start), vdso.size);
    assert_eq!(vdso.perms, "r-xp");
    assert!(["emulate", "xonly", "none"].contains(&m.vsyscall.mode.as_str()), "{:?}", m.vsyscall);
    assert!(!m.vsyscall.source.is_empty());
    assert!(m.vsyscall.mapping_mode.as_deref().is_none_or(|x| ["emulate", "xonly", "none"].contains(&x)));
    assert!(m.vsyscall.cmdline.as_deref() != Some(""));
    assert!(m.findings.iter().all(|f| !f.message.is_empty()));
    let exports = m.vdso_exports.as_ref().expect("the [vdso] is readable");
    let cg = exports.iter().find(|e| e.name.ends_with("clock_gettime")).expect("a clock_gettime export");
    assert!(["function", "alias"].contains(&cg.serves.role.as_str()) && cg.serves.of.is_some(), "{cg:?}");
    // The workload shares vdsoctl's time namespace: nothing said about it.
    if let Some(ns) = &m.time_namespace {
        assert!(!ns.other && ns.vdsoctl_inode.is_some(), "{ns:?}");
        ns.offsets.iter().for_each(|o| o.clock.assert_well_named());
    }
}

// ---- auxv ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Auxv {
    process: ProcessRef,
    word_bits: u32,
    entries: Vec<AuxvEntry>,
    sysinfo_ehdr_matches_vdso: Option<bool>,
    vdso_start: Option<String>,
    findings: Vec<Finding>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuxvEntry {
    key: u64,
    name: Option<String>,
    value: String,
    decoded: Decoded,
}

/// `decoded`, typed: a count, a string, flag names, or null.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Decoded {
    Count(u64),
    Text(String),
    Names(Vec<String>),
    Nothing(()),
}

#[test]
fn auxv_of_a_process() {
    let w = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let a: Auxv = doc(&["auxv", "-p", &w.pid().to_string()], &[0]);
    assert_eq!(a.process.pid, w.pid());
    assert_eq!(a.word_bits, 64);
    assert_eq!(a.sysinfo_ehdr_matches_vdso, Some(true));
    let ehdr = a.entries.iter().find(|e| e.name.as_deref() == Some("AT_SYSINFO_EHDR")).unwrap();
    assert_eq!(ehdr.key, 33);
    assert_eq!(Some(ehdr.value.clone()), a.vdso_start);
    assert!(matches!(ehdr.decoded, Decoded::Nothing(())), "an address is `value` alone: {ehdr:?}");
    let pagesz = a.entries.iter().find(|e| e.key == 6).unwrap();
    assert!(matches!(pagesz.decoded, Decoded::Count(n) if n == addr(&pagesz.value)), "{pagesz:?}");
    let execfn = a.entries.iter().find(|e| e.key == 31).unwrap();
    assert!(matches!(&execfn.decoded, Decoded::Text(t) if t.ends_with("wait_ready")), "{execfn:?}");
    assert!(a.entries.iter().all(|e| !matches!(&e.decoded, Decoded::Names(n) if n.iter().any(String::is_empty))));
    // What a healthy vector says: its AT_SYSINFO_EHDR is the vDSO, once.
    let [f] = &a.findings[..] else { panic!("one finding: {:?}", a.findings) };
    assert_eq!(
        (f.kind.0.as_str(), &f.severity, f.hint.as_deref()),
        ("sysinfo-ehdr-ok", &Severity::Info, None),
        "{f:?}"
    );
    // Needs typed data: the finding's address is only in its words (the entry has it typed).
    assert!(f.message.contains(&ehdr.value), "{f:?}");
}
