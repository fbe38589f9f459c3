//! A handle on one target process: `/proc/PID` opened once as a directory, so
//! that every later read (maps, auxv, mem, exe, task) is of the same process
//! even if the PID is recycled meanwhile — a dead process's directory fd
//! answers ESRCH instead of silently reading its successor.
//!
//! A process that execs while it is read is another matter: the directory
//! is the same task, but maps, auxv and mem may come from the old image,
//! the new one half-loaded, or an address space already torn down (empty
//! maps, EIO from mem). [`Process::read_consistent`] brackets a read with
//! an [`ExecStamp`] taken before and after, and retries while they differ.

use crate::error::{ptrace_hint, Error, Hint, Result};
use crate::inspect::auxv::{self, AuxEntry, WordSize};
use crate::inspect::maps::{self, Mapping};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// The largest /proc file or memory range we read in one go (DESIGN: reads bounded).
pub const READ_LIMIT: u64 = 64 << 20;

/// How many times [`Process::read_consistent`] tries a read before it
/// says the process exec'd while being read. A try takes a fraction of a
/// millisecond, less than one exec of a small program, so a process
/// exec'ing back to back is caught between two execs within a few tries
/// (9 at most in 300 reads on a busy 2-core host); with the pauses between
/// tries, 64 of them take at most about 200 ms.
pub const EXEC_TRIES: u32 = 64;

/// `AT_RANDOM`: the address of 16 bytes the kernel fills afresh at each exec.
const AT_RANDOM: u64 = 25;

/// `PF_KTHREAD` from `include/linux/sched.h`: the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// A live, inspectable user process.
#[derive(Debug)]
pub struct Process {
    pid: i32,
    dir: File,
    comm: String,
}

/// What the first bytes of the target's executable say.
pub type ExeHeader = crate::inspect::elf::Ident;

/// What identifies the program image a process runs: taken before and after
/// a read, two equal settled stamps mean no exec happened in between.
///
/// - the executable's (st_dev, st_ino): a different program;
/// - the address-space layout /proc/PID/stat shows (start and end of code,
///   data, stack, brk, arguments, environment): the same program loaded
///   again at other (randomized) addresses. exec fills these in last, so a
///   start of code of 0 means the new image is still being loaded;
/// - the raw auxiliary vector and the 16 bytes at AT_RANDOM, which the
///   kernel draws afresh at every exec: the same program at the same
///   addresses (ASLR off) still differs there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecStamp {
    exe: Option<(u64, u64)>,
    layout: Vec<u64>,
    auxv: Vec<u8>,
    random: Option<Vec<u8>>,
}

impl ExecStamp {
    /// The image is wholly loaded: exec sets the start of code last.
    /// (A reader without ptrace access to the process sees 1 there, not 0.)
    pub fn settled(&self) -> bool {
        self.layout.first().is_some_and(|&start_code| start_code != 0)
    }
}

/// The first live thread of a process whose leader is a zombie: its
/// /proc/PID/task/TID directory and stat.
fn live_thread_of(pid: i32) -> Option<(File, StatFields)> {
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|tid| *tid != pid)
        .collect();
    tids.sort_unstable();
    tids.into_iter().find_map(|tid| {
        let dir = File::open(format!("/proc/{pid}/task/{tid}")).ok()?;
        let stat = read_stat(&format!("/proc/{pid}/task/{tid}/stat"))?;
        let fields = parse_stat(&stat)?;
        (fields.state != 'Z' && fields.state != 'X').then_some((dir, fields))
    })
}

impl Process {
    /// Open `pid`, or vdsoctl's own process when `None`. Fails for a PID that
    /// does not exist, a zombie and a kernel thread, each with its own error.
    pub fn open(pid: Option<i32>) -> Result<Process> {
        let pid = pid.unwrap_or_else(|| std::process::id() as i32);
        if pid <= 0 {
            return Err(Error::NoSuchProcess { pid });
        }
        let path = PathBuf::from(format!("/proc/{pid}"));
        let dir = File::open(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Error::NoSuchProcess { pid },
            _ => Error::from_io(&path, e, ptrace_hint(pid)),
        })?;
        let mut process = Process { pid, dir, comm: String::new() };
        let stat = process.read_file("stat")?;
        let mut fields =
            parse_stat(&stat).ok_or_else(|| Error::malformed(format!("/proc/{pid}/stat"), "unexpected layout"))?;
        process.comm = fields.comm.clone();
        if fields.state == 'Z' || fields.state == 'X' {
            // A leader that exited (pthread_exit in main) while other
            // threads run: the process lives, read through a live thread.
            let (dir, live) = live_thread_of(pid).ok_or(Error::Zombie { pid, comm: fields.comm })?;
            process.dir = dir;
            fields = live;
        }
        if fields.flags & PF_KTHREAD != 0 {
            return Err(Error::KernelThread { pid, comm: fields.comm });
        }
        Ok(process)
    }

    /// The process id, as the host's /proc sees it.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The command name (`comm`), as the kernel keeps it (≤ 15 bytes).
    pub fn comm(&self) -> &str {
        &self.comm
    }

    /// What identifies the image the process runs now (see [`ExecStamp`]),
    /// and its comm. Fails only when the process is gone or a zombie.
    pub fn exec_stamp(&self) -> Result<(ExecStamp, String)> {
        use std::os::unix::fs::MetadataExt;
        let stat = self.read_file("stat")?;
        let fields = parse_stat(&stat)
            .ok_or_else(|| Error::malformed(self.proc_path("stat").display().to_string(), "unexpected layout"))?;
        if fields.state == 'Z' || fields.state == 'X' {
            return Err(Error::Zombie { pid: self.pid, comm: fields.comm });
        }
        let exe =
            std::fs::metadata(format!("/proc/self/fd/{}/exe", self.dir.as_raw_fd())).ok().map(|m| (m.dev(), m.ino()));
        let auxv_bytes = self.read_file("auxv").unwrap_or_default();
        let random = auxv::parse(&auxv_bytes, auxv::guess_word_size(&auxv_bytes))
            .ok()
            .and_then(|entries| auxv::get(&entries, AT_RANDOM))
            .and_then(|at| self.read_mem(at, 16).ok());
        let stamp = ExecStamp { exe, layout: stat_layout(&stat), auxv: auxv_bytes, random };
        Ok((stamp, fields.comm))
    }

    /// Run `read` until it ran wholly between two execs of the process: the
    /// same settled [`ExecStamp`] before and after. Its result (an error
    /// too) is then that of one program image; the process's comm is
    /// refreshed to that image's. After [`EXEC_TRIES`] reads that each
    /// straddled an exec: [`Error::ExecRace`]. A process that exits or
    /// becomes a zombie meanwhile says so instead.
    pub fn read_consistent<T>(&mut self, mut read: impl FnMut(&Process) -> Result<T>) -> Result<T> {
        for tries in 0..EXEC_TRIES {
            if tries > 0 {
                // Trying again at once would compete for the CPU (and the
                // mmap lock) with the exec we wait for, on a busy host for
                // whole time slices: give it 100 µs, doubling up to 3.2 ms
                // (all the tries then take at most about 200 ms).
                std::thread::sleep(std::time::Duration::from_micros(100 << (tries - 1).min(5)));
            }
            let (before, _) = self.exec_stamp()?;
            let result = read(self);
            let (after, comm) = self.exec_stamp()?;
            if before.settled() && before == after {
                self.comm = comm;
                return result;
            }
        }
        Err(Error::ExecRace { pid: self.pid, tries: EXEC_TRIES })
    }

    /// Whether this is vdsoctl itself.
    pub fn is_self(&self) -> bool {
        self.pid == std::process::id() as i32
    }

    /// `/proc/PID/<name>`, for messages.
    pub fn proc_path(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/{}", self.pid, name))
    }

    /// Open a file inside the held /proc/PID directory. Going through
    /// /proc/self/fd/N resolves against the directory fd, not the PID.
    fn open_file(&self, name: &str) -> Result<File> {
        let via_fd = format!("/proc/self/fd/{}/{}", self.dir.as_raw_fd(), name);
        File::open(via_fd).map_err(|e| self.io_error(name, e))
    }

    /// A failed /proc/PID read: gone, refused (the ptrace hint), or else the
    /// process changed under the read (EIO from mem for an address no
    /// longer mapped), which no capability would have helped.
    fn io_error(&self, name: &str, e: io::Error) -> Error {
        match e.raw_os_error() {
            Some(libc::ESRCH) | Some(libc::ENOENT) => Error::NoSuchProcess { pid: self.pid },
            Some(libc::EACCES) | Some(libc::EPERM) => Error::from_io(self.proc_path(name), e, ptrace_hint(self.pid)),
            _ => Error::from_io(self.proc_path(name), e, Hint::ProcessChanged),
        }
    }

    /// Read a whole /proc/PID file, at most [`READ_LIMIT`] bytes.
    pub fn read_file(&self, name: &str) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.open_file(name)?.take(READ_LIMIT).read_to_end(&mut buf).map_err(|e| self.io_error(name, e))?;
        Ok(buf)
    }

    fn read_text(&self, name: &str) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.read_file(name)?).into_owned())
    }

    /// All mappings from /proc/PID/maps.
    pub fn maps(&self) -> Result<Vec<Mapping>> {
        let text = self.read_text("maps")?;
        maps::parse(&text).map_err(|e| match e {
            Error::Malformed { detail, .. } => Error::malformed(self.proc_path("maps").display().to_string(), detail),
            other => other,
        })
    }

    /// The `[vdso]` mapping, or [`Error::NoVdso`].
    pub fn vdso_mapping(&self) -> Result<Mapping> {
        self.maps()?.into_iter().find(|m| m.name() == "[vdso]").ok_or(Error::NoVdso { pid: self.pid })
    }

    /// Its `[vdso]`, read from its memory and parsed by the one ELF reader.
    pub fn vdso_image(&self) -> Result<crate::inspect::elf::Image> {
        let vdso = self.vdso_mapping()?;
        crate::inspect::elf::parse(&self.read_mem(vdso.start, vdso.size())?)
    }

    /// vdsoctl's own `[vdso]`, read and parsed once (it cannot change
    /// while vdsoctl runs): the one place that reads our own vDSO.
    pub fn own_vdso_image() -> Option<&'static crate::inspect::elf::Image> {
        static IMAGE: std::sync::OnceLock<Option<crate::inspect::elf::Image>> = std::sync::OnceLock::new();
        IMAGE.get_or_init(|| Process::open(None).ok()?.vdso_image().ok()).as_ref()
    }

    /// The ELF header of /proc/PID/exe (None when unreadable or not ELF).
    pub fn exe_header(&self) -> Option<ExeHeader> {
        let mut head = [0u8; 20];
        self.open_file("exe").ok()?.read_exact(&mut head).ok()?;
        crate::inspect::elf::ident(&head)
    }

    /// The executable, opened through /proc/PID/exe (works even if it was deleted).
    pub fn exe_file(&self) -> Result<File> {
        self.open_file("exe")
    }

    /// The file a mapping maps, opened while the process lives: through
    /// /proc/PID/map_files (the mapped file itself, even deleted or in
    /// another mount namespace; needs CAP_SYS_ADMIN before Linux 6.x
    /// relaxed it to ptrace access), else the path under /proc/PID/root.
    /// `None` when neither opens, or the file opened is not the mapped
    /// inode (replaced since it was mapped).
    pub fn open_mapped(&self, m: &Mapping) -> Option<File> {
        use std::os::unix::fs::MetadataExt;
        // A device is never opened (a tty or FIFO open may block or act).
        let path = m.path.as_deref().filter(|p| p.starts_with('/') && !p.starts_with("/dev/"))?;
        let tries = [format!("map_files/{:x}-{:x}", m.start, m.end), format!("root{path}")];
        tries.iter().find_map(|name| {
            let file = self.open_file(name).ok()?;
            let meta = file.metadata().ok()?;
            (meta.ino() == m.inode && meta.is_file()).then_some(file)
        })
    }

    /// argv[0] as the process has it now (/proc/PID/cmdline up to its
    /// first NUL: a process may rewrite it, as redis-server does with its
    /// title). `None` when unreadable or empty (a kernel thread, a zombie).
    pub fn argv0(&self) -> Option<String> {
        let bytes = self.read_file("cmdline").ok()?;
        let first = bytes.split(|b| *b == 0).next().filter(|a| !a.is_empty())?;
        Some(String::from_utf8_lossy(first).into_owned())
    }

    /// The executable's path as the kernel reports it.
    pub fn exe_path(&self) -> Option<PathBuf> {
        std::fs::read_link(self.proc_path("exe")).ok()
    }

    /// The target's word size: from its executable, else guessed from auxv.
    pub fn word_size(&self, auxv_bytes: &[u8]) -> WordSize {
        match self.exe_header() {
            Some(h) if h.is_64 => WordSize::W64,
            Some(_) => WordSize::W32,
            None => auxv::guess_word_size(auxv_bytes),
        }
    }

    /// The decoded auxiliary vector and the word size it was decoded with.
    pub fn auxv(&self) -> Result<(Vec<AuxEntry>, WordSize)> {
        let bytes = self.read_file("auxv")?;
        let word = self.word_size(&bytes);
        let entries = auxv::parse(&bytes, word).map_err(|e| match e {
            Error::Malformed { detail, .. } => Error::malformed(self.proc_path("auxv").display().to_string(), detail),
            other => other,
        })?;
        Ok((entries, word))
    }

    /// Read `len` bytes of the target's memory at `addr` through /proc/PID/mem.
    pub fn read_mem(&self, addr: u64, len: u64) -> Result<Vec<u8>> {
        if len > READ_LIMIT {
            return Err(Error::TooLarge { path: self.proc_path("mem"), size: len, limit: READ_LIMIT });
        }
        let mem = self.open_file("mem")?;
        let mut buf = vec![0u8; len as usize];
        let mut done = 0usize;
        while done < buf.len() {
            match mem.read_at(&mut buf[done..], addr + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_error("mem", e)),
            }
        }
        if done != buf.len() {
            return Err(Error::Io {
                path: self.proc_path("mem"),
                source: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("read {done} of {len} bytes at {addr:#x}"),
                ),
                hint: Hint::MappingChanged,
            });
        }
        Ok(buf)
    }

    /// Read a NUL-terminated string of at most `max` bytes at `addr`,
    /// a page at a time so that a string near the end of a mapping is fine.
    pub fn read_cstring(&self, addr: u64, max: usize) -> Result<Vec<u8>> {
        let mem = self.open_file("mem")?;
        let mut out = Vec::new();
        let mut at = addr;
        while out.len() < max {
            let to_page_end = 4096 - (at % 4096) as usize;
            let mut chunk = vec![0u8; to_page_end.min(max - out.len())];
            let n = mem.read_at(&mut chunk, at).map_err(|e| self.io_error("mem", e))?;
            if n == 0 {
                break;
            }
            if let Some(nul) = chunk[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..nul]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
            at += n as u64;
        }
        Ok(out)
    }

    /// The thread-group id: the process a thread id belongs to (itself for a
    /// process). /proc/TID exists for every thread, so `-p TID` opens fine.
    pub fn tgid(&self) -> Result<i32> {
        let status = self.read_file("status")?;
        status_field(&status, b"Tgid:")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::malformed(self.proc_path("status").display().to_string(), "no Tgid line"))
    }

    /// The seccomp mode (`Seccomp:` in /proc/PID/status: 0 none, 1 strict,
    /// 2 filter) and how many filters are installed; None where the kernel
    /// does not say.
    pub fn seccomp(&self) -> Option<(u8, u32)> {
        self.seccomp_of("status")
    }

    /// [`Process::seccomp`] of one of its threads (each has its own
    /// filters: one installed without TSYNC applies to its thread only).
    pub fn thread_seccomp(&self, tid: i32) -> Option<(u8, u32)> {
        self.seccomp_of(&format!("task/{tid}/status"))
    }

    fn seccomp_of(&self, file: &str) -> Option<(u8, u32)> {
        let status = self.read_file(file).ok()?;
        let mode = status_field(&status, b"Seccomp:")?.parse().ok()?;
        Some((mode, status_field(&status, b"Seccomp_filters:").and_then(|n| n.parse().ok()).unwrap_or(0)))
    }

    /// The start addresses of the anonymous mappings /proc/PID/smaps flags
    /// `dp` (MAP_DROPPABLE, Linux 6.11): the vDSO getrandom state pages
    /// glibc ≥ 2.41 and Go ≥ 1.24 map at their first call. The file is
    /// streamed line by line, at most [`READ_LIMIT`] bytes.
    pub fn droppable_mappings(&self) -> Result<Vec<u64>> {
        use std::io::BufRead;
        let file = self.open_file("smaps")?;
        let mut reader = io::BufReader::new(file.take(READ_LIMIT));
        let mut line = Vec::new();
        let (mut current, mut out) = (None, Vec::new());
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(|e| self.io_error("smaps", e))?;
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            if let Some(flags) = text.strip_prefix("VmFlags:") {
                if let Some(start) = current.take() {
                    if flags.split_whitespace().any(|f| f == "dp") {
                        out.push(start);
                    }
                }
            } else if let Ok(m) = maps::parse_line(text.trim_end_matches('\n')) {
                // A mapping's header line (field lines never parse as one).
                current = m.path.is_none().then_some(m.start);
            }
        }
        Ok(out)
    }

    /// The process's time namespace (/proc/PID/ns/time's inode) and its
    /// clock offsets (/proc/PID/timens_offsets); `None` when the kernel has
    /// no time namespaces (before 5.6) or the link cannot be read.
    pub fn time_namespace(&self) -> Option<TimeNamespace> {
        use std::os::unix::fs::MetadataExt;
        let via_fd = format!("/proc/self/fd/{}/ns/time", self.dir.as_raw_fd());
        let inode = std::fs::metadata(via_fd).ok()?.ino();
        let own = std::fs::metadata("/proc/self/ns/time").ok().map(|m| m.ino());
        let offsets = self.read_text("timens_offsets").map(|t| parse_timens_offsets(&t)).unwrap_or_default();
        Some(TimeNamespace { inode, own, offsets })
    }

    /// Thread ids from /proc/PID/task.
    pub fn tasks(&self) -> Result<Vec<i32>> {
        let dir = format!("/proc/self/fd/{}/task", self.dir.as_raw_fd());
        let mut tids: Vec<i32> = std::fs::read_dir(dir)
            .map_err(|e| self.io_error("task", e))?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        Ok(tids)
    }
}

/// A process's time namespace, as /proc says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeNamespace {
    /// The namespace's inode (`time:[4026531834]`).
    pub inode: u64,
    /// vdsoctl's own; `None` when unreadable.
    pub own: Option<u64>,
    /// (clock id, seconds, nanoseconds) from timens_offsets:
    /// CLOCK_MONOTONIC (1) and CLOCK_BOOTTIME (7).
    pub offsets: Vec<(i32, i64, i64)>,
}

/// `monotonic 1000 0` / `boottime 2000 0` lines (kernel/time/namespace.c
/// prints the names; the clock ids are taken too). Other lines are skipped.
pub fn parse_timens_offsets(text: &str) -> Vec<(i32, i64, i64)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let clock = match w.next()? {
                "monotonic" => libc::CLOCK_MONOTONIC,
                "boottime" => libc::CLOCK_BOOTTIME,
                n => n.parse().ok()?,
            };
            Some((clock, w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// The current comm of any task, without opening a handle (it changes at
/// exec; a traced command is renamed from its shell's name to its own).
/// `None` only when the task is gone: a comm that is not UTF-8 (any process
/// may prctl(PR_SET_NAME) one; an exec cuts a long UTF-8 name at 15 bytes)
/// is kept as [`crate::words::bytes_text`] writes it, apart from others.
pub fn comm_of(pid: i32) -> Option<String> {
    let mut bytes = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    Some(crate::words::bytes_text(&bytes))
}

/// An executable file's identity: (st_dev, st_ino) of what `/proc/PID/exe`
/// names, as stat(2) gives it. Two processes running the same file have the
/// same one, whatever their names; a copy of the file has another inode.
pub type ExeId = (u64, u64);

/// The identity of the file process `pid` runs now; `None` when it is gone,
/// a kernel thread (no exe), or its exe is not ours to read.
pub fn exe_identity(pid: i32) -> Option<ExeId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}/exe")).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether `pid` runs this very executable file (same device and inode):
/// `-- CMD`'s child until its exec, for one.
pub fn runs_this_executable(pid: i32) -> bool {
    exe_identity(pid).is_some_and(|theirs| Some(theirs) == own_exe_identity())
}

/// Whether vdsoctl runs in the initial PID namespace (`false` in most
/// containers). The kernel's PROC_PID_INIT_INO names the initial one.
pub fn in_initial_pid_namespace() -> Option<bool> {
    const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let text = link.to_str()?;
    let ino: u64 = text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()?;
    Some(ino == PROC_PID_INIT_INO)
}

/// A pid namespace as BPF names it: the device and inode of its nsfs file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidNamespace {
    /// In the kernel's encoding (`MKDEV`: major << 20 | minor), which is
    /// what `bpf_get_ns_current_pid_tgid` compares, not stat(2)'s.
    pub dev: u64,
    pub ino: u64,
}

/// vdsoctl's own pid namespace, when it is not the initial one: the pids
/// vdsoctl sees (and reports) are that namespace's, so the BPF programs
/// translate into it. `None` in the initial namespace or when
/// /proc/self/ns/pid cannot be read.
pub fn own_pid_namespace() -> Option<PidNamespace> {
    use std::os::unix::fs::MetadataExt;
    if in_initial_pid_namespace() != Some(false) {
        return None;
    }
    let m = std::fs::metadata("/proc/self/ns/pid").ok()?;
    let (major, minor) = (nix::sys::stat::major(m.dev()), nix::sys::stat::minor(m.dev()));
    Some(PidNamespace { dev: major << 20 | minor, ino: m.ino() })
}

/// vdsoctl's own executable as (device, inode), so an image walk can
/// leave vdsoctl itself out; `None` when /proc/self/exe cannot be read.
pub fn own_exe_identity() -> Option<ExeId> {
    exe_identity(std::process::id() as i32)
}

/// Whether /proc is mounted here (a bare `docker build` step may lack it).
pub fn proc_mounted() -> bool {
    std::path::Path::new("/proc/self").exists()
}

/// vdsoctl's own effective capabilities (`CapEff` in /proc/self/status),
/// to name the one a refused operation lacks.
pub fn own_capabilities() -> Option<u64> {
    let status = std::fs::read("/proc/self/status").ok()?;
    u64::from_str_radix(status_field(&status, b"CapEff:")?, 16).ok()
}

/// The parent of any task, if it still exists.
pub fn parent_of(pid: i32) -> Option<i32> {
    parse_stat(read_stat(&format!("/proc/{pid}/stat"))?).map(|f| f.ppid)
}

/// Each task of process `pid` a tracer holds: (tid, the tracer's pid), from
/// `TracerPid:` in /proc/PID/task/TID/status (read as bytes: the `Name:`
/// line is the comm, which need not be UTF-8). Empty when none is held or
/// the process is gone.
pub fn held_tasks(pid: i32) -> Vec<(i32, i32)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| {
            let tid: i32 = t.file_name().to_str()?.parse().ok()?;
            let status = read_stat(&format!("/proc/{pid}/task/{tid}/status"))?;
            Some((tid, status_number(&status, b"TracerPid:")?)).filter(|(_, tracer)| *tracer > 0)
        })
        .collect()
}

/// The process a task belongs to (`Tgid:` of its status): a tracer is
/// named by its thread, a signal goes to its process.
pub fn tgid_of(tid: i32) -> Option<i32> {
    status_number(&read_stat(&format!("/proc/{tid}/status"))?, b"Tgid:")
}

/// A number field of a status file's bytes (4 KiB read: `Tgid:` and
/// `TracerPid:` are among its first ten lines).
fn status_number(status: &[u8], field: &[u8]) -> Option<i32> {
    status_field(status, field)?.parse().ok()
}

/// The value of a /proc status field (`field` with its colon), trimmed,
/// read from the bytes: the `Name:` line is the comm, which need not be
/// UTF-8, and no other line is taken lossily.
fn status_field<'a>(status: &'a [u8], field: &[u8]) -> Option<&'a str> {
    let line = status.split(|b| *b == b'\n').find_map(|l| l.strip_prefix(field))?;
    Some(std::str::from_utf8(line).ok()?.trim())
}

/// Whether `pid` descends from `ancestor` (its parent's parent's … is it),
/// walking /proc up to init; a process gone on the way does not.
pub fn descends_from(pid: i32, ancestor: i32) -> bool {
    let mut at = pid;
    // A bound of its own: pid_max is at most 2^22.
    for _ in 0..(1 << 22) {
        match parent_of(at) {
            Some(p) if p == ancestor => return true,
            Some(p) if p > 1 && p != at => at = p,
            _ => return false,
        }
    }
    false
}

/// When a process started, in clock ticks since boot (/proc/PID/stat
/// field 22): with its pid, what tells it from a later process that
/// reuses the pid.
pub fn start_ticks_of(pid: i32) -> Option<u64> {
    start_ticks_in(&read_stat(&format!("/proc/{pid}/stat"))?)
}

/// Field 22 of a /proc/PID/stat (the fields after the comm start at 3).
fn start_ticks_in(stat: &[u8]) -> Option<u64> {
    stat_parts(stat)?.1.get(22 - 3)?.parse().ok()
}

/// Nanoseconds per clock tick of /proc/PID/stat's times (USER_HZ).
pub fn ns_per_tick() -> u64 {
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().filter(|h| *h > 0).unwrap_or(100);
    1_000_000_000 / hz as u64
}

/// The boot-time offset of vdsoctl's time namespace, in ns (0 outside one):
/// /proc/PID/stat's start times are shifted by it, the kernel's are not.
pub fn boottime_offset_ns() -> i64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/timens_offsets") else { return 0 };
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            (f.next()? == "boottime").then_some(())?;
            let secs: i64 = f.next()?.parse().ok()?;
            let nsecs: i64 = f.next()?.parse().ok()?;
            Some(secs.saturating_mul(1_000_000_000).saturating_add(nsecs))
        })
        .next()
        .unwrap_or(0)
}

/// Whether the process that started at `start_ns` (ns since boot, as the
/// BPF engine records it; 0: unknown) still holds `pid`. In a time
/// namespace the /proc value is shifted back first (±1 tick of rounding).
pub fn is_running(pid: i32, start_ns: u64) -> bool {
    start_ticks_of(pid).is_some_and(|ticks| started_at(ticks, start_ns))
}

/// Whether a start of `ticks` (/proc/PID/stat field 22) is the start
/// `start_ns` an engine recorded (0: unknown, any start is).
fn started_at(ticks: u64, start_ns: u64) -> bool {
    if start_ns == 0 {
        return true;
    }
    let tick = ns_per_tick() as i64;
    let offset = boottime_offset_ns();
    let ours = (start_ns / tick as u64) as i64;
    let theirs = ticks as i64 - offset / tick;
    if offset == 0 {
        ours == theirs
    } else {
        (ours - theirs).abs() <= 1
    }
}

/// Which program image a process runs, and its name: the address-space
/// layout of its /proc/PID/stat (the layout part of [`ExecStamp`]), which
/// every exec draws anew — new code, a new stack, new arguments — and its
/// comm (an exec or a rename changes it). Cheap: one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageMark {
    layout: Vec<u64>,
    comm: String,
}

impl ImageMark {
    /// The process's comm when it was read.
    pub fn comm(&self) -> &str {
        &self.comm
    }
}

/// The image `pid` runs now, if it is still the process that started at
/// `start_ns` (as [`is_running`]) and that image is wholly loaded (exec
/// sets the start of code last). `None`: gone, another process, a zombie,
/// or in the middle of an exec. A process vdsoctl may not ptrace-read
/// shows a layout of its own that no exec changes.
pub fn image_mark(pid: i32, start_ns: u64) -> Option<ImageMark> {
    let text = read_stat(&format!("/proc/{pid}/stat"))?;
    let fields = parse_stat(&text)?;
    let ticks = start_ticks_in(&text)?;
    let layout = stat_layout(&text);
    let live = !matches!(fields.state, 'Z' | 'X') && layout.first().is_some_and(|&start_code| start_code != 0);
    (live && started_at(ticks, start_ns)).then_some(ImageMark { layout, comm: fields.comm })
}

/// The address-space layout of /proc/PID/stat: start_code, end_code,
/// start_stack (fields 26-28), then start_data .. env_end (fields 45-51).
/// Missing fields (an older kernel) are left out.
fn stat_layout(text: impl AsRef<[u8]>) -> Vec<u64> {
    let Some((_, rest)) = stat_parts(text.as_ref()) else { return Vec::new() };
    // After the comm, field 3 (state) is index 0.
    (23..=25).chain(42..=48).filter_map(|i| rest.get(i)?.parse().ok()).collect()
}

/// The fields of /proc/PID/stat we use.
#[derive(Debug, PartialEq, Eq)]
pub struct StatFields {
    pub comm: String,
    pub state: char,
    pub ppid: i32,
    pub flags: u64,
}

/// /proc/PID/stat split at its comm, as bytes: the comm is what lies
/// between the first `(` and the LAST `)` (a process may name itself with
/// both, with spaces, and with bytes that are not UTF-8: `PR_SET_NAME`, or
/// an exec cutting a long UTF-8 name at 15 bytes), the fields after it
/// (field 3, the state, first) are ASCII.
fn stat_parts(bytes: &[u8]) -> Option<(&[u8], Vec<&str>)> {
    let open = bytes.iter().position(|&b| b == b'(')?;
    let close = bytes.iter().rposition(|&b| b == b')')?;
    let comm = bytes.get(open + 1..close)?;
    let rest = std::str::from_utf8(bytes.get(close + 1..)?).ok()?;
    Some((comm, rest.split_whitespace().collect()))
}

/// Parse /proc/PID/stat (its bytes: see [`stat_parts`]). The comm is kept
/// as [`crate::words::bytes_text`] writes it: a byte that is not UTF-8
/// is `\xNN`, so two names never read the same.
pub fn parse_stat(bytes: impl AsRef<[u8]>) -> Option<StatFields> {
    let (comm, rest) = stat_parts(bytes.as_ref())?;
    let state = rest.first()?.chars().next()?;
    // after state: ppid pgrp session tty_nr tpgid flags
    let ppid = rest.get(1)?.parse().ok()?;
    let flags = rest.get(6)?.parse().ok()?;
    Some(StatFields { comm: crate::words::bytes_text(comm), state, ppid, flags })
}

/// /proc/PID/stat's bytes (a few hundred; read at most 4 KiB).
fn read_stat(path: &str) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    File::open(path).ok()?.take(4096).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// The ELF header of an executable file on disk (None when unreadable or not ELF).
pub fn exe_header_of(path: &std::path::Path) -> Option<ExeHeader> {
    let mut head = [0u8; 20];
    File::open(path).and_then(|mut f| f.read_exact(&mut head)).ok()?;
    crate::inspect::elf::ident(&head)
}

/// The user stack pointer of thread `tid` while it is blocked in a
/// syscall, from /proc/TID/syscall; `None` when it is not (or is gone).
pub fn blocked_syscall_sp(tid: i32) -> Option<u64> {
    let mut text = String::new();
    File::open(format!("/proc/{tid}/syscall")).ok()?.take(512).read_to_string(&mut text).ok()?;
    parse_syscall_sp(&text)
}

/// /proc/TID/syscall's stack pointer: `nr arg1..arg6 sp pc` while blocked
/// in a syscall; `-1 sp pc` (blocked elsewhere) and `running` have none.
fn parse_syscall_sp(text: &str) -> Option<u64> {
    let sp = text.split_whitespace().nth(7)?;
    u64::from_str_radix(sp.strip_prefix("0x")?, 16).ok()
}

/// Whether `ip` lies in the vDSO text of thread `tid` (a native task, which
/// maps the same image as vdsoctl): its AT_SYSINFO_EHDR (/proc/TID/auxv,
/// read while the thread waits in a notified call, so an exec cannot move
/// it in between) up to vdsoctl's own `[vdso]` length. `false` when either
/// cannot be read.
pub fn in_vdso_of(tid: i32, ip: u64) -> bool {
    static OWN_LEN: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let Some(len) = *OWN_LEN.get_or_init(crate::inspect::maps::own_vdso_len) else { return false };
    let mut bytes = Vec::new();
    let read = File::open(format!("/proc/{tid}/auxv")).and_then(|f| f.take(4096).read_to_end(&mut bytes));
    if read.is_err() {
        return false;
    }
    let base = auxv::parse(&bytes, auxv::WordSize::W64).ok().and_then(|e| auxv::get(&e, auxv::AT_SYSINFO_EHDR));
    base.is_some_and(|b| ip.wrapping_sub(b) < len)
}

/// Fill `buf` from thread `tid`'s memory at `addr` (/proc/TID/mem), without
/// the checks of [`Process::open`]: the seccomp engine reads a word per
/// notified call, while the thread waits. `None` when it cannot.
pub fn read_thread_mem(tid: i32, addr: u64, buf: &mut [u8]) -> Option<()> {
    File::open(format!("/proc/{tid}/mem")).ok()?.read_exact_at(buf, addr).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_status_number_is_read_past_a_name_that_is_not_utf8() {
        let status =
            b"Name:\tcaf\xe9\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4243\nPPid:\t1\nTracerPid:\t77\n";
        assert_eq!(super::status_number(status, b"TracerPid:"), Some(77));
        assert_eq!(super::status_number(status, b"Tgid:"), Some(4242));
        assert_eq!(super::status_number(b"Name:\tx\n", b"TracerPid:"), None);
    }

    #[test]
    fn a_blocked_syscall_has_a_stack_pointer_and_nothing_else_does() {
        let blocked = "228 0x1 0x7ffd0a10 0x0 0x0 0x0 0x0 0x7ffd09f8 0x7f3a12345e5d\n";
        assert_eq!(parse_syscall_sp(blocked), Some(0x7ffd_09f8));
        assert_eq!(parse_syscall_sp("-1 0x7ffd09f8 0x401000\n"), None);
        assert_eq!(parse_syscall_sp("running\n"), None);
        assert_eq!(parse_syscall_sp("228 0x1 0x2 0x3 0x4 0x5 0x6 junk 0x7\n"), None);
    }

    use super::*;

    #[test]
    fn an_executable_is_known_by_its_file() {
        // The kernel matrix runs these unit tests in a guest without the
        // checkout and its tools: they need the build host's.
        if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        assert!(own_exe_identity().is_some());
        assert!(runs_this_executable(std::process::id() as i32));
        // A child running another file is not this executable, whoever
        // started it; a pid that cannot exist has no identity.
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let theirs = exe_identity(child.id() as i32);
        let ours = runs_this_executable(child.id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        assert!(theirs.is_some() && theirs != own_exe_identity());
        assert!(!ours);
        assert_eq!(exe_identity(5_000_000), None);
    }

    #[test]
    fn stat_with_hostile_comm() {
        let s = "42 (a) b) c) S 1 42 42 0 -1 4194560 0 0";
        let f = parse_stat(s).unwrap();
        assert_eq!(f.comm, "a) b) c");
        assert_eq!(f.state, 'S');
        assert_eq!(f.flags, 4194560);
        assert_eq!(f.ppid, 1);
        assert!(parse_stat("garbage").is_none());
        assert!(parse_stat("1 (x) S").is_none());
        // A comm that is not UTF-8, holding `) (`: the fields after the
        // LAST `)` are read, the comm kept apart from a lossy one.
        let raw = b"42 (caf\xe9) (\xd0) S 7 42 42 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 123456 0 0";
        let f = parse_stat(&raw[..]).unwrap();
        assert_eq!((f.comm.as_str(), f.state, f.ppid, f.flags), ("caf\\xe9) (\\xd0", 'S', 7, 4194560));
        assert_eq!(start_ticks_in(raw), Some(123456));
    }

    #[test]
    fn stat_layout_fields() {
        let own = std::fs::read_to_string("/proc/self/stat").unwrap();
        let layout = stat_layout(&own);
        assert_eq!(layout.len(), 10, "{own}");
        assert!(layout[0] != 0 && layout[1] > layout[0], "start_code < end_code: {layout:?}");
        let me = Process::open(None).unwrap();
        let (a, _) = me.exec_stamp().unwrap();
        assert!(a.settled() && a.random.as_ref().is_some_and(|r| r.len() == 16) && a.exe.is_some(), "{a:?}");
        let (b, comm) = me.exec_stamp().unwrap();
        assert_eq!(a, b);
        assert_eq!(comm, me.comm());
        let no_mm = format!("1 (x) y) Z{}", " 0".repeat(49));
        assert_eq!(stat_layout(&no_mm), vec![0; 10]);
        assert_eq!(stat_layout("1 (x) S 0 0"), Vec::<u64>::new());
    }

    #[test]
    fn elf_ident() {
        let mut h = [0u8; 20];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 1;
        h[5] = 1;
        h[18] = 3;
        assert_eq!(crate::inspect::elf::ident(&h), Some(ExeHeader { is_64: false, little_endian: true, machine: 3 }));
        assert_eq!(crate::inspect::elf::ident(b"#!/bin/sh"), None);
    }

    #[test]
    fn own_process_has_a_vdso() {
        let me = Process::open(None).unwrap();
        assert!(me.is_self());
        let vdso = me.vdso_mapping().unwrap();
        let (aux, word) = me.auxv().unwrap();
        assert_eq!(word, WordSize::W64);
        assert_eq!(auxv::get(&aux, auxv::AT_SYSINFO_EHDR), Some(vdso.start));
        let head = me.read_mem(vdso.start, 4).unwrap();
        assert_eq!(head, b"\x7fELF");
        assert!(!me.tasks().unwrap().is_empty());
        assert_eq!(me.tgid().unwrap(), me.pid());
    }
}
