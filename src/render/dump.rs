//! `dump`'s report as tables, like `objdump -T` and `readelf -V -n`.

use super::{human_size, or_dash, Output, Render};
use crate::model::dump::{DumpReport, Source, VersionName};
use crate::model::image::ImageProblem;
use serde::{Serialize, Serializer};
use std::fmt;

/// `LINUX_2.6`, or `<index 5>` for an index no definition has.
impl fmt::Display for VersionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionName::Named(name) => f.write_str(name),
            VersionName::Unnamed(index) => write!(f, "<index {index}>"),
        }
    }
}

/// JSON `symbols[].version`: the version as Display words it.
impl Serialize for VersionName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Render for DumpReport {
    fn render_table(&self, out: &Output) -> String {
        let wide = self.elf.class == "ELF64";
        let addr = |v: u64| if wide { format!("{v:016x}") } else { format!("{v:08x}") };
        let mut s = match &self.source {
            Source::Process { process } => format!(
                "[vdso] of {} at {}\n",
                out.text(&process.text()),
                self.elf.base.map_or("-".into(), |b| format!("{b:#x}"))
            ),
            Source::File { file } => format!("file {}\n", out.text(file)),
        };
        s += &format!(
            "{} {}-endian {} {}, soname {}, {}\n\n",
            self.elf.class,
            self.elf.endian,
            self.elf.machine,
            self.elf.elf_type,
            out.text(&or_dash(self.elf.soname.as_deref())),
            human_size(self.elf.size)
        );

        let mut t = out.table(&["VALUE", "BIND", "TYPE", "SECTION", "SIZE", "VERSION", "NAME"]);
        for sym in &self.symbols {
            let version = match (&sym.version, sym.version_hidden) {
                (Some(v), true) => format!("({v})"),
                (Some(v), false) => v.to_string(),
                (None, _) => String::new(),
            };
            t.add_row(vec![
                addr(sym.value),
                sym.bind.clone(),
                if sym.thumb { format!("{} (Thumb)", sym.kind) } else { sym.kind.clone() },
                out.text(&or_dash(sym.section.as_deref())).into_owned(),
                addr(sym.size),
                out.text(&version).into_owned(),
                out.text(&sym.name).into_owned(),
            ]);
        }
        s += &format!("Dynamic symbols ({}):\n{t}\n\n", self.symbols.len());

        let mut t = out.table(&["INDEX", "FLAGS", "NAME", "PARENTS"]);
        for v in &self.versions {
            t.add_row(vec![v.index.to_string(), v.flags.clone(), out.text(&v.name).into_owned(), {
                let p = v.parents.join(", ");
                out.text(&p).into_owned()
            }]);
        }
        s += &format!("Version definitions ({}):\n{t}\n\n", self.versions.len());

        let mut t = out.table(&["OWNER", "TYPE", "SIZE", "DESCRIPTION"]);
        t.wrap("DESCRIPTION");
        for n in &self.notes {
            let kind = match &n.type_name {
                Some(name) => format!("{name} ({:#x})", n.n_type),
                None => format!("{:#x}", n.n_type),
            };
            t.add_row(vec![
                out.text(&n.owner).into_owned(),
                kind,
                n.size.to_string(),
                out.text(&or_dash(n.description.as_deref())).into_owned(),
            ]);
        }
        s += &format!("Notes ({}):\n{t}\n\n", self.notes.len());

        let yes = |b: bool| if b { "yes" } else { "no" };
        s += &format!(
            "Hash tables: DT_HASH {}, DT_GNU_HASH {}\n",
            yes(self.hash_tables.dt_hash),
            yes(self.hash_tables.dt_gnu_hash)
        );
        s += &out.findings(&self.findings.iter().map(ImageProblem::finding).collect::<Vec<_>>());
        s
    }
}

#[cfg(test)]
mod tests {
    /// Every prefix of every committed image that parses is reported and
    /// rendered (JSON, the table on a pipe and on a terminal) without a
    /// panic: a lazy accessor or a renderer indexing what a cut image lacks.
    #[test]
    fn every_prefix_of_every_image_renders() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vdso");
        let mut images = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "so") {
                continue;
            }
            images += 1;
            let bytes = std::fs::read(&path).unwrap();
            for len in 0..=bytes.len() {
                let Ok(img) = crate::inspect::elf::parse(&bytes[..len]) else { continue };
                let report =
                    crate::model::dump::report(crate::model::dump::Source::File { file: "x".into() }, Some(1), &img);
                let _ = serde_json::to_string(&report).unwrap();
                for tty in [false, true] {
                    let mut out = crate::render::Output::plain(crate::render::Format::Table);
                    out.stdout_tty = tty;
                    let _ = crate::render::Render::render_table(&report, &out);
                }
            }
        }
        assert!(images >= 12, "the committed images: {images}");
    }
}
