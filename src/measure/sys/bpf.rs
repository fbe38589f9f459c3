//! bpf(2), wrapped so callers hold an `OwnedFd` and get `io::Error`s with
//! the raw errno kept for classification (bpf(2), `include/uapi/linux/bpf.h`).
//!
//! `union bpf_attr` is laid out by hand as a zeroed 128-byte buffer with
//! each command's fields written at their uapi offsets: the union only grows
//! at its end, the kernel requires bytes it does not know to be zero, and
//! libc has no binding for it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_MAP_GET_NEXT_KEY: libc::c_long = 4;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const BPF_BTF_LOAD: libc::c_long = 18;

/// The attribute buffer: large enough for every command used here.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn name(&mut self, off: usize, name: &str) -> &mut Attr {
        // BPF_OBJ_NAME_LEN is 16 with the NUL; the kernel accepts [A-Za-z0-9_.].
        let n = name.len().min(15);
        self.0[off..off + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
}

fn bpf(cmd: libc::c_long, attr: &mut Attr) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a zero-initialised bpf_attr of the size passed; every
    // pointer written into it (keys, values, instructions, log, names) points
    // into memory the caller keeps alive and correctly sized for this call.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), attr.0.len() as libc::c_uint) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(rc: libc::c_long) -> OwnedFd {
    // SAFETY: the kernel just returned `rc` as a new descriptor nobody else owns.
    unsafe { OwnedFd::from_raw_fd(rc as i32) }
}

/// What a map is created with.
#[derive(Debug, Clone, Copy)]
pub struct MapSpec<'a> {
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    pub name: &'a str,
}

/// Map types whose value user space sees once per possible CPU
/// (`BPF_MAP_TYPE_PERCPU_HASH`, `_PERCPU_ARRAY`, `_LRU_PERCPU_HASH`,
/// `_PERCPU_CGROUP_STORAGE`).
const PER_CPU_TYPES: [u32; 4] = [5, 6, 10, 21];

/// A BPF map that knows the sizes the kernel reads and writes through the
/// pointers it is given: every key and value slice is checked against them
/// before the syscall (cilium/ebpf's `map.go` does the same), so no safe
/// call can make the kernel read or write past a slice.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    key_size: usize,
    /// The value as user space passes it: for per-CPU maps the value size
    /// rounded up to 8, times the possible CPUs (`bpf_map_value_size()`).
    value_size: usize,
}

fn wrong_size(what: &str, got: usize, want: usize) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("a {what} of {got} bytes for a map whose {what}s are {want}"))
}

/// BPF_MAP_CREATE.
pub fn map_create(spec: &MapSpec<'_>) -> io::Result<Map> {
    let value_size = if PER_CPU_TYPES.contains(&spec.map_type) {
        // What the kernel's num_possible_cpus() counts: /sys/devices/system/cpu/possible.
        let cpus = crate::inspect::kernel::possible_cpus().map_err(|e| io::Error::other(e.to_string()))?;
        (spec.value_size as usize).next_multiple_of(8) * cpus
    } else {
        spec.value_size as usize
    };
    let mut a = Attr::new();
    a.u32(0, spec.map_type)
        .u32(4, spec.key_size)
        .u32(8, spec.value_size)
        .u32(12, spec.max_entries)
        .u32(16, spec.flags)
        .name(28, spec.name);
    let fd = bpf(BPF_MAP_CREATE, &mut a).map(owned)?;
    Ok(Map { fd, key_size: spec.key_size as usize, value_size })
}

impl Map {
    /// The descriptor, for a program's `ld_imm64` map reference.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Bytes of a value as user space reads and writes it (all CPUs' for a per-CPU map).
    pub fn value_size(&self) -> usize {
        self.value_size
    }

    fn key(&self, key: &[u8]) -> io::Result<*const u8> {
        if key.len() != self.key_size {
            return Err(wrong_size("key", key.len(), self.key_size));
        }
        Ok(key.as_ptr())
    }

    fn value(&self, len: usize) -> io::Result<()> {
        if len != self.value_size {
            return Err(wrong_size("value", len, self.value_size));
        }
        Ok(())
    }

    fn elem(&self, key: *const u8, value: *const u8, flags: u64) -> Attr {
        let mut a = Attr::new();
        a.u32(0, self.fd.as_raw_fd() as u32).u64(8, key as u64).u64(16, value as u64).u64(24, flags);
        a
    }

    /// BPF_MAP_LOOKUP_ELEM: `Ok(false)` when the key is absent.
    pub fn lookup(&self, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
        let k = self.key(key)?;
        self.value(value.len())?;
        absent_is_false(bpf(BPF_MAP_LOOKUP_ELEM, &mut self.elem(k, value.as_mut_ptr(), 0)))
    }

    /// BPF_MAP_UPDATE_ELEM with `flags` (BPF_ANY 0, BPF_NOEXIST 1, BPF_EXIST 2).
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> io::Result<()> {
        let k = self.key(key)?;
        self.value(value.len())?;
        bpf(BPF_MAP_UPDATE_ELEM, &mut self.elem(k, value.as_ptr(), flags)).map(drop)
    }

    /// BPF_MAP_DELETE_ELEM: `Ok(false)` when the key was absent.
    pub fn delete(&self, key: &[u8]) -> io::Result<bool> {
        let k = self.key(key)?;
        absent_is_false(bpf(BPF_MAP_DELETE_ELEM, &mut self.elem(k, std::ptr::null(), 0)))
    }

    /// Every key in the map's order, `bound` at most (a map under
    /// concurrent inserts may restart its walk, which must still end): one
    /// BPF_MAP_GET_NEXT_KEY each. An error is the walk's last item.
    pub fn keys(&self, bound: u32) -> Keys<'_> {
        Keys { map: self, prev: None, left: bound, done: false }
    }

    /// BPF_MAP_GET_NEXT_KEY: the key after `key` (the first with `None`);
    /// `Ok(false)` past the last one.
    pub fn next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> io::Result<bool> {
        let k = match key {
            Some(k) => self.key(k)?,
            None => std::ptr::null(),
        };
        if next.len() != self.key_size {
            return Err(wrong_size("key", next.len(), self.key_size));
        }
        absent_is_false(bpf(BPF_MAP_GET_NEXT_KEY, &mut self.elem(k, next.as_mut_ptr(), 0)))
    }
}

/// The walk of [`Map::keys`].
#[derive(Debug)]
pub struct Keys<'a> {
    map: &'a Map,
    prev: Option<Vec<u8>>,
    left: u32,
    done: bool,
}

impl Iterator for Keys<'_> {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut key = vec![0u8; self.map.key_size];
        match self.map.next_key(self.prev.as_deref(), &mut key) {
            Ok(true) => {
                self.prev = Some(key.clone());
                Some(Ok(key))
            }
            Ok(false) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn absent_is_false(r: io::Result<libc::c_long>) -> io::Result<bool> {
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// What a program is loaded with.
#[derive(Debug, Clone, Copy)]
pub struct ProgSpec<'a> {
    pub prog_type: u32,
    /// Encoded `struct bpf_insn`s (8 bytes each).
    pub insns: &'a [u64],
    pub expected_attach_type: u32,
    /// BTF type id of the attach point in vmlinux (`btf_trace_*`), or 0.
    pub attach_btf_id: u32,
    pub name: &'a str,
    /// A program with subprograms (a helper's callback): its BTF blob
    /// ([`btf_load`]'d here) and `bpf_func_info` records (instruction
    /// offset, FUNC type id), one per subprogram, the program first.
    pub funcs: Option<(&'a [u8], &'a [[u32; 2]])>,
    /// Ask the verifier for its statistics (`BPF_LOG_STATS`: its time,
    /// instructions processed, states) into the log on the first load.
    pub stats: bool,
}

/// BPF_BTF_LOAD: a BTF blob the kernel checks and keeps while a program
/// that names it lives.
pub fn btf_load(blob: &[u8]) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u64(0, blob.as_ptr() as u64).u32(16, blob.len() as u32);
    bpf(BPF_BTF_LOAD, &mut a).map(owned)
}

/// `BPF_LOG_STATS`: the verifier's statistics alone, no instruction trace.
const BPF_LOG_STATS: u32 = 4;

/// BPF_PROG_LOAD; on failure the verifier's log is left in `log` (with
/// `spec.stats`, on success its statistics).
pub fn prog_load(spec: &ProgSpec<'_>, log: &mut [u8]) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut a = Attr::new();
    a.u32(0, spec.prog_type)
        .u32(4, spec.insns.len() as u32)
        .u64(8, spec.insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .name(48, spec.name)
        .u32(68, spec.expected_attach_type)
        .u32(108, spec.attach_btf_id);
    // Held until the load returns: the program keeps its own reference.
    let btf = match spec.funcs {
        Some((blob, records)) => {
            let fd = btf_load(blob)?;
            a.u32(72, fd.as_raw_fd() as u32).u32(76, 8).u64(80, records.as_ptr() as u64).u32(88, records.len() as u32);
            Some(fd)
        }
        None => None,
    };
    if spec.stats && !log.is_empty() {
        a.u32(24, BPF_LOG_STATS).u32(28, log.len() as u32).u64(32, log.as_mut_ptr() as u64);
    }
    let first = bpf(BPF_PROG_LOAD, &mut a);
    let _held = btf;
    match first {
        Ok(fd) => Ok(owned(fd)),
        Err(e) if !log.is_empty() => {
            // Load again with the verifier log on, only to explain the failure.
            a.u32(24, 1).u32(28, log.len() as u32).u64(32, log.as_mut_ptr() as u64);
            match bpf(BPF_PROG_LOAD, &mut a) {
                Ok(fd) => Ok(owned(fd)),
                Err(_) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// What BPF_OBJ_GET_INFO_BY_FD says of a loaded program (`struct
/// bpf_prog_info`): its name and `recursion_misses` (5.12), the runs the
/// kernel skipped because another run of the same program was under way on
/// that CPU (`bpf_prog_inc_misses_counter` in kernel/trace/bpf_trace.c's
/// `__bpf_trace_run` and kernel/bpf/trampoline.c's
/// `__bpf_prog_enter_recur`): 0 on a kernel before 5.12, whose info ends
/// earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgInfo {
    pub name: String,
    pub recursion_misses: u64,
}

/// `offsetof(struct bpf_prog_info, name)`, `recursion_misses`, and the
/// length asked for (up to `recursion_misses`' end: a longer info the
/// kernel truncates to this, a shorter one it fills as far as it knows).
const INFO_NAME: usize = 64;
const INFO_RECURSION_MISSES: usize = 208;
const INFO_LEN: usize = INFO_RECURSION_MISSES + 8;

/// BPF_OBJ_GET_INFO_BY_FD on a program.
pub fn prog_info(prog: BorrowedFd<'_>) -> io::Result<ProgInfo> {
    let mut info = [0u8; INFO_LEN];
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32).u32(4, INFO_LEN as u32).u64(8, info.as_mut_ptr() as u64);
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a)?;
    // The kernel writes back how much it filled.
    let filled = u32::from_ne_bytes(a.0[4..8].try_into().unwrap_or_default()) as usize;
    Ok(parse_prog_info(&info, filled))
}

/// The fields of a `bpf_prog_info` the kernel filled `filled` bytes of.
fn parse_prog_info(info: &[u8; INFO_LEN], filled: usize) -> ProgInfo {
    let name = &info[INFO_NAME..INFO_NAME + 16];
    let name = String::from_utf8_lossy(&name[..name.iter().position(|b| *b == 0).unwrap_or(16)]).into_owned();
    let recursion_misses = if filled >= INFO_LEN {
        u64::from_ne_bytes(info[INFO_RECURSION_MISSES..INFO_LEN].try_into().unwrap_or_default())
    } else {
        0
    };
    ProgInfo { name, recursion_misses }
}

/// BPF_RAW_TRACEPOINT_OPEN: attach a `tp_btf` program (no name: the kernel
/// takes the attach point from the program) and return the link; closing
/// it detaches (no RCU wait in the caller, unlike a perf tracepoint event).
pub fn raw_tracepoint_open(prog: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u64(0, 0).u32(8, prog.as_raw_fd() as u32);
    bpf(BPF_RAW_TRACEPOINT_OPEN, &mut a).map(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map handle on a descriptor that is no map: the size checks must
    /// refuse before any syscall reaches it.
    fn fake(key_size: usize, value_size: usize) -> Map {
        Map { fd: std::fs::File::open("/dev/null").unwrap().into(), key_size, value_size }
    }

    #[test]
    fn prog_info_reads_the_name_and_the_misses_where_the_kernel_filled_them() {
        let mut info = [0u8; INFO_LEN];
        info[INFO_NAME..INFO_NAME + 13].copy_from_slice(b"vdsoctl_enter");
        info[INFO_RECURSION_MISSES..INFO_LEN].copy_from_slice(&7181u64.to_ne_bytes());
        let got = parse_prog_info(&info, INFO_LEN);
        assert_eq!(got, ProgInfo { name: "vdsoctl_enter".into(), recursion_misses: 7181 });
        // A kernel before 5.12 fills less: no misses field, none read.
        assert_eq!(parse_prog_info(&info, 192).recursion_misses, 0);
    }

    #[test]
    fn keys_and_values_of_the_wrong_length_are_refused_before_the_syscall() {
        let m = fake(24, 8 * 4);
        let refused = |r: io::Result<bool>| {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
            assert_eq!(e.raw_os_error(), None, "no syscall was made: {e}");
            e.to_string()
        };
        assert_eq!(refused(m.lookup(&[0; 4], &mut [0; 32])), "a key of 4 bytes for a map whose keys are 24");
        assert_eq!(refused(m.lookup(&[0; 24], &mut [0; 8])), "a value of 8 bytes for a map whose values are 32");
        refused(m.update(&[0; 24], &[0; 31], 0).map(|()| true));
        refused(m.delete(&[0; 23]));
        refused(m.next_key(Some(&[0; 25]), &mut [0; 24]));
        refused(m.next_key(None, &mut [0; 16]));
        // The right sizes reach the kernel, which says this fd is no map.
        assert!(m.lookup(&[0; 24], &mut [0; 32]).unwrap_err().raw_os_error().is_some());
    }
}
