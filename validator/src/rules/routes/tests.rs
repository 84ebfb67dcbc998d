//! Tests of the routes family: the fixtures under `tests/fixtures/routes/` (each firing fixture must
//! make its rule fire with the `# expect:` texts of its header, each silent fixture must leave every
//! routes rule silent), plus unit tests of the Gateway API details.

use super::gateway::{pattern_matches, patterns_intersect};
use super::worker::{in_cluster, parse_addr, Addr};
use super::*;
use crate::policy::Policy;
use crate::testkit;
use crate::testkit::{check_fixtures, Silent};
use std::path::PathBuf;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/routes")
}

pub(super) fn fixture(name: &str) -> String {
    let path = fixture_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every finding of every routes rule over `yaml`, with `policy`.
fn run_with(yaml: &str, policy: &Policy) -> Vec<Finding> {
    let graph = testkit::with_externals(testkit::graph("split-cluster", yaml), policy);
    let ctx = testkit::ctx(&graph, policy);
    RULES.iter().flat_map(|r| (r.check)(&ctx)).collect()
}

pub(super) fn run(yaml: &str) -> Vec<Finding> {
    run_with(yaml, &Policy::default())
}

pub(super) fn of<'a>(findings: &'a [Finding], rule: &str) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.rule == rule).collect()
}

pub(super) fn dump(findings: &[&Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "  [{}] {:?} line {:?}: {}\n    help: {}",
                f.rule,
                f.severity,
                f.source.as_ref().and_then(|s| s.line),
                f.message,
                f.help.as_deref().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn policy(text: &str) -> Policy {
    Policy::parse(text, "validator-policy.yaml", crate::rules::family_of).expect("test policy parses")
}

#[test]
fn fixtures_fire_and_stay_silent() {
    // `# expect: TEXT` header lines and `# severity: warning` are checked by the runner.
    check_fixtures("routes", RULES, Silent::Family);
}

// ---------------------------------------------------------------------------------------------
// route-parent-resolves

#[test]
fn external_gateway_is_trusted_as_declared() {
    let text = fixture("fires-route-parent-resolves-missing-gateway.yaml");
    // Declared without listeners: trusted as given.
    let bare = policy(
        "externals:\n  - {apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, namespace: nvcf, name: shared-gateway}\n",
    );
    let f = run_with(&text, &bare);
    assert!(f.is_empty(), "{}", dump(&f.iter().collect::<Vec<_>>()));

    // Declared for another environment only: still missing here.
    let elsewhere = policy(
        "externals:\n  - {apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, namespace: nvcf, name: shared-gateway, environments: [default]}\n",
    );
    assert_eq!(of(&run_with(&text, &elsewhere), "route-parent-resolves").len(), 1);

    // Declared with listeners: they are checked as given.
    let udp_only = policy(
        "externals:\n  - apiVersion: gateway.networking.k8s.io/v1\n    kind: Gateway\n    namespace: nvcf\n    name: shared-gateway\n    spec:\n      listeners:\n        - {name: quic, protocol: UDP, port: 50072}\n",
    );
    let f = run_with(&text, &udp_only);
    let mine = of(&f, "route-parent-resolves");
    assert_eq!(mine.len(), 1, "{}", dump(&mine));
    assert!(
        mine[0].message.contains("Accepted=False NotAllowedByListeners"),
        "{}",
        mine[0].message
    );
    assert!(
        mine[0]
            .message
            .contains("has protocol UDP, which carries UDPRoute but not HTTPRoute"),
        "{}",
        mine[0].message
    );
}

#[test]
fn finding_points_at_the_parent_ref_line() {
    let text = fixture("fires-route-parent-resolves-section-name.yaml");
    let f = run(&text);
    let mine = of(&f, "route-parent-resolves");
    assert_eq!(mine.len(), 1, "{}", dump(&mine));
    let want = text.lines().position(|l| l.trim() == "sectionName: http").unwrap() + 1;
    assert_eq!(mine[0].source.as_ref().and_then(|s| s.line), Some(want));
    assert_eq!(mine[0].object.as_ref().map(|o| o.name.as_str()), Some("llm-invocation"));
}

#[test]
fn listener_protocols_and_kinds() {
    use super::gateway::kinds_for_protocol;
    assert_eq!(kinds_for_protocol("HTTPS"), Some(&["HTTPRoute", "GRPCRoute"][..]));
    assert_eq!(kinds_for_protocol("TLS"), Some(&["TLSRoute"][..]));
    assert_eq!(kinds_for_protocol("TCP"), Some(&["TCPRoute"][..]));
    assert_eq!(kinds_for_protocol("UDP"), Some(&["UDPRoute"][..]));
    assert_eq!(kinds_for_protocol("example.com/custom"), None);
}

#[test]
fn gateway_api_hostname_rules() {
    // Listener wildcards match one or more labels, never the bare suffix.
    assert!(pattern_matches("*.example.com", "a.example.com"));
    assert!(pattern_matches("*.example.com", "a.b.example.com"));
    assert!(!pattern_matches("*.example.com", "example.com"));
    assert!(!pattern_matches("*.example.com", "a.example.net"));
    assert!(pattern_matches("Grpc.Example.com", "grpc.example.com."));
    // Intersections, both directions, wildcards on either side.
    assert!(patterns_intersect("*.example.com", "llm.invocation.example.com"));
    assert!(patterns_intersect("llm.example.com", "*.example.com"));
    assert!(patterns_intersect("*.example.com", "*.api.example.com"));
    assert!(patterns_intersect("*.api.example.com", "*.example.com"));
    assert!(!patterns_intersect("*.example.com", "*.example.net"));
    assert!(!patterns_intersect("a.example.com", "b.example.com"));
    assert!(super::gateway::hostnames_intersect(None, &["anything.example"]));
    assert!(super::gateway::hostnames_intersect(Some("a.example.com"), &[]));
}

#[test]
fn namespace_selector_defaults_to_the_metadata_name_label() {
    // Namespace nvcf is not rendered: only kubernetes.io/metadata.name is known.
    let yaml = fixture("silent-worker-routes-complete-split-cluster.yaml");
    let graph = testkit::graph("split-cluster", &yaml);
    let labels = super::gateway::namespace_labels(&graph, "nvcf");
    assert_eq!(labels.len(), 1);
    let sel: serde_json::Value = serde_json::json!({"matchLabels": {"kubernetes.io/metadata.name": "nvcf"}});
    assert!(super::gateway::selector_matches(&sel, &labels));
    let other = super::gateway::namespace_labels(&graph, "other");
    assert!(!super::gateway::selector_matches(&sel, &other));
    let not_in = serde_json::json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["nvcf"]}]});
    assert!(!super::gateway::selector_matches(&not_in, &labels));
    assert!(
        super::gateway::selector_matches(&serde_json::json!({}), &labels),
        "empty selector selects everything"
    );
}

#[test]
fn external_secret_satisfies_a_listener_certificate() {
    let text = fixture("fires-route-parent-resolves-certificate-missing.yaml");
    let p = policy(
        "externals:\n  - {apiVersion: v1, kind: Secret, type: kubernetes.io/tls, namespace: nvcf, name: llm-cert}\n",
    );
    let f = run_with(&text, &p);
    assert!(
        of(&f, "route-parent-resolves").is_empty(),
        "{}",
        dump(&f.iter().collect::<Vec<_>>())
    );
    let opaque =
        policy("externals:\n  - {apiVersion: v1, kind: Secret, type: Opaque, namespace: nvcf, name: llm-cert}\n");
    let f = run_with(&text, &opaque);
    let mine = of(&f, "route-parent-resolves");
    assert_eq!(mine.len(), 1);
    assert!(mine[0].message.contains("has type Opaque"), "{}", mine[0].message);
}

#[test]
fn https_listener_without_certificate_refs() {
    let yaml = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: nvcf}\nspec:\n  listeners:\n    - {name: https, protocol: HTTPS, port: 443}\n";
    let f = run(yaml);
    let mine = of(&f, "route-parent-resolves");
    assert_eq!(mine.len(), 1, "{}", dump(&mine));
    assert!(
        mine[0].message.contains("ResolvedRefs=False InvalidCertificateRef"),
        "{}",
        mine[0].message
    );
    assert!(
        mine[0].message.contains("has no tls.certificateRefs"),
        "{}",
        mine[0].message
    );
}

/// Where a listener's certificate comes from: non-empty `tls.options` (an implementation-specific
/// source) stands in for certificateRefs, empty options do not; a certificateRef of another kind
/// than a core Secret is not the gate's to resolve.
#[test]
fn certificate_sources_other_than_core_secrets() {
    let gw = |tls: &str| {
        format!("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw, namespace: nvcf}}\nspec:\n  listeners:\n    - {{name: https, protocol: HTTPS, port: 443, tls: {tls}}}\n")
    };
    let parent = |tls: &str| {
        let f = run(&gw(tls));
        of(&f, "route-parent-resolves")
            .iter()
            .map(|f| f.message.clone())
            .collect::<Vec<_>>()
    };
    assert!(parent("{mode: Terminate, options: {example.com/certificate: vault}}").is_empty());
    let empty = parent("{mode: Terminate, options: {}}");
    assert_eq!(empty.len(), 1, "{empty:#?}");
    assert!(empty[0].contains("has no tls.certificateRefs"), "{empty:#?}");
    for other in [
        "{group: \"\", kind: ConfigMap, name: absent}",
        "{group: example.com, kind: Secret, name: absent}",
    ] {
        assert!(
            parent(&format!("{{mode: Terminate, certificateRefs: [{other}]}}")).is_empty(),
            "{other}"
        );
    }
    // The near miss: a core Secret of that name, which nothing writes.
    let missing = parent("{mode: Terminate, certificateRefs: [{name: absent}]}");
    assert_eq!(missing.len(), 1, "{missing:#?}");
    assert!(missing[0].contains("references Secret nvcf/absent"), "{missing:#?}");
}

/// A TLS listener terminates TLS unless its mode says Passthrough (Terminate is the default), and
/// then needs certificateRefs like an HTTPS one.
#[test]
fn a_tls_listener_terminates_by_default() {
    let gw = |tls: &str| {
        format!("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw, namespace: nvcf}}\nspec:\n  listeners:\n    - {{name: tls, protocol: TLS, port: 443, hostname: a.example.com{tls}}}\n")
    };
    for tls in ["", ", tls: {mode: Terminate}"] {
        let f = run(&gw(tls));
        let mine = of(&f, "route-parent-resolves");
        assert_eq!(mine.len(), 1, "{tls}: {}", dump(&mine));
        assert!(
            mine[0]
                .message
                .contains("terminates TLS (TLS) but has no tls.certificateRefs"),
            "{}",
            dump(&mine)
        );
    }
    let f = run(&gw(", tls: {mode: Passthrough}"));
    assert!(
        of(&f, "route-parent-resolves").is_empty(),
        "{}",
        dump(&f.iter().collect::<Vec<_>>())
    );
}

// ---------------------------------------------------------------------------------------------
// route-backend-resolves

#[test]
fn external_service_without_ports_is_trusted() {
    let text = fixture("fires-route-backend-resolves-missing-service.yaml");
    let p = policy("externals:\n  - {apiVersion: v1, kind: Service, namespace: nvcf, name: request-routr}\n");
    let f = run_with(&text, &p);
    assert!(
        of(&f, "route-backend-resolves").is_empty(),
        "{}",
        dump(&f.iter().collect::<Vec<_>>())
    );
}

/// Only a core Service backendRef is resolved: a ServiceImport, or a kind named Service of another
/// API group (implementation-specific backends), is not the gate's to find.
#[test]
fn only_core_service_backends_are_resolved() {
    let text = fixture("fires-route-backend-resolves-missing-service.yaml");
    let plain = "{name: request-routr, port: 50071}";
    assert_eq!(of(&run(&text), "route-backend-resolves").len(), 1);
    for backend in [
        "{group: multicluster.x-k8s.io, kind: ServiceImport, name: request-routr, port: 50071}",
        "{group: example.com, kind: Service, name: request-routr, port: 50071}",
    ] {
        let f = run(&text.replace(plain, backend));
        assert!(
            of(&f, "route-backend-resolves").is_empty(),
            "{backend}: {}",
            dump(&f.iter().collect::<Vec<_>>())
        );
    }
}

/// A ReferenceGrant grants only the kind (and name, when given) its `to` names: a grant of every
/// Secret, or of another Service, does not let a route reach this Service.
#[test]
fn a_reference_grant_grants_only_the_kind_it_names() {
    let text = fixture("silent-route-backend-resolves-cross-namespace-granted.yaml");
    let to = "{group: \"\", kind: Service, name: request-router}";
    assert!(text.contains(to));
    assert!(of(&run(&text), "route-backend-resolves").is_empty());
    for other in [
        "{group: \"\", kind: Secret}",
        "{group: \"\", kind: Service, name: another}",
    ] {
        let f = run(&text.replace(to, other));
        let mine = of(&f, "route-backend-resolves");
        assert_eq!(mine.len(), 1, "{other}: {}", dump(&mine));
        assert!(mine[0].message.contains("RefNotPermitted"), "{}", dump(&mine));
    }
    // An empty name grants every Service.
    assert!(of(
        &run(&text.replace(to, "{group: \"\", kind: Service, name: \"\"}")),
        "route-backend-resolves"
    )
    .is_empty());
}

#[test]
fn backend_finding_points_at_the_backend_ref_line() {
    let text = fixture("fires-route-backend-resolves-cross-namespace.yaml");
    let f = run(&text);
    let mine = of(&f, "route-backend-resolves");
    assert_eq!(mine.len(), 1, "{}", dump(&mine));
    let want = text
        .lines()
        .position(|l| l.contains("{name: request-router, namespace: nvcf, port: 50071}"))
        .unwrap()
        + 1;
    assert_eq!(mine[0].source.as_ref().and_then(|s| s.line), Some(want));
}

// ---------------------------------------------------------------------------------------------
// worker-routes-complete

#[test]
fn dial_addresses_parse() {
    assert_eq!(
        parse_addr("https://grpc.NVCF.example.com:8443"),
        Addr {
            scheme: Some("https".into()),
            host: "grpc.nvcf.example.com".into(),
            port: Some(8443)
        }
    );
    assert_eq!(parse_addr("https://grpc.example.com").port, Some(443));
    assert_eq!(parse_addr("https://grpc.example.com/path").port, Some(443));
    assert_eq!(
        parse_addr("quic.example.com:50072"),
        Addr {
            scheme: None,
            host: "quic.example.com".into(),
            port: Some(50072)
        }
    );
    assert_eq!(
        parse_addr("[2001:db8::1]:50072"),
        Addr {
            scheme: None,
            host: "2001:db8::1".into(),
            port: Some(50072)
        }
    );
    assert_eq!(parse_addr("quic.example.com").port, None);
    assert_eq!(parse_addr("0.0.0.0:50071").port, Some(50071));
}

#[test]
fn in_cluster_hosts() {
    let graph = testkit::graph("e", &fixture("silent-worker-routes-complete-in-cluster.yaml"));
    for h in [
        "request-router",
        "request-router.nvcf",
        "request-router.nvcf.svc",
        "a.b.svc.cluster.local",
        "localhost",
        "127.0.0.1",
    ] {
        assert!(in_cluster(&graph, h), "{h} is in-cluster");
    }
    for h in ["grpc.nvcf.example.com", "203.0.113.7", "request-router.other"] {
        assert!(!in_cluster(&graph, h), "{h} is external");
    }
}

#[test]
fn worker_finding_points_at_the_dial_flag() {
    let text = fixture("fires-worker-routes-complete-no-grpc-listener.yaml");
    let f = run(&text);
    let mine = of(&f, "worker-routes-complete");
    assert_eq!(mine.len(), 1, "only the gRPC leg is incomplete: {}", dump(&mine));
    let want = text
        .lines()
        .position(|l| l.trim_start().starts_with("- --grpc-pylon-dial-addr"))
        .unwrap()
        + 1;
    assert_eq!(mine[0].source.as_ref().and_then(|s| s.line), Some(want));
    assert!(
        mine[0]
            .help
            .as_deref()
            .unwrap_or("")
            .contains("backendRef to Service nvcf/request-router port 50071"),
        "{:?}",
        mine[0].help
    );
}

#[test]
fn no_router_means_no_worker_contract() {
    let text = fixture("silent-route-backend-resolves-tcp-and-udp-one-service.yaml");
    assert!(of(&run(&text), "worker-routes-complete").is_empty());
}

#[test]
fn external_gateway_with_declared_listeners_completes_the_contract() {
    // Router, Service and routes rendered; the Gateway exists outside the stack.
    let full = fixture("silent-worker-routes-complete-split-cluster.yaml");
    let without_gateway: String = full
        .split("\n---\n")
        .filter(|d| !d.lines().any(|l| l == "kind: Gateway" || l == "kind: Certificate"))
        .collect::<Vec<_>>()
        .join("\n---\n");
    let f = run(&without_gateway);
    assert_eq!(
        of(&f, "worker-routes-complete").len(),
        2,
        "{}",
        dump(&f.iter().collect::<Vec<_>>())
    );
    let p = policy(
        r#"externals:
  - apiVersion: gateway.networking.k8s.io/v1
    kind: Gateway
    namespace: nvcf-gateway
    name: nvcf-gateway
    spec:
      listeners:
        - {name: worker-grpc, protocol: HTTPS, port: 443, hostname: "*.nvcf.example.com", allowedRoutes: {namespaces: {from: All}}}
        - {name: worker-quic, protocol: UDP, port: 50072, allowedRoutes: {namespaces: {from: All}}}
"#,
    );
    let f = run_with(&without_gateway, &p);
    assert!(f.is_empty(), "{}", dump(&f.iter().collect::<Vec<_>>()));
}

// ---------------------------------------------------------------------------------------------
// gateway-api-version

#[test]
fn served_versions_follow_upstream_releases() {
    use super::version::served;
    assert_eq!(served("UDPRoute", 6, false), vec!["v1"]);
    assert_eq!(served("TCPRoute", 6, true), vec!["v1", "v1alpha2"]);
    assert!(served("UDPRoute", 5, false).is_empty(), "≤ v1.5: experimental only");
    assert_eq!(served("UDPRoute", 5, true), vec!["v1alpha2"]);
    assert_eq!(served("TLSRoute", 5, false), vec!["v1"]);
    assert_eq!(served("TLSRoute", 5, true), vec!["v1", "v1alpha2", "v1alpha3"]);
    assert_eq!(served("TLSRoute", 6, true), vec!["v1"]);
    assert!(served("TLSRoute", 4, false).is_empty());
    assert_eq!(served("GRPCRoute", 1, true), vec!["v1", "v1alpha2"]);
    assert_eq!(served("GRPCRoute", 2, true), vec!["v1"]);
    assert_eq!(served("HTTPRoute", 6, false), vec!["v1", "v1beta1"]);
    assert_eq!(
        served("UDPRoute", 9, false),
        vec!["v1"],
        "newer releases are judged like the newest known"
    );
}

#[test]
fn version_follows_the_policy_declaration() {
    let v1 = fixture("silent-gateway-api-version-v1.yaml");
    let alpha = fixture("fires-gateway-api-version-udproute-v1alpha2.yaml");
    let v15 = policy("settings:\n  gatewayApi: {version: v1.5, channel: standard}\n");
    let f = run_with(&v1, &v15);
    let mine = of(&f, "gateway-api-version");
    let kinds: Vec<&str> = mine
        .iter()
        .filter_map(|f| f.object.as_ref().map(|o| o.kind.as_str()))
        .collect();
    assert_eq!(kinds, vec!["TCPRoute", "UDPRoute"], "{}", dump(&mine));
    assert!(
        mine[1].message.contains("has no UDPRoute at all"),
        "{}",
        mine[1].message
    );
    assert!(
        mine[1].help.as_deref().unwrap_or("").contains("experimental channel"),
        "{:?}",
        mine[1].help
    );

    let v15x = policy("settings:\n  gatewayApi: {version: \"1.5\", channel: experimental}\n");
    assert!(
        of(&run_with(&alpha, &v15x), "gateway-api-version").is_empty(),
        "v1alpha2 UDPRoute is served on v1.5 experimental"
    );
    assert_eq!(
        of(&run_with(&v1, &v15x), "gateway-api-version").len(),
        2,
        "v1 TCPRoute/UDPRoute only from v1.6"
    );
    let v16x = policy("settings:\n  gatewayApi: {version: v1.6, channel: experimental}\n");
    assert!(of(&run_with(&alpha, &v16x), "gateway-api-version").is_empty());
}

// ---------------------------------------------------------------------------------------------
// Snapshots of the full wording (reviewed by hand; CI never updates them).

#[test]
fn snapshot_worker_route_not_accepted() {
    let f = run(&fixture("fires-worker-routes-complete-not-accepted.yaml"));
    insta::assert_json_snapshot!("worker_route_not_accepted", f);
}

#[test]
fn snapshot_backend_and_version() {
    let mut f = run(&fixture("fires-route-backend-resolves-udp-to-tcp-port.yaml"));
    f.extend(run(&fixture("fires-gateway-api-version-udproute-v1alpha2.yaml")));
    insta::assert_json_snapshot!("backend_and_version", f);
}

#[test]
fn worker_contract_reads_app_containers_of_statefulsets_deployments_and_daemonsets() {
    let doc = |kind: &str, list: &str| {
        format!(
            "apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: request-router, namespace: nvcf}}\nspec:\n  \
             template:\n    spec:\n      {list}:\n        - name: router\n          \
             args: [\"--grpc-pylon-dial-addr=grpc.nvcf.example.com:443\"]\n"
        )
    };
    let count = |kind: &str, list: &str| of(&run(&doc(kind, list)), "worker-routes-complete").len();
    assert_eq!(count("Deployment", "containers"), 1);
    assert_eq!(count("StatefulSet", "containers"), 1);
    assert_eq!(
        count("Deployment", "initContainers"),
        0,
        "init containers are not judged"
    );
    assert_eq!(count("DaemonSet", "containers"), 1, "a DaemonSet is a workload too");
    assert_eq!(count("Job", "containers"), 0, "only long-running workloads are judged");
}
