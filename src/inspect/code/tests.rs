use super::*;

fn t64() -> Targets {
    Targets { vsyscall: true, vsyscall_rel32: true, syscall_fn: vec![0x401100], syscall_got: vec![0x404000] }
}

fn sites(code: &[u8], base: u64, bits: u32, t: &Targets) -> Vec<Site> {
    let mut out: Vec<Site> = Vec::new();
    for c in candidates(code, base, bits, t) {
        let Some(s) = window_start(code, base, bits, c) else { continue };
        for site in analyze(code, base, bits, s, reach_after(code, c), t, &[]) {
            if !out.iter().any(|o| o.addr == site.addr) {
                out.push(site);
            }
        }
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// Any bytes, seeded with the candidate patterns, at any address,
    /// in either mode: sites or none, never a panic.
    #[test]
    fn any_code_never_panics(
        mut code in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        seeds in proptest::collection::vec((0usize..600, 0usize..6), 0..24),
        base in proptest::prelude::any::<u64>(),
        wide in proptest::prelude::any::<bool>(),
    ) {
        const PATTERNS: [&[u8]; 6] = [b"\x0f\x05", b"\xcd\x80", b"\xb8\xe4\0\0\0", b"\x48\xc7\xc0\0\x04\x60\xff", b"\xff\x15", b"\xe8"];
        for (at, k) in seeds {
            for (i, b) in PATTERNS[k].iter().enumerate() {
                if let Some(x) = code.get_mut(at + i) {
                    *x = *b;
                }
            }
        }
        let bits = if wide { 64 } else { 32 };
        let t = Targets { vsyscall: true, vsyscall_rel32: true, syscall_fn: vec![base, 0x401100], syscall_got: vec![base.wrapping_add(64)] };
        for c in candidates(&code, base, bits, &t) {
            if let Some(from) = window_start(&code, base, bits, c) {
                let _ = analyze(&code, base, bits, from, reach_after(&code, c), &t, &[]);
            }
        }
        let blocks = branch_targets(&code, base, bits);
        let _ = analyze(&code, base, bits, 0, code.len(), &t, &blocks);
        let _ = plt_stubs(&code, base, bits, &t.syscall_got, Some(base));
        let _ = lands_on(&code, bits, code.len() / 2);
        let _ = pointer_guarded(&code, base, bits, code.len() / 2);
    }
}

#[test]
fn guarded_fallbacks() {
    // glibc's __clock_gettime: mov ptr(%rip),%rax; test %rax,%rax; je 1f;
    // sub $8,%rsp; call *%rax; ...; ret; 1: mov $228,%eax; syscall
    let code = [
        0x48, 0x8b, 0x05, 0x11, 0x22, 0x33, 0x00, 0x48, 0x85, 0xc0, 0x74, 0x08, 0x48, 0x83, 0xec, 0x08, 0xff, 0xd0,
        0xc3, 0x90, 0xb8, 0xe4, 0, 0, 0, 0x0f, 0x05,
    ];
    assert!(pointer_guarded(&code, 0x1000, 64, 25));
    // Tested but tail-jumped through (crt's register_tm_clones): not the shape.
    let code = [0x48, 0x85, 0xc0, 0x74, 0x02, 0xff, 0xe0, 0xb8, 0xe4, 0, 0, 0, 0x0f, 0x05];
    assert!(!pointer_guarded(&code, 0x1000, 64, 12));
    // Called but never tested.
    let code = [0xff, 0xd0, 0xb8, 0xe4, 0, 0, 0, 0x0f, 0x05];
    assert!(!pointer_guarded(&code, 0x1000, 64, 7));
}

#[test]
fn register_slots() {
    assert_eq!(gpr(Register::RAX), Some((0, 8)));
    assert_eq!(gpr(Register::EDI), Some((7, 4)));
    assert_eq!(gpr(Register::R15W), Some((15, 2)));
    assert_eq!(gpr(Register::BH), Some((3, 1)));
    assert_eq!(gpr(Register::SPL), Some((4, 1)));
    assert_eq!(gpr(Register::R15L), Some((15, 1)));
    assert_eq!(gpr(Register::XMM0), None);
}

#[test]
fn vsyscall_through_a_register() {
    // mov $0xffffffffff600400,%rax; call *%rax
    let code = [0x90, 0x48, 0xc7, 0xc0, 0x00, 0x04, 0x60, 0xff, 0xff, 0xd0];
    let s = sites(&code, 0x1000, 64, &t64());
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].addr, s[0].via, s[0].entry), (0x1008, Via::Vsyscall, Some(0xffff_ffff_ff60_0400)));
    // movabs $0xffffffffff600000,%rax; mov %rax,0x10(%rsp): data, no call.
    let code = [0x48, 0xb8, 0, 0, 0x60, 0xff, 0xff, 0xff, 0xff, 0xff, 0x48, 0x89, 0x44, 0x24, 0x10, 0xc3];
    assert!(sites(&code, 0x1000, 64, &t64()).is_empty());
    // cmp $0xffffffffff600000,%r15: a compare, no call.
    let code = [0x49, 0x81, 0xff, 0, 0, 0x60, 0xff, 0xff, 0xd0];
    assert!(sites(&code, 0x1000, 64, &t64()).is_empty());
}

#[test]
fn vsyscall_direct_call() {
    let from: u64 = 0x401000;
    let rel = 0xffff_ffff_ff60_0800u64.wrapping_sub(from + 5) as i64 as i32;
    let mut code = vec![0xe8];
    code.extend_from_slice(&rel.to_le_bytes());
    let s = sites(&code, from, 64, &t64());
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].entry, Some(0xffff_ffff_ff60_0800));
}

#[test]
fn raw_syscalls() {
    // mov $1,%edi; mov $228,%eax; syscall
    let code = [0xbf, 1, 0, 0, 0, 0xb8, 0xe4, 0, 0, 0, 0x0f, 0x05];
    let s = sites(&code, 0x1000, 64, &t64());
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].addr, s[0].via, s[0].function, s[0].clock),
        (0x100a, Via::Syscall, Some(VdsoFn::ClockGettime), Some(1))
    );
    // Two paths join before the syscall with different numbers (228 or
    // 39): no constant there, no site.
    let code = [0xb8, 0xe4, 0, 0, 0, 0x74, 0x05, 0xb8, 39, 0, 0, 0, 0x0f, 0x05];
    assert!(sites(&code, 0x1000, 64, &t64()).is_empty());
    // ... with the same number on both: a site.
    let code = [0xb8, 0xe4, 0, 0, 0, 0x74, 0x05, 0xb8, 0xe4, 0, 0, 0, 0x0f, 0x05];
    assert_eq!(sites(&code, 0x1000, 64, &t64()).len(), 1);
    // mov $39,%eax (getpid); syscall: not a clock.
    let code = [0xb8, 39, 0, 0, 0, 0x0f, 0x05];
    assert!(sites(&code, 0x1000, 64, &t64()).is_empty());
    // mov $0xc00f05,%eax: the bytes, not the instruction.
    let code = [0xb8, 0x05, 0x0f, 0xc0, 0x00, 0xc3];
    assert!(sites(&code, 0x1000, 64, &t64()).is_empty());
    // i386: mov $265,%eax; mov $1,%ebx; int $0x80
    let code = [0xb8, 0x09, 1, 0, 0, 0xbb, 1, 0, 0, 0, 0xcd, 0x80];
    let s = sites(&code, 0x1000, 32, &t64());
    assert_eq!((s[0].via, s[0].function, s[0].clock), (Via::Int80, Some(VdsoFn::ClockGettime), Some(1)));
}

#[test]
fn libc_syscall_calls() {
    // mov $228,%edi; mov $1,%esi; call *0x...(%rip) → slot 0x404000
    let base = 0x401000u64;
    let mut code = vec![0xbf, 0xe4, 0, 0, 0, 0xbe, 2, 0, 0, 0, 0xff, 0x15];
    let disp = (0x404000u64.wrapping_sub(base + 16)) as i32;
    code.extend_from_slice(&disp.to_le_bytes());
    let s = sites(&code, base, 64, &t64());
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].via, s[0].clock), (Via::LibcSyscall, Some(2)));
    // i386: push $1; push $265; call syscall (direct, 0x401100)
    let mut code = vec![0x6a, 1, 0x68, 0x09, 1, 0, 0, 0xe8];
    let rel = (0x401100u64.wrapping_sub(base + 12)) as i32;
    code.extend_from_slice(&rel.to_le_bytes());
    let s = sites(&code, base, 32, &t64());
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].function, s[0].clock), (Some(VdsoFn::ClockGettime), Some(1)));
}

/// Both ways of decoding: the windows around the candidates, and the whole
/// range as one function with its branch targets.
fn both_ways(code: &[u8], base: u64, bits: u32) -> [Vec<Site>; 2] {
    let t = t64();
    let blocks = branch_targets(code, base, bits);
    [sites(code, base, bits, &t), analyze(code, base, bits, 0, code.len(), &t, &blocks)]
}

#[test]
fn constants_followed_around_loops() {
    // gcc -O2's hoisted [vsyscall] call (fixtures/hoisted.c):
    //   mov $0xffffffffff600000,%r13
    // L: xor %esi,%esi; call *%r13; call (elsewhere); sub $1,%rbx; jne L; ret
    let mut code = vec![0x49, 0xc7, 0xc5, 0, 0, 0x60, 0xff, 0x31, 0xf6, 0x41, 0xff, 0xd5];
    code.extend([0xe8, 0x00, 0x01, 0, 0, 0x48, 0x83, 0xeb, 0x01, 0x75, 0xf0, 0xc3]);
    for s in both_ways(&code, 0x1000, 64) {
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!((s[0].addr, s[0].via, s[0].entry), (0x1009, Via::Vsyscall, Some(0xffff_ffff_ff60_0000)));
    }
    // The loop overwrites %r13 after the call (xor %r13d,%r13d before the
    // jne): at the loop head it is no constant, so no site.
    let mut code = vec![0x49, 0xc7, 0xc5, 0, 0, 0x60, 0xff, 0x31, 0xf6, 0x41, 0xff, 0xd5];
    code.extend([0x45, 0x31, 0xed, 0x48, 0x83, 0xeb, 0x01, 0x75, 0xf2, 0xc3]);
    for s in both_ways(&code, 0x1000, 64) {
        assert!(s.is_empty(), "{s:?}");
    }
    // A call in the loop clobbers %rax (caller-saved): mov $..,%rax before
    // the loop, call *%rax in it, is a site the first time round only —
    // not a constant at the head, so no site.
    let mut code = vec![0x48, 0xc7, 0xc0, 0, 0, 0x60, 0xff, 0xff, 0xd0];
    code.extend([0x48, 0x83, 0xeb, 0x01, 0x75, 0xf8, 0xc3]);
    let [_, precise] = both_ways(&code, 0x1000, 64);
    assert!(precise.is_empty(), "{precise:?}");
    // i386 (fixtures/hoisted.c -m32): mov $265,%edi; mov $1,%ebx;
    // L: mov %edi,%eax; int $0x80; add $1,%edx; cmp %edx,%ebp; jne L; ret
    let code =
        [0xbf, 0x09, 1, 0, 0, 0xbb, 1, 0, 0, 0, 0x89, 0xf8, 0xcd, 0x80, 0x83, 0xc2, 0x01, 0x39, 0xd5, 0x75, 0xf5, 0xc3];
    for s in both_ways(&code, 0x1000, 32) {
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].addr, s[0].via, s[0].function, s[0].clock),
            (0x100c, Via::Int80, Some(VdsoFn::ClockGettime), Some(1))
        );
    }
}

#[test]
fn a_long_loop_body_keeps_the_constant() {
    // mov $0xffffffffff600400,%rbx; L: 300 bytes of work (nops);
    // call *%rbx; sub $1,%r12; jne L; ret — the call is 300 bytes past the
    // load, beyond a basic block's reach: found in the window (stripped
    // code) and in the function.
    let mut code = vec![0x48, 0xc7, 0xc3, 0x00, 0x04, 0x60, 0xff];
    code.extend(std::iter::repeat_n(0x90, 300));
    code.extend([0xff, 0xd3, 0x49, 0x83, 0xec, 0x01]);
    let back = 7i64 - (code.len() as i64 + 6);
    code.extend([0x0f, 0x85]);
    code.extend((back as i32).to_le_bytes());
    code.push(0xc3);
    for s in both_ways(&code, 0x1000, 64) {
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!((s[0].addr, s[0].entry), (0x1000 + 307, Some(0xffff_ffff_ff60_0400)));
    }
}

#[test]
fn a_number_hoisted_far_before_its_syscall() {
    // mov $228,%r10d; mov $1,%edi; L: 200 bytes of work; mov %r10,%rax;
    // syscall; sub $1,%rbx; jne L; ret — the number 200+ bytes back.
    let mut code = vec![0x41, 0xba, 0xe4, 0, 0, 0, 0xbf, 1, 0, 0, 0];
    let head = code.len();
    code.extend(std::iter::repeat_n(0x90, 200));
    code.extend([0x4c, 0x89, 0xd0, 0x0f, 0x05, 0x48, 0x83, 0xeb, 0x01]);
    let at = code.len() - 6;
    let back = head as i64 - (code.len() as i64 + 6);
    code.extend([0x0f, 0x85]);
    code.extend((back as i32).to_le_bytes());
    code.push(0xc3);
    for s in both_ways(&code, 0x1000, 64) {
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].addr, s[0].via, s[0].function, s[0].clock),
            (0x1000 + at as u64, Via::Syscall, Some(VdsoFn::ClockGettime), Some(1))
        );
    }
}

/// A return address's call, decoded as objdump shows it: `e8 rel32` from
/// the return address (32-bit targets wrap), and nothing else.
#[test]
fn the_direct_call_before_a_return_address() {
    use super::direct_call_before;
    // 1083: call 11c0 <read_monotonic_raw>; returns to 1088.
    assert_eq!(direct_call_before(&[0xe8, 0x38, 0x01, 0x00, 0x00], 0x1088, 64), Some(0x11c0));
    // A backward call: rel32 -0x50.
    assert_eq!(direct_call_before(&[0x90, 0xe8, 0xb0, 0xff, 0xff, 0xff], 0x1000, 64), Some(0xfb0));
    assert_eq!(direct_call_before(&[0xe8, 0x00, 0x00, 0x00, 0x80], 0x1000, 32), Some(0x8000_1000));
    assert_eq!(direct_call_before(&[0xe8, 0xf0, 0xff, 0xff, 0xff], 0x8, 32), Some(0xffff_fff8));
    // call *%rax (ff d0), a short buffer: no direct call.
    assert_eq!(direct_call_before(&[0x90, 0x90, 0x90, 0xff, 0xd0], 0x1000, 64), None);
    assert_eq!(direct_call_before(&[0xe8, 0x00], 0x1000, 64), None);
}

/// `bl` before an aarch64 return address: the target from the `bl`'s own address.
#[test]
fn the_bl_before_an_aarch64_return_address() {
    use crate::inspect::code_a64::bl_before;
    // 0x1000: bl 0x2000 (imm26 = 0x400), returns to 0x1004.
    assert_eq!(bl_before(&0x9400_0400u32.to_le_bytes(), 0x1004), Some(0x2000));
    // bl -8 (imm26 = 0x3fffffe).
    assert_eq!(bl_before(&0x97ff_fffeu32.to_le_bytes(), 0x1004), Some(0xff8));
    // b 0x2000 and blr x0 are no bl.
    assert_eq!(bl_before(&0x1400_0400u32.to_le_bytes(), 0x1004), None);
    assert_eq!(bl_before(&0xd63f_0000u32.to_le_bytes(), 0x1004), None);
}
