//! The helmfile state model: environments, releases, repositories, needs, chart references and
//! where each release is declared. Built from the real `helmfile build` output (see `load`).

pub mod chart_files;
pub mod complete;
pub mod failure;
pub mod load;
pub mod loader;
pub mod lock;

pub use lock::{ChartLock, LockEntry};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// What every environment shares: where the state lives and the chart lock. Each environment's
/// resolved state is an `EnvState` (rules get their own as `Ctx::state`).
#[derive(Debug, Clone, Default)]
pub struct Stack {
    /// Directory of the entry state file; repository-relative paths are relative to it.
    pub root: PathBuf,
    /// The entry state file (e.g. `helmfile.yaml`).
    pub entry: PathBuf,
    /// The chart lock (`charts.lock.yaml` beside the entry state), empty when absent.
    pub lock: ChartLock,
}

/// One environment's resolved state across all state files (`helmfiles:` included).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EnvState {
    pub name: String,
    /// Repository-relative paths of every state file helmfile loaded, entry first.
    pub state_files: Vec<String>,
    /// Every release declaration, in the order helmfile printed them. A release declared in two
    /// state files appears twice.
    pub releases: Vec<Release>,
    pub repositories: Vec<Repository>,
    /// The environment's own values, per state file (`environments.<env>.values` and the merged
    /// `renderedvalues` of `helmfile build --embed-values`), for rules that judge values
    /// wherever they are (`private-key-in-render`).
    #[serde(default)]
    pub environment_values: Vec<StateValues>,
}

/// Values a state file gives its environment: where, and the value.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateValues {
    /// Repository-relative state file.
    pub file: String,
    /// 1-based line of its `environments:` key (1 when it cannot be found).
    pub line: usize,
    /// `environments.<env>.values` or `renderedvalues`.
    pub path: String,
    pub value: serde_json::Value,
}

impl EnvState {
    /// Releases that will be installed (`installed: false` / conditions excluded).
    pub fn installed(&self) -> impl Iterator<Item = &Release> {
        self.releases.iter().filter(|r| r.installed)
    }

    pub fn repository(&self, name: &str) -> Option<&Repository> {
        self.repositories.iter().find(|r| r.name == name)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Repository {
    pub name: String,
    pub url: String,
    pub oci: bool,
    /// State file (repository-relative) that declares it.
    pub file: String,
    /// `skipTLSVerify: true` (helm adds and pulls from it with `--insecure-skip-tls-verify`).
    #[serde(default)]
    pub skip_tls_verify: bool,
}

/// Where a release's chart comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChartRef {
    /// A directory chart. `path` is repository-relative (normalised, may start with `..` when
    /// it points outside the repository).
    Local { path: String },
    /// `repo/chart` through a repository declared in the state.
    Repo {
        repo: String,
        chart: String,
        url: Option<String>,
        oci: bool,
    },
    /// `oci://host/path/chart` given directly.
    Oci { url: String },
    /// A chart tarball or URL we do not classify further.
    Other { raw: String },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Release {
    pub name: String,
    /// Where the release is placed: its `namespace:`, else `default` (helm's namespace under the
    /// empty kubeconfig helmfile runs with). helmfile 0.166 has no `helmDefaults.namespace`.
    pub namespace: String,
    /// The release gives no namespace: helmfile then passes none to helm, and selects and names
    /// the release by an empty namespace.
    #[serde(default)]
    pub namespace_unset: bool,
    /// The chart as written in the state.
    pub chart: String,
    pub chart_ref: ChartRef,
    pub version: Option<String>,
    /// Effective `devel`: the release's own, else `helmDefaults.devel` (as helmfile applies it).
    pub devel: bool,
    /// What turns TLS verification off for this release's chart fetches, as helmfile applies
    /// it: the release's `insecureSkipTLSVerify`, `helmDefaults.insecureSkipTLSVerify`, or
    /// `--insecure-skip-tls-verify` in `helmDefaults.args`. `None` when nothing does.
    #[serde(default)]
    pub insecure_tls: Option<String>,
    /// `devel` is on only because `helmDefaults.devel` is (the release sets none of its own).
    #[serde(default)]
    pub devel_from_defaults: bool,
    /// Line of `helmDefaults:` in `file`, when it has one (findings about an inherited default
    /// point there).
    #[serde(default)]
    pub helm_defaults_line: Option<usize>,
    pub installed: bool,
    /// `needs` entries as written (`name`, `namespace/name` or `context/namespace/name`).
    pub needs: Vec<String>,
    /// The inline `values:` entries and values file names as declared in the state.
    pub declared_values: Vec<Value>,
    /// The merged values helm receives for this release (from `helmfile write-values`);
    /// `Value::Null` when they could not be computed.
    pub values: Value,
    /// `set:` entries as `(name, value)`.
    pub set: Vec<(String, Value)>,
    /// State file (repository-relative) and line of the `- name:` entry.
    pub file: String,
    pub line: Option<usize>,
    /// Where what the release installs depends on the live cluster at apply time, which no
    /// offline render can know: `lookup` calls in its local chart's templates and
    /// `helmDefaults.reuseValues` (see the `render-depends-on-cluster` rule).
    #[serde(default)]
    pub cluster_reads: Vec<ClusterRead>,
    /// A local chart's dependencies from a repository (not `file://`), with what its
    /// `Chart.lock` pins for each: `helm dependency build` (helmfile runs it at apply time)
    /// resolves anew what no lock pins (see `chart-version-pinned`).
    #[serde(default)]
    pub chart_dependencies: Vec<ChartDependency>,
    /// helmfile refused to load this release (declared twice in one state file, an OCI version
    /// it does not accept): its words. The rest of the environment is judged without it; the
    /// release is never rendered, and the run may only end in a verdict when a finding about it
    /// stands (see `engine`).
    #[serde(default)]
    pub refused: Option<String>,
    /// The post-renderer helmfile hands helm for this release (a postrenderer/v1 plugin of the
    /// pinned Helm 4, which runs it on the rendered stream in `helm template` as in `helm
    /// upgrade --install`), when it has one.
    #[serde(default)]
    pub post_renderer: Option<PostRenderer>,
    /// `helmDefaults.args` as helmfile hands them to every `helm template` and `helm upgrade` of
    /// the release (`load::helmfile_args`): the gate's render of a remote chart's tarball passes
    /// them the same way.
    #[serde(default)]
    pub helm_args: Vec<String>,
    /// The state's `apiVersions:` for this release (its own, else the state file's), which
    /// helmfile passes `helm template` as `--api-versions` (`load::state_api_versions`).
    #[serde(default)]
    pub api_versions: Vec<String>,
}

/// A release's post-renderer as helmfile passes it to helm: `--post-renderer NAME` and one
/// `--post-renderer-args` per argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostRenderer {
    /// The plugin's name, as written.
    pub name: String,
    pub args: Vec<String>,
    /// Where it is set, for messages (`postRenderer: x`, `helmDefaults.args: --post-renderer x`).
    pub input: String,
}

/// One dependency of a local chart, from a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartDependency {
    /// Repository-relative `Chart.yaml` of the chart declaring it.
    pub chart_file: String,
    pub name: String,
    /// The `version:` asked for (a range, an exact version, or empty).
    pub version: String,
    pub repository: String,
    /// The version `Chart.lock` pins for it; `None` without a lock or an entry.
    pub locked: Option<String>,
}

/// One place a release's applied form depends on the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRead {
    /// Repository-relative template file, or `None` for a state setting (the release's file).
    pub file: Option<String>,
    pub line: Option<usize>,
    /// What reads the cluster, in words (`lookup`, `helmDefaults.reuseValues: true`).
    pub what: String,
}

impl Release {
    /// `namespace/name`, the identity used in findings and reports.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    pub fn is_remote(&self) -> bool {
        !matches!(self.chart_ref, ChartRef::Local { .. })
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
    /// Render as an upgrade (`--is-upgrade`: `.Release.IsUpgrade` true), as every apply after the
    /// first one does.
    pub is_upgrade: bool,
}
