//! Behaviours of the pinning rules that no fixture pinned down before (issue 10): each test here
//! fails when the guard it names is inverted or deleted.

use super::tests::*;
use super::*;
use crate::policy::Policy;
use crate::testkit::*;

fn image_findings(env: &str, image: &str, policy: &Policy) -> Vec<Finding> {
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: nvcf}}\nspec:\n  containers: [{{name: c, image: \"{image}\"}}]\n"
    );
    let g = graph(env, &yaml);
    (rule(IMAGE_PINNED).check)(&ctx(&g, policy))
}

fn policy(yaml: &str) -> Policy {
    Policy::parse(yaml, "p.yaml").unwrap()
}

#[test]
fn require_image_digests_matches_the_named_environment_only() {
    let p = policy("settings: {allowedImageRegistries: [nvcr.io], requireImageDigests: [prod]}\n");
    let tagged = "nvcr.io/nvidia/nvcf/request-router:1.4.2";
    let prod = image_findings("prod", tagged, &p);
    assert_eq!(prod.len(), 1, "{prod:#?}");
    assert!(prod[0].message.contains("no @sha256 digest"), "{}", prod[0].message);
    assert!(image_findings("default", tagged, &p).is_empty());
    assert!(image_findings("production", tagged, &p).is_empty(), "no prefix match");
    let digest = format!("{tagged}@sha256:{}", "a".repeat(64));
    assert!(image_findings("prod", &digest, &p).is_empty());
}

#[test]
fn digests_must_be_lowercase_hex_of_the_right_length() {
    let p = policy("settings: {allowedImageRegistries: [nvcr.io]}\n");
    let base = "nvcr.io/nvidia/nvcf/request-router:1.4.2@";
    for (digest, pinned) in [
        (format!("sha256:{}", "a".repeat(64)), true),
        (format!("sha512:{}", "0123456789abcdef".repeat(8)), true),
        (format!("sha256:{}", "A".repeat(64)), false),
        (format!("sha256:{}g", "a".repeat(63)), false),
        (format!("sha256:{}", "a".repeat(63)), false),
        (format!("sha512:{}", "a".repeat(64)), false),
        (format!("md5:{}", "a".repeat(32)), false),
    ] {
        let f = image_findings("e", &format!("{base}{digest}"), &p);
        assert_eq!(f.is_empty(), pinned, "{digest}: {f:#?}");
        if !pinned {
            assert!(f[0].message.contains("malformed digest"), "{}", f[0].message);
        }
    }
}

#[test]
fn a_direct_url_chart_must_be_listed() {
    let mut r = rel(
        "helmfile.yaml",
        3,
        "tools",
        "tool",
        ChartRef::Other {
            raw: "https://charts.example.com/stable/tool-1.0.0.tgz".into(),
        },
    );
    r.version = Some("1.0.0".into());
    let st = state(vec![r], vec![]);
    let run = |p: &Policy| run_state(rule(CHART_SOURCE_ALLOWED), &st, &crate::stack::Stack::default(), p, &[]);
    let unlisted = run(&policy(
        "settings: {allowedChartRepositories: [https://charts.example.com/other]}\n",
    ));
    assert_eq!(unlisted.len(), 1, "{unlisted:#?}");
    assert!(unlisted[0]
        .message
        .contains("not under the policy's allowedChartRepositories"));
    assert!(run(&policy(
        "settings: {allowedChartRepositories: [https://charts.example.com/stable]}\n"
    ))
    .is_empty());
    // A listed prefix is a path prefix, not a string prefix.
    assert_eq!(
        run(&policy(
            "settings: {allowedChartRepositories: [https://charts.example.com/sta]}\n"
        ))
        .len(),
        1
    );
}

#[test]
fn a_lock_entry_must_name_the_oci_release_s_chart_and_repository() {
    let oci = |url: &str| {
        let mut r = rel(
            "helmfile.yaml",
            5,
            "cert-manager",
            "cert-manager",
            ChartRef::Oci { url: url.into() },
        );
        r.version = Some("v1.19.1".into());
        r
    };
    let stack = lock(&[(
        "cert-manager",
        "cert-manager",
        "oci://quay.io/jetstack/charts",
        "v1.19.1",
    )]);
    let run = |r: Release| {
        let st = state(vec![r], vec![]);
        run_state(rule(CHART_DIGEST_PINNED), &st, &stack, &Policy::default(), &[])
    };
    assert!(run(oci("oci://quay.io/jetstack/charts/cert-manager")).is_empty());
    let other_chart = run(oci("oci://quay.io/jetstack/charts/cert-manager-fork"));
    assert_eq!(other_chart.len(), 1, "{other_chart:#?}");
    assert!(
        other_chart[0].message.contains("pins chart `cert-manager`"),
        "{}",
        other_chart[0].message
    );
    let other_repo = run(oci("oci://ghcr.io/evil/charts/cert-manager"));
    assert_eq!(other_repo.len(), 1, "{other_repo:#?}");
    assert!(
        other_repo[0].message.contains("pins repository"),
        "{}",
        other_repo[0].message
    );
}
