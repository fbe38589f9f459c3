//! `check --image` of images as CI has them: built with `podman import`
//! from real roots, written by `podman save` as a docker-archive, an OCI
//! archive and an OCI layout directory, and audited with the same verdicts
//! as the unpacked roots; hostile archives made with GNU tar.

use super::check::{image_tree, random_root, trixie_root};
use super::common::{is_root, run, skip};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// podman, as root: None (a SKIP, a failure under CI) without it.
fn have_podman() -> bool {
    let ok = is_root() && Command::new("podman").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "CI needs podman and root for the image archive tests");
        skip("podman (as root) is needed to build and save images");
    }
    ok
}

/// The image of `root` written by `podman save` three ways, in `out`:
/// docker-archive, oci-archive, oci-dir (an OCI layout), from a podman
/// store of this call's own (two tests saving a "bookworm" at once once
/// removed each other's tag: "podman save: image not known").
fn saved(root: &Path, out: &Path, name: &str) -> Vec<PathBuf> {
    let podman = super::common::Podman::new().expect("have_podman() was checked");
    let tag = format!("localhost/vdsoctl-test-{name}:1");
    let layer = out.join(format!("{name}.rootfs.tar"));
    let o = Command::new("tar").arg("-C").arg(root).arg("-cf").arg(&layer).arg(".").output().unwrap();
    assert!(o.status.success(), "tar: {}", String::from_utf8_lossy(&o.stderr));
    podman.ok(&["import", "-q", layer.to_str().unwrap(), &tag]);
    let _ = std::fs::remove_file(&layer);
    let mut paths = Vec::new();
    for (format, file) in [("docker-archive", "docker.tar"), ("oci-archive", "oci.tar"), ("oci-dir", "oci-layout")] {
        let p = out.join(format!("{name}.{file}"));
        podman.ok(&["save", "-q", "--format", format, "-o", p.to_str().unwrap(), &tag]);
        paths.push(p);
    }
    paths
}

/// What an audit decided: its exit code, each binary's (path, status,
/// detail), each check's (name, status, detail), sorted.
type Verdicts = (i32, Vec<(String, String, String)>, Vec<(String, String, String)>);

fn verdicts(image: &Path) -> (Verdicts, Value) {
    let (code, stdout, stderr) = run(&["--json", "check", "--image", image.to_str().unwrap()]);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
    let triple = |v: &Value, key: &str| {
        (v[key].as_str().unwrap().to_string(), v["status"].to_string(), v["detail"].as_str().unwrap().to_string())
    };
    let mut bins: Vec<_> = doc["binaries"].as_array().unwrap().iter().map(|b| triple(b, "path")).collect();
    let mut checks: Vec<_> = doc["checks"].as_array().unwrap().iter().map(|c| triple(c, "name")).collect();
    bins.sort();
    checks.sort();
    ((code, bins, checks), doc)
}

/// Each saved form of `root` audits as `root` itself does.
fn assert_archives_agree(root: &Path, name: &str) -> Vec<PathBuf> {
    let out = tempfile::tempdir().unwrap();
    let (want, doc) = verdicts(root);
    assert_eq!(doc["image"]["format"], "directory");
    assert!(!want.1.is_empty(), "{doc}");
    // The runner's kernel is said, as INFO, and is no part of the verdict.
    for name in ["vdso_symbols", "vsyscall"] {
        let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap();
        assert_eq!((row["kind"].as_str(), row["status"].as_str()), (Some("runner-kernel"), Some("info")), "{row}");
    }
    let saved = saved(root, out.path(), name);
    for (path, format) in saved.iter().zip(["docker-archive", "oci-archive", "oci-layout"]) {
        let (got, doc) = verdicts(path);
        assert_eq!(doc["image"]["format"], format, "{}", path.display());
        assert_eq!(doc["image"]["layers"], 1);
        assert_eq!(got, want, "{} audits as the unpacked root does", path.display());
    }
    // Only what podman wrote is there: the audits wrote nothing beside.
    let mut names: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    saved
}

#[test]
fn saved_images_audit_as_their_unpacked_roots() {
    if !have_podman() {
        return;
    }
    // bookworm: this host's glibc, its loader and libraries.
    let libs = super::check::ldd(&super::common::build_c("wait_ready", false, &[]));
    let find = |n: &str| libs.iter().find(|p| p.file_name().is_some_and(|f| f == n)).cloned().unwrap();
    let old = random_root(&find("libc.so.6"), &find("ld-linux-x86-64.so.2"));
    assert_archives_agree(old.path(), "bookworm");
    if let Some((tree, _)) = image_tree() {
        assert_archives_agree(tree.path(), "tree");
    }
    if let Some(trixie) = trixie_root() {
        let new = random_root(&trixie.join("libc.so.6"), &trixie.join("ld-linux-x86-64.so.2"));
        assert_archives_agree(new.path(), "trixie");
    }
}

/// A docker-archive in `dir` whose one layer is `layer` (a file).
fn wrap(dir: &Path, layer: &Path, manifest_layer: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("l")).unwrap();
    std::fs::copy(layer, dir.join("l/layer.tar")).unwrap();
    let manifest = format!(r#"[{{"Config":"c.json","RepoTags":["x:1"],"Layers":["{manifest_layer}"]}}]"#);
    std::fs::write(dir.join("manifest.json"), manifest).unwrap();
    let out = dir.join("image.tar");
    let o = Command::new("tar").arg("-C").arg(dir).arg("-cf").arg(&out).args(["manifest.json", "l"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn assert_one_line_exit_3(image: &Path, says: &str) {
    let (code, stdout, stderr) = run(&["check", "--image", image.to_str().unwrap()]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(says), "{says:?} in {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn hostile_archives_are_one_line_errors_and_write_nothing_outside() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A 10 GB sparse member that starts as an ELF file (GNU tar -S): listed, never read.
    let big = d.join("work/big");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    let f = std::fs::File::create(&big).unwrap();
    std::os::unix::fs::FileExt::write_at(&f, b"\x7fELF\x02\x01\x01", 0).unwrap();
    f.set_len(10 << 30).unwrap();
    let sparse = d.join("sparse.tar");
    let o = Command::new("tar").arg("-C").arg(d.join("work")).arg("-S").arg("-cf").arg(&sparse).arg("big").output();
    assert!(o.unwrap().status.success());
    assert!(std::fs::metadata(&sparse).unwrap().len() < 1 << 20, "a sparse member");
    let image = wrap(&d.join("a"), &sparse, "l/layer.tar");
    assert_one_line_exit_3(&image, "(1 unreadable, first /big: an ELF file of 10 GiB, past the 1 GiB bound per file");
    // A layer that is no tar.
    let junk = d.join("junk");
    std::fs::write(&junk, "no tar here\n".repeat(100)).unwrap();
    let image = wrap(&d.join("b"), &junk, "l/layer.tar");
    assert_one_line_exit_3(&image, "(1 unreadable, first layer 1 (l/layer.tar): not a tar");
    // A manifest naming a blob that is not there.
    let image = wrap(&d.join("c"), &junk, "l/missing.tar");
    assert_one_line_exit_3(&image, "the manifest names l/missing.tar, which the image does not hold");
    // A manifest naming a path out of the archive.
    let image = wrap(&d.join("e"), &junk, "../../../etc/passwd");
    assert_one_line_exit_3(&image, "manifest.json names a layer that is not a plain name");
    // A tar that is no image; a file that is no tar.
    assert_one_line_exit_3(&sparse, "a tar archive but not an image: no manifest.json (docker-archive)");
    assert_one_line_exit_3(&junk, "not an image: neither a directory nor a tar archive");
    // Names with `..`, absolute names and links out (GNU tar keeps them
    // with -P): refused, listed, nothing written outside.
    let w = d.join("w");
    std::fs::create_dir_all(w.join("sub")).unwrap();
    std::fs::copy("/bin/true", w.join("sub/ok")).unwrap();
    std::os::unix::fs::symlink(d, w.join("out")).unwrap();
    let outside = d.join("escaped");
    let evil = d.join("evil.tar");
    let tar = |mode: &str, transform: Option<String>| {
        let mut c = Command::new("tar");
        c.arg("-C").arg(&w).arg("-P").arg(mode).arg(&evil);
        match transform {
            Some(t) => c.arg(format!("--transform=s,^sub/ok,{t},")).arg("sub/ok"),
            None => c.args(["sub/ok", "out"]),
        };
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    tar("-cf", None);
    tar("-rf", Some(format!("sub/../../{}", outside.file_name().unwrap().to_str().unwrap())));
    tar("-rf", Some(outside.display().to_string()));
    let image = wrap(&d.join("f"), &evil, "l/layer.tar");
    let (code, stdout, stderr) = run(&["--json", "check", "--image", image.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let bins: Vec<_> = doc["binaries"].as_array().unwrap().iter().map(|b| b["path"].as_str().unwrap()).collect();
    assert_eq!(bins, ["/sub/ok"], "{doc}");
    let unreadable = doc["image"]["unreadable"].to_string();
    assert!(unreadable.contains("a name with `..`"), "{unreadable}");
    assert!(unreadable.contains("an absolute name"), "{unreadable}");
    assert_eq!(doc["checks"].as_array().unwrap().iter().filter(|c| c["name"] == "image_walk").count(), 1);
    assert!(!outside.exists(), "nothing written outside");
}

/// The deltas of a `--baseline` run: (change, key, was, now).
fn deltas(doc: &Value) -> Vec<(String, String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or("-").to_string();
    doc["baseline"]["deltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (s(&d["change"]), s(&d["key"]), s(&d["was"]), s(&d["now"])))
        .collect()
}

/// An upgrade, bookworm (glibc 2.36) to trixie (glibc 2.41) with a raw
/// clock program added: getrandom fixed, the program new, exit 1; an
/// image against its own baseline: nothing new, exit 0.
#[test]
fn a_baseline_shows_what_an_upgrade_changed() {
    if !have_podman() {
        return;
    }
    let Some(trixie) = trixie_root() else { return };
    let libs = super::check::ldd(&super::common::build_c("wait_ready", false, &[]));
    let find = |n: &str| libs.iter().find(|p| p.file_name().is_some_and(|f| f == n)).cloned().unwrap();
    if super::common::major_minor(&super::common::glibc_version()) >= (2, 41) {
        return skip("this host's glibc is 2.41 or later: it makes no bookworm root");
    }
    let old = random_root(&find("libc.so.6"), &find("ld-linux-x86-64.so.2"));
    let new = random_root(&trixie.join("libc.so.6"), &trixie.join("ld-linux-x86-64.so.2"));
    let clock_loop = super::common::build_c("clock_loop", false, &[]);
    super::check::install(new.path(), &clock_loop, "/usr/bin/clock_loop");
    let out = tempfile::tempdir().unwrap();
    let old_saved = saved(old.path(), out.path(), "bookworm");
    let new_saved = saved(new.path(), out.path(), "trixie");
    let base = out.path().join("bookworm.baseline.json");
    let base_s = base.to_str().unwrap();
    let (code, stdout, stderr) = run(&["check", "--image", old_saved[0].to_str().unwrap(), "--save-baseline", base_s]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // No pid, time or host fact: the same image as an OCI archive, or
    // unpacked, writes the same bytes.
    let text = std::fs::read_to_string(&base).unwrap();
    for other in [old_saved[1].as_path(), old.path()] {
        let again = out.path().join("again.json");
        let (code, _, _) =
            run(&["check", "--image", other.to_str().unwrap(), "--save-baseline", again.to_str().unwrap()]);
        assert_eq!(code, 0);
        assert_eq!(std::fs::read_to_string(&again).unwrap(), text, "{}", other.display());
    }
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["format"], "vdsoctl-baseline/1");
    assert!(!text.contains("vdso_symbols") && !text.contains("\"vsyscall\""), "no host rows: {text}");
    assert_eq!(doc["runtimes"], serde_json::json!([format!("glibc {}", super::common::glibc_version())]));

    // The upgrade, from its OCI archive.
    let (code, stdout, stderr) =
        run(&["--json", "check", "--image", new_saved[1].to_str().unwrap(), "--baseline", base_s]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let glibc = super::common::glibc_version();
    let row = |c: &str, k: &str, w: &str, n: &str| (c.to_string(), k.to_string(), w.to_string(), n.to_string());
    assert_eq!(
        deltas(&doc),
        [
            row("new", "/usr/bin/clock_loop", "-", "fail"),
            row("new", "/usr/bin/getrandom_loop", "ok", "fail"),
            row("fixed", &format!("random:glibc-{glibc}"), "warn", "-"),
        ],
        "{:#}",
        doc["baseline"]
    );
    assert_eq!(doc["baseline"]["runtimes_now"], serde_json::json!(["glibc 2.41"]));
    let (code, table, _) = run(&["check", "--image", new_saved[1].to_str().unwrap(), "--baseline", base_s]);
    assert_eq!(code, 1);
    assert!(table.contains("2 new, 1 fixed, 0 unchanged at WARN or FAIL — exit 1: something new"), "{table}");
    assert!(
        table.contains(&format!("FIXED random:glibc-{glibc}: WARN → absent: random bytes take a syscall")),
        "{table}"
    );

    // The same image against its own baseline: nothing new, exit 0; its
    // WARN, unchanged, is waived as baselined (INFO), so the verdict is OK.
    let (code, stdout, stderr) =
        run(&["--json", "check", "--image", old_saved[2].to_str().unwrap(), "--baseline", base_s]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(deltas(&doc), [row("unchanged", &format!("random:glibc-{glibc}"), "warn", "warn")]);
    assert_eq!(doc["status"], "ok", "{doc:#}");
    assert!(doc["waived"]["baselined"].as_u64().is_some_and(|n| n >= 1), "{:#}", doc["waived"]);
    // A baseline that is not one: one line, exit 3.
    let (code, _, stderr) = run(&["check", "--image", old.path().to_str().unwrap(), "--baseline", "/etc/hostname"]);
    assert_eq!((code, stderr.lines().count()), (3, 1), "{stderr}");
    assert!(stderr.starts_with("vdsoctl: baseline /etc/hostname is malformed: "), "{stderr}");
}

/// A correct 32-bit program (its facts are INFO, not WARN) passes
/// `check --image --strict`, unpacked and as the archive podman saves.
#[test]
fn a_correct_32bit_program_passes_strict() {
    if !super::common::have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = super::common::build_c("wait_ready", true, &[]);
    super::check::install(dir.path(), &prog, "/usr/bin/wait_ready32");
    for lib in super::check::ldd(&prog) {
        super::check::install(dir.path(), &lib, &lib.display().to_string());
    }
    let root = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--strict", "--image", root]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let prog = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == "/usr/bin/wait_ready32").unwrap();
    assert_eq!(
        (prog["verdict_kind"].as_str(), prog["status"].as_str()),
        (Some("compat-32bit"), Some("info")),
        "{prog}"
    );
    assert_eq!(prog["bits"], 32, "{prog}");
    let flagged: Vec<_> = doc["checks"].as_array().unwrap().iter().filter(|c| c["status"] == "warn").collect();
    assert!(flagged.is_empty(), "{flagged:?}");
    if have_podman() {
        let out = tempfile::tempdir().unwrap();
        let saved = saved(dir.path(), out.path(), "m32");
        let (code, stdout, _) = run(&["check", "--strict", "--image", saved[0].to_str().unwrap()]);
        assert_eq!(code, 0, "{stdout}");
        assert!(stdout.contains("verdict: OK") || stdout.contains("verdict: INFO"), "{stdout}");
    }
    // Its raw clock syscall stays a WARN (the gate's business): --strict fails.
    let raw = super::common::build_c("clock_loop", true, &[]);
    super::check::install(dir.path(), &raw, "/usr/bin/clock_loop32");
    let (code, stdout, _) = run(&["--json", "check", "--strict", "--image", root]);
    assert_eq!(code, 1, "{stdout}");
}

/// `check -- CMD` against a baseline: the calls per process name, function
/// and clock; a raw clock loop against a libc one's baseline is new (exit
/// 1), against its own unchanged (exit 0), and a libc loop against the raw
/// one's fixed (exit 0). Two runs write the same baseline bytes.
#[test]
fn a_command_baseline_counts_per_name_function_and_clock() {
    let prog = super::common::build_c("clock_loop", false, &[]);
    let p = prog.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (libc, raw, again) = (dir.path().join("libc.json"), dir.path().join("raw.json"), dir.path().join("again.json"));
    let save = |file: &Path, mode: &str| {
        let (code, stdout, stderr) =
            run(&["check", "--save-baseline", file.to_str().unwrap(), "--", p, mode, "1", "250"]);
        (code, stdout, stderr)
    };
    let (code, _, stderr) = save(&libc, "libc");
    if stderr.contains("no engine") {
        return skip("no trace engine may count the command here");
    }
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(save(&raw, "raw").0, 1);
    assert_eq!(save(&again, "raw").0, 1);
    let text = std::fs::read_to_string(&raw).unwrap();
    assert_eq!(text, std::fs::read_to_string(&again).unwrap(), "no pid or time in a baseline");
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["kind"], "command");
    let calls = doc["calls"].as_array().unwrap();
    let call = calls.iter().find(|c| c["clock"] == "CLOCK_MONOTONIC").unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(
        call,
        &serde_json::json!({"process": "clock_loop", "function": "clock_gettime",
        "clock": "CLOCK_MONOTONIC", "count": 250, "expected": false})
    );
    let compare = |base: &Path, mode: &str| {
        let (code, stdout, stderr) =
            run(&["--json", "check", "--baseline", base.to_str().unwrap(), "--", p, mode, "1", "250"]);
        let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        (code, deltas(&doc))
    };
    let row = |c: &str, k: &str, w: &str, n: &str| (c.to_string(), k.to_string(), w.to_string(), n.to_string());
    let call = "clock_loop clock_gettime CLOCK_MONOTONIC";
    assert_eq!(
        compare(&libc, "raw"),
        (1, vec![row("new", call, "-", "fail"), row("new", "command_trace", "ok", "fail")])
    );
    assert_eq!(
        compare(&raw, "raw"),
        (0, vec![row("unchanged", call, "fail", "fail"), row("unchanged", "command_trace", "fail", "fail")])
    );
    assert_eq!(
        compare(&raw, "libc"),
        (0, vec![row("fixed", call, "fail", "-"), row("fixed", "command_trace", "fail", "ok")])
    );
    // Neither an image nor a command: a usage error.
    let (code, _, stderr) = run(&["check", "--baseline", raw.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
}
