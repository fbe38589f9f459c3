//! A binary's verdict, worded: each [`BinaryFact`] model/binary.rs finds
//! (its Display, once), the verdict's detail they make, a finding as JSON
//! has it, and `check -p`'s `process_binary` row. Its hints are
//! render/hint.rs's.

use crate::arch::{self, RoutePath};
use crate::inspect::exe::{LibcKind, Linkage, Site};
use crate::inspect::kernel::VsyscallMode;
use crate::model::binary::{BinaryFact, BinaryFinding, ProcessExe, RuntimeRef, PROCESS_BINARY};
use crate::model::check::Check;
use crate::model::row::ExeRun;
use serde::{Serialize, Serializer};
use std::fmt;

/// A runtime in sentences: `glibc 2.36`, `Go go1.19.8`.
impl fmt::Display for RuntimeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.libc {
            LibcKind::Glibc => "glibc",
            LibcKind::Musl => "musl",
            LibcKind::Bionic => "bionic",
            LibcKind::Go => "Go",
            LibcKind::Unknown => "an unrecognised runtime",
        };
        match &self.version {
            Some(v) => write!(f, "{name} {v}"),
            None => f.write_str(name),
        }
    }
}

/// A call site's enclosing function, named where the code names it.
fn site_symbol(s: &Site) -> &str {
    s.symbol.as_deref().unwrap_or("an unnamed function")
}

/// `clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x1149 in main`.
fn clock_site(s: &Site) -> String {
    let f = s.function.map_or("?", |f| f.name());
    let args = match (s.function, s.clock) {
        (Some(f), Some(c)) if f.takes_clock() => {
            arch::clock_info(c as i32).map_or_else(|| format!("clock {c}"), |i| i.name.to_string())
        }
        (Some(f), None) if f.takes_clock() => "clock id not a constant".to_string(),
        _ => String::new(),
    };
    format!("{f}({args}) by {} at {:#x} in {}", s.via.text(), s.addr, site_symbol(s))
}

/// `syscall() at 0x1149 in main`.
fn random_site(s: &Site) -> String {
    format!("{} at {:#x} in {}", s.via.text(), s.addr, site_symbol(s))
}

/// Sites listed, comma-separated.
fn sites_text(sites: &[Site], text: fn(&Site) -> String) -> String {
    sites.iter().map(text).collect::<Vec<_>>().join(", ")
}

/// A finding's words (JSON `findings[].detail`; the verdict's detail joins them).
impl fmt::Display for BinaryFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BinaryFact as F;
        match self {
            F::X32 { machine } => write!(f, "{} x32-ABI binary (ELF32): not judged", arch::machine_name(*machine)),
            F::VsyscallSites { count, first, site, library, mode } => {
                let what = match mode {
                    VsyscallMode::None => {
                        "this kernel has no [vsyscall] page (vsyscall=none): the call crashes with SIGSEGV"
                    }
                    _ => "each call traps and is emulated by the kernel, invisible to strace",
                };
                write!(f, "its code calls the fixed [vsyscall] page ({count} site(s), first at {:#x}", first.unwrap_or(0))?;
                if let Some(s) = site {
                    write!(f, " in {}", site_symbol(s))?;
                }
                if *library {
                    write!(f, "), likely a fallback path: if taken, {what}")
                } else {
                    write!(f, "): {what}")
                }
            }
            F::RawRandomSites { sites, more, wrapper, route } => {
                let raw = if *wrapper { "raw syscall(SYS_getrandom)" } else { "raw getrandom syscalls" };
                write!(f, "{raw} bypasses the vDSO that {} uses: {}", route.runtime_text(), sites_text(sites, random_site))?;
                if *more > 0 {
                    write!(f, " and {} more", crate::words::thousands(*more as u64))?;
                }
                Ok(())
            }
            F::RawClockSites { sites, more } => {
                write!(f, "its code makes raw clock syscalls the vDSO would serve: {}", sites_text(sites, clock_site))?;
                if *more > 0 {
                    write!(f, " and {more} more")?;
                }
                f.write_str(": each one enters the kernel")
            }
            F::CputimeSites { sites } => write!(
                f,
                "raw syscalls of clocks the vDSO never serves (always a syscall): {}",
                sites_text(sites, clock_site)
            ),
            F::Truncated { size, described } => write!(
                f,
                "truncated: the file has {size} of the {described} bytes its headers describe; what is missing was not decoded, so call sites may be missed"
            ),
            F::CodeNotRead => f.write_str("no executable code could be read: call sites not looked for"),
            F::NoSections { dynamic } => {
                f.write_str("no section headers: its code was decoded from its executable segments (PT_LOAD)")?;
                if *dynamic {
                    f.write_str(", its imports read from its dynamic section")?;
                }
                Ok(())
            }
            F::SectionsCorrupt => f.write_str("its section headers cannot be read (corrupt): its code was decoded from its executable segments only, its own symbols unread"),
            F::GoRuntime { runtime, cgo } => {
                let cgo = if *cgo { ", with cgo" } else { "" };
                write!(f, "{runtime}{cgo}: the Go runtime is expected to call the vDSO itself")
            }
            F::StaticGlibcVdso { runtime } => {
                write!(f, "static {runtime} that looks the vDSO up (glibc ≥ 2.31 does in static binaries)")
            }
            F::StaticGlibcNoVdso => f.write_str("static glibc without a vDSO lookup (glibc < 2.31 never used the vDSO in static binaries, sourceware bug 19767): every clock_gettime and gettimeofday is a syscall"),
            F::MuslNoDtHash { runtime } => write!(f, "{runtime}: musl looks vDSO symbols up through DT_HASH only and this kernel's vDSO has only DT_GNU_HASH: every clock read is a syscall"),
            F::MuslDtHash { runtime, confirmed: true } => {
                write!(f, "{runtime}: expected to look the vDSO up (DT_HASH present here)")
            }
            F::MuslDtHash { runtime, confirmed: false } => write!(
                f,
                "{runtime}: expected to look the vDSO up (through DT_HASH, which its kernel's vDSO is not read here to confirm)"
            ),
            F::LibcVdso { runtime } => write!(f, "{runtime}: its clock reads are expected to go through the vDSO"),
            F::LibraryWithoutLibc => {
                f.write_str("library without a C library of its own: it reads clocks through its program's")
            }
            F::LibcUnknown { interp } => {
                write!(f, "C library not recognised (interpreter {})", interp.as_deref().unwrap_or("?"))
            }
            F::RuntimeUnknown => f.write_str(
                "static, runtime not recognised and no vDSO lookup found in it: its clock reads may all be syscalls",
            ),
            F::Compat32Library => f.write_str("32-bit library: its programs get the 32-bit verdict"),
            F::Compat32 => f.write_str("32-bit: the compat vDSO (vdso32) serves its clock reads, a little slower than the 64-bit one; its clock syscalls are invisible to syscalls:sys_enter_* tracepoints"),
            F::ForeignDecoded { arch } => write!(f, "judged as {arch} code (not this host's architecture)"),
            F::ForeignNotDecoded { arch } => write!(f, "{arch} code: call sites not decoded for this architecture (only amd64, i386 and arm64 code is), raw clock syscalls not looked for"),
            F::CarriedVdso { runtime, rows } => {
                let own: Vec<&&arch::PathRow> = rows.iter().filter(|r| r.path == RoutePath::OwnVdso).collect();
                let libc: Vec<&&arch::PathRow> = rows.iter().filter(|r| r.path == RoutePath::Libc).collect();
                let rseq: Vec<&&arch::PathRow> = rows.iter().filter(|r| r.path == RoutePath::Rseq).collect();
                let mut parts = Vec::new();
                if !own.is_empty() {
                    parts.push(format!("where it reads {}, it reads the vDSO itself, whatever the C library", row_list(&own)));
                }
                if !libc.is_empty() {
                    parts.push(format!("where it reads {}, it calls the C library: its path is the C library's", row_list(&libc)));
                }
                if !rseq.is_empty() {
                    parts.push(format!("reads {} from rseq first", row_list(&rseq)));
                }
                if parts.is_empty() {
                    return write!(
                        f,
                        "{}: none of its entries that read the vDSO or make their own syscall is linked in (its symbols say)",
                        carried_text(runtime)
                    );
                }
                write!(f, "{}: {}", carried_text(runtime), parts.join("; "))
            }
            F::CarriedSyscall { runtime, row, fixed_in, sites } => {
                let who = carried_text(runtime);
                let call = row.function.syscall_name();
                match row.path {
                    RoutePath::Seed => write!(f, "{who}'s {} seeds its own generator with {call} syscalls, a few a process", row.entry)?,
                    RoutePath::DeviceRead => write!(
                        f,
                        "{who}'s {} reads /dev/urandom every call (a read syscall, not {call}), whatever the C library",
                        row.entry
                    )?,
                    // The C library's own gap: no other library to blame.
                    _ if runtime.runtime == arch::Runtime::Glibc => {
                        write!(f, "{who}'s {} makes a {call} syscall every call", row.entry)?
                    }
                    _ => write!(f, "{who}'s {} makes a {call} syscall every call, whatever the C library", row.entry)?,
                }
                if !sites.is_empty() {
                    write!(f, " — {}", sites_text(sites, random_site))?;
                }
                let name = runtime.runtime.name();
                match fixed_in {
                    Some((a, b)) if fix_path(row) == Some(RoutePath::Libc) => {
                        write!(f, ": {name} ≥ {a}.{b} calls the C library's {}(){}", row.function.libc_function(), libc_fix(row.function))
                    }
                    Some((a, b)) => write!(f, ": {name} ≥ {a}.{b} reads it from the vDSO"),
                    None => write!(f, ": no {name} release reads the vDSO yet"),
                }
            }
            F::CarriedUnknown { runtime, function } => {
                let paths: Vec<String> = arch::PATHS
                    .iter()
                    .filter(|r| r.runtime == runtime.runtime && r.function == *function)
                    .map(|r| format!("{}: {}", releases(r), path_text(r.path)))
                    .collect();
                write!(
                    f,
                    "{} (its release not said in the file): its {function} path depends on it ({})",
                    carried_text(runtime),
                    paths.join("; ")
                )
            }
        }
    }
}

/// `the getrandom crate 0.3.4`, `OpenSSL 3.0.19`, `libuv`.
fn carried_text(c: &crate::inspect::exe::Carried) -> String {
    match &c.version {
        Some(v) => format!("{} {v}", c.runtime.name()),
        None => c.runtime.name().to_string(),
    }
}

/// `clock_gettime (rustix::time::clock_gettime) and getcpu (…)`.
fn row_list(rows: &[&&arch::PathRow]) -> String {
    let items: Vec<String> = rows.iter().map(|r| format!("{} ({})", r.function, r.entry)).collect();
    and_list(&items)
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The path of the row that fixes `row` (its runtime's first later one
/// that reads the vDSO).
fn fix_path(row: &arch::PathRow) -> Option<RoutePath> {
    let since = row.fixed_in()?;
    arch::PATHS
        .iter()
        .find(|r| r.runtime == row.runtime && r.function == row.function && r.from == since)
        .map(|r| r.path)
}

/// `, which glibc ≥ 2.41 reads from the vDSO` (the C library's own row).
fn libc_fix(function: arch::VdsoFn) -> String {
    match arch::route(function, arch::Runtime::Glibc).and_then(|r| r.since) {
        Some((a, b)) => format!(", which glibc ≥ {a}.{b} reads from the vDSO"),
        None => String::new(),
    }
}

/// `0.3 and later`, `before 0.3`, `every release`.
fn releases(r: &arch::PathRow) -> String {
    match (r.from, r.until) {
        ((0, 0), None) => "every release".into(),
        ((0, 0), Some((a, b))) => format!("before {a}.{b}"),
        ((a, b), None) => format!("{a}.{b} and later"),
        ((a, b), Some((c, d))) => format!("{a}.{b} to before {c}.{d}"),
    }
}

fn path_text(p: RoutePath) -> &'static str {
    match p {
        RoutePath::OwnVdso => "the vDSO, looked up itself",
        RoutePath::Libc => "the C library's function",
        RoutePath::Syscall => "a syscall every call",
        RoutePath::Seed => "a syscall to seed itself",
        RoutePath::Rseq => "rseq first",
        RoutePath::DeviceRead => "a read of /dev/urandom every call",
    }
}

/// A verdict's detail (JSON `binaries[].detail`, the table's, a
/// baseline's): its findings' words, the reason first.
pub fn verdict_detail(findings: &[BinaryFinding]) -> String {
    findings.iter().map(|f| f.fact.to_string()).collect::<Vec<_>>().join("; ")
}

/// A finding as JSON has it: kind, status, its fact's words as `detail`,
/// and the gate's `waived`/`raised` when set.
impl Serialize for BinaryFinding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            kind: crate::model::kind::Kind,
            status: crate::model::Status,
            detail: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            waived: Option<&'a crate::model::gate::Waiver>,
            #[serde(skip_serializing_if = "Option::is_none")]
            raised: Option<&'a crate::model::gate::Raise>,
            /// A call-site finding's sites listed (the first ones).
            #[serde(skip_serializing_if = "Option::is_none")]
            sites: Option<Vec<SiteWire<'a>>>,
            /// A call-site finding's sites in all, listed or not.
            #[serde(skip_serializing_if = "Option::is_none")]
            site_count: Option<u64>,
            /// `binary-truncated`: the file's bytes and those its headers describe.
            #[serde(skip_serializing_if = "Option::is_none")]
            size: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            described: Option<u64>,
            /// A Go program's: linked against a C library (it runs with cgo).
            #[serde(skip_serializing_if = "Option::is_none")]
            cgo: Option<bool>,
            /// A runtime the program carries: which, its release, and its
            /// path to each function its finding is about.
            #[serde(skip_serializing_if = "Option::is_none")]
            carried: Option<CarriedWire<'a>>,
        }
        #[derive(Serialize)]
        struct CarriedWire<'a> {
            runtime: arch::Runtime,
            version: Option<&'a str>,
            paths: Vec<PathWire>,
        }
        #[derive(Serialize)]
        struct PathWire {
            function: arch::VdsoFn,
            path: Option<RoutePath>,
            entry: Option<&'static str>,
            /// The first release of the runtime whose path reads the vDSO.
            fixed_in: Option<String>,
        }
        let path = |r: &arch::PathRow| PathWire {
            function: r.function,
            path: Some(r.path),
            entry: Some(r.entry),
            fixed_in: r.fixed_in().map(|(a, b)| format!("{a}.{b}")),
        };
        let carried = match &self.fact {
            BinaryFact::CarriedVdso { runtime, rows } => Some((runtime, rows.iter().map(|r| path(r)).collect())),
            BinaryFact::CarriedSyscall { runtime, row, .. } => Some((runtime, vec![path(row)])),
            BinaryFact::CarriedUnknown { runtime, function } => {
                Some((runtime, vec![PathWire { function: *function, path: None, entry: None, fixed_in: None }]))
            }
            _ => None,
        }
        .map(|(c, paths)| CarriedWire { runtime: c.runtime, version: c.version.as_deref(), paths });
        let (sites, site_count) = fact_sites(&self.fact);
        let (size, described) = match self.fact {
            BinaryFact::Truncated { size, described } => (Some(size), Some(described)),
            _ => (None, None),
        };
        Wire {
            kind: self.kind,
            status: self.status,
            detail: self.fact.to_string(),
            waived: self.waived.as_ref(),
            raised: self.raised.as_ref(),
            sites: sites.map(|v| v.into_iter().map(SiteWire::of).collect()),
            site_count,
            size,
            described,
            cgo: match self.fact {
                BinaryFact::GoRuntime { cgo, .. } => Some(cgo),
                _ => None,
            },
            carried,
        }
        .serialize(s)
    }
}

/// A call site as a finding's JSON has it: `address` (`"0x..."`), `via`
/// (`syscall`, `int80`, `sysenter`, `libc_syscall`, `svc`, `vsyscall`),
/// `function` (`clock_gettime`...; `null` for a [vsyscall] call), `clock`
/// (by name, a number when undefined; `null` when not a constant or none)
/// and `symbol` (the enclosing function; `null` in stripped code).
#[derive(Serialize)]
struct SiteWire<'a> {
    #[serde(serialize_with = "crate::model::hex")]
    address: u64,
    via: crate::inspect::exe::Via,
    function: Option<&'static str>,
    clock: Option<crate::model::ClockRef>,
    symbol: Option<&'a str>,
}

impl<'a> SiteWire<'a> {
    fn of(s: std::borrow::Cow<'a, Site>) -> SiteWire<'a> {
        match s {
            std::borrow::Cow::Borrowed(s) => SiteWire {
                address: s.addr,
                via: s.via,
                function: s.function.map(|f| f.name()),
                clock: s.clock.map(crate::model::ClockRef::Id),
                symbol: s.symbol.as_deref(),
            },
            std::borrow::Cow::Owned(s) => SiteWire {
                address: s.addr,
                via: s.via,
                function: s.function.map(|f| f.name()),
                clock: s.clock.map(crate::model::ClockRef::Id),
                symbol: None,
            },
        }
    }
}

/// A call-site finding's listed sites and its count of sites (`None`:
/// not a call-site finding). A [vsyscall] finding whose first call was
/// not kept lists its address alone.
fn fact_sites(fact: &BinaryFact) -> (Option<Vec<std::borrow::Cow<'_, Site>>>, Option<u64>) {
    use std::borrow::Cow;
    let all = |sites: &[Site], more: usize| (sites.len() + more) as u64;
    match fact {
        BinaryFact::VsyscallSites { count, first, site, .. } => {
            let listed = match (site, first) {
                (Some(s), _) => vec![Cow::Borrowed(s)],
                (None, Some(addr)) => vec![Cow::Owned(Site {
                    addr: *addr,
                    via: crate::inspect::exe::Via::Vsyscall,
                    function: None,
                    clock: None,
                    entry: None,
                    symbol: None,
                })],
                (None, None) => Vec::new(),
            };
            (Some(listed), Some(u64::from(*count)))
        }
        BinaryFact::RawRandomSites { sites, more, .. } | BinaryFact::RawClockSites { sites, more } => {
            (Some(sites.iter().map(Cow::Borrowed).collect()), Some(all(sites, *more)))
        }
        BinaryFact::CputimeSites { sites } => (Some(sites.iter().map(Cow::Borrowed).collect()), Some(all(sites, 0))),
        _ => (None, None),
    }
}

/// `check -p`'s `process_binary` row, worded: who runs what, its class,
/// architecture and linkage, then the verdict's detail; its hint names
/// the process.
pub fn process_binary_row(exe: &ProcessExe<'_>) -> Check {
    let (detail, pid) = match exe {
        ProcessExe::Unreadable { error } => (format!("cannot read the executable: {error}"), None),
        ProcessExe::UnderEmulator { who, program, tool, path } => {
            let prog = program.map_or_else(String::new, |p| format!(" {p}"));
            let detail = format!(
                "{} runs{prog} under {tool} ({path}): the tool maps no [vdso] for the program and serves each clock read itself, as a syscall",
                who.text()
            );
            (detail, Some(who.pid))
        }
        ProcessExe::Judged { who, loader, is_64, machine, linkage, interp, verdict } => {
            let class = if *is_64 { "64-bit" } else { "32-bit" };
            let linkage = match linkage {
                Linkage::Dynamic => format!("dynamic ({})", interp.unwrap_or("")),
                Linkage::Static => "statically linked".to_string(),
                Linkage::StaticPie => "statically linked (static-pie)".to_string(),
            };
            let launched = loader.map_or_else(String::new, |l| format!(" (started as `{l} PROG`)"));
            let detail = format!(
                "{}{launched}: {class} {}, {linkage}; {}",
                who.with_exe(),
                arch::machine_name(*machine),
                verdict_detail(&verdict.findings)
            );
            (detail, Some(who.pid))
        }
    };
    // The hint names this process, not a placeholder.
    let hint = exe.hint().zip(pid).map(|(h, pid)| h.for_process(pid));
    let own = |s: Option<&str>| s.map(str::to_string);
    let (findings, run) = match exe {
        ProcessExe::Judged { verdict, who, loader, .. } => {
            let run = ExeRun { program: own(who.exe), loader: own(*loader), tool: None, tool_path: None };
            (Some(verdict.findings.clone()), Some(run))
        }
        ProcessExe::UnderEmulator { program, tool, path, .. } => {
            let run =
                ExeRun { program: own(*program), loader: None, tool: own(Some(tool)), tool_path: own(Some(path)) };
            (None, Some(run))
        }
        ProcessExe::Unreadable { .. } => (None, None),
    };
    Check { findings, exe: run, ..Check::new(exe.kind(), PROCESS_BINARY, exe.status(), detail, hint.as_deref()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::exe::Via;

    fn site(addr: u64, symbol: Option<&str>) -> Site {
        Site {
            addr,
            via: Via::LibcSyscall,
            function: Some(arch::VdsoFn::ClockGettime),
            clock: Some(1),
            entry: None,
            symbol: symbol.map(str::to_string),
        }
    }

    #[test]
    fn facts_are_worded_once_here() {
        let glibc = RuntimeRef { libc: LibcKind::Glibc, version: Some("2.36".into()) };
        assert_eq!(
            BinaryFact::LibcVdso { runtime: glibc.clone() }.to_string(),
            "glibc 2.36: its clock reads are expected to go through the vDSO"
        );
        let go = RuntimeRef { libc: LibcKind::Go, version: Some("go1.22.1".into()) };
        assert_eq!(
            BinaryFact::GoRuntime { runtime: go, cgo: true }.to_string(),
            "Go go1.22.1, with cgo: the Go runtime is expected to call the vDSO itself"
        );
        let vsyscall = BinaryFact::VsyscallSites {
            count: 2,
            first: Some(0x401000),
            site: None,
            library: false,
            mode: VsyscallMode::None,
        };
        assert_eq!(
            vsyscall.to_string(),
            "its code calls the fixed [vsyscall] page (2 site(s), first at 0x401000): this kernel has no [vsyscall] page (vsyscall=none): the call crashes with SIGSEGV"
        );
        let sites = vec![site(0x10a6, Some("main")), site(0x1107, None)];
        assert_eq!(
            BinaryFact::RawClockSites { sites, more: 4 }.to_string(),
            "its code makes raw clock syscalls the vDSO would serve: clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x10a6 in main, clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x1107 in an unnamed function and 4 more: each one enters the kernel"
        );
        assert!(BinaryFact::Truncated { size: 5000, described: 16264 }
            .to_string()
            .starts_with("truncated: the file has 5000 of the 16264 bytes its headers describe"));
        assert_eq!(
            BinaryFact::ForeignDecoded { arch: "arm64".into() }.to_string(),
            "judged as arm64 code (not this host's architecture)"
        );
        assert!(BinaryFact::StaticGlibcNoVdso.to_string().contains("glibc < 2.31"));
        // .NET's /dev/urandom: a read, not the function's own syscall.
        let row = arch::path_of(arch::Runtime::Dotnet, arch::VdsoFn::Getrandom, None, arch::machine::X86_64).unwrap();
        let dotnet = crate::inspect::exe::Carried::new(arch::Runtime::Dotnet, None);
        assert_eq!(
            BinaryFact::CarriedSyscall { runtime: dotnet, row, fixed_in: None, sites: Vec::new() }.to_string(),
            ".NET's System.Native (RandomNumberGenerator from 5.0, Random's seed) reads /dev/urandom every call (a read syscall, not getrandom), whatever the C library: no .NET release reads the vDSO yet"
        );
    }

    #[test]
    fn a_verdict_joins_its_findings_and_json_words_each() {
        let findings = [
            BinaryFinding::of(BinaryFact::Compat32),
            BinaryFinding::of(BinaryFact::LibcVdso { runtime: RuntimeRef { libc: LibcKind::Glibc, version: None } }),
        ];
        let detail = verdict_detail(&findings);
        assert!(
            detail.starts_with("32-bit: the compat vDSO")
                && detail.ends_with("; glibc: its clock reads are expected to go through the vDSO"),
            "{detail}"
        );
        let json = serde_json::to_string(&findings[1]).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"kind":"binary-ok","status":"ok","detail":"glibc: its clock reads are expected to go through the vDSO"}"#
        );
    }

    #[test]
    fn the_process_binary_row_words_its_exe() {
        use crate::model::{ProcessName, Status};
        let who = ProcessName { pid: 42, comm: "qemu-x86_64", argv0: None, exe: None };
        let row = process_binary_row(&ProcessExe::UnderEmulator {
            who,
            program: Some("/bin/true"),
            tool: "qemu-user",
            path: "/usr/bin/qemu-x86_64",
        });
        assert_eq!((row.name.as_str(), row.status), (PROCESS_BINARY, Status::Fail));
        assert!(
            row.detail().starts_with("pid 42 (qemu-x86_64) runs /bin/true under qemu-user (/usr/bin/qemu-x86_64): "),
            "{}",
            row.detail()
        );
        assert_eq!(
            row.hint().as_deref(),
            Some("expected under an emulator or instrumenter; audit the program run natively")
        );
        let row = process_binary_row(&ProcessExe::Unreadable { error: "permission denied".into() });
        assert_eq!(
            (&*row.detail(), row.status, row.hint().map(|h| h.into_owned())),
            ("cannot read the executable: permission denied", Status::Skip, None)
        );
    }

    /// Issue 40: model/binary.rs holds no sentence. Every string literal of
    /// its code (its tests aside) is a name, never words: none has a space.
    #[test]
    fn model_binary_holds_no_prose() {
        let prose = crate::render::prose::prose(include_str!("../model/binary.rs"));
        assert!(prose.is_empty(), "prose in model/binary.rs: {prose:?}");
    }
}
