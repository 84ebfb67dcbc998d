//! `--format markdown`: a pull-request comment.

use crate::model::Report;
use std::fmt::Write;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn render(report: &Report) -> String {
    let c = report.counts();
    let mut out = String::new();
    let verdict = if c.errors > 0 {
        "❌ nvcf-validate: failed"
    } else {
        "✅ nvcf-validate: passed"
    };
    let _ = writeln!(out, "### {verdict}\n\n{}\n", super::summary_line(report));
    if !report.findings.is_empty() {
        out.push_str("| severity | rule | environment | object | location | message |\n|---|---|---|---|---|---|\n");
        for f in &report.findings {
            let sev = match &f.waived {
                Some(_) => format!("{} (waived)", f.sev().as_str()),
                None => f.sev().as_str().to_string(),
            };
            let _ = writeln!(
                out,
                "| {sev} | `{}` | {} | {} | `{}` | {} |",
                f.rule,
                cell(f.environment.as_deref().unwrap_or("-")),
                cell(&super::object_label(f).unwrap_or_else(|| "-".into())),
                cell(&super::location(f)),
                cell(&match (&f.waived, super::related_brief(f)) {
                    (Some(w), _) => format!("{} — waived: {w}", f.message),
                    (None, Some(r)) => format!("{} ({r})", f.message),
                    (None, None) => f.message.clone(),
                })
            );
        }
        out.push('\n');
    }
    let unrendered: Vec<_> = report
        .environments
        .iter()
        .flat_map(|e| e.releases.iter().filter(|r| r.missing()).map(move |r| (e, r)))
        .collect();
    if !unrendered.is_empty() {
        out.push_str("<details><summary>Releases not rendered</summary>\n\n| environment | release | chart | reason |\n|---|---|---|---|\n");
        for (e, r) in unrendered {
            let _ = writeln!(
                out,
                "| {} | {}/{} | {} {} | {} |",
                cell(&e.name),
                cell(&r.namespace),
                cell(&r.name),
                cell(&r.chart),
                cell(r.version.as_deref().unwrap_or("-")),
                cell(r.reason.as_deref().unwrap_or("-"))
            );
        }
        out.push_str("\n</details>\n");
    }
    let uncovered: Vec<_> = report
        .environments
        .iter()
        .flat_map(|e| {
            e.schema_coverage
                .iter()
                .flat_map(move |c| c.without_schema.iter().map(move |k| (e, k)))
        })
        .collect();
    if !uncovered.is_empty() {
        out.push_str(
            "<details><summary>Kinds without a schema (not schema-validated)</summary>\n\n\
             | environment | apiVersion | kind | objects |\n|---|---|---|---|\n",
        );
        for (e, k) in uncovered {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&e.name),
                cell(&k.api_version),
                cell(&k.kind),
                k.objects
            );
        }
        out.push_str("\n</details>\n");
    }
    out
}
