//! `dump` integration tests.
