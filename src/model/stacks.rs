//! `trace --stacks`: the user stacks the kernel counted, per process,
//! their frames named through the mappings read at the process's first
//! sight, and where a stack was cut short. Rendered as folded stacks
//! (`comm;frame;frame count`, root first: what flamegraph.pl and inferno
//! read), JSON, and an SVG flame graph.

use crate::inspect::symbols::{Frame, FrameKind};
use crate::measure::trace::sight::Sightings;
use crate::measure::trace::Tally;
use serde::Serialize;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Why a stack is shorter than the code's call chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// The walk filled every slot (`measure::trace::engines::bpf` keeps 127 frames).
    DepthLimit,
    /// The walk met a frame without a frame pointer: it yielded a return
    /// address outside the process's executable mappings (what follows
    /// is dropped).
    NoFramePointer,
    /// The walk yielded a return address nothing could check: the process
    /// exited before its mappings were read, and the kernel captured none
    /// there (what follows is dropped, never guessed).
    Unverified,
}

/// Why an unmapped address has no name: what was missing to name it
/// (JSON `unnamed`, in render/trace.rs's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unnamed {
    /// Mapped from a file that was not found.
    FileNotFound,
    /// Mapped, but not code.
    NotCode,
    /// The process was gone before its mappings were looked at.
    GoneBeforeLook,
    /// Outside every mapping seen.
    OutsideMappings,
}

/// A frame of a stack as reported: the resolver's [`Frame`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct StackFrame {
    #[serde(serialize_with = "crate::model::hex")]
    pub address: u64,
    /// `object`, `vdso`, `vsyscall`, `anonymous`, or `unmapped` (also when
    /// the process's mappings were not read: it exited before it was seen).
    pub kind: FrameKind,
    pub object: Option<String>,
    pub symbol: Option<String>,
    /// From the function's start with a symbol, else the object's ELF address.
    #[serde(serialize_with = "crate::model::hex")]
    pub offset: u64,
    pub build_id: Option<String>,
    /// Why an address has no name (absent when it has one): what was
    /// missing to name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unnamed: Option<Unnamed>,
    /// A return address whose call named another function than the frame
    /// below: that function, which ended in a tail call (`jmp syscall`)
    /// and so left no frame of its own. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_call: Option<String>,
    /// What the direct call before this (return) address calls, to find a
    /// tail call against the frame below.
    #[serde(skip)]
    pub called: Option<String>,
}

impl StackFrame {
    /// Mark a tail call when this return address's call named a function
    /// that does not hold `below` (the frame it returns from).
    pub fn note_tail_call(&mut self, below: &StackFrame) {
        self.tail_call = self.called.clone().filter(|f| below.symbol.as_deref() != Some(f.as_str()));
    }
}

impl From<Frame> for StackFrame {
    fn from(f: Frame) -> StackFrame {
        StackFrame {
            address: f.address,
            kind: f.kind,
            object: f.object,
            symbol: f.symbol,
            offset: f.offset,
            build_id: f.build_id,
            unnamed: None,
            tail_call: None,
            called: f.called,
        }
    }
}

/// Calls one process made from one stack.
#[derive(Debug, Clone, Serialize)]
pub struct StackRow {
    pub pid: i32,
    pub comm: Option<String>,
    pub count: u64,
    /// Innermost (the syscall's return address) first.
    pub frames: Vec<StackFrame>,
    /// Why the stack stops short, if it does.
    pub cut: Option<Cut>,
}

/// The stacks of a window, busiest first.
pub fn rows(tally: &Tally, seen: &Sightings) -> Vec<StackRow> {
    let mut rows: Vec<StackRow> = tally
        .stacks
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| {
            let is_64 = tally.counts.keys().find(|c| c.pid == k.pid).is_none_or(|c| c.abi.elf().1);
            // Through the mappings as first seen, else as the kernel
            // captured them at the stack's first call (a process gone
            // before it was seen).
            let resolve = |a: u64| {
                let first = seen.resolve(k.pid, k.start, a);
                match first {
                    Some(f) if f.kind != FrameKind::Unmapped => Some(f),
                    _ => {
                        tally.mapped.get(&(k.pid, k.start, a)).and_then(|m| seen.resolve_mapped(a, m, is_64)).or(first)
                    }
                }
            };
            let (mut frames, mut cut) = name_frames(&k.frames, resolve, k.full);
            splice_caller(&mut frames, k.word, resolve);
            for i in 1..frames.len() {
                let (below, above) = frames.split_at_mut(i);
                above[0].note_tail_call(&below[i - 1]);
            }
            for f in frames.iter_mut().filter(|f| f.kind == FrameKind::Unmapped && f.object.is_none()) {
                f.unnamed = Some(match tally.mapped.get(&(k.pid, k.start, f.address)) {
                    Some(m) if m.has_file() => Unnamed::FileNotFound,
                    Some(_) => Unnamed::NotCode,
                    None if seen.get(k.pid, k.start).is_none() => Unnamed::GoneBeforeLook,
                    None => Unnamed::OutsideMappings,
                });
            }
            cut_unverified(&mut frames, &mut cut);
            StackRow { pid: k.pid, comm: tally.comms.get(&k.pid).cloned(), count: *n, frames, cut }
        })
        .collect();
    // Stacks that differed only past a cut are one stack: one site's
    // calls, one row. Found through a map (in the order first met): a
    // search of the rows so far made 16,384 stacks 134 million compares.
    let mut merged: Vec<StackRow> = Vec::with_capacity(rows.len());
    let mut at: HashMap<(i32, Option<Cut>, Vec<StackFrame>), usize> = HashMap::with_capacity(rows.len());
    for r in rows.drain(..) {
        match at.entry((r.pid, r.cut, r.frames.clone())) {
            Entry::Occupied(i) => merged[*i.get()].count = merged[*i.get()].count.saturating_add(r.count),
            Entry::Vacant(v) => {
                v.insert(merged.len());
                merged.push(r);
            }
        }
    }
    merged.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)));
    merged
}

/// A stack never holds a frame nothing showed to be code: past the
/// innermost (the instruction itself), the first return address that is
/// no code of the process (mapped data, or outside the mappings read)
/// ends the stack as cut by a frame without a frame pointer, and one that
/// nothing could check (the process exited before a look and the kernel
/// captured no mapping there) as unverified. -O2 code keeps data in %rbp:
/// the walk then reads numbers as return addresses, a different one each
/// call, and would make one stack per call of one site.
fn cut_unverified(frames: &mut Vec<StackFrame>, cut: &mut Option<Cut>) {
    let at = frames.iter().enumerate().skip(1).find_map(|(i, f)| match f.unnamed {
        Some(Unnamed::NotCode | Unnamed::OutsideMappings) => Some((i, Cut::NoFramePointer)),
        Some(Unnamed::GoneBeforeLook) => Some((i, Cut::Unverified)),
        _ => None,
    });
    if let Some((i, why)) = at {
        frames.truncate(i);
        *cut = Some(why);
    }
}

/// A leaf wrapper (libc's `syscall()`) sets up no frame: the frame-pointer
/// walk goes from it to its caller's caller. The word at the stack pointer
/// at the stack's first call is then the return into its caller: spliced
/// in after the innermost frame when it is code and not already the next
/// frame (a function with a frame has data there).
fn splice_caller(frames: &mut Vec<StackFrame>, word: u64, resolve: impl Fn(u64) -> Option<Frame>) {
    if word == 0 || frames.is_empty() || frames.get(1).is_some_and(|f| f.address == word) {
        return;
    }
    if let Some(f) = resolve(word).filter(|f| !matches!(f.kind, FrameKind::Unmapped | FrameKind::Anonymous)) {
        frames.insert(1, f.into());
    }
}

/// Where user space ends at the most: no 64-bit Linux architecture gives a
/// process more than 56 bits of address (x86_64 with 5-level paging, riscv
/// Sv57; arm64 has 52), so a "return address" above is a walk gone astray
/// even when the process's mappings were never read.
const USER_SPACE_END: u64 = 1 << 56;

/// Name each address with `resolve` (`None`: the mappings were not read);
/// the first one no executable mapping holds (or, unread, one past user
/// space) ends the stack as cut.
pub fn name_frames(
    addresses: &[u64],
    resolve: impl Fn(u64) -> Option<Frame>,
    full: bool,
) -> (Vec<StackFrame>, Option<Cut>) {
    let mut frames = Vec::new();
    for &address in addresses {
        let frame = match resolve(address) {
            None if address >= USER_SPACE_END => return (frames, Some(Cut::NoFramePointer)),
            None => Frame::unmapped(address).into(),
            Some(f) if f.kind == FrameKind::Unmapped => return (frames, Some(Cut::NoFramePointer)),
            Some(f) => f.into(),
        };
        frames.push(frame);
    }
    (frames, full.then_some(Cut::DepthLimit))
}

/// A frame as the folded format can hold it, so that flamegraph.pl and
/// inferno read the line as it was meant (a name is bytes others chose):
/// [`crate::words::escaped_name`]'s escapes (controls, marks, what XML refuses, `\\`),
/// and `\x3b` for the `;` that separates frames, `\x20` for a space a
/// number (digits and dots) or nothing follows — else `tail 999` ends a
/// line as two counts (a differential graph) — and `\x23` for a leading
/// `#` (a comment line). Other spaces stay: C++ symbols have them.
pub fn fold_safe(name: &str) -> String {
    let escaped = crate::words::escaped_name(name.as_bytes());
    let mut out = String::with_capacity(escaped.len());
    for (i, c) in escaped.char_indices() {
        let rest = &escaped[i + c.len_utf8()..];
        match c {
            ';' => out.push_str("\\x3b"),
            '#' if i == 0 => out.push_str("\\x23"),
            ' ' if i == 0 || rest.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ' ') => out.push_str("\\x20"),
            c => out.push(c),
        }
    }
    out
}

/// The pseudo-stack of the calls whose stack was not kept, in folded
/// output and the SVG (its words render/trace.rs's Display).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostStack;

/// The lost-stack line's pseudo-stack.
pub const LOST_STACK: LostStack = LostStack;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::trace::folded;

    /// A frame's folded name, as render/trace.rs words it.
    fn frame_name(f: &StackFrame) -> String {
        f.to_string()
    }

    fn frame(address: u64, object: &str, symbol: Option<&str>, offset: u64) -> Frame {
        Frame {
            kind: FrameKind::Object,
            object: Some(object.into()),
            symbol: symbol.map(str::to_string),
            offset,
            ..Frame::unmapped(address)
        }
    }

    /// Stacks of one process that differ only past a cut are one row, their
    /// counts summed; another process's same stack stays its own row; the
    /// busiest first, a tie by pid.
    #[test]
    fn stacks_equal_up_to_a_cut_are_one_row() {
        use crate::measure::trace::{StackKey, Tally};
        let mut tally = Tally::default();
        let key = |pid: i32, frames: &[u64]| StackKey { pid, start: 1, frames: frames.to_vec(), full: false, word: 0 };
        tally.stacks.insert(key(7, &[0x1000, 0x2000]), 3);
        tally.stacks.insert(key(7, &[0x1000, 0x3000]), 4);
        tally.stacks.insert(key(7, &[0x1111]), 5);
        tally.stacks.insert(key(8, &[0x1000, 0x2000]), 7);
        tally.stacks.insert(key(9, &[0x1000]), 0);
        let got = rows(&tally, &Sightings::new(false));
        let rows: Vec<(i32, u64, Vec<u64>, Option<Cut>)> =
            got.iter().map(|r| (r.pid, r.count, r.frames.iter().map(|f| f.address).collect(), r.cut)).collect();
        let cut = Some(Cut::Unverified);
        assert_eq!(rows, [(7, 7, vec![0x1000], cut), (8, 7, vec![0x1000], cut), (7, 5, vec![0x1111], None)]);
    }

    #[test]
    fn a_frame_outside_the_mappings_cuts_the_stack() {
        let resolve = |a: u64| {
            Some(match a {
                0x1010 => frame(a, "/bin/a", Some("inner"), 0x10),
                0x7020 => frame(a, "/lib/libc.so.6", None, 0x20),
                _ => Frame::unmapped(a),
            })
        };
        let (frames, cut) = name_frames(&[0x1010, 0x7020, 0x4242, 0x1010], resolve, false);
        assert_eq!(cut, Some(Cut::NoFramePointer));
        assert_eq!(frames.iter().map(frame_name).collect::<Vec<_>>(), ["inner", "libc.so.6+0x20"]);
        let (frames, cut) = name_frames(&[0x1010], resolve, true);
        assert_eq!((frames.len(), cut), (1, Some(Cut::DepthLimit)));
        // Mappings never read: raw addresses, no cut claimed but past user space.
        let (frames, cut) = name_frames(&[0x4242], |_| None, false);
        assert_eq!((frame_name(&frames[0]), cut), ("0x4242".to_string(), None));
        let (frames, cut) = name_frames(&[0x7f00_0000_1000, 0xffff_f8bc_ffff_f8cc, 0x1000], |_| None, false);
        assert_eq!((frames.len(), cut), (1, Some(Cut::NoFramePointer)));
    }

    /// A frame nothing named says why; the leaf's caller is spliced in
    /// after the innermost frame only when it is code and not next already.
    #[test]
    fn an_unnamed_frame_says_why_and_a_leafs_caller_is_spliced_in() {
        let mut f = StackFrame::from(Frame::unmapped(0x7f00));
        assert_eq!(frame_name(&f), "0x7f00");
        f.unnamed = Some(Unnamed::GoneBeforeLook);
        assert_eq!(frame_name(&f), "0x7f00 [gone before a look, not captured]");
        let resolve = |a: u64| {
            Some(match a {
                0x10 => frame(a, "/lib/libc.so.6", Some("syscall"), 0x17),
                0x20 => frame(a, "/bin/a", Some("read_raw"), 0x18),
                0x30 => frame(a, "/bin/a", Some("main"), 0x40),
                _ => Frame::unmapped(a),
            })
        };
        let (mut frames, _) = name_frames(&[0x10, 0x30], resolve, false);
        splice_caller(&mut frames, 0x20, resolve);
        assert_eq!(frames.iter().map(frame_name).collect::<Vec<_>>(), ["syscall", "read_raw", "main"]);
        for word in [0x30, 0x999, 0] {
            let (mut frames, _) = name_frames(&[0x10, 0x30], resolve, false);
            splice_caller(&mut frames, word, resolve);
            assert_eq!(frames.len(), 2, "{word:#x}: not spliced");
        }
    }

    #[test]
    fn frames_never_read_as_counts_or_comments() {
        assert_eq!(fold_safe("tail 999"), "tail\\x20999");
        assert_eq!(fold_safe("f 1.5 "), "f\\x201.5\\x20");
        assert_eq!(fold_safe("operator new(unsigned long)"), "operator new(unsigned long)");
        assert_eq!(fold_safe("# x"), "\\x23 x");
        assert_eq!(fold_safe(" lead"), "\\x20lead");
        assert_eq!(fold_safe("a\u{ffff};b\\"), "a\\u{ffff}\\x3bb\\\\");
    }

    #[test]
    fn folded_lines_are_root_first_merged_and_safe() {
        let f = |s: &str| StackFrame::from(frame(1, "/bin/app", Some(s), 0));
        let row = |comm: &str, frames: Vec<StackFrame>, count, cut| StackRow {
            pid: 1,
            comm: Some(comm.into()),
            count,
            frames,
            cut,
        };
        let rows = [
            row("app", vec![f("inner"), f("middle"), f("main")], 5, None),
            row("app", vec![f("inner"), f("middle"), f("main")], 2, None),
            row("a;b c\n", vec![f("x;y")], 1, Some(Cut::NoFramePointer)),
        ];
        assert_eq!(
            folded(&rows),
            [("app;main;middle;inner".to_string(), 7), ("a\\x3bb c\\n;[cut: no frame pointer];x\\x3by".to_string(), 1)]
        );
    }

    /// Past the instruction, a return address that is no code ends the
    /// stack (no frame pointer), one nothing could check ends it too
    /// (unverified); a file not found is still a frame.
    #[test]
    fn a_frame_nothing_shows_is_code_cuts_the_stack() {
        let named = |a| StackFrame::from(frame(a, "/bin/a", Some("main"), 0));
        let unnamed = |a, why| StackFrame { unnamed: Some(why), ..StackFrame::from(Frame::unmapped(a)) };
        for (why, cut) in [
            (Unnamed::NotCode, Some(Cut::NoFramePointer)),
            (Unnamed::OutsideMappings, Some(Cut::NoFramePointer)),
            (Unnamed::GoneBeforeLook, Some(Cut::Unverified)),
            (Unnamed::FileNotFound, None),
        ] {
            let mut frames = vec![named(0x10), unnamed(0x1000, why), named(0x30)];
            let mut got = None;
            cut_unverified(&mut frames, &mut got);
            assert_eq!((got, frames.len()), (cut, if cut.is_some() { 1 } else { 3 }), "{why:?}");
        }
        // The instruction itself is never cut away.
        let mut frames = vec![unnamed(0x10, Unnamed::GoneBeforeLook)];
        let mut got = None;
        cut_unverified(&mut frames, &mut got);
        assert_eq!((got, frames.len()), (None, 1));
    }
}
