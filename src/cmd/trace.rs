//! `trace`: count clock syscalls and [vsyscall] emulations per process and
//! clock id, in the kernel (a BPF program aggregating in a map, or perf
//! tracepoint counters as the fallback — no ptrace stops), for `-p PID,..`,
//! the whole host (`-a`) or a command (`-- CMD`). Counting lives in
//! `measure::engine`; here: targets, the wait loop (duration, intervals,
//! signals, exits), the report.

use super::Outcome;
use crate::arch::{self, Abi};
use crate::cli::TraceArgs;
use crate::error::{Error, Result};
use crate::inspect::process::exe_header_of;
use crate::inspect::Process;
use crate::measure::engine::{Counting, Kind, Plan};
use crate::measure::sys::spawn;
use crate::measure::trace::Tally;
use crate::model::{ClockRef, Finding, Severity};
use crate::output::{emit, emit_line, note, Format, Output, Render};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Default `-d` for `-p` and `-a`.
const DEFAULT: Duration = Duration::from_secs(5);
/// How often the perf engine drains its rings.
const PUMP: Duration = Duration::from_millis(20);
/// How long a command gets to exit after a forwarded signal before the
/// summary says it still runs.
const GRACE: Duration = Duration::from_secs(2);

/// What was traced.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// `-p`: these processes, all their threads, what they fork.
    Pids(Vec<i32>),
    /// `-a`: every process.
    All,
    /// `-- CMD`: the command line and the pid it ran as.
    Command { argv: Vec<String>, pid: i32 },
}

/// The `trace` report (DESIGN keys: target, engine, duration_ns, counts,
/// vsyscall_emulations, lost, findings, command).
#[derive(Debug, Serialize)]
pub struct TraceReport {
    pub target: Target,
    /// The engine that counted.
    pub engine: Kind,
    /// Why it is not the BPF engine, when it is not.
    pub engine_note: Option<String>,
    pub duration_ns: u64,
    pub counts: Vec<CountRow>,
    pub vsyscall_emulations: Vec<VsyscallRow>,
    /// Calls counted but not split by function and clock (perf engine:
    /// sampled records the ring dropped), per process.
    pub unattributed: Vec<UnattributedRow>,
    /// Events the engine could not keep: BPF map inserts refused (the map
    /// was full) or perf records dropped. 0 in normal use.
    pub lost: u64,
    /// Processes of a traced tree the engine could not follow.
    pub unfollowed: u64,
    /// Traced processes (`-p`) that exited during the trace.
    pub exited: Vec<ExitedRow>,
    /// `-- CMD`: the command and how it ended.
    pub command: Option<CommandInfo>,
    /// Ended early by SIGINT or SIGTERM.
    pub interrupted: bool,
    /// With `--interval`, the reports before the summary: the interval's
    /// bounds from the start of counting.
    pub interval: Option<Interval>,
    pub findings: Vec<Finding>,
}

/// An interval of `--interval`, from the start of counting.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Interval {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Syscalls of one function (and clock) by one process (or thread).
#[derive(Debug, Clone, Serialize)]
pub struct CountRow {
    pub pid: i32,
    /// The thread, with `--per-thread`.
    pub tid: Option<i32>,
    pub ppid: Option<i32>,
    /// The process's name when it made the calls.
    pub comm: Option<String>,
    pub syscall: &'static str,
    /// The ABI the calls were made with (`x86_64`, `i386`, ...).
    pub abi: Abi,
    /// Clock id by name (`CLOCK_TAI`, or its number); `null` for syscalls
    /// without one; `other`/`any` from the perf engine's coarser modes.
    pub clock: Option<ClockRef>,
    pub count: u64,
    /// Over the time the process was traced (until it exited, if it did).
    #[serde(serialize_with = "crate::model::rate")]
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
    #[serde(serialize_with = "crate::model::rate")]
    pub per_sec: f64,
}

/// Clock syscalls counted for a process whose split was lost.
#[derive(Debug, Clone, Serialize)]
pub struct UnattributedRow {
    pub pid: i32,
    pub comm: Option<String>,
    pub count: u64,
}

/// A `-p` target that exited while traced.
#[derive(Debug, Clone, Serialize)]
pub struct ExitedRow {
    pub pid: i32,
    /// Time from the start of counting to its exit.
    pub after_ns: u64,
}

/// The traced command.
#[derive(Debug, Clone, Serialize)]
pub struct CommandInfo {
    pub argv: Vec<String>,
    pub pid: i32,
    /// How it ended; `null` while it still runs (`-d` passed first).
    pub exit_status: Option<ExitStatus>,
}

/// How the traced command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl ExitStatus {
    /// The shell's convention: the code, or 128+N for signal N.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(n) => 128 + n,
        }
    }
}

/// What wakes the wait loop.
enum Event {
    /// SIGINT or SIGTERM reached vdsoctl.
    Signal(Signal),
    /// The traced command ended, at this moment.
    CommandExited(ExitStatus, Instant),
    /// A `-p` target exited, at this moment.
    TargetExited(i32, Instant),
}

/// `vdsoctl trace`.
pub fn run(args: &TraceArgs, out: &Output) -> Result<Outcome> {
    let report = collect(args, out)?;
    let crossed = args.fail_over.is_some_and(|rate| crossed(&report, rate));
    if args.interval.is_some() {
        emit_line(out, &report)?;
    } else {
        emit(out, &report)?;
    }
    let failed = report.command.as_ref().and_then(|c| c.exit_status).filter(|s| *s != ExitStatus::Code(0));
    Ok(match failed {
        Some(status) => Outcome::CommandFailed(status.shell_code().clamp(1, 255) as u8),
        None => Outcome::from_crossed(crossed),
    })
}

/// Check what can fail with exit 2 or 3 before any tracing starts.
fn validate(args: &TraceArgs) -> Result<()> {
    if let Some(r) = args.fail_over {
        if !(r.is_finite() && r >= 0.0) {
            return Err(Error::Usage(format!("--fail-over wants a rate ≥ 0 (calls/s), got {r}")));
        }
    }
    let modes = usize::from(!args.pid.is_empty()) + usize::from(args.all) + usize::from(!args.command.is_empty());
    if modes != 1 {
        return Err(Error::Usage("trace needs one of -p PID[,PID..], -a, or -- CMD ARGS..".into()));
    }
    Ok(())
}

/// The processes `-p` names: a thread id stands for its process (said on
/// stderr), a process named twice is traced once.
fn resolve_pids(pids: &[i32]) -> Result<Vec<Process>> {
    let mut processes: Vec<Process> = Vec::new();
    for pid in pids {
        let p = Process::open(Some(*pid))?;
        let tgid = p.tgid()?;
        let p = if tgid == p.pid() {
            p
        } else {
            note(format_args!("{pid} is a thread of process {tgid}: the whole process is traced"));
            Process::open(Some(tgid))?
        };
        if !processes.iter().any(|q| q.pid() == p.pid()) {
            processes.push(p);
        }
    }
    Ok(processes)
}

/// Block SIGINT and SIGTERM here (threads spawned later inherit the mask)
/// and turn them into events on a thread of their own: no handler, no unsafe.
fn catch_signals(tx: mpsc::Sender<Event>) -> Result<()> {
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals
        .thread_block()
        .map_err(|e| Error::Facility { what: format!("cannot block SIGINT: {e}"), hint: "retry".into() })?;
    std::thread::spawn(move || {
        while let Ok(sig) = signals.wait() {
            if tx.send(Event::Signal(sig)).is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Trace as `args` says and return the summary; with `--interval`, a
/// report for each interval is emitted on the way. `check` uses this too.
pub fn collect(args: &TraceArgs, out: &Output) -> Result<TraceReport> {
    validate(args)?;
    let processes = resolve_pids(&args.pid)?;
    let command = if args.command.is_empty() { None } else { Some(prepare_command(&args.command)?) };
    let duration = match (&command, args.duration) {
        (None, None) => Some(DEFAULT),
        (_, d) => d,
    };
    let plan =
        Plan { all: args.all, per_thread: args.per_thread, native_only: args.native_only, no_split: args.no_split };
    let opened = Counting::open(args.engine, plan)?;
    let mut counting = opened.counting;
    if let Some(why) = &opened.fallback_reason {
        note(format_args!("counting with the perf engine: {why}"));
    }
    let host = arch::HOST_ABI.unwrap_or(Abi::X86_64);

    let (tx, rx) = mpsc::channel::<Event>();
    catch_signals(tx.clone())?;

    let start;
    let (target, child) = if let Some(cmd) = &command {
        let mut gated = spawn::fork_gated(&cmd.path, &cmd.argv, &cmd.envp, out.format != Format::Table)
            .map_err(|source| Error::Spawn { cmd: cmd.display.clone(), source })?;
        let child = gated.pid;
        let armed = counting.add_command(child, cmd.abi.unwrap_or(host), &cmd.comm).and_then(|()| counting.start());
        if let Err(e) = armed {
            drop(gated); // closes the gate: the child exits without exec
            let _ = waitpid(Pid::from_raw(child), None);
            return Err(e);
        }
        // The window is exec to exit: start the clock before the child may
        // run, and take the end from the moment waitpid returned.
        start = Instant::now();
        if let Err(source) = gated.release() {
            let _ = waitpid(Pid::from_raw(child), None);
            return Err(Error::Spawn { cmd: cmd.display.clone(), source });
        }
        watch_child(child, tx.clone());
        note(format_args!("tracing {} (pid {child}) until it exits", out.text(&cmd.display)));
        (Target::Command { argv: cmd.argv_text.clone(), pid: child }, Some(child))
    } else if args.all {
        start = started(&mut counting)?;
        note(format_args!("tracing all processes for {}", secs_text(duration.unwrap_or(DEFAULT))));
        (Target::All, None)
    } else {
        for p in &processes {
            let abi = p.exe_header().and_then(|h| Abi::from_elf(h.is_64, h.machine)).unwrap_or(host);
            counting.add_process(p, abi, crate::inspect::process::parent_of(p.pid()))?;
        }
        for p in &processes {
            watch_target(p.pid(), tx.clone());
        }
        start = started(&mut counting)?;
        let pids: Vec<i32> = processes.iter().map(Process::pid).collect();
        let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        note(format_args!("tracing pid {} for {}", list.join(","), secs_text(duration.unwrap_or(DEFAULT))));
        (Target::Pids(pids), None)
    };
    drop(tx);

    let deadline = duration.map(|d| start + d);
    let mut next_interval = args.interval.map(|i| start + i);
    let mut last = (Tally::default(), start);
    let mut exit_status = None;
    let mut interrupted = false;
    let mut exited: BTreeMap<i32, Instant> = BTreeMap::new();
    let targets = match &target {
        Target::Pids(p) => p.len(),
        _ => 0,
    };
    let end = loop {
        let now = Instant::now();
        // Every whole interval that ended before the deadline gets its
        // report, however late this wake-up is.
        while let (Some(due), Some(every)) = (next_interval, args.interval) {
            if due > now || deadline.is_some_and(|d| due >= d) {
                break;
            }
            let tally = counting.snapshot()?;
            let delta = tally.since(&last.0);
            let mut report = build(
                &counting,
                opened.fallback_reason.clone(),
                target.clone(),
                &delta,
                due - last.1,
                &BTreeMap::new(),
                false,
                start,
            );
            report.interval = Some(Interval {
                start_ns: (last.1 - start).as_nanos() as u64,
                end_ns: (due - start).as_nanos() as u64,
            });
            emit_line(out, &report)?;
            last = (tally, due);
            next_interval = Some(due + every);
        }
        if deadline.is_some_and(|d| now >= d) {
            break None;
        }
        let mut wait = if counting.needs_pump() { PUMP } else { Duration::from_secs(3600) };
        for t in [deadline, next_interval].into_iter().flatten() {
            wait = wait.min(t.saturating_duration_since(now));
        }
        let event = rx.recv_timeout(wait);
        counting.pump();
        match event {
            Ok(Event::Signal(sig)) => {
                interrupted = true;
                if let Some(pid) = child {
                    // As strace and perf stat do: the command gets the signal too.
                    let _ = nix::sys::signal::kill(Pid::from_raw(pid), sig);
                }
                break None;
            }
            Ok(Event::CommandExited(status, at)) => {
                exit_status = Some(status);
                break Some(at);
            }
            Ok(Event::TargetExited(pid, at)) => {
                exited.insert(pid, at);
                if exited.len() == targets {
                    break Some(at);
                }
            }
            Err(_) => {}
        }
    };
    // Stop counting first. The window ends when the last target exited,
    // else when counting stopped (the middle of the perf engine's
    // one-by-one disabling), so the rates are over the time counted.
    let stopping = Instant::now();
    counting.stop();
    let end = end.unwrap_or_else(|| stopping + stopping.elapsed() / 2);
    let tally = counting.snapshot()?;
    if child.is_some() && exit_status.is_none() && interrupted {
        while let Ok(ev) = rx.recv_timeout(GRACE) {
            if let Event::CommandExited(status, _) = ev {
                exit_status = Some(status);
                break;
            }
        }
    }
    let mut report = build(
        &counting,
        opened.fallback_reason.clone(),
        target,
        &tally,
        end.saturating_duration_since(start),
        &exited,
        interrupted,
        start,
    );
    if let (Some(c), Some(cmd)) = (child, &command) {
        report.command = Some(CommandInfo { argv: cmd.argv_text.clone(), pid: c, exit_status });
    }
    Ok(report)
}

/// Start counting; the window starts in the middle of the arming (the
/// perf engine enables its counters one by one).
fn started(counting: &mut Counting) -> Result<Instant> {
    let before = Instant::now();
    counting.start()?;
    Ok(before + before.elapsed() / 2)
}

fn secs_text(d: Duration) -> String {
    crate::output::duration_text(d)
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

/// Wait for the command on a thread of its own, so its end is timed when it
/// happens rather than at the next wake-up.
fn watch_child(pid: i32, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || loop {
        let status = match waitpid(Pid::from_raw(pid), None) {
            Ok(WaitStatus::Exited(_, code)) => ExitStatus::Code(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => ExitStatus::Signal(sig as i32),
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        };
        let _ = tx.send(Event::CommandExited(status, Instant::now()));
        return;
    });
}

/// Wait for a `-p` target's exit on a pidfd (no polling of /proc).
fn watch_target(pid: i32, tx: mpsc::Sender<Event>) {
    let Ok(fd) = spawn::pidfd_open(pid) else { return };
    std::thread::spawn(move || {
        use std::os::fd::AsFd;
        loop {
            match crate::measure::sys::ring::poll_in(&[fd.as_fd()], -1) {
                Ok(true) => break,
                Ok(false) => continue,
                Err(_) => return,
            }
        }
        let _ = tx.send(Event::TargetExited(pid, Instant::now()));
    });
}

/// Build the report for a tally over `elapsed`; a `-p` target that exited
/// has its rate over the time it lived.
#[allow(clippy::too_many_arguments)]
fn build(
    counting: &Counting,
    engine_note: Option<String>,
    target: Target,
    tally: &Tally,
    elapsed: Duration,
    exited: &BTreeMap<i32, Instant>,
    interrupted: bool,
    start: Instant,
) -> TraceReport {
    let kernel = crate::inspect::kernel::release().and_then(|r| crate::inspect::kernel::parse_version(&r));
    let secs_of = |pid: i32| {
        let lived = exited.get(&pid).map_or(elapsed, |at| at.saturating_duration_since(start));
        lived.min(elapsed).as_secs_f64().max(1e-9)
    };
    let comm_of = |pid: i32| tally.comms.get(&pid).cloned();
    let mut counts: Vec<CountRow> = tally
        .counts
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| CountRow {
            pid: k.pid,
            tid: k.tid,
            ppid: tally.parents.get(&k.pid).copied(),
            comm: k.comm.map(|c| c.to_string()).or_else(|| comm_of(k.pid)),
            syscall: k.func.name(),
            abi: k.abi,
            clock: ClockRef::of(k.clock),
            count: *v,
            per_sec: *v as f64 / secs_of(k.pid),
            expected: !crate::model::vdso_serves_call(k.abi, k.func, k.clock, kernel),
        })
        .collect();
    counts.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)).then(a.tid.cmp(&b.tid)));
    let mut vsyscall_emulations: Vec<VsyscallRow> = tally
        .vsyscall
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|((pid, f), v)| VsyscallRow {
            pid: *pid,
            comm: comm_of(*pid),
            function: f.name(),
            count: *v,
            per_sec: *v as f64 / secs_of(*pid),
        })
        .collect();
    vsyscall_emulations.sort_by_key(|v| std::cmp::Reverse(v.count));
    let unattributed: Vec<UnattributedRow> = tally
        .unrecorded
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(pid, n)| UnattributedRow { pid: *pid, comm: comm_of(*pid), count: *n })
        .collect();
    // Only the perf engine's --native-only leaves 32-bit calls out.
    let skipped_compat =
        !counting.traces_compat() && arch::HOST_ABI.and_then(Abi::compat).is_some() && !matches!(target, Target::All);
    let exited_rows: Vec<ExitedRow> = exited
        .iter()
        .map(|(pid, at)| ExitedRow { pid: *pid, after_ns: at.saturating_duration_since(start).as_nanos() as u64 })
        .collect();
    let lost = tally.lost_records;
    let findings =
        findings(&counts, &vsyscall_emulations, &unattributed, tally, elapsed.as_secs_f64(), !skipped_compat);
    TraceReport {
        target,
        engine: counting.kind(),
        engine_note,
        duration_ns: elapsed.as_nanos() as u64,
        counts,
        vsyscall_emulations,
        unattributed,
        lost,
        unfollowed: tally.unfollowed,
        exited: exited_rows,
        command: None,
        interrupted,
        interval: None,
        findings,
    }
}

fn who(pid: i32, comm: &Option<String>) -> String {
    match comm {
        Some(c) => format!("pid {pid} ({c})"),
        None => format!("pid {pid}"),
    }
}

fn findings(
    counts: &[CountRow],
    vsyscall: &[VsyscallRow],
    unattributed: &[UnattributedRow],
    tally: &Tally,
    secs: f64,
    compat: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in counts {
        // clock_gettime reads as its clock id (as in DESIGN's example); the
        // others name the syscall so clock_getres is not mistaken for it.
        let what = match (r.clock.map(ClockRef::text), r.syscall) {
            (Some(c), "clock_gettime") => c,
            (Some(c), s) => format!("{s}({c})"),
            (None, s) => s.to_string(),
        };
        let rate = thousands(r.per_sec.round() as u64);
        let from = who(r.pid, &r.comm);
        // In a tree that holds both, say which ABI made the calls.
        let from = if Some(r.abi) == arch::HOST_ABI { from } else { format!("{from}, {} ABI", r.abi.name()) };
        match r.clock {
            Some(ClockRef::Any) => out.push(Finding::new(
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
    for u in unattributed {
        out.push(Finding::new(
            Severity::Warn,
            format!(
                "{}: {} 32-bit clock syscalls were counted but their sampled records were lost, so they are not split by clock (the `unattributed` row)",
                who(u.pid, &u.comm),
                thousands(u.count)
            ),
            Some("use the BPF engine (--engine bpf, root or CAP_BPF+CAP_PERFMON), which splits every call in the kernel".into()),
        ));
    }
    if tally.lost_records > 0 {
        out.push(Finding::new(
            Severity::Warn,
            format!("{} events were lost (BPF: the count map was full; perf: ring buffers overflowed): counts are short by that many", thousands(tally.lost_records)),
            Some(format!("trace fewer processes (-p) or for less time; the BPF map holds {} rows", crate::measure::bpf::MAX_ROWS)),
        ));
    }
    if tally.unfollowed > 0 {
        out.push(Finding::new(
            Severity::Warn,
            format!(
                "{} new processes of the traced tree could not be followed (the traced set was full)",
                thousands(tally.unfollowed)
            ),
            Some(format!("the traced set holds {} processes; trace a smaller tree", crate::measure::bpf::MAX_PROCS)),
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
        let per_thread = self.counts.iter().any(|r| r.tid.is_some());
        let mut header = vec!["PID", "PPID", "COMM", "SYSCALL", "CLOCK", "COUNT", "PER SEC"];
        if per_thread {
            header.insert(1, "TID");
        }
        let mut t = out.table(&header);
        let dash = |v: Option<i32>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        for r in &self.counts {
            let mut row = vec![
                r.pid.to_string(),
                dash(r.ppid),
                out.text(r.comm.as_deref().unwrap_or("-")).into_owned(),
                r.syscall.to_string(),
                r.clock.map_or_else(|| "-".into(), ClockRef::text),
                thousands(r.count),
                per_sec_text(r.per_sec),
            ];
            if per_thread {
                row.insert(1, dash(r.tid));
            }
            t.add_row(row);
        }
        for v in &self.vsyscall_emulations {
            let mut row = vec![
                v.pid.to_string(),
                "-".to_string(),
                out.text(v.comm.as_deref().unwrap_or("-")).into_owned(),
                format!("[vsyscall] {}", v.function),
                "-".into(),
                thousands(v.count),
                per_sec_text(v.per_sec),
            ];
            if per_thread {
                row.insert(1, "-".into());
            }
            t.add_row(row);
        }
        for u in &self.unattributed {
            let mut row = vec![
                u.pid.to_string(),
                "-".to_string(),
                out.text(u.comm.as_deref().unwrap_or("-")).into_owned(),
                "(unattributed)".into(),
                "-".into(),
                thousands(u.count),
                "-".into(),
            ];
            if per_thread {
                row.insert(1, "-".into());
            }
            t.add_row(row);
        }
        let target = match &self.target {
            Target::Pids(p) => format!("pid {}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")),
            Target::All => "all processes".into(),
            Target::Command { argv, pid } => format!("`{}` (pid {pid})", out.text(&argv.join(" "))),
        };
        let span = match self.interval {
            Some(i) => format!(
                "interval +{} … +{}",
                crate::output::duration_text(Duration::from_nanos(i.start_ns)),
                crate::output::duration_text(Duration::from_nanos(i.end_ns))
            ),
            None => crate::output::duration_text(Duration::from_nanos(self.duration_ns)),
        };
        let mut s = format!("{target}, {span}\n{t}\n");
        if let Some(c) = &self.command {
            match c.exit_status {
                Some(ExitStatus::Code(code)) => s += &format!("command exited with status {code}\n"),
                Some(ExitStatus::Signal(n)) => {
                    s += &format!("command was killed by {} (exit status {})\n", signal_name(n), 128 + n)
                }
                None => s += &format!("the command (pid {}) still runs: counting stopped at the deadline\n", c.pid),
            }
        }
        for e in &self.exited {
            s += &format!(
                "pid {} exited after {}; its rates are over that time\n",
                e.pid,
                crate::output::duration_text(Duration::from_nanos(e.after_ns))
            );
        }
        if let Some(why) = &self.engine_note {
            s += &format!("engine: perf ({})\n", out.text(why));
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
        let clocks: Vec<Option<String>> = self.counts.iter().map(|r| r.clock.map(ClockRef::text)).collect();
        let rows: Vec<SyscallSeries<'_>> = self
            .counts
            .iter()
            .zip(&clocks)
            .map(|(r, clock)| SyscallSeries {
                pid: r.pid,
                comm: r.comm.as_deref(),
                syscall: r.syscall,
                clock: clock.as_deref(),
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
        p.family(
            "trace_lost_total",
            Kind::Counter,
            "Events the engine could not keep (BPF map full, perf records dropped).",
        );
        p.sample("trace_lost_total", &[], self.lost);
        Some(p.finish())
    }
}

/// `SIGSEGV` for 11, else `signal N`.
fn signal_name(n: i32) -> String {
    Signal::try_from(n).map_or_else(|_| format!("signal {n}"), |s| s.as_str().to_string())
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
    }
}
