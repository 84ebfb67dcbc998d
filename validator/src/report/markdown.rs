//! `--format markdown`: a pull-request comment, safe to post as it is.
//!
//! Every value is escaped for GitHub-flavoured Markdown (`text::md_cell`, `text::md_code`): no
//! HTML comes out of a hostile name, a CR or `|` cannot break a table row, a backtick cannot
//! close a code span. The comment stays under GitHub's 65,536-character limit: it is built from
//! blocks in priority order (verdict and summary, the cause of an exit 2, findings by severity,
//! releases not rendered, then optional extra sections such as a per-environment diagram), each
//! added only while it fits in [`BUDGET`]; what does not fit is counted ("N more — see the
//! SARIF/JSON artifact").

use super::text::{clip, md_cell, md_code};
use super::Context;
use crate::finding::{Finding, Severity};
use crate::report::Report;
use std::fmt::Write;

/// GitHub refuses comment bodies over 65,536 characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// What this report may use, in bytes (a UTF-8 byte count is never below the character count
/// GitHub applies), leaving room for text a workflow adds around it.
pub const BUDGET: usize = 60_000;

/// A cell's text is cut after this many characters: one finding cannot fill the comment.
const MAX_CELL: usize = 600;

/// An optional block of the comment (for example a per-environment diagram): shown whole when
/// it fits in what is left of the budget after the findings, otherwise named as left out.
#[derive(Debug, Clone)]
pub struct Section {
    /// A short name for the "left out" note.
    pub title: String,
    /// Markdown, already escaped by whoever built it.
    pub body: String,
}

pub fn render(report: &Report, ctx: &Context) -> String {
    render_with(report, ctx, &[])
}

/// Unwaived errors first, then warnings, notes and waived findings; report order within each.
fn by_severity(report: &Report) -> Vec<&Finding> {
    let mut fs: Vec<&Finding> = report.findings.iter().collect();
    fs.sort_by_key(|f| (f.waived.is_some(), std::cmp::Reverse(f.sev())));
    fs
}

fn row(f: &Finding) -> String {
    let sev = match (&f.waived, f.sev()) {
        (Some(_), s) => format!("{} (waived)", s.as_str()),
        (None, Severity::Error) => "**error**".to_string(),
        (None, s) => s.as_str().to_string(),
    };
    let message = match (&f.waived, super::related_brief(f)) {
        (Some(w), _) => format!("{} — waived: {w}", f.message),
        (None, Some(r)) => format!("{} ({r})", f.message),
        (None, None) => f.message.clone(),
    };
    format!(
        "| {sev} | {} | {} | {} | {} | {} |\n",
        md_code(f.rule),
        md_cell(&clip(f.environment.as_deref().unwrap_or("-"), MAX_CELL)),
        md_cell(&clip(&super::object_label(f).unwrap_or_else(|| "-".into()), MAX_CELL)),
        md_code(&clip(&super::location(f), MAX_CELL)),
        md_cell(&clip(&message, MAX_CELL)),
    )
}

/// The comment, with `extra` sections appended where they fit.
pub fn render_with(report: &Report, ctx: &Context, extra: &[Section]) -> String {
    let c = report.counts();
    let mut out = String::new();
    let verdict = if ctx.failure.is_some() {
        "⛔ nvcf-validate: could not validate"
    } else if c.errors > 0 {
        "❌ nvcf-validate: failed"
    } else {
        "✅ nvcf-validate: passed"
    };
    let _ = writeln!(out, "### {verdict}\n\n{}\n", md_cell(&super::summary_line(report)));
    if let Some(cause) = &ctx.failure {
        // The cause in a fenced block: nothing in it is Markdown or HTML.
        let cause = clip(cause, 4_000);
        let longest = cause.split(|ch| ch != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        let _ = writeln!(
            out,
            "**The gate could not validate the stack (exit code 2)**; nothing below is a complete result:\n\n{fence}text\n{}\n{fence}\n",
            cause.replace('\r', "␍")
        );
    }
    // Everything after the findings table is written first into `tail`, so the table knows how
    // much room is left for it.
    let mut tail = String::new();
    let unrendered: Vec<_> = report
        .environments
        .iter()
        .flat_map(|e| e.releases.iter().filter(|r| r.missing()).map(move |r| (e, r)))
        .collect();
    if !unrendered.is_empty() {
        tail.push_str("<details><summary>Releases not rendered</summary>\n\n| environment | release | chart | reason |\n|---|---|---|---|\n");
        let mut shown = 0;
        for (e, r) in &unrendered {
            let line = format!(
                "| {} | {} | {} | {} |\n",
                md_cell(&clip(&e.name, MAX_CELL)),
                md_cell(&clip(&format!("{}/{}", r.namespace, r.name), MAX_CELL)),
                md_cell(&clip(
                    &format!("{} {}", r.chart, r.version.as_deref().unwrap_or("-")),
                    MAX_CELL
                )),
                md_cell(&clip(r.reason.as_deref().unwrap_or("-"), MAX_CELL))
            );
            if tail.len() + line.len() > BUDGET / 4 {
                break;
            }
            tail.push_str(&line);
            shown += 1;
        }
        if shown < unrendered.len() {
            let _ = writeln!(
                tail,
                "\n{} more releases not rendered — see the JSON report.",
                unrendered.len() - shown
            );
        }
        tail.push_str("\n</details>\n");
    }
    // Schema coverage (`schema-valid`): kinds that had no schema, so were not schema-validated.
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
        tail.push_str(
            "<details><summary>Kinds without a schema (not schema-validated)</summary>\n\n\
             | environment | apiVersion | kind | objects |\n|---|---|---|---|\n",
        );
        let mut shown = 0;
        for (e, k) in &uncovered {
            let line = format!(
                "| {} | {} | {} | {} |\n",
                md_cell(&clip(&e.name, MAX_CELL)),
                md_cell(&clip(&k.api_version, MAX_CELL)),
                md_cell(&clip(&k.kind, MAX_CELL)),
                k.objects
            );
            if tail.len() + line.len() > BUDGET / 4 {
                break;
            }
            tail.push_str(&line);
            shown += 1;
        }
        if shown < uncovered.len() {
            let _ = writeln!(
                tail,
                "\n{} more kinds without a schema — see the JSON report.",
                uncovered.len() - shown
            );
        }
        tail.push_str("\n</details>\n");
    }
    let findings = by_severity(report);
    if !findings.is_empty() {
        const HEAD: &str =
            "| severity | rule | environment | object | location | message |\n|---|---|---|---|---|---|\n";
        // Room for the "N more" line.
        const MORE: usize = 200;
        let room = BUDGET.saturating_sub(out.len() + tail.len() + HEAD.len() + MORE);
        let mut table = String::from(HEAD);
        let mut shown = 0;
        for f in &findings {
            let r = row(f);
            if table.len() - HEAD.len() + r.len() > room {
                break;
            }
            table.push_str(&r);
            shown += 1;
        }
        out.push_str(&table);
        if shown < findings.len() {
            let _ = writeln!(
                out,
                "\n**{} more** — see the SARIF/JSON artifact (this comment shows the most severe {shown} of {} findings).",
                findings.len() - shown,
                findings.len()
            );
        }
        out.push('\n');
    }
    out.push_str(&tail);
    let mut left_out = Vec::new();
    for s in extra {
        if out.len() + s.body.len() < BUDGET {
            out.push('\n');
            out.push_str(&s.body);
        } else {
            left_out.push(md_cell(&s.title));
        }
    }
    if !left_out.is_empty() {
        let _ = writeln!(out, "\n_Left out for size: {}._", left_out.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{ObjectRef, SourceRef};

    fn hostile(i: usize) -> Finding {
        let mut f = Finding::new(
            "image-pinned",
            format!("x|y\r\nz <script>alert({i})</script> `a`` & \"q\""),
        )
        .with_severity(Severity::Error)
        .with_environment("default");
        f.object = Some(ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("n".into()),
            name: format!("a\rb|c<img src=x>{i}"),
        });
        f.source = Some(SourceRef {
            file: "t`p|q.yaml".into(),
            line: Some(1),
        });
        f
    }

    fn ctx() -> Context {
        Context::new(std::path::Path::new("."), None)
    }

    #[test]
    fn every_finding_is_one_row_and_no_html_survives() {
        let report = Report {
            environments: Vec::new(),
            findings: (0..3).map(hostile).collect(),
        };
        let md = render(&report, &ctx());
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| **error**")).collect();
        assert_eq!(rows.len(), 3, "{md}");
        assert!(!md.contains('\r'));
        assert!(!md.contains("<script") && !md.contains("<img"), "{md}");
        assert!(md.contains("``t`p\\|q.yaml:1``"), "{md}");
    }

    #[test]
    fn the_comment_stays_under_the_limit() {
        let report = Report {
            environments: Vec::new(),
            findings: (0..5_000).map(hostile).collect(),
        };
        let extra = [Section {
            title: "graph".into(),
            body: "x".repeat(2_000),
        }];
        let md = render_with(&report, &ctx(), &extra);
        assert!(md.len() <= BUDGET, "{}", md.len());
        assert!(md.len() < GITHUB_COMMENT_LIMIT);
        assert!(md.contains(" more** — see the SARIF/JSON artifact"), "{md}");
        assert!(md.contains("_Left out for size: graph._"));
        // A small report keeps the extra section.
        let small = Report {
            environments: Vec::new(),
            findings: vec![hostile(1)],
        };
        assert!(render_with(&small, &ctx(), &extra).contains("xxxxxxxxxx"));
    }

    #[test]
    fn a_run_that_could_not_validate_has_a_banner_with_the_cause() {
        let c = Context::new(std::path::Path::new("."), Some("policy ```p``` <b>bad</b>".into()));
        let md = render(&super::super::empty(), &c);
        assert!(md.starts_with("### ⛔ nvcf-validate: could not validate"), "{md}");
        assert!(md.contains("````text\npolicy ```p``` <b>bad</b>\n````"), "{md}");
    }
}
