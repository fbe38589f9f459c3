//! `top`: of each process's CPU samples, the share spent reading time and
//! random bytes, split into the vDSO (per function: user mode inside the
//! task's `[vdso]`) and the kernel (per fallback syscall and clock: kernel
//! mode inside the syscall). Folded by program, name or cgroup as `trace
//! --top N --by KEY` folds ([`super::group`]), ranked by the samples spent
//! there (the host's CPU, not the share: a process that ran once and read
//! the clock is not the busiest), the N busiest kept and the rest summed.
//! JSON keeps every process's exact samples beside the groups.
//!
//! The shares are of samples: `perf record -F N` and `perf report --sort
//! comm,dso,sym` count the same things (a `[vdso]` sample, a
//! `[kernel.kallsyms]` one) in the same window.

use super::group::{key_of, GroupBy, Grouping};
use super::ClockRef;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

pub use crate::measure::sample::ProcessSamples;

fn vdso_samples(p: &ProcessSamples) -> u64 {
    p.vdso.iter().map(|v| v.1).sum()
}

fn kernel_samples(p: &ProcessSamples) -> u64 {
    p.kernel.iter().map(|k| k.3).sum()
}

/// What the sampler could see (a typed fact, worded in render/).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sight {
    /// Every CPU sampled in the kernel (BPF): user and kernel mode.
    Full,
    /// A command's user-mode samples only (perf_event_open with
    /// exclude_kernel, unprivileged): the kernel half is not seen.
    UserOnly,
}

/// A number of samples and their share of the group's samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Share {
    pub samples: u64,
    /// % of the group's samples (`null` when it had none).
    pub percent: Option<f64>,
}

fn share(samples: u64, of: u64) -> Share {
    Share { samples, percent: (of > 0).then(|| 100.0 * samples as f64 / of as f64) }
}

/// Samples in one vDSO function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VdsoShare {
    /// The image's symbol (`__vdso_clock_gettime`); `null`: none holds it.
    pub function: Option<String>,
    #[serde(flatten)]
    pub share: Share,
}

/// Samples in one fallback syscall and clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelShare {
    pub syscall: &'static str,
    /// Made in the 32-bit (compat) ABI.
    pub compat: bool,
    pub clock: Option<ClockRef>,
    #[serde(flatten)]
    pub share: Share,
}

/// One group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopGroup {
    /// The group's key (`null`: never seen — no name, no cgroup read).
    pub key: Option<String>,
    pub processes: usize,
    /// Every sample of the group.
    pub samples: u64,
    /// In the vDSO, and per function (most first).
    pub vdso: Share,
    pub vdso_functions: Vec<VdsoShare>,
    /// In the kernel inside a fallback syscall, and per syscall and clock.
    pub kernel: Share,
    pub kernel_calls: Vec<KernelShare>,
    /// In the kernel elsewhere: other syscalls, interrupts, exceptions
    /// (`null` when the kernel is not seen). `kernel` plus this is what
    /// `perf report` puts in `[kernel.kallsyms]`.
    pub kernel_other: Option<Share>,
}

/// One process, exact (JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopProcess {
    pub pid: i32,
    pub comm: Option<String>,
    pub exe: Option<String>,
    pub samples: u64,
    pub vdso: Share,
    pub kernel: Share,
    pub kernel_other: Option<Share>,
}

/// What the N busiest groups leave out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TopRest {
    pub groups: usize,
    pub processes: usize,
    /// Their samples in the vDSO and in fallback syscalls.
    pub vdso_samples: u64,
    pub kernel_samples: u64,
}

/// `top`'s report.
#[derive(Debug, Clone, Serialize)]
pub struct TopReport {
    /// The window sampled (s).
    pub duration_s: f64,
    /// Samples per second of CPU time, on every CPU.
    pub frequency_hz: u32,
    pub sight: Sight,
    pub by: GroupBy,
    pub top: Option<usize>,
    /// Every sample taken of a process in scope.
    pub samples: u64,
    /// Processes sampled; those with a sample in the vDSO or a fallback
    /// syscall are grouped.
    pub processes_sampled: usize,
    /// The groups that read time or random bytes, busiest first.
    pub groups: Vec<TopGroup>,
    pub rest: Option<TopRest>,
    /// Every process in those groups, busiest first.
    pub processes: Vec<TopProcess>,
    /// `-- CMD`: how it ended (`null` while it runs).
    pub exit_status: Option<crate::measure::trace::session::ExitStatus>,
    /// Ended early by SIGINT or SIGTERM.
    pub interrupted: bool,
    /// The window, CLOCK_MONOTONIC ns (`perf record -k monotonic`'s
    /// timestamps; `perf report --time START,END` in seconds).
    pub monotonic_start_ns: u64,
    pub monotonic_end_ns: u64,
}

/// Build the report: `processes` as gathered, grouped by `g`.
pub fn build(
    processes: Vec<ProcessSamples>,
    g: Grouping,
    duration_s: f64,
    frequency_hz: u32,
    sight: Sight,
) -> TopReport {
    let samples = processes.iter().map(|p| p.total).sum();
    let processes_sampled = processes.iter().filter(|p| p.total > 0).count();
    #[derive(Default)]
    struct Acc {
        pids: BTreeSet<i32>,
        samples: u64,
        kernel_other: Option<u64>,
        vdso: BTreeMap<Option<String>, u64>,
        kernel: BTreeMap<(&'static str, bool, Option<i64>), u64>,
    }
    let mut groups: BTreeMap<Option<String>, Acc> = BTreeMap::new();
    let mut rows = Vec::new();
    for p in &processes {
        let (v, k) = (vdso_samples(p), kernel_samples(p));
        // The host: the processes that read the time or random bytes. A
        // command seen in user mode only: each of its processes (a raw
        // caller's time is all in the unseen kernel half).
        if v + k == 0 && (sight == Sight::Full || p.total == 0) {
            continue;
        }
        let placement = super::cgroup::Placement::of(p.cgroup.as_deref());
        let acc = groups.entry(key_of(g.by, &p.comm, &p.exe, Some(&placement))).or_default();
        acc.pids.insert(p.pid);
        acc.samples += p.total;
        if let Some(n) = p.kernel_other {
            *acc.kernel_other.get_or_insert(0) += n;
        }
        for (f, n) in &p.vdso {
            *acc.vdso.entry(f.clone()).or_default() += n;
        }
        for (f, compat, clock, n) in &p.kernel {
            *acc.kernel.entry((f.name(), *compat, *clock)).or_default() += n;
        }
        rows.push(TopProcess {
            pid: p.pid,
            comm: p.comm.clone(),
            exe: p.exe.clone(),
            samples: p.total,
            vdso: share(v, p.total),
            kernel: share(k, p.total),
            kernel_other: p.kernel_other.map(|n| share(n, p.total)),
        });
    }
    let mut ranked: Vec<TopGroup> = groups
        .into_iter()
        .map(|(key, a)| {
            let mut vdso_functions: Vec<VdsoShare> =
                a.vdso.into_iter().map(|(function, n)| VdsoShare { function, share: share(n, a.samples) }).collect();
            vdso_functions.sort_by_key(|f| std::cmp::Reverse(f.share.samples));
            let mut kernel_calls: Vec<KernelShare> = a
                .kernel
                .into_iter()
                .map(|((syscall, compat, clock), n)| KernelShare {
                    syscall,
                    compat,
                    clock: clock.map(ClockRef::Id),
                    share: share(n, a.samples),
                })
                .collect();
            kernel_calls.sort_by_key(|c| std::cmp::Reverse(c.share.samples));
            let v = vdso_functions.iter().map(|f| f.share.samples).sum();
            let k = kernel_calls.iter().map(|c| c.share.samples).sum();
            TopGroup {
                key,
                processes: a.pids.len(),
                samples: a.samples,
                vdso: share(v, a.samples),
                vdso_functions,
                kernel: share(k, a.samples),
                kernel_calls,
                kernel_other: a.kernel_other.map(|n| share(n, a.samples)),
            }
        })
        .collect();
    let spent = |t: &TopGroup| t.vdso.samples + t.kernel.samples;
    ranked.sort_by(|a, b| spent(b).cmp(&spent(a)).then_with(|| a.key.cmp(&b.key)));
    let keep = g.top.unwrap_or(usize::MAX).min(ranked.len());
    let left = ranked.split_off(keep);
    let rest = (!left.is_empty()).then(|| TopRest {
        groups: left.len(),
        processes: left.iter().map(|t| t.processes).sum(),
        vdso_samples: left.iter().map(|t| t.vdso.samples).sum(),
        kernel_samples: left.iter().map(|t| t.kernel.samples).sum(),
    });
    rows.sort_by_key(|p| std::cmp::Reverse(p.vdso.samples + p.kernel.samples));
    TopReport {
        duration_s,
        frequency_hz,
        sight,
        by: g.by,
        top: g.top,
        samples,
        processes_sampled,
        groups: ranked,
        rest,
        processes: rows,
        exit_status: None,
        interrupted: false,
        monotonic_start_ns: 0,
        monotonic_end_ns: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, comm: &str, total: u64, vdso: u64, kernel: u64) -> ProcessSamples {
        ProcessSamples {
            pid,
            comm: Some(comm.into()),
            exe: None,
            cgroup: None,
            total,
            vdso: if vdso > 0 { vec![(Some("__vdso_clock_gettime".into()), vdso)] } else { vec![] },
            kernel: if kernel > 0 { vec![(crate::arch::VdsoFn::ClockGettime, false, Some(4), kernel)] } else { vec![] },
            kernel_other: Some(0),
        }
    }

    #[test]
    fn shares_are_of_the_groups_own_samples_and_the_rest_is_summed() {
        let mut ps: Vec<ProcessSamples> = (0..200).map(|i| p(1000 + i, "churn", 10, 0, 1)).collect();
        ps.push(p(7, "healthy", 1000, 700, 0));
        ps.push(p(8, "raw", 1000, 0, 900));
        ps.push(p(9, "idle", 50, 0, 0));
        let r = build(ps, Grouping { by: GroupBy::Comm, top: Some(2) }, 5.0, 999, Sight::Full);
        assert_eq!(r.samples, 200 * 10 + 2050);
        assert_eq!(r.processes_sampled, 203);
        let keys: Vec<_> = r.groups.iter().map(|g| g.key.clone().unwrap()).collect();
        assert_eq!(keys, ["raw", "healthy"]);
        assert_eq!(r.groups[0].kernel, Share { samples: 900, percent: Some(90.0) });
        assert_eq!(r.groups[1].vdso, Share { samples: 700, percent: Some(70.0) });
        assert_eq!(r.rest, Some(TopRest { groups: 1, processes: 200, vdso_samples: 0, kernel_samples: 200 }));
        // The idle process read no clock: not grouped, counted as sampled.
        assert!(r.processes.iter().all(|p| p.pid != 9));
        assert_eq!(r.processes.len(), 202);
    }
}
