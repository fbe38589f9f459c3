//! The runtimes a program carries beside its C library, each judged by its
//! row of `arch::PATHS` and named in its verdict with its release: real
//! binaries only — vdsoctl itself (rustix and the getrandom crate, their
//! releases checked against Cargo.lock), Debian's (or NodeSource's) Node
//! with its libuv, CPython, OpenSSL's CLI and libcrypto (their releases
//! checked against `openssl version`), each site against `objdump -d`.

use super::common::{self, build_c, run, skip, vdsoctl_path};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `from` at `at` in `root`: a hard link where the file system allows,
/// else a copy.
fn install(root: &Path, from: &Path, at: &str) -> PathBuf {
    let dest = root.join(at.trim_start_matches('/'));
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    if std::fs::hard_link(from, &dest).is_err() {
        std::fs::copy(from, &dest).unwrap_or_else(|e| panic!("copy {} → {}: {e}", from.display(), dest.display()));
    }
    dest
}

/// `check --json --image ROOT`'s document.
fn audit(root: &Path) -> serde_json::Value {
    let (_, stdout, stderr) = run(&["--json", "check", "--image", root.to_str().unwrap()]);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}{stderr}"))
}

/// The findings of `path` that name carried runtime `runtime`.
fn carried<'a>(doc: &'a serde_json::Value, path: &str, runtime: &str) -> Vec<&'a serde_json::Value> {
    let b = common::binary(doc, path);
    b["findings"].as_array().unwrap().iter().filter(|f| f["carried"]["runtime"] == runtime).collect()
}

/// The one path a finding's `carried` gives `function`.
fn path_of<'a>(f: &'a serde_json::Value, function: &str) -> Option<&'a serde_json::Value> {
    f["carried"]["paths"].as_array().unwrap().iter().find(|p| p["function"] == function)
}

/// vdsoctl's own binary carries rustix and the getrandom crate, each
/// named with the release Cargo.lock has (read from rustc's panic
/// locations, `rustix-1.1.6/src/…`); the getrandom crate ≥ 0.3 goes
/// through the C library's getrandom. Its rustix is built for `fs` and
/// `termios` alone (`cargo tree -e features`): no `vdso_wrappers` and no
/// `rand` in `nm`, and no path of theirs is claimed.
#[test]
fn a_rust_program_names_its_crates_and_their_releases() {
    let dir = tempfile::tempdir().unwrap();
    // A copy, not a link: an audit leaves vdsoctl's own file out.
    let to = dir.path().join("usr/bin/rustprog");
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(vdsoctl_path(), &to).unwrap();
    let doc = audit(dir.path());
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).unwrap();
    let locked = |name: &str, v: &str| lock.contains(&format!("name = \"{name}\"\nversion = \"{v}\""));
    let rustix = carried(&doc, "/usr/bin/rustprog", "rustix");
    let f = rustix.first().unwrap_or_else(|| panic!("no rustix: {doc}"));
    let v = f["carried"]["version"].as_str().expect("rustix's release");
    assert!(locked("rustix", v), "rustix {v} is not Cargo.lock's");
    let nm = Command::new("nm").arg(&to).output().expect("nm");
    let nm = String::from_utf8_lossy(&nm.stdout).into_owned();
    let linked = |prefix: &str| nm.lines().any(|l| l.split_whitespace().last().is_some_and(|s| s.starts_with(prefix)));
    assert!(linked("_ZN6rustix"), "nm shows no rustix symbol");
    let vdso = linked("_ZN6rustix7backend13vdso_wrappers");
    let rand = linked("_ZN6rustix7backend4rand");
    let paths: Vec<&str> = rustix
        .iter()
        .flat_map(|f| f["carried"]["paths"].as_array().unwrap())
        .filter_map(|p| p["function"].as_str())
        .collect();
    assert_eq!(paths.contains(&"clock_gettime"), vdso, "{rustix:?}");
    assert_eq!(paths.contains(&"getrandom"), rand, "{rustix:?}");
    assert!(f["detail"].as_str().unwrap().starts_with(&format!("rustix {v}: ")), "{f}");
    let getrandom = carried(&doc, "/usr/bin/rustprog", "getrandom_crate");
    assert!(!getrandom.is_empty(), "{doc}");
    for f in getrandom {
        let v = f["carried"]["version"].as_str().expect("the getrandom crate's release");
        assert!(locked("getrandom", v), "getrandom {v} is not Cargo.lock's");
        let p = path_of(f, "getrandom").unwrap();
        assert_eq!((f["kind"].as_str(), p["path"].as_str()), (Some("binary-ok"), Some("libc")));
    }
}

/// `objdump -d` of `exe` around `addr`: the instruction there.
fn instruction_at(exe: &Path, addr: u64) -> String {
    let out = Command::new("objdump")
        .args(["-d", &format!("--start-address={addr:#x}"), &format!("--stop-address={:#x}", addr + 8)])
        .arg(exe)
        .output()
        .expect("objdump");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let want = format!("{addr:x}:");
    text.lines().find(|l| l.trim_start().starts_with(&want)).unwrap_or("").to_string()
}

/// Node's libuv: `uv_random` makes `syscall(SYS_getrandom)` whatever the C
/// library, and no libuv release reads the vDSO yet — INFO, named, with
/// the site in `uv__getrandom` where Node carries libuv in itself (the
/// site `objdump -d` shows: a call or jump to `syscall@plt`); its OpenSSL
/// seeds itself. Debian's nodejs loads libuv.so.1 instead: named from it.
#[test]
fn node_names_libuv_and_that_no_release_reads_the_vdso() {
    let Some(node) = which("node") else { return skip("node (nodejs) not installed") };
    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), &node, "/usr/bin/node");
    let doc = audit(dir.path());
    let libuv = carried(&doc, "/usr/bin/node", "libuv");
    let f = libuv.first().unwrap_or_else(|| panic!("no libuv in node: {doc}"));
    assert_eq!((f["kind"].as_str(), f["status"].as_str()), (Some("runtime-no-vdso-release"), Some("info")), "{f}");
    let p = path_of(f, "getrandom").unwrap();
    assert_eq!((p["path"].as_str(), p["fixed_in"].as_str()), (Some("syscall"), None), "{f}");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("uv_random") && detail.ends_with("no libuv release reads the vDSO yet"), "{detail}");
    // Where the site is listed, it is the instruction objdump shows.
    let sites = detail.split(" at 0x").skip(1).filter_map(|s| s.split_whitespace().next());
    for hex in sites {
        let addr = u64::from_str_radix(hex, 16).unwrap();
        let insn = instruction_at(&node, addr);
        assert!(insn.contains("syscall@plt"), "{addr:#x}: {insn}");
    }
    // Its raw getrandom there is not the program's own bypass.
    let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == "/usr/bin/node").unwrap();
    assert!(b["findings"].as_array().unwrap().iter().all(|f| f["kind"] != "raw-random-call-site"), "{b}");
}

/// CPython reads random bytes and clocks through the C library (python3
/// imports `getrandom` from glibc: `objdump -T`); OpenSSL's CLI and its
/// libcrypto seed their DRBG with syscalls no release reads from the
/// vDSO, named with the release `openssl version` prints.
#[test]
fn cpython_follows_the_c_library_and_openssl_seeds_itself() {
    // Debian's python3 (a version manager's shim on PATH is a script).
    let debian = Path::new("/usr/bin/python3");
    let python = if debian.exists() { Some(debian.to_path_buf()) } else { which("python3") };
    let (Some(python), Some(openssl)) = (python, which("openssl")) else {
        return skip("python3 or openssl not installed");
    };
    let python = std::fs::canonicalize(python).unwrap();
    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), &python, "/usr/bin/python3");
    install(dir.path(), &openssl, "/usr/bin/openssl");
    let doc = audit(dir.path());
    let imports = Command::new("objdump").arg("-T").arg(&python).output().expect("objdump");
    let imports = String::from_utf8_lossy(&imports.stdout).into_owned();
    let cpython = carried(&doc, "/usr/bin/python3", "cpython");
    let f = cpython.first().unwrap_or_else(|| panic!("no CPython: {doc}"));
    assert_eq!(f["kind"], "binary-ok", "{f}");
    if imports.lines().any(|l| l.contains("*UND*") && l.ends_with(" getrandom")) {
        assert_eq!(path_of(f, "getrandom").unwrap()["path"], "libc", "{f}");
    }
    let version = Command::new("openssl").arg("version").output().expect("openssl version");
    let version = String::from_utf8_lossy(&version.stdout).split_whitespace().nth(1).unwrap_or("").to_string();
    let ossl = carried(&doc, "/usr/bin/openssl", "openssl");
    let f = ossl.first().unwrap_or_else(|| panic!("no OpenSSL: {doc}"));
    assert_eq!((f["kind"].as_str(), f["status"].as_str()), (Some("runtime-no-vdso-release"), Some("info")), "{f}");
    assert_eq!(path_of(f, "getrandom").unwrap()["path"], "seed", "{f}");
    let found = f["carried"]["version"].as_str().unwrap_or("");
    assert!(version.starts_with(found) && !found.is_empty(), "openssl {version}, found {found}");
}

fn which(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file())
}

/// `zig` to build with: `$ZIG`, `zig` on PATH, or the `ziglang` wheel's
/// (`python3 -m ziglang`, what .ci/run installs: Debian packages no Zig).
fn zig() -> Option<Vec<String>> {
    if let Some(z) = std::env::var_os("ZIG") {
        return Some(vec![z.to_string_lossy().into_owned()]);
    }
    if let Some(z) = which("zig") {
        return Some(vec![z.display().to_string()]);
    }
    let wheel = Command::new("python3").args(["-m", "ziglang", "version"]).output().ok()?;
    wheel.status.success().then(|| ["python3", "-m", "ziglang"].map(String::from).to_vec())
}

/// Zig's std without libc looks the vDSO up itself: fixtures/zig/
/// clock_loop.zig's 1,000 CLOCK_MONOTONIC reads make no clock_gettime
/// syscall (`strace -f -c`), and `check --image` names Zig std reading
/// clock_gettime from the vDSO itself, OK.
#[test]
fn zig_std_reads_the_vdso_itself() {
    let Some(zig) = zig() else { return skip("no zig (ZIG, PATH, or `pip install ziglang`)") };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let out = tmp.join("zig-clock-loop");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zig/clock_loop.zig");
    let status = Command::new(&zig[0])
        .args(&zig[1..])
        .args(["build-exe", "-O", "ReleaseSafe", "--cache-dir"])
        .arg(tmp.join("zig-cache"))
        .arg("--global-cache-dir")
        .arg(tmp.join("zig-global-cache"))
        .arg(format!("-femit-bin={}", out.display()))
        .arg(&src)
        .status()
        .expect("zig");
    assert!(status.success(), "zig build-exe {} failed", src.display());
    let calls = super::common::strace_calls("clock_gettime", &[out.display().to_string()]);
    assert_eq!(calls, 0, "strace -f -c counts clock_gettime syscalls of a Zig std program");
    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), &out, "/usr/bin/zig_clock");
    let doc = audit(dir.path());
    let found = carried(&doc, "/usr/bin/zig_clock", "zig");
    let ok = found.iter().find(|f| f["kind"] == "binary-ok").unwrap_or_else(|| panic!("no Zig: {doc}"));
    assert_eq!(path_of(ok, "clock_gettime").unwrap()["path"], "own_vdso", "{ok}");
}

/// The getrandom crate 0.2 (fixtures/rust/getrandom02, 0.2.17 pinned),
/// built here: a release build keeps no panic location of the crate, so
/// its release line comes from its symbols (`getrandom::imp`, which 0.3
/// renamed `backends`). Its `getrandom::getrandom` is a raw syscall every
/// call: N + 1 of its own (a 0-byte probe first), equal to strace's count
/// less glibc's start-up key; `check --image` and `check -- CMD` both name
/// the crate and 0.3 as the fix, not the C library.
#[test]
fn the_getrandom_crate_02_is_named_with_its_fix() {
    const N: u64 = 1000;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rust/getrandom02/Cargo.toml");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("getrandom02");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "--locked", "--offline", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("cargo");
    if !built.status.success() {
        let why = String::from_utf8_lossy(&built.stderr);
        return skip(&format!(
            "getrandom 0.2.17 not in the registry cache (cargo fetch --manifest-path {}): {}",
            manifest.display(),
            why.lines().next().unwrap_or("")
        ));
    }
    let exe = target.join("release/getrandom02");
    let argv = [exe.display().to_string(), N.to_string()];
    let traced = run(&["--json", "trace", "--engine", "seccomp", "--", &argv[0], &argv[1]]);
    let report: serde_json::Value = serde_json::from_str(&traced.1).unwrap_or_else(|e| panic!("{e}: {traced:?}"));
    let own: u64 = report["counts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["syscall"] == "getrandom")
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    let keys = report["startup_keys"].as_u64().unwrap();
    assert_eq!(own, N + 1, "{report:#}");
    assert_eq!(own + keys, super::common::strace_calls("getrandom", &argv), "vdsoctl against strace -f -c");

    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), &exe, "/usr/bin/getrandom02");
    let doc = audit(dir.path());
    let found = carried(&doc, "/usr/bin/getrandom02", "getrandom_crate");
    let f = found.iter().find(|f| f["kind"] == "runtime-syscall-fixed").unwrap_or_else(|| panic!("{doc}"));
    assert_eq!((f["status"].as_str(), f["carried"]["version"].as_str()), (Some("warn"), Some("0.1/0.2")), "{f}");
    let p = path_of(f, "getrandom").unwrap();
    assert_eq!((p["path"].as_str(), p["fixed_in"].as_str()), (Some("syscall"), Some("0.3")), "{f}");

    let (_, stdout, stderr) = run(&["--json", "check", "--", &argv[0], &argv[1]]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_random").unwrap();
    assert_eq!(
        (row["kind"].as_str(), row["status"].as_str()),
        (Some("random-syscall-observed"), Some("warn")),
        "{row}"
    );
    let by = serde_json::json!({"runtime": "getrandom_crate", "version": "0.1/0.2", "fixed_in": "0.3"});
    assert_eq!(row["calls"][0]["carried"], by, "{row}");
    assert_eq!(row["calls"][0]["count"], N + 1, "{row}");
}

/// glibc's per-architecture gap, from a real program: i386's
/// `clock_getres()` makes the clock_getres_time64 syscall every call
/// (`strace -f -c`: N of N), x86_64's reads the vDSO (0). `check --image`
/// names it on the i386 build that imports `clock_getres` — INFO, no
/// glibc release to move to — and on the x86_64 build says nothing of it.
#[test]
fn glibc_i386_clock_getres_is_named_as_a_syscall() {
    const N: u64 = 1000;
    let m32 = build_c("getres_loop", true, &[]);
    let m64 = build_c("getres_loop", false, &[]);
    let calls = |exe: &Path| {
        let argv = [exe.display().to_string(), N.to_string()];
        common::strace_calls("clock_getres_time64", &argv) + common::strace_calls("clock_getres", &argv)
    };
    assert_eq!((calls(&m32), calls(&m64)), (N, 0), "strace -f -c of the i386 and x86_64 builds");
    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), &m32, "/usr/bin/getres32");
    install(dir.path(), &m64, "/usr/bin/getres64");
    let doc = audit(dir.path());
    let found = carried(&doc, "/usr/bin/getres32", "glibc");
    let f = found.iter().find(|f| f["kind"] == "runtime-no-vdso-release").unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(f["status"], "info", "{f}");
    let p = path_of(f, "clock_getres").unwrap_or_else(|| panic!("{f}"));
    assert_eq!((p["path"].as_str(), p["fixed_in"].as_str()), (Some("syscall"), None), "{f}");
    assert!(carried(&doc, "/usr/bin/getres64", "glibc").is_empty(), "{doc}");
}

/// .NET's own native library, Microsoft's build (System.Native.so of .NET
/// Core 3.1.23, `scripts/dotnet-native.sh target/dotnet`): its random
/// bytes are a `read` of `/dev/urandom` — `objdump -T` shows it imports
/// `open` and `read` and none of `getrandom`, `getentropy` or
/// `arc4random_buf` — whatever the C library, so no getrandom count shows
/// them and no glibc upgrade moves them to the vDSO. `check --image` names
/// .NET, says so (INFO, no release to move to), and keeps its clocks the
/// C library's.
#[test]
fn dotnet_reads_dev_urandom_whatever_the_c_library() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dotnet");
    let lib = dir.join("System.Native.so");
    if !common::made_by_script("dotnet-native.sh", &dir, || lib.is_file()) {
        return;
    }
    let dynsym = Command::new("objdump").arg("-T").arg(&lib).output().expect("objdump");
    let dynsym = String::from_utf8_lossy(&dynsym.stdout);
    let imports: Vec<&str> =
        dynsym.lines().filter(|l| l.contains("*UND*")).filter_map(|l| l.split_whitespace().last()).collect();
    for name in ["open", "read"] {
        assert!(imports.contains(&name), "objdump -T: {name} not imported: {imports:?}");
    }
    for name in ["getrandom", "getentropy", "arc4random_buf"] {
        assert!(!imports.contains(&name), "objdump -T: {name} imported: {imports:?}");
    }
    let root = tempfile::tempdir().unwrap();
    let at = "/usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.23/System.Native.so";
    install(root.path(), &lib, at);
    let doc = audit(root.path());
    let found = carried(&doc, at, "dotnet");
    let random = found.iter().find(|f| path_of(f, "getrandom").is_some()).unwrap_or_else(|| panic!("{doc}"));
    assert_eq!((random["kind"].as_str(), random["status"].as_str()), (Some("runtime-no-vdso-release"), Some("info")));
    let p = path_of(random, "getrandom").unwrap();
    assert_eq!((p["path"].as_str(), p["fixed_in"].as_str()), (Some("device_read"), None), "{random}");
    let clock = found.iter().find_map(|f| path_of(f, "clock_gettime")).unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(clock["path"], "libc", "{doc}");
    assert_eq!(common::binary(&doc, at)["status"], "ok", "{doc}");
}
