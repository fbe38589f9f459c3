//! `trace --stacks`: the user stack of every counted call, aggregated in
//! the kernel. `bpf_get_stackid(ctx, map, BPF_F_USER_STACK)` walks the
//! task's user frame pointers from the registers saved at syscall entry
//! (the same walk as `perf record --call-graph fp`) and stores the frames
//! once in a `BPF_MAP_TYPE_STACK_TRACE` map; a hash counts calls per
//! (process, start time, stack id). Nothing is sent per call: the cost is
//! the walk (measured in scripts/bench-trace.sh, quoted in
//! doc/TRACE-ENGINE.md).
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

use super::gen::Generator;
use super::insn::{Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R7};
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
/// (process, stack) rows.
pub const MAX_STACK_ROWS: u32 = 16_384;
/// The `stats` slot of calls whose stack was not kept (map full, a hash
/// collision of two stacks, or a walk the kernel refused).
pub(super) const STACK_LOST: u32 = 2;

/// `BPF_F_USER_STACK`.
const USER_STACK: i32 = 1 << 8;
const MAP_STACK_TRACE: u32 = 7;

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

/// The two maps' descriptors, as the generator references them.
#[derive(Debug, Clone, Copy)]
pub(super) struct StackFds {
    pub rows: i32,
    pub traces: i32,
}

/// The maps of `--stacks`.
#[derive(Debug)]
pub(super) struct StackMaps {
    rows: sys::Map,
    traces: sys::Map,
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
        })
    }

    pub fn fds(&self) -> StackFds {
        StackFds { rows: self.rows.raw_fd(), traces: self.traces.raw_fd() }
    }

    /// Every (process, stack) row into `tally.stacks`, frames innermost first.
    pub fn read(&self, tally: &mut Tally) -> io::Result<()> {
        let mut value = vec![0u8; self.rows.value_size()];
        let mut frames = vec![0u8; self.traces.value_size()];
        let mut known: std::collections::HashMap<u32, Vec<u64>> = Default::default();
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
            let stack = StackKey {
                pid: stack_key::TGID.get(&key) as u32 as i32,
                start: stack_key::START.get(&key),
                full: walk.len() >= DEPTH,
                frames: walk,
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
        a.load(Size::Dw, R1, FP, CTX)
            .load_map(R2, fds.traces)
            .mov_imm(R3, USER_STACK)
            .call(Helper::GetStackid)
            .jump_imm(Cond::Slt, R0, 0, "stack_lost");
        a.store(stack_key::ID.size, FP, STACK_KEY + stack_key::ID.off, R0);
        a.load(pkey::TGID.size, R1, FP, super::gen::PKEY + pkey::TGID.off);
        a.store(stack_key::TGID.size, FP, STACK_KEY + stack_key::TGID.off, R1);
        a.store(stack_key::START.size, FP, STACK_KEY + stack_key::START.off, R7);
        Self::bump_or_insert(a, fds.rows, (STACK_KEY, STACK_VAL), ["stack_insert", "stack_lost", "stack_done"]);
        a.label("stack_lost");
        self.count_stat(a, STACK_LOST);
        a.label("stack_done");
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
