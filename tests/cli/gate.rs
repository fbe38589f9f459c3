//! The gate a CI job acts on (issue: verdicts a gate can act on): images
//! built from Debian's own bookworm packages (scripts/bookworm-root.sh),
//! audited unpacked and as `podman save` writes them (docker-archive,
//! oci-archive), with the selection flags, an ignore file, JUnit read by
//! junitparser and a baseline. Every assertion is on kinds, statuses and
//! exit codes, never on a finding's words.

use super::common::{build_c, made_by_script, python, run, skip, vdsoctl};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The bookworm root from Debian's packages: None (a SKIP; a failure under
/// CI) when it cannot be made.
fn bookworm_root() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bookworm");
    let root = dir.join("root");
    let have = || root.join(".complete").is_file() && root.join("usr/lib/x86_64-linux-gnu/libc.so.6").is_file();
    if !cfg!(target_arch = "x86_64") {
        skip("the bookworm root is amd64");
        return None;
    }
    made_by_script("bookworm-root.sh", &dir, have).then_some(root)
}

/// A copy of the bookworm root, with `extra` programs installed at their paths.
fn image(root: &Path, extra: &[(&Path, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new("cp").arg("-a").arg(format!("{}/.", root.display())).arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "cp: {}", String::from_utf8_lossy(&o.stderr));
    for (from, at) in extra {
        super::check::install(dir.path(), from, at);
    }
    dir
}

/// `root` as `podman save` writes it, docker-archive and oci-archive, from
/// a podman store of the call's own ([`super::common::Podman`]), so
/// no other test's or user's image is touched. None without podman.
fn saved(root: &Path, out: &Path, name: &str) -> Option<Vec<PathBuf>> {
    let podman = super::common::Podman::new()?;
    let layer = out.join(format!("{name}.rootfs.tar"));
    let o = Command::new("tar").arg("-C").arg(root).arg("-cf").arg(&layer).arg(".").output().unwrap();
    assert!(o.status.success(), "tar: {}", String::from_utf8_lossy(&o.stderr));
    let tag = format!("localhost/vdsoctl-gate-{name}:1");
    podman.ok(&["import", "-q", layer.to_str().unwrap(), &tag]);
    let mut paths = Vec::new();
    for format in ["docker-archive", "oci-archive"] {
        let p = out.join(format!("{name}.{format}.tar"));
        podman.ok(&["save", "-q", "--format", format, "-o", p.to_str().unwrap(), &tag]);
        paths.push(p);
    }
    let _ = std::fs::remove_file(&layer);
    Some(paths)
}

/// `check --json ARGS` from `cwd`: (exit code, document).
fn gate(cwd: &Path, args: &[&str]) -> (i32, Value) {
    let out = vdsoctl().current_dir(cwd).arg("--json").arg("check").args(args).output().unwrap();
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), doc)
}

/// The findings of one binary, as (kind, status).
fn findings(doc: &Value, path: &str) -> Vec<(String, String)> {
    let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == path);
    let b = b.unwrap_or_else(|| panic!("{path} not audited: {doc:#}"));
    b["findings"].as_array().unwrap().iter().map(|f| (s(&f["kind"]), s(&f["status"]))).collect()
}

/// The check rows of a kind, as (name, status).
fn rows(doc: &Value, kind: &str) -> Vec<(String, String)> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == kind)
        .map(|c| (s(&c["name"]), s(&c["status"])))
        .collect()
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

/// The gate table of the issue, on the clean bookworm image and the same
/// image with a raw-syscall `myapp`, unpacked, as a docker-archive and as
/// an OCI archive.
#[test]
fn the_gate_table_on_debian_images() {
    let Some(root) = bookworm_root() else { return };
    let myapp = build_c("now_ns", false, &[]);
    let clean = image(&root, &[]);
    let dirty = image(&root, &[(&myapp, "/usr/bin/myapp")]);
    let out = tempfile::tempdir().unwrap();
    let mut forms: Vec<(PathBuf, PathBuf)> = vec![(clean.path().into(), dirty.path().into())];
    if let (Some(c), Some(d)) = (saved(clean.path(), out.path(), "clean"), saved(dirty.path(), out.path(), "dirty")) {
        forms.extend(c.into_iter().zip(d));
    }
    let cwd = tempfile::tempdir().unwrap();
    for (clean, dirty) in &forms {
        let (clean, dirty) = (clean.to_str().unwrap(), dirty.to_str().unwrap());
        // Clean: bookworm's glibc 2.36 takes the getrandom syscall — a
        // WARN naming the base-image fix, never a FAIL: exit 0.
        let (code, doc) = gate(cwd.path(), &["--image", clean]);
        assert_eq!((code, s(&doc["status"])), (0, "warn".into()), "{clean}: {doc:#}");
        assert_eq!(rows(&doc, "random-syscall-old-libc"), [pair("random:glibc-2.36", "warn")], "{clean}");
        // The raw caller fails the image, by kind, at now_ns.
        let (code, doc) = gate(cwd.path(), &["--image", dirty]);
        assert_eq!(code, 1, "{dirty}: {doc:#}");
        assert!(findings(&doc, "/usr/bin/myapp").contains(&pair("raw-clock-call-site", "fail")), "{dirty}");
        let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == "/usr/bin/myapp").unwrap();
        assert_eq!(b["verdict_kind"], "raw-clock-call-site");
        let site = b["findings"][0]["detail"].as_str().unwrap();
        assert!(site.contains(" in now_ns"), "the site is named by its function: {site}");
        // --strict fails the clean image only while the getrandom kind is selected.
        let (code, doc) = gate(cwd.path(), &["--strict", "--image", clean]);
        assert_eq!(code, 1, "{clean}");
        assert_eq!(rows(&doc, "random-syscall-old-libc"), [pair("random:glibc-2.36", "fail")]);
        let (code, doc) = gate(cwd.path(), &["--strict", "--allow", "random-syscall-old-libc", "--image", clean]);
        assert_eq!((code, s(&doc["status"])), (0, "ok".into()), "{clean}: {doc:#}");
        assert_eq!(doc["waived"]["allowed"], 1);
        // --fail-on selects the one kind without --strict.
        let (code, _) = gate(cwd.path(), &["--fail-on", "random-syscall-old-libc", "--image", clean]);
        assert_eq!(code, 1, "{clean}");
        let (code, _) = gate(cwd.path(), &["--fail-on", "compat-32bit", "--image", clean]);
        assert_eq!(code, 0, "no 32-bit program in the image: {clean}");
    }
}

/// An ignore entry with a reason turns one FAIL into INFO "ignored" (still
/// listed, counted); one past its date, or without a reason, is an error.
#[test]
fn an_ignore_file_waives_with_a_reason_and_expires() {
    let Some(root) = bookworm_root() else { return };
    let myapp = build_c("now_ns", false, &[]);
    let legacy = build_c("now_ns", false, &[]);
    let dirty = image(&root, &[(&myapp, "/usr/bin/myapp"), (&legacy, "/opt/legacy/tick")]);
    let dirty = dirty.path().to_str().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let ignore = cwd.path().join(".vdsoctlignore");
    std::fs::write(
        &ignore,
        "# vendor code we cannot rebuild yet\nraw-clock-call-site=/opt/legacy/* expires=2099-12-31 vendor binary, ticket OPS-12\n",
    )
    .unwrap();
    // Read from the working directory: /opt/legacy/tick is waived, myapp still fails.
    let (code, doc) = gate(cwd.path(), &["--image", dirty]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(findings(&doc, "/usr/bin/myapp").contains(&pair("raw-clock-call-site", "fail")));
    let tick = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == "/opt/legacy/tick").unwrap();
    assert_eq!(tick["status"], "info", "{tick:#}");
    let f = &tick["findings"][0];
    assert_eq!((s(&f["kind"]), s(&f["status"])), pair("raw-clock-call-site", "info"));
    assert_eq!(f["waived"]["by"], "ignored");
    assert_eq!(f["waived"]["reason"], "vendor binary, ticket OPS-12");
    assert_eq!(f["waived"]["line"], 2);
    assert_eq!(doc["waived"]["ignored"], 1);
    // Both waived: exit 0, and the table says the reason and the count.
    std::fs::write(&ignore, "raw-clock-call-site expires=2099-12-31 vendor binaries, OPS-12\n").unwrap();
    let out = vdsoctl().current_dir(cwd.path()).args(["check", "--image", dirty]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{table}");
    assert!(table.contains("ignored: vendor binaries, OPS-12 (.vdsoctlignore:1)"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("verdict: WARN (2 ignored)")), "{table}");
    // --ignore-file names another; an expired entry, an unknown kind or a
    // missing reason is one line, exit 2, before any audit.
    for (text, says) in [
        ("raw-clock-call-site expires=2020-01-31 was fine then\n", "expired on 2020-01-31"),
        ("raw-clock-syscalls a typo\n", "raw-clock-syscalls is no kind of finding"),
        ("raw-clock-call-site\n", "needs a reason"),
    ] {
        let f = cwd.path().join("other.ignore");
        std::fs::write(&f, text).unwrap();
        let (code, stdout, stderr) = run(&["check", "--ignore-file", f.to_str().unwrap(), "--image", dirty]);
        assert_eq!((code, stdout.as_str(), stderr.lines().count()), (2, "", 1), "{text}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains("other.ignore:1"), "{stderr}");
    }
}

/// An ignore file that cannot be read is "could not inspect" (exit 3), one
/// larger than 1 MiB a usage error (exit 2): one line each, nothing audited.
#[test]
fn an_unreadable_or_huge_ignore_file_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.ignore");
    std::fs::write(&huge, vec![b'a'; (1 << 20) + 1]).unwrap();
    let missing = dir.path().join("missing.ignore");
    let image = dir.path().to_str().unwrap();
    for (file, code) in [(&missing, 3), (&huge, 2)] {
        let (got, stdout, stderr) = run(&["check", "--ignore-file", file.to_str().unwrap(), "--image", image]);
        assert_eq!((got, stdout.as_str(), stderr.lines().count()), (code, "", 1), "{}: {stderr}", file.display());
        assert!(stderr.contains(&*file.to_string_lossy()), "names the file: {stderr}");
    }
}

/// JUnit as junitparser reads it: one failure per failing finding, typed
/// by its kind — `clock_loop` has two (a raw clock site and a [vsyscall]
/// site), `myapp` one.
#[test]
fn junit_has_one_failure_per_failing_finding() {
    let Some(root) = bookworm_root() else { return };
    let myapp = build_c("now_ns", false, &[]);
    let clock_loop = build_c("clock_loop", false, &["-pthread"]);
    let dirty = image(&root, &[(&myapp, "/usr/bin/myapp"), (&clock_loop, "/usr/bin/clock_loop")]);
    let out = vdsoctl().args(["--format", "junit", "check", "--image"]).arg(dirty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8_lossy(&out.stdout);
    let script = "import sys, junitparser\n\
        x = junitparser.JUnitXml.fromstring(sys.stdin.read())\n\
        for suite in x:\n\
        \x20   for case in suite:\n\
        \x20       for r in case.result:\n\
        \x20           if isinstance(r, junitparser.Failure):\n\
        \x20               print(case.name + '\\t' + r.type)\n";
    let Some(read) = python(script, &[], &xml) else { return };
    if read.is_empty() && !xml.is_empty() && python("import junitparser", &[], "").is_none() {
        return;
    }
    let mut got: Vec<&str> = read.lines().collect();
    got.sort();
    assert_eq!(
        got,
        [
            "/usr/bin/clock_loop: raw-clock-call-site\traw-clock-call-site",
            "/usr/bin/clock_loop: vsyscall-call-site\tvsyscall-call-site",
            "/usr/bin/myapp: raw-clock-call-site\traw-clock-call-site",
        ],
        "{xml}"
    );
}

/// With `--baseline` the exit code is the README's: 1 exactly when a FAIL
/// line is printed — what is as bad as in the baseline is INFO "in the
/// baseline", what is new FAILs.
#[test]
fn a_baseline_gate_exits_1_only_after_a_fail_line() {
    let Some(root) = bookworm_root() else { return };
    let myapp = build_c("now_ns", false, &[]);
    let dirty = image(&root, &[(&myapp, "/usr/bin/myapp")]);
    let worse = image(&root, &[(&myapp, "/usr/bin/myapp"), (&myapp, "/usr/bin/myapp2")]);
    let clean = image(&root, &[]);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let b = base.to_str().unwrap();
    let table = |img: &Path, extra: &[&str]| {
        let out = vdsoctl().arg("check").args(extra).arg("--image").arg(img).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // Saving is a plain audit: myapp FAILs.
    let (code, text) = table(dirty.path(), &["--save-baseline", b]);
    assert_eq!(code, 1, "{text}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let entry = doc["binaries"].as_array().unwrap().iter().find(|x| x["path"] == "/usr/bin/myapp").unwrap();
    assert_eq!(entry["kinds"], serde_json::json!(["raw-clock-call-site"]), "{entry:#}");
    // A FAIL line: a row whose STATUS is FAIL (a binary's first column, a
    // check's second), a FAIL hint line, the verdict.
    let has_fail_line = |t: &str| {
        t.lines().any(|l| {
            l.starts_with("FAIL") || l.starts_with("verdict: FAIL") || l.split_whitespace().nth(1) == Some("FAIL")
        })
    };
    for (img, want) in [(dirty.path(), 0), (clean.path(), 0), (worse.path(), 1)] {
        let (code, text) = table(img, &["--baseline", b]);
        assert_eq!(code, want, "{text}");
        assert_eq!(has_fail_line(&text), want == 1, "exit {code} and the FAIL lines agree:\n{text}");
    }
    let (_, doc) = gate(dir.path(), &["--baseline", b, "--image", dirty.path().to_str().unwrap()]);
    let f = &doc["binaries"].as_array().unwrap().iter().find(|x| x["path"] == "/usr/bin/myapp").unwrap()["findings"][0];
    assert_eq!((s(&f["status"]), s(&f["waived"]["by"])), pair("info", "baselined"), "{f:#}");
    let (_, doc) = gate(dir.path(), &["--baseline", b, "--image", worse.path().to_str().unwrap()]);
    assert!(findings(&doc, "/usr/bin/myapp2").contains(&pair("raw-clock-call-site", "fail")));
    assert_eq!(s(&doc["status"]), "fail");
}

/// A getrandom loop through this host's glibc (< 2.41: a syscall a call),
/// running the fixture (not the fork that execs it) when this returns;
/// None (a SKIP) where no window can see it.
fn getrandom_hot_loop(what: &str) -> Option<(std::process::Child, super::common::KillOnDrop)> {
    if let Some(why) = super::common::missing_trace_facility() {
        skip(&format!("{what}: {why}"));
        return None;
    }
    if super::common::major_minor(&super::common::glibc_version()) >= (2, 41) {
        skip("this host's glibc reads getrandom from the vDSO: no syscall to see");
        return None;
    }
    let hot = build_c("getrandom_loop", false, &["-pthread"]);
    let child = Command::new(&hot).args(["libc", "4000000000"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let guard = super::common::KillOnDrop::new(child.id() as i32);
    let exe = std::fs::canonicalize(&hot).unwrap();
    while std::fs::read_link(format!("/proc/{}/exe", child.id())).ok().as_ref() != Some(&exe) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Some((child, guard))
}

/// `check -p` of a getrandom hot loop (glibc < 2.41: a syscall a call)
/// names it as a finding with its rate; a process that never calls
/// getrandom, under the same glibc, gets no getrandom finding at all.
#[test]
fn check_p_weighs_getrandom_by_what_the_process_did() {
    let Some((mut child, _guard)) = getrandom_hot_loop("check -p's window") else { return };
    let pid = child.id().to_string();
    let (_, doc) = gate(Path::new("/"), &["-p", &pid, "--trace", "1s"]);
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "process_random").unwrap();
    assert_eq!((s(&row["kind"]), s(&row["status"])), pair("random-syscall-observed", "warn"), "{row:#}");
    assert!(row["rate"].as_f64().unwrap() > 1000.0, "a hot loop, with its rate: {row:#}");
    // vdsoctl's own C library is the runner's fact beside a process.
    assert_eq!(rows(&doc, "random-syscall-host-libc"), [pair("getrandom", "info")], "{doc:#}");
    let _ = child.kill();
    let _ = child.wait();

    let mut idle = Command::new("sleep").arg("30").spawn().unwrap();
    let _guard = super::common::KillOnDrop::new(idle.id() as i32);
    let (_, doc) = gate(Path::new("/"), &["-p", &idle.id().to_string(), "--trace", "1s"]);
    let random: Vec<&Value> =
        doc["checks"].as_array().unwrap().iter().filter(|c| s(&c["kind"]).starts_with("random-")).collect();
    assert!(!random.is_empty(), "{doc:#}");
    for c in &random {
        assert!(
            c["status"] == "info" || c["status"] == "ok",
            "no getrandom finding for a process that made no call: {c:#}"
        );
    }
    let _ = idle.kill();
    let _ = idle.wait();
}

/// The host check names a getrandom hot loop with its pid and rate
/// (`host_random`), which `host_trace` (clocks) never did.
#[test]
fn the_host_check_names_a_getrandom_hot_loop() {
    let _lock = super::common::system_wide_lock();
    let Some((mut child, _guard)) = getrandom_hot_loop("the host's window") else { return };
    let (_, doc) = gate(Path::new("/"), &["--trace", "1s"]);
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "host_random");
    let row = row.unwrap_or_else(|| panic!("no host_random row: {doc:#}"));
    assert_eq!((s(&row["kind"]), s(&row["status"])), pair("random-syscall-observed", "warn"), "{row:#}");
    assert!(row["rate"].as_f64().unwrap() > 1000.0, "{row:#}");
    assert!(s(&row["detail"]).contains(&format!("pid {} ", child.id())), "the caller is named: {row:#}");
    let _ = child.kill();
    let _ = child.wait();
}
