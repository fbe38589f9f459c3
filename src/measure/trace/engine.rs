//! One face over the four ways `trace` counts: the fentry and BPF engines
//! (in-kernel aggregation, the default; `engines/bpf`), the perf engine (tracepoint counters and
//! sampled rings, the fallback where BPF is refused) and, for a command
//! only, the seccomp engine (user notification: no privilege at all).
//! `cmd::trace`, `check` and the exporter drive this, never an engine directly.

use crate::arch::Abi;
use crate::error::{Error, Facility, Hint, Misuse, Result};
use crate::inspect::cgroup::CgroupDir;
use crate::inspect::Process;
use crate::measure::kernel::tracefs::Tracefs;
use crate::measure::sys::seccomp::{Listener, Program};
use crate::measure::trace::engines::bpf::{self, BpfTracer};
use crate::measure::trace::engines::perf::{Attach, Events, Tracer};
use crate::measure::trace::engines::seccomp::SeccompTracer;
use crate::measure::trace::Tally;
use crate::progress::Kind;

/// Which engine the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Choice {
    /// fentry where the kernel allows it, else BPF on sys_enter, else perf, else (for `-- CMD`) seccomp.
    #[default]
    Auto,
    /// BPF programs on the clock syscall functions: other syscalls pay nothing (needs BPF
    /// trampolines and BTF for them; not under lockdown).
    Fentry,
    /// In-kernel aggregation (needs CAP_BPF and CAP_PERFMON, BTF).
    Bpf,
    /// Tracepoint counters and sampled records (needs CAP_PERFMON, tracefs).
    Perf,
    /// seccomp-stops, `-- CMD` only (needs no privilege; each clock syscall stops ~10 µs for vdsoctl).
    Seccomp,
}

/// What to count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Every process (`-a`) rather than the trees added one by one.
    pub all: bool,
    /// Rows per thread.
    pub per_thread: bool,
    /// Perf engine: skip the compat samplers (`--native-only`).
    pub native_only: bool,
    /// Perf engine: one counter per syscall (`--no-split`).
    pub no_split: bool,
    /// The target is a command started by vdsoctl (`-- CMD`): the only
    /// target the seccomp engine can count.
    pub command: bool,
    /// `--cgroup`: only processes in these cgroups (or below), filtered in
    /// the kernel — the BPF engine only.
    pub cgroups: Vec<CgroupDir>,
    /// Split rows by call site (`--sites`): BPF and seccomp only.
    pub sites: bool,
    /// Count each call's user stack too (`--stacks`, BPF engine only: no
    /// fallback to an engine that would drop them).
    pub stacks: bool,
}

/// An engine with its targets, counting or about to.
#[derive(Debug)]
pub enum Counting {
    Bpf(Box<BpfTracer>),
    Perf(Box<Tracer>),
    Seccomp(Box<SeccompTracer>),
}

/// The engine chosen, and why it is not the preferred one when it is not.
#[derive(Debug)]
pub struct Opened {
    pub counting: Counting,
    pub fallback_reason: Option<String>,
}

/// The fallback worth announcing: none when fentry was refused and the
/// `sys_enter` program counts the same (the BPF engine still counts), the
/// reason otherwise. `trace`, `check` and `serve` all decide it here.
pub fn announced_fallback(kind: Kind, reason: Option<&str>) -> Option<&str> {
    reason.filter(|_| kind != Kind::Bpf)
}

impl Counting {
    /// Open the engine `choice` names for `plan`. `auto` tries BPF and falls
    /// back to perf, keeping BPF's refusal as the reason; when both refuse,
    /// the error names both.
    pub fn open(choice: Choice, plan: &Plan) -> Result<Opened> {
        Counting::refuse_misuse(choice, plan, crate::arch::SITE_REGS.is_some())?;
        // Whatever the engine: perf holds fds per thread, seccomp reads
        // /proc per new process; neither should meet a soft limit first.
        raise_fd_limit();
        let perf_only = plan.native_only || plan.no_split;
        // Every choice decided here: a new engine is a new arm.
        match choice {
            // Chosen, not fallen back to: there is no other engine's refusal to tell.
            Choice::Seccomp => Counting::open_seccomp(plan).map(|c| Opened { counting: c, fallback_reason: None }),
            Choice::Perf => Ok(Opened { counting: Counting::open_perf(plan)?, fallback_reason: None }),
            Choice::Auto if perf_only => Ok(Opened {
                counting: Counting::open_perf(plan)?,
                fallback_reason: Some(Misuse::PerfOnlyModes.to_string()),
            }),
            Choice::Auto | Choice::Fentry | Choice::Bpf => Counting::open_bpf(choice, plan),
        }
    }

    /// The BPF engine (fentry first where `choice` allows it), falling back
    /// under `auto` as [`Counting::open`] says.
    fn open_bpf(choice: Choice, plan: &Plan) -> Result<Opened> {
        let scope = if plan.all { bpf::Scope::All } else { bpf::Scope::Trees };
        // In a PID namespace (a container) the programs count and key pids
        // as the namespace sees them (bpf_get_ns_current_pid_tgid).
        // fentry first where it may run: the same counts, and other
        // syscalls pay nothing; refused (probed before any map is made),
        // the sys_enter program with the refusal as the note.
        let probed = matches!(choice, Choice::Auto | Choice::Fentry).then(bpf::FentryPoints::probe);
        let (points, note) = match probed {
            Some(Ok(p)) => (Some(p), None),
            Some(Err(e)) if choice == Choice::Fentry => return Err(e),
            Some(Err(e)) => (None, Some(short(&e.to_string()).to_string())),
            None => (None, None),
        };
        let loaded = BpfTracer::load(&bpf::Options {
            scope,
            per_thread: plan.per_thread,
            stacks: plan.stacks,
            cgroups: &plan.cgroups,
            sites: plan.sites,
            fentry: points.as_ref(),
        })
        .map(|t| (t, note));
        match loaded {
            Ok((t, note)) => Ok(Opened { counting: Counting::Bpf(Box::new(t)), fallback_reason: note }),
            // Nothing else keeps stacks or filters by cgroup: no fallback.
            Err(e) if matches!(choice, Choice::Bpf | Choice::Fentry) || plan.stacks || !plan.cgroups.is_empty() => {
                Err(e)
            }
            // --sites: the perf engine cannot; a command still has seccomp.
            Err(bpf_err) if plan.sites && plan.command => Ok(Opened {
                counting: Counting::open_seccomp(plan)?,
                fallback_reason: Some(short(&bpf_err.to_string()).to_string()),
            }),
            Err(bpf_err) if plan.sites => Err(bpf_err),
            Err(bpf_err) => Counting::fall_back_from_bpf(plan, bpf_err),
        }
    }

    /// BPF refused under `auto` (and nothing asked for what only it does,
    /// nor a perf-only mode: those went to perf first): perf, else for a
    /// command the seccomp engine, else an error naming both refusals.
    fn fall_back_from_bpf(plan: &Plan, bpf_err: Error) -> Result<Opened> {
        match Counting::open_perf(plan) {
            // The reason without its hint: BPF's hints advise `--engine perf`,
            // which is what runs now (and `check` has no --engine).
            Ok(c) => Ok(Opened { counting: c, fallback_reason: Some(short(&bpf_err.to_string()).to_string()) }),
            // A command can still be counted without any privilege.
            Err(perf_err) if plan.command => Ok(Opened {
                counting: Counting::open_seccomp(plan)?,
                fallback_reason: Some(format!("{}; and {}", short(&bpf_err.to_string()), short(&perf_err.to_string()))),
            }),
            // A seccomp filter in front of both (a container's default
            // profile) answers EPERM as a missing capability would: the
            // probe tells them apart, and the fix is the profile.
            Err(perf_err) => Err(match crate::measure::kernel::filter::refusal() {
                Some(refusal) => Error::Facility {
                    errno: refusal.errno,
                    what: Facility::FilterRefuses { refusal },
                    hint: Hint::SeccompProfile,
                },
                None => Error::Facility {
                    errno: None,
                    what: Facility::NoEngine { bpf: Box::new(bpf_err), perf: Box::new(perf_err) },
                    hint: if nix::unistd::geteuid().is_root() {
                        Hint::EnginesRootRefused
                    } else {
                        Hint::EnginesPrivilege
                    },
                },
            }),
        }
    }

    /// Options the chosen engine cannot honour: a usage error before
    /// anything is opened (the resolve step asks it before any work, `open`
    /// again for its other callers). `site_regs`: whether this
    /// architecture's call-site registers are read (`arch::SITE_REGS`).
    pub fn refuse_misuse(choice: Choice, plan: &Plan, site_regs: bool) -> Result<()> {
        let perf_only = plan.native_only || plan.no_split;
        if plan.sites && !site_regs {
            return Err(Error::Misuse(Misuse::SitesOffX86));
        }
        if !plan.cgroups.is_empty() && matches!(choice, Choice::Perf | Choice::Seccomp) {
            return Err(Error::Misuse(Misuse::CgroupNeedsBpf));
        }
        if plan.stacks && matches!(choice, Choice::Perf | Choice::Seccomp) {
            return Err(Error::Misuse(Misuse::StacksNeedBpf));
        }
        if plan.sites && (matches!(choice, Choice::Perf) || (perf_only && choice != Choice::Seccomp)) {
            return Err(Error::Misuse(Misuse::SitesNeedRegisters));
        }
        if plan.stacks && perf_only {
            return Err(Error::Misuse(Misuse::StacksNeedBpf));
        }
        Ok(())
    }

    fn open_seccomp(plan: &Plan) -> Result<Counting> {
        if !plan.command {
            return Err(Error::Misuse(Misuse::SeccompNeedsCommand));
        }
        if plan.native_only || plan.no_split {
            return Err(Error::Misuse(Misuse::PerfOnlyModes));
        }
        // The filter's fd is made in the command's child, before its exec:
        // nothing is opened here, and a refusal is known at the fork.
        Ok(Counting::Seccomp(Box::new(SeccompTracer::new(plan.per_thread, plan.sites)?)))
    }

    fn open_perf(plan: &Plan) -> Result<Counting> {
        if plan.per_thread {
            return Err(Error::Misuse(Misuse::PerThreadNeedsBpf));
        }
        let tracefs = Tracefs::find_or_mount()?;
        let mut tracer = Tracer::new(Events::load(&tracefs)?);
        if plan.native_only {
            tracer.native_only();
        }
        if plan.no_split {
            tracer.no_split();
        }
        if plan.all {
            tracer.attach_system(&crate::inspect::kernel::online_cpus()?)?;
        }
        Ok(Counting::Perf(Box::new(tracer)))
    }

    /// Which engine this is.
    pub fn kind(&self) -> Kind {
        match self {
            Counting::Bpf(t) if t.is_fentry() => Kind::Fentry,
            Counting::Bpf(_) => Kind::Bpf,
            Counting::Perf(_) => Kind::Perf,
            Counting::Seccomp(_) => Kind::Seccomp,
        }
    }

    /// The seccomp filter a command must install before its exec, for the
    /// seccomp engine.
    pub fn command_filter(&self) -> Option<&Program> {
        match self {
            Counting::Seccomp(t) => Some(t.program()),
            _ => None,
        }
    }

    /// Seccomp engine counting through a listener (ptrace refused).
    pub fn seccomp_listener(&self) -> bool {
        matches!(self, Counting::Seccomp(t) if !t.is_traced())
    }

    /// Seccomp engine: after its ptrace seize was refused, count through
    /// a listener instead (the command is forked again); whether it will.
    pub fn fall_back_from_ptrace(&mut self) -> bool {
        match self {
            Counting::Seccomp(t) if t.is_traced() => t.use_listener().is_ok(),
            _ => false,
        }
    }

    /// Seccomp engine: when the last process of the command's tree was gone
    /// (`None` while one lives). Other engines do not hold the tree up.
    pub fn tree_ended(&self) -> Option<Option<std::time::Instant>> {
        match self {
            Counting::Seccomp(t) => Some(t.tree_ended()),
            _ => None,
        }
    }

    /// Count a running process (`-p`), its threads, and what it forks from
    /// now on. `ppid` is reported as its parent.
    pub fn add_process(&mut self, process: &Process, abi: Abi, ppid: Option<i32>) -> Result<()> {
        match self {
            Counting::Seccomp(_) => Err(Error::Misuse(Misuse::SeccompNotPid)),
            Counting::Bpf(t) => t.add_root(process.pid(), ppid),
            Counting::Perf(t) => {
                t.attach_process(process, abi, Attach { inherit: true, enable_on_exec: false, start_disabled: true })?;
                t.set_comm(process.pid(), Some(process.comm().to_string()));
                Ok(())
            }
        }
    }

    /// Count a forked child held before its exec (`-- CMD`), from its exec;
    /// the seccomp engine takes the listener of the filter it installed.
    pub fn add_command(&mut self, pid: i32, abi: Abi, comm: &str, listener: Option<Listener>) -> Result<()> {
        match self {
            Counting::Seccomp(t) if t.is_traced() => {
                t.supervise_traced(pid, std::process::id() as i32).map_err(|e| Error::Facility {
                    errno: e.raw_os_error(),
                    what: Facility::SeccompSupervisor { source: e },
                    hint: Hint::PtraceRefused,
                })
            }
            Counting::Seccomp(t) => {
                let listener = listener.ok_or(Error::Facility {
                    errno: None,
                    what: Facility::SeccompUnfiltered,
                    hint: Hint::RetryOrReportAgain,
                })?;
                t.supervise(listener, pid, std::process::id() as i32).map_err(|e| Error::Facility {
                    errno: e.raw_os_error(),
                    what: Facility::SeccompSupervisor { source: e },
                    hint: Hint::Retry,
                })
            }
            Counting::Bpf(t) => t.add_root(pid, Some(std::process::id() as i32)),
            Counting::Perf(t) => {
                t.attach_task(pid, pid, abi, Attach { inherit: true, enable_on_exec: true, start_disabled: false })?;
                t.set_comm(pid, Some(comm.to_string()));
                Ok(())
            }
        }
    }

    /// Start counting every target at once.
    pub fn start(&mut self) -> Result<()> {
        match self {
            Counting::Bpf(t) => t.attach(),
            Counting::Perf(t) => t.enable(),
            // Counting starts with the command's exec: the filter is in place.
            Counting::Seccomp(_) => Ok(()),
        }
    }

    /// Between snapshots: the perf engine drains its rings (the others
    /// have none). Never blocks.
    pub fn pump(&mut self) {
        match self {
            Counting::Perf(t) => t.drain(),
            Counting::Bpf(_) | Counting::Seccomp(_) => {}
        }
    }

    /// After each look at new processes: the BPF engine's `--sites` stops
    /// reading the stack word where it names no caller
    /// ([`BpfTracer::tend_sites`]).
    pub fn tend_sites(&mut self, seen: &crate::measure::trace::sight::Sightings) {
        if let Counting::Bpf(t) = self {
            t.tend_sites(seen);
        }
    }

    /// Whether `pump` must run every few milliseconds (rings to drain).
    pub fn needs_pump(&self) -> bool {
        match self {
            Counting::Perf(t) => t.has_rings(),
            Counting::Bpf(_) | Counting::Seccomp(_) => false,
        }
    }

    /// Stop counting; the next snapshot is final.
    pub fn stop(&mut self) {
        match self {
            Counting::Bpf(t) => t.detach(),
            Counting::Perf(t) => t.disable(),
            Counting::Seccomp(t) => t.stop(),
        }
    }

    /// Counts so far.
    pub fn snapshot(&mut self) -> Result<Tally> {
        match self {
            Counting::Bpf(t) => {
                let mut tally = t.snapshot()?;
                // Processes that existed before counting began have no fork
                // record: their parent from /proc while they live.
                let pids: Vec<i32> = tally.counts.keys().map(|k| k.pid).collect();
                for pid in pids {
                    if let std::collections::btree_map::Entry::Vacant(e) = tally.parents.entry(pid) {
                        if let Some(ppid) = crate::inspect::process::parent_of(pid) {
                            e.insert(ppid);
                        }
                    }
                }
                cgroups_of(&mut tally);
                Ok(tally)
            }
            Counting::Perf(t) => {
                let mut tally = t.snapshot()?;
                let pids = tally.pids();
                for pid in pids {
                    if let Some(c) = t.comm(pid) {
                        tally.comms.entry(pid).or_insert_with(|| c.to_string());
                    }
                }
                cgroups_of(&mut tally);
                Ok(tally)
            }
            Counting::Seccomp(t) => {
                let mut tally = t.snapshot();
                cgroups_of(&mut tally);
                Ok(tally)
            }
        }
    }

    /// Drop the rows of processes `gone(pid, start)` says have exited (BPF
    /// engine: its maps are bounded; the perf engine keeps no per-process
    /// state to drop). `start` is `Key::start`.
    pub fn forget(&mut self, gone: impl Fn(i32, u64) -> bool) {
        if let Counting::Bpf(t) = self {
            t.forget(gone);
        }
    }

    /// The processes counted so far, (pid, start as `Key::start`; 0 for the
    /// perf engine, which keeps none), for a first look while they live.
    /// Cheap: no count is read.
    pub fn processes(&self) -> Vec<(i32, u64)> {
        match self {
            Counting::Bpf(t) => t.processes(),
            Counting::Perf(t) => t.pids().into_iter().map(|p| (p, 0)).collect(),
            Counting::Seccomp(t) => t.snapshot().counts.keys().map(|k| (k.pid, k.start)).collect(),
        }
    }

    /// Whether 32-bit calls are counted (all but the perf engine's `--native-only`).
    pub fn traces_compat(&self) -> bool {
        match self {
            Counting::Bpf(_) | Counting::Seccomp(_) => true,
            Counting::Perf(t) => t.traces_compat(),
        }
    }
}

/// The first clause of an error's text, for a message that joins two.
pub use crate::error::short;

/// The perf engine holds a few dozen fds per thread (the seccomp engine a
/// few while it reads a call): lift the soft limit to the hard one first
/// (what a shell's `ulimit -n` would do).
fn raise_fd_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

/// The cgroup v2 path of each counted process that still lives (read from
/// /proc/PID/cgroup when the window is taken: one that exited has none).
fn cgroups_of(tally: &mut Tally) {
    let pids = tally.pids();
    for pid in pids {
        if let std::collections::btree_map::Entry::Vacant(e) = tally.cgroups.entry(pid) {
            if let Some(path) = crate::inspect::cgroup::of_process(pid) {
                e.insert(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--sites` where no call-site registers are read (arm64 today) is a
    /// usage error for every engine, said before the engine's own limits;
    /// where they are, only the perf engine refuses it.
    #[test]
    fn sites_are_refused_where_no_call_site_registers_are_read() {
        let plan = Plan { sites: true, command: true, ..Plan::default() };
        let refused = |choice, regs| match Counting::refuse_misuse(choice, &plan, regs) {
            Err(Error::Misuse(m)) => Some(m),
            Err(e) => panic!("{e}"),
            Ok(()) => None,
        };
        for choice in [Choice::Auto, Choice::Fentry, Choice::Bpf, Choice::Perf, Choice::Seccomp] {
            assert_eq!(refused(choice, false), Some(Misuse::SitesOffX86), "{choice:?}");
        }
        assert_eq!(refused(Choice::Perf, true), Some(Misuse::SitesNeedRegisters));
        for choice in [Choice::Auto, Choice::Fentry, Choice::Bpf, Choice::Seccomp] {
            assert_eq!(refused(choice, true), None, "{choice:?}");
        }
        let quiet = Plan { sites: false, ..plan.clone() };
        assert!(Counting::refuse_misuse(Choice::Bpf, &quiet, false).is_ok());
    }
}
