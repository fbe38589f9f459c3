//! The kernel interfaces the trace engines and bench share: perf_event
//! counters and their ring buffers, tracefs (event ids and formats), and
//! pidfds.

pub mod filter;
pub mod perf;
pub mod pidfd;
pub mod ring;
pub mod tracefs;
