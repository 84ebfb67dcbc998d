//! JSON: `{"schema": "nvcf-validate/graph/v1", "environments": [{environment, nodes, edges,
//! unplaced}]}`. Node ids are local to their environment. The JSON Schema is
//! `validator/schema/graph.schema.json` (the CLI tests check the output against it).

use super::Diagram;
use serde::Serialize;

pub const SCHEMA: &str = "nvcf-validate/graph/v1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    environments: &'a [Diagram],
}

pub fn render(diagrams: &[Diagram]) -> String {
    let doc = Doc {
        schema: SCHEMA,
        environments: diagrams,
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
