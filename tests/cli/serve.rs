//! `serve` integration tests: the exporter on a loopback port, scraped by a
//! real Prometheus server (Debian's `prometheus` package) every second and
//! queried through its HTTP API; the HTTP surface (404, 405, HEAD, the
//! page); the exposition's tidiness under promtool; SIGTERM; the shipped
//! alerting rules under `promtool test rules`; `trace --format prometheus`.

use super::common::{
    assert_promtool_accepts, build_c, have_promtool, missing_trace_facility, run, skip, system_wide_lock, vdsoctl_path,
    Workload,
};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bounded polling: up to `tries` attempts, 250 ms apart.
fn poll<T>(what: &str, tries: u32, mut f: impl FnMut() -> Option<T>) -> T {
    for _ in 0..tries {
        if let Some(v) = f() {
            return v;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("gave up after {tries} tries waiting for {what}");
}

/// A response: status, headers (lower-case names), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.0 request (no chunked replies); `None` when nothing listens yet.
fn http(addr: &str, method: &str, path: &str) -> Option<Response> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
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
struct Serve {
    child: Child,
    addr: String,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        let mut child = Command::new(vdsoctl_path())
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

    fn get(&self, path: &str) -> Response {
        http(&self.addr, "GET", path).expect("serve answers")
    }

    /// /metrics once the audit and the tracer have both reported.
    fn ready_metrics(&self) -> String {
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
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Prometheus server scraping `target` every second, its TSDB in a
/// tempdir. Killed on drop.
struct PromServer {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
}

impl PromServer {
    fn start(target: &str) -> PromServer {
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
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus");
        PromServer { child, addr, dir }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query's result vector; empty until Prometheus is up.
    fn query(&self, expr: &str) -> Vec<Value> {
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
    fn wait_for(&self, expr: &str) -> Vec<Value> {
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
fn value(sample: &Value) -> f64 {
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

fn have_prometheus() -> bool {
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
        vdsoctl::arch::TimeFn::ClockGettime,
        vdsoctl::measure::trace::Clock::Id(11),
        vdsoctl::inspect::kernel::release().as_deref().and_then(vdsoctl::inspect::kernel::parse_version),
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
}

#[test]
fn alerting_rules_pass_promtool_tests() {
    if !have_promtool() {
        return skip("promtool is not installed (Debian: apt-get install prometheus)");
    }
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    for (args, expect) in [
        (&["check", "rules", "vdsoctl.rules.yml"][..], "SUCCESS: 5 rules found"),
        (&["test", "rules", "vdsoctl.rules.test.yml"], "SUCCESS"),
        (&["check", "config", "prometheus.yml"], "is valid prometheus config file syntax"),
    ] {
        let out = Command::new("promtool").args(args).current_dir(&deploy).output().expect("promtool");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "promtool {args:?}: {text}");
        assert!(text.contains(expect), "promtool {args:?}: {text}");
    }
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
    // The audited process's checks carry its pid; the host's carry none.
    assert!(
        text.contains(&format!("vdsoctl_check_status{{check=\"process_vdso_mapped\",pid=\"{pid}\"}} 0\n")),
        "{text}"
    );
    assert!(text.contains("vdsoctl_check_status{check=\"vdso_mapped\"} 0\n"), "{text}");
    // time() has no clock id: no clock label (it used to be clock="").
    assert!(text.contains("vdsoctl_bench_seconds_per_call{function=\"time\",path=\"libc\"} "), "{text}");
    assert_tidy(&text);
}

/// serve's check series include what its trace engine saw bypass the
/// vDSO: a raw CLOCK_MONOTONIC loop is a failed check (host_trace).
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
    let ours = format!("vdsoctl_clock_syscalls_total{{pid=\"{}\",comm=\"clock_loop\"", raw.pid());
    let text = poll("host_trace to fail", 120, || {
        let body = serve.get("/metrics").body;
        (body.contains("vdsoctl_check_status{check=\"host_trace\"} 2\n") && body.contains(&ours)).then_some(body)
    });
    assert!(text.contains("vdsoctl_check_failed 1\n"), "{text}");
}
