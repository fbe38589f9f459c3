//! Issue 43, which half of "clock_gettime is hot": `vdsoctl top` beside a
//! raw clock loop, a raw getrandom loop, a libc clock loop and a churn of
//! short-lived raw callers, checked against `perf record -a` over the same
//! window. The shares are of samples, so the peer is perf's own:
//!
//! - vDSO: perf's samples in `[vdso]` for that comm / all its samples;
//! - kernel: perf's samples in `[kernel.kallsyms]` (and any `bpf_prog_*`,
//!   kernel code too) / all — top's `kernel` (inside the fallback syscall)
//!   plus `kernel_other` (any other kernel mode: an interrupt taken in user
//!   mode, a page fault) is the same set. That the fallback syscall is most
//!   of it for the raw loops is checked beside.
//!
//! Both sample at the same fixed rate; their samples are independent, so
//! each share carries binomial noise of sqrt(p(1-p)/n): top runs `-d 5s`
//! rounds, each under its own `perf record -a -k monotonic -- vdsoctl top`
//! with perf's report cut to top's window (`monotonic_start_ns`,
//! `monotonic_end_ns`), until every loop has at least `MIN_SAMPLES`.
//!
//! The two are not blind to each other: both sample on the cpu-clock
//! hrtimer, and a tick of one that lands while the other's handler runs is
//! a kernel sample in a user-mode loop (top's `kernel_other`, perf's
//! `[kernel.kallsyms]` for the libc loop). CI saw that bias at 1.06 pp
//! (`top_raw` kernel 76.29% against perf's 75.22%, n = 40,595 and 40,534),
//! so the tolerance is that bias bound plus five standard deviations of the
//! difference of the two shares at the samples actually taken.

use super::common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

/// Samples per second of CPU time, both tools (perf's ceiling here is
/// perf_event_max_sample_rate, 100,000).
const FREQ: &str = "10000";
/// Samples each loop should have in top before the shares are compared:
/// the difference of two shares near 80% then has a standard deviation of
/// sqrt(2 * 0.8 * 0.2 / 30,000) = 0.33 pp. A loaded host gives fewer in
/// `MAX_ROUNDS` rounds; the shares are compared then all the same, with the
/// wider noise those samples carry.
const MIN_SAMPLES: u64 = 30_000;
const MAX_ROUNDS: usize = 6;
/// The most each sampler's own handler can add to the other's kernel share
/// (seen: 1.06 pp in CI, 0.3 pp on a quiet host).
const MUTUAL_BIAS_PP: f64 = 1.5;

/// How far two independent sample shares may differ: the mutual bias plus
/// five standard deviations of their difference.
fn tolerance_pp(p_ours: f64, n_ours: u64, p_theirs: f64, n_theirs: u64) -> f64 {
    let var = |p: f64, n: u64| {
        let p = (p / 100.0).clamp(0.0, 1.0);
        p * (1.0 - p) / n.max(1) as f64
    };
    MUTUAL_BIAS_PP + 5.0 * 100.0 * (var(p_ours, n_ours) + var(p_theirs, n_theirs)).sqrt()
}

/// perf's samples per comm in top's window (`perf record -k monotonic`
/// stamps; top's JSON has its window in the same clock): all, in
/// `[vdso]`, in the kernel.
fn perf_shares(data: &Path, window: (u64, u64)) -> HashMap<String, (u64, u64, u64)> {
    let secs = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    let out = Command::new("perf")
        .args(["report", "--stdio", "--no-children", "-g", "none", "--sort", "comm,dso", "-F", "sample,comm,dso"])
        .args(["-t", "|", "--time", &format!("{},{}", secs(window.0), secs(window.1)), "-i"])
        .arg(data)
        .output()
        .expect("perf report");
    assert!(out.status.success(), "perf report: {}", String::from_utf8_lossy(&out.stderr));
    let mut by: HashMap<String, (u64, u64, u64)> = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(n), Some(comm), Some(dso)) = (f.first().and_then(|n| n.parse::<u64>().ok()), f.get(1), f.get(2))
        else {
            continue;
        };
        let e = by.entry(comm.to_string()).or_default();
        e.0 += n;
        if *dso == "[vdso]" {
            e.1 += n;
        }
        if *dso == "[kernel.kallsyms]" || dso.starts_with("bpf_prog_") {
            e.2 += n;
        }
    }
    by
}

/// top's samples per group, summed over rounds: all, vDSO, fallback
/// syscall, other kernel, and the fallback calls seen (syscall, clock).
#[derive(Debug, Default)]
struct Ours {
    samples: u64,
    vdso: u64,
    kernel: u64,
    kernel_other: u64,
    calls: Vec<(String, Option<String>)>,
    /// Samples per vDSO function (`None`: an address no symbol holds).
    functions: HashMap<Option<String>, u64>,
}

fn add_round(ours: &mut HashMap<String, Ours>, r: &Value) {
    assert_eq!(r["sight"], "full", "{r:#}");
    for g in r["groups"].as_array().unwrap() {
        let Some(key) = g["key"].as_str() else { continue };
        let o = ours.entry(key.to_string()).or_default();
        let n = |v: &Value| v["samples"].as_u64().unwrap();
        o.samples += g["samples"].as_u64().unwrap();
        o.vdso += n(&g["vdso"]);
        o.kernel += n(&g["kernel"]);
        o.kernel_other += n(&g["kernel_other"]);
        for c in g["kernel_calls"].as_array().unwrap() {
            let call = (c["syscall"].as_str().unwrap().to_string(), c["clock"].as_str().map(str::to_string));
            if !o.calls.contains(&call) {
                o.calls.push(call);
            }
        }
        for f in g["vdso_functions"].as_array().unwrap() {
            *o.functions.entry(f["function"].as_str().map(str::to_string)).or_default() += n(f);
        }
    }
}

/// A clock_loop run until the test drops it (it prints "ready" first).
fn looping(bin: &Path, args: &[&str]) -> Workload {
    let mut c = Command::new(bin);
    c.args(args);
    Workload::start(c)
}

/// A child killed and reaped when dropped (getrandom_loop prints no "ready").
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn pct(part: u64, all: u64) -> f64 {
    100.0 * part as f64 / all.max(1) as f64
}

#[test]
fn shares_match_perf_report_in_the_same_window() {
    if !is_root() {
        return skip("top samples every CPU with a BPF program: root (or CAP_BPF + CAP_PERFMON)");
    }
    if !Command::new("perf").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return skip("perf (linux-perf) is not installed: it is top's peer");
    }
    if std::env::consts::ARCH != "x86_64" {
        return skip("top's sampler knows x86_64's registers only");
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let bin = |fixture: &str, name: &str| {
        let to = dir.path().join(name);
        copy_executable(&build_c(fixture, false, &[]), &to).unwrap();
        to
    };
    let (raw, libc, grnd, churner) = (
        bin("clock_loop", "top_raw"),
        bin("clock_loop", "top_libc"),
        bin("getrandom_loop", "top_grnd"),
        bin("short_clock", "top_churn"),
    );
    let forever = "1000000000000";
    let _raw = looping(&raw, &["raw", "4", forever]);
    let _libc = looping(&libc, &["libc", "1", forever]);
    let mut g = Command::new(&grnd);
    g.args(["raw", forever]).stdout(Stdio::null()).stderr(Stdio::null());
    let _grnd = Reaped(g.spawn().unwrap());
    // The churn: short-lived raw callers, one after another, all along.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = Command::new(&churner).args(["raw", "20000"]).stdout(Stdio::null()).status();
                n += 1;
            }
            n
        })
    };
    // Each round is one `perf record -a -- vdsoctl top -d 5s`, perf's samples
    // taken in top's own window (`--time`): a change on the host (another
    // tool attaching to every syscall slows the raw loops' kernel half)
    // falls in both.
    let mut ours: HashMap<String, Ours> = HashMap::new();
    let mut theirs: HashMap<String, (u64, u64, u64)> = HashMap::new();
    let loops = ["top_raw", "top_libc", "top_grnd"];
    for round in 0..MAX_ROUNDS {
        let data = dir.path().join(format!("perf-{round}.data"));
        let out = Command::new("perf")
            .args(["record", "-q", "-a", "-k", "monotonic", "-e", "cpu-clock", "-F", FREQ, "-o"])
            .arg(&data)
            .arg("--")
            .arg(vdsoctl_path())
            .args(["--json", "top", "-F", FREQ, "-d", "5s", "--by", "comm", "--top", "50"])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "perf record -- vdsoctl top: {}", String::from_utf8_lossy(&out.stderr));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["frequency_hz"], 10000, "{r:#}");
        add_round(&mut ours, &r);
        let window = (r["monotonic_start_ns"].as_u64().unwrap(), r["monotonic_end_ns"].as_u64().unwrap());
        assert!(window.0 > 0 && window.1 > window.0, "{r:#}");
        for (comm, (all, vdso, kernel)) in perf_shares(&data, window) {
            let e = theirs.entry(comm).or_default();
            (e.0, e.1, e.2) = (e.0 + all, e.1 + vdso, e.2 + kernel);
        }
        if loops.iter().all(|l| ours.get(*l).is_some_and(|o| o.samples >= MIN_SAMPLES)) {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let churned = churn.join().unwrap();
    assert!(churned >= 200, "the churn ran {churned} processes");
    let mut said = String::new();
    for l in loops {
        let o = &ours[l];
        let &(all, vdso, kernel) = theirs.get(l).unwrap_or_else(|| panic!("perf saw no {l}"));
        said += &format!(
            "{l}: top n={} vdso {:.2}% kernel {:.2}% (+{:.2}% other) | perf n={all} vdso {:.2}% kernel {:.2}%\n",
            o.samples,
            pct(o.vdso, o.samples),
            pct(o.kernel, o.samples),
            pct(o.kernel_other, o.samples),
            pct(vdso, all),
            pct(kernel, all)
        );
    }
    // The figures, for `--nocapture` (the commit quotes them).
    eprintln!("{said}");
    for l in loops {
        let o = &ours[l];
        let (all, vdso, kernel) = theirs[l];
        assert!(o.samples > 0 && all > 0, "{said}");
        let (ov, tv) = (pct(o.vdso, o.samples), pct(vdso, all));
        let (ok, tk) = (pct(o.kernel + o.kernel_other, o.samples), pct(kernel, all));
        let (dv, tol_v) = (ov - tv, tolerance_pp(ov, o.samples, tv, all));
        let (dk, tol_k) = (ok - tk, tolerance_pp(ok, o.samples, tk, all));
        assert!(dv.abs() <= tol_v, "{l}: vDSO share {dv:+.2} pp from perf's (allowed {tol_v:.2}):\n{said}");
        assert!(dk.abs() <= tol_k, "{l}: kernel share {dk:+.2} pp from perf's (allowed {tol_k:.2}):\n{said}");
    }
    // Which half: the libc loop is vDSO time, the raw loops kernel time
    // inside their fallback syscall. How big each half is depends on the
    // host (a raw loop's kernel share was 76% on one machine, 49% on a
    // fresh one, perf agreeing each time): that is the comparison with
    // perf's above, not a threshold here.
    let (r, c, g) = (&ours["top_raw"], &ours["top_libc"], &ours["top_grnd"]);
    assert!(c.vdso > 0 && c.kernel == 0, "{said}");
    let named = c.functions.get(&Some("__vdso_clock_gettime".to_string())).copied().unwrap_or(0);
    assert!(named * 10 >= c.vdso * 9, "clock_gettime is its vDSO time: {:?}\n{said}", c.functions);
    assert!(r.kernel > 0 && r.vdso == 0, "{said}");
    assert_eq!(r.calls, [("clock_gettime".to_string(), Some("CLOCK_MONOTONIC_RAW".to_string()))], "{said}");
    assert!(g.kernel > 0 && g.vdso == 0, "{said}");
    assert_eq!(g.calls, [("getrandom".to_string(), None)], "{said}");
    // The fallback syscall is nearly all of the raw loops' kernel time.
    for o in [r, g] {
        assert!(o.kernel_other * 20 < o.kernel, "{said}");
    }
}

/// As nobody, on a command: its user-mode samples only — the vDSO half is
/// seen, the kernel half is said to be unseen (a typed fact), not shown as 0.
#[test]
fn as_nobody_a_command_is_sampled_in_user_mode_and_says_what_it_cannot_see() {
    if !is_root() {
        return skip("running as nobody needs root to drop to it");
    }
    if std::env::consts::ARCH != "x86_64" {
        return skip("top's sampler knows x86_64's registers only");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let libc = dir.path().join("top_user");
    copy_executable(&build_c("clock_loop", false, &[]), &libc).unwrap();
    let libc = libc.to_str().unwrap();
    let out = run_as_nobody(&["--json", "top", "--by", "comm", "--", libc, "libc", "1", "30000000"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = json_of(&out);
    assert_eq!(r["sight"], "user_only", "{r:#}");
    assert_eq!(r["exit_status"], serde_json::json!({"code": 0}), "{r:#}");
    let g = r["groups"].as_array().unwrap().iter().find(|g| g["key"] == "top_user").expect("the command's group");
    assert!(g["vdso"]["samples"].as_u64().unwrap() > 0, "{g:#}");
    assert_eq!(g["kernel"]["samples"], 0, "{g:#}");
    assert!(g["kernel_other"].is_null(), "the kernel is not seen, so not 0: {g:#}");
    // A raw loop's kernel half is not seen: no fallback share, said so.
    let raw = dir.path().join("top_user_raw");
    copy_executable(&build_c("clock_loop", false, &[]), &raw).unwrap();
    let out = run_as_nobody(&["--json", "top", "--by", "comm", "--", raw.to_str().unwrap(), "raw", "4", "3000000"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = json_of(&out);
    assert_eq!(r["sight"], "user_only", "{r:#}");
    let g = r["groups"].as_array().unwrap().iter().find(|g| g["key"] == "top_user_raw").expect("the command's group");
    assert_eq!((g["vdso"]["samples"].as_u64(), g["kernel"]["samples"].as_u64()), (Some(0), Some(0)), "{g:#}");
    assert!(g["samples"].as_u64().unwrap() > 0 && g["kernel_other"].is_null(), "{g:#}");
}

/// Bad input: one line, the documented exit code, before any sampling.
#[test]
fn bad_input_is_a_one_line_error_with_its_exit_code() {
    for (args, want) in [
        (&["top", "--interval", "10ms"][..], 2),
        (&["top", "-F", "0"], 2),
        (&["top", "-F", "20001"], 2),
        (&["top", "--top", "0"], 2),
        (&["top", "--by", "pid"], 2),
        (&["top", "--cgroup", ""], 2),
        (&["--format", "prometheus", "top"], 2),
        (&["top", "-p", "1", "--", "true"], 2),
        (&["top", "-d", "1s", "-p", "2147483646"], 3),
        (&["top", "--", "/nonexistent/top-cmd"], 3),
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, want, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    if is_root() {
        // The host without privilege: a facility refused (4), said once.
        let out = run_as_nobody(&["top", "-d", "1s"]);
        assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
}

/// `--interval` gives a report per interval, JSON Lines, then the last one
/// at -d.
#[test]
fn an_interval_gives_one_json_line_per_window() {
    if !is_root() {
        return skip("top samples every CPU with a BPF program: root (or CAP_BPF + CAP_PERFMON)");
    }
    if std::env::consts::ARCH != "x86_64" {
        return skip("top's sampler knows x86_64's registers only");
    }
    let _lock = system_wide_lock();
    let (code, stdout, stderr) = run(&["--json", "top", "--interval", "100ms", "-d", "2s"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 2, "a line per interval, then the last: {stdout}");
    for r in &lines {
        assert!(r["duration_s"].as_f64().unwrap() > 0.0, "{r:#}");
        assert_eq!((r["sight"].as_str(), r["frequency_hz"].as_u64()), (Some("full"), Some(999)), "{r:#}");
    }
}

/// A 32-bit process: its fallback syscalls in the compat ABI, its vDSO
/// functions named from its own (compat) image.
#[test]
fn a_32_bit_process_is_split_by_its_own_abi_and_image() {
    if !is_root() {
        return skip("top samples every CPU with a BPF program: root (or CAP_BPF + CAP_PERFMON)");
    }
    if std::env::consts::ARCH != "x86_64" {
        return skip("top's sampler knows x86_64's registers only");
    }
    if !have_m32() {
        return skip("gcc -m32 (gcc-multilib) is missing");
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let (raw, libc) = (dir.path().join("top_raw32"), dir.path().join("top_libc32"));
    copy_executable(&build_c("clock_loop", true, &[]), &raw).unwrap();
    copy_executable(&build_c("clock_loop", true, &[]), &libc).unwrap();
    let forever = "1000000000000";
    let _raw = looping(&raw, &["raw", "4", forever]);
    let _libc = looping(&libc, &["libc", "1", forever]);
    let r = run_json(&["top", "-d", "2s", "--by", "comm", "--top", "50"]);
    let group = |key: &str| {
        r["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("{key}: {r:#}"))
    };
    let g = group("top_raw32");
    let call = &g["kernel_calls"][0];
    assert_eq!((call["syscall"].as_str(), call["compat"].as_bool()), (Some("clock_gettime"), Some(true)), "{g:#}");
    assert_eq!(call["clock"], "CLOCK_MONOTONIC_RAW", "{g:#}");
    let g = group("top_libc32");
    assert_eq!(g["kernel"]["samples"], 0, "{g:#}");
    let f = g["vdso_functions"][0]["function"].as_str().unwrap_or_default();
    assert!(f.starts_with("__vdso_clock_gettime"), "the compat image's name: {g:#}");
}

/// `serve` exports the same shares: per program, its vDSO and its
/// fallback-syscall share over the last interval.
#[test]
fn serve_exports_each_programs_shares() {
    if !is_root() {
        return skip("top's sampler in serve needs root (or CAP_BPF + CAP_PERFMON)");
    }
    if std::env::consts::ARCH != "x86_64" {
        return skip("top's sampler knows x86_64's registers only");
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let (raw, libc) = (dir.path().join("top_srv_raw"), dir.path().join("top_srv_libc"));
    copy_executable(&build_c("clock_loop", false, &[]), &raw).unwrap();
    copy_executable(&build_c("clock_loop", false, &[]), &libc).unwrap();
    let forever = "1000000000000";
    let _raw = looping(&raw, &["raw", "4", forever]);
    let _libc = looping(&libc, &["libc", "1", forever]);
    let serve = super::serve::Serve::start(&[]);
    let share = |text: &str, exe: &Path, half: &str| {
        let head = format!("vdsoctl_cpu_share_percent{{exe=\"{}\",half=\"{half}\"}} ", exe.display());
        text.lines().find_map(|l| l.strip_prefix(head.as_str())).and_then(|v| v.parse::<f64>().ok())
    };
    let text = super::serve::poll("both loops' shares", 100, || {
        let text = serve.get("/metrics").body;
        (share(&text, &libc, "vdso").is_some() && share(&text, &raw, "kernel").is_some()).then_some(text)
    });
    // Which half each is (how big, perf's comparison in the test above).
    assert!(share(&text, &libc, "vdso").unwrap() > 0.0, "{text}");
    assert_eq!(share(&text, &libc, "kernel"), Some(0.0), "{text}");
    assert!(share(&text, &raw, "kernel").unwrap() > 0.0, "{text}");
    assert_eq!(share(&text, &raw, "vdso"), Some(0.0), "{text}");
    assert!(!text.contains(&format!("exe=\"{}\"", vdsoctl_path().display())), "serve is not its own series: {text}");
    if have_promtool() {
        assert_promtool_accepts(&text);
    }
}
