//! `vault-token-static` unit tests.

use super::super::tests::*;
use super::*;

#[test]
fn token_variable_names() {
    for n in ["BAO_TOKEN", "VAULT_TOKEN", "vault_token", "AGENT_VAULT_TOKEN"] {
        assert!(is_token_env(n), "{n}");
    }
    for n in [
        "BAO_TOKEN_PATH",
        "VAULT_TOKEN_FILE",
        "GITHUB_TOKEN",
        "TOKEN",
        "VAULTTOKEN",
        "BAO_ADDR",
    ] {
        assert!(!is_token_env(n), "{n}");
    }
}

#[test]
fn required_is_an_error_optional_a_warning_and_no_token_is_shown() {
    let f = run(TOKEN, &fixture("fires-vault-token-static-job-and-hook"));
    let all = messages(&f);
    assert_eq!(f.iter().map(|f| f.severity).collect::<Vec<_>>(), [None, None], "{all}");
    assert!(
        !all.contains("s.rootroot"),
        "the token's value must never be shown:\n{all}"
    );
    let f = run(TOKEN, &fixture("fires-vault-token-static-optional-bootstrap"));
    assert_eq!(
        f.iter().map(|f| f.severity).collect::<Vec<_>>(),
        [Some(Severity::Warning)]
    );
}

#[test]
fn a_secret_read_three_times_by_one_job_is_one_finding() {
    let f = crate::fold::fold(run(TOKEN, &fixture("fires-vault-token-static-script-volume")));
    let all = messages(&f);
    assert_eq!(f.len(), 3, "{all}");
    assert!(
        !all.contains("notarealtoken"),
        "the token's value must never be shown:\n{all}"
    );
    let related: Vec<&str> = f[1].related.iter().map(|r| r.message.as_str()).collect();
    assert_eq!(related.len(), 2, "{related:#?}");
    assert!(related[0].contains("`bao login …`") && related[1].contains("`X-Vault-Token` header"));
    assert!(f.iter().all(|f| f.unwaivable && f.severity.is_none()));
}

#[test]
fn tokens_in_the_values_of_an_unrendered_release() {
    use crate::testkit::{rel, repo, run_state, state};
    let mut r = rel(
        "helmfile.yaml",
        7,
        "c",
        "issuer",
        repo("example", "issuer", "https://charts.example.com", false),
    );
    r.declared_values = vec![serde_json::json!({
        "issuer": {"vault": {"auth": {"tokenSecretRef": {"name": "root", "key": "token"}}}},
        "env": [
            {"name": "VAULT_TOKEN", "value": "s.notarealtoken"},
            {"name": "BAO_TOKEN", "valueFrom": {"secretKeyRef": {"name": "boot", "key": "token", "optional": true}}},
            {"name": "VAULT_TOKEN_FILE", "value": "/t"}
        ]
    })];
    let st = state(vec![r.clone()], vec![]);
    let p = crate::policy::Policy::default();
    let f = run_state(rule(TOKEN), &st, &crate::stack::Stack::default(), &p, &[]);
    let all = messages(&f);
    assert_eq!(f.len(), 3, "{all}");
    assert!(!all.contains("notarealtoken"), "{all}");
    assert!(f[0].message.contains("`issuer.vault.auth.tokenSecretRef`") && f[0].unwaivable);
    assert!(f[1].message.contains("`env[0]` gives `VAULT_TOKEN`") && f[1].unwaivable);
    assert_eq!(f[2].severity, Some(Severity::Warning));
    // Rendered: its objects are judged instead.
    let status = [crate::render::ReleaseStatus {
        name: "issuer".into(),
        namespace: "c".into(),
        chart: "example/issuer".into(),
        installed: true,
        version: None,
        rendered: true,
        reason: None,
        objects: 1,
        mirror: None,
    }];
    assert!(run_state(rule(TOKEN), &st, &crate::stack::Stack::default(), &p, &status).is_empty());
}
