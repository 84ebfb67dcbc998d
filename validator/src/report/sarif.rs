//! `--format sarif`: SARIF 2.1.0 for code-scanning uploads. One rule entry per registered rule
//! with its help text; results point at the template file and line.
//!
//! What GitHub code scanning and `sarif-multitool validate` require, and how it is met:
//! - artifact URIs relative to `originalUriBaseIds["%SRCROOT%"]` (the repository root),
//!   percent-encoded; `file://` URIs for files outside it; no physical location for stdin;
//! - at most [`MAX_RESULTS`] results per run: the most severe are kept, the rest counted in a
//!   tool notification and in the run's properties;
//! - stable `partialFingerprints`, so an alert keeps its identity across runs;
//! - `executionSuccessful: false` with the cause as an error notification when the run could
//!   not validate (exit 2), or when an environment could not be rendered;
//! - no empty `locations` arrays and no zero lines (strict consumers reject them).

use super::uri::{Artifact, SRCROOT};
use super::Context;
use crate::finding::{Finding, Severity};
use crate::report::Report;
use crate::rules;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// GitHub code scanning accepts at most 25,000 results per run.
pub const MAX_RESULTS: usize = 25_000;

/// Where to learn about the tool (SARIF `informationUri`, an absolute URI).
pub const INFORMATION_URI: &str = "https://docs.nvidia.com/cloud-functions/";

/// The key of our fingerprint in `partialFingerprints` (versioned: a change of recipe is a new key).
pub const FINGERPRINT_KEY: &str = "nvcfFinding/v1";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// Which findings become results: all of them up to [`MAX_RESULTS`], else the most severe
/// (unwaived errors, warnings, notes, then waived findings), in report order. Returns the
/// indices kept and how many were left out.
pub fn kept(report: &Report) -> (Vec<usize>, usize) {
    let n = report.findings.len();
    if n <= MAX_RESULTS {
        return ((0..n).collect(), 0);
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by_key(|&i| {
        let f = &report.findings[i];
        (f.waived.is_some(), std::cmp::Reverse(f.sev()), i)
    });
    idx.truncate(MAX_RESULTS);
    idx.sort_unstable();
    (idx, n - MAX_RESULTS)
}

/// How many findings a SARIF report leaves out (above [`MAX_RESULTS`]).
pub fn omitted(report: &Report) -> usize {
    report.findings.len().saturating_sub(MAX_RESULTS)
}

/// What identifies a finding across runs: rule, environment, release, object and file (not the
/// line: unrelated edits move lines; not the message: wording may improve).
fn identity(f: &Finding) -> String {
    let obj = f
        .object
        .as_ref()
        .map(|o| {
            format!(
                "{}|{}|{}|{}",
                o.api_version,
                o.kind,
                o.namespace.as_deref().unwrap_or(""),
                o.name
            )
        })
        .unwrap_or_default();
    let file = f.source.as_ref().map(|s| s.file.trim_start_matches("./")).unwrap_or("");
    [
        f.rule,
        f.environment.as_deref().unwrap_or(""),
        f.release.as_deref().unwrap_or(""),
        &obj,
        file,
    ]
    .join("\0")
}

/// One fingerprint per finding: the identity plus its occurrence among findings with the same
/// identity (two containers of one Deployment with the same defect), in report order.
pub fn fingerprints(report: &Report) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    report
        .findings
        .iter()
        .map(|f| {
            let id = identity(f);
            let n = seen.entry(id.clone()).or_insert(0);
            *n += 1;
            hex::encode(Sha256::digest(format!("{id}\0{n}").as_bytes()))
        })
        .collect()
}

/// A SARIF physical location for a source reference: a URI relative to `%SRCROOT%`, a
/// `file://` URI outside it, none for standard input.
fn physical(ctx: &Context, src: &crate::finding::SourceRef) -> Option<Value> {
    let artifact = match ctx.paths.artifact(&src.file)? {
        Artifact::Relative(uri) => json!({"uri": uri, "uriBaseId": SRCROOT}),
        Artifact::Absolute(uri) => json!({"uri": uri}),
    };
    let mut phys = json!({"artifactLocation": artifact});
    if let Some(l) = src.line.filter(|l| *l >= 1) {
        phys["region"] = json!({"startLine": l});
    }
    Some(phys)
}

pub fn value(report: &Report, ctx: &Context) -> Value {
    let registry = rules::registry();
    let rules_json: Vec<Value> = registry
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": r.id.split('-').map(|w| { let mut c = w.chars(); c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default() }).collect::<String>(),
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.summary},
                "help": {"text": r.explain, "markdown": r.explain},
                "defaultConfiguration": {"level": level(r.severity)},
                "properties": {"tags": [r.family]},
            })
        })
        .collect();
    let prints = fingerprints(report);
    let (kept, left_out) = kept(report);
    let results: Vec<Value> = kept
        .iter()
        .map(|&i| {
            let f = &report.findings[i];
            let mut res = json!({
                "ruleId": f.rule,
                "level": level(f.sev()),
                "message": {"text": f.message},
                "partialFingerprints": {FINGERPRINT_KEY: prints[i]},
                "properties": {
                    "environment": f.environment, "release": f.release, "object": f.object,
                    "help": super::help(f),
                },
            });
            if let Some(i) = registry.iter().position(|r| r.id == f.rule) {
                res["ruleIndex"] = json!(i);
            }
            let mut loc = json!({});
            if let Some(phys) = f.source.as_ref().and_then(|src| physical(ctx, src)) {
                loc["physicalLocation"] = phys;
            }
            if let Some(o) = super::object_label(f) {
                loc["logicalLocations"] = json!([{"name": o, "kind": "resource"}]);
            }
            if loc.as_object().is_some_and(|o| !o.is_empty()) {
                res["locations"] = json!([loc]);
            }
            if !f.related.is_empty() {
                let related: Vec<Value> = f
                    .related
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let mut loc = json!({"id": i + 1, "message": {"text": r.message}});
                        if let Some(phys) = r.source.as_ref().and_then(|src| physical(ctx, src)) {
                            loc["physicalLocation"] = phys;
                        }
                        loc
                    })
                    .collect();
                res["relatedLocations"] = json!(related);
            }
            if let Some(reason) = &f.waived {
                res["suppressions"] = json!([{"kind": "external", "justification": reason}]);
            }
            res
        })
        .collect();
    let mut notifications: Vec<Value> = Vec::new();
    if let Some(cause) = &ctx.failure {
        notifications.push(json!({
            "level": "error",
            "message": {"text": format!("nvcf-validate could not validate (exit code 2): {cause}")},
            "descriptor": {"id": "could-not-validate"},
        }));
    }
    // A render failure means part of the stack was not checked.
    for e in &report.environments {
        if let Some(err) = &e.render_error {
            notifications.push(json!({
                "level": "error",
                "message": {"text": format!("environment {}: helmfile could not load or render it: {err}", e.name)},
            }));
        }
    }
    for e in &report.environments {
        for r in e.releases.iter().filter(|r| r.missing()) {
            notifications.push(json!({
                "level": "note",
                "message": {"text": format!("environment {}: release {}/{} not rendered: {}", e.name, r.namespace, r.name, r.reason.as_deref().unwrap_or("-"))},
            }));
        }
    }
    if left_out > 0 {
        notifications.push(json!({
            "level": "warning",
            "message": {"text": format!(
                "{left_out} of {} findings left out of this run: GitHub code scanning accepts at most {MAX_RESULTS} results per run; the most severe are kept, the --format json report has all",
                report.findings.len()
            )},
            "descriptor": {"id": "results-truncated"},
        }));
    }
    let successful = ctx.failure.is_none() && report.environments.iter().all(|e| e.render_error.is_none());
    let mut invocation = json!({"executionSuccessful": successful});
    if !notifications.is_empty() {
        invocation["toolExecutionNotifications"] = json!(notifications);
    }
    let c = report.counts();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "nvcf-validate",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": INFORMATION_URI,
                "rules": rules_json,
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": ctx.paths.root_uri()}},
            "invocations": [invocation],
            "results": results,
            "properties": {
                "summary": super::summary_line(report),
                "errors": c.errors, "warnings": c.warnings, "waived": c.waived,
                "findings": report.findings.len(),
                "omittedResults": left_out,
            },
        }],
    })
}

pub fn render(report: &Report, ctx: &Context) -> String {
    let mut s = serde_json::to_string_pretty(&value(report, ctx)).expect("sarif serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Finding, ObjectRef, SourceRef};

    fn finding(i: usize, sev: Severity) -> Finding {
        let mut f = Finding::new("image-pinned", format!("container {i}")).with_severity(sev);
        f.environment = Some("default".into());
        f.object = Some(ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("nvcf".into()),
            name: format!("d{}", i % 7),
        });
        f.source = Some(SourceRef {
            file: "charts/app/templates/deployment.yaml".into(),
            line: Some(3),
        });
        f
    }

    fn ctx() -> Context {
        Context::new(std::path::Path::new("."), None)
    }

    #[test]
    fn results_are_capped_at_githubs_limit_keeping_the_most_severe() {
        let mut findings: Vec<Finding> = (0..MAX_RESULTS + 10).map(|i| finding(i, Severity::Warning)).collect();
        findings[MAX_RESULTS + 3] = finding(MAX_RESULTS + 3, Severity::Error);
        let report = Report {
            environments: Vec::new(),
            findings,
        };
        let v = value(&report, &ctx());
        let run = &v["runs"][0];
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), MAX_RESULTS);
        assert!(results.iter().any(|r| r["level"] == "error"), "the error must be kept");
        assert_eq!(run["properties"]["omittedResults"], 10);
        let notes = run["invocations"][0]["toolExecutionNotifications"].as_array().unwrap();
        assert!(notes.iter().any(|n| n["message"]["text"]
            .as_str()
            .unwrap()
            .starts_with("10 of 25010 findings left out")));
    }

    #[test]
    fn fingerprints_are_stable_and_distinct() {
        let report = Report {
            environments: Vec::new(),
            findings: vec![
                finding(0, Severity::Error),
                finding(7, Severity::Error),
                finding(1, Severity::Error),
            ],
        };
        let a = fingerprints(&report);
        // 0 and 7 share an identity (same object d0): told apart by occurrence.
        assert_ne!(a[0], a[1]);
        assert_ne!(a[0], a[2]);
        // The line and the message do not change a fingerprint.
        let mut moved = report.clone();
        moved.findings[2].source.as_mut().unwrap().line = Some(40);
        moved.findings[2].message = "reworded".into();
        assert_eq!(fingerprints(&moved), a);
        // The environment does.
        moved.findings[2].environment = Some("prod".into());
        assert_ne!(fingerprints(&moved)[2], a[2]);
    }

    #[test]
    fn a_run_that_could_not_validate_says_so() {
        let report = super::super::empty();
        let v = value(
            &report,
            &Context::new(std::path::Path::new("."), Some("policy file p.yaml not found".into())),
        );
        let inv = &v["runs"][0]["invocations"][0];
        assert_eq!(inv["executionSuccessful"], false);
        assert_eq!(inv["toolExecutionNotifications"][0]["level"], "error");
        assert!(inv["toolExecutionNotifications"][0]["message"]["text"]
            .as_str()
            .unwrap()
            .contains("p.yaml not found"));
        assert!(v["runs"][0]["tool"]["driver"]["informationUri"]
            .as_str()
            .unwrap()
            .starts_with("https://"));
    }
}
