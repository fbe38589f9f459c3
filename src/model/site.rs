//! Who makes the call (`trace --sites`): each count row split by call site
//! — the syscall instruction and the return address above it, named — and
//! each site classified, once, here: the cause decides the fix, and the
//! hint is worded from the class (`render::hint`).

use super::vdso_serves_call;
use crate::arch::{Abi, VdsoFn};
use crate::inspect::symbols::{Frame, FrameKind};
use crate::measure::trace::sight::Sightings;
use crate::measure::trace::{Clock, Key, Site, Tally};
use serde::Serialize;

/// Why a call was made where it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteClass {
    /// The vDSO's own code made the syscall: its fallback (see [`Fallback`]).
    VdsoFallback,
    /// libc's `syscall()` wrapper, called by the program (the caller is named).
    LibcSyscall,
    /// The C library's own clock function made the syscall, not the vDSO.
    LibcClock,
    /// The C library's own random-bytes function (getrandom(),
    /// getentropy(), arc4random()) made the syscall, not the vDSO.
    LibcRandom,
    /// A syscall instruction in the program itself (inline assembly, a
    /// static binary's own code).
    Program,
    /// The Go runtime (or Go's syscall package).
    GoRuntime,
    /// Executable memory no file backs: JIT-compiled code, a trampoline.
    Jit,
    /// Another shared object's own syscall instruction.
    Library,
    /// Not resolved: the process's mappings were not read in time.
    Unknown,
    /// Not resolved: vdsoctl may not read the process's mappings (it is
    /// not dumpable: setuid, setcap, PR_SET_DUMPABLE).
    Unreadable,
}

/// Why the vDSO fell back to the syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// The clock id (or function) is not one the vDSO serves here
    /// (CPU-time clocks, always; others by kernel version).
    ClockNotServed,
    /// The current clocksource has no vDSO mode (`hpet`, `acpi_pm`, `xen`...).
    Clocksource,
    /// Neither: the vDSO should have served it (its data page said retry,
    /// a time namespace, a clocksource marked unstable).
    Unexplained,
    /// getrandom: the vDSO's own key refill into its state, or a call it
    /// hands to the kernel (flags it does not serve, RNG not ready).
    KeyRefill,
}

/// What the host is, for judging a `[vdso]` site.
#[derive(Debug, Clone, Default)]
pub struct Host {
    pub kernel: Option<(u32, u32)>,
    /// The current clocksource and whether it has a vDSO mode.
    pub clocksource: Option<(String, Option<bool>)>,
    /// Which auxiliary clocks are enabled.
    pub aux: crate::arch::AuxClocks,
}

impl Host {
    /// From what was read of this host's kernel.
    pub fn of(k: &crate::inspect::host::KernelFacts) -> Host {
        use crate::inspect::kernel;
        Host {
            kernel: k.version(),
            clocksource: k
                .clocksource
                .as_ref()
                .map(|c| (c.current.clone(), kernel::clocksource_has_vdso_mode(&c.current))),
            aux: k.aux_clocks,
        }
    }
}

/// One address of a site, named: the same shape as a stack's frame.
pub type FrameRow = super::stacks::StackFrame;

/// A row's calls from one site.
#[derive(Debug, Clone, Serialize)]
pub struct SiteRow {
    pub count: u64,
    #[serde(serialize_with = "super::rate")]
    pub per_sec: f64,
    /// The syscall instruction.
    pub site: FrameRow,
    /// The word at the stack pointer at entry, named when it is code: the
    /// caller of a leaf wrapper (`syscall()`); `null` when it is not.
    pub caller: Option<FrameRow>,
    pub class: SiteClass,
    /// For `vdso_fallback`: why.
    pub fallback: Option<Fallback>,
    /// The clocksource, for `fallback: clocksource`.
    pub clocksource: Option<String>,
}

/// Class a site from its instruction's frame and what the call was.
pub fn classify(site: &Frame, abi: Abi, func: VdsoFn, clock: Clock, host: &Host) -> (SiteClass, Option<Fallback>) {
    let symbol = site.symbol.as_deref().unwrap_or("");
    let class = match site.kind {
        FrameKind::Vdso if func.kind() == crate::arch::FnKind::Random => {
            return (SiteClass::VdsoFallback, Some(Fallback::KeyRefill));
        }
        FrameKind::Vdso => {
            let why = if !vdso_serves_call(abi, func, clock, host.kernel, host.aux) {
                Fallback::ClockNotServed
            } else if host.clocksource.as_ref().is_some_and(|(_, mode)| *mode == Some(false)) {
                Fallback::Clocksource
            } else {
                Fallback::Unexplained
            };
            return (SiteClass::VdsoFallback, Some(why));
        }
        FrameKind::Anonymous => SiteClass::Jit,
        FrameKind::Unmapped | FrameKind::Vsyscall => SiteClass::Unknown,
        FrameKind::Object if is_go_runtime(symbol) => SiteClass::GoRuntime,
        FrameKind::Object if is_syscall_wrapper(symbol) => SiteClass::LibcSyscall,
        FrameKind::Object if crate::inspect::exe::runtime_random_function(symbol) => SiteClass::LibcRandom,
        FrameKind::Object if crate::inspect::exe::runtime_clock_function(symbol) => SiteClass::LibcClock,
        FrameKind::Object if site.program => SiteClass::Program,
        FrameKind::Object if site.object_name().is_some_and(is_libc) && func.kind() == crate::arch::FnKind::Random => {
            SiteClass::LibcRandom
        }
        FrameKind::Object if site.object_name().is_some_and(is_libc) => SiteClass::LibcClock,
        FrameKind::Object => SiteClass::Library,
    };
    (class, None)
}

/// The C libraries' generic `syscall(2)` wrapper, by exact name.
fn is_syscall_wrapper(symbol: &str) -> bool {
    matches!(symbol.split('@').next().unwrap_or(symbol), "syscall" | "__syscall" | "__syscall_cp" | "__syscall_cp_asm")
}

/// Go's runtime and syscall packages, whose names a program cannot take.
fn is_go_runtime(symbol: &str) -> bool {
    ["runtime.", "runtime/internal/", "internal/runtime/", "syscall.", "internal/syscall/"]
        .iter()
        .any(|p| symbol.starts_with(p))
}

/// glibc's and musl's shared objects, by file name.
fn is_libc(name: &str) -> bool {
    name.starts_with("libc.so") || name.starts_with("libc-") || name.starts_with("ld-musl") || name == "libc.musl"
}

/// The site rows of one count row, busiest first. `secs` is the time the
/// process was traced. An address is named as the engine named it (the
/// seccomp engine, while the call waited), else through the process's
/// mappings as the session first saw them.
pub fn rows_of(tally: &Tally, key: &Key, secs: f64, host: &Host, seen: &Sightings) -> Vec<SiteRow> {
    // Named as the engine named it, else through the process's mappings as
    // first seen, else from the mapping the kernel captured at the site's
    // first call (a process gone before it was seen).
    let is_64 = key.abi.elf().1;
    let frame = |addr: u64| {
        let id = (key.pid, key.start, addr);
        // The instruction's mapping was captured at the address past it.
        let past = addr + crate::arch::SITE_REGS.map_or(0, |r| r.insn_len);
        let at = || tally.mapped.get(&id).or_else(|| tally.mapped.get(&(key.pid, key.start, past)));
        let mapped = || seen.resolve_mapped(addr, at()?, is_64);
        tally.frames.get(&id).cloned().or_else(|| {
            let first = seen.resolve(key.pid, key.start, addr);
            match first {
                Some(f) if f.kind != FrameKind::Unmapped => Some(f),
                _ => mapped().or(first),
            }
        })
    };
    let rows: Vec<SiteRow> = tally
        .sites
        .range((*key, Site { ip: 0, ret: 0 })..=(*key, Site { ip: u64::MAX, ret: u64::MAX }))
        .filter(|(_, n)| **n > 0)
        .map(|((_, site), n)| {
            let code = |addr: u64| frame(addr).filter(|f| f.kind != FrameKind::Unmapped);
            let (ret, up) = site.words(key.abi.elf().1);
            let mut at = frame(site.ip).unwrap_or_else(|| Frame::unmapped(site.ip));
            // A stack word is a caller only when it points into code.
            let mut caller = if is_64 { code(ret) } else { None };
            // i386: a call through the vDSO's entry trampoline (libc's
            // syscall(), the vDSO's own fallback) is made where it returns;
            // glibc's syscall() wrapper is called from where the word past
            // its four pushed registers returns to.
            if at.kind == FrameKind::Vdso && at.symbol.as_deref() == Some("__kernel_vsyscall") {
                if let Some(f) = code(up) {
                    let wrapper = f.symbol.as_deref().is_some_and(is_syscall_wrapper);
                    caller = if wrapper { code(ret) } else { None };
                    at = f;
                }
            }
            let (mut class, fallback) = classify(&at, key.abi, key.func, key.clock, host);
            if class == SiteClass::Unknown && tally.maps_refused.contains(&(key.pid, key.start)) {
                class = SiteClass::Unreadable;
            }
            let site = FrameRow::from(at.clone());
            let caller = caller.map(FrameRow::from).map(|mut c| {
                c.note_tail_call(&site);
                c
            });
            SiteRow {
                count: *n,
                per_sec: *n as f64 / secs,
                site,
                caller,
                class,
                fallback,
                clocksource: (fallback == Some(Fallback::Clocksource))
                    .then(|| host.clocksource.as_ref().map(|(n, _)| n.clone()))
                    .flatten(),
            }
        })
        .collect();
    // Stack words that are no code (a local, a saved register) split a
    // site for nothing: one row per site and caller.
    let mut merged: Vec<SiteRow> = Vec::new();
    for r in rows {
        match merged.iter_mut().find(|m| m.site == r.site && m.caller == r.caller) {
            Some(m) => {
                m.count += r.count;
                m.per_sec += r.per_sec;
            }
            None => merged.push(r),
        }
    }
    merged.sort_by(|a, b| b.count.cmp(&a.count).then(a.site.address.cmp(&b.site.address)));
    merged
}

/// What to do about a site, as data: `render::hint` words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub class: SiteClass,
    pub fallback: Option<Fallback>,
    /// The clock (`CLOCK_PROCESS_CPUTIME_ID`) or call it was.
    pub what: String,
    /// The call.
    pub func: VdsoFn,
    /// The caller of `syscall()`, or the object that made the call, labelled.
    pub who: Option<String>,
    pub clocksource: Option<String>,
    /// The engine that counted: advice never names the one in use.
    pub engine: crate::progress::Kind,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Abi;

    fn frame(kind: FrameKind, object: &str, symbol: Option<&str>, program: bool) -> Frame {
        Frame {
            address: 0x1000,
            kind,
            object: Some(object.into()),
            symbol: symbol.map(Into::into),
            offset: 0,
            build_id: None,
            program,
            called: None,
        }
    }

    #[test]
    fn each_cause_has_its_class() {
        let host = Host { kernel: Some((6, 18)), clocksource: Some(("tsc".into(), Some(true))), ..Host::default() };
        let c = |f: &Frame, clock: i64| classify(f, Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(clock), &host);
        let vdso = frame(FrameKind::Vdso, "[vdso]", Some("__vdso_clock_gettime"), false);
        assert_eq!(c(&vdso, 2), (SiteClass::VdsoFallback, Some(Fallback::ClockNotServed)));
        assert_eq!(c(&vdso, 1), (SiteClass::VdsoFallback, Some(Fallback::Unexplained)));
        let hpet = Host { clocksource: Some(("hpet".into(), Some(false))), ..host.clone() };
        assert_eq!(
            classify(&vdso, Abi::X86_64, VdsoFn::ClockGettime, Clock::Id(1), &hpet),
            (SiteClass::VdsoFallback, Some(Fallback::Clocksource))
        );
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        assert_eq!(c(&frame(FrameKind::Object, libc, Some("syscall"), false), 1).0, SiteClass::LibcSyscall);
        assert_eq!(c(&frame(FrameKind::Object, libc, Some("clock_gettime"), false), 1).0, SiteClass::LibcClock);
        assert_eq!(c(&frame(FrameKind::Object, libc, None, false), 1).0, SiteClass::LibcClock);
        assert_eq!(c(&frame(FrameKind::Object, "/srv/app", Some("read_clock"), true), 1).0, SiteClass::Program);
        // A static program's own copy of syscall() is still the wrapper.
        assert_eq!(c(&frame(FrameKind::Object, "/srv/app", Some("syscall"), true), 1).0, SiteClass::LibcSyscall);
        // getrandom: the vDSO's own call is its key refill; the C library's
        // random functions (and its unnamed code) are their own class.
        let r = |f: &Frame, kind| classify(f, Abi::X86_64, VdsoFn::Getrandom, Clock::Random(kind), &host);
        use crate::measure::trace::RandomCall;
        let vgr = frame(FrameKind::Vdso, "[vdso]", Some("__vdso_getrandom"), false);
        assert_eq!(r(&vgr, RandomCall::ByVdso), (SiteClass::VdsoFallback, Some(Fallback::KeyRefill)));
        assert_eq!(
            r(&frame(FrameKind::Object, libc, Some("getentropy"), false), RandomCall::Served).0,
            SiteClass::LibcRandom
        );
        assert_eq!(r(&frame(FrameKind::Object, libc, None, false), RandomCall::Served).0, SiteClass::LibcRandom);
        assert_eq!(
            r(&frame(FrameKind::Object, libc, Some("syscall"), false), RandomCall::Served).0,
            SiteClass::LibcSyscall
        );
        let go = frame(FrameKind::Object, "/srv/app", Some("runtime/internal/syscall.Syscall6"), true);
        assert_eq!(c(&go, 1).0, SiteClass::GoRuntime);
        assert_eq!(
            c(&frame(FrameKind::Object, "/srv/app", Some("runtime.nanotime1.abi0"), true), 1).0,
            SiteClass::GoRuntime
        );
        assert_eq!(c(&frame(FrameKind::Anonymous, "[anon:jit]", None, false), 1).0, SiteClass::Jit);
        assert_eq!(c(&frame(FrameKind::Object, "/usr/lib/libfoo.so", Some("foo"), false), 1).0, SiteClass::Library);
        assert_eq!(c(&Frame::unmapped(0x10), 1).0, SiteClass::Unknown);
    }

    /// libc's syscall() wrapper: the hint names the call made and the libc
    /// function to call instead, whatever the clock is.
    #[test]
    fn a_syscall_wrapper_hint_names_the_call_and_its_libc_function() {
        let hint = |func: VdsoFn, what: &str| {
            let fix = Fix {
                class: SiteClass::LibcSyscall,
                fallback: None,
                what: what.into(),
                func,
                who: Some("app raw_clock+0x9".into()),
                clocksource: None,
                engine: crate::progress::Kind::Bpf,
            };
            fix.to_string()
        };
        let cases = [
            (VdsoFn::ClockGettime, "CLOCK_MONOTONIC", "syscall(SYS_clock_gettime, …) itself: call clock_gettime()"),
            (VdsoFn::ClockGettime, "PROCESS_CPU_CLOCK", "syscall(SYS_clock_gettime, …) itself: call clock_gettime()"),
            (VdsoFn::ClockGettime, "other", "syscall(SYS_clock_gettime, …) itself: call clock_gettime()"),
            (VdsoFn::ClockGettime64, "CLOCK_REALTIME", "syscall(SYS_clock_gettime64, …) itself: call clock_gettime()"),
            (VdsoFn::Gettimeofday, "gettimeofday", "syscall(SYS_gettimeofday, …) itself: call gettimeofday()"),
            (VdsoFn::Getcpu, "getcpu", "syscall(SYS_getcpu, …) itself: call sched_getcpu()"),
        ];
        for (func, what, want) in cases {
            let h = hint(func, what);
            assert!(h.starts_with("app raw_clock+0x9 calls ") && h.contains(want), "{func:?} {what}: {h}");
        }
    }
}
