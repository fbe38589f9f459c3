//! The JSON contract: every command's `--json` document deserializes into
//! typed structs that refuse unknown keys (as ripgrep's `tests/json.rs`
//! does), so a renamed, retyped or stray key fails here, not in a user's
//! pipeline. The rule of DESIGN.md "Output" is checked on the way: one
//! `process` {pid, comm} per per-process document, a clock named `CLOCK_*`
//! or by its number, lowercase status words, addresses as "0x..." strings.

use super::common::{
    build_c, comm_of, copy_executable, host_machine, missing_trace_facility, missing_vsyscall_page, run, skip,
    start_armed, KillOnDrop, Workload,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::process::Command;

mod bench;
mod check;
mod files;
mod trace;

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

/// A finding's kind: one of the catalogue's ids (doc/FINDINGS.md), or the
/// document does not match the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Kind(pub(super) String);

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        let id = String::deserialize(d)?;
        match vdsoctl::model::kind::Kind::from_id(&id) {
            Some(_) => Ok(Kind(id)),
            None => Err(serde::de::Error::custom(format!("{id} is no kind of the catalogue"))),
        }
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
pub(super) enum Status {
    Skip,
    Info,
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Finding {
    /// The finding's kind (doc/FINDINGS.md).
    kind: Kind,
    severity: Severity,
    message: String,
    hint: Option<String>,
    /// The vdsoctl command the hint says to run next, as argv.
    #[serde(default)]
    next: Option<Vec<String>>,
    /// `aux-clock-syscall`: its clock, and its state on this host.
    #[serde(default)]
    clock: Option<String>,
    #[serde(default)]
    aux_state: Option<String>,
    /// `dump`'s `elf-malformed`: what the parser read past, by `what`.
    #[serde(default)]
    issue: Option<serde_json::Value>,
    /// A trace finding's processes, busiest first.
    #[serde(default)]
    pids: Option<Vec<i32>>,
    /// `trace --sites`' site finding: its site's class and calls.
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    count: Option<u64>,
    /// `bench`'s C-library-syscall finding: each path's cost, the fix.
    #[serde(default)]
    costs: Option<Costs>,
    #[serde(default)]
    libc_version: Option<String>,
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

// ---- check ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckDoc {
    process: Option<ProcessRef>,
    /// `-p`: the executable's facts.
    binary: Option<BinaryFacts>,
    pub(super) checks: Vec<Check>,
    binaries: Option<Vec<Binary>>,
    image: Option<ImageSummary>,
    /// `--baseline`: what changed since it.
    baseline: Option<BaselineDiff>,
    command: Option<CommandRun>,
    pub(super) status: Status,
    /// Findings the gate waived, by why.
    #[allow(dead_code)]
    waived: Waivers,
    strict: bool,
    /// What the verdict could not see (absent when observed).
    #[serde(default)]
    pub(super) not_observed: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineDiff {
    file: String,
    new: usize,
    fixed: usize,
    unchanged: usize,
    added_ok: usize,
    removed_ok: usize,
    runtimes_was: Vec<String>,
    runtimes_now: Vec<String>,
    deltas: Vec<Delta>,
}

/// A call delta's key (`check -- CMD --baseline`).
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallKey {
    pub(super) process: String,
    pub(super) function: String,
    pub(super) vsyscall: bool,
    pub(super) clock: String,
}

/// Parsed by the contract; its keys are read by cli::archive's baseline test.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Delta {
    /// `new`, `fixed`, `unchanged`.
    change: String,
    /// `binary`, `finding` or `call`.
    scope: String,
    key: String,
    /// scope `call`: the call's key, typed.
    #[serde(default)]
    call: Option<CallKey>,
    was: Option<Status>,
    now: Option<Status>,
    detail: String,
    rebuilt: bool,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Check {
    name: String,
    /// The finding's kind (doc/FINDINGS.md).
    pub(super) kind: Kind,
    status: Status,
    detail: String,
    hint: Option<String>,
    /// What waived it: `{"by": "ignored", "reason", "file", "line"}`,
    /// `{"by": "allowed", "rule"}`, `{"by": "baselined", "file"}`.
    #[serde(default)]
    pub(super) waived: Option<serde_json::Value>,
    /// What raised it to FAIL: `fail_on`, `strict`, `new_since_baseline`.
    #[serde(default)]
    pub(super) raised: Option<String>,
    /// Calls a second, where the finding is a rate.
    #[serde(default)]
    pub(super) rate: Option<f64>,
    /// An observation row's window, ns.
    #[serde(default)]
    pub(super) window_ns: Option<u64>,
    /// The calls an observation row names.
    #[serde(default)]
    pub(super) calls: Option<Vec<CallSeen>>,
    /// `host_trace`: vdsoctl's own pids, left out.
    #[serde(default)]
    pub(super) left_out: Option<Vec<i32>>,
    /// `host_trace`: the rate it FAILs over.
    #[serde(default)]
    pub(super) fail_over: Option<f64>,
    /// `host_trace`: its calls folded by program, `trace`'s `groups` shape.
    #[serde(default)]
    groups: Option<Groups>,
    /// The host's `getrandom` row: what each path costs here.
    #[serde(default)]
    pub(super) costs: Option<Costs>,
    /// `check -p`'s `process_binary`: the findings of its verdict.
    #[serde(default)]
    findings: Option<Vec<BinaryFinding>>,
    /// A random-bytes row's facts (`random:*`, `process_random`).
    #[serde(default)]
    random: Option<RandomFacts>,
    /// `process_time_namespace`: the namespace, as `maps -p` has it.
    #[serde(default)]
    time_namespace: Option<TimeNs>,
    /// The vdsoctl command the hint says to run next, as argv.
    #[serde(default)]
    next: Option<Vec<String>>,
    /// `process_binary`: how the process runs its program.
    #[serde(default)]
    exe: Option<ExeRun>,
    /// A seccomp row's action and errno, filters or threads.
    #[serde(default)]
    seccomp: Option<SeccompRow>,
}

/// A seccomp row's fact.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeccompRow {
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    errno: Option<i64>,
    #[serde(default)]
    filters: Option<u32>,
    #[serde(default)]
    threads: Option<usize>,
    #[serde(default)]
    by_ip: Option<bool>,
}

/// How a process runs the program `process_binary` judges.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExeRun {
    program: Option<String>,
    loader: Option<String>,
    tool: Option<String>,
    tool_path: Option<String>,
}

/// A process's time namespace (`maps -p`'s `time_namespace`).
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeNs {
    inode: u64,
    vdsoctl_inode: Option<u64>,
    other: bool,
    offsets: Vec<TimeOffset>,
}

/// One clock's offset in a time namespace.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeOffset {
    clock: String,
    seconds: i64,
    nanoseconds: i64,
}

/// What a random-bytes row stands on: the route, the C library, and an
/// image's files or a process's state pages.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RandomFacts {
    runtime: Option<String>,
    version: Option<String>,
    path: String,
    libc: Option<String>,
    /// `--image`: the programs and libraries loading it, the raw callers.
    #[serde(default)]
    programs: Option<usize>,
    #[serde(default)]
    libraries: Option<usize>,
    #[serde(default)]
    raw: Option<Vec<String>>,
    /// `check -p`: the `dp` state pages (`null`: smaps not read), raw sites.
    #[serde(default)]
    state_pages: Option<Vec<String>>,
    #[serde(default)]
    raw_sites: Option<usize>,
}

/// What the C library's call and the direct vDSO call cost here.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Costs {
    pub(super) libc_ns: Option<f64>,
    pub(super) vdso_ns: Option<f64>,
    pub(super) libc_syscalls_per_call: Option<f64>,
    pub(super) vdso_syscalls_per_call: Option<f64>,
    #[serde(default)]
    pub(super) fixed_in: Option<String>,
}

/// One process's calls an observation row names.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallSeen {
    pub(super) pid: i32,
    pub(super) comm: Option<String>,
    pub(super) function: String,
    pub(super) vsyscall: bool,
    /// `CLOCK_*`, a number, or null.
    pub(super) clock: Option<serde_json::Value>,
    pub(super) count: u64,
    pub(super) per_sec: f64,
}

/// Findings the gate waived, by why.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Waivers {
    ignored: usize,
    allowed: usize,
    baselined: usize,
}

/// One finding behind a binary's verdict.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BinaryFinding {
    kind: Kind,
    status: Status,
    detail: String,
    #[serde(default)]
    waived: Option<serde_json::Value>,
    #[serde(default)]
    raised: Option<String>,
    /// A call-site finding's sites listed (the first ones).
    #[serde(default)]
    sites: Option<Vec<CodeSite>>,
    /// A call-site finding's sites in all, listed or not.
    #[serde(default)]
    site_count: Option<u64>,
    /// `binary-truncated`: the file's bytes, and those its headers describe.
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    described: Option<u64>,
    /// A Go program's: it runs with cgo.
    #[serde(default)]
    cgo: Option<bool>,
}

/// A call site in a binary's code.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeSite {
    /// `"0x..."`.
    address: String,
    /// `syscall`, `int80`, `sysenter`, `libc_syscall`, `svc`, `vsyscall`.
    via: String,
    function: Option<String>,
    /// `CLOCK_*`, a number, or null.
    clock: Option<serde_json::Value>,
    symbol: Option<String>,
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

#[allow(dead_code)]
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
    /// The kind of its verdict's reason.
    verdict_kind: Kind,
    status: Status,
    detail: String,
    hint: Option<String>,
    random: RandomRoute,
    findings: Vec<BinaryFinding>,
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
    /// `directory`, `docker-archive`, `oci-archive`, `oci-layout`.
    format: String,
    layers: usize,
    /// An archive's: which image of how many (absent for a directory).
    #[serde(default)]
    selected: Option<SelectedImage>,
    entries: u64,
    skipped: Vec<String>,
    /// The first 100; `unreadable_count` counts every one.
    unreadable: Vec<(String, String)>,
    unreadable_count: usize,
    truncated: bool,
    excluded: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SelectedImage {
    index: usize,
    of: usize,
    name: Option<String>,
    platform: Option<String>,
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

// ---- trace ----

/// `seccomp_channel`: `ptrace` (no reason) or `listener` (with one).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeccompChannel {
    channel: Channel,
    why: Option<ListenerWhy>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Channel {
    Ptrace,
    Listener,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum ListenerWhy {
    PtraceRefused,
    Asked,
    Sanitizer,
    Tracer,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Seizure {
    tracer: i32,
    comm: String,
    held: Held,
    tid: i32,
    killed: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Held {
    Auditor,
    Guardian,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trace {
    target: serde_json::Value,
    engine: String,
    engine_note: Option<String>,
    /// Seccomp engine: how it heard of the calls (`null` for the others).
    seccomp_channel: Option<SeccompChannel>,
    duration_ns: u64,
    counts: Vec<CountRow>,
    vsyscall_emulations: Vec<VsyscallRow>,
    unattributed: Vec<Unattributed>,
    lost: u64,
    /// getrandom start-up keys (one a process), summed.
    startup_keys: u64,
    unfollowed: u64,
    /// Seccomp engine: calls a signal withdrew while they waited.
    withdrawn: u64,
    /// `-- CMD`: tracers of the tree found holding vdsoctl or its guardian.
    auditor_seized: Vec<Seizure>,
    exited: Vec<Exited>,
    command: Option<CommandRun>,
    interrupted: bool,
    interval: Option<Interval>,
    findings: Vec<Finding>,
    stacks: Option<Vec<StackRow>>,
    stacks_lost: Option<u64>,
    /// `-a`: vdsoctl's own processes, left out (`null` for other targets).
    vdsoctl_own: Option<OwnLeftOut>,
    /// `--top`/`--by`: the rows folded (`null` without).
    groups: Option<Groups>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Groups {
    by: String,
    top: Option<u64>,
    rows: Vec<GroupRow>,
    rest: Option<GroupRest>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct GroupRow {
    key: Option<String>,
    processes: u64,
    syscall: String,
    vsyscall: bool,
    clock: Option<serde_json::Value>,
    random: Option<String>,
    count: u64,
    per_sec: f64,
    cpu_ns: Option<u64>,
    core_percent: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct GroupRest {
    groups: u64,
    processes: u64,
    count: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnLeftOut {
    pids: Vec<i32>,
    calls: u64,
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
    /// A caller's tail-called function (absent when none).
    #[allow(dead_code)]
    #[serde(default)]
    tail_call: Option<String>,
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
