//! `rules` and `explain`: generated from the rule registry (the same text SARIF carries).

use crate::rules::{registry, Rule};
use serde_json::json;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CatalogFormat {
    Human,
    Json,
    Markdown,
}

pub fn rules(format: CatalogFormat) -> String {
    let reg = registry();
    match format {
        CatalogFormat::Human => {
            let w = reg.iter().map(|r| r.id.len()).max().unwrap_or(0);
            let mut out = String::new();
            let mut family = "";
            for r in &reg {
                if r.family != family {
                    family = r.family;
                    let _ = writeln!(out, "{family}:");
                }
                let _ = writeln!(out, "  {:w$}  {:7}  {}", r.id, r.severity.as_str(), r.summary);
            }
            out
        }
        CatalogFormat::Json => {
            let v: Vec<_> = reg
                .iter()
                .map(|r| json!({"id": r.id, "family": r.family, "severity": r.severity.as_str(), "summary": r.summary, "explain": r.explain}))
                .collect();
            serde_json::to_string_pretty(&v).expect("serialises") + "\n"
        }
        CatalogFormat::Markdown => {
            let mut out = String::from("| rule | family | severity | refuses |\n|---|---|---|---|\n");
            for r in &reg {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} |",
                    r.id,
                    r.family,
                    r.severity.as_str(),
                    r.summary
                );
            }
            out
        }
    }
}

pub fn explain(rule: &Rule) -> String {
    format!(
        "# {} ({}, default severity {})\n\n{}\n\n{}",
        rule.id,
        rule.family,
        rule.severity.as_str(),
        rule.summary,
        rule.explain.trim_end()
    ) + "\n"
}
