//! Numbers and units worded for people, in the one number style of
//! DESIGN's Output section: thousands separators, scaled durations, rates,
//! binary sizes, shell-quoted command lines. A leaf: model, render and
//! error all word numbers through it, and it imports nothing of the crate.

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

/// The first `named` of `items` joined with commas, then `, and N more
/// (whole)` when there are more: a detail line stays bounded however many
/// processes a tree had (the whole list is trace's).
pub fn named_first(items: &[String], named: usize, whole: impl FnOnce() -> String) -> String {
    if items.len() <= named {
        return items.join(", ");
    }
    format!("{}, and {} more ({})", items[..named].join(", "), thousands((items.len() - named) as u64), whole())
}

/// A name others chose (a path's bytes, a symbol) as text every consumer
/// can carry — JSON, XML 1.0, a terminal — and that keeps two names apart:
/// a backslash is `\\`, a byte that is not UTF-8 `\xNN`, a line break or
/// tab `\n` `\r` `\t`, another C0 control or DEL `\xNN`, and a C1
/// control, an invisible or direction-changing mark or a character XML
/// cannot hold (U+FFFE, U+FFFF) `\u{NNNN}`. Every `\` it writes starts an
/// escape, so different names never read the same.
pub fn escaped_name(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
                c if unsafe_mark(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Bytes the kernel names something with (a comm, a path) as text, before
/// any printing: what is UTF-8 kept as it is (controls too: the renderers
/// escape them where they print), a byte that is not `\xNN`, so a name
/// that is not UTF-8 is neither lost nor taken for another that is
/// U+FFFD.
pub fn bytes_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// C1 controls, the invisible or direction-changing marks a terminal
/// must not get raw, and the noncharacters XML 1.0 refuses.
fn unsafe_mark(c: char) -> bool {
    terminal_hostile(c) || matches!(c, '\u{fffe}' | '\u{ffff}')
}

/// Controls (C0, DEL, C1) and the invisible or direction-changing marks
/// (LRM, RLM, ALM, the bidi embeddings, overrides and isolates, zero-width
/// and line separators, BOM) that must never reach a terminal raw.
pub fn terminal_hostile(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(human_size(8192), "8 KiB");
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(4097), "4 KiB");
        assert_eq!(human_size(151_344), "147.8 KiB");
        assert_eq!(human_size(1596 * 1024), "1.6 MiB");
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
    fn lists_name_the_first_and_count_the_rest() {
        let items: Vec<String> = (1..=7).map(|i| format!("p{i}")).collect();
        assert_eq!(named_first(&items[..5], 5, || unreachable!()), "p1, p2, p3, p4, p5");
        assert_eq!(named_first(&items, 5, || "7 in all".into()), "p1, p2, p3, p4, p5, and 2 more (7 in all)");
    }

    #[test]
    fn bytes_text_keeps_utf8_and_marks_the_rest() {
        assert_eq!(bytes_text(b"caf\xe9"), "caf\\xe9");
        assert_eq!(bytes_text("тестсер".as_bytes()), "тестсер");
        assert_eq!(bytes_text(&"тестсервер".as_bytes()[..15]), "тестсер\\xd0");
        assert_eq!(bytes_text(b"\x1b]0;X\x07"), "\x1b]0;X\x07", "controls are the renderers' to escape");
    }

    #[test]
    fn escaped_names_stay_apart() {
        assert_eq!(escaped_name(b"/usr/bin/ls"), "/usr/bin/ls");
        assert_eq!(escaped_name(b"a\nb"), "a\\nb");
        assert_eq!(escaped_name(b"a b"), "a b");
        assert_eq!(escaped_name(b"a\xffb"), "a\\xffb");
        assert_eq!(escaped_name(b"a\xfeb"), "a\\xfeb");
        assert_eq!(escaped_name("x\u{ffff}\u{202e}\u{9b}\x1b".as_bytes()), "x\\u{ffff}\\u{202e}\\u{009b}\\x1b");
        // A name that spells an escape is not the name it spells.
        assert_ne!(escaped_name(b"a\\nb"), escaped_name(b"a\nb"));
        assert_ne!(escaped_name(b"a\\xffb"), escaped_name(b"a\xffb"));
        assert_eq!(escaped_name("héllo µs".as_bytes()), "héllo µs");
    }
}
