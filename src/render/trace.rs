//! `trace`'s report as a table, Prometheus metrics and folded stacks.

use super::{rate_text, thousands, Output, Render};
use crate::model::trace::*;
use crate::model::ClockRef;
use crate::progress::Target;
use nix::sys::signal::Signal;
use std::time::Duration;

/// `vdsoctl's own processes left out: 22,111 calls (pid 4242)`.
fn own_text(own: &OwnLeftOut) -> String {
    let pids: Vec<String> = own.pids.iter().map(i32::to_string).collect();
    let which = if pids.len() == 1 { "pid" } else { "pids" };
    format!(
        "vdsoctl's own processes left out: {} calls ({which} {}; by its executable file, not by name)",
        thousands(own.calls),
        pids.join(",")
    )
}

/// The pieces of `trace`'s table output.
impl TraceReport {
    /// The `--flamegraph` SVG of the report's stacks (`None` without
    /// `--stacks`), titled with what was traced.
    pub fn flame_graph(&self, out: &Output) -> Option<crate::error::Result<Vec<u8>>> {
        let lines = self.folded_lines()?;
        Some(super::flame::svg(&lines, &format!("vdsoctl trace: {}", self.heading(out))))
    }

    /// A row per count, [vsyscall] emulation and unattributed total.
    fn table(&self, out: &Output) -> crate::render::table::Table {
        let per_thread = self.counts.iter().any(|r| r.tid.is_some());
        let mut header = vec!["PID", "PPID", "COMM", "SYSCALL", "CLOCK", "COUNT", "PER SEC"];
        if per_thread {
            header.insert(1, "TID");
        }
        // -a: which container or unit (or cgroup) each process runs in.
        let placed = matches!(self.target, Target::All);
        if placed {
            header.push("CGROUP");
        }
        let mut t = out.table(&header);
        let dash = |v: Option<i32>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        for r in &self.counts {
            let mut row = vec![
                r.pid.to_string(),
                dash(r.ppid),
                out.text(r.comm.as_deref().unwrap_or("-")).into_owned(),
                r.syscall.to_string(),
                // The header says CLOCK: `MONOTONIC_RAW`, as check's `clock:` rows
                // name it, keeps the table inside 80 columns with 7-digit pids;
                // a getrandom row says its kind there, in parentheses.
                r.clock
                    .map_or_else(|| r.random.map_or_else(|| "-".into(), |k| format!("({})", k.name())), |c| c.short()),
                thousands(r.count),
                per_sec_text(r.per_sec),
            ];
            if per_thread {
                row.insert(1, dash(r.tid));
            }
            if placed {
                row.push(out.text(&r.placement.label().unwrap_or_else(|| "-".into())).into_owned());
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
            if placed {
                row.push("-".into());
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
            if placed {
                row.push("-".into());
            }
            t.add_row(row);
        }
        t
    }

    /// `--sites`: a row per count row and call site.
    fn sites_table(&self, out: &Output) -> Option<crate::render::table::Table> {
        use crate::model::site::label;
        if !self.counts.iter().any(|r| r.sites.as_ref().is_some_and(|s| !s.is_empty())) {
            return None;
        }
        let mut t = out.table(&["PID", "CLOCK", "COUNT", "SITE", "CALLER", "CLASS"]);
        for r in &self.counts {
            for s in r.sites.iter().flatten() {
                t.add_row(vec![
                    r.pid.to_string(),
                    r.clock.map_or_else(|| r.syscall.to_string(), |c| c.short()),
                    thousands(s.count),
                    out.text(&label(&s.site)).into_owned(),
                    s.caller.as_ref().map_or_else(|| "-".to_string(), |c| out.text(&label(c)).into_owned()),
                    crate::render::site_class_text(s.class).to_string(),
                ]);
            }
        }
        Some(t)
    }

    /// Who each process is (its executable and command line, as first
    /// seen) and what its calls cost: a line per process under the table,
    /// so two `python3` rows can be told apart and the table stays narrow.
    fn processes(&self, out: &Output) -> String {
        let mut s = String::new();
        let mut said = std::collections::HashSet::new();
        // Two processes that held one pid in turn: a line each.
        for r in &self.counts {
            if !said.insert((r.pid, r.start)) {
                continue;
            }
            let costs: Vec<_> =
                self.counts.iter().filter(|o| (o.pid, o.start) == (r.pid, r.start)).filter_map(|o| o.cost).collect();
            let cpu = (!costs.is_empty()).then(|| {
                (costs.iter().map(|c| c.cpu_ns).sum::<u64>(), costs.iter().map(|c| c.core_percent).sum::<f64>())
            });
            s += &who_line(out, r.pid, r.exe.as_deref(), r.cmdline.as_deref(), r.cmdline_truncated, cpu);
        }
        // Processes with [vsyscall] emulations only.
        for v in &self.vsyscall_emulations {
            if !said.iter().any(|(pid, _)| *pid == v.pid) && said.insert((v.pid, 0)) {
                let cpu = v.cost.map(|c| (c.cpu_ns, c.core_percent));
                s += &who_line(out, v.pid, v.exe.as_deref(), v.cmdline.as_deref(), false, cpu);
            }
        }
        s
    }

    /// `--stacks` in the table view: the folded stacks, busiest first.
    fn stacks_text(&self, out: &Output) -> String {
        let Some(stacks) = &self.stacks else { return String::new() };
        let lines = crate::model::stacks::folded(stacks);
        if lines.is_empty() && self.stacks_lost.unwrap_or(0) == 0 {
            return "stacks: none counted\n".into();
        }
        let mut s = format!("stacks ({} folded, root first; --format folded prints only these):\n", lines.len());
        for (stack, n) in &lines {
            s += &format!("  {} {n}\n", out.text(stack));
        }
        if let Some(lost) = self.stacks_lost.filter(|n| *n > 0) {
            s += &format!("  {} calls' stacks were not kept (the stack map was full)\n", thousands(lost));
        }
        s
    }

    /// The folded stacks and, when some calls' stacks were not kept, a
    /// line of their own that says so: folded output and the SVG draw
    /// every counted call (`None` without `--stacks`).
    fn folded_lines(&self) -> Option<Vec<(String, u64)>> {
        let mut lines = crate::model::stacks::folded(self.stacks.as_ref()?);
        if let Some(lost) = self.stacks_lost.filter(|n| *n > 0) {
            lines.push((crate::model::stacks::LOST_STACK.to_string(), lost));
        }
        Some(lines)
    }

    /// What was traced and over which span.
    fn heading(&self, out: &Output) -> String {
        let target = match &self.target {
            Target::Pids(p) => format!("pid {}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")),
            Target::All => "all processes".into(),
            Target::Command { argv, pid } => format!("`{}` (pid {pid})", out.text(&crate::render::shell_words(argv))),
        };
        let span = match self.interval {
            Some(i) => {
                let at = |ns: u64| self.wall_start.map_or_else(String::new, |w| utc_time(w + Duration::from_nanos(ns)));
                let wall = match (at(i.start_ns), at(i.end_ns)) {
                    (a, b) if !a.is_empty() => format!(" ({a} – {b} UTC)"),
                    _ => String::new(),
                };
                format!(
                    "interval +{} … +{}{wall}",
                    crate::render::duration_text(Duration::from_nanos(i.start_ns)),
                    crate::render::duration_text(Duration::from_nanos(i.end_ns))
                )
            }
            None => crate::render::duration_text(Duration::from_nanos(self.duration_ns)),
        };
        format!("{target}, {span}")
    }

    /// How the command ended, who exited, the engine, an interruption.
    fn notes(&self, out: &Output) -> String {
        let mut s = String::new();
        // An interval's report has the command still running: said at the end only.
        if let (Some(c), None) = (&self.command, self.interval) {
            match c.exit_status {
                Some(ExitStatus::Code(code)) => s += &format!("command exited with status {code}\n"),
                Some(ExitStatus::Signal(n)) => {
                    s += &format!("command was killed by {} (exit status {})\n", signal_name(n), 128 + n)
                }
                None if self.interrupted => {
                    s += &format!("the command (pid {}) still runs: counting was interrupted\n", c.pid)
                }
                None => s += &format!("the command (pid {}) still runs: counting stopped at the deadline\n", c.pid),
            }
        }
        for e in &self.exited {
            s += &format!(
                "pid {} exited after {}; its rates are over that time\n",
                e.pid,
                crate::render::duration_text(Duration::from_nanos(e.after_ns))
            );
        }
        if let Some(why) = &self.engine_note {
            // Wrapped at the width: a refusal's reason can be long.
            s += &out.prose("engine: ", &format!("{} ({})", self.engine.name(), out.text(why)));
        }
        if self.interrupted {
            s += "interrupted (SIGINT or SIGTERM): counts cover the time until then\n";
        }
        if let Some(own) = self.vdsoctl_own.as_ref().filter(|o| o.calls > 0) {
            s += &out.prose("", &own_text(own));
        }
        s
    }
}

/// `trace -a --format prometheus`'s own-calls gauge.
const OWN_CALLS_HELP: &str = "Calls of vdsoctl's own processes (this one, and any running its executable file) \
                              left out of the trace's series.";

impl Render for TraceReport {
    fn render_table(&self, out: &Output) -> String {
        let mut s = format!("{}\n{}\n", self.heading(out), self.table(out));
        // Who each row's process is, under its table.
        s += &self.processes(out);
        if let Some(sites) = self.sites_table(out) {
            s += &format!("\ncall sites\n{sites}\n");
        }
        s += &self.stacks_text(out);
        s += &self.notes(out);
        s += &out.findings(&self.findings);
        if self.interval.is_some() {
            // A blank line between one interval's report and the next.
            s.push('\n');
        }
        s
    }

    fn render_folded(&self) -> Option<String> {
        Some(crate::render::flame::folded_text(&self.folded_lines()?))
    }

    /// One-shot counts over the trace window, in the series names `serve`
    /// exports continuously (for node_exporter's textfile collector).
    fn render_prometheus(&self) -> Option<String> {
        use crate::render::prom::{self, Kind, SyscallSeries, VsyscallSeries};
        let mut p = crate::render::Prometheus::default();
        p.family("trace_duration_seconds", Kind::Gauge, "How long the trace counted, in seconds.");
        p.sample("trace_duration_seconds", &[], self.duration_ns as f64 / 1e9);
        let clocks: Vec<Option<String>> = self.counts.iter().map(|r| r.clock.map(ClockRef::text)).collect();
        // Two processes that held one pid in turn: a `start` label apart.
        let mut starts: std::collections::HashMap<i32, std::collections::HashSet<u64>> = Default::default();
        for r in &self.counts {
            starts.entry(r.pid).or_default().insert(r.start);
        }
        let reused = |pid: i32| starts.get(&pid).is_some_and(|s| s.len() > 1);
        let rows: Vec<SyscallSeries<'_>> = self
            .counts
            .iter()
            .zip(&clocks)
            .map(|(r, clock)| SyscallSeries {
                pid: r.pid,
                tid: r.tid,
                start: reused(r.pid).then_some(r.start as f64 / 1e9),
                comm: r.comm.as_deref(),
                syscall: r.syscall,
                clock: clock.as_deref(),
                random: r.random.map(RandomCall::name),
                abi: r.abi.name(),
                vdso_serves: !r.expected,
                count: r.count,
                placement: Some(&r.placement),
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
        if let Some(own) = &self.vdsoctl_own {
            p.family("trace_own_calls", Kind::Gauge, OWN_CALLS_HELP);
            p.sample("trace_own_calls", &[], own.calls);
        }
        Some(p.finish())
    }
}

/// `16:55:10.300`: a wall-clock time of day in UTC, to the millisecond.
fn utc_time(t: std::time::SystemTime) -> String {
    let ms = t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis()) % 86_400_000;
    format!("{:02}:{:02}:{:02}.{:03}", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
}

/// `SIGSEGV` for 11, else `signal N`.
fn signal_name(n: i32) -> String {
    Signal::try_from(n).map_or_else(|_| format!("signal {n}"), |s| s.as_str().to_string())
}

/// `  pid N: exe, `command line`, its calls ~T of CPU (P of a core)`, or
/// nothing when none of them is known.
fn who_line(
    out: &Output,
    pid: i32,
    exe: Option<&str>,
    argv: Option<&[String]>,
    truncated: bool,
    cpu: Option<(u64, f64)>,
) -> String {
    let mut parts: Vec<String> = exe.iter().map(|e| out.text(e).into_owned()).collect();
    if let Some(argv) = argv {
        let line = cut(&crate::render::shell_words(argv), CMDLINE_SHOWN, truncated);
        parts.push(format!("`{}`", out.text(&line)));
    }
    if let Some((ns, share)) = cpu {
        let time = crate::render::duration_text(Duration::from_nanos(ns));
        parts.push(format!("its calls ~{time} of CPU ({} of a core)", core_text(share)));
    }
    if parts.is_empty() {
        return String::new();
    }
    // Wrapped at the width (a path and a command line are long), whole piped.
    out.prose(&format!("  pid {pid}: "), &parts.join(", "))
}

/// Characters of a command line shown under the table (JSON has it whole).
const CMDLINE_SHOWN: usize = 72;

/// `text` cut to `max` characters, `…` marking a cut (here, or before: `cut_before`).
fn cut(text: &str, max: usize, cut_before: bool) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None if cut_before => format!("{text}…"),
        None => text.to_string(),
    }
}

/// A share of one core: `2.5%`, `0.04%`, `<0.01%`.
fn core_text(percent: f64) -> String {
    match percent {
        p if p >= 10.0 => format!("{p:.0}%"),
        p if p >= 0.1 => format!("{p:.1}%"),
        p if p >= 0.01 => format!("{p:.2}%"),
        _ => "<0.01%".into(),
    }
}

/// A rate for tables: `81,204`, or one decimal below 10/s.
fn per_sec_text(rate: f64) -> String {
    let text = rate_text(rate);
    text.strip_suffix("/s").unwrap_or(&text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times() {
        let t = std::time::UNIX_EPOCH + Duration::from_millis(86_400_000 * 3 + 3_600_000 * 16 + 60_000 * 5 + 10_300);
        assert_eq!(utc_time(t), "16:05:10.300");
    }
}
