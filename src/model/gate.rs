//! The gate: how serious each kind of finding is in each context (the
//! policy table, [`policy`]), and what a CI job selects on top of it —
//! `--fail-on`, `--allow`, an ignore file, `--strict`, a baseline — applied
//! once to a judged report, so the table, JSON, JUnit and the exit code
//! all say the same thing.

use super::kind::Kind;
use super::Status;
use serde::Serialize;

/// Where a finding is made: the same fact weighs differently on a host an
/// operator runs, a process, a smoke command or an image a team ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Context {
    Host,
    Process,
    Command,
    Image,
    /// `check --seccomp-profile`.
    Profile,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Host => "host",
            Context::Process => "process",
            Context::Command => "command",
            Context::Image => "image",
            Context::Profile => "profile",
        }
    }

    pub const ALL: [Context; 5] = [Context::Host, Context::Process, Context::Command, Context::Image, Context::Profile];
}

/// One cell of the policy table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// This status wherever the kind is found in this context.
    Is(Status),
    /// As its judge found it from the data: a rate against a threshold
    /// (`--fail-over`), a status the evidence moves (a clean trace clears an
    /// unproven WARN), a skip for what could not be read.
    ByData,
}

use Severity::{ByData as D, Is};
const O: Severity = Is(Status::Ok);
const I: Severity = Is(Status::Info);
const W: Severity = Is(Status::Warn);
const F: Severity = Is(Status::Fail);
const S: Severity = Is(Status::Skip);

/// The policy table: the severity of `kind` in `ctx`, decided by what the
/// owner of that host, process, command or image can fix. Columns: host,
/// process, command, image, seccomp profile.
pub fn policy(kind: Kind, ctx: Context) -> Severity {
    use Kind::*;
    let row: [Severity; 5] = match kind {
        VdsoMapped | SysinfoEhdrOk | VdsoExportsOk => [O, O, O, O, O],
        VdsoNotMapped | VvarNotMapped | SysinfoEhdrWrong => [F, F, F, F, F],
        // FAIL as `check`'s vdso_symbols row; `dump` says a missing
        // symbol or version as a WARN about the image it reads.
        VdsoExportsBroken => [D, D, D, D, D],
        // Fatal to musl only: its judge knows which C library is in play.
        VdsoGnuHashOnly => [D, D, D, D, D],
        MapsUnreadable | VdsoUnreadable => [F, F, F, F, F],
        // INFO: the runner's kernel is not production's; SKIP without /proc.
        RunnerKernel => [D, D, D, D, D],
        VdsoArchUnknown => [I, I, I, I, I],
        NotAVdso => [F, F, F, F, F],
        ElfMalformed => [W, W, W, W, W],
        ClocksourceVdso => [O, O, O, O, O],
        ClocksourceNoVdso => [F, F, F, F, F],
        ClocksourceMaybeVdso => [W, W, W, W, W],
        ClocksourceUnreadable | KernelUnreadable => [S, S, S, S, S],
        TscOk => [O, O, O, O, O],
        TscUnstable => [W, W, W, W, W],
        KernelServesClocks => [O, O, O, O, O],
        KernelOldClocks => [W, W, W, W, W],
        Libc => [O, O, O, O, O],
        // OK as `check`'s row; `maps` WARNs when the mapping and the
        // command line disagree.
        VsyscallMode => [D, D, D, D, D],
        // Said, not failed: legacy calls cost a trap each, and only a
        // caller makes it matter (vsyscall-call, vsyscall-call-site).
        VsyscallEmulate => [I, I, I, I, I],
        ClockFast | ClockAlwaysSyscall => [O, O, O, O, O],
        ClockNotOffered => [I, I, I, I, I],
        ClockLostFastPath | ClockOverMaxNs => [F, F, F, F, F],
        ClockNoVerdict | PathsDisagree | CountsUnavailable => [W, W, W, W, W],
        VerifyFailed => [F, F, F, F, F],
        VsyscallCost => [I, I, I, I, I],
        RandomVdso | RandomNoCalls => [O, O, O, O, O],
        RandomKernelTooOld => [W, W, W, W, W],
        RandomNotOffered => [I, I, I, I, I],
        // The base image's choice (glibc < 2.41, musl, Go < 1.24): a WARN
        // naming the release that fixes it, never a FAIL by itself.
        // A process's: WARN once it is seen to call getrandom, INFO when it
        // made none in the window (it is not warned about a call it did
        // not make).
        RandomSyscallOldLibc => [W, D, W, W, W],
        // The host's own C library: the host's owner upgrades it; beside
        // a process, a command or an image it is only the runner's fact.
        RandomSyscallHostLibc => [W, I, I, I, I],
        RandomLibcBypass => [F, F, F, F, F],
        RandomRouteUnknown => [I, I, I, I, I],
        // Code that bypasses a vDSO its own runtime reads: the program's
        // owner can fix it.
        RawRandomCallSite => [F, F, F, F, F],
        // A hot loop: WARN, FAIL over --fail-over where the runtime reads the vDSO.
        RandomSyscallObserved => [D, D, D, D, D],
        BinaryOk => [O, O, O, O, O],
        // A runtime the program carries: an upgrade of it fixes the path
        // (WARN); no release reads the vDSO yet (INFO: said, nothing to do).
        RuntimeSyscallFixed => [W, W, W, W, W],
        RuntimeNoVdsoRelease => [I, I, I, I, I],
        // Found in an image's program code: its owner rebuilds it (FAIL);
        // in a running process the trace window proves or clears it.
        RawClockCallSite => [W, W, W, F, W],
        VsyscallCallSite => [F, F, F, F, F],
        VsyscallFallbackSite => [W, W, W, W, W],
        CputimeCallSite => [I, I, I, I, I],
        StaticGlibcNoVdso | MuslNoDtHash => [F, F, F, F, F],
        LibcUnknown | RuntimeUnknown | BinaryTruncated | CodeNotRead | SectionsCorrupt => [W, W, W, W, W],
        // A correct 32-bit program: facts, not a defect.
        Compat32Bit | ForeignNotDecoded => [I, I, I, I, I],
        X32NotJudged | ExeUnreadable => [S, S, S, S, S],
        UnderEmulator => [F, F, F, F, F],
        ObservedClean => [O, O, O, O, O],
        // The host: WARN below the rate `check` fails a host at, FAIL over
        // it; a process or a command: every call is FAIL.
        RawClockSyscall | VsyscallCall => [D, D, D, D, D],
        NotObserved => [I, I, I, I, I],
        NotObservedInFull | CallsWithdrawnBySignal | PtraceInTracedTree | TraceFailed => [W, W, W, W, W],
        // A command that held its auditor: nothing counted can be trusted.
        AuditorPtraced => [F, F, F, F, F],
        AuxClockSyscall => [I, I, I, I, I],
        SeccompAllows => [O, O, O, O, O],
        SeccompDeniesFallback | SeccompStrict => [F, F, F, F, F],
        SeccompConditional => [W, W, W, W, W],
        SeccompUnread | SeccompOtherThreads | SeccompArchUnknown => [I, I, I, I, I],
        CommandOk => [O, O, O, O, O],
        ImageIncomplete => [W, W, W, W, W],
        CommandFailed | CommandTimeout => [F, F, F, F, F],
        TimeNamespace => [O, O, O, O, O],
        Note => [D, D, D, D, D],
    };
    row[Context::ALL.iter().position(|c| *c == ctx).unwrap_or(0)]
}

/// The status of a finding of `kind` its judge found `judged`, in `ctx`.
pub fn severity(kind: Kind, ctx: Context, judged: Status) -> Status {
    match policy(kind, ctx) {
        Severity::Is(s) => s,
        Severity::ByData => judged,
    }
}

/// Why a finding's status is not the policy's: the selection that moved it
/// (JSON `waived` / `raised`, said in the table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Waiver {
    /// An ignore file's entry, with its reason (INFO "ignored: REASON").
    Ignored { reason: String, file: String, line: usize },
    /// `--allow KIND[=GLOB]`.
    Allowed { rule: String },
    /// `--baseline`: as bad in the baseline.
    Baselined { file: String },
}

/// Why a finding is worse than the policy's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Raise {
    /// `--fail-on KIND`.
    FailOn,
    /// `--strict`: every WARN fails.
    Strict,
    /// `--baseline`: worse than in the baseline.
    NewSinceBaseline,
}

/// `KIND` or `KIND=PATH-GLOB`: which findings a rule selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub kind: Kind,
    /// Matched against the binary's path in an image, else the check's name.
    pub glob: Option<String>,
}

impl Rule {
    /// Whether the rule selects a finding of `kind` about `subject`.
    pub fn selects(&self, kind: Kind, subject: &str) -> bool {
        self.kind == kind && self.glob.as_deref().is_none_or(|g| glob_match(g.as_bytes(), subject.as_bytes()))
    }

    /// As typed: `raw-clock-call-site=/usr/bin/*`.
    pub fn text(&self) -> String {
        match &self.glob {
            Some(g) => format!("{}={g}", self.kind.id()),
            None => self.kind.id().to_string(),
        }
    }
}

/// One entry of an ignore file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignore {
    pub rule: Rule,
    pub reason: String,
    /// `expires=YYYY-MM-DD`: an error from that day on.
    pub expires: Option<(i32, u32, u32)>,
    pub file: String,
    pub line: usize,
}

/// What a CI job selects on top of the policy, resolved before the audit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub fail_on: Vec<Kind>,
    pub allow: Vec<Rule>,
    pub ignores: Vec<Ignore>,
    pub strict: bool,
}

/// A finding after the gate: the policy's status, then the selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gated {
    pub status: Status,
    pub waived: Option<Waiver>,
    pub raised: Option<Raise>,
}

impl Selection {
    /// The gate on one finding of `kind` about `subject` whose policy
    /// status is `status`: a waiver turns WARN and FAIL into INFO (still
    /// listed, still counted), `--fail-on` and `--strict` raise to FAIL.
    pub fn gate(&self, kind: Kind, subject: &str, status: Status) -> Gated {
        let problem = status >= Status::Warn;
        if problem {
            if let Some(i) = self.ignores.iter().find(|i| i.rule.selects(kind, subject)) {
                let waived = Waiver::Ignored { reason: i.reason.clone(), file: i.file.clone(), line: i.line };
                return Gated { status: Status::Info, waived: Some(waived), raised: None };
            }
            if let Some(r) = self.allow.iter().find(|r| r.selects(kind, subject)) {
                return Gated { status: Status::Info, waived: Some(Waiver::Allowed { rule: r.text() }), raised: None };
            }
        }
        let raisable = matches!(status, Status::Warn | Status::Info);
        if raisable && self.fail_on.contains(&kind) {
            return Gated { status: Status::Fail, waived: None, raised: Some(Raise::FailOn) };
        }
        if status == Status::Warn && self.strict {
            return Gated { status: Status::Fail, waived: None, raised: Some(Raise::Strict) };
        }
        Gated { status, waived: None, raised: None }
    }
}

/// A shell glob (`*`, `?`, `[...]`, as fnmatch without flags: `*` crosses
/// `/`), matched on bytes: image paths need not be UTF-8.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        let step = match pat.get(p) {
            Some(b'*') => {
                star = Some((p, i));
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => class_match(pat, p, s[i]),
            Some(b'\\') if p + 1 < pat.len() => (pat[p + 1] == s[i]).then_some(p + 2),
            Some(&c) => (c == s[i]).then_some(p + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                p = next;
                i += 1;
            }
            (None, Some((sp, si))) => {
                p = sp + 1;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            (None, None) => return false,
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// `[abc]`, `[a-z]`, `[!x]` at `pat[p]` against `c`: the index after it
/// when it matches.
fn class_match(pat: &[u8], p: usize, c: u8) -> Option<usize> {
    let mut j = p + 1;
    let negate = matches!(pat.get(j), Some(b'!' | b'^'));
    if negate {
        j += 1;
    }
    let mut hit = false;
    let mut first = true;
    while let Some(&b) = pat.get(j) {
        if b == b']' && !first {
            return (hit != negate).then_some(j + 1);
        }
        if pat.get(j + 1) == Some(&b'-') && pat.get(j + 2).is_some_and(|&e| e != b']') {
            hit |= (b..=pat[j + 2]).contains(&c);
            j += 3;
        } else {
            hit |= b == c;
            j += 1;
        }
        first = false;
    }
    // No closing bracket: a literal `[`.
    (c == b'[').then_some(p + 1)
}

/// Today's date (UTC) as (year, month, day), for ignore entries' expiry.
pub fn today() -> (i32, u32, u32) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    civil_from_days((secs / 86_400) as i64)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i32, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = (yoe + era * 400 + i64::from(m <= 2)) as i32;
    (y, m, d)
}

/// What went wrong in an ignore file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoreError {
    UnknownKind { line: usize, kind: String },
    NoReason { line: usize },
    BadDate { line: usize, text: String },
    Expired { line: usize, rule: String, date: (i32, u32, u32) },
}

/// Parse an ignore file (`name` for its entries' provenance): one entry a
/// line, `KIND[=PATH-GLOB] [expires=YYYY-MM-DD] REASON`; `#` starts a
/// comment line; a reason is required; an entry past its date is an error.
pub fn parse_ignores(name: &str, text: &str, today: (i32, u32, u32)) -> Result<Vec<Ignore>, IgnoreError> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (selector, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        let (kind, glob) = match selector.split_once('=') {
            Some((k, g)) => (k, Some(g.to_string())),
            None => (selector, None),
        };
        let kind = Kind::from_id(kind).ok_or_else(|| IgnoreError::UnknownKind { line, kind: kind.to_string() })?;
        let mut rest = rest.trim_start();
        let mut expires = None;
        if let Some(after) = rest.strip_prefix("expires=") {
            let (date, tail) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
            expires = Some(parse_date(date).ok_or_else(|| IgnoreError::BadDate { line, text: date.into() })?);
            rest = tail.trim_start();
        }
        if rest.is_empty() {
            return Err(IgnoreError::NoReason { line });
        }
        let rule = Rule { kind, glob };
        if let Some(date) = expires.filter(|d| *d <= today) {
            return Err(IgnoreError::Expired { line, rule: rule.text(), date });
        }
        out.push(Ignore { rule, reason: rest.to_string(), expires, file: name.to_string(), line });
    }
    Ok(out)
}

fn parse_date(s: &str) -> Option<(i32, u32, u32)> {
    let mut it = s.splitn(3, '-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some((y, m, d))
}

/// `--allow KIND[=GLOB]` and `--fail-on KIND` as typed: the kind must exist.
pub fn parse_rule(text: &str) -> Option<Rule> {
    let (kind, glob) = match text.split_once('=') {
        Some((k, g)) => (k, Some(g.to_string())),
        None => (text, None),
    };
    Some(Rule { kind: Kind::from_id(kind)?, glob })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_fnmatch() {
        let m = |p: &str, s: &str| glob_match(p.as_bytes(), s.as_bytes());
        assert!(m("/usr/bin/*", "/usr/bin/myapp"));
        assert!(m("*", "/a/b"));
        assert!(m("/usr/*/my?pp", "/usr/bin/myapp"));
        assert!(!m("/usr/bin/*", "/usr/sbin/x"));
        assert!(m("/opt/[a-c]x", "/opt/bx"));
        assert!(!m("/opt/[!a-c]x", "/opt/bx"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("x\\*", "x*"));
        assert!(glob_match(b"bin/*", b"bin/\xff"));
    }

    #[test]
    fn the_table_holds_the_issue_s_cases() {
        // An image's raw clock caller fails; a 32-bit program is INFO;
        // getrandom through an older libc is a WARN.
        assert_eq!(severity(Kind::RawClockCallSite, Context::Image, Status::Warn), Status::Fail);
        assert_eq!(severity(Kind::VsyscallCallSite, Context::Image, Status::Warn), Status::Fail);
        assert_eq!(severity(Kind::Compat32Bit, Context::Image, Status::Warn), Status::Info);
        assert_eq!(severity(Kind::RandomSyscallOldLibc, Context::Image, Status::Fail), Status::Warn);
        assert_eq!(severity(Kind::RawClockCallSite, Context::Process, Status::Fail), Status::Warn);
        assert_eq!(severity(Kind::RawClockSyscall, Context::Host, Status::Warn), Status::Warn);
        for k in Kind::ALL {
            for c in Context::ALL {
                let _ = policy(*k, c);
            }
        }
    }

    #[test]
    fn selection_waives_and_raises() {
        let sel = Selection {
            fail_on: vec![Kind::RandomSyscallOldLibc],
            allow: vec![Rule { kind: Kind::RawClockCallSite, glob: Some("/opt/*".into()) }],
            ignores: vec![],
            strict: false,
        };
        let g = sel.gate(Kind::RandomSyscallOldLibc, "random:glibc-2.36", Status::Warn);
        assert_eq!((g.status, g.raised), (Status::Fail, Some(Raise::FailOn)));
        let g = sel.gate(Kind::RawClockCallSite, "/opt/legacy", Status::Fail);
        assert_eq!(g.status, Status::Info);
        assert!(matches!(g.waived, Some(Waiver::Allowed { .. })));
        assert_eq!(sel.gate(Kind::RawClockCallSite, "/usr/bin/x", Status::Fail).status, Status::Fail);
        let strict = Selection { strict: true, ..Selection::default() };
        assert_eq!(strict.gate(Kind::KernelOldClocks, "kernel_version", Status::Warn).status, Status::Fail);
        assert_eq!(strict.gate(Kind::Compat32Bit, "/x", Status::Info).status, Status::Info);
    }

    #[test]
    fn ignore_files_need_reasons_and_expire() {
        let today = (2026, 12, 2);
        let text =
            "# legacy\nraw-clock-call-site=/usr/bin/old expires=2027-01-31 vendor binary, OPS-12\n\nnote just a note\n";
        let got = parse_ignores(".vdsoctlignore", text, today).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].rule.glob.as_deref(), Some("/usr/bin/old"));
        assert_eq!(got[0].reason, "vendor binary, OPS-12");
        assert_eq!(got[0].expires, Some((2027, 1, 31)));
        assert_eq!(got[0].line, 2);
        assert_eq!(parse_ignores("f", "raw-clock-call-site\n", today), Err(IgnoreError::NoReason { line: 1 }));
        assert!(matches!(parse_ignores("f", "no-such-kind why\n", today), Err(IgnoreError::UnknownKind { .. })));
        assert!(matches!(
            parse_ignores("f", "note expires=2026-12-02 today is the day\n", today),
            Err(IgnoreError::Expired { line: 1, .. })
        ));
        assert!(matches!(parse_ignores("f", "note expires=2026-13-01 x\n", today), Err(IgnoreError::BadDate { .. })));
    }

    #[test]
    fn days_to_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
