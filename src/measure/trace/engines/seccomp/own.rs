//! A command's own seccomp filters, as the seccomp engine's listener
//! channel keeps their meaning (traced, the kernel runs them beside
//! vdsoctl's TRACE itself, and a stop of theirs is skipped ENOSYS). The kernel runs every filter of a task and takes the action
//! of highest precedence, and it ranks USER_NOTIF (vdsoctl's) above TRACE:
//! a clock syscall the command's filter sends to `SECCOMP_RET_TRACE`
//! would reach vdsoctl, and vdsoctl's CONTINUE would run it, where
//! without vdsoctl (no tracer) it fails ENOSYS. So vdsoctl's filter also
//! notifies seccomp(2); each program installed is read from the caller's
//! memory and kept per thread as the kernel keeps it ([`Own`]: confirmed
//! by the kernel's `Seccomp_filters` count, so a refused one is dropped, a
//! thread or child that never got it has none, an orphan keeps its own);
//! and a clock syscall of a thread with programs of its own runs them
//! here: TRACE with no tracer attached is answered ENOSYS, as the kernel
//! would. (A KILL, TRAP or ERRNO of theirs outranks
//! USER_NOTIF: the kernel acts on it and vdsoctl never sees the call.)

use crate::measure::sys::seccomp::{Insn, Notification};
use std::collections::HashMap;

/// `SECCOMP_RET_TRACE`, and the mask of a return's action.
pub const RET_TRACE: u32 = 0x7ff0_0000;
const ACTION_FULL: u32 = 0xffff_0000;
/// seccomp(2)'s `SECCOMP_SET_MODE_FILTER` and `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
const SET_MODE_FILTER: u64 = 1;
const FLAG_NEW_LISTENER: u64 = 1 << 3;
/// The longest program the kernel takes (`BPF_MAXINSNS`).
const MAX_INSNS: usize = 4096;

/// `struct seccomp_data` of a notified call, as a program reads it.
fn data_of(n: &Notification) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[0..4].copy_from_slice(&n.nr.to_ne_bytes());
    d[4..8].copy_from_slice(&n.arch.to_ne_bytes());
    d[8..16].copy_from_slice(&n.ip.to_ne_bytes());
    for (i, a) in n.args.iter().enumerate() {
        d[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    d
}

/// Run a classic-BPF seccomp program over a call; its return value, or
/// `None` for an instruction the kernel's checker would have refused.
pub fn run(p: &[Insn], n: &Notification) -> Option<u32> {
    let data = data_of(n);
    let (mut a, mut x, mut mem, mut pc) = (0u32, 0u32, [0u32; 16], 0usize);
    while let Some(i) = p.get(pc) {
        pc += 1;
        let (k, src) = (i.k, if i.code & 0x08 != 0 { x } else { i.k });
        match i.code {
            0x20 => {
                let at = usize::try_from(k).ok().filter(|k| k % 4 == 0 && k + 4 <= data.len())?;
                a = u32::from_ne_bytes(data[at..at + 4].try_into().ok()?);
            }
            0x80 => a = data.len() as u32,
            0x81 => x = data.len() as u32,
            0x00 => a = k,
            0x01 => x = k,
            0x60 => a = *mem.get(k as usize)?,
            0x61 => x = *mem.get(k as usize)?,
            0x02 => *mem.get_mut(k as usize)? = a,
            0x03 => *mem.get_mut(k as usize)? = x,
            0x07 => x = a,
            0x87 => a = x,
            0x06 => return Some(k),
            0x16 => return Some(a),
            c if c & 0x07 == 0x04 => a = alu(c & 0xf0, a, src)?,
            c if c & 0x07 == 0x05 => {
                let taken = match c & 0xf0 {
                    0x00 => {
                        pc += k as usize;
                        continue;
                    }
                    0x10 => a == src,
                    0x20 => a > src,
                    0x30 => a >= src,
                    0x40 => a & src != 0,
                    _ => return None,
                };
                pc += usize::from(if taken { i.jt } else { i.jf });
            }
            _ => return None,
        }
    }
    None
}

fn alu(op: u16, a: u32, v: u32) -> Option<u32> {
    Some(match op {
        0x00 => a.wrapping_add(v),
        0x10 => a.wrapping_sub(v),
        0x20 => a.wrapping_mul(v),
        0x30 => a.checked_div(v)?,
        0x40 => a | v,
        0x50 => a & v,
        0x60 => a.checked_shl(v).unwrap_or(0),
        0x70 => a.checked_shr(v).unwrap_or(0),
        0x80 => a.wrapping_neg(),
        0x90 => a.checked_rem(v)?,
        0xa0 => a ^ v,
        _ => return None,
    })
}

/// Whether action `a` outranks `b` (the kernel compares them as signed).
pub fn outranks(a: u32, b: u32) -> bool {
    ((a & ACTION_FULL) as i32) < ((b & ACTION_FULL) as i32)
}

/// The programs the command's tree installed of its own, per thread, as
/// the kernel keeps them (issue 42): a filter belongs to the thread that
/// installed it (all of its process's threads with TSYNC) and to what that
/// thread creates *afterwards*; one the kernel refused is no filter. The
/// seccomp(2) call is notified before it runs, so what it installs is
/// only a candidate ([`Own::pending`]) until the kernel's own count says
/// (`Seccomp_filters:` of /proc/TID/status, Linux 5.9): a thread holding
/// `base + k` filters holds its chain's first `k` programs of the tree's
/// own — vdsoctl's filter and those above vdsoctl are the `base`. A thread
/// first seen (a new thread, a child forked before or after a filter, an
/// orphan whose parent is gone) takes the first `k` of a relative's chain:
/// its process's threads', its parent's, else any chain that long (every
/// chain of the tree grows from the installs vdsoctl saw). Without the
/// count (an older kernel) the chain of a process is its parent's, as
/// before.
#[derive(Default)]
pub struct Own {
    chains: HashMap<i32, Vec<Vec<Insn>>>,
    /// A seccomp(2) not yet confirmed, per thread: the program and TSYNC.
    pending: HashMap<i32, (Vec<Insn>, bool)>,
    /// The process of each thread seen.
    tgids: HashMap<i32, i32>,
    /// Filters every task of the tree holds before its own; `None`: the
    /// kernel does not count them.
    base: Option<u32>,
}

/// The most threads [`Own`] remembers before it forgets those without
/// programs of the tree's own.
const MAX_THREADS: usize = 16_384;

/// `SECCOMP_FILTER_FLAG_TSYNC`.
const FLAG_TSYNC: u64 = 1;

/// `Seccomp_filters:` of a thread's status (Linux 5.9); `None` when the
/// kernel does not say or the thread is gone.
fn filters_of(path: &str) -> Option<u32> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().find_map(|l| l.strip_prefix("Seccomp_filters:")).and_then(|v| v.trim().parse().ok())
}

impl Own {
    /// Ready to keep a tree's programs; `base`: the filters of vdsoctl's
    /// calling thread, plus vdsoctl's own that the command installs.
    pub fn new() -> Own {
        Own { base: filters_of("/proc/thread-self/status").map(|n| n + 1), ..Own::default() }
    }

    /// Whether no process installed a program of its own.
    pub fn is_empty(&self) -> bool {
        self.chains.is_empty() && self.pending.is_empty()
    }

    /// Thread `tid` of `tgid` asks to install `program` (`flags`: its
    /// seccomp(2) flags): a candidate until the kernel's count confirms it.
    pub fn keep(&mut self, tid: i32, tgid: i32, program: Vec<Insn>, flags: u64) {
        self.tgids.insert(tid, tgid);
        if self.base.is_none() {
            // No count to confirm by: taken as installed, per process.
            self.chains.entry(tgid).or_default().push(program);
            return;
        }
        // An earlier call of this thread has run by now: its count says.
        if self.pending.contains_key(&tid) {
            self.chain_of(tid, tgid, None);
        }
        self.pending.insert(tid, (program, flags & FLAG_TSYNC != 0));
    }

    /// A chain as it may be: confirmed, with its candidate after it.
    fn provisional(&self, tid: i32) -> Vec<Vec<Insn>> {
        let mut chain = self.chains.get(&tid).cloned().unwrap_or_default();
        chain.extend(self.pending.get(&tid).map(|(p, _)| p.clone()));
        chain
    }

    /// The first `k` programs of a relative's chain (see [`Own`]).
    fn relatives(&self, tid: i32, tgid: i32, parent: Option<i32>, k: usize) -> Vec<Vec<Insn>> {
        if k == 0 {
            return Vec::new();
        }
        let mut tids: Vec<i32> = self.tgids.keys().copied().filter(|t| *t != tid).collect();
        tids.sort_unstable();
        let family =
            |of: Option<i32>| tids.iter().copied().filter(move |t| of.is_some() && self.tgids.get(t) == of.as_ref());
        let order: Vec<i32> = family(Some(tgid)).chain(family(parent)).chain(tids.iter().copied()).collect();
        order
            .into_iter()
            .map(|t| self.provisional(t))
            .find(|c| c.len() >= k)
            .map(|c| c[..k].to_vec())
            .unwrap_or_default()
    }

    /// The tree's own programs thread `tid` of `tgid` holds now.
    fn chain_of(&mut self, tid: i32, tgid: i32, parent: Option<i32>) -> Vec<Vec<Insn>> {
        if self.tgids.len() >= MAX_THREADS {
            // Bounded: threads that hold none of the tree's programs are
            // forgotten (read anew from their count when they call again).
            let (chains, pending) = (&mut self.chains, &self.pending);
            chains.retain(|t, c| !c.is_empty() || pending.contains_key(t));
            self.tgids.retain(|t, _| chains.contains_key(t) || pending.contains_key(t));
        }
        self.tgids.insert(tid, tgid);
        let (Some(base), Some(count)) = (self.base, filters_of(&format!("/proc/{tid}/status"))) else {
            // No count: a process's chain, its parent's when first asked.
            let pid_chain = self.chains.get(&tgid).cloned();
            let chain =
                pid_chain.unwrap_or_else(|| parent.and_then(|p| self.chains.get(&p)).cloned().unwrap_or_default());
            self.chains.insert(tgid, chain.clone());
            return chain;
        };
        let k = count.saturating_sub(base) as usize;
        if let Some((program, tsync)) = self.pending.remove(&tid) {
            let mut have = match self.chains.get(&tid) {
                Some(c) => c.clone(),
                None => self.relatives(tid, tgid, parent, k.saturating_sub(1)),
            };
            // Installed if the count grew past it; else the kernel refused it.
            if have.len() < k {
                have.push(program);
                if tsync {
                    let siblings: Vec<i32> = self.tgids.iter().filter(|(_, g)| **g == tgid).map(|(t, _)| *t).collect();
                    for t in siblings {
                        self.chains.insert(t, have.clone());
                    }
                }
            }
            self.chains.insert(tid, have);
        }
        let chain = match self.chains.get(&tid) {
            Some(c) if c.len() == k => c.clone(),
            Some(c) if c.len() > k => c[..k].to_vec(),
            _ => self.relatives(tid, tgid, parent, k),
        };
        self.chains.insert(tid, chain.clone());
        chain
    }

    /// What the programs thread `tid` of `tgid` holds return for this
    /// call, of highest precedence; `None` when it holds none.
    pub fn verdict(&mut self, tid: i32, tgid: i32, parent: Option<i32>, n: &Notification) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        let chain = self.chain_of(tid, tgid, parent);
        chain.iter().filter_map(|p| run(p, n)).reduce(|a, b| if outranks(b, a) { b } else { a })
    }

    /// Whether the answer must be ENOSYS: TRACE outranks the rest of the
    /// command's programs and no tracer is attached to the caller.
    pub fn enosys(&mut self, tgid: i32, parent: Option<i32>, n: &Notification) -> bool {
        self.verdict(n.tid, tgid, parent, n).is_some_and(|v| v & ACTION_FULL == RET_TRACE) && !traced(n.tid)
    }
}

/// A seccomp(2) call, waiting: the program it installs, read from the
/// caller's memory. `None` for other operations, a listener (refused EBUSY
/// under vdsoctl) or a program that cannot be read.
pub fn read_program(n: &Notification, is_64: bool) -> Option<Vec<Insn>> {
    let [op, flags, uargs, ..] = n.args;
    if op != SET_MODE_FILTER || flags & FLAG_NEW_LISTENER != 0 {
        return None;
    }
    let read = |addr: u64, buf: &mut [u8]| crate::inspect::process::read_thread_mem(n.tid, addr, buf);
    // struct sock_fprog: u16 len, then the pointer (aligned to its size).
    let mut head = [0u8; 16];
    let head = if is_64 { &mut head[..] } else { &mut head[..8] };
    read(uargs, head)?;
    let len = usize::from(u16::from_ne_bytes([head[0], head[1]]));
    let ptr = if is_64 {
        u64::from_ne_bytes(head[8..16].try_into().ok()?)
    } else {
        u64::from(u32::from_ne_bytes(head[4..8].try_into().ok()?))
    };
    if len == 0 || len > MAX_INSNS {
        return None;
    }
    let mut raw = vec![0u8; len * 8];
    read(ptr, &mut raw)?;
    Some(
        raw.chunks_exact(8)
            .map(|c| Insn {
                code: u16::from_ne_bytes([c[0], c[1]]),
                jt: c[2],
                jf: c[3],
                k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect(),
    )
}

/// Whether a tracer is attached to `tid` (`TracerPid:` of its status).
fn traced(tid: i32) -> bool {
    std::fs::read(format!("/proc/{tid}/status"))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("TracerPid:")).map(|v| v.trim() != "0"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }

    /// A program as a command would write it: clock_gettime(CLOCK_BOOTTIME)
    /// traced, everything else allowed; and the precedence of two chains.
    #[test]
    fn programs_run_as_the_kernel_runs_them() {
        let p = vec![
            insn(0x20, 0, 0, 0),         // A = nr
            insn(0x15, 0, 3, 228),       // clock_gettime?
            insn(0x20, 0, 0, 16),        // A = args[0] (low word)
            insn(0x15, 0, 1, 7),         // CLOCK_BOOTTIME?
            insn(0x06, 0, 0, RET_TRACE), // traced
            insn(0x06, 0, 0, 0x7fff_0000),
        ];
        let n = |nr: i32, clock: u64| Notification {
            id: 1,
            tid: 1,
            nr,
            arch: 0xc000_003e,
            ip: 0,
            args: [clock, 0, 0, 0, 0, 0],
        };
        assert_eq!(run(&p, &n(228, 7)), Some(RET_TRACE));
        assert_eq!(run(&p, &n(228, 1)), Some(0x7fff_0000));
        assert_eq!(run(&p, &n(39, 7)), Some(0x7fff_0000));
        assert_eq!(run(&[insn(0xff, 0, 0, 0)], &n(1, 1)), None);
        assert!(outranks(RET_TRACE, 0x7fff_0000) && outranks(0x7fc0_0000, RET_TRACE) && outranks(0x8000_0000, 0));
        // Without the kernel's count (base None): per process, inherited.
        let mut own = Own::default();
        own.chains.insert(10, vec![p.clone(), vec![insn(0x06, 0, 0, 0x7ffc_0000)]]);
        assert_eq!(own.verdict(10, 10, None, &n(228, 7)), Some(RET_TRACE));
        assert_eq!(own.verdict(11, 11, Some(10), &n(228, 7)), Some(RET_TRACE), "a child inherits");
        assert_eq!(own.verdict(12, 12, None, &n(228, 7)), None);
        // With it: this very thread holds base + 0 filters (the test's own
        // thread has none of the tree's), so a candidate is dropped.
        let mut own = Own { base: filters_of("/proc/thread-self/status"), ..Own::default() };
        let me = nix::unistd::gettid().as_raw();
        own.keep(me, 1, p.clone(), 0);
        assert_eq!(own.verdict(me, 1, None, &n(228, 7)), None, "refused: the count did not grow");
        assert!(own.chains.get(&me).is_some_and(Vec::is_empty));
    }
}
