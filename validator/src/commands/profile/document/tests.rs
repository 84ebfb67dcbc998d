//! Written from nvcf-cli's ParseAndValidate (profile.go) and its tests (profile_test.go,
//! trust_test.go, addons_test.go): every case names the upstream rule it exercises.

use super::*;
use crate::pki::testcerts;
use serde_json::json;

fn root_pem() -> String {
    testcerts::root("profile test root").pem
}

/// A full profile nvcf-cli accepts (the shape of upstream's validControlPlaneProfileYAML).
fn valid(pem: &str) -> Value {
    let fp = crate::pki::fingerprint::bundle_fingerprint(pem.as_bytes()).unwrap();
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "controlPlane": {
            "clusterName": "cp-1",
            "ncaID": "nca-123",
            "region": "us-west-2",
            "endpoints": {
                "inCluster": {
                    "icmsURL": "http://icms.nvcf.svc.cluster.local:8080",
                    "revalURL": "http://reval.nvcf.svc.cluster.local:8080",
                    "natsURL": "nats://nats.nvcf.svc.cluster.local:4222"
                }
            },
            "gateway": {"httpURL": "https://api.nvcf.example.com", "grpcURL": "grpc.nvcf.example.com:443"},
            "addons": {"llm": {"requestRouterAddress": "quic.workers.nvcf.example.com:50072"}}
        },
        "transportTls": {"trustMode": "bundle", "trustBundleFingerprint": fp, "trustBundlePem": pem}
    })
}

fn problems_at(doc: &Value) -> Vec<String> {
    validate(doc, Scope::Full)
}

fn has(problems: &[String], field: &str, text: &str) -> bool {
    problems
        .iter()
        .any(|p| p.starts_with(&format!("{field}: ")) && p.contains(text))
}

fn set_at(doc: &mut Value, ptr: &str, v: Value) {
    *doc.pointer_mut(ptr)
        .unwrap_or_else(|| panic!("{ptr} in the test profile")) = v;
}

#[test]
fn the_valid_profile_has_no_problem() {
    assert_eq!(problems_at(&valid(&root_pem())), Vec::<String>::new());
}

#[test]
fn api_version_and_kind_are_required_and_exact() {
    let mut d = valid(&root_pem());
    set_at(&mut d, "/apiVersion", json!("nvcf.nvidia.com/v1"));
    set_at(&mut d, "/kind", json!(""));
    let p = problems_at(&d);
    assert!(has(&p, "apiVersion", "must be \"nvcf.nvidia.com/v1alpha1\""), "{p:?}");
    assert!(has(&p, "kind", "required"), "{p:?}");
}

#[test]
fn unknown_fields_are_refused_as_known_fields_decoding_does() {
    let mut d = valid(&root_pem());
    d["controlPlane"]["addons"]["llm"]["grpcAddress"] = json!("https://x:443");
    d["extra"] = json!(1);
    let p = problems_at(&d);
    assert!(
        has(&p, "schema", "controlPlane.addons.llm.grpcAddress: field not found"),
        "{p:?}"
    );
    assert!(has(&p, "schema", "extra: field not found"), "{p:?}");
}

#[test]
fn a_mapping_where_a_string_is_declared_is_refused() {
    let mut d = valid(&root_pem());
    set_at(&mut d, "/controlPlane/region", json!({"a": 1}));
    set_at(&mut d, "/controlPlane/ncaID", json!(123));
    let p = problems_at(&d);
    assert!(has(&p, "schema", "controlPlane.region: must be a string"), "{p:?}");
    assert!(has(&p, "schema", "controlPlane.ncaID: must be a string"), "{p:?}");
}

#[test]
fn cluster_name_nca_id_region_are_required() {
    let mut d = valid(&root_pem());
    set_at(&mut d, "/controlPlane/clusterName", json!("  "));
    d["controlPlane"].as_object_mut().unwrap().remove("region");
    let p = problems_at(&d);
    assert!(has(&p, "controlPlane.clusterName", "required"), "{p:?}");
    assert!(has(&p, "controlPlane.region", "required"), "{p:?}");
    assert!(!p.iter().any(|x| x.starts_with("controlPlane.ncaID")), "{p:?}");
}

#[test]
fn gateway_urls_follow_upstream_forms() {
    let mut d = valid(&root_pem());
    set_at(&mut d, "/controlPlane/gateway/httpURL", json!("ftp://api.example.com"));
    set_at(
        &mut d,
        "/controlPlane/gateway/grpcURL",
        json!("tcp://grpc.example.com:443"),
    );
    let p = problems_at(&d);
    assert!(
        has(&p, "controlPlane.gateway.httpURL", "scheme must be http or https"),
        "{p:?}"
    );
    assert!(
        has(
            &p,
            "controlPlane.gateway.grpcURL",
            "scheme must be grpc, grpcs, or https"
        ),
        "{p:?}"
    );
    for ok in [
        "grpcs://grpc.example.com:443",
        "https://grpc.example.com",
        "grpc.example.com:443",
        "[::1]:443",
    ] {
        set_at(&mut d, "/controlPlane/gateway/grpcURL", json!(ok));
        assert!(!has(&problems_at(&d), "controlPlane.gateway.grpcURL", ""), "{ok}");
    }
    set_at(&mut d, "/controlPlane/gateway/grpcURL", json!("grpc.example.com"));
    assert!(has(
        &problems_at(&d),
        "controlPlane.gateway.grpcURL",
        "must be a host:port address"
    ));
}

#[test]
fn at_least_one_endpoint_scope_is_required_and_a_present_scope_is_complete() {
    let mut d = valid(&root_pem());
    d["controlPlane"]["endpoints"] = json!({"computeReachable": {"icmsURL": "https://icms.example.com"}});
    let p = problems_at(&d);
    assert!(
        has(&p, "controlPlane.endpoints.computeReachable.revalURL", "required"),
        "{p:?}"
    );
    assert!(
        has(&p, "controlPlane.endpoints.computeReachable.natsURL", "required"),
        "{p:?}"
    );
    assert!(
        has(&p, "controlPlane.endpoints", "at least one endpoint scope is required"),
        "{p:?}"
    );
    d["controlPlane"]["endpoints"]["computeReachable"]["revalURL"] = json!("https://reval.example.com");
    d["controlPlane"]["endpoints"]["computeReachable"]["natsURL"] = json!("http://nats.example.com");
    assert!(has(
        &problems_at(&d),
        "controlPlane.endpoints.computeReachable.natsURL",
        "scheme must be nats or tls"
    ));
    d["controlPlane"]["endpoints"]["computeReachable"]["natsURL"] = json!("tls://nats.example.com:4222");
    assert_eq!(problems_at(&d), Vec::<String>::new());
}

#[test]
fn a_gateway_address_without_dns_needs_its_host_header() {
    let mut d = valid(&root_pem());
    set_at(&mut d, "/controlPlane/gateway/httpURL", json!("http://10.0.0.5:8080"));
    assert!(has(
        &problems_at(&d),
        "controlPlane.hosts.api",
        "required as Host header"
    ));
    d["controlPlane"]["hosts"] = json!({"api": "api.nvcf.example.com"});
    assert_eq!(problems_at(&d), Vec::<String>::new());
    d["controlPlane"]["hosts"]["sis"] = json!("https://sis.example.com");
    assert!(has(&problems_at(&d), "controlPlane.hosts.sis", "not a URL"));
}

#[test]
fn transport_trust_modes() {
    let pem = root_pem();
    let mut d = valid(&pem);
    set_at(&mut d, "/transportTls/trustMode", json!("pinned"));
    assert!(has(
        &problems_at(&d),
        "transportTls.trustMode",
        "must be system or bundle"
    ));
    set_at(&mut d, "/transportTls/trustMode", json!("system"));
    let p = problems_at(&d);
    assert!(
        has(&p, "transportTls.trustBundlePem", "must be empty when trustMode=system"),
        "{p:?}"
    );
    assert!(
        has(
            &p,
            "transportTls.trustBundleFingerprint",
            "must be empty when trustMode=system"
        ),
        "{p:?}"
    );
    d["transportTls"] = json!({"trustMode": "system"});
    assert_eq!(problems_at(&d), Vec::<String>::new());
    d["transportTls"] = json!({"trustMode": "bundle"});
    assert!(has(
        &problems_at(&d),
        "transportTls.trustBundlePem",
        "required when trustMode=bundle"
    ));
    // Absent block: accepted (backward compatibility upstream).
    d.as_object_mut().unwrap().remove("transportTls");
    assert_eq!(problems_at(&d), Vec::<String>::new());
}

#[test]
fn the_fingerprint_is_recomputed_and_must_match() {
    let pem = root_pem();
    let mut d = valid(&pem);
    let other = testcerts::root("another root").pem;
    let other_fp = crate::pki::fingerprint::bundle_fingerprint(other.as_bytes()).unwrap();
    set_at(&mut d, "/transportTls/trustBundleFingerprint", json!(other_fp));
    assert!(has(
        &problems_at(&d),
        "transportTls.trustBundleFingerprint",
        "mismatch: advertised"
    ));
    set_at(&mut d, "/transportTls/trustBundleFingerprint", json!("sha256:ABC"));
    assert!(has(
        &problems_at(&d),
        "transportTls.trustBundleFingerprint",
        "must match ^sha256:[0-9a-f]{64}$"
    ));
    // Order, duplicates and whitespace do not change it (nvcf-trust-bundle-v1).
    let both = format!("{other}\n\n{pem}{pem}");
    let mut d2 = valid(&both);
    set_at(&mut d2, "/transportTls/trustBundlePem", json!(format!("{pem}{other}")));
    assert_eq!(problems_at(&d2), Vec::<String>::new());
}

#[test]
fn the_bundle_holds_certificates_only() {
    let pem = root_pem();
    let mut d = valid(&pem);
    let key = testcerts::throwaway_key_pem();
    set_at(&mut d, "/transportTls/trustBundlePem", json!(format!("{pem}{key}")));
    let p = problems_at(&d);
    assert!(has(&p, "transportTls.trustBundlePem", "private key"), "{p:?}");
    assert!(
        !p.iter().any(|x| x.contains("MII")),
        "no key material in messages: {p:?}"
    );
    set_at(
        &mut d,
        "/transportTls/trustBundlePem",
        json!(format!("password=hunter2\n{pem}")),
    );
    assert!(has(
        &problems_at(&d),
        "transportTls.trustBundlePem",
        "outside PEM CERTIFICATE blocks"
    ));
    set_at(
        &mut d,
        "/transportTls/trustBundlePem",
        json!(format!("{pem}trailing\n")),
    );
    assert!(has(
        &problems_at(&d),
        "transportTls.trustBundlePem",
        "outside PEM CERTIFICATE blocks"
    ));
}

#[test]
fn management_tls_is_checked_only_when_present() {
    let mut d = valid(&root_pem());
    d["managementTls"] = json!({"trustMode": "bundle"});
    assert!(has(
        &problems_at(&d),
        "managementTls.caBundlePem",
        "required when trustMode=bundle"
    ));
    d["managementTls"] = json!({"trustMode": "system", "caBundlePem": root_pem()});
    assert!(has(
        &problems_at(&d),
        "managementTls.caBundlePem",
        "must be empty when trustMode=system"
    ));
    d["managementTls"] = json!({"trustMode": "bundle", "caBundlePem": root_pem()});
    assert_eq!(problems_at(&d), Vec::<String>::new());
}

#[test]
fn the_router_address_is_host_port() {
    let mut d = valid(&root_pem());
    // Upstream's addons_test: a value without a port, and a URL, are refused.
    for bad in [
        "not-a-host-port",
        "https://quic.example.com:443",
        "quic.example.com:",
        ":50072",
        "a:b:c",
        "[::1]50072",
    ] {
        set_at(&mut d, "/controlPlane/addons/llm/requestRouterAddress", json!(bad));
        assert!(
            has(
                &problems_at(&d),
                "controlPlane.addons.llm.requestRouterAddress",
                "must be host:port"
            ),
            "{bad}"
        );
    }
    for ok in [
        "llm-request-router.nvcf-cp.internal:50071",
        "10.0.0.1:50072",
        "[fd00::1]:50072",
        "",
    ] {
        set_at(&mut d, "/controlPlane/addons/llm/requestRouterAddress", json!(ok));
        assert_eq!(problems_at(&d), Vec::<String>::new(), "{ok}");
    }
}

#[test]
fn a_fragment_is_judged_on_what_this_stack_writes() {
    let pem = root_pem();
    let owned = Owned {
        trust_bundle_fingerprint: crate::pki::fingerprint::bundle_fingerprint(pem.as_bytes()).unwrap(),
        trust_bundle_pem: pem,
        request_router_address: "quic.example.com:50072".into(),
    };
    let (doc, replaced) = merge(Value::Null, &owned).unwrap();
    assert!(replaced.is_empty());
    assert_eq!(validate(&doc, Scope::Fragment), Vec::<String>::new());
    // nvcf-cli itself refuses it until the operator's fields are in.
    let full = validate(&doc, Scope::Full);
    assert!(has(&full, "controlPlane.clusterName", "required"), "{full:?}");
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["apiVersion", "kind", "controlPlane", "transportTls"]);
}

#[test]
fn merge_keeps_the_base_and_its_order_and_sets_only_what_it_owns() {
    let pem = root_pem();
    let fp = crate::pki::fingerprint::bundle_fingerprint(pem.as_bytes()).unwrap();
    let mut base = valid(&testcerts::root("old root").pem);
    base["controlPlane"]["addons"]["llm"]["requestRouterAddress"] = json!("old.example.com:1");
    let before: Vec<String> = base["controlPlane"].as_object().unwrap().keys().cloned().collect();
    let owned = Owned {
        trust_bundle_pem: pem.clone(),
        trust_bundle_fingerprint: fp.clone(),
        request_router_address: "quic.example.com:50072".into(),
    };
    let (doc, replaced) = merge(base.clone(), &owned).unwrap();
    let fields: Vec<&str> = replaced.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "controlPlane.addons.llm.requestRouterAddress",
            "transportTls.trustBundleFingerprint",
            "transportTls.trustBundlePem"
        ]
    );
    let after: Vec<String> = doc["controlPlane"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(before, after);
    assert_eq!(doc["controlPlane"]["endpoints"], base["controlPlane"]["endpoints"]);
    assert_eq!(doc["transportTls"]["trustBundleFingerprint"], json!(fp));
    assert_eq!(validate(&doc, Scope::Full), Vec::<String>::new());
    // A base whose parent of an owned field is no mapping is refused, not overwritten.
    let mut bad = base;
    bad["controlPlane"]["addons"] = json!("llm");
    assert!(merge(bad, &owned).unwrap_err().contains("`addons` is not a mapping"));
    assert!(merge(json!([1]), &owned).is_err());
}

#[test]
fn pem_of_round_trips_through_the_strict_parser() {
    let a = crate::pki::parse_bundle(root_pem().as_bytes()).unwrap();
    let b = crate::pki::parse_bundle(testcerts::root("b").pem.as_bytes()).unwrap();
    let ders = [a[0].as_ref(), b[0].as_ref()];
    let text = pem_of(&ders);
    let back = crate::pki::parse_bundle(text.as_bytes()).unwrap();
    assert_eq!(
        back.iter().map(|c| c.as_ref().to_vec()).collect::<Vec<_>>(),
        vec![ders[0].to_vec(), ders[1].to_vec()]
    );
    assert!(certificates_only(&text).is_ok());
    assert!(text.lines().all(|l| l.len() <= 64));
}

#[test]
fn split_host_port_is_go_s() {
    assert_eq!(split_host_port("h:1"), Some(("h", "1")));
    assert_eq!(split_host_port("[::1]:1"), Some(("::1", "1")));
    // Go leaves the port unchecked: upstream accepts it, so do we (the stack's own output is
    // checked by probe::parse_addr as well).
    assert_eq!(split_host_port("h:x"), Some(("h", "x")));
    for bad in ["h", "::1:1", "[::1]", "h]:1", "[h:1"] {
        assert_eq!(split_host_port(bad), None, "{bad}");
    }
}
