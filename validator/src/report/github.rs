//! `--format github`: GitHub Actions workflow commands (annotations on the pull request).

use crate::finding::Severity;
use crate::report::Report;
use std::fmt::Write;

/// Escape a workflow command's message.
fn data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escape a workflow command's property value.
fn prop(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(report: &Report, ctx: &super::Context) -> String {
    let mut out = String::new();
    if let Some(cause) = &ctx.failure {
        let _ = writeln!(
            out,
            "::error title={}::{}",
            prop("nvcf-validate could not validate"),
            data(cause)
        );
    }
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
        // Annotations attach to repository-relative paths; a file outside the repository (or
        // stdin) gets an unattached annotation.
        if let Some(file) = f
            .source
            .as_ref()
            .and_then(|s| ctx.paths.repo_relative(&s.file).map(|p| (p, s.line)))
        {
            props.insert(0, format!("file={}", prop(&file.0)));
            if let Some(l) = file.1 {
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
