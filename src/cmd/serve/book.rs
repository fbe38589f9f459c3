//! `serve`'s per-process section: successive tallies turned into the
//! busiest live processes' series (up to `--max-series`), with their CPU
//! time, and the calls of processes that exited folded into bounded
//! aggregate series (per name and cgroup; the rest in `other`), so that
//! every clock syscall the kernel counted is in some series, or said to be
//! in none (`unexported`, `lost`).
//!
//! A process found gone at one refresh is folded with what it had then, and
//! kept by the engine until the next refresh, whose snapshot — read after
//! its death — holds its final count: the difference is folded then, and
//! only then is it forgotten. A process seen alive at a refresh is never
//! forgotten before the next one has seen it gone. Processes are told by
//! pid and start time, so no count moves to a process that reuses a pid.

use super::TRACE_UP_HELP;
use crate::arch::VdsoFn;
use crate::measure::trace::{Clock, Key, RandomCall, Tally};
use crate::model::cgroup::Placement;
use crate::model::{vdso_serves_call, ClockRef};
use crate::render::prom::{self, Kind, Prometheus, SyscallSeries, VsyscallSeries};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

/// One raw syscall's cost here, in ns, by function and clock id (`None`:
/// a function without one), from the audit's bench (`path="syscall"`).
pub(super) type Costs = HashMap<(VdsoFn, Option<i64>), f64>;

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
struct Aggregate {
    comm: String,
    cgroup: String,
    /// Empty for calls whose split was lost (`Unattributed`).
    syscall: &'static str,
    clock: String,
    random: &'static str,
    vdso_serves: bool,
}

/// Turns successive tallies into the exposition.
pub(super) struct Book {
    max: usize,
    /// The engine's name, for `trace_engine_info`.
    engine: &'static str,
    kernel: Option<(u32, u32)>,
    /// The auxiliary clocks enabled when serve started.
    aux: crate::arch::AuxClocks,
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
}

impl Book {
    pub(super) fn new(max: usize, kernel: Option<(u32, u32)>, engine: &'static str) -> Book {
        Book {
            max,
            engine,
            kernel,
            aux: crate::inspect::kernel::aux_clocks(),
            last: HashMap::new(),
            last_at: Instant::now(),
            cpu: HashMap::new(),
            exited: BTreeMap::new(),
            folded: HashMap::new(),
            dying: HashSet::new(),
            buried: HashSet::new(),
            starts: HashMap::new(),
            graves: HashMap::new(),
            bases: HashMap::new(),
            own_calls: 0,
        }
    }

    /// How many calls of vdsoctl's own processes were left out of the
    /// tallies so far (said at the next render).
    pub(super) fn own_calls(&mut self, calls: u64) {
        self.own_calls = calls;
    }

    /// Whether the engine may forget process (`pid`, `start`) now: found
    /// gone at one refresh and read again at the last, so its count is
    /// final. A process the last snapshot did not hold (it started after
    /// it) or held alive is kept, whatever it does before the next.
    pub(super) fn buried(&self, pid: i32, start: u64) -> bool {
        self.buried.contains(&(pid, start)) || self.buried.contains(&(pid, 0))
    }

    /// The per-process section for `tally` (counts since the engine started).
    pub(super) fn render(&mut self, tally: &Tally, now: Instant, costs: &Costs) -> String {
        let live = self.sort(tally);
        let (kept, capped, unexported) = self.keep(&live, now, costs);
        self.exposition(&kept, capped, unexported, tally)
    }

    /// Every series with calls, split: the final counts of processes found
    /// gone before are folded, newly gone ones folded as they stand; the
    /// live ones are returned.
    fn sort(&mut self, tally: &Tally) -> Vec<(Series, u64)> {
        let counts = self.counted(tally);
        // Every process the snapshot holds (start-up keys too), by state.
        let processes: HashSet<(i32, u64)> = (tally.counts.keys().map(|k| (k.pid, k.start)))
            .chain(tally.vsyscall.keys().map(|(pid, _)| (*pid, 0)))
            .chain(tally.unrecorded.keys().map(|pid| (*pid, 0)))
            .collect();
        let (buried, rest): (HashSet<_>, HashSet<_>) = processes.into_iter().partition(|p| self.dying.contains(p));
        let dying: HashSet<(i32, u64)> = rest.into_iter().filter(|p| !self.running(*p)).collect();
        let (mut live, mut gone) = (Vec::new(), Vec::new());
        for (s, v, raw) in counts {
            let process = s.process();
            if buried.contains(&process) {
                match self.folded.remove(&s) {
                    Some((before, agg)) => *self.exited.entry(agg).or_default() += v.saturating_sub(before),
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
        live
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

    /// Whether a process still runs: by pid and start, or for a pid alone,
    /// the holder first seen with it.
    fn running(&mut self, (pid, start): (i32, u64)) -> bool {
        if start != 0 {
            return crate::inspect::process::is_running(pid, start);
        }
        match crate::inspect::process::start_ticks_of(pid) {
            None => false,
            Some(now) => *self.starts.entry(pid).or_insert(now) == now,
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
                Some(n) => n.1 += v,
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
            *self.exited.entry(to.clone()).or_default() += v;
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
        let cgroup = tally.cgroups.get(&pid).cloned().unwrap_or_default();
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

    /// The live series to export, busiest first up to the cap, each with
    /// its process's current name; how many busy ones the cap left out, and
    /// their calls. Each series' CPU time grows by its new calls' cost.
    fn keep(&mut self, live: &[(Series, u64)], now: Instant, costs: &Costs) -> (Vec<(Series, u64, String)>, u64, u64) {
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
        let mut comms: HashMap<(i32, u64), Option<String>> = HashMap::new();
        let mut kept: Vec<(Series, u64, String)> = Vec::new();
        let (mut capped, mut unexported) = (0u64, 0u64);
        for (s, count, rate) in &ranked {
            let (pid, _) = s.process();
            let comm = comms.entry(s.process()).or_insert_with(|| crate::inspect::process::comm_of(pid));
            match comm {
                Some(comm) if kept.len() < self.max => kept.push((*s, *count, comm.clone())),
                _ => {
                    capped += u64::from(*rate > 0.0);
                    unexported += count;
                }
            }
        }
        kept.sort_by_key(|k| k.0);
        self.last = ranked.iter().map(|(s, v, _)| (*s, *v)).collect();
        self.cpu.retain(|s, _| self.last.contains_key(s));
        self.last_at = now;
        (kept, capped, unexported)
    }

    /// The exposition of the kept series and the aggregates.
    fn exposition(&self, kept: &[(Series, u64, String)], capped: u64, unexported: u64, tally: &Tally) -> String {
        let mut p = Prometheus::default();
        p.family("trace_up", Kind::Gauge, TRACE_UP_HELP);
        p.sample("trace_up", &[], 1u64);
        p.info(
            "trace_engine_info",
            "The engine counting the per-process clock syscalls: fentry, bpf (the sys_enter program) or perf.",
            &[("engine", self.engine)],
        );
        self.processes(&mut p, kept, tally);
        self.cpu_series(&mut p, kept);
        self.exited_series(&mut p);
        p.family(
            "trace_series_capped",
            Kind::Gauge,
            "Per-process series with calls in the last interval left out by --max-series.",
        );
        p.sample("trace_series_capped", &[], capped);
        p.family(
            "clock_syscalls_unexported",
            Kind::Gauge,
            "Calls of live processes in no series (left out by --max-series): with every series and \
             vdsoctl_trace_lost_total and vdsoctl_trace_own_calls_total, what the kernel counted.",
        );
        p.sample("clock_syscalls_unexported", &[], unexported);
        p.family(
            "trace_lost_total",
            Kind::Counter,
            "Clock syscalls the trace engine could not keep anywhere (BPF: no row and no process entry; perf: records dropped).",
        );
        p.sample("trace_lost_total", &[], tally.lost_records);
        p.family(
            "trace_own_calls_total",
            Kind::Counter,
            "Clock, getrandom and [vsyscall] calls of vdsoctl's own processes (this exporter, and any process \
             running its executable file: other serve, check, bench runs), left out of every series: told by the \
             file, not by name.",
        );
        p.sample("trace_own_calls_total", &[], self.own_calls);
        p.family(
            "trace_timestamp_seconds",
            Kind::Gauge,
            "When the per-process counts were last read, in seconds since the epoch.",
        );
        p.sample("trace_timestamp_seconds", &[], super::unix_now());
        p.finish()
    }

    /// The live processes' series: syscalls, [vsyscall] calls, unattributed.
    fn processes(&self, p: &mut Prometheus, kept: &[(Series, u64, String)], tally: &Tally) {
        let labels: Vec<(Key, u64, &str, Option<String>)> = kept
            .iter()
            .filter_map(|(s, v, c)| match s {
                Series::Syscall(k) => Some((*k, *v, c.as_str(), ClockRef::of(k.clock).map(ClockRef::text))),
                Series::Vsyscall(..) | Series::Unattributed(_) => None,
            })
            .collect();
        let places: HashMap<i32, Placement> = labels
            .iter()
            .map(|(k, ..)| (k.pid, Placement::of(tally.cgroups.get(&k.pid).map(String::as_str))))
            .collect();
        let rows: Vec<SyscallSeries<'_>> = labels
            .iter()
            .map(|(k, v, comm, clock)| SyscallSeries {
                pid: k.pid,
                tid: None,
                start: None,
                comm: Some(comm),
                syscall: k.func.name(),
                clock: clock.as_deref(),
                random: random_of(k),
                abi: k.abi.name(),
                vdso_serves: vdso_serves_call(k.abi, k.func, k.clock, self.kernel, self.aux),
                count: *v,
                placement: places.get(&k.pid),
            })
            .collect();
        let vrows: Vec<VsyscallSeries<'_>> = kept
            .iter()
            .filter_map(|(s, v, c)| match s {
                Series::Vsyscall(pid, f) => {
                    Some(VsyscallSeries { pid: *pid, comm: Some(c), function: f.name(), count: *v })
                }
                Series::Syscall(_) | Series::Unattributed(_) => None,
            })
            .collect();
        prom::clock_syscalls(p, "since the exporter started", &rows);
        prom::vsyscall_emulations(p, "since the exporter started", &vrows);
        p.family(
            "clock_syscalls_unattributed_total",
            Kind::Counter,
            "Clock syscalls of a process counted in its total but in no vdsoctl_clock_syscalls_total series \
             (the trace engine's row map was full): a process's calls are the sum of both.",
        );
        for (s, v, comm) in kept {
            if let Series::Unattributed(pid) = s {
                let pid = pid.to_string();
                p.sample("clock_syscalls_unattributed_total", &[("pid", &pid), ("comm", comm)], *v);
            }
        }
    }

    /// CPU seconds the kept series' calls cost (count × one raw syscall's
    /// cost here, as the audit's bench last measured it).
    fn cpu_series(&self, p: &mut Prometheus, kept: &[(Series, u64, String)]) {
        p.family(
            "clock_syscalls_cpu_seconds_total",
            Kind::Counter,
            "CPU time a process's syscalls of the vDSO's functions cost: each interval's calls times one raw \
             syscall's cost here (the audit's bench, path=\"syscall\"); host-ABI series only; vdso_serves=\"true\": \
             the CPU time a lost fast path costs.",
        );
        for (s, _, comm) in kept {
            let (Series::Syscall(k), Some(secs)) = (s, self.cpu.get(s)) else { continue };
            let pid = k.pid.to_string();
            let clock = ClockRef::of(k.clock).map(ClockRef::text).unwrap_or_default();
            let labels = [
                ("pid", pid.as_str()),
                ("comm", comm.as_str()),
                ("syscall", k.func.name()),
                ("clock", clock.as_str()),
                ("random", random_of(k).unwrap_or_default()),
                ("abi", k.abi.name()),
                (
                    "vdso_serves",
                    if vdso_serves_call(k.abi, k.func, k.clock, self.kernel, self.aux) { "true" } else { "false" },
                ),
            ];
            p.sample("clock_syscalls_cpu_seconds_total", &labels, *secs);
        }
    }

    /// The exited processes' aggregates.
    fn exited_series(&self, p: &mut Prometheus) {
        p.family(
            "exited_clock_syscalls_total",
            Kind::Counter,
            "Syscalls of the vDSO's functions made by processes that have exited, per name, cgroup, syscall \
             and clock (at most --max-series names; the rest under comm=\"other\"); no syscall label: calls \
             whose split was lost.",
        );
        for (a, v) in &self.exited {
            let labels = [
                ("comm", a.comm.as_str()),
                ("cgroup", a.cgroup.as_str()),
                ("syscall", a.syscall),
                ("clock", a.clock.as_str()),
                ("random", a.random),
                ("vdso_serves", if a.vdso_serves { "true" } else { "false" }),
            ];
            p.sample("exited_clock_syscalls_total", &labels, *v);
        }
    }
}

/// A getrandom series' kind.
fn random_of(k: &Key) -> Option<&'static str> {
    match k.clock {
        Clock::Random(r) => Some(r.name()),
        _ => None,
    }
}

/// One call's cost in ns, for a host-ABI syscall series.
fn cost_of(s: Series, costs: &Costs) -> Option<f64> {
    let Series::Syscall(k) = s else { return None };
    if Some(k.abi) != crate::arch::HOST_ABI {
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

    fn key(pid: i32, clock: i64) -> Key {
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

    #[test]
    fn book_keeps_the_busiest_live_processes() {
        let me = std::process::id() as i32;
        // A pid that cannot exist (above pid_max's hard limit of 2^22).
        let gone = 5_000_000;
        let mut book = Book::new(1, Some((6, 18)), "bpf");
        let start = book.last_at;
        let mut t = Tally::default();
        t.counts.insert(key(me, 4), 100);
        t.counts.insert(key(me, 1), 10);
        t.counts.insert(key(gone, 4), 1_000_000);
        let text = book.render(&t, start + Duration::from_secs(1), &Costs::new());
        assert!(
            text.contains(&format!("vdsoctl_clock_syscalls_total{{pid=\"{me}\",comm=\"")),
            "live pid exported: {text}"
        );
        assert!(text.contains("clock=\"CLOCK_MONOTONIC_RAW\",abi=\"x86_64\",vdso_serves=\"true\"} 100\n"), "{text}");
        assert!(!text.contains(&format!("pid=\"{gone}\"")), "vanished pid dropped: {text}");
        assert!(text.contains("vdsoctl_trace_series_capped 1\n"), "one live series over the cap: {text}");
        // Next interval: MONOTONIC grows faster and takes the only slot.
        t.counts.insert(key(me, 1), 1_000);
        let text = book.render(&t, start + Duration::from_secs(2), &Costs::new());
        assert!(text.contains("clock=\"CLOCK_MONOTONIC\",abi=\"x86_64\",vdso_serves=\"true\"} 1000\n"), "{text}");
        let live = text.lines().filter(|l| l.starts_with("vdsoctl_clock_syscalls_total{"));
        assert!(!live.clone().any(|l| l.contains("CLOCK_MONOTONIC_RAW")), "{text}");
        assert_eq!(live.count(), 1, "{text}");
        // The vanished pid's calls are in an aggregate.
        assert!(text.contains("vdsoctl_exited_clock_syscalls_total{comm=\"?\",syscall=\"clock_gettime\",clock=\"CLOCK_MONOTONIC_RAW\",vdso_serves=\"true\"} 1000000\n"), "{text}");
    }

    #[test]
    fn book_never_labels_an_exited_process_with_its_pids_new_owner() {
        use crate::inspect::process::{ns_per_tick, start_ticks_of};
        let me = std::process::id() as i32;
        let now = start_ticks_of(me).unwrap() * ns_per_tick();
        let mut book = Book::new(10, Some((6, 18)), "bpf");
        let start = book.last_at;
        let mut t = Tally::default();
        // The same pid, function and clock: the process holding it now and
        // one that held it before (started at boot).
        t.counts.insert(Key { start: now, ..key(me, 1) }, 5);
        t.counts.insert(Key { start: 1, ..key(me, 1) }, 7);
        let text = book.render(&t, start + Duration::from_secs(1), &Costs::new());
        let ours: Vec<&str> = text.lines().filter(|l| l.contains(&format!("pid=\"{me}\""))).collect();
        assert_eq!(ours.len(), 1, "{text}");
        assert!(ours[0].ends_with(" 5"), "{text}");
    }

    #[test]
    fn book_exports_calls_that_found_no_row() {
        let me = std::process::id() as i32;
        let mut book = Book::new(10, Some((6, 18)), "bpf");
        let start = book.last_at;
        let mut t = Tally::default();
        t.unrecorded.insert(me, 9);
        let text = book.render(&t, start + Duration::from_secs(1), &Costs::new());
        let tag = format!("vdsoctl_clock_syscalls_unattributed_total{{pid=\"{me}\",comm=\"");
        assert!(text.lines().any(|l| l.starts_with(&tag) && l.ends_with("\"} 9")), "{text}");
    }

    #[test]
    fn an_exited_process_is_folded_whole_then_forgotten() {
        // A pid that cannot exist (above pid_max's hard limit of 2^22).
        let gone = 5_000_000;
        let mut book = Book::new(1, Some((6, 18)), "bpf");
        let start = book.last_at;
        let mut t = Tally::default();
        t.comms.insert(gone, "date".into());
        t.cgroups.insert(gone, "/system.slice/web.service".into());
        t.counts.insert(key(gone, 1), 3);
        let at = |s| start + Duration::from_secs(s);
        let text = book.render(&t, at(1), &Costs::new());
        let line = "vdsoctl_exited_clock_syscalls_total{comm=\"date\",cgroup=\"/system.slice/web.service\",\
                    syscall=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",vdso_serves=\"true\"}";
        assert!(text.contains(&format!("{line} 3\n")), "folded as it stood: {text}");
        assert!(!book.buried(gone, 0), "kept until its count is final");
        // Its last calls, made before it exited, read at the next refresh.
        t.counts.insert(key(gone, 1), 5);
        let text = book.render(&t, at(2), &Costs::new());
        assert!(text.contains(&format!("{line} 5\n")), "the final count: {text}");
        assert!(book.buried(gone, 0), "forgotten now");
        // The engine forgot it: the aggregate stays.
        let text = book.render(&Tally::default(), at(3), &Costs::new());
        assert!(text.contains(&format!("{line} 5\n")), "{text}");
        // A second name past the bound (1) goes to `other`.
        let mut t = Tally::default();
        t.comms.insert(gone + 1, "curl".into());
        t.counts.insert(key(gone + 1, 1), 2);
        let text = book.render(&t, at(4), &Costs::new());
        assert!(
            text.contains(
                "{comm=\"other\",syscall=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",vdso_serves=\"true\"} 2\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_vsyscall_count_never_moves_to_the_pids_next_owner() {
        let me = std::process::id() as i32;
        let mut book = Book::new(10, Some((6, 18)), "bpf");
        let start = book.last_at;
        let at = |s| start + Duration::from_secs(s);
        let mut t = Tally::default();
        t.vsyscall.insert((me, VdsoFn::Time), 50);
        // First seen held by a process that started at tick 1: not us.
        book.starts.insert(me, 1);
        let text = book.render(&t, at(1), &Costs::new());
        assert!(!text.contains(&format!("pid=\"{me}\"")), "not credited to the new owner: {text}");
        assert!(!book.buried(me, 0), "kept until read final");
        let text = book.render(&t, at(2), &Costs::new());
        assert!(!text.contains(&format!("pid=\"{me}\"")), "{text}");
        assert!(book.buried(me, 0), "forgotten now");
        // The engine forgot the old rows; what it counts now is ours.
        t.vsyscall.insert((me, VdsoFn::Time), 3);
        let text = book.render(&t, at(3), &Costs::new());
        assert!(text.contains(&format!("vdsoctl_vsyscall_emulations_total{{pid=\"{me}\",")), "{text}");
        assert!(text.contains("function=\"time\"} 3\n"), "{text}");
    }

    #[test]
    fn an_engine_that_forgets_nothing_is_folded_once() {
        // The perf engine: pid-only keys (start 0), rows never forgotten.
        let gone = 5_000_000;
        let mut book = Book::new(10, Some((6, 18)), "perf");
        let start = book.last_at;
        let at = |s| start + Duration::from_secs(s);
        let mut t = Tally::default();
        t.comms.insert(gone, "date".into());
        t.counts.insert(key(gone, 1), 4);
        for s in 1..=5 {
            let text = book.render(&t, at(s), &Costs::new());
            let line = text.lines().find(|l| l.starts_with("vdsoctl_exited_clock_syscalls_total{comm=\"date\""));
            assert!(line.is_some_and(|l| l.ends_with(" 4")), "refresh {s}: {text}");
        }
    }

    #[test]
    fn live_series_cost_cpu_time() {
        let me = std::process::id() as i32;
        let mut book = Book::new(10, Some((6, 18)), "bpf");
        let start = book.last_at;
        let mut t = Tally::default();
        // The host's own ABI: a raw syscall's cost is measured for it only
        // (the kernel matrix runs these tests on arm64 too).
        let native = Key { abi: crate::arch::HOST_ABI.unwrap_or(Abi::X86_64), ..key(me, 1) };
        t.counts.insert(native, 1_000);
        let costs: Costs = [((VdsoFn::ClockGettime, Some(1)), 100.0)].into_iter().collect();
        let text = book.render(&t, start + Duration::from_secs(1), &costs);
        let cpu = text.lines().find(|l| l.starts_with("vdsoctl_clock_syscalls_cpu_seconds_total{")).expect(&text);
        assert!(cpu.ends_with(" 0.0001"), "1,000 calls at 100 ns: {cpu}");
        assert!(text.contains("vdsoctl_trace_engine_info{engine=\"bpf\"} 1\n"), "{text}");
    }
}
