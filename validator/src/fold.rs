//! One cause, one finding. Runs once over every finding of a check, after the sink (so severities,
//! waivers and redaction are final, a waiver never hides a location it does not match, and no
//! unredacted text ends up in a related location):
//!
//! 1. exact duplicates (same rule, environment, release, object, line, message, severity and
//!    waiver: the same flag written twice in one container) are reported once;
//! 2. findings of one rule, environment, severity and waiver that carry the same cause key
//!    (`Finding::with_cause`) are folded into the first of them; the others become its related
//!    locations (JSON `related`, SARIF `relatedLocations`, `also` lines of the human format).
//!    When the cause is written at a place of its own (`Finding::with_cause_at`, e.g. a
//!    `helmDefaults` line every release inherits), the folded finding points there and every
//!    instance is a related location.
//!
//! Rules decide what a cause is; this step only groups. Order is kept: each folded finding stands
//! where its first instance stood.

use crate::finding::{Finding, ObjectRef, Related, Severity, SourceRef};
use std::collections::BTreeMap;

type DupKey<'a> = (
    &'static str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a ObjectRef>,
    Option<&'a SourceRef>,
    &'a str,
    Option<Severity>,
    Option<&'a str>,
);

type CauseKey = (&'static str, Option<String>, String, Option<Severity>, Option<String>);

pub fn fold(findings: Vec<Finding>) -> Vec<Finding> {
    let findings = dedupe(findings);
    // Group members by cause, in order of first appearance.
    let mut group_of: BTreeMap<CauseKey, usize> = BTreeMap::new();
    let mut groups: Vec<Vec<Finding>> = Vec::new();
    let mut order: Vec<Slot> = Vec::new();
    for f in findings {
        let Some(cause) = f.cause.as_ref() else {
            order.push(Slot::Single(Box::new(f)));
            continue;
        };
        let key: CauseKey = (
            f.rule,
            f.environment.clone(),
            cause.key.clone(),
            f.severity,
            f.waived.clone(),
        );
        match group_of.get(&key) {
            Some(&g) => groups[g].push(f),
            None => {
                group_of.insert(key, groups.len());
                order.push(Slot::Group(groups.len()));
                groups.push(vec![f]);
            }
        }
    }
    let mut groups: Vec<Option<Vec<Finding>>> = groups.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Single(f) => Some(*f),
            Slot::Group(g) => groups[g].take().map(fold_group),
        })
        .collect()
}

enum Slot {
    Single(Box<Finding>),
    Group(usize),
}

fn related_of(f: &Finding) -> Related {
    Related {
        object: f.object.clone(),
        source: f.source.clone(),
        message: f.message.clone(),
    }
}

fn push_unique(list: &mut Vec<Related>, r: Related) {
    if !list.contains(&r) {
        list.push(r);
    }
}

fn fold_group(members: Vec<Finding>) -> Finding {
    let mut it = members.into_iter();
    let mut primary = it.next().expect("a group has a first member");
    let rest: Vec<Finding> = it.collect();
    let at = primary.cause.as_ref().and_then(|c| c.at.clone());
    let mut related = Vec::new();
    if let Some((source, message)) = at {
        // The cause's own place: every instance (the first included) becomes related, and the
        // finding names a release or object only when all instances share it.
        let all = std::iter::once(&primary).chain(rest.iter());
        let mut releases: Vec<&Option<String>> = Vec::new();
        let mut objects: Vec<&Option<ObjectRef>> = Vec::new();
        for f in all {
            if !releases.contains(&&f.release) {
                releases.push(&f.release);
            }
            if !objects.contains(&&f.object) {
                objects.push(&f.object);
            }
            push_unique(&mut related, related_of(f));
            for r in &f.related {
                push_unique(&mut related, r.clone());
            }
        }
        let release = if releases.len() == 1 { releases[0].clone() } else { None };
        let object = if objects.len() == 1 { objects[0].clone() } else { None };
        primary.release = release;
        primary.object = object;
        primary.source = Some(source);
        primary.message = message;
        primary.related = related;
        return primary;
    }
    related.append(&mut primary.related);
    let own = related_of(&primary);
    for f in rest {
        let r = related_of(&f);
        if r != own {
            push_unique(&mut related, r);
        }
        for r in f.related {
            push_unique(&mut related, r);
        }
    }
    primary.related = related;
    primary
}

/// Drop exact duplicates, keeping the first (and the union of their related locations).
fn dedupe(findings: Vec<Finding>) -> Vec<Finding> {
    let mut first: BTreeMap<DupKey<'_>, usize> = BTreeMap::new();
    let mut keep: Vec<Option<usize>> = Vec::with_capacity(findings.len());
    for (i, f) in findings.iter().enumerate() {
        let key: DupKey<'_> = (
            f.rule,
            f.environment.as_deref(),
            f.release.as_deref(),
            f.object.as_ref(),
            f.source.as_ref(),
            f.message.as_str(),
            f.severity,
            f.waived.as_deref(),
        );
        match first.get(&key) {
            Some(&j) => keep.push(Some(j)),
            None => {
                first.insert(key, i);
                keep.push(None);
            }
        }
    }
    drop(first);
    let mut slots: Vec<Option<Finding>> = findings.into_iter().map(Some).collect();
    for i in 0..slots.len() {
        if let Some(j) = keep[i] {
            if let Some(dup) = slots[i].take() {
                if let Some(orig) = slots[j].as_mut() {
                    for r in dup.related {
                        push_unique(&mut orig.related, r);
                    }
                }
            }
        }
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(rule: &'static str, obj: &str, line: usize, msg: &str) -> Finding {
        let mut f = Finding::new(rule, msg);
        f.environment = Some("default".into());
        f.release = Some("nvcf/a".into());
        f.object = Some(ObjectRef {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: Some("nvcf".into()),
            name: obj.into(),
        });
        f.source = Some(SourceRef {
            file: "a.yaml".into(),
            line: Some(line),
        });
        f
    }

    #[test]
    fn exact_duplicates_collapse_and_causes_fold_into_the_first() {
        let out = fold(vec![
            f("insecure-flag", "p", 9, "x").with_cause("p:quicinsecure"),
            f("insecure-flag", "p", 9, "x").with_cause("p:quicinsecure"),
            f("insecure-flag", "p", 12, "y").with_cause("p:quicinsecure"),
            f("insecure-flag", "q", 3, "z"),
            f("insecure-flag", "q", 3, "z"),
            // Another rule, another environment, another severity or waiver: never folded.
            f("plaintext-endpoint", "p", 12, "y").with_cause("p:quicinsecure"),
            f("insecure-flag", "p", 13, "w")
                .with_cause("p:quicinsecure")
                .with_severity(Severity::Warning),
            f("insecure-flag", "p", 14, "v")
                .with_cause("p:quicinsecure")
                .with_environment("other"),
            {
                let mut w = f("insecure-flag", "p", 15, "u").with_cause("p:quicinsecure");
                w.waived = Some("r".into());
                w
            },
        ]);
        let shown: Vec<(&str, &str, usize)> = out
            .iter()
            .map(|f| (f.rule, f.message.as_str(), f.related.len()))
            .collect();
        assert_eq!(
            shown,
            [
                ("insecure-flag", "x", 1),
                ("insecure-flag", "z", 0),
                ("plaintext-endpoint", "y", 0),
                ("insecure-flag", "w", 0),
                ("insecure-flag", "v", 0),
                ("insecure-flag", "u", 0),
            ]
        );
        assert_eq!(out[0].related[0].message, "y");
        assert_eq!(out[0].related[0].source.as_ref().and_then(|s| s.line), Some(12));
    }

    #[test]
    fn a_cause_with_its_own_place_points_there_and_lists_every_instance() {
        let mut a = f("chart-version-pinned", "p", 5, "release a");
        let mut b = f("chart-version-pinned", "p", 9, "release b");
        (a.object, b.object) = (None, None);
        b.release = Some("nvcf/b".into());
        let at = |x: Finding| x.with_cause_at("helmDefaults.devel@helmfile.yaml", "helmfile.yaml", Some(2), "defaults");
        let out = fold(vec![at(a), at(b)]);
        assert_eq!(out.len(), 1);
        let f = &out[0];
        assert_eq!((f.message.as_str(), f.release.as_deref()), ("defaults", None));
        assert_eq!(f.source.as_ref().and_then(|s| s.line), Some(2));
        let lines: Vec<Option<usize>> = f
            .related
            .iter()
            .map(|r| r.source.as_ref().and_then(|s| s.line))
            .collect();
        assert_eq!(lines, [Some(5), Some(9)]);
    }
}
