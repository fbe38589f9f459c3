//! The trace engines, one module each: `bpf` (in-kernel aggregation, and
//! its fentry variant), `perf` (tracepoint counters and sampled records,
//! no BPF) and `seccomp` (user notification for `-- CMD`, no privileges).
//! `super::engine` chooses one; adding an engine is a module here and a
//! `Kind` the compiler then asks every match to decide.

pub mod bpf;
pub mod perf;
pub mod seccomp;
