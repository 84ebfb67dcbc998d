//! Sub-commands other than `check`/`rules`/`explain` (which live in `main.rs` and `engine`).
//! Each exposes a clap `Args` type and `run(&Args) -> i32` (the process exit code: 0 ok,
//! 1 refused, 2 could not validate).

use crate::engine::CheckArgs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

pub mod ca;
pub mod cert;
pub mod fingerprint;
pub mod graph;
pub mod probe;
pub mod probe_profile;
pub mod profile;
pub mod readiness;

/// What `check` is given when a subcommand renders environments only to read their graphs
/// (`engine::check_graphs`): the state `-f` names (else the one helmfile loads here), the
/// environments, how remote charts are fetched; progress shown on a terminal.
pub(crate) fn render_args(
    file: Option<&Path>,
    environments: Vec<String>,
    offline: bool,
    chart_mirror: Option<&PathBuf>,
) -> CheckArgs {
    CheckArgs {
        file: crate::stack::loader::state_file(file),
        environments,
        offline,
        chart_mirror: chart_mirror.cloned(),
        progress: std::io::stderr().is_terminal(),
        ..CheckArgs::default()
    }
}
