//! What a trace is and says on the way, as data: the engine that counts,
//! what is traced, and the progress events. Below both `measure`, which
//! produces them, and `render`, which words them (`render::trace_progress`),
//! so that render never imports measure.

use serde::Serialize;
use std::time::Duration;

/// The engine that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The BPF programs on the clock syscall functions (`fentry`).
    Fentry,
    /// The BPF program on `sys_enter`.
    Bpf,
    Perf,
    Seccomp,
}

impl Kind {
    /// The engine's name, as `--engine` and the JSON say it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Fentry => "fentry",
            Kind::Bpf => "bpf",
            Kind::Perf => "perf",
            Kind::Seccomp => "seccomp",
        }
    }
}

/// What was traced. JSON: `{"pids": [...]}`, `"all"`, or `"command"` —
/// the command itself (argv, pid, exit status) is the report's `command`,
/// said once.
#[derive(Debug, Clone)]
pub enum Target {
    /// `-p`: these processes, all their threads, what they fork.
    Pids(Vec<i32>),
    /// `-a`: every process.
    All,
    /// `-- CMD`: the command line and the pid it ran as.
    Command { argv: Vec<String>, pid: i32 },
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Target::Pids(pids) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("pids", pids)?;
                m.end()
            }
            Target::All => s.serialize_str("all"),
            Target::Command { .. } => s.serialize_str("command"),
        }
    }
}

/// What a trace says on the way, as data.
#[derive(Debug)]
pub enum Progress<'a> {
    /// `-p` named a thread: its whole process is traced.
    ThreadOfProcess { tid: i32, tgid: i32 },
    /// A fallback engine counts, and why not the preferred one.
    Fallback { engine: Kind, why: &'a str },
    /// The command is still running some time after a forwarded signal
    /// (SIGINT, SIGTERM): counting goes on until it exits or another signal.
    SignalIgnored { pid: i32, signal: &'static str },
    /// Seccomp engine: the command could not be ptraced, so its calls are
    /// counted through a listener, where a signal can withdraw one.
    SeccompListener,
    /// Seccomp engine: the command exited, but processes it started still
    /// hold its filter; counting goes on until they exit or a signal.
    TreeLingers { pid: i32 },
    /// The command ran past its time limit: it got SIGTERM (SIGKILL follows
    /// after `grace` if it is still running).
    TimedOut { pid: i32, after: Duration, grace: Duration },
    /// The command had exited, but what it started ran past the time
    /// limit: that was killed.
    TreeTimedOut { pid: i32, after: Duration },
    /// Counting started: for `-- CMD` before the command runs.
    Armed { target: &'a Target, duration: Option<Duration> },
}
