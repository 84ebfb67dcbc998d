//! `certificate-server-auth` against an OpenBao role, one difference at a time from a Certificate
//! the role signs as asked (issue 31: the mutants its run let through; ci/mutants names them).

use super::super::tests::*;
use super::*;

/// A role under which the fixture's Certificate (ECDSA 256, 2160h, a wildcard of the headless
/// service and `router.other.example`, issuer ClusterIssuer openbao) is issued as asked.
const ROLE: &str = r#"{"allowed_domains": ["request-router-headless.nvcf.svc.cluster.local", "other.example"], "allow_subdomains": true, "allow_bare_domains": true, "key_type": "ec", "require_cn": false, "max_ttl": "2160h"}"#;

/// The fixture with `role` (its keys over ROLE's) and the Certificate's text edited.
fn findings(role: &str, edits: &[(&str, &str)]) -> Vec<Finding> {
    let mut params: serde_json::Value = serde_json::from_str(ROLE).unwrap();
    let extra: serde_json::Value = serde_json::from_str(role).unwrap();
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let base = fixture("fires-certificate-server-auth-openbao-role");
    let line = base
        .lines()
        .find(|l| l.trim_start().starts_with("{\"allowed_domains\""))
        .unwrap();
    let mut text = base.replace(line, &format!("    {params}"));
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    run(SERVER_AUTH, &text)
}

#[test]
fn a_role_that_issues_as_asked_is_silent() {
    let f = findings("{}", &[]);
    assert!(f.is_empty(), "{}", messages(&f));
}

/// The role judges only Certificates of its own issuer: cert-manager's group, its kind, its name.
#[test]
fn a_role_judges_only_the_certificates_of_its_issuer() {
    let refused = r#"{"key_type": "rsa"}"#;
    assert_eq!(findings(refused, &[]).len(), 1);
    for edit in [
        (
            "    kind: ClusterIssuer\n    name: openbao",
            "    kind: Issuer\n    name: openbao",
        ),
        ("    name: openbao\n---", "    name: another\n---"),
        (
            "    group: cert-manager.io\n    kind: ClusterIssuer",
            "    group: issuers.example.io\n    kind: ClusterIssuer",
        ),
    ] {
        let f = findings(refused, &[edit]);
        assert!(f.is_empty(), "{}: {}", edit.1, messages(&f));
    }
}

/// Usages: `server auth` alone is enough; `client auth` alone is a client certificate, not judged.
#[test]
fn server_auth_alone_serves_and_client_auth_alone_is_not_judged() {
    let usages = "    - server auth\n    - digital signature\n    - key encipherment\n";
    let f = findings("{}", &[(usages, "    - server auth\n")]);
    assert!(f.is_empty(), "{}", messages(&f));
    let f = findings(r#"{"key_type": "rsa"}"#, &[(usages, "    - client auth\n")]);
    assert!(f.is_empty(), "{}", messages(&f));
}

/// Key type and size as OpenBao checks them: Ed25519 has no size, `any` takes every type and
/// size, `key_bits` 0 means the type's default.
#[test]
fn key_types_and_sizes_are_judged_as_openbao_does() {
    let ed = [("algorithm: ECDSA\n    size: 256", "algorithm: Ed25519")];
    let f = findings(r#"{"key_type": "ed25519"}"#, &ed);
    assert!(f.is_empty(), "{}", messages(&f));
    let f = findings(r#"{"key_bits": 384}"#, &[]);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("requests a 256-bit ECDSA key") && f[0].message.contains("key_bits=384"),
        "{}",
        messages(&f)
    );
    let f = findings(r#"{"key_type": "any", "key_bits": 4096}"#, &[]);
    assert!(f.is_empty(), "{}", messages(&f));
    let rsa = [("algorithm: ECDSA\n    size: 256", "algorithm: RSA\n    size: 1024")];
    let f = findings(r#"{"key_type": "rsa", "key_bits": 0}"#, &rsa);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(f[0].message.contains("key_bits=2048"), "{}", messages(&f));
}

/// A common name the role allows satisfies require_cn; an empty one is none.
#[test]
fn a_common_name_satisfies_require_cn_and_an_empty_one_does_not() {
    let at = "  secretName: request-router-tls\n";
    let f = findings(
        r#"{"require_cn": true}"#,
        &[(
            at,
            "  secretName: request-router-tls\n  commonName: router.other.example\n",
        )],
    );
    assert!(f.is_empty(), "{}", messages(&f));
    let f = findings(
        r#"{"require_cn": true}"#,
        &[(at, "  secretName: request-router-tls\n  commonName: \"\"\n")],
    );
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(f[0].message.contains("has no commonName"), "{}", messages(&f));
}

/// The refusal names allow_wildcard_certificates=false only when that is why a wildcard is refused.
#[test]
fn a_refused_wildcard_names_the_wildcard_switch_only_when_it_is_off() {
    let names = (
        "    - \"router.other.example\"\n",
        "    - \"router.other.example\"\n    - \"*.evil.example\"\n",
    );
    let f = findings("{}", &[names]);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("*.evil.example") && !f[0].message.contains("allow_wildcard_certificates"),
        "{}",
        messages(&f)
    );
    let f = findings(r#"{"allow_wildcard_certificates": false}"#, &[]);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains(", allow_wildcard_certificates=false"),
        "{}",
        messages(&f)
    );
}

/// Without spec.duration cert-manager asks for 2160h; a max_ttl of 0 is no limit (the mount's).
#[test]
fn the_default_duration_is_judged_and_a_zero_max_ttl_is_no_limit() {
    let dur = [("  duration: 2160h\n", "")];
    let f = findings(r#"{"max_ttl": "720h"}"#, &dur);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(f[0].message.contains("asks for duration 2160h"), "{}", messages(&f));
    let f = findings(r#"{"max_ttl": 0}"#, &[]);
    assert!(f.is_empty(), "{}", messages(&f));
}

/// `localhost` and `localdomain` pass by allow_localhost (on by default), not their wildcards.
#[test]
fn localhost_names_pass_by_allow_localhost_but_not_as_wildcards() {
    let names = (
        "    - \"router.other.example\"\n",
        "    - \"router.other.example\"\n    - localhost\n    - localdomain\n",
    );
    let f = findings("{}", &[names]);
    assert!(f.is_empty(), "{}", messages(&f));
    let wild = (
        "    - \"router.other.example\"\n",
        "    - \"router.other.example\"\n    - \"*.localhost\"\n",
    );
    let f = findings("{}", &[wild]);
    assert_eq!(f.len(), 1, "{}", messages(&f));
}
