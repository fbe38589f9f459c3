//! The walk of one in-memory ELF image: its dynamic section, symbols,
//! versions, notes and hash tables, each block checked against the image.

use super::*;

pub(super) struct Parser<'a> {
    bytes: &'a [u8],
    le: bool,
    is_64: bool,
    header: Header,
    phdrs: Vec<Segment>,
    shdrs: Vec<Section>,
    shstrtab: Option<Range<usize>>,
    issues: Vec<Issue>,
    /// Names cut at [`caps::NAME`].
    long_names: Cell<usize>,
}

impl<'a> Parser<'a> {
    /// Check the identification and the header tables, then decode them.
    pub(super) fn new(bytes: &'a [u8]) -> Result<Parser<'a>> {
        if bytes.is_empty() {
            return Err(bad("the image is empty (0 bytes)"));
        }
        if bytes.len() < 16 || &bytes[..4] != b"\x7fELF" {
            return Err(bad(format!(
                "not an ELF file: the first bytes are {:02x?}, not 7f 45 4c 46 (\\x7fELF)",
                &bytes[..bytes.len().min(4)]
            )));
        }
        let is_64 = match bytes[4] {
            1 => false,
            2 => true,
            c => return Err(bad(format!("unknown ELF class {c} (EI_CLASS must be 1 or 2)"))),
        };
        let le = match bytes[5] {
            1 => true,
            2 => false,
            d => return Err(bad(format!("unknown ELF data encoding {d} (EI_DATA must be 1 or 2)"))),
        };
        let ehsize = if is_64 { 64 } else { 52 };
        if bytes.len() < ehsize {
            return Err(bad(format!("truncated: {} bytes, an ELF header needs {ehsize}", bytes.len())));
        }
        let id = Ident { is_64, little_endian: le, machine: 0 };
        let header = records::header(bytes, id).map_err(|e| bad(format!("ELF header: {e}")))?;
        let id = header.ident;
        let total = bytes.len();

        let phent = id.size_of(Record::Segment) as u64;
        let phnum = u64::from(header.phnum);
        if phnum > 0 {
            if u64::from(header.phentsize) != phent {
                return Err(bad(format!("e_phentsize is {}, not {phent}", header.phentsize)));
            }
            if span(total, header.phoff, phnum * phent).is_none() {
                return Err(bad(format!(
                    "the program header table ({phnum} entries at offset {:#x}) runs past the end of the {total}-byte image",
                    header.phoff
                )));
            }
        }
        let mut issues = Vec::new();
        if phnum > caps::SEGMENTS {
            issues.push(Issue::Capped { table: "program headers", claimed: phnum, kept: caps::SEGMENTS });
        }
        let table = usize::try_from(header.phoff).ok().and_then(|at| bytes.get(at..)).unwrap_or(&[]);
        let phdrs = records::segments(table, phnum.min(caps::SEGMENTS) as usize, id)
            .map_err(|e| bad(format!("program headers: {e}")))?;
        for (i, ph) in phdrs.iter().enumerate() {
            if ph.filesz > 0 && span(total, ph.offset, ph.filesz).is_none() {
                return Err(bad(format!(
                    "program header {i} (offset {:#x}, {} bytes) runs past the end of the {total}-byte image",
                    ph.offset, ph.filesz
                )));
            }
        }

        let shdrs = section_headers(bytes, &header, &mut issues)?;
        let shstrtab = section_names(total, &header, &shdrs)?;
        Ok(Parser { bytes, le, is_64, header, phdrs, shdrs, shstrtab, issues, long_names: Cell::new(0) })
    }

    pub(super) fn u16_at(&self, off: u64) -> Option<u16> {
        let r = span(self.bytes.len(), off, 2)?;
        let b: [u8; 2] = self.bytes.get(r)?.try_into().ok()?;
        Some(if self.le { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) })
    }

    pub(super) fn u32_at(&self, off: u64) -> Option<u32> {
        let r = span(self.bytes.len(), off, 4)?;
        let b: [u8; 4] = self.bytes.get(r)?.try_into().ok()?;
        Some(if self.le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    }

    pub(super) fn u64_at(&self, off: u64) -> Option<u64> {
        let r = span(self.bytes.len(), off, 8)?;
        let b: [u8; 8] = self.bytes.get(r)?.try_into().ok()?;
        Some(if self.le { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) })
    }

    /// A word of the class: 8 bytes in ELF64, 4 in ELF32.
    pub(super) fn word_at(&self, off: u64) -> Option<u64> {
        if self.is_64 {
            self.u64_at(off)
        } else {
            self.u32_at(off).map(u64::from)
        }
    }

    /// [`cstr`] counting cut names.
    pub(super) fn name(&self, table: &[u8], idx: u64) -> Option<String> {
        cstr(table, idx, &self.long_names)
    }

    /// The dynamic entries up to DT_NULL, at most [`caps::DYNAMIC`] of them.
    pub(super) fn dynamic(&mut self) -> Result<Vec<(u64, u64)>> {
        let ph = self
            .phdrs
            .iter()
            .find(|p| p.kind == SegmentKind::Dynamic)
            .ok_or_else(|| bad("no PT_DYNAMIC segment: this is not a shared object, so it cannot be a vDSO"))?;
        let ent: u64 = if self.is_64 { 16 } else { 8 };
        let count = ph.filesz / ent;
        let mut tags = Vec::new();
        for i in 0..count.min(caps::DYNAMIC) {
            let at = ph.offset.saturating_add(i * ent);
            let (Some(tag), Some(val)) = (self.word_at(at), self.word_at(at.saturating_add(ent / 2))) else {
                return Err(bad(format!("dynamic entry {i} at offset {at:#x} runs past the end of the image")));
            };
            if tag == dt::NULL {
                return Ok(tags);
            }
            tags.push((tag, val));
        }
        if count > caps::DYNAMIC {
            self.issues.push(Issue::Capped { table: "dynamic entries", claimed: count, kept: caps::DYNAMIC });
        }
        Ok(tags)
    }

    /// A section header's name from .shstrtab.
    pub(super) fn section_name(&self, idx: usize) -> Option<String> {
        let sh = self.shdrs.get(idx)?;
        let table = self.bytes.get(self.shstrtab.clone()?)?;
        self.name(table, sh.name_at as u64)
    }

    /// The bytes of section `idx`, bounds already checked in `new`.
    pub(super) fn section_bytes(&self, sh: &Section) -> Option<&'a [u8]> {
        self.bytes.get(span(self.bytes.len(), sh.offset, sh.size)?)
    }

    /// A virtual address of the image to a file offset, through PT_LOAD.
    pub(super) fn vaddr_to_offset(&self, addr: u64) -> Option<u64> {
        offset_in(&loads(&self.phdrs), addr, 1)
    }

    pub(super) fn run(mut self) -> Result<Image> {
        let total = self.bytes.len();
        let tags = self.dynamic()?;
        let tag = |t: u64| tags.iter().find(|(k, _)| *k == t).map(|(_, v)| *v);

        let dynstr = self.dynstr(&tag)?;
        let soname = tag(dt::SONAME).map(|i| self.name(dynstr, i).unwrap_or_else(|| "<corrupt>".into()));

        let symbols_raw = self.dynsyms(&tag, dynstr)?;
        let (versions, verdef_names) = self.verdefs(&tag, dynstr)?;
        // Versions a non-vDSO needs (`GLIBC_2.3` of /bin/ls), so its undefined
        // symbols read as objdump prints them, in brackets; best effort, a
        // vDSO needs none.
        let needed_names = self.verneed_names(&tag, dynstr);
        let versym = self.versym_offset(&tag)?;

        let mut symbols = Vec::with_capacity(symbols_raw.len().saturating_sub(1));
        for (i, (sym, strtab)) in symbols_raw.iter().enumerate().skip(1) {
            symbols.push(self.symbol(i, sym, strtab, versym, &verdef_names, &needed_names));
        }

        let notes = self.notes();
        let mut wrong = versions.iter().filter(|v| !v.hash_ok());
        if let Some(v) = wrong.next() {
            let expected = elf_hash(v.name.as_bytes());
            let others = wrong.count();
            self.issues.push(Issue::VersionHash { name: v.name.clone(), hash: v.hash, expected, others });
        }
        if self.long_names.get() > 0 {
            self.issues.push(Issue::LongNames { count: self.long_names.get() });
        }
        Ok(Image {
            is_64: self.is_64,
            little_endian: self.le,
            machine: self.header.ident.machine,
            elf_type: self.header.elf_type,
            soname,
            size: total as u64,
            symbols,
            versions,
            notes,
            has_hash: tag(dt::HASH).is_some(),
            has_gnu_hash: tag(dt::GNU_HASH).is_some(),
            versioned: versym.is_some(),
            loads: loads(&self.phdrs),
            issues: self.issues,
        })
    }

    /// The dynamic string table: DT_STRTAB/DT_STRSZ, as the dynamic linker sees it.
    fn dynstr(&self, tag: &dyn Fn(u64) -> Option<u64>) -> Result<&'a [u8]> {
        let total = self.bytes.len();
        match (tag(dt::STRTAB), tag(dt::STRSZ)) {
            (Some(addr), Some(size)) => {
                let off = self
                    .vaddr_to_offset(addr)
                    .ok_or_else(|| bad(format!("DT_STRTAB {addr:#x} is not inside any PT_LOAD segment")))?;
                let r = span(total, off, size).ok_or_else(|| {
                    bad(format!(
                        "DT_STRTAB at offset {off:#x} with DT_STRSZ {size} runs past the end of the {total}-byte image"
                    ))
                })?;
                Ok(&self.bytes[r])
            }
            _ => Err(bad("the dynamic section has no DT_STRTAB/DT_STRSZ: there is no string table for symbol names")),
        }
    }

    /// One dynamic symbol as `objdump -T` shows it: its name, section and version.
    fn symbol(
        &self,
        i: usize,
        sym: &Sym,
        strtab: &[u8],
        versym: Option<u64>,
        verdef_names: &[(u16, String)],
        needed_names: &[(u16, String)],
    ) -> Symbol {
        let kind = sym.kind();
        let mut name = self.name(strtab, sym.name as u64).unwrap_or_else(|| "<corrupt>".into());
        let section = match sym.shndx {
            SHN_UNDEF => Some("*UND*".to_string()),
            SHN_ABS => Some("*ABS*".to_string()),
            SHN_COMMON => Some("*COM*".to_string()),
            n if n >= SHN_LORESERVE => None,
            n => self.section_name(n),
        };
        let version = versym.and_then(|base| self.u16_at(base.checked_add(2 * i as u64)?)).and_then(|raw| {
            let index = raw & !VERSYM_HIDDEN;
            let mut hidden = raw & VERSYM_HIDDEN != 0;
            let name = match index {
                0 => return None,
                1 => Some("Base".to_string()),
                n => verdef_names.iter().find(|(k, _)| *k == n).map(|(_, s)| s.clone()).or_else(|| {
                    let needed = needed_names.iter().find(|(k, _)| *k == n).map(|(_, s)| s.clone());
                    hidden |= needed.is_some();
                    needed
                }),
            };
            Some(SymVersion { index, name, hidden })
        });
        // objdump names a section symbol by its section.
        if kind == STT_SECTION && name.is_empty() && sym.shndx != SHN_UNDEF && sym.shndx < SHN_LORESERVE {
            if let Some(sec) = &section {
                name = sec.clone();
            }
        }
        // objdump (bfd's elf32-arm) clears the Thumb bit of a function.
        let thumb = self.header.ident.machine == EM_ARM
            && !self.is_64
            && matches!(kind, STT_FUNC | STT_GNU_IFUNC)
            && sym.value & 1 == 1;
        Symbol {
            name,
            value: if thumb { sym.value & !1 } else { sym.value },
            thumb,
            size: sym.size,
            kind,
            bind: sym.bind(),
            visibility: sym.other & 0x3,
            shndx: sym.shndx,
            section,
            version,
        }
    }

    /// The dynamic symbols with the string table each names. `.dynsym` (what
    /// objdump reads) when there are section headers, else DT_SYMTAB with the
    /// count from DT_HASH's nchain or the DT_GNU_HASH chains.
    pub(super) fn dynsyms(
        &mut self,
        tag: &dyn Fn(u64) -> Option<u64>,
        dynstr: &'a [u8],
    ) -> Result<Vec<(Sym, &'a [u8])>> {
        let total = self.bytes.len();
        let entsize: u64 = if self.is_64 { 24 } else { 16 };
        let (off, count, strtab) = if let Some(sh) = self.shdrs.iter().find(|s| s.kind == SHT_DYNSYM) {
            if sh.entsize != entsize {
                return Err(bad(format!("the .dynsym entry size is {}, not {entsize}", sh.entsize)));
            }
            let link = self.shdrs.get(sh.link as usize).filter(|l| l.kind == SHT_STRTAB).ok_or_else(|| {
                bad(format!(".dynsym's sh_link {} is not a string table: symbol names cannot be read", sh.link))
            })?;
            let strtab = self.section_bytes(link).unwrap_or(&[]);
            (sh.offset, sh.size / entsize, strtab)
        } else {
            let addr =
                tag(dt::SYMTAB).ok_or_else(|| bad("no .dynsym section and no DT_SYMTAB: there are no symbols"))?;
            let off = self
                .vaddr_to_offset(addr)
                .ok_or_else(|| bad(format!("DT_SYMTAB {addr:#x} is not inside any PT_LOAD segment")))?;
            let count = if let Some(h) = tag(dt::HASH) {
                let h = self.vaddr_to_offset(h).ok_or_else(|| bad("DT_HASH is not inside any PT_LOAD segment"))?;
                u64::from(self.u32_at(h + 4).ok_or_else(|| bad("DT_HASH runs past the end of the image"))?)
            } else if let Some(g) = tag(dt::GNU_HASH) {
                let g = self.vaddr_to_offset(g).ok_or_else(|| bad("DT_GNU_HASH is not inside any PT_LOAD segment"))?;
                self.gnu_hash_count(g).ok_or_else(|| bad("DT_GNU_HASH runs past the end of the image"))?
            } else {
                return Err(bad("no .dynsym section and no hash table: the number of symbols is unknown"));
            };
            (off, count, dynstr)
        };
        let len = count.saturating_mul(entsize);
        if count > caps::SYMBOLS {
            self.issues.push(Issue::Capped { table: "dynamic symbols", claimed: count, kept: caps::SYMBOLS });
        }
        let count = count.min(caps::SYMBOLS);
        if span(total, off, len).is_none() {
            return Err(bad(format!(
                "the dynamic symbol table ({count} entries at offset {off:#x}) runs past the end of the {total}-byte image"
            )));
        }
        let table = span(total, off, count * entsize).map_or(&[][..], |r| &self.bytes[r]);
        let syms = symbols_in(table, self.header.ident);
        Ok(syms.into_iter().map(|s| (s, strtab)).collect())
    }

    /// Number of symbols a GNU hash table covers: symoffset plus the longest
    /// chain walk, every read bounds-checked.
    pub(super) fn gnu_hash_count(&self, off: u64) -> Option<u64> {
        let nbuckets = u64::from(self.u32_at(off)?);
        let symoffset = u64::from(self.u32_at(off + 4)?);
        let bloom = u64::from(self.u32_at(off + 8)?);
        let word = if self.is_64 { 8 } else { 4 };
        let buckets = off.checked_add(16)?.checked_add(bloom.checked_mul(word)?)?;
        span(self.bytes.len(), buckets, nbuckets.checked_mul(4)?)?;
        let mut max = 0u64;
        for b in 0..nbuckets {
            max = max.max(u64::from(self.u32_at(buckets + 4 * b)?));
        }
        if max < symoffset {
            return Some(symoffset);
        }
        let chains = buckets + 4 * nbuckets;
        let mut idx = max;
        loop {
            let hash = self.u32_at(chains.checked_add(idx.checked_sub(symoffset)?.checked_mul(4)?)?)?;
            if hash & 1 != 0 {
                return Some(idx + 1);
            }
            idx += 1;
        }
    }

    /// File offset of the `.gnu.version` table, if there is one.
    pub(super) fn versym_offset(&self, tag: &dyn Fn(u64) -> Option<u64>) -> Result<Option<u64>> {
        if let Some(sh) = self.shdrs.iter().find(|s| s.kind == SHT_GNU_VERSYM) {
            return Ok(Some(sh.offset));
        }
        match tag(dt::VERSYM) {
            None => Ok(None),
            Some(addr) => self
                .vaddr_to_offset(addr)
                .map(Some)
                .ok_or_else(|| bad(format!("DT_VERSYM {addr:#x} is not inside any PT_LOAD segment"))),
        }
    }

    /// A version section of type `sh_type`: its start, end, entry count
    /// (sh_info) and the string table it links (else `dynstr`).
    pub(super) fn version_section(&self, sh_type: u32, dynstr: &'a [u8]) -> Option<(u64, u64, u64, &'a [u8])> {
        let sh = self.shdrs.iter().find(|s| s.kind == sh_type)?;
        let strtab = self
            .shdrs
            .get(sh.link as usize)
            .filter(|l| l.kind == SHT_STRTAB)
            .and_then(|l| self.section_bytes(l))
            .unwrap_or(dynstr);
        Some((sh.offset, sh.offset.saturating_add(sh.size), u64::from(sh.info), strtab))
    }

    /// (index, name) of every `.gnu.version_r` auxiliary entry, read as far
    /// as it goes (at most [`caps::VERSIONS`] of them, no loop followed twice).
    pub(super) fn verneed_names(&self, tag: &dyn Fn(u64) -> Option<u64>, dynstr: &'a [u8]) -> Vec<(u16, String)> {
        let total = self.bytes.len() as u64;
        let (start, end, count, strtab) = if let Some(found) = self.version_section(SHT_GNU_VERNEED, dynstr) {
            found
        } else if let Some(off) = tag(dt::VERNEED).and_then(|a| self.vaddr_to_offset(a)) {
            (off, total, tag(dt::VERNEEDNUM).unwrap_or(0), dynstr)
        } else {
            return Vec::new();
        };
        let mut names = Vec::new();
        let mut seen = HashSet::new();
        let mut off = start;
        for _ in 0..count.min(caps::VERSIONS) {
            if !seen.insert(off) || off < start || !fits(off, 16, end) {
                break;
            }
            let (Some(cnt), Some(aux), Some(next)) =
                (self.u16_at(off + 2), self.u32_at(off + 8), self.u32_at(off + 12))
            else {
                break;
            };
            let mut a = off.wrapping_add(u64::from(aux)) & 0xffff_ffff;
            for _ in 0..cnt {
                if names.len() as u64 >= caps::VERSIONS || !seen.insert(a) || a < start || !fits(a, 16, end) {
                    break;
                }
                let (Some(other), Some(name), Some(anext)) =
                    (self.u16_at(a + 6), self.u32_at(a + 8), self.u32_at(a + 12))
                else {
                    break;
                };
                names.push((
                    other & !VERSYM_HIDDEN,
                    self.name(strtab, u64::from(name)).unwrap_or_else(|| "<corrupt>".into()),
                ));
                if anext == 0 {
                    break;
                }
                a = (a + u64::from(anext)) & 0xffff_ffff;
            }
            if next == 0 {
                break;
            }
            off = (off + u64::from(next)) & 0xffff_ffff;
        }
        names
    }

    /// Walk `.gnu.version_d`. Returns the definitions and (index, name) pairs.
    /// The chain is followed as a 32-bit consumer would (offsets wrap at
    /// 2^32), so a `vd_next` that points back is a loop, reported as one.
    #[allow(clippy::type_complexity)]
    pub(super) fn verdefs(
        &mut self,
        tag: &dyn Fn(u64) -> Option<u64>,
        dynstr: &'a [u8],
    ) -> Result<(Vec<VersionDef>, Vec<(u16, String)>)> {
        let total = self.bytes.len() as u64;
        let (start, end, count, strtab) = if let Some(found) = self.version_section(SHT_GNU_VERDEF, dynstr) {
            found
        } else if let Some(addr) = tag(dt::VERDEF) {
            let off = self
                .vaddr_to_offset(addr)
                .ok_or_else(|| bad(format!("DT_VERDEF {addr:#x} is not inside any PT_LOAD segment")))?;
            (off, total, tag(dt::VERDEFNUM).unwrap_or(0), dynstr)
        } else {
            return Ok((Vec::new(), Vec::new()));
        };
        let mut defs = Vec::new();
        let mut names = Vec::new();
        let mut seen = HashSet::new();
        let mut off = start;
        if count > caps::VERSIONS {
            self.issues.push(Issue::Capped { table: "version definitions", claimed: count, kept: caps::VERSIONS });
        }
        for n in 0..count.min(caps::VERSIONS) {
            if !seen.insert(off) {
                return Err(bad(format!(
                    "the version definition chain loops: entry {n} points back to offset {off:#x} — a 32-bit dynamic linker would never finish walking it"
                )));
            }
            if off < start || !fits(off, VERDEF_SIZE, end) {
                return Err(bad(format!(
                    "version definition {n} at offset {off:#x} runs past the end of its section (DT_VERDEFNUM/sh_info says {count})"
                )));
            }
            let (flags, index, cnt, hash, aux, next) = (
                self.u16_at(off + 2),
                self.u16_at(off + 4),
                self.u16_at(off + 6),
                self.u32_at(off + 8),
                self.u32_at(off + 12),
                self.u32_at(off + 16),
            );
            let (Some(flags), Some(index), Some(cnt), Some(hash), Some(aux), Some(next)) =
                (flags, index, cnt, hash, aux, next)
            else {
                return Err(bad(format!("version definition {n} at offset {off:#x} is truncated")));
            };
            let mut aux_names = Vec::new();
            let mut aux_off = off.wrapping_add(u64::from(aux)) & 0xffff_ffff;
            let mut aux_seen = HashSet::new();
            for _ in 0..u64::from(cnt).min(caps::PARENTS + 1) {
                if !aux_seen.insert(aux_off) {
                    return Err(bad(format!("the auxiliary chain of version definition {n} loops at {aux_off:#x}")));
                }
                if aux_off < start || !fits(aux_off, VERDAUX_SIZE, end) {
                    return Err(bad(format!(
                        "version definition {n}'s auxiliary entry at {aux_off:#x} lies outside its section"
                    )));
                }
                let (Some(name), Some(aux_next)) = (self.u32_at(aux_off), self.u32_at(aux_off + 4)) else {
                    return Err(bad(format!("version auxiliary entry at {aux_off:#x} is truncated")));
                };
                aux_names.push(cstr(strtab, u64::from(name), &self.long_names).unwrap_or_else(|| "<corrupt>".into()));
                if aux_next == 0 {
                    break;
                }
                aux_off = (aux_off + u64::from(aux_next)) & 0xffff_ffff;
            }
            let mut aux_names = aux_names.into_iter();
            let name = aux_names.next().unwrap_or_else(|| "<corrupt>".into());
            names.push((index, name.clone()));
            defs.push(VersionDef { index, flags, name, hash, parents: aux_names.collect() });
            if next == 0 {
                break;
            }
            off = (off + u64::from(next)) & 0xffff_ffff;
        }
        Ok((defs, names))
    }

    /// Notes from SHT_NOTE sections (what readelf -n shows), else PT_NOTE
    /// segments. Decoded as far as they go: a bad note ends its area with
    /// an [`Issue`], the notes before it are kept.
    pub(super) fn notes(&mut self) -> Vec<Note> {
        let mut regions: Vec<(u64, u64, u64)> =
            self.shdrs.iter().filter(|s| s.kind == SHT_NOTE).map(|s| (s.offset, s.size, s.align)).collect();
        if regions.is_empty() {
            regions = self
                .phdrs
                .iter()
                .filter(|p| p.kind == SegmentKind::Note)
                .map(|p| (p.offset, p.filesz, p.align))
                .collect();
        }
        let mut notes = Vec::new();
        for (off, size, align) in regions {
            // Both tables were bounds-checked in `new`.
            let Some(region) = span(self.bytes.len(), off, size).and_then(|r| self.bytes.get(r)) else {
                continue;
            };
            // readelf: below 4 reads as 4; 4 and 8 are the only others it takes.
            let align = match align {
                0..=4 => 4,
                8 => 8,
                other => {
                    self.issues.push(Issue::NoteAlignment { offset: off, align: other });
                    4
                }
            };
            self.parse_notes(region, off, align, &mut notes);
        }
        notes
    }

    pub(super) fn parse_notes(&mut self, region: &[u8], base: u64, align: u64, notes: &mut Vec<Note>) {
        let len = region.len() as u64;
        let le = self.le;
        let read = |at: u64| -> Option<u32> {
            let b: [u8; 4] =
                region.get(usize::try_from(at).ok()?..usize::try_from(at.checked_add(4)?).ok()?)?.try_into().ok()?;
            Some(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
        };
        let up = |v: u64| v.checked_add(align - 1).map(|x| x & !(align - 1));
        let mut at = 0u64;
        while at < len {
            if notes.len() >= caps::NOTES {
                // Count the rest (headers only, nothing kept) to say how many there are.
                let mut more = 0u64;
                while at < len {
                    let (Some(namesz), Some(descsz)) = (read(at), read(at + 4)) else { break };
                    let next = up(at + 12 + u64::from(namesz))
                        .and_then(|d| d.checked_add(u64::from(descsz)))
                        .and_then(up)
                        .filter(|&n| n <= len);
                    let Some(next) = next else { break };
                    more += 1;
                    at = next;
                }
                let kept = caps::NOTES as u64;
                self.issues.push(Issue::Capped { table: "notes", claimed: kept + more, kept });
                return;
            }
            let (Some(namesz), Some(descsz), Some(n_type)) = (read(at), read(at + 4), read(at + 8)) else {
                self.issues.push(Issue::NoteTruncated { offset: base + at, namesz: 0, descsz: 0 });
                return;
            };
            let name_at = at + 12;
            let desc_at = up(name_at + u64::from(namesz));
            let next = desc_at.and_then(|d| d.checked_add(u64::from(descsz))).and_then(up);
            // readelf's test: the padded note must fit in what is left of the area.
            let (Some(desc_at), Some(next)) = (desc_at, next) else {
                self.issues.push(Issue::NoteTruncated { offset: base + at, namesz, descsz });
                return;
            };
            if next > len {
                self.issues.push(Issue::NoteTruncated { offset: base + at, namesz, descsz });
                return;
            }
            let name = region.get(name_at as usize..(name_at + u64::from(namesz)) as usize).unwrap_or(&[]);
            let desc_len = u64::from(descsz).min(caps::NOTE_DESC as u64);
            if desc_len < u64::from(descsz) {
                self.issues.push(Issue::NoteCut { offset: base + at, size: u64::from(descsz) });
            }
            let desc = region.get(desc_at as usize..(desc_at + desc_len) as usize).unwrap_or(&[]).to_vec();
            let owner = name.split(|&b| b == 0).next().unwrap_or(&[]);
            let owner = String::from_utf8_lossy(&owner[..owner.len().min(caps::NAME)]).into_owned();
            let (type_name, description) = if desc_len == u64::from(descsz) {
                names::decode_note(&owner, n_type, &desc, le, self.header.ident.machine, self.is_64)
            } else {
                (None, None)
            };
            notes.push(Note { owner, n_type, desc, size: u64::from(descsz), type_name, description });
            at = next;
        }
    }
}
