//! One integration test binary; its modules mirror `src/cmd/`.

mod cli;
