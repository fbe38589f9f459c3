//! Reading an image file the user names, bounded: the size is checked
//! before a byte is read, and a file that is not a regular file (or a FIFO,
//! so `--file <(...)` works) is refused, so `/dev/zero` or a directory cannot
//! make us read forever or allocate without bound.

use crate::error::{Error, Result};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

const HINT: &str = "check the path and its permissions";

/// Read all of `path`, refusing anything larger than `limit` bytes without
/// reading it whole.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>> {
    // O_NONBLOCK so that opening a FIFO nobody writes to does not hang; it
    // is cleared again below, so a pipe with a writer is read to its end.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::from_io(path, e, HINT))?;
    nix::fcntl::fcntl(file.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()))
        .map_err(|e| Error::from_io(path, e.into(), HINT))?;
    let meta = file.metadata().map_err(|e| Error::from_io(path, e, HINT))?;
    let ft = meta.file_type();
    let kind = if ft.is_dir() {
        Some("a directory")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    };
    if let Some(kind) = kind {
        return Err(Error::NotAFile { path: path.to_path_buf(), kind: kind.to_string() });
    }
    if ft.is_file() && meta.len() > limit {
        return Err(Error::TooLarge { path: path.to_path_buf(), size: meta.len(), limit });
    }
    let mut buf = Vec::with_capacity(if ft.is_file() { meta.len() as usize } else { 0 });
    file.take(limit.saturating_add(1)).read_to_end(&mut buf).map_err(|e| Error::from_io(path, e, HINT))?;
    if buf.len() as u64 > limit {
        return Err(Error::TooLarge { path: path.to_path_buf(), size: buf.len() as u64, limit });
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_file() {
        assert!(matches!(read_bounded(Path::new("/dev/zero"), 1 << 20), Err(Error::NotAFile { .. })));
        assert!(matches!(read_bounded(Path::new("/"), 1 << 20), Err(Error::NotAFile { .. })));
        assert!(matches!(read_bounded(Path::new("/nonexistent/x"), 1 << 20), Err(Error::Io { .. })));
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
}
