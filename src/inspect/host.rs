//! What the host audit reads, once, for `model::host` to judge: a
//! process's vDSO facts (its mappings, AT_SYSINFO_EHDR, its `[vdso]`
//! image) and the kernel's (release, clocksource, command line, and on
//! x86_64 the CPU's TSC flags and the kernel log's clock lines).

use crate::arch;
use crate::error::Result;
use crate::inspect::auxv::{self, AT_SYSINFO_EHDR};
use crate::inspect::elf::Image;
use crate::inspect::kernel::{self, Clocksource};
use crate::inspect::maps::Mapping;
use crate::inspect::Process;

/// What a process's vDSO is, as read from /proc.
#[derive(Debug)]
pub struct VdsoFacts {
    pub pid: i32,
    /// /proc/PID/maps, or why it could not be read.
    pub maps: Result<Vec<Mapping>>,
    /// AT_SYSINFO_EHDR from /proc/PID/auxv; `None` when absent or unreadable.
    pub sysinfo_ehdr: Option<u64>,
    /// The `[vdso]` image, or why it could not be read.
    pub image: Result<Image>,
}

impl VdsoFacts {
    /// Read them from `process`.
    pub fn read(process: &Process) -> VdsoFacts {
        VdsoFacts {
            pid: process.pid(),
            maps: process.maps(),
            sysinfo_ehdr: process.auxv().ok().and_then(|(entries, _)| auxv::get(&entries, AT_SYSINFO_EHDR)),
            image: process.vdso_image(),
        }
    }
}

/// The kernel facts the clock verdicts depend on.
#[derive(Debug, Clone, Default)]
pub struct KernelFacts {
    /// /proc/sys/kernel/osrelease.
    pub release: Option<String>,
    pub clocksource: Option<Clocksource>,
    /// /proc/cmdline.
    pub cmdline: Option<String>,
    /// Which auxiliary clocks are enabled (the vDSO serves only those).
    pub aux_clocks: arch::AuxClocks,
}

impl KernelFacts {
    /// Read them from this host.
    pub fn read() -> KernelFacts {
        KernelFacts {
            release: kernel::release(),
            clocksource: kernel::clocksource(),
            cmdline: kernel::cmdline(),
            aux_clocks: kernel::aux_clocks(),
        }
    }

    /// The kernel's (major, minor), from its release.
    pub fn version(&self) -> Option<(u32, u32)> {
        self.release.as_deref().and_then(kernel::parse_version)
    }
}

/// The x86 TSC's flags and the kernel log's lines that mark it unstable.
#[derive(Debug)]
pub struct TscFacts {
    /// /proc/cpuinfo's flags; `None` when unreadable.
    pub flags: Option<Vec<String>>,
    /// The kernel log's clock lines, or why /dev/kmsg could not be read.
    pub kmsg: std::io::Result<Vec<String>>,
}

/// Everything the host audit reads of vdsoctl's own process and the kernel.
#[derive(Debug)]
pub struct HostSnapshot {
    /// vdsoctl's own process.
    pub own: VdsoFacts,
    pub kernel: KernelFacts,
    /// x86_64 only (no TSC elsewhere).
    pub tsc: Option<TscFacts>,
}

impl HostSnapshot {
    /// Read them, `me` being vdsoctl's own process.
    pub fn read(me: &Process) -> HostSnapshot {
        let tsc = (arch::HOST_MACHINE == arch::machine::X86_64)
            .then(|| TscFacts { flags: kernel::cpu_flags(), kmsg: kernel::kmsg_clock_problems() });
        HostSnapshot { own: VdsoFacts::read(me), kernel: KernelFacts::read(), tsc }
    }
}
