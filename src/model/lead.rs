//! Where a bypass finding leads: the exact command that narrows it down to
//! the code making the calls (`trace --sites`, which names each call site's
//! function, object and caller), shell-quoted to paste; and, for calls into
//! the fixed [vsyscall] page (which `--sites` cannot place: the kernel's
//! emulation hands a tracer no user registers), what such a caller is,
//! what to rebuild and the audit that names its function.
//! The policy of `trace`'s findings, `check -p`'s and `check -- CMD`'s, once;
//! its words are [`Advice`]'s, in `render/hint.rs`.

use crate::progress::Target;

/// What a narrowing `trace --sites` would trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lead {
    /// A process (`-p PID`): the one named, or the busiest of `-a`.
    Pid(i32),
    /// The command that was run (`-- CMD`), to run again.
    Command(Vec<String>),
    /// The report already has its call sites (`--sites` was on).
    Shown,
}

impl Lead {
    /// The lead of a trace of `target` (`sites`: `--sites` was on), for a
    /// finding about process `pid`.
    pub fn of(target: &Target, sites: bool, pid: i32) -> Lead {
        match target {
            _ if sites => Lead::Shown,
            Target::Command { argv, .. } => Lead::Command(argv.clone()),
            Target::Pids(_) | Target::All => Lead::Pid(pid),
        }
    }
}

/// A [vsyscall] caller: process `pid`, its executable `exe` when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VsyscallCaller {
    pub exe: Option<String>,
    pub pid: i32,
}

impl VsyscallCaller {
    /// The directory `check --image` would audit: the executable's own.
    pub fn dir(&self) -> Option<&str> {
        let exe = self.exe.as_deref()?;
        std::path::Path::new(exe).parent().and_then(|d| d.to_str()).filter(|d| !d.is_empty())
    }
}

/// The advice on calls that bypassed the vDSO, as data: worded once, in
/// `render/hint.rs` (its `Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advice {
    /// Clock syscalls the vDSO would serve entered the kernel: where the
    /// call sites are seen, and the usual causes.
    RawSyscalls(Lead),
    /// Calls into the fixed [vsyscall] page: what such a caller is, what
    /// to rebuild, the audit that names its function (`trace --sites`
    /// cannot: the kernel's emulation reports no user registers).
    Vsyscall(VsyscallCaller),
    /// Both, of one process or command.
    Both(Lead, VsyscallCaller),
    /// The host's: audit the `busiest` process, its own `advice`, and
    /// every process's rates.
    Host { busiest: i32, advice: Box<Advice> },
}

impl Advice {
    /// The advice for raw clock syscalls (`calls`) and [vsyscall] calls
    /// (`vsyscall`, by their caller) of one finding.
    pub fn of(lead: Lead, calls: bool, vsyscall: Option<VsyscallCaller>) -> Advice {
        match (calls, vsyscall) {
            (_, None) => Advice::RawSyscalls(lead),
            (false, Some(v)) => Advice::Vsyscall(v),
            (true, Some(v)) => Advice::Both(lead, v),
        }
    }
}

/// The file a traced command ran, for its own process `pid`: its argv[0]
/// when that is a path (a name found through PATH is not one).
pub fn command_file(target: &Target, pid: i32) -> Option<&str> {
    match target {
        Target::Command { argv, pid: p } if *p == pid => argv.first().map(String::as_str).filter(|a| a.contains('/')),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_follow_the_target() {
        let cmd = Target::Command { argv: vec!["./raw loop".into(), "5000".into(), "it's".into()], pid: 7 };
        assert_eq!(Lead::of(&cmd, false, 7), Lead::Command(vec!["./raw loop".into(), "5000".into(), "it's".into()]));
        assert_eq!(Lead::of(&Target::Pids(vec![42]), false, 42), Lead::Pid(42));
        assert_eq!(Lead::of(&Target::All, false, 9), Lead::Pid(9));
        assert_eq!(Lead::of(&Target::All, true, 9), Lead::Shown);
        let caller = VsyscallCaller { exe: Some("/opt/old app/legacy".into()), pid: 42 };
        assert_eq!(caller.dir(), Some("/opt/old app"));
        assert_eq!(Advice::of(Lead::Pid(7), false, Some(caller.clone())), Advice::Vsyscall(caller));
    }
}
