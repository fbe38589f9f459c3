//! `bench`: ns/call of each clock function through libc, a direct vDSO call,
//! the raw syscall and (x86_64) the vsyscall page, with the syscalls each path
//! makes counted by perf, so that "fast" is proven, not guessed.

use super::Outcome;
use crate::arch;
#[cfg(test)]
use crate::arch::VdsoFn;
use crate::cli::BenchArgs;
use crate::error::Result;
use crate::measure::bench::{self as m, BenchRequest, Path};
use crate::model::baseline::Baseline;
use crate::model::bench::measure_report;
use crate::model::bench_baseline::compare;
use crate::render::{emit, Output};

/// The command line as a typed request: clap has checked every value; the
/// empty lists mean "all".
fn select(args: &BenchArgs) -> BenchRequest {
    let mut clocks: Vec<i32> = Vec::new();
    for &c in &args.clocks {
        if !clocks.contains(&c) {
            clocks.push(c);
        }
    }
    if clocks.is_empty() {
        clocks = arch::CLOCKS.iter().map(|c| c.id).collect();
    }
    let functions = if !args.functions.is_empty() {
        dedup_sorted(&args.functions)
    } else if !args.clocks.is_empty() {
        // `--clocks` alone names what to measure and gate: the functions that
        // take a clock, not gettimeofday, time and getcpu beside them.
        m::FUNCTIONS.into_iter().filter(|f| f.takes_clock()).collect()
    } else {
        m::FUNCTIONS.to_vec()
    };
    let paths = if args.paths.is_empty() { Path::ALL.to_vec() } else { dedup_sorted(&args.paths) };
    BenchRequest { clocks, functions, paths, verify: args.verify, max_ns: args.max_ns, quick: args.quick }
}

/// A list's values sorted, each once.
fn dedup_sorted<T: Ord + Copy>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v.dedup();
    v
}

/// `vdsoctl bench`.
pub fn run(args: &BenchArgs, out: &Output) -> Result<Outcome> {
    let writer = "vdsoctl bench --save-baseline FILE";
    // Read (and reject) the baseline before measuring: a bad FILE costs nothing.
    let old = match &args.baseline {
        Some(path) => Some(crate::cmd::baseline_file::read(path, &["bench"], writer)?),
        None => None,
    };
    let (mut report, crossed) = measure_report(&select(args))?;
    let now = Baseline::of_bench(&report);
    if let (Some(path), Some(old)) = (&args.baseline, &old) {
        report.baseline = Some(compare(&path.display().to_string(), &old.bench, &now.bench));
    }
    if let Some(path) = &args.save_baseline {
        crate::cmd::baseline_file::write(path, &now)?;
    }
    emit(out, &report)?;
    // A FAIL line (a lost fast path, --max-ns, --verify) or a slower row means exit 1.
    let slower = report.baseline.as_ref().is_some_and(|d| d.has_regression());
    Ok(Outcome::from_crossed(crossed || slower || crate::render::any_fail(&report.findings)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn select_from(line: &[&str]) -> Result<BenchRequest, clap::Error> {
        let cli = crate::cli::Cli::try_parse_from(["vdsoctl", "bench"].iter().chain(line))?;
        match cli.command {
            crate::cli::Command::Bench(args) => Ok(select(&args)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn selection_parses_and_rejects() {
        let s =
            select_from(&["--clocks", "monotonic_raw,0", "--functions", "time,clock_gettime", "--paths", "vdso,libc"])
                .unwrap();
        assert_eq!(s.clocks, vec![4, 0]);
        assert_eq!(s.functions, vec![VdsoFn::ClockGettime, VdsoFn::Time]);
        assert_eq!(s.paths, vec![Path::Libc, Path::Vdso]);
        for bad in [
            &["--clocks", "bogus"][..],
            &["--functions", "clock_gettime64"],
            &["--paths", "ptrace"],
            &["--max-ns", "0"],
            &["--max-ns", "NaN"],
        ] {
            let e = select_from(bad).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}: {e}");
        }
        let all = select_from(&[]).unwrap();
        assert_eq!(all.clocks.len(), arch::CLOCKS.len());
        assert_eq!(all.functions, m::FUNCTIONS.to_vec());
        // --clocks alone: only the functions that take a clock are measured (and gated).
        let one = select_from(&["--clocks", "PROCESS_CPUTIME_ID"]).unwrap();
        assert!(!one.functions.is_empty() && one.functions.iter().all(|f| f.takes_clock()), "{:?}", one.functions);
        assert!(!one.functions.contains(&VdsoFn::Time) && !one.functions.contains(&VdsoFn::Getcpu));
        assert_eq!(select_from(&["--max-ns", "50"]).unwrap().max_ns, Some(50.0));
    }
}
