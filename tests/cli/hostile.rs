//! Counts another process cannot blind or confuse (issue 19): an
//! unprivileged process cycling through 20,000 clock ids and one renaming
//! itself 20,000 times (exec'ing too) leave a victim's exact count in
//! `trace -a` and in `serve`'s /metrics; the exposition keeps one series per
//! label set (promtool); a pid used again is a new process, never credited
//! to the target that exited; `-a` findings are grouped by clock; per-thread
//! series have a `tid` label. Attackers run as `nobody` without capabilities.

use super::common::{
    assert_promtool_accepts, build_c, have_promtool, interrupt, is_root, missing_trace_facility, skip, start_armed,
    system_wide_lock, vdsoctl_path, KillOnDrop, Workload,
};
use serde_json::Value;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Calls the attackers make: 20,000 distinct clock ids; 20 × 1,000 renames
/// across 19 execs (a raw CLOCK_MONOTONIC call after each).
const IDS: &str = "20000";
const RENAMES: &str = "1000";
const EXECS: &str = "19";
/// The victim's own exact count.
const VICTIM_N: u64 = 12_345;

/// `cmd ARGS` as nobody with no capabilities (setpriv, as a user would).
fn as_nobody(bin: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--inh-caps", "-all"]).arg(bin).args(args);
    c
}

/// Run both attackers to completion (as nobody): (clock-id cycler pid, renamer pid).
fn attack(hostile: &Path, hold: bool) -> (Vec<Child>, i64, i64) {
    let hold: &[&str] = if hold { &["hold"] } else { &[] };
    let mut children = Vec::new();
    let mut pids = Vec::new();
    for args in [vec!["clocks", IDS], vec!["rename", RENAMES, EXECS]] {
        let args: Vec<&str> = args.into_iter().chain(hold.iter().copied()).collect();
        let mut child = as_nobody(hostile, &args).stdout(Stdio::piped()).spawn().expect("setpriv");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("attacker output");
        assert_eq!(line.trim(), "done", "attacker {args:?} failed");
        pids.push(child.id() as i64);
        children.push(child);
    }
    (children, pids[0], pids[1])
}

fn rows_of(r: &Value, pid: i64) -> Vec<&Value> {
    r["counts"].as_array().expect("counts").iter().filter(|x| x["pid"].as_i64() == Some(pid)).collect()
}

/// The victim: `clock_loop raw 1 N` as nobody, to completion; its pid.
fn victim(clock_loop: &Path) -> i64 {
    let mut child = as_nobody(clock_loop, &["raw", "1", &VICTIM_N.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("victim");
    let pid = child.id() as i64;
    assert!(child.wait().expect("victim").success());
    pid
}

fn facility() -> Option<&'static str> {
    if !is_root() {
        return Some("needs root (setpriv to nobody, BPF)");
    }
    missing_trace_facility()
}

#[test]
fn hostile_processes_do_not_blind_a_victim_in_trace_all() {
    if let Some(why) = facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let hostile = build_c("hostile", false, &[]);
    let clock_loop = build_c("clock_loop", false, &[]);
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "--engine", "bpf", "-a", "-d", "1h"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    let (_attackers, cycler, renamer) = attack(&hostile, false);
    let victim = victim(&clock_loop);
    let (_, r) = interrupt(trace);
    // The victim's exact count, in its own row.
    let v = rows_of(&r, victim);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!((v[0]["clock"].as_str(), v[0]["count"].as_u64()), (Some("CLOCK_MONOTONIC"), Some(VICTIM_N)), "{v:#?}");
    // 20,000 ids fold into one `other` row; 20,000 names and 19 execs are
    // one process with one row, under its last name.
    let c = rows_of(&r, cycler);
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!((c[0]["clock"].as_str(), c[0]["count"].as_u64()), (Some("other"), Some(20_000)), "{c:#?}");
    let n = rows_of(&r, renamer);
    assert_eq!(n.len(), 1, "{n:#?}");
    assert_eq!((n[0]["count"].as_u64(), n[0]["comm"].as_str()), (Some(20_000), Some("r0.999")), "{n:#?}");
    assert_eq!(r["lost"], 0, "{}", r["lost"]);
    assert!(!r["unattributed"].as_array().unwrap().iter().any(|u| u["pid"].as_i64() == Some(victim)));
}

/// 17,000 threads, each its own row with `--per-thread`, fill the 16,384
/// rows: every call still counts in its process's total, and a victim that
/// comes after them keeps its exact count (as its `unattributed` row).
#[test]
fn when_the_rows_are_full_each_process_total_stays_exact() {
    if let Some(why) = facility() {
        return skip(why);
    }
    let hostile = build_c("hostile", false, &[]);
    let clock_loop = build_c("clock_loop", false, &[]);
    let script = format!(
        "{} threads 17000 >/dev/null 2>&1; {} raw 4 {VICTIM_N} >/dev/null 2>&1",
        hostile.display(),
        clock_loop.display()
    );
    let out = Command::new(vdsoctl_path())
        .args(["--json", "trace", "--engine", "bpf", "--per-thread", "--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .output()
        .expect("vdsoctl");
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = r["counts"].as_array().unwrap();
    let unattributed = r["unattributed"].as_array().unwrap();
    let total = |comm: &str| -> u64 {
        let of = |v: &&Value| v["comm"].as_str() == Some(comm);
        rows.iter().filter(of).map(|x| x["count"].as_u64().unwrap()).sum::<u64>()
            + unattributed.iter().filter(of).map(|x| x["count"].as_u64().unwrap()).sum::<u64>()
    };
    assert_eq!(total("hostile"), 17_000, "{:#}", r["unattributed"]);
    // Its malloc's start-up getrandom is in its total when that row found
    // no room (unattributed), else summed in `startup_keys`: one call either way.
    let victim = total("clock_loop");
    assert!(victim == VICTIM_N || victim == VICTIM_N + 1, "{victim}: {:#}", r["unattributed"]);
    assert!(r["startup_keys"].as_u64().unwrap() + victim > VICTIM_N, "{r:#}");
    assert!(super::json::unattributed_rows(&r) > 0, "the rows were never full: {} rows", rows.len());
    assert_eq!(r["lost"], 0);
    let named = r["findings"].as_array().unwrap().iter().filter_map(|f| f["message"].as_str()).any(|m| {
        // (12,346 when its start-up getrandom, above, is in the total.)
        let n = if victim == VICTIM_N { "12,345" } else { "12,346" };
        m.contains(&format!("(clock_loop): {n} clock syscalls were counted in its total but not split"))
    });
    assert!(named, "{:#}", r["findings"]);
}

/// One HTTP/1.0 GET; the body of a 200.
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    (head.split(' ').nth(1) == Some("200")).then(|| body.to_string())
}

/// `serve` on a free loopback port: the child and its address.
fn serve() -> (Child, String, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(vdsoctl_path())
        .args(["serve", "--listen", "127.0.0.1:0", "--interval", "1s", "--max-series", "100000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn vdsoctl serve");
    let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(reader.read_line(&mut line).expect("stderr") > 0, "serve exited before listening");
        if let Some(rest) = line.split("serving http://").nth(1) {
            break rest.split('/').next().expect("address").to_string();
        }
    };
    (child, addr, reader)
}

/// The `clock_syscalls_total` samples of `pid`: (labels, value).
fn series_of(body: &str, pid: i64) -> Vec<(String, u64)> {
    let tag = format!("vdsoctl_clock_syscalls_total{{pid=\"{pid}\",");
    body.lines()
        .filter(|l| l.starts_with(&tag))
        .filter_map(|l| l.rsplit_once(' ').map(|(k, v)| (k.to_string(), v.parse().unwrap_or(0))))
        .collect()
}

#[test]
fn serve_keeps_a_victim_and_one_series_per_label_set_under_renames_and_execs() {
    if let Some(why) = facility() {
        return skip(why);
    }
    if !have_promtool() {
        return skip("promtool is not installed");
    }
    let _lock = system_wide_lock();
    let hostile = build_c("hostile", false, &[]);
    let clock_loop = build_c("clock_loop", false, &[]);
    let (child, addr, _stderr) = serve();
    let _serve = KillOnDrop::new(child.id() as i32);
    let mut child = child;
    // Wait until the tracer runs, then attack (the attackers stay alive,
    // so their series stay exported).
    let mut tries = 0;
    while !get(&addr, "/metrics").is_some_and(|b| b.contains("vdsoctl_trace_up 1")) {
        tries += 1;
        assert!(tries < 240, "serve's tracer never came up");
        std::thread::sleep(Duration::from_millis(250));
    }
    let (attackers, cycler, renamer) = attack(&hostile, true);
    let _kill: Vec<KillOnDrop> = attackers.iter().map(|c| KillOnDrop::new(c.id() as i32)).collect();
    let mut victim = as_nobody(&clock_loop, &["raw", "1", &VICTIM_N.to_string(), "1", "wait"]);
    victim.stderr(Stdio::null());
    let mut victim = Workload::start(victim);
    victim.go();
    assert_eq!(victim.next_line(), "done");
    // The clock_loop runs as a child of setpriv, which execs it: same pid.
    let vpid = victim.pid() as i64;
    let mut body = String::new();
    for _ in 0..120 {
        body = get(&addr, "/metrics").unwrap_or_default();
        if series_of(&body, vpid).iter().any(|(_, v)| *v == VICTIM_N) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let v = series_of(&body, vpid);
    assert_eq!(v.len(), 1, "victim {vpid}: {v:#?}");
    assert_eq!(v[0].1, VICTIM_N, "{v:#?}");
    assert!(v[0].0.contains("clock=\"CLOCK_MONOTONIC\""), "{v:#?}");
    let c = series_of(&body, cycler);
    assert_eq!(c.len(), 1, "{c:#?}");
    assert!(c[0].0.contains("clock=\"other\"") && c[0].1 == 20_000, "{c:#?}");
    let n = series_of(&body, renamer);
    assert_eq!(n.len(), 1, "{n:#?}");
    assert!(n[0].0.contains("comm=\"r0.999\"") && n[0].1 == 20_000, "{n:#?}");
    // Every label set once, and promtool agrees.
    let mut seen = HashSet::new();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let (series, _) = line.rsplit_once(' ').expect("sample");
        assert!(seen.insert(series.to_string()), "duplicate series {series}");
    }
    assert_promtool_accepts(&body);
    let _ = child.kill();
    let _ = child.wait();
}

/// Take `pid` for the next process this test forks, through
/// /proc/sys/kernel/ns_last_pid (under its lock, as CRIU does), and start
/// `cmd` with it. `None` when another process got it first.
fn spawn_with_pid(pid: i32, cmd: &mut Command) -> Option<Child> {
    let f = std::fs::OpenOptions::new().write(true).open("/proc/sys/kernel/ns_last_pid").ok()?;
    let lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).ok()?;
    (&*lock).write_all((pid - 1).to_string().as_bytes()).ok()?;
    let mut child = cmd.spawn().ok()?;
    drop(lock);
    if child.id() as i32 == pid {
        return Some(child);
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_reused_pid_is_not_credited_to_the_exited_target() {
    if let Some(why) = facility() {
        return skip(why);
    }
    let clock_loop = build_c("clock_loop", false, &[]);
    // A: makes no clock call and exits; B keeps the trace going.
    let mut a = Command::new("sleep").arg("1").spawn().expect("sleep");
    let mut b = Command::new("sleep").arg("60").spawn().expect("sleep");
    let (a_pid, b_pid) = (a.id() as i32, b.id() as i32);
    let _b = KillOnDrop::new(b_pid);
    let targets = format!("{a_pid},{b_pid}");
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "--engine", "bpf", "-p", &targets, "-d", "1h"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    assert!(a.wait().expect("a").success());
    // The newcomer takes A's pid and makes 5 raw CLOCK_MONOTONIC calls.
    let mut newcomer = None;
    for _ in 0..50 {
        let mut cmd = Command::new(&clock_loop);
        cmd.args(["raw", "1", "5"]).stdout(Stdio::null()).stderr(Stdio::null());
        if let Some(c) = spawn_with_pid(a_pid, &mut cmd) {
            newcomer = Some(c);
            break;
        }
    }
    let Some(mut newcomer) = newcomer else {
        let _ = b.kill();
        let _ = b.wait();
        return skip("could not take the exited target's pid (ns_last_pid) in 50 tries");
    };
    assert!(newcomer.wait().expect("newcomer").success());
    let (_, r) = interrupt(trace);
    let credited = rows_of(&r, i64::from(a_pid));
    assert!(credited.is_empty(), "the newcomer's calls were credited to the exited target: {credited:#?}");
    // No finding names the exited target (a finding's pids).
    let warned: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["pids"].as_array().is_some_and(|p| p.iter().any(|p| p.as_i64() == Some(i64::from(a_pid)))))
        .collect();
    assert!(warned.is_empty(), "{warned:#?}");
    let _ = b.kill();
    let _ = b.wait();
}

/// `-a`: two processes that held one pid in turn are two rows, never one
/// merged count, and two series told apart by a `start` label (promtool).
#[test]
fn system_wide_keeps_processes_that_share_a_pid_apart() {
    if let Some(why) = facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let clock_loop = build_c("clock_loop", false, &[]);
    let (trace, _, _stderr) = start_armed(&["trace", "--format", "prometheus", "--engine", "bpf", "-a", "-d", "1h"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    // The first makes 5 calls and exits; the second takes its pid and makes
    // 7. Other tests fork meanwhile: when one of theirs takes the pid first
    // and keeps it, the pair starts again with a new first process (its 5
    // calls stay under its own pid, which the assertions below do not read).
    let loop_of = |calls: &str| {
        let mut cmd = Command::new(&clock_loop);
        cmd.args(["raw", "1", calls]).stdout(Stdio::null()).stderr(Stdio::null());
        cmd
    };
    let mut pair = None;
    'pairs: for _ in 0..20 {
        let mut first = loop_of("5").spawn().expect("clock_loop");
        let pid = first.id() as i32;
        assert!(first.wait().expect("first").success());
        for _ in 0..50 {
            if let Some(c) = spawn_with_pid(pid, &mut loop_of("7")) {
                pair = Some((pid, c));
                break 'pairs;
            }
            // Taken, and held, by another process: a new pair.
            if std::path::Path::new(&format!("/proc/{pid}")).exists() {
                continue 'pairs;
            }
        }
    }
    let Some((pid, mut second)) = pair else {
        return skip("could not take an exited process's pid (ns_last_pid) in 20 pairs of up to 50 tries");
    };
    assert!(second.wait().expect("second").success());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(trace.id() as i32), nix::sys::signal::Signal::SIGINT)
        .expect("signal trace");
    let out = trace.wait_with_output().expect("trace output");
    let body = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut ours: Vec<(String, u64)> = series_of(&body, i64::from(pid));
    ours.sort_by_key(|(_, v)| *v);
    assert_eq!(ours.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [5, 7], "{body}");
    assert!(ours.iter().all(|(l, _)| l.contains(",start=\"")), "{ours:#?}");
    if have_promtool() {
        assert_promtool_accepts(&body);
    }
}

#[test]
fn system_wide_findings_are_one_line_per_clock_and_verdict() {
    if let Some(why) = facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let clock_loop = build_c("clock_loop", false, &[]);
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "--engine", "bpf", "-a", "-d", "1h"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    // 30 short-lived processes, each 10 raw clock_getres(CLOCK_BOOTTIME).
    let script = format!("for i in $(seq 30); do {} getres 7 10 >/dev/null 2>&1; done", clock_loop.display());
    assert!(Command::new("sh").args(["-c", &script]).status().expect("sh").success());
    let (_, r) = interrupt(trace);
    let lines: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["message"].as_str())
        .filter(|m| m.starts_with("clock_getres(CLOCK_BOOTTIME):"))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    // "from N processes (pid … (clock_loop) …/s, …, N-3 more)": at least ours.
    let n: u64 = lines[0]
        .split(" from ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("{}", lines[0]));
    assert!(n >= 30, "{}", lines[0]);
    assert!(lines[0].contains(" processes (pid ") && lines[0].contains("(clock_loop) "), "{}", lines[0]);
    assert!(lines[0].contains(&format!(", {} more)", n - 3)), "{}", lines[0]);
}

#[test]
fn per_thread_prometheus_series_have_a_tid_label() {
    if let Some(why) = facility() {
        return skip(why);
    }
    let clock_loop = build_c("clock_loop", false, &[]);
    let out = Command::new(vdsoctl_path())
        .args(["trace", "--per-thread", "--format", "prometheus", "--"])
        .arg(&clock_loop)
        .args(["raw", "4", "3000", "3"])
        .stderr(Stdio::null())
        .output()
        .expect("vdsoctl");
    let text = String::from_utf8_lossy(&out.stdout);
    let body: String =
        text.lines().filter(|l| !l.starts_with("ready") && !l.starts_with("done")).map(|l| format!("{l}\n")).collect();
    let rows: Vec<&str> = body.lines().filter(|l| l.starts_with("vdsoctl_clock_syscalls_total{")).collect();
    assert_eq!(rows.len(), 3, "{body}");
    let tids: HashSet<&str> =
        rows.iter().map(|l| l.split("tid=\"").nth(1).and_then(|s| s.split('"').next()).expect("tid label")).collect();
    assert_eq!(tids.len(), 3, "{body}");
    assert!(rows.iter().all(|l| l.ends_with(" 3000")), "{body}");
    if have_promtool() {
        assert_promtool_accepts(&body);
    }
}

/// `--fail-over 0` and one call in ~2 s: the FAIL line's rate is the
/// table's 0.x, never "0 syscalls/s" (which would read as within the limit).
#[test]
fn a_slow_rate_over_fail_over_zero_is_not_written_as_zero() {
    if let Some(why) = facility() {
        return skip(why);
    }
    let clock_loop = build_c("clock_loop", false, &[]);
    let script = format!("{} raw 1 1 >/dev/null 2>&1; sleep 2", clock_loop.display());
    let out = Command::new(vdsoctl_path())
        .args(["--json", "trace", "--fail-over", "0", "--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .output()
        .expect("vdsoctl");
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let fail = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            // Needs typed data: a trace finding's clock and process are only in its words.
            (f["kind"] == "raw-clock-syscall" && f["severity"] == "fail")
                && f["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("CLOCK_MONOTONIC: ") && m.contains("(clock_loop)"))
        })
        .unwrap_or_else(|| panic!("{:#}", r["findings"]));
    let message = fail["message"].as_str().unwrap();
    let rate: f64 = message
        .strip_prefix("CLOCK_MONOTONIC: ")
        .and_then(|m| m.split(" syscalls/s").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!(rate > 0.0 && rate < 1.0, "{message}");
}
