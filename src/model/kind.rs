//! The finding catalogue: every kind of thing vdsoctl can say about a
//! host, a process, a command or an image, by a stable id (as ShellCheck's
//! SCnnnn or clippy's lint names): JSON `kind`, the Prometheus `kind`
//! label, JUnit's failure type, baselines, `--fail-on`, `--allow` and the
//! ignore file all name findings by it. doc/FINDINGS.md has a section per
//! kind (a test holds the two together); the severity of each kind in each
//! context is [`crate::model::gate::policy`].

use serde::Serialize;

/// What a finding is about: the section of doc/FINDINGS.md it sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Subject {
    /// The vDSO mapping, its image and the auxiliary vector.
    Vdso,
    /// Clocksource, TSC, kernel release, vsyscall mode.
    Kernel,
    /// What the clock bench measured.
    Clocks,
    /// getrandom and its routes.
    Random,
    /// One executable's code and runtime (`--image`, `-p`).
    Binary,
    /// What a trace window saw.
    Observed,
    /// Seccomp filters and profiles.
    Seccomp,
    /// The audit itself: its walk, its command, time namespaces.
    Audit,
}

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident = $id:literal, $subject:ident;)*) => {
        /// A finding's kind: its stable id ([`Kind::id`]) never changes
        /// once released; a new fact is a new kind.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind {
            $($(#[$doc])* $variant,)*
        }

        impl Kind {
            /// Every kind, in catalogue order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant,)*];

            /// The stable id: `raw-clock-syscall`.
            pub fn id(self) -> &'static str {
                match self {
                    $(Kind::$variant => $id,)*
                }
            }

            /// The section of doc/FINDINGS.md it sits in.
            pub fn subject(self) -> Subject {
                match self {
                    $(Kind::$variant => Subject::$subject,)*
                }
            }
        }
    };
}

kinds! {
    // ---- the vDSO mapping and image
    /// `[vdso]` and `[vvar]` are mapped.
    VdsoMapped = "vdso-mapped", Vdso;
    /// No `[vdso]` mapping: every clock read is a syscall.
    VdsoNotMapped = "vdso-not-mapped", Vdso;
    /// `[vdso]` without `[vvar]`.
    VvarNotMapped = "vvar-not-mapped", Vdso;
    /// The process's mappings could not be read.
    MapsUnreadable = "maps-unreadable", Vdso;
    /// AT_SYSINFO_EHDR is the start of `[vdso]`.
    SysinfoEhdrOk = "sysinfo-ehdr-ok", Vdso;
    /// AT_SYSINFO_EHDR missing, elsewhere or dangling.
    SysinfoEhdrWrong = "sysinfo-ehdr-wrong", Vdso;
    /// The vDSO image exports what the C library binds.
    VdsoExportsOk = "vdso-exports-ok", Vdso;
    /// The vDSO image lacks a symbol, a version or a hash table a C library needs.
    VdsoExportsBroken = "vdso-exports-broken", Vdso;
    /// The vDSO has only DT_GNU_HASH (musl looks up through DT_HASH).
    VdsoGnuHashOnly = "vdso-gnu-hash-only", Vdso;
    /// The vDSO image could not be read.
    VdsoUnreadable = "vdso-unreadable", Vdso;
    /// A file that is no vDSO image (`dump --file`).
    NotAVdso = "not-a-vdso", Vdso;
    /// No table of the C library's vDSO symbols for this architecture.
    VdsoArchUnknown = "vdso-arch-unknown", Vdso;
    /// ELF structures the parser read past or cut (capped tables, bad notes).
    ElfMalformed = "elf-malformed", Vdso;
    /// The runner's kernel facts, left out of an image's verdict.
    RunnerKernel = "runner-kernel", Vdso;

    // ---- the kernel
    /// The clocksource has a vDSO mode.
    ClocksourceVdso = "clocksource-vdso", Kernel;
    /// The clocksource has no vDSO mode: every fine-grained clock read is a syscall.
    ClocksourceNoVdso = "clocksource-no-vdso", Kernel;
    /// The clocksource has a vDSO mode only when the hypervisor marks it stable.
    ClocksourceMaybeVdso = "clocksource-maybe-vdso", Kernel;
    /// The clocksource could not be read.
    ClocksourceUnreadable = "clocksource-unreadable", Kernel;
    /// The TSC has the flags the vDSO needs.
    TscOk = "tsc-ok", Kernel;
    /// The TSC lacks constant/nonstop/known-frequency flags, or the kernel log marks it unstable.
    TscUnstable = "tsc-unstable", Kernel;
    /// The kernel's vDSO serves every clock vdsoctl knows.
    KernelServesClocks = "kernel-serves-clocks", Kernel;
    /// The kernel is too old for the vDSO to serve some clocks.
    KernelOldClocks = "kernel-old-clocks", Kernel;
    /// The vsyscall mode (xonly, none, no page).
    VsyscallMode = "vsyscall-mode", Kernel;
    /// vsyscall=emulate: the legacy page is readable and each call traps.
    VsyscallEmulate = "vsyscall-emulate", Kernel;
    /// The C library vdsoctl itself runs on.
    Libc = "libc", Kernel;
    /// The kernel log or release could not be read.
    KernelUnreadable = "kernel-unreadable", Kernel;

    // ---- the clock bench
    /// The clock is served by the vDSO, through the C library too.
    ClockFast = "clock-fast", Clocks;
    /// The clock is a syscall by design (CPU-time clocks), or the kernel rejects it.
    ClockAlwaysSyscall = "clock-always-syscall", Clocks;
    /// The architecture's vDSO does not offer the function, by design.
    ClockNotOffered = "clock-not-offered", Clocks;
    /// The fast path the kernel's vDSO gives is lost (libc bypass, clocksource, missing symbol).
    ClockLostFastPath = "clock-lost-fast-path", Clocks;
    /// Costs more than `--max-ns` through the C library.
    ClockOverMaxNs = "clock-over-max-ns", Clocks;
    /// The bench could not tell.
    ClockNoVerdict = "clock-no-verdict", Clocks;
    /// The paths of one call disagree: some answer, some fail.
    PathsDisagree = "paths-disagree", Clocks;
    /// `bench --verify` found a path that does not agree with the others.
    VerifyFailed = "verify-failed", Clocks;
    /// Syscalls per call could not be counted (perf refused): timing-based verdicts.
    CountsUnavailable = "counts-unavailable", Clocks;
    /// The [vsyscall] page's calls, emulated by the kernel, as `bench` timed them.
    VsyscallCost = "vsyscall-cost", Clocks;

    // ---- getrandom
    /// The C library reads getrandom from the vDSO.
    RandomVdso = "random-vdso", Random;
    /// The kernel's vDSO has no getrandom: nothing to gain.
    RandomNotOffered = "random-not-offered", Random;
    /// The C library or runtime makes the getrandom syscall by design (glibc < 2.41, musl, Go < 1.24).
    RandomSyscallOldLibc = "random-syscall-old-libc", Random;
    /// The C library vdsoctl runs on (the host's) makes the getrandom syscall by design.
    RandomSyscallHostLibc = "random-syscall-host-libc", Random;
    /// The C library's getrandom makes syscalls though it should read the vDSO.
    RandomLibcBypass = "random-libc-bypass", Random;
    /// The runtime reads getrandom from the vDSO, but this kernel's vDSO has none.
    RandomKernelTooOld = "random-kernel-too-old", Random;
    /// The program does not reach getrandom at all.
    RandomNoCalls = "random-no-calls", Random;
    /// Whether the runtime reads getrandom from the vDSO is not known.
    RandomRouteUnknown = "random-route-unknown", Random;
    /// A raw `syscall(SYS_getrandom)` in code whose runtime reads the vDSO.
    RawRandomCallSite = "raw-random-call-site", Random;
    /// getrandom syscalls observed at a rate (a hot loop) the vDSO would serve.
    RandomSyscallObserved = "random-syscall-observed", Random;

    // ---- one executable
    /// Its runtime is expected to read clocks through the vDSO.
    BinaryOk = "binary-ok", Binary;
    /// Its code makes raw clock syscalls the vDSO would serve.
    RawClockCallSite = "raw-clock-call-site", Binary;
    /// A program's code calls the fixed `[vsyscall]` page.
    VsyscallCallSite = "vsyscall-call-site", Binary;
    /// A library's code calls the `[vsyscall]` page, likely as a fallback.
    VsyscallFallbackSite = "vsyscall-fallback-site", Binary;
    /// Raw syscalls of clocks the vDSO never serves.
    CputimeCallSite = "cputime-call-site", Binary;
    /// Static glibc before 2.31: no vDSO lookup.
    StaticGlibcNoVdso = "static-glibc-no-vdso", Binary;
    /// musl against a vDSO without DT_HASH.
    MuslNoDtHash = "musl-no-dt-hash", Binary;
    /// A dynamic program with a C library vdsoctl does not recognise.
    LibcUnknown = "libc-unknown", Binary;
    /// A static program whose runtime is not recognised.
    RuntimeUnknown = "runtime-unknown", Binary;
    /// A runtime it carries (the getrandom crate 0.2...) makes a syscall
    /// per call where a later release of it reads the vDSO.
    RuntimeSyscallFixed = "runtime-syscall-fixed", Binary;
    /// A runtime it carries (libuv, OpenSSL's seeding...) makes the
    /// syscall, and no release of it reads the vDSO yet.
    RuntimeNoVdsoRelease = "runtime-no-vdso-release", Binary;
    /// The file is shorter than its headers describe.
    BinaryTruncated = "binary-truncated", Binary;
    /// No executable code could be read.
    CodeNotRead = "code-not-read", Binary;
    /// Section headers that cannot be read.
    SectionsCorrupt = "sections-corrupt", Binary;
    /// A 32-bit program: the compat vDSO serves it.
    Compat32Bit = "compat-32bit", Binary;
    /// Another architecture's code vdsoctl does not decode.
    ForeignNotDecoded = "foreign-not-decoded", Binary;
    /// An x32-ABI binary: not judged.
    X32NotJudged = "x32-not-judged", Binary;
    /// Run under an emulator or instrumenter that maps no `[vdso]`.
    UnderEmulator = "under-emulator", Binary;
    /// The executable could not be read.
    ExeUnreadable = "exe-unreadable", Binary;

    // ---- what a window observed
    /// Nothing the vDSO serves was a syscall in the window.
    ObservedClean = "observed-clean", Observed;
    /// Clock syscalls the vDSO would serve were observed.
    RawClockSyscall = "raw-clock-syscall", Observed;
    /// Calls into the emulated `[vsyscall]` page were observed.
    VsyscallCall = "vsyscall-call", Observed;
    /// Nothing could be observed (no privileges, `--trace 0`).
    NotObserved = "not-observed", Observed;
    /// The engine let calls run uncounted.
    NotObservedInFull = "not-observed-in-full", Observed;
    /// Seccomp engine: a signal withdrew clock syscalls waiting for vdsoctl.
    CallsWithdrawnBySignal = "calls-withdrawn-by-signal", Observed;
    /// `-- CMD`: a process of the tree traced vdsoctl or its guardian.
    AuditorPtraced = "auditor-ptraced", Observed;
    /// Seccomp engine, traced: the tree asked to ptrace a task (EPERM).
    PtraceInTracedTree = "ptrace-in-traced-tree", Observed;
    /// The trace broke.
    TraceFailed = "trace-failed", Observed;
    /// A clock the kernel serves by syscall by design (an aux clock not enabled).
    AuxClockSyscall = "aux-clock-syscall", Observed;

    // ---- seccomp
    /// Every fallback syscall is allowed.
    SeccompAllows = "seccomp-allows", Seccomp;
    /// A fallback syscall is killed, trapped, errored or traced.
    SeccompDeniesFallback = "seccomp-denies-fallback", Seccomp;
    /// A fallback syscall is allowed only for some arguments, or left to a notifier.
    SeccompConditional = "seccomp-conditional", Seccomp;
    /// Seccomp strict mode.
    SeccompStrict = "seccomp-strict", Seccomp;
    /// The filters could not be read or judged.
    SeccompUnread = "seccomp-unread", Seccomp;
    /// Threads with other filters than the main thread's.
    SeccompOtherThreads = "seccomp-other-threads", Seccomp;
    /// Architectures vdsoctl has no table for.
    SeccompArchUnknown = "seccomp-arch-unknown", Seccomp;

    // ---- the audit itself
    /// The image walk could not read everything.
    ImageIncomplete = "image-incomplete", Audit;
    /// The smoke command exited 0.
    CommandOk = "command-ok", Audit;
    /// The smoke command failed, was killed or interrupted.
    CommandFailed = "command-failed", Audit;
    /// The smoke command ran past `--timeout`.
    CommandTimeout = "command-timeout", Audit;
    /// The process runs in another time namespace.
    TimeNamespace = "time-namespace", Audit;
    /// A bench or trace note with nothing to act on.
    Note = "note", Audit;
}

impl Kind {
    /// The kind named `id`, as `--fail-on`, `--allow` and ignore files spell it.
    pub fn from_id(id: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.id() == id)
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for k in Kind::ALL {
            let id = k.id();
            assert!(seen.insert(id), "{id} twice");
            assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{id}");
            assert_eq!(Kind::from_id(id), Some(*k));
        }
        assert_eq!(Kind::from_id("raw-clock"), None);
    }

    /// doc/FINDINGS.md, the page per kind CI authors read.
    const FINDINGS: &str = include_str!("../../doc/FINDINGS.md");

    /// A kind's `Severity:` line as doc/FINDINGS.md words it, from the
    /// policy table: each context's status, `as measured` for `ByData`.
    fn severity_line(kind: Kind) -> String {
        use crate::model::gate::{policy, Context, Severity};
        let cells: Vec<String> = Context::ALL
            .iter()
            .map(|c| match policy(kind, *c) {
                Severity::Is(s) => format!("{} {}", c.name(), s.label()),
                Severity::ByData => format!("{} as measured", c.name()),
            })
            .collect();
        format!("Severity: {}", cells.join(", "))
    }

    /// The page's `### id` sections as (subject heading above it, id,
    /// its `Severity:` lines), in the page's order.
    fn sections(doc: &str) -> Vec<(String, String, Vec<String>)> {
        let mut out: Vec<(String, String, Vec<String>)> = Vec::new();
        let mut subject = String::new();
        let mut in_fence = false;
        for line in doc.lines() {
            if line.starts_with("```") {
                in_fence = !in_fence;
            }
            if in_fence {
                continue;
            }
            if let Some(id) = line.strip_prefix("### ") {
                out.push((subject.clone(), id.trim().to_string(), Vec::new()));
            } else if let Some(s) = line.strip_prefix("## ") {
                subject = s.trim().to_string();
            } else if line.starts_with("Severity:") {
                if let Some(last) = out.last_mut() {
                    last.2.push(line.trim_end().to_string());
                }
            }
        }
        out
    }

    #[test]
    fn findings_md_has_one_section_per_kind_with_the_policy_s_severity() {
        let found = sections(FINDINGS);
        for k in Kind::ALL {
            let n = found.iter().filter(|(_, id, _)| id == k.id()).count();
            assert_eq!(n, 1, "doc/FINDINGS.md: `### {}` {n} times, not once", k.id());
        }
        for (subject, id, severity) in &found {
            let k = Kind::from_id(id).unwrap_or_else(|| panic!("doc/FINDINGS.md: `### {id}` is no kind"));
            assert_eq!(subject, &format!("{:?}", k.subject()), "doc/FINDINGS.md: `### {id}` under the wrong `##`");
            assert_eq!(severity, &vec![severity_line(k)], "doc/FINDINGS.md: `### {id}`'s Severity line");
        }
        let order: Vec<&str> = found.iter().map(|(_, id, _)| id.as_str()).collect();
        let catalogue: Vec<&str> = Kind::ALL.iter().map(|k| k.id()).collect();
        assert_eq!(order, catalogue, "doc/FINDINGS.md: sections in catalogue order");
    }
}
