//! A container's environment as the insecure rules judge it: literal `env`, `envFrom` and
//! `configMapKeyRef` from rendered ConfigMaps, and the downward API's `fieldRef` to the pod
//! template (`router::Pod`).

use super::*;

/// One environment variable of a container.
pub(super) struct EnvVar {
    pub name: String,
    pub value: Value,
    /// The ConfigMap it was resolved from (`envFrom`, `configMapKeyRef`).
    pub from: Option<String>,
    /// What to look for in the template to point at the line (the variable, or the `envFrom`
    /// ConfigMap's name).
    pub needle: String,
}

/// A container's environment: literal `env`, and `envFrom` ConfigMaps and `configMapKeyRef`s
/// resolved in the graph.
pub(super) fn env_of(g: &Graph, obj: &Object, c: &Value) -> Vec<EnvVar> {
    let ns = obj.namespace.as_deref();
    let cm_data = |name: &str| {
        g.get("", "ConfigMap", ns, name)
            .and_then(|cm| cm.at("/data"))
            .and_then(Value::as_object)
    };
    let mut out = Vec::new();
    for from in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = from.pointer("/configMapRef/name").and_then(Value::as_str) else {
            continue;
        };
        let prefix = from.get("prefix").and_then(Value::as_str).unwrap_or_default();
        for (k, v) in cm_data(name).into_iter().flatten() {
            out.push(EnvVar {
                name: format!("{prefix}{k}"),
                value: v.clone(),
                from: Some(format!("ConfigMap {name}")),
                needle: name.to_string(),
            });
        }
    }
    for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        if let Some(v) = e.get("value") {
            out.push(EnvVar {
                name: name.to_string(),
                value: v.clone(),
                from: None,
                needle: name.to_string(),
            });
        } else if let Some(r) = e.pointer("/valueFrom/configMapKeyRef") {
            let (Some(cm), Some(key)) = (
                r.get("name").and_then(Value::as_str),
                r.get("key").and_then(Value::as_str),
            ) else {
                continue;
            };
            if let Some(v) = cm_data(cm).and_then(|d| d.get(key)) {
                out.push(EnvVar {
                    name: name.to_string(),
                    value: v.clone(),
                    from: Some(format!("ConfigMap {cm}")),
                    needle: name.to_string(),
                });
            }
        } else if let Some(field) = e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str) {
            // The downward API: a label, an annotation or the service account of the pod template.
            if let Some(v) = router::Pod::of(obj).field(field) {
                out.push(EnvVar {
                    name: name.to_string(),
                    value: Value::String(v),
                    from: Some(format!("the pod's `{field}`")),
                    needle: name.to_string(),
                });
            }
        }
    }
    out
}
