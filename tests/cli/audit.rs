//! `check --image`'s code audit on the hard cases: constants gcc -O2
//! hoists out of a loop (fixtures/hoisted.c), a program without section
//! headers, truncated files, and `check -p` of the same code.

use super::common::{self, build_c, copy_executable, have_m32, run, skip, vdsoctl_path, Workload};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Copy `from` into `root` at `at` (an image path like /bin/x).
fn install(root: &Path, from: &Path, at: &str) -> PathBuf {
    let dest = root.join(at.trim_start_matches('/'));
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    copy_executable(from, &dest).unwrap_or_else(|e| panic!("copy {} → {}: {e}", from.display(), dest.display()));
    dest
}

/// `check --json --image ROOT`: its exit code and document.
fn audit(root: &Path) -> (i32, serde_json::Value) {
    let (code, stdout, stderr) = run(&["--json", "check", "--image", root.to_str().unwrap()]);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}{stderr}"));
    (code, doc)
}

/// A binary's (status, detail, hint) in an audit.
fn verdict(doc: &serde_json::Value, path: &str) -> (String, String, String) {
    let b = common::binary(doc, path);
    let text = |k: &str| b[k].as_str().unwrap_or("").to_string();
    (text("status"), text("detail"), text("hint"))
}

/// A binary's verdict kind and its findings as (kind, status), gated.
fn kinds(doc: &serde_json::Value, path: &str) -> (String, Vec<(String, String)>) {
    let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == path).unwrap();
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("-").to_string();
    let findings = b["findings"].as_array().unwrap().iter().map(|f| (s(&f["kind"]), s(&f["status"]))).collect();
    (s(&b["verdict_kind"]), findings)
}

/// The pair (kind, status) as [`kinds`] lists it.
fn pair(kind: &str, status: &str) -> (String, String) {
    (kind.to_string(), status.to_string())
}

/// A copy of `exe` without its symbol table (`strip`).
fn stripped(exe: &Path) -> PathBuf {
    let out = exe.with_file_name(format!("{}-stripped", exe.file_name().unwrap().to_string_lossy()));
    std::fs::copy(exe, &out).unwrap();
    assert!(Command::new("strip").arg(&out).status().expect("strip runs (binutils)").success());
    out
}

/// The instruction objdump shows at `addr` (hex, no 0x) in `exe`.
fn objdump_at(exe: &Path, addr: &str) -> Option<String> {
    let o = Command::new("objdump").arg("-d").arg(exe).output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.lines().find(|l| l.trim_start().starts_with(&format!("{addr}:"))).map(str::to_string)
}

/// A binary's finding of `kind` in an audit.
fn finding<'a>(doc: &'a serde_json::Value, path: &str, kind: &str) -> &'a serde_json::Value {
    let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == path).unwrap();
    let f = b["findings"].as_array().unwrap().iter().find(|f| f["kind"] == kind);
    f.unwrap_or_else(|| panic!("{path}: no {kind} finding: {b}"))
}

/// A finding's first listed site, and its address as objdump prints it (hex, no 0x).
fn first_site(f: &serde_json::Value) -> (&serde_json::Value, String) {
    let site = &f["sites"][0];
    let at = site["address"].as_str().unwrap_or_else(|| panic!("no site: {f}"));
    (site, at.trim_start_matches("0x").to_string())
}

/// gcc -O2 loads the [vsyscall] address (or the syscall number) once,
/// before the loop, and calls through the register in it: the audit
/// follows the constant into the loop (FAIL, by kind vsyscall-call-site
/// and raw-clock-call-site, the function named, the address the call's),
/// stripped too; the address kept in a register only as data, and
/// vdsoctl's own binary, stay OK.
#[test]
fn image_follows_a_constant_into_its_loop() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let h = |flag: &str, m32: bool| build_c("hoisted", m32, &[flag]);
    install(root, &vdsoctl_path(), "/usr/local/bin/vdsoctl");
    let vloop = install(root, &h("-DVSYSCALL_LOOP", false), "/bin/vsyscall_loop");
    install(root, &stripped(&h("-DVSYSCALL_LOOP", false)), "/bin/vsyscall_loop_stripped");
    install(root, &h("-DVSYSCALL_DATA", false), "/bin/vsyscall_data");
    install(root, &h("-DASM_LOOP", false), "/bin/asm_loop");
    let m32 = have_m32();
    if m32 {
        install(root, &h("-DASM_LOOP", true), "/bin/asm_loop32");
    } else {
        skip("gcc -m32 cannot build (install gcc-multilib): the i386 loop is not tried");
    }
    let (code, doc) = audit(root);
    assert_eq!(code, 1, "{doc}");
    for ok in ["/usr/local/bin/vdsoctl", "/bin/vsyscall_data"] {
        let (status, detail, _) = verdict(&doc, ok);
        assert_eq!(status, "ok", "{ok}: {detail}");
        let (lead, found) = kinds(&doc, ok);
        assert_eq!(lead, "binary-ok", "{ok}: {found:?}");
        assert!(found.iter().all(|(k, _)| !k.starts_with("vsyscall-")), "{ok}: {found:?}");
    }
    let (status, detail, _) = verdict(&doc, "/bin/vsyscall_loop");
    assert_eq!(status, "fail", "{detail}");
    let f = finding(&doc, "/bin/vsyscall_loop", "vsyscall-call-site");
    let (site, at) = first_site(f);
    assert_eq!(
        (f["site_count"].as_u64(), site["symbol"].as_str(), site["via"].as_str()),
        (Some(1), Some("legacy_loop"), Some("vsyscall")),
        "{f}"
    );
    if let Some(line) = objdump_at(&vloop, &at) {
        assert!(line.contains("call") && line.contains("*%r"), "{at}: {line}");
    }
    let (status, detail, _) = verdict(&doc, "/bin/vsyscall_loop_stripped");
    assert_eq!(status, "fail", "{detail}");
    let f = finding(&doc, "/bin/vsyscall_loop_stripped", "vsyscall-call-site");
    let (site, stripped_at) = first_site(f);
    assert_eq!(
        (stripped_at.as_str(), &site["symbol"], f["site_count"].as_u64()),
        (at.as_str(), &serde_json::Value::Null, Some(1)),
        "{f}"
    );
    for path in ["/bin/vsyscall_loop", "/bin/vsyscall_loop_stripped"] {
        let (lead, found) = kinds(&doc, path);
        assert_eq!(lead, "vsyscall-call-site", "{path}: {found:?}");
        assert!(found.contains(&pair("vsyscall-call-site", "fail")), "{path}: {found:?}");
    }
    // An image's own code making raw clock syscalls fails (issue 40's table).
    let mut raw = vec![("/bin/asm_loop", "syscall")];
    if m32 {
        raw.push(("/bin/asm_loop32", "int80"));
    }
    for (path, via) in raw {
        let (status, detail, _) = verdict(&doc, path);
        assert_eq!(status, "fail", "{path}: {detail}");
        let (lead, found) = kinds(&doc, path);
        assert_eq!(lead, "raw-clock-call-site", "{path}: {found:?}");
        assert!(found.contains(&pair("raw-clock-call-site", "fail")), "{path}: {found:?}");
        // The call, the instruction and the function.
        let f = finding(&doc, path, "raw-clock-call-site");
        let (site, at) = first_site(f);
        let call = |k: &str| site[k].as_str();
        assert_eq!(
            (call("function"), call("clock"), call("via"), call("symbol")),
            (Some("clock_gettime"), Some("CLOCK_MONOTONIC"), Some(via), Some("asm_loop")),
            "{path}: {f}"
        );
        let line = objdump_at(&root.join(path.trim_start_matches('/')), &at);
        assert!(line.as_ref().is_none_or(|l| l.contains("syscall") || l.contains("int ")), "{line:?}");
    }
}

/// The sites objdump shows in `exe`: (address, instruction) of each line
/// in `func` whose instruction contains `insn`.
fn objdump_sites(exe: &Path, func: &str, insn: &str) -> Vec<(String, String)> {
    let o = Command::new("objdump").arg("-d").arg(exe).output().expect("objdump runs (binutils)");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut inside = false;
    let mut out = Vec::new();
    for l in text.lines() {
        if l.ends_with(">:") {
            inside = l.ends_with(&format!("<{func}>:"));
        } else if let Some((at, rest)) = l.trim_start().split_once(':').filter(|_| inside) {
            if rest.contains(insn) {
                out.push((at.to_string(), rest.trim().to_string()));
            }
        }
    }
    out
}

/// A build's raw clock sites and [vsyscall] calls as (symbol, via,
/// clock, address without 0x), sorted by address.
fn sites_of(doc: &serde_json::Value, path: &str) -> Vec<(String, String, String, String)> {
    let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == path).unwrap();
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("-").to_string();
    let mut out: Vec<_> = b["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "raw-clock-call-site" || f["kind"] == "vsyscall-call-site")
        .flat_map(|f| {
            assert_eq!(f["site_count"].as_u64(), f["sites"].as_array().map(|a| a.len() as u64), "{path}: {f}");
            f["sites"].as_array().unwrap().clone()
        })
        .map(|x| (s(&x["symbol"]), s(&x["via"]), s(&x["clock"]), s(&x["address"]).trim_start_matches("0x").to_string()))
        .collect();
    out.sort_by_key(|x| u64::from_str_radix(&x.3, 16).unwrap_or(0));
    out
}

/// gcc -O0 (and clang -O0) keeps each local in a stack slot: the clock id,
/// the syscall number and the [vsyscall] pointer stored there, then
/// reloaded into the argument register before the call
/// (fixtures/slots.c). The audit follows them through the frame as it
/// does registers: the -O0 build names the same functions and clocks as
/// the -O2 build (x86_64, and aarch64 built with clang --target when it
/// links), each site at the address objdump shows its call, syscall or svc
/// at; the id stored on two paths with two values is no constant (clock
/// null), never a guess.
#[test]
fn image_follows_a_constant_through_a_stack_slot() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut builds = Vec::new();
    for opt in ["-O0", "-O2"] {
        let exe = install(root, &build_c("slots", false, &[opt]), &format!("/bin/slots{opt}"));
        builds.push((exe, format!("/bin/slots{opt}"), true));
    }
    let arm = root.join("bin");
    for opt in ["-O0", "-O2"] {
        let out = arm.join(format!("slots-a64{opt}"));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/slots.c");
        let built = Command::new("clang")
            .args(["--target=aarch64-linux-gnu", opt, "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .output()
            .is_ok_and(|o| o.status.success());
        if !built {
            skip("clang --target=aarch64-linux-gnu cannot link (libc6-dev-arm64-cross): the arm64 build is not tried");
            break;
        }
        builds.push((out, format!("/bin/slots-a64{opt}"), false));
    }
    let (code, doc) = audit(root);
    assert_eq!(code, 1, "{doc}");
    for (exe, path, x86) in &builds {
        let (status, detail, _) = verdict(&doc, path);
        assert_eq!(status, "fail", "{path}: {detail}");
        let found = sites_of(&doc, path);
        let named: Vec<(&str, &str, &str)> =
            found.iter().map(|(s, v, c, _)| (s.as_str(), v.as_str(), c.as_str())).collect();
        let mut want = vec![
            ("by_libc", "libc_syscall", "CLOCK_MONOTONIC"),
            ("by_asm", if *x86 { "syscall" } else { "svc" }, "CLOCK_MONOTONIC"),
            ("two_paths", "libc_syscall", "-"),
        ];
        if *x86 {
            want.insert(2, ("by_vsyscall", "vsyscall", "-"));
        }
        assert_eq!(named, want, "{path}: {found:?}");
        // Each site is the instruction objdump shows there, the only one of
        // its kind in its function.
        for (symbol, via, _, at) in &found {
            let insn = match via.as_str() {
                "syscall" => "syscall",
                "svc" => "svc",
                _ if *x86 => "call",
                _ => "bl\t",
            };
            let shown = objdump_sites(exe, symbol, insn);
            assert_eq!(
                shown.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>(),
                [at.as_str()],
                "{path} {symbol}: {shown:?}"
            );
        }
    }
}

/// The ELF header's section header fields zeroed (`e_shoff`, `e_shnum`,
/// `e_shstrndx`): a program the loader still runs, with no sections.
fn without_sections(from: &Path, to: &Path) {
    let mut b = std::fs::read(from).unwrap();
    let is_64 = b[4] == 2;
    let (shoff, shnum) = if is_64 { (0x28..0x30, 0x3c..0x40) } else { (0x20..0x24, 0x30..0x34) };
    b[shoff].fill(0);
    b[shnum].fill(0);
    write_program(to, &b);
}

/// Write `bytes` as an executable file.
fn write_program(to: &Path, bytes: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(to, bytes).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A program with no section headers (it runs) is judged from its
/// executable segments: the same syscall() sites at the same addresses as
/// its sectioned build, said to be unnamed (both FAIL, raw-clock-call-site,
/// as an image's own raw clock calls do); a truncated copy is never OK,
/// whatever length it is cut to (binary-truncated).
#[test]
fn image_without_sections_and_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut builds = vec![(false, build_c("call_sites", false, &["-DRAW_LIBC"]))];
    if have_m32() {
        builds.push((true, build_c("call_sites", true, &["-DRAW_LIBC"])));
    } else {
        skip("gcc -m32 cannot build (install gcc-multilib): the i386 build is not tried");
    }
    let mut cut = Vec::new();
    for (m32, exe) in &builds {
        let tag = if *m32 { "32" } else { "" };
        install(root, exe, &format!("/bin/raw{tag}"));
        let bare = root.join(format!("bin/bare{tag}"));
        without_sections(exe, &bare);
        let ran = Command::new(&bare).arg("3").output().unwrap();
        assert!(ran.status.success(), "the program without sections runs: {ran:?}");
        let bytes = std::fs::read(exe).unwrap();
        let size = bytes.len();
        let mut lengths: Vec<usize> = (5000..size).step_by(1000).collect();
        lengths.push(size - 1);
        for n in lengths {
            let path = format!("/bin/cut{tag}-{n}");
            write_program(&root.join(path.trim_start_matches('/')), &bytes[..n]);
            cut.push((path, n, size));
        }
    }
    let (code, doc) = audit(root);
    assert_eq!(code, 1, "the raw clock callers fail: {doc}");
    for (m32, _) in &builds {
        let tag = if *m32 { "32" } else { "" };
        for path in [format!("/bin/raw{tag}"), format!("/bin/bare{tag}")] {
            let (lead, found) = kinds(&doc, &path);
            assert_eq!(lead, "raw-clock-call-site", "{path}: {found:?}");
            assert!(found.contains(&pair("raw-clock-call-site", "fail")), "{path}: {found:?}");
        }
        let (status, full, _) = verdict(&doc, &format!("/bin/raw{tag}"));
        assert_eq!(status, "fail", "{full}");
        let (status, bare, hint) = verdict(&doc, &format!("/bin/bare{tag}"));
        assert_eq!(status, "fail", "{bare}");
        // The call, its address, its (absent) function; needs typed data:
        // the layout (its finding is a binary-ok like the runtime's).
        let sites = |path: &str| finding(&doc, path, "raw-clock-call-site")["sites"].as_array().unwrap().clone();
        let (bare_sites, full_sites) = (sites(&format!("/bin/bare{tag}")), sites(&format!("/bin/raw{tag}")));
        let call = |s: &serde_json::Value| (s["function"].clone(), s["clock"].clone(), s["via"].clone());
        assert_eq!(
            call(&bare_sites[0]),
            call(&serde_json::json!({"function": "clock_gettime", "clock": "CLOCK_MONOTONIC", "via": "libc_syscall"})),
            "{bare_sites:?}"
        );
        assert!(bare_sites.iter().all(|s| s["symbol"].is_null()), "{bare_sites:?}");
        assert!(bare.contains("no section headers: "), "{bare}");
        let at = |v: &[serde_json::Value]| v.iter().map(|s| s["address"].clone()).collect::<Vec<_>>();
        assert_eq!(at(&bare_sites), at(&full_sites), "{bare} / {full}");
        assert!(hint.contains("syscall()"), "the call to look for: {hint}");
    }
    let unreadable: Vec<&str> = doc["image"]["unreadable"]
        .as_array()
        .map(|u| u.iter().filter_map(|e| e[0].as_str()).collect())
        .unwrap_or_default();
    for (path, n, size) in cut {
        if unreadable.contains(&path.as_str()) {
            continue;
        }
        let (status, detail, _) = verdict(&doc, &path);
        assert_ne!(status, "ok", "{path}: {detail}");
        let (_, found) = kinds(&doc, &path);
        assert!(found.contains(&pair("binary-truncated", "warn")), "{path}: {found:?}");
        // The two lengths: what the file has and what its headers describe.
        let f = finding(&doc, &path, "binary-truncated");
        assert_eq!((f["size"].as_u64(), f["described"].as_u64()), (Some(n as u64), Some(size as u64)), "{path}: {f}");
    }
}

/// `check -p` of a running loop-hoisted [vsyscall] caller: its binary row
/// FAILs on the call site in legacy_loop.
#[test]
fn check_p_fails_a_loop_hoisted_vsyscall_caller() {
    let mut cmd = Command::new(build_c("hoisted", false, &["-DVSYSCALL_LOOP"]));
    cmd.args(["0", "wait"]);
    let w = Workload::start(cmd);
    let (code, stdout, stderr) = run(&["--json", "check", "-p", &w.pid().to_string(), "--trace", "0"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let bin = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "process_binary").unwrap();
    assert_eq!((bin["kind"].as_str(), bin["status"].as_str()), (Some("vsyscall-call-site"), Some("fail")), "{bin}");
    // The site count, address and function, as `--image` has them.
    let f = bin["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "vsyscall-call-site").unwrap();
    let (site, _) = first_site(f);
    assert_eq!((f["site_count"].as_u64(), site["symbol"].as_str()), (Some(1), Some("legacy_loop")), "{f}");
}

/// The hints lead to the code: a trace's bypass names the exact
/// `trace --sites` command (shell-quoted, as `check -- CMD`'s does), or the
/// call sites already below it; a [vsyscall] caller's says what it is and
/// names the audit that, pasted and run, FAILs it naming its function.
#[test]
fn hints_lead_to_the_calling_code() {
    if let Some(why) = super::common::missing_trace_facility() {
        return skip(why);
    }
    let raw = build_c("call_sites", false, &["-DRAW_LIBC"]);
    let script = format!("{} 100", raw.display());
    // The first finding beyond INFO: its kind and the command its hint says
    // to run (`next`; the hint's words are render/hint.rs's unit tests').
    let finding_of = |args: &[&str]| -> (String, serde_json::Value) {
        let (_, stdout, stderr) = run(args);
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let f = doc["findings"].as_array().unwrap().iter().find(|f| f["severity"] != "info").cloned();
        let f = f.unwrap_or_else(|| panic!("no finding: {doc}"));
        (f["kind"].as_str().unwrap().to_string(), f)
    };
    let (kind, f) = finding_of(&["--json", "trace", "--", "sh", "-c", &script]);
    assert_eq!(kind, "raw-clock-syscall", "{f}");
    assert_eq!(f["next"], serde_json::json!(["vdsoctl", "trace", "--sites", "--", "sh", "-c", script]), "{f}");
    let sites = format!("`vdsoctl trace --sites -- sh -c '{script}'`");
    let (code, stdout, stderr) = run(&["--json", "check", "--", "sh", "-c", &script]);
    assert_eq!(code, 1, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "command_trace").unwrap().clone();
    // Needs typed data: a row has no `next` yet (the same advice as trace's).
    assert!(row["hint"].as_str().unwrap().starts_with(&sites), "{row}");
    // With --sites on, the sites are in the report: no command to run for them.
    let (kind, f) = finding_of(&["--json", "trace", "--sites", "--", "sh", "-c", &script]);
    assert_eq!(kind, "raw-clock-syscall", "{f}");
    assert!(f.get("next").is_none(), "{f}");

    // A [vsyscall] caller: the audit to run, which, run, FAILs it naming its function.
    let dir = tempfile::tempdir().unwrap();
    let exe = install(dir.path(), &build_c("hoisted", false, &["-DVSYSCALL_LOOP"]), "/old app/legacy");
    let (kind, f) = finding_of(&["--json", "trace", "--", exe.to_str().unwrap(), "100"]);
    assert_eq!(kind, "vsyscall-call", "{f}");
    let app = dir.path().join("old app");
    assert_eq!(f["next"], serde_json::json!(["vdsoctl", "check", "--image", app.to_str().unwrap()]), "{f}");
    let argv: Vec<&str> = f["next"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let out = Command::new(vdsoctl_path()).arg("--json").args(&argv[1..]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (site, _) = first_site(finding(&doc, "/legacy", "vsyscall-call-site"));
    assert_eq!(site["symbol"], "legacy_loop", "{site}");
}
