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
}
