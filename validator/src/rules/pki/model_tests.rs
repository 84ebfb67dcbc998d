//! Tests of the family's shared model (bundles.rs: which objects are trust bundles and what an
//! unreadable one counts as; mod.rs: contract ConfigMaps, kinds, identities, small readers), each
//! written against a mutant that the rule tests let through (issue 31; ci/mutants names them).

use super::tests::{messages, run, run_graph};
use super::*;
use crate::testkit;

const VALID: &str = "trust-bundle-valid";

/// A trust bundle the stack renders with no `ca.crt` key is judged as an empty bundle; one the
/// policy declares external (the customer's, not rendered here) owes nothing when its data is not
/// given. The same holds for a worker profile whose profile.yaml cannot be read.
#[test]
fn unreadable_bundles_are_empty_when_rendered_and_unjudged_when_external() {
    let rendered = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nvcf-trust-bundle, namespace: nvcf}\ndata: {other: x}\n---\n\
                    apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nvcf-worker-profile, namespace: nvcf}\ndata: {profile.yaml: \"[not, a, mapping]\"}\n";
    let f = run(VALID, rendered);
    assert_eq!(f.len(), 2, "{}", messages(&f));
    assert!(
        f[0].message.contains("key ca.crt (missing) holds no certificate"),
        "{}",
        messages(&f)
    );
    assert!(
        f[1].message
            .contains("profile.yaml (missing, or not a YAML mapping) holds no certificate"),
        "{}",
        messages(&f)
    );
    let policy = testkit::policy(
        "externals:\n\
         - {apiVersion: v1, kind: ConfigMap, name: nvcf-trust-bundle, namespace: customer, data: {other: x}}\n\
         - {apiVersion: v1, kind: ConfigMap, name: nvcf-worker-profile, namespace: customer, data: {profile.yaml: \"[not, a, mapping]\"}}\n",
    );
    let g = testkit::with_externals(testkit::graph("e", ""), &policy);
    assert_eq!(g.objects.iter().filter(|o| o.prov.external).count(), 2);
    let f = run_graph(VALID, &g, &policy);
    assert!(f.is_empty(), "{}", messages(&f));
}

/// Messages name at most eight entries of a list and count the rest: eight are all named with no
/// count, nine name eight and count one.
#[test]
fn lists_in_messages_name_eight_and_count_the_rest() {
    let names = |n: usize| (0..n).map(|i| format!("n{i}")).collect::<Vec<_>>();
    assert_eq!(list(&names(0)), "[]");
    assert_eq!(list(&names(8)), "[n0, n1, n2, n3, n4, n5, n6, n7]");
    assert_eq!(list(&names(9)), "[n0, n1, n2, n3, n4, n5, n6, n7, … (1 more)]");
    assert_eq!(list(&names(20)), "[n0, n1, n2, n3, n4, n5, n6, n7, … (12 more)]");
}

/// Workloads are the stack's own pod-owning objects: a router StatefulSet that mounts its TLS
/// Secret by subPath fires tls-mount-reloadable when rendered, and the same StatefulSet declared
/// external (the policy's externals, with its spec) is not the stack's to judge.
#[test]
fn only_rendered_pod_owners_are_workloads() {
    const RELOAD: &str = "tls-mount-reloadable";
    let text = super::tests::fixture("fires-tls-mount-reloadable-subpath");
    let f = run(RELOAD, &text);
    assert_eq!(f.len(), 2, "{}", messages(&f));
    let (sts, rest): (Vec<&str>, Vec<&str>) = text.split("\n---\n").partition(|d| d.contains("kind: StatefulSet"));
    let sts = crate::yaml::value(sts[0]).unwrap();
    let policy = testkit::policy(&format!(
        "externals:\n- {{apiVersion: apps/v1, kind: StatefulSet, namespace: nvcf, name: request-router, spec: {}}}\n",
        sts["spec"]
    ));
    let g = testkit::with_externals(testkit::graph("e", &rest.join("\n---\n")), &policy);
    let external = g.objects.iter().find(|o| o.kind == "StatefulSet").unwrap();
    assert!(external.prov.external && external.pod_spec().is_some());
    let f = run_graph(RELOAD, &g, &policy);
    assert!(f.is_empty(), "{}", messages(&f));
}

/// The identity of a Secret is the Certificate of its own namespace that writes it: a
/// Certificate elsewhere writing a Secret of the same name (listed first) is not the router's.
#[test]
fn a_secrets_certificate_is_looked_up_in_the_secrets_namespace() {
    const SAN: &str = "san-covers-advertised-name";
    let text = super::tests::fixture("silent-san-covers-advertised-name-exact-pod-names");
    let decoy = |ns: &str| {
        format!(
            "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {{name: other, namespace: {ns}}}\n\
             spec: {{secretName: request-router-tls, dnsNames: [other.example.com], issuerRef: {{kind: ClusterIssuer, name: openbao}}}}\n"
        )
    };
    let f = run(SAN, &format!("{}{text}", decoy("elsewhere")));
    assert!(f.is_empty(), "{}", messages(&f));
    // The near miss: the same Certificate in the router's namespace is read, and covers neither
    // the advertised names nor the gRPC dial host.
    let f = run(SAN, &format!("{}{text}", decoy("nvcf")));
    assert_eq!(f.len(), 2, "{}", messages(&f));
    assert!(
        f.iter().all(|f| f
            .message
            .contains("Certificate nvcf/other dnsNames [other.example.com]")),
        "{}",
        messages(&f)
    );
}
