//! `completions` and `man`: generated from the clap definitions; they touch no /proc.

use super::Outcome;
use crate::cli::{Cli, CompletionsArgs};
use crate::error::{Error, Result};
use clap::CommandFactory;

/// Print a completion script for the shell.
pub fn completions(args: &CompletionsArgs) -> Result<Outcome> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "vdsoctl", &mut buf);
    write_stdout(&buf)
}

/// Print the man page (roff).
pub fn man() -> Result<Outcome> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buf)
        .map_err(|e| Error::from_io("man page", e, "report this bug"))?;
    write_stdout(&buf)
}

fn write_stdout(buf: &[u8]) -> Result<Outcome> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(buf) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::from_io("stdout", e, "check where stdout goes"))
        }
        _ => Ok(Outcome::Clean),
    }
}
