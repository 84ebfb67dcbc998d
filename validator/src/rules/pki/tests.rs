//! Tests of the pki rule family: every fixture under tests/fixtures/pki fires (or stays silent)
//! with its exact rule id, plus cases built at test time (private keys, expiry relative to the
//! validation time, policy externals) that must not be committed as files.

use super::*;
use crate::finding::Severity;
use crate::pki::testcerts;
use crate::policy::Policy;
use crate::router::parse_flags;
use crate::testutil;
use std::path::PathBuf;
use time::macros::datetime;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pki")
}

fn rule(id: &str) -> &'static Rule {
    RULES
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no pki rule {id}"))
}

fn run_graph(id: &str, g: &Graph, policy: &Policy) -> Vec<Finding> {
    let ctx = testutil::ctx(g, policy);
    let out = (rule(id).check)(&ctx);
    for f in &out {
        assert_eq!(f.rule, id);
    }
    out
}

fn run(id: &str, yaml: &str) -> Vec<Finding> {
    run_graph(id, &testutil::graph("test", yaml), &Policy::default())
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(format!("{name}.yaml"))).unwrap()
}

fn messages(f: &[Finding]) -> String {
    f.iter()
        .map(|f| format!("- [{}] {}", f.sev().as_str(), f.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rule a fixture file is about: the longest rule id after `fires-`/`silent-`.
fn fixture_rule(stem: &str) -> (bool, &'static str) {
    let (fires, rest) = match (stem.strip_prefix("fires-"), stem.strip_prefix("silent-")) {
        (Some(r), _) => (true, r),
        (_, Some(r)) => (false, r),
        _ => panic!("fixture {stem} must start with fires- or silent-"),
    };
    let id = RULES
        .iter()
        .map(|r| r.id)
        .filter(|id| rest.starts_with(&format!("{id}-")))
        .max_by_key(|id| id.len())
        .unwrap_or_else(|| panic!("fixture {stem} names no pki rule"));
    (fires, id)
}

fn fixture_files() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? != "yaml" {
                return None;
            }
            Some((p.file_stem()?.to_str()?.to_string(), std::fs::read_to_string(&p).ok()?))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn fixtures_fire_with_their_rule_and_near_misses_stay_silent() {
    let files = fixture_files();
    assert!(files.len() >= 16, "fixtures missing: {}", files.len());
    let mut failures = Vec::new();
    for (stem, text) in &files {
        assert!(
            text.starts_with("# "),
            "{stem}: a fixture starts with a header comment saying what it shows"
        );
        let (fires, id) = fixture_rule(stem);
        let found = run(id, text);
        if fires && found.is_empty() {
            failures.push(format!("{stem}: expected {id} to fire, it stayed silent"));
        }
        if !fires && !found.is_empty() {
            failures.push(format!(
                "{stem}: expected {id} to stay silent, got:\n{}",
                messages(&found)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_rule_has_a_firing_and_a_silent_fixture() {
    let stems: Vec<String> = fixture_files().into_iter().map(|(s, _)| s).collect();
    for r in RULES {
        for kind in ["fires", "silent"] {
            assert!(
                stems
                    .iter()
                    .any(|s| s.starts_with(&format!("{kind}-{}-", r.id)) && fixture_rule(s).1 == r.id),
                "rule {} has no {kind}-{}-*.yaml fixture",
                r.id,
                r.id
            );
        }
    }
}

#[test]
fn findings_of_the_firing_fixtures_snapshot() {
    // One reviewed snapshot of what each firing fixture reports (rule, severity, line, message).
    let mut all = Vec::new();
    for (stem, text) in fixture_files().into_iter().filter(|(s, _)| s.starts_with("fires-")) {
        let (_, id) = fixture_rule(&stem);
        for f in run(id, &text) {
            all.push(serde_json::json!({
                "fixture": stem,
                "rule": f.rule,
                "severity": f.sev().as_str(),
                "line": f.source.as_ref().and_then(|s| s.line),
                "message": f.message,
            }));
        }
    }
    insta::assert_json_snapshot!("pki_fixture_findings", all);
}

// ---------------------------------------------------------------------------------------------
// san-covers-advertised-name

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
            "validator-policy.yaml",
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
    let with = |p: &Policy| testutil::with_externals(testutil::graph("customer-secret", &router), p);

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

// ---------------------------------------------------------------------------------------------
// certificate-server-auth, certificate-issuer-resolves, vault-issuer-secure

#[test]
fn openbao_role_mismatches_are_each_reported() {
    let f = run(SERVER_AUTH, &fixture("fires-certificate-server-auth-openbao-role"));
    let all = messages(&f);
    assert_eq!(f.len(), 4, "{all}");
    for want in [
        "requests an ECDSA key, but the OpenBao role published in ConfigMap openbao/openbao-pki-role (issuer openbao) has key_type=rsa",
        "has no commonName, but the OpenBao role",
        "requests [router.other.example]",
        "asks for duration 2160h (90 days), but the OpenBao role published in ConfigMap openbao/openbao-pki-role (issuer openbao) has max_ttl 720h (30 days)",
    ] {
        assert!(all.contains(want), "missing `{want}` in\n{all}");
    }
}

#[test]
fn openbao_role_name_rules() {
    let role = |v: serde_json::Value| OpenBaoRole {
        issuer_kind: "ClusterIssuer".into(),
        issuer_name: "x".into(),
        params: v,
    };
    let r = role(serde_json::json!({"allowed_domains": "example.com", "allow_subdomains": true}));
    assert!(r.allows("a.example.com") && r.allows("*.example.com") && r.allows("a.b.example.com"));
    assert!(!r.allows("example.com") && !r.allows("a.example.org"));
    let r = role(serde_json::json!({"allowed_domains": ["example.com"], "allow_bare_domains": "true"}));
    assert!(r.allows("example.com") && !r.allows("a.example.com"));
    let r = role(
        serde_json::json!({"allowed_domains": ["example.com"], "allow_subdomains": true, "allow_wildcard_certificates": false}),
    );
    assert!(!r.allows("*.example.com") && r.allows("a.example.com"));
    let r = role(serde_json::json!({"allowed_domains": ["router-*.example.com"], "allow_glob_domains": true}));
    assert!(r.allows("router-1.example.com") && !r.allows("api.example.com"));
    assert_eq!(go_duration("2160h"), Some(2160 * 3600));
    assert_eq!(go_duration("1h30m"), Some(5400));
    assert_eq!(go_duration("30d"), Some(30 * 86400));
    assert_eq!(go_duration("86400"), Some(86400));
    assert_eq!(go_duration("2160h0m0s"), Some(2160 * 3600));
    assert_eq!(go_duration("soon"), None);
}

#[test]
fn ip_sans_against_a_role_without_them() {
    let text = fixture("silent-certificate-server-auth-openbao-role");
    let with_ip = text.replace("  usages:\n", "  ipAddresses:\n    - 10.0.0.1\n  usages:\n");
    assert!(run(SERVER_AUTH, &with_ip).is_empty(), "allow_ip_sans defaults to true");
    let f = run(
        SERVER_AUTH,
        &with_ip.replace("\"max_ttl\"", "\"allow_ip_sans\": false, \"max_ttl\""),
    );
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(f[0].message.contains("requests IP SANs [10.0.0.1]"), "{}", f[0].message);
}

#[test]
fn server_flag_off_is_reported() {
    let text = fixture("silent-certificate-server-auth-openbao-role")
        .replace("\"server_flag\": true", "\"server_flag\": false");
    let f = run(SERVER_AUTH, &text);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(f[0].message.contains("server_flag=false"));
}

#[test]
fn issuer_hints_point_at_the_fix() {
    let f = run(ISSUER, &fixture("fires-certificate-issuer-resolves-issuer-kind"));
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message
            .contains("(a ClusterIssuer openbao exists: set issuerRef.kind: ClusterIssuer)"),
        "{}",
        f[0].message
    );
    // A policy external resolves it.
    let p = Policy::parse(
        "externals:\n  - apiVersion: cert-manager.io/v1\n    kind: ClusterIssuer\n    name: corp-pki\n",
        "validator-policy.yaml",
    )
    .unwrap();
    let g = testutil::with_externals(
        testutil::graph("customer-issuer", &fixture("fires-certificate-issuer-resolves-missing")),
        &p,
    );
    assert!(run_graph(ISSUER, &g, &p).is_empty());
}

#[test]
fn vault_issuer_problems_are_each_reported() {
    let f = run(VAULT, &fixture("fires-vault-issuer-secure-http-token"));
    let all = messages(&f);
    assert_eq!(f.len(), 4, "{all}");
    for want in [
        "not https",
        "neither caBundle nor caBundleSecretRef",
        "not a `<mount>/sign/<role>` path",
        "a static token (tokenSecretRef)",
    ] {
        assert!(all.contains(want), "missing `{want}` in\n{all}");
    }
}

// ---------------------------------------------------------------------------------------------
// Trust bundles

fn bundle_yaml(pem: &str, annotation: Option<&str>) -> String {
    let ann = annotation
        .map(|a| format!("  annotations:\n    nvcf.io/trust-bundle-fingerprint: \"{a}\"\n"))
        .unwrap_or_default();
    let body: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nvcf-trust-bundle\n{ann}data:\n  ca.crt: |\n{body}")
}

#[test]
fn a_bundle_with_a_private_key_is_refused_without_echoing_the_key() {
    let root = testcerts::root("Root");
    let key = testcerts::throwaway_key_pem(); // generated now, never committed
    let yaml = bundle_yaml(&format!("{}{key}", root.pem), None);
    let f = run(BUNDLE, &yaml);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("PEM block 2 is a PRIVATE KEY block"),
        "{}",
        f[0].message
    );
    assert!(f[0].help.as_deref().unwrap_or("").contains("rotate"));
    let rendered = serde_json::to_string(&f).unwrap();
    for line in key.lines().filter(|l| !l.starts_with("-----")) {
        assert!(!rendered.contains(line), "key material in a finding");
    }
    // The fingerprint rule does not judge a bundle it cannot parse (no second finding).
    assert!(run(FINGERPRINT, &yaml).is_empty());
}

#[test]
fn validity_is_judged_at_the_validation_time() {
    // testutil::ctx judges at 2026-11-29T12:00Z.
    let expired = testcerts::root_valid("Old", datetime!(2020-01-01 0:00 UTC), datetime!(2026-11-29 11:59 UTC));
    let future = testcerts::root_valid("New", datetime!(2026-11-29 12:01 UTC), datetime!(2036-01-01 0:00 UTC));
    let good = testcerts::root_valid("Good", datetime!(2026-11-29 11:59 UTC), datetime!(2036-01-01 0:00 UTC));
    let f = run(BUNDLE, &bundle_yaml(&expired.pem, None));
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("expired at 2026-11-29T11:59:00Z"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].sev(), Severity::Error);
    let f = run(BUNDLE, &bundle_yaml(&future.pem, None));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Some(Severity::Warning));
    assert!(run(BUNDLE, &bundle_yaml(&good.pem, None)).is_empty());
}

#[test]
fn duplicates_are_a_warning_and_leaves_an_error() {
    let f = run(BUNDLE, &fixture("fires-trust-bundle-valid-duplicates"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert_eq!(f[0].severity, Some(Severity::Warning));
    assert!(
        f[0].message.contains("certificate 3 `CN=Fixture Root A"),
        "{}",
        f[0].message
    );
    let f = run(BUNDLE, &fixture("fires-trust-bundle-valid-leaf"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert_eq!(f[0].sev(), Severity::Error);
    assert!(f[0].message.contains("is not a CA"), "{}", f[0].message);
}

#[test]
fn fingerprint_findings_name_both_values() {
    let f = run(FINGERPRINT, &fixture("fires-trust-bundle-fingerprint-stale-annotation"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
    let fp_ab = crate::pki::fingerprint::bundle_fingerprint(
        format!(
            "{}{}",
            std::fs::read_to_string(fixture_dir().join("certs/root-a.pem")).unwrap(),
            std::fs::read_to_string(fixture_dir().join("certs/root-b.pem")).unwrap()
        )
        .as_bytes(),
    )
    .unwrap();
    assert!(
        f[0].message
            .contains(&format!("nvcf-trust-bundle-v1 fingerprint {fp_ab}")),
        "{}",
        f[0].message
    );
    let f = run(FINGERPRINT, &fixture("fires-trust-bundle-fingerprint-profile-differs"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("but ConfigMap nvcf/nvcf-trust-bundle holds"),
        "{}",
        f[0].message
    );
}

// ---------------------------------------------------------------------------------------------
// TLS mounts and paths

#[test]
fn reloadable_reports_each_way_of_freezing_the_certificate() {
    let cases = [
        ("fires-tls-mount-reloadable-subpath", 2, "with subPath tls.crt"),
        ("fires-tls-mount-reloadable-env", 1, "through env TLS_KEY"),
        (
            "fires-tls-mount-reloadable-checksum",
            1,
            "annotation checksum/tls-secret",
        ),
        (
            "fires-tls-mount-reloadable-split-volumes",
            1,
            "from volume tls-crt and --tls-key-path from volume tls-key",
        ),
    ];
    for (name, n, want) in cases {
        let f = run(RELOAD, &fixture(name));
        assert_eq!(f.len(), n, "{name}: {}", messages(&f));
        assert!(f[0].message.contains(want), "{name}: {}", f[0].message);
    }
    // Reloader restarts on renewal too.
    let text = fixture("silent-tls-mount-reloadable-whole-volume")
        .replace("metadata:\n  name: request-router\n", "metadata:\n  name: request-router\n  annotations:\n    secret.reloader.stakater.com/reload: request-router-tls\n");
    let f = run(RELOAD, &text);
    assert_eq!(f.len(), 1, "{}", messages(&f));
}

#[test]
fn paths_findings_say_what_to_set() {
    let f = run(PATHS, &fixture("fires-tls-paths-consistent-half-set"));
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("sets --tls-cert-path but not --tls-key-path"),
        "{}",
        f[0].message
    );
    let f = run(PATHS, &fixture("fires-tls-paths-consistent-wrong-key"));
    let all = messages(&f);
    assert_eq!(f.len(), 2, "{all}");
    assert!(all.contains("names `cert.pem` inside volume tls"), "{all}");
    assert!(
        all.contains("reads key `tls.crt` of the TLS Secret request-router-tls, but the private key is in `tls.key`"),
        "{all}"
    );
    let f = run(PATHS, &fixture("fires-tls-paths-consistent-emptydir"));
    assert_eq!(f.len(), 2, "{}", messages(&f));
    assert!(
        f[0].message.contains("points into volume tls (emptyDir)"),
        "{}",
        f[0].message
    );
}

#[test]
fn vault_ca_bundle_is_a_bundle_too() {
    let issuer = fixture("silent-vault-issuer-secure-sa");
    assert!(run(BUNDLE, &issuer).is_empty());
    let leaf = std::fs::read_to_string(fixture_dir().join("certs/leaf-wildcard.pem")).unwrap();
    let b64 = |s: &str| {
        const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut o = String::new();
        for c in s.as_bytes().chunks(3) {
            let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
            for i in 0..4 {
                o.push(if i <= c.len() {
                    T[(n >> (18 - 6 * i) & 63) as usize] as char
                } else {
                    '='
                });
            }
        }
        o
    };
    let start = issuer.find("caBundle: ").unwrap() + "caBundle: ".len();
    let end = start + issuer[start..].find('\n').unwrap();
    let with_leaf = format!("{}{}{}", &issuer[..start], b64(&leaf), &issuer[end..]);
    let f = run(BUNDLE, &with_leaf);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message
            .starts_with("ClusterIssuer openbao spec.vault.caBundle: certificate 1 `CN=leaf-wildcard`"),
        "{}",
        f[0].message
    );
    let garbage = format!("{}not-base64!{}", &issuer[..start], &issuer[end..]);
    let f = run(BUNDLE, &garbage);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(f[0].message.contains("holds no certificate"), "{}", f[0].message);
}
