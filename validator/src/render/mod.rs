//! Rendering through the real helmfile/helm, with provenance and a cache. See `helmfile.rs`
//! (invocation), `cache.rs` (render cache) and `manifests.rs` (parsing rendered YAML into objects).
//! Render produces, and the layers above read, where each object came from (`Provenance`) and what
//! happened to each release (`ReleaseStatus`).

pub mod cache;
pub mod helmfile;
pub mod manifests;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub(crate) fn mirror_fingerprint(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        bail!("--chart-mirror {}: not a directory", dir.display());
    }
    cache::tree_hash(dir)
}

/// Where an object came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub environment: String,
    /// `namespace/name` of the release, `None` for `--manifests` input and policy externals.
    pub release: Option<String>,
    /// The chart as declared in the state (`./charts/nvcf-pki`, `jetstack/cert-manager`).
    pub chart: Option<String>,
    /// Repository-relative template path (`charts/nvcf-pki/templates/certificate.yaml`), or the
    /// manifest file for `--manifests` input, or the policy file for externals.
    pub file: Option<String>,
    /// Index of the document within the rendered template file.
    pub doc_index: usize,
    /// Best line in `file` for this object (1-based).
    pub line: Option<usize>,
    /// The template source text, when known, so findings can point at the line of a field.
    #[serde(skip)]
    pub template_text: Option<std::sync::Arc<str>>,
    /// True for objects that exist outside the stack (declared in the policy).
    pub external: bool,
}

/// What happened to one release of one environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseStatus {
    pub name: String,
    pub namespace: String,
    pub chart: String,
    pub version: Option<String>,
    /// False when the environment switches the release off (`installed: false`, a false
    /// `condition:`); such releases are not expected to render.
    #[serde(default = "yes")]
    pub installed: bool,
    pub rendered: bool,
    /// Why not rendered (remote chart offline, not installed in this environment, mirror mismatch).
    pub reason: Option<String>,
    pub objects: usize,
    /// Set when the chart came from `--chart-mirror`: the tarball and its sha256 as computed.
    pub mirror: Option<MirrorCheck>,
}

fn yes() -> bool {
    true
}

impl ReleaseStatus {
    /// Installed in this environment but not rendered (offline, mirror mismatch, …).
    pub fn missing(&self) -> bool {
        self.installed && !self.rendered
    }

    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// What helm was told about the cluster for an environment's render, as `helmfile apply`'s helm
/// learns it from the API server: what `check --objects` records beside the objects judged, so a
/// render outside the gate can be made for the same cluster (`tests/apply_oracle.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderedFor {
    /// helm's `--kube-version` (`v1.35.0`); empty when none was given.
    pub kube_version: String,
    /// helm's `--api-versions` (group/version and group/version/kind), sorted.
    pub api_versions: Vec<String>,
    /// The releases (`namespace/name`) also rendered with `--is-upgrade` and compared with their
    /// install render (a difference is a `render-depends-on-cluster` finding).
    pub upgrade_rendered: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorCheck {
    pub tarball: String,
    pub sha256: String,
    /// The sha256 the lock pins, `None` when the lock has no entry.
    pub expected: Option<String>,
}
