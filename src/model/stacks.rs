//! `trace --stacks`: the user stacks the kernel counted, per process,
//! their frames named through the mappings read at the process's first
//! sight, and where a stack was cut short. Rendered as folded stacks
//! (`comm;frame;frame count`, root first: what flamegraph.pl and inferno
//! read), JSON, and an SVG flame graph.

use crate::inspect::maps::Mapping;
use crate::measure::sight::Sightings;
use crate::measure::trace::Tally;
use serde::Serialize;

/// Why a stack is shorter than the code's call chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// The walk filled every slot (`measure::bpf` keeps 127 frames).
    DepthLimit,
    /// The walk met a frame without a frame pointer: it yielded a return
    /// address outside the process's executable mappings (what follows
    /// is dropped).
    NoFramePointer,
}

impl Cut {
    /// The pseudo-frame that marks a cut in folded stacks.
    pub fn marker(self) -> &'static str {
        match self {
            Cut::DepthLimit => "[cut: depth limit]",
            Cut::NoFramePointer => "[cut: no frame pointer]",
        }
    }
}

/// One return address of a stack, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackFrame {
    #[serde(serialize_with = "crate::model::hex")]
    pub address: u64,
    /// The mapped object (its path, `[vdso]`, ...); `None` when the
    /// process's mappings were not read (it exited before it was seen).
    pub object: Option<String>,
    /// The function, when a symbol names it.
    pub symbol: Option<String>,
    /// From the function's start, else into the object's file.
    #[serde(serialize_with = "crate::model::hex_opt")]
    pub offset: Option<u64>,
}

impl StackFrame {
    /// `symbol`, else `object+0xoffset`, else the address: a folded-stack frame.
    pub fn name(&self) -> String {
        match (&self.symbol, &self.object, self.offset) {
            (Some(s), _, _) => s.clone(),
            (None, Some(o), Some(off)) => format!("{}+{off:#x}", o.rsplit('/').next().unwrap_or(o)),
            _ => format!("{:#x}", self.address),
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
            let maps = seen.get(k.pid, k.start).and_then(|s| s.maps.as_deref());
            let (frames, cut) = name_frames(&k.frames, maps, k.full);
            StackRow { pid: k.pid, comm: tally.comms.get(&k.pid).cloned(), count: *n, frames, cut }
        })
        .collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)));
    rows
}

/// Name each address through `maps`; the first one outside them (when
/// they were read) ends the stack as cut.
pub fn name_frames(addresses: &[u64], maps: Option<&[Mapping]>, full: bool) -> (Vec<StackFrame>, Option<Cut>) {
    let mut frames = Vec::new();
    for &address in addresses {
        let frame = match maps {
            None => StackFrame { address, object: None, symbol: None, offset: None },
            Some(maps) => match maps.iter().find(|m| (m.start..m.end).contains(&address)) {
                Some(m) => StackFrame {
                    address,
                    object: m.path.clone(),
                    symbol: None,
                    offset: Some(address - m.start + m.offset),
                },
                None => return (frames, Some(Cut::NoFramePointer)),
            },
        };
        frames.push(frame);
    }
    (frames, full.then_some(Cut::DepthLimit))
}

/// Folded stacks: `comm;root;..;innermost count` per row, a cut marked
/// at the root end; rows of one process and stack (the same names) merged.
pub fn folded(rows: &[StackRow]) -> Vec<(String, u64)> {
    let mut lines: Vec<(String, u64)> = Vec::new();
    for r in rows {
        let mut parts = vec![fold_safe(r.comm.as_deref().unwrap_or("?"))];
        if let Some(cut) = r.cut {
            parts.push(cut.marker().to_string());
        }
        parts.extend(r.frames.iter().rev().map(|f| fold_safe(&f.name())));
        let line = parts.join(";");
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += r.count,
            None => lines.push((line, r.count)),
        }
    }
    lines
}

/// A frame as the folded format can hold it: `;` separates frames, so it
/// becomes `_`, as do control characters and line breaks (a name is bytes
/// others chose). Spaces stay (the count follows the last one; C++
/// symbols have them).
fn fold_safe(name: &str) -> String {
    name.chars().map(|c| if c == ';' || c.is_control() || (c.is_whitespace() && c != ' ') { '_' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(start: u64, end: u64, offset: u64, path: &str) -> Mapping {
        Mapping { start, end, perms: "r-xp".into(), offset, dev: "08:01".into(), inode: 7, path: Some(path.into()) }
    }

    #[test]
    fn a_frame_outside_the_mappings_cuts_the_stack() {
        let maps = [map(0x1000, 0x2000, 0x1000, "/bin/a"), map(0x7000, 0x8000, 0, "/lib/libc.so.6")];
        let (frames, cut) = name_frames(&[0x1010, 0x7020, 0x4242, 0x1000], Some(&maps), false);
        assert_eq!(cut, Some(Cut::NoFramePointer));
        assert_eq!(frames.iter().map(StackFrame::name).collect::<Vec<_>>(), ["a+0x1010", "libc.so.6+0x20"]);
        let (frames, cut) = name_frames(&[0x1010], Some(&maps), true);
        assert_eq!((frames.len(), cut), (1, Some(Cut::DepthLimit)));
        // Mappings never read: raw addresses, no cut claimed.
        let (frames, cut) = name_frames(&[0x4242], None, false);
        assert_eq!((frames[0].name(), cut), ("0x4242".to_string(), None));
    }

    #[test]
    fn folded_lines_are_root_first_merged_and_safe() {
        let f = |s: &str| StackFrame { address: 1, object: None, symbol: Some(s.into()), offset: Some(0) };
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
            [("app;main;middle;inner".to_string(), 7), ("a_b c_;[cut: no frame pointer];x_y".to_string(), 1)]
        );
    }
}
