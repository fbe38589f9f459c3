//! The kernel matrix's data (scripts/kernel-matrix/): each line of `expect`
//! names kernels, an engine, cases and an outcome that exist, so a line
//! added for a new engine or a closed gap cannot silently match nothing, and
//! every case of every kernel has an expectation. The matrix itself boots
//! kernels under QEMU: scripts/kernel-matrix.sh, which .ci/run runs.

use clap::ValueEnum;
use std::path::Path;
use std::process::Command;
use vdsoctl::measure::trace::engine::Choice;

/// The words the guest suite reports (scripts/kernel-matrix/guest-suite.sh)
/// and the two the host adds: `skip` (not run) and `gap` (a known gap).
const OUTCOMES: [&str; 11] =
    ["exact", "exact-nocomm", "accounted", "inexact", "refused", "usage", "error", "ok", "differs", "skip", "gap"];

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kernel-matrix").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The data lines of a file: blank lines and `#` comments left out, split
/// into at most `n` whitespace-separated fields (the last keeps the rest).
fn records(text: &str, n: usize) -> Vec<Vec<String>> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut fields: Vec<String> = Vec::new();
            let mut rest = l;
            while fields.len() + 1 < n {
                let Some((word, tail)) = rest.split_once(char::is_whitespace) else { break };
                fields.push(word.to_string());
                rest = tail.trim_start();
            }
            if !rest.is_empty() {
                fields.push(rest.to_string());
            }
            fields
        })
        .collect()
}

/// A shell glob with `*`, `?` and `[...]`, as the script matches with `[[ x == $glob ]]`.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match (pattern.first(), text.first()) {
        (None, _) => text.is_empty(),
        (Some(b'*'), _) => glob(&pattern[1..], text) || (!text.is_empty() && glob(pattern, &text[1..])),
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &text[1..]),
        // A bracket set, as the shell's: `[23]`, `[a-z]`.
        (Some(b'['), Some(&t)) => match pattern.iter().position(|&c| c == b']') {
            Some(end) if end > 1 => in_set(&pattern[1..end], t) && glob(&pattern[end + 1..], &text[1..]),
            _ => t == b'[' && glob(&pattern[1..], &text[1..]),
        },
        (Some(p), Some(t)) if p == t => glob(&pattern[1..], &text[1..]),
        _ => false,
    }
}

/// Whether `t` is in a bracket set's body (`23`, `a-z`).
fn in_set(set: &[u8], t: u8) -> bool {
    let mut i = 0;
    while i < set.len() {
        if set.get(i + 1) == Some(&b'-') && i + 2 < set.len() {
            if (set[i]..=set[i + 2]).contains(&t) {
                return true;
            }
            i += 3;
        } else {
            if set[i] == t {
                return true;
            }
            i += 1;
        }
    }
    false
}

/// The suite's cases for an arch, as `sh guest-suite.sh cases ARCH` lists
/// them: (kind, name), kind "trace" (run per engine) or "-".
fn cases(arch: &str) -> Vec<(String, String)> {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kernel-matrix/guest-suite.sh");
    let out = Command::new("sh").arg(&suite).args(["cases", arch]).output().expect("sh runs");
    assert!(out.status.success(), "guest-suite.sh cases {arch}: {}", String::from_utf8_lossy(&out.stderr));
    let list: Vec<(String, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_once(' ').map(|(k, c)| (k.to_string(), c.to_string())).expect("KIND CASE"))
        .collect();
    assert!(list.iter().any(|(k, _)| k == "trace") && list.iter().any(|(k, _)| k == "-"), "{arch}: {list:?}");
    list
}

#[test]
fn kernel_matrix_kernels_are_well_formed() {
    let kernels = records(&data("kernels"), 5);
    assert!(kernels.len() >= 6, "{kernels:?}");
    let mut names = std::collections::HashSet::new();
    for k in &kernels {
        assert!((3..=5).contains(&k.len()), "NAME ARCH METAPACKAGE [SUITE [BOOT ARGS]]: {k:?}");
        // The SUITE column: the Debian release it comes from (bookworm when absent).
        if let Some(suite) = k.get(3) {
            assert!(["bookworm", "trixie", "trixie-backports", "sid"].contains(&suite.as_str()), "{k:?}");
        }
        assert!(names.insert(k[0].clone()), "{} twice", k[0]);
        // expect's globs tell the arches apart by the Debian flavour's suffix.
        let (suffix, debarch) = match k[1].as_str() {
            "x86_64" => ("-amd64", None),
            "aarch64" => ("-arm64", Some(":arm64")),
            "riscv64" => ("-riscv64", Some(":riscv64")),
            "ppc64le" => ("-ppc64el", Some(":ppc64el")),
            "s390x" => ("-s390x", Some(":s390x")),
            other => panic!("{}: unknown arch {other}", k[0]),
        };
        assert!(k[0].ends_with(suffix), "{} ({}) should end in {suffix}", k[0], k[1]);
        assert!(k[2].starts_with("linux-image-"), "{k:?}");
        assert_eq!(debarch, k[2].find(':').map(|i| &k[2][i..]), "{k:?}: a foreign package names its arch");
    }
    // The issues' minimum: bookworm's 6.1 cloud, generic and rt on x86_64, 6.12, arm64's 6.1.
    for name in ["6.1-cloud-amd64", "6.1-amd64", "6.1-rt-amd64", "6.12-cloud-amd64", "6.1-cloud-arm64", "6.1-arm64"] {
        assert!(names.contains(name), "{name} missing from scripts/kernel-matrix/kernels");
    }
}

#[test]
fn kernel_matrix_expectations_name_what_exists_and_cover_every_case() {
    let kernels = records(&data("kernels"), 5);
    let expect = records(&data("expect"), 5);
    let engines: Vec<String> = Choice::value_variants()
        .iter()
        .filter_map(|c| c.to_possible_value())
        .map(|v| v.get_name().to_string())
        .collect();
    let catalog: Vec<(String, Vec<(String, String)>)> =
        ["x86_64", "aarch64", "riscv64", "ppc64le", "s390x"].iter().map(|a| (a.to_string(), cases(a))).collect();
    let arch_cases = |arch: &str| &catalog.iter().find(|(a, _)| a == arch).expect("known arch").1;
    for line in &expect {
        assert!(line.len() >= 4, "KERNEL ENGINE CASE OUTCOME [WHY]: {line:?}");
        let (kernel, engine, case, outcome) = (&line[0], &line[1], &line[2], &line[3]);
        let matched: Vec<&Vec<String>> = kernels.iter().filter(|k| glob(kernel.as_bytes(), k[0].as_bytes())).collect();
        assert!(!matched.is_empty(), "{line:?}: KERNEL matches no kernel");
        assert!(engine == "-" || engines.contains(engine), "{line:?}: ENGINE is none of {engines:?} nor -");
        let kind = if engine == "-" { "-" } else { "trace" };
        assert!(
            matched
                .iter()
                .any(|k| arch_cases(&k[1]).iter().any(|(kd, c)| kd == kind && glob(case.as_bytes(), c.as_bytes()))),
            "{line:?}: CASE matches no {kind} case of guest-suite.sh on those kernels"
        );
        // "exact|accounted": any of them (the host's `[[ "|$want|" == *"|$got|"* ]]`).
        let known = |o: &str| {
            OUTCOMES.contains(&o)
                || ["warn:", "fail:", "mode:"].iter().any(|p| o.strip_prefix(p).is_some_and(|rest| !rest.is_empty()))
        };
        assert!(outcome.split('|').all(known), "{line:?}: OUTCOME is none of {OUTCOMES:?}, warn:CHECKS or fail:CHECKS");
        assert!(
            !outcome.contains('|') || !outcome.split('|').any(|o| ["skip", "gap"].contains(&o)),
            "{line:?}: skip and gap stand alone"
        );
        if !["exact", "ok"].contains(&outcome.as_str()) {
            assert!(line.len() == 5, "{line:?}: an outcome other than exact or ok says why");
        }
    }
    // The plan the script makes: every engine named for a kernel, with each
    // trace case, and the "-" cases, has a last matching line.
    for k in &kernels {
        let has_line = |e: &str, case: &str| {
            expect
                .iter()
                .any(|l| l[1] == e && glob(l[0].as_bytes(), k[0].as_bytes()) && glob(l[2].as_bytes(), case.as_bytes()))
        };
        let named: Vec<&String> =
            expect.iter().filter(|l| l[1] != "-" && glob(l[0].as_bytes(), k[0].as_bytes())).map(|l| &l[1]).collect();
        assert!(named.iter().any(|e| *e == "bpf") && named.iter().any(|e| *e == "perf"), "{}: both engines run", k[0]);
        for (kind, case) in arch_cases(&k[1]) {
            let engines_here: Vec<&str> =
                if kind == "-" { vec!["-"] } else { named.iter().map(|e| e.as_str()).collect() };
            for e in engines_here {
                assert!(has_line(e, case), "{} {e} {case}: no line of scripts/kernel-matrix/expect matches", k[0]);
            }
        }
    }
}

/// The guest's `accounted` outcome: rows short of the expected by no more
/// than the report's `lost` (0 short included: a `sys_enter` run skipped
/// for another syscall is reported too), never a row over or one not
/// expected. Counts are compared as numbers (busybox awk compared a
/// returned field as a string: 6,359 "over" 10,000).
#[test]
fn accounted_takes_a_shortfall_within_the_reported_loss_only() {
    let dir = tempfile::tempdir().unwrap();
    let row = |n: u32| format!("row clock_loop x86_64 clock_gettime CLOCK_REALTIME {n} thread");
    let file = |name: &str, lost: u32, counts: &[u32]| {
        let mut lines = vec!["engine bpf".to_string(), format!("lost {lost}"), "unfollowed 0".to_string()];
        lines.extend(counts.iter().map(|n| row(*n)));
        lines.sort();
        let path = dir.path().join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let want = file("want", 0, &[10_000; 4]);
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kernel-matrix/guest-suite.sh");
    let judge = |got: &Path| {
        let out = Command::new("sh").arg(&suite).args(["accounted", "x86_64"]).arg(&want).arg(got).output().unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // The 7.3 run's: short by 6,626 with 6,636 skipped runs reported.
    assert_eq!(judge(&file("short", 6_636, &[10_000, 10_000, 5_608, 7_766])).as_deref(), Some("6626 6636"));
    // Every row exact, runs of other syscalls skipped: accounted, 0 short.
    assert_eq!(judge(&file("exact", 40, &[10_000; 4])).as_deref(), Some("0 40"));
    // Short by more than reported, a row over, a thread too many: not.
    assert_eq!(judge(&file("under", 5_000, &[10_000, 10_000, 5_608, 7_766])), None);
    assert_eq!(judge(&file("over", 9_000, &[10_001, 10_000, 5_608, 7_766])), None);
    assert_eq!(judge(&file("more", 9_000, &[10_000, 10_000, 5_608, 7_766, 1])), None);
}

#[test]
fn glob_matches_as_the_shell_does() {
    assert!(glob(b"*-amd64", b"6.1-cloud-amd64"));
    assert!(!glob(b"*-amd64", b"6.1-cloud-arm64"));
    assert!(glob(b"*", b""));
    assert!(glob(b"raw?2", b"raw32"));
    assert!(!glob(b"raw", b"raw32"));
    assert!(glob(b"7.[23]-amd64", b"7.2-amd64") && glob(b"7.[23]-amd64", b"7.3-amd64"));
    assert!(!glob(b"7.[23]-amd64", b"7.1-amd64"));
    assert!(glob(b"*-[rs][i3][s9]*", b"7.2-s390x") && glob(b"[a-c]x", b"bx") && !glob(b"[a-c]x", b"dx"));
}
