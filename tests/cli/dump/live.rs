//! `dump` of a live process's vDSO, 64- and 32-bit, equal to its mapping.

use super::*;

fn check_live(m32: bool) {
    let bin = common::build_c("wait_ready", m32, &[]);
    let w = Workload::start(Command::new(bin));
    let pid = w.pid();
    let out = tmp(&format!("live-{pid}.so"));
    let json = run_json(&["dump", "-p", &pid.to_string(), "-o", out.to_str().unwrap()]);
    let (start, expect) = vdso_bytes(pid);
    let written = std::fs::read(&out).unwrap();
    assert_eq!(written.len(), expect.len());
    assert!(written == expect, "-o output differs from the [vdso] bytes of pid {pid}");
    assert_eq!(json["process"]["pid"], pid);
    assert!(json["process"]["comm"].as_str().unwrap().starts_with("wait_ready"), "{}", json["process"]);
    assert_eq!(json["elf"]["base"], format!("{start:#x}"));
    assert_eq!(json["elf"]["size"], expect.len() as u64);
    assert_eq!(json["elf"]["class"], if m32 { "ELF32" } else { "ELF64" });
    let cg = json["symbols"].as_array().unwrap().iter().find(|s| s["name"] == "__vdso_clock_gettime").unwrap();
    assert_eq!(cg["version"], "LINUX_2.6");
    assert_eq!(json["findings"], serde_json::json!([]));
    // objdump reads what we wrote.
    if let Some(text) = tool("objdump", &["-T"], &out) {
        assert!(parse_objdump_t(&text).iter().any(|s| s.name == "__vdso_clock_gettime" && s.version == "LINUX_2.6"));
    }
    std::fs::remove_file(&out).unwrap();
}

#[test]
fn live_64bit_process_dump_equals_mapping() {
    check_live(false);
}

#[test]
fn live_32bit_process_dump_equals_mapping() {
    if !common::have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    check_live(true);
}

#[test]
fn own_process_by_default_and_bad_pid() {
    let json = run_json(&["dump"]);
    assert_eq!(json["process"]["comm"], "vdsoctl");
    assert!(json["elf"]["base"].as_str().unwrap().starts_with("0x"));
    let (code, _, err) = run(&["dump", "-p", "999999999"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("no process with pid 999999999"), "{err}");
}
