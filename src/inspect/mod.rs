//! Reading what already exists: /proc/PID files, the vDSO image, kernel facts.
//! Nothing here prints or changes the system.

pub mod archive;
pub mod auxv;
pub mod btf;
pub mod cgroup;
pub mod code;
pub mod code_a64;
pub mod digest;
pub mod elf;
pub mod exe;
pub mod file;
pub mod host;
pub mod identity;
pub mod image;
pub mod kernel;
pub mod maps;
pub mod process;
pub mod symbols;

pub use process::Process;
