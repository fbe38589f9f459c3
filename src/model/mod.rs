//! Model types shared by several reports, and the policy that judges them
//! ([`policy`]), once. A report struct itself lives beside its command in
//! `cmd/`; what more than one command says lives here.

use serde::Serialize;

pub mod auxv;
pub mod baseline;
pub mod bench;
pub mod bench_baseline;
pub mod binary;
pub mod cgroup;
pub mod check;
pub mod command;
pub mod cost;
pub mod dump;
pub mod gate;
pub mod group;
pub mod host;
pub mod image;
pub mod kind;
pub mod lead;
pub mod maps;
pub mod observe;
pub mod policy;
pub mod random;
pub mod row;
pub mod seccomp_profile;
pub mod serve;
pub mod site;
pub mod stacks;
pub mod timens;
pub mod top;
pub mod trace;
pub mod vsyscall;
pub use policy::vdso_serves_call;

/// How one check came out, and how serious a finding is: one type for
/// both (a finding is INFO, WARN or FAIL; a check may also be SKIP or OK).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Could not run here (e.g. needs root); never fails the audit.
    Skip,
    /// Said for what it is, not judged: nothing was observed (no
    /// privileges, `--trace 0`); never passes or fails the audit.
    Info,
    #[default]
    Ok,
    Warn,
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Skip => "SKIP",
            Status::Info => "INFO",
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }

    /// The worst of `statuses`, with OK as the floor: SKIP and INFO never
    /// pass or fail an audit, and nothing to judge is OK. The one fold of
    /// every audit (check, check --image, check -- CMD, serve).
    pub fn worst(statuses: impl IntoIterator<Item = Status>) -> Status {
        statuses.into_iter().fold(Status::Ok, Status::max)
    }

    /// The Prometheus gauge value: 0 ok, 1 warn, 2 fail, -1 skipped or
    /// not observed.
    pub fn gauge(self) -> f64 {
        match self {
            Status::Skip | Status::Info => -1.0,
            Status::Ok => 0.0,
            Status::Warn => 1.0,
            Status::Fail => 2.0,
        }
    }
}

/// The process a per-process document is about: every such document
/// (dump -p, maps, auxv, check -p) carries it as `process`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessRef {
    pub pid: i32,
    pub comm: String,
}

impl ProcessRef {
    /// The pid and comm of an open process.
    pub fn of(p: &crate::inspect::Process) -> ProcessRef {
        ProcessRef { pid: p.pid(), comm: p.comm().to_string() }
    }
}

/// How a row names a process: as the process has it — its comm (what
/// `ps` and `top` show, renamed by `prctl(PR_SET_NAME)` or taken from the
/// name it was started by, a symlink's for redis-server) and its argv[0]
/// where that says something neither the comm nor the executable does
/// (`exec -a`, a rewritten title) — never its executable's file name in
/// their place: the executable is a separate fact (`pid 4242
/// (redis-server), executable /usr/bin/redis-check-rdb`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessName<'a> {
    pub pid: i32,
    pub comm: &'a str,
    pub argv0: Option<&'a str>,
    /// /proc/PID/exe's target.
    pub exe: Option<&'a str>,
}

impl ProcessName<'_> {
    /// argv[0] when it names the process otherwise than its comm and its
    /// executable: the file name of its first word is not the comm (nor,
    /// when the comm is the kernel's 15-byte cut, a name that starts with
    /// it), nor the executable's file name.
    pub fn argv0_helps(&self) -> Option<&str> {
        let argv0 = self.argv0.filter(|a| !a.trim().is_empty())?;
        let first = argv0.split_whitespace().next().unwrap_or(argv0);
        let name = first.rsplit('/').next().unwrap_or(first);
        let exe_name = self.exe.and_then(|e| e.rsplit('/').next());
        let comm = name == self.comm || (self.comm.len() >= 15 && name.starts_with(self.comm));
        (!comm && exe_name != Some(name)).then_some(argv0)
    }
}

/// A clock id as every document names it: `CLOCK_*`, or its number when it
/// has no name (JSON: a string or a number); `other`/`any` are the perf
/// engine's coarser buckets, not clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClockRef {
    Id(i64),
    /// Clock ids without a counter of their own (perf engine).
    Other,
    /// Every clock id together (`--no-split`).
    Any,
}

impl ClockRef {
    /// The clock of a traced call; `None` for calls that take no clock id.
    pub fn of(clock: crate::measure::trace::Clock) -> Option<ClockRef> {
        use crate::measure::trace::Clock;
        match clock {
            Clock::None | Clock::Random(_) => None,
            Clock::Id(id) => Some(ClockRef::Id(id)),
            Clock::Other => Some(ClockRef::Other),
            Clock::Any => Some(ClockRef::Any),
        }
    }

    /// The id, when this is one clock.
    pub fn id(self) -> Option<i64> {
        match self {
            ClockRef::Id(id) => Some(id),
            _ => None,
        }
    }

    /// The clock as tables, findings and labels print it: `CLOCK_TAI`,
    /// `PROCESS_CPU_CLOCK`, `10`, `other`, `any`.
    pub fn text(self) -> String {
        match self {
            ClockRef::Id(id) => crate::arch::clock_name(id),
            ClockRef::Other => "other".into(),
            ClockRef::Any => "any".into(),
        }
    }

    /// [`ClockRef::text`] without `CLOCK_`, as a table's CLOCK column and
    /// check's `clock:` rows name it: `MONOTONIC_RAW`, `PROCESS_CPU_CLOCK`.
    pub fn short(self) -> String {
        ClockRef::short_of(&self.text()).to_string()
    }

    /// A clock's name as [`ClockRef::short`] prints it, from its text (a
    /// baseline file's `CLOCK_MONOTONIC`): the one place `CLOCK_` is cut.
    pub fn short_of(text: &str) -> &str {
        text.strip_prefix("CLOCK_").unwrap_or(text)
    }
}

impl Serialize for ClockRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            // Every id the kernel defines by its name (the auxiliary clocks,
            // a dynamic id's class too); an undefined one as its number.
            ClockRef::Id(id) => match i32::try_from(id).ok().and_then(crate::arch::clock_info) {
                Some(c) => s.serialize_str(c.name),
                None if crate::arch::is_aux_clock(id) || crate::arch::dynamic_class(id).is_some() => {
                    s.serialize_str(&crate::arch::clock_name(id))
                }
                None => s.serialize_i64(id),
            },
            ClockRef::Other => s.serialize_str("other"),
            ClockRef::Any => s.serialize_str("any"),
        }
    }
}

/// A rate as JSON carries it: to 0.1/s, without float noise.
pub fn rate<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((value * 10.0).round() / 10.0)
}

/// A sentence an on-call engineer can act on, with the remediation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What it found, by its stable id (doc/FINDINGS.md).
    pub kind: kind::Kind,
    pub severity: Status,
    pub message: String,
    /// What to do about it; `null` when there is nothing to do.
    pub hint: Option<String>,
    /// The vdsoctl command the hint says to run next, as its argv (`trace
    /// --sites`, `check --image DIR`, `check -p PID`); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Vec<String>>,
    /// The clock a finding is about, where it is one clock's (an
    /// auxiliary clock's `aux-clock-syscall`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockRef>,
    /// An auxiliary clock's state on this host: `enabled`, `disabled`,
    /// `absent` (no auxiliary clocks), `null` (not read); absent on others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aux_state: Option<Option<&'static str>>,
    /// The processes a trace finding names, busiest first; absent on
    /// findings about no process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids: Option<Vec<i32>>,
    /// `trace --sites`' site finding: its site's class and calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<site::SiteClass>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// `bench`'s C-library-syscall finding: what each path cost, and the
    /// release that reads it from the vDSO (`fixed_in`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub costs: Option<row::Costs>,
    /// The C library's release such a finding is about (`2.36`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub libc_version: Option<String>,
    /// It says calls bypassed the vDSO (trace's interval reports say such a
    /// WARN once): a fact for code, never read from the words.
    #[serde(skip)]
    pub bypass: bool,
}

impl Finding {
    /// A finding with a hint.
    pub fn new(kind: kind::Kind, severity: Status, message: impl Into<String>, hint: Option<String>) -> Finding {
        Finding {
            kind,
            severity,
            message: message.into(),
            hint,
            next: None,
            clock: None,
            aux_state: None,
            pids: None,
            class: None,
            count: None,
            costs: None,
            libc_version: None,
            bypass: false,
        }
    }

    /// The same finding, marked as one about calls that bypassed the vDSO.
    pub fn of_bypass(self) -> Finding {
        Finding { bypass: true, ..self }
    }
}

/// Serialize a u64 address as a `"0x..."` string (JSON doubles lose bits).
pub fn hex<S: serde::Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{value:#x}"))
}

/// [`hex`] for an optional address; `None` stays `null`.
pub fn hex_opt<S: serde::Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_str(&format!("{v:#x}")),
        None => s.serialize_none(),
    }
}

/// [`hex`] for an optional list of addresses; `None` stays `null`.
pub fn hex_list_opt<S: serde::Serializer>(value: &Option<Vec<u64>>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_seq(v.iter().map(|a| format!("{a:#x}"))),
        None => s.serialize_none(),
    }
}

/// Counts add up saturating: a count at `u64::MAX` (a counter the kernel
/// let run, a hostile baseline) stays there, never wraps or panics.
pub fn add(total: &mut u64, n: u64) {
    *total = total.saturating_add(n);
}

/// The saturating sum of counts ([`add`]).
pub fn sum(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_at_u64_max_saturate() {
        assert_eq!(sum([u64::MAX, 1, u64::MAX]), u64::MAX);
        assert_eq!(sum([u64::MAX - 1, 1]), u64::MAX);
        let mut t = u64::MAX;
        add(&mut t, u64::MAX);
        assert_eq!(t, u64::MAX);
        // Exact below the top: a JSON consumer gets the integer.
        assert_eq!(sum([u64::MAX / 2, u64::MAX / 2]), u64::MAX - 1);
    }

    #[test]
    fn clocks_are_named_or_numbered() {
        let j = |c: ClockRef| serde_json::to_string(&c).unwrap();
        assert_eq!(j(ClockRef::Id(11)), "\"CLOCK_TAI\"");
        assert_eq!(j(ClockRef::Id(99)), "99");
        assert_eq!(j(ClockRef::Id(-6)), "\"PROCESS_CPU_CLOCK\"");
        assert_eq!(j(ClockRef::Id(17)), "\"CLOCK_AUX+1\"");
        assert_eq!(j(ClockRef::Id(-1)), "-1", "type 7 is no clock");
        assert_eq!(ClockRef::Id(-6).text(), "PROCESS_CPU_CLOCK");
        assert_eq!(j(ClockRef::Other), "\"other\"");
    }

    /// model/'s files import each other in one direction: a row, a part
    /// of a report, never imports the report that gathers it (the
    /// circle `check.rs` once made through eight files).
    /// Issue 40: model judges, render words — nothing below render calls it
    /// (a row's words come from render/ at output time, through the
    /// `Worded` facts it carries). Tests may word what they judge.
    #[test]
    fn nothing_below_render_uses_render() {
        if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    files(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let mut all = vec![root.join("error.rs")];
        for d in ["model", "measure", "inspect"] {
            files(&root.join(d), &mut all);
        }
        assert!(all.len() > 40, "{} files", all.len());
        let mut found = Vec::new();
        for p in &all {
            let text = std::fs::read_to_string(p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                let line = line.trim_start();
                if !line.starts_with("//") && (line.contains("render::") || line.contains("crate::render")) {
                    found.push(format!("{}:{}: {line}", p.strip_prefix(&root).unwrap().display(), n + 1));
                }
            }
        }
        assert!(found.is_empty(), "render used below it:\n{}", found.join("\n"));
    }

    #[test]
    fn no_import_circle_in_model() {
        // The kernel matrix runs these unit tests in a guest without the
        // checkout and its tools: they need the build host's.
        if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        use std::collections::{BTreeMap, BTreeSet};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
        let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".rs").map(str::to_string))
            .collect();
        for f in &files {
            let text = std::fs::read_to_string(dir.join(format!("{f}.rs"))).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let mut deps = BTreeSet::new();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for prefix in ["super::", "crate::model::"] {
                    for (i, _) in line.match_indices(prefix) {
                        let rest = &line[i + prefix.len()..];
                        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if files.contains(&name) && &name != f && f != "mod" {
                            deps.insert(name);
                        }
                    }
                }
            }
            uses.insert(f.clone(), deps);
        }
        // Depth-first: a module met again on the path is a circle.
        fn visit(
            m: &str,
            uses: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) {
            if let Some(at) = path.iter().position(|p| p == m) {
                panic!("import circle in model/: {} -> {m}", path[at..].join(" -> "));
            }
            if !done.insert(m.to_string()) {
                return;
            }
            path.push(m.to_string());
            for d in uses.get(m).into_iter().flatten() {
                visit(d, uses, path, done);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        for m in uses.keys() {
            visit(m, &uses, &mut Vec::new(), &mut done);
        }
    }
}
