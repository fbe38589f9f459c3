//! What each architecture's vDSO exports: symbol names and versions per
//! ELF machine and class (from each architecture's `vdso.lds.S`), and the
//! kernel that brought each symbol.

use super::{machine, VdsoFn};

/// A vDSO symbol a C library binds, with the version it binds.
#[derive(Debug, Clone, Copy)]
pub struct VdsoSymbol {
    pub function: VdsoFn,
    pub name: &'static str,
    /// (major, minor) of the first kernel whose vDSO on this architecture
    /// exports it; `None`: as old as this vDSO's clock functions.
    pub since: Option<(u32, u32)>,
    /// Whether the vDSO serves it in user space: `false` for an entry
    /// that makes the syscall by design (riscv64's `__vdso_getcpu`, an
    /// `ecall`), which is no lost fast path.
    pub fast: bool,
}

impl VdsoSymbol {
    /// Whether a kernel of version `kernel` exports it (unknown: yes).
    pub fn in_kernel(&self, kernel: Option<(u32, u32)>) -> bool {
        match (self.since, kernel) {
            (Some(since), Some(k)) => k >= since,
            _ => true,
        }
    }
}

/// What an architecture's vDSO exports for the C library's clock functions.
#[derive(Debug, Clone, Copy)]
pub struct VdsoAbi {
    /// ELF e_machine this applies to.
    pub machine: u16,
    /// ELF class: true for 64-bit.
    pub is_64: bool,
    /// The version node the symbols carry (`LINUX_2.6`, `LINUX_2.6.39`, ...).
    pub version: &'static str,
    /// The symbols glibc/musl look up (the kernel's `vdso.lds.S`).
    pub symbols: &'static [VdsoSymbol],
}

const fn sym(function: VdsoFn, name: &'static str) -> VdsoSymbol {
    VdsoSymbol { function, name, since: None, fast: true }
}

/// A symbol a later kernel added to the vDSO.
const fn sym_since(function: VdsoFn, name: &'static str, since: (u32, u32)) -> VdsoSymbol {
    VdsoSymbol { function, name, since: Some(since), fast: true }
}

/// An entry that makes the syscall itself, by design.
const fn sym_syscall(function: VdsoFn, name: &'static str) -> VdsoSymbol {
    VdsoSymbol { function, name, since: None, fast: false }
}

/// vDSO export tables per architecture and class.
pub const VDSO_ABIS: &[VdsoAbi] = &[
    VdsoAbi {
        machine: machine::X86_64,
        is_64: true,
        version: "LINUX_2.6",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__vdso_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__vdso_gettimeofday"),
            sym(VdsoFn::Time, "__vdso_time"),
            sym(VdsoFn::Getcpu, "__vdso_getcpu"),
            sym(VdsoFn::ClockGetres, "__vdso_clock_getres"),
            // arch/x86/entry/vdso/vgetrandom.c (6.11); 64-bit only: vdso32 has none.
            sym_since(VdsoFn::Getrandom, "__vdso_getrandom", (6, 11)),
            // 7.2 (seen in Debian's 7.3.4 image: fixtures/vdso/x86_64-7.3.so).
            sym_since(VdsoFn::FutexRobustList64TryUnlock, "__vdso_futex_robust_list64_try_unlock", (7, 2)),
            sym_since(VdsoFn::FutexRobustList32TryUnlock, "__vdso_futex_robust_list32_try_unlock", (7, 2)),
        ],
    },
    VdsoAbi {
        machine: machine::I386,
        is_64: false,
        version: "LINUX_2.6",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__vdso_clock_gettime"),
            sym(VdsoFn::ClockGettime64, "__vdso_clock_gettime64"),
            sym(VdsoFn::Gettimeofday, "__vdso_gettimeofday"),
            sym(VdsoFn::Time, "__vdso_time"),
            sym(VdsoFn::ClockGetres, "__vdso_clock_getres"),
            // arch/x86/entry/vdso/vdso32/vdso32.lds.S exports it (seen in this host's image)
            sym(VdsoFn::Getcpu, "__vdso_getcpu"),
            // 7.0; glibc's i386 clock_getres still makes the syscall
            // (`arch::ROUTES`). Seen in Debian's 7.3.4 (fixtures/vdso/i386-7.3.so).
            sym_since(VdsoFn::ClockGetresTime64, "__vdso_clock_getres_time64", (7, 0)),
            // 7.2: the 32-bit robust list's unlock only (no list64 in vdso32).
            sym_since(VdsoFn::FutexRobustList32TryUnlock, "__vdso_futex_robust_list32_try_unlock", (7, 2)),
        ],
    },
    VdsoAbi {
        machine: machine::AARCH64,
        is_64: true,
        version: "LINUX_2.6.39",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__kernel_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__kernel_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__kernel_clock_getres"),
            // arch/arm64/kernel/vdso/vgetrandom.c (6.12); not in the compat vDSO.
            sym_since(VdsoFn::Getrandom, "__kernel_getrandom", (6, 12)),
        ],
    },
    VdsoAbi {
        machine: machine::ARM,
        is_64: false,
        version: "LINUX_2.6",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__vdso_clock_gettime"),
            sym(VdsoFn::ClockGettime64, "__vdso_clock_gettime64"),
            sym(VdsoFn::Gettimeofday, "__vdso_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__vdso_clock_getres"),
        ],
    },
    VdsoAbi {
        machine: machine::RISCV,
        is_64: true,
        version: "LINUX_4.15",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__vdso_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__vdso_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__vdso_clock_getres"),
            // arch/riscv/kernel/vdso/getcpu.S: `li a7, __NR_getcpu; ecall`.
            sym_syscall(VdsoFn::Getcpu, "__vdso_getcpu"),
            sym_since(VdsoFn::Getrandom, "__vdso_getrandom", (6, 16)),
        ],
    },
    VdsoAbi {
        machine: machine::PPC64,
        is_64: true,
        version: "LINUX_2.6.15",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__kernel_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__kernel_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__kernel_clock_getres"),
            sym(VdsoFn::Time, "__kernel_time"),
            sym(VdsoFn::Getcpu, "__kernel_getcpu"),
            sym_since(VdsoFn::Getrandom, "__kernel_getrandom", (6, 12)),
        ],
    },
    VdsoAbi {
        machine: machine::PPC,
        is_64: false,
        version: "LINUX_2.6.15",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__kernel_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__kernel_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__kernel_clock_getres"),
            sym(VdsoFn::Time, "__kernel_time"),
            sym_since(VdsoFn::Getrandom, "__kernel_getrandom", (6, 12)),
        ],
    },
    VdsoAbi {
        machine: machine::S390,
        is_64: true,
        version: "LINUX_2.6.29",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__kernel_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__kernel_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__kernel_clock_getres"),
            sym(VdsoFn::Getcpu, "__kernel_getcpu"),
            sym_since(VdsoFn::Getrandom, "__kernel_getrandom", (6, 12)),
        ],
    },
    VdsoAbi {
        machine: machine::MIPS,
        is_64: false,
        version: "LINUX_2.6",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__vdso_clock_gettime"),
            // o32 and n32 (arch/mips/vdso/vdso.lds.S, 5.1: not on n64).
            sym(VdsoFn::ClockGettime64, "__vdso_clock_gettime64"),
            sym(VdsoFn::Gettimeofday, "__vdso_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__vdso_clock_getres"),
        ],
    },
    VdsoAbi {
        machine: machine::MIPS,
        is_64: true,
        version: "LINUX_2.6",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__vdso_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__vdso_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__vdso_clock_getres"),
        ],
    },
    VdsoAbi {
        machine: machine::LOONGARCH,
        is_64: true,
        version: "LINUX_5.10",
        symbols: &[
            sym(VdsoFn::ClockGettime, "__vdso_clock_gettime"),
            sym(VdsoFn::Gettimeofday, "__vdso_gettimeofday"),
            sym(VdsoFn::ClockGetres, "__vdso_clock_getres"),
            sym(VdsoFn::Getcpu, "__vdso_getcpu"),
            sym_since(VdsoFn::Getrandom, "__vdso_getrandom", (6, 12)),
        ],
    },
];

/// The vDSO export table for an ELF machine and class.
pub fn vdso_abi(machine: u16, is_64: bool) -> Option<&'static VdsoAbi> {
    VDSO_ABIS.iter().find(|a| a.machine == machine && a.is_64 == is_64)
}

/// The vDSO symbol for `function` on `machine`/`is_64`, if the kernel exports one.
pub fn vdso_symbol(machine: u16, is_64: bool, function: VdsoFn) -> Option<&'static str> {
    vdso_symbol_row(machine, is_64, function).map(|s| s.name)
}

/// The vDSO table's row for `function` on `machine`/`is_64`.
pub fn vdso_symbol_row(machine: u16, is_64: bool, function: VdsoFn) -> Option<&'static VdsoSymbol> {
    vdso_abi(machine, is_64)?.symbols.iter().find(|s| s.function == function)
}

/// What a symbol a vDSO exports is for: every export is accounted for,
/// the functions of the table above and the rest, so `check`, `dump` and
/// `maps` can name each and say "unknown to vdsoctl" for a new one rather
/// than drop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "role", content = "of", rename_all = "snake_case")]
pub enum ExportRole {
    /// A function of [`VDSO_ABIS`] (its fast path is judged and timed).
    Function(VdsoFn),
    /// A weak alias of one (x86's `clock_gettime` beside
    /// `__vdso_clock_gettime`; x86 alone has them).
    Alias(VdsoFn),
    /// Another syscall's fast path, which vdsoctl names but does not trace:
    /// the syscall it serves and the kernel that brought it.
    FastPath { syscall: &'static str, since: Option<(u32, u32)> },
    /// No syscall's fast path: what it is.
    NotASyscall(NotASyscall),
    /// Not in vdsoctl's table: a function a newer kernel added.
    Unknown,
}

/// The exports that are no syscall's fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotASyscall {
    /// A signal-return trampoline (the kernel points a handler's return at it).
    SigreturnTrampoline,
    /// x86_64's `__vdso_sgx_enter_enclave`: enters an SGX enclave.
    SgxEnterEnclave,
    /// ppc64's `__kernel_get_syscall_map`: which syscalls the vDSO has.
    SyscallMap,
    /// ppc64's `__kernel_get_tbfreq`: the timebase frequency.
    TimebaseFrequency,
    /// ppc64's `__kernel_sync_dicache`: syncs the instruction cache.
    SyncDicache,
    /// s390x's `__kernel_restart_syscall`: the restart trampoline.
    RestartSyscall,
}

/// The exports beside the functions: (machine, 64-bit, name, role), from
/// each architecture's `vdso.lds.S` (x86_64 `arch/x86/entry/vdso/vdso.lds.S`,
/// 7.2's robust-futex unlock among them; ppc64 `vdso64.lds.S`; s390x
/// `vdso.lds.S`; riscv64 `vdso.lds.S`; arm64 and AArch32 theirs).
pub const OTHER_EXPORTS: &[(u16, bool, &str, ExportRole)] = {
    use ExportRole::{FastPath, NotASyscall as Not};
    use NotASyscall::*;
    &[
        (machine::X86_64, true, "__vdso_sgx_enter_enclave", Not(SgxEnterEnclave)),
        (
            machine::I386,
            false,
            "__kernel_vsyscall",
            FastPath { syscall: "any (the int 0x80 / sysenter entry)", since: None },
        ),
        (machine::I386, false, "__kernel_sigreturn", Not(SigreturnTrampoline)),
        (machine::I386, false, "__kernel_rt_sigreturn", Not(SigreturnTrampoline)),
        (machine::AARCH64, true, "__kernel_rt_sigreturn", Not(SigreturnTrampoline)),
        (machine::ARM, false, "__vdso_sigreturn", Not(SigreturnTrampoline)),
        (machine::RISCV, true, "__vdso_rt_sigreturn", Not(SigreturnTrampoline)),
        (machine::RISCV, true, "__vdso_flush_icache", FastPath { syscall: "riscv_flush_icache", since: None }),
        (machine::RISCV, true, "__vdso_riscv_hwprobe", FastPath { syscall: "riscv_hwprobe", since: Some((6, 5)) }),
        (machine::PPC64, true, "__kernel_get_syscall_map", Not(SyscallMap)),
        (machine::PPC64, true, "__kernel_get_tbfreq", Not(TimebaseFrequency)),
        (machine::PPC64, true, "__kernel_sync_dicache", Not(SyncDicache)),
        (machine::PPC64, true, "__kernel_sigtramp_rt64", Not(SigreturnTrampoline)),
        (machine::S390, true, "__kernel_restart_syscall", Not(RestartSyscall)),
        (machine::S390, true, "__kernel_rt_sigreturn", Not(SigreturnTrampoline)),
        (machine::S390, true, "__kernel_sigreturn", Not(SigreturnTrampoline)),
        // s390's compat (31-bit) vDSO: trampolines only.
        (machine::S390, false, "__kernel_compat_sigreturn", Not(SigreturnTrampoline)),
        (machine::S390, false, "__kernel_compat_rt_sigreturn", Not(SigreturnTrampoline)),
        (machine::S390, false, "__kernel_compat_restart_syscall", Not(RestartSyscall)),
        (machine::LOONGARCH, true, "__vdso_rt_sigreturn", Not(SigreturnTrampoline)),
    ]
};

/// What the export `name` of a vDSO of `machine`/`is_64` is for.
pub fn export_role(machine: u16, is_64: bool, name: &str) -> ExportRole {
    if let Some(s) = vdso_abi(machine, is_64).and_then(|a| a.symbols.iter().find(|s| s.name == name)) {
        return ExportRole::Function(s.function);
    }
    if let Some((_, _, _, role)) = OTHER_EXPORTS.iter().find(|(m, b, n, _)| *m == machine && *b == is_64 && *n == name)
    {
        return *role;
    }
    // x86's vDSOs export each function under its C name too (a weak alias).
    if matches!(machine, machine::X86_64 | machine::I386) {
        if let Some(s) = vdso_abi(machine, is_64).and_then(|a| a.symbols.iter().find(|s| s.function.name() == name)) {
            return ExportRole::Alias(s.function);
        }
    }
    ExportRole::Unknown
}
