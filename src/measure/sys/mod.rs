//! The only place in the crate where `unsafe` is allowed: raw system calls
//! (bpf, perf_event_open and its ioctls, mmap, openat), calls into the vDSO and the
//! vsyscall page. Each child module exposes safe functions; every unsafe
//! block carries a SAFETY comment.

#![allow(unsafe_code)]

pub mod at;
pub mod bpf;
pub mod call;
pub mod handle;
pub mod libc;
pub mod perf;
pub mod probe;
pub mod ptrace;
pub mod ring;
pub mod seccomp;
pub mod signals;
pub mod spawn;
