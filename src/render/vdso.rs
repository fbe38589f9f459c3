//! The vDSO image and mapping facts, worded: what is wrong with an image
//! ([`ImageProblem`], model/image.rs, and the parser's [`Issue`]s), what
//! `maps` says of a vsyscall mode ([`VsyscallFact`]) and of a time
//! namespace ([`TimeNsFact`]), and `check --image`'s rows about its walk
//! and the runner's kernel ([`ImageRow`]). Each is worded here, once; its
//! kind and status are the model's.

use crate::arch;
use crate::inspect::elf::{self, Issue};
use crate::model::check::Check;
use crate::model::image::{self, ImageProblem, ImageRow};
use crate::model::timens::{TimeNsFact, TimeOffset};
use crate::model::vsyscall::VsyscallFact;
use crate::model::Finding;
use crate::words::{human_size, thousands};
use serde::{Serialize, Serializer};
use std::fmt;

/// What the parser read past, in words.
fn issue_text(issue: &Issue, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match issue {
        Issue::Capped { table, claimed, kept } => {
            write!(f, "the image claims {claimed} {table}, more than a vDSO can hold: only the first {kept} were read")
        }
        Issue::NoteAlignment { offset, align } => write!(
            f,
            "the note area at offset {offset:#x} has alignment {align}: readelf rejects it whole (\"Corrupt note: alignment {align}, expecting 4 or 8\"); its notes are decoded here as 4-byte aligned"
        ),
        Issue::NoteTruncated { offset, namesz, descsz } => write!(
            f,
            "the note at offset {offset:#x} (namesz {namesz:#x}, descsz {descsz:#x}) runs past its area: readelf stops there too (\"note with invalid namesz and/or descsz\"); the notes before it are listed"
        ),
        Issue::NoteCut { offset, size } => write!(
            f,
            "the note at offset {offset:#x} claims a {} descriptor: only the first {} are kept, undecoded",
            human_size(*size),
            human_size(elf::caps::NOTE_DESC as u64)
        ),
        Issue::LongNames { count } => {
            write!(f, "{count} names are longer than {} bytes and were cut there", elf::caps::NAME)
        }
        Issue::VersionHash { name, hash, expected, others } => {
            write!(f, "version {name}'s vd_hash is {hash:#x}, not the ELF hash of its name ({expected:#x})")?;
            if *others > 0 {
                write!(f, ", and {others} more versions are wrong the same way")?;
            }
            f.write_str(": glibc's and Go's vDSO lookups (and bench) bind none of its symbols, so their clock reads take the syscall")
        }
    }
}

/// A finding's message (JSON `findings[].message` of `dump`; `check`'s
/// `vdso_symbols` detail joins them).
impl fmt::Display for ImageProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageProblem::Parser(issue) => issue_text(issue, f),
            ImageProblem::NotAVdso { soname } => {
                f.write_str("not a vDSO: ")?;
                match soname {
                    Some(s) => write!(f, "its soname is {s}")?,
                    None => f.write_str("it has no soname")?,
                }
                f.write_str(" (a vDSO's is linux-vdso.so.1, linux-vdso32/64.so.1 or linux-gate.so.1) and it defines no LINUX_* version; what it has is listed above")
            }
            ImageProblem::NoAbiTable { machine, is_64 } => write!(
                f,
                "no table of the C library's vDSO symbols for {} {}: exports not checked",
                arch::machine_name(*machine),
                if *is_64 { "64-bit" } else { "32-bit" }
            ),
            ImageProblem::NotExported { symbol, function } => write!(
                f,
                "the vDSO exports no {symbol}: {}() through the C library takes the syscall on every call",
                function.name()
            ),
            ImageProblem::WrongVersion { symbol, function, have, want } => {
                let have: Vec<&str> = have.iter().map(|v| v.as_deref().unwrap_or("no version")).collect();
                write!(
                    f,
                    "{symbol} is versioned {} but the C library binds {want}: the lookup fails and {}() takes the syscall",
                    have.join(", "),
                    function.name()
                )
            }
            ImageProblem::GnuHashOnly => f.write_str("the vDSO has no DT_HASH, only DT_GNU_HASH: musl looks vDSO symbols up through DT_HASH only, so musl programs take the syscall for every clock read"),
            ImageProblem::NoHashTable => f.write_str("the vDSO has no symbol hash table (neither DT_HASH nor DT_GNU_HASH): no C library can look up its symbols"),
        }
    }
}

/// What to do about a problem, if anything.
fn image_hint(p: &ImageProblem) -> Option<&'static str> {
    match p {
        ImageProblem::Parser(Issue::Capped { .. }) => {
            Some("a damaged or crafted image; a kernel's vDSO has a few dozen of each at most")
        }
        ImageProblem::Parser(Issue::VersionHash { .. }) => {
            Some("a damaged or crafted image: the kernel's vDSO build writes the right hash")
        }
        ImageProblem::Parser(_) => None,
        ImageProblem::NotAVdso { .. } => {
            Some("pass a vDSO image: `vdsoctl dump -o vdso.so` writes this host's, `-p PID` reads a process's")
        }
        ImageProblem::NotExported { .. } => {
            Some("an old kernel or an emulator's synthetic vDSO; `vdsoctl bench` measures what it costs")
        }
        ImageProblem::GnuHashOnly => {
            Some("glibc programs are unaffected; a kernel vDSO linked with --hash-style=both restores DT_HASH")
        }
        ImageProblem::NoAbiTable { .. } | ImageProblem::WrongVersion { .. } | ImageProblem::NoHashTable => None,
    }
}

impl ImageProblem {
    /// The problem as a finding, worded (its kind and status the model's):
    /// what `dump` lists and `check`'s `vdso_symbols` row joins.
    pub fn finding(&self) -> Finding {
        Finding::new(self.kind(), self.status(), self.to_string(), image_hint(self).map(str::to_string))
    }
}

/// A problem as `dump`'s JSON has it: a finding (kind, severity, message,
/// hint), and what the parser read past as `issue` (an `elf-malformed`'s).
impl Serialize for ImageProblem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            #[serde(flatten)]
            finding: Finding,
            #[serde(skip_serializing_if = "Option::is_none")]
            issue: Option<IssueWire<'a>>,
        }
        let issue = match self {
            ImageProblem::Parser(i) => Some(IssueWire::of(i)),
            _ => None,
        };
        Wire { finding: self.finding(), issue }.serialize(s)
    }
}

/// What the parser read past, typed (JSON `findings[].issue`): `what`
/// names it; offsets and hashes are `"0x..."` strings.
#[derive(Serialize)]
#[serde(tag = "what", rename_all = "snake_case")]
enum IssueWire<'a> {
    Capped {
        table: &'static str,
        claimed: u64,
        kept: u64,
    },
    NoteAlignment {
        #[serde(serialize_with = "crate::model::hex")]
        offset: u64,
        align: u64,
    },
    NoteTruncated {
        #[serde(serialize_with = "crate::model::hex")]
        offset: u64,
        namesz: u32,
        descsz: u32,
    },
    NoteCut {
        #[serde(serialize_with = "crate::model::hex")]
        offset: u64,
        size: u64,
    },
    LongNames {
        count: usize,
    },
    VersionHash {
        version: &'a str,
        #[serde(serialize_with = "hex32")]
        hash: u32,
        #[serde(serialize_with = "hex32")]
        expected: u32,
        others: usize,
    },
}

impl<'a> IssueWire<'a> {
    fn of(issue: &'a Issue) -> IssueWire<'a> {
        match *issue {
            Issue::Capped { table, claimed, kept } => IssueWire::Capped { table, claimed, kept },
            Issue::NoteAlignment { offset, align } => IssueWire::NoteAlignment { offset, align },
            Issue::NoteTruncated { offset, namesz, descsz } => IssueWire::NoteTruncated { offset, namesz, descsz },
            Issue::NoteCut { offset, size } => IssueWire::NoteCut { offset, size },
            Issue::LongNames { count } => IssueWire::LongNames { count },
            Issue::VersionHash { ref name, hash, expected, others } => {
                IssueWire::VersionHash { version: name, hash, expected, others }
            }
        }
    }
}

/// A 32-bit hash as a `"0x..."` string.
fn hex32<S: Serializer>(value: &u32, s: S) -> Result<S::Ok, S::Error> {
    crate::model::hex(&u64::from(*value), s)
}

/// What `maps` says of a vsyscall mode.
impl fmt::Display for VsyscallFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VsyscallFact::Disagree { mapping, cmdline } => write!(
                f,
                "the [vsyscall] mapping says {} but vsyscall={} is on the kernel command line",
                mapping.as_str(),
                cmdline.as_str()
            ),
            VsyscallFact::Compat32 => f.write_str("this is a 32-bit process: the kernel gives it no [vsyscall] page"),
            VsyscallFact::Compat32Host { host } => write!(
                f,
                "this is a 32-bit process: the kernel gives it no [vsyscall] page (the host's mode, {}, is read from vdsoctl's own mapping)",
                host.as_str()
            ),
            VsyscallFact::Emulate => f.write_str("vsyscall=emulate: the [vsyscall] page is readable; legacy calls into it trap into the kernel and are invisible to strace"),
        }
    }
}

/// A vsyscall fact as `maps`' finding.
pub fn vsyscall_finding(fact: &VsyscallFact) -> Finding {
    let hint = match fact {
        VsyscallFact::Disagree { .. } => {
            Some("the mapping is what the process gets; check the boot loader's kernel parameters")
        }
        VsyscallFact::Emulate => {
            Some("`vdsoctl trace -a` counts vsyscall emulations; vsyscall=xonly is the safer default since 5.3")
        }
        VsyscallFact::Compat32 | VsyscallFact::Compat32Host { .. } => None,
    };
    Finding::new(fact.kind(), fact.status(), fact.to_string(), hint.map(str::to_string))
}

/// `CLOCK_MONOTONIC +1,000 s`, `CLOCK_BOOTTIME +2,000.000000005 s`.
fn offset_text(o: &TimeOffset) -> String {
    let sign = if o.seconds < 0 || (o.seconds == 0 && o.nanoseconds < 0) { "-" } else { "+" };
    let secs = thousands(o.seconds.unsigned_abs());
    match o.nanoseconds {
        0 => format!("{} {sign}{secs} s", o.clock),
        ns => format!("{} {sign}{secs}.{:09} s", o.clock, ns.unsigned_abs()),
    }
}

/// A process in another time namespace than vdsoctl's.
impl fmt::Display for TimeNsFact<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.ns;
        let offsets = if ns.offsets.is_empty() {
            "its offsets could not be read".to_string()
        } else {
            ns.offsets.iter().map(offset_text).collect::<Vec<_>>().join(", ")
        };
        write!(
            f,
            "pid {} is in time namespace {} (vdsoctl's is {}): {offsets} — its vDSO adds them (a time-namespace page in its [vvar]), so its clock reads stay in the vDSO; the times it reads differ from vdsoctl's by them",
            self.pid,
            ns.inode,
            ns.vdsoctl_inode.map_or_else(|| "?".into(), |i| i.to_string()),
        )
    }
}

/// A time-namespace fact as the finding `maps -p` lists and `check -p`'s
/// `process_time_namespace` row is made of.
pub fn timens_finding(fact: &TimeNsFact<'_>) -> Finding {
    Finding::new(fact.kind(), fact.status(), fact.to_string(), None)
}

/// The first words of a no-/proc row.
const NO_PROC: &str = "no /proc here (a chroot or a container without it): this kernel's";

/// `check --image`'s row about its walk or the runner's kernel, worded.
pub fn image_row(row: &ImageRow) -> Check {
    let (detail, hint) = match row {
        ImageRow::Incomplete { count, first, why } => (
            format!(
                "{} entries could not be read (or parsed as ELF) and are not audited (first {}: {why})",
                thousands(*count as u64),
                crate::render::shown_path(first)
            ),
            "run as a user who can read the whole tree (root, for an unpacked image); --json lists the first 100 in image.unreadable",
        ),
        ImageRow::NoProcVdso => (
            format!("{NO_PROC} vDSO is not read"),
            "mount proc (`mount -t proc proc /proc`) to judge the binaries against this kernel",
        ),
        ImageRow::NoProcVsyscall => (
            format!("{NO_PROC} vsyscall mode is unknown (the verdicts assume xonly, the default since 5.3)"),
            "mount proc (`mount -t proc proc /proc`) to judge the binaries against this kernel",
        ),
    };
    Check::new(row.kind(), row.name(), row.status(), detail, Some(hint))
}

/// `check --image`'s rows about the runner's kernel: said as not the
/// image's, as [`image::runner_context`] judges them.
pub fn runner_context(checks: Vec<Check>) -> Vec<Check> {
    checks
        .into_iter()
        .map(|c| match image::runner_context(c.status) {
            None => c,
            Some((kind, status)) => Check { kind, status, ..c }.reworded(|detail, _| {
                *detail = format!("the runner's kernel, not the image's (left out of its verdict): {detail}");
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::kernel::VsyscallMode;
    use crate::inspect::process::{parse_timens_offsets, TimeNamespace};
    use crate::model::kind::Kind;
    use crate::model::timens::TimeNs;
    use crate::model::Status;

    #[test]
    fn image_problems_are_worded_here() {
        let p = ImageProblem::WrongVersion {
            symbol: "__vdso_time",
            function: arch::VdsoFn::Time,
            have: vec![Some("LINUX_9".into()), None],
            want: "LINUX_2.6",
        };
        let f = p.finding();
        assert_eq!((f.kind, f.severity, f.hint), (Kind::VdsoExportsBroken, Status::Warn, None));
        assert_eq!(
            f.message,
            "__vdso_time is versioned LINUX_9, no version but the C library binds LINUX_2.6: the lookup fails and time() takes the syscall"
        );
        let p = ImageProblem::Parser(Issue::VersionHash { name: "LINUX_2.6".into(), hash: 1, expected: 2, others: 1 });
        assert!(p.to_string().starts_with(
            "version LINUX_2.6's vd_hash is 0x1, not the ELF hash of its name (0x2), and 1 more versions are wrong the same way: "
        ));
        let json = serde_json::to_value(ImageProblem::NotAVdso { soname: None }).unwrap_or_default();
        assert_eq!((&json["kind"], &json["severity"]), (&"not-a-vdso".into(), &"fail".into()));
        assert!(json["message"].as_str().unwrap_or("").starts_with("not a vDSO: it has no soname (a vDSO's is"));
        assert!(json["hint"].as_str().unwrap_or("").starts_with("pass a vDSO image"));
    }

    #[test]
    fn vsyscall_and_time_namespace_facts_are_worded_here() {
        let f =
            vsyscall_finding(&VsyscallFact::Disagree { mapping: VsyscallMode::Xonly, cmdline: VsyscallMode::Emulate });
        assert_eq!((f.kind, f.severity), (Kind::VsyscallMode, Status::Warn));
        assert_eq!(f.message, "the [vsyscall] mapping says xonly but vsyscall=emulate is on the kernel command line");
        let f = vsyscall_finding(&VsyscallFact::Compat32Host { host: VsyscallMode::Xonly });
        assert_eq!((f.kind, f.severity, f.hint.as_deref()), (Kind::Note, Status::Info, None));
        assert!(f.message.ends_with("(the host's mode, xonly, is read from vdsoctl's own mapping)"), "{}", f.message);
        let f = vsyscall_finding(&VsyscallFact::Emulate);
        assert!(f.message.starts_with("vsyscall=emulate: ") && f.hint.is_some(), "{f:?}");

        let offsets = parse_timens_offsets("monotonic        1000         0\nboottime         2000         5\n");
        let ns = TimeNs::of(&TimeNamespace { inode: 5, own: Some(4), offsets });
        let f = timens_finding(&ns.fact(42).unwrap());
        assert_eq!((f.kind, f.severity), (Kind::TimeNamespace, Status::Info));
        assert!(
            f.message.starts_with(
                "pid 42 is in time namespace 5 (vdsoctl's is 4): CLOCK_MONOTONIC +1,000 s, CLOCK_BOOTTIME +2,000.000000005 s — "
            ),
            "{}",
            f.message
        );
        let unread = TimeNs { offsets: Vec::new(), vdsoctl_inode: None, ..ns };
        assert!(timens_finding(&unread.fact(1).unwrap())
            .message
            .starts_with("pid 1 is in time namespace 5 (vdsoctl's is ?): its offsets could not be read — "));
    }

    #[test]
    fn image_rows_are_worded_here() {
        let row = image_row(&ImageRow::Incomplete { count: 1234, first: "/bin/x".into(), why: "EACCES".into() });
        assert_eq!((row.kind, row.name.as_str(), row.status), (Kind::ImageIncomplete, "image_walk", Status::Warn));
        assert!(
            row.detail().starts_with("1,234 entries could not be read")
                && row.detail().ends_with("(first /bin/x: EACCES)")
        );
        let rows: Vec<Check> = image::NO_PROC.iter().map(image_row).collect();
        assert_eq!(
            rows.iter().map(|r| (r.name.as_str(), r.status)).collect::<Vec<_>>(),
            [("vdso_symbols", Status::Skip), ("vsyscall", Status::Skip)]
        );
        assert!(rows[0].detail().starts_with("no /proc here") && rows[0].hint().map(|h| h.into_owned()).is_some());
        let skip = Check::new(Kind::RunnerKernel, "vsyscall", Status::Skip, "x", None);
        let ok = Check::new(Kind::VsyscallMode, "vsyscall", Status::Ok, "xonly", None);
        let out = runner_context(vec![skip, ok]);
        assert_eq!((out[0].kind, out[0].status, &*out[0].detail()), (Kind::RunnerKernel, Status::Skip, "x"));
        assert_eq!((out[1].kind, out[1].status), (Kind::RunnerKernel, Status::Info));
        assert_eq!(out[1].detail(), "the runner's kernel, not the image's (left out of its verdict): xonly");
    }

    /// Issue 40: the vDSO image and mapping model files hold no sentence.
    #[test]
    fn model_image_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/image.rs"));
        assert!(prose.is_empty(), "prose in model/image.rs: {prose:?}");
    }

    #[test]
    fn model_vsyscall_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/vsyscall.rs"));
        assert!(prose.is_empty(), "prose in model/vsyscall.rs: {prose:?}");
    }

    #[test]
    fn model_timens_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/timens.rs"));
        assert!(prose.is_empty(), "prose in model/timens.rs: {prose:?}");
    }

    #[test]
    fn model_dump_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/dump.rs"));
        assert!(prose.is_empty(), "prose in model/dump.rs: {prose:?}");
    }

    #[test]
    fn model_auxv_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/auxv.rs"));
        assert!(prose.is_empty(), "prose in model/auxv.rs: {prose:?}");
    }

    #[test]
    fn model_maps_holds_no_prose() {
        let prose = crate::render::prose::of(include_str!("../model/maps.rs"));
        assert!(prose.is_empty(), "prose in model/maps.rs: {prose:?}");
    }
}
