//! The typed JSON contract of `check`: host, process and image tree.

use super::*;

#[test]
fn check_of_the_host_and_of_a_process() {
    let host: CheckDoc = doc(&["check"], &[0, 1]);
    assert!(host.process.is_none() && host.binaries.is_none() && host.image.is_none() && host.command.is_none());
    assert!(host.binary.is_none());
    assert!(!host.strict);
    assert!(host.checks.iter().any(|c| c.name == "vdso_mapped"));
    assert_worst(&host);

    let w = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let p: CheckDoc = doc(&["check", "-p", &w.pid().to_string()], &[0, 1]);
    let process = p.process.as_ref().expect("check -p names the process");
    assert_eq!(process.pid, w.pid());
    assert!(process.comm.starts_with("wait_ready"));
    assert!(p.checks.iter().any(|c| c.name == "process_vdso_mapped" && c.status == Status::Ok));
    let b = p.binary.as_ref().expect("check -p carries the executable's facts");
    assert_eq!((b.bits, b.class.as_str(), b.linkage.as_str(), b.kind.as_str()), (64, "ELF64", "dynamic", "executable"));
    assert_eq!(b.runtime, "glibc", "{b:?}");
    assert!(b.runtime_version.is_some() && b.interpreter.as_deref().is_some_and(|i| i.contains("ld-linux")), "{b:?}");
    if cfg!(target_arch = "x86_64") {
        assert_eq!((b.machine.as_str(), b.arch.as_str(), b.endian.as_str()), ("x86_64", "amd64", "little"));
    }
    assert_worst(&p);
}

/// The host check beside a raw caller: its `host_trace` row carries the
/// calls folded by program (`groups`, trace's shape), the program's count
/// the sum of its calls — always, not only when the host happens to hold
/// a bypass.
#[test]
fn the_host_check_folds_its_calls_by_program() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = super::super::common::system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("raw_caller");
    copy_executable(&build_c("clock_loop", false, &[]), &exe).unwrap();
    let mut cmd = Command::new(&exe);
    cmd.args(["paced", "1", "500"]);
    let _w = Workload::start(cmd);
    let host: CheckDoc = doc(&["check"], &[0, 1]);
    let row = host.checks.iter().find(|c| c.name == "host_trace").expect("a host_trace row as root");
    let groups = row.groups.as_ref().unwrap_or_else(|| panic!("host_trace carries groups: {row:?}"));
    // Keyed by its executable, or by its name when the window never read it.
    let mine = groups
        .rows
        .iter()
        .find(|g| g.key.as_deref() == exe.to_str() || g.key.as_deref() == Some("raw_caller"))
        .unwrap_or_else(|| panic!("{groups:?}"));
    let calls = row.calls.as_ref().expect("calls");
    let sum: u64 = calls.iter().filter(|c| c.comm.as_deref() == Some("raw_caller")).map(|c| c.count).sum();
    assert_eq!((mine.processes, mine.count), (1, sum), "{groups:?}");
    assert!(sum > 0, "{calls:?}");
}

#[test]
fn check_of_a_small_image_tree() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("usr/bin")).unwrap();
    copy_executable(&build_c("wait_ready", false, &[]), &dir.path().join("usr/bin/wait_ready")).unwrap();
    let root = dir.path().to_str().unwrap();
    let c: CheckDoc = doc(&["check", "--image", root], &[0, 1]);
    let bins = c.binaries.as_ref().expect("--image lists binaries");
    let img = c.image.as_ref().expect("--image says what it walked");
    assert_eq!((img.format.as_str(), img.layers), ("directory", 0));
    assert!(c.baseline.is_none());
    // Against a baseline of the tree with its program elsewhere: one OK
    // binary added and one removed (counted, not listed), nothing new.
    let base = dir.path().join("base.json");
    std::fs::rename(dir.path().join("usr/bin/wait_ready"), dir.path().join("wait_ready")).unwrap();
    std::fs::copy("/bin/true", dir.path().join("usr/bin/true")).unwrap();
    doc::<CheckDoc>(&["check", "--image", root, "--save-baseline", base.to_str().unwrap()], &[0]);
    std::fs::rename(dir.path().join("wait_ready"), dir.path().join("usr/bin/wait_ready")).unwrap();
    let d: CheckDoc = doc(&["check", "--image", root, "--baseline", base.to_str().unwrap()], &[0]);
    let d = d.baseline.expect("--baseline says what changed");
    assert_eq!((d.new, d.fixed, d.unchanged, d.added_ok, d.removed_ok), (0, 0, 0, 1, 1), "{d:?}");
    assert!(d.deltas.is_empty() && d.runtimes_was.is_empty() && d.runtimes_now.is_empty() && !d.file.is_empty());
    let b = bins.iter().find(|b| b.path == "/usr/bin/wait_ready").expect("the program is listed");
    assert_eq!((b.class.as_str(), b.linkage.as_str(), b.kind.as_str()), ("ELF64", "dynamic", "executable"));
    assert_eq!((b.runtime.as_str(), b.status == Status::Ok), ("glibc", true), "{b:?}");
    assert!(b.interpreter.as_deref().is_some_and(|i| i.contains("ld-linux")));
    assert!(!b.machine.is_empty() && !b.detail.is_empty() && b.hint.is_none());
    if cfg!(target_arch = "x86_64") {
        assert_eq!((b.machine.as_str(), b.arch.as_str(), b.endian.as_str()), ("x86_64", "amd64", "little"));
    }
    // No libc in the tree: its version cannot be read, nor so what its
    // random bytes take.
    assert_eq!(b.runtime_version, None);
    assert_eq!((b.random.runtime.as_deref(), b.random.version.as_deref()), (Some("glibc"), None));
    assert_eq!(b.random.path, "unknown");
    // The typed object says what the flat keys say.
    let flat = BinaryFacts {
        class: b.class.clone(),
        bits: b.bits,
        machine: b.machine.clone(),
        arch: b.arch.clone(),
        endian: b.endian.clone(),
        linkage: b.linkage.clone(),
        interpreter: b.interpreter.clone(),
        kind: b.kind.clone(),
        runtime: b.runtime.clone(),
        runtime_version: b.runtime_version.clone(),
    };
    assert_eq!((b.binary.clone(), b.bits), (flat, 64));
    let image = c.image.as_ref().unwrap();
    assert_eq!(image.root, root);
    assert!(image.entries >= 3 && !image.truncated && image.unreadable.is_empty(), "{image:?}");
    assert_eq!((image.unreadable_count, image.selected.is_none()), (0, true), "{image:?}");
    assert!(image.skipped.iter().chain(&image.excluded).all(|s| !s.is_empty()));
    assert_worst(&c);
}
