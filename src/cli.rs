//! The command line, in clap derive form. A field's doc comment is its help.

use crate::output::Format;
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Shows whether a process really gets the vDSO fast path for its clock reads, and if not, why.
#[derive(Debug, Parser)]
#[command(name = "vdsoctl", version, about, max_term_width = 100)]
pub struct Cli {
    /// Output format: human tables, one JSON document, or Prometheus text (bench, check).
    #[arg(long, value_enum, global = true, default_value_t = Format::Table)]
    pub format: Format,

    /// Shorthand for `--format json`.
    #[arg(long, global = true)]
    pub json: bool,

    /// Never colour output (also when NO_COLOR is set; colour is only ever used on a terminal).
    #[arg(long, global = true)]
    pub no_color: bool,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
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
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout.
    Man,
}

impl Command {
    /// Whether the command has a Prometheus form (DESIGN: bench and check).
    pub fn supports_prometheus(&self) -> bool {
        matches!(self, Command::Bench(_) | Command::Check(_))
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
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Processes to trace, all their threads (comma-separated).
    #[arg(short, long, value_name = "PID[,PID..]", value_delimiter = ',', value_parser = clap::value_parser!(i32).range(1..), conflicts_with_all = ["all", "command"])]
    pub pid: Vec<i32>,

    /// Trace the whole system, per CPU, attributing calls by process.
    #[arg(short, long, conflicts_with = "command")]
    pub all: bool,

    /// How long to trace, in seconds (default 5 for -p and -a; until CMD exits for `-- CMD`).
    #[arg(short, long, value_name = "SECS")]
    pub duration: Option<f64>,

    /// Print a table every SECS seconds as well as the summary.
    #[arg(long, value_name = "SECS")]
    pub interval: Option<f64>,

    /// Exit 1 when a clock that should be served by the vDSO makes more than RATE syscalls/s (0 for CI).
    #[arg(long, value_name = "RATE")]
    pub fail_over: Option<f64>,

    /// Skip the 32-bit (compat) samplers: ~190 ns less per syscall of the target here, but a
    /// 32-bit program the target runs would go uncounted.
    #[arg(long)]
    pub native_only: bool,

    /// One counter per clock syscall instead of one per clock id: cheapest exact totals (about
    /// perf stat's cost), but which clock ids is not known.
    #[arg(long, conflicts_with = "fail_over")]
    pub no_split: bool,

    /// Command to start and trace from its exec, with its threads and children.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
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
}
