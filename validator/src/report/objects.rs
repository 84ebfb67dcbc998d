//! `check --objects FILE`: the objects the gate judged, per environment, with the cluster helm
//! rendered them for. Not a report of findings: a record of what the rules saw, so a render made
//! elsewhere (`helmfile template`, `helm install --dry-run`) can be compared with it object by
//! object (`tests/apply_oracle.rs` does, for every realworld shape and the stack).
//!
//! ```json
//! {"schema": "nvcf-validate/objects/v1",
//!  "environments": [{"name": "default", "kubeVersion": "v1.35.0", "apiVersions": ["apps/v1", …],
//!    "upgradeRendered": ["nvcf/x"],
//!    "objects": [{"release": "nvcf/nvcf-pki", "file": "charts/nvcf-pki/templates/issuer.yaml",
//!                 "document": 0, "object": {…}}]}]}
//! ```
//! `object` is the document as helm rendered it (an `items` list already expanded into its
//! items, as the API client creates them); objects the policy declares external are left out.

use crate::graph::Graph;
use crate::render::RenderedFor;
use serde_json::{json, Value};

/// The schema name of the document `--objects` writes.
pub const SCHEMA: &str = "nvcf-validate/objects/v1";

/// One environment's judged objects and what they were rendered for.
pub struct Judged {
    pub name: String,
    pub graph: Graph,
    pub rendered_for: RenderedFor,
}

/// The `--objects` document.
pub fn document(envs: &[Judged]) -> Value {
    let environments: Vec<Value> = envs
        .iter()
        .map(|e| {
            let objects: Vec<Value> = e
                .graph
                .objects
                .iter()
                .filter(|o| !o.prov.external)
                .map(|o| {
                    json!({
                        "release": o.prov.release,
                        "file": o.prov.file,
                        "document": o.prov.doc_index,
                        "object": o.body,
                    })
                })
                .collect();
            json!({
                "name": e.name,
                "kubeVersion": e.rendered_for.kube_version,
                "apiVersions": e.rendered_for.api_versions,
                "upgradeRendered": e.rendered_for.upgrade_rendered,
                "objects": objects,
            })
        })
        .collect();
    json!({"schema": SCHEMA, "environments": environments})
}
