//! `chart-version-pinned`: a remote chart is pinned to one exact release version.

use super::*;

pub(super) fn chart_version_pinned(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in state.installed() {
        if r.devel {
            let mut f = state_finding(
                CHART_VERSION_PINNED,
                ctx,
                r,
                format!(
                    "release {}: `devel: true` (its own or `helmDefaults.devel`) lets helm pick pre-release chart versions of {}",
                    r.id(),
                    r.chart
                ),
            )
            .with_help("remove `devel: true` and pin the exact released version");
            if r.devel_from_defaults {
                // One setting, one finding: at the helmDefaults line, each release related.
                f = f.with_cause_at(
                    format!("helmDefaults@{}:devel", r.file),
                    &r.file,
                    r.helm_defaults_line,
                    format!(
                        "{}: `helmDefaults.devel: true` lets helm pick pre-release chart versions for every release of this state file that sets no `devel` of its own",
                        r.file
                    ),
                );
            }
            out.push(f);
        }
        for d in &r.chart_dependencies {
            // Pinned: the lock's exact version (helm builds from it). Otherwise `helm dependency
            // build` resolves the `version:` anew at apply time: fine only when that is exact.
            let pinned = match &d.locked {
                Some(l) => exact_version(l).is_ok(),
                None => exact_version(&d.version).is_ok(),
            };
            if pinned {
                continue;
            }
            let asks = match d.version.as_str() {
                "" => "no version".to_string(),
                v => format!("`{v}`"),
            };
            out.push(
                state_finding(
                    CHART_VERSION_PINNED,
                    ctx,
                    r,
                    format!(
                        "release {}: {} depends on {} from {} at {asks}, and no Chart.lock pins it; helmfile's `helm dependency build` resolves it anew at every apply",
                        r.id(),
                        d.chart_file,
                        d.name,
                        d.repository
                    ),
                )
                .with_help(format!(
                    "run `helm dependency update {}` and commit its Chart.lock (or ask for one exact version)",
                    d.chart_file.trim_end_matches("/Chart.yaml")
                )),
            );
        }
        if !matches!(r.chart_ref, ChartRef::Repo { .. } | ChartRef::Oci { .. }) {
            continue;
        }
        let v = r.version.as_deref().unwrap_or("");
        let why = match exact_version(v) {
            Ok(_) => continue,
            Err(VersionIssue::Missing) => "has no `version:`; helm installs whatever is newest".to_string(),
            Err(VersionIssue::Latest) => "asks for `latest`, which moves".to_string(),
            Err(VersionIssue::Range) => {
                format!("asks for the range `{v}`; helm resolves it to the newest match at install time")
            }
            Err(VersionIssue::Partial) => {
                format!("asks for `{v}`, which is not an exact MAJOR.MINOR.PATCH version")
            }
            Err(VersionIssue::PreRelease(p)) => {
                format!("pins the pre-release `{v}` (`-{p}`); install released charts only")
            }
        };
        out.push(
            state_finding(
                CHART_VERSION_PINNED,
                ctx,
                r,
                format!("release {}: remote chart {} {why}", r.id(), r.chart),
            )
            .with_help(format!(
                "set `version:` to the exact released version (e.g. `v1.19.1`) and pin its sha256 in {}",
                ctx.policy.settings.lock_file
            )),
        );
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
    fn chart_versions() {
        let mut devel_local = rel("helmfile.yaml", 40, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        devel_local.devel = true;
        let mut off = remote("off", "x", Some("^1.0.0"));
        off.installed = false;
        let mut oci = rel(
            "helmfile.yaml",
            50,
            "x",
            "oci",
            ChartRef::Oci {
                url: "oci://ghcr.io/example/charts/oci".into(),
            },
        );
        oci.version = Some("1.0.0-beta.2".into());
        let st = state(
            vec![
                remote("a", "x", Some("v1.19.1")),                                          // silent
                remote("b", "x", None),                                                     // missing
                remote("c", "x", Some("~1.19.0")),                                          // range
                remote("d", "x", Some("latest")),                                           // latest
                remote("e", "x", Some("1.19.1-rc.1")),                                      // pre-release
                remote("f", "x", Some("1.19")),                                             // partial
                devel_local,                                                                // devel on any release
                off,                                                                        // not installed: silent
                oci,                                                                        // OCI pre-release
                rel("helmfile.yaml", 60, "nvcf", "router", local("charts/request-router")), // local without version: silent
            ],
            vec![],
        );
        let f = run_state(
            rule(CHART_VERSION_PINNED),
            &st,
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        let who: Vec<&str> = f.iter().map(|f| f.release.as_deref().unwrap()).collect();
        assert_eq!(
            who,
            ["x/b", "x/c", "x/d", "x/e", "x/f", "nvcf/nvcf-pki", "x/oci"],
            "{f:#?}"
        );
        insta::assert_json_snapshot!(f);
    }

    #[test]
    fn local_chart_dependencies_resolved_anew_at_apply() {
        let dep = |name: &str, version: &str, locked: Option<&str>| crate::stack::ChartDependency {
            chart_file: "charts/app/Chart.yaml".into(),
            name: name.into(),
            version: version.into(),
            repository: "https://charts.example.com".into(),
            locked: locked.map(str::to_string),
        };
        let mut app = rel("helmfile.yaml", 10, "apps", "app", local("charts/app"));
        app.chart_dependencies = vec![
            dep("range", "~1.2.0", None),           // fires: resolved anew
            dep("unversioned", "", None),           // fires
            dep("locked", "~1.2.0", Some("1.2.3")), // silent: the lock pins it
            dep("exact", "1.2.3", None),            // silent: one version
            dep("lock-range", "^1", Some("1.x")),   // fires: the lock pins no exact version
        ];
        let st = state(vec![app], vec![]);
        let f = run_state(
            rule(CHART_VERSION_PINNED),
            &st,
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        let names: Vec<&str> = f
            .iter()
            .map(|f| {
                ["range", "unversioned", "lock-range", "locked", "exact"]
                    .into_iter()
                    .find(|n| f.message.contains(&format!("depends on {n} ")))
                    .unwrap_or("?")
            })
            .collect();
        assert_eq!(names, ["range", "unversioned", "lock-range"], "{f:#?}");
        assert!(
            f[0].message.contains("at `~1.2.0`, and no Chart.lock pins it"),
            "{}",
            f[0].message
        );
        assert!(f.iter().all(|f| f.rule == CHART_VERSION_PINNED));
    }

    #[test]
    fn helm_defaults_devel_is_one_finding_at_its_line() {
        let inherit = |name: &str, line: usize| {
            let mut r = rel("helmfile.yaml", line, "nvcf", name, local("charts/x"));
            r.devel = true;
            r.devel_from_defaults = true;
            r.helm_defaults_line = Some(3);
            r
        };
        let mut own = rel("helmfile.yaml", 40, "nvcf", "own", local("charts/x"));
        own.devel = true;
        let st = state(vec![inherit("a", 10), inherit("b", 20), own], vec![]);
        let f = run_state(
            rule(CHART_VERSION_PINNED),
            &st,
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        assert_eq!(f.len(), 3);
        let f = crate::fold::fold(f);
        assert_eq!(f.len(), 2, "{f:#?}");
        assert_eq!(f[0].source.as_ref().and_then(|s| s.line), Some(3));
        assert!(f[0].message.contains("`helmDefaults.devel: true`"));
        assert_eq!(f[0].related.len(), 2);
        assert_eq!(f[1].release.as_deref(), Some("nvcf/own"));
    }
}
