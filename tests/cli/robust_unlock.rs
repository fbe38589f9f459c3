//! Robust-futex unlock (Linux 7.2, x86_64): its fallback is a `futex` call
//! whose op carries FUTEX_ROBUST_UNLOCK (and FUTEX_ROBUST_LIST32 for the
//! 32-bit list's). Every engine counts exactly those calls, each in its
//! function's row, and none of the program's other futex calls: the
//! fixture's own count and `strace -f -c`'s say how many there were. On a
//! kernel before 7.2 each call fails (ENOSYS) and is counted all the same,
//! as expected (the vDSO has no such function there); on 7.2+ a bypass.
//! The 7.3 kernel itself is the kernel matrix's (`7.3-amd64`).

use super::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const N64: u64 = 3000;
const N32: u64 = 2000;
const PLAIN: u64 = 1000;

/// futex syscalls `strace -f -c` counts for `program ARGS`.
fn strace_futex(program: &Path, args: &[&str]) -> u64 {
    let argv: Vec<String> =
        std::iter::once(program.display().to_string()).chain(args.iter().map(|a| a.to_string())).collect();
    strace_calls("futex", &argv)
}

/// (syscall, abi, expected, count) of each futex row of a trace of
/// `program ARGS` with `engine` (`None`: auto), and the engine that ran.
fn robust_rows(engine: Option<&str>, program: &Path, args: &[&str]) -> (String, Vec<(String, String, bool, u64)>) {
    let p = program.display().to_string();
    let mut argv = vec!["--json", "trace"];
    if let Some(e) = engine {
        argv.extend(["--engine", e]);
    }
    argv.push("--");
    argv.push(&p);
    argv.extend_from_slice(args);
    let (code, stdout, stderr) = run(&argv);
    assert_eq!(code, 0, "vdsoctl {argv:?}: {stderr}");
    let r: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(r["lost"], 0, "{r:#}");
    // The plain futex calls are in no row, unattributed ones neither.
    assert_eq!(r["unattributed"], serde_json::json!([]), "{r:#}");
    let mut rows: Vec<_> = r["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["syscall"].as_str().unwrap().to_string(),
                c["abi"].as_str().unwrap().to_string(),
                c["expected"].as_bool().unwrap(),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    (r["engine"].as_str().unwrap_or_default().to_string(), rows)
}

/// Whether this kernel's vDSO (vdsoctl's own ABI's) has the robust unlock.
fn vdso_has_it() -> bool {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let kernel = kernel.as_deref().and_then(vdsoctl::inspect::kernel::parse_version);
    vdsoctl::model::policy::own_vdso_offers(vdsoctl::arch::VdsoFn::FutexRobustList64TryUnlock, kernel)
}

fn row(f: &str, abi: &str, expected: bool, count: u64) -> (String, String, bool, u64) {
    (format!("futex_robust_{f}_try_unlock"), abi.to_string(), expected, count)
}

/// 3,000 list64 and 2,000 list32 unlocks and 1,000 FUTEX_WAKE_PRIVATE
/// calls: strace counts 6,000 futex calls; each engine (auto: fentry or the
/// sys_enter program; perf; seccomp) two rows, 3,000 and 2,000, no third;
/// the `-m32` build's the same as i386 rows (whose vDSO has list32 only).
#[test]
fn robust_unlock_fallbacks_are_counted_exactly_by_every_engine() {
    if host_machine() != "x86_64" {
        return skip("the robust-futex unlock is x86_64's vDSO's (Linux 7.2)");
    }
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let args = [N64.to_string(), N32.to_string(), PLAIN.to_string()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let prog = build_c("robust_unlock", false, &["-static"]);
    let own = Command::new(&prog).args(&args).output().unwrap();
    let own = String::from_utf8_lossy(&own.stdout).into_owned();
    assert!(own.starts_with(&format!("futex calls: {N64} {N32} {PLAIN}\n")), "{own}");
    assert_eq!(strace_futex(&prog, &args), N64 + N32 + PLAIN);
    let expected = !vdso_has_it();
    let want = vec![row("list32", "x86_64", expected, N32), row("list64", "x86_64", expected, N64)];
    for engine in [None, Some("perf"), Some("seccomp")] {
        let (ran, rows) = robust_rows(engine, &prog, &args);
        assert_eq!(rows, want, "{engine:?} ({ran})");
    }
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let m32 = build_c("robust_unlock", true, &["-static"]);
    assert_eq!(strace_futex(&m32, &args), N64 + N32 + PLAIN);
    // i386's vDSO has no list64 unlock: its fallback is expected on any kernel.
    let want32 = vec![row("list32", "i386", expected, N32), row("list64", "i386", true, N64)];
    for engine in [None, Some("perf"), Some("seccomp")] {
        let (ran, rows) = robust_rows(engine, &m32, &args);
        assert_eq!(rows, want32, "-m32 {engine:?} ({ran})");
    }
    // Started by a 64-bit shell: the perf engine samples the tree's compat
    // futex calls (its filter is on the number) and drops the plain ones
    // as delivered, not lost (10,000 'unattributed' in the 7.3 guest before).
    let line = format!("exec >/dev/null; {} {}", m32.display(), args.join(" "));
    let (_, rows) = robust_rows(Some("perf"), Path::new("sh"), &["-c", &line]);
    let counts: Vec<u64> = rows.iter().map(|r| r.3).collect();
    assert_eq!(counts, [N32, N64], "{rows:?}");
}
