//! The house table: a header, a rule, rows; columns two spaces apart.
//!
//! Only prose columns (marked with [`Table::wrap`]) are ever wrapped, and
//! only between words: an address, an identifier or a number is never split.
//! When the table cannot fit even so, it runs wider than the terminal rather
//! than break a token. No width (a pipe, a pty that says 0 columns) means
//! unlimited. No line ends in spaces. Every cell is escaped (control and
//! bidi characters), whatever the stream.

use super::sanitize;
use std::fmt;

/// A cell's colour (only written when colour is on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    Green,
    Yellow,
    Red,
    Grey,
}

impl Color {
    pub(crate) fn sgr(self) -> &'static str {
        match self {
            Color::Green => "\x1b[32m",
            Color::Yellow => "\x1b[33m",
            Color::Red => "\x1b[31m",
            Color::Grey => "\x1b[90m",
        }
    }
}

/// One cell: its text and an optional colour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    text: String,
    color: Option<Color>,
}

impl Cell {
    /// A plain cell; its text is escaped.
    pub fn new(text: impl AsRef<str>) -> Cell {
        Cell { text: sanitize(text.as_ref()).into_owned(), color: None }
    }

    /// The same cell in a colour.
    pub fn fg(mut self, color: Color) -> Cell {
        self.color = Some(color);
        self
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::new(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::new(s)
    }
}

impl From<&String> for Cell {
    fn from(s: &String) -> Cell {
        Cell::new(s)
    }
}

impl From<std::borrow::Cow<'_, str>> for Cell {
    fn from(s: std::borrow::Cow<'_, str>) -> Cell {
        Cell::new(s)
    }
}

/// A table; render it with `Display` (`format!("{t}")`).
#[derive(Debug, Clone)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<Cell>>,
    prose: Vec<bool>,
    width: Option<usize>,
    color: bool,
}

const GAP: usize = 2;

/// Width in terminal columns (one per char: what we print is ASCII, Latin
/// and a few symbols such as µ, … and —).
fn cols(s: &str) -> usize {
    s.chars().count()
}

impl Table {
    /// A table with this header, at most `width` columns wide (`None`:
    /// unlimited), coloured cells when `color`.
    pub fn new(header: &[&str], width: Option<usize>, color: bool) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            prose: vec![false; header.len()],
            width,
            color,
        }
    }

    /// Let the column with this header wrap between words when the table is
    /// too wide. Only prose (details, messages, descriptions) should.
    pub fn wrap(&mut self, header: &str) -> &mut Table {
        if let Some(i) = self.header.iter().position(|h| h == header) {
            self.prose[i] = true;
        }
        self
    }

    /// Append a row; missing cells are empty, extra cells are dropped.
    pub fn add_row<C: Into<Cell>>(&mut self, row: impl IntoIterator<Item = C>) -> &mut Table {
        let mut cells: Vec<Cell> = row.into_iter().map(Into::into).take(self.header.len()).collect();
        cells.resize(self.header.len(), Cell::new(""));
        self.rows.push(cells);
        self
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Column widths of the columns `shown`: natural widths, prose columns
    /// narrowed (never below their longest word or their header) until the
    /// table fits. Also each column's natural width.
    fn widths(&self, shown: &[bool]) -> (Vec<usize>, Vec<usize>) {
        let n = self.header.len();
        let last = self.under_column();
        let mut natural: Vec<usize> = self.header.iter().map(|h| cols(h)).collect();
        let mut floor = natural.clone();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate() {
                natural[i] = natural[i].max(cols(&c.text));
                let longest_word = words(&c.text).iter().map(|w| cols(w)).max().unwrap_or(0);
                // The last prose column narrows past a long word (a path):
                // that row's text goes under it instead.
                let word_floor = if Some(i) == last { longest_word.min(MIN_PROSE) } else { longest_word };
                floor[i] = floor[i].max(if self.prose[i] { word_floor } else { cols(&c.text) });
            }
        }
        let Some(limit) = self.width else { return (natural.clone(), natural) };
        let mut widths = natural.clone();
        let visible = shown.iter().filter(|s| **s).count();
        let total =
            |w: &[usize]| (0..n).filter(|&i| shown[i]).map(|i| w[i]).sum::<usize>() + GAP * visible.saturating_sub(1);
        // Take a column at a time from the widest prose column that can give.
        while total(&widths) > limit {
            let candidate =
                (0..n).filter(|&i| shown[i] && self.prose[i] && widths[i] > floor[i]).max_by_key(|&i| widths[i]);
            match candidate {
                Some(i) => widths[i] -= 1,
                None => break,
            }
        }
        (widths, natural)
    }

    /// The prose column whose text may go under its row: the last one, in a
    /// table with a width and other columns.
    fn under_column(&self) -> Option<usize> {
        self.width?;
        self.prose.iter().rposition(|p| *p).filter(|_| self.header.len() > 1)
    }

    /// The prose column that has no room in the grid: squeezed below
    /// [`MIN_PROSE`] columns, or the grid still too wide with it, its text
    /// goes under every row instead.
    fn prose_below(&self, widths: &[usize], natural: &[usize]) -> Option<usize> {
        let limit = self.width?;
        let i = self.under_column()?;
        let total = widths.iter().sum::<usize>() + GAP * widths.len().saturating_sub(1);
        (widths[i] < natural[i] && (widths[i] < MIN_PROSE || total > limit)).then_some(i)
    }
}

/// Below this many columns a prose column is no column: it is read a few
/// words a line. Its text goes under its row, indented, instead.
const MIN_PROSE: usize = 24;

/// Units that stay on the line of the number before them (`27.1 ns`).
const UNITS: [&str; 13] =
    ["ns", "µs", "ms", "s", "B", "KiB", "MiB", "GiB", "TiB", "ns/call", "µs/call", "calls", "syscalls/s"];

/// The unbreakable pieces of prose: words, with a number and its unit as one.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let unit = UNITS.iter().any(|u| word.trim_end_matches([',', ';', ')', '.', ':']) == *u);
        match out.last_mut() {
            Some(prev) if unit && prev.ends_with(|c: char| c.is_ascii_digit()) => {
                prev.push(' ');
                prev.push_str(word);
            }
            _ => out.push(word.to_string()),
        }
    }
    out
}

/// Greedy word wrap at spaces; a word longer than `width` stays whole.
pub(crate) fn wrap_words(text: &str, width: usize) -> Vec<String> {
    if cols(text) <= width {
        return vec![text.to_string()];
    }
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in words(text) {
        let word = word.as_str();
        if !line.is_empty() && cols(&line) + 1 + cols(word) > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.header.len();
        let mut shown = vec![true; n];
        let (mut widths, natural) = self.widths(&shown);
        let below = self.prose_below(&widths, &natural);
        if let Some(i) = below {
            shown[i] = false;
            widths = self.widths(&shown).0;
        }
        let mut lines: Vec<String> = Vec::new();
        let paint = |line: &mut String, text: &str, color: Option<Color>| match color {
            Some(c) if self.color && !text.is_empty() => {
                line.push_str(c.sgr());
                line.push_str(text);
                line.push_str("\x1b[0m");
            }
            _ => line.push_str(text),
        };
        let line_of = |cells: &[(String, Option<Color>)]| {
            let mut line = String::new();
            for (k, (i, (text, color))) in cells.iter().enumerate().filter(|(i, _)| shown[*i]).enumerate() {
                if k > 0 {
                    line.push_str(&" ".repeat(GAP));
                }
                paint(&mut line, text, *color);
                line.push_str(&" ".repeat(widths[i].saturating_sub(cols(text))));
            }
            line.trim_end().to_string()
        };
        lines.push(line_of(&self.header.iter().map(|h| (h.clone(), None)).collect::<Vec<_>>()));
        lines.push(
            (0..n).filter(|&i| shown[i]).map(|i| "─".repeat(widths[i])).collect::<Vec<_>>().join(&"─".repeat(GAP)),
        );
        // Prose under its row: indented to the second column when that
        // leaves room for it, else by a few spaces.
        let limit = self.width.unwrap_or(usize::MAX);
        let first = (0..n).find(|&i| shown[i]).map_or(0, |i| widths[i] + GAP);
        let indent = if limit.saturating_sub(first) >= 2 * MIN_PROSE { first } else { 4 };
        let column = self.under_column();
        for row in &self.rows {
            // This row's prose under it: the column is gone, or a word of
            // it (a path) is longer than the column.
            let under = below.or_else(|| column.filter(|&i| words(&row[i].text).iter().any(|w| cols(w) > widths[i])));
            let wrapped: Vec<Vec<String>> = row
                .iter()
                .enumerate()
                .map(|(i, c)| match () {
                    () if Some(i) == under => vec![String::new()],
                    () if self.prose[i] && shown[i] => wrap_words(&c.text, widths[i]),
                    () => vec![c.text.clone()],
                })
                .collect();
            let height = wrapped.iter().enumerate().filter(|(i, _)| shown[*i]).map(|(_, w)| w.len()).max().unwrap_or(1);
            for k in 0..height {
                let cells: Vec<(String, Option<Color>)> =
                    wrapped.iter().zip(row).map(|(w, c)| (w.get(k).cloned().unwrap_or_default(), c.color)).collect();
                lines.push(line_of(&cells));
            }
            if let Some(i) = under {
                for piece in wrap_words(&row[i].text, limit.saturating_sub(indent).max(1)) {
                    if piece.is_empty() {
                        continue;
                    }
                    let mut line = " ".repeat(indent);
                    paint(&mut line, &piece, row[i].color);
                    lines.push(line);
                }
            }
        }
        write!(f, "{}", lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(width: Option<usize>) -> Table {
        let mut t = Table::new(&["CHECK", "STATUS", "DETAIL"], width, false);
        t.wrap("DETAIL");
        t.add_row(["clocksource", "OK", "tsc: the vDSO reads the clock in user space without a syscall"]);
        t.add_row(vec![Cell::new("vdso_mapped"), Cell::new("FAIL").fg(Color::Red), Cell::new("0x7ffd12345000")]);
        t
    }

    #[test]
    fn unlimited_when_width_unknown() {
        let text = table(None).to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "CHECK        STATUS  DETAIL");
        assert!(lines[2].ends_with("without a syscall"));
        assert!(text.lines().all(|l| !l.ends_with(' ')));
    }

    #[test]
    fn wraps_only_prose_between_words() {
        let text = table(Some(40)).to_string();
        for line in text.lines() {
            assert!(cols(line) <= 40, "{line:?}");
            assert!(!line.ends_with(' '), "{line:?}");
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        for token in ["clocksource", "vdso_mapped", "0x7ffd12345000", "user", "syscall"] {
            assert!(words.contains(&token), "{token} split in\n{text}");
        }
        // Too narrow for anything: tokens stay whole, the table runs wider.
        let text = table(Some(10)).to_string();
        assert!(text.split_whitespace().any(|w| w == "0x7ffd12345000"), "{text}");
        assert!(text.split_whitespace().any(|w| w == "vdso_mapped"), "{text}");
    }

    #[test]
    fn prose_with_no_room_goes_under_its_row() {
        let mut t = Table::new(&["STATUS", "PATH", "CLASS", "DETAIL"], Some(60), false);
        t.wrap("DETAIL");
        let detail = "its code calls the fixed [vsyscall] page (1 site(s), first at 0x18c2): each call traps";
        t.add_row(["FAIL", "/opt/legacy/a_rather_long_program_name", "ELF64 x86_64", detail]);
        t.add_row(["OK", "/usr/bin/true", "ELF64 x86_64", ""]);
        let text = t.to_string();
        let lines: Vec<&str> = text.lines().collect();
        // DETAIL would get 12 columns: it has no column, its text is under the row.
        assert_eq!(lines[0], "STATUS  PATH                                    CLASS", "{text}");
        assert!(lines[2].starts_with("FAIL    /opt/legacy/") && lines[2].ends_with("ELF64 x86_64"), "{text}");
        assert!(lines[3].starts_with("        its code calls the fixed [vsyscall] page"), "{text}");
        assert_eq!(lines.last().unwrap(), &"OK      /usr/bin/true                           ELF64 x86_64", "{text}");
        assert!(lines.iter().all(|l| cols(l) <= 60 && !l.ends_with(' ')), "{text}");
        let under: String = lines[3..lines.len() - 1].iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        assert_eq!(under, detail);
        // With room, the same table keeps its DETAIL column.
        t.width = Some(120);
        assert!(t.to_string().lines().next().unwrap().ends_with("DETAIL"));
        // Unlimited (a pipe): never under.
        t.width = None;
        assert_eq!(t.to_string().lines().count(), 4);
    }

    #[test]
    fn a_row_whose_prose_has_a_word_too_long_for_its_column_has_it_under() {
        let mut t = Table::new(&["KEY", "NAME", "DECODED"], Some(60), false);
        t.wrap("DECODED");
        t.add_row(["3", "AT_PHDR", "in /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"]);
        t.add_row(["6", "AT_PAGESZ", "4096"]);
        let text = t.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "3    AT_PHDR", "{text}");
        assert_eq!(lines[3], "     in /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "{text}");
        assert_eq!(lines[4], "6    AT_PAGESZ  4096", "{text}");
        assert!(lines.iter().all(|l| cols(l) <= 60), "{text}");
    }

    #[test]
    fn a_number_keeps_its_unit() {
        assert_eq!(words("libc 27.1 ns (0.00), 8 KiB; 3 s."), ["libc", "27.1 ns", "(0.00),", "8 KiB;", "3 s."]);
        assert_eq!(wrap_words("vdso 27.1 ns (0.00)", 10), ["vdso", "27.1 ns", "(0.00)"]);
    }

    #[test]
    fn cells_are_escaped_and_coloured_only_when_asked() {
        let mut t = Table::new(&["NAME"], None, true);
        t.add_row(vec![Cell::new("a\x1b]0;x\x07\nb").fg(Color::Red)]);
        let text = t.to_string();
        assert!(text.contains("\x1b[31ma\\u{1b}]0;x\\u{7}\\nb\x1b[0m"), "{text:?}");
        assert_eq!(text.lines().count(), 3);
        let mut plain = Table::new(&["NAME"], None, false);
        plain.add_row([Cell::new("x").fg(Color::Red)]);
        assert!(!plain.to_string().contains('\x1b'));
    }
}
