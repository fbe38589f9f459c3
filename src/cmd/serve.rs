//! `serve`: a Prometheus exporter. `/metrics` carries the host audit (the
//! checks `check` runs, as status gauges), facts as `_info` metrics
//! (clocksource, vsyscall mode, kernel release, vDSO symbols), per-clock
//! costs from a quick bench, and per-process clock syscall counters from the
//! trace engine, which runs system-wide for as long as the exporter does.
//!
//! Everything is measured in the background, every `--interval`, by two
//! threads — the audit and the rates — each of which replaces its section of
//! the exposition whole. A scrape copies the last sections and never waits
//! on a measurement. SIGINT/SIGTERM stop the server and close every perf
//! event (which detaches the tracing) before exiting 0.
//!
//! HTTP is hyper on a tokio current-thread runtime, in its own thread, with
//! limits no client can push past (connections, timeouts, sizes): see
//! `serve/http.rs`.
//!
//! This file is the loop and the wiring: the threads, what each gathers
//! (the host snapshot and bench, the trace engine's tallies, what /proc
//! says of their processes) and hands to `model::serve`, which judges and
//! keeps the books, and `render::serve`, which writes the sections.
//!
//! Measurement note: while the trace engine runs, every syscall of the host
//! passes its tracepoint, so the bench's `path="syscall"` cost includes that
//! overhead; the libc and vDSO paths make no syscall and are unaffected.

mod http;

use super::Outcome;
use crate::arch;
use crate::error::{Error, Facility, Result};
use crate::inspect::host::{HostSnapshot, KernelFacts};
use crate::inspect::{kernel, Process};
use crate::measure::trace::own::Own;
use crate::measure::trace::Tally;
use crate::model::host;
use crate::model::observe::{Observation, Unseen};
use crate::model::serve::{AuditFacts, Book, Costs, Counted, Life, Watch};
use crate::render::note;
use crate::resolve::ServeRequest;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often idle threads look at the stop flag.
const TICK: Duration = Duration::from_millis(200);

/// `vdsoctl serve`.
pub fn run(req: &ServeRequest) -> Result<Outcome> {
    // Block SIGINT/SIGTERM before any thread exists (threads inherit the
    // mask); one thread waits for them — no handler, no unsafe.
    let signals = crate::measure::trace::session::block_stop_signals()?;
    let server = http::Server::bind(&req.addrs, &req.listen)?;
    let bound = server.local_addr().map_or_else(|| req.listen.clone(), |a| a.to_string());

    let shared = Arc::new(Shared::default());
    let stop = Arc::new(Stop::default());
    {
        let (stop, http_stop) = (stop.clone(), server.stopper());
        spawn("signals", move || {
            if signals.wait().is_ok() {
                stop.set();
                http_stop.stop();
            }
        })?;
    }
    let interval = req.interval;
    let max_series = req.max_series;
    let audit = {
        let (shared, stop) = (shared.clone(), stop.clone());
        spawn("audit", move || audit_loop(&shared, &stop, interval))?
    };
    let rates = {
        let (shared, stop) = (shared.clone(), stop.clone());
        spawn("rates", move || rates_loop(&shared, &stop, interval, max_series))?
    };
    let shares = {
        let (shared, stop) = (shared.clone(), stop.clone());
        spawn("shares", move || shares_loop(&shared, &stop, interval, max_series))?
    };
    note(format_args!(
        "serving http://{bound}/metrics (refreshed every {}, at most {max_series} per-process series)",
        humantime(interval)
    ));
    let metrics: http::Metrics = {
        let shared = shared.clone();
        Arc::new(move || shared.metrics())
    };
    let served = spawn("http", move || server.run(metrics))?.join();
    // The HTTP thread ends on a stop signal; if it failed to start, or
    // panicked, stop the rest too and say so.
    stop.set();
    // The rates thread drops the trace engine on its way out: every perf
    // event is closed, nothing stays attached.
    let _ = rates.join();
    let _ = shares.join();
    let _ = audit.join();
    match served {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(Error::Facility {
                errno: None,
                what: Facility::ServerStopped,
                hint: "please report it, with the message above".into(),
            })
        }
    }
    note(format_args!("stopped"));
    Ok(Outcome::Clean)
}

/// The audit thread: the host audit every `interval`, and before the first
/// window as soon as the rates thread publishes one.
fn audit_loop(shared: &Shared, stop: &Stop, interval: Duration) {
    let mut watch = Watch::default();
    loop {
        let seen = shared.published.load(std::sync::atomic::Ordering::Acquire);
        let counted = shared.counted.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let kernel = watch.closes(&counted).then(KernelFacts::read);
        let observed = watch.observe(counted, kernel.as_ref());
        let pending = matches!(observed, Observation::Unseen(Unseen::NotYet));
        let text: Arc<str> = audit_section(observed, &shared.costs).into();
        *shared.audit.lock().unwrap_or_else(|e| e.into_inner()) = text;
        // Before the first window, audit again as soon as the rates
        // thread publishes, not an interval later.
        let until = Instant::now() + interval;
        while !(pending && shared.published.load(std::sync::atomic::Ordering::Acquire) != seen) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            if stop.wait(if pending { TICK.min(left) } else { left }) {
                return;
            }
        }
        if stop.is_set() {
            return;
        }
    }
}

/// A named thread (its name is its comm in /proc/PID/task/TID: the bench
/// script splits the exporter's CPU time by it).
fn spawn<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new().name(name.into()).spawn(f).map_err(|e| Error::Facility {
        errno: None,
        what: Facility::ThreadSpawn { name: name.to_string(), source: e },
        hint: "raise the task limit (ulimit -u, systemd TasksMax)".into(),
    })
}

/// The exposition's sections, each replaced whole by its refresher.
#[derive(Debug)]
struct Shared {
    audit: Mutex<Arc<str>>,
    rates: Mutex<Arc<str>>,
    /// `top`'s CPU shares per program (empty where the sampler is refused).
    shares: Mutex<Arc<str>>,
    /// The rates thread's last snapshot, for the audit's observation.
    counted: Mutex<Counted>,
    /// How many times `counted` was published.
    published: std::sync::atomic::AtomicU64,
    /// One raw syscall's cost, from the audit's bench, for the CPU series.
    costs: Mutex<Arc<Costs>>,
}

impl Default for Shared {
    fn default() -> Shared {
        Shared {
            audit: Mutex::new(Arc::from("")),
            rates: Mutex::new(Arc::from("")),
            shares: Mutex::new(Arc::from("")),
            counted: Mutex::new(Counted::NotYet),
            published: std::sync::atomic::AtomicU64::new(0),
            costs: Mutex::new(Arc::new(Costs::new())),
        }
    }
}

impl Shared {
    /// The whole exposition: build info, then the last audit and rates.
    fn metrics(&self) -> String {
        let audit = self.audit.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let rates = self.rates.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let shares = self.shares.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut text = crate::render::serve::build_info();
        text.reserve(audit.len() + rates.len() + shares.len());
        text += &audit;
        text += &rates;
        text += &shares;
        text
    }
}

/// A stop flag threads can sleep on.
#[derive(Debug, Default)]
struct Stop {
    flag: Mutex<bool>,
    cv: Condvar,
}

impl Stop {
    fn set(&self) {
        *self.flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    fn is_set(&self) -> bool {
        *self.flag.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleep up to `d`; true when stopping.
    fn wait(&self, d: Duration) -> bool {
        let guard = self.flag.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self.cv.wait_timeout_while(guard, d, |stop| !*stop).unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

// ------------------------------------------------------------------ audit

/// The host audit (with what the trace engine saw bypass the vDSO) and
/// the facts beside it, as one section: gathered here, judged by
/// `model::serve`, written by `render::serve`. The bench's raw syscall
/// costs go to `costs`, for the rates thread's CPU series.
fn audit_section(observed: &Observation, costs: &Mutex<Arc<Costs>>) -> String {
    let started = Instant::now();
    let facts = gather_audit();
    let audit = crate::model::serve::judge_audit(facts, observed);
    if let Some(c) = &audit.costs {
        *costs.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(c.clone());
    }
    let took = started.elapsed();
    crate::render::serve::audit(&audit, took, unix_now())
}

/// What the audit reads: this process's host snapshot and a clock bench,
/// the kernel's release and clocksource, the [vsyscall] page's mode's
/// evidence and the native vDSO image.
fn gather_audit() -> AuditFacts {
    let release = kernel::release();
    let host = match Process::open(None).map(|me| HostSnapshot::read(&me)) {
        Ok(snap) => Some((snap, crate::measure::bench::run(&host::clock_request(None)))),
        Err(e) => {
            note(format_args!("audit failed: {e}"));
            None
        }
    };
    let clocksource = kernel::clocksource();
    let me = Process::open(None).ok();
    let vsyscall = (me.as_ref())
        .filter(|_| arch::HOST_MACHINE == arch::machine::X86_64)
        .map(|me| (me.maps().unwrap_or_default(), kernel::cmdline()));
    let vdso = me.and_then(|_| Process::own_vdso_image());
    AuditFacts { host, release, clocksource, vsyscall, vdso }
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| (d.as_millis() as f64) / 1e3)
}

fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

// ------------------------------------------------------------------ rates

/// The trace engine as `serve` uses it: system-wide, continuously. Every use
/// of `measure::trace` is in here, so another engine (BPF) goes in by
/// changing these three functions.
struct RateSource {
    counting: crate::measure::trace::engine::Counting,
    /// vdsoctl's own processes (this one, other vdsoctl runs), judged at
    /// every pump and left out of every snapshot.
    own: Own,
}

impl RateSource {
    /// Count every process (the BPF engine where allowed, else perf).
    fn open() -> Result<RateSource> {
        use crate::measure::trace::engine::{Choice, Counting, Plan};
        let plan = Plan { all: true, ..Plan::default() };
        let opened = Counting::open(Choice::Auto, &plan)?;
        let kind = opened.counting.kind();
        match crate::measure::trace::engine::announced_fallback(kind, opened.fallback_reason.as_deref()) {
            Some(why) => note(format_args!("counting clock syscalls with the {} engine: {why}", kind.name())),
            None => note(format_args!("counting clock syscalls with the {} engine", kind.name())),
        }
        let mut counting = opened.counting;
        counting.start()?;
        Ok(RateSource { counting, own: Own::new() })
    }

    /// Keep the kernel's buffers moving for up to `d`: the perf engine
    /// drains its rings; the BPF engine has none and just waits.
    /// Every tick, the processes counted so far are judged vdsoctl's own
    /// or not while they live (a `check` lasts a second or more).
    fn pump(&mut self, d: Duration) -> Result<()> {
        std::thread::sleep(if self.counting.needs_pump() { d.min(Duration::from_millis(20)) } else { d });
        self.counting.pump();
        self.own.look(self.counting.processes());
        Ok(())
    }

    /// Counts since `open`, vdsoctl's own moved to `own`.
    fn snapshot(&mut self) -> Result<Tally> {
        let mut tally = self.counting.snapshot()?;
        self.own.strip(&mut tally);
        Ok(tally)
    }

    /// Calls of vdsoctl's own processes left out so far (`last`: the last snapshot).
    fn own_calls(&self, last: &Tally) -> u64 {
        self.own.left_out(last)
    }

    /// Drop the rows of processes the book has read final (found gone at
    /// one refresh, read again at the next): the engine's maps stay bounded
    /// on a long-running host, and no call a process made before it exited
    /// is dropped unread — not even one that started after the snapshot.
    /// vdsoctl's own processes are forgotten the same way, their final
    /// counts kept in `own` (`last`: the snapshot the book just read).
    fn forget(&mut self, book: &Book, last: &Tally) {
        // One /proc read per process, not per row.
        let seen = std::cell::RefCell::new(HashMap::new());
        let own = &self.own;
        self.counting.forget(|pid, start| {
            own.forgettable(pid, start)
                || book.buried(pid, start)
                    && !*seen
                        .borrow_mut()
                        .entry((pid, start))
                        .or_insert_with(|| crate::inspect::process::is_running(pid, start))
        });
        // The perf engine forgets nothing: its own rows stay, and judged.
        if self.counting.kind() != crate::progress::Kind::Perf {
            self.own.forgot(last);
        }
    }
}

/// One refresh of the per-process section: what /proc says of the
/// tally's processes read as the book asks, the book kept, the section
/// written.
fn refresh(book: &mut Book, tally: &Tally, now: Instant, costs: &Costs) -> String {
    let mut life = Life::default();
    for (pid, start) in book.look_at(tally) {
        if start != 0 {
            if crate::inspect::process::is_running(pid, start) {
                life.running.insert((pid, start));
            }
        } else if let Some(ticks) = crate::inspect::process::start_ticks_of(pid) {
            life.holders.insert(pid, ticks);
        }
    }
    let live = book.sort(tally, &life);
    let comms: HashMap<i32, String> =
        live.pids().into_iter().filter_map(|pid| Some((pid, crate::inspect::process::comm_of(pid)?))).collect();
    let rates = book.keep(tally, live, &comms, now, costs);
    crate::render::serve::rates(&rates, unix_now())
}

/// The rates thread: keep the engine drained, and every `interval` turn a
/// snapshot into the per-process section.
fn rates_loop(shared: &Shared, stop: &Stop, interval: Duration, max_series: usize) {
    let set = |text: String| *shared.rates.lock().unwrap_or_else(|e| e.into_inner()) = text.into();
    let publish = |c: Counted| {
        *shared.counted.lock().unwrap_or_else(|e| e.into_inner()) = c;
        shared.published.fetch_add(1, std::sync::atomic::Ordering::Release);
    };
    let mut source = match RateSource::open() {
        Ok(s) => s,
        Err(e) => {
            note(format_args!("per-process clock syscalls are not exported: {e}"));
            publish(Counted::Down(e.to_string()));
            set(crate::render::serve::trace_down(&e));
            return;
        }
    };
    publish(Counted::At(Arc::new(Tally::default()), Instant::now(), source.counting.kind()));
    let kernel_version = kernel::release().as_deref().and_then(kernel::parse_version);
    let aux = kernel::aux_clocks();
    let mut book = Book::new(max_series, kernel_version, aux, source.counting.kind().name(), Instant::now());
    let mut next = Instant::now() + interval;
    let costs = || shared.costs.lock().unwrap_or_else(|e| e.into_inner()).clone();
    set(refresh(&mut book, &Tally::default(), Instant::now(), &costs()));
    while !stop.is_set() {
        let now = Instant::now();
        if now >= next {
            match source.snapshot() {
                Ok(tally) => {
                    book.own_calls(source.own_calls(&tally));
                    set(refresh(&mut book, &tally, now, &costs()));
                    source.forget(&book, &tally);
                    publish(Counted::At(Arc::new(tally), now, source.counting.kind()));
                }
                Err(e) => {
                    publish(Counted::Stopped(e.to_string()));
                    note(format_args!("tracing stopped: {e}"));
                    set(crate::render::serve::trace_down(&e));
                    return;
                }
            }
            next += interval;
            if next <= now {
                next = now + interval;
            }
        }
        if let Err(e) = source.pump(TICK.min(next.saturating_duration_since(now))) {
            publish(Counted::Stopped(e.to_string()));
            note(format_args!("tracing stopped: {e}"));
            set(crate::render::serve::trace_down(&e));
            return;
        }
    }
}

/// The shares thread: `top`'s sampler on every CPU, and every `interval`
/// the last interval's shares per program. Refused (no BPF, an unknown
/// architecture), the section stays empty and says why once on stderr.
fn shares_loop(shared: &Shared, stop: &Stop, interval: Duration, max_series: usize) {
    use crate::measure::sample::{difference, SampleScope, Sampling};
    use crate::model::group::{GroupBy, Grouping};
    const FREQ: u32 = 999;
    let mut sampling = match Sampling::start_bpf(SampleScope::Host, FREQ, &[]) {
        Ok(s) => s,
        Err(e) => {
            note(format_args!("CPU shares (top) are not exported: {e}"));
            return;
        }
    };
    let mut before = Vec::new();
    let mut last = Instant::now();
    while !stop.wait(interval) {
        let all = match sampling.read() {
            Ok(all) => all,
            Err(e) => {
                note(format_args!("CPU shares (top) stopped: {e}"));
                *shared.shares.lock().unwrap_or_else(|e| e.into_inner()) = Arc::from("");
                return;
            }
        };
        let now = Instant::now();
        let grouping = Grouping { by: GroupBy::Exe, top: Some(max_series) };
        let report = crate::model::top::build(
            difference(&all, &before),
            grouping,
            now.duration_since(last).as_secs_f64(),
            FREQ,
            crate::model::top::Sight::Full,
        );
        *shared.shares.lock().unwrap_or_else(|e| e.into_inner()) = crate::render::top::prometheus(&report).into();
        before = all;
        last = now;
    }
}
