//! The constants of a decoded range followed through its control flow:
//! basic blocks (split at branch targets and after branches), then a
//! forward data flow to a fixed point, where a register keeps its constant
//! at a merge (a loop head, the join of two branches) only when every path
//! into it brings the same one. So `mov $0xffffffffff600000,%r13` before a
//! loop and `call *%r13` inside it is a site, as `mov $228,%r10d` before a
//! loop and `mov %r10,%rax; syscall` inside it.
//!
//! A call keeps the callee-saved registers (the SysV ABIs': rbx, rbp,
//! r12–r15 on x86_64; ebx, ebp, esi, edi on i386) and forgets the rest.
//! Paths from outside the range are not known: the range's first
//! instruction and every block no path reaches (a jump table's targets)
//! start with nothing known.

use super::*;

/// A run of instructions entered only at its first: `[first, end)`
/// indices into the decoded list, and the blocks it may go to.
struct Block {
    first: usize,
    end: usize,
    succ: Vec<usize>,
}

/// Visits of blocks allowed per block before the data flow gives up on
/// a fixed point (the lattice is short, so it is reached long before).
const MAX_VISITS: usize = 64;

/// The sites in `list` (decoded in order, `list[i+1]` right after
/// `list[i]` unless one is invalid), with `leaders` as extra block starts.
pub(super) fn sites(list: &[Instruction], bits: u32, t: &Targets, leaders: &[u64]) -> Vec<Site> {
    let blocks = blocks(list, leaders);
    let states = fixed_point(list, &blocks, bits, t);
    let mut out = Vec::new();
    for (b, st) in blocks.iter().zip(states) {
        let mut st = st.unwrap_or_default();
        for ins in &list[b.first..b.end] {
            transfer(&mut st, ins, bits, t, Some(&mut out));
        }
    }
    out.sort_by_key(|s| s.addr);
    out.dedup_by_key(|s| s.addr);
    out
}

/// Whether control can go on to the next instruction after `ins`, and
/// where else it can go (a direct branch's target).
fn flow(ins: &Instruction) -> (bool, Option<u64>) {
    let m = ins.mnemonic();
    let direct = matches!(ins.op0_kind(), OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64);
    let target = direct.then(|| ins.near_branch_target());
    if ins.is_invalid() {
        (false, None)
    } else if is_jmp(m) {
        (false, target)
    } else if matches!(m, Mnemonic::Ret | Mnemonic::Retf | Mnemonic::Iret | Mnemonic::Iretd | Mnemonic::Iretq)
        || matches!(m, Mnemonic::Ud2 | Mnemonic::Hlt)
    {
        (false, None)
    } else if ends_block(m) {
        (true, target)
    } else {
        (true, None)
    }
}

/// Split `list` into blocks and link them.
fn blocks(list: &[Instruction], leaders: &[u64]) -> Vec<Block> {
    let n = list.len();
    let index = |ip: u64| list.binary_search_by_key(&ip, |i| i.ip()).ok();
    let mut starts = vec![false; n];
    if n > 0 {
        starts[0] = true;
    }
    for (k, ins) in list.iter().enumerate() {
        if leaders.binary_search(&ins.ip()).is_ok() {
            starts[k] = true;
        }
        let (next, target) = flow(ins);
        let branches = !next || target.is_some() || ends_block(ins.mnemonic());
        if branches && k + 1 < n {
            starts[k + 1] = true;
        }
        if let Some(j) = target.and_then(index) {
            starts[j] = true;
        }
    }
    let firsts: Vec<usize> = (0..n).filter(|&k| starts[k]).collect();
    let block_of = |k: usize| firsts.binary_search(&k).ok();
    let mut out = Vec::with_capacity(firsts.len());
    for (b, &first) in firsts.iter().enumerate() {
        let end = firsts.get(b + 1).copied().unwrap_or(n);
        let (next, target) = flow(&list[end - 1]);
        let mut succ = Vec::new();
        if next && end < n && list[end - 1].next_ip() == list[end].ip() {
            succ.push(b + 1);
        }
        if let Some(j) = target.and_then(index).and_then(block_of) {
            succ.push(j);
        }
        out.push(Block { first, end, succ });
    }
    out
}

/// Each block's entry state at the fixed point; None for a block no path
/// from a seeded one reaches. The first block, and each one then still
/// unreached, is seeded with nothing known.
fn fixed_point(list: &[Instruction], blocks: &[Block], bits: u32, t: &Targets) -> Vec<Option<State>> {
    let mut states: Vec<Option<State>> = vec![None; blocks.len()];
    let mut visits = vec![0usize; blocks.len()];
    for seed in 0..blocks.len() {
        if states[seed].is_some() {
            continue;
        }
        states[seed] = Some(State::default());
        let mut work = vec![seed];
        while let Some(b) = work.pop() {
            visits[b] += 1;
            let Some(mut st) = states[b].clone() else { continue };
            if visits[b] > MAX_VISITS {
                // No fixed point in reach: forget everything from here on.
                st = State::default();
            }
            for ins in &list[blocks[b].first..blocks[b].end] {
                transfer(&mut st, ins, bits, t, None);
            }
            for &s in &blocks[b].succ {
                let changed = match &mut states[s] {
                    Some(old) => old.meet(&st),
                    slot @ None => {
                        *slot = Some(st.clone());
                        true
                    }
                };
                if changed && visits[s] <= MAX_VISITS {
                    work.push(s);
                }
            }
        }
    }
    states
}

/// What one instruction does to the constants, and the site it is (kept
/// in `out` when given).
fn transfer(st: &mut State, ins: &Instruction, bits: u32, t: &Targets, out: Option<&mut Vec<Site>>) {
    if ins.is_invalid() {
        st.reset();
        return;
    }
    let m = ins.mnemonic();
    let site = if matches!(m, Mnemonic::Syscall | Mnemonic::Sysenter | Mnemonic::Int) {
        syscall_site(st, ins, bits)
    } else if is_call(m) || is_jmp(m) {
        let site = call_site(st, ins, bits, t);
        if is_call(m) {
            st.after_call(bits);
        } else {
            st.reset();
        }
        site
    } else {
        if !ends_block(m) {
            step(st, ins, bits);
        }
        None
    };
    if let (Some(site), Some(out)) = (site, out) {
        out.push(site);
    }
}
