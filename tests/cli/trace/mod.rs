//! `trace` integration tests: exact counts from fixtures/clock_loop.c
//! workloads, through `-- CMD`, `-p` and `-a`, 64-bit and 32-bit, every
//! clock function, the vsyscall page, threads, trees, both engines, least
//! privilege, `--fail-over`, signals, and the exit-3/4 error paths.

use super::common::{
    build_c, count, have_m32, host_machine, interrupt, kind_status, missing_trace_facility, missing_vsyscall_page,
    rows_where, run, skip, start_armed, system_wide_lock, vdsoctl_path, vsyscall_count, KillOnDrop, Workload,
    EVERY_CLOCK_FUNCTION,
};
use serde_json::Value;
use std::process::{Command, Stdio};

mod process;
mod wide;

/// Why a test of both ABIs cannot run here: no tracing facility, or no
/// `gcc -m32`. None when it can.
fn missing_both_abis() -> Option<&'static str> {
    missing_trace_facility().or((!have_m32()).then_some("gcc -m32 cannot build (install gcc-multilib)"))
}

/// fixtures/clock_loop.c built 64-bit and 32-bit (`-m32`).
fn clock_loops() -> (std::path::PathBuf, std::path::PathBuf) {
    (build_c("clock_loop", false, &[]), build_c("clock_loop", true, &[]))
}

/// Both engines: every exactness test runs with each.
const ENGINES: [&str; 2] = ["bpf", "perf"];

/// `vdsoctl --json trace --engine ENGINE -- clock_loop ARGS`, its JSON.
fn trace_cmd_with(engine: &str, m32: bool, args: &[&str]) -> Value {
    let bin = build_c("clock_loop", m32, &[]);
    let mut all = vec!["--json", "trace", "--engine", engine, "--", bin.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "trace failed: {stderr}");
    let r: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"));
    assert_eq!(r["engine"], engine, "{r:#}");
    r
}

/// `vdsoctl --json trace ARGS..`, its JSON (exit 0 asserted).
fn trace_json(args: &[&str]) -> Value {
    let mut all = vec!["--json", "trace"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "trace failed: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"))
}

/// The first auxiliary clock this host has not enabled (`CLOCK_AUX + n`:
/// its `enable` file absent, as on a kernel before 6.17 or one built
/// without CONFIG_POSIX_AUX_CLOCKS, or reading 0); None when all are on.
fn unenabled_aux_clock() -> Option<u32> {
    let on = |n: u32| {
        std::fs::read_to_string(format!("/sys/kernel/time/aux_clocks/{n}/enable")).is_ok_and(|v| v.trim() == "1")
    };
    (0..8).find(|n| !on(*n))
}

/// `clock_gettime(CLOCK_AUX + n)` of an auxiliary clock the host has not
/// enabled is a syscall by the kernel's design, not a bypass: `trace`'s row
/// is `expected` with an INFO line saying so and how to enable it, and
/// `check -- CMD` passes (exit 0) with an INFO row, never a FAIL.
#[test]
fn an_auxiliary_clock_not_enabled_is_expected_not_a_bypass() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let Some(n) = unenabled_aux_clock() else { return skip("every auxiliary clock is enabled here") };
    let clock = format!("CLOCK_AUX+{n}");
    let id = (16 + n).to_string();
    let bin = build_c("clock_loop", false, &[]);
    let r = trace_json(&["--", bin.to_str().unwrap(), "libc", &id, "1000"]);
    let rows = r["counts"].as_array().unwrap();
    let row = rows.iter().find(|c| c["clock"] == clock.as_str()).unwrap_or_else(|| panic!("no {clock} row: {r:#}"));
    assert_eq!((row["count"].as_u64(), row["expected"].as_bool()), (Some(1000), Some(true)), "{row:#}");
    let findings = r["findings"].as_array().unwrap();
    let line = findings
        .iter()
        .find(|f| f["kind"] == "aux-clock-syscall")
        .unwrap_or_else(|| panic!("no aux-clock-syscall finding: {r:#}"));
    assert_eq!(kind_status(line), ("aux-clock-syscall", "info"), "{line:#}");
    assert!(findings.iter().all(|f| f["kind"] != "raw-clock-syscall"), "no bypass: {r:#}");
    // Its clock, and this host's state of it (not enabled: disabled, or no
    // auxiliary clocks); its hint's command is render/trace.rs's unit test's.
    assert_eq!(line["clock"].as_str(), Some(clock.as_str()), "{line:#}");
    let on = std::path::Path::new("/sys/kernel/time/aux_clocks").exists();
    assert_eq!(line["aux_state"].as_str(), Some(if on { "disabled" } else { "absent" }), "{line:#}");

    let (code, out, err) = run(&["--json", "check", "--", bin.to_str().unwrap(), "libc", &id, "1000"]);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!((code, doc["status"].as_str()), (0, Some("ok")), "{doc:#}");
    let checks = doc["checks"].as_array().unwrap();
    let named = |name: &str| checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {name}: {doc:#}"));
    assert_eq!(kind_status(named("command_trace")), ("observed-clean", "ok"));
    let aux = named(&format!("command_aux_clock:{clock}"));
    assert_eq!(kind_status(aux), ("aux-clock-syscall", "info"), "{aux:#}");
    // Its calls, typed: the command's 1,000 of that clock.
    let calls = aux["calls"].as_array().unwrap_or_else(|| panic!("calls: {aux:#}"));
    assert!(calls.iter().all(|c| c["clock"] == clock.as_str()), "{aux:#}");
    assert_eq!(calls.iter().map(|c| c["count"].as_u64().unwrap()).sum::<u64>(), 1000, "{aux:#}");
}
