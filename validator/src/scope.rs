//! Which kinds are cluster-scoped, as the API server decides it: a built-in table of every kind
//! the Kubernetes API serves (current Kubernetes, 1.34, alpha and beta groups included), plus the
//! `spec.scope` of every CustomResourceDefinition rendered in the same environment or declared in
//! the policy (an external CustomResourceDefinition, or `settings.kindScopes`). A kind found in
//! none of them has an unknown scope: it keeps the namespace it was written with and the
//! `object-scope-known` rule reports it; it is never guessed.

use crate::policy::{KindScope, Policy};
use serde_json::Value;
use std::collections::BTreeMap;

/// `(group, kind, cluster-scoped)` of every built-in kind.
const BUILTIN: &[(&str, &str, bool)] = &[
    ("", "Binding", false),
    ("", "ComponentStatus", true),
    ("", "ConfigMap", false),
    ("", "Endpoints", false),
    ("", "Event", false),
    ("", "LimitRange", false),
    ("", "Namespace", true),
    ("", "Node", true),
    ("", "PersistentVolume", true),
    ("", "PersistentVolumeClaim", false),
    ("", "Pod", false),
    ("", "PodTemplate", false),
    ("", "ReplicationController", false),
    ("", "ResourceQuota", false),
    ("", "Secret", false),
    ("", "Service", false),
    ("", "ServiceAccount", false),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy", true),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding", true),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", true),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", true),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", true),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", true),
    ("apiextensions.k8s.io", "CustomResourceDefinition", true),
    ("apiregistration.k8s.io", "APIService", true),
    ("apps", "ControllerRevision", false),
    ("apps", "DaemonSet", false),
    ("apps", "Deployment", false),
    ("apps", "ReplicaSet", false),
    ("apps", "StatefulSet", false),
    ("authentication.k8s.io", "SelfSubjectReview", true),
    ("authentication.k8s.io", "TokenReview", true),
    ("authorization.k8s.io", "LocalSubjectAccessReview", false),
    ("authorization.k8s.io", "SelfSubjectAccessReview", true),
    ("authorization.k8s.io", "SelfSubjectRulesReview", true),
    ("authorization.k8s.io", "SubjectAccessReview", true),
    ("autoscaling", "HorizontalPodAutoscaler", false),
    ("batch", "CronJob", false),
    ("batch", "Job", false),
    ("certificates.k8s.io", "CertificateSigningRequest", true),
    ("certificates.k8s.io", "ClusterTrustBundle", true),
    ("certificates.k8s.io", "PodCertificateRequest", false),
    ("coordination.k8s.io", "Lease", false),
    ("coordination.k8s.io", "LeaseCandidate", false),
    ("discovery.k8s.io", "EndpointSlice", false),
    ("events.k8s.io", "Event", false),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", true),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", true),
    ("internal.apiserver.k8s.io", "StorageVersion", true),
    ("networking.k8s.io", "IPAddress", true),
    ("networking.k8s.io", "Ingress", false),
    ("networking.k8s.io", "IngressClass", true),
    ("networking.k8s.io", "NetworkPolicy", false),
    ("networking.k8s.io", "ServiceCIDR", true),
    ("node.k8s.io", "RuntimeClass", true),
    ("policy", "Eviction", false),
    ("policy", "PodDisruptionBudget", false),
    ("rbac.authorization.k8s.io", "ClusterRole", true),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", true),
    ("rbac.authorization.k8s.io", "Role", false),
    ("rbac.authorization.k8s.io", "RoleBinding", false),
    ("resource.k8s.io", "DeviceClass", true),
    ("resource.k8s.io", "DeviceTaintRule", true),
    ("resource.k8s.io", "ResourceClaim", false),
    ("resource.k8s.io", "ResourceClaimTemplate", false),
    ("resource.k8s.io", "ResourceSlice", true),
    ("scheduling.k8s.io", "PriorityClass", true),
    ("storage.k8s.io", "CSIDriver", true),
    ("storage.k8s.io", "CSINode", true),
    ("storage.k8s.io", "CSIStorageCapacity", false),
    ("storage.k8s.io", "StorageClass", true),
    ("storage.k8s.io", "VolumeAttachment", true),
    ("storage.k8s.io", "VolumeAttributesClass", true),
    ("storagemigration.k8s.io", "StorageVersionMigration", true),
];

/// Whether a built-in kind is cluster-scoped; `None` when it is not a built-in kind.
pub fn builtin(group: &str, kind: &str) -> Option<bool> {
    BUILTIN
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, c)| *c)
}

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
            "p.yaml",
        )
        .unwrap();
        let s = Scopes::new([&crd], &p, "e");
        assert_eq!(s.cluster_scoped("example.com", "Widget"), Some(true));
        assert_eq!(s.cluster_scoped("cert-manager.io", "ClusterIssuer"), Some(true));
        assert_eq!(s.cluster_scoped("cert-manager.io", "Certificate"), Some(false));
        assert_eq!(s.cluster_scoped("cert-manager.io", "Issuer"), None);
        // A built-in kind cannot be re-declared.
        let p = Policy::parse("settings:\n  kindScopes: {Secret: Cluster}\n", "p.yaml").unwrap();
        assert_eq!(Scopes::new([], &p, "e").cluster_scoped("", "Secret"), Some(false));
    }
}
