//! Helpers for unit tests of rules: build graphs and contexts from YAML text.

use crate::graph::{Graph, Object, Provenance};
use crate::policy::Policy;
use crate::rules::Ctx;

/// A graph from multi-document YAML; each object gets provenance `fixture.yaml:<line>`,
/// release `nvcf/fixture` and the namespace `nvcf` when it has none.
pub fn graph(env: &str, yaml: &str) -> Graph {
    let docs = crate::yaml::documents(yaml).expect("fixture YAML parses");
    let text: std::sync::Arc<str> = yaml.into();
    let objects = docs
        .into_iter()
        .filter_map(|d| {
            let prov = Provenance {
                environment: env.to_string(),
                release: Some("nvcf/fixture".into()),
                chart: Some("./charts/fixture".into()),
                file: Some("fixture.yaml".into()),
                doc_index: d.index,
                line: Some(d.line),
                template_text: Some(text.clone()),
                external: false,
            };
            Object::from_value(d.value, Some("nvcf"), prov)
        })
        .collect();
    Graph::new(env, objects)
}

/// Add the policy's externals for `env` to a graph, as the engine does.
pub fn with_externals(mut g: Graph, policy: &Policy) -> Graph {
    policy.add_externals(&mut g);
    g
}

/// A context over a graph with no stack (like `--manifests` input), judged at 2026-11-29.
pub fn ctx<'a>(graph: &'a Graph, policy: &'a Policy) -> Ctx<'a> {
    Ctx {
        environment: &graph.environment,
        stack: None,
        state: None,
        graph,
        policy,
        status: &[],
        now: time::macros::datetime!(2026-11-29 12:00 UTC),
        schemas: None,
    }
}
