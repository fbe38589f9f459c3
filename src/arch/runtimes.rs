//! Runtimes inside a program, beside its C library: which path each takes
//! to a vDSO function, by release and architecture ([`PATHS`]), and what
//! each leaves in a binary that names it and its release ([`SIGNATURES`]).
//! The C library's own getrandom and Go's are `ROUTES`' (judged by
//! version in `model::random`); the rows here are the runtimes a program
//! carries on top of them — rustix and Zig find the vDSO themselves, the
//! getrandom crate, libuv and OpenSSL make their own getrandom syscalls,
//! CPython follows the C library, .NET reads /dev/urandom — and glibc's per-architecture
//! gaps.
//!
//! Read from the sources (each row says which) and, where a binary was at
//! hand, checked against `objdump -d`/`objdump -T` of it: rustix 1.1.6 and
//! getrandom 0.3.4/0.4.3 (vdsoctl's own dependencies), Node 20.20.2's
//! libuv (`uv__getrandom` is `syscall(SYS_getrandom)`), Debian's OpenSSL
//! 3.0 libcrypto (imports `getentropy` weak and `syscall`) and CPython
//! 3.11 (imports `getrandom@GLIBC_2.25`).

use super::{machine, Runtime, VdsoFn};

/// How a runtime reaches a vDSO function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutePath {
    /// It looks the vDSO up and calls it itself (whatever the C library).
    OwnVdso,
    /// It calls the C library's function: the C library's route decides.
    Libc,
    /// A raw syscall every call, whatever the C library.
    Syscall,
    /// Raw syscalls only to seed its own generator: a few per process.
    Seed,
    /// glibc's `sched_getcpu()`: the rseq area's `cpu_id` first, neither
    /// the vDSO nor a syscall while rseq is registered (glibc ≥ 2.35).
    Rseq,
    /// A `read` of `/dev/urandom` every call: a syscall, but not the
    /// function's own (no getrandom syscall is counted for it).
    DeviceRead,
}

impl RoutePath {
    /// Whether this path reaches the vDSO (itself or through the C library).
    pub fn reads_vdso(self) -> bool {
        matches!(self, RoutePath::OwnVdso | RoutePath::Libc | RoutePath::Rseq)
    }
}

/// One runtime's path to one function, for the releases `from` ..
/// `until` (exclusive; `None`: every later one) on `machines` (ELF
/// `e_machine`; empty: every one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathRow {
    pub runtime: Runtime,
    pub function: VdsoFn,
    pub from: (u32, u32),
    pub until: Option<(u32, u32)>,
    pub machines: &'static [u16],
    pub path: RoutePath,
    /// The entry point this is about, as a user knows it.
    pub entry: &'static str,
    /// A symbol that is there when the entry is linked in (`None`: the
    /// runtime is the entry): where the file has the runtime's symbols and
    /// not this one, the row is not its (rustix built for `fs` alone has
    /// no `vdso_wrappers` and no `rand`).
    pub linked: Option<Marker>,
}

impl PathRow {
    /// Whether the row covers `version` (`None`: any) on `machine`.
    pub fn covers(&self, version: Option<(u32, u32)>, m: u16) -> bool {
        let in_range = version.is_none_or(|v| v >= self.from && self.until.is_none_or(|u| v < u));
        in_range && (self.machines.is_empty() || self.machines.contains(&m))
    }

    /// The first later release of the same runtime whose path to the same
    /// function reads the vDSO (itself or through the C library); `None`:
    /// no release does yet.
    pub fn fixed_in(&self) -> Option<(u32, u32)> {
        PATHS
            .iter()
            .filter(|r| r.runtime == self.runtime && r.function == self.function && r.from > self.from)
            .filter(|r| r.path.reads_vdso())
            .map(|r| r.from)
            .min()
    }
}

/// rustix's `linux_raw` backend looks `clock_gettime` up on every
/// architecture it has (`vdso_wrappers.rs`; the 32-bit ones the `64`
/// symbol), `getcpu` where the vDSO has one (not arm64).
const RUSTIX_CLOCK: &[u16] = &[
    machine::X86_64,
    machine::I386,
    machine::AARCH64,
    machine::ARM,
    machine::RISCV,
    machine::PPC64,
    machine::PPC,
    machine::S390,
    machine::MIPS,
];
const RUSTIX_GETCPU: &[u16] =
    &[machine::X86_64, machine::I386, machine::RISCV, machine::PPC64, machine::PPC, machine::S390];

/// rustix's vDSO code (`backend::vdso_wrappers`, its `#[cold]` init
/// never inlined), legacy-mangled: there when `time` or `thread` is used.
const RUSTIX_VDSO: &str = "_ZN6rustix7backend13vdso_wrappers";

/// Every release: (0, 0) onwards.
const ALWAYS: (u32, u32) = (0, 0);

/// Each runtime's path, by release and architecture.
pub const PATHS: &[PathRow] = &[
    // rustix, linux_raw backend (the default on Linux; `--cfg
    // rustix_use_libc` or an architecture without it takes libc's).
    PathRow {
        runtime: Runtime::Rustix,
        function: VdsoFn::ClockGettime,
        from: ALWAYS,
        until: None,
        machines: RUSTIX_CLOCK,
        path: RoutePath::OwnVdso,
        entry: "rustix::time::clock_gettime",
        linked: Some(Marker::Prefix(RUSTIX_VDSO)),
    },
    PathRow {
        runtime: Runtime::Rustix,
        function: VdsoFn::Getcpu,
        from: ALWAYS,
        until: None,
        machines: RUSTIX_GETCPU,
        path: RoutePath::OwnVdso,
        entry: "rustix::thread::sched_getcpu",
        linked: Some(Marker::Prefix(RUSTIX_VDSO)),
    },
    // rustix's rand::getrandom is the raw syscall (backend/linux_raw/rand).
    PathRow {
        runtime: Runtime::Rustix,
        function: VdsoFn::Getrandom,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::Syscall,
        entry: "rustix::rand::getrandom",
        linked: Some(Marker::Prefix("_ZN6rustix7backend4rand")),
    },
    // getrandom 0.1/0.2: libc::syscall(SYS_getrandom) (linux_android.rs).
    PathRow {
        runtime: Runtime::GetrandomCrate,
        function: VdsoFn::Getrandom,
        from: ALWAYS,
        until: Some((0, 3)),
        machines: &[],
        path: RoutePath::Syscall,
        entry: "getrandom::getrandom",
        linked: None,
    },
    // getrandom 0.3 and 0.4 with a C library: dlsym("getrandom") (glibc),
    // libc::getrandom (musl) — linux_android_with_fallback.rs; the
    // linux_raw backend (no libc, or `--cfg getrandom_backend="linux_raw"`)
    // makes raw syscalls, which the code scan names as sites.
    PathRow {
        runtime: Runtime::GetrandomCrate,
        function: VdsoFn::Getrandom,
        from: (0, 3),
        until: None,
        machines: &[],
        path: RoutePath::Libc,
        entry: "getrandom::fill",
        linked: None,
    },
    // Zig std without libc: std.os.linux.clock_gettime looks up the vDSO's
    // symbol itself (Zig 0.17.1: os.linux.vdso_clock_gettime; strace -f -c
    // counts no clock_gettime of fixtures/zig/clock_loop.zig); without
    // libc, std.Io.randomSecure is std.os.linux.getrandom, the raw syscall
    // (Zig 0.17.1's lib/std/Io/Threaded.zig; with libc, libc's getrandom).
    PathRow {
        runtime: Runtime::Zig,
        function: VdsoFn::ClockGettime,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::OwnVdso,
        entry: "std.time, std.posix.clock_gettime",
        linked: None,
    },
    PathRow {
        runtime: Runtime::Zig,
        function: VdsoFn::Getrandom,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::Syscall,
        entry: "std.Io.randomSecure",
        linked: Some(Marker::Suffix("Threaded.randomSecure")),
    },
    // OpenSSL 1.1.1 and 3.x: the DRBG seeds from getentropy() (glibc's is
    // the syscall, never the vDSO) or syscall(SYS_getrandom)
    // (providers/implementations/rands/seeding/rand_unix.c).
    PathRow {
        runtime: Runtime::Openssl,
        function: VdsoFn::Getrandom,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::Seed,
        entry: "RAND_bytes",
        linked: None,
    },
    // libuv: uv_random → uv__getrandom = syscall(SYS_getrandom) (Node
    // 20.20.2's, objdump -d).
    PathRow {
        runtime: Runtime::Libuv,
        function: VdsoFn::Getrandom,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::Syscall,
        entry: "uv_random",
        linked: None,
    },
    // CPython: os.urandom → libc getrandom() (Python/bootstrap_hash.c,
    // HAVE_GETRANDOM); time.time/monotonic → libc clock_gettime.
    PathRow {
        runtime: Runtime::Cpython,
        function: VdsoFn::Getrandom,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::Libc,
        entry: "os.urandom, secrets",
        linked: None,
    },
    PathRow {
        runtime: Runtime::Cpython,
        function: VdsoFn::ClockGettime,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::Libc,
        entry: "time.time, time.monotonic",
        linked: None,
    },
    // .NET: System.Native's secure random bytes (pal_random.c, 5.0 to
    // 10: RandomNumberGenerator, Guid.NewGuid) are a read(2) of a
    // /dev/urandom descriptor it opens once, whatever the C library;
    // Microsoft's builds (older glibc) take its non-secure bytes
    // (Random's seed) from /dev/urandom too: 3.1.23's System.Native.so
    // imports open/read, no getrandom or arc4random_buf. Its clocks are
    // the C library's clock_gettime.
    PathRow {
        runtime: Runtime::Dotnet,
        function: VdsoFn::Getrandom,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::DeviceRead,
        entry: "System.Native (RandomNumberGenerator from 5.0, Random's seed)",
        linked: None,
    },
    PathRow {
        runtime: Runtime::Dotnet,
        function: VdsoFn::ClockGettime,
        from: ALWAYS,
        until: None,
        machines: &[],
        path: RoutePath::Libc,
        entry: "Stopwatch, DateTime.UtcNow",
        linked: None,
    },
    // glibc's per-architecture gaps: i386's clock_getres makes the
    // syscall (no release looks up __vdso_clock_getres_time64); arm64's
    // time() reads CLOCK_REALTIME_COARSE through __kernel_clock_gettime
    // (its vDSO has no time); sched_getcpu() reads rseq first (2.35).
    PathRow {
        runtime: Runtime::Glibc,
        function: VdsoFn::ClockGetres,
        from: ALWAYS,
        until: None,
        machines: &[machine::I386],
        path: RoutePath::Syscall,
        entry: "clock_getres() on i386",
        linked: None,
    },
    PathRow {
        runtime: Runtime::Glibc,
        function: VdsoFn::Time,
        from: ALWAYS,
        until: None,
        machines: &[machine::AARCH64],
        path: RoutePath::OwnVdso,
        entry: "time() on arm64 (CLOCK_REALTIME_COARSE through __kernel_clock_gettime)",
        linked: None,
    },
    PathRow {
        runtime: Runtime::Glibc,
        function: VdsoFn::Getcpu,
        from: (2, 35),
        until: None,
        machines: &[],
        path: RoutePath::Rseq,
        entry: "sched_getcpu() (rseq's cpu_id first)",
        linked: None,
    },
];

/// `runtime`'s path to `function` at `version` (`None`: not known — a
/// row only when every release takes the same path) on `machine`.
pub fn path_of(runtime: Runtime, function: VdsoFn, version: Option<(u32, u32)>, m: u16) -> Option<&'static PathRow> {
    let mut rows = PATHS.iter().filter(|r| r.runtime == runtime && r.function == function && r.covers(version, m));
    let first = rows.next()?;
    match version {
        Some(_) => Some(first),
        None => rows.all(|r| r.path == first.path).then_some(first),
    }
}

/// What a runtime leaves in a binary that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    pub runtime: Runtime,
    /// A Rust crate's directory in the panic locations rustc embeds
    /// (`…/getrandom-0.3.4/src/…`): `getrandom-`, its release after it.
    pub crate_dir: Option<&'static str>,
    /// Symbol names that name it without its release: legacy-mangled
    /// Rust symbols (`_ZN6rustix…`), an exported function (`uv_random`).
    pub markers: &'static [Marker],
    /// A library (DT_NEEDED or its own DT_SONAME) whose name starts so,
    /// its release after the prefix (`libcrypto.so.3` → 3).
    pub libraries: &'static [&'static str],
    /// A banner with its release after it (`OpenSSL 3.0.19`).
    pub banner: Option<&'static str>,
    /// Symbols only one line of releases has, with that line, for a file
    /// that names no release (a release build keeps no panic location of
    /// the crate): its version then says the line (`0.1/0.2`).
    pub lines: &'static [(Marker, &'static str)],
    /// The enclosing functions (demangled prefixes) of its own raw
    /// syscalls: a site in one is the runtime's, judged by its row.
    pub site_symbols: &'static [&'static str],
}

/// A symbol name as a string table holds it (NUL-terminated): the whole
/// name, its start or its end. A string literal inside another program's
/// data (vdsoctl's own table) is not NUL-delimited so, and is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Name(&'static str),
    Prefix(&'static str),
    Suffix(&'static str),
}

impl Marker {
    /// The bytes looked for.
    pub fn text(self) -> &'static str {
        match self {
            Marker::Name(s) | Marker::Prefix(s) | Marker::Suffix(s) => s,
        }
    }

    /// Whether the bytes around a match at `i` of `buf` (the match `len`
    /// long) make it the name, start or end of a NUL-terminated string.
    pub fn delimited(self, buf: &[u8], i: usize, len: usize) -> bool {
        let before = i == 0 || buf[i - 1] == 0;
        let after = buf.get(i + len).is_none_or(|&b| b == 0);
        match self {
            Marker::Name(_) => before && after,
            Marker::Prefix(_) => before,
            Marker::Suffix(_) => after,
        }
    }
}

/// How each runtime is recognised in a binary.
pub const SIGNATURES: &[Signature] = &[
    Signature {
        runtime: Runtime::Rustix,
        crate_dir: Some("rustix-"),
        markers: &[Marker::Prefix("_ZN6rustix")],
        libraries: &[],
        banner: None,
        lines: &[],
        site_symbols: &["rustix::"],
    },
    Signature {
        runtime: Runtime::GetrandomCrate,
        crate_dir: Some("getrandom-"),
        markers: &[Marker::Prefix("_ZN9getrandom")],
        libraries: &[],
        banner: None,
        // 0.1 and 0.2 keep their Linux code in `imp` (`#[path]` modules);
        // 0.3 moved it to `backends` (0.2.17 and 0.4.3 checked with nm).
        lines: &[
            (Marker::Prefix("_ZN9getrandom3imp"), "0.1/0.2"),
            (Marker::Prefix("_ZN9getrandom8backends"), "0.3 or later"),
        ],
        site_symbols: &["getrandom::"],
    },
    Signature {
        runtime: Runtime::Zig,
        crate_dir: None,
        markers: &[Marker::Suffix("linux.vdso_clock_gettime"), Marker::Suffix("os.linux.vdso.lookup")],
        libraries: &[],
        banner: None,
        lines: &[],
        site_symbols: &["os.linux.", "posix."],
    },
    Signature {
        runtime: Runtime::Openssl,
        crate_dir: None,
        markers: &[],
        libraries: &["libcrypto.so."],
        banner: Some("OpenSSL "),
        lines: &[],
        site_symbols: &["syscall_random", "ossl_pool_acquire_entropy", "ossl_prov_get_entropy"],
    },
    Signature {
        runtime: Runtime::Libuv,
        crate_dir: None,
        markers: &[Marker::Name("uv__getrandom"), Marker::Name("uv_random")],
        libraries: &["libuv.so."],
        banner: None,
        lines: &[],
        site_symbols: &["uv__getrandom", "uv__random"],
    },
    Signature {
        runtime: Runtime::Cpython,
        crate_dir: None,
        markers: &[Marker::Name("Py_Initialize")],
        libraries: &["libpython"],
        banner: None,
        lines: &[],
        site_symbols: &[],
    },
    Signature {
        runtime: Runtime::Dotnet,
        crate_dir: None,
        // 5.0 and later export both; 3.1 the non-secure one alone.
        markers: &[
            Marker::Name("SystemNative_GetCryptographicallySecureRandomBytes"),
            Marker::Name("SystemNative_GetNonCryptographicallySecureRandomBytes"),
        ],
        libraries: &["libcoreclr.so", "libSystem.Native.so"],
        banner: None,
        lines: &[],
        site_symbols: &[],
    },
];
