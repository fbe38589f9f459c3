//! The arch table's unit tests.

use super::*;

#[test]
fn clock_names_round_trip() {
    for c in CLOCKS {
        assert_eq!(parse_clock(c.name), Some(c.id));
        assert_eq!(clock_name(c.id as i64), c.name);
    }
    assert_eq!(parse_clock("monotonic_raw"), Some(4));
    assert_eq!(parse_clock("tai"), Some(11));
    assert_eq!(parse_clock("nonsense"), None);
    assert_eq!(clock_name(10), "10");
    // fd 3 -> ((~3) << 3) | 3
    assert_eq!(clock_name(((!3i64) << 3) | 3), "FD_CLOCK(fd 3)");
}

#[test]
fn audit_arches_are_the_kernels() {
    // include/uapi/linux/audit.h
    assert_eq!(Abi::X86_64.audit_arch(), 0xC000_003E);
    assert_eq!(Abi::I386.audit_arch(), 0x4000_0003);
    assert_eq!(Abi::Aarch64.audit_arch(), 0xC000_00B7);
    assert_eq!(Abi::Arm.audit_arch(), 0x4000_0028);
    assert_eq!(Abi::Riscv64.audit_arch(), 0xC000_00F3);
    assert_eq!(Abi::from_audit_arch(0x4000_0003), Some(Abi::I386));
    assert_eq!(Abi::from_audit_arch(0x8000_0016), None);
}

#[test]
fn i386_compat_numbers_match_design() {
    let abi = Abi::I386;
    assert_eq!(abi.syscall_nr(VdsoFn::ClockGettime), Some(265));
    assert_eq!(abi.syscall_nr(VdsoFn::ClockGettime64), Some(403));
    assert_eq!(abi.syscall_nr(VdsoFn::Gettimeofday), Some(78));
    assert_eq!(abi.syscall_nr(VdsoFn::Time), Some(13));
    assert_eq!(abi.syscall_nr(VdsoFn::ClockGetres), Some(266));
    assert_eq!(abi.syscall_nr(VdsoFn::ClockGetresTime64), Some(406));
    assert_eq!(abi.syscall_nr(VdsoFn::Getcpu), Some(318));
    assert_eq!(Abi::X86_64.vdso_syscall(228), Some(VdsoFn::ClockGettime));
}

#[test]
fn hwcap_decodes_known_and_unknown_bits() {
    assert_eq!(decode_hwcap(machine::X86_64, 2, 0x2), vec!["fsgsbase"]);
    assert_eq!(decode_hwcap(machine::X86_64, 2, 0x4), vec!["bit2"]);
    assert_eq!(decode_hwcap(machine::X86_64, 1, 0x11), vec!["fpu", "tsc"]);
    // An AArch32 task's AT_HWCAP on Debian's 6.1 arm64 kernel under QEMU
    // (arm64's COMPAT_ELF_HWCAP_DEFAULT plus the FP/SIMD and evtstrm bits).
    let compat = decode_hwcap(machine::ARM, 1, 0x37b0d6).join(" ");
    assert_eq!(compat, "half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt lpae evtstrm");
    assert_eq!(decode_hwcap(machine::ARM, 2, 0x1f), vec!["aes", "pmull", "sha1", "sha2", "crc32"]);
}

#[test]
fn arch_names_as_debian_says() {
    assert_eq!(arch_name(machine::X86_64, true, true, 0), "amd64");
    assert_eq!(arch_name(machine::ARM, false, true, 0x0500_0400), "armhf");
    assert_eq!(arch_name(machine::ARM, false, true, 0x0500_0200), "armel");
    assert_eq!(arch_name(machine::PPC64, true, true, 2), "ppc64el");
    assert_eq!(arch_name(machine::PPC64, true, false, 1), "ppc64");
    assert_eq!(arch_name(machine::S390, true, false, 0), "s390x");
    assert_eq!(arch_name(0x1234, true, false, 0), "0x1234-be64");
}

#[test]
fn vdso_symbols_per_arch() {
    assert_eq!(vdso_symbol(machine::X86_64, true, VdsoFn::Time), Some("__vdso_time"));
    assert_eq!(vdso_symbol(machine::AARCH64, true, VdsoFn::ClockGettime), Some("__kernel_clock_gettime"));
    assert_eq!(vdso_symbol(machine::AARCH64, true, VdsoFn::Time), None);
}

/// What each vDSO is meant to offer: arm64's has no time and no getcpu by
/// design (its vdso.lds.S), AArch32's compat one no clock_getres_time64.
#[test]
fn vdsos_offer_what_their_linker_scripts_export() {
    use super::{Abi, VdsoFn};
    assert!(VdsoFn::ALL
        .iter()
        .all(|f| Abi::X86_64.vdso_offers(*f) != (*f == VdsoFn::ClockGettime64 || *f == VdsoFn::ClockGetresTime64)));
    let arm64: Vec<VdsoFn> = VdsoFn::ALL.into_iter().filter(|f| Abi::Aarch64.vdso_offers(*f)).collect();
    assert_eq!(arm64, [VdsoFn::ClockGettime, VdsoFn::Gettimeofday, VdsoFn::ClockGetres]);
    assert!(!Abi::Arm.vdso_offers(VdsoFn::ClockGetresTime64) && Abi::Arm.vdso_offers(VdsoFn::ClockGettime64));
    assert_eq!(VdsoFn::from_name("getcpu"), Some(VdsoFn::Getcpu));
}

/// The kernel's ABI from `uname -m`, and the syscall entry the BPF engine reads on it.
#[test]
fn kernel_abis_and_their_syscall_entries() {
    use super::Abi;
    assert_eq!(Abi::of_kernel("aarch64"), Some(Abi::Aarch64));
    assert_eq!(Abi::of_kernel("x86_64"), Some(Abi::X86_64));
    assert_eq!(Abi::of_kernel("armv7l"), Some(Abi::Arm));
    assert_eq!(Abi::of_kernel("s390x"), None);
    let arm64 = Abi::Aarch64.syscall_entry().unwrap();
    assert_eq!(
        (arm64.compat_flags.path, arm64.compat_mask, arm64.vsyscall),
        (&["thread_info", "flags"][..], 1 << 22, false)
    );
    assert_eq!(Abi::X86_64.syscall_entry().unwrap().compat_flags.path, ["thread_info", "status"]);
    assert!(Abi::Arm.syscall_entry().is_none(), "a 32-bit kernel: no BPF engine");
}
