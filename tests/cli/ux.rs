//! What a person sees (issue 15): a FAIL line means exit 1 in every command;
//! names others chose are escaped on every stream (JSON keeps the bytes);
//! tables never split a token in a 60-column or a 0-column pty, and the usual
//! output of check, check --image, maps, auxv, trace and bench fits an
//! 80-column one.

use super::common::{build_c, copy_executable, is_root, run, skip, system_wide_lock, vdsoctl_path, Workload};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A name with an OSC title escape, clear-screen, a newline that would forge
/// a second line, a right-to-left override and mark; 15 bytes, so the whole
/// of it is the comm (15 bytes at most).
const EVIL: &str = "\x1b]0;X\x07\n\u{202e}z\u{200f}";

/// Bytes a terminal would act on: ESC, BEL, CR, the bidi marks.
fn assert_inert(what: &str, text: &str) {
    for c in ['\x1b', '\x07', '\r', '\u{202e}', '\u{200f}', '\u{200e}', '\u{061c}'] {
        assert!(!text.contains(c), "{what}: {c:?} reached the stream raw:\n{text:?}");
    }
}

/// The escaped form vdsoctl prints for [`EVIL`].
fn evil_escaped() -> String {
    EVIL.chars()
        .map(|c| if c.is_control() || c > '\u{2000}' { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

/// A copy of a fixture under the hostile name, in a fresh directory.
fn evil_copy(fixture: &str) -> (tempfile::TempDir, PathBuf) {
    evil_copy_of(&build_c(fixture, false, &[]))
}

fn evil_copy_of(program: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EVIL);
    copy_executable(program, &path).unwrap();
    (dir, path)
}

#[test]
fn hostile_names_are_escaped_in_maps_auxv_dump_and_json_keeps_them() {
    let (_dir, path) = evil_copy("wait_ready");
    let w = Workload::start(Command::new(&path));
    let pid = w.pid().to_string();
    assert_eq!(std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap(), format!("{EVIL}\n"));
    for cmd in ["maps", "auxv", "dump"] {
        let (code, stdout, stderr) = run(&[cmd, "-p", &pid]);
        assert_eq!(code, 0, "{cmd}: {stderr}");
        assert_inert(cmd, &stdout);
        assert_inert(cmd, &stderr);
        // The header names the process once, escaped, on one line.
        let header = stdout.lines().find(|l| l.contains(&format!("pid {pid} ("))).unwrap_or_else(|| panic!("{stdout}"));
        assert!(header.contains(&format!("({})", evil_escaped())), "{cmd}: {header:?}");
        // JSON keeps the bytes.
        let (code, stdout, stderr) = run(&["--json", cmd, "-p", &pid]);
        assert_eq!(code, 0, "{cmd}: {stderr}");
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        let comm = doc.get("comm").or_else(|| doc.pointer("/process/comm")).or_else(|| doc.pointer("/source/comm"));
        assert_eq!(comm.and_then(Value::as_str), Some(EVIL), "{cmd}: {doc}");
    }
    // auxv's AT_EXECFN is the hostile path itself.
    let (_, stdout, _) = run(&["auxv", "-p", &pid]);
    let execfn = stdout.lines().find(|l| l.contains("AT_EXECFN")).unwrap();
    assert!(execfn.ends_with(&evil_escaped()), "{execfn:?}");
}

#[test]
fn a_process_that_renames_itself_is_escaped_too() {
    // prctl(PR_SET_NAME): the comm is hostile, the file name is not.
    let mut cmd = Command::new(build_c("rename_self", false, &[]));
    cmd.arg(EVIL);
    let w = Workload::start(cmd);
    let pid = w.pid().to_string();
    assert_eq!(std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap(), format!("{EVIL}\n"));
    for cmd in ["maps", "auxv", "dump"] {
        let (code, stdout, stderr) = run(&[cmd, "-p", &pid]);
        assert_eq!(code, 0, "{cmd}: {stderr}");
        assert_inert(cmd, &stdout);
        assert!(stdout.lines().any(|l| l.contains(&format!("pid {pid} ({})", evil_escaped()))), "{cmd}: {stdout}");
    }
}

/// `check -p` names a process as it has itself (issue 24): its comm — the
/// name it was started by (a symlink's, as redis-server's is while its exe
/// is redis-check-rdb), or the one it gave itself with PR_SET_NAME — and
/// argv[0] where `exec -a` set another, with the executable said as such.
#[test]
fn check_p_names_the_process_as_it_has_itself() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("redis-check-rdb");
    std::fs::copy(build_c("wait_ready", false, &[]), &exe).unwrap();
    std::os::unix::fs::symlink("redis-check-rdb", dir.path().join("redis-server")).unwrap();
    let exe = exe.to_str().unwrap().to_string();
    let renamed = build_c("rename_self", false, &[]).to_str().unwrap().to_string();
    let detail = |w: &Workload| {
        let (code, stdout, stderr) = run(&["--json", "check", "--trace", "0", "-p", &w.pid().to_string()]);
        assert!(code <= 1, "{stderr}");
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        let row = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "process_binary").cloned();
        row.and_then(|r| r["detail"].as_str().map(str::to_string)).unwrap_or_else(|| panic!("{stdout}"))
    };
    // Started through the symlink: comm redis-server, exe redis-check-rdb.
    let w = Workload::start(Command::new(dir.path().join("redis-server")));
    let want = format!("pid {} (redis-server), executable {exe}: ", w.pid());
    assert!(detail(&w).starts_with(&want), "{want:?} in {:?}", detail(&w));
    // exec -a (bash's: dash has none): argv[0] is another name, said beside the comm.
    let mut sh = Command::new("bash");
    sh.args(["-c", &format!("exec -a 'my server' {exe}")]);
    let w = Workload::start(sh);
    let want = format!("pid {} (redis-check-rdb, argv[0] 'my server'), executable {exe}: ", w.pid());
    assert!(detail(&w).starts_with(&want), "{want:?} in {:?}", detail(&w));
    // PR_SET_NAME: the name it gave itself; its argv[0] is its exe, said once.
    let mut cmd = Command::new(&renamed);
    cmd.arg("worker-7");
    let w = Workload::start(cmd);
    let want = format!("pid {} (worker-7), executable {renamed}: ", w.pid());
    assert!(detail(&w).starts_with(&want), "{want:?} in {:?}", detail(&w));
    // The table says the same.
    let (_, table, _) = run(&["check", "--trace", "0", "-p", &w.pid().to_string()]);
    assert!(table.contains(&format!("pid {} (worker-7), executable", w.pid())), "{table}");
}

#[test]
fn hostile_names_are_escaped_in_trace_tables_findings_and_notes() {
    let _lock = system_wide_lock(); // bench timings and clock loops: not beside a system-wide trace
    if !is_root() {
        return skip("trace needs root (or CAP_BPF + CAP_PERFMON)");
    }
    let (_dir, path) = evil_copy("clock_loop");
    let bin = path.to_str().unwrap();
    // Raw CLOCK_MONOTONIC syscalls: a row and a finding name the process.
    let (code, stdout, stderr) = run(&["trace", "--fail-over", "0", "--", bin, "raw", "1", "100"]);
    assert_eq!(code, 1, "{stderr}");
    assert_inert("trace stdout", &stdout);
    assert_inert("trace stderr", &stderr);
    let escaped = evil_escaped();
    assert!(stdout.lines().any(|l| l.contains(&escaped) && l.contains("clock_gettime")), "table row: {stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("FAIL: ") && l.contains(&escaped)), "finding: {stdout}");
    // The note on stderr is one line, with the path escaped.
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("vdsoctl: ")).collect();
    assert!(notes.iter().any(|l| l.contains("tracing") && l.contains(&escaped)), "{stderr:?}");
    assert!(stderr.lines().all(|l| l.starts_with("vdsoctl: ") || !l.contains('\u{1b}')), "{stderr:?}");
    let (code, stdout, stderr) = run(&["--json", "trace", "--", bin, "raw", "1", "100"]);
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["counts"][0]["comm"], EVIL, "{doc}");
}

#[test]
fn an_error_carrying_a_hostile_name_is_one_escaped_line() {
    // A zombie: its comm is in the error message.
    let (_dir, path) = evil_copy_of(Path::new("/bin/true"));
    let mut child = Command::new(&path).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap()
        .rsplit(')')
        .next()
        .unwrap()
        .trim_start()
        .starts_with('Z')
    {
        assert!(Instant::now() < deadline, "child never became a zombie");
        std::thread::sleep(Duration::from_millis(5));
    }
    for cmd in ["maps", "auxv", "dump"] {
        let (code, stdout, stderr) = run(&[cmd, "-p", &pid.to_string()]);
        assert_eq!(code, 3, "{cmd}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.lines().count(), 1, "a newline in a comm forges no second line: {stderr:?}");
        assert_inert(cmd, &stderr);
        assert!(stderr.contains(&format!("({}) is a zombie", evil_escaped())), "{stderr:?}");
    }
    child.wait().unwrap();
    // A command that cannot be started: its path is in the message.
    let missing = format!("/nonexistent/{EVIL}");
    let (code, _, stderr) = run(&["trace", "--", &missing]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert_inert("trace error", &stderr);
    assert!(stderr.contains(&evil_escaped()), "{stderr:?}");
    // A usage error quoting a hostile value: escaped, no forged line.
    let (code, _, stderr) = run(&["maps", "-p", EVIL]);
    assert_eq!(code, 2, "{stderr}");
    assert_inert("usage error", &stderr);
    let first = stderr.lines().next().unwrap();
    assert!(
        stderr.lines().count() == 1
            && first.starts_with("vdsoctl: invalid value '")
            && first.contains(r"\n")
            && first.ends_with("for '--pid <PID>': invalid digit found in string"),
        "{stderr:?}"
    );
}

/// Every token of a FAIL line means exit 1, and exit 1 has a FAIL line.
fn assert_fail_rule(args: &[&str]) {
    let (code, stdout, stderr) = run(args);
    let says_fail = stdout.split_whitespace().any(|w| w.trim_end_matches(':') == "FAIL");
    match code {
        0 => assert!(!says_fail, "vdsoctl {args:?}: FAIL printed with exit 0:\n{stdout}"),
        1 => assert!(says_fail, "vdsoctl {args:?}: exit 1 without a FAIL line:\n{stdout}{stderr}"),
        _ => panic!("vdsoctl {args:?}: exit {code}: {stderr}"),
    }
}

#[test]
fn a_fail_line_means_exit_1_in_every_command() {
    let _lock = system_wide_lock(); // bench timings and clock loops: not beside a system-wide trace
    let w = Workload::start(Command::new(build_c("no_vdso", false, &[])));
    let pid = w.pid().to_string();
    for cmd in ["maps", "auxv"] {
        let (code, stdout, _) = run(&[cmd, "-p", &pid]);
        assert_eq!(code, 1, "{cmd}: {stdout}");
        assert_fail_rule(&[cmd, "-p", &pid]);
        assert_fail_rule(&[cmd]);
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso/x86_64.so");
    assert_fail_rule(&["dump", "--file", fixture.to_str().unwrap()]);
    assert_fail_rule(&["dump"]);
    // bench: a budget nothing meets is a FAIL line and exit 1.
    let quick = ["bench", "--quick", "--clocks", "MONOTONIC", "--functions", "clock_gettime"];
    let (code, stdout, stderr) = run(&[&quick[..], &["--max-ns", "0.001"]].concat());
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("FAIL: ")), "{stdout}");
    assert_fail_rule(&quick);
    assert_fail_rule(&["check"]);
    if is_root() {
        assert_fail_rule(&["trace", "--", "true"]);
        assert_fail_rule(&["check", "--", "true"]);
    }
}

/// Run vdsoctl in a pty of `cols` columns (0: the 0×0 pty script(1) makes
/// with no terminal around it), without COLUMNS; its output with `\r` dropped.
fn in_pty(cols: u16, args: &[&str]) -> String {
    in_pty_at(Path::new("."), cols, args)
}

/// [`in_pty`], run from the directory `cwd`.
fn in_pty_at(cwd: &Path, cols: u16, args: &[&str]) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let words: Vec<String> = std::iter::once(vdsoctl_path().to_str().unwrap().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|w| quote(&w))
        .collect();
    let line = format!("cd {}; stty cols {cols} rows 50; exec {}", quote(cwd.to_str().unwrap()), words.join(" "));
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("COLUMNS")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("script(1), from bsdutils");
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

/// No line ends in a space; the tokens of `must` appear whole.
fn assert_whole(what: &str, text: &str, must: &[String]) {
    for line in text.lines() {
        assert!(!line.ends_with(' '), "{what}: trailing space in {line:?}");
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    for token in must {
        assert!(words.contains(&token.as_str()), "{what}: {token:?} split or missing in\n{text}");
    }
}

#[test]
fn tables_never_split_a_token_in_a_60_or_0_column_pty() {
    let _lock = system_wide_lock(); // bench timings and clock loops: not beside a system-wide trace
    let w = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let pid = w.pid().to_string();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso/x86_64.so");
    let fixture = fixture.to_str().unwrap();
    // What each table must show whole, from the JSON.
    let json = |args: &[&str]| -> Value {
        let (_, stdout, stderr) = run(&[&["--json"][..], args].concat());
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stderr}"))
    };
    let strs = |v: &Value, ptr: &str, key: &str| -> Vec<String> {
        v.pointer(ptr)
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .filter_map(|e| e[key].as_str().map(str::to_string))
            .collect()
    };
    let maps = json(&["maps", "-p", &pid]);
    let mut maps_tokens = strs(&maps, "/mappings", "name");
    maps_tokens.extend(strs(&maps, "/mappings", "start"));
    maps_tokens.extend(strs(&maps, "/mappings", "end"));
    let auxv = json(&["auxv", "-p", &pid]);
    let mut auxv_tokens = strs(&auxv, "/entries", "name");
    auxv_tokens.extend(strs(&auxv, "/entries", "value"));
    let dump = json(&["dump", "--file", fixture]);
    let dump_tokens = strs(&dump, "/symbols", "name");
    let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
        (vec!["maps", "-p", &pid], maps_tokens),
        (vec!["auxv", "-p", &pid], auxv_tokens),
        (vec!["dump", "--file", fixture], dump_tokens),
    ];
    for (args, tokens) in &cases {
        let piped = run(args).1;
        for cols in [60, 0] {
            let text = in_pty(cols, args);
            assert_whole(&format!("{args:?} at {cols} columns"), &text, tokens);
            if cols == 60 && args[0] == "auxv" {
                // auxv's DECODED goes under its rows: the table fits (it was 64 wide).
                for line in text.lines() {
                    assert!(
                        line.chars().count() <= 60,
                        "auxv at 60: {} columns: {line:?}\n{text}",
                        line.chars().count()
                    );
                }
            }
            if cols == 0 {
                assert_eq!(text, piped, "{args:?}: a 0-column pty is unlimited, as a pipe");
            }
        }
    }
    // Commands whose figures change from run to run: their identifiers.
    let check = json(&["check"]);
    let names = strs(&check, "/checks", "name");
    let bench_args = ["bench", "--quick", "--clocks", "MONOTONIC,REALTIME", "--functions", "clock_gettime"];
    for cols in [60, 0] {
        let text = in_pty(cols, &["check"]);
        assert_whole(&format!("check at {cols}"), &text, &names);
        if cols == 60 {
            // check has a prose column: it wraps, as far as its longest word lets it.
            assert!(rule_width(&text) < rule_width(&run(&["check"]).1), "{text}");
        }
        let text = in_pty(cols, &bench_args);
        let must: Vec<String> = ["clock_gettime", "MONOTONIC", "REALTIME", "fast;"].map(String::from).to_vec();
        assert_whole(&format!("bench at {cols}"), &text, &must);
        if is_root() {
            let bin = build_c("clock_loop", false, &[]);
            let text = in_pty(cols, &["trace", "--", bin.to_str().unwrap(), "raw", "4", "100"]);
            let must: Vec<String> = ["clock_loop", "clock_gettime", "MONOTONIC_RAW", "100"].map(String::from).to_vec();
            assert_whole(&format!("trace at {cols}"), &text, &must);
        }
    }
}

/// No line wider than 80 columns, in an 80-column pty, for the usual output
/// of each command fixed for it (issue 24), and no token split.
#[test]
fn usual_output_fits_an_80_column_pty() {
    let _lock = system_wide_lock(); // bench timings and clock loops: not beside a system-wide trace
    let fits = |what: &str, text: &str| {
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{what}: {} columns: {line:?}\n{text}", line.chars().count());
        }
    };
    // An image tree: a vsyscall caller (FAIL), a 32-bit program (WARN), a dynamic one.
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("usr/bin")).unwrap();
    std::fs::create_dir_all(tree.path().join("opt")).unwrap();
    std::fs::copy(build_c("clock_loop", false, &[]), tree.path().join("opt/clock_loop")).unwrap();
    std::fs::copy("/bin/true", tree.path().join("usr/bin/true")).unwrap();
    let mut paths = vec!["/opt/clock_loop", "/usr/bin/true"];
    if super::common::have_m32() {
        std::fs::copy(build_c("clock_loop", true, &[]), tree.path().join("usr/bin/clock_loop-m32")).unwrap();
        paths.push("/usr/bin/clock_loop-m32");
    }
    let text = in_pty_at(tree.path(), 80, &["check", "--image", "."]);
    fits("check --image", &text);
    let must: Vec<String> = paths.iter().map(|p| p.to_string()).chain(["ELF64".into(), "x86_64".into()]).collect();
    assert_whole("check --image at 80", &text, &must);
    // Its DETAIL had no room: it is under its row, in whole sentences.
    assert!(text.contains("its code calls the fixed [vsyscall] page"), "{text}");
    let text = in_pty(80, &["check", "--trace", "0"]);
    fits("check", &text);
    assert_whole("check at 80", &text, &["vdso_symbols".into(), "clocksource".into()]);
    let text = in_pty(80, &["maps"]);
    fits("maps", &text);
    assert_whole("maps at 80", &text, &["[vdso]".into(), "[stack]".into()]);
    // auxv's DECODED holds paths: with no room beside them, under their rows.
    let text = in_pty(80, &["auxv"]);
    fits("auxv", &text);
    assert_whole("auxv at 80", &text, &["AT_SYSINFO_EHDR".into(), "AT_HWCAP".into(), "[vdso]".into()]);
    // bench's usual table: the times in ns beside the function and clock,
    // the verdict and syscalls/call under each row; footnote and findings wrap.
    let text = in_pty(80, &["bench", "--quick"]);
    fits("bench", &text);
    let must: Vec<String> =
        ["clock_gettime", "clock_getres", "gettimeofday", "PROCESS_CPUTIME_ID", "VSYSCALL", "fast;"]
            .into_iter()
            .chain(["batches", "deviation,", "timed", "kernel-fallback;"])
            .map(String::from)
            .collect();
    assert_whole("bench at 80", &text, &must);
    // (a noisy path's spread may come first: "fast; spread libc ±2%; syscalls/call: …")
    let under = text.lines().filter(|l| l.trim_start().starts_with("fast; ")).count();
    assert!(under >= 5, "each row's verdict under it: {text}");
    if is_root() {
        // The command named as the reader would type it, from its directory.
        let dir = build_c("clock_loop", false, &[]).parent().unwrap().to_path_buf();
        let text = in_pty_at(&dir, 80, &["trace", "--", "./clock_loop", "raw", "4", "100"]);
        fits("trace", &text);
        let must: Vec<String> = ["clock_loop", "clock_gettime", "MONOTONIC_RAW", "100"].map(String::from).to_vec();
        assert_whole("trace at 80", &text, &must);
    }
}

/// The width of a table's rule line (the first line of `─`).
fn rule_width(text: &str) -> usize {
    text.lines().find(|l| l.starts_with('─')).map_or(0, |l| l.chars().count())
}

#[test]
fn columns_is_honoured_when_piped() {
    let _lock = system_wide_lock(); // bench timings and clock loops: not beside a system-wide trace
    let (code, narrow, stderr) = vdsoctl_with_columns("50", &["check"]);
    assert!(code <= 1, "{stderr}");
    let (_, wide, _) = run(&["check"]);
    // The DETAIL column wraps: narrower, more lines, the same words.
    assert!(rule_width(&narrow) < rule_width(&wide), "{narrow}");
    assert!(narrow.lines().count() > wide.lines().count(), "{narrow}");
    let table: Vec<&str> =
        narrow.lines().skip_while(|l| !l.starts_with('─')).take_while(|l| !l.starts_with("verdict")).collect();
    for line in table.iter().filter(|l| l.contains("  ")) {
        assert!(line.chars().count() <= 50, "{line:?} wider than COLUMNS");
    }
    let (_, unlimited, _) = vdsoctl_with_columns("0", &["maps"]);
    let (_, piped, _) = run(&["maps"]);
    assert_eq!(unlimited.lines().nth(1), piped.lines().nth(1), "COLUMNS=0 is unlimited");
}

fn vdsoctl_with_columns(columns: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(vdsoctl_path()).args(args).env("COLUMNS", columns).env("NO_COLOR", "1").output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn color_always_never_and_no_color() {
    let _lock = system_wide_lock(); // bench timings and clock loops: not beside a system-wide trace
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso/x86_64.so");
    let fixture = fixture.to_str().unwrap();
    // check colours its STATUS column; piped, auto means none.
    let (_, auto, _) = run(&["check"]);
    assert!(!auto.contains('\x1b'), "{auto:?}");
    let out =
        Command::new(vdsoctl_path()).args(["--color", "always", "check"]).env_remove("NO_COLOR").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\x1b[32mOK\x1b[0m"), "{text:?}");
    // --color reaches clap's help too: always colours it piped, never keeps
    // a terminal's help plain.
    let out =
        Command::new(vdsoctl_path()).args(["--color", "always", "maps", "--help"]).env_remove("NO_COLOR").output();
    assert!(out.unwrap().stdout.contains(&0x1b), "--color always --help");
    assert!(in_pty(80, &["--color", "always", "maps", "--help"]).contains('\x1b'));
    let line = format!("{} --color never maps --help", vdsoctl_path().display());
    let out = Command::new("script").args(["-qec", &line, "/dev/null"]).env_remove("NO_COLOR").output().unwrap();
    assert!(!out.stdout.contains(&0x1b) && out.stdout.len() > 100, "{:?}", String::from_utf8_lossy(&out.stdout));
    // The FAIL lines under a table and the verdict are coloured too, and a
    // wrapped line hangs under its text, not under the colour codes.
    let tree = tempfile::tempdir().unwrap();
    std::fs::copy(build_c("clock_loop", false, &[]), tree.path().join("clock_loop")).unwrap();
    let out = Command::new(vdsoctl_path())
        .args(["--color", "always", "check", "--image", tree.path().to_str().unwrap()])
        .env_remove("NO_COLOR")
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let fail = text.lines().position(|l| l.starts_with("\x1b[31mFAIL\x1b[0m /clock_loop: ")).expect(&text);
    let hang = " ".repeat("FAIL /clock_loop: ".len());
    let next = text.lines().nth(fail + 1).unwrap();
    assert!(next.starts_with(&hang) && !next[hang.len()..].starts_with(' '), "{text:?}");
    assert_eq!(text.lines().last(), Some("verdict: \x1b[31mFAIL\x1b[0m"), "{text:?}");
    for never in [&["--color", "never"][..], &["--no-color"][..]] {
        let out = Command::new(vdsoctl_path()).args(never).args(["dump", "--file", fixture]).output().unwrap();
        assert!(!out.stdout.contains(&0x1b), "{never:?}");
    }
    // In a pty, auto colours unless NO_COLOR.
    let text = {
        let out = Command::new("script")
            .args(["-qec", &format!("{} check", vdsoctl_path().display()), "/dev/null"])
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(text.contains("\x1b[32mOK"), "{text:?}");
    assert!(!in_pty(80, &["check"]).contains('\x1b'), "NO_COLOR wins in auto");
}

/// The man pages, one per command, are committed under doc/man and must
/// match what `vdsoctl man` prints (regenerate: VDSOCTL_REGEN_HELP=1).
#[test]
fn man_page_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/man");
    let regen = std::env::var_os("VDSOCTL_REGEN_HELP").is_some();
    if regen {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let pages = ["vdsoctl", "dump", "maps", "auxv", "trace", "top", "bench", "check", "serve"];
    for name in pages {
        let (args, file) = match name {
            "vdsoctl" => (vec!["man"], "vdsoctl.1".to_string()),
            n => (vec!["man", n], format!("vdsoctl-{n}.1")),
        };
        let (code, text, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH EXAMPLES"] {
            assert!(text.contains(section), "{file}: {section}");
        }
        // Every page it refers to exists.
        for other in pages.iter().filter(|p| **p != "vdsoctl") {
            if text.contains(&format!("vdsoctl\\-{other}(1)")) || text.contains(&format!("vdsoctl\\-{other}\\fR(1)")) {
                assert!(pages.contains(other));
            }
        }
        let path = dir.join(&file);
        if regen {
            std::fs::write(&path, &text).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(want == text, "{file} changed; review and run `VDSOCTL_REGEN_HELP=1 cargo test man_page_snapshots`");
    }
    let (code, _, stderr) = run(&["man", "nope"]);
    assert_eq!(code, 2, "{stderr}");
}

/// groff reads every page without a warning (bad escapes, unknown macros).
#[test]
fn man_pages_are_valid_roff() {
    if Command::new("groff").arg("--version").output().is_err() {
        return skip("groff is not installed (apt-get install groff-base)");
    }
    for page in ["vdsoctl", "dump", "maps", "auxv", "trace", "top", "bench", "check", "serve"] {
        let args: Vec<&str> = if page == "vdsoctl" { vec!["man"] } else { vec!["man", page] };
        let (_, text, _) = run(&args);
        let mut groff = Command::new("groff")
            .args(["-man", "-ww", "-Tutf8"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        groff.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = groff.wait_with_output().unwrap();
        assert!(out.status.success() && out.stderr.is_empty(), "{page}: {}", String::from_utf8_lossy(&out.stderr));
        // Bold is overstrike (`E\bE`): keep the last of each pair.
        let mut rendered = String::new();
        for c in String::from_utf8_lossy(&out.stdout).chars() {
            if c == '\u{8}' {
                rendered.pop();
            } else {
                rendered.push(c);
            }
        }
        for section in ["EXIT STATUS", "ENVIRONMENT", "EXAMPLES"] {
            assert!(rendered.contains(section), "{page}: {section}");
        }
    }
}

#[test]
fn check_quiet_shows_only_rows_that_are_not_ok() {
    let _lock = system_wide_lock(); // bench timings and clock loops: not beside a system-wide trace
    let (_, stdout, stderr) = run(&["--json", "check"]);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let names: Vec<String> =
        doc["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
    let (code, quiet, stderr) = run(&["check", "--quiet"]);
    assert!(code <= 1, "{stderr}");
    let words: Vec<Vec<&str>> = quiet.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).collect();
    for row in words.iter().filter(|w| w.len() >= 2 && names.iter().any(|n| n == w[0])) {
        assert_ne!(row[1], "OK", "an OK row under --quiet: {row:?}");
    }
    let rows = words.iter().filter(|w| w.len() >= 2 && names.iter().any(|n| n == w[0])).count();
    let hidden_line = quiet.lines().find(|l| l.contains("not shown (--quiet)"));
    let hidden: usize = hidden_line.map_or(0, |l| l.split_whitespace().next().unwrap().parse().unwrap());
    assert_eq!(hidden + rows, names.len(), "{quiet}");
    assert!(quiet.lines().last().unwrap().starts_with("verdict: "), "{quiet}");
    // The exit status follows the verdict, as without --quiet.
    let verdict = quiet.lines().last().unwrap().trim_start_matches("verdict: ");
    assert_eq!(code, i32::from(verdict == "FAIL"), "{quiet}");
}

#[test]
fn a_full_stdout_is_named_as_such_without_os_error_numbers() {
    for args in [&["maps"][..], &["man"][..], &["--json", "auxv"][..]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(vdsoctl_path()).args(args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert_eq!(
            stderr,
            "vdsoctl: cannot write the report to stdout: no space left on device (ENOSPC) — check where stdout goes (a full disk, a device that refuses writes)\n"
        );
    }
    // An errno in any message reads as words and a name, not "(os error N)".
    let (code, _, stderr) = run(&["dump", "--file", "/nonexistent/vdso.so"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no such file or directory (ENOENT)") && !stderr.contains("os error"), "{stderr}");
}
