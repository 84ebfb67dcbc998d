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
    Policy::parse(yaml, "p.yaml", crate::rules::family_of).unwrap()
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

#[test]
fn inexact_versions_compare_as_text() {
    assert!(same_version("latest", " latest "));
    assert!(same_version("^1.2", "^1.2"));
    assert!(!same_version("^1.2", "^1.3"));
    assert!(!same_version("1.2.3", "^1.2.3"), "an exact and a range never agree");
    assert!(same_version("=1.2.3", "v1.2.3"));
}

#[test]
fn only_charts_fetched_from_somewhere_need_a_lock_entry() {
    let other = |raw: &str| {
        let mut r = rel("helmfile.yaml", 7, "x", "tool", ChartRef::Other { raw: raw.into() });
        r.version = Some("1.0.0".into());
        r
    };
    let run = |r: Release| {
        let st = state(vec![r], vec![]);
        run_state(
            rule(CHART_DIGEST_PINNED),
            &st,
            &crate::stack::Stack::default(),
            &Policy::default(),
            &[],
        )
    };
    assert!(
        run(other("charts/tool-1.0.0.tgz")).is_empty(),
        "a tarball in the repository"
    );
    let f = run(other("https://charts.example.com/tool-1.0.0.tgz"));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message.contains("has no sha256 in charts.lock.yaml"),
        "{}",
        f[0].message
    );
}

#[test]
fn allow_list_entries_match_whole_path_segments_and_never_when_empty() {
    assert!(allowed(
        "oci://quay.io/jetstack/charts",
        &["oci://quay.io/jetstack/charts/".into()]
    ));
    assert!(allowed(
        "OCI://Quay.io/jetstack/charts/x",
        &["oci://quay.io/jetstack/charts".into()]
    ));
    assert!(!allowed(
        "oci://quay.io/jetstack/chartsx",
        &["oci://quay.io/jetstack/charts".into()]
    ));
    assert!(
        !allowed("https://x.example.com", &["".into(), " ".into()]),
        "an empty entry allows nothing"
    );
    assert!(!allowed("https://x.example.com", &[]));
    assert!(allowed("https://x.example.com", &["*".into()]));
}

#[test]
fn local_chart_roots_are_relative_directories_matched_by_segment() {
    let roots = vec!["charts/".to_string()];
    assert!(inside_roots("charts/nvcf-pki", &roots));
    assert!(inside_roots("./charts/a/../b", &roots));
    assert!(
        !inside_roots("/charts/nvcf-pki", &roots),
        "an absolute path is never inside the repository"
    );
    assert!(
        !inside_roots("chartsvendor/tool", &roots),
        "a root is a directory, not a string prefix"
    );
    assert!(!inside_roots("charts", &roots), "the root itself is no chart");
    assert!(!inside_roots("charts/../../x", &roots));
    assert!(
        !inside_roots("charts/x", &["".to_string(), "./".to_string()]),
        "an empty root holds nothing"
    );
    assert_eq!(normalize("a/./b//c/../d"), Some("a/b/d".into()));
    assert_eq!(normalize("a/../.."), None);
    assert_eq!(
        roots_shown(&["charts".into(), "vendor/charts/".into()]),
        "charts/ or vendor/charts/"
    );
}

#[test]
fn a_repository_chart_whose_url_is_known_is_not_undeclared() {
    let st = state(
        vec![rel(
            "helmfile.yaml",
            4,
            "x",
            "known",
            repo("unlisted-name", "c", "https://charts.example.com", false),
        )],
        vec![],
    );
    let mut p = Policy::default();
    p.settings.allowed_chart_repositories = vec!["*".into()];
    let f = run_state(
        rule(CHART_SOURCE_ALLOWED),
        &st,
        &crate::stack::Stack::default(),
        &p,
        &[],
    );
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn registry_entries_fold_docker_hub_aliases_and_match_path_prefixes() {
    let admits = |entry: &str, image: &str| {
        let p = policy(&format!("settings: {{allowedImageRegistries: ['{entry}']}}\n"));
        !image_findings("e", image, &p)
            .iter()
            .any(|f| f.message.contains("not in the policy's allowedImageRegistries"))
    };
    assert!(admits("index.docker.io/bitnami", "bitnami/redis:7.2"));
    assert!(admits("registry-1.docker.io", "nginx:1.27"));
    assert!(admits("docker.io", "registry.hub.docker.com/library/nginx:1.27"));
    assert!(!admits("docker.io/bitnami", "nginx:1.27"));
    assert!(admits("nvcr.io/nvidia/", "nvcr.io/nvidia/nvcf/router:1.0.0"));
    assert!(
        admits("NVCR.io/nvidia/nvcf/router", "nvcr.io/nvidia/nvcf/router:1.0.0"),
        "the whole name"
    );
    assert!(!admits("nvcr.io/nvidia", "nvcr.io/other/router:1.0.0"));
    assert!(
        !admits("nvcr.io/nvid", "nvcr.io/nvidia/router:1.0.0"),
        "whole segments only"
    );
    assert!(!admits("quay.io", "nvcr.io/nvidia/router:1.0.0"));
    assert!(
        !admits(" ", "nvcr.io/nvidia/router:1.0.0"),
        "an empty entry admits nothing"
    );
}

#[test]
fn tags_messages_name_what_is_wrong() {
    let p = policy("settings: {allowedImageRegistries: [nvcr.io]}\n");
    let msgs = |image: &str| {
        image_findings("e", image, &p)
            .into_iter()
            .map(|f| f.message)
            .collect::<Vec<_>>()
    };
    let m = msgs("nvcr.io/a/b:latest");
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].contains("uses the moving tag `latest`"), "{m:#?}");
    let m = msgs("nvcr.io/a/b:Nightly");
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(
        m[0].contains("uses the moving tag `Nightly`: it names no version"),
        "{m:#?}"
    );
    for moving in ["stable", "main", "edge", "3", "alpine"] {
        let m = msgs(&format!("nvcr.io/a/b:{moving}"));
        assert!(
            m.len() == 1 && m[0].contains(&format!("moving tag `{moving}`")),
            "{m:#?}"
        );
    }
    let m = msgs("nvcr.io/a/b:1.5.0-SNAPSHOT");
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(
        m[0].contains("uses a snapshot/development tag (`snapshot` in `1.5.0-SNAPSHOT`)"),
        "{m:#?}"
    );
    let m = msgs("nvcr.io/a/b");
    assert!(m.len() == 1 && m[0].contains("has no tag"), "{m:#?}");
    assert!(msgs("nvcr.io/a/b:1.5.0").is_empty());
    // A digest pins a moving tag; a malformed one does not.
    assert!(msgs(&format!("nvcr.io/a/b:latest@sha256:{}", "a".repeat(64))).is_empty());
    let m = msgs("nvcr.io/a/b@sha256:xyz");
    assert!(m.len() == 1 && m[0].contains("malformed digest"), "{m:#?}");
    // Externals are the policy's, not the stack's images.
    let mut g = graph(
        "e",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: nvcf}\nspec:\n  containers: [{name: c, image: \"x:latest\"}]\n",
    );
    g.objects[0].prov.external = true;
    assert!((rule(IMAGE_PINNED).check)(&ctx(&g, &p)).is_empty());
}
