//! `check`: the whole host audit in one go — every known way the vDSO fast
//! path is lost, each with a status, a detail and a hint — and an exit code
//! for CI.

use super::Outcome;
use crate::arch::TimeFn;
use crate::arch::{self, ClockClass};
use crate::cli::CheckArgs;
use crate::error::{Error, Result};
use crate::inspect::auxv::{self, AT_SYSINFO_EHDR};
use crate::inspect::exe::{self, Launch, LibcKind, Linkage};
use crate::inspect::kernel::{self, VsyscallMode};
use crate::inspect::{elf, image, Process};
use crate::measure::bench::{BenchRequest, Path as BenchPath};
use crate::measure::bench::{Path, Verdict};
use crate::measure::session::{self, TraceRequest};
use crate::model::bench::{Basis, BenchReport, BenchResult};
use crate::model::binary::{binary_verdict, HostFacts, WarnKind};
use crate::model::image::{problems as image_problems, ImageProblem};
use crate::model::observe::{self, Judged, Observation, Scope, Unseen};
use crate::model::policy::{self, SysinfoEhdr, VdsoMapping};
use crate::model::trace::{ExitStatus, Target, TraceReport};
pub use crate::model::Status;
use crate::model::{ClockRef, ProcessName, ProcessRef, Severity};
use crate::render::{duration_text, emit, ns_text, thousands, Cell, Color, Output, Prometheus, Render};
use serde::Serialize;
use std::ffi::OsString;
use std::time::Duration;

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
    /// A check from a finding of the policy: info passes, warn and fail stay.
    fn of(name: String, f: crate::model::Finding) -> Check {
        let status = match f.severity {
            Severity::Info => Status::Ok,
            Severity::Warn => Status::Warn,
            Severity::Fail => Status::Fail,
        };
        Check { name, status, detail: f.message, hint: f.hint }
    }

    /// The observation row: a bypass fails, a clean window passes, nothing
    /// observed is INFO (never OK by inference).
    pub fn observed(name: &str, obs: &Observation, scope: Scope) -> Check {
        let f = obs.finding(scope);
        let status = match obs.judged() {
            Judged::Clean => Status::Ok,
            Judged::Bypassed => Status::Fail,
            Judged::NotObserved => Status::Info,
            Judged::Broken => Status::Warn,
        };
        Check { name: name.into(), status, detail: f.message, hint: f.hint }
    }

    fn new(name: impl Into<String>, status: Status, detail: impl Into<String>, hint: Option<&str>) -> Check {
        Check { name: name.into(), status, detail: detail.into(), hint: hint.map(str::to_string) }
    }
}

/// The audit (DESIGN keys: checks, binaries with --image, status).
#[derive(Debug, Default, Serialize)]
pub struct CheckReport {
    /// `-p`: the process audited (its `process_*` checks carry a `pid`
    /// label in Prometheus).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRef>,
    pub checks: Vec<Check>,
    /// `--image`: every ELF program and library, failures first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binaries: Option<Vec<BinaryRow>>,
    /// `--image`: what the walk covered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSummary>,
    /// `-- CMD`: the command and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandRun>,
    /// The worst status among the checks (SKIP counts as OK).
    pub status: Status,
    /// Whether `--strict` made WARN fail the audit.
    pub strict: bool,
    /// The quick bench behind the clock checks (its costs go to Prometheus).
    #[serde(skip)]
    pub bench: Option<BenchReport>,
    /// `--quiet`: the table shows only rows that are not OK (JSON keeps all).
    #[serde(skip)]
    pub quiet: bool,
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

/// The vDSO mapping and AT_SYSINFO_EHDR of a process, as checks.
pub fn mapping_checks(process: &Process, who: &str) -> Vec<Check> {
    let mut checks = Vec::new();
    let maps = match process.maps() {
        Ok(m) => m,
        Err(e) => return vec![Check::new(format!("{who}vdso_mapped"), Status::Fail, e.to_string(), None)],
    };
    let vdso = maps.iter().find(|m| m.name() == "[vdso]");
    let vvar = maps.iter().find(|m| m.name() == "[vvar]");
    let mapping = VdsoMapping::judge(process.pid(), vdso.map(|d| (d.start, d.size())), vvar.map(|v| v.start));
    checks.push(Check::of(format!("{who}vdso_mapped"), mapping.finding()));
    let ehdr = process.auxv().ok().and_then(|(entries, _)| auxv::get(&entries, AT_SYSINFO_EHDR));
    let verdict = SysinfoEhdr::judge(ehdr, vdso.map(|d| d.start));
    checks.push(Check::of(format!("{who}auxv_sysinfo_ehdr"), verdict.finding()));
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
    let judged = image_problems(&img);
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
    // A missing DT_HASH only matters to musl.
    let problems: Vec<(&ImageProblem, crate::model::Finding)> = judged
        .iter()
        .filter(|p| musl || **p != ImageProblem::GnuHashOnly)
        .map(|p| (p, p.finding()))
        .filter(|(_, f)| f.severity >= Severity::Warn)
        .collect();
    if problems.is_empty() {
        return Check::new(name, Status::Ok, format!("exports {} ({version}); {hash}", exported.join(" ")), None);
    }
    let hash_only = problems.iter().all(|(p, _)| **p == ImageProblem::GnuHashOnly);
    Check::new(
        name,
        if hash_only && !musl { Status::Warn } else { Status::Fail },
        problems.iter().map(|(_, f)| f.message.as_str()).collect::<Vec<_>>().join("; "),
        problems.iter().find_map(|(_, f)| f.hint.as_deref()).or(Some("`vdsoctl dump` shows the whole image")),
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
            format!("/dev/kmsg not readable ({}) — needs root or kernel.dmesg_restrict=0", crate::error::errno_text(&e)),
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
                "emulate (from {}): the page is readable; each legacy call traps into the kernel (`vdsoctl bench --paths vsyscall` measures it here) and strace cannot see it",
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

impl HostFacts {
    /// Read from vdsoctl's own process.
    pub fn gather(me: &Process) -> HostFacts {
        let vdso_has_hash = me
            .vdso_mapping()
            .and_then(|m| me.read_mem(m.start, m.size()))
            .and_then(|b| elf::parse(&b))
            .ok()
            .map(|img| img.has_hash);
        let maps = me.maps().unwrap_or_default();
        let (v, _) = super::maps::vsyscall_mode(&maps, kernel::cmdline().as_deref(), true);
        HostFacts { vdso_has_hash, vsyscall: v.mode }
    }
}

/// What a target process's runtime means for its clock reads: the program
/// ld.so runs rather than ld.so, the tool for a program under valgrind or
/// qemu-user, Go by its buildinfo with or without cgo.
pub fn process_exe_check(process: &Process, host: &HostFacts) -> (Check, WarnKind, Option<String>) {
    let name = "process_binary";
    let rt = match exe::process_runtime(process) {
        Ok(r) => r,
        Err(e) => {
            return (
                Check::new(name, Status::Skip, format!("cannot read the executable: {e}"), None),
                WarnKind::None,
                None,
            )
        }
    };
    let info = &rt.info;
    let path = rt.path.as_ref().map_or_else(|| "?".to_string(), |p| p.display().to_string());
    // Named as the process has it; the executable is said as such.
    let argv0 = process.argv0();
    let exe = rt.path.as_ref().map(|p| p.display().to_string());
    let who = ProcessName { pid: process.pid(), comm: process.comm(), argv0: argv0.as_deref(), exe: exe.as_deref() };
    let class = if info.is_64 { "64-bit" } else { "32-bit" };
    let arch_name = arch::machine_name(info.machine);
    let linkage = match info.linkage() {
        Linkage::Dynamic => format!("dynamic ({})", info.interp.as_deref().unwrap_or("")),
        Linkage::Static => "statically linked".to_string(),
        Linkage::StaticPie => "statically linked (static-pie)".to_string(),
    };
    if let Launch::Emulator { tool, program } = &rt.launch {
        let prog = program.as_deref().map_or_else(String::new, |p| format!(" {p}"));
        return (
            Check::new(
                name,
                Status::Fail,
                format!(
                    "{} runs{prog} under {tool} ({path}): the tool maps no [vdso] for the program and serves each clock read itself, as a syscall",
                    who.text()
                ),
                Some("expected under an emulator or instrumenter; audit the program run natively"),
            ),
            WarnKind::None,
            Some(tool.clone()),
        );
    }
    let (status, verdict, hint, kind) = binary_verdict(info, host);
    let launched = match &rt.launch {
        Launch::Loader { loader, .. } => format!(" (started as `{} PROG`)", loader.display()),
        _ => String::new(),
    };
    let detail = format!("{}{launched}: {class} {arch_name}, {linkage}; {verdict}", who.with_exe());
    // The hint names this process, not a placeholder.
    let hint = hint.map(|h| h.replace("check -p PID", &format!("check -p {}", process.pid())));
    (Check::new(name, status, detail, hint.as_deref()), kind, None)
}

/// Per clock id (and gettimeofday/time), a quick bench through libc, the
/// vDSO and the syscall, with syscalls/call counted: a clock that should be
/// fast and is not fails, and so does one over `--max-ns` through libc.
/// Returns the checks and the bench report (for the Prometheus costs).
pub fn clock_checks(max_ns: Option<f64>) -> (Vec<Check>, Option<BenchReport>) {
    let req = BenchRequest {
        clocks: arch::CLOCKS.iter().map(|c| c.id).collect(),
        functions: vec![TimeFn::ClockGettime, TimeFn::Gettimeofday, TimeFn::Time],
        paths: vec![BenchPath::Libc, BenchPath::Vdso, BenchPath::Syscall],
        verify: false,
        max_ns,
        quick: true,
    };
    let report = match crate::model::bench::measure_report(&req) {
        Ok((r, _)) => r,
        Err(e) => return (vec![Check::new("clocks", Status::Skip, format!("cannot bench: {e}"), None)], None),
    };
    let basis = match report.basis {
        Basis::Counted => "counted",
        Basis::Timing => "timing-based: perf not permitted",
    };
    let kernel_version = kernel::release().as_deref().and_then(kernel::parse_version);
    let clocksource = kernel::clocksource().map(|c| c.current);
    let mut checks = Vec::new();
    let mut seen: Vec<(TimeFn, Option<ClockRef>)> = Vec::new();
    for r in &report.results {
        let key = (r.function, r.clock);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let row =
            |p: Path| report.results.iter().find(|x| x.function == r.function && x.clock == r.clock && x.path == p);
        let (libc, vdso) = (row(Path::Libc), row(Path::Vdso));
        let label = r.clock.map_or_else(|| r.function.to_string(), ClockRef::text);
        let name = match r.clock.map(ClockRef::text) {
            Some(c) if r.function == TimeFn::ClockGettime => format!("clock:{}", c.trim_start_matches("CLOCK_")),
            Some(c) => format!("{}:{}", r.function, c.trim_start_matches("CLOCK_")),
            None => r.function.to_string(),
        };
        let cost = |x: Option<&BenchResult>| x.and_then(|x| x.ns_per_call).map_or_else(|| "-".to_string(), ns_text);
        let sc = |x: Option<&BenchResult>| {
            x.and_then(|x| x.syscalls_per_call).map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
        };
        let detail =
            format!("libc {} ({} syscalls/call), vdso {} ({}) [{basis}]", cost(libc), sc(libc), cost(vdso), sc(vdso));
        let clock_id = r.clock.and_then(ClockRef::id).and_then(|id| i32::try_from(id).ok());
        let exported = r.verdict != Some(Verdict::Missing);
        let should_be_fast = policy::should_be_fast(r.function, clock_id, exported, kernel_version);
        let over = max_ns.zip(libc.and_then(|l| l.ns_per_call)).filter(|(max, ns)| should_be_fast && ns > max);
        let lost = r.verdict.and_then(|v| {
            policy::lost_fast_path(v, &label, r.function, clock_id, kernel_version, clocksource.as_deref())
        });
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
                    format!("{label}: {}/call through libc, over --max-ns {max}; {detail}", ns_text(ns)),
                    Some(&format!(
                        "the direct vDSO call measured {} here; when it is as slow, the clocksource or a loaded host is why",
                        vdso.and_then(|v| v.ns_per_call).map_or_else(|| "-".into(), ns_text)
                    )),
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

/// Watch `scope` (one process, or every process but vdsoctl) for `window`:
/// what its clock syscalls and [vsyscall] calls were, or why nothing could
/// be seen. `None`: `--trace 0`.
pub fn observe(scope: Scope, window: Option<Duration>) -> Observation {
    let Some(window) = window else { return Observation::Unseen(Unseen::Off) };
    let req = TraceRequest {
        pids: match scope {
            Scope::Process(pid) => vec![pid],
            Scope::Host => Vec::new(),
        },
        all: scope == Scope::Host,
        plan: crate::measure::engine::Plan { all: scope == Scope::Host, ..Default::default() },
        duration: Some(window),
        command_stdout_to_stderr: true,
        progress: Some(crate::render::trace_progress),
        ..Default::default()
    };
    match trace(&req) {
        Ok(report) => Observation::of_report(&report, &crate::inspect::process::runs_vdsoctl),
        Err(Error::Facility { what, .. }) => Observation::Unseen(Unseen::NoEngine(what)),
        Err(e) => Observation::Unseen(Unseen::Failed(e.to_string())),
    }
}

/// The host checks, and with a target its own: (checks, the clock bench,
/// the binary row and its warning kind — left for the observation to judge).
type Audited = (Vec<Check>, Option<BenchReport>, Option<(Check, WarnKind)>);

fn audit(me: &Process, target: Option<&Process>, max_ns: Option<f64>) -> Result<Audited> {
    let (mut checks, bench) = host_checks(max_ns)?;
    let Some(target) = target else { return Ok((checks, bench, None)) };
    let host = HostFacts::gather(me);
    let (binary, warn_kind, emulator) = process_exe_check(target, &host);
    let mut mapped = mapping_checks(target, "process_");
    if let Some(tool) = &emulator {
        // The missing [vdso] is the tool's doing: say so instead of `vdso=0`.
        for c in mapped.iter_mut().filter(|c| c.status == Status::Fail) {
            c.detail += &format!(" — {tool} runs it");
            c.hint = Some(format!("expected under {tool}; audit the program run natively"));
        }
    }
    checks.extend(mapped);
    if emulator.is_none() {
        let musl = exe::process_runtime(target).is_ok_and(|r| r.info.libc == LibcKind::Musl);
        checks.push(vdso_symbols_check(target, "process_", musl));
    }
    Ok((checks, bench, Some((binary, warn_kind))))
}

/// The binary row in the light of the observation: evidence clears a
/// warning that only said the path was unproven, and contrary evidence is
/// named on the row itself.
fn judge_binary(binary: Check, warn_kind: WarnKind, obs: &Observation) -> Check {
    match obs.on_binary(warn_kind == WarnKind::Unproven && binary.status == Status::Warn) {
        observe::BinaryNote::Clears(why) => {
            Check { status: Status::Ok, detail: format!("{}; {why}", binary.detail), hint: None, ..binary }
        }
        observe::BinaryNote::Contradicts(why) => Check { detail: format!("{}; {why}", binary.detail), ..binary },
        observe::BinaryNote::None => binary,
    }
}

/// Validate the arguments before anything is measured.
fn validate(args: &CheckArgs) -> Result<()> {
    // Bad thresholds are usage errors up front: a CI job with a typo must not
    // go green on an audit that silently skipped its clock checks.
    crate::model::policy::max_ns(args.max_ns)?;
    Ok(())
}

/// Gather every check.
pub fn gather(args: &CheckArgs) -> Result<CheckReport> {
    validate(args)?;
    if let Some(root) = &args.image {
        return gather_image(root, args.strict);
    }
    if !args.command.is_empty() {
        return gather_command(&args.command, args.timeout, args.strict);
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
    let me = Process::open(None)?;
    let scope = target.as_ref().map_or(Scope::Host, |t| Scope::Process(t.pid()));
    // The window runs beside the audit: vdsoctl's own syscalls (its clock
    // bench makes some on purpose) are left out of a host window.
    let (audited, observation) = std::thread::scope(|s| {
        let watching = s.spawn(|| observe(scope, observe::window(args.trace)));
        let audited = audit(&me, target.as_ref(), args.max_ns);
        let observation = watching
            .join()
            .unwrap_or_else(|_| Observation::Unseen(Unseen::Failed("the observing thread panicked".into())));
        (audited, observation)
    });
    let (mut checks, bench, binary) = audited?;
    match binary {
        // `-p`: the binary row says what its code is expected to do, the
        // observation row what it did.
        Some((binary, warn_kind)) => {
            checks.push(judge_binary(binary, warn_kind, &observation));
            checks.push(Check::observed("process_trace", &observation, scope));
        }
        None => checks.push(Check::observed("host_trace", &observation, scope)),
    }
    let worst = checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok).max(Status::Ok);
    Ok(CheckReport {
        checks,
        status: worst,
        strict: args.strict,
        bench,
        process: target.as_ref().map(ProcessRef::of),
        ..CheckReport::default()
    })
}

/// One audited file of an image (DESIGN keys).
#[derive(Debug, Clone, Serialize)]
pub struct BinaryRow {
    pub path: String,
    /// `ELF64` or `ELF32`.
    pub class: &'static str,
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
    pub status: Status,
    pub detail: String,
    pub hint: Option<&'static str>,
}

/// What the image walk covered.
#[derive(Debug, Clone, Serialize)]
pub struct ImageSummary {
    pub root: String,
    /// Directory entries looked at.
    pub entries: u64,
    /// Directories not entered (other filesystems, /proc /sys /dev, too deep).
    pub skipped: Vec<String>,
    /// What could not be read (directories not listed, files not opened,
    /// ELF files that did not parse), with why.
    pub unreadable: Vec<(String, String)>,
    /// The walk stopped at its entry cap.
    pub truncated: bool,
    /// vdsoctl's own executable, left out (its `bench` calls [vsyscall] on purpose).
    pub excluded: Vec<String>,
}

/// Progress on stderr, only on a terminal and only once the walk has taken
/// more than a second; cleared at the end.
struct Progress {
    shown: bool,
    tty: bool,
    last: std::time::Duration,
}

impl Progress {
    fn tick(&mut self, entries: u64, elf: usize, elapsed: std::time::Duration) {
        use std::io::Write;
        if !self.tty || elapsed.as_millis() < 1000 || elapsed.saturating_sub(self.last).as_millis() < 100 {
            return;
        }
        self.last = elapsed;
        self.shown = true;
        // The summary's number style: `150,140 entries`, `2.40 s`.
        let _ = write!(
            std::io::stderr(),
            "\rscanning: {} entries, {} ELF files, {}",
            thousands(entries),
            thousands(elf as u64),
            crate::render::duration_text(elapsed)
        );
    }

    fn done(&self) {
        use std::io::Write;
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

/// `check --image ROOT`: every ELF program and library under ROOT, judged
/// against this kernel.
fn gather_image(root: &std::path::Path, strict: bool) -> Result<CheckReport> {
    use std::io::IsTerminal;
    let mut progress = Progress { shown: false, tty: std::io::stderr().is_terminal(), last: Default::default() };
    let mut tick = |e: u64, n: usize, t: std::time::Duration| progress.tick(e, n, t);
    use std::os::unix::fs::MetadataExt;
    let own = std::fs::metadata("/proc/self/exe").ok().map(|m| (m.dev(), m.ino()));
    let walked = image::walk(root, own, Some(&mut tick));
    progress.done();
    let walked = walked?;
    if walked.binaries.is_empty() {
        let unreadable = match walked.unreadable.first() {
            Some((p, why)) => {
                format!(" ({} unreadable, first {}: {why})", thousands(walked.unreadable.len() as u64), p.display())
            }
            None => String::new(),
        };
        return Err(Error::NothingToAudit { root: root.to_path_buf(), entries: walked.entries, unreadable });
    }
    // The host context comes from /proc; a chroot or a bare container may
    // have none: the binaries are still judged, the context is SKIP.
    let (host, mut checks) = match Process::open(None) {
        Ok(me) => (HostFacts::gather(&me), vec![vdso_symbols_check(&me, "", false), vsyscall_check(&me)]),
        Err(_) if !std::path::Path::new("/proc/self").exists() => {
            let why = "no /proc here (a chroot or a container without it): this kernel's";
            let hint = Some("mount proc (`mount -t proc proc /proc`) to judge the binaries against this kernel");
            (
                HostFacts { vdso_has_hash: None, vsyscall: VsyscallMode::Xonly },
                vec![
                    Check::new("vdso_symbols", Status::Skip, format!("{why} vDSO is not read"), hint),
                    Check::new(
                        "vsyscall",
                        Status::Skip,
                        format!("{why} vsyscall mode is unknown (the verdicts assume xonly, the default since 5.3)"),
                        hint,
                    ),
                ],
            )
        }
        Err(e) => return Err(e),
    };
    // The context checks say what the verdicts below assumed; only the
    // binaries decide the audit.
    for c in &mut checks {
        if c.status > Status::Ok {
            c.detail += " (host context for the binary verdicts)";
            c.status = Status::Ok;
        }
    }
    // What the walk could not read makes the audit incomplete: a warning.
    if !walked.unreadable.is_empty() {
        let (p, why) = &walked.unreadable[0];
        checks.push(Check::new(
            "image_walk",
            Status::Warn,
            format!(
                "{} entries could not be read (or parsed as ELF) and are not audited (first {}: {why})",
                thousands(walked.unreadable.len() as u64),
                p.display()
            ),
            Some("run as a user who can read the whole tree (root, for an unpacked image); --json lists each in image.unreadable"),
        ));
    }
    // A dynamic program's runtime version is that of the C library the
    // image ships for its class and machine (its libc.so.6 or ld-musl).
    let libc_versions: Vec<((u16, bool, LibcKind), String)> = walked
        .binaries
        .iter()
        .filter(|b| b.info.is_library() && b.info.libc_version.is_some())
        .filter(|b| matches!(b.info.libc, LibcKind::Glibc | LibcKind::Musl))
        .map(|b| ((b.info.machine, b.info.is_64, b.info.libc), b.info.libc_version.clone().unwrap_or_default()))
        .collect();
    let mut binaries: Vec<BinaryRow> = walked
        .binaries
        .iter()
        .map(|b| {
            let mut info = b.info.clone();
            if info.libc_version.is_none() && (info.linkage() == Linkage::Dynamic || info.is_library()) {
                let key = (info.machine, info.is_64, info.libc);
                info.libc_version = libc_versions.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone());
            }
            let (status, detail, hint, _) = binary_verdict(&info, &host);
            BinaryRow {
                path: b.path.display().to_string(),
                class: if info.is_64 { "ELF64" } else { "ELF32" },
                machine: arch::machine_name(info.machine),
                arch: info.arch(),
                endian: if info.little_endian { "little" } else { "big" },
                linkage: info.linkage().name(),
                interpreter: info.interp.clone(),
                kind: if info.is_library() { "library" } else { "executable" },
                runtime: info.libc.name(),
                runtime_version: info.libc_version.clone(),
                status,
                detail,
                hint,
            }
        })
        .collect();
    binaries.sort_by(|a, b| b.status.cmp(&a.status).then_with(|| a.path.cmp(&b.path)));
    let worst = binaries
        .iter()
        .map(|b| b.status)
        .chain(checks.iter().map(|c| c.status))
        .max()
        .unwrap_or(Status::Ok)
        .max(Status::Ok);
    let summary = ImageSummary {
        root: root.display().to_string(),
        entries: walked.entries,
        skipped: walked.skipped_dirs.iter().map(|p| p.display().to_string()).collect(),
        unreadable: walked.unreadable.iter().map(|(p, e)| (p.display().to_string(), e.clone())).collect(),
        truncated: walked.truncated,
        excluded: walked.excluded.iter().map(|p| p.display().to_string()).collect(),
    };
    Ok(CheckReport {
        checks,
        status: worst,
        strict,
        binaries: Some(binaries),
        image: Some(summary),
        ..CheckReport::default()
    })
}

/// `ELF64 x86_64`, and the Debian name where the machine alone does not
/// say it (byte order, float ABI, class): `ELF32 arm (armhf)`, `ELF64 ppc64 (ppc64el)`.
fn class_text(b: &BinaryRow) -> String {
    let plain = ["amd64", "i386"].contains(&b.arch.as_str());
    if plain || b.arch == b.machine {
        format!("{} {}", b.class, b.machine)
    } else {
        format!("{} {} ({})", b.class, b.machine, b.arch)
    }
}

/// How `check -- CMD` ran the command.
#[derive(Debug, Clone, Serialize)]
pub struct CommandRun {
    pub argv: Vec<String>,
    pub pid: i32,
    pub exit_status: Option<ExitStatus>,
    /// Stopped at `--timeout`.
    pub timed_out: bool,
}

/// The calls of a trace the vDSO should have served, and the [vsyscall]
/// emulations, one line each: `who` before, `rate` after, `no_clock` for
/// a syscall without a clock id.
fn bypassed(
    report: &TraceReport,
    who: impl Fn(i32, &Option<String>) -> String,
    rate: impl Fn(&crate::model::trace::CountRow) -> String,
    no_clock: &str,
) -> Vec<String> {
    let calls = report.counts.iter().filter(|r| !r.expected).map(|r| {
        let clock = r.clock.map_or_else(|| no_clock.to_string(), ClockRef::text);
        format!("{}{} {clock} ×{}{}", who(r.pid, &r.comm), r.syscall, thousands(r.count), rate(r))
    });
    let vsyscall = report
        .vsyscall_emulations
        .iter()
        .map(|v| format!("{}[vsyscall] {} ×{}", who(v.pid, &v.comm), v.function, thousands(v.count)));
    calls.chain(vsyscall).collect()
}

/// The one place `check -- CMD` reaches the trace engine: run the command
/// under trace until it exits and hand back the summary.
/// Whether it was stopped at `timeout` comes with it.
fn trace_command(command: &[OsString], timeout: Option<std::time::Duration>) -> Result<(TraceReport, bool)> {
    // The command's stdout goes to stderr, so vdsoctl's stdout stays the report.
    let traced = session::collect(
        &TraceRequest {
            command: command.to_vec(),
            command_stdout_to_stderr: true,
            timeout,
            progress: Some(crate::render::trace_progress),
            ..Default::default()
        },
        &mut |_, _| Ok(()),
    )?;
    Ok((crate::model::trace::build(&traced.session, &traced.window(), None), traced.timed_out))
}

/// Trace as `req` says (no intervals) and judge the whole window.
fn trace(req: &TraceRequest) -> Result<TraceReport> {
    let traced = session::collect(req, &mut |_, _| Ok(()))?;
    Ok(crate::model::trace::build(&traced.session, &traced.window(), None))
}

/// `check -- CMD ARGS`: the smoke command's clock syscalls and [vsyscall]
/// calls, per process and clock; its own failure fails the check.
fn gather_command(command: &[OsString], timeout: Option<std::time::Duration>, strict: bool) -> Result<CheckReport> {
    let (report, timed_out) = trace_command(command, timeout)?;
    let (argv, pid) = match &report.target {
        Target::Command { argv, pid } => (argv.clone(), *pid),
        _ => (Vec::new(), 0),
    };
    let mut checks = Vec::new();
    let exit_status = report.command.as_ref().and_then(|c| c.exit_status);
    let limit = timeout.filter(|_| timed_out).map(duration_text);
    checks.push(match exit_status {
        status if limit.is_some() => Check::new(
            "command",
            Status::Fail,
            format!(
                "`{}` ran past --timeout {}: stopped ({})",
                crate::render::shell_words(&argv),
                limit.as_deref().unwrap_or_default(),
                match status {
                    Some(ExitStatus::Signal(n)) => format!("killed by signal {n}"),
                    Some(ExitStatus::Code(c)) => format!("exited with status {c}"),
                    None => "it had not exited yet".into(),
                }
            ),
            Some(&format!(
                "the smoke command hung or is slow; vdsoctl exits with its status{}",
                status.map_or_else(String::new, |s| format!(", {}", s.shell_code()))
            )),
        ),
        Some(ExitStatus::Code(0)) => Check::new(
            "command",
            Status::Ok,
            format!("`{}` exited with status 0", crate::render::shell_words(&argv)),
            None,
        ),
        Some(ExitStatus::Code(c)) => Check::new(
            "command",
            Status::Fail,
            format!("`{}` exited with status {c}", crate::render::shell_words(&argv)),
            Some(&format!("the smoke command itself failed; vdsoctl exits with its status, {c}")),
        ),
        Some(ExitStatus::Signal(n)) => Check::new(
            "command",
            Status::Fail,
            format!("`{}` was killed by signal {n}", crate::render::shell_words(&argv)),
            Some(&format!("the smoke command itself failed; vdsoctl exits with {}", 128 + n)),
        ),
        None => Check::new(
            "command",
            Status::Fail,
            format!("`{}`: interrupted before it exited", crate::render::shell_words(&argv)),
            None,
        ),
    });
    let name = |pid: i32, comm: &Option<String>| match comm {
        Some(c) => format!("pid {pid} ({c}) "),
        None => format!("pid {pid} "),
    };
    let bad = bypassed(&report, name, |_| String::new(), "-");
    let expected: u64 = report.counts.iter().filter(|r| r.expected).map(|r| r.count).sum();
    let secs = duration_text(std::time::Duration::from_nanos(report.duration_ns));
    checks.push(if bad.is_empty() {
        Check::new(
            "command_trace",
            Status::Ok,
            format!("in {secs}: no clock syscalls the vDSO serves here and no [vsyscall] calls ({} expected syscalls, e.g. CPU-time clocks)", thousands(expected)),
            None,
        )
    } else {
        Check::new(
            "command_trace",
            Status::Fail,
            format!("in {secs}: {} — the vDSO is bypassed", bad.join(", ")),
            Some(&format!("`vdsoctl trace -- {}` shows rates per clock id; look for a raw syscall(), a static or old libc (`vdsoctl check --image /`), or LD_PRELOAD", crate::render::shell_words(&argv))),
        )
    });
    if report.lost > 0 {
        checks.push(Check::new(
            "command_trace_lost",
            Status::Warn,
            format!("{} events were lost by the trace engine: counts are partial", report.lost),
            None,
        ));
    }
    let worst = checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok);
    Ok(CheckReport {
        checks,
        status: worst,
        strict,
        command: Some(CommandRun { argv, pid, exit_status, timed_out }),
        ..CheckReport::default()
    })
}

/// `vdsoctl check`.
pub fn run(args: &CheckArgs, out: &Output) -> Result<Outcome> {
    let mut report = gather(args)?;
    report.quiet = args.quiet;
    emit(out, &report)?;
    // `check -- CMD`: the command's own failure is the exit status.
    match report.command.as_ref().and_then(|c| c.exit_status) {
        Some(ExitStatus::Code(c)) if c != 0 => return Ok(Outcome::CommandFailed(u8::try_from(c).unwrap_or(1))),
        Some(ExitStatus::Signal(n)) => return Ok(Outcome::CommandFailed(u8::try_from(128 + n).unwrap_or(255))),
        _ => {}
    }
    Ok(Outcome::from_crossed(report.status == Status::Fail || (args.strict && report.status == Status::Warn)))
}

/// A STATUS cell, coloured when colour is on.
/// A status word in prose (a hint line, the verdict), coloured as its cell.
fn status_label(out: &Output, st: Status) -> String {
    out.paint(st.label(), status_color(st))
}

fn status_color(st: Status) -> Color {
    match st {
        Status::Ok => Color::Green,
        Status::Warn => Color::Yellow,
        Status::Fail => Color::Red,
        Status::Skip | Status::Info => Color::Grey,
    }
}

fn status_cell(st: Status) -> Cell {
    Cell::new(st.label()).fg(status_color(st))
}

impl Render for CheckReport {
    fn render_table(&self, out: &Output) -> String {
        let mut s = String::new();
        if let Some(binaries) = &self.binaries {
            s += &self.render_binaries(binaries, out);
        }
        if let Some(c) = &self.command {
            s += &format!("`{}` (pid {})\n", out.text(&crate::render::shell_words(&c.argv)), c.pid);
        }
        let mut t = out.table(&["CHECK", "STATUS", "DETAIL"]);
        t.wrap("DETAIL");
        let mut hidden = 0;
        for c in &self.checks {
            if self.quiet && c.status == Status::Ok {
                hidden += 1;
                continue;
            }
            t.add_row(vec![Cell::new(&c.name), status_cell(c.status), Cell::new(&c.detail)]);
        }
        if !t.is_empty() {
            s += &format!("{t}\n");
        }
        if hidden > 0 {
            s += &format!(
                "{} OK {} not shown (--quiet)\n",
                thousands(hidden),
                if hidden == 1 { "check" } else { "checks" }
            );
        }
        for c in self.checks.iter().filter(|c| c.status >= Status::Warn) {
            if let Some(h) = &c.hint {
                s += &out.prose(&format!("{} {}: ", status_label(out, c.status), out.text(&c.name)), &out.text(h));
            }
        }
        // The verdict line says what the exit status says: a WARN that
        // --strict fails is a FAIL here (exit 1).
        if self.strict && self.status == Status::Warn {
            s += &format!("verdict: {} (a WARN, and --strict fails on WARN)\n", status_label(out, Status::Fail));
        } else {
            s += &format!("verdict: {}\n", status_label(out, self.status));
        }
        s
    }

    fn render_junit(&self) -> Option<String> {
        Some(self.junit())
    }

    fn render_prometheus(&self) -> Option<String> {
        let mut p = Prometheus::default();
        if let Some(binaries) = &self.binaries {
            p.family("check_binaries", "gauge", "Binaries of the audited image by status.");
            for st in [Status::Ok, Status::Warn, Status::Fail, Status::Skip] {
                let n = binaries.iter().filter(|b| b.status == st).count();
                p.sample("check_binaries", &[("status", &st.label().to_lowercase())], n as f64);
            }
        }
        p.family(
            "check_status",
            "gauge",
            "Status of each vdsoctl check: 0 ok, 1 warn, 2 fail, -1 skipped or not observed.",
        );
        for c in &self.checks {
            // An empty pid (host checks) is left out by the writer.
            let pid = match self.process.as_ref().map(|p| p.pid) {
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

/// Text as XML 1.0 character data or an attribute value: the five
/// specials escaped, characters XML cannot carry (controls but tab, newline,
/// carriage return) dropped.
fn xml_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

impl CheckReport {
    /// JUnit XML: one testsuite for the checks and, with `--image`, one for
    /// the binaries, a testcase each. FAIL is a `<failure>` with the finding
    /// and the hint; WARN one too with `--strict` (the exit code's rule),
    /// else a pass whose `<system-out>` says the warning; SKIP and INFO are
    /// `<skipped>`. GitLab, Jenkins and GitHub reporters read this subset.
    pub fn junit(&self) -> String {
        struct Case<'a> {
            class: &'a str,
            name: String,
            status: Status,
            detail: &'a str,
            hint: Option<&'a str>,
        }
        let mut suites: Vec<(&str, Vec<Case>)> = vec![(
            "vdsoctl.check",
            self.checks
                .iter()
                .map(|c| Case {
                    class: "vdsoctl.check",
                    name: c.name.clone(),
                    status: c.status,
                    detail: &c.detail,
                    hint: c.hint.as_deref(),
                })
                .collect(),
        )];
        if let Some(binaries) = &self.binaries {
            suites.push((
                "vdsoctl.check.image",
                binaries
                    .iter()
                    .map(|b| Case {
                        class: "vdsoctl.check.image",
                        name: b.path.clone(),
                        status: b.status,
                        detail: &b.detail,
                        hint: b.hint,
                    })
                    .collect(),
            ));
        }
        let failed = |st: Status| st == Status::Fail || st == Status::Warn && self.strict;
        let skipped = |st: Status| st == Status::Skip || st == Status::Info;
        let count = |cases: &[Case], f: &dyn Fn(Status) -> bool| cases.iter().filter(|c| f(c.status)).count();
        let all: usize = suites.iter().map(|s| s.1.len()).sum();
        let all_failed: usize = suites.iter().map(|s| count(&s.1, &failed)).sum();
        let all_skipped: usize = suites.iter().map(|s| count(&s.1, &skipped)).sum();
        let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        x += &format!(
            "<testsuites name=\"vdsoctl check\" tests=\"{all}\" failures=\"{all_failed}\" errors=\"0\" skipped=\"{all_skipped}\">\n"
        );
        for (name, cases) in &suites {
            x += &format!(
                "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                cases.len(),
                count(cases, &failed),
                count(cases, &skipped)
            );
            for c in cases {
                let head = format!("    <testcase classname=\"{}\" name=\"{}\"", c.class, xml_text(&c.name));
                let message = format!("{}: {}", c.status.label(), c.detail);
                let body = match c.hint {
                    Some(h) => format!("{}\nhint: {h}", c.detail),
                    None => c.detail.to_string(),
                };
                if failed(c.status) {
                    x += &format!(
                        "{head}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                        xml_text(&message),
                        c.status.label(),
                        xml_text(&body)
                    );
                } else if skipped(c.status) {
                    x += &format!("{head}>\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_text(&message));
                } else {
                    x += &format!("{head}>\n      <system-out>{}</system-out>\n    </testcase>\n", xml_text(&message));
                }
            }
            x += "  </testsuite>\n";
        }
        x += "</testsuites>\n";
        x
    }

    /// The image table: FAIL then WARN rows one per binary, each with its
    /// reason; OK (and SKIP) binaries one row per runtime, linkage and class
    /// with a count — JSON lists every one.
    fn render_binaries(&self, binaries: &[BinaryRow], out: &Output) -> String {
        let mut t = out.table(&["STATUS", "PATH", "CLASS", "LINKAGE", "RUNTIME", "DETAIL"]);
        // PATH wraps only in a group's "3 files (e.g. /lib/…)" cell: a path is one word.
        t.wrap("PATH").wrap("DETAIL");
        let runtime = |b: &BinaryRow| match &b.runtime_version {
            Some(v) => format!("{} {v}", b.runtime),
            None => b.runtime.to_string(),
        };
        for b in binaries.iter().filter(|b| b.status >= Status::Warn) {
            t.add_row(vec![
                status_cell(b.status),
                Cell::new(out.text(&b.path)),
                Cell::new(class_text(b)),
                Cell::new(b.linkage),
                Cell::new(out.text(&runtime(b))),
                Cell::new(out.text(&b.detail)),
            ]);
        }
        type Group<'a> = (Status, String, &'a str, String, usize, &'a BinaryRow);
        let mut groups: Vec<Group> = Vec::new();
        for b in binaries.iter().filter(|b| b.status < Status::Warn) {
            let class = class_text(b);
            let rt = runtime(b);
            match groups.iter_mut().find(|g| g.0 == b.status && g.1 == class && g.2 == b.linkage && g.3 == rt) {
                Some(g) => g.4 += 1,
                None => groups.push((b.status, class, b.linkage, rt, 1, b)),
            }
        }
        groups.sort_by(|a, b| b.0.cmp(&a.0).then(b.4.cmp(&a.4)));
        for (st, class, linkage, rt, n, example) in groups.into_iter().filter(|g| !(self.quiet && g.0 == Status::Ok)) {
            let (example, detail) = (&example.path, &example.detail);
            let what =
                if n == 1 { out.text(example).into_owned() } else { format!("{n} files (e.g. {})", out.text(example)) };
            t.add_row(vec![
                status_cell(st),
                Cell::new(what),
                Cell::new(class),
                Cell::new(linkage),
                Cell::new(out.text(&rt)),
                Cell::new(out.text(detail)),
            ]);
        }
        let mut s = if t.is_empty() { String::new() } else { format!("{t}\n") };
        for b in binaries.iter().filter(|b| b.status >= Status::Warn) {
            if let Some(h) = b.hint {
                // The hint names the file, not a placeholder.
                let h = h.replace("-- PROG", &format!("-- {}", b.path));
                s += &out.prose(&format!("{} {}: ", status_label(out, b.status), out.text(&b.path)), &out.text(&h));
            }
        }
        if let Some(img) = &self.image {
            let count = |st: Status| thousands(binaries.iter().filter(|b| b.status == st).count() as u64);
            s += &format!(
                "{}: {} ELF files in {} entries — {} FAIL, {} WARN, {} OK{}{}\n",
                out.text(&img.root),
                thousands(binaries.len() as u64),
                thousands(img.entries),
                count(Status::Fail),
                count(Status::Warn),
                count(Status::Ok),
                // Not judged (code not decoded, x32) is said, never folded into OK.
                [(Status::Info, "INFO"), (Status::Skip, "SKIP")]
                    .iter()
                    .filter(|(st, _)| binaries.iter().any(|b| b.status == *st))
                    .map(|(st, label)| format!(", {} {label}", count(*st)))
                    .collect::<String>(),
                if img.unreadable.is_empty() {
                    String::new()
                } else {
                    format!(", {} unreadable", thousands(img.unreadable.len() as u64))
                }
            );
            for p in &img.excluded {
                s += &format!(
                    "{}: vdsoctl itself, left out (its `bench` calls the [vsyscall] page on purpose)\n",
                    out.text(p)
                );
            }
            const LISTED: usize = 10;
            for (p, why) in img.unreadable.iter().take(LISTED) {
                s += &format!("unreadable: {}: {}\n", out.text(p), out.text(why));
            }
            if img.unreadable.len() > LISTED {
                s += &format!(
                    "unreadable: {} more (`--json` lists each in image.unreadable)\n",
                    thousands((img.unreadable.len() - LISTED) as u64)
                );
            }
            if img.truncated {
                s += "the walk stopped at its entry cap: the tree was not audited whole\n";
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::exe::ExeInfo;
    use crate::inspect::exe::GoInfo;

    fn exe(libc: LibcKind, interp: Option<&str>) -> ExeInfo {
        ExeInfo {
            is_64: true,
            little_endian: true,
            flags: 0,
            machine: arch::machine::X86_64,
            elf_type: 3,
            interp: interp.map(str::to_string),
            needed: Vec::new(),
            soname: None,
            pie: true,
            has_dynamic: interp.is_some(),
            libc,
            libc_version: None,
            go: None,
            vdso_lookup: false,
            vsyscall_sites: 0,
            vsyscall_first: None,
            clock_sites: 0,
            sites: Vec::new(),
            code_scanned: true,
            debug_only: false,
        }
    }

    const GOOD: HostFacts = HostFacts { vdso_has_hash: Some(true), vsyscall: VsyscallMode::Xonly };

    #[test]
    fn junit_text_is_xml() {
        assert_eq!(xml_text("a<b>&\"c'\u{1}\td"), "a&lt;b&gt;&amp;&quot;c&apos;\td");
        let report = CheckReport {
            checks: vec![Check::new("x", Status::Fail, "bad <thing>", Some("fix & retry"))],
            ..CheckReport::default()
        };
        let x = report.junit();
        assert!(
            x.contains(r#"<testsuites name="vdsoctl check" tests="1" failures="1" errors="0" skipped="0">"#),
            "{x}"
        );
        assert!(x.contains(r#"<failure message="FAIL: bad &lt;thing&gt;" type="FAIL">bad &lt;thing&gt;"#), "{x}");
        assert!(x.contains("hint: fix &amp; retry</failure>"), "{x}");
    }

    #[test]
    fn verdicts() {
        if arch::HOST_MACHINE != arch::machine::X86_64 {
            return;
        }
        // Static glibc: the vDSO lookup decides.
        let mut old = exe(LibcKind::Glibc, None);
        old.elf_type = 2;
        let (st, detail, hint, _) = binary_verdict(&old, &GOOD);
        assert_eq!(st, Status::Fail);
        assert!(detail.contains("glibc < 2.31") && detail.contains("bug 19767"), "{detail}");
        assert!(hint.unwrap().contains("2.31"));
        old.vdso_lookup = true;
        assert_eq!(binary_verdict(&old, &GOOD).0, Status::Ok);

        // musl against a vDSO with only DT_GNU_HASH.
        let musl = exe(LibcKind::Musl, Some("/lib/ld-musl-x86_64.so.1"));
        assert_eq!(binary_verdict(&musl, &GOOD).0, Status::Ok);
        let gnu_only = HostFacts { vdso_has_hash: Some(false), ..GOOD };
        let (st, detail, _, _) = binary_verdict(&musl, &gnu_only);
        assert_eq!(st, Status::Fail);
        assert!(detail.contains("DT_HASH only"), "{detail}");

        // vsyscall callers: a program fails (and crashes with vsyscall=none), a library warns.
        let mut legacy = exe(LibcKind::Glibc, Some("/lib64/ld-linux-x86-64.so.2"));
        legacy.vsyscall_sites = 2;
        legacy.vsyscall_first = Some(0x401000);
        let none = HostFacts { vsyscall: VsyscallMode::None, ..GOOD };
        let (st, detail, _, _) = binary_verdict(&legacy, &none);
        assert_eq!(st, Status::Fail);
        assert!(detail.starts_with("its code calls the fixed [vsyscall] page (2 site(s), first at 0x401000)"));
        assert!(detail.contains("crashes with SIGSEGV"), "{detail}");
        legacy.pie = false;
        legacy.interp = None;
        legacy.soname = Some("libjvm.so".into());
        let (st, detail, _, kind) = binary_verdict(&legacy, &GOOD);
        assert_eq!((st, kind), (Status::Warn, WarnKind::Unproven));
        assert!(detail.contains("likely a fallback path"), "{detail}");

        // Go, with cgo too: OK.
        let mut go = exe(LibcKind::Go, Some("/lib64/ld-linux-x86-64.so.2"));
        go.go = Some(GoInfo { version: "go1.22.1".into(), cgo: Some(true) });
        go.libc_version = Some("go1.22.1".into());
        let (st, detail, _, _) = binary_verdict(&go, &GOOD);
        assert_eq!(st, Status::Ok);
        assert_eq!(detail, "Go go1.22.1, with cgo: the Go runtime is expected to call the vDSO itself");
        // Built with CGO_ENABLED=1 but pure Go, so statically linked: not "with cgo".
        go.interp = None;
        let (st, detail, _, _) = binary_verdict(&go, &GOOD);
        assert_eq!(st, Status::Ok);
        assert!(!detail.contains("cgo"), "{detail}");

        // 32-bit: a program warns (clearable), a library does not; x32 and
        // other machines are not judged.
        let mut m32 = exe(LibcKind::Glibc, Some("/lib/ld-linux.so.2"));
        m32.is_64 = false;
        m32.machine = arch::machine::I386;
        let (st, _, _, kind) = binary_verdict(&m32, &GOOD);
        assert_eq!((st, kind), (Status::Warn, WarnKind::Unproven));
        m32.pie = false;
        m32.interp = None;
        assert_eq!(binary_verdict(&m32, &GOOD).0, Status::Ok);
        let mut x32 = exe(LibcKind::Glibc, Some("/libx32/ld-linux-x32.so.2"));
        x32.is_64 = false;
        let (st, detail, _, _) = binary_verdict(&x32, &GOOD);
        assert_eq!(st, Status::Skip);
        assert!(detail.contains("x32"), "{detail}");
        // Another architecture's binary is judged for its own: arm64 code
        // is decoded (OK, said so); armhf code is not (INFO, never OK by
        // inference); this host's DT_HASH does not decide a foreign musl.
        let mut arm = exe(LibcKind::Glibc, Some("/lib/ld-linux-aarch64.so.1"));
        arm.machine = arch::machine::AARCH64;
        let (st, detail, _, _) = binary_verdict(&arm, &GOOD);
        assert_eq!(st, Status::Ok, "{detail}");
        assert!(detail.ends_with("; judged as arm64 code (not this host's architecture)"), "{detail}");
        let mut armhf = exe(LibcKind::Glibc, Some("/lib/ld-linux-armhf.so.3"));
        (armhf.machine, armhf.is_64, armhf.flags) = (arch::machine::ARM, false, 0x0500_0400);
        let (st, detail, _, _) = binary_verdict(&armhf, &GOOD);
        assert_eq!(st, Status::Info, "{detail}");
        assert!(detail.starts_with("armhf code: call sites not decoded for this architecture"), "{detail}");
        let mut musl = exe(LibcKind::Musl, None);
        musl.machine = arch::machine::AARCH64;
        let no_hash = HostFacts { vdso_has_hash: Some(false), ..GOOD };
        assert_eq!(binary_verdict(&musl, &no_hash).0, Status::Ok);

        // A static program with no recognised runtime: a clearable warning.
        let (st, _, _, kind) = binary_verdict(&exe(LibcKind::Unknown, None), &GOOD);
        assert_eq!((st, kind), (Status::Warn, WarnKind::Unproven));
    }
}
