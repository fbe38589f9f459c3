//! The perf ring buffer's mmap and its lock-free head/tail protocol
//! (perf_event_open(2), "MMAP layout"), plus poll(2) on event fds. Callers
//! get bytes copied out of the buffer; nothing here interprets records.

use super::perf::PerfEvent;
use perf_event_open_sys as pes;
use pes::bindings::perf_event_mmap_page as MetaPage;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr::{self, addr_of, addr_of_mut};
use std::sync::atomic::{fence, Ordering};

/// A mapped ring buffer: one metadata page then `2^n` data pages.
#[derive(Debug)]
pub struct Mmap {
    base: *mut u8,
    len: usize,
    data_size: u64,
}

impl Mmap {
    /// Map `data_pages` (a power of two) data pages of a perf event,
    /// writable so the kernel sees our tail and never overwrites unread data.
    /// Typed: no other descriptor can be mapped as a ring.
    pub fn new(event: &PerfEvent, data_pages: usize) -> io::Result<Mmap> {
        if !data_pages.is_power_of_two() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let page = page_size();
        let len = (data_pages + 1) * page;
        // SAFETY: a fresh shared mapping of a perf fd; the kernel validates
        // the size and we keep the pointer only while the mapping lives.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                event.as_fd().as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap { base: base.cast(), len, data_size: (data_pages * page) as u64 })
    }

    /// Copy every unread byte to `out` (in order, unwrapped) and hand the
    /// space back to the kernel. Returns the number of bytes copied.
    pub fn read_available(&mut self, out: &mut Vec<u8>) -> usize {
        let meta = self.base as *mut MetaPage;
        // SAFETY: `meta` points at the mapped metadata page for our lifetime;
        // data_head is written by the kernel, so read it volatile, then fence
        // (the kernel's smp_rmb pairing) before reading the data it covers.
        let head = unsafe { ptr::read_volatile(addr_of!((*meta).data_head)) };
        fence(Ordering::Acquire);
        // SAFETY: data_tail is ours to read and write.
        let tail = unsafe { ptr::read_volatile(addr_of!((*meta).data_tail)) };
        let avail = head.wrapping_sub(tail).min(self.data_size);
        let page = page_size() as u64;
        let mut done = 0u64;
        while done < avail {
            let at = (tail + done) % self.data_size;
            let chunk = (self.data_size - at).min(avail - done);
            // SAFETY: [page + at, page + at + chunk) lies inside the data area
            // (at < data_size, at + chunk <= data_size), which is mapped.
            let src = unsafe { std::slice::from_raw_parts(self.base.add((page + at) as usize), chunk as usize) };
            out.extend_from_slice(src);
            done += chunk;
        }
        // All reads of the data happen before the kernel may reuse it.
        fence(Ordering::SeqCst);
        // SAFETY: as above; writing data_tail releases the space.
        unsafe { ptr::write_volatile(addr_of_mut!((*meta).data_tail), tail.wrapping_add(avail)) };
        avail as usize
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `new` mapped, once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Wait until one of `fds` is readable (a ring passed its watermark) or
/// `timeout_ms` passes. EINTR counts as a timeout.
pub fn poll_in(fds: &[BorrowedFd<'_>], timeout_ms: i32) -> io::Result<bool> {
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structs.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
        return Ok(false);
    }
    Ok(rc > 0)
}
