//! Prometheus text exposition, format 0.0.4 — the one writer behind every
//! command's `--format prometheus` and `serve`'s `/metrics`.
//!
//! What it guarantees, so no caller has to remember
//! (<https://prometheus.io/docs/instrumenting/exposition_formats/>):
//! - every family once, `vdsoctl_`-prefixed, with `# HELP` and `# TYPE`,
//!   its samples together;
//! - no empty label: a label whose value is empty is left out (Prometheus
//!   reads an empty label as an absent one; writing `clock=""` only adds noise);
//! - label values and help text escaped as the format requires;
//! - values without float noise: integers exactly, other values rounded to
//!   12 significant digits (`131.65e-9` is written `1.3165e-7`, not
//!   `0.00000013165000000000002`).

use crate::model::cgroup::Placement;
use std::collections::HashSet;
use std::fmt::Write as _;

/// The Content-Type of text exposition 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The metric kinds vdsoctl writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// Monotonic; its name must end in `_total`.
    Counter,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

impl From<&str> for Kind {
    /// `"counter"` is a counter; anything else a gauge.
    fn from(s: &str) -> Kind {
        if s == "counter" {
            Kind::Counter
        } else {
            Kind::Gauge
        }
    }
}

/// A sample value: an exact integer or a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i128),
    Float(f64),
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(i128::from(v))
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(i128::from(v))
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(i128::from(v))
    }
}

/// Largest integer an f64 holds exactly (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// A value as the exposition writes it: `NaN`, `+Inf`, an integer, or the
/// shortest text of the value rounded to 12 significant digits.
pub fn format_value(v: Value) -> String {
    let v = match v {
        Value::Int(i) => return i.to_string(),
        Value::Float(v) => v,
    };
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    if v.fract() == 0.0 && v.abs() < EXACT {
        return format!("{}", v as i64);
    }
    let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
    if (1e-4..1e15).contains(&rounded.abs()) {
        format!("{rounded}")
    } else {
        format!("{rounded:e}")
    }
}

/// Escape a label value: backslash, double quote and newline.
fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// `[a-zA-Z_][a-zA-Z0-9_]*` (label names; metric names without the colon).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Builds one exposition: call [`Prometheus::family`] once per family, then
/// [`Prometheus::sample`] for each of its samples, then `finish`.
#[derive(Debug, Default)]
pub struct Prometheus {
    text: String,
    families: HashSet<String>,
    current: String,
}

impl Prometheus {
    /// Start a metric family (`vdsoctl_` is prefixed). Starting a family a
    /// second time is a bug (its samples would be split): debug builds panic,
    /// release builds write the samples under the first header.
    pub fn family(&mut self, name: &str, kind: impl Into<Kind>, help: &str) {
        let kind = kind.into();
        debug_assert!(valid_name(name), "bad metric name {name:?}");
        debug_assert!(kind != Kind::Counter || name.ends_with("_total"), "counter {name} must end in _total");
        let full = format!("vdsoctl_{name}");
        let fresh = self.families.insert(full.clone());
        debug_assert!(fresh, "metric family {full} started twice");
        if fresh {
            let help = help.replace('\\', "\\\\").replace('\n', "\\n");
            let _ = writeln!(self.text, "# HELP {full} {help}");
            let _ = writeln!(self.text, "# TYPE {full} {}", kind.name());
        }
        self.current = name.to_string();
    }

    /// One sample of the family just started. Labels with an empty value
    /// are left out.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Into<Value>) {
        debug_assert_eq!(name, self.current, "sample of {name} outside its family");
        let _ = write!(self.text, "vdsoctl_{name}");
        let mut first = true;
        for (k, v) in labels.iter().filter(|(_, v)| !v.is_empty()) {
            debug_assert!(valid_name(k) && !k.starts_with("__"), "bad label name {k:?}");
            self.text.push(if first { '{' } else { ',' });
            first = false;
            let _ = write!(self.text, "{k}=\"{}\"", escape_label(v));
        }
        if !first {
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", format_value(value.into()));
    }

    /// An `_info` family with one sample of value 1 carrying `labels`.
    pub fn info(&mut self, name: &str, help: &str, labels: &[(&str, &str)]) {
        debug_assert!(name.ends_with("_info"), "info metric {name} must end in _info");
        self.family(name, Kind::Gauge, help);
        self.sample(name, labels, 1u64);
    }

    /// Whether a family was started (for writers that combine sections).
    pub fn has_family(&self, name: &str) -> bool {
        self.families.contains(&format!("vdsoctl_{name}"))
    }

    /// The finished exposition text.
    pub fn finish(self) -> String {
        self.text
    }
}

/// One per-process clock syscall series, as `trace --format prometheus` and
/// `serve` both write it.
#[derive(Debug, Clone, Copy)]
pub struct SyscallSeries<'a> {
    pub pid: i32,
    /// The thread, for per-thread counts (`trace --per-thread`): a `tid`
    /// label, so each thread's series has its own label set.
    pub tid: Option<i32>,
    /// When the process started, in seconds since boot: a `start` label,
    /// given only to tell apart processes that held the same pid in turn.
    pub start: Option<f64>,
    pub comm: Option<&'a str>,
    pub syscall: &'a str,
    /// The clock id's name; `None` for syscalls without one.
    pub clock: Option<&'a str>,
    /// A getrandom series' kind (`served`, `by_vdso`, ...): a `random` label.
    pub random: Option<&'a str>,
    pub abi: &'a str,
    /// The vDSO would have served this call: a syscall here is a lost fast path.
    pub vdso_serves: bool,
    pub count: u64,
    /// The process's cgroup, container and unit: `cgroup`, `container_id`
    /// (`RUNTIME://ID`, as kube-state-metrics writes it), `pod_uid` (a
    /// Kubernetes pod's) and `unit` labels.
    /// One process has one at a time, so they add no series.
    pub placement: Option<&'a Placement>,
}

/// `vdsoctl_clock_syscalls_total`, one sample per series (the one family
/// name both commands use, so dashboards and rules work on either).
pub fn clock_syscalls(p: &mut Prometheus, help_scope: &str, rows: &[SyscallSeries<'_>]) {
    p.family(
        "clock_syscalls_total",
        Kind::Counter,
        &format!(
            "Syscalls of the vDSO's functions (clocks, getcpu, getrandom) per process, syscall, clock id \
             (getrandom: its kind) and ABI, counted in the kernel {help_scope}; \
             vdso_serves=\"true\" marks calls the vDSO would have served (a lost fast path)."
        ),
    );
    for r in rows {
        let pid = r.pid.to_string();
        let place = r.placement.cloned().unwrap_or_default();
        let (container, pod_uid) = container_labels(&place);
        let tid = r.tid.map(|t| t.to_string()).unwrap_or_default();
        let start = r.start.map(|t| format_value(Value::Float(t))).unwrap_or_default();
        let labels = [
            ("pid", pid.as_str()),
            ("start", start.as_str()),
            ("tid", tid.as_str()),
            ("comm", r.comm.unwrap_or_default()),
            ("syscall", r.syscall),
            ("clock", r.clock.unwrap_or_default()),
            ("random", r.random.unwrap_or_default()),
            ("abi", r.abi),
            ("vdso_serves", if r.vdso_serves { "true" } else { "false" }),
            ("cgroup", place.cgroup.as_deref().unwrap_or_default()),
            ("container_id", container.as_str()),
            ("pod_uid", pod_uid.as_str()),
            ("unit", place.unit.as_deref().unwrap_or_default()),
        ];
        p.sample("clock_syscalls_total", &labels, r.count);
    }
}

/// The `container_id` (`RUNTIME://ID`, as kube-state-metrics writes it) and
/// `pod_uid` (the Kubernetes pod's UID, as kube-state-metrics' `uid`) labels
/// of a placement; empty (no label) when the cgroup names none.
pub fn container_labels(place: &Placement) -> (String, String) {
    let container = place.container.as_ref();
    (
        container.map(|c| format!("{}://{}", c.runtime, c.id)).unwrap_or_default(),
        container.and_then(|c| c.pod_uid.clone()).unwrap_or_default(),
    )
}

/// One process's emulated calls into the [vsyscall] page.
#[derive(Debug, Clone, Copy)]
pub struct VsyscallSeries<'a> {
    pub pid: i32,
    /// The process's start (clock ticks after boot); 0: not known, no label.
    pub start: u64,
    pub comm: Option<&'a str>,
    pub function: &'a str,
    pub count: u64,
}

/// The `start` label of a process started `start` clock ticks after boot;
/// empty (no label) when not known (0).
pub fn start_label(start: u64) -> String {
    if start == 0 {
        String::new()
    } else {
        start.to_string()
    }
}

/// `vdsoctl_vsyscall_emulations_total`, one sample per series.
pub fn vsyscall_emulations(p: &mut Prometheus, help_scope: &str, rows: &[VsyscallSeries<'_>]) {
    p.family(
        "vsyscall_emulations_total",
        Kind::Counter,
        &format!("Calls into the legacy [vsyscall] page, emulated by the kernel (a trap each, hundreds of ns: vdsoctl bench measures it; invisible to strace), per process {help_scope}."),
    );
    for r in rows {
        let (pid, start) = (r.pid.to_string(), start_label(r.start));
        let labels = [
            ("pid", pid.as_str()),
            ("start", start.as_str()),
            ("comm", r.comm.unwrap_or_default()),
            ("function", r.function),
        ];
        p.sample("vsyscall_emulations_total", &labels, r.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_groups() {
        let mut p = Prometheus::default();
        p.family("check_status", "gauge", "Check status.\nsecond \\ line");
        p.sample("check_status", &[("check", "a\"b\\c\nd")], 1.0);
        p.sample("check_status", &[], f64::NAN);
        let t = p.finish();
        assert_eq!(
            t,
            "# HELP vdsoctl_check_status Check status.\\nsecond \\\\ line\n\
             # TYPE vdsoctl_check_status gauge\n\
             vdsoctl_check_status{check=\"a\\\"b\\\\c\\nd\"} 1\n\
             vdsoctl_check_status NaN\n"
        );
    }

    #[test]
    fn empty_labels_are_left_out() {
        let mut p = Prometheus::default();
        p.family("bench_seconds_per_call", Kind::Gauge, "x");
        p.sample("bench_seconds_per_call", &[("function", "time"), ("clock", ""), ("path", "libc")], 2e-9);
        p.sample("bench_seconds_per_call", &[("clock", "")], 3u64);
        let t = p.finish();
        assert!(t.contains("vdsoctl_bench_seconds_per_call{function=\"time\",path=\"libc\"} 2e-9\n"), "{t}");
        assert!(t.ends_with("vdsoctl_bench_seconds_per_call 3\n"), "{t}");
    }

    #[test]
    fn values_have_no_float_noise() {
        let f = |v: f64| format_value(Value::Float(v));
        assert_eq!(f(131.65 * 1e-9), "1.3165e-7");
        assert_eq!(f(0.1 + 0.2), "0.3");
        assert_eq!(f(12.5), "12.5");
        assert_eq!(f(81204.0), "81204");
        assert_eq!(f(-3.0), "-3");
        assert_eq!(f(0.0), "0");
        assert_eq!(f(-0.0), "0");
        assert_eq!(f(1e20), "1e20");
        assert_eq!(f(f64::INFINITY), "+Inf");
        assert_eq!(f(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(Value::from(u64::MAX)), "18446744073709551615");
        assert_eq!(format_value(Value::from(true)), "1");
        // Every written value parses back to the rounded value.
        for v in [1.3165e-7, 2.5e-8, 0.000123, 1234.5678, 6.02e23, 1e-300] {
            let back: f64 = f(v).parse().unwrap();
            assert!((back - v).abs() <= v.abs() * 1e-11, "{v} -> {}", f(v));
        }
    }

    #[test]
    fn info_metrics() {
        let mut p = Prometheus::default();
        p.info("kernel_info", "The running kernel.", &[("release", "6.18.0")]);
        assert!(p.has_family("kernel_info"));
        assert_eq!(
            p.finish(),
            "# HELP vdsoctl_kernel_info The running kernel.\n# TYPE vdsoctl_kernel_info gauge\nvdsoctl_kernel_info{release=\"6.18.0\"} 1\n"
        );
    }

    #[test]
    fn syscall_series() {
        let mut p = Prometheus::default();
        let row = SyscallSeries {
            pid: 42,
            tid: None,
            start: None,
            comm: Some("a\"b"),
            syscall: "gettimeofday",
            clock: None,
            random: None,
            abi: "x86_64",
            vdso_serves: true,
            count: 7,
            placement: None,
        };
        clock_syscalls(&mut p, "during the trace", &[row, SyscallSeries { tid: Some(43), ..row }]);
        vsyscall_emulations(
            &mut p,
            "during the trace",
            &[VsyscallSeries { pid: 9, start: 0, comm: None, function: "time", count: 3 }],
        );
        let t = p.finish();
        assert!(t.contains("# TYPE vdsoctl_clock_syscalls_total counter\n"), "{t}");
        assert!(
            t.contains("vdsoctl_clock_syscalls_total{pid=\"42\",comm=\"a\\\"b\",syscall=\"gettimeofday\",abi=\"x86_64\",vdso_serves=\"true\"} 7\n"),
            "{t}"
        );
        assert!(t.contains("vdsoctl_clock_syscalls_total{pid=\"42\",tid=\"43\",comm="), "{t}");
        assert!(t.contains("vdsoctl_vsyscall_emulations_total{pid=\"9\",function=\"time\"} 3\n"), "{t}");
    }

    #[test]
    fn names() {
        assert!(valid_name("clock_syscalls_total"));
        assert!(!valid_name("9x"));
        assert!(!valid_name("a-b"));
        assert!(!valid_name(""));
    }
}
