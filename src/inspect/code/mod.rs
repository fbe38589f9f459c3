//! x86 machine code decoded around candidate call sites (iced-x86's
//! decoder): which instructions really call the [vsyscall] page or make a
//! clock syscall, with the syscall number and clock id when they are
//! constants on every path to the instruction in its function.
//!
//! Two passes, so a tree of thousands of files stays fast:
//! - [`candidates`]: a byte search (memchr) for what a site must contain:
//!   `0f 05` (syscall), `cd 80` (int 0x80), `0f 34` (sysenter), the
//!   [vsyscall] address (`.. 60 ff`), `call`/`jmp rel32` (E8/E9) landing on
//!   libc's `syscall()` (its PLT stub or its static address) or a vsyscall
//!   entry, and `call`/`jmp *mem` (FF 15/FF 25) through `syscall`'s GOT slot;
//! - [`analyze`]: decode a range (a window before the candidate, or the
//!   enclosing function from its symbol) and keep only real instructions,
//!   following the constants moved into registers (and, on i386, pushed as
//!   arguments) through the range's control flow ([`flow`]: loops and
//!   joins, a call keeping the callee-saved registers).
//!
//! A byte pattern that is data (a table holding the vsyscall address, an
//! immediate that happens to contain `0f 05`) is no instruction there, so
//! it is no site.

use crate::arch::{Abi, FnKind, VdsoFn};
use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};
use serde::Serialize;

/// The legacy [vsyscall] entry points (x86_64): gettimeofday, time, getcpu.
pub const VSYSCALL_ENTRIES: [u64; 3] =
    [crate::arch::vsyscall::GETTIMEOFDAY, crate::arch::vsyscall::TIME, crate::arch::vsyscall::GETCPU];

/// How a site reaches the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A call or jump into the fixed [vsyscall] page.
    Vsyscall,
    /// The `syscall` instruction (x86_64 numbers).
    Syscall,
    /// `int 0x80` (i386 numbers, also from 64-bit code).
    Int80,
    /// `sysenter` (i386 numbers).
    Sysenter,
    /// A call of libc's `syscall()` with the number as first argument.
    LibcSyscall,
    /// `svc #0` (aarch64 numbers in x8).
    Svc,
}

impl Via {
    pub fn text(self) -> &'static str {
        match self {
            Via::Vsyscall => "[vsyscall] call",
            Via::Syscall => "syscall",
            Via::Int80 => "int 0x80",
            Via::Sysenter => "sysenter",
            Via::LibcSyscall => "syscall()",
            Via::Svc => "svc #0",
        }
    }
}

/// One real call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Site {
    /// The calling instruction's virtual address.
    pub addr: u64,
    pub via: Via,
    /// The clock function a raw syscall makes (None for [vsyscall] calls).
    pub function: Option<VdsoFn>,
    /// The clock id, when a constant in the block (clock_gettime only).
    pub clock: Option<i64>,
    /// The [vsyscall] entry called.
    pub entry: Option<u64>,
    /// The enclosing function (`.symtab`, else `.dynsym`).
    pub symbol: Option<String>,
}

/// Where calls of libc's `syscall()` land.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// Look for [vsyscall] calls (x86_64 code).
    pub vsyscall: bool,
    /// Look for direct `call`/`jmp rel32` into the page too: only code at a
    /// fixed address (ET_EXEC) can reach a fixed address that way.
    pub vsyscall_rel32: bool,
    /// Addresses a direct call of `syscall()` lands on: its PLT stubs, or
    /// the function itself in a static binary.
    pub syscall_fn: Vec<u64>,
    /// GOT slots an indirect `call *slot` of `syscall()` reads (`-fno-plt`).
    pub syscall_got: Vec<u64>,
}

/// The target of the direct `call rel32` (`e8`) that ends just before
/// return address `ret` (`before`: the 5 bytes there), if that instruction
/// is one; `bits`: 32 wraps the target as the CPU does.
pub fn direct_call_before(before: &[u8], ret: u64, bits: u32) -> Option<u64> {
    let b = before.get(before.len().checked_sub(5)?..)?;
    if b[0] != 0xe8 {
        return None;
    }
    let rel = i32::from_le_bytes([b[1], b[2], b[3], b[4]]) as i64 as u64;
    let target = ret.wrapping_add(rel);
    Some(if bits == 32 { target & 0xffff_ffff } else { target })
}

/// Offsets in `code` (loaded at `base`) where a site may be, sorted.
pub fn candidates(code: &[u8], base: u64, bits: u32, t: &Targets) -> Vec<usize> {
    let mut out = Vec::new();
    let n = code.len();
    let numbered = |c: usize| has_clock_number(&code[c.saturating_sub(REACH)..c], bits);
    if bits == 64 {
        out.extend(memchr::memmem::find_iter(code, b"\x0f\x05").filter(|&c| numbered(c)));
    } else {
        out.extend(memchr::memmem::find_iter(code, b"\x0f\x34").filter(|&c| numbered(c)));
    }
    out.extend(memchr::memmem::find_iter(code, b"\xcd\x80").filter(|&c| numbered(c)));
    if t.vsyscall {
        // Only a register load can lead to a call through the register:
        // REX.W C7 C0+r imm32 (the `60 ff` 5 bytes in), REX.W B8+r imm64 (4 bytes in).
        let rex = |b: u8| b == 0x48 || b == 0x49;
        for j in memchr::memmem::find_iter(code, b"\x60\xff") {
            // gcc -O0's `movq $0xffffffffff600000,-0x8(%rbp)`: REX.W C7
            // modrm [disp8 | disp32] imm32, the pointer kept in the frame.
            out.extend((j.saturating_sub(10)..j.saturating_sub(3)).filter(|&c| stores_entry(code, c, j)));
            if let Some(c) = j.checked_sub(5).filter(|&i| i + 7 <= n) {
                let imm = u32::from_le_bytes([code[c + 3], code[c + 4], code[c + 5], code[c + 6]]) as i32 as i64 as u64;
                if rex(code[c]) && code[c + 1] == 0xc7 && code[c + 2] & 0xf8 == 0xc0 && VSYSCALL_ENTRIES.contains(&imm)
                {
                    out.push(c);
                }
            }
            if let Some(c) = j.checked_sub(4).filter(|&i| i + 10 <= n) {
                let mut v = [0u8; 8];
                v.copy_from_slice(&code[c + 2..c + 10]);
                if rex(code[c]) && code[c + 1] & 0xf8 == 0xb8 && VSYSCALL_ENTRIES.contains(&u64::from_le_bytes(v)) {
                    out.push(c);
                }
            }
        }
    }
    let entry = |v: u64| t.vsyscall_rel32 && VSYSCALL_ENTRIES.contains(&v);
    if t.vsyscall_rel32 || !t.syscall_fn.is_empty() {
        for i in memchr::memchr2_iter(0xe8, 0xe9, code).filter(|i| i + 5 <= n) {
            let rel = i32::from_le_bytes([code[i + 1], code[i + 2], code[i + 3], code[i + 4]]);
            let to = base.wrapping_add(i as u64 + 5).wrapping_add(rel as i64 as u64);
            let to = if bits == 32 { to & 0xffff_ffff } else { to };
            if entry(to) || t.syscall_fn.contains(&to) && numbered(i) {
                out.push(i);
            }
        }
    }
    if !t.syscall_got.is_empty() {
        let call = memchr::memmem::find_iter(code, b"\xff\x15");
        for i in call.chain(memchr::memmem::find_iter(code, b"\xff\x25")).filter(|i| i + 6 <= n) {
            let d = u32::from_le_bytes([code[i + 2], code[i + 3], code[i + 4], code[i + 5]]);
            let to = if bits == 64 {
                base.wrapping_add(i as u64 + 6).wrapping_add(d as i32 as i64 as u64)
            } else {
                u64::from(d)
            };
            if t.syscall_got.contains(&to) && numbered(i) {
                out.push(i);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `window` holds a clock syscall number as an instruction would:
/// a 32-bit little-endian immediate (`mov $228,%eax`, `push $265`,
/// `movl $265,(%esp)`) or `push imm8`. A syscall whose number is not
/// in the bytes before it cannot have it as a constant in its block.
fn has_clock_number(window: &[u8], bits: u32) -> bool {
    let abis: &[Abi] = if bits == 64 { &[Abi::X86_64, Abi::I386] } else { &[Abi::I386] };
    abis.iter().flat_map(|a| a.vdso_syscalls()).any(|(f, nr)| {
        if !is_site_fn(*f) {
            return false;
        }
        let imm = (*nr as u32).to_le_bytes();
        memchr::memmem::find(window, &imm).is_some()
            || *nr < 0x80 && memchr::memmem::find(window, &[0x6a, *nr as u8]).is_some()
    })
}

/// How far before a candidate the window decode starts, and after it ends.
pub const BEFORE: usize = 96;
pub const AFTER: usize = 48;

/// How far from an x86 candidate its constants are looked for: a clock
/// syscall number loaded before a loop (`mov $228,%r10d` … `mov %r10,%rax;
/// syscall`), a [vsyscall] entry loaded into a register and called through
/// later in the loop ([`reach_after`]).
pub const REACH: usize = 512;

/// Where the window decode of the candidate at `c` ends: a register load
/// of a [vsyscall] entry is followed to its calls, [`REACH`] bytes on; a
/// call or syscall needs only the bytes after it.
pub fn reach_after(code: &[u8], c: usize) -> usize {
    c + if is_load(code, c) { REACH } else { AFTER }
}

/// Whether the candidate at `c` is a register load of a [vsyscall] entry
/// (or its store into a frame slot, [`stores_entry`]).
fn is_load(code: &[u8], c: usize) -> bool {
    matches!(code.get(c), Some(0x48 | 0x49)) && code.get(c + 1).is_some_and(|&b| b == 0xc7 || b & 0xf8 == 0xb8)
}

/// Whether the instruction decoded at `c` (64-bit) is a `mov` of a
/// [vsyscall] entry into a frame slot, `disp(%rbp)`, whose immediate holds
/// the `60 ff` bytes found at `j`.
fn stores_entry(code: &[u8], c: usize, j: usize) -> bool {
    let Some(bytes) = code.get(c..(c + 15).min(code.len())) else { return false };
    if !matches!(bytes.first(), Some(0x48 | 0x49)) || bytes.get(1) != Some(&0xc7) {
        return false;
    }
    let ins = Decoder::new(64, bytes, DecoderOptions::NONE).decode();
    !ins.is_invalid()
        && ins.mnemonic() == Mnemonic::Mov
        && c + ins.len() == j + 2
        && frame_disp(&ins, 0, 64).is_some()
        && imm(&ins, 1).is_some_and(|v| VSYSCALL_ENTRIES.contains(&v))
}

/// The displacement of operand `op` when it is a frame slot: memory at
/// `disp(%rbp)` (`%ebp` in 32-bit code), with no index.
fn frame_disp(ins: &Instruction, op: u32, bits: u32) -> Option<i64> {
    let frame = if bits == 64 { Register::RBP } else { Register::EBP };
    (ins.op_kind(op) == OpKind::Memory && ins.memory_base() == frame && ins.memory_index() == Register::None).then(
        || {
            if bits == 64 {
                ins.memory_displacement64() as i64
            } else {
                ins.memory_displacement32() as i32 as i64
            }
        },
    )
}

/// Where the window decode of the candidate at `c` starts: [`BEFORE`]
/// bytes back, where a load, a call's arguments and most syscall numbers
/// are; [`REACH`] bytes back only when the clock number is no nearer (a
/// number hoisted before the loop), so the wide decode stays rare.
pub fn window_start(code: &[u8], base: u64, bits: u32, c: usize) -> Option<usize> {
    let near = is_load(code, c) || has_clock_number(&code[c.saturating_sub(BEFORE)..c.min(code.len())], bits);
    sync_start_within(code, base, bits, c, if near { BEFORE } else { REACH })
}

/// The offset in `code` from which decoding lands exactly on `at`, as far
/// back as [`BEFORE`] allows (x86 decoding resynchronises within a few
/// instructions); None when no start does (`at` is inside an instruction).
pub fn sync_start(code: &[u8], base: u64, bits: u32, at: usize) -> Option<usize> {
    sync_start_within(code, base, bits, at, BEFORE)
}

/// [`sync_start`] from up to `before` (at most [`REACH`]) bytes back.
pub fn sync_start_within(code: &[u8], base: u64, bits: u32, at: usize, before: usize) -> Option<usize> {
    let lo = at.saturating_sub(before.min(REACH));
    // Offsets (from lo) known to lead past `at`: a start that reaches one
    // follows the same path, so it is not decoded again.
    let mut dead = [false; REACH + 1];
    let mut path = Vec::with_capacity(32);
    let mut ins = Instruction::default();
    let end = (at + 16).min(code.len());
    let mut dec = Decoder::with_ip(bits, &code[lo..end], base.wrapping_add(lo as u64), DecoderOptions::NONE);
    for start in lo..=at {
        if dead[start - lo] {
            continue;
        }
        if dec.set_position(start - lo).is_err() {
            return None;
        }
        dec.set_ip(base.wrapping_add(start as u64));
        path.clear();
        let mut pos = start;
        loop {
            if pos == at {
                return Some(start);
            }
            if pos > at || !dec.can_decode() || dead[pos - lo] && pos != start {
                break;
            }
            path.push(pos - lo);
            dec.decode_out(&mut ins);
            if ins.is_invalid() {
                break;
            }
            pos += ins.len();
        }
        for &p in &path {
            dead[p] = true;
        }
    }
    None
}

/// Whether decoding `code` from its start lands on offset `at`.
pub fn lands_on(code: &[u8], bits: u32, at: usize) -> bool {
    let mut dec = Decoder::new(bits, code, DecoderOptions::NONE);
    let mut ins = Instruction::default();
    let mut pos = 0;
    while pos < at && dec.can_decode() {
        dec.decode_out(&mut ins);
        pos += ins.len();
    }
    pos == at
}

/// The targets of direct branches (jumps, conditional jumps) in `code`
/// loaded at `base`, sorted: the block starts for [`analyze`].
pub fn branch_targets(code: &[u8], base: u64, bits: u32) -> Vec<u64> {
    let mut dec = Decoder::with_ip(bits, code, base, DecoderOptions::NONE);
    let mut ins = Instruction::default();
    let mut out = Vec::new();
    while dec.can_decode() {
        dec.decode_out(&mut ins);
        let m = ins.mnemonic();
        if (is_jmp(m) || ends_block(m))
            && matches!(ins.op0_kind(), OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64)
        {
            out.push(ins.near_branch_target());
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// GPR slot (0..16) and size in bytes of a general-purpose register (the
/// decoder feature alone has no register info, so from iced's enum order:
/// AL..R15L, AX..R15W, EAX..R15D, RAX..R15).
fn gpr(r: Register) -> Option<(usize, u32)> {
    let n = r as usize;
    let at = |first: Register| n.checked_sub(first as usize).filter(|i| *i < 16);
    if let Some(i) = at(Register::RAX) {
        Some((i, 8))
    } else if let Some(i) = at(Register::EAX) {
        Some((i, 4))
    } else if let Some(i) = at(Register::AX) {
        Some((i, 2))
    } else {
        // AL CL DL BL, AH CH DH BH, SPL BPL SIL DIL, R8L..R15L
        let i = n.checked_sub(Register::AL as usize).filter(|i| *i < 20)?;
        Some((if i < 4 { i } else { i - 4 }, 1))
    }
}

fn slot(r: Register) -> Option<usize> {
    gpr(r).map(|(i, _)| i)
}

/// Control flow by mnemonic (iced's flow-control info needs its
/// `instr_info` feature).
fn is_call(m: Mnemonic) -> bool {
    m == Mnemonic::Call
}

fn is_jmp(m: Mnemonic) -> bool {
    m == Mnemonic::Jmp
}

fn ends_block(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(
        m,
        Ja | Jae
            | Jb
            | Jbe
            | Je
            | Jg
            | Jge
            | Jl
            | Jle
            | Jne
            | Jno
            | Jnp
            | Jns
            | Jo
            | Jp
            | Js
            | Jcxz
            | Jecxz
            | Jrcxz
            | Loop
            | Loope
            | Loopne
            | Ret
            | Retf
            | Iret
            | Iretd
            | Iretq
            | Ud2
            | Hlt
    )
}

const RAX: usize = 0;
const RCX: usize = 1;
const RDX: usize = 2;
const RBX: usize = 3;
const RBP: usize = 5;
const RSI: usize = 6;
const RDI: usize = 7;
const R11: usize = 11;

/// Register and stack constants known at a point of the code.
#[derive(Default, Clone, PartialEq)]
struct State {
    regs: [Option<u64>; 16],
    /// i386: values pushed since the block began (None: not a constant).
    pushes: Vec<Option<u64>>,
    /// i386: constants stored at [esp], [esp+4].
    esp: [Option<u64>; 2],
    /// Constants stored in the frame's slots, `disp(%rbp)` (`%ebp`),
    /// sorted by displacement: what gcc -O0 keeps a local in.
    slots: Vec<Slot>,
    /// The lowest frame displacement whose address was taken (`lea
    /// disp(%rbp)`; `i64::MIN` once %rbp itself was copied): a callee or a
    /// store through a pointer may write any slot at or above it.
    escaped: Option<i64>,
}

/// A constant in the frame: `size` bytes at `disp(%rbp)`.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Slot {
    disp: i64,
    size: u32,
    value: u64,
}

/// How many frame slots are followed at once (a -O0 function's locals).
const MAX_SLOTS: usize = 32;

impl State {
    fn reset(&mut self) {
        *self = State::default();
    }

    /// The constant a `size`-byte load from `disp(%rbp)` reads: a slot
    /// stored at the same place at least as wide (little-endian: the low bytes).
    fn load(&self, disp: i64, size: u32) -> Option<u64> {
        let s = self.slots.iter().find(|s| s.disp == disp)?;
        match size {
            _ if size > s.size => None,
            8 => Some(s.value),
            4 => Some(s.value & 0xffff_ffff),
            _ => None,
        }
    }

    /// A write of `size` bytes at `disp(%rbp)` (`value` when a constant):
    /// the slots it overlaps are forgotten.
    fn store(&mut self, disp: i64, size: u32, value: Option<u64>) {
        let end = disp.saturating_add(i64::from(size.max(1)));
        self.slots.retain(|s| s.disp.saturating_add(i64::from(s.size)) <= disp || s.disp >= end);
        if let Some(value) = value.filter(|_| matches!(size, 4 | 8)) {
            if self.slots.len() < MAX_SLOTS {
                let at = self.slots.partition_point(|s| s.disp < disp);
                self.slots.insert(at, Slot { disp, size, value });
            }
        }
    }

    /// The address of `disp(%rbp)` (or of the frame: `i64::MIN`) escaped.
    fn escape(&mut self, disp: i64) {
        self.escaped = Some(self.escaped.map_or(disp, |e| e.min(disp)));
    }

    /// A write through a pointer that may point into the frame (a callee,
    /// a store through another register): the slots whose address escaped go.
    fn clobber_escaped(&mut self) {
        if let Some(e) = self.escaped {
            self.slots.retain(|s| s.disp < e);
        }
    }

    /// %rbp changed (a new frame, `leave`): nothing is known of its slots.
    fn new_frame(&mut self) {
        self.slots.clear();
        self.escaped = None;
    }

    /// After a call: the callee-saved registers keep their constants (the
    /// SysV ABIs: rbx, rbp, r12–r15 on x86_64; ebx, ebp, esi, edi on
    /// i386), the others and the argument area are the callee's.
    fn after_call(&mut self, bits: u32) {
        let keep: &[usize] = if bits == 64 { &[RBX, RBP, 12, 13, 14, 15] } else { &[RBX, RBP, RSI, RDI] };
        let mut regs = [None; 16];
        for &r in keep {
            regs[r] = self.regs[r];
        }
        self.clobber_escaped();
        let (slots, escaped) = (std::mem::take(&mut self.slots), self.escaped);
        *self = State { regs, slots, escaped, ..State::default() };
    }

    /// The constants both `self` and `other` know, in `self`; whether
    /// `self` changed.
    fn meet(&mut self, other: &State) -> bool {
        let before = self.clone();
        for (a, b) in self.regs.iter_mut().zip(other.regs) {
            if *a != b {
                *a = None;
            }
        }
        if self.pushes.len() == other.pushes.len() {
            for (a, b) in self.pushes.iter_mut().zip(&other.pushes) {
                if a != b {
                    *a = None;
                }
            }
        } else {
            self.pushes.clear();
        }
        for (a, b) in self.esp.iter_mut().zip(other.esp) {
            if *a != b {
                *a = None;
            }
        }
        // A slot keeps its constant only when every path stored the same one.
        self.slots.retain(|s| other.slots.contains(s));
        if let Some(e) = other.escaped {
            self.escape(e);
        }
        *self != before
    }

    /// i386 cdecl argument `n` (0 or 1) at a call.
    fn stack_arg(&self, n: usize) -> Option<u64> {
        let k = self.pushes.len();
        if k > n {
            self.pushes[k - 1 - n]
        } else if k == 0 {
            self.esp[n]
        } else {
            None
        }
    }
}

/// The functions a raw call of which is reported: the clock reads the
/// vDSO serves (clock_gettime, clock_getres, gettimeofday, time) and
/// getrandom, with the numbers of `abi` ([`Abi::vdso_syscalls`]); getcpu
/// is neither.
pub(crate) fn clock_fn(abi: Abi, nr: Option<u64>) -> Option<VdsoFn> {
    let f = abi.vdso_syscall(nr? as i64)?;
    is_site_fn(f).then_some(f)
}

/// Whether a raw syscall of `f` is a clock read the vDSO may serve.
pub(crate) fn is_clock_read(f: VdsoFn) -> bool {
    match f.kind() {
        FnKind::Clock => true,
        FnKind::Cpu | FnKind::Random | FnKind::Futex => false,
    }
}

/// Whether a raw syscall of `f` is a site: a clock read, or random bytes
/// (judged apart: what the C library would do decides it).
pub(crate) fn is_site_fn(f: VdsoFn) -> bool {
    match f.kind() {
        FnKind::Clock | FnKind::Random => true,
        // A futex call's op is seldom a constant before it: not a site.
        FnKind::Cpu | FnKind::Futex => false,
    }
}

/// Whether `f` takes a clock id as its first argument (reported with the site).
pub(crate) fn takes_clock(f: VdsoFn) -> bool {
    f.takes_clock()
}

fn signed(v: Option<u64>, bits: u32) -> Option<i64> {
    v.map(|v| if bits == 32 { v as u32 as i32 as i64 } else { v as i64 })
}

/// Decode `code[start..end]` (loaded at `base`) and return the real sites
/// in it, the constants followed through the range's control flow
/// ([`flow`]): `block_starts` are more places paths may join at (branch
/// targets from outside the range), when the caller knows them.
pub fn analyze(
    code: &[u8],
    base: u64,
    bits: u32,
    start: usize,
    end: usize,
    t: &Targets,
    block_starts: &[u64],
) -> Vec<Site> {
    let end = end.min(code.len());
    if start >= end {
        return Vec::new();
    }
    let mut dec = Decoder::with_ip(bits, &code[start..end], base.wrapping_add(start as u64), DecoderOptions::NONE);
    let mut list = Vec::with_capacity((end - start) / 3);
    while dec.can_decode() {
        list.push(dec.decode());
    }
    flow::sites(&list, bits, t, block_starts)
}

/// A site at this instruction.
fn site_at(ins: &Instruction, via: Via, function: Option<VdsoFn>, clock: Option<i64>, entry: Option<u64>) -> Site {
    Site { addr: ins.ip(), via, function, clock, entry, symbol: None }
}

/// A `syscall`, `sysenter` or `int 0x80`: a site when the number is a
/// clock syscall; the kernel returns in rax and clobbers rcx and r11.
fn syscall_site(st: &mut State, ins: &Instruction, bits: u32) -> Option<Site> {
    let (via, abi) = match ins.mnemonic() {
        Mnemonic::Syscall if bits == 64 => (Via::Syscall, Abi::X86_64),
        Mnemonic::Sysenter if bits == 32 => (Via::Sysenter, Abi::I386),
        Mnemonic::Int if ins.immediate8() == 0x80 => (Via::Int80, Abi::I386),
        _ => {
            st.reset();
            return None;
        }
    };
    let found = clock_fn(abi, st.regs[RAX]).map(|f| {
        let arg = if abi == Abi::X86_64 { st.regs[RDI] } else { st.regs[RBX] };
        let clock = if takes_clock(f) { arg } else { None };
        site_at(ins, via, Some(f), signed(clock, if abi == Abi::X86_64 { 64 } else { 32 }), None)
    });
    st.regs[RAX] = None;
    st.regs[RCX] = None;
    st.regs[R11] = None;
    found
}

/// A call or jump: a site when it goes to a [vsyscall] entry, or to libc's
/// `syscall()` (its PLT stub or GOT slot) with a clock syscall number.
fn call_site(st: &State, ins: &Instruction, bits: u32, t: &Targets) -> Option<Site> {
    let native = if bits == 64 { Abi::X86_64 } else { Abi::I386 };
    let entry = |v: u64| t.vsyscall && VSYSCALL_ENTRIES.contains(&v);
    let target = match ins.op0_kind() {
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => Some(ins.near_branch_target()),
        OpKind::Register => slot(ins.op0_register()).and_then(|r| st.regs[r]),
        _ => None,
    };
    let slot_read = (ins.op0_kind() == OpKind::Memory
        && ins.memory_index() == Register::None
        && matches!(ins.memory_base(), Register::RIP | Register::EIP | Register::None))
    .then(|| ins.memory_displacement64());
    if let Some(to) = target.filter(|&v| entry(v)) {
        return Some(site_at(ins, Via::Vsyscall, None, None, Some(to)));
    }
    if target.is_some_and(|v| t.syscall_fn.contains(&v)) || slot_read.is_some_and(|s| t.syscall_got.contains(&s)) {
        let (nr, clock) = if bits == 64 { (st.regs[RDI], st.regs[RSI]) } else { (st.stack_arg(0), st.stack_arg(1)) };
        let f = clock_fn(native, nr)?;
        let clock = if takes_clock(f) { clock } else { None };
        return Some(site_at(ins, Via::LibcSyscall, Some(f), signed(clock, bits), None));
    }
    None
}

/// Track what one ordinary instruction does to the constants.
/// An immediate operand's value.
fn imm(i: &Instruction, op: u32) -> Option<u64> {
    match i.op_kind(op) {
        OpKind::Immediate8
        | OpKind::Immediate16
        | OpKind::Immediate32
        | OpKind::Immediate64
        | OpKind::Immediate8to16
        | OpKind::Immediate8to32
        | OpKind::Immediate8to64
        | OpKind::Immediate32to64 => Some(i.immediate(op)),
        _ => None,
    }
}

/// The value written to a register of this size (32-bit writes zero-extend).
fn sized(r: Register, v: u64) -> Option<u64> {
    match gpr(r).map_or(0, |(_, size)| size) {
        8 => Some(v),
        4 => Some(v & 0xffff_ffff),
        _ => None,
    }
}

/// Instructions that write general registers their operands do not name
/// (rax, rdx, rcx, rsi, rdi...).
fn clobbers_implicitly(m: Mnemonic) -> bool {
    matches!(
        m,
        Mnemonic::Mul
            | Mnemonic::Imul
            | Mnemonic::Div
            | Mnemonic::Idiv
            | Mnemonic::Cdq
            | Mnemonic::Cqo
            | Mnemonic::Cwd
            | Mnemonic::Cdqe
            | Mnemonic::Cwde
            | Mnemonic::Cpuid
            | Mnemonic::Rdtsc
            | Mnemonic::Rdtscp
            | Mnemonic::Rdpid
            | Mnemonic::Xgetbv
            | Mnemonic::Rdmsr
            | Mnemonic::Lodsb
            | Mnemonic::Lodsd
            | Mnemonic::Lodsq
            | Mnemonic::Lodsw
            | Mnemonic::Movsb
            | Mnemonic::Movsd
            | Mnemonic::Movsq
            | Mnemonic::Stosb
            | Mnemonic::Stosd
            | Mnemonic::Stosq
            | Mnemonic::Scasb
            | Mnemonic::Cmpsb
            | Mnemonic::Leave
            | Mnemonic::Enter
    )
}

/// Instructions whose first operand, memory, is read and not written.
fn reads_op0_only(m: Mnemonic) -> bool {
    matches!(
        m,
        Mnemonic::Cmp
            | Mnemonic::Test
            | Mnemonic::Bt
            | Mnemonic::Push
            | Mnemonic::Nop
            | Mnemonic::Prefetchnta
            | Mnemonic::Prefetcht0
            | Mnemonic::Prefetcht1
            | Mnemonic::Prefetcht2
            | Mnemonic::Prefetchw
            | Mnemonic::Clflush
            | Mnemonic::Clflushopt
    )
}

/// The size in bytes of a `mov`'s source operand `op` (a register or an
/// immediate); None for anything else.
fn source_size(ins: &Instruction, op: u32) -> Option<u32> {
    match ins.op_kind(op) {
        OpKind::Register => gpr(ins.op_register(op)).map(|(_, size)| size),
        OpKind::Immediate8 => Some(1),
        OpKind::Immediate16 => Some(2),
        OpKind::Immediate32 => Some(4),
        OpKind::Immediate64 | OpKind::Immediate32to64 => Some(8),
        _ => None,
    }
}

/// What a write of the memory operand 0 does to the frame's slots: a
/// `mov` of a constant (an immediate, a register holding one) into a slot
/// keeps it; any other write to the frame forgets what it overlaps (all
/// of it when indexed or through the stack pointer, whose distance to the
/// frame is not followed); a write through another pointer forgets the
/// slots whose address escaped.
fn write_memory(st: &mut State, ins: &Instruction, bits: u32) {
    let stack = if bits == 64 { Register::RSP } else { Register::ESP };
    let frame = if bits == 64 { Register::RBP } else { Register::EBP };
    if let Some(d) = frame_disp(ins, 0, bits) {
        let mov = ins.mnemonic() == Mnemonic::Mov;
        let (size, value) = match source_size(ins, 1).filter(|_| mov) {
            Some(size) => {
                let v = match ins.op1_kind() {
                    OpKind::Register => slot(ins.op1_register()).and_then(|r| st.regs[r]),
                    _ => imm(ins, 1),
                };
                (size, v.map(|v| if size == 4 { v & 0xffff_ffff } else { v }))
            }
            // A size this decoder does not say (no instr_info): the widest store, a cache line.
            None => (64, None),
        };
        st.store(d, size, value);
    } else if matches!(ins.memory_base(), b if b == stack || b == frame) {
        st.slots.clear();
    } else {
        st.clobber_escaped();
    }
}

/// Whether `ins` reads the frame pointer's value (not as an address
/// base): `mov %rbp,%rax`, `push %rbp` — the frame's address escapes.
fn copies_frame(ins: &Instruction, bits: u32) -> bool {
    let frame = if bits == 64 { Register::RBP } else { Register::EBP };
    let first = if ins.mnemonic() == Mnemonic::Push { 0 } else { 1 };
    (first..ins.op_count()).any(|op| ins.op_kind(op) == OpKind::Register && ins.op_register(op) == frame)
}

fn step(st: &mut State, ins: &Instruction, bits: u32) {
    let m = ins.mnemonic();
    let reg0 = if ins.op_count() > 0 && ins.op0_kind() == OpKind::Register { slot(ins.op0_register()) } else { None };
    if ins.op_count() > 0 && ins.op0_kind() == OpKind::Memory && !reads_op0_only(m) {
        write_memory(st, ins, bits);
    }
    if copies_frame(ins, bits) {
        st.escape(i64::MIN);
    }
    if m == Mnemonic::Lea {
        match frame_disp(ins, 1, bits) {
            Some(d) => st.escape(d),
            None if ins.memory_base() == if bits == 64 { Register::RBP } else { Register::EBP } => st.escape(i64::MIN),
            None => {}
        }
    }
    step_regs(st, ins, bits, reg0);
    if reg0 == Some(RBP) && !reads_op0_only(m) || matches!(m, Mnemonic::Leave | Mnemonic::Enter) {
        st.new_frame();
    }
}

/// What `ins` does to the registers (and i386's argument area).
fn step_regs(st: &mut State, ins: &Instruction, bits: u32, reg0: Option<usize>) {
    let m = ins.mnemonic();
    match m {
        Mnemonic::Mov if reg0.is_some() => {
            let r = ins.op0_register();
            let v = match ins.op1_kind() {
                OpKind::Register => slot(ins.op1_register()).and_then(|s| st.regs[s]),
                OpKind::Memory => frame_disp(ins, 1, bits).and_then(|d| st.load(d, gpr(r).map_or(0, |g| g.1))),
                _ => imm(ins, 1),
            };
            st.regs[reg0.unwrap_or(0)] = v.and_then(|v| sized(r, v));
        }
        Mnemonic::Movsxd if reg0.is_some() => {
            let r = ins.op0_register();
            let v = frame_disp(ins, 1, bits).and_then(|d| st.load(d, 4)).map(|v| v as u32 as i32 as i64 as u64);
            st.regs[reg0.unwrap_or(0)] = v.and_then(|v| sized(r, v));
        }
        Mnemonic::Mov if bits == 32 && ins.op0_kind() == OpKind::Memory => {
            if ins.memory_base() == Register::ESP && ins.memory_index() == Register::None {
                let k = ins.memory_displacement64() as usize / 4;
                if k < 2 && ins.memory_displacement64() % 4 == 0 {
                    st.esp[k] = imm(ins, 1);
                }
            }
        }
        Mnemonic::Xor | Mnemonic::Sub
            if reg0.is_some() && ins.op1_kind() == OpKind::Register && ins.op0_register() == ins.op1_register() =>
        {
            st.regs[reg0.unwrap_or(0)] = Some(0);
        }
        Mnemonic::Push => {
            let v = match ins.op0_kind() {
                OpKind::Register => slot(ins.op0_register()).and_then(|s| st.regs[s]),
                OpKind::Memory => frame_disp(ins, 0, bits).and_then(|d| st.load(d, bits / 8)),
                _ => imm(ins, 0).map(|v| if bits == 32 { v & 0xffff_ffff } else { v }),
            };
            st.pushes.push(v);
            st.esp = [None; 2];
        }
        Mnemonic::Pop => {
            let v = st.pushes.pop().flatten();
            if let Some(r) = reg0 {
                st.regs[r] = v;
            }
            st.esp = [None; 2];
        }
        Mnemonic::Cmp | Mnemonic::Test | Mnemonic::Bt | Mnemonic::Nop | Mnemonic::Endbr64 | Mnemonic::Endbr32 => {}
        Mnemonic::Xchg | Mnemonic::Xadd | Mnemonic::Cmpxchg => {
            st.regs = [None; 16];
        }
        _ if clobbers_implicitly(m) => {
            // String stores write through %rdi/%edi: wherever it points.
            st.clobber_escaped();
            st.regs[RAX] = None;
            st.regs[RCX] = None;
            st.regs[RDX] = None;
            st.regs[RBX] = None;
            st.regs[RSI] = None;
            st.regs[RDI] = None;
            if matches!(m, Mnemonic::Leave | Mnemonic::Enter) {
                st.pushes.clear();
                st.esp = [None; 2];
            }
        }
        _ => {
            if let Some(r) = reg0 {
                st.regs[r] = None;
                if r == 4 {
                    // add/sub esp: the argument area moved.
                    st.pushes.clear();
                    st.esp = [None; 2];
                }
            }
        }
    }
}

/// How far before a site [`pointer_guarded`] looks for the guard.
pub const GUARD: usize = 384;

/// Whether the code before offset `at` (a raw syscall) is a runtime's
/// clock function trying a function pointer first: a register tested for
/// zero (`test r,r` or `cmp r,0`, then a conditional jump), then called
/// through (`call *r`), then the syscall (its fallback), within [`GUARD`]
/// bytes. That is the shape of glibc's, musl's and Go's clock functions,
/// which call the vDSO through a pointer their startup looked up; a tail
/// jump through the register (`jmp *r`, as crt's `register_tm_clones`
/// does) is not the shape.
pub fn pointer_guarded(code: &[u8], base: u64, bits: u32, at: usize) -> bool {
    if at > code.len() {
        return false;
    }
    let lo = at.saturating_sub(GUARD);
    let Some(start) = (lo..at.min(lo + 32)).find(|&s| lands_on(&code[s..], bits, at - s)) else { return false };
    let mut dec = Decoder::with_ip(bits, &code[start..at], base.wrapping_add(start as u64), DecoderOptions::NONE);
    let mut ins = Instruction::default();
    let mut tested = [false; 16];
    let mut prev_test: Option<usize> = None;
    let mut guarded = false;
    while dec.can_decode() {
        dec.decode_out(&mut ins);
        let m = ins.mnemonic();
        let r0 = (ins.op_count() > 0 && ins.op0_kind() == OpKind::Register).then(|| gpr(ins.op0_register())).flatten();
        let test = match (m, r0) {
            (Mnemonic::Test, Some((r, size))) if size >= 4 => {
                (ins.op1_kind() == OpKind::Register && ins.op1_register() == ins.op0_register()).then_some(r)
            }
            (Mnemonic::Cmp, Some((r, size))) if size >= 4 => {
                (ins.op1_kind() != OpKind::Register && ins.op1_kind() != OpKind::Memory && ins.immediate(1) == 0)
                    .then_some(r)
            }
            _ => None,
        };
        if matches!(m, Mnemonic::Je | Mnemonic::Jne) {
            if let Some(r) = prev_test {
                tested[r] = true;
            }
        }
        prev_test = test;
        if m == Mnemonic::Call {
            if let Some((r, 8 | 4)) = r0 {
                guarded |= tested[r];
            }
        }
    }
    guarded
}

/// The PLT stubs (in `code`, a `.plt*` section at `base`) that jump
/// through one of the GOT `slots`: `jmp *slot(%rip)` (x86_64), `jmp *slot`
/// or `jmp *off(%ebx)` with %ebx at `got_plt` (i386). A stub starts at its
/// `endbr` when one comes right before the jump.
pub fn plt_stubs(code: &[u8], base: u64, bits: u32, slots: &[u64], got_plt: Option<u64>) -> Vec<u64> {
    let mut dec = Decoder::with_ip(bits, code, base, DecoderOptions::NONE);
    let mut ins = Instruction::default();
    let mut out = Vec::new();
    let mut prev: Option<(Mnemonic, u64)> = None;
    while dec.can_decode() {
        dec.decode_out(&mut ins);
        let m = ins.mnemonic();
        if m == Mnemonic::Jmp && ins.op0_kind() == OpKind::Memory && ins.memory_index() == Register::None {
            let d = ins.memory_displacement64();
            let slot = match ins.memory_base() {
                Register::RIP | Register::EIP | Register::None => Some(d),
                Register::EBX => got_plt.map(|g| g.wrapping_add(d) & 0xffff_ffff),
                _ => None,
            };
            if slot.is_some_and(|s| slots.contains(&s)) {
                out.push(ins.ip());
                if let Some((Mnemonic::Endbr64 | Mnemonic::Endbr32, at)) = prev {
                    out.push(at);
                }
            }
        }
        prev = Some((m, ins.ip()));
    }
    out
}

mod flow;

#[cfg(test)]
mod tests;
