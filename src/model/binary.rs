//! The verdict on one ELF file of an image or a process, judged for the
//! architecture it was built for: can its clock reads reach the vDSO? The
//! policy once, for `check --image` and `check -p` (the command gathers,
//! this judges). Each finding is a typed fact with its data
//! ([`BinaryFact`]); its words are render/binary.rs's.

use super::kind::Kind;
use super::random::RandomRoute;
use super::{ProcessName, Status};
use crate::arch::{self, ClockClass};
use crate::inspect::exe::{self, ExeInfo, LibcKind, Linkage};
use crate::inspect::kernel::VsyscallMode;
use serde::Serialize;

/// The facts about a binary its verdict stands on, typed (DESIGN keys:
/// `class`, `bits`, `machine`, `arch`, `endian`, `linkage`, `interpreter`,
/// `kind`, `runtime`, `runtime_version`): `check -p`'s `binary` and each
/// `--image` row's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BinaryFacts {
    /// `ELF64` or `ELF32`.
    pub class: &'static str,
    /// 64 or 32.
    pub bits: u8,
    pub machine: String,
    /// The architecture as Debian names it: `amd64`, `arm64`, `armhf`
    /// (`EF_ARM_ABI_FLOAT_HARD`), `armel`, `ppc64el`, `ppc64`, `s390x`...
    pub arch: String,
    /// `little` or `big` (`EI_DATA`).
    pub endian: &'static str,
    /// `dynamic`, `static` or `static-pie`.
    pub linkage: &'static str,
    /// The interpreter of a dynamic program.
    pub interpreter: Option<String>,
    /// `executable` or `library`.
    pub kind: &'static str,
    /// `glibc`, `musl`, `go`, `bionic`, `other`.
    pub runtime: &'static str,
    pub runtime_version: Option<String>,
}

impl BinaryFacts {
    /// The facts of a parsed binary.
    pub fn of(info: &ExeInfo) -> BinaryFacts {
        BinaryFacts {
            class: if info.is_64 { "ELF64" } else { "ELF32" },
            bits: if info.is_64 { 64 } else { 32 },
            machine: arch::machine_name(info.machine),
            arch: info.arch(),
            endian: if info.little_endian { "little" } else { "big" },
            linkage: info.linkage().name(),
            interpreter: info.interp.clone(),
            kind: if info.is_library() { "library" } else { "executable" },
            runtime: info.libc.name(),
            runtime_version: info.libc_version.clone(),
        }
    }
}

/// The host facts a binary's verdict depends on: this kernel's vDSO hash
/// tables (musl needs DT_HASH) and its vsyscall mode.
#[derive(Debug, Clone, Copy)]
pub struct HostFacts {
    /// The vDSO has DT_HASH; `None` when its image could not be read.
    pub vdso_has_hash: Option<bool>,
    pub vsyscall: VsyscallMode,
}

/// A runtime as the sentences about it name it: its kind and the version
/// the binary says (`glibc 2.36`, `Go go1.19.8`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeRef {
    pub libc: LibcKind,
    pub version: Option<String>,
}

impl RuntimeRef {
    fn of(info: &ExeInfo) -> RuntimeRef {
        RuntimeRef { libc: info.libc, version: info.libc_version.clone() }
    }
}

/// How many call sites a finding lists; the rest are counted.
pub const SITES_LISTED: usize = 3;

/// One fact a binary's verdict stands on, with its data (JSON
/// `binaries[].findings[]`); its kind and status are the policy's
/// ([`BinaryFact::kind`], [`BinaryFact::status`]), its words
/// render/binary.rs's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinaryFact {
    /// An x32-ABI binary (ELF32 x86_64) of `machine`: not judged.
    X32 { machine: u16 },
    /// Its code calls the fixed [vsyscall] page: `count` sites, the first
    /// at `first` (`site`: that call, when it was kept); a `library`'s are
    /// likely a fallback path. `mode`: this kernel's vsyscall mode.
    VsyscallSites { count: u32, first: Option<u64>, site: Option<exe::Site>, library: bool, mode: VsyscallMode },
    /// Raw getrandom syscalls where its runtime (`route`) reads the vDSO:
    /// the first [`SITES_LISTED`] sites, `more` not listed; `wrapper`: every
    /// one through libc's `syscall()`.
    RawRandomSites { sites: Vec<exe::Site>, more: usize, wrapper: bool, route: RandomRoute },
    /// Raw syscalls of clocks the vDSO would serve (or of unknown ids):
    /// the first sites, `more` not listed (kept or only counted).
    RawClockSites { sites: Vec<exe::Site>, more: usize },
    /// Raw syscalls of clocks the vDSO never serves: the first sites.
    CputimeSites { sites: Vec<exe::Site> },
    /// The file has `size` of the `described` bytes its headers describe.
    Truncated { size: u64, described: u64 },
    /// No executable code could be read.
    CodeNotRead,
    /// No section headers: decoded from its segments (and its imports from
    /// its dynamic section, when it has one).
    NoSections { dynamic: bool },
    /// Section headers that cannot be read.
    SectionsCorrupt,
    /// Go, whose runtime calls the vDSO itself (`cgo`: linked against a C library).
    GoRuntime { runtime: RuntimeRef, cgo: bool },
    /// A static glibc that looks the vDSO up (≥ 2.31).
    StaticGlibcVdso { runtime: RuntimeRef },
    /// A static glibc without a vDSO lookup (< 2.31).
    StaticGlibcNoVdso,
    /// musl, and this kernel's vDSO has no DT_HASH.
    MuslNoDtHash { runtime: RuntimeRef },
    /// musl, expected to look the vDSO up (`confirmed`: DT_HASH is there).
    MuslDtHash { runtime: RuntimeRef, confirmed: bool },
    /// A dynamic glibc or bionic, or a library built on one.
    LibcVdso { runtime: RuntimeRef },
    /// A library without a C library of its own.
    LibraryWithoutLibc,
    /// A dynamic program whose C library (`interp`'s) is not recognised.
    LibcUnknown { interp: Option<String> },
    /// Static, runtime not recognised, no vDSO lookup found.
    RuntimeUnknown,
    /// A 32-bit library.
    Compat32Library,
    /// A 32-bit program: the compat vDSO serves it.
    Compat32,
    /// Another architecture's code (`arch`), decoded.
    ForeignDecoded { arch: String },
    /// Another architecture's code (`arch`), not decoded.
    ForeignNotDecoded { arch: String },
    /// A runtime it carries reaches these functions through the vDSO,
    /// itself or through the C library (rustix's clock_gettime and getcpu,
    /// CPython's os.urandom): each with the row that says how.
    CarriedVdso { runtime: exe::Carried, rows: Vec<&'static arch::PathRow> },
    /// A runtime it carries makes `row.function`'s syscall (every call, or
    /// to seed itself): `fixed_in`, the first release of it that reads the
    /// vDSO (`None`: none yet); `sites`: its own raw sites in the code.
    CarriedSyscall {
        runtime: exe::Carried,
        row: &'static arch::PathRow,
        fixed_in: Option<(u32, u32)>,
        sites: Vec<exe::Site>,
    },
    /// A runtime it carries whose path to `function` depends on a release
    /// the file does not say.
    CarriedUnknown { runtime: exe::Carried, function: arch::VdsoFn },
}

impl BinaryFact {
    /// What it is, by the stable id of its kind.
    pub fn kind(&self) -> Kind {
        use BinaryFact as F;
        match self {
            F::X32 { .. } => Kind::X32NotJudged,
            F::VsyscallSites { library: true, .. } => Kind::VsyscallFallbackSite,
            F::VsyscallSites { .. } => Kind::VsyscallCallSite,
            F::RawRandomSites { .. } => Kind::RawRandomCallSite,
            F::RawClockSites { .. } => Kind::RawClockCallSite,
            F::CputimeSites { .. } => Kind::CputimeCallSite,
            F::Truncated { .. } => Kind::BinaryTruncated,
            F::CodeNotRead => Kind::CodeNotRead,
            F::SectionsCorrupt => Kind::SectionsCorrupt,
            F::StaticGlibcNoVdso => Kind::StaticGlibcNoVdso,
            F::MuslNoDtHash { .. } => Kind::MuslNoDtHash,
            F::LibcUnknown { .. } => Kind::LibcUnknown,
            F::RuntimeUnknown => Kind::RuntimeUnknown,
            F::Compat32 => Kind::Compat32Bit,
            F::ForeignNotDecoded { .. } => Kind::ForeignNotDecoded,
            F::CarriedSyscall { fixed_in: Some(_), row, .. } if row.path == arch::RoutePath::Syscall => {
                Kind::RuntimeSyscallFixed
            }
            F::CarriedSyscall { .. } => Kind::RuntimeNoVdsoRelease,
            F::CarriedUnknown { .. } => Kind::RandomRouteUnknown,
            F::CarriedVdso { .. }
            | F::NoSections { .. }
            | F::GoRuntime { .. }
            | F::StaticGlibcVdso { .. }
            | F::MuslDtHash { .. }
            | F::LibcVdso { .. }
            | F::LibraryWithoutLibc
            | F::Compat32Library
            | F::ForeignDecoded { .. } => Kind::BinaryOk,
        }
    }

    /// Its status by the policy, before the gate.
    pub fn status(&self) -> Status {
        use BinaryFact as F;
        match self {
            F::X32 { .. } => Status::Skip,
            // Libraries keep such calls as fallbacks (HotSpot's libjvm.so
            // has a vsyscall getcpu for kernels without sched_getcpu): a
            // warning; whether it runs is what `check -- CMD` shows.
            F::VsyscallSites { library: true, .. } => Status::Warn,
            F::VsyscallSites { .. } | F::RawRandomSites { .. } | F::StaticGlibcNoVdso | F::MuslNoDtHash { .. } => {
                Status::Fail
            }
            F::RawClockSites { .. }
            | F::Truncated { .. }
            | F::CodeNotRead
            | F::SectionsCorrupt
            | F::LibcUnknown { .. }
            | F::RuntimeUnknown => Status::Warn,
            // Facts, not a defect: INFO, so a gate on WARN passes a correct
            // 32-bit program (its raw clock syscalls, if any, still WARN);
            // code not decoded is said, never OK by inference.
            F::CputimeSites { .. } | F::Compat32 | F::ForeignNotDecoded { .. } => Status::Info,
            // A later release of the runtime fixes it: WARN; none does
            // yet, or it only seeds itself: said (INFO).
            F::CarriedSyscall { fixed_in: Some(_), row, .. } if row.path == arch::RoutePath::Syscall => Status::Warn,
            F::CarriedSyscall { .. } | F::CarriedUnknown { .. } => Status::Info,
            F::CarriedVdso { .. }
            | F::NoSections { .. }
            | F::GoRuntime { .. }
            | F::StaticGlibcVdso { .. }
            | F::MuslDtHash { .. }
            | F::LibcVdso { .. }
            | F::LibraryWithoutLibc
            | F::Compat32Library
            | F::ForeignDecoded { .. } => Status::Ok,
        }
    }
}

impl BinaryFact {
    /// The runtime a carried-runtime fact is about.
    pub fn carried(&self) -> Option<&exe::Carried> {
        match self {
            BinaryFact::CarriedVdso { runtime, .. }
            | BinaryFact::CarriedSyscall { runtime, .. }
            | BinaryFact::CarriedUnknown { runtime, .. } => Some(runtime),
            _ => None,
        }
    }
}

/// Whether a warning is one that `--trace` evidence clears: it says the
/// path is unknown or costlier, not that it is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarnKind {
    None,
    /// Static with an unrecognised runtime, or 32-bit: a clean trace clears it.
    Unproven,
}

/// A binary's hint, from [`binary_verdict`]: what would help, as data;
/// worded in render/hint.rs, for an image's file or a running process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryHint {
    /// It may call the [vsyscall] page as a fallback: a smoke test shows it.
    SmokeTest,
    /// It calls the fixed [vsyscall] page: rebuild it.
    RebuildVsyscall,
    /// Raw clock syscalls in its code: read clocks through the C library.
    ClocksThroughLibc,
    /// Raw getrandom syscalls where its runtime reads the vDSO.
    RandomThroughLibc,
    /// Its code could not be decoded: a partial copy.
    Damaged,
    /// Its code disagrees with its headers: altered after linking.
    Altered,
    /// A static glibc too old for the vDSO.
    RebuildStaticGlibc,
    /// musl needs DT_HASH, which this kernel's vDSO lacks.
    MuslNeedsDtHash,
    /// Nothing in its code proves its path: run it and see.
    RunIt,
    /// It runs under an emulator or instrumenter: audit the program run natively.
    AuditNatively,
}

/// The row's name in `check -p`.
pub const PROCESS_BINARY: &str = "process_binary";

/// `check -p`'s `process_binary` row as data: what was found of the
/// process's executable (`who`); render/binary.rs words it into its row.
#[derive(Debug, Clone)]
pub enum ProcessExe<'a> {
    /// The executable cannot be read (`error`, as its Display words it):
    /// SKIP, never a verdict on what was not seen.
    Unreadable { error: String },
    /// A program run under an emulator or instrumenter (`tool`, at
    /// `path`): the tool maps no [vdso], so every clock read is a syscall
    /// — FAIL, expected there.
    UnderEmulator { who: ProcessName<'a>, program: Option<&'a str>, tool: &'a str, path: &'a str },
    /// The executable judged by [`binary_verdict`] (`loader`: started as
    /// `ld.so PROG`), with the facts its row names.
    Judged {
        who: ProcessName<'a>,
        loader: Option<&'a str>,
        is_64: bool,
        machine: u16,
        linkage: Linkage,
        interp: Option<&'a str>,
        verdict: BinaryVerdict,
    },
}

impl ProcessExe<'_> {
    /// The kind of the row's reason.
    pub fn kind(&self) -> Kind {
        match self {
            ProcessExe::Unreadable { .. } => Kind::ExeUnreadable,
            ProcessExe::UnderEmulator { .. } => Kind::UnderEmulator,
            ProcessExe::Judged { verdict, .. } => verdict.kind,
        }
    }

    /// The row's status.
    pub fn status(&self) -> Status {
        match self {
            ProcessExe::Unreadable { .. } => Status::Skip,
            ProcessExe::UnderEmulator { .. } => Status::Fail,
            ProcessExe::Judged { verdict, .. } => verdict.status,
        }
    }

    /// What would help, as data.
    pub fn hint(&self) -> Option<BinaryHint> {
        match self {
            ProcessExe::Unreadable { .. } => None,
            ProcessExe::UnderEmulator { .. } => Some(BinaryHint::AuditNatively),
            ProcessExe::Judged { verdict, .. } => verdict.hint,
        }
    }

    /// Whether a WARN only says the path is unproven: the policy's process
    /// column weighs it with the rest (a raw clock site is unproven there
    /// until the window shows it).
    pub fn warn_kind(&self) -> WarnKind {
        match self {
            ProcessExe::Judged { verdict, .. } => verdict.warn_kind,
            _ => WarnKind::None,
        }
    }
}

/// `check -p`'s `process_binary` row: the process's executable (`loader`:
/// started as `ld.so PROG`) judged by [`binary_verdict`].
pub fn process_binary<'a>(
    who: ProcessName<'a>,
    loader: Option<&'a str>,
    info: &'a ExeInfo,
    host: &HostFacts,
) -> ProcessExe<'a> {
    ProcessExe::Judged {
        who,
        loader,
        is_64: info.is_64,
        machine: info.machine,
        linkage: info.linkage(),
        interp: info.interp.as_deref(),
        verdict: binary_verdict(info, host),
    }
}

/// The verdict on one ELF file: can its clock reads reach the vDSO on this
/// kernel? The policy, once, for `--image` and `-p`:
/// - FAIL: a program whose code calls the fixed [vsyscall] addresses (in a
///   library: WARN, as such calls are kept as fallbacks, e.g. HotSpot's
///   vsyscall getcpu in libjvm.so); static glibc
///   without a vDSO lookup (before 2.31 glibc never used the vDSO in static
///   binaries — sourceware bug 19767, "vdso is not used with static
///   linking", fixed in 2.31); musl against a vDSO without DT_HASH (musl
///   looks vDSO symbols up through DT_HASH only).
/// - INFO: a 32-bit program on a 64-bit kernel (the compat vDSO serves it,
///   ~1.4× the 64-bit vDSO's cost here, and its syscalls are unseen by
///   sys_enter_* tracepoints): facts, not a defect.
/// - WARN: static with a runtime not recognised; a dynamic program with an
///   unknown C library; code not decoded whole (a truncated file, section
///   headers that cannot be read, no code to read) — never OK. A file
///   without section headers is judged from its segments, and says so.
/// - SKIP: an x32-ABI binary (ELF32 x86_64), not judged.
/// - Another architecture's binary (an arm64 image audited on x86_64, as
///   multi-arch builds under QEMU binfmt make) is judged for its own
///   architecture ([`Judged::Foreign`]): runtime and call sites alike, with
///   no fact of this host (its vDSO's hash tables, its vsyscall mode, the
///   compat vDSO) in the verdict. Where its code is not decoded (armhf,
///   ppc64el, s390x, riscv64...) an otherwise OK verdict is INFO, "call
///   sites not decoded": never OK by inference.
/// - OK otherwise: dynamic glibc/musl/bionic, static glibc ≥ 2.31, static
///   musl (vDSO lookup since musl 1.1.0), Go (its runtime calls the vDSO
///   itself, with or without cgo), libraries of those.
pub fn binary_verdict(info: &ExeInfo, host: &HostFacts) -> BinaryVerdict {
    let judged = judged_as(info);
    if judged == Judged::X32 {
        let finding = BinaryFinding::of(BinaryFact::X32 { machine: info.machine });
        return BinaryVerdict {
            status: finding.status,
            kind: finding.kind,
            hint: None,
            warn_kind: WarnKind::None,
            findings: vec![finding],
        };
    }
    let foreign = judged == Judged::Foreign;
    // What this host says about its kernel does not hold for another
    // architecture's: its own kernel's vDSO is not here to read.
    let host = if foreign { HostFacts { vdso_has_hash: None, vsyscall: VsyscallMode::Xonly } } else { *host };
    let mut p = Problems { list: Vec::new(), hint: None, kind: WarnKind::None };
    vsyscall_problems(info, &host, &mut p);
    site_problems(info, &mut p);
    code_problems(info, &mut p);
    runtime_problems(info, &host, &mut p);
    carried_problems(info, &mut p);
    libc_gap_problems(info, &mut p);
    arch_problems(info, judged, &mut p);
    let Problems { list, hint, kind } = p;
    let findings: Vec<BinaryFinding> = list.into_iter().map(BinaryFinding::of).collect();
    let status = binary_status(&findings);
    let findings = sorted(findings);
    let warn_kind = if matches!(status, Status::Warn | Status::Info) { kind } else { WarnKind::None };
    let lead = findings.first().map_or(Kind::BinaryOk, |f| f.kind);
    BinaryVerdict { status, kind: lead, hint, warn_kind, findings }
}

/// A binary's verdict: its status, the kind of its reason (the first,
/// worst finding), the hint, and each finding, the reason first (its
/// words, render/binary.rs's `verdict_detail`, join theirs).
#[derive(Debug, Clone)]
pub struct BinaryVerdict {
    pub status: Status,
    pub kind: Kind,
    pub hint: Option<BinaryHint>,
    pub warn_kind: WarnKind,
    pub findings: Vec<BinaryFinding>,
}

/// One finding about a binary (JSON `binaries[].findings`): its kind, its
/// status (the policy's in the audit's context, then the selection's) and
/// the fact it stands on (JSON `detail`, worded by render/binary.rs's
/// Serialize).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryFinding {
    pub kind: Kind,
    pub status: Status,
    pub fact: BinaryFact,
    pub waived: Option<super::gate::Waiver>,
    pub raised: Option<super::gate::Raise>,
}

impl BinaryFinding {
    /// A finding of `fact`, of its kind and status by the policy.
    pub fn of(fact: BinaryFact) -> BinaryFinding {
        BinaryFinding { kind: fact.kind(), status: fact.status(), fact, waived: None, raised: None }
    }
}

/// The reason for the verdict first.
fn sorted(mut findings: Vec<BinaryFinding>) -> Vec<BinaryFinding> {
    findings.sort_by_key(|f| std::cmp::Reverse(f.status));
    if findings.first().is_some_and(|f| f.status == Status::Ok) {
        findings.sort_by_key(|f| !(f.status == Status::Info && INFO_OUTRANKS_OK.contains(&f.kind)));
    }
    findings
}

/// Code not decoded, or a 32-bit program: INFO outranks OK (the verdict
/// says it, never OK by inference).
const INFO_OUTRANKS_OK: [Kind; 2] = [Kind::Compat32Bit, Kind::ForeignNotDecoded];

/// A binary's status from its findings: the worst, where INFO outranks OK
/// for code not decoded, a 32-bit program, and a waived finding.
pub fn binary_status(findings: &[BinaryFinding]) -> Status {
    let worst = findings.iter().map(|f| f.status).max().unwrap_or(Status::Ok);
    let info_fact =
        findings.iter().any(|f| f.status == Status::Info && (INFO_OUTRANKS_OK.contains(&f.kind) || f.waived.is_some()));
    if worst == Status::Ok && info_fact {
        Status::Info
    } else {
        worst
    }
}

/// What a binary's verdict is made of, as it is found: each fact, the
/// first hint, and whether a warning only says "unproven".
struct Problems {
    list: Vec<BinaryFact>,
    hint: Option<BinaryHint>,
    kind: WarnKind,
}

/// Calls into the fixed [vsyscall] page.
fn vsyscall_problems(info: &ExeInfo, host: &HostFacts, p: &mut Problems) {
    if info.vsyscall_sites == 0 {
        return;
    }
    let library = info.is_library();
    p.list.push(BinaryFact::VsyscallSites {
        count: info.vsyscall_sites,
        first: info.vsyscall_first,
        site: info.sites.iter().find(|s| s.via == exe::Via::Vsyscall).cloned(),
        library,
        mode: host.vsyscall,
    });
    if library {
        p.hint = Some(BinaryHint::SmokeTest);
        p.kind = WarnKind::Unproven;
    } else {
        p.hint = Some(BinaryHint::RebuildVsyscall);
    }
}

/// The first [`SITES_LISTED`] of `sites`.
fn listed(sites: &[&exe::Site]) -> Vec<exe::Site> {
    sites.iter().take(SITES_LISTED).map(|s| (*s).clone()).collect()
}

/// Raw clock syscalls in the code: the vDSO's clocks (and unknown ids)
/// warn, CPU-time and other always-syscall clocks are said, not judged.
fn site_problems(info: &ExeInfo, p: &mut Problems) {
    // Raw getrandom: judged by what the runtime would do (model::random).
    let (random, clocks): (Vec<&exe::Site>, Vec<&exe::Site>) = info
        .sites
        .iter()
        .filter(|s| s.via != exe::Via::Vsyscall && carried_site(info, s).is_none())
        .partition(|s| s.function.is_some_and(|f| !crate::inspect::code::is_clock_read(f)));
    if let Some(fact) = raw_site_problem(info, &random) {
        p.list.push(fact);
        p.hint = p.hint.or(Some(BinaryHint::RandomThroughLibc));
    }
    let (bypass, cputime): (Vec<&exe::Site>, Vec<&exe::Site>) = clocks.into_iter().partition(|s| {
        !s.clock.is_some_and(|c| arch::clock_info(c as i32).is_some_and(|c| c.class == ClockClass::AlwaysSyscall))
    });
    if !bypass.is_empty() {
        // Sites counted but not kept (past MAX_SITES).
        let counted = (info.clock_sites as usize).saturating_sub(bypass.len() + cputime.len() + random.len());
        let more = bypass.len().saturating_sub(SITES_LISTED) + counted;
        p.list.push(BinaryFact::RawClockSites { sites: listed(&bypass), more });
        p.hint = p.hint.or(Some(BinaryHint::ClocksThroughLibc));
        p.kind = WarnKind::Unproven;
    }
    if !cputime.is_empty() {
        p.list.push(BinaryFact::CputimeSites { sites: listed(&cputime) });
    }
}

/// Code that was not read whole, or not from its sections: said, and never
/// OK when some of it could not be decoded (a truncated or corrupt file).
fn code_problems(info: &ExeInfo, p: &mut Problems) {
    if !info.code_decodable() {
        return;
    }
    if let Some(t) = info.truncated {
        p.list.push(BinaryFact::Truncated { size: t.size, described: t.described });
        p.hint = p.hint.or(Some(BinaryHint::Damaged));
    } else if !info.code_scanned {
        p.list.push(BinaryFact::CodeNotRead);
    }
    match info.layout {
        exe::Layout::Sections => {}
        exe::Layout::NoSections => p.list.push(BinaryFact::NoSections { dynamic: info.has_dynamic }),
        // A truncated file's section headers are what is missing: said above.
        exe::Layout::BadSections if info.truncated.is_some() => {}
        exe::Layout::BadSections => {
            p.list.push(BinaryFact::SectionsCorrupt);
            p.hint = p.hint.or(Some(BinaryHint::Altered));
        }
    }
}

/// The raw getrandom sites of a binary, and what its runtime would have
/// done: FAIL where it reads the vDSO (the raw call bypasses it); none
/// where it makes the syscall anyway (the image's random row says so).
fn raw_site_problem(info: &ExeInfo, sites: &[&exe::Site]) -> Option<BinaryFact> {
    if sites.is_empty() {
        return None;
    }
    let route = super::random::random_route(info);
    match route.path {
        super::random::RandomPath::Vdso => Some(BinaryFact::RawRandomSites {
            sites: listed(sites),
            more: sites.len().saturating_sub(SITES_LISTED),
            wrapper: sites.iter().all(|s| s.via == exe::Via::LibcSyscall),
            route,
        }),
        // The runtime makes the syscall too: the image's random row (and
        // `check -p`'s) says so, once.
        _ => None,
    }
}

/// What the runtime (C library, Go) does for clock reads.
fn runtime_problems(info: &ExeInfo, host: &HostFacts, p: &mut Problems) {
    let library = info.is_library();
    let runtime = RuntimeRef::of(info);
    let linkage = info.linkage();
    match info.libc {
        LibcKind::Go => {
            // CGO_ENABLED=1 is in the build info of every Go build that
            // allowed cgo, pure Go ones too: only a program linked against
            // a C library (it has an interpreter) runs with cgo.
            let cgo = info.go.as_ref().and_then(|g| g.cgo) == Some(true) && linkage == Linkage::Dynamic;
            p.list.push(BinaryFact::GoRuntime { runtime, cgo });
        }
        LibcKind::Glibc if linkage != Linkage::Dynamic && !library => {
            if info.vdso_lookup {
                p.list.push(BinaryFact::StaticGlibcVdso { runtime });
            } else {
                p.list.push(BinaryFact::StaticGlibcNoVdso);
                p.hint = p.hint.or(Some(BinaryHint::RebuildStaticGlibc));
            }
        }
        LibcKind::Musl => match host.vdso_has_hash {
            Some(false) => {
                p.list.push(BinaryFact::MuslNoDtHash { runtime });
                p.hint = p.hint.or(Some(BinaryHint::MuslNeedsDtHash));
            }
            has_hash => p.list.push(BinaryFact::MuslDtHash { runtime, confirmed: has_hash == Some(true) }),
        },
        LibcKind::Glibc | LibcKind::Bionic => p.list.push(BinaryFact::LibcVdso { runtime }),
        LibcKind::Unknown if library => p.list.push(BinaryFact::LibraryWithoutLibc),
        LibcKind::Unknown if linkage == Linkage::Dynamic => {
            p.list.push(BinaryFact::LibcUnknown { interp: info.interp.clone() });
            p.kind = WarnKind::Unproven;
        }
        LibcKind::Unknown => {
            p.list.push(BinaryFact::RuntimeUnknown);
            p.hint = p.hint.or(Some(BinaryHint::RunIt));
            p.kind = WarnKind::Unproven;
        }
    }
}

/// The runtime a raw syscall site belongs to, by its enclosing function
/// (`uv__getrandom`, `getrandom::…`), when the program carries it and its
/// row says it makes that syscall: judged by that row, not as the
/// program's own bypass.
fn carried_site<'a>(info: &'a ExeInfo, s: &exe::Site) -> Option<&'a exe::Carried> {
    let symbol = s.symbol.as_deref()?;
    let function = s.function?;
    info.carried.iter().find(|c| {
        let owns = arch::SIGNATURES
            .iter()
            .filter(|sig| sig.runtime == c.runtime)
            .any(|sig| sig.site_symbols.iter().any(|p| symbol.starts_with(p)));
        owns && arch::path_of(c.runtime, function, c.release(), info.machine)
            .is_some_and(|r| matches!(r.path, arch::RoutePath::Syscall | arch::RoutePath::Seed))
    })
}

/// The runtimes the program carries ([`exe::Carried`]), each judged by its
/// row of `arch::PATHS` for the functions this architecture's vDSO has:
/// through the vDSO (OK), a syscall a later release fixes (WARN), one no
/// release fixes yet or only to seed itself (INFO), a release not said
/// where the path depends on it (INFO).
fn carried_problems(info: &ExeInfo, p: &mut Problems) {
    for c in &info.carried {
        let mut vdso = Vec::new();
        for f in arch::VdsoFn::ALL {
            if arch::vdso_symbol(info.machine, info.is_64, f).is_none() {
                continue;
            }
            let known = arch::PATHS.iter().any(|r| r.runtime == c.runtime && r.function == f);
            match arch::path_of(c.runtime, f, c.release(), info.machine) {
                // Its symbols say the entry is not linked in.
                Some(row) if !c.links(row) => {}
                Some(row) if row.path.reads_vdso() => vdso.push(row),
                Some(row) => {
                    let sites = info
                        .sites
                        .iter()
                        .filter(|s| s.function == Some(f) && carried_site(info, s).is_some_and(|o| o == c))
                        .take(SITES_LISTED)
                        .cloned()
                        .collect();
                    p.list.push(BinaryFact::CarriedSyscall {
                        runtime: c.clone(),
                        row,
                        fixed_in: row.fixed_in(),
                        sites,
                    });
                }
                None if known && c.release().is_none() => {
                    p.list.push(BinaryFact::CarriedUnknown { runtime: c.clone(), function: f });
                }
                None => {}
            }
        }
        // Named even where none of its entries is linked in (rustix built
        // for `fs` alone): with no rows, as its words say.
        let said = p.list.iter().any(|f| f.carried() == Some(c));
        if !vdso.is_empty() || !said {
            p.list.push(BinaryFact::CarriedVdso { runtime: c.clone(), rows: vdso });
        }
    }
}

/// glibc's per-architecture gaps (its rows of `arch::PATHS`) in a program
/// that imports the entry: i386's `clock_getres()` is a syscall every
/// call, whatever the kernel's vDSO offers. A row whose path reads the vDSO
/// (arm64's `time()`, `sched_getcpu()`'s rseq) is no problem and not said.
fn libc_gap_problems(info: &ExeInfo, p: &mut Problems) {
    if info.libc != LibcKind::Glibc {
        return;
    }
    let glibc = exe::Carried::new(arch::Runtime::Glibc, info.libc_version.as_deref());
    for &f in &info.imports {
        let Some(row) = arch::path_of(arch::Runtime::Glibc, f, glibc.release(), info.machine) else { continue };
        if !row.path.reads_vdso() {
            p.list.push(BinaryFact::CarriedSyscall {
                runtime: glibc.clone(),
                row,
                fixed_in: row.fixed_in(),
                sites: Vec::new(),
            });
        }
    }
}

/// A 32-bit binary, or one of another architecture.
fn arch_problems(info: &ExeInfo, judged: Judged, p: &mut Problems) {
    let (compat, foreign, library) = (judged == Judged::Compat, judged == Judged::Foreign, info.is_library());
    if compat && library {
        p.list.push(BinaryFact::Compat32Library);
    } else if compat {
        p.list.push(BinaryFact::Compat32);
        p.kind = WarnKind::Unproven;
    }
    if foreign {
        let arch = info.arch();
        if info.code_decodable() {
            p.list.push(BinaryFact::ForeignDecoded { arch });
        } else {
            // Said, and the verdict is INFO below, not OK: nothing was
            // looked for in the code.
            p.list.push(BinaryFact::ForeignNotDecoded { arch });
        }
    }
}

/// For which architecture a binary is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// This host's own ABI (class, machine and byte order).
    Native,
    /// This host's 32-bit compat ABI (i386 on x86_64, arm on arm64).
    Compat,
    /// The x32 ABI (ELF32 x86_64): not judged.
    X32,
    /// Another architecture's: judged for its own, without this host's facts.
    Foreign,
}

/// How `info` is judged on this host.
pub fn judged_as(info: &ExeInfo) -> Judged {
    let same_order = info.little_endian == arch::HOST_LITTLE_ENDIAN;
    if info.machine == arch::HOST_MACHINE && same_order && info.is_64 == arch::HOST_IS_64 {
        return Judged::Native;
    }
    if info.machine == arch::machine::X86_64 && !info.is_64 {
        return Judged::X32;
    }
    let compat = arch::Abi::from_elf(info.is_64, info.machine)
        .is_some_and(|abi| same_order && arch::HOST_ABI.and_then(arch::Abi::compat) == Some(abi));
    if compat {
        Judged::Compat
    } else {
        Judged::Foreign
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict as (status, facts, the reason first, hint, warning kind).
    fn verdict_parts(info: &ExeInfo, host: &HostFacts) -> (Status, Vec<BinaryFact>, Option<BinaryHint>, WarnKind) {
        let v = binary_verdict(info, host);
        (v.status, v.findings.into_iter().map(|f| f.fact).collect(), v.hint, v.warn_kind)
    }
    use crate::arch;
    use crate::inspect::exe::GoInfo;
    use crate::inspect::exe::{ExeInfo, LibcKind};
    use crate::inspect::kernel::VsyscallMode;

    fn exe(libc: LibcKind, interp: Option<&str>) -> ExeInfo {
        ExeInfo {
            is_64: true,
            little_endian: true,
            flags: 0,
            machine: arch::machine::X86_64,
            elf_type: 3,
            interp: interp.map(str::to_string),
            pie: true,
            has_dynamic: interp.is_some(),
            libc,
            code_scanned: true,
            ..ExeInfo::default()
        }
    }

    const GOOD: HostFacts = HostFacts { vdso_has_hash: Some(true), vsyscall: VsyscallMode::Xonly };

    #[test]
    fn verdicts() {
        if arch::HOST_MACHINE != arch::machine::X86_64 {
            return;
        }
        // Static glibc: the vDSO lookup decides.
        let mut old = exe(LibcKind::Glibc, None);
        old.elf_type = 2;
        let (st, facts, hint, _) = verdict_parts(&old, &GOOD);
        assert_eq!(st, Status::Fail);
        assert_eq!(facts, [BinaryFact::StaticGlibcNoVdso]);
        assert_eq!(hint, Some(BinaryHint::RebuildStaticGlibc));
        old.vdso_lookup = true;
        assert_eq!(verdict_parts(&old, &GOOD).0, Status::Ok);

        // musl against a vDSO with only DT_GNU_HASH.
        let musl = exe(LibcKind::Musl, Some("/lib/ld-musl-x86_64.so.1"));
        assert_eq!(verdict_parts(&musl, &GOOD).0, Status::Ok);
        let gnu_only = HostFacts { vdso_has_hash: Some(false), ..GOOD };
        let (st, facts, _, _) = verdict_parts(&musl, &gnu_only);
        assert_eq!(st, Status::Fail);
        assert!(matches!(facts[..], [BinaryFact::MuslNoDtHash { .. }]), "{facts:?}");

        // vsyscall callers: a program fails (and crashes with vsyscall=none), a library warns.
        let mut legacy = exe(LibcKind::Glibc, Some("/lib64/ld-linux-x86-64.so.2"));
        legacy.vsyscall_sites = 2;
        legacy.vsyscall_first = Some(0x401000);
        let none = HostFacts { vsyscall: VsyscallMode::None, ..GOOD };
        let (st, facts, _, _) = verdict_parts(&legacy, &none);
        assert_eq!(st, Status::Fail);
        let vsyscall = BinaryFact::VsyscallSites {
            count: 2,
            first: Some(0x401000),
            site: None,
            library: false,
            mode: VsyscallMode::None,
        };
        assert_eq!(facts.first(), Some(&vsyscall), "{facts:?}");
        legacy.pie = false;
        legacy.interp = None;
        legacy.soname = Some("libjvm.so".into());
        let (st, facts, _, kind) = verdict_parts(&legacy, &GOOD);
        assert_eq!((st, kind), (Status::Warn, WarnKind::Unproven));
        assert!(matches!(facts[0], BinaryFact::VsyscallSites { library: true, .. }), "{facts:?}");

        // Go, with cgo too: OK.
        let mut go = exe(LibcKind::Go, Some("/lib64/ld-linux-x86-64.so.2"));
        go.go = Some(GoInfo { version: "go1.22.1".into(), cgo: Some(true), getrandom: None });
        go.libc_version = Some("go1.22.1".into());
        let (st, facts, _, _) = verdict_parts(&go, &GOOD);
        assert_eq!(st, Status::Ok);
        let runtime = RuntimeRef { libc: LibcKind::Go, version: Some("go1.22.1".into()) };
        assert_eq!(facts, [BinaryFact::GoRuntime { runtime, cgo: true }]);
        // Built with CGO_ENABLED=1 but pure Go, so statically linked: not "with cgo".
        go.interp = None;
        let (st, facts, _, _) = verdict_parts(&go, &GOOD);
        assert_eq!(st, Status::Ok);
        assert!(matches!(facts[..], [BinaryFact::GoRuntime { cgo: false, .. }]), "{facts:?}");
    }

    #[test]
    fn code_not_decoded_is_never_ok() {
        if arch::HOST_MACHINE != arch::machine::X86_64 {
            return;
        }
        let mut cut = exe(LibcKind::Glibc, Some("/lib64/ld-linux-x86-64.so.2"));
        cut.truncated = Some(exe::Truncated { size: 5000, described: 16264 });
        cut.layout = exe::Layout::BadSections;
        let (st, facts, hint, _) = verdict_parts(&cut, &GOOD);
        assert_eq!(st, Status::Warn, "{facts:?}");
        assert_eq!(facts[0], BinaryFact::Truncated { size: 5000, described: 16264 });
        assert!(!facts.contains(&BinaryFact::SectionsCorrupt), "said once: {facts:?}");
        assert_eq!(hint, Some(BinaryHint::Damaged));
        cut.truncated = None;
        assert_eq!(verdict_parts(&cut, &GOOD).0, Status::Warn);
        cut.layout = exe::Layout::NoSections;
        let (st, facts, _, _) = verdict_parts(&cut, &GOOD);
        assert_eq!(st, Status::Ok, "judged from its segments: {facts:?}");
        assert!(facts.contains(&BinaryFact::NoSections { dynamic: true }), "{facts:?}");
        cut.code_scanned = false;
        assert_eq!(verdict_parts(&cut, &GOOD).0, Status::Warn);
    }

    #[test]
    fn verdicts_by_class_and_arch() {
        if arch::HOST_MACHINE != arch::machine::X86_64 {
            return;
        }
        // 32-bit: a program is INFO (facts, clearable by a trace), a
        // library OK; x32 and other machines are not judged.
        let mut m32 = exe(LibcKind::Glibc, Some("/lib/ld-linux.so.2"));
        m32.is_64 = false;
        m32.machine = arch::machine::I386;
        let (st, _, _, kind) = verdict_parts(&m32, &GOOD);
        assert_eq!((st, kind), (Status::Info, WarnKind::Unproven));
        m32.pie = false;
        m32.interp = None;
        assert_eq!(verdict_parts(&m32, &GOOD).0, Status::Ok);
        let mut x32 = exe(LibcKind::Glibc, Some("/libx32/ld-linux-x32.so.2"));
        x32.is_64 = false;
        let (st, facts, _, _) = verdict_parts(&x32, &GOOD);
        assert_eq!(st, Status::Skip);
        assert_eq!(facts, [BinaryFact::X32 { machine: arch::machine::X86_64 }]);
        // Another architecture's binary is judged for its own: arm64 code
        // is decoded (OK, said so); armhf code is not (INFO, never OK by
        // inference); this host's DT_HASH does not decide a foreign musl.
        let mut arm = exe(LibcKind::Glibc, Some("/lib/ld-linux-aarch64.so.1"));
        arm.machine = arch::machine::AARCH64;
        let (st, facts, _, _) = verdict_parts(&arm, &GOOD);
        assert_eq!(st, Status::Ok, "{facts:?}");
        assert_eq!(facts.last(), Some(&BinaryFact::ForeignDecoded { arch: "arm64".into() }));
        let mut armhf = exe(LibcKind::Glibc, Some("/lib/ld-linux-armhf.so.3"));
        (armhf.machine, armhf.is_64, armhf.flags) = (arch::machine::ARM, false, 0x0500_0400);
        let (st, facts, _, _) = verdict_parts(&armhf, &GOOD);
        assert_eq!(st, Status::Info, "{facts:?}");
        assert_eq!(facts.first(), Some(&BinaryFact::ForeignNotDecoded { arch: "armhf".into() }));
        let mut musl = exe(LibcKind::Musl, None);
        musl.machine = arch::machine::AARCH64;
        let no_hash = HostFacts { vdso_has_hash: Some(false), ..GOOD };
        assert_eq!(verdict_parts(&musl, &no_hash).0, Status::Ok);

        // A static program with no recognised runtime: a clearable warning.
        let (st, _, _, kind) = verdict_parts(&exe(LibcKind::Unknown, None), &GOOD);
        assert_eq!((st, kind), (Status::Warn, WarnKind::Unproven));
    }

    /// A raw getrandom site in a carried runtime's own function is its
    /// row's: under a glibc that reads the vDSO, libuv's `uv__getrandom`
    /// is INFO (no libuv release reads it), not the program's FAIL bypass;
    /// the same site in the program's `main` still FAILs.
    #[test]
    fn a_carried_runtime_owns_its_raw_sites() {
        if arch::HOST_MACHINE != arch::machine::X86_64 {
            return;
        }
        let site = |symbol: &str| exe::Site {
            addr: 0x18bf30f,
            via: exe::Via::LibcSyscall,
            function: Some(arch::VdsoFn::Getrandom),
            clock: None,
            entry: None,
            symbol: Some(symbol.into()),
        };
        let mut node = exe(LibcKind::Glibc, Some("/lib64/ld-linux-x86-64.so.2"));
        node.libc_version = Some("2.41".into());
        node.carried = vec![exe::Carried::new(arch::Runtime::Libuv, None)];
        node.sites = vec![site("uv__getrandom")];
        node.clock_sites = 1;
        let (st, facts, _, _) = verdict_parts(&node, &GOOD);
        assert_eq!(st, Status::Ok, "{facts:?}");
        let libuv = facts.iter().find(|f| matches!(f, BinaryFact::CarriedSyscall { .. })).unwrap();
        assert_eq!(libuv.kind(), Kind::RuntimeNoVdsoRelease);
        assert!(matches!(libuv, BinaryFact::CarriedSyscall { fixed_in: None, sites, .. } if sites.len() == 1));
        node.sites = vec![site("main")];
        let (st, facts, _, _) = verdict_parts(&node, &GOOD);
        assert_eq!(st, Status::Fail, "{facts:?}");
        assert!(facts.iter().any(|f| matches!(f, BinaryFact::RawRandomSites { .. })), "{facts:?}");
    }

    /// The getrandom crate 0.2 makes a syscall per call: WARN, naming 0.3
    /// (its first release through the C library); with its release not in
    /// the file, the path is not known (INFO); 0.3 goes through libc (OK).
    #[test]
    fn the_getrandom_crate_is_judged_by_its_release() {
        let mut prog = exe(LibcKind::Glibc, Some("/lib64/ld-linux-x86-64.so.2"));
        let crate_at = |v: Option<&str>| exe::Carried::new(arch::Runtime::GetrandomCrate, v);
        prog.carried = vec![crate_at(Some("0.2.15"))];
        let v = binary_verdict(&prog, &GOOD);
        let f = v.findings.iter().find(|f| f.fact.carried().is_some()).unwrap();
        assert_eq!((f.kind, f.status), (Kind::RuntimeSyscallFixed, Status::Warn));
        assert!(matches!(f.fact, BinaryFact::CarriedSyscall { fixed_in: Some((0, 3)), .. }));
        assert_eq!(
            f.fact.to_string(),
            "the getrandom crate 0.2.15's getrandom::getrandom makes a getrandom syscall every call, whatever the C library: \
             the getrandom crate ≥ 0.3 calls the C library's getrandom(), which glibc ≥ 2.41 reads from the vDSO"
        );
        prog.carried = vec![crate_at(None)];
        let v = binary_verdict(&prog, &GOOD);
        let f = v.findings.iter().find(|f| f.fact.carried().is_some()).unwrap();
        assert_eq!((f.kind, f.status), (Kind::RandomRouteUnknown, Status::Info));
        prog.carried = vec![crate_at(Some("0.3.4"))];
        let v = binary_verdict(&prog, &GOOD);
        let f = v.findings.iter().find(|f| f.fact.carried().is_some()).unwrap();
        assert_eq!((f.kind, f.status), (Kind::BinaryOk, Status::Ok));
    }
}
