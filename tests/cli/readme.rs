//! The README runs as written (issue 24): every line of a fenced block
//! marked `sh runnable` is run with sh, in a scratch copy of the checkout's
//! files the lines use, with the vdsoctl under test first on PATH, and must
//! exit 0.

use super::common::{have_m32, skip, vdsoctl_path};
use std::path::Path;
use std::process::Command;

/// The lines of the README's `sh runnable` blocks, in order.
fn runnable_lines(readme: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in readme.lines() {
        if inside && line.starts_with("```") {
            inside = false;
        } else if inside {
            if !line.trim().is_empty() {
                lines.push(line.to_string());
            }
        } else if line.trim_end() == "```sh runnable" {
            inside = true;
        }
    }
    lines
}

/// Copy `from` into `to`, recursively (the fixtures the lines build).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn readme_runnable_lines_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lines = runnable_lines(&std::fs::read_to_string(root.join("README.md")).unwrap());
    assert!(lines.len() >= 5, "the README marks its runnable blocks `sh runnable`: {lines:?}");
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&root.join("fixtures"), &scratch.path().join("fixtures"));
    let bin_dir = vdsoctl_path().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for line in &lines {
        if line.contains("-m32") && !have_m32() {
            skip(&format!("gcc -m32 cannot build (install gcc-multilib): {line}"));
            continue;
        }
        let out = Command::new("sh")
            .args(["-c", line])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "README line failed ({}): {line}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // What the lines made is there: the man pages and the fixture builds.
    for made in ["vdsoctl.1", "vdsoctl-trace.1", "vdsoctl.bash", "clock_loop", "vdso.so"] {
        assert!(scratch.path().join(made).is_file(), "{made} missing after the README's lines");
    }
}

#[test]
fn runnable_blocks_are_found() {
    let text = "a\n```sh runnable\necho 1\n\necho 2\n```\n```sh\nnot this\n```\n";
    assert_eq!(runnable_lines(text), ["echo 1", "echo 2"]);
}
