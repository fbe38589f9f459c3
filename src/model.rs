//! Model types shared by several reports. A report struct itself lives beside
//! its command in `cmd/`; what more than one command says lives here.

use serde::Serialize;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// The fast path is at risk or lost for something that may not matter.
    Warn,
    /// The fast path is lost where it should not be.
    Fail,
}

impl Severity {
    /// Upper-case label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "INFO",
            Severity::Warn => "WARN",
            Severity::Fail => "FAIL",
        }
    }
}

/// A sentence an on-call engineer can act on, with the remediation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub message: String,
    /// What to do about it; `null` when there is nothing to do.
    pub hint: Option<String>,
}

impl Finding {
    /// A finding with a hint.
    pub fn new(severity: Severity, message: impl Into<String>, hint: Option<String>) -> Finding {
        Finding { severity, message: message.into(), hint }
    }
}

/// Serialize a u64 address as a `"0x..."` string (JSON doubles lose bits).
pub fn hex<S: serde::Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{value:#x}"))
}

/// [`hex`] for an optional address; `None` stays `null`.
pub fn hex_opt<S: serde::Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_str(&format!("{v:#x}")),
        None => s.serialize_none(),
    }
}

/// Whether the vDSO serves `func` (with `clock`) for a process of `abi` on a
/// kernel of version `kernel`, so that a syscall for it means the fast path
/// was lost. Clocks this kernel's vDSO does not serve yet (MONOTONIC_RAW
/// before 5.3, ...), CPU-time, alarm and fd clocks are expected syscalls.
/// (`trace` judges its rows the same way; `serve` labels its series with it.)
pub fn vdso_serves_call(
    abi: crate::arch::Abi,
    func: crate::arch::TimeFn,
    clock: crate::measure::trace::Clock,
    kernel: Option<(u32, u32)>,
) -> bool {
    use crate::measure::trace::Clock;
    let (machine, is_64) = abi.elf();
    if crate::arch::vdso_symbol(machine, is_64, func).is_none() {
        return false;
    }
    match clock {
        Clock::None => true,
        Clock::Id(id) => i32::try_from(id).is_ok_and(|id| crate::arch::vdso_serves(id, abi.native().elf().0, kernel)),
        Clock::Other | Clock::Any => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{Abi, TimeFn};
    use crate::measure::trace::Clock;

    #[test]
    fn vdso_served_calls() {
        let k = Some((6, 18));
        assert!(vdso_serves_call(Abi::X86_64, TimeFn::ClockGettime, Clock::Id(4), k));
        assert!(!vdso_serves_call(Abi::X86_64, TimeFn::ClockGettime, Clock::Id(4), Some((5, 2))));
        assert!(!vdso_serves_call(Abi::X86_64, TimeFn::ClockGettime, Clock::Id(3), k));
        assert!(!vdso_serves_call(Abi::X86_64, TimeFn::ClockGettime, Clock::Other, k));
        assert!(vdso_serves_call(Abi::X86_64, TimeFn::Gettimeofday, Clock::None, k));
        assert!(vdso_serves_call(Abi::I386, TimeFn::ClockGettime64, Clock::Id(11), k));
    }
}
