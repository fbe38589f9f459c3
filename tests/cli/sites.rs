//! `trace --sites`: each row split by call site, named and classified, with
//! exact counts per site — with the BPF engine (root) and the seccomp
//! engine (as `nobody`, no capability) — and checked against `nm`,
//! `objdump` and `readelf` where they name the same code.

use super::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The engines `--sites` runs with, or why one cannot run here.
/// How long a workload lingers after its calls (ms): the BPF engine names a
/// process at its next look (every 50 ms), so a second leaves room for a
/// loaded host; the seccomp engine names it at its first call.
const LINGER_MS: &str = "1000";

fn engines() -> Vec<&'static str> {
    let mut e = Vec::new();
    match missing_trace_facility() {
        None => e.push("bpf"),
        Some(why) => skip(why),
    }
    e.push("seccomp");
    e
}

/// `vdsoctl --json trace --sites --engine ENGINE -- ARGS`: the BPF engine
/// as root, the seccomp engine as nobody with every capability dropped.
fn sites(engine: &str, args: &[&str]) -> Value {
    let mut cmd = if engine == "seccomp" && is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]);
        c.arg(vdsoctl_path());
        c
    } else {
        Command::new(vdsoctl_path())
    };
    let out = cmd
        .env("NO_COLOR", "1")
        .args(["--json", "trace", "--sites", "--engine", engine, "--"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{engine} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(r["engine"], engine, "{r:#}");
    r
}

/// The one count row of `clock` made by process `comm`, and its sites.
fn row<'a>(r: &'a Value, comm: &str, clock: &str) -> (&'a Value, &'a Vec<Value>) {
    let rows: Vec<&Value> =
        r["counts"].as_array().unwrap().iter().filter(|c| c["comm"] == comm && c["clock"] == clock).collect();
    assert_eq!(rows.len(), 1, "one {comm} {clock} row: {r:#}");
    (rows[0], rows[0]["sites"].as_array().expect("sites with --sites"))
}

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A function's address as `nm` gives it.
fn nm(bin: &Path, name: &str) -> u64 {
    nm_sized(bin, name).0
}

/// A symbol's address and size as `nm -S` prints them.
fn nm_sized(bin: &Path, name: &str) -> (u64, u64) {
    let out = Command::new("nm").arg("-S").arg(bin).output().expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.ends_with(&format!(" {name}"))).unwrap_or_else(|| panic!("nm: no {name}"));
    let mut words = line.split(' ').map(|w| u64::from_str_radix(w, 16).unwrap_or(0));
    (words.next().unwrap(), words.next().unwrap())
}

#[test]
fn python_reading_a_cputime_clock_is_the_vdsos_own_fallback() {
    let script = "import time\nfor i in range(1000): time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID)\ntime.sleep(1)";
    for engine in engines() {
        let r = sites(engine, &["/usr/bin/python3", "-c", script]);
        let (row, sites) = row(&r, "python3", "CLOCK_PROCESS_CPUTIME_ID");
        assert_eq!(row["count"], 1000, "{engine}: {r:#}");
        assert_eq!(sites.len(), 1, "{engine}: one site, whatever the stack word: {r:#}");
        let s = &sites[0];
        assert_eq!(s["count"], 1000);
        assert_eq!((s["class"].as_str(), s["fallback"].as_str()), (Some("vdso_fallback"), Some("clock_not_served")));
        assert_eq!(
            (s["site"]["object"].as_str(), s["site"]["symbol"].as_str()),
            (Some("[vdso]"), Some("__vdso_clock_gettime"))
        );
        assert_eq!(s["site"]["kind"], "vdso");
        let f = r["findings"].to_string();
        assert!(f.contains("the vDSO's own fallback: CLOCK_PROCESS_CPUTIME_ID is not a clock the vDSO serves"), "{f}");
    }
}

#[test]
fn libc_syscall_names_its_caller() {
    let bin = build_c("call_sites", false, &["-DRAW_LIBC_FN"]);
    for engine in engines() {
        let r = sites(engine, &[p(&bin), "1000", LINGER_MS]);
        let (row, sites) = row(&r, &comm_of(&bin), "CLOCK_MONOTONIC");
        assert_eq!((row["count"].as_u64(), sites.len()), (Some(1000), 1), "{engine}: {r:#}");
        let s = &sites[0];
        assert_eq!((s["count"].as_u64(), s["class"].as_str()), (Some(1000), Some("libc_syscall")), "{s:#}");
        assert_eq!(s["site"]["symbol"], "syscall");
        assert!(s["site"]["object"].as_str().unwrap().contains("libc.so"), "{s:#}");
        let caller = &s["caller"];
        assert_eq!((caller["symbol"].as_str(), caller["object"].as_str()), (Some("raw_clock"), Some(p(&bin))));
        // The return address lies inside raw_clock as `nm -S` sizes it.
        let (_, size) = nm_sized(&bin, "raw_clock");
        assert!(hex(&caller["offset"]) > 0 && hex(&caller["offset"]) < size, "{caller:#} in {size:#x} bytes");
        assert!(r["findings"].to_string().contains("raw_clock+0x"), "{r:#}");
    }
}

/// The static program's inline `syscall`: named by its function, at the
/// address `objdump -d` shows a `syscall` instruction; stripped, the same
/// address in the object and its build-id as `readelf -n` prints it.
#[test]
fn an_inline_syscall_is_the_programs_and_a_stripped_one_is_named_by_address() {
    let bin = build_c("call_sites", false, &["-DASM", "-static"]);
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("asm_stripped");
    std::fs::copy(&bin, &stripped).unwrap();
    assert!(Command::new("strip").arg(&stripped).status().unwrap().success());
    for engine in engines() {
        let r = sites(engine, &[p(&bin), "1000", LINGER_MS]);
        let (_, s) = row(&r, &comm_of(&bin), "CLOCK_MONOTONIC");
        assert_eq!((s.len(), s[0]["count"].as_u64(), s[0]["class"].as_str()), (1, Some(1000), Some("program")));
        assert_eq!(s[0]["site"]["symbol"], "read_clock", "{r:#}");
        let at = hex(&s[0]["site"]["address"]);
        assert_eq!(at, nm(&bin, "read_clock") + hex(&s[0]["site"]["offset"]), "a static program is not moved");
        let dis = Command::new("objdump")
            .args(["-d", &format!("--start-address={at:#x}"), &format!("--stop-address={:#x}", at + 2)])
            .arg(&bin)
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&dis.stdout).contains("syscall"), "{}", String::from_utf8_lossy(&dis.stdout));

        let r = sites(engine, &[p(&stripped), "1000", LINGER_MS]);
        let (_, s) = row(&r, "asm_stripped", "CLOCK_MONOTONIC");
        assert_eq!((s.len(), s[0]["count"].as_u64(), s[0]["class"].as_str()), (1, Some(1000), Some("program")));
        let site = &s[0]["site"];
        assert!(site["symbol"].is_null(), "{site:#}");
        assert_eq!(hex(&site["offset"]), at, "the object's own address of the instruction");
        let notes = Command::new("readelf").arg("-n").arg(&stripped).output().unwrap();
        let notes = String::from_utf8_lossy(&notes.stdout);
        let id = site["build_id"].as_str().expect("build-id");
        assert!(notes.contains(&format!("Build ID: {id}")), "{id} not in {notes}");
    }
}

/// 32-bit: an inline `int 0x80` is the program's; libc's `syscall()` and
/// the vDSO's own fallback enter through the vDSO's `__kernel_vsyscall`,
/// and are named where it returns to (three words up the stack); issue 43:
/// `syscall()`'s caller is named as on x86_64, where it returns to (eight
/// words up, past the registers glibc's wrapper pushed), at the offset
/// objdump gives the call, and the row has its cost like a 64-bit one.
#[test]
fn a_32_bit_process_is_named_through_its_vdso_entry() {
    if !have_m32() {
        return skip("gcc -m32 cannot build (install gcc-multilib)");
    }
    let int80 = build_c("call_sites", true, &["-DINT80"]);
    let raw = build_c("call_sites", true, &["-DRAW_LIBC_FN"]);
    let cputime = build_c("call_sites", true, &["-DLIBC_CPUTIME"]);
    let one = |s: &[Value]| (s.len(), s[0]["count"].as_u64(), s[0]["class"].as_str().map(str::to_string));
    for engine in engines() {
        let r = sites(engine, &[p(&int80), "1000", LINGER_MS]);
        let (counted, s) = row(&r, &comm_of(&int80), "CLOCK_MONOTONIC");
        assert_eq!(counted["abi"], "i386");
        assert_eq!(one(s), (1, Some(1000), Some("program".into())), "{r:#}");
        assert_eq!(s[0]["site"]["symbol"], "read_clock");
        assert!(hex(&s[0]["site"]["address"]) < 1 << 32);

        let r = sites(engine, &[p(&raw), "1000", LINGER_MS]);
        let (counted, s) = row(&r, &comm_of(&raw), "CLOCK_MONOTONIC");
        assert_eq!(one(s), (1, Some(1000), Some("libc_syscall".into())), "{r:#}");
        assert_eq!(s[0]["site"]["symbol"], "syscall", "{r:#}");
        let caller = &s[0]["caller"];
        assert_eq!((caller["object"].as_str(), caller["symbol"].as_str()), (Some(p(&raw)), Some("raw_clock")), "{r:#}");
        assert_eq!(hex(&caller["offset"]), return_into(&raw, "raw_clock", "<syscall@plt>"), "{caller:#}");
        assert!(counted["cost"]["cpu_ns"].as_u64().is_some_and(|ns| ns > 0), "{counted:#}");

        let r = sites(engine, &[p(&cputime), "1000", LINGER_MS]);
        let (_, s) = row(&r, &comm_of(&cputime), "CLOCK_PROCESS_CPUTIME_ID");
        assert_eq!(one(s), (1, Some(1000), Some("vdso_fallback".into())), "{r:#}");
        assert_eq!(s[0]["fallback"], "clock_not_served");
        assert!(s[0]["site"]["symbol"].as_str().is_some_and(|f| f.starts_with("__vdso_clock_gettime")), "{r:#}");
    }
}

#[test]
fn code_in_anonymous_memory_is_labelled_as_such() {
    let bin = build_c("call_sites", false, &["-DANON"]);
    for engine in engines() {
        let r = sites(engine, &[p(&bin), "1000", LINGER_MS]);
        let (_, s) = row(&r, &comm_of(&bin), "CLOCK_MONOTONIC");
        assert_eq!((s.len(), s[0]["count"].as_u64(), s[0]["class"].as_str()), (1, Some(1000), Some("jit")), "{r:#}");
        assert_eq!((s[0]["site"]["kind"].as_str(), s[0]["site"]["offset"].as_str()), (Some("anonymous"), Some("0x5")));
        assert_eq!(s[0]["caller"]["symbol"], "main");
    }
}

/// A process that exits a while before the trace ends: named all the same.
#[test]
fn a_process_that_exits_before_the_trace_ends_is_still_named() {
    let bin = build_c("call_sites", false, &["-DRAW_LIBC_FN"]);
    let script = format!("{} 500 {LINGER_MS}; sleep 0.5", p(&bin));
    for engine in engines() {
        let r = sites(engine, &["/bin/sh", "-c", &script]);
        let (row, s) = row(&r, &comm_of(&bin), "CLOCK_MONOTONIC");
        assert_ne!(row["pid"], r["command"]["pid"], "the child, not the shell");
        assert_eq!((s.len(), s[0]["count"].as_u64()), (1, Some(500)), "{r:#}");
        assert_eq!(
            (s[0]["site"]["symbol"].as_str(), s[0]["caller"]["symbol"].as_str()),
            (Some("syscall"), Some("raw_clock"))
        );
    }
}

#[test]
fn the_perf_engine_says_it_cannot_and_the_table_shows_sites() {
    let (code, out, err) = run(&["trace", "--sites", "--engine", "perf", "--", "true"]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--sites needs the BPF engine (--engine bpf), or the seccomp engine"), "{err}");
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("call_sites", false, &["-DRAW_LIBC_FN"]);
    let (code, out, err) = run(&["trace", "--sites", "--", p(&bin), "10", LINGER_MS]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("call sites\nPID"), "{out}");
    let line = out.lines().find(|l| l.contains("syscall+0x")).expect("a site line");
    assert!(line.contains(" 10 ") && line.ends_with("libc syscall()") && line.contains("raw_clock+0x"), "{line}");
}

/// Where a call to `callee` in `function` returns, from the function's
/// start, as `objdump -d` shows it: the instruction after the call.
fn return_into(bin: &Path, function: &str, callee: &str) -> u64 {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", &format!("--disassemble={function}")])
        .arg(bin)
        .output()
        .expect("objdump");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let addrs: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let (a, rest) = l.trim_start().split_once(':')?;
            Some((u64::from_str_radix(a, 16).ok()?, rest))
        })
        .collect();
    let at = addrs.iter().position(|(_, i)| i.contains("call") && i.contains(callee)).expect("the call");
    addrs[at + 1].0 - nm(bin, function)
}

/// Issue #32: processes that exit at once after their calls (no linger:
/// gone long before the BPF engine's next look) are named all the same,
/// from the mapping the kernel captured at each site's first call — a
/// dynamic PIE calling `syscall()` from a named function (the wrapper's
/// caller named), and a static non-PIE program's inline `syscall`.
#[test]
fn a_process_that_exits_at_once_is_named_from_the_kernels_capture() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let frame = ["-fno-omit-frame-pointer"];
    let pie = build_c("short_clock", false, &frame);
    let fixed = build_c("short_clock", false, &["-fno-omit-frame-pointer", "-static", "-no-pie"]);
    // The dynamic PIE: libc's syscall(), its caller read_monotonic_raw.
    let r = sites("bpf", &[p(&pie), "raw", "5000"]);
    let (count_row, s) = row(&r, &comm_of(&pie), "CLOCK_MONOTONIC_RAW");
    assert_eq!((count_row["count"].as_u64(), s.len()), (Some(5000), 1), "{r:#}");
    assert_eq!((s[0]["count"].as_u64(), s[0]["class"].as_str()), (Some(5000), Some("libc_syscall")), "{r:#}");
    assert_eq!(s[0]["site"]["symbol"], "syscall", "{r:#}");
    assert!(s[0]["site"]["object"].as_str().unwrap().contains("libc.so"), "{r:#}");
    let caller = &s[0]["caller"];
    assert_eq!((caller["object"].as_str(), caller["symbol"].as_str()), (Some(p(&pie)), Some("read_monotonic_raw")));
    assert_eq!(hex(&caller["offset"]), return_into(&pie, "read_monotonic_raw", "<syscall@plt>"), "{caller:#}");
    assert!(!r["findings"].to_string().contains("not named"), "{r:#}");
    // The static non-PIE program: its own inline syscall, at the address
    // nm gives its function plus the offset named.
    let r = sites("bpf", &[p(&fixed), "inline", "5000"]);
    let (count_row, s) = row(&r, &comm_of(&fixed), "CLOCK_MONOTONIC_RAW");
    assert_eq!((count_row["count"].as_u64(), s.len()), (Some(5000), 1), "{r:#}");
    assert_eq!((s[0]["count"].as_u64(), s[0]["class"].as_str()), (Some(5000), Some("program")), "{r:#}");
    assert_eq!(
        (s[0]["site"]["object"].as_str(), s[0]["site"]["symbol"].as_str()),
        (Some(p(&fixed)), Some("read_inline"))
    );
    let at = hex(&s[0]["site"]["address"]);
    assert_eq!(at, nm(&fixed, "read_inline") + hex(&s[0]["site"]["offset"]), "{r:#}");
    assert!(!r["findings"].to_string().contains("not named"), "{r:#}");
    // -m32: libc's syscall() enters through the compat vDSO's
    // __kernel_vsyscall (named from the task's AT_SYSINFO), so the site
    // is where that returns, libc's syscall().
    if have_m32() {
        let m32 = build_c("short_clock", true, &["-fno-omit-frame-pointer"]);
        let r = sites("bpf", &[p(&m32), "raw", "5000"]);
        let (count_row, s) = row(&r, &comm_of(&m32), "CLOCK_MONOTONIC_RAW");
        assert_eq!((count_row["count"].as_u64(), s.len()), (Some(5000), 1), "{r:#}");
        assert_eq!((s[0]["count"].as_u64(), s[0]["class"].as_str()), (Some(5000), Some("libc_syscall")), "{r:#}");
        assert_eq!(s[0]["site"]["symbol"], "syscall", "{r:#}");
        assert!(s[0]["site"]["object"].as_str().unwrap().contains("libc.so"), "{r:#}");
        let caller = &s[0]["caller"];
        assert_eq!((caller["object"].as_str(), caller["symbol"].as_str()), (Some(p(&m32)), Some("read_monotonic_raw")));
        assert_eq!(hex(&caller["offset"]), return_into(&m32, "read_monotonic_raw", "<syscall@plt>"), "{caller:#}");
        let r = sites("bpf", &[p(&m32), "inline", "5000"]);
        let (count_row, s) = row(&r, &comm_of(&m32), "CLOCK_MONOTONIC_RAW");
        assert_eq!((count_row["count"].as_u64(), s.len()), (Some(5000), 1), "{r:#}");
        assert_eq!((s[0]["class"].as_str(), s[0]["site"]["symbol"].as_str()), (Some("program"), Some("read_inline")));
        assert_eq!(s[0]["site"]["object"].as_str(), Some(p(&m32)), "{r:#}");
    } else {
        skip("no -m32 toolchain (gcc-multilib)");
    }
    // python3 reading a CPU-time clock through glibc and exiting at once:
    // the vDSO's own fallback, named from the host's vDSO image.
    let script = "import time\nfor i in range(3000): time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID)";
    let r = sites("bpf", &["/usr/bin/python3", "-c", script]);
    let (count_row, s) = row(&r, "python3", "CLOCK_PROCESS_CPUTIME_ID");
    assert_eq!((count_row["count"].as_u64(), s.len()), (Some(3000), 1), "{r:#}");
    assert_eq!((s[0]["count"].as_u64(), s[0]["class"].as_str()), (Some(3000), Some("vdso_fallback")), "{r:#}");
    assert_eq!(
        (s[0]["site"]["object"].as_str(), s[0]["site"]["symbol"].as_str()),
        (Some("[vdso]"), Some("__vdso_clock_gettime"))
    );
}

/// Issue #32, `-a`: a churn of 200 processes that exit at once (a dynamic
/// PIE calling `syscall()` and a static non-PIE inline `syscall`, 100 each,
/// copies no other process maps), every site named with exact counts, and
/// every PIE run's stack named from `syscall` through its caller to `main`.
#[test]
fn a_churn_of_short_lived_processes_under_all_is_named() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let (pie, fixed) = (dir.path().join("churn_pie"), dir.path().join("churn_fixed"));
    copy_executable(&build_c("short_clock", false, &["-fno-omit-frame-pointer"]), &pie).unwrap();
    let static_args = ["-fno-omit-frame-pointer", "-static", "-no-pie"];
    copy_executable(&build_c("short_clock", false, &static_args), &fixed).unwrap();
    let (trace, _, _stderr) =
        start_armed(&["--json", "trace", "-a", "--sites", "--stacks", "--engine", "bpf", "-d", "120s"]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    for i in 0..200 {
        let (bin, mode) = if i % 2 == 0 { (&pie, "raw") } else { (&fixed, "inline") };
        assert!(Command::new(bin).args([mode, "100"]).status().unwrap().success());
    }
    let (_, r) = interrupt(trace);
    for (bin, class, symbol, caller) in
        [(&pie, "libc_syscall", "syscall", "read_monotonic_raw"), (&fixed, "program", "read_inline", "main")]
    {
        let rows: Vec<&Value> = r["counts"].as_array().unwrap().iter().filter(|c| c["comm"] == comm_of(bin)).collect();
        assert_eq!(rows.len(), 100, "{} rows: {r:#}", comm_of(bin));
        for row in rows {
            let s = row["sites"].as_array().unwrap();
            assert_eq!((row["count"].as_u64(), s.len()), (Some(100), 1), "{row:#}");
            assert_eq!((s[0]["count"].as_u64(), s[0]["class"].as_str()), (Some(100), Some(class)), "{row:#}");
            assert_eq!(s[0]["site"]["symbol"], symbol, "{row:#}");
            assert_eq!(
                (s[0]["caller"]["object"].as_str(), s[0]["caller"]["symbol"].as_str()),
                (Some(p(bin)), Some(caller)),
                "{row:#}"
            );
        }
    }
    // --stacks: each PIE run's one stack, named innermost first down to
    // main, the leaf wrapper's caller spliced in. Under -a the stack map
    // is the host's, and ~5% of the runs' stacks once lost their bucket
    // to another's (issue 43): those are kept by content now, so every
    // run's stack is there with all 100 of its calls. (stacks_lost is the
    // host's, other processes' included: not asserted here.)
    let stacks: Vec<&Value> =
        r["stacks"].as_array().unwrap().iter().filter(|s| s["comm"] == comm_of(&pie) && s["count"] == 100).collect();
    let lost = r["stacks_lost"].as_u64().unwrap();
    assert_eq!(stacks.len(), 100, "{} stacks, {lost} calls lost", stacks.len());
    for s in stacks {
        let names: Vec<&str> =
            s["frames"].as_array().unwrap().iter().map(|f| f["symbol"].as_str().unwrap_or("?")).collect();
        assert_eq!(names[..3], ["syscall", "read_monotonic_raw", "main"], "{s:#}");
    }
}

/// Issue 43: gcc -O2 compiles `read_monotonic_raw`'s `return syscall(…)`
/// into `jmp syscall@plt` (checked with objdump): no frame of its own, so
/// the return address is `main`'s, where no syscall() is written. The
/// call just before it calls `read_monotonic_raw`, which does not hold
/// the site: the caller is that function (`tail_call`), the return address
/// beside it — with both engines, the process exiting at once.
#[test]
fn a_tail_call_names_the_function_that_made_it() {
    let bin = build_c("tail_call", false, &[]);
    let body = Command::new("objdump").args(["-d", "--disassemble=read_monotonic_raw"]).arg(&bin).output().unwrap();
    let body = String::from_utf8_lossy(&body.stdout);
    assert!(body.lines().any(|l| l.contains("jmp") && l.contains("<syscall@plt>")), "not a tail call:\n{body}");
    let ret = return_into(&bin, "main", "<read_monotonic_raw>");
    for engine in engines() {
        let r = sites(engine, &[p(&bin), "1000"]);
        let (count_row, s) = row(&r, &comm_of(&bin), "CLOCK_MONOTONIC_RAW");
        assert_eq!((count_row["count"].as_u64(), s.len()), (Some(1000), 1), "{engine}: {r:#}");
        assert_eq!((s[0]["count"].as_u64(), s[0]["class"].as_str()), (Some(1000), Some("libc_syscall")), "{r:#}");
        assert_eq!(s[0]["site"]["symbol"], "syscall", "{r:#}");
        let caller = &s[0]["caller"];
        assert_eq!(
            (caller["symbol"].as_str(), caller["tail_call"].as_str()),
            (Some("main"), Some("read_monotonic_raw"))
        );
        assert_eq!(hex(&caller["offset"]), ret, "{engine}: returns where objdump's call does: {caller:#}");
    }
    // A direct call is no tail call: short_clock's read_monotonic_raw
    // calls syscall() and checks the result.
    let direct = build_c("short_clock", false, &[]);
    for engine in engines() {
        let r = sites(engine, &[p(&direct), "raw", "100"]);
        let (_, s) = row(&r, &comm_of(&direct), "CLOCK_MONOTONIC_RAW");
        let caller = &s[0]["caller"];
        assert_eq!((caller["symbol"].as_str(), caller.get("tail_call")), (Some("read_monotonic_raw"), None), "{r:#}");
    }
}
