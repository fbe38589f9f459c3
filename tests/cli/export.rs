//! `check --export-json FILE --export-junit FILE`: both written beside
//! the table, in one run, for every form of `check`.

use super::common::{build_c, copy_executable, run};
use super::json::CheckDoc;

/// `--export-json` and `--export-junit` beside the table, in one run, for
/// every form of `check`: the JSON keeps the contract, junitparser reads
/// the JUnit, and both say what the table says.
#[test]
fn check_exports_json_and_junit_beside_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("usr/bin")).unwrap();
    copy_executable(&build_c("wait_ready", false, &[]), &tree.join("usr/bin/wait_ready")).unwrap();
    let profile = dir.path().join("profile.json");
    std::fs::write(
        &profile,
        r#"{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],"syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}"#,
    )
    .unwrap();
    let (json, xml) = (dir.path().join("r.json"), dir.path().join("r.xml"));
    let forms: [&[&str]; 4] = [
        &["--image", tree.to_str().unwrap()],
        &["--seccomp-profile", profile.to_str().unwrap()],
        &["--trace", "0"],
        &["--", "/bin/true"],
    ];
    for form in forms {
        let mut args = vec!["check", "--export-json", json.to_str().unwrap(), "--export-junit", xml.to_str().unwrap()];
        args.extend_from_slice(form);
        let (code, table, stderr) = run(&args);
        assert!([0, 1].contains(&code), "{form:?}: {table}{stderr}");
        assert!(table.contains("\nverdict: "), "the table on stdout: {table}");
        let text = std::fs::read_to_string(&json).unwrap();
        let c: CheckDoc = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{form:?}: {e}: {text}"));
        // --trace 0: what was not observed is said in the export as on the table.
        let unseen = form == ["--trace", "0"];
        assert_eq!(c.not_observed.is_some(), unseen, "{form:?}: {:?}", c.not_observed);
        let verdict = format!("verdict: {}", format!("{:?}", c.status).to_uppercase());
        assert!(table.contains(&verdict), "{form:?}: {verdict} in {table}");
        let junit = std::fs::read_to_string(&xml).unwrap();
        if let Some(read) = super::check::junitparser_read(&junit) {
            assert_eq!(read[0]["name"], "vdsoctl.check");
            assert_eq!(read[0]["tests"], c.checks.len(), "{form:?}: {read}");
        }
        std::fs::remove_file(&json).unwrap();
        std::fs::remove_file(&xml).unwrap();
    }
    // A path it must not write through: one line, exit 3.
    std::os::unix::fs::symlink("/etc/passwd", &json).unwrap();
    let (code, _, stderr) =
        run(&["check", "--seccomp-profile", profile.to_str().unwrap(), "--export-json", json.to_str().unwrap()]);
    assert_eq!((code, stderr.lines().count()), (3, 1), "{stderr}");
    assert!(stderr.contains("refusing to write"), "{stderr}");
}

/// A WARN in JUnit (a static program of no runtime the audit knows,
/// runtime-unknown): without --strict a passed case that carries the
/// property `vdsoctl.status=WARN`; with --strict the finding is raised to
/// FAIL, a failure typed by its kind in a case named `PATH: KIND`.
#[test]
fn junit_marks_a_warn_by_property_or_failure() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    let bare = build_c("bare_static", false, &["-static", "-nostdlib"]);
    copy_executable(&bare, &tree.join("bin/bare")).unwrap();
    let (xml, json) = (dir.path().join("r.xml"), dir.path().join("r.json"));
    let case = |strict: bool, name: &str| {
        let mut args = vec!["check", "--image", tree.to_str().unwrap()];
        args.extend(["--export-junit", xml.to_str().unwrap(), "--export-json", json.to_str().unwrap()]);
        if strict {
            args.push("--strict");
        }
        let (code, table, _) = run(&args);
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let junit = std::fs::read_to_string(&xml).unwrap();
        let at = junit.find(&format!("name=\"{name}\"")).unwrap_or_else(|| panic!("{name}: {junit}"));
        let end = at + junit[at..].find("</testcase>").unwrap();
        (code, table, doc, junit[at..end].to_string())
    };
    let (code, table, doc, plain) = case(false, "/bin/bare");
    assert_eq!(code, 0, "{table}");
    let f = &doc["binaries"][0]["findings"][0];
    assert_eq!((f["kind"].as_str(), f["status"].as_str()), (Some("runtime-unknown"), Some("warn")), "{doc}");
    assert!(table.contains("WARN    /bin/bare"), "{table}");
    assert!(plain.contains("<property name=\"vdsoctl.status\" value=\"WARN\"/>"), "{plain}");
    assert!(plain.contains("<system-out>WARN runtime-unknown: ") && !plain.contains("<failure"), "{plain}");
    let (code, table, doc, strict) = case(true, "/bin/bare: runtime-unknown");
    assert_eq!(code, 1, "{table}");
    let f = &doc["binaries"][0]["findings"][0];
    assert_eq!((f["kind"].as_str(), f["status"].as_str()), (Some("runtime-unknown"), Some("fail")), "{doc}");
    assert_eq!(f["raised"], "strict", "{doc}");
    assert!(table.contains("FAIL    /bin/bare") && table.contains("\nverdict: FAIL\n"), "{table}");
    assert!(strict.contains("<failure message=\"FAIL runtime-unknown: ") && !strict.contains("<property"), "{strict}");
    assert!(strict.contains(" type=\"runtime-unknown\">") && strict.contains("\nkind: runtime-unknown\n"), "{strict}");
}
