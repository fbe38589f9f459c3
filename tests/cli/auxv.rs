//! `auxv` integration tests.
