//! `trace` integration tests: exact counts from fixtures/clock_loop.c
//! workloads, through `-- CMD`, `-p` and `-a`, 64-bit and 32-bit, every
//! clock function, the vsyscall page, threads, trees, both engines, least
//! privilege, `--fail-over`, signals, and the exit-3/4 error paths.

use super::common::{
    build_c, count, have_m32, host_machine, interrupt, missing_trace_facility, missing_vsyscall_page, rows_where, run,
    skip, start_armed, system_wide_lock, vdsoctl_path, vsyscall_count, KillOnDrop, Workload, EVERY_CLOCK_FUNCTION,
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
