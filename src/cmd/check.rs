//! `check`: the whole host audit in one go — every known way the vDSO fast
//! path is lost, each with a status, a detail and a hint — and an exit code
//! for CI.

use super::Outcome;
use crate::arch::{self, ClockClass};
use crate::cli::{BenchArgs, CheckArgs, TraceArgs};
use crate::cmd::bench::{Basis, BenchReport, BenchResult};
use crate::error::{Error, Result};
use crate::inspect::auxv::{self, AT_SYSINFO_EHDR};
use crate::inspect::exe::{self, LibcKind};
use crate::inspect::kernel::{self, VsyscallMode};
use crate::inspect::{elf, Process};
use crate::measure::bench::{Path, Verdict};
use crate::model::Severity;
use crate::output::{emit, Output, Prometheus, Render};
use serde::Serialize;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Could not run here (e.g. needs root); never fails the audit.
    Skip,
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Skip => "SKIP",
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }

    /// The Prometheus gauge value: 0 ok, 1 warn, 2 fail, -1 skipped.
    fn gauge(self) -> f64 {
        match self {
            Status::Skip => -1.0,
            Status::Ok => 0.0,
            Status::Warn => 1.0,
            Status::Fail => 2.0,
        }
    }
}

/// One check's result (DESIGN keys: name, status, detail, hint).
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
    /// The remediation; `null` when there is nothing to do.
    pub hint: Option<String>,
}

impl Check {
    fn new(name: impl Into<String>, status: Status, detail: impl Into<String>, hint: Option<&str>) -> Check {
        Check { name: name.into(), status, detail: detail.into(), hint: hint.map(str::to_string) }
    }
}

/// The audit (DESIGN keys: checks, status).
#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub checks: Vec<Check>,
    /// The worst status among the checks (SKIP counts as OK).
    pub status: Status,
    /// Whether `--strict` made WARN fail the audit.
    pub strict: bool,
    /// The quick bench behind the clock checks (its costs go to Prometheus).
    #[serde(skip)]
    pub bench: Option<BenchReport>,
    /// The process audited with `-p`: its `process_*` checks carry a `pid`
    /// label in Prometheus.
    #[serde(skip)]
    pub pid: Option<i32>,
}

/// The vDSO mapping and AT_SYSINFO_EHDR of a process, as checks.
pub fn mapping_checks(process: &Process, who: &str) -> Vec<Check> {
    let mut checks = Vec::new();
    let maps = match process.maps() {
        Ok(m) => m,
        Err(e) => return vec![Check::new(format!("{who}vdso_mapped"), Status::Fail, e.to_string(), None)],
    };
    let vdso = maps.iter().find(|m| m.name() == "[vdso]");
    let vvar = maps.iter().find(|m| m.name() == "[vvar]");
    checks.push(match (vdso, vvar) {
        (Some(d), Some(v)) => Check::new(
            format!("{who}vdso_mapped"),
            Status::Ok,
            format!("[vdso] at {:#x} ({} bytes), [vvar] at {:#x}", d.start, d.size(), v.start),
            None,
        ),
        (Some(_), None) => Check::new(
            format!("{who}vdso_mapped"),
            Status::Fail,
            "[vdso] is mapped but [vvar] is not: the vDSO has no time data to read",
            Some("a sandbox unmapped [vvar]; allow it in the runtime's memory policy"),
        ),
        (None, _) => Check::new(
            format!("{who}vdso_mapped"),
            Status::Fail,
            format!("pid {} has no [vdso]: every clock read is a syscall", process.pid()),
            Some("check `vdso=0` on the kernel command line, or the sandbox/loader that unmaps the vDSO"),
        ),
    });
    let ehdr = process.auxv().ok().and_then(|(entries, _)| auxv::get(&entries, AT_SYSINFO_EHDR));
    checks.push(match (ehdr, vdso) {
        (Some(a), Some(d)) if a == d.start => {
            Check::new(format!("{who}auxv_sysinfo_ehdr"), Status::Ok, format!("AT_SYSINFO_EHDR {a:#x} = [vdso]"), None)
        }
        (Some(a), Some(d)) => Check::new(
            format!("{who}auxv_sysinfo_ehdr"),
            Status::Fail,
            format!("AT_SYSINFO_EHDR {a:#x} but [vdso] at {:#x}: libc looks in the wrong place", d.start),
            Some("something moved the vDSO after exec (CRIU, a sandbox); restart the process"),
        ),
        (None, _) => Check::new(
            format!("{who}auxv_sysinfo_ehdr"),
            Status::Fail,
            "no AT_SYSINFO_EHDR in the auxiliary vector: libc cannot find the vDSO",
            Some("check the loader or sandbox that rewrites the auxiliary vector"),
        ),
        (Some(a), None) => Check::new(
            format!("{who}auxv_sysinfo_ehdr"),
            Status::Fail,
            format!("AT_SYSINFO_EHDR {a:#x} points at no [vdso] mapping"),
            Some("the vDSO was unmapped after exec"),
        ),
    });
    checks
}

/// The vDSO image of a process exports what its C library binds.
/// `musl`: the process uses musl, for which a missing DT_HASH is fatal.
pub fn vdso_symbols_check(process: &Process, who: &str, musl: bool) -> Check {
    let name = format!("{who}vdso_symbols");
    let image =
        process.vdso_mapping().and_then(|m| process.read_mem(m.start, m.size())).and_then(|bytes| elf::parse(&bytes));
    let img = match image {
        Ok(img) => img,
        Err(e) => return Check::new(name, Status::Fail, format!("cannot read the vDSO image: {e}"), None),
    };
    let findings = super::dump::findings(&img);
    let hash = match (img.has_hash, img.has_gnu_hash) {
        (true, true) => "DT_HASH and DT_GNU_HASH",
        (true, false) => "DT_HASH",
        (false, true) => "DT_GNU_HASH only",
        (false, false) => "no hash table",
    };
    let exported: Vec<&str> = arch::vdso_abi(img.machine, img.is_64)
        .map(|abi| abi.symbols.iter().map(|s| s.name).filter(|n| img.symbols.iter().any(|s| &s.name == n)).collect())
        .unwrap_or_default();
    let version = arch::vdso_abi(img.machine, img.is_64).map_or("?", |a| a.version);
    let problems: Vec<&crate::model::Finding> = findings
        .iter()
        .filter(|f| f.severity >= Severity::Warn)
        .filter(|f| musl || !f.message.contains("no DT_HASH"))
        .collect();
    if problems.is_empty() {
        return Check::new(name, Status::Ok, format!("exports {} ({version}); {hash}", exported.join(" ")), None);
    }
    let hash_only = problems.iter().all(|f| f.message.contains("no DT_HASH"));
    Check::new(
        name,
        if hash_only && !musl { Status::Warn } else { Status::Fail },
        problems.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("; "),
        problems.iter().find_map(|f| f.hint.as_deref()).or(Some("`vdsoctl dump` shows the whole image")),
    )
}

/// The clocksource and whether it has a vDSO mode.
pub fn clocksource_check() -> Check {
    let Some(cs) = kernel::clocksource() else {
        return Check::new(
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
        Some(true) => Check::new("clocksource", Status::Ok, format!("{detail}; it has a vDSO mode"), None),
        Some(false) => Check::new(
            "clocksource",
            Status::Fail,
            format!("{detail}; {} has no vDSO mode: REALTIME, MONOTONIC, BOOTTIME, TAI and MONOTONIC_RAW reads are all syscalls (COARSE clocks and time() still are not)", cs.current),
            switch_hint.or(Some("boot with a clocksource that has a vDSO mode (tsc; on VMs a stable kvm-clock or the Hyper-V TSC page)")),
        ),
        None => Check::new(
            "clocksource",
            Status::Warn,
            format!("{detail}; {} has a vDSO mode only when the hypervisor marks it stable — the clock checks below prove which", cs.current),
            switch_hint,
        ),
    }
}

/// x86 TSC flags and kernel log lines that mark it unstable.
pub fn tsc_checks() -> Vec<Check> {
    if arch::HOST_MACHINE != arch::machine::X86_64 {
        return Vec::new();
    }
    let mut checks = Vec::new();
    if let Some(flags) = kernel::cpu_flags() {
        let want = ["constant_tsc", "nonstop_tsc", "tsc_known_freq"];
        let missing: Vec<&str> = want.iter().copied().filter(|f| !flags.iter().any(|g| g == f)).collect();
        checks.push(if missing.is_empty() {
            Check::new("tsc_flags", Status::Ok, want.join(" "), None)
        } else {
            Check::new(
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
    checks.push(match kernel::kmsg_clock_problems() {
        Ok(lines) if lines.is_empty() => Check::new("kernel_log", Status::Ok, "no TSC/clocksource instability in the kernel log", None),
        Ok(lines) => Check::new(
            "kernel_log",
            Status::Warn,
            format!("{} line(s), last: {}", lines.len(), lines.last().map_or("", String::as_str)),
            Some("the clocksource watchdog distrusted the TSC; see `dmesg | grep -i clocksource` and check the host's TSC"),
        ),
        Err(e) => Check::new(
            "kernel_log",
            Status::Skip,
            format!("/dev/kmsg not readable ({e}) — needs root or kernel.dmesg_restrict=0"),
            Some("run as root to include this check"),
        ),
    });
    checks
}

/// Which clock ids this kernel's vDSO serves, stated from its version.
pub fn kernel_version_check() -> Check {
    let release = kernel::release().unwrap_or_default();
    let Some(version) = kernel::parse_version(&release) else {
        return Check::new("kernel_version", Status::Skip, "cannot read /proc/sys/kernel/osrelease", None);
    };
    let (mut served, mut not_yet) = (Vec::new(), Vec::new());
    for c in arch::CLOCKS.iter().filter(|c| c.class != ClockClass::AlwaysSyscall) {
        match c.vdso_since(arch::HOST_MACHINE) {
            Some(v) if version >= v => served.push(c.name.trim_start_matches("CLOCK_")),
            Some(v) => not_yet.push(format!("{} (from {}.{})", c.name.trim_start_matches("CLOCK_"), v.0, v.1)),
            None => {}
        }
    }
    let source = "source: the kernel's lib/vdso and arch vdso history";
    if not_yet.is_empty() {
        Check::new(
            "kernel_version",
            Status::Ok,
            format!("{release}: the vDSO serves {} ({source})", served.join(" ")),
            None,
        )
    } else {
        Check::new(
            "kernel_version",
            Status::Warn,
            format!("{release}: the vDSO serves {} but not {} ({source})", served.join(" "), not_yet.join(", ")),
            Some("upgrade the kernel, or read those clocks less often"),
        )
    }
}

/// The vsyscall mode of the host.
pub fn vsyscall_check(process: &Process) -> Check {
    if arch::HOST_MACHINE != arch::machine::X86_64 {
        return Check::new("vsyscall", Status::Ok, "no vsyscall page on this architecture", None);
    }
    let maps = process.maps().unwrap_or_default();
    let (v, _) = super::maps::vsyscall_mode(&maps, kernel::cmdline().as_deref(), true);
    match v.mode {
        VsyscallMode::Xonly => Check::new(
            "vsyscall",
            Status::Ok,
            format!("xonly (from {}): legacy calls are emulated, reads fault", v.source),
            None,
        ),
        VsyscallMode::None => Check::new(
            "vsyscall",
            Status::Ok,
            format!("none (from {}): a legacy binary that calls the vsyscall page crashes", v.source),
            None,
        ),
        VsyscallMode::Emulate => Check::new(
            "vsyscall",
            Status::Warn,
            format!(
                "emulate (from {}): the page is readable; each legacy call costs ~1–2 µs and strace cannot see it",
                v.source
            ),
            Some("boot with vsyscall=xonly unless a very old binary reads the page; `vdsoctl trace -a` finds callers"),
        ),
    }
}

/// The C library vdsoctl itself runs on.
pub fn libc_check() -> Check {
    let (name, version) = crate::measure::sys::libc::own_libc();
    let linked = if cfg!(target_feature = "crt-static") { "statically linked" } else { "dynamically linked" };
    Check::new(
        "libc",
        Status::Ok,
        format!("vdsoctl runs on {name} {} ({linked})", version.as_deref().unwrap_or("(version unknown)")),
        None,
    )
}

/// What a target's executable means for its clock reads.
pub fn process_exe_check(process: &Process) -> Check {
    let name = "process_binary";
    let info = match process.exe_file().and_then(|f| exe::read(&f)) {
        Ok(i) => i,
        Err(e) => return Check::new(name, Status::Skip, format!("cannot read the executable: {e}"), None),
    };
    let path = process.exe_path().map_or_else(|| "?".to_string(), |p| p.display().to_string());
    let class = if info.is_64 { "64-bit" } else { "32-bit" };
    let arch_name = arch::machine_name(info.machine);
    let libc = match info.libc {
        LibcKind::Glibc => "glibc",
        LibcKind::Musl => "musl",
        LibcKind::Bionic => "bionic",
        LibcKind::Go => "the Go runtime (no libc; it calls the vDSO itself)",
        LibcKind::Unknown => "an unknown libc",
    };
    let linkage = if info.is_static() {
        "statically linked".to_string()
    } else {
        format!("dynamic ({})", info.interp.as_deref().unwrap_or(""))
    };
    let mut detail = format!("pid {} {path}: {class} {arch_name}, {linkage}, {libc}", process.pid());
    let mut status = Status::Ok;
    let mut hint = None;
    if !info.is_64 && arch::HOST_MACHINE == arch::machine::X86_64 {
        status = Status::Warn;
        detail += "; a 32-bit process uses the compat vDSO and its clock syscalls are invisible to syscalls:sys_enter_* tracepoints";
        hint = Some("`vdsoctl trace -p PID` counts them through raw_syscalls; rebuild as 64-bit if you can");
    }
    if info.is_static() {
        status = Status::Warn;
        detail += "; statically linked: its libc (and whether that libc uses the vDSO for each clock) was fixed at build time";
        hint = Some("confirm with `vdsoctl trace -p PID`; rebuild against a current libc if clock syscalls show up");
    }
    Check::new(name, status, detail, hint)
}

/// Per clock id (and gettimeofday/time), a quick bench through libc, the
/// vDSO and the syscall, with syscalls/call counted: a clock that should be
/// fast and is not fails, and so does one over `--max-ns` through libc.
/// Returns the checks and the bench report (for the Prometheus costs).
pub fn clock_checks(max_ns: Option<f64>) -> (Vec<Check>, Option<BenchReport>) {
    let args = BenchArgs {
        clocks: Vec::new(),
        functions: vec!["clock_gettime".into(), "gettimeofday".into(), "time".into()],
        paths: vec!["libc".into(), "vdso".into(), "syscall".into()],
        verify: false,
        max_ns,
        quick: true,
    };
    let report = match super::bench::measure_report(&args) {
        Ok((r, _)) => r,
        Err(e) => return (vec![Check::new("clocks", Status::Skip, format!("cannot bench: {e}"), None)], None),
    };
    let basis = match report.basis {
        Basis::Counted => "counted",
        Basis::Timing => "timing-based: perf not permitted",
    };
    let kernel_version = kernel::release().as_deref().and_then(kernel::parse_version);
    let mut checks = Vec::new();
    let mut seen: Vec<(&str, Option<String>)> = Vec::new();
    for r in &report.results {
        let key = (r.function, r.clock.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let row =
            |p: Path| report.results.iter().find(|x| x.function == r.function && x.clock == r.clock && x.path == p);
        let (libc, vdso) = (row(Path::Libc), row(Path::Vdso));
        let label = r.clock.as_deref().map_or_else(|| r.function.to_string(), |c| c.to_string());
        let name = match &r.clock {
            Some(c) if r.function == "clock_gettime" => format!("clock:{}", c.trim_start_matches("CLOCK_")),
            Some(c) => format!("{}:{}", r.function, c.trim_start_matches("CLOCK_")),
            None => r.function.to_string(),
        };
        let cost = |x: Option<&BenchResult>| {
            x.and_then(|x| x.ns_per_call).map_or_else(|| "-".to_string(), |ns| format!("{ns:.1} ns"))
        };
        let sc = |x: Option<&BenchResult>| {
            x.and_then(|x| x.syscalls_per_call).map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
        };
        let detail =
            format!("libc {} ({} syscalls/call), vdso {} ({}) [{basis}]", cost(libc), sc(libc), cost(vdso), sc(vdso));
        let clock_id = r.clock.as_deref().and_then(arch::parse_clock);
        let should_be_fast = clock_id.map_or(true, |id| arch::vdso_serves(id, arch::HOST_MACHINE, kernel_version));
        let over = max_ns.zip(libc.and_then(|l| l.ns_per_call)).filter(|(max, ns)| should_be_fast && ns > max);
        let lost = r.verdict.and_then(|v| v.lost_fast_path(&label, r.function, should_be_fast));
        let check = match (r.verdict, lost) {
            (_, Some((message, hint))) => {
                Check { name, status: Status::Fail, detail: format!("{message}; {detail}"), hint: Some(hint) }
            }
            (Some(Verdict::KernelFallback), None) => {
                Check::new(name, Status::Ok, format!("{label}: always a syscall, as on every kernel; {detail}"), None)
            }
            (Some(Verdict::Unsupported), None) => {
                Check::new(name, Status::Ok, format!("{label}: the kernel rejects it here (EINVAL)"), None)
            }
            _ => match over {
                Some((max, ns)) => Check::new(
                    name,
                    Status::Fail,
                    format!("{label}: {ns:.1} ns/call through libc, over --max-ns {max}; {detail}"),
                    Some("a vDSO call costs ~5–50 ns; a higher cost means a slow clocksource or a loaded host"),
                ),
                None if r.verdict == Some(Verdict::Fast) => {
                    Check::new(name, Status::Ok, format!("{label}: fast; {detail}"), None)
                }
                None => Check::new(name, Status::Warn, format!("{label}: no verdict; {detail}"), None),
            },
        };
        checks.push(check);
    }
    (checks, Some(report))
}

/// A short trace of the target's clock syscalls and vsyscall emulations:
/// any the vDSO should have served fails.
pub fn process_trace_check(pid: i32, secs: f64) -> Check {
    let name = "process_trace";
    let args = TraceArgs {
        pid: vec![pid],
        all: false,
        duration: Some(std::time::Duration::from_secs_f64(secs)),
        ..Default::default()
    };
    let report = match super::trace::collect(&args, &Output::plain(crate::output::Format::Json)) {
        Ok(r) => r,
        Err(e @ Error::Facility { .. }) => {
            return Check::new(
                name,
                Status::Skip,
                format!("cannot trace here: {e}"),
                Some("run as root to include this check"),
            )
        }
        Err(e) => return Check::new(name, Status::Fail, format!("cannot trace pid {pid}: {e}"), None),
    };
    let secs_text = format!("{:.1}s", report.duration_ns as f64 / 1e9);
    let bad: Vec<String> = report
        .counts
        .iter()
        .filter(|r| !r.expected)
        .map(|r| format!("{} {} ×{} ({:.0}/s)", r.syscall, r.clock.as_deref().unwrap_or(""), r.count, r.per_sec))
        .chain(report.vsyscall_emulations.iter().map(|v| format!("[vsyscall] {} ×{}", v.function, v.count)))
        .collect();
    let expected: u64 = report.counts.iter().filter(|r| r.expected).map(|r| r.count).sum();
    if bad.is_empty() {
        Check::new(
            name,
            Status::Ok,
            format!("in {secs_text}: no clock syscalls the vDSO should serve ({expected} expected ones, e.g. CPU-time clocks)"),
            None,
        )
    } else {
        Check::new(
            name,
            Status::Fail,
            format!("in {secs_text}: {} — the vDSO is bypassed", bad.join(", ")),
            Some("`vdsoctl trace -p PID` shows rates per clock id; look for raw syscall(), the libc it links, or LD_PRELOAD"),
        )
    }
}

/// The host audit: vdsoctl's own vDSO, the clocksource, TSC, kernel,
/// vsyscall mode, libc, and the quick clock bench (its report is returned
/// for the cost figures). `check` and `serve` both run exactly this list.
pub fn host_checks(max_ns: Option<f64>) -> Result<(Vec<Check>, Option<BenchReport>)> {
    let me = Process::open(None)?;
    let mut checks = mapping_checks(&me, "");
    checks.push(vdso_symbols_check(&me, "", cfg!(target_env = "musl")));
    checks.push(clocksource_check());
    checks.extend(tsc_checks());
    checks.push(kernel_version_check());
    checks.push(vsyscall_check(&me));
    checks.push(libc_check());
    let (clocks, bench) = clock_checks(max_ns);
    checks.extend(clocks);
    Ok((checks, bench))
}

/// Gather every check.
pub fn gather(args: &CheckArgs) -> Result<CheckReport> {
    // Bad thresholds are usage errors up front: a CI job with a typo must not
    // go green on an audit that silently skipped its clock checks.
    if let Some(n) = args.max_ns {
        if !(n.is_finite() && n > 0.0) {
            return Err(Error::Usage(format!(
                "--max-ns {n} is not a positive number of nanoseconds — give the budget per call, e.g. --max-ns 100"
            )));
        }
    }
    if let Some(s) = args.trace {
        if !(s.is_finite() && s > 0.0 && s < 1e9) {
            return Err(Error::Usage(format!("--trace wants a number of seconds above 0, got {s} — e.g. --trace 2")));
        }
    }
    if args.trace.is_some() && args.pid.is_none() {
        return Err(Error::Usage("--trace traces the process given with -p PID; add -p".into()));
    }
    // The target first: an unreadable one is "could not inspect" (exit 3),
    // not a failed audit, and is said before any measuring.
    let target = match args.pid {
        Some(pid) => {
            let target = Process::open(Some(pid))?;
            target.maps()?;
            Some(target)
        }
        None => None,
    };
    let (mut checks, bench) = host_checks(args.max_ns)?;
    if let Some(target) = &target {
        checks.extend(mapping_checks(target, "process_"));
        let musl = target.exe_file().and_then(|f| exe::read(&f)).is_ok_and(|i| i.libc == LibcKind::Musl);
        checks.push(vdso_symbols_check(target, "process_", musl));
        checks.push(process_exe_check(target));
        if let Some(secs) = args.trace {
            checks.push(process_trace_check(target.pid(), secs));
        }
    }
    let worst = checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok).max(Status::Ok);
    Ok(CheckReport { checks, status: worst, strict: args.strict, bench, pid: target.as_ref().map(Process::pid) })
}

/// `vdsoctl check`.
pub fn run(args: &CheckArgs, out: &Output) -> Result<Outcome> {
    let report = gather(args)?;
    emit(out, &report)?;
    Ok(Outcome::from_crossed(report.status == Status::Fail || (args.strict && report.status == Status::Warn)))
}

impl Render for CheckReport {
    fn render_table(&self, out: &Output) -> String {
        let mut t = out.table(&["CHECK", "STATUS", "DETAIL"]);
        for c in &self.checks {
            let mut cell = comfy_table::Cell::new(c.status.label());
            if out.color {
                cell = cell.fg(match c.status {
                    Status::Ok => comfy_table::Color::Green,
                    Status::Warn => comfy_table::Color::Yellow,
                    Status::Fail => comfy_table::Color::Red,
                    Status::Skip => comfy_table::Color::DarkGrey,
                });
            }
            t.add_row(vec![comfy_table::Cell::new(&c.name), cell, comfy_table::Cell::new(out.text(&c.detail))]);
        }
        let mut s = format!("{t}\n");
        for c in self.checks.iter().filter(|c| c.status >= Status::Warn) {
            if let Some(h) = &c.hint {
                s += &format!("{} {}: {}\n", c.status.label(), c.name, h);
            }
        }
        s += &format!("verdict: {}\n", self.status.label());
        s
    }

    fn render_prometheus(&self) -> Option<String> {
        let mut p = Prometheus::default();
        p.family("check_status", "gauge", "Status of each vdsoctl check: 0 ok, 1 warn, 2 fail, -1 skipped.");
        for c in &self.checks {
            // An empty pid (host checks) is left out by the writer.
            let pid = match self.pid {
                Some(pid) if c.name.starts_with("process_") => pid.to_string(),
                _ => String::new(),
            };
            p.sample("check_status", &[("check", &c.name), ("pid", &pid)], c.status.gauge());
        }
        p.family("check_failed", "gauge", "1 when the audit failed (any FAIL, or WARN with --strict).");
        let failed = self.status == Status::Fail || (self.strict && self.status == Status::Warn);
        p.sample("check_failed", &[], if failed { 1.0 } else { 0.0 });
        let mut text = p.finish();
        if let Some(costs) = self.bench.as_ref().and_then(|b| b.render_prometheus()) {
            text += &costs;
        }
        Some(text)
    }
}
