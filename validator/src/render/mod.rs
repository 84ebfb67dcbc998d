//! Rendering through the real helmfile/helm, with provenance and a cache. See `helmfile.rs`
//! (invocation), `cache.rs` (render cache) and `manifests.rs` (parsing rendered YAML into objects).

use serde::{Deserialize, Serialize};

/// What happened to one release of one environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseStatus {
    pub name: String,
    pub namespace: String,
    pub chart: String,
    pub version: Option<String>,
    pub rendered: bool,
    /// Why not rendered (remote chart offline, not installed in this environment, mirror mismatch).
    pub reason: Option<String>,
    pub objects: usize,
    /// Set when the chart came from `--chart-mirror`: the tarball and its sha256 as computed.
    pub mirror: Option<MirrorCheck>,
}

impl ReleaseStatus {
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorCheck {
    pub tarball: String,
    pub sha256: String,
    /// The sha256 the lock pins, `None` when the lock has no entry.
    pub expected: Option<String>,
}
