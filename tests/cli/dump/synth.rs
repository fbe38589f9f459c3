//! A minimal ELF shared object writer, enough for a vDSO's shape: one
//! PT_LOAD over the whole file, PT_DYNAMIC, PT_NOTE, DT_HASH only (no
//! DT_GNU_HASH), .dynsym/.dynstr, .gnu.version/.gnu.version_d, a note.

/// What to build.
pub struct Spec {
    pub is_64: bool,
    pub le: bool,
    pub machine: u16,
    pub soname: &'static str,
    /// The one non-base version every symbol gets.
    pub version: &'static str,
    /// Function symbols; `true` = hidden version.
    pub functions: Vec<(&'static str, bool)>,
    /// (owner, type, desc).
    pub notes: Vec<(&'static str, u32, Vec<u8>)>,
}

struct Buf {
    bytes: Vec<u8>,
    le: bool,
    is_64: bool,
}

impl Buf {
    fn put(&mut self, off: usize, data: &[u8]) {
        self.bytes[off..off + data.len()].copy_from_slice(data);
    }
    fn u16(&mut self, off: usize, v: u16) -> usize {
        self.put(off, &if self.le { v.to_le_bytes() } else { v.to_be_bytes() });
        off + 2
    }
    fn u32(&mut self, off: usize, v: u32) -> usize {
        self.put(off, &if self.le { v.to_le_bytes() } else { v.to_be_bytes() });
        off + 4
    }
    fn u64(&mut self, off: usize, v: u64) -> usize {
        self.put(off, &if self.le { v.to_le_bytes() } else { v.to_be_bytes() });
        off + 8
    }
    /// A word of the class: Elf64_Addr/Off/Xword or Elf32_Addr/Off/Word.
    fn word(&mut self, off: usize, v: u64) -> usize {
        if self.is_64 {
            self.u64(off, v)
        } else {
            self.u32(off, v as u32)
        }
    }
}

fn elf_hash(name: &str) -> u32 {
    let mut h: u32 = 0;
    for &b in name.as_bytes() {
        h = (h << 4).wrapping_add(u32::from(b));
        let g = h & 0xf000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

fn align(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

/// The shape of a built image: its class's entry sizes, its symbol count
/// and where each of its ten sections lies.
struct Layout {
    ehsize: usize,
    phent: usize,
    shent: usize,
    syment: usize,
    dynent: usize,
    nsym: usize,
    offs: [usize; 10],
    sizes: [usize; 10],
    shoff: usize,
    total: usize,
}

/// Append `s` and a NUL to the string table `t`: its offset there.
fn stroff(s: &str, t: &mut Vec<u8>) -> u32 {
    let at = t.len();
    t.extend_from_slice(s.as_bytes());
    t.push(0);
    at as u32
}

/// The note area: each of the spec's notes, 4-aligned.
fn note_area(spec: &Spec) -> Vec<u8> {
    let mut note = Vec::new();
    for (owner, kind, desc) in &spec.notes {
        let mut hdr = Buf { bytes: vec![0; 12], le: spec.le, is_64: spec.is_64 };
        hdr.u32(0, owner.len() as u32 + 1);
        hdr.u32(4, desc.len() as u32);
        hdr.u32(8, *kind);
        note.extend_from_slice(&hdr.bytes);
        note.extend_from_slice(owner.as_bytes());
        note.push(0);
        note.resize(align(note.len(), 4), 0);
        note.extend_from_slice(desc);
        note.resize(align(note.len(), 4), 0);
    }
    note
}

/// Build the image.
pub fn build(spec: &Spec) -> Vec<u8> {
    let (ehsize, phent, shent, syment, dynent) = if spec.is_64 { (64, 56, 64, 24, 16) } else { (52, 32, 40, 16, 8) };
    // .dynstr: "\0soname\0version\0names..."
    let mut dynstr = vec![0u8];
    let soname_at = stroff(spec.soname, &mut dynstr);
    let version_at = stroff(spec.version, &mut dynstr);
    let fn_at: Vec<u32> = spec.functions.iter().map(|(n, _)| stroff(n, &mut dynstr)).collect();
    // symbols: null, the version's ABS symbol, then the functions.
    let nsym = 2 + spec.functions.len();
    let note = note_area(spec);
    let names = [
        "",
        ".hash",
        ".dynsym",
        ".dynstr",
        ".gnu.version",
        ".gnu.version_d",
        ".dynamic",
        ".note",
        ".text",
        ".shstrtab",
    ];
    let mut shstr = Vec::new();
    let name_at: Vec<u32> = names.iter().map(|n| stroff(n, &mut shstr)).collect();
    let ndyn = 10;
    let sizes = [
        0,
        4 * (2 + 1 + nsym),
        nsym * syment,
        dynstr.len(),
        2 * nsym,
        2 * (20 + 8),
        ndyn * dynent,
        note.len(),
        16 * spec.functions.len(),
        shstr.len(),
    ];
    let mut offs = [0usize; 10];
    let mut at = ehsize + 3 * phent;
    for i in 1..10 {
        at = align(at, 8);
        offs[i] = at;
        at += sizes[i];
    }
    let shoff = align(at, 8);
    let total = shoff + 10 * shent;
    let l = Layout { ehsize, phent, shent, syment, dynent, nsym, offs, sizes, shoff, total };
    let mut b = Buf { bytes: vec![0; total], le: spec.le, is_64: spec.is_64 };
    write_elf_header(&mut b, spec, &l);
    write_program_headers(&mut b, spec, &l);
    write_symbols(&mut b, spec, &l, version_at, &fn_at);
    b.put(offs[3], &dynstr);
    write_versions(&mut b, spec, &l, soname_at, version_at);
    write_dynamic(&mut b, &l, soname_at, dynstr.len());
    b.put(offs[7], &note);
    for i in 0..spec.functions.len() {
        b.put(offs[8] + 16 * i, &[0xc3; 16]);
    }
    b.put(offs[9], &shstr);
    write_section_headers(&mut b, &l, &name_at);
    b.bytes
}

fn write_elf_header(b: &mut Buf, spec: &Spec, l: &Layout) {
    // ELF header.
    b.put(0, &[0x7f, b'E', b'L', b'F', if spec.is_64 { 2 } else { 1 }, if spec.le { 1 } else { 2 }, 1]);
    let mut o = b.u16(16, 3); // ET_DYN
    o = b.u16(o, spec.machine);
    o = b.u32(o, 1);
    o = b.word(o, 0); // e_entry
    o = b.word(o, l.ehsize as u64); // e_phoff
    o = b.word(o, l.shoff as u64);
    o = b.u32(o, 0);
    o = b.u16(o, l.ehsize as u16);
    o = b.u16(o, l.phent as u16);
    o = b.u16(o, 3);
    o = b.u16(o, l.shent as u16);
    o = b.u16(o, 10);
    b.u16(o, 9);
}

fn write_program_headers(b: &mut Buf, spec: &Spec, l: &Layout) {
    // Program headers: PT_LOAD (all), PT_DYNAMIC, PT_NOTE.
    let phdrs =
        [(1u32, 5u32, 0usize, l.total, 0x1000u64), (2, 6, l.offs[6], l.sizes[6], 8), (4, 4, l.offs[7], l.sizes[7], 4)];
    for (i, (kind, flags, off, size, al)) in phdrs.iter().enumerate() {
        let mut o = l.ehsize + i * l.phent;
        o = b.u32(o, *kind);
        if spec.is_64 {
            o = b.u32(o, *flags);
        }
        o = b.word(o, *off as u64);
        o = b.word(o, *off as u64); // vaddr == offset
        o = b.word(o, *off as u64);
        o = b.word(o, *size as u64);
        o = b.word(o, *size as u64);
        if !spec.is_64 {
            o = b.u32(o, *flags);
        }
        b.word(o, *al);
    }
}

fn write_symbols(b: &mut Buf, spec: &Spec, l: &Layout, version_at: u32, fn_at: &[u32]) {
    // .hash: one bucket holding the last symbol, chains walking down.
    let mut o = b.u32(l.offs[1], 1);
    o = b.u32(o, l.nsym as u32);
    o = b.u32(o, l.nsym as u32 - 1);
    for i in 0..l.nsym {
        o = b.u32(o, if i <= 1 { 0 } else { i as u32 - 1 });
    }

    // .dynsym
    let text_shndx = 8u16;
    let mut syms: Vec<(u32, u8, u16, u64, u64)> = vec![(0, 0, 0, 0, 0), (version_at, 0x11, 0xfff1, 0, 0)];
    for (i, at) in fn_at.iter().enumerate() {
        syms.push((*at, 0x12, text_shndx, (l.offs[8] + 16 * i) as u64, 16));
    }
    for (i, (name, info, shndx, value, size)) in syms.iter().enumerate() {
        let mut o = l.offs[2] + i * l.syment;
        o = b.u32(o, *name);
        if spec.is_64 {
            b.put(o, &[*info, 0]);
            o = b.u16(o + 2, *shndx);
            o = b.u64(o, *value);
            b.u64(o, *size);
        } else {
            o = b.u32(o, *value as u32);
            o = b.u32(o, *size as u32);
            b.put(o, &[*info, 0]);
            b.u16(o + 2, *shndx);
        }
    }
}

fn write_versions(b: &mut Buf, spec: &Spec, l: &Layout, soname_at: u32, version_at: u32) {
    // .gnu.version
    let mut o = b.u16(l.offs[4], 0);
    o = b.u16(o, 2);
    for (_, hidden) in &spec.functions {
        o = b.u16(o, if *hidden { 0x8002 } else { 2 });
    }

    // .gnu.version_d: BASE (soname) then the version.
    for (i, (flags, name)) in [(1u16, soname_at), (0, version_at)].iter().enumerate() {
        let at = l.offs[5] + i * 28;
        let mut o = b.u16(at, 1);
        o = b.u16(o, *flags);
        o = b.u16(o, i as u16 + 1);
        o = b.u16(o, 1);
        let text = if i == 0 { spec.soname } else { spec.version };
        o = b.u32(o, elf_hash(text));
        o = b.u32(o, 20);
        o = b.u32(o, if i == 0 { 28 } else { 0 });
        o = b.u32(o, *name);
        b.u32(o, 0);
    }
}

fn write_dynamic(b: &mut Buf, l: &Layout, soname_at: u32, dynstr_len: usize) {
    // .dynamic
    let dyns: [(u64, u64); 10] = [
        (14, u64::from(soname_at)),
        (4, l.offs[1] as u64),
        (5, l.offs[3] as u64),
        (6, l.offs[2] as u64),
        (10, dynstr_len as u64),
        (11, l.syment as u64),
        (0x6fff_fffc, l.offs[5] as u64),
        (0x6fff_fffd, 2),
        (0x6fff_fff0, l.offs[4] as u64),
        (0, 0),
    ];
    for (i, (t, v)) in dyns.iter().enumerate() {
        let o = b.word(l.offs[6] + i * l.dynent, *t);
        b.word(o, *v);
    }
}

fn write_section_headers(b: &mut Buf, l: &Layout, name_at: &[u32]) {
    // Section headers: (type, flags, link, info, align, entsize)
    let shdrs: [(u32, u64, u32, u32, u64, u64); 10] = [
        (0, 0, 0, 0, 0, 0),
        (5, 2, 2, 0, 8, 4),
        (11, 2, 3, 2, 8, l.syment as u64),
        (3, 2, 0, 0, 1, 0),
        (0x6fff_ffff, 2, 2, 0, 2, 2),
        (0x6fff_fffd, 2, 3, 2, 8, 0),
        (6, 3, 3, 0, 8, l.dynent as u64),
        (7, 2, 0, 0, 4, 0),
        (1, 6, 0, 0, 16, 0),
        (3, 0, 0, 0, 1, 0),
    ];
    for (i, (kind, flags, link, info, al, ent)) in shdrs.iter().enumerate() {
        let mut o = b.u32(l.shoff + i * l.shent, name_at[i]);
        o = b.u32(o, *kind);
        o = b.word(o, *flags);
        o = b.word(o, if i == 0 || i == 9 { 0 } else { l.offs[i] as u64 });
        o = b.word(o, l.offs[i] as u64);
        o = b.word(o, l.sizes[i] as u64);
        o = b.u32(o, *link);
        o = b.u32(o, *info);
        o = b.word(o, *al);
        b.word(o, *ent);
    }
}

/// NT_GNU_ABI_TAG's descriptor: OS, major, minor, subminor.
pub fn abi_tag(le: bool, os: u32, v: [u32; 3]) -> Vec<u8> {
    let mut d = Vec::new();
    for x in [os, v[0], v[1], v[2]] {
        d.extend_from_slice(&if le { x.to_le_bytes() } else { x.to_be_bytes() });
    }
    d
}
