//! `chart-source-allowed`: charts come from an allowed https/oci repository or a local path under charts/.

use super::*;

pub(super) fn chart_source_allowed(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let list = &ctx.policy.settings.allowed_chart_repositories;
    let roots = &ctx.policy.settings.local_chart_roots;
    let shown = roots_shown(roots);
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for repo in &state.repositories {
        let url = repo_url(&repo.url, repo.oci);
        if !seen.insert((repo.file.clone(), repo.name.clone(), url.clone())) {
            continue;
        }
        let msg = if is_http(&url) {
            format!(
                "repository `{}` is plain HTTP ({url}): charts and their index can be swapped in transit",
                repo.name
            )
        } else if !allowed(&url, list) {
            format!(
                "repository `{}` ({url}) is not in the policy's allowedChartRepositories",
                repo.name
            )
        } else {
            continue;
        };
        out.push(
            Finding::state(CHART_SOURCE_ALLOWED, Some(ctx.environment), None, &repo.file, None, msg)
                .with_help("use the repository's https:// or oci:// URL and list it in the policy's settings.allowedChartRepositories after review"),
        );
    }
    for r in state.installed() {
        let problem = match &r.chart_ref {
            ChartRef::Repo { repo, url, .. } => {
                if url.is_none() && state.repository(repo).is_none() {
                    Some(format!(
                        "chart {} names repository `{repo}`, which no state file declares",
                        r.chart
                    ))
                } else {
                    None
                }
            }
            ChartRef::Oci { url } if !allowed(url, list) => Some(format!(
                "chart {url} is not under the policy's allowedChartRepositories"
            )),
            ChartRef::Oci { .. } => None,
            ChartRef::Other { raw } if raw.contains("://") => {
                if is_http(raw) {
                    Some(format!("chart {raw} is fetched over plain HTTP"))
                } else if !allowed(raw, list) {
                    Some(format!(
                        "chart {raw} is not under the policy's allowedChartRepositories"
                    ))
                } else {
                    None
                }
            }
            ChartRef::Other { raw } => {
                let dir = r.file.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                let path = if raw.starts_with('/') {
                    raw.clone()
                } else {
                    format!("{dir}/{raw}")
                };
                (!inside_roots(&path, roots))
                    .then(|| format!("local chart {raw} is outside the policy's local chart roots ({shown})"))
            }
            ChartRef::Local { path } => (!inside_roots(path, roots)).then(|| {
                format!(
                    "local chart {} ({path}) is outside the policy's local chart roots ({shown})",
                    r.chart
                )
            }),
        };
        if let Some(p) = problem {
            out.push(
                state_finding(CHART_SOURCE_ALLOWED, ctx, r, format!("release {}: {p}", r.id()))
                    .with_help(format!("keep local charts under {shown} (or list their directory in the policy's settings.localChartRoots); take upstream charts from an allowed https/oci repository, pinned")),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::policy::Policy;

    use crate::stack::Stack;
    use crate::testkit::*;

    #[test]
    fn chart_sources() {
        let st = state(
            vec![
                rel(
                    "helmfile.yaml",
                    10,
                    "cert-manager",
                    "cert-manager",
                    repo("jetstack", "cert-manager", "quay.io/jetstack/charts", true),
                ),
                rel(
                    "helmfile.yaml",
                    20,
                    "legacy",
                    "legacy",
                    repo("legacy", "tool", "http://charts.example.com", false),
                ),
                rel(
                    "helmfile.yaml",
                    30,
                    "x",
                    "undeclared",
                    ChartRef::Repo {
                        repo: "nope".into(),
                        chart: "c".into(),
                        url: None,
                        oci: false,
                    },
                ),
                rel("helmfile.yaml", 40, "x", "shared", local("../shared/charts/tool")),
                rel("helmfile.yaml", 41, "x", "vendored-elsewhere", local("vendor/tool")),
                rel("helmfile.yaml", 42, "x", "charts-dir-itself", local("charts")),
                rel("helmfile.yaml", 50, "nvcf", "nvcf-pki", local("charts/nvcf-pki")),
                rel(
                    "sub/helmfile.yaml",
                    3,
                    "x",
                    "tarball-ok",
                    ChartRef::Other {
                        raw: "../charts/tool-1.0.0.tgz".into(),
                    },
                ),
                rel(
                    "helmfile.yaml",
                    60,
                    "x",
                    "tarball-http",
                    ChartRef::Other {
                        raw: "http://example.com/tool-1.0.0.tgz".into(),
                    },
                ),
                rel(
                    "helmfile.yaml",
                    70,
                    "x",
                    "oci-unlisted",
                    ChartRef::Oci {
                        url: "oci://ghcr.io/evil/charts/tool".into(),
                    },
                ),
                rel(
                    "helmfile.yaml",
                    80,
                    "x",
                    "oci-listed",
                    ChartRef::Oci {
                        url: "oci://quay.io/jetstack/charts/trust-manager".into(),
                    },
                ),
            ],
            vec![
                repository("jetstack", "quay.io/jetstack/charts", true),
                repository("openbao", "https://openbao.github.io/openbao-helm", false),
                repository("legacy", "http://charts.example.com", false),
                repository("evil", "https://openbao.github.io/openbao-helm-fork", false),
            ],
        );
        let mut policy = Policy::default();
        policy.settings.allowed_chart_repositories = vec![
            "oci://quay.io/jetstack/charts".into(),
            "https://openbao.github.io/openbao-helm/".into(),
        ];
        let f = run_state(rule(CHART_SOURCE_ALLOWED), &st, &Stack::default(), &policy, &[]);
        let msgs: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 8, "{msgs:#?}");
        assert!(msgs[0].contains("repository `legacy` is plain HTTP"));
        assert!(
            msgs[1].contains("repository `evil`") && msgs[1].contains("not in the policy's allowedChartRepositories")
        );
        for (m, what) in msgs[2..].iter().zip([
            "`nope`",
            "../shared/charts/tool",
            "vendor/tool",
            "(charts)",
            "fetched over plain HTTP",
            "oci://ghcr.io/evil",
        ]) {
            assert!(m.contains(what), "{m} should mention {what}");
        }
        insta::assert_json_snapshot!(f);
        // Without a list, any https/oci repository is fine; plain http never is.
        let f = run_state(
            rule(CHART_SOURCE_ALLOWED),
            &st,
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        assert_eq!(f.len(), 6, "{f:#?}");
        // Local chart roots are a policy setting: vendor/ listed, vendor/tool is allowed; the
        // message names the configured roots.
        let mut policy = Policy::default();
        policy.settings.local_chart_roots = vec!["charts/".into(), "vendor".into()];
        let f = run_state(rule(CHART_SOURCE_ALLOWED), &st, &Stack::default(), &policy, &[]);
        assert_eq!(f.len(), 5, "{f:#?}");
        assert!(!f.iter().any(|f| f.message.contains("vendor/tool")), "{f:#?}");
        assert!(f.iter().any(|f| f.message.contains("(charts/ or vendor/)")), "{f:#?}");
    }
}
