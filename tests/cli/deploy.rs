//! deploy/daemonset.yaml, parsed (PyYAML, through python3: the Rust side
//! has no YAML parser and needs none) and checked: the security context
//! deploy/README.md promises, limits, the scrape port, and arguments the
//! real `vdsoctl serve` accepts.

use super::common::{skip, vdsoctl_path};
use serde_json::Value;
use std::process::{Command, Stdio};

/// The manifest as JSON, or why it could not be read here.
fn manifest() -> Result<Value, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/daemonset.yaml");
    let out = Command::new("python3")
        .args(["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))"])
        .arg(&path)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("python3 yaml could not read the manifest: {stderr}"));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

#[test]
fn the_daemonset_holds_what_its_readme_promises() {
    let m = match manifest() {
        Ok(m) => m,
        Err(e) if e.contains("No module named 'yaml'") || e.starts_with("python3:") => {
            if std::env::var_os("CI").is_some() {
                panic!("required facility missing in CI: {e} (apt-get install python3-yaml)");
            }
            return skip(&e);
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!((m["apiVersion"].as_str(), m["kind"].as_str()), (Some("apps/v1"), Some("DaemonSet")));
    let pod = &m["spec"]["template"];
    let labels = &pod["metadata"]["labels"];
    assert_eq!(m["spec"]["selector"]["matchLabels"], *labels, "the selector matches the pod's labels");
    let spec = &pod["spec"];
    assert_eq!(spec["hostPID"], true, "the node's processes, by the node's pids");
    let containers = spec["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let sc = &c["securityContext"];
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(sc["capabilities"]["add"], serde_json::json!(["BPF", "PERFMON"]));
    assert_eq!((&sc["privileged"], &sc["allowPrivilegeEscalation"]), (&Value::Bool(false), &Value::Bool(false)));
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    for kind in ["requests", "limits"] {
        for what in ["cpu", "memory"] {
            assert!(c["resources"][kind][what].is_string(), "resources.{kind}.{what}: {c:#}");
        }
    }
    // The port: the one serve listens on, declared and annotated.
    let args: Vec<&str> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args.first(), Some(&"serve"));
    let listen = args.iter().position(|a| *a == "--listen").map(|i| args[i + 1]).expect("--listen");
    let port = listen.rsplit(':').next().unwrap();
    assert_eq!(c["ports"][0]["containerPort"].to_string(), port);
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(
        (annotations["prometheus.io/scrape"].as_str(), annotations["prometheus.io/port"].as_str()),
        (Some("true"), Some(port))
    );
    // The arguments parse: each flag is in serve's help, and serve takes
    // them all (with --help last, it parses them and exits 0 without serving).
    let help = Command::new(vdsoctl_path()).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        assert!(help.contains(&format!("{flag} <")), "{flag} is no flag of `vdsoctl serve`: {help}");
    }
    let out = Command::new(vdsoctl_path()).args(&args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bad = Command::new(vdsoctl_path()).args(&args).args(["--interval", "soon", "--help"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "a bad value is refused before --help: the check above means something");
}
