//! `release-renders-nothing`: an installed release that was rendered produced no object.

use super::RELEASE_RENDERS_NOTHING;
use crate::finding::Finding;
use crate::rules::Ctx;

pub(super) fn release_renders_nothing(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in ctx
        .status
        .iter()
        .filter(|s| s.installed && s.rendered && s.objects == 0)
    {
        let id = s.id();
        let declared = ctx.state.and_then(|st| {
            st.releases
                .iter()
                .find(|r| r.namespace == s.namespace && r.name == s.name)
        });
        let msg = format!(
            "release {id} (chart {}) is installed in environment {} but rendered no objects: every template is \
             switched off by its values, so nothing of it was validated",
            s.chart, ctx.environment
        );
        let help = "set the values that switch its templates on, disable the release in this environment \
                    (`installed: false` or a false `condition:`), or waive with a reason if it is meant to be empty";
        let f = match declared {
            Some(r) => Finding::state(
                RELEASE_RENDERS_NOTHING,
                Some(ctx.environment),
                Some(id),
                &r.file,
                r.line,
                msg,
            ),
            None => {
                let mut f = Finding::new(RELEASE_RENDERS_NOTHING, msg);
                f.release = Some(id);
                f
            }
        };
        out.push(f.with_help(help));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::render::ReleaseStatus;

    fn status(name: &str, installed: bool, rendered: bool, objects: usize) -> ReleaseStatus {
        ReleaseStatus {
            name: name.into(),
            namespace: "nvcf".into(),
            chart: "./charts/x".into(),
            version: None,
            installed,
            rendered,
            reason: None,
            objects,
            mirror: None,
        }
    }

    #[test]
    fn only_installed_rendered_empty_releases_fire() {
        let g = crate::testkit::graph("e", "");
        let p = Policy::default();
        let st = [
            status("empty", true, true, 0),
            status("full", true, true, 3),
            status("off", false, false, 0),
            status("offline", true, false, 0),
        ];
        let ctx = Ctx {
            status: &st,
            ..crate::testkit::ctx(&g, &p)
        };
        let f = release_renders_nothing(&ctx);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].release.as_deref(), Some("nvcf/empty"));
        assert!(f[0].message.contains("rendered no objects"), "{}", f[0].message);
    }

    /// The finding points at the release's declaration: the one with the same namespace AND name
    /// (a namesake in another namespace, or another release of the namespace, is not it).
    #[test]
    fn the_finding_points_at_the_release_declared_with_that_namespace_and_name() {
        use crate::testkit::{local, rel, state};
        let g = crate::testkit::graph("e", "");
        let p = Policy::default();
        let st = [status("empty", true, true, 0)];
        let declared = state(
            vec![
                rel("helmfile.yaml", 3, "other", "empty", local("charts/x")),
                rel("helmfile.yaml", 7, "nvcf", "full", local("charts/x")),
                rel("helmfile.yaml", 11, "nvcf", "empty", local("charts/x")),
            ],
            Vec::new(),
        );
        let ctx = Ctx {
            status: &st,
            state: Some(&declared),
            ..crate::testkit::ctx(&g, &p)
        };
        let f = release_renders_nothing(&ctx);
        assert_eq!(f.len(), 1, "{f:#?}");
        let src = f[0].source.as_ref().expect("the declaration's file and line");
        assert_eq!((src.file.as_str(), src.line), ("helmfile.yaml", Some(11)), "{f:#?}");
        // Not declared in the state (a `--manifests` run): no location, still the finding.
        let undeclared = state(
            vec![rel("helmfile.yaml", 3, "other", "empty", local("charts/x"))],
            Vec::new(),
        );
        let f = release_renders_nothing(&Ctx {
            status: &st,
            state: Some(&undeclared),
            ..crate::testkit::ctx(&g, &p)
        });
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].source.is_none(), "{f:#?}");
    }
}
