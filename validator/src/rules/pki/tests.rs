//! Tests of the pki rule family: every fixture under tests/fixtures/pki fires (or stays silent)
//! with its exact rule id, plus cases built at test time (private keys, expiry relative to the
//! validation time, policy externals) that must not be committed as files.

use super::*;
use crate::policy::Policy;
use crate::testkit;
use std::path::PathBuf;

pub(super) fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pki")
}

pub(super) fn rule(id: &str) -> &'static Rule {
    RULES
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no pki rule {id}"))
}

pub(super) fn run_graph(id: &str, g: &Graph, policy: &Policy) -> Vec<Finding> {
    let ctx = testkit::ctx(g, policy);
    let out = (rule(id).check)(&ctx);
    for f in &out {
        assert_eq!(f.rule, id);
    }
    out
}

pub(super) fn run(id: &str, yaml: &str) -> Vec<Finding> {
    run_graph(id, &testkit::graph("test", yaml), &Policy::default())
}

pub(super) fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(format!("{name}.yaml"))).unwrap()
}

pub(super) fn messages(f: &[Finding]) -> String {
    f.iter()
        .map(|f| format!("- [{}] {}", f.sev().as_str(), f.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rule a fixture file is about: the longest rule id after `fires-`/`silent-`.
pub(super) fn fixture_rule(stem: &str) -> (bool, &'static str) {
    let (fires, rest) = match (stem.strip_prefix("fires-"), stem.strip_prefix("silent-")) {
        (Some(r), _) => (true, r),
        (_, Some(r)) => (false, r),
        _ => panic!("fixture {stem} must start with fires- or silent-"),
    };
    let id = RULES
        .iter()
        .map(|r| r.id)
        .filter(|id| rest.starts_with(&format!("{id}-")))
        .max_by_key(|id| id.len())
        .unwrap_or_else(|| panic!("fixture {stem} names no pki rule"));
    (fires, id)
}

pub(super) fn fixture_files() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? != "yaml" {
                return None;
            }
            Some((p.file_stem()?.to_str()?.to_string(), std::fs::read_to_string(&p).ok()?))
        })
        .collect();
    v.sort();
    v
}

pub(super) fn bundle_yaml(pem: &str, annotation: Option<&str>) -> String {
    let ann = annotation
        .map(|a| format!("  annotations:\n    nvcf.io/trust-bundle-fingerprint: \"{a}\"\n"))
        .unwrap_or_default();
    let body: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nvcf-trust-bundle\n{ann}data:\n  ca.crt: |\n{body}")
}

#[test]
fn fixtures_fire_with_their_rule_and_near_misses_stay_silent() {
    let files = fixture_files();
    assert!(files.len() >= 16, "fixtures missing: {}", files.len());
    let mut failures = Vec::new();
    for (stem, text) in &files {
        assert!(
            text.starts_with("# "),
            "{stem}: a fixture starts with a header comment saying what it shows"
        );
        let (fires, id) = fixture_rule(stem);
        let found = run(id, text);
        if fires && found.is_empty() {
            failures.push(format!("{stem}: expected {id} to fire, it stayed silent"));
        }
        if !fires && !found.is_empty() {
            failures.push(format!(
                "{stem}: expected {id} to stay silent, got:\n{}",
                messages(&found)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_rule_has_a_firing_and_a_silent_fixture() {
    let stems: Vec<String> = fixture_files().into_iter().map(|(s, _)| s).collect();
    for r in RULES {
        for kind in ["fires", "silent"] {
            assert!(
                stems
                    .iter()
                    .any(|s| s.starts_with(&format!("{kind}-{}-", r.id)) && fixture_rule(s).1 == r.id),
                "rule {} has no {kind}-{}-*.yaml fixture",
                r.id,
                r.id
            );
        }
    }
}

#[test]
fn findings_of_the_firing_fixtures_snapshot() {
    // One reviewed snapshot of what each firing fixture reports (rule, severity, line, message).
    let mut all = Vec::new();
    for (stem, text) in fixture_files().into_iter().filter(|(s, _)| s.starts_with("fires-")) {
        let (_, id) = fixture_rule(&stem);
        for f in run(id, &text) {
            all.push(serde_json::json!({
                "fixture": stem,
                "rule": f.rule,
                "severity": f.sev().as_str(),
                "line": f.source.as_ref().and_then(|s| s.line),
                "message": f.message,
            }));
        }
    }
    insta::assert_json_snapshot!("pki_fixture_findings", all);
}
