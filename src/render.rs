//! Output, decided once: format (table / json / prometheus) and colour are
//! resolved before a command runs; each report implements [`Render`] and
//! [`emit`] writes it to stdout. Nothing else in the crate writes to stdout.

use crate::error::{Error, Result};
use crate::model::{Finding, Status};
use crate::progress::{Kind, Progress, Target};
pub use crate::words::{duration_text, human_size, ns_number, ns_text, rate_text, shell_words, thousands};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

pub mod auxv;
pub mod baseline;
pub mod bench;
pub mod binary;
pub mod check;
pub mod dump;
pub mod flame;
pub mod gate;
pub mod hint;
pub mod host;
pub mod maps;
pub mod observe;
pub mod process;
pub mod prom;
#[cfg(test)]
pub(crate) mod prose;
pub mod random;
pub mod row;
pub mod seccomp;
pub mod serve;
pub mod table;
pub mod top;
pub mod trace;
pub mod vdso;
pub use gate::ignore_error;
pub use prom::Prometheus;
pub use table::{Cell, Color, Table};

/// The output format the user asked for; its names, commands and words
/// are rows of [`FORMATS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Prometheus,
    Junit,
    Folded,
}

/// One `--format`: its name, the commands that write it (`trace --stacks`:
/// only with that flag), and a line on what it is.
#[derive(Debug, Clone, Copy)]
pub struct FormatRow {
    pub format: Format,
    pub name: &'static str,
    pub commands: &'static [&'static str],
    pub about: &'static str,
}

/// Which command writes which format: the one table that `--format`'s help
/// ([`format_help`]), its completions' words, and the up-front refusal
/// before any work ([`format_refusal`]) read. serve, completions and man
/// write one thing (a table row only) and take no `--format` or `--json`.
pub const FORMATS: &[FormatRow] = &[
    FormatRow {
        format: Format::Table,
        name: "table",
        commands: &["auxv", "bench", "check", "completions", "dump", "man", "maps", "serve", "top", "trace"],
        about: "Human-readable tables",
    },
    FormatRow {
        format: Format::Json,
        name: "json",
        commands: &["auxv", "bench", "check", "dump", "maps", "top", "trace"],
        about: "One JSON document with stable keys",
    },
    FormatRow {
        format: Format::Prometheus,
        name: "prometheus",
        commands: &["bench", "check", "trace"],
        about: "Prometheus text exposition format",
    },
    FormatRow { format: Format::Junit, name: "junit", commands: &["check"], about: "JUnit XML, for CI test reporters" },
    FormatRow {
        format: Format::Folded,
        name: "folded",
        commands: &["trace --stacks"],
        about: "Folded stacks, `comm;frame;..;frame count` root first: the input of flamegraph.pl and inferno",
    },
];

impl Format {
    /// This format's row of [`FORMATS`].
    fn row(self) -> &'static FormatRow {
        FORMATS.iter().find(|r| r.format == self).unwrap_or(&FORMATS[0])
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// Whether `command` (with `--stacks` or not) writes this format.
    fn written_by(self, command: &str, stacks: bool) -> bool {
        self.row().commands.iter().any(|c| {
            let mut words = c.split(' ');
            words.next() == Some(command) && words.all(|flag| flag == "--stacks" && stacks)
        })
    }

    /// Whether every command that takes `--format` writes this one.
    fn everywhere(self) -> bool {
        let takes = |c: &str| FORMATS.iter().filter(|r| r.format.written_by(c, true)).count() > 1;
        FORMATS
            .iter()
            .flat_map(|r| r.commands)
            .map(|c| c.split(' ').next().unwrap_or(c))
            .filter(|c| takes(c))
            .all(|c| self.written_by(c, true))
    }

    /// What the help says after the name: `(default)`, or the commands
    /// that write it when not all do (`(bench, check, trace)`).
    fn qualifier(self) -> Option<String> {
        if self == Format::default() {
            Some("(default)".to_string())
        } else if self.everywhere() {
            None
        } else {
            Some(format!("({})", self.row().commands.join(", ")))
        }
    }

    /// `--format prometheus is only for `bench`, `check` and `trace``.
    fn only_for(self) -> String {
        let names: Vec<String> = self.row().commands.iter().map(|c| format!("`{c}`")).collect();
        let list = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.concat(),
        };
        format!("--format {} is only for {list}", self.name())
    }
}

impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[Format::Table, Format::Json, Format::Prometheus, Format::Junit, Format::Folded]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let row = self.row();
        let about = match self.qualifier() {
            Some(q) => format!("{} {q}", row.about),
            None => row.about.to_string(),
        };
        Some(clap::builder::PossibleValue::new(row.name).help(about))
    }
}

/// `--format`'s help, from [`FORMATS`]: `table (default), json,
/// prometheus (bench, check, trace), junit (check), or folded (trace --stacks)`.
pub fn format_help() -> String {
    let named: Vec<String> = FORMATS
        .iter()
        .map(|r| match r.format.qualifier() {
            Some(q) => format!("{} {q}", r.name),
            None => r.name.to_string(),
        })
        .collect();
    match named.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{}, or {last}", rest.join(", ")),
        _ => named.concat(),
    }
}

/// Why `command` (with `--stacks` or not) cannot write `format`, as the
/// usage error says it before any work; `None` when it can.
pub fn format_refusal(command: &str, format: Format, stacks: bool) -> Option<String> {
    if format.written_by(command, stacks) {
        None
    } else if !Format::Json.written_by(command, stacks) {
        Some(format!("`{command}` writes one form only and takes no --format or --json"))
    } else {
        Some(format!("{}; use --format table or --json here", format.only_for()))
    }
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
pub fn trace_progress(p: &Progress<'_>) {
    let how_long =
        |d: Option<std::time::Duration>| d.map_or_else(String::new, |d| format!(" for {}", duration_text(d)));
    match p {
        Progress::ThreadOfProcess { tid, tgid } => {
            note(format_args!("{tid} is a thread of process {tgid}: the whole process is traced"))
        }
        Progress::Fallback { engine: Kind::Seccomp, why } => note(format_args!(
            "counting with the seccomp engine (no privileges; each clock syscall waits ~10 µs for vdsoctl): {}",
            sanitize(why)
        )),
        Progress::Fallback { engine, why } => {
            note(format_args!("counting with the {} engine: {}", engine.name(), sanitize(why)))
        }
        Progress::SeccompListener { why } => {
            use crate::measure::trace::engines::seccomp::ListenerWhy;
            let because = match why {
                ListenerWhy::PtraceRefused => "the seccomp engine may not ptrace the command here (YAMA ptrace_scope, a sandbox, or vdsoctl traced itself)",
                ListenerWhy::Asked => "--seccomp-channel listener",
                ListenerWhy::Sanitizer => "the command is a sanitizer build whose leak check ptraces its own threads (traced, that would fail; --seccomp-channel ptrace to trace anyway)",
                ListenerWhy::Tracer => "the command is a tracer that ptraces what it runs (traced, that would fail; --seccomp-channel ptrace to trace anyway)",
            };
            note(format_args!(
                "{because}: it counts through a listener, where a signal can make a waiting clock call fail EINTR; such calls are counted as withdrawn and said"
            ))
        }
        Progress::TreeLingers { pid } => note(format_args!(
            "the command (pid {pid}) exited, but processes it started still run: counting until they exit (interrupt to stop now: they are then killed)"
        )),
        Progress::TimedOut { pid, after, grace } => note(format_args!(
            "the command (pid {pid}) ran past --timeout {}: sent SIGTERM (SIGKILL in {} if it is still running)",
            duration_text(*after),
            duration_text(*grace)
        )),
        Progress::TreeTimedOut { pid, after } => note(format_args!(
            "the command (pid {pid}) exited, but processes it started ran past --timeout {}: killed",
            duration_text(*after)
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

/// Characters that must never reach a terminal raw: C0/C1 controls and DEL,
/// and the invisible or direction-changing marks (LRM, RLM, ALM, the bidi
/// embeddings, overrides and isolates, zero-width and line separators, BOM)
/// — [`crate::words::terminal_hostile`], the one list.
fn hostile(c: char) -> bool {
    crate::words::terminal_hostile(c)
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

    /// Folded stacks, for reports that carry stacks (`trace --stacks`).
    fn render_folded(&self) -> Option<String> {
        None
    }
}

/// Clear a terminal before a refreshed report (`top` on a tty).
pub fn clear_screen() {
    let _ = std::io::stdout().lock().write_all(b"\x1b[H\x1b[2J");
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
/// writer's; the inner one a report that has no form in this format — an
/// internal error: the resolve step refuses such a format before any work
/// ([`format_refusal`]), so no command line reaches it.
pub fn write_report<R: Render>(
    out: &Output,
    report: &R,
    one_line: bool,
    w: &mut dyn std::io::Write,
) -> std::io::Result<Result<()>> {
    let text = match out.format {
        Format::Table => Some(sanitize_page(&report.render_table(out)).into_owned()),
        Format::Json => {
            let json = if one_line { serde_json::to_string(report) } else { serde_json::to_string_pretty(report) };
            match json {
                Ok(mut s) => {
                    s.push('\n');
                    Some(s)
                }
                Err(e) => return Ok(Err(Error::malformed("report", e.to_string()))),
            }
        }
        Format::Prometheus => report.render_prometheus(),
        Format::Junit => report.render_junit(),
        Format::Folded => report.render_folded(),
    };
    let Some(text) = text else {
        return Ok(Err(Error::Facility {
            errno: None,
            what: crate::error::Facility::NoFormatForm { format: out.format.name() },
            hint: "please report it: `resolve` should have refused the format before any work".into(),
        }));
    };
    w.write_all(text.as_bytes())?;
    w.flush()?;
    Ok(Ok(()))
}

/// `-` for unknown values in tables (unknown is not zero).
/// Characters of a path a table or a line under it shows (`--json` has
/// it whole): past them, its start and its end with `…` between, so the
/// file's own name stays (a 4,000-byte path is no 4,000-column row).
pub const PATH_SHOWN: usize = 72;

/// `path` as a line shows it: whole up to [`PATH_SHOWN`] characters, else
/// its first third and last two thirds around `…`.
pub fn shown_path(path: &str) -> Cow<'_, str> {
    cut_path(path, PATH_SHOWN)
}

/// `path` in at most `max` characters (at least 16), cut around `…`.
pub fn cut_path(path: &str, max: usize) -> Cow<'_, str> {
    let max = max.max(16);
    let n = path.chars().count();
    if n <= max {
        return Cow::Borrowed(path);
    }
    let head_len = (max - 1) / 3;
    let head: String = path.chars().take(head_len).collect();
    let tail: String = path.chars().skip(n - (max - 1 - head_len)).collect();
    Cow::Owned(format!("{head}…{tail}"))
}

pub fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// A call site's class as the table's CLASS column says it (`trace --sites`).
pub fn site_class_text(class: crate::model::site::SiteClass) -> &'static str {
    use crate::model::site::SiteClass;
    match class {
        SiteClass::VdsoFallback => "[vdso] fallback",
        SiteClass::LibcSyscall => "libc syscall()",
        SiteClass::LibcClock => "libc clock function",
        SiteClass::LibcRandom => "libc random function",
        SiteClass::Program => "the program",
        SiteClass::GoRuntime => "Go runtime",
        SiteClass::Jit => "anonymous (JIT)",
        SiteClass::Library => "a library",
        SiteClass::Unknown => "unknown",
        SiteClass::Unreadable => "unreadable",
    }
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

    /// One table says which command takes which format: the help lists it,
    /// and the refusal before any work reads it.
    #[test]
    fn the_format_table_drives_help_and_refusals() {
        assert_eq!(
            format_help(),
            "table (default), json, prometheus (bench, check, trace), junit (check), or folded (trace --stacks)"
        );
        assert_eq!(format_refusal("check", Format::Junit, false), None);
        assert_eq!(format_refusal("trace", Format::Folded, true), None);
        let folded = format_refusal("trace", Format::Folded, false).unwrap();
        assert_eq!(folded, "--format folded is only for `trace --stacks`; use --format table or --json here");
        let prom = format_refusal("maps", Format::Prometheus, false).unwrap();
        assert_eq!(
            prom,
            "--format prometheus is only for `bench`, `check` and `trace`; use --format table or --json here"
        );
        // Every command is a row of the table's, its lists sorted; the
        // completions' words come from the same rows.
        for row in FORMATS {
            assert!(row.commands.windows(2).all(|w| w[0] < w[1]), "{}", row.name);
        }
        for c in crate::cli::command().get_subcommands().map(|c| c.get_name().to_string()) {
            assert!(Format::Table.written_by(&c, false), "{c} is in no row of FORMATS");
        }
        let words =
            |f: Format| clap::ValueEnum::to_possible_value(&f).and_then(|v| v.get_help().map(|h| h.to_string()));
        assert_eq!(words(Format::Table).as_deref(), Some("Human-readable tables (default)"));
        assert_eq!(
            words(Format::Prometheus).as_deref(),
            Some("Prometheus text exposition format (bench, check, trace)")
        );
        assert_eq!(words(Format::Json).as_deref(), Some("One JSON document with stable keys"));
        for quiet in ["serve", "man", "completions"] {
            assert_eq!(format_refusal(quiet, Format::Table, false), None);
            let why = format_refusal(quiet, Format::Json, false).unwrap();
            assert!(why.contains("takes no --format or --json"), "{why}");
        }
        // Past the resolve step, a report without the form is vdsoctl's fault.
        let mut buf = Vec::new();
        let late = write_report(&Output::plain(Format::Junit), &Tiny { name: "x" }, false, &mut buf).unwrap();
        assert!(matches!(&late, Err(e @ Error::Facility { .. }) if e.to_string().contains("internal error")));
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
        assert!(matches!(refused, Err(Error::Facility { .. })));
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
    fn dashes() {
        assert_eq!(or_dash(None::<u32>), "-");
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
