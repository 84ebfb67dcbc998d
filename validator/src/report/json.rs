//! `--format json`: the contract `nvcf-validate/report/v1` (shared/design/report.schema.json).

use crate::finding::Finding;
use crate::report::Report;
use serde_json::{json, Value};

pub const SCHEMA: &str = "nvcf-validate/report/v1";

pub fn value(report: &Report, ctx: &super::Context) -> Value {
    let c = report.counts();
    let environments: Vec<Value> = report
        .environments
        .iter()
        .map(|e| {
            let releases: Vec<Value> = e
                .releases
                .iter()
                .map(|r| {
                    json!({
                        "name": r.name, "namespace": r.namespace, "chart": r.chart, "version": r.version,
                        "installed": r.installed, "rendered": r.rendered, "reason": r.reason, "objects": r.objects,
                    })
                })
                .collect();
            let mut v = json!({"name": e.name, "releases": releases, "objects": e.objects});
            if let Some(err) = &e.render_error {
                v["renderError"] = json!(err);
            }
            if let Some(c) = &e.schema_coverage {
                v["schemaCoverage"] = json!({
                    "kubernetesVersion": c.kubernetes_version,
                    "validated": c.validated,
                    "withoutSchema": c.without_schema.iter().map(|k| json!({
                        "apiVersion": k.api_version, "kind": k.kind, "objects": k.objects,
                    })).collect::<Vec<_>>(),
                });
            }
            v
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "environments": environments,
        "findings": report.findings.iter().map(finding).collect::<Vec<_>>(),
        // Why the run could not validate (exit 2); empty when it could.
        "errors": ctx.failure.iter().map(|m| json!({"message": m})).collect::<Vec<_>>(),
        "summary": {
            "errors": c.errors, "warnings": c.warnings, "waived": c.waived,
            "environments": report.environments.len(), "objects": report.objects(),
        },
    })
}

pub fn finding(f: &Finding) -> Value {
    let mut v = json!({
        "rule": f.rule,
        "severity": f.sev().as_str(),
        "environment": f.environment,
        "release": f.release,
        "object": f.object,
        "source": f.source,
        "message": f.message,
        "help": super::help(f),
        "waived": f.waived,
    });
    // Additive: only when the finding folds other locations of the same cause into itself.
    if !f.related.is_empty() {
        v["related"] = json!(f.related);
    }
    v
}

pub fn render(report: &Report, ctx: &super::Context) -> String {
    let mut s = serde_json::to_string_pretty(&value(report, ctx)).expect("report serialises");
    s.push('\n');
    s
}
