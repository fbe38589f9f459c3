//! `--baseline` as a gate beside the rest of the selection: what is as bad
//! as in the baseline is INFO "baselined" and what is new FAILs (issue 40),
//! judged by kind, whatever `--strict` raises. Both failed on the first
//! gate (the baseline compared after --strict, binaries by status only).

use super::common::{build_c, copy_executable, vdsoctl};
use serde_json::Value;
use std::path::Path;

/// `check --json ARGS`: (exit code, document).
fn check(args: &[&str]) -> (i32, Value) {
    let out = vdsoctl().arg("--json").arg("check").args(args).output().unwrap();
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), doc)
}

/// The findings of the one binary at `path`, as (kind, status).
fn findings(doc: &Value, path: &str) -> Vec<(String, String)> {
    let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == path).unwrap();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    b["findings"].as_array().unwrap().iter().map(|f| (s(&f["kind"]), s(&f["status"]))).collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

/// Put `exe` at `/bin/x` in `root`.
fn put(root: &Path, exe: &Path) {
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let _ = std::fs::remove_file(root.join("bin/x"));
    copy_executable(exe, &root.join("bin/x")).unwrap();
}

/// A binary that FAILed in the baseline for one kind (raw-clock-call-site)
/// and now FAILs for another (vsyscall-call-site) has something new: the
/// baseline keeps each binary's `kinds`, and a kind not among them is new.
#[test]
fn a_new_failing_kind_on_a_baselined_binary_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let (root, base) = (dir.path().join("img"), dir.path().join("base.json"));
    let (root_s, base_s) = (root.to_str().unwrap(), base.to_str().unwrap());
    put(&root, &build_c("call_sites", false, &["-DRAW_LIBC"]));
    let (code, _) = check(&["--image", root_s, "--save-baseline", base_s]);
    assert_eq!(code, 1);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    assert_eq!(saved["binaries"][0]["kinds"], serde_json::json!(["raw-clock-call-site"]), "{saved:#}");
    put(&root, &build_c("call_sites", false, &["-DVSYSCALL"]));
    let (code, doc) = check(&["--image", root_s, "--baseline", base_s]);
    let found = findings(&doc, "/bin/x");
    let vsyscall = found.iter().find(|(k, _)| k == "vsyscall-call-site").unwrap_or_else(|| panic!("{found:?}"));
    // Once: INFO, waived "baselined", the delta UNCHANGED FAIL → FAIL, exit 0.
    assert_eq!(vsyscall.1, "fail", "a new kind of failure is no baselined one: {:#}", doc["baseline"]);
    assert_eq!(code, 1);
}

/// `--strict` raises a WARN to FAIL after the policy; the baseline, saved
/// without it, holds the same WARN: unchanged, so INFO "baselined" and
/// exit 0, not "new: WARN → FAIL". And a baseline saved under `--strict`
/// holds the policy's WARN, not the raised FAIL (a plain run against it
/// would say FIXED of a file whose bytes did not change).
#[test]
fn strict_does_not_make_a_baselined_warn_new() {
    let dir = tempfile::tempdir().unwrap();
    let (root, base) = (dir.path().join("img"), dir.path().join("base.json"));
    let (root_s, base_s) = (root.to_str().unwrap(), base.to_str().unwrap());
    // A static program of no runtime the audit knows: runtime-unknown, WARN.
    put(&root, &build_c("bare_static", false, &["-static", "-nostdlib"]));
    let (code, doc) = check(&["--image", root_s, "--save-baseline", base_s]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(findings(&doc, "/bin/x"), [pair("runtime-unknown", "warn")]);
    let (code, doc) = check(&["--strict", "--image", root_s, "--baseline", base_s]);
    let f = &doc["binaries"][0]["findings"][0];
    // Once: FAIL raised new_since_baseline, the delta NEW WARN → FAIL, exit 1.
    assert_eq!(f["waived"]["by"], "baselined", "{f:#} {:#}", doc["baseline"]);
    assert_eq!(doc["baseline"]["new"], 0, "{:#}", doc["baseline"]);
    assert_eq!(code, 0);

    let strict_base = dir.path().join("strict.json");
    let (code, _) = check(&["--strict", "--image", root_s, "--save-baseline", strict_base.to_str().unwrap()]);
    assert_eq!(code, 1, "--strict fails the WARN");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&strict_base).unwrap()).unwrap();
    assert_eq!(saved["binaries"][0]["status"], "warn", "the policy's status, not --strict's: {saved:#}");
}
