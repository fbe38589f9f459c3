use super::*;
use std::process::Command;

fn own() -> (Snapshot, Objects) {
    let mut objects = Objects::default();
    let snap = Snapshot::of(std::process::id() as i32, &mut objects).expect("own snapshot");
    (snap, objects)
}

#[inline(never)]
fn a_function_of_this_test() -> u64 {
    std::hint::black_box(42)
}

#[test]
fn a_libc_function_resolves_to_libc_and_its_name() {
    let (snap, mut objects) = own();
    let addr = libc::clock_gettime as *const () as usize as u64;
    let f = snap.resolve(addr + 4, &mut objects);
    assert_eq!(f.kind, FrameKind::Object);
    if cfg!(target_feature = "crt-static") {
        // Linked in (the static build run in the arm64 guest): the program's
        // own, named as the program's symbol table has it (glibc's
        // clock_gettime is an alias of __clock_gettime there).
        assert!(f.program && f.symbol.as_deref().is_some_and(|s| s.ends_with("clock_gettime")), "{f:?}");
    } else {
        assert!(f.object_name().is_some_and(|o| o.starts_with("libc")), "{f:?}");
        assert_eq!(f.symbol.as_deref(), Some("clock_gettime"), "{f:?}");
        assert!(!f.program);
    }
    assert_eq!(f.offset, 4);
    // The same object is opened once, however many addresses.
    let n = objects.len();
    let g = snap.resolve(libc::syscall as *const () as usize as u64, &mut objects);
    assert_eq!((g.symbol.as_deref(), g.offset), (Some("syscall"), 0), "{g:?}");
    assert_eq!(objects.len(), n);
}

#[test]
fn the_program_itself_is_marked_and_named() {
    let (snap, mut objects) = own();
    let f = snap.resolve(a_function_of_this_test as *const () as usize as u64, &mut objects);
    assert!(f.program, "{f:?}");
    assert!(f.symbol.as_deref().is_some_and(|s| s.contains("a_function_of_this_test")), "{f:?}");
    assert_eq!(f.offset, 0);
    assert_eq!(a_function_of_this_test(), 42);
}

#[test]
fn the_vdso_is_read_from_memory_and_named() {
    let (snap, mut objects) = own();
    let base = vdso_start();
    let vdso = snap.vdso.clone().expect("[vdso] parsed");
    // The architecture's name for it: __vdso_clock_gettime, arm64's __kernel_clock_gettime.
    let name =
        crate::arch::vdso_symbol(crate::arch::HOST_MACHINE, crate::arch::HOST_IS_64, crate::arch::VdsoFn::ClockGettime)
            .expect("this architecture's vDSO has clock_gettime");
    let f = vdso.functions.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{name}"));
    let frame = snap.resolve(base + f.start + 3, &mut objects);
    assert_eq!(frame.kind, FrameKind::Vdso);
    assert_eq!((frame.symbol.as_deref(), frame.offset), (Some(name), 3), "{frame:?}");
    assert_eq!(frame.object.as_deref(), Some("[vdso]"));
}

/// The [vdso]'s start, from our own maps.
fn vdso_start() -> u64 {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let line = maps.lines().find(|l| l.ends_with("[vdso]")).expect("[vdso] mapped");
    u64::from_str_radix(line.split('-').next().unwrap(), 16).unwrap()
}

#[test]
fn anonymous_and_unmapped_addresses_say_so() {
    let (snap, mut objects) = own();
    assert_eq!(snap.resolve(8, &mut objects), Frame::unmapped(8));
    // Executable memory no file backs (what a JIT maps), as /proc shows it.
    let process = Process::open(None).unwrap();
    let jit = crate::inspect::maps::parse_line("7f0000000000-7f0000001000 r-xp 00000000 00:00 0").unwrap();
    let snap = Snapshot::from_maps(&process, &[jit], &mut objects);
    let f = snap.resolve(0x7f00_0000_0010, &mut objects);
    assert_eq!((f.kind, f.offset, f.symbol), (FrameKind::Anonymous, 16, None));
    assert_eq!(snap.resolve(0x7f00_0000_1000, &mut objects).kind, FrameKind::Unmapped, "past its end");
}

/// A process that exits while its mappings are read leaves its files
/// unopened: that is no verdict on the file. The next process mapping it
/// names its functions (a churn of one program under `trace -a --sites`
/// named no caller once the first run raced its exit).
#[test]
fn a_file_that_would_not_open_is_opened_by_the_next_process_mapping_it() {
    use std::os::unix::fs::MetadataExt;
    let process = Process::open(None).unwrap();
    let exe = std::fs::metadata("/proc/self/exe").unwrap().ino();
    let maps = process.maps().unwrap();
    let text = maps.iter().find(|m| m.executable() && m.inode == exe).expect("the test's own text mapped");
    // As a process gone mid-read leaves it: no map_files entry, no path.
    let gone = Mapping { start: 0x1000, end: 0x2000, path: Some("/nonexistent/vdsoctl-gone".into()), ..text.clone() };
    let mut objects = Objects::default();
    let first = Snapshot::from_maps(&process, &[gone], &mut objects);
    let f = first.resolve(0x1010, &mut objects);
    assert_eq!((f.object.as_deref(), f.symbol.as_deref()), (Some("/nonexistent/vdsoctl-gone"), None), "{f:?}");
    assert!(!objects.knows(&text.dev, text.inode), "a file never opened is not held");
    let snap = Snapshot::of(std::process::id() as i32, &mut objects).unwrap();
    let f = snap.resolve(a_function_of_this_test as *const () as usize as u64, &mut objects);
    assert!(f.symbol.as_deref().is_some_and(|s| s.contains("a_function_of_this_test")), "{f:?}");
}

fn tool(cmd: &mut Command) -> bool {
    cmd.status().is_ok_and(|s| s.success())
}

/// A C function in a stripped binary whose `.gnu_debugdata` holds an
/// xz-compressed `.symtab` (the MiniDebugInfo recipe of gdb's manual):
/// named, and at the address `nm` gives for it in the unstripped build.
#[test]
fn minidebuginfo_names_what_strip_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    std::fs::write(d("m.c"), "int hidden_worker(int x) { return x * 3 + 1; }\nint main(int c, char **v) { (void)v; return hidden_worker(c); }\n").unwrap();
    let ci = std::env::var_os("CI").is_some();
    if !tool(Command::new("gcc").args(["-O1", "-o"]).arg(d("m")).arg(d("m.c"))) {
        assert!(!ci, "gcc is required in CI");
        return eprintln!("SKIP: no gcc");
    }
    let nm = Command::new("nm").arg(d("m")).output().unwrap();
    let nm = String::from_utf8_lossy(&nm.stdout);
    let line = nm.lines().find(|l| l.ends_with(" hidden_worker")).expect("nm names it");
    let at = u64::from_str_radix(line.split(' ').next().unwrap(), 16).unwrap();
    let steps = [
        vec!["objcopy", "--only-keep-debug", "m", "m.debug"],
        vec![
            "objcopy",
            "-S",
            "--remove-section",
            ".gdb_index",
            "--remove-section",
            ".comment",
            "--keep-symbol=hidden_worker",
            "m.debug",
            "mini",
        ],
        vec!["xz", "-f", "mini"],
        vec!["strip", "--strip-all", "m"],
        vec!["objcopy", "--add-section", ".gnu_debugdata=mini.xz", "m"],
    ];
    for s in steps {
        if !tool(Command::new(s[0]).args(&s[1..]).current_dir(dir.path())) {
            assert!(!ci, "{s:?} failed: binutils and xz-utils are required in CI");
            return eprintln!("SKIP: {s:?} failed");
        }
    }
    let file = File::open(d("m")).unwrap();
    let syms = object_symbols(&file).unwrap();
    assert!(!syms.tables.symtab && syms.tables.debugdata, "{:?}", syms.tables);
    let (f, off) = syms.function_at(at + 2).expect("hidden_worker from MiniDebugInfo");
    assert_eq!((f.name.as_str(), off), ("hidden_worker", 2));
    assert!(syms.build_id.as_ref().is_some_and(|b| b.len() == 40), "{:?}", syms.build_id);
}

#[test]
fn bad_bytes_are_an_error_or_fewer_symbols_never_a_panic() {
    assert!(object_symbols(&b"not elf"[..]).is_err());
    let own = std::fs::read("/proc/self/exe").unwrap();
    for cut in [16usize, 64, 100, 4096, own.len() / 2] {
        let _ = object_symbols(&own[..cut.min(own.len())]);
    }
    let mut flipped = own[..own.len().min(1 << 20)].to_vec();
    for i in (64..flipped.len()).step_by(97) {
        flipped[i] ^= 0x5a;
    }
    let _ = object_symbols(&flipped[..]);
}

/// Rust (legacy and v0) and C++ names come out as their source names
/// them, as `c++filt` and `perf report` show them; C names and names that
/// do not decode stay as they are.
#[test]
fn names_are_demangled_as_cxxfilt_does() {
    use super::demangle;
    assert_eq!(
        demangle("_ZN7vdsoctl7measure5bench7Callers12repeat_clock17h0123456789abcdefE"),
        "vdsoctl::measure::bench::Callers::repeat_clock"
    );
    assert_eq!(demangle("_RNvCs1234_7mycrate4main"), "mycrate::main");
    assert_eq!(demangle("_ZN5space3fooEibc"), "space::foo(int, bool, char)");
    assert_eq!(
        demangle("_ZNSt6vectorIiSaIiEE9push_backEOi"),
        "std::vector<int, std::allocator<int> >::push_back(int&&)"
    );
    for plain in ["clock_gettime", "main", "runtime.nanotime1", "_Z", "_ZZZ not a name", ""] {
        assert_eq!(demangle(plain), plain);
    }
}
