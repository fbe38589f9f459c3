//! `trace` in a container: inside its own PID namespace (with the
//! capabilities) the BPF engine counts and reports the namespace's pids;
//! `--cgroup` limits `-a` to a cgroup's processes.

use super::common::{build_c, count, missing_trace_facility, skip, vdsoctl_path};
use serde_json::Value;
use std::process::Command;

/// `unshare --pid --fork --mount-proc sh -c SCRIPT`: a new PID namespace
/// with its own /proc, as a container has; the script's stdout.
fn in_pid_namespace(script: &str) -> String {
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", script])
        .output()
        .expect("unshare (util-linux)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The rows' (pid, ppid, clock, count).
fn rows(r: &Value) -> Vec<(i64, i64, String, u64)> {
    let rows = r["counts"].as_array().unwrap().iter();
    rows.map(|x| {
        let ppid = x["ppid"].as_i64().unwrap_or(-1);
        (x["pid"].as_i64().unwrap(), ppid, x["clock"].as_str().unwrap().to_string(), x["count"].as_u64().unwrap())
    })
    .collect()
}

/// In a new PID namespace `auto` picks the BPF engine for `-- CMD` and
/// `-p`, counts exactly, and the rows carry the pids the namespace's /proc
/// shows (the shell's `$$` and `$!` there), a forked child's parent too.
#[test]
fn a_pid_namespace_gets_the_bpf_engine_and_its_own_pids() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let dir = tempfile::tempdir().unwrap();
    let (v, b, d) = (vdsoctl_path(), bin.display(), dir.path().display());
    // -- CMD: a shell that records its pid and its child's, as it sees them.
    let script = format!(
        "{v} --json trace -- sh -c 'echo $$ >{d}/sh; {b} raw 11 777; {b} raw 1 300 & echo $! >{d}/child; wait' \
         2>/dev/null",
        v = v.display()
    );
    let r: Value = serde_json::from_str(&in_pid_namespace(&script)).unwrap();
    assert_eq!(r["engine"], "bpf", "{r:#}");
    assert_eq!(r["lost"], 0, "{r:#}");
    let sh: i64 = std::fs::read_to_string(dir.path().join("sh")).unwrap().trim().parse().unwrap();
    let child: i64 = std::fs::read_to_string(dir.path().join("child")).unwrap().trim().parse().unwrap();
    let got = rows(&r);
    assert!(got.iter().any(|x| x.1 == sh && x.2 == "CLOCK_TAI" && x.3 == 777), "{r:#}");
    assert!(got.contains(&(child, sh, "CLOCK_MONOTONIC".into(), 300)), "sh {sh}, child {child}: {r:#}");
    assert_eq!(got.len(), 2, "{r:#}");
    // -p PID: a process the namespace's /proc names, checked there.
    let script = format!(
        "{b} raw 1 1000 1 wait >/dev/null & P=$!; sleep 0.3; \
         {v} --json trace -p $P -d 1h >{d}/trace.json 2>/dev/null & T=$!; sleep 0.5; \
         echo $P; cat /proc/$P/comm; kill -USR1 $P; sleep 0.5; kill -INT $T; wait $T; kill $P",
        v = v.display()
    );
    let out = in_pid_namespace(&script);
    let mut lines = out.lines();
    let pid: i64 = lines.next().unwrap().parse().unwrap();
    assert_eq!(lines.next(), Some("clock_loop"), "{out}");
    let r: Value = serde_json::from_slice(&std::fs::read(dir.path().join("trace.json")).unwrap()).unwrap();
    assert_eq!(r["engine"], "bpf", "{r:#}");
    assert_eq!(rows(&r).iter().map(|x| (x.0, x.3)).collect::<Vec<_>>(), [(pid, 1000)], "{r:#}");
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 1000, "{r:#}");
}
