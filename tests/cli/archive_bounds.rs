//! `check --image ARCHIVE` against archives built here byte for byte (the
//! tar crate, flate2): stop signals mid-extraction, names that are not
//! UTF-8, archives of several images, and the memory bound under inputs
//! that claim much (a member of 8 GiB, a million members, a huge manifest,
//! a gzip bomb), read at exit through wait4's ru_maxrss.

use super::common::{run, vdsoctl_path};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A tar header for `name` (raw bytes: any name, `..` too), GNU format (sizes
/// past 8 GiB), mode 0755.
fn header(name: &[u8], kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o755);
    h.set_cksum();
    h
}

/// One regular member; a name past the header's 100 bytes goes before it
/// as GNU tar writes it (a `././@LongLink` entry).
fn append<W: Write>(b: &mut tar::Builder<W>, name: &[u8], data: &[u8]) {
    if name.len() > 100 {
        let long = [name, b"\0"].concat();
        b.append(&header(b"././@LongLink", tar::EntryType::GNULongName, long.len() as u64), &long[..]).unwrap();
    }
    b.append(&header(&name[..name.len().min(100)], tar::EntryType::Regular, data.len() as u64), data).unwrap();
}

/// A layer tar of regular files (name, bytes), ended.
fn layer(files: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        append(&mut b, name, data);
    }
    b.into_inner().unwrap()
}

/// A small ELF program the audit judges (this host's `true`).
fn elf() -> Vec<u8> {
    std::fs::read("/bin/true").unwrap()
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A tar at `out` of regular members (name, bytes), in order.
fn tar_of(out: &Path, members: &[(String, Vec<u8>)]) -> PathBuf {
    let mut b = tar::Builder::new(std::fs::File::create(out).unwrap());
    for (name, data) in members {
        b.append(&header(name.as_bytes(), tar::EntryType::Regular, data.len() as u64), &data[..]).unwrap();
    }
    b.into_inner().unwrap().flush().unwrap();
    out.to_path_buf()
}

/// A docker-archive at `out`: one image per entry of `images`, each a list
/// of layer blobs (stored as `I-L.tar`), in one manifest.json.
fn docker_archive(out: &Path, images: &[Vec<Vec<u8>>]) -> PathBuf {
    let mut b = tar::Builder::new(std::fs::File::create(out).unwrap());
    let mut manifest = Vec::new();
    for (i, layers) in images.iter().enumerate() {
        let mut names = Vec::new();
        for (l, blob) in layers.iter().enumerate() {
            let name = format!("{i}-{l}.tar");
            b.append(&header(name.as_bytes(), tar::EntryType::Regular, blob.len() as u64), &blob[..]).unwrap();
            names.push(name);
        }
        manifest.push(serde_json::json!({"Config": format!("{i}.json"), "RepoTags": [format!("localhost/img{i}:1")], "Layers": names}));
    }
    let text = serde_json::to_vec(&manifest).unwrap();
    b.append(&header(b"manifest.json", tar::EntryType::Regular, text.len() as u64), &text[..]).unwrap();
    b.into_inner().unwrap().flush().unwrap();
    out.to_path_buf()
}

/// A docker-archive of one image whose one layer is the file `layer`.
fn docker_archive_of_file(out: &Path, layer: &Path) -> PathBuf {
    let mut b = tar::Builder::new(std::fs::File::create(out).unwrap());
    let size = std::fs::metadata(layer).unwrap().len();
    b.append(&header(b"0.tar", tar::EntryType::Regular, size), std::fs::File::open(layer).unwrap()).unwrap();
    let text = br#"[{"Config":"0.json","RepoTags":["localhost/big:1"],"Layers":["0.tar"]}]"#;
    b.append(&header(b"manifest.json", tar::EntryType::Regular, text.len() as u64), &text[..]).unwrap();
    b.into_inner().unwrap().flush().unwrap();
    out.to_path_buf()
}

/// A gzip layer that is an ELF program then a member of `gib` GiB of zeros
/// (not ELF: read through, never written), as concatenated gzip members:
/// a few MiB that take seconds to read.
fn bomb_layer(gib: u64) -> Vec<u8> {
    let head = layer(&[(b"usr/bin/first", &elf())]);
    // The layer's end (two zero blocks) is the big member's own zeros.
    let mut start = head[..head.len() - 1024].to_vec();
    start.extend_from_slice(header(b"big", tar::EntryType::Regular, gib << 30).as_bytes());
    let mut out = gz(&start);
    let chunk = gz(&vec![0u8; 16 << 20]);
    for _ in 0..gib * 64 {
        out.extend_from_slice(&chunk);
    }
    out.extend_from_slice(&gz(&[0u8; 1024]));
    out
}

/// The private directories under `tmp` (vdsoctl's TMPDIR) and the bytes in them.
fn left_in(tmp: &Path) -> (usize, u64) {
    let mut dirs = 0;
    let mut bytes = 0;
    let mut stack = vec![tmp.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                dirs += usize::from(d == tmp);
                stack.push(e.path());
            } else {
                bytes += m.len();
            }
        }
    }
    (dirs, bytes)
}

/// Wait (bounded) until `tmp` holds a private directory with a file in it:
/// the marker that the audit is mid-extraction.
fn wait_for_extraction(tmp: &Path, child: &mut std::process::Child) {
    let start = Instant::now();
    loop {
        let (dirs, bytes) = left_in(tmp);
        if dirs == 1 && bytes > 0 {
            return;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("vdsoctl ended before the marker: {st}");
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no private directory appeared in {}", tmp.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Each catchable stop signal sent mid-extraction: the private directory
/// is gone, and the exit status is 128+N. SIGPIPE is ignored (the run goes
/// on; a SIGTERM then ends it the same way).
#[test]
fn a_stop_signal_mid_extraction_removes_the_private_directory() {
    let dir = tempfile::tempdir().unwrap();
    let image = docker_archive(&dir.path().join("big.tar"), &[vec![bomb_layer(8)]]);
    let archive_size = std::fs::metadata(&image).unwrap().len();
    for (sig, name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGQUIT, "QUIT"),
        (libc::SIGPIPE, "PIPE"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Command::new(vdsoctl_path())
            .args(["--json", "check", "--image"])
            .arg(&image)
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_extraction(tmp.path(), &mut child);
        let (_, peak) = left_in(tmp.path());
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let send = |s: i32| nix::sys::signal::kill(pid, nix::sys::signal::Signal::try_from(s).unwrap()).unwrap();
        send(sig);
        let want = if sig == libc::SIGPIPE {
            // Ignored: still running, its directory still there; then TERM.
            std::thread::sleep(Duration::from_millis(200));
            assert!(child.try_wait().unwrap().is_none(), "SIGPIPE ended vdsoctl");
            assert_eq!(left_in(tmp.path()).0, 1, "the directory stays while the audit runs");
            send(libc::SIGTERM);
            128 + libc::SIGTERM
        } else {
            128 + sig
        };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("SIG{name}: {peak} bytes in the private directory at the signal ({archive_size} in the archive)");
        assert_eq!(out.status.code(), Some(want), "SIG{name}: {stderr}");
        assert_eq!(left_in(tmp.path()), (0, 0), "SIG{name} left the private directory");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// `check --image` with `extra` flags: (exit code, JSON report or None, stderr).
fn audit(image: &Path, extra: &[&str]) -> (i32, Option<Value>, String) {
    let mut args = vec!["--json", "check", "--image", image.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run(&args);
    (code, serde_json::from_str(&stdout).ok(), stderr)
}

fn paths(doc: &Value) -> Vec<String> {
    doc["binaries"].as_array().unwrap().iter().map(|b| b["path"].as_str().unwrap().to_string()).collect()
}

/// Exit 2, one line naming each image listed in `names`.
fn assert_asks_for_a_choice(image: &Path, extra: &[&str], names: &[&str]) {
    let (code, doc, stderr) = audit(image, extra);
    assert_eq!(code, 2, "{doc:?} {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    for n in names {
        assert!(stderr.contains(n), "{n:?} in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A docker-archive of two images (built here, each with its config's
/// platform): no choice is a usage error listing both; `--image-index N`
/// and `--platform` each audit the one named, and the report says which.
#[test]
fn a_docker_archive_of_two_images_is_never_a_silent_pick() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = r#"[{"Config":"zero.json","RepoTags":["localhost/zero:1"],"Layers":["zero.tar"]},
                       {"Config":"one.json","RepoTags":["localhost/one:1"],"Layers":["one.tar"]}]"#;
    let path = tar_of(
        &dir.path().join("two.tar"),
        &[
            ("zero.tar".into(), layer(&[(b"usr/bin/zero", &elf())])),
            ("one.tar".into(), layer(&[(b"usr/bin/one", &elf())])),
            ("zero.json".into(), br#"{"os":"linux","architecture":"amd64","rootfs":{}}"#.to_vec()),
            ("one.json".into(), br#"{"os":"linux","architecture":"arm64","variant":"v8"}"#.to_vec()),
            ("manifest.json".into(), manifest.as_bytes().to_vec()),
        ],
    );
    let listed = ["it holds 2 images", "1: localhost/zero:1 (linux/amd64)", "2: localhost/one:1 (linux/arm64/v8)"];
    assert_asks_for_a_choice(&path, &[], &listed);
    assert_asks_for_a_choice(&path, &["--image-index", "3"], &["--image-index 3, but it holds 2 (1 to 2)"]);
    assert_asks_for_a_choice(&path, &["--platform", "linux/s390x"], &["no image for linux/s390x of the 2"]);
    for (extra, want, index) in [
        (&["--image-index", "1"][..], "/usr/bin/zero", 1),
        (&["--image-index", "2"][..], "/usr/bin/one", 2),
        (&["--platform", "linux/arm64"][..], "/usr/bin/one", 2),
        (&["--platform", "linux/amd64"][..], "/usr/bin/zero", 1),
    ] {
        let (code, doc, stderr) = audit(&path, extra);
        let doc = doc.unwrap_or_else(|| panic!("{extra:?}: {stderr}"));
        assert_eq!(code, 0, "{extra:?}: {doc}");
        assert_eq!(paths(&doc), [want], "{extra:?}");
        assert_eq!(doc["image"]["selected"]["index"], index, "{extra:?}");
        assert_eq!(doc["image"]["selected"]["of"], 2, "{extra:?}");
    }
    // A usage error before any work: a platform that is none.
    let (code, _, stderr) = audit(&path, &["--platform", "amd64"]);
    assert_eq!(code, 2, "{stderr}");
}

/// An OCI archive whose index names two manifests, two platforms: a usage
/// error listing both without a choice; `--platform` picks one.
#[test]
fn an_oci_index_of_two_platforms_asks_which() {
    let dir = tempfile::tempdir().unwrap();
    let hex = |c: char| c.to_string().repeat(64);
    let mut members: Vec<(String, Vec<u8>)> =
        vec![("oci-layout".into(), br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec())];
    let mut add = |name: String, data: Vec<u8>| members.push((name, data));
    let mut index = Vec::new();
    for (c, l, arch, file) in [('a', 'c', "amd64", "usr/bin/amd"), ('b', 'd', "arm64", "usr/bin/arm")] {
        add(format!("blobs/sha256/{}", hex(l)), gz(&layer(&[(file.as_bytes(), &elf())])));
        let manifest = serde_json::json!({"schemaVersion": 2, "layers": [{"digest": format!("sha256:{}", hex(l))}]});
        add(format!("blobs/sha256/{}", hex(c)), manifest.to_string().into_bytes());
        index.push(serde_json::json!({
            "digest": format!("sha256:{}", hex(c)),
            "platform": {"os": "linux", "architecture": arch},
            "annotations": {"org.opencontainers.image.ref.name": format!("app-{arch}")},
        }));
    }
    // buildx's attestation manifest: no image, not counted.
    index.push(serde_json::json!({"digest": format!("sha256:{}", hex('e')), "platform": {"os": "unknown", "architecture": "unknown"},
        "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}));
    add("index.json".into(), serde_json::json!({"schemaVersion": 2, "manifests": index}).to_string().into_bytes());
    let path = tar_of(&dir.path().join("oci.tar"), &members);
    assert_asks_for_a_choice(
        &path,
        &[],
        &["it holds 2 images", "1: app-amd64 (linux/amd64)", "2: app-arm64 (linux/arm64)"],
    );
    let (code, doc, stderr) = audit(&path, &["--platform", "linux/arm64"]);
    let doc = doc.unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(code, 0, "{doc}");
    assert_eq!(paths(&doc), ["/usr/bin/arm"]);
    assert_eq!(doc["image"]["format"], "oci-archive");
    assert_eq!(doc["image"]["selected"]["platform"], "linux/arm64");
    assert_eq!(doc["image"]["selected"]["name"], "app-arm64");
}

/// `podman save -m` of two images: the same choice, on the archive podman
/// writes.
#[test]
fn podman_save_of_two_images_audits_the_one_named() {
    let Some(podman) = super::common::Podman::new() else {
        assert!(std::env::var_os("CI").is_none(), "CI needs podman and root for the image archive tests");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut tags = Vec::new();
    for name in ["zero", "one"] {
        let rootfs = dir.path().join(format!("{name}.rootfs.tar"));
        std::fs::write(&rootfs, layer(&[(format!("usr/bin/{name}").as_bytes(), &elf())])).unwrap();
        let tag = format!("localhost/vdsoctl-test-two-{name}:1");
        podman.ok(&["import", "-q", rootfs.to_str().unwrap(), &tag]);
        tags.push(tag);
    }
    let saved = dir.path().join("two.docker.tar");
    podman.ok(&["save", "-q", "-m", "--format", "docker-archive", "-o", saved.to_str().unwrap(), &tags[0], &tags[1]]);
    assert_asks_for_a_choice(
        &saved,
        &[],
        &["it holds 2 images", &format!("1: {}", tags[0]), &format!("2: {}", tags[1])],
    );
    for (i, name) in [(1, "zero"), (2, "one")] {
        let (code, doc, stderr) = audit(&saved, &["--image-index", &i.to_string()]);
        let doc = doc.unwrap_or_else(|| panic!("{stderr}"));
        assert_eq!(code, 0, "{doc}");
        assert_eq!(paths(&doc), [format!("/usr/bin/{name}")]);
        assert_eq!(doc["image"]["selected"]["name"], tags[i - 1].as_str());
    }
}

/// Member names as the bytes they are: `bin/\xff` (a raw clock caller)
/// and `bin/\xfe` (clean) stay two files, each judged; `usr/bin/caf\xe9`
/// is audited; each is printed escaped (`\xNN`, as every name vdsoctl did
/// not choose), in JSON and the table alike, and a refused name too.
#[test]
fn member_names_that_are_not_utf8_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let raw = std::fs::read(super::common::build_c("hoisted", false, &["-DASM_LOOP"])).unwrap();
    let clean = elf();
    let blob =
        layer(&[(b"bin/\xff", &raw), (b"bin/\xfe", &clean), (b"usr/bin/caf\xe9", &clean), (b"../caf\xe9", &clean)]);
    let image = docker_archive(&dir.path().join("bytes.tar"), &[vec![blob]]);
    let (code, doc, stderr) = audit(&image, &[]);
    let doc = doc.unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(code, 1, "{doc}");
    let mut all = paths(&doc);
    all.sort();
    assert_eq!(all, ["/bin/\\xfe", "/bin/\\xff", "/usr/bin/caf\\xe9"]);
    let status = |p: &str| {
        let b = doc["binaries"].as_array().unwrap().iter().find(|b| b["path"] == p).unwrap();
        (b["status"].as_str().unwrap().to_string(), b["verdict_kind"].as_str().unwrap().to_string())
    };
    assert_eq!(status("/bin/\\xff"), ("fail".into(), "raw-clock-call-site".into()));
    assert_eq!(status("/bin/\\xfe").0, "ok");
    assert_eq!(status("/usr/bin/caf\\xe9").0, "ok");
    assert_eq!(doc["image"]["unreadable"][0][0], "../caf\\xe9", "{}", doc["image"]);
    let (_, table, _) = run(&["check", "--image", image.to_str().unwrap()]);
    // (OK files of one verdict are grouped in the table: the FAIL is named.)
    for name in ["FAIL    /bin/\\xff ", "unreadable: ../caf\\xe9"] {
        assert!(table.contains(name), "{name} in {table}");
    }
}

/// `vdsoctl ARGS` run to its end: (exit code, peak RSS in KiB from wait4's
/// ru_maxrss, which is VmHWM at exit).
fn peak_kib(args: &[&std::ffi::OsStr]) -> Option<(i32, u64)> {
    let script = "import os, subprocess, sys\n\
                  p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
                  _, st, ru = os.wait4(p.pid, 0)\n\
                  print(os.waitstatus_to_exitcode(st), ru.ru_maxrss)\n";
    let out = Command::new("python3").arg("-c").arg(script).arg(vdsoctl_path()).args(args).output();
    let Ok(out) = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()) else {
        super::common::skip("python3 (for os.wait4) is missing: peak memory not read");
        return None;
    };
    let mut it = out.split_whitespace().map(|w| w.parse::<i64>().unwrap());
    Some((it.next().unwrap() as i32, it.next().unwrap() as u64))
}

/// Inputs that claim much hold little: a gzip bomb with a 1 GiB member,
/// a layer of a million members, an archive of a million members, a
/// manifest at the 1 MiB bound and one past it, 10,000 names too long to
/// create. Each run's peak RSS (VmHWM at exit, wait4's ru_maxrss) stays
/// within the design's bound over the same binary's peak on a one-file
/// image (a debug build maps more of itself than a release one does).
#[test]
fn memory_stays_bounded_whatever_the_archive_claims() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let check = |image: &Path| {
        let tmp = tempfile::tempdir().unwrap();
        let args: Vec<&std::ffi::OsStr> =
            vec!["--json".as_ref(), "check".as_ref(), "--image".as_ref(), image.as_os_str()];
        let got = peak_kib(&args);
        assert_eq!(left_in(tmp.path()), (0, 0));
        got
    };
    let built = Instant::now();
    let one = docker_archive(&d.join("one.tar"), &[vec![layer(&[(b"usr/bin/one", &elf())])]]);
    let Some((code, base)) = check(&one) else { return };
    assert_eq!(code, 0);
    // A layer of a million empty members, beside one ELF file (not
    // compressed: a debug build's inflate would take the time).
    let million_layer = d.join("million.layer");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&million_layer).unwrap());
    let one_file = layer(&[(b"usr/bin/one", &elf())]);
    w.write_all(&one_file[..one_file.len() - 1024]).unwrap();
    for i in 0..1_000_000u32 {
        w.write_all(header(format!("d/{}/{i}", i % 1000).as_bytes(), tar::EntryType::Regular, 0).as_bytes()).unwrap();
    }
    w.write_all(&[0u8; 1024]).unwrap();
    drop(w);
    let million = docker_archive_of_file(&d.join("million-in-layer.tar"), &million_layer);
    std::fs::remove_file(&million_layer).unwrap();
    // 10,000 ELF members whose names are too long to create (4,000 bytes).
    let long: Vec<Vec<u8>> = (0..10_000).map(|i| format!("{i:05}/{}", "n".repeat(3994)).into_bytes()).collect();
    let (small, stub) = (elf(), [&b"\x7fELF"[..], &[0u8; 60]].concat());
    let mut files: Vec<(&[u8], &[u8])> = vec![(b"usr/bin/one", &small[..])];
    files.extend(long.iter().map(|n| (&n[..], &stub[..])));
    let long_names = docker_archive(&d.join("long-names.tar"), &[vec![layer(&files)]]);
    // Manifests: 256 layer names of 4,000 bytes (within 1 MiB), a million
    // one-letter layers, and 64 MiB of one JSON string.
    let manifest = |name: &str, text: Vec<u8>| tar_of(&d.join(name), &[("manifest.json".into(), text)]);
    let wide: Vec<String> = (0..256).map(|i| format!("{i:03}{}", "l".repeat(3997))).collect();
    let wide = manifest("wide.tar", serde_json::to_vec(&serde_json::json!([{"Layers": wide}])).unwrap());
    let many = manifest("many.tar", serde_json::to_vec(&serde_json::json!([{"Layers": vec!["a"; 1 << 20]}])).unwrap());
    let huge = manifest("huge.tar", [&b"[{\"Layers\":[\""[..], &vec![b'x'; 64 << 20], b"\"]}]"].concat());
    eprintln!("built in {:.1?}", built.elapsed());
    let cases = [
        ("a gzip bomb with a 1 GiB member", docker_archive(&d.join("bomb.tar"), &[vec![bomb_layer(1)]]), 0),
        ("a layer of 1,000,000 members", million, 0),
        ("10,000 names too long to write", long_names, 0),
        ("a manifest of 256 layer names of 4,000 bytes", wide, 3),
        ("a manifest of 1,048,576 layers", many, 3),
        ("a manifest of 64 MiB", huge, 3),
    ];
    for (what, image, want) in cases {
        let t = Instant::now();
        let (code, peak) = check(&image).unwrap();
        let took = t.elapsed();
        eprintln!(
            "{what}: peak {peak} KiB, {base} KiB for one file ({} KiB more; {took:.1?})",
            peak.saturating_sub(base)
        );
        assert_eq!(code, want, "{what}");
        assert!(peak <= base + 4 * 1024, "{what}: peak {peak} KiB against {base} KiB for one file");
    }
}

/// A 4,000-byte path (16 parts of 249 bytes, a raw clock caller: a FAIL
/// row of its own) and a refused name past NAME_MAX: the table at 80
/// columns keeps its rows within them, the path cut around `…` with its
/// start and its file name; JSON keeps it whole.
#[test]
fn a_long_path_is_cut_in_the_table_and_whole_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let raw = std::fs::read(super::common::build_c("hoisted", false, &["-DASM_LOOP"])).unwrap();
    let parts: Vec<String> = (0..16).map(|i| format!("{i:02}{}", "p".repeat(247))).collect();
    let long = format!("{}/tail_name", parts.join("/"));
    assert!(long.len() > 4000 && long.len() < 4096, "{}", long.len());
    let refused = format!("x/{}", "q".repeat(300));
    let blob = layer(&[(long.as_bytes(), &raw), (b"usr/bin/true", &elf()), (refused.as_bytes(), &elf())]);
    let image = docker_archive(&dir.path().join("long.tar"), &[vec![blob]]);
    let (code, doc, stderr) = audit(&image, &[]);
    let doc = doc.unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(code, 1, "{doc}");
    let whole = format!("/{long}");
    assert!(paths(&doc).contains(&whole), "JSON keeps the path whole");
    assert_eq!(doc["image"]["unreadable_count"], 1);
    let out = Command::new(vdsoctl_path())
        .args(["check", "--image"])
        .arg(&image)
        .env("COLUMNS", "80")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // The binaries' table: its head, rule, rows and the details under them
    // (the hint lines after it are prose, the summary a line each).
    let table: Vec<&str> = text
        .lines()
        .take_while(|l| ["STATUS", "─", "FAIL  ", "OK  ", "   "].iter().any(|p| l.starts_with(p)))
        .collect();
    assert!(table.len() >= 4, "{text}");
    for line in &table {
        assert!(line.chars().count() <= 80, "{} columns: {line:?}\n{text}", line.chars().count());
    }
    let cut = format!("/00{}…", "p".repeat(8));
    let row = table.iter().find(|l| l.starts_with("FAIL")).unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(&cut) && row.contains("/tail_name  "), "{row}");
    for line in text.lines() {
        assert!(line.chars().count() < 400, "{} columns: {line:?}", line.chars().count());
    }
}
