//! vdsoctl is never its own finding (issue 40): system-wide counts leave
//! out every process that runs vdsoctl's executable file — told by its
//! device and inode, never by name — so two `serve`s and a `check` on one
//! host never show in each other's /metrics or host_trace row, while a
//! raw clock loop copied to a file named `vdsoctl` is counted like any
//! other program.

use super::super::common::{
    build_c, copy_executable, interrupt, missing_trace_facility, rows_where, skip, start_armed, system_wide_lock,
    vdsoctl_path, KillOnDrop, Workload,
};
use super::{poll, Serve};
use serde_json::Value;
use std::process::{Command, Stdio};

/// The value of the unlabelled sample `name` in an exposition.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// The exposition's per-process and exited-process samples (syscalls,
/// [vsyscall] calls, unattributed calls, CPU time, aggregates).
fn process_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            [
                "vdsoctl_clock_syscalls_total{",
                "vdsoctl_vsyscall_emulations_total{",
                "vdsoctl_clock_syscalls_unattributed_total{",
                "vdsoctl_clock_syscalls_cpu_seconds_total{",
                "vdsoctl_exited_clock_syscalls_total{",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .collect()
}

/// /metrics once the per-process section was read twice more (the trace
/// timestamp moved on twice): a process gone before the first of those
/// reads is folded, as it stands or final, by the second.
fn metrics_two_refreshes_on(serve: &Serve) -> String {
    let stamp = |s: &Serve| sample(&s.get("/metrics").body, "vdsoctl_trace_timestamp_seconds");
    let mut last = stamp(serve);
    for _ in 0..2 {
        let was = last;
        last = poll("the per-process section to be read again", 120, || {
            let now = stamp(serve);
            (now.is_some() && now != was).then_some(now)
        });
    }
    serve.get("/metrics").body
}

/// Two `serve`s, both counting system-wide, and a `check` run while they
/// do (through a hard link under another name: the same file, so the same
/// device and inode, and a comm no other program on a shared host has):
/// none is in another's series — not the other serve's pid, not the
/// check's, no [vsyscall] calls of theirs (vdsoctl's bench calls the page
/// on purpose), no exited aggregate for the check's name — and each
/// serve says it left calls out. The check's host_trace row names both
/// serves as vdsoctl's own, left out.
#[test]
fn two_serves_and_a_check_leave_each_other_out() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let linked = dir.path().join("vdsoctl-own-check");
    if let Err(e) = std::fs::hard_link(vdsoctl_path(), &linked) {
        return skip(&format!("cannot hard-link the vdsoctl binary into {}: {e}", dir.path().display()));
    }
    let a = Serve::start(&["--max-series", "1000"]);
    let b = Serve::start(&["--max-series", "1000"]);
    a.ready_metrics();
    b.ready_metrics();
    // A 5 s window: each serve's audit (and its bench) runs at least once
    // in it, every second or so.
    let out = Command::new(&linked)
        .args(["--json", "check", "--trace", "5s"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run the linked check");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("check's JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let host_trace = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "host_trace"))
        .unwrap_or_else(|| panic!("no host_trace row: {report:#}"));
    let calls = host_trace["calls"].as_array().cloned().unwrap_or_default();
    let left_out = host_trace["left_out"].as_array().cloned().unwrap_or_default();
    for pid in [a.pid(), b.pid()] {
        let pid = i64::from(pid);
        assert!(
            !calls.iter().any(|c| c["pid"].as_i64() == Some(pid)),
            "serve {pid} is a finding of check: {host_trace:#}"
        );
        assert!(left_out.iter().any(|p| p.as_i64() == Some(pid)), "serve {pid} left out, and said: {host_trace:#}");
    }

    // The check is gone: each serve has folded whatever it counted of it.
    for (serve, other) in [(&a, &b), (&b, &a)] {
        let text = metrics_two_refreshes_on(serve);
        let lines = process_lines(&text);
        for pid in [other.pid().to_string(), serve.pid().to_string()] {
            let theirs: Vec<&&str> = lines.iter().filter(|l| l.contains(&format!("pid=\"{pid}\""))).collect();
            assert!(theirs.is_empty(), "serve {} exports vdsoctl {pid}: {theirs:#?}", serve.pid());
        }
        let check: Vec<&&str> = lines.iter().filter(|l| l.contains("comm=\"vdsoctl-own-che\"")).collect();
        assert!(check.is_empty(), "serve {} exports the check: {check:#?}", serve.pid());
        let own = sample(&text, "vdsoctl_trace_own_calls_total").unwrap_or_else(|| panic!("no own count: {text}"));
        assert!(own > 0.0, "serve {} left out the other's and the check's calls: {own}", serve.pid());
    }
}

/// A raw clock loop copied to a file named `vdsoctl`: another file, so not
/// vdsoctl's own, whatever its name. `serve` exports its 5,000 raw
/// CLOCK_TAI calls under comm `vdsoctl`; `trace -a` counts another run of
/// it exactly, and leaves out the serve beside it (said in `vdsoctl_own`).
#[test]
fn a_program_named_vdsoctl_is_counted() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let impostor = dir.path().join("vdsoctl");
    copy_executable(&build_c("clock_loop", false, &[]), &impostor).unwrap();
    let serve = Serve::start(&["--max-series", "1000"]);
    serve.ready_metrics();

    let mut cmd = Command::new(&impostor);
    cmd.args(["raw", "11", "5000", "1", "wait"]);
    let mut loop_ = Workload::start(cmd);
    loop_.go();
    assert_eq!(loop_.next_line(), "done");
    let series = format!("vdsoctl_clock_syscalls_total{{pid=\"{}\",", loop_.pid());
    let line = poll("the loop named vdsoctl in serve's series", 120, || {
        let body = serve.get("/metrics").body;
        let ours = |l: &&str| l.starts_with(&series) && l.contains(",comm=\"vdsoctl\",");
        body.lines().filter(ours).find(|l| l.contains("clock=\"CLOCK_TAI\"")).map(str::to_string)
    });
    assert!(line.ends_with(" 5000"), "{line}");

    let (trace, _, _stderr) = start_armed(&["--json", "trace", "-a", "-d", "1h"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    let mut child = Command::new(&impostor)
        .args(["raw", "4", "3000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the loop named vdsoctl");
    let pid = i64::from(child.id());
    assert!(child.wait().unwrap().success());
    // The serve's audit (its bench makes raw clock syscalls) runs within
    // the window: its timestamp moves on twice.
    let stamp = || sample(&serve.get("/metrics").body, "vdsoctl_audit_timestamp_seconds");
    let mut last = stamp();
    for _ in 0..2 {
        let was = last;
        last = poll("serve's audit to run again", 120, || {
            let now = stamp();
            (now.is_some() && now != was).then_some(now)
        });
    }
    let (_, r) = interrupt(trace);
    let rows = rows_where(&r, "pid", pid);
    assert_eq!(rows.len(), 1, "{r:#}");
    assert_eq!((rows[0]["comm"].as_str(), rows[0]["count"].as_u64()), (Some("vdsoctl"), Some(3000)), "{r:#}");
    let serve_pid = i64::from(serve.pid());
    assert!(rows_where(&r, "pid", serve_pid).is_empty(), "serve counted: {r:#}");
    let vsyscall = r["vsyscall_emulations"].as_array().cloned().unwrap_or_default();
    assert!(vsyscall.iter().all(|v| v["pid"].as_i64() != Some(serve_pid)), "{r:#}");
    let own: Vec<i64> = r["vdsoctl_own"]["pids"]
        .as_array()
        .unwrap_or_else(|| panic!("{r:#}"))
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    assert!(own.contains(&serve_pid) && !own.contains(&pid), "{r:#}");
    assert!(r["vdsoctl_own"]["calls"].as_u64() > Some(0), "{r:#}");
}
