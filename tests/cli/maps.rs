//! `maps` integration tests.
