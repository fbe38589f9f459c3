//! `check` of the host: the audit's verdicts and exit codes, 32-bit and static
//! targets, preload shims, budgets, and its Prometheus form through promtool.

use super::*;

#[test]
fn exit_code_matches_the_verdict_with_keys() {
    let _lock = crate::cli::common::system_wide_lock();
    let (code, stdout, stderr) = run(&["check"]);
    let verdict =
        stdout.lines().find_map(|l| l.strip_prefix("verdict: ")).unwrap_or_else(|| panic!("{stdout}{stderr}"));
    assert_eq!(code, if verdict.starts_with("FAIL") { 1 } else { 0 }, "{stdout}{stderr}");
    let out = crate::cli::common::vdsoctl().args(["--json", "check"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = doc["status"].as_str().unwrap().to_ascii_lowercase();
    assert!(["ok", "warn", "fail"].contains(&status.as_str()), "{doc}");
    assert_eq!(out.status.code(), Some(if status == "fail" { 1 } else { 0 }), "{doc}");
    for c in doc["checks"].as_array().unwrap() {
        for key in ["name", "status", "detail", "hint"] {
            assert!(c.get(key).is_some(), "check lacks {key}: {c}");
        }
    }
    assert_eq!(check_named(&doc, "vdso_mapped")["status"], "ok");
    assert_eq!(check_named(&doc, "auxv_sysinfo_ehdr")["status"], "ok");
    let symbols = check_named(&doc, "vdso_symbols");
    assert_eq!(kind_status(symbols), ("vdso-exports-ok", "ok"), "{symbols}");
    assert!(symbols["detail"].as_str().unwrap().contains("__vdso_clock_gettime"), "{symbols}");
    assert_eq!(kind_status(check_named(&doc, "libc")).0, "libc");
    let libc = check_named(&doc, "libc")["detail"].as_str().unwrap().to_string();
    assert!(libc.contains(&format!("runs on glibc {} (", glibc_version())), "{libc}");
    let cs = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap();
    assert!(check_named(&doc, "clocksource")["detail"].as_str().unwrap().contains(cs.trim()));
}

/// The host check's getrandom row on this host: the kernel's vDSO offers
/// it or not (read from `vdsoctl dump`), and the host glibc reads it from
/// there from 2.41 (read from getconf): WARN with the glibc named and both
/// costs, which exits 0, and 1 with --strict.
#[test]
fn host_check_judges_getrandom_by_kernel_and_glibc() {
    let _lock = crate::cli::common::system_wide_lock();
    let exports = own_vdso_exports("__vdso_getrandom");
    let glibc = glibc_version();
    let (code, stdout, stderr) = run(&["--json", "check", "--trace", "0"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let symbols = check_named(&doc, "vdso_symbols")["detail"].as_str().unwrap().to_string();
    assert_eq!(symbols.contains(" __vdso_getrandom "), exports, "{symbols}");
    let g = check_named(&doc, "getrandom");
    let status = g["status"].as_str().unwrap();
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    if !exports {
        assert_eq!(kind_status(g), ("random-not-offered", "info"), "{g}");
        return;
    }
    if major_minor(&glibc) >= (2, 41) {
        assert_eq!(kind_status(g), ("random-vdso", "ok"), "{g}");
        return;
    }
    assert_eq!((kind_status(g), status), (("random-syscall-host-libc", "warn"), "warn"), "{g}");
    let costs = &g["costs"];
    assert!(costs["libc_ns"].as_f64().is_some() && costs["vdso_ns"].as_f64().is_some(), "{g}");
    if let Some(libc) = costs["libc_syscalls_per_call"].as_f64() {
        assert_eq!((libc, costs["vdso_syscalls_per_call"].as_f64()), (1.0, Some(0.0)), "counted: {g}");
    }
    assert_eq!(costs["fixed_in"].as_str(), Some("2.41"), "the release to move to: {g}");
    // WARN is exit 0 unless --strict (DESIGN "Exit codes"); FAIL is 1 either way.
    let overall = doc["status"].as_str().unwrap();
    assert_ne!(overall, "ok", "a WARN row makes the host check WARN at least: {doc}");
    assert_eq!(code, if overall == "fail" { 1 } else { 0 }, "{stderr}");
    let (strict, _, stderr) = run(&["check", "--trace", "0", "--strict", "--quiet"]);
    assert_eq!(strict, 1, "--strict fails on the WARN: {stderr}");
}

#[test]
fn thirty_two_bit_process_is_named() {
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let w = Workload::start(Command::new(build_c("wait_ready", true, &[])));
    // --trace 0: a clean observation would clear the 32-bit INFO to OK.
    let doc = run_json(&["check", "-p", &w.pid().to_string(), "--trace", "0"]);
    assert_eq!(doc["process"]["pid"], w.pid());
    assert!(doc["process"]["comm"].as_str().unwrap().starts_with("wait_ready"), "{}", doc["process"]);
    let bin = check_named(&doc, "process_binary");
    let b = &doc["binary"];
    assert_eq!(
        (b["bits"].as_u64(), b["machine"].as_str(), b["runtime"].as_str()),
        (Some(32), Some("i386"), Some("glibc"))
    );
    // Facts, not a defect: INFO, which --strict passes.
    assert_eq!(kind_status(bin), ("compat-32bit", "info"), "{bin}");
    assert_eq!(check_named(&doc, "process_vdso_mapped")["status"], "ok");
    assert_eq!(check_named(&doc, "process_auxv_sysinfo_ehdr")["status"], "ok");
    let symbols = check_named(&doc, "process_vdso_symbols");
    assert_eq!(symbols["status"], "ok", "{symbols}");
    assert!(symbols["detail"].as_str().unwrap().contains("__vdso_clock_gettime64"), "{symbols}");
}

#[test]
fn static_binary_is_named() {
    let w = Workload::start(Command::new(build_c("wait_ready", false, &["-static"])));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    let b = &doc["binary"];
    assert_eq!((b["linkage"].as_str(), b["runtime"].as_str()), (Some("static"), Some("glibc")), "{b}");
    // This glibc (≥ 2.31) looks the vDSO up in static binaries: no warning.
    assert_eq!(kind_status(bin), ("binary-ok", "ok"), "{bin}");
}

#[test]
fn prometheus_passes_promtool() {
    if !crate::cli::common::have_promtool() {
        return skip("promtool not installed (apt-get install prometheus)");
    }
    // --trace 0: the other processes of this host have no say here.
    let (code, stdout, stderr) = run(&["--format", "prometheus", "check", "--trace", "0"]);
    assert_eq!(code, 0, "{stderr}");
    // Each row carries its finding's kind as a label.
    assert!(
        stdout.contains("vdsoctl_check_status{check=\"host_trace\",kind=\"not-observed\"} -1\n"),
        "not observed: {stdout}"
    );
    assert!(stdout.contains("# TYPE vdsoctl_check_status gauge"), "{stdout}");
    assert!(stdout.contains("vdsoctl_check_status{check=\"clocksource\",kind=\"clocksource-vdso\"} 0"), "{stdout}");
    assert!(stdout.contains("vdsoctl_check_failed 0"), "{stdout}");
    assert!(
        stdout.contains(
            "vdsoctl_bench_syscalls_per_call{function=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",path=\"libc\"} 0"
        ),
        "{stdout}"
    );
    crate::cli::common::assert_promtool_accepts(&stdout);
}

#[test]
fn non_root_runs_what_it_can() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    let out = crate::cli::common::run_as_nobody(&["--json", "check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The exit code is the verdict's (this host's health is not asserted).
    let want = if doc["status"] == "fail" { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(want), "{stderr}\n{doc}");
    let log = check_named(&doc, "kernel_log");
    assert_eq!(kind_status(log), ("kernel-unreadable", "skip"), "{log}");
    // Nothing can be observed without privileges: said, never OK, never exit 4.
    let t = check_named(&doc, "host_trace");
    assert_eq!(kind_status(t), ("not-observed", "info"), "{t}");
    // The clock verdicts are counted (a seccomp filter in a child), not
    // timed, so they are root's, whatever the load.
    let (_, root_out, _) = run(&["--json", "check", "--trace", "0"]);
    let root: serde_json::Value = serde_json::from_str(&root_out).unwrap();
    let verdicts = |d: &serde_json::Value| -> Vec<(String, String)> {
        d["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                c["name"].as_str().is_some_and(|n| n.starts_with("clock:") || n == "gettimeofday" || n == "time")
            })
            .map(|c| (c["name"].as_str().unwrap().to_string(), c["kind"].as_str().unwrap().to_string()))
            .collect()
    };
    assert_eq!(verdicts(&doc), verdicts(&root), "{doc}");
    let mono = check_named(&doc, "clock:MONOTONIC");
    assert!(mono["detail"].as_str().unwrap().ends_with("[counted]"), "{mono}");
}

#[test]
fn libc_bypass_under_preload_shim_fails_naming_the_clock() {
    let shim = build_c("shim_monotonic_raw", false, &["-shared", "-fPIC", "-ldl"]);
    let out = crate::cli::common::vdsoctl()
        .args(["--json", "check", "--trace", "0"])
        .env("LD_PRELOAD", &shim)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "check must fail under the shim: {stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "fail");
    let raw = check_named(&doc, "clock:MONOTONIC_RAW");
    assert_eq!(kind_status(raw), ("clock-lost-fast-path", "fail"), "{raw}");
    // The cause is named: the preload (needs typed data: no field says it).
    assert!(raw["hint"].as_str().unwrap().contains("LD_PRELOAD"), "{raw}");
    // The other clocks are untouched by the shim.
    assert_eq!(check_named(&doc, "clock:MONOTONIC")["status"], "ok");
    let failed: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, vec!["clock:MONOTONIC_RAW"]);
}

#[test]
fn max_ns_fails_a_fast_clock_over_budget() {
    // 1 ns is below any real call: every should-be-fast clock crosses it.
    let (code, stdout, _) = run(&["--json", "check", "--max-ns", "1", "--trace", "0"]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mono = check_named(&doc, "clock:MONOTONIC");
    assert_eq!(kind_status(mono), ("clock-over-max-ns", "fail"), "{mono}");
    // CPU-time clocks are expected syscalls; --max-ns does not apply to them.
    assert_eq!(check_named(&doc, "clock:THREAD_CPUTIME_ID")["status"], "ok");
}

#[test]
fn trace_option_fails_a_process_that_bypasses_the_vdso() {
    if !is_root() {
        return skip("check --trace needs root (tracefs)");
    }
    let _lock = crate::cli::common::system_wide_lock();
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["raw", "4", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (code, stdout, stderr) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "process_trace");
    assert_eq!(kind_status(t), ("raw-clock-syscall", "fail"), "{t}");
    let clocks: Vec<_> =
        t["calls"].as_array().unwrap().iter().map(|c| (c["function"].clone(), c["clock"].clone())).collect();
    assert_eq!(clocks, [("clock_gettime".into(), "CLOCK_MONOTONIC_RAW".into())], "no stray clocks: {t}");

    // A libc loop of a vDSO clock makes no clock syscalls: OK. (clock_loop's
    // binary still fails: its `vsyscall` mode calls the fixed page.)
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["libc", "1", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (_, stdout, _) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(kind_status(check_named(&doc, "process_trace")), ("observed-clean", "ok"), "{doc}");
    let bin = check_named(&doc, "process_binary");
    assert_eq!(kind_status(bin), ("vsyscall-call-site", "fail"), "{bin}");

    // Without -p, --trace is the host window's length, with units.
    let (code, stdout, stderr) = run(&["--json", "check", "--trace", "300ms"]);
    assert!(code == 0 || code == 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let window = check_named(&doc, "host_trace")["window_ns"].as_u64().unwrap_or_else(|| panic!("{doc}"));
    assert!((300_000_000..1_000_000_000).contains(&window), "the 300 ms window: {doc}");
}

#[test]
fn static_musl_binary_is_named() {
    if which("musl-gcc").is_err() {
        return skip("musl-gcc not installed (apt-get install musl-tools)");
    }
    let w = Workload::start(Command::new(build_musl_static("clock_once").unwrap()));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    assert_eq!(kind_status(check_named(&doc, "process_binary")), ("binary-ok", "ok"), "{doc}");
    let b = &doc["binary"];
    assert_eq!((b["linkage"].as_str(), b["runtime"].as_str()), (Some("static"), Some("musl")), "{b}");
}

/// As `nobody` with no capabilities (a CI container, a rootless runner),
/// nothing can be observed: the rows say so as INFO, the other checks
/// decide, and the exit is 0 or 1 — never 4.
#[test]
fn unprivileged_check_says_not_observed_and_never_exits_4() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    let me = vdsoctl_path();
    let script = format!(
        "sleep 30 & pid=$!; {0} --json check -p $pid > {1}.p; echo $? > {1}.p.rc; kill $pid; {0} --json check > {1}.h; echo $? > {1}.h.rc",
        me.display(),
        "$OUT"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--inh-caps", "-all", "sh", "-c", &script])
        .env("OUT", dir.path().join("doc"))
        .env("NO_COLOR", "1")
        .output()
        .expect("setpriv");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for (file, row) in [("doc.p", "process_trace"), ("doc.h", "host_trace")] {
        let rc = std::fs::read_to_string(dir.path().join(format!("{file}.rc"))).unwrap();
        assert!(rc.trim() == "0" || rc.trim() == "1", "{file}: exit {rc} {stderr}");
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join(file)).unwrap())
            .unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let t = check_named(&doc, row);
        assert_eq!(kind_status(t), ("not-observed", "info"), "{t}");
        assert_eq!(doc["status"].as_str() == Some("fail"), rc.trim() == "1", "{doc}");
    }
}
