//! vdsoctl: is this process really getting the vDSO fast path for its clock
//! reads, and if not, why not?
//!
//! Data flows one way: target → gather (`inspect`, `measure`) → model (report
//! structs beside each command) → render (`output`). This library face is what
//! `main.rs` and the integration tests use.

#![deny(unsafe_code)]

pub mod arch;
pub mod cli;
pub mod cmd;
pub mod error;
pub mod inspect;
pub mod measure;
pub mod model;
pub mod progress;
pub mod render;
pub mod resolve;
pub mod words;

pub use error::{Error, Result};
