//! Whether a program ptraces its own threads or children, known before it
//! runs: a sanitizer runtime that stops the world by ptrace (LeakSanitizer,
//! alone or inside AddressSanitizer and HWAddressSanitizer: at exit it
//! attaches every thread of the process), or a known tracer (strace, gdb,
//! ltrace, rr). Traced by the seccomp engine's ptrace channel, such a
//! program finds its tasks already traced (EPERM) and behaves otherwise
//! than alone; the listener channel leaves ptrace to it (issue 42).

use super::*;

/// A program that ptraces tasks of its own tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PtraceUser {
    /// A sanitizer runtime whose leak check stops the world by ptrace.
    Sanitizer,
    /// A debugger or syscall tracer.
    Tracer,
}

/// Executable names of the tracers that ptrace what they run (valgrind
/// does not: it runs the program on its own CPU).
const TRACERS: &[&str] = &["strace", "gdb", "ltrace", "rr"];
/// DT_NEEDED names of the stop-the-world sanitizer runtimes (GCC's, then
/// LLVM's shared runtimes).
const RUNTIMES: &[&str] =
    &["libasan.so", "liblsan.so", "libhwasan.so", "libclang_rt.asan", "libclang_rt.lsan", "libclang_rt.hwasan"];
/// Symbols a static or `-static-libasan` link of those runtimes defines
/// (and an instrumented object imports).
const RUNTIME_SYMBOLS: &[&[u8]] = &[b"__lsan_init", b"__asan_init", b"__hwasan_init"];
/// Libraries followed through DT_NEEDED, at most.
const MAX_OBJECTS: usize = 64;

/// What `path` (the file `execve` runs) is, if it ptraces its own tree:
/// its name; its symbols; its DT_NEEDED libraries, found as the loader
/// finds them (`LD_LIBRARY_PATH`, then the system directories; not
/// `ld.so.cache` nor RUNPATH) and followed to theirs.
pub fn ptrace_user(path: &Path) -> Option<PtraceUser> {
    let named = |p: &Path| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| TRACERS.contains(&n));
    if named(path) || std::fs::canonicalize(path).is_ok_and(|p| named(&p)) {
        return Some(PtraceUser::Tracer);
    }
    let (file, _) = crate::inspect::file::open_named(path).ok()?;
    let h = headers(&file).ok()?;
    if defines_runtime(&file, &h) {
        return Some(PtraceUser::Sanitizer);
    }
    let mut queue: Vec<String> = read_dynamic(&file, &h).ok().flatten().map(|d| d.0).unwrap_or_default();
    let mut seen: Vec<String> = Vec::new();
    while let Some(name) = queue.pop() {
        if RUNTIMES.iter().any(|r| name.starts_with(r)) {
            return Some(PtraceUser::Sanitizer);
        }
        if seen.contains(&name) || seen.len() >= MAX_OBJECTS {
            continue;
        }
        seen.push(name.clone());
        let Some(Ok(lib)) = find_library(&name) else { continue };
        if let Some((needed, ..)) = headers(&lib).ok().and_then(|h| read_dynamic(&lib, &h).ok().flatten()) {
            queue.extend(needed);
        }
    }
    None
}

/// A sanitizer runtime symbol in `.symtab` or `.dynsym`.
fn defines_runtime(file: &File, h: &Headers) -> bool {
    [SHT_SYMTAB, SHT_DYNSYM].into_iter().filter_map(|kind| h.section_of(kind)).any(|table| {
        h.linked(table).is_some_and(|strtab| {
            RUNTIME_SYMBOLS.iter().any(|s| calls::name_offsets(file, strtab, s).is_ok_and(|o| !o.is_empty()))
        })
    })
}

/// The file a DT_NEEDED `name` loads: itself when it has a slash, else the
/// first of that name in `LD_LIBRARY_PATH` and the system directories.
fn find_library(name: &str) -> Option<std::io::Result<File>> {
    let open = |p: &Path| crate::inspect::file::open_named(p).map(|(f, _)| f);
    if name.contains('/') {
        return Some(open(Path::new(name)));
    }
    let triplet = match std::env::consts::ARCH {
        "x86" => "i386-linux-gnu".to_string(),
        arch => format!("{arch}-linux-gnu"),
    };
    let env: Vec<PathBuf> =
        std::env::var_os("LD_LIBRARY_PATH").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    let system = [
        format!("/lib/{triplet}"),
        format!("/usr/lib/{triplet}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ];
    env.into_iter()
        .chain(system.into_iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(|p| open(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracers_by_name_and_plain_programs_not() {
        let dir = tempfile::tempdir().unwrap();
        let strace = dir.path().join("strace");
        std::fs::write(&strace, b"#!/bin/sh\n").unwrap();
        assert_eq!(ptrace_user(&strace), Some(PtraceUser::Tracer));
        // A link named otherwise to it is the tracer too.
        let link = dir.path().join("st");
        std::os::unix::fs::symlink(&strace, &link).unwrap();
        assert_eq!(ptrace_user(&link), Some(PtraceUser::Tracer));
        // This test binary: no sanitizer runtime in it or what it loads.
        assert_eq!(ptrace_user(&std::env::current_exe().unwrap()), None);
        assert_eq!(ptrace_user(&dir.path().join("missing")), None);
    }
}
