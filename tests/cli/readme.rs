//! The README and the manual under doc/ run as written (issue 24): every
//! fenced block marked `sh runnable` in README.md and in each doc/*.md is
//! run, each file in its own scratch copy of the checkout's files the lines
//! use, with the vdsoctl under test first on PATH. A block is one shell
//! session (so `$!` and a `cd` carry from line to line); each of its lines
//! must exit with the status it documents: 0, or N when the line ends in a
//! comment that ends in `exit N`. In a block written as a session (lines
//! `$ COMMAND` with sample output under them) only the `$` lines run. What
//! a block leaves running is killed when it ends. The README itself stays
//! short, for users: at most 300 lines; the manual is doc/.

use super::common::{have_m32, skip, vdsoctl_path};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// One line to run, the status it documents, and where it is (its line
/// number in the file, from 1) for the message when it fails.
#[derive(Debug, PartialEq)]
struct Line {
    text: String,
    status: i32,
    at: usize,
}

/// The files whose blocks run: README.md, then every doc/*.md by name.
fn documents(root: &Path) -> Vec<std::path::PathBuf> {
    let mut docs: Vec<_> = std::fs::read_dir(root.join("doc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
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

/// A document's `sh runnable` blocks, each as its lines to run, in order.
fn runnable_blocks(doc: &str) -> Vec<Vec<Line>> {
    let mut blocks = Vec::new();
    let mut block: Option<Vec<(usize, &str)>> = None;
    for (n, line) in doc.lines().enumerate() {
        match &mut block {
            Some(b) if line.starts_with("```") => {
                let session = b.iter().any(|(_, l)| l.starts_with("$ "));
                let lines = b
                    .iter()
                    .filter_map(|&(at, l)| if session { l.strip_prefix("$ ").map(|l| (at, l)) } else { Some((at, l)) })
                    .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                    .map(|(at, l)| Line { text: l.to_string(), status: documented_status(l), at })
                    .collect();
                blocks.push(lines);
                block = None;
            }
            Some(b) => b.push((n + 1, line)),
            None if line.trim_end() == "```sh runnable" => block = Some(Vec::new()),
            None => {}
        }
    }
    blocks
}

/// The block as one sh script: after each line, its status is checked
/// against the documented one; the first that differs ends the script
/// with status 100, saying which line of which file on stderr.
fn script(file: &str, block: &[Line]) -> String {
    let mut s = String::new();
    for line in block {
        s += &format!(
            "{}\ns=$?; if [ $s -ne {} ]; then echo \"{file}:{} exited $s (documented: {})\" >&2; exit 100; fi\n",
            line.text, line.status, line.at, line.status
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

/// Run a block's `lines` as one `sh` script in `scratch` with `path` as
/// PATH: its stdout, stderr and status.
fn run_block(name: &str, lines: &[Line], scratch: &Path, path: &str) -> std::process::Output {
    // Its own process group, so that what the block leaves running is
    // killed when it ends; output to files, which a process left behind
    // cannot hold open the way it would a pipe.
    let (stdout, stderr) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    let mut sh = Command::new("sh")
        .args(["-c", &script(name, lines)])
        .current_dir(scratch)
        .env("PATH", path)
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
    std::process::Output { status, stdout: read(stdout).into_bytes(), stderr: read(stderr).into_bytes() }
}

#[test]
fn readme_runnable_lines_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs: Vec<(String, Vec<Vec<Line>>)> = documents(root)
        .iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, runnable_blocks(&std::fs::read_to_string(p).unwrap()))
        })
        .collect();
    let all: Vec<&Line> = docs.iter().flat_map(|(_, blocks)| blocks.iter().flatten()).collect();
    assert!(all.len() >= 8, "README.md and doc/*.md mark their runnable blocks `sh runnable`: {all:?}");
    // The README's own examples run, and the manual's too.
    for name in ["README.md", "doc/GUIDE.md"] {
        assert!(docs.iter().any(|(n, b)| n == name && !b.is_empty()), "{name} has no `sh runnable` block");
    }
    // The trace and check examples are among them, with their FAILs' status.
    for (start, status) in [("vdsoctl trace ", 3), ("vdsoctl check -p $!", 1), ("vdsoctl check -- ./clock_loop", 1)] {
        assert!(all.iter().any(|l| l.text.starts_with(start) && l.status == status), "{start}: {all:?}");
    }
    let bin_dir = vdsoctl_path().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    // Each file in its own scratch directory: a reader follows one page,
    // so a page's blocks must not lean on what another page built.
    let mut scratches = Vec::new();
    for (name, blocks) in docs.iter().filter(|(_, blocks)| !blocks.is_empty()) {
        let scratch = tempfile::tempdir().unwrap();
        copy_tree(&root.join("fixtures"), &scratch.path().join("fixtures"));
        for block in blocks {
            let lines: Vec<Line> = block
                .iter()
                .filter(|l| {
                    let skipped = l.text.contains("-m32") && !have_m32();
                    if skipped {
                        skip(&format!("gcc -m32 cannot build (install gcc-multilib): {name}:{}: {}", l.at, l.text));
                    }
                    !skipped
                })
                .map(|l| Line { text: l.text.clone(), status: l.status, at: l.at })
                .collect();
            let out = run_block(name, &lines, scratch.path(), &path);
            assert!(
                out.status.success(),
                "{name}: block failed ({}):\n{}\n{}{}",
                out.status,
                script(name, &lines),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        scratches.push(scratch);
    }
    // What the lines made is there: the man pages and the fixture builds.
    for made in ["vdsoctl.1", "vdsoctl-trace.1", "vdsoctl.bash", "clock_loop", "vdso.so"] {
        assert!(
            scratches.iter().any(|s| s.path().join(made).is_file()),
            "{made} missing after the runnable lines of README.md and doc/*.md"
        );
    }
}

/// The README is for users, short enough to read through; the manual,
/// the figures and the kernel matrix are in doc/.
#[test]
fn readme_is_at_most_300_lines() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines, at most 300: move the detail to doc/ and link it");
}

#[test]
fn runnable_blocks_are_found() {
    let text = "a\n```sh runnable\necho 1\n\necho 2   # a comment: exit 3\n```\n```sh\nnot this\n```\n";
    let lines = |b: &[Line]| b.iter().map(|l| (l.text.clone(), l.status)).collect::<Vec<_>>();
    assert_eq!(lines(&runnable_blocks(text)[0]), [("echo 1".into(), 0), ("echo 2   # a comment: exit 3".into(), 3)]);
    // Each line knows where it is in its file, for the message when it fails.
    assert_eq!(runnable_blocks(text)[0].iter().map(|l| l.at).collect::<Vec<_>>(), [3, 5]);
    // A session: only the `$` lines run; the rest is sample output.
    let text = "```sh runnable\n$ ./x & sleep 1\n$ vdsoctl check -p $!   # exit 1\nCHECK  STATUS\nverdict: FAIL\n$ kill $!\n```\n";
    let want: Vec<(String, i32)> =
        vec![("./x & sleep 1".into(), 0), ("vdsoctl check -p $!   # exit 1".into(), 1), ("kill $!".into(), 0)];
    assert_eq!(lines(&runnable_blocks(text)[0]), want);
    // `exit N` inside the command is the command's business, not a documented status.
    assert_eq!(documented_status("vdsoctl trace -- sh -c 'true; exit 3'"), 0);
    assert_eq!(documented_status("vdsoctl trace -- sh -c 'exit 3'   # the command's status: exit 3"), 3);
}

/// A table row's check name: a line that starts unindented with a name and
/// then a status word (`host_trace  OK  observed …`).
fn row_name(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let name = words.next().filter(|n| !line.starts_with(' ') && !n.ends_with(':'))?;
    words.next().filter(|s| ["OK", "WARN", "FAIL", "INFO", "SKIP"].contains(s)).map(|_| name)
}

/// The README's `vdsoctl check` sample is what `check` prints here: the
/// same header, every row it shows (it cuts others with `…`) named in the
/// same order, and a verdict line last. Its details and statuses are one
/// host's, so they are not compared.
#[test]
fn readme_check_sample_is_real_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let sample: Vec<&str> =
        readme.lines().skip_while(|l| *l != "$ vdsoctl check").skip(1).take_while(|l| !l.starts_with("```")).collect();
    assert!(sample.len() > 3, "README.md shows `$ vdsoctl check` and its output");
    let _lock = super::common::system_wide_lock();
    let out = Command::new(vdsoctl_path()).args(["--color", "never", "check"]).env("COLUMNS", "100").output().unwrap();
    let real = String::from_utf8(out.stdout).unwrap();
    let real: Vec<&str> = real.lines().collect();
    let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(words(sample[0]), words(real[0]), "the header:\n{}", real.join("\n"));
    let names = |ls: &[&str]| ls.iter().filter_map(|l| row_name(l).map(str::to_string)).collect::<Vec<_>>();
    let (shown, all) = (names(&sample), names(&real));
    let mut at = all.iter();
    for name in &shown {
        assert!(at.any(|n| n == name), "README's row {name} is not in `check`'s rows, in order: {all:?}");
    }
    assert!(sample.last().unwrap().starts_with("verdict: ") && real.last().unwrap().starts_with("verdict: "));
}
