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
    // posix-timers.h: pthread_getcpuclockid (a thread's sched clock) and
    // clock_getcpuclockid (a process's), of a task and as folded (pid 0).
    assert_eq!(clock_name((!812i64 << 3) | 6), "THREAD_CPU_CLOCK(tid 812)");
    assert_eq!(clock_name((!812i64 << 3) | 2), "PROCESS_CPU_CLOCK(pid 812)");
    assert_eq!(clock_name((!812i64 << 3) | 4), "THREAD_CPU_CLOCK(tid 812, prof)");
    assert_eq!(clock_name(-2), "THREAD_CPU_CLOCK");
    assert_eq!(clock_name(-7), "PROCESS_CPU_CLOCK(virt)");
    assert_eq!(clock_name(-1), "-1", "type 7 is no clock");
    assert_eq!(
        (clock_name(16), clock_name(23), clock_name(24)),
        ("CLOCK_AUX+0".into(), "CLOCK_AUX+7".into(), "24".into())
    );
    assert_eq!(dynamic_class((!812i64 << 3) | 6), Some(-2));
    assert_eq!(dynamic_class(5), None);
    // The auxiliary clocks: the vDSO serves them from 6.17, x86_64 and arm64.
    assert!(vdso_serves(16, machine::X86_64, Some((6, 17))) && !vdso_serves(16, machine::X86_64, Some((6, 16))));
    assert!(!vdso_serves(16, machine::RISCV, Some((6, 18))) && !vdso_serves(-2, machine::X86_64, None));
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
    // Big-endian: no LE bit (AUDIT_ARCH_S390X); ppc64 either way round.
    assert_eq!(Abi::S390x.audit_arch(), 0x8000_0016);
    assert_eq!(Abi::from_audit_arch(0x8000_0016), Some(Abi::S390x));
    assert_eq!(Abi::from_audit_arch(0xC000_0016), None);
    if !cfg!(all(target_arch = "powerpc64", target_endian = "big")) {
        assert_eq!(Abi::Ppc64.audit_arch(), 0xC000_0015, "AUDIT_ARCH_PPC64LE");
    }
    assert_eq!(Abi::from_audit_arch(0xC000_0015), Some(Abi::Ppc64));
    assert_eq!(Abi::from_audit_arch(0x8000_0015), Some(Abi::Ppc64), "AUDIT_ARCH_PPC64");
    assert_eq!(Abi::from_audit_arch(0x4000_0008), None, "mips: not known");
    for abi in Abi::ALL {
        assert_eq!(Abi::from_audit_arch(abi.audit_arch()), Some(abi));
    }
}

/// ppc64 and s390x: their syscall tables (`arch/*/kernel/syscalls/syscall.tbl`,
/// as the cross libcs' `asm/unistd_64.h` have them).
#[test]
fn ppc64_and_s390x_numbers() {
    let nrs = |abi: Abi| VdsoFn::ALL.map(|f| abi.syscall_nr(f));
    // clock_gettime, clock_gettime64, gettimeofday, time, clock_getres, clock_getres_time64, getcpu, getrandom
    assert_eq!(nrs(Abi::Ppc64)[..8], [Some(246), None, Some(78), Some(13), Some(247), None, Some(302), Some(359)]);
    assert_eq!(nrs(Abi::S390x)[..8], [Some(260), None, Some(78), None, Some(261), None, Some(311), Some(349)]);
    assert_eq!((Abi::Ppc64.seccomp_syscall(), Abi::S390x.seccomp_syscall()), (358, 348));
    assert_eq!((Abi::Ppc64.mmap_syscall(), Abi::S390x.mmap_syscall()), (("mmap", 90), ("mmap", 90)));
    assert_eq!(Abi::from_elf(true, machine::S390), Some(Abi::S390x));
    assert_eq!(Abi::from_elf(true, machine::PPC64), Some(Abi::Ppc64));
    assert_eq!(Abi::from_elf(false, machine::S390), None, "31-bit s390: not known");
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
    assert_eq!(arm64, [VdsoFn::ClockGettime, VdsoFn::Gettimeofday, VdsoFn::ClockGetres, VdsoFn::Getrandom]);
    // The compat vDSOs have no getrandom (x86's vdso32, arm64's AArch32 one).
    assert!(!Abi::I386.vdso_offers(VdsoFn::Getrandom) && !Abi::Arm.vdso_offers(VdsoFn::Getrandom));
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
    assert_eq!(Abi::of_kernel("s390x"), Some(Abi::S390x));
    assert_eq!(Abi::of_kernel("ppc64le"), Some(Abi::Ppc64));
    assert_eq!(Abi::of_kernel("riscv64"), Some(Abi::Riscv64));
    assert_eq!(Abi::of_kernel("mips64"), None);
    assert_eq!(Abi::of_kernel("loongarch64"), None);
    let arm64 = Abi::Aarch64.syscall_entry().unwrap();
    assert_eq!(
        (arm64.compat_flags.path, arm64.compat_mask, arm64.vsyscall),
        (&["thread_info", "flags"][..], 1 << 22, false)
    );
    assert_eq!(Abi::X86_64.syscall_entry().unwrap().compat_flags.path, ["thread_info", "status"]);
    assert!(Abi::Arm.syscall_entry().is_none(), "a 32-bit kernel: no BPF engine");
    // Every 64-bit kernel ABI has its entry; none traces a compat ABI it
    // does not know (mask 0: no task is marked).
    for abi in Abi::ALL.into_iter().filter(|a| a.elf().1) {
        let e = abi.syscall_entry().unwrap_or_else(|| panic!("{abi:?} has no syscall entry"));
        assert_eq!(e.compat_mask == 0, abi.compat().is_none(), "{abi:?}");
        assert_eq!(e.vsyscall, abi == Abi::X86_64);
    }
    let s390 = Abi::S390x.syscall_entry().unwrap();
    assert_eq!((s390.arg0_native.path, s390.user_ip), (&["orig_gpr2"][..], &["psw", "addr"][..]));
    assert_eq!(Abi::Riscv64.syscall_entry().unwrap().arg0_native.path, ["orig_a0"], "a0 is -ENOSYS at sys_enter");
    let ppc = Abi::Ppc64.syscall_entry().unwrap();
    assert_eq!((ppc.arg0_native.path, ppc.arg0_native.part, ppc.args12_native[1].part), (&["gpr"][..], 24, 40));
}

/// The robust-futex unlocks (7.2): x86_64's vDSO has both, i386's the
/// list32 one (Debian 7.3.4's images, fixtures/vdso/*-7.3.so); their
/// fallback is `futex`, told apart by the op (uapi `linux/futex.h`:
/// FUTEX_ROBUST_UNLOCK 512, FUTEX_ROBUST_LIST32 1024).
#[test]
fn robust_futex_unlocks_are_futex_calls_by_their_op() {
    let (l64, l32) = (VdsoFn::FutexRobustList64TryUnlock, VdsoFn::FutexRobustList32TryUnlock);
    assert_eq!((l64.syscall_name(), l32.syscall_name()), ("futex", "futex"));
    assert_eq!((Abi::X86_64.syscall_nr(l64), Abi::I386.syscall_nr(l32)), (Some(202), Some(240)));
    // FUTEX_UNLOCK_WAKE_LIST64_PRIVATE, ..._LIST32_PRIVATE, FUTEX_UNLOCK_PI_LIST64.
    assert_eq!(Abi::X86_64.vdso_call(202, 512 | 128 | 1), Some(l64));
    assert_eq!(Abi::X86_64.vdso_call(202, 1024 | 512 | 128 | 1), Some(l32));
    assert_eq!(Abi::X86_64.vdso_call(202, 512 | 7), Some(l64));
    // FUTEX_WAKE_PRIVATE, FUTEX_WAIT, and a LIST32 bit without ROBUST_UNLOCK: none.
    for op in [129, 0, 1024 | 1] {
        assert_eq!(Abi::X86_64.vdso_call(202, op), None, "op {op}");
    }
    assert_eq!(Abi::X86_64.vdso_syscall(202), None, "the number alone says no function");
    assert_eq!(Abi::X86_64.vdso_call(228, 0), Some(VdsoFn::ClockGettime));
    assert_eq!(Abi::X86_64.vdso_numbers().iter().filter(|n| **n == 202).count(), 1);
    let since = |m, is_64, f| vdso_symbol_row(m, is_64, f).and_then(|s| s.since);
    assert_eq!((since(machine::X86_64, true, l64), since(machine::X86_64, true, l32)), (Some((7, 2)), Some((7, 2))));
    assert_eq!((since(machine::I386, false, l64), since(machine::I386, false, l32)), (None, Some((7, 2))));
    assert!(!Abi::I386.vdso_offers(l64) && Abi::I386.vdso_offers(l32));
    assert!(!Abi::Aarch64.vdso_offers(l64) && Abi::Aarch64.syscall_nr(l64).is_none());
    assert!(!l64.benched() && !l64.takes_clock());
}

/// Every function has its place in `ALL`, a name that parses back, and a
/// syscall in every ABI whose vDSO offers it.
#[test]
fn every_function_row_is_whole() {
    for (i, f) in VdsoFn::ALL.iter().enumerate() {
        assert_eq!(f.index(), i, "{f} out of place in VdsoFn::ALL");
        assert_eq!(VdsoFn::from_name(f.name()), Some(*f));
        for abi in Abi::ALL {
            if abi.vdso_offers(*f) {
                assert!(abi.syscall_nr(*f).is_some(), "{f} offered by the {} vDSO has no syscall", abi.name());
            }
        }
    }
}

/// getrandom: the numbers of each ABI's table and the kernel that brought
/// it to each vDSO (x86_64 6.11, arm64 6.12, riscv64 6.16).
#[test]
fn getrandom_numbers_and_the_kernels_that_brought_it() {
    assert_eq!(Abi::X86_64.syscall_nr(VdsoFn::Getrandom), Some(318));
    assert_eq!(Abi::I386.syscall_nr(VdsoFn::Getrandom), Some(355));
    assert_eq!(Abi::Aarch64.syscall_nr(VdsoFn::Getrandom), Some(278));
    assert_eq!(Abi::Arm.syscall_nr(VdsoFn::Getrandom), Some(384));
    let since = |m, is_64| vdso_symbol_row(m, is_64, VdsoFn::Getrandom).and_then(|s| s.since);
    assert_eq!(since(machine::X86_64, true), Some((6, 11)));
    assert_eq!(since(machine::AARCH64, true), Some((6, 12)));
    assert_eq!(since(machine::RISCV, true), Some((6, 16)));
    let row = vdso_symbol_row(machine::X86_64, true, VdsoFn::Getrandom).unwrap();
    assert!(row.in_kernel(Some((6, 11))) && !row.in_kernel(Some((6, 10))) && row.in_kernel(None));
    // Every clock symbol is as old as its vDSO, but i386's
    // clock_getres_time64 (7.0); the robust-futex unlocks are 7.2's.
    assert!(VDSO_ABIS
        .iter()
        .flat_map(|a| a.symbols)
        .filter(|s| s.function.kind() == FnKind::Clock && s.function != VdsoFn::ClockGetresTime64)
        .all(|s| s.since.is_none()));
    assert_eq!(vdso_symbol_row(machine::I386, false, VdsoFn::ClockGetresTime64).and_then(|s| s.since), Some((7, 0)));
    assert_eq!(route(VdsoFn::ClockGetresTime64, Runtime::Glibc).map(|r| r.since), Some(None), "no glibc reads it");
    assert_eq!(route(VdsoFn::Getrandom, Runtime::Glibc).and_then(|r| r.since), Some((2, 41)));
    assert_eq!(route(VdsoFn::Getrandom, Runtime::Go).and_then(|r| r.since), Some((1, 24)));
    assert_eq!(route(VdsoFn::Getrandom, Runtime::Musl).and_then(|r| r.since), None);
}

/// A new function is one row of `vdso_functions!`: `ALL`, `index`, the
/// names the parsers take and bench's list all come from it, so none can
/// miss a row (the enum's variants are `ALL`, in order, by construction).
#[test]
fn a_row_is_all_it_takes() {
    assert_eq!(VdsoFn::ALL.len(), VdsoFn::FutexRobustList32TryUnlock.index() + 1, "the last row is the last index");
    let mut names: Vec<&str> = VdsoFn::ALL.iter().map(|f| f.name()).collect();
    names.dedup();
    assert_eq!(names.len(), VdsoFn::ALL.len(), "one name a row");
    for (i, f) in VdsoFn::ALL.into_iter().enumerate() {
        assert_eq!((f.index(), VdsoFn::from_name(f.name())), (i, Some(f)));
        // Serialized as the table names it.
        assert_eq!(serde_json::to_value(f).unwrap(), serde_json::json!(f.name()));
    }
    let benched: Vec<VdsoFn> = crate::measure::bench::functions();
    assert_eq!(benched, VdsoFn::ALL.into_iter().filter(|f| f.benched()).collect::<Vec<_>>());
    assert!(benched.contains(&VdsoFn::Getrandom), "bench --functions takes getrandom");
}

/// Which clocks each 64-bit architecture's vDSO serves, and from when:
/// riscv64, ppc64 and s390x too (a raw MONOTONIC loop there is a bypass,
/// not "the vDSO never serves this clock id").
#[test]
fn every_64_bit_arch_has_its_clock_history() {
    let kernels = [Some((6, 1)), Some((6, 12)), Some((7, 2)), None];
    for m in [machine::X86_64, machine::AARCH64, machine::RISCV, machine::PPC64, machine::S390, machine::LOONGARCH] {
        for c in CLOCKS {
            let fast = c.class != ClockClass::AlwaysSyscall;
            for k in kernels {
                assert_eq!(vdso_serves(c.id, m, k), fast, "{} on machine {m}, kernel {k:?}", c.name);
            }
        }
    }
    // Before the generic vDSO.
    assert!(!vdso_serves(1, machine::RISCV, Some((5, 7))) && vdso_serves(1, machine::RISCV, Some((5, 8))));
    assert!(vdso_serves(1, machine::PPC64, Some((4, 19))) && !vdso_serves(4, machine::PPC64, Some((5, 10))));
    assert!(vdso_serves(4, machine::PPC64, Some((5, 11))) && vdso_serves(6, machine::PPC64, Some((4, 16))));
    assert!(!vdso_serves(7, machine::S390, Some((5, 9))) && vdso_serves(7, machine::S390, Some((5, 10))));
    assert!(vdso_serves(0, machine::S390, Some((4, 19))));
    // An architecture without a history: nothing is claimed.
    assert!(!vdso_serves(1, machine::MIPS, Some((6, 12))));
    assert!(!vdso_serves(2, machine::RISCV, None), "CPU-time clocks: never");
}

/// The runtimes a program carries: each one's path by release and
/// architecture, and the release that fixes a syscall path derived from
/// the table (none where no release reads the vDSO yet).
#[test]
fn runtime_paths_by_release_and_arch() {
    let x86 = machine::X86_64;
    let path = |rt, f, v, m| path_of(rt, f, v, m).map(|r| r.path);
    // The getrandom crate: 0.2 a raw syscall, 0.3 and 0.4 the C library's.
    let old = path_of(Runtime::GetrandomCrate, VdsoFn::Getrandom, Some((0, 2)), x86).unwrap();
    assert_eq!((old.path, old.fixed_in()), (RoutePath::Syscall, Some((0, 3))));
    assert_eq!(path(Runtime::GetrandomCrate, VdsoFn::Getrandom, Some((0, 3)), x86), Some(RoutePath::Libc));
    assert_eq!(path(Runtime::GetrandomCrate, VdsoFn::Getrandom, Some((0, 4)), x86), Some(RoutePath::Libc));
    assert_eq!(path(Runtime::GetrandomCrate, VdsoFn::Getrandom, None, x86), None, "the release decides");
    // rustix finds the vDSO itself; arm64's vDSO has no getcpu.
    assert_eq!(path(Runtime::Rustix, VdsoFn::ClockGettime, Some((1, 1)), machine::AARCH64), Some(RoutePath::OwnVdso));
    assert_eq!(path(Runtime::Rustix, VdsoFn::ClockGettime, None, machine::S390), Some(RoutePath::OwnVdso));
    assert_eq!(path(Runtime::Rustix, VdsoFn::Getcpu, None, machine::RISCV), Some(RoutePath::OwnVdso));
    assert_eq!(path(Runtime::Rustix, VdsoFn::Getcpu, None, machine::AARCH64), None);
    // No release reads the vDSO yet: libuv's uv_random, OpenSSL's seeding.
    for rt in [Runtime::Libuv, Runtime::Openssl, Runtime::Rustix, Runtime::Zig] {
        let r = path_of(rt, VdsoFn::Getrandom, None, x86).unwrap();
        assert!(matches!(r.path, RoutePath::Syscall | RoutePath::Seed) && r.fixed_in().is_none(), "{rt:?}");
    }
    assert_eq!(path(Runtime::Cpython, VdsoFn::Getrandom, None, x86), Some(RoutePath::Libc), "follows the C library");
    // .NET reads /dev/urandom, whatever the C library, every release.
    let dotnet = path_of(Runtime::Dotnet, VdsoFn::Getrandom, Some((8, 0)), x86).unwrap();
    assert_eq!((dotnet.path, dotnet.fixed_in()), (RoutePath::DeviceRead, None));
    assert!(!RoutePath::DeviceRead.reads_vdso());
    // glibc's per-arch gaps.
    assert_eq!(path(Runtime::Glibc, VdsoFn::ClockGetres, None, machine::I386), Some(RoutePath::Syscall));
    assert_eq!(path(Runtime::Glibc, VdsoFn::ClockGetres, None, x86), None);
    assert_eq!(path(Runtime::Glibc, VdsoFn::Time, None, machine::AARCH64), Some(RoutePath::OwnVdso));
    assert_eq!(path(Runtime::Glibc, VdsoFn::Getcpu, Some((2, 36)), x86), Some(RoutePath::Rseq));
    assert_eq!(path(Runtime::Glibc, VdsoFn::Getcpu, Some((2, 34)), x86), None);
    // Every runtime the table has a path for is recognisable in a binary.
    for r in PATHS.iter().filter(|r| r.runtime != Runtime::Glibc) {
        assert!(SIGNATURES.iter().any(|s| s.runtime == r.runtime), "{:?} has no signature", r.runtime);
    }
}

/// A marker is a symbol name in a string table, never a literal inside
/// other bytes (vdsoctl's own table of them).
#[test]
fn markers_take_nul_delimited_names_only() {
    let m = Marker::Name("uv_random");
    let at = |buf: &[u8]| memchr::memmem::find(buf, b"uv_random").is_some_and(|i| m.delimited(buf, i, 9));
    assert!(at(b"\0uv_random\0"));
    assert!(!at(b"\0uv_random_x\0") && !at(b"xuv_random\0"));
    let p = Marker::Prefix("_ZN6rustix");
    assert!(p.delimited(b"\0_ZN6rustix2fs", 1, 10) && !p.delimited(b"a_ZN6rustix", 1, 10));
    let s = Marker::Suffix("os.linux.vdso.lookup");
    assert!(s.delimited(b"std.os.linux.vdso.lookup\0", 4, 20));
}
