//! A process in a time namespace (Linux 5.6, `unshare --time`) other than
//! vdsoctl's: its CLOCK_MONOTONIC and CLOCK_BOOTTIME read with offsets
//! (`/proc/PID/timens_offsets`). Its vDSO applies them itself (the kernel
//! maps a time-namespace page in its `[vvar]`), so clock reads stay in the
//! vDSO; but the times it reports differ from vdsoctl's by the offsets,
//! which is what `maps -p` and `check -p` say. `time_namespaces(7)`.

use super::Status;
use crate::inspect::process::TimeNamespace;
use crate::model::kind::Kind;
use serde::Serialize;

/// One clock's offset (JSON: `clock`, `seconds`, `nanoseconds`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeOffset {
    pub clock: String,
    pub seconds: i64,
    pub nanoseconds: i64,
}

/// A process's time namespace (JSON `time_namespace` of `maps -p` and
/// `check -p`): its inode, whether it is vdsoctl's, and its offsets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeNs {
    pub inode: u64,
    /// vdsoctl's own namespace's inode; `null` when unreadable.
    pub vdsoctl_inode: Option<u64>,
    /// Another namespace than vdsoctl's.
    pub other: bool,
    pub offsets: Vec<TimeOffset>,
}

impl TimeNs {
    /// From what /proc says.
    pub fn of(ns: &TimeNamespace) -> TimeNs {
        TimeNs {
            inode: ns.inode,
            vdsoctl_inode: ns.own,
            other: ns.own.is_some_and(|own| own != ns.inode),
            offsets: ns
                .offsets
                .iter()
                .map(|&(clock, seconds, nanoseconds)| TimeOffset {
                    clock: crate::arch::clock_name(i64::from(clock)),
                    seconds,
                    nanoseconds,
                })
                .collect(),
        }
    }

    /// Said only when the process `pid` is in another namespace than
    /// vdsoctl's (INFO: the fast path is not lost); render/vdso.rs words it.
    pub fn fact(&self, pid: i32) -> Option<TimeNsFact<'_>> {
        self.other.then_some(TimeNsFact { pid, ns: self })
    }
}

/// Process `pid` is in time namespace `ns`, not vdsoctl's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeNsFact<'a> {
    pub pid: i32,
    pub ns: &'a TimeNs,
}

impl TimeNsFact<'_> {
    pub fn kind(&self) -> Kind {
        Kind::TimeNamespace
    }

    pub fn status(&self) -> Status {
        Status::Info
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::process::parse_timens_offsets;

    #[test]
    fn offsets_are_named_and_said() {
        let offsets = parse_timens_offsets("monotonic        1000         0\nboottime         2000         5\nbad\n");
        assert_eq!(offsets, vec![(1, 1000, 0), (7, 2000, 5)]);
        let ns = TimeNs::of(&TimeNamespace { inode: 5, own: Some(4), offsets });
        let f = ns.fact(42).unwrap();
        assert_eq!((f.pid, f.kind(), f.status()), (42, Kind::TimeNamespace, Status::Info));
        let same = TimeNs::of(&TimeNamespace { inode: 4, own: Some(4), offsets: Vec::new() });
        assert_eq!(same.fact(1), None);
        assert_eq!(serde_json::to_value(&same).unwrap()["other"], false);
    }
}
