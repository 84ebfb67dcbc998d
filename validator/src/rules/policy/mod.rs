//! Rule family: policy. These findings come from the waiver engine (`sink`) or, for
//! `offline-seal-partial`, from the engine once per run, not from a check over the graph; they are registered so `rules`, `explain` and SARIF describe them like any
//! other rule. Their explain texts are the markdown files beside this one.

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};

mod seal;
mod settings;
pub use seal::seal_findings;
pub use settings::settings_findings;

fn reported_by_sink(_: &Ctx) -> Vec<Finding> {
    Vec::new()
}

pub const WAIVER_EXPIRED: &str = "waiver-expired";
pub const WAIVER_UNUSED: &str = "waiver-unused";
pub const WAIVER_FORBIDDEN: &str = "waiver-forbidden";
pub const POLICY_FILE_MISSING: &str = "policy-file-missing";
pub const POLICY_ALLOWS_ANY: &str = "policy-allows-any";
pub const OFFLINE_SEAL_PARTIAL: &str = "offline-seal-partial";

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
    Rule {
        id: POLICY_FILE_MISSING,
        family: "policy",
        severity: Severity::Warning,
        summary: "no policy file was found: strict defaults apply (no chart repository or image registry allowed)",
        explain: include_str!("policy-file-missing.md"),
        scope: Scope::Objects,
        check: reported_by_sink,
    },
    Rule {
        id: POLICY_ALLOWS_ANY,
        family: "policy",
        severity: Severity::Warning,
        summary: "an allow-list of the policy holds \"*\": every chart repository or image registry is allowed",
        explain: include_str!("policy-allows-any.md"),
        scope: Scope::Objects,
        check: reported_by_sink,
    },
    Rule {
        id: OFFLINE_SEAL_PARTIAL,
        family: "policy",
        severity: Severity::Warning,
        summary:
            "the --offline seal is partial on this machine: Landlock does not confine the sealed tools' writes or TCP",
        explain: include_str!("offline-seal-partial.md"),
        scope: Scope::Objects,
        check: reported_by_sink,
    },
];
