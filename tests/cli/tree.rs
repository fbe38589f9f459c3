//! The command's tree under hostile conditions (issue #31): counts that
//! never call uncounted calls counted, whatever the fd limit.

use super::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Who runs vdsoctl: `nobody` with no capability (as root, through
/// setpriv), and root itself when the tests run as root.
fn identities() -> Vec<&'static str> {
    if is_root() {
        vec!["nobody", "root"]
    } else {
        vec!["caller"]
    }
}

/// vdsoctl ARGS as `who`, under `prlimit --nofile=1024:1024` (soft and hard:
/// a common CI container setting, which vdsoctl cannot lift).
fn vdsoctl_limited(who: &str, args: &[&str]) -> Output {
    let mut c = Command::new("prlimit");
    c.arg("--nofile=1024:1024");
    if who == "nobody" {
        c.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]);
    }
    c.arg(vdsoctl_path()).env("NO_COLOR", "1").args(args).output().expect("run prlimit")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// 1,500 and 10,000 processes, one after another and 1,500 alive at once,
/// five raw CLOCK_MONOTONIC calls each: every call counted, in one row per
/// process, nothing lost, under a hard limit of 1,024 fds.
#[test]
fn the_seccomp_engine_is_exact_for_thousands_of_processes_under_nofile_1024() {
    let forker = build_c("forker", false, &[]);
    for who in identities() {
        for (n, hold) in [("1500", "0"), ("1500", "1"), ("10000", "0")] {
            let out =
                vdsoctl_limited(who, &["--json", "trace", "--engine", "seccomp", "--", path(&forker), n, "5", hold]);
            let what = format!("{who}: forker {n} 5 {hold}");
            assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            let r = json_of(&out);
            let n: u64 = n.parse().unwrap();
            let rows = r["counts"].as_array().unwrap();
            assert_eq!(count(&r, "clock_gettime", Some("CLOCK_MONOTONIC")), n * 5, "{what}");
            assert_eq!(rows.len() as u64, n, "{what}: one row per process");
            assert!(rows.iter().all(|x| x["count"] == 5), "{what}");
            assert_eq!(r["lost"], 0, "{what}");
            assert!(
                r["findings"].as_array().unwrap().iter().all(|f| !f.to_string().contains("not observed")),
                "{what}"
            );
        }
    }
}

/// 600 children reading their CPU clock, then one making 100 raw
/// CLOCK_MONOTONIC calls: the bypass is seen and FAILs under the same
/// limit, as it does with ten children.
#[test]
fn check_of_a_bypass_after_600_processes_fails_under_nofile_1024() {
    let mixed = build_c("mixed", false, &[]);
    for who in identities() {
        let out = vdsoctl_limited(who, &["--json", "check", "--", path(&mixed), "600"]);
        let r = json_of(&out);
        assert_eq!(out.status.code(), Some(1), "{who}: {r:#}");
        assert_eq!(r["status"], "fail", "{who}: {r:#}");
        let trace =
            r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_trace").expect("command_trace");
        assert_eq!(trace["status"], "fail", "{who}: {r:#}");
        let detail = trace["detail"].as_str().unwrap();
        assert!(detail.contains("clock_gettime CLOCK_MONOTONIC ×100"), "{who}: {detail}");
        assert!(r.get("not_observed_in_full").is_none(), "{who}: nothing lost: {r:#}");
    }
}
