//! The resolve step: the parsed command line (`cli::Cli`, what was typed)
//! turned once into a typed [`Request`] and the resolved [`Output`] (what
//! will be done), before any work — ripgrep's LowArgs → HiArgs. Every usage
//! error (exit 2) is raised here and nowhere else: clap's own, then the
//! format refusal, then what clap cannot express (an `--interval` below its
//! floor, a `--cgroup` that names no v2 cgroup, a `--listen` that is no
//! address, a baseline without what it keeps). Commands read only these
//! requests, never `cli::*Args`.

mod check;
#[cfg(test)]
mod tests;
mod top;
mod trace;

pub use check::{BaselineFiles, CheckForm, CheckRequest};
pub use top::TopJob;
pub use trace::{TraceJob, MIN_INTERVAL};

use crate::arch::{self, VdsoFn};
use crate::cli::{BenchArgs, Cli, Command, DumpArgs, ServeArgs};
use crate::error::{Error, Result};
use crate::measure::bench::{self as bench, BenchRequest, Path as BenchPath};
use crate::render::{ColorChoice, Format, Output};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// What the command line asks for, typed: one variant per command.
#[derive(Debug, Clone)]
pub enum Request {
    Dump(DumpRequest),
    Maps(ProcessRequest),
    Auxv(ProcessRequest),
    Trace(TraceJob),
    Top(TopJob),
    Bench(BenchJob),
    Check(CheckRequest),
    Serve(ServeRequest),
    Completions(clap_complete::Shell),
    Man(ManRequest),
}

/// The request and the output it is written to, both resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub request: Request,
    pub out: Output,
}

/// Why a command line cannot run as typed (each is exit 2 unless its error
/// says otherwise).
#[derive(Debug)]
pub enum Refused {
    /// `--format`/`--json` the command has no form for: said as clap says
    /// its own usage errors, with the usage line (`render::format_refusal`).
    Format(String),
    /// Any other: a usage error, or what a look-up found (no such cgroup: 3;
    /// no cgroup v2 mount: 4).
    Error(Error),
}

impl From<Error> for Refused {
    fn from(e: Error) -> Refused {
        Refused::Error(e)
    }
}

/// `maps` and `auxv`: which process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessRequest {
    /// `-p PID`; `None`: vdsoctl's own process.
    pub pid: Option<i32>,
}

/// `dump`: where the image comes from, and where its bytes also go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpRequest {
    pub source: DumpSource,
    /// `-o OUT.so`: the raw image, byte for byte.
    pub output: Option<PathBuf>,
}

/// The image `dump` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpSource {
    /// The `[vdso]` of a process (`None`: vdsoctl's own).
    Process(Option<i32>),
    /// `--file PATH`.
    File(PathBuf),
}

/// `bench`: what to measure (clocks, functions and paths as typed values,
/// each once; an empty list on the command line means all), and the
/// baseline files.
#[derive(Debug, Clone)]
pub struct BenchJob {
    pub measure: BenchRequest,
    /// `--baseline FILE`: compare with it.
    pub baseline: Option<PathBuf>,
    /// `--save-baseline FILE`: write the new one.
    pub save_baseline: Option<PathBuf>,
}

/// `serve`: where to listen, how often to refresh, how many series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeRequest {
    /// The addresses `--listen` resolves to, tried in order.
    pub addrs: Vec<SocketAddr>,
    /// `--listen` as typed (said when it cannot be bound).
    pub listen: String,
    pub interval: Duration,
    pub max_series: usize,
}

/// `man`: which page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManRequest {
    /// `vdsoctl` for the overview, else the subcommand (a page of `cli::PAGES`).
    pub page: &'static str,
}

/// Resolve the command line: the format refused up front, the output's
/// terminal facts probed once, every argument typed and checked.
pub fn resolve(cli: &Cli) -> Result<Resolved, Refused> {
    let format = if cli.json { Format::Json } else { cli.format };
    let stacks = matches!(&cli.command, Command::Trace(t) if t.stacks);
    if let Some(why) = crate::render::format_refusal(cli.command.name(), format, stacks) {
        return Err(Refused::Format(why));
    }
    let color = if cli.no_color { ColorChoice::Never } else { cli.color };
    let out = Output::resolve(format, color);
    let request = match &cli.command {
        Command::Dump(args) => Request::Dump(dump(args)),
        Command::Maps(args) => Request::Maps(ProcessRequest { pid: args.pid }),
        Command::Auxv(args) => Request::Auxv(ProcessRequest { pid: args.pid }),
        Command::Trace(args) => Request::Trace(trace::resolve(args, &out)?),
        Command::Top(args) => Request::Top(top::resolve(args, &out)?),
        Command::Bench(args) => Request::Bench(bench(args)),
        Command::Check(args) => Request::Check(check::resolve(args)?),
        Command::Serve(args) => Request::Serve(serve(args)?),
        Command::Completions(args) => Request::Completions(args.shell),
        Command::Man(args) => Request::Man(man(args.command.as_deref())?),
    };
    Ok(Resolved { request, out })
}

fn dump(args: &DumpArgs) -> DumpRequest {
    let source = match &args.file {
        Some(path) => DumpSource::File(path.clone()),
        None => DumpSource::Process(args.pid),
    };
    DumpRequest { source, output: args.output.clone() }
}

/// `bench`'s selection: clap has checked every value; a clock, function or
/// path named twice is measured once.
fn bench(args: &BenchArgs) -> BenchJob {
    let mut clocks: Vec<i32> = Vec::new();
    for &c in &args.clocks {
        if !clocks.contains(&c) {
            clocks.push(c);
        }
    }
    if clocks.is_empty() {
        clocks = arch::CLOCKS.iter().map(|c| c.id).collect();
    }
    let functions: Vec<VdsoFn> = if !args.functions.is_empty() {
        dedup_sorted(&args.functions)
    } else if !args.clocks.is_empty() {
        // `--clocks` alone names what to measure and gate: the functions that
        // take a clock, not gettimeofday, time and getcpu beside them.
        bench::functions().into_iter().filter(|f| f.takes_clock()).collect()
    } else {
        bench::functions()
    };
    let paths = if args.paths.is_empty() { BenchPath::ALL.to_vec() } else { dedup_sorted(&args.paths) };
    let measure =
        BenchRequest { clocks, functions, paths, verify: args.verify, max_ns: args.max_ns, quick: args.quick };
    BenchJob { measure, baseline: args.baseline.clone(), save_baseline: args.save_baseline.clone() }
}

/// A list's values sorted, each once.
fn dedup_sorted<T: Ord + Copy>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v.dedup();
    v
}

fn serve(args: &ServeArgs) -> Result<ServeRequest> {
    Ok(ServeRequest {
        addrs: listen_addrs(&args.listen)?,
        listen: args.listen.clone(),
        interval: args.interval,
        max_series: args.max_series as usize,
    })
}

/// `--listen`: `HOST:PORT`, `[V6]:PORT`, or `:PORT` for every IPv4 interface.
fn listen_addrs(listen: &str) -> Result<Vec<SocketAddr>> {
    let text = if listen.starts_with(':') { format!("0.0.0.0{listen}") } else { listen.to_string() };
    let bad = |why: String| {
        Error::Usage(format!("--listen {listen:?}: {why} — give HOST:PORT, e.g. 127.0.0.1:10411 or :10411"))
    };
    let addrs: Vec<SocketAddr> = text.to_socket_addrs().map_err(|e| bad(e.to_string()))?.collect();
    if addrs.is_empty() {
        return Err(bad("no address".into()));
    }
    Ok(addrs)
}

/// `man [COMMAND]`: the page's name (clap admits only the pages' names).
fn man(command: Option<&str>) -> Result<ManRequest> {
    let name = command.unwrap_or("vdsoctl");
    let page = crate::cli::page(name).ok_or_else(|| Error::Usage(format!("no man page for {command:?}")))?;
    Ok(ManRequest { page: page.name })
}
