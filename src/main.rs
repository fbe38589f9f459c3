//! vdsoctl's entry point: parse, resolve the output once, run, map the result
//! to an exit code. Everything else is in the library.

use clap::FromArgMatches;
use std::process::ExitCode;
use vdsoctl::cli::Cli;
use vdsoctl::cmd::{self, Outcome};
use vdsoctl::error::exit;
use vdsoctl::output::{Format, Output};

fn main() -> ExitCode {
    let cli = Cli::from_arg_matches(&vdsoctl::cli::command().get_matches()).unwrap_or_else(|e| e.exit());
    let format = cli.resolved_format();
    if format == Format::Prometheus && !cli.command.supports_prometheus() {
        let mut cmd = vdsoctl::cli::command();
        cmd.error(
            clap::error::ErrorKind::ArgumentConflict,
            "--format prometheus is only for `bench`, `check` and `trace`; use --format table or --json here",
        )
        .exit();
    }
    let out = Output::resolve(format, cli.resolved_color());
    match cmd::run(&cli, &out) {
        Ok(Outcome::Clean) => ExitCode::from(exit::OK),
        Ok(Outcome::ThresholdCrossed) => ExitCode::from(exit::THRESHOLD),
        Ok(Outcome::CommandFailed(code)) => ExitCode::from(code),
        Err(e) => {
            vdsoctl::output::note(format_args!("{e}"));
            ExitCode::from(e.exit_code())
        }
    }
}
