//! The record of skipped tests: every `skip` appends a line to a file
//! under the cargo target tmpdir named for the process that ran the test
//! binary (cargo, in `cargo test`), and `tests/tests_skip_tally.rs`, the
//! test target cargo runs after `tests` (targets run in name order), reads
//! the file of its own parent and prints the tally at the end of the suite.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder of the skip records.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("skips")
}

/// The record of the run that `parent` (cargo) started.
pub fn record(parent: u32) -> PathBuf {
    dir().join(parent.to_string())
}

/// Add `test`'s skip, and why, to the record of this run: one line, one
/// write (an append of a line is whole even with tests writing beside it).
pub fn append(test: &str, why: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir())?;
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(record(std::os::unix::process::parent_id()))?;
    let why = why.replace('\n', " ");
    file.write_all(format!("{test}\t{why}\n").as_bytes())
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
