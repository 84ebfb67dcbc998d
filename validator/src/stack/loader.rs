//! Loading the stack before anything is rendered: the entry state, the environments it declares,
//! and each environment's state model (`helmfile build`, run through `crate::tools`; the state's
//! text only for releases helmfile refuses to load). `render` consumes what this returns.

use super::load::{absolute, add_scanned, build, env_state, ScannedRelease, StateDoc};
use super::ChartLock;
use super::EnvState;
use crate::model::Options;
use crate::tools::Tools;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Resolve `--file` the way helmfile finds states: a state file; or a directory holding
/// `helmfile.yaml` or `helmfile.yaml.gotmpl`, else a `helmfile.d/` directory; or a directory of
/// states itself (`helmfile.d/`: every `*.yaml` and `*.yaml.gotmpl` in it, in name order). A
/// directory of states is returned as the directory (helmfile is given it as is).
pub fn resolve_entry(file: &Path) -> Result<PathBuf> {
    let p = if file.is_dir() {
        ["helmfile.yaml", "helmfile.yaml.gotmpl"]
            .iter()
            .map(|n| file.join(n))
            .find(|p| p.is_file())
            .or_else(|| Some(file.join("helmfile.d")).filter(|d| !state_files_in(d).is_empty()))
            .or_else(|| Some(file.to_path_buf()).filter(|d| !state_files_in(d).is_empty()))
            .with_context(|| {
                format!(
                    "{}: no helmfile.yaml, helmfile.yaml.gotmpl or helmfile.d/*.yaml[.gotmpl] here; \
                     pass a state file or a stack directory with --file",
                    file.display()
                )
            })?
    } else if file.is_file() {
        file.to_path_buf()
    } else {
        bail!(
            "state file {} not found; pass the stack's helmfile.yaml (or its directory) with --file",
            file.display()
        );
    };
    Ok(absolute(&p))
}

/// The states of a `helmfile.d`-style directory, in the order helmfile loads them (sorted by
/// name); empty when `dir` is not a directory.
pub fn state_files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            n.ends_with(".yaml") || n.ends_with(".yaml.gotmpl")
        })
        .collect();
    v.sort();
    v
}

/// The directory states are resolved against: the entry file's directory, or the parent of a
/// `helmfile.d`-style entry directory (so its states read `helmfile.d/x.yaml`).
pub fn root_of(entry: &Path) -> PathBuf {
    entry
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
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

/// Load the state of an environment (`helmfile build`): helmfile loads every release itself
/// (offline and with a mirror, the helm front answers the pulls it makes while loading); remote
/// charts are fetched, checked against the lock and rendered by us (see `plan`), never by
/// helmfile. Returns the build documents, the state and the releases helmfile refused (read
/// from the state's text).
/// `prebuilt`: the build output of this environment when the caller already has it (the
/// `default` build that lists the environments).
pub fn load_state(
    tools: &Tools,
    inputs: &Inputs,
    environment: &str,
    prebuilt: Option<Built>,
) -> Result<(Vec<StateDoc>, EnvState, Vec<String>)> {
    let Inputs {
        entry,
        root,
        opts,
        scanned,
        ..
    } = *inputs;
    let (docs, refused) = match prebuilt {
        Some(b) => b,
        None => build_judging_refused(tools, entry, environment, scanned).map_err(|e| online_hint(e, scanned, opts))?,
    };
    // Every release is helmfile's own listing: the helm front lets it load remote charts
    // offline, and a release it does not list is one a sub-helmfile's `selectors:` leaves out
    // (not judged, as helmfile would not deploy it). Releases helmfile refuses to load are
    // read from the state's text so the rules can say why.
    crate::render::complete::check_build_complete(&docs, scanned, &refused, environment, entry)?;
    let mut state = env_state(environment, &docs, root, entry);
    let refused_scan: Vec<ScannedRelease> = scanned.iter().filter(|s| refused.contains(&s.name)).cloned().collect();
    add_scanned(&mut state, &refused_scan, &docs, root);
    Ok((docs, state, refused))
}

/// A state's build output and the releases helmfile refused to load (see `build_judging_refused`).
pub type Built = (Vec<StateDoc>, Vec<String>);

/// `helmfile build`; when helmfile refuses named releases while loading the state (`[release
/// "x": the version for OCI charts should be semver compliant …`), build again without them and
/// return their names: the rules judge them from the state's text (that refusal is a finding,
/// not a reason to judge nothing). Bounded by the releases the state's text declares.
pub fn build_judging_refused(tools: &Tools, entry: &Path, env: &str, scanned: &[ScannedRelease]) -> Result<Built> {
    let mut refused: Vec<String> = Vec::new();
    loop {
        match build(tools, entry, env, &refused) {
            Ok(docs) => return Ok((docs, refused)),
            Err(e) => {
                let text = format!("{e:#}");
                let named: Vec<String> = scanned
                    .iter()
                    .map(|s| s.name.clone())
                    .filter(|n| !refused.contains(n) && text.contains(&format!("[release \"{n}\":")))
                    .collect();
                if named.is_empty() {
                    return Err(e);
                }
                refused.extend(named);
            }
        }
    }
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

/// The environments the entry state declares: read from its text when it declares them plainly
/// (saves a helmfile run); otherwise from a `helmfile build` of `default`, whose output is returned
/// too so `default` need not be built again.
pub fn environment_names(
    tools: &dyn Fn() -> Result<Tools>,
    entry: &Path,
    scanned: &[ScannedRelease],
    opts: &Options,
) -> Result<(Vec<String>, Option<Built>)> {
    if let Some(n) = entry
        .is_file()
        .then(|| super::load::plain_environment_names(entry))
        .flatten()
    {
        return Ok((n, None));
    }
    let built =
        build_judging_refused(&tools()?, entry, "default", scanned).map_err(|e| online_hint(e, scanned, opts))?;
    let n = super::load::environment_names(&built.0, entry);
    Ok((n, Some(built)))
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
