//! `check`: the host audit on this machine, on 32-bit and static targets,
//! and its Prometheus form through promtool.

use super::common::{
    build_c, copy_executable, glibc_version, have_m32, is_root, made_by_script, major_minor, own_vdso_exports, run,
    run_json, skip, vdsoctl, vdsoctl_path, Workload,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

#[test]
fn exit_code_matches_the_verdict_with_keys() {
    let _lock = super::common::system_wide_lock();
    let (code, stdout, stderr) = run(&["check"]);
    let verdict =
        stdout.lines().find_map(|l| l.strip_prefix("verdict: ")).unwrap_or_else(|| panic!("{stdout}{stderr}"));
    assert_eq!(code, if verdict.starts_with("FAIL") { 1 } else { 0 }, "{stdout}{stderr}");
    let out = super::common::vdsoctl().args(["--json", "check"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = doc["status"].as_str().unwrap().to_ascii_lowercase();
    assert!(["ok", "warn", "fail"].contains(&status.as_str()), "{doc}");
    assert_eq!(out.status.code(), Some(if status == "fail" { 1 } else { 0 }), "{doc}");
    for c in doc["checks"].as_array().unwrap() {
        for key in ["name", "status", "detail", "hint"] {
            assert!(c.get(key).is_some(), "check lacks {key}: {c}");
        }
    }
    assert_eq!(check_named(&doc, "vdso_mapped")["status"], "ok");
    assert_eq!(check_named(&doc, "auxv_sysinfo_ehdr")["status"], "ok");
    let symbols = check_named(&doc, "vdso_symbols");
    assert_eq!(symbols["status"], "ok", "{symbols}");
    assert!(symbols["detail"].as_str().unwrap().contains("__vdso_clock_gettime"), "{symbols}");
    let libc = check_named(&doc, "libc")["detail"].as_str().unwrap().to_string();
    assert!(libc.contains(&format!("runs on glibc {} (", glibc_version())), "{libc}");
    let cs = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap();
    assert!(check_named(&doc, "clocksource")["detail"].as_str().unwrap().contains(cs.trim()));
}

/// The host check's getrandom row on this host: the kernel's vDSO offers
/// it or not (read from `vdsoctl dump`), and the host glibc reads it from
/// there from 2.41 (read from getconf): WARN with the glibc named and both
/// costs, which exits 0, and 1 with --strict.
#[test]
fn host_check_judges_getrandom_by_kernel_and_glibc() {
    let _lock = super::common::system_wide_lock();
    let exports = own_vdso_exports("__vdso_getrandom");
    let glibc = glibc_version();
    let (code, stdout, stderr) = run(&["--json", "check", "--trace", "0"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let symbols = check_named(&doc, "vdso_symbols")["detail"].as_str().unwrap().to_string();
    assert_eq!(symbols.contains(" __vdso_getrandom "), exports, "{symbols}");
    let g = check_named(&doc, "getrandom");
    let detail = g["detail"].as_str().unwrap();
    let status = g["status"].as_str().unwrap();
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    if !exports {
        assert_eq!(status, "info", "{g}");
        assert!(detail.starts_with("this kernel's vDSO has no getrandom (the x86_64 vDSO has it from 6.11)"), "{g}");
        return;
    }
    if major_minor(&glibc) >= (2, 41) {
        assert_eq!(status, "ok", "{g}");
        return;
    }
    assert_eq!(status, "warn", "{g}");
    let want = format!(
        "the vDSO offers __vdso_getrandom (x86_64 since 6.11); glibc {glibc} makes the getrandom syscall on every call, though this kernel's vDSO serves it (libc "
    );
    assert!(detail.starts_with(&want), "{g}");
    assert!(detail.contains(" ns, vDSO "), "{g}");
    if doc["checks"].as_array().unwrap().iter().any(|c| c["detail"].as_str().unwrap().contains("[counted]")) {
        assert!(detail.ends_with("; syscalls/call libc 1.00, vDSO 0.00 here)"), "{g}");
    }
    assert_eq!(
        g["hint"],
        "glibc 2.41 reads it from the vDSO; upgrade the C library (a static binary keeps the one it was built with)"
    );
    // WARN is exit 0 unless --strict (DESIGN "Exit codes"); FAIL is 1 either way.
    let overall = doc["status"].as_str().unwrap();
    assert_ne!(overall, "ok", "a WARN row makes the host check WARN at least: {doc}");
    assert_eq!(code, if overall == "fail" { 1 } else { 0 }, "{stderr}");
    let (strict, _, stderr) = run(&["check", "--trace", "0", "--strict", "--quiet"]);
    assert_eq!(strict, 1, "--strict fails on the WARN: {stderr}");
}

#[test]
fn thirty_two_bit_process_is_named() {
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let w = Workload::start(Command::new(build_c("wait_ready", true, &[])));
    // --trace 0: a clean observation would clear the 32-bit INFO to OK.
    let doc = run_json(&["check", "-p", &w.pid().to_string(), "--trace", "0"]);
    assert_eq!(doc["process"]["pid"], w.pid());
    assert!(doc["process"]["comm"].as_str().unwrap().starts_with("wait_ready"), "{}", doc["process"]);
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap();
    assert!(detail.contains("32-bit i386"), "{detail}");
    assert!(detail.contains("glibc"), "{detail}");
    // Facts, not a defect: INFO, which --strict passes.
    assert_eq!(bin["status"], "info");
    assert_eq!(check_named(&doc, "process_vdso_mapped")["status"], "ok");
    assert_eq!(check_named(&doc, "process_auxv_sysinfo_ehdr")["status"], "ok");
    let symbols = check_named(&doc, "process_vdso_symbols");
    assert_eq!(symbols["status"], "ok", "{symbols}");
    assert!(symbols["detail"].as_str().unwrap().contains("__vdso_clock_gettime64"), "{symbols}");
}

#[test]
fn static_binary_is_named() {
    let w = Workload::start(Command::new(build_c("wait_ready", false, &["-static"])));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap().to_string();
    assert!(detail.contains("statically linked"), "{detail}");
    // This glibc (≥ 2.31) looks the vDSO up in static binaries: no warning.
    assert!(detail.contains("static glibc that looks the vDSO up"), "{detail}");
    assert_eq!(bin["status"], "ok", "{bin}");
}

#[test]
fn prometheus_passes_promtool() {
    if !super::common::have_promtool() {
        return skip("promtool not installed (apt-get install prometheus)");
    }
    // --trace 0: the other processes of this host have no say here.
    let (code, stdout, stderr) = run(&["--format", "prometheus", "check", "--trace", "0"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("vdsoctl_check_status{check=\"host_trace\"} -1\n"), "not observed: {stdout}");
    assert!(stdout.contains("# TYPE vdsoctl_check_status gauge"), "{stdout}");
    assert!(stdout.contains("vdsoctl_check_status{check=\"clocksource\"} 0"), "{stdout}");
    assert!(stdout.contains("vdsoctl_check_failed 0"), "{stdout}");
    assert!(
        stdout.contains(
            "vdsoctl_bench_syscalls_per_call{function=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",path=\"libc\"} 0"
        ),
        "{stdout}"
    );
    super::common::assert_promtool_accepts(&stdout);
}

#[test]
fn non_root_runs_what_it_can() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    let out = super::common::run_as_nobody(&["--json", "check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = check_named(&doc, "kernel_log");
    assert_eq!(log["status"], "skip", "{log}");
    assert!(log["detail"].as_str().unwrap().contains("needs root"), "{log}");
    // Nothing can be observed without privileges: said, never OK, never exit 4.
    let t = check_named(&doc, "host_trace");
    assert_eq!(t["status"], "info", "{t}");
    assert!(t["detail"].as_str().unwrap().starts_with("not observed (needs root or CAP_BPF + CAP_PERFMON)"), "{t}");
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|p| p.is_file()))
        .ok_or(())
}

#[test]
fn libc_bypass_under_preload_shim_fails_naming_the_clock() {
    let shim = build_c("shim_monotonic_raw", false, &["-shared", "-fPIC", "-ldl"]);
    let out =
        super::common::vdsoctl().args(["--json", "check", "--trace", "0"]).env("LD_PRELOAD", &shim).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "check must fail under the shim: {stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "fail");
    let raw = check_named(&doc, "clock:MONOTONIC_RAW");
    assert_eq!(raw["status"], "fail", "{raw}");
    let detail = raw["detail"].as_str().unwrap();
    assert!(detail.contains("CLOCK_MONOTONIC_RAW") && detail.contains("the vDSO is bypassed"), "{detail}");
    assert!(raw["hint"].as_str().unwrap().contains("LD_PRELOAD"), "{raw}");
    // The other clocks are untouched by the shim.
    assert_eq!(check_named(&doc, "clock:MONOTONIC")["status"], "ok");
    let failed: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, vec!["clock:MONOTONIC_RAW"]);
}

#[test]
fn max_ns_fails_a_fast_clock_over_budget() {
    // 1 ns is below any real call: every should-be-fast clock crosses it.
    let (code, stdout, _) = run(&["--json", "check", "--max-ns", "1", "--trace", "0"]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mono = check_named(&doc, "clock:MONOTONIC");
    assert_eq!(mono["status"], "fail");
    assert!(mono["detail"].as_str().unwrap().contains("over --max-ns 1"), "{mono}");
    // CPU-time clocks are expected syscalls; --max-ns does not apply to them.
    assert_eq!(check_named(&doc, "clock:THREAD_CPUTIME_ID")["status"], "ok");
}

#[test]
fn trace_option_fails_a_process_that_bypasses_the_vdso() {
    if !is_root() {
        return skip("check --trace needs root (tracefs)");
    }
    let _lock = super::common::system_wide_lock();
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["raw", "4", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (code, stdout, stderr) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "process_trace");
    assert_eq!(t["status"], "fail", "{t}");
    let detail = t["detail"].as_str().unwrap();
    assert!(detail.contains("clock_gettime CLOCK_MONOTONIC_RAW"), "{detail}");
    assert!(!detail.contains("CLOCK_REALTIME"), "no stray clocks: {detail}");

    // A libc loop of a vDSO clock makes no clock syscalls: OK. (clock_loop's
    // binary still fails: its `vsyscall` mode calls the fixed page.)
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["libc", "1", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (_, stdout, _) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(check_named(&doc, "process_trace")["status"], "ok", "{doc}");
    let bin = check_named(&doc, "process_binary");
    assert_eq!(bin["status"], "fail", "{bin}");
    assert!(bin["detail"].as_str().unwrap().contains("calls the fixed [vsyscall] page"), "{bin}");

    // Without -p, --trace is the host window's length, with units.
    let (code, stdout, stderr) = run(&["--json", "check", "--trace", "300ms"]);
    assert!(code == 0 || code == 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(check_named(&doc, "host_trace")["detail"].as_str().unwrap().starts_with("observed 3"), "{doc}");
}

#[test]
fn static_musl_binary_is_named() {
    if which("musl-gcc").is_err() {
        return skip("musl-gcc not installed (apt-get install musl-tools)");
    }
    let w = Workload::start(Command::new(build_musl_static("clock_once").unwrap()));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let detail = check_named(&doc, "process_binary")["detail"].as_str().unwrap().to_string();
    assert!(detail.contains("statically linked; musl: expected to look the vDSO up"), "{detail}");
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

fn binary<'a>(doc: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    doc["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["path"] == path)
        .unwrap_or_else(|| panic!("no binary {path}: {doc}"))
}

/// The verdicts every audit of the tree must give, host-side or inside it.
fn assert_tree_verdicts(doc: &serde_json::Value, go: &str) {
    let glibc = glibc_version();
    let expect = [
        // path, class, machine, linkage, runtime, runtime_version, status
        ("/opt/legacy/clock_loop", "ELF64", "x86_64", "dynamic", "glibc", Some(glibc.as_str()), "fail"),
        ("/usr/bin/wait_ready32", "ELF32", "i386", "dynamic", "glibc", None, "info"),
        ("/usr/bin/wait_ready", "ELF64", "x86_64", "dynamic", "glibc", Some(glibc.as_str()), "ok"),
        ("/usr/bin/wait_ready_static", "ELF64", "x86_64", "static", "glibc", None, "ok"),
        ("/usr/bin/clock_once_musl", "ELF64", "x86_64", "static", "musl", None, "ok"),
        ("/usr/bin/hello_go", "ELF64", "x86_64", "static", "go", Some(go), "ok"),
    ];
    for (path, class, machine, linkage, runtime, version, status) in expect {
        let b = binary(doc, path);
        assert_eq!(b["class"], class, "{b}");
        assert_eq!(b["machine"], machine, "{b}");
        assert_eq!(b["linkage"], linkage, "{b}");
        assert_eq!(b["runtime"], runtime, "{b}");
        assert_eq!(b["runtime_version"].as_str(), version, "{b}");
        assert_eq!(b["status"], status, "{b}");
    }
    let legacy = binary(doc, "/opt/legacy/clock_loop")["detail"].as_str().unwrap().to_string();
    assert!(legacy.contains("calls the fixed [vsyscall] page (1 site(s)"), "{legacy}");
    let m32 = binary(doc, "/usr/bin/wait_ready32")["detail"].as_str().unwrap().to_string();
    assert!(m32.starts_with("32-bit: the compat vDSO (vdso32) serves its clock reads, a little slower"), "{m32}");
    assert!(binary(doc, "/usr/bin/hello_go")["detail"]
        .as_str()
        .unwrap()
        .contains("the Go runtime is expected to call the vDSO itself"));
    assert!(binary(doc, "/usr/bin/wait_ready")["interpreter"].as_str().unwrap().contains("ld-linux"));
    // Failures first, then warnings.
    let statuses: Vec<&str> =
        doc["binaries"].as_array().unwrap().iter().map(|b| b["status"].as_str().unwrap()).collect();
    let rank = |s: &str| match s {
        "fail" => 0,
        "warn" => 1,
        _ => 2,
    };
    assert!(statuses.windows(2).all(|w| rank(w[0]) <= rank(w[1])), "{statuses:?}");
    assert_eq!(doc["status"], "fail");
}

#[test]
fn image_tree_verdicts_and_exit_code() {
    let Some((dir, go)) = image_tree() else { return };
    let root = dir.path().to_str().unwrap();
    let out = vdsoctl().args(["--json", "check", "--image", root]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_tree_verdicts(&doc, &go);
    // The C library itself is listed as a library with its version.
    let libc = doc["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["path"].as_str().unwrap().ends_with("/libc.so.6"))
        .unwrap();
    assert_eq!(libc["kind"], "library");
    assert_eq!(libc["runtime_version"].as_str(), Some(glibc_version().as_str()));

    // The table: failures first, with the reason and the hint; no progress
    // on stderr when it is not a terminal.
    let (code, table, stderr) = run(&["check", "--image", root]);
    assert_eq!(code, 1);
    assert_eq!(stderr, "");
    let fail_row = table.lines().position(|l| l.contains("FAIL") && l.contains("/opt/legacy/clock_loop")).unwrap();
    let info_row = table.lines().position(|l| l.contains("INFO") && l.contains("/usr/bin/wait_ready32")).unwrap();
    assert!(fail_row < info_row, "{table}");
    assert!(table.contains("FAIL /opt/legacy/clock_loop: rebuild it"), "{table}");
    assert!(table.contains("verdict: FAIL"), "{table}");

    // Prometheus: binaries by status, accepted by promtool.
    if super::common::have_promtool() {
        let (_, text, _) = run(&["--format", "prometheus", "check", "--image", root]);
        assert!(text.contains("vdsoctl_check_binaries{status=\"fail\"} 1\n"), "{text}");
        assert!(text.contains("vdsoctl_check_binaries{status=\"info\"} 1\n"), "{text}");
        assert!(text.contains("vdsoctl_check_binaries{status=\"warn\"} 0\n"), "{text}");
        super::common::assert_promtool_accepts(&text);
    }

    // One filesystem: a program on another mount under ROOT is not audited.
    if is_root() {
        std::fs::create_dir_all(dir.path().join("mnt/other")).unwrap();
        let script = format!(
            "mount -t tmpfs none {root}/mnt/other && cp {root}/usr/bin/wait_ready {root}/mnt/other/ && exec {} --json check --image {root}",
            vdsoctl_path().display()
        );
        let out = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(doc["image"]["skipped"], serde_json::json!(["/mnt/other"]), "{}", doc["image"]);
        assert!(doc["binaries"].as_array().unwrap().iter().all(|b| b["path"] != "/mnt/other/wait_ready"));
    }

    // Without the vsyscall caller only WARNs are left (the 32-bit program is
    // INFO; the image's glibc 2.36 random-bytes row WARNs): exit 0, and 1 with --strict.
    std::fs::remove_file(dir.path().join("opt/legacy/clock_loop")).unwrap();
    let (code, stdout, stderr) = run(&["check", "--image", root]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.lines().last(), Some("verdict: WARN"), "{stdout}");
    // The verdict line says what the exit status says.
    let (code, stdout, _) = run(&["check", "--strict", "--image", root]);
    assert_eq!(code, 1);
    assert!(stdout.lines().last().unwrap().starts_with("verdict: FAIL"), "{stdout}");

    // Not a directory: exit 3, one line.
    let (code, _, stderr) = run(&["check", "--image", "/etc/hostname"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// `bwrap` as a container runtime would run vdsoctl in the image: the tree
/// as `/`, fresh /proc and /dev, the host's /sys read-only, its own pid
/// namespace. (unshare --root has no /sys, which tracing needs.)
fn in_container(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new("bwrap")
        .args(["--bind"])
        .arg(root)
        .args(["/", "--proc", "/proc", "--dev", "/dev", "--ro-bind", "/sys", "/sys", "--unshare-pid", "--"])
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("bwrap runs")
}

/// doc/GUIDE.md's container recipe, as written: vdsoctl copied into the image
/// (with the libraries `ldd` lists, so no second, static build is needed),
/// then `vdsoctl check --image /` and `vdsoctl check -- <smoke test>` run
/// inside it.
#[test]
fn container_recipe_runs_inside_the_image() {
    if !is_root() {
        return skip("bwrap into the image tree needs root");
    }
    if which("bwrap").is_err() {
        return skip("bwrap not installed (apt-get install bubblewrap)");
    }
    let Some((dir, go)) = image_tree() else { return };
    let root = dir.path();
    install(root, &vdsoctl_path(), "/usr/local/bin/vdsoctl");
    for lib in ldd(&vdsoctl_path()) {
        install(root, &lib, &lib.display().to_string());
    }
    install(root, &build_c("clock_loop", false, &[]), "/usr/bin/clock_loop");
    // RUN vdsoctl check --image /
    let out = in_container(root, &["/usr/local/bin/vdsoctl", "--json", "check", "--image", "/"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_tree_verdicts(&doc, &go);
    assert_eq!(doc["image"]["excluded"], serde_json::json!(["/usr/local/bin/vdsoctl"]), "vdsoctl leaves itself out");
    assert!(doc["binaries"].as_array().unwrap().iter().all(|b| b["path"] != "/usr/local/bin/vdsoctl"));
    // RUN vdsoctl check -- <smoke test>: a libc loop passes, a raw syscall loop fails.
    let out =
        in_container(root, &["/usr/local/bin/vdsoctl", "check", "--", "/usr/bin/clock_loop", "libc", "1", "1000"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out =
        in_container(root, &["/usr/local/bin/vdsoctl", "check", "--", "/usr/bin/clock_loop", "raw", "11", "1000"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("(clock_loop) clock_gettime CLOCK_TAI ×1,000"), "{stdout}");
}

#[test]
fn command_passes_fails_and_hands_back_its_status() {
    if !is_root() {
        return skip("check -- CMD needs root (tracefs)");
    }
    let lp = build_c("clock_loop", false, &[]);
    let lp = lp.to_str().unwrap();
    // A libc loop of a vDSO clock: OK, exit 0.
    let doc = run_json(&["check", "--", lp, "libc", "1", "5000"]);
    assert_eq!(doc["status"], "ok", "{doc}");
    assert_eq!(doc["command"]["exit_status"]["code"], 0, "{doc}");
    assert_eq!(check_named(&doc, "command_trace")["status"], "ok");
    // 5,000 raw clock_gettime(CLOCK_TAI): FAIL naming process, clock and count.
    let (code, stdout, stderr) = run(&["--json", "check", "--", lp, "raw", "11", "5000"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let pid = doc["command"]["pid"].as_i64().unwrap();
    let t = check_named(&doc, "command_trace");
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["detail"].as_str().unwrap().contains(&format!("pid {pid} (clock_loop) clock_gettime CLOCK_TAI ×5,000")),
        "{t}"
    );
    // The hint names the command with shell quoting: pasted, the shell
    // hands `trace` the same words `check` got (here a `sh -c` script).
    let script = format!("{lp} raw 11 100 > /dev/null; exit 0");
    let (code, stdout, stderr) = run(&["--json", "check", "--", "sh", "-c", &script]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let hint = check_named(&doc, "command_trace")["hint"].as_str().unwrap().to_string();
    let pasted = hint.split('`').nth(1).and_then(|h| h.strip_prefix("vdsoctl trace --sites -- ")).expect(&hint);
    let words = Command::new("sh").args(["-c", &format!("printf '%s\\n' {pasted}")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&words.stdout), format!("sh\n-c\n{script}\n"), "{hint}");
    assert!(check_named(&doc, "command")["detail"].as_str().unwrap().contains(&format!("`sh -c '{script}'`")), "{doc}");
    // Calls into the vsyscall page fail too; the hint says what such a
    // caller is (no raw syscall() to look for), what to rebuild and the
    // audit that names its function.
    let (code, stdout, _) = run(&["--json", "check", "--", lp, "vsyscall", "0", "100"]);
    assert_eq!(code, 1);
    assert!(stdout.contains("(clock_loop) [vsyscall] time ×100"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let hint = check_named(&doc, "command_trace")["hint"].as_str().unwrap().to_string();
    assert!(hint.starts_with("legacy code calling the fixed [vsyscall] address"), "{hint}");
    assert!(hint.contains(&format!("rebuild `{lp}` against a current libc or runtime")), "{hint}");
    let dir = Path::new(lp).parent().unwrap().display().to_string();
    assert!(hint.ends_with(&format!("`vdsoctl check --image {dir}` names the function that calls it")), "{hint}");
    assert!(!hint.contains("raw syscall"), "{hint}");
    // CPU-time clocks are expected syscalls: still OK.
    let (code, _, stderr) = run(&["check", "--", lp, "raw", "3", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    // The command's own failure is the exit status, and is named.
    let (code, stdout, _) = run(&["--json", "check", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code, 7);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(check_named(&doc, "command")["status"], "fail");
    assert!(check_named(&doc, "command")["detail"].as_str().unwrap().contains("exited with status 7"));
    let (code, stdout, _) = run(&["check", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(code, 128 + 9, "{stdout}");
    assert!(stdout.contains("was killed by signal 9"), "{stdout}");
    // A command that does not exist: could not start it, exit 3.
    let (code, _, stderr) = run(&["check", "--", "/nonexistent/smoke"]);
    assert_eq!(code, 3, "{stderr}");
}

/// In a PID namespace `check -- CMD` counts with the BPF engine (no
/// fallback note), and names the command's process by the namespace's pid.
#[test]
fn command_in_a_pid_namespace_is_counted_with_its_own_pids() {
    if !is_root() {
        return skip("unshare -p needs root");
    }
    let bin = build_c("clock_loop", false, &[]);
    let out = Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "sh", "-c"])
        .arg(format!("{} check -- sh -c 'exec {} raw 1 500'", vdsoctl_path().display(), bin.display()))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "a bypassed clock is a FAIL: {stdout}{stderr}");
    assert!(!stderr.contains("perf engine") && !stderr.contains("--engine"), "{stderr}");
    // vdsoctl is pid 2 there (sh is 1), so the command is a small pid of its own.
    let pid: i32 =
        stdout.split(": pid ").nth(1).and_then(|t| t.split(' ').next()).and_then(|p| p.parse().ok()).unwrap();
    assert!(pid > 2 && pid < 100, "{stdout}");
    assert!(stdout.contains(&format!("(pid {pid})")), "the heading names the same pid: {stdout}");
    assert!(stdout.contains("clock_gettime CLOCK_MONOTONIC ×500"), "{stdout}");
}

#[test]
fn process_runtime_go_static_and_cgo() {
    let (Some(plain), Some(cgo)) = (build_go("hello", false), build_go("cgo", true)) else {
        return skip("go not installed (apt-get install golang-go)");
    };
    let go = go_version();
    let w = Workload::start(Command::new(&plain));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("statically linked; Go {go}: the Go runtime is expected to call the vDSO itself")),
        "{detail}"
    );
    assert_eq!(bin["status"], "ok");
    let w = Workload::start(Command::new(&cgo));
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap();
    assert!(detail.contains("dynamic (/lib64/ld-linux-x86-64.so.2)"), "{detail}");
    assert!(
        detail.contains(&format!("Go {go}, with cgo: the Go runtime is expected to call the vDSO itself")),
        "{detail}"
    );
    assert_eq!(bin["status"], "ok");
}

#[test]
fn process_runtime_through_ld_so_and_valgrind() {
    let prog = build_c("wait_ready", false, &[]);
    let loader = ldd(&prog).into_iter().find(|p| p.to_string_lossy().contains("ld-linux")).expect("ld.so");
    let mut cmd = Command::new(&loader);
    cmd.arg(&prog);
    let w = Workload::start(cmd);
    let doc = run_json(&["check", "-p", &w.pid().to_string()]);
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap();
    let real = std::fs::canonicalize(&loader).unwrap();
    assert!(
        detail.contains(&format!("{} (started as `{} PROG`)", prog.display(), real.display())),
        "the program, not ld.so: {detail}"
    );
    assert!(
        detail.contains(&format!("glibc {}: its clock reads are expected to go through the vDSO", glibc_version())),
        "{detail}"
    );
    assert_eq!(bin["status"], "ok", "not a static binary: {bin}");

    if which("valgrind").is_err() {
        return skip("valgrind not installed (apt-get install valgrind)");
    }
    let mut cmd = Command::new("valgrind");
    cmd.arg("-q").arg(&prog);
    let w = Workload::start(cmd);
    let doc = check_process_failing(w.pid());
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("runs {} under valgrind (memcheck)", prog.display())), "{detail}");
    assert_eq!(bin["status"], "fail");
    let mapped = check_named(&doc, "process_vdso_mapped");
    assert!(mapped["hint"].as_str().unwrap().contains("expected under valgrind (memcheck)"), "{mapped}");
}

#[test]
fn process_runtime_of_an_unknown_emulator_names_it() {
    // No [vdso], another program mapped: the tool is named by its executable.
    let guest = build_c("wait_ready", false, &[]);
    let mut cmd = Command::new(build_c("fake_emulator", false, &[]));
    cmd.arg(&guest);
    let w = Workload::start(cmd);
    let doc = check_process_failing(w.pid());
    let bin = check_named(&doc, "process_binary");
    let detail = bin["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("runs {} under fake_emulator", guest.display())), "{detail}");
    assert_eq!(bin["status"], "fail");
}

#[test]
fn trace_evidence_clears_a_32bit_warning() {
    if !is_root() {
        return skip("check --trace needs root (tracefs)");
    }
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let w = Workload::start(Command::new(build_c("wait_ready", true, &[])));
    let (code, stdout, stderr) = run(&["--json", "check", "--strict", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    // --strict fails on a WARN row: none of the process's (its warning is
    // cleared); the host's own may (getrandom through a glibc before 2.41).
    let flagged: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "warn" || c["status"] == "fail")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(flagged.iter().all(|n| !n.starts_with("process_")), "{doc}");
    assert_eq!(code, if flagged.is_empty() { 0 } else { 1 }, "{flagged:?} {stderr}");
    let getrandom_warns = own_vdso_exports("__vdso_getrandom") && major_minor(&glibc_version()) < (2, 41);
    assert_eq!(flagged.contains(&"getrandom"), getrandom_warns, "{doc}");
    let bin = check_named(&doc, "process_binary");
    assert_eq!(bin["status"], "ok", "{bin}");
    assert!(bin["detail"].as_str().unwrap().contains("32-bit"), "{bin}");
    assert!(bin["detail"].as_str().unwrap().contains("cleared by the observation: observed"), "{bin}");
    // A process that does make clock syscalls keeps its verdict and fails the trace.
    let mut cmd = Command::new(build_c("clock_loop", true, &[]));
    cmd.args(["raw", "1", "2000000000"]).stderr(Stdio::null());
    let w = Workload::start(cmd);
    let (code, stdout, _) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0.3"]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(check_named(&doc, "process_binary")["status"], "warn");
    assert_eq!(check_named(&doc, "process_trace")["status"], "fail");
}

/// The call sites come from the decoded code, not from byte patterns: each
/// way of reading a clock in fixtures/call_sites.c, built here, is judged by
/// what its code does, with the site's address and enclosing function; a
/// copy of vdsoctl (which holds the [vsyscall] addresses as data, for its
/// bench) and a file with the addresses only as data are OK.
#[test]
fn image_call_sites_from_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cs = |flags: &[&str], m32: bool| build_c("call_sites", m32, flags);
    install(root, &vdsoctl_path(), "/usr/local/bin/vdsoctl");
    install(root, &cs(&[], false), "/bin/libc_clock");
    install(root, &cs(&["-DRAW_LIBC"], false), "/bin/raw_libc");
    install(root, &cs(&["-DASM", "-static"], false), "/bin/asm_static");
    install(root, &cs(&["-DINT80"], false), "/bin/int80");
    install(root, &cs(&["-DVSYSCALL"], false), "/bin/vsyscall");
    install(root, &cs(&["-DDATA_ONLY"], false), "/bin/data_only");
    install(root, &cs(&["-DCPUTIME"], false), "/bin/cputime");
    // Stripped static programs: the C library's own clock_gettime (its
    // syscall is the fallback of a vDSO pointer) is no site; the program's
    // inline syscall is, by address.
    install(root, &stripped(&cs(&["-static"], false)), "/bin/libc_clock_static_stripped");
    install(root, &stripped(&cs(&["-DASM", "-static"], false)), "/bin/asm_static_stripped");
    let m32 = have_m32();
    if m32 {
        install(root, &cs(&["-DRAW_LIBC"], true), "/bin/raw_libc32");
        install(root, &cs(&["-DINT80"], true), "/bin/int80_32");
    } else {
        skip("gcc -m32 cannot build (install gcc-multilib): the i386 call sites are not tried");
    }
    let (code, stdout, stderr) = run(&["--json", "check", "--image", root.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let detail = |path: &str| binary(&doc, path)["detail"].as_str().unwrap().to_string();
    let status = |path: &str| binary(&doc, path)["status"].as_str().unwrap().to_string();
    for ok in [
        "/usr/local/bin/vdsoctl",
        "/bin/libc_clock",
        "/bin/data_only",
        "/bin/cputime",
        "/bin/libc_clock_static_stripped",
    ] {
        assert_eq!(status(ok), "ok", "{ok}: {}", detail(ok));
        assert!(!detail(ok).contains("[vsyscall]"), "{}", detail(ok));
    }
    // The CPU-time clock is said, not judged.
    assert!(
        detail("/bin/cputime").contains("clock_gettime(CLOCK_PROCESS_CPUTIME_ID) by syscall() at 0x"),
        "{}",
        detail("/bin/cputime")
    );
    let mut warn = vec![
        ("/bin/raw_libc", "clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x", "in main"),
        ("/bin/asm_static", "clock_gettime(CLOCK_MONOTONIC) by syscall at 0x", "in read_clock"),
        ("/bin/int80", "clock_gettime(CLOCK_MONOTONIC) by int 0x80 at 0x", "in read_clock"),
    ];
    if m32 {
        warn.push(("/bin/raw_libc32", "clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x", "in main"));
        warn.push(("/bin/int80_32", "clock_gettime(CLOCK_MONOTONIC) by int 0x80 at 0x", "in read_clock"));
    }
    for (path, site, symbol) in warn {
        let d = detail(path);
        assert_eq!(status(path), "warn", "{path}: {d}");
        assert!(d.starts_with("its code makes raw clock syscalls the vDSO would serve: "), "{d}");
        assert!(d.contains(site) && d.contains(symbol), "{path}: {d}");
    }
    // Stripped, the same site is found at the same address, in no function.
    let named = detail("/bin/asm_static");
    let at = named.split(" by syscall at ").nth(1).unwrap().split(' ').next().unwrap();
    assert_eq!(status("/bin/asm_static_stripped"), "warn");
    assert!(
        detail("/bin/asm_static_stripped")
            .contains(&format!("clock_gettime(CLOCK_MONOTONIC) by syscall at {at} in an unnamed function")),
        "{}",
        detail("/bin/asm_static_stripped")
    );
    junit_matches_the_json(root, &doc);
    let v = detail("/bin/vsyscall");
    assert_eq!(status("/bin/vsyscall"), "fail", "{v}");
    assert!(v.starts_with("its code calls the fixed [vsyscall] page (1 site(s), first at 0x"), "{v}");
    assert!(v.contains(" in legacy_time)"), "{v}");
    // The site's address is the call (or tail jump) instruction's, as objdump shows it.
    let at = v.split("first at ").nth(1).unwrap().split(' ').next().unwrap().trim_start_matches("0x");
    let objdump = Command::new("objdump").arg("-d").arg(root.join("bin/vsyscall")).output();
    if let Some(o) = objdump.ok().filter(|o| o.status.success()) {
        let text = String::from_utf8_lossy(&o.stdout);
        let line = text.lines().find(|l| l.trim_start().starts_with(&format!("{at}:"))).unwrap_or("");
        assert!(line.contains("call") || line.contains("jmp"), "{at}: {line}");
    }
}

/// A copy of `exe` run through `strip` (binutils): no .symtab left.
fn stripped(exe: &Path) -> PathBuf {
    let out = exe.with_file_name(format!("{}-stripped", exe.file_name().unwrap().to_string_lossy()));
    std::fs::copy(exe, &out).unwrap();
    let st = Command::new("strip").arg(&out).status().expect("strip runs (binutils)");
    assert!(st.success(), "strip {}", out.display());
    let syms = Command::new("readelf").arg("-S").arg(&out).output().unwrap();
    assert!(!String::from_utf8_lossy(&syms.stdout).contains(".symtab"), "{} still has .symtab", out.display());
    out
}

/// `--format junit` of the same tree, read by a real XML parser (python3's
/// xml.etree): one testcase per check and per binary, failures for the FAIL
/// rows (and the WARN ones with --strict), with the finding and the hint.
fn junit_matches_the_json(root: &Path, doc: &serde_json::Value) {
    if which("python3").is_err() {
        return skip("python3 not installed: the JUnit document is not parsed");
    }
    let count = |st: &str| doc["binaries"].as_array().unwrap().iter().filter(|b| b["status"] == st).count();
    let (binaries, fails, warns) = (doc["binaries"].as_array().unwrap().len(), count("fail"), count("warn"));
    let checks = doc["checks"].as_array().unwrap().len();
    // The image's own rows (random bytes per libc) WARN: failures under --strict.
    let check_warns = doc["checks"].as_array().unwrap().iter().filter(|c| c["status"] == "warn").count();
    const READ: &str = r#"
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.stdin).getroot()
assert t.tag == "testsuites", t.tag
for s in t.iter("testsuite"):
    cases = s.findall("testcase")
    assert int(s.get("tests")) == len(cases)
    assert int(s.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
    print(s.get("name"), len(cases), s.get("failures"), s.get("skipped"))
    for c in cases:
        f = c.find("failure")
        if f is not None:
            assert f.get("message") and f.text and "hint: " in f.text, c.get("name")
"#;
    for strict in [false, true] {
        let mut args = vec!["--format", "junit", "check"];
        if strict {
            args.push("--strict");
        }
        args.extend(["--image", root.to_str().unwrap()]);
        let (code, xml, stderr) = run(&args);
        assert_eq!(code, 1, "{stderr}");
        let out = python_on(READ, &xml);
        assert!(out.status.success(), "{}\n{xml}", String::from_utf8_lossy(&out.stderr));
        let failures = if strict { fails + warns } else { fails };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("vdsoctl.check.image {binaries} {failures} 0\n")), "{text}");
        let check_failures = if strict { check_warns } else { 0 };
        assert!(text.contains(&format!("vdsoctl.check {checks} {check_failures} ")), "{text}");
    }
}

/// Nothing to audit is an error, not an OK: an empty ROOT and a missing one
/// exit 3 with one line; what cannot be read is counted, listed and warned
/// about; without /proc the host context is said to be missing.
#[test]
fn image_nothing_to_audit_unreadable_and_no_proc() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path();
    std::fs::set_permissions(top, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(top.join("empty")).unwrap();
    std::fs::write(top.join("empty/notes.txt"), "not a program, long enough to be looked at as one").unwrap();
    for root in [top.join("empty"), top.join("missing")] {
        let (code, stdout, stderr) = run(&["check", "--image", root.to_str().unwrap()]);
        assert_eq!(code, 3, "{}: {stdout}{stderr}", root.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
    let (_, _, stderr) = run(&["check", "--image", top.join("empty").to_str().unwrap()]);
    assert!(
        stderr.contains("nothing to audit under") && stderr.contains("no ELF program or library in 1 entries"),
        "{stderr}"
    );

    // An unreadable directory and file, audited as a user who cannot read them.
    let tree = top.join("tree");
    let lp = build_c("call_sites", false, &[]);
    install(&tree, &lp, "/bin/ok");
    install(&tree, &lp, "/secret/hidden");
    install(&tree, &lp, "/bin/closed");
    for d in ["", "bin"] {
        std::fs::set_permissions(tree.join(d), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(tree.join("bin/ok"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(tree.join("secret"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(tree.join("bin/closed"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let own = top.join("vdsoctl");
    copy_executable(&vdsoctl_path(), &own).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"]).arg(&own);
        c
    } else {
        Command::new(&own)
    };
    let out = cmd.args(["--json", "check", "--image"]).arg(&tree).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a warning: {}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["binaries"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["status"], "warn", "{doc}");
    let unreadable = doc["image"]["unreadable"].as_array().unwrap();
    let listed: Vec<&str> = unreadable.iter().map(|u| u[0].as_str().unwrap()).collect();
    assert_eq!(listed.len(), 2, "{unreadable:?}");
    assert!(listed.contains(&"/secret") && listed.contains(&"/bin/closed"), "{listed:?}");
    assert!(unreadable.iter().all(|u| u[1].as_str().unwrap().contains("permission denied (EACCES)")), "{unreadable:?}");
    let walk = check_named(&doc, "image_walk");
    assert_eq!(walk["status"], "warn", "{walk}");
    assert!(walk["detail"].as_str().unwrap().starts_with("2 entries could not be read"), "{walk}");

    // No /proc (a chroot): the binaries are judged, the host context is SKIP.
    if !is_root() {
        return skip("unmounting /proc in a private mount namespace needs root");
    }
    let script =
        format!("umount -l /proc && exec {} --json check --image {}", vdsoctl_path().display(), tree.display());
    let out =
        Command::new("unshare").args(["--mount", "--propagation", "private", "sh", "-c", &script]).output().unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    for name in ["vdso_symbols", "vsyscall"] {
        let c = check_named(&doc, name);
        assert_eq!(c["status"], "skip", "{c}");
        assert!(c["detail"].as_str().unwrap().starts_with("no /proc here"), "{c}");
    }
    assert_eq!(doc["binaries"].as_array().unwrap().len(), 3, "root reads the whole tree: {doc}");
}

/// A static glibc binary with no vDSO lookup in it is what glibc < 2.31
/// produced. This one is made from a current static build by renaming the
/// symbols its vDSO setup looks up (`__vdso_*` → `__xxxx_*`): the binary the
/// audit then reads has glibc's markers and no vDSO lookup, as an old one.
#[test]
fn static_glibc_without_a_vdso_lookup_fails() {
    let mut bytes = std::fs::read(build_c("clock_once", false, &["-static"])).unwrap();
    let mut renamed = 0;
    let mut i = 0;
    while let Some(at) = bytes[i..].windows(7).position(|w| w == b"__vdso_") {
        bytes[i + at + 2..i + at + 6].copy_from_slice(b"xxxx");
        renamed += 1;
        i += at + 7;
    }
    assert!(renamed > 0, "a static glibc ≥ 2.31 names the vDSO symbols it looks up");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    std::fs::write(dir.path().join("bin/old_static"), &bytes).unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--image", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let b = binary(&doc, "/bin/old_static");
    assert_eq!(
        (b["linkage"].as_str(), b["runtime"].as_str(), b["status"].as_str()),
        (Some("static"), Some("glibc"), Some("fail"))
    );
    assert!(b["detail"].as_str().unwrap().contains("glibc < 2.31 never used the vDSO in static binaries"), "{b}");
}

/// The rate `check` printed after `clock` in `detail` (`... CLOCK_MONOTONIC 1,998/s ...`).
fn rate_after(detail: &str, clock: &str) -> f64 {
    let at = detail.find(&format!("{clock} ")).unwrap_or_else(|| panic!("no {clock} in {detail}")) + clock.len() + 1;
    let text: String = detail[at..].chars().take_while(|c| *c != '/').filter(|c| *c != ',').collect();
    text.parse().unwrap_or_else(|_| panic!("no rate after {clock}: {detail}"))
}

/// A raw CLOCK_MONOTONIC loop of `per_sec` calls a second (clock_loop's paced mode).
fn raw_monotonic_loop(per_sec: u32) -> Workload {
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["paced", "1", &per_sec.to_string()]).stderr(Stdio::null());
    Workload::start(cmd)
}

#[test]
fn check_p_observes_by_default_and_fails_a_raw_loop() {
    if let Some(why) = super::common::missing_trace_facility() {
        return skip(why);
    }
    let _lock = super::common::system_wide_lock();
    let w = raw_monotonic_loop(2000);
    let pid = w.pid().to_string();
    let doc = check_process_failing(w.pid());
    let t = check_named(&doc, "process_trace");
    assert_eq!(t["status"], "fail", "{t}");
    let detail = t["detail"].as_str().unwrap();
    assert!(detail.starts_with("observed 1"), "the default window is 1 s: {detail}");
    assert!(detail.contains("clock_gettime CLOCK_MONOTONIC "), "{detail}");
    // 2,000/s asked; the bound is loose (5x) for a busy host.
    let rate = rate_after(detail, "CLOCK_MONOTONIC");
    assert!((400.0..=10_000.0).contains(&rate), "{rate}/s: {detail}");
    let sites =
        format!("`vdsoctl trace --sites -p {pid}` names the code that makes them (function, library and caller)");
    assert!(t["hint"].as_str().unwrap().starts_with(&sites), "{t}");
    // The binary row says what the code is expected to do, and that the
    // observation contradicts it; it never claims the vDSO path.
    let bin = check_named(&doc, "process_binary")["detail"].as_str().unwrap();
    assert!(bin.contains("expected to go through the vDSO"), "{bin}");
    assert!(bin.contains("but observed making syscalls the vDSO serves (CLOCK_MONOTONIC)"), "{bin}");

    // --trace 0 turns the window off: the row says so, as INFO.
    let (_, stdout, stderr) = run(&["--json", "check", "-p", &pid, "--trace", "0"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let t = check_named(&doc, "process_trace");
    assert_eq!((t["status"].as_str(), t["detail"].as_str()), (Some("info"), Some("not observed (--trace 0)")));
    assert!(!check_named(&doc, "process_binary")["detail"].as_str().unwrap().contains("observed"), "{doc}");

    // A loop of vDSO reads (the libc call of a clock the vDSO serves) stays OK.
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["libc", "1", "2000000000"]).stderr(Stdio::null());
    let v = Workload::start(cmd);
    let (_, stdout, _) = run(&["--json", "check", "-p", &v.pid().to_string(), "--trace", "500ms"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "process_trace");
    assert_eq!(t["status"], "ok", "{t}");
    let detail = t["detail"].as_str().unwrap();
    assert!(detail.starts_with("observed 5") && detail.contains("no clock syscall the vDSO serves"), "{detail}");
    assert!(!detail.contains("stayed") && !detail.contains("go through"), "no claim beyond the evidence: {detail}");
}

#[test]
fn host_check_names_the_pid_that_bypasses_the_vdso() {
    if let Some(why) = super::common::missing_trace_facility() {
        return skip(why);
    }
    let _lock = super::common::system_wide_lock();
    let w = raw_monotonic_loop(20_000);
    let (code, stdout, stderr) = run(&["--json", "check"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["status"], "fail");
    let t = check_named(&doc, "host_trace");
    assert_eq!(t["status"], "fail", "{t}");
    let detail = t["detail"].as_str().unwrap();
    let ours = format!("pid {} (clock_loop): clock_gettime CLOCK_MONOTONIC ", w.pid());
    let at = detail.find(&ours).unwrap_or_else(|| panic!("{ours} not named: {detail}"));
    let rate = rate_after(&detail[at..], "CLOCK_MONOTONIC");
    assert!((4_000.0..=100_000.0).contains(&rate), "{rate}/s: {detail}");
}

/// As `nobody` with no capabilities (a CI container, a rootless runner),
/// nothing can be observed: the rows say so as INFO, the other checks
/// decide, and the exit is 0 or 1 — never 4.
#[test]
fn unprivileged_check_says_not_observed_and_never_exits_4() {
    if !is_root() {
        return skip("dropping privileges to nobody needs root");
    }
    let me = vdsoctl_path();
    let script = format!(
        "sleep 30 & pid=$!; {0} --json check -p $pid > {1}.p; echo $? > {1}.p.rc; kill $pid; {0} --json check > {1}.h; echo $? > {1}.h.rc",
        me.display(),
        "$OUT"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--inh-caps", "-all", "sh", "-c", &script])
        .env("OUT", dir.path().join("doc"))
        .env("NO_COLOR", "1")
        .output()
        .expect("setpriv");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for (file, row) in [("doc.p", "process_trace"), ("doc.h", "host_trace")] {
        let rc = std::fs::read_to_string(dir.path().join(format!("{file}.rc"))).unwrap();
        assert!(rc.trim() == "0" || rc.trim() == "1", "{file}: exit {rc} {stderr}");
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join(file)).unwrap())
            .unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let t = check_named(&doc, row);
        assert_eq!(t["status"], "info", "{t}");
        let detail = t["detail"].as_str().unwrap();
        assert!(detail.starts_with("not observed (needs root or CAP_BPF + CAP_PERFMON)"), "{detail}");
        assert_eq!(doc["status"].as_str() == Some("fail"), rc.trim() == "1", "{doc}");
    }
}

/// The foreign roots scripts/foreign-roots.sh unpacks from Debian's
/// packages in target/foreign-roots (VDSOCTL_FOREIGN_ROOTS points
/// elsewhere), made here when absent and we are root; None, said as a
/// SKIP with the command (a panic under CI), when they cannot be had.
fn foreign_roots() -> Option<(PathBuf, PathBuf)> {
    let base = std::env::var_os("VDSOCTL_FOREIGN_ROOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/foreign-roots"));
    let have = || ["arm64", "armhf"].iter().all(|a| base.join(a).join("bin/busybox").exists());
    made_by_script("foreign-roots.sh", &base, have).then(|| (base.join("arm64"), base.join("armhf")))
}

/// `tool ARGS FILES...` run once over many files, stdout as text.
fn over_files(tool: &str, args: &[&str], files: &[PathBuf]) -> String {
    let out = Command::new(tool).args(args).args(files).output().unwrap_or_else(|e| panic!("{tool}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `readelf -h`'s Class, Data, Machine and Flags lines of each file, in order.
fn readelf_headers(files: &[PathBuf]) -> Vec<[String; 4]> {
    let mut out = Vec::new();
    for chunk in files.chunks(200) {
        let text = over_files("readelf", &["-h"], chunk);
        let field = |block: &str, key: &str| {
            block.lines().find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string())).unwrap_or_default()
        };
        // One "ELF Header:" block per file.
        let blocks: Vec<&str> = text.split("ELF Header:").skip(1).collect();
        assert_eq!(blocks.len(), chunk.len(), "readelf -h read every file");
        for b in blocks {
            out.push([field(b, "Class:"), field(b, "Data:"), field(b, "Machine:"), field(b, "Flags:")]);
        }
    }
    out
}

/// An arm64 and an armhf root built from Debian's packages (libc6,
/// busybox-static), with an arm64 Go program and arm64 raw clock callers:
/// every binary named as `readelf -h`, `file` and `go version` name it, the
/// arm64 raw clock syscalls found with their symbols at the addresses
/// objdump shows, armhf code said to be not decoded (INFO, not OK), and
/// the exit code the verdicts call for.
#[test]
fn foreign_roots_judged_for_their_architecture() {
    let Some((arm64, armhf)) = foreign_roots() else { return };
    for (root, arch, machine, readelf_machine, file_machine) in
        [(&arm64, "arm64", "aarch64", "AArch64", "ARM aarch64"), (&armhf, "armhf", "arm", "ARM", "ARM, EABI5")]
    {
        let out = vdsoctl().args(["--json", "check", "--image", root.to_str().unwrap()]).output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let binaries = doc["binaries"].as_array().unwrap();
        assert!(binaries.len() > 100, "{arch}: {} binaries", binaries.len());
        let fails = binaries.iter().filter(|b| b["status"] == "fail").count();
        assert_eq!(out.status.code(), Some(if fails > 0 { 1 } else { 0 }), "{arch}");
        let files: Vec<PathBuf> =
            binaries.iter().map(|b| root.join(b["path"].as_str().unwrap().trim_start_matches('/'))).collect();
        let headers = readelf_headers(&files);
        let described: Vec<String> = files
            .chunks(200)
            .flat_map(|c| over_files("file", &["-b"], c).lines().map(str::to_string).collect::<Vec<_>>())
            .collect();
        assert_eq!(described.len(), files.len());
        for ((b, [class, data, rmachine, flags]), file) in binaries.iter().zip(&headers).zip(&described) {
            let path = b["path"].as_str().unwrap();
            assert_eq!(b["class"], class.as_str(), "{path}");
            assert_eq!(b["endian"], if data.contains("little endian") { "little" } else { "big" }, "{path}: {data}");
            assert_eq!(rmachine, readelf_machine, "{path}");
            assert_eq!(b["machine"], machine, "{path}");
            if rmachine == "ARM" {
                let hard = flags.contains("hard-float ABI");
                assert_eq!(b["arch"], if hard { "armhf" } else { "armel" }, "{path}: {flags}");
            } else {
                assert_eq!(b["arch"], arch, "{path}");
            }
            let bits = if class == "ELF64" { "64" } else { "32" };
            let order = if b["endian"] == "little" { "LSB" } else { "MSB" };
            assert!(file.starts_with(&format!("ELF {bits}-bit {order} ")), "{path}: {file}");
            assert!(file.contains(file_machine), "{path}: {file}");
            if b["kind"] == "executable" {
                let said = match b["linkage"].as_str().unwrap() {
                    "static" => "statically linked",
                    "static-pie" => "static-pie linked",
                    _ => "dynamically linked",
                };
                assert!(file.contains(said), "{path}: {} vs {file}", b["linkage"]);
            }
            if arch == "armhf" {
                assert_eq!(b["status"], "info", "{path}: {}", b["detail"]);
                assert!(
                    b["detail"].as_str().unwrap().starts_with("armhf code: call sites not decoded"),
                    "{path}: {}",
                    b["detail"]
                );
            }
            if b["runtime"] == "go" || file.contains("Go BuildID") {
                let go = over_files("go", &["version"], std::slice::from_ref(&root.join(path.trim_start_matches('/'))));
                let version = go.split(": ").nth(1).unwrap().trim();
                assert_eq!(b["runtime"], "go", "{path}");
                assert_eq!(b["runtime_version"], version, "{path}");
            }
        }
        if arch == "armhf" {
            continue;
        }
        assert!(binaries.iter().any(|b| b["path"] == "/usr/local/bin/hello_go"));
        // The raw callers: WARN, each site with its function, at an address
        // whose instruction objdump shows as the call or the svc.
        let site = |path: &str, via: &str, symbol: &str, insn: &str| {
            let b = binaries.iter().find(|b| b["path"] == path).unwrap_or_else(|| panic!("no {path}"));
            let d = b["detail"].as_str().unwrap();
            assert_eq!(b["status"], "warn", "{path}: {d}");
            let prefix = format!(
                "its code makes raw clock syscalls the vDSO would serve: clock_gettime(CLOCK_MONOTONIC) by {via} at 0x"
            );
            assert!(d.starts_with(&prefix), "{path}: {d}");
            let at = d[prefix.len()..].split(' ').next().unwrap();
            assert!(d[prefix.len()..].starts_with(&format!("{at} in {symbol}: ")), "{path}: {d}");
            let dis = over_files("objdump", &["-d"], &[root.join(path.trim_start_matches('/'))]);
            let line = dis.lines().find(|l| l.trim_start().starts_with(&format!("{at}:"))).unwrap_or("");
            assert!(line.contains(insn), "{path} at {at}: {line}");
        };
        site("/usr/local/bin/raw_libc", "syscall()", "main", "bl\t");
        site("/usr/local/bin/raw_libc_static", "syscall()", "main", "bl\t");
        site("/usr/local/bin/svc_static", "svc #0", "read_clock", "svc\t");
        let libc = binaries.iter().find(|b| b["path"].as_str().unwrap().ends_with("/libc.so.6")).unwrap();
        assert_eq!((libc["kind"].as_str(), libc["status"].as_str()), (Some("library"), Some("ok")), "{libc}");
    }
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
/// outcome (`failed`, `skipped`, `passed`). None when junitparser is
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
            f = [r for r in case.result if isinstance(r, Failure)][0]
            assert f.type in ("FAIL", "WARN") and f.message.startswith(f.type + ": "), case.name
            assert f.message[len(f.type) + 2:] in (f.text or ""), case.name
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
    if let Some(why) = super::common::missing_trace_facility() {
        return skip(&format!("check -- CMD: {why}"));
    }
    junit_agrees(&["check", "--", "/bin/true"], false);
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

fn random_rows(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    doc["checks"].as_array().unwrap().iter().filter(|c| c["name"].as_str().unwrap().starts_with("random")).collect()
}

#[test]
fn image_random_bytes_warn_on_bookworm_not_on_trixie() {
    let Some(trixie) = trixie_root() else { return };
    // bookworm: this host's own glibc (2.36 on the Debian 12 builders).
    let host = glibc_version();
    let libs = ldd(&build_c("wait_ready", false, &[]));
    let find = |name: &str| libs.iter().find(|p| p.file_name().is_some_and(|f| f == name)).cloned().unwrap();
    let old = random_root(&find("libc.so.6"), &find("ld-linux-x86-64.so.2"));
    let old_root = old.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--image", old_root]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let host_241 = host.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()).is_some_and(|m| m >= 41);
    if host_241 {
        skip(&format!("this host's glibc is {host}: it is no bookworm root"));
    } else {
        assert_eq!(code, 0, "{stdout}");
        let rows = random_rows(&doc);
        assert_eq!(rows.len(), 1, "one row for the image's libc: {rows:?}");
        assert_eq!(rows[0]["name"], format!("random:glibc-{host}"));
        assert_eq!(rows[0]["status"], "warn");
        let detail = rows[0]["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!(
                "random bytes take a syscall: glibc {host} makes getrandom() a syscall; glibc 2.41 reads it from the vDSO (/usr/lib/x86_64-linux-gnu/libc.so.6, loaded by 2 programs"
            )),
            "{detail}"
        );
        assert!(detail.ends_with("; raw getrandom syscalls in /usr/bin/getrandom_loop"), "{detail}");
        // The binaries keep their clock verdicts: the raw getrandom is part of the row.
        assert_eq!(binary(&doc, "/usr/bin/getrandom_loop")["status"], "ok");
        assert_eq!(binary(&doc, "/usr/bin/getrandom_loop")["random"]["path"], "syscall");
        let (_, table, _) = run(&["check", "--image", old_root]);
        assert_eq!(table.matches("random bytes take a syscall").count(), 1, "{table}");
    }

    // trixie: glibc 2.41 reads getrandom from the vDSO: no such row; the
    // program's own syscall(SYS_getrandom) bypasses it and fails.
    let new = random_root(&trixie.join("libc.so.6"), &trixie.join("ld-linux-x86-64.so.2"));
    let new_root = new.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--image", new_root]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(code, 1, "{stdout}");
    assert!(random_rows(&doc).is_empty(), "{}", doc["checks"]);
    assert!(!stdout.contains("random bytes take a syscall"), "{stdout}");
    let prog = binary(&doc, "/usr/bin/getrandom_loop");
    assert_eq!(prog["status"], "fail", "{prog}");
    assert_eq!(prog["runtime_version"], "2.41");
    assert_eq!(prog["random"]["path"], "vdso");
    let detail = prog["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("raw syscall(SYS_getrandom) bypasses the vDSO that glibc 2.41 uses: syscall() at 0x"),
        "{detail}"
    );
    assert!(detail.contains(" in raw_random_bytes"), "{detail}");
    assert_eq!(binary(&doc, "/usr/bin/wait_ready")["status"], "ok");
}

/// The kernel's vDSO serves getrandom (x86_64 from 6.11).
fn kernel_has_vdso_getrandom() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    vdsoctl::inspect::kernel::parse_version(release.trim()).is_some_and(|v| v >= (6, 11))
}

/// `getrandom_loop libc N pause` under trixie's glibc 2.41, once it printed "done".
fn paused_241(trixie: &Path, n: &str) -> (std::process::Child, super::common::KillOnDrop) {
    use std::io::BufRead;
    let exe = build_c(
        "getrandom_loop",
        false,
        &[
            "-pthread",
            &format!("-Wl,--dynamic-linker={}", trixie.join("ld-linux-x86-64.so.2").display()),
            &format!("-Wl,-rpath={}", trixie.display()),
        ],
    );
    let mut child =
        Command::new(exe).args(["libc", n, "pause"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let guard = super::common::KillOnDrop::new(child.id() as i32);
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "done");
    (child, guard)
}

#[test]
fn check_p_random_bytes_of_a_glibc_241_process() {
    let Some(trixie) = trixie_root() else { return };
    if !kernel_has_vdso_getrandom() {
        return skip("this kernel's vDSO has no getrandom (Linux 6.11)");
    }
    for (n, expect) in [("10", "state page at 0x"), ("0", "it has not called getrandom() yet")] {
        let (mut child, _guard) = paused_241(&trixie, n);
        let pid = child.id().to_string();
        let (_, stdout, stderr) = run(&["--json", "check", "-p", &pid, "--trace", "0"]);
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let row = check_named(&doc, "process_random");
        assert_eq!(row["status"], "ok", "{row}");
        let detail = row["detail"].as_str().unwrap();
        assert!(detail.starts_with("glibc 2.41 ("), "{detail}");
        assert!(detail.contains("reads getrandom() from the vDSO (__vdso_getrandom); "), "{detail}");
        assert!(detail.contains(expect), "{detail}");
        if n == "10" {
            assert!(detail.ends_with(" (dp)"), "{detail}");
        }
        let symbols = check_named(&doc, "process_vdso_symbols")["detail"].as_str().unwrap().to_string();
        assert!(symbols.contains("__vdso_getrandom"), "{symbols}");
        let _ = child.kill();
        let _ = child.wait();
    }
    // A bookworm process (this host's own glibc, before 2.41): the syscall.
    if !glibc_version().starts_with("2.4") {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let _guard = super::common::KillOnDrop::new(child.id() as i32);
        let doc = run_json(&["check", "-p", &child.id().to_string(), "--trace", "0"]);
        let row = check_named(&doc, "process_random");
        assert_eq!(row["status"], "warn", "{row}");
        assert!(row["detail"].as_str().unwrap().starts_with("random bytes take a syscall: glibc "), "{row}");
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[test]
fn time_namespace_offsets_are_said_by_maps_and_check() {
    if !is_root() {
        return skip("unshare --time needs root");
    }
    let mut child = Command::new("unshare")
        .args(["--time", "--monotonic", "1000", "--boottime", "2000", "--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _guard = super::common::KillOnDrop::new(child.id() as i32);
    // unshare forks for --time: the sleep is its child (or itself, exec'd).
    let pid = (0..200)
        .find_map(|_| {
            let own = child.id();
            let children = std::fs::read_to_string(format!("/proc/{own}/task/{own}/children")).unwrap_or_default();
            let found = children.split_whitespace().next().map(str::to_string).or_else(|| {
                let comm = std::fs::read_to_string(format!("/proc/{own}/comm")).unwrap_or_default();
                (comm.trim() == "sleep").then(|| own.to_string())
            });
            if found.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            found
        })
        .expect("the sleep under unshare --time");
    let _sleep = super::common::KillOnDrop::new(pid.parse().unwrap());
    let doc = run_json(&["maps", "-p", &pid]);
    let ns = &doc["time_namespace"];
    assert_eq!(ns["other"], true, "{ns}");
    assert_eq!(
        ns["offsets"],
        serde_json::json!([
            {"clock": "CLOCK_MONOTONIC", "seconds": 1000, "nanoseconds": 0},
            {"clock": "CLOCK_BOOTTIME", "seconds": 2000, "nanoseconds": 0}
        ])
    );
    let (code, table, _) = run(&["maps", "-p", &pid]);
    assert_eq!(code, 0, "{table}");
    assert!(table.contains("INFO: pid "), "{table}");
    assert!(table.contains("CLOCK_MONOTONIC +1,000 s, CLOCK_BOOTTIME"), "{table}");
    let doc = run_json_any(&["check", "-p", &pid, "--trace", "0"]);
    let row = check_named(&doc, "process_time_namespace");
    assert_eq!(row["status"], "ok", "{row}");
    let detail = row["detail"].as_str().unwrap();
    assert!(detail.contains("CLOCK_MONOTONIC +1,000 s, CLOCK_BOOTTIME +2,000 s"), "{detail}");
    // vdsoctl's own: in its own namespace, nothing said.
    let doc = run_json(&["maps"]);
    assert_eq!(doc["time_namespace"]["other"], false);
    assert!(!doc["findings"].to_string().contains("time namespace"));
    let _ = child.kill();
    let _ = child.wait();
}

/// `--json` output whatever the exit status.
fn run_json_any(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (_, stdout, stderr) = run(&all);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout} {stderr}"))
}

/// `check -- CMD` judges its bypasses as `check -p` does (`model::observe`)
/// and says one advice for both kinds: a tree with one process making raw
/// CLOCK_TAI syscalls and another calling the [vsyscall] page fails naming
/// each with its exact count, syscalls before [vsyscall] calls, and the hint
/// leads to the sites and then says what a [vsyscall] caller is.
#[test]
fn command_with_raw_and_vsyscall_calls_gives_both_advices_in_one_hint() {
    if !is_root() {
        return skip("check -- CMD needs root (tracefs)");
    }
    let lp = build_c("clock_loop", false, &[]);
    let lp = lp.to_str().unwrap();
    let script = format!("{lp} vsyscall 0 70 > /dev/null; {lp} raw 11 30 > /dev/null; exit 0");
    let (code, stdout, stderr) = run(&["--json", "check", "--", "sh", "-c", &script]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = check_named(&doc, "command_trace");
    assert_eq!(t["status"], "fail", "{t}");
    let detail = t["detail"].as_str().unwrap();
    let raw = detail.find("(clock_loop) clock_gettime CLOCK_TAI ×30").unwrap_or_else(|| panic!("{detail}"));
    let vsyscall = detail.find("(clock_loop) [vsyscall] time ×70").unwrap_or_else(|| panic!("{detail}"));
    assert!(raw < vsyscall, "syscalls first, whatever the counts: {detail}");
    assert!(detail.ends_with(" — the vDSO is bypassed"), "{detail}");
    let hint = t["hint"].as_str().unwrap();
    let sites = format!("`vdsoctl trace --sites -- sh -c '{script}'` names the code that makes them");
    assert!(hint.starts_with(&sites), "{hint}");
    assert_eq!(hint.matches("; the [vsyscall] calls are legacy code calling the fixed [vsyscall] address").count(), 1);
    assert!(hint.contains("against a current libc or runtime; `vdsoctl check "), "{hint}");
}
