//! The host subject's facts, worded: what a process's vDSO mapping and
//! AT_SYSINFO_EHDR say ([`VdsoMapping`], [`SysinfoEhdr`]), a lost fast
//! path ([`LostFastPath`]), a C library that makes the syscall by design
//! ([`LibcRoute`]) and the host's getrandom ([`GetrandomFact`]), all of
//! model/policy.rs. Each is worded here, once; its kind and status are
//! the model's.

use crate::arch::{self, Abi, VdsoFn};
use crate::inspect::kernel::VsyscallMode;
use crate::model::host::{ClockRow, GetrandomRow, HostRow, VdsoSymbols, TSC_FLAGS};
use crate::model::policy::Verdict;
use crate::model::policy::{GetrandomFact, LibcRoute, LostFastPath, Offers, SysinfoEhdr, VdsoMapping};
use crate::model::row::Check;
use crate::model::row::Worded;
use crate::model::{Finding, Status};

impl Worded for VdsoMapping {
    fn words(&self) -> (String, Option<String>) {
        let f = self.finding();
        (f.message, f.hint)
    }
}

impl Worded for SysinfoEhdr {
    fn words(&self) -> (String, Option<String>) {
        let f = self.finding();
        (f.message, f.hint)
    }
}

impl Worded for HostRow {
    fn words(&self) -> (String, Option<String>) {
        host_row(self).into_words()
    }
}

impl Worded for ClockRow {
    fn words(&self) -> (String, Option<String>) {
        clock_row(self).into_words()
    }
}

impl Worded for VdsoSymbols {
    fn words(&self) -> (String, Option<String>) {
        vdso_symbols_row(self, "").into_words()
    }
}

impl Worded for GetrandomRow {
    fn words(&self) -> (String, Option<String>) {
        getrandom_words(&self.fact, &getrandom_costs(self.libc_ns, self.vdso_ns, self.counted))
    }
}

impl VdsoMapping {
    /// The finding, worded (its kind and the one severity every command
    /// gives it, the model's).
    pub fn finding(self) -> Finding {
        let (message, hint) = match self {
            VdsoMapping::Mapped { start, size, vvar } => {
                (format!("[vdso] at {start:#x} ({}), [vvar] at {vvar:#x}", crate::words::human_size(size)), None)
            }
            VdsoMapping::NoVvar => (
                "[vdso] is mapped but [vvar] is not: the vDSO has no time data page to read".to_string(),
                Some("a sandbox unmapped [vvar]; allow it in the runtime's memory policy"),
            ),
            VdsoMapping::NoVdso { pid } => (
                format!("pid {pid} has no [vdso] mapping: every clock read there is a syscall"),
                Some("check `vdso=0` on the kernel command line, or the sandbox/loader that unmaps the vDSO"),
            ),
        };
        Finding::new(self.kind(), self.status(), message, hint.map(str::to_string))
    }
}

impl SysinfoEhdr {
    /// The finding, worded (its kind and severity the model's).
    pub fn finding(self) -> Finding {
        let (message, hint) = match self {
            SysinfoEhdr::AtVdso(a) => (format!("AT_SYSINFO_EHDR {a:#x} is the start of [vdso]"), None),
            SysinfoEhdr::Elsewhere { ehdr, vdso } => (
                format!("AT_SYSINFO_EHDR is {ehdr:#x} but [vdso] starts at {vdso:#x}: the C library will look for the vDSO in the wrong place"),
                Some("something remapped the vDSO after exec (CRIU restore, a sandbox); clock reads may fall back to syscalls"),
            ),
            SysinfoEhdr::Missing => (
                "no AT_SYSINFO_EHDR in the auxiliary vector: the C library cannot find the vDSO, so every clock read is a syscall".to_string(),
                Some("check the loader or sandbox that rewrites the auxiliary vector"),
            ),
            SysinfoEhdr::Dangling(_) => (
                "AT_SYSINFO_EHDR is set but no [vdso] is mapped: the vDSO was unmapped after exec".to_string(),
                Some("a sandbox or runtime unmapped it; every clock read is a syscall"),
            ),
            SysinfoEhdr::NoVdso => (
                "no vDSO at all: no AT_SYSINFO_EHDR and no [vdso] mapping; every clock read is a syscall".to_string(),
                Some("check `vdso=0` on the kernel command line"),
            ),
        };
        Finding::new(self.kind(), self.status(), message, hint.map(str::to_string))
    }
}

/// A lost fast path's sentence (after `label`) and remediation;
/// `clocksource` is the current one, named in the hint.
pub fn lost_fast_path(lost: LostFastPath, label: &str, clocksource: Option<&str>) -> (String, String) {
    match lost {
        LostFastPath::LibcBypass => (
            format!("{label}: the C library's call makes syscalls where the direct vDSO call makes none — the vDSO is bypassed"),
            "check LD_PRELOAD and interposed libraries, then the C library's version (a static binary keeps the libc it was built with)".into(),
        ),
        LostFastPath::KernelFallback => (
            format!("{label}: the vDSO itself enters the kernel, though this kernel's vDSO serves it"),
            format!(
                "the clocksource ({}) has no vDSO mode; `cat /sys/devices/system/clocksource/clocksource0/available_clocksource` and switch to tsc or arch_sys_counter if offered",
                clocksource.unwrap_or("unknown")
            ),
        ),
        LostFastPath::Missing { func } => (
            format!("{label}: the vDSO has no symbol for {} — every call is a syscall", func.name()),
            "check `vdso=` on the kernel command line and `vdsoctl dump`".into(),
        ),
    }
}

/// `libc 548 ns, vDSO 67.4 ns` (what is measured of the two).
pub fn cost_pair(libc_ns: Option<f64>, vdso_ns: Option<f64>) -> String {
    let t = |ns: Option<f64>| ns.map_or_else(|| "-".into(), crate::words::ns_text);
    format!("libc {}, vDSO {}", t(libc_ns), t(vdso_ns))
}

/// The sentence and hint for a C library that makes `func`'s syscall on
/// every call though this kernel's vDSO serves it (`bench` and `check`):
/// `None` for a route that reads the vDSO or is not known.
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

/// `the vDSO offers __vdso_getrandom (x86_64 since 6.11)`.
fn offers_text(o: &Offers) -> String {
    let arch = arch::HOST_ABI.map_or("this", Abi::name);
    match o.since {
        Some((a, b)) => format!("the vDSO offers {} ({arch} since {a}.{b})", o.symbol),
        None => format!("the vDSO offers {}", o.symbol),
    }
}

/// The `getrandom` row's detail and hint, with what each path costs (`costs`).
pub fn getrandom_words(fact: &GetrandomFact, costs: &str) -> (String, Option<String>) {
    match fact {
        GetrandomFact::NotOffered { from } => {
            let arch = arch::HOST_ABI.map_or("this", Abi::name);
            let since = from.map_or_else(String::new, |(a, b)| format!(" from {a}.{b}"));
            (
                format!(
                    "this kernel's vDSO has no getrandom (the {arch} vDSO has it{since}): every getrandom is a syscall, whatever the C library — nothing to gain here"
                ),
                None,
            )
        }
        GetrandomFact::LibcBypass { offers } => (
            format!(
                "{}, but the C library's call makes syscalls where the direct vDSO call makes none ({costs} here)",
                offers_text(offers)
            ),
            Some("check LD_PRELOAD and interposed libraries".into()),
        ),
        GetrandomFact::LibcSyscall { offers, route } => {
            let (message, hint) = libc_syscall_words(VdsoFn::Getrandom, *route, costs).unwrap_or_default();
            (format!("{}; {message}", offers_text(offers)), Some(hint))
        }
        GetrandomFact::Vdso { offers } => {
            (format!("{} and the C library reads it from there ({costs} here)", offers_text(offers)), None)
        }
        GetrandomFact::RouteUnknown { offers } => (
            format!("{}; whether the C library reads it from there is not known ({costs} here)", offers_text(offers)),
            Some(routes_that_read(VdsoFn::Getrandom)),
        ),
    }
}

/// What an export is for, in words (check's `vdso_symbols` row, dump's
/// `serves`): `clock_gettime` for a function of the table, `futex's fast
/// path, not traced by vdsoctl`, `a sigreturn trampoline, no syscall's
/// fast path`, `unknown to vdsoctl`.
pub fn export_role_words(role: crate::arch::ExportRole) -> String {
    use crate::arch::{ExportRole, NotASyscall};
    match role {
        ExportRole::Function(f) => format!("{f}'s fast path"),
        // x86's, the one arch with aliases: each is `__vdso_` + its name.
        ExportRole::Alias(f) => format!("a weak alias of __vdso_{f}"),
        ExportRole::FastPath { syscall, since } => match since {
            Some((a, b)) => format!("{syscall}'s fast path since Linux {a}.{b}, not traced by vdsoctl"),
            None => format!("{syscall}'s fast path, not traced by vdsoctl"),
        },
        ExportRole::NotASyscall(what) => {
            let what = match what {
                NotASyscall::SigreturnTrampoline => "a signal-return trampoline",
                NotASyscall::SgxEnterEnclave => "SGX enclave entry",
                NotASyscall::SyscallMap => "the map of syscalls the vDSO has",
                NotASyscall::TimebaseFrequency => "the timebase frequency",
                NotASyscall::SyncDicache => "an instruction-cache sync",
                NotASyscall::RestartSyscall => "the syscall-restart trampoline",
            };
            format!("{what}, no syscall's fast path")
        }
        ExportRole::Unknown => "unknown to vdsoctl".to_string(),
    }
}

/// The `{who}vdso_symbols` row: what the image exports, or its problems
/// (their findings' words joined, the first hint).
pub fn vdso_symbols_row(fact: &VdsoSymbols, who: &str) -> Check {
    let name = format!("{who}vdso_symbols");
    let (detail, hint) = match fact {
        VdsoSymbols::Unreadable { error } => (format!("cannot read the vDSO image: {error}"), None),
        VdsoSymbols::Exports { exported, version, has_hash, has_gnu_hash, others } => {
            let hash = match (has_hash, has_gnu_hash) {
                (true, true) => "DT_HASH and DT_GNU_HASH",
                (true, false) => "DT_HASH",
                (false, true) => "DT_GNU_HASH only",
                (false, false) => "no hash table",
            };
            let mut detail = format!("exports {} ({version}); {hash}", exported.join(" "));
            // x86's weak aliases by their names alone: each is its
            // `__vdso_` function's C name (`clock_gettime`).
            let (aliases, rest): (Vec<_>, Vec<_>) =
                others.iter().partition(|(_, role)| matches!(role, crate::arch::ExportRole::Alias(_)));
            if !aliases.is_empty() {
                let names: Vec<&str> = aliases.iter().map(|(n, _)| n.as_str()).collect();
                detail.push_str(&format!("; and their weak aliases {}", names.join(" ")));
            }
            if !rest.is_empty() {
                let named: Vec<String> =
                    rest.iter().map(|(n, role)| format!("{n} ({})", export_role_words(*role))).collect();
                detail.push_str(&format!("; also {}", named.join(", ")));
            }
            (detail, None)
        }
        VdsoSymbols::Problems { problems, .. } => {
            let findings: Vec<Finding> = problems.iter().map(|p| p.finding()).collect();
            let detail = findings.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("; ");
            let hint = findings.iter().find_map(|f| f.hint.clone());
            (detail, Some(hint.unwrap_or_else(|| "`vdsoctl dump` shows the whole image".to_string())))
        }
    };
    Check::new(fact.kind(), name, fact.status(), detail, hint.as_deref())
}

/// A process an emulator (valgrind, qemu-user) runs: its missing `[vdso]`
/// is the tool's doing, said on the failing mapping rows instead of `vdso=0`.
pub fn run_by_emulator(mapping_checks: &mut Vec<Check>, tool: &str) {
    for c in std::mem::take(mapping_checks) {
        mapping_checks.push(if c.status == Status::Fail {
            c.reworded(|detail, hint| {
                *detail += &format!(" — {tool} runs it");
                *hint = Some(format!("expected under {tool}; audit the program run natively"));
            })
        } else {
            c
        });
    }
}

/// One of the host's own rows, worded (its name, kind and status the model's).
pub fn host_row(row: &HostRow) -> Check {
    let (detail, hint): (String, Option<&str>) = match row {
        HostRow::ClocksourceUnreadable => (
            "/sys/devices/system/clocksource is not readable here".into(),
            Some("run on the host, or mount sysfs in the container"),
        ),
        HostRow::Clocksource { current, available, vdso_mode } => {
            let detail = format!("current {current} (available: {})", available.join(" "));
            let switch_hint = available.iter().any(|c| c == "tsc").then_some(
                "switch with `echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource` (boot: clocksource=tsc)",
            );
            match vdso_mode {
                Some(true) => (format!("{detail}; it has a vDSO mode"), None),
                Some(false) => (
                    format!("{detail}; {current} has no vDSO mode: REALTIME, MONOTONIC, BOOTTIME, TAI and MONOTONIC_RAW reads are all syscalls (COARSE clocks and time() still are not)"),
                    switch_hint.or(Some("boot with a clocksource that has a vDSO mode (tsc; on VMs a stable kvm-clock or the Hyper-V TSC page)")),
                ),
                None => (
                    format!("{detail}; {current} has a vDSO mode only when the hypervisor marks it stable — the clock checks below prove which"),
                    switch_hint,
                ),
            }
        }
        HostRow::TscFlags { missing } if missing.is_empty() => (TSC_FLAGS.join(" "), None),
        HostRow::TscFlags { missing } => (
            format!(
                "missing {}: the kernel may distrust the TSC and fall back to a clocksource without a vDSO mode",
                missing.join(" ")
            ),
            Some("on a VM, expose an invariant TSC to the guest (e.g. KVM `-cpu host,+invtsc`)"),
        ),
        HostRow::KernelLog { lines } if lines.is_empty() => {
            ("no TSC/clocksource instability in the kernel log".into(), None)
        }
        HostRow::KernelLog { lines } => (
            format!("{} line(s), last: {}", lines.len(), lines.last().map_or("", String::as_str)),
            Some("the clocksource watchdog distrusted the TSC; see `dmesg | grep -i clocksource` and check the host's TSC"),
        ),
        HostRow::KernelLogUnreadable { error } => (
            format!("/dev/kmsg not readable ({error}) — needs root or kernel.dmesg_restrict=0"),
            Some("run as root to include this check"),
        ),
        HostRow::KernelVersionUnreadable => ("cannot read /proc/sys/kernel/osrelease".into(), None),
        HostRow::KernelVersion { release, served, not_yet } => {
            let source = "source: the kernel's lib/vdso and arch vdso history";
            if not_yet.is_empty() {
                (format!("{release}: the vDSO serves {} ({source})", served.join(" ")), None)
            } else {
                let not_yet: Vec<String> =
                    not_yet.iter().map(|(c, v)| format!("{c} (from {}.{})", v.0, v.1)).collect();
                (
                    format!("{release}: the vDSO serves {} but not {} ({source})", served.join(" "), not_yet.join(", ")),
                    Some("upgrade the kernel, or read those clocks less often"),
                )
            }
        }
        HostRow::NoVsyscallPage => ("no vsyscall page on this architecture".into(), None),
        HostRow::Vsyscall { mode: VsyscallMode::Xonly, source } => {
            (format!("xonly (from {source}): legacy calls are emulated, reads fault"), None)
        }
        HostRow::Vsyscall { mode: VsyscallMode::None, source } => {
            (format!("none (from {source}): a legacy binary that calls the vsyscall page crashes"), None)
        }
        HostRow::Vsyscall { mode: VsyscallMode::Emulate, source } => (
            format!(
                "emulate (from {source}): the page is readable; each legacy call traps into the kernel (`vdsoctl bench --paths vsyscall` measures it here) and strace cannot see it"
            ),
            Some("boot with vsyscall=xonly unless a very old binary reads the page; `vdsoctl trace -a` finds callers"),
        ),
        HostRow::Libc { name, version, static_linked } => {
            let linked = if *static_linked { "statically linked" } else { "dynamically linked" };
            (format!("vdsoctl runs on {name} {} ({linked})", version.as_deref().unwrap_or("(version unknown)")), None)
        }
    };
    Check::new(row.kind(), row.name(), row.status(), detail, hint)
}

/// What getrandom costs here: `libc 650 ns, vDSO 40.0 ns`, and with
/// counts (`counted`: libc's and the vDSO's syscalls/call) what each makes.
pub fn getrandom_costs(
    libc_ns: Option<f64>,
    vdso_ns: Option<f64>,
    counted: Option<(Option<f64>, Option<f64>)>,
) -> String {
    let mut costs = cost_pair(libc_ns, vdso_ns);
    if let Some((libc, vdso)) = counted {
        let sc = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
        costs += &format!("; syscalls/call libc {}, vDSO {}", sc(libc), sc(vdso));
    }
    costs
}

/// One clock's row, worded (its kind and status the model's).
pub fn clock_row(row: &ClockRow) -> Check {
    let cost = |ns: Option<f64>| ns.map_or_else(|| "-".to_string(), crate::words::ns_text);
    let sc = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    let basis = if row.counted { "counted" } else { "timing-based: perf and seccomp refused" };
    let detail = format!(
        "libc {} ({} syscalls/call), vdso {} ({}) [{basis}]",
        cost(row.libc.0),
        sc(row.libc.1),
        cost(row.vdso.0),
        sc(row.vdso.1)
    );
    let label = &row.label;
    let (detail, hint) = match (row.verdict, row.lost) {
        (_, Some(lost)) => {
            let (message, hint) = lost_fast_path(lost, label, row.clocksource.as_deref());
            (format!("{message}; {detail}"), Some(hint))
        }
        (Some(Verdict::KernelFallback), None) => {
            (format!("{label}: always a syscall, as on every kernel; {detail}"), None)
        }
        (Some(Verdict::NotOffered), None) => (
            format!(
                "{label}: not offered by the {} vDSO, by design; {detail}",
                arch::HOST_ABI.map_or("this", Abi::name)
            ),
            None,
        ),
        (Some(Verdict::Unsupported), None) => (format!("{label}: the kernel rejects it here (EINVAL)"), None),
        _ => match row.over {
            Some((max, ns)) => (
                format!("{label}: {}/call through libc, over --max-ns {max}; {detail}", crate::words::ns_text(ns)),
                Some(format!(
                    "the direct vDSO call measured {} here; when it is as slow, the clocksource or a loaded host is why",
                    cost(row.vdso.0)
                )),
            ),
            None if row.verdict == Some(Verdict::Fast) => (format!("{label}: fast; {detail}"), None),
            None => (format!("{label}: no verdict; {detail}"), None),
        },
    };
    Check::new(row.kind(), row.name.clone(), row.status(), detail, hint.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Runtime;
    use crate::model::kind::Kind;
    use crate::model::policy;

    #[test]
    fn mapping_and_auxv_findings_are_worded_here() {
        let f = VdsoMapping::judge(7, Some((0x1000, 8192)), None).finding();
        assert_eq!((f.kind, f.severity), (Kind::VvarNotMapped, Status::Fail));
        let ok = VdsoMapping::judge(7, Some((0x1000, 8192)), Some(0x3000)).finding();
        assert_eq!((ok.kind, ok.severity), (Kind::VdsoMapped, Status::Info));
        assert_eq!(ok.message, "[vdso] at 0x1000 (8 KiB), [vvar] at 0x3000");
        let f = SysinfoEhdr::judge(Some(1), Some(2)).finding();
        assert_eq!((f.kind, f.severity), (Kind::SysinfoEhdrWrong, Status::Fail));
        assert_eq!(
            f.message,
            "AT_SYSINFO_EHDR is 0x1 but [vdso] starts at 0x2: the C library will look for the vDSO in the wrong place"
        );
        let f = SysinfoEhdr::judge(Some(0x10), Some(0x10)).finding();
        assert_eq!((f.kind, f.severity, f.hint), (Kind::SysinfoEhdrOk, Status::Info, None));
    }

    #[test]
    fn a_lost_fast_path_is_worded_here() {
        let f = VdsoFn::ClockGettime;
        let lost = policy::lost_fast_path(Verdict::KernelFallback, f, Some(1), Some((6, 18))).unwrap();
        let (msg, hint) = lost_fast_path(lost, "CLOCK_MONOTONIC", Some("xen"));
        assert!(msg.starts_with("CLOCK_MONOTONIC: the vDSO itself enters the kernel"), "{msg}");
        assert!(hint.starts_with("the clocksource (xen) has no vDSO mode"), "{hint}");
        let (msg, _) = lost_fast_path(LostFastPath::Missing { func: f }, "x", None);
        assert_eq!(msg, "x: the vDSO has no symbol for clock_gettime — every call is a syscall");
    }

    #[test]
    fn the_getrandom_row_is_worded_here() {
        let costs = cost_pair(Some(650.0), Some(40.0));
        assert_eq!(costs, "libc 650 ns, vDSO 40.0 ns");
        let old = LibcRoute::Older { runtime: Runtime::Glibc, version: (2, 36), since: (2, 41) };
        let sym = Some("__vdso_getrandom");
        let fact = policy::getrandom_check(true, None, sym, old, Some(Verdict::LibcSyscall));
        let (detail, hint) = getrandom_words(&fact, &costs);
        assert!(detail.contains("glibc 2.36 makes the getrandom syscall on every call"), "{detail}");
        assert!(detail.contains("(libc 650 ns, vDSO 40.0 ns here)"), "{detail}");
        assert!(hint.unwrap_or_default().starts_with("glibc 2.41 reads it from the vDSO"));
        let musl = LibcRoute::Never { runtime: Runtime::Musl };
        let fact = policy::getrandom_check(true, None, sym, musl, Some(Verdict::LibcSyscall));
        assert!(getrandom_words(&fact, &costs).0.contains("no musl release reads getrandom from the vDSO"));
        let fact = policy::getrandom_check(false, Some((6, 11)), None, old, Some(Verdict::NotOffered));
        let (detail, _) = getrandom_words(&fact, &costs);
        assert!(detail.contains("has it from 6.11") && detail.contains("nothing to gain"), "{detail}");
    }

    #[test]
    fn the_vdso_symbols_row_is_worded_from_typed_problems() {
        use crate::model::host::VdsoSymbols;
        use crate::model::image::ImageProblem;
        let gnu = VdsoSymbols::Problems { problems: vec![ImageProblem::GnuHashOnly], hash_only: true, musl: false };
        let row = vdso_symbols_row(&gnu, "process_");
        assert_eq!(
            (row.name.as_str(), row.kind, row.status),
            ("process_vdso_symbols", Kind::VdsoGnuHashOnly, Status::Warn)
        );
        assert_eq!(row.detail(), ImageProblem::GnuHashOnly.to_string());
        assert!(row.hint().as_deref().is_some_and(|h| h.starts_with("glibc programs are unaffected")), "{row:?}");
        let broken = VdsoSymbols::Problems { problems: vec![ImageProblem::NoHashTable], hash_only: false, musl: true };
        let row = vdso_symbols_row(&broken, "");
        assert_eq!((row.kind, row.status), (Kind::VdsoExportsBroken, Status::Fail));
        assert_eq!(row.hint().as_deref(), Some("`vdsoctl dump` shows the whole image"));
        let ok = VdsoSymbols::Exports {
            exported: vec!["__vdso_time"],
            version: "LINUX_2.6",
            has_hash: false,
            has_gnu_hash: true,
            others: vec![],
        };
        let row = vdso_symbols_row(&ok, "");
        assert_eq!(
            (row.kind, row.status, &*row.detail()),
            (Kind::VdsoExportsOk, Status::Ok, "exports __vdso_time (LINUX_2.6); DT_GNU_HASH only")
        );
    }

    #[test]
    fn an_emulator_is_said_on_the_failing_mapping_rows() {
        let mut rows = vec![
            Check::new(Kind::VdsoNotMapped, "process_vdso_mapped", Status::Fail, "pid 1 has no [vdso]", None),
            Check::new(Kind::SysinfoEhdrOk, "process_auxv_sysinfo_ehdr", Status::Ok, "ok", None),
        ];
        run_by_emulator(&mut rows, "valgrind");
        assert_eq!(rows[0].detail(), "pid 1 has no [vdso] — valgrind runs it");
        assert_eq!(rows[0].hint().as_deref(), Some("expected under valgrind; audit the program run natively"));
        assert_eq!((&*rows[1].detail(), rows[1].hint().as_deref()), ("ok", None));
    }

    #[test]
    fn clock_rows_are_worded_here() {
        let row = ClockRow {
            name: "clock:MONOTONIC".into(),
            label: "CLOCK_MONOTONIC".into(),
            libc: (Some(650.0), Some(1.0)),
            vdso: (Some(40.0), Some(0.0)),
            counted: true,
            verdict: Some(Verdict::KernelFallback),
            lost: Some(LostFastPath::KernelFallback),
            clocksource: Some("xen".into()),
            over: None,
        };
        let c = clock_row(&row);
        assert_eq!((c.kind, c.status), (Kind::ClocksourceNoVdso, Status::Fail));
        assert!(c.detail().starts_with("CLOCK_MONOTONIC: the vDSO itself enters the kernel"), "{}", c.detail());
        assert!(
            c.detail().ends_with("; libc 650 ns (1.00 syscalls/call), vdso 40.0 ns (0.00) [counted]"),
            "{}",
            c.detail()
        );
        let fast = ClockRow { verdict: Some(Verdict::Fast), lost: None, counted: false, ..row };
        let c = clock_row(&fast);
        assert_eq!((c.kind, c.status), (Kind::ClockFast, Status::Ok));
        assert!(c.detail().ends_with("[timing-based: perf and seccomp refused]"), "{}", c.detail());
        let over = clock_row(&ClockRow { over: Some((1.0, 650.0)), ..fast });
        assert_eq!((over.kind, over.status), (Kind::ClockOverMaxNs, Status::Fail));
        assert_eq!(
            getrandom_costs(Some(650.0), None, Some((Some(1.0), None))),
            "libc 650 ns, vDSO -; syscalls/call libc 1.00, vDSO -"
        );
    }

    #[test]
    fn host_rows_are_worded_here() {
        let c = host_row(&HostRow::TscFlags { missing: vec!["nonstop_tsc"] });
        assert_eq!((c.name.as_str(), c.kind, c.status), ("tsc_flags", Kind::TscUnstable, Status::Warn));
        assert!(c.detail().starts_with("missing nonstop_tsc: "), "{}", c.detail());
        let c = host_row(&HostRow::TscFlags { missing: vec![] });
        assert_eq!(
            (c.kind, c.status, &*c.detail()),
            (Kind::TscOk, Status::Ok, "constant_tsc nonstop_tsc tsc_known_freq")
        );
        let c = host_row(&HostRow::KernelVersion {
            release: "5.2.0".into(),
            served: vec!["REALTIME"],
            not_yet: vec![("MONOTONIC_RAW", (5, 3))],
        });
        assert_eq!((c.kind, c.status), (Kind::KernelOldClocks, Status::Warn));
        assert!(
            c.detail().starts_with("5.2.0: the vDSO serves REALTIME but not MONOTONIC_RAW (from 5.3) ("),
            "{}",
            c.detail()
        );
        let c = host_row(&HostRow::Libc { name: "musl".into(), version: None, static_linked: true });
        assert_eq!(c.detail(), "vdsoctl runs on musl (version unknown) (statically linked)");
    }

    /// Issue 40: the host subject's model files hold no sentence.
    #[test]
    fn model_host_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/host.rs"));
        assert!(prose.is_empty(), "prose in model/host.rs: {prose:?}");
    }

    #[test]
    fn model_policy_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/policy.rs"));
        assert!(prose.is_empty(), "prose in model/policy.rs: {prose:?}");
    }
}
