//! `graph`: a picture of each environment's chain of trust and worker path, with the findings
//! that sit on it. `model` builds it from the object graph the rules judge; one file per output
//! format renders it.

pub mod dot;
pub mod json;
pub mod markdown;
mod marks;
pub mod mermaid;
pub mod model;
mod paths;

pub use model::{Diagram, Edge, EdgeKind, Mark, Node, NodeKind};

use crate::finding::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Mermaid,
    Dot,
    Json,
}

/// Every environment's picture in one document: a subgraph (mermaid) or cluster (DOT) per
/// environment, or the JSON document `nvcf-validate/graph/v1`.
pub fn render(diagrams: &[Diagram], format: Format) -> String {
    match format {
        Format::Mermaid => mermaid::render(diagrams),
        Format::Dot => dot::render(diagrams),
        Format::Json => json::render(diagrams),
    }
}

/// The lines under a node's label that name its findings (`✖ rule` for errors, `▲ rule` for
/// warnings).
pub(crate) fn mark_lines(marks: &[Mark]) -> Vec<String> {
    marks
        .iter()
        .map(|m| match m.severity {
            Severity::Error => format!("✖ {}", m.rule),
            _ => format!("▲ {}", m.rule),
        })
        .collect()
}

/// An edge's label: its kind, then the rules that mark it.
pub(crate) fn edge_label(e: &Edge) -> String {
    let mut rules: Vec<&str> = e.marks.iter().map(|m| m.rule).collect();
    rules.dedup();
    if rules.is_empty() {
        e.label.as_str().to_string()
    } else {
        format!("{}: {}", e.label.as_str(), rules.join(", "))
    }
}

pub(crate) const RED: &str = "#d1242f";
pub(crate) const AMBER: &str = "#bf8700";

/// One environment's object graph with the findings about it (after the sink: severities,
/// overrides and waivers applied), for `graph`: the picture is drawn from exactly what the rules
/// judged.
#[derive(Debug)]
pub struct EnvGraph {
    pub name: String,
    pub graph: crate::graph::Graph,
    pub findings: Vec<crate::finding::Finding>,
}
