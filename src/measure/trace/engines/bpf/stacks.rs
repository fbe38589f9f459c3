//! `trace --stacks`: the user stack of every counted call, aggregated in
//! the kernel. `bpf_get_stackid(ctx, map, BPF_F_USER_STACK)` walks the
//! task's user frame pointers from the registers saved at syscall entry
//! (the same walk as `perf record --call-graph fp`) and stores the frames
//! once in a `BPF_MAP_TYPE_STACK_TRACE` map; a hash counts calls per
//! (process, start time, stack id). Nothing is sent per call: the cost is
//! the walk (measured in scripts/bench-trace.sh, quoted in
//! doc/TRACE-ENGINE.md).
//!
//! The stack map has one stack per bucket (the bucket is the stack's hash
//! modulo [`MAX_STACKS`]): a second stack whose hash lands on a taken
//! bucket is refused (`-EEXIST`) — 5% of the stacks of a 200-process churn
//! under `-a`, 6% of a 1,000-call run without frame pointers (940 distinct
//! walks). Such a stack is kept by content instead: `bpf_get_stack` into
//! the per-CPU frame buffer, then a hash map keyed by the frames
//! themselves (`vdsoctl_sover`, allocated as used) gives it an id of its
//! own, [`OVERFLOW_ID`] set, from a counter; so a stack is lost only when
//! both maps are full, or the kernel refused the walk.
//!
//! A stack is cut short when the walk reaches [`DEPTH`] frames, or when it
//! meets a frame without a frame pointer: the walk then follows a register
//! that is not a frame pointer and ends (a read fails) or yields a return
//! address outside the process's executable mappings (the renderer cuts
//! there and says so). A leaf function that sets up no frame (glibc's
//! `syscall()` wrapper) hides its caller: the walk starts at its caller's
//! frame, so the frame above it is its caller's caller.
//!
//! The piece is generated only with `--stacks` (two hooks in `gen.rs`:
//! [`Generator::keep_ctx`] and [`Generator::count_stack`]), so the default
//! programs and their golden disassembly are unchanged.

use super::files::CAPTURE_BASE;
use super::gen::Generator;
use super::insn::{Alu, Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R4, R6, R7, R8, R9};
use super::layout::{pkey, Slot};
use super::sum_per_cpu;
use crate::measure::sys::bpf as sys;
use crate::measure::trace::{StackKey, Tally};
use std::io;

/// Frames kept per stack: the kernel's default `perf_event_max_stack`.
pub const DEPTH: usize = 127;
/// Distinct stacks the kernel map holds (a full map counts a call as a
/// lost stack, `stacks_lost`).
pub const MAX_STACKS: u32 = 8192;
/// Frames whose mappings a stack's first call captures (the innermost):
/// each is a `bpf_find_vma` call the verifier follows, unrolled, so the
/// programs' load time grows with it.
pub const CAPTURED: usize = 32;
/// (process, stack) rows.
pub const MAX_STACK_ROWS: u32 = 16_384;
/// Stacks kept by content after a bucket collision (`vdsoctl_sover`,
/// `BPF_F_NO_PREALLOC`: its memory grows with the stacks it holds).
pub const MAX_OVERFLOW: u32 = 8192;
/// The bit that marks an id of the overflow map (the stack map's ids are
/// below [`MAX_STACKS`]).
pub const OVERFLOW_ID: u32 = 1 << 31;
/// `-EEXIST`: `bpf_get_stackid`'s answer when the stack's bucket holds another.
const EEXIST: i32 = -17;
/// `BPF_F_NO_PREALLOC`.
const NO_PREALLOC: u32 = 1;
/// The `stats` slot of calls whose stack was not kept (map full, a hash
/// collision of two stacks, or a walk the kernel refused).
pub(super) const STACK_LOST: u32 = 2;

/// `BPF_F_USER_STACK`.
const USER_STACK: i32 = 1 << 8;
const MAP_STACK_TRACE: u32 = 7;
const MAP_PERCPU_ARRAY: u32 = 6;
/// Stack slots of a stack's first call: the frame buffer's address and
/// the bytes `bpf_get_stack` wrote (below `files.rs`' slots), the word.
const BUF_AT: i16 = -264;
const BUF_LEN: i16 = -272;
const WORD_AT: i16 = -280;
/// 1 once this call's stack capture ran (`count_site` skips its own).
pub(super) const CAPTURED_FLAG: i16 = -288;

/// Stack slots of the piece: the program's context (kept at entry), the
/// stack row's key and its first value. `gen.rs`'s NSINFO (-96..-88) lies
/// inside STACK_KEY: it is used up (the pid-namespace ids) before
/// `count_stack` writes the key.
const CTX: i16 = -120;
const STACK_KEY: i16 = -104;
const STACK_VAL: i16 = -112;

/// Stack-row key (16 bytes): tgid, stack id, process start.
pub(super) mod stack_key {
    use super::Slot;
    pub const SIZE: usize = 16;
    pub const TGID: Slot = Slot { off: 0, size: super::Size::W };
    pub const ID: Slot = Slot { off: 4, size: super::Size::W };
    pub const START: Slot = Slot { off: 8, size: super::Size::Dw };
}

/// The maps' descriptors, as the generator references them.
#[derive(Debug, Clone, Copy)]
pub(super) struct StackFds {
    pub rows: i32,
    pub traces: i32,
    /// A stack's first call: its frames (a per-CPU buffer), the word at
    /// its stack pointer (by stack row), and each frame's mapping
    /// (`vdsoctl_files`, [`super::files`]; `None`: not captured).
    pub buf: i32,
    pub words: i32,
    pub files: Option<i32>,
    /// Stacks kept by content (frames → id) and the id counter (one u64).
    pub over: i32,
    pub next: i32,
    /// The frames' capture in a `bpf_loop` (5.17; else unrolled: its load
    /// takes the verifier CAPTURED times as long).
    pub looped: bool,
}

/// The maps of `--stacks`.
#[derive(Debug)]
pub(super) struct StackMaps {
    rows: sys::Map,
    traces: sys::Map,
    buf: sys::Map,
    words: sys::Map,
    over: sys::Map,
    next: sys::Map,
}

impl StackMaps {
    pub fn create(map: impl Fn(sys::MapSpec<'_>) -> crate::error::Result<sys::Map>) -> crate::error::Result<StackMaps> {
        Ok(StackMaps {
            rows: map(super::counters(stack_key::SIZE, MAX_STACK_ROWS, "vdsoctl_srows"))?,
            traces: map(sys::MapSpec {
                map_type: MAP_STACK_TRACE,
                key_size: 4,
                value_size: (DEPTH * 8) as u32,
                max_entries: MAX_STACKS,
                flags: 0,
                name: "vdsoctl_stacks",
            })?,
            buf: map(sys::MapSpec {
                map_type: MAP_PERCPU_ARRAY,
                key_size: 4,
                value_size: (DEPTH * 8) as u32,
                max_entries: 1,
                flags: 0,
                name: "vdsoctl_sframes",
            })?,
            words: map(sys::MapSpec {
                map_type: super::MAP_HASH,
                key_size: stack_key::SIZE as u32,
                value_size: 8,
                max_entries: MAX_STACK_ROWS,
                flags: 0,
                name: "vdsoctl_swords",
            })?,
            over: map(sys::MapSpec {
                map_type: super::MAP_HASH,
                key_size: (DEPTH * 8) as u32,
                value_size: 4,
                max_entries: MAX_OVERFLOW,
                flags: NO_PREALLOC,
                name: "vdsoctl_sover",
            })?,
            next: map(sys::MapSpec {
                map_type: super::MAP_ARRAY,
                key_size: 4,
                value_size: 8,
                max_entries: 1,
                flags: 0,
                name: "vdsoctl_snext",
            })?,
        })
    }

    pub fn fds(&self, files: Option<i32>) -> StackFds {
        StackFds {
            rows: self.rows.raw_fd(),
            traces: self.traces.raw_fd(),
            buf: self.buf.raw_fd(),
            words: self.words.raw_fd(),
            files,
            over: self.over.raw_fd(),
            next: self.next.raw_fd(),
            looped: true,
        }
    }

    /// Every (process, stack) row into `tally.stacks`, frames innermost first.
    pub fn read(&self, tally: &mut Tally) -> io::Result<()> {
        let mut value = vec![0u8; self.rows.value_size()];
        let mut frames = vec![0u8; self.traces.value_size()];
        let mut known: std::collections::HashMap<u32, Vec<u64>> = Default::default();
        // The stacks kept by content: their frames are the key.
        let mut id = [0u8; 4];
        for key in self.over.keys(MAX_OVERFLOW + 1) {
            let key = key?;
            if self.over.lookup(&key, &mut id)? {
                known.insert(u32::from_ne_bytes(id), decode(&key));
            }
        }
        for key in self.rows.keys(MAX_STACK_ROWS + 1) {
            let key = key?;
            if !self.rows.lookup(&key, &mut value)? {
                continue;
            }
            let id = stack_key::ID.get(&key) as u32;
            let walk = match known.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => e.get().clone(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let found = self.traces.lookup(&id.to_ne_bytes(), &mut frames)?;
                    e.insert(if found { decode(&frames) } else { Vec::new() }).clone()
                }
            };
            let mut word = [0u8; 8];
            let word = if self.words.lookup(&key, &mut word)? { u64::from_ne_bytes(word) } else { 0 };
            let stack = StackKey {
                pid: stack_key::TGID.get(&key) as u32 as i32,
                start: stack_key::START.get(&key),
                full: walk.len() >= DEPTH,
                frames: walk,
                word,
            };
            *tally.stacks.entry(stack).or_default() += sum_per_cpu(&value);
        }
        Ok(())
    }
}

/// A stack map value: return addresses, innermost first, zero after the last.
fn decode(value: &[u8]) -> Vec<u64> {
    value
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .take_while(|ip| *ip != 0)
        .collect()
}

impl Generator {
    /// At a program's entry (R1: its context), with `--stacks`: keep the
    /// context for [`Generator::count_stack`] (`bpf_get_stackid` takes it).
    pub(super) fn keep_ctx(&self, a: &mut Asm) {
        if self.stacks.is_some() {
            a.store(Size::Dw, FP, CTX, R1);
        }
    }

    /// With `--stacks`, once the call is known to be counted (R7: the
    /// process's start, its tgid in the process key): count it in its
    /// (process, stack) row. A stack not kept counts in `stats[STACK_LOST]`;
    /// the call's row is counted either way.
    pub(super) fn count_stack(&self, a: &mut Asm) {
        let Some(fds) = self.stacks else { return };
        if fds.files.is_some() {
            a.store_imm(Size::W, FP, CAPTURED_FLAG, 0);
        }
        a.load(Size::Dw, R1, FP, CTX)
            .load_map(R2, fds.traces)
            .mov_imm(R3, USER_STACK)
            .call(Helper::GetStackid)
            .jump_imm(Cond::Sge, R0, 0, "stack_id");
        self.overflow_id(a, fds);
        a.label("stack_id").store(stack_key::ID.size, FP, STACK_KEY + stack_key::ID.off, R0);
        a.load(pkey::TGID.size, R1, FP, super::gen::PKEY + pkey::TGID.off);
        a.store(stack_key::TGID.size, FP, STACK_KEY + stack_key::TGID.off, R1);
        a.store(stack_key::START.size, FP, STACK_KEY + stack_key::START.off, R7);
        if fds.files.is_some() && self.layout.vma.is_some() {
            // A stack seen before: bumped, as without the capture.
            a.load_map(R1, fds.rows).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(STACK_KEY));
            a.call(Helper::MapLookupElem).jump_imm(Cond::Eq, R0, 0, "stack_new");
            a.mov_imm(R1, 1).atomic_add(R0, 0, R1);
            a.goto("stack_done").label("stack_new");
            self.capture_stack(a, fds);
        }
        Self::bump_or_insert(a, fds.rows, (STACK_KEY, STACK_VAL), ["stack_insert", "stack_lost", "stack_done"]);
        a.label("stack_lost");
        self.count_stat(a, STACK_LOST);
        a.label("stack_done");
    }
}

impl Generator {
    /// After `bpf_get_stackid` refused the stack (R0 its error): when its
    /// bucket held another stack, the stack's id from the overflow map,
    /// keyed by its frames (a new one from the counter, [`OVERFLOW_ID`]
    /// set, at its first call), into R0 and on to `stack_id`; else (the
    /// walk refused, both maps full) to `stack_lost`.
    fn overflow_id(&self, a: &mut Asm, fds: StackFds) {
        a.jump_imm(Cond::Ne, R0, EEXIST, "stack_lost");
        a.store_imm(Size::W, FP, BUF_LEN, 0);
        a.load_map(R1, fds.buf).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(BUF_LEN)).call(Helper::MapLookupElem);
        a.jump_imm(Cond::Eq, R0, 0, "stack_lost").store(Size::Dw, FP, BUF_AT, R0);
        // The frames, the rest of the buffer zeroed by the helper: the key.
        a.load(Size::Dw, R1, FP, CTX).mov(R2, R0).mov_imm(R3, (DEPTH * 8) as i32).mov_imm(R4, USER_STACK);
        a.call(Helper::GetStack).jump_imm(Cond::Sle, R0, 0, "stack_lost");
        let find = |a: &mut Asm, missing: &str| {
            a.load_map(R1, fds.over).load(Size::Dw, R2, FP, BUF_AT).call(Helper::MapLookupElem);
            a.jump_imm(Cond::Eq, R0, 0, missing).load(Size::W, R0, R0, 0).goto("stack_id");
        };
        find(a, "sover_new");
        // A new stack: the next id, inserted unless another CPU just did.
        a.label("sover_new").store_imm(Size::W, FP, BUF_LEN, 0);
        a.load_map(R1, fds.next).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(BUF_LEN)).call(Helper::MapLookupElem);
        a.jump_imm(Cond::Eq, R0, 0, "stack_lost");
        a.mov_imm(R1, 1).atomic_fetch_add(R0, 0, R1).jump_imm(Cond::Ge, R1, (OVERFLOW_ID - 1) as i32, "stack_lost");
        a.alu_imm(Alu::Or, R1, OVERFLOW_ID as i32).store(Size::W, FP, STACK_KEY + stack_key::ID.off, R1);
        a.load_map(R1, fds.over).load(Size::Dw, R2, FP, BUF_AT);
        a.mov(R3, FP).alu_imm(Alu::Add, R3, i32::from(STACK_KEY + stack_key::ID.off)).mov_imm(R4, super::gen::NOEXIST);
        a.call(Helper::MapUpdateElem).jump_imm(Cond::Ne, R0, 0, "sover_again");
        a.load(Size::W, R0, FP, STACK_KEY + stack_key::ID.off).goto("stack_id");
        a.label("sover_again");
        find(a, "stack_lost");
    }

    /// A stack row's first call (R7 the start; R6–R9 kept): the word at
    /// the user stack pointer (a leaf wrapper's caller, which the frame
    /// pointer walk skips) kept by row, and the mapping of it and of every
    /// frame (`bpf_get_stack` into a per-CPU buffer) captured, so the
    /// stack is named after its process is gone.
    fn capture_stack(&self, a: &mut Asm, fds: StackFds) {
        let Some(files) = fds.files else { return };
        let tgid = super::gen::PKEY + pkey::TGID.off;
        a.load(pkey::TGID.size, R1, FP, tgid);
        self.file_key(a, "sfacts");
        if let Some((_, sp)) = self.layout.site.filter(|_| a.regs_at_ctx) {
            a.store_imm(Size::Dw, FP, WORD_AT, 0);
            a.load(Size::Dw, R1, FP, CTX).load(Size::Dw, R1, R1, 0);
            a.mov(R8, R1);
            Self::read_stack_word(a, R8, sp, WORD_AT);
            // R8 was the group leader: count_tail needs it no more.
            a.load_map(R1, fds.words).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(STACK_KEY));
            a.mov(R3, FP).alu_imm(Alu::Add, R3, i32::from(WORD_AT)).mov_imm(R4, 0).call(Helper::MapUpdateElem);
            a.load(Size::Dw, R1, FP, WORD_AT);
            self.capture_one(a, files, "sword");
        }
        a.store_imm(Size::W, FP, BUF_LEN, 0);
        a.load_map(R1, fds.buf).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(BUF_LEN)).call(Helper::MapLookupElem);
        a.jump_imm(Cond::Eq, R0, 0, "sframes_done").store(Size::Dw, FP, BUF_AT, R0);
        a.load(Size::Dw, R1, FP, CTX).mov(R2, R0).mov_imm(R3, (DEPTH * 8) as i32).mov_imm(R4, USER_STACK);
        a.call(Helper::GetStack).jump_imm(Cond::Sle, R0, 0, "sframes_done").store(Size::Dw, FP, BUF_LEN, R0);
        if fds.looped {
            // Each frame's capture in `bpf_loop`'s callback: verified once,
            // not CAPTURED times (issue 43: the start of `--stacks`).
            a.mov_imm(R1, CAPTURED as i32).load_func(R2, "sframe_cb");
            a.mov(R3, FP).alu_imm(Alu::Add, R3, i32::from(CAPTURE_BASE)).mov_imm(R4, 0).call(Helper::Loop);
        } else {
            for i in 0..CAPTURED as i32 {
                a.load(Size::Dw, R1, FP, BUF_LEN).jump_imm(Cond::Sle, R1, 8 * i, "sframes_done");
                a.load(Size::Dw, R1, FP, BUF_AT).load(Size::Dw, R1, R1, (8 * i) as i16);
                self.capture_one(a, files, &format!("sf{i}"));
            }
        }
        a.label("sframes_done").store_imm(Size::W, FP, CAPTURED_FLAG, 1);
    }
}

impl Generator {
    /// `bpf_loop`'s callback for a stack's frames (R1 the frame's index,
    /// R2 the program's frame at [`CAPTURE_BASE`]), after the program's
    /// last `exit`: the frame's mapping captured as
    /// [`Generator::capture_one`] does, through the context; 1 (stop)
    /// past the frames `bpf_get_stack` wrote.
    pub(super) fn frames_callback(&self, a: &mut Asm) {
        let Some(fds) = self.stacks.filter(|s| s.looped) else { return };
        let (Some(files), Some(_)) = (fds.files, self.layout.vma) else { return };
        let at = |slot: i16| slot - CAPTURE_BASE;
        a.label("sframe_cb").mov(R6, R2).mov(R7, R1);
        a.jump_imm(Cond::Gt, R7, CAPTURED as i32 - 1, "sframe_stop");
        a.mov(R2, R7).alu_imm(Alu::Lsh, R2, 3);
        a.load(Size::Dw, R1, R6, at(BUF_LEN)).jump_reg(Cond::Sle, R1, R2, "sframe_stop");
        a.call(Helper::GetCurrentTaskBtf).mov(R9, R0);
        a.mov(R2, R7).alu_imm(Alu::Lsh, R2, 3);
        a.load(Size::Dw, R1, R6, at(BUF_AT)).alu_reg(Alu::Add, R1, R2).load(Size::Dw, R1, R1, 0);
        self.capture_one_at(a, files, "sfl", (R6, -CAPTURE_BASE));
        a.mov_imm(R0, 0).exit();
        a.label("sframe_stop").mov_imm(R0, 1).exit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_value_ends_at_its_first_zero() {
        let mut v = vec![0u8; DEPTH * 8];
        v[0..8].copy_from_slice(&0x401000u64.to_ne_bytes());
        v[8..16].copy_from_slice(&0x401100u64.to_ne_bytes());
        v[24..32].copy_from_slice(&0x999u64.to_ne_bytes());
        assert_eq!(decode(&v), vec![0x401000, 0x401100]);
        assert_eq!(decode(&v[..5]), Vec::<u64>::new());
    }
}
