//! A seccomp verdict, worded: each [`SeccompFact`] model/seccomp_profile.rs
//! finds (`check --seccomp-profile`'s rows and `check -p`'s
//! `process_seccomp` rows), its hint, and a profile's refusal
//! ([`BadProfile`]), once.

use crate::model::check::Check;
use crate::model::seccomp_profile::{
    BadProfile, CmpOp, Condition, FilterAction, ProfileAction, Refusal, SeccompFact, Source, Unjudged, Verdict, When,
};
use std::fmt;

/// `EPERM`, or `errno 4000` for a number no errno names.
fn errno_name(n: i64) -> String {
    match i32::try_from(n) {
        Ok(n) if nix::errno::Errno::from_raw(n) != nix::errno::Errno::UnknownErrno => {
            format!("{:?}", nix::errno::Errno::from_raw(n))
        }
        _ => format!("errno {n}"),
    }
}

/// `SCMP_ACT_ERRNO (EPERM)`, `SCMP_ACT_KILL_PROCESS`.
impl fmt::Display for ProfileAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileAction::Errno(n) => write!(f, "SCMP_ACT_ERRNO ({})", errno_name(*n)),
            ProfileAction::Trace => f.write_str("SCMP_ACT_TRACE (ENOSYS without a tracer)"),
            ProfileAction::Kill => f.write_str("SCMP_ACT_KILL"),
            ProfileAction::KillThread => f.write_str("SCMP_ACT_KILL_THREAD"),
            ProfileAction::KillProcess => f.write_str("SCMP_ACT_KILL_PROCESS"),
            ProfileAction::Trap => f.write_str("SCMP_ACT_TRAP"),
        }
    }
}

/// `SECCOMP_RET_ERRNO (EPERM)`, `SECCOMP_RET_TRAP (SIGSYS)`.
impl fmt::Display for FilterAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterAction::Trace => f.write_str("SECCOMP_RET_TRACE (ENOSYS without a tracer)"),
            FilterAction::Errno(n) => write!(f, "SECCOMP_RET_ERRNO ({})", errno_name(i64::from(*n))),
            FilterAction::Trap => f.write_str("SECCOMP_RET_TRAP (SIGSYS)"),
            FilterAction::KillThread => f.write_str("SECCOMP_RET_KILL_THREAD"),
            FilterAction::KillProcess => f.write_str("SECCOMP_RET_KILL_PROCESS"),
            FilterAction::Other(a) => write!(f, "action {a:#x} (the kernel kills)"),
        }
    }
}

/// The action, and for a filter refusing only some clocks, which.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Profile(a) => a.fmt(f),
            Refusal::Filter { action, clocks, by_ip } => {
                action.fmt(f)?;
                if !clocks.is_empty() {
                    write!(f, " for {}", clocks.join(", "))?;
                }
                if *by_ip {
                    f.write_str(" from some of the addresses it may be made from (the filter reads the instruction pointer; the call's own is not known here)")?;
                }
                Ok(())
            }
        }
    }
}

/// `arg0 == 1`, `arg2 & 0x8 == 0x8`.
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (i, v) = (self.index, self.value);
        let op = match self.op {
            CmpOp::MaskedEq => return write!(f, "arg{i} & {:#x} == {v:#x}", self.mask),
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Unknown => "?",
        };
        write!(f, "arg{i} {op} {v}")
    }
}

/// `arg0 == 1 and arg2 & 0x8 == 0x8 or arg0 >= 5`: each rule's conditions.
fn rules_text(rules: &[Vec<Condition>]) -> String {
    let rule = |r: &Vec<Condition>| r.iter().map(Condition::to_string).collect::<Vec<_>>().join(" and ");
    rules.iter().map(rule).collect::<Vec<_>>().join(" or ")
}

/// When the vDSO makes the syscall.
impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            When::Clock => {
                "the vDSO makes it when the clocksource cannot be read from user space (a switch to hpet or acpi_pm, \
                 common on VMs after a TSC warning), for CPU-time clocks and for clock ids it does not know"
            }
            When::Cpu => "the vDSO makes it where the CPU number cannot be read from user space",
            When::Random => {
                "the vDSO makes it to refill its key (a thread's first call, after fork, periodically); glibc before \
                 2.41, musl and kernels before 6.11 make it on every call"
            }
            When::Futex => {
                "the vDSO's robust-futex unlock leaves it to the kernel when the lock has waiters to wake \
                 (futex with FUTEX_ROBUST_UNLOCK in its op, Linux 7.2)"
            }
            When::DroppableMmap => {
                "glibc 2.41 maps each thread's getrandom state with mmap(MAP_DROPPABLE) on its first getrandom(); \
                 refused, every getrandom() is a syscall"
            }
        })
    }
}

/// What happens to the calls a conditional allow does not match.
fn rest(source: Source) -> &'static str {
    match source {
        Source::Profile => "the rest get defaultAction",
        Source::Live => "the rest are refused",
    }
}

/// The hint of a refused fallback's FAIL row.
fn fix(source: Source) -> &'static str {
    match source {
        Source::Profile => "allow it in the profile: the vDSO hides it from the traces allowlists are recorded from",
        Source::Live => {
            "allow it in the filter the process runs under (and the profile it came from): the vDSO hides it from \
             the traces allowlists are recorded from"
        }
    }
}

/// Why a profile is refused, or a read filter not judged (the caller's one line).
impl fmt::Display for BadProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadProfile::NotAProfile => {
                f.write_str("not a seccomp profile: an object with defaultAction and syscalls is expected")
            }
            BadProfile::NoDefaultAction => f.write_str("no defaultAction (a Docker/OCI seccomp profile has one)"),
            BadProfile::NoAction(call) => write!(f, "a rule for {call} has no action"),
            BadProfile::UnknownAction(act) => write!(f, "unknown action {act:?}"),
            BadProfile::NoFunction(call) => write!(f, "no function behind {call}"),
            BadProfile::NoNumber(call, abi) => write!(f, "no number for {call} on {}", abi.name()),
            BadProfile::UnrunnableInsn => f.write_str("a filter holds an instruction vdsoctl does not run: not judged"),
        }
    }
}

/// A row's detail.
impl fmt::Display for SeccompFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeccompFact::Fallback { source, abi, fallback, verdict } => {
                let (call, abi, when) = (fallback.call, abi.name(), fallback.when);
                match verdict {
                    Verdict::Refused(act) => write!(f, "{call} on {abi}: {act} — {when}"),
                    Verdict::OnlySome(rules) => write!(
                        f,
                        "{call} on {abi}: allowed only when {}, {} — {when}",
                        rules_text(rules),
                        rest(*source)
                    ),
                    Verdict::Agent => write!(f, "{call} on {abi}: SCMP_ACT_NOTIFY: the notify agent decides — {when}"),
                    Verdict::RefusedWhen { refusal, rules } => {
                        write!(f, "{call} on {abi}: {refusal} when {} — {when}", rules_text(rules))
                    }
                    Verdict::Allowed => write!(f, "{call} on {abi}: allowed"),
                }
            }
            SeccompFact::Allows { abi, calls, .. } => write!(f, "{}: allowed: {}", abi.name(), calls.join(", ")),
            SeccompFact::OtherArches(names) => {
                write!(f, "not judged (vdsoctl has no syscall table for them): {}", names.join(", "))
            }
            SeccompFact::Strict => f.write_str(
                "seccomp strict mode: only read, write, _exit and sigreturn are allowed, so the first syscall the vDSO \
                 falls back to (clock_gettime on a clocksource switch, a CPU-time clock, getrandom's key refill) kills it",
            ),
            SeccompFact::Unjudged { count, why } => {
                write!(f, "{count} seccomp filter(s) installed: ")?;
                match why {
                    Unjudged::NeedsRoot => f.write_str(
                        "reading their rules (PTRACE_SECCOMP_GET_FILTER) needs root (CAP_SYS_ADMIN), so whether they \
                         allow the vDSO's fallback syscalls is not judged",
                    ),
                    Unjudged::FilteredTracer => f.write_str(
                        "their rules could not be read: vdsoctl itself runs under seccomp, and the kernel refuses \
                         PTRACE_SECCOMP_GET_FILTER to a filtered tracer (run it outside the container or sandbox)",
                    ),
                    Unjudged::Unreadable(e) => write!(f, "their rules could not be read: {e}"),
                    Unjudged::NoAbi => f.write_str("the process's ABI has no syscall table here"),
                    Unjudged::Bad(e) => e.fmt(f),
                }
            }
            SeccompFact::OtherThreads(n) => write!(
                f,
                "{n} thread(s) run under another seccomp mode or number of filters than the main thread: \
                 their filters are not judged, only the main thread's are"
            ),
        }
    }
}

/// A row's hint.
fn hint(fact: &SeccompFact) -> Option<&'static str> {
    let profile = "judge the profile they came from with `vdsoctl check --seccomp-profile FILE`";
    match fact {
        SeccompFact::Fallback { source, verdict: Verdict::Refused(_), .. } => Some(fix(*source)),
        SeccompFact::Fallback { verdict: Verdict::OnlySome(_), .. } => {
            Some("allow it without conditions, or check that the fallback's arguments match them")
        }
        SeccompFact::Fallback { verdict: Verdict::Agent, .. } => Some("make sure the agent allows it"),
        SeccompFact::Fallback { verdict: Verdict::RefusedWhen { .. }, .. } => {
            Some("drop the rule's refusal, or check that the fallback's arguments never match it")
        }
        SeccompFact::Fallback { verdict: Verdict::Allowed, .. }
        | SeccompFact::Allows { .. }
        | SeccompFact::OtherArches(_) => None,
        SeccompFact::Strict => Some(
            "run it under a filter that allows the vDSO's fallback syscalls (`check --seccomp-profile FILE` judges one)",
        ),
        SeccompFact::Unjudged { why: Unjudged::NeedsRoot, .. } => {
            Some("run vdsoctl as root, or judge the profile they came from with `vdsoctl check --seccomp-profile FILE`")
        }
        SeccompFact::Unjudged { .. } => Some(profile),
        SeccompFact::OtherThreads(_) => {
            Some("install the filter with SECCOMP_FILTER_FLAG_TSYNC, or before the threads start")
        }
    }
}

/// A fact's row: its name, kind and status the model's, its words here.
pub fn seccomp_row(fact: &SeccompFact) -> Check {
    let row = Check::new(fact.kind(), fact.name(), fact.status(), fact.to_string(), hint(fact));
    Check { seccomp: Some(fact.clone()), ..row }
}

/// A seccomp row's fact as JSON has it (`seccomp`): the action that
/// refuses the call (`SECCOMP_RET_ERRNO`, `SCMP_ACT_KILL`...) and its
/// `errno`, a process's filters not judged, or its threads under another
/// mode or filter count; each absent where it is not the row's.
#[derive(Debug, serde::Serialize)]
pub struct SeccompWire {
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    errno: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filters: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<usize>,
    /// A live filter's refusal: it reads the call's instruction pointer
    /// and refuses it from some of the addresses it may be made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    by_ip: Option<bool>,
}

impl SeccompWire {
    pub fn of(fact: &SeccompFact) -> SeccompWire {
        let mut w = SeccompWire { action: None, errno: None, filters: None, threads: None, by_ip: None };
        match fact {
            SeccompFact::Fallback { verdict: Verdict::Refused(refusal), .. } => {
                let (action, errno) = match refusal {
                    Refusal::Profile(a) => match a {
                        ProfileAction::Errno(e) => ("SCMP_ACT_ERRNO", Some(*e)),
                        ProfileAction::Trace => ("SCMP_ACT_TRACE", None),
                        ProfileAction::Kill => ("SCMP_ACT_KILL", None),
                        ProfileAction::KillThread => ("SCMP_ACT_KILL_THREAD", None),
                        ProfileAction::KillProcess => ("SCMP_ACT_KILL_PROCESS", None),
                        ProfileAction::Trap => ("SCMP_ACT_TRAP", None),
                    },
                    Refusal::Filter { action, by_ip, .. } => {
                        w.by_ip = Some(*by_ip);
                        match action {
                            FilterAction::Errno(e) => ("SECCOMP_RET_ERRNO", Some(i64::from(*e))),
                            FilterAction::Trace => ("SECCOMP_RET_TRACE", None),
                            FilterAction::Trap => ("SECCOMP_RET_TRAP", None),
                            FilterAction::KillThread => ("SECCOMP_RET_KILL_THREAD", None),
                            FilterAction::KillProcess => ("SECCOMP_RET_KILL_PROCESS", None),
                            FilterAction::Other(_) => ("other", None),
                        }
                    }
                };
                (w.action, w.errno) = (Some(action), errno);
            }
            SeccompFact::Unjudged { count, .. } => w.filters = Some(*count),
            SeccompFact::OtherThreads(n) => w.threads = Some(*n),
            _ => {}
        }
        w
    }
}

/// Facts' rows, in order.
pub fn seccomp_rows(facts: &[SeccompFact]) -> Vec<Check> {
    facts.iter().map(seccomp_row).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Abi;
    use crate::model::kind::Kind;
    use crate::model::seccomp_profile::Fallback;
    use crate::model::Status;

    fn clock(source: Source, verdict: Verdict) -> SeccompFact {
        SeccompFact::Fallback {
            source,
            abi: Abi::X86_64,
            fallback: Fallback { call: "clock_gettime", when: When::Clock },
            verdict,
        }
    }

    #[test]
    fn actions_and_conditions_are_worded_once_here() {
        assert_eq!(ProfileAction::Errno(1).to_string(), "SCMP_ACT_ERRNO (EPERM)");
        assert_eq!(ProfileAction::Errno(4000).to_string(), "SCMP_ACT_ERRNO (errno 4000)");
        assert_eq!(ProfileAction::Trace.to_string(), "SCMP_ACT_TRACE (ENOSYS without a tracer)");
        assert_eq!(FilterAction::Trap.to_string(), "SECCOMP_RET_TRAP (SIGSYS)");
        assert_eq!(FilterAction::Other(0x1234_0000).to_string(), "action 0x12340000 (the kernel kills)");
        let some = Refusal::Filter {
            action: FilterAction::Errno(1),
            clocks: vec!["CLOCK_MONOTONIC", "CLOCK_BOOTTIME"],
            by_ip: false,
        };
        assert_eq!(some.to_string(), "SECCOMP_RET_ERRNO (EPERM) for CLOCK_MONOTONIC, CLOCK_BOOTTIME");
        let eq = Condition { index: 0, op: CmpOp::Eq, value: 1, mask: 0 };
        let masked = Condition { index: 2, op: CmpOp::MaskedEq, value: 8, mask: 8 };
        let ge = Condition { index: 0, op: CmpOp::Ge, value: 5, mask: 0 };
        assert_eq!(rules_text(&[vec![eq, masked], vec![ge]]), "arg0 == 1 and arg2 & 0x8 == 0x8 or arg0 >= 5");
        assert_eq!(BadProfile::UnknownAction("SCMP_ACT_BOGUS".into()).to_string(), "unknown action \"SCMP_ACT_BOGUS\"");
    }

    #[test]
    fn rows_word_the_facts_with_the_models_kind_and_status() {
        let refused = clock(Source::Profile, Verdict::Refused(Refusal::Profile(ProfileAction::KillProcess)));
        let row = seccomp_row(&refused);
        assert_eq!(
            (row.name.as_str(), row.kind, row.status),
            ("seccomp_profile:x86_64:clock_gettime", Kind::SeccompDeniesFallback, Status::Fail)
        );
        assert!(row.detail().starts_with("clock_gettime on x86_64: SCMP_ACT_KILL_PROCESS — the vDSO makes it when"));
        assert_eq!(row.hint().as_deref(), Some(fix(Source::Profile)));
        let only = vec![vec![Condition { index: 0, op: CmpOp::Eq, value: 1, mask: 0 }]];
        let row = seccomp_row(&clock(Source::Live, Verdict::OnlySome(only)));
        assert_eq!((row.kind, row.status), (Kind::SeccompConditional, Status::Warn));
        assert!(row
            .detail()
            .starts_with("clock_gettime on x86_64: allowed only when arg0 == 1, the rest are refused — "));
        let row =
            seccomp_row(&SeccompFact::Allows { source: Source::Live, abi: Abi::X86_64, calls: vec!["time", "getcpu"] });
        assert_eq!(
            (row.name.as_str(), &*row.detail(), row.hint().map(|h| h.into_owned())),
            ("process_seccomp:x86_64", "x86_64: allowed: time, getcpu", None)
        );
        let row = seccomp_row(&SeccompFact::Unjudged { count: 2, why: Unjudged::Bad(BadProfile::UnrunnableInsn) });
        assert_eq!(
            (row.name.as_str(), row.status, &*row.detail()),
            (
                "process_seccomp",
                Status::Info,
                "2 seccomp filter(s) installed: a filter holds an instruction vdsoctl does not run: not judged"
            )
        );
        assert_eq!(seccomp_row(&SeccompFact::Strict).status, Status::Fail);
    }

    /// Issue 40: model/seccomp_profile.rs holds no sentence. Every string
    /// literal of its code (its tests aside) is a name, never words.
    #[test]
    fn model_seccomp_profile_holds_no_prose() {
        let prose = crate::render::prose::prose(include_str!("../model/seccomp_profile.rs"));
        assert!(prose.is_empty(), "prose in model/seccomp_profile.rs: {prose:?}");
    }
}
