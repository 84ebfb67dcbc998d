//! `render-depends-on-cluster`: what a release installs depends on the live cluster at apply
//! time (`lookup` in its templates, `helmDefaults.reuseValues`, the release revision, an upgrade
//! render that differs), so no offline render, this gate's included, is the one applied.

use super::RENDER_DEPENDS_ON_CLUSTER;
use crate::finding::Finding;
use crate::rules::Ctx;

pub(super) fn render_depends_on_cluster(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else { return Vec::new() };
    let mut out = Vec::new();
    for r in state.installed() {
        for read in &r.cluster_reads {
            let (file, line) = match &read.file {
                Some(f) => (f.as_str(), read.line),
                None => (r.file.as_str(), r.helm_defaults_line.or(r.line)),
            };
            let msg = match read.what.as_str() {
                "lookup" => format!(
                    "release {}: the template calls `lookup`, which reads the live cluster at apply time; offline it \
                     returns nothing, so what is judged here may not be what is installed",
                    r.id()
                ),
                crate::stack::load::REVISION_READ => format!(
                    "release {}: the template {}",
                    r.id(),
                    crate::stack::load::REVISION_WORDS
                ),
                other if other.starts_with("helmDefaults.reuseValues") => format!(
                    "release {}: {other}: at upgrade helm merges the values stored in the cluster for this release, \
                     which the gate cannot see, so what is judged here may not be what is installed",
                    r.id()
                ),
                other => format!("release {}: {other}", r.id()),
            };
            out.push(
                Finding::state(
                    RENDER_DEPENDS_ON_CLUSTER,
                    Some(ctx.environment),
                    Some(r.id()),
                    file,
                    line,
                    msg,
                )
                .with_help(
                    "make the render a function of the state and values alone (pass what `lookup` reads as a \
                         value; drop reuseValues; read only the release's Name, Namespace and Service), or waive \
                         with the reason the cluster's answer is known",
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::stack::{ClusterRead, Stack};
    use crate::testkit::{local, rel, run_state, state};

    fn read(file: Option<&str>, line: Option<usize>, what: &str) -> ClusterRead {
        ClusterRead {
            file: file.map(str::to_string),
            line,
            what: what.into(),
        }
    }

    #[test]
    fn each_cluster_read_is_reported_where_it_is_with_its_reason() {
        let mut looks = rel("helmfile.yaml", 4, "nvcf", "looks", local("charts/a"));
        looks.cluster_reads = vec![read(Some("charts/a/templates/s.yaml"), Some(9), "lookup")];
        let mut reuses = rel("helmfile.yaml", 12, "nvcf", "reuses", local("charts/b"));
        reuses.helm_defaults_line = Some(2);
        reuses.cluster_reads = vec![read(None, None, "helmDefaults.reuseValues: true")];
        let mut upgrades = rel("helmfile.yaml", 20, "nvcf", "upgrades", local("charts/c"));
        upgrades.cluster_reads = vec![read(None, None, "its upgrade render differs from its install render")];
        let mut off = rel("helmfile.yaml", 30, "nvcf", "off", local("charts/d"));
        off.installed = false;
        off.cluster_reads = vec![read(None, None, "lookup")];
        let quiet = rel("helmfile.yaml", 40, "nvcf", "quiet", local("charts/e"));
        let st = state(vec![looks, reuses, upgrades, off, quiet], Vec::new());
        let rule = super::super::RULES
            .iter()
            .find(|r| r.id == RENDER_DEPENDS_ON_CLUSTER)
            .unwrap();
        let f = run_state(rule, &st, &Stack::default(), &Policy::default(), &[]);
        let got: Vec<(Option<&str>, &str, Option<usize>, &str)> = f
            .iter()
            .map(|f| {
                let src = f.source.as_ref().unwrap();
                (f.release.as_deref(), src.file.as_str(), src.line, f.message.as_str())
            })
            .collect();
        assert_eq!(got.len(), 3, "{got:#?}");
        assert_eq!(
            (got[0].0, got[0].1, got[0].2),
            (Some("nvcf/looks"), "charts/a/templates/s.yaml", Some(9)),
            "{got:#?}"
        );
        assert!(got[0].3.contains("the template calls `lookup`"), "{}", got[0].3);
        assert_eq!(
            (got[1].0, got[1].1, got[1].2),
            (Some("nvcf/reuses"), "helmfile.yaml", Some(2))
        );
        assert!(
            got[1]
                .3
                .starts_with("release nvcf/reuses: helmDefaults.reuseValues: true: at upgrade helm merges"),
            "{}",
            got[1].3
        );
        assert_eq!(
            (got[2].0, got[2].1, got[2].2),
            (Some("nvcf/upgrades"), "helmfile.yaml", Some(20))
        );
        assert_eq!(
            got[2].3,
            "release nvcf/upgrades: its upgrade render differs from its install render"
        );
        // No state (a `--manifests` run): nothing to report.
        let g = crate::graph::Graph::new("e", Vec::new());
        assert!(render_depends_on_cluster(&crate::testkit::ctx(&g, &Policy::default())).is_empty());
    }
}
