//! Loading the stack before anything is rendered: the entry state, the environments it declares,
//! and each environment's state model (`helmfile build`, run through `crate::tools`, plus what the
//! state's text says about releases helmfile must not see). `render` consumes what this returns.

use super::load::{absolute, add_scanned, build, env_state, ScannedRelease, StateDoc};
use super::ChartLock;
use super::EnvState;
use crate::model::Options;
use crate::tools::Tools;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

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
    Ok(absolute(&p))
}

/// What loading and rendering every environment share.
pub struct Inputs<'a> {
    /// The entry state file, absolute.
    pub entry: &'a Path,
    /// Its directory.
    pub root: &'a Path,
    pub lock: &'a ChartLock,
    pub opts: &'a Options,
    /// The releases as the state's text declares them (read once per run).
    pub scanned: &'a [ScannedRelease],
}

/// Load the state of an environment (`helmfile build`).
/// Releases whose OCI charts helmfile would pull while loading the state are left out of every
/// helmfile call and read from the state's text instead; remote charts are fetched, checked
/// against the lock and rendered by us (see `plan`), never by helmfile.
/// `prebuilt`: the build output of this environment when the caller already has it (the
/// `default` build that lists the environments).
pub fn load_state(
    tools: &Tools,
    inputs: &Inputs,
    environment: &str,
    prebuilt: Option<Vec<StateDoc>>,
) -> Result<(Vec<StateDoc>, EnvState, Vec<String>)> {
    let Inputs {
        entry,
        root,
        opts,
        scanned,
        ..
    } = *inputs;
    let exclude = oci_exclusions(scanned, opts);
    let docs = match prebuilt {
        Some(d) => d,
        None => build(tools, entry, environment, &exclude).map_err(|e| online_hint(e, scanned, opts))?,
    };
    let mut state = env_state(environment, &docs, root, entry);
    add_scanned(&mut state, scanned, &docs, root);
    Ok((docs, state, exclude))
}

/// Online, helmfile pulls OCI charts while loading the state: say what to do without registries.
pub fn online_hint(e: anyhow::Error, scanned: &[ScannedRelease], opts: &Options) -> anyhow::Error {
    if opts.offline || opts.chart_mirror.is_some() || !scanned.iter().any(|s| s.oci) {
        return e;
    }
    e.context(
        "loading the state needs the OCI registries (helmfile pulls OCI charts while loading it): without registry \
         access run with --offline (remote charts are then reported as pinned but not rendered) or --chart-mirror DIR",
    )
}

/// Offline or with a mirror, helmfile must not see OCI releases: it would pull their charts while
/// loading the state. Online it may (their values then come from helmfile like any other's).
/// With a mirror, those whose chart the mirror holds may be loaded (see `mirror::front`).
pub fn oci_exclusions(scanned: &[ScannedRelease], opts: &Options) -> Vec<String> {
    if !opts.offline && opts.chart_mirror.is_none() {
        return Vec::new();
    }
    let in_mirror = |s: &ScannedRelease| {
        let (Some(dir), Some(v)) = (&opts.chart_mirror, &s.version) else {
            return false;
        };
        let chart = s.chart.rsplit('/').next().unwrap_or_default();
        !v.contains("{{") && crate::tools::mirror::tarball(&absolute(dir), chart, v).is_some()
    };
    scanned
        .iter()
        .filter(|s| s.oci && !in_mirror(s))
        .map(|s| s.name.clone())
        .collect()
}

/// The environments the entry state declares: read from its text when it declares them plainly
/// (saves a helmfile run); otherwise from a `helmfile build` of `default`, whose output is returned
/// too so `default` need not be built again.
pub fn environment_names(
    tools: &dyn Fn() -> Result<Tools>,
    entry: &Path,
    scanned: &[ScannedRelease],
    opts: &Options,
) -> Result<(Vec<String>, Option<Vec<StateDoc>>)> {
    if let Some(n) = super::load::plain_environment_names(entry) {
        return Ok((n, None));
    }
    let exclude = oci_exclusions(scanned, opts);
    let docs = build(&tools()?, entry, "default", &exclude).map_err(|e| online_hint(e, scanned, opts))?;
    let n = super::load::environment_names(&docs, entry);
    Ok((n, Some(docs)))
}

/// The environments to check: `selected` (each must be declared; duplicates dropped), or every
/// declared one when none is selected.
pub fn select(names: &[String], selected: &[String], entry: &Path) -> Result<Vec<String>> {
    if selected.is_empty() {
        return Ok(names.to_vec());
    }
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
    Ok(v)
}
