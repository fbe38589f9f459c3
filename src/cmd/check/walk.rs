//! `check --image ROOT`: the walk of an image tree, its progress drawn by
//! `render::check::ScanProgress`.

use crate::error::{Error, Result};
use crate::inspect::exe::{ExeInfo, LibcKind, Linkage};
use crate::inspect::host::VdsoFacts;
use crate::inspect::kernel::VsyscallMode;
use crate::inspect::{archive, image, Process};
use crate::model::binary::{binary_verdict, BinaryFacts, HostFacts};
use crate::model::check::{BinaryRow, Check, CheckReport, ImageSummary};
use crate::model::host::{host_vsyscall, vdso_symbols_check, vsyscall_check};
use crate::model::image::{ImageRow, NO_PROC};
use crate::model::random::{image_random_groups, random_route, ImageFile};
use crate::render::random::image_random_rows;
use crate::render::thousands;
use crate::render::vdso::{image_row, runner_context};

/// `check --image ROOT`: every ELF program and library under ROOT, judged
/// against this kernel.
pub(super) fn gather_image(
    root: &std::path::Path,
    select: &archive::Select,
    strict: bool,
    hash: bool,
    out: &crate::render::Output,
) -> Result<CheckReport> {
    let mut progress = crate::render::check::ScanProgress::new(out);
    let mut tick = |e: u64, n: usize, t: std::time::Duration| progress.tick(e, n, t);
    let own = crate::inspect::process::own_exe_identity();
    let opened = archive::open(root, select)?;
    let walked = image::walk(&opened.root, own, hash, opened.is_private(), Some(&mut tick));
    progress.done();
    let mut walked = walked?;
    // What applying the layers refused or could not read is unreadable too.
    walked.unreadable.after(opened.refused.clone());
    if walked.binaries.is_empty() {
        let unreadable = match walked.unreadable.first() {
            Some((p, why)) => {
                format!(" ({} unreadable, first {}: {why})", thousands(walked.unreadable.len() as u64), shown(p))
            }
            None => String::new(),
        };
        return Err(Error::NothingToAudit { root: root.to_path_buf(), entries: walked.entries, unreadable });
    }
    // The runner's kernel (its vDSO's hash tables, its vsyscall mode) is
    // not production's: said in its own rows, left out of the verdicts.
    let (_runner, mut checks) = host_context()?;
    let host = HostFacts { vdso_has_hash: None, vsyscall: VsyscallMode::Xonly };
    // What the walk could not read makes the audit incomplete: a warning.
    if let Some((p, why)) = walked.unreadable.first() {
        checks.push(image_row(&ImageRow::Incomplete {
            count: walked.unreadable.len(),
            first: shown(p),
            why: why.to_string(),
        }));
    }
    let (binaries, random) = binary_rows(&walked, &host);
    checks.extend(random);
    let summary = ImageSummary {
        root: root.display().to_string(),
        format: opened.kind.name(),
        layers: opened.layers,
        selected: opened.chosen.clone(),
        entries: walked.entries,
        skipped: walked.skipped_dirs.iter().map(|p| shown(p)).collect(),
        unreadable: walked.unreadable.iter().map(|(p, e)| (shown(p), e.clone())).collect(),
        unreadable_count: walked.unreadable.len(),
        truncated: walked.truncated,
        excluded: walked.excluded.iter().map(|p| shown(p)).collect(),
    };
    let hashes = if hash { content_hashes(&walked) } else { Default::default() };
    Ok(CheckReport { hashes, image: Some(summary), ..CheckReport::judged_with(checks, Some(binaries), strict) })
}

/// An image path as text: escaped (`\xNN` for a byte that is not UTF-8),
/// so two names stay apart in JSON and JUnit (`a\nb`, `a b`, `\xff`, `\xfe`).
fn shown(p: &std::path::Path) -> String {
    crate::words::escaped_name(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()))
}

/// Each binary's SHA-256, by image path, as the walk read it from the
/// descriptor it judged (never the path again: a tree changed since would
/// hash what was not judged). One not read has none: its baseline entry
/// says so with an empty hash.
fn content_hashes(walked: &image::Walk) -> std::collections::BTreeMap<String, String> {
    walked.binaries.iter().filter_map(|b| Some((shown(&b.path), b.sha256.clone()?))).collect()
}

/// The runner's kernel, from /proc (a chroot or a bare container may have
/// none: SKIP): INFO rows that say what this host has, which production
/// may not; the binaries are judged without it (no DT_HASH fact, vsyscall
/// xonly, the default since 5.3) and decide the audit with the image's
/// own findings.
fn host_context() -> Result<(HostFacts, Vec<Check>)> {
    match Process::open(None) {
        Ok(me) => {
            let (own, cmdline) = (VdsoFacts::read(&me), crate::inspect::kernel::cmdline());
            let vsyscall = vsyscall_check(&host_vsyscall(&own, cmdline.as_deref()));
            let host = HostFacts::of(&own, cmdline.as_deref());
            Ok((host, runner_context(vec![vdso_symbols_check(&own, "", false), vsyscall])))
        }
        Err(_) if !crate::inspect::process::proc_mounted() => Ok((
            HostFacts { vdso_has_hash: None, vsyscall: VsyscallMode::Xonly },
            NO_PROC.iter().map(image_row).collect(),
        )),
        Err(e) => Err(e),
    }
}

/// Each binary judged: a row with its facts and verdict; and the image's
/// random-bytes rows (one per runtime release that takes the syscall).
fn binary_rows(walked: &image::Walk, host: &HostFacts) -> (Vec<BinaryRow>, Vec<Check>) {
    // A dynamic program's runtime version is that of the C library the
    // image ships for its class and machine (its libc.so.6 or ld-musl).
    let libc_versions: Vec<((u16, bool, LibcKind), String)> = walked
        .binaries
        .iter()
        .filter(|b| b.info.is_library() && b.info.libc_version.is_some())
        .filter(|b| matches!(b.info.libc, LibcKind::Glibc | LibcKind::Musl))
        .map(|b| ((b.info.machine, b.info.is_64, b.info.libc), b.info.libc_version.clone().unwrap_or_default()))
        .collect();
    let infos: Vec<(String, ExeInfo)> = walked
        .binaries
        .iter()
        .map(|b| {
            let mut info = b.info.clone();
            if info.libc_version.is_none() && (info.linkage() == Linkage::Dynamic || info.is_library()) {
                let key = (info.machine, info.is_64, info.libc);
                info.libc_version = libc_versions.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone());
            }
            (shown(&b.path), info)
        })
        .collect();
    let files: Vec<ImageFile> = infos.iter().map(|(path, info)| ImageFile { path, info }).collect();
    let random = image_random_rows(&image_random_groups(&files));
    let rows = infos
        .iter()
        .map(|(path, info)| {
            let v = binary_verdict(info, host);
            let hint = v.hint.map(|h| h.for_file(path));
            BinaryRow {
                path: path.clone(),
                binary: BinaryFacts::of(info),
                kind: v.kind,
                status: v.status,
                detail: crate::render::binary::verdict_detail(&v.findings),
                hint,
                random: random_route(info),
                findings: v.findings,
            }
        })
        .collect();
    (rows, random)
}
