//! `bench`: ns/call of each clock function through libc, a direct vDSO call,
//! the raw syscall and (x86_64) the vsyscall page, with the syscalls each path
//! makes counted by perf, so that "fast" is proven, not guessed.

use super::Outcome;
use crate::arch;
#[cfg(test)]
use crate::arch::VdsoFn;
use crate::cli::BenchArgs;
use crate::error::{Error, Result};
use crate::measure::bench::{self as m, BenchRequest, Path};
use crate::model::bench::measure_report;
use crate::render::{emit, Output};

/// The command line as a typed request.
fn select(args: &BenchArgs) -> Result<BenchRequest> {
    let clocks = if args.clocks.is_empty() {
        arch::CLOCKS.iter().map(|c| c.id).collect()
    } else {
        let mut v = Vec::new();
        for c in &args.clocks {
            let id = arch::parse_clock(c).ok_or_else(|| {
                let names: Vec<_> = arch::CLOCKS.iter().map(|c| c.name.trim_start_matches("CLOCK_")).collect();
                Error::Usage(format!("unknown clock {c:?} — use a number or one of {}", names.join(", ")))
            })?;
            if !v.contains(&id) {
                v.push(id);
            }
        }
        v
    };
    let functions = if args.functions.is_empty() && !args.clocks.is_empty() {
        // `--clocks` alone names what to measure and gate: the functions that
        // take a clock, not gettimeofday, time and getcpu beside them.
        m::FUNCTIONS.into_iter().filter(|f| f.takes_clock()).collect()
    } else if args.functions.is_empty() {
        m::FUNCTIONS.to_vec()
    } else {
        let mut v = Vec::new();
        for f in &args.functions {
            let f = m::FUNCTIONS.into_iter().find(|g| g.name().eq_ignore_ascii_case(f.trim())).ok_or_else(|| {
                let names: Vec<_> = m::FUNCTIONS.iter().map(|g| g.name()).collect();
                Error::Usage(format!("unknown function {f:?} — use one of {}", names.join(", ")))
            })?;
            if !v.contains(&f) {
                v.push(f);
            }
        }
        v.sort();
        v
    };
    let paths = if args.paths.is_empty() {
        Path::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for p in &args.paths {
            let p = Path::parse(p)
                .ok_or_else(|| Error::Usage(format!("unknown path {p:?} — use libc, vdso, syscall or vsyscall")))?;
            if !v.contains(&p) {
                v.push(p);
            }
        }
        v.sort();
        v
    };
    let max_ns = crate::model::policy::max_ns(args.max_ns)?;
    Ok(BenchRequest { clocks, functions, paths, verify: args.verify, max_ns, quick: args.quick })
}

/// `vdsoctl bench`.
pub fn run(args: &BenchArgs, out: &Output) -> Result<Outcome> {
    let (report, crossed) = measure_report(&select(args)?)?;
    emit(out, &report)?;
    // A FAIL line (a lost fast path, --max-ns, --verify) means exit 1.
    Ok(Outcome::from_crossed(crossed || crate::render::any_fail(&report.findings)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(clocks: &[&str], functions: &[&str], paths: &[&str]) -> BenchArgs {
        BenchArgs {
            clocks: clocks.iter().map(|s| s.to_string()).collect(),
            functions: functions.iter().map(|s| s.to_string()).collect(),
            paths: paths.iter().map(|s| s.to_string()).collect(),
            verify: false,
            max_ns: None,
            quick: true,
        }
    }

    #[test]
    fn selection_parses_and_rejects() {
        let s = select(&args(&["monotonic_raw", "0"], &["time", "clock_gettime"], &["vdso", "libc"])).unwrap();
        assert_eq!(s.clocks, vec![4, 0]);
        assert_eq!(s.functions, vec![VdsoFn::ClockGettime, VdsoFn::Time]);
        assert_eq!(s.paths, vec![Path::Libc, Path::Vdso]);
        assert!(matches!(select(&args(&["bogus"], &[], &[])), Err(Error::Usage(_))));
        assert!(matches!(select(&args(&[], &["clock_gettime64"], &[])), Err(Error::Usage(_))));
        assert!(matches!(select(&args(&[], &[], &["ptrace"])), Err(Error::Usage(_))));
        let all = select(&args(&[], &[], &[])).unwrap();
        assert_eq!(all.clocks.len(), arch::CLOCKS.len());
        assert_eq!(all.functions, m::FUNCTIONS.to_vec());
        // --clocks alone: only the functions that take a clock are measured (and gated).
        let one = select(&args(&["PROCESS_CPUTIME_ID"], &[], &[])).unwrap();
        assert!(!one.functions.is_empty() && one.functions.iter().all(|f| f.takes_clock()), "{:?}", one.functions);
        assert!(!one.functions.contains(&VdsoFn::Time) && !one.functions.contains(&VdsoFn::Getcpu));
    }
}
