//! `object-one-owner`: every rendered object has one writer.

use super::*;

pub(super) fn object_one_owner(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for (key, objs) in ctx.graph.duplicates() {
        let objs: Vec<&Object> = objs.into_iter().filter(|o| !o.prov.external).collect();
        let Some((first, rest)) = objs.split_first() else {
            continue;
        };
        for o in rest {
            let same = o.prov.release.is_some() && o.prov.release == first.prov.release;
            // One release declared twice renders each of its objects twice: that is one cause,
            // reported (once) by release-one-owner at the second declaration, not an object
            // defect (the two "writers" would name the same template line).
            if same && declared_twice(ctx, o.prov.release.as_deref()) {
                continue;
            }
            let who = if same {
                "rendered twice by the same release".to_string()
            } else {
                "rendered by two releases".to_string()
            };
            out.push(
                Finding::object(
                    OBJECT_ONE_OWNER,
                    o,
                    format!(
                        "{key} is {who}: {} and {}; the last writer silently wins",
                        writer(first),
                        writer(o)
                    ),
                )
                .with_help("render the object from one release only and let the other reference it"),
            );
        }
    }
    out
}

/// Whether the environment's state declares release `id` more than once.
fn declared_twice(ctx: &Ctx, id: Option<&str>) -> bool {
    let (Some(state), Some(id)) = (ctx.state, id) else {
        return false;
    };
    state.releases.iter().filter(|r| r.id() == id).count() > 1
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    use crate::graph::Graph;
    use crate::policy::Policy;

    #[test]
    fn object_written_by_two_releases() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nvcf-trust-bundle}\n";
        let g = Graph::new(
            "default",
            vec![obj(cm, "nvcf/nvcf-pki", false), obj(cm, "nvcf/request-router", false)],
        );
        let p = Policy::default();
        let f = (rule(OBJECT_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].release.as_deref(), Some("nvcf/request-router"));
        assert!(f[0].message.contains("rendered by two releases: release nvcf/nvcf-pki (charts/nvcf-pki/templates/x.yaml:1) and release nvcf/request-router"), "{}", f[0].message);
    }

    /// One release rendering an object twice is an object defect, unless the release itself is
    /// declared twice: then release-one-owner reports the one cause and this rule stays silent.
    #[test]
    fn a_release_declared_twice_is_one_cause_not_two() {
        use crate::testkit::{local, rel, state};
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nvcf-trust-bundle}\n";
        let g = Graph::new(
            "default",
            vec![obj(cm, "nvcf/nvcf-pki", false), obj(cm, "nvcf/nvcf-pki", false)],
        );
        let p = Policy::default();
        let once = state(
            vec![rel("helmfile.yaml", 8, "nvcf", "nvcf-pki", local("charts/nvcf-pki"))],
            vec![],
        );
        let twice = state(
            vec![
                rel("helmfile.yaml", 8, "nvcf", "nvcf-pki", local("charts/nvcf-pki")),
                rel("pki/helmfile.yaml", 3, "nvcf", "nvcf-pki", local("charts/nvcf-pki")),
            ],
            vec![],
        );
        let run = |st: Option<&crate::stack::EnvState>| {
            let mut ctx = crate::testkit::ctx(&g, &p);
            ctx.state = st;
            (rule(OBJECT_ONE_OWNER).check)(&ctx)
        };
        for st in [None, Some(&once)] {
            let f = run(st);
            assert_eq!(f.len(), 1, "{f:#?}");
            assert!(
                f[0].message.contains("rendered twice by the same release"),
                "{}",
                f[0].message
            );
        }
        assert!(run(Some(&twice)).is_empty());
    }
}
