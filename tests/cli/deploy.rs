//! The fleet kit: deploy/daemonset.yaml, parsed (PyYAML, through python3:
//! the Rust side has no YAML parser and needs none) and checked — the
//! security context deploy/README.md promises, limits, the scrape port, and
//! arguments the real `vdsoctl serve` accepts; the verdicts a fleet reads
//! (`check`'s host verdict: who is left out, what was not observed, the
//! rate a FAIL needs; `serve`'s engine and first window).

use super::common::{
    build_c, copy_executable, have_m32, is_root, missing_trace_facility, run_as_nobody, skip, system_wide_lock,
    vdsoctl_path, Workload,
};
use super::serve::{have_prometheus, poll, PromServer, Serve};
use serde_json::Value;
use std::process::{Command, Stdio};

/// The manifest as JSON, or why it could not be read here.
fn manifest() -> Result<Value, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/daemonset.yaml");
    let out = Command::new("python3")
        .args(["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))"])
        .arg(&path)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("python3 yaml could not read the manifest: {stderr}"));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

#[test]
fn the_daemonset_holds_what_its_readme_promises() {
    let m = match manifest() {
        Ok(m) => m,
        Err(e) if e.contains("No module named 'yaml'") || e.starts_with("python3:") => {
            if std::env::var_os("CI").is_some() {
                panic!("required facility missing in CI: {e} (apt-get install python3-yaml)");
            }
            return skip(&e);
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!((m["apiVersion"].as_str(), m["kind"].as_str()), (Some("apps/v1"), Some("DaemonSet")));
    let pod = &m["spec"]["template"];
    let labels = &pod["metadata"]["labels"];
    assert_eq!(m["spec"]["selector"]["matchLabels"], *labels, "the selector matches the pod's labels");
    let spec = &pod["spec"];
    assert_eq!(spec["hostPID"], true, "the node's processes, by the node's pids");
    let containers = spec["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let sc = &c["securityContext"];
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(sc["capabilities"]["add"], serde_json::json!(["BPF", "PERFMON"]));
    assert_eq!((&sc["privileged"], &sc["allowPrivilegeEscalation"]), (&Value::Bool(false), &Value::Bool(false)));
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    // The shipped profile, by the path the README installs it at.
    assert_eq!(
        sc["seccompProfile"],
        serde_json::json!({"type": "Localhost", "localhostProfile": "vdsoctl/seccomp-vdsoctl.json"})
    );
    assert_eq!(m["metadata"]["namespace"], "monitoring");
    for kind in ["requests", "limits"] {
        for what in ["cpu", "memory"] {
            assert!(c["resources"][kind][what].is_string(), "resources.{kind}.{what}: {c:#}");
        }
    }
    // The port: the one serve listens on, declared and annotated.
    let args: Vec<&str> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args.first(), Some(&"serve"));
    let listen = args.iter().position(|a| *a == "--listen").map(|i| args[i + 1]).expect("--listen");
    let port = listen.rsplit(':').next().unwrap();
    assert_eq!(c["ports"][0]["containerPort"].to_string(), port);
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(
        (annotations["prometheus.io/scrape"].as_str(), annotations["prometheus.io/port"].as_str()),
        (Some("true"), Some(port))
    );
    // The arguments parse: each flag is in serve's help, and serve takes
    // them all (with --help last, it parses them and exits 0 without serving).
    let help = Command::new(vdsoctl_path()).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        assert!(help.contains(&format!("{flag} <")), "{flag} is no flag of `vdsoctl serve`: {help}");
    }
    let out = Command::new(vdsoctl_path()).args(&args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bad = Command::new(vdsoctl_path()).args(&args).args(["--interval", "soon", "--help"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "a bad value is refused before --help: the check above means something");
}

/// `check --json`'s host_trace row (status, detail) and the exit code.
/// The host_trace row's `KIND STATUS`, its detail and check's exit code.
fn host_trace() -> (String, String, i32) {
    let (status, row, code) = host_trace_row();
    (status, row["detail"].as_str().unwrap().to_string(), code)
}

/// [`host_trace`], its row as JSON.
fn host_trace_row() -> (String, Value, i32) {
    let out = Command::new(vdsoctl_path()).args(["check", "--json"]).output().expect("run check");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("check JSON");
    let row =
        doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "host_trace").cloned().expect("host_trace");
    let status = format!("{} {}", row["kind"].as_str().unwrap(), row["status"].as_str().unwrap());
    (status, row, out.status.code().unwrap_or(-1))
}

/// A raw clock loop: `clock_loop MODE CLOCK N` under `name`.
fn clock_loop(dir: &std::path::Path, name: &str, args: &[&str]) -> Workload {
    clock_loop_of(false, dir, name, args)
}

/// The same, built for i386 when `m32`.
fn clock_loop_of(m32: bool, dir: &std::path::Path, name: &str, args: &[&str]) -> Workload {
    let exe = dir.join(name);
    copy_executable(&build_c("clock_loop", m32, &[]), &exe).expect("copy clock_loop");
    let mut cmd = Command::new(&exe);
    cmd.args(args);
    Workload::start(cmd)
}

#[test]
fn a_raw_loop_named_vdsoctl_is_failed_by_check_with_its_pid() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    // Its name and executable's name are vdsoctl; its pid is not ours.
    let raw = clock_loop(dir.path(), "vdsoctl", &["raw", "1", "4000000000"]);
    let (status, row, code) = host_trace_row();
    assert_eq!((status.as_str(), code), ("raw-clock-syscall fail", 1), "{row:#}");
    let pid = i64::from(raw.pid());
    let named = row["calls"].as_array().unwrap().iter().find(|c| c["pid"].as_i64() == Some(pid)).cloned();
    let named = named.unwrap_or_else(|| panic!("{row:#}"));
    assert_eq!(
        (named["comm"].as_str(), named["clock"].as_str()),
        (Some("vdsoctl"), Some("CLOCK_MONOTONIC")),
        "{row:#}"
    );
    assert!(!row["left_out"].as_array().unwrap().contains(&pid.into()), "counted, not left out: {row:#}");
}

#[test]
fn a_host_fails_on_a_busy_loop_and_warns_on_two_calls_a_second() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let slow = clock_loop(dir.path(), "two_a_second", &["paced", "1", "2"]);
    let ours = format!("pid {} (two_a_second)", slow.pid());
    let (status, detail, _) = poll("a window with the slow loop's calls", 20, || {
        let row = host_trace();
        row.1.contains(&ours).then_some(row)
    });
    // Another process of this host may make the row FAIL (then it is the
    // busiest, named first); ours never does.
    let first = detail.split(": ").nth(1).unwrap_or_default();
    let warn = status == "raw-clock-syscall warn";
    assert!(warn || (status == "raw-clock-syscall fail" && !first.starts_with(&ours)), "{status}: {detail}");
    if warn {
        let (_, row, _) = host_trace_row();
        assert_eq!(row["fail_over"].as_f64(), Some(100.0), "the host's threshold: {row:#}");
    }
    // `--fail-over 0`: any bypass fails the host, ours too.
    let out = Command::new(vdsoctl_path()).args(["check", "--json", "--fail-over", "0"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("check JSON");
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "host_trace").cloned().unwrap();
    assert_eq!((row["status"].as_str(), out.status.code()), (Some("fail"), Some(1)), "{row}");
    drop(slow);
    let busy = clock_loop(dir.path(), "busy_loop", &["paced", "1", "100000"]);
    let (status, row, code) = host_trace_row();
    assert_eq!((status.as_str(), code), ("raw-clock-syscall fail", 1), "{row:#}");
    let busy_pid = i64::from(busy.pid());
    let named = row["calls"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["pid"].as_i64() == Some(busy_pid) && c["comm"] == "busy_loop");
    assert!(named, "{row:#}");
}

/// Issue 43: `check` beside a churn of one program's short-lived raw
/// callers (`clock_loop raw 1 100`, one after another) folds them into one
/// group by program in `host_trace`'s `groups`, its counts the exact sums
/// of the per-pid `calls` JSON keeps, and its detail one line among the
/// check's.
#[test]
fn check_folds_a_churn_into_one_program() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("churn_check");
    copy_executable(&build_c("clock_loop", false, &[]), &exe).unwrap();
    let script = format!("for i in $(seq 5000); do {} raw 1 100 >/dev/null; done", exe.display());
    let mut churn = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let out = Command::new(vdsoctl_path()).args(["check", "--json"]).output().expect("run check");
    let text = Command::new(vdsoctl_path()).env("NO_COLOR", "1").args(["check"]).output().unwrap();
    let _ = churn.kill();
    let _ = churn.wait();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("check JSON");
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "host_trace").expect("host_trace");
    let calls: Vec<&Value> = row["calls"].as_array().unwrap().iter().filter(|c| c["comm"] == "churn_check").collect();
    let pids: std::collections::BTreeSet<i64> = calls.iter().map(|c| c["pid"].as_i64().unwrap()).collect();
    assert!(pids.len() >= 10, "a churn in the window: {row:#}");
    let groups: Vec<&Value> = row["groups"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["key"].as_str().is_some_and(|k| k.ends_with("churn_check")))
        .collect();
    assert_eq!(groups.len(), 1, "one program, one group: {row:#}");
    let sum: u64 = calls.iter().map(|c| c["count"].as_u64().unwrap()).sum();
    assert_eq!((groups[0]["processes"].as_u64(), groups[0]["count"].as_u64()), (Some(pids.len() as u64), Some(sum)));
    assert_eq!(row["groups"]["by"], "exe", "{row:#}");
    // The table: the program once (its row's detail), not a line a pid.
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.lines().filter(|l| l.contains("churn_check")).count() <= 2, "{text}");
}

#[test]
fn non_root_check_says_what_it_could_not_observe() {
    if !is_root() {
        return skip("dropping to nobody needs root");
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let _raw = clock_loop(dir.path(), "raw_loop", &["raw", "1", "4000000000"]);
    let caveat = "host facts only; clock syscalls not observed: needs root or CAP_BPF + CAP_PERFMON";
    let out = run_as_nobody(&["check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let verdict = text.lines().find(|l| l.starts_with("verdict: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(verdict.ends_with(&format!(" — {caveat}")), "{verdict}");
    let out = run_as_nobody(&["check", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("check JSON");
    assert_eq!(doc["not_observed"], caveat, "{doc}");
    // The loop is not seen, so it fails nothing (the host facts decide).
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "host_trace").cloned().unwrap();
    assert_eq!(row["status"], "info", "{row}");
}

#[test]
fn serve_names_its_engine_and_waits_for_its_first_window() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let serve = Serve::start(&[]);
    // Until the first window, no `check_failed 0`: either nothing or a FAIL
    // the host facts already make.
    let body = poll("the first window", 120, || {
        let body = serve.get("/metrics").body;
        if !body.contains("vdsoctl_check_observed 1\n") {
            assert!(!body.contains("vdsoctl_check_failed 0"), "an OK claimed before any window: {body}");
            return None;
        }
        Some(body)
    });
    assert!(body.contains("vdsoctl_check_failed "), "{body}");
    let engine = body
        .lines()
        .find_map(|l| l.strip_prefix("vdsoctl_trace_engine_info{engine=\""))
        .and_then(|l| l.strip_suffix("\"} 1"))
        .unwrap_or_else(|| panic!("no engine metric: {body}"))
        .to_string();
    let log = serve.stderr.lock().unwrap().clone();
    let said = format!("counting clock syscalls with the {engine} engine");
    assert!(log.contains(&said), "{said} in {log}");
    assert!(!log.contains("with the perf engine") || engine == "perf", "{log}");
    // BPF loads here (the trace facility is present): the sys_enter program
    // or fentry counts, never perf.
    assert!(engine == "bpf" || engine == "fentry", "{engine}");
}

/// deploy/'s scrape config and rules, as a test runs them: scraping
/// `target` every second, `for:` shortened to 2 s.
pub(super) fn deploy_config(target: &str) -> tempfile::TempDir {
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let dir = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(deploy.join("prometheus.yml")).unwrap();
    assert!(config.contains("localhost:10411") && config.contains("interval: 15s"), "{config}");
    let config = config.replace("localhost:10411", target).replace("interval: 15s", "interval: 1s");
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    std::fs::write(dir.path().join("vdsoctl.rules.yml"), shortened_rules()).unwrap();
    dir
}

/// deploy/vdsoctl.rules.yml with every `for:` shortened to 2 s.
pub(super) fn shortened_rules() -> String {
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let rules = std::fs::read_to_string(deploy.join("vdsoctl.rules.yml")).unwrap();
    let shortened: String = rules
        .lines()
        .map(|l| match l.split_once("for: ") {
            Some((indent, _)) if indent.trim().is_empty() => format!("{indent}for: 2s\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    assert_ne!(shortened, rules, "the rules have for: clauses to shorten");
    shortened
}

/// Every `expr` of deploy/grafana-dashboard.json, `$node` matching all.
fn dashboard_queries() -> Vec<(String, String)> {
    dashboard_queries_for(".*")
}

/// Every `expr` of deploy/grafana-dashboard.json with `$node` as `node`
/// (a regex, as Grafana substitutes it).
pub(super) fn dashboard_queries_for(node: &str) -> Vec<(String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana-dashboard.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("dashboard JSON");
    let mut out = Vec::new();
    for panel in doc["panels"].as_array().expect("panels") {
        for t in panel["targets"].as_array().expect("targets") {
            let expr = t["expr"].as_str().expect("expr").replace("$node", node);
            out.push((panel["title"].as_str().unwrap().to_string(), expr));
        }
    }
    out
}

#[test]
fn the_dashboard_and_the_bypass_alert_work_on_a_real_prometheus() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if !have_prometheus() {
        return skip("the prometheus server is not installed (Debian: apt-get install prometheus)");
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let raw = clock_loop(dir.path(), "raw_loop", &["raw", "1", "4000000000"]);
    // Issue 43: an i386 raw loop is costed and shown like a 64-bit one.
    let raw32 = have_m32().then(|| clock_loop_of(true, dir.path(), "raw_loop32", &["raw", "1", "4000000000"]));
    // A process that exited (in the exited aggregate) before Prometheus starts.
    let serve = Serve::start(&["--max-series", "1000"]);
    serve.ready_metrics();
    let mut once = clock_loop(dir.path(), "short_loop", &["raw", "1", "1000"]);
    assert_eq!(once.next_line(), "done");
    drop(once);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let prom = PromServer::start_in(deploy_config(&serve.addr), format!("127.0.0.1:{port}"));
    let queries = dashboard_queries();
    assert_eq!(queries.len(), 9, "{queries:?}");
    for (title, expr) in &queries {
        let got = prom.wait_for(expr);
        eprintln!("{title}: {} series", got.len());
    }
    // The loop's own series is among the top processes.
    let top = prom.wait_for(&queries.iter().find(|(t, _)| t.starts_with("Top processes")).unwrap().1);
    let pid = raw.pid().to_string();
    assert!(top.iter().any(|s| s["metric"]["pid"].as_str() == Some(pid.as_str())), "{top:?}");
    // Both loops in the CPU-cost panel, the i386 one with its ABI label.
    let cost = &queries.iter().find(|(t, _)| t.starts_with("Their CPU cost")).unwrap().1;
    let has = |pid: &str| prom.query(cost).iter().any(|s| s["metric"]["pid"].as_str() == Some(pid)).then_some(());
    poll("the raw loop in the CPU-cost panel", 120, || has(&pid));
    match &raw32 {
        Some(w) => {
            poll("the i386 raw loop in the CPU-cost panel", 120, || has(&w.pid().to_string()));
            let series = format!("vdsoctl_clock_syscalls_cpu_seconds_total{{pid=\"{}\",abi=\"i386\"}}", w.pid());
            assert!(!prom.wait_for(&series).is_empty(), "{series}");
        }
        None => skip("gcc -m32 cannot build (install gcc-multilib): no i386 loop in the CPU-cost panel"),
    }
    let firing = format!("ALERTS{{alertname=\"VdsoBypassedByProcess\",alertstate=\"firing\",pid=\"{}\"}}", raw.pid());
    let alert = prom.wait_for(&firing);
    assert_eq!(alert[0]["metric"]["comm"], "raw_loop", "{alert:?}");
}
