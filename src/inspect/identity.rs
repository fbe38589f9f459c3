//! Who a process is, beyond its 15-byte comm: its executable's path and
//! its command line (`proc(5)`: /proc/PID/exe, /proc/PID/cmdline), so two
//! `python3` rows can be told apart. Read while the process lives (`trace`
//! reads it at first sight and after each exec): both are gone once it exits.

use serde::Serialize;

/// The command line kept at most, in bytes: enough to tell processes
/// apart, bounded whatever a process puts in its argv.
pub const MAX_CMDLINE: usize = 4096;

/// A process's executable and command line; `None` when unreadable (a
/// kernel thread, a zombie, a process that exited first, or access denied).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// The executable's path as the kernel reports it (` (deleted)` kept).
    pub exe: Option<String>,
    /// The arguments, at most [`MAX_CMDLINE`] bytes of them (a longer
    /// command line is cut and `cmdline_truncated` set).
    pub cmdline: Option<Vec<String>>,
    pub cmdline_truncated: bool,
}

impl Identity {
    /// Read `pid`'s identity now.
    pub fn of(pid: i32) -> Identity {
        use std::os::unix::ffi::OsStrExt;
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .map(|p| String::from_utf8_lossy(p.as_os_str().as_bytes()).into_owned());
        let (cmdline, cmdline_truncated) = match read_cmdline(pid) {
            Some((args, cut)) => (Some(args), cut),
            None => (None, false),
        };
        Identity { exe, cmdline, cmdline_truncated }
    }
}

/// /proc/PID/cmdline, at most [`MAX_CMDLINE`] bytes, split at its NULs;
/// `None` when unreadable or empty.
fn read_cmdline(pid: i32) -> Option<(Vec<String>, bool)> {
    use std::io::Read;
    let file = std::fs::File::open(format!("/proc/{pid}/cmdline")).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_CMDLINE as u64 + 1).read_to_end(&mut bytes).ok()?;
    Some(split_cmdline(&bytes)).filter(|(args, _)| !args.is_empty())
}

/// The arguments of a cmdline's bytes, and whether it was cut at [`MAX_CMDLINE`].
pub fn split_cmdline(bytes: &[u8]) -> (Vec<String>, bool) {
    let cut = bytes.len() > MAX_CMDLINE;
    let bytes = &bytes[..bytes.len().min(MAX_CMDLINE)];
    let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    if bytes.is_empty() {
        return (Vec::new(), cut);
    }
    (bytes.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect(), cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdlines_split_at_nuls_and_are_bounded() {
        assert_eq!(
            split_cmdline(b"python3\0-m\0http.server\0"),
            (vec!["python3".into(), "-m".into(), "http.server".into()], false)
        );
        assert_eq!(split_cmdline(b"a\0\0b\0"), (vec!["a".into(), "".into(), "b".into()], false));
        assert_eq!(split_cmdline(b""), (vec![], false));
        let long = vec![b'x'; MAX_CMDLINE + 1];
        let (args, cut) = split_cmdline(&long);
        assert!(cut && args[0].len() == MAX_CMDLINE);
    }

    #[test]
    fn our_own_identity_is_read() {
        let me = Identity::of(std::process::id() as i32);
        let exe = std::env::current_exe().unwrap();
        assert_eq!(me.exe.as_deref(), exe.to_str());
        assert_eq!(me.cmdline.unwrap()[0], std::env::args().next().unwrap());
    }
}
