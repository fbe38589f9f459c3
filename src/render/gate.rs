//! The gate's words, once: what a selection or a baseline did to a finding
//! (table notes, JUnit messages) and what is wrong in an ignore file.

use crate::model::gate::{IgnoreError, Raise, Waiver};

/// The note a waived or raised finding carries after its detail:
/// `ignored: vendor binary, OPS-12 (.vdsoctlignore:3)`.
pub fn note(waived: Option<&Waiver>, raised: Option<Raise>) -> Option<String> {
    if let Some(w) = waived {
        return Some(match w {
            Waiver::Ignored { reason, file, line } => format!("ignored: {reason} ({file}:{line})"),
            Waiver::Allowed { rule } => format!("allowed: --allow {rule}"),
            Waiver::Baselined { file } => format!("in the baseline ({file}): not new"),
        });
    }
    raised.map(|r| {
        match r {
            Raise::FailOn => "fails: --fail-on selects this kind",
            Raise::Strict => "fails: a WARN, and --strict fails on WARN",
            Raise::NewSinceBaseline => "fails: new since the baseline",
        }
        .to_string()
    })
}

/// `detail — note`, or the detail alone.
pub fn with_note(detail: &str, waived: Option<&Waiver>, raised: Option<Raise>) -> String {
    match note(waived, raised) {
        Some(n) => format!("{n} — {detail}"),
        None => detail.to_string(),
    }
}

/// An ignore file's error, one line: what, where, and what to do.
pub fn ignore_error(file: &str, e: &IgnoreError) -> String {
    match e {
        IgnoreError::UnknownKind { line, kind } => {
            format!("{file}:{line}: {kind} is no kind of finding — doc/FINDINGS.md lists them")
        }
        IgnoreError::NoReason { line } => {
            format!("{file}:{line}: an entry needs a reason after the kind (`KIND[=GLOB] [expires=YYYY-MM-DD] REASON`)")
        }
        IgnoreError::BadDate { line, text } => {
            format!("{file}:{line}: {text} is no date — write expires=YYYY-MM-DD")
        }
        IgnoreError::Expired { line, rule, date: (y, m, d) } => format!(
            "{file}:{line}: the entry for {rule} expired on {y:04}-{m:02}-{d:02} — fix what it hides, or renew it with a new date and reason"
        ),
    }
}

/// The verdict line's count of waived findings, by why:
/// ` (2 ignored, 1 allowed, 3 in the baseline)`, or nothing.
pub fn waived_text(w: &crate::model::check::Waivers) -> String {
    let parts: Vec<String> = [(w.ignored, "ignored"), (w.allowed, "allowed"), (w.baselined, "in the baseline")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{} {what}", crate::words::thousands(*n as u64)))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}
