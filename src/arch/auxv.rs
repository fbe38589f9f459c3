//! The auxiliary vector's key names and each architecture's hwcap bit
//! names (from the kernel's uapi headers), for `auxv`'s DECODED column.

use super::machine;

/// Names of auxv keys: `include/uapi/linux/auxvec.h` plus the arch headers
/// (x86 `AT_SYSINFO`, the cache-geometry keys of arm64/ppc/riscv, ...).
pub fn auxv_name(key: u64) -> Option<&'static str> {
    Some(match key {
        0 => "AT_NULL",
        1 => "AT_IGNORE",
        2 => "AT_EXECFD",
        3 => "AT_PHDR",
        4 => "AT_PHENT",
        5 => "AT_PHNUM",
        6 => "AT_PAGESZ",
        7 => "AT_BASE",
        8 => "AT_FLAGS",
        9 => "AT_ENTRY",
        10 => "AT_NOTELF",
        11 => "AT_UID",
        12 => "AT_EUID",
        13 => "AT_GID",
        14 => "AT_EGID",
        15 => "AT_PLATFORM",
        16 => "AT_HWCAP",
        17 => "AT_CLKTCK",
        18 => "AT_FPUCW",
        19 => "AT_DCACHEBSIZE",
        20 => "AT_ICACHEBSIZE",
        21 => "AT_UCACHEBSIZE",
        22 => "AT_IGNOREPPC",
        23 => "AT_SECURE",
        24 => "AT_BASE_PLATFORM",
        25 => "AT_RANDOM",
        26 => "AT_HWCAP2",
        27 => "AT_RSEQ_FEATURE_SIZE",
        28 => "AT_RSEQ_ALIGN",
        29 => "AT_HWCAP3",
        30 => "AT_HWCAP4",
        31 => "AT_EXECFN",
        32 => "AT_SYSINFO",
        33 => "AT_SYSINFO_EHDR",
        34 => "AT_L1I_CACHESHAPE",
        35 => "AT_L1D_CACHESHAPE",
        36 => "AT_L2_CACHESHAPE",
        37 => "AT_L3_CACHESHAPE",
        40 => "AT_L1I_CACHESIZE",
        41 => "AT_L1I_CACHEGEOMETRY",
        42 => "AT_L1D_CACHESIZE",
        43 => "AT_L1D_CACHEGEOMETRY",
        44 => "AT_L2_CACHESIZE",
        45 => "AT_L2_CACHEGEOMETRY",
        46 => "AT_L3_CACHESIZE",
        47 => "AT_L3_CACHEGEOMETRY",
        51 => "AT_MINSIGSTKSZ",
        _ => return None,
    })
}

// The names, index = bit number (an empty name: a bit without one).
const X86_HWCAP: &[&str] = &[
    "fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce", "cx8", "apic", "", "sep", "mtrr", "pge", "mca", "cmov",
    "pat", "pse36", "pn", "clflush", "", "dts", "acpi", "mmx", "fxsr", "sse", "sse2", "ss", "ht", "tm", "ia64", "pbe",
];
const X86_HWCAP2: &[&str] = &["ring3mwait", "fsgsbase"];
const ARM64_HWCAP: &[&str] = &[
    "fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32", "atomics", "fphp", "asimdhp", "cpuid",
    "asimdrdm", "jscvt", "fcma", "lrcpc", "dcpop", "sha3", "sm3", "sm4", "asimddp", "sha512", "sve", "asimdfhm", "dit",
    "uscat", "ilrcpc", "flagm", "ssbs", "sb", "paca", "pacg",
];
const ARM64_HWCAP2: &[&str] = &[
    "dcpodp",
    "sve2",
    "sveaes",
    "svepmull",
    "svebitperm",
    "svesha3",
    "svesm4",
    "flagm2",
    "frint",
    "svei8mm",
    "svef32mm",
    "svef64mm",
    "svebf16",
    "i8mm",
    "bf16",
    "dgh",
    "rng",
    "bti",
    "mte",
    "ecv",
    "afp",
    "rpres",
    "mte3",
    "sme",
    "sme_i16i64",
    "sme_f64f64",
    "sme_i8i32",
    "sme_f16f32",
    "sme_b16f32",
    "sme_f32f32",
    "sme_fa64",
    "wfxt",
];
const ARM_HWCAP: &[&str] = &[
    "swp",
    "half",
    "thumb",
    "26bit",
    "fastmult",
    "fpa",
    "vfp",
    "edsp",
    "java",
    "iwmmxt",
    "crunch",
    "thumbee",
    "neon",
    "vfpv3",
    "vfpv3d16",
    "tls",
    "vfpv4",
    "idiva",
    "idivt",
    "vfpd32",
    "lpae",
    "evtstrm",
    "fphp",
    "asimdhp",
    "asimddp",
    "asimdfhm",
    "asimdbf16",
    "i8mm",
];
const ARM_HWCAP2: &[&str] = &["aes", "pmull", "sha1", "sha2", "crc32", "sb", "ssbs"];

/// Bit names of AT_HWCAP / AT_HWCAP2 for a machine, index = bit number.
/// x86 AT_HWCAP is CPUID(1).EDX; AT_HWCAP2 is `arch/x86/include/uapi/asm/hwcap2.h`;
/// arm64 from `arch/arm64/include/uapi/asm/hwcap.h`; 32-bit ARM (native, or
/// an AArch32 task on arm64) from `arch/arm/include/uapi/asm/hwcap.h`, as
/// /proc/cpuinfo names them.
pub fn hwcap_bits(machine: u16, which: u8) -> &'static [&'static str] {
    match (machine, which) {
        (machine::X86_64 | machine::I386, 1) => X86_HWCAP,
        (machine::X86_64 | machine::I386, 2) => X86_HWCAP2,
        (machine::AARCH64, 1) => ARM64_HWCAP,
        (machine::AARCH64, 2) => ARM64_HWCAP2,
        (machine::ARM, 1) => ARM_HWCAP,
        (machine::ARM, 2) => ARM_HWCAP2,
        _ => &[],
    }
}

/// Decode a hwcap word into bit names; unknown set bits as `bitN`.
pub fn decode_hwcap(machine: u16, which: u8, value: u64) -> Vec<String> {
    let names = hwcap_bits(machine, which);
    (0..64)
        .filter(|bit| value & (1u64 << bit) != 0)
        .map(|bit| match names.get(bit as usize) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("bit{bit}"),
        })
        .collect()
}
