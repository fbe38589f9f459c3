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

/// A shell function call's prefix: `{UNTIL} WORD FILE` waits until FILE
/// has a line starting with WORD (or `vdsoctl: WORD`). It gives up after a
/// minute, failing the script, whose EXIT trap then kills the workload
/// (`$P`) and the trace (`$T`) it started: nothing is left running.
const UNTIL: &str = "trap 'kill $P $T 2>/dev/null' EXIT; until_line() { i=0; \
    until grep -q \"^\\(vdsoctl: \\)\\?$1\" \"$2\" 2>/dev/null; do \
    i=$((i + 1)); [ $i -lt 3000 ] || { echo \"no $1 in $2 after a minute\" >&2; exit 1; }; sleep 0.02; done; }; until_line";

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
    assert!(["fentry", "bpf"].contains(&r["engine"].as_str().unwrap_or_default()), "the BPF engine: {r:#}");
    assert_eq!(r["lost"], 0, "{r:#}");
    let sh: i64 = std::fs::read_to_string(dir.path().join("sh")).unwrap().trim().parse().unwrap();
    let child: i64 = std::fs::read_to_string(dir.path().join("child")).unwrap().trim().parse().unwrap();
    let got = rows(&r);
    assert!(got.iter().any(|x| x.1 == sh && x.2 == "CLOCK_TAI" && x.3 == 777), "{r:#}");
    assert!(got.contains(&(child, sh, "CLOCK_MONOTONIC".into(), 300)), "sh {sh}, child {child}: {r:#}");
    assert_eq!(got.len(), 2, "{r:#}");
    // -p PID: a process the namespace's /proc names, checked there.
    let script = format!(
        "{b} raw 1 1000 1 wait >{d}/loop.out & P=$!; {until} ready {d}/loop.out; \
         {v} --json trace -p $P -d 1h >{d}/trace.json 2>{d}/trace.err & T=$!; {until} tracing {d}/trace.err; \
         echo $P; cat /proc/$P/comm; kill -USR1 $P; {until} done {d}/loop.out; kill -INT $T; wait $T; kill $P",
        until = UNTIL,
        v = v.display()
    );
    let out = in_pid_namespace(&script);
    let mut lines = out.lines();
    let pid: i64 = lines.next().unwrap().parse().unwrap();
    assert_eq!(lines.next(), Some("clock_loop"), "{out}");
    let r: Value = serde_json::from_slice(&std::fs::read(dir.path().join("trace.json")).unwrap()).unwrap();
    assert!(["fentry", "bpf"].contains(&r["engine"].as_str().unwrap_or_default()), "the BPF engine: {r:#}");
    assert_eq!(rows(&r).iter().map(|x| (x.0, x.3)).collect::<Vec<_>>(), [(pid, 1000)], "{r:#}");
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), 1000, "{r:#}");
}

/// A cgroup made by hand under the v2 hierarchy, removed on drop.
struct Cgroup {
    dir: std::path::PathBuf,
    path: String,
}

impl Cgroup {
    fn make(name: &str) -> Option<Cgroup> {
        let mount = std::fs::read_to_string("/proc/self/mountinfo").ok()?.lines().find_map(|l| {
            let (mount, after) = l.split_once(" - ")?;
            after.starts_with("cgroup2 ").then(|| mount.split_whitespace().nth(4).map(str::to_string))?
        })?;
        // Beside vdsoctl's own cgroup (its parent may not take processes
        // of a cgroup's own children on a v2-only host).
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let own = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim_end_matches('/').to_string();
        let path = format!("{own}/{name}-{}", std::process::id());
        let dir = std::path::PathBuf::from(format!("{mount}{path}"));
        std::fs::create_dir(&dir).ok()?;
        Some(Cgroup { dir, path })
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Bad `--cgroup` paths (beside `cg_path`, a cgroup made by the test): one
/// line each, with the documented codes.
fn assert_bad_cgroup_paths(cg_path: &str) {
    let bad = |args: &[&str]| {
        let out = Command::new(vdsoctl_path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        (out.status.code(), stderr)
    };
    let (code, e) = bad(&["trace", "-a", "--cgroup", "/vdsoctl-no-such-cgroup", "-d", "1s"]);
    assert_eq!(code, Some(3), "{e}");
    assert!(e.contains("/proc/PID/cgroup"), "{e}");
    let (code, e) = bad(&["trace", "-a", "--cgroup", "/sys/fs/cgroup/memory/x", "-d", "1s"]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("not a cgroup v2 path"), "{e}");
    let (code, e) = bad(&["trace", "--cgroup", "/", "--", "true"]);
    assert_eq!((code, e.contains("with -a")), (Some(2), true), "{e}");
    let (code, e) = bad(&["trace", "-a", "--engine", "perf", "--cgroup", "/", "-d", "1s"]);
    assert_eq!((code, e.contains("--engine bpf")), (Some(2), true), "{e}");
    // A file of the hierarchy, not a cgroup; more cgroups than the program takes.
    let file = format!("{}/cgroup.procs", cg_path);
    let (code, e) = bad(&["trace", "-a", "--cgroup", &file, "-d", "1s"]);
    assert_eq!((code, e.contains("is no cgroup directory")), (Some(2), true), "{e}");
    let mut many = vec!["trace", "-a", "-d", "1s"];
    many.extend(std::iter::repeat_n(["--cgroup", cg_path], 17).flatten());
    let (code, e) = bad(&many);
    assert_eq!((code, e.contains("--cgroup given 17 times: at most 16")), (Some(2), true), "{e}");
}

/// `trace -a --cgroup PATH` counts a workload started in a new cgroup
/// exactly, and nothing of one outside it run at the same time; the row
/// carries the cgroup. A bad PATH is one line with a hint, exit 3 (no such
/// cgroup) or 2 (not a v2 path, or without -a).
#[test]
fn a_cgroup_is_counted_exactly_and_nothing_outside_it() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = super::common::system_wide_lock();
    let Some(cg) = Cgroup::make("vdsoctl-test") else {
        if std::env::var_os("CI").is_some() {
            panic!("required facility missing in CI: a cgroup v2 directory could not be made");
        }
        return skip("no cgroup v2 hierarchy to make a cgroup in");
    };
    let bin = build_c("clock_loop", false, &[]);
    let dir = tempfile::tempdir().unwrap();
    let (b, procs) = (bin.display(), cg.dir.join("cgroup.procs"));
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{v} --json trace -a --cgroup {path} -d 1h 2>{d}/trace.err & T=$!; {until} tracing {d}/trace.err; \
             sh -c 'echo $$ >{procs}; exec {b} raw 11 4321' >/dev/null 2>&1 & \
             {b} raw 11 999 >/dev/null 2>&1; wait $!; sh -c 'echo $$ >{procs}; exec {b} getres 11 77' >/dev/null 2>&1; \
             kill -INT $T; wait $T",
            v = vdsoctl_path().display(),
            path = cg.path,
            procs = procs.display(),
            until = UNTIL,
            d = dir.path().display(),
        ))
        .output()
        .expect("sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(["fentry", "bpf"].contains(&r["engine"].as_str().unwrap_or_default()), "the BPF engine: {r:#}");
    assert_eq!(count(&r, "clock_gettime", Some("CLOCK_TAI")), 4321, "the other loop's 999 are outside: {r:#}");
    assert_eq!(count(&r, "clock_getres", Some("CLOCK_TAI")), 77, "{r:#}");
    assert_eq!(r["counts"].as_array().unwrap().len(), 2, "{r:#}");
    assert_eq!(r["lost"], 0, "{r:#}");
    // The rows' cgroup: read while they lived, or null once gone.
    for row in r["counts"].as_array().unwrap() {
        assert!(row["cgroup"].is_null() || row["cgroup"] == cg.path.as_str(), "{row:#}");
    }
    // A live process's row carries it.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "sh -c 'echo $$ >{procs}; exec {b} raw 11 500 1 wait' >{d}/loop.out 2>&1 & P=$!; {until} ready {d}/loop.out; \
             {v} --json trace -a --cgroup {path} -d 1h 2>{d}/trace2.err & T=$!; {until} tracing {d}/trace2.err; \
             kill -USR1 $P; {until} done {d}/loop.out; \
             kill -INT $T; wait $T; kill $P",
            v = vdsoctl_path().display(),
            path = cg.dir.display(),
            procs = procs.display(),
            until = UNTIL,
            d = dir.path().display(),
        ))
        .output()
        .expect("sh");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = r["counts"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{r:#}");
    assert_eq!((rows[0]["count"].as_u64(), rows[0]["cgroup"].as_str()), (Some(500), Some(cg.path.as_str())), "{r:#}");
    // Typed: the cgroup made here, in no container, no systemd unit.
    assert_eq!(super::json::placements(&r), [(Some(cg.path.clone()), None, None)], "{r:#}");
    assert_bad_cgroup_paths(&cg.path);
}
