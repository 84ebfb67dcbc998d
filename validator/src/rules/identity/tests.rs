//! Tests of the identity family: the fixtures under `tests/fixtures/identity/` (each firing fixture
//! must make the rule fire with the `# expect:` texts of its header, each silent one must leave it
//! silent), and the bound on the work a replica count read from the input can cause.

use super::*;
use crate::testkit::{check_fixtures, Silent};

#[test]
fn fixtures_fire_and_stay_silent() {
    check_fixtures("identity", RULES, Silent::Rule);
}

#[test]
fn a_huge_autoscaler_is_judged_by_the_graph_not_by_its_number() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/identity/silent-worker-reaches-named-pod-per-pod.yaml"),
    )
    .unwrap();
    let hpa = "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: request-router, namespace: nvcf}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: request-router}\n  minReplicas: 2\n  maxReplicas: 4000000000\n";
    let g = crate::testkit::graph("split-cluster", &format!("{base}{hpa}"));
    let started = std::time::Instant::now();
    let f = worker_reaches_named_pod::check_graph(&g);
    // Not a speed assertion: the count is only ever compared, so this returns at all.
    let _ = started.elapsed();
    assert!(
        f.iter().any(|f| f.message.contains("can run 4000000000 pods")),
        "{:#?}",
        f.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    assert!(f.len() <= 3 * 4 + 1, "{}", f.len());
}
