//! The picture of one environment: who vouches for whom, and which way workers travel.
//!
//! Built from the same object graph the rules judge (`crate::graph::Graph`), through the same
//! helpers the rules use: router flags from `crate::router`, listeners, parentRef attachment and
//! backendRef resolution from `rules::routes` (see `paths`). Nothing is parsed twice; this module
//! only reads. Findings (after the sink) are then laid onto it (`marks`).

use super::marks;
use super::paths;
use crate::finding::{Finding, Severity};
use crate::graph::Graph;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    OpenbaoRole,
    Issuer,
    Certificate,
    Secret,
    Workload,
    /// A name workers present as SNI (an expansion of the advertised-hostname template).
    AdvertisedName,
    /// An address workers dial (gRPC `https://host:port`, QUIC `host:port`).
    DialAddress,
    Listener,
    Route,
    Service,
    TrustBundle,
    WorkerProfile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum EdgeKind {
    #[serde(rename = "signs")]
    Signs,
    #[serde(rename = "writes")]
    Writes,
    #[serde(rename = "mounts")]
    Mounts,
    #[serde(rename = "presents")]
    Presents,
    #[serde(rename = "dials")]
    Dials,
    #[serde(rename = "attaches")]
    Attaches,
    #[serde(rename = "routes to")]
    RoutesTo,
    #[serde(rename = "trusts")]
    Trusts,
}

impl EdgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Signs => "signs",
            EdgeKind::Writes => "writes",
            EdgeKind::Mounts => "mounts",
            EdgeKind::Presents => "presents",
            EdgeKind::Dials => "dials",
            EdgeKind::Attaches => "attaches",
            EdgeKind::RoutesTo => "routes to",
            EdgeKind::Trusts => "trusts",
        }
    }

    /// The rules that judge an edge of this kind: a finding of one of them about either end
    /// marks the edge.
    pub(super) fn rules(self) -> &'static [&'static str] {
        match self {
            EdgeKind::Signs => &[
                "certificate-issuer-resolves",
                "certificate-server-auth",
                "vault-issuer-secure",
            ],
            EdgeKind::Writes => &["tls-secret-one-owner"],
            EdgeKind::Mounts => &[
                "tls-mount-reloadable",
                "tls-paths-consistent",
                "tls-secret-resolves",
                "route-parent-resolves",
            ],
            EdgeKind::Presents => &["san-covers-advertised-name"],
            EdgeKind::Dials => &[
                "worker-routes-complete",
                "plaintext-endpoint",
                "san-covers-advertised-name",
            ],
            EdgeKind::Attaches => &["route-parent-resolves", "plaintext-endpoint"],
            EdgeKind::RoutesTo => &["route-backend-resolves"],
            EdgeKind::Trusts => &["trust-bundle-valid", "trust-bundle-fingerprint"],
        }
    }
}

/// A finding laid onto the picture.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Mark {
    pub rule: &'static str,
    pub severity: Severity,
}

/// The object a node stands for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct NodeObject {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// `n0`, `n1`, …: never derived from names, so hostile names cannot break an output format.
    pub id: String,
    pub kind: NodeKind,
    /// First line: what it is; further lines: details (hostnames, ports, fingerprint).
    pub label: Vec<String>,
    pub object: Option<NodeObject>,
    /// Declared in the policy as existing outside the stack.
    pub external: bool,
    /// Referenced, but neither rendered nor declared external.
    pub missing: bool,
    pub marks: Vec<Mark>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub label: EdgeKind,
    pub marks: Vec<Mark>,
}

/// A finding about something the picture does not draw (an image tag, a chart pin).
#[derive(Debug, Clone, Serialize)]
pub struct Unplaced {
    pub rule: &'static str,
    pub severity: Severity,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagram {
    pub environment: String,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub unplaced: Vec<Unplaced>,
}

impl Diagram {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The worst severity on a node or an edge.
    pub fn worst(marks: &[Mark]) -> Option<Severity> {
        marks.iter().map(|m| m.severity).max()
    }

    pub fn has_findings(&self) -> bool {
        !self.unplaced.is_empty()
            || self.nodes.iter().any(|n| !n.marks.is_empty())
            || self.edges.iter().any(|e| !e.marks.is_empty())
    }

    /// Only what has a finding, with its direct neighbours for context; what was dropped is
    /// counted in a note. For places where the whole picture is too big (a PR comment).
    pub fn collapsed(&self) -> (Diagram, usize) {
        // Nodes with a finding keep their direct neighbours; a marked edge keeps its two ends.
        let marked: Vec<&str> = self
            .nodes
            .iter()
            .filter(|n| !n.marks.is_empty())
            .map(|n| n.id.as_str())
            .collect();
        let mut keep: std::collections::BTreeSet<&str> = marked.iter().copied().collect();
        for e in &self.edges {
            if !e.marks.is_empty() || marked.contains(&e.from.as_str()) || marked.contains(&e.to.as_str()) {
                keep.insert(&e.from);
                keep.insert(&e.to);
            }
        }
        let nodes: Vec<Node> = self
            .nodes
            .iter()
            .filter(|n| keep.contains(n.id.as_str()))
            .cloned()
            .collect();
        let edges = self
            .edges
            .iter()
            .filter(|e| keep.contains(e.from.as_str()) && keep.contains(e.to.as_str()))
            .cloned()
            .collect();
        let dropped = self.nodes.len() - nodes.len();
        (
            Diagram {
                environment: self.environment.clone(),
                nodes,
                edges,
                unplaced: self.unplaced.clone(),
            },
            dropped,
        )
    }
}

/// Build the picture of one environment and lay its findings onto it.
pub fn build(graph: &Graph, findings: &[Finding]) -> Diagram {
    let (nodes, edges) = paths::draw(graph);
    let mut d = Diagram {
        environment: graph.environment.clone(),
        nodes,
        edges,
        unplaced: Vec::new(),
    };
    for f in findings
        .iter()
        .filter(|f| f.waived.is_none() && f.sev() != Severity::Note)
    {
        marks::place(&mut d, f);
    }
    for n in &mut d.nodes {
        n.marks.sort();
        n.marks.dedup();
    }
    for e in &mut d.edges {
        e.marks.sort();
        e.marks.dedup();
    }
    d
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
