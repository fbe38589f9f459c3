//! `check --seccomp-profile`: podman's default profile passes; the same
//! profile without clock_gettime or getrandom, and an allowlist of
//! read/write/exit, fail naming each syscall the vDSO falls back to.

use super::common::run;
use serde_json::Value;

const DEFAULT: &str = "/usr/share/containers/seccomp.json";

fn default_profile() -> Option<Value> {
    match std::fs::read_to_string(DEFAULT) {
        Ok(t) => Some(serde_json::from_str(&t).unwrap()),
        Err(_) => {
            assert!(std::env::var_os("CI").is_none(), "CI installs podman, whose default profile is {DEFAULT}");
            super::common::skip(&format!("no {DEFAULT} (podman's default seccomp profile)"));
            None
        }
    }
}

/// `check --json --seccomp-profile` of `profile`: (exit code, rows by name → (status, detail)).
/// Each row as (name, status, detail, kind).
fn judged(profile: &Value) -> (i32, Vec<(String, String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    std::fs::write(&path, profile.to_string()).unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--seccomp-profile", path.to_str().unwrap()]);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let rows = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            (s("name"), s("status"), s("detail"), s("kind"))
        })
        .collect();
    (code, rows)
}

fn failed(rows: &[(String, String, String, String)]) -> Vec<&str> {
    rows.iter().filter(|r| r.1 == "fail").map(|r| r.0.as_str()).collect()
}

/// The profile with `name` taken out of every rule.
fn without(mut profile: Value, name: &str) -> Value {
    for rule in profile["syscalls"].as_array_mut().unwrap() {
        if let Some(names) = rule["names"].as_array_mut() {
            names.retain(|n| n != name);
        }
    }
    profile
}

#[test]
fn podmans_default_profile_passes() {
    let Some(profile) = default_profile() else { return };
    let (code, rows) = judged(&profile);
    assert_eq!(code, 0, "{rows:?}");
    assert!(failed(&rows).is_empty(), "{rows:?}");
    let x86 = rows.iter().find(|r| r.0 == "seccomp_profile:x86_64").unwrap();
    assert_eq!((x86.3.as_str(), x86.1.as_str()), ("seccomp-allows", "ok"), "{x86:?}");
    // Needs typed data: the syscalls it allows are only in the words.
    assert!(x86.2.ends_with(": clock_gettime, gettimeofday, time, clock_getres, getcpu, getrandom, mmap"), "{x86:?}");
    let (code, table, _) = run(&["check", "--seccomp-profile", DEFAULT]);
    assert_eq!(code, 0, "{table}");
    assert!(table.contains("verdict: OK"), "{table}");
}

#[test]
fn a_profile_without_a_fallback_syscall_fails_naming_it() {
    let Some(profile) = default_profile() else { return };
    let (code, rows) = judged(&without(profile.clone(), "clock_gettime"));
    assert_eq!(code, 1, "{rows:?}");
    assert_eq!(
        failed(&rows),
        [
            "seccomp_profile:x86_64:clock_gettime",
            "seccomp_profile:i386:clock_gettime",
            "seccomp_profile:aarch64:clock_gettime",
            "seccomp_profile:arm:clock_gettime",
            // podman's archMap names s390x (issue 41 taught vdsoctl its vDSO).
            "seccomp_profile:s390x:clock_gettime"
        ]
    );
    let row = rows.iter().find(|r| r.0 == "seccomp_profile:x86_64:clock_gettime").unwrap();
    assert_eq!(row.3, "seccomp-denies-fallback", "{row:?}");
    // Needs typed data: the profile's action is only in the words.
    assert!(row.2.contains(": SCMP_ACT_ERRNO (ENOSYS) "), "{row:?}");
    let (code, rows) = judged(&without(profile, "getrandom"));
    assert_eq!(code, 1, "{rows:?}");
    // Only the 64-bit vDSOs offer getrandom (s390x's since 6.13): there it falls back.
    assert_eq!(
        failed(&rows),
        ["seccomp_profile:x86_64:getrandom", "seccomp_profile:aarch64:getrandom", "seccomp_profile:s390x:getrandom"]
    );
    let row = rows.iter().find(|r| r.0 == "seccomp_profile:x86_64:getrandom").unwrap();
    assert_eq!(row.3, "seccomp-denies-fallback", "{row:?}");
}

#[test]
fn an_allowlist_of_read_write_exit_fails_every_fallback() {
    let profile = serde_json::json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"],
        "syscalls": [{ "names": ["read", "write", "exit"], "action": "SCMP_ACT_ALLOW" }]
    });
    let (code, rows) = judged(&profile);
    assert_eq!(code, 1, "{rows:?}");
    let x86 = ["clock_gettime", "gettimeofday", "time", "clock_getres", "getcpu", "getrandom", "mmap"];
    let i386 =
        ["clock_gettime", "clock_gettime64", "gettimeofday", "time", "clock_getres", "clock_getres_time64", "getcpu"];
    let want: Vec<String> = x86
        .iter()
        .map(|n| format!("seccomp_profile:x86_64:{n}"))
        .chain(i386.iter().map(|n| format!("seccomp_profile:i386:{n}")))
        .collect();
    let mut got = failed(&rows);
    got.sort();
    let mut want: Vec<&str> = want.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(got, want);
    assert!(rows.iter().all(|r| r.1 == "fail"), "no OK row: {rows:?}");
    let mmap = rows.iter().find(|r| r.0 == "seccomp_profile:x86_64:mmap").unwrap();
    assert_eq!(mmap.3, "seccomp-denies-fallback", "{mmap:?}");
    // Needs typed data: the action is only in the words.
    assert!(mmap.2.contains(": SCMP_ACT_ERRNO (EPERM) "), "{mmap:?}");
}

#[test]
fn a_file_that_is_no_profile_is_one_line_exit_3() {
    for (text, says) in [
        ("{not json", "seccomp profile"),
        (r#"{"syscalls": []}"#, "no defaultAction"),
        (r#"{"defaultAction": "SCMP_ACT_MAYBE", "syscalls": []}"#, "unknown action \"SCMP_ACT_MAYBE\""),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, text).unwrap();
        let (code, stdout, stderr) = run(&["check", "--seccomp-profile", path.to_str().unwrap()]);
        assert_eq!((code, stderr.lines().count()), (3, 1), "{stdout}{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
}

/// `check -p` judges the process's seccomp: strict mode FAILs (the first
/// fallback kills it); a filter refusing clock_gettime (EPERM), read with
/// PTRACE_SECCOMP_GET_FILTER, FAILs naming it (exit 1) and the process is
/// not left stopped; a filter allowing everything is OK.
#[test]
fn check_p_names_the_seccomp_mode() {
    use super::common::{build_c, is_root, skip, Workload};
    let prog = build_c("seccomp_mode", false, &[]);
    let mut strict = std::process::Command::new(&prog);
    strict.arg("strict");
    let w = Workload::start(strict);
    let (code, stdout, stderr) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0"]);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "process_seccomp").cloned();
    let row = row.unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(
        (code, row["kind"].as_str(), row["status"].as_str()),
        (1, Some("seccomp-strict"), Some("fail")),
        "{row}"
    );
    drop(w);
    if !is_root() || under_seccomp() {
        return skip("reading a process's seccomp filters needs root (CAP_SYS_ADMIN) outside seccomp");
    }
    // (name, status, detail, kind) of each seccomp row.
    let rows = |doc: &Value| -> Vec<(String, String, String, String)> {
        let checks = doc["checks"].as_array().unwrap().iter();
        let ours = checks.filter(|c| c["name"].as_str().unwrap().starts_with("process_seccomp"));
        let text =
            |c: &Value| [&c["name"], &c["status"], &c["detail"], &c["kind"]].map(|v| v.as_str().unwrap().to_string());
        ours.map(|c| text(c).into()).collect()
    };
    let mut filter = std::process::Command::new(&prog);
    filter.arg("filter");
    let w = Workload::start(filter);
    let (code, stdout, stderr) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0"]);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let rows_of = rows(&doc);
    let fail: Vec<_> = rows_of.iter().filter(|(_, s, _, _)| s == "fail").collect();
    assert_eq!(fail.len(), 1, "{rows_of:?}");
    let (name, _, detail, kind) = fail[0];
    assert_eq!(kind, "seccomp-denies-fallback", "{rows_of:?}");
    assert!(name.starts_with("process_seccomp:") && name.ends_with(":clock_gettime"), "{name}");
    // The filter's action and its errno (EPERM).
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == name.as_str()).unwrap();
    assert_eq!(
        (row["seccomp"]["action"].as_str(), row["seccomp"]["errno"].as_i64()),
        (Some("SECCOMP_RET_ERRNO"), Some(1)),
        "{detail}"
    );
    let ok: Vec<_> = rows_of.iter().filter(|(_, s, _, _)| s == "ok").collect();
    assert_eq!(ok.len(), 1, "{rows_of:?}");
    assert_eq!(ok[0].3, "seccomp-allows", "{rows_of:?}");
    // Needs typed data: the syscalls a row covers are only in the words.
    assert!(ok[0].2.contains("getrandom") && !ok[0].2.contains("clock_gettime"), "{rows_of:?}");
    assert_eq!(code, 1, "{stdout}");
    let_go(w.pid());
    drop(w);
    let mut allow = std::process::Command::new(&prog);
    allow.arg("allow");
    let w = Workload::start(allow);
    let doc = super::common::run_json(&["check", "-p", &w.pid().to_string(), "--trace", "0"]);
    let rows_of = rows(&doc);
    assert_eq!(rows_of.len(), 1, "{rows_of:?}");
    assert_eq!((rows_of[0].3.as_str(), rows_of[0].1.as_str()), ("seccomp-allows", "ok"), "{rows_of:?}");
    assert!(rows_of[0].2.contains("clock_gettime, "), "{rows_of:?}");
    let_go(w.pid());
    // A process without seccomp has no such row, not even while its threads
    // come and go: one that exits before its status is read is no thread
    // "under another mode" (a child, never this harness).
    let mut churn = std::process::Command::new(&prog);
    churn.arg("churn");
    let w = Workload::start(churn);
    let status = std::fs::read_to_string(format!("/proc/{}/status", w.pid())).unwrap();
    assert!(status.lines().any(|l| l == "Seccomp:\t0"), "{status}");
    let named = |c: &Value| c["name"].as_str().unwrap().starts_with("process_seccomp");
    for _ in 0..5 {
        let doc = super::common::run_json(&["check", "-p", &w.pid().to_string(), "--trace", "0"]);
        assert!(!doc["checks"].as_array().unwrap().iter().any(named), "{doc}");
    }
}

/// As nobody, `check -p` of a nobody's process under a filter says that
/// reading its rules needs root: INFO, not a failure.
#[test]
fn check_p_filter_as_nobody_says_it_needs_root() {
    use super::common::{build_c, is_root, run_as_nobody, skip, Workload};
    use std::os::unix::process::CommandExt;
    if !is_root() {
        return skip("dropping to nobody needs root");
    }
    let prog = build_c("seccomp_mode", false, &[]);
    let mut filter = std::process::Command::new(&prog);
    filter.arg("filter").uid(65534).gid(65534);
    let w = Workload::start(filter);
    let out = run_as_nobody(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let ours: Vec<_> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("process_seccomp"))
        .collect();
    assert_eq!(ours.len(), 1, "{doc}");
    assert_eq!(ours[0]["name"], "process_seccomp");
    assert_eq!((ours[0]["kind"].as_str(), ours[0]["status"].as_str()), (Some("seccomp-unread"), Some("info")), "{doc}");
    // The number of filters.
    assert_eq!(ours[0]["seccomp"]["filters"].as_u64(), Some(1), "{doc}");
}

/// The live filter is run with the process's own ABI: a 32-bit process's
/// filter refusing clock_gettime (i386's 265) FAILs
/// `process_seccomp:i386:clock_gettime` and allows clock_gettime64. And a
/// process stopped by SIGSTOP before the read stays stopped after it (the
/// detach hands back its group-stop), then runs on at SIGCONT.
#[test]
fn check_p_reads_a_32_bit_and_a_stopped_process_filter() {
    use super::common::{build_c, have_m32, is_root, skip, Workload};
    if !is_root() || under_seccomp() {
        return skip("reading a process's seccomp filters needs root (CAP_SYS_ADMIN) outside seccomp");
    }
    let state = |pid: i32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status.lines().find(|l| l.starts_with("State:")).unwrap().to_string()
    };
    let judged = |pid: i32| {
        let (code, stdout, stderr) = run(&["--json", "check", "-p", &pid.to_string(), "--trace", "0"]);
        let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        let rows: Vec<(String, String, String)> = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["name"].as_str().unwrap().starts_with("process_seccomp"))
            .map(|c| [&c["name"], &c["status"], &c["detail"]].map(|v| v.as_str().unwrap().to_string()).into())
            .collect();
        (code, rows)
    };
    let prog = build_c("seccomp_mode", false, &[]);
    let mut filter = std::process::Command::new(&prog);
    filter.arg("filter");
    let w = Workload::start(filter);
    let pid = nix::unistd::Pid::from_raw(w.pid());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    while !state(w.pid()).contains("(stopped)") {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let (code, rows) = judged(w.pid());
    assert_eq!(code, 1, "{rows:?}");
    assert!(rows.iter().any(|(n, s, _)| n.ends_with(":clock_gettime") && s == "fail"), "{rows:?}");
    // The detach wakes the thread to re-enter its group-stop: for a moment
    // it reads R (under load, for longer than the 2 s this once allowed:
    // the flake), then T again. Resumed, it would block in its read: S.
    // Either way R ends; no clock decides which.
    let settled = loop {
        let now = state(w.pid());
        if now.contains("(stopped)") || now.contains("(sleeping)") {
            break now;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(settled.contains("(stopped)"), "a stopped process was resumed: {settled}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", w.pid())).unwrap();
    assert!(status.contains("\nTracerPid:\t0\n"), "still traced: {status}");
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    while !state(w.pid()).contains("(sleeping)") {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(w);
    if !have_m32() {
        return skip("gcc -m32 (gcc-multilib) is missing");
    }
    let prog = build_c("seccomp_mode", true, &[]);
    let mut filter = std::process::Command::new(&prog);
    filter.arg("filter");
    let w = Workload::start(filter);
    let (code, rows) = judged(w.pid());
    assert_eq!(code, 1, "{rows:?}");
    let names: Vec<(&str, &str)> = rows.iter().map(|(n, s, _)| (n.as_str(), s.as_str())).collect();
    assert_eq!(names, [("process_seccomp:i386:clock_gettime", "fail"), ("process_seccomp:i386", "ok")]);
    assert!(rows[1].2.starts_with("i386: allowed: clock_gettime64, "), "{rows:?}");
    let_go(w.pid());
}

/// Filters are per thread: one installed by a second thread without TSYNC
/// is not the main thread's. `check -p` says so (INFO), and judges no
/// filter it did not read: no FAIL, no OK row.
#[test]
fn check_p_says_a_thread_has_other_filters() {
    use super::common::{build_c, Workload};
    let prog = build_c("seccomp_mode", false, &["-pthread"]);
    let mut thread = std::process::Command::new(&prog);
    thread.arg("thread");
    let w = Workload::start(thread);
    let doc = super::common::run_json(&["check", "-p", &w.pid().to_string(), "--trace", "0"]);
    let checks = doc["checks"].as_array().unwrap().iter();
    let ours: Vec<_> = checks.filter(|c| c["name"].as_str().unwrap().starts_with("process_seccomp")).collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    assert_eq!(
        (ours[0]["name"].as_str(), ours[0]["status"].as_str()),
        (Some("process_seccomp:other_threads"), Some("info"))
    );
    assert_eq!(ours[0]["kind"], "seccomp-other-threads", "{ours:?}");
    // The number of threads.
    assert_eq!(ours[0]["seccomp"]["threads"].as_u64(), Some(1), "{ours:?}");
}

/// `pid` was let go: no tracer attached, and not stopped (neither `t`
/// tracing stop nor `T` stopped); running or sleeping as it likes.
fn let_go(pid: i32) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let state = status.lines().find_map(|l| l.strip_prefix("State:")).unwrap().trim();
    assert!(!state.starts_with(['t', 'T']), "left stopped: {state}");
    assert!(status.contains("\nTracerPid:\t0\n"), "still traced: {status}");
}

/// Whether the tests run under seccomp (a container): the kernel refuses
/// PTRACE_SECCOMP_GET_FILTER to a filtered tracer.
fn under_seccomp() -> bool {
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    !own.lines().any(|l| l.starts_with("Seccomp:") && l.trim_end().ends_with('0'))
}

/// Issue 42: `check -p` runs every filter, as the kernel does, with the
/// instruction pointer the call may have. fixtures/secf.c: `manylast 512`
/// puts a KILL for clock_gettime on top of 512 filters that allow all (on
/// c980fa5, read the 512 oldest: `OK … allowed: clock_gettime`); `ipkill`
/// KILLs clock_gettime made from above 4 GiB (judged with ip 0 on
/// c980fa5: OK). Both FAIL `process_seccomp:x86_64:clock_gettime`, and
/// the ground truth: at its first call the process dies of SIGSYS.
#[test]
fn check_p_runs_every_filter_with_the_calls_instruction_pointer() {
    use super::common::{build_c, is_root, skip, Workload};
    use std::os::unix::process::ExitStatusExt;
    if !is_root() || under_seccomp() {
        return skip("reading a process's seccomp filters needs root (CAP_SYS_ADMIN) outside seccomp");
    }
    if vdsoctl::arch::HOST_ABI != Some(vdsoctl::arch::Abi::X86_64) {
        return skip("fixtures/secf.c's filters are x86_64's");
    }
    let prog = build_c("secf", false, &[]);
    for (args, by_ip) in [(&["manylast", "512"][..], false), (&["ipkill"][..], true)] {
        let mut cmd = std::process::Command::new(&prog);
        cmd.args(args);
        let mut w = Workload::start(cmd);
        let (code, stdout, stderr) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0"]);
        let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        let row = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "process_seccomp:x86_64:clock_gettime")
            .unwrap_or_else(|| panic!("{args:?}: no clock_gettime row: {doc:#}"));
        assert_eq!(
            (row["kind"].as_str(), row["status"].as_str()),
            (Some("seccomp-denies-fallback"), Some("fail")),
            "{row}"
        );
        assert_eq!(code, 1, "{args:?}: {doc:#}");
        assert_eq!(row["seccomp"]["by_ip"].as_bool(), Some(by_ip), "{row}");
        w.go();
        let status = w.child.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGSYS), "{args:?}: the kernel kills it at its first call");
    }
}

/// Issue 42: `check --seccomp-profile` judges a rule with conditions that
/// refuses (clock_gettime KILLed when arg0 == CLOCK_REALTIME: runc kills
/// the program at that call) as WARN naming the condition, and applies
/// `includes.minKernel` and `excludes.caps` as moby and the runtimes do
/// (on c980fa5: the conditional KILL was dropped, OK; the includes and
/// excludes ignored). Podman's default profile with such rules in front.
#[test]
fn conditional_denials_and_includes_excludes_are_applied() {
    let Some(profile) = default_profile() else { return };
    let with = |rules: Value| {
        let mut p = profile.clone();
        let syscalls = p["syscalls"].as_array_mut().unwrap();
        for (i, r) in rules.as_array().unwrap().iter().enumerate() {
            syscalls.insert(i, r.clone());
        }
        judged(&p)
    };
    let row = |rows: &[(String, String, String, String)], name: &str| {
        rows.iter().find(|r| r.0 == name).map(|r| (r.1.clone(), r.3.clone(), r.2.clone()))
    };
    let (_, rows) = with(serde_json::json!([{ "names": ["clock_gettime"], "action": "SCMP_ACT_KILL",
        "args": [{ "index": 0, "value": 0, "op": "SCMP_CMP_EQ" }] }]));
    let (status, kind, detail) =
        row(&rows, "seccomp_profile:x86_64:clock_gettime").unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!((status.as_str(), kind.as_str()), ("warn", "seccomp-conditional"), "{detail}");
    assert!(
        detail.contains("SCMP_ACT_KILL") && detail.contains("arg0"),
        "names the action and the condition: {detail}"
    );

    let kernel = vdsoctl::inspect::kernel::release().as_deref().and_then(vdsoctl::inspect::kernel::parse_version);
    let kernel = kernel.expect("this kernel's release");
    let reached = format!("{}.{}", kernel.0, kernel.1);
    for (min, refused) in [(reached.as_str(), true), ("99.0", false)] {
        let (_, rows) = with(serde_json::json!([{ "names": ["getrandom"], "action": "SCMP_ACT_ERRNO",
            "includes": { "minKernel": min } }]));
        let got = row(&rows, "seccomp_profile:x86_64:getrandom").map(|r| r.0);
        assert_eq!(got.as_deref() == Some("fail"), refused, "minKernel {min}: {rows:?}");
    }
    // Excluded for a container holding CAP_KILL (a default capability).
    let (_, rows) = with(serde_json::json!([{ "names": ["getcpu"], "action": "SCMP_ACT_KILL",
        "excludes": { "caps": ["CAP_KILL"] } }]));
    assert!(row(&rows, "seccomp_profile:x86_64:getcpu").is_none(), "excluded, so allowed: {rows:?}");
}
