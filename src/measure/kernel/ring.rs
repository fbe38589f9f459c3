//! Sampled tracepoint records out of a perf ring buffer (perf_event_open(2),
//! "MMAP layout"). The mmap and its head/tail protocol are in `sys::ring`;
//! this module splits the copied bytes into records, totally: a short or
//! malformed record ends the batch, it never panics.

use crate::error::{Error, Facility, Hint, Result};
use crate::measure::kernel::perf::PerfEvent;
use crate::measure::sys::ring::{self as sys, Mmap};
use std::os::fd::{AsFd, BorrowedFd};

/// `PERF_RECORD_LOST`: the kernel dropped records because the buffer was full.
const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`.
const RECORD_SAMPLE: u32 = 9;
/// `PERF_RECORD_COMM`: a task's comm changed (exec, prctl).
const RECORD_COMM: u32 = 3;
/// `PERF_RECORD_FORK`: a task was created.
const RECORD_FORK: u32 = 7;

/// Data pages per buffer at most: 1 MiB with 4 KiB pages, ~12,000 raw
/// syscall records — a burst of 10,000 compat calls fits even when the reader
/// is slow to wake (64 pages lost records under load on the 2-CPU test VM).
pub const MAX_PAGES: usize = 256;
/// Data pages over all buffers at most (4 MiB), so `-a` on a big host or
/// `-p` on a process with many threads stays bounded.
pub const TOTAL_PAGES: usize = 1024;

/// `PERF_SAMPLE_REGS_ABI_32` / `_64`: the ABI word before the user registers.
pub const REGS_ABI_32: u64 = 1;
/// See [`REGS_ABI_32`].
pub const REGS_ABI_64: u64 = 2;

/// One record, for samples taken with
/// `PERF_SAMPLE_TID | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A tracepoint hit: the task, the tracepoint's raw record, and the ABI
    /// word of the task's user registers ([`REGS_ABI_32`], [`REGS_ABI_64`];
    /// `None` when absent or 0: a kernel thread).
    Sample { pid: u32, tid: u32, raw: &'a [u8], abi: Option<u64> },
    /// The kernel lost `count` records.
    Lost { count: u64 },
    /// Task `pid` is now called `comm` (after an exec or a rename).
    Comm { pid: u32, comm: &'a [u8] },
    /// Process `pid` was forked by process `ppid` (equal for a new thread).
    Fork { pid: u32, ppid: u32 },
}

/// Data pages for each of `buffers` ring buffers within the caps.
pub fn pages_per_buffer(buffers: usize) -> usize {
    let share = (TOTAL_PAGES / buffers.max(1)).clamp(1, MAX_PAGES);
    1 << share.ilog2()
}

/// A mapped ring buffer and the event fd that owns it.
#[derive(Debug)]
pub struct Ring {
    event: PerfEvent,
    map: Mmap,
    buf: Vec<u8>,
}

impl Ring {
    /// Map a ring buffer of `pages` data pages for the sampling event `fd`.
    pub fn new(event: PerfEvent, pages: usize) -> Result<Ring> {
        let map = Mmap::new(&event, pages).map_err(|e| Error::Facility {
            errno: None,
            what: Facility::RingMap { pages, source: e },
            hint: Hint::MlockLimit,
        })?;
        Ok(Ring { event, map, buf: Vec::new() })
    }

    /// The owning event's fd, for poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.event.as_fd()
    }

    /// The owning event (for SET_OUTPUT, enable and read).
    pub fn event(&self) -> &PerfEvent {
        &self.event
    }

    /// The watermark to open samplers with: wake the reader at a quarter
    /// full, so a busy reader still drains before the buffer fills.
    pub fn watermark(pages: usize) -> u32 {
        (pages * sys::page_size() / 4) as u32
    }

    /// Hand every waiting record to `f`.
    pub fn drain(&mut self, mut f: impl FnMut(Record<'_>)) {
        self.buf.clear();
        self.map.read_available(&mut self.buf);
        parse_records(&self.buf, &mut f);
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A u64 at `at` (native endian), if the bytes are there.
pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// An unsigned field of `size` bytes (1, 2, 4, 8) at `at`.
pub fn uint_at(b: &[u8], at: usize, size: usize) -> Option<u64> {
    match size {
        1 => b.get(at).map(|v| u64::from(*v)),
        2 => u16_at(b, at).map(u64::from),
        4 => u32_at(b, at).map(u64::from),
        8 => u64_at(b, at),
        _ => None,
    }
}

/// Split bytes copied out of a ring into records; other record types are
/// skipped, a malformed header ends the walk.
pub fn parse_records(bytes: &[u8], f: &mut impl FnMut(Record<'_>)) {
    let mut at = 0usize;
    while let (Some(kind), Some(size)) = (u32_at(bytes, at), u16_at(bytes, at + 6)) {
        let size = usize::from(size);
        let Some(body) = bytes.get(at + 8..at + size.max(8)) else { break };
        if size < 8 {
            break;
        }
        match kind {
            RECORD_SAMPLE => {
                if let (Some(pid), Some(tid), Some(len)) = (u32_at(body, 0), u32_at(body, 4), u32_at(body, 8)) {
                    // RAW is `u32 size; u8 data[size]`, padded so what follows
                    // (the REGS_USER ABI word) is u64-aligned.
                    let end = 12 + len as usize;
                    if let Some(raw) = body.get(12..end) {
                        let abi = u64_at(body, end).filter(|a| *a != 0);
                        f(Record::Sample { pid, tid, raw, abi });
                    }
                }
            }
            RECORD_FORK => {
                if let (Some(pid), Some(ppid)) = (u32_at(body, 0), u32_at(body, 4)) {
                    f(Record::Fork { pid, ppid });
                }
            }
            RECORD_COMM => {
                if let (Some(pid), Some(name)) = (u32_at(body, 0), body.get(8..)) {
                    let comm = name.split(|&b| b == 0).next().unwrap_or(&[]);
                    f(Record::Comm { pid, comm });
                }
            }
            RECORD_LOST => {
                if let Some(count) = u64_at(body, 8) {
                    f(Record::Lost { count });
                }
            }
            _ => {}
        }
        at += size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut v = kind.to_ne_bytes().to_vec();
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn parses_samples_and_lost_and_survives_garbage() {
        let mut sample = 7u32.to_ne_bytes().to_vec();
        sample.extend_from_slice(&8u32.to_ne_bytes());
        sample.extend_from_slice(&4u32.to_ne_bytes());
        sample.extend_from_slice(&[1, 2, 3, 4]);
        sample.extend_from_slice(&REGS_ABI_32.to_ne_bytes());
        sample.extend_from_slice(&0xdeadu64.to_ne_bytes());
        let mut lost = 1u64.to_ne_bytes().to_vec();
        lost.extend_from_slice(&99u64.to_ne_bytes());
        let mut bytes = record(RECORD_SAMPLE, &sample);
        bytes.extend(record(RECORD_LOST, &lost));
        bytes.extend(record(4, &[0; 8]));
        bytes.extend(record(RECORD_COMM, b"\x05\0\0\0\x05\0\0\0sh\0\0\0\0\0\0"));
        let fork: Vec<u8> = [9u32, 5, 9, 5].iter().flat_map(|v| v.to_ne_bytes()).chain(0u64.to_ne_bytes()).collect();
        bytes.extend(record(RECORD_FORK, &fork));
        let mut seen = Vec::new();
        parse_records(&bytes, &mut |r| seen.push(format!("{r:?}")));
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(seen[3], "Fork { pid: 9, ppid: 5 }");
        assert!(seen[2].contains("pid: 5, comm: [115, 104]"), "{seen:?}");
        assert!(seen[0].contains("pid: 7, tid: 8, raw: [1, 2, 3, 4], abi: Some(1)"), "{seen:?}");
        assert!(seen[1].contains("99"));
        for cut in 0..bytes.len() {
            parse_records(&bytes[..cut], &mut |_| {});
        }
        parse_records(&[0xff; 40], &mut |_| {});
        parse_records(&[0; 40], &mut |_| {});
    }

    #[test]
    fn buffers_are_bounded() {
        assert_eq!(pages_per_buffer(1), 256);
        assert_eq!(pages_per_buffer(2), 256);
        assert_eq!(pages_per_buffer(48), 16);
        assert_eq!(pages_per_buffer(100_000), 1);
        assert!(pages_per_buffer(3000) * 3000 <= TOTAL_PAGES * 3);
    }
}
