//! The unsafe floor of `bench`: calling clock functions through the C library,
//! through the kernel's own vDSO image (AT_SYSINFO_EHDR, `getauxval(3)`),
//! as raw syscalls (`syscall(2)`) and through the x86_64 vsyscall page.
//!
//! Every wrapper here is safe to call: the preconditions of each `unsafe`
//! block (a valid function address, writable out-pointers, an executable
//! vsyscall page) are established by the constructors in this module, which
//! check them themselves instead of trusting their callers.

#![allow(unsafe_code)]

use crate::inspect::maps::Mapping;
use libc::{c_int, c_long, c_uint, c_void, clockid_t, time_t, timespec, timeval};

/// `clock_gettime` / `clock_getres` signature (vDSO and libc agree).
type ClockFnPtr = unsafe extern "C" fn(clockid_t, *mut timespec) -> c_int;
/// `gettimeofday(tv, tz)`.
type GettimeofdayFnPtr = unsafe extern "C" fn(*mut timeval, *mut c_void) -> c_int;
/// `time(tloc)`.
type TimeFnPtr = unsafe extern "C" fn(*mut time_t) -> time_t;
/// `getcpu(cpu, node, tcache)`.
type GetcpuFnPtr = unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_void) -> c_int;

/// A zeroed timespec, for out-parameters.
pub const fn zero_timespec() -> timespec {
    timespec { tv_sec: 0, tv_nsec: 0 }
}

/// A zeroed timeval, for out-parameters.
pub const fn zero_timeval() -> timeval {
    timeval { tv_sec: 0, tv_usec: 0 }
}

/// The errno the last failed libc call left, or 0.
pub fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

// ---------------------------------------------------------------- libc path

#[cfg(target_env = "gnu")]
extern "C" {
    /// glibc ≥ 2.29 exports `getcpu(3)`; libc does not bind it.
    fn getcpu(cpu: *mut c_uint, node: *mut c_uint) -> c_int;
}

/// The C library's `clock_gettime`, through its dynamic symbol (so an
/// LD_PRELOAD interposer sees it, as it would in any C program).
#[inline(always)]
pub fn libc_clock_gettime(clock: clockid_t, ts: &mut timespec) -> c_int {
    // SAFETY: `ts` is a valid, writable timespec; any clock id is allowed.
    unsafe { libc::clock_gettime(clock, ts) }
}

/// The C library's `clock_getres`.
#[inline(always)]
pub fn libc_clock_getres(clock: clockid_t, ts: &mut timespec) -> c_int {
    // SAFETY: `ts` is a valid, writable timespec; any clock id is allowed.
    unsafe { libc::clock_getres(clock, ts) }
}

/// The C library's `gettimeofday` (no timezone).
#[inline(always)]
pub fn libc_gettimeofday(tv: &mut timeval) -> c_int {
    // SAFETY: `tv` is valid and writable; a null timezone is allowed.
    unsafe { libc::gettimeofday(tv, std::ptr::null_mut()) }
}

/// The C library's `time`.
#[inline(always)]
pub fn libc_time(t: &mut time_t) -> time_t {
    // SAFETY: `t` is valid and writable.
    unsafe { libc::time(t) }
}

/// The C library's `getcpu` (glibc), or `sched_getcpu` elsewhere.
#[inline(always)]
pub fn libc_getcpu(cpu: &mut c_uint, node: &mut c_uint) -> c_int {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: both out-pointers are valid and writable.
        unsafe { getcpu(cpu, node) }
    }
    #[cfg(not(target_env = "gnu"))]
    {
        *node = 0;
        // SAFETY: no arguments; returns -1 with errno on failure.
        let r = unsafe { libc::sched_getcpu() };
        if r >= 0 {
            *cpu = r as c_uint;
            0
        } else {
            r
        }
    }
}

// ------------------------------------------------------------- syscall path

/// A raw syscall with a clock id and a timespec out-parameter
/// (`clock_gettime`, `clock_getres`). Returns -1 and sets errno on failure.
#[inline(always)]
pub fn syscall_clock(nr: i64, clock: clockid_t, ts: &mut timespec) -> c_long {
    // SAFETY: `nr` is one of the clock syscalls from `arch`, both of which
    // take (clockid_t, struct timespec *); `ts` is valid and writable.
    unsafe { libc::syscall(nr as c_long, clock as c_long, ts as *mut timespec) }
}

/// A raw `gettimeofday` syscall.
#[inline(always)]
pub fn syscall_gettimeofday(nr: i64, tv: &mut timeval) -> c_long {
    // SAFETY: `nr` is gettimeofday's number; `tv` valid, timezone null.
    unsafe { libc::syscall(nr as c_long, tv as *mut timeval, std::ptr::null_mut::<c_void>()) }
}

/// A raw `time` syscall.
#[inline(always)]
pub fn syscall_time(nr: i64, t: &mut time_t) -> c_long {
    // SAFETY: `nr` is time's number; `t` valid and writable.
    unsafe { libc::syscall(nr as c_long, t as *mut time_t) }
}

/// A raw `getcpu` syscall.
#[inline(always)]
pub fn syscall_getcpu(nr: i64, cpu: &mut c_uint, node: &mut c_uint) -> c_long {
    // SAFETY: `nr` is getcpu's number; out-pointers valid; tcache null.
    unsafe { libc::syscall(nr as c_long, cpu as *mut c_uint, node as *mut c_uint, std::ptr::null_mut::<c_void>()) }
}

// ---------------------------------------------------------------- vDSO path

/// vdsoctl's own vDSO image, as the kernel mapped it: the bytes from
/// AT_SYSINFO_EHDR to the end of the `[vdso]` mapping.
#[derive(Debug, Clone, Copy)]
pub struct VdsoImage {
    bytes: &'static [u8],
}

impl VdsoImage {
    /// The image, when `getauxval(AT_SYSINFO_EHDR)` is the start of `mapping`
    /// (vdsoctl's own `[vdso]` line from /proc/self/maps) and the mapping is
    /// readable. `None` otherwise: no vDSO, or a mapping we did not expect.
    pub fn own(mapping: &Mapping) -> Option<VdsoImage> {
        // SAFETY: getauxval has no preconditions.
        let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as u64;
        if base == 0 || base != mapping.start || mapping.name() != "[vdso]" || !mapping.perms.starts_with('r') {
            return None;
        }
        let len = usize::try_from(mapping.size()).ok()?;
        if len == 0 || len > 1 << 24 {
            return None;
        }
        // SAFETY: [base, base+len) is the kernel's [vdso] mapping of this
        // process, readable (checked above), never unmapped by vdsoctl and
        // never written by anyone, so it is valid for 'static as shared bytes.
        let bytes = unsafe { std::slice::from_raw_parts(base as usize as *const u8, len) };
        Some(VdsoImage { bytes })
    }

    /// The image bytes (bounds for every parse).
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }

    /// The absolute address of `offset`, when it lies inside the image.
    fn addr(&self, offset: usize) -> Option<usize> {
        (offset < self.bytes.len()).then(|| self.bytes.as_ptr() as usize + offset)
    }

    /// `clock_gettime` at `offset`: `offset` must be the image offset of the
    /// versioned STT_FUNC symbol the kernel exports for it (measure::vdso).
    pub fn clock_gettime(&self, offset: usize) -> Option<VdsoClockFn> {
        // SAFETY: the address is inside the kernel's own vDSO text and is the
        // value of the kernel's exported clock_gettime symbol, whose C ABI is
        // `int (clockid_t, struct timespec *)` (include/vdso/*, vdso.lds.S).
        self.addr(offset).map(|a| VdsoClockFn(unsafe { std::mem::transmute::<usize, ClockFnPtr>(a) }))
    }

    /// `clock_getres` at `offset` (same contract as [`VdsoImage::clock_gettime`]).
    pub fn clock_getres(&self, offset: usize) -> Option<VdsoClockFn> {
        // SAFETY: as above; clock_getres has the same signature.
        self.addr(offset).map(|a| VdsoClockFn(unsafe { std::mem::transmute::<usize, ClockFnPtr>(a) }))
    }

    /// `gettimeofday` at `offset`.
    pub fn gettimeofday(&self, offset: usize) -> Option<VdsoGettimeofdayFn> {
        // SAFETY: as above; `int (struct timeval *, struct timezone *)`.
        self.addr(offset).map(|a| VdsoGettimeofdayFn(unsafe { std::mem::transmute::<usize, GettimeofdayFnPtr>(a) }))
    }

    /// `time` at `offset`.
    pub fn time(&self, offset: usize) -> Option<VdsoTimeFn> {
        // SAFETY: as above; `time_t (time_t *)`.
        self.addr(offset).map(|a| VdsoTimeFn(unsafe { std::mem::transmute::<usize, TimeFnPtr>(a) }))
    }

    /// `getcpu` at `offset`.
    pub fn getcpu(&self, offset: usize) -> Option<VdsoGetcpuFn> {
        // SAFETY: as above; `long (unsigned *, unsigned *, struct getcpu_cache *)`.
        self.addr(offset).map(|a| VdsoGetcpuFn(unsafe { std::mem::transmute::<usize, GetcpuFnPtr>(a) }))
    }
}

/// The vDSO's `clock_gettime` or `clock_getres`; returns 0 or `-errno`.
#[derive(Debug, Clone, Copy)]
pub struct VdsoClockFn(ClockFnPtr);

impl VdsoClockFn {
    /// Call it.
    #[inline(always)]
    pub fn call(self, clock: clockid_t, ts: &mut timespec) -> c_int {
        // SAFETY: the pointer came from VdsoImage (a kernel vDSO function
        // with this signature); `ts` is valid and writable.
        unsafe { (self.0)(clock, ts) }
    }
}

/// The vDSO's `gettimeofday`; returns 0 or `-errno`.
#[derive(Debug, Clone, Copy)]
pub struct VdsoGettimeofdayFn(GettimeofdayFnPtr);

impl VdsoGettimeofdayFn {
    /// Call it with no timezone.
    #[inline(always)]
    pub fn call(self, tv: &mut timeval) -> c_int {
        // SAFETY: kernel vDSO function of this signature; `tv` valid, tz null.
        unsafe { (self.0)(tv, std::ptr::null_mut()) }
    }
}

/// The vDSO's `time`.
#[derive(Debug, Clone, Copy)]
pub struct VdsoTimeFn(TimeFnPtr);

impl VdsoTimeFn {
    /// Call it.
    #[inline(always)]
    pub fn call(self, t: &mut time_t) -> time_t {
        // SAFETY: kernel vDSO function of this signature; `t` valid.
        unsafe { (self.0)(t) }
    }
}

/// The vDSO's `getcpu`; returns 0 or `-errno`.
#[derive(Debug, Clone, Copy)]
pub struct VdsoGetcpuFn(GetcpuFnPtr);

impl VdsoGetcpuFn {
    /// Call it (no cache).
    #[inline(always)]
    pub fn call(self, cpu: &mut c_uint, node: &mut c_uint) -> c_int {
        // SAFETY: kernel vDSO function of this signature; pointers valid.
        unsafe { (self.0)(cpu, node, std::ptr::null_mut()) }
    }
}

// ----------------------------------------------------------- vsyscall path

/// The x86_64 legacy vsyscall page, proven mapped executable in this process.
#[derive(Debug, Clone, Copy)]
pub struct VsyscallPage {
    gettimeofday: GettimeofdayFnPtr,
    time: TimeFnPtr,
    getcpu: GetcpuFnPtr,
}

impl VsyscallPage {
    /// The page, only when vdsoctl's own maps list `[vsyscall]` at the fixed
    /// address with execute permission (emulate or xonly mode). With
    /// `vsyscall=none` (or any other arch) there is nothing to jump to.
    #[cfg(target_arch = "x86_64")]
    pub fn own(maps: &[Mapping]) -> Option<VsyscallPage> {
        use crate::arch::vsyscall;
        let page = maps.iter().find(|m| m.name() == "[vsyscall]")?;
        if page.start != vsyscall::BASE || page.size() < 4096 || !page.executable() {
            return None;
        }
        // SAFETY: the page is mapped executable at the fixed ABI address; the
        // kernel emulates (or, in native mode, runs) a call to each of these
        // three entry points with the C signatures below
        // (arch/x86/entry/vsyscall/vsyscall_64.c).
        unsafe {
            Some(VsyscallPage {
                gettimeofday: std::mem::transmute::<usize, GettimeofdayFnPtr>(vsyscall::GETTIMEOFDAY as usize),
                time: std::mem::transmute::<usize, TimeFnPtr>(vsyscall::TIME as usize),
                getcpu: std::mem::transmute::<usize, GetcpuFnPtr>(vsyscall::GETCPU as usize),
            })
        }
    }

    /// No vsyscall page outside x86_64.
    #[cfg(not(target_arch = "x86_64"))]
    pub fn own(_maps: &[Mapping]) -> Option<VsyscallPage> {
        None
    }

    /// `gettimeofday` through the page.
    #[inline(always)]
    pub fn gettimeofday(self, tv: &mut timeval) -> c_int {
        // SAFETY: executable vsyscall entry (checked in `own`); `tv` valid.
        unsafe { (self.gettimeofday)(tv, std::ptr::null_mut()) }
    }

    /// `time` through the page.
    #[inline(always)]
    pub fn time(self, t: &mut time_t) -> time_t {
        // SAFETY: executable vsyscall entry (checked in `own`); `t` valid.
        unsafe { (self.time)(t) }
    }

    /// `getcpu` through the page.
    #[inline(always)]
    pub fn getcpu(self, cpu: &mut c_uint, node: &mut c_uint) -> c_int {
        // SAFETY: executable vsyscall entry (checked in `own`); pointers valid.
        unsafe { (self.getcpu)(cpu, node, std::ptr::null_mut()) }
    }
}
