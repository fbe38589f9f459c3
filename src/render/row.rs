//! A check row's words, at output time: its fact worded by the subject's
//! file in render/ (the [`Worded`] impls), or the words it was given; and
//! its JSON (DESIGN keys: name, kind, status, detail, hint, waived,
//! raised, rate).

use crate::model::row::{Check, Said, Worded};
use serde::Serialize;
use std::borrow::Cow;

impl Check {
    /// The row's detail and remediation, worded now.
    pub fn words(&self) -> (Cow<'_, str>, Option<Cow<'_, str>>) {
        match &self.said {
            Said::Words { detail, hint } => (Cow::Borrowed(detail.as_str()), hint.as_deref().map(Cow::Borrowed)),
            Said::Fact(f) => {
                let (d, h) = f.words();
                (Cow::Owned(d), h.map(Cow::Owned))
            }
        }
    }

    /// The row's detail.
    pub fn detail(&self) -> Cow<'_, str> {
        self.words().0
    }

    /// The row's remediation (`None`: nothing to do).
    pub fn hint(&self) -> Option<Cow<'_, str>> {
        self.words().1
    }

    /// Its detail and remediation, owned.
    pub fn into_words(self) -> (String, Option<String>) {
        let (d, h) = self.words();
        (d.into_owned(), h.map(Cow::into_owned))
    }

    /// The same row with its words fixed now (`edit`: what to change of them).
    pub fn reworded(self, edit: impl FnOnce(&mut String, &mut Option<String>)) -> Check {
        let (d, h) = self.words();
        let (mut detail, mut hint) = (d.into_owned(), h.map(Cow::into_owned));
        edit(&mut detail, &mut hint);
        Check { said: Said::Words { detail, hint }, ..self }
    }
}

/// A fact said as another's words with a clause after them (`observe`'s
/// notes on a binary's or a random route's row).
impl Worded for Said {
    fn words(&self) -> (String, Option<String>) {
        match self {
            Said::Words { detail, hint } => (detail.clone(), hint.clone()),
            Said::Fact(f) => f.words(),
        }
    }
}

impl Serialize for Check {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            name: &'a str,
            kind: crate::model::kind::Kind,
            status: crate::model::Status,
            detail: &'a str,
            hint: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            waived: Option<&'a crate::model::gate::Waiver>,
            #[serde(skip_serializing_if = "Option::is_none")]
            raised: Option<&'a crate::model::gate::Raise>,
            #[serde(skip_serializing_if = "Option::is_none", serialize_with = "rate_opt")]
            rate: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            window_ns: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            calls: Option<&'a [crate::model::row::CallSeen]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            left_out: Option<&'a [i32]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            fail_over: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            groups: Option<&'a crate::model::group::Groups>,
            #[serde(skip_serializing_if = "Option::is_none")]
            costs: Option<&'a crate::model::row::Costs>,
            #[serde(skip_serializing_if = "Option::is_none")]
            findings: Option<&'a [crate::model::binary::BinaryFinding]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            random: Option<&'a crate::model::row::RandomFacts>,
            #[serde(skip_serializing_if = "Option::is_none")]
            time_namespace: Option<&'a crate::model::timens::TimeNs>,
            #[serde(skip_serializing_if = "Option::is_none")]
            next: Option<Vec<String>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            exe: Option<&'a crate::model::row::ExeRun>,
            #[serde(skip_serializing_if = "Option::is_none")]
            seccomp: Option<crate::render::seccomp::SeccompWire>,
        }
        let (detail, hint) = self.words();
        Wire {
            name: &self.name,
            kind: self.kind,
            status: self.status,
            detail: &detail,
            hint: hint.as_deref(),
            waived: self.waived.as_ref(),
            raised: self.raised.as_ref(),
            rate: self.rate,
            window_ns: self.observed.as_ref().map(|o| o.window_ns),
            calls: self.observed.as_ref().map(|o| o.calls.as_slice()),
            left_out: self.observed.as_ref().and_then(|o| o.fail_over.map(|_| o.left_out.as_slice())),
            fail_over: self.observed.as_ref().and_then(|o| o.fail_over),
            groups: self.observed.as_ref().and_then(|o| o.groups.as_ref()),
            costs: self.costs.as_ref(),
            findings: self.findings.as_deref(),
            random: self.random.as_ref(),
            time_namespace: self.time_namespace.as_ref(),
            next: match &self.said {
                Said::Fact(f) => f.next(),
                Said::Words { .. } => None,
            },
            exe: self.exe.as_ref(),
            seccomp: self.seccomp.as_ref().map(crate::render::seccomp::SeccompWire::of),
        }
        .serialize(s)
    }
}

/// [`crate::model::rate`] for an optional rate.
fn rate_opt<S: serde::Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => crate::model::rate(v, s),
        None => s.serialize_none(),
    }
}
