//! The runtimes a program carries beside its C library (rustix, the
//! getrandom crate, Zig std, OpenSSL, libuv, CPython, .NET), read from
//! what each leaves in the file ([`crate::arch::SIGNATURES`]): a Rust
//! crate's directory in the panic locations rustc embeds
//! (`getrandom-0.3.4/src/…`: crate and release, as Cargo puts no release
//! in symbols), legacy-mangled symbols (`_ZN6rustix…`: the crate without
//! its release), an exported function (`uv_random`), the libraries it
//! needs or is (`libcrypto.so.3`), a banner (`OpenSSL 3.0.19`).

use super::{pread, ExeInfo, CHUNK, SCAN_LIMIT};
use crate::arch::{Runtime, Signature, SIGNATURES};
use crate::error::Result;
use crate::inspect::elf::read::Headers;
use serde::Serialize;
use std::fs::File;

/// A runtime found in a binary, with its release where the file says it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Carried {
    pub runtime: Runtime,
    /// `0.3.4`, `3` (a library's soname), `3.0.19` (a banner).
    pub version: Option<String>,
    /// The file names it by its symbols (a string table has them).
    pub symbols: bool,
    /// Of its rows' [`crate::arch::PathRow::linked`] symbols, those found.
    pub linked: Vec<&'static str>,
}

impl Carried {
    /// A runtime found with `version`, by no symbol.
    pub fn new(runtime: Runtime, version: Option<&str>) -> Carried {
        Carried { runtime, version: version.map(str::to_string), symbols: false, linked: Vec::new() }
    }

    /// Whether `row`'s entry is in the file: said by its `linked` symbol
    /// where the file has the runtime's symbols, else taken to be.
    pub fn links(&self, row: &crate::arch::PathRow) -> bool {
        match row.linked {
            Some(m) if self.symbols => self.linked.contains(&m.text()),
            _ => true,
        }
    }
}

impl Carried {
    /// Its (major, minor) release; a lone major (`3`) is (3, 0).
    pub fn release(&self) -> Option<(u32, u32)> {
        release(self.version.as_deref()?)
    }
}

/// `0.3.4` → (0, 3); `3` → (3, 0); `3.11` → (3, 11).
pub fn release(v: &str) -> Option<(u32, u32)> {
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| {
        let digits: String = m.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })?;
    Some((major, minor))
}

/// `1.2.3` at the start of `b` followed by `end` (`/src/`): the release.
fn release_at(b: &[u8], end: &[u8]) -> Option<String> {
    let len = b.iter().position(|c| !(c.is_ascii_digit() || *c == b'.'))?;
    let v = std::str::from_utf8(&b[..len]).ok()?;
    let parts: Vec<&str> = v.split('.').collect();
    let ok = parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.len() <= 5);
    (ok && b[len..].starts_with(end)).then(|| v.to_string())
}

/// A banner's release (`3.0.19` after `OpenSSL `): digits and dots.
fn banner_release(b: &[u8]) -> Option<String> {
    let len = b.iter().position(|c| !(c.is_ascii_digit() || *c == b'.')).unwrap_or(b.len().min(16));
    let v = std::str::from_utf8(&b[..len]).ok()?.trim_end_matches('.');
    (v.contains('.') && v.starts_with(|c: char| c.is_ascii_digit())).then(|| v.to_string())
}

/// What one signature found so far.
#[derive(Default)]
struct Found {
    named: bool,
    symbols: bool,
    versions: Vec<String>,
    /// The release lines its symbols say (`Signature::lines`).
    lines: Vec<String>,
    linked: Vec<&'static str>,
}

/// The names of `sig`'s runtime in a symbol string table `buf`, and its
/// rows' `linked` symbols.
fn symbol_names(buf: &[u8], sig: &Signature, f: &mut Found) {
    if sig.markers.iter().any(|m| has_marker(buf, *m)) {
        f.named = true;
        f.symbols = true;
    }
    for (m, line) in sig.lines {
        if has_marker(buf, *m) {
            push(&mut f.lines, line.to_string());
        }
    }
    let rows = crate::arch::PATHS.iter().filter(|r| r.runtime == sig.runtime);
    for m in rows.filter_map(|r| r.linked) {
        if !f.linked.contains(&m.text()) && has_marker(buf, m) {
            f.linked.push(m.text());
        }
    }
}

/// Whether `m` is in `buf` as a string table holds a name.
fn has_marker(buf: &[u8], m: crate::arch::Marker) -> bool {
    let text = m.text().as_bytes();
    memchr::memmem::find_iter(buf, text).any(|i| m.delimited(buf, i, text.len()))
}

/// The sections the names and strings are in: the symbol string tables
/// (`.dynstr`, `.strtab`) and `.rodata` (panic locations, banners) —
/// never the debug info, most of a debug build; a file without readable
/// section headers, whole (its first [`SCAN_LIMIT`] bytes).
fn regions(h: &Headers) -> Vec<(u64, u64, bool, bool)> {
    if h.sections.is_empty() {
        return vec![(0, SCAN_LIMIT, true, true)];
    }
    h.sections
        .iter()
        .filter(|s| s.has_bytes())
        .filter_map(|s| match s.name.as_str() {
            ".dynstr" | ".strtab" => Some((s.offset, s.size.min(SCAN_LIMIT), true, false)),
            ".rodata" => Some((s.offset, s.size.min(SCAN_LIMIT), false, true)),
            _ => None,
        })
        .collect()
}

/// The runtimes `file` (described by `h` and `info`) carries, one per
/// release found (two getrandom releases in one program are two), sorted.
pub fn scan_carried(file: &File, h: &Headers, info: &ExeInfo) -> Result<Vec<Carried>> {
    let mut found: Vec<Found> = SIGNATURES.iter().map(|_| Found::default()).collect();
    for (sig, f) in SIGNATURES.iter().zip(found.iter_mut()) {
        libraries(sig, info, f);
    }
    let dirs: Vec<Option<Vec<u8>>> =
        SIGNATURES.iter().map(|s| s.crate_dir.map(|d| format!("/{d}").into_bytes())).collect();
    let overlap = 128u64;
    let chunks = regions(h).into_iter().flat_map(|(start, len, names, strings)| {
        let step = CHUNK as u64 - overlap;
        (0..len.div_ceil(step).max(1))
            .map(move |i| (start + i * step, (len - i * step).min(CHUNK as u64), names, strings))
    });
    for (offset, len, names, strings) in chunks {
        let buf = pread(file, offset, len as usize)?;
        for ((sig, f), dir) in SIGNATURES.iter().zip(found.iter_mut()).zip(&dirs) {
            if names {
                symbol_names(&buf, sig, f);
            }
            if !strings {
                continue;
            }
            if let Some(dir) = dir {
                for i in memchr::memmem::find_iter(&buf, dir) {
                    if let Some(v) = release_at(&buf[i + dir.len()..], b"/src/") {
                        push(&mut f.versions, v);
                    }
                }
            }
            if let Some(banner) = sig.banner {
                for i in memchr::memmem::find_iter(&buf, banner.as_bytes()).take(16) {
                    if let Some(v) = banner_release(&buf[i + banner.len()..]) {
                        push(&mut f.versions, v);
                        f.named = true;
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for (sig, mut f) in SIGNATURES.iter().zip(found) {
        f.linked.sort();
        let one = |version: Option<String>| Carried {
            runtime: sig.runtime,
            version,
            symbols: f.symbols,
            linked: f.linked.clone(),
        };
        if f.versions.is_empty() {
            f.versions = std::mem::take(&mut f.lines);
        }
        if f.versions.is_empty() {
            if f.named {
                out.push(one(None));
            }
            continue;
        }
        out.extend(f.versions.iter().cloned().map(|v| one(Some(v))));
    }
    out.sort();
    out.dedup();
    Ok(drop_shadowed(out))
}

/// A release from a library's soname (`3`) beside a finer one from the
/// file (`3.0.19`) of the same major: the finer one alone.
fn drop_shadowed(list: Vec<Carried>) -> Vec<Carried> {
    let finer = |c: &Carried| {
        list.iter().any(|o| {
            o.runtime == c.runtime
                && o.version.as_deref().zip(c.version.as_deref()).is_some_and(|(o, c)| {
                    o.len() > c.len() && o.starts_with(c) && o.as_bytes().get(c.len()) == Some(&b'.')
                })
        })
    };
    list.iter().filter(|c| !finer(c)).cloned().collect()
}

fn push(versions: &mut Vec<String>, v: String) {
    if !versions.contains(&v) {
        versions.push(v);
    }
}

/// The libraries it needs or is that name `sig`'s runtime.
fn libraries(sig: &Signature, info: &ExeInfo, f: &mut Found) {
    let names = info.needed.iter().map(String::as_str).chain(info.soname.as_deref());
    for name in names {
        for prefix in sig.libraries {
            let Some(rest) = name.strip_prefix(prefix) else { continue };
            f.named = true;
            // `libpython3.11.so.1.0` → 3.11; `libcrypto.so.3` → 3.
            let v: String =
                rest.trim_start_matches(".so.").chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            let v = v.trim_end_matches('.');
            if release(v).is_some() {
                push(&mut f.versions, v.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_read_as_the_file_says_them() {
        assert_eq!(release("0.3.4"), Some((0, 3)));
        assert_eq!(release("3"), Some((3, 0)));
        assert_eq!(release("3.11"), Some((3, 11)));
        assert_eq!(release("x"), None);
        assert_eq!(release_at(b"0.2.15/src/lib.rs", b"/src/"), Some("0.2.15".into()));
        assert_eq!(release_at(b"0.2.15/benches", b"/src/"), None);
        assert_eq!(release_at(b"1.2/src/", b"/src/"), None);
        assert_eq!(banner_release(b"3.0.19 27 Jan 2026"), Some("3.0.19".into()));
        assert_eq!(banner_release(b"SSL_CTX"), None);
    }

    #[test]
    fn a_soname_release_gives_way_to_the_banner() {
        let c = |v: &str| Carried::new(Runtime::Openssl, Some(v));
        assert_eq!(drop_shadowed(vec![c("3"), c("3.0.19")]), [c("3.0.19")]);
        assert_eq!(drop_shadowed(vec![c("3"), c("30.1")]), [c("3"), c("30.1")]);
    }

    /// This test binary carries rustix and two getrandom releases
    /// (tempfile's 0.4, ahash's 0.3: `cargo tree -i getrandom`), each named
    /// with its release by a panic location.
    #[test]
    fn this_test_binary_carries_rustix_and_getrandom() {
        // What the binary carries is the build host's (an aarch64 static
        // build links no rustix path: seen in the kernel matrix), and the
        // check reads Cargo.lock: the matrix's guests have no checkout.
        if !std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).is_file() {
            return eprintln!("SKIP: needs the checkout (runs on the build host)");
        }
        let exe = std::env::current_exe().unwrap();
        let info = super::super::read_path(&exe).unwrap();
        let rustix: Vec<_> = info.carried.iter().filter(|c| c.runtime == Runtime::Rustix).collect();
        assert!(!rustix.is_empty(), "{:?}", info.carried);
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).unwrap();
        for c in &rustix {
            if let Some(v) = &c.version {
                assert!(lock.contains(&format!("name = \"rustix\"\nversion = \"{v}\"")), "{v} not in Cargo.lock");
            }
        }
        let getrandom: Vec<_> = info.carried.iter().filter(|c| c.runtime == Runtime::GetrandomCrate).collect();
        assert!(!getrandom.is_empty(), "{:?}", info.carried);
    }
}
