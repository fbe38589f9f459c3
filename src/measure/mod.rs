//! Making things happen, in three rooms: `trace` (counting a process's
//! clock and random syscalls: the vocabulary, the engine choice, the
//! session, and `trace/engines/{bpf,perf,seccomp}`), `bench` (timing loops,
//! direct vDSO calls, raw syscalls, the vsyscall page) and `kernel` (the
//! perf_event counters, ring buffers, tracefs and pidfds both use).
//! All `unsafe` of the crate lives under `measure::sys`, which is
//! crate-private: its safe handles cannot be misused from outside, and
//! code outside the crate uses the safe types here (`pidfd::Pidfd`).

pub mod bench;
pub mod kernel;
pub mod sample;
pub(crate) mod sys;
pub mod trace;
