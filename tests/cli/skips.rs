//! The record of skipped tests and the SKIP tally. Every `skip` appends a
//! line to a file under the cargo target tmpdir named for the test
//! process; when that process exits — passed or failed, libtest's
//! `process::exit(101)` runs the C library's exit handlers too — a handler
//! registered as the binary loads prints the tally after libtest's summary
//! and removes the record. (A separate tally target, run by cargo after
//! `tests`, never ran when a test failed: cargo stops at the red target.)

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder of the skip records.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("skips")
}

/// The record of the test process `pid`.
pub fn record(pid: u32) -> PathBuf {
    dir().join(pid.to_string())
}

/// Add `test`'s skip, and why, to the record of this run: one line, one
/// write (an append of a line is whole even with tests writing beside it).
pub fn append(test: &str, why: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir())?;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(record(std::process::id()))?;
    let why = why.replace('\n', " ");
    file.write_all(format!("{test}\t{why}\n").as_bytes())
}

/// Registers [`print_tally`] to run at the process's exit, as the test
/// binary loads (before `main`, so before any test can fail).
#[used]
#[link_section = ".init_array"]
static REGISTER: extern "C" fn() = register;

/// The process that registered the handler: a forked child exiting
/// without exec prints nothing.
static REGISTERED_BY: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn register() {
    REGISTERED_BY.store(std::process::id(), std::sync::atomic::Ordering::Relaxed);
    // SAFETY: atexit takes a function pointer that stays valid (a plain
    // `extern "C" fn` of this binary) and runs it once at exit.
    unsafe { libc::atexit(print_tally) };
}

/// At exit: the tally of this process's record on stdout, after libtest's
/// summary, then the record removed (and any left by processes gone).
extern "C" fn print_tally() {
    use std::io::Write;
    if REGISTERED_BY.load(std::sync::atomic::Ordering::Relaxed) != std::process::id() {
        return;
    }
    let own = record(std::process::id());
    let text = std::fs::read_to_string(&own).unwrap_or_default();
    let _ = std::fs::remove_file(&own);
    forget_stale_records();
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(format!("\n{}", tally(&text)).as_bytes());
    let _ = out.flush();
}

/// Records of test processes that are gone (killed before their exit
/// handler ran): nobody will read them.
fn forget_stale_records() {
    let Ok(entries) = std::fs::read_dir(dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let alive = name.to_str().is_some_and(|pid| Path::new("/proc").join(pid).exists());
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The tally of a run's record: how many tests skipped all or part of
/// their work, then each skip under its test (tests in name order, a
/// test's skips in the order they came).
pub fn tally(record: &str) -> String {
    let mut by_test: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in record.lines() {
        let (test, why) = line.split_once('\t').unwrap_or((line, ""));
        by_test.entry(test).or_default().push(why);
    }
    let n = by_test.len();
    let mut out = format!("SKIP tally: {n} test{} skipped all or part of their work\n", if n == 1 { "" } else { "s" });
    for (test, whys) in &by_test {
        for why in whys {
            out.push_str(&format!("  SKIP: {test}: {why}\n"));
        }
    }
    out
}

#[test]
fn the_tally_counts_tests_and_lists_every_skip() {
    let record = "cli::b::two\tno tracefs\ncli::a::one\tno gcc -m32\ncli::b::two\tno promtool\n";
    assert_eq!(
        tally(record),
        "SKIP tally: 2 tests skipped all or part of their work\n  SKIP: cli::a::one: no gcc -m32\n  \
         SKIP: cli::b::two: no tracefs\n  SKIP: cli::b::two: no promtool\n"
    );
    assert_eq!(tally(""), "SKIP tally: 0 tests skipped all or part of their work\n");
    assert!(tally("cli::a::one\twhy\n").starts_with("SKIP tally: 1 test skipped"));
}

/// Fails on purpose after a skip, when the test below asks it to (run
/// alone, in a process of its own); otherwise it passes doing nothing.
#[test]
fn a_skip_then_a_failure_when_asked() {
    if std::env::var_os("VDSOCTL_TEST_FAIL_ON_PURPOSE").is_some() {
        super::common::skip("asked to skip");
        panic!("asked to fail");
    }
}

/// A run with a failed test still ends with the tally (cargo stops at a
/// red target, so a tally target after `tests` never printed it).
#[test]
fn a_failed_run_still_prints_the_tally() {
    let me = std::env::current_exe().unwrap();
    let out = std::process::Command::new(me)
        .args(["--exact", "cli::skips::a_skip_then_a_failure_when_asked", "--test-threads", "1"])
        .env("VDSOCTL_TEST_FAIL_ON_PURPOSE", "1")
        .env_remove("CI")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(101), "{stdout}");
    let tail = &stdout[stdout.find("test result: FAILED").unwrap_or_else(|| panic!("{stdout}"))..];
    assert!(
        tail.contains(
            "SKIP tally: 1 test skipped all or part of their work\n  \
             SKIP: cli::skips::a_skip_then_a_failure_when_asked: asked to skip\n"
        ),
        "{stdout}"
    );
}
