//! Where an image's blobs are (members of an archive tar, files of an OCI
//! layout) and which layers its manifest names, in order.

use super::{bad, Chosen, Kind, Platform, Select, Slice, MAX_BLOB_ENTRIES, MAX_IMAGES, MAX_JSON, MAX_LAYERS};
use crate::error::Result;
use serde::Deserialize;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The blobs of an image, by their name in the archive or layout
/// (`manifest.json`, `blobs/sha256/HEX`, `HEX/layer.tar`).
pub(super) trait Blobs {
    fn open(&self, name: &str) -> std::result::Result<Box<dyn Read>, String>;
    fn has(&self, name: &str) -> bool;
    /// Look for all of `names` at once (an archive's one pass for them).
    fn prefetch(&self, _names: &[&str]) {}
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

/// The members of an archive tar, found when asked for: each ask is a
/// pass over the tar's headers (seeking over the data) that keeps only
/// the names asked and the links they go through, so a tar of a million
/// members costs a million headers read, never a million names held.
pub(super) struct TarBlobs {
    path: PathBuf,
    file: Arc<File>,
    /// Regular members found: name → (data offset, size).
    members: RefCell<HashMap<String, (u64, u64)>>,
    /// Links found: name → the name it leads to.
    links: RefCell<HashMap<String, String>>,
    /// Names looked for and not found (never looked for twice).
    absent: RefCell<HashSet<String>>,
}

impl TarBlobs {
    pub(super) fn index(path: &Path) -> Result<TarBlobs> {
        let file = crate::inspect::file::open_named(path)
            .map_err(|e| crate::error::Error::from_io(path, e, crate::error::Hint::ImageRoot))?
            .0;
        let blobs = TarBlobs {
            path: path.to_path_buf(),
            file: Arc::new(file),
            members: RefCell::default(),
            links: RefCell::default(),
            absent: RefCell::default(),
        };
        // The first pass: is it a tar at all, and its top documents.
        blobs.find(&["manifest.json", "index.json", "oci-layout"])?;
        Ok(blobs)
    }

    /// One pass over the headers per round: `names` (and what the links
    /// among them lead to, up to 8 links deep) found or marked absent.
    fn find(&self, names: &[&str]) -> Result<()> {
        let path = &self.path;
        let mut want: HashSet<String> = names.iter().filter(|n| !self.known(n)).map(|n| n.to_string()).collect();
        for _ in 0..8 {
            if want.is_empty() {
                return Ok(());
            }
            let not_tar = |e: &dyn std::fmt::Display| {
                bad(path, format!("not an image: neither a directory nor a tar archive ({e})"))
            };
            // Each pass from the start (the last left the cursor at the end).
            std::io::Seek::seek(&mut &*self.file, std::io::SeekFrom::Start(0)).map_err(|e| not_tar(&e))?;
            let mut archive = tar::Archive::new(&*self.file);
            let entries = archive.entries_with_seek().map_err(|e| not_tar(&e))?;
            let mut next = HashSet::new();
            for (n, entry) in entries.enumerate() {
                super::cleanup::checkpoint();
                if n >= MAX_BLOB_ENTRIES {
                    return Err(bad(path, format!("more than {MAX_BLOB_ENTRIES} members: not an image archive")));
                }
                let entry = entry.map_err(|e| not_tar(&e))?;
                let Ok(raw) = std::str::from_utf8(&entry.path_bytes()).map(str::to_owned) else { continue };
                let Some(name) = clean(&raw) else { continue };
                if !want.contains(&name) {
                    continue;
                }
                let kind = entry.header().entry_type();
                if kind.is_file() && !kind.is_gnu_sparse() {
                    self.members.borrow_mut().insert(name, (entry.raw_file_position(), entry.size()));
                } else if kind.is_symlink() || kind.is_hard_link() {
                    let target = String::from_utf8_lossy(&entry.link_name_bytes().unwrap_or_default()).into_owned();
                    // A symlink is relative to its directory, a hard link to the top.
                    let base = if kind.is_symlink() { name.rsplit_once('/').map_or("", |(d, _)| d) } else { "" };
                    if let Some(t) = clean(&format!("{base}/{target}")) {
                        if !self.known(&t) {
                            next.insert(t.clone());
                        }
                        self.links.borrow_mut().insert(name, t);
                    }
                }
            }
            for w in want {
                if !self.known(&w) {
                    self.absent.borrow_mut().insert(w);
                }
            }
            want = next;
        }
        Ok(())
    }

    fn known(&self, name: &str) -> bool {
        self.members.borrow().contains_key(name)
            || self.links.borrow().contains_key(name)
            || self.absent.borrow().contains(name)
    }

    fn resolve(&self, name: &str) -> Option<(u64, u64)> {
        if self.find(&[name]).is_err() {
            return None;
        }
        let mut name = name.to_string();
        for _ in 0..8 {
            if let Some(m) = self.members.borrow().get(&name) {
                return Some(*m);
            }
            name = self.links.borrow().get(&name)?.clone();
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
    fn prefetch(&self, names: &[&str]) {
        let _ = self.find(names);
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

/// Why a JSON blob was not read: typed, so a caller words its own case
/// (manifest.json's shape) without reading a sentence back.
enum JsonFault {
    /// Not opened, in the blob store's words.
    Open(String),
    TooLarge,
    /// JSON, but not the shape `T` reads.
    Shape(serde_json::Error),
    NotJson(serde_json::Error),
}

/// A JSON blob, at most MAX_JSON bytes, read as `T` straight from its
/// stream (never held as text, nor as a generic tree: what `T` does not
/// name is skipped, and its lists are bounded).
fn read_json<T: serde::de::DeserializeOwned>(blobs: &dyn Blobs, name: &str) -> std::result::Result<T, JsonFault> {
    let reader = blobs.open(name).map_err(JsonFault::Open)?;
    let mut counted = Counted { inner: reader.take(MAX_JSON + 1), n: 0 };
    let parsed = serde_json::from_reader(std::io::BufReader::new(&mut counted));
    if counted.n > MAX_JSON {
        return Err(JsonFault::TooLarge);
    }
    parsed.map_err(|e| match e.classify() {
        serde_json::error::Category::Data => JsonFault::Shape(e),
        _ => JsonFault::NotJson(e),
    })
}

/// [`read_json`], its fault worded as the archive's error.
fn json<T: serde::de::DeserializeOwned>(path: &Path, blobs: &dyn Blobs, name: &str) -> Result<T> {
    read_json(blobs, name).map_err(|f| json_error(path, name, f))
}

fn json_error(path: &Path, name: &str, fault: JsonFault) -> crate::error::Error {
    match fault {
        JsonFault::Open(why) => bad(path, why),
        JsonFault::TooLarge => bad(path, format!("{name} is larger than {} MiB: not a manifest", MAX_JSON >> 20)),
        JsonFault::Shape(e) => bad(path, format!("{name} is not what an image holds: {e}")),
        JsonFault::NotJson(e) => bad(path, format!("{name} is not JSON: {e}")),
    }
}

/// A reader that counts what it gave.
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let got = self.inner.read(buf)?;
        self.n += got as u64;
        Ok(got)
    }
}

/// A JSON list of at most N entries: a longer one is refused while read,
/// never held.
struct Bounded<T, const N: usize>(Vec<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Bounded<T, N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Seq<T, const N: usize>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> serde::de::Visitor<'de> for Seq<T, N> {
            type Value = Bounded<T, N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a list of at most {N}")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    if v.len() == N {
                        return Err(serde::de::Error::custom(format!("more than {N} entries")));
                    }
                    v.push(x);
                }
                Ok(Bounded(v))
            }
        }
        d.deserialize_seq(Seq::<T, N>(std::marker::PhantomData))
    }
}

/// One image of a docker-archive's manifest.json.
#[derive(Deserialize)]
struct DockerEntry {
    #[serde(rename = "Config")]
    config: Option<String>,
    #[serde(rename = "RepoTags")]
    tags: Option<Bounded<String, 16>>,
    #[serde(rename = "Layers")]
    layers: Bounded<String, MAX_LAYERS>,
}

/// An OCI index or manifest: its manifests, or its layers.
#[derive(Deserialize)]
struct OciDoc {
    manifests: Option<Bounded<Descriptor, MAX_IMAGES>>,
    layers: Option<Bounded<Descriptor, MAX_LAYERS>>,
}

#[derive(Deserialize)]
struct Descriptor {
    digest: Option<String>,
    platform: Option<PlatformJson>,
    annotations: Option<Annotations>,
}

/// A platform as OCI and an image config write it.
#[derive(Deserialize)]
struct PlatformJson {
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
}

impl PlatformJson {
    fn platform(&self) -> Option<Platform> {
        Some(Platform { os: self.os.clone()?, arch: self.architecture.clone()?, variant: self.variant.clone() })
    }
}

#[derive(Deserialize)]
struct Annotations {
    #[serde(rename = "org.opencontainers.image.ref.name")]
    ref_name: Option<String>,
    #[serde(rename = "io.containerd.image.name")]
    image_name: Option<String>,
    /// `attestation-manifest` (buildx): no image.
    #[serde(rename = "vnd.docker.reference.type")]
    reference_type: Option<String>,
}

/// One image the archive holds: its name, its platform (where said), its
/// layer blobs bottom first, and its config blob (a docker-archive's, read
/// for its platform only when asked).
struct Candidate {
    name: Option<String>,
    platform: Option<Platform>,
    layers: Vec<String>,
    config: Option<String>,
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

/// The image's kind, the names of the chosen image's layer blobs, bottom
/// first, every one present (a manifest naming a missing blob is an
/// error), and which image of how many it is.
pub(super) fn layers(path: &Path, blobs: &dyn Blobs, select: &Select) -> Result<(Kind, Vec<String>, Chosen)> {
    let (kind, mut candidates) = if blobs.has("manifest.json") && !blobs.is_dir() {
        (Kind::DockerArchive, docker_images(path, blobs)?)
    } else if blobs.has("index.json") && blobs.has("oci-layout") {
        let kind = if blobs.is_dir() { Kind::OciLayout } else { Kind::OciArchive };
        (kind, oci_images(path, blobs)?)
    } else {
        return Err(bad(
            path,
            "a tar archive but not an image: no manifest.json (docker-archive) nor index.json and oci-layout (OCI)",
        ));
    };
    let i = choose(path, blobs, &mut candidates, select)?;
    let of = candidates.len();
    let c = candidates.swap_remove(i);
    let names = c.layers;
    blobs.prefetch(&names.iter().map(String::as_str).collect::<Vec<_>>());
    if let Some(missing) = names.iter().find(|n| !blobs.has(n)) {
        return Err(bad(path, format!("the manifest names {missing}, which the image does not hold")));
    }
    let chosen = Chosen { index: i + 1, of, name: c.name, platform: c.platform.map(|p| p.to_string()) };
    Ok((kind, names, chosen))
}

/// The image `select` names, or the only one; more than one and no
/// choice is a usage error that lists them (never a silent pick).
fn choose(path: &Path, blobs: &dyn Blobs, candidates: &mut [Candidate], select: &Select) -> Result<usize> {
    let n = candidates.len();
    let list = |candidates: &mut [Candidate], which: &[usize]| {
        for &i in which {
            docker_platform(path, blobs, &mut candidates[i]);
        }
        let shown: Vec<String> = which.iter().map(|&i| described(i, &candidates[i])).collect();
        shown.join(", ")
    };
    let all: Vec<usize> = (0..n).collect();
    if let Some(index) = select.index {
        if index == 0 || index > n {
            let which = list(candidates, &all);
            return Err(choice(path, format!("--image-index {index}, but it holds {n} (1 to {n}): {which}")));
        }
        return Ok(index - 1);
    }
    if let Some(want) = &select.platform {
        for c in candidates.iter_mut() {
            docker_platform(path, blobs, c);
        }
        let matching: Vec<usize> =
            (0..n).filter(|&i| candidates[i].platform.as_ref().is_some_and(|p| want.matches(p))).collect();
        return match matching.as_slice() {
            [one] => Ok(*one),
            [] => {
                let which = list(candidates, &all);
                Err(choice(path, format!("no image for {want} of the {n} it holds: {which}")))
            }
            many => {
                let which = list(candidates, many);
                Err(choice(path, format!("{} images for {want}: {which} — pass --image-index N", many.len())))
            }
        };
    }
    if n == 1 {
        return Ok(0);
    }
    let which = list(candidates, &all);
    Err(choice(path, format!("it holds {n} images: {which} — pass --image-index N (1 to {n}) or --platform OS/ARCH")))
}

fn choice(path: &Path, detail: String) -> crate::error::Error {
    crate::error::Error::ImageChoice { path: path.to_path_buf(), detail }
}

/// `2: localhost/app:1 (linux/arm64)`, the name escaped and cut.
fn described(i: usize, c: &Candidate) -> String {
    let mut name = crate::words::escaped_name(c.name.as_deref().unwrap_or("unnamed").as_bytes());
    if name.len() > 80 {
        let cut = (0..=77).rev().find(|&k| name.is_char_boundary(k)).unwrap_or(0);
        name.truncate(cut);
        name.push_str("...");
    }
    match &c.platform {
        Some(p) => format!("{}: {name} ({p})", i + 1),
        None => format!("{}: {name}", i + 1),
    }
}

/// A docker-archive image's platform, from its config (once; none when
/// the config cannot be read).
fn docker_platform(path: &Path, blobs: &dyn Blobs, c: &mut Candidate) {
    if c.platform.is_some() {
        return;
    }
    if let Some(config) = c.config.take() {
        c.platform = json::<PlatformJson>(path, blobs, &config).ok().and_then(|p| p.platform());
    }
}

fn docker_images(path: &Path, blobs: &dyn Blobs) -> Result<Vec<Candidate>> {
    let shape = "manifest.json names no image (an array of objects with Layers is expected)";
    let manifest: Bounded<DockerEntry, MAX_IMAGES> = read_json(blobs, "manifest.json").map_err(|f| match f {
        JsonFault::Shape(e) => bad(path, format!("{shape}: {e}")),
        f => json_error(path, "manifest.json", f),
    })?;
    if manifest.0.is_empty() {
        return Err(bad(path, shape));
    }
    manifest
        .0
        .into_iter()
        .map(|m| {
            let layers = m
                .layers
                .0
                .iter()
                .map(|l| {
                    clean(l).ok_or_else(|| {
                        bad(path, format!("manifest.json names a layer that is not a plain name: {l:?}"))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let name = m.tags.and_then(|t| t.0.into_iter().next());
            Ok(Candidate { name, platform: None, layers, config: m.config.as_deref().and_then(clean) })
        })
        .collect()
}

/// Every image an OCI index names (nested indexes followed, 4 deep): each
/// manifest's layers, name and platform. Attestation manifests (buildx's
/// `unknown/unknown`) are no image and are not counted.
fn oci_images(path: &Path, blobs: &dyn Blobs) -> Result<Vec<Candidate>> {
    let top: OciDoc = json(path, blobs, "index.json")?;
    if let Some(layers) = top.layers {
        return Ok(vec![Candidate { name: None, platform: None, layers: layer_names(path, layers)?, config: None }]);
    }
    let mut out = Vec::new();
    let mut level = vec![top];
    for _ in 0..4 {
        let mut next = Vec::new();
        for doc in level {
            let list = doc.manifests.map(|m| m.0).unwrap_or_default();
            let names: Vec<Option<String>> = list.iter().map(|d| d.digest.as_deref().and_then(blob_name)).collect();
            blobs.prefetch(&names.iter().flatten().map(String::as_str).collect::<Vec<_>>());
            for (d, name) in list.iter().zip(names) {
                let digest = d.digest.as_deref().unwrap_or_default();
                let name = name.ok_or_else(|| bad(path, format!("a manifest digest is not a digest: {digest:?}")))?;
                let annotations = d.annotations.as_ref();
                if annotations.and_then(|a| a.reference_type.as_deref()) == Some("attestation-manifest") {
                    continue;
                }
                if !blobs.has(&name) {
                    return Err(bad(path, format!("the index names {name}, which the image does not hold")));
                }
                let doc: OciDoc = json(path, blobs, &name)?;
                match doc.layers {
                    Some(layers) => {
                        if out.len() == MAX_IMAGES {
                            return Err(bad(path, format!("more than {MAX_IMAGES} images: not read")));
                        }
                        out.push(Candidate {
                            name: annotations.and_then(|a| a.ref_name.clone().or_else(|| a.image_name.clone())),
                            platform: d.platform.as_ref().and_then(PlatformJson::platform),
                            layers: layer_names(path, layers)?,
                            config: None,
                        })
                    }
                    None => next.push(doc),
                }
            }
        }
        if next.is_empty() {
            return if out.is_empty() { Err(bad(path, "the OCI index names no manifest")) } else { Ok(out) };
        }
        level = next;
    }
    Err(bad(path, "indexes nested more than 4 deep: not an image"))
}

fn layer_names(path: &Path, layers: Bounded<Descriptor, MAX_LAYERS>) -> Result<Vec<String>> {
    layers
        .0
        .iter()
        .map(|l| {
            let d = l.digest.as_deref().unwrap_or_default();
            blob_name(d).ok_or_else(|| bad(path, format!("a layer's digest is not a digest: {d:?}")))
        })
        .collect()
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
