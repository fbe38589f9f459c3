//! The policy, once: which calls the vDSO should serve here, what a
//! process's vDSO mapping and AT_SYSINFO_EHDR say, what a bench verdict
//! loses, and the `--max-ns` threshold. Every command that judges these
//! asks here, so `maps`, `auxv`, `check`, `bench` and `trace` agree.

use super::kind::Kind;
use super::{Finding, Status};
use crate::arch::{self, Abi, Runtime, VdsoFn};
use crate::measure::trace::{Clock, RandomCall};
use serde::Serialize;

/// Whether the vDSO serves `func` (with `clock`) for a process of `abi` on a
/// kernel of version `kernel`, so that a syscall for it means the fast path
/// was lost. Clocks this kernel's vDSO does not serve yet (MONOTONIC_RAW
/// before 5.3, ...), CPU-time, alarm and fd clocks are expected syscalls.
/// (`trace` judges its rows the same way; `serve` labels its series with it.)
/// A getrandom call is served when the kernel's vDSO has getrandom (6.11 on
/// x86_64, ...) and the call is [`RandomCall::Served`]: the vDSO's own
/// calls, flags it hands to the kernel and a start-up key are not. An
/// auxiliary clock is served only while `aux` (the host's, read by the
/// caller) says it is enabled: a disabled or absent one is expected.
pub fn vdso_serves_call(
    abi: Abi,
    func: VdsoFn,
    clock: Clock,
    kernel: Option<(u32, u32)>,
    aux: arch::AuxClocks,
) -> bool {
    let (machine, is_64) = abi.elf();
    if !arch::vdso_symbol_row(machine, is_64, func).is_some_and(|s| s.in_kernel(kernel)) {
        return false;
    }
    match clock {
        Clock::None => true,
        Clock::Id(id) => {
            let served = i32::try_from(id).is_ok_and(|id| arch::vdso_serves(id, abi.native().elf().0, kernel));
            served && aux.state(id).is_none_or(|s| s == arch::AuxState::Enabled)
        }
        Clock::Random(call) => call == RandomCall::Served,
        Clock::Other | Clock::Any => false,
    }
}

/// Whether the running kernel's vDSO should serve `func` with `clock` for
/// vdsoctl itself, given whether its own vDSO exports the function.
pub fn should_be_fast(func: VdsoFn, clock: Option<i32>, vdso_exports: bool, kernel: Option<(u32, u32)>) -> bool {
    let Some(abi) = arch::HOST_ABI else { return false };
    let clock = clock.map_or(Clock::None, |c| Clock::Id(i64::from(c)));
    // (Bench's clocks, of [`arch::CLOCKS`]: no auxiliary one.)
    vdso_exports && vdso_serves_call(abi, func, clock, kernel, arch::AuxClocks::Unknown)
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
                Kind::VdsoMapped,
                Status::Info,
                format!("[vdso] at {start:#x} ({}), [vvar] at {vvar:#x}", crate::words::human_size(size)),
                None,
            ),
            VdsoMapping::NoVvar => Finding::new(
                Kind::VvarNotMapped,
                Status::Fail,
                "[vdso] is mapped but [vvar] is not: the vDSO has no time data page to read",
                Some("a sandbox unmapped [vvar]; allow it in the runtime's memory policy".into()),
            ),
            VdsoMapping::NoVdso { pid } => Finding::new(
                Kind::VdsoNotMapped,
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
            SysinfoEhdr::AtVdso(a) => Finding::new(Kind::SysinfoEhdrOk, Status::Info, format!("AT_SYSINFO_EHDR {a:#x} is the start of [vdso]"), None),
            SysinfoEhdr::Elsewhere { ehdr, vdso } => Finding::new(
                Kind::SysinfoEhdrWrong,
                Status::Fail,
                format!("AT_SYSINFO_EHDR is {ehdr:#x} but [vdso] starts at {vdso:#x}: the C library will look for the vDSO in the wrong place"),
                Some("something remapped the vDSO after exec (CRIU restore, a sandbox); clock reads may fall back to syscalls".into()),
            ),
            SysinfoEhdr::Missing => Finding::new(
                Kind::SysinfoEhdrWrong,
                Status::Fail,
                "no AT_SYSINFO_EHDR in the auxiliary vector: the C library cannot find the vDSO, so every clock read is a syscall",
                Some("check the loader or sandbox that rewrites the auxiliary vector".into()),
            ),
            SysinfoEhdr::Dangling(_) => Finding::new(
                Kind::SysinfoEhdrWrong,
                Status::Fail,
                "AT_SYSINFO_EHDR is set but no [vdso] is mapped: the vDSO was unmapped after exec",
                Some("a sandbox or runtime unmapped it; every clock read is a syscall".into()),
            ),
            SysinfoEhdr::NoVdso => Finding::new(
                Kind::SysinfoEhdrWrong,
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
    /// The vDSO serves it and the C library makes the syscall on every
    /// call, as its release does by design (getrandom before glibc 2.41,
    /// every musl): a library to upgrade, not a bypass to hunt.
    LibcSyscall,
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
            Verdict::LibcSyscall => "libc-syscall",
            Verdict::Missing => "missing",
            Verdict::NotOffered => "not-offered",
            Verdict::Unsupported => "unsupported",
        }
    }
}

/// Whether a path enters the kernel: `Some(true)` when it does, `None` unknown.
pub type Enters = Option<bool>;

/// Whether vdsoctl's own vDSO (its ABI's) is meant to offer `func` on a
/// kernel of version `kernel` (unknown: as the architecture's table says):
/// getrandom is not offered by an x86_64 kernel before 6.11.
pub fn own_vdso_offers(func: VdsoFn, kernel: Option<(u32, u32)>) -> bool {
    arch::HOST_ABI.is_some_and(|abi| {
        let (machine, is_64) = abi.elf();
        abi.vdso_offers(func) && arch::vdso_symbol_row(machine, is_64, func).is_some_and(|s| s.in_kernel(kernel))
    })
}

/// The kernel release from which vdsoctl's own architecture's vDSO offers
/// `func`, when a later one than `kernel` (getrandom: 6.11 on x86_64).
pub fn own_vdso_offers_from(func: VdsoFn, kernel: Option<(u32, u32)>) -> Option<(u32, u32)> {
    let (machine, is_64) = arch::HOST_ABI?.elf();
    let row = arch::vdso_symbol_row(machine, is_64, func)?;
    (!row.in_kernel(kernel)).then_some(row.since?)
}

// ------------------------------------------------------ the C library's route

/// How a C library reaches a vDSO function, by its name and release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibcRoute {
    /// Through the vDSO (every release for the clocks; getrandom from the
    /// release `arch::ROUTES` names).
    Vdso,
    /// A release before the first that reads it from the vDSO.
    Older { runtime: Runtime, version: (u32, u32), since: (u32, u32) },
    /// No release of `runtime` reads it from the vDSO (on this machine).
    Never { runtime: Runtime },
    /// Not known: an unknown C library, or no version to compare.
    Unknown,
}

impl LibcRoute {
    /// Of the C library named `name` (`glibc`, `musl`), at `version`
    /// (`2.36`), for `func` on ELF `machine` (64-bit), from `arch::route`.
    pub fn of(func: VdsoFn, name: &str, version: Option<&str>, machine: u16) -> LibcRoute {
        let runtime = match name {
            "glibc" => Runtime::Glibc,
            "musl" => Runtime::Musl,
            _ => return LibcRoute::Unknown,
        };
        let Some(route) = arch::route(func, runtime) else { return LibcRoute::Vdso };
        let Some(since) = route.since.filter(|_| route.machines.contains(&machine)) else {
            return LibcRoute::Never { runtime };
        };
        match version.map(str::trim).and_then(crate::inspect::kernel::parse_version) {
            Some(v) if v >= since => LibcRoute::Vdso,
            Some(version) => LibcRoute::Older { runtime, version, since },
            None => LibcRoute::Unknown,
        }
    }

    /// Whether the library's calls are expected to stay in user space.
    pub fn reads_vdso(self) -> bool {
        self == LibcRoute::Vdso
    }
}

/// A C library's syscall where the vDSO would serve (`LibcBypass`) is a
/// `LibcSyscall` when its release never reads the function from the vDSO.
pub fn explain_libc(verdict: Option<Verdict>, route: LibcRoute) -> Option<Verdict> {
    match (verdict, route) {
        (Some(Verdict::LibcBypass), LibcRoute::Older { .. } | LibcRoute::Never { .. }) => Some(Verdict::LibcSyscall),
        (v, _) => v,
    }
}

/// `libc 548 ns, vDSO 67.4 ns` (what is measured of the two).
pub fn cost_pair(libc_ns: Option<f64>, vdso_ns: Option<f64>) -> String {
    let t = |ns: Option<f64>| ns.map_or_else(|| "-".into(), crate::words::ns_text);
    format!("libc {}, vDSO {}", t(libc_ns), t(vdso_ns))
}

/// The sentence and hint for a C library that makes `func`'s syscall on
/// every call though this kernel's vDSO serves it (`bench` and `check`).
pub fn libc_syscall_words(func: VdsoFn, route: LibcRoute, costs: &str) -> Option<(String, String)> {
    let f = func.name();
    match route {
        LibcRoute::Older { runtime, version, since } => Some((
            format!(
                "{} {}.{} makes the {f} syscall on every call, though this kernel's vDSO serves it ({costs} here)",
                runtime.name(),
                version.0,
                version.1
            ),
            format!("{} {}.{} reads it from the vDSO; upgrade the C library (a static binary keeps the one it was built with)", runtime.name(), since.0, since.1),
        )),
        LibcRoute::Never { runtime } => Some((
            format!(
                "no {} release reads {f} from the vDSO{}: every call is a syscall ({costs} here)",
                runtime.name(),
                if arch::route(func, runtime).is_some_and(|r| r.since.is_some()) { " on this architecture" } else { "" }
            ),
            routes_that_read(func),
        )),
        LibcRoute::Vdso | LibcRoute::Unknown => None,
    }
}

/// `glibc 2.41 and Go 1.24 read it from the vDSO`, from `arch::ROUTES`.
fn routes_that_read(func: VdsoFn) -> String {
    let who: Vec<String> = arch::ROUTES
        .iter()
        .filter(|r| r.function == func)
        .filter_map(|r| r.since.map(|s| format!("{} {}.{}", r.runtime.name(), s.0, s.1)))
        .collect();
    if who.is_empty() {
        "no runtime vdsoctl knows reads it from the vDSO".into()
    } else {
        format!("{} read it from the vDSO", who.join(" and "))
    }
}

/// The host's getrandom, judged (`check`'s `getrandom` row): whether this
/// kernel's vDSO offers it (`offered`; `from`: the release that brings it
/// on this architecture), whether the C library reads it from there
/// (`route`), and, from the bench, its `verdict` and `costs`. Returns
/// (status, detail, hint).
pub fn getrandom_check(
    offered: bool,
    from: Option<(u32, u32)>,
    symbol: Option<&str>,
    route: LibcRoute,
    verdict: Option<Verdict>,
    costs: &str,
) -> (Kind, Status, String, Option<String>) {
    let arch = arch::HOST_ABI.map_or("this", Abi::name);
    let since = |v: Option<(u32, u32)>| v.map_or_else(String::new, |(a, b)| format!(" from {a}.{b}"));
    if !offered {
        return (
            Kind::RandomNotOffered,
            Status::Info,
            format!(
                "this kernel's vDSO has no getrandom (the {arch} vDSO has it{}): every getrandom is a syscall, whatever the C library — nothing to gain here",
                since(from)
            ),
            None,
        );
    }
    let symbol = symbol.unwrap_or("getrandom");
    let row = arch::HOST_ABI.and_then(|abi| {
        let (m, is_64) = abi.elf();
        arch::vdso_symbol_row(m, is_64, VdsoFn::Getrandom)
    });
    let offers = match row.and_then(|r| r.since) {
        Some((a, b)) => format!("the vDSO offers {symbol} ({arch} since {a}.{b})"),
        None => format!("the vDSO offers {symbol}"),
    };
    if verdict == Some(Verdict::LibcBypass) {
        return (
            Kind::RandomLibcBypass,
            Status::Fail,
            format!("{offers}, but the C library's call makes syscalls where the direct vDSO call makes none ({costs} here)"),
            Some("check LD_PRELOAD and interposed libraries".into()),
        );
    }
    match (libc_syscall_words(VdsoFn::Getrandom, route, costs), route) {
        (Some((message, hint)), _) => {
            (Kind::RandomSyscallHostLibc, Status::Warn, format!("{offers}; {message}"), Some(hint))
        }
        (None, LibcRoute::Vdso) => (
            Kind::RandomVdso,
            Status::Ok,
            format!("{offers} and the C library reads it from there ({costs} here)"),
            None,
        ),
        (None, _) => (
            Kind::RandomRouteUnknown,
            Status::Info,
            format!("{offers}; whether the C library reads it from there is not known ({costs} here)"),
            Some(routes_that_read(VdsoFn::Getrandom)),
        ),
    }
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

/// Syscalls per call (perf-counted over the bench's batches) from which a
/// path is said to enter the kernel: half, so a path that enters on every
/// call (1.0) is told from one that never does (0.0) with room for the
/// odd syscall of the bench's own (a page fault's, a timer's) either way.
pub const ENTERS_AT_SYSCALLS_PER_CALL: f64 = 0.5;

/// Without counts, the share of the raw syscall's time per call from which
/// a path is said to enter the kernel: a vDSO read costs a small fraction
/// of a syscall (31 ns against 305 ns in `bench` on the dev VM), a path
/// that makes the syscall costs at least the syscall.
pub const ENTERS_AT_SYSCALL_TIME_SHARE: f64 = 0.5;

/// Enters the kernel, by count: at least [`ENTERS_AT_SYSCALLS_PER_CALL`].
pub fn enters_by_count(syscalls_per_call: Option<f64>) -> Enters {
    syscalls_per_call.map(|s| s >= ENTERS_AT_SYSCALLS_PER_CALL)
}

/// Enters the kernel, by timing alone: costs at least
/// [`ENTERS_AT_SYSCALL_TIME_SHARE`] of the raw syscall.
pub fn enters_by_timing(ns: Option<f64>, syscall_ns: Option<f64>) -> Enters {
    Some(ns? >= ENTERS_AT_SYSCALL_TIME_SHARE * syscall_ns?)
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
        let none = arch::AuxClocks::Unknown;
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(4), k, none));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(4), Some((5, 2)), none));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(3), k, none));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Other, k, none));
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::Gettimeofday, Clock::None, k, none));
        assert!(vdso_serves_call(Abi::I386, VdsoFn::ClockGettime64, Clock::Id(11), k, none));
        // getrandom: served calls, from 6.11 on x86_64, never from the i386 vDSO.
        let served = Clock::Random(RandomCall::Served);
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::Getrandom, served, Some((6, 11)), none));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::Getrandom, served, Some((6, 10)), none));
        assert!(!vdso_serves_call(Abi::I386, VdsoFn::Getrandom, served, Some((6, 18)), none));
        for kind in [RandomCall::ByVdso, RandomCall::UnservedFlags, RandomCall::StartupKey] {
            assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::Getrandom, Clock::Random(kind), k, none), "{kind:?}");
        }
        // An auxiliary clock: served by the vDSO (6.17) only while enabled.
        let aux0 = Clock::Id(arch::CLOCK_AUX);
        let enabled = arch::AuxClocks::Enabled(0b1);
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, aux0, k, enabled));
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(17), k, enabled), "disabled");
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, aux0, k, arch::AuxClocks::Absent), "absent");
        assert!(!vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, aux0, Some((6, 16)), enabled), "before 6.17");
        // Unknown (not read): the kernel's version decides, as before.
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, aux0, k, none));
        // Other clocks do not depend on it.
        assert!(vdso_serves_call(Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(1), k, arch::AuxClocks::Absent));
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
    fn the_c_library_route_of_getrandom() {
        let (g, x86) = (VdsoFn::Getrandom, arch::machine::X86_64);
        assert_eq!(
            LibcRoute::of(g, "glibc", Some("2.36"), x86),
            LibcRoute::Older { runtime: Runtime::Glibc, version: (2, 36), since: (2, 41) }
        );
        assert_eq!(LibcRoute::of(g, "glibc", Some("2.41"), x86), LibcRoute::Vdso);
        assert_eq!(
            LibcRoute::of(g, "glibc", Some("2.41"), arch::machine::RISCV),
            LibcRoute::Never { runtime: Runtime::Glibc }
        );
        assert_eq!(LibcRoute::of(g, "musl", None, x86), LibcRoute::Never { runtime: Runtime::Musl });
        assert_eq!(LibcRoute::of(g, "glibc", None, x86), LibcRoute::Unknown);
        // The clocks: every release reads them from the vDSO.
        assert_eq!(LibcRoute::of(VdsoFn::ClockGettime, "musl", None, x86), LibcRoute::Vdso);
        let old = LibcRoute::of(g, "glibc", Some("2.36"), x86);
        assert_eq!(explain_libc(Some(Verdict::LibcBypass), old), Some(Verdict::LibcSyscall));
        assert_eq!(explain_libc(Some(Verdict::LibcBypass), LibcRoute::Vdso), Some(Verdict::LibcBypass));
        assert_eq!(lost_fast_path(Verdict::LibcSyscall, "x", g, None, Some((6, 18)), None), None);
    }

    #[test]
    fn the_getrandom_check_decides_from_kernel_and_library() {
        let costs = cost_pair(Some(650.0), Some(40.0));
        assert_eq!(costs, "libc 650 ns, vDSO 40.0 ns");
        let old = LibcRoute::Older { runtime: Runtime::Glibc, version: (2, 36), since: (2, 41) };
        let sym = Some("__vdso_getrandom");
        let (_, st, detail, hint) = getrandom_check(true, None, sym, old, Some(Verdict::LibcSyscall), &costs);
        assert_eq!(st, Status::Warn);
        assert!(detail.contains("glibc 2.36 makes the getrandom syscall on every call"), "{detail}");
        assert!(detail.contains("(libc 650 ns, vDSO 40.0 ns here)"), "{detail}");
        assert!(hint.unwrap().starts_with("glibc 2.41 reads it from the vDSO"));
        let musl = LibcRoute::Never { runtime: Runtime::Musl };
        let (_, st, detail, _) = getrandom_check(true, None, sym, musl, Some(Verdict::LibcSyscall), &costs);
        assert_eq!(st, Status::Warn);
        assert!(detail.contains("no musl release reads getrandom from the vDSO"), "{detail}");
        let (_, st, _, _) = getrandom_check(true, None, sym, LibcRoute::Vdso, Some(Verdict::Fast), &costs);
        assert_eq!(st, Status::Ok);
        let (_, st, _, _) = getrandom_check(true, None, sym, LibcRoute::Vdso, Some(Verdict::LibcBypass), &costs);
        assert_eq!(st, Status::Fail);
        let (_, st, detail, _) = getrandom_check(false, Some((6, 11)), None, old, Some(Verdict::NotOffered), &costs);
        assert_eq!(st, Status::Info);
        assert!(detail.contains("has it from 6.11") && detail.contains("nothing to gain"), "{detail}");
        if arch::HOST_ABI == Some(Abi::X86_64) {
            assert!(!own_vdso_offers(VdsoFn::Getrandom, Some((6, 6))));
            assert!(own_vdso_offers(VdsoFn::Getrandom, Some((6, 11))));
            assert_eq!(own_vdso_offers_from(VdsoFn::Getrandom, Some((6, 6))), Some((6, 11)));
            assert_eq!(own_vdso_offers_from(VdsoFn::Getrandom, Some((6, 18))), None);
        }
    }
}
