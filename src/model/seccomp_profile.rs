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
//! allow only some calls (the rest get `defaultAction`); no rule means
//! `defaultAction`. Killed, trapped, errored or traced (ENOSYS without a
//! tracer) is FAIL; only for some arguments, or left to a notify agent, is
//! WARN; allowed or logged is OK. A rule that needs a capability
//! (`includes.caps`) is not counted on: a container may not have it.

use super::row::Check;
use super::Status;
use crate::arch::{Abi, ClockClass, FnKind, VdsoFn, CLOCKS, HOST_ABI};
use crate::measure::sys::seccomp::{Insn, Notification};
use crate::measure::trace::engines::seccomp::own;
use crate::model::kind::Kind;
use serde_json::Value;

/// What the profile does to one syscall on one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Only calls whose arguments match these conditions are allowed.
    OnlySome(String),
    /// The action that refuses it (`SCMP_ACT_ERRNO (EPERM)`, `SCMP_ACT_KILL_PROCESS`...).
    Refused(String),
    /// Decided by a user-space agent (`SCMP_ACT_NOTIFY`).
    Agent,
}

/// A profile that does not parse as one: the caller's one-line error.
#[derive(Debug)]
pub struct BadProfile(pub String);

/// The ABI of a libseccomp (`SCMP_ARCH_X86_64`) or Go (`amd64`) arch name.
fn abi_of(name: &str) -> Option<Abi> {
    match name.trim_start_matches("SCMP_ARCH_").to_ascii_lowercase().as_str() {
        "x86_64" | "amd64" => Some(Abi::X86_64),
        "x86" | "386" | "i386" => Some(Abi::I386),
        "aarch64" | "arm64" => Some(Abi::Aarch64),
        "arm" => Some(Abi::Arm),
        "riscv64" => Some(Abi::Riscv64),
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

/// Whether `rule` applies to `abi` (its `includes`/`excludes` arches; a
/// rule that needs a capability is not counted on).
fn applies(rule: &Value, abi: Abi) -> bool {
    let arches = |v: &Value| -> Vec<Option<Abi>> {
        v["arches"].as_array().into_iter().flatten().filter_map(|a| a.as_str()).map(abi_of).collect()
    };
    let inc = arches(&rule["includes"]);
    if !inc.is_empty() && !inc.contains(&Some(abi)) {
        return false;
    }
    if arches(&rule["excludes"]).contains(&Some(abi)) {
        return false;
    }
    rule["includes"]["caps"].as_array().is_none_or(|c| c.is_empty())
}

fn errno_name(n: i64) -> String {
    match i32::try_from(n) {
        Ok(n) if nix::errno::Errno::from_raw(n) != nix::errno::Errno::UnknownErrno => {
            format!("{:?}", nix::errno::Errno::from_raw(n))
        }
        _ => format!("errno {n}"),
    }
}

/// An action's verdict; Err for an action no runtime knows.
fn action(act: &str, errno: Option<i64>) -> Result<Verdict, BadProfile> {
    Ok(match act {
        "SCMP_ACT_ALLOW" | "SCMP_ACT_LOG" => Verdict::Allowed,
        "SCMP_ACT_NOTIFY" => Verdict::Agent,
        "SCMP_ACT_ERRNO" => {
            Verdict::Refused(format!("SCMP_ACT_ERRNO ({})", errno_name(errno.unwrap_or(i64::from(libc::EPERM)))))
        }
        "SCMP_ACT_TRACE" => Verdict::Refused("SCMP_ACT_TRACE (ENOSYS without a tracer)".into()),
        "SCMP_ACT_KILL" | "SCMP_ACT_KILL_THREAD" | "SCMP_ACT_KILL_PROCESS" | "SCMP_ACT_TRAP" => {
            Verdict::Refused(act.to_string())
        }
        other => return Err(BadProfile(format!("unknown action {other:?}"))),
    })
}

/// What `profile` does to syscall `name` on `abi`.
pub fn judge(profile: &Value, abi: Abi, name: &str) -> Result<Verdict, BadProfile> {
    let default_errno = profile["defaultErrnoRet"].as_i64();
    let default = profile["defaultAction"]
        .as_str()
        .ok_or_else(|| BadProfile("no defaultAction (a Docker/OCI seccomp profile has one)".into()))?;
    let mut conditional = Vec::new();
    for rule in profile["syscalls"].as_array().into_iter().flatten() {
        let named = rule["names"].as_array().into_iter().flatten().any(|n| n == name) || rule["name"] == name;
        if !named || !applies(rule, abi) {
            continue;
        }
        let act = rule["action"].as_str().ok_or_else(|| BadProfile(format!("a rule for {name} has no action")))?;
        let verdict = action(act, rule["errnoRet"].as_i64().or(default_errno))?;
        match rule["args"].as_array().filter(|a| !a.is_empty()) {
            None => return Ok(verdict),
            Some(args) if verdict == Verdict::Allowed => conditional.push(conditions(args)),
            Some(_) => {}
        }
    }
    let fallback = action(default, default_errno)?;
    if !conditional.is_empty() && fallback != Verdict::Allowed {
        return Ok(Verdict::OnlySome(conditional.join(" or ")));
    }
    Ok(fallback)
}

/// `arg0 == 1 and arg2 & 8 == 8`, from a rule's args.
fn conditions(args: &[Value]) -> String {
    let op = |o: &str| match o {
        "SCMP_CMP_EQ" => "==",
        "SCMP_CMP_NE" => "!=",
        "SCMP_CMP_LT" => "<",
        "SCMP_CMP_LE" => "<=",
        "SCMP_CMP_GT" => ">",
        "SCMP_CMP_GE" => ">=",
        "SCMP_CMP_MASKED_EQ" => "masked ==",
        _ => "?",
    };
    let parts: Vec<String> = args
        .iter()
        .map(|a| {
            let (i, v) = (a["index"].as_u64().unwrap_or(0), a["value"].as_u64().unwrap_or(0));
            match a["op"].as_str().unwrap_or_default() {
                "SCMP_CMP_MASKED_EQ" => format!("arg{i} & {:#x} == {v:#x}", a["valueTwo"].as_u64().unwrap_or(0)),
                o => format!("arg{i} {} {v}", op(o)),
            }
        })
        .collect();
    parts.join(" and ")
}

/// When the vDSO falls back to `f`'s syscall.
fn when(f: VdsoFn) -> &'static str {
    match f.kind() {
        FnKind::Clock => {
            "the vDSO makes it when the clocksource cannot be read from user space (a switch to hpet or acpi_pm, \
             common on VMs after a TSC warning), for CPU-time clocks and for clock ids it does not know"
        }
        FnKind::Cpu => "the vDSO makes it where the CPU number cannot be read from user space",
        FnKind::Random => {
            "the vDSO makes it to refill its key (a thread's first call, after fork, periodically); glibc before \
             2.41, musl and kernels before 6.11 make it on every call"
        }
    }
}

/// The syscalls the vDSO of `abi` falls back to, each with when it does:
/// every function that ABI's vDSO offers and, where it offers getrandom,
/// `mmap` (`mmap2` on 32-bit) for glibc 2.41's `MAP_DROPPABLE` state.
pub fn fallbacks(abi: Abi) -> Vec<(&'static str, &'static str)> {
    let mut calls: Vec<(&'static str, &'static str)> =
        abi.vdso_syscalls().iter().filter(|(f, _)| abi.vdso_offers(*f)).map(|(f, _)| (f.name(), when(*f))).collect();
    if abi.vdso_offers(VdsoFn::Getrandom) {
        calls.push((
            abi.mmap_syscall().0,
            "glibc 2.41 maps each thread's getrandom state with mmap(MAP_DROPPABLE) on its first getrandom(); \
             refused, every getrandom() is a syscall",
        ));
    }
    calls
}

/// Who decides, for the rows' words: a profile file or a live filter.
pub struct Source {
    /// The rows' name prefix (`seccomp_profile`, `process_seccomp`).
    pub prefix: &'static str,
    /// What happens to the calls a conditional allow does not match.
    pub rest: &'static str,
    /// The hint of a FAIL row.
    pub fix: &'static str,
}

/// The profile file's words.
const PROFILE: Source = Source {
    prefix: "seccomp_profile",
    rest: "the rest get defaultAction",
    fix: "allow it in the profile: the vDSO hides it from the traces allowlists are recorded from",
};

/// The one judge of both the profile and the live filter: per fallback
/// syscall of `abi`, a FAIL or WARN row for each refused (named with when
/// the fallback happens) and one OK row for the rest.
pub fn rows(
    src: &Source,
    abi: Abi,
    mut judge: impl FnMut(&str) -> Result<Verdict, BadProfile>,
) -> Result<Vec<Check>, BadProfile> {
    let (mut out, mut ok) = (Vec::new(), Vec::new());
    for (name, when) in fallbacks(abi) {
        let row = format!("{}:{}:{name}", src.prefix, abi.name());
        match judge(name)? {
            Verdict::Allowed => ok.push(name),
            Verdict::Refused(act) => out.push(Check::new(
                Kind::SeccompDeniesFallback,
                row,
                Status::Fail,
                format!("{name} on {}: {act} — {when}", abi.name()),
                Some(src.fix),
            )),
            Verdict::OnlySome(cond) => out.push(Check::new(
                Kind::SeccompConditional,
                row,
                Status::Warn,
                format!("{name} on {}: allowed only when {cond}, {} — {when}", abi.name(), src.rest),
                Some("allow it without conditions, or check that the fallback's arguments match them"),
            )),
            Verdict::Agent => out.push(Check::new(
                Kind::SeccompConditional,
                row,
                Status::Warn,
                format!("{name} on {}: SCMP_ACT_NOTIFY: the notify agent decides — {when}", abi.name()),
                Some("make sure the agent allows it"),
            )),
        }
    }
    if !ok.is_empty() {
        let detail = format!("{}: allowed: {}", abi.name(), ok.join(", "));
        out.push(Check::new(Kind::SeccompAllows, format!("{}:{}", src.prefix, abi.name()), Status::Ok, detail, None));
    }
    Ok(out)
}

/// The rows of a profile file, per ABI it covers.
pub fn checks(profile: &Value) -> Result<Vec<Check>, BadProfile> {
    if !profile.is_object() || !profile["syscalls"].is_array() && !profile["syscalls"].is_null() {
        return Err(BadProfile("not a seccomp profile: an object with defaultAction and syscalls is expected".into()));
    }
    let (abis, other) = abis(profile);
    let mut out = Vec::new();
    for abi in abis {
        out.extend(rows(&PROFILE, abi, |name| judge(profile, abi, name))?);
    }
    if !other.is_empty() {
        let detail = format!("not judged (vdsoctl has no syscall table for them): {}", other.join(", "));
        out.push(Check::new(Kind::SeccompArchUnknown, "seccomp_profile:other_arches", Status::Info, detail, None));
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
    /// The read failed (the process went away, ptrace refused...).
    Unreadable(String),
}

/// The live filter's words.
const LIVE: Source = Source {
    prefix: "process_seccomp",
    rest: "the rest are refused",
    fix: "allow it in the filter the process runs under (and the profile it came from): the vDSO hides it from \
          the traces allowlists are recorded from",
};

/// `check -p`: the process's seccomp mode, judged. Strict mode allows only
/// read, write, _exit and sigreturn: the first fallback kills it. Filters,
/// read as root, are run on each fallback syscall of the process's ABI
/// and judged by [`rows`], as a profile is; unread, they are INFO.
pub fn live_checks(mode: u8, count: u32, abi: Option<Abi>, filters: LiveFilters) -> Vec<Check> {
    let name = "process_seccomp";
    let info =
        |why: String, hint: &'static str| vec![Check::new(Kind::SeccompUnread, name, Status::Info, why, Some(hint))];
    let profile_hint = "judge the profile they came from with `vdsoctl check --seccomp-profile FILE`";
    match (mode, filters, abi) {
        (1, ..) => vec![Check::new(
            Kind::SeccompStrict,
            name,
            Status::Fail,
            "seccomp strict mode: only read, write, _exit and sigreturn are allowed, so the first syscall the vDSO \
             falls back to (clock_gettime on a clocksource switch, a CPU-time clock, getrandom's key refill) kills it",
            Some("run it under a filter that allows the vDSO's fallback syscalls (`check --seccomp-profile FILE` judges one)"),
        )],
        (2, LiveFilters::NeedsRoot, _) => info(
            format!(
                "{count} seccomp filter(s) installed: reading their rules (PTRACE_SECCOMP_GET_FILTER) needs root \
                 (CAP_SYS_ADMIN), so whether they allow the vDSO's fallback syscalls is not judged"
            ),
            "run vdsoctl as root, or judge the profile they came from with `vdsoctl check --seccomp-profile FILE`",
        ),
        (2, LiveFilters::Unreadable(e), _) => {
            info(format!("{count} seccomp filter(s) installed: their rules could not be read: {e}"), profile_hint)
        }
        (2, LiveFilters::Read(_), None) => {
            info(format!("{count} seccomp filter(s) installed: the process's ABI has no syscall table here"), profile_hint)
        }
        (2, LiveFilters::Read(progs), Some(abi)) => {
            rows(&LIVE, abi, |call| live_verdict(&progs, abi, call)).unwrap_or_else(|e| info(e.0, profile_hint))
        }
        _ => Vec::new(),
    }
}

/// The threads whose seccomp mode or filter count differs from the main
/// thread's (filters installed without TSYNC): theirs were not read, so
/// the rows above speak for the main thread only.
pub fn other_threads(n: usize) -> Option<Check> {
    (n > 0).then(|| {
        Check::new(
            Kind::SeccompOtherThreads,
            "process_seccomp:other_threads",
            Status::Info,
            format!(
                "{n} thread(s) run under another seccomp mode or number of filters than the main thread: \
                 their filters are not judged, only the main thread's are"
            ),
            Some("install the filter with SECCOMP_FILTER_FLAG_TSYNC, or before the threads start"),
        )
    })
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
        let f = VdsoFn::from_name(call).ok_or_else(|| BadProfile(format!("no function behind {call}")))?;
        let nr = abi.syscall_nr(f).ok_or_else(|| BadProfile(format!("no number for {call} on {}", abi.name())))?;
        let clocks = CLOCKS.iter().filter(|c| c.class != ClockClass::AlwaysSyscall);
        let datas = if f.takes_clock() {
            clocks.map(|c| (Some(c.name), [c.id as u64, 0, 0, 0, 0, 0])).collect()
        } else {
            vec![(None, [0; 6])]
        };
        (nr, datas)
    };
    let (mut refused, mut agent, tried) = (Vec::<(String, Option<&str>)>::new(), false, datas.len());
    for (clock, args) in datas {
        let n = Notification { id: 0, tid: 0, nr: nr as i32, arch: abi.audit_arch(), ip: 0, args };
        let ret = progs
            .iter()
            .map(|p| own::run(p, &n))
            .try_fold(RET_ALLOW, |a, r| r.map(|r| if own::outranks(r, a) { r } else { a }))
            .ok_or_else(|| BadProfile("a filter holds an instruction vdsoctl does not run: not judged".into()))?;
        match live_action(ret) {
            Verdict::Allowed => {}
            Verdict::Agent => agent = true,
            Verdict::Refused(act) => refused.push((act, clock)),
            Verdict::OnlySome(_) => {}
        }
    }
    if let Some((act, _)) = refused.first() {
        // Name the clocks when only some are refused.
        let clocks: Vec<&str> = refused.iter().filter_map(|(_, c)| *c).collect();
        let some = !clocks.is_empty() && refused.len() < tried;
        return Ok(Verdict::Refused(if some { format!("{act} for {}", clocks.join(", ")) } else { act.clone() }));
    }
    Ok(if agent { Verdict::Agent } else { Verdict::Allowed })
}

/// One call a fallback makes: the clock it reads (if any) and its arguments.
type Probe = (Option<&'static str>, [u64; 6]);

/// `SECCOMP_RET_ALLOW`.
const RET_ALLOW: u32 = 0x7fff_0000;

/// The verdict of a filter's return value (`SECCOMP_RET_*`).
fn live_action(ret: u32) -> Verdict {
    let data = ret & 0xffff;
    match ret & 0xffff_0000 {
        0x7fff_0000 | 0x7ffc_0000 => Verdict::Allowed,
        0x7fc0_0000 => Verdict::Agent,
        0x7ff0_0000 => Verdict::Refused("SECCOMP_RET_TRACE (ENOSYS without a tracer)".into()),
        0x0005_0000 => Verdict::Refused(format!("SECCOMP_RET_ERRNO ({})", errno_name(i64::from(data)))),
        0x0003_0000 => Verdict::Refused("SECCOMP_RET_TRAP (SIGSYS)".into()),
        0x0000_0000 => Verdict::Refused("SECCOMP_RET_KILL_THREAD".into()),
        0x8000_0000 => Verdict::Refused("SECCOMP_RET_KILL_PROCESS".into()),
        other => Verdict::Refused(format!("action {other:#x} (the kernel kills)")),
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
        assert_eq!(j("clock_gettime"), Verdict::OnlySome("arg0 == 1".into()));
        assert_eq!(j("time"), Verdict::Refused("SCMP_ACT_KILL_PROCESS".into()));
        assert_eq!(judge(&p, Abi::Aarch64, "time").unwrap(), Verdict::Allowed);
        assert_eq!(j("getcpu"), Verdict::Refused("SCMP_ACT_KILL_PROCESS".into()), "a capability is not counted on");
        assert_eq!(j("getrandom"), Verdict::Refused("SCMP_ACT_ERRNO (EPERM)".into()));
        assert_eq!(j("gettimeofday"), Verdict::Agent);
        assert_eq!(j("mmap"), Verdict::Allowed);
        // Without `architectures`, the rows are the host's ABIs (the kernel
        // matrix runs these tests on arm64 too).
        let rows = checks(&p).unwrap();
        let host = HOST_ABI.expect("a known host ABI").name();
        let warn: Vec<_> = rows.iter().filter(|c| c.status == Status::Warn).map(|c| c.name.clone()).collect();
        assert!(warn.contains(&format!("seccomp_profile:{host}:clock_gettime")), "{rows:?}");
        assert!(warn.contains(&format!("seccomp_profile:{host}:gettimeofday")), "{rows:?}");
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
        assert_eq!(j("clock_gettime"), Verdict::Refused("SECCOMP_RET_ERRNO (EPERM) for CLOCK_MONOTONIC".into()));
        assert_eq!(j("mmap"), Verdict::Refused("SECCOMP_RET_TRACE (ENOSYS without a tracer)".into()));
        assert_eq!(j("getcpu"), Verdict::Refused("SECCOMP_RET_KILL_PROCESS".into()));
        assert_eq!(j("gettimeofday"), Verdict::Allowed);
        let rows = live_checks(2, 2, Some(Abi::X86_64), LiveFilters::Read(progs.clone()));
        let fail: Vec<_> = rows.iter().filter(|c| c.status == Status::Fail).map(|c| c.name.as_str()).collect();
        assert_eq!(
            fail,
            ["process_seccomp:x86_64:clock_gettime", "process_seccomp:x86_64:getcpu", "process_seccomp:x86_64:mmap"]
        );
        let unread = live_checks(2, 3, Some(Abi::X86_64), LiveFilters::NeedsRoot);
        assert_eq!((unread.len(), unread[0].status), (1, Status::Info));
    }
}
