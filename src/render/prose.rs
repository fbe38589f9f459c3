//! Tests' helper for issue 40 (model/ holds no sentence): the string
//! literals of a model file's source, for its `*_holds_no_prose` test.

/// The string literals of Rust source (plain, byte and raw), comments
/// and char literals skipped.
pub(crate) fn string_literals(src: &str) -> Vec<String> {
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

/// The words of a model file's code (its tests aside): its string
/// literals with a space in them.
pub(crate) fn prose(src: &str) -> Vec<String> {
    let code = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
    string_literals(code).into_iter().filter(|l| l.contains(' ')).collect()
}

#[test]
fn the_scanner_finds_literals_not_comments_or_chars() {
    let sample = "// \"a comment\"\nlet a = 'x'; let b: &'static str = \"two words\"; /* \"no\" */ r#\"raw \"q\"\"#;";
    assert_eq!(string_literals(sample), ["two words", "raw \"q\""]);
    assert_eq!(
        prose("let a = \"one\"; let b = \"two words\";\n#[cfg(test)]\nmod tests { \"in tests\" }"),
        ["two words"]
    );
}

/// [`prose`], by the name the vDSO subject's tests call it.
pub(crate) fn of(src: &str) -> Vec<String> {
    prose(src)
}

/// Every model file holds no sentence (issue 40): its words live in
/// render/, one file per subject.
#[test]
fn model_holds_no_prose() {
    // The kernel matrix runs these unit tests in a guest without the
    // checkout: this one reads it.
    if !std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").is_file() {
        return eprintln!("SKIP: needs the checkout (runs on the build host)");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
    let mut files = 0;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        files += 1;
        found.extend(prose(code).into_iter().map(|p| format!("model/{name}: {p:?}")));
    }
    assert!(files > 20, "{files} model files");
    assert!(found.is_empty(), "sentences in model/:\n{}", found.join("\n"));
}
