//! `auxv` against what glibc's `LD_SHOW_AUXV=1` prints for the same process,
//! for both word sizes.

use super::common::{build_c, have_m32, host_fact, run, run_json, skip, vdsoctl, Workload};
use std::process::Command;

/// Parse `AT_NAME:   value` and `AT_??? (0x1b): 0x1c` lines into (key name or number, value text).
fn ld_show_auxv(lines: &[String]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter(|l| l.starts_with("AT_"))
        .map(|l| {
            if let Some(rest) = l.strip_prefix("AT_??? (") {
                let (num, val) = rest.split_once("):").unwrap();
                (format!("#{}", u64::from_str_radix(num.trim_start_matches("0x"), 16).unwrap()), val.trim().into())
            } else {
                let (name, val) = l.split_once(':').unwrap();
                (name.to_string(), val.trim().to_string())
            }
        })
        .collect()
}

fn number(text: &str) -> u64 {
    match text.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => text.parse().unwrap(),
    }
}

fn check_process(m32: bool) {
    let mut cmd = Command::new(build_c("wait_ready", m32, &[]));
    cmd.env("LD_SHOW_AUXV", "1");
    let w = Workload::start(cmd);
    let theirs = ld_show_auxv(&w.preamble);
    let doc = run_json(&["auxv", "-p", &w.pid().to_string()]);
    assert_eq!(doc["word_bits"], if m32 { 32 } else { 64 });
    assert_entries_equal(&theirs, &doc);
    let ours = doc["entries"].as_array().unwrap();
    assert_eq!(doc["sysinfo_ehdr_matches_vdso"], true);
    let ehdr = ours.iter().find(|e| e["name"] == "AT_SYSINFO_EHDR").unwrap();
    assert_eq!(ehdr["value"], doc["vdso_start"]);
    // The table's DECODED says where an address lies, not the hex again.
    let (code, table, stderr) = run(&["auxv", "-p", &w.pid().to_string()]);
    assert_eq!(code, 0, "{stderr}");
    let row = table.lines().find(|l| l.contains("AT_SYSINFO_EHDR ")).unwrap();
    assert!(row.ends_with(&format!("{}  in [vdso]", ehdr["value"].as_str().unwrap())), "{row:?}");
}

/// `doc`'s entries are the vector glibc's loader printed (`theirs`), in
/// order, value for value.
fn assert_entries_equal(theirs: &[(String, String)], doc: &serde_json::Value) {
    assert!(theirs.len() > 15, "LD_SHOW_AUXV printed too little: {theirs:?}");
    let ours = doc["entries"].as_array().unwrap();
    assert_eq!(ours.len(), theirs.len(), "entry count: ours {ours:?} vs LD_SHOW_AUXV {theirs:?}");
    for ((their_key, their_val), our) in theirs.iter().zip(ours) {
        let our_name = our["name"].as_str().unwrap_or("");
        let our_value = number(our["value"].as_str().unwrap());
        let decoded = &our["decoded"];
        if let Some(num) = their_key.strip_prefix('#') {
            // glibc 2.36 has no name for it; we must (AT_RSEQ_* are in uapi auxvec.h).
            assert_eq!(our["key"].as_u64().unwrap(), num.parse::<u64>().unwrap());
            assert!(our_name.starts_with("AT_"), "we should name key {num}");
            assert_eq!(our_value, number(their_val));
            continue;
        }
        assert_eq!(our_name, their_key, "order and names follow the vector");
        match their_key.as_str() {
            "AT_EXECFN" | "AT_PLATFORM" | "AT_BASE_PLATFORM" => assert_eq!(decoded, their_val.as_str()),
            // glibc prints x86 AT_HWCAP as bare hex on x86_64 and as flag names for i386.
            "AT_HWCAP" if their_val.chars().all(|c| c.is_ascii_hexdigit()) => {
                assert_eq!(our_value, u64::from_str_radix(their_val, 16).unwrap())
            }
            "AT_HWCAP" => {
                let names: Vec<&str> = decoded.as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
                assert_eq!(names.join(" "), *their_val);
            }
            _ => {
                assert_eq!(our_value, number(their_val), "{their_key}");
                // A count is a number; an address or flag word only `value`.
                if decoded.is_number() {
                    assert_eq!(decoded.as_u64(), Some(our_value), "{their_key}");
                } else {
                    assert!(decoded.is_null() || decoded.is_array(), "{their_key}: {decoded}");
                }
            }
        }
    }
}

#[test]
fn entries_equal_ld_show_auxv_64bit() {
    check_process(false);
}

#[test]
fn entries_equal_ld_show_auxv_32bit() {
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    check_process(true);
}

/// `auxv` with no pid reads vdsoctl's own vector: the one glibc's loader
/// prints for that very process under LD_SHOW_AUXV=1 (before vdsoctl's
/// JSON, on the same stdout). The host facts are read, not written here:
/// the platform from `uname -m`, the page size from `getconf PAGESIZE`.
#[test]
fn own_process_equals_ld_show_auxv() {
    let out = vdsoctl().env("LD_SHOW_AUXV", "1").args(["--json", "auxv"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let json_at = stdout.find("\n{").map(|i| i + 1).expect("the JSON after the loader's lines");
    let loader: Vec<String> = stdout[..json_at].lines().map(String::from).collect();
    let doc: serde_json::Value = serde_json::from_str(&stdout[json_at..]).unwrap();
    assert_eq!(doc["process"]["comm"], "vdsoctl");
    let pid = doc["process"]["pid"].as_i64().unwrap();
    assert!(pid > 0 && pid != i64::from(std::process::id()), "{}", doc["process"]);
    assert_eq!(doc["word_bits"], usize::BITS);
    assert_entries_equal(&ld_show_auxv(&loader), &doc);
    let entry = |name: &str| doc["entries"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap().clone();
    assert_eq!(entry("AT_PLATFORM")["decoded"], host_fact("uname", &["-m"]));
    let pagesz: u64 = host_fact("getconf", &["PAGESIZE"]).parse().unwrap();
    assert_eq!(entry("AT_PAGESZ")["decoded"], pagesz, "a count is a JSON number");
    assert!(entry("AT_SYSINFO_EHDR")["decoded"].is_null(), "an address is `value` alone");
    assert_eq!(doc["sysinfo_ehdr_matches_vdso"], true);
    assert_eq!(entry("AT_SYSINFO_EHDR")["value"], doc["vdso_start"]);
}
