//! Random bytes, worded: a runtime's route (`glibc 2.36 makes getrandom()
//! a syscall; glibc 2.41 reads it from the vDSO`) and its fix, the image's
//! rows ([`RandomGroup`]), `check -p`'s `process_random` row
//! ([`ProcessRandomVerdict`]) and `check -- CMD`'s `command_random` row
//! ([`JudgedRandom`]), from the facts model/random.rs judges.

use crate::arch::{self, Runtime, VdsoFn};
use crate::model::check::Check;
use crate::model::random::{
    command_random_kind, command_random_status, JudgedRandom, ProcessRandom, ProcessRandomVerdict, RandomGroup,
    RandomRoute, RandomWhy, StatePages, SEED_CALLS,
};
use crate::model::row::{RandomFacts, RandomOf};
use crate::words::thousands;

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
    pub fn hint(&self) -> &'static str {
        match self.runtime {
            Some(Runtime::Go) => "rebuild with Go ≥ 1.24: its crypto/rand reads random bytes from the vDSO (Linux ≥ 6.11)",
            Some(Runtime::Musl) => "only a glibc ≥ 2.41 or Go ≥ 1.24 program reads random bytes from the vDSO; fine unless it reads them in a hot loop",
            _ => "glibc ≥ 2.41 (Debian 13, Ubuntu 25.04, Fedora 42) reads getrandom() and arc4random() from the vDSO (Linux ≥ 6.11): move the image or host to it",
        }
    }
}

/// The image's random-bytes rows: one per [`RandomGroup`], WARN, named
/// `random:glibc-2.36`, `random:static-glibc`, `random:go-1.19.8`.
pub fn image_random_rows(groups: &[RandomGroup]) -> Vec<Check> {
    groups
        .iter()
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
            let random = RandomFacts {
                route: g.route.clone(),
                libc: g.libc.map(str::to_string),
                of: RandomOf::Image {
                    programs: g.programs.len(),
                    libraries: g.libraries,
                    raw: g.raw.iter().map(|p| p.to_string()).collect(),
                },
            };
            let row = Check::new(
                g.kind(),
                name,
                g.status(),
                format!("{} ({whose}){raw}", g.route.syscall_text()),
                Some(g.route.hint()),
            );
            Check { random: Some(random), ..row }
        })
        .collect()
}

/// `state page at 0x7f… (dp)`, `2 state pages, first at 0x7f… (dp)`.
fn state_text(pages: &[u64]) -> Option<String> {
    match pages {
        [] => None,
        [one] => Some(format!("state page at {one:#x} (dp)")),
        [first, ..] => Some(format!("{} state pages, first at {first:#x} (dp)", thousands(pages.len() as u64))),
    }
}

/// `check -p`'s `process_random` row: [`ProcessRandom::verdict`], worded
/// with the process's runtime, C library, vDSO symbol and state page.
pub fn process_random_row(p: &ProcessRandom) -> Check {
    let verdict = p.verdict();
    let rt = p.route.runtime_text();
    let lib = match &p.libc_path {
        Some(path) if !p.route.static_libc && p.route.runtime != Some(Runtime::Go) => format!(" ({path})"),
        _ => String::new(),
    };
    let rt = format!("{rt}{lib}");
    let symbol = p.symbol.unwrap_or("getrandom");
    let state = p.state_pages.as_deref().and_then(state_text).unwrap_or_default();
    let (detail, hint) = match verdict {
        ProcessRandomVerdict::KernelTooOld => (
            format!(
                "random bytes take a syscall: {rt} reads getrandom() from the vDSO, but this process's vDSO exports no {symbol} (Linux 6.11 added it)"
            ),
            Some("a kernel ≥ 6.11 (x86_64; 6.12 on arm64) serves getrandom from the vDSO"),
        ),
        ProcessRandomVerdict::Vdso(pages) => (
            match pages {
                StatePages::Mapped => format!("{rt} reads getrandom() from the vDSO ({symbol}); {state}"),
                StatePages::Unread => {
                    format!("{rt} reads getrandom() from the vDSO ({symbol}); its smaps (the state page) could not be read")
                }
                StatePages::NoneYet => format!(
                    "{rt} reads getrandom() from the vDSO ({symbol}); no state page (dp) yet: it has not called getrandom() yet"
                ),
            },
            None,
        ),
        ProcessRandomVerdict::Syscall => {
            let seen = if state.is_empty() { String::new() } else { format!("; yet a vDSO getrandom {state} is mapped") };
            let raw = match p.raw_sites {
                0 => String::new(),
                n => format!("; its code makes raw getrandom syscalls too ({} site(s))", thousands(n as u64)),
            };
            (format!("{}{lib}{seen}{raw}", p.route.syscall_text()), Some(p.route.hint()))
        }
        ProcessRandomVerdict::NoCalls => (format!("{rt}: it does not reach getrandom (no crypto/rand in it)"), None),
        ProcessRandomVerdict::NotOnArch => (
            format!("{rt}: random bytes take a syscall on this architecture and class (no vDSO getrandom it reads)"),
            None,
        ),
        ProcessRandomVerdict::UnknownButMapped => (format!("{rt}: it reads random bytes from the vDSO: {state}"), None),
        ProcessRandomVerdict::Unknown => (
            format!("{rt}: whether its random bytes come from the vDSO is not known (no state page (dp) mapped)"),
            None,
        ),
    };
    let random = RandomFacts {
        route: p.route.clone(),
        libc: p.libc_path.clone(),
        of: RandomOf::Process { state_pages: p.state_pages.clone(), raw_sites: p.raw_sites },
    };
    Check { random: Some(random), ..Check::new(verdict.kind(), "process_random", verdict.status(), detail, hint) }
}

/// Processes `command_random` names before "and N more".
const NAMED: usize = 5;

/// Why one process's served getrandom syscalls are judged as they are.
fn why_text(why: &RandomWhy) -> String {
    match why {
        RandomWhy::VdsoRaw { route, never, seeding } => {
            let or_never = if never.is_empty() { String::new() } else { format!(" or {never}, which never reads it") };
            let why =
                format!("{} reads getrandom from the vDSO: raw getrandom syscalls{or_never}", route.runtime_text());
            if *seeding {
                format!("{why}, no more than seeding takes ({SEED_CALLS} a process)")
            } else {
                why
            }
        }
        RandomWhy::OldRuntime(route) => route.syscall_reason(),
        RandomWhy::Carried(c) => crate::model::binary::BinaryFact::CarriedSyscall {
            runtime: c.runtime.clone(),
            row: c.row,
            fixed_in: c.row.fixed_in(),
            sites: Vec::new(),
        }
        .to_string(),
        RandomWhy::Unknown => "an older C library or runtime, or raw syscalls (the program is not known)".to_string(),
    }
}

/// `command_random`: the judged getrandom syscalls of the command `argv`
/// (shell words) over `secs`, `expected` more the vDSO hands the kernel.
pub fn command_random_row(judged: &[JudgedRandom], expected: u64, secs: &str, argv: &str, window_ns: u64) -> Check {
    let (kind, worst) = (command_random_kind(judged), command_random_status(judged));
    // The calls its words name, as data (JSON `window_ns`, `calls`).
    let calls = judged
        .iter()
        .map(|j| crate::model::row::CallSeen {
            pid: j.row.pid,
            comm: j.row.comm.clone(),
            function: j.row.syscall.to_string(),
            vsyscall: false,
            clock: None,
            count: j.row.count,
            per_sec: j.row.per_sec,
            carried: match &j.why {
                RandomWhy::Carried(c) => Some(crate::model::row::CarriedCalls {
                    runtime: c.runtime.runtime,
                    version: c.runtime.version.clone(),
                    fixed_in: c.row.fixed_in().map(|(a, b)| format!("{a}.{b}")),
                }),
                _ => None,
            },
        })
        .collect();
    let observed =
        crate::model::row::Observed { window_ns, calls, left_out: Vec::new(), fail_over: None, groups: None };
    if judged.is_empty() {
        return Check::new(
            kind,
            "command_random",
            worst,
            format!("in {secs}: no getrandom syscall the vDSO would serve here ({} expected: the vDSO's own key refills, flags it hands to the kernel)", thousands(expected)),
            None,
        )
        .seen(observed);
    }
    let mut lines = Vec::new();
    let mut whys: Vec<String> = Vec::new();
    for j in judged {
        let why = why_text(&j.why);
        let who = crate::render::process::pid_text(j.row.pid, j.row.comm.as_deref());
        lines.push(format!("{who} getrandom ×{}", thousands(j.row.count)));
        if !whys.contains(&why) {
            whys.push(why);
        }
    }
    Check::new(
        kind,
        "command_random",
        worst,
        format!(
            "in {secs}: {} — random bytes the vDSO would serve here: {}",
            crate::words::named_first(&lines, NAMED, || format!(
                "{} calls from {} processes in all",
                thousands(judged.iter().map(|j| j.row.count).sum()),
                thousands(judged.iter().map(|j| j.row.pid).collect::<std::collections::BTreeSet<_>>().len() as u64)
            )),
            whys.join("; ")
        ),
        (worst != crate::model::Status::Ok)
            .then(|| format!("`vdsoctl trace --sites -- {argv}` names the code that calls it"))
            .as_deref(),
    )
    .seen(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::exe::GoInfo;
    use crate::inspect::exe::{ExeInfo, LibcKind};
    use crate::model::random::{
        image_random_groups, judge_command_random, random_route, ImageFile, RandomPath, ServedRandom,
    };
    use crate::model::Status;

    use crate::model::random::tests::glibc;

    /// The routes are judged in model/random.rs; here, their words.
    #[test]
    fn a_route_is_worded_with_its_runtime_and_the_release_that_fixes_it() {
        let go = |v: &str, getrandom| ExeInfo {
            libc: LibcKind::Go,
            libc_version: Some(v.into()),
            go: Some(GoInfo { version: v.into(), cgo: Some(false), getrandom }),
            ..glibc(None, false)
        };
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
        let rows = image_random_rows(&image_random_groups(&files));
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].name, "random:glibc-2.36");
        assert_eq!(rows[0].status, Status::Warn);
        assert_eq!(
            rows[0].detail(),
            "random bytes take a syscall: glibc 2.36 makes getrandom() a syscall; glibc 2.41 reads it from the vDSO (/usr/lib/x86_64-linux-gnu/libc.so.6, loaded by 2 programs (e.g. /usr/bin/a))"
        );
        let new = glibc(Some("2.41"), true);
        assert!(image_random_groups(&[ImageFile { path: "/usr/bin/a", info: &new }]).is_empty());
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
        let c = process_random_row(&p("2.41", vec![0x7f00_0000_0000], Some(true)));
        assert_eq!(c.status, Status::Ok);
        assert!(c.detail().ends_with("(__vdso_getrandom); state page at 0x7f0000000000 (dp)"), "{}", c.detail());
        let c = process_random_row(&p("2.41", vec![], Some(true)));
        assert_eq!(c.status, Status::Ok);
        assert!(c.detail().contains("it has not called getrandom() yet"), "{}", c.detail());
        assert_eq!(process_random_row(&p("2.41", vec![], Some(false))).status, Status::Warn);
        let c = process_random_row(&p("2.36", vec![], Some(true)));
        assert_eq!(c.status, Status::Warn);
        assert_eq!(
            c.detail(),
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
            let c = command_random_row(
                &judge_command_random(&[ServedRandom { row: &r, route, carried: None }]),
                0,
                "1 s",
                "prog",
                1_000_000_000,
            );
            (c.status, c.detail().into_owned())
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
        assert_eq!(command_random_row(&[], 2, "1 s", "prog", 1_000_000_000).status, Status::Ok);
    }

    /// Issue 40: model/random.rs judges random bytes into typed facts; its
    /// code (its tests aside) holds no sentence: this file words them.
    #[test]
    fn model_random_holds_no_prose() {
        let prose = crate::render::prose::prose(include_str!("../model/random.rs"));
        assert!(prose.is_empty(), "prose in model/random.rs: {prose:?}");
    }
}
