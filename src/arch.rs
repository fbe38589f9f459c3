//! Architecture tables, in one place: clock ids, the functions a vDSO can
//! serve (the clocks, getcpu and getrandom), their symbol names, versions
//! and the kernel that brought each to the vDSO, per architecture (from
//! each architecture's `vdso.lds.S` in the kernel), the syscall numbers of
//! those functions per ABI (including the i386 compat numbers a 64-bit
//! kernel sees from 32-bit processes), which C libraries and runtimes call
//! each through the vDSO, and the auxv/hwcap names.
//!
//! Nothing else in the crate spells an architecture-specific number.

use serde::Serialize;

/// ELF `e_machine` values we know by name (from `elf.h`).
pub mod machine {
    pub const I386: u16 = 3;
    pub const MIPS: u16 = 8;
    pub const PPC: u16 = 20;
    pub const PPC64: u16 = 21;
    pub const S390: u16 = 22;
    pub const ARM: u16 = 40;
    pub const X86_64: u16 = 62;
    pub const AARCH64: u16 = 183;
    pub const RISCV: u16 = 243;
    pub const LOONGARCH: u16 = 258;
}

/// A readable name for an ELF machine, as readelf prints it, or hex.
pub fn machine_name(m: u16) -> String {
    let known = match m {
        machine::I386 => "i386",
        machine::MIPS => "mips",
        machine::PPC => "ppc",
        machine::PPC64 => "ppc64",
        machine::S390 => "s390",
        machine::ARM => "arm",
        machine::X86_64 => "x86_64",
        machine::AARCH64 => "aarch64",
        machine::RISCV => "riscv",
        machine::LOONGARCH => "loongarch",
        _ => return format!("0x{m:x}"),
    };
    known.to_string()
}

/// `EF_ARM_ABI_FLOAT_HARD` and `EF_ARM_ABI_FLOAT_SOFT` in an ARM file's
/// `e_flags` (`elf.h`): what tells armhf from armel, as `readelf -h` says
/// "hard-float ABI" / "soft-float ABI".
pub const EF_ARM_ABI_FLOAT_HARD: u32 = 0x400;
pub const EF_ARM_ABI_FLOAT_SOFT: u32 = 0x200;

/// The architecture of an ELF file as Debian names it (`dpkg
/// --print-architecture`, the multiarch tuple's short name): class,
/// machine, byte order and, for 32-bit ARM, the float ABI. `amd64`,
/// `i386`, `x32`, `arm64`, `armhf`, `armel`, `ppc64el`, `ppc64`,
/// `powerpc`, `s390x`, `riscv64`, `mips64el`, `mipsel`, `loong64`; any
/// other is the machine's name with `-be`/`-le` and the class.
pub fn arch_name(machine: u16, is_64: bool, little_endian: bool, flags: u32) -> String {
    let known = match (machine, is_64, little_endian) {
        (machine::X86_64, true, true) => "amd64",
        (machine::X86_64, false, true) => "x32",
        (machine::I386, false, true) => "i386",
        (machine::AARCH64, true, true) => "arm64",
        (machine::AARCH64, true, false) => "arm64be",
        (machine::ARM, false, true) if flags & EF_ARM_ABI_FLOAT_HARD != 0 => "armhf",
        (machine::ARM, false, true) => "armel",
        (machine::ARM, false, false) => "armeb",
        (machine::PPC64, true, true) => "ppc64el",
        (machine::PPC64, true, false) => "ppc64",
        (machine::PPC, false, false) => "powerpc",
        (machine::S390, true, false) => "s390x",
        (machine::S390, false, false) => "s390",
        (machine::RISCV, true, true) => "riscv64",
        (machine::RISCV, false, true) => "riscv32",
        (machine::MIPS, true, true) => "mips64el",
        (machine::MIPS, true, false) => "mips64",
        (machine::MIPS, false, true) => "mipsel",
        (machine::MIPS, false, false) => "mips",
        (machine::LOONGARCH, true, true) => "loong64",
        _ => {
            let order = if little_endian { "le" } else { "be" };
            return format!("{}-{order}{}", machine_name(machine), if is_64 { "64" } else { "32" });
        }
    };
    known.to_string()
}

/// Whether this binary runs with the byte order of `little_endian`.
pub const HOST_LITTLE_ENDIAN: bool = cfg!(target_endian = "little");

/// The `e_machine` of the architecture this binary was built for.
pub const HOST_MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    machine::X86_64
} else if cfg!(target_arch = "aarch64") {
    machine::AARCH64
} else if cfg!(target_arch = "x86") {
    machine::I386
} else if cfg!(target_arch = "arm") {
    machine::ARM
} else if cfg!(target_arch = "riscv64") {
    machine::RISCV
} else if cfg!(target_arch = "powerpc64") {
    machine::PPC64
} else if cfg!(target_arch = "s390x") {
    machine::S390
} else {
    0
};

/// Whether this binary is a 64-bit process (its vDSO is the 64-bit one).
pub const HOST_IS_64: bool = cfg!(target_pointer_width = "64");

/// The function table: each row declares a [`VdsoFn`] variant and every
/// fact about it at once — its C name, what it serves, the C library
/// function a program should call, whether it takes a clock id — so
/// [`VdsoFn::ALL`], [`VdsoFn::index`], the names `--functions` and the
/// parsers accept, and every per-function match are derived from one list:
/// a row cannot be half-added (`arch::tests::a_row_is_all_it_takes`).
macro_rules! vdso_functions {
    ($( $(#[$doc:meta])* $variant:ident: $name:literal, $kind:ident, libc $libc:literal, clock $clock:literal, bench $bench:literal; )*) => {
        /// A function a vDSO may serve. Adding one: a row of the
        /// `vdso_functions!` table, and the compiler names every place that
        /// must decide (no match on it or on [`FnKind`] has a wildcard arm).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum VdsoFn {
            $( $(#[$doc])* $variant, )*
        }

        impl VdsoFn {
            /// Every function, in the order of the table.
            pub const ALL: [VdsoFn; 0 $( + { let _ = stringify!($variant); 1 } )*] = [$( VdsoFn::$variant, )*];

            /// The function's place in [`VdsoFn::ALL`].
            pub const fn index(self) -> usize {
                self as usize
            }

            /// What the function serves: a clock read, the CPU number, or random
            /// bytes (decides the words and which verdicts apply).
            pub const fn kind(self) -> FnKind {
                match self {
                    $( VdsoFn::$variant => FnKind::$kind, )*
                }
            }

            /// The C name of the function / syscall.
            pub const fn name(self) -> &'static str {
                match self {
                    $( VdsoFn::$variant => $name, )*
                }
            }

            /// The C library's function for this call (what a program should call
            /// rather than the raw syscall; the time64 syscalls are libc's
            /// `clock_gettime` and `clock_getres` on 32-bit targets).
            pub const fn libc_function(self) -> &'static str {
                match self {
                    $( VdsoFn::$variant => $libc, )*
                }
            }

            /// Whether the function's first argument is a clock id.
            pub const fn takes_clock(self) -> bool {
                match self {
                    $( VdsoFn::$variant => $clock, )*
                }
            }

            /// Whether `bench` times it (`--functions`): not the 32-bit
            /// time64 syscalls, which are libc's `clock_gettime` and
            /// `clock_getres` there.
            pub const fn benched(self) -> bool {
                match self {
                    $( VdsoFn::$variant => $bench, )*
                }
            }
        }
    };
}

vdso_functions! {
    ClockGettime: "clock_gettime", Clock, libc "clock_gettime", clock true, bench true;
    ClockGettime64: "clock_gettime64", Clock, libc "clock_gettime", clock true, bench false;
    Gettimeofday: "gettimeofday", Clock, libc "gettimeofday", clock false, bench true;
    Time: "time", Clock, libc "time", clock false, bench true;
    ClockGetres: "clock_getres", Clock, libc "clock_getres", clock true, bench true;
    ClockGetresTime64: "clock_getres_time64", Clock, libc "clock_getres", clock true, bench false;
    Getcpu: "getcpu", Cpu, libc "sched_getcpu", clock false, bench true;
    /// Random bytes (Linux 6.11 on x86_64, 6.12 on arm64, powerpc, s390
    /// and loongarch, 6.16 on riscv64): the vDSO fills the buffer from a
    /// per-thread state the caller maps (`MAP_DROPPABLE`), and enters the
    /// kernel itself only to refill that state's key.
    Getrandom: "getrandom", Random, libc "getrandom", clock false, bench true;
    /// Robust-futex unlock (Linux 7.2, x86_64's vDSO and its compat
    /// vDSO): `__vdso_futex_robust_list64_try_unlock(lock, tid, pending)`
    /// releases an uncontended lock and clears the robust list's pending
    /// op in user space; its fallback is `futex(op | FUTEX_ROBUST_UNLOCK)`
    /// ([`FutexOp`]), which the kernel makes atomic with the unlock.
    FutexRobustList64TryUnlock: "futex_robust_list64_try_unlock", Futex, libc "pthread_mutex_unlock", clock false, bench false;
    /// Its 32-bit robust list's twin (`FUTEX_ROBUST_LIST32` in the op).
    FutexRobustList32TryUnlock: "futex_robust_list32_try_unlock", Futex, libc "pthread_mutex_unlock", clock false, bench false;
}

/// The `futex(2)` op bits that make a call a robust-futex unlock's fallback
/// (`include/uapi/linux/futex.h` of Linux 7.2 and 7.3, as Debian's
/// linux-libc-dev 7.2.13-1 and 7.3.4-1~bpo13+1 have it): a call is one
/// when `op & MASK == VALUE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FutexOp {
    pub mask: u32,
    pub value: u32,
}

/// `FUTEX_ROBUST_UNLOCK`: unlock, clear the robust list's pending op, wake.
pub const FUTEX_ROBUST_UNLOCK: u32 = 512;
/// `FUTEX_ROBUST_LIST32`: the robust list is a 32-bit one.
pub const FUTEX_ROBUST_LIST32: u32 = 1024;

impl VdsoFn {
    /// The function of a C name (`clock_gettime`).
    pub fn from_name(name: &str) -> Option<VdsoFn> {
        VdsoFn::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The syscall its fallback makes (`syscalls:sys_enter_<this>`): its
    /// own name, but `futex` for a robust-futex unlock.
    pub const fn syscall_name(self) -> &'static str {
        match self.kind() {
            FnKind::Futex => "futex",
            FnKind::Clock | FnKind::Cpu | FnKind::Random => self.name(),
        }
    }

    /// The futex op bits that tell this function's fallback from every
    /// other `futex(2)` call (`None`: the syscall number alone decides).
    pub const fn futex_op(self) -> Option<FutexOp> {
        const MASK: u32 = FUTEX_ROBUST_UNLOCK | FUTEX_ROBUST_LIST32;
        match self {
            VdsoFn::FutexRobustList64TryUnlock => Some(FutexOp { mask: MASK, value: FUTEX_ROBUST_UNLOCK }),
            VdsoFn::FutexRobustList32TryUnlock => Some(FutexOp { mask: MASK, value: MASK }),
            VdsoFn::ClockGettime
            | VdsoFn::ClockGettime64
            | VdsoFn::Gettimeofday
            | VdsoFn::Time
            | VdsoFn::ClockGetres
            | VdsoFn::ClockGetresTime64
            | VdsoFn::Getcpu
            | VdsoFn::Getrandom => None,
        }
    }
}

/// How a vDSO function returns an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VdsoErrors {
    /// `-errno`, as the syscall does (x86, arm, riscv64, s390x).
    NegativeErrno,
    /// ppc64: the errno, positive, with CR0.SO set (`__kernel_clock_gettime(8)`
    /// returns 22, EINVAL); a function whose success is 0 says an error
    /// by any other value.
    PositiveErrno,
}

/// What a vDSO function serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FnKind {
    /// A clock read (or a clock's resolution).
    Clock,
    /// The CPU and node the caller runs on.
    Cpu,
    /// Random bytes.
    Random,
    /// A lock's release (robust-futex unlock): its fallback is one kind
    /// of `futex(2)` call, told apart by its op ([`VdsoFn::futex_op`]).
    Futex,
}

impl std::fmt::Display for VdsoFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A clock syscall of this process's own ABI ([`HOST_ABI`]), with the C
/// signature its function implies. Only [`VdsoSyscall::host`] builds one,
/// from this table: a raw syscall made with it is always that clock call,
/// never an arbitrary number (`measure::sys::call` relies on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VdsoSyscall {
    function: VdsoFn,
    nr: i64,
}

impl VdsoSyscall {
    /// `f`'s syscall in this process's ABI, when it has one (x86_64 has no
    /// `clock_gettime64`, arm64 no `time`).
    pub fn host(f: VdsoFn) -> Option<VdsoSyscall> {
        Some(VdsoSyscall { function: f, nr: HOST_ABI?.syscall_nr(f)? })
    }

    /// The function it calls.
    pub fn function(self) -> VdsoFn {
        self.function
    }

    /// Its number.
    pub fn nr(self) -> i64 {
        self.nr
    }
}

/// A syscall ABI a process can use on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Abi {
    X86_64,
    /// 32-bit x86, native or compat on an x86_64 kernel (`int 0x80`/sysenter numbers).
    I386,
    Aarch64,
    /// 32-bit ARM (native, or compat on arm64).
    Arm,
    Riscv64,
    /// 64-bit POWER (Debian's ppc64el; a big-endian build of vdsoctl
    /// takes its big-endian audit arch, [`Abi::audit_arch`]).
    Ppc64,
    /// 64-bit IBM Z, big-endian.
    S390x,
}

impl Abi {
    /// The ABI of an ELF file with this class (32/64) and machine.
    pub fn from_elf(is_64: bool, machine: u16) -> Option<Abi> {
        match (is_64, machine) {
            (true, machine::X86_64) => Some(Abi::X86_64),
            (false, machine::I386) => Some(Abi::I386),
            (true, machine::AARCH64) => Some(Abi::Aarch64),
            (false, machine::ARM) => Some(Abi::Arm),
            (true, machine::RISCV) => Some(Abi::Riscv64),
            (true, machine::PPC64) => Some(Abi::Ppc64),
            (true, machine::S390) => Some(Abi::S390x),
            _ => None,
        }
    }

    /// The name used in output (`x86_64`, `i386`, ...), as serialized.
    pub fn name(self) -> &'static str {
        match self {
            Abi::X86_64 => "x86_64",
            Abi::I386 => "i386",
            Abi::Aarch64 => "aarch64",
            Abi::Arm => "arm",
            Abi::Riscv64 => "riscv64",
            Abi::Ppc64 => "ppc64",
            Abi::S390x => "s390x",
        }
    }

    /// The ELF machine and class (64-bit or not) of this ABI's executables.
    pub fn elf(self) -> (u16, bool) {
        match self {
            Abi::X86_64 => (machine::X86_64, true),
            Abi::I386 => (machine::I386, false),
            Abi::Aarch64 => (machine::AARCH64, true),
            Abi::Arm => (machine::ARM, false),
            Abi::Riscv64 => (machine::RISCV, true),
            Abi::Ppc64 => (machine::PPC64, true),
            Abi::S390x => (machine::S390, true),
        }
    }

    /// Whether this ABI's vDSO is meant to offer `f` ([`VDSO_ABIS`], from
    /// the kernel's `vdso.lds.S`): arm64's has no `time` and no `getcpu`
    /// by design, so a C library serves them otherwise (time() through
    /// clock_gettime, getcpu as a syscall) and that is no finding.
    /// riscv64's getcpu entry is exported but makes the syscall by design
    /// ([`VdsoSymbol::fast`]): not offered either.
    pub fn vdso_offers(self, f: VdsoFn) -> bool {
        let (machine, is_64) = self.elf();
        vdso_symbol_row(machine, is_64, f).is_some_and(|s| s.fast)
    }

    /// How this ABI's vDSO functions say an error ([`VdsoErrors`]).
    pub const fn vdso_errors(self) -> VdsoErrors {
        match self {
            Abi::Ppc64 => VdsoErrors::PositiveErrno,
            Abi::X86_64 | Abi::I386 | Abi::Aarch64 | Abi::Arm | Abi::Riscv64 | Abi::S390x => VdsoErrors::NegativeErrno,
        }
    }

    /// The 64-bit ABI whose vDSO table answers for this one: the compat vDSO
    /// is built from the same generic code as its 64-bit sibling.
    pub fn native(self) -> Abi {
        match self {
            Abi::I386 => Abi::X86_64,
            Abi::Arm => Abi::Aarch64,
            other => other,
        }
    }

    /// The 32-bit ABI a 64-bit kernel of this ABI runs compat processes with.
    /// Their syscalls fire `raw_syscalls:*` with these numbers, never the
    /// per-syscall `syscalls:*` tracepoints.
    pub fn compat(self) -> Option<Abi> {
        match self {
            Abi::X86_64 => Some(Abi::I386),
            Abi::Aarch64 => Some(Abi::Arm),
            _ => None,
        }
    }

    /// The syscalls behind this ABI's vDSO functions and their numbers
    /// (`arch/*/entry/syscalls/*.tbl`, `include/uapi/asm-generic/unistd.h`).
    pub fn vdso_syscalls(self) -> &'static [(VdsoFn, i64)] {
        match self {
            Abi::X86_64 => &[
                (VdsoFn::ClockGettime, 228),
                (VdsoFn::Gettimeofday, 96),
                (VdsoFn::Time, 201),
                (VdsoFn::ClockGetres, 229),
                (VdsoFn::Getcpu, 309),
                (VdsoFn::Getrandom, 318),
                (VdsoFn::FutexRobustList64TryUnlock, 202),
                (VdsoFn::FutexRobustList32TryUnlock, 202),
            ],
            Abi::I386 => &[
                (VdsoFn::ClockGettime, 265),
                (VdsoFn::ClockGettime64, 403),
                (VdsoFn::Gettimeofday, 78),
                (VdsoFn::Time, 13),
                (VdsoFn::ClockGetres, 266),
                (VdsoFn::ClockGetresTime64, 406),
                (VdsoFn::Getcpu, 318),
                (VdsoFn::Getrandom, 355),
                (VdsoFn::FutexRobustList64TryUnlock, 240),
                (VdsoFn::FutexRobustList32TryUnlock, 240),
            ],
            Abi::Aarch64 | Abi::Riscv64 => &[
                (VdsoFn::ClockGettime, 113),
                (VdsoFn::Gettimeofday, 169),
                (VdsoFn::ClockGetres, 114),
                (VdsoFn::Getcpu, 168),
                (VdsoFn::Getrandom, 278),
            ],
            Abi::Arm => &[
                (VdsoFn::ClockGettime, 263),
                (VdsoFn::ClockGettime64, 403),
                (VdsoFn::Gettimeofday, 78),
                (VdsoFn::ClockGetres, 264),
                (VdsoFn::ClockGetresTime64, 406),
                (VdsoFn::Getcpu, 345),
                (VdsoFn::Getrandom, 384),
            ],
            // arch/powerpc/kernel/syscalls/syscall.tbl
            Abi::Ppc64 => &[
                (VdsoFn::ClockGettime, 246),
                (VdsoFn::Gettimeofday, 78),
                (VdsoFn::Time, 13),
                (VdsoFn::ClockGetres, 247),
                (VdsoFn::Getcpu, 302),
                (VdsoFn::Getrandom, 359),
            ],
            // arch/s390/kernel/syscalls/syscall.tbl: no 64-bit `time`
            Abi::S390x => &[
                (VdsoFn::ClockGettime, 260),
                (VdsoFn::Gettimeofday, 78),
                (VdsoFn::ClockGetres, 261),
                (VdsoFn::Getcpu, 311),
                (VdsoFn::Getrandom, 349),
            ],
        }
    }

    /// The kernel functions behind this ABI's clock syscalls on an x86_64
    /// kernel, where an `fentry` program can attach (`__x64_sys_*` and
    /// `__ia32_*`: each takes the syscall's `const struct pt_regs *`;
    /// `arch/x86/entry/syscalls/syscall_{64,32}.tbl`). Empty where the
    /// fentry engine does not know the names.
    pub fn syscall_functions(self) -> &'static [(VdsoFn, &'static str)] {
        match self {
            Abi::X86_64 => &[
                (VdsoFn::ClockGettime, "__x64_sys_clock_gettime"),
                (VdsoFn::Gettimeofday, "__x64_sys_gettimeofday"),
                (VdsoFn::Time, "__x64_sys_time"),
                (VdsoFn::ClockGetres, "__x64_sys_clock_getres"),
                (VdsoFn::Getcpu, "__x64_sys_getcpu"),
                (VdsoFn::Getrandom, "__x64_sys_getrandom"),
                // One program each on the same function, each on its op.
                (VdsoFn::FutexRobustList64TryUnlock, "__x64_sys_futex"),
                (VdsoFn::FutexRobustList32TryUnlock, "__x64_sys_futex"),
            ],
            Abi::I386 => &[
                (VdsoFn::ClockGettime, "__ia32_sys_clock_gettime32"),
                (VdsoFn::ClockGettime64, "__ia32_sys_clock_gettime"),
                (VdsoFn::Gettimeofday, "__ia32_compat_sys_gettimeofday"),
                (VdsoFn::Time, "__ia32_sys_time32"),
                (VdsoFn::ClockGetres, "__ia32_sys_clock_getres_time32"),
                (VdsoFn::ClockGetresTime64, "__ia32_sys_clock_getres"),
                (VdsoFn::Getcpu, "__ia32_sys_getcpu"),
                (VdsoFn::Getrandom, "__ia32_sys_getrandom"),
                // i386's 240 is futex_time32 (422, futex_time64, is `__ia32_sys_futex`).
                (VdsoFn::FutexRobustList64TryUnlock, "__ia32_sys_futex_time32"),
                (VdsoFn::FutexRobustList32TryUnlock, "__ia32_sys_futex_time32"),
            ],
            _ => &[],
        }
    }

    /// The function behind a syscall number of this ABI, if the vDSO can
    /// serve it and the number alone says which (not `futex`: see
    /// [`Abi::vdso_call`]).
    pub fn vdso_syscall(self, nr: i64) -> Option<VdsoFn> {
        self.vdso_syscalls().iter().find(|(f, n)| *n == nr && f.futex_op().is_none()).map(|(f, _)| *f)
    }

    /// The function behind a syscall of this ABI, by its number and its
    /// second argument (a futex call's op: a robust unlock's fallback
    /// carries `FUTEX_ROBUST_UNLOCK`; any other futex call is none).
    pub fn vdso_call(self, nr: i64, arg1: u64) -> Option<VdsoFn> {
        let op = arg1 as u32;
        self.vdso_syscalls()
            .iter()
            .find(|(f, n)| *n == nr && f.futex_op().is_none_or(|m| op & m.mask == m.value))
            .map(|(f, _)| *f)
    }

    /// The numbers of this ABI's vDSO syscalls, each once (the two
    /// robust-futex unlocks share `futex`'s).
    pub fn vdso_numbers(self) -> Vec<i64> {
        let mut nrs: Vec<i64> = self.vdso_syscalls().iter().map(|(_, n)| *n).collect();
        nrs.sort_unstable();
        nrs.dedup();
        nrs
    }

    /// The number of a vDSO function's syscall in this ABI.
    pub fn syscall_nr(self, f: VdsoFn) -> Option<i64> {
        self.vdso_syscalls().iter().find(|(g, _)| *g == f).map(|(_, n)| *n)
    }

    /// Every ABI vdsoctl knows.
    pub const ALL: [Abi; 7] = [Abi::X86_64, Abi::I386, Abi::Aarch64, Abi::Arm, Abi::Riscv64, Abi::Ppc64, Abi::S390x];

    /// Whether this ABI's processes are little-endian: s390x never is;
    /// ppc64 is as this build is on POWER (a ppc64el kernel runs no
    /// big-endian processes, a big-endian one no little-endian ones) and
    /// little-endian elsewhere (Debian's ppc64el).
    pub const fn little_endian(self) -> bool {
        match self {
            Abi::X86_64 | Abi::I386 | Abi::Aarch64 | Abi::Arm | Abi::Riscv64 => true,
            Abi::Ppc64 => !cfg!(target_arch = "powerpc64") || HOST_LITTLE_ENDIAN,
            Abi::S390x => false,
        }
    }

    /// The `AUDIT_ARCH_*` value seccomp reports for a syscall made with this
    /// ABI (`include/uapi/linux/audit.h`: EM_* | 64BIT | LE, the last only
    /// for a little-endian ABI: `AUDIT_ARCH_S390X` is `0x80000016`).
    pub fn audit_arch(self) -> u32 {
        const ARCH_64: u32 = 0x8000_0000;
        const LE: u32 = 0x4000_0000;
        let (machine, is_64) = self.elf();
        u32::from(machine) | if is_64 { ARCH_64 } else { 0 } | if self.little_endian() { LE } else { 0 }
    }

    /// The ABI behind an `AUDIT_ARCH_*` value, among the ones vdsoctl knows
    /// (`AUDIT_ARCH_PPC64` and `AUDIT_ARCH_PPC64LE` both ppc64).
    pub fn from_audit_arch(arch: u32) -> Option<Abi> {
        const LE: u32 = 0x4000_0000;
        Abi::ALL.into_iter().find(|a| a.audit_arch() == arch || (*a == Abi::Ppc64 && a.audit_arch() ^ LE == arch))
    }

    /// The number of seccomp(2) in this ABI's table (a command installing
    /// a filter of its own is seen by the seccomp engine through it).
    pub fn seccomp_syscall(self) -> i64 {
        match self {
            Abi::X86_64 => 317,
            Abi::I386 => 354,
            Abi::Aarch64 | Abi::Riscv64 => 277,
            Abi::Arm => 383,
            Abi::Ppc64 => 358,
            Abi::S390x => 348,
        }
    }

    /// ptrace(2)'s number: the seccomp engine's ptrace channel watches it
    /// (a program of the tree that ptraces finds its tasks traced).
    pub fn ptrace_syscall(self) -> i64 {
        match self {
            Abi::X86_64 => 101,
            Abi::Aarch64 | Abi::Riscv64 => 117,
            Abi::I386 | Abi::Arm | Abi::Ppc64 | Abi::S390x => 26,
        }
    }

    /// The syscall glibc 2.41 maps its `MAP_DROPPABLE` getrandom state
    /// with, and its number: `mmap`, or `mmap2` on 32-bit ABIs.
    pub fn mmap_syscall(self) -> (&'static str, i64) {
        match self {
            Abi::X86_64 => ("mmap", 9),
            Abi::I386 | Abi::Arm => ("mmap2", 192),
            Abi::Aarch64 | Abi::Riscv64 => ("mmap", 222),
            Abi::Ppc64 | Abi::S390x => ("mmap", 90),
        }
    }

    /// The syscall-number bit of x32 tasks (`__X32_SYSCALL_BIT`): they run
    /// with the x86_64 audit arch and x86_64's numbers with this bit set.
    pub fn x32_bit(self) -> Option<i64> {
        (self == Abi::X86_64).then_some(0x4000_0000)
    }
}

/// Whether this build's raw `clone(2)` takes the new stack pointer before
/// the flags: s390 (`CONFIG_CLONE_BACKWARDS2`); every other architecture
/// vdsoctl builds for takes the flags first.
pub const CLONE_STACK_FIRST: bool = cfg!(target_arch = "s390x");

/// The ABI vdsoctl itself runs with.
pub const HOST_ABI: Option<Abi> = if cfg!(target_arch = "x86_64") {
    Some(Abi::X86_64)
} else if cfg!(target_arch = "x86") {
    Some(Abi::I386)
} else if cfg!(target_arch = "aarch64") {
    Some(Abi::Aarch64)
} else if cfg!(target_arch = "arm") {
    Some(Abi::Arm)
} else if cfg!(target_arch = "riscv64") {
    Some(Abi::Riscv64)
} else if cfg!(target_arch = "powerpc64") {
    Some(Abi::Ppc64)
} else if cfg!(target_arch = "s390x") {
    Some(Abi::S390x)
} else {
    None
};

/// A member of a kernel structure the BPF engine reads, by its BTF path,
/// and the byte within it where the value starts (an array's element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelMember {
    /// The path from the structure (`["thread_info", "flags"]`).
    pub path: &'static [&'static str],
    /// Bytes into the member (`regs[0]`: 0).
    pub part: u32,
}

/// What the in-kernel (BPF) trace engine reads at a syscall's entry on a
/// 64-bit kernel of one ABI: the `pt_regs` member holding the first
/// argument of a native and of a compat syscall, and the `task_struct`
/// member and bit that mark a compat one. The syscall number is the
/// `sys_enter` tracepoint's `id` argument on every architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyscallEntry {
    /// `pt_regs` member with a native syscall's first argument.
    pub arg0_native: KernelMember,
    /// `pt_regs` member with a compat syscall's first argument.
    pub arg0_compat: KernelMember,
    /// The second and third arguments, native and compat (getrandom's
    /// size and flags).
    pub args12_native: [KernelMember; 2],
    pub args12_compat: [KernelMember; 2],
    /// `pt_regs` member with the user instruction pointer (getrandom: was
    /// the syscall made inside the vDSO?).
    pub user_ip: &'static [&'static str],
    /// `task_struct` member whose bit marks a compat syscall.
    pub compat_flags: KernelMember,
    /// That bit's mask.
    pub compat_mask: u32,
    /// Whether the kernel emulates a vsyscall page (`vsyscall:emulate_vsyscall`).
    pub vsyscall: bool,
}

/// x86_64: `di`/`bx`, and `thread_info.status & TS_COMPAT` — what
/// `in_ia32_syscall()` tests, set for each syscall: it also covers
/// `int 0x80` from 64-bit code, which a code-segment test misses.
const X86_64_ENTRY: SyscallEntry = SyscallEntry {
    arg0_native: KernelMember { path: &["di"], part: 0 },
    arg0_compat: KernelMember { path: &["bx"], part: 0 },
    args12_native: [KernelMember { path: &["si"], part: 0 }, KernelMember { path: &["dx"], part: 0 }],
    args12_compat: [KernelMember { path: &["cx"], part: 0 }, KernelMember { path: &["dx"], part: 0 }],
    user_ip: &["ip"],
    compat_flags: KernelMember { path: &["thread_info", "status"], part: 0 },
    compat_mask: 0x0002,
    vsyscall: true,
};

/// Where a syscall was made from, as the kernel's `pt_regs` has it at the
/// syscall's entry (`trace --sites`): the user instruction pointer, which
/// points past the instruction, and the stack pointer, at which a call
/// instruction left the return address (x86: a leaf wrapper such as libc's
/// `syscall()` has not moved it).
#[derive(Debug, Clone, Copy)]
pub struct SiteRegs {
    /// `pt_regs` member with the user instruction pointer.
    pub ip: &'static str,
    /// `pt_regs` member with the user stack pointer.
    pub sp: &'static str,
    /// Bytes of the syscall instruction, to go back from `ip` to the
    /// instruction itself (`syscall`, `int 0x80`, and the `int 0x80`
    /// landing pad of `__kernel_vsyscall` `sysenter` returns through: 2).
    pub insn_len: u64,
}

/// The host's [`SiteRegs`], where the BPF engine knows them.
pub const SITE_REGS: Option<SiteRegs> =
    if cfg!(target_arch = "x86_64") { Some(SiteRegs { ip: "ip", sp: "sp", insn_len: 2 }) } else { None };

/// Where a ptrace tracer sets a stopped call's number and return value
/// to skip it (`PTRACE_POKEUSER` byte offsets in `struct user_regs_struct`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkipRegs {
    /// The syscall number the kernel dispatches on (x86: `orig_ax`).
    pub nr: usize,
    /// The return value (x86: `ax`).
    pub ret: usize,
}

/// The host's [`SkipRegs`]: x86_64's `orig_rax` (15th word) and `rax`
/// (10th), for 64-bit and compat tracees alike. Elsewhere the seccomp
/// engine asks `PTRACE_SET_SYSCALL_INFO` (Linux 6.16).
pub const SKIP_REGS: Option<SkipRegs> =
    if cfg!(target_arch = "x86_64") { Some(SkipRegs { nr: 15 * 8, ret: 10 * 8 }) } else { None };

/// arm64: `regs[0]` in both ABIs (AArch32's r0 is saved in x0), and
/// `thread_info.flags & _TIF_32BIT` (bit 22, `asm/thread_info.h`): an
/// AArch32 task makes only AArch32 syscalls, so the task flag is exact.
const AARCH64_ENTRY: SyscallEntry = SyscallEntry {
    arg0_native: KernelMember { path: &["regs"], part: 0 },
    arg0_compat: KernelMember { path: &["regs"], part: 0 },
    args12_native: [KernelMember { path: &["regs"], part: 8 }, KernelMember { path: &["regs"], part: 16 }],
    args12_compat: [KernelMember { path: &["regs"], part: 8 }, KernelMember { path: &["regs"], part: 16 }],
    user_ip: &["pc"],
    compat_flags: KernelMember { path: &["thread_info", "flags"], part: 0 },
    compat_mask: 1 << 22,
    vsyscall: false,
};

/// riscv64: `orig_a0`, `a1`, `a2`, `epc`. `do_trap_ecall_u` saves a0 in
/// `orig_a0` and sets a0 to -ENOSYS before `sys_enter` (seen in the kernel
/// matrix on 6.12: a0 read every MONOTONIC call as a CPU-time clock, -38).
/// No compat ABI is traced (vdsoctl knows no rv32 one): the mask is 0.
const RISCV64_ENTRY: SyscallEntry = SyscallEntry {
    arg0_native: KernelMember { path: &["orig_a0"], part: 0 },
    arg0_compat: KernelMember { path: &["orig_a0"], part: 0 },
    args12_native: [KernelMember { path: &["a1"], part: 0 }, KernelMember { path: &["a2"], part: 0 }],
    args12_compat: [KernelMember { path: &["a1"], part: 0 }, KernelMember { path: &["a2"], part: 0 }],
    user_ip: &["epc"],
    compat_flags: KernelMember { path: &["thread_info", "flags"], part: 0 },
    compat_mask: 0,
    vsyscall: false,
};

/// ppc64: `gpr[3]`..`gpr[5]` (r3 holds the first argument, and the
/// return value only after the call), `nip`. No compat ABI traced
/// (ppc64el has no 32-bit user space): mask 0.
const PPC64_ENTRY: SyscallEntry = SyscallEntry {
    arg0_native: KernelMember { path: &["gpr"], part: 24 },
    arg0_compat: KernelMember { path: &["gpr"], part: 24 },
    args12_native: [KernelMember { path: &["gpr"], part: 32 }, KernelMember { path: &["gpr"], part: 40 }],
    args12_compat: [KernelMember { path: &["gpr"], part: 32 }, KernelMember { path: &["gpr"], part: 40 }],
    user_ip: &["nip"],
    compat_flags: KernelMember { path: &["thread_info", "flags"], part: 0 },
    compat_mask: 0,
    vsyscall: false,
};

/// s390x: `orig_gpr2` holds the first argument (`do_syscall` has put the
/// syscall number in `gprs[2]` by `sys_enter`), `gprs[3]` and `gprs[4]`
/// the next; the user address is `psw.addr`. No compat ABI traced: mask 0.
const S390X_ENTRY: SyscallEntry = SyscallEntry {
    arg0_native: KernelMember { path: &["orig_gpr2"], part: 0 },
    arg0_compat: KernelMember { path: &["orig_gpr2"], part: 0 },
    args12_native: [KernelMember { path: &["gprs"], part: 24 }, KernelMember { path: &["gprs"], part: 32 }],
    args12_compat: [KernelMember { path: &["gprs"], part: 24 }, KernelMember { path: &["gprs"], part: 32 }],
    user_ip: &["psw", "addr"],
    compat_flags: KernelMember { path: &["thread_info", "flags"], part: 0 },
    compat_mask: 0,
    vsyscall: false,
};

/// What `top`'s sampler reads on a kernel of one ABI: a perf_event BPF
/// program's context starts with the interrupted registers
/// (`bpf_user_pt_regs_t`), and in a kernel-mode sample the task's own user
/// registers (`bpf_task_pt_regs`) hold the syscall it is inside. Members by
/// their `pt_regs` names, offsets from BTF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRegs {
    /// The instruction pointer.
    pub ip: &'static str,
    /// The member whose low bits say the privilege level, and the mask and
    /// value of user mode (x86: `cs & 3 == 3`).
    pub mode: &'static str,
    pub user_mask: i32,
    pub user_value: i32,
    /// `mode`'s value (under 0xffff) in a 32-bit (compat) user task: its
    /// [vdso] is the compat image.
    pub compat_mode: i32,
    /// The syscall number at the syscall's entry (-1 outside a syscall:
    /// an interrupt or exception frame).
    pub nr: &'static str,
}

/// x86_64: `cs` (`__USER_CS` 0x33, `__USER32_CS` 0x23), `orig_ax`.
const X86_64_SAMPLE: SampleRegs =
    SampleRegs { ip: "ip", mode: "cs", user_mask: 3, user_value: 3, compat_mode: 0x23, nr: "orig_ax" };

impl Abi {
    /// The syscall entry facts of a kernel of this ABI, where the BPF
    /// engine knows them (a 32-bit kernel: none, the engine refuses it
    /// by name).
    pub fn syscall_entry(self) -> Option<SyscallEntry> {
        match self {
            Abi::X86_64 => Some(X86_64_ENTRY),
            Abi::Aarch64 => Some(AARCH64_ENTRY),
            Abi::Riscv64 => Some(RISCV64_ENTRY),
            Abi::Ppc64 => Some(PPC64_ENTRY),
            Abi::S390x => Some(S390X_ENTRY),
            Abi::I386 | Abi::Arm => None,
        }
    }

    /// What `top`'s sampler reads on a kernel of this ABI, where it knows
    /// it (arm64's perf_event context is `user_pt_regs`, not `pt_regs`).
    pub fn sample_regs(self) -> Option<SampleRegs> {
        match self {
            Abi::X86_64 => Some(X86_64_SAMPLE),
            _ => None,
        }
    }

    /// The native ABI of a kernel whose `uname -m` is `machine`: what the
    /// kernel's syscall tracepoints number by, whatever this binary was
    /// built for (an i386 or armhf vdsoctl on a 64-bit kernel).
    pub fn of_kernel(machine: &str) -> Option<Abi> {
        match machine {
            "x86_64" => Some(Abi::X86_64),
            "i386" | "i486" | "i586" | "i686" => Some(Abi::I386),
            "aarch64" => Some(Abi::Aarch64),
            m if m.starts_with("armv") => Some(Abi::Arm),
            "riscv64" => Some(Abi::Riscv64),
            "ppc64le" | "ppc64" => Some(Abi::Ppc64),
            "s390x" => Some(Abi::S390x),
            _ => None,
        }
    }
}

/// A C library or language runtime, as far as routing vDSO calls goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    Glibc,
    Musl,
    /// Go's runtime and standard library (static programs make their own calls).
    Go,
    /// The rustix crate (its `linux_raw` backend finds the vDSO itself).
    Rustix,
    /// The `getrandom` crate (its backend by release).
    GetrandomCrate,
    /// Zig's standard library (its own vDSO lookup without libc).
    Zig,
    /// OpenSSL's libcrypto (its DRBG seeds itself).
    Openssl,
    /// libuv (`uv_random`; Node embeds it).
    Libuv,
    /// CPython (`os.urandom`, `time`).
    Cpython,
    /// .NET's runtime (`System.Native`).
    Dotnet,
}

impl Runtime {
    /// Its name in output.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Glibc => "glibc",
            Runtime::Musl => "musl",
            Runtime::Go => "Go",
            Runtime::Rustix => "rustix",
            Runtime::GetrandomCrate => "the getrandom crate",
            Runtime::Zig => "Zig std",
            Runtime::Openssl => "OpenSSL",
            Runtime::Libuv => "libuv",
            Runtime::Cpython => "CPython",
            Runtime::Dotnet => ".NET",
        }
    }
}

/// How a runtime reaches one vDSO function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub function: VdsoFn,
    pub runtime: Runtime,
    /// The first (major, minor) release that calls it through the vDSO;
    /// `None`: no release does (a syscall every call).
    pub since: Option<(u32, u32)>,
    /// The machines (ELF `e_machine`, 64-bit) it does so on.
    pub machines: &'static [u16],
    /// The entry points this is about, as a user knows them.
    pub entry: &'static str,
    /// Entry points of the same runtime that never take the vDSO.
    pub never: &'static str,
}

/// The 64-bit machines whose vDSO getrandom glibc 2.41 and Go 1.24 bind
/// (glibc's `sysdeps/unix/sysv/linux/*/dl-vdso-setup`, Go's
/// `runtime/vgetrandom_linux_*.go`): x86_64, arm64, loongarch64, ppc64, s390x.
const RANDOM_MACHINES: &[u16] = &[machine::X86_64, machine::AARCH64, machine::LOONGARCH, machine::PPC64, machine::S390];

/// Which runtimes call which function through the vDSO, from which
/// release. Getrandom, and i386's `clock_getres_time64` (Linux 7.0's
/// compat vDSO has it; no glibc release looks it up: its `clock_getres`
/// makes the syscall): every other glibc, musl and Go clock call goes
/// through the vDSO, and the clock verdicts are about syscalls seen, not
/// versions.
pub const ROUTES: &[Route] = &[
    Route {
        function: VdsoFn::ClockGetresTime64,
        runtime: Runtime::Glibc,
        since: None,
        machines: &[],
        entry: "clock_getres() on i386",
        never: "",
    },
    Route {
        function: VdsoFn::Getrandom,
        runtime: Runtime::Glibc,
        since: Some((2, 41)),
        machines: RANDOM_MACHINES,
        entry: "getrandom(), arc4random()",
        never: "getentropy()",
    },
    Route {
        function: VdsoFn::Getrandom,
        runtime: Runtime::Go,
        since: Some((1, 24)),
        machines: RANDOM_MACHINES,
        entry: "crypto/rand",
        never: "",
    },
    Route {
        function: VdsoFn::Getrandom,
        runtime: Runtime::Musl,
        since: None,
        machines: &[],
        entry: "getrandom()",
        never: "",
    },
];

/// How `runtime` reaches `function`, where the table says.
pub fn route(function: VdsoFn, runtime: Runtime) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.function == function && r.runtime == runtime)
}

/// The x86_64 legacy vsyscall page (`arch/x86/entry/vsyscall/vsyscall_64.c`):
/// fixed address, one 1024-byte slot per function.
pub mod vsyscall {
    /// Start of the page.
    pub const BASE: u64 = 0xffff_ffff_ff60_0000;
    /// `gettimeofday` slot.
    pub const GETTIMEOFDAY: u64 = BASE;
    /// `time` slot.
    pub const TIME: u64 = BASE + 0x400;
    /// `getcpu` slot.
    pub const GETCPU: u64 = BASE + 0x800;
    /// The function of each slot, by the number `vsyscall:emulate_vsyscall` reports.
    pub const SLOTS: [super::VdsoFn; 3] = [super::VdsoFn::Gettimeofday, super::VdsoFn::Time, super::VdsoFn::Getcpu];
}

mod auxv;
mod runtimes;
pub use auxv::{auxv_name, decode_hwcap, hwcap_bits};
pub use runtimes::{path_of, Marker, PathRow, RoutePath, Signature, PATHS, SIGNATURES};
mod clocks;
mod exports;
pub use clocks::{
    aux_enable_path, clock_info, clock_name, dynamic_class, is_aux_clock, parse_clock, vdso_serves, AuxClocks,
    AuxState, ClockClass, ClockInfo, AUX_CLOCKS, CLOCKS, CLOCK_AUX,
};
pub use exports::{
    export_role, vdso_abi, vdso_symbol, vdso_symbol_row, ExportRole, NotASyscall, VdsoAbi, VdsoSymbol, OTHER_EXPORTS,
    VDSO_ABIS,
};

#[cfg(test)]
mod tests;
