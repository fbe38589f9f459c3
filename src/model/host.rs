//! The host audit: what vdsoctl read of its own process and of the kernel
//! (clocksource, TSC, kernel version, vsyscall mode, libc:
//! `inspect::host::HostSnapshot`) and the quick clock bench it ran
//! (`measure::bench::run` of [`clock_request`]), judged. `check` and
//! `serve` both run exactly this list. Nothing here reads or measures.

use super::bench::{self, Basis, BenchReport, BenchResult};
use super::binary::HostFacts;
use super::image::{problems as image_problems, ImageProblem};
use super::kind::Kind;
use super::policy::Verdict;
use super::policy::{self, SysinfoEhdr, VdsoMapping};
use super::row::Check;
use super::vsyscall::{vsyscall_mode, Vsyscall};
use super::{ClockRef, Status};
use crate::arch::{self, ClockClass, VdsoFn};
use crate::inspect::elf::Image;
use crate::inspect::host::{HostSnapshot, KernelFacts, VdsoFacts};
use crate::inspect::kernel::{self, Clocksource, VsyscallMode};
use crate::measure::bench::{BenchRequest, BenchRun, Path};
use crate::render;
use crate::words::ns_text;

/// The host audit of what `snap` read and the quick clock bench `bench`
/// ran (of [`clock_request`]`(max_ns)`): vdsoctl's own vDSO, the
/// clocksource, TSC, kernel, vsyscall mode, libc, the clocks and getrandom
/// (the bench's report is returned for the cost figures). `check` and
/// `serve` both run exactly this list.
pub fn host_checks(snap: &HostSnapshot, bench: BenchRun, max_ns: Option<f64>) -> (Vec<Check>, BenchReport) {
    let mut checks = mapping_checks(&snap.own, "");
    checks.push(vdso_symbols_check(&snap.own, "", cfg!(target_env = "musl")));
    checks.push(clocksource_check(snap.kernel.clocksource.as_ref()));
    if let Some(tsc) = &snap.tsc {
        checks.extend(tsc_checks(tsc.flags.as_deref(), &tsc.kmsg));
    }
    checks.push(kernel_version_check(snap.kernel.release.as_deref().unwrap_or_default()));
    checks.push(vsyscall_check(&host_vsyscall(&snap.own, snap.kernel.cmdline.as_deref())));
    let (libc_name, libc_version) = bench.libc.clone();
    checks.push(libc_check(libc_name, libc_version.as_deref(), cfg!(target_feature = "crt-static")));
    let (clocks, report) = clock_checks(bench, &snap.kernel, max_ns);
    checks.extend(clocks);
    let image = snap.own.image.as_ref().ok();
    checks.push(getrandom_check(&report, image, libc_name, libc_version.as_deref()));
    (checks, report)
}

/// The vDSO mapping and AT_SYSINFO_EHDR of a process, as checks.
pub fn mapping_checks(process: &VdsoFacts, who: &str) -> Vec<Check> {
    let mut checks = Vec::new();
    let maps = match &process.maps {
        Ok(m) => m,
        Err(e) => {
            return vec![Check::new(
                Kind::MapsUnreadable,
                format!("{who}vdso_mapped"),
                Status::Fail,
                e.to_string(),
                None,
            )]
        }
    };
    let vdso = maps.iter().find(|m| m.name() == "[vdso]");
    let vvar = maps.iter().find(|m| m.name() == "[vvar]");
    let mapping = VdsoMapping::judge(process.pid, vdso.map(|d| (d.start, d.size())), vvar.map(|v| v.start));
    checks.push(Check::of(format!("{who}vdso_mapped"), mapping.finding()));
    let verdict = SysinfoEhdr::judge(process.sysinfo_ehdr, vdso.map(|d| d.start));
    checks.push(Check::of(format!("{who}auxv_sysinfo_ehdr"), verdict.finding()));
    checks
}

/// What a process's vDSO image says of the symbols its C library binds,
/// as data: render/host.rs words it into the `vdso_symbols` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VdsoSymbols {
    /// The image could not be read (`error`).
    Unreadable { error: String },
    /// Every symbol the C library binds is exported (`exported`, with
    /// `version`), with these hash tables.
    Exports { exported: Vec<&'static str>, version: &'static str, has_hash: bool, has_gnu_hash: bool },
    /// What is wrong (WARN or worse), for a `musl` process or not;
    /// `hash_only`: all that is wrong is a missing DT_HASH (DT_GNU_HASH only).
    Problems { problems: Vec<ImageProblem>, hash_only: bool, musl: bool },
}

impl VdsoSymbols {
    pub fn kind(&self) -> Kind {
        match self {
            VdsoSymbols::Unreadable { .. } => Kind::VdsoUnreadable,
            VdsoSymbols::Exports { .. } => Kind::VdsoExportsOk,
            VdsoSymbols::Problems { hash_only: true, .. } => Kind::VdsoGnuHashOnly,
            VdsoSymbols::Problems { .. } => Kind::VdsoExportsBroken,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            VdsoSymbols::Exports { .. } => Status::Ok,
            VdsoSymbols::Problems { hash_only: true, musl: false, .. } => Status::Warn,
            VdsoSymbols::Unreadable { .. } | VdsoSymbols::Problems { .. } => Status::Fail,
        }
    }
}

/// Whether the vDSO image of a process exports what its C library binds.
/// `musl`: the process uses musl, for which a missing DT_HASH is fatal.
pub fn vdso_symbols(process: &VdsoFacts, musl: bool) -> VdsoSymbols {
    let img = match &process.image {
        Ok(img) => img,
        Err(e) => return VdsoSymbols::Unreadable { error: e.to_string() },
    };
    // A missing DT_HASH only matters to musl.
    let problems: Vec<ImageProblem> = image_problems(img)
        .into_iter()
        .filter(|p| musl || *p != ImageProblem::GnuHashOnly)
        .filter(|p| p.status() >= Status::Warn)
        .collect();
    if problems.is_empty() {
        let exported = arch::vdso_abi(img.machine, img.is_64)
            .map(|abi| {
                abi.symbols.iter().map(|s| s.name).filter(|n| img.symbols.iter().any(|s| &s.name == n)).collect()
            })
            .unwrap_or_default();
        let version = arch::vdso_abi(img.machine, img.is_64).map_or("?", |a| a.version);
        return VdsoSymbols::Exports { exported, version, has_hash: img.has_hash, has_gnu_hash: img.has_gnu_hash };
    }
    let hash_only = problems.iter().all(|p| *p == ImageProblem::GnuHashOnly);
    VdsoSymbols::Problems { problems, hash_only, musl }
}

/// The `{who}vdso_symbols` row of [`vdso_symbols`], worded by render/host.rs.
pub fn vdso_symbols_check(process: &VdsoFacts, who: &str, musl: bool) -> Check {
    render::host::vdso_symbols_row(&vdso_symbols(process, musl), who)
}

/// The clocksource and whether it has a vDSO mode.
pub fn clocksource_check(cs: Option<&Clocksource>) -> Check {
    let Some(cs) = cs else {
        return Check::new(
            Kind::ClocksourceUnreadable,
            "clocksource",
            Status::Skip,
            "/sys/devices/system/clocksource is not readable here",
            Some("run on the host, or mount sysfs in the container"),
        );
    };
    let detail = format!("current {} (available: {})", cs.current, cs.available.join(" "));
    let switch_hint = cs.available.iter().any(|c| c == "tsc").then_some(
        "switch with `echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource` (boot: clocksource=tsc)",
    );
    match kernel::clocksource_has_vdso_mode(&cs.current) {
        Some(true) => Check::new(Kind::ClocksourceVdso, "clocksource", Status::Ok, format!("{detail}; it has a vDSO mode"), None),
        Some(false) => Check::new(Kind::ClocksourceNoVdso,
            "clocksource",
            Status::Fail,
            format!("{detail}; {} has no vDSO mode: REALTIME, MONOTONIC, BOOTTIME, TAI and MONOTONIC_RAW reads are all syscalls (COARSE clocks and time() still are not)", cs.current),
            switch_hint.or(Some("boot with a clocksource that has a vDSO mode (tsc; on VMs a stable kvm-clock or the Hyper-V TSC page)")),
        ),
        None => Check::new(Kind::ClocksourceMaybeVdso,
            "clocksource",
            Status::Warn,
            format!("{detail}; {} has a vDSO mode only when the hypervisor marks it stable — the clock checks below prove which", cs.current),
            switch_hint,
        ),
    }
}

/// x86 TSC flags and kernel log lines that mark it unstable.
/// `flags`: /proc/cpuinfo's; `kmsg`: the kernel log's clock lines (x86 only).
pub fn tsc_checks(flags: Option<&[String]>, kmsg: &std::io::Result<Vec<String>>) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(flags) = flags {
        let want = ["constant_tsc", "nonstop_tsc", "tsc_known_freq"];
        let missing: Vec<&str> = want.iter().copied().filter(|f| !flags.iter().any(|g| g == f)).collect();
        checks.push(if missing.is_empty() {
            Check::new(Kind::TscOk, "tsc_flags", Status::Ok, want.join(" "), None)
        } else {
            Check::new(
                if missing.contains(&"constant_tsc") || missing.contains(&"nonstop_tsc") {
                    Kind::TscUnstable
                } else {
                    Kind::TscOk
                },
                "tsc_flags",
                if missing.contains(&"constant_tsc") || missing.contains(&"nonstop_tsc") {
                    Status::Warn
                } else {
                    Status::Ok
                },
                format!(
                    "missing {}: the kernel may distrust the TSC and fall back to a clocksource without a vDSO mode",
                    missing.join(" ")
                ),
                Some("on a VM, expose an invariant TSC to the guest (e.g. KVM `-cpu host,+invtsc`)"),
            )
        });
    }
    checks.push(match kmsg {
        Ok(lines) if lines.is_empty() => Check::new(Kind::TscOk, "kernel_log", Status::Ok, "no TSC/clocksource instability in the kernel log", None),
        Ok(lines) => Check::new(Kind::TscUnstable,
            "kernel_log",
            Status::Warn,
            format!("{} line(s), last: {}", lines.len(), lines.last().map_or("", String::as_str)),
            Some("the clocksource watchdog distrusted the TSC; see `dmesg | grep -i clocksource` and check the host's TSC"),
        ),
        Err(e) => Check::new(Kind::KernelUnreadable,
            "kernel_log",
            Status::Skip,
            format!("/dev/kmsg not readable ({}) — needs root or kernel.dmesg_restrict=0", crate::error::errno_text(e)),
            Some("run as root to include this check"),
        ),
    });
    checks
}

/// Which clock ids this kernel's vDSO serves, stated from its version.
/// `release`: /proc/sys/kernel/osrelease (empty when unreadable).
pub fn kernel_version_check(release: &str) -> Check {
    let Some(version) = kernel::parse_version(release) else {
        return Check::new(
            Kind::KernelUnreadable,
            "kernel_version",
            Status::Skip,
            "cannot read /proc/sys/kernel/osrelease",
            None,
        );
    };
    let (mut served, mut not_yet) = (Vec::new(), Vec::new());
    for c in arch::CLOCKS.iter().filter(|c| c.class != ClockClass::AlwaysSyscall) {
        match c.vdso_since(arch::HOST_MACHINE) {
            Some(v) if version >= v => served.push(c.short_name()),
            Some(v) => not_yet.push(format!("{} (from {}.{})", c.short_name(), v.0, v.1)),
            None => {}
        }
    }
    let source = "source: the kernel's lib/vdso and arch vdso history";
    if not_yet.is_empty() {
        Check::new(
            Kind::KernelServesClocks,
            "kernel_version",
            Status::Ok,
            format!("{release}: the vDSO serves {} ({source})", served.join(" ")),
            None,
        )
    } else {
        Check::new(
            Kind::KernelOldClocks,
            "kernel_version",
            Status::Warn,
            format!("{release}: the vDSO serves {} but not {} ({source})", served.join(" "), not_yet.join(", ")),
            Some("upgrade the kernel, or read those clocks less often"),
        )
    }
}

/// The host's vsyscall mode, from vdsoctl's own (64-bit) mapping and the
/// kernel command line.
pub fn host_vsyscall(me: &VdsoFacts, cmdline: Option<&str>) -> Vsyscall {
    let maps = me.maps.as_deref().unwrap_or_default();
    vsyscall_mode(maps, cmdline, true).0
}

/// The vsyscall mode of the host.
pub fn vsyscall_check(v: &Vsyscall) -> Check {
    if arch::HOST_MACHINE != arch::machine::X86_64 {
        return Check::new(Kind::VsyscallMode, "vsyscall", Status::Ok, "no vsyscall page on this architecture", None);
    }
    match v.mode {
        VsyscallMode::Xonly => Check::new(Kind::VsyscallMode,
            "vsyscall",
            Status::Ok,
            format!("xonly (from {}): legacy calls are emulated, reads fault", v.source),
            None,
        ),
        VsyscallMode::None => Check::new(Kind::VsyscallMode,
            "vsyscall",
            Status::Ok,
            format!("none (from {}): a legacy binary that calls the vsyscall page crashes", v.source),
            None,
        ),
        VsyscallMode::Emulate => Check::new(Kind::VsyscallEmulate,
            "vsyscall",
            super::vsyscall::EMULATE,
            format!(
                "emulate (from {}): the page is readable; each legacy call traps into the kernel (`vdsoctl bench --paths vsyscall` measures it here) and strace cannot see it",
                v.source
            ),
            Some("boot with vsyscall=xonly unless a very old binary reads the page; `vdsoctl trace -a` finds callers"),
        ),
    }
}

/// The C library vdsoctl itself runs on.
pub fn libc_check(name: &str, version: Option<&str>, static_linked: bool) -> Check {
    let linked = if static_linked { "statically linked" } else { "dynamically linked" };
    Check::new(
        Kind::Libc,
        "libc",
        Status::Ok,
        format!("vdsoctl runs on {name} {} ({linked})", version.unwrap_or("(version unknown)")),
        None,
    )
}

impl HostFacts {
    /// From what was read of vdsoctl's own process and the kernel command line.
    pub fn of(me: &VdsoFacts, cmdline: Option<&str>) -> HostFacts {
        let vdso_has_hash = me.image.as_ref().ok().map(|img| img.has_hash);
        HostFacts { vdso_has_hash, vsyscall: host_vsyscall(me, cmdline).mode }
    }
}

/// What the host audit's quick bench measures: per clock id (and
/// gettimeofday, time, getrandom), libc, the vDSO and the syscall.
pub fn clock_request(max_ns: Option<f64>) -> BenchRequest {
    BenchRequest {
        clocks: arch::CLOCKS.iter().map(|c| c.id).collect(),
        functions: vec![VdsoFn::ClockGettime, VdsoFn::Gettimeofday, VdsoFn::Time, VdsoFn::Getrandom],
        paths: vec![Path::Libc, Path::Vdso, Path::Syscall],
        verify: false,
        max_ns,
        quick: true,
    }
}

/// Per clock id (and gettimeofday/time), the quick bench of
/// [`clock_request`] judged, with syscalls/call counted: a clock that
/// should be fast and is not fails, and so does one over `--max-ns`
/// through libc. Returns the checks and the bench report (for the
/// Prometheus costs).
pub fn clock_checks(run: BenchRun, kernel: &KernelFacts, max_ns: Option<f64>) -> (Vec<Check>, BenchReport) {
    let (report, _) = bench::judge(run, kernel);
    let basis = match report.basis {
        Basis::Counted => "counted",
        Basis::Timing => "timing-based: perf not permitted",
    };
    let kernel_version = kernel.version();
    let clocksource = kernel.clocksource.as_ref().map(|c| c.current.clone());
    let mut checks = Vec::new();
    let mut seen: Vec<(VdsoFn, Option<ClockRef>)> = Vec::new();
    // getrandom has its own row (`getrandom_check`), judged on the C library too.
    for r in report.results.iter().filter(|r| r.function.kind() == arch::FnKind::Clock) {
        let key = (r.function, r.clock);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let row =
            |p: Path| report.results.iter().find(|x| x.function == r.function && x.clock == r.clock && x.path == p);
        let (libc, vdso) = (row(Path::Libc), row(Path::Vdso));
        let label = r.clock.map_or_else(|| r.function.to_string(), ClockRef::text);
        let name = match r.clock.map(ClockRef::short) {
            Some(c) if r.function == VdsoFn::ClockGettime => format!("clock:{c}"),
            Some(c) => format!("{}:{c}", r.function),
            None => r.function.to_string(),
        };
        let cost = |x: Option<&BenchResult>| x.and_then(|x| x.ns_per_call).map_or_else(|| "-".to_string(), ns_text);
        let sc = |x: Option<&BenchResult>| {
            x.and_then(|x| x.syscalls_per_call).map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
        };
        let detail =
            format!("libc {} ({} syscalls/call), vdso {} ({}) [{basis}]", cost(libc), sc(libc), cost(vdso), sc(vdso));
        let clock_id = r.clock.and_then(ClockRef::id).and_then(|id| i32::try_from(id).ok());
        let exported = !matches!(r.verdict, Some(Verdict::Missing | Verdict::NotOffered));
        let should_be_fast = policy::should_be_fast(r.function, clock_id, exported, kernel_version);
        let over = policy::over_max_ns(max_ns, should_be_fast, libc.and_then(|l| l.ns_per_call));
        let lost = r.verdict.and_then(|v| policy::lost_fast_path(v, r.function, clock_id, kernel_version));
        let lost = lost.map(|l| render::host::lost_fast_path(l, &label, clocksource.as_deref()));
        let vdso_ns = vdso.and_then(|v| v.ns_per_call);
        let check = clock_check(name, &label, &detail, r.verdict, lost, over, vdso_ns);
        checks.push(check);
    }
    (checks, report)
}

/// getrandom on this host: whether this kernel's vDSO offers it (and from
/// which release on this architecture), whether the C library vdsoctl runs
/// on reads it from there (`arch::route`), and what each path costs here,
/// from the bench `report`. The verdict is `policy::getrandom_check`'s.
/// `image`: vdsoctl's own vDSO, when it could be read.
pub fn getrandom_check(
    report: &BenchReport,
    image: Option<&Image>,
    libc_name: &str,
    libc_version: Option<&str>,
) -> Check {
    let row = |p: Path| report.results.iter().find(|x| x.function == VdsoFn::Getrandom && x.path == p);
    let exported = own_vdso_symbol(image, VdsoFn::Getrandom);
    let verdict = row(Path::Libc).and_then(|r| r.verdict);
    let offered = exported.is_some() && !matches!(verdict, Some(Verdict::NotOffered | Verdict::Missing));
    let from = arch::HOST_ABI
        .and_then(|abi| {
            let (m, is_64) = abi.elf();
            arch::vdso_symbol_row(m, is_64, VdsoFn::Getrandom)
        })
        .and_then(|s| s.since);
    let route = policy::LibcRoute::of(VdsoFn::Getrandom, libc_name, libc_version, arch::HOST_MACHINE);
    let ns = |p: Path| row(p).and_then(|r| r.ns_per_call);
    let sc = |p: Path| row(p).and_then(|r| r.syscalls_per_call).map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    let mut costs = render::host::cost_pair(ns(Path::Libc), ns(Path::Vdso));
    if report.basis == Basis::Counted {
        costs += &format!("; syscalls/call libc {}, vDSO {}", sc(Path::Libc), sc(Path::Vdso));
    }
    let fact = policy::getrandom_check(offered, from, exported, route, verdict);
    let (detail, hint) = render::host::getrandom_words(&fact, &costs);
    Check::new(fact.kind(), "getrandom", fact.status(), detail, hint.as_deref())
}

/// The name under which vdsoctl's own vDSO exports `f`, from its image.
fn own_vdso_symbol(image: Option<&Image>, f: VdsoFn) -> Option<&'static str> {
    let img = image?;
    let name = arch::vdso_symbol(img.machine, img.is_64, f)?;
    img.symbols.iter().any(|s| s.name == name).then_some(name)
}

/// One clock's check from its bench verdict, a lost fast path (message and
/// hint), and a `--max-ns` budget it is over.
fn clock_check(
    name: String,
    label: &str,
    detail: &str,
    verdict: Option<Verdict>,
    lost: Option<(String, String)>,
    over: Option<(f64, f64)>,
    vdso_ns: Option<f64>,
) -> Check {
    match (verdict, lost) {
        (v, Some((message, hint))) => {
            // The vDSO itself entering the kernel is the clocksource's doing.
            let kind = match v {
                Some(Verdict::KernelFallback) => Kind::ClocksourceNoVdso,
                Some(Verdict::Missing) => Kind::VdsoExportsBroken,
                _ => Kind::ClockLostFastPath,
            };
            Check::new(kind, name, Status::Fail, format!("{message}; {detail}"), Some(&hint))
        }
        (Some(Verdict::KernelFallback), None) => {
            Check::new(Kind::ClockAlwaysSyscall, name, Status::Ok, format!("{label}: always a syscall, as on every kernel; {detail}"), None)
        }
        (Some(Verdict::NotOffered), None) => Check::new(Kind::ClockNotOffered,
            name,
            Status::Info,
            format!(
                "{label}: not offered by the {} vDSO, by design; {detail}",
                arch::HOST_ABI.map_or("this", arch::Abi::name)
            ),
            None,
        ),
        (Some(Verdict::Unsupported), None) => {
            Check::new(Kind::ClockAlwaysSyscall, name, Status::Ok, format!("{label}: the kernel rejects it here (EINVAL)"), None)
        }
        _ => match over {
            Some((max, ns)) => Check::new(Kind::ClockOverMaxNs,
                name,
                Status::Fail,
                format!("{label}: {}/call through libc, over --max-ns {max}; {detail}", ns_text(ns)),
                Some(&format!(
                    "the direct vDSO call measured {} here; when it is as slow, the clocksource or a loaded host is why",
                    vdso_ns.map_or_else(|| "-".into(), ns_text)
                )),
            ),
            None if verdict == Some(Verdict::Fast) => {
                Check::new(Kind::ClockFast, name, Status::Ok, format!("{label}: fast; {detail}"), None)
            }
            None => Check::new(Kind::ClockNoVerdict, name, Status::Warn, format!("{label}: no verdict; {detail}"), None),
        },
    }
}
