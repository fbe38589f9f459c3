//! A trace session: what to trace (a typed [`TraceRequest`], never the
//! command line's structs), the targets (`-p` processes, the host, a
//! command started under the gate), and the wait loop — duration,
//! intervals, SIGINT/SIGTERM forwarding, exits. Counting itself is
//! [`engine`](super::engine)'s; judging what was counted is
//! `model::trace`'s. `trace` and `check` both trace through here.

use crate::arch::{self, Abi};
use crate::error::{Error, Hint, Misuse, Result};
use crate::inspect::Process;
use crate::measure::sys::spawn;
use crate::measure::trace::engine::{Choice, Counting, Plan};
use crate::measure::trace::own::Own;
use crate::measure::trace::reach::{ReachWatch, Seizure};
use crate::measure::trace::sight::{Sightings, SIGHT};
use crate::measure::trace::Tally;
use crate::progress::Kind;
use crate::progress::{Progress, Target};

pub(crate) mod command;
mod request;
use command::{prepare_command, PreparedCommand};
use nix::sys::signal::{SigSet, Signal};
pub use request::{TraceRequest, TraceTarget};
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// Default `-d` for `-p` and `-a`.
const DEFAULT: Duration = Duration::from_secs(5);
/// How often the perf engine drains its rings.
const PUMP: Duration = Duration::from_millis(20);
/// How long a command gets to exit after a forwarded signal before the
/// summary says it still runs.
const GRACE: Duration = Duration::from_secs(2);
/// How often a command's guardian is continued, should its tree stop it.
const NUDGE: Duration = Duration::from_millis(100);

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

/// What the session traced with, for the report.
#[derive(Debug, Clone)]
pub struct Session {
    pub target: Target,
    pub engine: Kind,
    /// Why it is not the BPF engine, when it is not.
    pub engine_note: Option<String>,
    /// Whether 32-bit (compat) calls were counted.
    pub traces_compat: bool,
    /// `-- CMD`: the command and how it ended (set when the session ends).
    pub command: Option<CommandInfo>,
    /// Rows are split by call site (`--sites`).
    pub sites: bool,
    /// Stacks were counted (`--stacks`).
    pub stacks: bool,
    /// Seccomp engine: the channel it counted through, and why.
    pub seccomp_channel: Option<crate::measure::trace::engines::seccomp::ChannelUsed>,
}

/// One window of counts: an interval, or the whole trace.
#[derive(Debug)]
pub struct Window<'a> {
    pub tally: &'a Tally,
    pub elapsed: Duration,
    /// When counting started.
    pub start: Instant,
    /// The wall clock then (interval headers show it); `None`: not read.
    pub wall_start: Option<SystemTime>,
    /// `-p` targets that exited, and when.
    pub exited: &'a BTreeMap<i32, Instant>,
    /// Ended early by SIGINT or SIGTERM.
    pub interrupted: bool,
    /// An interval's bounds from the start of counting; `None` for the whole trace.
    pub bounds: Option<(Duration, Duration)>,
    /// What was read of each process at first sight (again after an exec).
    pub seen: &'a Sightings,
    /// `-- CMD`: tracers of the tree found holding vdsoctl or its guardian
    /// (the whole trace's; an interval's window has none).
    pub seized: &'a [Seizure],
}

/// The whole trace once it ended.
#[derive(Debug)]
pub struct Traced {
    pub session: Session,
    pub tally: Tally,
    pub elapsed: Duration,
    pub start: Instant,
    /// The wall clock when counting started.
    pub wall_start: SystemTime,
    pub exited: BTreeMap<i32, Instant>,
    pub interrupted: bool,
    /// `-- CMD` was stopped at its time limit.
    pub timed_out: bool,
    pub seen: Sightings,
    /// `-- CMD`: tracers of the tree found holding vdsoctl or its guardian.
    pub seized: Vec<Seizure>,
}

impl Traced {
    /// The whole trace as one window.
    pub fn window(&self) -> Window<'_> {
        Window {
            tally: &self.tally,
            elapsed: self.elapsed,
            start: self.start,
            wall_start: Some(self.wall_start),
            exited: &self.exited,
            interrupted: self.interrupted,
            seized: &self.seized,
            bounds: None,
            seen: &self.seen,
        }
    }
}

/// What wakes the wait loop.
enum Event {
    /// SIGINT or SIGTERM reached vdsoctl.
    Signal(Signal),
    /// The traced command ended, at this moment.
    CommandExited(ExitStatus, Instant),
    /// The last process of the command's tree was gone, at this moment.
    TreeGone(Instant),
    /// A `-p` target exited, at this moment.
    TargetExited(i32, Instant),
}

/// The processes `-p` names: a thread id stands for its process (said on
/// stderr), a process named twice is traced once.
fn resolve_pids(pids: &[i32], progress: Option<fn(&Progress<'_>)>) -> Result<Vec<Process>> {
    let mut processes: Vec<Process> = Vec::new();
    for pid in pids {
        let p = Process::open(Some(*pid))?;
        let tgid = p.tgid()?;
        let p = if tgid == p.pid() {
            p
        } else {
            if let Some(say) = progress {
                say(&Progress::ThreadOfProcess { tid: *pid, tgid });
            }
            Process::open(Some(tgid))?
        };
        if !processes.iter().any(|q| q.pid() == p.pid()) {
            processes.push(p);
        }
    }
    Ok(processes)
}

/// Block SIGINT and SIGTERM in the calling thread (threads spawned later
/// inherit the mask), so one thread can `wait()` for them: no handler, no
/// unsafe. `serve` stops on them the same way.
pub fn block_stop_signals() -> Result<SigSet> {
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().map_err(|e| Error::Facility {
        errno: Some(e as i32),
        what: crate::error::Facility::Other(format!("cannot block SIGINT and SIGTERM: {e}")),
        hint: Hint::Retry,
    })?;
    // Started with them ignored (`vdsoctl … &` from a script), they would
    // be dropped when sent: taken back, now that they are blocked.
    crate::measure::sys::signals::take_back_ignored(&[Signal::SIGINT as i32, Signal::SIGTERM as i32]).map_err(|e| {
        Error::Facility {
            errno: e.raw_os_error(),
            what: crate::error::Facility::Other(format!("cannot take back an ignored SIGINT or SIGTERM: {e}")),
            hint: Hint::Retry,
        }
    })?;
    Ok(signals)
}

/// SIGINT and SIGTERM as events on a thread of their own.
fn catch_signals(tx: mpsc::Sender<Event>) -> Result<()> {
    let signals = block_stop_signals()?;
    std::thread::spawn(move || {
        while let Ok(sig) = signals.wait() {
            if tx.send(Event::Signal(sig)).is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Trace as `req` says until the duration ends, the command or every
/// target exits, or SIGINT/SIGTERM; with an interval, `on_interval` gets
/// each whole interval's window on the way.
pub fn collect(req: &TraceRequest, on_interval: &mut dyn FnMut(&Session, &Window<'_>) -> Result<()>) -> Result<Traced> {
    let (processes, command) = match &req.target {
        TraceTarget::Pids(pids) => (resolve_pids(pids, req.progress)?, None),
        TraceTarget::All => (Vec::new(), None),
        TraceTarget::Command(argv) => (Vec::new(), Some(prepare_command(argv)?)),
    };
    let duration = match (&command, req.duration) {
        (None, None) => Some(DEFAULT),
        (_, d) => d,
    };
    let (tx, rx) = mpsc::channel::<Event>();
    catch_signals(tx.clone())?;
    let (mut counting, engine_note, armed) = open_and_arm(req, command.as_ref(), &processes, duration, &tx)?;
    let Armed { target, child, child_fd, tree, reach, start } = armed;
    let wall_start = SystemTime::now().checked_sub(start.elapsed()).unwrap_or(SystemTime::UNIX_EPOCH);
    drop(tx);
    let mut session = Session {
        target,
        engine: counting.kind(),
        engine_note,
        traces_compat: counting.traces_compat(),
        command: None,
        sites: req.plan.sites,
        stacks: req.plan.stacks,
        seccomp_channel: counting.seccomp_channel(),
    };
    let targets = match &session.target {
        Target::Pids(p) => p.len(),
        _ => 0,
    };
    let mut w = Waiting::new(req, child, child_fd, start, duration, targets);
    w.wall_start = wall_start;
    // The command's executable names its addresses after it exited.
    if let Some(c) = command.as_ref().filter(|_| req.plan.sites || req.plan.stacks) {
        w.sightings.add_file(std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
            c.path.as_bytes(),
        )));
    }
    w.tree = tree;
    w.reach = reach;
    let mut at_deadline = false;
    let end = loop {
        let now = Instant::now();
        w.tree.nudge();
        w.enforce_time_limit(now);
        if let Some(end) = w.watch_tree(now, &counting) {
            break end;
        }
        w.say_ignored(now);
        w.intervals(now, &mut counting, &session, on_interval)?;
        if w.deadline.is_some_and(|d| now >= d) {
            at_deadline = true;
            break None;
        }
        let event = rx.recv_timeout(w.wait(now, &counting));
        counting.pump();
        if req.sight || w.own.is_some() {
            let procs = counting.processes();
            if let Some(own) = &mut w.own {
                own.look(procs.iter().copied());
            }
            if req.sight {
                w.sightings.look(procs);
                counting.tend_sites(&w.sightings);
            }
        }
        if let Some(end) = w.event(event) {
            break end;
        }
    };
    // Stop counting first. The window ends when the last target exited,
    // else when counting stopped (the middle of the perf engine's
    // one-by-one disabling), so the rates are over the time counted.
    let stopping = Instant::now();
    w.let_go_of_tree(at_deadline, &rx);
    let seized = w.reach.take().map(ReachWatch::finish).unwrap_or_default();
    counting.stop();
    let end = end.unwrap_or_else(|| stopping + stopping.elapsed() / 2);
    let mut tally = counting.snapshot()?;
    if let Some(own) = &mut w.own {
        own.strip(&mut tally);
    }
    if req.sight {
        w.sightings.look(tally.processes());
        w.sightings.after_execs(&tally.execs);
    }
    if let (Some(c), Some(cmd)) = (child, &command) {
        session.command = Some(CommandInfo { argv: cmd.argv_text.clone(), pid: c, exit_status: w.exit_status });
    }
    let Waiting { exited, interrupted, timed_out, sightings: seen, .. } = w;
    let elapsed = end.saturating_duration_since(start);
    Ok(Traced { session, tally, elapsed, start, wall_start, exited, interrupted, timed_out, seen, seized })
}

/// What ends the wait: `Some(Some(at))`, everything traced ended at `at`;
/// `Some(None)`, stop now (the deadline, a signal); `None`, go on.
type End = Option<Option<Instant>>;

/// The state of [`collect`]'s wait: what has happened so far.
struct Waiting<'r> {
    req: &'r TraceRequest,
    child: Option<i32>,
    child_fd: Option<std::os::fd::OwnedFd>,
    start: Instant,
    wall_start: SystemTime,
    deadline: Option<Instant>,
    next_interval: Option<Instant>,
    last: (Tally, Instant),
    exit_status: Option<ExitStatus>,
    interrupted: bool,
    exited: BTreeMap<i32, Instant>,
    /// `-p`: how many targets; all exited ends the trace.
    targets: usize,
    /// `-- CMD`: the command has exited but the seccomp engine still answers
    /// its tree's calls (a process it left behind), since this moment.
    command_done: Option<Instant>,
    /// `-- CMD`: signals forwarded so far, and when the last one was.
    forwarded: Option<(u32, Instant, Signal)>,
    said_ignored: bool,
    said_lingers: bool,
    /// `-- CMD` with a time limit: when it is up, and whether it was reached.
    time_limit: Option<Instant>,
    timed_out: bool,
    /// `-- CMD`: dropped (or killed), the guardian kills what is left of the tree.
    tree: spawn::TreeGuard,
    /// `-- CMD`: who of the tree traces vdsoctl or the guardian, looked at
    /// while it runs.
    reach: Option<ReachWatch>,
    /// When the last process of the tree was gone.
    tree_gone: Option<Instant>,
    /// When vdsoctl had the tree killed (`--timeout`, signals).
    tree_killed: Option<Instant>,
    sightings: Sightings,
    /// `-a`: vdsoctl's own processes, judged while they live and left out
    /// of every window ([`Own`]).
    own: Option<Own>,
}

impl<'r> Waiting<'r> {
    fn new(
        req: &'r TraceRequest,
        child: Option<i32>,
        child_fd: Option<std::os::fd::OwnedFd>,
        start: Instant,
        duration: Option<Duration>,
        targets: usize,
    ) -> Waiting<'r> {
        Waiting {
            req,
            child,
            child_fd,
            start,
            wall_start: SystemTime::UNIX_EPOCH,
            deadline: duration.map(|d| start + d),
            next_interval: req.interval.map(|i| start + i),
            last: (Tally::default(), start),
            exit_status: None,
            interrupted: false,
            exited: BTreeMap::new(),
            targets,
            command_done: None,
            forwarded: None,
            said_ignored: false,
            said_lingers: false,
            time_limit: req.timeout.filter(|_| child.is_some()).map(|t| start + t),
            timed_out: false,
            tree: spawn::TreeGuard::default(),
            reach: None,
            tree_gone: None,
            tree_killed: None,
            sightings: match Sightings::new(req.plan.stacks || req.plan.sites) {
                s if req.target == TraceTarget::All => s.without_rechecks(),
                s => s,
            },
            own: (req.target == TraceTarget::All).then(Own::new),
        }
    }

    fn kill(&self, sig: i32) {
        let _ = self.child_fd.as_ref().map(|fd| spawn::pidfd_kill(fd.as_fd(), sig));
    }

    fn say(&self, p: &Progress<'_>) {
        if let Some(say) = self.req.progress {
            say(p);
        }
    }

    /// `--timeout`, a deadline for the whole tree: SIGTERM to the command
    /// when it is up, and everything of the tree killed a grace later (at
    /// once if the command itself has exited: what it left behind).
    fn enforce_time_limit(&mut self, now: Instant) {
        let (Some(limit), Some(pid)) = (self.time_limit, self.child) else { return };
        if now < limit || self.tree_gone.is_some() || self.tree_killed.is_some() {
            return;
        }
        if !self.timed_out {
            self.timed_out = true;
            self.said_ignored = true;
            let after = limit - self.start;
            if self.command_done.is_some() {
                self.say(&Progress::TreeTimedOut { pid, after });
            } else {
                self.say(&Progress::TimedOut { pid, after, grace: GRACE });
                self.kill(Signal::SIGTERM as i32);
                self.forwarded = Some((1, now, Signal::SIGTERM));
                return;
            }
        }
        let since = self.forwarded.map_or(limit, |(_, at, _)| at);
        if self.command_done.is_some() || now >= since + GRACE {
            self.kill_tree(now);
        }
    }

    fn kill_tree(&mut self, now: Instant) {
        // By pid too, not only through the guardian (which a tree run as
        // root may have stopped): the command itself, through its pidfd.
        self.kill(Signal::SIGKILL as i32);
        self.tree.kill_tree();
        self.tree_killed = Some(now);
    }

    /// The command exited: wait for what its tree left behind, saying so
    /// once; a tree vdsoctl was told to stop (a signal, `--timeout`) is
    /// killed a grace after the command's exit. The tree is the command
    /// and every process descended from it, whatever it does with its
    /// session or its parent: what its guardian reaps. It ends when the
    /// guardian has reaped the last of it (and, for the seccomp engine,
    /// the filter's listener hung up), for every engine alike.
    fn watch_tree(&mut self, now: Instant, counting: &Counting) -> End {
        let done = self.command_done?;
        let gone = match counting.tree_ended() {
            Some(ended) => ended.zip(self.tree_gone).map(|(a, b)| a.max(b)),
            None => self.tree_gone,
        };
        if let Some(gone) = gone {
            return Some(Some(gone.max(done)));
        }
        match self.tree_killed {
            // Killed and still not gone a grace later: not waited for.
            Some(at) if now >= at + GRACE => return Some(Some(done)),
            None if self.interrupted && now >= done + GRACE => self.kill_tree(now),
            _ => {}
        }
        if !self.said_lingers && self.tree_killed.is_none() && now >= done + GRACE {
            self.said_lingers = true;
            if let Some(pid) = self.child {
                self.say(&Progress::TreeLingers { pid });
            }
        }
        None
    }

    /// The trace ended: at `-d`, a tree that needs no answer from vdsoctl
    /// runs on (released); else what is left of it is killed, and waited
    /// for (a grace at most) before counting stops, so no call of it is
    /// ever left without an answer. The command's status, if it comes.
    fn let_go_of_tree(&mut self, at_deadline: bool, rx: &mpsc::Receiver<Event>) {
        if self.child.is_none() || self.tree_gone.is_some() {
            return;
        }
        if at_deadline && !self.timed_out {
            self.tree.release();
            return;
        }
        self.tree.kill_tree();
        let until = Instant::now() + GRACE;
        while let Ok(ev) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            match ev {
                Event::CommandExited(status, _) => self.exit_status = self.exit_status.or(Some(status)),
                Event::TreeGone(at) => {
                    self.tree_gone = Some(at);
                    return;
                }
                _ => {}
            }
        }
    }

    /// A forwarded signal the command has not died of, a grace later.
    fn say_ignored(&mut self, now: Instant) {
        if let (Some((_, at, sig)), Some(pid), false) = (self.forwarded, self.child, self.said_ignored) {
            if self.command_done.is_none() && now >= at + GRACE {
                self.said_ignored = true;
                self.say(&Progress::SignalIgnored { pid, signal: sig.as_str() });
            }
        }
    }

    /// Every whole interval that ended by the deadline gets its report
    /// (the last one too: `-d 3s --interval 1s` prints +2–3 s). One report
    /// a call: a wake-up more than an interval late (a slow reader of
    /// stdout) merges the whole intervals it missed into one report, whose
    /// bounds say so, so a signal or the deadline is heard between reports.
    fn intervals(
        &mut self,
        now: Instant,
        counting: &mut Counting,
        session: &Session,
        on_interval: &mut dyn FnMut(&Session, &Window<'_>) -> Result<()>,
    ) -> Result<()> {
        let (Some(due), Some(every)) = (self.next_interval, self.req.interval) else { return Ok(()) };
        let Some(due) = report_until(due, every, self.deadline.map_or(now, |d| d.min(now))) else { return Ok(()) };
        let mut tally = counting.snapshot()?;
        if let Some(own) = &mut self.own {
            own.strip(&mut tally);
        }
        if self.req.sight {
            self.sightings.look(tally.processes());
            self.sightings.after_execs(&tally.execs);
        }
        let delta = tally.since(&self.last.0);
        let window = Window {
            tally: &delta,
            elapsed: due - self.last.1,
            start: self.start,
            wall_start: Some(self.wall_start),
            exited: &BTreeMap::new(),
            interrupted: false,
            seized: &[],
            bounds: Some((self.last.1 - self.start, due - self.start)),
            seen: &self.sightings,
        };
        on_interval(session, &window)?;
        self.last = (tally, due);
        self.next_interval = Some(due + every);
        Ok(())
    }

    /// How long to sleep for the next event, at most until the next thing due.
    fn wait(&self, now: Instant, counting: &Counting) -> Duration {
        let mut wait = if counting.needs_pump() { PUMP } else { Duration::from_secs(3600) };
        if self.req.sight {
            wait = wait.min(self.sightings.period(self.child.is_some()));
        } else if self.own.is_some() {
            wait = wait.min(SIGHT);
        }
        if self.command_done.is_some() {
            wait = wait.min(PUMP);
        }
        if self.child.is_some() && self.tree_gone.is_none() {
            wait = wait.min(NUDGE);
        }
        if let (Some((_, at, _)), false) = (self.forwarded, self.said_ignored) {
            wait = wait.min((at + GRACE).saturating_duration_since(now) + Duration::from_millis(1));
        }
        if let (Some(limit), None) = (self.time_limit, self.tree_killed) {
            let next = match self.forwarded {
                Some((_, at, _)) if self.timed_out => at + GRACE,
                _ => limit,
            };
            wait = wait.min(next.saturating_duration_since(now) + Duration::from_millis(1));
        }
        for t in [self.deadline, self.next_interval].into_iter().flatten() {
            wait = wait.min(t.saturating_duration_since(now));
        }
        wait
    }

    /// A signal, the command's exit, a target's exit.
    fn event(&mut self, event: std::result::Result<Event, mpsc::RecvTimeoutError>) -> End {
        match event {
            Ok(Event::Signal(sig)) => {
                self.interrupted = true;
                // Nothing to forward to: -p and -a, or a command that has
                // exited while processes it left behind keep its filter.
                if self.child.is_none() || self.command_done.is_some() {
                    return Some(None);
                }
                // As strace does: the first signal goes to the command and
                // counting goes on until it exits; the second kills it; a
                // third stops waiting for its tree.
                let n = self.forwarded.map_or(0, |(n, _, _)| n) + 1;
                match n {
                    1 => self.kill(sig as i32),
                    2 => self.kill(Signal::SIGKILL as i32),
                    _ => return Some(None),
                }
                self.forwarded = Some((n, Instant::now(), sig));
                self.said_ignored = n > 1;
            }
            Ok(Event::CommandExited(status, at)) => {
                self.exit_status = Some(status);
                self.command_done = Some(at);
            }
            Ok(Event::TreeGone(at)) => self.tree_gone = Some(at),
            Ok(Event::TargetExited(pid, at)) => {
                self.exited.insert(pid, at);
                if self.exited.len() == self.targets {
                    return Some(Some(at));
                }
            }
            Err(_) => {}
        }
        None
    }
}

/// The targets added and counting started.
struct Armed {
    target: Target,
    /// `-- CMD`: the command's pid, and a pidfd taken before it could exit
    /// (signals go to that very process, never to one that reused its pid).
    child: Option<i32>,
    child_fd: Option<std::os::fd::OwnedFd>,
    /// Dropped, what is left of a guarded command's tree is killed.
    tree: spawn::TreeGuard,
    /// `-- CMD`: the look at who traces vdsoctl, started before the command ran.
    reach: Option<ReachWatch>,
    start: Instant,
}

/// Open the engine `req` asks for and arm it. `auto` with a command falls
/// back to the seccomp engine also when perf opened but its counters were
/// refused (perf_event_paranoid, a sandbox). Returns the engine, why it is
/// not the preferred one, and the armed targets.
fn open_and_arm(
    req: &TraceRequest,
    command: Option<&PreparedCommand>,
    processes: &[Process],
    duration: Option<Duration>,
    tx: &mpsc::Sender<Event>,
) -> Result<(Counting, Option<String>, Armed)> {
    let plan = Plan {
        all: req.target == TraceTarget::All,
        command: command.is_some(),
        ptrace_user: command.and_then(|c| c.ptrace_user),
        ..req.plan.clone()
    };
    let open = |choice: Choice| -> Result<(Counting, Option<String>)> {
        let opened = Counting::open(choice, &plan)?;
        if opened.counting.kind() == Kind::Seccomp && req.duration.is_some() {
            return Err(Error::Misuse(Misuse::SeccompNoDuration));
        }
        Ok((opened.counting, opened.fallback_reason))
    };
    let say = |engine: Kind, why: &str| {
        if let Some(say) = req.progress {
            say(&Progress::Fallback { engine, why });
        }
    };
    let (mut counting, note) = open(req.engine)?;
    // fentry refused, the sys_enter program counts the same: the note
    // stays in the report, no fallback is announced.
    if let Some(why) = crate::measure::trace::engine::announced_fallback(counting.kind(), note.as_deref()) {
        say(counting.kind(), why);
    }
    match arm(&mut counting, req, command, processes, duration, tx) {
        Err(perf_err @ Error::Facility { .. })
            if req.engine == Choice::Auto && command.is_some() && counting.kind() == Kind::Perf =>
        {
            let (mut counting, _) = open(Choice::Seccomp)?;
            let perf_why = perf_err.to_string();
            let why = note
                .as_deref()
                .map(crate::measure::trace::engine::short)
                .into_iter()
                .chain([crate::measure::trace::engine::short(&perf_why)])
                .collect::<Vec<_>>()
                .join("; and ");
            say(Kind::Seccomp, &why);
            let armed = arm(&mut counting, req, command, processes, duration, tx)?;
            Ok((counting, Some(why), armed))
        }
        armed => Ok((counting, note, armed?)),
    }
}

/// Add the targets, start counting, and take the moment the window opens:
/// a command is forked behind a gate, counted, then released to exec.
fn arm(
    counting: &mut Counting,
    req: &TraceRequest,
    command: Option<&PreparedCommand>,
    processes: &[Process],
    duration: Option<Duration>,
    tx: &mpsc::Sender<Event>,
) -> Result<Armed> {
    // A process whose ABI is unknown is taken as the kernel's own; a
    // kernel of an architecture the table lacks is an error, never
    // another architecture's numbers.
    let host = crate::inspect::kernel::abi().or(arch::HOST_ABI).ok_or_else(|| Error::Facility {
        errno: None,
        what: crate::error::Facility::UnknownSyscallNumbers { machine: crate::inspect::kernel::machine() },
        hint: Hint::UnsupportedArch,
    })?;
    let start;
    let mut child_fd = None;
    let mut tree = spawn::TreeGuard::default();
    let mut reach = None;
    let (target, child) = if let Some(cmd) = command {
        let mut gated = loop {
            let filter = counting.command_filter();
            let mut gated = spawn::fork_gated(&cmd.path, &cmd.argv, &cmd.envp, req.command_stdout_to_stderr, filter)
                .map_err(|e| match e {
                    spawn::GateError::Fork(source) => Error::Spawn { cmd: cmd.display.clone(), source },
                    spawn::GateError::Filter(source) => Error::Facility {
                        errno: source.raw_os_error(),
                        what: crate::error::Facility::Other(format!(
                            "the seccomp engine is refused: installing its filter in the command failed: {source}"
                        )),
                        hint: Hint::SeccompRefused,
                    },
                })?;
            let listener = gated.listener.take();
            let armed = counting
                .add_command(gated.pid, cmd.abi.unwrap_or(host), &cmd.comm, listener)
                .and_then(|()| counting.start());
            match armed {
                Ok(()) => break gated,
                // The seize refused (vdsoctl traced itself, a sandbox
                // without ptrace): once more, counting through a listener.
                Err(_) if counting.fall_back_from_ptrace() => gated.abandon(),
                Err(e) => {
                    gated.abandon(); // closes the gate: the child exits without exec
                    return Err(e);
                }
            }
        };
        let child = gated.pid;
        child_fd = spawn::pidfd_open(child).ok();
        if let (Some(say), Some(why)) = (req.progress, counting.seccomp_listener()) {
            say(&Progress::SeccompListener { why });
        }
        let target = Target::Command { argv: cmd.argv_text.clone(), pid: child };
        // Said before the command runs, so its own output comes after.
        if let Some(say) = req.progress {
            say(&Progress::Armed { target: &target, duration });
        }
        // The window is exec to exit: start the clock before the child may
        // run, and take the end from the moment waitpid returned.
        start = Instant::now();
        // vdsoctl's own --timeout is SIGTERM, a grace, SIGKILL; the
        // guardian's backstop is that SIGKILL's moment (a margin later:
        // its clock starts now), should vdsoctl be held then (a root tree
        // can ptrace-stop it). Given before the command may run.
        if let Some(t) = req.timeout {
            gated.guardian_deadline(t + GRACE + Duration::from_millis(250));
        }
        // Looking before the command may run: a tree that stops vdsoctl's
        // main thread at once is seen by this other one.
        reach = gated.guardian_pid().and_then(ReachWatch::start);
        if let Err(source) = gated.release() {
            gated.abandon();
            return Err(Error::Spawn { cmd: cmd.display.clone(), source });
        }
        let (wait, guard) = gated.into_wait().map_err(|source| Error::Spawn { cmd: cmd.display.clone(), source })?;
        tree = guard;

        watch_child(wait, tx.clone());
        (target, Some(child))
    } else if req.target == TraceTarget::All {
        start = started(counting)?;
        if let Some(say) = req.progress {
            say(&Progress::Armed { target: &Target::All, duration });
        }
        (Target::All, None)
    } else {
        for p in processes {
            let abi = p.exe_header().and_then(|h| Abi::from_elf(h.is_64, h.machine)).unwrap_or(host);
            counting.add_process(p, abi, crate::inspect::process::parent_of(p.pid()))?;
        }
        for p in processes {
            watch_target(p.pid(), tx.clone());
        }
        start = started(counting)?;
        let target = Target::Pids(processes.iter().map(Process::pid).collect());
        if let Some(say) = req.progress {
            say(&Progress::Armed { target: &target, duration });
        }
        (target, None)
    };
    Ok(Armed { target, child, child_fd, tree, reach, start })
}

/// Start counting; the window starts in the middle of the arming (the
/// perf engine enables its counters one by one).
fn started(counting: &mut Counting) -> Result<Instant> {
    let before = Instant::now();
    counting.start()?;
    Ok(before + before.elapsed() / 2)
}

/// Wait for the command on a thread of its own, so its end is timed when it
/// happens rather than at the next wake-up.
fn watch_child(wait: spawn::CommandWait, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        let (status, tree) = match wait.wait() {
            Ok((spawn::Waited::Exited(code), tree)) => (ExitStatus::Code(code), tree),
            Ok((spawn::Waited::Signaled(sig), tree)) => (ExitStatus::Signal(sig), tree),
            Err(_) => return,
        };
        let _ = tx.send(Event::CommandExited(status, Instant::now()));
        tree.wait();
        let _ = tx.send(Event::TreeGone(Instant::now()));
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

/// Where the next report ends: the last whole interval (`due`, `due +
/// every`, …) that ended by `until` (now, or the deadline) — one report
/// for every interval a late wake-up missed; `None` when none is due yet.
fn report_until(due: Instant, every: Duration, until: Instant) -> Option<Instant> {
    if due > until || every.is_zero() {
        return None;
    }
    let missed = ((until - due).as_nanos() / every.as_nanos()).min(u128::from(u32::MAX)) as u32;
    Some(due + every * missed)
}

#[cfg(test)]
mod interval_tests {
    use super::*;

    #[test]
    fn a_late_wake_up_reports_the_whole_intervals_it_missed_at_once() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(report_until(t0 + ms(100), ms(100), t0 + ms(99)), None);
        assert_eq!(report_until(t0 + ms(100), ms(100), t0 + ms(100)), Some(t0 + ms(100)));
        assert_eq!(report_until(t0 + ms(100), ms(100), t0 + ms(199)), Some(t0 + ms(100)));
        // 10 s late: one report, ending at the last whole interval.
        assert_eq!(report_until(t0 + ms(100), ms(100), t0 + ms(10_050)), Some(t0 + ms(10_000)));
        assert_eq!(report_until(t0 + ms(100), Duration::ZERO, t0 + ms(500)), None);
    }
}
