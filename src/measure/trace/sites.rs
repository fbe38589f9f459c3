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
    /// holds two words ([`Site::words`]): three words up (high half), where
    /// the vDSO's `__kernel_vsyscall` (which pushed three registers)
    /// returns to, and eight up (low half), where glibc's i386 `syscall()`
    /// (which pushed four more before its call) returns to. The word at sp
    /// itself names nothing on i386: a wrapper that loads its arguments
    /// into registers has pushed `ebx` (callee-saved) first.
    pub ret: u64,
}

impl Site {
    /// The stack words as addresses: (64-bit: at sp; 32-bit: eight words
    /// up, the wrapper's return), and (32-bit: three words up, the vDSO
    /// entry's return; 0 for a 64-bit task).
    pub fn words(self, is_64: bool) -> (u64, u64) {
        if is_64 {
            (self.ret, 0)
        } else {
            (self.ret & 0xffff_ffff, self.ret >> 32)
        }
    }
}

/// Where an address of a process was mapped at its site's first call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedAt {
    /// The mapping's start and page offset (`vm_pgoff`, in pages).
    pub vm_start: u64,
    pub pgoff: u64,
    /// The file's inode and device (the kernel's `dev_t`: major << 20 |
    /// minor); 0 for memory no file backs.
    pub ino: u64,
    pub dev: u32,
    pub is_exe: bool,
    /// The mapping is executable: code (a stack word pointing at data is
    /// no caller).
    pub is_code: bool,
    /// The task's `[vdso]` text start (0: not known).
    pub vdso: u64,
    /// The inode's generation: with the inode, a handle that opens the
    /// file no process maps any more (`open_by_handle_at`).
    pub generation: u32,
    /// A compat task's `AT_SYSINFO`: where its vDSO's `__kernel_vsyscall`
    /// is (0: not known, or a 64-bit task).
    pub sysinfo: u32,
}

impl MappedAt {
    /// The device as /proc/PID/maps prints it (`fd:01`; the kernel's
    /// `dev_t` is major << 20 | minor).
    pub fn dev_text(&self) -> String {
        format!("{:02x}:{:02x}", self.dev >> 20, self.dev & 0xf_ffff)
    }

    /// How far into its file `address` lies (`page`: the page size).
    pub fn in_file(&self, address: u64, page: u64) -> u64 {
        address.wrapping_sub(self.vm_start).wrapping_add(self.pgoff.wrapping_mul(page))
    }

    /// Whether a file backs it.
    pub fn has_file(&self) -> bool {
        self.ino != 0
    }
}

/// Every address the BPF engine captured at a site's first call:
/// (pid, start, address) → its mapping.
pub type Mapped = std::collections::BTreeMap<(i32, u64, u64), MappedAt>;

/// Processes' mappings by (pid, start as the engine keys it), and the
/// objects they map.
#[derive(Debug, Default)]
pub struct Book {
    objects: Objects,
    snaps: HashMap<(i32, u64), Option<Snapshot>>,
    /// Processes whose mappings were taken again (an exec), once each.
    retaken: HashSet<(i32, u64)>,
    /// Processes whose mappings vdsoctl may not read (not dumpable).
    refused: HashSet<(i32, u64)>,
}

impl Book {
    /// Take the mappings of process `pid` that started at `start` (ns since
    /// boot; 0: unknown), unless already taken; a pid now held by another
    /// process is not read as it.
    pub fn note(&mut self, pid: i32, start: u64) {
        if self.snaps.contains_key(&(pid, start)) {
            return;
        }
        let snap = if is_running(pid, start) {
            match Snapshot::of(pid, &mut self.objects) {
                Ok(snap) => Some(snap),
                Err(crate::error::Error::PermissionDenied { .. }) => {
                    self.refused.insert((pid, start));
                    None
                }
                Err(_) => None,
            }
        } else {
            None
        };
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
        if self.refused.contains(&(key.pid, key.start)) {
            tally.maps_refused.insert((key.pid, key.start));
        }
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
/// The bit is a hash of the ip (`layout::unread`, 65,536 bits), so every
/// process running the same code at the same address (forked workers, a
/// static or non-PIE program) shares it: a site seen with unread words
/// only is the bit's own code when it names the same place (object,
/// build-id, symbol and offset), and takes its verdict. A site elsewhere
/// that shares the bit, or a leaf whose new calls come back unread, clears
/// it for good; its calls until then (to the next look) have no caller.
#[derive(Debug, Default)]
pub struct WordFilter {
    /// Sites judged, by (pid, start, ip as the engine keys it): `true` for
    /// a leaf (its word is read).
    judged: HashMap<(i32, u64, u64), bool>,
    /// Bits set, by (word, bit), with the place of the code that set them.
    owners: HashMap<(u32, u32), String>,
    /// Bits two places shared: never set again.
    contested: HashSet<(u32, u32)>,
    /// Sites left for later (their process not looked at yet), with the
    /// looks they have waited; the last judgement's count.
    waiting: HashMap<(i32, u64, u64), u32>,
    pending: usize,
}

/// Looks a site of a live process waits to be named (a process the
/// sightings never record: vdsoctl's own executable, one past their
/// bound) before it is judged a leaf: read on, and watched.
const PATIENCE: u32 = 32;

/// A native site row as the engine keys it: (pid, start, ip at entry, word).
pub type RawSite = (i32, u64, u64, u64);

/// What user space can say of a process's addresses, for [`WordFilter`]:
/// `None` while the process has not been looked at.
pub trait SiteLook {
    /// Whether the process exited (or its pid is another's) before it was
    /// looked at: it never will be, and its sites are not left waiting.
    fn gone(&self, pid: i32, start: u64) -> bool;
    /// Whether `addr` is code in the process.
    fn is_code(&self, pid: i32, start: u64, addr: u64) -> Option<bool>;
    /// The code at `addr`, named the same in every process that maps it
    /// (`Some(None)`: nothing names it — anonymous memory, unmapped).
    fn place(&self, pid: i32, start: u64, addr: u64) -> Option<Option<String>>;
}

impl WordFilter {
    /// Judge the sites not judged yet. Returns the filter's bits to set
    /// (`true`) or clear.
    pub fn judge(&mut self, rows: &[RawSite], look: &impl SiteLook) -> Vec<((u32, u32), bool)> {
        let mut words: HashMap<(i32, u64, u64), Vec<u64>> = HashMap::new();
        for &(pid, start, ip, word) in rows {
            words.entry((pid, start, ip)).or_default().push(word);
        }
        let mut changes = Vec::new();
        let mut sites: Vec<_> = words.into_iter().collect();
        sites.sort_unstable();
        self.pending = 0;
        for (site, words) in sites {
            let bit = crate::measure::trace::engines::bpf::unread_bit(site.2);
            match self.judged.get(&site) {
                Some(false) => continue,
                // A leaf whose new calls came back unread: another place's bit.
                Some(true) => {
                    if self.owners.contains_key(&bit) && words.contains(&0) {
                        self.contest(bit, &mut changes);
                    }
                    continue;
                }
                None => {}
            }
            match verdict(site, &words, self.owners.get(&bit), look) {
                Verdict::Unnamed => self.unnamed(site, look),
                Verdict::Inherit => self.settle(site, false),
                Verdict::Collision => self.contest(bit, &mut changes),
                Verdict::Named { leaf, place } => {
                    self.settle(site, leaf);
                    // A place nothing names is read on: its bit could not be
                    // told from another's.
                    let free = !self.owners.contains_key(&bit) && !self.contested.contains(&bit);
                    if let (Some(place), true) = (place, free) {
                        self.owners.insert(bit, place);
                        changes.push((bit, true));
                    }
                }
            }
        }
        changes
    }

    /// Judged: a leaf (read, and watched) or not.
    fn settle(&mut self, site: (i32, u64, u64), leaf: bool) {
        self.waiting.remove(&site);
        self.judged.insert(site, leaf);
    }

    /// Not named: a process gone unseen never will be — judged as it is,
    /// the bit left alone (its calls are over); a live one waits, then is
    /// read on.
    fn unnamed(&mut self, site: (i32, u64, u64), look: &impl SiteLook) {
        let waited = self.waiting.entry(site).or_insert(0);
        *waited += 1;
        let gone = look.gone(site.0, site.1);
        if gone || *waited > PATIENCE {
            self.settle(site, !gone);
        } else {
            self.pending += 1;
        }
    }

    fn contest(&mut self, bit: (u32, u32), changes: &mut Vec<((u32, u32), bool)>) {
        if self.owners.remove(&bit).is_some() {
            changes.push((bit, false));
        }
        self.contested.insert(bit);
    }

    /// How many sites were judged.
    pub fn judged(&self) -> usize {
        self.judged.len()
    }

    /// How many sites the last judgement left for later.
    pub fn pending(&self) -> usize {
        self.pending
    }
}

/// What one look says of a site not judged yet.
enum Verdict {
    /// Not named (its process not looked at, or gone unseen).
    Unnamed,
    /// Never read, and the bit's own code in another process: its verdict.
    Inherit,
    /// Never read, and another place on the bit.
    Collision,
    /// Named: a leaf or not, with its place when something names it.
    Named { leaf: bool, place: Option<String> },
}

/// Judge a site from its words and place; `owner`: the place that set its
/// bit, if any.
fn verdict(site: (i32, u64, u64), words: &[u64], owner: Option<&String>, look: &impl SiteLook) -> Verdict {
    let (pid, start, ip) = site;
    // Never read: the bit's own code in another process takes its verdict;
    // another place clears it, and is judged at a later look, read.
    if owner.is_some() && words.iter().all(|w| *w == 0) {
        return match look.place(pid, start, ip) {
            None => Verdict::Unnamed,
            Some(place) if place.as_ref() == owner => Verdict::Inherit,
            Some(_) => Verdict::Collision,
        };
    }
    let mut leaf = false;
    for &w in words.iter().filter(|w| **w != 0) {
        match look.is_code(pid, start, w) {
            None => return Verdict::Unnamed,
            Some(is_code) => leaf |= is_code,
        }
    }
    match (leaf, look.place(pid, start, ip)) {
        (true, _) => Verdict::Named { leaf: true, place: None },
        (false, None) => Verdict::Unnamed,
        (false, Some(place)) => Verdict::Named { leaf: false, place },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::trace::engines::bpf::unread_bit;

    /// Code at 0x1000..0x2000 of every process, named by its address; nothing
    /// else is code. Process 9 was not looked at yet, 10 exited before it
    /// was; process 4 runs other code at the same addresses (another
    /// program).
    struct Look;
    impl SiteLook for Look {
        fn gone(&self, pid: i32, _start: u64) -> bool {
            pid == 10
        }
        fn is_code(&self, pid: i32, _start: u64, addr: u64) -> Option<bool> {
            (pid < 9).then_some((0x1000..0x2000).contains(&addr))
        }
        fn place(&self, pid: i32, _start: u64, addr: u64) -> Option<Option<String>> {
            let object = if pid == 4 { "other" } else { "app" };
            (pid < 9).then(|| Some(format!("{object} {addr:#x}")))
        }
    }

    #[test]
    fn a_site_whose_word_is_no_code_stops_reading_it_and_a_leaf_does_not() {
        let mut f = WordFilter::default();
        let (local, leaf) = (0x1234_5678, 0x1_0000_0000);
        let rows = [(1, 7, local, 0x7ffd_0000), (1, 7, local, 0), (1, 7, leaf, 0x1800), (1, 7, leaf, 0x7ffd_0000)];
        assert_eq!(f.judge(&rows, &Look), vec![(unread_bit(local), true)]);
        assert_eq!((f.judged(), f.pending()), (2, 0));
        // Judged once: the same rows again change nothing.
        assert!(f.judge(&rows, &Look).is_empty());
    }

    #[test]
    fn a_process_not_looked_at_yet_is_judged_later() {
        let mut f = WordFilter::default();
        assert!(f.judge(&[(9, 7, 0x40, 0x7ffd_0000)], &Look).is_empty());
        assert_eq!((f.judged(), f.pending()), (0, 1));
        assert!(f.judge(&[(9, 7, 0x40, 0)], &Look).is_empty(), "no place yet");
        assert_eq!(f.judge(&[(5, 7, 0x40, 0)], &Look), vec![(unread_bit(0x40), true)]);
        // Gone before it was looked at: judged, nothing waits, the bit is
        // left as it is (the same code's, perhaps: a short-lived worker).
        let gone = [(5, 7, 0x40, 0), (10, 7, 0x40, 0), (10, 7, 0x80, 0x7ffd_0000)];
        assert!(f.judge(&gone, &Look).is_empty());
        assert_eq!((f.judged(), f.pending()), (3, 0));
        assert!(f.judge(&gone, &Look).is_empty(), "and at the next look");
        // A live process never named: read on after PATIENCE looks.
        let mut f = WordFilter::default();
        for _ in 0..PATIENCE {
            assert!(f.judge(&[(9, 7, 0x40, 0x7ffd_0000)], &Look).is_empty());
            assert_eq!((f.judged(), f.pending()), (0, 1));
        }
        assert!(f.judge(&[(9, 7, 0x40, 0x7ffd_0000)], &Look).is_empty());
        assert_eq!((f.judged(), f.pending()), (1, 0));
    }

    #[test]
    fn the_same_code_in_another_process_keeps_the_bit() {
        let mut f = WordFilter::default();
        assert_eq!(f.judge(&[(1, 7, 0x5000, 0x7ffd_0000)], &Look), vec![(unread_bit(0x5000), true)]);
        // A second worker at the same address: its calls were never read.
        assert!(f.judge(&[(1, 7, 0x5000, 0x7ffd_0000), (2, 8, 0x5000, 0)], &Look).is_empty());
        assert!(f.judge(&[(3, 9, 0x5000, 0)], &Look).is_empty());
        assert_eq!(f.judged(), 3);
    }

    #[test]
    fn a_site_that_shares_a_skipped_bit_clears_it_for_good() {
        let skipped = 0x5000u64;
        // Another ip with the same bit.
        let twin = (0x5001u64..).find(|ip| unread_bit(*ip) == unread_bit(skipped)).unwrap();
        let mut f = WordFilter::default();
        assert_eq!(f.judge(&[(1, 7, skipped, 0x7ffd_0000)], &Look), vec![(unread_bit(skipped), true)]);
        // The twin's calls came back unread: the bit is cleared, not set again.
        assert_eq!(f.judge(&[(2, 7, twin, 0)], &Look), vec![(unread_bit(skipped), false)]);
        assert!(f.judge(&[(2, 7, twin, 0), (2, 7, twin, 0x7ffd_0000)], &Look).is_empty());
        let third = (twin + 1..).find(|ip| unread_bit(*ip) == unread_bit(skipped)).unwrap();
        assert!(f.judge(&[(3, 7, third, 0x7ffd_0000)], &Look).is_empty(), "contested: never set again");
        // Other code at the very same address (another program): not its bit.
        let mut f = WordFilter::default();
        assert_eq!(f.judge(&[(1, 7, skipped, 0x7ffd_0000)], &Look), vec![(unread_bit(skipped), true)]);
        assert_eq!(f.judge(&[(4, 7, skipped, 0)], &Look), vec![(unread_bit(skipped), false)]);
        // A leaf judged before another site's bit was set on it: its new
        // calls come back 0, and the bit is cleared.
        let mut f = WordFilter::default();
        assert!(f.judge(&[(1, 7, twin, 0x1800)], &Look).is_empty());
        assert_eq!(f.judge(&[(2, 7, skipped, 0x7ffd_0000)], &Look), vec![(unread_bit(skipped), true)]);
        assert_eq!(
            f.judge(&[(1, 7, twin, 0x1800), (1, 7, twin, 0), (2, 7, skipped, 0)], &Look),
            vec![(unread_bit(skipped), false)]
        );
    }

    #[test]
    fn a_place_nothing_names_is_read_on() {
        struct Anonymous;
        impl SiteLook for Anonymous {
            fn gone(&self, _: i32, _: u64) -> bool {
                false
            }
            fn is_code(&self, _: i32, _: u64, _: u64) -> Option<bool> {
                Some(false)
            }
            fn place(&self, _: i32, _: u64, _: u64) -> Option<Option<String>> {
                Some(None)
            }
        }
        let mut f = WordFilter::default();
        assert!(f.judge(&[(1, 7, 0x7000, 0x7ffd_0000)], &Anonymous).is_empty());
        assert_eq!(f.judged(), 1);
    }
}
