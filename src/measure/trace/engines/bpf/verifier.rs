//! What the verifier said when it refused a program. Its log is kept whole
//! (as cilium/ebpf's `internal/errors.go` does), less the statistics lines
//! it ends with, which say how far it got rather than why it stopped. The
//! CLI has no `--verbose`, so the log goes to a file whose path the error
//! names (`$TMPDIR`, else /tmp: `vdsoctl-verifier-<program>-<pid>-<n>.log`,
//! created new with mode 0600, so a planted name or link is never written
//! through), and the error's one line carries the reason.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// The kernel that first has `bpf_get_current_task_btf` (helper 158), which
/// every program calls: the BPF engine's floor.
pub(super) const FLOOR: &str = "Linux 5.11 (bpf_get_current_task_btf, helper 158)";

/// The log in `buf` as the kernel ends it, at its first NUL. What follows
/// is no part of it: the verifier takes back what it logged of a path it
/// abandons (`bpf_vlog_reset` writes a NUL at the point it goes back to),
/// and the text it took back stays in the buffer after that NUL (on 7.2
/// riscv64 a pruning note, "from 194 to 195: safe", was read from there).
pub(super) fn text(buf: &[u8]) -> String {
    String::from_utf8_lossy(buf.split(|b| *b == 0).next().unwrap_or_default()).into_owned()
}

/// The statistics lines a log ends with.
fn statistics(l: &str) -> bool {
    ["processed ", "verification time ", "stack depth ", "max_states_per_insn "].iter().any(|p| l.starts_with(p))
}

/// The log as the kernel wrote it, without the trailing NULs of the buffer
/// and without the statistics lines.
pub(super) fn whole(log: &str) -> String {
    let mut out = String::new();
    for l in log.trim_end_matches('\0').lines().filter(|l| !statistics(l.trim())) {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// The verifier's reason for a rejection: the last line of its log that is
/// not a statistics line, with the instruction it stopped at when the log
/// names one just before.
pub(super) fn reason(log: &str) -> Option<String> {
    let lines: Vec<&str> =
        log.trim_end_matches('\0').lines().map(str::trim).filter(|l| !l.is_empty() && !statistics(l)).collect();
    let (&reason, before) = lines.split_last()?;
    match before.last() {
        // "12: (79) r1 = *(u64 *)(r6 +8)" — the instruction it stopped at.
        Some(at) if at.split(':').next().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) => {
            Some(format!("{reason} (at {at})"))
        }
        _ => Some(reason.to_string()),
    }
}

/// Whether `log` ends as a verification that went on, not with a reason:
/// its last line (statistics aside) a pruning note, "from 191 to 192:
/// safe", "from 7 to 9 (speculative execution): safe" or "12: safe".
pub(super) fn passed(log: &str) -> bool {
    let Some(last) = log.lines().map(str::trim).rfind(|l| !l.is_empty() && !statistics(l)) else {
        return false;
    };
    let Some(at) = last.strip_suffix(": safe") else { return false };
    let numbers = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match at.strip_prefix("from ").and_then(|r| r.split_once(" to ")) {
        Some((from, to)) => numbers(from) && to.split(' ').next().is_some_and(numbers),
        None => numbers(at),
    }
}

/// Whether a load that failed with `errno` was refused by the verifier:
/// EACCES or EINVAL (E2BIG: too complex). Another errno is a later step's
/// (the JIT's ENOTSUPP, 524; a map's ENOMEM), whose log ends with a
/// verification that passed: its last line is no reason, the errno is
/// (seen on 7.2 riscv64, where "from 194 to 195: safe" was shown as why).
pub(super) fn refused_by_it(errno: Option<i32>) -> bool {
    matches!(errno, Some(libc::EACCES | libc::EINVAL | libc::E2BIG))
}

/// Save `log` for `program`; the path it went to.
pub(super) fn save(program: &str, log: &str) -> io::Result<PathBuf> {
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    let mut last = None;
    for n in 0..16 {
        let path = dir.join(format!("vdsoctl-verifier-{program}-{pid}-{n}.log"));
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path) {
            Ok(mut f) => return f.write_all(log.as_bytes()).map(|()| path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// Whether `reason` (or the kernel's release) says the floor is the cause:
/// an unknown helper 158, or a kernel older than 5.11.
pub(super) fn below_floor(reason: &str, release: Option<&str>) -> bool {
    let old = release.and_then(crate::inspect::kernel::parse_version).is_some_and(|v| v < (5, 11));
    old || (reason.contains("#158") && (reason.contains("unknown func") || reason.contains("invalid func")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "func#0 @0\n0: R1=ctx() R10=fp0\n0: (79) r2 = *(u64 *)(r1 +8)\n1: (85) call bpf_map_lookup_elem#1\nR1 type=ctx expected=map_ptr\nprocessed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0\n\0\0";

    #[test]
    fn the_verifier_reason_is_not_its_statistics() {
        // A log as 6.x writes it for a rejected program: the reason, then
        // the statistics.
        assert_eq!(
            reason(LOG).as_deref(),
            Some("R1 type=ctx expected=map_ptr (at 1: (85) call bpf_map_lookup_elem#1)")
        );
        assert_eq!(reason("invalid argument\n").as_deref(), Some("invalid argument"));
        assert_eq!(reason("processed 0 insns\nverification time 5 usec\nstack depth 0\n\0"), None);
        assert_eq!(reason(""), None);
    }

    #[test]
    fn the_log_ends_at_its_first_nul() {
        // What the verifier took back (bpf_vlog_reset) stays after the NUL.
        let buf = b"0: (85) call bpf_map_lookup_elem#1\nR1 type=ctx expected=map_ptr\n\0from 191 to 192: safe\n\0\0";
        assert_eq!(text(buf), "0: (85) call bpf_map_lookup_elem#1\nR1 type=ctx expected=map_ptr\n");
        assert_eq!(
            reason(&text(buf)).as_deref(),
            Some("R1 type=ctx expected=map_ptr (at 0: (85) call bpf_map_lookup_elem#1)")
        );
        assert_eq!(text(b"\0\0"), "");
        assert_eq!(text(b"no nul"), "no nul");
    }

    #[test]
    fn a_log_that_ends_on_a_pruning_note_passed() {
        let pruned = "190: (bf) r2 = r10\n191: (85) call bpf_map_lookup_elem#1\nfrom 191 to 192: safe\nprocessed 900 insns (limit 1000000)\n";
        assert!(passed(pruned));
        assert!(passed("from 7 to 9 (speculative execution): safe\n"));
        assert!(passed("12: safe\n"));
        assert!(!passed(LOG), "a reason");
        assert!(!passed("R0 leaks addr as return value: safe\n"));
        assert!(!passed("") && !passed("processed 0 insns\n"));
    }

    #[test]
    fn only_the_verifiers_errnos_make_its_log_the_reason() {
        assert!(refused_by_it(Some(libc::EACCES)) && refused_by_it(Some(libc::EINVAL)));
        assert!(!refused_by_it(Some(524)), "ENOTSUPP: the JIT's");
        assert!(!refused_by_it(Some(libc::ENOMEM)) && !refused_by_it(None));
    }

    #[test]
    fn the_whole_log_is_kept_less_its_statistics() {
        assert_eq!(
            whole(LOG),
            "func#0 @0\n0: R1=ctx() R10=fp0\n0: (79) r2 = *(u64 *)(r1 +8)\n1: (85) call bpf_map_lookup_elem#1\nR1 type=ctx expected=map_ptr\n"
        );
        let path = save("unit_test", &whole(LOG)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole(LOG));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let again = save("unit_test", "x").unwrap();
        assert_ne!(path, again, "a second rejection does not overwrite the first");
        let _ = (std::fs::remove_file(path), std::fs::remove_file(again));
    }

    #[test]
    fn the_floor_is_named_for_old_kernels_and_an_unknown_helper_158() {
        assert!(below_floor("anything", Some("5.10.0-28-amd64")));
        assert!(below_floor("unknown func bpf_get_current_task_btf#158", Some("6.1.0")));
        assert!(below_floor("invalid func unknown#158", None));
        assert!(!below_floor("R2 !read_ok", Some("6.18.44")));
        assert!(!below_floor("R2 !read_ok", Some("garbage")));
    }
}
