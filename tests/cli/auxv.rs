//! `auxv` against what glibc's `LD_SHOW_AUXV=1` prints for the same process,
//! for both word sizes.

use super::common::{build_c, have_m32, run, run_json, skip, Workload};
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
    assert!(theirs.len() > 15, "LD_SHOW_AUXV printed too little: {:?}", w.preamble);
    let doc = run_json(&["auxv", "-p", &w.pid().to_string()]);
    assert_eq!(doc["word_bits"], if m32 { 32 } else { 64 });
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
    assert_eq!(doc["sysinfo_ehdr_matches_vdso"], true);
    let ehdr = ours.iter().find(|e| e["name"] == "AT_SYSINFO_EHDR").unwrap();
    assert_eq!(ehdr["value"], doc["vdso_start"]);
    // The table's DECODED says where an address lies, not the hex again.
    let (code, table, stderr) = run(&["auxv", "-p", &w.pid().to_string()]);
    assert_eq!(code, 0, "{stderr}");
    let row = table.lines().find(|l| l.contains("AT_SYSINFO_EHDR ")).unwrap();
    assert!(row.ends_with(&format!("{}  in [vdso]", ehdr["value"].as_str().unwrap())), "{row:?}");
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

#[test]
fn own_process_json_keys() {
    let doc = run_json(&["auxv"]);
    assert!(doc["process"]["pid"].as_i64().unwrap() > 0, "{}", doc["process"]);
    assert_eq!(doc["process"]["comm"], "vdsoctl");
    for key in ["process", "entries", "sysinfo_ehdr_matches_vdso"] {
        assert!(doc.get(key).is_some(), "missing key {key}");
    }
    for key in ["key", "name", "value", "decoded"] {
        assert!(doc["entries"][0].get(key).is_some(), "missing entries key {key}");
    }
    let platform = doc["entries"].as_array().unwrap().iter().find(|e| e["name"] == "AT_PLATFORM").unwrap();
    assert_eq!(platform["decoded"], std::env::consts::ARCH);
    let pagesz = doc["entries"].as_array().unwrap().iter().find(|e| e["name"] == "AT_PAGESZ").unwrap();
    assert_eq!(pagesz["decoded"], 4096, "a count is a JSON number");
    let ehdr = doc["entries"].as_array().unwrap().iter().find(|e| e["name"] == "AT_SYSINFO_EHDR").unwrap();
    assert!(ehdr["decoded"].is_null(), "an address is `value` alone: {ehdr}");
}
