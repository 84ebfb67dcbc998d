//! `--format human`: findings grouped by environment and release, colour on a terminal, and a
//! one-line summary at the end.

use super::{help, location, message_with_object, summary_line};
use crate::finding::Severity;
use crate::report::Report;
use std::fmt::Write;

struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn sev(&self, s: Severity) -> String {
        match s {
            Severity::Error => self.wrap("1;31", "error"),
            Severity::Warning => self.wrap("1;33", "warning"),
            Severity::Note => self.wrap("1;36", "note"),
        }
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

pub fn render(report: &Report, ctx: &super::Context, color: bool) -> String {
    let p = Paint(color);
    let mut out = String::new();
    if let Some(cause) = &ctx.failure {
        let _ = writeln!(out, "{} nvcf-validate could not validate:", p.wrap("1;31", "ERROR"));
        for l in cause.lines() {
            let _ = writeln!(out, "  {l}");
        }
        out.push('\n');
    }
    // Findings of no (or an unknown) environment: in `--manifests` mode they belong to the one
    // pseudo-environment, otherwise they get a trailing "general" group (e.g. policy findings).
    let known = |f: &&crate::finding::Finding| {
        f.environment
            .as_deref()
            .is_some_and(|e| report.environments.iter().any(|x| x.name == e))
    };
    let manifests_mode = report.environments.len() == 1 && report.environments[0].name == "manifests";
    let mut groups: Vec<(Option<&crate::report::EnvReport>, Vec<&crate::finding::Finding>)> = report
        .environments
        .iter()
        .map(|e| {
            let fs = report
                .findings
                .iter()
                .filter(|f| f.environment.as_deref() == Some(&e.name) || (manifests_mode && !known(f)))
                .collect();
            (Some(e), fs)
        })
        .collect();
    let general: Vec<_> = report
        .findings
        .iter()
        .filter(|f| !manifests_mode && !known(f))
        .collect();
    if !general.is_empty() {
        groups.push((None, general));
    }
    for (info, findings) in groups {
        let not_rendered: Vec<_> = info
            .map(|e| e.releases.iter().filter(|r| r.missing()).collect())
            .unwrap_or_default();
        let title = match info {
            Some(e) if manifests_mode => format!("manifests ({} objects)", e.objects),
            Some(e) => format!(
                "environment {} ({} objects; {} of {} installed releases rendered)",
                e.name,
                e.objects,
                e.releases.iter().filter(|r| r.rendered).count(),
                e.releases.iter().filter(|r| r.installed).count()
            ),
            None => "general".to_string(),
        };
        let _ = writeln!(out, "{}", p.bold(&title));
        if let Some(err) = info.and_then(|e| e.render_error.as_ref()) {
            let _ = writeln!(
                out,
                "  {} helmfile could not load or render this environment:",
                p.sev(Severity::Error)
            );
            for l in err.lines() {
                let _ = writeln!(out, "    {}", p.dim(l.trim()));
            }
        }
        for r in &not_rendered {
            let _ = writeln!(
                out,
                "  {} {}/{} ({} {}): {}",
                p.wrap("36", "not rendered"),
                r.namespace,
                r.name,
                r.chart,
                r.version.as_deref().unwrap_or("-"),
                r.reason.as_deref().unwrap_or("-")
            );
        }
        if let Some(c) = info.and_then(|e| e.schema_coverage.as_ref()) {
            let _ = writeln!(out, "  {}", p.dim(&schema_line(c)));
        }
        let mut last_release: Option<Option<&str>> = None;
        for f in &findings {
            if last_release != Some(f.release.as_deref()) {
                if let Some(r) = f.release.as_deref() {
                    let _ = writeln!(out, "  {}", p.bold(&format!("release {r}")));
                }
                last_release = Some(f.release.as_deref());
            }
            let waived = if f.waived.is_some() {
                p.dim(" (waived)")
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "    {}[{}]{waived} {}",
                p.sev(f.sev()),
                f.rule,
                message_with_object(f)
            );
            let _ = writeln!(out, "      {} {}", p.dim("-->"), location(f));
            for r in &f.related {
                let at = r
                    .source
                    .as_ref()
                    .map(|s| {
                        s.line
                            .map(|l| format!("{}:{l}", s.file))
                            .unwrap_or_else(|| s.file.clone())
                    })
                    .unwrap_or_else(|| "-".into());
                let _ = writeln!(out, "      {} {at}: {}", p.dim("also"), r.message);
            }
            if let Some(w) = &f.waived {
                let _ = writeln!(out, "      {} {w}", p.dim("= waived:"));
            } else {
                let _ = writeln!(out, "      {} {}", p.dim("= help:"), help(f));
            }
        }
        if findings.is_empty() {
            let _ = writeln!(out, "  {}", p.wrap("32", "no findings"));
        }
        out.push('\n');
    }
    let c = report.counts();
    let verdict = if ctx.failure.is_some() {
        p.wrap("1;31", "COULD NOT VALIDATE")
    } else if c.errors > 0 {
        p.wrap("1;31", "FAILED")
    } else {
        p.wrap("1;32", "PASSED")
    };
    let _ = writeln!(out, "{verdict}: {}", summary_line(report));
    out
}

/// `schemas: Kubernetes 1.35; 12 objects validated; no schema for Certificate cert-manager.io/v1 (2)`.
fn schema_line(c: &crate::schema::Coverage) -> String {
    let mut s = format!(
        "schemas: Kubernetes {}; {} objects validated",
        c.kubernetes_version, c.validated
    );
    if c.without_schema.is_empty() {
        s.push_str("; every kind has a schema");
    } else {
        let kinds: Vec<String> = c
            .without_schema
            .iter()
            .map(|k| format!("{} {} ({})", k.kind, k.api_version, k.objects))
            .collect();
        s.push_str(&format!("; no schema, not validated: {}", kinds.join(", ")));
    }
    s
}
