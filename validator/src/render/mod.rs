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

pub mod cache;
pub mod complete;
pub mod helmfile;
pub mod manifests;
pub mod mirror;
pub mod tools;

use crate::stack::{load, ChartLock, Stack};
use anyhow::{bail, Context, Result};
use helmfile::{EnvRender, Options};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Resolve `--file`: a state file, or a directory holding `helmfile.yaml[.gotmpl]`.
pub fn resolve_entry(file: &Path) -> Result<PathBuf> {
    let p = if file.is_dir() {
        ["helmfile.yaml", "helmfile.yaml.gotmpl", "helmfile.yml"]
            .iter()
            .map(|n| file.join(n))
            .find(|p| p.is_file())
            .with_context(|| {
                format!(
                    "{}: no helmfile.yaml or helmfile.yaml.gotmpl in this directory",
                    file.display()
                )
            })?
    } else if file.is_file() {
        file.to_path_buf()
    } else {
        bail!(
            "state file {} not found; pass the stack's helmfile.yaml with --file",
            file.display()
        );
    };
    Ok(load::absolute(&p))
}

/// Render the selected environments (all declared ones when `selected` is empty), in parallel,
/// through the cache.
pub fn render_stack(
    file: &Path,
    selected: &[String],
    opts: &Options,
    use_cache: bool,
    progress: bool,
) -> Result<(Stack, Vec<EnvRender>)> {
    let entry = resolve_entry(file)?;
    let root = entry
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let lock = ChartLock::load(&root)?;
    let cache = if use_cache { cache::Cache::open() } else { None };
    let entry_rel = load::relative(&entry, &root);
    let tree = if cache.is_some() {
        cache::tree_hash(&root)?
    } else {
        String::new()
    };
    let mirror = match &opts.chart_mirror {
        Some(d) => mirror_fingerprint(d)?,
        None => "-".into(),
    };
    let mode = format!("offline={} mirror={mirror}", opts.offline);

    // With a mirror, helmfile gets a helm front that serves OCI pulls from it (render::mirror).
    let front_dir = match &opts.chart_mirror {
        Some(_) => Some(
            tempfile::Builder::new()
                .prefix("nvcf-validate-mirror-")
                .tempdir()
                .context("creating a temporary directory")?,
        ),
        None => None,
    };
    let tools: OnceLock<Result<tools::Tools, String>> = OnceLock::new();
    let get_tools = || -> Result<tools::Tools> {
        tools
            .get_or_init(|| {
                let located = tools::Tools::locate(&root).and_then(|t| match (&opts.chart_mirror, &front_dir) {
                    (Some(m), Some(d)) => mirror::front(&t, &load::absolute(m), d.path()),
                    _ => Ok(t),
                });
                located.map_err(|e| format!("{e:#}"))
            })
            .clone()
            .map_err(|e| anyhow::anyhow!(e))
    };

    // The releases as the state's text declares them, read once for every environment.
    let scanned = load::scan_releases(&entry);
    let names_key = cache::key(&[&tree, &entry_rel, "environments"]);
    // The environments: read from the entry state's text when it declares them plainly (saves a
    // helmfile run); otherwise from a `helmfile build` of `default`, which is then kept for
    // rendering `default`.
    let mut default_build: Option<Vec<load::StateDoc>> = None;
    let names: Vec<String> = match cache.as_ref().and_then(|c| c.get::<Vec<String>>(&names_key)) {
        Some(n) => n,
        None => {
            let n = match load::plain_environment_names(&entry) {
                Some(n) => n,
                None => {
                    let exclude = helmfile::oci_exclusions(&scanned, opts);
                    let docs = load::build(&get_tools()?, &entry, "default", &exclude)
                        .map_err(|e| helmfile::online_hint(e, &scanned, opts))?;
                    let n = load::environment_names(&docs, &entry);
                    default_build = Some(docs);
                    n
                }
            };
            if let Some(c) = &cache {
                c.put(&names_key, &n)?;
            }
            n
        }
    };
    let default_build = std::sync::Mutex::new(default_build);
    let envs: Vec<String> = if selected.is_empty() {
        names.clone()
    } else {
        for e in selected {
            if !names.contains(e) {
                bail!(
                    "environment `{e}` is not declared in {} (declared: {})",
                    entry.display(),
                    names.join(", ")
                );
            }
        }
        let mut v: Vec<String> = Vec::new();
        for e in selected {
            if !v.contains(e) {
                v.push(e.clone());
            }
        }
        v
    };

    let inputs = helmfile::Inputs {
        entry: &entry,
        root: &root,
        lock: &lock,
        opts,
        scanned: &scanned,
    };
    let results: Vec<Result<EnvRender>> = std::thread::scope(|s| {
        let handles: Vec<_> = envs
            .iter()
            .map(|env| {
                let key = cache::key(&[&tree, &entry_rel, env, &mode]);
                let cache = cache.as_ref();
                let get_tools = &get_tools;
                let inputs = &inputs;
                let prebuilt = if env == "default" {
                    default_build.lock().expect("not poisoned").take()
                } else {
                    None
                };
                s.spawn(move || -> Result<EnvRender> {
                    if let Some(hit) = cache.and_then(|c| c.get::<EnvRender>(&key)) {
                        return Ok(hit);
                    }
                    if progress {
                        eprintln!("nvcf-validate: rendering environment {env} …");
                    }
                    let r = helmfile::render_env(&get_tools()?, inputs, env, prebuilt)
                        .with_context(|| format!("environment {env}"))?;
                    if let (Some(c), None) = (cache, &r.render_error) {
                        c.put(&key, &r)?;
                    }
                    if progress {
                        eprintln!(
                            "nvcf-validate: environment {env}: {} objects from {} releases",
                            r.docs.len(),
                            r.status.iter().filter(|s| s.rendered).count()
                        );
                    }
                    Ok(r)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("render thread panicked"))
            .collect()
    });
    let mut renders = Vec::new();
    for r in results {
        renders.push(r?);
    }
    let stack = Stack { root, entry, lock };
    Ok((stack, renders))
}

fn mirror_fingerprint(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        bail!("--chart-mirror {}: not a directory", dir.display());
    }
    cache::tree_hash(dir)
}
