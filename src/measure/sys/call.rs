//! The unsafe floor of `bench`: calling clock functions through the C library,
//! through the kernel's own vDSO image (AT_SYSINFO_EHDR, `getauxval(3)`),
//! as raw syscalls (`syscall(2)`) and through the x86_64 vsyscall page.
//!
//! Every wrapper here is safe to call: the preconditions of each `unsafe`
//! block (a valid function address, writable out-pointers, an executable
//! vsyscall page) are established by the constructors in this module, which
//! check them themselves instead of trusting their callers.

#![allow(unsafe_code)]

use crate::arch::{VdsoAbi, VdsoFn, VdsoSyscall};
use crate::inspect::maps::Mapping;
use crate::measure::bench::vdso::Symbols;
use libc::{c_int, c_long, c_uint, c_void, clockid_t, time_t, timespec, timeval};

/// `clock_gettime` / `clock_getres` signature (vDSO and libc agree).
type ClockFnPtr = unsafe extern "C" fn(clockid_t, *mut timespec) -> c_int;
/// `gettimeofday(tv, tz)`.
type GettimeofdayFnPtr = unsafe extern "C" fn(*mut timeval, *mut c_void) -> c_int;
/// `time(tloc)`.
type TimeFnPtr = unsafe extern "C" fn(*mut time_t) -> time_t;
/// `getcpu(cpu, node, tcache)`.
type GetcpuFnPtr = unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_void) -> c_int;
/// The vDSO's `getrandom(buffer, len, flags, opaque_state, opaque_len)`
/// (lib/vdso/getrandom.c): bytes written or `-errno`.
type GetrandomFnPtr = unsafe extern "C" fn(*mut c_void, usize, c_uint, *mut c_void, usize) -> isize;

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

/// The C library's `getrandom(2)` wrapper, `flags` 0 (on glibc < 2.41 a
/// syscall every call). Returns the bytes written, or -1 with errno.
#[inline(always)]
pub fn libc_getrandom(buf: &mut [u8]) -> isize {
    // SAFETY: `buf` is valid and writable for `buf.len()` bytes.
    unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) }
}

// ------------------------------------------------------------- syscall path

/// Refuse a call whose number is not of the signature a wrapper passes
/// (`EINVAL`, as the kernel says of a bad argument): no syscall is made.
fn refuse() -> c_long {
    // SAFETY: __errno_location returns this thread's errno slot (glibc and musl).
    unsafe { *libc::__errno_location() = libc::EINVAL };
    -1
}

/// A raw syscall with a clock id and a timespec out-parameter
/// (`clock_gettime`, `clock_getres`). Returns -1 and sets errno on failure,
/// and refuses (`EINVAL`, no syscall) a number of another function.
#[inline(always)]
pub fn syscall_clock(sc: VdsoSyscall, clock: clockid_t, ts: &mut timespec) -> c_long {
    if !matches!(sc.function(), VdsoFn::ClockGettime | VdsoFn::ClockGetres) {
        return refuse();
    }
    // SAFETY: `sc` comes from the arch table for this process's ABI and is
    // clock_gettime or clock_getres, both `(clockid_t, struct timespec *)`
    // with the native timespec; `ts` is valid and writable.
    unsafe { libc::syscall(sc.nr() as c_long, clock as c_long, ts as *mut timespec) }
}

/// A raw `gettimeofday` syscall (refuses any other number).
#[inline(always)]
pub fn syscall_gettimeofday(sc: VdsoSyscall, tv: &mut timeval) -> c_long {
    if sc.function() != VdsoFn::Gettimeofday {
        return refuse();
    }
    // SAFETY: `sc` is gettimeofday's number in this ABI; `tv` valid, timezone null.
    unsafe { libc::syscall(sc.nr() as c_long, tv as *mut timeval, std::ptr::null_mut::<c_void>()) }
}

/// A raw `time` syscall (refuses any other number).
#[inline(always)]
pub fn syscall_time(sc: VdsoSyscall, t: &mut time_t) -> c_long {
    if sc.function() != VdsoFn::Time {
        return refuse();
    }
    // SAFETY: `sc` is time's number in this ABI; `t` valid and writable.
    unsafe { libc::syscall(sc.nr() as c_long, t as *mut time_t) }
}

/// A raw `getcpu` syscall (refuses any other number).
#[inline(always)]
pub fn syscall_getcpu(sc: VdsoSyscall, cpu: &mut c_uint, node: &mut c_uint) -> c_long {
    if sc.function() != VdsoFn::Getcpu {
        return refuse();
    }
    // SAFETY: `sc` is getcpu's number in this ABI; out-pointers valid; tcache null.
    unsafe { libc::syscall(sc.nr() as c_long, cpu as *mut c_uint, node as *mut c_uint, std::ptr::null_mut::<c_void>()) }
}

/// A raw `getrandom` syscall, `flags` 0 (refuses any other number).
#[inline(always)]
pub fn syscall_getrandom(sc: VdsoSyscall, buf: &mut [u8]) -> c_long {
    if sc.function() != VdsoFn::Getrandom {
        return refuse();
    }
    // SAFETY: `sc` is getrandom's number in this ABI, `(void *buf, size_t
    // len, unsigned flags)`; `buf` is valid and writable for its length.
    unsafe { libc::syscall(sc.nr() as c_long, buf.as_mut_ptr(), buf.len(), 0 as c_uint) }
}

// ---------------------------------------------------------------- vDSO path

/// This process's own mappings, read here rather than taken from a caller
/// (a `Mapping` has public fields: trusting one would let safe code forge
/// the range `from_raw_parts` or a call is made on).
fn own_maps() -> Option<Vec<Mapping>> {
    crate::inspect::maps::parse(&std::fs::read_to_string("/proc/self/maps").ok()?).ok()
}

/// vdsoctl's own vDSO image, as the kernel mapped it: the bytes from
/// AT_SYSINFO_EHDR to the end of the `[vdso]` mapping.
#[derive(Debug, Clone, Copy)]
pub struct VdsoImage {
    bytes: &'static [u8],
}

impl VdsoImage {
    /// The image, when `getauxval(AT_SYSINFO_EHDR)` is the start of this
    /// process's `[vdso]` mapping (read from /proc/self/maps here) and the
    /// mapping is readable. `None` otherwise: no vDSO, or a mapping we did
    /// not expect.
    pub fn own() -> Option<VdsoImage> {
        // SAFETY: getauxval has no preconditions.
        let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as u64;
        let maps = own_maps()?;
        let mapping = maps.iter().find(|m| m.name() == "[vdso]")?;
        if base == 0 || base != mapping.start || !mapping.perms.starts_with('r') {
            return None;
        }
        let len = usize::try_from(mapping.size()).ok()?;
        if len == 0 || len > 1 << 24 {
            return None;
        }
        // SAFETY: [base, base+len) is the kernel's [vdso] mapping of this
        // process as its own maps list it, readable (checked above), never
        // unmapped by vdsoctl and never written by anyone, so it is valid
        // for 'static as shared bytes.
        let bytes = unsafe { std::slice::from_raw_parts(base as usize as *const u8, len) };
        Some(VdsoImage { bytes })
    }

    /// Where the image is mapped.
    pub fn base(&self) -> u64 {
        self.bytes.as_ptr() as u64
    }

    /// The image bytes (bounds for every parse).
    #[cfg(test)]
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }

    /// The clock functions of this image, named by the arch table for this
    /// process's ABI (`arch::vdso_abi`: a caller cannot pair a name with
    /// another function's signature), resolved through the ELF reader
    /// (`measure::bench::vdso::resolve`: a defined STT_FUNC with the ABI's version,
    /// inside a PT_LOAD segment) and bound: the only way to a [`BoundSymbol`].
    pub fn bind(&self) -> crate::Result<(Symbols, Vec<BoundSymbol>)> {
        let abi = crate::arch::vdso_abi(crate::arch::HOST_MACHINE, crate::arch::HOST_IS_64).ok_or_else(|| {
            crate::Error::malformed("the vDSO image", "no vDSO symbol table is known for this architecture")
        })?;
        self.bind_as(abi)
    }

    fn bind_as(&self, abi: &VdsoAbi) -> crate::Result<(Symbols, Vec<BoundSymbol>)> {
        let syms = crate::measure::bench::vdso::resolve(self.bytes, abi)?;
        let bound = syms
            .resolved
            .iter()
            .filter(|r| r.offset < self.bytes.len())
            .map(|r| BoundSymbol { function: r.function, addr: self.bytes.as_ptr() as usize + r.offset })
            .collect();
        Ok((syms, bound))
    }
}

/// An exported function of this process's vDSO, resolved by
/// [`VdsoImage::bind`]: its address and the function its name and version
/// say it is. Callable only as that function's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundSymbol {
    function: VdsoFn,
    addr: usize,
}

impl BoundSymbol {
    /// The function it is.
    pub fn function(self) -> VdsoFn {
        self.function
    }

    /// As `clock_gettime` or `clock_getres` (`None` for any other function).
    pub fn clock_fn(self) -> Option<VdsoClockFn> {
        // SAFETY: the address is the value of the kernel vDSO's exported
        // clock_gettime/clock_getres symbol in this process's own image
        // (VdsoImage::bind), whose C ABI is `int (clockid_t, struct
        // timespec *)` (include/vdso/*, vdso.lds.S).
        matches!(self.function, VdsoFn::ClockGettime | VdsoFn::ClockGetres)
            .then(|| VdsoClockFn(unsafe { std::mem::transmute::<usize, ClockFnPtr>(self.addr) }))
    }

    /// As `gettimeofday`.
    pub fn gettimeofday_fn(self) -> Option<VdsoGettimeofdayFn> {
        // SAFETY: as above; `int (struct timeval *, struct timezone *)`.
        (self.function == VdsoFn::Gettimeofday)
            .then(|| VdsoGettimeofdayFn(unsafe { std::mem::transmute::<usize, GettimeofdayFnPtr>(self.addr) }))
    }

    /// As `time`.
    pub fn time_fn(self) -> Option<VdsoTimeFn> {
        // SAFETY: as above; `time_t (time_t *)`.
        (self.function == VdsoFn::Time)
            .then(|| VdsoTimeFn(unsafe { std::mem::transmute::<usize, TimeFnPtr>(self.addr) }))
    }

    /// As `getcpu`.
    pub fn getcpu_fn(self) -> Option<VdsoGetcpuFn> {
        // SAFETY: as above; `long (unsigned *, unsigned *, struct getcpu_cache *)`.
        (self.function == VdsoFn::Getcpu)
            .then(|| VdsoGetcpuFn(unsafe { std::mem::transmute::<usize, GetcpuFnPtr>(self.addr) }))
    }

    /// As `getrandom`, with the sizes of its opaque state asked of the
    /// function itself (`None` for another function, or when the vDSO
    /// refuses the query).
    pub fn getrandom_fn(self) -> Option<VdsoGetrandomFn> {
        if self.function != VdsoFn::Getrandom {
            return None;
        }
        // SAFETY: as above; `ssize_t (void *, size_t, unsigned int, void *,
        // size_t)` (lib/vdso/getrandom.c, the arch's vgetrandom.c).
        let f = unsafe { std::mem::transmute::<usize, GetrandomFnPtr>(self.addr) };
        let mut params = OpaqueParams::default();
        // SAFETY: the documented query (vdso_test_getrandom.c): a null buffer
        // of length 0, no flags, and opaque_len ~0 make the function write
        // one `struct vgetrandom_opaque_params` to `opaque_state` and return
        // 0; `params` is that struct, valid and writable.
        let rc = unsafe { f(std::ptr::null_mut(), 0, 0, (&mut params as *mut OpaqueParams).cast(), !0usize) };
        let page = page_size();
        let usable = rc == 0 && params.size_of_opaque_state > 0 && params.size_of_opaque_state as usize <= page;
        usable.then_some(VdsoGetrandomFn { f, params })
    }
}

/// `struct vgetrandom_opaque_params` (include/uapi/linux/random.h): how the
/// caller must map the per-thread state of the vDSO's getrandom.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct OpaqueParams {
    size_of_opaque_state: u32,
    mmap_prot: u32,
    mmap_flags: u32,
    reserved: [u32; 13],
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|p| *p > 0).unwrap_or(4096)
}

/// The vDSO's `getrandom`, bound, with the state parameters it gave. A call
/// needs a state: [`VdsoGetrandomFn::state`].
#[derive(Debug, Clone, Copy)]
pub struct VdsoGetrandomFn {
    f: GetrandomFnPtr,
    params: OpaqueParams,
}

impl VdsoGetrandomFn {
    /// Bytes of opaque state a thread needs (the vDSO's `sizeof(struct
    /// vgetrandom_state)`).
    pub fn state_size(self) -> u32 {
        self.params.size_of_opaque_state
    }

    /// One thread's state, mapped as the vDSO asked (`mmap_prot`,
    /// `mmap_flags`: MAP_DROPPABLE, so the kernel may zero it under memory
    /// pressure and the vDSO then reseeds), one page-aligned mapping so
    /// the state never straddles a page.
    pub fn state(self) -> std::io::Result<VdsoGetrandom> {
        let page = page_size();
        let size = self.params.size_of_opaque_state as usize;
        let len = size.div_ceil(page) * page;
        // SAFETY: a fresh anonymous mapping (fd -1, offset 0) at an address of
        // the kernel's choice, so no existing memory is touched; the prot and
        // flags are the vDSO's own, which is what it will write through.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                self.params.mmap_prot as c_int,
                self.params.mmap_flags as c_int,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(VdsoGetrandom { f: self.f, state: addr, len, state_size: size })
    }
}

/// The vDSO's `getrandom` with one thread's opaque state, owned: the
/// mapping is unmapped on drop. Not `Sync`: a state must never be used by
/// two threads at once (vdso_test_getrandom.c keeps one per thread); it may
/// move to another thread with its owner.
#[derive(Debug)]
pub struct VdsoGetrandom {
    f: GetrandomFnPtr,
    state: *mut c_void,
    len: usize,
    state_size: usize,
}

// SAFETY: the state is plain memory the vDSO reads and writes only during a
// call made through this owner; moving the owner (and so the state) to
// another thread is what a thread-local state allows. The raw pointer keeps
// the type `!Sync`, so no two threads call with it at once.
unsafe impl Send for VdsoGetrandom {}

impl VdsoGetrandom {
    /// Fill `buf` (flags 0); returns the bytes written or `-errno`. The
    /// first call of a state, and the first after the kernel reseeds, enter
    /// the kernel once to fetch a key; the rest stay in user space.
    #[inline(always)]
    pub fn call(&self, buf: &mut [u8]) -> isize {
        // SAFETY: a kernel vDSO getrandom of this signature (bound by
        // BoundSymbol::getrandom_fn); `buf` valid and writable for its
        // length; `state` is this owner's page-aligned mapping of at least
        // `state_size` bytes with the prot and flags the vDSO asked for,
        // alive until drop, and used by one thread at a time (`!Sync`).
        unsafe { (self.f)(buf.as_mut_ptr().cast(), buf.len(), 0, self.state, self.state_size) }
    }
}

impl Drop for VdsoGetrandom {
    fn drop(&mut self) {
        // SAFETY: `state`/`len` are exactly the mapping `state` made, owned
        // by this value alone and unmapped once, here.
        unsafe { libc::munmap(self.state, self.len) };
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
    /// The page, only when vdsoctl's own maps (/proc/self/maps, read here)
    /// list `[vsyscall]` at the fixed address with execute permission
    /// (emulate or xonly mode). With `vsyscall=none` (or any other arch)
    /// there is nothing to jump to.
    #[cfg(target_arch = "x86_64")]
    pub fn own() -> Option<VsyscallPage> {
        use crate::arch::vsyscall;
        let maps = own_maps()?;
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
    pub fn own() -> Option<VsyscallPage> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn errno_of(rc: c_long) -> i32 {
        assert_eq!(rc, -1);
        last_errno()
    }

    #[test]
    fn a_clock_syscall_is_called_only_with_its_own_signature() {
        let gettime = VdsoSyscall::host(VdsoFn::ClockGettime).unwrap();
        let tod = VdsoSyscall::host(VdsoFn::Gettimeofday).unwrap();
        let (mut ts, mut tv, mut t, mut cpu, mut node) = (zero_timespec(), zero_timeval(), 0, 0, 0);
        assert_eq!(syscall_clock(gettime, libc::CLOCK_MONOTONIC, &mut ts), 0);
        assert!(ts.tv_sec > 0 || ts.tv_nsec > 0);
        // Another function's number: refused, no syscall.
        assert_eq!(errno_of(syscall_clock(tod, libc::CLOCK_MONOTONIC, &mut ts)), libc::EINVAL);
        assert_eq!(errno_of(syscall_gettimeofday(gettime, &mut tv)), libc::EINVAL);
        assert_eq!(errno_of(syscall_time(gettime, &mut t)), libc::EINVAL);
        assert_eq!(errno_of(syscall_getcpu(tod, &mut cpu, &mut node)), libc::EINVAL);
        let mut buf = [0u8; 16];
        assert_eq!(errno_of(syscall_getrandom(tod, &mut buf)), libc::EINVAL);
        if let Some(gr) = VdsoSyscall::host(VdsoFn::Getrandom) {
            assert_eq!(syscall_getrandom(gr, &mut buf), 16);
        }
        assert_eq!(tv.tv_sec, 0, "the refused call wrote nothing");
        // A number the ABI does not have is no VdsoSyscall at all.
        if cfg!(target_arch = "x86_64") {
            assert!(VdsoSyscall::host(VdsoFn::ClockGettime64).is_none());
        }
    }

    #[test]
    fn only_resolved_exports_of_the_own_image_are_bound() {
        let image = VdsoImage::own().expect("a [vdso] in this process");
        let (_, bound) = image.bind().unwrap();
        let cg = bound.iter().find(|b| b.function() == VdsoFn::ClockGettime).unwrap();
        let mut ts = zero_timespec();
        assert_eq!(cg.clock_fn().unwrap().call(libc::CLOCK_MONOTONIC, &mut ts), 0);
        // A symbol is callable only as its own function.
        assert!(cg.gettimeofday_fn().is_none() && cg.time_fn().is_none() && cg.getcpu_fn().is_none());
        assert!(cg.getrandom_fn().is_none());
        // An unknown name binds nothing.
        let host = crate::arch::vdso_abi(crate::arch::HOST_MACHINE, crate::arch::HOST_IS_64).unwrap();
        let unknown = VdsoAbi {
            symbols: &[crate::arch::VdsoSymbol {
                function: VdsoFn::ClockGettime,
                name: "__vdso_no_such_clock",
                since: None,
                fast: true,
            }],
            ..*host
        };
        let (syms, bound) = image.bind_as(&unknown).unwrap();
        assert!(syms.resolved.is_empty() && bound.is_empty());
    }

    #[test]
    fn the_vdso_getrandom_fills_buffers_from_its_own_state() {
        let image = VdsoImage::own().expect("a [vdso] in this process");
        let (_, bound) = image.bind().unwrap();
        let Some(sym) = bound.iter().find(|b| b.function() == VdsoFn::Getrandom) else {
            return; // a kernel before 6.11 (x86_64): nothing to call
        };
        let f = sym.getrandom_fn().expect("the params query answers");
        assert!(f.state_size() > 0 && (f.state_size() as usize) <= page_size());
        let state = f.state().unwrap();
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        assert_eq!(state.call(&mut a), 16);
        assert_eq!(state.call(&mut b), 16);
        assert_ne!(a, b, "two draws of 16 random bytes differ");
        assert_ne!(a, [0u8; 16]);
        let mut big = vec![0u8; 4096];
        assert_eq!(state.call(&mut big), 4096);
        drop(state);
        // A second state of the same function works on its own.
        assert_eq!(f.state().unwrap().call(&mut a), 16);
    }
}
