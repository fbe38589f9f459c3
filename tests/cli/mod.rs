//! Integration tests against real processes, one module per subcommand.

pub mod common;
pub mod skips;

mod archive;
mod audit;
mod auxv;
mod baseline_gate;
mod bench;
mod bench_baseline;
mod check;
mod consumers;
mod containers;
mod deploy;
mod dump;
mod errors;
mod export;
mod fleet;
mod gate;
mod getrandom;
mod groups;
mod hostile;
mod json;
mod maps;
mod matrix;
mod outputs;
mod profile;
mod races;
mod readme;
mod regress;
mod seccomp;
mod serve;
mod sites;
mod stacks;
mod top;
mod trace;
mod tree;
mod ux;
