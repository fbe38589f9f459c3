//! `trace` of one process or command: exact counts per clock and ABI,
//! threads, pid mode, exit status and deadlines.

use super::*;

#[test]
fn raw_clock_gettime_64bit_is_counted_exactly_per_clock() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    for engine in ENGINES {
        let r = trace_cmd_with(engine, false, &["raw", "11", "10000"]);
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 10_000, "{engine}: {r:#}");
        assert_eq!(r["counts"].as_array().unwrap().len(), 1, "{engine}: {r:#}");
        assert_eq!(r["command"]["exit_status"]["code"], 0);
        assert_eq!(r["lost"], 0);
        assert!(r["findings"].to_string().contains("CLOCK_TAI"), "{r:#}");
        let pid = r["command"]["pid"].as_i64().unwrap();
        assert_eq!(r["counts"][0]["pid"].as_i64(), Some(pid), "the command's own pid: {r:#}");
        assert_eq!(r["counts"][0]["comm"], "clock_loop");
    }
}

/// The fentry engine where the kernel allows trampolines: exact. Where it
/// does not (this project's locked-down host), `--engine fentry` is one
/// line, exit 4, naming the refusal and `--engine bpf`; `auto` counts with
/// the sys_enter program and says why fentry was not used.
#[test]
fn fentry_counts_exactly_or_says_why_not() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let bin = bin.to_str().unwrap();
    let (code, stdout, stderr) = run(&["--json", "trace", "--engine", "fentry", "--", bin, "raw", "1", "5000"]);
    if code == 0 {
        let r: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!((r["engine"].as_str(), count(&r, "clock_gettime", Some("CLOCK_MONOTONIC"))), (Some("fentry"), 5000));
        return;
    }
    assert_eq!((code, stdout.as_str(), stderr.lines().count()), (4, "", 1), "{stderr}");
    assert!(stderr.contains("fentry refused: ") && stderr.contains("use `--engine bpf`"), "{stderr}");
    let r = trace_cmd_with("bpf", false, &["raw", "1", "5000"]);
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 5000, "{r:#}");
    let (code, stdout, stderr) = run(&["--json", "trace", "--", bin, "raw", "1", "5000"]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(r["engine"], "bpf", "{r:#}");
    assert!(r["engine_note"].as_str().is_some_and(|n| n.starts_with("fentry refused: ")), "{r:#}");
}

/// Every clock syscall of both ABIs, one at a time, exactly, for each engine.
#[test]
fn every_clock_function_of_both_abis_is_counted_exactly() {
    if let Some(why) = missing_both_abis() {
        return skip(why);
    }
    let cases = EVERY_CLOCK_FUNCTION;
    for engine in ENGINES {
        for (m32, mode, clock, syscall, name) in cases {
            let r = trace_cmd_with(engine, *m32, &[mode, clock, "1234"]);
            let what = format!("{engine} m32={m32} {mode}");
            assert_eq!(count(&r, syscall, *name), 1234, "{what}: {r:#}");
            assert_eq!(r["counts"].as_array().unwrap().len(), 1, "{what}: {r:#}");
            assert_eq!(r["counts"][0]["abi"], if *m32 { "i386".to_string() } else { host_machine() }, "{what}: {r:#}");
        }
    }
}

#[test]
fn four_threads_are_followed() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    for engine in ENGINES {
        let r = trace_cmd_with(engine, false, &["raw", "4", "5000", "4"]);
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC_RAW")), 20_000, "{engine}: {r:#}");
    }
}

/// `--per-thread`: one row per thread, each exact.
#[test]
fn per_thread_rows_split_a_process() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let r = trace_json(&["--per-thread", "--", bin.to_str().unwrap(), "raw", "4", "3000", "3"]);
    let rows = r["counts"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{r:#}");
    let mut tids: Vec<i64> = rows.iter().map(|x| x["tid"].as_i64().expect("tid")).collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), 3, "{r:#}");
    assert!(rows.iter().all(|x| x["count"] == 3000), "{r:#}");
}

#[test]
fn libc_calls_of_a_vdso_clock_are_not_syscalls() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    for engine in ENGINES {
        let r = trace_cmd_with(engine, false, &["libc", "1", "100000"]);
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 0, "{engine}: {r:#}");
    }
}

#[test]
fn raw_clock_gettime_32bit_is_counted_exactly_per_clock() {
    if let Some(why) = missing_both_abis() {
        return skip(why);
    }
    for engine in ENGINES {
        let r = trace_cmd_with(engine, true, &["raw", "11", "10000"]);
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 10_000, "{engine}: {r:#}");
        assert_eq!(r["unattributed"].as_array().unwrap().len(), 0, "records lost: {r:#}");
        let r = trace_cmd_with(engine, true, &["raw64", "11", "10000"]);
        assert_eq!(count(&r, "clock_gettime64", Some("CLOCK_TAI")), 10_000, "{engine}: {r:#}");
    }
}

#[test]
fn vsyscall_page_calls_are_emulations() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if let Some(why) = missing_vsyscall_page() {
        return skip(why);
    }
    for engine in ENGINES {
        let r = trace_cmd_with(engine, false, &["vsyscall", "0", "1000"]);
        assert_eq!(vsyscall_count(&r, "time"), 1000, "{engine}: {r:#}");
        assert_eq!(count(&r, "time", None), 0, "an emulation is not a syscall: {r:#}");
        // Its cost: 1000 × one emulation as vdsoctl times it through its own page.
        let cost = &r["vsyscall_emulations"][0]["cost"];
        let per_call = cost["per_call_ns"].as_f64().unwrap_or_else(|| panic!("{engine}: no cost: {r:#}"));
        assert_eq!(cost["cpu_ns"].as_u64(), Some((1000.0 * per_call).round() as u64), "{engine}: {r:#}");
    }
}

#[test]
fn pid_mode_counts_calls_made_after_arming() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    for engine in ENGINES {
        let bin = build_c("clock_loop", false, &[]);
        let mut cmd = Command::new(bin);
        cmd.args(["raw", "11", "10000", "4", "wait"]);
        let mut w = Workload::start(cmd);
        // Let the workload go only once trace has armed its counters.
        let (trace, _, _stderr) =
            start_armed(&["--json", "trace", "--engine", engine, "-d", "1m", "-p", &w.pid().to_string()]);
        let _guard = KillOnDrop::new(trace.id() as i32);
        w.go();
        assert_eq!(w.next_line(), "done");
        // End early with Ctrl-C: the summary still comes.
        let (code, r) = interrupt(trace);
        assert_eq!(code, Some(0));
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 40_000, "{engine}: {r:#}");
        assert_eq!(r["interrupted"], true);
    }
}

/// A `-p` target that exits ends the trace (no spinning until the
/// deadline): trace says when, and its rate is over the time it lived.
#[test]
fn pid_mode_ends_when_the_target_exits() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    for engine in ENGINES {
        let bin = build_c("clock_loop", false, &[]);
        let mut cmd = Command::new(&bin);
        cmd.args(["raw", "11", "5000", "1", "wait"]);
        let mut w = Workload::start(cmd);
        let pid = w.pid();
        let (trace, _, _stderr) =
            start_armed(&["--json", "trace", "--engine", engine, "-d", "1h", "-p", &pid.to_string()]);
        let _guard = KillOnDrop::new(trace.id() as i32);
        w.go();
        assert_eq!(w.next_line(), "done");
        w.child.kill().unwrap();
        w.child.wait().unwrap();
        // Returns although the deadline is an hour away.
        let out = trace.wait_with_output().expect("trace output");
        assert_eq!(out.status.code(), Some(0));
        let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 5000, "{engine}: {r:#}");
        assert_eq!(r["exited"][0]["pid"].as_i64(), Some(i64::from(pid)), "{r:#}");
        let lived = r["exited"][0]["after_ns"].as_u64().unwrap() as f64 / 1e9;
        let per_sec = r["counts"][0]["per_sec"].as_f64().unwrap();
        assert!((per_sec * lived - 5000.0).abs() < 1.0, "rate over its lifetime: {per_sec} × {lived}");
    }
}

#[test]
fn fail_over_zero_trips_on_a_bypassed_clock_only() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let bin = bin.to_str().expect("utf-8 path");
    // A FAIL line means exit 1; a bypass is FAIL only over --fail-over.
    let (code, stdout, stderr) = run(&["trace", "--fail-over", "0", "--", bin, "raw", "4", "1000"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("FAIL: CLOCK_MONOTONIC_RAW: ")), "{stdout}");
    let (code, stdout, stderr) = run(&["trace", "--", bin, "raw", "4", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("FAIL"), "no FAIL line with exit 0: {stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("WARN: CLOCK_MONOTONIC_RAW: ")), "{stdout}");
    let (code, stdout, stderr) = run(&["trace", "--fail-over", "1000000000000", "--", bin, "raw", "4", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("FAIL") && stdout.contains("within --fail-over 1000000000000"), "{stdout}");
    let (code, stdout, stderr) = run(&["trace", "--fail-over", "0", "--", bin, "libc", "1", "100000"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // CPU-time clocks always enter the kernel: expected, not a failure.
    let (code, _, stderr) = run(&["trace", "--fail-over", "0", "--", bin, "raw", "3", "1000"]);
    assert_eq!(code, 0, "{stderr}");
}

/// As strace and perf stat: the command's failure is vdsoctl's exit status
/// (128+N for signal N, named in the summary).
#[test]
fn command_exit_status_is_handed_back() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let (code, stdout, stderr) = run(&["--json", "trace", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code, 7, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(r["command"]["exit_status"]["code"], 7);
    let (code, stdout, stderr) = run(&["trace", "--", "sh", "-c", "kill -SEGV $$"]);
    assert_eq!(code, 139, "{stderr}");
    assert!(stdout.contains("killed by SIGSEGV (exit status 139)"), "{stdout}");
}

/// `-d` with `-- CMD`: counting stops at the deadline and the command is
/// left running, which the summary says.
#[test]
fn command_outliving_the_deadline_keeps_running() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    // The command's output goes elsewhere: it must not hold our pipes open.
    let detached = ["sh", "-c", "exec sleep 30 >/dev/null 2>&1"];
    let (code, stdout, stderr) = run(&[&["--json", "trace", "-d", "200ms", "--"][..], &detached[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("JSON");
    let pid = r["command"]["pid"].as_i64().unwrap() as i32;
    let _guard = KillOnDrop::new(pid);
    assert_eq!(r["command"]["exit_status"], Value::Null, "{r:#}");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "the command still runs");
    let (_, text, _) = run(&[&["trace", "-d", "100ms", "--"][..], &detached[..]].concat());
    assert!(text.contains("still runs"), "{text}");
    if let Some(pid) = text.split("(pid ").nth(1).and_then(|s| s.split(')').next()).and_then(|p| p.parse().ok()) {
        drop(KillOnDrop::new(pid));
    }
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
    let (code, _, stderr) = run(&["trace", "-d", "5parsecs", "-a"]);
    assert_eq!(code, 2, "{stderr}");
}

/// Attaching to a task that is already in a tight syscall loop: only its
/// clock is counted (the perf engine's filters are in place before its
/// counters count).
#[test]
fn attaching_to_a_busy_process_counts_only_its_clock() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    for engine in ENGINES {
        let bin = build_c("clock_loop", false, &[]);
        let mut cmd = Command::new(bin);
        cmd.args(["raw", "4", "2000000000"]).stderr(Stdio::null());
        let w = Workload::start(cmd); // prints ready, then loops at once
        let (code, stdout, stderr) =
            run(&["--json", "trace", "--engine", engine, "-p", &w.pid().to_string(), "-d", "300ms"]);
        assert_eq!(code, 0, "{stderr}");
        let r: Value = serde_json::from_str(&stdout).unwrap();
        let rows = r["counts"].as_array().unwrap();
        assert!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC_RAW")) > 0, "{r:#}");
        assert_eq!(rows.len(), 1, "only CLOCK_MONOTONIC_RAW rows: {r:#}");
    }
}
