//! `check`: the host audit on this machine, on 32-bit and static targets,
//! and its Prometheus form through promtool.

use super::common::{build_c, have_m32, is_root, run, run_json, skip, Workload};
use std::process::{Command, Stdio};

fn check_named<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {doc}"))
}

/// The host audit's shape and its exit code's agreement with its verdict —
/// not this host's health: a CI machine with a TSC warning in its kernel
/// log must not turn the suite red.
#[test]
fn exit_code_matches_the_verdict_with_keys() {
    let _lock = super::common::system_wide_lock();
    let (code, stdout, stderr) = run(&["check"]);
    let verdict =
        stdout.lines().find_map(|l| l.strip_prefix("verdict: ")).unwrap_or_else(|| panic!("{stdout}{stderr}"));
    assert_eq!(code, if verdict.starts_with("FAIL") { 1 } else { 0 }, "{stdout}{stderr}");
    let out = super::common::vdsoctl().args(["--json", "check"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = doc["status"].as_str().unwrap().to_ascii_lowercase();
    assert!(["ok", "warn", "fail"].contains(&status.as_str()), "{doc}");
    assert_eq!(out.status.code(), Some(if status == "fail" { 1 } else { 0 }), "{doc}");
    for c in doc["checks"].as_array().unwrap() {
        for key in ["name", "status", "detail", "hint"] {
            assert!(c.get(key).is_some(), "check lacks {key}: {c}");
        }
    }
    assert_eq!(check_named(&doc, "vdso_mapped")["status"], "OK");
    assert_eq!(check_named(&doc, "auxv_sysinfo_ehdr")["status"], "OK");
    let symbols = check_named(&doc, "vdso_symbols");
    assert_eq!(symbols["status"], "OK", "{symbols}");
    assert!(symbols["detail"].as_str().unwrap().contains("__vdso_clock_gettime"), "{symbols}");
    let libc = check_named(&doc, "libc")["detail"].as_str().unwrap().to_string();
    assert!(libc.contains("glibc 2."), "{libc}");
    let cs = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap();
    assert!(check_named(&doc, "clocksource")["detail"].as_str().unwrap().contains(cs.trim()));
}

#[test]
fn thirty_two_bit_process_is_named() {
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let w = Workload::start(Command::new(build_c("wait_ready", true, &[])));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap();
    assert!(detail.contains("32-bit i386"), "{detail}");
    assert!(detail.contains("glibc"), "{detail}");
    assert_eq!(bin["status"], "WARN");
    assert_eq!(check_named(&doc, "process_vdso_mapped")["status"], "OK");
    assert_eq!(check_named(&doc, "process_auxv_sysinfo_ehdr")["status"], "OK");
    let symbols = check_named(&doc, "process_vdso_symbols");
    assert_eq!(symbols["status"], "OK", "{symbols}");
    assert!(symbols["detail"].as_str().unwrap().contains("__vdso_clock_gettime64"), "{symbols}");
}

#[test]
fn static_binary_is_named() {
    let w = Workload::start(Command::new(build_c("wait_ready", false, &["-static"])));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let detail = check_named(&doc, "process_binary")["detail"].as_str().unwrap().to_string();
    assert!(detail.contains("statically linked"), "{detail}");
    assert!(detail.contains("glibc"), "static glibc is recognised: {detail}");
    // --strict turns that WARN into exit 1.
    let (code, _, _) = run(&["check", "--strict", "-p", &w.pid().to_string()]);
    assert_eq!(code, 1);
}

#[test]
fn prometheus_passes_promtool() {
    if !super::common::have_promtool() {
        return skip("promtool not installed (apt-get install prometheus)");
    }
    let (code, stdout, stderr) = run(&["--format", "prometheus", "check"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("# TYPE vdsoctl_check_status gauge"), "{stdout}");
    assert!(stdout.contains("vdsoctl_check_status{check=\"clocksource\"} 0"), "{stdout}");
    assert!(stdout.contains("vdsoctl_check_failed 0"), "{stdout}");
    assert!(
        stdout.contains(
            "vdsoctl_bench_syscalls_per_call{function=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",path=\"libc\"} 0"
        ),
        "{stdout}"
    );
    super::common::assert_promtool_accepts(&stdout);
}

#[test]
fn non_root_runs_what_it_can() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    let out = super::common::run_as_nobody(&["--json", "check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = check_named(&doc, "kernel_log");
    assert_eq!(log["status"], "SKIP", "{log}");
    assert!(log["detail"].as_str().unwrap().contains("needs root"), "{log}");
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|p| p.is_file()))
        .ok_or(())
}

#[test]
fn libc_bypass_under_preload_shim_fails_naming_the_clock() {
    let shim = build_c("shim_monotonic_raw", false, &["-shared", "-fPIC", "-ldl"]);
    let out = super::common::vdsoctl().args(["--json", "check"]).env("LD_PRELOAD", &shim).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "check must fail under the shim: {stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "FAIL");
    let raw = check_named(&doc, "clock:MONOTONIC_RAW");
    assert_eq!(raw["status"], "FAIL", "{raw}");
    let detail = raw["detail"].as_str().unwrap();
    assert!(detail.contains("CLOCK_MONOTONIC_RAW") && detail.contains("the vDSO is bypassed"), "{detail}");
    assert!(raw["hint"].as_str().unwrap().contains("LD_PRELOAD"), "{raw}");
    // The other clocks are untouched by the shim.
    assert_eq!(check_named(&doc, "clock:MONOTONIC")["status"], "OK");
    let failed: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "FAIL")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, vec!["clock:MONOTONIC_RAW"]);
}

#[test]
fn max_ns_fails_a_fast_clock_over_budget() {
    // 1 ns is below any real call: every should-be-fast clock crosses it.
    let (code, stdout, _) = run(&["--json", "check", "--max-ns", "1"]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mono = check_named(&doc, "clock:MONOTONIC");
    assert_eq!(mono["status"], "FAIL");
    assert!(mono["detail"].as_str().unwrap().contains("over --max-ns 1"), "{mono}");
    // CPU-time clocks are expected syscalls; --max-ns does not apply to them.
    assert_eq!(check_named(&doc, "clock:THREAD_CPUTIME_ID")["status"], "OK");
}

#[test]
fn trace_option_fails_a_process_that_bypasses_the_vdso() {
    if !is_root() {
        return skip("check --trace needs root (tracefs)");
    }
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["raw", "4", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (code, stdout, stderr) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "process_trace");
    assert_eq!(t["status"], "FAIL", "{t}");
    let detail = t["detail"].as_str().unwrap();
    assert!(detail.contains("clock_gettime CLOCK_MONOTONIC_RAW"), "{detail}");
    assert!(!detail.contains("CLOCK_REALTIME"), "no stray clocks: {detail}");

    // A libc loop of a vDSO clock makes no clock syscalls: OK.
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["libc", "1", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let doc = run_json(&["check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    assert_eq!(check_named(&doc, "process_trace")["status"], "OK", "{doc}");

    let (code, _, stderr) = run(&["check", "--trace", "1"]);
    assert_eq!(code, 2, "--trace without -p is a usage error: {stderr}");
}

#[test]
fn static_musl_binary_is_named() {
    if which("musl-gcc").is_err() {
        return skip("musl-gcc not installed (apt-get install musl-tools)");
    }
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("clock_loop-musl-static");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/clock_loop.c");
    let built = Command::new("musl-gcc").args(["-static", "-O2", "-o"]).arg(&out).arg(&src).status().unwrap();
    assert!(built.success());
    let mut cmd = Command::new(&out);
    cmd.args(["libc", "1", "10", "1", "wait"]);
    let w = Workload::start(cmd);
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let detail = check_named(&doc, "process_binary")["detail"].as_str().unwrap().to_string();
    assert!(detail.contains("statically linked, musl"), "{detail}");
}
