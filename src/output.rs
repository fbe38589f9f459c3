//! Output, decided once: format (table / json / prometheus) and colour are
//! resolved before a command runs; each report implements [`Render`] and
//! [`emit`] writes it to stdout. Nothing else in the crate writes to stdout.

use crate::error::{Error, Result};
use crate::model::{Finding, Severity};
use comfy_table::{presets, Cell, Color, ContentArrangement, Table, TableComponent};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

pub mod prom;
pub use prom::Prometheus;

/// The output format the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable tables (default).
    Table,
    /// One JSON document with stable keys.
    Json,
    /// Prometheus text exposition format (bench, check, trace).
    Prometheus,
}

/// Format and terminal facts, resolved once.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub format: Format,
    /// Colour escapes allowed in tables.
    pub color: bool,
    /// stdout is a terminal: escape control characters in names.
    pub stdout_tty: bool,
    /// stderr is a terminal: progress may be shown there.
    pub stderr_tty: bool,
}

impl Output {
    /// Colour only on a TTY, never with `--no-color` or a non-empty `NO_COLOR`.
    pub fn resolve(format: Format, no_color: bool) -> Output {
        let stdout_tty = std::io::stdout().is_terminal();
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Output {
            format,
            color: stdout_tty && !no_color && !no_color_env,
            stdout_tty,
            stderr_tty: std::io::stderr().is_terminal(),
        }
    }

    /// A plain, uncoloured, non-terminal output (tests, library use).
    pub fn plain(format: Format) -> Output {
        Output { format, color: false, stdout_tty: false, stderr_tty: false }
    }

    /// A table in the house style, sized to the terminal when there is one.
    pub fn table(&self, header: &[&str]) -> Table {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_HORIZONTAL_ONLY);
        t.remove_style(TableComponent::HorizontalLines);
        t.remove_style(TableComponent::MiddleIntersections);
        t.remove_style(TableComponent::LeftBorderIntersections);
        t.remove_style(TableComponent::RightBorderIntersections);
        if self.stdout_tty {
            t.set_content_arrangement(ContentArrangement::Dynamic);
        } else {
            t.force_no_tty();
        }
        if self.color {
            t.enforce_styling();
        }
        t.set_header(header.iter().map(Cell::new));
        t
    }

    /// A string others chose (symbol names, comm), escaped on a terminal only.
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        if self.stdout_tty {
            sanitize(s)
        } else {
            Cow::Borrowed(s)
        }
    }

    /// A status/severity cell, coloured when colour is on.
    pub fn severity_cell(&self, severity: Severity) -> Cell {
        let cell = Cell::new(severity.label());
        if !self.color {
            return cell;
        }
        match severity {
            Severity::Info => cell.fg(Color::Green),
            Severity::Warn => cell.fg(Color::Yellow),
            Severity::Fail => cell.fg(Color::Red),
        }
    }

    /// Findings as indented sentences under a table.
    pub fn findings(&self, findings: &[Finding]) -> String {
        let mut s = String::new();
        for f in findings {
            let _ = write!(s, "{}: {}", f.severity.label(), self.text(&f.message));
            if let Some(h) = &f.hint {
                let _ = write!(s, " — {}", self.text(h));
            }
            s.push('\n');
        }
        s
    }
}

/// A progress or status line on stderr (`vdsoctl: ...`). Never panics:
/// `eprintln!` would, on a closed stderr (`2>&-`, a reader that went away).
pub fn note(line: std::fmt::Arguments<'_>) {
    // One write(2) for the whole line: stderr is unbuffered, and a traced
    // command writing to the same pipe must not land inside our line.
    let text = format!("vdsoctl: {line}\n");
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `81204` → `81,204`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration scaled for people: `850 ns`, `12.5 µs`, `3.20 ms`, `2.00 s`.
pub fn duration_text(d: std::time::Duration) -> String {
    let ns = d.as_nanos() as f64;
    match ns {
        n if n < 1e3 => format!("{n:.0} ns"),
        n if n < 1e6 => format!("{:.1} µs", n / 1e3),
        n if n < 1e9 => format!("{:.2} ms", n / 1e6),
        n => format!("{:.2} s", n / 1e9),
    }
}

/// Replace control and bidi characters with escapes (like fd's sanitize).
pub fn sanitize(s: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().map(|c| if bad(c) { c.escape_default().to_string() } else { c.to_string() }).collect())
}

/// A report that can be shown in every format its command supports.
pub trait Render: Serialize {
    /// The human view: tables and sentences, ending in a newline.
    fn render_table(&self, out: &Output) -> String;

    /// The Prometheus view, for commands that have one.
    fn render_prometheus(&self) -> Option<String> {
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
    let text = match out.format {
        Format::Table => report.render_table(out),
        Format::Json => {
            let json = if one_line { serde_json::to_string(report) } else { serde_json::to_string_pretty(report) };
            let mut s = json.map_err(|e| Error::malformed("report", e.to_string()))?;
            s.push('\n');
            s
        }
        Format::Prometheus => report
            .render_prometheus()
            .ok_or_else(|| Error::Usage("--format prometheus is only for `bench`, `check` and `trace`".into()))?,
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::from_io("stdout", e, "check where stdout goes"))
        }
        _ => Ok(()),
    }
}

/// `-` for unknown values in tables (unknown is not zero).
pub fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Bytes as a short human size: `8 KiB`, `4096 B`.
pub fn human_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_escapes_only_hostile_chars() {
        assert_eq!(sanitize("__vdso_time"), "__vdso_time");
        assert_eq!(sanitize("a\x1b[31mb"), "a\\u{1b}[31mb");
        assert_eq!(sanitize("x\u{202e}y"), "x\\u{202e}y");
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(8192), "8 KiB");
        assert_eq!(human_size(4097), "4097 B");
        assert_eq!(or_dash(None::<u32>), "-");
    }
}
