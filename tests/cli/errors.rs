//! Error paths: each is one line on stderr with a hint and the exit code
//! from DESIGN.md, never a panic.

use super::common::{build_c, is_root, run, run_as_nobody, run_as_nobody_via, skip, vdsoctl_path};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A PID that is not in use right now.
fn unused_pid() -> i32 {
    let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    (300..max).rev().find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists()).unwrap()
}

fn assert_one_line_error(args: &[&str], code: i32, needle: &str) {
    let (got, stdout, stderr) = run(args);
    assert_eq!(got, code, "vdsoctl {args:?}: stderr {stderr}");
    assert!(stdout.is_empty(), "nothing on stdout for an error: {stdout}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(stderr.starts_with("vdsoctl: "), "{stderr}");
    assert!(stderr.contains(needle), "{stderr:?} should contain {needle:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn pid_that_does_not_exist() {
    let pid = unused_pid().to_string();
    for cmd in ["maps", "auxv"] {
        assert_one_line_error(&[cmd, "-p", &pid], 3, &format!("no process with pid {pid}"));
        assert_one_line_error(&["--json", cmd, "-p", &pid], 3, "ps -e");
    }
}

#[test]
fn kernel_thread_has_no_address_space() {
    // PID 2 is kthreadd on Linux.
    let comm = std::fs::read_to_string("/proc/2/comm").unwrap_or_default();
    if comm.trim() != "kthreadd" {
        return skip("pid 2 is not kthreadd in this PID namespace");
    }
    for cmd in ["maps", "auxv"] {
        assert_one_line_error(&[cmd, "-p", "2"], 3, "pid 2 (kthreadd) is a kernel thread");
    }
}

#[test]
fn zombie_has_no_memory_map() {
    // A child we never wait for stays a zombie until we do.
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        if stat.rsplit(')').next().unwrap().trim_start().starts_with('Z') {
            break;
        }
        assert!(Instant::now() < deadline, "child never became a zombie");
        std::thread::sleep(Duration::from_millis(5));
    }
    for cmd in ["maps", "auxv"] {
        assert_one_line_error(&[cmd, "-p", &pid.to_string()], 3, "is a zombie");
    }
    child.wait().unwrap();
}

#[test]
fn other_users_process_as_nobody() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    let mut target = Command::new("sleep").arg("30").stdout(Stdio::null()).spawn().unwrap();
    let pid = target.id().to_string();
    for cmd in ["maps", "auxv"] {
        let out = run_as_nobody(&[cmd, "-p", &pid]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("permission denied"), "{stderr}");
        // The hint names the owner, not a generic "owner or root".
        assert!(stderr.contains("it belongs to uid 0: run vdsoctl as that user or as root"), "{stderr}");
    }
    // As nobody, its own process is fine.
    let out = run_as_nobody(&["maps"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    target.kill().unwrap();
    target.wait().unwrap();
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, stderr) = run(&["--format", "prometheus", "maps"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("only for `bench`, `check` and `trace`"), "{stderr}");
    let (code, _, stderr) = run(&["--format", "junit", "trace", "--", "true"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--format junit is only for `check`"), "{stderr}");
    // serve, man and completions write one form: --json there is refused,
    // not silently ignored, and before any work (serve never listens).
    for args in [
        &["--json", "serve", "--listen", "127.0.0.1:1"][..],
        &["--json", "man"],
        &["--format", "junit", "completions", "bash"],
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("takes no --format or --json"), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
    }
    for args in [&["maps", "-p", "0"][..], &["maps", "-p", "abc"], &["auxv", "--bogus"], &["nosuchcommand"]] {
        let (code, _, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
    }
}

#[test]
fn broken_pipe_is_not_an_error() {
    let mut child =
        Command::new(vdsoctl_path()).args(["auxv"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take()); // reader goes away before vdsoctl writes
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty());
}

#[test]
fn help_and_generated_docs() {
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for cmd in ["dump", "maps", "auxv", "trace", "top", "bench", "check", "serve"] {
        assert!(stdout.contains(cmd), "--help lists {cmd}");
    }
    let (code, stdout, _) = run(&["completions", "bash"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("_vdsoctl()"), "bash completion function");
    let (code, stdout, _) = run(&["man"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with(".ie") || stdout.contains(".TH vdsoctl"), "{}", &stdout[..stdout.len().min(200)]);
}

/// Every change to the command surface shows up in review as a diff of
/// doc/help.txt. Regenerate with `VDSOCTL_REGEN_HELP=1 cargo test help_snapshot`.
#[test]
fn help_snapshot() {
    let mut text = String::new();
    for args in [
        &["--help"][..],
        &["dump", "--help"],
        &["maps", "--help"],
        &["auxv", "--help"],
        &["trace", "--help"],
        &["top", "--help"],
        &["bench", "--help"],
        &["check", "--help"],
        &["serve", "--help"],
    ] {
        let out = super::common::vdsoctl().args(args).env("COLUMNS", "100").output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        text += &format!("$ vdsoctl {}\n{}\n", args.join(" "), String::from_utf8_lossy(&out.stdout));
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/help.txt");
    if std::env::var_os("VDSOCTL_REGEN_HELP").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(want == text, "--help changed; review and run `VDSOCTL_REGEN_HELP=1 cargo test help_snapshot`:\n{text}");
}

#[test]
fn check_rejects_bad_thresholds_as_usage_errors() {
    for args in [
        &["check", "--max-ns", "0"][..],
        &["check", "--max-ns", "nan"],
        &["check", "--max-ns=-5"],
        &["check", "--max-ns", "inf"],
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stdout.is_empty());
    }
}

#[test]
fn check_trace_takes_a_duration_or_0() {
    for args in
        [&["check", "--trace=-1"][..], &["check", "--trace", "0parsecs"], &["check", "--trace", "1", "--", "true"]]
    {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty());
    }
}

#[test]
fn dump_of_a_fifo_without_writer_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let started = Instant::now();
    let (code, _, stderr) = run(&["dump", "--file", fifo.to_str().unwrap()]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("is a FIFO"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Without root, tracefs (mode 0700 here) and tracepoint counting are out of
/// reach: `trace -a` exits 4 saying so (a command would be counted by the
/// seccomp engine: tests/cli/seccomp.rs). `bench` still counts, exactly:
/// a seccomp filter in a child marks the calls that enter the kernel. Only
/// where seccomp(2) is refused too (fixtures/no_seccomp.c) is it
/// timing-based, and said so.
#[test]
fn facilities_missing_for_nobody() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    if vdsoctl::measure::kernel::tracefs::Tracefs::find_or_mount().is_err() {
        return skip("tracefs is not available");
    }
    let out = run_as_nobody(&["trace", "-a", "-d", "0.1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("root"), "{stderr}");
    let bench = ["--json", "bench", "--quick", "--functions", "clock_gettime", "--clocks", "MONOTONIC"];
    let out = run_as_nobody(&bench);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((doc["basis"].as_str(), doc["counted_by"].as_str()), (Some("counted"), Some("seccomp")), "{doc}");
    let per_call: Vec<(&str, f64)> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["syscalls_per_call"].as_f64().unwrap()))
        .collect();
    assert_eq!(per_call, vec![("libc", 0.0), ("vdso", 0.0), ("syscall", 1.0)], "{doc}");
    assert_eq!(doc["findings"], serde_json::json!([]), "{doc}");
    // seccomp(2) and perf_event_open refused as well: timing-based, said.
    let wrapper = build_c("no_seccomp", false, &[]);
    let mut argv = vec![vdsoctl_path().to_str().unwrap().to_string()];
    argv.extend(bench.iter().map(|a| a.to_string()));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_as_nobody_via(&wrapper, &argv);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["basis"], "timing", "{doc}");
    assert!(doc["counted_by"].is_null(), "{doc}");
    assert!(doc["results"][0]["syscalls_per_call"].is_null(), "unknown is null: {doc}");
    let said = doc["findings"][0]["message"].as_str().unwrap_or_default();
    assert!(said.contains("no seccomp count: seccomp(2) refused: operation not permitted (EPERM)"), "{doc}");
}

/// `check -p` of a process nobody may read is "could not inspect" (exit 3),
/// not a failed audit.
#[test]
fn check_of_an_unreadable_process_exits_3() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    let mut target = Command::new("sleep").arg("30").spawn().unwrap();
    let out = run_as_nobody(&["check", "-p", &target.id().to_string()]);
    target.kill().unwrap();
    target.wait().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("permission denied") && stderr.contains("CAP_SYS_PTRACE"), "{stderr}");
}

/// A closed stderr (the reader went away) is no reason to panic: the exit
/// code still says what happened.
#[test]
fn closed_stderr_keeps_the_exit_code() {
    let pid = unused_pid().to_string();
    let mut child = Command::new(vdsoctl_path())
        .args(["maps", "-p", &pid])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(3), "no panic (101), the error's own code");
}
