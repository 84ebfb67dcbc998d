//! Which built-in kinds the Kubernetes API serves cluster-scoped (current Kubernetes, 1.34, alpha
//! and beta groups included). The object model needs it to place an object (a cluster-scoped kind
//! never gets a namespace); `scope` adds what CustomResourceDefinitions and the policy declare.

/// `(group, kind, cluster-scoped)` of every built-in kind, sorted by group and kind (looked up by
/// binary search: every object is placed through it).
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
        .binary_search_by(|(g, k, _)| (*g, *k).cmp(&(group, kind)))
        .ok()
        .map(|i| BUILTIN[i].2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_every_kind_is_found() {
        assert!(
            BUILTIN.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)),
            "BUILTIN must stay sorted by (group, kind), without repeats"
        );
        for (g, k, c) in BUILTIN {
            assert_eq!(builtin(g, k), Some(*c), "{g}/{k}");
        }
        assert_eq!(builtin("apps", "Widget"), None);
        assert_eq!(builtin("", "namespace"), None, "kinds are case-sensitive");
    }
}
