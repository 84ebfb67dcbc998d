//! Tests of which parentRefs the routes family judges, and of a rendered Gateway without listeners.

use super::tests::{dump, fixture, of, run};

/// Only a parentRef to a Gateway (group gateway.networking.k8s.io, kind Gateway) is attached here:
/// a Service (a mesh's GAMMA attachment) or another kind of the Gateway API group is not judged.
#[test]
fn only_gateway_parent_refs_are_judged() {
    let text = fixture("fires-route-parent-resolves-missing-gateway.yaml");
    let parent = "    - name: shared-gateway\n";
    assert!(text.contains(parent));
    assert_eq!(of(&run(&text), "route-parent-resolves").len(), 1);
    for other in [
        "    - {group: \"\", kind: Service, name: shared-gateway}\n",
        "    - {group: gateway.networking.k8s.io, kind: ListenerSet, name: shared-gateway}\n",
    ] {
        let f = run(&text.replace(parent, other));
        assert!(
            of(&f, "route-parent-resolves").is_empty(),
            "{other}: {}",
            dump(&f.iter().collect::<Vec<_>>())
        );
    }
}

/// A rendered Gateway without listeners accepts no route (only one declared external without
/// listeners is trusted as given).
#[test]
fn a_rendered_gateway_without_listeners_accepts_nothing() {
    let text = fixture("fires-route-parent-resolves-missing-gateway.yaml");
    let gateway = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: shared-gateway, namespace: nvcf}\nspec:\n  gatewayClassName: envoy\n";
    let f = run(&format!("{text}{gateway}"));
    let mine = of(&f, "route-parent-resolves");
    assert_eq!(mine.len(), 1, "{}", dump(&mine));
    assert!(
        mine[0]
            .message
            .contains("would not be Accepted by Gateway nvcf/shared-gateway"),
        "{}",
        dump(&mine)
    );
}

/// A listener protocol Gateway API does not define and no domain prefixes carries no route kind;
/// only a domain-prefixed (implementation-specific) one is left unjudged.
#[test]
fn an_unknown_protocol_carries_nothing() {
    use super::gateway::kinds_for_protocol;
    assert_eq!(kinds_for_protocol("SCTP"), Some(&[][..]));
    assert_eq!(kinds_for_protocol("example.com/sctp"), None);
}

/// A namespace selector's NotIn and DoesNotExist hold when the label's value is not listed or the
/// label is absent; a wildcard hostname needs a non-empty first label.
#[test]
fn selector_operators_and_wildcard_labels() {
    use super::gateway::{pattern_matches, selector_matches};
    let labels: std::collections::BTreeMap<String, String> =
        [("kubernetes.io/metadata.name".to_string(), "nvcf".to_string())].into();
    let expr = |op: &str, key: &str, values: &[&str]| serde_json::json!({"matchExpressions": [{"key": key, "operator": op, "values": values}]});
    assert!(selector_matches(
        &expr("NotIn", "kubernetes.io/metadata.name", &["other"]),
        &labels
    ));
    assert!(!selector_matches(
        &expr("NotIn", "kubernetes.io/metadata.name", &["nvcf"]),
        &labels
    ));
    assert!(selector_matches(&expr("DoesNotExist", "team", &[]), &labels));
    assert!(!selector_matches(
        &expr("DoesNotExist", "kubernetes.io/metadata.name", &[]),
        &labels
    ));
    assert!(pattern_matches("*.example.com", "a.example.com"));
    assert!(!pattern_matches("*.example.com", ".example.com"));
}
