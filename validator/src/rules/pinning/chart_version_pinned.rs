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
