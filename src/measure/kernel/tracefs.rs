//! Finding tracefs and reading tracepoint ids and field layouts from it.
//!
//! tracefs may be unmounted (it is at boot on some hosts). Like perf, we look
//! in /sys/kernel/tracing and /sys/kernel/debug/tracing, and as root mount
//! tracefs at /sys/kernel/tracing; otherwise the error names every path tried
//! and the mount command.

use crate::error::{Error, Facility, Hint, Result, TracefsMount};
use std::path::{Path, PathBuf};

/// Where tracefs usually lives, in the order perf tries them.
pub const CANDIDATES: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// A mounted tracefs.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
}

/// One field of a tracepoint's `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
}

/// The field layout of a tracepoint's raw record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventFormat {
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

impl Tracefs {
    /// Use tracefs at `root` (tests, or a known mount).
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs { root: root.into() }
    }

    /// Find a mounted tracefs, mounting it at /sys/kernel/tracing when we are
    /// root and it is absent.
    pub fn find_or_mount() -> Result<Tracefs> {
        if let Some(t) = Self::find() {
            return Ok(t);
        }
        // Mounted but closed to us (mode 0700 for a non-root user): say so,
        // rather than "not mounted".
        for root in CANDIDATES.iter().map(Path::new) {
            if let Err(e) = std::fs::metadata(root.join("events")) {
                if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
                    return Err(Error::Facility {
                        errno: None,
                        what: Facility::TracefsRootOnly { root: root.to_path_buf(), source: e },
                        hint: Hint::TracefsRoot,
                    });
                }
            }
        }
        if !nix::unistd::geteuid().is_root() {
            return Err(Self::missing(TracefsMount::NeedsRoot));
        }
        let target = Path::new(CANDIDATES[0]);
        let mounted =
            nix::mount::mount(Some("tracefs"), target, Some("tracefs"), nix::mount::MsFlags::empty(), None::<&str>);
        match mounted {
            Ok(()) => Self::find().ok_or_else(|| Self::missing(TracefsMount::NoEvents)),
            Err(errno) => Err(Self::missing(TracefsMount::Failed { target: target.to_path_buf(), errno })),
        }
    }

    /// A mounted tracefs among [`CANDIDATES`], without mounting anything.
    pub fn find() -> Option<Tracefs> {
        CANDIDATES.iter().map(Path::new).find(|p| p.join("events").is_dir()).map(Tracefs::at)
    }

    fn missing(why: TracefsMount) -> Error {
        Error::Facility {
            errno: None,
            what: Facility::TracefsMissing { tried: CANDIDATES.iter().map(PathBuf::from).collect(), why },
            hint: Hint::MountTracefs,
        }
    }

    fn event_file(&self, group: &str, name: &str, file: &str) -> Result<String> {
        let path = self.root.join("events").join(group).join(name).join(file);
        std::fs::read_to_string(&path).map_err(|e| match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => Error::Facility {
                errno: e.raw_os_error(),
                what: Facility::TracefsDenied { path },
                hint: Hint::TracefsAccess,
            },
            Some(libc::ENOENT) => Error::Facility {
                errno: e.raw_os_error(),
                what: Facility::TracepointMissing {
                    group: group.to_string(),
                    name: name.to_string(),
                    root: self.root.clone(),
                },
                hint: Hint::TracepointMissing,
            },
            _ => Error::Facility {
                errno: e.raw_os_error(),
                what: Facility::TracefsRead { path, source: e },
                hint: Hint::TracefsReadable,
            },
        })
    }

    /// The numeric id perf_event_open needs as `config` for PERF_TYPE_TRACEPOINT.
    pub fn event_id(&self, group: &str, name: &str) -> Result<u64> {
        let text = self.event_file(group, name, "id")?;
        text.trim().parse().map_err(|_| Error::malformed(format!("tracepoint id of {group}:{name}"), text.trim()))
    }

    /// The field layout from the event's `format` file.
    pub fn event_format(&self, group: &str, name: &str) -> Result<EventFormat> {
        parse_format(&self.event_file(group, name, "format")?)
    }
}

/// Parse a tracefs `format` file: lines like
/// `field:long id; offset:8; size:8; signed:1;`.
pub fn parse_format(text: &str) -> Result<EventFormat> {
    let mut fields = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| l.starts_with("field:")) {
        let mut decl = None;
        let (mut offset, mut size, mut signed) = (None, None, false);
        for part in line.split(';').map(str::trim) {
            if let Some(d) = part.strip_prefix("field:") {
                decl = Some(d.trim());
            } else if let Some(v) = part.strip_prefix("offset:") {
                offset = v.trim().parse().ok();
            } else if let Some(v) = part.strip_prefix("size:") {
                size = v.trim().parse().ok();
            } else if let Some(v) = part.strip_prefix("signed:") {
                signed = v.trim() == "1";
            }
        }
        let bad = || Error::malformed("tracepoint format", format!("cannot read line {line:?}"));
        let decl = decl.ok_or_else(bad)?;
        // "unsigned long args[6]" -> "args"; "int __syscall_nr" -> "__syscall_nr"
        let last = decl.split_whitespace().last().ok_or_else(bad)?;
        let name = last.split('[').next().unwrap_or(last).trim_start_matches('*').to_string();
        fields.push(Field { name, offset: offset.ok_or_else(bad)?, size: size.ok_or_else(bad)?, signed });
    }
    if fields.is_empty() {
        return Err(Error::malformed("tracepoint format", "no fields"));
    }
    Ok(EventFormat { fields })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW_SYS_ENTER: &str = "name: sys_enter
ID: 21
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;
\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;

print fmt: \"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)\", REC->id, REC->args[0]
";

    #[test]
    fn parses_raw_syscalls_format() {
        let f = parse_format(RAW_SYS_ENTER).unwrap();
        assert_eq!(f.field("id"), Some(&Field { name: "id".into(), offset: 8, size: 8, signed: true }));
        assert_eq!(f.field("args").map(|a| (a.offset, a.size)), Some((16, 48)));
        assert_eq!(f.field("common_pid").map(|a| a.offset), Some(4));
        assert!(parse_format("name: x\nformat:\n").is_err());
        assert!(parse_format("\tfield:int x;\toffset:zz;\tsize:4;").is_err());
    }
}
