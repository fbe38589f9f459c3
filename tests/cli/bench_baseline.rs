//! `bench --save-baseline` / `--baseline`: the saved rows round-trip, and a
//! hand-edited baseline (10× faster or slower, a path that made no
//! syscall) gives slower / faster and the exit code, whatever the host's
//! speed. A baseline of another kind is a one-line error.

use super::common::{skip, vdsoctl};
use serde_json::Value;
use std::path::Path;

const SELECT: [&str; 5] = ["--quick", "--functions", "clock_gettime,time", "--clocks", "MONOTONIC"];

/// `bench --json` with the selection and `args`: exit code and document.
fn bench(args: &[&str]) -> (i32, Value) {
    let out = vdsoctl().arg("--json").arg("bench").args(SELECT).args(args).output().expect("run vdsoctl");
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}) exit {code}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    (code, doc)
}

fn load(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Save `doc` after `edit` changed each bench row.
fn save_edited(doc: &Value, p: &Path, edit: impl Fn(&mut Value)) {
    let mut doc = doc.clone();
    doc["bench"].as_array_mut().unwrap().iter_mut().for_each(edit);
    std::fs::write(p, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

/// The `move` of every compared row, keyed `function clock path`.
fn moves(doc: &Value) -> Vec<(String, String)> {
    doc["baseline"]["rows"]
        .as_array()
        .expect("baseline rows")
        .iter()
        .map(|r| (format!("{} {} {}", r["function"], r["clock"], r["path"]), r["move"].as_str().unwrap().to_string()))
        .collect()
}

/// 1000 s in ns: a median or spread no run of `bench --quick` comes near.
const WIDE: f64 = 1e12;

#[test]
fn bench_baseline_saves_compares_and_gates() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("bench.json");
    let (code, _) = bench(&["--save-baseline", saved.to_str().unwrap()]);
    assert_eq!(code, 0);
    let base = load(&saved);
    assert_eq!((base["format"].as_str(), base["kind"].as_str()), (Some("vdsoctl-baseline/2"), Some("bench")));
    let rows = base["bench"].as_array().unwrap();
    // clock_gettime MONOTONIC and time, each on libc, vdso and syscall at least.
    assert!(rows.len() >= 6, "{base}");
    let mut keys: Vec<String> =
        rows.iter().map(|r| format!("{} {} {}", r["function"], r["clock"], r["path"])).collect();
    let sorted = {
        let mut k = keys.clone();
        k.sort();
        k
    };
    assert_eq!(keys, sorted, "rows sorted");
    keys.dedup();
    assert_eq!(keys.len(), rows.len());
    assert!(rows.iter().all(|r| r["ns_per_call"].as_f64().unwrap() > 0.0 && r["mad"].is_number()), "{base}");
    assert!(!std::fs::read_to_string(&saved).unwrap().contains("pid"), "no host noise");

    // No comparison of two runs' speeds (the host's load decides those;
    // the rule itself is `model::bench_baseline`'s unit tests): every
    // edit below is beyond what any run can measure. The same rows with
    // a spread of 1000 s: unchanged, whatever this run's time.
    let same = dir.path().join("same.json");
    save_edited(&base, &same, |r| r["mad"] = WIDE.into());
    let (code, doc) = bench(&["--baseline", same.to_str().unwrap()]);
    assert_eq!(code, 0, "{}", doc["baseline"]);
    assert_eq!(doc["baseline"]["slower"], 0);
    assert_eq!((doc["baseline"]["added"].as_u64(), doc["baseline"]["gone"].as_u64()), (Some(0), Some(0)));
    assert_eq!(moves(&doc).len(), rows.len());

    // An old median of 1000 s a call: every row faster (unless this run's
    // spread were above 300 s a call), exit 0.
    let slow_then = dir.path().join("slow.json");
    save_edited(&base, &slow_then, |r| {
        r["ns_per_call"] = WIDE.into();
        r["mad"] = 0.0.into();
    });
    let (code, doc) = bench(&["--baseline", slow_then.to_str().unwrap()]);
    assert_eq!(code, 0, "{}", doc["baseline"]);
    assert!(moves(&doc).iter().all(|(_, m)| m == "faster"), "{:?}", moves(&doc));
    assert_eq!(doc["baseline"]["slower"], 0);

    // The syscall path made no syscall then and one per call now: slower
    // (the gate that exits 1), at an unchanged (1000 s spread) time.
    if base["bench"][0]["syscalls_per_call"].is_null() {
        return skip("perf cannot count syscalls here: the syscalls/call gate is not tested");
    }
    let no_syscalls = dir.path().join("nosys.json");
    save_edited(&base, &no_syscalls, |r| {
        r["mad"] = WIDE.into();
        if r["path"] == "syscall" {
            r["syscalls_per_call"] = 0.0.into();
        }
    });
    let (code, doc) = bench(&["--baseline", no_syscalls.to_str().unwrap()]);
    assert_eq!(code, 1, "{}", doc["baseline"]);
    for r in doc["baseline"]["rows"].as_array().unwrap() {
        let want = if r["path"] == "syscall" { "slower" } else { "unchanged" };
        assert_eq!(r["move"], want, "{r}");
        if r["path"] == "syscall" {
            assert_eq!(r["reasons"], serde_json::json!(["syscalls"]), "{r}");
        }
    }
}

#[test]
fn bench_baseline_of_another_kind_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let check = dir.path().join("check.json");
    let doc = r#"{"format":"vdsoctl-baseline/1","kind":"image","runtimes":[],"binaries":[],"findings":[]}"#;
    std::fs::write(&check, doc).unwrap();
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    let missing = dir.path().join("missing.json");
    for (file, words) in
        [(&check, "kind \"image\", this compares bench"), (&garbage, "expected"), (&missing, "missing.json")]
    {
        let out = vdsoctl().args(["bench", "--quick", "--baseline", file.to_str().unwrap()]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        assert_ne!(out.status.code(), Some(1), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing measured: {}", String::from_utf8_lossy(&out.stdout));
        assert!(stderr.contains(words), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.trim_end().lines().count() <= 2, "one line (and its hint): {stderr}");
    }
    // The mirror: a bench baseline given to check (an image of one binary).
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::copy("/bin/true", root.join("usr/bin/true")).unwrap();
    let bench = dir.path().join("bench.json");
    std::fs::write(&bench, r#"{"format":"vdsoctl-baseline/1","kind":"bench","bench":[]}"#).unwrap();
    let out = vdsoctl()
        .args(["check", "--image", root.to_str().unwrap(), "--baseline", bench.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("kind \"bench\", this compares image"), "{stderr}");
}

/// A baseline saved on another architecture (an aarch64 host's `bench`,
/// an aarch64 `check -- CMD`, an arm64 image's audit) read here is
/// refused: one line and its hint, exit 3, before anything is measured
/// or run (the image: once its binaries are known, nothing saved); a
/// saved baseline keeps the machine it ran on, as `uname -m` names it; a
/// command's baseline given to `check --image` is of another kind.
#[test]
fn a_baseline_of_another_architecture_is_refused() {
    let here = super::common::host_machine();
    let other = if here == "aarch64" { "x86_64" } else { "aarch64" };
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, doc: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, doc).unwrap();
        p.to_str().unwrap().to_string()
    };
    let bench =
        file("bench.json", &format!(r#"{{"format":"vdsoctl-baseline/2","kind":"bench","bench":[],"arch":"{other}"}}"#));
    let command = file(
        "command.json",
        &format!(r#"{{"format":"vdsoctl-baseline/2","kind":"command","findings":[],"calls":[],"arch":"{other}"}}"#),
    );
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::copy("/bin/true", root.join("usr/bin/true")).unwrap();
    let image = file(
        "image.json",
        &format!(
            r#"{{"format":"vdsoctl-baseline/2","kind":"image","runtimes":[],"findings":[],"binaries":[{{"path":"/usr/bin/true","sha256":"00","class":"ELF64","machine":"{other}","runtime":{{"runtime":"glibc","version":"2.36"}},"status":"ok","kinds":[],"detail":"","random":"vdso"}}]}}"#
        ),
    );
    let marker = dir.path().join("ran");
    let root = root.to_str().unwrap();
    let said = format!("of {other}, this is {here}");
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["bench", "--quick", "--baseline", &bench], said.as_str()),
        (vec!["check", "--baseline", &command, "--", "touch", marker.to_str().unwrap()], said.as_str()),
        (vec!["check", "--image", root, "--baseline", &image, "--save-baseline", &image], said.as_str()),
        (vec!["check", "--image", root, "--baseline", &command], "kind \"command\", this compares image"),
    ];
    for (args, words) in cases {
        let out = vdsoctl().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let lines: Vec<&str> =
            stderr.trim_end().lines().filter(|l| l.contains(&*dir.path().to_string_lossy())).collect();
        assert_eq!(lines.len(), 1, "one line (and its hint): {stderr}");
        if args[0] == "bench" || args.contains(&"--") {
            assert!(out.stdout.is_empty(), "nothing measured or run: {}", String::from_utf8_lossy(&out.stdout));
        }
    }
    assert!(!marker.exists(), "the command did not run");
    assert!(std::fs::read_to_string(&image).unwrap().contains(other), "the refused baseline was not overwritten");
    // A baseline saved here says where it ran.
    let saved = dir.path().join("saved.json");
    let out = vdsoctl().args(["check", "--save-baseline", saved.to_str().unwrap(), "--", "true"]).output().unwrap();
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(load(&saved)["arch"], here.as_str());
}
