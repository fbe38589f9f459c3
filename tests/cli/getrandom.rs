//! getrandom, the vDSO's newest function: every engine counts it exactly
//! as `strace -f -c` does in the same test, each call of its kind (the
//! vDSO's own key refill, a start-up key, flags the vDSO hands on, served),
//! on bookworm's glibc 2.36 (64-bit, `-m32`, `-static`), on trixie's glibc
//! 2.41 and Go 1.24 (`scripts/trixie-root.sh target/trixie`, which CI runs
//! first) and Debian 12's Go 1.19; and `check -- CMD` judges each by its
//! runtime. Figures: fixtures/GETRANDOM.md.

use super::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Calls each workload makes.
const N: u64 = 1000;
const N_TEXT: &str = "1000";

/// trixie's root (glibc 2.41, Go 1.24), or why not.
fn trixie() -> Result<PathBuf, &'static str> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/trixie");
    let root = dir.join("root");
    // As root, made here when missing (as check's trixie tests do).
    if make_by_script("trixie-root.sh", &dir, || root.join("usr/lib/x86_64-linux-gnu/libc.so.6").is_file()) {
        Ok(root)
    } else {
        Err("trixie's glibc 2.41 and Go 1.24 are not unpacked: run `scripts/trixie-root.sh target/trixie` as root (target/trixie.log says why it failed)")
    }
}

/// The argv that runs `program ARGS` on trixie's glibc 2.41 (its loader).
fn on_glibc_241(root: &Path, program: &Path, args: &[&str]) -> Vec<String> {
    let lib = root.join("usr/lib/x86_64-linux-gnu");
    let mut argv = vec![
        lib.join("ld-linux-x86-64.so.2").display().to_string(),
        "--library-path".into(),
        lib.display().to_string(),
        program.display().to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// `fixtures/go/getrandom` built with `go` (None: Debian 12's, from PATH)
/// or trixie's Go 1.24 under `root`.
fn build_go_getrandom(root: Option<&Path>) -> Option<PathBuf> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let (go, out, cache) = match root {
        Some(r) => (r.join("usr/lib/go-1.24/bin/go"), tmp.join("go-getrandom-124"), tmp.join("go/cache124")),
        None => (PathBuf::from("go"), tmp.join("go-getrandom-119"), tmp.join("go/cache")),
    };
    let mut cmd = Command::new(&go);
    if let Some(r) = root {
        cmd.env("GOROOT", r.join("usr/lib/go-1.24"));
    }
    let status = cmd
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/go/getrandom"))
        .env("GOCACHE", cache)
        .env("GOPATH", tmp.join("go/path"))
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("CGO_ENABLED", "0")
        .status()
        .ok()?;
    assert!(status.success(), "{} build of fixtures/go/getrandom failed", go.display());
    Some(out)
}

/// getrandom syscalls `strace -f -c` counts for `argv`.
fn strace_count(argv: &[String]) -> u64 {
    strace_calls("getrandom", argv)
}

/// `vdsoctl --json trace [--engine E] -- argv` (as root), its getrandom rows;
/// `keys` start-up keys summed (`startup_keys`: glibc's malloc key, one a
/// process, is no row).
fn trace_rows(engine: Option<&str>, argv: &[String], keys: u64) -> Vec<Value> {
    let mut args = vec!["trace".to_string()];
    if let Some(e) = engine {
        args.extend(["--engine".into(), e.into()]);
    }
    args.push("--".into());
    args.extend(argv.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run_json(&args);
    if let Some(e) = engine {
        assert_eq!(r["engine"], e, "{r:#}");
    }
    assert_eq!(r["startup_keys"], keys, "{r:#}");
    r["counts"].as_array().unwrap().iter().filter(|c| c["syscall"] == "getrandom").cloned().collect()
}

/// (kind, abi, expected, count) of each row, sorted.
fn kinds(rows: &[Value]) -> Vec<(String, String, bool, u64)> {
    let mut k: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r["random"].as_str().unwrap_or("?").to_string(),
                r["abi"].as_str().unwrap().to_string(),
                r["expected"].as_bool().unwrap(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    k.sort();
    k
}

fn row(kind: &str, abi: &str, expected: bool, count: u64) -> (String, String, bool, u64) {
    (kind.into(), abi.into(), expected, count)
}

/// What the tests need, or why not: tracing (`traced`), a vDSO with
/// getrandom, and trixie's root (`Some` when `with_trixie`).
fn needs(traced: bool, with_trixie: bool) -> Result<Option<PathBuf>, &'static str> {
    if let Some(why) = missing_trace_facility().filter(|_| traced) {
        return Err(why);
    }
    if !vdso_offers_getrandom() {
        return Err("this kernel's vDSO has no getrandom (Linux >= 6.11 on x86_64)");
    }
    if with_trixie {
        trixie().map(Some)
    } else {
        Ok(None)
    }
}

/// Whether this kernel's vDSO (vdsoctl's own) exports getrandom.
fn vdso_offers_getrandom() -> bool {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let kernel = kernel.as_deref().and_then(vdsoctl::inspect::kernel::parse_version);
    vdsoctl::model::policy::own_vdso_offers(vdsoctl::arch::VdsoFn::Getrandom, kernel)
}

fn argv(program: &Path, args: &[&str]) -> Vec<String> {
    std::iter::once(program.display().to_string()).chain(args.iter().map(|a| a.to_string())).collect()
}

/// glibc 2.36 makes every getrandom() a syscall: 1,000 served calls and
/// malloc's start-up key, as strace counts them, with each engine; the
/// `-m32` build's are i386 calls (4-byte key), expected (no 32-bit vDSO has
/// getrandom), and `-static` makes the same calls from its own code.
#[test]
fn glibc_236_calls_are_counted_as_strace_counts_them_by_every_engine() {
    if let Err(why) = needs(true, false) {
        return skip(why);
    }
    let dynamic = argv(&build_c("getrandom_loop", false, &[]), &["libc", N_TEXT]);
    let want = vec![row("served", &host_machine(), false, N)];
    assert_eq!(strace_count(&dynamic), N + 1);
    for engine in ["bpf", "perf"] {
        assert_eq!(kinds(&trace_rows(Some(engine), &dynamic, 1)), want, "{engine}");
    }
    let stat = argv(&build_c("getrandom_loop", false, &["-static"]), &["libc", N_TEXT]);
    assert_eq!(strace_count(&stat), N + 1);
    assert_eq!(kinds(&trace_rows(None, &stat, 1)), want, "-static");
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let m32 = argv(&build_c("getrandom_loop", true, &[]), &["libc", N_TEXT]);
    assert_eq!(strace_count(&m32), N + 1);
    let want32 = vec![row("served", "i386", true, N)];
    assert_eq!(kinds(&trace_rows(None, &m32, 1)), want32, "-m32");
}

/// glibc 2.41 reads getrandom from the vDSO: 2 syscalls for 1,000 calls
/// (the vDSO's key refill, made inside [vdso], and malloc's start-up key),
/// as strace counts them; a raw syscall(SYS_getrandom) from a named
/// function stays 1,000 served calls, and `check -- CMD` fails it (exit 1)
/// while passing the libc loop (exit 0); flags the vDSO does not serve go
/// through its fallback: the vDSO's own calls too.
#[test]
fn glibc_241_reads_from_the_vdso_and_a_raw_caller_fails_the_check() {
    let root = match needs(true, true) {
        Ok(root) => root.expect("trixie's root"),
        Err(why) => return skip(why),
    };
    let prog = build_c("getrandom_loop", false, &[]);
    let libc = on_glibc_241(&root, &prog, &["libc", N_TEXT]);
    assert_eq!(strace_count(&libc), 2);
    let want = vec![row("by_vdso", &host_machine(), true, 1)];
    assert_eq!(kinds(&trace_rows(Some("bpf"), &libc, 1)), want);
    let raw = on_glibc_241(&root, &prog, &["raw", N_TEXT]);
    assert_eq!(strace_count(&raw), N + 1);
    assert_eq!(kinds(&trace_rows(None, &raw, 1)), vec![row("served", &host_machine(), false, N)]);
    // `--sites` names the function (the seccomp engine reads the mappings
    // while the call waits: this process lives a few milliseconds).
    let mut args = vec!["--json", "trace", "--engine", "seccomp", "--sites", "--"];
    args.extend(raw.iter().map(String::as_str));
    let r = run_json(&args[1..]);
    let served = r["counts"].as_array().unwrap().iter().find(|c| c["random"] == "served").expect("served row");
    let site = &served["sites"][0];
    assert_eq!(
        (site["count"].as_u64(), site["class"].as_str(), site["caller"]["symbol"].as_str()),
        (Some(N), Some("libc_syscall"), Some("raw_random_bytes")),
        "{served:#}"
    );
    let badflag = on_glibc_241(&root, &prog, &["badflag", N_TEXT]);
    assert_eq!(kinds(&trace_rows(None, &badflag, 1)), vec![row("by_vdso", &host_machine(), true, N)]);

    let check = |argv: &[String]| {
        let mut args = vec!["--json", "check", "--"];
        args.extend(argv.iter().map(String::as_str));
        let (code, out, err) = run(&args);
        let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        let random = r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_random").cloned();
        (code, random.unwrap_or_else(|| panic!("no command_random row: {r:#}")))
    };
    let (code, c) = check(&libc);
    assert_eq!((code, c["status"].as_str()), (0, Some("ok")), "{c:#}");
    let (code, c) = check(&raw);
    assert_eq!((code, kind_status(&c)), (1, ("random-syscall-observed", "fail")), "{c:#}");
    // On glibc 2.36 the same loop is a WARN naming the release that fixes it.
    let (code, c) = check(&argv(&prog, &["libc", N_TEXT]));
    assert_eq!((code, kind_status(&c)), (0, ("random-syscall-observed", "warn")), "{c:#}");
    // The calls, typed: 1,000 getrandom syscalls (the release that fixes
    // them is worded, and tested, in render/random.rs).
    let calls = c["calls"].as_array().unwrap_or_else(|| panic!("calls: {c:#}"));
    assert!(calls.iter().all(|k| k["function"] == "getrandom"), "{c:#}");
    assert_eq!(calls.iter().map(|k| k["count"].as_u64().unwrap()).sum::<u64>(), 1000, "{c:#}");
}

/// Go 1.19's crypto/rand makes a syscall per call (WARN: Go 1.24 fixes
/// it); Go 1.24's makes one in all, the vDSO's key refill (OK).
#[test]
fn go_119_and_go_124_as_strace_counts_them() {
    let root = match needs(true, true) {
        Ok(root) => root.expect("trixie's root"),
        Err(why) => return skip(why),
    };
    let Some(go119) = build_go_getrandom(None) else { return skip("go not installed (apt-get install golang-go)") };
    let go124 = build_go_getrandom(Some(&root)).expect("trixie's Go 1.24 builds");
    let old = argv(&go119, &[N_TEXT]);
    assert_eq!(strace_count(&old), N);
    assert_eq!(kinds(&trace_rows(None, &old, 0)), vec![row("served", &host_machine(), false, N)]);
    // One key refill per runtime thread that calls: usually one, two when
    // the scheduler moved the goroutine (seen under load even with
    // GOMAXPROCS=1), so the count is the run's own; what is exact is that
    // every call is the vDSO's and none is served.
    let new = vec!["env".to_string(), "GOMAXPROCS=1".into(), go124.display().to_string(), N_TEXT.into()];
    let strace = strace_count(&new);
    assert!((2..=4).contains(&strace), "strace counted {strace}");
    // (`env`, glibc 2.36, makes malloc's start-up key in the same pid
    // before it execs the program: strace counts it too.)
    let rows = kinds(&trace_rows(None, &new, 1));
    assert!(
        rows.len() == 1 && rows[0].0 == "by_vdso" && rows[0].2 && (1..=3).contains(&rows[0].3),
        "Go 1.24: only the vDSO's own key refills, one per thread: {rows:?}"
    );
    let (code, out, _) = run(&["check", "--", go119.to_str().unwrap(), N_TEXT]);
    assert_eq!(code, 0, "{out}");
    // `go version`'s own word for its release (`go1.19.8`).
    let version = String::from_utf8(Command::new("go").arg("version").output().unwrap().stdout).unwrap();
    let version = version.split_whitespace().nth(2).expect("go version goX.Y.Z os/arch").to_string();
    assert!(
        out.contains(&format!(
            "Go {version}'s crypto/rand makes a getrandom syscall per read; Go 1.24 reads it from the vDSO"
        )),
        "{out}"
    );
}

/// Without any privilege the seccomp engine counts the same kinds, the
/// vDSO's own call told by its instruction pointer (the caller's
/// AT_SYSINFO_EHDR, read while it waits).
#[test]
fn the_seccomp_engine_counts_the_same_as_nobody() {
    let root = match needs(false, true) {
        Ok(root) => root.expect("trixie's root"),
        Err(why) => return skip(why),
    };
    let prog = build_c("getrandom_loop", false, &[]);
    let as_nobody = |argv: &[String]| -> Vec<Value> {
        let mut cmd = if is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]);
            c.arg(vdsoctl_path());
            c
        } else {
            Command::new(vdsoctl_path())
        };
        let out = cmd.args(["--json", "trace", "--engine", "seccomp", "--"]).args(argv).output().unwrap();
        assert!(out.status.success(), "{argv:?}: {}", String::from_utf8_lossy(&out.stderr));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["startup_keys"], 1, "{r:#}");
        r["counts"].as_array().unwrap().iter().filter(|c| c["syscall"] == "getrandom").cloned().collect()
    };
    assert_eq!(kinds(&as_nobody(&argv(&prog, &["libc", N_TEXT]))), vec![row("served", &host_machine(), false, N)]);
    assert_eq!(
        kinds(&as_nobody(&on_glibc_241(&root, &prog, &["libc", N_TEXT]))),
        vec![row("by_vdso", &host_machine(), true, 1)]
    );
}

/// The ways of running a program through a wrapper that execs it in the
/// same process (a script's `exec`, `env`, a shim that works first as
/// pyenv's does: python, whose start-up getrandom is counted and seen
/// before its exec) or in a child (`sh -c`, which may also exec): each
/// argv runs `direct`.
fn wrapped(direct: &[String], dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let script = dir.join("run241");
    std::fs::write(&script, "#!/bin/sh\nexec \"$@\"\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let quoted = direct.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ");
    let with = |first: &[&str]| first.iter().map(|a| a.to_string()).chain(direct.iter().cloned()).collect();
    vec![
        ("a script's exec", with(&[script.to_str().unwrap()])),
        ("env", with(&["env"])),
        ("sh -c", vec!["sh".into(), "-c".into(), quoted]),
        (
            "a shim",
            with(&["python3", "-c", "import os, sys, time; time.sleep(0.3); os.execv(sys.argv[1], sys.argv[1:])"]),
        ),
    ]
}

/// A process is judged by its own (last) exec: the raw getrandom loop on
/// glibc 2.41's ld.so FAILs `check -- CMD` (exit 1) run directly, through
/// a script that execs it, `env` and `sh -c` alike (issue 40: through the
/// script it was "the program is not known", exit 0). 200,000 calls, ~70 ms
/// after the exec: a look at the tree every 5 ms sees the program itself.
#[test]
fn a_wrapper_exec_env_or_sh_c_changes_no_verdict() {
    let root = match needs(true, true) {
        Ok(root) => root.expect("trixie's root"),
        Err(why) => return skip(why),
    };
    let prog = build_c("getrandom_loop", false, &[]);
    let direct = on_glibc_241(&root, &prog, &["raw", "200000"]);
    let check = |argv: &[String]| {
        let mut args = vec!["--json", "check", "--"];
        args.extend(argv.iter().map(String::as_str));
        let (code, out, err) = run(&args);
        let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        let random = r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_random").cloned();
        let random = random.unwrap_or_else(|| panic!("no command_random row: {r:#}"));
        let (kind, status) = kind_status(&random);
        (code, format!("{kind} {status}"), random["detail"].as_str().unwrap().to_string())
    };
    let (code, status, detail) = check(&direct);
    assert_eq!((code, status.as_str()), (1, "random-syscall-observed fail"), "{detail}");
    let dir = tempfile::tempdir().unwrap();
    for (how, argv) in wrapped(&direct, dir.path()) {
        let (c, s, d) = check(&argv);
        assert_eq!((c, s.as_str()), (code, status.as_str()), "same kind and status {how}: {argv:?}: {d}");
    }
    // 200 calls: gone a millisecond after its exec, before any look. The
    // BPF engine catches the exec itself (`sched_process_exec`): the same
    // verdict; the other engines have only the looks.
    let short = on_glibc_241(&root, &prog, &["raw", "200"]);
    let script = wrapped(&short, dir.path()).swap_remove(0).1;
    let mut args = vec!["trace", "--"];
    args.extend(script.iter().map(String::as_str));
    let traced = run_json(&args);
    if matches!(traced["engine"].as_str(), Some("bpf" | "fentry")) {
        let rows = traced["counts"].as_array().unwrap();
        let served = rows.iter().find(|c| c["random"] == "served").unwrap_or_else(|| panic!("{traced:#}"));
        assert_eq!(served["cmdline"], serde_json::json!(short), "{served:#}");
        assert_eq!(served["exe"].as_str(), Some(short[0].as_str()), "{served:#}");
        let (c, s, d) = check(&script);
        assert_eq!((c, s.as_str()), (1, "random-syscall-observed fail"), "a script's exec of a short program: {d}");
    }
}

/// `trace`'s `exe` and `cmdline` of a process that exec'd are the
/// program's, not the wrapper's (a shell, `env`) seen first.
#[test]
fn trace_names_a_process_by_its_last_exec() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let prog = build_c("getrandom_loop", false, &[]);
    let direct = argv(&prog, &["raw", "200000"]);
    let want = std::fs::canonicalize(&prog).unwrap().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    for (how, argv) in wrapped(&direct, dir.path()) {
        let mut args = vec!["trace", "--"];
        args.extend(argv.iter().map(String::as_str));
        let r = run_json(&args);
        let rows = r["counts"].as_array().unwrap();
        // (python's own start-up calls are served calls of the same process.)
        let served = rows.iter().find(|c| c["random"] == "served" && c["count"].as_u64() >= Some(200_000));
        let served = served.unwrap_or_else(|| panic!("{how}: no row of 200,000 served calls: {r:#}"));
        assert_eq!(served["exe"].as_str(), Some(want.as_str()), "{how}: {served:#}");
        assert_eq!(served["cmdline"], serde_json::json!(direct), "{how}: {served:#}");
    }
}

/// sid's root (glibc 2.43, Go 1.27), or why not.
fn sid() -> Result<PathBuf, &'static str> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sid");
    let root = dir.join("root");
    let have =
        || root.join("usr/lib/x86_64-linux-gnu/libc.so.6").is_file() && root.join("usr/lib/go-1.27/bin/go").is_file();
    if make_by_script("sid-root.sh", &dir, have) {
        Ok(root)
    } else {
        Err("sid's glibc 2.43 and Go 1.27 are not unpacked: run `scripts/sid-root.sh target/sid` as root (target/sid.log says why it failed)")
    }
}

/// The newest releases Debian ships, judged from their own files: sid's
/// libc.so.6 says 2.43 and a program loading it reads getrandom from the
/// vDSO (glibc ≥ 2.41); fixtures/go/getrandom built with sid's Go 1.27
/// says go1.27 in its build info and does too (Go ≥ 1.24) — no image
/// `random:*` row warns, as `go version` and the loader's `--version` say.
#[test]
fn sid_glibc_243_and_go_127_read_the_vdso() {
    let root = match sid() {
        Ok(r) => r,
        Err(why) => return skip(why),
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let goroot = root.join("usr/lib/go-1.27");
    let go = tmp.join("go-getrandom-127");
    let status = Command::new(goroot.join("bin/go"))
        .env("GOROOT", &goroot)
        .args(["build", "-o"])
        .arg(&go)
        .arg(".")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/go/getrandom"))
        .env("GOCACHE", tmp.join("go/cache127"))
        .env("GOPATH", tmp.join("go/path"))
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("CGO_ENABLED", "0")
        .status()
        .expect("sid's go");
    assert!(status.success(), "Go 1.27 build of fixtures/go/getrandom failed");
    let go_says = Command::new(goroot.join("bin/go")).env("GOROOT", &goroot).arg("version").arg(&go).output().unwrap();
    let go_says = String::from_utf8_lossy(&go_says.stdout).into_owned();
    let go_version = go_says.split_whitespace().nth(1).unwrap_or("").to_string();
    assert!(go_version.starts_with("go1.27"), "{go_says}");
    let lib = root.join("usr/lib/x86_64-linux-gnu");
    let loader = Command::new(lib.join("ld-linux-x86-64.so.2")).arg("--version").output().unwrap();
    let loader = String::from_utf8_lossy(&loader.stdout).into_owned();
    assert!(loader.lines().next().unwrap_or("").contains("version 2.43"), "{loader}");

    let image = tempfile::tempdir().unwrap();
    let put = |from: &Path, at: &str| {
        let to = image.path().join(at);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, &to).unwrap();
    };
    put(&lib.join("libc.so.6"), "usr/lib/x86_64-linux-gnu/libc.so.6");
    put(&go, "usr/bin/getrandom_go");
    put(&build_c("getrandom_loop", false, &[]), "usr/bin/getrandom_loop");
    let (_, stdout, stderr) = run(&["--json", "check", "--image", image.path().to_str().unwrap()]);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}{stderr}"));
    let binary = |path: &str| super::common::binary(&doc, path);
    let random = |path: &str| {
        let r = &binary(path)["random"];
        (
            r["runtime"].as_str().unwrap_or("-").to_string(),
            r["version"].as_str().unwrap_or("-").to_string(),
            r["path"].as_str().unwrap_or("-").to_string(),
        )
    };
    let vdso = |rt: &str, v: &str| (rt.to_string(), v.to_string(), "vdso".to_string());
    assert_eq!(random("/usr/lib/x86_64-linux-gnu/libc.so.6"), vdso("glibc", "2.43"));
    assert_eq!(random("/usr/bin/getrandom_loop"), vdso("glibc", "2.43"));
    assert_eq!(random("/usr/bin/getrandom_go"), vdso("go", &go_version));
    let rows: Vec<&str> = doc["checks"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert!(!rows.iter().any(|n| n.starts_with("random:")), "{rows:?}");
}
