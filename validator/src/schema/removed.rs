//! Built-in API versions the Kubernetes API server no longer serves, with the release that removed
//! them: the data behind `schema-valid`'s message for an object in such a version. Whether a
//! version is served is decided by the installed schema of the policy's Kubernetes version (a
//! built-in group whose schema has no such version/kind is not served); this table only says
//! since when and what replaces it.
//!
//! Source: the Kubernetes "Deprecated API Migration Guide"
//! (<https://kubernetes.io/docs/reference/using-api/deprecation-guide/>), removals in 1.16, 1.22,
//! 1.25, 1.26, 1.27, 1.29 and 1.32.

/// `(group/version, kinds, removed in, replacement group/version)`.
pub const REMOVED: &[(&str, &[&str], &str, &str)] = &[
    (
        "extensions/v1beta1",
        &["DaemonSet", "Deployment", "ReplicaSet"],
        "1.16",
        "apps/v1",
    ),
    ("extensions/v1beta1", &["NetworkPolicy"], "1.16", "networking.k8s.io/v1"),
    (
        "extensions/v1beta1",
        &["PodSecurityPolicy"],
        "1.16",
        "(none: use Pod Security Admission)",
    ),
    ("extensions/v1beta1", &["Ingress"], "1.22", "networking.k8s.io/v1"),
    (
        "apps/v1beta1",
        &["Deployment", "StatefulSet", "ReplicaSet", "ControllerRevision"],
        "1.16",
        "apps/v1",
    ),
    (
        "apps/v1beta2",
        &[
            "DaemonSet",
            "Deployment",
            "StatefulSet",
            "ReplicaSet",
            "ControllerRevision",
        ],
        "1.16",
        "apps/v1",
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        &["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"],
        "1.22",
        "admissionregistration.k8s.io/v1",
    ),
    (
        "apiextensions.k8s.io/v1beta1",
        &["CustomResourceDefinition"],
        "1.22",
        "apiextensions.k8s.io/v1",
    ),
    (
        "apiregistration.k8s.io/v1beta1",
        &["APIService"],
        "1.22",
        "apiregistration.k8s.io/v1",
    ),
    (
        "authentication.k8s.io/v1beta1",
        &["TokenReview"],
        "1.22",
        "authentication.k8s.io/v1",
    ),
    (
        "authorization.k8s.io/v1beta1",
        &[
            "SubjectAccessReview",
            "LocalSubjectAccessReview",
            "SelfSubjectAccessReview",
        ],
        "1.22",
        "authorization.k8s.io/v1",
    ),
    (
        "certificates.k8s.io/v1beta1",
        &["CertificateSigningRequest"],
        "1.22",
        "certificates.k8s.io/v1",
    ),
    (
        "coordination.k8s.io/v1beta1",
        &["Lease"],
        "1.22",
        "coordination.k8s.io/v1",
    ),
    (
        "networking.k8s.io/v1beta1",
        &["Ingress", "IngressClass"],
        "1.22",
        "networking.k8s.io/v1",
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        &["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
        "1.22",
        "rbac.authorization.k8s.io/v1",
    ),
    (
        "scheduling.k8s.io/v1beta1",
        &["PriorityClass"],
        "1.22",
        "scheduling.k8s.io/v1",
    ),
    (
        "storage.k8s.io/v1beta1",
        &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
        "1.22",
        "storage.k8s.io/v1",
    ),
    ("batch/v1beta1", &["CronJob"], "1.25", "batch/v1"),
    (
        "discovery.k8s.io/v1beta1",
        &["EndpointSlice"],
        "1.25",
        "discovery.k8s.io/v1",
    ),
    ("events.k8s.io/v1beta1", &["Event"], "1.25", "events.k8s.io/v1"),
    (
        "autoscaling/v2beta1",
        &["HorizontalPodAutoscaler"],
        "1.25",
        "autoscaling/v2",
    ),
    ("policy/v1beta1", &["PodDisruptionBudget"], "1.25", "policy/v1"),
    (
        "policy/v1beta1",
        &["PodSecurityPolicy"],
        "1.25",
        "(none: use Pod Security Admission)",
    ),
    ("node.k8s.io/v1beta1", &["RuntimeClass"], "1.25", "node.k8s.io/v1"),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        &["FlowSchema", "PriorityLevelConfiguration"],
        "1.26",
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    (
        "autoscaling/v2beta2",
        &["HorizontalPodAutoscaler"],
        "1.26",
        "autoscaling/v2",
    ),
    (
        "storage.k8s.io/v1beta1",
        &["CSIStorageCapacity"],
        "1.27",
        "storage.k8s.io/v1",
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta2",
        &["FlowSchema", "PriorityLevelConfiguration"],
        "1.29",
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3",
        &["FlowSchema", "PriorityLevelConfiguration"],
        "1.32",
        "flowcontrol.apiserver.k8s.io/v1",
    ),
];

/// The removal of `api_version`/`kind` from the table: (removed in, replacement).
pub fn removal(api_version: &str, kind: &str) -> Option<(&'static str, &'static str)> {
    REMOVED
        .iter()
        .find(|(gv, kinds, _, _)| *gv == api_version && kinds.contains(&kind))
        .map(|(_, _, when, instead)| (*when, *instead))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_answers_and_is_well_formed() {
        assert_eq!(removal("apps/v1beta2", "Deployment"), Some(("1.16", "apps/v1")));
        assert_eq!(removal("apps/v1", "Deployment"), None);
        for (gv, kinds, when, _) in REMOVED {
            assert!(gv.contains('/') && !kinds.is_empty(), "{gv}");
            assert!(crate::schema::normalise_version(when).is_some(), "{when}");
        }
    }
}
