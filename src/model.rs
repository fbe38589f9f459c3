//! Model types shared by several reports. A report struct itself lives beside
//! its command in `cmd/`; what more than one command says lives here.

use serde::Serialize;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// The fast path is at risk or lost for something that may not matter.
    Warn,
    /// The fast path is lost where it should not be.
    Fail,
}

impl Severity {
    /// Upper-case label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "INFO",
            Severity::Warn => "WARN",
            Severity::Fail => "FAIL",
        }
    }
}

/// A sentence an on-call engineer can act on, with the remediation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub message: String,
    /// What to do about it; `null` when there is nothing to do.
    pub hint: Option<String>,
}

impl Finding {
    /// A finding with a hint.
    pub fn new(severity: Severity, message: impl Into<String>, hint: Option<String>) -> Finding {
        Finding { severity, message: message.into(), hint }
    }
}

/// Serialize a u64 address as a `"0x..."` string (JSON doubles lose bits).
pub fn hex<S: serde::Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{value:#x}"))
}

/// [`hex`] for an optional address; `None` stays `null`.
pub fn hex_opt<S: serde::Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_str(&format!("{v:#x}")),
        None => s.serialize_none(),
    }
}
