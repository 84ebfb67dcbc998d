//! CustomResourceDefinitions → JSON Schema (draft 2020-12) with the API server's strictness.
//!
//! A CRD's `openAPIV3Schema` is OpenAPI 3.0 with Kubernetes extensions. The conversion keeps
//! what the API server checks on create/apply and `kubectl apply --validate=strict` reports:
//! - unknown fields: an object with `properties` gets `additionalProperties: false` unless it
//!   says `x-kubernetes-preserve-unknown-fields: true` or has its own `additionalProperties`;
//! - `x-kubernetes-int-or-string` becomes integer-or-string; `x-kubernetes-embedded-resource`
//!   allows `apiVersion`, `kind` and `metadata`;
//! - OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` become 2020-12 numbers;
//! - `null` is accepted wherever a type is declared (the API server prunes nulls of non-nullable
//!   fields before validating, as it does for built-in kinds);
//! - the root's `metadata` is checked against the Kubernetes `ObjectMeta` schema.
//!
//! Not converted (not checked): CEL rules (`x-kubernetes-validations`), list-map key uniqueness
//! (`x-kubernetes-list-type: map`) and `format`s.

use serde_json::{json, Map, Value};

/// One served version of one CRD.
#[derive(Debug, Clone)]
pub struct CrdVersion {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The converted schema (JSON Schema 2020-12), ready to compile.
    pub schema: Value,
    /// Where it came from: `CRD <name> (rendered)` or `<file> (CRD <name>)`.
    pub origin: String,
}

/// The served versions of a CRD object (`apiextensions.k8s.io/v1`). `object_meta` is the URI of
/// the Kubernetes `ObjectMeta` schema. Returns an error text for a CRD that is not usable.
pub fn versions(crd: &Value, origin: &str, object_meta: &str) -> Result<Vec<CrdVersion>, String> {
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?");
    let spec = crd.get("spec").ok_or_else(|| format!("CRD {name}: no spec"))?;
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("CRD {name}: no spec.group"))?;
    let kind = spec
        .pointer("/names/kind")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("CRD {name}: no spec.names.kind"))?;
    let mut out = Vec::new();
    for v in spec.get("versions").and_then(Value::as_array).into_iter().flatten() {
        let Some(version) = v.get("name").and_then(Value::as_str) else {
            continue;
        };
        if v.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        // A version without a schema accepts anything: no entry, so it shows as uncovered.
        let Some(s) = v.pointer("/schema/openAPIV3Schema") else {
            continue;
        };
        out.push(CrdVersion {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            schema: root(s, object_meta),
            origin: origin.to_string(),
        });
    }
    Ok(out)
}

fn root(s: &Value, object_meta: &str) -> Value {
    let mut v = convert(s);
    if let Some(o) = v.as_object_mut() {
        o.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
        if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("metadata".into(), json!({ "$ref": object_meta }));
            for k in ["apiVersion", "kind"] {
                props.entry(k).or_insert_with(|| json!({"type": "string"}));
            }
        }
    }
    v
}

/// Convert one node (recursively).
fn convert(s: &Value) -> Value {
    let Some(src) = s.as_object() else {
        return s.clone();
    };
    let mut o = Map::new();
    for (k, v) in src {
        match k.as_str() {
            "properties" | "patternProperties" => {
                let props = v
                    .as_object()
                    .map(|m| m.iter().map(|(pk, pv)| (pk.clone(), convert(pv))).collect())
                    .unwrap_or_default();
                o.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" | "not" if v.is_object() => {
                o.insert(k.clone(), convert(v));
            }
            "allOf" | "anyOf" | "oneOf" => {
                let list = v
                    .as_array()
                    .map(|a| a.iter().map(convert).collect())
                    .unwrap_or_default();
                o.insert(k.clone(), Value::Array(list));
            }
            "exclusiveMinimum" | "exclusiveMaximum" if v.is_boolean() => {}
            "nullable" | "$schema" | "$ref" | "$id" => {}
            _ => {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    for (excl, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if src.get(excl) == Some(&Value::Bool(true)) {
            if let Some(b) = o.remove(bound) {
                o.insert(excl.into(), b);
            }
        }
    }
    let flag = |k: &str| src.get(k).and_then(Value::as_bool) == Some(true);
    if flag("x-kubernetes-int-or-string") && !o.contains_key("type") && !o.contains_key("anyOf") {
        o.insert("type".into(), json!(["integer", "string"]));
    }
    if flag("x-kubernetes-embedded-resource") {
        if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
            for k in ["apiVersion", "kind"] {
                props.entry(k).or_insert_with(|| json!({"type": "string"}));
            }
            props.entry("metadata").or_insert_with(|| json!({"type": "object"}));
        }
    }
    if o.contains_key("properties")
        && !o.contains_key("additionalProperties")
        && !flag("x-kubernetes-preserve-unknown-fields")
    {
        o.insert("additionalProperties".into(), Value::Bool(false));
    }
    // Accept null wherever a type is declared.
    match o.get_mut("type") {
        Some(Value::String(t)) => {
            let t = t.clone();
            o.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) if !ts.iter().any(|t| t == "null") => ts.push(json!("null")),
        _ => {}
    }
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictness_and_openapi_quirks() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget"}, "versions": [
                {"name": "v1", "served": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "port": {"x-kubernetes-int-or-string": true},
                        "size": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }}
                }}}},
                {"name": "v0", "served": false, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ]}
        });
        let vs = versions(&crd, "test", "#/$defs/meta").unwrap();
        assert_eq!(vs.len(), 1, "unserved versions are skipped");
        let s = &vs[0].schema;
        assert_eq!(s["properties"]["spec"]["additionalProperties"], json!(false));
        assert_eq!(
            s["properties"]["spec"]["properties"]["port"]["type"],
            json!(["integer", "string", "null"])
        );
        assert_eq!(
            s["properties"]["spec"]["properties"]["size"]["exclusiveMinimum"],
            json!(0)
        );
        assert!(s["properties"]["spec"]["properties"]["size"].get("minimum").is_none());
        assert!(s["properties"]["spec"]["properties"]["extra"]
            .get("additionalProperties")
            .is_none());
        assert_eq!(
            s["properties"]["spec"]["properties"]["labels"]["additionalProperties"],
            json!({"type": ["string", "null"]})
        );
        assert_eq!(s["properties"]["metadata"], json!({"$ref": "#/$defs/meta"}));
        assert_eq!(s["properties"]["kind"], json!({"type": "string"}));
    }
}
