//! Clock ids: their names, how the vDSO treats each, and from which
//! kernel; the auxiliary and dynamic (CPU-time, fd) ids named.

use super::machine;
use serde::Serialize;

/// How the kernel's vDSO treats a clock id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockClass {
    /// Served in user space by the vDSO on a clocksource with a vDSO mode.
    HighRes,
    /// Served in user space even without a vDSO clocksource (tick-based).
    Coarse,
    /// Always a syscall: CPU-time, alarm and dynamic clocks.
    AlwaysSyscall,
}

/// One row of the clock table.
#[derive(Debug, Clone, Copy)]
pub struct ClockInfo {
    pub id: i32,
    pub name: &'static str,
    pub class: ClockClass,
    /// (major, minor) of the first x86_64 kernel whose vDSO serves it.
    pub x86_64_since: Option<(u32, u32)>,
    /// (major, minor) of the first arm64 kernel whose vDSO serves it.
    pub aarch64_since: Option<(u32, u32)>,
}

const fn clock(
    id: i32,
    name: &'static str,
    class: ClockClass,
    x86_64_since: Option<(u32, u32)>,
    aarch64_since: Option<(u32, u32)>,
) -> ClockInfo {
    ClockInfo { id, name, class, x86_64_since, aarch64_since }
}

impl ClockInfo {
    /// The name without `CLOCK_` (`MONOTONIC_RAW`), as `--clocks` takes it
    /// and tables print it.
    pub fn short_name(&self) -> &'static str {
        self.name.strip_prefix("CLOCK_").unwrap_or(self.name)
    }
}

/// Every clock id the kernel defines (id 10, CLOCK_SGI_CYCLE, is retired):
/// id, name, class, first x86_64 and arm64 kernel whose vDSO serves it.
pub const CLOCKS: &[ClockInfo] = &[
    clock(0, "CLOCK_REALTIME", ClockClass::HighRes, Some((2, 6)), Some((3, 7))),
    clock(1, "CLOCK_MONOTONIC", ClockClass::HighRes, Some((2, 6)), Some((3, 7))),
    clock(2, "CLOCK_PROCESS_CPUTIME_ID", ClockClass::AlwaysSyscall, None, None),
    clock(3, "CLOCK_THREAD_CPUTIME_ID", ClockClass::AlwaysSyscall, None, None),
    clock(4, "CLOCK_MONOTONIC_RAW", ClockClass::HighRes, Some((5, 3)), Some((3, 7))),
    clock(5, "CLOCK_REALTIME_COARSE", ClockClass::Coarse, Some((2, 6)), Some((3, 7))),
    clock(6, "CLOCK_MONOTONIC_COARSE", ClockClass::Coarse, Some((2, 6)), Some((3, 7))),
    clock(7, "CLOCK_BOOTTIME", ClockClass::HighRes, Some((5, 3)), Some((5, 3))),
    clock(8, "CLOCK_REALTIME_ALARM", ClockClass::AlwaysSyscall, None, None),
    clock(9, "CLOCK_BOOTTIME_ALARM", ClockClass::AlwaysSyscall, None, None),
    clock(11, "CLOCK_TAI", ClockClass::HighRes, Some((4, 20)), Some((5, 3))),
];

/// How the other 64-bit architectures' vDSOs came to serve the clocks:
/// the release each moved to the generic vDSO (`lib/vdso`, which serves
/// every high-resolution and coarse id: REALTIME, MONOTONIC, RAW,
/// BOOTTIME, TAI and the coarse pair), and what its own vDSO served
/// before (id, since). From each architecture's `arch/*/kernel/vdso*`
/// history: riscv64's first vDSO (4.15) made the syscall for every clock
/// (`ecall`), the generic one came with "riscv: use vDSO common flow"
/// (5.8); ppc64 served REALTIME and MONOTONIC in assembly (2.6.15), the
/// coarse pair from 4.16, the generic vDSO from 5.11; s390x served
/// REALTIME, MONOTONIC and the coarse pair in assembly (2.6.29), the
/// generic vDSO from 5.10; loongarch64's vDSO was generic from its first
/// release (5.19).
pub struct ClockHistory {
    pub machine: u16,
    /// The release of its generic vDSO.
    pub generic_since: (u32, u32),
    /// What it served before, and from when.
    pub before: &'static [(i32, (u32, u32))],
}

/// [`ClockHistory`] of the architectures the [`CLOCKS`] columns do not
/// hold (x86_64 and arm64 have their own: their history is longer).
pub const CLOCK_HISTORY: &[ClockHistory] = &[
    ClockHistory { machine: machine::RISCV, generic_since: (5, 8), before: &[] },
    ClockHistory {
        machine: machine::PPC64,
        generic_since: (5, 11),
        before: &[(0, (2, 6)), (1, (2, 6)), (5, (4, 16)), (6, (4, 16))],
    },
    ClockHistory {
        machine: machine::S390,
        generic_since: (5, 10),
        before: &[(0, (2, 6)), (1, (2, 6)), (5, (2, 6)), (6, (2, 6))],
    },
    ClockHistory { machine: machine::LOONGARCH, generic_since: (5, 19), before: &[] },
];

impl ClockInfo {
    /// The first kernel whose vDSO serves this clock on `machine`, if any
    /// (an architecture vdsoctl has no history for: none, said as such by
    /// the judge rather than guessed from another's).
    pub fn vdso_since(&self, machine: u16) -> Option<(u32, u32)> {
        match machine {
            machine::X86_64 => self.x86_64_since,
            machine::AARCH64 => self.aarch64_since,
            m => {
                if self.class == ClockClass::AlwaysSyscall {
                    return None;
                }
                let h = CLOCK_HISTORY.iter().find(|h| h.machine == m)?;
                let before = h.before.iter().find(|(id, _)| *id == self.id).map(|(_, since)| *since);
                Some(before.map_or(h.generic_since, |b| b.min(h.generic_since)))
            }
        }
    }
}

/// The auxiliary clocks (`CLOCK_AUX` .. `CLOCK_AUX_LAST`,
/// `include/uapi/linux/time.h`): ids 16–23, each enabled through
/// /sys/kernel/time/aux_clocks/N ([`aux_enable_path`]); the generic vDSO
/// serves them since 6.17 (`vdso/auxclock.h`), but only one that is
/// enabled: a disabled one (they start disabled), or one a kernel lacks
/// (before 6.17, or built without CONFIG_POSIX_AUX_CLOCKS: no
/// aux_clocks directory), is a syscall by the kernel's design
/// ([`AuxClocks`]). Not in [`CLOCKS`]: nothing benches or audits them.
pub const CLOCK_AUX: i64 = 16;
/// How many auxiliary clocks there are (`MAX_AUX_CLOCKS`).
pub const AUX_CLOCKS: i64 = 8;
/// The first kernel whose generic vDSO (x86_64, arm64) serves them.
const AUX_VDSO_SINCE: (u32, u32) = (6, 17);

/// Whether `id` is an auxiliary clock.
pub fn is_aux_clock(id: i64) -> bool {
    (CLOCK_AUX..CLOCK_AUX + AUX_CLOCKS).contains(&id)
}

/// The file that enables auxiliary clock `n` (`CLOCK_AUX + n`): it reads
/// `1` when enabled; `echo 1 >` it enables the clock.
pub fn aux_enable_path(n: i64) -> String {
    format!("/sys/kernel/time/aux_clocks/{n}/enable")
}

/// What a host says of its auxiliary clocks, read by
/// `inspect::kernel::aux_clocks` and handed to the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuxClocks {
    /// Not read: the kernel's version alone decides.
    #[default]
    Unknown,
    /// No /sys/kernel/time/aux_clocks: a kernel before 6.17, or one built
    /// without CONFIG_POSIX_AUX_CLOCKS. Every id is a syscall (EINVAL).
    Absent,
    /// The directory is there; bit `n` set: `CLOCK_AUX + n` is enabled.
    Enabled(u8),
}

/// One auxiliary clock's state on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuxState {
    Enabled,
    /// Its `enable` reads 0 (or cannot be read).
    Disabled,
    /// The kernel has no auxiliary clocks.
    Absent,
}

impl AuxClocks {
    /// The state of clock `id`; `None` for an id that is no auxiliary
    /// clock, or when the host was not read.
    pub fn state(self, id: i64) -> Option<AuxState> {
        if !is_aux_clock(id) {
            return None;
        }
        match self {
            AuxClocks::Unknown => None,
            AuxClocks::Absent => Some(AuxState::Absent),
            AuxClocks::Enabled(bits) if bits & (1 << (id - CLOCK_AUX)) != 0 => Some(AuxState::Enabled),
            AuxClocks::Enabled(_) => Some(AuxState::Disabled),
        }
    }
}

/// Whether the vDSO of a kernel of version `kernel` on `machine` serves clock
/// `id` in user space (CPU-time, alarm and unknown clocks: never). An unknown
/// kernel version is taken as new enough. An auxiliary clock is served only
/// while enabled ([`AuxClocks::state`]; the judge, `model::policy`, asks).
pub fn vdso_serves(id: i32, machine: u16, kernel: Option<(u32, u32)>) -> bool {
    let since = if is_aux_clock(i64::from(id)) {
        matches!(machine, machine::X86_64 | machine::AARCH64).then_some(AUX_VDSO_SINCE)
    } else {
        let Some(info) = clock_info(id).filter(|c| c.class != ClockClass::AlwaysSyscall) else { return false };
        info.vdso_since(machine)
    };
    match (since, kernel) {
        (Some(since), Some(k)) => k >= since,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Look a clock id up in [`CLOCKS`].
pub fn clock_info(id: i32) -> Option<&'static ClockInfo> {
    CLOCKS.iter().find(|c| c.id == id)
}

/// A clock id's name (`CLOCK_TAI`); auxiliary clocks as `CLOCK_AUX+N`;
/// the dynamic ids of `include/linux/posix-timers.h` (`(~pid << 3) |
/// type`) by what they are: `THREAD_CPU_CLOCK(tid 812)` (what
/// `pthread_getcpuclockid` gives), `PROCESS_CPU_CLOCK(pid 812)`
/// (`clock_getcpuclockid`), `FD_CLOCK(fd 3)` — pid 0 (the caller, and the
/// engines' folded rows, [`dynamic_class`]) unnamed, a CPU clock's
/// non-`sched` kind said; anything else as a number.
pub fn clock_name(id: i64) -> String {
    if let Some(c) = i32::try_from(id).ok().and_then(clock_info) {
        return c.name.to_string();
    }
    if is_aux_clock(id) {
        return format!("CLOCK_AUX+{}", id - CLOCK_AUX);
    }
    if id >= 0 || id & 7 == 7 {
        return format!("{id}");
    }
    let who = !(id >> 3);
    let (name, unit) = match id & 7 {
        3 => ("FD_CLOCK", "fd"),
        t if t & 4 != 0 => ("THREAD_CPU_CLOCK", "tid"),
        _ => ("PROCESS_CPU_CLOCK", "pid"),
    };
    let kind = match (id & 7 != 3).then_some(id & 3) {
        Some(0) => Some("prof"),
        Some(1) => Some("virt"),
        _ => None,
    };
    let parts: Vec<String> =
        (who != 0).then(|| format!("{unit} {who}")).into_iter().chain(kind.map(String::from)).collect();
    if parts.is_empty() {
        name.to_string()
    } else {
        format!("{name}({})", parts.join(", "))
    }
}

/// A dynamic (negative) clock id folded to its class, whoever it is for:
/// `(~0 << 3) | type` — a thread's or a process's CPU clock (of its kind)
/// or an fd clock, so a process cannot make rows without bound by cycling
/// through tids. `None` for a non-negative id or an invalid type (7).
pub fn dynamic_class(id: i64) -> Option<i64> {
    (id < 0 && id & 7 != 7).then_some(-8 | (id & 7))
}

/// Parse a clock name as a user types it: `MONOTONIC_RAW`, `clock_tai`, `4`.
pub fn parse_clock(text: &str) -> Option<i32> {
    let upper = text.trim().to_ascii_uppercase();
    if let Ok(n) = upper.parse::<i32>() {
        return Some(n);
    }
    let full = if upper.starts_with("CLOCK_") { upper } else { format!("CLOCK_{upper}") };
    CLOCKS.iter().find(|c| c.name == full).map(|c| c.id)
}
