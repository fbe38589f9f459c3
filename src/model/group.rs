//! `trace --top N --by KEY`: a busy host in a few lines. The count rows
//! (one per process, function and clock) folded into one row per group —
//! the program (its executable), its name, or its cgroup — and function and
//! clock, the groups ranked by calls, the N busiest kept and the rest
//! summed. JSON keeps every count row beside the groups: nothing is lost,
//! only the table is short. `bpftrace -e '… { @[comm] = count() }'` is the
//! peer of `--by comm`.

use super::ClockRef;
use crate::measure::trace::RandomCall;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// What a group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// The program: its executable's path (its name when it exited unseen).
    #[default]
    Exe,
    /// The process name (`comm`), as `bpftrace`'s `@[comm]` keys it.
    Comm,
    /// The cgroup (its container or unit where the path names one).
    Cgroup,
}

/// How to fold a report: `--by` and `--top`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grouping {
    pub by: GroupBy,
    /// The groups kept, busiest first (`None`: all).
    pub top: Option<usize>,
}

/// One group's calls of one function and clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupRow {
    /// The group's key: a path, a name or a cgroup label; `null` when the
    /// processes were never seen (no cgroup read, no name).
    pub key: Option<String>,
    /// Processes of the group that made these calls.
    pub processes: usize,
    /// `clock_gettime`, `getrandom`, …; with `vsyscall`, the function
    /// called in the [vsyscall] page (`time`, `gettimeofday`).
    pub syscall: &'static str,
    /// Emulated [vsyscall] calls, not syscalls.
    pub vsyscall: bool,
    pub clock: Option<ClockRef>,
    pub random: Option<RandomCall>,
    pub count: u64,
    #[serde(serialize_with = "crate::model::rate")]
    pub per_sec: f64,
    /// The summed CPU cost of the calls, where each row has one (ns).
    pub cpu_ns: Option<u64>,
    /// That cost over the trace's duration, in % of one core.
    pub core_percent: Option<f64>,
}

/// What the N busiest groups leave out, summed.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Rest {
    pub groups: usize,
    pub processes: usize,
    pub count: u64,
}

/// The groups of one report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Groups {
    pub by: GroupBy,
    pub top: Option<usize>,
    /// Every group, with all its rows (busiest group first, and its
    /// busiest row first), then `rest` for the groups past `top`.
    pub rows: Vec<GroupRow>,
    /// Groups past `top` (`null` when none was left out).
    pub rest: Option<Rest>,
}

/// A row to fold: a count row or a [vsyscall] row, reduced to what
/// grouping reads.
pub struct Item<'a> {
    pub pid: i32,
    pub start: u64,
    /// Its group's key ([`key_of`]).
    pub key: Option<String>,
    pub syscall: &'static str,
    pub vsyscall: bool,
    pub clock: Option<ClockRef>,
    pub random: Option<RandomCall>,
    pub count: u64,
    pub per_sec: f64,
    pub cost: Option<&'a super::cost::Cost>,
}

/// A group's key of a process.
pub fn key_of(
    by: GroupBy,
    comm: &Option<String>,
    exe: &Option<String>,
    placement: Option<&super::cgroup::Placement>,
) -> Option<String> {
    match by {
        GroupBy::Exe => exe.clone().or_else(|| comm.clone()),
        GroupBy::Comm => comm.clone(),
        GroupBy::Cgroup => placement.and_then(|p| p.label()),
    }
}

/// One group's calls of one function and clock, summed as they fold.
#[derive(Default)]
struct Calls {
    /// (pid, start time) of each process.
    processes: HashSet<(i32, u64)>,
    count: u64,
    per_sec: f64,
    cpu_ns: u64,
    core_percent: f64,
    /// Every row folded in had a cost.
    costed: bool,
}

/// Fold the rows (`model::trace` hands them over as [`Item`]s) by `g`.
pub fn fold<'a>(g: Grouping, items: impl Iterator<Item = Item<'a>>) -> Groups {
    // key → what was called → its calls.
    type What = (bool, &'static str, Option<ClockRef>, Option<RandomCall>);
    let mut groups: BTreeMap<Option<String>, BTreeMap<What, Calls>> = BTreeMap::new();
    for it in items {
        let calls = groups
            .entry(it.key)
            .or_default()
            .entry((it.vsyscall, it.syscall, it.clock, it.random))
            .or_insert_with(|| Calls { costed: true, ..Calls::default() });
        calls.processes.insert((it.pid, it.start));
        calls.count = calls.count.saturating_add(it.count);
        calls.per_sec += it.per_sec;
        match it.cost {
            Some(cost) => {
                calls.cpu_ns = calls.cpu_ns.saturating_add(cost.cpu_ns);
                calls.core_percent += cost.core_percent;
            }
            None => calls.costed = false,
        }
    }
    // key, its calls, its rows, its processes.
    type Ranked = (Option<String>, u64, Vec<GroupRow>, HashSet<(i32, u64)>);
    let mut ranked: Vec<Ranked> = groups
        .into_iter()
        .map(|(key, calls)| {
            let mut pids = HashSet::new();
            let mut rows: Vec<GroupRow> = calls
                .into_iter()
                .map(|((vsyscall, syscall, clock, random), c)| {
                    pids.extend(c.processes.iter().copied());
                    GroupRow {
                        key: key.clone(),
                        processes: c.processes.len(),
                        syscall,
                        vsyscall,
                        clock,
                        random,
                        count: c.count,
                        per_sec: c.per_sec,
                        cpu_ns: c.costed.then_some(c.cpu_ns),
                        core_percent: c.costed.then_some(c.core_percent),
                    }
                })
                .collect();
            rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.syscall.cmp(b.syscall)));
            let total = rows.iter().map(|r| r.count).fold(0u64, u64::saturating_add);
            (key, total, rows, pids)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let keep = g.top.unwrap_or(usize::MAX).min(ranked.len());
    let left = ranked.split_off(keep);
    let rest = (!left.is_empty()).then(|| Rest {
        groups: left.len(),
        processes: left.iter().flat_map(|g| g.3.iter()).collect::<HashSet<_>>().len(),
        count: left.iter().map(|g| g.1).fold(0u64, u64::saturating_add),
    });
    Groups { by: g.by, top: g.top, rows: ranked.into_iter().flat_map(|g| g.2).collect(), rest }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cost::Cost;

    /// A process's clock_gettime(CLOCK_MONOTONIC_RAW) row.
    struct Row {
        pid: i32,
        comm: Option<String>,
        exe: Option<String>,
        count: u64,
        cost: Cost,
    }

    fn row(pid: i32, comm: &str, exe: Option<&str>, count: u64) -> Row {
        let cost = crate::model::cost::of(count, 100.0, 1_000_000_000);
        Row { pid, comm: Some(comm.into()), exe: exe.map(Into::into), count, cost }
    }

    fn fold_rows(g: Grouping, rows: &[Row]) -> Groups {
        fold(
            g,
            rows.iter().map(|r| Item {
                pid: r.pid,
                start: r.pid as u64,
                key: key_of(g.by, &r.comm, &r.exe, None),
                syscall: "clock_gettime",
                vsyscall: false,
                clock: ClockRef::of(crate::measure::trace::Clock::Id(4)),
                random: None,
                count: r.count,
                per_sec: r.count as f64,
                cost: Some(&r.cost),
            }),
        )
    }

    /// 200 short-lived processes of one program fold into one row with
    /// their exact sum; the top N keep the busiest, the rest is summed.
    #[test]
    fn a_churn_folds_into_one_row_and_the_rest_is_summed() {
        let mut rows: Vec<Row> = (0..200).map(|i| row(1000 + i, "sc", Some("/tmp/sc"), 100)).collect();
        rows.push(row(7, "healthy", Some("/usr/bin/healthy"), 5));
        rows.push(row(8, "other", None, 3));
        let g = fold_rows(Grouping { by: GroupBy::Exe, top: Some(1) }, &rows);
        assert_eq!(g.rows.len(), 1);
        let r = &g.rows[0];
        assert_eq!((r.key.as_deref(), r.processes, r.count, r.cpu_ns), (Some("/tmp/sc"), 200, 20_000, Some(2_000_000)));
        assert_eq!(g.rest, Some(Rest { groups: 2, processes: 2, count: 8 }));
        // --by comm: a process never seen by exe is grouped by name.
        let all = fold_rows(Grouping { by: GroupBy::Comm, top: None }, &rows);
        let keys: Vec<_> = all.rows.iter().map(|r| (r.key.clone().unwrap(), r.count)).collect();
        assert_eq!(keys, [("sc".into(), 20_000), ("healthy".into(), 5), ("other".into(), 3)]);
        assert_eq!(all.rest, None);
        // Exe falls back to the name for a process never seen.
        let exe = fold_rows(Grouping { by: GroupBy::Exe, top: None }, &rows);
        assert_eq!(exe.rows[2].key.as_deref(), Some("other"));
    }
}
