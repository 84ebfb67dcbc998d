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
/// object keeps so that the walk runs once per object (`crate::graph::Object::containers`), not
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

/// Where a CustomResourceDefinition's schema types a value as a container: paths of property
/// names, `*` standing for any item of an array or value of a map, for every version the CRD
/// serves (`spec.versions[].schema.openAPIV3Schema`, or the v1beta1 `spec.validation`). The walk
/// is bounded (`MAX_DEPTH`) and stops at a container.
pub fn schema_container_paths(crd: &Value) -> Vec<Vec<String>> {
    let mut roots: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    roots.extend(crd.pointer("/spec/validation/openAPIV3Schema"));
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut stack: Vec<(&Value, Vec<String>)> = roots.into_iter().map(|r| (r, Vec::new())).collect();
    while let Some((node, path)) = stack.pop() {
        if path.len() > MAX_DEPTH {
            continue;
        }
        if !path.is_empty() && is_container_schema(node) {
            if !out.contains(&path) {
                out.push(path);
            }
            continue;
        }
        for (k, child) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let mut p = path.clone();
            p.push(k.clone());
            stack.push((child, p));
        }
        for child in [node.get("items"), node.get("additionalProperties")]
            .into_iter()
            .flatten()
        {
            if child.is_object() {
                let mut p = path.clone();
                p.push("*".into());
                stack.push((child, p));
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
}
