//! `private-key-in-render` near misses: which Secrets count as holding a TLS key without key
//! material in it, when the merged `renderedvalues` of an environment are read, and that one place
//! of a release is one finding.

use super::private_key_in_render::private_key_in_render;
use super::tests::pem_key;
use crate::policy::Policy;
use crate::stack::StateValues;
use serde_json::json;

fn object_findings(yaml: &str) -> Vec<String> {
    let g = crate::testkit::graph("e", yaml);
    let p = Policy::default();
    private_key_in_render(&crate::testkit::ctx(&g, &p))
        .into_iter()
        .map(|f| f.message)
        .collect()
}

#[test]
fn only_a_core_secret_with_a_set_tls_key_counts_without_key_material() {
    let f = object_findings(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: opaque, namespace: ns}\nstringData: {tls.key: short}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: null-key, namespace: ns}\ndata: {tls.key: null}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: ns}\ndata: {tls.key: c2hvcnQ=}\n---\n\
         apiVersion: example.com/v1\nkind: Secret\nmetadata: {name: custom, namespace: ns}\ndata: {tls.key: c2hvcnQ=}\n",
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].contains("Secret ns/opaque: `stringData.tls.key` holds a TLS private key"),
        "{f:#?}"
    );
}

fn env_value(file: &str, path: &str, value: serde_json::Value) -> StateValues {
    StateValues {
        file: file.into(),
        line: 1,
        path: path.into(),
        value,
    }
}

fn state_findings(state: &crate::stack::EnvState) -> Vec<String> {
    let g = crate::testkit::graph("e", "");
    let p = Policy::default();
    let ctx = crate::rules::Ctx {
        state: Some(state),
        ..crate::testkit::ctx(&g, &p)
    };
    private_key_in_render(&ctx).into_iter().map(|f| f.message).collect()
}

#[test]
fn merged_values_are_read_unless_the_same_files_own_values_hold_a_key() {
    let mut state = crate::testkit::state(Vec::new(), Vec::new());
    // The file's own values hold no key: the key in its merged values is reported.
    state.environment_values = vec![
        env_value("helmfile.yaml", "environments.default.values", json!([{"replicas": 2}])),
        env_value("helmfile.yaml", "renderedvalues", json!({"serverKey": pem_key()})),
    ];
    let f = state_findings(&state);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].contains("`renderedvalues.serverKey`"), "{f:#?}");
    // Another file's own key does not hide this file's merged values.
    state.environment_values = vec![
        env_value("other.yaml", "environments.default.values", json!([{"k": pem_key()}])),
        env_value("helmfile.yaml", "renderedvalues", json!({"serverKey": pem_key()})),
    ];
    assert_eq!(state_findings(&state).len(), 2, "{:#?}", state_findings(&state));
}

#[test]
fn one_place_of_a_release_is_one_finding() {
    let mut r = crate::testkit::rel("helmfile.yaml", 3, "nvcf", "app", crate::testkit::local("charts/app"));
    r.set = vec![
        ("tls.key".into(), json!(pem_key())),
        ("tls.key".into(), json!(pem_key())),
    ];
    r.declared_values = vec![json!({"serverKey": pem_key()})];
    let state = crate::testkit::state(vec![r], Vec::new());
    let f = state_findings(&state);
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(
        f[0].contains("release nvcf/app: state `set tls.key` holds a PEM private key block"),
        "{f:#?}"
    );
    assert!(f[1].contains("`values[0].serverKey`"), "{f:#?}");
}
