//! Cgroups as `trace --cgroup` names them: paths in the cgroup v2 (unified)
//! hierarchy. The BPF engine filters with the cgroup's directory (a
//! descriptor in a `BPF_MAP_TYPE_CGROUP_ARRAY`), which the kernel accepts
//! only for v2; a hybrid host (v1 controllers, v2 at
//! /sys/fs/cgroup/unified) still has the v2 tree, where every process is.
//!
//! A PATH is either a directory under the v2 mount
//! (`/sys/fs/cgroup/system.slice/docker-ID.scope`) or the cgroup's path as
//! /proc/PID/cgroup's `0::` line shows it (`/system.slice/docker-ID.scope`),
//! taken from the v2 mount.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// A cgroup v2 directory to count, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupDir {
    /// As /proc/PID/cgroup shows it: `/` for the root, else `/a/b`.
    pub path: String,
    /// The directory in the v2 mount.
    pub dir: PathBuf,
}

/// The cgroup v2 mount point in a /proc/self/mountinfo text: the first
/// `cgroup2` mount (field 5 is the mount point, the type follows ` - `).
pub fn v2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, after) = line.split_once(" - ")?;
        (after.split_whitespace().next()? == "cgroup2").then_some(())?;
        Some(PathBuf::from(unescape(mount.split_whitespace().nth(4)?)))
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4).and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(char::from(c));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The cgroup v2 mount of this system, if any.
pub fn v2_mount() -> Option<PathBuf> {
    v2_mount_in(&std::fs::read_to_string("/proc/self/mountinfo").ok()?)
}

/// The v2 path in a /proc/PID/cgroup text: its `0::PATH` line.
pub fn v2_path_in(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix("0::")).map(|p| p.trim_end().to_string()).filter(|p| p.starts_with('/'))
}

/// A process's cgroup v2 path, `None` once it is gone.
pub fn of_process(pid: i32) -> Option<String> {
    v2_path_in(&std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?)
}

/// `arg` against the v2 mount `mount`: the cgroup's path and directory, or
/// `None` when `arg` is a directory outside the v2 tree (a v1 hierarchy).
pub fn place(arg: &str, mount: &Path) -> Option<CgroupDir> {
    let given = Path::new(arg);
    let relative = match given.strip_prefix(mount) {
        Ok(rest) => rest.to_path_buf(),
        // A directory under /sys/fs/cgroup but not the v2 mount: a v1
        // hierarchy (or a path that is no cgroup at all).
        Err(_) if given.starts_with("/sys/fs/cgroup") => return None,
        Err(_) => given.strip_prefix("/").unwrap_or(given).to_path_buf(),
    };
    let parts: Vec<&str> = relative.iter().filter_map(|c| c.to_str()).filter(|c| !c.is_empty() && *c != ".").collect();
    if parts.contains(&"..") {
        return None;
    }
    Some(CgroupDir { path: format!("/{}", parts.join("/")), dir: mount.join(parts.join("/")) })
}

/// What a `--cgroup` argument names on this system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A cgroup v2 directory.
    Found(CgroupDir),
    /// A path that cannot name a v2 cgroup (a v1 hierarchy's directory, a
    /// way out of the tree), with the v2 mount it was placed against.
    NotV2 { mount: PathBuf },
    /// A path in the v2 tree that is no cgroup directory.
    NotACgroup { dir: PathBuf },
}

/// Look a `--cgroup` argument up: what it names ([`Lookup`]; the resolve
/// step words a refusal as a usage error), or an error for what cannot be
/// looked at: no v2 mount (4), no such cgroup (3).
pub fn lookup(arg: &str) -> Result<Lookup> {
    let mount = v2_mount().ok_or_else(|| Error::Facility {
        errno: None,
        what: crate::error::Facility::NoCgroupV2,
        hint: "mount it (`mount -t cgroup2 none /sys/fs/cgroup/unified`) or boot with systemd's unified or hybrid hierarchy"
            .into(),
    })?;
    let Some(dir) = place(arg, &mount) else { return Ok(Lookup::NotV2 { mount }) };
    match std::fs::metadata(&dir.dir) {
        Ok(m) if m.is_dir() && dir.dir.join("cgroup.procs").exists() => Ok(Lookup::Found(dir)),
        Ok(_) => Ok(Lookup::NotACgroup { dir: dir.dir }),
        Err(e) => Err(Error::Io {
            path: dir.dir.clone(),
            source: e,
            hint: "no such cgroup: a process's is in /proc/PID/cgroup (the `0::` line)".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_v2_mount_is_found_on_a_hybrid_host() {
        assert_eq!(v2_mount_in(HYBRID), Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(v2_mount_in(&HYBRID.replace("cgroup2 cgroup2", "cgroup cgroup")), None);
        let escaped = "41 31 0:38 / /mnt/my\\040cg rw - cgroup2 none rw\n";
        assert_eq!(v2_mount_in(escaped), Some(PathBuf::from("/mnt/my cg")));
    }

    #[test]
    fn a_process_cgroup_is_its_v2_line() {
        let text = "4:memory:/process_api/2c\n1:cpu:/\n0::/system.slice/docker-ab12.scope\n";
        assert_eq!(v2_path_in(text).as_deref(), Some("/system.slice/docker-ab12.scope"));
        assert_eq!(v2_path_in("1:cpu:/\n"), None);
    }

    #[test]
    fn a_path_is_placed_in_the_v2_tree_either_way() {
        let m = Path::new("/sys/fs/cgroup/unified");
        let want = CgroupDir { path: "/a/b.scope".into(), dir: m.join("a/b.scope") };
        assert_eq!(place("/a/b.scope", m), Some(want.clone()));
        assert_eq!(place("a/b.scope/", m), Some(want.clone()));
        assert_eq!(place("/sys/fs/cgroup/unified/a/b.scope", m), Some(want));
        assert_eq!(place("/", m), Some(CgroupDir { path: "/".into(), dir: m.to_path_buf() }));
        // A v1 hierarchy's directory, and a way out of the tree, are refused.
        assert_eq!(place("/sys/fs/cgroup/memory/x", m), None);
        assert_eq!(place("/a/../../etc", m), None);
        // On a v2-only host the mount is /sys/fs/cgroup itself.
        let m = Path::new("/sys/fs/cgroup");
        assert_eq!(place("/sys/fs/cgroup/x", m).map(|d| d.path), Some("/x".into()));
    }
}
