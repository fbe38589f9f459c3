//! `open_by_handle_at(2)`: open a file by its identity on its filesystem
//! (inode and generation), with no path — how `trace --sites` names code
//! of a process gone before vdsoctl saw its mappings (root: the call needs
//! CAP_DAC_READ_SEARCH).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `FILEID_INO32_GEN`: the handle type of ext2/3/4 and others exporting a
/// 32-bit inode number and its generation.
const FILEID_INO32_GEN: i32 = 1;

/// `struct file_handle` with an 8-byte handle.
#[repr(C)]
struct Handle {
    bytes: u32,
    kind: i32,
    words: [u32; 2],
}

/// Open, read-only, the file with inode `ino` and generation `gen` on the
/// filesystem `mount` (any file or directory on it) is on.
pub fn open_ino32_gen(mount: &File, ino: u64, gen: u32) -> io::Result<File> {
    let ino = u32::try_from(ino).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "inode past 32 bits"))?;
    let h = Handle { bytes: 8, kind: FILEID_INO32_GEN, words: [ino, gen] };
    // SAFETY: `h` is a valid `struct file_handle` whose `handle_bytes`
    // matches its array; the kernel only reads it during the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            mount.as_raw_fd(),
            &h as *const Handle,
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call returned a new descriptor this process owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(rc as i32) }))
}
