//! nvcf-validate: renders the Helmfile stack with the real helmfile/helm and refuses anything
//! insecure or inconsistent. `main.rs` is the CLI only; everything else lives here so tests and
//! rules can use it without a process.

pub mod commands;
pub mod config_files;
pub mod diagram;
pub mod engine;
pub mod finding;
pub mod fold;
pub mod graph;
pub mod meaning;
pub mod pipeline;
pub mod pki;
pub mod pod_shape;
pub mod policy;
pub mod probe;
pub mod redact;
pub mod render;
pub mod report;
pub mod router;
pub mod rules;
pub mod schema;
pub mod scope;
#[cfg(test)]
pub mod seeded;
pub mod shell;
pub mod sink;
pub mod stack;
#[cfg(test)]
pub mod testkit;
pub mod tools;
pub mod yaml;
