//! The command line, in clap derive form. A field's doc comment is its help.

use crate::output::{ColorChoice, Format};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Shows whether a process really gets the vDSO fast path for its clock reads, and if not, why.
#[derive(Debug, Parser)]
#[command(name = "vdsoctl", version, about, max_term_width = 100)]
pub struct Cli {
    /// Output format: table (default), json (one document with stable keys), or prometheus (bench,
    /// check, trace).
    #[arg(long, value_enum, global = true, default_value_t = Format::Table, hide_possible_values = true, hide_default_value = true)]
    pub format: Format,

    /// Shorthand for `--format json`.
    #[arg(long, global = true)]
    pub json: bool,

    /// Colour tables: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_name = "WHEN", value_enum, global = true, default_value_t = ColorChoice::Auto, hide_possible_values = true, hide_default_value = true)]
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
    /// Print the man page (roff) to stdout.
    Man,
}

impl Command {
    /// Whether the command has a Prometheus form (DESIGN: bench, check, trace; serve is one).
    pub fn supports_prometheus(&self) -> bool {
        matches!(self, Command::Bench(_) | Command::Check(_) | Command::Trace(_) | Command::Serve(_))
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

    /// Print a table every DURATION as well as the summary (JSON Lines with --json).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Option<Duration>,

    /// Exit 1 when a clock that should be served by the vDSO makes more than RATE syscalls/s (0 for CI).
    #[arg(long, value_name = "RATE")]
    pub fail_over: Option<f64>,

    /// How to count: bpf (in-kernel aggregation, exact for every ABI), perf (tracepoint counters
    /// and sampled records, where BPF is refused), or auto (bpf, else perf).
    #[arg(long, value_enum, default_value_t = crate::measure::engine::Choice::Auto)]
    pub engine: crate::measure::engine::Choice,

    /// One row per thread instead of per process (BPF engine).
    #[arg(long)]
    pub per_thread: bool,

    /// Perf engine: skip the 32-bit (compat) samplers (~190 ns less per syscall of the target
    /// here, but a 32-bit program the target runs goes uncounted).
    #[arg(long)]
    pub native_only: bool,

    /// Perf engine: one counter per clock syscall instead of one per clock id (which clock ids
    /// is not known).
    #[arg(long, conflicts_with = "fail_over")]
    pub no_split: bool,

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

/// `bench` arguments.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Clock ids to measure (names like MONOTONIC_RAW or numbers), comma-separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub clocks: Vec<String>,

    /// Time functions to measure: clock_gettime, gettimeofday, time, clock_getres, getcpu.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub functions: Vec<String>,

    /// Paths to measure: libc, vdso, syscall, vsyscall.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub paths: Vec<String>,

    /// Check that every path agrees (readings, resolution, getcpu, EINVAL); a mismatch exits 1.
    #[arg(long)]
    pub verify: bool,

    /// Exit 1 when a clock that should be fast costs more than N ns/call through libc.
    #[arg(long, value_name = "N")]
    pub max_ns: Option<f64>,

    /// Fewer, shorter rounds: a few hundred milliseconds in all.
    #[arg(long)]
    pub quick: bool,
}

/// `check` arguments.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Also audit this process: its vDSO mapping, ELF class, static or dynamic, libc.
    #[arg(short, long, value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Option<i32>,

    /// Fail a clock that should be fast when libc's call costs more than N ns.
    #[arg(long, value_name = "N")]
    pub max_ns: Option<f64>,

    /// Exit 1 on WARN as well as on FAIL.
    #[arg(long)]
    pub strict: bool,

    /// With -p, also trace the process's clock syscalls for SECS seconds (a clean trace clears a
    /// static or 32-bit warning).
    #[arg(long, value_name = "SECS")]
    pub trace: Option<f64>,

    /// Audit the ELF programs and libraries of a container image tree (an unpacked image, a mounted
    /// rootfs, or / inside the container) instead of this host's own process.
    #[arg(long, value_name = "ROOT", conflicts_with_all = ["pid", "trace", "max_ns", "command"])]
    pub image: Option<PathBuf>,

    /// Smoke command to run under trace: fails when a clock the vDSO serves here goes through a
    /// syscall or the [vsyscall] page; a failing command fails the check with its own status.
    #[arg(last = true, value_name = "CMD", conflicts_with_all = ["pid", "trace", "max_ns"])]
    pub command: Vec<OsString>,
}

/// `serve` arguments.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on: HOST:PORT, [IPv6]:PORT, or :PORT for every IPv4 interface
    /// (10411: outside the 9100-9999 range Prometheus allocates to exporters, which is full).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:10411")]
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
        for bad in ["", "s", "2x", "-1", "0", "0ms", "2d", "1e3", "9000h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let cli = Cli::try_parse_from(["vdsoctl", "serve", "--interval", "250ms"]).unwrap();
        match cli.command {
            Command::Serve(s) => {
                assert_eq!(s.interval, Duration::from_millis(250));
                assert_eq!(s.listen, "0.0.0.0:10411");
                assert_eq!(s.max_series, 100);
            }
            _ => unreachable!(),
        }
        assert!(Cli::try_parse_from(["vdsoctl", "serve", "--max-series", "0"]).is_err());
    }
}
