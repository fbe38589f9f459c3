//! The JSON contract: every command's `--json` document deserializes into
//! typed structs that refuse unknown keys (as ripgrep's `tests/json.rs`
//! does), so a renamed, retyped or stray key fails here, not in a user's
//! pipeline. The rule of DESIGN.md "Output" is checked on the way: one
//! `process` {pid, comm} per per-process document, a clock named `CLOCK_*`
//! or by its number, lowercase status words, addresses as "0x..." strings.

use super::common::{
    build_c, comm_of, copy_executable, host_machine, missing_trace_facility, run, skip, start_armed, KillOnDrop,
    Workload,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::process::Command;

/// Run `vdsoctl --json ARGS`, expect `code`, parse stdout strictly as `T`.
fn doc<T: DeserializeOwned>(args: &[&str], codes: &[i32]) -> T {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert!(codes.contains(&code), "{args:?}: exit {code}\n{stdout}\n{stderr}");
    match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(e) => panic!("{args:?}: the document does not match the contract: {e}\n{stdout}"),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessRef {
    pid: i32,
    comm: String,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Severity {
    Info,
    Warn,
    Fail,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
enum Status {
    Skip,
    Info,
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Finding {
    severity: Severity,
    message: String,
    hint: Option<String>,
}

/// A clock as every document names it.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
enum Clock {
    Number(i64),
    Name(String),
}

impl Clock {
    /// `CLOCK_*`, or the perf engine's `other`/`any` buckets.
    fn assert_well_named(&self) {
        if let Clock::Name(n) = self {
            assert!(n.starts_with("CLOCK_") || n == "other" || n == "any", "clock named {n:?}");
        }
    }
}

/// An address: a `"0x..."` string.
fn addr(s: &str) -> u64 {
    let hex = s.strip_prefix("0x").unwrap_or_else(|| panic!("address {s:?} is not 0x-prefixed"));
    u64::from_str_radix(hex, 16).unwrap()
}

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
    findings: Vec<Finding>,
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
    let said = format!("AT_SYSINFO_EHDR {} is the start of [vdso]", ehdr.value);
    assert_eq!((&f.severity, f.message.as_str(), f.hint.as_deref()), (&Severity::Info, said.as_str(), None));
}

// ---- check ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckDoc {
    process: Option<ProcessRef>,
    /// `-p`: the executable's facts.
    binary: Option<BinaryFacts>,
    checks: Vec<Check>,
    binaries: Option<Vec<Binary>>,
    image: Option<ImageSummary>,
    command: Option<CommandRun>,
    status: Status,
    strict: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Check {
    name: String,
    status: Status,
    detail: String,
    hint: Option<String>,
}

/// A binary's facts as one typed object: `check -p`'s `binary`, and each
/// `--image` row's beside its flat keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct BinaryFacts {
    class: String,
    bits: u8,
    machine: String,
    arch: String,
    endian: String,
    linkage: String,
    interpreter: Option<String>,
    kind: String,
    runtime: String,
    runtime_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Binary {
    path: String,
    class: String,
    bits: u8,
    machine: String,
    /// Debian's name: `amd64`, `arm64`, `armhf`, `ppc64el`...
    arch: String,
    /// `little` or `big`.
    endian: String,
    linkage: String,
    interpreter: Option<String>,
    kind: String,
    runtime: String,
    runtime_version: Option<String>,
    binary: BinaryFacts,
    status: Status,
    detail: String,
    hint: Option<String>,
    random: RandomRoute,
}

/// What a binary's runtime does for random bytes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RandomRoute {
    /// `glibc`, `musl`, `go`, or null.
    runtime: Option<String>,
    version: Option<String>,
    /// `vdso`, `syscall`, `no_calls`, `not_on_arch`, `unknown`.
    path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImageSummary {
    root: String,
    entries: u64,
    skipped: Vec<String>,
    unreadable: Vec<(String, String)>,
    truncated: bool,
    excluded: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandRun {
    argv: Vec<String>,
    pid: i32,
    exit_status: Option<ExitStatus>,
    /// check's only: stopped at --timeout.
    #[serde(default)]
    timed_out: Option<bool>,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum ExitStatus {
    Code(i32),
    Signal(i32),
}

/// The document's status is the worst of its checks (skip and info count as ok).
fn assert_worst(c: &CheckDoc) {
    let worst = c.checks.iter().map(|k| &k.status).max().unwrap_or(&Status::Ok);
    assert_eq!(&c.status, worst.max(&Status::Ok), "{c:?}");
    assert!(c.checks.iter().all(|k| !k.name.is_empty() && !k.detail.is_empty() && k.hint.as_deref() != Some("")));
}

#[test]
fn check_of_the_host_and_of_a_process() {
    let host: CheckDoc = doc(&["check"], &[0, 1]);
    assert!(host.process.is_none() && host.binaries.is_none() && host.image.is_none() && host.command.is_none());
    assert!(host.binary.is_none());
    assert!(!host.strict);
    assert!(host.checks.iter().any(|c| c.name == "vdso_mapped"));
    assert_worst(&host);

    let w = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let p: CheckDoc = doc(&["check", "-p", &w.pid().to_string()], &[0, 1]);
    let process = p.process.as_ref().expect("check -p names the process");
    assert_eq!(process.pid, w.pid());
    assert!(process.comm.starts_with("wait_ready"));
    assert!(p.checks.iter().any(|c| c.name == "process_vdso_mapped" && c.status == Status::Ok));
    let b = p.binary.as_ref().expect("check -p carries the executable's facts");
    assert_eq!((b.bits, b.class.as_str(), b.linkage.as_str(), b.kind.as_str()), (64, "ELF64", "dynamic", "executable"));
    assert_eq!(b.runtime, "glibc", "{b:?}");
    assert!(b.runtime_version.is_some() && b.interpreter.as_deref().is_some_and(|i| i.contains("ld-linux")), "{b:?}");
    if cfg!(target_arch = "x86_64") {
        assert_eq!((b.machine.as_str(), b.arch.as_str(), b.endian.as_str()), ("x86_64", "amd64", "little"));
    }
    assert_worst(&p);
}

#[test]
fn check_of_a_small_image_tree() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("usr/bin")).unwrap();
    copy_executable(&build_c("wait_ready", false, &[]), &dir.path().join("usr/bin/wait_ready")).unwrap();
    let root = dir.path().to_str().unwrap();
    let c: CheckDoc = doc(&["check", "--image", root], &[0, 1]);
    let bins = c.binaries.as_ref().expect("--image lists binaries");
    let b = bins.iter().find(|b| b.path == "/usr/bin/wait_ready").expect("the program is listed");
    assert_eq!((b.class.as_str(), b.linkage.as_str(), b.kind.as_str()), ("ELF64", "dynamic", "executable"));
    assert_eq!((b.runtime.as_str(), b.status == Status::Ok), ("glibc", true), "{b:?}");
    assert!(b.interpreter.as_deref().is_some_and(|i| i.contains("ld-linux")));
    assert!(!b.machine.is_empty() && !b.detail.is_empty() && b.hint.is_none());
    if cfg!(target_arch = "x86_64") {
        assert_eq!((b.machine.as_str(), b.arch.as_str(), b.endian.as_str()), ("x86_64", "amd64", "little"));
    }
    // No libc in the tree: its version cannot be read, nor so what its
    // random bytes take.
    assert_eq!(b.runtime_version, None);
    assert_eq!((b.random.runtime.as_deref(), b.random.version.as_deref()), (Some("glibc"), None));
    assert_eq!(b.random.path, "unknown");
    // The typed object says what the flat keys say.
    let flat = BinaryFacts {
        class: b.class.clone(),
        bits: b.bits,
        machine: b.machine.clone(),
        arch: b.arch.clone(),
        endian: b.endian.clone(),
        linkage: b.linkage.clone(),
        interpreter: b.interpreter.clone(),
        kind: b.kind.clone(),
        runtime: b.runtime.clone(),
        runtime_version: b.runtime_version.clone(),
    };
    assert_eq!((b.binary.clone(), b.bits), (flat, 64));
    let image = c.image.as_ref().unwrap();
    assert_eq!(image.root, root);
    assert!(image.entries >= 3 && !image.truncated && image.unreadable.is_empty(), "{image:?}");
    assert!(image.skipped.iter().chain(&image.excluded).all(|s| !s.is_empty()));
    assert_worst(&c);
}

// ---- bench ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bench {
    results: Vec<BenchResult>,
    findings: Vec<Finding>,
    basis: String,
    verify: Option<Vec<serde_json::Value>>,
    plan: BenchPlan,
    paths: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchResult {
    function: String,
    clock: Option<Clock>,
    path: String,
    ns_per_call: Option<f64>,
    syscalls_per_call: Option<f64>,
    verdict: Option<String>,
    stats: Option<Stats>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stats {
    median: f64,
    min: f64,
    max: f64,
    mean: f64,
    stddev: Option<f64>,
    mad: f64,
    rounds: usize,
    batch: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchPlan {
    batch_ns: u64,
    rounds: u32,
}

#[test]
fn bench_quick() {
    let _lock = super::common::system_wide_lock();
    let b: Bench = doc(&["bench", "--quick"], &[0]);
    assert!(["counted", "timing"].contains(&b.basis.as_str()));
    assert!(b.verify.is_none());
    assert!(b.plan.batch_ns > 0 && b.plan.rounds > 0);
    assert!(b.paths.iter().all(|p| ["libc", "vdso", "syscall", "vsyscall"].contains(&p.as_str())));
    let mono = b
        .results
        .iter()
        .find(|r| r.function == "clock_gettime" && r.clock == Some(Clock::Name("CLOCK_MONOTONIC".into())))
        .expect("clock_gettime(CLOCK_MONOTONIC) measured");
    assert!(b.paths.contains(&mono.path));
    for r in &b.results {
        if let Some(c) = &r.clock {
            c.assert_well_named();
        }
        if let Some(s) = &r.stats {
            assert!(s.min <= s.median && s.median <= s.max && s.mean > 0.0 && s.mad >= 0.0 && s.rounds > 0);
            assert!(s.batch > 0 && s.stddev.is_none_or(|d| d >= 0.0));
            assert!(r.ns_per_call.is_some());
        }
        assert!(r.syscalls_per_call.is_none_or(|s| s >= 0.0));
        assert!(r.verdict.as_deref().is_none_or(|v| !v.is_empty()) && r.error.as_deref() != Some(""));
    }
    assert!(b.findings.iter().all(|f| !f.message.is_empty()));
}

// ---- trace ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trace {
    target: serde_json::Value,
    engine: String,
    engine_note: Option<String>,
    duration_ns: u64,
    counts: Vec<CountRow>,
    vsyscall_emulations: Vec<VsyscallRow>,
    unattributed: Vec<Unattributed>,
    lost: u64,
    /// getrandom start-up keys (one a process), summed.
    startup_keys: u64,
    unfollowed: u64,
    exited: Vec<Exited>,
    command: Option<CommandRun>,
    interrupted: bool,
    interval: Option<Interval>,
    findings: Vec<Finding>,
    stacks: Option<Vec<StackRow>>,
    stacks_lost: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CountRow {
    pid: i32,
    tid: Option<i32>,
    ppid: Option<i32>,
    comm: Option<String>,
    exe: Option<String>,
    cmdline: Option<Vec<String>>,
    cmdline_truncated: bool,
    syscall: String,
    abi: String,
    clock: Option<Clock>,
    /// getrandom's kind; `null` for the other syscalls.
    random: Option<RandomKind>,
    count: u64,
    per_sec: f64,
    expected: bool,
    cgroup: Option<String>,
    container: Option<Container>,
    unit: Option<String>,
    /// With `--sites` only.
    sites: Option<Vec<SiteRow>>,
    cost: Option<Cost>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum RandomKind {
    ByVdso,
    UnservedFlags,
    StartupKey,
    Served,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Container {
    runtime: String,
    id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SiteRow {
    count: u64,
    per_sec: f64,
    site: StackFrame,
    caller: Option<StackFrame>,
    class: String,
    fallback: Option<String>,
    clocksource: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cost {
    per_call_ns: f64,
    cpu_ns: u64,
    core_percent: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackRow {
    pid: i32,
    comm: Option<String>,
    count: u64,
    frames: Vec<StackFrame>,
    cut: Option<String>,
}

/// A frame as `--stacks` names it (the resolver's object, symbol, offset).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackFrame {
    address: String,
    kind: String,
    object: Option<String>,
    symbol: Option<String>,
    offset: String,
    build_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VsyscallRow {
    pid: i32,
    comm: Option<String>,
    exe: Option<String>,
    cmdline: Option<Vec<String>>,
    function: String,
    count: u64,
    per_sec: f64,
    cost: Option<Cost>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Unattributed {
    pid: i32,
    comm: Option<String>,
    count: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Exited {
    pid: i32,
    after_ns: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Interval {
    start_ns: u64,
    end_ns: u64,
}

/// A rate carries at most one decimal.
fn one_decimal(rate: f64) -> bool {
    ((rate * 10.0).round() - rate * 10.0).abs() < 1e-6
}

#[test]
fn trace_of_true_and_of_a_clock_loop() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let t: Trace = doc(&["trace", "--", "true"], &[0]);
    let cmd = t.command.as_ref().expect("-- CMD reports the command");
    assert_eq!(cmd.argv, ["true"]);
    assert_eq!(cmd.exit_status, Some(ExitStatus::Code(0)));
    assert_eq!(cmd.timed_out, None, "trace has no --timeout");
    assert_eq!(t.target, "command", "the command is said once, under `command`");
    // A note says why an engine was passed over: perf (BPF refused) or bpf (fentry refused).
    assert!(t.engine == "perf" || t.engine_note.as_deref().is_none_or(|n| n.starts_with("fentry refused: ")));
    assert!(["fentry", "bpf", "perf"].contains(&t.engine.as_str()));
    assert!(!t.interrupted && t.interval.is_none() && t.exited.is_empty() && t.unattributed.is_empty());
    assert_eq!((t.lost, t.unfollowed), (0, 0));
    assert!(t.duration_ns > 0);
    assert!(t.vsyscall_emulations.is_empty());
    // Nothing counted is said, and what it cannot prove.
    let [f] = &t.findings[..] else { panic!("one finding: {:?}", t.findings) };
    assert_eq!((&f.severity, f.hint.as_deref()), (&Severity::Info, None), "{f:?}");
    assert!(f.message.starts_with("no clock syscalls and no [vsyscall] emulations in "), "{f:?}");
    assert!(f
        .message
        .ends_with(": clock reads the vDSO serves, if it made any, never enter the kernel and are not counted"));

    // CLOCK_TAI (named) through the raw syscall, and clock id 10 (no name: a number).
    let bin = build_c("clock_loop", false, &[]);
    let bin = bin.to_str().unwrap();
    let t: Trace = doc(&["trace", "--", bin, "raw", "11", "1000"], &[0]);
    let tai = t.counts.iter().find(|r| r.clock == Some(Clock::Name("CLOCK_TAI".into()))).expect("CLOCK_TAI row");
    assert_eq!((tai.syscall.as_str(), tai.count, tai.expected), ("clock_gettime", 1000, false));
    assert_eq!((tai.abi.as_str(), tai.comm.as_deref()), (host_machine().as_str(), Some("clock_loop")));
    assert_eq!(Some(tai.pid), t.command.as_ref().map(|c| c.pid));
    assert!(tai.tid.is_none() && tai.ppid.is_some());
    // Its malloc's start-up getrandom (stdout's buffer), summed, not a row.
    assert_eq!((t.startup_keys, tai.random.as_ref()), (1, None));
    // The cgroup is read while the process lives (gone by this report):
    // typed where a live process's row carries one (containers.rs).
    assert!(tai.per_sec > 0.0 && one_decimal(tai.per_sec), "per_sec {}", tai.per_sec);
    for r in &t.counts {
        if let Some(c) = &r.clock {
            c.assert_well_named();
        }
    }
    // No vsyscall page, no -p target, rows to spare, no --interval: those
    // lists are typed where a workload makes them (below, and hostile.rs).
    assert!(t.vsyscall_emulations.is_empty() && t.unattributed.is_empty() && t.exited.is_empty(), "{t:?}");
    assert!(t.interval.is_none() && !t.interrupted);
    // check -- CMD: the same command record, and the run as a check.
    let c: CheckDoc = doc(&["check", "--", bin, "libc", "1", "100"], &[0]);
    let run = c.command.as_ref().expect("check -- CMD reports the command");
    assert_eq!((run.argv.len(), run.exit_status.as_ref(), run.timed_out), (4, Some(&ExitStatus::Code(0)), Some(false)));
    assert!(run.pid > 0 && c.process.is_none() && c.binaries.is_none());
    assert!(c.checks.iter().any(|k| k.name == "command_trace" && k.status == Status::Ok), "{c:?}");
    assert_worst(&c);
    let t: Trace = doc(&["trace", "--", bin, "raw", "10", "100"], &[0]);
    assert!(t.counts.iter().all(|r| r.sites.is_none()), "no sites key without --sites");
    // --sites: each row's sites, typed; their counts add up to the row's.
    let cs = build_c("call_sites", false, &["-DRAW_LIBC_FN"]);
    // It lingers 1 s after its calls: the BPF engine names a process at a
    // 50 ms look while it lives.
    let t: Trace = doc(&["trace", "--sites", "--", cs.to_str().unwrap(), "100", "1000"], &[0]);
    let row = t.counts.iter().find(|r| r.sites.is_some()).expect("a row with sites");
    let sites = row.sites.as_ref().unwrap();
    assert_eq!(sites.iter().map(|s| s.count).sum::<u64>(), row.count);
    let s = &sites[0];
    assert_eq!((s.class.as_str(), s.fallback.as_deref(), s.clocksource.as_deref()), ("libc_syscall", None, None));
    assert!(s.per_sec > 0.0 && addr(&s.site.address) > 0 && addr(&s.site.offset) > 0, "{s:?}");
    assert_eq!((s.site.kind.as_str(), s.site.symbol.as_deref()), ("object", Some("syscall")));
    assert!(s.site.object.as_deref().is_some_and(|o| o.contains("libc")) && s.site.build_id.is_some());
    let caller = s.caller.as_ref().expect("the caller");
    assert_eq!((caller.symbol.as_deref(), caller.kind.as_str()), (Some("raw_clock"), "object"));
    let t: Trace = doc(&["trace", "--", bin, "raw", "10", "100"], &[0]);
    let ten = t.counts.iter().find(|r| r.syscall == "clock_gettime").expect("clock id 10 row");
    assert_eq!(
        (ten.clock.as_ref(), ten.count),
        (Some(&Clock::Number(10)), 100),
        "a clock without a name is its number"
    );
    assert!(t.stacks.is_none() && t.stacks_lost.is_none(), "no stacks without --stacks");
}

/// `-p` of a program that makes exactly 100 time() calls through the
/// vsyscall page and is then killed: one `vsyscall_emulations` row and one
/// `exited` row, typed, with the values the workload guarantees.
#[test]
fn trace_pid_vsyscall_emulation_and_exited_rows() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if !cfg!(target_arch = "x86_64") || !std::fs::read_to_string("/proc/self/maps").unwrap().contains("[vsyscall]") {
        return skip("no [vsyscall] page here");
    }
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["vsyscall", "0", "100", "1", "wait"]);
    let mut w = Workload::start(cmd);
    let pid = w.pid();
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "-d", "1h", "-p", &pid.to_string()]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    w.go();
    assert_eq!(w.next_line(), "done");
    w.child.kill().unwrap();
    w.child.wait().unwrap();
    let out = trace.wait_with_output().expect("trace output");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let t: Trace =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("the document does not match the contract: {e}"));
    assert!(t.counts.is_empty() && t.unattributed.is_empty(), "{t:?}");
    let [v] = &t.vsyscall_emulations[..] else { panic!("one emulation row: {t:?}") };
    assert_eq!((v.pid, v.comm.as_deref(), v.function.as_str(), v.count), (pid, Some("clock_loop"), "time", 100));
    // Named (exe, cmdline) only when a look caught it alive: then this program.
    let bin = build_c("clock_loop", false, &[]);
    assert!(v.exe.as_deref().is_none_or(|e| std::path::Path::new(e) == bin), "{v:?}");
    assert!(
        v.cmdline.as_ref().is_none_or(|c| c.len() == 6 && c[1..] == ["vsyscall", "0", "100", "1", "wait"]),
        "{v:?}"
    );
    let [e] = &t.exited[..] else { panic!("one exited row: {t:?}") };
    assert_eq!(e.pid, pid);
    assert!(e.after_ns > 0 && e.after_ns <= t.duration_ns, "{e:?} in {}", t.duration_ns);
    // The rate is over the time it lived, at one decimal.
    let per_sec = (100.0 / (e.after_ns as f64 / 1e9) * 10.0).round() / 10.0;
    assert!(one_decimal(v.per_sec) && (v.per_sec - per_sec).abs() <= 0.1, "{} vs {per_sec}", v.per_sec);
    let cost = v.cost.as_ref().expect("an emulation's cost");
    assert!(cost.per_call_ns > 0.0, "{cost:?}");
    assert_eq!(cost.cpu_ns, (100.0 * cost.per_call_ns).round() as u64, "{cost:?}");
}

/// The `unattributed` rows of a trace document, typed and checked: pid,
/// comm and a count each. Their number, for a caller whose workload
/// guarantees some (hostile.rs fills the rows).
pub(super) fn unattributed_rows(doc: &serde_json::Value) -> usize {
    let rows: Vec<Unattributed> = serde_json::from_value(doc["unattributed"].clone())
        .unwrap_or_else(|e| panic!("unattributed does not match the contract: {e}\n{doc:#}"));
    for u in &rows {
        assert!(u.pid > 0 && u.count > 0 && u.comm.as_deref().is_some_and(|c| !c.is_empty()), "{u:?}");
    }
    rows.len()
}

/// A trace document, typed (no unknown key), and its rows' placement:
/// a cgroup is a v2 path, a container a 64-hex id and a runtime, a unit a
/// systemd unit name. The typed rows, for the caller's values.
pub(super) fn placements(doc: &serde_json::Value) -> Vec<(Option<String>, Option<String>, Option<String>)> {
    let t: Trace = serde_json::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("the document does not match the contract: {e}\n{doc:#}"));
    for r in &t.counts {
        assert!(r.cgroup.as_deref().is_none_or(|c| c.starts_with('/')), "{r:?}");
        assert!(r.container.as_ref().is_none_or(|c| c.id.len() == 64 && !c.runtime.is_empty()), "{r:?}");
        assert!(r.unit.as_deref().is_none_or(|u| u.contains('.')), "{r:?}");
    }
    let id = |r: &CountRow| r.container.as_ref().map(|c| c.id.clone());
    t.counts.iter().map(|r| (r.cgroup.clone(), id(r), r.unit.clone())).collect()
}

/// A trace document's `interval`, typed: (start_ns, end_ns) from the
/// trace's start; None for a summary.
pub(super) fn interval_of(doc: &serde_json::Value) -> Option<(u64, u64)> {
    let i: Option<Interval> = serde_json::from_value(doc["interval"].clone())
        .unwrap_or_else(|e| panic!("interval does not match the contract: {e}\n{doc:#}"));
    i.map(|i| (i.start_ns, i.end_ns))
}

/// `--stacks`: the stacks' keys, and each row's identity and cost.
#[test]
fn trace_stacks_exe_cmdline_and_cost() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("call_chain", false, &["-fno-omit-frame-pointer"]);
    let bin = bin.to_str().unwrap();
    let t: Trace = doc(&["trace", "--engine", "bpf", "--stacks", "--", bin, "500", "1000"], &[0]);
    assert_eq!((t.engine.as_str(), t.stacks_lost), ("bpf", Some(0)));
    let row = &t.counts[0];
    assert_eq!((row.count, row.exe.as_deref()), (500, Some(bin)));
    assert_eq!(row.cmdline.as_deref(), Some(&[bin.to_string(), "500".into(), "1000".into()][..]));
    assert!(!row.cmdline_truncated);
    assert_eq!(row.random, None, "a clock row has no getrandom kind");
    let cost = row.cost.as_ref().expect("a host-ABI clock row has a cost");
    assert!(cost.per_call_ns > 0.0);
    assert_eq!(cost.cpu_ns, (500.0 * cost.per_call_ns).round() as u64);
    let share = 500.0 * cost.per_call_ns / t.duration_ns as f64 * 100.0;
    assert!((cost.core_percent - share).abs() <= 1e-9 * share, "{cost:?} over {}", t.duration_ns);
    let stacks = t.stacks.expect("--stacks reports stacks");
    assert_eq!(stacks.iter().map(|s| s.count).sum::<u64>(), 500);
    let s = &stacks[0];
    let comm = comm_of(std::path::Path::new(bin));
    assert_eq!((s.pid, s.comm.as_deref(), s.count, s.cut.as_deref()), (row.pid, Some(&comm[..]), 500, None));
    // Innermost first: the syscall's return address is in the program.
    let names: Vec<Option<&str>> = s.frames.iter().take(4).map(|f| f.symbol.as_deref()).collect();
    assert_eq!(names, [Some("inner"), Some("middle"), Some("outer"), Some("main")], "{s:?}");
    assert_eq!((s.frames[0].object.as_deref(), s.frames[0].kind.as_str()), (Some(bin), "object"));
    assert!(s.frames.iter().all(|f| f.address.starts_with("0x") && f.offset.starts_with("0x")), "{s:?}");
    assert!(s.frames.iter().all(|f| f.build_id.as_ref().is_none_or(|b| b.len() >= 16)), "{s:?}");
}
