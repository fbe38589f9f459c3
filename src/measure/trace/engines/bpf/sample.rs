//! `top`'s sampler: a `BPF_PROG_TYPE_PERF_EVENT` program run at each
//! sample of a cpu-clock event (one per CPU, `PERF_EVENT_IOC_SET_BPF`),
//! aggregating in a per-CPU hash keyed by (tgid, kind, address, clock):
//!
//! - every sample counts once as the process's total (the denominator);
//! - a user-mode sample whose IP is inside the task's `[vdso]`
//!   (`task->mm->context.vdso`, the image's length from vdsoctl's own
//!   mapping) counts at its offset in the image, which user space names
//!   with the image's symbols;
//! - a kernel-mode sample of a task inside one of the ABI's clock or random
//!   syscalls (`bpf_task_pt_regs(current)->orig_ax`, compat by
//!   `thread_info.status & TS_COMPAT` as the trace engine tells it) counts
//!   at the syscall's number, with its clock id for the clock syscalls.
//!
//! Other kernel-mode samples count as the process's other kernel time (a
//! syscall of its own, an interrupt, an exception), other user-mode ones
//! in the total only. Each new process's name is kept
//! (its first sample's `comm`), so a process that exited before the report
//! is still named. Loads from the context are 8-byte (what the verifier
//! admits for `bpf_user_pt_regs_t`); loads through task pointers are
//! BTF-typed.

use super::gen::Generator;
use super::insn::{Alu, Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R4, R6, R7, R8, R9};
use super::{refused, sum_per_cpu, MAP_HASH};
use crate::arch::{Abi, SampleRegs, SyscallEntry, VdsoFn};
use crate::error::{BpfStep, Error, Facility, Hint, Result};
use crate::inspect::btf::{Btf, Field};
use crate::measure::sys::bpf as sys;
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// `BPF_PROG_TYPE_PERF_EVENT`.
const PROG_PERF_EVENT: u32 = 7;
/// `BPF_MAP_TYPE_LRU_PERCPU_HASH`: a long `top` on a busy host forgets the
/// processes not sampled for longest, never refuses a new one.
const MAP_LRU_PERCPU_HASH: u32 = 10;

/// Rows the sample map holds: a process's total, its vDSO offsets and
/// syscalls.
pub const MAX_SAMPLE_ROWS: u32 = 65_536;
/// Processes whose name is kept.
const MAX_NAMES: u32 = 32_768;

/// The key: tgid (u32), kind (u32), address (u64), clock (u64).
const KEY_SIZE: usize = 24;
const KEY: i16 = -24;
const ONE: i16 = -32;
const COMM: i16 = -48;

/// What a sample row counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SampleKind {
    /// Every sample of the process.
    Total,
    /// User mode at this offset in the [vdso] (compat: the 32-bit image).
    Vdso { compat: bool, offset: u64 },
    /// Kernel mode inside this syscall (its number in the task's ABI), with
    /// the clock id of a clock syscall.
    Syscall { compat: bool, nr: u64, clock: Option<i32> },
    /// Kernel mode anywhere else: another syscall, an interrupt, an exception.
    KernelOther,
}

impl SampleKind {
    #[cfg(test)]
    fn code(self) -> u32 {
        match self {
            SampleKind::Total => 0,
            SampleKind::Vdso { compat: false, .. } => 1,
            SampleKind::Vdso { compat: true, .. } => 2,
            SampleKind::Syscall { compat: false, .. } => 3,
            SampleKind::Syscall { compat: true, .. } => 4,
            SampleKind::KernelOther => 5,
        }
    }

    fn decode(kind: u32, addr: u64, clock: u64, takes_clock: impl Fn(bool, u64) -> bool) -> Option<SampleKind> {
        Some(match kind {
            0 => SampleKind::Total,
            1 | 2 => SampleKind::Vdso { compat: kind == 2, offset: addr },
            3 | 4 => {
                let compat = kind == 4;
                let clock = takes_clock(compat, addr).then_some(clock as u32 as i32);
                SampleKind::Syscall { compat, nr: addr, clock }
            }
            5 => SampleKind::KernelOther,
            _ => return None,
        })
    }
}

/// What the maps held at one read: samples per (tgid, kind), and the
/// names of the processes.
#[derive(Debug, Clone, Default)]
pub struct SampleTally {
    pub rows: HashMap<(i32, SampleKind), u64>,
    pub comms: HashMap<i32, String>,
    /// The kernel's ABI (its syscall numbers) and its compat one.
    pub abi: Option<Abi>,
}

/// The kernel facts the program is generated for.
#[derive(Debug, Clone, Copy)]
struct SampleLayout {
    /// Context offsets (bpf_user_pt_regs_t = pt_regs).
    ip: u32,
    mode: u32,
    /// Task pt_regs members.
    nr: Field,
    arg0_native: Field,
    arg0_compat: Field,
    mm: Field,
    vdso: Field,
    compat_flags: Field,
    compat_mask: i32,
    vdso_len: u32,
}

impl SampleLayout {
    fn read(regs: SampleRegs, entry: SyscallEntry) -> Result<SampleLayout> {
        let btf = Btf::vmlinux()?;
        let unknown = btf.unknown_kind();
        let field = |s: &str, path: &[&str]| -> Result<Field> {
            btf.field(s, path).filter(|f| i16::try_from(f.offset).is_ok()).ok_or_else(|| Error::Facility {
                errno: None,
                what: Facility::BtfMissing { what: format!("{s}.{}", path.join(".")), unknown },
                hint: Hint::BpfNeedsBtf,
            })
        };
        let vdso_len = crate::inspect::maps::own_vdso_len().and_then(|l| u32::try_from(l).ok()).unwrap_or(0);
        Ok(SampleLayout {
            ip: field("pt_regs", &[regs.ip])?.offset,
            mode: field("pt_regs", &[regs.mode])?.offset,
            nr: field("pt_regs", &[regs.nr])?,
            arg0_native: field("pt_regs", entry.arg0_native.path)?,
            arg0_compat: field("pt_regs", entry.arg0_compat.path)?,
            mm: field("task_struct", &["mm"])?,
            vdso: field("mm_struct", &["context", "vdso"])?,
            compat_flags: field("task_struct", entry.compat_flags.path)?,
            compat_mask: entry.compat_mask as i32,
            vdso_len,
        })
    }
}

/// The descriptors the program references.
#[derive(Debug, Clone, Copy)]
struct SampleFds {
    rows: i32,
    names: i32,
    cgroups: Option<(i32, u32)>,
}

/// `dst = *(u64 *)(src + off)` for a context offset.
fn ctx_load(a: &mut Asm, dst: super::insn::Reg, src: super::insn::Reg, off: u32) {
    match i16::try_from(off) {
        Ok(off) if off % 8 == 0 => {
            a.load(Size::Dw, dst, src, off);
        }
        _ => {
            a.fail(format!("a context load at {off} is not an aligned 8-byte one"));
        }
    }
}

/// The program for one kernel layout.
fn program(l: &SampleLayout, abi: Abi, regs: SampleRegs, fds: SampleFds) -> std::result::Result<Vec<u64>, String> {
    let mut a = Asm::new();
    a.mov(R6, R1).call(Helper::GetCurrentPidTgid).mov(R7, R0).alu_imm(Alu::Rsh, R7, 32);
    // The idle task is no process.
    a.jump_imm(Cond::Eq, R7, 0, "out");
    if let Some((map, count)) = fds.cgroups {
        for i in 0..count {
            a.load_map(R1, map).mov_imm(R2, i as i32).call(Helper::CurrentTaskUnderCgroup).jump_imm(
                Cond::Eq,
                R0,
                1,
                "in_cgroup",
            );
        }
        a.goto("out").label("in_cgroup");
    }
    // The process's name, at its first sample.
    a.store(Size::W, FP, KEY, R7)
        .load_map(R1, fds.names)
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, i32::from(KEY))
        .call(Helper::MapLookupElem)
        .jump_imm(Cond::Ne, R0, 0, "named");
    a.store_imm(Size::Dw, FP, COMM, 0).store_imm(Size::Dw, FP, COMM + 8, 0);
    a.mov(R1, FP).alu_imm(Alu::Add, R1, i32::from(COMM)).mov_imm(R2, 16);
    a.call(Helper::GetCurrentComm);
    a.load_map(R1, fds.names)
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, i32::from(KEY))
        .mov(R3, FP)
        .alu_imm(Alu::Add, R3, i32::from(COMM))
        .mov_imm(R4, super::gen::NOEXIST)
        .call(Helper::MapUpdateElem);
    a.label("named");
    // The total.
    let key = |a: &mut Asm, kind: u32| {
        a.store(Size::W, FP, KEY, R7).store_imm(Size::W, FP, KEY + 4, kind as i32);
    };
    key(&mut a, 0);
    a.store_imm(Size::Dw, FP, KEY + 8, 0).store_imm(Size::Dw, FP, KEY + 16, 0);
    Generator::bump_or_insert(&mut a, fds.rows, (KEY, ONE), ["total_insert", "out", "counted"]);
    a.label("counted");
    ctx_load(&mut a, R1, R6, l.mode);
    a.mov(R9, R1).alu_imm(Alu::And, R1, regs.user_mask).jump_imm(Cond::Ne, R1, regs.user_value, "kernel");
    // User mode: inside the [vdso]?
    ctx_load(&mut a, R8, R6, l.ip);
    a.call(Helper::GetCurrentTaskBtf);
    Generator::member(&mut a, Size::Dw, R1, R0, l.mm, 0);
    a.jump_imm(Cond::Eq, R1, 0, "out");
    Generator::member(&mut a, Size::Dw, R2, R1, l.vdso, 0);
    a.jump_imm(Cond::Eq, R2, 0, "out").alu_reg(Alu::Sub, R8, R2);
    a.mov_imm(R1, l.vdso_len as i32).jump_reg(Cond::Gt, R8, R1, "out").jump_reg(Cond::Eq, R8, R1, "out");
    a.alu_imm(Alu::And, R9, 0xffff);
    key(&mut a, 1);
    a.jump_imm(Cond::Ne, R9, regs.compat_mode, "vdso_native");
    key(&mut a, 2);
    a.label("vdso_native").store(Size::Dw, FP, KEY + 8, R8).store_imm(Size::Dw, FP, KEY + 16, 0).goto("record");
    // Kernel mode: inside which syscall?
    a.label("kernel").call(Helper::GetCurrentTaskBtf).mov(R9, R0).mov(R1, R0);
    a.call(Helper::TaskPtRegs);
    a.mov(R8, R0);
    Generator::member(&mut a, Size::W, R2, R9, l.compat_flags, 0);
    Generator::member(&mut a, Size::Dw, R3, R8, l.nr, 0);
    a.alu_imm(Alu::And, R2, l.compat_mask).jump_imm(Cond::Ne, R2, 0, "compat");
    let abis = [(abi, "native", 3u32, l.arg0_native), (abi.compat().unwrap_or(abi), "compat", 4, l.arg0_compat)];
    for (i, (abi, tag, kind, arg0)) in abis.into_iter().enumerate() {
        if i == 1 {
            a.label("compat");
        }
        let calls = abi.vdso_syscalls();
        for (f, nr) in calls {
            a.jump_imm(Cond::Eq, R3, *nr as i32, &format!("{tag}_{}", f.name()));
        }
        a.goto("kernel_other");
        for (f, _) in calls {
            a.label(&format!("{tag}_{}", f.name()));
            if f.takes_clock() {
                Generator::member(&mut a, Size::Dw, R4, R8, arg0, 0);
            } else {
                a.mov_imm(R4, 0);
            }
            a.goto(&format!("{tag}_key"));
        }
        a.label(&format!("{tag}_key"));
        key(&mut a, kind);
        a.store(Size::Dw, FP, KEY + 8, R3).store(Size::Dw, FP, KEY + 16, R4).goto("record");
    }
    // Kernel mode outside a fallback syscall: another syscall, an
    // interrupt, an exception.
    a.label("kernel_other");
    key(&mut a, 5);
    a.store_imm(Size::Dw, FP, KEY + 8, 0).store_imm(Size::Dw, FP, KEY + 16, 0);
    a.label("record");
    Generator::bump_or_insert(&mut a, fds.rows, (KEY, ONE), ["row_insert", "out", "out"]);
    a.label("out").mov_imm(R0, 0).exit();
    a.finish()
}

/// The loaded sampler: its maps and program, attached to perf events by
/// the caller (`measure::sample`).
#[derive(Debug)]
pub struct Sampler {
    rows: sys::Map,
    names: sys::Map,
    _cgroups: Option<sys::Map>,
    prog: OwnedFd,
    abi: Abi,
}

impl Sampler {
    /// Create the maps and load the program; `cgroups`: count only tasks in
    /// one of these cgroups or below.
    pub fn load(cgroups: &[crate::inspect::cgroup::CgroupDir]) -> Result<Sampler> {
        let machine = crate::inspect::kernel::machine();
        let unknown = || Error::Facility {
            errno: None,
            what: Facility::UnknownSyscallEntry { machine: machine.clone() },
            hint: Hint::TopUnknownArch,
        };
        let abi = crate::inspect::kernel::abi().ok_or_else(unknown)?;
        let (regs, entry) = abi.sample_regs().zip(abi.syscall_entry()).ok_or_else(unknown)?;
        let layout = SampleLayout::read(regs, entry)?;
        let map = |spec: sys::MapSpec<'_>| sys::map_create(&spec).map_err(|e| refused(BpfStep::CreateMap, e));
        let rows = map(sys::MapSpec {
            map_type: MAP_LRU_PERCPU_HASH,
            key_size: KEY_SIZE as u32,
            value_size: 8,
            max_entries: MAX_SAMPLE_ROWS,
            flags: 0,
            name: "vdsoctl_samples",
        })?;
        let names = map(sys::MapSpec {
            map_type: MAP_HASH,
            key_size: 4,
            value_size: 16,
            max_entries: MAX_NAMES,
            flags: 0,
            name: "vdsoctl_names",
        })?;
        let cgroup_map = super::cgroup_map(cgroups)?;
        let fds = SampleFds {
            rows: rows.raw_fd(),
            names: names.raw_fd(),
            cgroups: cgroup_map.as_ref().map(|m| (m.raw_fd(), cgroups.len() as u32)),
        };
        let insns = program(&layout, abi, regs, fds);
        let prog = super::load_prog_typed("vdsoctl_sample", PROG_PERF_EVENT, 0, 0, insns)?;
        Ok(Sampler { rows, names, _cgroups: cgroup_map, prog, abi })
    }

    /// The program, for `PERF_EVENT_IOC_SET_BPF`.
    pub fn prog(&self) -> BorrowedFd<'_> {
        self.prog.as_fd()
    }

    /// Every row summed over CPUs, and the names.
    pub fn read(&self) -> Result<SampleTally> {
        let read_err = |e: std::io::Error| Error::Facility {
            errno: None,
            what: Facility::BpfMapRead { source: e },
            hint: Hint::RetryOrReport,
        };
        let abi = self.abi;
        let takes_clock = |compat: bool, nr: u64| {
            let abi = if compat { abi.compat().unwrap_or(abi) } else { abi };
            i64::try_from(nr).ok().and_then(|nr| abi.vdso_syscall(nr)).is_some_and(VdsoFn::takes_clock)
        };
        let mut tally = SampleTally { abi: Some(abi), ..SampleTally::default() };
        let mut value = vec![0u8; self.rows.value_size()];
        for key in self.rows.keys(MAX_SAMPLE_ROWS + 1) {
            let key = key.map_err(read_err)?;
            if !self.rows.lookup(&key, &mut value).map_err(read_err)? {
                continue;
            }
            let word = |at: usize, n: usize| {
                key.get(at..at + n).map(|b| b.iter().rev().fold(0u64, |v, x| v << 8 | u64::from(*x)))
            };
            let (Some(tgid), Some(kind), Some(addr), Some(clock)) = (word(0, 4), word(4, 4), word(8, 8), word(16, 8))
            else {
                continue;
            };
            if let Some(kind) = SampleKind::decode(kind as u32, addr, clock, takes_clock) {
                *tally.rows.entry((tgid as u32 as i32, kind)).or_default() += sum_per_cpu(&value);
            }
        }
        let mut comm = [0u8; 16];
        for key in self.names.keys(MAX_NAMES + 1) {
            let key = key.map_err(read_err)?;
            if self.names.lookup(&key, &mut comm).map_err(read_err)? {
                let tgid = u32::from_ne_bytes(key.as_slice().try_into().unwrap_or([0; 4])) as i32;
                tally.comms.insert(tgid, crate::measure::trace::Comm::from_bytes(&comm).to_string());
            }
        }
        Ok(tally)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_matches_its_golden_disassembly() {
        let f = |offset, size| Field { offset, size, array: false };
        let l = SampleLayout {
            ip: 128,
            mode: 136,
            nr: f(120, 8),
            arg0_native: f(112, 8),
            arg0_compat: f(40, 8),
            mm: f(2400, 8),
            vdso: f(900, 8),
            compat_flags: f(4, 4),
            compat_mask: 2,
            vdso_len: 8192,
        };
        let regs = Abi::X86_64.sample_regs().unwrap();
        for (name, cgroups) in [("sample-perf_event", None), ("sample-perf_event-cgroups", Some((5, 2)))] {
            let p = program(&l, Abi::X86_64, regs, SampleFds { rows: 3, names: 4, cgroups }).unwrap();
            assert!(p.len() > 50 && p.len() < 400, "{}", p.len());
            // Golden like the trace programs' (`bpf::gen`): the diff is the review.
            let text = super::super::disasm::format(&p);
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/bpf/{name}.txt"));
            if std::env::var_os("VDSOCTL_REGEN_GOLDEN").is_some() {
                std::fs::write(&path, &text).unwrap();
            }
            let golden = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(golden == text, "{name} differs from {} (VDSOCTL_REGEN_GOLDEN=1 to rewrite)", path.display());
        }
    }

    #[test]
    fn kinds_round_trip_through_their_codes() {
        let clockful = |_: bool, nr: u64| nr == 228;
        for k in [
            SampleKind::Total,
            SampleKind::Vdso { compat: true, offset: 0x6a0 },
            SampleKind::Syscall { compat: false, nr: 228, clock: Some(4) },
            SampleKind::Syscall { compat: false, nr: 318, clock: None },
            SampleKind::KernelOther,
        ] {
            let (addr, clock) = match k {
                SampleKind::Total | SampleKind::KernelOther => (0, 0),
                SampleKind::Vdso { offset, .. } => (offset, 0),
                SampleKind::Syscall { nr, clock, .. } => (nr, clock.unwrap_or(0) as u64),
            };
            assert_eq!(SampleKind::decode(k.code(), addr, clock, clockful), Some(k));
        }
        assert_eq!(SampleKind::decode(9, 0, 0, clockful), None);
    }
}
