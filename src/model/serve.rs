//! `serve`'s bookkeeping and its audit, judged: what the exporter says,
//! as typed data, from what `cmd/serve` gathered (the trace engine's
//! tallies, what /proc said of their processes, the host snapshot and the
//! clock bench) and handed over as arguments. Nothing here opens a process,
//! reads /proc or a clock: a refresh's instant and a process's liveness come
//! with the call, so every rule below is tested on literal data.
//! `render/serve.rs` writes it as `/metrics` text.
//!
//! The per-process part: successive tallies turned into the busiest live
//! processes' series (up to `--max-series`), with their CPU time, and the
//! calls of processes that exited folded into bounded aggregate series (per
//! name and cgroup; the rest in `other`), so that every clock syscall the
//! kernel counted is in some series, or said to be in none (`unexported`,
//! `lost`).
//!
//! A process found gone at one refresh is folded with what it had then, and
//! kept by the engine until the next refresh, whose snapshot — read after
//! its death — holds its final count: the difference is folded then, and
//! only then is it forgotten. A process seen alive at a refresh is never
//! forgotten before the next one has seen it gone. Processes are told by
//! pid and start time, so no count moves to a process that reuses a pid.
//!
//! A refresh is three steps, each read between them done by the caller:
//! [`Book::look_at`] names the processes whose liveness it needs
//! ([`Life`]), [`Book::sort`] folds the gone ones and returns the live
//! series ([`Live`], whose [`Live::pids`] need their names read), and
//! [`Book::keep`] caps them into the [`Rates`] to export.

use super::add;
use crate::arch::{self, AuxClocks, VdsoFn};
use crate::inspect::elf::Image;
use crate::inspect::host::{HostSnapshot, KernelFacts};
use crate::inspect::kernel::{self, Clocksource, VsyscallMode};
use crate::inspect::maps::Mapping;
use crate::measure::bench::BenchRun;
use crate::measure::trace::{Clock, Key, RandomCall, Tally};
use crate::model::bench::BenchReport;
use crate::model::cgroup::Placement;
use crate::model::check::CheckReport;
use crate::model::gate::{Context, Selection};
use crate::model::host;
use crate::model::observe::{Observation, Scope, Unseen};
use crate::model::{vdso_serves_call, ClockRef};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

// ------------------------------------------------------------------ audit

/// One raw syscall's cost here, in ns, by function and clock id (`None`:
/// a function without one), from the audit's bench (`path="syscall"`).
pub type Costs = HashMap<(VdsoFn, Option<i64>), f64>;

/// What the audit gathered, for [`judge_audit`].
#[derive(Debug)]
pub struct AuditFacts {
    /// This process's host snapshot and the clock bench run beside it;
    /// `None` when this process could not be opened (said on stderr).
    pub host: Option<(HostSnapshot, BenchRun)>,
    /// /proc/sys/kernel/osrelease.
    pub release: Option<String>,
    pub clocksource: Option<Clocksource>,
    /// On x86_64, this process's maps and /proc/cmdline, for the
    /// [vsyscall] mode.
    pub vsyscall: Option<(Vec<Mapping>, Option<String>)>,
    /// This host's native vDSO image (`None`: not read, or no process).
    pub vdso: Option<&'static Image>,
}

/// One bench call, and whether this kernel's vDSO serves it for
/// vdsoctl's ABI (`vdsoctl_vdso_serves`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub function: String,
    /// The clock's label (`None`: a function without a clock id).
    pub clock: Option<String>,
    pub serves: bool,
}

/// The audit, judged: the check report and the facts beside it.
#[derive(Debug)]
pub struct Audit {
    /// The host checks with `host_trace`, gated; `None` when the audit
    /// could not run.
    pub report: Option<CheckReport>,
    /// Whether the verdict includes a window of observed clock syscalls.
    pub observed: bool,
    pub served: Vec<Served>,
    /// The current clocksource and whether it has a vDSO mode (`None`:
    /// only when the hypervisor marks it stable).
    pub clocksource: Option<(String, Option<bool>)>,
    pub release: Option<String>,
    /// The [vsyscall] mode (x86_64 only).
    pub vsyscall: Option<VsyscallMode>,
    /// (symbol, version) of each function the native vDSO exports; `None`
    /// when the image was not read.
    pub symbols: Option<Vec<(String, String)>>,
    /// One raw syscall's cost for the CPU series; `None` keeps the last.
    pub costs: Option<Costs>,
}

/// What the rates thread counted last, as the audit reads it.
#[derive(Debug, Clone, Default)]
pub enum Counted {
    #[default]
    NotYet,
    /// The engine could not start: why.
    Down(String),
    /// The engine started, then stopped: why.
    Stopped(String),
    /// Counts since the engine started, read at this moment.
    At(Arc<Tally>, Instant, crate::progress::Kind),
}

/// The audit's view of the rates thread's counts: the observation over
/// the last two snapshots it saw (the same engine, not a second one).
#[derive(Debug)]
pub struct Watch {
    last: Option<(Arc<Tally>, Instant)>,
    observed: Observation,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch { last: None, observed: Observation::Unseen(Unseen::NotYet) }
    }
}

impl Watch {
    /// Whether `counted` closes a window after the last snapshot seen: then
    /// [`Watch::observe`] judges it, with the kernel's facts read now.
    pub fn closes(&self, counted: &Counted) -> bool {
        match (counted, &self.last) {
            (Counted::At(_, at, _), Some((_, then))) => at > then,
            _ => false,
        }
    }

    /// The observation after `counted` (`kernel`: read when
    /// [`Watch::closes`] said so; a window without them is not judged).
    pub fn observe(&mut self, counted: Counted, kernel: Option<&KernelFacts>) -> &Observation {
        match counted {
            Counted::NotYet => {}
            Counted::Down(why) => self.observed = Observation::Unseen(Unseen::NoEngine(why)),
            Counted::Stopped(why) => self.observed = Observation::Unseen(Unseen::Failed(why)),
            Counted::At(tally, at, engine) => {
                if let (Some((last, then)), Some(kernel)) = (&self.last, kernel) {
                    if at > *then {
                        self.observed = Observation::between((last, *then), (&tally, at), engine, kernel);
                    }
                }
                if self.last.as_ref().is_none_or(|(_, then)| at > *then) {
                    self.last = Some((tally, at));
                }
            }
        }
        &self.observed
    }
}

/// The host audit (with what the trace engine saw bypass the vDSO, `observed`)
/// and the facts beside it, judged from what was gathered.
pub fn judge_audit(facts: AuditFacts, observed: &Observation) -> Audit {
    let kernel_version = facts.release.as_deref().and_then(kernel::parse_version);
    let mut served = Vec::new();
    let mut costs = None;
    let report = facts.host.map(|(snap, run)| {
        let (mut checks, bench) = host::host_checks(&snap, run, None);
        let bench = Some(bench);
        checks.push(observed.row("host_trace", Scope::Host));
        served = served_rows(bench.as_ref(), kernel_version);
        costs = Some(syscall_costs(bench.as_ref()));
        let pending = matches!(observed, Observation::Unseen(Unseen::NotYet));
        let mut report = CheckReport { bench, pending, ..CheckReport::judged(checks, false) };
        report.gate(Context::Host, &Selection::default());
        report
    });
    let vsyscall = facts
        .vsyscall
        .map(|(maps, cmdline)| crate::model::vsyscall::vsyscall_mode(&maps, cmdline.as_deref(), true).0.mode);
    let symbols = facts.vdso.map(|img| {
        (img.symbols.iter().filter(|s| s.is_function()))
            .map(|s| (s.name.clone(), s.version.as_ref().and_then(|v| v.name.clone()).unwrap_or_default()))
            .collect()
    });
    Audit {
        report,
        observed: matches!(observed, Observation::Seen(_)),
        served,
        clocksource: facts.clocksource.map(|cs| {
            let mode = kernel::clocksource_has_vdso_mode(&cs.current);
            (cs.current, mode)
        }),
        release: facts.release,
        vsyscall,
        symbols,
        costs,
    }
}

/// Whether the vDSO serves each call the bench measured, once per call.
fn served_rows(bench: Option<&BenchReport>, kernel_version: Option<(u32, u32)>) -> Vec<Served> {
    let mut rows = Vec::new();
    let mut seen: Vec<(VdsoFn, Option<ClockRef>)> = Vec::new();
    let Some(abi) = arch::HOST_ABI else { return rows };
    for r in bench.map(|b| b.results.as_slice()).unwrap_or_default() {
        if seen.contains(&(r.function, r.clock)) {
            continue;
        }
        seen.push((r.function, r.clock));
        let clock = match r.clock {
            Some(ClockRef::Id(id)) => Clock::Id(id),
            Some(_) => continue,
            None => Clock::None,
        };
        rows.push(Served {
            function: r.function.to_string(),
            clock: r.clock.map(ClockRef::text),
            // (Bench's clocks: no auxiliary one.)
            serves: vdso_serves_call(abi, r.function, clock, kernel_version, AuxClocks::Unknown),
        });
    }
    rows
}

/// One raw syscall's cost in ns, by function and clock id, from the bench.
fn syscall_costs(bench: Option<&BenchReport>) -> Costs {
    let results = bench.map(|b| b.results.as_slice()).unwrap_or_default();
    results
        .iter()
        .filter(|r| r.path == crate::measure::bench::Path::Syscall)
        .filter_map(|r| {
            let clock = match r.clock {
                Some(ClockRef::Id(id)) => Some(id),
                Some(_) => return None,
                None => None,
            };
            Some(((r.function, clock), r.ns_per_call?))
        })
        .collect()
}

// ------------------------------------------------------------------ rates

/// The name of the aggregate that takes what the bound leaves out.
const OTHER: &str = "other";

/// One exportable per-process series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Series {
    Syscall(Key),
    Vsyscall(i32, VdsoFn),
    /// Calls in a process's total that have no row (the engine's row map
    /// was full): with these, a process's calls add up whatever others do.
    Unattributed(i32),
}

impl Series {
    /// The process: its pid and, when the engine knows it, its start time.
    fn process(self) -> (i32, u64) {
        match self {
            Series::Syscall(k) => (k.pid, k.start),
            Series::Vsyscall(pid, _) | Series::Unattributed(pid) => (pid, 0),
        }
    }
}

/// Where exited processes' calls of one kind are kept: their name (the
/// engine's, the last it saw) and cgroup, or `other` past the bound.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Aggregate {
    pub comm: String,
    pub cgroup: String,
    /// Empty for calls whose split was lost (`Unattributed`).
    pub syscall: &'static str,
    pub clock: String,
    pub random: &'static str,
    pub vdso_serves: bool,
}

/// Turns successive tallies into the series to export.
#[derive(Debug)]
pub struct Book {
    max: usize,
    /// The engine's name, for `trace_engine_info`.
    engine: &'static str,
    kernel: Option<(u32, u32)>,
    /// The auxiliary clocks enabled when serve started.
    aux: AuxClocks,
    /// Live series' counts at the previous refresh, and when it was.
    last: HashMap<Series, u64>,
    last_at: Instant,
    /// CPU seconds of each live series' calls so far.
    cpu: HashMap<Series, f64>,
    /// Exited processes' calls per aggregate: counters, never shrinking.
    exited: BTreeMap<Aggregate, u64>,
    /// Series of processes found gone and not yet final: what was folded.
    folded: HashMap<Series, (u64, Aggregate)>,
    /// Processes found gone at the last refresh (final at the next).
    dying: HashSet<(i32, u64)>,
    /// Processes found gone at the refresh before the last, read again at
    /// the last: final, for the engine to forget.
    buried: HashSet<(i32, u64)>,
    /// For series the engine keys by pid alone ([vsyscall] calls,
    /// unattributed calls): the start (clock ticks) of the process that held
    /// the pid when they were first seen. Another holder means that one is
    /// gone: its calls are never credited to the pid's next owner.
    starts: HashMap<i32, u64>,
    /// Series read final, at the engine's count then, while it keeps them.
    graves: HashMap<Series, u64>,
    /// A later process's series under a final one's key: the count it
    /// starts from.
    bases: HashMap<Series, u64>,
    /// Calls of vdsoctl's own processes left out of every series so far
    /// (`measure::trace::own`), for `vdsoctl_trace_own_calls_total`.
    own_calls: u64,
    /// The cgroup each process of the engine's rows had when last seen
    /// alive: a snapshot reads /proc/PID/cgroup, which an exited process
    /// no longer has, so its aggregate takes the one seen here. Kept for
    /// the pids the engine still holds rows of.
    cgroups: HashMap<i32, String>,
}

impl Book {
    /// A book for `--max-series` `max`, begun `now`; `kernel` and `aux`:
    /// the kernel's version and auxiliary clocks, for `vdso_serves`.
    pub fn new(max: usize, kernel: Option<(u32, u32)>, aux: AuxClocks, engine: &'static str, now: Instant) -> Book {
        Book {
            max,
            engine,
            kernel,
            aux,
            last: HashMap::new(),
            last_at: now,
            cpu: HashMap::new(),
            exited: BTreeMap::new(),
            folded: HashMap::new(),
            dying: HashSet::new(),
            buried: HashSet::new(),
            starts: HashMap::new(),
            graves: HashMap::new(),
            bases: HashMap::new(),
            own_calls: 0,
            cgroups: HashMap::new(),
        }
    }

    /// How many calls of vdsoctl's own processes were left out of the
    /// tallies so far (said at the next render).
    pub fn own_calls(&mut self, calls: u64) {
        self.own_calls = calls;
    }

    /// Whether the engine may forget process (`pid`, `start`) now: found
    /// gone at one refresh and read again at the last, so its count is
    /// final. A process the last snapshot did not hold (it started after
    /// it) or held alive is kept, whatever it does before the next.
    pub fn buried(&self, pid: i32, start: u64) -> bool {
        self.buried.contains(&(pid, start)) || self.buried.contains(&(pid, 0))
    }

    /// The processes of `tally` whose liveness [`Book::sort`] needs
    /// (every one but those found gone at the last refresh), for the
    /// caller to read into a [`Life`].
    pub fn look_at(&self, tally: &Tally) -> Vec<(i32, u64)> {
        processes(tally).into_iter().filter(|p| !self.dying.contains(p)).collect()
    }

    /// Every series with calls, split: the final counts of processes found
    /// gone before are folded, newly gone ones folded as they stand; the
    /// live ones are returned.
    /// `life`: what was read of [`Book::look_at`]'s processes since `tally`.
    pub fn sort(&mut self, tally: &Tally, life: &Life) -> Live {
        let held: HashSet<i32> = tally.pids().into_iter().collect();
        self.cgroups.retain(|pid, _| held.contains(pid));
        self.cgroups.extend(tally.cgroups.iter().map(|(pid, c)| (*pid, c.clone())));
        let counts = self.counted(tally);
        // Every process the snapshot holds (start-up keys too), by state.
        let (buried, rest): (HashSet<_>, HashSet<_>) =
            processes(tally).into_iter().partition(|p| self.dying.contains(p));
        let dying: HashSet<(i32, u64)> = rest.into_iter().filter(|p| !self.running(*p, life)).collect();
        let (mut live, mut gone) = (Vec::new(), Vec::new());
        for (s, v, raw) in counts {
            let process = s.process();
            if buried.contains(&process) {
                match self.folded.remove(&s) {
                    Some((before, agg)) => add(self.exited.entry(agg).or_default(), v.saturating_sub(before)),
                    None => gone.push((s, v, true)),
                }
                // Final: the perf engine keeps its rows, which are not new.
                if self.engine == "perf" {
                    self.graves.insert(s, raw);
                }
            } else if dying.contains(&process) {
                gone.push((s, v, false));
            } else {
                live.push((s, v));
            }
        }
        // Whatever was folded for a process now final and rowless stays folded.
        self.folded.retain(|s, _| !self.dying.contains(&s.process()));
        self.fold(tally, gone);
        self.starts.retain(|pid, _| !buried.contains(&(*pid, 0)));
        self.buried = buried;
        self.dying = dying;
        Live { series: live }
    }

    /// Every series with calls: (series, calls of its current process,
    /// the engine's count). Under the perf engine, which forgets nothing, a
    /// series read final is skipped while its count stays; calls beyond
    /// it are a later process's under the same key (perf keys by pid
    /// alone), counted from there. The BPF engine forgets what was read
    /// final, so a key seen again is a new process's from 0.
    fn counted(&mut self, tally: &Tally) -> Vec<(Series, u64, u64)> {
        // A process's start-up getrandom key is no series of its own (as in
        // `trace`'s rows): every process would have one.
        let startup = Clock::Random(RandomCall::StartupKey);
        let all: Vec<(Series, u64)> = tally
            .counts
            .iter()
            .filter(|(k, _)| k.clock != startup)
            .map(|(k, v)| (Series::Syscall(*k), *v))
            .chain(tally.vsyscall.iter().map(|((pid, f), v)| (Series::Vsyscall(*pid, *f), *v)))
            .chain(tally.unrecorded.iter().map(|(pid, v)| (Series::Unattributed(*pid), *v)))
            .collect();
        let held: HashSet<Series> = all.iter().map(|(s, _)| *s).collect();
        self.graves.retain(|s, _| held.contains(s));
        self.bases.retain(|s, _| held.contains(s));
        let mut out = Vec::new();
        for (s, raw) in all {
            if let Some(&grave) = self.graves.get(&s) {
                if raw <= grave {
                    continue;
                }
                self.graves.remove(&s);
                self.bases.insert(s, grave);
            }
            let v = raw.saturating_sub(self.bases.get(&s).copied().unwrap_or(0));
            if v > 0 {
                out.push((s, v, raw));
            }
        }
        out
    }

    /// Whether a process still runs, as `life` read it: by pid and start,
    /// or for a pid alone, the holder first seen with it.
    fn running(&mut self, (pid, start): (i32, u64), life: &Life) -> bool {
        if start != 0 {
            return life.running.contains(&(pid, start));
        }
        match life.holders.get(&pid) {
            None => false,
            Some(&now) => *self.starts.entry(pid).or_insert(now) == now,
        }
    }

    /// Fold gone processes' series (`final`: no more to come) into the
    /// aggregates, the busiest new aggregates first while there is room.
    fn fold(&mut self, tally: &Tally, gone: Vec<(Series, u64, bool)>) {
        let mut new: Vec<(Aggregate, u64)> = Vec::new();
        let keyed: Vec<(Series, u64, bool, Aggregate)> =
            gone.into_iter().filter_map(|(s, v, fin)| Some((s, v, fin, self.aggregate(s, tally)?))).collect();
        for (_, v, _, agg) in &keyed {
            match new.iter_mut().find(|(a, _)| a == agg) {
                Some(n) => add(&mut n.1, *v),
                None => new.push((agg.clone(), *v)),
            }
        }
        new.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut named = self.exited.keys().filter(|a| a.comm != OTHER).count();
        let mut target: HashMap<Aggregate, Aggregate> = HashMap::new();
        for (agg, _) in new {
            let to = if self.exited.contains_key(&agg) || named < self.max {
                named += usize::from(!self.exited.contains_key(&agg));
                agg.clone()
            } else {
                Aggregate { comm: OTHER.into(), cgroup: String::new(), ..agg.clone() }
            };
            self.exited.entry(to.clone()).or_default();
            target.insert(agg, to);
        }
        for (s, v, fin, agg) in keyed {
            let to = target[&agg].clone();
            add(self.exited.entry(to.clone()).or_default(), v);
            if !fin {
                self.folded.insert(s, (v, to));
            }
        }
    }

    /// A gone series' aggregate; `None` for [vsyscall] series (dropped).
    fn aggregate(&self, s: Series, tally: &Tally) -> Option<Aggregate> {
        let (pid, _) = s.process();
        let comm = match s {
            Series::Syscall(k) => k.comm.map(|c| c.to_string()),
            _ => None,
        };
        let comm = comm.or_else(|| tally.comms.get(&pid).cloned()).unwrap_or_else(|| "?".into());
        let cgroup = tally.cgroups.get(&pid).or_else(|| self.cgroups.get(&pid)).cloned().unwrap_or_default();
        match s {
            Series::Syscall(k) => Some(Aggregate {
                comm,
                cgroup,
                syscall: k.func.name(),
                clock: ClockRef::of(k.clock).map(ClockRef::text).unwrap_or_default(),
                random: match k.clock {
                    Clock::Random(r) => r.name(),
                    _ => "",
                },
                vdso_serves: vdso_serves_call(k.abi, k.func, k.clock, self.kernel, self.aux),
            }),
            Series::Unattributed(_) => {
                Some(Aggregate { comm, cgroup, syscall: "", clock: String::new(), random: "", vdso_serves: false })
            }
            Series::Vsyscall(..) => None,
        }
    }

    /// The live series to export at `now`, busiest first up to the cap,
    /// each with its process's current name (`comms`, read of
    /// [`Live::pids`]: a process without one is not exported); how many
    /// busy ones the cap left out, and their calls. Each series' CPU time
    /// grows by its new calls' cost (`costs`).
    pub fn keep(
        &mut self,
        tally: &Tally,
        live: Live,
        comms: &HashMap<i32, String>,
        now: Instant,
        costs: &Costs,
    ) -> Rates {
        let live = live.series;
        let secs = now.saturating_duration_since(self.last_at).as_secs_f64().max(1e-3);
        let mut ranked: Vec<(Series, u64, f64)> = live
            .iter()
            .map(|(s, v)| (*s, *v, v.saturating_sub(self.last.get(s).copied().unwrap_or(0)) as f64 / secs))
            .collect();
        ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
        for (s, v, _) in &ranked {
            let new = v.saturating_sub(self.last.get(s).copied().unwrap_or(0));
            if let Some(ns) = cost_of(*s, costs) {
                *self.cpu.entry(*s).or_default() += new as f64 * ns / 1e9;
            }
        }
        // Only one process holds a pid at a time, and the engine keeps one
        // row per process, function and clock whatever the names: no two
        // series share a label set, however often processes rename or exec.
        let mut kept: Vec<(Series, u64, String)> = Vec::new();
        let (mut capped, mut unexported) = (0u64, 0u64);
        for (s, count, rate) in &ranked {
            let (pid, _) = s.process();
            match comms.get(&pid) {
                Some(comm) if kept.len() < self.max => kept.push((*s, *count, comm.clone())),
                _ => {
                    capped += u64::from(*rate > 0.0);
                    add(&mut unexported, *count);
                }
            }
        }
        kept.sort_by_key(|k| k.0);
        self.last = ranked.iter().map(|(s, v, _)| (*s, *v)).collect();
        self.cpu.retain(|s, _| self.last.contains_key(s));
        self.last_at = now;
        self.rates(&kept, capped, unexported, tally)
    }

    /// The kept series labelled, and the aggregates.
    fn rates(&self, kept: &[(Series, u64, String)], capped: u64, unexported: u64, tally: &Tally) -> Rates {
        let live = kept
            .iter()
            .map(|(s, count, comm)| {
                let (pid, calls) = match s {
                    Series::Syscall(k) => (
                        k.pid,
                        Calls::Syscall(SyscallLabels {
                            syscall: k.func.name(),
                            clock: ClockRef::of(k.clock).map(ClockRef::text),
                            random: random_of(k),
                            abi: k.abi.name(),
                            vdso_serves: vdso_serves_call(k.abi, k.func, k.clock, self.kernel, self.aux),
                            placement: Placement::of(tally.cgroups.get(&k.pid).map(String::as_str)),
                            cpu_seconds: self.cpu.get(s).copied(),
                        }),
                    ),
                    Series::Vsyscall(pid, f) => (*pid, Calls::Vsyscall { function: f.name() }),
                    Series::Unattributed(pid) => (*pid, Calls::Unattributed),
                };
                // The process's start: the key's, else that of the pid's
                // holder this book first saw (what it told processes apart by).
                let start = match s.process() {
                    (_, 0) => self.starts.get(&pid).copied().unwrap_or(0),
                    (_, start) => start,
                };
                LiveSeries { pid, start, comm: comm.clone(), count: *count, calls }
            })
            .collect();
        Rates {
            engine: self.engine,
            live,
            exited: self.exited.iter().map(|(a, v)| (a.clone(), *v)).collect(),
            capped,
            unexported,
            lost: tally.lost_records + tally.skipped_runs,
            own_calls: self.own_calls,
        }
    }
}

/// Every process `tally` holds (start-up keys too): pid and start, or
/// start 0 for what the engine keys by pid alone.
fn processes(tally: &Tally) -> HashSet<(i32, u64)> {
    (tally.counts.keys().map(|k| (k.pid, k.start)))
        .chain(tally.vsyscall.keys().map(|(pid, _)| (*pid, 0)))
        .chain(tally.unrecorded.keys().map(|pid| (*pid, 0)))
        .collect()
}

/// What the caller read of [`Book::look_at`]'s processes, just before
/// [`Book::sort`]: which of them still run.
#[derive(Debug, Clone, Default)]
pub struct Life {
    /// The processes keyed by pid and start (start not 0) that still run.
    pub running: HashSet<(i32, u64)>,
    /// For a process keyed by pid alone (start 0): the start (clock ticks)
    /// of the process holding the pid now; absent when none does.
    pub holders: HashMap<i32, u64>,
}

/// The live series of a refresh, between [`Book::sort`] and [`Book::keep`].
#[derive(Debug)]
pub struct Live {
    series: Vec<(Series, u64)>,
}

impl Live {
    /// The pids whose names (/proc/PID/comm) [`Book::keep`] needs.
    pub fn pids(&self) -> BTreeSet<i32> {
        self.series.iter().map(|(s, _)| s.process().0).collect()
    }
}

/// What a refresh exports: the kept live series, the exited aggregates,
/// and what is in no series.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    /// The engine's name, for `trace_engine_info`.
    pub engine: &'static str,
    /// The kept series, in label order.
    pub live: Vec<LiveSeries>,
    /// Exited processes' calls per aggregate (counters, never shrinking),
    /// in label order.
    pub exited: Vec<(Aggregate, u64)>,
    /// Series with calls in the last interval left out by the cap.
    pub capped: u64,
    /// Calls of live processes in no series (the cap).
    pub unexported: u64,
    /// Calls the engine could not keep anywhere.
    pub lost: u64,
    /// Calls of vdsoctl's own processes, left out of every series.
    pub own_calls: u64,
}

/// One live process's series.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSeries {
    pub pid: i32,
    /// The process's start (clock ticks after boot, /proc/PID/stat's 22nd
    /// field); 0 when not known. With the pid, it names one process: a pid
    /// reused is another series, never a counter that dropped.
    pub start: u64,
    /// The process's current name.
    pub comm: String,
    pub count: u64,
    pub calls: Calls,
}

/// What a live series counts.
#[derive(Debug, Clone, PartialEq)]
pub enum Calls {
    /// Syscalls of a vDSO function (`vdsoctl_clock_syscalls_total`).
    Syscall(SyscallLabels),
    /// [vsyscall] calls (`vdsoctl_vsyscall_emulations_total`).
    Vsyscall { function: &'static str },
    /// Calls in the process's total without a row
    /// (`vdsoctl_clock_syscalls_unattributed_total`).
    Unattributed,
}

/// A syscall series' labels, and its CPU time.
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallLabels {
    pub syscall: &'static str,
    pub clock: Option<String>,
    pub random: Option<&'static str>,
    pub abi: &'static str,
    pub vdso_serves: bool,
    pub placement: Placement,
    /// CPU seconds its calls cost so far (`None`: no raw syscall cost is
    /// known for it: a clock the bench did not time, an ABI neither the host's nor its compat one).
    pub cpu_seconds: Option<f64>,
}

/// A getrandom series' kind.
fn random_of(k: &Key) -> Option<&'static str> {
    match k.clock {
        Clock::Random(r) => Some(r.name()),
        _ => None,
    }
}

/// One call's cost in ns, for a syscall series of the host's ABI or its
/// compat one ([`super::cost::costed`]).
fn cost_of(s: Series, costs: &Costs) -> Option<f64> {
    let Series::Syscall(k) = s else { return None };
    if !super::cost::costed(k.abi) {
        return None;
    }
    let clock = match k.clock {
        Clock::Id(id) => Some(id),
        Clock::None => None,
        _ => return costs.get(&(k.func, None)).copied(),
    };
    costs.get(&(k.func, clock)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Abi;
    use std::time::Duration;

    pub(crate) fn key(pid: i32, clock: i64) -> Key {
        Key {
            pid,
            tid: None,
            abi: Abi::X86_64,
            func: VdsoFn::ClockGettime,
            clock: Clock::Id(clock),
            comm: None,
            start: 0,
        }
    }

    /// The processes a test's /proc would show: pid → (start, comm). A
    /// key's start (when not 0) is the one given here.
    #[derive(Default)]
    pub(crate) struct World(pub(crate) HashMap<i32, (u64, String)>);

    impl World {
        pub(crate) fn with(pid: i32, start: u64, comm: &str) -> World {
            World([(pid, (start, comm.to_string()))].into_iter().collect())
        }

        /// One refresh, read as `cmd/serve` reads it.
        pub(crate) fn refresh(&self, book: &mut Book, t: &Tally, at: Instant, costs: &Costs) -> Rates {
            let mut life = Life::default();
            for (pid, start) in book.look_at(t) {
                let Some(&(now, _)) = self.0.get(&pid) else { continue };
                if start == 0 {
                    life.holders.insert(pid, now);
                } else if now == start {
                    life.running.insert((pid, start));
                }
            }
            let live = book.sort(t, &life);
            let comms = live.pids().into_iter().filter_map(|p| Some((p, self.0.get(&p)?.1.clone()))).collect();
            book.keep(t, live, &comms, at, costs)
        }
    }

    fn syscalls(r: &Rates) -> Vec<(i32, &str, Option<&str>, u64)> {
        (r.live.iter())
            .filter_map(|s| match &s.calls {
                Calls::Syscall(l) => Some((s.pid, s.comm.as_str(), l.clock.as_deref(), s.count)),
                _ => None,
            })
            .collect()
    }

    fn exited<'a>(r: &'a Rates, comm: &str) -> Vec<(&'a Aggregate, u64)> {
        r.exited.iter().filter(|(a, _)| a.comm == comm).map(|(a, v)| (a, *v)).collect()
    }

    #[test]
    fn book_keeps_the_busiest_live_processes() {
        let (me, gone) = (100, 200);
        let world = World::with(me, 7, "me");
        let start = Instant::now();
        let mut book = Book::new(1, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let mut t = Tally::default();
        t.counts.insert(key(me, 4), 100);
        t.counts.insert(key(me, 1), 10);
        t.counts.insert(key(gone, 4), 1_000_000);
        let r = world.refresh(&mut book, &t, start + Duration::from_secs(1), &Costs::new());
        assert_eq!(syscalls(&r), [(me, "me", Some("CLOCK_MONOTONIC_RAW"), 100)], "{r:?}");
        let Calls::Syscall(l) = &r.live[0].calls else { panic!("{r:?}") };
        assert!(l.vdso_serves && l.abi == "x86_64", "{l:?}");
        assert_eq!(r.capped, 1, "one live series over the cap");
        assert_eq!(r.unexported, 10);
        // Next interval: MONOTONIC grows faster and takes the only slot.
        t.counts.insert(key(me, 1), 1_000);
        let r = world.refresh(&mut book, &t, start + Duration::from_secs(2), &Costs::new());
        assert_eq!(syscalls(&r), [(me, "me", Some("CLOCK_MONOTONIC"), 1_000)], "{r:?}");
        // The vanished pid's calls are in an aggregate.
        let agg = exited(&r, "?");
        assert_eq!(agg.len(), 1, "{r:?}");
        assert_eq!(
            (agg[0].0.syscall, agg[0].0.clock.as_str(), agg[0].0.vdso_serves),
            ("clock_gettime", "CLOCK_MONOTONIC_RAW", true)
        );
        assert_eq!(agg[0].1, 1_000_000);
    }

    #[test]
    fn book_never_labels_an_exited_process_with_its_pids_new_owner() {
        let me = 100;
        let world = World::with(me, 9_000, "new");
        let start = Instant::now();
        let mut book = Book::new(10, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let mut t = Tally::default();
        // The same pid, function and clock: the process holding it now and
        // one that held it before (started at boot).
        t.counts.insert(Key { start: 9_000, ..key(me, 1) }, 5);
        t.counts.insert(Key { start: 1, ..key(me, 1) }, 7);
        let r = world.refresh(&mut book, &t, start + Duration::from_secs(1), &Costs::new());
        assert_eq!(syscalls(&r), [(me, "new", Some("CLOCK_MONOTONIC"), 5)], "{r:?}");
        assert_eq!(r.exited.iter().map(|(_, v)| v).sum::<u64>(), 7, "{r:?}");
    }

    /// Counters at u64::MAX: the unexported sum and the exited aggregate
    /// saturate (two gone processes of one name), the rate stays a number;
    /// Prometheus reads the value as a float (exact to 2^53).
    #[test]
    fn counts_at_u64_max_saturate_in_serve() {
        let me = 100;
        let world = World::with(me, 7, "me");
        let start = Instant::now();
        let mut book = Book::new(1, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let mut t = Tally::default();
        t.counts.insert(key(me, 4), u64::MAX);
        t.counts.insert(key(me, 1), u64::MAX);
        t.counts.insert(key(me, 7), u64::MAX);
        t.counts.insert(key(200, 4), u64::MAX);
        t.counts.insert(key(201, 4), u64::MAX);
        let r = world.refresh(&mut book, &t, start + Duration::from_secs(1), &Costs::new());
        assert_eq!(r.unexported, u64::MAX, "{r:?}");
        let agg = exited(&r, "?");
        assert_eq!(agg.iter().map(|a| a.1).collect::<Vec<_>>(), [u64::MAX], "{r:?}");
        assert!(r.live.iter().all(|s| s.count == u64::MAX), "{r:?}");
    }

    #[test]
    fn book_exports_calls_that_found_no_row() {
        let me = 100;
        let world = World::with(me, 7, "me");
        let start = Instant::now();
        let mut book = Book::new(10, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let mut t = Tally::default();
        t.unrecorded.insert(me, 9);
        let r = world.refresh(&mut book, &t, start + Duration::from_secs(1), &Costs::new());
        assert_eq!(r.live, [LiveSeries { pid: me, start: 7, comm: "me".into(), count: 9, calls: Calls::Unattributed }]);
    }

    #[test]
    fn a_process_whose_name_cannot_be_read_is_unexported() {
        let me = 100;
        let start = Instant::now();
        let mut book = Book::new(10, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let mut t = Tally::default();
        t.counts.insert(key(me, 1), 3);
        let life = Life { holders: [(me, 7)].into_iter().collect(), ..Life::default() };
        let live = book.sort(&t, &life);
        assert_eq!(live.pids().into_iter().collect::<Vec<_>>(), [me]);
        let r = book.keep(&t, live, &HashMap::new(), start + Duration::from_secs(1), &Costs::new());
        assert!(r.live.is_empty(), "{r:?}");
        assert_eq!((r.capped, r.unexported), (1, 3));
    }

    /// A process seen alive in a container, then gone: the snapshot that
    /// finds it gone has no cgroup for it (/proc/PID/cgroup went with it);
    /// its aggregate keeps the one it was seen in.
    #[test]
    fn an_exited_process_keeps_the_cgroup_it_was_seen_alive_in() {
        let pid = 300;
        let start = Instant::now();
        let mut book = Book::new(10, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let cgroup = "/libpod_parent/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let mut t = Tally::default();
        t.comms.insert(pid, "job".into());
        t.cgroups.insert(pid, cgroup.into());
        t.counts.insert(key(pid, 1), 4);
        let alive = World::with(pid, 7, "job");
        let r = alive.refresh(&mut book, &t, start + Duration::from_secs(1), &Costs::new());
        assert_eq!(r.live.len(), 1, "{r:?}");
        t.cgroups.clear();
        let r = World::default().refresh(&mut book, &t, start + Duration::from_secs(2), &Costs::new());
        let agg = exited(&r, "job");
        assert_eq!((agg.len(), agg[0].0.cgroup.as_str(), agg[0].1), (1, cgroup, 4), "{r:?}");
    }

    #[test]
    fn an_exited_process_is_folded_whole_then_forgotten() {
        let gone = 200;
        let world = World::default();
        let start = Instant::now();
        let mut book = Book::new(1, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let mut t = Tally::default();
        t.comms.insert(gone, "date".into());
        t.cgroups.insert(gone, "/system.slice/web.service".into());
        t.counts.insert(key(gone, 1), 3);
        let at = |s| start + Duration::from_secs(s);
        let date = |r: &Rates| {
            let agg = exited(r, "date");
            assert_eq!(agg.len(), 1, "{r:?}");
            assert_eq!(agg[0].0.cgroup, "/system.slice/web.service");
            assert_eq!(agg[0].0.clock, "CLOCK_MONOTONIC");
            agg[0].1
        };
        let r = world.refresh(&mut book, &t, at(1), &Costs::new());
        assert_eq!(date(&r), 3, "folded as it stood");
        assert!(!book.buried(gone, 0), "kept until its count is final");
        // Its last calls, made before it exited, read at the next refresh.
        t.counts.insert(key(gone, 1), 5);
        let r = world.refresh(&mut book, &t, at(2), &Costs::new());
        assert_eq!(date(&r), 5, "the final count");
        assert!(book.buried(gone, 0), "forgotten now");
        // The engine forgot it: the aggregate stays.
        let r = world.refresh(&mut book, &Tally::default(), at(3), &Costs::new());
        assert_eq!(date(&r), 5);
        // A second name past the bound (1) goes to `other`.
        let mut t = Tally::default();
        t.comms.insert(gone + 1, "curl".into());
        t.counts.insert(key(gone + 1, 1), 2);
        let r = world.refresh(&mut book, &t, at(4), &Costs::new());
        let other = exited(&r, OTHER);
        assert_eq!(other.len(), 1, "{r:?}");
        assert_eq!((other[0].0.cgroup.as_str(), other[0].1), ("", 2));
        assert!(exited(&r, "curl").is_empty(), "{r:?}");
    }

    #[test]
    fn a_vsyscall_count_never_moves_to_the_pids_next_owner() {
        let me = 100;
        let world = World::with(me, 7, "me");
        let start = Instant::now();
        let mut book = Book::new(10, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let at = |s| start + Duration::from_secs(s);
        let mut t = Tally::default();
        t.vsyscall.insert((me, VdsoFn::Time), 50);
        // First seen held by a process that started at tick 1: not us.
        book.starts.insert(me, 1);
        let r = world.refresh(&mut book, &t, at(1), &Costs::new());
        assert!(r.live.is_empty(), "not credited to the new owner: {r:?}");
        assert!(!book.buried(me, 0), "kept until read final");
        let r = world.refresh(&mut book, &t, at(2), &Costs::new());
        assert!(r.live.is_empty(), "{r:?}");
        assert!(book.buried(me, 0), "forgotten now");
        // The engine forgot the old rows; what it counts now is ours, labelled with our start.
        t.vsyscall.insert((me, VdsoFn::Time), 3);
        let r = world.refresh(&mut book, &t, at(3), &Costs::new());
        let want =
            LiveSeries { pid: me, start: 7, comm: "me".into(), count: 3, calls: Calls::Vsyscall { function: "time" } };
        assert_eq!(r.live, [want]);
    }

    #[test]
    fn an_engine_that_forgets_nothing_is_folded_once() {
        // The perf engine: pid-only keys (start 0), rows never forgotten.
        let gone = 200;
        let world = World::default();
        let start = Instant::now();
        let mut book = Book::new(10, Some((6, 18)), AuxClocks::Unknown, "perf", start);
        let at = |s| start + Duration::from_secs(s);
        let mut t = Tally::default();
        t.comms.insert(gone, "date".into());
        t.counts.insert(key(gone, 1), 4);
        for s in 1..=5 {
            let r = world.refresh(&mut book, &t, at(s), &Costs::new());
            let agg = exited(&r, "date");
            assert!(agg.len() == 1 && agg[0].1 == 4, "refresh {s}: {r:?}");
        }
    }

    #[test]
    fn live_series_cost_cpu_time() {
        let me = 100;
        let world = World::with(me, 7, "me");
        let start = Instant::now();
        let mut book = Book::new(10, Some((6, 18)), AuxClocks::Unknown, "bpf", start);
        let mut t = Tally::default();
        // The host's own ABI: a raw syscall's cost is measured for it only
        // (the kernel matrix runs these tests on arm64 too).
        let native = Key { abi: crate::arch::HOST_ABI.unwrap_or(Abi::X86_64), ..key(me, 1) };
        t.counts.insert(native, 1_000);
        let costs: Costs = [((VdsoFn::ClockGettime, Some(1)), 100.0)].into_iter().collect();
        let r = world.refresh(&mut book, &t, start + Duration::from_secs(1), &costs);
        let Calls::Syscall(l) = &r.live[0].calls else { panic!("{r:?}") };
        assert_eq!(l.cpu_seconds, Some(1e-4), "1,000 calls at 100 ns");
        assert_eq!(r.engine, "bpf");
    }

    #[test]
    fn the_audit_without_its_snapshot_says_the_facts_it_has() {
        let facts = AuditFacts {
            host: None,
            release: Some("6.18.0".into()),
            clocksource: Some(Clocksource { current: "tsc".into(), available: vec!["tsc".into()] }),
            vsyscall: Some((Vec::new(), Some("vsyscall=none".into()))),
            vdso: None,
        };
        let a = judge_audit(facts, &Observation::Unseen(Unseen::NotYet));
        assert!(a.report.is_none() && a.costs.is_none() && a.served.is_empty() && !a.observed, "{a:?}");
        assert_eq!(a.clocksource, Some(("tsc".into(), Some(true))));
        assert_eq!(a.vsyscall, Some(VsyscallMode::None));
        assert_eq!(a.symbols, None);
    }

    #[test]
    fn the_watch_judges_each_window_once_between_two_snapshots() {
        use crate::progress::Kind;
        let kernel = KernelFacts { release: Some("6.18.0".into()), ..KernelFacts::default() };
        let t0 = Instant::now();
        let mut w = Watch::default();
        assert!(!w.closes(&Counted::NotYet));
        assert_eq!(w.observe(Counted::NotYet, None), &Observation::Unseen(Unseen::NotYet));
        // The first snapshot opens the window; the second closes it.
        let first = Counted::At(Arc::new(Tally::default()), t0, Kind::Bpf);
        assert!(!w.closes(&first), "no window before two snapshots");
        assert_eq!(w.observe(first, None), &Observation::Unseen(Unseen::NotYet));
        let mut t = Tally::default();
        t.counts.insert(key(100, 1), 50);
        let second = Counted::At(Arc::new(t), t0 + std::time::Duration::from_secs(1), Kind::Bpf);
        assert!(w.closes(&second));
        assert!(matches!(w.observe(second.clone(), Some(&kernel)), Observation::Seen(_)));
        // The same snapshot again closes nothing, and keeps the judgement.
        assert!(!w.closes(&second));
        assert!(matches!(w.observe(second, None), Observation::Seen(_)));
        // An engine that stopped says why.
        let why = "gone".to_string();
        assert_eq!(w.observe(Counted::Stopped(why.clone()), None), &Observation::Unseen(Unseen::Failed(why)));
    }
}
