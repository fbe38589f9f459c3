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
    checks.push(Check::judged(mapping.kind(), format!("{who}vdso_mapped"), mapping.status(), mapping));
    let verdict = SysinfoEhdr::judge(process.sysinfo_ehdr, vdso.map(|d| d.start));
    checks.push(Check::judged(verdict.kind(), format!("{who}auxv_sysinfo_ehdr"), verdict.status(), verdict));
    checks
}

/// What a process's vDSO image says of the symbols its C library binds,
/// as data: render/host.rs words it into the `vdso_symbols` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VdsoSymbols {
    /// The image could not be read (`error`).
    Unreadable { error: String },
    /// Every symbol the C library binds is exported (`exported`, with
    /// `version`), with these hash tables; `others`: every other function
    /// the image exports and what it is for (an alias, another syscall's
    /// fast path, no syscall's, or unknown to vdsoctl) — none dropped.
    Exports {
        exported: Vec<&'static str>,
        version: &'static str,
        has_hash: bool,
        has_gnu_hash: bool,
        others: Vec<(String, arch::ExportRole)>,
    },
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
        let others = other_exports(img);
        return VdsoSymbols::Exports {
            exported,
            version,
            has_hash: img.has_hash,
            has_gnu_hash: img.has_gnu_hash,
            others,
        };
    }
    let hash_only = problems.iter().all(|p| *p == ImageProblem::GnuHashOnly);
    VdsoSymbols::Problems { problems, hash_only, musl }
}

/// Every defined function (or untyped) symbol of the image that is not a
/// function of the table, with its role, in the image's order.
pub fn other_exports(img: &crate::inspect::elf::Image) -> Vec<(String, arch::ExportRole)> {
    exports(img).into_iter().filter(|(_, role)| !matches!(role, arch::ExportRole::Function(_))).collect()
}

/// Whether a symbol is one a vDSO exports: defined, a function (or
/// untyped), named.
pub fn is_export(s: &crate::inspect::elf::Symbol) -> bool {
    const STT_NOTYPE: u8 = 0;
    const STT_FUNC: u8 = 2;
    s.shndx != 0 && matches!(s.kind, STT_FUNC | STT_NOTYPE) && !s.name.is_empty()
}

/// Every export of the image, each once, with its role, in the image's
/// order: none is dropped (a name the table lacks is `Unknown`).
pub fn exports(img: &crate::inspect::elf::Image) -> Vec<(String, arch::ExportRole)> {
    let mut out: Vec<(String, arch::ExportRole)> = Vec::new();
    for s in img.symbols.iter().filter(|s| is_export(s)) {
        if !out.iter().any(|(n, _)| *n == s.name) {
            out.push((s.name.clone(), arch::export_role(img.machine, img.is_64, &s.name)));
        }
    }
    out
}

/// The `{who}vdso_symbols` row of [`vdso_symbols`], worded by render/host.rs.
pub fn vdso_symbols_check(process: &VdsoFacts, who: &str, musl: bool) -> Check {
    let fact = vdso_symbols(process, musl);
    Check::fact(fact.kind(), format!("{who}vdso_symbols"), fact.status(), fact)
}

/// One of the host's own rows (clocksource, TSC, kernel, vsyscall, libc),
/// judged, as data: render/host.rs words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRow {
    /// /sys/devices/system/clocksource is not readable.
    ClocksourceUnreadable,
    /// The `current` clocksource of `available`; whether it has a vDSO mode
    /// (`None`: only when the hypervisor marks it stable).
    Clocksource { current: String, available: Vec<String>, vdso_mode: Option<bool> },
    /// The x86 TSC flags of [`TSC_FLAGS`] /proc/cpuinfo lacks.
    TscFlags { missing: Vec<&'static str> },
    /// The kernel log's clock lines that mark the TSC unstable.
    KernelLog { lines: Vec<String> },
    /// /dev/kmsg is not readable (`error`, as errno text).
    KernelLogUnreadable { error: String },
    /// /proc/sys/kernel/osrelease is not readable.
    KernelVersionUnreadable,
    /// The clocks this `release`'s vDSO serves, and those it serves only
    /// from a later one.
    KernelVersion { release: String, served: Vec<&'static str>, not_yet: Vec<(&'static str, (u32, u32))> },
    /// No vsyscall page on this architecture.
    NoVsyscallPage,
    /// The vsyscall `mode`, and who said it (`source`).
    Vsyscall { mode: VsyscallMode, source: String },
    /// The C library vdsoctl runs on.
    Libc { name: String, version: Option<String>, static_linked: bool },
}

/// The TSC flags that make the TSC trusted as a clocksource.
pub const TSC_FLAGS: [&str; 3] = ["constant_tsc", "nonstop_tsc", "tsc_known_freq"];

impl HostRow {
    /// The row, its fact worded at output.
    pub fn check(self) -> Check {
        Check::fact(self.kind(), self.name(), self.status(), self)
    }

    /// The row's name.
    pub fn name(&self) -> &'static str {
        match self {
            HostRow::ClocksourceUnreadable | HostRow::Clocksource { .. } => "clocksource",
            HostRow::TscFlags { .. } => "tsc_flags",
            HostRow::KernelLog { .. } | HostRow::KernelLogUnreadable { .. } => "kernel_log",
            HostRow::KernelVersionUnreadable | HostRow::KernelVersion { .. } => "kernel_version",
            HostRow::NoVsyscallPage | HostRow::Vsyscall { .. } => "vsyscall",
            HostRow::Libc { .. } => "libc",
        }
    }

    /// Whether the TSC is distrusted for want of these flags.
    fn tsc_unstable(missing: &[&str]) -> bool {
        missing.contains(&"constant_tsc") || missing.contains(&"nonstop_tsc")
    }

    pub fn kind(&self) -> Kind {
        match self {
            HostRow::ClocksourceUnreadable => Kind::ClocksourceUnreadable,
            HostRow::Clocksource { vdso_mode: Some(true), .. } => Kind::ClocksourceVdso,
            HostRow::Clocksource { vdso_mode: Some(false), .. } => Kind::ClocksourceNoVdso,
            HostRow::Clocksource { vdso_mode: None, .. } => Kind::ClocksourceMaybeVdso,
            HostRow::TscFlags { missing } if HostRow::tsc_unstable(missing) => Kind::TscUnstable,
            HostRow::TscFlags { .. } => Kind::TscOk,
            HostRow::KernelLog { lines } if lines.is_empty() => Kind::TscOk,
            HostRow::KernelLog { .. } => Kind::TscUnstable,
            HostRow::KernelLogUnreadable { .. } | HostRow::KernelVersionUnreadable => Kind::KernelUnreadable,
            HostRow::KernelVersion { not_yet, .. } if not_yet.is_empty() => Kind::KernelServesClocks,
            HostRow::KernelVersion { .. } => Kind::KernelOldClocks,
            HostRow::NoVsyscallPage => Kind::VsyscallMode,
            HostRow::Vsyscall { mode: VsyscallMode::Emulate, .. } => Kind::VsyscallEmulate,
            HostRow::Vsyscall { .. } => Kind::VsyscallMode,
            HostRow::Libc { .. } => Kind::Libc,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            HostRow::ClocksourceUnreadable | HostRow::KernelLogUnreadable { .. } | HostRow::KernelVersionUnreadable => {
                Status::Skip
            }
            HostRow::Clocksource { vdso_mode: Some(true), .. } => Status::Ok,
            HostRow::Clocksource { vdso_mode: Some(false), .. } => Status::Fail,
            HostRow::Clocksource { vdso_mode: None, .. } => Status::Warn,
            HostRow::TscFlags { missing } if HostRow::tsc_unstable(missing) => Status::Warn,
            HostRow::KernelLog { lines } if !lines.is_empty() => Status::Warn,
            HostRow::KernelVersion { not_yet, .. } if !not_yet.is_empty() => Status::Warn,
            HostRow::Vsyscall { mode: VsyscallMode::Emulate, .. } => super::vsyscall::EMULATE,
            HostRow::TscFlags { .. }
            | HostRow::KernelLog { .. }
            | HostRow::KernelVersion { .. }
            | HostRow::NoVsyscallPage
            | HostRow::Vsyscall { .. }
            | HostRow::Libc { .. } => Status::Ok,
        }
    }
}

/// The clocksource and whether it has a vDSO mode.
pub fn clocksource_check(cs: Option<&Clocksource>) -> Check {
    let row = match cs {
        None => HostRow::ClocksourceUnreadable,
        Some(cs) => HostRow::Clocksource {
            current: cs.current.clone(),
            available: cs.available.clone(),
            vdso_mode: kernel::clocksource_has_vdso_mode(&cs.current),
        },
    };
    row.check()
}

/// x86 TSC flags and kernel log lines that mark it unstable.
/// `flags`: /proc/cpuinfo's; `kmsg`: the kernel log's clock lines (x86 only).
pub fn tsc_checks(flags: Option<&[String]>, kmsg: &std::io::Result<Vec<String>>) -> Vec<Check> {
    let mut rows = Vec::new();
    if let Some(flags) = flags {
        let missing = TSC_FLAGS.iter().copied().filter(|f| !flags.iter().any(|g| g == f)).collect();
        rows.push(HostRow::TscFlags { missing });
    }
    rows.push(match kmsg {
        Ok(lines) => HostRow::KernelLog { lines: lines.clone() },
        Err(e) => HostRow::KernelLogUnreadable { error: crate::error::errno_text(e) },
    });
    rows.into_iter().map(HostRow::check).collect()
}

/// Which clock ids this kernel's vDSO serves, stated from its version.
/// `release`: /proc/sys/kernel/osrelease (empty when unreadable).
pub fn kernel_version_check(release: &str) -> Check {
    let Some(version) = kernel::parse_version(release) else {
        return HostRow::KernelVersionUnreadable.check();
    };
    let (mut served, mut not_yet) = (Vec::new(), Vec::new());
    for c in arch::CLOCKS.iter().filter(|c| c.class != ClockClass::AlwaysSyscall) {
        match c.vdso_since(arch::HOST_MACHINE) {
            Some(v) if version >= v => served.push(c.short_name()),
            Some(v) => not_yet.push((c.short_name(), v)),
            None => {}
        }
    }
    HostRow::KernelVersion { release: release.to_string(), served, not_yet }.check()
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
        return HostRow::NoVsyscallPage.check();
    }
    HostRow::Vsyscall { mode: v.mode, source: v.source.clone() }.check()
}

/// The C library vdsoctl itself runs on.
pub fn libc_check(name: &str, version: Option<&str>, static_linked: bool) -> Check {
    let row = HostRow::Libc { name: name.to_string(), version: version.map(str::to_string), static_linked };
    row.check()
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
    let kernel_version = kernel.version();
    let clocksource = kernel.clocksource.as_ref().map(|c| c.current.clone());
    let mut checks = Vec::new();
    let mut seen: Vec<(VdsoFn, Option<ClockRef>)> = Vec::new();
    // getrandom has its own row (`getrandom_check`), judged on the C library too.
    let clock_row = |f: VdsoFn| match f.kind() {
        arch::FnKind::Clock => true,
        arch::FnKind::Cpu | arch::FnKind::Random | arch::FnKind::Futex => false,
    };
    for r in report.results.iter().filter(|r| clock_row(r.function)) {
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
        let ns = |x: Option<&BenchResult>| x.and_then(|x| x.ns_per_call);
        let sc = |x: Option<&BenchResult>| x.and_then(|x| x.syscalls_per_call);
        let clock_id = r.clock.and_then(ClockRef::id).and_then(|id| i32::try_from(id).ok());
        let exported = !matches!(r.verdict, Some(Verdict::Missing | Verdict::NotOffered));
        let should_be_fast = policy::should_be_fast(r.function, clock_id, exported, kernel_version);
        let over = policy::over_max_ns(max_ns, should_be_fast, ns(libc));
        let lost = r.verdict.and_then(|v| policy::lost_fast_path(v, r.function, clock_id, kernel_version));
        let row = ClockRow {
            name,
            label,
            libc: (ns(libc), sc(libc)),
            vdso: (ns(vdso), sc(vdso)),
            counted: report.basis == Basis::Counted,
            verdict: r.verdict,
            lost,
            clocksource: clocksource.clone(),
            over,
        };
        checks.push(Check::fact(row.kind(), row.name.clone(), row.status(), row));
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
    let sc = |p: Path| row(p).and_then(|r| r.syscalls_per_call);
    let counted = (report.basis == Basis::Counted).then(|| (sc(Path::Libc), sc(Path::Vdso)));
    let fact = policy::getrandom_check(offered, from, exported, route, verdict);
    let fixed_in = match &fact {
        policy::GetrandomFact::LibcSyscall { route: policy::LibcRoute::Older { since, .. }, .. } => {
            Some(format!("{}.{}", since.0, since.1))
        }
        _ => None,
    };
    let costs = super::row::Costs {
        libc_ns: ns(Path::Libc),
        vdso_ns: ns(Path::Vdso),
        libc_syscalls_per_call: counted.and_then(|c| c.0),
        vdso_syscalls_per_call: counted.and_then(|c| c.1),
        fixed_in,
    };
    let row = GetrandomRow { fact, libc_ns: ns(Path::Libc), vdso_ns: ns(Path::Vdso), counted };
    Check { costs: Some(costs), ..Check::fact(row.fact.kind(), "getrandom", row.fact.status(), row) }
}

/// The host's `getrandom` row: the fact, and what each path costs here
/// (ns; with `counted`, libc's and the vDSO's syscalls/call).
#[derive(Debug, Clone, PartialEq)]
pub struct GetrandomRow {
    pub fact: policy::GetrandomFact,
    pub libc_ns: Option<f64>,
    pub vdso_ns: Option<f64>,
    pub counted: Option<(Option<f64>, Option<f64>)>,
}

/// The name under which vdsoctl's own vDSO exports `f`, from its image.
fn own_vdso_symbol(image: Option<&Image>, f: VdsoFn) -> Option<&'static str> {
    let img = image?;
    let name = arch::vdso_symbol(img.machine, img.is_64, f)?;
    img.symbols.iter().any(|s| s.name == name).then_some(name)
}

/// One clock's row, judged from the quick bench: its costs per path
/// (ns, syscalls/call; `counted` or timing-based), its verdict, a lost fast
/// path (`clocksource`: the current one), a `--max-ns` budget it is over
/// (max, ns). render/host.rs words it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockRow {
    pub name: String,
    pub label: String,
    pub libc: (Option<f64>, Option<f64>),
    pub vdso: (Option<f64>, Option<f64>),
    pub counted: bool,
    pub verdict: Option<Verdict>,
    pub lost: Option<policy::LostFastPath>,
    pub clocksource: Option<String>,
    pub over: Option<(f64, f64)>,
}

impl ClockRow {
    pub fn kind(&self) -> Kind {
        match (self.verdict, self.lost) {
            // The vDSO itself entering the kernel is the clocksource's doing.
            (Some(Verdict::KernelFallback), Some(_)) => Kind::ClocksourceNoVdso,
            (Some(Verdict::Missing), Some(_)) => Kind::VdsoExportsBroken,
            (_, Some(_)) => Kind::ClockLostFastPath,
            (Some(Verdict::KernelFallback) | Some(Verdict::Unsupported), None) => Kind::ClockAlwaysSyscall,
            (Some(Verdict::NotOffered), None) => Kind::ClockNotOffered,
            _ if self.over.is_some() => Kind::ClockOverMaxNs,
            (Some(Verdict::Fast), None) => Kind::ClockFast,
            _ => Kind::ClockNoVerdict,
        }
    }

    pub fn status(&self) -> Status {
        match self.kind() {
            Kind::ClocksourceNoVdso | Kind::VdsoExportsBroken | Kind::ClockLostFastPath | Kind::ClockOverMaxNs => {
                Status::Fail
            }
            Kind::ClockNotOffered => Status::Info,
            Kind::ClockNoVerdict => Status::Warn,
            _ => Status::Ok,
        }
    }
}
