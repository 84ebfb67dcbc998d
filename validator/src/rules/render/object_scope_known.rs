//! `object-scope-known`: every rendered kind has a known scope (built-in table, a rendered
//! CustomResourceDefinition, or the policy), so namespaces, and with them ownership and
//! references, are what the API server will make of them.

use super::OBJECT_SCOPE_KNOWN;
use crate::finding::Finding;
use crate::rules::Ctx;
use crate::scope::Scopes;
use std::collections::BTreeMap;

pub(super) fn object_scope_known(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let scopes = Scopes::new(g.objects.iter().map(|o| &o.body), ctx.policy, ctx.environment);
    let mut unknown: BTreeMap<(String, String), (usize, &crate::graph::Object)> = BTreeMap::new();
    for o in g.objects.iter().filter(|o| !o.prov.external) {
        if scopes.cluster_scoped(o.group(), &o.kind).is_none() {
            unknown
                .entry((o.group().to_string(), o.kind.clone()))
                .or_insert((0, o))
                .0 += 1;
        }
    }
    unknown
        .into_iter()
        .map(|((group, kind), (n, first))| {
            Finding::object(
                OBJECT_SCOPE_KNOWN,
                first,
                format!(
                    "kind {kind} (group {}) is not a built-in Kubernetes kind and no CustomResourceDefinition rendered \
                     here or declared in the policy gives its scope, so whether its {n} object(s) are namespaced is \
                     unknown (first: {})",
                    if group.is_empty() { "core" } else { group.as_str() },
                    first.display()
                ),
            )
            .with_help(format!(
                "render its CustomResourceDefinition, or declare it in the policy: settings.kindScopes: {{{}{kind}: Namespaced|Cluster}}",
                if group.is_empty() { String::new() } else { format!("{group}/") }
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn unknown_kinds_fire_once_declared_and_builtin_ones_do_not() {
        let yaml = "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: a}\n---\napiVersion: example.io/v1\nkind: Widget\nmetadata: {name: b}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: example.io/v1\nkind: Gadget\nmetadata: {name: d}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.io}\nspec: {group: example.io, names: {kind: Gadget}, scope: Cluster}\n";
        let g = crate::testkit::graph("e", yaml);
        let p = Policy::default();
        let f = object_scope_known(&crate::testkit::ctx(&g, &p));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].message.contains("kind Widget (group example.io)") && f[0].message.contains("its 2 object(s)"));
        let p = Policy::parse(
            "settings: {kindScopes: {example.io/Widget: Namespaced}}\n",
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap();
        assert!(object_scope_known(&crate::testkit::ctx(&g, &p)).is_empty());
    }
}
