//! Laying findings onto the picture: a finding marks the node of the object it points at, and
//! the edges of that node that its rule judges (narrowed to the edges whose other end the message
//! names, when it names some).

use super::model::{Diagram, Mark, Node, NodeKind, Unplaced};
use crate::finding::Finding;
use std::collections::BTreeMap;

fn points_at(n: &Node, f: &Finding) -> bool {
    match (&n.object, &f.object) {
        (Some(o), Some(fo)) => o.kind == fo.kind && o.namespace == fo.namespace && o.name == fo.name,
        _ => false,
    }
}

/// The message names this node: one of its detail lines (a host, an address, a name), or its
/// object's name.
fn named_in(n: &Node, message: &str) -> bool {
    // A listener: messages name it as `name`.
    if n.kind == NodeKind::Listener && !n.missing {
        if let Some(l) = n.label.get(1).and_then(|l| l.strip_prefix("listener ")) {
            let name = l.split(' ').next().unwrap_or("");
            return message.contains(&format!("`{name}`"));
        }
    }
    let names = n
        .label
        .iter()
        .skip(1)
        .map(String::as_str)
        .chain(n.object.as_ref().map(|o| o.name.as_str()));
    names.filter(|s| s.len() >= 3).any(|s| message.contains(s))
}

pub(super) fn place(d: &mut Diagram, f: &Finding) {
    let mark = Mark {
        rule: f.rule,
        severity: f.sev(),
    };
    let at: Vec<usize> = (0..d.nodes.len()).filter(|&i| points_at(&d.nodes[i], f)).collect();
    if at.is_empty() {
        d.unplaced.push(Unplaced {
            rule: f.rule,
            severity: f.sev(),
            message: f.message.clone(),
        });
        return;
    }
    // A Gateway is drawn as one node per listener, all pointing at it: a finding about it marks
    // the listeners its message names (all of them when it names none).
    let named: Vec<usize> = at
        .iter()
        .copied()
        .filter(|&i| d.nodes[i].kind == NodeKind::Listener && named_in(&d.nodes[i], &f.message))
        .collect();
    let at: Vec<usize> = if named.is_empty() { at } else { named };
    let ids: Vec<String> = at.iter().map(|&i| d.nodes[i].id.clone()).collect();
    for &i in &at {
        d.nodes[i].marks.push(mark.clone());
    }
    // Edges of those nodes that the rule judges; dial addresses the message names count as the
    // finding's own (a router's worker-route finding is about its dial addresses).
    let by_id: BTreeMap<&str, &Node> = d.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    let owned = |id: &str| {
        ids.iter().any(|x| x == id)
            || by_id
                .get(id)
                .is_some_and(|n| n.kind == NodeKind::DialAddress && named_in(n, &f.message))
    };
    let candidates: Vec<(usize, Option<bool>)> = d
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.label.rules().contains(&f.rule))
        .filter_map(|(i, e)| {
            let (from, to) = (owned(&e.from), owned(&e.to));
            if !(from || to) {
                return None;
            }
            // Does the message name the edge's other end (or is that end the finding's too)?
            if from && to {
                return Some((i, Some(true)));
            }
            let other = if from { &e.to } else { &e.from };
            Some((i, by_id.get(other.as_str()).map(|n| named_in(n, &f.message))))
        })
        .collect();
    let any_named = candidates.iter().any(|(_, n)| *n == Some(true));
    let chosen: Vec<usize> = candidates
        .into_iter()
        .filter(|(_, n)| !any_named || *n == Some(true))
        .map(|(i, _)| i)
        .collect();
    for i in chosen {
        d.edges[i].marks.push(mark.clone());
    }
}
