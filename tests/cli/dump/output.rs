//! `dump --output`: whole files only, never through a symlink, FIFO or device.

use super::*;

/// A fresh directory under the test tmp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = tmp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn output_replaces_a_regular_file_whole() {
    let dir = fresh_dir("out-regular");
    let target = dir.join("vdso.so");
    std::fs::write(&target, vec![b'x'; 20000]).unwrap();
    let (code, err) = dump_to(&target);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&target).unwrap() == std::fs::read(fixture("x86_64.so")).unwrap());
    assert_eq!(entries(&dir), ["vdso.so"]);
}

#[test]
fn output_never_writes_through_a_symlink() {
    let dir = fresh_dir("out-symlink");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.join("vdso.so");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let (code, err) = dump_to(&link);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("it is a symbolic link — vdsoctl creates a file or replaces a regular one"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(entries(&dir), ["vdso.so", "victim"]);
}

#[test]
fn output_refuses_fifo_directory_and_devices_without_opening_them() {
    let dir = fresh_dir("out-special");
    let fifo = dir.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let (code, err) = dump_to(&fifo);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("it is a FIFO"), "{err}");
    // Refused without opening: an open for writing would block until a
    // reader came, and none ever does, so this test would hang, not fail.
    let (code, err) = dump_to(&dir);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("it is a directory"), "{err}");
    let (code, err) = dump_to(Path::new("/dev/full"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("refusing to write /dev/full: it is a character device"), "{err}");
    let (code, err) = dump_to(Path::new("/dev/null"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("it is a character device"), "{err}");
    assert_eq!(entries(&dir), ["fifo"]);
}

#[test]
fn output_on_a_full_filesystem_leaves_no_partial_file() {
    if !common::is_root() {
        return skip("mounting a tiny tmpfs needs root");
    }
    let dir = fresh_dir("out-enospc");
    let ok = Command::new("mount").args(["-t", "tmpfs", "-o", "size=4k", "tmpfs"]).arg(&dir).status().unwrap();
    assert!(ok.success(), "mount tmpfs on {}", dir.display());
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(dir.clone());
    let old = dir.join("old.so");
    std::fs::write(&old, b"old").unwrap();
    // 8 KiB into a one-page filesystem: ENOSPC part way.
    let (code, err) = dump_to(&dir.join("new.so"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cannot write") && err.contains("no space left on device (ENOSPC)"), "{err}");
    assert_eq!(entries(&dir), ["old.so"]);
    // Replacing a file that exists: it stays as it was.
    let (code, err) = dump_to(&old);
    assert_eq!(code, 3, "{err}");
    assert_eq!(std::fs::read(&old).unwrap(), b"old");
    assert_eq!(entries(&dir), ["old.so"]);
}
