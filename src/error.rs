//! The one error type of the library. Every variant maps to exactly one exit
//! code from DESIGN.md, and its message is a single line that says what
//! failed, on what, and what to do about it.

use std::io;
use std::path::PathBuf;

/// Exit codes from DESIGN.md, named so `main` never spells a bare number.
pub mod exit {
    /// Ran; nothing crossed a threshold the user set.
    pub const OK: u8 = 0;
    /// Ran; a finding crossed a threshold (`--max-ns`, failed `check`, ...).
    pub const THRESHOLD: u8 = 1;
    /// Usage error (clap's own code).
    pub const USAGE: u8 = 2;
    /// Could not inspect: no such process, permission, no vDSO, bad file.
    pub const INSPECT: u8 = 3;
    /// The facility is missing here: perf_event_open refused, no tracefs.
    pub const FACILITY: u8 = 4;
}

/// Everything that can stop a command before it has a report to print.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A usage problem clap cannot express (an `--interval` below its floor,
    /// a `--listen` that is no address): raised only by the resolve step.
    #[error("{0}")]
    Usage(String),

    /// A usage problem found by the engines (`--engine seccomp` with `-p`...).
    #[error("{0}")]
    Misuse(Misuse),

    /// `/proc/PID` does not exist.
    #[error("no process with pid {pid} — it may have exited; list processes with `ps -e`")]
    NoSuchProcess { pid: i32 },

    /// The process has exited but was not reaped: it has no address space left.
    #[error("pid {pid} ({comm}) is a zombie: it has exited and has no memory map left — inspect a live process")]
    Zombie { pid: i32, comm: String },

    /// Kernel threads have no user address space, hence no vDSO.
    #[error("pid {pid} ({comm}) is a kernel thread: it has no user address space and no vDSO — pick a user process")]
    KernelThread { pid: i32, comm: String },

    /// The kernel refused access (ptrace access mode checks on /proc/PID/*).
    #[error("cannot read {}: permission denied — {hint}", path.display())]
    PermissionDenied { path: PathBuf, hint: Hint },

    /// An I/O error on a file we needed, with no better classification.
    #[error("cannot read {}: {} — {hint}", path.display(), errno_text(source))]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
        hint: Hint,
    },

    /// The process has no `[vdso]` mapping (vdso=0, a sandbox unmapped it, ...).
    #[error("pid {pid} has no [vdso] mapping: every clock read there is a syscall — check `vdso=` on the kernel command line or the sandbox that unmaps it")]
    NoVdso { pid: i32 },

    /// Every read of the process straddled an exec: what was read mixes two
    /// program images (or one half-loaded), so nothing is reported about it.
    #[error("pid {pid}: the process exec'd while being read: retry — each of {tries} reads in a row straddled an exec (it starts new programs faster than one can be read); read it once it settles")]
    ExecRace { pid: i32, tries: u32 },

    /// Input bytes that do not parse (an ELF image, an auxv vector, a maps line).
    #[error("{what} is malformed: {detail}")]
    Malformed { what: String, detail: String },

    /// A file or mapping above the read cap; never read whole.
    #[error("{} is {}, more than the {} limit — a vDSO image is a few pages; pass the image itself", path.display(), crate::words::human_size(*size), crate::words::human_size(*limit))]
    TooLarge { path: PathBuf, size: u64, limit: u64 },

    /// A file we were asked to write (`dump -o`) could not be written.
    #[error("cannot write {}: {} — check that the directory exists and is writable", path.display(), errno_text(source))]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// `dump -o` or `trace --flamegraph` names something other than a
    /// regular file (a link, a FIFO, a directory, a device): never opened,
    /// never replaced.
    #[error("refusing to write {}: it is {kind} — vdsoctl creates a file or replaces a regular one, never writes through a link or into a device; pick another path", path.display())]
    WriteRefused { path: PathBuf, kind: String },

    /// A path that is not a regular file (a directory, a device): never read.
    #[error("nothing to audit under {}: no ELF program or library in {entries} entries{unreadable} — pass the directory an image is unpacked in (or / inside the container)", root.display())]
    NothingToAudit { root: PathBuf, entries: u64, unreadable: String },

    /// `check --image` of an archive or OCI layout that holds no image to audit.
    #[error("cannot audit {} as an image: {detail} — pass a directory an image is unpacked in, an OCI layout directory, or a tar written by `podman save` / `docker save`", path.display())]
    Image { path: PathBuf, detail: String },

    #[error("{} is {kind}, not a vDSO image file — pass a regular file, e.g. one written by `vdsoctl dump -o vdso.so`", path.display())]
    NotAFile { path: PathBuf, kind: String },

    /// Our own stdout could not be written (a full disk, `>/dev/full`).
    #[error(
        "cannot write the report to stdout: {} — check where stdout goes (a full disk, a device that refuses writes)",
        errno_text(source)
    )]
    Stdout {
        #[source]
        source: io::Error,
    },

    /// A kernel facility we need is absent or refused (perf_event_open, tracefs).
    /// `errno` is the kernel's answer when one was refused (EPERM, ENOSYS, ...).
    #[error("{what} — {hint}")]
    Facility { what: String, hint: Hint, errno: Option<i32> },

    /// A child command given to `trace -- CMD` could not be started.
    #[error("cannot start {cmd}: {} — {}", errno_text(source), spawn_hint(source))]
    Spawn {
        cmd: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// The process exit code DESIGN.md assigns to this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Misuse(_) => exit::USAGE,
            Error::Facility { .. } => exit::FACILITY,
            Error::NoSuchProcess { .. }
            | Error::Zombie { .. }
            | Error::KernelThread { .. }
            | Error::PermissionDenied { .. }
            | Error::Io { .. }
            | Error::NoVdso { .. }
            | Error::ExecRace { .. }
            | Error::Malformed { .. }
            | Error::TooLarge { .. }
            | Error::NotAFile { .. }
            | Error::NothingToAudit { .. }
            | Error::Image { .. }
            | Error::Write { .. }
            | Error::WriteRefused { .. }
            | Error::Spawn { .. }
            | Error::Stdout { .. } => exit::INSPECT,
        }
    }

    /// Classify an I/O error on `path`: permission problems get the ptrace
    /// hint, everything else keeps its errno text.
    pub fn from_io(path: impl Into<PathBuf>, source: io::Error, hint: impl Into<Hint>) -> Error {
        let (path, hint) = (path.into(), hint.into());
        match source.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => Error::PermissionDenied { path, hint },
            _ => Error::Io { path, source, hint },
        }
    }

    /// Shorthand for [`Error::Malformed`].
    pub fn malformed(what: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::Malformed { what: what.into(), detail: detail.into() }
    }
}

/// What to do when a command cannot be started, by why.
fn spawn_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EMFILE) | Some(libc::ENFILE) => "too many open files: raise the limit (`ulimit -n`) or close some",
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "check that the file is executable and its filesystem not mounted noexec"
        }
        Some(libc::ENOEXEC) => "it is not a program this machine runs; check its architecture with `file`",
        Some(libc::E2BIG) => "the arguments and environment are too long; shorten them",
        Some(libc::ENOMEM) | Some(libc::EAGAIN) => "the system is out of memory or processes; retry later",
        _ => "check the command name and PATH",
    }
}

/// What would help, as data: `inspect` and `measure` say which, and the
/// edge words it (`render::hint`), so no user advice or CLI flag is spelt
/// in the gathering layers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hint {
    /// Already worded by the edge (`cmd/`), or by code not turned into kinds yet.
    Text(String),
    /// /proc/PID refused by the ptrace access checks: `euid` asked, `owner` owns it.
    Ptrace {
        euid: u32,
        owner: Option<u32>,
    },
    Retry,
    RetryOrReport,
    RetryOrReportAgain,
    ProcessChanged,
    MappingChanged,
    CheckPath,
    CheckReadable,
    SysfsMounted,
    ImageRoot,
    TracepointFields,
    PerfRootRefused,
    PerfPrivilege,
    PerfSeccomp,
    PerfFdLimit,
    PerfTracepoint,
    PerfLimits,
    MlockLimit,
    UnsupportedArch,
    FdLimit,
    EnginesRootRefused,
    EnginesPrivilege,
    SeccompRefused,
    TracefsRoot,
    MountTracefs,
    TracefsAccess,
    TracepointMissing,
    TracefsReadable,
    /// The BPF engine cannot run here: the perf engine may.
    BpfUsePerf,
    FentryRefused,
    /// bpf(2) refused for want of CAP_BPF / CAP_PERFMON.
    BpfPrivilege,
    /// bpf(2) missing or blocked by a seccomp profile.
    BpfSyscallBlocked,
    /// A program refused without a reason: an old or locked-down kernel.
    BpfProgramRefused,
    /// The kernel's BTF lacks what the programs read.
    BpfNeedsBtf,
    /// The verifier rejected a program: its log is saved.
    BpfVerifierRejected,
}

impl From<&str> for Hint {
    fn from(s: &str) -> Hint {
        Hint::Text(s.to_string())
    }
}

impl From<String> for Hint {
    fn from(s: String) -> Hint {
        Hint::Text(s)
    }
}

/// A request the engines cannot serve as asked (exit 2), as data; worded
/// at the edge (`render::hint`), where the flags are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misuse {
    SeccompNeedsCommand,
    PerfOnlyModes,
    PerThreadNeedsBpf,
    SeccompNotPid,
    SeccompNoDuration,
    CgroupNeedsBpf,
    CgroupNeedsAll,
    /// `--sites` with the perf engine, which keeps no registers per call.
    SitesNeedRegisters,
    /// `--sites` where vdsoctl reads no call-site registers (`arch::SITE_REGS`).
    SitesOffX86,
    StacksNeedBpf,
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The hint for a /proc/PID file guarded by ptrace access checks, for who
/// asks (worded by `render::hint`).
pub fn ptrace_hint(pid: i32) -> Hint {
    use std::os::unix::fs::MetadataExt;
    let euid = nix::unistd::geteuid().as_raw();
    let owner = std::fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid());
    Hint::Ptrace { euid, owner }
}

/// An OS error as a person reads it: `permission denied (EPERM)`, without
/// Rust's `(os error 1)` suffix.
pub fn errno_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let errno = nix::errno::Errno::from_raw(n);
            let desc = errno.desc();
            // "Permission denied" reads "permission denied"; "I/O error"
            // stays as it is (its second letter is no lowercase one).
            let mut first = desc.chars();
            let desc = match (first.next(), desc.chars().nth(1)) {
                (Some(c), Some(next)) if next.is_lowercase() => c.to_lowercase().collect::<String>() + first.as_str(),
                _ => desc.to_string(),
            };
            format!("{desc} ({errno:?})")
        }
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_is_one_line() {
        let errors = [
            Error::NoSuchProcess { pid: 1 },
            Error::Zombie { pid: 1, comm: "x".into() },
            Error::KernelThread { pid: 2, comm: "kthreadd".into() },
            Error::from_io("/proc/1/mem", io::Error::from_raw_os_error(libc::EACCES), ptrace_hint(1)),
            Error::from_io("/x", io::Error::from_raw_os_error(libc::EIO), "retry"),
            Error::NoVdso { pid: 1 },
            Error::ExecRace { pid: 1, tries: 64 },
            Error::malformed("f", "d"),
            Error::NotAFile { path: "/dev/zero".into(), kind: "a character device".into() },
            Error::TooLarge { path: "/x".into(), size: 1 << 30, limit: 64 << 20 },
            Error::WriteRefused { path: "/x".into(), kind: "a symbolic link".into() },
        ];
        for e in errors {
            let text = e.to_string();
            assert!(!text.contains('\n'), "{text}");
            assert_eq!(e.exit_code(), exit::INSPECT);
        }
        let denied = Error::from_io(
            "/proc/1/mem",
            io::Error::from_raw_os_error(libc::EACCES),
            Hint::Ptrace { euid: 1000, owner: Some(0) },
        );
        assert!(matches!(denied, Error::PermissionDenied { .. }));
        assert!(denied
            .to_string()
            .contains("permission denied — it belongs to uid 0: run vdsoctl as that user or as root"));
        assert!(Hint::Ptrace { euid: 0, owner: Some(0) }.to_string().starts_with("root is refused too"));
        assert!(Hint::Ptrace { euid: 1000, owner: Some(1000) }.to_string().starts_with("its owner is refused"));
        let race = Error::ExecRace { pid: 7, tries: 64 }.to_string();
        assert!(race.starts_with("pid 7: the process exec'd while being read: retry — each of 64 reads"), "{race}");
        assert_eq!(errno_text(&io::Error::from_raw_os_error(libc::EIO)), "I/O error (EIO)");
        let eio = Error::from_io("/x", io::Error::from_raw_os_error(libc::ENOENT), "retry").to_string();
        assert_eq!(eio, "cannot read /x: no such file or directory (ENOENT) — retry");
        let spawn = Error::Spawn { cmd: "x".into(), source: io::Error::from_raw_os_error(libc::EMFILE) }.to_string();
        assert!(spawn.contains("(EMFILE) — too many open files"), "{spawn}");
        assert!(!spawn.contains("PATH"), "{spawn}");
    }
}
