//! What a row's calls cost the host: its count times what one such
//! syscall costs here (the raw syscall's median as `bench` measures it,
//! taken once per `trace` run), as CPU time and as a share of one core
//! over the trace. A rough figure — the kernel's work per call varies with
//! the clock and the CPU's state — but enough to tell a hot loop from noise.

use crate::arch::VdsoFn;
use serde::Serialize;

/// The cost of a row's calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cost {
    /// One syscall of this function and clock here, in ns (median).
    pub per_call_ns: f64,
    /// count × per_call_ns.
    pub cpu_ns: u64,
    /// `cpu_ns` over the trace's duration, in % of one core.
    pub core_percent: f64,
}

/// `count` calls at `per_call_ns` each over `window_ns`.
pub fn of(count: u64, per_call_ns: f64, window_ns: u64) -> Cost {
    let cpu = count as f64 * per_call_ns.max(0.0);
    let core_percent = if window_ns == 0 { 0.0 } else { cpu / window_ns as f64 * 100.0 };
    Cost { per_call_ns, cpu_ns: cpu.round() as u64, core_percent }
}

/// How the calls of a row were made, for their per-call cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Via {
    /// The raw syscall.
    Syscall,
    /// A call into the legacy [vsyscall] page (emulated by the kernel).
    Vsyscall,
}

/// What a row needs a per-call cost for: the way, function and clock id.
pub type Need = (Via, VdsoFn, Option<i64>);

/// Whether a row of this ABI is costed: the host's own, and its compat ABI
/// (an i386 task on x86_64, arm on arm64), whose call is costed at the
/// host ABI's syscall of the same function and clock — vdsoctl times only
/// its own ABI's entry, and the compat entry (`int 0x80`, `sysenter`) does
/// the same work behind a slightly dearer door, so the figure is a floor.
pub fn costed(abi: crate::arch::Abi) -> bool {
    crate::arch::HOST_ABI.is_some_and(|host| abi == host || host.compat() == Some(abi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_is_count_times_per_call_over_the_window() {
        // 100,000 calls at 250 ns in 1 s: 25 ms of CPU, 2.5% of a core.
        let c = of(100_000, 250.0, 1_000_000_000);
        assert_eq!((c.cpu_ns, c.core_percent), (25_000_000, 2.5));
        // 3 calls at 1,000.4 ns over 2 s.
        let c = of(3, 1000.4, 2_000_000_000);
        assert_eq!(c.cpu_ns, 3001);
        assert!((c.core_percent - 0.00015006).abs() < 1e-12);
        // A window of 0 (an empty interval) costs no share, never NaN.
        assert_eq!(of(5, 100.0, 0).core_percent, 0.0);
        // A busy loop on two cores is 200% of one.
        assert_eq!(of(8_000_000, 250.0, 1_000_000_000).core_percent, 200.0);
    }
}
