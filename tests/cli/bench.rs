//! `bench` integration tests.
