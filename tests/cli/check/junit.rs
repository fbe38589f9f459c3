//! `check --format junit` read by real consumers (xml.etree, junitparser).

use super::*;

/// The outcome a JUnit reporter must show for a row's status.
fn junit_outcome(status: &str, strict: bool) -> &'static str {
    match status {
        "fail" => "failed",
        "warn" if strict => "failed",
        "skip" | "info" => "skipped",
        _ => "passed",
    }
}

/// `args` run twice, as JSON and as JUnit: junitparser reads the same rows
/// with the same outcomes as the JSON, suite by suite, and the table's
/// counts line says the same numbers for the binaries.
fn junit_agrees(args: &[&str], strict: bool) {
    let run_as = |format: &str| {
        let mut all = vec!["--format", format];
        all.extend_from_slice(args);
        let out = vdsoctl().args(&all).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code_json, json) = run_as("json");
    let (code_junit, xml) = run_as("junit");
    assert_eq!(code_json, code_junit, "{args:?}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let Some(read) = junitparser_read(&xml) else { return };
    let suites = read.as_array().unwrap();
    let mut expect = vec![("vdsoctl.check", "checks", "name")];
    if doc["binaries"].is_array() {
        expect.push(("vdsoctl.check.image", "binaries", "path"));
    }
    assert_eq!(suites.len(), expect.len(), "{read}");
    for (suite, (name, key, id)) in suites.iter().zip(expect) {
        assert_eq!(suite["name"], name);
        let rows = doc[key].as_array().unwrap();
        let cases = suite["cases"].as_array().unwrap();
        assert_eq!(cases.len(), rows.len(), "{name}");
        for (case, row) in cases.iter().zip(rows) {
            assert_eq!(case["name"], row[id], "{name}");
            let want = junit_outcome(row["status"].as_str().unwrap(), strict);
            assert_eq!(case["outcome"], want, "{name}: {row}");
        }
        if name == "vdsoctl.check.image" {
            let (_, table) = run_as("table");
            let n = |o: &str| cases.iter().filter(|c| c["outcome"] == o).count();
            let count = |st: &str| rows.iter().filter(|r| r["status"] == st).count();
            let line = table.lines().find(|l| l.contains(" ELF files in ")).unwrap_or_else(|| panic!("{table}"));
            assert!(
                line.contains(&format!("— {} FAIL, {} WARN, {} OK", count("fail"), count("warn"), count("ok"))),
                "{line}"
            );
            assert_eq!(n("failed"), count("fail") + if strict { count("warn") } else { 0 }, "{line}");
            assert_eq!(n("passed"), count("ok") + if strict { 0 } else { count("warn") }, "{line}");
        }
    }
}

/// JUnit read by a real consumer (junitparser) for the three kinds of
/// `check`: an image (with and without --strict), the host, and `-- CMD`.
#[test]
fn junit_read_by_junitparser() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cs = |flags: &[&str]| build_c("call_sites", false, flags);
    install(root, &cs(&[]), "/bin/libc_clock");
    install(root, &cs(&["-DRAW_LIBC"]), "/bin/raw_libc");
    install(root, &cs(&["-DVSYSCALL"]), "/bin/vsyscall");
    install(root, &cs(&["-DCPUTIME"]), "/bin/cputime");
    let root = root.to_str().unwrap();
    junit_agrees(&["check", "--image", root], false);
    junit_agrees(&["check", "--strict", "--image", root], true);
    junit_agrees(&["check", "--trace", "0"], false);
    if let Some(why) = crate::cli::common::missing_trace_facility() {
        return skip(&format!("check -- CMD: {why}"));
    }
    junit_agrees(&["check", "--", "/bin/true"], false);
}
