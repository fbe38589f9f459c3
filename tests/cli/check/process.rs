//! `check -- CMD` and `check -p PID`: commands, pid namespaces, runtimes and
//! emulators, trace evidence and observed raw loops.

use super::*;

/// In a PID namespace `check -- CMD` counts with the BPF engine (no
/// fallback note), and names the command's process by the namespace's pid.
#[test]
fn command_in_a_pid_namespace_is_counted_with_its_own_pids() {
    if !is_root() {
        return skip("unshare -p needs root");
    }
    let bin = build_c("clock_loop", false, &[]);
    let out = Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "sh", "-c"])
        .arg(format!("{} check -- sh -c 'exec {} raw 1 500'", vdsoctl_path().display(), bin.display()))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "a bypassed clock is a FAIL: {stdout}{stderr}");
    assert!(!stderr.contains("perf engine") && !stderr.contains("--engine"), "{stderr}");
    // vdsoctl is pid 2 there (sh is 1), so the command is a small pid of its own.
    let pid: i32 =
        stdout.split(": pid ").nth(1).and_then(|t| t.split(' ').next()).and_then(|p| p.parse().ok()).unwrap();
    assert!(pid > 2 && pid < 100, "{stdout}");
    assert!(stdout.contains(&format!("(pid {pid})")), "the heading names the same pid: {stdout}");
    assert!(stdout.contains("clock_gettime CLOCK_MONOTONIC ×500"), "{stdout}");
}

#[test]
fn process_runtime_go_static_and_cgo() {
    let (Some(plain), Some(cgo)) = (build_go("hello", false), build_go("cgo", true)) else {
        return skip("go not installed (apt-get install golang-go)");
    };
    let go = go_version();
    let w = Workload::start(Command::new(&plain));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    assert_eq!(kind_status(bin), ("binary-ok", "ok"), "{bin}");
    let b = &doc["binary"];
    assert_eq!((b["linkage"].as_str(), b["runtime"].as_str()), (Some("static"), Some("go")), "{b}");
    assert_eq!(b["runtime_version"].as_str(), Some(go.as_str()), "{b}");
    let w = Workload::start(Command::new(&cgo));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    assert_eq!(kind_status(bin), ("binary-ok", "ok"), "{bin}");
    let b = &doc["binary"];
    assert_eq!(
        (b["linkage"].as_str(), b["interpreter"].as_str()),
        (Some("dynamic"), Some("/lib64/ld-linux-x86-64.so.2"))
    );
    assert_eq!((b["runtime"].as_str(), b["runtime_version"].as_str()), (Some("go"), Some(go.as_str())), "{b}");
    // With cgo, as its Go finding has it.
    let go = bin["findings"].as_array().unwrap().iter().find(|f| f["cgo"].is_boolean());
    assert_eq!(go.map(|f| &f["cgo"]), Some(&serde_json::Value::Bool(true)), "{bin}");
}

#[test]
fn process_runtime_through_ld_so_and_valgrind() {
    let prog = build_c("wait_ready", false, &[]);
    let loader = ldd(&prog).into_iter().find(|p| p.to_string_lossy().contains("ld-linux")).expect("ld.so");
    let mut cmd = Command::new(&loader);
    cmd.arg(&prog);
    let w = Workload::start(cmd);
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    let real = std::fs::canonicalize(&loader).unwrap();
    let exe = &bin["exe"];
    assert_eq!(exe["program"].as_str(), prog.to_str(), "the program, not ld.so: {bin}");
    assert_eq!(exe["loader"].as_str(), real.to_str(), "{bin}");
    assert_eq!(kind_status(bin), ("binary-ok", "ok"), "not a static binary: {bin}");
    let b = &doc["binary"];
    assert_eq!((b["runtime"].as_str(), b["runtime_version"].as_str()), (Some("glibc"), Some(glibc_version().as_str())));

    if which("valgrind").is_err() {
        return skip("valgrind not installed (apt-get install valgrind)");
    }
    let mut cmd = Command::new("valgrind");
    cmd.arg("-q").arg(&prog);
    let w = Workload::start(cmd);
    let doc = check_process_failing(w.pid());
    let bin = check_named(&doc, "process_binary");
    assert_eq!(kind_status(bin), ("under-emulator", "fail"), "{bin}");
    // The program and the tool.
    let exe = &bin["exe"];
    assert_eq!((exe["program"].as_str(), exe["tool"].as_str()), (prog.to_str(), Some("valgrind (memcheck)")), "{bin}");
    let mapped = check_named(&doc, "process_vdso_mapped");
    assert_eq!(kind_status(mapped).0, "vdso-not-mapped", "{mapped}");
    // Its hint names the tool (process_binary's exe.tool, above): its words
    // are render/host.rs's an_emulator_is_said_on_the_failing_mapping_rows.
}

#[test]
fn process_runtime_of_an_unknown_emulator_names_it() {
    // No [vdso], another program mapped: the tool is named by its executable.
    let guest = build_c("wait_ready", false, &[]);
    let mut cmd = Command::new(build_c("fake_emulator", false, &[]));
    cmd.arg(&guest);
    let w = Workload::start(cmd);
    let doc = check_process_failing(w.pid());
    let bin = check_named(&doc, "process_binary");
    assert_eq!(kind_status(bin), ("under-emulator", "fail"), "{bin}");
    // The program and the tool.
    let exe = &bin["exe"];
    assert_eq!((exe["program"].as_str(), exe["tool"].as_str()), (guest.to_str(), Some("fake_emulator")), "{bin}");
}

#[test]
fn trace_evidence_clears_a_32bit_warning() {
    if !is_root() {
        return skip("check --trace needs root (tracefs)");
    }
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let w = Workload::start(Command::new(build_c("wait_ready", true, &[])));
    let (code, stdout, stderr) = run(&["--json", "check", "--strict", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    // --strict fails on a WARN row: none of the process's (its warning is
    // cleared); the host's own may, but not its getrandom row: beside a
    // process, vdsoctl's own glibc before 2.41 is only the runner's fact.
    let flagged: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "warn" || c["status"] == "fail")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(flagged.iter().all(|n| !n.starts_with("process_")), "{doc}");
    assert_eq!(code, if flagged.is_empty() { 0 } else { 1 }, "{flagged:?} {stderr}");
    assert!(!flagged.contains(&"getrandom"), "{doc}");
    if own_vdso_exports("__vdso_getrandom") && major_minor(&glibc_version()) < (2, 41) {
        let row = check_named(&doc, "getrandom");
        assert_eq!((row["kind"].as_str(), row["status"].as_str()), (Some("random-syscall-host-libc"), Some("info")));
    }
    let bin = check_named(&doc, "process_binary");
    assert_eq!(doc["binary"]["bits"], 32, "{doc}");
    assert_eq!(kind_status(bin), ("observed-clean", "ok"), "the 32-bit warning cleared: {bin}");
    // A process that does make clock syscalls keeps its verdict and fails the trace.
    let mut cmd = Command::new(build_c("clock_loop", true, &[]));
    cmd.args(["raw", "1", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (code, stdout, _) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(check_named(&doc, "process_binary")["status"], "warn");
    assert_eq!(kind_status(check_named(&doc, "process_trace")), ("raw-clock-syscall", "fail"));
}

/// A raw CLOCK_MONOTONIC loop of `per_sec` calls a second (clock_loop's paced mode).
fn raw_monotonic_loop(per_sec: u32) -> Workload {
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["paced", "1", &per_sec.to_string()]).stderr(Stdio::null());
    Workload::start(cmd)
}

#[test]
fn check_p_observes_by_default_and_fails_a_raw_loop() {
    if let Some(why) = crate::cli::common::missing_trace_facility() {
        return skip(why);
    }
    let _lock = crate::cli::common::system_wide_lock();
    let w = raw_monotonic_loop(2000);
    let pid = w.pid().to_string();
    let doc = check_process_failing(w.pid());
    let t = check_named(&doc, "process_trace");
    assert_eq!(kind_status(t), ("raw-clock-syscall", "fail"), "{t}");
    // The default window is 1 s (at least: the engine's interval ends it).
    assert!(t["window_ns"].as_u64().is_some_and(|w| w >= 1_000_000_000), "{t}");
    let call = &t["calls"][0];
    assert_eq!(
        (call["function"].as_str(), call["clock"].as_str(), call["vsyscall"].as_bool()),
        (Some("clock_gettime"), Some("CLOCK_MONOTONIC"), Some(false)),
        "{t}"
    );
    assert_eq!(call["pid"].as_i64(), Some(i64::from(w.pid())), "{t}");
    // 2,000/s asked; the bound is loose (5x) for a busy host.
    let rate = call["per_sec"].as_f64().unwrap();
    assert!((400.0..=10_000.0).contains(&rate), "{rate}/s: {t}");
    assert_eq!(t["rate"].as_f64(), Some(rate), "{t}");
    // The binary row keeps its verdict (what the code is expected to do),
    // and names the clock the observation contradicts it with and the row
    // that has it (needs typed data: the note has no field of its own).
    // (clock_loop's own verdict is its [vsyscall] call site.)
    let bin = check_named(&doc, "process_binary");
    assert_eq!(kind_status(bin), ("vsyscall-call-site", "fail"), "{bin}");
    let bin = bin["detail"].as_str().unwrap();
    assert!(bin.contains("(CLOCK_MONOTONIC)") && bin.contains("process_trace"), "{bin}");

    // --trace 0 turns the window off: the row says so, as INFO.
    let (_, stdout, stderr) = run(&["--json", "check", "-p", &pid, "--trace", "0"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let t = check_named(&doc, "process_trace");
    assert_eq!(kind_status(t), ("not-observed", "info"), "{t}");
    assert!(doc["not_observed"].as_str().is_some_and(|n| n.contains("--trace 0")), "{doc}");
    // No observation note on the binary row: neither cleared nor contradicted.
    let bin = check_named(&doc, "process_binary");
    assert_eq!(kind_status(bin), ("vsyscall-call-site", "fail"), "{bin}");
    assert!(!bin["detail"].as_str().unwrap().contains("process_trace"), "{bin}");

    // A loop of vDSO reads (the libc call of a clock the vDSO serves) stays OK.
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["libc", "1", "2000000000"]).stderr(Stdio::null());
    let v = Workload::start(cmd);
    let (_, stdout, _) = run(&["--json", "check", "-p", &v.pid().to_string(), "--trace", "500ms"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "process_trace");
    assert_eq!(kind_status(t), ("observed-clean", "ok"), "{t}");
    let window = t["window_ns"].as_u64().unwrap_or_else(|| panic!("{t}"));
    assert!((500_000_000..1_000_000_000).contains(&window), "the 500 ms window: {t}");
    assert_eq!(t["calls"].as_array().map(Vec::len), Some(0), "{t}");
}

#[test]
fn host_check_names_the_pid_that_bypasses_the_vdso() {
    if let Some(why) = crate::cli::common::missing_trace_facility() {
        return skip(why);
    }
    let _lock = crate::cli::common::system_wide_lock();
    let w = raw_monotonic_loop(20_000);
    let (code, stdout, stderr) = run(&["--json", "check"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["status"], "fail");
    let t = check_named(&doc, "host_trace");
    assert_eq!(kind_status(t), ("raw-clock-syscall", "fail"), "{t}");
    // Its calls, in the row's typed `calls` (the detail folds processes
    // by program: other tests' clock_loops may be one group with it).
    let ours = t["calls"].as_array().unwrap().iter().find(|c| {
        c["pid"].as_i64() == Some(i64::from(w.pid()))
            && c["function"] == "clock_gettime"
            && c["clock"] == "CLOCK_MONOTONIC"
    });
    let rate = ours.and_then(|c| c["per_sec"].as_f64()).unwrap_or_else(|| panic!("pid {} not in calls: {t}", w.pid()));
    assert!((4_000.0..=100_000.0).contains(&rate), "{rate}/s: {t}");
    assert!(
        t["groups"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["key"].as_str().is_some_and(|k| k.ends_with("clock_loop"))),
        "{t}"
    );
}

#[test]
fn command_passes_fails_and_hands_back_its_status() {
    if !is_root() {
        return skip("check -- CMD needs root (tracefs)");
    }
    let lp = build_c("clock_loop", false, &[]);
    let lp = lp.to_str().unwrap();
    // A libc loop of a vDSO clock: OK, exit 0.
    let doc = run_json(&["check", "--", lp, "libc", "1", "5000"]);
    assert_eq!(doc["status"], "ok", "{doc}");
    assert_eq!(doc["command"]["exit_status"]["code"], 0, "{doc}");
    assert_eq!(kind_status(check_named(&doc, "command_trace")), ("observed-clean", "ok"));
    // 5,000 raw clock_gettime(CLOCK_TAI): FAIL naming process, clock and count.
    let (code, stdout, stderr) = run(&["--json", "check", "--", lp, "raw", "11", "5000"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let pid = doc["command"]["pid"].as_i64().unwrap();
    let t = check_named(&doc, "command_trace");
    assert_eq!(kind_status(t), ("raw-clock-syscall", "fail"), "{t}");
    let call = &t["calls"][0];
    assert_eq!(
        (call["pid"].as_i64(), call["comm"].as_str(), call["function"].as_str(), call["clock"].as_str()),
        (Some(pid), Some("clock_loop"), Some("clock_gettime"), Some("CLOCK_TAI")),
        "{t}"
    );
    assert_eq!(call["count"].as_u64(), Some(5000), "{t}");
    // The hint names the command with shell quoting: pasted, the shell
    // hands `trace` the same words `check` got (here a `sh -c` script).
    let script = format!("{lp} raw 11 100 > /dev/null; exit 0");
    let (code, stdout, stderr) = run(&["--json", "check", "--", "sh", "-c", &script]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let hint = check_named(&doc, "command_trace")["hint"].as_str().unwrap().to_string();
    let pasted = hint.split('`').nth(1).and_then(|h| h.strip_prefix("vdsoctl trace --sites -- ")).expect(&hint);
    let words = Command::new("sh").args(["-c", &format!("printf '%s\\n' {pasted}")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&words.stdout), format!("sh\n-c\n{script}\n"), "{hint}");
    let next = &check_named(&doc, "command_trace")["next"];
    assert_eq!(*next, serde_json::json!(["vdsoctl", "trace", "--sites", "--", "sh", "-c", script]), "{hint}");
    let command = check_named(&doc, "command");
    assert_eq!(kind_status(command), ("command-ok", "ok"), "{command}");
    assert_eq!(doc["command"]["argv"], serde_json::json!(["sh", "-c", script]), "{doc}");
    // Calls into the vsyscall page fail too; the hint says what such a
    // caller is (no raw syscall() to look for), what to rebuild and the
    // audit that names its function.
    let (code, stdout, _) = run(&["--json", "check", "--", lp, "vsyscall", "0", "100"]);
    assert_eq!(code, 1);
    assert!(stdout.contains("(clock_loop) [vsyscall] time ×100"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "command_trace");
    assert_eq!(kind_status(t), ("vsyscall-call", "fail"), "{t}");
    // The audit that names its function (the hint's words, the program
    // to rebuild and no raw syscall() to look for, are render/hint.rs's
    // unit test's).
    let dir = Path::new(lp).parent().unwrap().display().to_string();
    assert_eq!(t["next"], serde_json::json!(["vdsoctl", "check", "--image", dir]), "{t}");
    // CPU-time clocks are expected syscalls: still OK.
    let (code, _, stderr) = run(&["check", "--", lp, "raw", "3", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    // The command's own failure is the exit status, and is named.
    let (code, stdout, _) = run(&["--json", "check", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code, 7);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(kind_status(check_named(&doc, "command")), ("command-failed", "fail"), "{doc}");
    assert_eq!(doc["command"]["exit_status"]["code"], 7, "{doc}");
    let (code, stdout, _) = run(&["check", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(code, 128 + 9, "{stdout}");
    assert!(stdout.contains("was killed by signal 9"), "{stdout}");
    // A command that does not exist: could not start it, exit 3.
    let (code, _, stderr) = run(&["check", "--", "/nonexistent/smoke"]);
    assert_eq!(code, 3, "{stderr}");
}

/// `check -- CMD` judges its bypasses as `check -p` does (`model::observe`)
/// and says one advice for both kinds: a tree with one process making raw
/// CLOCK_TAI syscalls and another calling the [vsyscall] page fails naming
/// each with its exact count, syscalls before [vsyscall] calls, and the hint
/// leads to the sites and then says what a [vsyscall] caller is.
#[test]
fn command_with_raw_and_vsyscall_calls_gives_both_advices_in_one_hint() {
    if !is_root() {
        return skip("check -- CMD needs root (tracefs)");
    }
    let lp = build_c("clock_loop", false, &[]);
    let lp = lp.to_str().unwrap();
    let script = format!("{lp} vsyscall 0 70 > /dev/null; {lp} raw 11 30 > /dev/null; exit 0");
    let (code, stdout, stderr) = run(&["--json", "check", "--", "sh", "-c", &script]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "command_trace");
    assert_eq!(kind_status(t), ("raw-clock-syscall", "fail"), "{t}");
    let detail = t["detail"].as_str().unwrap();
    let raw = detail.find("(clock_loop) clock_gettime CLOCK_TAI ×30").unwrap_or_else(|| panic!("{detail}"));
    let vsyscall = detail.find("(clock_loop) [vsyscall] time ×70").unwrap_or_else(|| panic!("{detail}"));
    assert!(raw < vsyscall, "syscalls first, whatever the counts: {detail}");
    // The sites first (both advices in one hint: render/hint.rs's unit test).
    assert_eq!(t["next"], serde_json::json!(["vdsoctl", "trace", "--sites", "--", "sh", "-c", script]), "{t}");
}
