//! `chart-digest-pinned`: every remote chart has a sha256 in charts.lock.yaml that agrees with the state (and with a mirror tarball).

use super::*;

/// (repository URL, chart name) of a remote chart, as the lock records them.
fn chart_origin(r: &Release) -> Option<(Option<String>, String)> {
    match &r.chart_ref {
        ChartRef::Repo { chart, url, oci, .. } => Some((url.as_deref().map(|u| repo_url(u, *oci)), chart.clone())),
        ChartRef::Oci { url } => {
            let (repo, chart) = url.trim_end_matches('/').rsplit_once('/')?;
            Some((
                Some(repo.to_string()),
                chart.split([':', '@']).next().unwrap_or(chart).to_string(),
            ))
        }
        _ => None,
    }
}

fn lock_disagreement(r: &Release, e: &LockEntry) -> Option<String> {
    let v = r.version.as_deref().unwrap_or("");
    if !same_version(v, &e.version) {
        return Some(format!(
            "pins version {} but the state asks for {}",
            e.version,
            if v.is_empty() { "no version" } else { v }
        ));
    }
    let (repo, chart) = chart_origin(r)?;
    if e.chart != chart {
        return Some(format!("pins chart `{}` but the state installs `{chart}`", e.chart));
    }
    match repo {
        Some(u) if repo_url(&e.repository, e.repository.starts_with("oci://")) != u => {
            Some(format!("pins repository {} but the state uses {u}", e.repository))
        }
        _ => None,
    }
}

pub(super) fn chart_digest_pinned(ctx: &Ctx) -> Vec<Finding> {
    let (Some(state), Some(stack)) = (ctx.state, ctx.stack) else {
        return Vec::new();
    };
    let lock_name = stack.lock.file.as_deref().unwrap_or(&ctx.policy.settings.lock_file);
    let mut out = Vec::new();
    for r in state.installed().filter(|r| is_remote(r)) {
        let version = r.version.as_deref().unwrap_or("(no version)");
        let msg = match stack.lock.for_release(&r.name) {
            None => format!(
                "release {}: remote chart {} {version} has no sha256 in {lock_name}",
                r.id(),
                r.chart
            ),
            Some(e) => match lock_disagreement(r, e) {
                Some(d) => format!(
                    "release {}: the {lock_name} entry {d}; the sha256 pins another artifact",
                    r.id()
                ),
                None => continue,
            },
        };
        out.push(
            state_finding(CHART_DIGEST_PINNED, ctx, r, msg)
                .with_help(format!("record release, chart, repository, version and the sha256 of the chart tarball (`helm pull` + `sha256sum`) in {lock_name}")),
        );
    }
    for s in ctx.status {
        let Some(m) = &s.mirror else { continue };
        let Some(expected) = &m.expected else {
            continue;
        };
        if expected.eq_ignore_ascii_case(&m.sha256) {
            continue;
        }
        let msg = format!(
            "release {}: mirror tarball {} has sha256 {}, but {lock_name} pins {expected}",
            s.id(),
            m.tarball,
            m.sha256
        );
        let f = match state.releases.iter().find(|r| r.id() == s.id()) {
            Some(r) => state_finding(CHART_DIGEST_PINNED, ctx, r, msg),
            None => Finding::state(
                CHART_DIGEST_PINNED,
                Some(ctx.environment),
                Some(s.id()),
                &m.tarball,
                None,
                msg,
            ),
        };
        out.push(
            f.with_help("replace the mirror tarball with the pinned artifact (or, after review, update the lock)"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::policy::Policy;
    use crate::render::{MirrorCheck, ReleaseStatus};

    use crate::testkit::*;

    #[test]
    fn chart_digests_in_the_lock() {
        let mut openbao = rel(
            "helmfile.yaml",
            30,
            "openbao",
            "openbao",
            repo("openbao", "openbao", "https://openbao.github.io/openbao-helm", false),
        );
        openbao.version = Some("0.23.2".into());
        let st = state(
            vec![
                remote("cert-manager", "cert-manager", Some("v1.19.1")), // pinned: silent
                remote("trust-manager", "cert-manager", Some("v0.20.0")), // lock has another version
                remote("approver", "cert-manager", Some("v0.1.0")),      // lock names another repository
                openbao,                                                 // no lock entry
                rel("helmfile.yaml", 60, "nvcf", "nvcf-pki", local("charts/nvcf-pki")), // local: silent
            ],
            vec![],
        );
        let stack = lock(&[
            (
                "cert-manager",
                "cert-manager",
                "oci://quay.io/jetstack/charts",
                "1.19.1",
            ),
            (
                "trust-manager",
                "trust-manager",
                "oci://quay.io/jetstack/charts",
                "v0.19.0",
            ),
            ("approver", "approver", "https://charts.jetstack.io", "v0.1.0"),
        ]);
        let f = run_state(rule(CHART_DIGEST_PINNED), &st, &stack, &Policy::default(), &[]);
        let who: Vec<&str> = f.iter().map(|f| f.release.as_deref().unwrap()).collect();
        assert_eq!(
            who,
            ["cert-manager/trust-manager", "cert-manager/approver", "openbao/openbao"],
            "{f:#?}"
        );
        assert!(f[2].message.contains("has no sha256 in charts.lock.yaml"));
        insta::assert_json_snapshot!(f);
    }

    #[test]
    fn mirror_tarball_must_match_the_lock() {
        let st = state(vec![remote("cert-manager", "cert-manager", Some("v1.19.1"))], vec![]);
        let stack = lock(&[(
            "cert-manager",
            "cert-manager",
            "oci://quay.io/jetstack/charts",
            "v1.19.1",
        )]);
        let status = |sha: &str| ReleaseStatus {
            name: "cert-manager".into(),
            namespace: "cert-manager".into(),
            chart: "jetstack/cert-manager".into(),
            installed: true,
            version: Some("v1.19.1".into()),
            rendered: sha == SHA,
            reason: None,
            objects: 0,
            mirror: Some(MirrorCheck {
                tarball: "mirror/cert-manager-v1.19.1.tgz".into(),
                sha256: sha.into(),
                expected: Some(SHA.into()),
            }),
        };
        let ok = run_state(
            rule(CHART_DIGEST_PINNED),
            &st,
            &stack,
            &Policy::default(),
            &[status(SHA)],
        );
        assert!(ok.is_empty(), "{ok:#?}");
        let bad_sha = "f".repeat(64);
        let f = run_state(
            rule(CHART_DIGEST_PINNED),
            &st,
            &stack,
            &Policy::default(),
            &[status(&bad_sha)],
        );
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].message.contains("mirror/cert-manager-v1.19.1.tgz") && f[0].message.contains(SHA));
        assert_eq!(f[0].source.as_ref().unwrap().line, Some(10));
    }
}
