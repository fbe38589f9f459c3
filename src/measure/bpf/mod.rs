//! The in-kernel trace engine: BPF programs on the `sys_enter` raw
//! tracepoint (`tp_btf`) count clock syscalls in a per-CPU hash keyed by
//! (process, start time, ABI, function, clock), so nothing is sampled,
//! nothing is lost to a ring buffer, and 32-bit tasks are split as exactly as
//! 64-bit ones. Measured (`../shared/TRACE-ENGINE.md`, scripts/bench-trace.sh): the
//! cost of perf stat's single filtered counter with the full split, ~ms of
//! fixed cost, no RCU grace period at exit.
//!
//! Programs:
//! - `sys_enter`: the clock syscalls of both ABIs. The ABI is the task's
//!   `thread_info.status & TS_COMPAT` (exact, also for `int 0x80` from
//!   64-bit code); the clock id comes from the ABI's first-argument register.
//!   Rows carry the process name (its group leader's comm) at the time of
//!   Clock ids outside 0..16 (the kernel's `MAX_CLOCKS`: CPU clocks of other
//!   tasks, fd clocks, invalid ids) fold into one `other` row per process and function, so a
//!   process has at most a few dozen rows whatever ids it passes. The
//!   process's start time (its group leader's `start_boottime`) is in the
//!   key: a pid used again is a new process. Beside the rows, one entry per
//!   process (`totals`) holds its name (the last one seen: renames and
//!   execs never add rows), its call total, and how many of its calls lost
//!   their row because the row map was full.
//! - `sched_process_fork`: a traced tree's new processes join the traced
//!   set with their root and parent (`-a`: every new process's parent, in an
//!   LRU map, for the ppid column of short-lived processes).
//! - `vsyscall:emulate_vsyscall` (x86_64): calls into the legacy page,
//!   which fire no syscall tracepoint.
//!
//! Bounds: `MAX_ROWS` count rows, `MAX_PROCS` traced processes and
//! process entries. A call whose row the full map refused still counts in
//! its process's total (`dropped`, reported per process as `unattributed`);
//! only a call that has neither is `lost` (`stats[REFUSED]`). With `-a` the
//! process entries are an LRU map: a full one pushes out the entry used
//! least recently (an exited or idle process), never fails an insert.
//! See doc/DESIGN.md ("What another process can do to the counts"). Offsets and attach points come from
//! `/sys/kernel/btf/vmlinux`; a kernel without BTF (or older than 5.11, the
//! first with `bpf_get_current_task_btf`, helper 158)
//! gets the perf engine instead.

pub mod insn;

use crate::arch::{self, Abi, TimeFn};
use crate::error::{Error, Result};
use crate::inspect::btf::Btf;
use crate::measure::sys::bpf as sys;
use crate::measure::trace::{Clock, Key, Tally};
use insn::{Alu, Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9};
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// Count rows the kernel map holds at most (processes × functions × clock ids).
pub const MAX_ROWS: u32 = 16_384;
/// Processes a traced tree may hold at once (and parents `-a` remembers).
pub const MAX_PROCS: u32 = 32_768;

const MAP_HASH: u32 = 1;
const MAP_PERCPU_HASH: u32 = 5;
const MAP_PERCPU_ARRAY: u32 = 6;
const MAP_LRU_HASH: u32 = 9;
const PROG_TRACING: u32 = 26;
const ATTACH_TRACE_RAW_TP: u32 = 23;
const NOEXIST: i32 = 1;

/// `stats` slots: count-row inserts the kernel refused (map full), and new
/// processes of a traced tree that could not join the traced set.
const REFUSED: u32 = 0;
const UNFOLLOWED: u32 = 1;

/// ABI codes in a key.
const ABI_NATIVE: u8 = 0;
const ABI_COMPAT: u8 = 1;
const ABI_VSYSCALL: u8 = 2;

/// Count-row key (24 bytes): tgid u32 | tid u32 (0 unless per thread) |
/// abi u8, function u8, clock kind u8 (`CLOCK_*`), pad u8 | clock id i32 |
/// process start u64 (ns since boot).
const KEY_SIZE: usize = 24;
/// Process key (16 bytes): tgid u32 | pad u32 | start u64.
const PKEY_SIZE: usize = 16;
/// Process value (32 bytes): calls u64 | dropped u64 | comm [u8; 16].
const PVAL_SIZE: usize = 32;
/// Traced-set value (16 bytes): root u32 | parent u32 | start in clock ticks
/// (what /proc/PID/stat says; 0: not checked).
const PROC_SIZE: usize = 16;
/// Stack slots (offsets from the frame pointer).
const KEY: i16 = -24;
const VALUE: i16 = -32;
const SMALL: i16 = -40;
const PKEY: i16 = -56;
const PVAL: i16 = -88;

/// Static clock ids a row keeps exactly (`Clock::of_id`, done in the kernel).
const STATIC_CLOCKS: i32 = crate::measure::trace::STATIC_CLOCKS as i32;

/// The clock kind byte of a key.
const CLOCK_NONE: u8 = 0;
const CLOCK_ID: u8 = 1;
const CLOCK_OTHER: u8 = 2;

/// Function codes in a key: the index in this table.
const FUNCTIONS: [TimeFn; 7] = [
    TimeFn::ClockGettime,
    TimeFn::ClockGettime64,
    TimeFn::Gettimeofday,
    TimeFn::Time,
    TimeFn::ClockGetres,
    TimeFn::ClockGetresTime64,
    TimeFn::Getcpu,
];

fn fn_code(f: TimeFn) -> u8 {
    FUNCTIONS.iter().position(|g| *g == f).unwrap_or(0) as u8
}

/// The word at key offset 8: ABI, function, whether a clock id follows
/// (`CLOCK_ID`; the program makes it `CLOCK_OTHER` for an unknown id).
fn key_word(abi: u8, f: TimeFn) -> i32 {
    let kind = if f.takes_clock() { CLOCK_ID } else { CLOCK_NONE };
    i32::from(abi) | i32::from(fn_code(f)) << 8 | i32::from(kind) << 16
}

/// Which processes are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every process on the host but vdsoctl.
    All,
    /// The processes added with `add_root` and every process they fork.
    Trees,
}

/// Offsets and attach points read from the kernel's BTF.
#[derive(Debug, Clone, Copy)]
struct Layout {
    sys_enter: u32,
    fork: u32,
    vsyscall: Option<u32>,
    arg0_native: i16,
    arg0_compat: i16,
    status: i16,
    compat_bit: i32,
    group_leader: i16,
    comm: i16,
    pid: i16,
    tgid: i16,
    /// `task_struct.start_boottime` (what /proc/PID/stat's start time is made of).
    start: i16,
}

impl Layout {
    fn read() -> Result<Layout> {
        let entry = arch::SYSCALL_ENTRY.ok_or_else(|| Error::Facility {
            errno: None,
            what: "the BPF engine does not know this architecture's syscall entry".into(),
            hint: "use `--engine perf`".into(),
        })?;
        let btf = Btf::vmlinux()?;
        let missing = |what: &str| {
            Error::Facility {
            errno: None,
            what: format!("the kernel's BTF has no {what}"),
            hint: "use `--engine perf` (the BPF engine needs Linux 5.11+ with CONFIG_DEBUG_INFO_BTF: tp_btf and bpf_get_current_task_btf)".into(),
        }
        };
        let off = |s: &str, path: &[&str]| -> Result<i16> {
            btf.offset_of(s, path)
                .and_then(|o| i16::try_from(o).ok())
                .ok_or_else(|| missing(&format!("{s}.{}", path.join("."))))
        };
        Ok(Layout {
            sys_enter: btf.typedef_id("btf_trace_sys_enter").ok_or_else(|| missing("btf_trace_sys_enter"))?,
            fork: btf
                .typedef_id("btf_trace_sched_process_fork")
                .ok_or_else(|| missing("btf_trace_sched_process_fork"))?,
            vsyscall: btf.typedef_id("btf_trace_emulate_vsyscall"),
            arg0_native: off("pt_regs", &[entry.arg0_native])?,
            arg0_compat: off("pt_regs", &[entry.arg0_compat])?,
            status: off("task_struct", &["thread_info", "status"])?,
            compat_bit: entry.compat_status_bit as i32,
            group_leader: off("task_struct", &["group_leader"])?,
            comm: off("task_struct", &["comm"])?,
            pid: off("task_struct", &["pid"])?,
            tgid: off("task_struct", &["tgid"])?,
            start: off("task_struct", &["start_boottime"]).or_else(|_| off("task_struct", &["real_start_time"]))?,
        })
    }
}

/// The maps the programs share.
#[derive(Debug)]
struct Maps {
    counts: sys::Map,
    procs: sys::Map,
    totals: sys::Map,
    stats: sys::Map,
}

/// Loaded programs, attached or not, and the maps they count into.
#[derive(Debug)]
pub struct BpfTracer {
    maps: Maps,
    progs: Vec<OwnedFd>,
    links: Vec<OwnedFd>,
    host: Abi,
}

impl BpfTracer {
    /// Create the maps and load the programs for `scope` (nothing counts
    /// until `attach`). Rows are per thread with `per_thread`.
    pub fn load(scope: Scope, per_thread: bool) -> Result<BpfTracer> {
        let host = arch::HOST_ABI.ok_or_else(|| Error::Facility {
            errno: None,
            what: "`trace` does not know this architecture's syscall numbers".into(),
            hint: "run on x86_64".into(),
        })?;
        let layout = Layout::read()?;
        let map = |spec: sys::MapSpec<'_>| sys::map_create(&spec).map_err(|e| refused("create a BPF map", e));
        let maps = Maps {
            counts: map(sys::MapSpec {
                map_type: MAP_PERCPU_HASH,
                key_size: KEY_SIZE as u32,
                value_size: 8,
                max_entries: MAX_ROWS,
                flags: 0,
                name: "vdsoctl_counts",
            })?,
            procs: map(sys::MapSpec {
                map_type: if scope == Scope::All { MAP_LRU_HASH } else { MAP_HASH },
                key_size: 4,
                value_size: PROC_SIZE as u32,
                max_entries: MAX_PROCS,
                flags: 0,
                name: "vdsoctl_procs",
            })?,
            totals: map(sys::MapSpec {
                map_type: if scope == Scope::All { MAP_LRU_HASH } else { MAP_HASH },
                key_size: PKEY_SIZE as u32,
                value_size: PVAL_SIZE as u32,
                max_entries: MAX_PROCS,
                flags: 0,
                name: "vdsoctl_totals",
            })?,
            stats: map(sys::MapSpec {
                map_type: MAP_PERCPU_ARRAY,
                key_size: 4,
                value_size: 8,
                max_entries: 2,
                flags: 0,
                name: "vdsoctl_stats",
            })?,
        };
        let own_tgid = std::process::id();
        let gen = Generator {
            layout,
            maps: &maps,
            scope,
            per_thread,
            host,
            own_tgid,
            ns_per_tick: crate::inspect::process::ns_per_tick() as i32,
        };
        let mut progs = vec![
            load_prog("vdsoctl_enter", layout.sys_enter, gen.sys_enter())?,
            load_prog("vdsoctl_fork", layout.fork, gen.fork())?,
        ];
        if let Some(id) = layout.vsyscall {
            progs.push(load_prog("vdsoctl_vsys", id, gen.vsyscall())?);
        }
        Ok(BpfTracer { maps, progs, links: Vec::new(), host })
    }

    /// Count `tgid` and everything it forks from now on (`Scope::Trees`).
    /// Its start time from /proc is checked on every call, so a process that
    /// takes the pid after it exits is not counted as it.
    pub fn add_root(&self, tgid: i32, ppid: Option<i32>) -> Result<()> {
        // In a time namespace /proc's start times are shifted and may round
        // differently: then the root is not checked (its children still are).
        let ticks = match crate::inspect::process::boottime_offset_ns() {
            0 => crate::inspect::process::start_ticks_of(tgid).unwrap_or(0),
            _ => 0,
        };
        let mut value = [(tgid as u32).to_ne_bytes(), (ppid.unwrap_or(0) as u32).to_ne_bytes()].concat();
        value.extend_from_slice(&ticks.to_ne_bytes());
        self.maps
            .procs
            .update(&(tgid as u32).to_ne_bytes(), &value, 0)
            .map_err(|e| refused("add a process to the traced set", e))
    }

    /// Start counting: attach every program (a link each).
    pub fn attach(&mut self) -> Result<()> {
        for p in &self.progs {
            self.links.push(sys::raw_tracepoint_open(p.as_fd()).map_err(|e| refused("attach a BPF program", e))?);
        }
        Ok(())
    }

    /// Stop counting: closing a link detaches its program in well under a
    /// millisecond (a perf tracepoint event waits for RCU grace periods).
    pub fn detach(&mut self) {
        self.links.clear();
    }

    /// Read every row summed over CPUs.
    pub fn snapshot(&self) -> Result<Tally> {
        let mut tally = Tally::default();
        let mut value = vec![0u8; self.maps.counts.value_size()];
        let read_err = |e: io::Error| Error::Facility {
            errno: None,
            what: format!("cannot read a BPF map: {}", crate::error::errno_text(&e)),
            hint: "retry; report it if it persists".into(),
        };
        let mut key = [0u8; KEY_SIZE];
        let mut prev: Option<[u8; KEY_SIZE]> = None;
        // A map under concurrent inserts may restart its walk; bound it.
        for _ in 0..=MAX_ROWS {
            if !self.maps.counts.next_key(prev.as_ref().map(|k| &k[..]), &mut key).map_err(read_err)? {
                break;
            }
            if self.maps.counts.lookup(&key, &mut value).map_err(read_err)? {
                let n = sum_per_cpu(&value);
                self.add_row(&mut tally, &key, n);
            }
            prev = Some(key);
        }
        // Per process: its name, and the calls whose row was refused.
        let mut pkey = [0u8; PKEY_SIZE];
        let mut pprev: Option<[u8; PKEY_SIZE]> = None;
        let mut pval = [0u8; PVAL_SIZE];
        let mut starts: std::collections::BTreeMap<i32, u64> = std::collections::BTreeMap::new();
        for _ in 0..=MAX_PROCS {
            if !self.maps.totals.next_key(pprev.as_ref().map(|k| &k[..]), &mut pkey).map_err(read_err)? {
                break;
            }
            if self.maps.totals.lookup(&pkey, &mut pval).map_err(read_err)? {
                let tgid = i32::from_ne_bytes([pkey[0], pkey[1], pkey[2], pkey[3]]);
                let start = u64::from_ne_bytes(pkey[8..16].try_into().unwrap_or([0; 8]));
                let dropped = u64::from_ne_bytes(pval[8..16].try_into().unwrap_or([0; 8]));
                if dropped > 0 {
                    *tally.unrecorded.entry(tgid).or_default() += dropped;
                }
                // A pid held by two processes in turn: the later one's name.
                if starts.get(&tgid).is_none_or(|s| *s <= start) {
                    starts.insert(tgid, start);
                    let comm = crate::measure::trace::Comm::from_bytes(&pval[16..32]).to_string();
                    tally.comms.insert(tgid, comm);
                }
            }
            pprev = Some(pkey);
        }
        let mut stats = vec![0u8; self.maps.stats.value_size()];
        for (slot, field) in [(REFUSED, 0), (UNFOLLOWED, 1)] {
            if self.maps.stats.lookup(&slot.to_ne_bytes(), &mut stats).map_err(read_err)? {
                let n = sum_per_cpu(&stats);
                if field == 0 {
                    tally.lost_records += n;
                } else {
                    tally.unfollowed += n;
                }
            }
        }
        // Parents of the processes seen (the traced set or, for -a, forks).
        let pids: Vec<i32> = tally.counts.keys().map(|k| k.pid).chain(tally.vsyscall.keys().map(|k| k.0)).collect();
        let mut info = [0u8; PROC_SIZE];
        for pid in pids {
            if tally.parents.contains_key(&pid) {
                continue;
            }
            if let Ok(true) = self.maps.procs.lookup(&(pid as u32).to_ne_bytes(), &mut info) {
                let ppid = u32::from_ne_bytes([info[4], info[5], info[6], info[7]]) as i32;
                if ppid > 0 {
                    tally.parents.insert(pid, ppid);
                }
            }
        }
        Ok(tally)
    }

    /// Delete the rows, process entries (and traced-set entries) of the
    /// processes `gone(pid, start)` names.
    pub fn forget(&self, gone: impl Fn(i32, u64) -> bool) {
        let doomed = |map: &sys::Map, start_at: usize, max: u32| {
            let mut key = vec![0u8; map.key_size()];
            let mut prev: Option<Vec<u8>> = None;
            let mut doomed: Vec<Vec<u8>> = Vec::new();
            for _ in 0..=max {
                match map.next_key(prev.as_deref(), &mut key) {
                    Ok(true) => {}
                    _ => break,
                }
                let tgid = i32::from_ne_bytes([key[0], key[1], key[2], key[3]]);
                let start = u64::from_ne_bytes(key[start_at..start_at + 8].try_into().unwrap_or([0; 8]));
                if gone(tgid, start) {
                    doomed.push(key.clone());
                }
                prev = Some(key.clone());
            }
            doomed
        };
        for k in doomed(&self.maps.counts, 16, MAX_ROWS) {
            let _ = self.maps.counts.delete(&k);
        }
        for k in doomed(&self.maps.totals, 8, MAX_PROCS) {
            let _ = self.maps.totals.delete(&k);
            let _ = self.maps.procs.delete(&k[..4]);
        }
    }

    fn add_row(&self, tally: &mut Tally, key: &[u8; KEY_SIZE], n: u64) {
        let word = |o: usize| u32::from_ne_bytes([key[o], key[o + 1], key[o + 2], key[o + 3]]);
        let (tgid, tid) = (word(0) as i32, word(4) as i32);
        let (abi, func, kind) = (key[8], key[9], key[10]);
        let Some(func) = FUNCTIONS.get(func as usize).copied() else { return };
        let start = u64::from_ne_bytes(key[16..24].try_into().unwrap_or([0; 8]));
        if abi == ABI_VSYSCALL {
            *tally.vsyscall.entry((tgid, func)).or_default() += n;
            return;
        }
        let abi = if abi == ABI_COMPAT { self.host.compat().unwrap_or(self.host) } else { self.host };
        let clock = match kind {
            CLOCK_ID => Clock::Id(i64::from(word(12) as i32)),
            CLOCK_OTHER => Clock::Other,
            _ => Clock::None,
        };
        let key = Key { pid: tgid, tid: (tid != 0).then_some(tid), abi, func, clock, comm: None, start };
        *tally.counts.entry(key).or_default() += n;
    }
}

fn sum_per_cpu(value: &[u8]) -> u64 {
    value.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))).fold(0u64, u64::wrapping_add)
}

/// A refused bpf(2) step, worded with the capability that is missing.
fn refused(step: &str, e: io::Error) -> Error {
    let caps = crate::inspect::process::own_capabilities();
    let lacking: Vec<&str> = [(39, "CAP_BPF"), (38, "CAP_PERFMON")]
        .into_iter()
        .filter(|(bit, _)| caps.is_some_and(|c| c & (1u64 << bit) == 0) && caps.is_some_and(|c| c & (1 << 21) == 0))
        .map(|(_, name)| name)
        .collect();
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) if !lacking.is_empty() => Error::Facility { errno: e.raw_os_error(),
            what: format!("BPF refused to {step}: {} missing", lacking.join(" and ")),
            hint: "run as root, or grant CAP_BPF and CAP_PERFMON (`setpriv --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon vdsoctl ...`, systemd AmbientCapabilities=)".into(),
        },
        Some(libc::ENOSYS) => Error::Facility { errno: e.raw_os_error(),
            what: "bpf(2) is not available: the kernel lacks CONFIG_BPF_SYSCALL or seccomp blocks it".into(),
            hint: "use `--engine perf`, or allow bpf(2) in the container's seccomp profile".into(),
        },
        _ => Error::Facility { errno: e.raw_os_error(),
            what: format!("BPF refused to {step}: {}", crate::error::errno_text(&e)),
            hint: "use `--engine perf`; a kernel older than 5.11 or a locked-down one may refuse tp_btf programs".into(),
        },
    }
}

fn load_prog(name: &str, attach_btf_id: u32, insns: std::result::Result<Vec<u64>, String>) -> Result<OwnedFd> {
    let insns = insns.map_err(|why| Error::Facility {
        errno: None,
        what: format!("BPF program {name} could not be assembled: {why}"),
        hint: "report it: this is a bug in vdsoctl".into(),
    })?;
    let spec = sys::ProgSpec {
        prog_type: PROG_TRACING,
        insns: &insns,
        expected_attach_type: ATTACH_TRACE_RAW_TP,
        attach_btf_id,
        name,
    };
    let mut log = vec![0u8; 1 << 16];
    sys::prog_load(&spec, &mut log).map_err(|e| match verifier_reason(&String::from_utf8_lossy(&log)) {
        None => refused(&format!("load {name}"), e),
        Some(reason) => Error::Facility {
            errno: None,
            what: format!("the BPF verifier rejected {name}: {reason}"),
            hint: "use `--engine perf`, and report the kernel version".into(),
        },
    })
}

/// The verifier's reason for a rejection: the last line of its log that is
/// not one of the statistics lines it ends with ("processed N insns …",
/// "verification time …", "stack depth …") — those say how far it got,
/// not why it stopped. With the instruction it stopped at, when the log
/// names one just before.
fn verifier_reason(log: &str) -> Option<String> {
    let statistics = |l: &str| {
        ["processed ", "verification time ", "stack depth ", "max_states_per_insn "].iter().any(|p| l.starts_with(p))
    };
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

/// Writes the programs for one layout, scope and map set.
struct Generator<'a> {
    layout: Layout,
    maps: &'a Maps,
    scope: Scope,
    per_thread: bool,
    host: Abi,
    own_tgid: u32,
    /// Divides a start time in ns into /proc's clock ticks.
    ns_per_tick: i32,
}

impl Generator<'_> {
    fn fd(map: &sys::Map) -> i32 {
        map.raw_fd()
    }

    /// `*(u64 *)R0 += 1`.
    fn bump(a: &mut Asm) {
        a.load(Size::Dw, R1, R0, 0).alu_imm(Alu::Add, R1, 1).store(Size::Dw, R0, 0, R1);
    }

    /// `stats[slot] += 1`.
    fn count_stat(&self, a: &mut Asm, slot: u32) {
        a.store_imm(Size::W, FP, SMALL, slot as i32)
            .load_map(R1, Self::fd(&self.maps.stats))
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(SMALL))
            .call(Helper::MapLookupElem)
            .jump_imm(Cond::Eq, R0, 0, "out");
        Self::bump(a);
    }

    /// Zero the key on the stack.
    fn zero_key(a: &mut Asm) {
        for i in 0..(KEY_SIZE as i16 / 8) {
            a.store_imm(Size::Dw, FP, KEY + 8 * i, 0);
        }
    }

    /// The row lookup-or-insert: bump the row `KEY` names and leave, or go
    /// to `refused` when the map holds no such row and takes no new one.
    fn count_row(&self, a: &mut Asm, tag: &str, refused: &str) {
        let lookup = |a: &mut Asm, label: &str| {
            a.load_map(R1, Self::fd(&self.maps.counts))
                .mov(R2, FP)
                .alu_imm(Alu::Add, R2, i32::from(KEY))
                .call(Helper::MapLookupElem)
                .jump_imm(Cond::Eq, R0, 0, label);
            Self::bump(a);
            a.goto("out");
        };
        let insert = format!("{tag}_insert");
        lookup(a, &insert);
        a.label(&insert)
            .store_imm(Size::Dw, FP, VALUE, 1)
            .load_map(R1, Self::fd(&self.maps.counts))
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(KEY))
            .mov(R3, FP)
            .alu_imm(Alu::Add, R3, i32::from(VALUE))
            .mov_imm(R4, NOEXIST)
            .call(Helper::MapUpdateElem)
            .jump_imm(Cond::Eq, R0, 0, "out");
        // Another CPU inserted the same row meanwhile (EEXIST), or the map is full.
        lookup(a, refused);
    }

    /// The shared tail: with R4 holding the key word (and the clock id
    /// stored), R9 the current task: fill pid and start time, check the
    /// traced set, count the call in its process's total (and keep its
    /// name there), then in its row.
    fn count_tail(&self, a: &mut Asm) {
        let l = self.layout;
        a.store(Size::W, FP, KEY + 8, R4);
        a.call(Helper::GetCurrentPidTgid).mov(R1, R0).alu_imm(Alu::Rsh, R1, 32);
        a.jump_imm(Cond::Eq, R1, self.own_tgid as i32, "out");
        a.store(Size::W, FP, KEY, R1);
        a.store(Size::W, FP, PKEY, R1);
        if self.per_thread {
            a.store(Size::W, FP, KEY + 4, R0);
        }
        // R8: the group leader; R7: its start time (the process's).
        a.load(Size::Dw, R8, R9, l.group_leader).load(Size::Dw, R7, R8, l.start);
        a.store(Size::Dw, FP, KEY + 16, R7).store_imm(Size::W, FP, PKEY + 4, 0).store(Size::Dw, FP, PKEY + 8, R7);
        if self.scope == Scope::Trees {
            a.store(Size::W, FP, SMALL, R1)
                .load_map(R1, Self::fd(&self.maps.procs))
                .mov(R2, FP)
                .alu_imm(Alu::Add, R2, i32::from(SMALL))
                .call(Helper::MapLookupElem)
                .jump_imm(Cond::Eq, R0, 0, "out");
            // The traced process, not one that took its pid after it exited.
            a.load(Size::Dw, R2, R0, 8)
                .jump_imm(Cond::Eq, R2, 0, "traced")
                .mov(R3, R7)
                .alu_imm(Alu::Div, R3, self.ns_per_tick)
                .jump_reg(Cond::Ne, R3, R2, "out")
                .label("traced");
        }
        // The process's entry: find or make it.
        let proc_lookup = |a: &mut Asm| {
            a.load_map(R1, Self::fd(&self.maps.totals))
                .mov(R2, FP)
                .alu_imm(Alu::Add, R2, i32::from(PKEY))
                .call(Helper::MapLookupElem);
        };
        proc_lookup(a);
        a.jump_imm(Cond::Ne, R0, 0, "have_proc");
        for i in 0..(PVAL_SIZE as i16 / 8) {
            a.store_imm(Size::Dw, FP, PVAL + 8 * i, 0);
        }
        a.load_map(R1, Self::fd(&self.maps.totals))
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(PKEY))
            .mov(R3, FP)
            .alu_imm(Alu::Add, R3, i32::from(PVAL))
            .mov_imm(R4, NOEXIST)
            .call(Helper::MapUpdateElem);
        proc_lookup(a);
        a.jump_imm(Cond::Ne, R0, 0, "have_proc");
        // No entry (the traced set's map is full): the row alone, and a
        // call that gets neither is lost.
        self.count_row(a, "bare", "lost");
        a.label("lost");
        self.count_stat(a, REFUSED);
        a.goto("out");
        // R6: the entry. Total += 1, the name as of now.
        a.label("have_proc").mov(R6, R0).mov_imm(R1, 1).atomic_add(R6, 0, R1);
        a.load(Size::Dw, R2, R8, l.comm).store(Size::Dw, R6, 16, R2).load(Size::Dw, R2, R8, l.comm + 8).store(
            Size::Dw,
            R6,
            24,
            R2,
        );
        self.count_row(a, "row", "dropped");
        // The row map is full: the call stays in the total, marked as
        // having no row.
        a.label("dropped").mov_imm(R1, 1).atomic_add(R6, 8, R1);
        a.label("out").mov_imm(R0, 0).exit();
    }

    /// `tp_btf/sys_enter(struct pt_regs *regs, long id)`.
    fn sys_enter(&self) -> std::result::Result<Vec<u64>, String> {
        let l = self.layout;
        let native = self.host.clock_syscalls();
        let compat = self.host.compat().map_or(&[][..], Abi::clock_syscalls);
        let mut a = Asm::new();
        a.mov(R6, R1).load(Size::Dw, R7, R6, 8);
        // Every other syscall leaves after these compares: the tax on them.
        let mut all: Vec<i64> = native.iter().chain(compat).map(|(_, n)| *n).collect();
        all.sort_unstable();
        all.dedup();
        for n in &all {
            a.jump_imm(Cond::Eq, R7, *n as i32, "clock");
        }
        a.mov_imm(R0, 0).exit();
        a.label("clock").call(Helper::GetCurrentTaskBtf).mov(R9, R0);
        a.load(Size::Dw, R8, R6, 0);
        Self::zero_key(&mut a);
        a.load(Size::W, R2, R9, l.status).alu_imm(Alu::And, R2, l.compat_bit);
        a.jump_imm(Cond::Ne, R2, 0, "compat");
        a.load(Size::Dw, R3, R8, l.arg0_native);
        for (f, n) in native {
            a.jump_imm(Cond::Ne, R7, *n as i32, &format!("n{n}")).mov_imm(R4, key_word(ABI_NATIVE, *f)).goto("have");
            a.label(&format!("n{n}"));
        }
        a.goto("out");
        a.label("compat").load(Size::Dw, R3, R8, l.arg0_compat);
        for (f, n) in compat {
            a.jump_imm(Cond::Ne, R7, *n as i32, &format!("c{n}")).mov_imm(R4, key_word(ABI_COMPAT, *f)).goto("have");
            a.label(&format!("c{n}"));
        }
        a.goto("out");
        // clockid_t is an int in both ABIs: the low 32 bits, sign-extended.
        // A static id (0..MAX_CLOCKS) is kept; any other (CPU clocks of
        // other tasks and fd clocks are negative, invalid ids) folds into
        // one `other` row (id 0). Negative ids compare as huge unsigned.
        a.label("have").mov(R5, R4).alu_imm(Alu::And, R5, 1 << 16).jump_imm(Cond::Eq, R5, 0, "tail");
        a.alu_imm(Alu::Lsh, R3, 32).alu_imm(Alu::Arsh, R3, 32);
        a.jump_imm(Cond::Gt, R3, STATIC_CLOCKS - 1, "other").store(Size::W, FP, KEY + 12, R3).goto("tail");
        a.label("other").alu_imm(Alu::Add, R4, i32::from(CLOCK_OTHER - CLOCK_ID) << 16);
        a.label("tail");
        self.count_tail(&mut a);
        a.finish()
    }

    /// `tp_btf/emulate_vsyscall(int nr)`: 0 gettimeofday, 1 time, 2 getcpu.
    fn vsyscall(&self) -> std::result::Result<Vec<u64>, String> {
        let mut a = Asm::new();
        a.load(Size::Dw, R7, R1, 0);
        a.call(Helper::GetCurrentTaskBtf).mov(R9, R0);
        Self::zero_key(&mut a);
        for (nr, f) in arch::vsyscall::SLOTS.iter().enumerate() {
            a.jump_imm(Cond::Ne, R7, nr as i32, &format!("v{nr}")).mov_imm(R4, key_word(ABI_VSYSCALL, *f)).goto("tail");
            a.label(&format!("v{nr}"));
        }
        a.goto("out");
        a.label("tail");
        self.count_tail(&mut a);
        a.finish()
    }

    /// `tp_btf/sched_process_fork(struct task_struct *parent, struct task_struct *child)`.
    fn fork(&self) -> std::result::Result<Vec<u64>, String> {
        let l = self.layout;
        let mut a = Asm::new();
        a.mov(R6, R1).load(Size::Dw, R7, R6, 8).load(Size::Dw, R8, R6, 0);
        // A new thread shares its creator's tgid: nothing to do.
        a.load(Size::W, R1, R7, l.pid).load(Size::W, R2, R7, l.tgid).jump_reg(Cond::Ne, R1, R2, "out");
        // Key: the child's tgid; value: (root, parent's tgid, the child's
        // start in clock ticks).
        a.store(Size::W, FP, -32, R2);
        a.load(Size::Dw, R4, R7, l.start).alu_imm(Alu::Div, R4, self.ns_per_tick).store(Size::Dw, FP, -16, R4);
        a.load(Size::W, R3, R8, l.tgid).store(Size::W, FP, -20, R3);
        if self.scope == Scope::Trees {
            a.store(Size::W, FP, -28, R3)
                .load_map(R1, Self::fd(&self.maps.procs))
                .mov(R2, FP)
                .alu_imm(Alu::Add, R2, -28)
                .call(Helper::MapLookupElem)
                .jump_imm(Cond::Eq, R0, 0, "out")
                .load(Size::W, R1, R0, 0)
                .store(Size::W, FP, -24, R1);
            // The traced parent, not one that took its pid after it exited.
            a.load(Size::Dw, R2, R0, 8)
                .jump_imm(Cond::Eq, R2, 0, "traced")
                .load(Size::Dw, R3, R8, l.group_leader)
                .load(Size::Dw, R3, R3, l.start)
                .alu_imm(Alu::Div, R3, self.ns_per_tick)
                .jump_reg(Cond::Ne, R3, R2, "out")
                .label("traced");
        } else {
            a.store(Size::W, FP, -24, R2);
        }
        a.load_map(R1, Self::fd(&self.maps.procs))
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, -32)
            .mov(R3, FP)
            .alu_imm(Alu::Add, R3, -24)
            .mov_imm(R4, 0)
            .call(Helper::MapUpdateElem)
            .jump_imm(Cond::Eq, R0, 0, "out");
        if self.scope == Scope::Trees {
            self.count_stat(&mut a, UNFOLLOWED);
        }
        a.label("out").mov_imm(R0, 0).exit();
        a.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::verifier_reason;

    #[test]
    fn the_verifier_reason_is_not_its_statistics() {
        // A log as 6.x writes it for a rejected program: the reason, then
        // the statistics.
        let log = "func#0 @0\n0: R1=ctx() R10=fp0\n0: (79) r2 = *(u64 *)(r1 +8)\n1: (85) call bpf_map_lookup_elem#1\nR1 type=ctx expected=map_ptr\nprocessed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0\n\0\0";
        assert_eq!(
            verifier_reason(log).as_deref(),
            Some("R1 type=ctx expected=map_ptr (at 1: (85) call bpf_map_lookup_elem#1)")
        );
        assert_eq!(verifier_reason("invalid argument\n").as_deref(), Some("invalid argument"));
        assert_eq!(verifier_reason("processed 0 insns\nverification time 5 usec\nstack depth 0\n\0"), None);
        assert_eq!(verifier_reason(""), None);
    }
}
