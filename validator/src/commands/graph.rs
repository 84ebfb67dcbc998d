//! `nvcf-validate graph`: draw each environment's chain of trust and worker path, with the
//! findings that sit on it. The pipeline is `check`'s (load, render, one graph per environment,
//! rules, sink: `engine::check_graphs`); only the output differs.
//!
//! Exit codes as for `check`: 0 no error-level finding, 1 at least one (the picture is written
//! either way), 2 could not draw (bad input, render failure, unwritable output).

use crate::diagram::{self, model, Format};
use crate::engine::{self, CheckArgs};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The helmfile state, or a directory holding one. Default: as helmfile finds it in the
    /// current directory (helmfile.yaml, else helmfile.yaml.gotmpl, else helmfile.d/).
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    /// Environment to draw (repeatable). Default: every environment the state declares.
    #[arg(long = "environment", short = 'e')]
    pub environments: Vec<String>,
    #[arg(long, value_enum, default_value = "mermaid")]
    pub format: Format,
    /// Write the picture to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub render: super::RenderFlags,
}

pub fn run(a: &Args, now: Option<time::OffsetDateTime>) -> i32 {
    let args = CheckArgs {
        now,
        ..a.render.check_args(a.file.as_deref(), a.environments.clone())
    };
    let envs = match engine::check_graphs(&args) {
        Ok((_, e)) => e,
        Err(e) => {
            eprintln!("nvcf-validate graph: could not draw {}: {e:#}", engine::describe(&args));
            return 2;
        }
    };
    let diagrams: Vec<_> = envs.iter().map(|e| model::build(&e.graph, &e.findings)).collect();
    let text = diagram::render(&diagrams, a.format);
    let written = match &a.output {
        Some(path) => std::fs::write(path, &text).map_err(|e| format!("cannot write to {}: {e}", path.display())),
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write: {e}")),
    };
    if let Err(e) = written {
        eprintln!("nvcf-validate graph: {e}");
        return 2;
    }
    let errors = envs
        .iter()
        .flat_map(|e| &e.findings)
        .filter(|f| f.waived.is_none() && f.sev() == crate::finding::Severity::Error)
        .count();
    i32::from(errors > 0)
}
