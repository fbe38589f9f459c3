//! Naming the code at a user-space address of a process: which object
//! (executable, library, `[vdso]`, anonymous memory), which function and how
//! far into it, through the process's mappings (`proc(5)`, /proc/PID/maps)
//! and the object's ELF symbols ([`elf::symtab`]: `.symtab`, `.dynsym`,
//! MiniDebugInfo). `trace --sites` names call sites with it, `--stacks` the
//! frames of a stack.
//!
//! A process's mappings are gone once it exits, so they are taken while it
//! lives: [`Snapshot::of`] keeps its executable mappings and opens each
//! mapped file once (kept in [`Objects`], by device and inode, so a library
//! a hundred processes map is opened and parsed once); the `[vdso]` image is
//! read from its memory then. [`Snapshot::resolve`] can run later, after the
//! process exited, and parses an object at its first use.

use crate::error::Result;
use crate::inspect::elf::read;
use crate::inspect::elf::symtab::{object_symbols, ObjectSymbols};
use crate::inspect::maps::Mapping;
use crate::inspect::Process;
use serde::Serialize;
use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;

/// The `[vdso]` image read at most (a vDSO is 8 KiB; a page or two more is slack).
const MAX_VDSO: u64 = 64 << 10;

/// What kind of memory an address lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// A mapped file: the executable or a library.
    Object,
    /// The kernel's `[vdso]`.
    Vdso,
    /// The legacy `[vsyscall]` page (x86_64).
    Vsyscall,
    /// Executable memory no file backs: JIT code, a trampoline, shellcode.
    Anonymous,
    /// No executable mapping holds it (or the mappings were not read).
    Unmapped,
}

/// One address, named.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Frame {
    pub address: u64,
    pub kind: FrameKind,
    /// The object's path, `[vdso]`, `[vsyscall]`, or an anonymous mapping's
    /// name (`[anon:...]`, `[heap]`, `[stack]`); `None` for plain anonymous
    /// memory and unmapped addresses.
    pub object: Option<String>,
    /// The function holding the address, when a symbol table names it.
    pub symbol: Option<String>,
    /// From the function's start with a symbol; without one, the address as
    /// the object's ELF has it (what `addr2line -e`, `objdump -d` and `nm`
    /// take); in anonymous memory, from the mapping's start.
    pub offset: u64,
    /// The object's GNU build-id (hex), to find its debug symbols by.
    pub build_id: Option<String>,
    /// The object is the process's executable.
    pub program: bool,
    /// When the address is a return address: the function in the same
    /// object that the direct call just before it calls (`call f`, `bl f`).
    /// A caller whose call names a function that does not hold the frame
    /// below made a tail call through it (`f` ended in `jmp syscall`).
    pub called: Option<String>,
}

impl Frame {
    /// An address no mapping of the snapshot holds.
    pub fn unmapped(address: u64) -> Frame {
        Frame {
            address,
            kind: FrameKind::Unmapped,
            object: None,
            symbol: None,
            offset: address,
            build_id: None,
            program: false,
            called: None,
        }
    }

    /// The object's file name without its directory (`libc.so.6`).
    pub fn object_name(&self) -> Option<&str> {
        let o = self.object.as_deref()?;
        Some(o.rsplit('/').next().unwrap_or(o))
    }
}

/// Decodes the call before a return address: (its bytes, the return
/// address, 64-bit) → the call's target.
type CallDecoder = fn(&[u8], u64, bool) -> Option<u64>;

/// Which parsed object a mapping maps: the file's device and inode.
type ObjectId = (String, u64);

/// Mapped files, opened while their processes lived and parsed at first use.
#[derive(Debug, Default)]
pub struct Objects {
    files: HashMap<ObjectId, Entry>,
    /// Each object's path as first seen (a mapping's, or a file added).
    paths: HashMap<ObjectId, String>,
}

#[derive(Debug)]
enum Entry {
    /// Opened, not parsed yet.
    Open(File),
    /// Parsed (`None`: could not be opened or is not ELF), the file kept
    /// to read a return address's call instruction from.
    Parsed(Option<Arc<ObjectSymbols>>, Option<File>),
}

impl Objects {
    /// The parsed symbols of an object, parsing it on first use.
    fn symbols(&mut self, id: &ObjectId) -> Option<Arc<ObjectSymbols>> {
        let entry = self.files.get_mut(id)?;
        if let Entry::Open(_) = entry {
            if let Entry::Open(file) = std::mem::replace(entry, Entry::Parsed(None, None)) {
                let symbols = object_symbols(&file).ok().map(Arc::new);
                let keep = symbols.is_some().then_some(file);
                *entry = Entry::Parsed(symbols, keep);
            }
        }
        match entry {
            Entry::Parsed(p, _) => p.clone(),
            Entry::Open(_) => None,
        }
    }

    /// The function that the direct call ending at ELF address `ret` of
    /// object `id` calls, named from the object's symbols; `None` when the
    /// instruction there is no direct call, or its target is no function of
    /// this object (a PLT stub: a call into another object).
    fn called_before(&mut self, id: &ObjectId, symbols: &ObjectSymbols, in_file: u64, ret: u64) -> Option<String> {
        let Some(Entry::Parsed(_, Some(file))) = self.files.get(id) else { return None };
        use crate::arch::machine::{AARCH64, I386, X86_64};
        // The call's length before the return address, and its decoder.
        let (len, decode): (u64, CallDecoder) = match symbols.ident.machine {
            X86_64 | I386 => {
                (5, |b, ret, is_64| crate::inspect::code::direct_call_before(b, ret, if is_64 { 64 } else { 32 }))
            }
            AARCH64 => (4, |b, ret, _| crate::inspect::code_a64::bl_before(b, ret)),
            _ => return None,
        };
        let before = read::Source::read_at(file, in_file.checked_sub(len)?, len as usize).ok()?;
        let target = decode(&before, ret, symbols.ident.is_64)?;
        let (f, 0) = symbols.function_at(target)? else { return None };
        Some(demangle(&f.name))
    }

    /// Hold the file at `path` (the traced command's executable), as if a
    /// process had mapped it: named by device and inode like a mapping.
    pub fn add_file(&mut self, path: &std::path::Path) {
        use std::os::unix::fs::MetadataExt;
        let Ok(file) = File::open(path) else { return };
        let Ok(meta) = file.metadata() else { return };
        let id = (dev_text(meta.dev()), meta.ino());
        self.paths.entry(id.clone()).or_insert_with(|| path.to_string_lossy().into_owned());
        self.files.entry(id).or_insert(Entry::Open(file));
    }

    /// Whether the file with device `dev` and inode `ino` is held (open,
    /// or tried and parsed); a name alone is not the file.
    pub fn knows(&self, dev: &str, ino: u64) -> bool {
        self.files.contains_key(&(dev.to_string(), ino))
    }

    /// Hold an open file by its identity (opened by handle: no process
    /// maps it now), named `path`.
    pub fn add_open(&mut self, (dev, ino): (&str, u64), file: File, path: String) {
        let id = (dev.to_string(), ino);
        self.paths.entry(id.clone()).or_insert(path);
        self.files.entry(id).or_insert(Entry::Open(file));
    }

    /// Name `address`, which lay `in_file` bytes into the file with device
    /// `dev` (as /proc/PID/maps prints it) and inode `ino` when its site
    /// was first seen; `None` when no process seen mapped that file and it
    /// was not added.
    pub fn resolve_in_file(
        &mut self,
        (dev, ino): (&str, u64),
        in_file: u64,
        address: u64,
        program: bool,
    ) -> Option<Frame> {
        let id = (dev.to_string(), ino);
        let object = self.paths.get(&id)?.clone();
        let mut frame = Frame {
            address,
            kind: FrameKind::Object,
            object: Some(object),
            symbol: None,
            offset: in_file,
            build_id: None,
            program,
            called: None,
        };
        let Some(symbols) = self.symbols(&id) else { return Some(frame) };
        frame.build_id = symbols.build_id.clone();
        name_in(&symbols, in_file, &mut frame);
        frame.called = symbols.vaddr_of_offset(in_file).and_then(|ret| self.called_before(&id, &symbols, in_file, ret));
        Some(frame)
    }

    /// How many objects are held.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// One executable mapping of a snapshot.
#[derive(Debug, Clone)]
struct Region {
    start: u64,
    end: u64,
    file_offset: u64,
    name: Option<String>,
    kind: FrameKind,
    object: Option<ObjectId>,
    program: bool,
}

/// A process's executable mappings, taken while it lived.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub pid: i32,
    regions: Vec<Region>,
    vdso: Option<Arc<ObjectSymbols>>,
}

impl Snapshot {
    /// Take `pid`'s executable mappings now, opening each mapped file not
    /// yet in `objects`.
    pub fn of(pid: i32, objects: &mut Objects) -> Result<Snapshot> {
        let process = Process::open(Some(pid))?;
        let maps = process.maps()?;
        Ok(Snapshot::from_maps(&process, &maps, objects))
    }

    /// A snapshot of `process` from maps already read.
    pub fn from_maps(process: &Process, maps: &[Mapping], objects: &mut Objects) -> Snapshot {
        use std::os::unix::fs::MetadataExt;
        let exe = process.exe_file().ok().and_then(|f| f.metadata().ok()).map(|m| m.ino());
        let mut regions = Vec::new();
        let mut vdso = None;
        for m in maps.iter().filter(|m| m.executable()) {
            let (kind, object) = match m.path.as_deref() {
                Some("[vdso]") => {
                    let bytes = process.read_mem(m.start, m.size().min(MAX_VDSO)).ok();
                    vdso = bytes.and_then(|b| object_symbols(&b[..]).ok()).map(Arc::new);
                    (FrameKind::Vdso, None)
                }
                Some("[vsyscall]") => (FrameKind::Vsyscall, None),
                Some(p) if p.starts_with('/') && m.inode != 0 => {
                    let id = (m.dev.clone(), m.inode);
                    objects.paths.entry(id.clone()).or_insert_with(|| p.to_string());
                    // A file that would not open (the process exited
                    // mid-read) is not held as unreadable: the next process
                    // mapping it, or a capture's open by handle, opens it.
                    if !objects.files.contains_key(&id) {
                        if let Some(f) = process.open_mapped(m) {
                            objects.files.insert(id.clone(), Entry::Open(f));
                        }
                    }
                    (FrameKind::Object, Some(id))
                }
                _ => (FrameKind::Anonymous, None),
            };
            regions.push(Region {
                start: m.start,
                end: m.end,
                file_offset: m.offset,
                name: m.path.clone(),
                kind,
                program: kind == FrameKind::Object && exe == Some(m.inode),
                object,
            });
        }
        Snapshot { pid: process.pid(), regions, vdso }
    }

    /// Whether an executable mapping of the snapshot holds `address`.
    pub fn maps(&self, address: u64) -> bool {
        self.regions.iter().any(|r| (r.start..r.end).contains(&address))
    }

    /// Name `address`: its mapping, and the function in the mapped object.
    pub fn resolve(&self, address: u64, objects: &mut Objects) -> Frame {
        let Some(r) = self.regions.iter().find(|r| (r.start..r.end).contains(&address)) else {
            return Frame::unmapped(address);
        };
        let mut frame = Frame {
            address,
            kind: r.kind,
            object: r.name.clone(),
            symbol: None,
            offset: address - r.start,
            build_id: None,
            program: r.program,
            called: None,
        };
        let symbols = match r.kind {
            FrameKind::Vdso => self.vdso.clone(),
            FrameKind::Object => r.object.as_ref().and_then(|id| objects.symbols(id)),
            _ => None,
        };
        let Some(symbols) = symbols else { return frame };
        // Address → file offset (through the mapping) → ELF address (through
        // the object's load segments).
        let in_file = address - r.start + r.file_offset;
        frame.build_id = symbols.build_id.clone();
        name_in(&symbols, in_file, &mut frame);
        if let Some(id) = r.object.as_ref() {
            frame.called =
                symbols.vaddr_of_offset(in_file).and_then(|ret| objects.called_before(id, &symbols, in_file, ret));
        }
        frame
    }

    /// The start of the `[vdso]` mapping, where one was taken.
    pub fn vdso_start(&self) -> Option<u64> {
        self.regions.iter().find(|r| r.kind == FrameKind::Vdso).map(|r| r.start)
    }
}

/// A file offset → ELF address (through the object's load segments) →
/// function and offset in it, into `frame`.
fn name_in(symbols: &ObjectSymbols, in_file: u64, frame: &mut Frame) {
    let Some(vaddr) = symbols.vaddr_of_offset(in_file) else { return };
    frame.offset = vaddr;
    if let Some((f, off)) = symbols.function_at(vaddr) {
        frame.symbol = Some(demangle(&f.name));
        frame.offset = off;
    }
}

/// Bytes a demangled name may take (a 1 KiB mangled C++ name with
/// substitutions can expand far past that): longer, it stays mangled.
const MAX_DEMANGLED: usize = 4096;

/// A Rust (legacy or v0) or C++ (Itanium) symbol as its source names it,
/// as `perf report` and `c++filt` show it; Rust's hash suffix left out.
/// Any other name, or one that does not decode, as it is.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        let text = cpp_demangle::Symbol::new(name.as_bytes()).ok().and_then(|s| s.demangle().ok());
        if let Some(text) = text.filter(|t| t.len() <= MAX_DEMANGLED) {
            return text;
        }
    }
    name.to_string()
}

/// A `dev_t` as /proc/PID/maps prints it (`fd:01`: major, minor in hex).
pub fn dev_text(dev: u64) -> String {
    format!("{:02x}:{:02x}", libc::major(dev), libc::minor(dev))
}

#[cfg(test)]
mod tests;
