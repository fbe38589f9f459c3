//! What each page says beyond the options — exit status, environment,
//! privileges, examples — as data: one source for `--help` (after_help) and
//! the man pages (`cmd::meta`), so they cannot disagree. `cli.rs` keeps only
//! the clap definition.

/// What a page says beyond the options: exit status, environment,
/// privileges, examples. One source for `--help` (after_help) and the man
/// pages, so they cannot disagree.
#[derive(Debug)]
pub struct Page {
    /// `vdsoctl` for the overview, else the subcommand.
    pub name: &'static str,
    /// (code, meaning), in order.
    pub exit: &'static [(&'static str, &'static str)],
    /// What it needs beyond an ordinary user.
    pub privileges: &'static str,
    /// (command line, what it shows).
    pub examples: &'static [(&'static str, &'static str)],
}

/// Environment variables every command reads.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("NO_COLOR", "set and not empty: --color auto does not colour"),
    ("COLUMNS", "table width; 0 is unlimited. Unset: the terminal's width, else unlimited"),
    ("PATH", "where trace -- CMD and check -- CMD look for CMD"),
];

const USAGE: (&str, &str) = ("2", "usage error: an unknown option, a bad value, a conflict");
const INSPECT: (&str, &str) =
    ("3", "could not inspect: no such process, permission denied, a bad file, no [vdso] for dump to read");
const FACILITY: (&str, &str) =
    ("4", "a facility is missing: BPF and perf_event_open refused, no tracefs, serve cannot listen");
const CHILD: (&str, &str) =
    ("N", "with -- CMD: the command's own failing status (128+N for signal N), before any other");

/// Every page: the overview first, then one per subcommand.
pub const PAGES: &[Page] = &[
    Page {
        name: "vdsoctl",
        exit: &[
            ("0", "ran; no FAIL line was printed"),
            ("1", "ran and printed a FAIL line (check's verdict, --max-ns, --fail-over, maps with no [vdso], ...)"),
            USAGE,
            INSPECT,
            FACILITY,
            CHILD,
        ],
        privileges: "trace -p/-a and serve need root, or CAP_BPF and CAP_PERFMON (the perf engine: root, \
                     for tracefs); trace -- CMD and check -- CMD need nothing (the seccomp engine); maps, auxv \
                     and dump read another user's process as root (CAP_SYS_PTRACE)",
        examples: &[
            ("vdsoctl check", "audit this host: is every clock served by the vDSO?"),
            ("vdsoctl check -p 1234 --trace 5s", "audit one process and watch its clock syscalls for 5 s"),
            ("vdsoctl trace -a -d 10s", "count clock syscalls of every process for 10 s"),
            ("vdsoctl --json maps -p 1234", "the special mappings of a process, as JSON"),
        ],
    },
    Page {
        name: "dump",
        exit: &[
            ("0", "the image was shown; no FAIL line"),
            ("1", "a FAIL line: the image is not a usable vDSO (no soname linux-vdso.so.1, no clock symbols, ...)"),
            USAGE,
            ("3", "could not read the image: no such process, permission denied, no [vdso], a process that exec'd each time it was read, a bad file; or -o could not be written"),
        ],
        privileges: "reading another user's process needs root or CAP_SYS_PTRACE; --file needs none",
        examples: &[
            ("vdsoctl dump", "vdsoctl's own vDSO: header, symbols with versions, notes"),
            ("vdsoctl dump -p 1234 -o vdso.so && objdump -T vdso.so", "save a process's vDSO for binutils"),
            ("vdsoctl dump --file vdso.so --json", "an image from a file, as JSON"),
        ],
    },
    Page {
        name: "maps",
        exit: &[
            ("0", "the mappings were shown; no FAIL line"),
            ("1", "a FAIL line: the process has no [vdso] mapping"),
            USAGE,
            ("3", "could not inspect: no such process, permission denied, a zombie or kernel thread, a process that exec'd each time it was read"),
        ],
        privileges: "another user's process needs root or CAP_SYS_PTRACE",
        examples: &[
            ("vdsoctl maps", "vdsoctl's own special mappings and the vsyscall mode"),
            ("vdsoctl maps -p 1234", "those of process 1234"),
        ],
    },
    Page {
        name: "auxv",
        exit: &[
            ("0", "the vector was shown; no FAIL line"),
            ("1", "a FAIL line: AT_SYSINFO_EHDR is missing or does not point at [vdso]"),
            USAGE,
            ("3", "could not inspect: no such process, permission denied, a zombie or kernel thread, a process that exec'd each time it was read"),
        ],
        privileges: "another user's process needs root or CAP_SYS_PTRACE",
        examples: &[
            ("vdsoctl auxv -p 1234", "process 1234's auxiliary vector, decoded"),
            ("vdsoctl --json auxv | jq .sysinfo_ehdr_matches_vdso", "whether the C library can find the vDSO"),
        ],
    },
    Page {
        name: "trace",
        exit: &[
            ("0", "traced; no FAIL line (without --fail-over a bypassed clock is a WARN)"),
            ("1", "a FAIL line: a clock the vDSO should serve, or the [vsyscall] page, was called more than --fail-over RATE times a second"),
            ("2", "usage error: an unknown option, a bad value, a conflict; --stacks with an engine that keeps no stacks (perf, seccomp); --interval below 100ms; an empty --cgroup"),
            ("3", "no such process, or CMD could not be started; or the report or --flamegraph could not be written (said after the report; a failed CMD's status or a FAIL's 1 still wins)"),
            ("4", "counting is refused here: no BPF, no perf_event_open, no tracefs"),
            CHILD,
        ],
        privileges: "-p and -a: root, or CAP_BPF and CAP_PERFMON (BPF engine; the perf engine needs root for \
                     tracefs); -- CMD: nothing (the seccomp engine, when the others are refused; it sets \
                     no_new_privs, so setuid programs in the tree run without their privileges)",
        examples: &[
            ("vdsoctl trace -- ./myapp --selftest", "count the clock syscalls of a command and its children"),
            ("vdsoctl trace -p 1234 -d 30s --interval 5s", "a table every 5 s, then the summary"),
            ("vdsoctl trace -a --fail-over 0", "exit 1 if any process bypasses the vDSO (CI)"),
            ("vdsoctl --format folded trace --stacks -a -d 10s", "who makes the calls: folded stacks for flamegraph.pl or inferno"),
            ("vdsoctl trace --stacks --flamegraph calls.svg -- ./myapp", "the same as an SVG flame graph"),
            ("vdsoctl trace --sites -p 1234", "which code makes the calls: each row split by call site, with the fix"),
        ],
    },
    Page {
        name: "top",
        exit: &[
            ("0", "sampled and reported"),
            USAGE,
            ("3", "no such process, or CMD could not be started; or the report could not be written"),
            ("4", "sampling is refused here: no BPF (root, or CAP_BPF and CAP_PERFMON) for the host, no perf_event_open"),
            CHILD,
        ],
        privileges: "the host, -p and --cgroup: root, or CAP_BPF and CAP_PERFMON (a BPF program on a \
                     cpu-clock event per CPU); -- CMD: nothing (perf_event_open on the command, user-mode \
                     samples only: its time in the kernel's fallback syscalls is not seen)",
        examples: &[
            ("vdsoctl top", "which programs spend CPU reading the clock, refreshed every 2 s"),
            ("vdsoctl top -d 5s --by comm", "one report after 5 s, by process name"),
            ("vdsoctl --json top -d 10s -p 1234", "one process's vDSO and fallback-syscall shares, as JSON"),
            ("vdsoctl top -- ./myapp", "a command's shares, from its exec to its exit"),
        ],
    },
    Page {
        name: "bench",
        exit: &[
            ("0", "measured; no FAIL line"),
            ("1", "a FAIL line: a clock lost its fast path, cost more than --max-ns, or a --verify check failed"),
            USAGE,
            ("3", "vdsoctl's own process could not be read"),
        ],
        privileges: "none; syscalls per call are counted with perf_event_open, else under a seccomp filter in a child, else verdicts are timing-based",
        examples: &[
            ("vdsoctl bench", "every clock through libc, the vDSO, the syscall and the vsyscall page"),
            ("vdsoctl bench --quick --clocks MONOTONIC --max-ns 100", "a CI gate on one clock"),
            ("vdsoctl bench --baseline base.json", "fail only on a row slower than a baseline beyond its spread"),
        ],
    },
    Page {
        name: "check",
        exit: &[
            ("0", "verdict OK or WARN: no FAIL row"),
            ("1", "verdict FAIL: a FAIL row (a WARN --strict raised, a kind --fail-on names, what is new since --baseline)"),
            ("2", "usage error, an unknown kind, or an ignore file entry that is past its expires= date or has no reason"),
            ("3", "could not inspect the process or the image (no such tree or archive, nothing to audit in it, a manifest naming a missing blob), or CMD could not be started"),
            ("4", "with -- CMD: no engine may count the command (BPF, perf_event_open and seccomp refused)"),
            CHILD,
        ],
        privileges: "none: without root (or CAP_BPF and CAP_PERFMON) the observation rows say \"not observed\" and the other checks decide; -p of another user's process needs root or CAP_SYS_PTRACE; reading the seccomp filters of a -p process needs root (CAP_SYS_ADMIN), without it an INFO row says so; -- CMD needs nothing (the seccomp engine counts without privileges)",
        examples: &[
            ("vdsoctl check", "the host audit and a 1 s look at every process's clock syscalls, with a verdict"),
            ("vdsoctl check -p 1234 --trace 5s", "audit one process and watch its clock syscalls for 5 s"),
            ("vdsoctl check --quiet", "only the rows that are not OK"),
            ("vdsoctl check --image ./rootfs", "every ELF program and library of an unpacked container image"),
            ("vdsoctl check --image app.tar", "the same for an image saved by `podman save` or `docker save`"),
            ("vdsoctl check --image app.tar --baseline base.json", "fail only on what is new since a baseline (--save-baseline)"),
            ("vdsoctl check --image ./rootfs --strict --allow random-syscall-old-libc", "fail on any WARN but the base image's getrandom (kinds: doc/FINDINGS.md)"),
            ("vdsoctl check --image ./rootfs --ignore-file ci/vdsoctl.ignore", "waive findings by kind and path, each with a reason and a date (default ./.vdsoctlignore)"),
            ("vdsoctl check --seccomp-profile seccomp.json", "fail when the profile refuses a syscall the vDSO falls back to"),
            ("vdsoctl check -- ./myapp --selftest", "fail when the command's clock reads leave the vDSO"),
            ("vdsoctl check --timeout 5m -- ./selftest", "the same, and fail (killing it) if it runs past 5 minutes"),
        ],
    },
    Page {
        name: "serve",
        exit: &[
            ("0", "stopped by SIGINT or SIGTERM"),
            USAGE,
            ("4", "could not listen or start its threads"),
        ],
        privileges: "the per-process series need root, or CAP_BPF and CAP_PERFMON; without them the audit and costs are still served",
        examples: &[
            ("vdsoctl serve", "/metrics on 127.0.0.1:10411 (loopback only), refreshed every 15 s"),
            ("vdsoctl serve --listen :10411 --interval 1m", "on every IPv4 address (it names every process), every minute"),
        ],
    },
];

/// The page of a command (`vdsoctl` for the overview).
pub fn page(name: &str) -> Option<&'static Page> {
    PAGES.iter().find(|p| p.name == name)
}

/// The exit-status, environment and privileges text `--help` ends with.
pub fn after_help(page: &Page, overview: bool) -> String {
    let mut s = String::from("Exit status:\n");
    for (code, what) in page.exit {
        s += &format!("  {code}  {what}\n");
    }
    s += &format!("\nPrivileges: {}\n", page.privileges);
    if overview {
        s += "\nEnvironment:\n";
        for (name, what) in ENVIRONMENT {
            s += &format!("  {name:<8}  {what}\n");
        }
        s += "\nEach command has its own help (vdsoctl COMMAND --help) and man page (vdsoctl man COMMAND).";
    } else {
        s += "\nExamples:\n";
        for (line, what) in page.examples {
            s += &format!("  {line}\n      {what}\n");
        }
    }
    s.trim_end().to_string()
}
