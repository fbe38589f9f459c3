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
//! The tree may change under the walk: a file is judged by what was opened
//! ([`file::open_regular`]: `O_NOFOLLOW|O_NONBLOCK`, then `fstat`), so a
//! name swapped for a FIFO, a device or a link after `lstat` is skipped,
//! never waited on or followed.

use crate::error::{errno_text, Error, Hint, Result};
use crate::inspect::exe::{self, ExeInfo};
use crate::inspect::file;
use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Directories deeper than this are not entered.
pub const MAX_DEPTH: usize = 64;
/// Entries (files and directories) looked at, at most.
pub const MAX_FILES: usize = 2_000_000;

/// One ELF file found under the root.
#[derive(Debug, Clone)]
pub struct Found {
    /// The path as the image sees it (`/usr/bin/ls` for ROOT/usr/bin/ls).
    pub path: PathBuf,
    pub info: ExeInfo,
}

/// What the walk found, and what it left out.
#[derive(Debug, Default)]
pub struct Walk {
    pub binaries: Vec<Found>,
    /// What could not be read: directories not listed, files not opened
    /// or read, ELF files that did not parse: (image path, why).
    pub unreadable: Vec<(PathBuf, String)>,
    /// Entries looked at.
    pub entries: u64,
    /// Directories not entered: other filesystems, proc/sys/dev, too deep.
    pub skipped_dirs: Vec<PathBuf>,
    /// The walk stopped at MAX_FILES.
    pub truncated: bool,
    /// Files left out because they are the `exclude` file (vdsoctl itself).
    pub excluded: Vec<PathBuf>,
}

/// Progress callback: (entries so far, ELF files so far, elapsed).
pub type Progress<'a> = &'a mut dyn FnMut(u64, usize, std::time::Duration);

/// Walk `root`. The root itself must be a readable directory (exit 3
/// otherwise); anything unreadable below it is listed in `unreadable`. `exclude` is a file
/// (st_dev, st_ino) left out: vdsoctl itself, whose `bench` calls the
/// [vsyscall] page on purpose.
pub fn walk(root: &Path, exclude: Option<(u64, u64)>, mut progress: Option<Progress<'_>>) -> Result<Walk> {
    let hint = Hint::ImageRoot;
    let meta = std::fs::metadata(root).map_err(|e| Error::from_io(root, e, hint.clone()))?;
    if !meta.is_dir() {
        return Err(Error::from_io(root, std::io::Error::from_raw_os_error(libc::ENOTDIR), hint.clone()));
    }
    std::fs::read_dir(root).map_err(|e| Error::from_io(root, e, hint))?;
    let dev = meta.dev();
    let start = Instant::now();
    let mut out = Walk::default();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let skip_top: [&str; 3] = ["proc", "sys", "dev"];
    // Depth-first with an explicit stack: no recursion to overflow.
    let mut stack: Vec<(PathBuf, usize)> = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                out.unreadable.push((image_path(root, &dir), format!("directory not listed: {}", errno_text(&e))));
                continue;
            }
        };
        let mut names = Vec::new();
        for e in entries {
            match e {
                Ok(e) => names.push(e),
                Err(e) => out
                    .unreadable
                    .push((image_path(root, &dir), format!("directory not read whole: {}", errno_text(&e)))),
            }
        }
        names.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
        for entry in names {
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
            let path = entry.path();
            // symlink_metadata: never follow a link.
            let m = match std::fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    if !vanished(&e) {
                        out.unreadable.push((image_path(root, &path), errno_text(&e)));
                    }
                    continue;
                }
            };
            let ft = m.file_type();
            if ft.is_dir() {
                let top = depth == 0 && entry.file_name().to_str().is_some_and(|n| skip_top.contains(&n));
                if top || m.dev() != dev || depth + 1 > MAX_DEPTH {
                    out.skipped_dirs.push(image_path(root, &path));
                } else {
                    stack.push((path, depth + 1));
                }
                continue;
            }
            if ft.is_file() && m.len() >= 52 {
                read_file(root, &path, exclude, &mut seen, &mut out);
            }
        }
    }
    out.binaries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// One regular file of the walk: opened as what it is now, judged when it
/// is an ELF program or library, listed as unreadable when it cannot be.
fn read_file(root: &Path, path: &Path, exclude: Option<(u64, u64)>, seen: &mut HashSet<(u64, u64)>, out: &mut Walk) {
    // The name may have been swapped since lstat (for a FIFO, whose
    // open would block, a link, a device): what is judged is what
    // was opened, and it must be a regular file.
    let (mut file, m) = match file::open_regular(path) {
        Ok(f) => f,
        Err(e) => {
            if !vanished(&e) {
                out.unreadable.push((image_path(root, path), errno_text(&e)));
            }
            return;
        }
    };
    // Hard links are remembered (only they can be met twice).
    if m.len() < 52 || m.nlink() > 1 && !seen.insert((m.dev(), m.ino())) {
        return;
    }
    if exclude == Some((m.dev(), m.ino())) {
        out.excluded.push(image_path(root, path));
        return;
    }
    let mut magic = [0u8; 4];
    match file.read_exact(&mut magic) {
        Ok(()) if &magic == b"\x7fELF" => {}
        Err(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => {
            out.unreadable.push((image_path(root, path), errno_text(&e)));
            return;
        }
        _ => return,
    }
    match exe::read(&file) {
        // Only programs and libraries: not objects, cores or debug files.
        Ok(info) if (info.elf_type == 2 || info.elf_type == 3) && !info.debug_only => {
            out.binaries.push(Found { path: image_path(root, path), info })
        }
        Ok(_) => {}
        Err(e) => out.unreadable.push((image_path(root, path), e.to_string())),
    }
}

/// An entry that changed under the walk (gone, swapped for a link, a FIFO
/// or a device): skipped as `lstat` would have skipped it, not unreadable.
fn vanished(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EINVAL | libc::ENXIO))
}

/// ROOT/usr/bin/ls → /usr/bin/ls.
fn image_path(root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix(root) {
        Ok(rel) => Path::new("/").join(rel),
        Err(_) => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let w = walk(root, Some((me.dev(), me.ino())), None).unwrap();
        let paths: Vec<_> = w.binaries.iter().map(|b| b.path.to_string_lossy().into_owned()).collect();
        assert_eq!(paths.len(), 1, "{paths:?}");
        assert!(paths[0] == "/usr/bin/me" || paths[0] == "/usr/bin/me2", "{paths:?}");
        assert_eq!(w.skipped_dirs, vec![PathBuf::from("/proc")]);
        assert_eq!(w.excluded, vec![PathBuf::from("/usr/bin/script")]);
        let e = walk(&root.join("usr/bin/me"), None, None).unwrap_err();
        assert!(e.to_string().contains("not a directory (ENOTDIR) — pass the directory"), "{e}");
        assert!(walk(&root.join("nonexistent"), None, None).is_err());
    }
}
