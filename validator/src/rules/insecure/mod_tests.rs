//! Unit tests of the family's shared helpers (`mod.rs`) through the two rules: which words of a
//! command line are flags, which command runs an OpenBao dev server, where and how a container's
//! finding names it, how long values are shown, and which charts are the OpenBao/Vault server.

use super::tests::*;
use super::*;
use crate::testkit::*;
use serde_json::json;

fn findings(rule_id: &str, yaml: &str) -> Vec<Finding> {
    let g = graph("e", yaml);
    let p = default_fixture_policy();
    (rule(rule_id).check)(&ctx(&g, &p))
}

fn messages(rule_id: &str, yaml: &str) -> Vec<String> {
    findings(rule_id, yaml).into_iter().map(|f| f.message).collect()
}

fn pod(name: &str, container: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: app}}\nspec:\n  containers:\n  - name: c\n    image: quay.io/x/y:1.0.0\n{container}")
}

/// `server -dev` as the first argument is OpenBao's dev server only where the image's
/// entrypoint runs it (`args` without `command`); a container whose `command` is a program
/// called `server` runs that program, with its own `-dev`.
#[test]
fn a_dev_server_is_the_entrypoints_subcommand_not_a_program_named_server() {
    assert_eq!(
        messages(PLAINTEXT_ENDPOINT, &pod("bao", "    args: [server, -dev]\n")),
        ["Pod app/bao: container `c` runs `(image entrypoint) server -dev`: an OpenBao/Vault dev server, in memory, unsealed, with a root token and a plaintext listener"]
    );
    for near in [
        "    command: [server, -dev]\n",
        "    command: [server]\n    args: [-dev]\n",
    ] {
        assert_eq!(
            messages(PLAINTEXT_ENDPOINT, &pod("web", near)),
            [] as [String; 0],
            "{near}"
        );
    }
}

/// `--` (the end of options) and a negative number are no flags: a URL after `--` is an argument
/// and the finding says so (not "`--` dials").
#[test]
fn the_end_of_options_and_negative_numbers_are_no_flags() {
    let yaml = pod(
        "p",
        "    command: [app, --retries, '-1', --, 'http://upstream.example.com/v1']\n",
    );
    let shown = messages(PLAINTEXT_ENDPOINT, &yaml);
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(
        shown[0]
            .starts_with("Pod app/p: container `c`: an argument dials `http://upstream.example.com/v1`, plain http://"),
        "{shown:#?}"
    );
}

/// A container named in quotes (`name: "b"`, `name: 'c'`) is found by its name: each finding
/// points at the line of its own container's flag, not at the first container's.
#[test]
fn a_quoted_container_name_is_found_at_its_own_line() {
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: app}\nspec:\n  containers:\n  - name: a\n    image: quay.io/x/y:1.0.0\n    args: [--quic-insecure]\n  - name: \"b\"\n    image: quay.io/x/y:1.0.0\n    args: [--quic-insecure]\n  - name: 'c'\n    image: quay.io/x/y:1.0.0\n    args: [--quic-insecure]\n";
    let lines: Vec<(String, Option<usize>)> = findings(INSECURE_FLAG, yaml)
        .into_iter()
        .map(|f| {
            (
                f.message.split('`').nth(1).unwrap_or_default().to_string(),
                f.source.and_then(|s| s.line),
            )
        })
        .collect();
    let want = |n: &str, l: usize| (n.to_string(), Some(l));
    assert_eq!(lines, [want("a", 8), want("b", 11), want("c", 14)]);
}

/// A container is named in messages by the list that holds it: an ephemeral container and a
/// Tekton sidecar by their own words.
#[test]
fn each_container_list_is_named_in_messages() {
    let ephemeral = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: app}\nspec:\n  containers:\n  - {name: c, image: 'quay.io/x/y:1.0.0'}\n  ephemeralContainers:\n  - {name: debug, image: 'quay.io/x/y:1.0.0', command: [curl, -k, 'https://a.example.com']}\n";
    assert_eq!(
        messages(INSECURE_FLAG, ephemeral),
        ["Pod app/p: ephemeralContainer `debug` runs with `curl -k`, which turns off TLS certificate verification"]
    );
    let sidecar = "apiVersion: tekton.dev/v1\nkind: Task\nmetadata: {name: t, namespace: app}\nspec:\n  steps:\n  - {name: s, image: 'quay.io/x/y:1.0.0', command: [make]}\n  sidecars:\n  - {name: proxy, image: 'quay.io/x/y:1.0.0', args: [--insecure-skip-tls-verify]}\n";
    assert_eq!(
        messages(INSECURE_FLAG, sidecar),
        ["Task app/t: sidecar `proxy` runs with `--insecure-skip-tls-verify`, which turns off TLS certificate verification"]
    );
}

/// A value quoted in a message is shown whole up to 60 characters and cut after 60 (`…`).
#[test]
fn values_in_messages_are_cut_after_sixty_characters() {
    let url = |len: usize| {
        let head = "http://bao.example.com/";
        format!("{head}{}", "a".repeat(len - head.len()))
    };
    let shown = |value: &str| {
        let yaml = pod("p", &format!("    env: [{{name: VAULT_ADDR, value: '{value}'}}]\n"));
        messages(PLAINTEXT_ENDPOINT, &yaml)
    };
    let sixty = url(60);
    assert_eq!(
        shown(&sixty),
        [format!(
            "Pod app/p: container `c` sets `VAULT_ADDR={sixty}`: OpenBao/Vault is reached over plain HTTP"
        )]
    );
    let long = url(61);
    assert_eq!(
        shown(&long),
        [format!(
            "Pod app/p: container `c` sets `VAULT_ADDR={}…`: OpenBao/Vault is reached over plain HTTP",
            &long[..60]
        )]
    );
}

/// HashiCorp's `vault` chart is an OpenBao/Vault server like `openbao`: offline, its
/// `global.tlsDisable: true` is plaintext-endpoint's finding. Another chart of HashiCorp's whose
/// name starts with `vault` (the secrets operator) is no server: plaintext-endpoint leaves its
/// values alone (insecure-flag reads them).
#[test]
fn the_vault_chart_is_a_server_and_other_vault_charts_are_not() {
    let release = |chart: &str| {
        let mut r = rel(
            "helmfile.yaml",
            9,
            "vault",
            chart,
            repo("hashicorp", chart, "https://helm.releases.hashicorp.com", false),
        );
        r.version = Some("1.0.0".into());
        r.values = json!({"global": {"tlsDisable": true}});
        r
    };
    let f = run(PLAINTEXT_ENDPOINT, &state(vec![release("vault")], vec![]), &[]);
    let shown: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        shown,
        [
            "release vault/vault (OpenBao chart, not rendered): `global.tlsDisable: true` serves the API over plain HTTP",
            "release vault/vault (OpenBao chart, not rendered): `server.standalone.config` is not set, and the chart's default listener has tls_disable = 1"
        ]
    );
    let operator = state(vec![release("vault-secrets-operator")], vec![]);
    let f = run(PLAINTEXT_ENDPOINT, &operator, &[]);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(run(INSECURE_FLAG, &operator, &[]).len(), 1);
}
