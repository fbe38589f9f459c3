//! `check --format junit` read by real consumers (xml.etree, junitparser).

use super::*;

/// The outcome a JUnit reporter must show for a row's status (after the
/// gate: --strict has already made each WARN a FAIL in the rows).
fn junit_outcome(status: &str) -> &'static str {
    match status {
        "fail" => "failed",
        "skip" | "info" => "skipped",
        _ => "passed",
    }
}

/// The cases JUnit must have for the JSON's rows, as (name, outcome,
/// failure type): a check each; a failing finding of a binary each
/// (`PATH: KIND`, typed by its kind), and a binary with none, by its path.
fn expected_cases(doc: &serde_json::Value, key: &str) -> Vec<(String, String, Option<String>)> {
    let s = |v: &serde_json::Value| v.as_str().unwrap().to_string();
    let mut out = Vec::new();
    for row in doc[key].as_array().unwrap() {
        if key == "checks" {
            let typed = (row["status"] == "fail").then(|| s(&row["kind"]));
            out.push((s(&row["name"]), junit_outcome(row["status"].as_str().unwrap()).into(), typed));
            continue;
        }
        let path = s(&row["path"]);
        let failing: Vec<String> = row["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["status"] == "fail")
            .map(|f| s(&f["kind"]))
            .collect();
        if failing.is_empty() {
            out.push((path.clone(), junit_outcome(row["status"].as_str().unwrap()).into(), None));
        }
        for kind in failing {
            out.push((format!("{path}: {kind}"), "failed".into(), Some(kind)));
        }
    }
    out
}

/// `args` run twice, as JSON and as JUnit: junitparser reads the same rows
/// with the same outcomes and failure types as the JSON, suite by suite,
/// and the table's counts line says the same numbers for the binaries.
/// With `strict`, no row is left at WARN: each was raised to FAIL.
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
    if strict {
        let findings = doc["binaries"].as_array().into_iter().flatten().flat_map(|b| b["findings"].as_array().unwrap());
        let rows: Vec<&serde_json::Value> = doc["checks"].as_array().unwrap().iter().chain(findings).collect();
        assert!(rows.iter().all(|r| r["status"] != "warn"), "--strict leaves no WARN: {json}");
        assert!(rows.iter().filter(|r| r["raised"] == "strict").all(|r| r["status"] == "fail"), "{json}");
    }
    let Some(read) = junitparser_read(&xml) else { return };
    let suites = read.as_array().unwrap();
    let mut expect = vec![("vdsoctl.check", "checks")];
    if doc["binaries"].is_array() {
        expect.push(("vdsoctl.check.image", "binaries"));
    }
    assert_eq!(suites.len(), expect.len(), "{read}");
    for (suite, (name, key)) in suites.iter().zip(expect) {
        assert_eq!(suite["name"], name);
        let cases: Vec<(String, String, Option<String>)> = suite["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let s = |v: &serde_json::Value| v.as_str().unwrap().to_string();
                (s(&c["name"]), s(&c["outcome"]), c["type"].as_str().map(str::to_string))
            })
            .collect();
        assert_eq!(cases, expected_cases(&doc, key), "{name}: {xml}");
        if name == "vdsoctl.check.image" {
            let rows = doc[key].as_array().unwrap();
            let (_, table) = run_as("table");
            let n = |o: &str| cases.iter().filter(|c| c.1 == o).count();
            let count = |st: &str| rows.iter().filter(|r| r["status"] == st).count();
            let line = table.lines().find(|l| l.contains(" ELF files in ")).unwrap_or_else(|| panic!("{table}"));
            assert!(
                line.contains(&format!("— {} FAIL, {} WARN, {} OK", count("fail"), count("warn"), count("ok"))),
                "{line}"
            );
            // One failure per failing finding; a binary without one passes (OK, WARN).
            let fails: usize = rows
                .iter()
                .map(|r| r["findings"].as_array().unwrap().iter().filter(|f| f["status"] == "fail").count())
                .sum();
            assert_eq!(n("failed"), fails, "{line}");
            assert_eq!(n("passed"), count("ok") + count("warn"), "{line}");
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
