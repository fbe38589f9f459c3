//! Output files (`--export-json`, `dump -o`, `--save-baseline`): created
//! with vdsoctl's own mode, their directory checked before the work, the
//! report printed when the write fails; and a link the user names as an
//! input (`--baseline`, `--seccomp-profile`, a ConfigMap's `..data`) is
//! followed.

use super::common::{build_c, copy_executable, is_root, run, run_as_nobody, skip};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// A tree with one ELF program: `check --image` has something to judge.
fn tree(at: &Path) -> String {
    std::fs::create_dir_all(at.join("usr/bin")).unwrap();
    copy_executable(&build_c("clock_once", false, &[]), &at.join("usr/bin/clock_once")).unwrap();
    at.to_str().unwrap().to_string()
}

/// Root fills a `-rwsrwsrwx` file another user planted: the result is
/// root's own 0644 (less the umask), never the planted bits.
#[test]
fn a_planted_setuid_file_is_replaced_with_vdsoctls_own_mode() {
    if !is_root() {
        return skip("a file another user planted for root to fill needs root to test");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = tree(&dir.path().join("img"));
    for (name, args) in [
        ("report.json", vec!["check", "--image", &root, "--export-json"]),
        ("vdso.so", vec!["dump", "-o"]),
        ("base.json", vec!["check", "--image", &root, "--save-baseline"]),
    ] {
        let planted = dir.path().join(name);
        std::fs::write(&planted, "planted").unwrap();
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o6777)).unwrap();
        let mut args = args.clone();
        args.push(planted.to_str().unwrap());
        let (code, stdout, stderr) = run(&args);
        assert!(matches!(code, 0 | 1), "{args:?}: {code} {stdout}{stderr}");
        let m = std::fs::symlink_metadata(&planted).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o7000), (0, 0), "{name}: {:o}", m.mode());
        assert_eq!(m.mode() & 0o022, 0, "{name}: no group/other write: {:o}", m.mode());
    }
}

/// A missing or read-only directory for an output is exit 3 before any
/// work: one line, nothing on stdout.
#[test]
fn an_unwritable_output_directory_is_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(&dir.path().join("img"));
    let missing = dir.path().join("missing/base.json");
    let (code, stdout, stderr) = run(&["check", "--image", &root, "--save-baseline", missing.to_str().unwrap()]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let (code, stdout, _) = run(&["dump", "-o", missing.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (3, ""));
    if !is_root() {
        return skip("a directory another user cannot write needs root to set up");
    }
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = ro.join("report.json");
    let o = run_as_nobody(&["check", "--image", &root, "--export-json", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
}

/// A baseline that cannot be written (a full filesystem) after the work:
/// the report and the verdict are printed all the same, then the error
/// (exit 3 for a clean verdict).
#[test]
fn the_report_is_printed_when_the_baseline_write_fails() {
    if !is_root() {
        return skip("a full filesystem (a 64 KiB tmpfs) needs root to mount");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = tree(&dir.path().join("img"));
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let mount = |args: &[&str]| std::process::Command::new(args[0]).args(&args[1..]).status().unwrap().success();
    assert!(mount(&["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full.to_str().unwrap()]));
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(full.clone());
    let _ = std::fs::write(full.join("filler"), vec![0u8; 1 << 20]);
    let base = full.join("base.json");
    let (code, stdout, stderr) = run(&["check", "--image", &root, "--save-baseline", base.to_str().unwrap()]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stdout.contains("verdict: "), "the report is printed: {stdout}");
    assert!(stderr.contains("cannot write"), "{stderr}");
}

/// A link the user names is followed: a baseline and a seccomp profile
/// behind a ConfigMap's `..data` links (`file -> ..data/file`,
/// `..data -> ..2026_12_02`).
#[test]
fn links_the_user_names_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(&dir.path().join("img"));
    let cm = dir.path().join("cm");
    let real = cm.join("..2026_12_02");
    std::fs::create_dir_all(&real).unwrap();
    let (code, _, stderr) =
        run(&["check", "--image", &root, "--save-baseline", real.join("base.json").to_str().unwrap()]);
    assert!(matches!(code, 0 | 1), "{stderr}");
    let profile = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["clock_gettime","clock_gettime64","gettimeofday","time","getrandom"],"action":"SCMP_ACT_ALLOW"}]}"#;
    std::fs::write(real.join("profile.json"), profile).unwrap();
    std::os::unix::fs::symlink("..2026_12_02", cm.join("..data")).unwrap();
    for name in ["base.json", "profile.json"] {
        std::os::unix::fs::symlink(format!("..data/{name}"), cm.join(name)).unwrap();
    }
    let base = cm.join("base.json");
    let (code, stdout, stderr) = run(&["check", "--image", &root, "--baseline", base.to_str().unwrap()]);
    assert!(matches!(code, 0 | 1), "{stdout}{stderr}");
    assert!(!stderr.contains("ELOOP"), "{stderr}");
    let (code, stdout, stderr) = run(&["check", "--seccomp-profile", cm.join("profile.json").to_str().unwrap()]);
    assert!(matches!(code, 0 | 1), "{stdout}{stderr}");
    assert!(!stderr.contains("ELOOP"), "{stderr}");
}
