//! The verdict on one ELF file of an image or a process, judged for the
//! architecture it was built for: can its clock reads reach the vDSO? The
//! policy once, for `check --image` and `check -p` (the command gathers,
//! this judges).

use super::kind::Kind;
use super::Status;
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

/// What a runtime is called in sentences: `glibc 2.36`, `Go go1.19.8`.
fn runtime_text(info: &ExeInfo) -> String {
    let name = match info.libc {
        LibcKind::Glibc => "glibc",
        LibcKind::Musl => "musl",
        LibcKind::Bionic => "bionic",
        LibcKind::Go => "Go",
        LibcKind::Unknown => "an unrecognised runtime",
    };
    match &info.libc_version {
        Some(v) => format!("{name} {v}"),
        None => name.to_string(),
    }
}

/// A call site's enclosing function, or `?` in stripped code.
fn site_symbol(s: &exe::Site) -> &str {
    s.symbol.as_deref().unwrap_or("an unnamed function")
}

/// `clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x1149 in main`.
fn site_text(s: &exe::Site) -> String {
    let f = s.function.map_or("?", |f| f.name());
    let args = match (s.function, s.clock) {
        (Some(f), Some(c)) if f.takes_clock() => {
            arch::clock_info(c as i32).map_or_else(|| format!("clock {c}"), |i| i.name.to_string())
        }
        (Some(f), None) if f.takes_clock() => "clock id not a constant".to_string(),
        _ => String::new(),
    };
    format!("{f}({args}) by {} at {:#x} in {}", s.via.text(), s.addr, site_symbol(s))
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
}

/// `check -p`'s `process_binary` row when the executable cannot be read:
/// SKIP, never a verdict on what was not seen.
pub fn unreadable_exe(e: &dyn std::fmt::Display) -> super::row::Check {
    super::row::Check::new(
        Kind::ExeUnreadable,
        PROCESS_BINARY,
        Status::Skip,
        format!("cannot read the executable: {e}"),
        None,
    )
}

/// The row's name in `check -p`.
const PROCESS_BINARY: &str = "process_binary";

/// `check -p`'s row for a program run under an emulator or instrumenter
/// (`tool`, at `path`): the tool maps no [vdso], so every clock read is a
/// syscall — FAIL, expected there.
pub fn under_emulator(who: &super::ProcessName, program: Option<&str>, tool: &str, path: &str) -> super::row::Check {
    let prog = program.map_or_else(String::new, |p| format!(" {p}"));
    super::row::Check::new(
        Kind::UnderEmulator,
        PROCESS_BINARY,
        Status::Fail,
        format!(
            "{} runs{prog} under {tool} ({path}): the tool maps no [vdso] for the program and serves each clock read itself, as a syscall",
            who.text()
        ),
        Some("expected under an emulator or instrumenter; audit the program run natively"),
    )
}

/// `check -p`'s `process_binary` row: the process's executable (`loader`:
/// started as `ld.so PROG`) judged by [`binary_verdict`], its hint naming
/// the process; and whether a WARN only says the path is unproven.
pub fn process_binary(
    who: &super::ProcessName,
    loader: Option<&str>,
    info: &ExeInfo,
    host: &HostFacts,
) -> (super::row::Check, WarnKind) {
    let class = if info.is_64 { "64-bit" } else { "32-bit" };
    let arch_name = arch::machine_name(info.machine);
    let linkage = match info.linkage() {
        Linkage::Dynamic => format!("dynamic ({})", info.interp.as_deref().unwrap_or("")),
        Linkage::Static => "statically linked".to_string(),
        Linkage::StaticPie => "statically linked (static-pie)".to_string(),
    };
    let v = binary_verdict(info, host);
    let launched = loader.map_or_else(String::new, |l| format!(" (started as `{l} PROG`)"));
    let detail = format!("{}{launched}: {class} {arch_name}, {linkage}; {}", who.with_exe(), v.detail);
    // The hint names this process, not a placeholder.
    let hint = v.hint.map(|h| h.for_process(who.pid));
    // The policy's process column weighs it with the rest (a raw clock
    // site is unproven there until the window shows it).
    (super::row::Check::new(v.kind, PROCESS_BINARY, v.status, detail, hint.as_deref()), v.warn_kind)
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
        let detail = format!("{} x32-ABI binary (ELF32): not judged", arch::machine_name(info.machine));
        let findings = vec![BinaryFinding::new(Kind::X32NotJudged, Status::Skip, detail.clone())];
        return BinaryVerdict {
            status: Status::Skip,
            kind: Kind::X32NotJudged,
            detail,
            hint: None,
            warn_kind: WarnKind::None,
            findings,
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
    arch_problems(info, judged, &mut p);
    let Problems { list, hint, kind } = p;
    let findings: Vec<BinaryFinding> = list.into_iter().map(|(k, s, d)| BinaryFinding::new(k, s, d)).collect();
    let status = binary_status(&findings);
    let findings = sorted(findings);
    let detail = findings.iter().map(|f| f.detail.as_str()).collect::<Vec<_>>().join("; ");
    let warn_kind = if matches!(status, Status::Warn | Status::Info) { kind } else { WarnKind::None };
    let lead = findings.first().map_or(Kind::BinaryOk, |f| f.kind);
    BinaryVerdict { status, kind: lead, detail, hint, warn_kind, findings }
}

/// A binary's verdict: its status, the kind of its reason (the first,
/// worst finding), the words, the hint, and each finding.
#[derive(Debug, Clone)]
pub struct BinaryVerdict {
    pub status: Status,
    pub kind: Kind,
    pub detail: String,
    pub hint: Option<BinaryHint>,
    pub warn_kind: WarnKind,
    pub findings: Vec<BinaryFinding>,
}

/// One finding about a binary (JSON `binaries[].findings`): its kind, its
/// status (the policy's in the audit's context, then the selection's) and
/// its words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BinaryFinding {
    pub kind: Kind,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waived: Option<super::gate::Waiver>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raised: Option<super::gate::Raise>,
}

impl BinaryFinding {
    fn new(kind: Kind, status: Status, detail: String) -> BinaryFinding {
        BinaryFinding { kind, status, detail, waived: None, raised: None }
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

/// What a binary's verdict is made of, as it is found: each (status,
/// reason), the first hint, and whether a warning only says "unproven".
struct Problems {
    list: Vec<(Kind, Status, String)>,
    hint: Option<BinaryHint>,
    kind: WarnKind,
}

/// Calls into the fixed [vsyscall] page.
fn vsyscall_problems(info: &ExeInfo, host: &HostFacts, p: &mut Problems) {
    let library = info.is_library();
    if info.vsyscall_sites > 0 {
        let what = match host.vsyscall {
            VsyscallMode::None => "this kernel has no [vsyscall] page (vsyscall=none): the call crashes with SIGSEGV",
            _ => "each call traps and is emulated by the kernel, invisible to strace",
        };
        let first = info.sites.iter().find(|s| s.via == exe::Via::Vsyscall);
        let sites = format!(
            "its code calls the fixed [vsyscall] page ({} site(s), first at {:#x}{})",
            info.vsyscall_sites,
            info.vsyscall_first.unwrap_or(0),
            first.map_or_else(String::new, |s| format!(" in {}", site_symbol(s)))
        );
        if library {
            // Libraries keep such calls as fallbacks (HotSpot's libjvm.so
            // has a vsyscall getcpu for kernels without sched_getcpu): a
            // warning; whether it runs is what `check -- CMD` shows.
            p.list.push((
                Kind::VsyscallFallbackSite,
                Status::Warn,
                format!("{sites}, likely a fallback path: if taken, {what}"),
            ));
            p.hint = Some(BinaryHint::SmokeTest);
            p.kind = WarnKind::Unproven;
        } else {
            p.list.push((Kind::VsyscallCallSite, Status::Fail, format!("{sites}: {what}")));
            p.hint = Some(BinaryHint::RebuildVsyscall);
        }
    }
}

/// Raw clock syscalls in the code: the vDSO's clocks (and unknown ids)
/// warn, CPU-time and other always-syscall clocks are said, not judged.
fn site_problems(info: &ExeInfo, p: &mut Problems) {
    // Raw getrandom: judged by what the runtime would do (model::random).
    let (random, clocks): (Vec<&exe::Site>, Vec<&exe::Site>) = info
        .sites
        .iter()
        .filter(|s| s.via != exe::Via::Vsyscall)
        .partition(|s| s.function.is_some_and(|f| !crate::inspect::code::is_clock_read(f)));
    if let Some((status, text, hint)) = raw_site_problem(info, &random) {
        p.list.push((Kind::RawRandomCallSite, status, text));
        if status > Status::Ok {
            p.hint = p.hint.or(hint);
        }
    }
    let (bypass, cputime): (Vec<&exe::Site>, Vec<&exe::Site>) = clocks.into_iter().partition(|s| {
        !s.clock.is_some_and(|c| arch::clock_info(c as i32).is_some_and(|c| c.class == ClockClass::AlwaysSyscall))
    });
    if !bypass.is_empty() {
        // Sites counted but not kept (past MAX_SITES).
        let more = (info.clock_sites as usize).saturating_sub(bypass.len() + cputime.len() + random.len());
        let listed: Vec<String> = bypass.iter().take(3).map(|s| site_text(s)).collect();
        let rest = bypass.len().saturating_sub(3) + more;
        p.list.push((
            Kind::RawClockCallSite,
            Status::Warn,
            format!(
                "its code makes raw clock syscalls the vDSO would serve: {}{}: each one enters the kernel",
                listed.join(", "),
                if rest > 0 { format!(" and {rest} more") } else { String::new() }
            ),
        ));
        p.hint = p.hint.or(Some(BinaryHint::ClocksThroughLibc));
        p.kind = WarnKind::Unproven;
    }
    if !cputime.is_empty() {
        let listed: Vec<String> = cputime.iter().take(3).map(|s| site_text(s)).collect();
        p.list.push((
            Kind::CputimeCallSite,
            Status::Info,
            format!("raw syscalls of clocks the vDSO never serves (always a syscall): {}", listed.join(", ")),
        ));
    }
}

/// Code that was not read whole, or not from its sections: said, and never
/// OK when some of it could not be decoded (a truncated or corrupt file).
fn code_problems(info: &ExeInfo, p: &mut Problems) {
    if !info.code_decodable() {
        return;
    }
    if let Some(t) = info.truncated {
        p.list.push((
            Kind::BinaryTruncated,
            Status::Warn,
            format!(
                "truncated: the file has {} of the {} bytes its headers describe; what is missing was not decoded, so call sites may be missed",
                t.size, t.described
            ),
        ));
        p.hint = p.hint.or(Some(BinaryHint::Damaged));
    } else if !info.code_scanned {
        p.list.push((
            Kind::CodeNotRead,
            Status::Warn,
            "no executable code could be read: call sites not looked for".into(),
        ));
    }
    match info.layout {
        exe::Layout::Sections => {}
        exe::Layout::NoSections => p.list.push((
            Kind::BinaryOk,
            Status::Ok,
            format!(
                "no section headers: its code was decoded from its executable segments (PT_LOAD){}",
                if info.has_dynamic { ", its imports read from its dynamic section" } else { "" }
            ),
        )),
        // A truncated file's section headers are what is missing: said above.
        exe::Layout::BadSections if info.truncated.is_some() => {}
        exe::Layout::BadSections => {
            p.list.push((
                Kind::SectionsCorrupt,
                Status::Warn,
                "its section headers cannot be read (corrupt): its code was decoded from its executable segments only, its own symbols unread".into(),
            ));
            p.hint = p.hint.or(Some(BinaryHint::Altered));
        }
    }
}

/// The raw getrandom sites of a binary, and what its runtime would have
/// done: FAIL where it reads the vDSO (the raw call bypasses it); none
/// where it makes the syscall anyway (the image's random row says so).
fn raw_site_problem(info: &ExeInfo, sites: &[&exe::Site]) -> Option<(Status, String, Option<BinaryHint>)> {
    if sites.is_empty() {
        return None;
    }
    let route = super::random::random_route(info);
    let listed: Vec<String> = sites
        .iter()
        .take(3)
        .map(|s| {
            format!("{} at {:#x} in {}", s.via.text(), s.addr, s.symbol.as_deref().unwrap_or("an unnamed function"))
        })
        .collect();
    let more = if sites.len() > 3 {
        format!(" and {} more", crate::words::thousands((sites.len() - 3) as u64))
    } else {
        String::new()
    };
    let raw = if sites.iter().all(|s| s.via == exe::Via::LibcSyscall) {
        "raw syscall(SYS_getrandom)"
    } else {
        "raw getrandom syscalls"
    };
    let runtime = route.runtime_text();
    match route.path {
        super::random::RandomPath::Vdso => Some((
            Status::Fail,
            format!("{raw} bypasses the vDSO that {runtime} uses: {}{more}", listed.join(", ")),
            Some(BinaryHint::RandomThroughLibc),
        )),
        // The runtime makes the syscall too: the image's random row (and
        // `check -p`'s) says so, once.
        _ => None,
    }
}

/// What the runtime (C library, Go) does for clock reads.
fn runtime_problems(info: &ExeInfo, host: &HostFacts, p: &mut Problems) {
    let library = info.is_library();
    let runtime = runtime_text(info);
    let linkage = info.linkage();
    match info.libc {
        LibcKind::Go => {
            // CGO_ENABLED=1 is in the build info of every Go build that
            // allowed cgo, pure Go ones too: only a program linked against
            // a C library (it has an interpreter) runs with cgo.
            let cgo = match info.go.as_ref().and_then(|g| g.cgo) {
                Some(true) if linkage == Linkage::Dynamic => ", with cgo",
                _ => "",
            };
            p.list.push((Kind::BinaryOk, Status::Ok, format!("{runtime}{cgo}: the Go runtime is expected to call the vDSO itself")));
        }
        LibcKind::Glibc if linkage != Linkage::Dynamic && !library => {
            if info.vdso_lookup {
                p.list.push((
                    Kind::BinaryOk,
                    Status::Ok,
                    format!("static {runtime} that looks the vDSO up (glibc ≥ 2.31 does in static binaries)"),
                ));
            } else {
                p.list.push((
                    Kind::StaticGlibcNoVdso,
                    Status::Fail,
                    "static glibc without a vDSO lookup (glibc < 2.31 never used the vDSO in static binaries, sourceware bug 19767): every clock_gettime and gettimeofday is a syscall".into(),
                ));
                p.hint = p.hint.or(Some(BinaryHint::RebuildStaticGlibc));
            }
        }
        LibcKind::Musl => match host.vdso_has_hash {
            Some(false) => {
                p.list.push((
                    Kind::MuslNoDtHash,
                    Status::Fail,
                    format!("{runtime}: musl looks vDSO symbols up through DT_HASH only and this kernel's vDSO has only DT_GNU_HASH: every clock read is a syscall"),
                ));
                p.hint = p.hint.or(Some(BinaryHint::MuslNeedsDtHash));
            }
            Some(true) => {
                p.list.push((Kind::BinaryOk, Status::Ok, format!("{runtime}: expected to look the vDSO up (DT_HASH present here)")))
            }
            None => p.list.push((
                Kind::BinaryOk,
                Status::Ok,
                format!("{runtime}: expected to look the vDSO up (through DT_HASH, which its kernel's vDSO is not read here to confirm)"),
            )),
        },
        LibcKind::Glibc | LibcKind::Bionic => {
            p.list.push((Kind::BinaryOk, Status::Ok, format!("{runtime}: its clock reads are expected to go through the vDSO")))
        }
        LibcKind::Unknown if library => p.list
            .push((Kind::BinaryOk, Status::Ok, "library without a C library of its own: it reads clocks through its program's".into())),
        LibcKind::Unknown if linkage == Linkage::Dynamic => {
            p.list.push((
                Kind::LibcUnknown,
                Status::Warn,
                format!("C library not recognised (interpreter {})", info.interp.as_deref().unwrap_or("?")),
            ));
            p.kind = WarnKind::Unproven;
        }
        LibcKind::Unknown => {
            p.list.push((
                Kind::RuntimeUnknown,
                Status::Warn,
                "static, runtime not recognised and no vDSO lookup found in it: its clock reads may all be syscalls"
                    .into(),
            ));
            p.hint = p.hint.or(Some(BinaryHint::RunIt));
            p.kind = WarnKind::Unproven;
        }
    }
}

/// A 32-bit binary, or one of another architecture.
fn arch_problems(info: &ExeInfo, judged: Judged, p: &mut Problems) {
    let (compat, foreign, library) = (judged == Judged::Compat, judged == Judged::Foreign, info.is_library());
    if compat && library {
        p.list.push((Kind::BinaryOk, Status::Ok, "32-bit library: its programs get the 32-bit verdict".into()));
    } else if compat {
        // Facts, not a defect: INFO, so a gate on WARN passes a correct
        // 32-bit program (its raw clock syscalls, if any, still WARN).
        p.list.push((
            Kind::Compat32Bit,
            Status::Info,
            "32-bit: the compat vDSO (vdso32) serves its clock reads, a little slower than the 64-bit one; its clock syscalls are invisible to syscalls:sys_enter_* tracepoints".into(),
        ));
        p.kind = WarnKind::Unproven;
    }
    if foreign {
        let arch = info.arch();
        if info.code_decodable() {
            p.list.push((Kind::BinaryOk, Status::Ok, format!("judged as {arch} code (not this host's architecture)")));
        } else {
            // Said, and the verdict is INFO below, not OK: nothing was
            // looked for in the code.
            p.list.push((
                Kind::ForeignNotDecoded,
                Status::Info,
                format!("{arch} code: call sites not decoded for this architecture (only amd64, i386 and arm64 code is), raw clock syscalls not looked for"),
            ));
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

    /// The verdict as (status, detail, hint, warning kind).
    fn verdict_parts(info: &ExeInfo, host: &HostFacts) -> (Status, String, Option<BinaryHint>, WarnKind) {
        let v = binary_verdict(info, host);
        (v.status, v.detail, v.hint, v.warn_kind)
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
        let (st, detail, hint, _) = verdict_parts(&old, &GOOD);
        assert_eq!(st, Status::Fail);
        assert!(detail.contains("glibc < 2.31") && detail.contains("bug 19767"), "{detail}");
        assert_eq!(hint, Some(BinaryHint::RebuildStaticGlibc));
        old.vdso_lookup = true;
        assert_eq!(verdict_parts(&old, &GOOD).0, Status::Ok);

        // musl against a vDSO with only DT_GNU_HASH.
        let musl = exe(LibcKind::Musl, Some("/lib/ld-musl-x86_64.so.1"));
        assert_eq!(verdict_parts(&musl, &GOOD).0, Status::Ok);
        let gnu_only = HostFacts { vdso_has_hash: Some(false), ..GOOD };
        let (st, detail, _, _) = verdict_parts(&musl, &gnu_only);
        assert_eq!(st, Status::Fail);
        assert!(detail.contains("DT_HASH only"), "{detail}");

        // vsyscall callers: a program fails (and crashes with vsyscall=none), a library warns.
        let mut legacy = exe(LibcKind::Glibc, Some("/lib64/ld-linux-x86-64.so.2"));
        legacy.vsyscall_sites = 2;
        legacy.vsyscall_first = Some(0x401000);
        let none = HostFacts { vsyscall: VsyscallMode::None, ..GOOD };
        let (st, detail, _, _) = verdict_parts(&legacy, &none);
        assert_eq!(st, Status::Fail);
        assert!(detail.starts_with("its code calls the fixed [vsyscall] page (2 site(s), first at 0x401000)"));
        assert!(detail.contains("crashes with SIGSEGV"), "{detail}");
        legacy.pie = false;
        legacy.interp = None;
        legacy.soname = Some("libjvm.so".into());
        let (st, detail, _, kind) = verdict_parts(&legacy, &GOOD);
        assert_eq!((st, kind), (Status::Warn, WarnKind::Unproven));
        assert!(detail.contains("likely a fallback path"), "{detail}");

        // Go, with cgo too: OK.
        let mut go = exe(LibcKind::Go, Some("/lib64/ld-linux-x86-64.so.2"));
        go.go = Some(GoInfo { version: "go1.22.1".into(), cgo: Some(true), getrandom: None });
        go.libc_version = Some("go1.22.1".into());
        let (st, detail, _, _) = verdict_parts(&go, &GOOD);
        assert_eq!(st, Status::Ok);
        assert_eq!(detail, "Go go1.22.1, with cgo: the Go runtime is expected to call the vDSO itself");
        // Built with CGO_ENABLED=1 but pure Go, so statically linked: not "with cgo".
        go.interp = None;
        let (st, detail, _, _) = verdict_parts(&go, &GOOD);
        assert_eq!(st, Status::Ok);
        assert!(!detail.contains("cgo"), "{detail}");
    }

    #[test]
    fn code_not_decoded_is_never_ok() {
        if arch::HOST_MACHINE != arch::machine::X86_64 {
            return;
        }
        let mut cut = exe(LibcKind::Glibc, Some("/lib64/ld-linux-x86-64.so.2"));
        cut.truncated = Some(exe::Truncated { size: 5000, described: 16264 });
        cut.layout = exe::Layout::BadSections;
        let (st, detail, hint, _) = verdict_parts(&cut, &GOOD);
        assert_eq!(st, Status::Warn, "{detail}");
        assert!(detail.starts_with("truncated: the file has 5000 of the 16264 bytes its headers describe"), "{detail}");
        assert!(!detail.contains("section headers cannot be read"), "said once: {detail}");
        assert_eq!(hint, Some(BinaryHint::Damaged));
        cut.truncated = None;
        assert_eq!(verdict_parts(&cut, &GOOD).0, Status::Warn);
        cut.layout = exe::Layout::NoSections;
        let (st, detail, _, _) = verdict_parts(&cut, &GOOD);
        assert_eq!(st, Status::Ok, "judged from its segments: {detail}");
        assert!(detail.contains("no section headers: its code was decoded from its executable segments"), "{detail}");
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
        let (st, detail, _, _) = verdict_parts(&x32, &GOOD);
        assert_eq!(st, Status::Skip);
        assert!(detail.contains("x32"), "{detail}");
        // Another architecture's binary is judged for its own: arm64 code
        // is decoded (OK, said so); armhf code is not (INFO, never OK by
        // inference); this host's DT_HASH does not decide a foreign musl.
        let mut arm = exe(LibcKind::Glibc, Some("/lib/ld-linux-aarch64.so.1"));
        arm.machine = arch::machine::AARCH64;
        let (st, detail, _, _) = verdict_parts(&arm, &GOOD);
        assert_eq!(st, Status::Ok, "{detail}");
        assert!(detail.ends_with("; judged as arm64 code (not this host's architecture)"), "{detail}");
        let mut armhf = exe(LibcKind::Glibc, Some("/lib/ld-linux-armhf.so.3"));
        (armhf.machine, armhf.is_64, armhf.flags) = (arch::machine::ARM, false, 0x0500_0400);
        let (st, detail, _, _) = verdict_parts(&armhf, &GOOD);
        assert_eq!(st, Status::Info, "{detail}");
        assert!(detail.starts_with("armhf code: call sites not decoded for this architecture"), "{detail}");
        let mut musl = exe(LibcKind::Musl, None);
        musl.machine = arch::machine::AARCH64;
        let no_hash = HostFacts { vdso_has_hash: Some(false), ..GOOD };
        assert_eq!(verdict_parts(&musl, &no_hash).0, Status::Ok);

        // A static program with no recognised runtime: a clearable warning.
        let (st, _, _, kind) = verdict_parts(&exe(LibcKind::Unknown, None), &GOOD);
        assert_eq!((st, kind), (Status::Warn, WarnKind::Unproven));
    }
}
