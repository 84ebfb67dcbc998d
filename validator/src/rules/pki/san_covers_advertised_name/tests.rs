//! `san-covers-advertised-name` unit tests.

use super::super::tests::*;
use super::*;
use crate::pki::testcerts;
use crate::policy::Policy;
use crate::router::parse_flags;
use crate::testkit;

#[test]
fn uncovered_replica_is_named_with_a_wildcard_suggestion_and_the_flag_line() {
    let text = fixture("fires-san-covers-advertised-name-exact-pod-names");
    let f = run(SAN, &text);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    let m = &f[0].message;
    assert!(
            m.contains("advertised name request-router-2.request-router-headless.nvcf.svc.cluster.local (replica 2 of StatefulSet nvcf/request-router)"),
            "{m}"
        );
    assert!(
        m.contains("Certificate nvcf/request-router dnsNames [request-router-0."),
        "{m}"
    );
    assert!(
        m.contains("or the one-label wildcard *.request-router-headless.nvcf.svc.cluster.local"),
        "{m}"
    );
    let line = f[0].source.as_ref().unwrap().line.unwrap();
    assert!(
        text.lines()
            .nth(line - 1)
            .unwrap()
            .contains("--advertised-hostname-template"),
        "line {line}"
    );
}

#[test]
fn many_replicas_are_judged_by_pattern() {
    let sans = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Ordinals named in a SAN are judged one by one, one more per digit count stands for the rest.
    let j = judged_ordinals(1000, &sans(&["r-0.h", "r-1.h", "r-12.h"]));
    // `12` also mentions 1 and 2 (any digit run inside a SAN counts).
    assert_eq!(j, vec![(0, 1), (1, 1), (2, 1), (3, 7), (10, 89), (12, 1), (100, 900)]);
    assert_eq!(j.iter().map(|(_, n)| n).sum::<u64>(), 1000);
    let j = judged_ordinals(u64::MAX, &[]);
    assert_eq!(j.len(), 20);
    assert_eq!(j.iter().map(|(_, n)| *n as u128).sum::<u128>(), u64::MAX as u128);
    assert_eq!(judged_ordinals(3, &[]), vec![(0, 1), (1, 1), (2, 1)]);
}

#[test]
fn wildcard_one_level_too_high_explains_the_depth() {
    let f = run(SAN, &fixture("fires-san-covers-advertised-name-wildcard-two-labels"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("advertised names [request-router-0."),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.contains(
            "*.nvcf.svc.cluster.local covers exactly one label, not `request-router-0.request-router-headless`"
        ),
        "{}",
        f[0].message
    );
}

#[test]
fn replicas_default_to_one() {
    let text = fixture("silent-san-covers-advertised-name-exact-pod-names");
    // Certificate for ordinals 0..2 only; with replicas removed (default 1) still silent, with 4 it fires.
    let one = text.replace("  replicas: 3\n", "");
    assert!(run(SAN, &one).is_empty());
    let four = text.replace("  replicas: 3\n", "  replicas: 4\n");
    let f = run(SAN, &four);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.starts_with(
            "advertised name request-router-3.request-router-headless.nvcf.svc.cluster.local (replica 3 of"
        ),
        "{}",
        f[0].message
    );
}

#[test]
fn tls_at_the_gateway_is_judged_once_on_the_gateway() {
    let f = run(SAN, &fixture("fires-san-covers-advertised-name-grpc-gateway-cert"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert_eq!(f[0].object.as_ref().unwrap().kind, "Gateway");
    assert!(
        f[0].message
            .contains("hostname grpc.workers.example.com served by listener `worker-grpc`"),
        "{}",
        f[0].message
    );

    // Without a route the same dial host is judged against the router's own certificate.
    let f = run(SAN, &fixture("fires-san-covers-advertised-name-grpc-at-router"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message
            .contains("carried by no Gateway route, so TLS ends at the router"),
        "{}",
        f[0].message
    );
}

#[test]
fn an_undescribed_gateway_is_not_guessed_at() {
    // The route carries the dial host to a Gateway the stack does not render: not judged.
    let text = fixture("fires-san-covers-advertised-name-grpc-at-router");
    let route = fixture("silent-san-covers-advertised-name-grpc-at-gateway");
    let grpcroute = route.split("---\n").find(|d| d.contains("kind: GRPCRoute")).unwrap();
    assert!(run(SAN, &format!("{text}---\n{grpcroute}")).is_empty());
}

#[test]
fn listener_wildcard_without_routes_needs_the_same_wildcard() {
    let yaml = r#"apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: nvcf}
spec:
  listeners:
    - name: clients
      protocol: HTTPS
      port: 443
      hostname: "*.invocation.example.com"
      tls: {certificateRefs: [{name: clients-tls}]}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: clients, namespace: nvcf}
spec: {secretName: clients-tls, dnsNames: ["llm.invocation.example.com"], issuerRef: {kind: ClusterIssuer, name: x}}
"#;
    let f = run(SAN, yaml);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("serves *.invocation.example.com"),
        "{}",
        f[0].message
    );
    assert!(run(
        SAN,
        &yaml.replace("[\"llm.invocation.example.com\"]", "[\"*.invocation.example.com\"]")
    )
    .is_empty());
    // Passthrough TLS listeners terminate nothing.
    assert!(run(
        SAN,
        &yaml
            .replace("protocol: HTTPS", "protocol: TLS")
            .replace("tls: {", "tls: {mode: Passthrough, ")
    )
    .is_empty());
}

/// Secret mode: a policy external carries the public chain; the same webpki check applies.
#[test]
fn customer_secret_chain_from_the_policy_is_checked_and_absent_chains_are_not_guessed() {
    let router = fixture("silent-san-covers-advertised-name-customer-secret");
    let policy = |data: &str| {
        Policy::parse(
                &format!(
                    "externals:\n  - apiVersion: v1\n    kind: Secret\n    namespace: nvcf\n    name: request-router-tls\n    type: kubernetes.io/tls\n{data}"
                ),
                "validator-policy.yaml", crate::rules::family_of,
            )
            .unwrap()
    };
    let ca = testcerts::root("Customer Root");
    let narrow = testcerts::leaf(
        &["request-router-0.request-router-headless.nvcf.svc.cluster.local"],
        &ca,
        None,
    );
    let wide = testcerts::leaf(
        &[
            "*.request-router-headless.nvcf.svc.cluster.local",
            "request-router.nvcf.svc.cluster.local",
        ],
        &ca,
        None,
    );
    let data = |pem: &str| {
        format!(
            "    data:\n      tls.crt: |\n{}",
            pem.lines().map(|l| format!("        {l}\n")).collect::<String>()
        )
    };
    let with = |p: &Policy| testkit::with_externals(testkit::graph("customer-secret", &router), p);

    let p = policy(&data(&narrow));
    let f = run_graph(SAN, &with(&p), &p);
    assert_eq!(f.len(), 2, "{}", messages(&f)); // replicas 1 and 2, and the gRPC service name
    assert!(
        f.iter()
            .any(|f| f.message.contains("the tls.crt leaf `CN=request-router-0.")),
        "{}",
        messages(&f)
    );
    let p = policy(&data(&wide));
    assert!(run_graph(SAN, &with(&p), &p).is_empty());
    let p = policy("");
    assert!(
        run_graph(SAN, &with(&p), &p).is_empty(),
        "no chain given: nothing to judge"
    );
}

#[test]
fn flags_in_both_forms_and_inside_shell_strings() {
    let c = serde_json::json!({
        "command": ["sh", "-c", "exec /stargate --tls-cert-path /a/tls.crt --tls-key-path=/a/tls.key"],
        "args": ["--advertised-hostname-template", "{pod_name}.h.ns.svc", "--quiet"],
    });
    let f = parse_flags(&c);
    let get = |n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    assert_eq!(get(F_CERT), Some(Some("/a/tls.crt".into())));
    assert_eq!(get(F_KEY), Some(Some("/a/tls.key".into())));
    assert_eq!(get(F_TEMPLATE), Some(Some("{pod_name}.h.ns.svc".into())));
    assert_eq!(get("--quiet"), Some(None));
    assert_eq!(https_host("https://[fd00::1]:443").as_deref(), Some("fd00::1"));
    assert_eq!(
        https_host("https://grpc.example.com").as_deref(),
        Some("grpc.example.com")
    );
    assert_eq!(https_host("grpc.example.com:443"), None);
}

/// A listener with no hostname and a route with no hostnames: no listener name is judged, so the
/// gRPC dial host is judged against that listener's certificate: covered is silent, a
/// certificate for another name fires on the router's dial flag.
#[test]
fn a_dial_host_no_listener_name_judges_is_judged_against_the_listener() {
    let text = fixture("silent-san-covers-advertised-name-grpc-at-gateway")
        .replace("      hostname: \"grpc.workers.example.com\"\n", "")
        .replace("  hostnames:\n    - \"grpc.workers.example.com\"\n", "");
    assert!(!text.contains("hostname:") && !text.contains("hostnames:"), "{text}");
    let f = run(SAN, &text);
    assert!(f.is_empty(), "{}", messages(&f));
    let other = text.replace(
        "  dnsNames:\n    - \"grpc.workers.example.com\"",
        "  dnsNames:\n    - \"other.workers.example.com\"",
    );
    let f = run(SAN, &other);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("gRPC dial host grpc.workers.example.com")
            && f[0].message.contains("ends TLS at listener `worker-grpc`"),
        "{}",
        f[0].message
    );
}

/// Only a rendered `networking.k8s.io` Ingress is judged by its `spec.tls` hosts: the same
/// uncovered host under an Ingress of the retired `extensions` group (schema-valid's business)
/// or under a custom kind with a look-alike `spec.tls` is not an Ingress TLS host.
#[test]
fn only_networking_ingresses_have_tls_hosts() {
    let text = fixture("fires-san-covers-advertised-name-ingress-tls-host");
    assert_eq!(run(SAN, &text).len(), 1);
    for (from, to) in [
        (
            "apiVersion: networking.k8s.io/v1\nkind: Ingress",
            "apiVersion: extensions/v1beta1\nkind: Ingress",
        ),
        (
            "apiVersion: networking.k8s.io/v1\nkind: Ingress",
            "apiVersion: example.io/v1\nkind: Proxy",
        ),
    ] {
        let near = text.replace(from, to);
        assert_ne!(near, text);
        let f = run(SAN, &near);
        assert!(f.is_empty(), "{to}: {}", messages(&f));
    }
}
