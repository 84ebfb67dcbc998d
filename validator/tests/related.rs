//! One cause, one finding: a finding that folds other locations of the same root cause carries
//! them as `related` in the JSON report (valid against the contract schema) and as SARIF
//! `relatedLocations`, and the human format lists them.

mod support;

use std::process::Command;
use support::repo;

const FIXTURE: &str = "validator/tests/fixtures/insecure/fires-plaintext-endpoint-one-cause.yaml";

fn run(format: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("policy.yaml");
    // The fixture's registries are listed: an empty allow-list allows nothing.
    std::fs::write(
        &policy,
        "version: 1\nsettings: {allowedImageRegistries: [nvcr.io/nvidia, quay.io]}\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nvcf-validate"))
        .args(["check", "--manifests"])
        .arg(repo().join(FIXTURE))
        .args(["--policy", policy.to_str().unwrap(), "--format", format])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn related_locations_in_json_sarif_and_human() {
    let report: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("validator/schema/report.schema.json")).unwrap())
            .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "one cause, one finding: {findings:#?}");
    let related = findings[0]["related"].as_array().unwrap();
    let kinds: Vec<&str> = related.iter().map(|r| r["object"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["StatefulSet", "Pod", "Pod"]);
    assert!(related.iter().all(|r| r["source"]["line"].as_u64().is_some()));

    let sarif: serde_json::Value = serde_json::from_str(&run("sarif")).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    let locs = result["relatedLocations"].as_array().unwrap();
    assert_eq!(locs.len(), 3);
    for (i, l) in locs.iter().enumerate() {
        assert_eq!(l["id"], i + 1);
        assert!(l["physicalLocation"]["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(l["message"]["text"].as_str().unwrap().contains("http://"));
    }

    let human = run("human");
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
    let out = Command::new(env!("CARGO_BIN_EXE_nvcf-validate"))
        .args(["check", "--file", "helmfile.yaml", "--offline", "--format", "json"])
        .current_dir(tmp.path())
        .env("PATH", support::path_with_tools())
        .env("XDG_CACHE_HOME", tmp.path().join(".cache"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("validator/schema/report.schema.json")).unwrap())
            .unwrap();
    let errors: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    for rule in ["insecure-flag", "chart-version-pinned"] {
        let mine: Vec<&serde_json::Value> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == rule)
            .collect();
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
