//! What a trace session is asked for, as typed data: whom ([`TraceTarget`],
//! stated once) and how ([`TraceRequest`]). The resolve step builds it from
//! the command line; `check` and `serve` from their own forms.

use crate::measure::trace::engine::{Choice, Plan};
use crate::progress::Progress;
use std::ffi::OsString;
use std::time::Duration;

/// Whom a trace counts, stated once (the resolve step builds it from `-p`,
/// `-a` or `-- CMD`; `check` from its own form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceTarget {
    /// `-p`: these processes (a thread id stands for its process).
    Pids(Vec<i32>),
    /// `-a`: every process.
    All,
    /// `-- CMD`: start this command and trace it from its exec.
    Command(Vec<OsString>),
}

/// What to trace and how, as typed data.
#[derive(Debug, Clone)]
pub struct TraceRequest {
    /// Whom: the plan's `all` and `command` are set from it by the
    /// session, never by the caller.
    pub target: TraceTarget,
    /// How long; `None`: 5 s for `-p`/`-a`, until the command exits for `-- CMD`.
    pub duration: Option<Duration>,
    /// Hand a window to the caller every interval as well.
    pub interval: Option<Duration>,
    pub engine: Choice,
    pub plan: Plan,
    /// The command's stdout goes to stderr (vdsoctl's stdout is a document).
    pub command_stdout_to_stderr: bool,
    /// `-- CMD`: stop the command once it has run this long (SIGTERM, then
    /// SIGKILL after a grace; with the seccomp engine what it started too).
    pub timeout: Option<Duration>,
    /// Told what happens on the way (measure never prints; the caller words
    /// it); `None`: nothing is said.
    pub progress: Option<fn(&Progress<'_>)>,
    /// Read each counted process's identity (and, with `--stacks` or
    /// `--sites`, its mappings) at first sight and after each exec
    /// ([`sight`](super::sight)).
    pub sight: bool,
}

impl TraceRequest {
    /// A request for `target` with every option at its default: the default
    /// duration, no intervals, `auto`, a plain plan, silent.
    pub fn new(target: TraceTarget) -> TraceRequest {
        TraceRequest {
            target,
            duration: None,
            interval: None,
            engine: Choice::Auto,
            plan: Plan::default(),
            command_stdout_to_stderr: false,
            timeout: None,
            progress: None,
            sight: false,
        }
    }
}
