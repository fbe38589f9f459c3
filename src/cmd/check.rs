//! `check`: the whole host audit in one go — every known way the vDSO fast
//! path is lost, each with a status, a detail and a hint — and an exit code
//! for CI.

use super::Outcome;
use crate::arch::{self};
use crate::cli::CheckArgs;
use crate::error::{Error, Result};
use crate::inspect::exe::{self, Launch, LibcKind, Linkage};
use crate::inspect::kernel::VsyscallMode;
use crate::inspect::{image, Process};
use crate::measure::session::{self, TraceRequest};
use crate::model::bench::BenchReport;
use crate::model::binary::{binary_verdict, HostFacts, WarnKind};
pub use crate::model::check::{BinaryRow, Check, CheckReport, CommandRun, ImageSummary};
use crate::model::host::{host_checks, host_vsyscall, mapping_checks, vdso_symbols_check, vsyscall_check};
use crate::model::observe::{self, Observation, Scope, Unseen};
use crate::model::trace::{ExitStatus, Target, TraceReport};
pub use crate::model::Status;
use crate::model::{ClockRef, ProcessName, ProcessRef};
use crate::render::{duration_text, emit, status_color, thousands, Cell, Output, Prometheus, Render};
use std::ffi::OsString;
use std::time::Duration;

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
    let worst = Status::worst(checks.iter().map(|c| c.status));
    Ok(CheckReport {
        checks,
        status: worst,
        strict: args.strict,
        bench,
        process: target.as_ref().map(ProcessRef::of),
        ..CheckReport::default()
    })
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
        Ok(me) => {
            (HostFacts::gather(&me), vec![vdso_symbols_check(&me, "", false), vsyscall_check(&host_vsyscall(&me))])
        }
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
    let worst = Status::worst(binaries.iter().map(|b| b.status).chain(checks.iter().map(|c| c.status)));
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
    let worst = Status::worst(checks.iter().map(|c| c.status));
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
