//! What the programs and user space must agree on, written once: the map
//! keys and values (field by field — the program generator stores each
//! field at its slot, the decoder in `BpfTracer::snapshot` reads it from
//! the same slot), and the kernel structures the programs read, with each
//! member's size from BTF so a load of the wrong width is refused when the
//! program is generated, not misread at run time.

use super::insn::Size;
use crate::arch::{FnKind, KernelMember, SyscallEntry, VdsoFn};
use crate::error::{Error, Facility, Hint, Result};
use crate::inspect::btf::{Btf, Field};

/// A field of a map key or value: its offset and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    pub off: i16,
    pub size: Size,
}

impl Slot {
    const fn w(off: i16) -> Slot {
        Slot { off, size: Size::W }
    }
    const fn dw(off: i16) -> Slot {
        Slot { off, size: Size::Dw }
    }

    /// Write `v` to the field in `bytes` (native endian, as the program reads it).
    pub fn set(self, bytes: &mut [u8], v: u64) {
        let at = self.off as usize;
        match self.size {
            Size::W => bytes.get_mut(at..at + 4).map(|b| b.copy_from_slice(&(v as u32).to_ne_bytes())),
            Size::Dw => bytes.get_mut(at..at + 8).map(|b| b.copy_from_slice(&v.to_ne_bytes())),
        };
    }

    /// The field's value in `bytes` (native endian, as the program stored it).
    pub fn get(self, bytes: &[u8]) -> u64 {
        let at = self.off as usize;
        match self.size {
            Size::W => {
                bytes.get(at..at + 4).and_then(|b| b.try_into().ok()).map_or(0, |b| u32::from_ne_bytes(b).into())
            }
            Size::Dw => bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_ne_bytes),
        }
    }
}

/// Count-row key (`counts`, 24 bytes).
pub(super) mod key {
    use super::Slot;
    pub const SIZE: usize = 24;
    /// The process (thread group) id.
    pub const TGID: Slot = Slot::w(0);
    /// The thread id with `--per-thread`, else 0.
    pub const TID: Slot = Slot::w(4);
    /// ABI, function and clock kind, one byte each, as one word ([`super::key_word`]).
    pub const WORD: Slot = Slot::w(8);
    /// The clock id (`CLOCK_ID` rows; 0 otherwise).
    pub const CLOCK: Slot = Slot::w(12);
    /// The process's start (its group leader's `start_boottime`, ns).
    pub const START: Slot = Slot::dw(16);
}

/// Call-site key (`sites`, `--sites` only, 40 bytes): the count-row key
/// ([`key`], its first 24 bytes), then where the call was made from.
pub(super) mod skey {
    use super::Slot;
    pub const SIZE: usize = 40;
    /// The user instruction pointer at the syscall's entry (past the instruction).
    pub const IP: Slot = Slot::dw(24);
    /// The word at the user stack pointer at entry: a return address (a
    /// compat task: the words at sp+32 and sp+12 packed, as
    /// `measure::trace::sites::Site::words` reads them); 0 when the page was not
    /// present, or when the stack-word filter ([`super::unread`]) skipped
    /// the read.
    pub const RET: Slot = Slot::dw(32);
}

/// `--sites`' stack-word filter (`vdsoctl_nowords`, an array of
/// [`unread::WORDS`] u64s the program only reads): bit `unread::bit(ip)`
/// set means calls made from `ip` (the instruction pointer at entry) skip
/// the read of the word at the stack pointer. The bit is the top 16 bits
/// of `ip × MUL`; two sites may share one (see `measure::trace::sites::WordFilter`).
pub mod unread {
    /// u64 words in the filter: 65,536 bits.
    pub const WORDS: u32 = 1024;
    /// The multiplier (an odd 32-bit constant, sign-extended by the
    /// program's `alu64 mul imm`, as here).
    pub const MUL: i32 = 0x9E37_79B1_u32 as i32;
    /// Bits dropped from the product: 64 - 16.
    pub const SHIFT: i32 = 48;

    /// The filter's bit for calls made from `ip`: (word index, bit in it).
    pub fn bit(ip: u64) -> (u32, u32) {
        let h = (ip.wrapping_mul(i64::from(MUL) as u64) >> SHIFT) as u32;
        (h >> 6, h & 63)
    }
}

/// Process key (`totals`, 16 bytes): tgid, pad, start.
pub(super) mod pkey {
    use super::Slot;
    pub const SIZE: usize = 16;
    pub const TGID: Slot = Slot::w(0);
    pub const PAD: Slot = Slot::w(4);
    pub const START: Slot = Slot::dw(8);
}

/// Process value (`totals`, 32 bytes): calls, calls without a row, comm.
pub(super) mod pval {
    use super::Slot;
    pub const SIZE: usize = 32;
    pub const CALLS: Slot = Slot::dw(0);
    pub const DROPPED: Slot = Slot::dw(8);
    /// `comm[16]`, copied as two words.
    pub const COMM: [Slot; 2] = [Slot::dw(16), Slot::dw(24)];
}

/// Traced-set key (`procs`): the tgid.
pub(super) mod proc_key {
    use super::Slot;
    pub const SIZE: usize = 4;
    pub const TGID: Slot = Slot::w(0);
}

/// Traced-set value (`procs`, 16 bytes): root, parent, start in clock ticks
/// (what /proc/PID/stat says; 0: not checked).
pub(super) mod proc_val {
    use super::Slot;
    pub const SIZE: usize = 16;
    pub const ROOT: Slot = Slot::w(0);
    pub const PARENT: Slot = Slot::w(4);
    pub const START_TICKS: Slot = Slot::dw(8);
}

/// ABI codes in a key.
pub(super) const ABI_NATIVE: u8 = 0;
pub(super) const ABI_COMPAT: u8 = 1;
pub(super) const ABI_VSYSCALL: u8 = 2;

/// The clock kind byte of a key.
pub(super) const CLOCK_NONE: u8 = 0;
pub(super) const CLOCK_ID: u8 = 1;
pub(super) const CLOCK_OTHER: u8 = 2;
/// A getrandom row: the clock word holds its [`RandomCall`] code.
pub(super) const CLOCK_RANDOM: u8 = 4;

/// Function codes in a key: the index in this table.
pub(super) const FUNCTIONS: [VdsoFn; VdsoFn::ALL.len()] = VdsoFn::ALL;

pub(super) fn fn_code(f: VdsoFn) -> u8 {
    f.index() as u8
}

/// [`key::WORD`]: ABI, function, whether a clock id follows (`CLOCK_ID`;
/// the program adds `CLOCK_OTHER - CLOCK_ID` at [`KIND_SHIFT`] for an
/// unknown id).
pub(super) fn key_word(abi: u8, f: VdsoFn) -> i32 {
    let kind = match f.kind() {
        FnKind::Random => CLOCK_RANDOM,
        FnKind::Clock if f.takes_clock() => CLOCK_ID,
        FnKind::Clock | FnKind::Cpu => CLOCK_NONE,
    };
    i32::from(abi) | i32::from(fn_code(f)) << 8 | i32::from(kind) << KIND_SHIFT
}

/// Where the clock kind sits in [`key::WORD`].
pub(super) const KIND_SHIFT: u32 = 16;

/// [`key::WORD`] taken apart: (ABI, function code, clock kind).
pub(super) fn split_word(word: u64) -> (u8, u8, u8) {
    (word as u8, (word >> 8) as u8, (word >> KIND_SHIFT) as u8)
}

/// A member of a kernel structure and the byte within it a load starts at
/// (`regs[0]`: the array `regs`, byte 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Part {
    pub member: Field,
    pub at: u32,
}

impl Part {
    /// A whole member.
    #[cfg(test)]
    pub fn whole(member: Field) -> Part {
        Part { member, at: 0 }
    }

    /// The width a load of the whole member (or one 8-byte element of an
    /// array) has; `None` for a member of another width (refused when the
    /// program is generated).
    pub fn width(self) -> Option<Size> {
        match (self.member.array, self.member.size) {
            (true, _) | (false, 8) => Some(Size::Dw),
            (false, 4) => Some(Size::W),
            _ => None,
        }
    }
}

/// Offsets, sizes and attach points read from the kernel's BTF.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub sys_enter: u32,
    pub fork: u32,
    pub vsyscall: Option<u32>,
    pub arg0_native: Part,
    pub arg0_compat: Part,
    /// The second and third arguments (getrandom's size and flags).
    pub args12_native: [Part; 2],
    pub args12_compat: [Part; 2],
    /// Where a native task's vDSO is: getrandom calls made inside it are
    /// the vDSO's own; `None` where BTF lacks a part of it.
    pub vdso: Option<VdsoReach>,
    /// The `task_struct` member whose bit marks a compat syscall
    /// (x86_64 `thread_info.status`, arm64 `thread_info.flags`).
    pub compat_flags: Part,
    pub compat_mask: i32,
    pub group_leader: Field,
    pub comm: Field,
    pub pid: Field,
    pub tgid: Field,
    /// `task_struct.start_boottime` (what /proc/PID/stat's start time is made of).
    pub start: Field,
    /// Where a new process's pid in vdsoctl's pid namespace is (the fork
    /// program in a namespace); `None` when BTF lacks a part of it.
    pub pid_numbers: Option<PidNumbers>,
    /// `pt_regs`' user instruction and stack pointers (`--sites`), where
    /// the architecture's are known.
    pub site: Option<(Field, Field)>,
    /// What names a mapping without its process (`--sites`' first
    /// sightings, [`super::files`]); `None` where BTF lacks a part of it.
    pub vma: Option<VmaReach>,
    /// What an exec ran (`sched_process_exec`, [`super::execs`]); `None`
    /// where BTF lacks a part of it.
    pub exec: Option<ExecReach>,
}

/// `tp_btf/sched_process_exec(struct task_struct *p, pid_t old_pid,
/// struct linux_binprm *bprm)`: the tracepoint, `task_struct.mm`,
/// `mm_struct.arg_start` and `.arg_end` (the new image's argv in user
/// memory), `linux_binprm.filename` (the path exec was given).
#[derive(Debug, Clone, Copy)]
pub(super) struct ExecReach {
    pub tracepoint: u32,
    pub mm: Field,
    pub arg_start: Field,
    pub arg_end: Field,
    pub filename: Field,
}

/// A mapping's file identity: `vm_area_struct.vm_start`, `.vm_pgoff`,
/// `.vm_file`, then `file.f_inode`, `inode.i_ino`, `.i_sb`, and
/// `super_block.s_dev` (the device /proc/PID/maps prints).
#[derive(Debug, Clone, Copy)]
pub(super) struct VmaReach {
    pub vm_start: Field,
    pub vm_pgoff: Field,
    pub vm_file: Field,
    /// `vm_area_struct.vm_flags` (`VM_EXEC`: code).
    pub vm_flags: Field,
    pub f_inode: Field,
    pub i_ino: Field,
    /// `inode.i_generation`.
    pub i_generation: Field,
    pub i_sb: Field,
    pub s_dev: Field,
    /// `mm_struct.exe_file`: a mapping of the same inode is the executable.
    pub exe_file: Field,
    /// `mm_struct.saved_auxv` (an array: its first 8 bytes are read).
    pub saved_auxv: Field,
}

/// `regs->ip - current->mm->context.vdso < len`: the syscall instruction
/// lies in the task's vDSO text.
#[derive(Debug, Clone, Copy)]
pub(super) struct VdsoReach {
    /// `pt_regs`' user instruction pointer (`ip`, arm64 `pc`).
    pub ip: Field,
    /// `task_struct.mm`.
    pub mm: Field,
    /// `mm_struct.context.vdso`: the start of the `[vdso]` text.
    pub vdso: Field,
    /// Bytes of vDSO text (this host's `[vdso]` mapping: every native task
    /// maps the same image).
    pub len: u32,
}

/// `task_struct.thread_pid->numbers[level].nr`, the pid at each
/// namespace level, and `pid.level`, the task's own level.
#[derive(Debug, Clone, Copy)]
pub(super) struct PidNumbers {
    /// `task_struct.thread_pid`.
    pub thread_pid: Field,
    /// `pid.level`.
    pub level: Field,
    /// `pid.numbers` (offset of the array).
    pub numbers: u32,
    /// `sizeof(struct upid)`.
    pub upid_size: u32,
    /// `upid.nr`.
    pub nr: Field,
}

impl Layout {
    /// The layout of the running kernel, whose syscall entry is `entry`.
    pub fn read(entry: SyscallEntry) -> Result<Layout> {
        let btf = Btf::vmlinux()?;
        let unknown = btf.unknown_kind();
        // Types after a kind this parser does not know were not read.
        let missing = |what: &str| Error::Facility {
            errno: None,
            what: Facility::BtfMissing { what: what.to_string(), unknown },
            hint: Hint::BpfNeedsBtf,
        };
        let field = |s: &str, path: &[&str]| -> Result<Field> {
            btf.field(s, path)
                .filter(|f| i16::try_from(f.offset).is_ok())
                .ok_or_else(|| missing(&format!("{s}.{}", path.join("."))))
        };
        let part = |s: &str, m: KernelMember| -> Result<Part> { Ok(Part { member: field(s, m.path)?, at: m.part }) };
        Ok(Layout {
            sys_enter: btf.typedef_id("btf_trace_sys_enter").ok_or_else(|| missing("btf_trace_sys_enter"))?,
            fork: btf
                .typedef_id("btf_trace_sched_process_fork")
                .ok_or_else(|| missing("btf_trace_sched_process_fork"))?,
            vsyscall: if entry.vsyscall { btf.typedef_id("btf_trace_emulate_vsyscall") } else { None },
            arg0_native: part("pt_regs", entry.arg0_native)?,
            arg0_compat: part("pt_regs", entry.arg0_compat)?,
            args12_native: [part("pt_regs", entry.args12_native[0])?, part("pt_regs", entry.args12_native[1])?],
            args12_compat: [part("pt_regs", entry.args12_compat[0])?, part("pt_regs", entry.args12_compat[1])?],
            vdso: (|| {
                let len = crate::inspect::maps::own_vdso_len()?;
                Some(VdsoReach {
                    ip: btf.field("pt_regs", entry.user_ip)?,
                    mm: btf.field("task_struct", &["mm"])?,
                    vdso: btf.field("mm_struct", &["context", "vdso"])?,
                    len: u32::try_from(len).ok()?,
                })
            })(),
            compat_flags: part("task_struct", entry.compat_flags)?,
            compat_mask: entry.compat_mask as i32,
            group_leader: field("task_struct", &["group_leader"])?,
            comm: field("task_struct", &["comm"])?,
            pid: field("task_struct", &["pid"])?,
            tgid: field("task_struct", &["tgid"])?,
            start: field("task_struct", &["start_boottime"]).or_else(|_| field("task_struct", &["real_start_time"]))?,
            pid_numbers: (|| {
                Some(PidNumbers {
                    thread_pid: btf.field("task_struct", &["thread_pid"])?,
                    level: btf.field("pid", &["level"])?,
                    numbers: btf.offset_of("pid", &["numbers"])?,
                    upid_size: btf.struct_size("upid")?,
                    nr: btf.field("upid", &["nr"])?,
                })
            })(),
            // Without them (an architecture not in the table), --sites rows have no site.
            site: crate::arch::SITE_REGS
                .and_then(|r| field("pt_regs", &[r.ip]).ok().zip(field("pt_regs", &[r.sp]).ok())),
            vma: (|| {
                Some(VmaReach {
                    vm_start: btf.field("vm_area_struct", &["vm_start"])?,
                    vm_pgoff: btf.field("vm_area_struct", &["vm_pgoff"])?,
                    vm_file: btf.field("vm_area_struct", &["vm_file"])?,
                    vm_flags: btf.field("vm_area_struct", &["vm_flags"])?,
                    f_inode: btf.field("file", &["f_inode"])?,
                    i_ino: btf.field("inode", &["i_ino"])?,
                    i_generation: btf.field("inode", &["i_generation"])?,
                    i_sb: btf.field("inode", &["i_sb"])?,
                    s_dev: btf.field("super_block", &["s_dev"])?,
                    exe_file: btf.field("mm_struct", &["exe_file"])?,
                    saved_auxv: btf.field("mm_struct", &["saved_auxv"])?,
                })
            })(),
            exec: (|| {
                let small = |f: Field| i16::try_from(f.offset).is_ok().then_some(f);
                Some(ExecReach {
                    tracepoint: btf.typedef_id("btf_trace_sched_process_exec")?,
                    mm: small(btf.field("task_struct", &["mm"])?)?,
                    arg_start: small(btf.field("mm_struct", &["arg_start"])?)?,
                    arg_end: small(btf.field("mm_struct", &["arg_end"])?)?,
                    filename: small(btf.field("linux_binprm", &["filename"])?)?,
                })
            })(),
        })
    }

    /// A layout shaped like x86_64's (offsets of a 6.x kernel), for the
    /// golden disassemblies: the programs as generated, with no kernel.
    #[cfg(test)]
    pub fn synthetic() -> Layout {
        let f = |offset, size| Field { offset, size, array: false };
        Layout {
            sys_enter: 100,
            fork: 101,
            vsyscall: Some(102),
            arg0_native: Part::whole(f(112, 8)),
            arg0_compat: Part::whole(f(40, 8)),
            args12_native: [Part::whole(f(104, 8)), Part::whole(f(96, 8))],
            args12_compat: [Part::whole(f(88, 8)), Part::whole(f(96, 8))],
            vdso: Some(VdsoReach { ip: f(128, 8), mm: f(2336, 8), vdso: f(840, 8), len: 8192 }),
            compat_flags: Part::whole(f(8, 4)),
            compat_mask: 2,
            group_leader: f(1552, 8),
            comm: Field { offset: 2000, size: 16, array: true },
            pid: f(1472, 4),
            tgid: f(1476, 4),
            start: f(1712, 8),
            pid_numbers: Some(PidNumbers {
                thread_pid: f(1584, 8),
                level: f(4, 4),
                numbers: 96,
                upid_size: 16,
                nr: f(0, 4),
            }),
            site: Some((f(128, 8), f(152, 8))),
            vma: Some(VmaReach {
                vm_start: f(0, 8),
                vm_pgoff: f(136, 8),
                vm_file: f(144, 8),
                vm_flags: f(32, 8),
                f_inode: f(32, 8),
                i_ino: f(64, 8),
                i_generation: f(232, 4),
                i_sb: f(40, 8),
                s_dev: f(16, 4),
                exe_file: f(960, 8),
                saved_auxv: Field { offset: 400, size: 408, array: true },
            }),
            exec: Some(ExecReach {
                tracepoint: 103,
                mm: f(2336, 8),
                arg_start: f(304, 8),
                arg_end: f(312, 8),
                filename: f(96, 8),
            }),
        }
    }

    /// A layout shaped like arm64's: `regs[31]` at the start of `pt_regs`
    /// and the 8-byte `thread_info.flags` first in `task_struct` (as on
    /// every arm64 kernel), `_TIF_32BIT`, no vsyscall page; the other
    /// `task_struct` offsets are illustrative.
    #[cfg(test)]
    pub fn synthetic_arm64() -> Layout {
        let f = |offset, size| Field { offset, size, array: false };
        let regs = Part::whole(Field { offset: 0, size: 248, array: true });
        Layout {
            sys_enter: 100,
            fork: 101,
            vsyscall: None,
            arg0_native: regs,
            arg0_compat: regs,
            args12_native: [Part { at: 8, ..regs }, Part { at: 16, ..regs }],
            args12_compat: [Part { at: 8, ..regs }, Part { at: 16, ..regs }],
            vdso: Some(VdsoReach { ip: f(256, 8), mm: f(1200, 8), vdso: f(760, 8), len: 4096 }),
            compat_flags: Part::whole(f(0, 8)),
            compat_mask: 1 << 22,
            group_leader: f(1400, 8),
            comm: Field { offset: 1808, size: 16, array: true },
            pid: f(1320, 4),
            tgid: f(1324, 4),
            start: f(1560, 8),
            pid_numbers: None,
            site: None,
            vma: None,
            exec: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_word_is_split_as_it_is_made() {
        for (i, f) in FUNCTIONS.iter().enumerate() {
            let w = key_word(ABI_COMPAT, *f) as u32 as u64;
            let kind = match f.kind() {
                FnKind::Random => CLOCK_RANDOM,
                _ if f.takes_clock() => CLOCK_ID,
                _ => CLOCK_NONE,
            };
            assert_eq!(split_word(w), (ABI_COMPAT, i as u8, kind));
        }
        let mut k = [0u8; key::SIZE];
        k[16..24].copy_from_slice(&77u64.to_ne_bytes());
        k[0..4].copy_from_slice(&42u32.to_ne_bytes());
        assert_eq!((key::TGID.get(&k), key::START.get(&k)), (42, 77));
        assert_eq!(Slot::dw(20).get(&k), 0, "out of bounds reads as 0, never panics");
    }
}
