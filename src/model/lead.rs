//! Where a bypass finding leads: the exact command that narrows it down to
//! the code making the calls (`trace --sites`, which names each call site's
//! function, object and caller), shell-quoted to paste; and, for calls into
//! the fixed [vsyscall] page (which `--sites` cannot place: the kernel's
//! emulation hands a tracer no user registers), what such a caller is,
//! what to rebuild and the audit that names its function.
//! The policy of `trace`'s findings, `check -p`'s and `check -- CMD`'s, once.

use crate::progress::Target;
use crate::words::shell_words;

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

    /// `vdsoctl trace --sites -p 42`, `vdsoctl trace --sites -- ./prog 'a b'`.
    pub fn command(&self) -> Option<String> {
        match self {
            Lead::Pid(pid) => Some(format!("vdsoctl trace --sites -p {pid}")),
            Lead::Command(argv) => Some(format!("vdsoctl trace --sites -- {}", shell_words(argv))),
            Lead::Shown => None,
        }
    }

    /// How the call sites are seen: the command to run, or the report's own.
    fn sites_text(&self, what: &str) -> String {
        match self.command() {
            Some(c) => format!("`{c}` names the code that {what} (function, library and caller)"),
            None => format!("the call sites below name the code that {what}"),
        }
    }

    /// The hint of clock syscalls the vDSO would serve that entered the kernel.
    pub fn syscall_hint(&self) -> String {
        format!(
            "{}; look for a raw syscall(), a static or old libc, LD_PRELOAD, or a clocksource without a vDSO mode (`vdsoctl check`)",
            self.sites_text("makes them")
        )
    }
}

/// The hint of calls into the fixed [vsyscall] page by process `pid`
/// (its executable `exe`, when known): what such a caller is, what to
/// rebuild, and the audit that names its function. `trace --sites` does
/// not: the kernel's emulation reports no user registers to a tracer.
pub fn vsyscall_hint(exe: Option<&str>, pid: i32) -> String {
    let dir = exe.and_then(|e| std::path::Path::new(e).parent()).and_then(|d| d.to_str()).filter(|d| !d.is_empty());
    let (what, find) = match (exe, dir) {
        (Some(exe), Some(dir)) => (
            format!("`{exe}`"),
            format!("`vdsoctl check --image {}` names the function that calls it", shell_words(&[dir])),
        ),
        _ => {
            ("its binary".to_string(), format!("`vdsoctl check -p {pid}` names the binary and function while it runs"))
        }
    };
    format!("{VSYSCALL_CAUSE}: rebuild {what} against a current libc or runtime; {find}")
}

/// The file a traced command ran, for its own process `pid`: its argv[0]
/// when that is a path (a name found through PATH is not one).
pub fn command_file(target: &Target, pid: i32) -> Option<&str> {
    match target {
        Target::Command { argv, pid: p } if *p == pid => argv.first().map(String::as_str).filter(|a| a.contains('/')),
        _ => None,
    }
}

/// What a [vsyscall] caller is.
pub const VSYSCALL_CAUSE: &str = "legacy code calling the fixed [vsyscall] address (0xffffffffff600000…), \
     built against a very old static glibc or Go or hard-coding it";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_paste_as_they_read() {
        let cmd = Target::Command { argv: vec!["./raw loop".into(), "5000".into(), "it's".into()], pid: 7 };
        assert_eq!(Lead::of(&cmd, false, 7).command().unwrap(), r#"vdsoctl trace --sites -- './raw loop' 5000 "it's""#);
        assert_eq!(Lead::of(&Target::Pids(vec![42]), false, 42).command().unwrap(), "vdsoctl trace --sites -p 42");
        assert_eq!(Lead::of(&Target::All, false, 9).command().unwrap(), "vdsoctl trace --sites -p 9");
        assert_eq!(Lead::of(&Target::All, true, 9), Lead::Shown);
        let v = vsyscall_hint(Some("/opt/old app/legacy"), 42);
        assert!(v.starts_with("legacy code calling the fixed [vsyscall] address"), "{v}");
        assert!(v.contains("rebuild `/opt/old app/legacy` against"), "{v}");
        assert!(v.ends_with("`vdsoctl check --image '/opt/old app'` names the function that calls it"), "{v}");
        assert!(!v.contains("raw syscall"), "{v}");
        let v = vsyscall_hint(None, 42);
        assert!(v.ends_with("`vdsoctl check -p 42` names the binary and function while it runs"), "{v}");
        assert!(Lead::Shown.syscall_hint().starts_with("the call sites below name"));
    }
}
