//! Output, decided once: format (table / json / prometheus) and colour are
//! resolved before a command runs; each report implements [`Render`] and
//! [`emit`] writes it to stdout. Nothing else in the crate writes to stdout.

use crate::error::{Error, Result};
use crate::model::{Finding, Status};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

pub mod check;
pub mod prom;
pub mod table;
pub use prom::Prometheus;
pub use table::{Cell, Color, Table};

/// The output format the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable tables (default).
    Table,
    /// One JSON document with stable keys.
    Json,
    /// Prometheus text exposition format (bench, check, trace).
    Prometheus,
    /// JUnit XML, for CI test reporters (check).
    Junit,
}

/// When to colour tables (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set (default).
    #[default]
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

/// Format and terminal facts, resolved once.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub format: Format,
    /// Colour escapes allowed in tables.
    pub color: bool,
    /// stdout is a terminal.
    pub stdout_tty: bool,
    /// stderr is a terminal: progress may be shown there.
    pub stderr_tty: bool,
    /// Columns tables may use: COLUMNS, else the terminal's width; `None`
    /// (unlimited) when neither is known or the terminal says 0.
    pub width: Option<usize>,
}

impl Output {
    /// Colour per `--color` (auto: only on a TTY and without a non-empty
    /// `NO_COLOR`); the table width from COLUMNS or the terminal.
    pub fn resolve(format: Format, color: ColorChoice) -> Output {
        let stdout_tty = std::io::stdout().is_terminal();
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = match color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stdout_tty && !no_color_env,
        };
        let columns = std::env::var("COLUMNS").ok();
        let width = table_width(columns.as_deref(), || {
            if stdout_tty {
                terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
            } else {
                None
            }
        });
        Output { format, color, stdout_tty, stderr_tty: std::io::stderr().is_terminal(), width }
    }

    /// A plain, uncoloured, non-terminal output (tests, library use).
    pub fn plain(format: Format) -> Output {
        Output { format, color: false, stdout_tty: false, stderr_tty: false, width: None }
    }

    /// A table in the house style, as wide as [`Output::width`] allows.
    /// Mark prose columns with [`Table::wrap`]; no other column is ever split.
    pub fn table(&self, header: &[&str]) -> Table {
        Table::new(header, self.width, self.color)
    }

    /// A string others chose (symbol names, comm, paths): control and bidi
    /// characters escaped, whatever the stream (JSON keeps the bytes).
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        sanitize(s)
    }

    /// A finding's severity cell, coloured when colour is on.
    pub fn severity_cell(&self, severity: Status) -> Cell {
        Cell::new(severity.label()).fg(finding_color(severity))
    }

    /// `text` (ours, already safe) in `color` when colour is on.
    pub fn paint(&self, text: &str, color: Color) -> String {
        if self.color && !text.is_empty() {
            format!("{}{text}\x1b[0m", color.sgr())
        } else {
            text.to_string()
        }
    }

    /// A severity's label, coloured as its table cell is.
    pub fn severity_label(&self, severity: Status) -> String {
        self.paint(severity.label(), finding_color(severity))
    }

    /// Findings as sentences under a table, `FAIL: message — hint`; the
    /// label coloured when colour is on.
    pub fn findings(&self, findings: &[Finding]) -> String {
        let mut s = String::new();
        for f in findings {
            let mut text = self.text(&f.message).into_owned();
            if let Some(h) = &f.hint {
                let _ = write!(text, " — {}", self.text(h));
            }
            s += &self.prose(&format!("{}: ", self.severity_label(f.severity)), &text);
        }
        s
    }

    /// A line of prose after `prefix`, wrapped between words at the table
    /// width with a hanging indent (a word, a number with its unit, stays
    /// whole); one line when the width is unknown. Ends in a newline.
    pub fn prose(&self, prefix: &str, text: &str) -> String {
        // The prefix's width on screen: its colour codes take none.
        let indent = visible_cols(prefix);
        let lines = match self.width {
            Some(w) if w >= indent + 20 => table::wrap_words(text, w - indent),
            _ => vec![text.to_string()],
        };
        let mut s = String::new();
        for (i, line) in lines.iter().enumerate() {
            if i == 0 {
                s += prefix;
            } else {
                s += &" ".repeat(indent);
            }
            s += line;
            s.push('\n');
        }
        s
    }
}

/// Columns `s` takes on screen: SGR colour sequences (`ESC [ … m`) take none.
/// A status as the STATUS cell of a check colours it: SKIP and INFO grey.
pub fn status_color(st: Status) -> Color {
    match st {
        Status::Ok => Color::Green,
        Status::Warn => Color::Yellow,
        Status::Fail => Color::Red,
        Status::Skip | Status::Info => Color::Grey,
    }
}

/// A finding's severity as its label is coloured: INFO is news, not a
/// skipped check, so it is green.
fn finding_color(st: Status) -> Color {
    match st {
        Status::Ok | Status::Info => Color::Green,
        Status::Warn => Color::Yellow,
        Status::Fail => Color::Red,
        Status::Skip => Color::Grey,
    }
}

fn visible_cols(s: &str) -> usize {
    let mut n = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            n += 1;
        }
    }
    n
}

/// The table width: a positive COLUMNS wins, then the terminal's width;
/// 0 or unknown is unlimited (a pty that reports 0×0, a pipe).
pub fn table_width(columns: Option<&str>, terminal: impl FnOnce() -> Option<usize>) -> Option<usize> {
    match columns.and_then(|c| c.trim().parse::<usize>().ok()) {
        Some(0) => None,
        Some(n) => Some(n),
        None => terminal().filter(|&w| w > 0),
    }
}

/// Whether any finding is a FAIL: every command exits 1 then (DESIGN's rule:
/// a FAIL line means exit 1; what should not fail a run is not called FAIL).
pub fn any_fail(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Status::Fail)
}

/// A progress or status line on stderr (`vdsoctl: ...`), escaped so that a
/// name with a newline or an escape cannot forge or hide a line. Never
/// panics: `eprintln!` would, on a closed stderr (`2>&-`, a reader that went away).
pub fn note(line: std::fmt::Arguments<'_>) {
    // One write(2) for the whole line: stderr is unbuffered, and a traced
    // command writing to the same pipe must not land inside our line.
    let text = format!("vdsoctl: {}\n", sanitize(&line.to_string()));
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// What a trace says on stderr as it goes, worded here (measure hands it
/// over as data).
pub fn trace_progress(p: &crate::measure::session::Progress<'_>) {
    use crate::measure::session::Progress;
    use crate::model::trace::Target;
    let how_long =
        |d: Option<std::time::Duration>| d.map_or_else(String::new, |d| format!(" for {}", duration_text(d)));
    match p {
        Progress::ThreadOfProcess { tid, tgid } => {
            note(format_args!("{tid} is a thread of process {tgid}: the whole process is traced"))
        }
        Progress::Fallback { engine: crate::measure::engine::Kind::Seccomp, why } => note(format_args!(
            "counting with the seccomp engine (no privileges; each clock syscall waits ~10 µs for vdsoctl): {}",
            sanitize(why)
        )),
        Progress::Fallback { engine, why } => {
            note(format_args!("counting with the {} engine: {}", engine.name(), sanitize(why)))
        }
        Progress::TreeLingers { pid } => note(format_args!(
            "the command (pid {pid}) exited, but processes it started still run under its seccomp filter: counting until they exit (interrupt to stop now: they are then killed)"
        )),
        Progress::TimedOut { pid, after, grace } => note(format_args!(
            "the command (pid {pid}) ran past --timeout {}: sent SIGTERM (SIGKILL in {} if it is still running)",
            duration_text(*after),
            duration_text(*grace)
        )),
        Progress::SignalIgnored { pid, signal } => note(format_args!(
            "the command (pid {pid}) is still running after {signal}: still counting; interrupt again to kill it"
        )),
        Progress::Armed { target: Target::Command { argv, pid }, duration } => {
            let until = duration
                .map_or_else(|| " until it exits".to_string(), |d| format!(" for at most {}", duration_text(d)));
            note(format_args!("tracing {} (pid {pid}){until}", sanitize(&shell_words(argv))))
        }
        Progress::Armed { target: Target::All, duration } => {
            note(format_args!("tracing all processes{}", how_long(*duration)))
        }
        Progress::Armed { target: Target::Pids(pids), duration } => {
            let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
            note(format_args!("tracing pid {}{}", list.join(","), how_long(*duration)))
        }
    }
}

/// A duration scaled for people: `850 ns`, `12.5 µs`, `3.20 ms`, `2.00 s`.
pub fn duration_text(d: std::time::Duration) -> String {
    ns_text(d.as_nanos() as f64)
}

/// Nanoseconds scaled for people, three significant digits: `9.8 ns`,
/// `444 ns`, `1.25 µs`, `12.5 µs`, `3.20 ms`, `2.00 s`.
pub fn ns_text(ns: f64) -> String {
    if ns == 0.0 {
        return "0 s".into();
    }
    // A value that rounds to 1000 of a unit is 1.00 of the next: never `1000 ns`.
    let (v, unit) = match ns {
        n if n < 999.5 => (n, "ns"),
        n if n < 999.5e3 => (n / 1e3, "µs"),
        n if n < 999.5e6 => (n / 1e6, "ms"),
        n => (n / 1e9, "s"),
    };
    if v >= 99.95 {
        format!("{v:.0} {unit}")
    } else if v >= 9.995 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// Nanoseconds as a number for a column whose header says `ns`: three
/// significant figures as [`ns_text`] gives them (`9.84`, `23.4`, `444`),
/// whole nanoseconds with thousands separators from 1,000 (`1,250`).
pub fn ns_number(ns: f64) -> String {
    match ns {
        n if n >= 999.5 => thousands(n.round() as u64),
        n if n >= 99.95 => format!("{n:.0}"),
        n if n >= 9.995 => format!("{n:.1}"),
        n => format!("{n:.2}"),
    }
}

/// A command line as a POSIX shell would read it back: each word quoted
/// only when it needs to be (`sh -c './rawn 100 raw > /dev/null'`), so a
/// hint that names the command can be pasted and runs the same command.
pub fn shell_words<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|w| match shlex::try_quote(w.as_ref()) {
            Ok(q) => q.into_owned(),
            // A NUL byte cannot be in an argument anyway: show it escaped.
            Err(_) => format!("'{}'", w.as_ref().replace('\0', "\\0").replace('\'', "'\\''")),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `81204` → `81,204`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate for people: `81,204/s`, one decimal below 10/s.
pub fn rate_text(per_sec: f64) -> String {
    if per_sec < 10.0 {
        format!("{per_sec:.1}/s")
    } else {
        format!("{}/s", thousands(per_sec.round() as u64))
    }
}

/// Characters that must never reach a terminal raw: C0/C1 controls and DEL,
/// and the invisible or direction-changing marks (LRM, RLM, ALM, the bidi
/// embeddings, overrides and isolates, zero-width and line separators, BOM).
fn hostile(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// Replace control and bidi characters with escapes (like fd's sanitize):
/// `\u{1b}`, `\n`, `\u{202e}`.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hostile) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hostile(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`sanitize`] for a whole rendered page: keeps newlines and the colour
/// escapes (`ESC [ digits ; m`) tables write, escapes everything else.
pub fn sanitize_page(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && hostile(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            let sgr = rest[1..].strip_prefix('[').and_then(|r| {
                let n = r.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
                r[n..].starts_with('m').then_some(n + 3)
            });
            if let Some(len) = sgr {
                out.push_str(&rest[..len]);
                rest = &rest[len..];
                continue;
            }
        }
        if c != '\n' && hostile(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// A report that can be shown in every format its command supports.
pub trait Render: Serialize {
    /// The human view: tables and sentences, ending in a newline.
    fn render_table(&self, out: &Output) -> String;

    /// The Prometheus view, for commands that have one.
    fn render_prometheus(&self) -> Option<String> {
        None
    }

    /// The JUnit XML view, for commands that have one (`check`).
    fn render_junit(&self) -> Option<String> {
        None
    }
}

/// Write a report to stdout in the resolved format. A closed pipe
/// (`vdsoctl ... | head`) is not an error.
pub fn emit<R: Render>(out: &Output, report: &R) -> Result<()> {
    emit_as(out, report, false)
}

/// `emit`, with JSON as one line (JSON Lines: a stream of reports, such as
/// `trace --interval`, one document a line).
pub fn emit_line<R: Render>(out: &Output, report: &R) -> Result<()> {
    emit_as(out, report, true)
}

fn emit_as<R: Render>(out: &Output, report: &R, one_line: bool) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match write_report(out, report, one_line, &mut stdout) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Stdout { source: e }),
        Ok(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// Render `report` in `out`'s format into any writer (stdout, a buffer, an
/// HTTP body): the one place a report becomes bytes. The outer `Err` is the
/// writer's; the inner one a report that has no form in this format.
pub fn write_report<R: Render>(
    out: &Output,
    report: &R,
    one_line: bool,
    w: &mut dyn std::io::Write,
) -> std::io::Result<Result<()>> {
    let text = match out.format {
        Format::Table => sanitize_page(&report.render_table(out)).into_owned(),
        Format::Json => {
            let json = if one_line { serde_json::to_string(report) } else { serde_json::to_string_pretty(report) };
            match json {
                Ok(mut s) => {
                    s.push('\n');
                    s
                }
                Err(e) => return Ok(Err(Error::malformed("report", e.to_string()))),
            }
        }
        Format::Prometheus => match report.render_prometheus() {
            Some(text) => text,
            None => {
                return Ok(Err(Error::Usage("--format prometheus is only for `bench`, `check` and `trace`".into())))
            }
        },
        Format::Junit => match report.render_junit() {
            Some(text) => text,
            None => return Ok(Err(Error::Usage("--format junit is only for `check`".into()))),
        },
    };
    w.write_all(text.as_bytes())?;
    w.flush()?;
    Ok(Ok(()))
}

/// `-` for unknown values in tables (unknown is not zero).
pub fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Bytes in the one size style: binary units with up to one decimal,
/// `512 B`, `8 KiB`, `1.5 KiB`, `147.8 KiB`, `1.6 MiB` (exact sizes are in JSON).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    let text = format!("{v:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Tiny {
        name: &'static str,
    }

    impl Render for Tiny {
        fn render_table(&self, _out: &Output) -> String {
            format!("name {}\x1b[2J\n", self.name)
        }
    }

    /// Reports render into any writer: a buffer here, an HTTP body in serve.
    #[test]
    fn reports_render_into_any_writer() {
        let mut buf = Vec::new();
        write_report(&Output::plain(Format::Json), &Tiny { name: "x" }, true, &mut buf).unwrap().unwrap();
        assert_eq!(buf, b"{\"name\":\"x\"}\n");
        let mut buf = Vec::new();
        write_report(&Output::plain(Format::Table), &Tiny { name: "x" }, false, &mut buf).unwrap().unwrap();
        assert!(!buf.contains(&0x1b), "escaped on the way out: {buf:?}");
        let mut buf = Vec::new();
        let refused = write_report(&Output::plain(Format::Prometheus), &Tiny { name: "x" }, false, &mut buf).unwrap();
        assert!(matches!(refused, Err(Error::Usage(_))));
        assert!(buf.is_empty());
    }

    #[test]
    fn sanitize_escapes_only_hostile_chars() {
        assert_eq!(sanitize("__vdso_time"), "__vdso_time");
        assert_eq!(sanitize("a\x1b[31mb"), "a\\u{1b}[31mb");
        assert_eq!(sanitize("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(sanitize("a\nb\tc"), "a\\nb\\tc");
        for mark in ['\u{200e}', '\u{200f}', '\u{061c}', '\u{202a}', '\u{2066}', '\u{2069}', '\u{9b}', '\u{7f}'] {
            let s = format!("x{mark}y");
            assert!(!sanitize(&s).contains(mark), "{mark:?} not escaped");
        }
        assert_eq!(sanitize("héllo µs ±"), "héllo µs ±");
        // A page keeps its lines and our colour escapes, nothing else.
        assert_eq!(sanitize_page("\x1b[31mFAIL\x1b[0m\nx\x1b]0;t\x07"), "\x1b[31mFAIL\x1b[0m\nx\\u{1b}]0;t\\u{7}");
        assert_eq!(sanitize_page("a\x1b"), "a\\u{1b}");
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(8192), "8 KiB");
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(4097), "4 KiB");
        assert_eq!(human_size(151_344), "147.8 KiB");
        assert_eq!(human_size(1596 * 1024), "1.6 MiB");
        assert_eq!(or_dash(None::<u32>), "-");
    }

    #[test]
    fn numbers() {
        assert_eq!(thousands(81204), "81,204");
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(ns_text(9.84), "9.84 ns");
        assert_eq!(ns_text(23.4), "23.4 ns");
        assert_eq!(ns_text(444.0), "444 ns");
        assert_eq!(ns_text(1_250.0), "1.25 µs");
        assert_eq!(ns_text(12_500.0), "12.5 µs");
        assert_eq!(ns_text(3_200_000.0), "3.20 ms");
        assert_eq!(ns_text(2e9), "2.00 s");
        // Rounding up to 1000 of a unit moves to the next unit (bench said `1000 ns`).
        assert_eq!(ns_text(999.4), "999 ns");
        assert_eq!(ns_text(999.6), "1.00 µs");
        assert_eq!(ns_text(999_700.0), "1.00 ms");
        assert_eq!(
            [9.844, 23.4, 444.0, 999.6, 1_250.4, 12_500.0].map(ns_number),
            ["9.84", "23.4", "444", "1,000", "1,250", "12,500"]
        );
        assert_eq!(ns_text(999_600_000.0), "1.00 s");
        assert_eq!(duration_text(std::time::Duration::ZERO), "0 s");
        assert_eq!(rate_text(50_000.0), "50,000/s");
        assert_eq!(rate_text(2.5), "2.5/s");
    }

    #[test]
    fn prose_wraps_with_a_hanging_indent() {
        let mut out = Output::plain(Format::Table);
        let text = "CLOCK_TAI: 987,849 syscalls/s from pid 15396 (clock_loop) — the vDSO is bypassed";
        assert_eq!(out.prose("WARN: ", text), format!("WARN: {text}\n"));
        out.width = Some(40);
        let wrapped = out.prose("WARN: ", text);
        assert_eq!(
            wrapped,
            "WARN: CLOCK_TAI: 987,849 syscalls/s from\n      pid 15396 (clock_loop) — the vDSO\n      is bypassed\n"
        );
    }

    #[test]
    fn widths() {
        assert_eq!(table_width(Some("60"), || Some(200)), Some(60));
        assert_eq!(table_width(Some("0"), || Some(200)), None);
        assert_eq!(table_width(None, || Some(0)), None);
        assert_eq!(table_width(Some("x"), || Some(80)), Some(80));
        assert_eq!(table_width(None, || None), None);
    }
}
