//! The `fentry` attach: one program per clock syscall function
//! (`__x64_sys_clock_gettime`, `__ia32_sys_clock_gettime32`, …) instead of
//! one on `sys_enter`, so other syscalls run no program at all. The same
//! keys, counts and tree logic as the `sys_enter` program
//! ([`Generator::count_tail`]); the ABI and function are known from the
//! attach point, the clock id is the first argument in the `pt_regs` the
//! function is given. Needs BPF trampolines (x86_64, Linux 5.5,
//! `CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS`) and BTF for each function; a
//! kernel that refuses it gets the `sys_enter` program.

use super::gen::Generator;
use super::insn::{Alu, Asm, Cond, Helper, Size, R0, R1, R2, R3, R4, R8, R9};
use super::layout::{self, ABI_COMPAT, ABI_NATIVE};
use crate::arch::{Abi, VdsoFn};
use crate::error::{Facility, FentryCause};
use crate::inspect::btf::Btf;

/// `BPF_TRACE_FENTRY`.
pub(super) const ATTACH_TRACE_FENTRY: u32 = 24;

/// One clock syscall function to attach to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FentryPoint {
    /// [`ABI_NATIVE`] or [`ABI_COMPAT`].
    pub abi: u8,
    pub func: VdsoFn,
    pub name: &'static str,
    /// The function's BTF type id in vmlinux.
    pub btf_id: u32,
}

/// The clock syscall functions of `host` and its compat ABI in `btf`, or
/// the first one it lacks.
pub(super) fn points(btf: &Btf, host: Abi) -> Result<Vec<FentryPoint>, Facility> {
    let wanted: Vec<(u8, VdsoFn, &'static str)> = [(ABI_NATIVE, Some(host)), (ABI_COMPAT, host.compat())]
        .into_iter()
        .filter_map(|(code, abi)| Some((code, abi?)))
        .flat_map(|(code, abi)| abi.syscall_functions().iter().map(move |(f, name)| (code, *f, *name)))
        .collect();
    if wanted.is_empty() {
        return Err(Facility::FentryNoFunctions { abi: host.name() });
    }
    let names: Vec<&str> = wanted.iter().map(|w| w.2).collect();
    let ids = btf.func_ids(&names);
    wanted
        .iter()
        .zip(ids)
        .map(|(&(abi, func, name), id)| {
            let btf_id = id.ok_or(Facility::FentryNoBtfFunction { name })?;
            Ok(FentryPoint { abi, func, name, btf_id })
        })
        .collect()
}

/// The attach points of the fentry engine here, found and probed: an
/// empty program loaded at the first (a locked-down kernel, or one
/// without trampolines, refuses it) before any map is made.
#[derive(Debug, Clone)]
pub struct FentryPoints(pub(super) Vec<FentryPoint>);

impl FentryPoints {
    /// Find the functions in the kernel's BTF and probe the first.
    pub fn probe() -> crate::error::Result<FentryPoints> {
        use crate::error::{Error, Hint};
        let host = crate::inspect::kernel::abi().ok_or(Error::Facility {
            errno: None,
            what: Facility::FentryUnknownArch,
            hint: Hint::FentryRefused,
        })?;
        // PREEMPT_RT runs trampolines with migration, not preemption,
        // disabled: a thread that preempts another inside the program on
        // the same CPU is skipped (a recursion miss), and its call is not
        // counted — the kernel matrix lost 15,627 of 40,000 calls of two
        // threads so. The sys_enter program runs with preemption off.
        if crate::inspect::kernel::is_preempt_rt() {
            return Err(Error::Facility {
                errno: None,
                what: Facility::FentryRefused { cause: FentryCause::PreemptRt },
                hint: Hint::FentryRefused,
            });
        }
        let btf = Btf::vmlinux()?;
        let points =
            points(&btf, host).map_err(|what| Error::Facility { errno: None, what, hint: Hint::FentryRefused })?;
        let first = points.first().copied().ok_or(Error::Facility {
            errno: None,
            what: Facility::FentryNoPoints,
            hint: Hint::FentryRefused,
        })?;
        let mut a = Asm::new();
        a.mov_imm(R0, 0).exit();
        super::load_prog_as("vdsoctl_feprobe", ATTACH_TRACE_FENTRY, first.btf_id, a.finish())
            .map_err(|e| super::fentry_refused(first.name, e))?;
        Ok(FentryPoints(points))
    }
}

impl Generator {
    /// `fentry/<function>(const struct pt_regs *regs)`: count one call of
    /// the function `p` names.
    pub fn fentry(&self, p: &FentryPoint) -> Result<Vec<u64>, String> {
        let l = self.layout;
        let mut a = Asm::new();
        self.keep_ctx(&mut a);
        a.load(Size::Dw, R8, R1, 0);
        self.skip_vsyscall_emulation(&mut a, p);
        // `futex`: only the calls whose op makes them this robust unlock's fallback.
        if let Some(op) = p.func.futex_op() {
            let [arg1, _] = if p.abi == ABI_COMPAT { l.args12_compat } else { l.args12_native };
            Self::part(&mut a, R2, R8, arg1).alu_imm(Alu::And, R2, op.mask as i32);
            a.jump_imm(Cond::Ne, R2, op.value as i32, "out");
        }
        a.call(Helper::GetCurrentTaskBtf).mov(R9, R0);
        Self::zero_key(&mut a);
        let random = match p.func.kind() {
            crate::arch::FnKind::Random => true,
            crate::arch::FnKind::Clock | crate::arch::FnKind::Cpu | crate::arch::FnKind::Futex => false,
        };
        if random {
            a.mov_imm(R4, layout::key_word(p.abi, p.func));
            self.random_key(&mut a, p.abi == ABI_COMPAT, "tail");
            a.label("tail");
            self.capture_site(&mut a);
            self.count_tail(&mut a);
            return a.finish();
        }
        if p.func.takes_clock() {
            let arg0 = if p.abi == ABI_COMPAT { l.arg0_compat } else { l.arg0_native };
            Self::part(&mut a, R3, R8, arg0);
        } else {
            a.mov_imm(R3, 0);
        }
        a.mov_imm(R4, layout::key_word(p.abi, p.func));
        Self::clock_key(&mut a);
        self.capture_site(&mut a);
        self.count_tail(&mut a);
        a.finish()
    }

    /// The kernel's vsyscall emulation calls `__x64_sys_time`,
    /// `__x64_sys_gettimeofday` and `__x64_sys_getcpu` itself, with the
    /// faulting ip (in the vsyscall page, the kernel half) still in `regs`:
    /// those calls are the vsyscall program's, not syscalls. R8: the regs.
    fn skip_vsyscall_emulation(&self, a: &mut Asm, p: &FentryPoint) {
        let l = self.layout;
        let emulated = p.abi == ABI_NATIVE && l.vsyscall.is_some() && crate::arch::vsyscall::SLOTS.contains(&p.func);
        let Some((ip, _)) = l.site.filter(|_| emulated) else { return };
        Self::member(a, Size::Dw, R2, R8, ip, 0);
        a.alu_imm(Alu::Arsh, R2, 32).jump_imm(Cond::Eq, R2, -1, "out");
    }
}
