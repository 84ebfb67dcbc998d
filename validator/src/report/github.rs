//! `--format github`: GitHub Actions workflow commands (annotations on the pull request).

use crate::finding::Severity;
use crate::model::Report;
use std::fmt::Write;

/// Escape a workflow command's message.
fn data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escape a workflow command's property value.
fn prop(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let cmd = match (f.waived.is_some(), f.sev()) {
            (true, _) | (false, Severity::Note) => "notice",
            (false, Severity::Error) => "error",
            (false, Severity::Warning) => "warning",
        };
        let mut props = vec![format!(
            "title={}",
            prop(&format!("{} ({})", f.rule, f.environment.as_deref().unwrap_or("-")))
        )];
        if let Some(src) = &f.source {
            props.insert(0, format!("file={}", prop(src.file.trim_start_matches("./"))));
            if let Some(l) = src.line {
                props.insert(1, format!("line={l}"));
            }
        }
        let mut waived = f.waived.as_ref().map(|w| format!(" (waived: {w})")).unwrap_or_default();
        if let Some(r) = super::related_brief(f) {
            waived.push_str(&format!(" ({r})"));
        }
        let _ = writeln!(
            out,
            "::{cmd} {}::{}",
            props.join(","),
            data(&format!("{}{waived}", super::message_with_object(f)))
        );
    }
    for e in &report.environments {
        for r in e.releases.iter().filter(|r| r.missing()) {
            let _ = writeln!(
                out,
                "::notice title={}::{}",
                prop(&format!("not rendered ({})", e.name)),
                data(&format!(
                    "{}/{}: {}",
                    r.namespace,
                    r.name,
                    r.reason.as_deref().unwrap_or("-")
                ))
            );
        }
    }
    let _ = writeln!(out, "nvcf-validate: {}", super::summary_line(report));
    out
}
