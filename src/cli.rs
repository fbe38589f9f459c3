//! The command line, in clap derive form. A field's doc comment is its help.

use crate::arch::{self, VdsoFn};
use crate::measure::bench::{Path as BenchPath, FUNCTIONS as BENCH_FUNCTIONS};
use crate::render::{ColorChoice, Format};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Shows whether a process really gets the vDSO fast path for its clock reads, and if not, why.
#[derive(Debug, Parser)]
#[command(name = "vdsoctl", version, about, max_term_width = 100)]
pub struct Cli {
    #[arg(long, value_enum, global = true, help = crate::render::format_help(), default_value_t = Format::Table, hide_possible_values = true, hide_default_value = true, help_heading = "Global options")]
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

impl Cli {
    /// The colour choice after `--no-color` is applied.
    pub fn resolved_color(&self) -> ColorChoice {
        if self.no_color {
            ColorChoice::Never
        } else {
            self.color
        }
    }

    /// The format after `--json` is applied.
    pub fn resolved_format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
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
            Command::Bench(_) => "bench",
            Command::Check(_) => "check",
            Command::Serve(_) => "serve",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
        }
    }

    /// Why the command has no `format` form, as the usage error says it
    /// before any work (`None`: it has one): `render::COMMAND_FORMATS`.
    pub fn format_refusal(&self, format: Format) -> Option<String> {
        crate::render::format_refusal(self.name(), format, matches!(self, Command::Trace(t) if t.stacks))
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

    /// Command to start and trace from its exec, with its threads and children.
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

    /// Time functions to measure: clock_gettime, gettimeofday, time, clock_getres, getcpu.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = bench_function_arg)]
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
fn bench_function_arg(text: &str) -> Result<VdsoFn, String> {
    BENCH_FUNCTIONS.into_iter().find(|f| f.name().eq_ignore_ascii_case(text.trim())).ok_or_else(|| {
        let names: Vec<_> = BENCH_FUNCTIONS.iter().map(|f| f.name()).collect();
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

    /// The host's observation fails when one process bypasses the vDSO more than RATE times a
    /// second, and warns below (default 100, so a rare raw call does not fail a fleet; 0 fails any).
    #[arg(long, value_name = "RATE", value_parser = rate_arg, conflicts_with_all = ["pid", "image", "command"])]
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

/// What a page says beyond the options: exit status, environment,
/// privileges, examples. One source for `--help` (after_help) and the man
/// pages, so they cannot disagree.
#[derive(Debug)]
pub struct Page {
    /// `vdsoctl` for the overview, else the subcommand.
    pub name: &'static str,
    /// (code, meaning), in order.
    pub exit: &'static [(&'static str, &'static str)],
    /// What it needs beyond an ordinary user.
    pub privileges: &'static str,
    /// (command line, what it shows).
    pub examples: &'static [(&'static str, &'static str)],
}

/// Environment variables every command reads.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("NO_COLOR", "set and not empty: --color auto does not colour"),
    ("COLUMNS", "table width; 0 is unlimited. Unset: the terminal's width, else unlimited"),
    ("PATH", "where trace -- CMD and check -- CMD look for CMD"),
];

const USAGE: (&str, &str) = ("2", "usage error: an unknown option, a bad value, a conflict");
const INSPECT: (&str, &str) =
    ("3", "could not inspect: no such process, permission denied, a bad file, no [vdso] for dump to read");
const FACILITY: (&str, &str) =
    ("4", "a facility is missing: BPF and perf_event_open refused, no tracefs, serve cannot listen");
const CHILD: (&str, &str) =
    ("N", "with -- CMD: the command's own failing status (128+N for signal N), before any other");

/// Every page: the overview first, then one per subcommand.
pub const PAGES: &[Page] = &[
    Page {
        name: "vdsoctl",
        exit: &[
            ("0", "ran; no FAIL line was printed"),
            ("1", "ran and printed a FAIL line (check's verdict, --max-ns, --fail-over, maps with no [vdso], ...)"),
            USAGE,
            INSPECT,
            FACILITY,
            CHILD,
        ],
        privileges: "trace -p/-a and serve need root, or CAP_BPF and CAP_PERFMON (the perf engine: root, \
                     for tracefs); trace -- CMD and check -- CMD need nothing (the seccomp engine); maps, auxv \
                     and dump read another user's process as root (CAP_SYS_PTRACE)",
        examples: &[
            ("vdsoctl check", "audit this host: is every clock served by the vDSO?"),
            ("vdsoctl check -p 1234 --trace 5s", "audit one process and watch its clock syscalls for 5 s"),
            ("vdsoctl trace -a -d 10s", "count clock syscalls of every process for 10 s"),
            ("vdsoctl --json maps -p 1234", "the special mappings of a process, as JSON"),
        ],
    },
    Page {
        name: "dump",
        exit: &[
            ("0", "the image was shown; no FAIL line"),
            ("1", "a FAIL line: the image is not a usable vDSO (no soname linux-vdso.so.1, no clock symbols, ...)"),
            USAGE,
            ("3", "could not read the image: no such process, permission denied, no [vdso], a process that exec'd each time it was read, a bad file; or -o could not be written"),
        ],
        privileges: "reading another user's process needs root or CAP_SYS_PTRACE; --file needs none",
        examples: &[
            ("vdsoctl dump", "vdsoctl's own vDSO: header, symbols with versions, notes"),
            ("vdsoctl dump -p 1234 -o vdso.so && objdump -T vdso.so", "save a process's vDSO for binutils"),
            ("vdsoctl dump --file vdso.so --json", "an image from a file, as JSON"),
        ],
    },
    Page {
        name: "maps",
        exit: &[
            ("0", "the mappings were shown; no FAIL line"),
            ("1", "a FAIL line: the process has no [vdso] mapping"),
            USAGE,
            ("3", "could not inspect: no such process, permission denied, a zombie or kernel thread, a process that exec'd each time it was read"),
        ],
        privileges: "another user's process needs root or CAP_SYS_PTRACE",
        examples: &[
            ("vdsoctl maps", "vdsoctl's own special mappings and the vsyscall mode"),
            ("vdsoctl maps -p 1234", "those of process 1234"),
        ],
    },
    Page {
        name: "auxv",
        exit: &[
            ("0", "the vector was shown; no FAIL line"),
            ("1", "a FAIL line: AT_SYSINFO_EHDR is missing or does not point at [vdso]"),
            USAGE,
            ("3", "could not inspect: no such process, permission denied, a zombie or kernel thread, a process that exec'd each time it was read"),
        ],
        privileges: "another user's process needs root or CAP_SYS_PTRACE",
        examples: &[
            ("vdsoctl auxv -p 1234", "process 1234's auxiliary vector, decoded"),
            ("vdsoctl --json auxv | jq .sysinfo_ehdr_matches_vdso", "whether the C library can find the vDSO"),
        ],
    },
    Page {
        name: "trace",
        exit: &[
            ("0", "traced; no FAIL line (without --fail-over a bypassed clock is a WARN)"),
            ("1", "a FAIL line: a clock the vDSO should serve, or the [vsyscall] page, was called more than --fail-over RATE times a second"),
            ("2", "usage error: an unknown option, a bad value, a conflict; --stacks with an engine that keeps no stacks (perf, seccomp); --interval below 100ms; an empty --cgroup"),
            ("3", "no such process, or CMD could not be started; or the report or --flamegraph could not be written (said after the report; a failed CMD's status or a FAIL's 1 still wins)"),
            ("4", "counting is refused here: no BPF, no perf_event_open, no tracefs"),
            CHILD,
        ],
        privileges: "-p and -a: root, or CAP_BPF and CAP_PERFMON (BPF engine; the perf engine needs root for \
                     tracefs); -- CMD: nothing (the seccomp engine, when the others are refused; it sets \
                     no_new_privs, so setuid programs in the tree run without their privileges)",
        examples: &[
            ("vdsoctl trace -- ./myapp --selftest", "count the clock syscalls of a command and its children"),
            ("vdsoctl trace -p 1234 -d 30s --interval 5s", "a table every 5 s, then the summary"),
            ("vdsoctl trace -a --fail-over 0", "exit 1 if any process bypasses the vDSO (CI)"),
            ("vdsoctl --format folded trace --stacks -a -d 10s", "who makes the calls: folded stacks for flamegraph.pl or inferno"),
            ("vdsoctl trace --stacks --flamegraph calls.svg -- ./myapp", "the same as an SVG flame graph"),
            ("vdsoctl trace --sites -p 1234", "which code makes the calls: each row split by call site, with the fix"),
        ],
    },
    Page {
        name: "bench",
        exit: &[
            ("0", "measured; no FAIL line"),
            ("1", "a FAIL line: a clock lost its fast path, cost more than --max-ns, or a --verify check failed"),
            USAGE,
            ("3", "vdsoctl's own process could not be read"),
        ],
        privileges: "none; counting syscalls per call uses perf_event_open, else verdicts are timing-based",
        examples: &[
            ("vdsoctl bench", "every clock through libc, the vDSO, the syscall and the vsyscall page"),
            ("vdsoctl bench --quick --clocks MONOTONIC --max-ns 100", "a CI gate on one clock"),
            ("vdsoctl bench --baseline base.json", "fail only on a row slower than a baseline beyond its spread"),
        ],
    },
    Page {
        name: "check",
        exit: &[
            ("0", "verdict OK or WARN (WARN with --strict is 1)"),
            ("1", "verdict FAIL: a FAIL row"),
            USAGE,
            ("3", "could not inspect the process or the image (no such tree or archive, nothing to audit in it, a manifest naming a missing blob), or CMD could not be started"),
            ("4", "with -- CMD: no engine may count the command (BPF, perf_event_open and seccomp refused)"),
            CHILD,
        ],
        privileges: "none: without root (or CAP_BPF and CAP_PERFMON) the observation rows say \"not observed\" and the other checks decide; -p of another user's process needs root or CAP_SYS_PTRACE; reading the seccomp filters of a -p process needs root (CAP_SYS_ADMIN), without it an INFO row says so; -- CMD needs nothing (the seccomp engine counts without privileges)",
        examples: &[
            ("vdsoctl check", "the host audit and a 1 s look at every process's clock syscalls, with a verdict"),
            ("vdsoctl check -p 1234 --trace 5s", "audit one process and watch its clock syscalls for 5 s"),
            ("vdsoctl check --quiet", "only the rows that are not OK"),
            ("vdsoctl check --image ./rootfs", "every ELF program and library of an unpacked container image"),
            ("vdsoctl check --image app.tar", "the same for an image saved by `podman save` or `docker save`"),
            ("vdsoctl check --image app.tar --baseline base.json", "fail only on what is new since a baseline (--save-baseline)"),
            ("vdsoctl check --seccomp-profile seccomp.json", "fail when the profile refuses a syscall the vDSO falls back to"),
            ("vdsoctl check -- ./myapp --selftest", "fail when the command's clock reads leave the vDSO"),
            ("vdsoctl check --timeout 5m -- ./selftest", "the same, and fail (killing it) if it runs past 5 minutes"),
        ],
    },
    Page {
        name: "serve",
        exit: &[
            ("0", "stopped by SIGINT or SIGTERM"),
            USAGE,
            ("4", "could not listen or start its threads"),
        ],
        privileges: "the per-process series need root, or CAP_BPF and CAP_PERFMON; without them the audit and costs are still served",
        examples: &[
            ("vdsoctl serve", "/metrics on 127.0.0.1:10411 (loopback only), refreshed every 15 s"),
            ("vdsoctl serve --listen :10411 --interval 1m", "on every IPv4 address (it names every process), every minute"),
        ],
    },
];

/// The page of a command (`vdsoctl` for the overview).
pub fn page(name: &str) -> Option<&'static Page> {
    PAGES.iter().find(|p| p.name == name)
}

/// The exit-status, environment and privileges text `--help` ends with.
pub fn after_help(page: &Page, overview: bool) -> String {
    let mut s = String::from("Exit status:\n");
    for (code, what) in page.exit {
        s += &format!("  {code}  {what}\n");
    }
    s += &format!("\nPrivileges: {}\n", page.privileges);
    if overview {
        s += "\nEnvironment:\n";
        for (name, what) in ENVIRONMENT {
            s += &format!("  {name:<8}  {what}\n");
        }
        s += "\nEach command has its own help (vdsoctl COMMAND --help) and man page (vdsoctl man COMMAND).";
    } else {
        s += "\nExamples:\n";
        for (line, what) in page.examples {
            s += &format!("  {line}\n      {what}\n");
        }
    }
    s.trim_end().to_string()
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
        assert_eq!(cli.resolved_format(), Format::Json);
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
