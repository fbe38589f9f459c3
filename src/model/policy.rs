//! The policy, once: which calls the vDSO should serve here, what a
//! process's vDSO mapping and AT_SYSINFO_EHDR say, what a bench verdict
//! loses, and the `--max-ns` threshold. Every command that judges these
//! asks here, so `maps`, `auxv`, `check`, `bench` and `trace` agree.

use super::kind::Kind;
use super::Status;
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

/// Whether a call is one the vDSO makes a syscall of when the clocksource
/// has no vDSO mode: clock_gettime of a fine-grained clock, gettimeofday
/// (the COARSE clocks, time() and clock_getres stay in user space).
pub fn clocksource_bound(func: VdsoFn, clock: Clock) -> bool {
    let fine = |id: i64| {
        i32::try_from(id).ok().and_then(arch::clock_info).is_some_and(|c| c.class == arch::ClockClass::HighRes)
    };
    match (func, clock) {
        (VdsoFn::Gettimeofday, Clock::None) => true,
        (VdsoFn::ClockGettime | VdsoFn::ClockGettime64, Clock::Id(id)) => fine(id),
        _ => false,
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

    /// The finding's kind (render/host.rs words it).
    pub fn kind(self) -> Kind {
        match self {
            VdsoMapping::Mapped { .. } => Kind::VdsoMapped,
            VdsoMapping::NoVvar => Kind::VvarNotMapped,
            VdsoMapping::NoVdso { .. } => Kind::VdsoNotMapped,
        }
    }

    /// The one severity every command gives it.
    pub fn status(self) -> Status {
        match self {
            VdsoMapping::Mapped { .. } => Status::Info,
            VdsoMapping::NoVvar | VdsoMapping::NoVdso { .. } => Status::Fail,
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

    /// The finding's kind (render/host.rs words it).
    pub fn kind(self) -> Kind {
        match self {
            SysinfoEhdr::AtVdso(_) => Kind::SysinfoEhdrOk,
            _ => Kind::SysinfoEhdrWrong,
        }
    }

    /// The one severity every command gives it.
    pub fn status(self) -> Status {
        match self {
            SysinfoEhdr::AtVdso(_) => Status::Info,
            _ => Status::Fail,
        }
    }
}

/// How a bench verdict loses the fast path this kernel's vDSO should give
/// (render/host.rs words it; its kind is `ClockLostFastPath`, FAIL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostFastPath {
    /// The C library's call makes syscalls the direct vDSO call does not.
    LibcBypass,
    /// The vDSO itself enters the kernel for a clock it should serve.
    KernelFallback,
    /// The vDSO has no symbol for `func`, which the architecture's exports.
    Missing { func: VdsoFn },
}

/// For a bench verdict of `func` with `clock`, what fast path is lost;
/// `None` when nothing is. A missing symbol is judged against the
/// architecture's table (it should export `func`), the rest against the
/// clock. `bench` and `check` both judge it so.
pub fn lost_fast_path(
    verdict: Verdict,
    func: VdsoFn,
    clock: Option<i32>,
    kernel: Option<(u32, u32)>,
) -> Option<LostFastPath> {
    match verdict {
        Verdict::LibcBypass => Some(LostFastPath::LibcBypass),
        Verdict::KernelFallback if should_be_fast(func, clock, true, kernel) => Some(LostFastPath::KernelFallback),
        Verdict::Missing if should_be_fast(func, None, true, kernel) => Some(LostFastPath::Missing { func }),
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

/// The host's getrandom, judged (`check`'s `getrandom` row), as data:
/// render/host.rs words it with what each path costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetrandomFact {
    /// This kernel's vDSO has no getrandom (`from`: the release that brings
    /// it on this architecture).
    NotOffered { from: Option<(u32, u32)> },
    /// Offered (`offers`), but the C library's call makes syscalls the
    /// direct vDSO call does not.
    LibcBypass { offers: Offers },
    /// Offered, and the C library's release makes the syscall by design.
    LibcSyscall { offers: Offers, route: LibcRoute },
    /// Offered, and the C library reads it from there.
    Vdso { offers: Offers },
    /// Offered; whether the C library reads it from there is not known.
    RouteUnknown { offers: Offers },
}

/// What the vDSO offers: its getrandom `symbol`, and from which release
/// (`since`) this architecture's vDSO has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offers {
    pub symbol: String,
    pub since: Option<(u32, u32)>,
}

impl GetrandomFact {
    pub fn kind(&self) -> Kind {
        match self {
            GetrandomFact::NotOffered { .. } => Kind::RandomNotOffered,
            GetrandomFact::LibcBypass { .. } => Kind::RandomLibcBypass,
            GetrandomFact::LibcSyscall { .. } => Kind::RandomSyscallHostLibc,
            GetrandomFact::Vdso { .. } => Kind::RandomVdso,
            GetrandomFact::RouteUnknown { .. } => Kind::RandomRouteUnknown,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            GetrandomFact::NotOffered { .. } | GetrandomFact::RouteUnknown { .. } => Status::Info,
            GetrandomFact::LibcBypass { .. } => Status::Fail,
            GetrandomFact::LibcSyscall { .. } => Status::Warn,
            GetrandomFact::Vdso { .. } => Status::Ok,
        }
    }
}

/// The host's getrandom, judged: whether this kernel's vDSO offers it
/// (`offered`; `from`: the release that brings it on this architecture),
/// under which `symbol`, whether the C library reads it from there
/// (`route`), and the bench's `verdict`.
pub fn getrandom_check(
    offered: bool,
    from: Option<(u32, u32)>,
    symbol: Option<&str>,
    route: LibcRoute,
    verdict: Option<Verdict>,
) -> GetrandomFact {
    if !offered {
        return GetrandomFact::NotOffered { from };
    }
    let row = arch::HOST_ABI.and_then(|abi| {
        let (m, is_64) = abi.elf();
        arch::vdso_symbol_row(m, is_64, VdsoFn::Getrandom)
    });
    let offers = Offers { symbol: symbol.unwrap_or("getrandom").to_string(), since: row.and_then(|r| r.since) };
    if verdict == Some(Verdict::LibcBypass) {
        return GetrandomFact::LibcBypass { offers };
    }
    match route {
        LibcRoute::Older { .. } | LibcRoute::Never { .. } => GetrandomFact::LibcSyscall { offers, route },
        LibcRoute::Vdso => GetrandomFact::Vdso { offers },
        LibcRoute::Unknown => GetrandomFact::RouteUnknown { offers },
    }
}

/// The verdict from what each path did. `errno` is the first error any path
/// gave; `offered` whether the architecture's vDSO offers the function,
/// `vdso_present` whether this vDSO exports it.
pub fn verdict(errno: Option<i32>, offered: bool, vdso_present: bool, libc: Enters, vdso: Enters) -> Option<Verdict> {
    if errno == Some(libc::EINVAL) {
        return Some(Verdict::Unsupported);
    }
    // Not offered: no symbol by design (arm64's time), or one that makes
    // the syscall by design (riscv64's getcpu) — never a lost fast path.
    if !offered {
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

    /// On a clocksource without a vDSO mode the vDSO makes a syscall of
    /// the fine-grained clocks and gettimeofday, not of the COARSE ones,
    /// time() or the CPU-time clocks (always syscalls anyway).
    #[test]
    fn clocksource_bound_calls_are_the_fine_grained_reads() {
        assert!(clocksource_bound(VdsoFn::ClockGettime, Clock::Id(1)));
        assert!(clocksource_bound(VdsoFn::ClockGettime64, Clock::Id(7)));
        assert!(clocksource_bound(VdsoFn::Gettimeofday, Clock::None));
        assert!(!clocksource_bound(VdsoFn::ClockGettime, Clock::Id(6)), "MONOTONIC_COARSE");
        assert!(!clocksource_bound(VdsoFn::ClockGettime, Clock::Id(2)), "PROCESS_CPUTIME_ID");
        assert!(!clocksource_bound(VdsoFn::Time, Clock::None));
        assert!(!clocksource_bound(VdsoFn::ClockGetres, Clock::Id(1)));
    }

    #[test]
    fn verdicts() {
        assert_eq!(verdict(Some(libc::EINVAL), true, true, None, None), Some(Verdict::Unsupported));
        assert_eq!(verdict(None, true, false, Some(true), None), Some(Verdict::Missing));
        // arm64's time and getcpu: not a lost symbol, whatever libc does.
        assert_eq!(verdict(None, false, false, Some(true), None), Some(Verdict::NotOffered));
        assert_eq!(verdict(None, false, false, Some(false), None), Some(Verdict::NotOffered));
        // riscv64's getcpu: exported, and a syscall by design.
        assert_eq!(verdict(None, false, true, Some(true), Some(true)), Some(Verdict::NotOffered));
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
        assert_eq!(VdsoMapping::judge(7, Some((0x1000, 8192)), None).status(), Status::Fail);
        assert_eq!(VdsoMapping::judge(7, None, Some(0x1000)), VdsoMapping::NoVdso { pid: 7 });
        let ok = VdsoMapping::judge(7, Some((0x1000, 8192)), Some(0x3000));
        assert_eq!((ok.kind(), ok.status()), (Kind::VdsoMapped, Status::Info));
        assert_eq!(SysinfoEhdr::judge(Some(1), Some(1)).matches(), Some(true));
        assert_eq!(SysinfoEhdr::judge(None, None).matches(), None);
        assert_eq!(SysinfoEhdr::judge(Some(1), None), SysinfoEhdr::Dangling(1));
        assert_eq!(SysinfoEhdr::judge(Some(1), Some(2)).status(), Status::Fail);
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
        assert_eq!(lost_fast_path(Verdict::KernelFallback, f, Some(3), k), None);
        assert_eq!(lost_fast_path(Verdict::KernelFallback, f, Some(1), k), Some(LostFastPath::KernelFallback));
        // A missing symbol the architecture exports is lost whatever the clock.
        assert_eq!(lost_fast_path(Verdict::Missing, f, Some(3), k), Some(LostFastPath::Missing { func: f }));
        assert_eq!(lost_fast_path(Verdict::LibcBypass, f, Some(3), k), Some(LostFastPath::LibcBypass));
        assert_eq!(lost_fast_path(Verdict::Fast, f, Some(1), k), None);
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
        assert_eq!(lost_fast_path(Verdict::LibcSyscall, g, None, Some((6, 18))), None);
    }

    #[test]
    fn the_getrandom_check_decides_from_kernel_and_library() {
        let old = LibcRoute::Older { runtime: Runtime::Glibc, version: (2, 36), since: (2, 41) };
        let sym = Some("__vdso_getrandom");
        let judge = |offered, from, sym, route, v| {
            let fact = getrandom_check(offered, from, sym, route, v);
            (fact.kind(), fact.status())
        };
        let warn = (Kind::RandomSyscallHostLibc, Status::Warn);
        assert_eq!(judge(true, None, sym, old, Some(Verdict::LibcSyscall)), warn);
        let musl = LibcRoute::Never { runtime: Runtime::Musl };
        assert_eq!(judge(true, None, sym, musl, Some(Verdict::LibcSyscall)), warn);
        assert_eq!(judge(true, None, sym, LibcRoute::Vdso, Some(Verdict::Fast)), (Kind::RandomVdso, Status::Ok));
        let bypass = (Kind::RandomLibcBypass, Status::Fail);
        assert_eq!(judge(true, None, sym, LibcRoute::Vdso, Some(Verdict::LibcBypass)), bypass);
        let unknown = (Kind::RandomRouteUnknown, Status::Info);
        assert_eq!(judge(true, None, sym, LibcRoute::Unknown, Some(Verdict::Fast)), unknown);
        let none = getrandom_check(false, Some((6, 11)), None, old, Some(Verdict::NotOffered));
        assert_eq!(none, GetrandomFact::NotOffered { from: Some((6, 11)) });
        assert_eq!((none.kind(), none.status()), (Kind::RandomNotOffered, Status::Info));
        if arch::HOST_ABI == Some(Abi::X86_64) {
            assert!(!own_vdso_offers(VdsoFn::Getrandom, Some((6, 6))));
            assert!(own_vdso_offers(VdsoFn::Getrandom, Some((6, 11))));
            assert_eq!(own_vdso_offers_from(VdsoFn::Getrandom, Some((6, 6))), Some((6, 11)));
            assert_eq!(own_vdso_offers_from(VdsoFn::Getrandom, Some((6, 18))), None);
        }
    }
}
