//! `check`: the host audit on this machine, on 32-bit and static targets,
//! and its Prometheus form through promtool (`host`); image trees and
//! foreign roots (`image`); commands and processes (`process`); JUnit read
//! by real consumers (`junit`); random bytes and time namespaces (`random`).
//! Here: the helpers more than one of them, or another module, uses.

use super::common::{
    binary, build_c, copy_executable, glibc_version, have_m32, is_root, kind_status, made_by_script, major_minor,
    own_vdso_exports, run, run_json, skip, vdsoctl, vdsoctl_path, Workload,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod host;
mod image;
mod junit;
mod process;
mod random;

fn check_named<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {doc}"))
}

/// The host audit's shape and its exit code's agreement with its verdict —
/// not this host's health: a CI machine with a TSC warning in its kernel
/// log must not turn the suite red.
/// `check -p PID` of a process that fails the audit (exit 1), its JSON.
fn check_process_failing(pid: i32) -> serde_json::Value {
    let (code, stdout, stderr) = run(&["--json", "check", "-p", &pid.to_string()]);
    assert_eq!(code, 1, "{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"))
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|p| p.is_file()))
        .ok_or(())
}

// ---- check --image, check -- CMD, and the runtime of check -p ----

static GO_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Build `fixtures/go/<name>` with golang-go into the cargo tmpdir, with a
/// private GOCACHE/GOPATH and no toolchain download. None when `go` is absent.
fn build_go(name: &str, cgo: bool) -> Option<PathBuf> {
    which("go").ok()?;
    let _guard = GO_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let out = tmp.join(format!("go-{name}"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/go").join(name);
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(&src)
        .env("GOCACHE", tmp.join("go/cache"))
        .env("GOPATH", tmp.join("go/path"))
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", if cgo { "1" } else { "0" })
        .status()
        .expect("go runs");
    assert!(status.success(), "go build of fixtures/go/{name} failed");
    Some(out)
}

/// `musl-gcc -static` of a fixture, None when musl-tools is absent.
fn build_musl_static(name: &str) -> Option<PathBuf> {
    which("musl-gcc").ok()?;
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-musl-static"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/{name}.c"));
    let built = Command::new("musl-gcc").args(["-static", "-O2", "-o"]).arg(&out).arg(&src).status().unwrap();
    assert!(built.success());
    Some(out)
}

/// `go env GOVERSION` (`go1.19.8`).
fn go_version() -> String {
    let out = Command::new("go").args(["env", "GOVERSION"]).env("GOTOOLCHAIN", "local").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Copy `from` into `root` at `at` (an image path like /usr/bin/x).
pub(super) fn install(root: &Path, from: &Path, at: &str) {
    let dest = root.join(at.trim_start_matches('/'));
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    copy_executable(from, &dest).unwrap_or_else(|e| panic!("copy {} → {}: {e}", from.display(), dest.display()));
}

/// The shared libraries `ldd` lists for `exe`, with their paths.
pub(super) fn ldd(exe: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(exe).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().filter(|w| w.starts_with('/')).map(PathBuf::from).collect()
}

/// A small image tree: a dynamic glibc program, its 32-bit build, a static
/// musl program, a Go program, a program that calls the vsyscall page
/// (clock_loop's `vsyscall` mode), a static glibc program, and the glibc
/// libraries the dynamic ones load. None when a tool is missing (a SKIP).
pub(super) fn image_tree() -> Option<(tempfile::TempDir, String)> {
    if !have_m32() {
        skip("gcc -m32 cannot build (install gcc-multilib)");
        return None;
    }
    let Some(musl) = build_musl_static("clock_once") else {
        skip("musl-gcc not installed (apt-get install musl-tools)");
        return None;
    };
    let Some(go) = build_go("hello", false) else {
        skip("go not installed (apt-get install golang-go)");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    install(root, &build_c("wait_ready", false, &[]), "/usr/bin/wait_ready");
    install(root, &build_c("wait_ready", true, &[]), "/usr/bin/wait_ready32");
    install(root, &build_c("wait_ready", false, &["-static"]), "/usr/bin/wait_ready_static");
    install(root, &musl, "/usr/bin/clock_once_musl");
    install(root, &go, "/usr/bin/hello_go");
    install(root, &build_c("clock_loop", false, &[]), "/opt/legacy/clock_loop");
    for lib in ldd(&build_c("wait_ready", false, &[])) {
        install(root, &lib, &lib.display().to_string());
    }
    Some((dir, go_version()))
}

/// The first listed site of a binary's finding of `kind` in an audit.
fn first_site<'a>(doc: &'a serde_json::Value, path: &str, kind: &str) -> &'a serde_json::Value {
    let b = binary(doc, path);
    let f = b["findings"].as_array().unwrap().iter().find(|f| f["kind"] == kind);
    &f.unwrap_or_else(|| panic!("{path}: no {kind} finding: {b}"))["sites"][0]
}

/// `python3 -c SCRIPT` with `xml` on its stdin: what a JUnit consumer made of it.
fn python_on(script: &str, xml: &str) -> std::process::Output {
    let mut py = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write;
    py.stdin.take().unwrap().write_all(xml.as_bytes()).unwrap();
    py.wait_with_output().unwrap()
}

/// What junitparser (PyPI), a JUnit consumer CI reporters are built on,
/// reads in a document: per suite, its name, the counts its attributes
/// say (checked by the script against its cases) and each case's name and
/// outcome (`failed`, `skipped`, `passed`), and a failure's type (its kind). None when junitparser is
/// missing (a SKIP; a panic under CI).
pub(super) fn junitparser_read(xml: &str) -> Option<serde_json::Value> {
    const READ: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure, Skipped
doc = JUnitXml.fromstring(sys.stdin.read())
out = []
for suite in doc:
    cases = []
    for case in suite:
        kinds = [type(r) for r in case.result]
        outcome = "failed" if Failure in kinds else "skipped" if Skipped in kinds else "passed"
        if outcome == "failed":
            # Typed by the finding's kind: message "FAIL KIND: detail",
            # the body the detail, "kind: KIND" and the hint.
            f = [r for r in case.result if isinstance(r, Failure)][0]
            head = "FAIL " + (f.type or "") + ": "
            assert f.type and f.message.startswith(head), (case.name, f.type, f.message)
            assert f.message[len(head):] in (f.text or ""), case.name
            assert ("\nkind: " + f.type) in (f.text or ""), case.name
            cases.append({"name": case.name, "outcome": outcome, "type": f.type})
            continue
        cases.append({"name": case.name, "outcome": outcome})
    n = lambda o: sum(1 for c in cases if c["outcome"] == o)
    assert suite.tests == len(cases), (suite.name, suite.tests, len(cases))
    assert suite.failures == n("failed"), (suite.name, suite.failures)
    assert suite.skipped == n("skipped"), (suite.name, suite.skipped)
    out.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                "skipped": suite.skipped, "cases": cases})
print(json.dumps(out))
"#;
    let probe = Command::new("python3").args(["-c", "import junitparser"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        skip(
            "python3 with junitparser not installed (python3 -m pip install junitparser): JUnit not read by a consumer",
        );
        return None;
    }
    let out = python_on(READ, xml);
    assert!(out.status.success(), "junitparser: {}\n{xml}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

// ---- random bytes: the vDSO getrandom of glibc 2.41 (fixtures/GETRANDOM.md) ----

/// Debian trixie's glibc 2.41 unpacked by `scripts/trixie-root.sh
/// target/trixie` (run here when absent and we are root); None (a SKIP,
/// a failure under CI) when it cannot be had.
pub(super) fn trixie_root() -> Option<PathBuf> {
    if !cfg!(target_arch = "x86_64") {
        skip("the trixie root is amd64");
        return None;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/trixie");
    let lib = dir.join("root/usr/lib/x86_64-linux-gnu");
    let have = || lib.join("libc.so.6").is_file() && lib.join("ld-linux-x86-64.so.2").is_file();
    if !made_by_script("trixie-root.sh", &dir, have) {
        return None;
    }
    Some(lib)
}

/// An image root: `getrandom_loop` (whose `raw` mode has a
/// syscall(SYS_getrandom) of its own) and `wait_ready` (none), with the
/// C library and loader given.
pub(super) fn random_root(libc: &Path, loader: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    install(root, &build_c("getrandom_loop", false, &["-pthread"]), "/usr/bin/getrandom_loop");
    install(root, &build_c("wait_ready", false, &[]), "/usr/bin/wait_ready");
    install(root, libc, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    install(root, loader, "/lib64/ld-linux-x86-64.so.2");
    dir
}

/// `--json` output whatever the exit status.
fn run_json_any(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (_, stdout, stderr) = run(&all);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout} {stderr}"))
}
