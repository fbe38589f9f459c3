//! Where an image's blobs are (members of an archive tar, files of an OCI
//! layout) and which layers its manifest names, in order.

use super::{bad, Kind, Slice, MAX_BLOB_ENTRIES, MAX_JSON};
use crate::error::Result;
use serde_json::Value;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The blobs of an image, by their name in the archive or layout
/// (`manifest.json`, `blobs/sha256/HEX`, `HEX/layer.tar`).
pub(super) trait Blobs {
    fn open(&self, name: &str) -> std::result::Result<Box<dyn Read>, String>;
    fn has(&self, name: &str) -> bool;
    fn is_dir(&self) -> bool;
}

/// `a/./b/` → `a/b`; None for a name with `..` (never looked up).
pub(super) fn clean(name: &str) -> Option<String> {
    let mut parts = Vec::new();
    for p in name.split('/') {
        match p {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The members of an archive tar: regular files as byte ranges, links by
/// their target; nothing is read until asked for.
pub(super) struct TarBlobs {
    file: Arc<File>,
    members: HashMap<String, (u64, u64)>,
    links: HashMap<String, String>,
}

impl TarBlobs {
    pub(super) fn index(path: &Path) -> Result<TarBlobs> {
        let file = crate::inspect::file::open_named(path)
            .map_err(|e| crate::error::Error::from_io(path, e, crate::error::Hint::ImageRoot))?
            .0;
        let not_tar =
            |e: &dyn std::fmt::Display| bad(path, format!("not an image: neither a directory nor a tar archive ({e})"));
        let mut archive = tar::Archive::new(&file);
        let entries = archive.entries_with_seek().map_err(|e| not_tar(&e))?;
        let (mut members, mut links) = (HashMap::new(), HashMap::new());
        for (n, entry) in entries.enumerate() {
            if n >= MAX_BLOB_ENTRIES {
                return Err(bad(path, format!("more than {MAX_BLOB_ENTRIES} members: not an image archive")));
            }
            let entry = entry.map_err(|e| not_tar(&e))?;
            let Some(name) = clean(&String::from_utf8_lossy(&entry.path_bytes())) else { continue };
            let kind = entry.header().entry_type();
            if kind.is_file() && !kind.is_gnu_sparse() {
                members.insert(name, (entry.raw_file_position(), entry.size()));
            } else if kind.is_symlink() || kind.is_hard_link() {
                let target = String::from_utf8_lossy(&entry.link_name_bytes().unwrap_or_default()).into_owned();
                // A symlink is relative to its directory, a hard link to the top.
                let base = if kind.is_symlink() { name.rsplit_once('/').map_or("", |(d, _)| d) } else { "" };
                if let Some(t) = clean(&format!("{base}/{target}")) {
                    links.insert(name, t);
                }
            }
        }
        Ok(TarBlobs { file: Arc::new(file), members, links })
    }

    fn resolve<'a>(&'a self, mut name: &'a str) -> Option<(u64, u64)> {
        for _ in 0..8 {
            if let Some(m) = self.members.get(name) {
                return Some(*m);
            }
            name = self.links.get(name)?;
        }
        None
    }
}

impl Blobs for TarBlobs {
    fn open(&self, name: &str) -> std::result::Result<Box<dyn Read>, String> {
        let (pos, size) = self.resolve(name).ok_or_else(|| format!("the archive holds no {name}"))?;
        Ok(Box::new(Slice { file: self.file.clone(), pos, end: pos + size }))
    }
    fn has(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }
    fn is_dir(&self) -> bool {
        false
    }
}

/// An OCI layout directory: blobs are files under it, opened without
/// following a link at any step below the directory.
pub(super) struct LayoutDir {
    root: PathBuf,
}

impl LayoutDir {
    pub(super) fn new(root: &Path) -> LayoutDir {
        LayoutDir { root: root.to_path_buf() }
    }
}

impl Blobs for LayoutDir {
    fn open(&self, name: &str) -> std::result::Result<Box<dyn Read>, String> {
        let mut at = self.root.clone();
        for part in name.split('/') {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => return Err(format!("{name} is a link: not followed")),
                Ok(_) => {}
                Err(e) => return Err(format!("the layout holds no {name} ({})", crate::error::errno_text(&e))),
            }
        }
        let (file, _) =
            crate::inspect::file::open_regular(&at).map_err(|e| format!("{name}: {}", crate::error::errno_text(&e)))?;
        Ok(Box::new(file))
    }
    fn has(&self, name: &str) -> bool {
        self.open(name).is_ok()
    }
    fn is_dir(&self) -> bool {
        true
    }
}

/// A JSON blob, at most MAX_JSON bytes.
fn json(path: &Path, blobs: &dyn Blobs, name: &str) -> Result<Value> {
    let mut text = Vec::new();
    let reader = blobs.open(name).map_err(|why| bad(path, why))?;
    reader.take(MAX_JSON + 1).read_to_end(&mut text).map_err(|e| bad(path, format!("{name}: {e}")))?;
    if text.len() as u64 > MAX_JSON {
        return Err(bad(path, format!("{name} is larger than {} MiB: not a manifest", MAX_JSON >> 20)));
    }
    serde_json::from_slice(&text).map_err(|e| bad(path, format!("{name} is not JSON: {e}")))
}

/// `sha256:HEX` → `blobs/sha256/HEX`; None for anything else (a digest
/// is never a path).
fn blob_name(digest: &str) -> Option<String> {
    let (alg, hex) = digest.split_once(':')?;
    let ok = !alg.is_empty()
        && alg.bytes().all(|b| b.is_ascii_alphanumeric())
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| format!("blobs/{alg}/{hex}"))
}

/// The image's kind and the names of its layer blobs, bottom first; every
/// one present (a manifest naming a missing blob is an error).
pub(super) fn layers(path: &Path, blobs: &dyn Blobs) -> Result<(Kind, Vec<String>)> {
    let (kind, names) = if blobs.has("manifest.json") && !blobs.is_dir() {
        (Kind::DockerArchive, docker_layers(path, &json(path, blobs, "manifest.json")?)?)
    } else if blobs.has("index.json") && blobs.has("oci-layout") {
        let kind = if blobs.is_dir() { Kind::OciLayout } else { Kind::OciArchive };
        (kind, oci_layers(path, blobs)?)
    } else {
        return Err(bad(
            path,
            "a tar archive but not an image: no manifest.json (docker-archive) nor index.json and oci-layout (OCI)",
        ));
    };
    if let Some(missing) = names.iter().find(|n| !blobs.has(n)) {
        return Err(bad(path, format!("the manifest names {missing}, which the image does not hold")));
    }
    Ok((kind, names))
}

fn docker_layers(path: &Path, manifest: &Value) -> Result<Vec<String>> {
    let first = manifest.as_array().and_then(|a| a.first());
    let layers = first
        .and_then(|m| m["Layers"].as_array())
        .ok_or_else(|| bad(path, "manifest.json names no image (an array of objects with Layers is expected)"))?;
    layers
        .iter()
        .map(|l| {
            l.as_str()
                .and_then(clean)
                .ok_or_else(|| bad(path, format!("manifest.json names a layer that is not a plain name: {l}")))
        })
        .collect()
}

/// The host's architecture as OCI names it.
fn oci_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "arm" => "arm",
        other => other,
    }
}

fn oci_layers(path: &Path, blobs: &dyn Blobs) -> Result<Vec<String>> {
    let mut doc = json(path, blobs, "index.json")?;
    // index → (nested index →) manifest: this host's platform, else the first.
    for _ in 0..4 {
        if let Some(layers) = doc["layers"].as_array() {
            return layers
                .iter()
                .map(|l| {
                    let d = l["digest"].as_str().unwrap_or_default();
                    blob_name(d).ok_or_else(|| bad(path, format!("a layer's digest is not a digest: {:?}", d)))
                })
                .collect();
        }
        let list = doc["manifests"].as_array().filter(|m| !m.is_empty());
        let list = list.ok_or_else(|| bad(path, "the OCI index names no manifest"))?;
        let pick = list.iter().find(|m| m["platform"]["architecture"] == oci_arch()).unwrap_or(&list[0]);
        let d = pick["digest"].as_str().unwrap_or_default();
        let name = blob_name(d).ok_or_else(|| bad(path, format!("a manifest digest is not a digest: {d:?}")))?;
        if !blobs.has(&name) {
            return Err(bad(path, format!("the index names {name}, which the image does not hold")));
        }
        doc = json(path, blobs, &name)?;
    }
    Err(bad(path, "indexes nested more than 4 deep: not an image"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_digests_never_leave_the_image() {
        assert_eq!(clean("./a//b/"), Some("a/b".into()));
        assert_eq!(clean("/etc/passwd"), Some("etc/passwd".into()));
        assert_eq!(clean("a/../../b"), None);
        assert_eq!(blob_name("sha256:abc123"), Some("blobs/sha256/abc123".into()));
        assert_eq!(blob_name("sha256:../../etc"), None);
        assert_eq!(blob_name("../x:ab"), None);
        assert_eq!(blob_name("nocolon"), None);
    }
}
