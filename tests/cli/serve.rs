//! `serve` integration tests: the exporter on a loopback port, scraped by a
//! real Prometheus server (Debian's `prometheus` package) every second and
//! queried through its HTTP API; the HTTP surface (404, 405, HEAD, the
//! page); the exposition's tidiness under promtool; SIGTERM; the shipped
//! alerting rules under `promtool test rules`; `trace --format prometheus`;
//! hostile clients (connect-and-RST, 2,000 idle connections under a 1,024
//! fd limit, pipelining non-readers, a 64 MiB header), each ending with a
//! SIGTERM under the attack.

mod own;

use super::common::{
    assert_promtool_accepts, build_c, have_promtool, missing_trace_facility, run, skip, system_wide_lock, vdsoctl_path,
    Workload,
};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bounded polling: up to `tries` attempts, 250 ms apart.
pub(super) fn poll<T>(what: &str, tries: u32, mut f: impl FnMut() -> Option<T>) -> T {
    for _ in 0..tries {
        if let Some(v) = f() {
            return v;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("gave up after {tries} tries waiting for {what}");
}

/// A response: status, headers (lower-case names), body.
pub(super) struct Response {
    pub(super) status: u16,
    headers: Vec<(String, String)>,
    pub(super) body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.0 request (no chunked replies); `None` when nothing listens yet.
fn http(addr: &str, method: &str, path: &str) -> Option<Response> {
    http_within(addr, method, path, Duration::from_secs(20))
}

/// [`http`], with `limit` for the connect and for each read.
fn http_within(addr: &str, method: &str, path: &str, limit: Duration) -> Option<Response> {
    let mut s = TcpStream::connect_timeout(&addr.parse().ok()?, limit).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    write!(s, "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Response { status, headers, body: body.to_string() })
}

/// `vdsoctl serve` on a free loopback port (`--listen 127.0.0.1:0`; the
/// address comes from its startup line). Killed on drop.
pub(super) struct Serve {
    child: Child,
    pub(super) addr: String,
    pub(super) stderr: Arc<Mutex<String>>,
}

impl Serve {
    pub(super) fn start(extra: &[&str]) -> Serve {
        Serve::start_under(&[], extra)
    }

    /// Started by `wrapper` (a command that execs the rest, e.g. prlimit).
    fn start_under(wrapper: &[&str], extra: &[&str]) -> Serve {
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(vdsoctl_path());
                c
            }
            None => Command::new(vdsoctl_path()),
        };
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--interval", "1s"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn vdsoctl serve");
        let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
        let mut seen = String::new();
        let addr = loop {
            let mut line = String::new();
            if reader.read_line(&mut line).expect("read stderr") == 0 {
                let _ = child.kill();
                panic!("serve exited before listening: {seen}");
            }
            seen += &line;
            if let Some(rest) = line.split("serving http://").nth(1) {
                break rest.split('/').next().expect("address").to_string();
            }
        };
        let stderr = Arc::new(Mutex::new(seen));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Serve { child, addr, stderr }
    }

    /// The exporter's pid.
    pub(super) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub(super) fn get(&self, path: &str) -> Response {
        http(&self.addr, "GET", path).expect("serve answers")
    }

    /// /metrics once the audit and the tracer have both reported.
    pub(super) fn ready_metrics(&self) -> String {
        poll("the first audit and trace sections", 120, || {
            let body = self.get("/metrics").body;
            (body.contains("vdsoctl_check_status{") && body.contains("vdsoctl_trace_up ")).then_some(body)
        })
    }

    /// SIGTERM, then the exit code (bounded wait).
    fn terminate(&mut self) -> Option<i32> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        poll("serve to exit after SIGTERM", 80, || self.child.try_wait().expect("try_wait")).code()
    }

    /// SIGTERM while an attack goes on: exit 0, within a bound 10× the
    /// one-second target (the figure itself is printed, and measured by
    /// scripts/bench-serve.sh).
    fn terminate_under(&mut self, attack: &str) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let sent = Instant::now();
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            assert!(sent.elapsed() < Duration::from_secs(10), "{attack}: no exit 10 s after SIGTERM");
            std::thread::sleep(Duration::from_millis(5));
        };
        eprintln!("{attack}: exited {status} {:?} after SIGTERM", sent.elapsed());
        assert_eq!(status.code(), Some(0), "{attack}: {}", self.stderr.lock().unwrap());
    }

    /// Still running (not exited, not killed).
    fn assert_up(&mut self, attack: &str) {
        let exited = self.child.try_wait().expect("try_wait");
        assert!(exited.is_none(), "{attack}: serve died ({exited:?}): {}", self.stderr.lock().unwrap());
    }

    /// A scrape that must be answered within 10 s (one blocked by other
    /// clients is never answered).
    fn assert_scrapable(&mut self, attack: &str) {
        let started = Instant::now();
        let r = http_within(&self.addr, "GET", "/metrics", Duration::from_secs(10));
        let r = r.unwrap_or_else(|| panic!("{attack}: no scrape within 10 s: {}", self.stderr.lock().unwrap()));
        assert_eq!(r.status, 200, "{attack}");
        assert!(r.body.starts_with("# HELP vdsoctl_build_info "), "{attack}: {}", r.body);
        eprintln!("{attack}: scrape answered in {:?}", started.elapsed());
    }

    fn status_field(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field}: {status}"));
        line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number")
    }

    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, |d| d.count())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Prometheus server scraping `target` every second, its TSDB in a
/// tempdir. Killed on drop.
pub(super) struct PromServer {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
}

impl PromServer {
    pub(super) fn start(target: &str) -> PromServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: vdsoctl\n    \
                 scrape_interval: 1s\n    scrape_timeout: 1s\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        PromServer::start_in(dir, addr)
    }

    /// Prometheus with the configuration `dir/prometheus.yml` (and what it
    /// names beside it), listening on `addr`.
    pub(super) fn start_in(dir: tempfile::TempDir, addr: String) -> PromServer {
        PromServer::start_with(dir, addr, &[], &[])
    }

    /// [`PromServer::start_in`] with more flags (agent mode: its storage
    /// flag instead of the TSDB's) and environment variables.
    pub(super) fn start_with(
        dir: tempfile::TempDir,
        addr: String,
        flags: &[String],
        env: &[(&str, &str)],
    ) -> PromServer {
        let config = dir.path().join("prometheus.yml");
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let agent = flags.iter().any(|f| f.contains("--enable-feature=agent"));
        let storage = if agent { "--storage.agent.path" } else { "--storage.tsdb.path" };
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("{storage}={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .args(flags)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus");
        PromServer { child, addr, dir }
    }

    pub(super) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query's result vector; empty until Prometheus is up.
    pub(super) fn query(&self, expr: &str) -> Vec<Value> {
        let Some(r) = http(&self.addr, "GET", &format!("/api/v1/query?query={}", encode(expr))) else {
            return Vec::new();
        };
        if r.status != 200 {
            return Vec::new();
        }
        let doc: Value = serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("bad JSON ({e}): {}", r.body));
        assert_eq!(doc["status"], "success", "{doc}");
        doc["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Poll `expr` until it returns at least one series.
    pub(super) fn wait_for(&self, expr: &str) -> Vec<Value> {
        let mut tries = 0;
        loop {
            let v = self.query(expr);
            if !v.is_empty() {
                return v;
            }
            tries += 1;
            assert!(tries < 160, "no result for {expr} after {tries} tries; prometheus log:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for PromServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encode a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A sample's value as a number.
pub(super) fn value(sample: &Value) -> f64 {
    sample["value"][1].as_str().expect("value string").parse().expect("a number")
}

/// Every sample line of an exposition: no empty label, and its value
/// written canonically (no float noise: the writer's own form of itself).
fn assert_tidy(text: &str) {
    use vdsoctl::render::prom::{format_value, Value as V};
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        assert!(!line.contains("=\"\""), "empty label: {line}");
        let v = line.rsplit(' ').next().unwrap();
        let parsed: f64 = v.parse().unwrap_or_else(|_| panic!("bad value in {line}"));
        assert_eq!(format_value(V::Float(parsed)), v, "not canonical: {line}");
        assert!(v.len() <= 20, "float noise: {line}");
    }
}

pub(super) fn have_prometheus() -> bool {
    Command::new("prometheus").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn prometheus_scrapes_costs_and_per_pid_syscalls() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if !have_prometheus() {
        return skip("the prometheus server is not installed (Debian: apt-get install prometheus)");
    }
    let _lock = system_wide_lock();
    // A burst of exactly 5000 raw CLOCK_TAI syscalls, and a steady ticker of
    // raw CLOCK_MONOTONIC_RAW ones (~2000/s) whose rate Prometheus computes.
    let mut burst_cmd = Command::new(build_c("clock_loop", false, &[]));
    burst_cmd.args(["raw", "11", "5000", "1", "wait"]).stderr(Stdio::null());
    let mut burst = Workload::start(burst_cmd);
    let serve = Serve::start(&["--max-series", "1000"]);
    let metrics = serve.ready_metrics();
    assert!(metrics.contains("vdsoctl_trace_up 1\n"), "tracing runs: {metrics}");
    burst.go();
    assert_eq!(burst.next_line(), "done");
    let mut ticker_cmd = Command::new(build_c("clock_ticker", false, &[]));
    ticker_cmd.args(["4", "20"]);
    let ticker = Workload::start(ticker_cmd);

    let prom = PromServer::start(&serve.addr);
    let up = prom.wait_for("up{job=\"vdsoctl\"} == 1");
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!(up[0]["metric"]["instance"], serve.addr.as_str());

    // A clock-cost series: seconds per call of CLOCK_MONOTONIC through libc.
    let cost = prom
        .wait_for("vdsoctl_bench_seconds_per_call{function=\"clock_gettime\",clock=\"CLOCK_MONOTONIC\",path=\"libc\"}");
    assert_eq!(cost.len(), 1, "{cost:?}");
    let secs = value(&cost[0]);
    assert!(secs > 0.0 && secs < 1.0, "seconds per call: {secs}");

    // The burst's pid, counted exactly, with its labels.
    let abi = vdsoctl::arch::HOST_ABI.expect("a known ABI");
    let serves_tai = vdsoctl::model::vdso_serves_call(
        abi,
        vdsoctl::arch::VdsoFn::ClockGettime,
        vdsoctl::measure::trace::Clock::Id(11),
        vdsoctl::inspect::kernel::release().as_deref().and_then(vdsoctl::inspect::kernel::parse_version),
        vdsoctl::inspect::kernel::aux_clocks(),
    );
    let expr = format!("vdsoctl_clock_syscalls_total{{pid=\"{}\",clock=\"CLOCK_TAI\"}} == 5000", burst.pid());
    let exact = prom.wait_for(&expr);
    assert_eq!(exact.len(), 1, "{exact:?}");
    let m = &exact[0]["metric"];
    assert_eq!(m["comm"], "clock_loop", "{m}");
    assert_eq!(m["syscall"], "clock_gettime", "{m}");
    assert_eq!(m["abi"], abi.name(), "{m}");
    assert_eq!(m["vdso_serves"], if serves_tai { "true" } else { "false" }, "{m}");
    assert_eq!(value(&exact[0]), 5000.0);

    // The ticker's syscall rate, from Prometheus's rate() over the scrapes.
    let expr =
        format!("rate(vdsoctl_clock_syscalls_total{{pid=\"{}\",clock=\"CLOCK_MONOTONIC_RAW\"}}[5s]) > 0", ticker.pid());
    let rate = prom.wait_for(&expr);
    assert_eq!(rate.len(), 1, "{rate:?}");
    assert_eq!(rate[0]["metric"]["comm"], "clock_ticker");
    assert!(value(&rate[0]) > 0.0);

    // A process that is gone drops out of the exposition.
    let burst_pid = burst.pid();
    drop(burst);
    poll("the exited burst process to drop out", 80, || {
        (!serve.get("/metrics").body.contains(&format!("pid=\"{burst_pid}\""))).then_some(())
    });
    drop(prom);
    drop(ticker);
}

#[test]
fn http_surface_exposition_and_sigterm() {
    if !have_promtool() {
        return skip("promtool is not installed (Debian: apt-get install prometheus)");
    }
    let _lock = system_wide_lock();
    let mut serve = Serve::start(&[]);
    let text = serve.ready_metrics();
    let r = serve.get("/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    assert!(r.body.starts_with("# HELP vdsoctl_build_info "), "{}", r.body);
    for family in [
        "# TYPE vdsoctl_check_status gauge",
        "# TYPE vdsoctl_bench_seconds_per_call gauge",
        "# TYPE vdsoctl_bench_syscalls_per_call gauge",
        "# TYPE vdsoctl_vdso_serves gauge",
        "# TYPE vdsoctl_kernel_info gauge",
        "# TYPE vdsoctl_trace_up gauge",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    let release = vdsoctl::inspect::kernel::release().expect("osrelease");
    assert!(text.contains(&format!("vdsoctl_kernel_info{{release=\"{release}\"}} 1\n")), "{text}");
    // gettimeofday has no clock id: no clock label at all (was clock="").
    assert!(text.contains("vdsoctl_vdso_serves{function=\"gettimeofday\"} "), "{text}");
    assert_tidy(&text);
    assert_promtool_accepts(&text);

    let page = serve.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(page.body.contains("<a href=\"/metrics\">"), "{}", page.body);
    let head = http(&serve.addr, "HEAD", "/metrics").expect("HEAD");
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    for path in ["/nope", "/metrics/x", "/favicon.ico"] {
        assert_eq!(serve.get(path).status, 404, "{path}");
    }
    for method in ["POST", "PUT", "DELETE"] {
        let r = http(&serve.addr, method, "/metrics").expect("reply");
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"), "{method}");
    }

    assert_eq!(serve.terminate(), Some(0), "{}", serve.stderr.lock().unwrap());
    let stderr = serve.stderr.lock().unwrap().clone();
    assert!(stderr.trim_end().ends_with("vdsoctl: stopped"), "{stderr}");
    assert!(http(&serve.addr, "GET", "/metrics").is_none(), "nothing listens after SIGTERM");
}

#[test]
fn bad_listen_and_interval() {
    for args in [&["serve", "--listen", "nonsense"][..], &["serve", "--interval", "2x"], &["serve", "--interval", "0"]]
    {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
    }
    let (_, _, stderr) = run(&["serve", "--listen", "nonsense"]);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--listen \"nonsense\"") && stderr.contains("—"), "{stderr}");
    // A port someone else holds: the facility is missing here (exit 4).
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let (code, _, stderr) = run(&["serve", "--listen", &addr]);
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains(&format!("cannot listen on {addr}")), "{stderr}");
    assert!(stderr.contains("another process holds the port"), "{stderr}");
    // An address no interface has (TEST-NET-1): EADDRNOTAVAIL, and the hint
    // says that rather than blaming another process.
    let (code, _, stderr) = run(&["serve", "--listen", "192.0.2.1:10411"]);
    assert_eq!(code, 4, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("EADDRNOTAVAIL") && stderr.contains("no interface here has that address"), "{stderr}");
    assert!(!stderr.contains("another process"), "{stderr}");
}

#[test]
fn alerting_rules_pass_promtool_tests() {
    if !have_promtool() {
        return skip("promtool is not installed (Debian: apt-get install prometheus)");
    }
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    for (args, expect) in [
        (&["check", "rules", "vdsoctl.rules.yml"][..], "SUCCESS: 12 rules found"),
        (&["test", "rules", "vdsoctl.rules.test.yml"], "SUCCESS"),
        (&["test", "rules", "vdsoctl.rules.node.test.yml"], "SUCCESS"),
        (&["check", "config", "prometheus.yml"], "is valid prometheus config file syntax"),
        // prometheus-kubernetes.yml: Debian's promtool knows no
        // kubernetes_sd_configs; cli::fleet runs its relabelling instead.
        (&["check", "config", "--syntax-only", "prometheus-agent.yml"], "is valid prometheus config file syntax"),
        (&["check", "config", "prometheus-central.yml"], "is valid prometheus config file syntax"),
    ] {
        let out = Command::new("promtool").args(args).current_dir(&deploy).output().expect("promtool");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "promtool {args:?}: {text}");
        assert!(text.contains(expect), "promtool {args:?}: {text}");
    }
    // The healthy hour's source: real scrapes, still valid exposition, of a
    // glibc 2.36 host whose getrandom row WARNs and whose audit passes.
    for name in ["healthy-first.prom", "healthy-last.prom"] {
        let text = std::fs::read_to_string(deploy.join("testdata").join(name)).unwrap();
        assert_promtool_accepts(&text);
        for line in
            ["vdsoctl_check_failed 0\n", "vdsoctl_check_status{check=\"getrandom\"} 1\n", "vdsoctl_trace_up 1\n"]
        {
            assert!(text.contains(line), "{name}: {line}");
        }
    }
}

/// GitHub's anchor for a Markdown heading: lowercased, spaces to `-`,
/// other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn every_alert_links_a_runbook_section_that_exists() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let rules = std::fs::read_to_string(deploy.join("vdsoctl.rules.yml")).unwrap();
    let readme = std::fs::read_to_string(deploy.join("README.md")).unwrap();
    let anchors: Vec<String> = readme.lines().filter_map(|l| l.strip_prefix("### ")).map(anchor).collect();
    let mut alerts = 0;
    for rule in rules.split("- alert: ").skip(1) {
        alerts += 1;
        let name = rule.lines().next().unwrap().trim();
        let link = rule
            .split("Runbook: deploy/README.md#")
            .nth(1)
            .unwrap_or_else(|| panic!("{name} links no runbook"))
            .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
            .next()
            .unwrap();
        assert!(
            anchors.iter().any(|a| a == link),
            "{name} links #{link}, not a heading of deploy/README.md: {anchors:?}"
        );
    }
    assert_eq!(alerts, 9, "{rules}");
}

#[test]
fn trace_prometheus_one_shot() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let bin = build_c("clock_loop", false, &[]);
    let (code, text, stderr) =
        run(&["--format", "prometheus", "trace", "--", bin.to_str().expect("utf-8 path"), "raw", "11", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    let abi = vdsoctl::arch::HOST_ABI.expect("a known ABI").name();
    let row: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("vdsoctl_clock_syscalls_total{") && l.contains("clock=\"CLOCK_TAI\""))
        .collect();
    assert_eq!(row.len(), 1, "{text}");
    assert!(row[0].contains(",comm=\"clock_loop\",syscall=\"clock_gettime\","), "{}", row[0]);
    assert!(row[0].contains(&format!(",abi=\"{abi}\",")), "{}", row[0]);
    assert!(row[0].ends_with("} 1000"), "{}", row[0]);
    assert!(text.contains("# TYPE vdsoctl_trace_duration_seconds gauge\n"), "{text}");
    assert!(text.contains("vdsoctl_trace_lost_total 0\n"), "{text}");
    assert_tidy(&text);
    if have_promtool() {
        assert_promtool_accepts(&text);
    }
}

#[test]
fn check_prometheus_is_tidy() {
    let w = Workload::start(Command::new(build_c("wait_ready", false, &[])));
    let pid = w.pid().to_string();
    let (code, text, stderr) = run(&["--format", "prometheus", "check", "-p", &pid]);
    assert!(code == 0 || code == 1, "{stderr}");
    // The audited process's checks carry its pid; the host's carry none;
    // each carries its finding's kind.
    assert!(
        text.contains(&format!(
            "vdsoctl_check_status{{check=\"process_vdso_mapped\",kind=\"vdso-mapped\",pid=\"{pid}\"}} 0\n"
        )),
        "{text}"
    );
    assert!(text.contains("vdsoctl_check_status{check=\"vdso_mapped\",kind=\"vdso-mapped\"} 0\n"), "{text}");
    // time() has no clock id: no clock label (it used to be clock="").
    assert!(text.contains("vdsoctl_bench_seconds_per_call{function=\"time\",path=\"libc\"} "), "{text}");
    assert_tidy(&text);
}

/// serve's check series include what its trace engine saw bypass the
/// vDSO: a raw CLOCK_MONOTONIC loop is a failed check (host_trace, kind
/// raw-clock-syscall).
#[test]
fn a_raw_monotonic_loop_fails_the_check_series() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let mut cmd = Command::new(build_c("clock_loop", false, &[]));
    cmd.args(["paced", "1", "5000"]).stderr(Stdio::null());
    let raw = Workload::start(cmd);
    let serve = Serve::start(&[]);
    // The audit judges the engine's last whole interval: a few refreshes.
    // (Other processes of a shared host may fail it too; ours is counted
    // by the same engine, as its per-process series shows.)
    let ours = format!("vdsoctl_clock_syscalls_total{{pid=\"{}\",", raw.pid());
    let text = poll("host_trace to fail", 120, || {
        let body = serve.get("/metrics").body;
        let failed = body.contains("vdsoctl_check_status{check=\"host_trace\",kind=\"raw-clock-syscall\"} 2\n");
        let counted = body.lines().any(|l| l.starts_with(&ours) && l.contains(",comm=\"clock_loop\","));
        (failed && counted).then_some(body)
    });
    assert!(text.contains("vdsoctl_check_failed 1\n"), "{text}");
}

/// A churn of 3,000 processes, each making exactly 4 raw CLOCK_MONOTONIC
/// syscalls and exiting between refreshes: every call is in serve's
/// series — the aggregate of exited processes names their executable — or
/// said lost.
#[test]
fn a_churn_of_3000_processes_adds_up() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("churn_loop");
    super::common::copy_executable(&build_c("clock_loop", false, &[]), &exe).unwrap();
    let serve = Serve::start(&["--max-series", "1000"]);
    serve.ready_metrics();
    let script = format!("for i in $(seq 3000); do {} raw 1 4 >/dev/null 2>&1 || exit 1; done", exe.display());
    let status = Command::new("sh").args(["-c", &script]).status().expect("sh");
    assert!(status.success());
    let want = 3000.0 * 4.0;
    let series = "vdsoctl_exited_clock_syscalls_total{comm=\"churn_loop\",";
    let (sum, lost) = poll("every call folded", 160, || {
        let body = serve.get("/metrics").body;
        let sum: f64 = body
            .lines()
            .filter(|l| l.starts_with(series) && l.contains("clock=\"CLOCK_MONOTONIC\""))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum();
        let lost: f64 =
            body.lines().find_map(|l| l.strip_prefix("vdsoctl_trace_lost_total ")).map_or(0.0, |v| v.parse().unwrap());
        (sum == want || (sum < want && sum + lost >= want && lost > 0.0)).then_some((sum, lost))
    });
    eprintln!("churn: {sum} of {want} calls in the aggregate, {lost} lost");
    // The aggregate is a counter: a later scrape never says less.
    std::thread::sleep(Duration::from_millis(2500));
    let body = serve.get("/metrics").body;
    let again: f64 = body
        .lines()
        .filter(|l| l.starts_with(series) && l.contains("clock=\"CLOCK_MONOTONIC\""))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(again, sum, "{body}");
}

// ------------------------------------------------------------ hostile clients

/// An attack running in the background until dropped (each is bounded in
/// count too).
struct Attack {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Attack {
    fn start(f: impl FnOnce(&AtomicBool) + Send + 'static) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        Attack { stop, thread: Some(std::thread::spawn(move || f(&flag))) }
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const GET: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: vdsoctl\r\n\r\n";

/// Connect, send a GET, close with RST (SO_LINGER 0) before any reply.
fn get_then_rst(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else { return false };
    let _ = s.write_all(GET);
    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
    true
}

#[test]
fn attack_connect_get_rst_loop() {
    let _lock = system_wide_lock();
    let mut serve = Serve::start(&[]);
    let addr: SocketAddr = serve.addr.parse().unwrap();
    let connected = (0..1000).filter(|_| get_then_rst(addr)).count();
    serve.assert_up("1,000 GET+RST");
    assert_eq!(connected, 1000, "every connect succeeded");
    serve.assert_scrapable("after 1,000 GET+RST");
    let _attack = Attack::start(move |stop| {
        for _ in 0..20_000 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            get_then_rst(addr);
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    serve.terminate_under("GET+RST loop");
}

/// Raise this process's fd soft limit to `n` (the hard limit allowing).
fn want_fds(n: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    if soft < n {
        setrlimit(Resource::RLIMIT_NOFILE, n.min(hard), hard).expect("setrlimit");
    }
}

#[test]
fn attack_2000_idle_connections_under_1024_fds() {
    let _lock = system_wide_lock();
    want_fds(8192);
    let mut serve = Serve::start_under(&["prlimit", "--nofile=1024:1024", "--"], &[]);
    let addr: SocketAddr = serve.addr.parse().unwrap();
    // 2,000 connections that send nothing, all held open by this test.
    let idle: Vec<TcpStream> =
        (0..2000).filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()).collect();
    serve.assert_up("2,000 idle connections");
    assert!(idle.len() >= 1900, "connected {} of 2,000", idle.len());
    serve.assert_scrapable("2,000 idle connections");
    // Bounded: 256 connections at most (1,024 fds / 4), plus the
    // listener, the trace engine's events and stdio.
    let fds = serve.fds();
    eprintln!("2,000 idle connections: serve holds {fds} fds");
    assert!(fds < 256 + 200, "{fds} fds open");
    serve.terminate_under("2,000 idle connections");
    drop(idle);
}

/// A client that pipelines `n` GETs and never reads a reply (the stream is
/// held, non-blocking, by the caller).
fn pipeline_without_reading(addr: SocketAddr, n: usize) -> TcpStream {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_nonblocking(true).expect("nonblocking");
    let all: Vec<u8> = GET.repeat(n);
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while sent < all.len() && Instant::now() < deadline {
        match s.write(&all[sent..]) {
            Ok(k) => sent += k,
            // The server stopped reading (its replies fill the socket): the
            // rest would wait forever.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break,
        }
    }
    s
}

#[test]
fn attack_pipelining_non_readers() {
    let _lock = system_wide_lock();
    let mut serve = Serve::start(&[]);
    let addr: SocketAddr = serve.addr.parse().unwrap();
    let held = [pipeline_without_reading(addr, 2000), pipeline_without_reading(addr, 2000)];
    serve.assert_up("2 pipelining non-readers");
    for _ in 0..3 {
        serve.assert_scrapable("2 pipelining non-readers");
    }
    serve.terminate_under("2 pipelining non-readers");
    drop(held);
}

/// Send a request whose one header is `size` bytes; how much was sent
/// before the server shut the door, and its reply's status line if any.
fn huge_header(addr: SocketAddr, size: usize, stop: &AtomicBool) -> (usize, Option<String>) {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else { return (0, None) };
    s.set_write_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: vdsoctl\r\nX-Huge: ");
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0;
    while sent < size && !stop.load(Ordering::Relaxed) {
        match s.write(&chunk[..chunk.len().min(size - sent)]) {
            Ok(k) => sent += k,
            Err(_) => break,
        }
    }
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    let status = String::from_utf8_lossy(&reply).lines().next().map(str::to_string);
    (sent, status)
}

#[test]
fn attack_64_mib_header() {
    let _lock = system_wide_lock();
    let mut serve = Serve::start(&[]);
    let addr: SocketAddr = serve.addr.parse().unwrap();
    let never = AtomicBool::new(false);
    // Just over the 8 KiB limit: the whole request fits the socket, the
    // reply is readable.
    let (_, status) = huge_header(addr, 20 * 1024, &never);
    assert_eq!(status.as_deref(), Some("HTTP/1.1 431 Request Header Fields Too Large"));
    // 64 MiB: the server reads a few kB of it, answers 431 and closes; what
    // the kernel had buffered is reset.
    let (sent, status) = huge_header(addr, 64 << 20, &never);
    assert!(sent < 64 << 20, "all 64 MiB were read");
    assert!(
        status.is_none() || status.as_deref() == Some("HTTP/1.1 431 Request Header Fields Too Large"),
        "{status:?}"
    );
    serve.assert_up("64 MiB header");
    let hwm = serve.status_field("VmHWM:");
    eprintln!("64 MiB header: {sent} bytes sent before the close, serve's VmHWM {hwm} kB");
    assert!(hwm <= 32 * 1024, "VmHWM {hwm} kB");
    serve.assert_scrapable("64 MiB header");
    let _attack = Attack::start(move |stop| {
        for _ in 0..100_000 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            huge_header(addr, 64 << 20, stop);
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    serve.terminate_under("64 MiB headers");
}

/// Issue 42, bytes not strings: processes whose names are not UTF-8
/// (`caf\xe9`; `тестсервер`, whose comm an exec cut to `тестсер\xd0`) get
/// their per-process series while they run, counted exactly, named as
/// `words::escaped_name` writes them (on c980fa5 they had none: their
/// /proc/PID/stat was read with read_to_string, so they were never seen
/// alive).
#[test]
fn processes_whose_names_are_not_utf8_have_their_series() {
    use std::os::unix::ffi::OsStrExt;
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let lp = build_c("clock_loop", false, &[]);
    let mut loops = Vec::new();
    for (raw, comm) in [(b"caf\xe9".as_slice(), "caf\\\\xe9"), ("тестсервер".as_bytes(), "тестсер\\\\xd0")]
    {
        let exe = dir.path().join(std::ffi::OsStr::from_bytes(raw));
        super::common::copy_executable(&lp, &exe).unwrap();
        let mut cmd = Command::new(&exe);
        cmd.args(["raw", "11", "700", "1", "wait"]).stderr(Stdio::null());
        loops.push((Workload::start(cmd), comm));
    }
    let serve = Serve::start(&["--max-series", "1000"]);
    serve.ready_metrics();
    for (w, _) in &mut loops {
        w.go();
        assert_eq!(w.next_line(), "done");
    }
    for (w, comm) in &loops {
        let want = format!("pid=\"{}\"", w.pid());
        let line = poll("the series of a process whose name is not UTF-8", 80, || {
            let body = serve.get("/metrics").body;
            body.lines()
                .find(|l| {
                    l.starts_with("vdsoctl_clock_syscalls_total{") && l.contains(&want) && l.contains("CLOCK_TAI")
                })
                .map(str::to_string)
        });
        assert!(line.ends_with(" 700"), "counted exactly: {line}");
        assert!(line.contains(&format!("comm=\"{comm}\"")), "{line}");
    }
}

/// The `[vsyscall]` series of `pid` in a scrape: (start label, count).
fn vsyscall_series(body: &str, pid: i32) -> Vec<(String, u64)> {
    let tag = format!("vdsoctl_vsyscall_emulations_total{{pid=\"{pid}\",");
    body.lines()
        .filter(|l| l.starts_with(&tag))
        .filter_map(|l| {
            let start = l.split("start=\"").nth(1)?.split('"').next()?.to_string();
            Some((start, l.rsplit_once(' ')?.1.parse().ok()?))
        })
        .collect()
}

/// Start `cmd` (a [`Workload`]) as pid `pid`, through
/// /proc/sys/kernel/ns_last_pid under its lock; None when another process
/// took the pid first.
fn workload_as(pid: i32, cmd: Command) -> Option<Workload> {
    let f = std::fs::OpenOptions::new().write(true).open("/proc/sys/kernel/ns_last_pid").ok()?;
    let lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).ok()?;
    (&*lock).write_all((pid - 1).to_string().as_bytes()).ok()?;
    let w = Workload::start(cmd);
    drop(lock);
    (w.pid() == pid).then_some(w)
}

/// serve keys every series by pid and start: a process of the same name
/// that takes an exited one's pid (ns_last_pid, a real reuse) is a new
/// series with its own `start` label and its own count (7), never the old
/// one (50) continued to 57 nor dropped to 7 as a counter reset under the
/// same labels; promtool accepts the exposition.
#[test]
fn a_reused_pid_is_a_new_series_never_the_old_one_continued() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if !Path::new("/proc/sys/kernel/ns_last_pid").exists() {
        return skip("no /proc/sys/kernel/ns_last_pid (CONFIG_CHECKPOINT_RESTORE): no pid can be reused on demand");
    }
    let _lock = system_wide_lock();
    let exe = build_c("hoisted", false, &["-DVSYSCALL_LOOP"]);
    let calls = |n: &str| {
        let mut c = Command::new(&exe);
        c.args([n, "wait"]);
        c
    };
    let serve = Serve::start(&["--max-series", "1000"]);
    serve.ready_metrics();
    let first = Workload::start(calls("50"));
    let pid = first.pid();
    let (start1, _) = poll("the first process's 50 [vsyscall] calls", 80, || {
        vsyscall_series(&serve.get("/metrics").body, pid).into_iter().find(|(_, v)| *v == 50)
    });
    drop(first);
    let Some(second) = (0..50).find_map(|_| workload_as(pid, calls("7"))) else {
        return skip("could not take the exited process's pid (ns_last_pid) in 50 tries");
    };
    // Until the old series is folded away: never a count of the pid but
    // the old process's 50 under its start and the new one's 7 under another.
    let body = poll("the second process's series alone", 80, || {
        let body = serve.get("/metrics").body;
        let now = vsyscall_series(&body, pid);
        for (s, v) in &now {
            assert!((*s == start1 && *v == 50) || (*s != start1 && *v == 7), "{now:?} (the first started at {start1})");
        }
        (now.len() == 1 && now[0].0 != start1).then_some(body)
    });
    // Every later scrape: the old series gone, the new one exactly 7.
    for _ in 0..3 {
        let now = vsyscall_series(&serve.get("/metrics").body, pid);
        assert_eq!(now.len(), 1, "{now:?}");
        assert!(now[0].0 != start1 && now[0].1 == 7, "{now:?} (the first started at {start1})");
        std::thread::sleep(Duration::from_millis(600));
    }
    if have_promtool() {
        assert_promtool_accepts(&body);
    }
    drop(second);
}
