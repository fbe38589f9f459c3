//! `trace` integration tests.
