//! The one error type of the library. Every variant maps to exactly one exit
//! code from DESIGN.md, and its message is a single line that says what
//! failed, on what, and what to do about it.

use std::fmt;
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

    /// `check --image` of an archive holding several images, none chosen
    /// (or one that is not there): a usage error, never a silent pick.
    #[error("cannot choose the image to audit in {}: {detail}", path.display())]
    ImageChoice { path: PathBuf, detail: String },

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
    Facility { what: Facility, hint: Hint, errno: Option<i32> },

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
            Error::Usage(_) | Error::Misuse(_) | Error::ImageChoice { .. } => exit::USAGE,
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

/// What failed in a kernel facility, on what, as data: the gathering
/// layers fill it in and [`fmt::Display`] below words it, once.
#[derive(Debug)]
pub enum Facility {
    /// Already worded: only the sites in files being edited elsewhere
    /// (`measure/trace/session.rs`) until they are turned into kinds.
    Other(String),

    // perf_event_open and its counters.
    /// perf_event_open for a whole CPU, ESRCH.
    PerfOpen { source: io::Error },
    /// EACCES / EPERM, with `kernel.perf_event_paranoid` when readable.
    PerfRefused { source: io::Error, paranoid: Option<i32> },
    /// ENOSYS: no CONFIG_PERF_EVENTS, or a seccomp policy.
    PerfUnavailable,
    /// EMFILE / ENFILE.
    PerfFdLimit { source: io::Error },
    /// Any other refusal of perf_event_open.
    PerfOpenFailed { source: io::Error },
    /// A counter ioctl or read (`enable`, `disable`, `reset`, `read`, `SET_OUTPUT`).
    PerfCounter { op: &'static str, source: io::Error },
    /// Enabling the counters of the perf engine.
    PerfEnable { source: io::Error },
    /// Duplicating a perf fd for a ring of its own.
    PerfFdDup { source: io::Error },
    /// mmap of a perf ring buffer of `pages` pages.
    RingMap { pages: usize, source: io::Error },
    /// poll(2) on the perf ring buffers.
    RingPoll { source: io::Error },
    /// A tracepoint filter of ours with a NUL byte in it (a bug).
    FilterNul { filter: String },
    /// PERF_EVENT_IOC_SET_FILTER refused `filter`.
    FilterRejected { filter: String, source: io::Error },
    /// The baseline counter on `tracepoint` never ran.
    CounterNeverRan { tracepoint: &'static str },

    // tracefs.
    /// tracefs mounted at `root` but closed to us.
    TracefsRootOnly { root: PathBuf, source: io::Error },
    /// No tracefs at any of `tried`, and why none could be mounted.
    TracefsMissing { tried: Vec<PathBuf>, why: TracefsMount },
    /// A tracefs event file refused with EACCES / EPERM.
    TracefsDenied { path: PathBuf },
    /// No tracepoint `group:name` under `root`.
    TracepointMissing { group: String, name: String, root: PathBuf },
    /// Any other error reading a tracefs event file.
    TracefsRead { path: PathBuf, source: io::Error },

    // The trace engines.
    /// Neither the BPF nor the perf engine opened: both refusals.
    NoEngine { bpf: Box<Error>, perf: Box<Error> },
    /// Neither engine opened because a seccomp filter vdsoctl runs under
    /// (a container engine's default profile) refuses their syscalls: not
    /// a capability (`render::hint` words it).
    FilterRefuses { refusal: crate::measure::kernel::filter::FilterRefusal },
    /// `trace` knows no syscall numbers for this architecture.
    /// No syscall table known for this kernel's machine (`uname -m`):
    /// no engine counts by another architecture's numbers.
    UnknownSyscallNumbers { machine: Option<String> },
    /// A `-- CMD` child reached its exec without the seccomp filter.
    SeccompUnfiltered,
    /// The seccomp supervisor thread could not start.
    SeccompSupervisor { source: io::Error },

    // BPF.
    /// bpf(2) refused `step` (EPERM / EACCES) and we lack `caps`.
    BpfLacking { step: BpfStep, caps: Vec<&'static str> },
    /// bpf(2) refused `step` for another reason.
    BpfRefused { step: BpfStep, source: io::Error },
    /// ENOSYS: no CONFIG_BPF_SYSCALL, or seccomp blocks it.
    BpfUnavailable,
    /// A BPF map lookup or key walk failed.
    BpfMapRead { source: io::Error },
    /// A program of ours did not assemble (a bug): the assembler's reason.
    BpfAssemble { prog: String, why: String },
    /// The verifier rejected `prog` with `reason`; its whole log saved at `log`.
    VerifierRejected { prog: String, reason: String, log: io::Result<PathBuf> },
    /// bpf(2) refused `prog` with `source` (a verifier's errno) though its
    /// log ends as a pass that went on (a pruning note): the errno is all
    /// it says; the whole log saved at `log`.
    RefusedAfterVerifier { prog: String, source: io::Error, log: io::Result<PathBuf> },
    /// The kernel is older than the BPF engine's floor.
    BelowFloor { floor: &'static str, release: Option<String> },
    /// The kernel's BTF lacks `what`; `unknown` is the first type of a kind
    /// this parser does not know (id, kind), after which nothing was read.
    BtfMissing { what: String, unknown: Option<(u32, u32)> },
    /// No syscall entry known for this machine (`uname -m`).
    UnknownSyscallEntry { machine: Option<String> },
    /// No user stack pointer known for this architecture.
    UnknownStackPointer,

    // fentry.
    /// fentry knows no ABI for this kernel.
    FentryUnknownArch,
    /// No clock syscall functions are known for the ABI.
    FentryNoFunctions { abi: &'static str },
    /// The kernel's BTF lacks the function `name`.
    FentryNoBtfFunction { name: &'static str },
    /// The attach points came out empty.
    FentryNoPoints,
    /// The kernel refused an fentry program.
    FentryRefused { cause: FentryCause },

    // cgroups, serve and vdsoctl's own faults.
    /// `--cgroup` without a cgroup v2 mount.
    NoCgroupV2,
    /// No address of `listen` could be bound; the last error.
    Listen { listen: String, source: io::Error },
    /// The HTTP server's runtime or listener could not be set up.
    ServerStart { source: io::Error },
    /// The accept loop ended on an internal error.
    AcceptStopped,
    /// The server ended on an internal error.
    ServerStopped,
    /// A named thread could not be spawned.
    ThreadSpawn { name: String, source: io::Error },
    /// A man page the resolve step admitted cannot be rendered (a bug).
    ManPage { page: &'static str },
    /// A report without the form `--format` asked for (a bug: resolve refuses first).
    NoFormatForm { format: &'static str },
}

/// Why tracefs could not be mounted where none was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TracefsMount {
    NeedsRoot,
    /// Mounted, but no `events/` appeared.
    NoEvents,
    Failed {
        target: PathBuf,
        errno: nix::errno::Errno,
    },
}

/// A bpf(2) step that can be refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BpfStep {
    CreateMap,
    AddProcess,
    Attach,
    /// Put the cgroup at `path` (as /proc/PID/cgroup shows it) in a map.
    TakeCgroup {
        path: String,
    },
    /// Load the program `prog`.
    Load {
        prog: String,
    },
}

/// Why the kernel refused an fentry program.
#[derive(Debug)]
pub enum FentryCause {
    /// EPERM: what [`Lockdown`] securityfs showed.
    Eperm(Lockdown),
    /// ENOTSUPP (524): no BPF trampolines.
    NoTrampolines,
    /// PREEMPT_RT, where trampolines are preemptible.
    PreemptRt,
    /// Another refusal of loading at `function`.
    Failed { source: Box<Error>, function: String },
}

/// The lockdown mode at [`LOCKDOWN`], as read after an EPERM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lockdown {
    /// `[none]`: not locked down.
    None,
    /// Locked down in `mode` (`integrity`, `confidentiality`).
    Mode(String),
    /// No mode to read: the file is `present` but shows none, or absent.
    Unread { present: bool },
}

/// Where securityfs shows the lockdown mode (`none [integrity]
/// confidentiality`: the bracketed one is in force).
pub const LOCKDOWN: &str = "/sys/kernel/security/lockdown";

impl Lockdown {
    /// The mode in [`LOCKDOWN`]'s text (`None`: no such file).
    pub fn read(text: Option<&str>) -> Lockdown {
        let mode = text.and_then(|t| t.split_whitespace().find_map(|w| w.strip_prefix('[')?.strip_suffix(']')));
        match mode {
            Some("none") => Lockdown::None,
            Some(mode) => Lockdown::Mode(mode.to_string()),
            None => Lockdown::Unread { present: text.is_some() },
        }
    }
}

/// The part of an error's message before its hint (` — `).
pub fn short(text: &str) -> &str {
    text.split(" — ").next().unwrap_or(text)
}

impl fmt::Display for Facility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Facility::*;
        match self {
            Other(text) => f.write_str(text),
            PerfOpen { source } => write!(f, "perf_event_open: {}", errno_text(source)),
            PerfRefused { source, paranoid } => {
                let paranoid = paranoid.map_or_else(|| "unknown".to_string(), |p| p.to_string());
                write!(f, "perf_event_open refused: {} (kernel.perf_event_paranoid = {paranoid})", errno_text(source))
            }
            PerfUnavailable => f.write_str(
                "perf_event_open is not available: the kernel lacks CONFIG_PERF_EVENTS or a seccomp policy returns ENOSYS",
            ),
            PerfFdLimit { source } => {
                write!(f, "perf_event_open: {} (one counter per thread and clock id)", errno_text(source))
            }
            PerfOpenFailed { source } => write!(f, "perf_event_open failed: {}", errno_text(source)),
            PerfCounter { op, source } => write!(f, "perf counter {op} failed: {}", errno_text(source)),
            PerfEnable { source } => write!(f, "cannot enable a perf counter: {}", errno_text(source)),
            PerfFdDup { source } => write!(f, "cannot duplicate a perf fd: {}", errno_text(source)),
            RingMap { pages, source } => {
                write!(f, "cannot map a {pages}-page perf ring buffer: {}", errno_text(source))
            }
            RingPoll { source } => write!(f, "poll on perf ring buffers failed: {}", errno_text(source)),
            FilterNul { filter } => write!(f, "internal error: the tracepoint filter {filter:?} holds a NUL byte"),
            FilterRejected { filter, source } => {
                write!(f, "the kernel rejected the tracepoint filter `{filter}`: {}", errno_text(source))
            }
            CounterNeverRan { tracepoint } => write!(f, "the {tracepoint} counter never ran"),
            TracefsRootOnly { root, source } => {
                write!(f, "tracefs at {} is readable only by root here ({})", root.display(), errno_text(source))
            }
            TracefsMissing { tried, why } => {
                let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
                write!(f, "tracefs is not mounted (tried {}; ", tried.join(", "))?;
                match why {
                    TracefsMount::NeedsRoot => f.write_str("mounting it needs root")?,
                    TracefsMount::NoEvents => f.write_str("mounted tracefs but found no events/ in it")?,
                    TracefsMount::Failed { target, errno } => write!(f, "mounting it at {} failed: {errno}", target.display())?,
                }
                f.write_str(")")
            }
            TracefsDenied { path } => {
                write!(f, "cannot read {}: permission denied (tracefs is readable only by root here)", path.display())
            }
            TracepointMissing { group, name, root } => {
                write!(f, "tracepoint {group}:{name} does not exist in {}", root.display())
            }
            TracefsRead { path, source } => write!(f, "cannot read {}: {}", path.display(), errno_text(source)),
            NoEngine { bpf, perf } => {
                write!(f, "no trace engine here: {}; and {}", short(&bpf.to_string()), short(&perf.to_string()))
            }
            FilterRefuses { refusal } => filter_refusal(f, refusal),
            UnknownSyscallNumbers { machine } => write!(
                f,
                "`trace` does not know this architecture's syscall numbers ({})",
                machine.as_deref().unwrap_or("unknown")
            ),
            SeccompUnfiltered => f.write_str("the command started without the seccomp filter"),
            SeccompSupervisor { source } => write!(f, "cannot start the seccomp supervisor: {source}"),
            BpfLacking { step, caps } => write!(f, "BPF refused to {step}: {} missing", caps.join(" and ")),
            BpfRefused { step, source } => write!(f, "BPF refused to {step}: {}", errno_text(source)),
            BpfUnavailable => {
                f.write_str("bpf(2) is not available: the kernel lacks CONFIG_BPF_SYSCALL or seccomp blocks it")
            }
            BpfMapRead { source } => write!(f, "cannot read a BPF map: {}", errno_text(source)),
            BpfAssemble { prog, why } => write!(f, "BPF program {prog} could not be assembled: {why}"),
            VerifierRejected { prog, reason, log } => {
                write!(f, "the BPF verifier rejected {prog}: {reason}; ")?;
                saved_log(f, log)
            }
            RefusedAfterVerifier { prog, source, log } => {
                write!(f, "BPF refused to load {prog} after its verification passed: {}; ", errno_text(source))?;
                saved_log(f, log)
            }
            BelowFloor { floor, release } => {
                write!(f, "the BPF engine needs {floor}; this kernel is {}", release.as_deref().unwrap_or("of an unknown release"))
            }
            BtfMissing { what, unknown: Some((id, kind)) } => {
                write!(f, "the kernel's BTF has no {what} before type {id} (kind {kind}, newer than vdsoctl)")
            }
            BtfMissing { what, unknown: None } => write!(f, "the kernel's BTF has no {what}"),
            UnknownSyscallEntry { machine } => write!(
                f,
                "the BPF engine does not know the syscall entry of this architecture ({})",
                machine.as_deref().unwrap_or("unknown")
            ),
            UnknownStackPointer => f.write_str("this architecture's user stack pointer is not known"),
            FentryUnknownArch => f.write_str("fentry: this kernel's architecture is not known"),
            FentryNoFunctions { abi } => write!(f, "fentry: no clock syscall functions are known for {abi}"),
            FentryNoBtfFunction { name } => write!(f, "fentry: the kernel's BTF has no function {name}"),
            FentryNoPoints => f.write_str("fentry: no clock syscall functions"),
            FentryRefused { cause } => write!(f, "fentry refused: {cause}"),
            NoCgroupV2 => f.write_str("--cgroup needs the cgroup v2 hierarchy, and none is mounted"),
            Listen { listen, source } => write!(f, "cannot listen on {listen}: {}", errno_text(source)),
            ServerStart { source } => write!(f, "cannot start the HTTP server: {}", errno_text(source)),
            AcceptStopped => f.write_str("the HTTP server stopped accepting on an internal error (see above)"),
            ServerStopped => f.write_str("the HTTP server stopped on an internal error (see above)"),
            ThreadSpawn { name, source } => write!(f, "cannot start the {name} thread: {}", errno_text(source)),
            ManPage { page } => write!(f, "internal error: the man page of {page} cannot be rendered"),
            NoFormatForm { format } => {
                write!(f, "internal error: this report has no --format {format} form")
            }
        }
    }
}

impl fmt::Display for BpfStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BpfStep::CreateMap => f.write_str("create a BPF map"),
            BpfStep::AddProcess => f.write_str("add a process to the traced set"),
            BpfStep::Attach => f.write_str("attach a BPF program"),
            BpfStep::TakeCgroup { path } => write!(f, "take cgroup {path} (it must be in the v2 hierarchy)"),
            BpfStep::Load { prog } => write!(f, "load {prog}"),
        }
    }
}

impl fmt::Display for FentryCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FentryCause::Eperm(lockdown) => write!(f, "{lockdown}"),
            FentryCause::NoTrampolines => f.write_str("the kernel has no BPF trampolines (ENOTSUPP)"),
            FentryCause::PreemptRt => f.write_str("PREEMPT_RT (trampolines preemptible there)"),
            FentryCause::Failed { source, function } => match &**source {
                Error::Facility { what, .. } => write!(f, "{what} (at {function})"),
                other => write!(f, "{other} (at {function})"),
            },
        }
    }
}

impl fmt::Display for Lockdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lockdown::None => write!(
                f,
                "EPERM with lockdown `none` in {LOCKDOWN}: likely an LSM (SELinux, AppArmor, BPF LSM) \
                 or a missing capability (CAP_BPF, CAP_PERFMON)"
            ),
            Lockdown::Mode(mode) => write!(f, "the kernel is locked down (`{mode}` in {LOCKDOWN}; EPERM)"),
            Lockdown::Unread { present } => write!(
                f,
                "EPERM, and no lockdown mode to read ({LOCKDOWN} {}): likely kernel lockdown \
                 (its securityfs not mounted), an LSM, or a missing capability (CAP_BPF, CAP_PERFMON)",
                if *present { "unreadable as a mode" } else { "absent" }
            ),
        }
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
    /// The seccomp engine's ptrace seize was refused.
    PtraceRefused,
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
    /// The verifier wants the JIT, which is off (`bpf_jit_enable` 0).
    BpfJitOff,
    /// A seccomp filter refuses the engines' syscalls: the profile to run under.
    SeccompProfile,
    /// `top`'s sampler does not know this architecture's sample registers.
    TopUnknownArch,
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
    /// `--seccomp-channel` with an engine other than seccomp.
    ChannelNeedsSeccomp,
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
/// Where a verifier's whole log went (or why it is nowhere).
fn saved_log(f: &mut fmt::Formatter<'_>, log: &io::Result<PathBuf>) -> fmt::Result {
    match log {
        Ok(path) => write!(f, "the verifier's whole log is in {}", path.display()),
        Err(e) => write!(f, "its whole log could not be saved: {}", errno_text(e)),
    }
}

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

/// A seccomp filter's refusal of the trace engines' syscalls, told from a
/// missing capability by a probe the kernel itself answers with EINVAL.
fn filter_refusal(f: &mut fmt::Formatter<'_>, r: &crate::measure::kernel::filter::FilterRefusal) -> fmt::Result {
    let calls: Vec<String> = r.syscalls.iter().map(|s| format!("{s}(2)")).collect();
    let errno = r.errno.map(|e| format!(" ({:?})", nix::errno::Errno::from_raw(e))).unwrap_or_default();
    let filters = if r.filters == 1 { "1 filter".to_string() } else { format!("{} filters", r.filters) };
    write!(
        f,
        "no trace engine here: the seccomp profile vdsoctl runs under ({filters}) refuses {}{errno}",
        calls.join(" and ")
    )?;
    if r.caps_held {
        f.write_str(", not its capabilities: it holds CAP_BPF and CAP_PERFMON")
    } else {
        f.write_str(", before any capability is checked (it lacks CAP_BPF or CAP_PERFMON too)")
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

    /// The facility words, as they were when each site built its own
    /// sentence: the typed kinds say exactly the same.
    #[test]
    fn facility_words_are_unchanged() {
        let eperm = || io::Error::from_raw_os_error(libc::EPERM);
        let cases: Vec<(Facility, &str)> = vec![
            (
                Facility::PerfRefused { source: eperm(), paranoid: Some(2) },
                "perf_event_open refused: operation not permitted (EPERM) (kernel.perf_event_paranoid = 2)",
            ),
            (
                Facility::PerfRefused { source: eperm(), paranoid: None },
                "perf_event_open refused: operation not permitted (EPERM) (kernel.perf_event_paranoid = unknown)",
            ),
            (
                Facility::PerfCounter { op: "SET_OUTPUT", source: eperm() },
                "perf counter SET_OUTPUT failed: operation not permitted (EPERM)",
            ),
            (
                Facility::TracefsMissing {
                    tried: vec!["/sys/kernel/tracing".into(), "/sys/kernel/debug/tracing".into()],
                    why: TracefsMount::NeedsRoot,
                },
                "tracefs is not mounted (tried /sys/kernel/tracing, /sys/kernel/debug/tracing; mounting it needs root)",
            ),
            (
                Facility::TracefsMissing {
                    tried: vec!["/t".into()],
                    why: TracefsMount::Failed { target: "/t".into(), errno: nix::errno::Errno::EPERM },
                },
                "tracefs is not mounted (tried /t; mounting it at /t failed: EPERM: Operation not permitted)",
            ),
            (
                Facility::TracepointMissing { group: "syscalls".into(), name: "sys_enter_x".into(), root: "/t".into() },
                "tracepoint syscalls:sys_enter_x does not exist in /t",
            ),
            (
                Facility::BpfLacking { step: BpfStep::TakeCgroup { path: "/a".into() }, caps: vec!["CAP_BPF", "CAP_PERFMON"] },
                "BPF refused to take cgroup /a (it must be in the v2 hierarchy): CAP_BPF and CAP_PERFMON missing",
            ),
            (
                Facility::BpfRefused { step: BpfStep::Load { prog: "p".into() }, source: eperm() },
                "BPF refused to load p: operation not permitted (EPERM)",
            ),
            (
                Facility::VerifierRejected { prog: "p".into(), reason: "R2 !read_ok".into(), log: Ok("/l".into()) },
                "the BPF verifier rejected p: R2 !read_ok; the verifier's whole log is in /l",
            ),
            (
                Facility::RefusedAfterVerifier {
                    prog: "p".into(),
                    source: io::Error::from_raw_os_error(libc::EINVAL),
                    log: Ok("/l".into()),
                },
                "BPF refused to load p after its verification passed: invalid argument (EINVAL); the verifier's whole log is in /l",
            ),
            (
                Facility::BtfMissing { what: "task_struct.mm".into(), unknown: Some((7, 20)) },
                "the kernel's BTF has no task_struct.mm before type 7 (kind 20, newer than vdsoctl)",
            ),
            (
                Facility::BelowFloor { floor: "Linux 5.11", release: None },
                "the BPF engine needs Linux 5.11; this kernel is of an unknown release",
            ),
            (Facility::UnknownSyscallEntry { machine: None }, "the BPF engine does not know the syscall entry of this architecture (unknown)"),
            (Facility::FentryNoBtfFunction { name: "__x64_sys_time" }, "fentry: the kernel's BTF has no function __x64_sys_time"),
            (
                Facility::FentryRefused { cause: FentryCause::Eperm(Lockdown::Mode("integrity".into())) },
                "fentry refused: the kernel is locked down (`integrity` in /sys/kernel/security/lockdown; EPERM)",
            ),
            (
                Facility::FentryRefused {
                    cause: FentryCause::Failed {
                        source: Box::new(Error::Facility { what: Facility::BpfUnavailable, hint: Hint::Retry, errno: None }),
                        function: "f".into(),
                    },
                },
                "fentry refused: bpf(2) is not available: the kernel lacks CONFIG_BPF_SYSCALL or seccomp blocks it (at f)",
            ),
            (
                Facility::NoEngine {
                    bpf: Box::new(Error::Facility { what: Facility::BpfUnavailable, hint: Hint::BpfUsePerf, errno: None }),
                    perf: Box::new(Error::Facility { what: Facility::PerfUnavailable, hint: Hint::PerfSeccomp, errno: None }),
                },
                "no trace engine here: bpf(2) is not available: the kernel lacks CONFIG_BPF_SYSCALL or seccomp blocks it; \
                 and perf_event_open is not available: the kernel lacks CONFIG_PERF_EVENTS or a seccomp policy returns ENOSYS",
            ),
            (Facility::NoFormatForm { format: "junit" }, "internal error: this report has no --format junit form"),
            (Facility::ThreadSpawn { name: "refresh".into(), source: eperm() }, "cannot start the refresh thread: operation not permitted (EPERM)"),
        ];
        for (what, words) in cases {
            assert_eq!(what.to_string(), words);
        }
    }
}
