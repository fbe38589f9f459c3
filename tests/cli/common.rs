//! Shared test plumbing: the vdsoctl binary with a pinned environment,
//! fixture programs compiled from fixtures/*.c, workloads that wait until
//! told, and the CI rule for missing facilities.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::Mutex;

/// `vdsoctl` with NO_COLOR and no inherited format surprises.
pub fn vdsoctl() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("vdsoctl").expect("vdsoctl binary");
    cmd.env("NO_COLOR", "1");
    cmd
}

/// Path of the built vdsoctl binary (for std::process::Command uses).
pub fn vdsoctl_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("vdsoctl")
}

/// Run vdsoctl with args, return (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = vdsoctl().args(args).output().expect("run vdsoctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A run's stdout as JSON; a panic with its stdout and stderr when it is none.
pub fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// python3 runs `script` on `input` (stdin): its stdout, or a skip.
pub fn python(script: &str, args: &[&Path], input: &str) -> Option<String> {
    let Ok(mut py) = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        skip("python3 not installed: XML not read by a parser");
        return None;
    };
    use std::io::Write;
    py.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(out.status.success(), "python3: {}\n{input}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every `<title>` of an SVG, as python's XML parser reads it, a line each.
pub fn svg_titles(svg: &Path) -> Option<String> {
    let script = "import sys, xml.etree.ElementTree as E\n\
                  root = E.parse(sys.argv[1]).getroot()\n\
                  print('\\n'.join(t.text or '' for t in root.iter('{http://www.w3.org/2000/svg}title')))";
    python(script, &[svg], "")
}

/// `vdsoctl --format folded trace --stacks --flamegraph SVG -- CMD...`:
/// the folded stacks on stdout, the flame graph written to `svg`.
pub fn folded_and_flamegraph(svg: &Path, cmd: &[&str]) -> (i32, String, String) {
    let mut args = vec!["--format", "folded", "trace", "--stacks", "--flamegraph", svg.to_str().unwrap(), "--"];
    args.extend_from_slice(cmd);
    run(&args)
}

/// Run vdsoctl with `--json` and parse stdout; panics with stderr on failure.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "vdsoctl {all:?} failed: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"))
}

static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Compile `fixtures/<name>.c` (gcc -O2, `-m32` when asked) once per test run
/// into the cargo target tmpdir and return the binary's path. `extra` adds flags.
pub fn build_c(name: &str, m32: bool, extra: &[&str]) -> PathBuf {
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(format!("{name}.c"));
    let mut tag = String::from(name);
    if m32 {
        tag.push_str("-m32");
    }
    for e in extra {
        tag.push('-');
        tag.extend(e.chars().filter(|c| c.is_ascii_alphanumeric()));
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(tag);
    let fresh = out.metadata().and_then(|o| o.modified()).ok() >= newest_source(&src);
    if out.exists() && fresh {
        return out;
    }
    let mut gcc = Command::new("gcc");
    gcc.args(["-O2", "-Wall", "-pthread", "-o"]).arg(&out).arg(&src);
    if m32 {
        gcc.arg("-m32");
    }
    gcc.args(extra);
    let status = gcc.status().expect("gcc runs");
    assert!(status.success(), "gcc failed on {} (m32={m32}); is gcc-multilib installed?", src.display());
    out
}

/// The newest modification time of `src` and of the headers beside it
/// (fixtures/*.h, which fixtures include): a fixture is rebuilt when either changes.
fn newest_source(src: &Path) -> Option<std::time::SystemTime> {
    let headers = std::fs::read_dir(src.parent()?).ok()?.flatten().map(|e| e.path());
    let headers = headers.filter(|p| p.extension().is_some_and(|x| x == "h"));
    std::iter::once(src.to_path_buf()).chain(headers).map(|p| p.metadata().and_then(|m| m.modified()).ok()).max()?
}

/// A running fixture that prints lines and then "ready" before waiting.
pub struct Workload {
    pub child: Child,
    /// Every stdout line before "ready".
    pub preamble: Vec<String>,
    stdout: BufReader<ChildStdout>,
}

impl Workload {
    /// Start `cmd` with piped stdout and wait for its "ready" line. Its
    /// stderr (clock_loop's `loop_ns`) goes nowhere: not into the test run's output.
    pub fn start(mut cmd: Command) -> Workload {
        cmd.stdout(Stdio::piped()).stdin(Stdio::null()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn workload");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut preamble = Vec::new();
        loop {
            let mut line = String::new();
            let n = stdout.read_line(&mut line).expect("read workload stdout");
            assert!(n > 0, "workload exited before printing ready; got {preamble:?}");
            let line = line.trim_end().to_string();
            if line == "ready" {
                break;
            }
            preamble.push(line);
        }
        Workload { child, preamble, stdout }
    }

    /// The workload's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Send SIGUSR1 (the fixtures' "go" signal).
    pub fn go(&self) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), nix::sys::signal::Signal::SIGUSR1)
            .expect("signal workload");
    }

    /// Read the next stdout line (e.g. "done").
    pub fn next_line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        line.trim_end().to_string()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A facility a test needs is missing. In CI that is a failure; elsewhere the
/// test says so and returns early (or leaves out the part that needs it). Use as:
/// `if let Some(why) = missing() { return skip(why); }`
///
/// The line goes to the test process's stderr itself, not through
/// `eprintln!`, which libtest captures: a plain `cargo test` shows it. The
/// skip is also recorded for the tally `tests/cli/skips.rs` prints at
/// the end of the suite.
/// The one binary at `path` in a `check --image` report (panics, naming
/// the report, when it is not there).
pub fn binary<'a>(doc: &'a Value, path: &str) -> &'a Value {
    doc["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["path"] == path)
        .unwrap_or_else(|| panic!("no binary {path}: {doc}"))
}

pub fn skip(why: &str) {
    use std::io::Write;
    if std::env::var_os("CI").is_some() {
        panic!("required facility missing in CI: {why}");
    }
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("(unnamed test)");
    let _ = std::io::stderr().lock().write_all(format!("SKIP: {test}: {why}\n").as_bytes());
    if let Err(e) = super::skips::append(test, why) {
        let _ = std::io::stderr().lock().write_all(format!("SKIP not recorded for the tally: {e}\n").as_bytes());
    }
}

/// Run `scripts/SCRIPT DEST` (as root, once per DEST in this run, its
/// output in DEST.log) where `have` says DEST is missing; whether it is
/// there now. Says nothing: callers with their own words use this.
pub fn make_by_script(script: &str, dest: &Path, have: impl Fn() -> bool) -> bool {
    static MAKING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(script);
    if !have() && is_root() {
        let mut tried = MAKING.lock().unwrap_or_else(|e| e.into_inner());
        if !have() && !tried.iter().any(|d| d == dest) {
            tried.push(dest.to_path_buf());
            let out = Command::new(&script).arg(dest).output().expect("run a fixture script");
            let text = [out.stdout, out.stderr].concat();
            let _ = std::fs::write(dest.with_extension("log"), &text);
        }
    }
    have()
}

/// A fixture a script under scripts/ makes (`scripts/NAME DEST`): when
/// `have()` says it is missing and we are root, the script is run (once per
/// destination and test run, its output kept in DEST.log); still missing
/// (not root, or the script failed), that is a `skip` saying the exact
/// command — a failure under CI. True when the fixture is there.
pub fn made_by_script(script: &str, dest: &Path, have: impl Fn() -> bool) -> bool {
    if make_by_script(script, dest, &have) {
        return true;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(script);
    let log = dest.with_extension("log");
    let how = if is_root() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        format!("it failed; {}: ...{}", log.display(), tail.into_iter().rev().collect::<Vec<_>>().join(" | "))
    } else {
        "it needs root".to_string()
    };
    skip(&format!("{} is missing: run `{} {}` ({how})", dest.display(), script.display(), dest.display()));
    false
}

/// What `trace` (and `serve`'s per-process series) need here, or why not:
/// root (BPF and perf counting need CAP_BPF/CAP_PERFMON; tracefs is
/// root-only here) and a mounted-or-mountable tracefs for the perf engine.
pub fn missing_trace_facility() -> Option<&'static str> {
    if !is_root() {
        return Some("tracing needs root (or CAP_BPF + CAP_PERFMON; tracefs is root-only here)");
    }
    if vdsoctl::measure::kernel::tracefs::Tracefs::find_or_mount().is_err() {
        return Some("tracefs is not available");
    }
    None
}

/// Whether we run as root (several tests need it: tracefs, raw samples, setuid).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Why a test of the [vsyscall] page cannot run here: the page is
/// x86_64's, and a kernel booted with vsyscall=none maps none. None when
/// it can.
pub fn missing_vsyscall_page() -> Option<&'static str> {
    let mapped = || std::fs::read_to_string("/proc/self/maps").is_ok_and(|m| m.contains("[vsyscall]"));
    (!cfg!(target_arch = "x86_64") || !mapped()).then_some("no [vsyscall] page here")
}

/// Whether `gcc -m32` can build (gcc-multilib installed).
pub fn have_m32() -> bool {
    static PROBE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROBE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let src = dir.join("probe_m32.c");
        // The fixtures' headers too: without gcc-multilib's /usr/include/asm
        // a plain program builds with -m32 but <sys/syscall.h> does not.
        std::fs::write(&src, "#include <sys/syscall.h>\nint main(void){return SYS_getpid == 0;}\n").ok();
        Command::new("gcc")
            .args(["-m32", "-o"])
            .arg(dir.join("probe_m32"))
            .arg(&src)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Run vdsoctl as `nobody` (uid/gid 65534): needs root to drop to it.
pub fn run_as_nobody(args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    Command::new(vdsoctl_path()).args(args).env("NO_COLOR", "1").uid(65534).gid(65534).output().expect("run vdsoctl")
}

/// `program ARGS...` as nobody (a wrapper that runs vdsoctl, say).
pub fn run_as_nobody_via(program: &std::path::Path, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    Command::new(program).args(args).env("NO_COLOR", "1").uid(65534).gid(65534).output().expect("run as nobody")
}

/// Whether `promtool` (Debian's prometheus package) is on PATH.
pub fn have_promtool() -> bool {
    Command::new("promtool").arg("--version").output().is_ok()
}

/// `promtool check metrics` must accept `text`; panics with its complaint.
pub fn assert_promtool_accepts(text: &str) {
    use std::io::Write;
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    promtool.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write to promtool");
    let out = promtool.wait_with_output().expect("promtool output");
    assert!(
        out.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copy an executable that a test will run, with `cp` rather than
/// `std::fs::copy`: a file this process holds open for writing is
/// inherited by every child another test thread forks in that moment, and
/// until that child's exec closes it the kernel refuses to run the file
/// (ETXTBSY) — a failure that comes and goes with the tests running beside.
/// `cp`'s write descriptor lives in `cp` alone.
pub fn copy_executable(from: &Path, to: &Path) -> std::io::Result<()> {
    let out = std::process::Command::new("cp").arg("--").arg(from).arg(to).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()))
    }
}

static SYSTEM_WIDE: Mutex<()> = Mutex::new(());

/// Held by every test that traces system-wide, and by every test a
/// system-wide trace would disturb or that would disturb one (busy clock
/// loops, timing measurements): they run one at a time — within this test
/// binary (the mutex) and across every suite running on the machine (an
/// flock on a file all of them open: two checkouts tested at once, or a
/// stress run beside a developer's).
pub struct SystemWide {
    _flock: Option<nix::fcntl::Flock<std::fs::File>>,
    _guard: std::sync::MutexGuard<'static, ()>,
}

pub fn system_wide_lock() -> SystemWide {
    let guard = SYSTEM_WIDE.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::temp_dir().join("vdsoctl-tests-system-wide.lock");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).ok();
    // Any user may take it (tests run as nobody too); the lock ends with the
    // file's close, also when a test panics.
    let _ = std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let flock = loop {
        let Some(f) = file.take() else { break None };
        match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive) {
            Ok(locked) => break Some(locked),
            Err((f, nix::errno::Errno::EINTR)) => file = Some(f),
            Err(_) => break None,
        }
    };
    SystemWide { _flock: flock, _guard: guard }
}

/// Kills a process (SIGKILL) when dropped, whatever the test did — that
/// very process, through a pidfd taken now: never another one that reused
/// its pid after it was reaped.
pub struct KillOnDrop {
    pidfd: Option<vdsoctl::measure::kernel::pidfd::Pidfd>,
}

impl KillOnDrop {
    pub fn new(pid: i32) -> KillOnDrop {
        KillOnDrop { pidfd: vdsoctl::measure::kernel::pidfd::Pidfd::open(pid).ok() }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(fd) = &self.pidfd {
            let _ = fd.kill(libc::SIGKILL);
        }
    }
}

// ------------------------------------------------- reading trace reports

/// Every clock syscall of both ABIs as a clock_loop mode: (-m32 build, mode,
/// clock id, the syscall it makes, the clock it names).
pub const EVERY_CLOCK_FUNCTION: &[(bool, &str, &str, &str, Option<&str>)] = &[
    (false, "raw", "7", "clock_gettime", Some("CLOCK_BOOTTIME")),
    (false, "gtod", "0", "gettimeofday", None),
    (false, "time", "0", "time", None),
    (false, "getres", "1", "clock_getres", Some("CLOCK_MONOTONIC")),
    (false, "getcpu", "0", "getcpu", None),
    (true, "raw", "11", "clock_gettime", Some("CLOCK_TAI")),
    (true, "raw64", "4", "clock_gettime64", Some("CLOCK_MONOTONIC_RAW")),
    (true, "gtod", "0", "gettimeofday", None),
    (true, "time", "0", "time", None),
    (true, "getres", "0", "clock_getres", Some("CLOCK_REALTIME")),
    (true, "getres64", "5", "clock_getres_time64", Some("CLOCK_REALTIME_COARSE")),
    (true, "getcpu", "0", "getcpu", None),
];

/// The count for (syscall, clock) summed over rows; 0 when absent.
pub fn count(report: &Value, syscall: &str, clock: Option<&str>) -> u64 {
    report["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .filter(|r| r["syscall"] == syscall && r["clock"].as_str() == clock)
        .map(|r| r["count"].as_u64().expect("count"))
        .sum()
}

pub fn vsyscall_count(report: &Value, function: &str) -> u64 {
    report["vsyscall_emulations"]
        .as_array()
        .expect("vsyscall_emulations")
        .iter()
        .filter(|r| r["function"] == function)
        .map(|r| r["count"].as_u64().expect("count"))
        .sum()
}

/// Start `vdsoctl ARGS` (a trace) and return once it says on stderr that its
/// counters are armed — lines the traced command itself writes there come
/// first with `--json -- CMD` and are skipped. Returns the child, that line
/// and the stderr reader — keep it alive: closing the pipe would make the
/// next write to it fail in vdsoctl or the traced command.
pub fn start_armed(args: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    let mut trace = Command::new(vdsoctl_path())
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn vdsoctl");
    let mut stderr = BufReader::new(trace.stderr.take().expect("stderr"));
    let mut line = String::new();
    while !line.contains("tracing") {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("read stderr") > 0, "trace ended before arming");
    }
    (trace, line, stderr)
}

/// Ctrl-C to a running trace: its exit code and the JSON summary it prints.
pub fn interrupt(trace: Child) -> (Option<i32>, Value) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(trace.id() as i32), nix::sys::signal::Signal::SIGINT)
        .expect("signal trace");
    let out = trace.wait_with_output().expect("trace output");
    let r = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), r)
}

/// Rows of `report` whose field `key` equals `value`.
pub fn rows_where<'a>(report: &'a Value, key: &str, value: i64) -> Vec<&'a Value> {
    report["counts"].as_array().expect("counts").iter().filter(|r| r[key].as_i64() == Some(value)).collect()
}

/// The name the kernel gives a process that runs `path`: its file name,
/// cut to 15 bytes (`TASK_COMM_LEN`).
pub fn comm_of(path: &Path) -> String {
    path.file_name().unwrap().to_str().unwrap().chars().take(15).collect()
}

/// A fact about this host as a standard tool prints it (`uname -m`,
/// `getconf PAGESIZE`): what a test compares with, never a literal.
pub fn host_fact(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool).args(args).output().unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(out.status.success(), "{tool} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The host's machine as `uname -m` says it (`x86_64`, `aarch64`): the
/// name vdsoctl gives the host's native ABI and ELF machine.
pub fn host_machine() -> String {
    host_fact("uname", &["-m"])
}

/// The host glibc's version as getconf says it (`2.36`).
pub fn glibc_version() -> String {
    host_fact("getconf", &["GNU_LIBC_VERSION"]).trim_start_matches("glibc ").to_string()
}

/// (major, minor) of a `2.36`-style version.
pub fn major_minor(v: &str) -> (u32, u32) {
    let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap_or_else(|_| panic!("version {v}")));
    (it.next().unwrap(), it.next().unwrap())
}

/// Whether vdsoctl's own vDSO exports `name`, as `vdsoctl dump` lists it.
pub fn own_vdso_exports(name: &str) -> bool {
    let doc = run_json(&["dump"]);
    doc["symbols"].as_array().expect("dump symbols").iter().any(|s| s["name"] == name)
}

/// A finding's `(kind, status)`: a `checks[]` row or a `binaries[].findings[]`
/// entry, or `(kind, severity)` for a trace/bench/dump finding. Tests assert
/// on these (and on data: names, pids, paths, counts), not on its words.
pub fn kind_status(row: &Value) -> (&str, &str) {
    let kind = row["kind"].as_str().unwrap_or_else(|| panic!("no kind: {row}"));
    let status = row["status"].as_str().or(row["severity"].as_str());
    (kind, status.unwrap_or_else(|| panic!("no status or severity: {row}")))
}

/// podman (rootful, runc, cgroupfs, as CI runs it) with a store of the
/// test's own: `--root`, `--runroot` and `--tmpdir` in a private directory
/// under the cargo target tmpdir, the vfs driver (no mounts left behind),
/// no events. Tests running beside each other, or a user's own images
/// (`ghcr.io/vdsoctl/vdsoctl:latest` among them), are never seen, built
/// over or removed. Dropped, its containers are removed and its store deleted.
pub struct Podman {
    store: tempfile::TempDir,
}

impl Podman {
    /// A private store, or None (a SKIP, a failure under CI) without root
    /// or podman.
    pub fn new() -> Option<Podman> {
        if !is_root() {
            skip("podman (rootful) needs root");
            return None;
        }
        if !Command::new("podman").arg("--version").output().is_ok_and(|o| o.status.success()) {
            skip("podman is missing (apt-get install podman runc)");
            return None;
        }
        // Under /tmp, not the target directory: podman refuses a runroot
        // path over 50 characters (a checkout under a long path has one).
        let store = tempfile::Builder::new().prefix("vdsoctl-podman-").tempdir().expect("a private podman store");
        Some(Podman { store })
    }

    /// `podman` with the private store's flags.
    pub fn cmd(&self) -> Command {
        let s = self.store.path();
        let mut c = Command::new("podman");
        c.arg("--root").arg(s.join("root")).arg("--runroot").arg(s.join("run")).arg("--tmpdir").arg(s.join("tmp"));
        c.args(["--storage-driver", "vfs", "--events-backend", "none"]);
        c.args(["--runtime", "/usr/sbin/runc", "--cgroup-manager", "cgroupfs"]);
        c
    }

    /// `podman ARGS`, which must succeed: its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.cmd().args(args).output().expect("run podman");
        assert!(o.status.success(), "podman {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        // Not `system reset`: that also deletes the host's network configs.
        let _ = self.cmd().args(["rm", "-a", "-f", "-t", "0"]).output();
        let _ = self.cmd().args(["rmi", "-a", "-f"]).output();
    }
}

/// How many `syscall` calls `strace -f -c` counts for `argv` (0: none).
pub fn strace_calls(syscall: &str, argv: &[String]) -> u64 {
    let log = tempfile::NamedTempFile::new().unwrap();
    let out = std::process::Command::new("strace")
        .args(["-f", "-c", "-e", &format!("trace={syscall}"), "-o"])
        .arg(log.path())
        .args(argv)
        .output()
        .expect("strace runs (apt-get install strace)");
    assert!(out.status.success(), "strace {argv:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(log.path()).unwrap();
    // "% time seconds usecs/call calls [errors] syscall": calls is the fourth column.
    let tail = format!(" {syscall}");
    text.lines()
        .find(|l| l.trim_end().ends_with(&tail))
        .map_or(0, |l| l.split_whitespace().nth(3).and_then(|c| c.parse().ok()).expect("strace's calls column"))
}
