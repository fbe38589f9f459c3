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
    assert_eq!(abi.syscall_nr(TimeFn::ClockGettime), Some(265));
    assert_eq!(abi.syscall_nr(TimeFn::ClockGettime64), Some(403));
    assert_eq!(abi.syscall_nr(TimeFn::Gettimeofday), Some(78));
    assert_eq!(abi.syscall_nr(TimeFn::Time), Some(13));
    assert_eq!(abi.syscall_nr(TimeFn::ClockGetres), Some(266));
    assert_eq!(abi.syscall_nr(TimeFn::ClockGetresTime64), Some(406));
    assert_eq!(abi.syscall_nr(TimeFn::Getcpu), Some(318));
    assert_eq!(Abi::X86_64.clock_syscall(228), Some(TimeFn::ClockGettime));
}

#[test]
fn hwcap_decodes_known_and_unknown_bits() {
    assert_eq!(decode_hwcap(machine::X86_64, 2, 0x2), vec!["fsgsbase"]);
    assert_eq!(decode_hwcap(machine::X86_64, 2, 0x4), vec!["bit2"]);
    assert_eq!(decode_hwcap(machine::X86_64, 1, 0x11), vec!["fpu", "tsc"]);
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
    assert_eq!(vdso_symbol(machine::X86_64, true, TimeFn::Time), Some("__vdso_time"));
    assert_eq!(vdso_symbol(machine::AARCH64, true, TimeFn::ClockGettime), Some("__kernel_clock_gettime"));
    assert_eq!(vdso_symbol(machine::AARCH64, true, TimeFn::Time), None);
}
