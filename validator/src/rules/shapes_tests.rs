//! Generated: every container rule judges containers wherever an object holds them, found by
//! shape, not by kind (`crate::pod_shape`). Holders (built-in workloads, Argo Rollouts and
//! Workflows, KEDA ScaledJob, Knative, Tekton steps and sidecars, an unknown CRD's deep pod
//! template) × rules (image-pinned, insecure-flag, plaintext-endpoint) × a firing and a silent
//! container: each firing one is reported by its rule, each silent one by none.

use crate::testkit::*;
use serde_json::{json, Value};

/// Objects holding `c` (a container, as JSON) in one place each: (what, YAML).
fn holders(c: &Value) -> Vec<(&'static str, Value)> {
    let pod = |c: &Value| json!({"containers": [c]});
    let meta = json!({"name": "w", "namespace": "nvcf"});
    vec![
        (
            "Deployment",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"selector": {"matchLabels": {"a": "w"}}, "template": {"metadata": {"labels": {"a": "w"}}, "spec": pod(c)}}}),
        ),
        (
            "Argo Rollout",
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": meta,
            "spec": {"template": {"spec": pod(c)}, "strategy": {"canary": {}}}}),
        ),
        (
            "KEDA ScaledJob",
            json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": meta,
            "spec": {"jobTargetRef": {"template": {"spec": pod(c)}}, "triggers": []}}),
        ),
        (
            "Knative Service",
            json!({"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": meta,
            "spec": {"template": {"spec": pod(c)}}}),
        ),
        (
            "Argo Workflow container",
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": meta,
            "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": c}]}}),
        ),
        (
            "Argo CronWorkflow script",
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "CronWorkflow", "metadata": meta,
            "spec": {"workflowSpec": {"templates": [{"name": "main", "script": {
                "image": c["image"], "command": ["sh"], "args": c["args"], "env": c["env"], "source": "true"}}]}}}),
        ),
        (
            "Tekton Task step",
            json!({"apiVersion": "tekton.dev/v1", "kind": "Task", "metadata": meta,
            "spec": {"steps": [c]}}),
        ),
        (
            "Tekton Task sidecar",
            json!({"apiVersion": "tekton.dev/v1", "kind": "Task", "metadata": meta,
            "spec": {"steps": [{"name": "ok", "image": "quay.io/example/tool:1.2.3", "command": ["true"]}], "sidecars": [c]}}),
        ),
        (
            "unknown CRD, deep init container",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta,
            "spec": {"runner": {"podTemplate": {"spec": {
                "initContainers": [c], "containers": [{"name": "ok", "image": "quay.io/example/tool:1.2.3"}]}}}}}),
        ),
    ]
}

/// (rule, firing container, silent container).
fn cases() -> Vec<(&'static str, Value, Value)> {
    let base = |image: &str, args: Value, env: Value| json!({"name": "c", "image": image, "command": ["tool"], "args": args, "env": env});
    let ok_env = json!([{"name": "BAO_ADDR", "value": "https://openbao.openbao.svc:8200"}]);
    vec![
        (
            "image-pinned",
            base("quay.io/example/tool:stable", json!(["run"]), ok_env.clone()),
            base("quay.io/example/tool:1.2.3", json!(["run"]), ok_env.clone()),
        ),
        (
            "insecure-flag",
            base(
                "quay.io/example/tool:1.2.3",
                json!(["--insecure-skip-tls-verify"]),
                ok_env.clone(),
            ),
            base(
                "quay.io/example/tool:1.2.3",
                json!(["--insecure-skip-tls-verify=false"]),
                ok_env.clone(),
            ),
        ),
        (
            "plaintext-endpoint",
            base(
                "quay.io/example/tool:1.2.3",
                json!(["run"]),
                json!([{"name": "BAO_ADDR", "value": "http://openbao.openbao.svc:8200"}]),
            ),
            base("quay.io/example/tool:1.2.3", json!(["run"]), ok_env.clone()),
        ),
    ]
}

#[test]
fn every_container_rule_judges_containers_wherever_they_are_held() {
    let policy = default_fixture_policy();
    let rules = crate::rules::registry();
    let ids = ["image-pinned", "insecure-flag", "plaintext-endpoint"];
    let mut checked = 0;
    for (rule, fires, silent) in cases() {
        for (c, want) in [(&fires, true), (&silent, false)] {
            for (holder, obj) in holders(c) {
                let yaml = serde_json::to_string(&obj).unwrap();
                let g = graph("e", &yaml);
                assert_eq!(g.objects.len(), 1, "{holder}");
                let found: Vec<_> = rules
                    .iter()
                    .filter(|r| ids.contains(&r.id))
                    .flat_map(|r| (r.check)(&ctx(&g, &policy)))
                    .filter(|f| ids.contains(&f.rule))
                    .collect();
                let mine = found.iter().filter(|f| f.rule == rule).count();
                if want {
                    assert!(mine >= 1, "{rule} in {holder}: not reported; got {found:#?}");
                } else {
                    assert!(found.is_empty(), "silent {rule} case in {holder}: {found:#?}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * 2 * 9);
}

/// Objects holding `c` in the second of several pod specs or container lists, after a harmless
/// one: (what, YAML documents). The CRD-typed holders come with their CustomResourceDefinition,
/// whose schema types the field as a container even when the value has no `image` (an operator's
/// container patch), which shape recognition alone does not take for a container.
fn second_holders(c: &Value) -> Vec<(&'static str, Vec<Value>)> {
    let ok = json!({"name": "ok", "image": "quay.io/example/tool:1.2.3", "command": ["true"]});
    let meta = json!({"name": "w", "namespace": "nvcf"});
    let mut patch = c.clone();
    patch.as_object_mut().unwrap().remove("image");
    let container_schema = json!({"type": "object", "properties": {
        "name": {"type": "string"}, "image": {"type": "string"},
        "args": {"type": "array", "items": {"type": "string"}},
        "command": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "monitors.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Monitor", "plural": "monitors"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "image": {"type": "string"},
                    "containers": {"type": "array", "items": container_schema},
                    "agents": {"type": "object", "additionalProperties": container_schema}}}}}}}]}});
    vec![
        (
            "Argo Workflow, second template",
            vec![
                json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": meta,
            "spec": {"entrypoint": "a", "templates": [{"name": "a", "container": ok}, {"name": "b", "container": c}]}}),
            ],
        ),
        (
            "Argo WorkflowTemplate, second template's pod spec patch holder",
            vec![
                json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTemplate", "metadata": meta,
            "spec": {"templates": [{"name": "a", "script": {"image": "quay.io/example/tool:1.2.3", "source": "true"}},
                {"name": "b", "containerSet": {"containers": [ok, c]}}]}}),
            ],
        ),
        (
            "Tekton Pipeline, second task's embedded steps",
            vec![
                json!({"apiVersion": "tekton.dev/v1", "kind": "Pipeline", "metadata": meta,
            "spec": {"tasks": [{"name": "a", "taskSpec": {"steps": [ok]}}, {"name": "b", "taskSpec": {"steps": [ok, c]}}]}}),
            ],
        ),
        (
            "unknown CRD, two pod templates",
            vec![json!({"apiVersion": "example.com/v1", "kind": "Pair", "metadata": meta,
            "spec": {"leader": {"template": {"spec": {"containers": [ok]}}},
                     "workers": {"template": {"spec": {"containers": [ok, c]}}}}})],
        ),
        (
            "CRD-typed container list, no image",
            vec![
                crd.clone(),
                json!({"apiVersion": "example.com/v1", "kind": "Monitor", "metadata": meta,
            "spec": {"image": "quay.io/example/tool:1.2.3", "containers": [{"name": "ok", "args": ["run"]}, patch]}}),
            ],
        ),
        (
            "CRD-typed container map, no image, schema after the object",
            vec![
                json!({"apiVersion": "example.com/v1", "kind": "Monitor", "metadata": meta,
            "spec": {"image": "quay.io/example/tool:1.2.3", "agents": {"a": {"args": ["run"]}, "b": patch}}}),
                crd,
            ],
        ),
    ]
}

#[test]
fn every_pod_spec_and_crd_typed_container_of_an_object_is_judged() {
    let policy = default_fixture_policy();
    let rules = crate::rules::registry();
    // image-pinned needs an image: the CRD-typed patches (no image) are judged by the others.
    let ids = ["insecure-flag", "plaintext-endpoint"];
    let mut checked = 0;
    for (rule, fires, silent) in cases().into_iter().filter(|(r, ..)| ids.contains(r)) {
        for (c, want) in [(&fires, true), (&silent, false)] {
            for (holder, docs) in second_holders(c) {
                let yaml: Vec<String> = docs.iter().map(|d| serde_json::to_string(d).unwrap()).collect();
                let g = graph("e", &yaml.join("\n---\n"));
                let found: Vec<_> = rules
                    .iter()
                    .filter(|r| ids.contains(&r.id))
                    .flat_map(|r| (r.check)(&ctx(&g, &policy)))
                    .filter(|f| {
                        ids.contains(&f.rule) && f.object.as_ref().is_some_and(|o| o.kind != "CustomResourceDefinition")
                    })
                    .collect();
                let mine = found.iter().filter(|f| f.rule == rule).count();
                if want {
                    assert!(mine >= 1, "{rule} in {holder}: not reported; got {found:#?}");
                } else {
                    assert!(found.is_empty(), "silent {rule} case in {holder}: {found:#?}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 2 * 6);
}

#[test]
fn a_containers_volumes_are_its_own_pod_specs() {
    // Two pod templates; the second's container reads its token from a Secret volume only the
    // second pod spec declares: vault-token-static finds the Secret through the right pod spec.
    let yaml = r#"
apiVersion: example.com/v1
kind: Pair
metadata: {name: w, namespace: nvcf}
spec:
  leader:
    template:
      spec:
        containers: [{name: ok, image: "quay.io/example/tool:1.2.3", command: ["true"]}]
        volumes: [{name: token, configMap: {name: not-a-secret}}]
  workers:
    template:
      spec:
        containers:
          - name: c
            image: quay.io/openbao/openbao:2.4.1
            command: [sh, -c, "bao login $(cat /vault/token/t)"]
            volumeMounts: [{name: token, mountPath: /vault/token}]
        volumes: [{name: token, secret: {secretName: root-token}}]
"#;
    let g = graph("e", yaml);
    let obj = &g.objects[0];
    let specs = obj.pod_specs();
    assert_eq!(specs.len(), 2);
    let (_, c) = obj.containers().into_iter().find(|(_, c)| c["name"] == "c").unwrap();
    assert!(std::ptr::eq(obj.pod_spec_of(c).unwrap(), specs[1]));
    let policy = default_fixture_policy();
    let rule = crate::rules::registry()
        .into_iter()
        .find(|r| r.id == "vault-token-static")
        .unwrap();
    let found = (rule.check)(&ctx(&g, &policy));
    assert!(
        found.iter().any(|f| f.message.contains("Secret `root-token`")),
        "{found:#?}"
    );
}
