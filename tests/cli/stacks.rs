//! `trace --stacks`: the call chain of fixtures/call_chain.c (main → outer
//! → middle → inner, inner making the syscall; built with frame pointers)
//! in the folded output, in order, with its exact count; the SVG flame
//! graph as XML holding the chain's frames; who the process is, escaped;
//! and the engines that keep no stacks refused.

use super::common::{
    build_c, comm_of, copy_executable, folded_and_flamegraph, missing_trace_facility, run, skip, svg_titles,
};
use std::path::PathBuf;

/// The fixture, built with frame pointers.
fn call_chain() -> PathBuf {
    build_c("call_chain", false, &["-fno-omit-frame-pointer"])
}

#[test]
fn folded_stacks_hold_the_call_chain_in_order_with_its_count_and_the_svg_too() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = call_chain();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("calls.svg");
    let (code, stdout, stderr) = folded_and_flamegraph(&svg, &[bin.to_str().unwrap(), "1234", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    // One stack: `comm;<libc start>;main;outer;middle;inner 1234`.
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let (stack, count) = lines[0].rsplit_once(' ').unwrap();
    assert_eq!(count, "1234", "{stdout}");
    let frames: Vec<&str> = stack.split(';').collect();
    let comm = comm_of(&bin);
    assert_eq!(frames[0], comm);
    assert_eq!(frames[frames.len() - 4..], ["main", "outer", "middle", "inner"], "{stdout}");
    assert!(!stack.contains("[cut:"), "a walk through frame pointers is whole: {stdout}");

    // The SVG is XML (python's parser) and holds every frame of the chain.
    let titles = svg_titles(&svg).expect("python3 runs");
    for f in &frames {
        assert!(titles.lines().any(|t| t.starts_with(&format!("{f} ("))), "no `{f}` in the SVG:\n{titles}");
    }
    assert!(titles.contains("1,234 calls"), "{titles}");

    // Never written through a link: the link's target is left alone.
    let target = dir.path().join("target");
    std::fs::write(&target, "keep").unwrap();
    let link = dir.path().join("link.svg");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, _, stderr) =
        run(&["trace", "--stacks", "--flamegraph", link.to_str().unwrap(), "--", bin.to_str().unwrap(), "1"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("it is a symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    // A directory that is not there: exit 3, said with its hint.
    let (code, _, stderr) =
        run(&["trace", "--stacks", "--flamegraph", "/vdsoctl-no-such-dir/x.svg", "--", bin.to_str().unwrap(), "1"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("cannot write /vdsoctl-no-such-dir/x.svg") && stderr.contains("directory exists"),
        "{stderr}"
    );
}

#[test]
fn who_the_process_is_is_shown_escaped_in_tables_and_kept_in_json() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    // A short path, so the command line shown is not cut.
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("cc");
    copy_executable(&call_chain(), &bin).unwrap();
    let hostile = "\x1b[31mred\nline";
    let bin_s = bin.to_str().unwrap();
    let (code, stdout, stderr) = run(&["trace", "--", bin_s, "10", "1000", hostile]);
    assert_eq!(code, 0, "{stderr}");
    let line = stdout.lines().find(|l| l.trim_start().starts_with("pid ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains(&format!("{bin_s}, `{bin_s} 10 1000 '\\u{{1b}}[31mred\\nline'`")), "{line}");
    assert!(!stdout.contains('\x1b'), "a control character reached the table: {stdout:?}");
    assert!(line.contains("its calls ~"), "{line}");
    // A long command line is cut under the table (at 72 characters), whole in JSON.
    let long = "x".repeat(100);
    let (code, stdout, stderr) = run(&["trace", "--", bin_s, "10", "1000", &long]);
    assert_eq!(code, 0, "{stderr}");
    let line = stdout.lines().find(|l| l.trim_start().starts_with("pid ")).unwrap_or_else(|| panic!("{stdout}"));
    let shown = line.split('`').nth(1).unwrap_or_else(|| panic!("{line}"));
    assert!(shown.ends_with('…') && shown.chars().count() == 73, "{line}");
    let (code, stdout, stderr) = run(&["--json", "trace", "--", bin_s, "10", "1000", hostile]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["counts"][0]["cmdline"], serde_json::json!([bin_s, "10", "1000", hostile]));
    assert_eq!(v["counts"][0]["exe"], bin_s);
}

#[test]
fn stacks_need_the_bpf_engine() {
    for engine in ["perf", "seccomp"] {
        let (code, _, stderr) = run(&["trace", "--stacks", "--engine", engine, "--", "true"]);
        assert_eq!(code, 2, "{engine}: {stderr}");
        assert!(stderr.contains("--stacks needs the BPF engine"), "{stderr}");
    }
    let (code, _, stderr) = run(&["--format", "folded", "trace", "--", "true"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--format folded is only for `trace --stacks`"), "{stderr}");
    let (code, _, stderr) = run(&["trace", "--flamegraph", "x.svg", "--", "true"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--stacks"), "{stderr}");
}

/// Issue #32: `--stacks` of a process that exits at once (no linger),
/// built with frame pointers, calling libc's `syscall()` — a leaf with no
/// frame, so the walk skips its caller — from `read_monotonic_raw`: the
/// folded stack holds `main;read_monotonic_raw;syscall` in order (the
/// caller spliced in from the word at the stack pointer, every frame
/// named after the process is gone), and the SVG names them.
#[test]
fn a_short_lived_leaf_wrappers_stack_ends_where_the_code_is() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("short_clock", false, &["-fno-omit-frame-pointer"]);
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("raw.svg");
    let svg_s = svg.to_str().unwrap();
    let args = ["--format", "folded", "trace", "--stacks", "--flamegraph", svg_s, "--", bin.to_str().unwrap()];
    let (code, stdout, stderr) = run(&[&args[..], &["raw", "5000"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let line = stdout.lines().find(|l| l.ends_with(" 5000")).unwrap_or_else(|| panic!("{stdout}"));
    let (stack, _) = line.rsplit_once(' ').unwrap();
    let frames: Vec<&str> = stack.split(';').collect();
    assert_eq!(frames[0], comm_of(&bin), "{stdout}");
    assert_eq!(frames[frames.len() - 3..], ["main", "read_monotonic_raw", "syscall"], "{stdout}");
    assert!(frames.iter().all(|f| !f.starts_with("0x")), "every frame named (object at least): {stdout}");
    let titles = svg_titles(&svg).expect("python3 runs");
    for f in ["main", "read_monotonic_raw", "syscall"] {
        assert!(titles.lines().any(|t| t.starts_with(&format!("{f} ("))), "no `{f}` in the SVG:\n{titles}");
    }
}

/// Issue 43: a tail call left no frame; the folded stack names it between
/// the caller it returns to and the frame it jumped to, marked, as
/// `--sites` does: `main;read_monotonic_raw [tail call];syscall`.
#[test]
fn a_tail_call_is_named_in_the_stack() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("tail_call", false, &["-fno-omit-frame-pointer"]);
    let (code, stdout, stderr) = run(&["--format", "folded", "trace", "--stacks", "--", bin.to_str().unwrap(), "1000"]);
    assert_eq!(code, 0, "{stderr}");
    let line = stdout.lines().find(|l| l.ends_with(" 1000")).unwrap_or_else(|| panic!("{stdout}"));
    let (stack, _) = line.rsplit_once(' ').unwrap();
    let frames: Vec<&str> = stack.split(';').collect();
    assert_eq!(frames[frames.len() - 3..], ["main", "read_monotonic_raw [tail call]", "syscall"], "{stdout}");
}

/// Issue 43: -O2 code keeps data in %rbp, and the frame-pointer walk
/// reads numbers as return addresses, a different one each call
/// (fixtures/garbage_frames.c: 1,000 calls from one inline `syscall` in
/// main, exiting at once). Before: 953 distinct invented stacks. Now one
/// stack, cut where nothing shows the walk is still in code, and every
/// call in that stack: the kernel's stack map keeps one entry per bucket,
/// and a walk whose bucket another holds is kept by content in the
/// overflow map, so no call's stack is lost (before: ~60 of the 1,000).
#[test]
fn a_walk_through_data_is_cut_not_invented() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if std::env::consts::ARCH != "x86_64" {
        return skip("fixtures/garbage_frames.c is x86_64 assembly");
    }
    let bin = build_c("garbage_frames", false, &[]);
    let (code, stdout, stderr) = run(&["--json", "trace", "--stacks", "--", bin.to_str().unwrap(), "1000"]);
    assert_eq!(code, 0, "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let stacks = r["stacks"].as_array().unwrap();
    let from_main: Vec<&serde_json::Value> = stacks.iter().filter(|s| s["frames"][0]["symbol"] == "main").collect();
    assert_eq!(from_main.len(), 1, "one site, one stack: {:#}", r["stacks"]);
    let s = from_main[0];
    assert_eq!(s["frames"].as_array().unwrap().len(), 1, "{s:#}");
    assert!(matches!(s["cut"].as_str(), Some("no_frame_pointer" | "unverified")), "{s:#}");
    // Every call is in a stack or lost, none in two.
    // (glibc's start-up getrandom key is a stack too, counted apart.)
    let counted: u64 = r["counts"].as_array().unwrap().iter().map(|c| c["count"].as_u64().unwrap()).sum::<u64>()
        + r["startup_keys"].as_u64().unwrap();
    let stacked: u64 = stacks.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    let lost = r["stacks_lost"].as_u64().unwrap();
    assert_eq!((stacked, lost), (counted, 0), "{r:#}");
    assert_eq!(s["count"].as_u64(), Some(1000), "{s:#}");
    // Folded: one line for the site.
    let (_, folded, _) = run(&["--format", "folded", "trace", "--stacks", "--", bin.to_str().unwrap(), "1000"]);
    let lines: Vec<&str> = folded.lines().filter(|l| l.contains(";main ")).collect();
    assert_eq!(lines.len(), 1, "{folded}");
    assert!(lines[0].contains("[cut: "), "{folded}");
}
