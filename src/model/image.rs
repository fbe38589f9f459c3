//! What is wrong with a vDSO image, as data: whether it is a vDSO at all,
//! what the parser read past, what the C library cannot bind in it, and
//! which hash tables it lacks. `dump` lists the findings, `check` judges
//! them (a missing DT_HASH only matters to musl) without re-reading words.
//! The rules are those of [`measure::bench::vdso::bind`](crate::measure::bench::vdso::bind),
//! the binding bench calls through: a version whose `vd_hash` is wrong is
//! the parser's [`Issue::VersionHash`], so both read one image the same way.

use super::kind::Kind;
use super::{Finding, Status};
use crate::arch::{self, VdsoFn};
use crate::inspect::elf::{self, Image, Issue};

/// One thing wrong with an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageProblem {
    /// What the parser read past.
    Parser(Issue),
    /// Neither a vDSO soname nor a `LINUX_*` version.
    NotAVdso { soname: Option<String> },
    /// No table of the C library's vDSO symbols for this machine and class.
    NoAbiTable { machine: u16, is_64: bool },
    /// The C library's symbol for `function` is not exported.
    NotExported { symbol: &'static str, function: VdsoFn },
    /// Exported, but not with the version the C library binds.
    WrongVersion { symbol: &'static str, function: VdsoFn, have: Vec<String>, want: &'static str },
    /// DT_GNU_HASH only: musl binds nothing.
    GnuHashOnly,
    /// No hash table at all: nothing binds.
    NoHashTable,
}

/// `check --image`'s `image_walk` row: `count` entries could not be read
/// (the first `first`, for `why`), so the audit is incomplete: a warning.
pub fn image_walk_check(count: usize, first: &str, why: &str) -> super::row::Check {
    super::row::Check::new(
        Kind::ImageIncomplete,
        "image_walk",
        Status::Warn,
        format!(
            "{} entries could not be read (or parsed as ELF) and are not audited (first {first}: {why})",
            crate::words::thousands(count as u64)
        ),
        Some("run as a user who can read the whole tree (root, for an unpacked image); --json lists each in image.unreadable"),
    )
}

/// `check --image`'s rows about the runner's kernel (its vDSO's hash
/// tables, its vsyscall mode): not production's, so INFO, said as such and
/// left out of the image's verdict; a SKIP stays one.
pub fn runner_context(checks: Vec<super::row::Check>) -> Vec<super::row::Check> {
    checks
        .into_iter()
        .map(|c| match c.status {
            Status::Skip => c,
            _ => super::row::Check {
                kind: Kind::RunnerKernel,
                detail: format!("the runner's kernel, not the image's (left out of its verdict): {}", c.detail),
                status: Status::Info,
                ..c
            },
        })
        .collect()
}

/// `check --image` with no /proc (a chroot, a bare container): the
/// runner's kernel is not read, its rows SKIP.
pub fn no_proc_checks() -> Vec<super::row::Check> {
    let why = "no /proc here (a chroot or a container without it): this kernel's";
    let hint = Some("mount proc (`mount -t proc proc /proc`) to judge the binaries against this kernel");
    vec![
        super::row::Check::new(
            Kind::RunnerKernel,
            "vdso_symbols",
            Status::Skip,
            format!("{why} vDSO is not read"),
            hint,
        ),
        super::row::Check::new(
            Kind::RunnerKernel,
            "vsyscall",
            Status::Skip,
            format!("{why} vsyscall mode is unknown (the verdicts assume xonly, the default since 5.3)"),
            hint,
        ),
    ]
}

/// Whether the image is a vDSO: a `linux-vdso*` or `linux-gate.so.1`
/// soname, or a `LINUX_*` version definition (every kernel's vDSO has both).
pub fn is_vdso(img: &Image) -> bool {
    let soname = img.soname.as_deref().unwrap_or("");
    soname.starts_with("linux-vdso")
        || soname == "linux-gate.so.1"
        || img.versions.iter().any(|v| v.name.starts_with("LINUX_"))
}

/// Everything wrong with `img`, in the order `dump` lists it.
pub fn problems(img: &Image) -> Vec<ImageProblem> {
    let mut out: Vec<ImageProblem> = img.issues.iter().cloned().map(ImageProblem::Parser).collect();
    if !is_vdso(img) {
        out.push(ImageProblem::NotAVdso { soname: img.soname.clone() });
        return out;
    }
    match arch::vdso_abi(img.machine, img.is_64) {
        None => out.push(ImageProblem::NoAbiTable { machine: img.machine, is_64: img.is_64 }),
        Some(abi) => {
            for want in abi.symbols {
                let found: Vec<&elf::Symbol> = img.symbols.iter().filter(|s| s.name == want.name).collect();
                let versioned =
                    found.iter().any(|s| s.version.as_ref().and_then(|v| v.name.as_deref()) == Some(abi.version));
                // A symbol a later kernel added (getrandom): its absence says
                // the kernel is older, which the getrandom rows judge.
                if found.is_empty() && want.since.is_some() {
                    continue;
                }
                if found.is_empty() {
                    out.push(ImageProblem::NotExported { symbol: want.name, function: want.function });
                } else if !versioned {
                    let have = found.iter().map(|s| s.version.as_ref().map_or("no version".into(), |v| v.display()));
                    out.push(ImageProblem::WrongVersion {
                        symbol: want.name,
                        function: want.function,
                        have: have.collect(),
                        want: abi.version,
                    });
                }
            }
        }
    }
    match (img.has_hash, img.has_gnu_hash) {
        (true, _) => {}
        (false, true) => out.push(ImageProblem::GnuHashOnly),
        (false, false) => out.push(ImageProblem::NoHashTable),
    }
    out
}

impl ImageProblem {
    /// The finding, worded once.
    pub fn finding(&self) -> Finding {
        match self {
            ImageProblem::Parser(issue) => issue_finding(issue),
            ImageProblem::NotAVdso { soname } => {
                let soname = match soname {
                    Some(s) => format!("its soname is {s}"),
                    None => "it has no soname".to_string(),
                };
                Finding::new(
                    Kind::NotAVdso,
                    Status::Fail,
                    format!(
                        "not a vDSO: {soname} (a vDSO's is linux-vdso.so.1, linux-vdso32/64.so.1 or linux-gate.so.1) and it defines no LINUX_* version; what it has is listed above"
                    ),
                    Some("pass a vDSO image: `vdsoctl dump -o vdso.so` writes this host's, `-p PID` reads a process's".into()),
                )
            }
            ImageProblem::NoAbiTable { machine, is_64 } => Finding::new(
                Kind::VdsoArchUnknown,
                Status::Info,
                format!(
                    "no table of the C library's vDSO symbols for {} {}: exports not checked",
                    arch::machine_name(*machine),
                    if *is_64 { "64-bit" } else { "32-bit" }
                ),
                None,
            ),
            ImageProblem::NotExported { symbol, function } => Finding::new(
                Kind::VdsoExportsBroken,
                Status::Warn,
                format!(
                    "the vDSO exports no {symbol}: {}() through the C library takes the syscall on every call",
                    function.name()
                ),
                Some("an old kernel or an emulator's synthetic vDSO; `vdsoctl bench` measures what it costs".into()),
            ),
            ImageProblem::WrongVersion { symbol, function, have, want } => Finding::new(
                Kind::VdsoExportsBroken,
                Status::Warn,
                format!(
                    "{symbol} is versioned {} but the C library binds {want}: the lookup fails and {}() takes the syscall",
                    have.join(", "),
                    function.name()
                ),
                None,
            ),
            ImageProblem::GnuHashOnly => Finding::new(
                Kind::VdsoGnuHashOnly,
                Status::Warn,
                "the vDSO has no DT_HASH, only DT_GNU_HASH: musl looks vDSO symbols up through DT_HASH only, so musl programs take the syscall for every clock read",
                Some("glibc programs are unaffected; a kernel vDSO linked with --hash-style=both restores DT_HASH".into()),
            ),
            ImageProblem::NoHashTable => Finding::new(
                Kind::VdsoExportsBroken,
                Status::Fail,
                "the vDSO has no symbol hash table (neither DT_HASH nor DT_GNU_HASH): no C library can look up its symbols",
                None,
            ),
        }
    }
}

/// What the parser read past, as a finding.
fn issue_finding(issue: &Issue) -> Finding {
    match issue {
        Issue::Capped { table, claimed, kept } => Finding::new(
            Kind::ElfMalformed,
            Status::Warn,
            format!(
                "the image claims {claimed} {table}, more than a vDSO can hold: only the first {kept} were read"
            ),
            Some("a damaged or crafted image; a kernel's vDSO has a few dozen of each at most".into()),
        ),
        Issue::NoteAlignment { offset, align } => Finding::new(
            Kind::ElfMalformed,
            Status::Warn,
            format!(
                "the note area at offset {offset:#x} has alignment {align}: readelf rejects it whole (\"Corrupt note: alignment {align}, expecting 4 or 8\"); its notes are decoded here as 4-byte aligned"
            ),
            None,
        ),
        Issue::NoteTruncated { offset, namesz, descsz } => Finding::new(
            Kind::ElfMalformed,
            Status::Warn,
            format!(
                "the note at offset {offset:#x} (namesz {namesz:#x}, descsz {descsz:#x}) runs past its area: readelf stops there too (\"note with invalid namesz and/or descsz\"); the notes before it are listed"
            ),
            None,
        ),
        Issue::NoteCut { offset, size } => Finding::new(
            Kind::ElfMalformed,
            Status::Warn,
            format!(
                "the note at offset {offset:#x} claims a {} descriptor: only the first {} are kept, undecoded",
                crate::words::human_size(*size),
                crate::words::human_size(elf::caps::NOTE_DESC as u64)
            ),
            None,
        ),
        Issue::LongNames { count } => Finding::new(
            Kind::ElfMalformed,
            Status::Warn,
            format!("{count} names are longer than {} bytes and were cut there", elf::caps::NAME),
            None,
        ),
        Issue::VersionHash { name, hash, expected, others } => Finding::new(
            Kind::ElfMalformed,
            Status::Warn,
            format!(
                "version {name}'s vd_hash is {hash:#x}, not the ELF hash of its name ({expected:#x}){}: glibc's and Go's vDSO lookups (and bench) bind none of its symbols, so their clock reads take the syscall",
                if *others > 0 { format!(", and {others} more versions are wrong the same way") } else { String::new() }
            ),
            Some("a damaged or crafted image: the kernel's vDSO build writes the right hash".into()),
        ),
    }
}
