//! `schema-valid` on the real stack: every environment rendered with the real helmfile/helm is
//! schema-valid (Kubernetes schemas + the test CRD subsets, every kind required to have a
//! schema), and a misspelt field in any rendered object of the local charts is caught, with its
//! path and the line that holds it.

mod support;

use nvcf_validate::yaml;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::run::{command, findings_of, finish};
use support::{repo, tool};

const ENVIRONMENTS: &[&str] = &["default", "split-cluster", "customer-issuer", "customer-secret"];
const REMOTE_SELECTOR: &str = "name!=cert-manager,name!=openbao";

fn render(env: &str) -> Vec<Value> {
    let out = Command::new(tool("helmfile"))
        .current_dir(repo())
        .args(["--file", "helmfile.yaml", "--environment", env, "--helm-binary"])
        .arg(tool("helm"))
        .args(["--no-color", "--selector", REMOTE_SELECTOR, "template", "--skip-deps"])
        .output()
        .expect("run helmfile");
    assert!(
        out.status.success(),
        "helmfile -e {env} template: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    yaml::documents(&String::from_utf8(out.stdout).unwrap())
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect()
}

fn policy(dir: &Path) -> PathBuf {
    let crds = repo().join("validator/tests/fixtures/schema/crds");
    let p = dir.join("policy.yaml");
    std::fs::write(
        &p,
        format!(
            "version: 1\nsettings:\n  crdFiles: [{}, {}]\n  requireSchemas: [\"*\"]\n",
            crds.join("cert-manager-subset.yaml").display(),
            crds.join("gateway-api-subset.yaml").display()
        ),
    )
    .unwrap();
    p
}

/// `check --manifests` of these objects; the schema-valid findings.
fn check(dir: &Path, objects: &[Value]) -> (Vec<Value>, String) {
    let text: String = objects
        .iter()
        .map(|o| format!("---\n{}", yaml::to_string(o).unwrap()))
        .collect();
    let file = dir.join("rendered.yaml");
    std::fs::write(&file, &text).unwrap();
    let r = finish(
        command(dir)
            .args(["check", "--manifests"])
            .arg(&file)
            .arg("--policy")
            .arg(policy(dir))
            .args(["--format", "json"]),
        None,
    );
    let report = r.report().unwrap_or_else(|| panic!("no JSON report: {}", r.stderr));
    let found = findings_of(&report, "schema-valid").into_iter().cloned().collect();
    (found, text)
}

/// Misspell one field of an object: the first key of `spec` (or `data`, or the first field after
/// the type and object metadata); returns the kubectl-style path of the misspelt field.
fn misspell(o: &mut Value) -> Option<String> {
    let (parent, prefix) = if o.get("spec").is_some_and(Value::is_object) {
        (o.get_mut("spec").unwrap().as_object_mut().unwrap(), "spec.")
    } else {
        (o.as_object_mut().unwrap(), "")
    };
    let key = parent
        .keys()
        .find(|k| !["apiVersion", "kind", "metadata"].contains(&k.as_str()))?
        .clone();
    let value = parent.shift_remove(&key).unwrap();
    let typo = format!("{}{}", &key[..key.len() - 1], "x");
    parent.insert(typo.clone(), value);
    Some(format!("{prefix}{typo}"))
}

#[test]
fn every_environment_is_schema_valid_and_each_misspelt_field_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for env in ENVIRONMENTS {
        let objects = render(env);
        let (found, _) = check(tmp.path(), &objects);
        if !found.is_empty() {
            problems.push(format!("{env}: the rendered stack is not schema-valid: {found:#?}"));
        }
        // Every object misspelt at once (schema validation judges each object alone): one run.
        let mut bad = objects.clone();
        let paths: Vec<Option<String>> = bad.iter_mut().map(misspell).collect();
        let (found, text) = check(tmp.path(), &bad);
        for (o, path) in objects.iter().zip(paths) {
            let Some(path) = path else {
                continue;
            };
            let kind = o["kind"].as_str().unwrap_or("?").to_string();
            let name = o["metadata"]["name"].as_str().unwrap_or("?").to_string();
            kinds.insert(kind.clone());
            let hit = found.iter().find(|f| {
                f["object"]["kind"] == kind.as_str()
                    && f["object"]["name"] == name.as_str()
                    && f["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with(&format!("{path}: unknown field")))
            });
            match hit {
                None => problems.push(format!("{env}: {kind} {name}: `{path}` not reported")),
                Some(f) => {
                    let line = f["source"]["line"].as_u64().unwrap_or(0) as usize;
                    let leaf = path.rsplit('.').next().unwrap();
                    let at = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
                    if !at.trim_start().starts_with(&format!("{leaf}:")) {
                        problems.push(format!("{env}: {kind} {name}: line {line} is `{at}`, not `{leaf}:`"));
                    }
                }
            }
        }
    }
    for k in [
        "Certificate",
        "ClusterIssuer",
        "ConfigMap",
        "Gateway",
        "GRPCRoute",
        "Job",
        "Service",
        "StatefulSet",
        "UDPRoute",
    ] {
        if !kinds.contains(k) {
            problems.push(format!("no rendered {k} was mutated; rendered kinds: {kinds:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn missing_schemas_fail_closed_unless_the_rule_is_off() {
    let tmp = tempfile::tempdir().unwrap();
    let file = repo().join("validator/tests/fixtures/schema/fires-schema-valid-service-port-protocl.yaml");
    let run = |extra: &[&str]| {
        finish(
            command(tmp.path())
                .env("NVCF_SCHEMAS", tmp.path().join("none"))
                .args(["check", "--manifests"])
                .arg(&file)
                .args(extra),
            None,
        )
    };
    let r = run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("no schemas for Kubernetes 1.35") && r.stderr.contains("./ci/setup"),
        "{}",
        r.stderr
    );
    let r = run(&["-A", "schema-valid"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn an_unknown_kubernetes_version_is_exit_2_naming_the_installed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("p.yaml"),
        "version: 1\nsettings: {kubernetesVersion: v1.12}\n",
    )
    .unwrap();
    let r = finish(
        command(tmp.path())
            .args(["check", "--manifests"])
            .arg(repo().join("validator/tests/fixtures/schema/silent-schema-valid-core-kinds.yaml"))
            .args(["--policy", "p.yaml"]),
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("Kubernetes 1.12") && r.stderr.contains("1.35"),
        "{}",
        r.stderr
    );
}
