//! What schema validation costs by itself (for ci/bench-schema): read a rendered manifest file,
//! then time loading the schemas, the `schema-valid` rule (compile + validate) and the coverage,
//! apart from the other rules. Prints one line of numbers.
//!
//!   cargo run --release --example schema-cost -- FILE [POLICY]

use nvcf_validate::graph::{Graph, Object};
use nvcf_validate::policy::Policy;
use nvcf_validate::rules::{self, Ctx};
use nvcf_validate::schema::SchemaSet;
use std::path::Path;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let file = args
        .first()
        .ok_or_else(|| anyhow::anyhow!("usage: schema-cost FILE [POLICY]"))?;
    let policy = match args.get(1) {
        Some(p) => Policy::load(Path::new(p), p, nvcf_validate::rules::family_of)?,
        None => Policy::default(),
    };
    let docs = nvcf_validate::render::manifests::read_manifests(file, "")?;
    let objects: Vec<Object> = docs
        .into_iter()
        .filter_map(|d| Object::from_value(d.body, d.default_namespace.as_deref(), d.prov))
        .collect();
    let graph = Graph::new("", objects);
    let t = Instant::now();
    let set = SchemaSet::load(&policy, Path::new("."))?;
    let load = t.elapsed();
    let rule = rules::find("schema-valid").expect("registered");
    let ctx = Ctx {
        environment: "",
        stack: None,
        state: None,
        graph: &graph,
        policy: &policy,
        status: &[],
        now: time::OffsetDateTime::now_utc(),
        schemas: Some(&set),
        routers_found: Default::default(),
    };
    let t = Instant::now();
    let findings = (rule.check)(&ctx);
    let check = t.elapsed();
    let t = Instant::now();
    let cov = set.for_graph(&graph).coverage(&graph);
    let coverage = t.elapsed();
    println!(
        "objects {} validated {} findings {} load_s {:.3} rule_s {:.3} coverage_s {:.3} threads {}",
        graph.objects.len(),
        cov.validated,
        findings.len(),
        load.as_secs_f64(),
        check.as_secs_f64(),
        coverage.as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(4)
    );
    Ok(())
}
