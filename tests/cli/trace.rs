//! `trace` integration tests: exact counts from fixtures/clock_loop.c
//! workloads, through `-- CMD` and `-p`, 64-bit and 32-bit, the vsyscall
//! page, threads, `--fail-over`, and the exit-3 error paths.

use super::common::{build_c, have_m32, is_root, run, skip, vdsoctl_path, Workload};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Root (for tracefs and raw samples) and a mounted-or-mountable tracefs.
fn missing_facility() -> Option<&'static str> {
    if !is_root() {
        return Some("trace tests need root (tracefs is root-only here, raw samples need CAP_PERFMON)");
    }
    if vdsoctl::measure::tracefs::Tracefs::find_or_mount().is_err() {
        return Some("tracefs is not available");
    }
    None
}

/// `vdsoctl --json trace -- clock_loop ARGS`, its JSON.
fn trace_cmd(m32: bool, args: &[&str]) -> Value {
    let bin = build_c("clock_loop", m32, &[]);
    let mut all = vec!["--json", "trace", "--", bin.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "trace failed: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"))
}

/// The count for (syscall, clock) summed over rows; 0 when absent.
fn count(report: &Value, syscall: &str, clock: Option<&str>) -> u64 {
    report["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .filter(|r| r["syscall"] == syscall && r["clock"].as_str() == clock)
        .map(|r| r["count"].as_u64().expect("count"))
        .sum()
}

fn vsyscall_count(report: &Value, function: &str) -> u64 {
    report["vsyscall_emulations"]
        .as_array()
        .expect("vsyscall_emulations")
        .iter()
        .filter(|r| r["function"] == function)
        .map(|r| r["count"].as_u64().expect("count"))
        .sum()
}

/// Start `vdsoctl ARGS` (a trace) and return once it says on stderr that its
/// counters are armed — lines the traced command itself writes there come
/// first with `--json -- CMD` and are skipped. Returns the child, that line
/// and the stderr reader — keep it alive: closing the pipe would make the
/// next write to it fail in vdsoctl or the traced command.
fn start_armed(args: &[&str]) -> (std::process::Child, String, BufReader<std::process::ChildStderr>) {
    let mut trace = Command::new(vdsoctl_path())
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn vdsoctl");
    let mut stderr = BufReader::new(trace.stderr.take().expect("stderr"));
    let mut line = String::new();
    while !line.contains("tracing") {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("read stderr") > 0, "trace ended before arming");
    }
    (trace, line, stderr)
}

#[test]
fn raw_clock_gettime_64bit_is_counted_exactly_per_clock() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let r = trace_cmd(false, &["raw", "11", "10000"]);
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 10_000, "{r:#}");
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 0);
    assert_eq!(r["exit_status"]["code"], 0);
    assert!(r["findings"].to_string().contains("CLOCK_TAI"), "{r:#}");
    assert!(r["target"]["command"]["pid"].as_i64().is_some());
    assert!(r["duration_ns"].as_u64().is_some());
}

#[test]
fn four_threads_are_followed() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let r = trace_cmd(false, &["raw", "4", "5000", "4"]);
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC_RAW")), 20_000, "{r:#}");
}

#[test]
fn libc_calls_of_a_vdso_clock_are_not_syscalls() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let r = trace_cmd(false, &["libc", "1", "100000"]);
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 0, "{r:#}");
}

#[test]
fn raw_clock_gettime_32bit_is_counted_exactly_per_clock() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let r = trace_cmd(true, &["raw", "11", "10000"]);
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 10_000, "{r:#}");
    assert_eq!(count(&r, "clock_gettime", Some("unknown")), 0, "records lost: {r:#}");
    let r = trace_cmd(true, &["raw64", "11", "10000"]);
    assert_eq!(count(&r, "clock_gettime64", Some("CLOCK_TAI")), 10_000, "{r:#}");
}

#[test]
fn vsyscall_page_calls_are_emulations() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    if !cfg!(target_arch = "x86_64") || !std::fs::read_to_string("/proc/self/maps").unwrap().contains("[vsyscall]") {
        return skip("no [vsyscall] page here");
    }
    let r = trace_cmd(false, &["vsyscall", "0", "1000"]);
    assert_eq!(vsyscall_count(&r, "time"), 1000, "{r:#}");
    assert_eq!(count(&r, "time", None), 0, "an emulation is not a syscall: {r:#}");
}

#[test]
fn pid_mode_counts_calls_made_after_arming() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let mut cmd = Command::new(bin);
    cmd.args(["raw", "11", "10000", "4", "wait"]);
    let mut w = Workload::start(cmd);
    // Let the workload go only once trace has armed its counters.
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "-d", "30", "-p", &w.pid().to_string()]);
    w.go();
    assert_eq!(w.next_line(), "done");
    // End early with Ctrl-C: the summary still comes.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(trace.id() as i32), nix::sys::signal::Signal::SIGINT)
        .expect("signal trace");
    let out = trace.wait_with_output().expect("trace output");
    assert_eq!(out.status.code(), Some(0));
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 40_000, "{r:#}");
    assert_eq!(r["interrupted"], true);
    assert!(r["duration_ns"].as_u64().unwrap() < 30_000_000_000);
}

#[test]
fn fail_over_zero_trips_on_a_bypassed_clock_only() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let bin = bin.to_str().expect("utf-8 path");
    let (code, _, stderr) = run(&["trace", "--fail-over", "0", "--", bin, "raw", "4", "1000"]);
    assert_eq!(code, 1, "{stderr}");
    let (code, stdout, stderr) = run(&["trace", "--fail-over", "0", "--", bin, "libc", "1", "100000"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // CPU-time clocks always enter the kernel: expected, not a failure.
    let (code, _, stderr) = run(&["trace", "--fail-over", "0", "--", bin, "raw", "3", "1000"]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn command_exit_status_is_reported_not_propagated() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let (code, stdout, stderr) = run(&["--json", "trace", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(r["exit_status"]["code"], 7);
}

#[test]
fn missing_targets_exit_3() {
    let (code, _, stderr) = run(&["trace", "-p", "2147483646"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no process with pid 2147483646"), "{stderr}");
    let (code, _, stderr) = run(&["trace", "--", "/nonexistent/command"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.starts_with("vdsoctl: cannot start /nonexistent/command"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);
}

/// Attaching to a task that is already in a tight syscall loop: filters must
/// be in place before a counter counts, or every clock id gets stray counts
/// (a regression seen while attaching ~15 counters to a busy thread).
#[test]
fn attaching_to_a_busy_process_counts_only_its_clock() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let mut cmd = Command::new(bin);
    cmd.args(["raw", "4", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd); // prints ready, then loops at once
    let (code, stdout, stderr) = run(&["--json", "trace", "-p", &w.pid().to_string(), "-d", "0.3"]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).unwrap();
    let rows = r["counts"].as_array().unwrap();
    assert!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC_RAW")) > 1000, "{r:#}");
    assert_eq!(rows.len(), 1, "only CLOCK_MONOTONIC_RAW rows: {r:#}");
}

/// `vdsoctl --json trace ARGS..`, its JSON (exit 0 asserted).
fn trace_json(args: &[&str]) -> Value {
    let mut all = vec!["--json", "trace"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "trace failed: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"))
}

/// A 64-bit shell that runs a 32-bit program: the compat calls of the child
/// are counted (the per-syscall tracepoints never see them), credited to the
/// traced command, with the i386 ABI.
#[test]
fn thirty_two_bit_child_of_a_64bit_shell_is_counted() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let bin32 = build_c("clock_loop", true, &[]);
    let bin64 = build_c("clock_loop", false, &[]);
    let script = format!("{} raw 4 1000 >/dev/null; {} raw 11 300 >/dev/null; true", bin32.display(), bin64.display());
    let r = trace_json(&["--", "sh", "-c", &script]);
    let rows = r["counts"].as_array().unwrap();
    let raw = rows.iter().find(|x| x["clock"] == "CLOCK_MONOTONIC_RAW").unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!((raw["count"].as_u64(), raw["abi"].as_str()), (Some(1000), Some("i386")), "{r:#}");
    let tai = rows.iter().find(|x| x["clock"] == "CLOCK_TAI").unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!((tai["count"].as_u64(), tai["abi"].as_str()), (Some(300), Some("x86_64")), "{r:#}");
    assert_eq!(rows.len(), 2, "{r:#}");
}

/// x86_64 rt_sigaction (13) and getrandom (318) are i386 time and getcpu:
/// every sampled record is decoded by its own task's ABI, so none of them
/// is reported as a clock call — in a traced tree or system-wide.
#[test]
fn colliding_64bit_syscalls_are_not_clock_calls() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    if crate_is_not_x86_64() {
        return skip("the collision is x86_64's");
    }
    let bin = build_c("clock_loop", false, &[]);
    let r = trace_cmd(false, &["collide", "0", "5000"]);
    assert_eq!(r["counts"].as_array().unwrap().len(), 0, "{r:#}");
    let script = format!("{} collide 0 5000 >/dev/null", bin.display());
    let r = trace_json(&["--", "sh", "-c", &script]);
    assert_eq!(r["counts"].as_array().unwrap().len(), 0, "{r:#}");
}

fn crate_is_not_x86_64() -> bool {
    !cfg!(target_arch = "x86_64")
}

/// `-a`: short-lived 32-bit processes are each found, counted exactly,
/// decoded as i386 and named (PERF_RECORD_COMM), even after they exited.
#[test]
fn system_wide_finds_short_lived_32bit_processes() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let _lock = super::common::system_wide_lock();
    // A name of its own: other tests run 32-bit clock_loops at the same time.
    let bin32 = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sysw32probe");
    std::fs::copy(build_c("clock_loop", true, &[]), &bin32).unwrap();
    let script = format!("sleep 0.4; for i in 1 2 3; do {} raw 4 50 >/dev/null; done", bin32.display());
    let mut runner = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let r = trace_json(&["-a", "-d", "1.5"]);
    runner.wait().unwrap();
    let name = bin32.file_name().unwrap().to_str().unwrap();
    let comm: String = name.chars().take(15).collect();
    let ours: Vec<&Value> = r["counts"].as_array().unwrap().iter().filter(|x| x["comm"] == comm.as_str()).collect();
    assert_eq!(ours.len(), 3, "three processes: {r:#}");
    for row in ours {
        assert_eq!(row["clock"], "CLOCK_MONOTONIC_RAW");
        assert_eq!(row["abi"], "i386");
        assert_eq!(row["count"], 50, "{row}");
    }
}

/// A PID given twice, or a thread id, is traced once, as its process.
#[test]
fn duplicate_pids_and_thread_ids_count_once() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let mut cmd = Command::new(bin);
    cmd.args(["raw", "11", "1000", "2", "wait"]).stderr(Stdio::null());
    let mut w = Workload::start(cmd);
    let pid = w.pid();
    let tid: i32 = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .find(|t| *t != pid)
        .expect("a second thread");
    let list = format!("{pid},{pid},{tid}");
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "-p", &list, "-d", "2"]);
    w.go();
    assert_eq!(w.next_line(), "done");
    let out = trace.wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["target"]["pids"], serde_json::json!([pid]), "{r:#}");
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 2000, "{r:#}");
}

/// `--no-split`: one exact total per clock syscall, clock ids not known; it
/// cannot judge clock ids, so `--fail-over` with it is a usage error.
#[test]
fn no_split_counts_exact_totals() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let script = format!("{b} raw 4 700 >/dev/null; {b} raw 2 300 >/dev/null", b = bin.display());
    let r = trace_json(&["--no-split", "--", "sh", "-c", &script]);
    assert_eq!(count(&r, "clock_gettime", Some("any")), 1000, "{r:#}");
    assert_eq!(r["counts"].as_array().unwrap().len(), 1, "{r:#}");
    assert!(r["findings"][0]["message"].as_str().unwrap().contains("clock ids not split"), "{r:#}");
    let (code, _, stderr) = run(&["trace", "--no-split", "--fail-over", "0", "--", "true"]);
    assert_eq!(code, 2, "{stderr}");
}

/// The window of `-- CMD` is exec to exit: never shorter than the loop the
/// command timed itself, even for a command that is over in a millisecond.
#[test]
fn command_window_covers_the_whole_run() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    for _ in 0..5 {
        let out = super::common::vdsoctl()
            .args(["--json", "trace", "--", bin.to_str().unwrap(), "raw", "4", "300"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let loop_ns: u64 = stderr
            .lines()
            .find_map(|l| l.strip_prefix("loop_ns "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no loop_ns in {stderr}"));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        let duration = r["duration_ns"].as_u64().unwrap();
        assert!(duration >= loop_ns, "window {duration} ns shorter than the loop's own {loop_ns} ns");
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC_RAW")), 300);
    }
}

/// SIGINT to vdsoctl alone (the command does not get it): counting stops at
/// once, the summary covers the time until the signal, exit 0.
#[test]
fn sigint_stops_counting_at_once() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let (trace, line, _stderr) =
        start_armed(&["--json", "trace", "--", bin.to_str().unwrap(), "raw", "4", "1000000000"]);
    // Whatever happens below, nothing outlives the test: the loop would run
    // for minutes with tracepoints on, slowing every other test's syscalls.
    struct KillOnDrop(i32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0), nix::sys::signal::Signal::SIGKILL);
        }
    }
    let _trace_guard = KillOnDrop(trace.id() as i32);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let child_pid: i32 = line.split("(pid ").nth(1).and_then(|s| s.split(')').next()).unwrap().parse().unwrap();
    let _child_guard = KillOnDrop(child_pid);
    let sent = std::time::Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(trace.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = trace.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(0));
    assert!(took < std::time::Duration::from_millis(1500), "summary took {took:?}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["interrupted"], true);
    let secs = r["duration_ns"].as_u64().unwrap() as f64 / 1e9;
    assert!((0.3..1.0).contains(&secs), "window {secs} s");
    let n = count(&r, "clock_gettime", Some("CLOCK_MONOTONIC_RAW"));
    let rate = n as f64 / secs;
    let per_sec = r["counts"][0]["per_sec"].as_f64().unwrap();
    assert!((per_sec - rate).abs() / rate < 0.01, "{per_sec} vs {rate}");
}

/// `--interval`: a table per interval, then the summary over the whole run.
#[test]
fn interval_prints_a_table_each_interval() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let mut cmd = Command::new(bin);
    cmd.args(["raw", "4", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (code, stdout, stderr) = run(&["trace", "-p", &w.pid().to_string(), "-d", "0.7", "--interval", "0.3"]);
    assert_eq!(code, 0, "{stderr}");
    let tables = stdout.matches("CLOCK_MONOTONIC_RAW ").count();
    assert_eq!(tables, 3, "two interval tables and the summary: {stdout}");
    assert!(stdout.contains(", 0.70s"), "the summary covers the whole run: {stdout}");
}

/// `-p A,B`, each a 64-bit shell that later runs a 32-bit child: each
/// child's calls are credited to its own traced ancestor (PERF_RECORD_FORK),
/// with nothing reported lost.
#[test]
fn children_of_several_traced_processes_go_to_their_own_ancestor() {
    if let Some(why) = missing_facility() {
        return skip(why);
    }
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let bin32 = build_c("clock_loop", true, &[]);
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("go");
    let shell = |clock: &str, n: &str| {
        let script = format!(
            "echo ready; while [ ! -e {g} ]; do sleep 0.01; done; {b} raw {clock} {n} >/dev/null 2>&1; sleep 30",
            g = gate.display(),
            b = bin32.display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        Workload::start(cmd)
    };
    let (a, b) = (shell("4", "700"), shell("11", "300"));
    let list = format!("{},{}", a.pid(), b.pid());
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "-p", &list, "-d", "1.5"]);
    std::fs::write(&gate, b"").unwrap();
    let out = trace.wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<(i64, String, u64)> = r["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["pid"].as_i64().unwrap(), x["clock"].as_str().unwrap().to_string(), x["count"].as_u64().unwrap()))
        .collect();
    assert!(rows.contains(&(a.pid() as i64, "CLOCK_MONOTONIC_RAW".into(), 700)), "{r:#}");
    assert!(rows.contains(&(b.pid() as i64, "CLOCK_TAI".into(), 300)), "{r:#}");
    assert_eq!(rows.len(), 2, "{r:#}");
    let lost = r["findings"].as_array().unwrap().iter().any(|f| f["message"].as_str().unwrap().contains("lost"));
    assert!(!lost, "{r:#}");
}
