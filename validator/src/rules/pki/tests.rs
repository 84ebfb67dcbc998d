//! Tests of the pki rule family: every fixture under tests/fixtures/pki fires (or stays silent)
//! with its exact rule id, plus cases built at test time (private keys, expiry relative to the
//! validation time, policy externals) that must not be committed as files.

use super::*;
use crate::policy::Policy;
use crate::testkit::{self, check_fixtures, Silent};
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

pub(super) fn bundle_yaml(pem: &str, annotation: Option<&str>) -> String {
    let ann = annotation
        .map(|a| format!("  annotations:\n    nvcf.io/trust-bundle-fingerprint: \"{a}\"\n"))
        .unwrap_or_default();
    let body: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nvcf-trust-bundle\n{ann}data:\n  ca.crt: |\n{body}")
}

#[test]
fn fixtures_fire_and_stay_silent() {
    // One reviewed snapshot of what each firing fixture reports of its own rule (rule, severity,
    // line, message).
    let mut all = Vec::new();
    for run in check_fixtures("pki", RULES, Silent::Rule)
        .into_iter()
        .filter(|r| r.fires)
    {
        for f in run.findings.iter().filter(|f| f.rule == run.rule) {
            all.push(serde_json::json!({
                "fixture": run.stem,
                "rule": f.rule,
                "severity": f.sev().as_str(),
                "line": f.source.as_ref().and_then(|s| s.line),
                "message": f.message,
            }));
        }
    }
    insta::assert_json_snapshot!("pki_fixture_findings", all);
}
