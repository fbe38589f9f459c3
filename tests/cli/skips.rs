//! The record of skipped tests: every `skip` appends a line to a file
//! under the cargo target tmpdir named for the process that ran the test
//! binary (cargo, in `cargo test`), and `tests/tests_skip_tally.rs`, the
//! test target cargo runs after `tests` (targets run in name order), reads
//! the file of its own parent and prints the tally at the end of the suite.

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
