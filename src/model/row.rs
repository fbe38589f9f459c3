//! One row of an audit: a finding of a kind about something named, its
//! status after the gate, its words and remediation. Its own module so
//! every judge in model/ can make one without importing the report
//! (model::check) that gathers them.

use crate::model::gate::{Raise, Waiver};
use crate::model::kind::Kind;
use crate::model::Status;
use serde::Serialize;

/// One check's result (DESIGN keys: name, kind, status, detail, hint,
/// waived, raised).
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    /// What it found, by its stable id (doc/FINDINGS.md).
    pub kind: Kind,
    pub status: Status,
    pub detail: String,
    /// The remediation; `null` when there is nothing to do.
    pub hint: Option<String>,
    /// The selection that made a WARN or FAIL INFO (`null`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waived: Option<Waiver>,
    /// The selection that made it FAIL (`null`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raised: Option<Raise>,
    /// What the row is about: the host, or the process `-p` audits (its
    /// Prometheus series carry the pid).
    #[serde(skip)]
    pub about: About,
    /// Calls a second, where the finding is a rate (an observation's
    /// busiest process); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "rate_opt")]
    pub rate: Option<f64>,
}

/// What a row is about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum About {
    /// The host (vdsoctl's own process and kernel), an image, a command.
    #[default]
    Host,
    /// The process `check -p` audits.
    Process,
}

/// [`crate::model::rate`] for an optional rate.
fn rate_opt<S: serde::Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => crate::model::rate(v, s),
        None => s.serialize_none(),
    }
}

impl Check {
    /// A check from a finding of the policy: info passes, warn and fail stay.
    pub(crate) fn of(name: String, f: crate::model::Finding) -> Check {
        let status = match f.severity {
            Status::Info => Status::Ok,
            s => s,
        };
        Check::new(f.kind, name, status, f.message, f.hint.as_deref())
    }

    /// A check of `kind` with a hint that is ours.
    pub(crate) fn new(
        kind: Kind,
        name: impl Into<String>,
        status: Status,
        detail: impl Into<String>,
        hint: Option<&str>,
    ) -> Check {
        Check {
            name: name.into(),
            kind,
            status,
            detail: detail.into(),
            hint: hint.map(str::to_string),
            waived: None,
            raised: None,
            about: About::Host,
            rate: None,
        }
    }

    /// The same check, about the audited process.
    pub fn about_process(self) -> Check {
        Check { about: About::Process, ..self }
    }

    /// The same check, about `rate` calls a second.
    pub fn at_rate(self, rate: f64) -> Check {
        Check { rate: Some(rate), ..self }
    }
}
