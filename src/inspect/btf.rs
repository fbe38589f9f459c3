//! The kernel's BTF (`/sys/kernel/btf/vmlinux`, world-readable): the type
//! ids `tp_btf` programs attach by (`btf_trace_<tracepoint>` typedefs) and
//! the field offsets they read (`pt_regs`, `task_struct`), so the programs
//! fit the running kernel without headers or a compiler
//! (<https://docs.kernel.org/bpf/btf.html>).
//!
//! The parser is total: a truncated or inconsistent blob is an `Err`, never
//! a panic, and only the tables needed are kept (names and struct members).

use crate::error::{Error, Result};
use std::collections::HashMap;

/// Where the running kernel's BTF lives.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";
/// vmlinux BTF is ~6 MiB on a distro kernel; refuse anything far larger.
const MAX_BYTES: u64 = 64 << 20;

const MAGIC: u16 = 0xeb9f;
const KIND_INT: u32 = 1;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_DECL_TAG: u32 = 17;
const KIND_ENUM64: u32 = 19;

/// One struct or union member: name offset, type id, offset in bits.
#[derive(Debug, Clone, Copy)]
struct Member {
    name: u32,
    type_id: u32,
    bit_offset: u32,
}

#[derive(Debug, Clone)]
struct Type {
    kind: u32,
    name: u32,
    /// `size_or_type`: the referenced type of typedefs, pointers and qualifiers.
    target: u32,
    /// Struct/union members (empty for other kinds).
    members: Vec<Member>,
}

/// Parsed BTF: types by id (id 0 is `void`), the string table, and the ids
/// of named types by kind.
#[derive(Debug)]
pub struct Btf {
    types: Vec<Type>,
    strings: Vec<u8>,
    by_name: HashMap<(u32, String), u32>,
}

fn malformed(why: &str) -> Error {
    Error::malformed(VMLINUX, why)
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off.checked_add(4)?)?.try_into().ok()?))
}

impl Btf {
    /// Read and parse the running kernel's BTF.
    pub fn vmlinux() -> Result<Btf> {
        // A sysfs file: its size is not known before reading, so read at most
        // MAX_BYTES + 1 and refuse a blob that fills it.
        use std::io::Read;
        let hint = "BTF needs CONFIG_DEBUG_INFO_BTF; use `--engine perf` without it";
        let file = std::fs::File::open(VMLINUX).map_err(|e| Error::from_io(VMLINUX, e, hint))?;
        let mut bytes = Vec::new();
        file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::from_io(VMLINUX, e, hint))?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(Error::TooLarge { path: VMLINUX.into(), size: bytes.len() as u64, limit: MAX_BYTES });
        }
        Btf::parse(&bytes)
    }

    /// Parse a little-endian BTF blob (the only byte order of kernels
    /// vdsoctl traces on: x86_64, aarch64, riscv64).
    pub fn parse(b: &[u8]) -> Result<Btf> {
        let magic = b.get(0..2).map(|m| u16::from_le_bytes([m[0], m[1]]));
        if magic != Some(MAGIC) {
            return Err(malformed("not BTF (bad magic or byte order)"));
        }
        let field = |off: usize| u32_at(b, off).ok_or_else(|| malformed("truncated header"));
        let hdr_len = field(4)? as usize;
        let (type_off, type_len) = (field(8)? as usize, field(12)? as usize);
        let (str_off, str_len) = (field(16)? as usize, field(20)? as usize);
        let section = |off: usize, len: usize| {
            let start = hdr_len.checked_add(off)?;
            b.get(start..start.checked_add(len)?)
        };
        let types_raw = section(type_off, type_len).ok_or_else(|| malformed("type section out of bounds"))?;
        let strings = section(str_off, str_len).ok_or_else(|| malformed("string section out of bounds"))?.to_vec();

        let mut types = vec![Type { kind: 0, name: 0, target: 0, members: Vec::new() }];
        let mut at = 0usize;
        while at < types_raw.len() {
            let word = |i: usize| u32_at(types_raw, at + 4 * i).ok_or_else(|| malformed("truncated type"));
            let (name, info, target) = (word(0)?, word(1)?, word(2)?);
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let kflag = info >> 31 == 1;
            at += 12;
            let extra = match kind {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
                KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
                0 | 2 | 7 | KIND_TYPEDEF | 9..=12 | 16 | 18 => 0,
                _ => return Err(malformed("unknown BTF kind")),
            };
            let body = types_raw.get(at..at + extra).ok_or_else(|| malformed("truncated type body"))?;
            let members = if kind == KIND_STRUCT || kind == KIND_UNION {
                (0..vlen)
                    .map(|i| {
                        let w = |j: usize| u32_at(body, 12 * i + 4 * j).unwrap_or(0);
                        // With kflag the offset's top byte is a bitfield size.
                        let off = if kflag { w(2) & 0x00ff_ffff } else { w(2) };
                        Member { name: w(0), type_id: w(1), bit_offset: off }
                    })
                    .collect()
            } else {
                Vec::new()
            };
            at += extra;
            types.push(Type { kind, name, target, members });
        }
        let mut btf = Btf { types, strings, by_name: HashMap::new() };
        let mut by_name = HashMap::new();
        for (id, t) in btf.types.iter().enumerate().skip(1) {
            if matches!(t.kind, KIND_STRUCT | KIND_UNION | KIND_TYPEDEF) && t.name != 0 {
                let name = btf.str_at(t.name).to_string();
                // A struct may also appear as an empty forward; keep the first with members.
                by_name.entry((t.kind, name)).or_insert(id as u32);
            }
        }
        btf.by_name = by_name;
        Ok(btf)
    }

    fn str_at(&self, off: u32) -> &str {
        let tail = self.strings.get(off as usize..).unwrap_or(&[]);
        let end = tail.iter().position(|&c| c == 0).unwrap_or(tail.len());
        std::str::from_utf8(&tail[..end]).unwrap_or("")
    }

    /// The type id of the typedef `name` (e.g. `btf_trace_sys_enter`).
    pub fn typedef_id(&self, name: &str) -> Option<u32> {
        self.by_name.get(&(KIND_TYPEDEF, name.to_string())).copied()
    }

    /// Byte offset of `path` (`["thread_info", "status"]`) inside struct
    /// `name`, looking through anonymous struct and union members.
    pub fn offset_of(&self, name: &str, path: &[&str]) -> Option<u32> {
        let mut id = *self.by_name.get(&(KIND_STRUCT, name.to_string()))?;
        let mut bits = 0u32;
        for field in path {
            let (off, ty) = self.member(id, field, 0)?;
            bits = bits.checked_add(off)?;
            id = ty;
        }
        (bits % 8 == 0).then_some(bits / 8)
    }

    /// A member's bit offset and type id, searching anonymous members too.
    fn member(&self, id: u32, field: &str, depth: u32) -> Option<(u32, u32)> {
        let t = self.types.get(id as usize)?;
        if depth > 8 {
            return None;
        }
        for m in &t.members {
            if m.name != 0 && self.str_at(m.name) == field {
                return Some((m.bit_offset, self.resolve(m.type_id)));
            }
        }
        for m in t.members.iter().filter(|m| m.name == 0) {
            if let Some((off, ty)) = self.member(self.resolve(m.type_id), field, depth + 1) {
                return Some((m.bit_offset.checked_add(off)?, ty));
            }
        }
        None
    }

    /// Follow typedefs and qualifiers to the underlying type id.
    fn resolve(&self, mut id: u32) -> u32 {
        for _ in 0..16 {
            match self.types.get(id as usize) {
                Some(t) if matches!(t.kind, KIND_TYPEDEF | 9 | 10 | 11 | 18) => id = self.type_ref(id),
                _ => break,
            }
        }
        id
    }

    /// The referenced type of a typedef or qualifier.
    fn type_ref(&self, id: u32) -> u32 {
        self.types.get(id as usize).map_or(0, |t| t.target)
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
        let btf = Btf::parse(&blob()).unwrap();
        assert_eq!(btf.typedef_id("btf_trace_x"), Some(3));
        assert_eq!(btf.typedef_id("nope"), None);
        assert_eq!(btf.offset_of("outer", &["a"]), Some(0));
        assert_eq!(btf.offset_of("outer", &["ti", "status"]), Some(8));
        assert_eq!(btf.offset_of("outer", &["missing"]), None);
    }

    #[test]
    fn truncated_or_foreign_blobs_are_errors() {
        let b = blob();
        for n in 0..b.len() {
            let _ = Btf::parse(&b[..n]);
        }
        assert!(Btf::parse(&b[..30]).is_err());
        assert!(Btf::parse(b"\x9f\xeb\x01\x00").is_err());
        let mut bad = b.clone();
        bad[24 + 7] = 0x1f; // kind 31 in the first type's info
        assert!(Btf::parse(&bad).is_err());
    }

    /// The running kernel's BTF, where there is one: what the BPF engine reads.
    #[test]
    fn vmlinux_has_what_the_trace_engine_needs() {
        let Ok(btf) = Btf::vmlinux() else { return };
        assert!(btf.typedef_id("btf_trace_sys_enter").is_some());
        assert!(btf.typedef_id("btf_trace_sched_process_fork").is_some());
        assert!(btf.offset_of("task_struct", &["thread_info", "status"]).is_some());
        if cfg!(target_arch = "x86_64") {
            // struct pt_regs is uapi-stable on x86_64: di at 112, bx at 40.
            assert_eq!(btf.offset_of("pt_regs", &["di"]), Some(112));
            assert_eq!(btf.offset_of("pt_regs", &["bx"]), Some(40));
        }
    }
}
