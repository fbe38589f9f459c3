//! The kernel's BTF (`/sys/kernel/btf/vmlinux`, world-readable): the type
//! ids `tp_btf` programs attach by (`btf_trace_<tracepoint>` typedefs) and
//! the field offsets they read (`pt_regs`, `task_struct`), so the programs
//! fit the running kernel without headers or a compiler
//! (<https://docs.kernel.org/bpf/btf.html>).
//!
//! The parser is total: a truncated or inconsistent blob is an `Err`, never
//! a panic, and only the tables needed are kept (names and struct members).
//! A kind newer than this parser (BTF grows a kind every few releases) is
//! not an error, as in aya-obj: its body size is unknown, so the walk stops
//! there and keeps every type before it; a lookup that needed a later one
//! finds nothing, and [`Btf::unknown_kind`] says why.

use crate::error::{Error, Result};

/// Where the running kernel's BTF lives.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";
/// vmlinux BTF is ~6 MiB on a distro kernel; refuse anything far larger.
const MAX_BYTES: u64 = 64 << 20;

const MAGIC: u16 = 0xeb9f;
const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_ENUM64: u32 = 19;

/// One struct or union member: name offset, type id, offset in bits.
#[derive(Debug, Clone, Copy)]
struct Member {
    name: u32,
    type_id: u32,
    bit_offset: u32,
    /// A bitfield (kflag and a size): no whole bytes to load.
    bitfield: bool,
}

/// A type's header, decoded from the blob when asked for.
#[derive(Debug, Clone, Copy)]
struct Type {
    kind: u8,
    kflag: bool,
    vlen: u16,
    name: u32,
    /// `size_or_type`: the referenced type of typedefs, pointers and qualifiers.
    target: u32,
    /// Where the kind-specific data starts in the type section.
    body: u32,
}

/// Parsed BTF: the blob, and where each type starts in its type section
/// (index = type id; id 0 is `void`). Kept small — 4 bytes a type (vmlinux
/// has ~130,000) — so peak memory is little more than the blob.
#[derive(Debug)]
pub struct Btf {
    bytes: Vec<u8>,
    /// The type and string sections within `bytes`.
    types_at: (usize, usize),
    strings_at: (usize, usize),
    starts: Vec<u32>,
    /// The first type of a kind this parser does not know: (its id, kind).
    unknown: Option<(u32, u32)>,
    /// The blob's byte order: big-endian (s390x, ppc64 BE) when its magic
    /// reads byte-swapped.
    big: bool,
}

/// A struct member's place and size: what a program may load from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Byte offset from the start of the outer struct.
    pub offset: u32,
    /// Bytes of the member's type.
    pub size: u32,
    /// An array (a load may read any aligned part of it); otherwise a load
    /// must read the whole member.
    pub array: bool,
}

fn malformed(why: &str) -> Error {
    Error::malformed(VMLINUX, why)
}

/// The word at `off`, in the blob's byte order (`big`: big-endian).
fn u32_at(b: &[u8], off: usize, big: bool) -> Option<u32> {
    let w: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(if big { u32::from_be_bytes(w) } else { u32::from_le_bytes(w) })
}

impl Btf {
    /// Read and parse the running kernel's BTF.
    pub fn vmlinux() -> Result<Btf> {
        // A sysfs file: its size is not known before reading, so read at most
        // MAX_BYTES + 1 and refuse a blob that fills it.
        use std::io::Read;
        let hint = || crate::error::Hint::BpfNeedsBtf;
        let file = std::fs::File::open(VMLINUX).map_err(|e| Error::from_io(VMLINUX, e, hint()))?;
        let mut bytes = Vec::new();
        file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::from_io(VMLINUX, e, hint()))?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(Error::TooLarge { path: VMLINUX.into(), size: bytes.len() as u64, limit: MAX_BYTES });
        }
        Btf::parse(bytes)
    }

    /// Parse a BTF blob of either byte order: the kernel writes its own
    /// (little-endian on x86_64, aarch64, riscv64 and ppc64el; big-endian
    /// on s390x), and the magic 0xeB9F tells which.
    pub fn parse(b: Vec<u8>) -> Result<Btf> {
        let big = match b.get(0..2) {
            Some(m) if u16::from_le_bytes([m[0], m[1]]) == MAGIC => false,
            Some(m) if u16::from_be_bytes([m[0], m[1]]) == MAGIC => true,
            _ => return Err(malformed("not BTF (bad magic)")),
        };
        let field = |off: usize| u32_at(&b, off, big).ok_or_else(|| malformed("truncated header"));
        let hdr_len = field(4)? as usize;
        let (type_off, type_len) = (field(8)? as usize, field(12)? as usize);
        let (str_off, str_len) = (field(16)? as usize, field(20)? as usize);
        let section = |off: usize, len: usize| {
            let start = hdr_len.checked_add(off)?;
            let end = start.checked_add(len)?;
            (end <= b.len()).then_some((start, end))
        };
        let types_at = section(type_off, type_len).ok_or_else(|| malformed("type section out of bounds"))?;
        let strings_at = section(str_off, str_len).ok_or_else(|| malformed("string section out of bounds"))?;
        let raw = &b[types_at.0..types_at.1];

        let mut starts = vec![u32::MAX];
        let mut unknown = None;
        let mut at = 0usize;
        while at < raw.len() {
            let word = |i: usize| u32_at(raw, at + 4 * i, big).ok_or_else(|| malformed("truncated type"));
            let info = word(1)?;
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let extra = match kind {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
                KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
                0 | KIND_PTR | 7 | KIND_TYPEDEF | 9..=12 | KIND_FLOAT | 18 => 0,
                // A newer kind: where its body ends is unknown, so nothing
                // after it can be located. Keep what came before.
                _ => {
                    unknown = Some((starts.len() as u32, kind));
                    break;
                }
            };
            starts.push(at as u32);
            at += 12;
            if raw.len() - at < extra {
                return Err(malformed("truncated type body"));
            }
            at += extra;
        }
        Ok(Btf { bytes: b, types_at, strings_at, starts, unknown, big })
    }

    /// The first type of a kind this parser does not know, as (id, kind):
    /// the walk stopped there, so types from that id on were not read.
    pub fn unknown_kind(&self) -> Option<(u32, u32)> {
        self.unknown
    }

    /// Type `id`'s header (`None` for void and ids out of range).
    fn ty(&self, id: u32) -> Option<Type> {
        let at = *self.starts.get(id as usize).filter(|a| **a != u32::MAX)? as usize;
        let raw = &self.bytes[self.types_at.0..self.types_at.1];
        let (name, info, target) = (self.u32_at(raw, at)?, self.u32_at(raw, at + 4)?, self.u32_at(raw, at + 8)?);
        Some(Type {
            kind: ((info >> 24) & 0x1f) as u8,
            kflag: info >> 31 == 1,
            vlen: (info & 0xffff) as u16,
            name,
            target,
            body: at as u32 + 12,
        })
    }

    fn u32_at(&self, raw: &[u8], off: usize) -> Option<u32> {
        u32_at(raw, off, self.big)
    }

    fn str_at(&self, off: u32) -> &str {
        let strings = &self.bytes[self.strings_at.0..self.strings_at.1];
        let tail = strings.get(off as usize..).unwrap_or(&[]);
        let end = tail.iter().position(|&c| c == 0).unwrap_or(tail.len());
        std::str::from_utf8(&tail[..end]).unwrap_or("")
    }

    /// The first type of `kind` named `name` (a struct with members before
    /// an empty forward of the same name).
    fn find(&self, kind: u32, name: &str) -> Option<u32> {
        let matches = |t: &Type| u32::from(t.kind) == kind && t.name != 0 && self.str_at(t.name) == name;
        let ids = || (1..self.starts.len() as u32).filter_map(|id| Some((id, self.ty(id)?)));
        let full = ids().find(|(_, t)| matches(t) && (kind != KIND_STRUCT || t.vlen > 0));
        full.or_else(|| ids().find(|(_, t)| matches(t))).map(|(id, _)| id)
    }

    /// The type id of the typedef `name` (e.g. `btf_trace_sys_enter`).
    pub fn typedef_id(&self, name: &str) -> Option<u32> {
        self.find(KIND_TYPEDEF, name)
    }

    /// The type ids of the functions `names`, in one walk of the types.
    pub fn func_ids(&self, names: &[&str]) -> Vec<Option<u32>> {
        let mut ids = vec![None; names.len()];
        for id in 1..self.starts.len() as u32 {
            let Some(t) = self.ty(id) else { continue };
            if u32::from(t.kind) != KIND_FUNC || t.name == 0 {
                continue;
            }
            let name = self.str_at(t.name);
            // Every place a name is asked for (two programs may attach to one function).
            for (i, _) in names.iter().enumerate().filter(|(_, n)| **n == name) {
                ids[i].get_or_insert(id);
            }
        }
        ids
    }

    /// Bytes of struct `name` (`sizeof`).
    pub fn struct_size(&self, name: &str) -> Option<u32> {
        self.size_of(self.find(KIND_STRUCT, name)?, 0)
    }

    /// Byte offset of `path` (`["thread_info", "status"]`) inside struct
    /// `name`, looking through anonymous struct and union members.
    pub fn offset_of(&self, name: &str, path: &[&str]) -> Option<u32> {
        let (bits, _) = self.walk(name, path)?;
        (bits % 8 == 0).then_some(bits / 8)
    }

    /// Follow `path` from struct `name`: the bit offset reached and the
    /// member's type id.
    fn walk(&self, name: &str, path: &[&str]) -> Option<(u32, u32)> {
        let mut id = self.find(KIND_STRUCT, name)?;
        let mut bits = 0u32;
        for field in path {
            let (off, ty) = self.member(id, field, 0)?;
            bits = bits.checked_add(off)?;
            id = ty;
        }
        Some((bits, id))
    }

    /// `path`'s offset in struct `name` and its size: what a load from it
    /// must match. `None` for a bitfield (no whole bytes to load).
    pub fn field(&self, name: &str, path: &[&str]) -> Option<Field> {
        let (bits, id) = self.walk(name, path)?;
        let array = self.ty(id).is_some_and(|t| u32::from(t.kind) == KIND_ARRAY);
        (bits % 8 == 0).then_some(())?;
        Some(Field { offset: bits / 8, size: self.size_of(id, 0)?, array })
    }

    /// Bytes of type `id` (pointers: 8, the kernels traced are 64-bit).
    fn size_of(&self, id: u32, depth: u32) -> Option<u32> {
        let id = self.resolve(id);
        let t = self.ty(id)?;
        match u32::from(t.kind) {
            KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_FLOAT => Some(t.target),
            KIND_PTR => Some(8),
            KIND_ARRAY if depth < 8 => {
                let raw = &self.bytes[self.types_at.0..self.types_at.1];
                let (elem, n) = (self.u32_at(raw, t.body as usize)?, self.u32_at(raw, t.body as usize + 8)?);
                self.size_of(elem, depth + 1)?.checked_mul(n)
            }
            _ => None,
        }
    }

    /// The members of a struct or union, read from the blob.
    fn members(&self, id: u32) -> Vec<Member> {
        let Some(t) = self.ty(id) else { return Vec::new() };
        if !matches!(u32::from(t.kind), KIND_STRUCT | KIND_UNION) {
            return Vec::new();
        }
        let raw = &self.bytes[self.types_at.0..self.types_at.1];
        (0..t.vlen as usize)
            .filter_map(|i| {
                let w = |j: usize| self.u32_at(raw, t.body as usize + 12 * i + 4 * j);
                // With kflag the offset's top byte is a bitfield size.
                let off = if t.kflag { w(2)? & 0x00ff_ffff } else { w(2)? };
                let bitfield = t.kflag && w(2)? >> 24 != 0;
                Some(Member { name: w(0)?, type_id: w(1)?, bit_offset: off, bitfield })
            })
            .collect()
    }

    /// A member's bit offset and type id, searching anonymous members too.
    fn member(&self, id: u32, field: &str, depth: u32) -> Option<(u32, u32)> {
        if depth > 8 {
            return None;
        }
        let members = self.members(id);
        for m in &members {
            if m.name != 0 && self.str_at(m.name) == field {
                if m.bitfield {
                    return None;
                }
                return Some((m.bit_offset, self.resolve(m.type_id)));
            }
        }
        for m in members.iter().filter(|m| m.name == 0) {
            if let Some((off, ty)) = self.member(self.resolve(m.type_id), field, depth + 1) {
                return Some((m.bit_offset.checked_add(off)?, ty));
            }
        }
        None
    }

    /// Follow typedefs and qualifiers to the underlying type id.
    fn resolve(&self, mut id: u32) -> u32 {
        for _ in 0..16 {
            match self.ty(id) {
                Some(t) if matches!(u32::from(t.kind), KIND_TYPEDEF | 9 | 10 | 11 | 18) => id = t.target,
                _ => break,
            }
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob: `int`, `struct inner { int status; }`, a typedef
    /// `btf_trace_x` of it, and `struct outer { int a; union { struct inner
    /// ti; }; }` with the anonymous union at byte 8.
    fn blob() -> Vec<u8> {
        let strings = b"\0int\0inner\0status\0btf_trace_x\0outer\0a\0ti\0";
        let name = |s: &str| {
            strings.windows(s.len() + 1).position(|w| &w[..s.len()] == s.as_bytes() && w[s.len()] == 0).unwrap() as u32
        };
        let mut t: Vec<u32> = Vec::new();
        // 1: int (kind 1), size 4, encoding word
        t.extend([name("int"), 1 << 24, 4, 32]);
        // 2: struct inner, 1 member
        t.extend([name("inner"), (4 << 24) | 1, 4, name("status"), 1, 0]);
        // 3: typedef btf_trace_x -> 2
        t.extend([name("btf_trace_x"), 8 << 24, 2]);
        // 4: anonymous union { struct inner ti; }
        t.extend([0, (5 << 24) | 1, 4, name("ti"), 2, 0]);
        // 5: struct outer { int a; union (at bit 64) }
        t.extend([name("outer"), (4 << 24) | 2, 12, name("a"), 1, 0, 0, 4, 64]);
        let types: Vec<u8> = t.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut b = Vec::new();
        b.extend(0xeb9fu16.to_le_bytes());
        b.extend([1u8, 0]);
        for w in [24u32, 0, types.len() as u32, types.len() as u32, strings.len() as u32] {
            b.extend(w.to_le_bytes());
        }
        b.extend(&types);
        b.extend(strings);
        b
    }

    #[test]
    fn finds_typedefs_and_offsets_through_anonymous_members() {
        let btf = Btf::parse(blob()).unwrap();
        assert_eq!(btf.typedef_id("btf_trace_x"), Some(3));
        assert_eq!(btf.typedef_id("nope"), None);
        assert_eq!(btf.offset_of("outer", &["a"]), Some(0));
        assert_eq!(btf.offset_of("outer", &["ti", "status"]), Some(8));
        assert_eq!(btf.offset_of("outer", &["missing"]), None);
    }

    /// Every prefix of `b` parses without a panic, and one cut inside the
    /// header is an error.
    fn truncations_are_errors(b: &[u8]) {
        for n in 0..b.len() {
            let _ = Btf::parse(b[..n].to_vec());
        }
        assert!(Btf::parse(b[..30].to_vec()).is_err());
    }

    #[test]
    fn truncated_or_foreign_blobs_are_errors() {
        truncations_are_errors(&blob());
        assert!(Btf::parse(b"\x9f\xeb\x01\x00".to_vec()).is_err());
    }

    #[test]
    fn member_sizes_come_with_their_offsets() {
        let btf = Btf::parse(blob()).unwrap();
        assert_eq!(btf.field("outer", &["a"]), Some(Field { offset: 0, size: 4, array: false }));
        assert_eq!(btf.field("outer", &["ti", "status"]), Some(Field { offset: 8, size: 4, array: false }));
        assert_eq!(btf.field("outer", &["ti"]), Some(Field { offset: 8, size: 4, array: false }));
        assert_eq!(btf.field("outer", &["nope"]), None);
    }

    /// A blob whose last type is of a kind no kernel has yet (31): the
    /// types before it are still found, and the parser says where it stopped.
    #[test]
    fn an_unknown_kind_is_skipped_not_fatal() {
        let mut b = blob();
        let types_len = u32::from_le_bytes(b[12..16].try_into().unwrap());
        // Insert a 12-byte type of kind 31 at the end of the type section
        // and move the string section after it.
        let at = 24 + types_len as usize;
        b.splice(at..at, [0u32, 31 << 24, 0].iter().flat_map(|w| w.to_le_bytes()));
        b[12..16].copy_from_slice(&(types_len + 12).to_le_bytes());
        b[16..20].copy_from_slice(&(types_len + 12).to_le_bytes());
        let btf = Btf::parse(b).unwrap();
        assert_eq!(btf.unknown_kind(), Some((6, 31)));
        assert_eq!(btf.typedef_id("btf_trace_x"), Some(3));
        assert_eq!(btf.offset_of("outer", &["ti", "status"]), Some(8));
        // In the middle, it hides what follows and nothing else.
        let mut mid = blob();
        mid[24 + 16 + 4 + 3] = 0x1f; // struct inner's kind → 31
        let btf = Btf::parse(mid).unwrap();
        assert_eq!(btf.unknown_kind(), Some((2, 31)));
        assert_eq!(btf.typedef_id("btf_trace_x"), None);
        assert!(Btf::parse(blob()).unwrap().unknown_kind().is_none());
    }

    /// `b` (little-endian BTF) in the other byte order, as a big-endian
    /// kernel (s390x) writes it: the magic, the header's words and every
    /// word of the type section swapped (BTF types are all 32-bit words);
    /// the strings as they are.
    fn byte_swapped(b: &[u8]) -> Vec<u8> {
        let w = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let (hdr_len, type_off, type_len) = (w(4) as usize, w(8) as usize, w(12) as usize);
        let mut out = b.to_vec();
        out[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        let types = hdr_len + type_off..hdr_len + type_off + type_len;
        for o in (4..hdr_len).step_by(4).chain(types.step_by(4)) {
            out[o..o + 4].copy_from_slice(&w(o).to_be_bytes());
        }
        out
    }

    #[test]
    fn big_endian_blobs_read_as_little_endian_ones() {
        let be = byte_swapped(&blob());
        assert_eq!(&be[0..2], b"\xeb\x9f");
        let btf = Btf::parse(be.clone()).unwrap();
        assert_eq!(btf.typedef_id("btf_trace_x"), Some(3));
        assert_eq!(btf.field("outer", &["ti", "status"]), Some(Field { offset: 8, size: 4, array: false }));
        assert_eq!(btf.struct_size("outer"), Some(12));
        // Truncated big-endian blobs are errors as little-endian ones are.
        truncations_are_errors(&be);
        assert!(Btf::parse(b"\xeb\x9e\x01\x00".to_vec()).is_err());
    }

    /// The host's own BTF, byte-swapped: every lookup the BPF engine makes
    /// gives what the little-endian original gives.
    #[test]
    fn the_hosts_btf_byte_swapped_reads_the_same() {
        let Ok(le) = std::fs::read(VMLINUX) else { return eprintln!("SKIP: no {VMLINUX} to byte-swap") };
        let (a, b) = (Btf::parse(le.clone()).unwrap(), Btf::parse(byte_swapped(&le)).unwrap());
        assert!(!a.big && b.big);
        assert_eq!(a.starts.len(), b.starts.len(), "every type located");
        assert_eq!(a.unknown_kind(), b.unknown_kind());
        for t in ["btf_trace_sys_enter", "btf_trace_sched_process_fork", "btf_trace_sched_process_exit"] {
            assert_eq!(a.typedef_id(t), b.typedef_id(t), "{t}");
            assert!(a.typedef_id(t).is_some(), "{t}");
        }
        let names = ["__x64_sys_clock_gettime", "__arm64_sys_clock_gettime", "do_exit"];
        assert_eq!(a.func_ids(&names), b.func_ids(&names));
        assert_eq!(a.struct_size("task_struct"), b.struct_size("task_struct"));
        assert_eq!(a.struct_size("pt_regs"), b.struct_size("pt_regs"));
        for path in [&["thread_info", "flags"][..], &["pid"], &["tgid"]] {
            assert_eq!(a.field("task_struct", path), b.field("task_struct", path), "{path:?}");
            assert!(a.field("task_struct", path).is_some(), "{path:?}");
        }
    }

    /// The running kernel's BTF, where there is one: what the BPF engine reads.
    #[test]
    fn vmlinux_has_what_the_trace_engine_needs() {
        let btf = match Btf::vmlinux() {
            Ok(btf) => btf,
            // Outside CI a kernel without BTF skips, visibly; in CI it fails.
            Err(e) if std::env::var_os("CI").is_none() => return eprintln!("SKIP: no kernel BTF here: {e}"),
            Err(e) => panic!("required facility missing in CI: {e}"),
        };
        assert!(btf.typedef_id("btf_trace_sys_enter").is_some());
        assert!(btf.typedef_id("btf_trace_sched_process_fork").is_some());
        // The running kernel's syscall entry, as the engine reads it.
        let abi = crate::inspect::kernel::abi().expect("a known kernel architecture");
        let entry = abi.syscall_entry().expect("the BPF engine knows this kernel's syscall entry");
        let regs = |m: crate::arch::KernelMember| btf.field("pt_regs", m.path).expect("a pt_regs member");
        let (native, compat) = (regs(entry.arg0_native), regs(entry.arg0_compat));
        let flags = btf.field("task_struct", entry.compat_flags.path).expect("the compat mark's member");
        match abi {
            crate::arch::Abi::X86_64 => {
                // struct pt_regs is uapi-stable on x86_64: di at 112, bx at 40.
                assert_eq!((native.offset, native.size, compat.offset), (112, 8, 40));
                assert_eq!(flags.size, 4, "thread_info.status is a u32");
            }
            crate::arch::Abi::Aarch64 => {
                // user_pt_regs first: regs[31] at 0; thread_info.flags an unsigned long.
                assert_eq!((native.offset, native.size, native.array), (0, 248, true));
                assert_eq!(compat, native, "an AArch32 task's r0 is saved in x0");
                assert_eq!(flags.size, 8);
            }
            other => panic!("no expectation for {other:?}"),
        }
    }
}
