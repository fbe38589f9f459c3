//! `trace --stacks`' drawings: folded stacks as text (the format
//! flamegraph.pl and inferno read) and the SVG flame graph, drawn by
//! inferno's port of flamegraph.pl from the same folded lines.

use crate::error::{Error, Result};

/// Folded lines, `stack count` each, ending in a newline.
pub fn folded_text(lines: &[(String, u64)]) -> String {
    lines.iter().map(|(stack, n)| format!("{stack} {n}\n")).collect()
}

/// What the SVG says when no stack was counted (inferno refuses empty input).
const EMPTY: &str = "<?xml version=\"1.0\" standalone=\"no\"?>\n\
<svg version=\"1.1\" width=\"1200\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\">\
<text x=\"600\" y=\"36\" text-anchor=\"middle\" font-family=\"Verdana\" font-size=\"17\">\
no clock syscalls were counted: no stacks</text></svg>\n";

/// `text` with the characters XML 1.0 cannot hold (C0 controls but tab
/// and line breaks, U+FFFE, U+FFFF) escaped as `\u{NNNN}`: the frames come
/// escaped from `model::stacks`, the title is ours but names a command.
fn xml_chars(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:04x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// An SVG flame graph of `lines` (escaped by `model::stacks::fold_safe`,
/// so no frame reads as a count), titled `title`.
pub fn svg(lines: &[(String, u64)], title: &str) -> Result<Vec<u8>> {
    if lines.is_empty() {
        return Ok(EMPTY.as_bytes().to_vec());
    }
    let text: Vec<String> = lines.iter().map(|(stack, n)| format!("{stack} {n}")).collect();
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = xml_chars(title);
    opts.count_name = "calls".into();
    opts.subtitle = Some("clock syscalls by user stack (vdsoctl trace --stacks)".into());
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, text.iter().map(String::as_str), &mut out)
        .map_err(|e| Error::malformed("flame graph", e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_svg_holds_every_frame_escaped() {
        let lines = [("app;main;<inner>".to_string(), 3), ("app;main;other".to_string(), 1)];
        let svg = String::from_utf8(svg(&lines, "t").unwrap()).unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains("</svg>"));
        assert!(svg.contains("&lt;inner&gt;") && !svg.contains("<inner>"), "frame names are XML-escaped");
        assert!(svg.contains(">main<") && svg.contains("other"));
        assert_eq!(folded_text(&lines), "app;main;<inner> 3\napp;main;other 1\n");
        // A title naming a command with what XML refuses, and the lost calls' line.
        let lines = [("app;main".to_string(), 1), (crate::model::stacks::LOST_STACK.to_string(), 3)];
        let svg = String::from_utf8(super::svg(&lines, "x\u{ffff}\u{1}").unwrap()).unwrap();
        assert!(!svg.contains('\u{ffff}') && !svg.contains('\u{1}') && svg.contains("x\\u{ffff}\\u{0001}"));
        assert!(svg.contains("[stack not kept] (3 calls, 75.00%)"), "{svg}");
        let empty = String::from_utf8(super::svg(&[], "t").unwrap()).unwrap();
        assert!(empty.contains("<svg") && empty.contains("no clock syscalls were counted"));
    }
}
