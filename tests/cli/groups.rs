//! Issue 43, a busy host in a few lines: `trace -a --top N --by KEY`
//! folds the per-process rows of a churn into one row per program, with
//! exact sums, checked against bpftrace's `@[comm] = count()` over the same
//! churn, and a table of at most 20 lines.

use super::common::*;
use serde_json::Value;
use std::process::{Command, Stdio};

/// Processes in the churn, and each one's raw CLOCK_MONOTONIC_RAW reads.
const CHURN: u64 = 200;
const CALLS: u64 = 100;

/// Run the churn: `CHURN` short-lived runs of `bin`, each exiting at once.
fn churn(bin: &std::path::Path) {
    for _ in 0..CHURN {
        assert!(Command::new(bin).args(["raw", &CALLS.to_string()]).status().unwrap().success());
    }
}

#[test]
fn a_churn_folds_into_one_row_per_program_with_bpftraces_counts() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if std::env::consts::ARCH != "x86_64" {
        return skip("the bpftrace peer's syscall number is x86_64's");
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("grp_churner");
    copy_executable(&build_c("short_clock", false, &[]), &bin).unwrap();
    let comm = comm_of(&bin);

    // JSON: the group's exact sums, every row kept, --by comm beside bpftrace.
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "-a", "--top", "10", "--by", "comm", "-d", "120s"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    churn(&bin);
    let (_, r) = interrupt(trace);
    let groups = &r["groups"];
    assert_eq!((groups["by"].as_str(), groups["top"].as_u64()), (Some("comm"), Some(10)), "{groups:#}");
    let ours: Vec<&Value> = groups["rows"].as_array().unwrap().iter().filter(|g| g["key"] == comm.as_str()).collect();
    assert_eq!(ours.len(), 1, "one row for {comm}: {groups:#}");
    assert_eq!(
        (ours[0]["processes"].as_u64(), ours[0]["count"].as_u64(), ours[0]["clock"].as_str()),
        (Some(CHURN), Some(CHURN * CALLS), Some("CLOCK_MONOTONIC_RAW"))
    );
    let rows = r["counts"].as_array().unwrap().iter().filter(|c| c["comm"] == comm.as_str()).count();
    assert_eq!(rows as u64, CHURN, "JSON keeps every process's row");
    let shown: std::collections::HashSet<&str> =
        groups["rows"].as_array().unwrap().iter().filter_map(|g| g["key"].as_str()).collect();
    assert!(shown.len() <= 10, "--top 10 keeps 10 groups: {groups:#}");

    // The peer: bpftrace's count by name over the same churn.
    match Command::new("bpftrace").arg("--version").output() {
        Ok(o) if o.status.success() => {
            let bt = Command::new("bpftrace")
                .args(["-e", "tracepoint:raw_syscalls:sys_enter /args->id == 228/ { @[comm] = count(); }"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let bt_guard = KillOnDrop::new(bt.id() as i32);
            // Attached once it says so on stdout.
            let mut bt = bt;
            let mut reader = std::io::BufReader::new(bt.stdout.take().unwrap());
            let mut line = String::new();
            use std::io::{BufRead, Read};
            while !line.starts_with("Attaching") {
                line.clear();
                assert!(reader.read_line(&mut line).unwrap() > 0, "bpftrace ended before attaching");
            }
            let (trace, _, _stderr) = start_armed(&["--json", "trace", "-a", "--by", "comm", "-d", "120s"]);
            let _guard = KillOnDrop::new(trace.id() as i32);
            churn(&bin);
            let (_, r) = interrupt(trace);
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(bt.id() as i32), nix::sys::signal::Signal::SIGINT)
                .unwrap();
            let mut text = String::new();
            reader.read_to_string(&mut text).unwrap();
            bt.wait().unwrap();
            drop(bt_guard);
            let theirs: u64 = text
                .lines()
                .find_map(|l| l.strip_prefix(&format!("@[{comm}]: ")))
                .unwrap_or_else(|| panic!("bpftrace has no {comm}: {text}"))
                .trim()
                .parse()
                .unwrap();
            let ours: u64 = r["groups"]["rows"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|g| g["key"] == comm.as_str() && g["syscall"] == "clock_gettime")
                .map(|g| g["count"].as_u64().unwrap())
                .sum();
            assert_eq!((ours, theirs), (CHURN * CALLS, CHURN * CALLS), "vdsoctl and bpftrace by name");
        }
        _ => skip("bpftrace is not installed (apt-get install bpftrace): the peer count is not compared"),
    }

    // The table: at most 20 lines for the churn, the program in one row.
    let (trace, _, _stderr) = start_armed(&["trace", "-a", "--top", "10", "-d", "120s"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    churn(&bin);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(trace.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = trace.wait_with_output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    // Heading, header, rule, at most 10 groups and the rest line; then the
    // churn's one finding (others' findings are this host's, not counted).
    let head: Vec<&str> = table.lines().take_while(|l| !l.starts_with("engine:")).collect();
    assert!(head.len() <= 14, "{} lines before the findings:\n{table}", head.len());
    let about_churn = table.lines().filter(|l| l.contains(&format!("({comm})"))).count();
    assert!(head.len() + 1 + about_churn <= 20, "{table}");
    let row = table.lines().find(|l| l.starts_with(bin.to_str().unwrap())).unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cells[1], cells[4]), ("200", "20,000"), "{row}");
}

/// `--top 0` and an unknown `--by` are usage errors (exit 2), one line
/// each, before any tracing.
#[test]
fn a_bad_top_or_by_is_a_usage_error() {
    for args in [&["trace", "-a", "--top", "0"][..], &["trace", "-a", "--by", "uid"]] {
        let (code, _, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.lines().next().is_some_and(|l| l.contains("invalid value")), "{args:?}: {stderr}");
    }
}
