//! One file per subcommand. Each `run` gathers through `inspect`/`measure`,
//! builds its report struct and hands it to `render::emit`. No /proc parsing
//! or ELF bytes here.

use crate::error::Result;
use crate::render::Output;
use crate::resolve::{Request, Resolved};

pub mod auxv;
pub mod baseline_file;
pub mod bench;
pub mod check;
pub mod dump;
pub mod maps;
pub mod meta;
pub mod serve;
pub mod top;
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

/// Dispatch a resolved request (`resolve::resolve`): commands read only
/// their request and the resolved output, never the command line.
pub fn run(resolved: &Resolved) -> Result<Outcome> {
    let out: &Output = &resolved.out;
    match &resolved.request {
        Request::Maps(req) => maps::run(req, out),
        Request::Auxv(req) => auxv::run(req, out),
        Request::Dump(req) => dump::run(req, out),
        Request::Trace(req) => trace::run(req, out),
        Request::Top(req) => top::run(req, out),
        Request::Bench(req) => bench::run(req, out),
        Request::Check(req) => check::run(req, out),
        Request::Serve(req) => serve::run(req),
        Request::Completions(shell) => meta::completions(*shell),
        Request::Man(req) => meta::man(req),
    }
}
