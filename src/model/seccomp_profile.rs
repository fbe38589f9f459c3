//! `check --seccomp-profile FILE`: a Docker/OCI seccomp profile judged for
//! the syscalls the vDSO falls back to. Allowlists recorded from traces
//! never see them (the vDSO hides them), so the process is killed or gets
//! an error the day the fallback happens.
//!
//! Per architecture the profile covers (its `archMap` or `architectures`;
//! the host's ABI and its compat ABI when it names none), every function
//! that ABI's vDSO offers ([`Abi::vdso_syscalls`] ∩ [`Abi::vdso_offers`])
//! and, where the vDSO offers getrandom, `mmap` (glibc 2.41 maps the
//! per-thread getrandom state with `MAP_DROPPABLE`) is looked up as
//! runc/crun apply the profile: the first rule naming it for that
//! architecture without argument conditions decides; rules with conditions
//! allow only some calls (the rest get `defaultAction`), or refuse some
//! (whatever allows the rest); no rule means `defaultAction`. Killed,
//! trapped, errored or traced (ENOSYS without a tracer) is FAIL; only for
//! some arguments (allowed or refused), or left to a notify agent, is
//! WARN; allowed or logged is OK. `includes`/`excludes` are applied as
//! moby does ([`applies`]: arches, caps against the default set,
//! `minKernel` against the host's release).
//!
//! Issue 40: no sentence here. Each row is a typed [`SeccompFact`] with
//! its data (the action, the syscall, the arch, the clocks refused, the
//! conditions, when the fallback happens); render/seccomp.rs words it.

use super::Status;
use crate::arch::{Abi, ClockClass, FnKind, VdsoFn, CLOCKS, HOST_ABI};
use crate::measure::sys::seccomp::{Insn, Notification};
use crate::measure::trace::engines::seccomp::own;
use crate::model::kind::Kind;
use serde_json::Value;

/// An action of a profile that refuses a call (`SCMP_ACT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileAction {
    /// `SCMP_ACT_ERRNO` with the errno it returns.
    Errno(i64),
    /// `SCMP_ACT_TRACE`: ENOSYS without a tracer.
    Trace,
    Kill,
    KillThread,
    KillProcess,
    Trap,
}

/// A filter's return value that refuses a call (`SECCOMP_RET_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterAction {
    /// `SECCOMP_RET_TRACE`: ENOSYS without a tracer.
    Trace,
    /// `SECCOMP_RET_ERRNO` with its errno.
    Errno(u32),
    /// `SECCOMP_RET_TRAP`: SIGSYS.
    Trap,
    KillThread,
    KillProcess,
    /// An action no `SECCOMP_RET_*` names: the kernel kills.
    Other(u32),
}

/// What refuses a call: a profile's action, or a live filter's with the
/// clocks it refuses when it refuses only some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Profile(ProfileAction),
    /// `by_ip`: the filters read the call's instruction pointer and refuse
    /// it from some of the addresses it may be made from (vdsoctl does not
    /// know which the process's code uses): see [`CANDIDATE_IPS`].
    Filter {
        action: FilterAction,
        clocks: Vec<&'static str>,
        by_ip: bool,
    },
}

/// A comparison of a rule's argument condition (`SCMP_CMP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `SCMP_CMP_MASKED_EQ`: `arg & mask == value`.
    MaskedEq,
    /// An op no runtime knows.
    Unknown,
}

/// One argument condition of a rule: `arg{index} {op} {value}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition {
    pub index: u64,
    pub op: CmpOp,
    pub value: u64,
    /// `valueTwo`: the mask of `SCMP_CMP_MASKED_EQ`.
    pub mask: u64,
}

/// What the profile does to one syscall on one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Only calls whose arguments match one of these rules (each all of
    /// its conditions) are allowed.
    OnlySome(Vec<Vec<Condition>>),
    /// The action that refuses it.
    Refused(Refusal),
    /// Decided by a user-space agent (`SCMP_ACT_NOTIFY`).
    Agent,
    /// Refused (`refusal`) for the calls matching one of these rules (each
    /// all of its conditions): `clock_gettime` KILLed when arg0 ==
    /// CLOCK_REALTIME. At least WARN; the rest as the other rules say.
    RefusedWhen {
        refusal: Refusal,
        rules: Vec<Vec<Condition>>,
    },
}

/// A profile that does not parse as one, or a filter not judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadProfile {
    /// Not an object with `syscalls` an array.
    NotAProfile,
    NoDefaultAction,
    /// A rule naming this syscall has no action.
    NoAction(String),
    /// An action no runtime knows.
    UnknownAction(String),
    /// No vDSO function behind this fallback syscall.
    NoFunction(String),
    /// No syscall number for it on this ABI.
    NoNumber(String, Abi),
    /// A filter holds an instruction vdsoctl's interpreter does not run.
    UnrunnableInsn,
}

/// The ABI of a libseccomp (`SCMP_ARCH_X86_64`) or Go (`amd64`) arch name.
fn abi_of(name: &str) -> Option<Abi> {
    match name.trim_start_matches("SCMP_ARCH_").to_ascii_lowercase().as_str() {
        "x86_64" | "amd64" => Some(Abi::X86_64),
        "x86" | "386" | "i386" => Some(Abi::I386),
        "aarch64" | "arm64" => Some(Abi::Aarch64),
        "arm" => Some(Abi::Arm),
        "riscv64" => Some(Abi::Riscv64),
        "ppc64le" | "ppc64" => Some(Abi::Ppc64),
        "s390x" => Some(Abi::S390x),
        _ => None,
    }
}

/// The ABIs the profile covers, in a stable order, and the arch names it
/// gives that vdsoctl does not judge.
fn abis(profile: &Value) -> (Vec<Abi>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    for m in profile["archMap"].as_array().into_iter().flatten() {
        names.extend(m["architecture"].as_str().map(str::to_string));
        names.extend(
            m["subArchitectures"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)),
        );
    }
    names
        .extend(profile["architectures"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)));
    if names.is_empty() {
        let host: Vec<Abi> = HOST_ABI.into_iter().chain(HOST_ABI.and_then(Abi::compat)).collect();
        return (host, Vec::new());
    }
    let mut abis: Vec<Abi> = names.iter().filter_map(|n| abi_of(n)).collect();
    abis.sort();
    abis.dedup();
    let mut other: Vec<String> = names.into_iter().filter(|n| abi_of(n).is_none()).collect();
    other.sort();
    other.dedup();
    (abis, other)
}

/// The capabilities a container gets unless told otherwise (moby's and
/// podman's default set): what `includes.caps` / `excludes.caps` are
/// judged against.
pub const DEFAULT_CAPS: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

/// Whether `rule` applies to `abi` on a kernel of release `kernel`, as
/// moby (`profiles/seccomp`) and the OCI runtimes apply a profile:
/// `excludes` first (its arch, any of its caps held, a `minKernel` the
/// kernel reaches skip the rule), then `includes` (its arches, all of its
/// caps held, a `minKernel` the kernel reaches). Caps are the default set
/// ([`DEFAULT_CAPS`]): a rule that needs another is not counted on. An
/// unknown kernel release reaches no `minKernel`.
fn applies(rule: &Value, abi: Abi, kernel: Option<(u32, u32)>) -> bool {
    let arches = |v: &Value| -> Vec<Option<Abi>> {
        v["arches"].as_array().into_iter().flatten().filter_map(|a| a.as_str()).map(abi_of).collect()
    };
    let caps = |v: &Value| -> Vec<String> {
        v["caps"].as_array().into_iter().flatten().filter_map(|c| c.as_str()).map(|c| c.to_ascii_uppercase()).collect()
    };
    let held = |c: &String| DEFAULT_CAPS.iter().any(|d| *d == c || d.strip_prefix("CAP_") == Some(c.as_str()));
    let reached = |v: &Value| match v["minKernel"].as_str() {
        Some(min) => match (crate::inspect::kernel::parse_version(min), kernel) {
            (Some(min), Some(k)) => Some(k >= min),
            _ => Some(false),
        },
        None => None,
    };
    let (inc, exc) = (&rule["includes"], &rule["excludes"]);
    if arches(exc).contains(&Some(abi)) || caps(exc).iter().any(held) || reached(exc) == Some(true) {
        return false;
    }
    let inc_arches = arches(inc);
    if !inc_arches.is_empty() && !inc_arches.contains(&Some(abi)) {
        return false;
    }
    caps(inc).iter().all(held) && reached(inc) != Some(false)
}

/// An action's verdict; Err for an action no runtime knows.
fn action(act: &str, errno: Option<i64>) -> Result<Verdict, BadProfile> {
    use ProfileAction as A;
    let refused = |a| Verdict::Refused(Refusal::Profile(a));
    Ok(match act {
        "SCMP_ACT_ALLOW" | "SCMP_ACT_LOG" => Verdict::Allowed,
        "SCMP_ACT_NOTIFY" => Verdict::Agent,
        "SCMP_ACT_ERRNO" => refused(A::Errno(errno.unwrap_or(i64::from(libc::EPERM)))),
        "SCMP_ACT_TRACE" => refused(A::Trace),
        "SCMP_ACT_KILL" => refused(A::Kill),
        "SCMP_ACT_KILL_THREAD" => refused(A::KillThread),
        "SCMP_ACT_KILL_PROCESS" => refused(A::KillProcess),
        "SCMP_ACT_TRAP" => refused(A::Trap),
        other => return Err(BadProfile::UnknownAction(other.to_string())),
    })
}

/// What `profile` does to syscall `name` on `abi`, the kernel's release
/// unknown (no `minKernel` reached).
pub fn judge(profile: &Value, abi: Abi, name: &str) -> Result<Verdict, BadProfile> {
    judge_on(profile, abi, name, None)
}

/// [`judge`] on a kernel of release `kernel` (`includes.minKernel`).
/// A rule with argument conditions that refuses (KILL when arg0 ==
/// CLOCK_REALTIME) refuses the calls it matches whatever allows the rest:
/// [`Verdict::RefusedWhen`], naming its conditions.
pub fn judge_on(profile: &Value, abi: Abi, name: &str, kernel: Option<(u32, u32)>) -> Result<Verdict, BadProfile> {
    let default_errno = profile["defaultErrnoRet"].as_i64();
    let default = profile["defaultAction"].as_str().ok_or(BadProfile::NoDefaultAction)?;
    let mut conditional = Vec::new();
    let mut denied: Option<(Refusal, Vec<Vec<Condition>>)> = None;
    let mut base = None;
    for rule in profile["syscalls"].as_array().into_iter().flatten() {
        let named = rule["names"].as_array().into_iter().flatten().any(|n| n == name) || rule["name"] == name;
        if !named || !applies(rule, abi, kernel) {
            continue;
        }
        let act = rule["action"].as_str().ok_or_else(|| BadProfile::NoAction(name.to_string()))?;
        let verdict = action(act, rule["errnoRet"].as_i64().or(default_errno))?;
        match (rule["args"].as_array().filter(|a| !a.is_empty()), verdict) {
            (None, verdict) => {
                base = Some(verdict);
                break;
            }
            (Some(args), Verdict::Allowed) => conditional.push(conditions(args)),
            (Some(args), Verdict::Refused(r)) => {
                let (_, rules) = denied.get_or_insert_with(|| (r, Vec::new()));
                rules.push(conditions(args));
            }
            (Some(_), Verdict::Agent | Verdict::OnlySome(_) | Verdict::RefusedWhen { .. }) => {}
        }
    }
    let verdict = match base {
        Some(v) => v,
        None => {
            let fallback = action(default, default_errno)?;
            if !conditional.is_empty() && fallback != Verdict::Allowed {
                Verdict::OnlySome(conditional)
            } else {
                fallback
            }
        }
    };
    Ok(match (denied, verdict) {
        (_, refused @ Verdict::Refused(_)) => refused,
        (Some((refusal, rules)), _) => Verdict::RefusedWhen { refusal, rules },
        (None, v) => v,
    })
}

/// A rule's args, as conditions.
fn conditions(args: &[Value]) -> Vec<Condition> {
    let op = |o: &str| match o {
        "SCMP_CMP_EQ" => CmpOp::Eq,
        "SCMP_CMP_NE" => CmpOp::Ne,
        "SCMP_CMP_LT" => CmpOp::Lt,
        "SCMP_CMP_LE" => CmpOp::Le,
        "SCMP_CMP_GT" => CmpOp::Gt,
        "SCMP_CMP_GE" => CmpOp::Ge,
        "SCMP_CMP_MASKED_EQ" => CmpOp::MaskedEq,
        _ => CmpOp::Unknown,
    };
    args.iter()
        .map(|a| Condition {
            index: a["index"].as_u64().unwrap_or(0),
            op: op(a["op"].as_str().unwrap_or_default()),
            value: a["value"].as_u64().unwrap_or(0),
            mask: a["valueTwo"].as_u64().unwrap_or(0),
        })
        .collect()
}

/// When the vDSO falls back to a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// A clock function's: the clocksource unreadable from user space,
    /// CPU-time clocks, clock ids the vDSO does not know.
    Clock,
    /// getcpu's: the CPU number unreadable from user space.
    Cpu,
    /// getrandom's: its key refill (and every call on older libcs/kernels).
    Random,
    /// `mmap` for glibc 2.41's `MAP_DROPPABLE` getrandom state.
    DroppableMmap,
    /// A robust-futex unlock's: the lock has waiters to wake.
    Futex,
}

/// A syscall the vDSO falls back to, and when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback {
    pub call: &'static str,
    pub when: When,
}

/// When the vDSO falls back to `f`'s syscall.
fn when(f: VdsoFn) -> When {
    match f.kind() {
        FnKind::Clock => When::Clock,
        FnKind::Cpu => When::Cpu,
        FnKind::Random => When::Random,
        FnKind::Futex => When::Futex,
    }
}

/// The syscalls the vDSO of `abi` falls back to, each with when it does:
/// every function that ABI's vDSO offers and, where it offers getrandom,
/// `mmap` (`mmap2` on 32-bit) for glibc 2.41's `MAP_DROPPABLE` state.
pub fn fallbacks(abi: Abi) -> Vec<Fallback> {
    let mut calls: Vec<Fallback> = abi
        .vdso_syscalls()
        .iter()
        .filter(|(f, _)| abi.vdso_offers(*f))
        // Not yet the robust-futex unlock's `futex` (7.2+): a profile is
        // judged on a call's number and clock id, and a futex call's op
        // decides whether it is that fallback; no profile denies futex to
        // a program that runs at all.
        .filter(|(f, _)| f.futex_op().is_none())
        .map(|(f, _)| Fallback { call: f.syscall_name(), when: when(*f) })
        .collect();
    if abi.vdso_offers(VdsoFn::Getrandom) {
        calls.push(Fallback { call: abi.mmap_syscall().0, when: When::DroppableMmap });
    }
    calls
}

/// Who decides: a profile file or a live filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `check --seccomp-profile FILE`: the rest of a conditional allow get `defaultAction`.
    Profile,
    /// `check -p`: the filter the process runs under; the rest are refused.
    Live,
}

impl Source {
    /// The rows' name prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            Source::Profile => "seccomp_profile",
            Source::Live => "process_seccomp",
        }
    }
}

/// Why a process's filters were not judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unjudged {
    /// vdsoctl lacks CAP_SYS_ADMIN.
    NeedsRoot,
    /// vdsoctl runs under seccomp itself, and the kernel refuses the read
    /// to a filtered tracer.
    FilteredTracer,
    /// The read failed: the error's words.
    Unreadable(String),
    /// The process's ABI has no syscall table here.
    NoAbi,
    /// Read, but not judged.
    Bad(BadProfile),
}

/// One seccomp row, as data: render/seccomp.rs words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeccompFact {
    /// A fallback syscall refused, allowed only for some arguments, or
    /// left to a notify agent (`verdict` is never `Allowed`).
    Fallback { source: Source, abi: Abi, fallback: Fallback, verdict: Verdict },
    /// The fallback syscalls of `abi` allowed.
    Allows { source: Source, abi: Abi, calls: Vec<&'static str> },
    /// The profile's arch names vdsoctl has no syscall table for.
    OtherArches(Vec<String>),
    /// The process runs in seccomp strict mode.
    Strict,
    /// The process's `count` filters, not judged.
    Unjudged { count: u32, why: Unjudged },
    /// Threads under another seccomp mode or filter count than the main thread.
    OtherThreads(usize),
}

/// `process_seccomp`: the row name of a process's mode or its unjudged filters.
pub const PROCESS_SECCOMP: &str = "process_seccomp";

impl SeccompFact {
    /// The row's name.
    pub fn name(&self) -> String {
        match self {
            SeccompFact::Fallback { source, abi, fallback, .. } => {
                format!("{}:{}:{}", source.prefix(), abi.name(), fallback.call)
            }
            SeccompFact::Allows { source, abi, .. } => format!("{}:{}", source.prefix(), abi.name()),
            SeccompFact::OtherArches(_) => "seccomp_profile:other_arches".into(),
            SeccompFact::Strict | SeccompFact::Unjudged { .. } => PROCESS_SECCOMP.into(),
            SeccompFact::OtherThreads(_) => "process_seccomp:other_threads".into(),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            SeccompFact::Fallback { verdict: Verdict::Refused(_), .. } => Kind::SeccompDeniesFallback,
            SeccompFact::Fallback { .. } => Kind::SeccompConditional,
            SeccompFact::Allows { .. } => Kind::SeccompAllows,
            SeccompFact::OtherArches(_) => Kind::SeccompArchUnknown,
            SeccompFact::Strict => Kind::SeccompStrict,
            SeccompFact::Unjudged { .. } => Kind::SeccompUnread,
            SeccompFact::OtherThreads(_) => Kind::SeccompOtherThreads,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            SeccompFact::Fallback { verdict: Verdict::Refused(_), .. } | SeccompFact::Strict => Status::Fail,
            SeccompFact::Fallback { .. } => Status::Warn,
            SeccompFact::Allows { .. } => Status::Ok,
            SeccompFact::OtherArches(_) | SeccompFact::Unjudged { .. } | SeccompFact::OtherThreads(_) => Status::Info,
        }
    }
}

/// The one judge of both the profile and the live filter: per fallback
/// syscall of `abi`, a fact for each refused (with when the fallback
/// happens) and one for the rest, allowed.
pub fn facts(
    source: Source,
    abi: Abi,
    mut judge: impl FnMut(&str) -> Result<Verdict, BadProfile>,
) -> Result<Vec<SeccompFact>, BadProfile> {
    let (mut out, mut ok) = (Vec::new(), Vec::new());
    for fallback in fallbacks(abi) {
        match judge(fallback.call)? {
            Verdict::Allowed => ok.push(fallback.call),
            verdict => out.push(SeccompFact::Fallback { source, abi, fallback, verdict }),
        }
    }
    if !ok.is_empty() {
        out.push(SeccompFact::Allows { source, abi, calls: ok });
    }
    Ok(out)
}

/// The facts of a profile file, per ABI it covers, on a kernel of release
/// `kernel` (the host's: `includes.minKernel` and `excludes.minKernel`).
pub fn checks(profile: &Value, kernel: Option<(u32, u32)>) -> Result<Vec<SeccompFact>, BadProfile> {
    if !profile.is_object() || !profile["syscalls"].is_array() && !profile["syscalls"].is_null() {
        return Err(BadProfile::NotAProfile);
    }
    let (abis, other) = abis(profile);
    let mut out = Vec::new();
    for abi in abis {
        out.extend(facts(Source::Profile, abi, |name| judge_on(profile, abi, name, kernel))?);
    }
    if !other.is_empty() {
        out.push(SeccompFact::OtherArches(other));
    }
    Ok(out)
}

/// What reading a process's filters found.
#[derive(Debug)]
pub enum LiveFilters {
    /// Its programs (the kernel runs them all and takes the most
    /// restrictive action).
    Read(Vec<Vec<Insn>>),
    /// vdsoctl lacks CAP_SYS_ADMIN: PTRACE_SECCOMP_GET_FILTER needs it.
    NeedsRoot,
    /// vdsoctl itself runs under seccomp: the kernel refuses
    /// PTRACE_SECCOMP_GET_FILTER to a filtered tracer.
    FilteredTracer,
    /// The read failed (the process went away, ptrace refused...): the
    /// error, as its Display says it.
    Unreadable(String),
    /// Not read: the process is not in filter mode.
    NotFiltered,
}

/// `check -p`: the process's seccomp mode, judged. Strict mode allows only
/// read, write, _exit and sigreturn: the first fallback kills it. Filters,
/// read as root, are run on each fallback syscall of the process's ABI
/// and judged by [`facts`], as a profile is; unread, they are INFO.
pub fn live_checks(mode: u8, count: u32, abi: Option<Abi>, filters: LiveFilters) -> Vec<SeccompFact> {
    let unjudged = |why| vec![SeccompFact::Unjudged { count, why }];
    match (mode, filters, abi) {
        (1, ..) => vec![SeccompFact::Strict],
        (2, LiveFilters::NeedsRoot, _) => unjudged(Unjudged::NeedsRoot),
        (2, LiveFilters::FilteredTracer, _) => unjudged(Unjudged::FilteredTracer),
        (2, LiveFilters::Unreadable(e), _) => unjudged(Unjudged::Unreadable(e)),
        (2, LiveFilters::NotFiltered, _) => unjudged(Unjudged::Unreadable(String::new())),
        (2, LiveFilters::Read(_), None) => unjudged(Unjudged::NoAbi),
        (2, LiveFilters::Read(progs), Some(abi)) => facts(Source::Live, abi, |call| live_verdict(&progs, abi, call))
            .unwrap_or_else(|e| unjudged(Unjudged::Bad(e))),
        _ => Vec::new(),
    }
}

/// The threads whose seccomp mode or filter count differs from the main
/// thread's (filters installed without TSYNC): theirs were not read, so
/// the rows above speak for the main thread only.
pub fn other_threads(n: usize) -> Option<SeccompFact> {
    (n > 0).then_some(SeccompFact::OtherThreads(n))
}

/// What the filters `progs` do to the fallback syscall `call` of `abi`:
/// run on the `seccomp_data` the fallback would carry (arguments 0; each
/// clock id the vDSO serves for a clock function; glibc's
/// `MAP_DROPPABLE` mapping for mmap), the most restrictive action wins.
fn live_verdict(progs: &[Vec<Insn>], abi: Abi, call: &str) -> Result<Verdict, BadProfile> {
    const ANON_DROPPABLE: u64 = 0x02 | 0x20 | 0x08; // MAP_PRIVATE | MAP_ANONYMOUS | MAP_DROPPABLE
    let no_fd = if abi.elf().1 { u64::MAX } else { u64::from(u32::MAX) };
    let (nr, datas): (i64, Vec<Probe>) = if call == abi.mmap_syscall().0 {
        (abi.mmap_syscall().1, vec![(None, [0, 4096, 3, ANON_DROPPABLE, no_fd, 0])])
    } else {
        let f = VdsoFn::from_name(call).ok_or_else(|| BadProfile::NoFunction(call.to_string()))?;
        let nr = abi.syscall_nr(f).ok_or_else(|| BadProfile::NoNumber(call.to_string(), abi))?;
        let clocks = CLOCKS.iter().filter(|c| c.class != ClockClass::AlwaysSyscall);
        let datas = if f.takes_clock() {
            clocks.map(|c| (Some(c.name), [c.id as u64, 0, 0, 0, 0, 0])).collect()
        } else {
            vec![(None, [0; 6])]
        };
        (nr, datas)
    };
    let (mut refused, mut agent, tried) = (Vec::<(FilterAction, Option<&'static str>)>::new(), false, datas.len());
    // A filter that reads `instruction_pointer` is run from every address
    // the call may come from; one that does not, from one (it cannot tell).
    let reads_ip = progs.iter().flatten().any(|i| i.code == LD_W_ABS && (i.k == DATA_IP || i.k == DATA_IP + 4));
    let ips = if reads_ip { candidate_ips(abi) } else { &[0][..] };
    for (clock, args) in datas {
        let mut worst = RET_ALLOW;
        for &ip in ips {
            let n = Notification { id: 0, tid: 0, nr: nr as i32, arch: abi.audit_arch(), ip, args };
            let ret = progs
                .iter()
                .map(|p| own::run(p, &n))
                .try_fold(RET_ALLOW, |a, r| r.map(|r| if own::outranks(r, a) { r } else { a }))
                .ok_or(BadProfile::UnrunnableInsn)?;
            if own::outranks(ret, worst) {
                worst = ret;
            }
        }
        match live_action(worst) {
            Live::Allowed => {}
            Live::Agent => agent = true,
            Live::Refused(act) => refused.push((act, clock)),
        }
    }
    if let Some((action, _)) = refused.first() {
        // Name the clocks when only some are refused.
        let clocks: Vec<&'static str> = refused.iter().filter_map(|(_, c)| *c).collect();
        let some = !clocks.is_empty() && refused.len() < tried;
        let clocks = if some { clocks } else { Vec::new() };
        return Ok(Verdict::Refused(Refusal::Filter { action: *action, clocks, by_ip: reads_ip }));
    }
    Ok(if agent { Verdict::Agent } else { Verdict::Allowed })
}

/// `BPF_LD | BPF_W | BPF_ABS`, and `offsetof(struct seccomp_data,
/// instruction_pointer)` (its low word; the high word is 4 further).
const LD_W_ABS: u16 = 0x20;
const DATA_IP: u32 = 8;

/// The addresses a fallback syscall may be made from, by the layouts the
/// kernel gives (the real one is the process's code, which a filter read
/// does not show): a non-PIE program's text, a PIE's, shared objects and
/// the vDSO near the top of user space, and the `[vsyscall]` page.
pub const CANDIDATE_IPS: &[u64] = &[0x40_1000, 0x5555_5555_5000, 0x7fff_f7fc_1000, 0xffff_ffff_ff60_0000];
const CANDIDATE_IPS_32: &[u64] = &[0x0804_9000, 0x5655_6000, 0xf7fc_1000];

fn candidate_ips(abi: Abi) -> &'static [u64] {
    if abi.elf().1 {
        CANDIDATE_IPS
    } else {
        CANDIDATE_IPS_32
    }
}

/// One call a fallback makes: the clock it reads (if any) and its arguments.
type Probe = (Option<&'static str>, [u64; 6]);

/// `SECCOMP_RET_ALLOW`.
const RET_ALLOW: u32 = 0x7fff_0000;

/// What one filter run decides.
enum Live {
    Allowed,
    Agent,
    Refused(FilterAction),
}

/// The verdict of a filter's return value (`SECCOMP_RET_*`).
fn live_action(ret: u32) -> Live {
    let data = ret & 0xffff;
    match ret & 0xffff_0000 {
        0x7fff_0000 | 0x7ffc_0000 => Live::Allowed,
        0x7fc0_0000 => Live::Agent,
        0x7ff0_0000 => Live::Refused(FilterAction::Trace),
        0x0005_0000 => Live::Refused(FilterAction::Errno(data)),
        0x0003_0000 => Live::Refused(FilterAction::Trap),
        0x0000_0000 => Live::Refused(FilterAction::KillThread),
        0x8000_0000 => Live::Refused(FilterAction::KillProcess),
        other => Live::Refused(FilterAction::Other(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_by_arch_args_and_caps() {
        let p = serde_json::json!({
            "defaultAction": "SCMP_ACT_KILL_PROCESS",
            "syscalls": [
                { "names": ["clock_gettime"], "action": "SCMP_ACT_ALLOW",
                  "args": [{ "index": 0, "value": 1, "op": "SCMP_CMP_EQ" }] },
                { "names": ["time"], "action": "SCMP_ACT_ALLOW", "includes": { "arches": ["arm64"] } },
                { "names": ["getcpu"], "action": "SCMP_ACT_ALLOW", "includes": { "caps": ["CAP_SYS_NICE"] } },
                { "names": ["getrandom"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1 },
                { "names": ["gettimeofday"], "action": "SCMP_ACT_NOTIFY" },
                { "names": ["mmap"], "action": "SCMP_ACT_LOG" }
            ]
        });
        let j = |name| judge(&p, Abi::X86_64, name).unwrap();
        let kill = Verdict::Refused(Refusal::Profile(ProfileAction::KillProcess));
        let arg0_is_1 = Condition { index: 0, op: CmpOp::Eq, value: 1, mask: 0 };
        assert_eq!(j("clock_gettime"), Verdict::OnlySome(vec![vec![arg0_is_1]]));
        assert_eq!(j("time"), kill);
        assert_eq!(judge(&p, Abi::Aarch64, "time").unwrap(), Verdict::Allowed);
        assert_eq!(j("getcpu"), kill, "a capability is not counted on");
        assert_eq!(j("getrandom"), Verdict::Refused(Refusal::Profile(ProfileAction::Errno(1))));
        assert_eq!(j("gettimeofday"), Verdict::Agent);
        assert_eq!(j("mmap"), Verdict::Allowed);
        // Without `architectures`, the rows are the host's ABIs (the kernel
        // matrix runs these tests on arm64 too).
        let rows = checks(&p, None).unwrap();
        let host = HOST_ABI.expect("a known host ABI").name();
        let warn: Vec<_> = rows.iter().filter(|c| c.status() == Status::Warn).map(SeccompFact::name).collect();
        assert!(warn.contains(&format!("seccomp_profile:{host}:clock_gettime")), "{rows:?}");
        assert!(warn.contains(&format!("seccomp_profile:{host}:gettimeofday")), "{rows:?}");
    }

    /// Issue 42: a conditional rule that refuses is judged (at least WARN,
    /// naming its condition), whatever allows the rest; `includes` and
    /// `excludes` (minKernel, caps, arches) are applied as moby applies them.
    #[test]
    fn conditional_denials_and_includes_excludes() {
        let p = serde_json::json!({
            "defaultAction": "SCMP_ACT_ALLOW",
            "syscalls": [
                { "names": ["clock_gettime"], "action": "SCMP_ACT_KILL",
                  "args": [{ "index": 0, "value": 0, "op": "SCMP_CMP_EQ" }] },
                { "names": ["clock_getres"], "action": "SCMP_ACT_ERRNO", "includes": { "minKernel": "4.8" } },
                { "names": ["time"], "action": "SCMP_ACT_KILL", "excludes": { "caps": ["CAP_KILL"] } },
                { "names": ["getcpu"], "action": "SCMP_ACT_KILL", "excludes": { "caps": ["CAP_SYS_ADMIN"] } },
                { "names": ["gettimeofday"], "action": "SCMP_ACT_KILL", "excludes": { "minKernel": "5.0" } },
                { "names": ["getrandom"], "action": "SCMP_ACT_KILL", "includes": { "caps": ["CAP_SETUID"] } }
            ]
        });
        let on = |k, name| judge_on(&p, Abi::X86_64, name, k).unwrap();
        let kill = Verdict::Refused(Refusal::Profile(ProfileAction::Kill));
        let realtime = Condition { index: 0, op: CmpOp::Eq, value: 0, mask: 0 };
        assert_eq!(
            on(Some((6, 1)), "clock_gettime"),
            Verdict::RefusedWhen { refusal: Refusal::Profile(ProfileAction::Kill), rules: vec![vec![realtime]] }
        );
        assert_eq!(on(Some((6, 1)), "clock_getres"), Verdict::Refused(Refusal::Profile(ProfileAction::Errno(1))));
        assert_eq!(on(Some((4, 4)), "clock_getres"), Verdict::Allowed, "below minKernel the rule is not there");
        assert_eq!(on(Some((6, 1)), "time"), Verdict::Allowed, "excluded: the default caps hold CAP_KILL");
        assert_eq!(on(Some((6, 1)), "getcpu"), kill, "CAP_SYS_ADMIN is not a default cap");
        assert_eq!(on(Some((6, 1)), "gettimeofday"), Verdict::Allowed);
        assert_eq!(on(Some((4, 19)), "gettimeofday"), kill);
        assert_eq!(on(Some((6, 1)), "getrandom"), kill, "CAP_SETUID is a default cap");
        let row = SeccompFact::Fallback {
            source: Source::Profile,
            abi: Abi::X86_64,
            fallback: Fallback { call: "clock_gettime", when: When::Clock },
            verdict: on(Some((6, 1)), "clock_gettime"),
        };
        assert_eq!((row.kind(), row.status()), (Kind::SeccompConditional, Status::Warn));
    }

    /// A profile that is none, or names an action no runtime knows, is refused as data.
    #[test]
    fn bad_profiles_are_typed() {
        // The kernel matrix runs these unit tests in a guest without the
        // checkout and its tools: they need the build host's.
        if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        let bad = |v: Value| checks(&v, None).unwrap_err();
        assert_eq!(bad(serde_json::json!([1])), BadProfile::NotAProfile);
        assert_eq!(bad(serde_json::json!({ "syscalls": [] })), BadProfile::NoDefaultAction);
        let bogus = serde_json::json!({ "defaultAction": "SCMP_ACT_BOGUS", "syscalls": [] });
        assert_eq!(bad(bogus), BadProfile::UnknownAction("SCMP_ACT_BOGUS".into()));
        let no_action = serde_json::json!({ "defaultAction": "SCMP_ACT_KILL", "syscalls": [{ "names": ["getcpu"] }] });
        assert_eq!(bad(no_action), BadProfile::NoAction("getcpu".into()));
        let other = serde_json::json!({ "defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X32"] });
        assert_eq!(checks(&other, None).unwrap(), [SeccompFact::OtherArches(vec!["SCMP_ARCH_X32".into()])]);
    }

    /// The live judge runs every filter on the fallback's own arguments and
    /// keeps the most restrictive action: a filter refusing only
    /// CLOCK_MONOTONIC names it; TRACE (no tracer) and a KILL in a second
    /// filter refuse; mmap is judged with glibc's MAP_DROPPABLE flags.
    #[test]
    fn live_filters_run_on_the_fallbacks_arguments() {
        let insn = |code, jt, jf, k| Insn { code, jt, jf, k };
        let (ld_nr, ld_arg0, ld_arg3) = (insn(0x20, 0, 0, 0), insn(0x20, 0, 0, 16), insn(0x20, 0, 0, 40));
        let allow = insn(0x06, 0, 0, RET_ALLOW);
        // clock_gettime(CLOCK_MONOTONIC) → ERRNO(EPERM); mmap with MAP_DROPPABLE → TRACE.
        let first = vec![
            ld_nr,
            insn(0x15, 0, 3, 228),
            ld_arg0,
            insn(0x15, 0, 5, 1),
            insn(0x06, 0, 0, 0x0005_0001),
            insn(0x15, 0, 3, 9),
            ld_arg3,
            insn(0x45, 0, 1, 0x08),
            insn(0x06, 0, 0, 0x7ff0_0000),
            allow,
        ];
        // getcpu → KILL_PROCESS.
        let second = vec![ld_nr, insn(0x15, 0, 1, 309), insn(0x06, 0, 0, 0x8000_0000), allow];
        let progs = vec![first, second];
        let j = |name| live_verdict(&progs, Abi::X86_64, name).unwrap();
        let filter = |action, clocks: &[&'static str]| {
            Verdict::Refused(Refusal::Filter { action, clocks: clocks.to_vec(), by_ip: false })
        };
        assert_eq!(j("clock_gettime"), filter(FilterAction::Errno(1), &["CLOCK_MONOTONIC"]));
        assert_eq!(j("mmap"), filter(FilterAction::Trace, &[]));
        assert_eq!(j("getcpu"), filter(FilterAction::KillProcess, &[]));
        assert_eq!(j("gettimeofday"), Verdict::Allowed);
        let rows = live_checks(2, 2, Some(Abi::X86_64), LiveFilters::Read(progs.clone()));
        let fail: Vec<_> = rows.iter().filter(|c| c.status() == Status::Fail).collect();
        let names: Vec<_> = fail.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            ["process_seccomp:x86_64:clock_gettime", "process_seccomp:x86_64:getcpu", "process_seccomp:x86_64:mmap"]
        );
        assert!(fail.iter().all(|c| c.kind() == Kind::SeccompDeniesFallback));
        let unread = live_checks(2, 3, Some(Abi::X86_64), LiveFilters::NeedsRoot);
        assert_eq!(unread, [SeccompFact::Unjudged { count: 3, why: Unjudged::NeedsRoot }]);
        assert_eq!((unread[0].status(), unread[0].kind()), (Status::Info, Kind::SeccompUnread));
        assert_eq!(live_checks(1, 0, None, LiveFilters::NeedsRoot), [SeccompFact::Strict]);
        assert_eq!(live_checks(0, 0, None, LiveFilters::NeedsRoot), []);
        assert_eq!(other_threads(0), None);
        let threads = other_threads(2).map(|f| (f.name(), f.status()));
        assert_eq!(threads, Some(("process_seccomp:other_threads".to_string(), Status::Info)));
    }
}
