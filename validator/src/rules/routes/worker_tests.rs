//! Tests of how `worker-routes-complete` follows a Service to the router's listen ports, and of the
//! dial address reader (`worker::parse_addr`), beside the fixtures.

use super::tests::{dump, fixture, of, run};
use super::worker::parse_addr;

const RULE: &str = "worker-routes-complete";

/// The complete split-cluster contract on non-default ports, and one Service edit: whether the
/// rule must then fire.
fn edited(from: &str, to: &str) -> Vec<crate::finding::Finding> {
    let text = fixture("silent-worker-routes-complete-router-ports.yaml");
    assert!(text.contains(from), "the fixture no longer holds `{from}`");
    run(&text.replacen(from, to, 1))
}

#[test]
fn a_service_reaches_the_router_only_from_its_namespace_by_a_selector_and_its_ports() {
    let base = run(&fixture("silent-worker-routes-complete-router-ports.yaml"));
    assert!(of(&base, RULE).is_empty(), "{}", dump(&of(&base, RULE)));
    let service = "kind: Service\nmetadata:\n  name: request-router\n  namespace: nvcf\n";
    let selector = "  selector:\n    app.kubernetes.io/name: request-router\n  ports:";
    for (what, from, to) in [
        (
            "a Service in another namespace selects no pod of the router",
            service,
            "kind: Service\nmetadata:\n  name: request-router\n  namespace: elsewhere\n",
        ),
        (
            "a Service port of another protocol than the router's listener",
            "      targetPort: 6001\n      protocol: UDP\n",
            "      targetPort: 6001\n      protocol: TCP\n",
        ),
        (
            "an empty selector selects no pod (the Service has no endpoints)",
            selector,
            "  selector: {}\n  ports:",
        ),
        (
            "a named targetPort whose container port is not the listen port",
            "{name: grpc, containerPort: 6000, protocol: TCP}",
            "{name: grpc, containerPort: 7000, protocol: TCP}",
        ),
        (
            "a numeric targetPort written as text that is not the listen port",
            "      targetPort: 6001\n",
            "      targetPort: \"6002\"\n",
        ),
    ] {
        let f = edited(from, to);
        assert!(!of(&f, RULE).is_empty(), "{what}: {}", dump(&f.iter().collect::<Vec<_>>()));
    }
    // A numeric targetPort written as text that is the listen port reaches it.
    let f = edited("      targetPort: 6001\n", "      targetPort: \"6001\"\n");
    assert!(of(&f, RULE).is_empty(), "{}", dump(&of(&f, RULE)));
}

#[test]
fn dial_addresses_are_read_with_their_default_ports_and_bare_ipv6() {
    let a = parse_addr("http://router.example.com/v1");
    assert_eq!((a.scheme.as_deref(), a.host.as_str(), a.port), (Some("http"), "router.example.com", Some(80)));
    let a = parse_addr("HTTPS://router.example.com");
    assert_eq!((a.scheme.as_deref(), a.port), (Some("https"), Some(443)));
    // An IPv6 address without brackets has no port to split off.
    let a = parse_addr("fe80::1");
    assert_eq!((a.host.as_str(), a.port), ("fe80::1", None));
    let a = parse_addr("[fe80::1]:50072");
    assert_eq!((a.host.as_str(), a.port), ("fe80::1", Some(50072)));
    let a = parse_addr("quic.example.com:50072");
    assert_eq!((a.scheme, a.host.as_str(), a.port), (None, "quic.example.com", Some(50072)));
}

/// A QUIC listener of the wrong protocol is named by its protocol; only a TCP listener on the gRPC
/// leg is "plain TCP" (worker gRPC in cleartext).
#[test]
fn a_quic_listener_of_another_protocol_is_named_by_its_protocol() {
    let f = edited(
        "    - name: worker-quic\n      protocol: UDP\n",
        "    - name: worker-quic\n      protocol: TCP\n",
    );
    let msgs: Vec<&str> = of(&f, RULE).iter().map(|x| x.message.as_str()).collect();
    assert!(msgs.iter().any(|m| m.contains("has protocol TCP, not UDP")), "{msgs:#?}");
    assert!(msgs.iter().all(|m| !m.contains("plain TCP listener")), "{msgs:#?}");
}
