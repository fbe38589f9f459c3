//! `bench` integration tests: verdicts proven by perf counts on this host,
//! a libc that bypasses the vDSO (LD_PRELOAD shim), --verify, --max-ns and
//! the Prometheus exposition.

use super::common::{build_c, glibc_version, kind_status, major_minor, own_vdso_exports, run, skip, vdsoctl};
use serde_json::Value;

/// The result row for function/clock/path.
fn row<'a>(doc: &'a Value, function: &str, clock: Option<&str>, path: &str) -> &'a Value {
    doc["results"]
        .as_array()
        .expect("results array")
        .iter()
        .find(|r| r["function"] == function && r["clock"].as_str() == clock && r["path"] == path)
        .unwrap_or_else(|| panic!("no row {function} {clock:?} {path} in {doc}"))
}

/// Whether the syscall counts are perf-counted (else say why and skip).
fn counted(doc: &Value) -> bool {
    if doc["basis"] == "counted" {
        return true;
    }
    let why = doc["findings"].as_array().and_then(|f| f.first()).map(|f| f["message"].to_string());
    skip(&format!("perf cannot count syscalls here: {why:?}"));
    false
}

fn bench_json(extra_env: Option<(&str, &str)>, args: &[&str]) -> (i32, Value) {
    let mut cmd = vdsoctl();
    if let Some((k, v)) = extra_env {
        cmd.env(k, v);
    }
    let out = cmd.arg("--json").arg("bench").arg("--quick").args(args).output().expect("run vdsoctl");
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}) exit {code}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    (code, doc)
}

#[test]
fn monotonic_is_fast_and_thread_cputime_enters_the_kernel() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    let (code, doc) = bench_json(
        None,
        &["--functions", "clock_gettime", "--clocks", "monotonic,thread_cputime_id", "--paths", "libc,vdso,syscall"],
    );
    assert_eq!(code, 0, "{doc}");
    if !counted(&doc) {
        return;
    }
    for path in ["libc", "vdso"] {
        let mono = row(&doc, "clock_gettime", Some("CLOCK_MONOTONIC"), path);
        assert_eq!(mono["verdict"], "fast", "{mono}");
        assert!(mono["syscalls_per_call"].as_f64().unwrap() < 0.005, "{mono}");
        assert!(mono["ns_per_call"].as_f64().unwrap() > 0.0, "{mono}");
        let cpu = row(&doc, "clock_gettime", Some("CLOCK_THREAD_CPUTIME_ID"), path);
        assert_eq!(cpu["verdict"], "kernel-fallback", "{cpu}");
        let sc = cpu["syscalls_per_call"].as_f64().unwrap();
        assert!((0.995..1.005).contains(&sc), "{cpu}");
    }
    let sys = row(&doc, "clock_gettime", Some("CLOCK_MONOTONIC"), "syscall");
    assert!((0.995..1.005).contains(&sys["syscalls_per_call"].as_f64().unwrap()), "{sys}");
    // Unknown is null: no vsyscall row for clock_gettime, no error on success.
    assert!(doc["results"].as_array().unwrap().iter().all(|r| r["path"] != "vsyscall"));
    assert!(sys["error"].is_null());
}

#[test]
fn preloaded_libc_bypass_is_named_and_fails_max_ns() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    let shim = build_c("shim_monotonic_raw", false, &["-shared", "-fPIC", "-ldl"]);
    let env = Some(("LD_PRELOAD", shim.to_str().unwrap()));
    let args = ["--functions", "clock_gettime", "--clocks", "monotonic_raw,monotonic", "--paths", "libc,vdso,syscall"];
    // The lost fast path is a FAIL line, so exit 1 (even without --max-ns).
    let (code, doc) = bench_json(env, &args);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(kind_status(&doc["findings"][0]), ("clock-lost-fast-path", "fail"), "{doc}");
    let raw = row(&doc, "clock_gettime", Some("CLOCK_MONOTONIC_RAW"), "libc");
    assert_eq!(raw["verdict"], "libc-bypass", "{raw}");
    assert_eq!(row(&doc, "clock_gettime", Some("CLOCK_MONOTONIC"), "libc")["verdict"], "fast");
    if doc["basis"] == "counted" {
        assert!(raw["syscalls_per_call"].as_f64().unwrap() > 0.995, "{raw}");
        let vdso = row(&doc, "clock_gettime", Some("CLOCK_MONOTONIC_RAW"), "vdso");
        assert!(vdso["syscalls_per_call"].as_f64().unwrap() < 0.005, "{vdso}");
    }
    // Needs typed data: a bench finding's clock is only in its words.
    let message = doc["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("CLOCK_MONOTONIC_RAW"), "{message}");

    let mut with_max = args.to_vec();
    with_max.extend(["--max-ns", "100"]);
    let (code, doc) = bench_json(env, &with_max);
    assert_eq!(code, 1, "--max-ns 100 must fail under the shim: {doc}");
    let kinds: Vec<_> = doc["findings"].as_array().unwrap().iter().map(kind_status).collect();
    assert!(kinds.contains(&("clock-over-max-ns", "fail")), "{doc}");
}

/// Under a generous --max-ns the bench passes, and says what it measured:
/// one row per function and path asked (the [vsyscall] page's path for
/// gettimeofday where the page is mapped), each timed under the gate,
/// a fast path (where counted) syscall-free, the syscall path one syscall
/// a call, and no finding over the gate.
#[test]
fn max_ns_passes_on_a_healthy_host() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    let (code, doc) =
        bench_json(None, &["--functions", "clock_gettime,gettimeofday", "--clocks", "monotonic", "--max-ns", "100000"]);
    assert_eq!(code, 0, "{doc}");
    let vsyscall = std::fs::read_to_string("/proc/self/maps").unwrap().contains("[vsyscall]");
    let mut want = vec![];
    for (function, clock) in [("clock_gettime", Some("CLOCK_MONOTONIC")), ("gettimeofday", None)] {
        for path in ["libc", "vdso", "syscall", "vsyscall"] {
            if path != "vsyscall" || (vsyscall && function == "gettimeofday") {
                want.push((function.to_string(), clock.map(String::from), path.to_string()));
            }
        }
    }
    let results = doc["results"].as_array().expect("results");
    let got: Vec<_> = results
        .iter()
        .map(|r| {
            (
                r["function"].as_str().unwrap().into(),
                r["clock"].as_str().map(String::from),
                r["path"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(got, want, "{doc}");
    for r in results {
        let ns = r["ns_per_call"].as_f64().unwrap_or_else(|| panic!("no time: {r}"));
        assert!(ns > 0.0 && ns <= 100_000.0 && r["error"].is_null(), "{r}");
        let per_call = r["syscalls_per_call"].as_f64();
        match r["path"].as_str().unwrap() {
            // A fast verdict claims no more than was counted (whether the
            // host's clock is fast is the host's business, not a test's).
            "libc" | "vdso" if r["verdict"] == "fast" => {
                assert!(doc["basis"] != "counted" || per_call < Some(0.005), "{r}")
            }
            "syscall" => assert!(doc["basis"] != "counted" || per_call > Some(0.995), "{r}"),
            _ => assert!(r["verdict"].is_string(), "{r}"),
        }
    }
    let findings = doc["findings"].as_array().expect("findings");
    assert!(findings.iter().all(|f| f["severity"] != "fail"), "{doc}");
    assert!(findings.iter().all(|f| f["kind"] != "clock-over-max-ns"), "{doc}");
}

/// `--clocks` alone gates only those clocks: a CPU-time clock is an expected
/// syscall, so even `--max-ns 1` passes, and time, gettimeofday and getcpu
/// are neither measured nor failed beside it (issue 24).
#[test]
fn clocks_alone_gate_only_those_clocks() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    let (code, doc) = bench_json(None, &["--clocks", "PROCESS_CPUTIME_ID", "--max-ns", "1"]);
    assert_eq!(code, 0, "{doc}");
    let results = doc["results"].as_array().expect("results");
    assert!(!results.is_empty(), "{doc}");
    for r in results {
        assert_eq!(r["clock"], "CLOCK_PROCESS_CPUTIME_ID", "{r}");
    }
}

#[test]
fn verify_passes_on_this_host() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    let (code, doc) = bench_json(None, &["--verify"]);
    assert_eq!(code, 0, "{doc}");
    let checks = doc["verify"].as_array().expect("verify checks");
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, verify_names_for(&doc), "one check per function and clock measured, in order");
    assert!(checks.iter().all(|c| c["ok"] == true), "{checks:?}");
}

/// The `--verify` checks a bench must make for what its `results` measured:
/// each clock_gettime clock agrees across paths, gettimeofday and time too,
/// each clock_getres clock's resolutions are equal, getcpu agrees, getrandom
/// fills its 16 bytes, and the two invalid clock ids (10, 64) give EINVAL.
fn verify_names_for(doc: &Value) -> Vec<String> {
    let results = doc["results"].as_array().expect("results");
    let has = |f: &str| results.iter().any(|r| r["function"] == f);
    let clocks = |f: &str| {
        let mut seen: Vec<&str> = vec![];
        for c in results.iter().filter(|r| r["function"] == f).filter_map(|r| r["clock"].as_str()) {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        seen
    };
    let mut want: Vec<String> =
        clocks("clock_gettime").iter().map(|c| format!("clock_gettime({c}) agrees across paths")).collect();
    want.extend(["gettimeofday", "time"].into_iter().filter(|f| has(f)).map(|f| format!("{f} agrees across paths")));
    want.extend(clocks("clock_getres").iter().map(|c| format!("clock_getres({c}) equal")));
    want.extend(has("getcpu").then(|| "getcpu agrees across paths".to_string()));
    want.extend(has("getrandom").then(|| "getrandom fills 16 bytes on every path".to_string()));
    for f in ["clock_gettime", "clock_getres"].into_iter().filter(|f| has(f)) {
        want.extend([10, 64].map(|id| format!("{f}(invalid id {id}) gives EINVAL")));
    }
    assert!(want.len() >= 3 && clocks("clock_gettime").len() > 1, "the default bench measures every clock: {doc}");
    want
}

#[test]
fn prometheus_passes_promtool() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    if !super::common::have_promtool() {
        return skip("promtool is not installed (Debian: apt-get install prometheus)");
    }
    let (code, text, stderr) =
        run(&["--format", "prometheus", "bench", "--quick", "--clocks", "monotonic,thread_cputime_id"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("# TYPE vdsoctl_bench_seconds_per_call gauge"), "{text}");
    assert!(
        text.contains(
            "vdsoctl_bench_syscalls_per_call{function=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",path=\"vdso\"}"
        ) || !text.contains("syscalls_per_call{"),
        "{text}"
    );
    super::common::assert_promtool_accepts(&text);
}

#[test]
fn table_names_every_path_and_verdict() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    let (code, text, stderr) = run(&["bench", "--quick", "--functions", "clock_gettime,time", "--clocks", "monotonic"]);
    assert_eq!(code, 0, "{stderr}");
    for word in
        ["FUNCTION", "LIBC ns", "VDSO ns", "SYSCALL ns", "VERDICT", "MONOTONIC", "fast;", "syscalls/call: libc 0"]
    {
        assert!(text.contains(word), "{word} missing:\n{text}");
    }
    // One unit per table, in the header: no cell repeats it.
    let rows = text.lines().skip(2).take_while(|l| !l.starts_with("time per call"));
    assert!(!rows.into_iter().any(|l| l.contains(" ns") || l.contains("µs")), "{text}");
}

#[test]
fn bad_selections_are_usage_errors() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    for args in [
        &["bench", "--clocks", "bogus"][..],
        &["bench", "--functions", "nanosleep"][..],
        &["bench", "--paths", "ptrace"][..],
        &["bench", "--max-ns=0"][..],
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("—"), "a hint: {stderr}");
    }
}

/// getrandom through libc, the vDSO and the raw syscall: one row each; the
/// vDSO path counted at exactly 0 syscalls/call (its one key fetch is made
/// before counting), the syscall path at 1.00, and the libc path as the
/// host's glibc makes it (a syscall each call before 2.41: libc-syscall, a
/// WARN, exit 0).
#[test]
fn getrandom_rows_for_libc_vdso_and_syscall() {
    let _lock = super::common::system_wide_lock(); // timing: no system-wide trace beside it
    let exports = own_vdso_exports("__vdso_getrandom");
    let (code, doc) = bench_json(None, &["--functions", "getrandom", "--paths", "libc,vdso,syscall"]);
    assert_eq!(code, 0, "{doc}");
    let paths: Vec<&str> = doc["results"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["libc", "vdso", "syscall"], "{doc}");
    assert!(doc["results"].as_array().unwrap().iter().all(|r| r["function"] == "getrandom" && r["clock"].is_null()));
    let vdso = row(&doc, "getrandom", None, "vdso");
    if !exports {
        assert_eq!(vdso["verdict"], "not-offered", "{vdso}");
        assert!(vdso["ns_per_call"].is_null(), "{vdso}");
        return;
    }
    if !counted(&doc) {
        return;
    }
    assert_eq!(vdso["syscalls_per_call"].as_f64(), Some(0.0), "{vdso}");
    assert!(vdso["ns_per_call"].as_f64().unwrap() > 0.0, "{vdso}");
    let sys = row(&doc, "getrandom", None, "syscall");
    assert_eq!(format!("{:.2}", sys["syscalls_per_call"].as_f64().unwrap()), "1.00", "{sys}");
    let libc = row(&doc, "getrandom", None, "libc");
    let glibc = glibc_version();
    if glibc.is_empty() || major_minor(&glibc) >= (2, 41) {
        return;
    }
    assert_eq!(format!("{:.2}", libc["syscalls_per_call"].as_f64().unwrap()), "1.00", "{libc}");
    assert_eq!(libc["verdict"], "libc-syscall", "{libc}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{doc}");
    assert_eq!(kind_status(&findings[0]), ("random-syscall-host-libc", "warn"), "{doc}");
    // The glibc, both costs and the release that fixes it.
    let f = &findings[0];
    let (major, minor) = major_minor(&glibc);
    assert_eq!(f["libc_version"].as_str(), Some(format!("{major}.{minor}").as_str()), "{f}");
    let costs = &f["costs"];
    assert!(costs["libc_ns"].as_f64().is_some_and(|n| n > 0.0), "{f}");
    assert!(costs["vdso_ns"].as_f64().is_some_and(|n| n > 0.0), "{f}");
    assert_eq!(costs["fixed_in"], "2.41", "{f}");
    // The table says the same, with no clock wording.
    let (code, table, _) = run(&["bench", "--quick", "--functions", "getrandom", "--paths", "libc,vdso,syscall"]);
    assert_eq!(code, 0, "{table}");
    assert!(table.contains("libc-syscall; ") && table.contains("syscalls/call: libc 1, vdso 0, syscall 1"), "{table}");
    assert!(!table.to_lowercase().contains("clock read"), "{table}");
}

/// An unknown function is a usage error naming every function bench knows.
#[test]
fn unknown_function_names_the_known_ones() {
    let (code, stdout, stderr) = run(&["bench", "--functions", "nosuch"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "vdsoctl: invalid value 'nosuch' for '--functions <LIST>': unknown function \"nosuch\" — use one of \
         clock_gettime, gettimeofday, time, clock_getres, getcpu, getrandom"
    );
    assert!(stdout.is_empty(), "{stdout}");
}
