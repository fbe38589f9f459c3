//! `serve`'s `/metrics`, written: the families of `model::serve`'s judged
//! audit and per-process rates, with their HELP and TYPE, through the one
//! Prometheus writer ([`Prometheus`]). Each function returns one section,
//! replaced whole by its refresher; the order of families and samples here
//! is the exposition's.

use crate::model::serve::{Audit, Calls, Rates};
use crate::render::prom::{self, Kind, Prometheus, SyscallSeries, VsyscallSeries};
use crate::render::Render;
use std::time::Duration;

const TRACE_UP_HELP: &str =
    "1 when the trace engine counts clock syscalls system-wide, 0 when it could not start (see vdsoctl's stderr).";

/// The section every exposition starts with: which build serves it.
pub fn build_info() -> String {
    let mut p = Prometheus::default();
    p.info("build_info", "The vdsoctl build serving these metrics.", &[("version", env!("CARGO_PKG_VERSION"))]);
    p.finish()
}

/// The audit's section: the check report's families, then the facts
/// beside it; `took`: how long the audit and its bench took, `at`: when
/// it finished (seconds since the epoch).
pub fn audit(a: &Audit, took: Duration, at: f64) -> String {
    let mut text = a.report.as_ref().and_then(Render::render_prometheus).unwrap_or_default();
    let mut p = Prometheus::default();
    p.family(
        "check_observed",
        Kind::Gauge,
        "1 when the audit's verdict includes a window of observed clock syscalls; 0 before the first window \
         (vdsoctl_check_failed has no sample then unless the host facts already fail) or when none can be observed.",
    );
    p.sample("check_observed", &[], u64::from(a.observed));
    p.family(
        "vdso_serves",
        Kind::Gauge,
        "1 when this kernel's vDSO serves the call for vdsoctl's ABI (a syscall for it is a lost fast path), else 0.",
    );
    for s in &a.served {
        p.sample("vdso_serves", &[("function", &s.function), ("clock", s.clock.as_deref().unwrap_or(""))], s.serves);
    }
    if let Some((current, has_mode)) = &a.clocksource {
        let mode = match has_mode {
            Some(true) => "yes",
            Some(false) => "no",
            None => "if_stable",
        };
        p.info(
            "clocksource_info",
            "The current clocksource and whether it has a vDSO mode (yes, no, or if_stable: only when the hypervisor marks it stable).",
            &[("clocksource", current), ("vdso_mode", mode)],
        );
    }
    if let Some(release) = &a.release {
        p.info("kernel_info", "The running kernel's release.", &[("release", release)]);
    }
    if let Some(mode) = a.vsyscall {
        p.info(
            "vsyscall_info",
            "The [vsyscall] page mode: xonly (calls emulated), emulate (readable, emulated), none.",
            &[("mode", mode.as_str())],
        );
    }
    if let Some(symbols) = &a.symbols {
        p.family("vdso_symbol_info", Kind::Gauge, "A function the vDSO of this host's native ABI exports.");
        for (symbol, version) in symbols {
            p.sample("vdso_symbol_info", &[("symbol", symbol), ("version", version)], 1u64);
        }
    }
    p.family("audit_duration_seconds", Kind::Gauge, "How long the last audit and clock bench took.");
    p.sample("audit_duration_seconds", &[], took.as_secs_f64());
    p.family("audit_timestamp_seconds", Kind::Gauge, "When the last audit finished, in seconds since the epoch.");
    p.sample("audit_timestamp_seconds", &[], at);
    text += &p.finish();
    text
}

/// The per-process section while the engine counts; `at`: when the counts
/// were read (seconds since the epoch).
pub fn rates(r: &Rates, at: f64) -> String {
    let mut p = Prometheus::default();
    p.family("trace_up", Kind::Gauge, TRACE_UP_HELP);
    p.sample("trace_up", &[], 1u64);
    p.info(
        "trace_engine_info",
        "The engine counting the per-process clock syscalls: fentry, bpf (the sys_enter program) or perf.",
        &[("engine", r.engine)],
    );
    processes(&mut p, r);
    cpu_series(&mut p, r);
    exited_series(&mut p, r);
    p.family(
        "trace_series_capped",
        Kind::Gauge,
        "Per-process series with calls in the last interval left out by --max-series.",
    );
    p.sample("trace_series_capped", &[], r.capped);
    p.family(
        "clock_syscalls_unexported",
        Kind::Gauge,
        "Calls of live processes in no series (left out by --max-series): with every series and \
         vdsoctl_trace_lost_total and vdsoctl_trace_own_calls_total, what the kernel counted.",
    );
    p.sample("clock_syscalls_unexported", &[], r.unexported);
    p.family(
        "trace_lost_total",
        Kind::Counter,
        "Clock syscalls the trace engine could not keep anywhere (BPF: no row and no process entry; perf: records dropped).",
    );
    p.sample("trace_lost_total", &[], r.lost);
    p.family(
        "trace_own_calls_total",
        Kind::Counter,
        "Clock, getrandom and [vsyscall] calls of vdsoctl's own processes (this exporter, and any process \
         running its executable file: other serve, check, bench runs), left out of every series: told by the \
         file, not by name.",
    );
    p.sample("trace_own_calls_total", &[], r.own_calls);
    p.family(
        "trace_timestamp_seconds",
        Kind::Gauge,
        "When the per-process counts were last read, in seconds since the epoch.",
    );
    p.sample("trace_timestamp_seconds", &[], at);
    p.finish()
}

/// The per-process section when the engine could not start or stopped
/// (`why`: its error): `trace_up 0`, and what refused it —
/// `seccomp_profile` when a seccomp filter vdsoctl runs under refuses the
/// engines' syscalls (the fix is a profile, not capabilities), else
/// `refused` (the log says why).
pub fn trace_down(why: &crate::error::Error) -> String {
    use crate::error::{Error, Facility};
    let mut p = Prometheus::default();
    p.family("trace_up", Kind::Gauge, TRACE_UP_HELP);
    p.sample("trace_up", &[], 0u64);
    let (reason, syscalls) = match why {
        Error::Facility { what: Facility::FilterRefuses { refusal }, .. } => {
            ("seccomp_profile", refusal.syscalls.join(","))
        }
        _ => ("refused", String::new()),
    };
    p.info(
        "trace_down_info",
        "Why the trace engine does not count: seccomp_profile (a seccomp filter vdsoctl runs under refuses the \
         syscalls named, whatever its capabilities: run it under deploy/seccomp-vdsoctl.json) or refused (see \
         vdsoctl's stderr).",
        &[("reason", reason), ("syscalls", &syscalls)],
    );
    p.finish()
}

/// The live processes' series: syscalls, [vsyscall] calls, unattributed.
fn processes(p: &mut Prometheus, r: &Rates) {
    let rows: Vec<SyscallSeries<'_>> = (r.live.iter())
        .filter_map(|s| match &s.calls {
            Calls::Syscall(l) => Some(SyscallSeries {
                pid: s.pid,
                tid: None,
                start: (s.start != 0).then_some(s.start as f64),
                comm: Some(&s.comm),
                syscall: l.syscall,
                clock: l.clock.as_deref(),
                random: l.random,
                abi: l.abi,
                vdso_serves: l.vdso_serves,
                count: s.count,
                placement: Some(&l.placement),
            }),
            Calls::Vsyscall { .. } | Calls::Unattributed => None,
        })
        .collect();
    let vrows: Vec<VsyscallSeries<'_>> = (r.live.iter())
        .filter_map(|s| match &s.calls {
            Calls::Vsyscall { function } => {
                Some(VsyscallSeries { pid: s.pid, start: s.start, comm: Some(&s.comm), function, count: s.count })
            }
            Calls::Syscall(_) | Calls::Unattributed => None,
        })
        .collect();
    prom::clock_syscalls(p, "since the exporter started", &rows);
    prom::vsyscall_emulations(p, "since the exporter started", &vrows);
    p.family(
        "clock_syscalls_unattributed_total",
        Kind::Counter,
        "Clock syscalls of a process counted in its total but in no vdsoctl_clock_syscalls_total series \
         (the trace engine's row map was full): a process's calls are the sum of both.",
    );
    for s in &r.live {
        if let Calls::Unattributed = s.calls {
            let (pid, start) = (s.pid.to_string(), prom::start_label(s.start));
            p.sample(
                "clock_syscalls_unattributed_total",
                &[("pid", &pid), ("start", &start), ("comm", &s.comm)],
                s.count,
            );
        }
    }
}

/// CPU seconds the kept series' calls cost (count × one raw syscall's
/// cost here, as the audit's bench last measured it).
fn cpu_series(p: &mut Prometheus, r: &Rates) {
    p.family(
        "clock_syscalls_cpu_seconds_total",
        Kind::Counter,
        "CPU time a process's syscalls of the vDSO's functions cost: each interval's calls times one raw \
         syscall's cost here (the audit's bench, path=\"syscall\"); host-ABI series only; vdso_serves=\"true\": \
         the CPU time a lost fast path costs.",
    );
    for s in &r.live {
        let Calls::Syscall(l) = &s.calls else { continue };
        let Some(secs) = l.cpu_seconds else { continue };
        let (pid, start) = (s.pid.to_string(), prom::start_label(s.start));
        let labels = [
            ("pid", pid.as_str()),
            ("start", start.as_str()),
            ("comm", s.comm.as_str()),
            ("syscall", l.syscall),
            ("clock", l.clock.as_deref().unwrap_or_default()),
            ("random", l.random.unwrap_or_default()),
            ("abi", l.abi),
            ("vdso_serves", if l.vdso_serves { "true" } else { "false" }),
        ];
        p.sample("clock_syscalls_cpu_seconds_total", &labels, secs);
    }
}

/// The exited processes' aggregates.
fn exited_series(p: &mut Prometheus, r: &Rates) {
    p.family(
        "exited_clock_syscalls_total",
        Kind::Counter,
        "Syscalls of the vDSO's functions made by processes that have exited, per name, cgroup (and the \
         container and pod it names), syscall and clock (at most --max-series names; the rest under \
         comm=\"other\"); no syscall label: calls whose split was lost.",
    );
    for (a, v) in &r.exited {
        // The container and pod the cgroup names: a function of the
        // cgroup, so they add no series.
        let place = crate::model::cgroup::Placement::of(Some(a.cgroup.as_str()).filter(|c| !c.is_empty()));
        let (container, pod_uid) = prom::container_labels(&place);
        let labels = [
            ("comm", a.comm.as_str()),
            ("cgroup", a.cgroup.as_str()),
            ("container_id", container.as_str()),
            ("pod_uid", pod_uid.as_str()),
            ("syscall", a.syscall),
            ("clock", a.clock.as_str()),
            ("random", a.random),
            ("vdso_serves", if a.vdso_serves { "true" } else { "false" }),
        ];
        p.sample("exited_clock_syscalls_total", &labels, *v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::kernel::VsyscallMode;
    use crate::model::cgroup::Placement;
    use crate::model::serve::{Aggregate, LiveSeries, Served, SyscallLabels};

    fn families(text: &str) -> Vec<&str> {
        text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).collect()
    }

    const KUBE_CGROUP: &str = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5f3f4a8e_6d3c_4b21_9a3e_0c8f5a3b9d10.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope";

    fn sample_rates() -> Rates {
        let labels = SyscallLabels {
            syscall: "clock_gettime",
            clock: Some("CLOCK_MONOTONIC".into()),
            random: None,
            abi: "x86_64",
            vdso_serves: true,
            placement: Placement::of(Some("/system.slice/web.service")),
            cpu_seconds: Some(1e-4),
        };
        let live = |calls| LiveSeries { pid: 100, start: 0, comm: "me".into(), count: 9, calls };
        let date = Aggregate {
            comm: "date".into(),
            cgroup: "/system.slice/web.service".into(),
            syscall: "clock_gettime",
            clock: "CLOCK_MONOTONIC".into(),
            random: "",
            vdso_serves: true,
        };
        let other = Aggregate { comm: "other".into(), cgroup: String::new(), ..date.clone() };
        let pod = Aggregate { comm: "job".into(), cgroup: KUBE_CGROUP.into(), ..date.clone() };
        Rates {
            engine: "bpf",
            live: vec![
                live(Calls::Syscall(labels)),
                live(Calls::Vsyscall { function: "time" }),
                live(Calls::Unattributed),
            ],
            exited: vec![(date, 5), (other, 2), (pod, 3)],
            capped: 1,
            unexported: 10,
            lost: 2,
            own_calls: 3,
        }
    }

    /// The per-process section's families, in the exposition's order, and
    /// a sample of each kind as `/metrics` has always written it.
    #[test]
    fn the_rates_section_keeps_its_families_labels_and_order() {
        let text = rates(&sample_rates(), 1.5);
        assert_eq!(
            families(&text),
            [
                "vdsoctl_trace_up",
                "vdsoctl_trace_engine_info",
                "vdsoctl_clock_syscalls_total",
                "vdsoctl_vsyscall_emulations_total",
                "vdsoctl_clock_syscalls_unattributed_total",
                "vdsoctl_clock_syscalls_cpu_seconds_total",
                "vdsoctl_exited_clock_syscalls_total",
                "vdsoctl_trace_series_capped",
                "vdsoctl_clock_syscalls_unexported",
                "vdsoctl_trace_lost_total",
                "vdsoctl_trace_own_calls_total",
                "vdsoctl_trace_timestamp_seconds",
            ]
        );
        for line in [
            "vdsoctl_trace_up 1\n",
            "vdsoctl_trace_engine_info{engine=\"bpf\"} 1\n",
            "vdsoctl_clock_syscalls_total{pid=\"100\",comm=\"me\",syscall=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",\
             abi=\"x86_64\",vdso_serves=\"true\",cgroup=\"/system.slice/web.service\",unit=\"web.service\"} 9\n",
            "vdsoctl_vsyscall_emulations_total{pid=\"100\",comm=\"me\",function=\"time\"} 9\n",
            "vdsoctl_clock_syscalls_unattributed_total{pid=\"100\",comm=\"me\"} 9\n",
            "vdsoctl_clock_syscalls_cpu_seconds_total{pid=\"100\",comm=\"me\",syscall=\"clock_gettime\",\
             clock=\"CLOCK_MONOTONIC\",abi=\"x86_64\",vdso_serves=\"true\"} 0.0001\n",
            "vdsoctl_exited_clock_syscalls_total{comm=\"date\",cgroup=\"/system.slice/web.service\",\
             syscall=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",vdso_serves=\"true\"} 5\n",
            "vdsoctl_exited_clock_syscalls_total{comm=\"other\",syscall=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",\
             vdso_serves=\"true\"} 2\n",
            &format!(
                "vdsoctl_exited_clock_syscalls_total{{comm=\"job\",cgroup=\"{KUBE_CGROUP}\",\
                 container_id=\"containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\",\
                 pod_uid=\"5f3f4a8e-6d3c-4b21-9a3e-0c8f5a3b9d10\",syscall=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",\
                 vdso_serves=\"true\"}} 3\n"
            ),
            "vdsoctl_trace_series_capped 1\n",
            "vdsoctl_clock_syscalls_unexported 10\n",
            "vdsoctl_trace_lost_total 2\n",
            "vdsoctl_trace_own_calls_total 3\n",
            "vdsoctl_trace_timestamp_seconds 1.5\n",
        ] {
            assert!(text.contains(line), "{line}in\n{text}");
        }
    }

    #[test]
    fn a_stopped_engine_is_trace_up_0_and_why() {
        use crate::error::{Error, Facility, Hint};
        use crate::measure::kernel::filter::FilterRefusal;
        let other = Error::Facility { what: Facility::PerfUnavailable, hint: Hint::PerfSeccomp, errno: None };
        let text = trace_down(&other);
        assert_eq!(families(&text), ["vdsoctl_trace_up", "vdsoctl_trace_down_info"]);
        assert!(text.contains("\nvdsoctl_trace_up 0\n"), "{text}");
        assert!(text.ends_with("\nvdsoctl_trace_down_info{reason=\"refused\"} 1\n"), "{text}");
        let refusal = FilterRefusal {
            syscalls: vec!["bpf", "perf_event_open"],
            filters: 1,
            errno: Some(libc::EPERM),
            caps_held: true,
        };
        let filtered =
            Error::Facility { what: Facility::FilterRefuses { refusal }, hint: Hint::SeccompProfile, errno: None };
        let text = trace_down(&filtered);
        assert!(
            text.ends_with(
                "\nvdsoctl_trace_down_info{reason=\"seccomp_profile\",syscalls=\"bpf,perf_event_open\"} 1\n"
            ),
            "{text}"
        );
        assert_eq!(
            filtered.to_string(),
            "no trace engine here: the seccomp profile vdsoctl runs under (1 filter) refuses bpf(2) and \
             perf_event_open(2) (EPERM), not its capabilities: it holds CAP_BPF and CAP_PERFMON — run it under \
             deploy/seccomp-vdsoctl.json, the container engine's default profile plus bpf and perf_event_open \
             (podman or docker: `--security-opt seccomp=seccomp-vdsoctl.json`; Kubernetes: `seccompProfile: \
             {type: Localhost, localhostProfile: vdsoctl/seccomp-vdsoctl.json}`, the file in the kubelet's seccomp \
             directory)"
        );
    }

    /// The audit's facts after its report (here none: it could not run),
    /// in the exposition's order; a function without a clock has no
    /// clock label.
    #[test]
    fn the_audit_section_keeps_its_families_labels_and_order() {
        let a = Audit {
            report: None,
            observed: true,
            served: vec![
                Served { function: "clock_gettime".into(), clock: Some("CLOCK_MONOTONIC".into()), serves: true },
                Served { function: "time".into(), clock: None, serves: true },
            ],
            clocksource: Some(("kvm-clock".into(), None)),
            release: Some("6.18.0".into()),
            vsyscall: Some(VsyscallMode::Xonly),
            symbols: Some(vec![("__vdso_time".into(), "LINUX_2.6".into())]),
            costs: None,
        };
        let text = audit(&a, Duration::from_millis(250), 1.5);
        assert_eq!(
            families(&text),
            [
                "vdsoctl_check_observed",
                "vdsoctl_vdso_serves",
                "vdsoctl_clocksource_info",
                "vdsoctl_kernel_info",
                "vdsoctl_vsyscall_info",
                "vdsoctl_vdso_symbol_info",
                "vdsoctl_audit_duration_seconds",
                "vdsoctl_audit_timestamp_seconds",
            ]
        );
        for line in [
            "vdsoctl_check_observed 1\n",
            "vdsoctl_vdso_serves{function=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\"} 1\n",
            "vdsoctl_vdso_serves{function=\"time\"} 1\n",
            "vdsoctl_clocksource_info{clocksource=\"kvm-clock\",vdso_mode=\"if_stable\"} 1\n",
            "vdsoctl_kernel_info{release=\"6.18.0\"} 1\n",
            "vdsoctl_vsyscall_info{mode=\"xonly\"} 1\n",
            "vdsoctl_vdso_symbol_info{symbol=\"__vdso_time\",version=\"LINUX_2.6\"} 1\n",
            "vdsoctl_audit_duration_seconds 0.25\n",
            "vdsoctl_audit_timestamp_seconds 1.5\n",
        ] {
            assert!(text.contains(line), "{line}in\n{text}");
        }
        // Without the image or the [vsyscall] facts, no family at all.
        let bare = Audit { symbols: None, vsyscall: None, clocksource: None, release: None, ..a };
        let text = audit(&bare, Duration::ZERO, 0.0);
        assert!(!text.contains("vdso_symbol_info") && !text.contains("vsyscall_info"), "{text}");
    }
}
