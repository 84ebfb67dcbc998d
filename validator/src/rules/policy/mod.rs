//! Rule family: policy. These findings come from the waiver engine (`sink`), not from a check
//! over the graph; they are registered so `rules`, `explain` and SARIF describe them like any
//! other rule. Their explain texts are the markdown files beside this one.

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};

fn reported_by_sink(_: &Ctx) -> Vec<Finding> {
    Vec::new()
}

pub const WAIVER_EXPIRED: &str = "waiver-expired";
pub const WAIVER_UNUSED: &str = "waiver-unused";
pub const WAIVER_FORBIDDEN: &str = "waiver-forbidden";

pub static RULES: &[Rule] = &[
    Rule {
        id: WAIVER_EXPIRED,
        family: "policy",
        severity: Severity::Error,
        summary: "a waiver in the policy file has passed its expiry date",
        explain: include_str!("waiver-expired.md"),
        scope: Scope::Objects,
        check: reported_by_sink,
    },
    Rule {
        id: WAIVER_UNUSED,
        family: "policy",
        severity: Severity::Warning,
        summary: "a waiver matched no finding",
        explain: include_str!("waiver-unused.md"),
        scope: Scope::Objects,
        check: reported_by_sink,
    },
    Rule {
        id: WAIVER_FORBIDDEN,
        family: "policy",
        severity: Severity::Error,
        summary: "a waiver or severity override targets a rule that may never be waived",
        explain: include_str!("waiver-forbidden.md"),
        scope: Scope::Objects,
        check: reported_by_sink,
    },
];
