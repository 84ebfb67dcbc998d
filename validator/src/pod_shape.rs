//! Pod specs and containers found by shape, not by kind. Any object — Argo Workflows and Rollouts,
//! KEDA ScaledJobs, Knative Services, Tekton Tasks, a CRD nobody here has heard of — that holds a
//! pod spec (an object whose `containers` list holds containers), a pod template (such a pod spec
//! under `spec`), or a container-shaped value outside a pod spec (Argo's `container`/`script`,
//! Tekton's `steps` and `sidecars`) runs containers, and every container rule judges them.
//!
//! A container is an object with a string `image` and at least one other field of the core
//! Container type (`name`, `command`, `args`, `env`, `envFrom`, `ports`, `volumeMounts`,
//! `workingDir`, `resources`, probes) or Argo's `source`: the shape, whatever the key or list
//! that holds it. The walk is iterative and bounded (`MAX_DEPTH`), so hostile nesting cannot
//! exhaust the stack; it does not descend into a pod spec or container once found.

use serde_json::Value;

/// Deepest level of an object's body searched for pod specs and containers.
pub const MAX_DEPTH: usize = 64;

/// The fields of the core v1 Container (besides `image`) one of which a container-shaped value
/// has; `source` is Argo Workflows' script template. Source: the Kubernetes API reference,
/// Container v1 core; argoproj.io/v1alpha1 ScriptTemplate.
const CONTAINER_FIELDS: &[&str] = &[
    "name",
    "command",
    "args",
    "env",
    "envFrom",
    "ports",
    "volumeMounts",
    "volumeDevices",
    "workingDir",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "securityContext",
    "imagePullPolicy",
    "source",
];

/// The container lists of a pod spec, in the order the kubelet starts them.
pub const POD_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// Whether `v` has the shape of a container.
pub fn is_container(v: &Value) -> bool {
    let Some(m) = v.as_object() else { return false };
    m.get("image").is_some_and(Value::is_string) && CONTAINER_FIELDS.iter().any(|f| m.contains_key(*f))
}

/// Whether `v` has the shape of a pod spec: a `containers` list holding at least one container.
pub fn is_pod_spec(v: &Value) -> bool {
    v.get("containers")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(is_container))
}

/// The name a container is listed under, for messages: the pod spec's list names as they are,
/// other holders (`steps`, `sidecars`, Argo's `container`/`script`) by their key, anything else
/// `containers`.
pub fn label(key: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "initContainers",
        "containers",
        "ephemeralContainers",
        "sidecars",
        "steps",
        "container",
        "script",
        "initContainer",
        "sidecar",
        "step",
    ];
    KNOWN.iter().find(|k| **k == key).copied().unwrap_or("containers")
}

/// What one walk of a body finds.
#[derive(Debug, Default)]
pub struct Found<'a> {
    /// Pod specs with their JSON pointer.
    pub pod_specs: Vec<(String, &'a Value)>,
    /// Containers with the list (or key) they are held by.
    pub containers: Vec<(&'static str, &'a Value)>,
}

/// Where one walk of a body found pod specs and containers, as JSON pointers into it: what an
/// object keeps so that the walk runs once per object (`graph::Object::containers`, a layer above), not
/// once per rule that asks.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// Pod specs, in document order.
    pub pod_specs: Vec<String>,
    /// Containers with the list (or key) they are held by, in document order.
    pub containers: Vec<(String, &'static str)>,
}

impl Places {
    /// The values at these places in `body`, the body they were found in.
    pub fn resolve<'a>(&self, body: &'a Value) -> Found<'a> {
        Found {
            pod_specs: self
                .pod_specs
                .iter()
                .filter_map(|p| body.pointer(p).map(|v| (p.clone(), v)))
                .collect(),
            containers: self
                .containers
                .iter()
                .filter_map(|(p, label)| body.pointer(p).map(|v| (*label, v)))
                .collect(),
        }
    }
}

/// Every pod spec and container in `body`, in document order.
pub fn find(body: &Value) -> Found<'_> {
    places(body).resolve(body)
}

/// Where [`find`] finds them: one bounded walk of `body`.
pub fn places(body: &Value) -> Places {
    let mut out = Places::default();
    // (value, pointer, key or list name holding it, depth); pushed in reverse to keep order.
    let mut stack: Vec<(&Value, String, &str, usize)> = vec![(body, String::new(), "", 0)];
    while let Some((v, ptr, key, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            continue;
        }
        match v {
            Value::Object(m) => {
                if is_pod_spec(v) {
                    for list in POD_LISTS {
                        let items = m.get(list).and_then(Value::as_array).into_iter().flatten();
                        for i in 0..items.count() {
                            out.containers.push((format!("{ptr}/{list}/{i}"), list));
                        }
                    }
                    out.pod_specs.push(ptr);
                    continue;
                }
                if is_container(v) {
                    out.containers.push((ptr, label(key)));
                    continue;
                }
                for (k, child) in m.iter().rev() {
                    if child.is_object() || child.is_array() {
                        stack.push((child, format!("{ptr}/{}", escape(k)), k.as_str(), depth + 1));
                    }
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate().rev() {
                    if child.is_object() || child.is_array() {
                        stack.push((child, format!("{ptr}/{i}"), key, depth + 1));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether a schema node of a CustomResourceDefinition describes a container: an object whose
/// properties include `image` and one of `command`, `args`, `env` (the core Container's, which
/// operators embed whole or in part). Source: Kubernetes API reference, Container v1 core.
fn is_container_schema(node: &Value) -> bool {
    node.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("image") && ["command", "args", "env"].iter().any(|k| p.contains_key(*k)))
}

/// Phrases with which a CustomResourceDefinition's schema says the entries of a container list
/// are merged by name into containers its operator generates: patches, not containers of their
/// own. Sources: prometheus-operator API (Prometheus, PrometheusAgent, Alertmanager, ThanosRuler
/// `containers` and `initContainers`: "Containers described here modify an operator generated
/// container if they share the same name and modifications are done via a strategic merge
/// patch"); grafana-agent operator (GrafanaAgent `containers`, the same words).
const MERGED_BY_NAME: &[&str] = &["strategic merge patch"];

/// Whether the schema node of a container list says, in its description ([`MERGED_BY_NAME`]),
/// that its entries are merged by name into the containers the operator generates. (A CRD schema
/// cannot carry Kubernetes' strategic merge markers, `x-kubernetes-patch-merge-key`: the API
/// server refuses them, so the description is where a CRD says it.)
fn merged_by_name(list: &Value) -> bool {
    list.get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| MERGED_BY_NAME.iter().any(|p| d.to_ascii_lowercase().contains(p)))
}

/// Where a CustomResourceDefinition's schema types a value as a container: paths of property
/// names, `*` standing for any item of an array or value of a map, for every version the CRD
/// serves (`spec.versions[].schema.openAPIV3Schema`, or the v1beta1 `spec.validation`). The walk
/// is bounded (`MAX_DEPTH`) and stops at a container.
pub fn schema_container_paths(crd: &Value) -> Vec<Vec<String>> {
    schema_walk(crd).into_iter().map(|(p, _)| p).collect()
}

/// The [`schema_container_paths`] whose list the schema says holds patches merged by name into
/// the operator's own containers ([`merged_by_name`]).
pub fn schema_patch_paths(crd: &Value) -> Vec<Vec<String>> {
    schema_walk(crd)
        .into_iter()
        .filter(|(_, m)| *m)
        .map(|(p, _)| p)
        .collect()
}

/// (container path, whether its list is [`merged_by_name`]), sorted.
fn schema_walk(crd: &Value) -> Vec<(Vec<String>, bool)> {
    let mut roots: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    roots.extend(crd.pointer("/spec/validation/openAPIV3Schema"));
    let mut out: Vec<(Vec<String>, bool)> = Vec::new();
    // (node, path, whether the array holding it says merged by name)
    let mut stack: Vec<(&Value, Vec<String>, bool)> = roots.into_iter().map(|r| (r, Vec::new(), false)).collect();
    while let Some((node, path, merged)) = stack.pop() {
        if path.len() > MAX_DEPTH {
            continue;
        }
        if !path.is_empty() && is_container_schema(node) {
            match out.iter_mut().find(|(p, _)| *p == path) {
                Some((_, m)) => *m |= merged,
                None => out.push((path, merged)),
            }
            continue;
        }
        for (k, child) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let mut p = path.clone();
            p.push(k.clone());
            stack.push((child, p, false));
        }
        for (child, m) in [
            (node.get("items"), merged_by_name(node)),
            (node.get("additionalProperties"), false),
        ] {
            if let Some(child) = child.filter(|c| c.is_object()) {
                let mut p = path.clone();
                p.push("*".into());
                stack.push((child, p, m));
            }
        }
    }
    out.sort();
    out
}

/// The values of `body` at schema paths ([`schema_container_paths`]): (JSON pointer, the list or
/// key that holds it, as [`label`] names it). Only objects count; the walk is bounded by the
/// paths themselves.
pub fn at_schema_paths(body: &Value, paths: &[Vec<String>]) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for path in paths {
        let mut here: Vec<(String, &Value)> = vec![(String::new(), body)];
        for seg in path {
            let mut next = Vec::new();
            for (ptr, v) in here {
                if seg == "*" {
                    match v {
                        Value::Array(items) => {
                            next.extend(items.iter().enumerate().map(|(i, c)| (format!("{ptr}/{i}"), c)))
                        }
                        Value::Object(m) => next.extend(m.iter().map(|(k, c)| (format!("{ptr}/{}", escape(k)), c))),
                        _ => {}
                    }
                } else if let Some(c) = v.get(seg.as_str()) {
                    next.push((format!("{ptr}/{}", escape(seg)), c));
                }
            }
            here = next;
        }
        let key = path.iter().rev().find(|s| *s != "*").map(String::as_str).unwrap_or("");
        out.extend(
            here.into_iter()
                .filter(|(_, v)| v.is_object())
                .map(|(p, _)| (p, label(key))),
        );
    }
    out
}

/// Fields that hold a pod spec patch as text (YAML or JSON, merged into the pod spec the kind's
/// controller builds, containers by name): one the gate cannot read is a finding of the rules
/// that judge what it may set. Other strings are read as patches by their shape alone
/// ([`spec_patches`]). Source: Argo Workflows field reference, `WorkflowSpec.podSpecPatch` and
/// `Template.podSpecPatch` (argoproj.io/v1alpha1 Workflow, WorkflowTemplate,
/// ClusterWorkflowTemplate, CronWorkflow `spec.workflowSpec`).
pub const POD_SPEC_PATCH_FIELDS: &[&str] = &["podSpecPatch"];

/// What messages call a container of a pod spec patch.
pub const PATCH_LABEL: &str = "podSpecPatch";

/// Longest patch text read (a pod spec patch is a few lines; more is refused, not read).
const MAX_PATCH: usize = 256 * 1024;

/// A pod spec patch an object holds as text.
#[derive(Debug, Clone)]
pub struct SpecPatch {
    /// JSON pointer of the string.
    pub ptr: String,
    /// The patch (a mapping), or why it cannot be read.
    pub read: Result<Value, String>,
}

/// Whether `v` has the shape of a pod spec patch: a mapping with a pod spec container list
/// (`containers`, `initContainers`, `ephemeralContainers`) of mappings, each naming its container
/// (a patch merges containers by name).
fn is_spec_patch(v: &Value) -> bool {
    let Some(m) = v.as_object() else { return false };
    let lists: Vec<&Vec<Value>> = POD_LISTS
        .iter()
        .filter_map(|l| m.get(*l).and_then(Value::as_array))
        .collect();
    !lists.is_empty()
        && lists.iter().any(|l| !l.is_empty())
        && lists
            .iter()
            .flat_map(|l| l.iter())
            .all(|c| c.get("name").is_some_and(Value::is_string))
}

/// Read patch text as the controller does after filling in its parameters: YAML or JSON. Argo's
/// `{{…}}` expressions are kept as text where they stand (a value the workflow fills in); a
/// patch that is one expression is filled in only at run time and cannot be read.
fn read_patch(text: &str) -> Result<Value, String> {
    if text.len() > MAX_PATCH {
        return Err(format!("it is longer than {MAX_PATCH} bytes"));
    }
    let mut exprs: Vec<&str> = Vec::new();
    let mut masked = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        let Some(j) = rest[i..].find("}}") else { break };
        masked.push_str(&rest[..i]);
        masked.push_str(&format!("nvcfexpr{}x", exprs.len()));
        exprs.push(&rest[i..i + j + 2]);
        rest = &rest[i + j + 2..];
    }
    masked.push_str(rest);
    if exprs.len() == 1 && text.trim() == exprs[0] {
        return Err(format!(
            "it is the expression `{}`, filled in only when the workflow runs",
            exprs[0]
        ));
    }
    let value = crate::yaml::value(&masked).map_err(|e| format!("it is neither YAML nor JSON ({e})"))?;
    if !value.is_object() {
        return Err("it is not a mapping of pod spec fields".into());
    }
    fn unmask(v: &mut Value, exprs: &[&str]) {
        match v {
            Value::String(s) if s.contains("nvcfexpr") => {
                for (i, e) in exprs.iter().enumerate().rev() {
                    *s = s.replace(&format!("nvcfexpr{i}x"), e);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|x| unmask(x, exprs)),
            Value::Object(m) => {
                let old = std::mem::take(m);
                for (k, mut x) in old {
                    unmask(&mut x, exprs);
                    let mut key = Value::String(k);
                    unmask(&mut key, exprs);
                    m.insert(key.as_str().unwrap_or_default().to_string(), x);
                }
            }
            _ => {}
        }
    }
    let mut value = value;
    if !exprs.is_empty() {
        unmask(&mut value, &exprs);
    }
    Ok(value)
}

/// Every pod spec patch `body` holds as text, outside `metadata`: a string at a field of
/// [`POD_SPEC_PATCH_FIELDS`] (read, or why not: empty text is no patch), and any other string
/// that reads as a mapping of pod spec patch shape (containers by name). The walk is iterative
/// and bounded (`MAX_DEPTH`).
pub fn spec_patches(body: &Value) -> Vec<SpecPatch> {
    let mut out = Vec::new();
    let mut stack: Vec<(&Value, String, &str, usize)> = vec![(body, String::new(), "", 0)];
    while let Some((v, ptr, key, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            continue;
        }
        match v {
            Value::String(s) => {
                let named = POD_SPEC_PATCH_FIELDS.contains(&key);
                if s.trim().is_empty() || !(named || s.contains("ontainers")) {
                    continue;
                }
                let read = read_patch(s);
                if named || read.as_ref().is_ok_and(is_spec_patch) {
                    out.push(SpecPatch { ptr, read });
                }
            }
            Value::Object(m) => {
                for (k, child) in m.iter().rev() {
                    if depth == 0 && k == "metadata" {
                        continue;
                    }
                    stack.push((child, format!("{ptr}/{}", escape(k)), k.as_str(), depth + 1));
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate().rev() {
                    stack.push((child, format!("{ptr}/{i}"), key, depth + 1));
                }
            }
            _ => {}
        }
    }
    out
}

fn escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_not_kinds() {
        let c = json!({"name": "c", "image": "x:1.0.0"});
        assert!(is_container(&c));
        assert!(
            is_container(&json!({"image": "x:1.0.0", "source": "echo"})),
            "an Argo script"
        );
        assert!(
            !is_container(&json!({"image": "x:1.0.0"})),
            "an image alone is a setting, not a container"
        );
        assert!(
            !is_container(&json!({"name": "c", "image": {"repository": "x", "tag": "1"}})),
            "values, not a container"
        );
        let body = json!({"spec": {"templates": [
            {"name": "a", "container": {"image": "x:1", "command": ["run"]}},
            {"name": "b", "script": {"image": "y:1", "source": "echo"}},
            {"name": "c", "podSpecPatch": "x"},
            {"name": "d", "steps": [[{"name": "s", "template": "a"}]]},
        ], "deep": {"x": {"jobTemplate": {"template": {"spec": {"initContainers": [c.clone()], "containers": [c.clone()]}}}}}}});
        let f = find(&body);
        let labels: Vec<_> = f.containers.iter().map(|(l, _)| *l).collect();
        assert_eq!(labels, ["container", "script", "initContainers", "containers"]);
        assert_eq!(f.pod_specs.len(), 1);
        assert_eq!(f.pod_specs[0].0, "/spec/deep/x/jobTemplate/template/spec");
        // The walk is bounded: a pod spec nested deeper than MAX_DEPTH is not searched for.
        let mut deep = json!({"containers": [c]});
        for _ in 0..200 {
            deep = json!({"a": [deep]});
        }
        assert!(find(&deep).pod_specs.is_empty());
    }

    #[test]
    fn pod_spec_patches_by_field_and_by_shape() {
        let body = json!({
            "metadata": {"annotations": {"a": "{\"containers\":[{\"name\":\"x\"}]}"}},
            "spec": {
                "podSpecPatch": "{\"containers\":[{\"name\":\"main\",\"args\":[\"{{inputs.parameters.a}}\"]}]}",
                "templates": [
                    {"podSpecPatch": "containers:\n- name: main\n  resources: {limits: {memory: {{inputs.parameters.mem}}}}\n"},
                    {"podSpecPatch": "{{inputs.parameters.patch}}"},
                    {"podSpecPatch": "  "},
                    {"podSpecPatch": "containers: [unclosed"},
                    {"podSpecPatch": "- a list"},
                ],
                "other": "containers:\n  - name: agent\n    args: [x]\n",
                "prose": "see the containers: docs",
                "unnamed": "containers: [{args: [x]}]",
            }
        });
        let found: std::collections::BTreeMap<String, Result<Value, String>> =
            spec_patches(&body).into_iter().map(|p| (p.ptr, p.read)).collect();
        let ptrs: Vec<&str> = found.keys().map(String::as_str).collect();
        // By the field's name (read or not, blank skipped) and by shape (containers by name);
        // prose, entries without names and `metadata` are not patches.
        assert_eq!(
            ptrs,
            [
                "/spec/other",
                "/spec/podSpecPatch",
                "/spec/templates/0/podSpecPatch",
                "/spec/templates/1/podSpecPatch",
                "/spec/templates/3/podSpecPatch",
                "/spec/templates/4/podSpecPatch",
            ]
        );
        let ok = |p: &str| found[p].as_ref().expect(p);
        // Argo expressions stay where they stand, as text.
        assert_eq!(
            ok("/spec/podSpecPatch")["containers"][0]["args"][0],
            "{{inputs.parameters.a}}"
        );
        assert_eq!(
            ok("/spec/templates/0/podSpecPatch")["containers"][0]["resources"]["limits"]["memory"],
            "{{inputs.parameters.mem}}"
        );
        assert_eq!(ok("/spec/other")["containers"][0]["name"], "agent");
        let why = |p: &str| found[p].as_ref().expect_err(p).clone();
        assert!(why("/spec/templates/1/podSpecPatch").contains("filled in only when the workflow runs"));
        assert!(why("/spec/templates/3/podSpecPatch").contains("neither YAML nor JSON"));
        assert!(why("/spec/templates/4/podSpecPatch").contains("not a mapping"));
    }

    #[test]
    fn a_schema_says_which_container_lists_are_merged_by_name() {
        let item = json!({"type": "object", "properties": {"name": {}, "image": {}, "args": {}}});
        let crd = json!({"spec": {"versions": [{"schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": {
            "said": {"type": "array", "items": item,
                "description": "Containers described here modify an operator generated container if they share the same name and modifications are done via a Strategic Merge Patch."},
            "merge": {"type": "array", "items": item, "description": "Containers merged into the pod."},
            "plain": {"type": "array", "items": item, "description": "Containers to run."},
        }}}}}}]}});
        let p = |v: Vec<Vec<String>>| v.into_iter().map(|p| p.join(".")).collect::<Vec<_>>();
        assert_eq!(
            p(schema_container_paths(&crd)),
            ["spec.merge.*", "spec.plain.*", "spec.said.*"]
        );
        assert_eq!(p(schema_patch_paths(&crd)), ["spec.said.*"]);
    }
}
