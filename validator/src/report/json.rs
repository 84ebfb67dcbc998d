//! `--format json`: the contract `nvcf-validate/report/v1` (shared/design/report.schema.json).

use crate::finding::Finding;
use crate::report::Report;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

pub const SCHEMA: &str = "nvcf-validate/report/v1";

/// The report document. Serialised as it is written: each finding becomes a JSON value only
/// while it is written, so a run with tens of thousands of findings never holds its report twice
/// (as values and as text) next to the findings.
struct Document<'a> {
    report: &'a Report,
    ctx: &'a super::Context,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (report, ctx) = (self.report, self.ctx);
        let c = report.counts();
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("schema", SCHEMA)?;
        m.serialize_entry("environments", &environments(report))?;
        m.serialize_entry("findings", &Findings(&report.findings))?;
        // Why the run could not validate (exit 2); empty when it could.
        m.serialize_entry(
            "errors",
            &ctx.failure.iter().map(|m| json!({"message": m})).collect::<Vec<_>>(),
        )?;
        m.serialize_entry(
            "summary",
            &json!({
                "errors": c.errors, "warnings": c.warnings, "waived": c.waived,
                "environments": report.environments.len(), "objects": report.objects(),
            }),
        )?;
        m.end()
    }
}

struct Findings<'a>(&'a [Finding]);

impl Serialize for Findings<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for f in self.0 {
            seq.serialize_element(&finding(f))?;
        }
        seq.end()
    }
}

pub fn value(report: &Report, ctx: &super::Context) -> Value {
    serde_json::to_value(Document { report, ctx }).expect("report serialises")
}

/// Write the report (pretty-printed, with a final line break) to `w`.
pub fn write(report: &Report, ctx: &super::Context, w: impl std::io::Write) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(w);
    serde_json::to_writer_pretty(&mut w, &Document { report, ctx })?;
    std::io::Write::write_all(&mut w, b"\n")?;
    std::io::Write::flush(&mut w)
}

fn environments(report: &Report) -> Vec<Value> {
    report
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
        .collect()
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
    let mut out = Vec::new();
    write(report, ctx, &mut out).expect("report serialises");
    String::from_utf8(out).expect("JSON is UTF-8")
}
