//! Mermaid flowchart (GitHub renders ```mermaid blocks): one subgraph per environment.
//!
//! Ids are generated (`e0n3`), never taken from names. Every label goes through [`escape`]: only
//! letters, digits and a few safe punctuation marks pass as they are; everything else (quotes,
//! `<`, `>`, `|`, `#`, `;`, backticks, brackets, non-ASCII) becomes a mermaid entity code `#N;`, and
//! control characters (newlines) become spaces, so no name can end a label, a statement or a
//! Markdown code fence.

use super::{edge_label, mark_lines, Diagram, AMBER, RED};
use crate::finding::Severity;
use std::fmt::Write;

/// A label safe inside mermaid's `"…"` quotes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || " .,:/_-+*=@~!?()".contains(c) {
            out.push(c);
        } else if c.is_control() {
            out.push(' ');
        } else {
            let _ = write!(out, "#{};", c as u32);
        }
    }
    out
}

fn label(lines: &[String]) -> String {
    lines.iter().map(|l| escape(l)).collect::<Vec<_>>().join("<br/>")
}

pub fn render(diagrams: &[Diagram]) -> String {
    render_with_notes(diagrams, &[])
}

/// Like `render`, with a note per environment (e.g. how many nodes a collapsed picture left out).
pub fn render_with_notes(diagrams: &[Diagram], notes: &[String]) -> String {
    let mut s = String::from("flowchart LR\n");
    s.push_str(&format!(
        "  classDef error fill:#ffebe9,stroke:{RED},stroke-width:3px,color:#000\n  \
         classDef warning fill:#fff8c5,stroke:{AMBER},stroke-width:3px,color:#000\n  \
         classDef missing stroke-dasharray:5 4\n  \
         classDef note fill:#f6f8fa,stroke:#8c959f,color:#000\n"
    ));
    let mut links = 0usize;
    let mut styles = Vec::new();
    for (ei, d) in diagrams.iter().enumerate() {
        let p = format!("e{ei}");
        let _ = writeln!(
            s,
            "  subgraph {p}[\"{}\"]",
            escape(&format!("environment {}", d.environment))
        );
        s.push_str("    direction LR\n");
        for n in &d.nodes {
            let mut lines = n.label.clone();
            if n.external {
                lines[0] = format!("{} (external)", lines[0]);
            }
            lines.extend(mark_lines(&n.marks));
            let _ = writeln!(s, "    {p}{}[\"{}\"]", n.id, label(&lines));
        }
        let mut notes_here: Vec<String> = Vec::new();
        if let Some(n) = notes.get(ei).filter(|n| !n.is_empty()) {
            notes_here.push(n.clone());
        }
        if !d.unplaced.is_empty() {
            let mut rules: Vec<&str> = d.unplaced.iter().map(|u| u.rule).collect();
            rules.sort();
            rules.dedup();
            notes_here.push(format!(
                "{} finding(s) on objects not drawn: {}",
                d.unplaced.len(),
                rules.join(", ")
            ));
        }
        if !notes_here.is_empty() {
            let _ = writeln!(s, "    {p}note[\"{}\"]", label(&notes_here));
            let _ = writeln!(s, "    class {p}note note");
        }
        for e in &d.edges {
            let _ = writeln!(s, "    {p}{} -->|\"{}\"| {p}{}", e.from, escape(&edge_label(e)), e.to);
            match super::Diagram::worst(&e.marks) {
                Some(Severity::Error) => styles.push(format!("  linkStyle {links} stroke:{RED},stroke-width:3px")),
                Some(_) => styles.push(format!("  linkStyle {links} stroke:{AMBER},stroke-width:3px")),
                None => {}
            }
            links += 1;
        }
        s.push_str("  end\n");
        for n in &d.nodes {
            if n.missing {
                let _ = writeln!(s, "  class {p}{} missing", n.id);
            }
            match Diagram::worst(&n.marks) {
                Some(Severity::Error) => {
                    let _ = writeln!(s, "  class {p}{} error", n.id);
                }
                Some(_) => {
                    let _ = writeln!(s, "  class {p}{} warning", n.id);
                }
                None => {}
            }
        }
    }
    for l in styles {
        s.push_str(&l);
        s.push('\n');
    }
    s
}
