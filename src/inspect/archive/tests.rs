//! Archives built here, byte for byte: layers with whiteouts, hostile
//! names and links, layers that are no tar, compressed layers.

use super::*;
use std::io::Write;

/// A fake ELF file: the magic, then zeros (the layer code writes it; the
/// walk is not run here).
fn elf() -> Vec<u8> {
    let mut b = b"\x7fELF".to_vec();
    b.resize(64, 0);
    b
}

enum E<'a> {
    File(&'a str, Vec<u8>),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
}

/// A header whose name is written raw (tar::Builder refuses `..`).
fn header(name: &str, kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_old();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o755);
    h
}

fn layer(entries: &[E<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        match e {
            E::File(n, data) => {
                let mut h = header(n, tar::EntryType::Regular, data.len() as u64);
                h.set_cksum();
                b.append(&h, &data[..]).unwrap();
            }
            E::Dir(n) => {
                let mut h = header(n, tar::EntryType::Directory, 0);
                h.set_cksum();
                b.append(&h, std::io::empty()).unwrap();
            }
            E::Symlink(n, t) | E::HardLink(n, t) => {
                let kind = if matches!(e, E::Symlink(..)) { tar::EntryType::Symlink } else { tar::EntryType::Link };
                let mut h = header(n, kind, 0);
                h.as_old_mut().linkname[..t.len()].copy_from_slice(t.as_bytes());
                h.set_cksum();
                b.append(&h, std::io::empty()).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

/// A docker-archive holding `layers` (as `N/layer.tar`) and a manifest
/// naming `names` (the layers' own names when None).
fn docker_archive(dir: &Path, layers: &[Vec<u8>], names: Option<Vec<String>>) -> PathBuf {
    let names = names.unwrap_or_else(|| (0..layers.len()).map(|i| format!("{i}/layer.tar")).collect());
    let manifest = serde_json::json!([{ "Config": "c.json", "RepoTags": ["x:1"], "Layers": names }]);
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |name: &str, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, name, data).unwrap();
    };
    for (i, l) in layers.iter().enumerate() {
        add(&format!("{i}/layer.tar"), l);
    }
    add("manifest.json", manifest.to_string().as_bytes());
    let path = dir.join("image.tar");
    std::fs::write(&path, b.into_inner().unwrap()).unwrap();
    path
}

fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            assert!(m.is_dir() || m.is_file(), "only directories and files: {:?}", e.path());
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn layers_apply_in_order_with_whiteouts() {
    let dir = tempfile::tempdir().unwrap();
    let lower = layer(&[
        E::Dir("usr/"),
        E::File("usr/bin/a", elf()),
        E::File("usr/bin/b", elf()),
        E::File("opt/x/c", elf()),
        E::File("etc/d", elf()),
        E::File("etc/notelf", vec![b'#'; 100]),
        E::Dir("gone/"),
        E::File("gone/e", elf()),
    ]);
    let upper = layer(&[
        E::File("usr/bin/.wh.a", Vec::new()),
        // The layer's own entry is spared by its opaque whiteout.
        E::File("opt/x/new", elf()),
        E::File("opt/x/.wh..wh..opq", Vec::new()),
        // A link over a lower ELF file hides it; nothing is written for it.
        E::Symlink("etc/d", "/etc/passwd"),
        E::File(".wh.gone", Vec::new()),
        E::HardLink("usr/bin/b2", "usr/bin/b"),
    ]);
    // gzip for the upper layer, zstd for a third: told by content.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&upper).unwrap();
    let third = layer(&[E::File("srv/z", elf())]);
    let zst = ruzstd::encoding::compress_to_vec(&third[..], ruzstd::encoding::CompressionLevel::Fastest);
    let path = docker_archive(dir.path(), &[lower, gz.finish().unwrap(), zst], None);
    let opened = open(&path, &Select::default()).unwrap();
    assert_eq!(opened.kind, Kind::DockerArchive);
    assert_eq!(opened.layers, 3);
    assert!(opened.refused.is_empty(), "{:?}", opened.refused);
    assert_eq!(tree(&opened.root), ["opt/x/new", "srv/z", "usr/bin/b", "usr/bin/b2"]);
    let root = opened.root.clone();
    drop(opened);
    assert!(!root.exists(), "the private directory goes with the audit");
}

#[test]
fn hostile_names_and_links_are_refused_and_nothing_leaves_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let evil = layer(&[
        E::File("../evil", elf()),
        E::File("/abs-evil", elf()),
        E::File("a/../../evil2", elf()),
        // A link out, then a file "through" it: the link is never made,
        // so the file lands in a real directory inside.
        E::Symlink("out", dir.path().to_str().unwrap()),
        E::File("out/through", elf()),
        E::HardLink("hl", "../../etc/passwd"),
        E::File("ok", elf()),
    ]);
    let path = docker_archive(dir.path(), &[evil], None);
    let opened = open(&path, &Select::default()).unwrap();
    assert_eq!(tree(&opened.root), ["ok", "out/through"]);
    let refused: Vec<String> = opened.refused.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(refused.len(), 4, "{refused:?}");
    assert!(refused[0].starts_with("../evil: a name with `..`"), "{refused:?}");
    assert!(refused[1].starts_with("/abs-evil: an absolute name"), "{refused:?}");
    assert!(refused[3].starts_with("/hl: a hard link to a name with `..`"), "{refused:?}");
    assert!(refused[3].ends_with("(in layer 1 (0/layer.tar))"), "{refused:?}");
    let mut beside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    beside.sort();
    assert_eq!(beside, ["image.tar"], "nothing written beside the archive");
    for name in ["evil", "evil2", "abs-evil", "through"] {
        assert!(!dir.path().parent().unwrap().join(name).exists());
    }
}

#[test]
fn a_layer_that_is_no_tar_is_listed_and_the_others_applied() {
    let dir = tempfile::tempdir().unwrap();
    let junk = b"this is no tar archive at all ".repeat(40);
    let good = layer(&[E::File("usr/bin/a", elf())]);
    let path = docker_archive(dir.path(), &[good, junk], None);
    let opened = open(&path, &Select::default()).unwrap();
    assert_eq!(tree(&opened.root), ["usr/bin/a"]);
    assert_eq!(opened.refused.len(), 1, "{:?}", opened.refused);
    assert_eq!(opened.refused.first().unwrap().0, PathBuf::from("layer 2 (1/layer.tar)"));
    assert!(opened.refused.first().unwrap().1.starts_with("not a tar"), "{:?}", opened.refused);
}

#[test]
fn a_manifest_naming_a_missing_blob_or_a_path_out_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let good = layer(&[E::File("usr/bin/a", elf())]);
    let path = docker_archive(
        dir.path(),
        std::slice::from_ref(&good),
        Some(vec!["0/layer.tar".into(), "nope/layer.tar".into()]),
    );
    let e = open(&path, &Select::default()).unwrap_err();
    assert_eq!(e.exit_code(), crate::error::exit::INSPECT);
    assert!(e.to_string().contains(": the manifest names nope/layer.tar, which the image does not hold — "), "{e}");
    let path = docker_archive(dir.path(), &[good], Some(vec!["../../etc/passwd".into()]));
    let e = open(&path, &Select::default()).unwrap_err();
    assert!(e.to_string().contains("manifest.json names a layer that is not a plain name"), "{e}");
    std::fs::write(dir.path().join("plain"), b"not a tar, not a directory").unwrap();
    let e = open(&dir.path().join("plain"), &Select::default()).unwrap_err();
    assert!(e.to_string().contains("not an image: neither a directory nor a tar archive"), "{e}");
}

#[test]
fn an_oversized_elf_member_is_listed_never_read() {
    let dir = tempfile::tempdir().unwrap();
    // A header that claims 10 GiB after an ELF magic: the data is not
    // there, and none of it is read past the magic.
    let mut data = layer(&[E::File("ok", elf())]);
    data.truncate(data.len() - 1024);
    let mut h = header("big", tar::EntryType::Regular, 10 << 30);
    h.set_cksum();
    data.extend_from_slice(h.as_bytes());
    data.extend_from_slice(&elf());
    data.resize(data.len() + 512 - 64, 0);
    let path = docker_archive(dir.path(), &[data], None);
    let opened = open(&path, &Select::default()).unwrap();
    assert_eq!(tree(&opened.root), ["ok"]);
    let (p, why) = opened.refused.first().unwrap();
    assert_eq!(p, &PathBuf::from("/big"));
    assert!(why.starts_with("an ELF file of 10 GiB, past the 1 GiB bound per file: not read"), "{why}");
}
