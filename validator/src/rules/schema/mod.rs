//! The schema family: what the API server would refuse, refused before apply.

mod schema_valid;
#[cfg(test)]
mod tests;

use super::{Rule, Scope};
use crate::finding::Severity;

pub static RULES: &[Rule] = &[Rule {
    id: "schema-valid",
    family: "schema",
    severity: Severity::Error,
    summary: "an object violates the Kubernetes OpenAPI schema or the CRD schema of its kind (unknown field, type, \
              required, enum, pattern), is a built-in kind in an apiVersion that Kubernetes version does not serve \
              (apps/v1beta2), or has no schema where the policy requires one",
    explain: include_str!("schema-valid.md"),
    scope: Scope::Objects,
    check: schema_valid::check,
}];
