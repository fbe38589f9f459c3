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

impl ClockInfo {
    /// The first kernel whose vDSO serves this clock on `machine`, if any.
    pub fn vdso_since(&self, machine: u16) -> Option<(u32, u32)> {
        match machine {
            machine::X86_64 => self.x86_64_since,
            machine::AARCH64 => self.aarch64_since,
            _ => None,
        }
    }
}

/// The auxiliary clocks (`CLOCK_AUX` .. `CLOCK_AUX_LAST`,
/// `include/uapi/linux/time.h`): ids 16–23, each enabled through
/// /sys/kernel/time/aux_clocks/N; the generic vDSO serves them since 6.17
/// (`vdso/auxclock.h`). Not in [`CLOCKS`]: nothing benches or audits them.
pub const CLOCK_AUX: i64 = 16;
/// How many auxiliary clocks there are (`MAX_AUX_CLOCKS`).
pub const AUX_CLOCKS: i64 = 8;
/// The first kernel whose generic vDSO (x86_64, arm64) serves them.
const AUX_VDSO_SINCE: (u32, u32) = (6, 17);

/// Whether `id` is an auxiliary clock.
pub fn is_aux_clock(id: i64) -> bool {
    (CLOCK_AUX..CLOCK_AUX + AUX_CLOCKS).contains(&id)
}

/// Whether the vDSO of a kernel of version `kernel` on `machine` serves clock
/// `id` in user space (CPU-time, alarm and unknown clocks: never). An unknown
/// kernel version is taken as new enough.
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

/// A function a vDSO may serve. Adding one: a row here, and the compiler
/// names every place that must decide (no match has a wildcard arm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VdsoFn {
    ClockGettime,
    ClockGettime64,
    Gettimeofday,
    Time,
    ClockGetres,
    ClockGetresTime64,
    Getcpu,
    /// Random bytes (Linux 6.11 on x86_64, 6.12 on arm64, powerpc, s390
    /// and loongarch, 6.16 on riscv64): the vDSO fills the buffer from a
    /// per-thread state the caller maps (`MAP_DROPPABLE`), and enters the
    /// kernel itself only to refill that state's key.
    Getrandom,
}

impl VdsoFn {
    /// Every function, in the order of the enum. The array's length is the
    /// number of variants: [`VdsoFn::index`] fails to build when a variant
    /// is missing here.
    pub const ALL: [VdsoFn; 8] = [
        VdsoFn::ClockGettime,
        VdsoFn::ClockGettime64,
        VdsoFn::Gettimeofday,
        VdsoFn::Time,
        VdsoFn::ClockGetres,
        VdsoFn::ClockGetresTime64,
        VdsoFn::Getcpu,
        VdsoFn::Getrandom,
    ];

    /// The function's place in [`VdsoFn::ALL`] (exhaustive: a new variant
    /// must be given its place).
    pub const fn index(self) -> usize {
        match self {
            VdsoFn::ClockGettime => 0,
            VdsoFn::ClockGettime64 => 1,
            VdsoFn::Gettimeofday => 2,
            VdsoFn::Time => 3,
            VdsoFn::ClockGetres => 4,
            VdsoFn::ClockGetresTime64 => 5,
            VdsoFn::Getcpu => 6,
            VdsoFn::Getrandom => 7,
        }
    }

    /// What the function serves: a clock read, the CPU number, or random
    /// bytes (decides the words and which verdicts apply).
    pub const fn kind(self) -> FnKind {
        match self {
            VdsoFn::ClockGettime
            | VdsoFn::ClockGettime64
            | VdsoFn::Gettimeofday
            | VdsoFn::Time
            | VdsoFn::ClockGetres
            | VdsoFn::ClockGetresTime64 => FnKind::Clock,
            VdsoFn::Getcpu => FnKind::Cpu,
            VdsoFn::Getrandom => FnKind::Random,
        }
    }

    /// The function of a C name (`clock_gettime`).
    pub fn from_name(name: &str) -> Option<VdsoFn> {
        VdsoFn::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The C name of the function / syscall.
    pub fn name(self) -> &'static str {
        match self {
            VdsoFn::ClockGettime => "clock_gettime",
            VdsoFn::ClockGettime64 => "clock_gettime64",
            VdsoFn::Gettimeofday => "gettimeofday",
            VdsoFn::Time => "time",
            VdsoFn::ClockGetres => "clock_getres",
            VdsoFn::ClockGetresTime64 => "clock_getres_time64",
            VdsoFn::Getcpu => "getcpu",
            VdsoFn::Getrandom => "getrandom",
        }
    }

    /// The C library's function for this call (what a program should call
    /// rather than the raw syscall; the time64 syscalls are libc's
    /// `clock_gettime` and `clock_getres` on 32-bit targets).
    pub fn libc_function(self) -> &'static str {
        match self {
            VdsoFn::ClockGettime | VdsoFn::ClockGettime64 => "clock_gettime",
            VdsoFn::ClockGetres | VdsoFn::ClockGetresTime64 => "clock_getres",
            VdsoFn::Gettimeofday => "gettimeofday",
            VdsoFn::Time => "time",
            VdsoFn::Getcpu => "sched_getcpu",
            VdsoFn::Getrandom => "getrandom",
        }
    }

    /// Whether the function's first argument is a clock id.
    pub fn takes_clock(self) -> bool {
        match self {
            VdsoFn::ClockGettime | VdsoFn::ClockGettime64 | VdsoFn::ClockGetres | VdsoFn::ClockGetresTime64 => true,
            VdsoFn::Gettimeofday | VdsoFn::Time | VdsoFn::Getcpu | VdsoFn::Getrandom => false,
        }
    }
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
        }
    }

    /// Whether this ABI's vDSO is meant to offer `f` ([`VDSO_ABIS`], from
    /// the kernel's `vdso.lds.S`): arm64's has no `time` and no `getcpu`
    /// by design, so a C library serves them otherwise (time() through
    /// clock_gettime, getcpu as a syscall) and that is no finding.
    pub fn vdso_offers(self, f: VdsoFn) -> bool {
        let (machine, is_64) = self.elf();
        vdso_symbol(machine, is_64, f).is_some()
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
            ],
            _ => &[],
        }
    }

    /// The function behind a syscall number of this ABI, if the vDSO can serve it.
    pub fn vdso_syscall(self, nr: i64) -> Option<VdsoFn> {
        self.vdso_syscalls().iter().find(|(_, n)| *n == nr).map(|(f, _)| *f)
    }

    /// The number of a vDSO function's syscall in this ABI.
    pub fn syscall_nr(self, f: VdsoFn) -> Option<i64> {
        self.vdso_syscalls().iter().find(|(g, _)| *g == f).map(|(_, n)| *n)
    }

    /// The `AUDIT_ARCH_*` value seccomp reports for a syscall made with this
    /// ABI (`include/uapi/linux/audit.h`: EM_* | 64BIT | LE).
    pub fn audit_arch(self) -> u32 {
        const ARCH_64: u32 = 0x8000_0000;
        const LE: u32 = 0x4000_0000;
        let (machine, is_64) = self.elf();
        u32::from(machine) | if is_64 { ARCH_64 } else { 0 } | LE
    }

    /// The ABI behind an `AUDIT_ARCH_*` value, among the ones vdsoctl knows.
    pub fn from_audit_arch(arch: u32) -> Option<Abi> {
        [Abi::X86_64, Abi::I386, Abi::Aarch64, Abi::Arm, Abi::Riscv64].into_iter().find(|a| a.audit_arch() == arch)
    }

    /// The number of seccomp(2) in this ABI's table (a command installing
    /// a filter of its own is seen by the seccomp engine through it).
    pub fn seccomp_syscall(self) -> i64 {
        match self {
            Abi::X86_64 => 317,
            Abi::I386 => 354,
            Abi::Aarch64 | Abi::Riscv64 => 277,
            Abi::Arm => 383,
        }
    }

    /// The syscall glibc 2.41 maps its `MAP_DROPPABLE` getrandom state
    /// with, and its number: `mmap`, or `mmap2` on 32-bit ABIs.
    pub fn mmap_syscall(self) -> (&'static str, i64) {
        match self {
            Abi::X86_64 => ("mmap", 9),
            Abi::I386 | Abi::Arm => ("mmap2", 192),
            Abi::Aarch64 | Abi::Riscv64 => ("mmap", 222),
        }
    }

    /// The syscall-number bit of x32 tasks (`__X32_SYSCALL_BIT`): they run
    /// with the x86_64 audit arch and x86_64's numbers with this bit set.
    pub fn x32_bit(self) -> Option<i64> {
        (self == Abi::X86_64).then_some(0x4000_0000)
    }
}

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
    pub user_ip: &'static str,
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
    user_ip: "ip",
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

/// arm64: `regs[0]` in both ABIs (AArch32's r0 is saved in x0), and
/// `thread_info.flags & _TIF_32BIT` (bit 22, `asm/thread_info.h`): an
/// AArch32 task makes only AArch32 syscalls, so the task flag is exact.
const AARCH64_ENTRY: SyscallEntry = SyscallEntry {
    arg0_native: KernelMember { path: &["regs"], part: 0 },
    arg0_compat: KernelMember { path: &["regs"], part: 0 },
    args12_native: [KernelMember { path: &["regs"], part: 8 }, KernelMember { path: &["regs"], part: 16 }],
    args12_compat: [KernelMember { path: &["regs"], part: 8 }, KernelMember { path: &["regs"], part: 16 }],
    user_ip: "pc",
    compat_flags: KernelMember { path: &["thread_info", "flags"], part: 0 },
    compat_mask: 1 << 22,
    vsyscall: false,
};

impl Abi {
    /// The syscall entry facts of a kernel of this ABI, where the BPF
    /// engine knows them.
    pub fn syscall_entry(self) -> Option<SyscallEntry> {
        match self {
            Abi::X86_64 => Some(X86_64_ENTRY),
            Abi::Aarch64 => Some(AARCH64_ENTRY),
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
            _ => None,
        }
    }
}

/// A vDSO symbol a C library binds, with the version it binds.
#[derive(Debug, Clone, Copy)]
pub struct VdsoSymbol {
    pub function: VdsoFn,
    pub name: &'static str,
    /// (major, minor) of the first kernel whose vDSO on this architecture
    /// exports it; `None`: as old as this vDSO's clock functions.
    pub since: Option<(u32, u32)>,
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
    VdsoSymbol { function, name, since: None }
}

/// A symbol a later kernel added to the vDSO.
const fn sym_since(function: VdsoFn, name: &'static str, since: (u32, u32)) -> VdsoSymbol {
    VdsoSymbol { function, name, since: Some(since) }
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
            sym(VdsoFn::Getcpu, "__vdso_getcpu"),
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

/// A C library or language runtime, as far as routing vDSO calls goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    Glibc,
    Musl,
    /// Go's runtime and standard library (static programs make their own calls).
    Go,
}

impl Runtime {
    /// Its name in output.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Glibc => "glibc",
            Runtime::Musl => "musl",
            Runtime::Go => "Go",
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
/// release. Only getrandom is here: every glibc, musl and Go release
/// vdsoctl meets reads the clocks through the vDSO, and the clock verdicts
/// are about syscalls seen, not versions.
pub const ROUTES: &[Route] = &[
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
pub use auxv::{auxv_name, decode_hwcap, hwcap_bits};

#[cfg(test)]
mod tests;
