//! How every table, finding and hint names a process: `pid 812
//! (python3)`, and [`ProcessName`]'s words (its comm, an argv[0] that
//! says more, its executable).

use crate::model::{ProcessName, ProcessRef};

/// An argv[0] longer than this is cut (with `…`): the process chooses it.
const ARGV0_SHOWN: usize = 64;

/// `pid 812 (python3)`, or `pid 812` without a name (unescaped: render escapes).
pub fn pid_text(pid: i32, comm: Option<&str>) -> String {
    match comm {
        Some(c) => format!("pid {pid} ({c})"),
        None => format!("pid {pid}"),
    }
}

impl ProcessRef {
    /// `pid 812 (python3)`.
    pub fn text(&self) -> String {
        pid_text(self.pid, Some(&self.comm))
    }
}

impl ProcessName<'_> {
    /// `pid 4242 (redis-server)`, `pid 4243 (wait_ready, argv[0] myname)`.
    pub fn text(&self) -> String {
        match self.argv0_helps() {
            Some(a) => {
                let cut: String = a.chars().take(ARGV0_SHOWN).collect();
                let more = if cut.len() < a.len() { "…" } else { "" };
                format!("pid {} ({}, argv[0] {}{more})", self.pid, self.comm, crate::words::shell_words(&[cut]))
            }
            None => pid_text(self.pid, Some(self.comm)),
        }
    }

    /// [`ProcessName::text`] and the executable: `pid 4242 (redis-server),
    /// executable /usr/bin/redis-check-rdb`.
    pub fn with_exe(&self) -> String {
        format!("{}, executable {}", self.text(), self.exe.unwrap_or("?"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_named_as_it_has_it() {
        let n = |comm, argv0, exe| ProcessName { pid: 7, comm, argv0, exe };
        // redis-server: the comm is the symlink's name, argv[0] its title.
        let redis = n("redis-server", Some("/usr/bin/redis-server 127.0.0.1:6379"), Some("/usr/bin/redis-check-rdb"));
        assert_eq!(redis.with_exe(), "pid 7 (redis-server), executable /usr/bin/redis-check-rdb");
        // exec -a: argv[0] says what the comm and the executable do not.
        assert_eq!(n("wait_ready", Some("myname"), Some("/t/wait_ready")).text(), "pid 7 (wait_ready, argv[0] myname)");
        assert_eq!(n("wait_ready", Some("my name"), None).text(), "pid 7 (wait_ready, argv[0] 'my name')");
        // PR_SET_NAME: the new comm; argv[0] is the executable, said once.
        assert_eq!(
            n("worker", Some("./rename_self"), Some("/t/rename_self")).with_exe(),
            "pid 7 (worker), executable /t/rename_self"
        );
        // The kernel's 15-byte cut of a longer name is the same name.
        assert_eq!(n("a_very_long_pro", Some("./a_very_long_program"), None).text(), "pid 7 (a_very_long_pro)");
        assert_eq!(n("sshd", None, None).text(), "pid 7 (sshd)");
        let long = "x".repeat(100);
        assert!(n("y", Some(&long), None).text().ends_with("…)"));
    }
}
