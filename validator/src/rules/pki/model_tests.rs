//! Tests of the family's shared model (bundles.rs: which objects are trust bundles and what an
//! unreadable one counts as; mod.rs: contract ConfigMaps, kinds, identities, small readers), each
//! written against a mutant that the rule tests let through (issue 31; ci/mutants names them).

use super::tests::{messages, run, run_graph};
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
    assert!(f[0].message.contains("key ca.crt (missing) holds no certificate"), "{}", messages(&f));
    assert!(
        f[1].message.contains("profile.yaml (missing, or not a YAML mapping) holds no certificate"),
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
