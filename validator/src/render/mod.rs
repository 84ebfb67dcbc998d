//! Rendering through the real helmfile/helm, with provenance and a cache. See `helmfile.rs`
//! (invocation), `cache.rs` (render cache) and `manifests.rs` (parsing rendered YAML into objects).

pub use crate::model::{MirrorCheck, ReleaseStatus};

pub mod cache;
pub mod helmfile;
pub mod manifests;
/// The tools moved to `crate::tools`; these paths stay for code written against them.
pub use crate::tools::{self, mirror};

pub use crate::stack::loader::resolve_entry;
use anyhow::{bail, Result};
use std::path::Path;

pub(crate) fn mirror_fingerprint(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        bail!("--chart-mirror {}: not a directory", dir.display());
    }
    cache::tree_hash(dir)
}
