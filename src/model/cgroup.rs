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
/// `crio-ID.scope`, `libpod-ID.scope` (podman), and kubepods' bare `ID`
/// under a `pod…` directory (cgroupfs driver).
const RUNTIMES: [(&str, &str); 5] = [
    ("docker-", "docker"),
    ("cri-containerd-", "containerd"),
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

/// A container: its runtime and full id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Container {
    pub runtime: &'static str,
    pub id: String,
}

impl Placement {
    /// The placement a cgroup path gives.
    pub fn of(path: Option<&str>) -> Placement {
        let owner = path.and_then(owner);
        let (container, unit) = match owner {
            Some(Owner::Container { runtime, id }) => (Some(Container { runtime, id }), None),
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
