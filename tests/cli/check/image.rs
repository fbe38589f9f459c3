//! `check --image ROOT`: image trees, the container recipe, call sites from the
//! code, unreadable trees, old static glibc and foreign architectures' roots.

use super::*;

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
    for (path, kind) in [
        ("/opt/legacy/clock_loop", "vsyscall-call-site"),
        ("/usr/bin/wait_ready32", "compat-32bit"),
        ("/usr/bin/hello_go", "binary-ok"),
    ] {
        assert_eq!(binary(doc, path)["verdict_kind"], kind, "{path}");
    }
    // Needs typed data: the site count is only in the words.
    let legacy = binary(doc, "/opt/legacy/clock_loop")["detail"].as_str().unwrap().to_string();
    assert!(legacy.contains("(1 site(s)"), "{legacy}");
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
    if crate::cli::common::have_promtool() {
        let (_, text, _) = run(&["--format", "prometheus", "check", "--image", root]);
        assert!(text.contains("vdsoctl_check_binaries{status=\"fail\"} 1\n"), "{text}");
        assert!(text.contains("vdsoctl_check_binaries{status=\"info\"} 1\n"), "{text}");
        assert!(text.contains("vdsoctl_check_binaries{status=\"warn\"} 0\n"), "{text}");
        crate::cli::common::assert_promtool_accepts(&text);
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

/// fixtures/call_sites.c built each way it reads a clock (and vdsoctl) into
/// the image `root`; whether its i386 builds are there too.
fn install_call_sites(root: &Path) -> bool {
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
    m32
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
    let m32 = install_call_sites(root);
    let (code, stdout, stderr) = run(&["--json", "check", "--image", root.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let detail = |path: &str| binary(&doc, path)["detail"].as_str().unwrap().to_string();
    let status = |path: &str| binary(&doc, path)["status"].as_str().unwrap().to_string();
    // A binary's findings as (kind, status), gated.
    let kinds = |path: &str| -> Vec<(String, String)> {
        let s = |v: &serde_json::Value| v.as_str().unwrap_or("-").to_string();
        binary(&doc, path)["findings"].as_array().unwrap().iter().map(|f| (s(&f["kind"]), s(&f["status"]))).collect()
    };
    for ok in [
        "/usr/local/bin/vdsoctl",
        "/bin/libc_clock",
        "/bin/data_only",
        "/bin/cputime",
        "/bin/libc_clock_static_stripped",
    ] {
        assert_eq!(status(ok), "ok", "{ok}: {}", detail(ok));
        assert!(kinds(ok).iter().all(|(k, _)| !k.starts_with("vsyscall-")), "{ok}: {:?}", kinds(ok));
    }
    let pair = |k: &str, s: &str| (k.to_string(), s.to_string());
    // The CPU-time clock is said (INFO), not judged.
    assert!(kinds("/bin/cputime").contains(&pair("cputime-call-site", "info")), "{:?}", kinds("/bin/cputime"));
    // The call, its clock and its address.
    let site = first_site(&doc, "/bin/cputime", "cputime-call-site");
    let call = |k: &str| site[k].as_str();
    assert_eq!(
        (call("function"), call("clock"), call("via")),
        (Some("clock_gettime"), Some("CLOCK_PROCESS_CPUTIME_ID"), Some("libc_syscall")),
        "{site}"
    );
    assert!(call("address").is_some_and(|a| a.starts_with("0x")), "{site}");
    // An image's own code making raw clock syscalls the vDSO would serve FAILs.
    let mut raw = vec![
        ("/bin/raw_libc", "clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x", "in main"),
        ("/bin/asm_static", "clock_gettime(CLOCK_MONOTONIC) by syscall at 0x", "in read_clock"),
        ("/bin/int80", "clock_gettime(CLOCK_MONOTONIC) by int 0x80 at 0x", "in read_clock"),
        ("/bin/asm_static_stripped", "clock_gettime(CLOCK_MONOTONIC) by syscall at 0x", "in an unnamed function"),
    ];
    if m32 {
        raw.push(("/bin/raw_libc32", "clock_gettime(CLOCK_MONOTONIC) by syscall() at 0x", "in main"));
        raw.push(("/bin/int80_32", "clock_gettime(CLOCK_MONOTONIC) by int 0x80 at 0x", "in read_clock"));
    }
    for (path, site, symbol) in raw {
        let d = detail(path);
        assert_eq!(status(path), "fail", "{path}: {d}");
        assert_eq!(binary(&doc, path)["verdict_kind"], "raw-clock-call-site", "{path}: {d}");
        assert!(kinds(path).contains(&pair("raw-clock-call-site", "fail")), "{path}: {:?}", kinds(path));
        assert!(d.contains(site) && d.contains(symbol), "{path}: {d}");
    }
    // Stripped, the same site is found at the same address, in no function.
    let named = detail("/bin/asm_static");
    let at = named.split(" by syscall at ").nth(1).unwrap().split(' ').next().unwrap();
    assert!(
        detail("/bin/asm_static_stripped")
            .contains(&format!("clock_gettime(CLOCK_MONOTONIC) by syscall at {at} in an unnamed function")),
        "{}",
        detail("/bin/asm_static_stripped")
    );
    junit_matches_the_json(root, &doc);
    let v = detail("/bin/vsyscall");
    assert_eq!(status("/bin/vsyscall"), "fail", "{v}");
    assert!(kinds("/bin/vsyscall").contains(&pair("vsyscall-call-site", "fail")), "{:?}", kinds("/bin/vsyscall"));
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
/// xml.etree): one testcase per check, one per failing finding of a binary
/// (`PATH: KIND`) and one per binary with none (`PATH`), failures for the
/// FAIL findings (and the WARN ones, raised, with --strict) typed by kind,
/// with the finding and the hint — as many as the JSON of the same run has.
fn junit_matches_the_json(root: &Path, doc: &serde_json::Value) {
    if which("python3").is_err() {
        return skip("python3 not installed: the JUnit document is not parsed");
    }
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
            kind = f.get("type")
            assert c.get("name").endswith(": " + kind) or s.get("name") == "vdsoctl.check", c.get("name")
            assert f.get("message").startswith("FAIL " + kind + ": "), f.get("message")
            assert f.text and "hint: " in f.text and ("kind: " + kind) in f.text, c.get("name")
            print("failure", c.get("name"))
"#;
    for strict in [false, true] {
        // The JSON of the same selection: --strict raises WARN findings in it too.
        let doc = if strict {
            let (_, stdout, _) = run(&["--json", "check", "--strict", "--image", root.to_str().unwrap()]);
            serde_json::from_str(&stdout).unwrap()
        } else {
            doc.clone()
        };
        let binaries = doc["binaries"].as_array().unwrap();
        let failing = |b: &serde_json::Value| -> Vec<String> {
            let path = b["path"].as_str().unwrap();
            let fails = b["findings"].as_array().unwrap().iter().filter(|f| f["status"] == "fail");
            fails.map(|f| format!("{path}: {}", f["kind"].as_str().unwrap())).collect()
        };
        let failures: Vec<String> = binaries.iter().flat_map(failing).collect();
        let cases = failures.len() + binaries.iter().filter(|b| failing(b).is_empty()).count();
        let checks = doc["checks"].as_array().unwrap();
        let check_failures = checks.iter().filter(|c| c["status"] == "fail").count();
        let mut args = vec!["--format", "junit", "check"];
        if strict {
            args.push("--strict");
        }
        args.extend(["--image", root.to_str().unwrap()]);
        let (code, xml, stderr) = run(&args);
        assert_eq!(code, 1, "{stderr}");
        let out = python_on(READ, &xml);
        assert!(out.status.success(), "{}\n{xml}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("vdsoctl.check.image {cases} {} 0\n", failures.len())), "{text}");
        assert!(text.contains(&format!("vdsoctl.check {} {check_failures} ", checks.len())), "{text}");
        for f in &failures {
            assert!(text.lines().any(|l| l == format!("failure {f}")), "{f}: {text}");
        }
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
    assert_eq!(kind_status(walk), ("image-incomplete", "warn"), "{walk}");
    // The count is image.unreadable's, asserted above.

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
        assert_eq!(kind_status(c), ("runner-kernel", "skip"), "{c}");
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
    assert_eq!(b["verdict_kind"], "static-glibc-no-vdso", "{b}");
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

/// A raw caller of a foreign root: FAIL by kind raw-clock-call-site (an
/// image's own code), its site `via` in `symbol`, at an address whose
/// instruction objdump shows as `insn`.
fn raw_caller(root: &Path, binaries: &[serde_json::Value], path: &str, (via, symbol, insn): (&str, &str, &str)) {
    let b = binaries.iter().find(|b| b["path"] == path).unwrap_or_else(|| panic!("no {path}"));
    assert_eq!((b["status"].as_str(), b["verdict_kind"].as_str()), (Some("fail"), Some("raw-clock-call-site")), "{b}");
    let f = b["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "raw-clock-call-site").unwrap();
    assert_eq!(f["status"], "fail", "{path}: {f}");
    let d = f["detail"].as_str().unwrap();
    let prefix = format!(
        "its code makes raw clock syscalls the vDSO would serve: clock_gettime(CLOCK_MONOTONIC) by {via} at 0x"
    );
    assert!(d.starts_with(&prefix), "{path}: {d}");
    let at = d[prefix.len()..].split(' ').next().unwrap();
    assert!(d[prefix.len()..].starts_with(&format!("{at} in {symbol}: ")), "{path}: {d}");
    let dis = over_files("objdump", &["-d"], &[root.join(path.trim_start_matches('/'))]);
    let line = dis.lines().find(|l| l.trim_start().starts_with(&format!("{at}:"))).unwrap_or("");
    assert!(line.contains(insn), "{path} at {at}: {line}");
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
                assert_eq!(b["verdict_kind"], "foreign-not-decoded", "{path}: {}", b["detail"]);
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
        // The raw callers: FAIL, each site with its function, at an address
        // whose instruction objdump shows as the call or the svc.
        let site =
            |path: &str, via: &str, symbol: &str, insn: &str| raw_caller(root, binaries, path, (via, symbol, insn));
        site("/usr/local/bin/raw_libc", "syscall()", "main", "bl\t");
        site("/usr/local/bin/raw_libc_static", "syscall()", "main", "bl\t");
        site("/usr/local/bin/svc_static", "svc #0", "read_clock", "svc\t");
        let libc = binaries.iter().find(|b| b["path"].as_str().unwrap().ends_with("/libc.so.6")).unwrap();
        assert_eq!((libc["kind"].as_str(), libc["status"].as_str()), (Some("library"), Some("ok")), "{libc}");
    }
}

/// A static program with no C library its audit recognises WARNs, and its
/// hint names the file to run, shell-quoted to paste, the same in the JSON
/// and the table (the table used to substitute it into a placeholder, so
/// the JSON said `-- PROG` and a path with a space came out unquoted).
#[test]
fn an_unrecognised_static_runtime_is_hinted_by_its_own_path() {
    let bare = build_c("bare_static", false, &["-static", "-nostdlib"]);
    let root = tempfile::tempdir().unwrap();
    install(root.path(), &bare, "opt/my tools/bare");
    let root = root.path().to_str().unwrap();
    let doc = run_json_any(&["check", "--image", root]);
    let b = binary(&doc, "/opt/my tools/bare");
    assert_eq!((b["status"].as_str(), b["linkage"].as_str()), (Some("warn"), Some("static")), "{b}");
    let hint = "run it under `vdsoctl check -- '/opt/my tools/bare'` (or `check -p PID` as root) to see";
    assert_eq!(b["hint"], hint, "{b}");
    let (code, stdout, stderr) = run(&["--color", "never", "check", "--image", root]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.lines().any(|l| l == format!("WARN /opt/my tools/bare: {hint}")), "{stdout}");
}
