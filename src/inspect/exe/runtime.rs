//! What a running process's executable is: the program ld.so runs, the
//! tool (valgrind, qemu-user) a program runs under, and its runtime.

use super::*;

/// What really runs in a process, when its /proc/PID/exe is not the program.
#[derive(Debug, Clone)]
pub enum Launch {
    /// The executable is the program.
    Direct,
    /// `ld.so PROG`: the dynamic linker is the exe; the program is mapped.
    Loader { loader: PathBuf, program: PathBuf },
    /// An emulator or instrumenter runs the program (valgrind, qemu-user, ...).
    Emulator { tool: String, program: Option<String> },
}

/// The runtime of a live process: its executable, or the program ld.so or
/// an emulator runs, with the info of what actually serves its clock reads.
#[derive(Debug, Clone)]
pub struct ProcessRuntime {
    pub launch: Launch,
    /// The path whose ELF `info` describes.
    pub path: Option<PathBuf>,
    pub info: ExeInfo,
    /// The version of the C library the process has mapped (dynamic programs).
    pub mapped_libc: Option<(LibcKind, Option<String>, PathBuf)>,
}

/// Emulator names recognised from the executable's file name.
pub(super) fn emulator_of(exe: &Path) -> Option<String> {
    let name = exe.file_name()?.to_string_lossy().into_owned();
    let in_valgrind = exe.components().any(|c| c.as_os_str().to_string_lossy().contains("valgrind"));
    const TOOLS: &[&str] =
        &["memcheck", "helgrind", "drd", "cachegrind", "callgrind", "massif", "dhat", "lackey", "none", "exp-bbv"];
    if let Some(tool) = TOOLS.iter().find(|t| name.starts_with(&format!("{t}-")) && name.ends_with("-linux")) {
        if in_valgrind || name.matches('-').count() >= 2 {
            return Some(format!("valgrind ({tool})"));
        }
    }
    if name.starts_with("qemu-") {
        return Some(format!("qemu-user ({name})"));
    }
    for t in ["box64", "box86", "FEXInterpreter", "FEXLoader", "blink"] {
        if name == t {
            return Some(t.to_string());
        }
    }
    None
}

/// The program argument after a launcher's own options in `cmdline`.
pub(super) fn program_arg(argv: &[String], options_with_value: &[&str]) -> Option<String> {
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            return it.next().cloned();
        }
        if a.starts_with('-') {
            if options_with_value.contains(&a.as_str()) {
                it.next();
            }
            continue;
        }
        return Some(a.clone());
    }
    None
}

/// The options of glibc's ld.so that take a value.
const LOADER_OPTIONS: &[&str] =
    &["--library-path", "--preload", "--audit", "--argv0", "--glibc-hwcaps-mask", "--glibc-hwcaps-prepend"];

/// The program ld.so runs: a file mapping that is not the loader and not
/// a library, the one the command line names (`candidate`) if mapped.
fn loaded_program(
    maps: &[crate::inspect::maps::Mapping],
    exe_path: Option<&Path>,
    candidate: Option<&str>,
    in_root: &dyn Fn(&Path) -> PathBuf,
) -> Option<(PathBuf, ExeInfo)> {
    let mapped: Vec<&str> = maps.iter().filter_map(|m| m.path.as_deref()).filter(|p| p.starts_with('/')).collect();
    let mut seen = Vec::new();
    let mut best = None;
    for p in mapped {
        if seen.contains(&p) || Some(Path::new(p)) == exe_path {
            continue;
        }
        seen.push(p);
        let Ok(info) = read_path(&in_root(Path::new(p))) else { continue };
        if info.is_library() || info.debug_only {
            continue;
        }
        let named = candidate.is_some_and(|c| Path::new(p).file_name() == Path::new(c).file_name());
        if best.is_none() || named {
            best = Some((PathBuf::from(p), info));
        }
        if named {
            break;
        }
    }
    best
}

/// Read what really runs in `process`.
pub fn process_runtime(process: &Process) -> Result<ProcessRuntime> {
    let exe = process.exe_file()?;
    let exe_info = read(&exe)?;
    let exe_path = process.exe_path();
    let argv: Vec<String> = process
        .read_file("cmdline")
        .map(|b| {
            b.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
        })
        .unwrap_or_default();
    let maps = process.maps().unwrap_or_default();
    let root = process.proc_path("root");
    let in_root = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
    let mapped_libc = maps.iter().find_map(|m| {
        let name = m.path.as_deref()?;
        let file = Path::new(name).file_name()?.to_string_lossy().into_owned();
        if !(file.starts_with("libc.so") || file.starts_with("libc.musl") || file.starts_with("ld-musl")) {
            return None;
        }
        let info = read_path(&in_root(Path::new(name))).ok()?;
        Some((info.libc, info.libc_version, PathBuf::from(name)))
    });
    // Any other tool that maps no [vdso] but runs another program it has
    // mapped (an emulator vdsoctl does not know by name) is named by its exe.
    let no_vdso = !maps.iter().any(|m| m.name() == "[vdso]");
    let guest = || {
        maps.iter().filter_map(|m| m.path.as_deref()).filter(|p| p.starts_with('/')).find(|p| {
            Some(Path::new(p)) != exe_path.as_deref()
                && read_path(&in_root(Path::new(p))).is_ok_and(|i| !i.is_library() && !i.debug_only)
        })
    };
    let tool = exe_path.as_deref().and_then(emulator_of).or_else(|| {
        let name = exe_path.as_deref()?.file_name()?.to_string_lossy().into_owned();
        (no_vdso && guest().is_some()).then_some(name)
    });
    if let Some(tool) = tool {
        let program = program_arg(&argv, &["--tool", "--log-file", "-L", "-cpu", "-E", "-U"])
            .or_else(|| guest().map(str::to_string));
        return Ok(ProcessRuntime {
            launch: Launch::Emulator { tool, program },
            path: exe_path,
            info: exe_info,
            mapped_libc,
        });
    }
    if exe_info.is_dynamic_linker() {
        let loader = exe_path.clone().unwrap_or_default();
        let candidate = program_arg(&argv, LOADER_OPTIONS);
        let best = loaded_program(&maps, exe_path.as_deref(), candidate.as_deref(), &in_root);
        if let Some((program, mut info)) = best {
            if info.libc_version.is_none() {
                info.libc_version =
                    mapped_libc.as_ref().filter(|(k, _, _)| *k == info.libc).and_then(|(_, v, _)| v.clone());
            }
            return Ok(ProcessRuntime {
                launch: Launch::Loader { loader, program: program.clone() },
                path: Some(program),
                info,
                mapped_libc,
            });
        }
    }
    let mut info = exe_info;
    if info.libc_version.is_none() {
        info.libc_version = mapped_libc.as_ref().filter(|(k, _, _)| *k == info.libc).and_then(|(_, v, _)| v.clone());
    }
    Ok(ProcessRuntime { launch: Launch::Direct, path: exe_path, info, mapped_libc })
}

/// What a process ran, read from its files (`check -- CMD` judges a
/// process's getrandom syscalls by it; the process may be gone by then):
/// its executable `exe` as the trace read it after its last exec (`None`:
/// never seen alive, or unreadable — then `argv[0]` found on PATH), or the
/// program a dynamic linker runs, named in `argv` after the loader's
/// options (`ld.so --library-path DIR PROG`); a dynamic program's C library
/// version from the libc beside its (or that) dynamic linker, as
/// `process_runtime` fills it from the library the process mapped. `None`
/// when unknown (a script's own path: what it runs is only known once it
/// has exec'd).
pub fn command_info(exe: Option<&str>, argv: &[String]) -> Option<ExeInfo> {
    let find = |name: &str| -> Option<PathBuf> {
        let p = Path::new(name);
        if p.components().count() > 1 {
            return Some(p.to_path_buf());
        }
        let dirs = std::env::var_os("PATH")?;
        std::env::split_paths(&dirs).map(|d| d.join(p)).find(|p| p.is_file())
    };
    let seen = exe.map(PathBuf::from).and_then(|p| read_path(&p).ok().map(|info| (p, info)));
    let (first, first_info) = match seen {
        Some(seen) => seen,
        None => {
            let first = find(argv.first()?)?;
            let info = read_path(&first).ok()?;
            (first, info)
        }
    };
    let (loader, mut info) = if first_info.is_dynamic_linker() {
        let program = program_arg(argv, LOADER_OPTIONS)?;
        (first, read_path(&find(&program)?).ok()?)
    } else {
        (PathBuf::from(first_info.interp.clone().unwrap_or_default()), first_info)
    };
    if info.libc_version.is_none() && info.linkage() == Linkage::Dynamic {
        let dir = std::fs::canonicalize(&loader).ok()?.parent()?.to_path_buf();
        let libc = read_path(&dir.join("libc.so.6")).or_else(|_| read_path(&loader)).ok()?;
        info.libc_version = libc.libc_version.filter(|_| libc.libc == info.libc);
    }
    Some(info)
}
