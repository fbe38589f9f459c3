//! Who refused the trace engines' syscalls: a seccomp filter vdsoctl runs
//! under (a container engine's default profile) or the kernel (a missing
//! capability, the paranoid level). Both answer EPERM, so the errno cannot
//! tell; [`crate::measure::sys::probe`] can: a call the kernel itself
//! rejects with EINVAL, whatever the caller holds, comes back otherwise
//! only from a filter.

/// A seccomp filter refusing syscalls the trace engines need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterRefusal {
    /// The syscalls the filter refuses, of `bpf` and `perf_event_open`.
    pub syscalls: Vec<&'static str>,
    /// How many filters vdsoctl runs under (`Seccomp_filters:`).
    pub filters: u32,
    /// The errno the filter answered the first of them with.
    pub errno: Option<i32>,
    /// Whether vdsoctl holds CAP_BPF and CAP_PERFMON (effective): then
    /// capabilities are not what is missing.
    pub caps_held: bool,
}

/// A probe of `measure::sys::probe`: `Err` when a filter answered.
type Probe = fn() -> std::io::Result<()>;

/// CAP_PERFMON and CAP_BPF (Linux 5.8), bits of `CapEff`.
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The filter's refusal, when vdsoctl runs under one (mode 2 in
/// /proc/self/status) that refuses bpf(2) or perf_event_open(2); `None`
/// when the kernel itself answers both (the refusal was its own).
pub fn refusal() -> Option<FilterRefusal> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    if field("Seccomp:")? != "2" {
        return None;
    }
    let filters = field("Seccomp_filters:").and_then(|n| n.parse().ok()).unwrap_or(0);
    let probes: [(&'static str, Probe); 2] = [
        ("bpf", crate::measure::sys::probe::bpf_reaches_kernel),
        ("perf_event_open", crate::measure::sys::probe::perf_event_open_reaches_kernel),
    ];
    let refused: Vec<(&'static str, Option<i32>)> =
        probes.iter().filter_map(|(name, probe)| probe().err().map(|e| (*name, e.raw_os_error()))).collect();
    let errno = refused.first()?.1;
    let caps = field("CapEff:").and_then(|h| u64::from_str_radix(h, 16).ok()).unwrap_or(0);
    let caps_held = [CAP_BPF, CAP_PERFMON].iter().all(|c| caps & (1 << c) != 0);
    Some(FilterRefusal { syscalls: refused.into_iter().map(|(n, _)| n).collect(), filters, errno, caps_held })
}
