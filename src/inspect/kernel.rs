//! Facts about the running kernel: its command line, release, and the
//! vsyscall mode it was booted with.

use crate::error::{Error, Hint, Result};
use serde::Serialize;

/// `/proc/cmdline`, or None when unreadable.
pub fn cmdline() -> Option<String> {
    std::fs::read_to_string("/proc/cmdline").ok().map(|s| s.trim().to_string())
}

/// The value of `key=` on a kernel command line (the last one wins, as in the kernel).
pub fn cmdline_param<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--") // after "--" the words belong to init
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| v)
        .last()
}

/// Whether the kernel is PREEMPT_RT (`/sys/kernel/realtime` is `1`).
pub fn is_preempt_rt() -> bool {
    std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|v| v.trim() == "1")
}

/// The auxiliary clocks' state (`arch::AuxClocks`): which of
/// /sys/kernel/time/aux_clocks/N/enable read `1`; absent without the
/// directory (a kernel before 6.17 or without CONFIG_POSIX_AUX_CLOCKS).
pub fn aux_clocks() -> crate::arch::AuxClocks {
    aux_clocks_in(std::path::Path::new("/sys/kernel/time/aux_clocks"))
}

/// [`aux_clocks`] of a directory laid out as /sys/kernel/time/aux_clocks.
fn aux_clocks_in(dir: &std::path::Path) -> crate::arch::AuxClocks {
    use crate::arch::{AuxClocks, AUX_CLOCKS};
    if !dir.is_dir() {
        return AuxClocks::Absent;
    }
    let on = |n: i64| std::fs::read_to_string(dir.join(n.to_string()).join("enable")).is_ok_and(|v| v.trim() == "1");
    AuxClocks::Enabled((0..AUX_CLOCKS).filter(|n| on(*n)).fold(0u8, |bits, n| bits | 1 << n))
}

/// The kernel release (`uname -r`).
pub fn release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string())
}

/// The kernel's machine (`uname -m`: `x86_64`, `aarch64`): the running
/// kernel's architecture, not the one this binary was built for.
pub fn machine() -> Option<String> {
    nix::sys::utsname::uname().ok().map(|u| u.machine().to_string_lossy().into_owned())
}

/// The running kernel's native syscall ABI (from [`machine`]).
pub fn abi() -> Option<crate::arch::Abi> {
    machine().as_deref().and_then(crate::arch::Abi::of_kernel)
}

/// (major, minor) from a release string such as `6.18.44-fc-v769` (a C
/// library's `2.41` too).
pub fn parse_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// How the x86_64 legacy vsyscall page behaves (`vsyscall=` in kernel-parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VsyscallMode {
    /// Mapped readable and executable; calls trap and are emulated.
    Emulate,
    /// Execute-only: calls are emulated, reads fault (default since 5.3).
    Xonly,
    /// Not mapped: a legacy binary calling into it crashes.
    None,
}

impl VsyscallMode {
    /// Mode from the `[vsyscall]` mapping's permissions.
    pub fn from_perms(perms: &str) -> Option<VsyscallMode> {
        match perms.get(..3)? {
            "--x" => Some(VsyscallMode::Xonly),
            "r-x" => Some(VsyscallMode::Emulate),
            _ => None,
        }
    }

    /// Mode from a `vsyscall=` value.
    pub fn from_param(value: &str) -> Option<VsyscallMode> {
        match value {
            "emulate" => Some(VsyscallMode::Emulate),
            "xonly" => Some(VsyscallMode::Xonly),
            "none" => Some(VsyscallMode::None),
            _ => None,
        }
    }

    /// The lowercase name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            VsyscallMode::Emulate => "emulate",
            VsyscallMode::Xonly => "xonly",
            VsyscallMode::None => "none",
        }
    }
}

/// The clocksource in use and the ones available
/// (`/sys/devices/system/clocksource/clocksource0/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Clocksource {
    pub current: String,
    pub available: Vec<String>,
}

const CLOCKSOURCE_DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// Read the clocksource, or None when sysfs does not say (containers may hide it).
pub fn clocksource() -> Option<Clocksource> {
    let read = |f: &str| std::fs::read_to_string(format!("{CLOCKSOURCE_DIR}/{f}")).ok();
    Some(Clocksource {
        current: read("current_clocksource")?.trim().to_string(),
        available: read("available_clocksource").unwrap_or_default().split_whitespace().map(str::to_string).collect(),
    })
}

/// Whether a clocksource has a vDSO clock mode, i.e. whether the high-resolution
/// clocks can be read in user space on it. `None`: it depends (kvm-clock has
/// one only when the host sets PVCLOCK_TSC_STABLE_BIT; unknown names).
pub fn clocksource_has_vdso_mode(name: &str) -> Option<bool> {
    match name {
        // x86 TSC, Hyper-V TSC page, arm64 generic timer, riscv/loongarch/s390/ppc timebase
        "tsc"
        | "hyperv_clocksource_tsc_page"
        | "arch_sys_counter"
        | "riscv_clocksource"
        | "constant"
        | "tod"
        | "timebase"
        | "mips"
        | "MIPS"
        | "GIC" => Some(true),
        // no vDSO mode: every high-resolution clock read is a syscall
        "xen" | "hpet" | "acpi_pm" | "jiffies" | "refined-jiffies" | "pit" | "tsc-early" | "hyperv_clocksource_msr" => {
            Some(false)
        }
        "kvm-clock" => None,
        _ => None,
    }
}

/// CPU flags from the first `flags` line of /proc/cpuinfo (x86).
pub fn cpu_flags() -> Option<Vec<String>> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_flags(&text)
}

/// The first `flags : ...` line of a cpuinfo text.
pub fn parse_cpu_flags(cpuinfo: &str) -> Option<Vec<String>> {
    let line = cpuinfo.lines().find(|l| l.starts_with("flags"))?;
    Some(line.split_once(':')?.1.split_whitespace().map(str::to_string).collect())
}

/// Kernel log lines that say the TSC or a clocksource went bad.
/// `Err` when /dev/kmsg cannot be read (non-root, `kernel.dmesg_restrict`).
pub fn kmsg_clock_problems() -> std::io::Result<Vec<String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut kmsg = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg")?;
    let mut lines = Vec::new();
    let mut buf = vec![0u8; 8192];
    // Each read returns one record; EAGAIN at the end; EPIPE when a record was overwritten.
    for _ in 0..100_000 {
        match kmsg.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                let msg = rec.split_once(';').map_or(rec.as_ref(), |(_, m)| m).lines().next().unwrap_or("");
                if is_clock_problem(msg) {
                    lines.push(msg.trim().to_string());
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(lines)
}

/// Whether a kernel log message reports an unstable TSC or clocksource.
pub fn is_clock_problem(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    m.contains("marking tsc unstable")
        || m.contains("tsc found unstable")
        || m.contains("clocksource watchdog")
        || (m.contains("clocksource") && m.contains("unstable"))
        || m.contains("tsc: marking")
}

/// The CPUs of one of sysfs's CPU lists (`online`, `possible`: "0-3,6").
fn cpu_list(name: &str) -> Result<Vec<u32>> {
    let path = format!("/sys/devices/system/cpu/{name}");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::from_io(&path, e, Hint::SysfsMounted))?;
    parse_cpu_list(&text).ok_or_else(|| Error::malformed(path, text.trim()))
}

/// Online CPUs: where per-CPU perf samplers are opened.
pub fn online_cpus() -> Result<Vec<u32>> {
    cpu_list("online")
}

/// How many CPUs may ever exist: a per-CPU BPF map value holds a slot for each.
pub fn possible_cpus() -> Result<usize> {
    let cpus = cpu_list("possible")?;
    Ok(cpus.iter().max().map_or(1, |m| *m as usize + 1))
}

/// Parse a kernel CPU list.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aux_clocks_are_read_from_their_enable_files() {
        use crate::arch::{AuxClocks, AuxState};
        let dir = tempfile::tempdir().unwrap();
        let aux = dir.path().join("aux_clocks");
        assert_eq!(aux_clocks_in(&aux), AuxClocks::Absent);
        for (n, v) in [(0, "0\n"), (1, "1\n"), (7, "1\n")] {
            std::fs::create_dir_all(aux.join(n.to_string())).unwrap();
            std::fs::write(aux.join(n.to_string()).join("enable"), v).unwrap();
        }
        let read = aux_clocks_in(&aux);
        assert_eq!(read, AuxClocks::Enabled(0b1000_0010));
        assert_eq!(read.state(16), Some(AuxState::Disabled));
        assert_eq!(read.state(17), Some(AuxState::Enabled));
        assert_eq!(read.state(18), Some(AuxState::Disabled), "no enable file");
        assert_eq!(read.state(23), Some(AuxState::Enabled));
        assert_eq!(read.state(1), None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-3"), Some(vec![0, 2, 3]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn cmdline_params() {
        let c = "console=ttyS0 vsyscall=emulate quiet vsyscall=none -- vsyscall=xonly";
        assert_eq!(cmdline_param(c, "vsyscall"), Some("none"));
        assert_eq!(cmdline_param(c, "console"), Some("ttyS0"));
        assert_eq!(cmdline_param(c, "vdso"), None);
    }

    #[test]
    fn versions_and_modes() {
        assert_eq!(parse_version("6.18.44-fc-v769"), Some((6, 18)));
        assert_eq!(parse_version("4.19.0"), Some((4, 19)));
        assert_eq!(parse_version("x"), None);
        assert_eq!(VsyscallMode::from_perms("--xp"), Some(VsyscallMode::Xonly));
        assert_eq!(VsyscallMode::from_perms("r-xp"), Some(VsyscallMode::Emulate));
        assert_eq!(VsyscallMode::from_perms("rw"), None);
    }

    #[test]
    fn vdso_modes() {
        assert_eq!(clocksource_has_vdso_mode("tsc"), Some(true));
        assert_eq!(clocksource_has_vdso_mode("hpet"), Some(false));
        assert_eq!(clocksource_has_vdso_mode("xen"), Some(false));
        assert_eq!(clocksource_has_vdso_mode("kvm-clock"), None);
    }

    #[test]
    fn cpu_flags_and_kmsg_lines() {
        let flags = parse_cpu_flags("processor : 0\nflags\t\t: fpu tsc constant_tsc\n").unwrap();
        assert_eq!(flags, vec!["fpu", "tsc", "constant_tsc"]);
        assert!(parse_cpu_flags("nothing").is_none());
        assert!(is_clock_problem("clocksource: timekeeping watchdog on CPU1: Marking clocksource 'tsc' as unstable because the skew is too large:"));
        assert!(is_clock_problem("tsc: Marking TSC unstable due to clocksource watchdog"));
        assert!(!is_clock_problem("clocksource: Switched to clocksource tsc"));
    }

    #[test]
    fn this_host_has_a_clocksource() {
        let cs = clocksource().expect("sysfs clocksource");
        assert!(!cs.current.is_empty());
        assert!(cs.available.contains(&cs.current));
    }
}
