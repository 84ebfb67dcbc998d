//! Graphviz DOT: one cluster per environment, for `dot -Tsvg`.
//!
//! Ids are generated (`e0n3`); labels are DOT double-quoted strings in which `\` and `"` are
//! escaped and control characters (newlines) become spaces, so a name cannot end a string or
//! smuggle an escape sequence (`\N`, `\G`, `\l`).

use super::{edge_label, mark_lines, Diagram, AMBER, RED};
use crate::finding::Severity;
use std::fmt::Write;

/// A string safe inside DOT's `"…"`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn color(sev: Option<Severity>) -> Option<&'static str> {
    match sev {
        Some(Severity::Error) => Some(RED),
        Some(Severity::Warning) => Some(AMBER),
        _ => None,
    }
}

pub fn render(diagrams: &[Diagram]) -> String {
    let mut s = String::from(
        "digraph nvcf {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n  \
         edge [fontname=\"Helvetica\", fontsize=9];\n",
    );
    for (ei, d) in diagrams.iter().enumerate() {
        let p = format!("e{ei}");
        let _ = writeln!(s, "  subgraph cluster_{p} {{");
        let _ = writeln!(
            s,
            "    label=\"{}\";",
            escape(&format!("environment {}", d.environment))
        );
        for n in &d.nodes {
            let mut lines = n.label.clone();
            if n.external {
                lines[0] = format!("{} (external)", lines[0]);
            }
            lines.extend(mark_lines(&n.marks));
            let text = lines.iter().map(|l| escape(l)).collect::<Vec<_>>().join("\\n");
            let mut attrs = vec![format!("label=\"{text}\"")];
            let mut style = vec!["rounded"];
            if n.missing {
                style.push("dashed");
            }
            if let Some(c) = color(Diagram::worst(&n.marks)) {
                attrs.push(format!("color=\"{c}\", fontcolor=\"{c}\", penwidth=2"));
            }
            attrs.push(format!("style=\"{}\"", style.join(",")));
            let _ = writeln!(s, "    {p}{} [{}];", n.id, attrs.join(", "));
        }
        if !d.unplaced.is_empty() {
            let mut rules: Vec<&str> = d.unplaced.iter().map(|u| u.rule).collect();
            rules.sort();
            rules.dedup();
            let _ = writeln!(
                s,
                "    {p}note [shape=note, label=\"{}\"];",
                escape(&format!(
                    "{} finding(s) on objects not drawn: {}",
                    d.unplaced.len(),
                    rules.join(", ")
                ))
            );
        }
        for e in &d.edges {
            let mut attrs = vec![format!("label=\"{}\"", escape(&edge_label(e)))];
            if let Some(c) = color(Diagram::worst(&e.marks)) {
                attrs.push(format!("color=\"{c}\", fontcolor=\"{c}\", penwidth=2"));
            }
            let _ = writeln!(s, "    {p}{} -> {p}{} [{}];", e.from, e.to, attrs.join(", "));
        }
        s.push_str("  }\n");
    }
    s.push_str("}\n");
    s
}
