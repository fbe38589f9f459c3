//! Races reported as races: a target that execs while it is read, and a
//! tree whose names are swapped for FIFOs and links while it is walked.
//! Each command runs many times against the moving target; a run must end
//! (a generous timeout, killed past it), never print a false FAIL, and say
//! "exec'd while being read" when it gives up.

use super::common::{build_c, copy_executable, have_m32, skip, system_wide_lock, vdsoctl, KillOnDrop, Workload};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Runs of each command against the moving target.
const RUNS: usize = 200;

/// Far above a run's few milliseconds: only a hung run gets near it.
const TIMEOUT: Duration = Duration::from_secs(20);

/// `vdsoctl ARGS` killed after [`TIMEOUT`]: (exit code, stdout, stderr),
/// with a run that had to be killed reported as a hang.
fn run_bounded(args: &[&str]) -> (i32, String, String) {
    let out = vdsoctl().args(args).timeout(TIMEOUT).output().expect("run vdsoctl");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let Some(code) = out.status.code() else {
        panic!("vdsoctl {args:?} hung: killed after {TIMEOUT:?} ({:?}); stderr: {stderr}", out.status);
    };
    (code, String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// 200 runs each of `maps`, `auxv` and `dump` against a process that execs
/// a 64-bit and a 32-bit build of itself in turn, as fast as it can: never
/// exit 1 (a FAIL made of two images), exit 3 only to say the process
/// exec'd while being read; and what exit 0 reports is one image's: the
/// comm (`exec_flip` or `exec_flip-m32`) agrees with the word size read.
#[test]
fn exec_race_is_never_a_fail() {
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib): the exec-race target flips between 64 and 32 bits");
    }
    let _lock = system_wide_lock();
    let b64 = build_c("exec_flip", false, &[]);
    let b32 = build_c("exec_flip", true, &[]);
    let mut cmd = Command::new(&b64);
    cmd.arg(&b32).arg(&b64);
    let target = Workload::start(cmd);
    let _kill = KillOnDrop::new(target.pid());
    let pid = target.pid().to_string();
    let started = std::time::Instant::now();
    let tallies: Vec<(&str, usize, usize)> = std::thread::scope(|s| {
        let runs: Vec<_> = ["maps", "auxv", "dump"]
            .into_iter()
            .map(|command| {
                let pid = &pid;
                s.spawn(move || {
                    let (mut ok, mut raced) = (0, 0);
                    for _ in 0..RUNS {
                        let (code, stdout, stderr) = run_bounded(&["--json", command, "-p", pid]);
                        match code {
                            0 => ok += 1,
                            3 if stderr.contains("the process exec'd while being read: retry") => {
                                raced += 1;
                                continue;
                            }
                            _ => panic!("{command} -p {pid}: exit {code}\n{stderr}\n{stdout}"),
                        }
                        let doc: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
                        let m32 = doc["process"]["comm"].as_str().expect("comm").ends_with("-m32");
                        let bits_32 = match command {
                            // Needs typed data: maps says the word size only in a `note`'s words.
                            "maps" => doc["findings"].to_string().contains("this is a 32-bit process"),
                            "auxv" => doc["word_bits"] == 32,
                            _ => doc["elf"]["class"] == "ELF32",
                        };
                        assert_eq!(m32, bits_32, "{command}: the comm and the word size are of two images: {stdout}");
                    }
                    (command, ok, raced)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("a run panicked")).collect()
    });
    eprintln!("exec race, {RUNS} runs each in {:?}: {tallies:?} (command, exit 0, exit 3 raced)", started.elapsed());
    for (command, ok, _) in tallies {
        // Giving up takes 64 reads in a row that each straddle an exec:
        // most runs land between two execs within a few tries.
        assert!(ok >= RUNS / 2, "{command}: only {ok} of {RUNS} runs read the process");
    }
}

/// Keep swapping `names` between a regular file (a hard link to `elf`), a
/// FIFO nobody writes to, and a symbolic link to that FIFO, until `stop`.
fn swap_names(names: &[std::path::PathBuf], elf: &Path, spare: &Path, stop: &AtomicBool) -> u64 {
    let fifo = spare.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let mut swaps = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for (i, name) in names.iter().enumerate() {
            let tmp = spare.join(format!("tmp{i}"));
            let _ = std::fs::remove_file(&tmp);
            let made = match swaps % 3 {
                0 => std::fs::hard_link(elf, &tmp),
                1 => nix::unistd::mkfifo(&tmp, nix::sys::stat::Mode::from_bits_truncate(0o600)).map_err(Into::into),
                _ => std::os::unix::fs::symlink(&fifo, &tmp),
            };
            made.expect("make the swapped-in file");
            // tmp is beside the tree, on the same filesystem: an atomic swap.
            std::fs::rename(&tmp, name).expect("rename over the name");
        }
        swaps += 1;
    }
    swaps
}

/// 200 runs of `check --image` over a tree in which names keep turning from
/// a regular ELF file into a FIFO or a link to one, between the walk's
/// `lstat` and its `open`: every run ends (none waits on a FIFO), exits 0
/// and judges the one steady program OK; a swapped name is audited as the
/// ELF file it was when opened, or skipped.
#[test]
fn fifo_swap_race_never_hangs_the_image_walk() {
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let spare = dir.path().join("spare");
    std::fs::create_dir_all(root.join("usr/bin")).expect("mkdir");
    std::fs::create_dir_all(&spare).expect("mkdir");
    let elf = spare.join("elf");
    copy_executable(&build_c("wait_ready", false, &[]), &elf).expect("copy");
    copy_executable(&elf, &root.join("usr/bin/steady")).expect("copy");
    let names: Vec<_> = (0..4).map(|i| root.join(format!("usr/bin/swap{i}"))).collect();
    let stop = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let (swaps, seen) = std::thread::scope(|s| {
        let swapper = s.spawn(|| swap_names(&names, &elf, &spare, &stop));
        let _stop = StopOnDrop(&stop);
        let mut seen = 0usize;
        for _ in 0..RUNS {
            let (code, stdout, stderr) = run_bounded(&["--json", "check", "--image", root.to_str().unwrap()]);
            assert_eq!(code, 0, "check --image: exit {code}\n{stderr}\n{stdout}");
            let doc: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
            let rows = doc["binaries"].as_array().expect("binaries");
            assert!(rows.iter().all(|b| b["status"] == "ok"), "a false verdict: {stdout}");
            let paths: Vec<&str> = rows.iter().filter_map(|b| b["path"].as_str()).collect();
            assert!(paths.contains(&"/usr/bin/steady"), "{paths:?}");
            assert!(paths.iter().all(|p| *p == "/usr/bin/steady" || p.starts_with("/usr/bin/swap")), "{paths:?}");
            assert_eq!(doc["image"]["unreadable"], serde_json::json!([]), "{stdout}");
            seen += paths.len() - 1;
        }
        stop.store(true, Ordering::Relaxed);
        (swapper.join().expect("swapper"), seen)
    });
    eprintln!(
        "FIFO swap race: {RUNS} runs in {:?}, {swaps} rounds of 4 swaps, swapped names audited {seen} times",
        started.elapsed()
    );
    assert!(swaps > 0, "the swapper never ran");
}

/// Stops the swapper even when an assertion fails, so the scope can end.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Root audits a tree nobody owns while nobody swaps a subdirectory for a
/// symlink to a 0700 root directory, over and over (renameat2
/// RENAME_EXCHANGE): in 20 runs, no root-only file is named in the report
/// or hashed into the baseline (the walk opens each directory from its
/// parent's descriptor with O_NOFOLLOW and checks it is what lstat saw;
/// it once lstat'ed the name, then opened the path: 12 runs of 20 named
/// the secret).
#[test]
fn a_symlink_swapped_mid_walk_never_reaches_a_root_only_file() {
    use std::os::unix::fs::{chown, PermissionsExt};
    use std::os::unix::process::CommandExt;
    if !super::common::is_root() {
        return skip("the swap race is root's walk of another user's tree: it needs root");
    }
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let elf = build_c("clock_once", false, &[]);
    // 50 names of one root-only program (hard links: a walk that reaches
    // the directory has 50 chances to name it), behind 8 swapped pairs.
    let secret = base.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    copy_executable(&elf, &secret.join("root_only_secret")).unwrap();
    for i in 0..50 {
        std::fs::hard_link(secret.join("root_only_secret"), secret.join(format!("root_only_secret_{i}"))).unwrap();
    }
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
    let tree = base.path().join("tree");
    let mut owned = vec![tree.clone()];
    let mut swap = Command::new(base.path().join("swap_dir"));
    for k in 0..8 {
        let (sub, link) = (tree.join(format!("sub{k}")), tree.join(format!("link{k}")));
        std::fs::create_dir_all(&sub).unwrap();
        copy_executable(&elf, &sub.join("inside")).unwrap();
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        owned.extend([sub.join("inside"), sub.clone(), link.clone()]);
        swap.arg(sub).arg(link);
    }
    copy_executable(&elf, &tree.join("top")).unwrap();
    owned.push(tree.join("top"));
    for p in owned {
        std::os::unix::fs::lchown(&p, Some(65534), Some(65534)).unwrap();
    }
    let swapper = base.path().join("swap_dir");
    copy_executable(&build_c("swap_dir", false, &[]), &swapper).unwrap();
    chown(&swapper, Some(65534), Some(65534)).unwrap();
    swap.uid(65534).gid(65534);
    let _swap = Workload::start(swap);
    for run in 0..20 {
        let baseline = base.path().join(format!("baseline-{run}.json"));
        let (code, stdout, stderr) = run_bounded(&[
            "--json",
            "check",
            "--image",
            tree.to_str().unwrap(),
            "--save-baseline",
            baseline.to_str().unwrap(),
        ]);
        assert!(matches!(code, 0 | 1), "run {run}: exit {code}: {stdout}{stderr}");
        assert!(!stdout.contains("root_only_secret"), "run {run} named a root-only file: {stdout}");
        let saved = std::fs::read_to_string(&baseline).unwrap_or_default();
        assert!(!saved.contains("root_only_secret"), "run {run} hashed a root-only file: {saved}");
    }
}
