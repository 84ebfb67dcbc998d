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

/// The flags a subcommand that renders the stack shares with `check`: how remote charts are
/// fetched, the policy, the cache.
#[derive(Debug, Clone, clap::Args)]
pub struct RenderFlags {
    /// Do not fetch remote charts (their releases are not rendered: their objects are absent).
    #[arg(long)]
    pub offline: bool,
    /// Render remote charts from tarballs in DIR after their sha256 matches charts.lock.yaml.
    #[arg(long, value_name = "DIR")]
    pub chart_mirror: Option<PathBuf>,
    /// Policy file (default: validator-policy.yaml beside the state, if present).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Bypass the render cache.
    #[arg(long)]
    pub no_cache: bool,
}

impl RenderFlags {
    /// `check`'s arguments for `environments` of the state `file` names, with these flags.
    pub(crate) fn check_args(&self, file: Option<&Path>, environments: Vec<String>) -> CheckArgs {
        CheckArgs {
            policy: self.policy.clone(),
            no_cache: self.no_cache,
            ..render_args(file, environments, self.offline, self.chart_mirror.as_ref())
        }
    }
}

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
