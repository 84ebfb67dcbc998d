//! Rule family: policy. These findings come from the waiver engine (`sink`), not from a check
//! over the graph; they are registered so `rules`, `explain` and SARIF describe them like any
//! other rule.

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
        explain: "## What it does\nReports every waiver whose `expires` date is in the past. An expired waiver no longer \
waives anything: the finding it covered is reported again.\n\n## Why it matters\nWaivers are promises to fix something by a \
date. Letting them lapse silently turns a temporary exception into a permanent hole in the gate.\n\n## How to fix\nFix the \
underlying finding and delete the waiver, or, if the exception is still justified, extend `expires` with a new `reason` \
reviewed like any other change.\n\n## Example\n```yaml\nwaivers:\n  - rule: image-pinned\n    target: {environment: default, kind: Job, namespace: openbao, name: openbao-pki-provision}\n    reason: upstream image digest not published yet (TICKET-123)\n    expires: 2026-12-31\n```\n",
        scope: Scope::Objects,
        check: reported_by_sink,
    },
    Rule {
        id: WAIVER_UNUSED,
        family: "policy",
        severity: Severity::Warning,
        summary: "a waiver matched no finding",
        explain: "## What it does\nWarns about waivers that matched no finding in this run.\n\n## Why it matters\nA waiver \
that waives nothing is either stale (the problem was fixed) or mistyped (it does not cover what its author thinks, and the \
finding it was meant for fails the gate, or will when it comes back).\n\n## How to fix\nDelete the waiver, or correct its \
`rule` and `target` (environment, release as `namespace/name`, kind, namespace, name).\n\n## Example\nA waiver with \
`target: {release: nvcf/request-router}` never matches a finding about release `nvcf/nvcf-pki`.\n",
        scope: Scope::Objects,
        check: reported_by_sink,
    },
    Rule {
        id: WAIVER_FORBIDDEN,
        family: "policy",
        severity: Severity::Error,
        summary: "a waiver or severity override targets a rule that may never be waived",
        explain: "## What it does\nRefuses waivers for rules listed in the policy's `settings.neverWaive` (by default the \
insecure-transport family: `insecure-flag`, `plaintext-endpoint`). The waiver is ignored and this error is reported.\n\n## \
Why it matters\nTurning TLS or certificate verification off is never a local trade-off: it exposes every worker and tenant. \
An organisation can make such rules unwaivable so that no pull request can quietly opt out.\n\n## How to fix\nRemove the \
waiver and fix the insecure setting. If your organisation really needs an exception, change `settings.neverWaive` in a \
reviewed policy change.\n\n## Example\n```yaml\nwaivers:\n  - rule: insecure-flag   # refused: insecure-flag may never be waived\n    target: {environment: default}\n    reason: testing\n    expires: 2027-01-01\n```\n",
        scope: Scope::Objects,
        check: reported_by_sink,
    },
];
