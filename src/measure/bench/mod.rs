//! Timing loops, syscall counting and cross-path verification for
//! `bench`: [`run`] measures a whole request into a [`BenchRun`]
//! (`model::bench` judges it, with `model::policy`'s rules). Each clock
//! function is called through up to four paths — the C library, a direct
//! call into the vDSO, the raw syscall and the x86_64 vsyscall page — and
//! each path gets a cost (median ns/call over timed
//! batches, hyperfine-style statistics) and a count of its syscalls per
//! call, which is what proves "fast" rather than guessing it from the
//! timing: `raw_syscalls:sys_enter` events on vdsoctl's own thread where
//! perf may count them (root), else the calls a seccomp filter in a forked
//! child marks ([`count_marked`]): exact without any privilege.

mod run;
pub mod vdso;

pub use run::{run, BenchRun, CountedBy, PathRun, TargetRun};

use crate::arch::{self, VdsoFn};
use crate::error::{Error, Hint, Result};
use crate::measure::bench::vdso::OwnVdso;
use crate::measure::kernel::perf::{Counter, CounterSpec, Scope};
use crate::measure::kernel::tracefs::Tracefs;
use crate::measure::sys::call::{self, VdsoGetrandom, VsyscallPage};
use libc::{c_uint, time_t};
use serde::Serialize;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// How a clock function is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Path {
    /// The C library vdsoctl runs on, through its dynamic symbol.
    Libc,
    /// A direct call of the symbol resolved from vdsoctl's own vDSO.
    Vdso,
    /// `syscall(2)` with the ABI's number.
    Syscall,
    /// The x86_64 legacy vsyscall page (emulated by the kernel).
    Vsyscall,
}

impl Path {
    /// Every path, in table order.
    pub const ALL: [Path; 4] = [Path::Libc, Path::Vdso, Path::Syscall, Path::Vsyscall];

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Path::Libc => "libc",
            Path::Vdso => "vdso",
            Path::Syscall => "syscall",
            Path::Vsyscall => "vsyscall",
        }
    }

    /// Parse a name as typed on the command line.
    pub fn parse(s: &str) -> Option<Path> {
        Path::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// One thing to measure: a function, and its clock id if it takes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    pub function: VdsoFn,
    pub clock: Option<i32>,
}

/// What to measure, as typed data (never the command line's structs).
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRequest {
    /// Clock ids for the functions that take one.
    pub clocks: Vec<i32>,
    pub functions: Vec<VdsoFn>,
    /// The paths shown (others may still be timed for the verdict).
    pub paths: Vec<Path>,
    /// Compare the paths' answers (`--verify`).
    pub verify: bool,
    /// The libc cost a clock the vDSO serves may have, in ns.
    pub max_ns: Option<f64>,
    /// The short plan (`--quick`).
    pub quick: bool,
}

/// The functions `bench` knows, in table order (the arch table's
/// `bench` column).
pub fn functions() -> Vec<VdsoFn> {
    VdsoFn::ALL.into_iter().filter(|f| f.benched()).collect()
}

/// Bytes one getrandom call asks for (a 128-bit key, the common request).
pub const RANDOM_BYTES: usize = 16;

/// The result of one call: a value to compare across paths, or an errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A `timespec` as ns since the clock's epoch (clock_gettime, clock_getres).
    Ns(i128),
    /// gettimeofday, in µs.
    Us(i128),
    /// time(), in seconds.
    Secs(i64),
    /// getcpu: (cpu, node).
    Cpu(u32, u32),
    /// getrandom: the bytes written.
    Bytes(usize),
}

fn ts_ns(ts: &libc::timespec) -> i128 {
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

/// Whether the x86_64 vsyscall page has an entry for `f`.
pub fn vsyscall_serves(f: VdsoFn) -> bool {
    match f {
        VdsoFn::Gettimeofday | VdsoFn::Time | VdsoFn::Getcpu => true,
        VdsoFn::ClockGettime
        | VdsoFn::ClockGettime64
        | VdsoFn::ClockGetres
        | VdsoFn::ClockGetresTime64
        | VdsoFn::Getrandom
        | VdsoFn::FutexRobustList64TryUnlock
        | VdsoFn::FutexRobustList32TryUnlock => false,
    }
}

/// Turn a return code into Ok/Err(errno): the vDSO returns `-errno`, libc and
/// syscall(2) return -1 and set errno.
fn rc(r: i64, path: Path) -> std::result::Result<(), i32> {
    rc_as(r, path, arch::HOST_ABI.map_or(arch::VdsoErrors::NegativeErrno, arch::Abi::vdso_errors))
}

/// [`rc`] for a function whose success is 0, with the ABI's vDSO error
/// convention: ppc64's vDSO says EINVAL as 22, not -22.
fn rc_as(r: i64, path: Path, errors: arch::VdsoErrors) -> std::result::Result<(), i32> {
    match (r, path, errors) {
        (1.., Path::Vdso, arch::VdsoErrors::PositiveErrno) => Err(i32::try_from(r).unwrap_or(i32::MAX)),
        (0.., _, _) => Ok(()),
        (_, Path::Vdso | Path::Vsyscall, _) => Err(i32::try_from(-r).unwrap_or(i32::MAX)),
        _ => Err(call::last_errno()),
    }
}

/// The callable paths of this process: the vDSO's bound symbols, the
/// vsyscall page when mapped executable, and the ABI's syscall numbers.
/// Not `Sync` (the getrandom state is one thread's): a bench runs on one.
#[derive(Debug)]
pub struct Callers {
    pub vdso: Option<OwnVdso>,
    pub vsyscall: Option<VsyscallPage>,
    /// The vDSO getrandom with this thread's state, mapped once here so
    /// every batch reuses it (its one key fetch is the first call's).
    random: Option<VdsoGetrandom>,
    abi: Option<arch::Abi>,
}

impl Callers {
    /// Bind what this process has. A getrandom state that cannot be mapped
    /// leaves the vDSO path of getrandom unavailable.
    pub fn new(vdso: Option<OwnVdso>, vsyscall: Option<VsyscallPage>) -> Callers {
        let random = vdso.as_ref().and_then(|v| v.getrandom).and_then(|f| f.state().ok());
        Callers { vdso, vsyscall, random, abi: arch::HOST_ABI }
    }

    fn nr(&self, f: VdsoFn) -> Option<arch::VdsoSyscall> {
        self.abi?;
        arch::VdsoSyscall::host(f)
    }

    /// Whether `path` can call `t.function` here.
    pub fn available(&self, t: Target, path: Path) -> bool {
        // A robust-futex unlock is not timed: its fast path writes a lock.
        if t.function.futex_op().is_some() {
            return false;
        }
        match path {
            Path::Libc => true,
            Path::Vdso => self.vdso.as_ref().is_some_and(|v| match t.function {
                VdsoFn::ClockGettime => v.clock_gettime.is_some(),
                VdsoFn::ClockGetres => v.clock_getres.is_some(),
                VdsoFn::Gettimeofday => v.gettimeofday.is_some(),
                VdsoFn::Time => v.time.is_some(),
                VdsoFn::Getcpu => v.getcpu.is_some(),
                VdsoFn::Getrandom => self.random.is_some(),
                // The time64 calls are a 32-bit ABI's; bench calls the native ones.
                VdsoFn::ClockGettime64
                | VdsoFn::ClockGetresTime64
                | VdsoFn::FutexRobustList64TryUnlock
                | VdsoFn::FutexRobustList32TryUnlock => false,
            }),
            Path::Syscall => self.nr(t.function).is_some(),
            Path::Vsyscall => self.vsyscall.is_some() && vsyscall_serves(t.function),
        }
    }

    /// One call; `None` when the path is not available for the function.
    pub fn call(&self, t: Target, path: Path) -> Option<std::result::Result<Reading, i32>> {
        if !self.available(t, path) {
            return None;
        }
        let clock = t.clock.unwrap_or(0);
        let vdso = self.vdso.as_ref();
        Some(match t.function {
            VdsoFn::ClockGettime | VdsoFn::ClockGetres => {
                let mut ts = call::zero_timespec();
                let gettime = t.function == VdsoFn::ClockGettime;
                let r = match path {
                    Path::Libc if gettime => i64::from(call::libc_clock_gettime(clock, &mut ts)),
                    Path::Libc => i64::from(call::libc_clock_getres(clock, &mut ts)),
                    Path::Vdso => {
                        let f = if gettime { vdso?.clock_gettime? } else { vdso?.clock_getres? };
                        i64::from(f.call(clock, &mut ts))
                    }
                    Path::Syscall => call::syscall_clock(self.nr(t.function)?, clock, &mut ts),
                    Path::Vsyscall => return None,
                };
                rc(r, path).map(|()| Reading::Ns(ts_ns(&ts)))
            }
            VdsoFn::Gettimeofday => {
                let mut tv = call::zero_timeval();
                let r = match path {
                    Path::Libc => i64::from(call::libc_gettimeofday(&mut tv)),
                    Path::Vdso => i64::from(vdso?.gettimeofday?.call(&mut tv)),
                    Path::Syscall => call::syscall_gettimeofday(self.nr(t.function)?, &mut tv),
                    Path::Vsyscall => i64::from(self.vsyscall?.gettimeofday(&mut tv)),
                };
                rc(r, path).map(|()| Reading::Us(i128::from(tv.tv_sec) * 1_000_000 + i128::from(tv.tv_usec)))
            }
            VdsoFn::Time => {
                let mut t0: time_t = 0;
                let r = match path {
                    Path::Libc => call::libc_time(&mut t0),
                    Path::Vdso => vdso?.time?.call(&mut t0),
                    Path::Syscall => call::syscall_time(self.nr(t.function)?, &mut t0),
                    Path::Vsyscall => self.vsyscall?.time(&mut t0),
                };
                // time() returns the seconds; (time_t)-1 with errno on error.
                if r == -1 {
                    Err(call::last_errno())
                } else {
                    Ok(Reading::Secs(r))
                }
            }
            VdsoFn::Getcpu => {
                let (mut cpu, mut node): (c_uint, c_uint) = (0, 0);
                let r = match path {
                    Path::Libc => i64::from(call::libc_getcpu(&mut cpu, &mut node)),
                    Path::Vdso => i64::from(vdso?.getcpu?.call(&mut cpu, &mut node)),
                    Path::Syscall => call::syscall_getcpu(self.nr(t.function)?, &mut cpu, &mut node),
                    Path::Vsyscall => i64::from(self.vsyscall?.getcpu(&mut cpu, &mut node)),
                };
                rc(r, path).map(|()| Reading::Cpu(cpu, node))
            }
            VdsoFn::Getrandom => {
                let mut buf = [0u8; RANDOM_BYTES];
                let r = match path {
                    Path::Libc => call::libc_getrandom(&mut buf) as i64,
                    Path::Vdso => self.random.as_ref()?.call(&mut buf) as i64,
                    Path::Syscall => call::syscall_getrandom(self.nr(t.function)?, &mut buf),
                    Path::Vsyscall => return None,
                };
                rc_as(r, path, arch::VdsoErrors::NegativeErrno)
                    .map(|()| Reading::Bytes(usize::try_from(r).unwrap_or(0)))
            }
            VdsoFn::ClockGettime64
            | VdsoFn::ClockGetresTime64
            | VdsoFn::FutexRobustList64TryUnlock
            | VdsoFn::FutexRobustList32TryUnlock => return None,
        })
    }

    /// `n` calls in a tight loop, the way a C loop would make them: the
    /// function is chosen once, outside the loop; `black_box` keeps each call
    /// and its result alive without adding work. `None` if not available.
    #[inline(never)]
    pub fn repeat(&self, t: Target, path: Path, n: u64) -> Option<()> {
        if !self.available(t, path) {
            return None;
        }
        match t.function {
            VdsoFn::ClockGettime | VdsoFn::ClockGetres => self.repeat_clock(t, path, n),
            VdsoFn::Gettimeofday | VdsoFn::Time => self.repeat_wall(t, path, n),
            VdsoFn::Getcpu | VdsoFn::Getrandom => self.repeat_other(t, path, n),
            VdsoFn::ClockGettime64
            | VdsoFn::ClockGetresTime64
            | VdsoFn::FutexRobustList64TryUnlock
            | VdsoFn::FutexRobustList32TryUnlock => None,
        }
    }

    /// [`Bench::repeat`] of clock_gettime and clock_getres.
    #[inline(never)]
    fn repeat_clock(&self, t: Target, path: Path, n: u64) -> Option<()> {
        let clock = t.clock.unwrap_or(0);
        let vdso = self.vdso.as_ref();
        let mut ts = call::zero_timespec();
        match (t.function, path) {
            (VdsoFn::ClockGettime, Path::Libc) => times(n, || call::libc_clock_gettime(black_box(clock), &mut ts)),
            (VdsoFn::ClockGetres, Path::Libc) => times(n, || call::libc_clock_getres(black_box(clock), &mut ts)),
            (VdsoFn::ClockGettime, Path::Vdso) => {
                let f = vdso?.clock_gettime?;
                times(n, || f.call(black_box(clock), &mut ts))
            }
            (VdsoFn::ClockGetres, Path::Vdso) => {
                let f = vdso?.clock_getres?;
                times(n, || f.call(black_box(clock), &mut ts))
            }
            (_, Path::Syscall) => {
                let nr = self.nr(t.function)?;
                times(n, || call::syscall_clock(nr, black_box(clock), &mut ts))
            }
            _ => return None,
        }
        black_box(&ts);
        Some(())
    }

    /// [`Bench::repeat`] of gettimeofday and time, the vsyscall page's too.
    #[inline(never)]
    fn repeat_wall(&self, t: Target, path: Path, n: u64) -> Option<()> {
        let vdso = self.vdso.as_ref();
        let mut tv = call::zero_timeval();
        let mut secs: time_t = 0;
        match (t.function, path) {
            (VdsoFn::Gettimeofday, Path::Libc) => times(n, || call::libc_gettimeofday(&mut tv)),
            (VdsoFn::Gettimeofday, Path::Vdso) => {
                let f = vdso?.gettimeofday?;
                times(n, || f.call(&mut tv))
            }
            (VdsoFn::Gettimeofday, Path::Syscall) => {
                let nr = self.nr(t.function)?;
                times(n, || call::syscall_gettimeofday(nr, &mut tv))
            }
            (VdsoFn::Gettimeofday, Path::Vsyscall) => {
                let p = self.vsyscall?;
                times(n, || p.gettimeofday(&mut tv))
            }
            (VdsoFn::Time, Path::Libc) => times(n, || call::libc_time(&mut secs)),
            (VdsoFn::Time, Path::Vdso) => {
                let f = vdso?.time?;
                times(n, || f.call(&mut secs))
            }
            (VdsoFn::Time, Path::Syscall) => {
                let nr = self.nr(t.function)?;
                times(n, || call::syscall_time(nr, &mut secs))
            }
            (VdsoFn::Time, Path::Vsyscall) => {
                let p = self.vsyscall?;
                times(n, || p.time(&mut secs))
            }
            _ => return None,
        }
        black_box((&tv, &secs));
        Some(())
    }

    /// [`Bench::repeat`] of getcpu and getrandom.
    #[inline(never)]
    fn repeat_other(&self, t: Target, path: Path, n: u64) -> Option<()> {
        let vdso = self.vdso.as_ref();
        let (mut cpu, mut node): (c_uint, c_uint) = (0, 0);
        let mut buf = [0u8; RANDOM_BYTES];
        match (t.function, path) {
            (VdsoFn::Getcpu, Path::Libc) => times(n, || call::libc_getcpu(&mut cpu, &mut node)),
            (VdsoFn::Getcpu, Path::Vdso) => {
                let f = vdso?.getcpu?;
                times(n, || f.call(&mut cpu, &mut node))
            }
            (VdsoFn::Getcpu, Path::Syscall) => {
                let nr = self.nr(t.function)?;
                times(n, || call::syscall_getcpu(nr, &mut cpu, &mut node))
            }
            (VdsoFn::Getcpu, Path::Vsyscall) => {
                let p = self.vsyscall?;
                times(n, || p.getcpu(&mut cpu, &mut node))
            }
            (VdsoFn::Getrandom, Path::Libc) => times(n, || call::libc_getrandom(&mut buf)),
            (VdsoFn::Getrandom, Path::Vdso) => {
                let state = self.random.as_ref()?;
                times(n, || state.call(&mut buf))
            }
            (VdsoFn::Getrandom, Path::Syscall) => {
                let nr = self.nr(t.function)?;
                times(n, || call::syscall_getrandom(nr, &mut buf))
            }
            _ => return None,
        }
        black_box((&cpu, &node, &buf));
        Some(())
    }
}

/// `n` calls of `call`, each kept alive by `black_box`: the loop a C
/// benchmark would write.
#[inline(always)]
fn times<R>(n: u64, mut call: impl FnMut() -> R) {
    for _ in 0..n {
        black_box(call());
    }
}

/// How long to measure.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Plan {
    /// Wall time one timed batch aims at; the batch size is calibrated to it.
    pub batch_ns: u64,
    /// Timed batches per measurement (the sample count of the statistics).
    pub rounds: u32,
}

impl Plan {
    /// The default: ~10 ms per path, under 1 s for the whole table here.
    pub const DEFAULT: Plan = Plan { batch_ns: 200_000, rounds: 41 };
    /// `--quick`: ~0.5 ms per path.
    pub const QUICK: Plan = Plan { batch_ns: 50_000, rounds: 9 };
}

/// Statistics over the rounds of one measurement, in ns per call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation; `None` with one round.
    pub stddev: Option<f64>,
    /// Median absolute deviation from the median: robust to the odd
    /// preempted round that dominates max − min on a busy VM.
    pub mad: f64,
    /// Number of timed rounds.
    pub rounds: usize,
    /// Calls per round.
    pub batch: u64,
}

impl Stats {
    /// Statistics of per-call costs; `None` for no samples.
    pub fn of(samples: &[f64], batch: u64) -> Option<Stats> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        let mean = v.iter().sum::<f64>() / n as f64;
        let stddev = (n > 1).then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
        let mut dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let mad = if n % 2 == 1 { dev[n / 2] } else { (dev[n / 2 - 1] + dev[n / 2]) / 2.0 };
        Some(Stats { median, min: v[0], max: v[n - 1], mean, stddev, mad, rounds: n, batch })
    }

    /// MAD / median: the relative spread shown in the table.
    pub fn spread(&self) -> f64 {
        if self.median > 0.0 {
            self.mad / self.median
        } else {
            0.0
        }
    }
}

/// Time `n` calls.
fn time_batch(callers: &Callers, t: Target, path: Path, n: u64) -> Option<Duration> {
    let start = Instant::now();
    callers.repeat(t, path, n)?;
    Some(start.elapsed())
}

/// The largest batch we ever run (a 1 ns call at 200 µs is 200k calls).
const MAX_BATCH: u64 = 1 << 22;

/// Calibrate a batch size to `plan.batch_ns` (this doubles as the warm-up),
/// then time `plan.rounds` batches. `None` if the path is not available.
pub fn measure(callers: &Callers, t: Target, path: Path, plan: Plan) -> Option<Stats> {
    let target = Duration::from_nanos(plan.batch_ns);
    let mut n = 1u64;
    let batch = loop {
        let d = time_batch(callers, t, path, n)?;
        if d >= target / 4 || n >= MAX_BATCH {
            let per_call = d.as_nanos().max(1) as f64 / n as f64;
            break ((plan.batch_ns as f64 / per_call) as u64).clamp(1, MAX_BATCH);
        }
        n = n.saturating_mul(4);
    };
    time_batch(callers, t, path, batch)?; // one more warm batch at the final size
    let samples: Vec<f64> = (0..plan.rounds)
        .filter_map(|_| time_batch(callers, t, path, batch))
        .map(|d| d.as_nanos() as f64 / batch as f64)
        .collect();
    Stats::of(&samples, batch)
}

/// A `raw_syscalls:sys_enter` counter on vdsoctl's own thread.
#[derive(Debug)]
pub struct SyscallCounter {
    counter: Counter,
    /// Events an empty enable/disable pair counts (the disable ioctl itself).
    baseline: u64,
}

impl SyscallCounter {
    /// Find tracefs (mounting it as root), open the counter disabled on the
    /// calling thread. Kernel events are counted: a tracepoint fires in the
    /// kernel, and with exclude_kernel=1 it counts nothing on 6.18.
    pub fn open() -> Result<SyscallCounter> {
        let tracefs = Tracefs::find_or_mount()?;
        let id = tracefs.event_id("raw_syscalls", "sys_enter")?;
        let spec = CounterSpec { tracepoint_id: id, start_disabled: true, ..Default::default() };
        let counter = Counter::open(&spec, Scope::Thread(0))?;
        let mut me = SyscallCounter { counter, baseline: 0 };
        let empty: Vec<u64> = (0..3).filter_map(|_| me.raw_count(|| ()).ok().flatten()).collect();
        me.baseline = empty.into_iter().min().ok_or(Error::Facility {
            errno: None,
            what: crate::error::Facility::CounterNeverRan { tracepoint: "raw_syscalls:sys_enter" },
            hint: Hint::PerfLimits,
        })?;
        Ok(me)
    }

    fn raw_count(&mut self, f: impl FnOnce()) -> Result<Option<u64>> {
        self.counter.reset()?;
        self.counter.enable()?;
        f();
        self.counter.disable()?;
        let r = self.counter.read()?;
        Ok((r.time_running > 0).then_some(r.value))
    }

    /// Syscalls `f` made on this thread; `None` if the counter did not run.
    pub fn count(&mut self, f: impl FnOnce()) -> Result<Option<u64>> {
        let base = self.baseline;
        Ok(self.raw_count(f)?.map(|v| v.saturating_sub(base)))
    }
}

/// Syscalls per call of `path`, over `n` calls.
pub fn syscalls_per_call(
    counter: &mut SyscallCounter,
    callers: &Callers,
    t: Target,
    path: Path,
    n: u64,
) -> Option<f64> {
    let n = n.max(1);
    let mut ran = false;
    let v = counter
        .count(|| {
            ran = callers.repeat(t, path, n).is_some();
        })
        .ok()
        .flatten()?;
    ran.then(|| v as f64 / n as f64)
}

/// The errno the counting filter gives every clock syscall: none of these
/// calls returns it by itself, so a call that comes back with it entered
/// the kernel.
pub const MARK_ERRNO: i32 = libc::EHWPOISON;

/// One path to count under the filter: what, how, and how many calls.
#[derive(Debug, Clone, Copy)]
pub struct MarkJob {
    pub target: Target,
    pub path: Path,
    pub calls: u64,
}

/// How many of each job's calls entered the kernel, counted in a forked
/// child under `program` (a `marking_program(MARK_ERRNO)`): one entry a
/// call at most, which is what the verdicts' threshold asks. Each path is
/// called once before the filter (a getrandom state is wiped by the fork
/// and refilled on its first call). Needs no privilege, only seccomp.
pub fn count_marked(
    callers: &Callers,
    jobs: &[MarkJob],
    program: &crate::measure::sys::seccomp::Program,
) -> std::io::Result<Vec<u64>> {
    let mut out = vec![0u64; jobs.len()];
    let prime = || {
        for j in jobs {
            black_box(callers.call(j.target, j.path));
        }
    };
    let work = |out: &mut [u64]| {
        for (slot, j) in out.iter_mut().zip(jobs) {
            *slot = (0..j.calls)
                .filter(|_| matches!(callers.call(j.target, j.path), Some(Err(e)) if e == MARK_ERRNO))
                .count() as u64;
        }
    };
    crate::measure::sys::spawn::run_filtered(program, &mut out, prime, work)?;
    Ok(out)
}

// ------------------------------------------------------------------ verify

/// One cross-path agreement check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What was compared, e.g. `clock_gettime(CLOCK_MONOTONIC) order`.
    pub name: String,
    pub ok: bool,
    /// The readings or errors behind the result.
    pub detail: String,
}

fn show(r: &Option<std::result::Result<Reading, i32>>) -> String {
    match r {
        None => "-".into(),
        Some(Ok(Reading::Ns(v) | Reading::Us(v))) => v.to_string(),
        Some(Ok(Reading::Secs(v))) => v.to_string(),
        Some(Ok(Reading::Cpu(c, n))) => format!("cpu {c} node {n}"),
        Some(Ok(Reading::Bytes(n))) => format!("{n} bytes"),
        Some(Err(e)) => errno_name(*e),
    }
}

/// `EINVAL` and friends by name, else the number.
pub fn errno_name(e: i32) -> String {
    match e {
        libc::EINVAL => "EINVAL".into(),
        libc::EPERM => "EPERM".into(),
        libc::EFAULT => "EFAULT".into(),
        libc::ENOSYS => "ENOSYS".into(),
        libc::ENOTSUP => "ENOTSUP".into(),
        _ => format!("errno {e}"),
    }
}

fn as_value(r: &Option<std::result::Result<Reading, i32>>) -> Option<i128> {
    match r {
        Some(Ok(Reading::Ns(v) | Reading::Us(v))) => Some(*v),
        Some(Ok(Reading::Secs(v))) => Some(i128::from(*v)),
        _ => None,
    }
}

/// Clock ids no kernel accepts: 10 is the retired CLOCK_SGI_CYCLE, 64 is past
/// every MAX_CLOCKS (16 is CLOCK_AUX0 since 6.17, so it is not used here).
pub const INVALID_CLOCKS: [i32; 2] = [10, 64];

/// Clocks that never go backwards (the REALTIME family may be stepped).
fn is_monotonic(clock: i32) -> bool {
    matches!(clock, 1 | 2 | 3 | 4 | 6 | 7 | 9)
}

/// Read a target on every path in the order syscall, vdso, libc, vsyscall,
/// syscall; labelled readings, bracketing syscall readings first and last.
fn sandwich(callers: &Callers, t: Target) -> Vec<(&'static str, Option<std::result::Result<Reading, i32>>)> {
    vec![
        ("syscall", callers.call(t, Path::Syscall)),
        ("vdso", callers.call(t, Path::Vdso)),
        ("libc", callers.call(t, Path::Libc)),
        ("vsyscall", callers.call(t, Path::Vsyscall)),
        ("syscall", callers.call(t, Path::Syscall)),
    ]
}

fn detail(reads: &[(&str, Option<std::result::Result<Reading, i32>>)]) -> String {
    reads.iter().filter(|(_, r)| r.is_some()).map(|(p, r)| format!("{p} {}", show(r))).collect::<Vec<_>>().join(", ")
}

/// Check that every path agrees, for the clocks and functions selected:
/// readings in order and within the clock's resolution, equal resolutions,
/// equal getcpu answers (pinned to one CPU), EINVAL for an invalid clock id.
pub fn verify(callers: &Callers, clocks: &[i32], functions: &[VdsoFn]) -> Vec<Check> {
    let mut checks = Vec::new();
    let has = |f: VdsoFn| functions.contains(&f);
    if has(VdsoFn::ClockGettime) {
        for &clock in clocks {
            let t = Target { function: VdsoFn::ClockGettime, clock: Some(clock) };
            let res = match callers.call(Target { function: VdsoFn::ClockGetres, clock: Some(clock) }, Path::Syscall) {
                Some(Ok(Reading::Ns(r))) => r.max(1),
                _ => 1,
            };
            let reads = sandwich(callers, t);
            let name = format!("clock_gettime({})", arch::clock_name(i64::from(clock)));
            checks.push(agreement(&name, &reads, res, is_monotonic(clock)));
        }
    }
    if has(VdsoFn::Gettimeofday) {
        let reads = sandwich(callers, Target { function: VdsoFn::Gettimeofday, clock: None });
        checks.push(agreement("gettimeofday", &reads, 1, false));
    }
    if has(VdsoFn::Time) {
        let reads = sandwich(callers, Target { function: VdsoFn::Time, clock: None });
        checks.push(agreement("time", &reads, 1, false));
    }
    if has(VdsoFn::ClockGetres) {
        for &clock in clocks {
            let reads = sandwich(callers, Target { function: VdsoFn::ClockGetres, clock: Some(clock) });
            let answers: Vec<_> = reads.iter().filter_map(|(_, r)| *r).collect();
            let ok = answers.windows(2).all(|w| w[0] == w[1]);
            let name = format!("clock_getres({}) equal", arch::clock_name(i64::from(clock)));
            checks.push(Check { name, ok, detail: detail(&reads) });
        }
    }
    if has(VdsoFn::Getcpu) {
        checks.push(verify_getcpu(callers));
    }
    if has(VdsoFn::Getrandom) {
        let reads = sandwich(callers, Target { function: VdsoFn::Getrandom, clock: None });
        let answers: Vec<_> = reads.iter().filter_map(|(_, r)| *r).collect();
        let ok = !answers.is_empty() && answers.iter().all(|r| *r == Ok(Reading::Bytes(RANDOM_BYTES)));
        let name = format!("getrandom fills {RANDOM_BYTES} bytes on every path");
        checks.push(Check { name, ok, detail: detail(&reads) });
    }
    if has(VdsoFn::ClockGettime) || has(VdsoFn::ClockGetres) {
        for f in [VdsoFn::ClockGettime, VdsoFn::ClockGetres].into_iter().filter(|f| has(*f)) {
            for bad in INVALID_CLOCKS {
                let reads = sandwich(callers, Target { function: f, clock: Some(bad) });
                let ok = reads.iter().all(|(_, r)| r.is_none() || *r == Some(Err(libc::EINVAL)));
                checks.push(Check {
                    name: format!("{}(invalid id {bad}) gives EINVAL", f.name()),
                    ok,
                    detail: detail(&reads),
                });
            }
        }
    }
    checks
}

/// Readings agree: same errors everywhere, or values within the bracketing
/// syscall readings ± `tolerance`, and non-decreasing for monotonic clocks.
fn agreement(
    name: &str,
    reads: &[(&str, Option<std::result::Result<Reading, i32>>)],
    tolerance: i128,
    monotonic: bool,
) -> Check {
    let present: Vec<_> = reads.iter().filter_map(|(_, r)| *r).collect();
    let errors: Vec<_> = present.iter().filter_map(|r| r.err()).collect();
    let ok = if !errors.is_empty() {
        errors.len() == present.len() && errors.windows(2).all(|w| w[0] == w[1])
    } else {
        let values: Vec<i128> = reads.iter().filter_map(|(_, r)| as_value(r)).collect();
        match (values.first(), values.last()) {
            (Some(&lo), Some(&hi)) => {
                let bracketed = values.iter().all(|&v| v >= lo - tolerance && v <= hi + tolerance);
                let ordered = !monotonic || values.windows(2).all(|w| w[0] <= w[1]);
                bracketed && ordered
            }
            _ => false,
        }
    };
    Check { name: format!("{name} agrees across paths"), ok, detail: detail(reads) }
}

/// getcpu on every path while pinned to the CPU we are on, then unpinned.
fn verify_getcpu(callers: &Callers) -> Check {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let t = Target { function: VdsoFn::Getcpu, clock: None };
    let me = Pid::from_raw(0);
    let old = sched_getaffinity(me).ok();
    let pinned = match callers.call(t, Path::Syscall) {
        Some(Ok(Reading::Cpu(cpu, _))) => {
            let mut set = CpuSet::new();
            set.set(cpu as usize).is_ok() && sched_setaffinity(me, &set).is_ok()
        }
        _ => false,
    };
    let reads = sandwich(callers, t);
    if let Some(old) = old {
        let _ = sched_setaffinity(me, &old);
    }
    let answers: Vec<_> = reads.iter().filter_map(|(_, r)| *r).collect();
    let ok = !answers.is_empty() && answers.windows(2).all(|w| w[0] == w[1]);
    let mut d = detail(&reads);
    if !pinned {
        d.push_str(" (could not pin to one CPU)");
    }
    Check { name: "getcpu agrees across paths".into(), ok, detail: d }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_median_and_spread() {
        let s = Stats::of(&[3.0, 1.0, 2.0, f64::NAN], 10).unwrap();
        assert_eq!((s.median, s.min, s.max, s.rounds), (2.0, 1.0, 3.0, 3));
        assert!((s.spread() - 0.5).abs() < 1e-9);
        assert_eq!(Stats::of(&[4.0], 1).unwrap().stddev, None);
        assert!(Stats::of(&[], 1).is_none());
        assert_eq!(Stats::of(&[1.0, 2.0, 3.0, 4.0], 1).unwrap().median, 2.5);
    }

    #[test]
    fn agreement_rules() {
        let ns = |v| Some(Ok(Reading::Ns(v)));
        let ok = agreement("x", &[("syscall", ns(10)), ("vdso", ns(11)), ("syscall", ns(12))], 1, true);
        assert!(ok.ok);
        let back = agreement("x", &[("syscall", ns(10)), ("vdso", ns(9)), ("syscall", ns(12))], 0, true);
        assert!(!back.ok);
        let far = agreement("x", &[("syscall", ns(10)), ("vdso", ns(100)), ("syscall", ns(12))], 4, false);
        assert!(!far.ok);
        let einval = agreement("x", &[("syscall", Some(Err(22))), ("vdso", Some(Err(22)))], 1, true);
        assert!(einval.ok);
        let mixed = agreement("x", &[("syscall", Some(Err(22))), ("vdso", ns(1))], 1, true);
        assert!(!mixed.ok);
    }
}

#[cfg(test)]
mod error_convention_tests {
    use super::*;

    /// ppc64's vDSO says an error as a positive errno: `__kernel_clock_gettime(8)`
    /// returns 22 (EINVAL), never an answer; elsewhere it is -22.
    #[test]
    fn each_abi_reads_its_vdso_errors() {
        use arch::VdsoErrors::*;
        assert_eq!(rc_as(22, Path::Vdso, PositiveErrno), Err(libc::EINVAL));
        assert_eq!(rc_as(0, Path::Vdso, PositiveErrno), Ok(()));
        assert_eq!(rc_as(-22, Path::Vdso, NegativeErrno), Err(libc::EINVAL));
        assert_eq!(rc_as(22, Path::Vdso, NegativeErrno), Ok(()));
        assert_eq!(arch::Abi::Ppc64.vdso_errors(), PositiveErrno);
        for abi in arch::Abi::ALL.into_iter().filter(|a| *a != arch::Abi::Ppc64) {
            assert_eq!(abi.vdso_errors(), NegativeErrno, "{abi:?}");
        }
    }
}
