//! The SKIP tally, printed at the end of `cargo test`: which tests of the
//! `tests` target skipped (all or part of their work) for a missing
//! facility, and why. Cargo runs this target after `tests` (test targets
//! run in name order) with the same parent, whose record it reads and
//! removes. Under CI=true a missing facility fails its test instead, so
//! the tally is 0. A run of `tests` alone (`cargo test --test tests`)
//! prints each skip as it happens, no tally.

#[path = "cli/skips.rs"]
#[allow(dead_code)] // `append` is the tests' half
mod skips;

fn main() {
    let record = skips::record(std::os::unix::process::parent_id());
    let text = std::fs::read_to_string(&record).unwrap_or_default();
    let _ = std::fs::remove_file(&record);
    forget_stale_records();
    print!("{}", skips::tally(&text));
}

/// Records of runs whose parent is gone (the `tests` binary run by hand,
/// or a run that failed before this target): nobody will read them.
fn forget_stale_records() {
    let Ok(entries) = std::fs::read_dir(skips::dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let alive = name.to_str().is_some_and(|pid| std::path::Path::new("/proc").join(pid).exists());
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
