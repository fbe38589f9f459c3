//! One file per subcommand. Each `run` gathers through `inspect`/`measure`,
//! builds its report struct and hands it to `render::emit`. No /proc parsing
//! or ELF bytes here.

use crate::cli::{Cli, Command};
use crate::error::Result;
use crate::render::Output;

pub mod auxv;
pub mod baseline_file;
pub mod bench;
pub mod check;
pub mod dump;
pub mod maps;
pub mod meta;
pub mod serve;
pub mod trace;

/// How a command that ran to the end came out (errors are `Err`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing crossed a threshold the user set: exit 0.
    Clean,
    /// A finding crossed a threshold: exit 1.
    ThresholdCrossed,
    /// The command run under `trace --`/`check --` failed: its status
    /// (128+N for signal N), as strace and perf stat hand it back.
    CommandFailed(u8),
}

impl Outcome {
    /// The exit after writes that failed once the work was done (stdout,
    /// `--flamegraph`): each is said on stderr; a failed command's own
    /// status, or a FAIL's 1, still wins; else the first error's code (3).
    pub fn despite(self, late: Vec<crate::error::Error>) -> Result<Outcome> {
        let mut late = late.into_iter();
        let first = late.next();
        for e in late {
            crate::render::note(format_args!("{e}"));
        }
        match (first, self) {
            (None, outcome) => Ok(outcome),
            (Some(e), Outcome::Clean) => Err(e),
            (Some(e), outcome) => {
                crate::render::note(format_args!("{e}"));
                Ok(outcome)
            }
        }
    }

    /// `ThresholdCrossed` when `crossed`, else `Clean`.
    pub fn from_crossed(crossed: bool) -> Outcome {
        if crossed {
            Outcome::ThresholdCrossed
        } else {
            Outcome::Clean
        }
    }
}

/// Dispatch a parsed command line.
pub fn run(cli: &Cli, out: &Output) -> Result<Outcome> {
    match &cli.command {
        Command::Maps(args) => maps::run(args, out),
        Command::Auxv(args) => auxv::run(args, out),
        Command::Dump(args) => dump::run(args, out),
        Command::Trace(args) => trace::run(args, out),
        Command::Bench(args) => bench::run(args, out),
        Command::Check(args) => check::run(args, out),
        Command::Serve(args) => serve::run(args),
        Command::Completions(args) => meta::completions(args),
        Command::Man(args) => meta::man(args),
    }
}
