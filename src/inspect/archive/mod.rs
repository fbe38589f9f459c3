//! `check --image` beside a directory: a container image as CI has it — a
//! docker-archive tar (`podman save`, `docker save`), an OCI archive tar
//! (`podman save --format oci-archive`) or an OCI layout directory — told
//! apart by content, never by name.
//!
//! The archive itself is never unpacked. Its layers are read in the
//! manifest's order, straight from the archive file (each blob a byte range
//! of it, gzip or zstd decompressed in a stream), and applied with their
//! whiteouts (`.wh.NAME`, `.wh..wh..opq`) to a private temporary directory
//! (mode 0700, removed when the audit ends) that receives only directories
//! and the ELF files of the image: never a symlink, a device or a FIFO, so
//! nothing written can lead out of it, and a hard link only to a file
//! already in it. Names with `..` or a leading `/` are refused and listed.
//!
//! Bounds: [`MAX_MEMBER`] per ELF file (a 10 GB sparse member is listed,
//! never read), [`MAX_WRITTEN`] in all, [`MAX_BLOB_ENTRIES`] archive
//! members, [`MAX_JSON`] per manifest, and the walk's own entry bound.

pub(crate) mod cleanup;
mod framed;
mod layer;
mod manifest;

use crate::error::{Error, Hint, Result};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// An ELF file larger than this is listed as unreadable, never written.
pub const MAX_MEMBER: u64 = 1 << 30;
/// ELF bytes written to the private directory, at most, over all layers.
pub const MAX_WRITTEN: u64 = 8 << 30;
/// Members of the outer archive looked at, at most.
pub const MAX_BLOB_ENTRIES: usize = 1_000_000;
/// A manifest, index or config larger than this is refused (read as a
/// stream, never held whole).
pub const MAX_JSON: u64 = 1 << 20;
/// Images an archive may hold (`podman save -m`, an OCI index's manifests).
pub const MAX_IMAGES: usize = 64;
/// Layers an image may have (overlayfs stacks 128 at most).
pub const MAX_LAYERS: usize = 256;

/// Which image of an archive holding several to audit: `--image-index N`
/// (1 for the first) or `--platform OS/ARCH[/VARIANT]`; neither with more
/// than one image is a usage error listing them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Select {
    pub index: Option<usize>,
    pub platform: Option<Platform>,
}

/// An OCI platform: `linux/arm64`, `linux/arm/v7`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub os: String,
    pub arch: String,
    pub variant: Option<String>,
}

impl Platform {
    /// `OS/ARCH[/VARIANT]`, each part a plain lowercase name.
    pub fn parse(text: &str) -> std::result::Result<Platform, String> {
        let parts: Vec<&str> = text.split('/').collect();
        let plain = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        match parts.as_slice() {
            [os, arch, rest @ ..] if rest.len() <= 1 && parts.iter().all(plain) => Ok(Platform {
                os: os.to_string(),
                arch: arch.to_string(),
                variant: rest.first().map(|v| v.to_string()),
            }),
            _ => Err(format!(
                "{text:?} is no platform: OS/ARCH or OS/ARCH/VARIANT is expected (linux/arm64, linux/arm/v7)"
            )),
        }
    }

    /// What an image says it is matches what was asked: the same OS and
    /// architecture, and the variant when one was asked.
    pub fn matches(&self, image: &Platform) -> bool {
        self.os == image.os
            && self.arch == image.arch
            && self.variant.as_ref().is_none_or(|v| image.variant.as_ref() == Some(v))
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.arch)?;
        match &self.variant {
            Some(v) => write!(f, "/{v}"),
            None => Ok(()),
        }
    }
}

/// The image audited, of how many the archive holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Chosen {
    /// 1 for the first.
    pub index: usize,
    pub of: usize,
    /// Its tag or reference name, where the archive gives one.
    pub name: Option<String>,
    /// `linux/amd64`, where the archive says.
    pub platform: Option<String>,
}

/// What `--image PATH` is, from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory an image is unpacked in (or `/`).
    Tree,
    DockerArchive,
    OciArchive,
    OciLayout,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tree => "directory",
            Kind::DockerArchive => "docker-archive",
            Kind::OciArchive => "oci-archive",
            Kind::OciLayout => "oci-layout",
        }
    }
}

/// An image ready to walk: the directory to walk, and what applying its
/// layers left out.
#[derive(Debug)]
pub struct Opened {
    pub kind: Kind,
    /// The tree to walk: the path given, or the private directory.
    pub root: PathBuf,
    /// Layers applied.
    pub layers: usize,
    /// Entries refused or not read, as (image path or layer, why).
    pub refused: crate::inspect::image::Capped<(PathBuf, String)>,
    /// Which image of the archive (None for a directory).
    pub chosen: Option<Chosen>,
    /// Held so the private directory lives as long as the walk (and goes
    /// on a stop signal).
    dir: Option<cleanup::Guarded>,
}

impl Opened {
    /// The tree is vdsoctl's own private copy: the walk may unlink each
    /// file once judged.
    pub fn is_private(&self) -> bool {
        self.dir.is_some()
    }
}

/// The one-line error for an archive that cannot be audited at all (exit 3).
pub(crate) fn bad(path: &Path, detail: impl Into<String>) -> Error {
    Error::Image { path: path.to_path_buf(), detail: detail.into() }
}

/// Open `path` as an image: a plain directory is walked as it is; an
/// archive or an OCI layout is applied to a private directory first.
pub fn open(path: &Path, select: &Select) -> Result<Opened> {
    let meta = std::fs::metadata(path).map_err(|e| Error::from_io(path, e, Hint::ImageRoot))?;
    let blobs: Box<dyn manifest::Blobs> = if meta.is_dir() {
        if !path.join("oci-layout").exists() || !path.join("index.json").exists() {
            return Ok(Opened {
                kind: Kind::Tree,
                root: path.to_path_buf(),
                layers: 0,
                refused: Default::default(),
                chosen: None,
                dir: None,
            });
        }
        Box::new(manifest::LayoutDir::new(path))
    } else if meta.is_file() {
        Box::new(manifest::TarBlobs::index(path)?)
    } else {
        return Err(Error::from_io(path, std::io::Error::from_raw_os_error(libc::ENOTDIR), Hint::ImageRoot));
    };
    let (kind, layers, chosen) = manifest::layers(path, blobs.as_ref(), select)?;
    // Armed before the directory exists: a stop signal from here on
    // removes it.
    cleanup::arm();
    let dir = tempfile::Builder::new()
        .prefix("vdsoctl-image-")
        .tempdir()
        .map_err(|e| Error::Write { path: std::env::temp_dir(), source: e })?;
    let dir = cleanup::Guarded::new(dir);
    let mut state = layer::State::new(dir.path());
    for (i, digest) in layers.iter().enumerate() {
        let what = format!("layer {} ({digest})", i + 1);
        match blobs.open(digest) {
            Ok(reader) => state.apply(&what, reader),
            Err(why) => return Err(bad(path, format!("{what}: {why}"))),
        }
    }
    Ok(Opened {
        kind,
        root: dir.path().to_path_buf(),
        layers: layers.len(),
        refused: state.refused,
        chosen: Some(chosen),
        dir: Some(dir),
    })
}

/// A byte range of a file, read with `pread`: each blob of an archive is
/// one, and none moves another's cursor.
pub(crate) struct Slice {
    file: std::sync::Arc<File>,
    pos: u64,
    end: u64,
}

impl Read for Slice {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// A blob's stream, decompressed by its content: gzip (1f 8b), zstd
/// (28 b5 2f fd) or as it is.
pub(crate) fn decompressed(mut raw: Box<dyn Read>) -> std::io::Result<Box<dyn Read>> {
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match raw.read(&mut magic[got..])? {
            0 => break,
            n => got += n,
        }
    }
    let head = std::io::Cursor::new(magic[..got].to_vec());
    let whole: Box<dyn Read> = Box::new(head.chain(raw));
    Ok(match &magic[..got] {
        [0x1f, 0x8b, ..] => Box::new(flate2::read::MultiGzDecoder::new(whole)),
        [0x28, 0xb5, 0x2f, 0xfd] => Box::new(
            ruzstd::decoding::StreamingDecoder::new(whole)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("zstd: {e}")))?,
        ),
        _ => whole,
    })
}

#[cfg(test)]
mod tests;
