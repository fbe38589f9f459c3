//! A layer's tar stream as it passes to the tar reader, its headers
//! looked at on the way: a GNU long name or link (`L`, `K`) or a PAX
//! extension (`x`, `g`) larger than [`MAX_EXTENSION`] ends the layer
//! before the tar reader would hold it whole (a gzip bomb can claim a
//! name of gigabytes in a few kilobytes).

use std::io::{self, Read};

/// The largest name or extension header read (PATH_MAX is 4 KiB; PAX
/// records of a real layer are a few hundred bytes).
pub const MAX_EXTENSION: u64 = 1 << 20;

pub(super) struct Framed<R> {
    inner: R,
    /// Bytes passed so far.
    pos: u64,
    /// Where the next 512-byte header block starts.
    next: u64,
    /// A PAX extension being passed: its bytes, for a `size=` record.
    pax: Option<Vec<u8>>,
    pax_end: u64,
    /// The size a PAX `size=` record gives the next entry.
    pax_size: Option<u64>,
    /// GNU sparse extension blocks follow, then `pending_data` bytes.
    sparse_ext: bool,
    pending_data: u64,
    /// A header block read, not all given yet: (block, given, length).
    hold: Option<([u8; 512], usize, usize)>,
}

impl<R: Read> Framed<R> {
    pub(super) fn new(inner: R) -> Framed<R> {
        Framed {
            inner,
            pos: 0,
            next: 0,
            pax: None,
            pax_end: 0,
            pax_size: None,
            sparse_ext: false,
            pending_data: 0,
            hold: None,
        }
    }

    /// A header block read whole: where the next one is, or an error for
    /// an extension too large to hold.
    fn header(&mut self, h: &[u8; 512]) -> io::Result<()> {
        let after = self.pos + 512;
        if let Some(records) = self.pax.take() {
            self.pax_size = pax_size(&records);
        }
        if self.sparse_ext {
            self.sparse_ext = h[504] != 0;
            self.next = if self.sparse_ext { after } else { after + self.pending_data };
            return Ok(());
        }
        if h.iter().all(|&b| b == 0) {
            self.next = after;
            return Ok(());
        }
        let typ = h[156];
        let mut size = octal_or_binary(&h[124..136]);
        if !matches!(typ, b'x' | b'g' | b'L' | b'K') {
            if let Some(s) = self.pax_size.take() {
                size = s;
            }
        }
        if matches!(typ, b'x' | b'g' | b'L' | b'K') && size > MAX_EXTENSION {
            let what = if matches!(typ, b'L' | b'K') { "a long name" } else { "a PAX extension" };
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{what} of {size} bytes, past the {} MiB bound: not read", MAX_EXTENSION >> 20),
            ));
        }
        let padded = size.div_ceil(512) * 512;
        if typ == b'x' {
            self.pax = Some(Vec::new());
            self.pax_end = after + size;
        }
        if typ == b'S' && h[482] != 0 {
            // Extension blocks come first, the data after them.
            self.sparse_ext = true;
            self.pending_data = padded;
            self.next = after;
            return Ok(());
        }
        self.next = after + padded;
        Ok(())
    }
}

impl<R: Read> Read for Framed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.hold.is_none() && self.pos == self.next {
            let mut h = [0u8; 512];
            let mut got = 0;
            while got < 512 {
                match self.inner.read(&mut h[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if got < 512 {
                // A short end: given as it is (the tar reader says what is wrong).
                self.next = u64::MAX;
            } else {
                self.header(&h)?;
            }
            self.hold = Some((h, 0, got));
        }
        if let Some((h, given, len)) = self.hold.as_mut() {
            let n = (*len - *given).min(buf.len());
            buf[..n].copy_from_slice(&h[*given..*given + n]);
            *given += n;
            if *given == *len {
                self.hold = None;
            }
            self.pos += n as u64;
            return Ok(n);
        }
        let want = buf.len().min(usize::try_from(self.next - self.pos).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if let Some(records) = self.pax.as_mut() {
            let keep = usize::try_from(self.pax_end.saturating_sub(self.pos)).unwrap_or(usize::MAX).min(n);
            records.extend_from_slice(&buf[..keep]);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// A tar number field: octal text, or base-256 when its first byte has
/// the high bit (GNU, past 8 GiB).
fn octal_or_binary(field: &[u8]) -> u64 {
    if field[0] & 0x80 != 0 {
        return field[1..].iter().fold(0u64, |v, &b| v.saturating_mul(256).saturating_add(u64::from(b)));
    }
    let text = field.iter().skip_while(|&&b| b == b' ').take_while(|&&b| (b'0'..=b'7').contains(&b));
    text.fold(0u64, |v, &b| v.saturating_mul(8).saturating_add(u64::from(b - b'0')))
}

/// The `size=` of PAX records (`LEN size=N\n`), where one is.
fn pax_size(records: &[u8]) -> Option<u64> {
    records.split(|&b| b == b'\n').find_map(|r| {
        let (_, kv) = r.split_at(r.iter().position(|&b| b == b' ')? + 1);
        std::str::from_utf8(kv.strip_prefix(b"size=")?).ok()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream read through the frame is the stream; an entry whose
    /// number is base-256, a PAX size and sparse extension blocks keep it
    /// in step; a long name past the bound ends it.
    #[test]
    fn passes_a_tar_unchanged_and_refuses_a_huge_long_name() {
        let mut b = tar::Builder::new(Vec::new());
        let long = format!("{}/f", "d".repeat(300));
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        b.append_data(&mut h, &long, &b"hello"[..]).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_size(3);
        b.append_data(&mut h, "short", &b"abc"[..]).unwrap();
        let mut pax = tar::Builder::new(Vec::new());
        pax.append_pax_extensions([("path", &b"p/with/pax"[..])]).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_size(2);
        pax.append_data(&mut h, "x", &b"hi"[..]).unwrap();
        let mut raw = b.into_inner().unwrap();
        raw.truncate(raw.len() - 1024);
        raw.extend(pax.into_inner().unwrap());
        let mut through = Vec::new();
        Framed::new(&raw[..]).read_to_end(&mut through).unwrap();
        assert_eq!(through, raw);
        let mut a = tar::Archive::new(Framed::new(&raw[..]));
        let names: Vec<String> =
            a.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect();
        assert_eq!(names, [long.as_str(), "short", "p/with/pax"]);
        // A long name of 2 MiB: refused at its header.
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"././@LongLink");
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_size(2 << 20);
        h.set_cksum();
        let mut huge = h.as_bytes().to_vec();
        huge.resize(512 + (2 << 20), b'a');
        let e = Framed::new(&huge[..]).read_to_end(&mut Vec::new()).unwrap_err();
        assert!(e.to_string().starts_with("a long name of 2097152 bytes, past the 1 MiB bound"), "{e}");
        assert_eq!(octal_or_binary(b"00000000012\0"), 10);
        assert_eq!(octal_or_binary(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0]), 512);
        assert_eq!(pax_size(b"20 size=123456789\n"), Some(123_456_789));
    }
}
