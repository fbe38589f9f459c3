//! The files `dump` reads (`--file`) and writes (`-o`), bounded and safe,
//! and how the image walk and the binary reader open files ([`open_regular`]).
//!
//! Reading: the file is opened `O_NONBLOCK` (so a FIFO nobody writes to
//! cannot block the open) and judged by `fstat` on the open descriptor, not
//! by its name: only a regular file is read, and at most the size `fstat`
//! reports, so neither a FIFO, a character device (`/dev/zero`), a socket,
//! a directory, nor a pseudo-file of tracefs/debugfs/procfs/sysfs (whose
//! size says nothing: `trace_pipe` reports 0 and never ends) can make us
//! read forever or allocate without bound. A file over the limit is refused
//! before a byte is read.
//!
//! Writing (`-o`): never through a symbolic link and never into anything but
//! a regular file. The image goes to a new temporary file beside the target
//! (created `O_CREAT|O_EXCL|O_NOFOLLOW`), is synced, then renamed over the
//! target; on any error (ENOSPC included) the temporary file is removed, so
//! the target is either the old file or the whole new image, never a part.

use crate::error::{Error, Hint, Result};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const HINT: Hint = Hint::CheckPath;

/// The largest image file `dump --file` reads: 4 MiB. The largest vDSO of
/// any architecture is ppc64's at 28 KiB; 4 MiB leaves room for any small
/// ELF a user checks by mistake (which `dump` lists under a "not a vDSO"
/// verdict) while the whole run stays under DESIGN's 10 MiB peak-memory
/// budget: the file is held once, and everything parsed from it is capped
/// (`elf::caps`). DESIGN's 64 MiB is the bound for any read; this one is
/// tighter because reading 64 MiB alone would be six times the budget.
pub const IMAGE_LIMIT: u64 = 4 << 20;

/// Filesystems whose files report no meaningful size (statfs f_type).
const PSEUDO_FS: [(u64, &str); 4] =
    [(0x7472_6163, "tracefs"), (0x6462_6720, "debugfs"), (0x9fa0, "procfs"), (0x6265_6572, "sysfs")];

/// What a file type is called in a refusal; None for a regular file.
fn kind_of(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_symlink() {
        Some("a symbolic link")
    } else if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Read all of a regular file at `path`, refusing anything else and
/// anything larger than `limit` bytes without reading it.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::from_io(path, e, HINT))?;
    let meta = file.metadata().map_err(|e| Error::from_io(path, e, HINT))?;
    if let Some(kind) = kind_of(meta.file_type()) {
        let why = if meta.file_type().is_fifo() { " (its length is unknown and a read may never end)" } else { "" };
        return Err(Error::NotAFile { path: path.to_path_buf(), kind: format!("{kind}{why}") });
    }
    if let Ok(fs) = nix::sys::statfs::fstatfs(&file) {
        let magic = fs.filesystem_type().0 as u64;
        if let Some((_, name)) = PSEUDO_FS.iter().find(|(m, _)| *m == magic) {
            return Err(Error::NotAFile {
                path: path.to_path_buf(),
                kind: format!("a {name} pseudo-file (its size says nothing and a read may never end)"),
            });
        }
    }
    let size = meta.len();
    if size > limit {
        return Err(Error::TooLarge { path: path.to_path_buf(), size, limit });
    }
    let mut buf = Vec::with_capacity(size as usize);
    // At most what fstat said: a file that grows while we read is cut there.
    file.take(size).read_to_end(&mut buf).map_err(|e| Error::from_io(path, e, HINT))?;
    Ok(buf)
}

/// Open `path` for reading only if it is a regular file *when opened*:
/// `O_NOFOLLOW` (a link put there is not followed: ELOOP), `O_NONBLOCK` (a
/// FIFO put there cannot block the open), `O_NOCTTY` (a terminal cannot
/// become ours), `O_CLOEXEC`; then `fstat` on the descriptor, and anything
/// but a regular file is an error (EINVAL). A walk that judged the name
/// with `lstat` then skips the entry exactly as it would have had `lstat`
/// seen what `open` met.
pub fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok((file, meta))
}

/// Open a file the *user* named (`--baseline`, `--seccomp-profile`, an
/// image archive): a link is followed, as every tool follows the links its
/// user names (a Kubernetes ConfigMap mount is `..data` links), and the
/// rest is [`open_regular`]'s: `O_NONBLOCK`, `O_NOCTTY`, then `fstat`, and
/// only a regular file is returned (EINVAL otherwise). Names found inside
/// an image are opened with [`open_regular`], never followed.
pub fn open_named(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok((file, meta))
}

/// What [`write_replacing`] would refuse, found before any work: a CI run
/// must not audit for minutes and then refuse its `--export-json` path.
/// The target must be absent or a regular file, and its directory must
/// exist, be a directory, and be writable (a missing, read-only or
/// read-only-mounted directory is `Error::Write`, exit 3, before the work).
pub fn check_replaceable(path: &Path) -> Result<()> {
    let refuse = |kind: &str| Error::WriteRefused { path: path.to_path_buf(), kind: kind.to_string() };
    let werr = |source: std::io::Error| Error::Write { path: path.to_path_buf(), source };
    if path.file_name().is_none() {
        return Err(refuse("a directory name (it ends in / or ..), not a file name"));
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if let Some(kind) = kind_of(meta.file_type()) {
            return Err(refuse(kind));
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(dir).map_err(werr)?;
    if !meta.is_dir() {
        return Err(werr(std::io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    // The effective ids, as the write will have them; a read-only mount is EROFS.
    use nix::unistd::AccessFlags;
    nix::unistd::faccessat(None, dir, AccessFlags::W_OK | AccessFlags::X_OK, nix::fcntl::AtFlags::AT_EACCESS)
        .map_err(|e| werr(e.into()))
}

/// Write `bytes` to `path` atomically: a new temporary file in the same
/// directory, synced, renamed over `path`. `path` must be absent or a
/// regular file; a link, FIFO, directory or device there is refused without
/// being opened.
pub fn write_replacing(path: &Path, bytes: &[u8]) -> Result<()> {
    let refuse = |kind: &str| Error::WriteRefused { path: path.to_path_buf(), kind: kind.to_string() };
    let werr = |source: std::io::Error| Error::Write { path: path.to_path_buf(), source };
    let Some(name) = path.file_name() else {
        return Err(refuse("a directory name (it ends in / or ..), not a file name"));
    };
    // The file being replaced keeps its permission bits only when it is
    // vdsoctl's user's own, and never its setuid, setgid or sticky bit:
    // another user's file (a `-rwsrwsrwx` planted for root to fill) gets
    // vdsoctl's own mode, 0644 less the umask.
    let keep = match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            if let Some(kind) = kind_of(meta.file_type()) {
                return Err(refuse(kind));
            }
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            (meta.uid() == nix::unistd::geteuid().as_raw())
                .then(|| std::fs::Permissions::from_mode(meta.mode() & 0o777))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(werr(e)),
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let mut last = None;
    for attempt in 0..16u32 {
        let tmp = dir.join(format!(
            ".{}.vdsoctl-{}-{:x}",
            name.to_string_lossy(),
            std::process::id(),
            stamp.wrapping_add(attempt)
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o644)
            .open(&tmp);
        let mut file = match file {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(werr(e)),
        };
        let written = file
            .write_all(bytes)
            .and_then(|_| keep.clone().map_or(Ok(()), |p| file.set_permissions(p)))
            .and_then(|_| file.sync_all());
        drop(file);
        if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(werr(e));
        }
        return Ok(());
    }
    Err(werr(last.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AlreadyExists))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_file() {
        assert!(matches!(read_bounded(Path::new("/dev/zero"), 1 << 20), Err(Error::NotAFile { .. })));
        assert!(matches!(read_bounded(Path::new("/"), 1 << 20), Err(Error::NotAFile { .. })));
        assert!(matches!(read_bounded(Path::new("/proc/self/status"), 1 << 20), Err(Error::NotAFile { .. })));
        assert!(matches!(read_bounded(Path::new("/nonexistent/x"), 1 << 20), Err(Error::Io { .. })));
    }

    #[test]
    fn open_regular_opens_only_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(open_regular(&file).map(|(_, m)| m.len()).ok(), Some(1));
        let errno = |p: &Path| open_regular(p).err().and_then(|e| e.raw_os_error());
        // A FIFO nobody writes to: not blocked in open, and not read.
        assert_eq!(errno(&fifo), Some(libc::EINVAL));
        assert_eq!(errno(&link), Some(libc::ELOOP));
        assert_eq!(errno(dir.path()), Some(libc::EINVAL));
        assert_eq!(errno(Path::new("/dev/null")), Some(libc::EINVAL));
        assert_eq!(errno(&dir.path().join("absent")), Some(libc::ENOENT));
    }

    #[test]
    fn sparse_file_is_refused_by_size() {
        let f = tempfile::NamedTempFile::new().unwrap();
        f.as_file().set_len(1 << 30).unwrap();
        match read_bounded(f.path(), 64 << 20) {
            Err(Error::TooLarge { size, limit, .. }) => assert_eq!((size, limit), (1 << 30, 64 << 20)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn write_replaces_a_regular_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.so");
        std::fs::write(&target, b"old contents, longer than the new").unwrap();
        std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        write_replacing(&target, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&target).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["out.so"]);
    }
}
