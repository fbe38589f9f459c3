//! `trace`: count clock syscalls and [vsyscall] emulations per process and
//! clock id, in the kernel (perf_event_open on tracepoints — no ptrace
//! stops), for `-p PID,..`, the whole host (`-a`) or a command (`-- CMD`).
//! Counting lives in `measure::trace`; here: targets, the wait loop
//! (duration, intervals, Ctrl-C, the command's exit), the report.

use super::Outcome;
use crate::arch::{self, Abi, TimeFn};
use crate::cli::TraceArgs;
use crate::error::{Error, Result};
use crate::inspect::process::exe_header_of;
use crate::inspect::Process;
use crate::measure::sys::spawn;
use crate::measure::trace::{self, Attach, Clock, Events, Tally, Tracer};
use crate::measure::tracefs::Tracefs;
use crate::model::{Finding, Severity};
use crate::output::{emit, note, Format, Output, Render};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use serde::Serialize;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Default `-d` for `-p` and `-a`.
const DEFAULT_SECS: f64 = 5.0;
/// How long the loop sleeps at most between checks (Ctrl-C, child exit).
const TICK_MS: u64 = 20;

/// What was traced.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// `-p`: these processes, all their threads.
    Pids(Vec<i32>),
    /// `-a`: every process.
    All,
    /// `-- CMD`: the command line and the pid it ran as.
    Command { argv: Vec<String>, pid: i32 },
}

/// The `trace` report (DESIGN keys: target, duration_ns, counts,
/// vsyscall_emulations, findings).
#[derive(Debug, Serialize)]
pub struct TraceReport {
    pub target: Target,
    pub duration_ns: u64,
    pub counts: Vec<CountRow>,
    pub vsyscall_emulations: Vec<VsyscallRow>,
    /// Sampled records the kernel dropped (per-clock split partial).
    pub lost_records: u64,
    /// How `-- CMD` ended; `null` for -p/-a or when it outlived the trace.
    pub exit_status: Option<ExitStatus>,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
    pub findings: Vec<Finding>,
}

/// Syscalls of one function (and clock) by one process.
#[derive(Debug, Clone, Serialize)]
pub struct CountRow {
    pub pid: i32,
    pub comm: Option<String>,
    pub syscall: &'static str,
    /// The ABI the calls were made with (`x86_64`, `i386`, ...).
    pub abi: Abi,
    /// Clock id by name; `null` for syscalls without one; `other` for ids
    /// without a counter of their own; `unknown` where records were lost.
    pub clock: Option<String>,
    pub count: u64,
    pub per_sec: f64,
    /// Whether this syscall is expected (the vDSO never serves it here).
    pub expected: bool,
}

/// Emulated calls into the [vsyscall] page by one process.
#[derive(Debug, Clone, Serialize)]
pub struct VsyscallRow {
    pub pid: i32,
    pub comm: Option<String>,
    pub function: &'static str,
    pub count: u64,
    pub per_sec: f64,
}

/// How the traced command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

/// `vdsoctl trace`.
pub fn run(args: &TraceArgs, out: &Output) -> Result<Outcome> {
    let report = collect(args, out)?;
    let crossed = args.fail_over.is_some_and(|rate| crossed(&report, rate));
    emit(out, &report)?;
    Ok(Outcome::from_crossed(crossed))
}

/// Trace as `args` says and return the summary; with `--interval`, tables
/// for each interval are emitted on the way (table format only). `check
/// --trace` uses this too.
pub fn collect(args: &TraceArgs, out: &Output) -> Result<TraceReport> {
    let positive = |v: Option<f64>, name: &str| match v {
        Some(s) if !(s.is_finite() && s > 0.0 && s < 1e9) => {
            Err(Error::Usage(format!("{name} wants a number of seconds above 0 and below 1e9, got {s}")))
        }
        _ => Ok(v.map(Duration::from_secs_f64)),
    };
    let mut duration = positive(args.duration, "--duration")?;
    let interval = positive(args.interval, "--interval")?;
    if let Some(r) = args.fail_over {
        if !(r.is_finite() && r >= 0.0) {
            return Err(Error::Usage(format!("--fail-over wants a rate ≥ 0 (calls/s), got {r}")));
        }
    }
    let mode_count = usize::from(!args.pid.is_empty()) + usize::from(args.all) + usize::from(!args.command.is_empty());
    if mode_count != 1 {
        return Err(Error::Usage("trace needs one of -p PID[,PID..], -a, or -- CMD ARGS..".into()));
    }
    // Resolve what can fail with exit 3 before touching tracefs/perf (exit 4).
    // A thread id stands for its process; a process named twice is traced once.
    let mut processes: Vec<Process> = Vec::new();
    for pid in &args.pid {
        let p = Process::open(Some(*pid))?;
        let tgid = p.tgid()?;
        let p = if tgid == p.pid() { p } else { Process::open(Some(tgid))? };
        if !processes.iter().any(|q| q.pid() == p.pid()) {
            processes.push(p);
        }
    }
    let pids: Vec<i32> = processes.iter().map(Process::pid).collect();
    let command = if args.command.is_empty() { None } else { Some(prepare_command(&args.command)?) };
    if command.is_none() && duration.is_none() {
        duration = Some(Duration::from_secs_f64(DEFAULT_SECS));
    }

    let tracefs = Tracefs::find_or_mount()?;
    let events = Events::load(&tracefs)?;
    let host = events.host();
    let mut tracer = Tracer::new(events);
    if args.native_only {
        tracer.native_only();
    }
    if args.no_split {
        tracer.no_split();
    }

    // Ctrl-C ends the trace and still prints the summary: block SIGINT and
    // SIGTERM here (threads spawned later inherit the mask) and wait for
    // them on a thread of their own — no signal handler, no unsafe.
    let (tx, rx) = mpsc::channel::<Stop>();
    let signal_tx = tx.clone();
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals
        .thread_block()
        .map_err(|e| Error::Facility { what: format!("cannot block SIGINT: {e}"), hint: "retry".into() })?;
    std::thread::spawn(move || {
        if signals.wait().is_ok() {
            let _ = signal_tx.send(Stop::Signal(Instant::now()));
        }
    });

    let how = Attach { inherit: true, enable_on_exec: false };
    let mut start = Instant::now();
    let (target, child) = if let Some(cmd) = command {
        let mut gated = spawn::fork_gated(&cmd.path, &cmd.argv, &cmd.envp, out.format != Format::Table)
            .map_err(|source| Error::Spawn { cmd: cmd.display.clone(), source })?;
        let child = gated.pid;
        let armed =
            tracer.attach_task(child, child, cmd.abi.unwrap_or(host), Attach { inherit: true, enable_on_exec: true });
        if let Err(e) = armed {
            drop(gated); // closes the gate: the child exits without exec
            let _ = waitpid(Pid::from_raw(child), None);
            return Err(e);
        }
        tracer.set_comm(child, Some(cmd.comm.clone()));
        // The window is exec to exit: start the clock before the child may
        // run, and take the end from the moment waitpid returned.
        start = Instant::now();
        if let Err(source) = gated.release() {
            let _ = waitpid(Pid::from_raw(child), None);
            return Err(Error::Spawn { cmd: cmd.display.clone(), source });
        }
        watch_child(child, tx);
        note(format_args!("tracing {} (pid {child}) until it exits", cmd.display));
        (Target::Command { argv: cmd.argv_text, pid: child }, Some(child))
    } else if args.all {
        tracer.attach_system(&trace::online_cpus()?)?;
        note(format_args!("tracing all processes for {:.1}s", duration.map_or(0.0, |d| d.as_secs_f64())));
        (Target::All, None)
    } else {
        for p in &processes {
            let abi = p.exe_header().and_then(|h| Abi::from_elf(h.is_64, h.machine)).unwrap_or(host);
            tracer.attach_process(p, abi, how)?;
            tracer.set_comm(p.pid(), Some(p.comm().to_string()));
        }
        let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        note(format_args!("tracing pid {} for {:.1}s", list.join(","), duration.map_or(0.0, |d| d.as_secs_f64())));
        (Target::Pids(pids.clone()), None)
    };

    if child.is_none() {
        start = Instant::now();
    }
    let deadline = duration.map(|d| start + d);
    let mut next_interval = interval.map(|i| start + i);
    let mut last = (Tally::default(), start);
    let mut exit_status = None;
    let mut interrupted = false;
    let end = loop {
        match rx.try_recv() {
            Ok(Stop::Signal(at)) => {
                interrupted = true;
                break at;
            }
            Ok(Stop::Exited(status, at)) => {
                exit_status = Some(status);
                break at;
            }
            Err(_) => {}
        }
        if let Some(pid) = child {
            refresh_comm(&mut tracer, pid);
        }
        let now = Instant::now();
        if let Some(d) = deadline.filter(|d| now >= *d) {
            break d;
        }
        if let (Some(due), Some(every)) = (next_interval, interval) {
            if now >= due {
                let tally = tracer.snapshot()?;
                if out.format == Format::Table {
                    let delta = tally.since(&last.0);
                    let report = build(&tracer, target.clone(), &delta, now - last.1, None, false);
                    emit(out, &report)?;
                }
                last = (tally, now);
                next_interval = Some(due + every);
            }
        }
        let mut wait = Duration::from_millis(TICK_MS);
        for t in [deadline, next_interval].into_iter().flatten() {
            wait = wait.min(t.saturating_duration_since(now));
        }
        tracer.wait_and_drain(wait.as_millis() as i32)?;
    };
    // Stop counting first: after Ctrl-C the command may run on, and the
    // summary covers exactly the time until the signal.
    tracer.disable();
    let elapsed = end.saturating_duration_since(start);
    let tally = tracer.snapshot()?;
    if interrupted && child.is_some() {
        // A Ctrl-C on the terminal reached the command too: give it a moment
        // to report how it ended; otherwise it keeps running on its own.
        if let Ok(Stop::Exited(status, _)) = rx.recv_timeout(Duration::from_millis(500)) {
            exit_status = Some(status);
        }
    }
    Ok(build(&tracer, target, &tally, elapsed, exit_status, interrupted))
}

/// A command resolved and turned into C strings before the fork.
struct PreparedCommand {
    path: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    display: String,
    argv_text: Vec<String>,
    comm: String,
    abi: Option<Abi>,
}

fn prepare_command(words: &[OsString]) -> Result<PreparedCommand> {
    let display = words.iter().map(|w| w.to_string_lossy()).collect::<Vec<_>>().join(" ");
    let spawn_err = |kind: std::io::ErrorKind, why: &str| Error::Spawn {
        cmd: display.clone(),
        source: std::io::Error::new(kind, why.to_string()),
    };
    let first = words.first().ok_or_else(|| spawn_err(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let path = resolve(first).ok_or_else(|| spawn_err(std::io::ErrorKind::NotFound, "not found or not executable"))?;
    let cstr = |b: &[u8]| CString::new(b).map_err(|_| spawn_err(std::io::ErrorKind::InvalidInput, "NUL byte"));
    let argv = words.iter().map(|w| cstr(w.as_bytes())).collect::<Result<Vec<_>>>()?;
    let envp = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend(v.into_vec());
            cstr(&kv)
        })
        .collect::<Result<Vec<_>>>()?;
    let abi = exe_header_of(&path).and_then(|h| Abi::from_elf(h.is_64, h.machine));
    let comm: String = path.file_name().map(|n| n.to_string_lossy().chars().take(15).collect()).unwrap_or_default();
    Ok(PreparedCommand {
        path: cstr(path.as_os_str().as_bytes())?,
        argv,
        envp,
        argv_text: words.iter().map(|w| w.to_string_lossy().into_owned()).collect(),
        display,
        comm,
        abi,
    })
}

/// `execvp`'s search: a name with a slash as is, else the first executable
/// regular file of that name on PATH.
fn resolve(name: &OsString) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if name.as_bytes().contains(&b'/') {
        let p = PathBuf::from(name);
        return runnable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| runnable(p))
}

fn refresh_comm(tracer: &mut Tracer, pid: i32) {
    if let Some(c) = crate::inspect::process::comm_of(pid) {
        tracer.set_comm(pid, Some(c));
    }
}

/// What ends a trace early.
enum Stop {
    /// SIGINT or SIGTERM reached vdsoctl, at this moment.
    Signal(Instant),
    /// The traced command ended, at this moment.
    Exited(ExitStatus, Instant),
}

/// Wait for the command on a thread of its own, so its end is timed when it
/// happens rather than at the next poll.
fn watch_child(pid: i32, tx: mpsc::Sender<Stop>) {
    std::thread::spawn(move || loop {
        let status = match waitpid(Pid::from_raw(pid), None) {
            Ok(WaitStatus::Exited(_, code)) => ExitStatus::Code(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => ExitStatus::Signal(sig as i32),
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        };
        let _ = tx.send(Stop::Exited(status, Instant::now()));
        return;
    });
}

/// Whether the vDSO would serve `func`/`clock` for a process of `abi`, so a
/// syscall for it means the fast path was lost.
fn unexpected(abi: Abi, func: TimeFn, clock: Clock) -> bool {
    let (machine, is_64) = abi.elf();
    if arch::vdso_symbol(machine, is_64, func).is_none() {
        return false;
    }
    match clock {
        Clock::None => true,
        // A clock this kernel's vDSO does not serve yet (MONOTONIC_RAW before
        // 5.3, ...) is an expected syscall, as are CPU-time clocks.
        Clock::Id(id) => i32::try_from(id).ok().is_some_and(|id| {
            let kernel = crate::inspect::kernel::release().and_then(|r| crate::inspect::kernel::parse_version(&r));
            arch::vdso_serves(id, abi.native().elf().0, kernel)
        }),
        Clock::Other | Clock::Any => false,
    }
}

fn clock_label(clock: Clock) -> Option<String> {
    match clock {
        Clock::None => None,
        Clock::Id(id) => Some(arch::clock_name(id)),
        Clock::Other => Some("other".into()),
        Clock::Any => Some("any".into()),
    }
}

/// Build the report for a tally over `elapsed`.
fn build(
    tracer: &Tracer,
    target: Target,
    tally: &Tally,
    elapsed: Duration,
    exit_status: Option<ExitStatus>,
    interrupted: bool,
) -> TraceReport {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let comm = |pid: i32| tracer.comm(pid).map(str::to_string);
    let mut counts: Vec<CountRow> = tally
        .counts
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| CountRow {
            pid: k.pid,
            comm: comm(k.pid),
            syscall: k.func.name(),
            abi: k.abi,
            clock: clock_label(k.clock),
            count: *v,
            per_sec: *v as f64 / secs,
            expected: !unexpected(k.abi, k.func, k.clock),
        })
        .collect();
    counts.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)));
    let mut vsyscall_emulations: Vec<VsyscallRow> = tally
        .vsyscall
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|((pid, f), v)| VsyscallRow {
            pid: *pid,
            comm: comm(*pid),
            function: f.name(),
            count: *v,
            per_sec: *v as f64 / secs,
        })
        .collect();
    vsyscall_emulations.sort_by_key(|v| std::cmp::Reverse(v.count));
    // Only --native-only leaves 32-bit calls out (-a always decodes both).
    let skipped_compat =
        !tracer.traces_compat() && arch::HOST_ABI.and_then(Abi::compat).is_some() && !matches!(target, Target::All);
    let findings = findings(&counts, &vsyscall_emulations, tally, secs, !skipped_compat);
    TraceReport {
        target,
        duration_ns: elapsed.as_nanos() as u64,
        counts,
        vsyscall_emulations,
        lost_records: tally.lost_records,
        exit_status,
        interrupted,
        findings,
    }
}

fn who(pid: i32, comm: &Option<String>) -> String {
    match comm {
        Some(c) => format!("pid {pid} ({c})"),
        None => format!("pid {pid}"),
    }
}

fn findings(counts: &[CountRow], vsyscall: &[VsyscallRow], tally: &Tally, secs: f64, compat: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in counts {
        // clock_gettime reads as its clock id (as in DESIGN's example); the
        // others name the syscall so clock_getres is not mistaken for it.
        let what = match (&r.clock, r.syscall) {
            (Some(c), "clock_gettime") => c.clone(),
            (Some(c), s) => format!("{s}({c})"),
            (None, s) => s.to_string(),
        };
        let rate = thousands(r.per_sec.round() as u64);
        let from = who(r.pid, &r.comm);
        // In a tree that holds both, say which ABI made the calls.
        let from = if Some(r.abi) == arch::HOST_ABI { from } else { format!("{from}, {} ABI", r.abi.name()) };
        match r.clock.as_deref() {
            Some("any") => out.push(Finding::new(
                Severity::Warn,
                format!("{}: {rate} syscalls/s from {from}, clock ids not split (--no-split)", r.syscall),
                Some("run without --no-split to see which clock ids enter the kernel (each clock id's counter costs ~28 ns per call more)".into()),
            )),
            _ if !r.expected => out.push(Finding::new(
                Severity::Fail,
                format!("{what}: {rate} syscalls/s from {from} — the vDSO is bypassed for this {}", if r.clock.is_some() { "clock id" } else { "call" }),
                Some("look for a raw syscall(), a libc or runtime that routes it to the kernel, or a clocksource without a vDSO mode (`vdsoctl check`)".into()),
            )),
            _ => out.push(Finding::new(
                Severity::Info,
                format!("{what}: {rate} syscalls/s from {from} — expected: the vDSO never serves this {}", if r.clock.is_some() { "clock id (CPU-time, alarm and fd clocks always enter the kernel)" } else { "call here" }),
                None,
            )),
        }
    }
    for v in vsyscall {
        out.push(Finding::new(
            Severity::Fail,
            format!(
                "{} made {} calls ({}/s) to {} in the [vsyscall] page — each is emulated by the kernel (~1–2 µs) and invisible to strace",
                who(v.pid, &v.comm), thousands(v.count), thousands(v.per_sec.round() as u64), v.function
            ),
            Some("rebuild it against a current libc or runtime: only very old static binaries call the fixed vsyscall addresses".into()),
        ));
    }
    for (pid, n) in &tally.unrecorded {
        out.push(Finding::new(
            Severity::Warn,
            format!(
                "{}: {} 32-bit clock syscalls lost their sampled record, so the rows above are short by that many",
                who(*pid, &counts.iter().find(|r| r.pid == *pid).and_then(|r| r.comm.clone())),
                thousands(*n)
            ),
            Some("trace for less time, or fewer processes, to keep the ring buffers from filling".into()),
        ));
    }
    if tally.lost_records > 0 {
        out.push(Finding::new(
            Severity::Warn,
            format!(
                "the ring buffers lost {} sampled records: per-clock counts from samples are partial by that much",
                thousands(tally.lost_records)
            ),
            Some("trace fewer processes (-p) instead of -a, or for less time".into()),
        ));
    }
    if tally.scaled {
        out.push(Finding::new(Severity::Warn, "some counters were multiplexed and did not run the whole time", None));
    }
    if counts.is_empty() && vsyscall.is_empty() {
        out.push(Finding::new(
            Severity::Info,
            if compat {
                format!("no clock syscalls and no [vsyscall] emulations in {secs:.1}s — clock reads stayed in the vDSO")
            } else {
                format!("no clock syscalls from 64-bit tasks and no [vsyscall] emulations in {secs:.1}s — 32-bit programs were not traced (--native-only)")
            },
            None,
        ));
    }
    out
}

/// `--fail-over RATE`: an unexpected syscall or a vsyscall emulation above RATE/s.
fn crossed(report: &TraceReport, rate: f64) -> bool {
    report.counts.iter().any(|r| !r.expected && r.count > 0 && r.per_sec > rate)
        || report.vsyscall_emulations.iter().any(|v| v.count > 0 && v.per_sec > rate)
}

/// `81204` → `81,204`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Render for TraceReport {
    fn render_table(&self, out: &Output) -> String {
        let mut t = out.table(&["PID", "COMM", "SYSCALL", "CLOCK", "COUNT", "PER SEC"]);
        for r in &self.counts {
            t.add_row(vec![
                r.pid.to_string(),
                out.text(r.comm.as_deref().unwrap_or("-")).into_owned(),
                r.syscall.to_string(),
                r.clock.clone().unwrap_or_else(|| "-".into()),
                thousands(r.count),
                per_sec_text(r.per_sec),
            ]);
        }
        for v in &self.vsyscall_emulations {
            t.add_row(vec![
                v.pid.to_string(),
                out.text(v.comm.as_deref().unwrap_or("-")).into_owned(),
                format!("[vsyscall] {}", v.function),
                "-".into(),
                thousands(v.count),
                per_sec_text(v.per_sec),
            ]);
        }
        let target = match &self.target {
            Target::Pids(p) => format!("pid {}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")),
            Target::All => "all processes".into(),
            Target::Command { argv, pid } => format!("`{}` (pid {pid})", out.text(&argv.join(" "))),
        };
        let mut s = format!("{target}, {:.2}s\n{t}\n", self.duration_ns as f64 / 1e9);
        match self.exit_status {
            Some(ExitStatus::Code(c)) => s += &format!("command exited with status {c}\n"),
            Some(ExitStatus::Signal(n)) => s += &format!("command was killed by signal {n}\n"),
            None => {}
        }
        if self.interrupted {
            s += "interrupted: counts cover the time until Ctrl-C\n";
        }
        s += &out.findings(&self.findings);
        s
    }

    /// One-shot counts over the trace window, in the series names `serve`
    /// exports continuously (for node_exporter's textfile collector).
    fn render_prometheus(&self) -> Option<String> {
        use crate::output::prom::{self, Kind, SyscallSeries, VsyscallSeries};
        let mut p = crate::output::Prometheus::default();
        p.family("trace_duration_seconds", Kind::Gauge, "How long the trace counted, in seconds.");
        p.sample("trace_duration_seconds", &[], self.duration_ns as f64 / 1e9);
        let rows: Vec<SyscallSeries<'_>> = self
            .counts
            .iter()
            .map(|r| SyscallSeries {
                pid: r.pid,
                comm: r.comm.as_deref(),
                syscall: r.syscall,
                clock: r.clock.as_deref(),
                abi: r.abi.name(),
                vdso_serves: !r.expected,
                count: r.count,
            })
            .collect();
        prom::clock_syscalls(&mut p, "during the trace", &rows);
        let vrows: Vec<VsyscallSeries<'_>> = self
            .vsyscall_emulations
            .iter()
            .map(|v| VsyscallSeries { pid: v.pid, comm: v.comm.as_deref(), function: v.function, count: v.count })
            .collect();
        prom::vsyscall_emulations(&mut p, "during the trace", &vrows);
        p.family("trace_lost_records_total", Kind::Counter, "Sampled records the kernel dropped (ring buffers full).");
        p.sample("trace_lost_records_total", &[], self.lost_records);
        Some(p.finish())
    }
}

/// A rate for tables: `81,204`, or one decimal below 10/s.
fn per_sec_text(rate: f64) -> String {
    if rate < 10.0 {
        format!("{rate:.1}")
    } else {
        thousands(rate.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_expectations() {
        assert_eq!(thousands(81204), "81,204");
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert!(unexpected(Abi::X86_64, TimeFn::ClockGettime, Clock::Id(4)));
        assert!(!unexpected(Abi::X86_64, TimeFn::ClockGettime, Clock::Id(3)));
        assert!(!unexpected(Abi::X86_64, TimeFn::ClockGettime, Clock::Other));
        assert!(unexpected(Abi::X86_64, TimeFn::Gettimeofday, Clock::None));
        assert!(unexpected(Abi::I386, TimeFn::ClockGettime64, Clock::Id(11)));
        // The compat vDSO exports __vdso_getcpu (this host's image): a 32-bit getcpu syscall is a lost fast path.
        assert!(unexpected(Abi::I386, TimeFn::Getcpu, Clock::None));
    }
}
