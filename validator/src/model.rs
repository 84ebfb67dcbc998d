//! Types several stages share: where an object came from (`Provenance`, set by render and
//! `--manifests` input, read by the graph and rules), what happened to each release
//! (`ReleaseStatus`, produced by render, read by rules and reports) and the report itself
//! (`Report`, produced by the engine, printed by `report`). Keeping them here lets `rules/`
//! depend on neither `render/` nor `report/`, and `report/` not on `engine`.

use crate::finding::Finding;
use crate::sink;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorCheck {
    pub tarball: String,
    pub sha256: String,
    /// The sha256 the lock pins, `None` when the lock has no entry.
    pub expected: Option<String>,
}

/// One environment in the report.
#[derive(Debug, Clone)]
pub struct EnvReport {
    pub name: String,
    pub releases: Vec<ReleaseStatus>,
    pub objects: usize,
    /// Why helmfile could not render this environment, when state findings explain it.
    pub render_error: Option<String>,
    /// Schema coverage (`schema-valid`): kinds without a schema; `None` when the rule is off or
    /// the environment was not rendered.
    pub schema_coverage: Option<crate::schema::Coverage>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub environments: Vec<EnvReport>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn counts(&self) -> sink::Counts {
        sink::count(&self.findings)
    }

    pub fn objects(&self) -> usize {
        self.environments.iter().map(|e| e.objects).sum()
    }

    /// 0 no error-level finding, 1 at least one.
    pub fn exit_code(&self) -> i32 {
        if self.counts().errors > 0 {
            1
        } else {
            0
        }
    }
}

/// How a run treats remote charts; loading and rendering both read it.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub offline: bool,
    pub chart_mirror: Option<PathBuf>,
    /// The chart lock file beside the entry state (the policy's `settings.lockFile`).
    pub lock_file: String,
    /// The Kubernetes version helm renders for (`--kube-version`): the policy's
    /// `settings.kubernetesVersion` (`1.35`), as the cluster will report it at apply time.
    pub kube_version: String,
    /// What helm reports as served (`--api-versions`, `.Capabilities.APIVersions`): every
    /// built-in group/version and group/version/kind of that Kubernetes version, and those of the
    /// CRDs the policy declares (those an environment renders are added by `render`).
    pub api_versions: Vec<String>,
}
