//! What is wrong with a vDSO image, as data: whether it is a vDSO at all,
//! what the parser read past, what the C library cannot bind in it, and
//! which hash tables it lacks. `dump` lists the findings, `check` judges
//! them (a missing DT_HASH only matters to musl) without re-reading words.
//! The rules are those of [`measure::bench::vdso::bind`](crate::measure::bench::vdso::bind),
//! the binding bench calls through: a version whose `vd_hash` is wrong is
//! the parser's [`Issue::VersionHash`], so both read one image the same way.
//! Each is typed, with its kind and status; render/vdso.rs words it
//! (`ImageProblem::finding`, its Display, its JSON), and `check --image`'s
//! rows about its walk and the runner's kernel ([`ImageRow`]).

use super::kind::Kind;
use super::Status;
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
    /// Exported, but not with the version the C library binds: `have` the
    /// versions it is exported with (`None`: with none).
    WrongVersion { symbol: &'static str, function: VdsoFn, have: Vec<Option<String>>, want: &'static str },
    /// DT_GNU_HASH only: musl binds nothing.
    GnuHashOnly,
    /// No hash table at all: nothing binds.
    NoHashTable,
}

/// `check --image`'s rows about the audit itself and about the runner's
/// kernel, as data: render/vdso.rs words them into rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageRow {
    /// `image_walk`: `count` entries could not be read (the first `first`,
    /// for `why`), so the audit is incomplete: a warning.
    Incomplete { count: usize, first: String, why: String },
    /// No /proc (a chroot, a bare container): the runner's vDSO is not read.
    NoProcVdso,
    /// No /proc: the runner's vsyscall mode is unknown (xonly assumed).
    NoProcVsyscall,
}

impl ImageRow {
    pub fn kind(&self) -> Kind {
        match self {
            ImageRow::Incomplete { .. } => Kind::ImageIncomplete,
            ImageRow::NoProcVdso | ImageRow::NoProcVsyscall => Kind::RunnerKernel,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            ImageRow::Incomplete { .. } => Status::Warn,
            ImageRow::NoProcVdso | ImageRow::NoProcVsyscall => Status::Skip,
        }
    }

    /// The row's name.
    pub fn name(&self) -> &'static str {
        match self {
            ImageRow::Incomplete { .. } => "image_walk",
            ImageRow::NoProcVdso => "vdso_symbols",
            ImageRow::NoProcVsyscall => "vsyscall",
        }
    }
}

/// `check --image` with no /proc: the runner's kernel is not read, its rows SKIP.
pub const NO_PROC: [ImageRow; 2] = [ImageRow::NoProcVdso, ImageRow::NoProcVsyscall];

/// How `check --image` judges a row about the runner's kernel (its vDSO's
/// hash tables, its vsyscall mode): not production's, so INFO and left out
/// of the image's verdict; a SKIP stays one (`None`: the row as it is).
pub fn runner_context(status: Status) -> Option<(Kind, Status)> {
    (status != Status::Skip).then_some((Kind::RunnerKernel, Status::Info))
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
                    let have = found.iter().map(|s| s.version.as_ref().map(|v| v.display()));
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
    pub fn kind(&self) -> Kind {
        match self {
            ImageProblem::Parser(_) => Kind::ElfMalformed,
            ImageProblem::NotAVdso { .. } => Kind::NotAVdso,
            ImageProblem::NoAbiTable { .. } => Kind::VdsoArchUnknown,
            ImageProblem::NotExported { .. } | ImageProblem::WrongVersion { .. } | ImageProblem::NoHashTable => {
                Kind::VdsoExportsBroken
            }
            ImageProblem::GnuHashOnly => Kind::VdsoGnuHashOnly,
        }
    }

    pub fn status(&self) -> Status {
        match self {
            ImageProblem::Parser(_) => Status::Warn,
            ImageProblem::NotAVdso { .. } | ImageProblem::NoHashTable => Status::Fail,
            ImageProblem::NoAbiTable { .. } => Status::Info,
            ImageProblem::NotExported { .. } | ImageProblem::WrongVersion { .. } | ImageProblem::GnuHashOnly => {
                Status::Warn
            }
        }
    }
}
