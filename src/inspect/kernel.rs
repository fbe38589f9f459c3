//! Facts about the running kernel: its command line, release, and the
//! vsyscall mode it was booted with.

use serde::Serialize;

/// `/proc/cmdline`, or None when unreadable.
pub fn cmdline() -> Option<String> {
    std::fs::read_to_string("/proc/cmdline").ok().map(|s| s.trim().to_string())
}

/// The value of `key=` on a kernel command line (the last one wins, as in the kernel).
pub fn cmdline_param<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--") // after "--" the words belong to init
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| v)
        .last()
}

/// The kernel release (`uname -r`).
pub fn release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string())
}

/// (major, minor) from a release string such as `6.18.44-fc-v769`.
pub fn parse_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// How the x86_64 legacy vsyscall page behaves (`vsyscall=` in kernel-parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VsyscallMode {
    /// Mapped readable and executable; calls trap and are emulated.
    Emulate,
    /// Execute-only: calls are emulated, reads fault (default since 5.3).
    Xonly,
    /// Not mapped: a legacy binary calling into it crashes.
    None,
}

impl VsyscallMode {
    /// Mode from the `[vsyscall]` mapping's permissions.
    pub fn from_perms(perms: &str) -> Option<VsyscallMode> {
        match perms.get(..3)? {
            "--x" => Some(VsyscallMode::Xonly),
            "r-x" => Some(VsyscallMode::Emulate),
            _ => None,
        }
    }

    /// Mode from a `vsyscall=` value.
    pub fn from_param(value: &str) -> Option<VsyscallMode> {
        match value {
            "emulate" => Some(VsyscallMode::Emulate),
            "xonly" => Some(VsyscallMode::Xonly),
            "none" => Some(VsyscallMode::None),
            _ => None,
        }
    }

    /// The lowercase name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            VsyscallMode::Emulate => "emulate",
            VsyscallMode::Xonly => "xonly",
            VsyscallMode::None => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_params() {
        let c = "console=ttyS0 vsyscall=emulate quiet vsyscall=none -- vsyscall=xonly";
        assert_eq!(cmdline_param(c, "vsyscall"), Some("none"));
        assert_eq!(cmdline_param(c, "console"), Some("ttyS0"));
        assert_eq!(cmdline_param(c, "vdso"), None);
    }

    #[test]
    fn versions_and_modes() {
        assert_eq!(parse_version("6.18.44-fc-v769"), Some((6, 18)));
        assert_eq!(parse_version("4.19.0"), Some((4, 19)));
        assert_eq!(parse_version("x"), None);
        assert_eq!(VsyscallMode::from_perms("--xp"), Some(VsyscallMode::Xonly));
        assert_eq!(VsyscallMode::from_perms("r-xp"), Some(VsyscallMode::Emulate));
        assert_eq!(VsyscallMode::from_perms("rw"), None);
    }
}
