//! `maps` against /proc/PID/maps of real 64-bit and 32-bit processes.

use super::common::{build_c, have_m32, run, run_json, skip, Workload};
use std::process::Command;

/// The bracketed kernel mappings of /proc/PID/maps as (name, start, end, perms).
fn proc_special_rows(pid: i32) -> Vec<(String, String, String, String)> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let name = *cols.get(5)?;
            if !(name.starts_with('[') && name.ends_with(']')) || name.starts_with("[anon:") {
                return None;
            }
            let (s, e) = cols[0].split_once('-')?;
            let hex = |h: &str| format!("{:#x}", u64::from_str_radix(h, 16).unwrap());
            Some((name.to_string(), hex(s), hex(e), cols[1].to_string()))
        })
        .collect()
}

fn our_rows(pid: i32) -> (Vec<(String, String, String, String)>, serde_json::Value) {
    let doc = run_json(&["maps", "-p", &pid.to_string()]);
    (our_rows_of(&doc), doc)
}

/// A `maps` document's rows as (name, start, end, perms); each size checked.
fn our_rows_of(doc: &serde_json::Value) -> Vec<(String, String, String, String)> {
    doc["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let start = u64::from_str_radix(m["start"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
            let end = u64::from_str_radix(m["end"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
            assert_eq!(m["size"].as_u64().unwrap(), end - start);
            (
                m["name"].as_str().unwrap().to_string(),
                m["start"].as_str().unwrap().to_string(),
                m["end"].as_str().unwrap().to_string(),
                m["perms"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn check_process(m32: bool) {
    let w = Workload::start(Command::new(build_c("wait_ready", m32, &[])));
    let (ours, doc) = our_rows(w.pid());
    let theirs = proc_special_rows(w.pid());
    assert_eq!(ours, theirs, "maps rows must equal /proc/{}/maps lines", w.pid());
    assert!(ours.iter().any(|r| r.0 == "[vdso]" && r.3 == "r-xp"), "{ours:?}");
    assert!(ours.iter().any(|r| r.0 == "[vvar]"), "{ours:?}");
    assert_eq!(doc["process"]["pid"], w.pid());
    assert!(doc["process"]["comm"].as_str().unwrap().starts_with("wait_ready"), "{}", doc["process"]);
    let vsys = &doc["vsyscall"];
    if m32 {
        // The kernel gives compat tasks no gate VMA: no [vsyscall] row; the
        // mode is the host's, as a 64-bit process (this test) sees it.
        assert!(!ours.iter().any(|r| r.0 == "[vsyscall]"));
        let own = std::fs::read_to_string("/proc/self/maps").unwrap();
        let host = match own.lines().find(|l| l.ends_with("[vsyscall]")) {
            Some(l) if l.split_whitespace().nth(1).unwrap().starts_with("--x") => "xonly",
            Some(_) => "emulate",
            None => "none",
        };
        assert_eq!(vsys["mode"], host, "{doc}");
        // Needs typed data: its kind is the generic `note`; maps has no word size.
        assert!(
            doc["findings"].to_string().contains("32-bit process: the kernel gives it no [vsyscall] page"),
            "{doc}"
        );
    } else if let Some(row) = ours.iter().find(|r| r.0 == "[vsyscall]") {
        let expect = if row.3.starts_with("--x") { "xonly" } else { "emulate" };
        assert_eq!(vsys["mode"], expect);
        assert!(vsys["source"].as_str().unwrap().starts_with("mapping"));
    }
}

#[test]
fn rows_equal_proc_maps_64bit() {
    check_process(false);
}

#[test]
fn rows_equal_proc_maps_32bit() {
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    check_process(true);
}

/// `maps` with no pid reads vdsoctl's own mappings. Its kernel mappings
/// ([vvar], [vvar_vclock], [vdso], [vsyscall]) are the kernel's for any
/// process of this ABI: the same names in the same order, sizes and
/// permissions as a fixture child's /proc/PID/maps (not this harness's:
/// its threads and children come and go), the [vsyscall] page at the same
/// address, and the vsyscall mode the mapping shows.
#[test]
fn default_target_is_own_process_with_vdso() {
    let (code, stdout, stderr) = run(&["maps"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("[vdso]") && stdout.contains("r-xp"), "{stdout}");
    assert!(stdout.starts_with("pid "), "{stdout}");
    assert!(stdout.contains("vsyscall: "), "{stdout}");
    let doc = run_json(&["maps"]);
    assert_eq!(doc["process"]["comm"], "vdsoctl");
    let pid = doc["process"]["pid"].as_i64().unwrap();
    assert!(pid > 0 && pid != i64::from(std::process::id()), "{}", doc["process"]);
    let kernel = |rows: Vec<(String, String, String, String)>| -> Vec<(String, u64, String, Option<String>)> {
        let hex = |h: &str| u64::from_str_radix(h.trim_start_matches("0x"), 16).unwrap();
        rows.into_iter()
            .filter(|r| r.0 != "[heap]" && r.0 != "[stack]")
            .map(|(name, start, end, perms)| {
                let fixed = (name == "[vsyscall]").then(|| start.clone());
                (name, hex(&end) - hex(&start), perms, fixed)
            })
            .collect()
    };
    let ours = kernel(our_rows_of(&doc));
    let child = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let own = kernel(proc_special_rows(child.pid()));
    assert!(own.iter().any(|r| r.0 == "[vdso]"), "{own:?}");
    assert_eq!(ours, own, "vdsoctl's kernel mappings are any 64-bit process's: {doc}");
    let vsys = &doc["vsyscall"];
    let mode = match own.iter().find(|r| r.0 == "[vsyscall]") {
        Some(r) if r.2.starts_with("--x") => "xonly",
        Some(_) => "emulate",
        None => "none",
    };
    assert_eq!((vsys["mode"].as_str(), vsys["mapping_mode"].as_str()), (Some(mode), Some(mode)), "{vsys}");
    assert!(mode == "none" || vsys["source"].as_str().unwrap().starts_with("mapping"), "{vsys}");
}

/// A process that unmapped its vDSO: maps says every clock read is a
/// syscall, auxv says AT_SYSINFO_EHDR points at nothing, check -p fails.
#[test]
fn unmapped_vdso_is_named_by_maps_auxv_and_check() {
    let w = Workload::start(Command::new(build_c("no_vdso", false, &[])));
    let pid = w.pid().to_string();
    // A FAIL line means exit 1, in maps and auxv as in check.
    let (code, stdout, stderr) = run(&["--json", "maps", "-p", &pid]);
    assert_eq!(code, 1, "{stderr}");
    let maps: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(!maps["mappings"].as_array().unwrap().iter().any(|m| m["name"] == "[vdso]"), "{maps}");
    let finding = &maps["findings"][0];
    assert_eq!(
        (finding["kind"].as_str(), finding["severity"].as_str()),
        (Some("vdso-not-mapped"), Some("fail")),
        "{finding}"
    );
    let (code, stdout, stderr) = run(&["--json", "auxv", "-p", &pid]);
    assert_eq!(code, 1, "{stderr}");
    let auxv: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(auxv["findings"][0]["severity"], "fail", "{auxv}");
    assert_eq!(auxv["sysinfo_ehdr_matches_vdso"], false, "known, not null: {auxv}");
    assert!(auxv["vdso_start"].is_null());
    let (code, stdout, _) = run(&["--json", "check", "-p", &pid]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mapped = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "process_vdso_mapped").unwrap();
    assert_eq!(mapped["status"], "fail", "{mapped}");
    let (code, _, stderr) = run(&["dump", "-p", &pid]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no [vdso] mapping"), "{stderr}");
    // The tables say FAIL, and the exit status agrees.
    for cmd in ["maps", "auxv"] {
        let (code, stdout, stderr) = run(&[cmd, "-p", &pid]);
        assert_eq!(code, 1, "{cmd}: {stderr}");
        assert!(stdout.lines().any(|l| l.starts_with("FAIL: ")), "{cmd}: {stdout}");
    }
}

/// `maps` names every function the process's `[vdso]` exports, as
/// `objdump -T` of that very image (`dump -p PID -o`) lists them, each
/// with what it serves and none unknown to vdsoctl on this kernel; the
/// 32-bit process's compat vDSO too.
#[test]
fn maps_names_every_vdso_export_as_objdump_lists_it() {
    let mut progs = vec![build_c("wait_ready", false, &[])];
    if have_m32() {
        progs.push(build_c("wait_ready", true, &[]));
    } else {
        skip("gcc -m32 cannot build (install gcc-multilib): the compat vDSO's exports");
    }
    for prog in progs {
        let w = Workload::start(Command::new(&prog));
        let pid = w.pid().to_string();
        let doc = run_json(&["maps", "-p", &pid]);
        let image = tempfile::NamedTempFile::new().unwrap();
        let out = image.path().display().to_string();
        let (code, _, err) = run(&["dump", "-p", &pid, "-o", &out]);
        assert_eq!(code, 0, "{err}");
        let objdump = Command::new("objdump").arg("-T").arg(image.path()).output().expect("objdump runs");
        // "0000000000000c90  w   DF .text  0000000000000369  LINUX_2.6   clock_gettime": defined (not *UND*) functions.
        let mut want: Vec<String> = String::from_utf8_lossy(&objdump.stdout)
            .lines()
            .filter(|l| l.contains(" DF ") && !l.contains("*UND*"))
            .filter_map(|l| l.split_whitespace().last().map(str::to_string))
            .collect();
        want.sort();
        want.dedup();
        let exports = doc["vdso_exports"].as_array().unwrap_or_else(|| panic!("{doc:#}"));
        let mut got: Vec<String> = exports.iter().map(|e| e["name"].as_str().unwrap().to_string()).collect();
        got.sort();
        assert!(!want.is_empty());
        assert_eq!(got, want, "{}", prog.display());
        for e in exports {
            assert_ne!(e["serves"]["role"], "unknown", "{e}");
        }
    }
}
