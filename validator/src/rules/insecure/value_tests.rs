//! Which inline release values `insecure-flag` counts: a `set:` string is read as a command line
//! only when it starts with a flag, a `set:` map is walked like values, and an OpenBao/Vault
//! server's `global.tlsDisable` (and only that path, only for such a server) is left to
//! plaintext-endpoint. Each case sits beside a near miss that must stay silent.

use super::tests::*;
use super::*;
use crate::testkit::*;
use serde_json::json;

fn messages(st: &crate::stack::EnvState) -> Vec<String> {
    run(INSECURE_FLAG, st, &[]).into_iter().map(|f| f.message).collect()
}

fn router(values: Value, set: Vec<(&str, Value)>) -> crate::stack::Release {
    let mut r = rel("helmfile.yaml", 4, "nvcf", "router", local("charts/request-router"));
    r.values = values;
    r.set = set.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    r
}

#[test]
fn a_set_string_counts_as_flags_only_when_it_starts_with_one() {
    let st = state(
        vec![router(
            json!({}),
            vec![
                ("server.extraArgs", json!("  --quic-insecure --listen-addr=:1")),
                // near misses: prose mentioning the flag, and a scalar that is no switch
                ("notes", json!("never pass --quic-insecure")),
                ("replicas", json!(2)),
            ],
        )],
        vec![],
    );
    let m = messages(&st);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("`set server.extraArgs=--quic-insecure`"), "{m:#?}");
}

#[test]
fn a_string_value_counts_as_flags_only_when_it_starts_with_one() {
    let st = state(
        vec![router(
            json!({"extraArgs": " --tls-skip-verify", "help": "do not use --tls-skip-verify"}),
            vec![],
        )],
        vec![],
    );
    let m = messages(&st);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("`extraArgs: --tls-skip-verify`"), "{m:#?}");
}

#[test]
fn a_set_map_or_list_is_walked_like_values() {
    let st = state(
        vec![router(
            json!({}),
            vec![
                ("router", json!({"quicInsecure": true, "grpcInsecure": false})),
                ("extraArgs", json!(["--enable-dev-peer-forwarding"])),
            ],
        )],
        vec![],
    );
    let m = messages(&st);
    assert_eq!(m.len(), 2, "{m:#?}");
    assert!(m[0].contains("`set router.quicInsecure: true`"), "{m:#?}");
    assert!(m[1].contains("`set extraArgs: --enable-dev-peer-forwarding`"), "{m:#?}");
}

#[test]
fn only_an_openbao_servers_global_tls_disable_is_left_to_plaintext_endpoint() {
    let bao = |values: Value, set: Vec<(&str, Value)>| {
        let mut r = router(values, set);
        r.name = "openbao".into();
        r.namespace = "openbao".into();
        r.chart_ref = repo("openbao", "openbao", "https://openbao.github.io/openbao-helm", false);
        r
    };
    // The server's own switch: plaintext-endpoint's finding, not this rule's.
    let st = state(
        vec![bao(
            json!({"global": {"tlsDisable": true}}),
            vec![("global.tlsDisable", json!(true))],
        )],
        vec![],
    );
    assert!(messages(&st).is_empty(), "{:#?}", messages(&st));
    // The same key deeper, or under another top-level key, is an ordinary insecure value.
    let st = state(
        vec![bao(
            json!({"injector": {"global": {"tlsDisable": true}}, "server": {"tlsDisable": true}}),
            vec![("injector.tlsDisable", json!(true))],
        )],
        vec![],
    );
    assert_eq!(messages(&st).len(), 3, "{:#?}", messages(&st));
    // Any other chart's global.tlsDisable is this rule's.
    let st = state(
        vec![router(
            json!({"global": {"tlsDisable": true}}),
            vec![("global.tlsDisable", json!(true))],
        )],
        vec![],
    );
    assert_eq!(messages(&st).len(), 2, "{:#?}", messages(&st));
}

#[test]
fn tls_enabled_false_counts_at_the_top_of_the_values_only() {
    let st = state(
        vec![router(
            json!({"tls": {"enabled": false}, "metrics": {"tls": {"enabled": false}}, "tlsx": {"enabled": false}, "other": {"enabled": false}}),
            vec![],
        )],
        vec![],
    );
    let m = messages(&st);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("`tls.enabled: false` turns TLS off"), "{m:#?}");
    // `tls.enabled: true` is fine.
    let st = state(vec![router(json!({"tls": {"enabled": true}}), vec![])], vec![]);
    assert!(messages(&st).is_empty());
    // Numbers as YAML writes switches: 0 is off, 1 (or any other number) is not.
    let st = state(vec![router(json!({"tls": {"enabled": 0}}), vec![])], vec![]);
    let m = messages(&st);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("`tls.enabled: 0` turns TLS off"), "{m:#?}");
    for on in [json!(1), json!(2)] {
        let st = state(vec![router(json!({"tls": {"enabled": on}}), vec![])], vec![]);
        assert!(messages(&st).is_empty(), "{on}: {:#?}", messages(&st));
    }
}
