//! Making things happen: perf_event_open counters and ring buffers, tracefs,
//! timing loops, direct vDSO calls, raw syscalls, the vsyscall page.
//! All `unsafe` of the crate lives under `measure::sys`, which is
//! crate-private: its safe handles cannot be misused from outside, and
//! code outside the crate uses the safe types here (`pidfd::Pidfd`).

pub mod bench;
pub mod bpf;
pub mod engine;
pub mod perf;
pub mod pidfd;
pub mod ring;
pub mod seccomp;
pub mod session;
pub mod sight;
pub mod sites;
pub(crate) mod sys;
pub mod trace;
pub mod tracefs;
pub mod vdso;
