//! Regressions found by the differential review of the #35 refactor (old
//! and new release binaries on the same inputs): each test is the hard
//! case that told them apart, or a hostile input both must refuse alike.

use super::common::run;
use serde_json::Value;
use std::path::Path;

/// The x86_64 vDSO fixture with `patch` applied: a small, valid ELF whose
/// header fields a test can make hostile.
fn hostile_copy(dir: &Path, name: &str, patch: impl Fn(&mut Vec<u8>)) {
    let mut b = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/vdso/x86_64.so")).unwrap();
    patch(&mut b);
    let path = dir.join(name);
    std::fs::write(&path, &b).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// e_phnum 65535, e_phoff past 2^63 (where pread says EINVAL), and a
/// file cut after its ELF header; beside them the fixture as it is.
fn hostile_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    hostile_copy(dir.path(), "good", |_| {});
    hostile_copy(dir.path(), "phnum", |b| b[0x38..0x3a].copy_from_slice(&u16::MAX.to_le_bytes()));
    hostile_copy(dir.path(), "phoff", |b| b[0x20..0x28].copy_from_slice(&(u64::MAX - 7).to_le_bytes()));
    hostile_copy(dir.path(), "head64", |b| b.truncate(64));
    dir
}

/// A header that points past any file is a malformed executable, said as
/// such: never "cannot read executable … check that it is readable" (the
/// EINVAL of a pread at an offset no file has), and never a panic.
#[test]
fn hostile_headers_in_an_image_are_malformed_not_unreadable() {
    let dir = hostile_dir();
    let (code, stdout, stderr) = run(&["--json", "check", "--image", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let mut said: Vec<(String, String)> = report["image"]["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e[0].as_str().unwrap().to_string(), e[1].as_str().unwrap().to_string()))
        .collect();
    said.sort();
    let want = [
        ("/head64", "executable is malformed: program headers past the end of the file"),
        ("/phnum", "executable is malformed: 65535 program headers"),
        ("/phoff", "executable is malformed: program headers past the end of the file"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(p, w)| (p.to_string(), w.to_string())).collect();
    assert_eq!(said, want);
}

/// `dump --file` of the same files: exit 3, one line that says malformed.
#[test]
fn hostile_headers_to_dump_are_one_line_refusals() {
    let dir = hostile_dir();
    for name in ["phnum", "phoff", "head64"] {
        let path = dir.path().join(name);
        let (code, stdout, stderr) = run(&["dump", "--file", path.to_str().unwrap()]);
        assert_eq!((code, stdout.as_str()), (3, ""), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.starts_with(&format!("vdsoctl: {} is malformed: ", path.display())), "{name}: {stderr}");
    }
}

/// `check --baseline FILE -- CMD` reads FILE before the command runs: a
/// missing or malformed baseline is refused (exit 3, one line) and the
/// command never starts (it used to run to its end first).
#[test]
fn a_bad_baseline_is_refused_before_the_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"format\": \"not a baseline\"}\n").unwrap();
    let missing = dir.path().join("missing.json");
    let script = format!("touch '{}'", marker.display());
    for baseline in [&bad, &missing] {
        let (code, stdout, stderr) =
            run(&["check", "--baseline", baseline.to_str().unwrap(), "--", "sh", "-c", &script]);
        assert_eq!((code, stdout.as_str()), (3, ""), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(baseline.to_str().unwrap()), "{stderr}");
        assert!(!marker.exists(), "the command ran before the baseline was read: {stderr}");
    }
}

/// `--fail-over` means nothing to a seccomp profile's audit: refused with
/// it (exit 2), as with -p, --image and -- CMD, never silently ignored.
#[test]
fn fail_over_with_a_seccomp_profile_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    std::fs::write(&profile, "{\"defaultAction\": \"SCMP_ACT_ALLOW\"}\n").unwrap();
    let profile = profile.to_str().unwrap();
    let (code, _, stderr) = run(&["check", "--seccomp-profile", profile, "--fail-over", "5"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("'--fail-over <RATE>'") && stderr.contains("'--seccomp-profile <FILE>'"), "{stderr}");
    let (code, _, stderr) = run(&["check", "--seccomp-profile", profile]);
    assert_eq!(code, 0, "{stderr}");
}
