//! What reads vdsoctl's output gets it whole and right (issue 31): an
//! `--interval` floor, and SIGINT and `-d` ending an interval trace; an
//! empty `--cgroup` refused; flame-graph frames that read as counts
//! (`tail 999`) or that XML refuses (U+FFFF, controls) drawn right in an
//! SVG a real XML parser reads; stacks the kernel did not keep said in
//! folded output, the SVG, the table and JSON; a write error after the
//! trace keeping the report and the command's status; `check --image`
//! names that collided after escaping kept apart in JSON and JUnit;
//! `check -- CMD`'s detail bounded; a non-dumpable process's call sites
//! said as unreadable. All through real processes (fixtures/odd_frames.c).

use super::common::{
    build_c, folded_and_flamegraph, missing_trace_facility, python, run, skip, svg_titles, vdsoctl_path, KillOnDrop,
};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The fixture, built with frame pointers.
fn odd_frames() -> PathBuf {
    build_c("odd_frames", false, &["-fno-omit-frame-pointer"])
}

#[test]
fn an_interval_below_its_floor_and_an_empty_cgroup_are_usage_errors() {
    for interval in ["1ns", "99ms"] {
        let (code, stdout, stderr) = run(&["trace", "-a", "-d", "1s", "--interval", interval]);
        assert_eq!(code, 2, "--interval {interval}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("below its floor of 100ms") && stderr.contains("--interval 100ms or more"), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
    for cgroup in ["", " "] {
        let (code, stdout, stderr) = run(&["trace", "-a", "-d", "1s", "--cgroup", cgroup]);
        assert_eq!(code, 2, "--cgroup {cgroup:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("got an empty one") && stderr.contains("leave --cgroup out"), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
}

/// Wait for `child` for at most `limit` (a guard against a hang, not a
/// timing assertion): its exit code, or a panic after killing it.
fn exits(child: &mut std::process::Child, limit: Duration, what: &str) -> Option<i32> {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn intervals_tile_the_deadline_and_sigint_ends_an_interval_trace() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let mut sleeper = Command::new("sleep").arg("600").spawn().unwrap();
    let _kill = KillOnDrop::new(sleeper.id() as i32);
    let pid = sleeper.id().to_string();
    // -d ends it: the intervals tile +0 … +1 s whatever a late wake-up merged.
    let (code, stdout, stderr) = run(&["--json", "trace", "-p", &pid, "-d", "1s", "--interval", "100ms"]);
    assert_eq!(code, 0, "{stderr}");
    let docs: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (summary, intervals) = docs.split_last().unwrap();
    assert!(summary["interval"].is_null(), "the last line is the summary: {stdout}");
    assert!((1..=10).contains(&intervals.len()), "{stdout}");
    let mut at = 0;
    for i in intervals {
        assert_eq!(i["interval"]["start_ns"].as_u64(), Some(at), "{stdout}");
        at = i["interval"]["end_ns"].as_u64().unwrap();
    }
    assert_eq!(at, 1_000_000_000, "the last interval ends at the deadline: {stdout}");

    // SIGINT after the first interval's report ends a trace whose -d is an hour.
    let mut trace = Command::new(vdsoctl_path())
        .args(["--json", "trace", "-p", &pid, "-d", "1h", "--interval", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(trace.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(serde_json::from_str::<Value>(&first).unwrap()["interval"].is_object(), "{first}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(trace.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let rest: Vec<String> = out.lines().map(|l| l.unwrap()).collect();
    assert_eq!(exits(&mut trace, Duration::from_secs(60), "trace --interval after SIGINT"), Some(0));
    let summary: Value = serde_json::from_str(rest.last().expect("a summary")).unwrap();
    assert_eq!(summary["interrupted"], true, "{rest:?}");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

#[test]
fn frames_that_read_as_counts_or_that_xml_refuses_are_drawn_right() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = odd_frames();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("odd.svg");
    let (code, stdout, stderr) = folded_and_flamegraph(&svg, &[bin.to_str().unwrap(), "names", "300", "100"]);
    assert_eq!(code, 0, "{stderr}");
    // Each line is `stack count`: the count is the last word, and the stack
    // ends in a frame no reader takes for a second count.
    let lines: Vec<(&str, &str)> = stdout.lines().map(|l| l.rsplit_once(' ').unwrap()).collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].0.ends_with(";main;tail\\x20999") && lines[0].1 == "300", "{stdout}");
    assert!(lines[1].0.ends_with(";main;odd\\u{ffff}\\x01<&>") && lines[1].1 == "100", "{stdout}");
    assert!(!stdout.contains('\u{ffff}') && !stdout.contains('\x01'), "{stdout:?}");
    // The SVG is XML, and each frame has its share: 300 and 100 of 400.
    let Some(titles) = svg_titles(&svg) else { return };
    assert!(titles.lines().any(|t| t == "tail\\x20999 (300 calls, 75.00%)"), "{titles}");
    assert!(titles.lines().any(|t| t == "odd\\u{ffff}\\x01<&> (100 calls, 25.00%)"), "{titles}");
    assert!(titles.lines().any(|t| t == "all (400 calls, 100%)"), "{titles}");
}

/// Sum of the counts of folded lines, and the `[stack not kept]` line's.
fn folded_sums(folded: &str) -> (u64, u64) {
    let mut kept = 0;
    let mut lost = 0;
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap_or_else(|_| panic!("{line}"));
        if stack == "[stack not kept]" {
            lost += n;
        } else {
            kept += n;
        }
    }
    (kept, lost)
}

#[test]
fn lost_stacks_are_said_in_folded_output_the_svg_the_table_and_json() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    // 20,000 calls from 20,000 distinct stacks: more than the stack map's
    // 8,192 and its overflow's 8,192 together (16,384 rows at most).
    let bin = odd_frames();
    let cmd = [bin.to_str().unwrap(), "many", "20000"];
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("many.svg");
    let (code, stdout, stderr) = folded_and_flamegraph(&svg, &cmd);
    assert_eq!(code, 0, "{stderr}");
    let (kept, lost) = folded_sums(&stdout);
    assert!(lost > 0, "the map held every stack: {kept}");
    assert_eq!(kept + lost, 20_000, "every call is a line's");
    if let Some(titles) = svg_titles(&svg) {
        let share = format!("[stack not kept] ({} calls, ", thousands(lost));
        assert!(titles.lines().any(|t| t.starts_with(&share)), "{share}…\n{}", &titles[..titles.len().min(2000)]);
        assert!(titles.lines().any(|t| t == "all (20,000 calls, 100%)"), "{}", &titles[..titles.len().min(2000)]);
    }

    let mut args = vec!["--json", "trace", "--stacks", "--"];
    args.extend(cmd);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let lost = v["stacks_lost"].as_u64().unwrap();
    let kept: u64 = v["stacks"].as_array().unwrap().iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert!(lost > 0 && kept + lost == 20_000, "kept {kept}, lost {lost}");

    let mut args = vec!["trace", "--stacks", "--"];
    args.extend(cmd);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let said = stdout.lines().find(|l| l.contains("calls' stacks were not kept")).unwrap_or_else(|| panic!("{stderr}"));
    let n: u64 = said.split_whitespace().next().unwrap().replace(',', "").parse().unwrap();
    let listed: u64 = stdout
        .lines()
        .skip_while(|l| !l.starts_with("stacks ("))
        .skip(1)
        .take_while(|l| l.starts_with("  ") && !l.contains("not kept"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(listed + n, 20_000, "{said}");
}

/// `81,204` for 81204.
fn thousands(n: u64) -> String {
    vdsoctl::render::thousands(n)
}

#[test]
fn a_late_write_error_keeps_the_report_and_the_commands_status() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = odd_frames();
    let failing = format!("{} names 5 0; exit 7", bin.display());
    let nowhere = "/vdsoctl-no-such-dir/x.svg";
    // The command failed: its status, the report, and the error said.
    let (code, stdout, stderr) = run(&["trace", "--stacks", "--flamegraph", nowhere, "--", "sh", "-c", &failing]);
    assert_eq!(code, 7, "{stderr}");
    assert!(stdout.contains("command exited with status 7") && stdout.contains(";tail\\x20999 5"), "{stdout}");
    assert!(stderr.contains(&format!("cannot write {nowhere}")), "{stderr}");
    // It did not: the report, then the write error's exit 3.
    let (code, stdout, stderr) =
        run(&["--json", "trace", "--stacks", "--flamegraph", nowhere, "--", bin.to_str().unwrap(), "names", "5", "0"]);
    assert_eq!(code, 3, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["stacks"][0]["count"], 5, "{stdout}");
    // stdout refuses the report (a full disk): the flame graph is still
    // written and the command's status handed back.
    let svg = tempfile::tempdir().unwrap();
    let svg = svg.path().join("x.svg");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(vdsoctl_path())
        .args(["trace", "--stacks", "--flamegraph", svg.to_str().unwrap(), "--", "sh", "-c", &failing])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("cannot write the report to stdout"), "{stderr}");
    if let Some(titles) = svg_titles(&svg) {
        assert!(titles.lines().any(|t| t.starts_with("tail\\x20999 (5 calls, ")), "{titles}");
    }
    // check -- CMD too: its report refused, the command's status kept.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(vdsoctl_path()).args(["check", "--", "sh", "-c", &failing]).stdout(full).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("cannot write the report to stdout"), "{stderr}");
}

#[test]
fn image_names_that_collided_after_escaping_stay_apart_in_json_and_junit() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let elf = odd_frames();
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // Copies, not links: a hard link is audited once.
    let names: [&[u8]; 5] = [b"a\nb", b"a b", b"a\\nb", b"c\xff", b"c\xfe"];
    for name in names {
        super::common::copy_executable(&elf, &bin.join(OsStr::from_bytes(name))).unwrap();
    }
    let want = ["/bin/a\\nb", "/bin/a b", "/bin/a\\\\nb", "/bin/c\\xff", "/bin/c\\xfe"];
    let root = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--image", root]);
    assert!(code == 0 || code == 1, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let mut paths: Vec<&str> = v["binaries"].as_array().unwrap().iter().map(|b| b["path"].as_str().unwrap()).collect();
    paths.sort();
    let mut sorted = want;
    sorted.sort();
    assert_eq!(paths, sorted, "five names, five paths, as escaped");
    // JUnit's cases: one per failing finding (`PATH: KIND`), else the path.
    let mut sorted: Vec<String> = v["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| {
            let path = b["path"].as_str().unwrap();
            let fails = b["findings"].as_array().unwrap().iter().filter(|f| f["status"] == "fail");
            let names: Vec<String> = fails.map(|f| format!("{path}: {}", f["kind"].as_str().unwrap())).collect();
            if names.is_empty() {
                vec![path.to_string()]
            } else {
                names
            }
        })
        .collect();
    sorted.sort();
    assert_eq!(sorted.len(), 5, "one failing finding each (odd_frames' raw clock calls): {sorted:?}");

    let (code_junit, xml, stderr) = run(&["--format", "junit", "check", "--image", root]);
    assert_eq!(code_junit, code, "{stderr}");
    let script = "import sys, json, xml.etree.ElementTree as E\n\
                  t = E.fromstring(sys.stdin.read())\n\
                  print(json.dumps([c.get('name') for c in t.iter('testcase') if c.get('classname') == 'vdsoctl.check.image']))";
    let Some(read) = python(script, &[], &xml) else { return };
    let mut cases: Vec<String> = serde_json::from_str(&read).unwrap();
    cases.sort();
    assert_eq!(cases, sorted, "{xml}");
    // And a JUnit consumer (junitparser, where installed) reads five cases.
    let probe = Command::new("python3").args(["-c", "import junitparser"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return skip("python3 with junitparser not installed: JUnit not read by a consumer");
    }
    let script = "import sys, json\nfrom junitparser import JUnitXml\n\
                  doc = JUnitXml.fromstring(sys.stdin.read())\n\
                  print(json.dumps([c.name for s in doc for c in s if c.classname == 'vdsoctl.check.image']))";
    let mut cases: Vec<String> = serde_json::from_str(&python(script, &[], &xml).unwrap()).unwrap();
    cases.sort();
    assert_eq!(cases, sorted, "{xml}");
}

#[test]
fn check_command_names_five_processes_and_counts_the_rest() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = odd_frames();
    // 300 processes, one raw CLOCK_MONOTONIC call each.
    let tree = format!("for i in $(seq 300); do {} names 1 0 & done; wait", bin.display());
    let (code, stdout, stderr) = run(&["--json", "check", "--", "sh", "-c", &tree]);
    assert_eq!(code, 1, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let row = v["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_trace").unwrap();
    let detail = row["detail"].as_str().unwrap();
    assert_eq!((row["kind"].as_str(), row["status"].as_str()), (Some("raw-clock-syscall"), Some("fail")), "{detail}");
    // Every process's call is in the data; the words name the five first.
    let calls = row["calls"].as_array().unwrap();
    let pids: std::collections::BTreeSet<i64> = calls.iter().filter_map(|c| c["pid"].as_i64()).collect();
    assert_eq!((pids.len(), calls.iter().filter_map(|c| c["count"].as_u64()).sum::<u64>()), (300, 300), "{row:#}");
    assert_eq!(detail.matches("clock_gettime CLOCK_MONOTONIC ×1").count(), 5, "{detail}");
    assert!(detail.len() < 1000, "{} bytes: {detail}", detail.len());
}

#[test]
fn sites_a_process_hides_are_said_unreadable_with_the_fix() {
    if !super::common::is_root() {
        return skip("running vdsoctl as nobody needs root");
    }
    // As nobody, with the seccomp engine: the process makes itself
    // non-dumpable, so its owner may not read its mappings.
    let bin = odd_frames();
    let out = super::common::run_as_nobody(&[
        "--json",
        "trace",
        "--engine",
        "seccomp",
        "--sites",
        "--",
        bin.to_str().unwrap(),
        "nodump",
        "10",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sites = v["counts"][0]["sites"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(sites.len(), 1, "{v}");
    assert_eq!((sites[0]["count"].as_u64(), sites[0]["class"].as_str()), (Some(10), Some("unreadable")), "{v}");
    let info = v["findings"].as_array().unwrap().iter().find(|f| f["severity"] == "info").unwrap();
    // Its kind is the generic `note`; its site's class and calls are typed
    // (the reason and the fix, worded, are render/hint.rs's unit test's).
    assert_eq!(info["kind"], "note", "{info}");
    assert_eq!((info["class"].as_str(), info["count"].as_u64()), (Some("unreadable"), Some(10)), "{info}");
}

#[test]
fn junit_of_a_process_named_with_what_xml_refuses_is_valid_and_says_the_name() {
    use std::os::unix::ffi::OsStrExt;
    // comm `x` U+FFFF `\x01<&y` (15 bytes at most: the kernel's).
    let name = std::ffi::OsStr::from_bytes(b"x\xef\xbf\xbf\x01<&y");
    let mut cmd = Command::new(build_c("rename_self", false, &[]));
    cmd.arg(name);
    let target = super::common::Workload::start(cmd);
    let pid = target.pid().to_string();
    let (code, xml, stderr) = run(&["--format", "junit", "check", "-p", &pid, "--trace", "0"]);
    assert!(code == 0 || code == 1, "{stderr}");
    let script = "import sys, json, xml.etree.ElementTree as E\n\
                  t = E.fromstring(sys.stdin.read())\n\
                  print(json.dumps([(c.get('name'), ''.join(c.itertext())) for c in t.iter('testcase')]))";
    let Some(read) = python(script, &[], &xml) else { return };
    let cases: Vec<(String, String)> = serde_json::from_str(&read).unwrap();
    let names: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "testcase names are unique: {cases:?}");
    assert!(
        cases.iter().any(|(_, text)| text.contains(&format!("pid {pid} (x\\u{{ffff}}\\x01<&y)"))),
        "the name is said, escaped: {cases:?}"
    );
    let probe = Command::new("python3").args(["-c", "import junitparser"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return skip("python3 with junitparser not installed: JUnit not read by a consumer");
    }
    let script = "import sys\nfrom junitparser import JUnitXml\n\
                  doc = JUnitXml.fromstring(sys.stdin.read())\n\
                  print(sum(1 for s in doc for c in s))";
    assert_eq!(python(script, &[], &xml).unwrap().trim(), cases.len().to_string(), "{xml}");
}
