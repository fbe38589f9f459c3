//! The command's tree under hostile conditions (issue #31): counts that
//! never call uncounted calls counted, whatever the fd limit.

use super::common::*;
use std::path::Path;
use std::process::{Command, Output};

/// Who runs vdsoctl: `nobody` with no capability (as root, through
/// setpriv), and root itself when the tests run as root.
fn identities() -> Vec<&'static str> {
    if is_root() {
        vec!["nobody", "root"]
    } else {
        vec!["caller"]
    }
}

/// vdsoctl ARGS as `who`, under `prlimit --nofile=1024:1024` (soft and hard:
/// a common CI container setting, which vdsoctl cannot lift).
fn vdsoctl_limited(who: &str, args: &[&str]) -> Output {
    let mut c = Command::new("prlimit");
    c.arg("--nofile=1024:1024");
    if who == "nobody" {
        c.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]);
    }
    c.arg(vdsoctl_path()).env("NO_COLOR", "1").args(args).output().expect("run prlimit")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// 1,500 and 10,000 processes, one after another and 1,500 alive at once,
/// five raw CLOCK_MONOTONIC calls each: every call counted, in one row per
/// process, nothing lost, under a hard limit of 1,024 fds.
#[test]
fn the_seccomp_engine_is_exact_for_thousands_of_processes_under_nofile_1024() {
    // 10,000 forks: alone, not beside the tests that trace the whole host.
    let _alone = system_wide_lock();
    let forker = build_c("forker", false, &[]);
    for who in identities() {
        for (n, hold) in [("1500", "0"), ("1500", "1"), ("10000", "0")] {
            let out =
                vdsoctl_limited(who, &["--json", "trace", "--engine", "seccomp", "--", path(&forker), n, "5", hold]);
            let what = format!("{who}: forker {n} 5 {hold}");
            assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            let r = json_of(&out);
            let n: u64 = n.parse().unwrap();
            let rows = r["counts"].as_array().unwrap();
            assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), n * 5, "{what}");
            assert_eq!(rows.len() as u64, n, "{what}: one row per process");
            assert!(rows.iter().all(|x| x["count"] == 5), "{what}");
            assert_eq!(r["lost"], 0, "{what}");
            assert!(
                r["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|f| !f["kind"].as_str().unwrap().starts_with("not-observed")),
                "{what}"
            );
        }
    }
}

/// 600 children reading their CPU clock, then one making 100 raw
/// CLOCK_MONOTONIC calls: the bypass is seen and FAILs under the same
/// limit, as it does with ten children.
#[test]
fn check_of_a_bypass_after_600_processes_fails_under_nofile_1024() {
    let mixed = build_c("mixed", false, &[]);
    for who in identities() {
        let out = vdsoctl_limited(who, &["--json", "check", "--", path(&mixed), "600"]);
        let r = json_of(&out);
        assert_eq!(out.status.code(), Some(1), "{who}: {r:#}");
        assert_eq!(r["status"], "fail", "{who}: {r:#}");
        let trace =
            r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_trace").expect("command_trace");
        let kind = (trace["kind"].as_str(), trace["status"].as_str());
        assert_eq!(kind, (Some("raw-clock-syscall"), Some("fail")), "{who}: {r:#}");
        let calls = trace["calls"].as_array().unwrap_or_else(|| panic!("{who}: {trace:#}"));
        let mono = |c: &&serde_json::Value| c["function"] == "clock_gettime" && c["clock"] == "CLOCK_MONOTONIC";
        assert!(calls.iter().filter(mono).any(|c| c["count"] == 100), "{who}: {trace:#}");
        assert!(r.get("not_observed_in_full").is_none(), "{who}: nothing lost: {r:#}");
    }
}

/// The engines that may run here, as `--engine` names them: seccomp always
/// (as nobody when the tests run as root); bpf, fentry and perf as root
/// where they open (a refused one is left out, said on stderr).
fn engines() -> Vec<(&'static str, &'static str)> {
    let mut all = vec![("seccomp", if is_root() { "nobody" } else { "caller" })];
    if is_root() {
        let clock_loop = build_c("clock_loop", false, &[]);
        for engine in ["bpf", "fentry", "perf"] {
            let out = vdsoctl()
                .args(["trace", "--engine", engine, "--", path(&clock_loop), "raw", "1", "1"])
                .output()
                .expect("run");
            if out.status.success() {
                all.push((engine, "root"));
            } else {
                eprintln!("SKIP: --engine {engine}: {}", String::from_utf8_lossy(&out.stderr).trim());
            }
        }
    }
    all
}

/// `vdsoctl ARGS` as `who` ("nobody": dropped from root; else as is).
fn vdsoctl_as(who: &str) -> Command {
    if who == "nobody" {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]);
        c.arg(vdsoctl_path());
        c.env("NO_COLOR", "1");
        c
    } else {
        let mut c = Command::new(vdsoctl_path());
        c.env("NO_COLOR", "1");
        c
    }
}

/// The same commands through every engine: the same processes counted
/// (perf: in the command's row), the same counts — a double-forked setsid daemon calling after the
/// command exited, a shell's background job, 50 processes alive at once.
#[test]
fn every_engine_counts_the_same_tree() {
    let daemon2 = build_c("daemon2", false, &[]);
    let forker = build_c("forker", false, &[]);
    let clock_loop = build_c("clock_loop", false, &[]);
    let job = format!("{} raw 1 77 & exit 0", path(&clock_loop));
    let commands: Vec<(Vec<&str>, u64, usize)> = vec![
        (vec![path(&daemon2), "100"], 100, 1),
        (vec!["sh", "-c", &job], 77, 1),
        (vec![path(&forker), "50", "3", "1"], 150, 50),
    ];
    let engines = engines();
    for (argv, calls, processes) in &commands {
        for (engine, who) in &engines {
            let out =
                vdsoctl_as(who).args(["--json", "trace", "--engine", engine, "--"]).args(argv).output().expect("run");
            let what = format!("--engine {engine} ({who}): {argv:?}");
            assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            let r = json_of(&out);
            assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), *calls, "{what}: {r:#}");
            let pids: std::collections::BTreeSet<i64> =
                r["counts"].as_array().unwrap().iter().map(|x| x["pid"].as_i64().unwrap()).collect();
            // perf's inherited counters fold a tree into the command's row.
            let expected = if *engine == "perf" { 1 } else { *processes };
            assert_eq!(pids.len(), expected, "{what}: {r:#}");
            assert_eq!(r["lost"], 0, "{what}");
        }
    }
}

/// `check -- daemon2`: FAIL, exit 1, as root (BPF) and as nobody (seccomp).
#[test]
fn check_of_a_double_forked_daemon_fails_whatever_the_engine() {
    let daemon2 = build_c("daemon2", false, &[]);
    for who in identities() {
        let who = if who == "caller" { "root" } else { who };
        let out = vdsoctl_as(who).args(["--json", "check", "--", path(&daemon2)]).output().expect("run");
        let r = json_of(&out);
        assert_eq!(out.status.code(), Some(1), "{who}: {r:#}");
        let trace = r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_trace").expect("row");
        let kind = (trace["kind"].as_str(), trace["status"].as_str());
        assert_eq!(kind, (Some("raw-clock-syscall"), Some("fail")), "{who}: {r:#}");
        let calls = trace["calls"].as_array().unwrap_or_else(|| panic!("{who}: {trace:#}"));
        assert!(calls.iter().any(|c| c["clock"] == "CLOCK_MONOTONIC" && c["count"] == 100), "{who}: {r:#}");
    }
}

/// Wait for `child` at most `secs` (a hang detector: the workloads run far
/// longer than this when vdsoctl fails to end them); its output.
fn finish_within(mut child: std::process::Child, secs: u64, what: &str) -> Output {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().expect("try_wait").is_none() {
        if std::time::Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!("{what}: vdsoctl still ran after {secs} s: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("wait")
}

/// Live (not zombie) processes whose command line starts with `marker`.
fn running(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).replace('\0', " ").starts_with(marker) {
            found.push(pid);
        }
    }
    found
}

/// Poll until `n` processes match `marker` (the tree is up), 20 s at most.
fn wait_running(marker: &str, n: usize) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while running(marker).len() < n {
        assert!(std::time::Instant::now() < until, "{marker}: {} of {n} processes started", running(marker).len());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Nothing matching `marker` runs a moment after vdsoctl ended (the
/// guardian's SIGKILLs take effect asynchronously: 5 s at most).
fn assert_nothing_left(marker: &str, what: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !running(marker).is_empty() {
        assert!(std::time::Instant::now() < until, "{what}: left running: {:?}", running(marker));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn spawn_piped(mut c: Command) -> std::process::Child {
    c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("spawn vdsoctl")
}

/// `--timeout` is a deadline for the whole tree: a command that exits at
/// once leaving a 30 s job ends at the deadline, the job killed.
#[test]
fn timeout_is_a_deadline_for_the_whole_tree() {
    for who in identities() {
        let who = if who == "caller" { "root" } else { who };
        let mut c = vdsoctl_as(who);
        c.args(["check", "--timeout", "2s", "--", "sh", "-c", "sleep 29.731 & exit 0"]);
        let out = finish_within(spawn_piped(c), 25, who);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{who}: {stderr}");
        assert!(stderr.contains("ran past --timeout 2.00 s: killed"), "{who}: {stderr}");
        // The hint says the exit status it is given: the command exited 0,
        // what it left was killed, so 1 (the FAIL), not the command's 0.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(
                "FAIL command: what the command left running hung or is slow (it was killed); vdsoctl exits 1"
            ),
            "{who}: {stdout}"
        );
        assert_nothing_left("sleep 29.731", who);
    }
}

/// A command that SIGSTOPs its parent (the guardian): continued, counted
/// exactly, its status handed back.
#[test]
fn a_stopped_guardian_is_continued() {
    let killparent = build_c("killparent", false, &[]);
    for who in identities() {
        let who = if who == "caller" { "root" } else { who };
        let mut c = vdsoctl_as(who);
        c.args(["--json", "trace", "--", path(&killparent), "19", "10"]);
        let out = finish_within(spawn_piped(c), 20, who);
        assert!(out.status.success(), "{who}: {}", String::from_utf8_lossy(&out.stderr));
        let r = json_of(&out);
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 10, "{who}: {r:#}");
        assert_eq!(r["command"]["exit_status"]["code"], 0, "{who}: {r:#}");
        assert_nothing_left(path(&killparent), who);
    }
}

/// A command that SIGKILLs its parent (the guardian): the rest of the tree
/// is ended by vdsoctl (its subreaper), no clock call of it ever fails.
#[test]
fn a_killed_guardian_ends_the_tree() {
    let killparent = build_c("killparent", false, &[]);
    for who in identities() {
        let who = if who == "caller" { "root" } else { who };
        let mut c = vdsoctl_as(who);
        c.args(["trace", "--", path(&killparent), "9", "400"]);
        let out = finish_within(spawn_piped(c), 15, who);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("not implemented"), "{who}: {stderr}");
        assert_nothing_left(path(&killparent), who);
    }
}

/// SIGHUP to vdsoctl's process group, SIGINT and SIGTERM (twice: the
/// first goes to the command, which ignores it) end vdsoctl with nothing
/// of a tree that ignores them left running and no call failing ENOSYS.
#[test]
fn hup_int_and_term_leave_nothing_of_the_tree() {
    use std::os::unix::process::CommandExt;
    let killparent = build_c("killparent", false, &[]);
    let kp = path(&killparent);
    let script = format!("trap '' HUP INT TERM; {kp} 0 400 & {kp} 0 400; wait");
    for who in identities() {
        let who = if who == "caller" { "root" } else { who };
        for sig in
            [nix::sys::signal::Signal::SIGHUP, nix::sys::signal::Signal::SIGINT, nix::sys::signal::Signal::SIGTERM]
        {
            let what = format!("{who}: {sig}");
            let mut c = vdsoctl_as(who);
            c.args(["trace", "--", "sh", "-c", &script]).process_group(0);
            let child = spawn_piped(c);
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            wait_running(kp, 4);
            if sig == nix::sys::signal::Signal::SIGHUP {
                nix::sys::signal::killpg(pid, sig).expect("killpg");
            } else {
                nix::sys::signal::kill(pid, sig).expect("kill");
                std::thread::sleep(std::time::Duration::from_millis(500));
                let _ = nix::sys::signal::kill(pid, sig);
            }
            let out = finish_within(child, 15, &what);
            assert!(!String::from_utf8_lossy(&out.stderr).contains("not implemented"), "{what}");
            assert_nothing_left(kp, &what);
        }
    }
}

/// vdsoctl SIGKILLed while the tree holds 8,000 zombies: the guardian
/// kills and reaps it all (one pass per generation, not one per zombie).
#[test]
fn a_killed_vdsoctl_leaves_nothing_of_8000_zombies() {
    // 8,000 processes at once: alone, as above.
    let _alone = system_wide_lock();
    let zombies = build_c("zombies", false, &[]);
    let who = if is_root() { "nobody" } else { "caller" };
    let mut c = vdsoctl_as(who);
    c.args(["trace", "--", path(&zombies), "8000"]);
    let child = spawn_piped(c);
    // SIGKILLed however the test ends: the guardian then cleans up.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = KillOnDrop(child);
    wait_running(path(&zombies), 1);
    let parent = running(path(&zombies))[0];
    let dead_children = || {
        std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|s| {
                let rest: Vec<&str> = s.rsplit(')').next().unwrap_or("").split_whitespace().collect();
                rest.first() == Some(&"Z") && rest.get(1) == Some(&parent.to_string().as_str())
            })
            .count()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while dead_children() < 8000 {
        assert!(std::time::Instant::now() < until, "{} zombies of 8000", dead_children());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let killed = std::time::Instant::now();
    child.0.kill().expect("SIGKILL vdsoctl");
    let _ = child.0.wait();
    assert_nothing_left(path(&zombies), "the zombies' parent");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while dead_children() > 0 {
        assert!(std::time::Instant::now() < until, "{} zombies left", dead_children());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    eprintln!("8,000 zombies gone {:?} after vdsoctl's SIGKILL", killed.elapsed());
}

/// `-p` of a live process whose main thread exited (pthread_exit in main):
/// any live thread is the process, for maps, auxv, check and trace.
#[test]
fn a_process_whose_leader_exited_is_read_through_a_live_thread() {
    use std::io::BufRead;
    let zlead = build_c("zlead", false, &[]);
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = KillOnDrop(Command::new(&zlead).stdout(std::process::Stdio::piped()).spawn().expect("spawn zlead"));
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap()).read_line(&mut line).expect("ready");
    assert_eq!(line.trim(), "ready");
    let pid = child.0.id().to_string();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let state = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    while !state().rsplit(')').next().unwrap_or("").trim_start().starts_with('Z') {
        assert!(std::time::Instant::now() < until, "the leader never exited: {}", state());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, stdout, stderr) = run(&["maps", "-p", &pid]);
    assert_eq!(code, 0, "maps: {stderr}");
    assert!(stdout.contains("[vdso]"), "{stdout}");
    let (code, _, stderr) = run(&["auxv", "-p", &pid]);
    assert_eq!(code, 0, "auxv: {stderr}");
    let (code, _, stderr) = run(&["check", "-p", &pid]);
    assert_ne!(code, 3, "check: {stderr}");
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let r = run_json(&["trace", "-p", &pid, "-d", "1s"]);
    let rows = rows_where(&r, "pid", pid.parse().unwrap());
    assert!(!rows.is_empty(), "the worker's calls, under the process's pid: {r:#}");
    assert!(rows.iter().all(|x| x["clock"] == "CLOCK_MONOTONIC"), "{r:#}");
}

/// A command whose own filter sends clock_gettime(CLOCK_BOOTTIME) to
/// SECCOMP_RET_TRACE sees ENOSYS for it without vdsoctl, and the same under
/// the seccomp engine (its child, inheriting the filter, too); every call
/// still counted.
#[test]
fn a_commands_own_trace_filter_keeps_its_meaning() {
    let bin = build_c("trace_filter", false, &[]);
    let alone = Command::new(&bin).arg("25").output().expect("run trace_filter");
    let expected = "enosys 25 of 25, monotonic ok 25 of 25\n".repeat(2);
    assert_eq!(String::from_utf8_lossy(&alone.stdout), expected, "without vdsoctl");
    let who = if is_root() { "nobody" } else { "caller" };
    let out =
        vdsoctl_as(who).args(["--json", "trace", "--engine", "seccomp", "--", path(&bin), "25"]).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: String = stderr.lines().filter(|l| l.starts_with("enosys")).map(|l| format!("{l}\n")).collect();
    assert_eq!(said, expected, "under vdsoctl: {stderr}");
    let r = json_of(&out);
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_BOOTTIME")), 50, "{r:#}");
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 50, "{r:#}");
}
