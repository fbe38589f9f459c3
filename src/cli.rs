//! The command line, in clap derive form. A field's doc comment is its help.

use crate::arch::{self, VdsoFn};
use crate::measure::bench::{functions as bench_functions, Path as BenchPath};
use crate::render::{ColorChoice, Format};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

mod pages;
pub use pages::{after_help, page, Page, ENVIRONMENT, PAGES};

/// Shows whether a process really gets the vDSO fast path for its clock reads, and if not, why.
#[derive(Debug, Parser)]
#[command(name = "vdsoctl", version, about, max_term_width = 100)]
pub struct Cli {
    #[arg(long, value_enum, global = true, help = crate::render::format_help(), default_value_t = Format::default(), hide_possible_values = true, hide_default_value = true, help_heading = "Global options")]
    pub format: Format,

    /// Shorthand for --format json
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,

    /// auto (default: on a terminal, unless NO_COLOR is set), always, or never
    #[arg(long, value_name = "WHEN", value_enum, global = true, default_value_t = ColorChoice::Auto, hide_possible_values = true, hide_default_value = true, help_heading = "Global options")]
    pub color: ColorChoice,

    /// Same as `--color never`.
    #[arg(long, global = true, hide = true)]
    pub no_color: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The vDSO image: ELF header, dynamic symbols with versions (like objdump -T), version definitions, notes, hash tables.
    Dump(DumpArgs),
    /// The special mappings ([vdso], [vvar], [vvar_vclock], [vsyscall], ...) and the vsyscall mode.
    Maps(TargetArgs),
    /// The auxiliary vector, decoded (like LD_SHOW_AUXV=1, for any process).
    Auxv(TargetArgs),
    /// Count clock syscalls and [vsyscall] emulations per process and clock id, in the kernel (no ptrace stops).
    Trace(TraceArgs),
    /// Of each process's CPU, the share spent reading time and random bytes: in the vDSO (per
    /// function) and in the kernel's fallback syscalls (per syscall and clock), sampled.
    Top(TopArgs),
    /// ns/call of each clock through libc, the vDSO, the raw syscall and the vsyscall page, with syscalls/call counted.
    Bench(BenchArgs),
    /// The whole host audit, one process, a container image's binaries, or a smoke command under
    /// trace, with a verdict and an exit code for CI.
    Check(CheckArgs),
    /// A Prometheus exporter: /metrics with the host audit, per-clock costs and per-process clock syscalls.
    Serve(ServeArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print a man page (roff) to stdout: vdsoctl(1), or vdsoctl-COMMAND(1).
    Man(ManArgs),
}

impl Command {
    /// The subcommand's name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Dump(_) => "dump",
            Command::Maps(_) => "maps",
            Command::Auxv(_) => "auxv",
            Command::Trace(_) => "trace",
            Command::Top(_) => "top",
            Command::Bench(_) => "bench",
            Command::Check(_) => "check",
            Command::Serve(_) => "serve",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
        }
    }
}

/// Which process to look at.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Process to inspect (default: vdsoctl's own process).
    #[arg(short, long, value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Option<i32>,
}

/// `dump` arguments.
#[derive(Debug, Clone, Args)]
pub struct DumpArgs {
    /// Process whose [vdso] to read (default: vdsoctl's own).
    #[arg(short, long, value_name = "PID", value_parser = clap::value_parser!(i32).range(1..), conflicts_with = "file")]
    pub pid: Option<i32>,

    /// Read a vDSO image from a file instead of a process.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,

    /// Also write the raw image, byte for byte, to this file (for objdump -T).
    #[arg(short = 'o', long = "output", value_name = "OUT.so")]
    pub output: Option<PathBuf>,
}

/// `trace` arguments.
#[derive(Debug, Clone, Default, Args)]
pub struct TraceArgs {
    /// Processes to trace, all their threads and what they fork from now on (comma-separated; a
    /// thread id stands for its process).
    #[arg(short, long, value_name = "PID[,PID..]", value_delimiter = ',', value_parser = clap::value_parser!(i32).range(1..), conflicts_with_all = ["all", "command"])]
    pub pid: Vec<i32>,

    /// Trace every process on the host.
    #[arg(short, long, conflicts_with = "command")]
    pub all: bool,

    /// How long to trace (500ms, 2s, 1m; a bare number is seconds). Default 5s for -p and -a;
    /// with `-- CMD`, until it exits (at the deadline the command is left running).
    #[arg(short, long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Print a table every DURATION (100ms or more) as well as the summary (JSON Lines with
    /// --json).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Option<Duration>,

    /// Exit 1 when a clock that should be served by the vDSO makes more than RATE syscalls/s (0 for CI).
    #[arg(long, value_name = "RATE", value_parser = rate_arg)]
    pub fail_over: Option<f64>,

    /// How to count: bpf (in-kernel aggregation, exact for every ABI), perf (tracepoint counters
    /// and sampled records, where BPF is refused), seccomp (-- CMD only, no privileges: each
    /// clock syscall waits for vdsoctl; counts until the command's tree exits, so no -d), or
    /// auto (bpf, else perf, else seccomp for -- CMD).
    #[arg(long, value_enum, default_value_t = crate::measure::trace::engine::Choice::Auto)]
    pub engine: crate::measure::trace::engine::Choice,

    /// Seccomp engine: how it hears of a clock syscall. ptrace (seccomp-stops: a signal never
    /// fails a call, but the command cannot ptrace its own children or threads), listener (the
    /// command may ptrace, but a signal can fail a waiting call EINTR: counted as withdrawn), or
    /// auto (ptrace, unless the command is a sanitizer build or a tracer such as strace or gdb).
    #[arg(long, value_enum, value_name = "CHANNEL", default_value_t = crate::measure::trace::engine::Channel::Auto)]
    pub seccomp_channel: crate::measure::trace::engine::Channel,

    /// One row per thread instead of per process (BPF engine).
    #[arg(long)]
    pub per_thread: bool,

    /// Split each row by call site: the syscall instruction and the return address at the stack
    /// pointer, named (object, function, offset; build-id without symbols) and classified (the
    /// vDSO's own fallback, libc's syscall() and its caller, the program's inline syscall, the Go
    /// runtime, JIT code), with the fix for each (BPF engine, or seccomp for -- CMD; x86_64 hosts).
    #[arg(long)]
    pub sites: bool,

    /// Perf engine: skip the 32-bit (compat) samplers (~190 ns less per syscall of the target
    /// here, but a 32-bit program the target runs goes uncounted).
    #[arg(long)]
    pub native_only: bool,

    /// Perf engine: one counter per clock syscall instead of one per clock id (which clock ids
    /// is not known).
    #[arg(long, conflicts_with = "fail_over")]
    pub no_split: bool,

    /// With -a: count only processes in this cgroup v2 or below it, filtered in the kernel (BPF
    /// engine; repeatable). PATH as /proc/PID/cgroup's `0::` line shows it, or a directory under
    /// the cgroup2 mount.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Vec<String>,
    /// Count each call's user stack too (BPF engine; frame-pointer walk): printed as folded
    /// stacks under the table, by `--format folded` (the input of flamegraph.pl and inferno),
    /// and in JSON's `stacks`.
    #[arg(long)]
    pub stacks: bool,

    /// With --stacks, also draw the stacks as an SVG flame graph into FILE (replaced whole, never
    /// written through a symbolic link).
    #[arg(long, value_name = "FILE.svg", requires = "stacks")]
    pub flamegraph: Option<std::path::PathBuf>,

    /// Fold the rows by program (or --by KEY) and show the N busiest: a busy host in a few
    /// lines, each group's calls summed and its cost beside them (JSON keeps every row, and adds
    /// `groups`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub top: Option<u32>,

    /// What rows are folded by: `exe` (the program, the default with --top), `comm` (the name, as
    /// bpftrace's `@[comm]`), `cgroup` (its container or unit). Alone, it folds without a limit.
    #[arg(long, value_enum, value_name = "KEY")]
    pub by: Option<crate::model::group::GroupBy>,

    /// Command to start and trace from its exec, with its threads and children.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `top` arguments.
#[derive(Debug, Clone, Default, Args)]
pub struct TopArgs {
    /// Report only these processes (comma-separated; the host is sampled).
    #[arg(short, long, value_name = "PID[,PID..]", value_delimiter = ',', value_parser = clap::value_parser!(i32).range(1..), conflicts_with = "command")]
    pub pid: Vec<i32>,

    /// Sample for DURATION and print one report (500ms, 2s, 1m). Without it: a report every
    /// --interval until interrupted (or, with `-- CMD`, until it exits).
    #[arg(short, long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// A report every DURATION (100ms or more; default 2s without -d; JSON Lines with --json).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Option<Duration>,

    /// Samples per second of CPU time on each CPU (fixed period, as `perf record -F`).
    #[arg(short = 'F', long, value_name = "HZ", default_value_t = 999, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    pub freq: u32,

    /// The N groups that spend the most CPU reading time and random bytes (JSON keeps every process).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub top: u32,

    /// What processes are grouped by: `exe` (the program, the default), `comm` (the name), `cgroup`.
    #[arg(long, value_enum, value_name = "KEY", default_value_t = crate::model::group::GroupBy::Exe)]
    pub by: crate::model::group::GroupBy,

    /// Sample only tasks in this cgroup v2 or below it, filtered in the kernel (repeatable).
    #[arg(long, value_name = "PATH", conflicts_with = "command")]
    pub cgroup: Vec<String>,

    /// Command to start and sample from its exec, with its threads and children (unprivileged:
    /// its user-mode samples only).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// A duration as people type it: `500ms`, `2s`, `1.5m`, `250us`; a bare
/// number is seconds. Above zero and at most a year.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("`{text}` is not a duration (try 500ms, 2s or 1m)"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("unknown unit `{u}` in `{text}` (use ns, us, ms, s, m or h)")),
    };
    let secs = value * scale;
    if !(secs.is_finite() && secs > 0.0 && secs <= 366.0 * 86_400.0) {
        return Err(format!("`{text}` must be above zero and at most a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A window that may be off: a [`parse_duration`], or `0` (with or
/// without a unit) for none.
pub fn parse_window(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.parse::<f64>().is_ok_and(|v| v == 0.0) {
        // The unit still has to be one.
        return parse_duration(&format!("1{unit}")).map(|_| Duration::ZERO);
    }
    parse_duration(text)
}

/// `bench` arguments.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Clock ids to measure (names like MONOTONIC_RAW or numbers), comma-separated. Without
    /// --functions, only the functions that take a clock are measured (and gated by --max-ns).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clock_arg)]
    pub clocks: Vec<i32>,

    /// Functions to measure (the arch table's, listed by bench_functions_help).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = bench_function_arg, help = bench_functions_help())]
    pub functions: Vec<VdsoFn>,

    /// Paths to measure: libc, vdso, syscall, vsyscall.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = bench_path_arg)]
    pub paths: Vec<BenchPath>,

    /// Check that every path agrees (readings, resolution, getcpu, EINVAL); a mismatch exits 1.
    #[arg(long)]
    pub verify: bool,

    /// Exit 1 when a clock that should be fast costs more than N ns/call through libc.
    #[arg(long, value_name = "N", value_parser = positive_ns_arg)]
    pub max_ns: Option<f64>,

    /// Fewer, shorter rounds: a few hundred milliseconds in all.
    #[arg(long)]
    pub quick: bool,

    /// Write per function, clock and path the median ns/call, its spread (MAD), syscalls/call and
    /// verdict to FILE as a baseline (stable, sorted JSON; no time, pid or host fact).
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,

    /// Compare with a baseline FILE (--save-baseline): a row is slower when its median grew by more
    /// than max(3*(MAD old + MAD new), 5% of old), its syscalls/call rose, or it lost `fast`.
    /// Exit 1 on any slower row.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
}

/// A clock, by name (`MONOTONIC_RAW`, `CLOCK_BOOTTIME`) or number: a usage
/// error (exit 2) names the choices.
fn clock_arg(text: &str) -> Result<i32, String> {
    arch::parse_clock(text).ok_or_else(|| {
        let names: Vec<_> = arch::CLOCKS.iter().map(|c| c.short_name()).collect();
        format!("unknown clock {text:?} — use a number or one of {}", names.join(", "))
    })
}

/// A function bench can time.
/// `--functions`' help: the functions `bench` times, from the arch table.
fn bench_functions_help() -> String {
    let names: Vec<&str> = bench_functions().iter().map(|f| f.name()).collect();
    format!("Functions to measure: {}", names.join(", "))
}

fn bench_function_arg(text: &str) -> Result<VdsoFn, String> {
    bench_functions().into_iter().find(|f| f.name().eq_ignore_ascii_case(text.trim())).ok_or_else(|| {
        let names: Vec<_> = bench_functions().iter().map(|f| f.name()).collect();
        format!("unknown function {text:?} — use one of {}", names.join(", "))
    })
}

/// A path bench can take.
fn bench_path_arg(text: &str) -> Result<BenchPath, String> {
    BenchPath::parse(text).ok_or_else(|| format!("unknown path {text:?} — use libc, vdso, syscall or vsyscall"))
}

/// `--fail-over`: a finite rate ≥ 0 in calls/s.
fn rate_arg(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!("--fail-over wants a rate ≥ 0 (calls/s), got {text} — e.g. --fail-over 0 in CI")),
    }
}

/// `--platform OS/ARCH[/VARIANT]`, checked here, parsed again by resolve.
fn platform_arg(text: &str) -> Result<String, String> {
    crate::inspect::archive::Platform::parse(text.trim()).map(|_| text.trim().to_string())
}

/// `--fail-on KIND`: a kind of the catalogue.
fn kind_arg(text: &str) -> Result<crate::model::kind::Kind, String> {
    crate::model::kind::Kind::from_id(text.trim())
        .ok_or_else(|| format!("{text} is no kind of finding — doc/FINDINGS.md lists them (e.g. raw-clock-call-site)"))
}

/// `--allow KIND[=GLOB]`.
fn rule_arg(text: &str) -> Result<crate::model::gate::Rule, String> {
    crate::model::gate::parse_rule(text.trim()).ok_or_else(|| {
        format!(
            "{text}: no kind of finding by that name — doc/FINDINGS.md lists them (e.g. raw-clock-call-site=/opt/*)"
        )
    })
}

/// `--max-ns`: a positive, finite number of nanoseconds.
fn positive_ns_arg(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => {
            Err(format!("{text} is not a positive number of nanoseconds — give the budget per call, e.g. --max-ns 100"))
        }
    }
}

/// `check` arguments.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Also audit this process: its vDSO mapping, ELF class, static or dynamic, libc, seccomp (as
    /// root, its filters are read and run on each syscall the vDSO falls back to).
    #[arg(short, long, value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Option<i32>,

    /// Fail a clock that should be fast when libc's call costs more than N ns.
    #[arg(long, value_name = "N", value_parser = positive_ns_arg)]
    pub max_ns: Option<f64>,

    /// Exit 1 on WARN as well as on FAIL.
    #[arg(long)]
    pub strict: bool,

    /// Fail on these kinds of finding (doc/FINDINGS.md) wherever they are WARN or INFO:
    /// `--fail-on random-syscall-old-libc,compat-32bit`.
    #[arg(long, value_name = "KIND,...", value_delimiter = ',', value_parser = kind_arg)]
    pub fail_on: Vec<crate::model::kind::Kind>,

    /// Let a kind of finding pass, everywhere or where the binary's path (else the check's
    /// name) matches the glob: `--allow raw-clock-call-site=/opt/legacy/*`. It is still
    /// listed, as INFO "allowed". Repeatable.
    #[arg(long, value_name = "KIND[=GLOB]", value_parser = rule_arg)]
    pub allow: Vec<crate::model::gate::Rule>,

    /// The ignore file (default: ./.vdsoctlignore when there is one): lines
    /// `KIND[=GLOB] [expires=YYYY-MM-DD] REASON`; an ignored finding is listed as INFO
    /// "ignored: REASON"; an entry past its date is an error (exit 2).
    #[arg(long, value_name = "FILE")]
    pub ignore_file: Option<PathBuf>,

    /// The host's observation fails when one process bypasses the vDSO more than RATE times a
    /// second, and warns below (default 100, so a rare raw call does not fail a fleet; 0 fails any).
    #[arg(long, value_name = "RATE", value_parser = rate_arg, conflicts_with_all = ["pid", "image", "command", "seccomp_profile"])]
    pub fail_over: Option<f64>,

    /// Show only the rows that are not OK, and the verdict (tables; JSON keeps every row).
    #[arg(short, long)]
    pub quiet: bool,

    /// How long to observe clock syscalls and [vsyscall] calls before the verdict: with -p the
    /// process's, without it every process's (500ms, 2s; a bare number is seconds). Default 1s
    /// where a trace engine may run (root, or CAP_BPF and CAP_PERFMON); 0 turns it off. A
    /// served clock that enters the kernel fails; a clean window clears a static or 32-bit warning.
    #[arg(long, value_name = "DURATION", value_parser = parse_window)]
    pub trace: Option<Duration>,

    /// Audit the ELF programs and libraries of a container image instead of this host's own process:
    /// a tree (an unpacked image, a mounted rootfs, or / inside the container), a docker-archive or
    /// OCI archive tar (`podman save`, `docker save`) or an OCI layout directory, told by content.
    #[arg(long, value_name = "ROOT", conflicts_with_all = ["pid", "trace", "max_ns", "command", "timeout"])]
    pub image: Option<PathBuf>,

    /// With --image, an archive holding several images (`podman save -m`, a multi-platform OCI
    /// index): audit the Nth (1 for the first). Without it or --platform, such an archive is a
    /// usage error that lists its images.
    #[arg(long, value_name = "N", requires = "image", conflicts_with = "platform")]
    pub image_index: Option<usize>,

    /// With --image, an archive holding several images: audit the one built for this platform
    /// (linux/arm64, linux/arm/v7; the variant only when given).
    #[arg(long, value_name = "OS/ARCH[/VARIANT]", requires = "image", value_parser = platform_arg)]
    pub platform: Option<String>,

    /// Also write the report as JSON (what --json prints) to FILE, beside the output on stdout.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    /// Also write the report as JUnit XML (what --format junit prints) to FILE, beside the output
    /// on stdout.
    #[arg(long, value_name = "FILE")]
    pub export_junit: Option<PathBuf>,

    /// Judge a Docker/OCI seccomp profile (JSON) instead: per architecture, every syscall the vDSO
    /// falls back to (clock reads, getcpu, getrandom) and mmap (glibc 2.41's MAP_DROPPABLE
    /// getrandom state) must be allowed; FAIL for each it kills, traps or errors.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["pid", "trace", "max_ns", "command", "timeout", "image"])]
    pub seccomp_profile: Option<PathBuf>,

    /// With --image or -- CMD: write what the audit judged to FILE as a baseline (stable, sorted
    /// JSON: each binary by path and SHA-256, its runtime, status and verdict, or the command's
    /// syscalls per process name, function and clock; the findings; no pid, time or host fact),
    /// to commit and compare later with --baseline.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["pid", "seccomp_profile"])]
    pub save_baseline: Option<PathBuf>,

    /// With --image or -- CMD: compare with a baseline FILE and show per binary, call and finding
    /// what is new, fixed or unchanged at WARN or FAIL; the exit code is then 1 only for something
    /// new.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["pid", "seccomp_profile"])]
    pub baseline: Option<PathBuf>,

    /// With -- CMD: stop the smoke command once it has run this long (SIGTERM, then SIGKILL 2 s
    /// later; with the seccomp engine what it started too) and fail the check with its status
    /// (30s, 5m; a bare number is seconds). Default: no limit.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "command")]
    pub timeout: Option<Duration>,

    /// Smoke command to run under trace: fails when a clock the vDSO serves here goes through a
    /// syscall or the [vsyscall] page; a failing command fails the check with its own status.
    #[arg(last = true, value_name = "CMD", conflicts_with_all = ["pid", "trace", "max_ns"])]
    pub command: Vec<OsString>,
}

/// `serve` arguments.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on: HOST:PORT, [IPv6]:PORT, or :PORT for every IPv4 interface.
    /// Loopback by default: /metrics names every process's command and cgroup
    /// (10411: outside the 9100-9999 range Prometheus allocates to exporters, which is full).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:10411")]
    pub listen: String,

    /// How often the audit, the clock costs and the per-process counts are refreshed
    /// (500ms, 2s, 1m; a bare number is seconds). A scrape always gets the last refresh.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub interval: std::time::Duration,

    /// At most N per-process series (clock syscalls and [vsyscall] emulations), the
    /// busiest by rate over the last interval: bounds the exporter's cardinality.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_series: u32,
}

/// `man` arguments.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print (default: vdsoctl(1), the overview).
    #[arg(value_name = "COMMAND", value_parser = clap::builder::PossibleValuesParser::new(PAGES.iter().skip(1).map(|p| p.name)))]
    pub command: Option<String>,
}

/// The clap command with the pages' texts: what `main` parses with, and
/// what `man` and `completions` render.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command().after_help(after_help(&PAGES[0], true));
    for page in &PAGES[1..] {
        cmd = cmd.mut_subcommand(page.name, |c| c.after_help(after_help(page, false)));
    }
    cmd
}

/// The colour of clap's own output (help, usage errors), which is written
/// before the arguments are parsed: `--color` and `--no-color` read from
/// the raw arguments (up to `--`), so `--color never` reaches `--help` too.
/// `NO_COLOR` is honoured by clap itself.
pub fn clap_color(args: &[std::ffi::OsString]) -> clap::ColorChoice {
    let mut choice = clap::ColorChoice::Auto;
    let mut words = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(w) = words.next() {
        let value = match w.as_ref() {
            "--" => break,
            "--no-color" => Some("never".into()),
            "--color" => words.next().map(|v| v.into_owned()),
            other => other.strip_prefix("--color=").map(str::to_string),
        };
        choice = match value.as_deref() {
            Some("never") => clap::ColorChoice::Never,
            Some("always") => clap::ColorChoice::Always,
            Some("auto") => clap::ColorChoice::Auto,
            _ => choice,
        };
    }
    choice
}

/// `completions` arguments.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn json_shorthand_and_pid_lists() {
        let cli = Cli::try_parse_from(["vdsoctl", "--json", "maps", "-p", "1"]).unwrap();
        assert!(cli.json);
        let cli = Cli::try_parse_from(["vdsoctl", "trace", "-p", "1,2,3"]).unwrap();
        match cli.command {
            Command::Trace(t) => assert_eq!(t.pid, vec![1, 2, 3]),
            _ => unreachable!(),
        }
        assert!(Cli::try_parse_from(["vdsoctl", "maps", "-p", "0"]).is_err());
        assert!(Cli::try_parse_from(["vdsoctl", "dump", "-p", "1", "--file", "x"]).is_err());
        match Cli::try_parse_from(["vdsoctl", "check", "--", "true", "-x"]).unwrap().command {
            Command::Check(c) => assert_eq!(c.command, vec![OsString::from("true"), OsString::from("-x")]),
            _ => unreachable!(),
        }
        assert!(Cli::try_parse_from(["vdsoctl", "check", "--image", "/", "-p", "1"]).is_err());
        let color = |args: &[&str]| clap_color(&args.iter().map(std::ffi::OsString::from).collect::<Vec<_>>());
        assert_eq!(color(&["vdsoctl", "maps", "--help"]), clap::ColorChoice::Auto);
        assert_eq!(color(&["vdsoctl", "--color", "never", "maps", "--help"]), clap::ColorChoice::Never);
        assert_eq!(color(&["vdsoctl", "maps", "--color=always", "--help"]), clap::ColorChoice::Always);
        assert_eq!(color(&["vdsoctl", "--no-color", "--help"]), clap::ColorChoice::Never);
        assert_eq!(color(&["vdsoctl", "trace", "--", "x", "--color", "never"]), clap::ColorChoice::Auto);
        assert!(Cli::try_parse_from(["vdsoctl", "check", "--image", "/", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["vdsoctl", "check", "-p", "1", "--", "true"]).is_err());
    }

    #[test]
    fn durations() {
        use std::time::Duration;
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_window("0"), Ok(Duration::ZERO));
        assert_eq!(parse_window("0ms"), Ok(Duration::ZERO));
        assert_eq!(parse_window("300ms"), Ok(Duration::from_millis(300)));
        assert!(parse_window("0parsecs").is_err());
        assert!(parse_window("-1").is_err());
        for bad in ["", "s", "2x", "-1", "0", "0ms", "2d", "1e3", "9000h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let cli = Cli::try_parse_from(["vdsoctl", "serve", "--interval", "250ms"]).unwrap();
        match cli.command {
            Command::Serve(s) => {
                assert_eq!(s.interval, Duration::from_millis(250));
                assert_eq!(s.listen, "127.0.0.1:10411");
                assert_eq!(s.max_series, 100);
            }
            _ => unreachable!(),
        }
        assert!(Cli::try_parse_from(["vdsoctl", "serve", "--max-series", "0"]).is_err());
    }
}
