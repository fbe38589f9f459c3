//! `check`'s report as a table, JUnit XML and Prometheus metrics.

use super::{status_color, thousands, Cell, Output, Prometheus, Render};
use crate::model::check::{BinaryRow, CheckReport, ImageSummary};
use crate::model::Status;

/// `ELF64 x86_64`, and the Debian name where the machine alone does not
/// say it (byte order, float ABI, class): `ELF32 arm (armhf)`, `ELF64 ppc64 (ppc64el)`.
fn class_text(b: &BinaryRow) -> String {
    let plain = ["amd64", "i386"].contains(&b.binary.arch.as_str());
    if plain || b.binary.arch == b.binary.machine {
        format!("{} {}", b.binary.class, b.binary.machine)
    } else {
        format!("{} {} ({})", b.binary.class, b.binary.machine, b.binary.arch)
    }
}

/// A STATUS cell, coloured when colour is on.
/// A status word in prose (a hint line, the verdict), coloured as its cell.
fn status_label(out: &Output, st: Status) -> String {
    out.paint(st.label(), status_color(st))
}

fn status_cell(st: Status) -> Cell {
    Cell::new(st.label()).fg(status_color(st))
}

impl Render for CheckReport {
    fn render_table(&self, out: &Output) -> String {
        let mut s = String::new();
        if let Some(binaries) = &self.binaries {
            s += &self.render_binaries(binaries, out);
        }
        if let Some(c) = &self.command {
            s += &format!("`{}` (pid {})\n", out.text(&crate::render::shell_words(&c.argv)), c.pid);
        }
        let mut t = out.table(&["CHECK", "STATUS", "DETAIL"]);
        t.wrap("DETAIL");
        let mut hidden = 0;
        for c in &self.checks {
            if self.quiet && c.status == Status::Ok {
                hidden += 1;
                continue;
            }
            let detail = super::gate::with_note(&c.detail(), c.waived.as_ref(), c.raised);
            t.add_row(vec![Cell::new(&c.name), status_cell(c.status), Cell::new(detail)]);
        }
        if !t.is_empty() {
            s += &format!("{t}\n");
        }
        if hidden > 0 {
            s += &format!(
                "{} OK {} not shown (--quiet)\n",
                thousands(hidden),
                if hidden == 1 { "check" } else { "checks" }
            );
        }
        for c in self.checks.iter().filter(|c| c.status >= Status::Warn) {
            if let Some(h) = &c.hint() {
                s += &out.prose(&format!("{} {}: ", status_label(out, c.status), out.text(&c.name)), &out.text(h));
            }
        }
        if let Some(d) = &self.baseline {
            s += &super::baseline::text(d, out);
        }
        // The verdict line says what the exit status says: a WARN that
        // --strict fails is a FAIL here (exit 1).
        let partial = match &self.not_observed_in_full {
            Some(why) => format!(", not observed in full ({why})"),
            None => String::new(),
        };
        let caveat = self.not_observed.as_ref().map_or_else(String::new, |why| format!(" — {why}"));
        let waived = super::gate::waived_text(&self.waived);
        s += &format!("verdict: {}{partial}{waived}{caveat}\n", status_label(out, self.status));
        s
    }

    fn render_junit(&self) -> Option<String> {
        Some(self.junit())
    }

    fn render_prometheus(&self) -> Option<String> {
        let mut p = Prometheus::default();
        if let Some(binaries) = &self.binaries {
            p.family("check_binaries", "gauge", "Binaries of the audited image by status.");
            for st in [Status::Ok, Status::Info, Status::Warn, Status::Fail, Status::Skip] {
                let n = binaries.iter().filter(|b| b.status == st).count();
                p.sample("check_binaries", &[("status", &st.label().to_lowercase())], n as f64);
            }
        }
        p.family(
            "check_status",
            "gauge",
            "Status of each vdsoctl check: 0 ok, 1 warn, 2 fail, -1 skipped or not observed.",
        );
        for c in &self.checks {
            // An empty pid (host checks) is left out by the writer.
            let pid = match self.process.as_ref().map(|p| p.pid) {
                Some(pid) if c.about == crate::model::row::About::Process => pid.to_string(),
                _ => String::new(),
            };
            p.sample("check_status", &[("check", &c.name), ("kind", c.kind.id()), ("pid", &pid)], c.status.gauge());
        }
        p.family("check_failed", "gauge", "1 when the audit failed (any FAIL, or WARN with --strict).");
        let failed = self.status == Status::Fail;
        // Pending (`serve` before its first window): a FAIL is already
        // known, an OK is not, so there is no sample until it is.
        if failed || !self.pending {
            p.sample("check_failed", &[], if failed { 1.0 } else { 0.0 });
        }
        let mut text = p.finish();
        if let Some(costs) = self.bench.as_ref().and_then(|b| b.render_prometheus()) {
            text += &costs;
        }
        Some(text)
    }
}

/// Text as XML 1.0 character data or an attribute value: the five
/// specials escaped, characters XML cannot carry (controls but tab, newline,
/// carriage return; U+FFFE, U+FFFF) written as `words::escaped_name`
/// writes them (`\x01`, `\u{ffff}`), not dropped: a name stays recognisable.
fn xml_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push_str(&crate::words::escaped_name(c.to_string().as_bytes()))
            }
            c => out.push(c),
        }
    }
    out
}

impl CheckReport {
    /// JUnit XML: one testsuite for the checks and, with `--image`, one for
    /// the binaries, a testcase each. FAIL is a `<failure>` with the finding
    /// and the hint; WARN one too with `--strict` (the exit code's rule),
    /// else a pass with the property `vdsoctl.status=WARN` and the warning
    /// in `<system-out>`; SKIP and INFO are
    /// `<skipped>`. GitLab, Jenkins and GitHub reporters read this subset.
    pub fn junit(&self) -> String {
        struct Case<'a> {
            class: &'a str,
            name: String,
            kind: &'static str,
            status: Status,
            detail: String,
            hint: Option<std::borrow::Cow<'a, str>>,
        }
        let mut suites: Vec<(&str, Vec<Case>)> = vec![(
            "vdsoctl.check",
            self.checks
                .iter()
                .map(|c| Case {
                    class: "vdsoctl.check",
                    name: c.name.clone(),
                    kind: c.kind.id(),
                    status: c.status,
                    detail: super::gate::with_note(&c.detail(), c.waived.as_ref(), c.raised),
                    hint: c.hint(),
                })
                .collect(),
        )];
        if let Some(binaries) = &self.binaries {
            // One failure per failing finding (`PATH: KIND`), else one case a binary.
            let mut cases = Vec::new();
            for b in binaries {
                let failing: Vec<_> = b.findings.iter().filter(|f| f.status == Status::Fail).collect();
                if failing.is_empty() {
                    cases.push(Case {
                        class: "vdsoctl.check.image",
                        name: b.path.clone(),
                        kind: b.kind.id(),
                        status: b.status,
                        detail: b.detail.clone(),
                        hint: b.hint.as_deref().map(std::borrow::Cow::Borrowed),
                    });
                }
                for f in failing {
                    cases.push(Case {
                        class: "vdsoctl.check.image",
                        name: format!("{}: {}", b.path, f.kind),
                        kind: f.kind.id(),
                        status: f.status,
                        detail: super::gate::with_note(&f.fact.to_string(), f.waived.as_ref(), f.raised),
                        // The binary's one hint is its verdict's reason's.
                        hint: b.hint.as_deref().filter(|_| f.kind == b.kind).map(std::borrow::Cow::Borrowed),
                    });
                }
            }
            suites.push(("vdsoctl.check.image", cases));
        }
        let failed = |st: Status| st == Status::Fail;
        let skipped = |st: Status| st == Status::Skip || st == Status::Info;
        let count = |cases: &[Case], f: &dyn Fn(Status) -> bool| cases.iter().filter(|c| f(c.status)).count();
        let all: usize = suites.iter().map(|s| s.1.len()).sum();
        let all_failed: usize = suites.iter().map(|s| count(&s.1, &failed)).sum();
        let all_skipped: usize = suites.iter().map(|s| count(&s.1, &skipped)).sum();
        let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        x += &format!(
            "<testsuites name=\"vdsoctl check\" tests=\"{all}\" failures=\"{all_failed}\" errors=\"0\" skipped=\"{all_skipped}\">\n"
        );
        for (name, cases) in &suites {
            x += &format!(
                "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                cases.len(),
                count(cases, &failed),
                count(cases, &skipped)
            );
            // A loss is said on the suite as well as on its WARN case.
            if let (Some(why), "vdsoctl.check") = (&self.not_observed_in_full, *name) {
                x += &format!(
                    "    <properties>\n      <property name=\"not_observed_in_full\" value=\"{}\"/>\n    </properties>\n",
                    xml_text(why)
                );
            }
            for c in cases {
                let head = format!("    <testcase classname=\"{}\" name=\"{}\"", c.class, xml_text(&c.name));
                let message = format!("{} {}: {}", c.status.label(), c.kind, c.detail);
                let body = match &c.hint {
                    Some(h) => format!("{}\nkind: {}\nhint: {h}", c.detail, c.kind),
                    None => format!("{}\nkind: {}", c.detail, c.kind),
                };
                x += &junit_case(&head, (failed(c.status), skipped(c.status)), c.kind, c.status, &message, &body);
            }
            x += "  </testsuite>\n";
        }
        x += "</testsuites>\n";
        x
    }

    /// The image table: FAIL then WARN rows one per binary, each with its
    /// reason; OK (and SKIP) binaries one row per runtime, linkage and class
    /// with a count — JSON lists every one.
    fn render_binaries(&self, binaries: &[BinaryRow], out: &Output) -> String {
        let mut t = out.table(&["STATUS", "PATH", "CLASS", "LINKAGE", "RUNTIME", "DETAIL"]);
        // PATH wraps only in a group's "3 files (e.g. /lib/…)" cell: a path is one word.
        t.wrap("PATH").wrap("DETAIL");
        // A path is one word: past what the width leaves beside the other
        // columns (STATUS, CLASS, LINKAGE, RUNTIME: about 44), it is cut.
        let room = out.width.map_or(crate::render::PATH_SHOWN, |w| w.saturating_sub(44).min(crate::render::PATH_SHOWN));
        let cell_path = |p: &str| crate::render::cut_path(p, room).into_owned();
        let runtime = |b: &BinaryRow| match &b.binary.runtime_version {
            Some(v) => format!("{} {v}", b.binary.runtime),
            None => b.binary.runtime.to_string(),
        };
        for b in binaries.iter().filter(|b| b.status >= Status::Warn) {
            t.add_row(vec![
                status_cell(b.status),
                Cell::new(out.text(&cell_path(&b.path))),
                Cell::new(class_text(b)),
                Cell::new(b.binary.linkage),
                Cell::new(out.text(&runtime(b))),
                Cell::new(out.text(&binary_detail(b))),
            ]);
        }
        type Group<'a> = (Status, String, &'a str, String, usize, &'a BinaryRow);
        let mut groups: Vec<Group> = Vec::new();
        // The runtimes a binary carries are named in its detail: a group
        // holds binaries that carry the same ones, or its example's detail
        // would name them for all.
        let carried = |b: &BinaryRow| -> Vec<String> {
            b.findings.iter().filter(|f| f.fact.carried().is_some()).map(|f| f.fact.to_string()).collect()
        };
        for b in binaries.iter().filter(|b| b.status < Status::Warn) {
            let class = class_text(b);
            let rt = runtime(b);
            let same = |g: &Group| {
                g.0 == b.status && g.1 == class && g.2 == b.binary.linkage && g.3 == rt && carried(g.5) == carried(b)
            };
            match groups.iter_mut().find(|g| same(g)) {
                Some(g) => g.4 += 1,
                None => groups.push((b.status, class, b.binary.linkage, rt, 1, b)),
            }
        }
        groups.sort_by(|a, b| b.0.cmp(&a.0).then(b.4.cmp(&a.4)));
        for (st, class, linkage, rt, n, example) in groups.into_iter().filter(|g| !(self.quiet && g.0 == Status::Ok)) {
            let (detail, example) = (binary_detail(example), cell_path(&example.path));
            let what = if n == 1 {
                out.text(&example).into_owned()
            } else {
                format!("{n} files (e.g. {})", out.text(&example))
            };
            t.add_row(vec![
                status_cell(st),
                Cell::new(what),
                Cell::new(class),
                Cell::new(linkage),
                Cell::new(out.text(&rt)),
                Cell::new(out.text(&detail)),
            ]);
        }
        let mut s = if t.is_empty() { String::new() } else { format!("{t}\n") };
        for b in binaries.iter().filter(|b| b.status >= Status::Warn) {
            if let Some(h) = &b.hint {
                let path = crate::render::shown_path(&b.path);
                s += &out.prose(&format!("{} {}: ", status_label(out, b.status), out.text(&path)), &out.text(h));
            }
        }
        if let Some(img) = &self.image {
            s += &image_summary(img, binaries, out);
        }

        s
    }
}

/// A binary's detail as the table says it: each finding's words, with
/// what the gate did to it (ignored, allowed, raised).
fn binary_detail(b: &BinaryRow) -> String {
    if b.findings.iter().all(|f| f.waived.is_none() && f.raised.is_none()) {
        return b.detail.clone();
    }
    let mut findings: Vec<_> = b.findings.iter().collect();
    findings.sort_by_key(|f| std::cmp::Reverse((f.status, f.waived.is_some())));
    let words: Vec<String> =
        findings.iter().map(|f| super::gate::with_note(&f.fact.to_string(), f.waived.as_ref(), f.raised)).collect();
    words.join("; ")
}

/// One testcase's element: a `<failure>` (FAIL; WARN with --strict), a
/// `<skipped>` (SKIP, INFO), else a pass, which says it warned with the
/// property `vdsoctl.status=WARN` beside its `<system-out>`.
fn junit_case(
    head: &str,
    (failed, skipped): (bool, bool),
    kind: &str,
    status: Status,
    message: &str,
    body: &str,
) -> String {
    if failed {
        // The failure's type is the finding's kind: a reporter groups by it.
        format!(
            "{head}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
            xml_text(message),
            xml_text(kind),
            xml_text(body)
        )
    } else if skipped {
        format!("{head}>\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_text(message))
    } else if status == Status::Warn {
        format!(
            "{head}>\n      <properties>\n        <property name=\"vdsoctl.status\" value=\"WARN\"/>\n      </properties>\n      <system-out>{}</system-out>\n    </testcase>\n",
            xml_text(message)
        )
    } else {
        format!("{head}>\n      <system-out>{}</system-out>\n    </testcase>\n", xml_text(message))
    }
}

/// The walk's summary under the image table: counts, what was left out
/// and what could not be read.
fn image_summary(img: &ImageSummary, binaries: &[BinaryRow], out: &Output) -> String {
    let mut s = String::new();
    let count = |st: Status| thousands(binaries.iter().filter(|b| b.status == st).count() as u64);
    s += &format!(
        "{}: {} ELF files in {} entries — {} FAIL, {} WARN, {} OK{}{}\n",
        out.text(&img.root),
        thousands(binaries.len() as u64),
        thousands(img.entries),
        count(Status::Fail),
        count(Status::Warn),
        count(Status::Ok),
        // Not judged (code not decoded, x32) is said, never folded into OK.
        [(Status::Info, "INFO"), (Status::Skip, "SKIP")]
            .iter()
            .filter(|(st, _)| binaries.iter().any(|b| b.status == *st))
            .map(|(st, label)| format!(", {} {label}", count(*st)))
            .collect::<String>(),
        if img.unreadable.is_empty() {
            String::new()
        } else {
            format!(", {} unreadable", thousands(img.unreadable_count as u64))
        }
    );
    if let Some(c) = img.selected.as_ref().filter(|c| c.of > 1) {
        let name = c.name.as_deref().map_or("unnamed".to_string(), |n| out.text(n).to_string());
        let platform = c.platform.as_deref().map(|p| format!(" ({})", out.text(p))).unwrap_or_default();
        s += &format!("image {} of {}: {name}{platform}; the others not audited (--image-index N)\n", c.index, c.of);
    }
    for p in &img.excluded {
        let p = crate::render::shown_path(p);
        s +=
            &format!("{}: vdsoctl itself, left out (its `bench` calls the [vsyscall] page on purpose)\n", out.text(&p));
    }
    const LISTED: usize = 10;
    for (p, why) in img.unreadable.iter().take(LISTED) {
        s += &format!("unreadable: {}: {}\n", out.text(&crate::render::shown_path(p)), out.text(why));
    }
    if img.unreadable_count > LISTED {
        s += &format!(
            "unreadable: {} more (`--json` lists the first {} in image.unreadable)\n",
            thousands((img.unreadable_count - LISTED) as u64),
            crate::inspect::image::KEPT
        );
    }
    if img.truncated {
        s += "the walk stopped at its entry cap: the tree was not audited whole\n";
    }
    s
}

/// `check --image`'s walk progress on stderr, only on a terminal (the resolved `Output`'s
/// `stderr_tty`, probed once) and only once the walk has taken more than a
/// second; cleared at the end.
pub struct ScanProgress {
    shown: bool,
    tty: bool,
    last: std::time::Duration,
}

impl ScanProgress {
    /// Shown only if `out` says stderr is a terminal.
    pub fn new(out: &Output) -> ScanProgress {
        ScanProgress { shown: false, tty: out.stderr_tty, last: Default::default() }
    }

    /// The walk has seen `entries` entries and `elf` ELF files in `elapsed`.
    pub fn tick(&mut self, entries: u64, elf: usize, elapsed: std::time::Duration) {
        use std::io::Write;
        if !self.tty || elapsed.as_millis() < 1000 || elapsed.saturating_sub(self.last).as_millis() < 100 {
            return;
        }
        self.last = elapsed;
        self.shown = true;
        // The summary's number style: `150,140 entries`, `2.40 s`.
        let _ = write!(
            std::io::stderr(),
            "\rscanning: {} entries, {} ELF files, {}",
            thousands(entries),
            thousands(elf as u64),
            super::duration_text(elapsed)
        );
    }

    /// Clear the line, if one was drawn.
    pub fn done(&self) {
        use std::io::Write;
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::check::Check;

    #[test]
    fn junit_text_is_xml() {
        assert_eq!(xml_text("a<b>&\"c'\u{1}\td"), "a&lt;b&gt;&amp;&quot;c&apos;\\x01\td");
        assert_eq!(xml_text("x\u{ffff}\u{fffe}"), "x\\u{ffff}\\u{fffe}");
        let report = CheckReport {
            checks: vec![Check::new(
                crate::model::kind::Kind::Note,
                "x",
                Status::Fail,
                "bad <thing>",
                Some("fix & retry"),
            )],
            ..CheckReport::default()
        };
        let x = report.junit();
        assert!(
            x.contains(r#"<testsuites name="vdsoctl check" tests="1" failures="1" errors="0" skipped="0">"#),
            "{x}"
        );
        assert!(x.contains(r#"<failure message="FAIL note: bad &lt;thing&gt;" type="note">bad &lt;thing&gt;"#), "{x}");
        assert!(x.contains("hint: fix &amp; retry</failure>"), "{x}");
    }

    /// Calls that ran uncounted: the verdict line, the JSON and the JUnit
    /// suite all say the trace was not observed in full.
    #[test]
    fn a_loss_is_said_on_the_verdict_line_in_json_and_junit() {
        let report = CheckReport {
            checks: vec![Check::new(
                crate::model::kind::Kind::NotObservedInFull,
                "command_trace_lost",
                Status::Warn,
                "not observed in full: 3 ...",
                Some("raise"),
            )],
            status: Status::Warn,
            not_observed_in_full: Some("3 clock syscalls uncounted".into()),
            ..CheckReport::default()
        };
        let table = report.render_table(&Output::plain(crate::render::Format::Table));
        assert!(table.ends_with("verdict: WARN, not observed in full (3 clock syscalls uncounted)\n"), "{table}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["not_observed_in_full"], "3 clock syscalls uncounted", "{json:#}");
        let x = report.junit();
        assert!(x.contains(r#"<property name="not_observed_in_full" value="3 clock syscalls uncounted"/>"#), "{x}");
        let clean = CheckReport { checks: vec![], ..CheckReport::default() };
        assert!(serde_json::to_value(&clean).unwrap().get("not_observed_in_full").is_none());
        assert!(!clean.junit().contains("properties"));
    }
}
