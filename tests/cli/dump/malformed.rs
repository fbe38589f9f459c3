//! `dump` of malformed images and files that are no images: one line, exit 3,
//! or a finding where binutils decodes on.

use super::*;

#[test]
fn malformed_images_exit_3_with_one_line() {
    let good = std::fs::read(fixture("x86_64.so")).unwrap();
    let shoff = 0x1600usize;
    assert_eq!(u64::from_le_bytes(good[40..48].try_into().unwrap()), shoff as u64, "fixture layout changed");

    assert_malformed("truncated-100", &good[..100], "runs past the end of the 100-byte image");
    assert_malformed("truncated-header", &good[..40], "truncated: 40 bytes, an ELF header needs 64");
    assert_malformed("empty", &[], "the image is empty");
    assert_malformed("not-elf", b"#!/bin/sh\necho not an elf\n", "not an ELF file");

    let mut b = good.clone();
    le_u16(&mut b, 60, 0xffff); // e_shnum
    assert_malformed("shnum", &b, "section header table (65535 entries");

    let mut b = good.clone();
    le_u16(&mut b, 56, 0xffff); // e_phnum
    assert_malformed("phnum", &b, "program header table (65535 entries");

    let mut b = good.clone();
    le_u16(&mut b, 62, 200); // e_shstrndx
    assert_malformed("shstrndx", &b, "e_shstrndx 200 names no section");

    let mut b = good.clone();
    le_u64(&mut b, shoff + 3 * 64 + 24, 0x7fff_ffff_0000); // .dynsym sh_offset
    assert_malformed("dynsym-offset", &b, "section 3 (offset 0x7fffffff0000");

    let mut b = good.clone();
    le_u64(&mut b, shoff + 3 * 64 + 32, 1 << 40); // .dynsym sh_size
    assert_malformed("dynsym-size", &b, "section 3");

    let mut b = good.clone();
    assert_eq!(b[0x440 + 5 * 16], 5, "DT_STRTAB expected at .dynamic[5]");
    b[0x440 + 5 * 16] = 21; // DT_STRTAB -> DT_DEBUG: no string table
    assert_malformed("no-strtab", &b, "no DT_STRTAB/DT_STRSZ");

    let mut b = good.clone();
    le_u32(&mut b, shoff + 3 * 64 + 40, 9); // .dynsym sh_link -> .rodata
    assert_malformed("dynsym-link", &b, ".dynsym's sh_link 9 is not a string table");

    // .gnu.version_d at 0x408: entry 1 (0x424) points back to entry 0, and
    // sh_info claims a third entry so the walk would go round.
    let mut b = good.clone();
    le_u32(&mut b, shoff + 6 * 64 + 44, 3);
    le_u32(&mut b, 0x424 + 16, 0u32.wrapping_sub(0x1c));
    assert_malformed("verdef-cycle", &b, "version definition chain loops");
}

#[test]
fn files_that_are_not_images_are_refused() {
    assert_refused("/dev/zero", "/dev/zero is a character device, not a vDSO image file");
    let dir = tmp("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    assert_refused(dir.to_str().unwrap(), "is a directory");
    assert_refused("/nonexistent/vdso.so", "cannot read /nonexistent/vdso.so");

    let sparse = tmp("sparse-1g.so");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    assert_refused(sparse.to_str().unwrap(), "is 1 GiB, more than the 4 MiB limit");
    std::fs::remove_file(&sparse).unwrap();
}

/// Index of the first section of type `sh_type` in an ELF64 LE image.
fn section_of_type(b: &[u8], sh_type: u32) -> usize {
    let shnum = u16::from_le_bytes(b[60..62].try_into().unwrap()) as usize;
    (0..shnum).find(|&i| u32::from_le_bytes(b[shdr64(b, i, 4)..][..4].try_into().unwrap()) == sh_type).unwrap()
}

/// Output of a binutils tool with its stderr, or None when it is not installed.
fn tool_with_stderr(prog: &str, args: &[&str], file: &Path) -> Option<(String, String)> {
    let out = Command::new(prog).args(args).arg(file).env("LC_ALL", "C").output().ok()?;
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

#[test]
fn note_with_bad_sizes_ends_its_area_with_a_finding() {
    let mut b = std::fs::read(fixture("x86_64.so")).unwrap();
    // .note at 0x5a8: "Linux" type 0 (24 bytes), then the build salt at 0x5c0.
    assert_eq!(u32::from_le_bytes(b[0x5c0..0x5c4].try_into().unwrap()), 6, "fixture layout changed");
    le_u32(&mut b, 0x5c0, 0xffff_fff0);
    let path = tmp("note-bad-size.so");
    std::fs::write(&path, &b).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    let notes = json["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["description"], "6.18.44");
    let f = json["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0]["kind"].as_str(), f[0]["severity"].as_str()), (Some("elf-malformed"), Some("warn")), "{f:?}");
    // The note's offset and sizes.
    let issue = &f[0]["issue"];
    assert_eq!(
        *issue,
        serde_json::json!({"what": "note_truncated", "offset": "0x5c0", "namesz": 0xfffffff0_u32, "descsz": 0x1e}),
        "{f:?}"
    );
    if let Some((out, err)) = tool_with_stderr("readelf", &["-n"], &path) {
        assert!(err.contains("note with invalid namesz and/or descsz"), "{err}");
        assert_eq!(parse_readelf_n(&out).len(), 1, "{out}");
    }
}

#[test]
fn misaligned_note_area_is_decoded_and_flagged_as_readelf_rejects_it() {
    let mut b = std::fs::read(fixture("aarch64.so")).unwrap();
    let note = section_of_type(&b, 7);
    sh64(&mut b, note, 48, 16);
    let off = u64::from_le_bytes(b[shdr64(&b, note, 24)..][..8].try_into().unwrap());
    let path = tmp("note-align-16.so");
    std::fs::write(&path, &b).unwrap();
    let json = run_json(&["dump", "--file", path.to_str().unwrap()]);
    let names: Vec<&str> = json["notes"].as_array().unwrap().iter().map(|n| n["type_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["NT_GNU_BUILD_ID", "LINUX_VERSION_CODE", "LINUX_ELFNOTE_BUILD_SALT"]);
    assert_eq!(json["notes"][1]["description"], "6.1.170");
    let f = json["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        f[0]["message"].as_str().unwrap(),
        format!("the note area at offset {off:#x} has alignment 16: readelf rejects it whole (\"Corrupt note: alignment 16, expecting 4 or 8\"); its notes are decoded here as 4-byte aligned")
    );
    if let Some((out, err)) = tool_with_stderr("readelf", &["-n"], &path) {
        assert!(err.contains("Corrupt note: alignment 16, expecting 4 or 8"), "{err}");
        assert!(!out.contains("Build ID"), "{out}");
    }
}

#[test]
fn pipes_and_pseudo_files_are_refused_without_reading() {
    let fifo = tmp("a-fifo");
    let _ = std::fs::remove_file(&fifo);
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Nobody writes to it: a read would block forever.
    assert_refused(
        fifo.to_str().unwrap(),
        "is a FIFO (its length is unknown and a read may never end), not a vDSO image file",
    );
    std::fs::remove_file(&fifo).unwrap();
    assert_refused("/proc/self/status", "/proc/self/status is a procfs pseudo-file");
    for pipe in ["/sys/kernel/tracing/trace_pipe", "/sys/kernel/debug/tracing/trace_pipe"] {
        if Path::new(pipe).exists() {
            assert_refused(pipe, "is a tracefs pseudo-file (its size says nothing and a read may never end)");
        }
    }
}
