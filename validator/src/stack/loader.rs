//! Loading the stack before anything is rendered: the entry state, the environments it declares,
//! and each environment's state model (`helmfile build`, and `helmfile list` where helmfile
//! refuses a release or the render cannot vouch for the build, run through `crate::tools`).
//! `render` consumes what this returns.

use super::failure::{self, Refusal, RefusalKind};
use super::load::{add_refused, build, env_state, list, Listed};
use super::ChartLock;
use super::EnvState;
use crate::stack::Options;
use crate::tools::build::StateDoc;
use crate::tools::paths::absolute;
use crate::tools::Tools;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The state helmfile loads when given no `--file`, in `dir`: `helmfile.yaml`, else
/// `helmfile.yaml.gotmpl`, else the `helmfile.d/` directory (helmfile 0.166's order); `None`
/// when there is none of them.
pub fn default_file(dir: &Path) -> Option<PathBuf> {
    // What helmfile refuses to choose between: the directory itself, which `resolve_entry` refuses.
    let here = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if entry_conflict(here).is_some() {
        return Some(here.to_path_buf());
    }
    ["helmfile.yaml", "helmfile.yaml.gotmpl"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .or_else(|| Some(dir.join("helmfile.d")).filter(|d| d.is_dir()))
}

/// The state a command works on: the one `--file` names, else the one helmfile loads here
/// ([`default_file`]), else `helmfile.yaml` (whose absence is then the error).
pub fn state_file(given: Option<&Path>) -> PathBuf {
    given
        .map(Path::to_path_buf)
        .or_else(|| default_file(Path::new("")))
        .unwrap_or_else(|| PathBuf::from("helmfile.yaml"))
}

/// Resolve `--file` the way helmfile finds states: a state file; or a directory holding
/// `helmfile.yaml`, else `helmfile.yaml.gotmpl`, else a `helmfile.d/` directory (`default_file`);
/// or a directory of states itself (as `helmfile --file DIR` reads it: see `state_files_in`). A
/// directory of states is returned as the directory (helmfile is given it as is).
pub fn resolve_entry(file: &Path) -> Result<PathBuf> {
    if let Some(conflict) = entry_conflict(file) {
        bail!("{}: {conflict}", file.display());
    }
    let p = if file.is_dir() {
        default_file(file)
            .filter(|p| p.is_file() || !state_files_in(p).is_empty())
            .or_else(|| Some(file.to_path_buf()).filter(|d| !state_files_in(d).is_empty()))
            .with_context(|| {
                format!(
                    "{}: no helmfile.yaml, helmfile.yaml.gotmpl or helmfile.d/ with states (*.yaml, *.yml, \
                     *.yaml.gotmpl, *.yml.gotmpl) here; pass a state file or a stack directory with --file",
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

/// What helmfile (run in `dir` without `--file`) refuses: `helmfile.yaml` beside
/// `helmfile.yaml.gotmpl`, or either beside a `helmfile.d/` directory. Judging one of them would
/// judge a stack helmfile does not apply.
fn entry_conflict(dir: &Path) -> Option<String> {
    if !dir.is_dir() {
        return None;
    }
    let (yaml, gotmpl) = (
        dir.join("helmfile.yaml").is_file(),
        dir.join("helmfile.yaml.gotmpl").is_file(),
    );
    if yaml && gotmpl {
        return Some(
            "both helmfile.yaml and helmfile.yaml.gotmpl exist, and helmfile refuses to choose; remove one of them \
             (or pass the state file to judge with --file)"
                .into(),
        );
    }
    if (yaml || gotmpl) && dir.join("helmfile.d").is_dir() {
        return Some(format!(
            "both {} and helmfile.d/ exist, and helmfile refuses that (\"you can have either helmfile.yaml or \
             helmfile.d, but not both\"); remove one, or pass the state file or directory to judge with --file",
            if yaml { "helmfile.yaml" } else { "helmfile.yaml.gotmpl" }
        ));
    }
    None
}

/// The states of a `helmfile.d`-style directory, in the order helmfile loads them: what
/// helmfile 0.166 globs (`*.yaml`, `*.yml`, `*.yaml.gotmpl`, `*.yml.gotmpl`, hidden files
/// included; not `*.gotmpl` alone, nor upper-case extensions), sorted by name; empty when `dir` is
/// not a directory.
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
            [".yaml", ".yml", ".yaml.gotmpl", ".yml.gotmpl"]
                .iter()
                .any(|x| n.ends_with(x))
        })
        .collect();
    v.sort();
    v
}

/// The stack's directory for `--file F|DIR`, as typed (relative stays relative): where the
/// policy and lock are looked up and finding paths are relative to. The file's directory; a
/// directory holding `helmfile.yaml`, `helmfile.yaml.gotmpl` or `helmfile.d/` itself; the
/// directory above a directory of states given directly (`--file helmfile.d`), as `root_of`.
pub fn stack_dir(file: &Path) -> PathBuf {
    let parent = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
    if !file.is_dir() {
        return parent(file);
    }
    if default_file(file).is_some_and(|p| p.is_file() || !state_files_in(&p).is_empty()) {
        return file.to_path_buf();
    }
    // A directory without states (no --file with --manifests: the working directory) is itself
    // the place beside which the policy is looked for.
    if state_files_in(file).is_empty() {
        return file.to_path_buf();
    }
    match file.file_name() {
        Some(_) => parent(file),
        None => file.join(".."),
    }
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
}

/// One environment as helmfile loaded it: the build's state documents, and the releases helmfile
/// refused (left out of the build, each with the entries of `helmfile list` that describe it).
#[derive(Debug, Clone, Default)]
pub struct Built {
    pub docs: Vec<StateDoc>,
    pub refused: Vec<(Refusal, Vec<Listed>)>,
}

/// Most releases helmfile may refuse one by one (each costs a `helmfile build`) before the
/// environment is given up as not loadable.
pub const MAX_REFUSED: usize = 16;

/// Load an environment with `helmfile build`. When helmfile refuses a release while loading the
/// state (a release declared twice in one state file; an OCI chart version that is not semver),
/// `helmfile list` (which prepares no chart, so it lists a release whose OCI version `build`
/// refuses) says which releases of that name there are, the build runs again without the
/// refused one, so the rest is judged, and the refusal is kept so the rules can report the
/// release. That the build printed every release helmfile sees is checked after the render
/// (`render::helmfile::render_env` sees what `helmfile template` rendered; else `check_complete`).
pub fn load_env(tools: &Tools, entry: &Path, env: &str) -> Result<Built> {
    let mut refused: Vec<(Refusal, Vec<Listed>)> = Vec::new();
    let mut last_list: Vec<Listed> = Vec::new();
    for _ in 0..=MAX_REFUSED {
        let excl: Vec<Refusal> = refused.iter().map(|(r, _)| r.clone()).collect();
        let e = match build(tools, entry, env, &excl) {
            Ok(docs) => return Ok(Built { docs, refused }),
            Err(e) => e,
        };
        let Some(mut r) = failure::refusal(&format!("{e:#}")) else {
            return Err(e);
        };
        // The releases of that name helmfile lists (none for a release declared twice:
        // helmfile refuses to list it too; then an earlier round's list, if any, stands).
        if let Ok(l) = list(tools, entry, env, &excl) {
            last_list = l;
        }
        let named: Vec<Listed> = last_list.iter().filter(|l| l.name == r.name).cloned().collect();
        if r.namespace.is_none() && named.len() == 1 {
            r.namespace = Some(named[0].namespace.clone());
        }
        if r.kind == RefusalKind::OciVersion && named.is_empty() {
            return Err(e.context(format!(
                "helmfile refuses release {} and does not list it, so it cannot be judged",
                r.name
            )));
        }
        if refused
            .iter()
            .any(|(x, _)| x.name == r.name && x.namespace == r.namespace)
        {
            return Err(e);
        }
        let described: Vec<Listed> = named
            .into_iter()
            .filter(|l| r.namespace.as_deref().is_none_or(|ns| l.namespace == ns))
            .collect();
        refused.push((r, described));
    }
    bail!(
        "environment {env}: helmfile refused more than {MAX_REFUSED} releases of {} one by one; fix the releases it \
         names (run `helmfile -e {env} build` to see them)",
        entry.display()
    )
}

/// That `helmfile build` printed every release helmfile sees, asked of `helmfile list` (run with
/// the same releases left out): for the renders that do not show it themselves (see
/// `render::helmfile::render_env`; `super::complete`).
pub fn check_complete(tools: &Tools, entry: &Path, environment: &str, built: &Built) -> Result<()> {
    let excl: Vec<Refusal> = built.refused.iter().map(|(r, _)| r.clone()).collect();
    let listed = list(tools, entry, environment, &excl)?;
    super::complete::check_build_complete(&built.docs, &listed, environment)
}

/// Load the state of an environment (see `load_env`): helmfile loads every release itself
/// (offline and with a mirror, the helm front answers the pulls it makes while loading); remote
/// charts are fetched, checked against the lock and rendered by us (see `plan`), never by
/// helmfile. `prebuilt`: the environment's load when the caller already has it (the `default`
/// load that lists the environments). The caller checks that the build is complete
/// (`check_complete`, or the render's own witness).
pub fn load_state(
    tools: &Tools,
    inputs: &Inputs,
    environment: &str,
    prebuilt: Option<Built>,
) -> Result<(Vec<StateDoc>, EnvState)> {
    let Inputs { entry, root, .. } = *inputs;
    let built = match prebuilt {
        Some(b) => b,
        None => load_env(tools, entry, environment)?,
    };
    let mut state = env_state(environment, &built.docs, root, entry);
    add_refused(&mut state, &built.refused, &built.docs, root, entry);
    Ok((built.docs, state))
}

/// The environments the entry state declares, as helmfile prints them in a load of `default`
/// (which is returned too, so `default` need not be loaded again). helmfile loads every state
/// for `default`, also those that declare only other environments.
pub fn environment_names(tools: &dyn Fn() -> Result<Tools>, entry: &Path) -> Result<(Vec<String>, Option<Built>)> {
    let built = load_env(&tools()?, entry, "default")?;
    let n = super::load::environment_names(&built.docs, entry);
    Ok((n, Some(built)))
}

/// The environments to check: `selected` (duplicates dropped; helmfile says when one is not
/// declared), or every declared one when none is selected.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "releases: []\n").unwrap();
    }

    #[test]
    fn entry_is_found_as_helmfile_finds_it() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        // Nothing here: a message naming what was looked for.
        let e = resolve_entry(&root).unwrap_err().to_string();
        assert!(e.contains("helmfile.d/"), "{e}");
        assert_eq!(default_file(&root), None);
        // helmfile.d/ with only `.yml` states is a stack (helmfile 0.166 globs *.yml).
        touch(&root.join("helmfile.d/10-a.yml"));
        assert_eq!(resolve_entry(&root).unwrap(), root.join("helmfile.d"));
        assert_eq!(default_file(&root), Some(root.join("helmfile.d")));
        // `--file helmfile.d` names the directory of states itself; the stack is above it.
        assert_eq!(
            resolve_entry(&root.join("helmfile.d")).unwrap(),
            root.join("helmfile.d")
        );
        assert_eq!(stack_dir(&root.join("helmfile.d")), root);
        assert_eq!(root_of(&root.join("helmfile.d")), root);
        // helmfile refuses a state file beside helmfile.d/, and helmfile.yaml beside its .gotmpl.
        touch(&root.join("helmfile.yaml.gotmpl"));
        let e = resolve_entry(&root).unwrap_err().to_string();
        assert!(e.contains("helmfile.yaml.gotmpl and helmfile.d/ exist"), "{e}");
        std::fs::remove_dir_all(root.join("helmfile.d")).unwrap();
        assert_eq!(resolve_entry(&root).unwrap(), root.join("helmfile.yaml.gotmpl"));
        touch(&root.join("helmfile.yaml"));
        let e = resolve_entry(&root).unwrap_err().to_string();
        assert!(e.contains("both helmfile.yaml and helmfile.yaml.gotmpl"), "{e}");
        std::fs::remove_file(root.join("helmfile.yaml.gotmpl")).unwrap();
        assert_eq!(resolve_entry(&root).unwrap(), root.join("helmfile.yaml"));
        assert_eq!(default_file(&root), Some(root.join("helmfile.yaml")));
        assert_eq!(stack_dir(&root), root);
        assert_eq!(stack_dir(&root.join("helmfile.yaml")), root);
        // A state file as given; a missing one is an error naming it.
        assert_eq!(
            resolve_entry(&root.join("helmfile.yaml")).unwrap(),
            root.join("helmfile.yaml")
        );
        let e = resolve_entry(&root.join("nope.yaml")).unwrap_err().to_string();
        assert!(e.contains("nope.yaml"), "{e}");
    }

    #[test]
    fn a_directory_of_states_holds_what_helmfile_globs_in_name_order() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("helmfile.d");
        for n in [
            "z.yaml",
            "b.yml",
            "d.yaml.gotmpl",
            "e.yml.gotmpl",
            ".h.yaml",
            "0.yml.gotmpl",
            "c.gotmpl",
            "f.json",
            "g.YAML",
            "i.yaml.tpl",
        ] {
            touch(&dir.join(n));
        }
        std::fs::create_dir_all(dir.join("sub.yaml.d")).unwrap();
        let names: Vec<String> = state_files_in(&dir)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        // The same files, in the same order, as helmfile 0.166 loaded them (checked with the
        // real binary: `helmfile --file helmfile.d build` prints their Source lines).
        assert_eq!(
            names,
            [
                ".h.yaml",
                "0.yml.gotmpl",
                "b.yml",
                "d.yaml.gotmpl",
                "e.yml.gotmpl",
                "z.yaml"
            ]
        );
        assert!(state_files_in(&d.path().join("absent")).is_empty());
    }
}
