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
