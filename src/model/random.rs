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

use super::Status;
use crate::arch::{self, Runtime, VdsoFn};
use crate::inspect::elf::Image;
use crate::inspect::exe::{self, ExeInfo, LibcKind, Linkage};
use crate::model::kind::Kind;
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
        Runtime::Glibc
        | Runtime::Musl
        | Runtime::Rustix
        | Runtime::GetrandomCrate
        | Runtime::Zig
        | Runtime::Openssl
        | Runtime::Libuv
        | Runtime::Cpython
        | Runtime::Dotnet => info.libc_version.as_deref().and_then(crate::inspect::kernel::parse_version),
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

/// One ELF file of an image, as the random-bytes rows see it.
pub struct ImageFile<'a> {
    pub path: &'a str,
    /// With a dynamic program's libc version filled in from the image's libc.
    pub info: &'a ExeInfo,
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

/// One runtime release of an image whose random bytes take a syscall: a C
/// library with the programs and libraries that load it, a static glibc,
/// a Go release with its programs that reach getrandom. Worded in
/// `render/random.rs` (`image_random_rows`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RandomGroup<'a> {
    pub route: RandomRoute,
    /// The C library itself, for a dynamic glibc or musl.
    pub libc: Option<&'a str>,
    pub programs: Vec<&'a str>,
    pub libraries: usize,
    /// Files with raw getrandom syscalls in their code.
    pub raw: Vec<&'a str>,
}

impl RandomGroup<'_> {
    pub fn kind(&self) -> Kind {
        Kind::RandomSyscallOldLibc
    }

    /// WARN: the image's binaries keep their clock verdicts.
    pub fn status(&self) -> Status {
        Status::Warn
    }
}

/// The image's random-bytes groups: one per runtime release whose random
/// bytes take a syscall, each with a program or its C library.
/// Binaries not judged here: 32-bit and other architectures (no vDSO
/// getrandom their runtime reads), unknown runtimes or versions.
pub fn image_random_groups<'a>(files: &[ImageFile<'a>]) -> Vec<RandomGroup<'a>> {
    let mut groups: Vec<RandomGroup> = Vec::new();
    for f in files {
        let route = random_route(f.info);
        if route.path != RandomPath::Syscall {
            continue;
        }
        let raw = f.info.sites.iter().any(|s| s.function.is_some_and(|f| f.kind() == arch::FnKind::Random));
        let libc_itself = f.info.is_library()
            && f.info.soname.as_deref().is_some_and(|s| s.starts_with("libc.") || s.starts_with("ld-musl"));
        let i = match groups.iter().position(|g| g.route == route) {
            Some(i) => i,
            None => {
                groups.push(RandomGroup { route, libc: None, programs: Vec::new(), libraries: 0, raw: Vec::new() });
                groups.len() - 1
            }
        };
        let g = &mut groups[i];
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
    groups.retain(|g| !g.programs.is_empty() || g.libc.is_some());
    groups
}

/// What `check -p`'s `process_random` row says of a process's random
/// bytes, as a fact (its data is the [`ProcessRandom`]'s). Worded in
/// `render/random.rs` (`process_random_row`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessRandomVerdict {
    /// Its runtime reads the vDSO, whose image exports no getrandom.
    KernelTooOld,
    /// Read from the vDSO, with its state pages: seen, not read, none yet.
    Vdso(StatePages),
    /// A getrandom syscall per call (an older runtime).
    Syscall,
    /// It does not reach getrandom.
    NoCalls,
    /// No vDSO getrandom its runtime reads on this architecture.
    NotOnArch,
    /// Runtime not known, but a state page is mapped: the vDSO's.
    UnknownButMapped,
    /// Runtime not known, no state page.
    Unknown,
}

/// What the process's `dp` mappings said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatePages {
    Mapped,
    /// Its smaps could not be read.
    Unread,
    /// None yet: it has not called getrandom yet.
    NoneYet,
}

impl ProcessRandomVerdict {
    pub fn kind(self) -> Kind {
        match self {
            ProcessRandomVerdict::KernelTooOld => Kind::RandomKernelTooOld,
            ProcessRandomVerdict::Vdso(_) | ProcessRandomVerdict::UnknownButMapped => Kind::RandomVdso,
            ProcessRandomVerdict::Syscall => Kind::RandomSyscallOldLibc,
            ProcessRandomVerdict::NoCalls => Kind::RandomNoCalls,
            ProcessRandomVerdict::NotOnArch => Kind::RandomNotOffered,
            ProcessRandomVerdict::Unknown => Kind::RandomRouteUnknown,
        }
    }

    pub fn status(self) -> Status {
        match self {
            ProcessRandomVerdict::KernelTooOld | ProcessRandomVerdict::Syscall => Status::Warn,
            ProcessRandomVerdict::Vdso(_) | ProcessRandomVerdict::UnknownButMapped | ProcessRandomVerdict::NoCalls => {
                Status::Ok
            }
            ProcessRandomVerdict::NotOnArch | ProcessRandomVerdict::Unknown => Status::Info,
        }
    }
}

impl ProcessRandom {
    /// Whether the process's random bytes come from the vDSO, its state
    /// page as evidence. A runtime that reads the vDSO but has no state
    /// page yet has not called getrandom yet (not a fault: the page is
    /// mapped at the first call).
    pub fn verdict(&self) -> ProcessRandomVerdict {
        let mapped = self.state_pages.as_deref().is_some_and(|p| !p.is_empty());
        match self.route.path {
            RandomPath::Vdso if self.vdso_offers == Some(false) => ProcessRandomVerdict::KernelTooOld,
            RandomPath::Vdso => ProcessRandomVerdict::Vdso(match &self.state_pages {
                _ if mapped => StatePages::Mapped,
                None => StatePages::Unread,
                Some(_) => StatePages::NoneYet,
            }),
            RandomPath::Syscall => ProcessRandomVerdict::Syscall,
            RandomPath::NoCalls => ProcessRandomVerdict::NoCalls,
            RandomPath::NotOnArch => ProcessRandomVerdict::NotOnArch,
            RandomPath::Unknown if mapped => ProcessRandomVerdict::UnknownButMapped,
            RandomPath::Unknown => ProcessRandomVerdict::Unknown,
        }
    }
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
    /// A runtime the program carries that makes its own getrandom
    /// syscalls (the getrandom crate before 0.3): what made them.
    pub carried: Option<CarriedRandom>,
}

/// A carried runtime's own getrandom path, raw syscalls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedRandom {
    pub runtime: crate::inspect::exe::Carried,
    pub row: &'static arch::PathRow,
}

/// The runtime `info` carries that makes raw getrandom syscalls every
/// call, by its row of `arch::PATHS` (linked in where its symbols say).
pub fn carried_random(info: &ExeInfo) -> Option<CarriedRandom> {
    info.carried.iter().find_map(|c| {
        let row = arch::path_of(c.runtime, VdsoFn::Getrandom, c.release(), info.machine)?;
        (row.path == arch::RoutePath::Syscall && c.links(row)).then(|| CarriedRandom { runtime: c.clone(), row })
    })
}

/// Why one process's served getrandom syscalls are judged as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RandomWhy {
    /// Its runtime reads the vDSO: raw syscalls (or `never`, the call of
    /// that runtime that never reads it); `seeding`: no more than
    /// [`SEED_CALLS`].
    VdsoRaw { route: RandomRoute, never: &'static str, seeding: bool },
    /// An older runtime, or one that never reads the vDSO.
    OldRuntime(RandomRoute),
    /// A runtime the program carries makes them, whatever the C library.
    Carried(CarriedRandom),
    /// The program is not known.
    Unknown,
}

/// One process's served getrandom syscalls, judged.
pub struct JudgedRandom<'a> {
    pub row: &'a super::trace::CountRow,
    pub status: Status,
    pub why: RandomWhy,
}

/// `command_random`'s judgement: the getrandom syscalls the vDSO would have
/// served, each by its program's runtime: one that reads the vDSO made
/// them raw (or getentropy()) — FAIL over [`SEED_CALLS`], else OK; an
/// older runtime or one that never reads it — WARN; not known — WARN,
/// never more than was seen. Worded in `render/random.rs`.
pub fn judge_command_random<'a>(served: &[ServedRandom<'a>]) -> Vec<JudgedRandom<'a>> {
    let judge = |s: &ServedRandom<'a>| {
        let (status, why) = match (&s.route, &s.carried) {
            // Judged as before (never weaker), the carried runtime named.
            (Some(route), Some(carried)) => {
                let over = route.path == RandomPath::Vdso && s.row.count > SEED_CALLS;
                let status = if over { Status::Fail } else { Status::Warn };
                (status, RandomWhy::Carried(carried.clone()))
            }
            (Some(route), None) if route.path == RandomPath::Vdso => {
                let never = route.runtime.and_then(|rt| arch::route(VdsoFn::Getrandom, rt)).map_or("", |r| r.never);
                let seeding = s.row.count <= SEED_CALLS;
                let status = if seeding { Status::Ok } else { Status::Fail };
                (status, RandomWhy::VdsoRaw { route: route.clone(), never, seeding })
            }
            (Some(route), None) if route.path == RandomPath::Syscall => {
                (Status::Warn, RandomWhy::OldRuntime(route.clone()))
            }
            _ => (Status::Warn, RandomWhy::Unknown),
        };
        JudgedRandom { row: s.row, status, why }
    };
    served.iter().map(judge).collect()
}

/// The kind of `command_random`'s row: clean when nothing was served.
pub fn command_random_kind(judged: &[JudgedRandom]) -> Kind {
    if judged.is_empty() {
        Kind::ObservedClean
    } else {
        Kind::RandomSyscallObserved
    }
}

/// The status of `command_random`'s row: the worst of its processes'.
pub fn command_random_status(judged: &[JudgedRandom]) -> Status {
    Status::worst(judged.iter().map(|j| j.status))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::inspect::exe::GoInfo;

    /// A glibc program (dynamic with `interp`) of `version`, for the
    /// random-bytes tests here and in render/random.rs.
    pub(crate) fn glibc(version: Option<&str>, interp: bool) -> ExeInfo {
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
    }

    #[test]
    fn one_image_group_per_libc() {
        let mut libc = glibc(Some("2.36"), false);
        libc.soname = Some("libc.so.6".into());
        libc.interp = Some("/lib64/ld-linux-x86-64.so.2".into());
        let (a, b) = (glibc(Some("2.36"), true), glibc(Some("2.36"), true));
        let files = [
            ImageFile { path: "/usr/lib/x86_64-linux-gnu/libc.so.6", info: &libc },
            ImageFile { path: "/usr/bin/a", info: &a },
            ImageFile { path: "/usr/bin/b", info: &b },
        ];
        let groups = image_random_groups(&files);
        assert_eq!(groups.len(), 1, "{groups:?}");
        assert_eq!(groups[0].libc, Some("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert_eq!(groups[0].programs, ["/usr/bin/a", "/usr/bin/b"]);
        assert_eq!((groups[0].kind(), groups[0].status()), (Kind::RandomSyscallOldLibc, Status::Warn));
        let new = glibc(Some("2.41"), true);
        assert!(image_random_groups(&[ImageFile { path: "/usr/bin/a", info: &new }]).is_empty());
    }

    #[test]
    fn process_verdicts() {
        let p = |v: &str, pages: Option<Vec<u64>>, offers| ProcessRandom {
            route: random_route(&glibc(Some(v), true)),
            libc_path: None,
            vdso_offers: offers,
            symbol: Some("__vdso_getrandom"),
            state_pages: pages,
            raw_sites: 0,
        };
        let v = |p: ProcessRandom| (p.verdict(), p.verdict().kind(), p.verdict().status());
        assert_eq!(
            v(p("2.41", Some(vec![1]), Some(true))),
            (ProcessRandomVerdict::Vdso(StatePages::Mapped), Kind::RandomVdso, Status::Ok)
        );
        assert_eq!(p("2.41", Some(vec![]), Some(true)).verdict(), ProcessRandomVerdict::Vdso(StatePages::NoneYet));
        assert_eq!(p("2.41", None, Some(true)).verdict(), ProcessRandomVerdict::Vdso(StatePages::Unread));
        assert_eq!(
            v(p("2.41", Some(vec![]), Some(false))),
            (ProcessRandomVerdict::KernelTooOld, Kind::RandomKernelTooOld, Status::Warn)
        );
        assert_eq!(
            v(p("2.36", Some(vec![]), Some(true))),
            (ProcessRandomVerdict::Syscall, Kind::RandomSyscallOldLibc, Status::Warn)
        );
    }
}
