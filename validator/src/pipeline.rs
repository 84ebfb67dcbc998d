//! The order of a `check` over a helmfile stack, in one place: tools (located once, on first
//! use) → `stack::loader` (entry, environments, each environment's state model) → `render`
//! (which consumes the state) → back to the engine for graph → rules → sink → report. Each
//! environment is loaded and rendered on its own thread, through the render cache (a hit runs
//! neither helm nor helmfile).

use crate::model::Options;
use crate::render::cache;
use crate::render::helmfile::{self, EnvRender};
use crate::stack::loader::{self, Inputs};
use crate::stack::{load, ChartLock, Stack};
use crate::tools;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Load and render the selected environments (all declared ones when `selected` is empty).
pub fn load_and_render(
    file: &Path,
    selected: &[String],
    opts: &Options,
    use_cache: bool,
    progress: bool,
) -> Result<(Stack, Vec<EnvRender>)> {
    let entry = loader::resolve_entry(file)?;
    let root = entry
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let lock = ChartLock::load_named(&root, &opts.lock_file)?;
    let cache = if use_cache { cache::Cache::open() } else { None };
    let entry_rel = load::relative(&entry, &root);
    let tree = if cache.is_some() {
        cache::tree_hash(&root)?
    } else {
        String::new()
    };
    let mirror = match &opts.chart_mirror {
        Some(d) => crate::render::mirror_fingerprint(d)?,
        None => "-".into(),
    };
    let mode = format!("offline={} mirror={mirror}", opts.offline);

    // Tools: with a mirror, helmfile gets a helm front that serves OCI pulls from it.
    let tools = tools::Lazy::new(&root, opts.chart_mirror.as_deref())?;
    let get_tools = || tools.get();

    // Load: the releases as the state's text declares them (read once for every environment),
    // the environments, and (below, per environment) each state model.
    let scanned = load::scan_releases(&entry);
    let names_key = cache::key(&[&tree, &entry_rel, "environments"]);
    let mut default_build: Option<Vec<load::StateDoc>> = None;
    let names: Vec<String> = match cache.as_ref().and_then(|c| c.get::<Vec<String>>(&names_key)) {
        Some(n) => n,
        None => {
            let (n, built) = loader::environment_names(&get_tools, &entry, &scanned, opts)?;
            default_build = built;
            if let Some(c) = &cache {
                c.put(&names_key, &n)?;
            }
            n
        }
    };
    let default_build = std::sync::Mutex::new(default_build);
    let envs = loader::select(&names, selected, &entry)?;

    let inputs = Inputs {
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
                    let r = load_then_render(&get_tools()?, inputs, env, prebuilt)
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

/// One environment: its state model (`helmfile build`, unless the caller already built it),
/// then its render. `helmfile template` may start first, while the state loads: see
/// `helmfile::start_template_early`.
fn load_then_render(
    tools: &tools::Tools,
    inputs: &Inputs,
    env: &str,
    prebuilt: Option<Vec<load::StateDoc>>,
) -> Result<EnvRender> {
    let early = match prebuilt {
        None => Some(helmfile::start_template_early(tools, inputs, env)?),
        Some(_) => None,
    };
    let (_docs, state, _oci_excluded) = loader::load_state(tools, inputs, env, prebuilt)?;
    helmfile::render_env(tools, inputs, env, state, early)
}
