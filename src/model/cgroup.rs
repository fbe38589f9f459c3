//! Who a cgroup belongs to, read from its path: the container runtimes'
//! and systemd's naming conventions, once, for `trace`'s rows and `serve`'s
//! series.

use serde::Serialize;

/// What a cgroup path says about its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// A container: its runtime and its full id (64 hex digits).
    Container { runtime: &'static str, id: String },
    /// A systemd unit (`nginx.service`, `session-2.scope`).
    Unit { name: String },
}

/// Scope and directory prefixes the runtimes name a container's cgroup
/// with, innermost convention first: `docker-ID.scope` (systemd driver),
/// `/docker/ID` (cgroupfs driver), `cri-containerd-ID.scope`,
/// `crio-ID.scope` (and its monitor's `crio-conmon-ID.scope`),
/// `libpod-ID.scope` (podman; `libpod-ID` under cgroupfs), and kubepods' bare `ID`
/// under a `pod…` directory (cgroupfs driver).
const RUNTIMES: [(&str, &str); 6] = [
    ("docker-", "docker"),
    ("cri-containerd-", "containerd"),
    ("crio-conmon-", "cri-o"),
    ("crio-", "cri-o"),
    ("libpod-", "podman"),
    ("containerd-", "containerd"),
];

fn is_container_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The owner the deepest component of `path` names, if any: a container
/// wins over the unit it runs in (`docker-ID.scope` is both).
pub fn owner(path: &str) -> Option<Owner> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate().rev() {
        let stem = part.strip_suffix(".scope").unwrap_or(part);
        for (prefix, runtime) in RUNTIMES {
            if let Some(id) = stem.strip_prefix(prefix).filter(|id| is_container_id(id)) {
                return Some(Owner::Container { runtime, id: id.to_string() });
            }
        }
        if is_container_id(stem) {
            let parent = i.checked_sub(1).map(|p| parts[p]).unwrap_or("");
            let runtime = match parent {
                "docker" => "docker",
                p if p.starts_with("pod") || p.contains("-pod") => "kubernetes",
                _ => continue,
            };
            return Some(Owner::Container { runtime, id: stem.to_string() });
        }
    }
    let unit = parts.iter().rev().find(|p| {
        [".service", ".scope", ".socket", ".mount", ".swap"].iter().any(|s| p.ends_with(s) && p.len() > s.len())
    })?;
    Some(Owner::Unit { name: unit.to_string() })
}

/// Where a process runs, as rows and series carry it: its cgroup v2 path
/// and the container or unit that path names (`null`s when unknown or
/// none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub cgroup: Option<String>,
    pub container: Option<Container>,
    pub unit: Option<String>,
}

/// A container: its runtime and full id, and the Kubernetes pod it runs
/// in when the path is a kubelet's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Container {
    pub runtime: &'static str,
    pub id: String,
    /// The pod's UID (`metadata.uid`, as `kubectl get pod -o
    /// jsonpath={.metadata.uid}` prints it), from the kubelet's pod cgroup.
    pub pod_uid: Option<String>,
}

/// The UID of the Kubernetes pod a cgroup path is under: the kubelet names
/// a pod's cgroup `pod<UID>` (cgroupfs driver: `/kubepods/burstable/pod<UID>/`)
/// or `kubepods[-QOS]-pod<UID>.slice` with the UID's dashes as underscores
/// (systemd driver: systemd reads `-` in a slice name as nesting). A UID
/// is a UUID, or 32 hex digits for a static pod (the hash of its manifest).
pub fn pod_uid(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if !parts.iter().any(|p| p.contains("kubepods")) {
        return None;
    }
    parts.iter().rev().find_map(|part| {
        let uid = match part.strip_suffix(".slice") {
            Some(slice) => slice.rsplit_once("-pod")?.1.replace('_', "-"),
            None => part.strip_prefix("pod")?.to_string(),
        };
        is_pod_uid(&uid).then_some(uid)
    })
}

fn is_pod_uid(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let groups: Vec<&str> = s.split('-').collect();
    match groups.as_slice() {
        [one] => hex(one, 32),
        [a, b, c, d, e] => hex(a, 8) && hex(b, 4) && hex(c, 4) && hex(d, 4) && hex(e, 12),
        _ => false,
    }
}

impl Placement {
    /// The placement a cgroup path gives.
    pub fn of(path: Option<&str>) -> Placement {
        let owner = path.and_then(owner);
        let (container, unit) = match owner {
            Some(Owner::Container { runtime, id }) => {
                (Some(Container { runtime, id, pod_uid: path.and_then(pod_uid) }), None)
            }
            Some(Owner::Unit { name }) => (None, Some(name)),
            None => (None, None),
        };
        Placement { cgroup: path.map(str::to_string), container, unit }
    }

    /// The short label a table shows: the container or unit, else the path.
    pub fn label(&self) -> Option<String> {
        match (&self.container, &self.unit) {
            (Some(c), _) => Some(Owner::Container { runtime: c.runtime, id: c.id.clone() }.label()),
            (None, Some(u)) => Some(u.clone()),
            (None, None) => self.cgroup.clone(),
        }
    }
}

impl Owner {
    /// A short label: `docker:0123456789ab` (12 digits, as `docker ps`
    /// shows it) or the unit's name.
    pub fn label(&self) -> String {
        match self {
            Owner::Container { runtime, id } => format!("{runtime}:{}", id.get(..12).unwrap_or(id)),
            Owner::Unit { name } => name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn container(runtime: &'static str) -> Option<Owner> {
        Some(Owner::Container { runtime, id: ID.into() })
    }

    #[test]
    fn container_runtimes_are_named_from_their_paths() {
        assert_eq!(owner(&format!("/system.slice/docker-{ID}.scope")), container("docker"));
        assert_eq!(owner(&format!("/docker/{ID}")), container("docker"));
        assert_eq!(
            owner(&format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-{ID}.scope"
            )),
            container("containerd")
        );
        assert_eq!(owner(&format!("/kubepods/besteffort/pod7f/{ID}")), container("kubernetes"));
        assert_eq!(owner(&format!("/machine.slice/libpod-{ID}.scope/container")), container("podman"));
        assert_eq!(owner(&format!("/kubepods.slice/crio-{ID}.scope")), container("cri-o"));
        assert_eq!(container("docker").unwrap().label(), "docker:0123456789ab");
        let p = Placement::of(Some(&format!("/system.slice/docker-{ID}.scope")));
        assert_eq!((p.container.as_ref().map(|c| c.runtime), p.unit.as_deref()), (Some("docker"), None));
        assert_eq!(p.label().as_deref(), Some("docker:0123456789ab"));
        assert_eq!(Placement::of(Some("/x")).label().as_deref(), Some("/x"));
        assert_eq!(Placement::of(None), Placement::default());
    }

    /// Pod UIDs from real kubelet layouts: the systemd driver (containerd,
    /// CRI-O; Guaranteed pods have no QoS slice), the cgroupfs driver, a
    /// static pod's hash; and the paths that are no pod.
    #[test]
    fn a_pod_uid_is_read_from_the_kubelet_layouts() {
        const UID: &str = "5f3f4a8e-6d3c-4b21-9a3e-0c8f5a3b9d10";
        let systemd = UID.replace('-', "_");
        let kube = |path: &str| {
            let p = Placement::of(Some(path));
            p.container.map(|c| (c.runtime, c.id, c.pod_uid))
        };
        let want = |runtime| Some((runtime, ID.to_string(), Some(UID.to_string())));
        for (path, runtime) in [
            (
                format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{systemd}.slice/cri-containerd-{ID}.scope"
                ),
                "containerd",
            ),
            (format!("/kubepods.slice/kubepods-pod{systemd}.slice/cri-containerd-{ID}.scope"), "containerd"),
            (format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{systemd}.slice/crio-{ID}.scope"), "cri-o"),
            (format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{systemd}.slice/crio-conmon-{ID}.scope"), "cri-o"),
            (format!("/kubepods/burstable/pod{UID}/{ID}"), "kubernetes"),
            (format!("/kubepods/pod{UID}/{ID}"), "kubernetes"),
            // kind and k3s nest the kubelet's tree under a cgroup of their own.
            (format!("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod{systemd}.slice/cri-containerd-{ID}.scope"), "containerd"),
        ] {
            assert_eq!(kube(&path), want(runtime), "{path}");
        }
        let static_pod = "0e4b9d2f6c1a8e7d3b5f9a2c4e6d8f10";
        assert_eq!(pod_uid(&format!("/kubepods/burstable/pod{static_pod}/{ID}")).as_deref(), Some(static_pod));
        // No kubelet: a container, no pod.
        assert_eq!(kube(&format!("/machine.slice/libpod-{ID}.scope/container")), Some(("podman", ID.into(), None)));
        assert_eq!(kube(&format!("/libpod_parent/libpod-{ID}")), Some(("podman", ID.into(), None)));
        assert_eq!(pod_uid(&format!("/system.slice/docker-{ID}.scope")), None);
        assert_eq!(pod_uid("/kubepods/burstable/podnotauid/x"), None);
        assert_eq!(pod_uid("/kubepods.slice/kubepods-burstable.slice"), None);
        // The pod's own cgroup (its pause process's parent): a pod, no container.
        assert_eq!(pod_uid(&format!("/kubepods/burstable/pod{UID}")).as_deref(), Some(UID));
    }

    #[test]
    fn units_are_named_and_anything_else_is_nobody() {
        let unit = |n: &str| Some(Owner::Unit { name: n.into() });
        assert_eq!(owner("/system.slice/nginx.service"), unit("nginx.service"));
        assert_eq!(owner("/user.slice/user-1000.slice/session-2.scope"), unit("session-2.scope"));
        assert_eq!(owner("/system.slice/foo.service/worker"), unit("foo.service"));
        assert_eq!(owner("/"), None);
        assert_eq!(owner("/vdsoctl-test"), None);
        // Not 64 hex digits: no container.
        assert_eq!(owner("/docker/abc"), None);
        assert_eq!(owner("/system.slice/docker-abc.scope"), unit("docker-abc.scope"));
    }
}
