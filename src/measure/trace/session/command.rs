//! `-- CMD` before the fork: the program found as `execvp` would, and every
//! string it needs made before the fork (no allocation after it).

use crate::arch::Abi;
use crate::error::{Error, Result};
use crate::inspect::process::exe_header_of;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A command resolved and turned into C strings before the fork.
pub(crate) struct PreparedCommand {
    pub(crate) path: CString,
    pub(crate) argv: Vec<CString>,
    pub(crate) envp: Vec<CString>,
    pub(crate) display: String,
    pub(crate) argv_text: Vec<String>,
    pub(crate) comm: String,
    pub(crate) abi: Option<Abi>,
    /// It ptraces its own tree (a sanitizer build, a tracer): the seccomp
    /// engine then counts through a listener.
    pub(crate) ptrace_user: Option<crate::inspect::exe::PtraceUser>,
}

pub(crate) fn prepare_command(words: &[OsString]) -> Result<PreparedCommand> {
    let display = crate::words::shell_words(&words.iter().map(|w| w.to_string_lossy()).collect::<Vec<_>>());
    let spawn_err = |kind: std::io::ErrorKind, why: &str| Error::Spawn {
        cmd: display.clone(),
        source: std::io::Error::new(kind, why.to_string()),
    };
    let first = words.first().ok_or_else(|| spawn_err(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let path = resolve(first).ok_or_else(|| spawn_err(std::io::ErrorKind::NotFound, "not found or not executable"))?;
    let cstr = |b: &[u8]| CString::new(b).map_err(|_| spawn_err(std::io::ErrorKind::InvalidInput, "NUL byte"));
    let argv = words.iter().map(|w| cstr(w.as_bytes())).collect::<Result<Vec<_>>>()?;
    let envp = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend(v.into_vec());
            cstr(&kv)
        })
        .collect::<Result<Vec<_>>>()?;
    let abi = exe_header_of(&path).and_then(|h| Abi::from_elf(h.is_64, h.machine));
    let ptrace_user = crate::inspect::exe::ptrace_user(&path);
    // The kernel's: the file name's first 15 bytes (a UTF-8 name may be cut
    // mid-letter), written as /proc's comm is read (`words::bytes_text`).
    let comm: String =
        path.file_name().map(|n| crate::words::bytes_text(&n.as_bytes()[..n.len().min(15)])).unwrap_or_default();
    Ok(PreparedCommand {
        path: cstr(path.as_os_str().as_bytes())?,
        argv,
        envp,
        // A word that is not UTF-8 keeps its bytes apart (`\xNN`), not U+FFFD.
        argv_text: words
            .iter()
            .map(|w| w.to_str().map_or_else(|| crate::words::bytes_text(w.as_bytes()), str::to_string))
            .collect(),
        display,
        comm,
        abi,
        ptrace_user,
    })
}

/// `execvp`'s search: a name with a slash as is, else the first executable
/// regular file of that name on PATH.
fn resolve(name: &OsString) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if name.as_bytes().contains(&b'/') {
        let p = PathBuf::from(name);
        return runnable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| runnable(p))
}
