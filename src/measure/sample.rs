//! `top`'s gathering: CPU samples at a fixed rate, and what each process
//! spent in the vDSO and in fallback syscalls.
//!
//! - Privileged (root, or CAP_BPF + CAP_PERFMON): a cpu-clock event per
//!   CPU (or, for `-- CMD`, one inherited task-clock event on the command)
//!   runs the sampler program of [`engines::bpf::sample`] at each sample;
//!   it aggregates in the kernel, user space reads the map.
//! - Unprivileged, `-- CMD` only: per-CPU inherited task-clock events on
//!   the command with `exclude_kernel` (what perf_event_paranoid 2 allows
//!   a process's owner), their IP and TID in a ring; user space tells a
//!   `[vdso]` IP by each process's mapping. Kernel time is not seen.
//!
//! [`engines::bpf::sample`]: crate::measure::trace::engines::bpf::sample

use crate::arch::{Abi, VdsoFn};
use crate::error::{Error, Facility, Hint, Result};
use crate::inspect::process::Process;
use crate::measure::kernel::perf::{self, ClockSampling, PerfEvent, Scope};
use crate::measure::sys::ring::Mmap;
use crate::measure::trace::engines::bpf::sample::{SampleKind, SampleTally, Sampler};
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One process's samples, as gathered (`model::top` folds them).
#[derive(Debug, Clone, Default)]
pub struct ProcessSamples {
    pub pid: i32,
    pub comm: Option<String>,
    pub exe: Option<String>,
    pub cgroup: Option<String>,
    /// Every sample of the process (user and kernel mode).
    pub total: u64,
    /// Samples in its [vdso], per function (`None`: an address no symbol
    /// of the image holds, or an image that could not be read).
    pub vdso: Vec<(Option<String>, u64)>,
    /// Samples in the kernel inside a fallback syscall: the function it
    /// falls back for, the ABI it was made in (compat: 32-bit), its clock.
    pub kernel: Vec<(VdsoFn, bool, Option<i64>, u64)>,
    /// Samples in the kernel elsewhere (another syscall, an interrupt);
    /// `None` where the kernel is not seen.
    pub kernel_other: Option<u64>,
}

/// Who is sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleScope {
    /// Every CPU: the whole host (`-p` filters the report).
    Host,
    /// A command's tree, from its exec (the pid of the gated child).
    Tree(i32),
}

/// The sampling running.
pub enum Sampling {
    /// In the kernel: the program's maps.
    Bpf { sampler: Sampler, events: Vec<PerfEvent> },
    /// User-mode samples in rings (a command, unprivileged).
    User { rings: Vec<(PerfEvent, Mmap)>, seen: HashMap<i32, UserSeen>, buf: Vec<u8> },
}

/// What the unprivileged path knows of a process.
#[derive(Debug, Default)]
pub struct UserSeen {
    /// Its [vdso] (start, end), read at its first sample.
    vdso: Option<(u64, u64)>,
    total: u64,
    /// Samples per offset in its [vdso].
    offsets: HashMap<u64, u64>,
    comm: Option<String>,
    /// Its [vdso] image, read at its first sample (vdsoctl's own may be
    /// unreadable: it is not dumpable, and unprivileged it cannot read
    /// its own /proc/self/mem then).
    image: Option<crate::inspect::elf::Image>,
}

/// `PERF_SAMPLE_IP | PERF_SAMPLE_TID`.
const SAMPLE_IP_TID: u64 = 1 | 2;
/// Data pages of each CPU's ring: 256 KiB, 16,384 samples of 16 bytes —
/// seconds of one CPU at 999 Hz between two drains.
const RING_PAGES: usize = 64;
/// `PERF_RECORD_SAMPLE`.
const RECORD_SAMPLE: u32 = 9;

impl Sampling {
    /// Start sampling `scope` at `freq_hz` in the kernel.
    pub fn start_bpf(
        scope: SampleScope,
        freq_hz: u32,
        cgroups: &[crate::inspect::cgroup::CgroupDir],
    ) -> Result<Sampling> {
        let sampler = Sampler::load(cgroups)?;
        let period_ns = 1_000_000_000 / u64::from(freq_hz.max(1));
        let mut events = Vec::new();
        match scope {
            SampleScope::Host => {
                let s = ClockSampling { period_ns, inherit: false, exclude_kernel: false, sample_type: 0 };
                for cpu in crate::inspect::kernel::online_cpus()? {
                    events.push(perf::open_clock_sampler(&s, Scope::Cpu(cpu))?);
                }
            }
            SampleScope::Tree(pid) => {
                let s = ClockSampling { period_ns, inherit: true, exclude_kernel: false, sample_type: 0 };
                events.push(perf::open_clock_sampler(&s, Scope::Thread(pid))?);
            }
        }
        for e in &events {
            perf::set_bpf(e, sampler.prog())?;
        }
        for e in &events {
            perf::enable(e)?;
        }
        Ok(Sampling::Bpf { sampler, events })
    }

    /// Start sampling a command's tree in user mode only, unprivileged.
    pub fn start_user(pid: i32, freq_hz: u32) -> Result<Sampling> {
        let period_ns = 1_000_000_000 / u64::from(freq_hz.max(1));
        let s = ClockSampling { period_ns, inherit: true, exclude_kernel: true, sample_type: SAMPLE_IP_TID };
        let mut rings = Vec::new();
        for cpu in crate::inspect::kernel::online_cpus()? {
            let e = perf::open_clock_sampler(&s, Scope::ThreadOnCpu(pid, cpu))?;
            let ring = Mmap::new(&e, RING_PAGES).map_err(|e| Error::Facility {
                errno: None,
                what: Facility::RingMap { pages: RING_PAGES, source: e },
                hint: Hint::MlockLimit,
            })?;
            rings.push((e, ring));
        }
        for (e, _) in &rings {
            perf::enable(e)?;
        }
        Ok(Sampling::User { rings, seen: HashMap::new(), buf: Vec::new() })
    }

    /// Whether the kernel half is seen.
    pub fn sees_kernel(&self) -> bool {
        matches!(self, Sampling::Bpf { .. })
    }

    /// Drain the rings (the unprivileged path; a no-op for the BPF one):
    /// call it often enough that a ring does not fill (each holds 64 pages).
    pub fn drain(&mut self) {
        let Sampling::User { rings, seen, buf } = self else { return };
        for (_, ring) in rings.iter_mut() {
            buf.clear();
            ring.read_available(buf);
            let mut at = 0usize;
            while let Some(head) = buf.get(at..at + 8) {
                let ty = u32::from_ne_bytes(head[0..4].try_into().unwrap_or([0; 4]));
                let size = u16::from_ne_bytes(head[6..8].try_into().unwrap_or([0; 2])) as usize;
                if size < 8 {
                    break;
                }
                if ty == RECORD_SAMPLE {
                    if let Some(body) = buf.get(at + 8..at + 8 + 16) {
                        let ip = u64::from_ne_bytes(body[0..8].try_into().unwrap_or([0; 8]));
                        let pid = i32::from_ne_bytes(body[8..12].try_into().unwrap_or([0; 4]));
                        let s = seen.entry(pid).or_insert_with(|| {
                            let p = Process::open(Some(pid)).ok();
                            let vdso = p.as_ref().and_then(|p| p.vdso_mapping().ok()).map(|m| (m.start, m.end));
                            let image = p.as_ref().and_then(|p| p.vdso_image().ok());
                            UserSeen { vdso, image, comm: p.map(|p| p.comm().to_string()), ..UserSeen::default() }
                        });
                        s.total += 1;
                        if let Some((start, end)) = s.vdso.filter(|(s, e)| (*s..*e).contains(&ip)) {
                            let _ = end;
                            *s.offsets.entry(ip - start).or_default() += 1;
                        }
                    }
                }
                at += size;
            }
        }
    }

    /// Every sample so far, per process, named and attributed (cumulative);
    /// vdsoctl itself is left out: it is never its own finding.
    pub fn read(&mut self) -> Result<Vec<ProcessSamples>> {
        self.drain();
        let own = std::process::id() as i32;
        let mut all = self.read_all()?;
        all.retain(|p| p.pid != own);
        Ok(all)
    }

    fn read_all(&mut self) -> Result<Vec<ProcessSamples>> {
        match self {
            Sampling::Bpf { sampler, .. } => Ok(attribute(&sampler.read()?)),
            Sampling::User { seen, .. } => Ok(seen
                .iter()
                .map(|(pid, s)| {
                    let mut vdso: HashMap<Option<String>, u64> = HashMap::new();
                    for (off, n) in &s.offsets {
                        let image = s.image.as_ref().or_else(|| Process::own_vdso_image());
                        *vdso.entry(image.and_then(|i| function_at(i, *off))).or_default() += n;
                    }
                    ProcessSamples {
                        pid: *pid,
                        comm: s.comm.clone(),
                        exe: exe_of(*pid),
                        cgroup: crate::inspect::cgroup::of_process(*pid),
                        total: s.total,
                        vdso: vdso.into_iter().collect(),
                        kernel: Vec::new(),
                        kernel_other: None,
                    }
                })
                .collect()),
        }
    }
}

fn exe_of(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok().map(|p| p.to_string_lossy().into_owned())
}

/// The function of a vDSO image holding `offset` (the images are linked
/// at 0): its `__vdso_`/`__kernel_` name where it has aliases, as perf names it.
pub fn function_at(image: &crate::inspect::elf::Image, offset: u64) -> Option<String> {
    let holding =
        image.symbols.iter().filter(|s| s.is_function() && s.size > 0 && (s.value..s.value + s.size).contains(&offset));
    let mut best: Option<&crate::inspect::elf::Symbol> = None;
    for s in holding {
        let prefixed = |n: &str| n.starts_with("__vdso_") || n.starts_with("__kernel_");
        if best.is_none_or(|b| prefixed(&s.name) && !prefixed(&b.name)) {
            best = Some(s);
        }
    }
    best.map(|s| s.name.clone())
}

/// The tally's rows per process, with names, executables, cgroups and vDSO
/// functions looked up now (a process gone keeps its sampled name).
pub fn attribute(t: &SampleTally) -> Vec<ProcessSamples> {
    let abi = t.abi;
    let native = Process::own_vdso_image();
    let mut compat_images: HashMap<i32, Option<crate::inspect::elf::Image>> = HashMap::new();
    let mut out: HashMap<i32, ProcessSamples> = HashMap::new();
    let mut vdso: HashMap<(i32, Option<String>), u64> = HashMap::new();
    for ((pid, kind), n) in &t.rows {
        let p = out.entry(*pid).or_insert_with(|| ProcessSamples {
            pid: *pid,
            kernel_other: Some(0),
            ..ProcessSamples::default()
        });
        match *kind {
            SampleKind::Total => p.total += n,
            SampleKind::KernelOther => *p.kernel_other.get_or_insert(0) += n,
            SampleKind::Vdso { compat, offset } => {
                let f = if compat {
                    let image = compat_images
                        .entry(*pid)
                        .or_insert_with(|| Process::open(Some(*pid)).ok().and_then(|p| p.vdso_image().ok()));
                    image.as_ref().and_then(|i| function_at(i, offset))
                } else {
                    native.and_then(|i| function_at(i, offset))
                };
                *vdso.entry((*pid, f)).or_default() += n;
            }
            SampleKind::Syscall { compat, nr, clock } => {
                let abi = abi.map(|a| if compat { a.compat().unwrap_or(a) } else { a });
                if let Some(f) = abi.and_then(|a: Abi| a.vdso_syscall(nr as i64)) {
                    p.kernel.push((f, compat, clock.map(i64::from), *n));
                }
            }
        }
    }
    for ((pid, f), n) in vdso {
        if let Some(p) = out.get_mut(&pid) {
            p.vdso.push((f, n));
        }
    }
    // Names only for the processes that read the time or random bytes: a
    // busy host's others are counted, never looked up (3 reads each).
    for p in out.values_mut().filter(|p| !p.vdso.is_empty() || !p.kernel.is_empty()) {
        p.comm = crate::inspect::process::comm_of(p.pid).or_else(|| t.comms.get(&p.pid).cloned());
        p.exe = exe_of(p.pid);
        p.cgroup = crate::inspect::cgroup::of_process(p.pid);
    }
    out.into_values().collect()
}

/// `now - before`, per process and row: one interval's samples.
pub fn difference(now: &[ProcessSamples], before: &[ProcessSamples]) -> Vec<ProcessSamples> {
    let old: HashMap<i32, &ProcessSamples> = before.iter().map(|p| (p.pid, p)).collect();
    now.iter()
        .map(|p| {
            let Some(o) = old.get(&p.pid) else { return p.clone() };
            let mut d = p.clone();
            d.total = p.total.saturating_sub(o.total);
            d.kernel_other = p.kernel_other.map(|n| n.saturating_sub(o.kernel_other.unwrap_or(0)));
            for (f, n) in &mut d.vdso {
                let was = o.vdso.iter().find(|(g, _)| g == f).map_or(0, |x| x.1);
                *n = n.saturating_sub(was);
            }
            for (f, compat, clock, n) in &mut d.kernel {
                let was = o.kernel.iter().find(|k| (k.0, k.1, k.2) == (*f, *compat, *clock)).map_or(0, |x| x.3);
                *n = n.saturating_sub(was);
            }
            d.vdso.retain(|v| v.1 > 0);
            d.kernel.retain(|k| k.3 > 0);
            d
        })
        .filter(|p| p.total > 0)
        .collect()
}

/// What `top` runs: whom, how often, how long.
#[derive(Debug, Clone)]
pub struct TopRequest {
    pub freq_hz: u32,
    /// `-p`: only these processes are reported (the host is sampled).
    pub pids: Vec<i32>,
    pub cgroups: Vec<crate::inspect::cgroup::CgroupDir>,
    /// `-- CMD`.
    pub command: Vec<std::ffi::OsString>,
    pub duration: Option<Duration>,
    /// A report each interval (`None`: one at the end).
    pub interval: Option<Duration>,
    /// The command's stdout to vdsoctl's stderr (a JSON report alone on stdout).
    pub command_stdout_to_stderr: bool,
}

/// One report's samples: the window's, per process.
#[derive(Debug, Clone)]
pub struct Window {
    pub processes: Vec<ProcessSamples>,
    pub seconds: f64,
    pub sees_kernel: bool,
    /// The last report (the end of `-d`, the command's exit, a signal).
    pub last: bool,
    /// The command's exit status (`-- CMD`, when it exited).
    pub exit_status: Option<crate::measure::trace::session::ExitStatus>,
    pub interrupted: bool,
    /// The window's start and end, CLOCK_MONOTONIC ns: what `perf record
    /// -k monotonic` stamps its samples with, so `perf report --time` can
    /// take the same window.
    pub monotonic_ns: (u64, u64),
}

/// CLOCK_MONOTONIC now, in ns.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    crate::measure::sys::call::libc_clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

enum Event {
    Signal,
    Exited(crate::measure::trace::session::ExitStatus),
}

/// How often the unprivileged path drains its rings.
const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// Sample as `req` says; `on_window` gets each interval's window and the
/// last one (the whole run's when there is no interval).
pub fn run(req: &TopRequest, on_window: &mut dyn FnMut(&Window) -> Result<()>) -> Result<()> {
    use crate::measure::sys::spawn;
    use crate::measure::trace::session::ExitStatus;
    // `-p`: each must exist (exit 3 otherwise); a thread stands for its process.
    let mut pids = Vec::new();
    for pid in &req.pids {
        pids.push(Process::open(Some(*pid))?.tgid()?);
    }
    let (tx, rx) = mpsc::channel::<Event>();
    let signals = crate::measure::trace::session::block_stop_signals()?;
    let stx = tx.clone();
    std::thread::spawn(move || {
        while signals.wait().is_ok() {
            if stx.send(Event::Signal).is_err() {
                return;
            }
        }
    });
    let mut _tree = spawn::TreeGuard::default();
    let mut sampling = if req.command.is_empty() {
        Sampling::start_bpf(SampleScope::Host, req.freq_hz, &req.cgroups)?
    } else {
        let cmd = crate::measure::trace::session::command::prepare_command(&req.command)?;
        let mut gated = spawn::fork_gated(&cmd.path, &cmd.argv, &cmd.envp, req.command_stdout_to_stderr, None)
            .map_err(|e| match e {
                spawn::GateError::Fork(source) | spawn::GateError::Filter(source) => {
                    Error::Spawn { cmd: cmd.display.clone(), source }
                }
            })?;
        let sampling = match Sampling::start_bpf(SampleScope::Tree(gated.pid), req.freq_hz, &[]) {
            Ok(s) => Ok(s),
            // Without BPF (unprivileged): the command's user-mode samples.
            Err(_) => Sampling::start_user(gated.pid, req.freq_hz),
        };
        let sampling = match sampling {
            Ok(s) => s,
            Err(e) => {
                gated.abandon();
                return Err(e);
            }
        };
        if let Err(source) = gated.release() {
            gated.abandon();
            return Err(Error::Spawn { cmd: cmd.display.clone(), source });
        }
        let (wait, guard) = gated.into_wait().map_err(|source| Error::Spawn { cmd: cmd.display.clone(), source })?;
        _tree = guard;
        let ctx = tx.clone();
        std::thread::spawn(move || {
            let status = match wait.wait() {
                Ok((spawn::Waited::Exited(code), _)) => ExitStatus::Code(code),
                Ok((spawn::Waited::Signaled(sig), _)) => ExitStatus::Signal(sig),
                Err(_) => return,
            };
            let _ = ctx.send(Event::Exited(status));
        });
        sampling
    };
    let keep = |ps: Vec<ProcessSamples>| -> Vec<ProcessSamples> {
        if pids.is_empty() {
            ps
        } else {
            ps.into_iter().filter(|p| pids.contains(&p.pid)).collect()
        }
    };
    let start = Instant::now();
    let end = req.duration.map(|d| start + d);
    let mut last_at = start;
    let mut last_ns = monotonic_ns();
    let mut before: Vec<ProcessSamples> = Vec::new();
    let mut next = req.interval.map(|i| start + i);
    let (mut exit_status, mut interrupted) = (None, false);
    loop {
        let now = Instant::now();
        let wake = [end, next, Some(now + DRAIN_EVERY)].into_iter().flatten().min().unwrap_or(now + DRAIN_EVERY);
        match rx.recv_timeout(wake.saturating_duration_since(now)) {
            Ok(Event::Signal) => {
                interrupted = true;
                break;
            }
            Ok(Event::Exited(status)) => {
                exit_status = Some(status);
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        sampling.drain();
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        if let (Some(at), Some(every)) = (next, req.interval) {
            if now >= at {
                let all = sampling.read()?;
                let now_ns = monotonic_ns();
                let w = Window {
                    processes: keep(difference(&all, &before)),
                    seconds: now.duration_since(last_at).as_secs_f64(),
                    sees_kernel: sampling.sees_kernel(),
                    last: false,
                    exit_status: None,
                    interrupted: false,
                    monotonic_ns: (last_ns, now_ns),
                };
                on_window(&w)?;
                before = all;
                last_at = now;
                last_ns = now_ns;
                next = Some(at + every);
            }
        }
    }
    let now_ns = monotonic_ns();
    let all = sampling.read()?;
    let sees_kernel = sampling.sees_kernel();
    drop(sampling);
    let now = Instant::now();
    let w = Window {
        processes: keep(difference(&all, &before)),
        seconds: now.duration_since(last_at).as_secs_f64(),
        sees_kernel,
        last: true,
        exit_status,
        interrupted,
        monotonic_ns: (last_ns, now_ns),
    };
    on_window(&w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vdsoctl's own vDSO: the offset of its clock_gettime names it.
    #[test]
    fn an_offset_inside_a_function_names_it() {
        let Some(image) = Process::own_vdso_image() else { return };
        let Some(s) = image.symbols.iter().find(|s| s.name.ends_with("clock_gettime") && s.size > 0) else { return };
        let name = function_at(image, s.value + s.size / 2).unwrap();
        assert!(name.ends_with("clock_gettime"), "{name}");
        assert_eq!(function_at(image, u64::MAX / 2), None);
    }
}
