//! Hints and engine misuses worded for people: `inspect` and `measure`
//! return what would help as data ([`Hint`], [`Misuse`]); this is where it
//! becomes advice, naming commands and flags.

use crate::error::{Hint, Misuse};
use std::fmt;

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Hint::Text(t) => t,
            Hint::Ptrace { euid, owner } => return f.write_str(&ptrace(*euid, *owner)),
            Hint::Retry => "retry",
            Hint::RetryOrReport => "retry; report it if it persists",
            Hint::RetryOrReportAgain => "retry; report it if it happens again",
            Hint::ProcessChanged => "the process may have unmapped it, exec'd or exited while it was read; retry",
            Hint::MappingChanged => "the mapping may have changed; retry",
            Hint::CheckPath => "check the path and its permissions",
            Hint::CheckReadable => "check that it is readable",
            Hint::SysfsMounted => "is sysfs mounted?",
            Hint::ImageRoot => "pass the directory an image is unpacked in (or / inside the container)",
            Hint::TracepointFields => "this kernel's tracepoint has other fields; check its format file in tracefs",
            Hint::PerfRootRefused => "root is refused too: a container's seccomp profile or capability bounding set blocks perf_event_open; run on the host, or allow it (`docker run --cap-add PERFMON`)",
            Hint::PerfPrivilege => "run as root or with CAP_PERFMON (CAP_SYS_ADMIN before 5.8), or `sysctl kernel.perf_event_paranoid=-1`",
            Hint::PerfSeccomp => "run on the host, or allow perf_event_open in the container's seccomp profile",
            Hint::PerfFdLimit => "raise the limit with `ulimit -n 65536`, or trace fewer processes",
            Hint::PerfTracepoint => "check that the tracepoint exists and perf is enabled (kernel.perf_event_paranoid)",
            Hint::PerfLimits => "check perf_event_open limits (kernel.perf_event_paranoid, seccomp)",
            Hint::MlockLimit => "raise kernel.perf_event_mlock_kb or `ulimit -l`, or run as root",
            Hint::UnsupportedArch => {
                // The architectures the arch table knows, in its order.
                let names: Vec<&str> = crate::arch::Abi::ALL.iter().map(|a| a.name()).collect();
                let (last, rest) = names.split_last().unwrap_or((&"", &[]));
                return write!(f, "run on {} or {last}", rest.join(", "));
            }
            Hint::FdLimit => "raise `ulimit -n`",
            Hint::EnginesRootRefused => "root is refused too: a container's seccomp profile or capability bounding set blocks bpf(2) and perf_event_open; run on the host, or allow them (`docker run --cap-add BPF --cap-add PERFMON`)",
            Hint::EnginesPrivilege => "run as root, or grant CAP_BPF and CAP_PERFMON (`setpriv --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon vdsoctl trace ...`)",
            Hint::SeccompRefused => "seccomp(2) with a user-notification listener needs Linux 5.5 and a sandbox that allows seccomp(2); elsewhere use --engine bpf or perf (root, or CAP_BPF + CAP_PERFMON)",
            Hint::PtraceRefused => "the seccomp engine seizes the command with ptrace: vdsoctl must not be traced itself, and ptrace must be allowed here (YAMA ptrace_scope 0 or 1, a sandbox that allows ptrace); elsewhere use --engine bpf or perf (root, or CAP_BPF + CAP_PERFMON)",
            Hint::TracefsRoot => "run vdsoctl as root (tracepoint ids and filters live in tracefs)",
            Hint::MountTracefs => "as root run `mount -t tracefs nodev /sys/kernel/tracing`, then retry",
            Hint::TracefsAccess => "run vdsoctl as root, or grant access with `chmod -R go+rX` on the tracefs events you need",
            Hint::TracepointMissing => "the kernel lacks it (CONFIG_FTRACE_SYSCALLS for syscalls:*, x86_64 for vsyscall:*)",
            Hint::TracefsReadable => "check that tracefs is mounted and readable",
            Hint::BpfUsePerf => "use `--engine perf`",
            Hint::FentryRefused => "use `--engine bpf` (the sys_enter program counts the same; `auto` falls back to it)",
            Hint::BpfPrivilege => "run as root, or grant CAP_BPF and CAP_PERFMON (`setpriv --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon vdsoctl ...`, systemd AmbientCapabilities=)",
            Hint::BpfSyscallBlocked => "use `--engine perf`, or allow bpf(2) in the container's seccomp profile",
            Hint::BpfProgramRefused => "use `--engine perf`; a kernel older than 5.11 or a locked-down one may refuse tp_btf programs",
            Hint::BpfNeedsBtf => "use `--engine perf` (the BPF engine needs Linux 5.11+ with CONFIG_DEBUG_INFO_BTF: tp_btf and bpf_get_current_task_btf)",
            Hint::BpfVerifierRejected => "use `--engine perf`, and report the kernel version with that log",
            Hint::BpfJitOff => "turn the BPF JIT on (`sysctl -w net.core.bpf_jit_enable=1`), or use `--engine perf`",
            Hint::TopUnknownArch => "run `vdsoctl trace` for the syscall half (top samples on x86_64 kernels only)",
            Hint::SeccompProfile => "run it under deploy/seccomp-vdsoctl.json, the container engine's default profile plus bpf and perf_event_open (podman or docker: `--security-opt seccomp=seccomp-vdsoctl.json`; Kubernetes: `seccompProfile: {type: Localhost, localhostProfile: vdsoctl/seccomp-vdsoctl.json}`, the file in the kubelet's seccomp directory)",
        };
        f.write_str(text)
    }
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Misuse::SeccompNeedsCommand => "the seccomp engine counts a command vdsoctl starts: use `-- CMD ARGS..` (for -p and -a, use --engine bpf or perf)",
            Misuse::PerfOnlyModes => "--native-only and --no-split are perf-engine modes",
            Misuse::PerThreadNeedsBpf => "--per-thread needs the BPF engine (--engine bpf)",
            Misuse::SeccompNotPid => "the seccomp engine counts a command vdsoctl starts, not -p",
            Misuse::CgroupNeedsBpf => "--cgroup filters in the kernel with the BPF engine: use --engine bpf (or auto)",
            Misuse::CgroupNeedsAll => "--cgroup limits a system-wide trace: use it with -a",
            Misuse::SitesNeedRegisters => "--sites needs the BPF engine (--engine bpf), or the seccomp engine for `-- CMD` (--engine seccomp): the perf engine counts calls without their registers, so it cannot tell where they were made",
            Misuse::SitesOffX86 => "--sites names call sites on x86_64 hosts only: on this architecture a leaf's caller is in the link register, which no engine reads yet",
            Misuse::StacksNeedBpf => "--stacks needs the BPF engine (--engine bpf or auto): the perf and seccomp engines keep no stacks",
            Misuse::ChannelNeedsSeccomp => "--seccomp-channel chooses how the seccomp engine counts: use it with --engine seccomp or auto",
            Misuse::SeccompNoDuration => "-d cannot cut the seccomp engine off: the command's clock syscalls wait for vdsoctl's answer, so it counts until the command's tree exits (stop it with Ctrl-C)",
        })
    }
}

/// What a [vsyscall] caller is.
const VSYSCALL_CAUSE: &str = "legacy code calling the fixed [vsyscall] address (0xffffffffff600000…), \
     built against a very old static glibc or Go or hard-coding it";

/// The advice on calls that bypassed the vDSO (`trace`'s findings,
/// `check -p`'s and `check -- CMD`'s rows), worded once.
impl fmt::Display for crate::model::lead::Advice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::model::lead::Advice;
        match self {
            Advice::RawSyscalls(lead) => raw_syscalls(f, lead),
            Advice::Vsyscall(caller) => vsyscall(f, caller),
            Advice::Both(lead, caller) => {
                raw_syscalls(f, lead)?;
                f.write_str("; the [vsyscall] calls are ")?;
                vsyscall(f, caller)
            }
            Advice::Host { busiest, advice } => write!(
                f,
                "`vdsoctl check -p {busiest}` audits the busiest; {advice}; `vdsoctl trace -a` shows every process's rates"
            ),
        }
    }
}

/// The `trace --sites` a [`Lead`](crate::model::lead::Lead) points to, as
/// argv: `vdsoctl trace --sites -p 42`, `vdsoctl trace --sites -- ./prog 'a b'`.
fn lead_argv(lead: &crate::model::lead::Lead) -> Option<Vec<String>> {
    use crate::model::lead::Lead;
    let sites = ["vdsoctl", "trace", "--sites"].map(String::from);
    match lead {
        Lead::Pid(pid) => Some(sites.into_iter().chain(["-p".into(), pid.to_string()]).collect()),
        Lead::Command(argv) => Some(sites.into_iter().chain(["--".into()]).chain(argv.iter().cloned()).collect()),
        Lead::Shown => None,
    }
}

/// The audit a [vsyscall] caller's advice names, as argv: `check --image`
/// of its executable's directory, else `check -p` of the process.
fn vsyscall_argv(caller: &crate::model::lead::VsyscallCaller) -> Vec<String> {
    match (&caller.exe, caller.dir()) {
        (Some(_), Some(dir)) => ["vdsoctl", "check", "--image", dir].map(String::from).to_vec(),
        _ => vec!["vdsoctl".into(), "check".into(), "-p".into(), caller.pid.to_string()],
    }
}

/// `lead_argv`'s command, shell-quoted to paste.
fn lead_command(lead: &crate::model::lead::Lead) -> Option<String> {
    lead_argv(lead).map(|argv| crate::words::shell_words(&argv))
}

impl crate::model::lead::Advice {
    /// The vdsoctl command the advice says to run first, as argv (JSON
    /// `findings[].next`); `None` when the report already shows it all.
    pub fn command(&self) -> Option<Vec<String>> {
        use crate::model::lead::Advice;
        match self {
            Advice::RawSyscalls(lead) => lead_argv(lead),
            Advice::Vsyscall(caller) => Some(vsyscall_argv(caller)),
            Advice::Both(lead, caller) => lead_argv(lead).or_else(|| Some(vsyscall_argv(caller))),
            Advice::Host { busiest, .. } => {
                Some(vec!["vdsoctl".into(), "check".into(), "-p".into(), busiest.to_string()])
            }
        }
    }
}

/// Clock syscalls the vDSO would serve that entered the kernel: where the
/// call sites are seen (the command to run, or the report's own), the causes.
fn raw_syscalls(f: &mut fmt::Formatter<'_>, lead: &crate::model::lead::Lead) -> fmt::Result {
    let what = "makes them";
    match lead_command(lead) {
        Some(c) => write!(f, "`{c}` names the code that {what} (function, library and caller)")?,
        None => write!(f, "the call sites below name the code that {what}")?,
    }
    f.write_str(
        "; look for a raw syscall(), a static or old libc, LD_PRELOAD, or a clocksource without a vDSO mode (`vdsoctl check`)",
    )
}

/// Calls into the fixed [vsyscall] page: what such a caller is, what to
/// rebuild, and the audit that names its function.
fn vsyscall(f: &mut fmt::Formatter<'_>, caller: &crate::model::lead::VsyscallCaller) -> fmt::Result {
    let audit = crate::words::shell_words(&vsyscall_argv(caller));
    let (what, find) = match (&caller.exe, caller.dir()) {
        (Some(exe), Some(_)) => (format!("`{exe}`"), format!("`{audit}` names the function that calls it")),
        _ => ("its binary".to_string(), format!("`{audit}` names the binary and function while it runs")),
    };
    write!(f, "{VSYSCALL_CAUSE}: rebuild {what} against a current libc or runtime; {find}")
}

/// For who asks: a user gets "run as the owner or root"; the owner or
/// root, who were refused anyway, get what else refuses them.
fn ptrace(euid: u32, owner: Option<u32>) -> String {
    if euid == 0 {
        "root is refused too: vdsoctl lacks CAP_SYS_PTRACE here (a container or a user namespace), or an LSM or \
         kernel.yama.ptrace_scope=3 forbids it — run it in the target's namespace or with CAP_SYS_PTRACE"
            .into()
    } else if owner == Some(euid) {
        "its owner is refused: it is not dumpable (setuid, setcap or PR_SET_DUMPABLE) or kernel.yama.ptrace_scope \
         forbids it — run vdsoctl as root"
            .into()
    } else {
        match owner {
            Some(uid) => format!(
                "it belongs to uid {uid}: run vdsoctl as that user or as root (reading another user's process needs CAP_SYS_PTRACE)"
            ),
            None => "run vdsoctl as the process's owner or as root (reading another user's process needs CAP_SYS_PTRACE)"
                .into(),
        }
    }
}

/// A call site's cause, for the end of its line (`trace --sites`).
impl crate::model::site::Fix {
    pub fn cause(&self) -> String {
        use crate::model::site::{Fallback, SiteClass};
        match (self.class, self.fallback) {
            (SiteClass::VdsoFallback, Some(Fallback::ClockNotServed)) => {
                format!("the vDSO's own fallback: {} is not a clock the vDSO serves", self.what)
            }
            (SiteClass::VdsoFallback, Some(Fallback::Clocksource)) => format!(
                "the vDSO's own fallback: the clocksource {} has no vDSO mode",
                self.clocksource.as_deref().unwrap_or("in use")
            ),
            (SiteClass::VdsoFallback, Some(Fallback::KeyRefill)) => {
                "the vDSO's own getrandom key refill (or a call it hands on)".into()
            }
            (SiteClass::VdsoFallback, _) => "the vDSO's own fallback, though it serves this clock here".into(),
            (SiteClass::LibcSyscall, _) => "libc's syscall() wrapper, called directly".into(),
            (SiteClass::LibcClock, _) => "the C library's clock function, not using the vDSO".into(),
            (SiteClass::LibcRandom, _) => "the C library's random-bytes function, not using the vDSO".into(),
            (SiteClass::Program, _) => "a syscall instruction in the program itself".into(),
            (SiteClass::GoRuntime, _) => "the Go runtime".into(),
            (SiteClass::Jit, _) => "code in anonymous executable memory (JIT or generated code)".into(),
            (SiteClass::Library, _) => "a library's own syscall instruction".into(),
            (SiteClass::Unknown, _) => "not named: the process's mappings were not read in time".into(),
            (SiteClass::Unreadable, _) => {
                "not named: vdsoctl may not read the process's mappings (it is not dumpable: setuid, setcap or PR_SET_DUMPABLE)".into()
            }
        }
    }
}

/// What to do about a call site (`trace --sites`), by its class.
impl fmt::Display for crate::model::site::Fix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::model::site::{Fallback, SiteClass};
        let who = self.who.as_deref().unwrap_or("the caller");
        match (self.class, self.fallback) {
            (SiteClass::VdsoFallback, Some(Fallback::ClockNotServed)) => write!(f, "expected: CPU-time, alarm and fd clocks (and clocks this kernel's vDSO does not serve yet) always enter the kernel; read {} less often, or use CLOCK_MONOTONIC where CPU time is not what is needed", self.what),
            (SiteClass::VdsoFallback, Some(Fallback::Clocksource)) => f.write_str("every high-resolution clock read enters the kernel on this clocksource; switch to tsc where it is stable (`echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource`, or clocksource=tsc on the kernel command line) — `vdsoctl check` says whether it is"),
            (SiteClass::VdsoFallback, Some(Fallback::KeyRefill)) => f.write_str("expected: the vDSO refills its getrandom state's key now and then (once per thread and kernel reseed) and hands on flags it does not serve"),
            (SiteClass::VdsoFallback, _) => f.write_str("look for a time namespace or a clocksource marked unstable (`dmesg | grep -i clocksource`); `vdsoctl check` audits both"),
            (SiteClass::LibcSyscall, _) => write!(f, "{who} calls syscall(SYS_{}, …) itself: call {}() instead, which libc serves from the vDSO", self.func.name(), self.func.libc_function()),
            (SiteClass::LibcClock, _) => f.write_str("the C library enters the kernel for this call: a static binary built against an old libc, musl on a vDSO without DT_HASH, or a libc that routes this clock id to the syscall — rebuild against a current glibc or musl (`vdsoctl check -p PID` names which)"),
            (SiteClass::LibcRandom, _) => f.write_str("the C library makes the getrandom syscall itself: every glibc before 2.41 and musl do, and glibc 2.41's getentropy() — glibc ≥ 2.41's getrandom() and arc4random() read the vDSO (`vdsoctl check -p PID` names the libc)"),
            (SiteClass::Program, _) => f.write_str("the program's own code (inline assembly, a raw syscall stub) bypasses libc and the vDSO: call clock_gettime() through libc, or look the function up in the vDSO (getauxval(AT_SYSINFO_EHDR))"),
            (SiteClass::GoRuntime, _) => f.write_str("Go reads the clock through the vDSO where the runtime can; a syscall here is a CPU-time clock, a syscall.Syscall the program makes, or a Go too old for this architecture's vDSO — update Go, and read time.Now() rather than raw syscalls"),
            (SiteClass::Jit, _) => f.write_str("code generated at run time (a JIT, a trampoline) makes the syscall: the runtime that emits it should call libc's clock_gettime() or the vDSO"),
            (SiteClass::Library, _) => write!(f, "{who} makes the syscall itself: update it, or have it call clock_gettime() through libc"),
            (SiteClass::Unknown, _) if self.engine == crate::progress::Kind::Seccomp => f.write_str("the seccomp engine reads the mappings while the call waits, and again when an address is outside them: code mapped and unmapped again (a JIT's), or a process killed meanwhile, leaves the address only"),
            (SiteClass::Unknown, _) => f.write_str("a process that exits between two looks (50 ms, BPF engine) leaves addresses only; trace a command with --engine seccomp, which reads each process's mappings at its first call"),
            (SiteClass::Unreadable, _) => f.write_str("reading a non-dumpable process's mappings needs CAP_SYS_PTRACE: run vdsoctl as root (any engine) to name its sites"),
        }
    }
}

/// A binary's hint, worded: for an image's file at `path` (a command to
/// run names it, shell-quoted) or for the file running as process `pid`.
impl crate::model::binary::BinaryHint {
    /// The hint for an image's file at `path` (`check -p PID` stays a
    /// placeholder: no process runs it).
    pub fn for_file(self, path: &str) -> String {
        let run = || format!("`vdsoctl check -- {}` (or `check -p PID` as root)", crate::words::shell_words(&[path]));
        self.words().map_or_else(|| format!("run it under {} to see", run()), str::to_string)
    }

    /// The hint for the file running as process `pid`: it names the pid.
    pub fn for_process(self, pid: i32) -> String {
        let run = || format!("`vdsoctl check -- PROG` (or `check -p {pid}` as root)");
        self.words().map_or_else(|| format!("run it under {} to see", run()), str::to_string)
    }

    /// The words of a hint that names no file or process (`None`: `RunIt`,
    /// which names one).
    fn words(self) -> Option<&'static str> {
        use crate::model::binary::BinaryHint as B;
        Some(match self {
            B::SmokeTest => "`vdsoctl check -- <smoke test>` shows whether the fallback runs ([vsyscall] rows)",
            B::RebuildVsyscall => "rebuild it against a current libc or runtime: only very old static binaries (old glibc, early Go) call the fixed addresses — in your own code, the call through 0xffffffffff600000… named above is what to remove",
            B::ClocksThroughLibc => "read clocks through the C library's clock_gettime()/gettimeofday() (the vDSO), not syscall() or an inline syscall",
            B::RandomThroughLibc => "call getrandom() (or arc4random()) of the C library, not syscall(SYS_getrandom): it reads the vDSO",
            B::Damaged => "the file is damaged (a partial copy or download): restore it from its package or build",
            B::Altered => "the file is damaged or was altered after linking: restore it from its package or build",
            B::RebuildStaticGlibc => "rebuild against glibc ≥ 2.31, or link dynamically",
            B::MuslNeedsDtHash => "use a kernel whose vDSO keeps DT_HASH, or a glibc-based image",
            B::AuditNatively => "expected under an emulator or instrumenter; audit the program run natively",
            B::RunIt => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::model::binary::BinaryHint;

    /// An unreadable site's cause and fix: not dumpable, and root names it
    /// with any engine (moved here from tests/cli/consumers.rs).
    #[test]
    fn an_unreadable_site_says_why_and_what_names_it() {
        use crate::model::site::{Fix, SiteClass};
        let fix = Fix {
            class: SiteClass::Unreadable,
            fallback: None,
            what: "CLOCK_MONOTONIC".into(),
            func: crate::arch::VdsoFn::ClockGettime,
            who: None,
            clocksource: None,
            engine: crate::progress::Kind::Bpf,
        };
        let (cause, hint) = (fix.cause(), fix.to_string());
        assert!(cause.contains("it is not dumpable"), "{cause}");
        assert!(hint.contains("CAP_SYS_PTRACE") && !hint.contains("--engine seccomp"), "{hint}");
    }

    /// The advice on bypassed calls, worded as it pastes: each command
    /// shell-quoted, the [vsyscall] caller's program and audit named, no
    /// raw syscall() to look for where there is none (moved here from
    /// tests/cli/audit.rs: words are tested where they live).
    #[test]
    fn leads_paste_as_they_read() {
        use crate::model::lead::{Advice, Lead, VsyscallCaller};
        use crate::progress::Target;
        let caller =
            |exe: Option<&str>, pid: i32| Advice::Vsyscall(VsyscallCaller { exe: exe.map(str::to_string), pid });
        let cmd = Target::Command { argv: vec!["./raw loop".into(), "5000".into(), "it's".into()], pid: 7 };
        let shown = Advice::RawSyscalls(Lead::of(&cmd, false, 7));
        assert!(
            shown.to_string().starts_with(r#"`vdsoctl trace --sites -- './raw loop' 5000 "it's"` names"#),
            "{shown}"
        );
        let argv = shown.command().unwrap();
        assert_eq!(argv, ["vdsoctl", "trace", "--sites", "--", "./raw loop", "5000", "it's"]);
        assert!(Advice::RawSyscalls(Lead::Pid(42)).to_string().starts_with("`vdsoctl trace --sites -p 42` names"));
        let v = caller(Some("/opt/old app/legacy"), 42);
        assert_eq!(v.command().unwrap(), ["vdsoctl", "check", "--image", "/opt/old app"]);
        let v = v.to_string();
        assert!(v.starts_with("legacy code calling the fixed [vsyscall] address"), "{v}");
        assert!(v.contains("rebuild `/opt/old app/legacy` against"), "{v}");
        assert!(v.ends_with("`vdsoctl check --image '/opt/old app'` names the function that calls it"), "{v}");
        assert!(!v.contains("raw syscall"), "{v}");
        let v = caller(None, 42);
        assert_eq!(v.command().unwrap(), ["vdsoctl", "check", "-p", "42"]);
        assert!(v.to_string().ends_with("`vdsoctl check -p 42` names the binary and function while it runs"), "{v}");
        let shown = Advice::RawSyscalls(Lead::Shown);
        assert!(shown.to_string().starts_with("the call sites below name"));
        assert!(!shown.to_string().contains("vdsoctl trace --sites"), "{shown}");
        assert_eq!(shown.command(), None);
        let both = Advice::of(Lead::Pid(7), true, Some(VsyscallCaller { exe: None, pid: 7 }));
        assert_eq!(both.command().unwrap(), ["vdsoctl", "trace", "--sites", "-p", "7"]);
        let both = both.to_string();
        assert!(both.starts_with("`vdsoctl trace --sites -p 7` names the code that makes them"), "{both}");
        assert!(both.contains("; the [vsyscall] calls are legacy code calling"), "{both}");
    }

    #[test]
    fn a_binary_hint_names_the_file_or_the_process_it_is_for() {
        let file = BinaryHint::RunIt.for_file("/opt/my tools/bare");
        assert_eq!(file, "run it under `vdsoctl check -- '/opt/my tools/bare'` (or `check -p PID` as root) to see");
        assert!(BinaryHint::RunIt.for_process(42).contains("(or `check -p 42` as root)"));
        // The others name neither, so both forms say the same words.
        for h in [BinaryHint::Damaged, BinaryHint::RebuildStaticGlibc, BinaryHint::ClocksThroughLibc] {
            assert_eq!(h.for_file("/x"), h.for_process(1));
        }
        assert_eq!(BinaryHint::RebuildStaticGlibc.for_file("/x"), "rebuild against glibc ≥ 2.31, or link dynamically");
    }

    /// Issue 40: model/lead.rs is the policy of where a finding leads; its
    /// code (its tests aside) holds no sentence: `render/hint.rs` words it.
    #[test]
    fn model_lead_holds_no_prose() {
        let prose = crate::render::prose::prose(include_str!("../model/lead.rs"));
        assert!(prose.is_empty(), "prose in model/lead.rs: {prose:?}");
    }
}
