//! `check` of random bytes (the vDSO getrandom of glibc 2.41) and time
//! namespaces.

use super::*;

fn random_rows(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    doc["checks"].as_array().unwrap().iter().filter(|c| c["name"].as_str().unwrap().starts_with("random")).collect()
}

#[test]
fn image_random_bytes_warn_on_bookworm_not_on_trixie() {
    let Some(trixie) = trixie_root() else { return };
    // bookworm: this host's own glibc (2.36 on the Debian 12 builders).
    let host = glibc_version();
    let libs = ldd(&build_c("wait_ready", false, &[]));
    let find = |name: &str| libs.iter().find(|p| p.file_name().is_some_and(|f| f == name)).cloned().unwrap();
    let old = random_root(&find("libc.so.6"), &find("ld-linux-x86-64.so.2"));
    let old_root = old.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--image", old_root]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let host_241 = host.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()).is_some_and(|m| m >= 41);
    if host_241 {
        skip(&format!("this host's glibc is {host}: it is no bookworm root"));
    } else {
        assert_eq!(code, 0, "{stdout}");
        let rows = random_rows(&doc);
        assert_eq!(rows.len(), 1, "one row for the image's libc: {rows:?}");
        assert_eq!(rows[0]["name"], format!("random:glibc-{host}"));
        assert_eq!(kind_status(rows[0]), ("random-syscall-old-libc", "warn"), "{}", rows[0]);
        // The library, its programs' count and the raw caller.
        let random = &rows[0]["random"];
        assert_eq!(random["libc"], "/usr/lib/x86_64-linux-gnu/libc.so.6", "{random}");
        assert_eq!((random["programs"].as_u64(), random["libraries"].as_u64()), (Some(2), Some(0)), "{random}");
        assert_eq!(random["raw"], serde_json::json!(["/usr/bin/getrandom_loop"]), "{random}");
        assert_eq!((random["runtime"].as_str(), random["version"].as_str()), (Some("glibc"), Some(host.as_str())));
        // The binaries keep their clock verdicts: the raw getrandom is part of the row.
        assert_eq!(binary(&doc, "/usr/bin/getrandom_loop")["status"], "ok");
        assert_eq!(binary(&doc, "/usr/bin/getrandom_loop")["random"]["path"], "syscall");
        let (_, table, _) = run(&["check", "--image", old_root]);
        assert_eq!(table.matches("random bytes take a syscall").count(), 1, "{table}");
    }

    // trixie: glibc 2.41 reads getrandom from the vDSO: no such row; the
    // program's own syscall(SYS_getrandom) bypasses it and fails.
    let new = random_root(&trixie.join("libc.so.6"), &trixie.join("ld-linux-x86-64.so.2"));
    let new_root = new.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&["--json", "check", "--image", new_root]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(code, 1, "{stdout}");
    assert!(random_rows(&doc).is_empty(), "{}", doc["checks"]);
    assert!(!stdout.contains("\"random-syscall-old-libc\""), "no row nor finding of it: {stdout}");
    let prog = binary(&doc, "/usr/bin/getrandom_loop");
    assert_eq!(prog["status"], "fail", "{prog}");
    assert_eq!(prog["verdict_kind"], "raw-random-call-site", "{prog}");
    assert_eq!(prog["runtime_version"], "2.41");
    assert_eq!(prog["random"]["path"], "vdso");
    // The call, its address and its function.
    let site = first_site(&doc, "/usr/bin/getrandom_loop", "raw-random-call-site");
    assert_eq!((site["function"].as_str(), site["via"].as_str()), (Some("getrandom"), Some("libc_syscall")), "{site}");
    assert_eq!(site["symbol"], "raw_random_bytes", "{site}");
    assert!(site["address"].as_str().is_some_and(|a| a.starts_with("0x")), "{site}");
    assert_eq!(binary(&doc, "/usr/bin/wait_ready")["status"], "ok");
}

/// The kernel's vDSO serves getrandom (x86_64 from 6.11).
fn kernel_has_vdso_getrandom() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    vdsoctl::inspect::kernel::parse_version(release.trim()).is_some_and(|v| v >= (6, 11))
}

/// `getrandom_loop libc N pause` under trixie's glibc 2.41, once it printed "done".
fn paused_241(trixie: &Path, n: &str) -> (std::process::Child, crate::cli::common::KillOnDrop) {
    use std::io::BufRead;
    let exe = build_c(
        "getrandom_loop",
        false,
        &[
            "-pthread",
            &format!("-Wl,--dynamic-linker={}", trixie.join("ld-linux-x86-64.so.2").display()),
            &format!("-Wl,-rpath={}", trixie.display()),
        ],
    );
    let mut child =
        Command::new(exe).args(["libc", n, "pause"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let guard = crate::cli::common::KillOnDrop::new(child.id() as i32);
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "done");
    (child, guard)
}

#[test]
fn check_p_random_bytes_of_a_glibc_241_process() {
    let Some(trixie) = trixie_root() else { return };
    if !kernel_has_vdso_getrandom() {
        return skip("this kernel's vDSO has no getrandom (Linux 6.11)");
    }
    for (n, pages) in [("10", 1), ("0", 0)] {
        let (mut child, _guard) = paused_241(&trixie, n);
        let pid = child.id().to_string();
        let (_, stdout, stderr) = run(&["--json", "check", "-p", &pid, "--trace", "0"]);
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let row = check_named(&doc, "process_random");
        assert_eq!(kind_status(row), ("random-vdso", "ok"), "{row}");
        // The glibc, the C library mapped, and its state page (a `dp`
        // mapping) once it called getrandom, none before.
        let random = &row["random"];
        assert_eq!((random["runtime"].as_str(), random["version"].as_str()), (Some("glibc"), Some("2.41")), "{row}");
        assert!(random["libc"].as_str().is_some_and(|l| l.ends_with("/libc.so.6")), "{row}");
        let state = random["state_pages"].as_array().unwrap_or_else(|| panic!("smaps read: {row}"));
        assert_eq!(state.len(), pages, "{row}");
        assert!(state.iter().all(|a| a.as_str().is_some_and(|a| a.starts_with("0x"))), "{row}");
        let symbols = check_named(&doc, "process_vdso_symbols")["detail"].as_str().unwrap().to_string();
        assert!(symbols.contains("__vdso_getrandom"), "{symbols}");
        let _ = child.kill();
        let _ = child.wait();
    }
    // A bookworm process (this host's own glibc, before 2.41): the syscall,
    // said (INFO): no trace window saw it call getrandom.
    if !glibc_version().starts_with("2.4") {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let _guard = crate::cli::common::KillOnDrop::new(child.id() as i32);
        let doc = run_json(&["check", "-p", &child.id().to_string(), "--trace", "0"]);
        let row = check_named(&doc, "process_random");
        assert_eq!(kind_status(row), ("random-syscall-old-libc", "info"), "{row}");
        assert_eq!(doc["binary"]["runtime"], "glibc", "{doc}");
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[test]
fn time_namespace_offsets_are_said_by_maps_and_check() {
    if !is_root() {
        return skip("unshare --time needs root");
    }
    let mut child = Command::new("unshare")
        .args(["--time", "--monotonic", "1000", "--boottime", "2000", "--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _guard = crate::cli::common::KillOnDrop::new(child.id() as i32);
    // unshare forks for --time: the sleep is its child (or itself, exec'd).
    let pid = (0..200)
        .find_map(|_| {
            let own = child.id();
            let children = std::fs::read_to_string(format!("/proc/{own}/task/{own}/children")).unwrap_or_default();
            let found = children.split_whitespace().next().map(str::to_string).or_else(|| {
                let comm = std::fs::read_to_string(format!("/proc/{own}/comm")).unwrap_or_default();
                (comm.trim() == "sleep").then(|| own.to_string())
            });
            if found.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            found
        })
        .expect("the sleep under unshare --time");
    let _sleep = crate::cli::common::KillOnDrop::new(pid.parse().unwrap());
    let doc = run_json(&["maps", "-p", &pid]);
    let ns = &doc["time_namespace"];
    assert_eq!(ns["other"], true, "{ns}");
    assert_eq!(
        ns["offsets"],
        serde_json::json!([
            {"clock": "CLOCK_MONOTONIC", "seconds": 1000, "nanoseconds": 0},
            {"clock": "CLOCK_BOOTTIME", "seconds": 2000, "nanoseconds": 0}
        ])
    );
    let (code, table, _) = run(&["maps", "-p", &pid]);
    assert_eq!(code, 0, "{table}");
    assert!(table.contains("INFO: pid "), "{table}");
    assert!(table.contains("CLOCK_MONOTONIC +1,000 s, CLOCK_BOOTTIME"), "{table}");
    let doc = run_json_any(&["check", "-p", &pid, "--trace", "0"]);
    let row = check_named(&doc, "process_time_namespace");
    assert_eq!(kind_status(row), ("time-namespace", "ok"), "{row}");
    // The offsets, typed as maps has them.
    assert_eq!(row["time_namespace"], *ns, "{row}");
    // vdsoctl's own: in its own namespace, nothing said.
    let doc = run_json(&["maps"]);
    assert_eq!(doc["time_namespace"]["other"], false);
    assert!(doc["findings"].as_array().unwrap().iter().all(|f| f["kind"] != "time-namespace"), "{doc}");
    let _ = child.kill();
    let _ = child.wait();
}
