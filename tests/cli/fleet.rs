//! The fleet kit on the fleet's own engines: `serve` in a podman container
//! under the shipped seccomp profile (counting) and the engine's default
//! (refused, and saying it is the profile), a podman container's series
//! carrying its container id (exited too), three nodes' exporters behind
//! Prometheus agents remote-writing into one central Prometheus that
//! loads deploy/'s rules, the Kubernetes manifests against the API schema,
//! and the pod discovery's relabelling on a real Prometheus.
//!
//! podman runs with a private store under the test's temporary directory
//! (vfs: no overlay mounts to leave behind) and private image names; runc
//! and cgroupfs, as CI runs it.

use super::common::{build_c, is_root, missing_trace_facility, skip, system_wide_lock, vdsoctl_path, Workload};
use super::deploy::{dashboard_queries_for, shortened_rules};
use super::serve::{have_prometheus, poll, value, PromServer, Serve};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const LIMITS: [&str; 4] = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"];

fn deploy(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy").join(name)
}

/// podman with a store of its own; everything in it is removed on drop.
struct Podman {
    dir: tempfile::TempDir,
}

impl Podman {
    /// `None` (after a skip) when podman cannot run here.
    fn new() -> Option<Podman> {
        if !is_root() {
            skip("podman (rootful, --pid=host) needs root");
            return None;
        }
        if Command::new("podman").arg("--version").output().is_err() {
            skip("podman is missing (apt-get install podman runc)");
            return None;
        }
        Some(Podman { dir: tempfile::tempdir().unwrap() })
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("podman");
        c.arg("--root").arg(self.dir.path().join("store"));
        c.arg("--runroot").arg(self.dir.path().join("run"));
        c.args(["--storage-driver", "vfs", "--runtime", "/usr/sbin/runc", "--cgroup-manager", "cgroupfs"]);
        c.stdin(Stdio::null());
        c
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.cmd().args(args).output().expect("podman");
        assert!(out.status.success(), "podman {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// An image of the directory `root`, named `name` (`podman import`).
    fn import(&self, root: &Path, name: &str) {
        let tar = Command::new("tar").arg("-C").arg(root).args(["-c", "."]).output().expect("tar");
        assert!(tar.status.success());
        let mut import =
            self.cmd().args(["import", "-", name]).stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
        std::io::Write::write_all(import.stdin.as_mut().unwrap(), &tar.stdout).unwrap();
        drop(import.stdin.take());
        assert!(import.wait().unwrap().success(), "podman import");
    }

    /// `podman run -d ARGS`: the container's full id.
    fn run(&self, args: &[&str]) -> String {
        let out = self.ok(&[&["run", "-d", "--pull=never", "--log-driver", "k8s-file"][..], &LIMITS, args].concat());
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn logs(&self, id: &str) -> String {
        let out = self.cmd().args(["logs", id]).output().expect("podman logs");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }

    fn remove(&self, id: &str) {
        let _ = self.cmd().args(["rm", "-f", "-t", "0", id]).output();
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.cmd().args(["rm", "-a", "-f", "-t", "0"]).output();
        let _ = self.cmd().args(["rmi", "-a", "-f"]).output();
    }
}

/// A root holding the vdsoctl under test as /vdsoctl and clock_loop as
/// /clock_loop, with the shared libraries `ldd` names for them.
fn rootfs(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    for d in ["proc", "sys", "dev", "etc", "tmp"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let exes = [(vdsoctl_path(), "vdsoctl"), (build_c("clock_loop", false, &[]), "clock_loop")];
    for (exe, name) in &exes {
        std::fs::copy(exe, root.join(name)).unwrap();
        let ldd = Command::new("ldd").arg(exe).output().expect("ldd");
        for lib in String::from_utf8_lossy(&ldd.stdout).split_whitespace().filter(|w| w.starts_with('/')) {
            let to = root.join(lib.trim_start_matches('/'));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(lib, &to).unwrap_or_else(|e| panic!("{lib}: {e}"));
        }
    }
    root
}

/// The samples of `family` in an exposition: labels and value.
fn samples(body: &str, family: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix(family) else { continue };
        let (labels, value) = match rest.strip_prefix('{') {
            Some(r) => match r.rsplit_once("} ") {
                Some((l, v)) => (l, v),
                None => continue,
            },
            None => match rest.strip_prefix(' ') {
                Some(v) => ("", v),
                None => continue,
            },
        };
        let mut map = BTreeMap::new();
        let mut rest = labels;
        while let Some((key, after)) = rest.split_once("=\"") {
            let mut val = String::new();
            let mut chars = after.char_indices();
            let mut end = after.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => val.extend(chars.next().map(|(_, c)| if c == 'n' { '\n' } else { c })),
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => val.push(c),
                }
            }
            map.insert(key.trim_start_matches(',').to_string(), val);
            rest = &after[end..];
        }
        out.push((map, value.trim().parse().unwrap_or(f64::NAN)));
    }
    out
}

fn get(addr: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).ok()?;
    std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
    let mut body = String::new();
    std::io::Read::read_to_string(&mut s, &mut body).ok()?;
    body.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A clock_loop on the host making exactly `n` raw CLOCK_MONOTONIC calls
/// once told to (`go`), then pausing until killed.
fn waiting_loop(dir: &Path, name: &str, n: &str) -> Workload {
    let exe = dir.join(name);
    super::common::copy_executable(&build_c("clock_loop", false, &[]), &exe).unwrap();
    let mut cmd = Command::new(&exe);
    cmd.args(["raw", "1", n, "1", "wait"]);
    Workload::start(cmd)
}

/// The deploy/seccomp-vdsoctl.json promise: the engine's default profile
/// plus exactly bpf and perf_event_open, allowed for everyone (the kernel
/// still asks for CAP_BPF/CAP_PERFMON), as scripts/seccomp-profile.py
/// makes it from this machine's default.
#[test]
fn the_seccomp_profile_is_the_engine_default_plus_bpf_and_perf_event_open() {
    let ours: Value = serde_json::from_str(&std::fs::read_to_string(deploy("seccomp-vdsoctl.json")).unwrap()).unwrap();
    let rules = ours["syscalls"].as_array().unwrap();
    let added = rules.last().unwrap();
    assert_eq!(added["names"], serde_json::json!(["bpf", "perf_event_open"]), "{added}");
    assert_eq!((added["action"].as_str(), &added["includes"]), (Some("SCMP_ACT_ALLOW"), &serde_json::json!({})));
    for r in &rules[..rules.len() - 1] {
        let names = r["names"].as_array().unwrap();
        assert!(!names.iter().any(|n| n == "bpf" || n == "perf_event_open"), "only the added rule names them: {r}");
    }
    let default = Path::new("/usr/share/containers/seccomp.json");
    if !default.exists() {
        return skip("no /usr/share/containers/seccomp.json (containers-common, with podman) to compare with");
    }
    let made = Command::new("python3").arg(deploy("../scripts/seccomp-profile.py")).arg(default).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let made: Value = serde_json::from_slice(&made.stdout).unwrap();
    assert_eq!(made, ours, "deploy/seccomp-vdsoctl.json is scripts/seccomp-profile.py of this engine's default");
}

/// The DaemonSet's container as podman runs it, under the shipped profile
/// (counts: the raw loop's exact calls, `trace_up 1`), under the engine's
/// default profile (`trace_up 0`, the reason `seccomp_profile` and a log
/// line naming the file), and under the shipped profile without the
/// capabilities (refused by the kernel: the reason is not the profile).
#[test]
fn serve_counts_under_the_shipped_profile_and_names_it_under_the_default() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let Some(podman) = Podman::new() else { return };
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let image = format!("localhost/vdsoctl-fleet-test-{}:seccomp", std::process::id());
    podman.import(&rootfs(dir.path()), &image);
    let profile = format!("seccomp={}", deploy("seccomp-vdsoctl.json").display());
    let serve = |security: &[&str], caps: &[&str]| {
        let listen = format!("127.0.0.1:{}", free_port());
        let base = ["--pid=host", "--network", "host", "--read-only", "--cap-drop=ALL"];
        let args = [&base[..], caps, security, &[&image, "/vdsoctl", "serve", "--listen", &listen, "--interval", "1s"]];
        (podman.run(&args.concat()), listen)
    };
    let caps = ["--cap-add=BPF,PERFMON"];

    let mut raw = waiting_loop(dir.path(), "raw_in_profile", "1000");
    let (id, listen) = serve(&["--security-opt", &profile], &caps);
    poll("serve under the shipped profile to count", 240, || {
        get(&listen).filter(|b| b.contains("\nvdsoctl_trace_up 1\n") && b.contains("vdsoctl_trace_timestamp_seconds"))
    });
    raw.go();
    assert_eq!(raw.next_line(), "done");
    let pid = raw.pid().to_string();
    let count = poll("the loop's series", 240, || {
        let body = get(&listen)?;
        let s = samples(&body, "vdsoctl_clock_syscalls_total");
        s.into_iter().find(|(l, _)| l.get("pid") == Some(&pid)).map(|(_, v)| v).filter(|v| *v >= 1000.0)
    });
    assert_eq!(count, 1000.0, "{}", podman.logs(&id));
    podman.remove(&id);

    let (id, listen) = serve(&[], &caps);
    let body =
        poll("serve under the default profile", 240, || get(&listen).filter(|b| b.contains("vdsoctl_trace_up ")));
    assert!(body.contains("\nvdsoctl_trace_up 0\n"), "{body}");
    let why = samples(&body, "vdsoctl_trace_down_info");
    assert_eq!(why.len(), 1, "{body}");
    assert_eq!(
        (why[0].0["reason"].as_str(), why[0].0["syscalls"].as_str()),
        ("seccomp_profile", "bpf,perf_event_open")
    );
    let log = podman.logs(&id);
    let line = log
        .lines()
        .find(|l| l.contains("per-process clock syscalls are not exported"))
        .unwrap_or_else(|| panic!("{log}"));
    for said in ["the seccomp profile", "not its capabilities", "deploy/seccomp-vdsoctl.json", "localhostProfile"] {
        assert!(line.contains(said), "{said} in {line}");
    }
    podman.remove(&id);

    let (id, listen) = serve(&["--security-opt", &profile], &[]);
    let body = poll("serve without the capabilities", 240, || get(&listen).filter(|b| b.contains("vdsoctl_trace_up ")));
    let why = samples(&body, "vdsoctl_trace_down_info");
    assert_eq!(why.first().map(|w| w.0["reason"].as_str()), Some("refused"), "{body}");
    assert!(
        !podman.logs(&id).contains("seccomp-vdsoctl.json"),
        "the profile is not what refuses: {}",
        podman.logs(&id)
    );
    podman.remove(&id);
}

/// A container podman starts: its process's series carry
/// `container_id="podman://ID"` (the cgroup's `libpod-ID`), with its exact
/// count, and so does the exited aggregate it folds into once it is gone.
#[test]
fn a_podman_containers_series_carry_its_container_id_after_it_exits_too() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    let Some(podman) = Podman::new() else { return };
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let image = format!("localhost/vdsoctl-fleet-test-{}:loop", std::process::id());
    podman.import(&rootfs(dir.path()), &image);
    let serve = Serve::start(&["--max-series", "1000"]);
    serve.ready_metrics();
    let id = podman.run(&["--network", "none", &image, "/clock_loop", "raw", "1", "1000", "1", "wait"]);
    assert_eq!(id.len(), 64, "{id}");
    poll("the container's loop to be ready", 120, || podman.logs(&id).contains("ready").then_some(()));
    let pid: i32 =
        String::from_utf8_lossy(&podman.ok(&["inspect", "-f", "{{.State.Pid}}", &id]).stdout).trim().parse().unwrap();
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGUSR1).unwrap();
    poll("the container's loop to be done", 120, || podman.logs(&id).contains("done").then_some(()));
    let want = format!("podman://{id}");
    let live = poll("the container's series", 240, || {
        let s = samples(&serve.get("/metrics").body, "vdsoctl_clock_syscalls_total");
        s.into_iter().find(|(l, v)| l.get("pid") == Some(&pid.to_string()) && *v >= 1000.0)
    });
    assert_eq!(live.1, 1000.0, "{live:?}");
    assert_eq!(live.0.get("container_id"), Some(&want), "{live:?} in {cgroup}");
    assert!(live.0["cgroup"].ends_with(&format!("libpod-{id}")), "{live:?}");
    assert!(!live.0.contains_key("pod_uid"), "no kubelet, no pod: {live:?}");
    podman.remove(&id);
    let mut last = Vec::new();
    let exited = (0..240).find_map(|_| {
        let s = samples(&serve.get("/metrics").body, "vdsoctl_exited_clock_syscalls_total");
        let found = s.iter().find(|(l, _)| l.get("container_id") == Some(&want)).cloned();
        last = s;
        std::thread::sleep(std::time::Duration::from_millis(250));
        found
    });
    let exited = exited.unwrap_or_else(|| panic!("no exited aggregate with {want}: {last:?}"));
    assert_eq!((exited.0["comm"].as_str(), exited.1), ("clock_loop", 1000.0), "{exited:?}");
    assert_eq!(exited.0["cgroup"], live.0["cgroup"]);
}

/// Three nodes, one host: an exporter each, a Prometheus in agent mode
/// each (deploy/prometheus-agent.yml, every exporter `localhost:10411` to
/// it, as on real nodes; the node named by its external label), all
/// remote-writing into a central Prometheus (deploy/prometheus-central.yml)
/// with deploy/'s rules. Centrally: the bypass alert fires once per node
/// with its `node`; every dashboard query returns data for each node; the
/// recording rule has a series per node; a node whose exporter stops, and
/// one whose agent is gone, raise VdsoctlExporterAbsent with their node.
#[test]
fn three_nodes_into_one_central_prometheus() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if !have_prometheus() {
        return skip("the prometheus server is not installed (Debian: apt-get install prometheus)");
    }
    let _lock = system_wide_lock();
    let dir = tempfile::tempdir().unwrap();
    let raw = Workload::start({
        let exe = dir.path().join("raw_fleet");
        super::common::copy_executable(&build_c("clock_loop", false, &[]), &exe).unwrap();
        let mut c = Command::new(exe);
        c.args(["raw", "1", "4000000000"]);
        c
    });
    let nodes = ["node-1", "node-2", "node-3"];
    let mut serves: Vec<Option<Serve>> = nodes.iter().map(|_| Some(Serve::start(&["--max-series", "1000"]))).collect();
    for s in serves.iter().flatten() {
        s.ready_metrics();
    }

    let central_dir = tempfile::tempdir().unwrap();
    let central = std::fs::read_to_string(deploy("prometheus-central.yml")).unwrap();
    assert!(central.contains("evaluation_interval: 15s"), "{central}");
    std::fs::write(
        central_dir.path().join("prometheus.yml"),
        central.replace("evaluation_interval: 15s", "evaluation_interval: 1s"),
    )
    .unwrap();
    std::fs::write(central_dir.path().join("vdsoctl.rules.yml"), shortened_rules()).unwrap();
    let central_addr = format!("127.0.0.1:{}", free_port());
    // A short lookback: a node whose samples stop is gone in 15 s, not 5 min.
    let flags = ["--web.enable-remote-write-receiver".to_string(), "--query.lookback-delta=15s".to_string()];
    let central = PromServer::start_with(central_dir, central_addr.clone(), &flags, &[]);

    let agent = std::fs::read_to_string(deploy("prometheus-agent.yml")).unwrap();
    let url = "http://prometheus-central:9090/api/v1/write";
    assert!(agent.contains(url) && agent.contains("- localhost:10411") && agent.contains("${NODE_NAME}"), "{agent}");
    let mut agents: Vec<Option<PromServer>> = Vec::new();
    for (node, serve) in nodes.iter().zip(&serves) {
        let serve = serve.as_ref().unwrap();
        let d = tempfile::tempdir().unwrap();
        // The exporter's real address, but `instance` as every node-local
        // agent has it: only `node` tells the nodes apart.
        let config = agent
            .replace("interval: 15s", "interval: 1s")
            .replace(
                "- localhost:10411",
                &format!(
                    "- {}\n    relabel_configs:\n      - target_label: instance\n        replacement: localhost:10411",
                    serve.addr
                ),
            )
            .replace(
                url,
                &format!("http://{central_addr}/api/v1/write\n    queue_config:\n      batch_send_deadline: 1s"),
            );
        std::fs::write(d.path().join("prometheus.yml"), config).unwrap();
        let flags = ["--enable-feature=agent,expand-external-labels".to_string()];
        agents.push(Some(PromServer::start_with(
            d,
            format!("127.0.0.1:{}", free_port()),
            &flags,
            &[("NODE_NAME", node)],
        )));
    }

    let of_nodes = |series: &[Value]| -> Vec<String> {
        let mut n: Vec<String> =
            series.iter().filter_map(|s| s["metric"]["node"].as_str().map(str::to_string)).collect();
        n.sort();
        n.dedup();
        n
    };
    let all = |expr: &str| {
        poll(&format!("{expr} from every node"), 480, || {
            let got = central.query(expr);
            (of_nodes(&got) == nodes).then_some(got)
        })
    };
    let firing = format!("ALERTS{{alertname=\"VdsoBypassedByProcess\",alertstate=\"firing\",pid=\"{}\"}}", raw.pid());
    let alerts = all(&firing);
    assert_eq!(alerts.len(), 3, "one per node: {alerts:?}");
    for a in &alerts {
        assert_eq!(
            (a["metric"]["comm"].as_str(), a["metric"]["instance"].as_str()),
            (Some("raw_fleet"), Some("localhost:10411"))
        );
    }
    let per_node = all("node:vdsoctl_lost_fast_path_calls:rate5m");
    assert!(per_node.iter().all(|s| value(s) > 100.0), "{per_node:?}");
    for node in nodes {
        for (title, expr) in dashboard_queries_for(node) {
            let got = poll(&format!("{title} for {node}: {expr}"), 480, || {
                Some(central.query(&expr)).filter(|g| !g.is_empty())
            });
            let named = of_nodes(&got);
            assert!(named.is_empty() || named == [node], "{title} for {node}: {got:?}");
        }
    }

    // node-3's exporter stops (its agent scrapes nothing: up 0); node-2's
    // agent is gone (its series stop coming).
    serves[2] = None;
    agents[1] = None;
    let absent = poll("VdsoctlExporterAbsent for node-2 and node-3", 480, || {
        let got = central.query("ALERTS{alertname=\"VdsoctlExporterAbsent\",alertstate=\"firing\"}");
        (of_nodes(&got) == ["node-2", "node-3"]).then_some(got)
    });
    assert_eq!(absent.len(), 2, "{absent:?}");
    drop(agents);
    drop(serves);
}

/// deploy/'s Kubernetes manifests against the API's schema (offline:
/// kubernetes-validate bundles the schemas of every release, strict: no
/// field the API does not know), a manifest with a wrong field refused,
/// and kustomization.yaml's image parameter naming the DaemonSet's image.
#[test]
fn the_manifests_pass_the_kubernetes_schema() {
    let validate = || {
        let mut c = Command::new("python3");
        c.args(["-m", "kubernetes_validate"]);
        c
    };
    let have = validate().arg("--version").output();
    if !have.as_ref().is_ok_and(|o| o.status.success()) {
        return skip(
            "kubernetes-validate is missing (python3 -m pip install --break-system-packages kubernetes-validate)",
        );
    }
    let manifests = [deploy("daemonset.yaml"), deploy("namespace.yaml")];
    let out = validate().arg("--strict").args(&manifests).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    for kind in ["daemonset/vdsoctl", "namespace/monitoring"] {
        assert!(text.contains(&format!("passed for resource {kind}")), "{kind}: {text}");
    }
    // The validator means something: a misspelt field fails.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let ds = std::fs::read_to_string(deploy("daemonset.yaml")).unwrap();
    std::fs::write(&bad, ds.replace("hostPID: true", "hostPid: true")).unwrap();
    let out = validate().arg("--strict").arg(&bad).output().unwrap();
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    // The image parameter: kustomize's `images:` entry names the image the
    // DaemonSet runs, and lists both manifests.
    let kust = std::fs::read_to_string(deploy("kustomization.yaml")).unwrap();
    let image = ds.lines().find_map(|l| l.trim().strip_prefix("image: ")).unwrap().trim();
    assert!(kust.contains(&format!("- name: {image}\n")), "{kust}");
    assert!(kust.contains("- namespace.yaml") && kust.contains("- daemonset.yaml"), "{kust}");
}

/// deploy/prometheus-kubernetes.yml's relabelling on a real Prometheus:
/// its kubernetes_sd_configs (Debian's Prometheus is built without that
/// discovery) replaced by static targets carrying the labels pod
/// discovery gives, one the DaemonSet's pod, one another app's: only the
/// DaemonSet's is scraped, labelled with its node, namespace and pod.
#[test]
fn the_pod_discovery_keeps_the_daemonsets_pods_and_their_node() {
    if let Some(why) = missing_trace_facility() {
        return skip(why);
    }
    if !have_prometheus() {
        return skip("the prometheus server is not installed (Debian: apt-get install prometheus)");
    }
    let _lock = system_wide_lock();
    let serve = Serve::start(&[]);
    serve.ready_metrics();
    let config = std::fs::read_to_string(deploy("prometheus-kubernetes.yml")).unwrap();
    let (head, rest) = config.split_once("    kubernetes_sd_configs:\n").expect("kubernetes_sd_configs");
    let (_, relabel) = rest.split_once("    relabel_configs:\n").expect("relabel_configs");
    let target = |addr: &str, app: &str, port: &str, node: &str| {
        format!(
            "      - targets: ['{addr}']\n        labels:\n          __meta_kubernetes_pod_label_app_kubernetes_io_name: {app}\n          \
             __meta_kubernetes_pod_container_port_name: {port}\n          __meta_kubernetes_pod_phase: Running\n          \
             __meta_kubernetes_pod_node_name: {node}\n          __meta_kubernetes_namespace: monitoring\n          \
             __meta_kubernetes_pod_name: {app}-x1\n"
        )
    };
    let other = format!("127.0.0.1:{}", free_port());
    let statics = format!(
        "    static_configs:\n{}{}",
        target(&serve.addr, "vdsoctl", "metrics", "worker-7"),
        target(&other, "other", "metrics", "worker-8")
    );
    let config = format!("{head}{statics}    relabel_configs:\n{relabel}").replace("interval: 15s", "interval: 1s");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    std::fs::write(dir.path().join("vdsoctl.rules.yml"), shortened_rules()).unwrap();
    let prom = PromServer::start_in(dir, format!("127.0.0.1:{}", free_port()));
    let up = prom.wait_for("up{job=\"vdsoctl\"}");
    assert_eq!(up.len(), 1, "only the DaemonSet's pod: {up:?}");
    let m = &up[0]["metric"];
    assert_eq!(
        (m["node"].as_str(), m["namespace"].as_str(), m["pod"].as_str()),
        (Some("worker-7"), Some("monitoring"), Some("vdsoctl-x1"))
    );
    let built = prom.wait_for("vdsoctl_build_info");
    assert_eq!(built[0]["metric"]["node"], "worker-7", "{built:?}");
}

/// scripts/image.sh: the multi-arch image of deploy/Containerfile, built
/// offline from the static binaries wherever cargo put them; its manifest
/// list names amd64 and arm64, and on x86_64 it runs `check` (host facts
/// only in a default container) and `serve` (answering /metrics).
#[test]
fn the_multi_arch_image_lists_amd64_and_arm64_and_runs_check_and_serve() {
    let Some(podman) = Podman::new() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // A CARGO_TARGET_DIR set for this run, else the target directory this
    // suite was built in.
    let built_in =
        Path::new(env!("CARGO_TARGET_TMPDIR")).parent().map_or_else(|| root.join("target"), Path::to_path_buf);
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(built_in, PathBuf::from);
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        if !target.join(triple).join("release/vdsoctl").is_file() {
            return skip(&format!(
                "no static {triple} binary under {}: build both as scripts/image.sh's header says (.ci/run and the kernel matrix do)",
                target.display()
            ));
        }
    }
    let name = format!("localhost/vdsoctl-fleet-test-{}:multiarch", std::process::id());
    let store = podman.dir.path();
    let cmd = format!(
        "podman --root {} --runroot {} --storage-driver vfs --runtime /usr/sbin/runc --cgroup-manager cgroupfs",
        store.join("store").display(),
        store.join("run").display()
    );
    let out = Command::new(root.join("scripts/image.sh")).arg(&name).env("PODMAN", &cmd).output().unwrap();
    assert!(
        out.status.success(),
        "scripts/image.sh: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let inspect: Value = serde_json::from_slice(&podman.ok(&["manifest", "inspect", &name]).stdout).unwrap();
    let mut arches: Vec<&str> = inspect["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["platform"]["architecture"].as_str())
        .collect();
    arches.sort();
    assert_eq!(arches, ["amd64", "arm64"], "{inspect}");
    if std::env::consts::ARCH != "x86_64" {
        return;
    }
    let out = podman
        .cmd()
        .args(["run", "--rm", "--pull=never", "--network", "none", "--platform", "linux/amd64"])
        .args(LIMITS)
        .args([&name, "check"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let verdict = text.lines().find(|l| l.starts_with("verdict: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(verdict.contains(" — host facts only; clock syscalls not observed"), "{verdict}");
    let listen = format!("127.0.0.1:{}", free_port());
    let id = podman.run(&[
        "--network",
        "host",
        "--read-only",
        "--platform",
        "linux/amd64",
        &name,
        "serve",
        "--listen",
        &listen,
        "--interval",
        "1s",
    ]);
    let body =
        poll("serve in the image to answer", 240, || get(&listen).filter(|b| b.contains("vdsoctl_check_status{")));
    assert!(body.contains("vdsoctl_build_info{version=\""), "{body}");
    podman.remove(&id);
}
