//! `bench`: ns/call of each clock function through libc, a direct vDSO call,
//! the raw syscall and (x86_64) the vsyscall page, with the syscalls each path
//! makes counted by perf, so that "fast" is proven, not guessed.

use super::Outcome;
use crate::error::Result;
use crate::inspect::host::KernelFacts;
use crate::measure::bench::run as measure;
use crate::model::baseline::Baseline;
use crate::model::bench::judge;
use crate::model::bench_baseline::compare;
use crate::render::{emit, Output};
use crate::resolve::BenchJob;

/// `vdsoctl bench`.
pub fn run(req: &BenchJob, out: &Output) -> Result<Outcome> {
    let writer = "vdsoctl bench --save-baseline FILE";
    // Read (and reject) the baseline before measuring: a bad FILE costs nothing.
    let old = match &req.baseline {
        Some(path) => Some(crate::cmd::baseline_file::read(path, &["bench"], writer)?),
        None => None,
    };
    // Where the baseline goes is checked before measuring, too.
    if let Some(path) = &req.save_baseline {
        crate::inspect::file::check_replaceable(path)?;
    }
    let run = measure(&req.measure);
    let (mut report, crossed) = judge(run, &KernelFacts::read());
    let now = Baseline { arch: crate::cmd::baseline_file::here(), ..Baseline::of_bench(&report) };
    if let (Some(path), Some(old)) = (&req.baseline, &old) {
        report.baseline = Some(compare(&path.display().to_string(), &old.bench, &now.bench));
    }
    // The report first: a baseline that cannot be written loses neither it nor the verdict.
    let mut late: Vec<_> = emit(out, &report).err().into_iter().collect();
    if let Some(path) = &req.save_baseline {
        late.extend(crate::cmd::baseline_file::write(path, &now).err());
    }
    // A FAIL line (a lost fast path, --max-ns, --verify) or a slower row means exit 1.
    let slower = report.baseline.as_ref().is_some_and(|d| d.has_regression());
    Outcome::from_crossed(crossed || slower || report.findings.iter().any(|f| f.status() == crate::model::Status::Fail))
        .despite(late)
}
