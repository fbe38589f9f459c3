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

/// Which sites' stack words the BPF engine reads. The word at the stack
/// pointer names a caller only where the syscall instruction sits in a leaf
/// that has not moved the stack pointer (libc's `syscall()`, a JIT stub);
/// elsewhere it is a local or a saved register, and its read — a
/// `bpf_probe_read_user` a call, the dearest part of a site — buys
/// nothing. So once a native site has been named with no word that points
/// into code, its ip's bit is set in the program's filter and its calls
/// stop reading the word (it is 0 in their rows, as an unreadable one).
///
/// The bit is a hash of the ip (`layout::unread`, 65,536 bits): a site
/// that shares its bit with a skipped one is not read either. Such a site
/// is seen with no word but 0 (or, once judged a leaf, with a new 0): the
/// bit is then cleared for good, and the calls it made meanwhile (one look
/// at most) have no caller.
#[derive(Debug, Default)]
pub struct WordFilter {
    /// Sites judged, by (pid, start, ip as the engine keys it): `true` for
    /// a leaf (its word is read).
    judged: HashMap<(i32, u64, u64), bool>,
    /// Bits set, by (word, bit), and bits shared by two sites (never set
    /// again).
    set: HashSet<(u32, u32)>,
    contested: HashSet<(u32, u32)>,
}

/// A native site row as the engine keys it: (pid, start, ip at entry, word).
pub type RawSite = (i32, u64, u64, u64);

impl WordFilter {
    /// Judge the sites not judged yet. `code(pid, start, addr)` says
    /// whether `addr` is code in that process (`None`: not looked at yet —
    /// judged at a later call). Returns the filter's bits to set (`true`)
    /// or clear.
    pub fn judge(&mut self, rows: &[RawSite], code: impl Fn(i32, u64, u64) -> Option<bool>) -> Vec<((u32, u32), bool)> {
        let mut words: HashMap<(i32, u64, u64), Vec<u64>> = HashMap::new();
        for &(pid, start, ip, word) in rows {
            words.entry((pid, start, ip)).or_default().push(word);
        }
        let mut changes = Vec::new();
        let mut sites: Vec<_> = words.into_iter().collect();
        sites.sort_unstable();
        'sites: for (site, words) in sites {
            let bit = crate::measure::bpf::unread_bit(site.2);
            let unread = self.set.contains(&bit);
            let judged = self.judged.get(&site).copied();
            let shares = match judged {
                // A leaf whose new calls came back unread: another site's bit.
                Some(true) => unread && words.contains(&0),
                Some(false) => false,
                // Never read: another site's bit (this one is judged later).
                None => unread && words.iter().all(|w| *w == 0),
            };
            if shares {
                self.set.remove(&bit);
                self.contested.insert(bit);
                changes.push((bit, false));
                continue;
            }
            if judged.is_some() {
                continue;
            }
            let mut leaf = false;
            for &w in words.iter().filter(|w| **w != 0) {
                match code(site.0, site.1, w) {
                    None => continue 'sites,
                    Some(is_code) => leaf |= is_code,
                }
            }
            self.judged.insert(site, leaf);
            if !leaf && !self.contested.contains(&bit) && self.set.insert(bit) {
                changes.push((bit, true));
            }
        }
        changes
    }

    /// How many sites were judged (each look's work is the rest).
    pub fn judged(&self) -> usize {
        self.judged.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::bpf::unread_bit;

    /// Code at 0x1000..0x2000 of every process; nothing else is. Process 9
    /// was not looked at yet.
    fn code(pid: i32, _start: u64, addr: u64) -> Option<bool> {
        (pid != 9).then_some((0x1000..0x2000).contains(&addr))
    }

    #[test]
    fn a_site_whose_word_is_no_code_stops_reading_it_and_a_leaf_does_not() {
        let mut f = WordFilter::default();
        let (local, leaf) = (0x1234_5678, 0x1_0000_0000);
        let rows = [(1, 7, local, 0x7ffd_0000), (1, 7, local, 0), (1, 7, leaf, 0x1800), (1, 7, leaf, 0x7ffd_0000)];
        let changes = f.judge(&rows, code);
        assert_eq!(changes, vec![(unread_bit(local), true)]);
        assert_eq!(f.judged(), 2);
        // Judged once: the same rows again change nothing.
        assert!(f.judge(&rows, code).is_empty());
    }

    #[test]
    fn a_process_not_looked_at_yet_is_judged_later() {
        let mut f = WordFilter::default();
        assert!(f.judge(&[(9, 7, 0x40, 0x7ffd_0000)], code).is_empty());
        assert_eq!(f.judged(), 0);
        // A word of 0 only (not readable): nothing to name, judged at once.
        assert_eq!(f.judge(&[(9, 7, 0x40, 0)], code), vec![(unread_bit(0x40), true)]);
    }

    #[test]
    fn a_site_that_shares_a_skipped_bit_clears_it_for_good() {
        let skipped = 0x5000u64;
        // Another ip with the same bit.
        let twin = (0x5001u64..).find(|ip| unread_bit(*ip) == unread_bit(skipped)).unwrap();
        let mut f = WordFilter::default();
        assert_eq!(f.judge(&[(1, 7, skipped, 0x7ffd_0000)], code), vec![(unread_bit(skipped), true)]);
        // The twin's calls came back unread: the bit is cleared, not set again.
        assert_eq!(f.judge(&[(2, 7, twin, 0)], code), vec![(unread_bit(skipped), false)]);
        assert!(f.judge(&[(2, 7, twin, 0), (2, 7, twin, 0x7ffd_0000)], code).is_empty());
        let third = (twin + 1..).find(|ip| unread_bit(*ip) == unread_bit(skipped)).unwrap();
        assert!(f.judge(&[(3, 7, third, 0x7ffd_0000)], code).is_empty(), "contested: never set again");
        // A leaf judged before another site's bit was set on it: its new
        // calls come back 0, and the bit is cleared.
        let mut f = WordFilter::default();
        assert!(f.judge(&[(1, 7, twin, 0x1800)], code).is_empty());
        assert_eq!(f.judge(&[(2, 7, skipped, 0x7ffd_0000)], code), vec![(unread_bit(skipped), true)]);
        assert_eq!(
            f.judge(&[(1, 7, twin, 0x1800), (1, 7, twin, 0), (2, 7, skipped, 0)], code),
            vec![(unread_bit(skipped), false)]
        );
    }
}
