//! The README runs as written (issue 24): every fenced block marked
//! `sh runnable` is run, in a scratch copy of the checkout's files the lines
//! use, with the vdsoctl under test first on PATH. A block is one shell
//! session (so `$!` and a `cd` carry from line to line); each of its lines
//! must exit with the status it documents: 0, or N when the line ends in a
//! comment that ends in `exit N`. In a block written as a session (lines
//! `$ COMMAND` with sample output under them) only the `$` lines run. What
//! a block leaves running is killed when it ends.

use super::common::{have_m32, skip, vdsoctl_path};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// One line to run and the status it documents.
#[derive(Debug, PartialEq)]
struct Line {
    text: String,
    status: i32,
}

/// The status a line documents: N when its trailing comment ends in
/// `exit N`, else 0. (Only a comment: `sh -c '…; exit 3'` documents none.)
fn documented_status(line: &str) -> i32 {
    let Some((_, comment)) = line.rsplit_once(" #") else { return 0 };
    let words: Vec<&str> = comment.split_whitespace().collect();
    match words.as_slice() {
        [.., exit, n] if exit.trim_start_matches(|c: char| !c.is_alphanumeric()) == "exit" => n.parse().unwrap_or(0),
        _ => 0,
    }
}

/// The README's `sh runnable` blocks, each as its lines to run, in order.
fn runnable_blocks(readme: &str) -> Vec<Vec<Line>> {
    let mut blocks = Vec::new();
    let mut block: Option<Vec<&str>> = None;
    for line in readme.lines() {
        match &mut block {
            Some(b) if line.starts_with("```") => {
                let session = b.iter().any(|l| l.starts_with("$ "));
                let lines = b
                    .iter()
                    .filter_map(|l| if session { l.strip_prefix("$ ") } else { Some(*l) })
                    .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                    .map(|l| Line { text: l.to_string(), status: documented_status(l) })
                    .collect();
                blocks.push(lines);
                block = None;
            }
            Some(b) => b.push(line),
            None if line.trim_end() == "```sh runnable" => block = Some(Vec::new()),
            None => {}
        }
    }
    blocks
}

/// The block as one sh script: after each line, its status is checked
/// against the documented one; the first that differs ends the script
/// with status 100, saying which line on stderr.
fn script(block: &[Line]) -> String {
    let mut s = String::new();
    for (k, line) in block.iter().enumerate() {
        s += &format!(
            "{}\ns=$?; if [ $s -ne {} ]; then echo \"README line {k} exited $s (documented: {})\" >&2; exit 100; fi\n",
            line.text, line.status, line.status
        );
    }
    s
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
    let blocks = runnable_blocks(&std::fs::read_to_string(root.join("README.md")).unwrap());
    let all: Vec<&Line> = blocks.iter().flatten().collect();
    assert!(all.len() >= 8, "the README marks its runnable blocks `sh runnable`: {all:?}");
    // The trace and check examples are among them, with their FAILs' status.
    for (start, status) in [("vdsoctl trace ", 3), ("vdsoctl check -p $!", 1), ("vdsoctl check -- ./clock_loop", 1)] {
        assert!(all.iter().any(|l| l.text.starts_with(start) && l.status == status), "{start}: {all:?}");
    }
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&root.join("fixtures"), &scratch.path().join("fixtures"));
    let bin_dir = vdsoctl_path().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for block in &blocks {
        let block: Vec<&Line> = block
            .iter()
            .filter(|l| {
                let skipped = l.text.contains("-m32") && !have_m32();
                if skipped {
                    skip(&format!("gcc -m32 cannot build (install gcc-multilib): {}", l.text));
                }
                !skipped
            })
            .collect();
        let lines: Vec<Line> = block.iter().map(|l| Line { text: l.text.clone(), status: l.status }).collect();
        // Its own process group, so that what the block leaves running is
        // killed when it ends; output to files, which a process left behind
        // cannot hold open the way it would a pipe.
        let (stdout, stderr) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
        let mut sh = Command::new("sh")
            .args(["-c", &script(&lines)])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .stdin(std::process::Stdio::null())
            .stdout(stdout.try_clone().unwrap())
            .stderr(stderr.try_clone().unwrap())
            .process_group(0)
            .spawn()
            .expect("sh runs");
        let group = nix::unistd::Pid::from_raw(sh.id() as i32);
        let status = sh.wait().expect("sh ends");
        // ESRCH when nothing was left: fine.
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let read = |mut f: std::fs::File| {
            use std::io::{Read, Seek};
            let mut text = String::new();
            f.rewind().unwrap();
            f.read_to_string(&mut text).unwrap_or_default();
            text
        };
        let out = std::process::Output { status, stdout: read(stdout).into_bytes(), stderr: read(stderr).into_bytes() };
        assert!(
            out.status.success(),
            "README block failed ({}):\n{}\n{}{}",
            out.status,
            script(&lines),
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
    let text = "a\n```sh runnable\necho 1\n\necho 2   # a comment: exit 3\n```\n```sh\nnot this\n```\n";
    let lines = |b: &[Line]| b.iter().map(|l| (l.text.clone(), l.status)).collect::<Vec<_>>();
    assert_eq!(lines(&runnable_blocks(text)[0]), [("echo 1".into(), 0), ("echo 2   # a comment: exit 3".into(), 3)]);
    // A session: only the `$` lines run; the rest is sample output.
    let text = "```sh runnable\n$ ./x & sleep 1\n$ vdsoctl check -p $!   # exit 1\nCHECK  STATUS\nverdict: FAIL\n$ kill $!\n```\n";
    let want: Vec<(String, i32)> =
        vec![("./x & sleep 1".into(), 0), ("vdsoctl check -p $!   # exit 1".into(), 1), ("kill $!".into(), 0)];
    assert_eq!(lines(&runnable_blocks(text)[0]), want);
    // `exit N` inside the command is the command's business, not a documented status.
    assert_eq!(documented_status("vdsoctl trace -- sh -c 'true; exit 3'"), 0);
    assert_eq!(documented_status("vdsoctl trace -- sh -c 'exit 3'   # the command's status: exit 3"), 3);
}
