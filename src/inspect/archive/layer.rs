//! One layer (a tar stream) applied to the private directory, with its
//! whiteouts; only directories and ELF files are written there.

use super::cleanup::checkpoint;
use super::{MAX_MEMBER, MAX_WRITTEN};
use crate::inspect::image::{Capped, MAX_FILES};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The private directory as the layers so far made it.
pub(super) struct State {
    root: PathBuf,
    /// (image path or layer, why): entries refused or not read.
    pub(super) refused: Capped<(PathBuf, String)>,
    written: u64,
    entries: usize,
    /// Names this layer wrote on disk (directories and ELF files, never
    /// the other members, so a layer of a million small files holds
    /// none): its own opaque whiteout spares them.
    this_layer: HashSet<Vec<u8>>,
}

/// Takes what an entry's name asks for, once its name is clean.
enum Name {
    Clean(Vec<u8>),
    Refused(String),
}

/// The longest name of one directory entry (Linux's NAME_MAX).
const NAME_MAX: usize = 255;

/// A member's name as the bytes it is (never made UTF-8: `bin/\xff` and
/// `bin/\xfe` stay two files), cleaned of `.` and empty parts.
fn name_of(raw: &[u8]) -> Name {
    if raw.starts_with(b"/") {
        return Name::Refused("an absolute name: refused, nothing written".into());
    }
    let mut parts: Vec<&[u8]> = Vec::new();
    for p in raw.split(|&b| b == b'/') {
        match p {
            b"" | b"." => {}
            b".." => {
                return Name::Refused("a name with `..` (it would leave the image): refused, nothing written".into())
            }
            p if p.len() > NAME_MAX => {
                return Name::Refused(format!(
                "a name with a part of {} bytes, past the {NAME_MAX} any filesystem holds: refused, nothing written",
                p.len()
            ))
            }
            p => parts.push(p),
        }
    }
    Name::Clean(parts.join(&b'/'))
}

/// A name as listed: whole up to PATH_MAX, cut there past it (a tar may
/// name a member with megabytes; no file has such a path).
fn shown(name: &[u8]) -> &[u8] {
    &name[..name.len().min(libc::PATH_MAX as usize)]
}

/// Bytes as a path (lossless).
fn path(name: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(name))
}

/// `dir/base` of a clean name (`""` for a top-level name's dir).
fn split(name: &[u8]) -> (&[u8], &[u8]) {
    match name.iter().rposition(|&b| b == b'/') {
        Some(i) => (&name[..i], &name[i + 1..]),
        None => (b"", name),
    }
}

impl State {
    pub(super) fn new(root: &Path) -> State {
        State {
            root: root.to_path_buf(),
            refused: Capped::default(),
            written: 0,
            entries: 0,
            this_layer: HashSet::new(),
        }
    }

    fn refuse(&mut self, name: &[u8], what: &str, why: impl std::fmt::Display) {
        self.refused.push((Path::new("/").join(path(shown(name))), format!("{why} (in {what})")));
    }

    /// Apply one layer blob. A layer that is not a tar (or stops being
    /// one) is listed; what came before it stays applied.
    pub(super) fn apply(&mut self, what: &str, raw: Box<dyn Read>) {
        self.this_layer.clear();
        let stream = match super::decompressed(raw) {
            Ok(s) => s,
            Err(e) => return self.refused.push((PathBuf::from(what), format!("not read: {e}"))),
        };
        let mut archive = tar::Archive::new(super::framed::Framed::new(stream));
        let entries = match archive.entries() {
            Ok(e) => e,
            Err(e) => return self.refused.push((PathBuf::from(what), format!("not a tar: {e}"))),
        };
        for (seen, entry) in entries.enumerate() {
            checkpoint();
            let mut entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let why =
                        if seen == 0 { format!("not a tar: {e}") } else { format!("not a tar past entry {seen}: {e}") };
                    return self.refused.push((PathBuf::from(what), why));
                }
            };
            self.entries += 1;
            if self.entries > MAX_FILES {
                let why = format!("not read past {MAX_FILES} entries in all (the walk's bound)");
                return self.refused.push((PathBuf::from(what), why));
            }
            let name = match name_of(&entry.path_bytes()) {
                Name::Clean(n) if n.is_empty() => continue,
                Name::Clean(n) => n,
                Name::Refused(why) => {
                    let shown = PathBuf::from(OsStr::from_bytes(shown(&entry.path_bytes())));
                    self.refused.push((shown, format!("{why} (in {what})")));
                    continue;
                }
            };
            self.entry(what, &name, &mut entry);
        }
    }

    fn entry<R: Read>(&mut self, what: &str, name: &[u8], entry: &mut tar::Entry<'_, R>) {
        let (dir, base) = split(name);
        if let Some(hidden) = base.strip_prefix(b".wh.") {
            return self.whiteout(dir, hidden);
        }
        let at = self.root.join(path(name));
        let kind = entry.header().entry_type();
        let is_dir = kind.is_dir();
        self.remove(&at, is_dir);
        if is_dir {
            // Directories are made only on the way to an ELF file written
            // (a layer of a million directories makes none); one a lower
            // layer made is this layer's too, for its opaque whiteout.
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
                self.this_layer.insert(name.to_vec());
            }
        } else if kind.is_hard_link() {
            self.hard_link(what, name, &at, entry);
        } else if kind.is_file() || kind.is_gnu_sparse() {
            self.file(what, name, &at, entry);
        }
        // Symlinks, devices, FIFOs: nothing is written (never a link).
    }

    /// `.wh..wh..opq` hides what lower layers put in `dir`; `.wh.NAME`
    /// hides `dir/NAME`.
    fn whiteout(&mut self, dir: &[u8], hidden: &[u8]) {
        let at = self.root.join(path(dir));
        if hidden == b".wh..opq" {
            let Ok(list) = std::fs::read_dir(&at) else { return };
            for e in list.flatten() {
                let child = if dir.is_empty() {
                    e.file_name().as_bytes().to_vec()
                } else {
                    [dir, b"/", e.file_name().as_bytes()].concat()
                };
                if !self.this_layer.contains(&child) {
                    self.remove(&e.path(), false);
                }
            }
        } else if !hidden.is_empty() && hidden != b"." && hidden != b".." {
            self.remove(&at.join(path(hidden)), false);
        }
    }

    /// The directories above `at`, made where missing (each a real
    /// directory: nothing written here is a link).
    fn parents(&self, at: &Path) -> std::io::Result<()> {
        match at.parent() {
            Some(parent) if parent != self.root => std::fs::create_dir_all(parent),
            _ => Ok(()),
        }
    }

    /// What a lower layer left at `at` goes; a directory stays for a directory.
    fn remove(&self, at: &Path, keep_dir: bool) {
        match std::fs::symlink_metadata(at) {
            Ok(m) if m.is_dir() && !keep_dir => drop(std::fs::remove_dir_all(at)),
            Ok(m) if !m.is_dir() => drop(std::fs::remove_file(at)),
            _ => {}
        }
    }

    fn hard_link<R: Read>(&mut self, what: &str, name: &[u8], at: &Path, entry: &tar::Entry<'_, R>) {
        let target = entry.link_name_bytes().map(|t| name_of(&t));
        match target {
            Some(Name::Clean(t)) if !t.is_empty() => {
                let from = self.root.join(path(&t));
                if std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_file()) {
                    match self.parents(at).and_then(|()| std::fs::hard_link(&from, at)) {
                        Ok(()) => drop(self.this_layer.insert(name.to_vec())),
                        Err(e) => self.refuse(name, what, format!("not linked: {}", crate::error::errno_text(&e))),
                    }
                }
            }
            Some(Name::Refused(why)) => self.refuse(name, what, format!("a hard link to {why}")),
            _ => {}
        }
    }

    /// A regular file: written only when it is an ELF file within bounds.
    fn file<R: Read>(&mut self, what: &str, name: &[u8], at: &Path, entry: &mut tar::Entry<'_, R>) {
        let size = entry.size();
        if size < 52 {
            return;
        }
        let mut magic = [0u8; 4];
        if entry.read_exact(&mut magic).is_err() || &magic != b"\x7fELF" {
            return;
        }
        if size > MAX_MEMBER || self.written + size > MAX_WRITTEN {
            let (bound, of) = if size > MAX_MEMBER { (MAX_MEMBER, "per file") } else { (MAX_WRITTEN, "in all") };
            let why = format!(
                "an ELF file of {}, past the {} bound {of}: not read",
                crate::words::human_size(size),
                crate::words::human_size(bound)
            );
            return self.refuse(name, what, why);
        }
        if let Err(e) = self.parents(at) {
            return self.refuse(name, what, format!("not written: {}", crate::error::errno_text(&e)));
        }
        let mode = entry.header().mode().unwrap_or(0o755) & 0o700;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode | 0o400)
            .custom_flags(libc::O_NOFOLLOW)
            .open(at)
            .and_then(|mut f| {
                f.write_all(&magic)?;
                copy(&mut entry.take(size - 4), &mut f)
            });
        match written {
            Ok(n) => {
                self.written += n + 4;
                self.this_layer.insert(name.to_vec());
            }
            Err(e) => {
                let _ = std::fs::remove_file(at);
                self.refuse(name, what, format!("not read: {}", crate::error::errno_text(&e)));
            }
        }
    }
}

/// `std::io::copy` with a checkpoint every 1 MiB: a stop signal during a
/// 1 GiB member stops the write within a chunk.
fn copy(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        checkpoint();
        match from.read(&mut buf) {
            Ok(0) => return Ok(n),
            Ok(got) => {
                to.write_all(&buf[..got])?;
                n += got as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
