//! The in-kernel trace engine: BPF programs on the `sys_enter` raw
//! tracepoint (`tp_btf`) count clock syscalls in a per-CPU hash keyed by
//! (process, start time, ABI, function, clock), so nothing is sampled,
//! nothing is lost to a ring buffer, and 32-bit tasks are split as exactly as
//! 64-bit ones. Measured (`../shared/TRACE-ENGINE.md`, scripts/bench-trace.sh): the
//! cost of perf stat's single filtered counter with the full split, ~ms of
//! fixed cost, no RCU grace period at exit.
//!
//! Programs:
//! - `sys_enter`: the clock syscalls of both ABIs, by the tracepoint's `id`.
//!   The ABI is the task's compat mark (`arch::SyscallEntry`: x86_64
//!   `thread_info.status & TS_COMPAT`, exact also for `int 0x80` from
//!   64-bit code; arm64 `thread_info.flags & _TIF_32BIT`); the clock id
//!   comes from the ABI's first-argument register (`di`/`bx`, `regs[0]`).
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
//! - `vsyscall:emulate_vsyscall` (x86_64 only): calls into the legacy page,
//!   which fire no syscall tracepoint.
//! - `sched_process_exec`: what a traced process's exec ran, its path and
//!   arguments ([`execs`]), for one gone before a look read it. Optional:
//!   a kernel that refuses it, or vdsoctl in a pid namespace, loses only
//!   that.
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

pub mod disasm;
mod execs;
mod fentry;
mod files;
pub use fentry::FentryPoints;
mod gen;
pub mod insn;
mod layout;
pub mod sample;
mod sites;
mod stacks;
mod verifier;

use crate::arch::{self, Abi};
use crate::error::{BpfStep, Error, Facility, FentryCause, Hint, Lockdown, Result, LOCKDOWN};
use crate::inspect::cgroup::CgroupDir;
use crate::measure::sys::bpf as sys;
use crate::measure::trace::{Clock, Key, Tally};
use fentry::ATTACH_TRACE_FENTRY;
use gen::{Generator, MapFds};
use layout::{
    key, pkey, proc_key, proc_val, pval, Layout, ABI_COMPAT, ABI_VSYSCALL, CLOCK_ID, CLOCK_OTHER, CLOCK_RANDOM,
    FUNCTIONS,
};
use sites::SiteMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// Count rows the kernel map holds at most (processes × functions × clock ids).
pub const MAX_ROWS: u32 = 16_384;
/// Processes a traced tree may hold at once (and parents `-a` remembers).
pub const MAX_PROCS: u32 = 32_768;

const MAP_HASH: u32 = 1;
const MAP_ARRAY: u32 = 2;
const MAP_PERCPU_HASH: u32 = 5;
const MAP_PERCPU_ARRAY: u32 = 6;
const MAP_LRU_HASH: u32 = 9;
const MAP_CGROUP_ARRAY: u32 = 8;
/// `--cgroup` directories a trace takes at most (one helper call each per
/// clock syscall).
pub const MAX_CGROUPS: usize = 16;
const PROG_TRACING: u32 = 26;
const ATTACH_TRACE_RAW_TP: u32 = 23;
/// `stats` slots: count-row inserts the kernel refused (map full), and new
/// processes of a traced tree that could not join the traced set.
const REFUSED: u32 = 0;
const UNFOLLOWED: u32 = 1;
/// `stats` slot: calls whose site row the full `sites` map refused (`--sites`).
const SITES_REFUSED: u32 = 3;
/// Call-site rows the `sites` map holds at most (`--sites`).
pub const MAX_SITES: u32 = 16_384;

/// The stack-word filter's bit for calls made from `ip` (`layout::unread`).
pub use layout::unread::bit as unread_bit;

/// Which processes are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every process on the host but vdsoctl.
    All,
    /// The processes added with `add_root` and every process they fork.
    Trees,
}

/// The maps the programs share.
#[derive(Debug)]
struct Maps {
    counts: sys::Map,
    procs: sys::Map,
    totals: sys::Map,
    stats: sys::Map,
    /// The `--cgroup` directories, when given.
    cgroups: Option<sys::Map>,
    /// `--sites`: rows split by call site.
    sites: Option<Box<SiteMap>>,
    /// `--stacks`.
    stacks: Option<stacks::StackMaps>,
    /// `--sites` or `--stacks`: each address's mapping, captured at its
    /// site's or stack's first call ([`files`]).
    files: Option<sys::Map>,
    /// What each exec ran ([`execs`]); `None` where it is not captured.
    execs: Option<execs::ExecMaps>,
}

/// Loaded programs, attached or not, and the maps they count into.
#[derive(Debug)]
pub struct BpfTracer {
    maps: Maps,
    progs: Vec<OwnedFd>,
    links: Vec<OwnedFd>,
    host: Abi,
    /// Attached to the clock syscall functions (`fentry`), not `sys_enter`.
    fentry: bool,
    /// `--stacks`' frames captured in a `bpf_loop` (not unrolled, not dropped).
    frames_looped: bool,
}

/// What [`BpfTracer::load`] builds.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    pub scope: Scope,
    /// Rows per thread.
    pub per_thread: bool,
    /// Count each call's user stack too.
    pub stacks: bool,
    /// Count only tasks in these cgroups (or below).
    pub cgroups: &'a [CgroupDir],
    /// Split rows by call site.
    pub sites: bool,
    /// Attach to these clock syscall functions (`fentry`) rather than `sys_enter`.
    pub fentry: Option<&'a FentryPoints>,
}

/// A per-CPU hash of u64 counters keyed by `key_size` bytes: the rows,
/// the sites and the stack rows.
pub(super) fn counters(key_size: usize, max_entries: u32, name: &str) -> sys::MapSpec<'_> {
    sys::MapSpec { map_type: MAP_PERCPU_HASH, key_size: key_size as u32, value_size: 8, max_entries, flags: 0, name }
}

impl Maps {
    /// Create the maps a load asks for: the rows, the traced set, the
    /// process totals and stats always; cgroups, sites and stacks when asked.
    fn create(o: &Options<'_>) -> Result<Maps> {
        let scope = o.scope;
        let map = |spec: sys::MapSpec<'_>| sys::map_create(&spec).map_err(|e| refused(BpfStep::CreateMap, e));
        Ok(Maps {
            counts: map(counters(key::SIZE, MAX_ROWS, "vdsoctl_counts"))?,
            procs: map(sys::MapSpec {
                map_type: if scope == Scope::All { MAP_LRU_HASH } else { MAP_HASH },
                key_size: proc_key::SIZE as u32,
                value_size: proc_val::SIZE as u32,
                max_entries: MAX_PROCS,
                flags: 0,
                name: "vdsoctl_procs",
            })?,
            totals: map(sys::MapSpec {
                map_type: if scope == Scope::All { MAP_LRU_HASH } else { MAP_HASH },
                key_size: pkey::SIZE as u32,
                value_size: pval::SIZE as u32,
                max_entries: MAX_PROCS,
                flags: 0,
                name: "vdsoctl_totals",
            })?,
            stats: map(sys::MapSpec {
                map_type: MAP_PERCPU_ARRAY,
                key_size: 4,
                value_size: 8,
                max_entries: 4,
                flags: 0,
                name: "vdsoctl_stats",
            })?,
            cgroups: cgroup_map(o.cgroups)?,
            sites: if o.sites { Some(Box::new(SiteMap::create(map)?)) } else { None },
            stacks: if o.stacks { Some(stacks::StackMaps::create(map)?) } else { None },
            // Without it (a kernel without the map), addresses are named by the looks only.
            files: if o.sites || o.stacks { files::create(map).ok() } else { None },
            // Without them, what a process ran is read by the looks only.
            execs: execs::ExecMaps::create(map).ok(),
        })
    }
}

impl BpfTracer {
    /// Create the maps and load the programs `o` asks for (nothing counts
    /// until `attach`): see [`Options`].
    pub fn load(o: &Options<'_>) -> Result<BpfTracer> {
        let (scope, per_thread, cgroups) = (o.scope, o.per_thread, o.cgroups);
        let (host, entry) = kernel_entry()?;
        let layout = Layout::read(entry)?;
        let mut maps = Maps::create(o)?;
        let own_tgid = std::process::id();
        let fds = MapFds {
            counts: maps.counts.raw_fd(),
            procs: maps.procs.raw_fd(),
            totals: maps.totals.raw_fd(),
            stats: maps.stats.raw_fd(),
            cgroups: maps.cgroups.as_ref().map(sys::Map::raw_fd),
        };
        let gen = Generator {
            layout,
            maps: fds,
            scope,
            per_thread,
            host,
            own_tgid,
            ns_per_tick: crate::inspect::process::ns_per_tick() as i32,
            pidns: crate::inspect::process::own_pid_namespace(),
            cgroup_count: cgroups.len() as u32,
            sites: maps.sites.as_ref().map(|s| gen::SiteFds {
                map: s.map.raw_fd(),
                unread: s.unread.raw_fd(),
                files: maps.files.as_ref().map(sys::Map::raw_fd),
            }),
            stacks: maps.stacks.as_ref().map(|s| s.fds(maps.files.as_ref().map(sys::Map::raw_fd))),
        };
        // The exec capture, in the initial pid namespace (its key is the
        // pid as numbered there); a kernel that refuses it loses only the
        // capture: what a process ran is then read by the looks alone.
        let exec = layout.exec.zip(maps.execs.as_ref()).filter(|_| gen.pidns.is_none());
        let exec = exec.map(|(x, m)| (x.tracepoint, gen.exec(m.fds())));
        // Whether `--stacks`' frames are captured in the loop (the fallbacks below unset it).
        let mut frames_looped = gen.stacks.is_some_and(|s| s.looped && s.files.is_some());
        let progs = match load_programs(&gen, &layout, o.fentry) {
            // A kernel before bpf_find_vma (5.17) refuses the captures:
            // load without them (sites and stacks named by the looks only);
            // one that refuses only `--stacks`' frame loop (a callback's
            // own callback), with the frames' capture unrolled first.
            Err(e) if maps.files.is_some() => {
                let mut gen = gen;
                let unrolled = gen.stacks.filter(|s| s.looped).map(|s| stacks::StackFds { looped: false, ..s });
                frames_looped = false;
                let retried = unrolled.and_then(|s| {
                    gen.stacks = Some(s);
                    load_programs(&gen, &layout, o.fentry).ok()
                });
                match retried {
                    Some(progs) => progs,
                    None => {
                        gen.sites = gen.sites.map(|s| gen::SiteFds { files: None, ..s });
                        gen.stacks = gen.stacks.map(|s| stacks::StackFds { files: None, ..s });
                        load_programs(&gen, &layout, o.fentry).map_err(|_| e)?
                    }
                }
            }
            r => r?,
        };
        let mut progs = progs;
        match exec.map(|(tracepoint, insns)| load_prog("vdsoctl_exec", tracepoint, insns)) {
            Some(Ok(prog)) => progs.push(prog),
            _ => maps.execs = None,
        }
        Ok(BpfTracer { maps, progs, links: Vec::new(), host, fentry: o.fentry.is_some(), frames_looped })
    }

    /// Whether `--stacks`' frames are captured in a `bpf_loop` (false:
    /// unrolled or not captured, a kernel refused the loop).
    pub fn frames_looped(&self) -> bool {
        self.frames_looped
    }

    /// Whether the programs are on the clock syscall functions (`fentry`).
    pub fn is_fentry(&self) -> bool {
        self.fentry
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
        let mut key = [0u8; proc_key::SIZE];
        proc_key::TGID.set(&mut key, u64::from(tgid as u32));
        let mut value = [0u8; proc_val::SIZE];
        proc_val::ROOT.set(&mut value, u64::from(tgid as u32));
        proc_val::PARENT.set(&mut value, u64::from(ppid.unwrap_or(0) as u32));
        proc_val::START_TICKS.set(&mut value, ticks);
        self.maps.procs.update(&key, &value, 0).map_err(|e| refused(BpfStep::AddProcess, e))
    }

    /// Start counting: attach every program (a link each).
    pub fn attach(&mut self) -> Result<()> {
        for p in &self.progs {
            self.links.push(sys::raw_tracepoint_open(p.as_fd()).map_err(|e| refused(BpfStep::Attach, e))?);
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
            what: Facility::BpfMapRead { source: e },
            hint: Hint::RetryOrReport,
        };
        for key in self.maps.counts.keys(MAX_ROWS + 1) {
            let key = key.map_err(read_err)?;
            if self.maps.counts.lookup(&key, &mut value).map_err(read_err)? {
                let n = sum_per_cpu(&value);
                self.add_row(&mut tally, &key, n);
            }
        }
        // Per process: its name, and the calls whose row was refused.
        let mut pval = [0u8; pval::SIZE];
        let mut starts: std::collections::BTreeMap<i32, u64> = std::collections::BTreeMap::new();
        for pkey in self.maps.totals.keys(MAX_PROCS + 1) {
            let pkey = pkey.map_err(read_err)?;
            if self.maps.totals.lookup(&pkey, &mut pval).map_err(read_err)? {
                let tgid = pkey::TGID.get(&pkey) as u32 as i32;
                let start = pkey::START.get(&pkey);
                let dropped = pval::DROPPED.get(&pval);
                if dropped > 0 {
                    *tally.unrecorded.entry(tgid).or_default() += dropped;
                }
                // A pid held by two processes in turn: the later one's name.
                if starts.get(&tgid).is_none_or(|s| *s <= start) {
                    starts.insert(tgid, start);
                    let comm_at = pval::COMM[0].off as usize;
                    let comm = crate::measure::trace::Comm::from_bytes(&pval[comm_at..]).to_string();
                    tally.comms.insert(tgid, comm);
                }
            }
        }
        let mut stats = vec![0u8; self.maps.stats.value_size()];
        self.read_sites(&mut tally).map_err(read_err)?;
        for slot in [REFUSED, UNFOLLOWED, stacks::STACK_LOST, SITES_REFUSED] {
            if self.maps.stats.lookup(&slot.to_ne_bytes(), &mut stats).map_err(read_err)? {
                let n = sum_per_cpu(&stats);
                match slot {
                    REFUSED => tally.lost_records += n,
                    UNFOLLOWED => tally.unfollowed += n,
                    SITES_REFUSED => tally.sites_lost += n,
                    _ => tally.stacks_lost += n,
                }
            }
        }
        self.read_skips(&mut tally).map_err(read_err)?;
        if let Some(stacks) = &self.maps.stacks {
            stacks.read(&mut tally).map_err(read_err)?;
        }
        if let Some(files) = &self.maps.files {
            tally.mapped = files::read(files).map_err(read_err)?;
        }
        if let Some(execs) = &self.maps.execs {
            tally.execs = execs.read().map_err(read_err)?;
        }
        // Parents of the processes seen (the traced set or, for -a, forks).
        let pids = tally.pids();
        let mut info = [0u8; proc_val::SIZE];
        for pid in pids {
            if tally.parents.contains_key(&pid) {
                continue;
            }
            let mut key = [0u8; proc_key::SIZE];
            proc_key::TGID.set(&mut key, u64::from(pid as u32));
            if let Ok(true) = self.maps.procs.lookup(&key, &mut info) {
                let ppid = proc_val::PARENT.get(&info) as u32 as i32;
                if ppid > 0 {
                    tally.parents.insert(pid, ppid);
                }
            }
        }
        Ok(tally)
    }

    /// The runs of the programs the kernel skipped since they were loaded
    /// (`recursion_misses`): a counting program's are calls perhaps not
    /// counted (`skipped_runs`), the fork program's new processes perhaps
    /// not followed (`unfollowed`); the exec capture's lose only a name.
    /// Linux skips a run when another run of the same program is under way
    /// on that CPU: where the programs run preemptible (7.x's syscall
    /// tracepoints and every fentry trampoline take migrate_disable, not
    /// preempt_disable; PREEMPT_RT), a task preempted inside one makes the
    /// others on its CPU skip it until it runs again.
    fn read_skips(&self, tally: &mut Tally) -> io::Result<()> {
        for p in &self.progs {
            let info = sys::prog_info(p.as_fd())?;
            match info.name.as_str() {
                "vdsoctl_fork" => tally.unfollowed += info.recursion_misses,
                "vdsoctl_exec" => {}
                _ => tally.skipped_runs += info.recursion_misses,
            }
        }
        Ok(())
    }

    /// The processes counted so far, as (tgid, start): the keys of the
    /// process entries (no values are read).
    pub fn processes(&self) -> Vec<(i32, u64)> {
        let keys = self.maps.totals.keys(MAX_PROCS + 1).map_while(io::Result::ok);
        keys.map(|key| (pkey::TGID.get(&key) as u32 as i32, pkey::START.get(&key))).collect()
    }

    /// Delete the rows, process entries (and traced-set entries) of the
    /// processes `gone(pid, start)` names.
    pub fn forget(&self, gone: impl Fn(i32, u64) -> bool) {
        let doomed = |map: &sys::Map, tgid_at: layout::Slot, start_at: layout::Slot, max: u32| -> Vec<Vec<u8>> {
            let keys = map.keys(max + 1).map_while(io::Result::ok);
            keys.filter(|key| gone(tgid_at.get(key) as u32 as i32, start_at.get(key))).collect()
        };
        for k in doomed(&self.maps.counts, key::TGID, key::START, MAX_ROWS) {
            let _ = self.maps.counts.delete(&k);
        }
        if let Some(sites) = &self.maps.sites {
            for k in doomed(&sites.map, key::TGID, key::START, MAX_SITES) {
                let _ = sites.map.delete(&k);
            }
        }
        // The captured mappings: (tgid, pad, start, address).
        if let Some(files) = &self.maps.files {
            for k in doomed(
                files,
                layout::Slot { off: 0, size: insn::Size::W },
                layout::Slot { off: 8, size: insn::Size::Dw },
                files::MAX_FILES,
            ) {
                let _ = files.delete(&k);
            }
        }
        for k in doomed(&self.maps.totals, pkey::TGID, pkey::START, MAX_PROCS) {
            let _ = self.maps.totals.delete(&k);
            let mut pk = [0u8; proc_key::SIZE];
            proc_key::TGID.set(&mut pk, pkey::TGID.get(&k));
            let _ = self.maps.procs.delete(&pk);
        }
    }

    fn add_row(&self, tally: &mut Tally, k: &[u8], n: u64) {
        match Self::row_key(self.host, k) {
            Some(Ok(key)) => *tally.counts.entry(key).or_default() += n,
            Some(Err(vsyscall)) => *tally.vsyscall.entry(vsyscall).or_default() += n,
            None => {}
        }
    }

    /// A count-row key decoded: a row, or a [vsyscall] (pid, function).
    fn row_key(host: Abi, k: &[u8]) -> Option<std::result::Result<Key, (i32, arch::VdsoFn)>> {
        let (tgid, tid) = (key::TGID.get(k) as u32 as i32, key::TID.get(k) as u32 as i32);
        let (abi, func, kind) = layout::split_word(key::WORD.get(k));
        let func = FUNCTIONS.get(func as usize).copied()?;
        let start = key::START.get(k);
        if abi == ABI_VSYSCALL {
            return Some(Err((tgid, func)));
        }
        let abi = if abi == ABI_COMPAT { host.compat().unwrap_or(host) } else { host };
        let clock = match kind {
            CLOCK_ID => Clock::Id(i64::from(key::CLOCK.get(k) as u32 as i32)),
            CLOCK_OTHER => Clock::Other,
            CLOCK_RANDOM => Clock::Random(crate::measure::trace::RandomCall::of_code(key::CLOCK.get(k))),
            _ => Clock::None,
        };
        Some(Ok(Key { pid: tgid, tid: (tid != 0).then_some(tid), abi, func, clock, comm: None, start }))
    }
}

/// An empty program on `sys_enter` (it returns at once), attached while
/// this lives: the floor of what any program there costs every syscall of
/// the host — scripts/bench-trace.sh measures the engine's tax against it.
/// With `read_stack_word`, it reads the word at the user stack pointer
/// (`bpf_probe_read_user`, 8 bytes, as `--sites` does) and nothing else:
/// the floor of naming a leaf's caller.
#[derive(Debug)]
pub struct EmptySysEnter {
    _prog: OwnedFd,
    _link: OwnedFd,
}

impl EmptySysEnter {
    /// Load and attach it (CAP_BPF + CAP_PERFMON, kernel BTF).
    pub fn attach(read_stack_word: bool) -> Result<EmptySysEnter> {
        let btf = crate::inspect::btf::Btf::vmlinux()?;
        let id = btf.typedef_id("btf_trace_sys_enter").ok_or_else(|| Error::Facility {
            errno: None,
            what: Facility::BtfMissing { what: "btf_trace_sys_enter".into(), unknown: None },
            hint: Hint::BpfNeedsBtf,
        })?;
        let mut a = insn::Asm::new();
        if read_stack_word {
            use insn::{Size, FP, R1, R6};
            let layout = Layout::read(kernel_entry()?.1)?;
            let Some((_, sp)) = layout.site else {
                return Err(Error::Facility {
                    errno: None,
                    what: Facility::UnknownStackPointer,
                    hint: Hint::BpfUsePerf,
                });
            };
            a.load(Size::Dw, R6, R1, 0).store_imm(Size::Dw, FP, -8, 0);
            Generator::read_stack_word(&mut a, R6, sp, -8);
        }
        a.mov_imm(insn::R0, 0).exit();
        let prog = load_prog("vdsoctl_empty", id, a.finish())?;
        let link = sys::raw_tracepoint_open(prog.as_fd()).map_err(|e| refused(BpfStep::Attach, e))?;
        Ok(EmptySysEnter { _prog: prog, _link: link })
    }
}

/// The programs: on the clock syscall functions (`fentry`) or on
/// `sys_enter`, then `sched_process_fork` and the vsyscall emulation.
/// The vsyscall program is verified on a thread of its own while the
/// others load: with `--sites` and `--stacks` both carry the capture, and
/// the kernel verifies the two at once (issue 43: the start's dearest step;
/// doc/BENCHMARKS.md).
fn load_programs(gen: &Generator, layout: &Layout, fentry: Option<&FentryPoints>) -> Result<Vec<OwnedFd>> {
    let vsys = layout.vsyscall.map(|id| (id, gen.vsyscall()));
    std::thread::scope(|s| {
        let vsys = vsys.map(|(id, insns)| s.spawn(move || load_prog("vdsoctl_vsys", id, insns)));
        let mut progs = Vec::new();
        if let Some(points) = fentry {
            for p in &points.0 {
                let name = format!("vdsoctl_fe{}_{}", p.abi, layout::fn_code(p.func));
                let prog = load_prog_as(&name, ATTACH_TRACE_FENTRY, p.btf_id, gen.fentry(p));
                progs.push(prog.map_err(|e| fentry_refused(p.name, e))?);
            }
        } else {
            progs.push(load_prog("vdsoctl_enter", layout.sys_enter, gen.sys_enter())?);
        }
        progs.push(load_prog("vdsoctl_fork", layout.fork, gen.fork())?);
        if let Some(loading) = vsys {
            let loaded = loading.join().unwrap_or_else(|_| {
                Err(Error::Facility {
                    errno: None,
                    what: Facility::BpfAssemble {
                        prog: "vdsoctl_vsys".into(),
                        why: "its loader thread panicked".into(),
                    },
                    hint: "report it: this is a bug in vdsoctl".into(),
                })
            });
            progs.push(loaded?);
        }
        Ok(progs)
    })
}

/// An fentry program the kernel refused: a locked-down kernel refuses
/// them all (EPERM), one without BPF trampolines too (ENOTSUPP). The
/// refusal says what was observed: the lockdown mode where securityfs
/// shows it, else the errno and its likely causes.
fn fentry_refused(function: &str, e: Error) -> Error {
    let errno = match &e {
        Error::Facility { errno, .. } => *errno,
        _ => None,
    };
    let cause = match errno {
        Some(libc::EPERM) => FentryCause::Eperm(eperm_cause(std::fs::read_to_string(LOCKDOWN).ok().as_deref())),
        Some(524) => FentryCause::NoTrampolines,
        _ => FentryCause::Failed { source: Box::new(e), function: function.to_string() },
    };
    Error::Facility { errno, what: Facility::FentryRefused { cause }, hint: Hint::FentryRefused }
}

/// Why fentry got EPERM, from [`LOCKDOWN`]'s text (`None`: no such file).
fn eperm_cause(lockdown: Option<&str>) -> Lockdown {
    Lockdown::read(lockdown)
}

/// The `--cgroup` directories as a `BPF_MAP_TYPE_CGROUP_ARRAY` (a
/// descriptor of each directory; the kernel keeps the cgroup, not the fd).
fn cgroup_map(cgroups: &[CgroupDir]) -> Result<Option<sys::Map>> {
    if cgroups.is_empty() {
        return Ok(None);
    }
    let map = sys::map_create(&sys::MapSpec {
        map_type: MAP_CGROUP_ARRAY,
        key_size: 4,
        value_size: 4,
        max_entries: cgroups.len() as u32,
        flags: 0,
        name: "vdsoctl_cgroups",
    })
    .map_err(|e| refused(BpfStep::CreateMap, e))?;
    for (i, cg) in cgroups.iter().enumerate() {
        let dir = std::fs::File::open(&cg.dir).map_err(|e| Error::Io {
            path: cg.dir.clone(),
            source: e,
            hint: "no such cgroup: a process's is in /proc/PID/cgroup (the `0::` line)".into(),
        })?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&dir) as u32;
        map.update(&(i as u32).to_ne_bytes(), &fd.to_ne_bytes(), 0)
            .map_err(|e| refused(BpfStep::TakeCgroup { path: cg.path.clone() }, e))?;
    }
    Ok(Some(map))
}

/// The running kernel's ABI and syscall entry (from `uname -m`, not from
/// the build: the programs run in the kernel), where the engine knows it.
fn kernel_entry() -> Result<(Abi, arch::SyscallEntry)> {
    let machine = crate::inspect::kernel::machine();
    let host = crate::inspect::kernel::abi();
    host.and_then(|abi| Some((abi, abi.syscall_entry()?))).ok_or(Error::Facility {
        errno: None,
        what: Facility::UnknownSyscallEntry { machine },
        hint: Hint::BpfUsePerf,
    })
}

fn sum_per_cpu(value: &[u8]) -> u64 {
    value.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))).fold(0u64, u64::wrapping_add)
}

/// A refused bpf(2) step, worded with the capability that is missing.
fn refused(step: BpfStep, e: io::Error) -> Error {
    let caps = crate::inspect::process::own_capabilities();
    let lacking: Vec<&str> = [(39, "CAP_BPF"), (38, "CAP_PERFMON")]
        .into_iter()
        .filter(|(bit, _)| caps.is_some_and(|c| c & (1u64 << bit) == 0) && caps.is_some_and(|c| c & (1 << 21) == 0))
        .map(|(_, name)| name)
        .collect();
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) if !lacking.is_empty() => Error::Facility {
            errno: e.raw_os_error(),
            what: Facility::BpfLacking { step, caps: lacking },
            hint: Hint::BpfPrivilege,
        },
        Some(libc::ENOSYS) => {
            Error::Facility { errno: e.raw_os_error(), what: Facility::BpfUnavailable, hint: Hint::BpfSyscallBlocked }
        }
        _ => Error::Facility {
            errno: e.raw_os_error(),
            what: Facility::BpfRefused { step, source: e },
            hint: Hint::BpfProgramRefused,
        },
    }
}

fn load_prog(name: &str, attach_btf_id: u32, insns: std::result::Result<Vec<u64>, String>) -> Result<OwnedFd> {
    load_prog_as(name, ATTACH_TRACE_RAW_TP, attach_btf_id, insns)
}

/// Load a tracing program with `expected_attach_type` (`tp_btf` or `fentry`).
fn load_prog_as(
    name: &str,
    expected_attach_type: u32,
    attach_btf_id: u32,
    insns: std::result::Result<Vec<u64>, String>,
) -> Result<OwnedFd> {
    load_prog_typed(name, PROG_TRACING, expected_attach_type, attach_btf_id, insns)
}

/// Set, each program's verifier statistics (its time, instructions
/// processed, states; `BPF_LOG_STATS`) go to stderr as it loads:
/// scripts/bench-start.sh reads them.
pub const VERIFIER_STATS: &str = "VDSOCTL_VERIFIER_STATS";

/// Load a program of `prog_type` (a tracing one, or `top`'s perf_event one).
fn load_prog_typed(
    name: &str,
    prog_type: u32,
    expected_attach_type: u32,
    attach_btf_id: u32,
    insns: std::result::Result<Vec<u64>, String>,
) -> Result<OwnedFd> {
    let insns = insns.map_err(|why| Error::Facility {
        errno: None,
        what: Facility::BpfAssemble { prog: name.to_string(), why },
        hint: "report it: this is a bug in vdsoctl".into(),
    })?;
    let funcs = files::func_info(&insns);
    let wire = insn::wire(&insns);
    let spec = sys::ProgSpec {
        prog_type,
        insns: &wire,
        expected_attach_type,
        attach_btf_id,
        name,
        funcs: funcs.as_ref().map(|(blob, records)| (&blob[..], &records[..])),
        stats: std::env::var_os(VERIFIER_STATS).is_some(),
    };
    let mut log = vec![0u8; 1 << 18];
    let loaded = sys::prog_load(&spec, &mut log);
    if spec.stats && loaded.is_ok() {
        // The log is a C string: what follows its NUL is not the log's.
        let text = verifier::text(&log);
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        eprintln!("vdsoctl: verifier: {name} ({} insns): {text}", insns.len());
    }
    loaded.map_err(|e| {
        let log = verifier::text(&log);
        let release = crate::inspect::kernel::release();
        // A refusal by a later step than the verifier: its errno says why.
        let Some(reason) = verifier::reason(&log).filter(|_| verifier::refused_by_it(e.raw_os_error())) else {
            // An old kernel refuses what it does not know (tp_btf, the
            // helper) with EINVAL; a missing capability is worded as such.
            if e.raw_os_error() == Some(libc::EINVAL)
                && expected_attach_type == ATTACH_TRACE_RAW_TP
                && (verifier::below_floor("", release.as_deref()) || !knows_task_btf(attach_btf_id))
            {
                return below_floor(release.as_deref(), e.raw_os_error());
            }
            return refused(BpfStep::Load { prog: name.to_string() }, e);
        };
        if verifier::below_floor(&reason, release.as_deref()) {
            return below_floor(release.as_deref(), None);
        }
        rejected(name, e, &log)
    })
}

/// A load the verifier's errno refused, `log` its log (with a reason): the
/// reason, or, when the log ends as a pass that went on (a pruning note),
/// the errno; the whole log saved either way.
fn rejected(name: &str, e: std::io::Error, log: &str) -> Error {
    let saved = verifier::save(name, &verifier::whole(log));
    match verifier::reason(log) {
        // 7.2 riscv64 (Debian's, under QEMU): "program requires BPF JIT
        // compiler but it is not available", the JIT off.
        Some(reason) if !verifier::passed(log) => Error::Facility {
            errno: None,
            hint: if reason.contains("requires BPF JIT") { Hint::BpfJitOff } else { Hint::BpfVerifierRejected },
            what: Facility::VerifierRejected { prog: name.to_string(), reason, log: saved },
        },
        // The verification went on to its end: the errno is a later
        // step's word, the log no reason.
        _ => Error::Facility {
            errno: e.raw_os_error(),
            what: Facility::RefusedAfterVerifier { prog: name.to_string(), source: e, log: saved },
            hint: Hint::BpfVerifierRejected,
        },
    }
}

/// The probe for the floor: whether the verifier accepts a call of
/// `bpf_get_current_task_btf` (helper 158, Linux 5.11) at this attach point.
/// Run only after a refusal that did not say why, so it costs nothing when
/// the programs load; `false` only when its verifier names helper 158.
fn knows_task_btf(attach_btf_id: u32) -> bool {
    let mut a = insn::Asm::new();
    a.call(insn::Helper::GetCurrentTaskBtf).mov_imm(insn::R0, 0).exit();
    let Ok(insns) = a.finish() else { return true };
    let insns = insn::wire(&insns);
    let spec = sys::ProgSpec {
        prog_type: PROG_TRACING,
        insns: &insns,
        expected_attach_type: ATTACH_TRACE_RAW_TP,
        attach_btf_id,
        name: "vdsoctl_probe",
        funcs: None,
        stats: false,
    };
    let mut log = vec![0u8; 1 << 12];
    match sys::prog_load(&spec, &mut log) {
        Ok(_) => true,
        Err(_) => !verifier::reason(&verifier::text(&log)).is_some_and(|r| verifier::below_floor(&r, None)),
    }
}

/// The kernel is older than the engine's floor: say which floor.
fn below_floor(release: Option<&str>, errno: Option<i32>) -> Error {
    Error::Facility {
        errno,
        what: Facility::BelowFloor { floor: verifier::FLOOR, release: release.map(str::to_string) },
        hint: Hint::BpfUsePerf,
    }
}

#[cfg(test)]
mod tests {
    use super::insn::{Asm, Size, R0, R2};
    use super::*;

    /// A program the verifier refuses (a read through R2, never written)
    /// yields an error whose text has the verifier's reason and names the
    /// saved log. Needs root (CAP_BPF + CAP_PERFMON) and BTF: skips visibly
    /// without them, fails in CI.
    #[test]
    fn a_rejected_program_names_the_verifiers_reason() {
        let ci = std::env::var_os("CI").is_some();
        if !nix::unistd::geteuid().is_root() && !ci {
            return eprintln!("SKIP: loading a BPF program needs root");
        }
        let btf = match crate::inspect::btf::Btf::vmlinux() {
            Ok(btf) => btf,
            Err(e) if !ci => return eprintln!("SKIP: no kernel BTF here: {e}"),
            Err(e) => panic!("required facility missing in CI: {e}"),
        };
        let attach = btf.typedef_id("btf_trace_sys_enter").expect("btf_trace_sys_enter");
        let mut a = Asm::new();
        a.load(Size::Dw, R0, R2, 0).exit();
        let e = load_prog("vdsoctl_reject", attach, a.finish()).unwrap_err().to_string();
        assert!(e.contains("the BPF verifier rejected vdsoctl_reject: R2 !read_ok"), "{e}");
        let path = e
            .split("the verifier's whole log is in ")
            .nth(1)
            .expect("the log's path")
            .split([' ', ';'])
            .next()
            .unwrap();
        let log = std::fs::read_to_string(path).unwrap();
        let _ = std::fs::remove_file(path);
        assert!(log.contains("R2 !read_ok") && !log.contains("processed "), "{log}");
        // This kernel is past the floor: the probe says so.
        assert!(knows_task_btf(attach));
    }

    /// A refusal whose log ends on a pruning note (7.2 riscv64's) names
    /// the errno, not the note, and still saves the log; one with a reason
    /// names the reason.
    #[test]
    fn a_refusal_after_a_passed_verification_names_the_errno() {
        let log = "191: (85) call bpf_map_lookup_elem#1\nfrom 191 to 192: safe\nprocessed 900 insns (limit 1000000)\n";
        let e = rejected("vdsoctl_pruned", std::io::Error::from_raw_os_error(libc::EINVAL), log).to_string();
        assert!(e.starts_with("BPF refused to load vdsoctl_pruned after its verification passed: invalid argument (EINVAL); the verifier's whole log is in "), "{e}");
        let path = e.rsplit("the verifier's whole log is in ").next().unwrap().split([' ', ';']).next().unwrap();
        let saved = std::fs::read_to_string(path).unwrap();
        let _ = std::fs::remove_file(path);
        assert_eq!(saved, "191: (85) call bpf_map_lookup_elem#1\nfrom 191 to 192: safe\n");
        let log = "0: (79) r0 = *(u64 *)(r2 +0)\nR2 !read_ok\n";
        let e = rejected("vdsoctl_reason", std::io::Error::from_raw_os_error(libc::EACCES), log).to_string();
        assert!(e.starts_with("the BPF verifier rejected vdsoctl_reason: R2 !read_ok (at 0: "), "{e}");
        let path = e.rsplit("the verifier's whole log is in ").next().unwrap().split([' ', ';']).next().unwrap();
        let _ = std::fs::remove_file(path);
        let log = "program requires BPF JIT compiler but it is not available\n";
        let e = rejected("vdsoctl_nojit", std::io::Error::from_raw_os_error(libc::EINVAL), log);
        assert!(matches!(e, Error::Facility { hint: Hint::BpfJitOff, .. }), "{e}");
        if let Error::Facility { what: Facility::VerifierRejected { log: Ok(path), .. }, .. } = &e {
            let _ = std::fs::remove_file(path);
        }
    }

    /// `--stacks` loads with its frames' capture in the `bpf_loop` on this
    /// kernel (6.18), not through a fallback: the loop is what keeps the
    /// start short (doc/BENCHMARKS.md). Needs root and BTF: skips visibly
    /// without them, fails in CI.
    #[test]
    fn stacks_load_with_the_frames_loop() {
        let ci = std::env::var_os("CI").is_some();
        if !nix::unistd::geteuid().is_root() && !ci {
            return eprintln!("SKIP: loading a BPF program needs root");
        }
        if let Err(e) = crate::inspect::btf::Btf::vmlinux() {
            assert!(!ci, "required facility missing in CI: {e}");
            return eprintln!("SKIP: no kernel BTF here: {e}");
        }
        // bpf_loop and bpf_find_vma came in 5.17: before, no loop to assert.
        let release = crate::inspect::kernel::release().unwrap_or_default();
        let mut v = release.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse::<u32>().ok());
        if (v.next().unwrap_or(0), v.next().unwrap_or(0)) < (5, 17) {
            return eprintln!("SKIP: Linux {release} has no bpf_loop (5.17)");
        }
        let o =
            Options { scope: Scope::Trees, per_thread: false, stacks: true, cgroups: &[], sites: true, fentry: None };
        let t = BpfTracer::load(&o).expect("--sites --stacks load");
        assert!(t.frames_looped(), "the frames' capture fell back from bpf_loop");
    }

    /// fentry's EPERM says what was seen: the mode securityfs shows, or
    /// that there was none to read — never "locked down" without it.
    #[test]
    fn an_eperm_refusal_names_what_was_observed() {
        let locked = eperm_cause(Some("none [integrity] confidentiality\n")).to_string();
        assert!(locked.contains("locked down (`integrity` in /sys/kernel/security/lockdown; EPERM)"), "{locked}");
        let none = eperm_cause(Some("[none] integrity confidentiality\n")).to_string();
        assert!(none.contains("lockdown `none`") && none.contains("LSM") && !none.contains("locked down"), "{none}");
        let absent = eperm_cause(None).to_string();
        assert!(absent.starts_with("EPERM, and no lockdown mode to read") && absent.contains("absent"), "{absent}");
        assert!(!absent.contains("is locked down"), "{absent}");
    }
}
