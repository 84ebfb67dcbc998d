//! `--format sarif`: SARIF 2.1.0 for code-scanning uploads. One rule entry per registered rule
//! with its help text; results point at the template file and line. Strict consumers reject
//! empty `locations` arrays and zero lines, so we omit what we do not know instead.

use crate::finding::Severity;
use crate::model::Report;
use crate::rules;
use serde_json::{json, Value};

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

pub fn value(report: &Report) -> Value {
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
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let mut res = json!({
                "ruleId": f.rule,
                "level": level(f.sev()),
                "message": {"text": f.message},
                "properties": {
                    "environment": f.environment, "release": f.release, "object": f.object,
                    "help": super::help(f),
                },
            });
            if let Some(i) = registry.iter().position(|r| r.id == f.rule) {
                res["ruleIndex"] = json!(i);
            }
            if let Some(src) = &f.source {
                let mut phys = json!({"artifactLocation": {"uri": src.file.trim_start_matches("./")}});
                if let Some(l) = src.line.filter(|l| *l >= 1) {
                    phys["region"] = json!({"startLine": l});
                }
                let mut loc = json!({"physicalLocation": phys});
                if let Some(o) = super::object_label(f) {
                    loc["logicalLocations"] = json!([{"name": o, "kind": "resource"}]);
                }
                res["locations"] = json!([loc]);
            }
            if !f.related.is_empty() {
                let related: Vec<Value> = f
                    .related
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let mut loc = json!({"id": i + 1, "message": {"text": r.message}});
                        if let Some(src) = &r.source {
                            let mut phys = json!({"artifactLocation": {"uri": src.file.trim_start_matches("./")}});
                            if let Some(l) = src.line.filter(|l| *l >= 1) {
                                phys["region"] = json!({"startLine": l});
                            }
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
    // A render failure (explained by state findings) means part of the stack was not checked.
    let render_errors = report.environments.iter().filter_map(|e| {
        e.render_error.as_ref().map(|err| {
            json!({
                "level": "error",
                "message": {"text": format!("environment {}: helmfile could not render the stack; the state findings say why: {err}", e.name)},
            })
        })
    });
    let notifications: Vec<Value> = render_errors
        .chain(
            report
                .environments
                .iter()
                .flat_map(|e| e.releases.iter().filter(|r| r.missing()).map(move |r| (e, r)))
        .map(|(e, r)| {
            json!({
                "level": "note",
                "message": {"text": format!("environment {}: release {}/{} not rendered: {}", e.name, r.namespace, r.name, r.reason.as_deref().unwrap_or("-"))},
            })
        })
        )
        .collect();
    let mut invocation = json!({"executionSuccessful": report.environments.iter().all(|e| e.render_error.is_none())});
    if !notifications.is_empty() {
        invocation["toolExecutionNotifications"] = json!(notifications);
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "nvcf-validate",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules_json,
            }},
            "invocations": [invocation],
            "results": results,
        }],
    })
}

pub fn render(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(&value(report)).expect("sarif serialises");
    s.push('\n');
    s
}
