//! The typed JSON contract of `trace`: counts, sites, stacks, vsyscall,
//! exited and unattributed rows.

use super::*;

/// A rate carries at most one decimal.
fn one_decimal(rate: f64) -> bool {
    ((rate * 10.0).round() - rate * 10.0).abs() < 1e-6
}

/// `trace --sites` of call_sites' libc `syscall()` loop: each row's sites,
/// typed; their counts add up to the row's.
fn assert_typed_sites() {
    let cs = build_c("call_sites", false, &["-DRAW_LIBC_FN"]);
    // It lingers 1 s after its calls: the BPF engine names a process at a
    // 50 ms look while it lives.
    let t: Trace = doc(&["trace", "--sites", "--", cs.to_str().unwrap(), "100", "1000"], &[0]);
    let row = t.counts.iter().find(|r| r.sites.is_some()).expect("a row with sites");
    let sites = row.sites.as_ref().unwrap();
    assert_eq!(sites.iter().map(|s| s.count).sum::<u64>(), row.count);
    let s = &sites[0];
    assert_eq!((s.class.as_str(), s.fallback.as_deref(), s.clocksource.as_deref()), ("libc_syscall", None, None));
    assert!(s.per_sec > 0.0 && addr(&s.site.address) > 0 && addr(&s.site.offset) > 0, "{s:?}");
    assert_eq!((s.site.kind.as_str(), s.site.symbol.as_deref()), ("object", Some("syscall")));
    assert!(s.site.object.as_deref().is_some_and(|o| o.contains("libc")) && s.site.build_id.is_some());
    let caller = s.caller.as_ref().expect("the caller");
    assert_eq!((caller.symbol.as_deref(), caller.kind.as_str()), (Some("raw_clock"), "object"));
}

#[test]
fn trace_of_true_and_of_a_clock_loop() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let t: Trace = doc(&["trace", "--", "true"], &[0]);
    let cmd = t.command.as_ref().expect("-- CMD reports the command");
    assert_eq!(cmd.argv, ["true"]);
    assert_eq!(cmd.exit_status, Some(ExitStatus::Code(0)));
    assert_eq!(cmd.timed_out, None, "trace has no --timeout");
    assert_eq!(t.target, "command", "the command is said once, under `command`");
    // A note says why an engine was passed over: perf (BPF refused) or bpf (fentry refused).
    assert!(t.engine == "perf" || t.engine_note.as_deref().is_none_or(|n| n.starts_with("fentry refused: ")));
    assert!(["fentry", "bpf", "perf"].contains(&t.engine.as_str()));
    assert!(t.seccomp_channel.is_none(), "only the seccomp engine has a channel");
    // The seccomp engine says its channel: seccomp-stops where ptrace is
    // allowed (as here), the listener asked for with its reason.
    let s: Trace = doc(&["trace", "--engine", "seccomp", "--", "true"], &[0]);
    let ch = s.seccomp_channel.as_ref().expect("seccomp_channel");
    assert!(ch.channel == Channel::Ptrace && ch.why.is_none() || ch.why == Some(ListenerWhy::PtraceRefused), "{ch:?}");
    let s: Trace = doc(&["trace", "--seccomp-channel", "listener", "--engine", "seccomp", "--", "true"], &[0]);
    let ch = s.seccomp_channel.as_ref().expect("seccomp_channel");
    assert_eq!((&ch.channel, &ch.why), (&Channel::Listener, &Some(ListenerWhy::Asked)), "{ch:?}");
    assert!(!t.interrupted && t.interval.is_none() && t.exited.is_empty() && t.unattributed.is_empty());
    assert_eq!((t.lost, t.unfollowed, t.withdrawn), (0, 0, 0));
    assert!(t.auditor_seized.is_empty(), "a clean command held nothing: {:?}", t.auditor_seized);
    assert!(t.duration_ns > 0);
    assert!(t.vsyscall_emulations.is_empty());
    // Nothing counted is said, and what it cannot prove.
    let [f] = &t.findings[..] else { panic!("one finding: {:?}", t.findings) };
    assert_eq!((&f.severity, f.hint.as_deref()), (&Severity::Info, None), "{f:?}");
    assert_eq!(f.kind.0, "observed-clean", "{f:?}");
    assert!(f
        .message
        .ends_with(": clock reads the vDSO serves, if it made any, never enter the kernel and are not counted"));

    // CLOCK_TAI (named) through the raw syscall, and clock id 10 (no name: a number).
    let bin = build_c("clock_loop", false, &[]);
    let bin = bin.to_str().unwrap();
    let t: Trace = doc(&["trace", "--", bin, "raw", "11", "1000"], &[0]);
    let tai = t.counts.iter().find(|r| r.clock == Some(Clock::Name("CLOCK_TAI".into()))).expect("CLOCK_TAI row");
    assert_eq!((tai.syscall.as_str(), tai.count, tai.expected), ("clock_gettime", 1000, false));
    assert_eq!((tai.abi.as_str(), tai.comm.as_deref()), (host_machine().as_str(), Some("clock_loop")));
    assert_eq!(Some(tai.pid), t.command.as_ref().map(|c| c.pid));
    assert!(tai.tid.is_none() && tai.ppid.is_some());
    // Its malloc's start-up getrandom (stdout's buffer), summed, not a row.
    assert_eq!((t.startup_keys, tai.random.as_ref()), (1, None));
    // The cgroup is read while the process lives (gone by this report):
    // typed where a live process's row carries one (containers.rs).
    assert!(tai.per_sec > 0.0 && one_decimal(tai.per_sec), "per_sec {}", tai.per_sec);
    for r in &t.counts {
        if let Some(c) = &r.clock {
            c.assert_well_named();
        }
    }
    // No vsyscall page, no -p target, rows to spare, no --interval: those
    // lists are typed where a workload makes them (below, and hostile.rs).
    assert!(t.vsyscall_emulations.is_empty() && t.unattributed.is_empty() && t.exited.is_empty(), "{t:?}");
    assert!(t.interval.is_none() && !t.interrupted);
    // check -- CMD: the same command record, and the run as a check.
    let c: CheckDoc = doc(&["check", "--", bin, "libc", "1", "100"], &[0]);
    let run = c.command.as_ref().expect("check -- CMD reports the command");
    assert_eq!((run.argv.len(), run.exit_status.as_ref(), run.timed_out), (4, Some(&ExitStatus::Code(0)), Some(false)));
    assert!(run.pid > 0 && c.process.is_none() && c.binaries.is_none());
    assert!(c.checks.iter().any(|k| k.name == "command_trace" && k.status == Status::Ok), "{c:?}");
    assert_worst(&c);
    let t: Trace = doc(&["trace", "--", bin, "raw", "10", "100"], &[0]);
    assert!(t.counts.iter().all(|r| r.sites.is_none()), "no sites key without --sites");
    assert_typed_sites();
    let t: Trace = doc(&["trace", "--", bin, "raw", "10", "100"], &[0]);
    let ten = t.counts.iter().find(|r| r.syscall == "clock_gettime").expect("clock id 10 row");
    assert_eq!(
        (ten.clock.as_ref(), ten.count),
        (Some(&Clock::Number(10)), 100),
        "a clock without a name is its number"
    );
    assert!(t.stacks.is_none() && t.stacks_lost.is_none(), "no stacks without --stacks");
    assert!(t.vdsoctl_own.is_none(), "-- CMD counts what was asked: nothing is left out");
}

/// `-a` says what it left out as vdsoctl's own: typed, present (this run
/// itself is left out in the kernel, so there may be no pid in it).
#[test]
fn trace_all_says_what_it_left_out() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = super::super::common::system_wide_lock();
    let t: Trace = doc(&["trace", "-a", "-d", "1s"], &[0]);
    let own = t.vdsoctl_own.expect("-a reports vdsoctl_own");
    assert!(own.pids.windows(2).all(|w| w[0] < w[1]), "{own:?}");
    assert_eq!(own.pids.is_empty(), own.calls == 0, "{own:?}");
}

/// `-p` of a program that makes exactly 100 time() calls through the
/// vsyscall page and is then killed: one `vsyscall_emulations` row and one
/// `exited` row, typed, with the values the workload guarantees.
#[test]
fn trace_pid_vsyscall_emulation_and_exited_rows() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if let Some(why) = missing_vsyscall_page() {
        return skip(why);
    }
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["vsyscall", "0", "100", "1", "wait"]);
    let mut w = Workload::start(cmd);
    let pid = w.pid();
    let (trace, _, _stderr) = start_armed(&["--json", "trace", "--by", "comm", "-d", "1h", "-p", &pid.to_string()]);
    let _guard = KillOnDrop::new(trace.id() as i32);
    w.go();
    assert_eq!(w.next_line(), "done");
    w.child.kill().unwrap();
    w.child.wait().unwrap();
    let out = trace.wait_with_output().expect("trace output");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let t: Trace =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("the document does not match the contract: {e}"));
    assert!(t.counts.is_empty() && t.unattributed.is_empty(), "{t:?}");
    let [v] = &t.vsyscall_emulations[..] else { panic!("one emulation row: {t:?}") };
    assert_eq!((v.pid, v.comm.as_deref(), v.function.as_str(), v.count), (pid, Some("clock_loop"), "time", 100));
    // --by comm: the emulations folded by name, typed.
    let g = t.groups.as_ref().expect("groups with --by");
    let [row] = &g.rows[..] else { panic!("one group row: {g:?}") };
    assert_eq!((g.by.as_str(), g.top, g.rest.is_none()), ("comm", None, true));
    assert_eq!(
        (row.key.as_deref(), row.processes, row.syscall.as_str(), row.vsyscall, row.count),
        (Some("clock_loop"), 1, "time", true, 100)
    );
    // Named (exe, cmdline) only when a look caught it alive: then this program.
    let bin = build_c("clock_loop", false, &[]);
    assert!(v.exe.as_deref().is_none_or(|e| std::path::Path::new(e) == bin), "{v:?}");
    assert!(
        v.cmdline.as_ref().is_none_or(|c| c.len() == 6 && c[1..] == ["vsyscall", "0", "100", "1", "wait"]),
        "{v:?}"
    );
    let [e] = &t.exited[..] else { panic!("one exited row: {t:?}") };
    assert_eq!(e.pid, pid);
    assert!(e.after_ns > 0 && e.after_ns <= t.duration_ns, "{e:?} in {}", t.duration_ns);
    // The rate is over the time it lived, at one decimal.
    let per_sec = (100.0 / (e.after_ns as f64 / 1e9) * 10.0).round() / 10.0;
    assert!(one_decimal(v.per_sec) && (v.per_sec - per_sec).abs() <= 0.1, "{} vs {per_sec}", v.per_sec);
    let cost = v.cost.as_ref().expect("an emulation's cost");
    assert!(cost.per_call_ns > 0.0, "{cost:?}");
    assert_eq!(cost.cpu_ns, (100.0 * cost.per_call_ns).round() as u64, "{cost:?}");
}

/// `--stacks`: the stacks' keys, and each row's identity and cost.
#[test]
fn trace_stacks_exe_cmdline_and_cost() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("call_chain", false, &["-fno-omit-frame-pointer"]);
    let bin = bin.to_str().unwrap();
    let t: Trace = doc(&["trace", "--engine", "bpf", "--stacks", "--", bin, "500", "1000"], &[0]);
    assert_eq!((t.engine.as_str(), t.stacks_lost), ("bpf", Some(0)));
    let row = &t.counts[0];
    assert_eq!((row.count, row.exe.as_deref()), (500, Some(bin)));
    assert_eq!(row.cmdline.as_deref(), Some(&[bin.to_string(), "500".into(), "1000".into()][..]));
    assert!(!row.cmdline_truncated);
    assert_eq!(row.random, None, "a clock row has no getrandom kind");
    let cost = row.cost.as_ref().expect("a host-ABI clock row has a cost");
    assert!(cost.per_call_ns > 0.0);
    assert_eq!(cost.cpu_ns, (500.0 * cost.per_call_ns).round() as u64);
    let share = 500.0 * cost.per_call_ns / t.duration_ns as f64 * 100.0;
    assert!((cost.core_percent - share).abs() <= 1e-9 * share, "{cost:?} over {}", t.duration_ns);
    let stacks = t.stacks.expect("--stacks reports stacks");
    assert_eq!(stacks.iter().map(|s| s.count).sum::<u64>(), 500);
    let s = &stacks[0];
    let comm = comm_of(std::path::Path::new(bin));
    assert_eq!((s.pid, s.comm.as_deref(), s.count, s.cut.as_deref()), (row.pid, Some(&comm[..]), 500, None));
    // Innermost first: the syscall's return address is in the program.
    let names: Vec<Option<&str>> = s.frames.iter().take(4).map(|f| f.symbol.as_deref()).collect();
    assert_eq!(names, [Some("inner"), Some("middle"), Some("outer"), Some("main")], "{s:?}");
    assert_eq!((s.frames[0].object.as_deref(), s.frames[0].kind.as_str()), (Some(bin), "object"));
    assert!(s.frames.iter().all(|f| f.address.starts_with("0x") && f.offset.starts_with("0x")), "{s:?}");
    assert!(s.frames.iter().all(|f| f.build_id.as_ref().is_none_or(|b| b.len() >= 16)), "{s:?}");
}
