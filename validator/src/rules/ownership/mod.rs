//! Rule family: ownership. Every release is declared once, every `needs` entry names a release
//! of the same state file, every object has one writer, and every TLS Secret has one writer.
//!
//! One file per rule (its check and unit tests) with its explain text beside it as markdown; the
//! helpers two rules share live here.

mod needs_resolvable;
mod object_one_owner;
mod release_one_owner;
mod tls_secret_one_owner;

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::graph::Object;
use crate::stack::Release;
use serde_json::Value;
use std::collections::BTreeMap;

pub static RULES: &[Rule] = &[
    Rule {
        id: RELEASE_ONE_OWNER,
        family: "ownership",
        severity: Severity::Error,
        summary: "a release (namespace/name) is declared more than once across all state files",
        explain: include_str!("release-one-owner.md"),
        scope: Scope::State,
        check: release_one_owner::release_one_owner,
    },
    Rule {
        id: NEEDS_RESOLVABLE,
        family: "ownership",
        severity: Severity::Error,
        summary: "a `needs` entry names no release of the same state file",
        explain: include_str!("needs-resolvable.md"),
        scope: Scope::State,
        check: needs_resolvable::needs_resolvable,
    },
    Rule {
        id: OBJECT_ONE_OWNER,
        family: "ownership",
        severity: Severity::Error,
        summary: "two releases (or one twice) render the same group/kind/namespace/name",
        explain: include_str!("object-one-owner.md"),
        scope: Scope::Objects,
        check: object_one_owner::object_one_owner,
    },
    Rule {
        id: TLS_SECRET_ONE_OWNER,
        family: "ownership",
        severity: Severity::Error,
        summary: "a TLS Secret has two writers (Certificates, a rendered Secret, a pre-created Secret)",
        explain: include_str!("tls-secret-one-owner.md"),
        scope: Scope::Objects,
        check: tls_secret_one_owner::tls_secret_one_owner,
    },
];

const RELEASE_ONE_OWNER: &str = "release-one-owner";
const NEEDS_RESOLVABLE: &str = "needs-resolvable";
const OBJECT_ONE_OWNER: &str = "object-one-owner";
const TLS_SECRET_ONE_OWNER: &str = "tls-secret-one-owner";

fn at(r: &Release) -> String {
    match r.line {
        Some(l) => format!("{}:{l}", r.file),
        None => r.file.clone(),
    }
}

/// `release nvcf/x (file:line)` for messages.
fn writer(o: &Object) -> String {
    let rel = match &o.prov.release {
        Some(r) => format!("release {r}"),
        None => "the input".to_string(),
    };
    match (&o.prov.file, o.prov.line) {
        (Some(f), Some(l)) => format!("{rel} ({f}:{l})"),
        (Some(f), None) => format!("{rel} ({f})"),
        _ => rel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Provenance;
    use crate::testkit::*;

    pub(super) fn rule(id: &str) -> &'static Rule {
        RULES.iter().find(|r| r.id == id).unwrap()
    }

    #[test]
    fn fixtures_fire_and_stay_silent() {
        for run in check_fixtures("ownership", RULES, Silent::Family) {
            insta::assert_json_snapshot!(run.stem, run.findings);
        }
    }

    /// How a writer is named: its release (or the input) and as much of its place as is known.
    #[test]
    fn writers_are_named_with_what_is_known_of_their_place() {
        let mut o = obj("{apiVersion: v1, kind: Secret, metadata: {name: s}}", "nvcf/r", false);
        assert_eq!(writer(&o), "release nvcf/r (charts/r/templates/x.yaml:1)");
        o.prov.line = None;
        assert_eq!(writer(&o), "release nvcf/r (charts/r/templates/x.yaml)");
        o.prov.file = None;
        assert_eq!(writer(&o), "release nvcf/r");
        o.prov.release = None;
        assert_eq!(writer(&o), "the input");
    }

    pub(super) fn obj(yaml: &str, release: &str, external: bool) -> crate::graph::Object {
        let v = crate::yaml::value(yaml).unwrap();
        let prov = Provenance {
            environment: "default".into(),
            release: (!external).then(|| release.to_string()),
            file: Some(if external {
                "validator-policy.yaml".into()
            } else {
                format!("charts/{}/templates/x.yaml", release.rsplit('/').next().unwrap())
            }),
            line: Some(1),
            external,
            ..Provenance::default()
        };
        crate::graph::Object::from_value(v, Some("nvcf"), prov).unwrap()
    }
}
