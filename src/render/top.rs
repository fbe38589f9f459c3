//! `top`'s words: one row per group (its share of its own CPU in the vDSO
//! and in fallback syscalls), the functions and calls under it, what the
//! sampler could not see, and where to look next for each half.

use super::{thousands, Output, Render};
use crate::model::group::GroupBy;
use crate::model::top::{Share, Sight, TopGroup, TopReport};

/// A share for tables: `71.3%`, `0.4%`, `-` (no samples).
fn percent_text(s: &Share) -> String {
    match s.percent {
        Some(p) if s.samples == 0 => format!("{p:.0}%"),
        Some(p) => format!("{p:.1}%"),
        None => "-".into(),
    }
}

/// The breakdown lines of a group: each vDSO function and fallback call.
fn details(g: &TopGroup) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = g
        .vdso_functions
        .iter()
        .map(|f| (format!("[vdso] {}", f.function.as_deref().unwrap_or("-")), percent_text(&f.share)))
        .collect();
    v.extend(g.kernel_calls.iter().map(|c| {
        let abi = if c.compat { " (32-bit)" } else { "" };
        let clock = c.clock.map(|c| format!(" {}", c.short())).unwrap_or_default();
        (format!("[kernel] {}{clock}{abi}", c.syscall), percent_text(&c.share))
    }));
    v
}

impl Render for TopReport {
    fn render_table(&self, out: &Output) -> String {
        let by = match self.by {
            GroupBy::Exe => "program",
            GroupBy::Comm => "name",
            GroupBy::Cgroup => "cgroup",
        };
        let mut s = format!(
            "top: {:.1} s sampled at {} Hz of CPU time, {} samples of {} processes; by {by}\n",
            self.duration_s,
            self.frequency_hz,
            thousands(self.samples),
            thousands(self.processes_sampled as u64),
        );
        let key = match self.by {
            GroupBy::Exe => "PROGRAM",
            GroupBy::Comm => "COMM",
            GroupBy::Cgroup => "CGROUP",
        };
        if self.groups.is_empty() {
            s += "no process was sampled reading the time or random bytes\n";
        } else {
            let mut t = out.table(&[key, "PROCS", "SAMPLES", "VDSO", "KERNEL", "WHERE", "SHARE"]);
            t.wrap("WHERE");
            for g in &self.groups {
                let d = details(g);
                let (first, rest) = d.split_first().map_or((None, &[][..]), |(f, r)| (Some(f), r));
                t.add_row(vec![
                    out.text(g.key.as_deref().unwrap_or("-")).into_owned(),
                    thousands(g.processes as u64),
                    thousands(g.samples),
                    percent_text(&g.vdso),
                    if self.sight == Sight::UserOnly { "-".into() } else { percent_text(&g.kernel) },
                    first.map_or_else(String::new, |f| out.text(&f.0).into_owned()),
                    first.map_or_else(String::new, |f| f.1.clone()),
                ]);
                for (what, share) in rest {
                    t.add_row(vec![
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        out.text(what).into_owned(),
                        share.clone(),
                    ]);
                }
            }
            s += &t.to_string();
            if !s.ends_with('\n') {
                s.push('\n');
            }
        }
        if let Some(r) = &self.rest {
            s += &out.prose("  ", &format!(
                "and {} more {} ({} processes, {} vDSO and {} fallback-syscall samples): --top N shows more; JSON `processes` has each",
                thousands(r.groups as u64),
                if r.groups == 1 { "group" } else { "groups" },
                thousands(r.processes as u64),
                thousands(r.vdso_samples),
                thousands(r.kernel_samples),
            ));
        }
        match self.sight {
            Sight::UserOnly => {
                s += &out.prose(
                    "",
                    "user-mode samples only (perf_event_open without privilege): time in the kernel's fallback \
                     syscalls is not seen — as root, or with CAP_BPF and CAP_PERFMON, top samples both halves",
                )
            }
            Sight::Full => {
                if self.groups.iter().any(|g| g.kernel.samples > 0) {
                    s += &out.prose(
                        "",
                        "KERNEL is time inside fallback syscalls: `vdsoctl check -p PID` says why the vDSO is \
                         bypassed, `vdsoctl trace --sites -p PID` which code calls",
                    );
                }
            }
        }
        if self.groups.iter().any(|g| g.vdso.samples > 0) {
            s += &out.prose(
                "",
                "VDSO is time on the fast path: a high share is a high call rate or a slow clocksource \
                 (`vdsoctl check` names the clocksource, `vdsoctl bench` its cost per call)",
            );
        }
        if self.interrupted {
            s += &out.prose("", "interrupted (SIGINT or SIGTERM): the samples cover the time until then");
        }
        s
    }
}

const SHARE_HELP: &str = "Of a program's CPU samples over serve's last interval (top's sampler: a BPF program \
     at 999 Hz on every CPU), the % in the vDSO (half=\"vdso\") and in the kernel inside a fallback syscall \
     (half=\"kernel\"); the programs that spend the most there, at most --max-series.";
const SAMPLES_HELP: &str = "CPU samples of the program over serve's last interval, the shares' denominator.";

/// `serve`'s CPU-share section: per program (its executable), the vDSO and
/// fallback-syscall shares of its samples, and its samples.
pub fn prometheus(r: &TopReport) -> String {
    use crate::render::prom::{Kind, Prometheus};
    let mut p = Prometheus::default();
    p.family("cpu_share_percent", Kind::Gauge, SHARE_HELP);
    for g in &r.groups {
        let exe = g.key.as_deref().unwrap_or_default();
        for (half, s) in [("vdso", g.vdso), ("kernel", g.kernel)] {
            p.sample("cpu_share_percent", &[("exe", exe), ("half", half)], s.percent.unwrap_or(0.0));
        }
    }
    p.family("cpu_samples", Kind::Gauge, SAMPLES_HELP);
    for g in &r.groups {
        p.sample("cpu_samples", &[("exe", g.key.as_deref().unwrap_or_default())], g.samples);
    }
    p.finish()
}
