//! Every fixture, end to end through the real CLI:
//!
//! - `tests/fixtures/<family>/fires-<rule>-<case>.yaml` must produce a finding of `<rule>`, and
//!   `silent-<rule>-<case>.yaml` must produce none of it (`check --manifests`, with the policy
//!   `tests/fixtures/<family>/policy/<fixture>.yaml` when there is one);
//! - `tests/stacks/fires-<rule>-<case>/` and `silent-…/` are helmfile stacks rendered with the real
//!   helmfile/helm (`check --offline`);
//! - every rule of the registry has at least one firing and one silent fixture (the policy family's
//!   waiver findings are exercised by the CLI tests instead).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn validator_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rule_ids() -> Vec<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_nvcf-validate"))
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["family"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The rule a fixture is about: the longest registry id that follows `fires-`/`silent-`.
fn rule_of(name: &str, ids: &[(String, String)]) -> Option<(bool, String)> {
    let (fires, rest) = if let Some(r) = name.strip_prefix("fires-") {
        (true, r)
    } else if let Some(r) = name.strip_prefix("silent-") {
        (false, r)
    } else {
        return None;
    };
    ids.iter()
        .map(|(id, _)| id)
        .filter(|id| rest == id.as_str() || rest.starts_with(&format!("{id}-")))
        .max_by_key(|id| id.len())
        .map(|id| (fires, id.clone()))
}

fn findings(args: &[&str], cwd: &Path) -> (i32, Vec<String>, String) {
    let tools = validator_dir().parent().unwrap().join(".tools/bin");
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(env!("CARGO_BIN_EXE_nvcf-validate"))
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("NVCF_VALIDATE_NOW", "2026-11-29T12:00:00Z")
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("nvcf-validate-fixture-tests"),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let rules = serde_json::from_str::<serde_json::Value>(&stdout)
        .ok()
        .and_then(|v| v["findings"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|f| f["waived"].is_null())
        .map(|f| f["rule"].as_str().unwrap_or_default().to_string())
        .collect();
    (out.status.code().unwrap_or(-1), rules, format!("{stdout}{stderr}"))
}

#[test]
fn every_fixture_fires_or_stays_silent_and_every_rule_has_both() {
    let ids = rule_ids();
    let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();

    let fixtures = validator_dir().join("tests/fixtures");
    let mut files: Vec<PathBuf> = walk(&fixtures)
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|x| x == "yaml")
                && p.parent()
                    .and_then(|d| d.file_name())
                    .is_none_or(|n| n != "policy" && n != "certs")
        })
        .collect();
    files.sort();
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let Some((fires, rule)) = rule_of(&name, &ids) else {
            continue;
        };
        let policy = f.parent().unwrap().join("policy").join(f.file_name().unwrap());
        let empty = std::env::temp_dir().join("nvcf-validate-empty-policy.yaml");
        std::fs::write(&empty, "version: 1\n").unwrap();
        let policy = if policy.is_file() { policy } else { empty };
        let (code, rules, out) = findings(
            &[
                "check",
                "--manifests",
                f.to_str().unwrap(),
                "--policy",
                policy.to_str().unwrap(),
                "--format",
                "json",
            ],
            &validator_dir(),
        );
        record(&mut seen, &rule, fires);
        check_one(&mut failures, &f, fires, &rule, code, &rules, &out);
    }

    let stacks = validator_dir().join("tests/stacks");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&stacks)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    for d in dirs {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let Some((fires, rule)) = rule_of(&name, &ids) else {
            continue;
        };
        let state = ["helmfile.yaml", "helmfile.yaml.gotmpl"]
            .iter()
            .map(|n| d.join(n))
            .find(|p| p.is_file())
            .expect("stack has a helmfile.yaml");
        let (code, rules, out) = findings(
            &[
                "check",
                "--file",
                state.to_str().unwrap(),
                "--offline",
                "--format",
                "json",
            ],
            &d,
        );
        record(&mut seen, &rule, fires);
        check_one(&mut failures, &d, fires, &rule, code, &rules, &out);
    }

    for (id, family) in &ids {
        if family == "policy" {
            continue;
        }
        let (f, s) = seen.get(id).copied().unwrap_or_default();
        if f == 0 {
            failures.push(format!(
                "rule {id} has no firing fixture (tests/fixtures/*/fires-{id}-*.yaml or tests/stacks/fires-{id}-*/)"
            ));
        }
        if s == 0 {
            failures.push(format!("rule {id} has no silent near-miss fixture (silent-{id}-*)"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

fn record(seen: &mut BTreeMap<String, (usize, usize)>, rule: &str, fires: bool) {
    let e = seen.entry(rule.to_string()).or_default();
    if fires {
        e.0 += 1;
    } else {
        e.1 += 1;
    }
}

fn check_one(failures: &mut Vec<String>, path: &Path, fires: bool, rule: &str, code: i32, rules: &[String], out: &str) {
    let shown = path.strip_prefix(validator_dir()).unwrap_or(path).display();
    if code == 2 {
        failures.push(format!("{shown}: could not be validated (exit 2):\n{out}"));
    } else if fires && !rules.iter().any(|r| r == rule) {
        failures.push(format!("{shown}: expected `{rule}` to fire; got {rules:?}"));
    } else if !fires && rules.iter().any(|r| r == rule) {
        failures.push(format!("{shown}: expected `{rule}` to stay silent; it fired:\n{out}"));
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
