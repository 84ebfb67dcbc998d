use super::*;
use crate::diagram::{dot, json, mermaid};
use crate::rules::{self, Ctx, Scope};
use crate::sink::{self, Overrides};
use crate::testkit;

const SPLIT: &str = include_str!("fixtures/split-cluster.yaml");

/// The picture of `yaml` with the findings the real rules (and the sink) report on it.
fn picture(yaml: &str) -> Diagram {
    // The fixtures' policy: reviewed registries and the scopes of the custom kinds drawn here.
    let policy = testkit::default_fixture_policy();
    let g = testkit::graph("split-cluster", yaml);
    // After the example root's notBefore (2026-11-29T19:19Z), before anything expires.
    let ctx = Ctx {
        now: time::macros::datetime!(2027-01-15 12:00 UTC),
        ..testkit::ctx(&g, &policy)
    };
    let overrides = Overrides::new(&policy, &[], &[], &[]).unwrap();
    let findings = sink::apply(rules::run(&ctx, Scope::Objects), &policy, &overrides, ctx.now.date());
    build(&g, &findings)
}

fn first(n: &Node) -> String {
    n.label[0].clone()
}

/// `(from's first label line, edge, to's first label line, marks)` of every edge.
fn edges(d: &Diagram) -> Vec<(String, &'static str, String, Vec<&'static str>)> {
    d.edges
        .iter()
        .map(|e| {
            (
                first(d.node(&e.from).unwrap()),
                e.label.as_str(),
                first(d.node(&e.to).unwrap()),
                e.marks.iter().map(|m| m.rule).collect(),
            )
        })
        .collect()
}

fn has_edge(d: &Diagram, from: &str, label: &str, to: &str) -> bool {
    edges(d)
        .iter()
        .any(|(f, l, t, _)| f.contains(from) && *l == label && t.contains(to))
}

fn marks_of(d: &Diagram, from: &str, label: &str, to: &str) -> Vec<&'static str> {
    edges(d)
        .into_iter()
        .filter(|(f, l, t, _)| f.contains(from) && *l == label && t.contains(to))
        .flat_map(|(_, _, _, m)| m)
        .collect()
}

#[test]
fn split_cluster_draws_the_worker_and_trust_paths_clean() {
    let d = picture(SPLIT);
    // gRPC: dial host → HTTPS listener → GRPCRoute → router Service → router.
    assert!(has_edge(
        &d,
        "gRPC dial address",
        "dials",
        "Gateway nvcf-gateway/nvcf-gateway"
    ));
    let grpc_listener = d
        .nodes
        .iter()
        .find(|n| n.label.iter().any(|l| l == "listener worker-grpc HTTPS:443"))
        .expect("worker-grpc listener drawn");
    assert!(d
        .edges
        .iter()
        .any(|e| e.to == grpc_listener.id && d.node(&e.from).unwrap().kind == NodeKind::DialAddress));
    assert!(has_edge(
        &d,
        "Gateway nvcf-gateway",
        "attaches",
        "GRPCRoute nvcf/request-router-worker-grpc"
    ));
    assert!(has_edge(&d, "GRPCRoute", "routes to", "Service nvcf/request-router"));
    assert!(has_edge(
        &d,
        "Service nvcf/request-router",
        "routes to",
        "StatefulSet nvcf/request-router"
    ));
    // QUIC: dial address → UDP listener → UDPRoute → Service.
    assert!(has_edge(&d, "QUIC dial address", "dials", "Gateway nvcf-gateway"));
    assert!(has_edge(
        &d,
        "Gateway nvcf-gateway",
        "attaches",
        "UDPRoute nvcf/request-router-worker-quic"
    ));
    assert!(has_edge(&d, "UDPRoute", "routes to", "Service nvcf/request-router"));
    // Trust: OpenBao role → issuer → Certificate → Secret → router mount; bundle → profile.
    assert!(has_edge(
        &d,
        "ConfigMap openbao/openbao-pki-role",
        "signs",
        "ClusterIssuer openbao"
    ));
    assert!(has_edge(
        &d,
        "ClusterIssuer openbao",
        "signs",
        "Certificate nvcf/request-router"
    ));
    assert!(has_edge(
        &d,
        "Certificate nvcf/request-router",
        "writes",
        "Secret nvcf/request-router-tls"
    ));
    assert!(has_edge(
        &d,
        "Secret nvcf/request-router-tls",
        "mounts",
        "StatefulSet nvcf/request-router"
    ));
    assert!(has_edge(
        &d,
        "Secret nvcf-gateway/worker-grpc-tls",
        "mounts",
        "Gateway nvcf-gateway"
    ));
    assert!(has_edge(
        &d,
        "ConfigMap nvcf/nvcf-trust-bundle",
        "trusts",
        "ConfigMap nvcf/nvcf-worker-profile"
    ));
    assert!(has_edge(
        &d,
        "StatefulSet nvcf/request-router",
        "presents",
        "advertised name"
    ));
    // The valid render has no finding on the picture.
    let marked: Vec<_> = edges(&d).into_iter().filter(|e| !e.3.is_empty()).collect();
    let nodes: Vec<_> = d
        .nodes
        .iter()
        .filter(|n| !n.marks.is_empty())
        .map(|n| (first(n), &n.marks))
        .collect();
    assert!(!d.has_findings(), "{marked:?}\n{nodes:?}\n{:?}", d.unplaced);
}

#[test]
fn a_broken_udproute_backend_marks_its_edge_and_the_quic_leg() {
    // The UDPRoute points at a port the router Service does not have.
    let broken = SPLIT.replacen(
        "      name: request-router\n      port: 50072\n",
        "      name: request-router\n      port: 50073\n",
        1,
    );
    assert_ne!(broken, SPLIT, "the mutation applies");
    let d = picture(&broken);
    assert_eq!(
        marks_of(&d, "UDPRoute", "routes to", "Service nvcf/request-router"),
        ["route-backend-resolves"]
    );
    assert_eq!(
        marks_of(&d, "GRPCRoute", "routes to", "Service nvcf/request-router"),
        Vec::<&str>::new()
    );
    assert_eq!(
        marks_of(&d, "QUIC dial address", "dials", "Gateway"),
        ["worker-routes-complete"]
    );
    assert_eq!(
        marks_of(&d, "gRPC dial address", "dials", "Gateway"),
        Vec::<&str>::new()
    );
    let route = d.nodes.iter().find(|n| first(n).starts_with("UDPRoute")).unwrap();
    assert_eq!(route.marks[0].severity, Severity::Error);
}

#[test]
fn a_missing_issuer_is_drawn_dashed_and_marked() {
    let broken = SPLIT.replacen(
        "    kind: ClusterIssuer\n    name: openbao\n",
        "    kind: ClusterIssuer\n    name: openbao-typo\n",
        1,
    );
    assert_ne!(broken, SPLIT, "the mutation applies");
    let d = picture(&broken);
    let marks = marks_of(
        &d,
        "ClusterIssuer openbao-typo",
        "signs",
        "Certificate nvcf/request-router",
    );
    assert_eq!(marks, ["certificate-issuer-resolves"]);
    let missing = d
        .nodes
        .iter()
        .find(|n| first(n) == "ClusterIssuer openbao-typo")
        .unwrap();
    assert!(missing.missing);
    // The route and trust edges that are fine stay unmarked.
    assert!(marks_of(
        &d,
        "ConfigMap openbao/openbao-pki-role",
        "signs",
        "ClusterIssuer openbao"
    )
    .is_empty());
}

#[test]
fn an_uncovered_advertised_name_marks_the_presents_edges() {
    let broken = SPLIT.replacen(
        "  - '*.router.workers.nvcf.example.com'\n",
        "  - '*.other.workers.nvcf.example.com'\n",
        1,
    );
    assert_ne!(broken, SPLIT, "the mutation applies");
    let d = picture(&broken);
    assert_eq!(
        marks_of(&d, "StatefulSet nvcf/request-router", "presents", "advertised name"),
        ["san-covers-advertised-name", "san-covers-advertised-name"]
    );
}

#[test]
fn collapsing_keeps_what_has_findings_and_its_neighbours() {
    let broken = SPLIT.replacen(
        "      name: request-router\n      port: 50072\n",
        "      name: request-router\n      port: 50073\n",
        1,
    );
    let d = picture(&broken);
    let (c, dropped) = d.collapsed();
    assert!(dropped > 0 && c.nodes.len() < d.nodes.len());
    assert!(c.nodes.iter().any(|n| first(n).starts_with("UDPRoute")));
    assert!(!c
        .nodes
        .iter()
        .any(|n| first(n).starts_with("ConfigMap openbao/openbao-pki-role")));
    for e in &c.edges {
        assert!(c.node(&e.from).is_some() && c.node(&e.to).is_some());
    }
    let (clean, _) = picture(SPLIT).collapsed();
    assert!(clean.nodes.is_empty());
}

#[test]
fn snapshots_of_every_format() {
    let broken = SPLIT.replacen(
        "      name: request-router\n      port: 50072\n",
        "      name: request-router\n      port: 50073\n",
        1,
    );
    let d = [picture(&broken)];
    insta::assert_snapshot!("mermaid", mermaid::render(&d));
    insta::assert_snapshot!("dot", dot::render(&d));
    insta::assert_snapshot!("json", json::render(&d));
}

const HOSTILE: &[&str] = &[
    "a\"b",
    "x<script>y",
    "p|q",
    "l1\nl2",
    "t`t```",
    "#quot;",
    "a;b",
    "}]) end",
    "\\N\\G",
];

#[test]
fn mermaid_labels_carry_no_syntax() {
    for h in HOSTILE {
        let e = mermaid::escape(h);
        assert!(
            !e.contains(['"', '<', '>', '|', '\n', '`', '[', ']', '{', '}']),
            "{h:?} → {e}"
        );
        // Every `#` and `;` left belongs to an entity code `#N;` the escaper wrote.
        let mut rest = e.as_str();
        while let Some(i) = rest.find(['#', ';']) {
            assert_eq!(&rest[i..i + 1], "#", "{h:?} → {e}");
            let end = rest[i..].find(';').expect("entity ends") + i;
            assert!(rest[i + 1..end].bytes().all(|b| b.is_ascii_digit()), "{h:?} → {e}");
            rest = &rest[end + 1..];
        }
    }
    assert_eq!(mermaid::escape("a\"b|c"), "a#34;b#124;c");
}

#[test]
fn dot_strings_cannot_be_closed_or_escaped() {
    assert_eq!(dot::escape("a\"b\\N\nc"), "a\\\"b\\\\N c");
    for h in HOSTILE {
        let e = dot::escape(h);
        // No unescaped quote: every `"` is preceded by an odd run of backslashes.
        let b = e.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if c == b'"' {
                let run = b[..i].iter().rev().take_while(|&&x| x == b'\\').count();
                assert!(run % 2 == 1, "{h:?} → {e}");
            }
        }
        assert!(!e.contains('\n'));
    }
}

#[test]
fn a_mount_of_a_secret_nothing_writes_is_drawn_dashed() {
    let broken = SPLIT.replacen(
        "          secretName: request-router-tls\n",
        "          secretName: router-tls-typo\n",
        1,
    );
    assert_ne!(broken, SPLIT, "the mutation applies");
    let d = picture(&broken);
    let secret = d
        .nodes
        .iter()
        .find(|n| first(n) == "Secret nvcf/router-tls-typo")
        .unwrap();
    assert!(secret.missing);
    assert!(has_edge(
        &d,
        "Secret nvcf/router-tls-typo",
        "mounts",
        "StatefulSet nvcf/request-router"
    ));
    // tls-secret-resolves judges this mount: the edge carries its finding.
    assert_eq!(
        marks_of(&d, "Secret nvcf/router-tls-typo", "mounts", "StatefulSet"),
        vec!["tls-secret-resolves"]
    );
}

#[test]
fn a_wrong_recorded_fingerprint_marks_the_trust_edge() {
    let broken = SPLIT.replacen(
        "    nvcf.io/trust-bundle-fingerprint: sha256:361c",
        "    nvcf.io/trust-bundle-fingerprint: sha256:000c",
        1,
    );
    assert_ne!(broken, SPLIT, "the mutation applies");
    let d = picture(&broken);
    assert_eq!(
        marks_of(
            &d,
            "ConfigMap nvcf/nvcf-trust-bundle",
            "trusts",
            "ConfigMap nvcf/nvcf-worker-profile"
        ),
        ["trust-bundle-fingerprint"]
    );
    let bundle = d
        .nodes
        .iter()
        .find(|n| first(n) == "ConfigMap nvcf/nvcf-trust-bundle")
        .unwrap();
    assert_eq!(
        bundle.marks.iter().map(|m| m.rule).collect::<Vec<_>>(),
        ["trust-bundle-fingerprint"]
    );
}

#[test]
fn a_route_without_its_listener_attaches_to_a_dashed_one() {
    let broken = SPLIT.replacen("    sectionName: worker-grpc\n", "    sectionName: worker-grpx\n", 1);
    assert_ne!(broken, SPLIT, "the mutation applies");
    let d = picture(&broken);
    let marks = marks_of(&d, "Gateway nvcf-gateway/nvcf-gateway", "attaches", "GRPCRoute");
    assert_eq!(marks, ["route-parent-resolves"]);
    let parent = d
        .nodes
        .iter()
        .find(|n| n.missing && n.label.iter().any(|l| l.contains("worker-grpx")))
        .expect("the listener the route asks for is drawn, dashed");
    assert!(
        parent.label.iter().any(|l| l.contains("NoMatchingParent")),
        "{:?}",
        parent.label
    );
    // The gRPC leg is incomplete: its dial edge carries worker-routes-complete (and, as no
    // listener takes the dial host any more, the router's own certificate is judged for it).
    assert!(marks_of(&d, "gRPC dial address", "dials", "Gateway").contains(&"worker-routes-complete"));
}

#[test]
fn every_rule_an_edge_names_is_registered() {
    use super::EdgeKind::*;
    for k in [Signs, Writes, Mounts, Presents, Dials, Attaches, RoutesTo, Trusts] {
        for r in k.rules() {
            assert!(rules::find(r).is_some(), "edge `{}` names unknown rule {r}", k.as_str());
        }
    }
}
