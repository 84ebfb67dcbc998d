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
        assert!(
            !of(&f, RULE).is_empty(),
            "{what}: {}",
            dump(&f.iter().collect::<Vec<_>>())
        );
    }
    // A numeric targetPort written as text that is the listen port reaches it.
    let f = edited("      targetPort: 6001\n", "      targetPort: \"6001\"\n");
    assert!(of(&f, RULE).is_empty(), "{}", dump(&of(&f, RULE)));
}

#[test]
fn dial_addresses_are_read_with_their_default_ports_and_bare_ipv6() {
    let a = parse_addr("http://router.example.com/v1");
    assert_eq!(
        (a.scheme.as_deref(), a.host.as_str(), a.port),
        (Some("http"), "router.example.com", Some(80))
    );
    let a = parse_addr("HTTPS://router.example.com");
    assert_eq!((a.scheme.as_deref(), a.port), (Some("https"), Some(443)));
    // An IPv6 address without brackets has no port to split off.
    let a = parse_addr("fe80::1");
    assert_eq!((a.host.as_str(), a.port), ("fe80::1", None));
    let a = parse_addr("[fe80::1]:50072");
    assert_eq!((a.host.as_str(), a.port), ("fe80::1", Some(50072)));
    let a = parse_addr("quic.example.com:50072");
    assert_eq!(
        (a.scheme, a.host.as_str(), a.port),
        (None, "quic.example.com", Some(50072))
    );
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
    assert!(
        msgs.iter().any(|m| m.contains("has protocol TCP, not UDP")),
        "{msgs:#?}"
    );
    assert!(msgs.iter().all(|m| !m.contains("plain TCP listener")), "{msgs:#?}");
}

/// The base fixture with several edits (each must apply) and more documents appended.
fn edited_all(edits: &[(&str, &str)], more: &str) -> Vec<crate::finding::Finding> {
    let mut text = fixture("silent-worker-routes-complete-router-ports.yaml");
    for (from, to) in edits {
        assert!(text.contains(from), "the fixture no longer holds `{from}`");
        text = text.replacen(from, to, 1);
    }
    run(&(text + more))
}

fn messages(f: &[crate::finding::Finding]) -> Vec<String> {
    of(f, RULE).iter().map(|x| x.message.clone()).collect()
}

const UDP_PARENT: &str = "    - name: nvcf-gateway\n      namespace: nvcf-gateway\n      sectionName: worker-quic\n";

/// A second Gateway beside `nvcf-gateway`, in its namespace, with listeners of the same names on
/// ports no dial address names (8443/TCP, 50073/UDP).
const GATEWAY_B: &str = "---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: nvcf-gateway-b
  namespace: nvcf-gateway
spec:
  gatewayClassName: envoy
  listeners:
    - name: worker-grpc
      protocol: HTTPS
      port: 8443
      hostname: \"*.nvcf.example.com\"
      tls:
        mode: Terminate
        certificateRefs:
          - name: worker-grpc-tls
      allowedRoutes:
        kinds:
          - kind: GRPCRoute
        namespaces:
          from: All
    - name: worker-quic
      protocol: UDP
      port: 50073
      allowedRoutes:
        namespaces:
          from: All
";

/// Only routes attached to the Gateway whose listener serves the dial address carry the workers:
/// a route on another Gateway (of the same namespace, with a listener of the same name) does
/// not, neither for the QUIC leg nor for the advertised names of the gRPC leg.
#[test]
fn a_route_on_another_gateway_does_not_carry_the_workers() {
    let f = edited_all(
        &[(
            UDP_PARENT,
            "    - name: nvcf-gateway-b\n      namespace: nvcf-gateway\n      sectionName: worker-quic\n",
        )],
        GATEWAY_B,
    );
    let msgs = messages(&f);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(msgs[0].contains("no UDPRoute is attached to it"), "{msgs:#?}");
    // The gRPC route of nvcf-gateway accepts the dial host only; the pods' advertised names are
    // accepted by a route of nvcf-gateway-b, which is not where workers dial.
    let pods = "---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: request-router-pods
  namespace: nvcf
spec:
  parentRefs:
    - {name: nvcf-gateway-b, namespace: nvcf-gateway, sectionName: worker-grpc}
  hostnames: [\"*.router.nvcf.example.com\"]
  rules:
    - backendRefs:
        - {name: request-router, port: 50071}
";
    let f = edited_all(
        &[(
            "    - grpc.nvcf.example.com\n    - \"*.router.nvcf.example.com\"\n",
            "    - grpc.nvcf.example.com\n",
        )],
        &format!("{GATEWAY_B}{pods}"),
    );
    let msgs = messages(&f);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(msgs[0].contains("do not accept the advertised name"), "{msgs:#?}");
    // The same second route on nvcf-gateway itself accepts them.
    let f = edited_all(
        &[(
            "    - grpc.nvcf.example.com\n    - \"*.router.nvcf.example.com\"\n",
            "    - grpc.nvcf.example.com\n",
        )],
        &pods.replace("name: nvcf-gateway-b,", "name: nvcf-gateway,"),
    );
    assert!(messages(&f).is_empty(), "{:#?}", messages(&f));
}

/// A route attached by sectionName to another listener of the same Gateway does not carry the
/// workers on the listener of the dial port.
#[test]
fn a_route_on_another_listener_of_the_gateway_does_not_carry_the_workers() {
    let other = "    - name: worker-quic\n      protocol: UDP\n      port: 50072\n";
    let f = edited_all(
        &[
            (
                other,
                "    - name: other-udp\n      protocol: UDP\n      port: 50073\n      allowedRoutes:\n        namespaces:\n          from: All\n    - name: worker-quic\n      protocol: UDP\n      port: 50072\n",
            ),
            (UDP_PARENT, "    - name: nvcf-gateway\n      namespace: nvcf-gateway\n      sectionName: other-udp\n"),
        ],
        "",
    );
    let msgs = messages(&f);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(msgs[0].contains("no UDPRoute is attached to it"), "{msgs:#?}");
}

/// A route without hostnames takes the listener's; one whose hostnames miss the dial host is
/// named for that.
#[test]
fn route_hostnames_are_judged_only_when_the_route_has_some() {
    let hosts = "  hostnames:\n    - grpc.nvcf.example.com\n    - \"*.router.nvcf.example.com\"\n";
    let f = edited_all(&[(hosts, "")], "");
    assert!(messages(&f).is_empty(), "{:#?}", messages(&f));
    let f = edited_all(
        &[(
            hosts,
            "  hostnames:\n    - api.nvcf.example.com\n    - \"*.router.nvcf.example.com\"\n",
        )],
        "",
    );
    let msgs = messages(&f);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(
        msgs[0].contains("is attached but its hostnames [api.nvcf.example.com, *.router.nvcf.example.com] do not match grpc.nvcf.example.com"),
        "{msgs:#?}"
    );
}

/// A rejected route is named on the listener it targets (by sectionName, or on every listener
/// without one), not on other listeners.
#[test]
fn a_rejected_route_is_named_only_on_the_listener_it_targets() {
    let f = edited_all(
        &[(
            UDP_PARENT,
            "    - name: nvcf-gateway\n      namespace: nvcf-gateway\n      sectionName: worker-quick\n",
        )],
        "",
    );
    let msgs = messages(&f);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(msgs[0].contains("no UDPRoute is attached to it"), "{msgs:#?}");
    assert!(!msgs[0].contains("would not be Accepted"), "{msgs:#?}");
    // From a namespace the listener does not allow, without a sectionName.
    let f = edited_all(
        &[
            (
                "  name: request-router-worker-quic\n  namespace: nvcf\n",
                "  name: request-router-worker-quic\n  namespace: elsewhere\n",
            ),
            (UDP_PARENT, "    - name: nvcf-gateway\n      namespace: nvcf-gateway\n"),
        ],
        "",
    );
    let msgs = messages(&f);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(
        msgs[0].contains("request-router-worker-quic targets it but would not be Accepted"),
        "{msgs:#?}"
    );
}
