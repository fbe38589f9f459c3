//! Random bytes: whether a binary's runtime reads them from the vDSO
//! (`__vdso_getrandom`, Linux 6.11) or makes a getrandom syscall per call,
//! judged once for `check --image` (one row per C library or Go release
//! of the image, not one per binary) and `check -p` (one row, with the
//! process's vDSO state page as evidence). Which runtime takes which path
//! from which release is `arch::ROUTES`'; the facts are gathered by
//! `inspect::exe` (the libc version, a static libc's vDSO getrandom lookup,
//! whether a Go program reaches the getrandom syscall).
//!
//! Measured (fixtures/GETRANDOM.md): glibc 2.41 reads getrandom() and
//! arc4random() from the vDSO, glibc 2.36 makes a syscall each call; Go
//! 1.24's crypto/rand reads the vDSO, Go 1.19's makes a syscall each read;
//! musl has no vDSO getrandom. The vDSO keeps a per-thread state in an
//! anonymous page mapped `MAP_DROPPABLE` (smaps VmFlags `dp`), at the
//! first call.

use super::row::Check;
use super::Status;
use crate::arch::{self, Runtime, VdsoFn};
use crate::inspect::elf::Image;
use crate::inspect::exe::{self, ExeInfo, LibcKind, Linkage};
use crate::model::kind::Kind;
use crate::words::thousands;
use serde::Serialize;

/// How a binary's random bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RandomPath {
    /// Through the vDSO (where the kernel's vDSO offers getrandom).
    Vdso,
    /// A getrandom syscall every call.
    Syscall,
    /// The program makes no getrandom calls (Go without crypto/rand).
    NoCalls,
    /// The runtime does not read the vDSO on this architecture (32-bit,
    /// or a machine its release does not bind it on): a syscall, and no
    /// upgrade changes that.
    NotOnArch,
    /// The runtime or its version is not known.
    Unknown,
}

/// What a binary's runtime does for random bytes (JSON: `random` of an
/// `--image` row, and of `check -p`'s `process_random` row's facts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RandomRoute {
    /// `glibc`, `musl`, `go`; `null` when not recognised.
    pub runtime: Option<Runtime>,
    /// The runtime's version as the binary says it (`2.36`, `go1.19.8`).
    pub version: Option<String>,
    pub path: RandomPath,
    /// Statically linked C library (its own version, or its vDSO lookup, decides).
    #[serde(skip)]
    pub static_libc: bool,
}

/// What `info`'s runtime does for random bytes. `info.libc_version` of a
/// dynamic program is its C library's, as the caller filled it in.
pub fn random_route(info: &ExeInfo) -> RandomRoute {
    let runtime = match info.libc {
        LibcKind::Glibc => Some(Runtime::Glibc),
        LibcKind::Musl => Some(Runtime::Musl),
        LibcKind::Go => Some(Runtime::Go),
        LibcKind::Bionic | LibcKind::Unknown => None,
    };
    let static_libc = info.libc == LibcKind::Glibc && info.linkage() != Linkage::Dynamic && !info.is_library();
    let mut route = RandomRoute { runtime, version: info.libc_version.clone(), path: RandomPath::Unknown, static_libc };
    let Some(r) = runtime.and_then(|rt| arch::route(VdsoFn::Getrandom, rt)) else { return route };
    let Some(since) = r.since else {
        route.path = RandomPath::Syscall;
        return route;
    };
    if !(info.is_64 && r.machines.contains(&info.machine)) {
        route.path = RandomPath::NotOnArch;
        return route;
    }
    let version = match r.runtime {
        Runtime::Go => info.libc_version.as_deref().and_then(exe::go_version),
        Runtime::Glibc | Runtime::Musl => info.libc_version.as_deref().and_then(crate::inspect::kernel::parse_version),
    };
    route.path = match (r.runtime, version) {
        (_, Some(v)) if v >= since => RandomPath::Vdso,
        (Runtime::Go, Some(_)) => match info.go.as_ref().and_then(|g| g.getrandom) {
            Some(false) => RandomPath::NoCalls,
            _ => RandomPath::Syscall,
        },
        (_, Some(_)) => RandomPath::Syscall,
        // A static glibc says no version: its lookup of the vDSO's
        // getrandom does (glibc 2.41 names it, every older one does not).
        (Runtime::Glibc, None) if static_libc => {
            if info.random_lookup {
                RandomPath::Vdso
            } else {
                RandomPath::Syscall
            }
        }
        (_, None) => RandomPath::Unknown,
    };
    route
}

impl RandomRoute {
    /// `glibc 2.36`, `Go go1.19.8`, `static glibc`, `musl`.
    pub fn runtime_text(&self) -> String {
        let name = self.runtime.map_or("an unrecognised runtime", Runtime::name);
        let name = if self.static_libc { format!("static {name}") } else { name.to_string() };
        match &self.version {
            Some(v) => format!("{name} {v}"),
            None => name,
        }
    }

    /// The first release that reads the vDSO, as a user knows it (`glibc 2.41`, `Go 1.24`).
    fn first_vdso_release(&self) -> Option<String> {
        let r = arch::route(VdsoFn::Getrandom, self.runtime?)?;
        let (major, minor) = r.since?;
        Some(format!("{} {major}.{minor}", r.runtime.name()))
    }

    /// The sentence for a binary whose random bytes take a syscall: `random
    /// bytes take a syscall: glibc 2.36 makes getrandom() a syscall; glibc
    /// 2.41 reads it from the vDSO`.
    pub fn syscall_text(&self) -> String {
        let who = self.runtime_text();
        let what = match self.runtime {
            Some(Runtime::Go) => format!("{who}'s crypto/rand makes a getrandom syscall per read"),
            Some(Runtime::Glibc) if self.static_libc && self.version.is_none() => {
                "static glibc without a vDSO getrandom lookup (before 2.41) makes getrandom() a syscall".to_string()
            }
            _ => format!("{who} makes getrandom() a syscall"),
        };
        format!("random bytes take a syscall: {}", self.syscall_reason_of(what))
    }

    /// [`RandomRoute::syscall_text`] without its lead: `glibc 2.36 makes
    /// getrandom() a syscall; glibc 2.41 reads it from the vDSO`.
    pub fn syscall_reason(&self) -> String {
        let text = self.syscall_text();
        text.strip_prefix("random bytes take a syscall: ").unwrap_or(&text).to_string()
    }

    fn syscall_reason_of(&self, what: String) -> String {
        match self.first_vdso_release() {
            Some(first) => format!("{what}; {first} reads it from the vDSO"),
            None => format!("{what}, in every release (none reads the vDSO)"),
        }
    }

    /// The fix for [`RandomRoute::syscall_text`].
    fn hint(&self) -> &'static str {
        match self.runtime {
            Some(Runtime::Go) => "rebuild with Go ≥ 1.24: its crypto/rand reads random bytes from the vDSO (Linux ≥ 6.11)",
            Some(Runtime::Musl) => "only a glibc ≥ 2.41 or Go ≥ 1.24 program reads random bytes from the vDSO; fine unless it reads them in a hot loop",
            _ => "glibc ≥ 2.41 (Debian 13, Ubuntu 25.04, Fedora 42) reads getrandom() and arc4random() from the vDSO (Linux ≥ 6.11): move the image or host to it",
        }
    }
}

/// One ELF file of an image, as the random-bytes rows see it.
pub struct ImageFile<'a> {
    pub path: &'a str,
    /// With a dynamic program's libc version filled in from the image's libc.
    pub info: &'a ExeInfo,
}

/// The image's random-bytes rows: one per runtime release whose random
/// bytes take a syscall (a C library with the programs and libraries that
/// load it, a static glibc, a Go release with its programs that reach
/// getrandom), WARN — the image's binaries keep their clock verdicts.
/// Binaries not judged here: 32-bit and other architectures (no vDSO
/// getrandom their runtime reads), unknown runtimes or versions.
pub fn image_random_checks(files: &[ImageFile]) -> Vec<Check> {
    struct Group<'a> {
        route: RandomRoute,
        /// The C library itself, for a dynamic glibc or musl.
        libc: Option<&'a str>,
        programs: Vec<&'a str>,
        libraries: usize,
        raw: Vec<&'a str>,
    }
    let mut groups: Vec<Group> = Vec::new();
    for f in files {
        let route = random_route(f.info);
        if route.path != RandomPath::Syscall {
            continue;
        }
        let raw = f.info.sites.iter().any(|s| s.function.is_some_and(|f| f.kind() == arch::FnKind::Random));
        let libc_itself = f.info.is_library()
            && f.info.soname.as_deref().is_some_and(|s| s.starts_with("libc.") || s.starts_with("ld-musl"));
        let g = match groups.iter_mut().position(|g| g.route == route) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(Group { route, libc: None, programs: Vec::new(), libraries: 0, raw: Vec::new() });
                groups.last_mut().expect("just pushed")
            }
        };
        if libc_itself {
            g.libc = Some(f.path);
        } else if f.info.is_dynamic_linker() {
            // Part of the C library.
        } else if f.info.is_library() {
            g.libraries += 1;
        } else {
            g.programs.push(f.path);
        }
        if raw {
            g.raw.push(f.path);
        }
    }
    groups
        .into_iter()
        .filter(|g| !g.programs.is_empty() || g.libc.is_some())
        .map(|g| {
            let name = match (&g.route.runtime, &g.route.version) {
                (Some(rt), Some(v)) if g.route.static_libc => format!("random:static-{}-{v}", rt.name()),
                (Some(rt), None) if g.route.static_libc => format!("random:static-{}", rt.name()),
                (Some(Runtime::Go), Some(v)) => format!("random:go-{}", v.trim_start_matches("go")),
                (Some(rt), Some(v)) => format!("random:{}-{v}", rt.name()),
                (Some(rt), None) => format!("random:{}", rt.name()),
                (None, _) => "random".to_string(),
            };
            let programs = match g.programs.len() {
                0 => "no program".to_string(),
                1 => format!("1 program ({})", g.programs[0]),
                n => format!("{} programs (e.g. {})", thousands(n as u64), g.programs[0]),
            };
            let libraries = match g.libraries {
                0 => String::new(),
                1 => " and 1 library".to_string(),
                n => format!(" and {} libraries", thousands(n as u64)),
            };
            let whose = match g.libc {
                Some(libc) => format!("{libc}, loaded by {programs}{libraries}"),
                None => programs,
            };
            let raw = match g.raw.len() {
                0 => String::new(),
                1 => format!("; raw getrandom syscalls in {}", g.raw[0]),
                n => format!("; raw getrandom syscalls in {} files (e.g. {})", thousands(n as u64), g.raw[0]),
            };
            Check::new(
                Kind::RandomSyscallOldLibc,
                name,
                Status::Warn,
                format!("{} ({whose}){raw}", g.route.syscall_text()),
                Some(g.route.hint()),
            )
        })
        .collect()
}

/// What `check -p` saw of a process's random bytes.
#[derive(Debug, Clone)]
pub struct ProcessRandom {
    pub route: RandomRoute,
    /// The C library the process mapped, when it has one.
    pub libc_path: Option<String>,
    /// The process's vDSO exports getrandom (read from its image; else from
    /// the kernel version's table); `None`: not known.
    pub vdso_offers: Option<bool>,
    /// The vDSO's symbol name for getrandom on the process's architecture.
    pub symbol: Option<&'static str>,
    /// Anonymous `dp` (MAP_DROPPABLE) mappings: the vDSO getrandom state;
    /// `None` when /proc/PID/smaps could not be read.
    pub state_pages: Option<Vec<u64>>,
    /// Raw getrandom syscalls in its code.
    pub raw_sites: usize,
}

impl ProcessRandom {
    /// What was read of a process whose runtime is `info` (a dynamic
    /// program's libc version filled in from the libc it mapped, at
    /// `libc_path`): its `[vdso]` `image` when readable, the `kernel`'s
    /// version, its `dp` mappings (`state_pages`).
    pub fn of(
        info: &ExeInfo,
        libc_path: Option<String>,
        image: Option<&Image>,
        kernel: Option<(u32, u32)>,
        state_pages: Option<Vec<u64>>,
    ) -> ProcessRandom {
        let symbol = arch::vdso_symbol(info.machine, info.is_64, VdsoFn::Getrandom);
        let vdso_offers = match (symbol, image) {
            (Some(name), Some(img)) => Some(img.symbols.iter().any(|s| s.name == name)),
            (None, _) => Some(false),
            (Some(_), None) => {
                arch::vdso_symbol_row(info.machine, info.is_64, VdsoFn::Getrandom).map(|s| s.in_kernel(kernel))
            }
        };
        ProcessRandom {
            route: random_route(info),
            libc_path,
            vdso_offers,
            symbol,
            state_pages,
            raw_sites: info
                .sites
                .iter()
                .filter(|s| s.function.is_some_and(|f| f.kind() == arch::FnKind::Random))
                .count(),
        }
    }
}

/// `state page at 0x7f… (dp)`, `2 state pages, first at 0x7f… (dp)`.
fn state_text(pages: &[u64]) -> Option<String> {
    match pages {
        [] => None,
        [one] => Some(format!("state page at {one:#x} (dp)")),
        [first, ..] => Some(format!("{} state pages, first at {first:#x} (dp)", thousands(pages.len() as u64))),
    }
}

/// `check -p`'s `process_random` row: whether the process's random bytes
/// come from the vDSO, with its state page as evidence. A runtime that
/// reads the vDSO but has no state page yet has not called getrandom yet
/// (not a fault: the page is mapped at the first call).
pub fn process_random_check(p: &ProcessRandom) -> Check {
    let name = "process_random";
    let rt = p.route.runtime_text();
    let rt = match &p.libc_path {
        Some(path) if !p.route.static_libc && p.route.runtime != Some(Runtime::Go) => format!("{rt} ({path})"),
        _ => rt,
    };
    let symbol = p.symbol.unwrap_or("getrandom");
    let state = p.state_pages.as_deref().and_then(state_text);
    let unread = p.state_pages.is_none();
    let (kind, status, detail, hint) = match p.route.path {
        RandomPath::Vdso if p.vdso_offers == Some(false) => (
            Kind::RandomKernelTooOld,
            Status::Warn,
            format!(
                "random bytes take a syscall: {rt} reads getrandom() from the vDSO, but this process's vDSO exports no {symbol} (Linux 6.11 added it)"
            ),
            Some("a kernel ≥ 6.11 (x86_64; 6.12 on arm64) serves getrandom from the vDSO"),
        ),
        RandomPath::Vdso => (
            Kind::RandomVdso,
            Status::Ok,
            match &state {
                Some(s) => format!("{rt} reads getrandom() from the vDSO ({symbol}); {s}"),
                None if unread => {
                    format!("{rt} reads getrandom() from the vDSO ({symbol}); its smaps (the state page) could not be read")
                }
                None => format!(
                    "{rt} reads getrandom() from the vDSO ({symbol}); no state page (dp) yet: it has not called getrandom() yet"
                ),
            },
            None,
        ),
        RandomPath::Syscall => {
            let lib = match &p.libc_path {
                Some(path) if !p.route.static_libc && p.route.runtime != Some(Runtime::Go) => format!(" ({path})"),
                _ => String::new(),
            };
            let seen = state.map_or_else(String::new, |s| format!("; yet a vDSO getrandom {s} is mapped"));
            let raw = match p.raw_sites {
                0 => String::new(),
                n => format!("; its code makes raw getrandom syscalls too ({} site(s))", thousands(n as u64)),
            };
            (Kind::RandomSyscallOldLibc, Status::Warn, format!("{}{lib}{seen}{raw}", p.route.syscall_text()), Some(p.route.hint()))
        }
        RandomPath::NoCalls => {
            (Kind::RandomNoCalls, Status::Ok, format!("{rt}: it does not reach getrandom (no crypto/rand in it)"), None)
        }
        RandomPath::NotOnArch => (
            Kind::RandomNotOffered,
            Status::Info,
            format!("{rt}: random bytes take a syscall on this architecture and class (no vDSO getrandom it reads)"),
            None,
        ),
        RandomPath::Unknown => match state {
            Some(s) => (Kind::RandomVdso, Status::Ok, format!("{rt}: it reads random bytes from the vDSO: {s}"), None),
            None => (
                Kind::RandomRouteUnknown,
                Status::Info,
                format!("{rt}: whether its random bytes come from the vDSO is not known (no state page (dp) mapped)"),
                None,
            ),
        },
    };
    Check::new(kind, name, status, detail, hint)
}

/// Served getrandom syscalls of one process a runtime that reads the vDSO
/// may make without a fault: seeding (OpenSSL's raw syscall, glibc's
/// getentropy(), which never reads the vDSO) and the vDSO's own key refill
/// where the engine cannot tell it (perf). Above it, a loop: FAIL.
pub const SEED_CALLS: u64 = 16;

/// One process's served getrandom syscalls in a `check -- CMD` trace, and
/// the route of the program it ran (`None`: not known).
pub struct ServedRandom<'a> {
    pub row: &'a super::trace::CountRow,
    pub route: Option<RandomRoute>,
}

/// Processes `command_random` names before "and N more".
const NAMED: usize = 5;

/// `command_random`: the getrandom syscalls the vDSO would have served,
/// each judged by its program's runtime: one that reads the vDSO made them
/// raw (or getentropy()) — FAIL over [`SEED_CALLS`], else OK; an older
/// runtime or one that never reads it — WARN naming the release that
/// does; not known — WARN, never more than was seen.
pub fn command_random_check(served: &[ServedRandom], expected: u64, secs: &str, argv: &str) -> Check {
    if served.is_empty() {
        return Check::new(
            Kind::ObservedClean,
            "command_random",
            Status::Ok,
            format!("in {secs}: no getrandom syscall the vDSO would serve here ({} expected: the vDSO's own key refills, flags it hands to the kernel)", thousands(expected)),
            None,
        );
    }
    let mut worst = Status::Ok;
    let mut lines = Vec::new();
    let mut whys: Vec<String> = Vec::new();
    for s in served {
        let (status, why) = match &s.route {
            Some(route) if route.path == RandomPath::Vdso => {
                let never = route.runtime.and_then(|rt| arch::route(VdsoFn::Getrandom, rt)).map_or("", |r| r.never);
                let or_never =
                    if never.is_empty() { String::new() } else { format!(" or {never}, which never reads it") };
                let why =
                    format!("{} reads getrandom from the vDSO: raw getrandom syscalls{or_never}", route.runtime_text());
                if s.row.count > SEED_CALLS {
                    (Status::Fail, why)
                } else {
                    (Status::Ok, format!("{why}, no more than seeding takes ({SEED_CALLS} a process)"))
                }
            }
            Some(route) if route.path == RandomPath::Syscall => (Status::Warn, route.syscall_reason()),
            _ => {
                (Status::Warn, "an older C library or runtime, or raw syscalls (the program is not known)".to_string())
            }
        };
        worst = Status::worst([worst, status]);
        let who = super::pid_text(s.row.pid, s.row.comm.as_deref());
        lines.push(format!("{who} getrandom ×{}", thousands(s.row.count)));
        if !whys.contains(&why) {
            whys.push(why);
        }
    }
    Check::new(
        Kind::RandomSyscallObserved,
        "command_random",
        worst,
        format!(
            "in {secs}: {} — random bytes the vDSO would serve here: {}",
            crate::words::named_first(&lines, NAMED, || format!(
                "{} calls from {} processes in all",
                thousands(served.iter().map(|s| s.row.count).sum()),
                thousands(served.iter().map(|s| s.row.pid).collect::<std::collections::BTreeSet<_>>().len() as u64)
            )),
            whys.join("; ")
        ),
        (worst != Status::Ok)
            .then(|| format!("`vdsoctl trace --sites -- {argv}` names the code that calls it"))
            .as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::exe::GoInfo;

    fn glibc(version: Option<&str>, interp: bool) -> ExeInfo {
        ExeInfo {
            is_64: true,
            little_endian: true,
            machine: arch::machine::X86_64,
            elf_type: 3,
            interp: interp.then(|| "/lib64/ld-linux-x86-64.so.2".to_string()),
            pie: interp,
            has_dynamic: interp,
            libc: LibcKind::Glibc,
            libc_version: version.map(str::to_string),
            ..ExeInfo::default()
        }
    }

    #[test]
    fn routes_by_runtime_and_version() {
        assert_eq!(random_route(&glibc(Some("2.36"), true)).path, RandomPath::Syscall);
        assert_eq!(random_route(&glibc(Some("2.41"), true)).path, RandomPath::Vdso);
        assert_eq!(random_route(&glibc(Some("2.42"), true)).path, RandomPath::Vdso);
        assert_eq!(random_route(&glibc(None, true)).path, RandomPath::Unknown);
        let mut st = glibc(None, false);
        st.elf_type = 2;
        assert_eq!(random_route(&st).path, RandomPath::Syscall);
        st.random_lookup = true;
        assert_eq!(random_route(&st).path, RandomPath::Vdso);
        let mut m32 = glibc(Some("2.41"), true);
        (m32.is_64, m32.machine) = (false, arch::machine::I386);
        assert_eq!(random_route(&m32).path, RandomPath::NotOnArch);
        let musl = ExeInfo { libc: LibcKind::Musl, ..glibc(Some("1.2.3"), true) };
        assert_eq!(random_route(&musl).path, RandomPath::Syscall);
        let go = |v: &str, getrandom| ExeInfo {
            libc: LibcKind::Go,
            libc_version: Some(v.into()),
            go: Some(GoInfo { version: v.into(), cgo: Some(false), getrandom }),
            ..glibc(None, false)
        };
        assert_eq!(random_route(&go("go1.24.4", None)).path, RandomPath::Vdso);
        assert_eq!(random_route(&go("go1.19.8", Some(true))).path, RandomPath::Syscall);
        assert_eq!(random_route(&go("go1.19.8", Some(false))).path, RandomPath::NoCalls);
        assert_eq!(
            random_route(&go("go1.19.8", Some(true))).syscall_text(),
            "random bytes take a syscall: Go go1.19.8's crypto/rand makes a getrandom syscall per read; Go 1.24 reads it from the vDSO"
        );
    }

    #[test]
    fn one_image_row_per_libc() {
        let mut libc = glibc(Some("2.36"), false);
        libc.soname = Some("libc.so.6".into());
        libc.interp = Some("/lib64/ld-linux-x86-64.so.2".into());
        let (a, b) = (glibc(Some("2.36"), true), glibc(Some("2.36"), true));
        let files = [
            ImageFile { path: "/usr/lib/x86_64-linux-gnu/libc.so.6", info: &libc },
            ImageFile { path: "/usr/bin/a", info: &a },
            ImageFile { path: "/usr/bin/b", info: &b },
        ];
        let rows = image_random_checks(&files);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].name, "random:glibc-2.36");
        assert_eq!(rows[0].status, Status::Warn);
        assert_eq!(
            rows[0].detail,
            "random bytes take a syscall: glibc 2.36 makes getrandom() a syscall; glibc 2.41 reads it from the vDSO (/usr/lib/x86_64-linux-gnu/libc.so.6, loaded by 2 programs (e.g. /usr/bin/a))"
        );
        let new = glibc(Some("2.41"), true);
        assert!(image_random_checks(&[ImageFile { path: "/usr/bin/a", info: &new }]).is_empty());
    }

    #[test]
    fn process_rows() {
        let p = |v: &str, pages: Vec<u64>, offers| ProcessRandom {
            route: random_route(&glibc(Some(v), true)),
            libc_path: Some("/lib/x86_64-linux-gnu/libc.so.6".into()),
            vdso_offers: offers,
            symbol: Some("__vdso_getrandom"),
            state_pages: Some(pages),
            raw_sites: 0,
        };
        let c = process_random_check(&p("2.41", vec![0x7f00_0000_0000], Some(true)));
        assert_eq!(c.status, Status::Ok);
        assert!(c.detail.ends_with("(__vdso_getrandom); state page at 0x7f0000000000 (dp)"), "{}", c.detail);
        let c = process_random_check(&p("2.41", vec![], Some(true)));
        assert_eq!(c.status, Status::Ok);
        assert!(c.detail.contains("it has not called getrandom() yet"), "{}", c.detail);
        assert_eq!(process_random_check(&p("2.41", vec![], Some(false))).status, Status::Warn);
        let c = process_random_check(&p("2.36", vec![], Some(true)));
        assert_eq!(c.status, Status::Warn);
        assert_eq!(
            c.detail,
            "random bytes take a syscall: glibc 2.36 makes getrandom() a syscall; glibc 2.41 reads it from the vDSO (/lib/x86_64-linux-gnu/libc.so.6)"
        );
    }

    /// `check -- CMD`'s getrandom row, each branch: a runtime that reads
    /// the vDSO over and within the seeding allowance, an old one, an
    /// unknown program, none at all.
    #[test]
    fn command_random_is_judged_by_each_programs_route() {
        use crate::model::trace::{tests::bypass_row, CountRow};
        let row = |count: u64| CountRow {
            syscall: "getrandom",
            func: VdsoFn::Getrandom,
            clock: None,
            random: Some(crate::measure::trace::RandomCall::Served),
            count,
            ..bypass_row(7, 1.0)
        };
        let route = |version: &str| RandomRoute {
            runtime: Some(Runtime::Glibc),
            version: Some(version.into()),
            path: if version == "2.41" { RandomPath::Vdso } else { RandomPath::Syscall },
            static_libc: false,
        };
        let judge = |count: u64, route: Option<RandomRoute>| {
            let r = row(count);
            let c = command_random_check(&[ServedRandom { row: &r, route }], 0, "1 s", "prog");
            (c.status, c.detail)
        };
        let (status, detail) = judge(1000, Some(route("2.41")));
        assert_eq!(status, Status::Fail);
        assert!(
            detail.contains("glibc 2.41 reads getrandom from the vDSO: raw getrandom syscalls or getentropy()"),
            "{detail}"
        );
        assert_eq!(judge(SEED_CALLS, Some(route("2.41"))).0, Status::Ok, "seeding passes");
        let (status, detail) = judge(1000, Some(route("2.36")));
        assert_eq!(status, Status::Warn);
        assert!(
            detail.contains("glibc 2.36 makes getrandom() a syscall; glibc 2.41 reads it from the vDSO"),
            "{detail}"
        );
        assert_eq!(judge(1000, None).0, Status::Warn);
        assert_eq!(command_random_check(&[], 2, "1 s", "prog").status, Status::Ok);
    }
}
