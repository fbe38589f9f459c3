//! Parser for `/proc/PID/maps` lines (`proc(5)`): total over any bytes, each
//! line either a [`Mapping`] or an `Err` naming the line.

use crate::error::{Error, Result};
use serde::Serialize;

/// One line of /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// `r-xp` and friends, exactly as the kernel prints them.
    pub perms: String,
    pub offset: u64,
    pub dev: String,
    pub inode: u64,
    /// The pathname column; `None` for anonymous memory.
    pub path: Option<String>,
}

impl Mapping {
    /// Size in bytes (end is exclusive).
    pub fn size(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// `[vdso]`, `[vvar]`, `[heap]`, ... — a name the kernel gives, in brackets.
    /// User-chosen anonymous names (`[anon:...]`, `[anon_shmem:...]`) are not.
    pub fn is_special(&self) -> bool {
        match &self.path {
            Some(p) => {
                p.starts_with('[') && p.ends_with(']') && !p.starts_with("[anon:") && !p.starts_with("[anon_shmem:")
            }
            None => false,
        }
    }

    /// The bracketed name, e.g. `[vdso]`.
    pub fn name(&self) -> &str {
        self.path.as_deref().unwrap_or("")
    }

    /// Whether the mapping is executable.
    pub fn executable(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}

/// Parse one maps line.
pub fn parse_line(line: &str) -> Result<Mapping> {
    let bad = |why: &str| Error::malformed("maps line", format!("{why}: {line:?}"));
    let mut rest = line;
    let mut field = || -> Option<&str> {
        let trimmed = rest.trim_start_matches(' ');
        let end = trimmed.find(' ').unwrap_or(trimmed.len());
        let (f, r) = trimmed.split_at(end);
        rest = r;
        if f.is_empty() {
            None
        } else {
            Some(f)
        }
    };
    let range = field().ok_or_else(|| bad("no address range"))?;
    let perms = field().ok_or_else(|| bad("no permissions"))?.to_string();
    let offset = field().ok_or_else(|| bad("no offset"))?;
    let dev = field().ok_or_else(|| bad("no device"))?.to_string();
    let inode = field().ok_or_else(|| bad("no inode"))?;
    let (start, end) = range.split_once('-').ok_or_else(|| bad("address range without '-'"))?;
    let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad("not a hex number"));
    let (start, end, offset) = (hex(start)?, hex(end)?, hex(offset)?);
    if end < start {
        return Err(bad("end before start"));
    }
    if perms.len() != 4 {
        return Err(bad("permissions are not 4 characters"));
    }
    let inode = inode.parse::<u64>().map_err(|_| bad("inode is not a number"))?;
    let path = rest.trim_start_matches(' ');
    let path = (!path.is_empty()).then(|| path.to_string());
    Ok(Mapping { start, end, perms, offset, dev, inode, path })
}

/// Parse a whole maps file; any bad line fails the parse.
pub fn parse(text: &str) -> Result<Vec<Mapping>> {
    text.lines().filter(|l| !l.trim().is_empty()).map(parse_line).collect()
}

/// The size of vdsoctl's own `[vdso]` mapping: every native process on
/// this kernel maps the same image (`None`: no vDSO, or maps unreadable).
pub fn own_vdso_len() -> Option<u64> {
    let maps = crate::inspect::Process::open(None).ok()?.maps().ok()?;
    maps.iter().find(|m| m.name() == "[vdso]").map(Mapping::size)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
55d0c8a00000-55d0c8a02000 r--p 00000000 fd:01 1234                       /usr/bin/cat
7ffd1b7f2000-7ffd1b813000 rw-p 00000000 00:00 0                          [stack]
7f16c5707000-7f16c570b000 r--p 00000000 00:00 0                          [vvar]
7f16c570b000-7f16c570d000 r--p 00000000 00:00 0                          [vvar_vclock]
7f16c570d000-7f16c570f000 r-xp 00000000 00:00 0                          [vdso]
7f0000000000-7f0000001000 rw-p 00000000 00:00 0                          [anon:glibc malloc]
7f0000001000-7f0000002000 rw-p 00000000 00:00 0 
7f0000002000-7f0000003000 r--p 00000000 fd:01 99                         /tmp/a file (deleted)
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    #[test]
    fn parses_every_column() {
        let maps = parse(SAMPLE).unwrap();
        assert_eq!(maps.len(), 9);
        let vdso = maps.iter().find(|m| m.name() == "[vdso]").unwrap();
        assert_eq!((vdso.start, vdso.end, vdso.size()), (0x7f16c570d000, 0x7f16c570f000, 0x2000));
        assert_eq!(vdso.perms, "r-xp");
        assert!(vdso.is_special() && vdso.executable());
        assert_eq!(maps[6].path, None);
        assert_eq!(maps[7].path.as_deref(), Some("/tmp/a file (deleted)"));
        assert!(!maps[5].is_special(), "user-named anon memory is not a kernel mapping");
        let vsys = maps.last().unwrap();
        assert_eq!(vsys.start, 0xffffffffff600000);
        assert_eq!(vsys.perms, "--xp");
    }

    #[test]
    fn bad_lines_are_errors_not_panics() {
        for line in [
            "",
            "zz-10 r-xp 0 00:00 0",
            "10-5 r-xp 0 00:00 0",
            "10-20 r-x 0 00:00 0",
            "10-20 r-xp 0 00:00",
            "10 r-xp 0 00:00 0",
            "10-20 r-xp 0 00:00 x",
            "ffffffffffffffffff-1 r-xp 0 00:00 0",
            "\u{1F600}-\u{1F600}",
        ] {
            assert!(parse_line(line).is_err(), "{line:?}");
        }
    }
}
