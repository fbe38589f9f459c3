//! A typed eBPF instruction builder with labels, the way the kernel's own
//! samples and selftests write small programs (`tools/include/linux/filter.h`):
//! no compiler, no object file, no new build-time tool.
//! Encoding: <https://docs.kernel.org/bpf/standardization/instruction-set.html>.

use std::collections::HashMap;

/// A register: R0 return value, R1–R5 arguments (clobbered by calls),
/// R6–R9 callee-saved, R10 the read-only frame pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg(pub u8);

pub const R0: Reg = Reg(0);
pub const R1: Reg = Reg(1);
pub const R2: Reg = Reg(2);
pub const R3: Reg = Reg(3);
pub const R4: Reg = Reg(4);
pub const R5: Reg = Reg(5);
pub const R6: Reg = Reg(6);
pub const R7: Reg = Reg(7);
pub const R8: Reg = Reg(8);
pub const R9: Reg = Reg(9);
pub const FP: Reg = Reg(10);

/// Access sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    W = 0x00,
    Dw = 0x18,
}

impl Size {
    /// Bytes accessed.
    pub fn bytes(self) -> u32 {
        match self {
            Size::W => 4,
            Size::Dw => 8,
        }
    }
}

const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const MEM: u8 = 0x60;
const IMM: u8 = 0x00;
const K: u8 = 0x00;
const X: u8 = 0x08;

/// ALU operations used here.
#[derive(Debug, Clone, Copy)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    /// Unsigned division.
    Div = 0x30,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Mov = 0xb0,
    Arsh = 0xc0,
}

/// Conditional jumps used here.
#[derive(Debug, Clone, Copy)]
pub enum Cond {
    Eq = 0x10,
    /// Unsigned `>`.
    Gt = 0x20,
    /// Unsigned `>=`.
    Ge = 0x30,
    Ne = 0x50,
    /// Signed `>=`.
    Sge = 0x70,
    /// Signed `<`.
    Slt = 0xc0,
    /// Signed `<=`.
    Sle = 0xd0,
}

/// Kernel helper functions by their stable ids (`enum bpf_func_id`).
#[derive(Debug, Clone, Copy)]
pub enum Helper {
    MapLookupElem = 1,
    MapUpdateElem = 2,
    GetCurrentPidTgid = 14,
    /// `bpf_current_task_under_cgroup(map, index)` (4.9): 1 when the
    /// current task is in the v2 cgroup at `index` or below it.
    CurrentTaskUnderCgroup = 37,
    /// `bpf_probe_read_kernel` (5.5): a read through a computed address.
    ProbeReadKernel = 113,
    /// `bpf_probe_read_kernel_str` (5.5): a NUL-terminated string, cut
    /// at the buffer's size.
    ProbeReadKernelStr = 115,
    /// `bpf_get_ns_current_pid_tgid` (5.7): the current task's ids in a
    /// given pid namespace.
    GetNsCurrentPidTgid = 120,
    /// `bpf_probe_read_user` (5.5): a user-space read that may fail (a
    /// page not present is not faulted in), zero-filling its buffer then.
    ProbeReadUser = 112,
    GetStackid = 27,
    /// `bpf_get_stack(ctx, buf, size, flags)` (4.18): the stack's frames
    /// into `buf`; the bytes written.
    GetStack = 67,
    GetCurrentTaskBtf = 158,
    /// `bpf_get_current_comm(buf, size)`.
    GetCurrentComm = 16,
    /// `bpf_task_pt_regs(task)` (5.15): the task's user registers, BTF-typed.
    TaskPtRegs = 175,
    /// `bpf_find_vma(task, addr, callback, ctx, 0)` (5.17): calls
    /// `callback(task, vma, ctx)` with the task's mapping that holds `addr`
    /// (under its mmap lock, taken with a trylock); -ENOENT when none does.
    FindVma = 180,
    /// `bpf_loop(n, callback, ctx, 0)` (5.17): calls `callback(i, ctx)` for
    /// i in 0..n until it returns 1; the verifier checks the callback's
    /// body once, not n times (and inlines the loop).
    Loop = 181,
}

/// `BPF_ATOMIC` mode (`BPF_XADD` before Linux 5.12: the same encoding).
const ATOMIC: u8 = 0xc0;

/// `src_reg` value marking a 64-bit immediate as a map fd.
const PSEUDO_MAP_FD: u8 = 1;
/// `src_reg` value marking a 64-bit immediate as a subprogram (a callback),
/// its immediate the distance in instructions from the next one.
const PSEUDO_FUNC: u8 = 4;

fn encode(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> u64 {
    u64::from(code)
        | u64::from(dst.0 & 0xf) << 8
        | u64::from(src.0 & 0xf) << 12
        | u64::from(off as u16) << 16
        | u64::from(imm as u32) << 32
}

/// Instructions as the kernel reads them (`struct bpf_insn` in the host's
/// byte order): `Asm` keeps each as `code | dst << 8 | src << 12 | off << 16
/// | imm << 32`, which is that struct's memory on a little-endian host. On
/// a big-endian one (s390x) the struct's bytes are code, `dst << 4 | src`
/// (bitfields fill from the top there), then `off` and `imm` big-endian.
pub fn wire(insns: &[u64]) -> Vec<u64> {
    insns.iter().map(|&i| if cfg!(target_endian = "big") { big_endian(i) } else { i }).collect()
}

/// One instruction's `struct bpf_insn` as a big-endian host's u64.
fn big_endian(i: u64) -> u64 {
    let (code, dst, src) = (i & 0xff, (i >> 8) & 0xf, (i >> 12) & 0xf);
    let (off, imm) = ((i >> 16) & 0xffff, i >> 32);
    code << 56 | (dst << 4 | src) << 48 | off << 32 | imm
}

/// A program being assembled; jumps name labels resolved by `finish`.
#[derive(Debug, Default)]
pub struct Asm {
    insns: Vec<u64>,
    labels: HashMap<String, usize>,
    /// Labels placed more than once.
    duplicates: Vec<String>,
    /// (instruction index, label) of jumps to patch.
    fixups: Vec<(usize, String)>,
    /// (instruction index, label) of subprogram addresses to patch.
    funcs: Vec<(usize, String)>,
    /// Errors found while generating (a load that does not fit its member).
    errors: Vec<String>,
    /// The program's context starts with the user registers (`sys_enter`'s
    /// `struct pt_regs *`): a piece may read them through it.
    pub regs_at_ctx: bool,
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, insn: u64) -> &mut Asm {
        self.insns.push(insn);
        self
    }

    /// `dst op= imm` (64-bit).
    pub fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) -> &mut Asm {
        self.push(encode(ALU64 | op as u8 | K, dst, R0, 0, imm))
    }

    /// `dst op= src` (64-bit).
    pub fn alu_reg(&mut self, op: Alu, dst: Reg, src: Reg) -> &mut Asm {
        self.push(encode(ALU64 | op as u8 | X, dst, src, 0, 0))
    }

    /// `dst = imm`.
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Asm {
        self.alu_imm(Alu::Mov, dst, imm)
    }

    /// `dst = src`.
    pub fn mov(&mut self, dst: Reg, src: Reg) -> &mut Asm {
        self.alu_reg(Alu::Mov, dst, src)
    }

    /// `dst = *(size *)(src + off)`.
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Asm {
        self.push(encode(LDX | MEM | size as u8, dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = src`.
    pub fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(encode(STX | MEM | size as u8, dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Asm {
        self.push(encode(ST | MEM | size as u8, dst, R0, off, imm))
    }

    /// `lock *(u64 *)(dst + off) += src` (an atomic add, for a value every
    /// CPU shares).
    pub fn atomic_add(&mut self, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(encode(STX | ATOMIC | Size::Dw as u8, dst, src, off, 0))
    }

    /// `src = atomic_fetch_add(*(u64 *)(dst + off), src)` (`BPF_ADD |
    /// BPF_FETCH`, Linux 5.12): the value before the add into `src`.
    pub fn atomic_fetch_add(&mut self, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(encode(STX | ATOMIC | Size::Dw as u8, dst, src, off, 1))
    }

    /// `dst = map` (a 64-bit immediate the kernel turns into the map's address).
    pub fn load_map(&mut self, dst: Reg, map_fd: i32) -> &mut Asm {
        self.push(encode(LD | IMM | Size::Dw as u8, dst, Reg(PSEUDO_MAP_FD), 0, map_fd));
        self.push(0)
    }

    /// `dst = imm` (a 64-bit immediate, two words).
    pub fn load_imm64(&mut self, dst: Reg, imm: u64) -> &mut Asm {
        self.push(encode(LD | IMM | Size::Dw as u8, dst, R0, 0, imm as u32 as i32));
        self.push(encode(0, R0, R0, 0, (imm >> 32) as u32 as i32))
    }

    /// `dst = the subprogram at label` (a callback for a helper such as
    /// `bpf_find_vma`; it ends with its own `exit`).
    pub fn load_func(&mut self, dst: Reg, label: &str) -> &mut Asm {
        self.funcs.push((self.insns.len(), label.to_string()));
        self.push(encode(LD | IMM | Size::Dw as u8, dst, Reg(PSEUDO_FUNC), 0, 0));
        self.push(0)
    }

    /// `if dst <cond> imm goto label`.
    pub fn jump_imm(&mut self, cond: Cond, dst: Reg, imm: i32, label: &str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label.to_string()));
        self.push(encode(JMP | cond as u8 | K, dst, R0, 0, imm))
    }

    /// `if dst <cond> src goto label`.
    pub fn jump_reg(&mut self, cond: Cond, dst: Reg, src: Reg, label: &str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label.to_string()));
        self.push(encode(JMP | cond as u8 | X, dst, src, 0, 0))
    }

    /// `goto label`.
    pub fn goto(&mut self, label: &str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label.to_string()));
        self.push(encode(JMP, R0, R0, 0, 0))
    }

    /// Call a kernel helper (arguments in R1–R5, result in R0).
    pub fn call(&mut self, helper: Helper) -> &mut Asm {
        self.push(encode(JMP | 0x80, R0, R0, 0, helper as i32))
    }

    /// `return R0`.
    pub fn exit(&mut self) -> &mut Asm {
        self.push(encode(JMP | 0x90, R0, R0, 0, 0))
    }

    /// Mark the next instruction as `label`. A label placed twice is an
    /// error at [`Asm::finish`] (a jump to it would be ambiguous).
    pub fn label(&mut self, label: &str) -> &mut Asm {
        if self.labels.insert(label.to_string(), self.insns.len()).is_some() {
            self.duplicates.push(label.to_string());
        }
        self
    }

    /// Record an error found while generating: [`Asm::finish`] returns it.
    pub fn fail(&mut self, why: String) -> &mut Asm {
        self.errors.push(why);
        self
    }

    /// Resolve the jumps; an error names a generation error, a label placed
    /// twice, one never placed, or a jump out of `i16` range (a bug in the
    /// program generator).
    pub fn finish(mut self) -> Result<Vec<u64>, String> {
        if let Some(why) = self.errors.first() {
            return Err(why.clone());
        }
        if let Some(label) = self.duplicates.first() {
            return Err(format!("label {label} placed twice"));
        }
        for (at, label) in &self.fixups {
            let target = *self.labels.get(label).ok_or_else(|| format!("no label {label}"))?;
            let off = i16::try_from(target as i64 - *at as i64 - 1).map_err(|_| format!("jump to {label} too far"))?;
            let insn = &mut self.insns[*at];
            *insn = (*insn & !(0xffff << 16)) | u64::from(off as u16) << 16;
        }
        for (at, label) in &self.funcs {
            let target = *self.labels.get(label).ok_or_else(|| format!("no label {label}"))?;
            let off = target as i64 - *at as i64 - 1;
            let insn = &mut self.insns[*at];
            *insn = (*insn & 0xffff_ffff) | u64::from(off as i32 as u32) << 32;
        }
        Ok(self.insns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r3 = *(u64 *)(r6 + 8)` and `r0 = -2` as s390x's clang writes
    /// them (`llvm-objdump -d` of a `bpfeb` object): code, then
    /// `dst << 4 | src`, then `off` and `imm` big-endian.
    #[test]
    fn big_endian_hosts_get_the_big_endian_struct() {
        let mut a = Asm::new();
        a.load(Size::Dw, R3, R6, 8).mov_imm(R0, -2);
        let insns = a.finish().unwrap();
        let bytes: Vec<[u8; 8]> = insns.iter().map(|&i| big_endian(i).to_be_bytes()).collect();
        assert_eq!(bytes[0], [0x79, 0x36, 0x00, 0x08, 0, 0, 0, 0]);
        assert_eq!(bytes[1], [0xb7, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xfe]);
        // A little-endian host's bytes are the same fields in its order.
        assert_eq!(insns[0].to_le_bytes(), [0x79, 0x63, 0x08, 0x00, 0, 0, 0, 0]);
        if cfg!(target_endian = "little") {
            assert_eq!(wire(&insns), insns);
        }
    }

    #[test]
    fn encodes_like_the_kernel_macros() {
        let mut a = Asm::new();
        // BPF_MOV64_IMM(BPF_REG_0, 0) = b7 00 0000 00000000; BPF_EXIT_INSN() = 95.
        a.mov_imm(R0, 0).exit();
        assert_eq!(a.finish().unwrap(), vec![0xb7, 0x95]);
        // BPF_LDX_MEM(BPF_DW, R7, R6, 8) = 79 67 0800 00000000.
        let mut a = Asm::new();
        a.load(Size::Dw, R7, R6, 8);
        assert_eq!(a.finish().unwrap(), vec![0x0008_6779]);
        // BPF_ATOMIC_OP(BPF_DW, BPF_ADD, R6, R1, 8) = db 16 0800 00000000.
        let mut a = Asm::new();
        a.atomic_add(R6, 8, R1);
        assert_eq!(a.finish().unwrap(), vec![0x0008_16db]);
    }

    #[test]
    fn jumps_resolve_to_labels_forward_and_back() {
        let mut a = Asm::new();
        a.label("top").jump_imm(Cond::Eq, R1, 5, "out").goto("top").label("out").exit();
        let p = a.finish().unwrap();
        assert_eq!((p[0] >> 16) as u16 as i16, 1);
        assert_eq!((p[1] >> 16) as u16 as i16, -2);
        let mut a = Asm::new();
        a.goto("nowhere");
        assert!(a.finish().is_err());
    }

    #[test]
    fn a_label_placed_twice_is_an_error() {
        let mut a = Asm::new();
        a.label("x").mov_imm(R0, 0).label("x").exit();
        assert_eq!(a.finish().unwrap_err(), "label x placed twice");
    }
}
