//! `trace`'s report as a table, Prometheus metrics and folded stacks, and
//! the words of its findings: the typed facts of model/trace.rs
//! ([`TraceFact`]), of its call sites and its stacks.

use super::{rate_text, thousands, Output, Render};
use crate::inspect::symbols::FrameKind;
use crate::measure::trace::reach::Held;
use crate::model::site::{Fix, FrameRow, SiteClass};
use crate::model::stacks::{Cut, LostStack, StackFrame, Unnamed};
use crate::model::trace::*;
use crate::model::{ClockRef, Finding};
use crate::progress::Kind;
use crate::progress::Target;
use nix::sys::signal::Signal;
use std::fmt;
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
                    out.text(&short_label(&s.site)).into_owned(),
                    s.caller.as_ref().map_or_else(|| "-".to_string(), |c| out.text(&short_label(c)).into_owned()),
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
        let lines = folded(stacks);
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
        let mut lines = folded(self.stacks.as_ref()?);
        if let Some(lost) = self.stacks_lost.filter(|n| *n > 0) {
            lines.push((LOST_STACK.to_string(), lost));
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
        let mut s = match &self.groups {
            // --top/--by: a row per group, its cost in the row; who each
            // process is stays in JSON.
            Some(g) => format!("{}\n{}\n{}", self.heading(out), groups_table(g, out), rest_line(g)),
            None => {
                // Who each row's process is, under its table.
                format!("{}\n{}\n{}", self.heading(out), self.table(out), self.processes(out))
            }
        };
        if let Some(sites) = self.sites_table(out) {
            s += &format!("\ncall sites\n{sites}\n");
        }
        s += &self.stacks_text(out);
        s += &self.notes(out);
        s += &out.findings(&self.findings.iter().map(Finding::from).collect::<Vec<_>>());
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
            .map(|v| VsyscallSeries {
                pid: v.pid,
                start: 0,
                comm: v.comm.as_deref(),
                function: v.function,
                count: v.count,
            })
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

/// The hint of `trace`'s getrandom bypass line: it sees calls, not runtimes.
pub const TRACE_HINT: &str = "glibc ≥ 2.41 and Go ≥ 1.24 read getrandom from the vDSO; an older one, musl, \
     getentropy() or a raw syscall(SYS_getrandom) enters the kernel: `vdsoctl check -- CMD` names the runtime, \
     `trace --sites` the caller";

/// The pseudo-stack of the calls whose stack was not kept, in folded
/// output and the SVG: their share is drawn, so no stack claims more.
pub const LOST_STACK: &str = "[stack not kept]";

/// `pid 812 (python3)`, or `pid 812` without a name.
fn who(pid: i32, comm: &Option<String>) -> String {
    crate::render::process::pid_text(pid, comm.as_deref())
}

/// How a rate stands against --fail-over, for the end of a line.
fn gate(per_sec: f64, fail_over: Option<f64>) -> String {
    match fail_over {
        None => " (--fail-over 0 makes this exit 1)".to_string(),
        Some(rate) if per_sec > rate => format!(", over --fail-over {rate}"),
        Some(rate) => format!(", within --fail-over {rate}"),
    }
}

impl Group {
    /// The group's rate, as precisely as --fail-over needs.
    fn rate_text(&self) -> String {
        rate_number(self.rate(), self.fail_over)
    }

    /// Who made the calls: one process (or thread), or how many and the
    /// busiest three; a 32-bit ABI on a 64-bit kernel named.
    fn callers_text(&self) -> String {
        let abi = self.abi;
        let abi_note = if abi.native() == abi { String::new() } else { format!(", {} ABI", abi.name()) };
        // Per-thread rows name their thread.
        let name = |c: &Caller| match c.tid {
            Some(t) => format!("{} thread {t}", who(c.pid, &c.comm)),
            None => who(c.pid, &c.comm),
        };
        let noun = if self.callers.first().is_some_and(|c| c.tid.is_some()) { "threads" } else { "processes" };
        match self.callers.as_slice() {
            [one] => format!("{}{abi_note}", name(one)),
            all => {
                const TOP: usize = 3;
                let busiest: Vec<String> = all
                    .iter()
                    .take(TOP)
                    .map(|c| format!("{} {}/s", name(c), rate_number(c.per_sec, self.fail_over)))
                    .collect();
                let more = if all.len() > TOP {
                    format!(", {} more", thousands((all.len() - TOP) as u64))
                } else {
                    String::new()
                };
                format!("{} {noun}{abi_note} ({}{more})", thousands(all.len() as u64), busiest.join(", "))
            }
        }
    }

    /// `CLOCK_MONOTONIC: 1,000 syscalls/s from pid 7 (app)`.
    fn head(&self) -> String {
        format!("{}: {} syscalls/s from {}", self.what, self.rate_text(), self.callers_text())
    }
}

impl ExpectedWhy {
    /// Why, for a group of `syscall` on `abi`.
    fn text(self, syscall: &str, abi: crate::arch::Abi) -> String {
        match self {
            ExpectedWhy::NotInVdso => format!("the {} vDSO has no {syscall}, by design", abi.name()),
            ExpectedWhy::RandomByVdso => "the vDSO's own calls: its key refill into its state page, or a call it hands to the kernel (RNG not ready, flags it does not serve)".into(),
            ExpectedWhy::RandomUnservedFlags => "flags the vDSO hands to the kernel".into(),
            ExpectedWhy::StartupKey => "a C library's start-up key (glibc's malloc, once a process)".into(),
            ExpectedWhy::NoVdsoRandom { since: Some((a, b)) } => {
                format!("this kernel's vDSO has no getrandom (Linux {a}.{b} brought it to the {} vDSO)", abi.name())
            }
            ExpectedWhy::NoVdsoRandom { since: None } => format!("the {} vDSO has no getrandom", abi.name()),
            ExpectedWhy::ClockNeverServed => "the vDSO never serves this clock id (CPU-time, alarm and fd clocks always enter the kernel)".into(),
            ExpectedWhy::CallNeverServed => "the vDSO never serves this call here".into(),
            ExpectedWhy::ClocksourceNoVdso => {
                "the clocksource has no vDSO mode: the vDSO makes this read a syscall itself (`vdsoctl check`'s clocksource row)".into()
            }
        }
    }
}

impl AuxExpected {
    /// (why, what to do): one match on the host's state words both.
    fn words(self) -> (String, String) {
        use crate::arch;
        let (id, aux) = (self.id, self.aux);
        let n = id - arch::CLOCK_AUX;
        let enable = format!("echo 1 > {}", arch::aux_enable_path(n));
        match aux.state(id) {
            Some(arch::AuxState::Disabled) => (
                format!("the kernel serves auxiliary clock {n} by syscall while it is disabled (the vDSO reads an auxiliary clock only once enabled)"),
                format!("if the program means to read it, enable it (as root): `{enable}`; the vDSO then serves it"),
            ),
            Some(arch::AuxState::Absent) => (
                "this kernel has no auxiliary clocks (before Linux 6.17, or built without CONFIG_POSIX_AUX_CLOCKS): the kernel answers by syscall (EINVAL)".into(),
                format!("a Linux 6.17+ kernel with CONFIG_POSIX_AUX_CLOCKS serves it from the vDSO once enabled (`{enable}`)"),
            ),
            // Enabled (an architecture whose vDSO lacks them) or not read.
            _ => (
                "the vDSO serves an auxiliary clock only on Linux 6.17+ (x86_64, arm64) and only while it is enabled".into(),
                format!("see whether it is enabled: `cat {}` (`{enable}` enables it)", arch::aux_enable_path(n)),
            ),
        }
    }

    /// How the vDSO would serve it.
    pub fn fix(self) -> String {
        self.words().1
    }
}

/// Why an auxiliary clock's syscalls are expected (the vDSO serves one only
/// while it is enabled).
impl fmt::Display for AuxExpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.words().0)
    }
}

/// What a loss means, whatever the engine: the trace was not observed in
/// full (`lost` calls ran uncounted, so no verdict may call it clean),
/// and the fix for this engine's cause.
fn lost_words(engine: Kind, lost: u64) -> (String, String) {
    let why = match engine {
        Kind::Bpf | Kind::Fentry => "the count map and the process map were both full",
        Kind::Perf => "ring buffers overflowed",
        Kind::Seccomp => "vdsoctl could not read the caller's /proc entry while the call waited",
    };
    let fix = match engine {
        Kind::Bpf | Kind::Fentry => {
            format!("trace fewer processes (-p) or for less time; the BPF map holds {} rows", crate::measure::trace::engines::bpf::MAX_ROWS)
        }
        Kind::Perf => "trace fewer processes or for less time, or use the BPF engine (root or CAP_BPF+CAP_PERFMON)".into(),
        Kind::Seccomp => "raise the open-file limit (`ulimit -n`, `prlimit --nofile`, a container's `--ulimit nofile`): vdsoctl lifts the soft limit to the hard one, not past it".into(),
    };
    (
        format!(
            "not observed in full: {} clock syscalls ran uncounted ({why}): counts are short by that many",
            thousands(lost)
        ),
        fix,
    )
}

/// `libc.so.6 syscall+0x1d`, `app +0x1139 (build-id 3f…)`, `[vdso]
/// __vdso_clock_gettime+0x5a`, `[anon] +0x10`, `0x7f…` (unmapped).
pub fn label(f: &FrameRow) -> String {
    let object = f.object.as_deref().map(|o| o.rsplit('/').next().unwrap_or(o));
    match (f.kind, object, &f.symbol) {
        (FrameKind::Unmapped, _, _) => format!("{:#x}", f.address),
        (_, o, Some(s)) => match &f.tail_call {
            Some(t) => format!("{} {t} (tail call, returns to {s}+{:#x})", o.unwrap_or("[anon]"), f.offset),
            None => format!("{} {s}+{:#x}", o.unwrap_or("[anon]"), f.offset),
        },
        (_, o, None) => {
            let id = f.build_id.as_deref().map(|b| format!(" (build-id {b})")).unwrap_or_default();
            format!("{} +{:#x}{id}", o.unwrap_or("[anon]"), f.offset)
        }
    }
}

/// `--top`/`--by`: a row per group and call, its processes, calls and
/// their CPU cost (the share of one core, summed).
fn groups_table(g: &crate::model::group::Groups, out: &Output) -> crate::render::table::Table {
    use crate::model::group::GroupBy;
    let key = match g.by {
        GroupBy::Exe => "PROGRAM",
        GroupBy::Comm => "COMM",
        GroupBy::Cgroup => "CGROUP",
    };
    let mut t = out.table(&[key, "PROCS", "SYSCALL", "CLOCK", "COUNT", "PER SEC", "CPU"]);
    for r in &g.rows {
        t.add_row(vec![
            out.text(r.key.as_deref().unwrap_or("-")).into_owned(),
            thousands(r.processes as u64),
            if r.vsyscall { format!("[vsyscall] {}", r.syscall) } else { r.syscall.to_string() },
            r.clock.map_or_else(|| r.random.map_or_else(|| "-".into(), |k| format!("({})", k.name())), |c| c.short()),
            thousands(r.count),
            per_sec_text(r.per_sec),
            r.core_percent.map_or_else(|| "-".into(), core_text),
        ]);
    }
    t
}

/// What `--top` left out, summed, under the groups table.
fn rest_line(g: &crate::model::group::Groups) -> String {
    match &g.rest {
        Some(r) => format!(
            "  and {} more {} ({} calls from {} processes): --top {} shows the busiest; JSON `counts` has every row\n",
            thousands(r.groups as u64),
            if r.groups == 1 { "group" } else { "groups" },
            thousands(r.count),
            thousands(r.processes as u64),
            g.top.unwrap_or(0),
        ),
        None => String::new(),
    }
}

/// Characters of a function's name a table shows (JSON has it whole): a
/// demangled Rust or C++ name runs to hundreds.
const SYMBOL_SHOWN: usize = 40;

/// [`label`] for a table column: a long function name cut, its `+0x…`
/// offset kept, so the column stays narrow and the place stays exact.
fn short_label(f: &FrameRow) -> String {
    match &f.symbol {
        Some(s)
            if s.chars().count() > SYMBOL_SHOWN
                || f.tail_call.as_ref().is_some_and(|t| t.chars().count() > SYMBOL_SHOWN) =>
        {
            let short =
                |n: &String| if n.chars().count() > SYMBOL_SHOWN { cut(n, SYMBOL_SHOWN - 1, false) } else { n.clone() };
            label(&FrameRow { symbol: Some(short(s)), tail_call: f.tail_call.as_ref().map(short), ..f.clone() })
        }
        _ => label(f),
    }
}

/// A site's fix, its caller named: libc's `syscall()` is fixed in whoever
/// called it.
fn site_fix(fix: &Fix, caller: Option<&FrameRow>) -> Fix {
    let mut fix = fix.clone();
    if fix.class == SiteClass::LibcSyscall {
        fix.who = caller.map(label);
    }
    fix
}

impl fmt::Display for TraceFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TraceFact as F;
        match self {
            F::NotSplit(g) => {
                write!(f, "{}: {} syscalls/s from {}, clock ids not split (--no-split)", g.syscall, g.rate_text(), g.callers_text())
            }
            F::RandomBypass { group, .. } => write!(
                f,
                "{} — the vDSO is bypassed for these random bytes{}",
                group.head(),
                gate(group.top(), group.fail_over)
            ),
            F::ClockBypass { group, has_clock, .. } => write!(
                f,
                "{} — the vDSO is bypassed for this {}{}",
                group.head(),
                if *has_clock { "clock id" } else { "call" },
                gate(group.top(), group.fail_over)
            ),
            F::AuxExpected { group, clock } => write!(f, "{} — expected: {clock}", group.head()),
            F::Expected { group, why } => {
                write!(f, "{} — expected: {}", group.head(), why.text(group.syscall, group.abi))
            }
            F::Vsyscall { pid, comm, function, count, per_sec, fail_over, .. } => write!(
                f,
                "{} made {} calls ({}/s) to {function} in the [vsyscall] page — each is emulated by the kernel and invisible to strace{}",
                who(*pid, comm),
                thousands(*count),
                rate_number(*per_sec, *fail_over),
                gate(*per_sec, *fail_over)
            ),
            F::Unattributed { pid, comm, count, engine } => write!(
                f,
                "{}: {} clock syscalls were counted in its total but not split by function and clock (the `unattributed` row): {}",
                who(*pid, comm),
                thousands(*count),
                match engine {
                    Kind::Bpf | Kind::Fentry => "the count map was full",
                    _ => "their sampled 32-bit records were lost",
                }
            ),
            F::Lost { engine, lost } => f.write_str(&lost_words(*engine, *lost).0),
            F::Skipped { runs } => write!(
                f,
                "not observed in full: the kernel skipped {} runs of vdsoctl's BPF programs (another run of the same program was under way on that CPU, preempted: `recursion_misses`), each perhaps a traced clock syscall: counts may be short by up to that many",
                thousands(*runs)
            ),
            F::Unfollowed { count } => write!(
                f,
                "{} new processes of the traced tree could not be followed (the traced set was full)",
                thousands(*count)
            ),
            F::Withdrawn { count } => write!(
                f,
                "{} clock syscalls were withdrawn by a signal while they waited for vdsoctl: each ran again (and was counted then) or, where the handler lacks SA_RESTART, failed EINTR, which it never does alone",
                thousands(*count)
            ),
            F::PtraceRequests { count } => write!(
                f,
                "the traced tree asked {} times to ptrace a task (PTRACE_TRACEME, ATTACH or SEIZE): a task vdsoctl traces refuses that (EPERM) where alone it would not, so the counts stand but the program may have run otherwise",
                thousands(*count)
            ),
            F::Multiplexed => f.write_str("some counters were multiplexed and did not run the whole time"),
            F::AuditorSeized(s) => {
                let held = match s.held {
                    Held::Auditor => format!("vdsoctl itself (task {})", s.tid),
                    Held::Guardian => format!("vdsoctl's guardian of the tree (pid {})", s.tid),
                };
                let end = if s.killed { "it was killed at sight" } else { "it was gone before vdsoctl's SIGKILL" };
                write!(
                    f,
                    "pid {} ({}) of the traced tree ptraced {held}, which only a tracer with CAP_SYS_PTRACE can: {end}, but while it held it the counts were its to stop, read and rewrite, so none of them is a verdict",
                    s.tracer,
                    s.comm,
                )
            }
            F::Clean { compat: true, secs } => write!(
                f,
                "no clock syscalls and no [vsyscall] emulations in {}: clock reads the vDSO serves, if it made any, never enter the kernel and are not counted",
                crate::render::duration_text(Duration::from_secs_f64(*secs))
            ),
            F::Clean { compat: false, secs } => write!(
                f,
                "no clock syscalls from 64-bit tasks and no [vsyscall] emulations in {} — 32-bit programs were not traced (--native-only)",
                crate::render::duration_text(Duration::from_secs_f64(*secs))
            ),
            F::Site { pid, comm, count, site, caller, fix } => {
                let by = match (caller, fix.class) {
                    (Some(c), SiteClass::LibcSyscall) => format!(", called from {}", label(c)),
                    _ => String::new(),
                };
                write!(
                    f,
                    "{} {}: {} calls from {}{by} — {}",
                    who(*pid, comm),
                    fix.what,
                    thousands(*count),
                    label(site),
                    site_fix(fix, caller.as_deref()).cause()
                )
            }
            F::SitesLost { count } => write!(
                f,
                "{} calls were counted in their rows but not in a call-site row (the site map was full)",
                thousands(*count)
            ),
        }
    }
}

impl TraceFact {
    /// What to do about it, worded; `None` when there is nothing to do.
    pub fn hint(&self) -> Option<String> {
        use crate::measure::trace::engines::bpf::{MAX_PROCS, MAX_ROWS, MAX_SITES};
        use TraceFact as F;
        match self {
            F::NotSplit(_) => Some("run without --no-split to see which clock ids enter the kernel (each clock id's counter costs ~28 ns per call more)".into()),
            F::RandomBypass { .. } => Some(TRACE_HINT.into()),
            F::ClockBypass { advice, .. } | F::Vsyscall { advice, .. } => Some(advice.to_string()),
            F::AuxExpected { clock, .. } => Some(clock.fix()),
            F::Expected { .. } | F::Multiplexed | F::Clean { .. } => None,
            F::Unattributed { engine: Kind::Bpf | Kind::Fentry, .. } => Some(format!(
                "the BPF count map holds {MAX_ROWS} rows (process, function, clock); trace fewer processes or for less time"
            )),
            F::Unattributed { .. } => Some("use the BPF engine (--engine bpf, root or CAP_BPF+CAP_PERFMON), which splits every call in the kernel".into()),
            F::Lost { engine, lost } => Some(lost_words(*engine, *lost).1),
            F::Skipped { .. } => Some("this kernel runs the programs preemptible (syscall tracepoints since 7.x, fentry trampolines on a preemptible kernel): count a command with --engine seccomp, which skips no call, or trace with fewer busy threads per CPU".into()),
            F::Unfollowed { .. } => Some(format!("the traced set holds {MAX_PROCS} processes; trace a smaller tree")),
            F::Withdrawn { .. } => Some("count with the BPF engine (--engine bpf, root or CAP_BPF+CAP_PERFMON), which never makes a call wait".into()),
            F::AuditorSeized(_) => Some("audit a command that needs CAP_SYS_PTRACE as a user without it (setpriv --reuid … --inh-caps=-all), or leave vdsoctl and its parent out of what it traces".into()),
            F::PtraceRequests { .. } => Some("run it with --seccomp-channel listener (it may then ptrace), or count with the BPF engine (--engine bpf, root or CAP_BPF+CAP_PERFMON)".into()),
            F::Site { caller, fix, .. } => Some(site_fix(fix, caller.as_deref()).to_string()),
            F::SitesLost { .. } => {
                Some(format!("the site map holds {MAX_SITES} rows; trace fewer processes or for less time"))
            }
        }
    }
}

/// A trace fact as a finding: kind, severity, its words and hint, and
/// whether it is about bypassed calls.
impl From<&TraceFact> for Finding {
    fn from(fact: &TraceFact) -> Finding {
        let mut finding = Finding::new(fact.kind(), fact.severity(), fact.to_string(), fact.hint());
        if let TraceFact::ClockBypass { advice, .. } | TraceFact::Vsyscall { advice, .. } = fact {
            finding.next = advice.command();
        }
        finding.pids = match fact {
            TraceFact::NotSplit(group)
            | TraceFact::RandomBypass { group, .. }
            | TraceFact::ClockBypass { group, .. }
            | TraceFact::AuxExpected { group, .. }
            | TraceFact::Expected { group, .. } => {
                let mut pids: Vec<i32> = Vec::new();
                for c in &group.callers {
                    if !pids.contains(&c.pid) {
                        pids.push(c.pid);
                    }
                }
                Some(pids)
            }
            TraceFact::Vsyscall { pid, .. } | TraceFact::Unattributed { pid, .. } | TraceFact::Site { pid, .. } => {
                Some(vec![*pid])
            }
            TraceFact::Lost { .. }
            | TraceFact::Skipped { .. }
            | TraceFact::Withdrawn { .. }
            | TraceFact::PtraceRequests { .. }
            | TraceFact::Unfollowed { .. }
            | TraceFact::Multiplexed
            | TraceFact::Clean { .. }
            | TraceFact::SitesLost { .. } => None,
            TraceFact::AuditorSeized(s) => Some(vec![s.tracer]),
        };
        if let TraceFact::Site { count, fix, .. } = fact {
            finding.class = Some(fix.class);
            finding.count = Some(*count);
        }
        if let TraceFact::AuxExpected { clock, .. } = fact {
            finding.clock = Some(crate::model::ClockRef::Id(clock.id));
            finding.aux_state = Some(clock.aux.state(clock.id).map(|s| match s {
                crate::arch::AuxState::Enabled => "enabled",
                crate::arch::AuxState::Disabled => "disabled",
                crate::arch::AuxState::Absent => "absent",
            }));
        }
        if fact.is_bypass() {
            finding.of_bypass()
        } else {
            finding
        }
    }
}

/// A finding as JSON has it (`findings[]`: kind, severity, message, hint).
impl serde::Serialize for TraceFact {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Finding::from(self).serialize(s)
    }
}

/// Folded stacks: `comm;root;..;innermost count` per row, a cut marked
/// at the root end; rows of one process and stack (the same names) merged.
pub fn folded(rows: &[crate::model::stacks::StackRow]) -> Vec<(String, u64)> {
    let mut lines: Vec<(String, u64)> = Vec::new();
    for r in rows {
        let mut parts = vec![crate::model::stacks::fold_safe(r.comm.as_deref().unwrap_or("?"))];
        if let Some(cut) = r.cut {
            parts.push(cut.marker().to_string());
        }
        // A tail call left no frame: its function, marked, between the
        // caller it returns to and the frame it jumped to.
        for f in r.frames.iter().rev() {
            parts.push(crate::model::stacks::fold_safe(&f.to_string()));
            if let Some(t) = &f.tail_call {
                parts.push(crate::model::stacks::fold_safe(&format!("{t} [tail call]")));
            }
        }
        let line = parts.join(";");
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += r.count,
            None => lines.push((line, r.count)),
        }
    }
    lines
}

impl fmt::Display for LostStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(LOST_STACK)
    }
}

impl Cut {
    /// The pseudo-frame that marks a cut in folded stacks.
    pub fn marker(self) -> &'static str {
        match self {
            Cut::DepthLimit => "[cut: depth limit]",
            Cut::NoFramePointer => "[cut: no frame pointer]",
            Cut::Unverified => "[cut: unverified frame]",
        }
    }
}

impl Unnamed {
    /// Why the address has no name, as JSON's `unnamed` and the folded frame say it.
    pub fn text(self) -> &'static str {
        match self {
            Unnamed::FileNotFound => "its file was not found",
            Unnamed::NotCode => "not code",
            Unnamed::GoneBeforeLook => "gone before a look, not captured",
            Unnamed::OutsideMappings => "outside the mappings seen",
        }
    }
}

impl fmt::Display for Unnamed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// JSON `frames[].unnamed`: the words.
impl serde::Serialize for Unnamed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

/// `symbol`, else `object+0xoffset`, else the address (and why it has no
/// name): a folded-stack frame.
impl fmt::Display for StackFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let object = self.object.as_deref().map(|o| o.rsplit('/').next().unwrap_or(o));
        match (&self.symbol, object) {
            (Some(s), _) => f.write_str(s),
            (None, Some(o)) => write!(f, "{o}+{:#x}", self.offset),
            _ => match self.unnamed {
                Some(why) => write!(f, "{:#x} [{why}]", self.address),
                None => write!(f, "{:#x}", self.address),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kind::Kind as FindingKind;
    use crate::model::Status;

    /// An auxiliary clock's hint names the command that enables it, whatever
    /// the host's state (moved here from tests/cli/trace: words are tested
    /// where they live).
    #[test]
    fn an_aux_clock_says_how_to_enable_it() {
        let id = crate::arch::CLOCK_AUX + 3;
        use crate::arch::AuxClocks;
        for aux in [AuxClocks::Enabled(0), AuxClocks::Absent, AuxClocks::Unknown] {
            let fix = AuxExpected { id, aux }.fix();
            assert!(fix.contains("`echo 1 > /sys/kernel/time/aux_clocks/3/enable`"), "{fix}");
        }
    }

    /// The string literals of a model file's code (its tests aside) that
    /// have a space: words, which issue 40 keeps out of model/.
    fn prose_of(src: &str) -> Vec<String> {
        let code = src.split("#[cfg(test)]").next().unwrap_or(src);
        crate::render::prose::string_literals(code).into_iter().filter(|l| l.contains(' ')).collect()
    }

    /// Issue 40: model/trace.rs holds no sentence: its findings are typed
    /// facts ([`TraceFact`]), worded here.
    #[test]
    fn model_trace_holds_no_prose() {
        let prose = prose_of(include_str!("../model/trace.rs"));
        assert!(prose.is_empty(), "prose in model/trace.rs: {prose:?}");
    }

    /// Issue 40: model/site.rs holds no sentence (a site's label is worded here).
    #[test]
    fn model_site_holds_no_prose() {
        let prose = prose_of(include_str!("../model/site.rs"));
        assert!(prose.is_empty(), "prose in model/site.rs: {prose:?}");
    }

    /// Issue 40: model/stacks.rs holds no sentence (cut markers, unnamed
    /// frames and the lost-stack line are worded here).
    #[test]
    fn model_stacks_holds_no_prose() {
        let prose = prose_of(include_str!("../model/stacks.rs"));
        assert!(prose.is_empty(), "prose in model/stacks.rs: {prose:?}");
    }

    /// Each fact is worded here, with its kind, severity and hint from the
    /// model's policy; a bypass is marked for the interval's WARN-once.
    #[test]
    fn trace_facts_are_worded_here() {
        let group = |callers: Vec<Caller>| Group {
            what: "CLOCK_MONOTONIC".into(),
            syscall: "clock_gettime",
            abi: crate::arch::HOST_ABI.unwrap_or(crate::arch::Abi::X86_64),
            callers,
            fail_over: None,
        };
        let one = Caller { pid: 7, tid: None, comm: Some("app".into()), per_sec: 1500.0 };
        let f = Finding::from(&TraceFact::RandomBypass { group: group(vec![one.clone()]), severity: Status::Warn });
        assert_eq!(
            (f.kind, f.severity, f.bypass, f.hint.as_deref()),
            (FindingKind::RandomSyscallObserved, Status::Warn, true, Some(TRACE_HINT))
        );
        assert_eq!(
            f.message,
            "CLOCK_MONOTONIC: 1,500 syscalls/s from pid 7 (app) — the vDSO is bypassed for these random bytes (--fail-over 0 makes this exit 1)"
        );
        let two = vec![one.clone(), Caller { pid: 8, tid: None, comm: None, per_sec: 500.0 }];
        let f = Finding::from(&TraceFact::NotSplit(group(two)));
        assert_eq!((f.kind, f.severity, f.bypass), (FindingKind::RawClockSyscall, Status::Warn, false));
        assert_eq!(
            f.message,
            "clock_gettime: 2,000 syscalls/s from 2 processes (pid 7 (app) 1,500/s, pid 8 500/s), clock ids not split (--no-split)"
        );
        let f = Finding::from(&TraceFact::Expected { group: group(vec![one]), why: ExpectedWhy::StartupKey });
        assert_eq!((f.kind, f.severity, f.hint), (FindingKind::ClockAlwaysSyscall, Status::Info, None));
        assert!(f.message.ends_with("— expected: a C library's start-up key (glibc's malloc, once a process)"));
        let json = serde_json::to_string(&TraceFact::Multiplexed).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"kind":"not-observed-in-full","severity":"warn","message":"some counters were multiplexed and did not run the whole time","hint":null}"#
        );
        let f = Finding::from(&TraceFact::Multiplexed);
        assert_eq!(
            (f.kind, f.severity, f.message.as_str()),
            (
                FindingKind::NotObservedInFull,
                Status::Warn,
                "some counters were multiplexed and did not run the whole time"
            )
        );
        let f = Finding::from(&TraceFact::Clean { compat: false, secs: 2.0 });
        assert_eq!((f.kind, f.severity), (FindingKind::ObservedClean, Status::Info));
        assert!(f.message.ends_with("in 2.00 s — 32-bit programs were not traced (--native-only)"), "{}", f.message);
        let f = Finding::from(&TraceFact::SitesLost { count: 1234 });
        assert!(f.message.starts_with("1,234 calls were counted in their rows but not in a call-site row"));
        assert!(f.hint.is_some_and(|h| h.ends_with("rows; trace fewer processes or for less time")));
    }

    /// An unnamed frame's reason is words in JSON and in its folded name.
    #[test]
    fn unnamed_frames_and_cuts_are_worded_here() {
        let mut f: StackFrame = crate::inspect::symbols::Frame::unmapped(0x7f00).into();
        f.unnamed = Some(Unnamed::NotCode);
        assert_eq!(f.to_string(), "0x7f00 [not code]");
        let json = serde_json::to_value(&f).unwrap_or_default();
        assert_eq!(json["unnamed"], "not code", "{json}");
        assert_eq!(Cut::NoFramePointer.marker(), "[cut: no frame pointer]");
    }

    #[test]
    fn utc_times() {
        let t = std::time::UNIX_EPOCH + Duration::from_millis(86_400_000 * 3 + 3_600_000 * 16 + 60_000 * 5 + 10_300);
        assert_eq!(utc_time(t), "16:05:10.300");
    }
}
