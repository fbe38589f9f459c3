//! A process in a time namespace (Linux 5.6, `unshare --time`) other than
//! vdsoctl's: its CLOCK_MONOTONIC and CLOCK_BOOTTIME read with offsets
//! (`/proc/PID/timens_offsets`). Its vDSO applies them itself (the kernel
//! maps a time-namespace page in its `[vvar]`), so clock reads stay in the
//! vDSO; but the times it reports differ from vdsoctl's by the offsets,
//! which is what `maps -p` and `check -p` say. `time_namespaces(7)`.

use super::{Finding, Status};
use crate::inspect::process::TimeNamespace;
use crate::model::kind::Kind;
use crate::words::thousands;
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

    /// `CLOCK_MONOTONIC +1,000 s, CLOCK_BOOTTIME +2,000 s`.
    fn offsets_text(&self) -> String {
        let one = |o: &TimeOffset| {
            let sign = if o.seconds < 0 || (o.seconds == 0 && o.nanoseconds < 0) { "-" } else { "+" };
            let secs = thousands(o.seconds.unsigned_abs());
            match o.nanoseconds {
                0 => format!("{} {sign}{secs} s", o.clock),
                ns => format!("{} {sign}{secs}.{:09} s", o.clock, ns.unsigned_abs()),
            }
        };
        if self.offsets.is_empty() {
            return "its offsets could not be read".into();
        }
        self.offsets.iter().map(one).collect::<Vec<_>>().join(", ")
    }

    /// Said only when the process is in another namespace than vdsoctl's:
    /// INFO (the fast path is not lost).
    pub fn finding(&self, pid: i32) -> Option<Finding> {
        if !self.other {
            return None;
        }
        Some(Finding::new(Kind::TimeNamespace,
            Status::Info,
            format!(
                "pid {pid} is in time namespace {} (vdsoctl's is {}): {} — its vDSO adds them (a time-namespace page in its [vvar]), so its clock reads stay in the vDSO; the times it reads differ from vdsoctl's by them",
                self.inode,
                self.vdsoctl_inode.map_or_else(|| "?".into(), |i| i.to_string()),
                self.offsets_text()
            ),
            None,
        ))
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
        let f = ns.finding(42).unwrap();
        assert_eq!(f.severity, Status::Info);
        assert!(
            f.message.starts_with(
                "pid 42 is in time namespace 5 (vdsoctl's is 4): CLOCK_MONOTONIC +1,000 s, CLOCK_BOOTTIME +2,000.000000005 s — "
            ),
            "{}",
            f.message
        );
        let same = TimeNs::of(&TimeNamespace { inode: 4, own: Some(4), offsets: Vec::new() });
        assert_eq!(same.finding(1), None);
        assert_eq!(serde_json::to_value(&same).unwrap()["other"], false);
    }
}
