//! `check` integration tests.
