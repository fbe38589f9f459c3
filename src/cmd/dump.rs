//! `dump`: the vDSO image of a process (or a file) — ELF header, dynamic
//! symbols with versions as `objdump -T` lists them, version definitions,
//! notes, hash tables — and whether the C library can bind what it needs.
//!
//! An ELF file that is not a vDSO (no `linux-vdso*`/`linux-gate` soname and
//! no `LINUX_*` version) is still listed, under a `fail` finding that says so:
//! the file could be inspected (so not exit 3), but the question `dump`
//! answers — what does this vDSO export — has a failing answer, and DESIGN
//! makes every printed FAIL exit 1, which lets a script tell "not a vDSO"
//! from a good image without parsing the output.

use super::Outcome;
use crate::error::{Error, Result};
use crate::inspect::elf;
use crate::inspect::{file, Process};
use crate::model::dump::{report, Source};
use crate::model::{ProcessRef, Status};
use crate::render::{emit, Output};
use crate::resolve::{DumpRequest, DumpSource};

/// Read the image: the `[vdso]` mapping of a process, or a file.
fn gather(req: &DumpRequest) -> Result<(Source, Option<u64>, String, Vec<u8>)> {
    match &req.source {
        DumpSource::File(path) => {
            let bytes = file::read_bounded(path, file::IMAGE_LIMIT)?;
            Ok((Source::File { file: path.display().to_string() }, None, path.display().to_string(), bytes))
        }
        DumpSource::Process(pid) => {
            let mut process = Process::open(*pid)?;
            // Where the [vdso] is and its bytes, from one program image.
            let (vdso, bytes) = process.read_consistent(|p| {
                let vdso = p.vdso_mapping()?;
                let bytes = p.read_mem(vdso.start, vdso.size())?;
                Ok((vdso, bytes))
            })?;
            let what = format!("the [vdso] of pid {}", process.pid());
            let source = Source::Process { process: ProcessRef::of(&process) };
            Ok((source, Some(vdso.start), what, bytes))
        }
    }
}

/// `vdsoctl dump [-p PID | --file PATH] [-o OUT.so]`.
pub fn run(req: &DumpRequest, out: &Output) -> Result<Outcome> {
    // Where the image goes is checked before it is read.
    if let Some(path) = &req.output {
        file::check_replaceable(path)?;
    }
    let (source, base, what, bytes) = gather(req)?;
    // Written before parsing, so an image we cannot parse can still be
    // kept; a write that fails is said after the report.
    let late: Vec<_> =
        req.output.as_ref().and_then(|path| file::write_replacing(path, &bytes).err()).into_iter().collect();
    let img = elf::parse(&bytes).map_err(|e| match e {
        Error::Malformed { detail, .. } => Error::malformed(what, detail),
        other => other,
    })?;
    // The image owns what it needs: the bytes (up to the 4 MiB file limit)
    // go before the report and its rendering are built (the 10 MiB budget).
    drop(bytes);
    let report = report(source, base, &img);
    drop(img);
    let mut late = late;
    late.splice(0..0, emit(out, &report).err());
    Outcome::from_crossed(report.findings.iter().any(|f| f.status() == Status::Fail)).despite(late)
}
