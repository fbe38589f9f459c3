//! aarch64 machine code decoded around candidate call sites, as
//! [`crate::inspect::code`] does for x86: which `svc #0` really make a clock
//! syscall (x8 a clock syscall number in the same basic block) and which
//! `bl`/`b` really call libc's `syscall()` with one (x0 a clock number).
//!
//! A64 instructions are 4 bytes, little-endian, 4-byte aligned, so there is
//! no resynchronisation: every aligned word is an instruction. The handful
//! of encodings that matter are decoded by hand (Arm ARM, "A64 Instruction
//! Set Encoding"): MOVZ/MOVN/MOVK and ORR-immediate/ORR-register (the `mov`
//! aliases) into a register, SVC, BL/B, BLR/BR/RET, B.cond/CBZ/CBNZ/TBZ/TBNZ
//! as block ends; any other instruction forgets the register it writes.
//! Every `u32` is some value of that decoder: bad input cannot panic it.
//!
//! - [`candidates`]: the `svc #0` word (`01 00 00 d4`, memmem) and the `bl`/`b`
//!   words whose target is a `syscall()` address, with a clock number moved
//!   into x8/w8 or x0/w0 in the words before (a cheap byte test);
//! - [`analyze`]: a range decoded with the constants of each basic block.

use crate::arch::{Abi, VdsoFn};
use crate::inspect::code::{clock_fn, takes_clock, Site, Targets, Via, BEFORE};

/// The `svc #0` instruction word.
pub const SVC0: u32 = 0xd400_0001;

fn word(code: &[u8], at: usize) -> Option<u32> {
    let b = code.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The first aligned offset in `code` (loaded at `base`) at or after `at`.
fn align_up(base: u64, at: usize) -> usize {
    let mis = (base.wrapping_add(at as u64) & 3) as usize;
    if mis == 0 {
        at
    } else {
        at.saturating_add(4 - mis)
    }
}

/// Target of a `b`/`bl` word at `pc`.
fn branch26(w: u32, pc: u64) -> u64 {
    let imm = ((w & 0x03ff_ffff) << 6) as i32 >> 4; // sign-extended imm26 * 4
    pc.wrapping_add(imm as i64 as u64)
}

/// Target of a conditional branch word (B.cond/CBZ/CBNZ imm19, TBZ/TBNZ imm14) at `pc`.
fn cond_target(w: u32, pc: u64) -> Option<u64> {
    let imm = if is_bcond(w) || is_cbz(w) {
        ((w >> 5) & 0x7ffff) << 13
    } else if is_tbz(w) {
        ((w >> 5) & 0x3fff) << 18
    } else {
        return None;
    };
    let shift = if is_tbz(w) { 16 } else { 11 };
    Some(pc.wrapping_add(((imm as i32) >> shift) as i64 as u64))
}

/// The target of the `bl` that ends just before return address `ret`
/// (`before`: the 4 bytes there), if that instruction is one.
pub fn bl_before(before: &[u8], ret: u64) -> Option<u64> {
    let w = word(before, before.len().checked_sub(4)?)?;
    is_bl(w).then(|| branch26(w, ret.wrapping_sub(4)))
}

fn is_bl(w: u32) -> bool {
    w & 0xfc00_0000 == 0x9400_0000
}
fn is_b(w: u32) -> bool {
    w & 0xfc00_0000 == 0x1400_0000
}
fn is_bcond(w: u32) -> bool {
    w & 0xff00_0010 == 0x5400_0000
}
fn is_cbz(w: u32) -> bool {
    w & 0x7e00_0000 == 0x3400_0000
}
fn is_tbz(w: u32) -> bool {
    w & 0x7e00_0000 == 0x3600_0000
}
/// BR, BLR, RET (and their pointer-authenticated forms): an indirect branch.
fn is_indirect(w: u32) -> bool {
    w & 0xfe1f_0000 == 0xd61f_0000
}
fn is_blr(w: u32) -> bool {
    w & 0xffbf_f000 == 0xd63f_0000
}
/// `brk`, `udf`, `hlt`: the end of a block too.
fn is_trap(w: u32) -> bool {
    w & 0xffe0_001f == 0xd420_0000 || w & 0xffff_0000 == 0 || w & 0xffe0_001f == 0xd440_0000
}

/// The value `mov`-like instructions put in their destination:
/// `Some((rd, Some(v)))` a constant, `Some((rd, None))` an unknown value,
/// `None` when the word writes no general register we track this way.
fn constant(w: u32, regs: &[Option<u64>; 32]) -> Option<(usize, Option<u64>)> {
    let rd = (w & 0x1f) as usize;
    let sf = w >> 31 == 1;
    let size = |v: u64| if sf { v } else { v & 0xffff_ffff };
    // Move wide (immediate): sf opc 100101 hw imm16 Rd.
    if w & 0x1f80_0000 == 0x1280_0000 {
        let hw = (w >> 21) & 3;
        if !sf && hw > 1 {
            return Some((rd, None));
        }
        let shift = hw * 16;
        let imm = u64::from((w >> 5) & 0xffff) << shift;
        let v = match (w >> 29) & 3 {
            0 => Some(size(!imm)),                                              // MOVN
            2 => Some(imm),                                                     // MOVZ
            3 => regs[rd].map(|old| size((old & !(0xffffu64 << shift)) | imm)), // MOVK
            _ => None,
        };
        return Some((rd, v));
    }
    // Logical (immediate) ORR with the zero register: `mov Rd, #bitmask`.
    if w & 0x7f80_0000 == 0x3200_0000 {
        let rn = (w >> 5) & 0x1f;
        let v = if rn == 31 { bitmask((w >> 22) & 1, (w >> 16) & 0x3f, (w >> 10) & 0x3f, sf) } else { None };
        return Some((rd, v.map(size)));
    }
    // ORR (shifted register) Rd, zr, Rm: `mov Rd, Rm`.
    if w & 0x7f20_0000 == 0x2a00_0000 {
        let (rn, imm6, rm) = ((w >> 5) & 0x1f, (w >> 10) & 0x3f, ((w >> 16) & 0x1f) as usize);
        let v = if rn == 31 && imm6 == 0 {
            if rm == 31 {
                Some(0)
            } else {
                regs[rm].map(size)
            }
        } else {
            None
        };
        return Some((rd, v));
    }
    None
}

/// DecodeBitMasks of the Arm ARM for a logical immediate (`wmask`), None
/// for a reserved encoding.
fn bitmask(n: u32, immr: u32, imms: u32, sf: bool) -> Option<u64> {
    let combined = (n << 6) | (!imms & 0x3f);
    if combined == 0 {
        return None;
    }
    let len = 31 - combined.leading_zeros();
    if len < 1 || (!sf && n == 1) {
        return None;
    }
    let esize = 1u32 << len;
    let levels = esize - 1;
    let (s, r) = (imms & levels, immr & levels);
    if s == levels {
        return None;
    }
    let welem: u64 = (1u64 << (s + 1)) - 1;
    let emask = if esize == 64 { u64::MAX } else { (1u64 << esize) - 1 };
    let rot = if r == 0 { welem } else { ((welem >> r) | (welem << (esize - r))) & emask };
    let mut v = 0u64;
    let mut i = 0;
    while i < 64 {
        v |= rot << i;
        i += esize;
    }
    Some(if sf { v } else { v & 0xffff_ffff })
}

/// The general registers a word writes besides the `mov`-like ones, as far
/// as this tracking needs: loads write Rt (and Rt2), stores none (but a
/// store-exclusive writes its status Rs); any other data-processing word
/// writes Rd. The base of a load or store is forgotten too (writeback).
fn clobbers(w: u32, out: &mut Vec<usize>) {
    let rd = (w & 0x1f) as usize;
    if w & 0x0a00_0000 == 0x0800_0000 {
        let simd = w & 0x0400_0000 != 0;
        let op = (w >> 27) & 7;
        let pair = op == 0b101;
        let store = pair && w & 0x0040_0000 == 0 || op == 0b111 && (w >> 22) & 3 == 0;
        out.push(((w >> 5) & 0x1f) as usize);
        if op == 0b001 {
            out.push(((w >> 16) & 0x1f) as usize);
        }
        if !store && !simd {
            out.push(rd);
            if pair {
                out.push(((w >> 10) & 0x1f) as usize);
            }
        }
    } else {
        out.push(rd);
    }
}

/// Offsets in `code` (loaded at `base`) where a site may be, sorted.
pub fn candidates(code: &[u8], base: u64, t: &Targets) -> Vec<usize> {
    let mut out: Vec<usize> = memchr::memmem::find_iter(code, &SVC0.to_le_bytes())
        .filter(|&c| base.wrapping_add(c as u64) & 3 == 0 && numbered(code, base, c))
        .collect();
    if !t.syscall_fn.is_empty() {
        let mut at = align_up(base, 0);
        while let Some(w) = word(code, at) {
            if (is_bl(w) || is_b(w))
                && t.syscall_fn.contains(&branch26(w, base.wrapping_add(at as u64)))
                && numbered(code, base, at)
            {
                out.push(at);
            }
            at += 4;
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether a word before `at` (within [`BEFORE`]) moves a clock syscall
/// number into a register with MOVZ or ORR-immediate (into any register:
/// it may be copied to x8 or x0 later): the cheap test before decoding.
fn numbered(code: &[u8], base: u64, at: usize) -> bool {
    let mut p = align_up(base, at.saturating_sub(BEFORE));
    let regs = [None; 32];
    while p < at {
        if let Some((_, Some(v))) = word(code, p).and_then(|w| constant(w, &regs)) {
            if clock_fn(Abi::Aarch64, Some(v)).is_some() {
                return true;
            }
        }
        p += 4;
    }
    false
}

/// The targets of direct branches in `code` loaded at `base`, sorted: the
/// block starts for [`analyze`].
pub fn branch_targets(code: &[u8], base: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = align_up(base, 0);
    while let Some(w) = word(code, at) {
        let pc = base.wrapping_add(at as u64);
        if is_b(w) {
            out.push(branch26(w, pc));
        } else if let Some(to) = cond_target(w, pc) {
            out.push(to);
        }
        at += 4;
    }
    out.sort_unstable();
    out.dedup();
    out
}

const X0: usize = 0;
const X1: usize = 1;
const X8: usize = 8;
const FP: usize = 29;
const SP: usize = 31;

/// A constant in a stack slot: `size` bytes at `[base, #off]`, base sp or
/// x29 (what clang and gcc -O0 keep a local in).
#[derive(Clone, Copy, PartialEq, Debug)]
struct Slot {
    base: usize,
    off: i64,
    size: u32,
    value: u64,
}

/// A load or store of one register at an immediate offset from sp or x29
/// (STR/LDR unsigned offset, STUR/LDUR, LDRSW/LDURSW, 32 or 64 bits).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Access {
    Store { rt: usize, base: usize, off: i64, size: u32 },
    Load { rt: usize, base: usize, off: i64, size: u32, signed: bool },
}

fn access(w: u32) -> Option<Access> {
    let (rt, rn) = ((w & 0x1f) as usize, ((w >> 5) & 0x1f) as usize);
    let scaled = i64::from((w >> 10) & 0xfff);
    let unscaled = i64::from((((w >> 12) & 0x1ff) << 23) as i32 >> 23);
    // (kind: 0 store, 1 load, 2 load signed word; size; offset)
    let (kind, size, off) = match w & 0xffc0_0000 {
        0xb900_0000 => (0, 4, scaled * 4),
        0xf900_0000 => (0, 8, scaled * 8),
        0xb940_0000 => (1, 4, scaled * 4),
        0xf940_0000 => (1, 8, scaled * 8),
        0xb980_0000 => (2, 4, scaled * 4),
        _ => match w & 0xffe0_0c00 {
            0xb800_0000 => (0, 4, unscaled),
            0xf800_0000 => (0, 8, unscaled),
            0xb840_0000 => (1, 4, unscaled),
            0xf840_0000 => (1, 8, unscaled),
            0xb880_0000 => (2, 4, unscaled),
            _ => return None,
        },
    };
    if rn != SP && rn != FP {
        return None;
    }
    Some(match kind {
        0 => Access::Store { rt, base: rn, off, size },
        k => Access::Load { rt, base: rn, off, size, signed: k == 2 },
    })
}

/// Whether `w` is in the loads-and-stores encoding group.
fn is_load_store(w: u32) -> bool {
    w & 0x0a00_0000 == 0x0800_0000
}

/// What a modelled access does to the registers and slots of a block: a
/// store keeps the register's constant (xzr/wzr: 0) in its slot and
/// forgets what it overlaps; a load reads a slot stored at the same place
/// at least as wide.
fn follow(a: Access, regs: &mut [Option<u64>; 32], slots: &mut Vec<Slot>) {
    match a {
        Access::Store { rt, base, off, size } => {
            let end = off + i64::from(size);
            slots.retain(|s| s.base != base || s.off + i64::from(s.size) <= off || s.off >= end);
            let v = if rt == 31 { Some(0) } else { regs[rt] };
            if let Some(v) = v {
                if slots.len() < 32 {
                    slots.push(Slot { base, off, size, value: if size == 4 { v & 0xffff_ffff } else { v } });
                }
            }
        }
        Access::Load { rt, base, off, size, signed } => {
            let v =
                slots.iter().find(|s| s.base == base && s.off == off && s.size >= size).map(|s| match (size, signed) {
                    (4, true) => s.value as u32 as i32 as i64 as u64,
                    (4, false) => s.value & 0xffff_ffff,
                    _ => s.value,
                });
            if rt != 31 {
                regs[rt] = v;
            }
        }
    }
}

/// The sites in `code[from..to]` (loaded at `base`), with the constants of
/// each basic block tracked; `block_starts` (sorted) are branch targets.
pub fn analyze(code: &[u8], base: u64, from: usize, to: usize, t: &Targets, block_starts: &[u64]) -> Vec<Site> {
    let mut out = Vec::new();
    let mut regs: [Option<u64>; 32] = [None; 32];
    let mut slots: Vec<Slot> = Vec::new();
    let mut written = Vec::with_capacity(4);
    let mut at = align_up(base, from);
    while at < to {
        let Some(w) = word(code, at) else { break };
        let pc = base.wrapping_add(at as u64);
        at += 4;
        if block_starts.binary_search(&pc).is_ok() {
            regs = [None; 32];
            slots.clear();
        }
        let site = |via, function: VdsoFn, clock| Site {
            addr: pc,
            via,
            function: Some(function),
            clock,
            entry: None,
            symbol: None,
        };
        let clock_of = |f: VdsoFn, v: Option<u64>| takes_clock(f).then_some(v).flatten().map(|c| c as i32 as i64);
        if w == SVC0 {
            if let Some(f) = clock_fn(Abi::Aarch64, regs[X8]) {
                out.push(site(Via::Svc, f, clock_of(f, regs[X0])));
            }
            regs[X0] = None; // the result
            slots.clear(); // the kernel wrote through the arguments
            continue;
        }
        if is_bl(w) || is_b(w) {
            if t.syscall_fn.contains(&branch26(w, pc)) {
                if let Some(f) = clock_fn(Abi::Aarch64, regs[X0]) {
                    out.push(site(Via::LibcSyscall, f, clock_of(f, regs[X1])));
                }
            }
            regs = [None; 32];
            slots.clear();
            continue;
        }
        if is_indirect(w) || is_bcond(w) || is_cbz(w) || is_tbz(w) || is_trap(w) || w & 0xff00_0000 == 0xd400_0000 {
            regs = [None; 32];
            slots.clear();
            continue;
        }
        if let Some(a) = access(w) {
            follow(a, &mut regs, &mut slots);
            continue;
        }
        match constant(w, &regs) {
            Some((rd, v)) => {
                if rd != 31 {
                    regs[rd] = v;
                }
                if rd == FP {
                    slots.retain(|s| s.base != FP);
                }
            }
            None => {
                written.clear();
                clobbers(w, &mut written);
                for &r in &written {
                    if let Some(slot) = regs.get_mut(r) {
                        *slot = None;
                    }
                    // sp or x29 moved (or a store we do not model, below).
                    if r == SP || r == FP {
                        slots.retain(|s| s.base != r);
                    }
                }
                if is_load_store(w) {
                    // Any other store (a pair, a byte, through another
                    // pointer, with writeback) may write any slot.
                    slots.clear();
                }
            }
        }
    }
    out
}

/// Whether the code before `at` (a raw `svc #0`) is a runtime's clock
/// function trying a function pointer first, as
/// [`code::pointer_guarded`](crate::inspect::code::pointer_guarded) says
/// for x86: `cbz`/`cbnz xR`, then `blr xR`, then the syscall, within
/// `before` bytes (a `br xR` tail jump is not the shape).
pub fn pointer_guarded(code: &[u8], base: u64, at: usize, before: usize) -> bool {
    let mut tested = [false; 32];
    let mut guarded = false;
    let mut p = align_up(base, at.saturating_sub(before));
    while p < at {
        let Some(w) = word(code, p) else { break };
        if is_cbz(w) && w >> 31 == 1 {
            tested[(w & 0x1f) as usize] = true;
        }
        if is_blr(w) {
            guarded |= tested[((w >> 5) & 0x1f) as usize];
        }
        p += 4;
    }
    guarded
}

/// The PLT stubs (in `code`, a `.plt` section at `base`) that jump through
/// one of the GOT `slots`: `adrp x16, page; ldr x17, [x16, #off]; add x16,
/// x16, #off; br x17` (the stub starts at its `adrp`, or a `bti c` before it).
pub fn plt_stubs(code: &[u8], base: u64, slots: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = align_up(base, 0);
    while let (Some(adrp), Some(ldr)) = (word(code, at), word(code, at + 4)) {
        let pc = base.wrapping_add(at as u64);
        // ADRP: 1 immlo 10000 immhi Rd.
        if adrp & 0x9f00_0000 == 0x9000_0000 && ldr & 0xffc0_0000 == 0xf940_0000 {
            let rd = adrp & 0x1f;
            let lo = u64::from((adrp >> 29) & 3);
            let hi = u64::from((adrp >> 5) & 0x7ffff);
            let imm = (((hi << 2 | lo) << 43) as i64 >> 31) as u64; // sign-extended, << 12
            let page = (pc & !0xfff).wrapping_add(imm);
            let rn = (ldr >> 5) & 0x1f;
            let off = u64::from((ldr >> 10) & 0xfff) * 8;
            if rn == rd && slots.contains(&page.wrapping_add(off)) {
                let bti = at.checked_sub(4).and_then(|b| word(code, b)).is_some_and(|w| w & 0xffff_ff3f == 0xd503_241f);
                out.push(if bti { pc.wrapping_sub(4) } else { pc });
            }
        }
        at += 4;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::code::AFTER;

    fn code(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn t() -> Targets {
        Targets { syscall_fn: vec![0x40_0000], ..Targets::default() }
    }

    fn sites(bytes: &[u8], base: u64, t: &Targets) -> Vec<Site> {
        let mut out: Vec<Site> = Vec::new();
        for c in candidates(bytes, base, t) {
            for s in analyze(bytes, base, c.saturating_sub(BEFORE), c + AFTER, t, &[]) {
                if !out.iter().any(|o| o.addr == s.addr) {
                    out.push(s);
                }
            }
        }
        out
    }

    const MOV_X8_113: u32 = 0xd280_0e28; // movz x8, #0x71
    const MOV_W0_1: u32 = 0x5280_0020; // movz w0, #1
    const NOP: u32 = 0xd503_201f;

    #[test]
    fn svc_with_a_clock_number() {
        let s = sites(&code(&[MOV_W0_1, MOV_X8_113, SVC0]), 0x1000, &t());
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].addr, s[0].via, s[0].function, s[0].clock),
            (0x1008, Via::Svc, Some(VdsoFn::ClockGettime), Some(1))
        );
        // clock_nanosleep (115) is no clock read; getpid (172) neither.
        assert!(sites(&code(&[0xd280_0e68, SVC0]), 0x1000, &t()).is_empty());
        assert!(sites(&code(&[0xd280_1588, SVC0]), 0x1000, &t()).is_empty());
        // A branch between the mov and the svc ends the block.
        assert!(sites(&code(&[MOV_X8_113, 0x5400_0040, SVC0]), 0x1000, &t()).is_empty());
        // The svc word as data at a misaligned offset is no instruction.
        let mut b = code(&[MOV_X8_113, NOP]);
        b.extend_from_slice(&[0, 0x01, 0, 0, 0xd4, 0, 0, 0]);
        assert!(sites(&b, 0x1000, &t()).is_empty());
        // mov w8, #113 as ORR-immediate is not encodable; orr x8, xzr, #0x70 then
        // add is not tracked: a moved register is forgotten.
        assert!(sites(&code(&[MOV_X8_113, 0x9100_0508, SVC0]), 0x1000, &t()).is_empty());
        // A store of x8 keeps it; a load into x8 forgets it.
        assert_eq!(sites(&code(&[MOV_X8_113, 0xf900_03e8, SVC0]), 0x1000, &t()).len(), 1);
        assert!(sites(&code(&[MOV_X8_113, 0xf940_03e8, SVC0]), 0x1000, &t()).is_empty());
        // mov x8, x9 with x9 = 169 (gettimeofday).
        let s = sites(&code(&[0xd280_1529, 0xaa09_03e8, SVC0]), 0x1000, &t());
        assert_eq!(s[0].function, Some(VdsoFn::Gettimeofday));
    }

    #[test]
    fn bl_syscall_with_a_clock_number() {
        // mov w0, #113; mov w1, #2; bl 0x400000 (at 0x1008)
        let bl = 0x9400_0000 | ((0x40_0000u64.wrapping_sub(0x1008) >> 2) as u32 & 0x03ff_ffff);
        let s = sites(&code(&[0x5280_0e20, 0x5280_0041, bl]), 0x1000, &t());
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!((s[0].via, s[0].clock), (Via::LibcSyscall, Some(2)));
        // a backwards bl
        let base = 0x40_1000u64;
        let bl = 0x9400_0000 | ((0x40_0000u64.wrapping_sub(base + 8) >> 2) as u32 & 0x03ff_ffff);
        assert_eq!(sites(&code(&[0x5280_0e20, 0x5280_0041, bl]), base, &t()).len(), 1);
    }

    #[test]
    fn bitmasks_and_moves() {
        assert_eq!(bitmask(0, 0, 0, false), Some(1));
        assert_eq!(bitmask(1, 0, 0x3e, true), Some(0x7fff_ffff_ffff_ffff));
        assert_eq!(bitmask(0, 0, 0x3f, true), None);
        // movn x0, #0 = -1; movk into a known register.
        let regs = [None; 32];
        assert_eq!(constant(0x9280_0000, &regs), Some((0, Some(u64::MAX))));
        let mut regs = [None; 32];
        regs[2] = Some(0);
        assert_eq!(constant(0xf280_0502, &regs), Some((2, Some(0x28)))); // movk x2, #0x28
    }

    #[test]
    fn plt_stub_and_guard() {
        // adrp x16, 0x11000 (at 0x10000); ldr x17, [x16, #8]; add; br x17
        let b = code(&[0xb000_0010, 0xf940_0611, 0x9100_2210, 0xd61f_0220]);
        assert_eq!(plt_stubs(&b, 0x10000, &[0x11008]), vec![0x10000]);
        assert!(plt_stubs(&b, 0x10000, &[0x11010]).is_empty());
        // glibc's __clock_gettime: cbz x2, fallback; blr x2; ...; mov x8, #113; svc #0
        let b = code(&[0xb400_0102, 0xd63f_0040, 0xd65f_03c0, MOV_X8_113, SVC0]);
        assert!(pointer_guarded(&b, 0x1000, 16, 64));
        assert!(!pointer_guarded(&code(&[NOP, MOV_X8_113, SVC0]), 0x1000, 8, 64));
        // br x2 (a tail jump) after the test is not the shape.
        assert!(!pointer_guarded(&code(&[0xb400_0102, 0xd61f_0040, MOV_X8_113, SVC0]), 0x1000, 12, 64));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Any words, seeded with the candidate encodings, at any address:
        /// sites or none, never a panic.
        #[test]
        fn any_code_never_panics(
            mut bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            seeds in proptest::collection::vec((0usize..600, 0usize..5), 0..24),
            base in proptest::prelude::any::<u64>(),
        ) {
            const PATTERNS: [u32; 5] = [SVC0, MOV_X8_113, 0x9400_0000, 0xb400_0102, 0xd63f_0040];
            for (at, k) in seeds {
                for (i, b) in PATTERNS[k].to_le_bytes().iter().enumerate() {
                    if let Some(x) = bytes.get_mut(at + i) {
                        *x = *b;
                    }
                }
            }
            let t = Targets { syscall_fn: vec![base, 0x40_0000], syscall_got: vec![base.wrapping_add(64)], ..Targets::default() };
            for c in candidates(&bytes, base, &t) {
                let _ = analyze(&bytes, base, c.saturating_sub(BEFORE), c + AFTER, &t, &[]);
                let _ = pointer_guarded(&bytes, base, c, 4096);
            }
            let blocks = branch_targets(&bytes, base);
            let _ = analyze(&bytes, base, 0, bytes.len(), &t, &blocks);
            let _ = plt_stubs(&bytes, base, &t.syscall_got);
        }
    }
}
