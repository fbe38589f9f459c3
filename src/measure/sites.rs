//! Call sites (`trace --sites`) and naming them at the call: the seccomp
//! engine notes each process at its first notified call, while the caller
//! waits, and [`Book`] takes its executable mappings then ([`Snapshot`]),
//! so nothing is missed, and again when a call's address falls outside
//! them (an exec). The BPF engine's sites are named through the session's
//! sightings instead ([`sight`](super::sight)), every 50 ms: a process that
//! makes its calls and exits between two looks leaves addresses only.

use crate::inspect::process::is_running;
use crate::inspect::symbols::{Frame, FrameKind, Objects, Snapshot};
use crate::measure::trace::{Key, Tally};
use std::collections::{HashMap, HashSet};

/// Where calls were made from (`trace --sites`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Site {
    /// The syscall instruction's own address (the engines step back from
    /// the instruction pointer at entry, which is past it); for a
    /// `[vsyscall]` call, the slot.
    pub ip: u64,
    /// The word at the user stack pointer at entry — the return address
    /// into the caller when the call came through a leaf wrapper such as
    /// libc's `syscall()`; 0 when it could not be read. A 32-bit task's
    /// holds two words: at sp (low half) and three words up (high half),
    /// where the vDSO's `__kernel_vsyscall` returns to ([`Site::words`]).
    pub ret: u64,
}

impl Site {
    /// The stack words as addresses: (at sp, three words up — 0 for a
    /// 64-bit task).
    pub fn words(self, is_64: bool) -> (u64, u64) {
        if is_64 {
            (self.ret, 0)
        } else {
            (self.ret & 0xffff_ffff, self.ret >> 32)
        }
    }
}

/// Processes' mappings by (pid, start as the engine keys it), and the
/// objects they map.
#[derive(Debug, Default)]
pub struct Book {
    objects: Objects,
    snaps: HashMap<(i32, u64), Option<Snapshot>>,
    /// Processes whose mappings were taken again (an exec), once each.
    retaken: HashSet<(i32, u64)>,
}

impl Book {
    /// Take the mappings of process `pid` that started at `start` (ns since
    /// boot; 0: unknown), unless already taken; a pid now held by another
    /// process is not read as it.
    pub fn note(&mut self, pid: i32, start: u64) {
        if self.snaps.contains_key(&(pid, start)) {
            return;
        }
        let snap = if is_running(pid, start) { Snapshot::of(pid, &mut self.objects).ok() } else { None };
        self.snaps.insert((pid, start), snap);
    }

    /// Take them now, whether or not they were taken before (the seccomp
    /// engine, at a call the process waits in, after an exec).
    pub fn retake(&mut self, pid: i32, start: u64) {
        self.snaps.remove(&(pid, start));
        self.note(pid, start);
    }

    /// Whether the mappings taken of the process hold `addr`.
    pub fn maps(&self, pid: i32, start: u64, addr: u64) -> bool {
        matches!(self.snaps.get(&(pid, start)), Some(Some(s)) if s.maps(addr))
    }

    /// Name a site's addresses into `tally.frames`.
    pub fn name(&mut self, tally: &mut Tally, key: &Key, site: Site) {
        self.note(key.pid, key.start);
        let (ret, up) = site.words(key.abi.elf().1);
        for addr in [site.ip, ret, up] {
            let id = (key.pid, key.start, addr);
            if addr != 0 && !tally.frames.contains_key(&id) {
                let frame = self.resolve(key.pid, key.start, addr);
                tally.frames.insert(id, frame);
            }
        }
    }

    /// One address of a process, named through its mappings.
    pub fn resolve(&mut self, pid: i32, start: u64, addr: u64) -> Frame {
        let frame = match self.snaps.get(&(pid, start)) {
            Some(Some(snap)) => snap.resolve(addr, &mut self.objects),
            _ => return Frame::unmapped(addr),
        };
        // Outside every mapping taken: it may have exec'd since. Once.
        if frame.kind == FrameKind::Unmapped && self.retaken.insert((pid, start)) && is_running(pid, start) {
            if let Ok(snap) = Snapshot::of(pid, &mut self.objects) {
                let again = snap.resolve(addr, &mut self.objects);
                if again.kind != FrameKind::Unmapped {
                    self.snaps.insert((pid, start), Some(snap));
                    return again;
                }
            }
        }
        frame
    }
}
