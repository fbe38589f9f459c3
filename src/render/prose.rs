//! Issue 40's test helper: the prose a model file holds. model/ holds no
//! sentence (render/ words its typed facts), so every string literal of a
//! model file's code, its tests aside, is a name, never words: none has a
//! space. render/binary.rs and render/vdso.rs test their model files with it.

/// The string literals of `src`'s code (its `mod tests` aside) that have a
/// space: words, which belong in render/.
pub fn of(src: &str) -> Vec<String> {
    let code = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
    string_literals(code).into_iter().filter(|l| l.contains(' ')).collect()
}

/// The string literals of Rust source (plain, byte and raw), comments
/// and char literals skipped.
pub fn string_literals(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            // A char literal ('x', '\n', '"'), not a lifetime ('a).
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
            b'r' if (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
                && matches!(b.get(i + 1), Some(b'"' | b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let open = i + 1 + hashes;
                if b.get(open) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let body = &src[open + 1..];
                let end = body.find(&close).unwrap_or(body.len());
                out.push(body[..end].to_string());
                i = open + 1 + end + close.len();
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                out.push(src[start..i.min(b.len())].to_string());
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

#[test]
fn the_scanner_finds_what_it_should() {
    let sample = "// \"a comment\"\nlet a = 'x'; let b: &'static str = \"two words\"; /* \"no\" */ r#\"raw \"q\"\"#;";
    assert_eq!(string_literals(sample), ["two words", "raw \"q\""]);
    assert_eq!(of("let a = \"a b\";\n#[cfg(test)]\nmod tests { \"c d\" }"), ["a b"]);
}
