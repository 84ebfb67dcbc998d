//! Issue #30: the cluster refuses what the gate refuses. The ValidatingAdmissionPolicies
//! charts/nvcf-admission renders (with the real helm) are evaluated with the `cel` crate, as the API
//! server evaluates them, over every object of the gate's fixture corpus (tests/fixtures/*/), and
//! compared with the gate's own verdict on that object for the classes the policies cover:
//!
//! - `insecure-flag` on a pod-bearing object;
//! - `plaintext-endpoint` findings that an OpenBao/Vault address variable is http://;
//! - `certificate-server-auth` findings that a Certificate's usages lack server auth.
//!
//! The API server sees one object at a time, so the gate judges each object alone (a graph of that
//! object only); objects whose verdict changes when the rest of their fixture is present (an
//! `envFrom` ConfigMap, a signing role) are counted as cross-object, not admission-decidable. Objects
//! of kinds no policy matches (custom kinds with pod templates) are counted as not intercepted:
//! the Pods their controllers create are. Every other object must get the same verdict from both;
//! a disagreement fails with both verdicts. The same cases, exported as JSON, go through a second,
//! independent CEL engine (cel-python with google-re2, `ci/admission/oracle.py`), which must agree
//! with the `cel` crate on every case.

use crate::finding::Finding;
use crate::graph::{Graph, Object};
use crate::policy::Policy;
use crate::rules::{Rule, Scope};
use crate::testkit;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const CLASSES: &[&str] = &["insecure-flag", "plaintext-endpoint", "certificate-server-auth"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One rendered ValidatingAdmissionPolicy.
struct Vap {
    name: String,
    /// (group, version, resource) of its matchConstraints.
    rules: Vec<(String, String, String)>,
    variables: Vec<(String, String)>,
    validations: Vec<String>,
    programs: Programs,
}

struct Programs {
    variables: Vec<(String, Result<cel::Program, String>)>,
    validations: Vec<Result<cel::Program, String>>,
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn compile(expr: &str) -> Result<cel::Program, String> {
    cel::Program::compile(expr).map_err(|e| format!("does not compile: {e}"))
}

/// The chart's policies as the stack renders them (helm template, the environments' shape).
fn rendered_policies() -> Option<Vec<Vap>> {
    let helm = repo().join(".tools/bin/helm");
    if !testkit::require("helm in .tools/bin (./ci/setup)", helm.exists()) {
        return None;
    }
    let out = Command::new(&helm)
        .current_dir(repo())
        .args([
            "template",
            "nvcf-admission",
            "charts/nvcf-admission",
            "--namespace",
            "nvcf",
        ])
        .args(["--set", "namespaces={nvcf,openbao}"])
        .output()
        .expect("run helm template");
    assert!(
        out.status.success(),
        "helm template charts/nvcf-admission: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("helm prints UTF-8");
    Some(parse_vaps(&text))
}

/// The ValidatingAdmissionPolicies of a render, their programs compiled once.
fn parse_vaps(text: &str) -> Vec<Vap> {
    let docs = crate::yaml::documents(text).expect("the render parses");
    let mut vaps = Vec::new();
    for d in docs.into_iter().map(|d| d.value) {
        if d.get("kind").and_then(Value::as_str) != Some("ValidatingAdmissionPolicy") {
            continue;
        }
        let spec = &d["spec"];
        assert_eq!(spec["failurePolicy"], "Fail");
        let mut rules = Vec::new();
        for r in spec["matchConstraints"]["resourceRules"]
            .as_array()
            .expect("resourceRules")
        {
            for g in strs(r.get("apiGroups")) {
                for v in strs(r.get("apiVersions")) {
                    for res in strs(r.get("resources")) {
                        rules.push((g.clone(), v.clone(), res));
                    }
                }
            }
        }
        let variables: Vec<(String, String)> = spec["variables"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| {
                        (
                            v["name"].as_str().unwrap().to_string(),
                            v["expression"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let validations: Vec<String> = spec["validations"]
            .as_array()
            .expect("validations")
            .iter()
            .map(|v| v["expression"].as_str().unwrap().to_string())
            .collect();
        let programs = Programs {
            variables: variables.iter().map(|(n, e)| (n.clone(), compile(e))).collect(),
            validations: validations.iter().map(|e| compile(e)).collect(),
        };
        vaps.push(Vap {
            name: d["metadata"]["name"].as_str().unwrap().to_string(),
            rules,
            variables,
            validations,
            programs,
        });
    }
    assert_eq!(vaps.len(), 2, "charts/nvcf-admission renders two policies");
    vaps
}

/// The resource the API server admits an object as: the built-in kinds the policies name are
/// regular plurals (`StatefulSet` → `statefulsets`).
fn resource_of(obj: &Object) -> (String, String, String) {
    let (group, version) = match obj.api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), obj.api_version.clone()),
    };
    (group, version, format!("{}s", obj.kind.to_ascii_lowercase()))
}

fn matches(vap: &Vap, obj: &Object) -> bool {
    let (g, v, r) = resource_of(obj);
    vap.rules.iter().any(|(rg, rv, rr)| *rg == g && *rv == v && *rr == r)
}

/// The policy's verdict, as the API server reaches it with failurePolicy Fail: variables in
/// order (each sees `object` and the earlier ones); admitted only when every validation is true;
/// false, an error or a non-boolean denies. `Err` carries why it denied.
fn evaluate(vap: &Vap, object: &Value) -> Result<(), String> {
    let object = cel::to_value(object).map_err(|e| format!("object: {e}"))?;
    let mut vars: HashMap<String, cel::Value> = HashMap::new();
    for (name, prog) in &vap.programs.variables {
        let prog = prog.as_ref().map_err(|e| format!("variable {name} {e}"))?;
        let mut ctx = cel::Context::default();
        ctx.add_variable_from_value("object", object.clone());
        ctx.add_variable_from_value("variables", vars.clone());
        let v = prog.execute(&ctx).map_err(|e| format!("variable {name}: {e}"))?;
        vars.insert(name.clone(), v);
    }
    let mut ctx = cel::Context::default();
    ctx.add_variable_from_value("object", object);
    ctx.add_variable_from_value("variables", vars);
    for (i, prog) in vap.programs.validations.iter().enumerate() {
        let prog = prog.as_ref().map_err(|e| format!("validation {i} {e}"))?;
        match prog.execute(&ctx) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Err(format!("validation {i} is false")),
            Ok(other) => return Err(format!("validation {i} is not a boolean: {other:?}")),
            Err(e) => return Err(format!("validation {i}: {e}")),
        }
    }
    Ok(())
}

/// The gate's findings of the covered classes on `obj`, judged within `g`.
fn gate_findings(g: &Graph, policy: &Policy, rules: &[&Rule], obj: &Object) -> Vec<String> {
    let ctx = testkit::ctx(g, policy);
    let mut out = Vec::new();
    for r in rules {
        for f in (r.check)(&ctx) {
            if about(&f, obj) && in_class(&f) {
                out.push(format!("{}: {}", f.rule, f.message));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn about(f: &Finding, obj: &Object) -> bool {
    f.object
        .as_ref()
        .is_some_and(|o| o.kind == obj.kind && o.name == obj.name && o.namespace == obj.namespace)
}

/// The findings the policies stand in for (see the module text).
fn in_class(f: &Finding) -> bool {
    match f.rule {
        "insecure-flag" => true,
        "plaintext-endpoint" => f.message.contains("OpenBao/Vault is reached over plain HTTP"),
        "certificate-server-auth" => f.message.contains("without server auth"),
        _ => false,
    }
}

fn fixture_policy(dir: &Path, stem: &str) -> Policy {
    let p = dir.join("policy").join(format!("{stem}.yaml"));
    if p.exists() {
        Policy::load(&p, &format!("policy/{stem}.yaml"), crate::rules::family_of).expect("fixture policy parses")
    } else {
        testkit::default_fixture_policy()
    }
}

#[derive(Default)]
struct Tally {
    cases: Vec<Value>,
    denied: usize,
    admitted: usize,
    disagreeing: Vec<String>,
    cross_object: Vec<String>,
    not_intercepted: Vec<String>,
    /// Objects of kinds no policy matches whose Pods (from their pod templates) are denied.
    at_pods: Vec<String>,
}

/// One object a policy matches: its verdict against the gate's (`gate`: the gate's findings of
/// the covered classes on that object alone).
fn judge(t: &mut Tally, vaps: &[Vap], id: &str, obj: &Object, gate: &[String]) {
    let vap = vaps.iter().find(|v| matches(v, obj)).expect("a policy matches");
    let verdict = evaluate(vap, &obj.body);
    match &verdict {
        Ok(()) => t.admitted += 1,
        Err(_) => t.denied += 1,
    }
    if verdict.is_ok() != gate.is_empty() {
        t.disagreeing.push(format!(
            "{id}\n    gate: {}\n    policy {}: {}",
            if gate.is_empty() {
                "passes".to_string()
            } else {
                format!("refuses ({})", gate.join("; "))
            },
            vap.name,
            match &verdict {
                Ok(()) => "admits".to_string(),
                Err(why) => format!("denies ({why})"),
            }
        ));
    }
    t.cases.push(json!({
        "id": id,
        "policy": vap.name,
        "object": obj.body,
        "rust": if verdict.is_ok() { "admit" } else { "deny" },
    }));
}

#[test]
fn the_policies_deny_what_the_gate_refuses_over_the_fixture_corpus() {
    let Some(vaps) = rendered_policies() else { return };
    let rules: Vec<&Rule> = crate::rules::registry()
        .into_iter()
        .filter(|r| CLASSES.contains(&r.id) && r.scope != Scope::State)
        .collect();
    assert_eq!(rules.len(), CLASSES.len(), "every covered rule is registered");
    let mut t = Tally::default();
    let root = testkit::fixture_dir("");
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&root)
        .min_depth(2)
        .max_depth(2)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut fixtures = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        if crate::yaml::documents(&text).is_err() {
            continue; // a fixture of unreadable YAML: nothing reaches admission
        }
        fixtures += 1;
        let dir = path.parent().unwrap();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let family = dir.file_name().unwrap().to_string_lossy().to_string();
        let policy = fixture_policy(dir, &stem);
        let whole = testkit::with_externals(testkit::graph("fixture", &text), &policy);
        for obj in whole.objects.iter().filter(|o| !o.prov.external) {
            let id = format!(
                "{family}/{stem}: {} {}/{}",
                obj.kind,
                obj.namespace.as_deref().unwrap_or(""),
                obj.name
            );
            let alone = testkit::with_externals(Graph::new("fixture", vec![obj.clone()]), &policy);
            let gate = gate_findings(&alone, &policy, &rules, obj);
            if gate.is_empty() != gate_findings(&whole, &policy, &rules, obj).is_empty() {
                t.cross_object.push(id.clone());
            }
            if vaps.iter().any(|v| matches(v, obj)) {
                judge(&mut t, &vaps, &id, obj, &gate);
                continue;
            }
            // A kind no policy matches: its controller creates Pods from the pod templates it
            // holds, and those Pods are judged. Each template becomes the Pod it would be, and
            // the gate and the policies judge that Pod.
            let specs = crate::pod_shape::find(&obj.body).pod_specs;
            for (ptr, spec) in &specs {
                let pod = json!({
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": obj.name, "namespace": obj.namespace},
                    "spec": spec,
                });
                let pod = Object::from_value(pod, Some("nvcf"), obj.prov.clone()).expect("a Pod is an object");
                let alone = testkit::with_externals(Graph::new("fixture", vec![pod.clone()]), &policy);
                let pod_gate = gate_findings(&alone, &policy, &rules, &pod);
                judge(&mut t, &vaps, &format!("{id} (its Pod, from {ptr})"), &pod, &pod_gate);
                if !gate.is_empty() && !pod_gate.is_empty() {
                    t.at_pods.push(id.clone());
                }
            }
            if !gate.is_empty() && !t.at_pods.contains(&id) {
                t.not_intercepted.push(format!("{id}: {}", gate.join("; ")));
            }
        }
    }
    eprintln!(
        "admission differential: {fixtures} fixtures, {} objects a policy matches: denied {}, admitted {}, \
         disagreeing {}; cross-object (not admission-decidable) {}; refused by the gate, of a kind no policy \
         matches: {} denied at the Pods their templates make, {} not covered at admission",
        t.cases.len(),
        t.denied,
        t.admitted,
        t.disagreeing.len(),
        t.cross_object.len(),
        t.at_pods.len(),
        t.not_intercepted.len()
    );
    for n in &t.at_pods {
        eprintln!("  denied at its Pods: {n}");
    }
    for n in &t.not_intercepted {
        eprintln!("  not intercepted: {n}");
    }
    for n in &t.cross_object {
        eprintln!("  cross-object: {n}");
    }
    assert!(t.denied > 20 && t.admitted > 20, "the corpus exercises both verdicts");
    assert!(
        t.disagreeing.is_empty(),
        "the admission policies and the gate disagree on {} object(s):\n{}",
        t.disagreeing.len(),
        t.disagreeing.join("\n")
    );
    oracle(&vaps, &t.cases);
}

/// The second engine: cel-python (google-re2) on the same cases must reach the `cel` crate's
/// verdict on every one.
fn oracle(vaps: &[Vap], cases: &[Value]) {
    let pylib = repo().join(".tools/python");
    if !testkit::require("cel-python in .tools/python (./ci/setup)", pylib.join("celpy").exists()) {
        return;
    }
    let policies: serde_json::Map<String, Value> = vaps
        .iter()
        .map(|v| {
            (
                v.name.clone(),
                json!({
                    "variables": v.variables.iter().map(|(n, e)| json!({"name": n, "expression": e})).collect::<Vec<_>>(),
                    "validations": v.validations,
                }),
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission-cases.json");
    std::fs::write(
        &file,
        serde_json::to_string(&json!({"policies": policies, "cases": cases})).unwrap(),
    )
    .unwrap();
    let out = Command::new("python3")
        .env("PYTHONPATH", &pylib)
        .arg(repo().join("ci/admission/oracle.py"))
        .arg(&file)
        .output()
        .expect("run python3 ci/admission/oracle.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "cel-python disagrees with the cel crate:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("celpy: {} cases", cases.len())), "{stdout}");
}

/// The stack's own objects are admitted: every environment's render of the local releases (the
/// upstream cert-manager and OpenBao charts are not rendered offline; the gate reports them as
/// pinned, not rendered), judged by the policies that same render carries.
#[test]
fn the_stacks_own_objects_are_admitted_in_every_environment() {
    let tools = repo().join(".tools/bin");
    if !testkit::require(
        "helm and helmfile in .tools/bin (./ci/setup)",
        tools.join("helmfile").exists(),
    ) {
        return;
    }
    for env in ["default", "split-cluster", "customer-issuer", "customer-secret"] {
        let out = Command::new(tools.join("helmfile"))
            .current_dir(repo())
            .args(["--file", "helmfile.yaml", "--environment", env, "--helm-binary"])
            .arg(tools.join("helm"))
            .args([
                "--no-color",
                "--selector",
                "name!=cert-manager,name!=openbao",
                "template",
                "--skip-deps",
            ])
            .output()
            .expect("run helmfile template");
        assert!(
            out.status.success(),
            "helmfile -e {env} template: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("UTF-8 render");
        let vaps = parse_vaps(&text);
        let g = testkit::graph(env, &text);
        let mut judged = 0;
        for obj in &g.objects {
            for vap in vaps.iter().filter(|v| matches(v, obj)) {
                judged += 1;
                if let Err(why) = evaluate(vap, &obj.body) {
                    panic!(
                        "{env}: {} {} {}/{} is denied by {}: {why}",
                        obj.api_version,
                        obj.kind,
                        obj.namespace.as_deref().unwrap_or(""),
                        obj.name,
                        vap.name
                    );
                }
            }
        }
        // At least the router StatefulSet (customer-secret has no Certificate and no OpenBao).
        assert!(
            g.objects
                .iter()
                .any(|o| o.kind == "StatefulSet" && o.name == "request-router")
                && judged >= 1,
            "{env}: the router StatefulSet was not judged"
        );
        eprintln!("{env}: {judged} of the stack's objects judged, all admitted");
    }
}
