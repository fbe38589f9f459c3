//! `--sites`: what names a site without its process. At the first call of
//! a site row (the row's insert, never a call that finds its row), the
//! program asks the kernel which mapping holds each of the site's
//! addresses (`bpf_find_vma`, whose callback reads the mapping's start,
//! page offset and file identity: device and inode) and keeps the answer in
//! `vdsoctl_files`, keyed by (process, start, address). User space names
//! the address later from that file (`inspect::symbols::Objects`), whether
//! or not the process still lives: a process that made its calls and
//! exited between two looks is named all the same.
//!
//! Why this and not `bpf_get_stack(.., BPF_F_USER_BUILD_ID)`: the word at
//! the stack pointer (a leaf wrapper's caller) is no frame the stack walk
//! gives; `bpf_find_vma` names any address, file-backed or not, and the
//! device and inode match /proc/PID/maps' columns directly. Why not a
//! ptrace exit stop: it serves `-- CMD` only, not `-a`.

use super::gen::{Generator, KEY, SITE_KEY};
use super::insn::{Alu, Asm, Cond, Helper, Reg, Size, FP, R0, R1, R2, R3, R4, R5, R9};
use super::layout::{key, skey, ABI_COMPAT};
use super::sys;
use crate::measure::trace::sites::{Mapped, MappedAt};
use std::io;

/// Addresses kept: a site's instruction and its stack words.
pub const MAX_FILES: u32 = 2 * super::MAX_SITES;

/// Key (24 bytes): tgid, pad, process start, address.
const KEY_SIZE: usize = 24;
/// Value (48 bytes): vm_start, vm_pgoff, inode, device and flags, the
/// task's vDSO base, the inode's generation, a compat task's AT_SYSINFO.
const VAL_SIZE: usize = 48;
/// Stack slots of the capture (below `gen.rs`' SITE_WORDS).
const FILE_KEY: i16 = -208;
const FILE_VAL: i16 = -256;
/// The task's facts, read once a capture ([`Generator::file_key`]): its
/// vDSO base, its executable's inode, a compat task's AT_SYSINFO and the
/// executable's device (below `stacks.rs`' and `gen.rs`' slots).
const TASK_VDSO: i16 = -336;
const TASK_EXE_INO: i16 = -344;
const TASK_SYSINFO: i16 = -352;
/// The deepest slot of the capture: `--stacks`' frame loop's context
/// points there (every slot above it at a positive offset).
pub(super) const CAPTURE_BASE: i16 = TASK_SYSINFO;
/// Value flags: the mapping has a file; that file is the executable.
const HAS_FILE: i32 = 1;
const IS_EXE: i32 = 2;
/// Value flags: the mapping is executable (`VM_EXEC`): code, not data.
const IS_CODE: i32 = 4;
const VM_EXEC: i32 = 4;
/// `AT_SYSINFO`: the i386 vDSO entry's address, in a compat task's auxv.
const AT_SYSINFO: i32 = 32;

/// The map `vdsoctl_files`.
pub(super) fn create(
    map: impl Fn(sys::MapSpec<'_>) -> crate::error::Result<sys::Map>,
) -> crate::error::Result<sys::Map> {
    map(sys::MapSpec {
        map_type: super::MAP_HASH,
        key_size: KEY_SIZE as u32,
        value_size: VAL_SIZE as u32,
        max_entries: MAX_FILES,
        flags: 0,
        name: "vdsoctl_files",
    })
}

/// Read every captured address.
pub(super) fn read(map: &sys::Map) -> io::Result<Mapped> {
    let mut out = Mapped::new();
    let mut value = [0u8; VAL_SIZE];
    for k in map.keys(MAX_FILES + 1) {
        let k = k?;
        if map.lookup(&k, &mut value)? {
            let dw = |o: usize| u64::from_ne_bytes(k[o..o + 8].try_into().unwrap_or([0; 8]));
            let tgid = u32::from_ne_bytes(k[0..4].try_into().unwrap_or([0; 4])) as i32;
            out.insert((tgid, dw(8), dw(16)), decode(&value));
        }
    }
    Ok(out)
}

impl Generator {
    /// `--sites`, at a site row's first call (R7 the process's start, R9
    /// the current task; R6–R9 kept): capture the mapping of the site's
    /// instruction and of its stack word(s) into `vdsoctl_files`.
    pub(super) fn capture_files(&self, a: &mut Asm) {
        let Some(fd) = self.sites.and_then(|s| s.files) else { return };
        if self.layout.vma.is_none() {
            return;
        }
        a.load(key::TGID.size, R1, FP, KEY + key::TGID.off);
        self.file_key(a, "ffacts");
        a.load(Size::Dw, R1, FP, SITE_KEY + skey::IP.off);
        self.capture_one(a, fd, "fip");
        let ret = SITE_KEY + skey::RET.off;
        a.load(key::WORD.size, R1, FP, KEY + key::WORD.off).alu_imm(Alu::And, R1, 0xff);
        a.jump_imm(Cond::Ne, R1, i32::from(ABI_COMPAT), "files_native");
        // A compat task's two words (`measure::trace::sites::Site::words`).
        a.load(Size::W, R1, FP, ret);
        self.capture_one(a, fd, "flo");
        a.load(Size::W, R1, FP, ret + 4);
        self.capture_one(a, fd, "fhi");
        a.goto("files_done").label("files_native").load(Size::Dw, R1, FP, ret);
        self.capture_one(a, fd, "fword");
        a.label("files_done");
    }

    /// With R1 the tgid and R7 the process's start (R9 the current task):
    /// the key's first part, and what every address of the capture shares,
    /// read once — the task's vDSO base and a compat task's AT_SYSINFO
    /// (the value's), its executable's inode and device (to mark the
    /// mapping of that file). Each load of a pointer from a task or a
    /// mapping costs the verifier a search of the kernel's BTF by name
    /// (`btf_nested_type_is_trusted`: 82% of `--stacks`' load time when
    /// every address read them again; issue 43). Clobbers R1–R5.
    pub(super) fn file_key(&self, a: &mut Asm, tag: &str) {
        a.store(Size::W, FP, FILE_KEY, R1).store_imm(Size::W, FP, FILE_KEY + 4, 0);
        a.store(Size::Dw, FP, FILE_KEY + 8, super::insn::R7);
        for slot in [TASK_VDSO, TASK_EXE_INO, TASK_SYSINFO] {
            a.store_imm(Size::Dw, FP, slot, 0);
        }
        let (Some(v), Some(m)) = (self.layout.vdso, self.layout.vma) else { return };
        let (exe, done) = (format!("{tag}_exe"), format!("{tag}_facts"));
        Self::member(a, Size::Dw, R1, R9, v.mm, 0).jump_imm(Cond::Eq, R1, 0, &done);
        Self::member(a, Size::Dw, R2, R1, v.vdso, 0).store(Size::Dw, FP, TASK_VDSO, R2);
        // A compat task's auxv is saved as 32-bit pairs, AT_SYSINFO
        // (`__kernel_vsyscall`, the vDSO entry libc calls) first: kept,
        // to name that entry without the compat vDSO's image.
        Self::member(a, Size::Dw, R2, R1, m.saved_auxv, 0).mov(R3, R2).alu_imm(Alu::Lsh, R3, 32);
        a.alu_imm(Alu::Rsh, R3, 32).jump_imm(Cond::Ne, R3, AT_SYSINFO, &exe);
        a.alu_imm(Alu::Rsh, R2, 32).store(Size::W, FP, TASK_SYSINFO, R2);
        // The executable: mm->exe_file's inode and its device.
        a.label(&exe);
        Self::member(a, Size::Dw, R1, R1, m.exe_file, 0).jump_imm(Cond::Eq, R1, 0, &done);
        Self::member(a, Size::Dw, R1, R1, m.f_inode, 0).jump_imm(Cond::Eq, R1, 0, &done);
        Self::member(a, Size::Dw, R2, R1, m.i_ino, 0).store(Size::Dw, FP, TASK_EXE_INO, R2);
        Self::member(a, Size::Dw, R1, R1, m.i_sb, 0).jump_imm(Cond::Eq, R1, 0, &done);
        Self::member(a, Size::W, R2, R1, m.s_dev, 0).store(Size::W, FP, TASK_SYSINFO + 4, R2);
        a.label(&done);
    }

    /// R1 an address (0: none): its mapping, by `bpf_find_vma`, into the
    /// map, with the task's facts ([`Generator::file_key`]).
    pub(super) fn capture_one(&self, a: &mut Asm, fd: i32, tag: &str) {
        self.capture_one_at(a, fd, tag, (FP, 0));
    }

    /// [`Generator::capture_one`] with the capture's slots at `base +
    /// slot + delta` (`(FP, 0)`: this frame's; in `--stacks`' frame loop,
    /// the program's frame through the loop's context) and R9 the task.
    pub(super) fn capture_one_at(&self, a: &mut Asm, fd: i32, tag: &str, (base, delta): (Reg, i16)) {
        let at = |slot: i16| slot + delta;
        let skip = format!("{tag}_skip");
        a.jump_imm(Cond::Eq, R1, 0, &skip).store(Size::Dw, base, at(FILE_KEY + 16), R1);
        for i in 0..(VAL_SIZE as i16 / 8) {
            a.store_imm(Size::Dw, base, at(FILE_VAL + 8 * i), 0);
        }
        a.mov(R2, R1).mov(R1, R9).load_func(R3, "vma_cb");
        a.mov(R4, base).alu_imm(Alu::Add, R4, i32::from(at(FILE_VAL))).mov_imm(R5, 0).call(Helper::FindVma);
        a.jump_imm(Cond::Ne, R0, 0, &skip);
        if self.layout.vdso.is_some() {
            a.load(Size::Dw, R1, base, at(TASK_VDSO)).store(Size::Dw, base, at(FILE_VAL + 32), R1);
            a.load(Size::W, R1, base, at(TASK_SYSINFO)).store(Size::W, base, at(FILE_VAL + 44), R1);
            // The executable: the same inode and device as mm->exe_file's.
            let other = format!("{tag}_other");
            a.load(Size::W, R1, base, at(FILE_VAL + 28)).jump_imm(Cond::Ne, R1, IS_CODE | HAS_FILE, &other);
            a.load(Size::Dw, R1, base, at(TASK_EXE_INO)).jump_imm(Cond::Eq, R1, 0, &other);
            a.load(Size::Dw, R2, base, at(FILE_VAL + 16)).jump_reg(Cond::Ne, R1, R2, &other);
            a.load(Size::W, R1, base, at(TASK_SYSINFO + 4)).load(Size::W, R2, base, at(FILE_VAL + 24));
            a.jump_reg(Cond::Ne, R1, R2, &other);
            a.store_imm(Size::W, base, at(FILE_VAL + 28), IS_CODE | HAS_FILE | IS_EXE).label(&other);
        }
        a.load_map(R1, fd).mov(R2, base).alu_imm(Alu::Add, R2, i32::from(at(FILE_KEY)));
        a.mov(R3, base).alu_imm(Alu::Add, R3, i32::from(at(FILE_VAL))).mov_imm(R4, super::gen::NOEXIST);
        a.call(Helper::MapUpdateElem).label(&skip);
    }

    /// The `bpf_find_vma` callback (R1 the task, R2 the mapping, R3 the
    /// value on the caller's stack), after the program's last `exit`.
    pub(super) fn vma_callback(&self, a: &mut Asm) {
        let files = self.sites.and_then(|s| s.files).or(self.stacks.and_then(|s| s.files));
        let (Some(v), Some(_)) = (self.layout.vma, files) else { return };
        a.label("vma_cb");
        Self::member(a, Size::Dw, R4, R2, v.vm_start, 0).store(Size::Dw, R3, 0, R4);
        Self::member(a, Size::Dw, R4, R2, v.vm_pgoff, 0).store(Size::Dw, R3, 8, R4);
        Self::member(a, Size::Dw, R4, R2, v.vm_flags, 0).alu_imm(Alu::And, R4, VM_EXEC);
        a.jump_imm(Cond::Eq, R4, 0, "vma_cb_out").store_imm(Size::W, R3, 28, IS_CODE);
        Self::member(a, Size::Dw, R4, R2, v.vm_file, 0).jump_imm(Cond::Eq, R4, 0, "vma_cb_out");
        Self::member(a, Size::Dw, R4, R4, v.f_inode, 0).jump_imm(Cond::Eq, R4, 0, "vma_cb_out");
        Self::member(a, Size::Dw, R5, R4, v.i_ino, 0).store(Size::Dw, R3, 16, R5);
        Self::member(a, Size::W, R5, R4, v.i_generation, 0).store(Size::W, R3, 40, R5);
        a.store_imm(Size::W, R3, 28, IS_CODE | HAS_FILE);
        Self::member(a, Size::Dw, R4, R4, v.i_sb, 0).jump_imm(Cond::Eq, R4, 0, "vma_cb_out");
        Self::member(a, Size::W, R5, R4, v.s_dev, 0).store(Size::W, R3, 24, R5);
        a.label("vma_cb_out").mov_imm(R0, 0).exit();
    }
}

/// A `vdsoctl_files` value.
fn decode(v: &[u8]) -> MappedAt {
    let dw = |o: usize| v.get(o..o + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])));
    let w = |o: usize| v.get(o..o + 4).map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])));
    let flags = w(28) as i32;
    MappedAt {
        vm_start: dw(0),
        pgoff: dw(8),
        ino: if flags & HAS_FILE != 0 { dw(16) } else { 0 },
        dev: w(24),
        is_exe: flags & IS_EXE != 0,
        is_code: flags & IS_CODE != 0,
        vdso: dw(32),
        generation: w(40),
        sysinfo: w(44),
    }
}

/// A program with subprograms (`bpf_find_vma`'s callback) must name each
/// in BTF (`bpf_func_info`): the blob (an `int`-returning prototype and a
/// static FUNC per subprogram) and the records, from the instructions'
/// subprogram references (`ld_imm64` with `BPF_PSEUDO_FUNC`); `None` for a
/// program without any.
pub(super) fn func_info(insns: &[u64]) -> Option<(Vec<u8>, Vec<[u32; 2]>)> {
    let mut starts: Vec<u32> = insns
        .iter()
        .enumerate()
        .filter(|(_, i)| **i as u8 == 0x18 && (**i >> 12) & 0xf == 4)
        .map(|(at, i)| (at as i64 + 1 + i64::from((*i >> 32) as u32 as i32)) as u32)
        .collect();
    if starts.is_empty() {
        return None;
    }
    starts.sort_unstable();
    starts.dedup();
    // Strings: "", "long", "prog", "sub".
    let strings = b"\0long\0prog\0sub\0";
    let mut types: Vec<u32> = vec![
        1,
        1 << 24,
        8,
        (1 << 24) | 64, // [1] INT long: signed, 64 bits
        0,
        13 << 24,
        1, //                [2] FUNC_PROTO long (void)
        6,
        12 << 24,
        2, //                [3] FUNC prog, static
        11,
        12 << 24,
        2, //               [4] FUNC sub, static
    ];
    let type_len = (types.len() * 4) as u32;
    let mut blob = Vec::new();
    blob.extend(0xeb9f_u16.to_ne_bytes());
    blob.extend([1u8, 0]);
    for w in [24, 0, type_len, type_len, strings.len() as u32] {
        blob.extend(w.to_ne_bytes());
    }
    blob.extend(types.drain(..).flat_map(u32::to_ne_bytes));
    blob.extend(strings);
    let records = std::iter::once([0, 3]).chain(starts.into_iter().map(|s| [s, 4])).collect();
    Some((blob, records))
}
