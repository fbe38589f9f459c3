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
