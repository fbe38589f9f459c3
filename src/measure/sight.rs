//! What `trace` reads about a process the first time it sees it counted:
//! its identity (executable, command line) and, with `--stacks`, its
//! executable mappings — all gone once it exits, so read while it lives.
//! The wait loop looks every [`SIGHT`] (the BPF engine lists the processes
//! it has counted so far); a process that starts and exits between two
//! looks is reported without them.

use crate::inspect::identity::Identity;
use crate::inspect::maps::Mapping;
use std::collections::BTreeMap;
use std::time::Duration;

/// How often the wait loop looks for new processes.
pub const SIGHT: Duration = Duration::from_millis(50);

/// A process as first seen.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub identity: Identity,
    /// Its executable mappings (`--stacks`); `None`: not read.
    pub maps: Option<Vec<Mapping>>,
}

/// Processes seen so far, by (pid, start as `Key::start`; 0 when the engine
/// does not know it).
#[derive(Debug, Clone, Default)]
pub struct Sightings {
    seen: BTreeMap<(i32, u64), Seen>,
    /// Also read each process's mappings.
    with_maps: bool,
}

impl Sightings {
    pub fn new(with_maps: bool) -> Sightings {
        Sightings { seen: BTreeMap::new(), with_maps }
    }

    /// Read every process of `procs` not seen yet, if it is still the one
    /// that started at `start` (a pid used again is another process).
    pub fn look(&mut self, procs: impl IntoIterator<Item = (i32, u64)>) {
        for (pid, start) in procs {
            if self.seen.contains_key(&(pid, start)) || !crate::inspect::process::is_running(pid, start) {
                continue;
            }
            let maps = if self.with_maps { exec_maps(pid) } else { None };
            let identity = Identity::of(pid);
            // Read after: the process did not exit or hand its pid on meanwhile.
            if crate::inspect::process::is_running(pid, start) {
                self.seen.insert((pid, start), Seen { identity, maps });
            }
        }
    }

    /// What was read of the process `pid` that started at `start` (or, when
    /// the engine knows no start, of the last process seen with that pid).
    pub fn get(&self, pid: i32, start: u64) -> Option<&Seen> {
        self.seen.get(&(pid, start)).or_else(|| self.seen.range((pid, 0)..=(pid, u64::MAX)).next_back().map(|(_, s)| s))
    }
}

/// `pid`'s executable mappings.
fn exec_maps(pid: i32) -> Option<Vec<Mapping>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let maps = crate::inspect::maps::parse(&text).ok()?;
    Some(maps.into_iter().filter(Mapping::executable).collect())
}
