//! vdsoctl's entry point: parse, resolve the request and the output once
//! (`resolve`, where every usage error is raised), run, map the result to an
//! exit code. Everything else is in the library.

use clap::FromArgMatches;
use std::process::ExitCode;
use vdsoctl::cli::Cli;
use vdsoctl::cmd::{self, Outcome};
use vdsoctl::error::exit;
use vdsoctl::resolve::{self, Refused};

/// Exit through clap's own error path, with the words it quotes from the
/// command line escaped: a value holding a newline or an escape must not
/// forge a line or drive the terminal (help and version go out as they are).
fn usage_exit(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit()
    }
    let mut text = e.render().to_string();
    for arg in std::env::args_os().skip(1) {
        let arg = arg.to_string_lossy().into_owned();
        let clean = vdsoctl::render::sanitize(&arg).into_owned();
        if clean != arg {
            // clap's rendering drops escape sequences from what it quotes.
            let quoted = clap::builder::StyledStr::from(arg.clone()).to_string();
            text = text.replace(&arg, &clean).replace(&quoted, &clean);
        }
    }
    if e.kind() == ErrorKind::ValueValidation {
        // A value a parser refused is one line with its hint, as every
        // vdsoctl error is: clap's first line, without its `--help` footer.
        let first = text.lines().next().unwrap_or_default();
        text = format!("vdsoctl: {}\n", first.strip_prefix("error: ").unwrap_or(first));
    }
    use std::io::Write;
    let _ = write!(std::io::stderr().lock(), "{}", vdsoctl::render::sanitize_page(&text));
    std::process::exit(e.exit_code())
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = vdsoctl::cli::command()
        .color(vdsoctl::cli::clap_color(&args))
        .try_get_matches_from(&args)
        .unwrap_or_else(|e| usage_exit(e));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| usage_exit(e));
    let resolved = match resolve::resolve(&cli) {
        Ok(resolved) => resolved,
        Err(Refused::Format(why)) => {
            vdsoctl::cli::command().error(clap::error::ErrorKind::ArgumentConflict, why).exit()
        }
        Err(Refused::Error(e)) => return failed(&e),
    };
    match cmd::run(&resolved) {
        Ok(Outcome::Clean) => ExitCode::from(exit::OK),
        Ok(Outcome::ThresholdCrossed) => ExitCode::from(exit::THRESHOLD),
        Ok(Outcome::CommandFailed(code)) => ExitCode::from(code),
        Err(e) => failed(&e),
    }
}

/// An error as one line on stderr, and its exit code.
fn failed(e: &vdsoctl::Error) -> ExitCode {
    vdsoctl::render::note(format_args!("{e}"));
    ExitCode::from(e.exit_code())
}
