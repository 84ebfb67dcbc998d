//! Which kinds are cluster-scoped, as the API server decides it: a built-in table of every kind
//! the Kubernetes API serves (current Kubernetes, 1.34, alpha and beta groups included), plus the
//! `spec.scope` of every CustomResourceDefinition rendered in the same environment or declared in
//! the policy (an external CustomResourceDefinition, or `settings.kindScopes`). A kind found in
//! none of them has an unknown scope: it keeps the namespace it was written with and the
//! `object-scope-known` rule reports it; it is never guessed.

use crate::graph::kinds::builtin;
use crate::policy::{KindScope, Policy};
use serde_json::Value;
use std::collections::BTreeMap;

/// The scope of a CustomResourceDefinition document: `(group, kind, cluster)`.
fn crd_scope(doc: &Value) -> Option<(String, String, bool)> {
    let api = doc.get("apiVersion")?.as_str()?;
    if doc.get("kind")?.as_str()? != "CustomResourceDefinition" || !api.starts_with("apiextensions.k8s.io/") {
        return None;
    }
    let spec = doc.get("spec")?;
    let group = spec.get("group")?.as_str()?;
    let kind = spec.pointer("/names/kind")?.as_str()?;
    let cluster = match spec.get("scope")?.as_str()? {
        "Cluster" => true,
        "Namespaced" => false,
        _ => return None,
    };
    Some((group.to_string(), kind.to_string(), cluster))
}

/// The scopes known in one environment (built-in, rendered CRDs, the policy's declarations).
#[derive(Debug, Clone, Default)]
pub struct Scopes {
    declared: BTreeMap<(String, String), bool>,
}

impl Scopes {
    /// From the environment's rendered documents and the policy (its external CRDs and
    /// `settings.kindScopes`).
    pub fn new<'a>(docs: impl IntoIterator<Item = &'a Value>, policy: &Policy, environment: &str) -> Scopes {
        let mut declared = BTreeMap::new();
        for (key, scope) in &policy.settings.kind_scopes {
            if let Some((g, k)) = split_kind(key) {
                declared.insert((g.to_string(), k.to_string()), *scope == KindScope::Cluster);
            }
        }
        for e in policy.externals_for(environment) {
            if let Some((g, k, c)) = crd_scope(&e.to_value()) {
                declared.insert((g, k), c);
            }
        }
        for d in docs {
            if let Some((g, k, c)) = crd_scope(d) {
                declared.insert((g, k), c);
            }
        }
        Scopes { declared }
    }

    /// Whether `group`/`kind` is cluster-scoped; `None` when its scope is unknown.
    pub fn cluster_scoped(&self, group: &str, kind: &str) -> Option<bool> {
        builtin(group, kind).or_else(|| self.declared.get(&(group.to_string(), kind.to_string())).copied())
    }
}

/// Place `o` as the API server would: no namespace for a cluster-scoped kind, its own or
/// `fallback` (the release namespace, or `--namespace`) for a namespaced one; an unknown kind
/// keeps what `Object::from_value` gave it (and `object-scope-known` reports it).
pub fn place(o: &mut crate::graph::Object, scopes: &Scopes, fallback: Option<&str>) {
    match scopes.cluster_scoped(o.group(), &o.kind) {
        Some(true) => o.namespace = None,
        Some(false) if o.namespace.is_none() => {
            o.namespace = o
                .body
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .or(fallback)
                .map(str::to_string);
        }
        Some(false) => {}
        None => {}
    }
}

/// `group/Kind` (or a bare `Kind` for the core group) → `(group, kind)`.
pub fn split_kind(key: &str) -> Option<(&str, &str)> {
    let (g, k) = key.rsplit_once('/').unwrap_or(("", key));
    (!k.is_empty()).then_some((g, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_crd_and_policy_scopes() {
        assert_eq!(builtin("", "Namespace"), Some(true));
        assert_eq!(builtin("", "Secret"), Some(false));
        assert_eq!(builtin("storage.k8s.io", "StorageClass"), Some(true));
        assert_eq!(builtin("cert-manager.io", "ClusterIssuer"), None);
        let crd = serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget"}, "scope": "Cluster"}});
        let p = Policy::parse(
            "settings:\n  kindScopes: {cert-manager.io/Certificate: Namespaced, cert-manager.io/ClusterIssuer: Cluster}\n",
            "p.yaml", crate::testkit::family_of,
        )
        .unwrap();
        let s = Scopes::new([&crd], &p, "e");
        assert_eq!(s.cluster_scoped("example.com", "Widget"), Some(true));
        assert_eq!(s.cluster_scoped("cert-manager.io", "ClusterIssuer"), Some(true));
        assert_eq!(s.cluster_scoped("cert-manager.io", "Certificate"), Some(false));
        assert_eq!(s.cluster_scoped("cert-manager.io", "Issuer"), None);
        // A built-in kind cannot be re-declared.
        let p = Policy::parse(
            "settings:\n  kindScopes: {Secret: Cluster}\n",
            "p.yaml",
            crate::testkit::family_of,
        )
        .unwrap();
        assert_eq!(Scopes::new([], &p, "e").cluster_scoped("", "Secret"), Some(false));
    }
}
