//! Output formats, one file each. Every format shows the same findings and the releases that
//! were not rendered (pinned but not rendered is never silent).

pub mod catalog;
pub mod github;
pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;

use crate::finding::Finding;
use crate::model::Report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Sarif,
    Junit,
    Github,
    Markdown,
}

pub fn render(report: &Report, format: Format, color: bool) -> String {
    match format {
        Format::Human => human::render(report, color),
        Format::Json => json::render(report),
        Format::Sarif => sarif::render(report),
        Format::Junit => junit::render(report),
        Format::Github => github::render(report),
        Format::Markdown => markdown::render(report),
    }
}

/// `file:line` of a finding, or `-`.
pub fn location(f: &Finding) -> String {
    match &f.source {
        Some(s) => match s.line {
            Some(l) => format!("{}:{l}", s.file),
            None => s.file.clone(),
        },
        None => "-".into(),
    }
}

/// `Kind namespace/name` of a finding's object, if any.
pub fn object_label(f: &Finding) -> Option<String> {
    f.object.as_ref().map(|o| match &o.namespace {
        Some(ns) => format!("{} {ns}/{}", o.kind, o.name),
        None => format!("{} {}", o.kind, o.name),
    })
}

/// The one-line summary every human-facing format ends with.
pub fn summary_line(report: &Report) -> String {
    let c = report.counts();
    let not_rendered = report
        .environments
        .iter()
        .flat_map(|e| &e.releases)
        .filter(|r| r.missing())
        .count();
    format!(
        "{} error{}, {} warning{}, {} waived; {} environment{}, {} objects{}",
        c.errors,
        if c.errors == 1 { "" } else { "s" },
        c.warnings,
        if c.warnings == 1 { "" } else { "s" },
        c.waived,
        report.environments.len(),
        if report.environments.len() == 1 { "" } else { "s" },
        report.objects(),
        if not_rendered > 0 {
            format!(", {not_rendered} release(s) not rendered")
        } else {
            String::new()
        }
    )
}

/// The help text of a finding: its own, else a pointer to the rule's explanation.
pub fn help(f: &Finding) -> String {
    f.help.clone().unwrap_or_else(|| {
        format!(
            "run `nvcf-validate explain {}` for why this matters and how to fix it",
            f.rule
        )
    })
}

/// Related locations in one line (`also: file:line (Kind ns/name); …`), if any.
pub fn related_brief(f: &Finding) -> Option<String> {
    if f.related.is_empty() {
        return None;
    }
    let items: Vec<String> = f
        .related
        .iter()
        .map(|r| {
            let loc = match &r.source {
                Some(s) => match s.line {
                    Some(l) => format!("{}:{l}", s.file),
                    None => s.file.clone(),
                },
                None => "-".into(),
            };
            match &r.object {
                Some(o) => format!(
                    "{loc} ({} {}{})",
                    o.kind,
                    o.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default(),
                    o.name
                ),
                None => loc,
            }
        })
        .collect();
    Some(format!("also: {}", items.join("; ")))
}

/// The message prefixed with the finding's object, unless the message already starts with it.
pub fn message_with_object(f: &Finding) -> String {
    match object_label(f) {
        Some(o) if !f.message.starts_with(o.as_str()) => format!("{o}: {}", f.message),
        _ => f.message.clone(),
    }
}
