//! The policy, once: which calls the vDSO should serve here, what a
//! process's vDSO mapping and AT_SYSINFO_EHDR say, what a bench verdict
//! loses, and the `--max-ns` threshold. Every command that judges these
//! asks here, so `maps`, `auxv`, `check`, `bench` and `trace` agree.

use super::{Finding, Status};
use crate::arch::{self, Abi, VdsoFn};
use crate::error::{Error, Result};
use crate::measure::trace::{Clock, RandomCall};
use serde::Serialize;

/// Whether the vDSO serves `func` (with `clock`) for a process of `abi` on a
/// kernel of version `kernel`, so that a syscall for it means the fast path
/// was lost. Clocks this kernel's vDSO does not serve yet (MONOTONIC_RAW
/// before 5.3, ...), CPU-time, alarm and fd clocks are expected syscalls.
/// (`trace` judges its rows the same way; `serve` labels its series with it.)
/// A getrandom call is served when the kernel's vDSO has getrandom (6.11 on
/// x86_64, ...) and the call is [`RandomCall::Served`]: the vDSO's own
/// calls, flags it hands to the kernel and a start-up key are not.
pub fn vdso_serves_call(abi: Abi, func: VdsoFn, clock: Clock, kernel: Option<(u32, u32)>) -> bool {
    let (machine, is_64) = abi.elf();
    if !arch::vdso_symbol_row(machine, is_64, func).is_some_and(|s| s.in_kernel(kernel)) {
        return false;
    }
    match clock {
        Clock::None => true,
        Clock::Id(id) => i32::try_from(id).is_ok_and(|id| arch::vdso_serves(id, abi.native().elf().0, kernel)),
        Clock::Random(call) => call == RandomCall::Served,
        Clock::Other | Clock::Any => false,
    }
}

/// Whether `count` syscalls of one row are expected: the vDSO does not
/// serve them here, or the row is a C library's start-up key made once
/// (glibc's malloc makes one 8-byte `GRND_NONBLOCK` getrandom a process;
/// more than one from a process is judged as any other call).
pub fn expected_calls(abi: Abi, func: VdsoFn, clock: Clock, count: u64, kernel: Option<(u32, u32)>) -> bool {
    match clock {
        Clock::Random(RandomCall::StartupKey) if count <= STARTUP_KEYS => true,
        Clock::Random(RandomCall::StartupKey) => {
            !vdso_serves_call(abi, func, Clock::Random(RandomCall::Served), kernel)
        }
        _ => !vdso_serves_call(abi, func, clock, kernel),
    }
}

/// Where a runtime gets its random bytes on a kernel whose vDSO offers
/// getrandom: the decision `check -- CMD`, `check -p` and the image audit
/// share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RandomSource {
    /// It calls the vDSO (glibc >= 2.41, Go >= 1.24 on a machine they do so on).
    Vdso { runtime: &'static str, version: String },
    /// A release that makes a syscall every call; `fix` is the first that
    /// does not (`glibc 2.41`).
    OldRuntime { runtime: &'static str, version: String, fix: String },
    /// No release of it reads getrandom from the vDSO (musl).
    NeverVdso { runtime: &'static str },
    /// The runtime or its version is not known.
    Unknown,
}

/// The routing table's runtime for an inspected C library kind.
pub fn runtime_of(kind: crate::inspect::exe::LibcKind) -> Option<arch::Runtime> {
    use crate::inspect::exe::LibcKind;
    match kind {
        LibcKind::Glibc => Some(arch::Runtime::Glibc),
        LibcKind::Musl => Some(arch::Runtime::Musl),
        LibcKind::Go => Some(arch::Runtime::Go),
        LibcKind::Bionic | LibcKind::Unknown => None,
    }
}

impl RandomSource {
    /// The verdict on getrandom syscalls the vDSO would have served, from
    /// a process with this source: a runtime that calls the vDSO made
    /// them raw (FAIL, as a bypassed clock); an old runtime or one that
    /// never does is fixed by an upgrade (WARN); unknown: WARN, never more
    /// than was seen.
    pub fn status(&self) -> Status {
        match self {
            RandomSource::Vdso { .. } => Status::Fail,
            RandomSource::OldRuntime { .. } | RandomSource::NeverVdso { .. } | RandomSource::Unknown => Status::Warn,
        }
    }

    /// Why the syscalls happened, in words.
    pub fn why(&self) -> String {
        match self {
            RandomSource::Vdso { runtime, version } => format!(
                "{runtime} {version} reads getrandom from the vDSO: these are raw getrandom syscalls (syscall(SYS_getrandom, …) or inline)"
            ),
            RandomSource::OldRuntime { runtime, version, fix } => {
                format!("{runtime} {version} makes getrandom a syscall every call; {fix} reads it from the vDSO")
            }
            RandomSource::NeverVdso { runtime } => format!("no {runtime} release reads getrandom from the vDSO"),
            RandomSource::Unknown => "an older C library or runtime (glibc < 2.41, Go < 1.24, musl) or a raw syscall(SYS_getrandom)".into(),
        }
    }
}

/// `(major, minor)` of a runtime's version text: `2.41`, `go1.24.4`.
pub fn runtime_version(text: &str) -> Option<(u32, u32)> {
    let t = text.trim().trim_start_matches("go");
    let mut parts = t.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Where `runtime` (at `version`) gets getrandom's bytes on `machine`.
pub fn random_source(runtime: Option<arch::Runtime>, version: Option<&str>, machine: u16) -> RandomSource {
    let Some(runtime) = runtime else { return RandomSource::Unknown };
    let Some(route) = arch::route(VdsoFn::Getrandom, runtime) else { return RandomSource::Unknown };
    let name = runtime.name();
    let Some(since) = route.since.filter(|_| route.machines.contains(&machine)) else {
        return RandomSource::NeverVdso { runtime: name };
    };
    let Some((text, have)) = version.and_then(|v| Some((v.trim_start_matches("go").to_string(), runtime_version(v)?)))
    else {
        return RandomSource::Unknown;
    };
    if have >= since {
        RandomSource::Vdso { runtime: name, version: text }
    } else {
        RandomSource::OldRuntime { runtime: name, version: text, fix: format!("{name} {}.{}", since.0, since.1) }
    }
}

/// Start-up keys a process makes (glibc's malloc: one).
pub const STARTUP_KEYS: u64 = 1;

/// Whether the running kernel's vDSO should serve `func` with `clock` for
/// vdsoctl itself, given whether its own vDSO exports the function.
pub fn should_be_fast(func: VdsoFn, clock: Option<i32>, vdso_exports: bool, kernel: Option<(u32, u32)>) -> bool {
    let Some(abi) = arch::HOST_ABI else { return false };
    let clock = clock.map_or(Clock::None, |c| Clock::Id(i64::from(c)));
    vdso_exports && vdso_serves_call(abi, func, clock, kernel)
}

/// What a process's mappings say about its vDSO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VdsoMapping {
    /// `[vdso]` (start, size) and `[vvar]` (start) are both mapped.
    Mapped { start: u64, size: u64, vvar: u64 },
    /// `[vdso]` without its data page: a vDSO clock read has nothing to read.
    NoVvar,
    /// No `[vdso]`: every clock read is a syscall.
    NoVdso { pid: i32 },
}

impl VdsoMapping {
    /// Judge from the `[vdso]` (start, size) and `[vvar]` start, if mapped.
    pub fn judge(pid: i32, vdso: Option<(u64, u64)>, vvar: Option<u64>) -> VdsoMapping {
        match (vdso, vvar) {
            (Some((start, size)), Some(vvar)) => VdsoMapping::Mapped { start, size, vvar },
            (Some(_), None) => VdsoMapping::NoVvar,
            (None, _) => VdsoMapping::NoVdso { pid },
        }
    }

    /// The finding, with the one severity every command gives it.
    pub fn finding(self) -> Finding {
        match self {
            VdsoMapping::Mapped { start, size, vvar } => Finding::new(
                Status::Info,
                format!("[vdso] at {start:#x} ({}), [vvar] at {vvar:#x}", crate::words::human_size(size)),
                None,
            ),
            VdsoMapping::NoVvar => Finding::new(
                Status::Fail,
                "[vdso] is mapped but [vvar] is not: the vDSO has no time data page to read",
                Some("a sandbox unmapped [vvar]; allow it in the runtime's memory policy".into()),
            ),
            VdsoMapping::NoVdso { pid } => Finding::new(
                Status::Fail,
                format!("pid {pid} has no [vdso] mapping: every clock read there is a syscall"),
                Some("check `vdso=0` on the kernel command line, or the sandbox/loader that unmaps the vDSO".into()),
            ),
        }
    }
}

/// AT_SYSINFO_EHDR against the `[vdso]` mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SysinfoEhdr {
    /// It is the start of `[vdso]`.
    AtVdso(u64),
    /// It points elsewhere than `[vdso]`.
    Elsewhere { ehdr: u64, vdso: u64 },
    /// `[vdso]` is mapped, the vector has no AT_SYSINFO_EHDR.
    Missing,
    /// Set, but no `[vdso]` is mapped.
    Dangling(u64),
    /// Neither.
    NoVdso,
}

impl SysinfoEhdr {
    /// Judge from the auxiliary vector's value and the `[vdso]` start.
    pub fn judge(ehdr: Option<u64>, vdso_start: Option<u64>) -> SysinfoEhdr {
        match (ehdr, vdso_start) {
            (Some(a), Some(b)) if a == b => SysinfoEhdr::AtVdso(a),
            (Some(ehdr), Some(vdso)) => SysinfoEhdr::Elsewhere { ehdr, vdso },
            (None, Some(_)) => SysinfoEhdr::Missing,
            (Some(a), None) => SysinfoEhdr::Dangling(a),
            (None, None) => SysinfoEhdr::NoVdso,
        }
    }

    /// Whether the two agree; `None` only when neither exists.
    pub fn matches(self) -> Option<bool> {
        match self {
            SysinfoEhdr::AtVdso(_) => Some(true),
            SysinfoEhdr::NoVdso => None,
            _ => Some(false),
        }
    }

    /// The finding, with the one severity every command gives it.
    pub fn finding(self) -> Finding {
        match self {
            SysinfoEhdr::AtVdso(a) => Finding::new(Status::Info, format!("AT_SYSINFO_EHDR {a:#x} is the start of [vdso]"), None),
            SysinfoEhdr::Elsewhere { ehdr, vdso } => Finding::new(
                Status::Fail,
                format!("AT_SYSINFO_EHDR is {ehdr:#x} but [vdso] starts at {vdso:#x}: the C library will look for the vDSO in the wrong place"),
                Some("something remapped the vDSO after exec (CRIU restore, a sandbox); clock reads may fall back to syscalls".into()),
            ),
            SysinfoEhdr::Missing => Finding::new(
                Status::Fail,
                "no AT_SYSINFO_EHDR in the auxiliary vector: the C library cannot find the vDSO, so every clock read is a syscall",
                Some("check the loader or sandbox that rewrites the auxiliary vector".into()),
            ),
            SysinfoEhdr::Dangling(_) => Finding::new(
                Status::Fail,
                "AT_SYSINFO_EHDR is set but no [vdso] is mapped: the vDSO was unmapped after exec",
                Some("a sandbox or runtime unmapped it; every clock read is a syscall".into()),
            ),
            SysinfoEhdr::NoVdso => Finding::new(
                Status::Fail,
                "no vDSO at all: no AT_SYSINFO_EHDR and no [vdso] mapping; every clock read is a syscall",
                Some("check `vdso=0` on the kernel command line".into()),
            ),
        }
    }
}

/// For a bench verdict of `func` with `clock` that loses the fast path
/// this kernel's vDSO should give, the finding's sentence (after `label`)
/// and remediation; `None` when nothing is lost. A missing symbol is judged
/// against the architecture's table (it should export `func`), the rest
/// against the clock. `clocksource` is the current one, named in the hint.
/// `bench` and `check` both judge and say it so.
pub fn lost_fast_path(
    verdict: Verdict,
    label: &str,
    func: VdsoFn,
    clock: Option<i32>,
    kernel: Option<(u32, u32)>,
    clocksource: Option<&str>,
) -> Option<(String, String)> {
    match verdict {
        Verdict::LibcBypass => Some((
            format!("{label}: the C library's call makes syscalls where the direct vDSO call makes none — the vDSO is bypassed"),
            "check LD_PRELOAD and interposed libraries, then the C library's version (a static binary keeps the libc it was built with)".into(),
        )),
        Verdict::KernelFallback if should_be_fast(func, clock, true, kernel) => Some((
            format!("{label}: the vDSO itself enters the kernel, though this kernel's vDSO serves it"),
            format!(
                "the clocksource ({}) has no vDSO mode; `cat /sys/devices/system/clocksource/clocksource0/available_clocksource` and switch to tsc or arch_sys_counter if offered",
                clocksource.unwrap_or("unknown")
            ),
        )),
        Verdict::Missing if should_be_fast(func, None, true, kernel) => Some((
            format!("{label}: the vDSO has no symbol for {} — every call is a syscall", func.name()),
            "check `vdso=` on the kernel command line and `vdsoctl dump`".into(),
        )),
        _ => None,
    }
}

/// `--max-ns`: a positive, finite number of nanoseconds.
pub fn max_ns(value: Option<f64>) -> Result<Option<f64>> {
    match value {
        Some(n) if !(n.is_finite() && n > 0.0) => Err(Error::Usage(format!(
            "--max-ns {n} is not a positive number of nanoseconds — give the budget per call, e.g. --max-ns 100"
        ))),
        v => Ok(v),
    }
}

// ------------------------------------------------------- bench verdicts

/// `--max-ns`, judged once for `bench` and `check`: `(max, ns)` when a
/// call that should be fast here costs more than `max` through libc.
pub fn over_max_ns(max_ns: Option<f64>, should_be_fast: bool, libc_ns: Option<f64>) -> Option<(f64, f64)> {
    max_ns.zip(libc_ns).filter(|(max, ns)| should_be_fast && ns > max)
}

/// What a function/clock gets, from the syscalls its libc and vDSO paths make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Served by the vDSO in user space, through libc too: no syscalls.
    Fast,
    /// The vDSO symbol itself enters the kernel for this clock.
    KernelFallback,
    /// The vDSO serves it, but the C library's path makes syscalls.
    LibcBypass,
    /// The vDSO has no symbol for the function, though the architecture's
    /// vDSO offers it.
    Missing,
    /// The architecture's vDSO does not offer the function, by design
    /// (arm64: `time`, `getcpu`): the C library's path is what there is.
    NotOffered,
    /// The kernel rejects the clock id (EINVAL).
    Unsupported,
}

impl Verdict {
    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Fast => "fast",
            Verdict::KernelFallback => "kernel-fallback",
            Verdict::LibcBypass => "libc-bypass",
            Verdict::Missing => "missing",
            Verdict::NotOffered => "not-offered",
            Verdict::Unsupported => "unsupported",
        }
    }
}

/// Whether a path enters the kernel: `Some(true)` when it does, `None` unknown.
pub type Enters = Option<bool>;

/// Whether vdsoctl's own vDSO (its ABI's) is meant to offer `func`.
pub fn own_vdso_offers(func: VdsoFn) -> bool {
    arch::HOST_ABI.is_some_and(|abi| abi.vdso_offers(func))
}

/// The verdict from what each path did. `errno` is the first error any path
/// gave; `offered` whether the architecture's vDSO offers the function,
/// `vdso_present` whether this vDSO exports it.
pub fn verdict(errno: Option<i32>, offered: bool, vdso_present: bool, libc: Enters, vdso: Enters) -> Option<Verdict> {
    if errno == Some(libc::EINVAL) {
        return Some(Verdict::Unsupported);
    }
    if !offered && !vdso_present {
        return Some(Verdict::NotOffered);
    }
    if !vdso_present {
        return Some(Verdict::Missing);
    }
    match (vdso?, libc) {
        (true, _) => Some(Verdict::KernelFallback),
        (false, Some(true)) => Some(Verdict::LibcBypass),
        (false, Some(false)) => Some(Verdict::Fast),
        (false, None) => None,
    }
}

/// Enters the kernel, by count: at least half a syscall per call.
pub fn enters_by_count(syscalls_per_call: Option<f64>) -> Enters {
    syscalls_per_call.map(|s| s >= 0.5)
}

/// Enters the kernel, by timing alone: costs at least half the raw syscall.
pub fn enters_by_timing(ns: Option<f64>, syscall_ns: Option<f64>) -> Enters {
    Some(ns? >= 0.5 * syscall_ns?)
}

#[cfg(test)]
mod random_tests {
    use super::*;

    /// Each branch of the runtime decision.
    #[test]
    fn random_bytes_come_from_where_the_runtime_says() {
        use arch::{machine, Runtime};
        let x86 = machine::X86_64;
        assert_eq!(
            random_source(Some(Runtime::Glibc), Some("2.41"), x86),
            RandomSource::Vdso { runtime: "glibc", version: "2.41".into() }
        );
        assert_eq!(
            random_source(Some(Runtime::Glibc), Some("2.36"), x86),
            RandomSource::OldRuntime { runtime: "glibc", version: "2.36".into(), fix: "glibc 2.41".into() }
        );
        assert_eq!(
            random_source(Some(Runtime::Go), Some("go1.19.8"), x86),
            RandomSource::OldRuntime { runtime: "Go", version: "1.19.8".into(), fix: "Go 1.24".into() }
        );
        assert_eq!(
            random_source(Some(Runtime::Go), Some("go1.24.4"), machine::AARCH64),
            RandomSource::Vdso { runtime: "Go", version: "1.24.4".into() }
        );
        assert_eq!(random_source(Some(Runtime::Musl), Some("1.2.5"), x86), RandomSource::NeverVdso { runtime: "musl" });
        // glibc 2.41 on i386 makes the syscall: no 32-bit vDSO has it.
        assert_eq!(
            random_source(Some(Runtime::Glibc), Some("2.41"), machine::I386),
            RandomSource::NeverVdso { runtime: "glibc" }
        );
        assert_eq!(random_source(Some(Runtime::Glibc), None, x86), RandomSource::Unknown);
        assert_eq!(random_source(None, Some("2.41"), x86), RandomSource::Unknown);
        assert_eq!(runtime_version("go1.24.4"), Some((1, 24)));
        assert_eq!(runtime_version("2.36"), Some((2, 36)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(verdict(Some(libc::EINVAL), true, true, None, None), Some(Verdict::Unsupported));
        assert_eq!(verdict(None, true, false, Some(true), None), Some(Verdict::Missing));
        // arm64's time and getcpu: not a lost symbol, whatever libc does.
        assert_eq!(verdict(None, false, false, Some(true), None), Some(Verdict::NotOffered));
        assert_eq!(verdict(None, false, false, Some(false), None), Some(Verdict::NotOffered));
        assert_eq!(verdict(None, true, true, Some(true), Some(true)), Some(Verdict::KernelFallback));
        assert_eq!(verdict(None, true, true, Some(true), Some(false)), Some(Verdict::LibcBypass));
        assert_eq!(verdict(None, true, true, Some(false), Some(false)), Some(Verdict::Fast));
        assert_eq!(verdict(None, true, true, None, None), None);
        assert_eq!(enters_by_timing(Some(300.0), Some(400.0)), Some(true));
        assert_eq!(enters_by_timing(Some(20.0), Some(400.0)), Some(false));
        assert_eq!(enters_by_timing(None, Some(400.0)), None);
    }

    #[test]
    fn vdso_served_calls() {
        let k = Some((6, 18));
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(4), k));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(4), Some((5, 2))));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(3), k));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Other, k));
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::Gettimeofday, Clock::None, k));
        assert!(vdso_serves_call(Abi::I386, VdsoFn::ClockGettime64, Clock::Id(11), k));
        // getrandom: served calls, from 6.11 on x86_64, never from the i386 vDSO.
        let served = Clock::Random(RandomCall::Served);
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::Getrandom, served, Some((6, 11))));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::Getrandom, served, Some((6, 10))));
        assert!(!vdso_serves_call(Abi::I386, VdsoFn::Getrandom, served, Some((6, 18))));
        for kind in [RandomCall::ByVdso, RandomCall::UnservedFlags, RandomCall::StartupKey] {
            assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::Getrandom, Clock::Random(kind), k), "{kind:?}");
        }
        // One start-up key a process is expected; two are judged.
        let key = Clock::Random(RandomCall::StartupKey);
        assert!(expected_calls(Abi::X86_64, VdsoFn::Getrandom, key, 1, k));
        assert!(!expected_calls(Abi::X86_64, VdsoFn::Getrandom, key, 2, k));
        assert!(expected_calls(Abi::X86_64, VdsoFn::Getrandom, key, 2, Some((6, 1))));
    }

    #[test]
    fn one_mapping_verdict_one_severity() {
        assert_eq!(VdsoMapping::judge(7, Some((0x1000, 8192)), None).finding().severity, Status::Fail);
        assert_eq!(VdsoMapping::judge(7, None, Some(0x1000)), VdsoMapping::NoVdso { pid: 7 });
        let ok = VdsoMapping::judge(7, Some((0x1000, 8192)), Some(0x3000));
        assert_eq!(ok.finding().message, "[vdso] at 0x1000 (8 KiB), [vvar] at 0x3000");
        assert_eq!(SysinfoEhdr::judge(Some(1), Some(1)).matches(), Some(true));
        assert_eq!(SysinfoEhdr::judge(None, None).matches(), None);
        assert_eq!(SysinfoEhdr::judge(Some(1), None), SysinfoEhdr::Dangling(1));
        assert_eq!(SysinfoEhdr::judge(Some(1), Some(2)).finding().severity, Status::Fail);
    }

    #[test]
    fn fast_expectations_follow_the_clock_table() {
        let f = VdsoFn::ClockGettime;
        assert!(should_be_fast(f, Some(1), true, Some((6, 18))));
        assert!(!should_be_fast(f, Some(1), false, Some((6, 18))));
        assert!(!should_be_fast(f, Some(3), true, Some((6, 18))));
        if arch::HOST_MACHINE == arch::machine::X86_64 {
            assert!(!should_be_fast(f, Some(4), true, Some((5, 2))));
            assert!(should_be_fast(f, Some(4), true, Some((5, 3))));
        }
    }

    #[test]
    fn a_lost_fast_path_is_judged_once() {
        let k = Some((6, 18));
        let f = VdsoFn::ClockGettime;
        // A CPU-time clock always enters the kernel: nothing is lost.
        assert_eq!(lost_fast_path(Verdict::KernelFallback, "x", f, Some(3), k, Some("tsc")), None);
        let (msg, hint) =
            lost_fast_path(Verdict::KernelFallback, "CLOCK_MONOTONIC", f, Some(1), k, Some("xen")).unwrap();
        assert!(msg.starts_with("CLOCK_MONOTONIC: the vDSO itself enters the kernel"), "{msg}");
        assert!(hint.starts_with("the clocksource (xen) has no vDSO mode"), "{hint}");
        // A missing symbol the architecture exports is lost whatever the clock.
        assert!(lost_fast_path(Verdict::Missing, "x", f, Some(3), k, None).is_some());
        assert!(lost_fast_path(Verdict::LibcBypass, "x", f, Some(3), k, None).is_some());
        assert_eq!(lost_fast_path(Verdict::Fast, "x", f, Some(1), k, None), None);
    }

    #[test]
    fn max_ns_is_positive() {
        assert_eq!(max_ns(Some(50.0)).unwrap(), Some(50.0));
        assert_eq!(max_ns(None).unwrap(), None);
        assert!(matches!(max_ns(Some(0.0)), Err(Error::Usage(_))));
        assert!(matches!(max_ns(Some(f64::NAN)), Err(Error::Usage(_))));
    }
}
