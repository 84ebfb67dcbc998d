//! One cause, one finding: a finding that folds other locations of the same root cause carries
//! them as `related` in the JSON report (valid against the contract schema) and as SARIF
//! `relatedLocations`, and the human format lists them.

mod support;

use support::repo;
use support::run::{findings_of, json, report_schema, run, run_cached, schema_errors};

const FIXTURE: &str = "validator/tests/fixtures/insecure/fires-plaintext-endpoint-one-cause.yaml";

/// `check --manifests` of the fixture in `format`: its stdout (exit 1 required).
fn check(format: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("policy.yaml");
    // The fixture's registries are listed: an empty allow-list allows nothing.
    std::fs::write(
        &policy,
        "version: 1\nsettings: {allowedImageRegistries: [nvcr.io/nvidia, quay.io]}\n",
    )
    .unwrap();
    let fixture = repo().join(FIXTURE);
    let r = run(
        tmp.path(),
        &[
            "check",
            "--manifests",
            fixture.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--format",
            format,
        ],
        &[],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    r.stdout
}

#[test]
fn related_locations_in_json_sarif_and_human() {
    let report = json(&check("json"));
    let errors = schema_errors(&report, &report_schema());
    assert!(errors.is_empty(), "{errors:#?}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "one cause, one finding: {findings:#?}");
    let related = findings[0]["related"].as_array().unwrap();
    let kinds: Vec<&str> = related.iter().map(|r| r["object"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["StatefulSet", "Pod", "Pod"]);
    assert!(related.iter().all(|r| r["source"]["line"].as_u64().is_some()));

    let sarif = json(&check("sarif"));
    let result = &sarif["runs"][0]["results"][0];
    let locs = result["relatedLocations"].as_array().unwrap();
    assert_eq!(locs.len(), 3);
    for (i, l) in locs.iter().enumerate() {
        assert_eq!(l["id"], i + 1);
        assert!(l["physicalLocation"]["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(l["message"]["text"].as_str().unwrap().contains("http://"));
    }

    let human = check("human");
    assert_eq!(human.matches("      also ").count(), 3, "{human}");
}

/// One `helmDefaults` setting inherited by three releases: one finding per rule at the
/// helmDefaults line (real helmfile, offline), each release a related location at its own line.
#[test]
fn a_helm_defaults_setting_is_reported_once_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    support::copy_dir(
        &repo().join("validator/tests/stacks/fires-insecure-flag-helm-defaults"),
        tmp.path(),
    );
    let r = run_cached(
        tmp.path(),
        &["check", "--file", "helmfile.yaml", "--offline", "--format", "json"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = r.json();
    let errors = schema_errors(&report, &report_schema());
    assert!(errors.is_empty(), "{errors:#?}");
    for rule in ["insecure-flag", "chart-version-pinned"] {
        let mine = findings_of(&report, rule);
        assert_eq!(mine.len(), 1, "{rule}: {mine:#?}");
        assert_eq!(mine[0]["source"]["line"], 6, "{rule}: {mine:#?}");
        assert!(mine[0]["release"].is_null());
        let lines: Vec<u64> = mine[0]["related"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["source"]["line"].as_u64().unwrap())
            .collect();
        assert_eq!(lines, [11, 14, 17], "{rule}");
    }
}
