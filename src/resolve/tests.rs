//! Every usage error the resolve step raises: one line, exit 2, before any
//! work; and the requests it builds.

use super::*;
use crate::error::{exit, Misuse};
use crate::inspect::cgroup;
use crate::measure::trace::session::TraceTarget;
use clap::Parser;

fn resolve_line(line: &[&str]) -> Result<Resolved, Refused> {
    let cli = Cli::try_parse_from(["vdsoctl"].iter().chain(line)).expect("clap accepts the line");
    resolve(&cli)
}

/// The error a line is refused with (not a format refusal).
fn refusal(line: &[&str]) -> Error {
    match resolve_line(line) {
        Err(Refused::Error(e)) => e,
        Err(Refused::Format(why)) => panic!("{line:?}: a format refusal: {why}"),
        Ok(r) => panic!("{line:?}: resolved to {:?}", r.request),
    }
}

/// A usage error: exit 2, one line, and the words the user needs.
fn assert_usage(line: &[&str], words: &str) {
    let e = refusal(line);
    let text = e.to_string();
    assert_eq!(e.exit_code(), exit::USAGE, "{line:?}: {text}");
    assert!(!text.contains('\n'), "{line:?}: {text}");
    assert!(text.contains(words), "{line:?}: {text}");
}

#[test]
fn a_format_the_command_has_no_form_for_is_refused_first() {
    let why = |line: &[&str]| match resolve_line(line) {
        Err(Refused::Format(why)) => why,
        other => panic!("{line:?}: {other:?}"),
    };
    assert_eq!(
        why(&["--format", "prometheus", "maps"]),
        "--format prometheus is only for `bench`, `check` and `trace`; use --format table or --json here"
    );
    // Before the trace's own usage errors (here, no target).
    assert!(why(&["--format", "folded", "trace"]).starts_with("--format folded is only for `trace --stacks`"));
    assert!(why(&["--json", "serve", "--listen", "nowhere"]).contains("takes no --format or --json"));
    assert!(why(&["--json", "man"]).contains("takes no --format or --json"));
    let r = resolve_line(&["--json", "--no-color", "maps", "-p", "1"]).unwrap();
    assert_eq!((r.out.format, r.out.color), (Format::Json, false));
    assert!(matches!(r.request, Request::Maps(ProcessRequest { pid: Some(1) })));
}

#[test]
fn trace_usage_errors() {
    assert_usage(&["trace", "-a", "--interval", "10ms"], "--interval 10.0 ms is below its floor of 100ms");
    assert_usage(&["trace", "-a", "--cgroup", " "], "--cgroup wants a cgroup v2 path");
    assert_usage(&["trace"], "trace needs one of -p PID[,PID..], -a, or -- CMD ARGS..");
    assert_usage(&["trace", "-d", "1s"], "trace needs one of");
    let max = crate::measure::trace::engines::bpf::MAX_CGROUPS;
    let many: Vec<&str> =
        ["trace", "-a"].into_iter().chain(std::iter::repeat_n(["--cgroup", "/"], max + 1).flatten()).collect();
    assert_usage(&many, &format!("--cgroup given {} times: at most {max}", max + 1));
    // A mode the chosen engine never has: before the pid is looked at.
    let e = refusal(&["trace", "--engine", "perf", "--stacks", "-p", "999999999"]);
    assert!(matches!(e, Error::Misuse(Misuse::StacksNeedBpf)), "{e:?}");
    let e = refusal(&["trace", "-p", "1", "--cgroup", "/"]);
    assert!(matches!(e, Error::Misuse(Misuse::CgroupNeedsAll)), "{e:?}");
    assert_eq!(e.exit_code(), exit::USAGE);
}

#[test]
fn a_cgroup_that_names_no_v2_cgroup_is_a_usage_error() {
    let Some(mount) = cgroup::v2_mount() else {
        eprintln!("SKIP: a_cgroup_that_names_no_v2_cgroup_is_a_usage_error: no cgroup v2 mount here");
        return;
    };
    assert_usage(&["trace", "-a", "--cgroup", "/a/../../etc"], "not a cgroup v2 path");
    // A file in the v2 tree is no cgroup directory.
    let file = "/cgroup.procs";
    if mount.join("cgroup.procs").is_file() {
        assert_usage(&["trace", "-a", "--cgroup", file], "is no cgroup directory");
    }
    // One that does not exist is "cannot read" (3), not a usage error.
    let e = refusal(&["trace", "-a", "--cgroup", "/no-such-cgroup-vdsoctl"]);
    assert_eq!(e.exit_code(), exit::INSPECT, "{e}");
    let Request::Trace(job) = resolve_line(&["trace", "-a", "--cgroup", "/"]).unwrap().request else { panic!() };
    assert_eq!(job.session.plan.cgroups.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["/"]);
}

#[test]
fn trace_states_its_target_once() {
    let target = |line: &[&str]| match resolve_line(line).unwrap().request {
        Request::Trace(job) => job.session.target,
        other => panic!("{other:?}"),
    };
    assert_eq!(target(&["trace", "-p", "3,1"]), TraceTarget::Pids(vec![3, 1]));
    assert_eq!(target(&["trace", "-a"]), TraceTarget::All);
    assert_eq!(target(&["trace", "--", "true", "x"]), TraceTarget::Command(vec!["true".into(), "x".into()]));
    let Request::Trace(job) = resolve_line(&["--json", "trace", "--stacks", "-a", "--fail-over", "0"]).unwrap().request
    else {
        panic!()
    };
    assert!(job.session.plan.stacks && job.session.command_stdout_to_stderr && job.session.sight);
    assert_eq!(job.fail_over, Some(0.0));
    // The session sets the plan's target flags from the target, not the caller.
    assert!(!job.session.plan.all && !job.session.plan.command);
}

#[test]
fn check_forms_and_its_usage_error() {
    assert_usage(&["check", "--baseline", "b.json"], "--baseline and --save-baseline need --image ROOT or -- CMD");
    assert_usage(&["check", "--save-baseline", "b.json"], "need --image ROOT or -- CMD");
    let form = |line: &[&str]| match resolve_line(line).unwrap().request {
        Request::Check(req) => req.form,
        other => panic!("{other:?}"),
    };
    assert_eq!(form(&["check"]), CheckForm::Host { max_ns: None, trace: None, fail_over: None });
    assert_eq!(
        form(&["check", "-p", "7", "--trace", "0"]),
        CheckForm::Process { pid: 7, max_ns: None, trace: Some(Duration::ZERO) }
    );
    let baseline = BaselineFiles { compare: Some("b".into()), save: None };
    assert_eq!(
        form(&["check", "--image", "/r", "--baseline", "b"]),
        CheckForm::Image { root: "/r".into(), baseline, select: Default::default() }
    );
    assert!(matches!(form(&["check", "--", "true"]), CheckForm::Command { timeout: None, .. }));
    assert_eq!(form(&["check", "--seccomp-profile", "p.json"]), CheckForm::Profile { file: "p.json".into() });
}

#[test]
fn listen_forms() {
    assert_eq!(listen_addrs(":10411").unwrap(), vec!["0.0.0.0:10411".parse().unwrap()]);
    assert_eq!(listen_addrs("127.0.0.1:0").unwrap(), vec!["127.0.0.1:0".parse().unwrap()]);
    assert_eq!(listen_addrs("[::1]:9").unwrap(), vec!["[::1]:9".parse().unwrap()]);
    for bad in ["10411", "127.0.0.1", "1.2.3.4:99999", ""] {
        assert!(matches!(listen_addrs(bad), Err(Error::Usage(_))), "{bad}");
    }
    assert_usage(&["serve", "--listen", "10411"], "--listen \"10411\": ");
    assert_usage(&["serve", "--listen", "10411"], "give HOST:PORT, e.g. 127.0.0.1:10411 or :10411");
    let Request::Serve(req) = resolve_line(&["serve", "--listen", ":9"]).unwrap().request else { panic!() };
    assert_eq!((req.addrs, req.max_series), (vec!["0.0.0.0:9".parse().unwrap()], 100));
}

#[test]
fn man_pages_by_name() {
    assert_eq!(man(None).unwrap().page, "vdsoctl");
    assert_eq!(man(Some("trace")).unwrap().page, "trace");
    // clap admits only the pages' names; the step refuses any other itself.
    let e = man(Some("nope")).unwrap_err();
    assert_eq!((e.exit_code(), e.to_string()), (exit::USAGE, "no man page for Some(\"nope\")".into()));
}

#[test]
fn dump_reads_a_file_or_a_process() {
    let source = |line: &[&str]| match resolve_line(line).unwrap().request {
        Request::Dump(req) => req.source,
        other => panic!("{other:?}"),
    };
    assert_eq!(source(&["dump"]), DumpSource::Process(None));
    assert_eq!(source(&["dump", "-p", "4"]), DumpSource::Process(Some(4)));
    assert_eq!(source(&["dump", "--file", "v.so"]), DumpSource::File("v.so".into()));
}

fn bench_from(line: &[&str]) -> Result<BenchRequest, clap::Error> {
    let cli = Cli::try_parse_from(["vdsoctl", "bench"].iter().chain(line))?;
    match resolve(&cli).unwrap().request {
        Request::Bench(job) => Ok(job.measure),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bench_selection_parses_and_rejects() {
    let s = bench_from(&["--clocks", "monotonic_raw,0,4", "--functions", "time,clock_gettime", "--paths", "vdso,libc"])
        .unwrap();
    assert_eq!(s.clocks, vec![4, 0]);
    assert_eq!(s.functions, vec![VdsoFn::ClockGettime, VdsoFn::Time]);
    assert_eq!(s.paths, vec![BenchPath::Libc, BenchPath::Vdso]);
    for bad in [
        &["--clocks", "bogus"][..],
        &["--functions", "clock_gettime64"],
        &["--paths", "ptrace"],
        &["--max-ns", "0"],
        &["--max-ns", "NaN"],
    ] {
        let e = bench_from(bad).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}: {e}");
    }
    let all = bench_from(&[]).unwrap();
    assert_eq!(all.clocks.len(), arch::CLOCKS.len());
    assert_eq!(all.functions, bench::functions());
    // --clocks alone: only the functions that take a clock are measured (and gated).
    let one = bench_from(&["--clocks", "PROCESS_CPUTIME_ID"]).unwrap();
    assert!(!one.functions.is_empty() && one.functions.iter().all(|f| f.takes_clock()), "{:?}", one.functions);
    assert!(!one.functions.contains(&VdsoFn::Time) && !one.functions.contains(&VdsoFn::Getcpu));
    assert_eq!(bench_from(&["--max-ns", "50"]).unwrap().max_ns, Some(50.0));
}
