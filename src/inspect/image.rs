//! A bounded walk of a filesystem tree (an unpacked container image, a
//! mounted rootfs, or `/` inside the container) for ELF executables and
//! shared libraries.
//!
//! Bounds: the walk stays on the root's filesystem (`st_dev`), skips
//! `proc`, `sys` and `dev` under the root, never follows a symlink (a link
//! into the host's `/` would audit the wrong tree), reads a hard-linked file
//! once, stops at [`MAX_DEPTH`] directories deep and [`MAX_FILES`] entries,
//! and reads only what `exe::read` reads of each file (headers, and at most
//! [`exe::SCAN_LIMIT`] of markers and code in 1 MiB chunks).
//!
//! The tree may change under the walk (its owner may be another user than
//! the one auditing it): below the root nothing is opened by path. Each
//! directory is opened from its parent's descriptor by its one name
//! (`O_NOFOLLOW|O_DIRECTORY`) and must be the (st_dev, st_ino) `lstat`
//! saw; each file is judged by what was opened the same way
//! (`O_NOFOLLOW|O_NONBLOCK`, then `fstat`), and hashed from that
//! descriptor. A name swapped for a FIFO, a device, a link or another
//! directory after `lstat` is skipped, never waited on or followed.

use crate::error::{errno_text, Error, Hint, Result};
use crate::inspect::digest;
use crate::inspect::exe::{self, ExeInfo};
use crate::measure::sys::at;
use nix::dir::Dir;
use nix::fcntl::AtFlags;
use nix::sys::stat::fstatat;
use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr};
use std::io::{Read, Seek};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

/// Directories deeper than this are not entered.
pub const MAX_DEPTH: usize = 64;
/// Entries (files and directories) looked at, at most.
pub const MAX_FILES: usize = 2_000_000;

/// Entries of a list the walk keeps (what could not be read, directories
/// not entered), at most: every one is counted, the first ones kept, so a
/// tree of a million unreadable names holds a hundred.
pub const KEPT: usize = 100;

/// A list that keeps its first [`KEPT`] entries and counts every one.
#[derive(Debug, Clone)]
pub struct Capped<T> {
    kept: Vec<T>,
    count: usize,
}

impl<T> Default for Capped<T> {
    fn default() -> Self {
        Capped { kept: Vec::new(), count: 0 }
    }
}

impl<T> Capped<T> {
    pub fn push(&mut self, item: T) {
        self.count += 1;
        if self.kept.len() < KEPT {
            self.kept.push(item);
        }
    }
    /// Every entry pushed, kept or not.
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    pub fn first(&self) -> Option<&T> {
        self.kept.first()
    }
    /// The entries kept, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.kept.iter()
    }
    /// `earlier`'s entries first, then this list's.
    pub fn after(&mut self, earlier: Capped<T>) {
        let mine = std::mem::replace(self, earlier);
        self.count += mine.count;
        for item in mine.kept {
            if self.kept.len() < KEPT {
                self.kept.push(item);
            }
        }
    }
}

/// One ELF file found under the root.
#[derive(Debug, Clone)]
pub struct Found {
    /// The path as the image sees it (`/usr/bin/ls` for ROOT/usr/bin/ls).
    pub path: PathBuf,
    pub info: ExeInfo,
    /// Its SHA-256, read from the descriptor it was judged from (when
    /// asked; None when it could not be read again).
    pub sha256: Option<String>,
}

/// What the walk found, and what it left out.
#[derive(Debug, Default)]
pub struct Walk {
    pub binaries: Vec<Found>,
    /// What could not be read: directories not listed, files not opened
    /// or read, ELF files that did not parse: (image path, why).
    pub unreadable: Capped<(PathBuf, String)>,
    /// Entries looked at.
    pub entries: u64,
    /// Directories not entered: other filesystems, proc/sys/dev, too deep.
    pub skipped_dirs: Capped<PathBuf>,
    /// The walk stopped at MAX_FILES.
    pub truncated: bool,
    /// Files left out because they are the `exclude` file (vdsoctl itself).
    pub excluded: Vec<PathBuf>,
}

/// Progress callback: (entries so far, ELF files so far, elapsed).
pub type Progress<'a> = &'a mut dyn FnMut(u64, usize, std::time::Duration);

/// A directory the walk will enter: its name in an open parent, and what
/// `lstat` saw of it (st_dev, st_ino), which what is opened must be.
struct Pending {
    parent: Rc<OwnedFd>,
    name: CString,
    id: (u64, u64),
    path: PathBuf,
    depth: usize,
}

/// Walk `root` (the name the user gave, followed if it is a link). The
/// root itself must be a readable directory (exit 3 otherwise); anything
/// unreadable below it is listed in `unreadable`. `exclude` is a file
/// (st_dev, st_ino) left out: vdsoctl itself, whose `bench` calls the
/// [vsyscall] page on purpose. With `hash`, each binary's SHA-256 is taken
/// from the descriptor it was judged from. With `consume` (a tree that is
/// vdsoctl's own private copy of an archive) each file is unlinked once
/// judged, so what a SIGKILL leaves is what was not judged yet.
///
/// Below the root nothing is opened by path: each directory is opened from
/// its parent's descriptor by its one name (`O_NOFOLLOW|O_DIRECTORY`) and
/// must be the (st_dev, st_ino) its `lstat` saw; each file the same way
/// (`O_NOFOLLOW|O_NONBLOCK`, then `fstat`). A name swapped for a link, or a
/// directory swapped for another, mid-walk, is skipped as vanished.
pub fn walk(
    root: &Path,
    exclude: Option<(u64, u64)>,
    hash: bool,
    consume: bool,
    mut progress: Option<Progress<'_>>,
) -> Result<Walk> {
    let hint = Hint::ImageRoot;
    let meta = std::fs::metadata(root).map_err(|e| Error::from_io(root, e, hint.clone()))?;
    if !meta.is_dir() {
        return Err(Error::from_io(root, std::io::Error::from_raw_os_error(libc::ENOTDIR), hint.clone()));
    }
    let top = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(root)
        .map_err(|e| Error::from_io(root, e, hint.clone()))?;
    let top_meta = top.metadata().map_err(|e| Error::from_io(root, e, hint.clone()))?;
    let top = OwnedFd::from(top);
    let dev = top_meta.dev();
    let start = Instant::now();
    let mut out = Walk::default();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let skip_top: [&[u8]; 3] = [b"proc", b"sys", b"dev"];
    let mut first = Some(list(&top, Path::new("/"), &mut out).map_err(|e| Error::from_io(root, e, hint))?);
    let mut first_dir = Some(Rc::new(top));
    // Depth-first with an explicit stack: no recursion to overflow; a
    // directory is opened when its turn comes, so the descriptors held
    // are those of its ancestors.
    let mut stack: Vec<Pending> = Vec::new();
    loop {
        let (dir, names, path, depth) = if let (Some(names), Some(dir)) = (first.take(), first_dir.take()) {
            (dir, names, PathBuf::from("/"), 0)
        } else {
            let Some(p) = stack.pop() else { break };
            let Some((dir, names)) = enter(&p, &mut out) else { continue };
            (dir, names, p.path, p.depth)
        };
        for name in names {
            crate::inspect::archive::cleanup::checkpoint();
            out.entries += 1;
            if out.entries as usize >= MAX_FILES {
                out.truncated = true;
                return Ok(out);
            }
            if let Some(p) = progress.as_mut() {
                if out.entries % 256 == 0 {
                    p(out.entries, out.binaries.len(), start.elapsed());
                }
            }
            let at = path.join(OsStr::from_bytes(name.to_bytes()));
            // lstat, relative to the directory opened: never follow a link.
            let m = match fstatat(Some(dir.as_raw_fd()), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(m) => m,
                Err(e) => {
                    let e = std::io::Error::from(e);
                    if !vanished(&e) {
                        out.unreadable.push((at, errno_text(&e)));
                    }
                    continue;
                }
            };
            let kind = m.st_mode & libc::S_IFMT;
            if kind == libc::S_IFDIR {
                let top = depth == 0 && skip_top.contains(&name.to_bytes());
                if top || m.st_dev != dev || depth + 1 > MAX_DEPTH {
                    out.skipped_dirs.push(at);
                } else {
                    let id = (m.st_dev, m.st_ino);
                    stack.push(Pending { parent: Rc::clone(&dir), name, id, path: at, depth: depth + 1 });
                }
                continue;
            }
            if kind == libc::S_IFREG && m.st_size >= 52 {
                read_file(&dir, &name, at, exclude, hash, &mut seen, &mut out);
            }
            if consume && kind == libc::S_IFREG {
                let _ = nix::unistd::unlinkat(
                    Some(dir.as_raw_fd()),
                    name.as_c_str(),
                    nix::unistd::UnlinkatFlags::NoRemoveDir,
                );
            }
        }
    }
    out.binaries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The names in `dir` but `.` and `..`, in the order the walk takes them;
/// an error part way is listed as unreadable, what was read is kept.
fn list(dir: &OwnedFd, path: &Path, out: &mut Walk) -> std::io::Result<Vec<CString>> {
    // A duplicate for the listing (Dir owns and closes it); `dir` stays
    // open for the names' openat.
    let mut dir = Dir::from(dir.try_clone()?)?;
    let mut names = Vec::new();
    for e in dir.iter() {
        match e {
            Ok(e) => {
                let n = e.file_name();
                if n.to_bytes() != b"." && n.to_bytes() != b".." {
                    names.push(n.to_owned());
                }
            }
            // A read that fails at once is a directory not listed.
            Err(e) if names.is_empty() => return Err(e.into()),
            Err(e) => {
                out.unreadable
                    .push((path.to_path_buf(), format!("directory not read whole: {}", errno_text(&e.into()))));
                break;
            }
        }
    }
    names.sort_by(|a, b| b.cmp(a));
    Ok(names)
}

/// Open a pending directory from its parent's descriptor: only the one
/// `lstat` saw (a link put there is ELOOP, another directory moved there
/// has another inode: both skipped as vanished); then its names.
fn enter(p: &Pending, out: &mut Walk) -> Option<(Rc<OwnedFd>, Vec<CString>)> {
    #[cfg(test)]
    tests::between(&p.path);
    let fd = match at::open_in(p.parent.as_fd(), &p.name, libc::O_DIRECTORY) {
        Ok(fd) => fd,
        Err(e) => {
            if !vanished(&e) {
                out.unreadable.push((p.path.clone(), format!("directory not listed: {}", errno_text(&e))));
            }
            return None;
        }
    };
    let file = std::fs::File::from(fd);
    let m = file.metadata().ok()?;
    if (m.dev(), m.ino()) != p.id {
        return None;
    }
    let dir = OwnedFd::from(file);
    match list(&dir, &p.path, out) {
        Ok(names) => Some((Rc::new(dir), names)),
        Err(e) => {
            out.unreadable.push((p.path.clone(), format!("directory not listed: {}", errno_text(&e))));
            None
        }
    }
}

/// One regular file of the walk, `name` in `dir`: opened as what it is
/// now, judged when it is an ELF program or library, listed as unreadable
/// when it cannot be.
fn read_file(
    dir: &OwnedFd,
    name: &CStr,
    path: PathBuf,
    exclude: Option<(u64, u64)>,
    hash: bool,
    seen: &mut HashSet<(u64, u64)>,
    out: &mut Walk,
) {
    // The name may have been swapped since lstat (for a FIFO, whose
    // open would block, a link, a device): what is judged is what
    // was opened, and it must be a regular file.
    let opened = at::open_in(dir.as_fd(), name, libc::O_NONBLOCK).map(std::fs::File::from).and_then(|f| {
        let m = f.metadata()?;
        if m.file_type().is_file() {
            Ok((f, m))
        } else {
            Err(std::io::Error::from_raw_os_error(libc::EINVAL))
        }
    });
    let (mut file, m) = match opened {
        Ok(f) => f,
        Err(e) => {
            if !vanished(&e) {
                out.unreadable.push((path, errno_text(&e)));
            }
            return;
        }
    };
    // Hard links are remembered (only they can be met twice; a link the
    // walk unlinked leaves the next with one link, still remembered).
    let id = (m.dev(), m.ino());
    if m.len() < 52 || seen.contains(&id) || m.nlink() > 1 && !seen.insert(id) {
        return;
    }
    if exclude == Some((m.dev(), m.ino())) {
        out.excluded.push(path);
        return;
    }
    let mut magic = [0u8; 4];
    match file.read_exact(&mut magic) {
        Ok(()) if &magic == b"\x7fELF" => {}
        Err(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => {
            out.unreadable.push((path, errno_text(&e)));
            return;
        }
        _ => return,
    }
    match exe::read(&file) {
        // Only programs and libraries: not objects, cores or debug files.
        Ok(info) if (info.elf_type == 2 || info.elf_type == 3) && !info.debug_only => {
            let sha256 = if hash {
                file.seek(std::io::SeekFrom::Start(0)).ok().and_then(|_| digest::sha256(&file).ok())
            } else {
                None
            };
            out.binaries.push(Found { path, info, sha256 })
        }
        Ok(_) => {}
        Err(e) => out.unreadable.push((path, e.to_string())),
    }
}

/// An entry that changed under the walk (gone, swapped for a link, a FIFO
/// or a device): skipped as `lstat` would have skipped it, not unreadable.
fn vanished(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EINVAL | libc::ENXIO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    type Hook = Box<dyn FnMut(&Path)>;

    thread_local! {
        /// What a test does between a directory's lstat and its open.
        static BETWEEN: RefCell<Option<Hook>> = RefCell::new(None);
    }

    pub(super) fn between(path: &Path) {
        BETWEEN.with(|b| {
            if let Some(f) = b.borrow_mut().as_mut() {
                f(path)
            }
        })
    }

    /// A directory swapped mid-walk, for a link to a directory outside the
    /// tree and for another directory moved into its place: neither is
    /// entered, nothing outside the tree is named or hashed.
    #[test]
    fn a_directory_swapped_mid_walk_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("root"), dir.path().join("outside"));
        for d in [root.join("a"), root.join("sub"), outside.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::copy("/proc/self/exe", root.join("a/inside")).unwrap();
        std::fs::copy("/proc/self/exe", outside.join("secret")).unwrap();
        for swap in ["link", "dir"] {
            let (r, o, d) = (root.clone(), outside.clone(), dir.path().to_path_buf());
            BETWEEN.with(|b| {
                *b.borrow_mut() = Some(Box::new(move |p: &Path| {
                    if p != Path::new("/sub") {
                        return;
                    }
                    std::fs::rename(r.join("sub"), d.join(format!("old-{swap}"))).unwrap();
                    if swap == "link" {
                        std::os::unix::fs::symlink(&o, r.join("sub")).unwrap();
                    } else {
                        std::fs::rename(&o, r.join("sub")).unwrap();
                    }
                }))
            });
            let w = walk(&root, None, true, false, None).unwrap();
            BETWEEN.with(|b| *b.borrow_mut() = None);
            let paths: Vec<_> = w.binaries.iter().map(|b| b.path.to_string_lossy().into_owned()).collect();
            assert_eq!(paths, ["/a/inside"], "{swap}");
            assert!(w.binaries[0].sha256.as_ref().is_some_and(|h| h.len() == 64), "{swap}");
            assert!(w.unreadable.is_empty(), "{swap}: {:?}", w.unreadable);
            // Put the tree back as it was for the next swap.
            let _ = std::fs::remove_file(root.join("sub"));
            if swap == "dir" {
                std::fs::rename(root.join("sub"), &outside).unwrap();
            }
            std::fs::rename(dir.path().join(format!("old-{swap}")), root.join("sub")).unwrap();
        }
    }

    #[test]
    fn walks_a_tree_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::create_dir_all(root.join("proc/1")).unwrap();
        std::fs::copy("/proc/self/exe", root.join("usr/bin/me")).unwrap();
        std::fs::copy("/proc/self/exe", root.join("proc/1/exe")).unwrap();
        std::fs::hard_link(root.join("usr/bin/me"), root.join("usr/bin/me2")).unwrap();
        std::os::unix::fs::symlink("/usr/bin", root.join("hostbin")).unwrap();
        std::fs::write(root.join("usr/bin/script"), "#!/bin/sh\necho hi there this is not an ELF file at all\n")
            .unwrap();
        let me = std::fs::metadata(root.join("usr/bin/script")).unwrap();
        let w = walk(root, Some((me.dev(), me.ino())), false, false, None).unwrap();
        let paths: Vec<_> = w.binaries.iter().map(|b| b.path.to_string_lossy().into_owned()).collect();
        assert_eq!(paths.len(), 1, "{paths:?}");
        assert!(paths[0] == "/usr/bin/me" || paths[0] == "/usr/bin/me2", "{paths:?}");
        assert_eq!(w.skipped_dirs.iter().collect::<Vec<_>>(), [&PathBuf::from("/proc")]);
        assert_eq!(w.excluded, vec![PathBuf::from("/usr/bin/script")]);
        let e = walk(&root.join("usr/bin/me"), None, false, false, None).unwrap_err();
        assert!(e.to_string().contains("not a directory (ENOTDIR) — pass the directory"), "{e}");
        assert!(walk(&root.join("nonexistent"), None, false, false, None).is_err());
    }
}
