//! Rendering one environment with the real helmfile/helm.
//!
//! 1. `helmfile build` → the state model (releases, needs, chart references, lines).
//!    With `--embed-values` it also gives every release's values, already rendered.
//! 2. `helmfile template --output-dir` for the local charts, one directory per state file and
//!    release so each object knows its release.
//! 3. Remote charts are pulled (or taken from `--chart-mirror`), checked against the lock's
//!    sha256 and rendered with `helm template <tarball> --output-dir` and the values helmfile
//!    computed: helm writes one file per template, exactly as for the local charts, and both are
//!    read by the same code (never by cutting helm's stdout at its `# Source:` comments, which a
//!    template can forge).

use super::manifests::{objects_of, parse_rendered_file, RenderedDoc, TemplateLines};
use super::{MirrorCheck, ReleaseStatus, RenderedFor};
use crate::render::Provenance;
use crate::stack::load;
use crate::stack::loader::Inputs;
use crate::stack::{ChartLock, ChartRef, EnvState, Options, Release};
use crate::tools::{run, Tools};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Everything rendering produced for one environment (this is what the cache stores).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvRender {
    pub state: EnvState,
    pub docs: Vec<RenderedDoc>,
    pub status: Vec<ReleaseStatus>,
    /// Set when the environment could not be loaded or rendered as a whole: the state-level
    /// rules still run on what loaded, and the run is exit 2.
    pub render_error: Option<String>,
    /// Releases that could not be rendered while the rest of the environment was (`helm
    /// template` failed on them): `namespace/name` and why. The run ends in a verdict only while
    /// a finding about each stands (see `engine`).
    #[serde(default)]
    pub failed: Vec<(String, String)>,
    /// The releases helmfile refused the whole environment for (`render_error`): the run ends
    /// in a verdict only while a finding about each stands. Empty: nothing can explain it.
    #[serde(default)]
    pub render_blame: Vec<String>,
    /// The cluster helm rendered for (`--kube-version`, `--api-versions`, the upgrade render).
    pub rendered_for: RenderedFor,
    /// The upgrade renders helm made beside this render's `helmfile template` (see
    /// `upgrade_twins`), for `pipeline` to compare with the install render; never cached.
    #[serde(skip)]
    pub twins: UpgradeTwins,
}

/// The upgrade renders (`--is-upgrade`) the helm front made beside `helmfile template`'s install
/// render (`tools::mirror::front`): for each release it ran, its objects or why it failed.
#[derive(Debug, Clone, Default)]
pub struct UpgradeTwins {
    /// The objects of the releases whose upgrade render succeeded.
    pub docs: Vec<RenderedDoc>,
    /// `namespace/name` of every release whose upgrade render ran, and its failure (`None`: it
    /// succeeded).
    pub ran: Vec<(String, Option<String>)>,
}

/// How each release will be handled in this run.
enum Plan {
    Helmfile,
    Mirror {
        tarball: PathBuf,
        check: MirrorCheck,
    },
    Skip {
        reason: String,
        mirror: Option<MirrorCheck>,
    },
    /// The gate cannot render it as helmfile would (`unreproducible_arg`): a failed release, so
    /// the run ends without a verdict unless a finding about it stands.
    Refused(String),
}

fn plan(r: &Release, lock: &ChartLock, opts: &Options, tools: &Tools, pull_dir: &Path) -> Result<Plan> {
    if let Some(why) = &r.refused {
        return Ok(Plan::Skip {
            reason: format!("not rendered: {why}"),
            mirror: None,
        });
    }
    if !r.installed {
        return Ok(Plan::Skip {
            reason: "not installed in this environment (installed: false or a false condition)".into(),
            mirror: None,
        });
    }
    if !r.is_remote() {
        return Ok(Plan::Helmfile);
    }
    let pinned = lock.for_release(&r.name);
    let pin_text = match pinned {
        Some(e) => format!("pinned {} sha256:{}", e.version, &e.sha256[..12]),
        None => "not pinned in charts.lock.yaml".to_string(),
    };
    // Where the artifact comes from: the mirror, or (online) a `helm pull` of the exact version.
    // Either way it is rendered only after its sha256 matches the lock.
    let (tarball, origin) = match opts
        .chart_mirror
        .as_ref()
        .and_then(|d| mirror_tarball(&crate::tools::paths::absolute(d), r))
    {
        Some(t) => (t, "mirror tarball"),
        None if opts.offline => {
            let where_ = if opts.chart_mirror.is_some() {
                "--offline and not in --chart-mirror"
            } else {
                "--offline"
            };
            return Ok(Plan::Skip {
                reason: format!(
                    "remote chart {} {} ({pin_text}); not rendered: {where_}",
                    r.chart,
                    r.version.as_deref().unwrap_or("(no version)")
                ),
                mirror: None,
            });
        }
        None => (pull(tools, r, pull_dir)?, "fetched chart"),
    };
    if r.values.is_null() {
        return Ok(Plan::Skip {
            reason: format!(
                "the values of {} {} are unknown here (helmfile pulls OCI charts while loading the state, so offline \
                 and with a mirror the release is read from the state's text); not rendered",
                r.chart,
                r.version.as_deref().unwrap_or("(no version)")
            ),
            mirror: None,
        });
    }
    if let Some(refused) = unreproducible_arg(r) {
        return Ok(Plan::Refused(refused));
    }
    let bytes = std::fs::read(&tarball).with_context(|| format!("cannot read {origin} {}", tarball.display()))?;
    let sha = hex::encode(Sha256::digest(&bytes));
    let check = MirrorCheck {
        tarball: tarball.display().to_string(),
        sha256: sha.clone(),
        expected: pinned.map(|e| e.sha256.clone()),
    };
    Ok(match pinned {
        Some(e) if e.sha256 == sha => Plan::Mirror { tarball, check },
        Some(_) => Plan::Skip {
            reason: format!(
                "{origin} {} does not match the pinned sha256; not rendered",
                tarball.display()
            ),
            mirror: Some(check),
        },
        None => Plan::Skip {
            reason: format!(
                "{origin} {} has no sha256 in charts.lock.yaml to check it against; not rendered",
                tarball.display()
            ),
            mirror: Some(check),
        },
    })
}

/// A `helmDefaults.args` flag the render of a remote chart's lock-checked tarball cannot pass on
/// as helmfile does: one that chooses which chart helm fetches (the gate renders the tarball the
/// lock pins), or one that sends helm's files away from the directory the gate reads. Every other
/// flag is passed exactly as helmfile passes it (`Release::helm_args`). The refusal names the
/// state file, the release, the flag and the fix.
fn unreproducible_arg(r: &Release) -> Option<String> {
    let name = |a: &str| a.split_once('=').map_or(a, |(n, _)| n).to_string();
    r.helm_args.iter().map(|a| name(a)).find_map(|flag| {
        let why = match flag.as_str() {
            "--version" | "--devel" | "--repo" => {
                "chooses which chart helm fetches, while the gate renders the tarball charts.lock.yaml pins; pin the \
                 chart with the release's `version:` (and its sha256 in charts.lock.yaml) and remove the flag from \
                 helmDefaults.args"
            }
            "--output-dir" => {
                "sends helm's rendered files away from the directory the gate reads them from; remove the flag from \
                 helmDefaults.args"
            }
            _ => return None,
        };
        Some(format!(
            "{}{}: release {}: helmDefaults.args `{flag}` {why}",
            r.file,
            r.helm_defaults_line.map(|l| format!(":{l}")).unwrap_or_default(),
            r.id()
        ))
    })
}

/// A release picked for `helmfile template`: name and, when known, namespace.
type Selection = (String, Option<String>);

/// Which releases one `helmfile template` run renders.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pick {
    /// These releases (one `--selector` each; selectors are ORed).
    Only(Vec<Selection>),
    /// Every release helmfile would render but these (`load::exclusion_of`): what helmfile then
    /// renders is its own account of the releases it sees, which `witnessed` holds against the
    /// build.
    AllBut(Vec<Selection>),
}

/// How helmfile's selectors name `r`: a release without a namespace has none in helmfile's eyes,
/// and is named by its name alone.
fn selection_of(r: &Release) -> Selection {
    (r.name.clone(), (!r.namespace_unset).then(|| r.namespace.clone()))
}

fn selects(sel: &Selection, r: &Release) -> bool {
    r.name == sel.0 && sel.1.as_ref().is_none_or(|ns| *ns == r.namespace)
}

/// `helm pull` the exact chart version into `dir` and return the tarball.
fn pull(tools: &Tools, r: &Release, dir: &Path) -> Result<PathBuf> {
    let dest = dir.join(format!("{}__{}", r.namespace, r.name));
    std::fs::create_dir_all(&dest)?;
    // Sealed (online too): helm may write only where it is told to put the chart.
    let mut cmd = tools.helm_writing(&[&dest]);
    cmd.arg("pull");
    match &r.chart_ref {
        ChartRef::Repo {
            chart,
            url: Some(url),
            oci: true,
            ..
        } => {
            cmd.arg(format!(
                "oci://{}/{chart}",
                url.trim_start_matches("oci://").trim_end_matches('/')
            ));
        }
        ChartRef::Repo {
            chart, url: Some(url), ..
        } => {
            cmd.arg(chart).arg("--repo").arg(url);
        }
        ChartRef::Oci { url } => {
            cmd.arg(url);
        }
        other => bail!(
            "release {}: cannot fetch chart {} ({other:?}): declare its repository in the state",
            r.id(),
            r.chart
        ),
    }
    if let Some(v) = &r.version {
        cmd.arg("--version").arg(v);
    }
    cmd.arg("--destination").arg(&dest);
    run(&mut cmd, &format!("helm pull of {} {} for release {}", r.chart, r.version.as_deref().unwrap_or(""), r.id()))
        .map_err(|e| {
            if crate::stack::failure::network(&format!("{e:#}")) {
                e.context("fetching remote charts needs their registries: run with --offline (they are then reported as pinned but not rendered) or --chart-mirror DIR")
            } else {
                e
            }
        })?;
    std::fs::read_dir(&dest)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .with_context(|| format!("helm pull of {} produced no chart tarball", r.chart))
}

/// The mirror's tarball for a release's chart and version.
fn mirror_tarball(dir: &Path, r: &Release) -> Option<PathBuf> {
    let chart = match &r.chart_ref {
        ChartRef::Repo { chart, .. } => chart.clone(),
        ChartRef::Oci { url } => url.rsplit('/').next().unwrap_or_default().to_string(),
        _ => r.chart.rsplit('/').next().unwrap_or_default().to_string(),
    };
    crate::tools::mirror::tarball(dir, &chart, r.version.as_deref().unwrap_or_default())
}

/// `helmfile template` started with `helmfile build` (the two take about as long and run side by
/// side), when the entry state's plain text tells which releases helmfile renders
/// (`load::guessed_releases`): every release but the installed ones without a directory chart,
/// which are left out by name. `None` when the text gives no plain guess (the template then
/// starts once the build is read). `render_env` uses this render only when the loaded state
/// leaves out exactly those releases, and otherwise renders again.
pub fn start_template_guessed(tools: &Tools, inputs: &Inputs, environment: &str) -> Option<Early> {
    let guessed = load::guessed_releases(inputs.entry)?;
    if guessed.local.is_empty() {
        return None;
    }
    start_template_on(tools, inputs, environment, Pick::AllBut(guessed.other)).ok()
}

fn start_template_on(tools: &Tools, inputs: &Inputs, environment: &str, predicted: Pick) -> Result<Early> {
    let work = tempfile::Builder::new()
        .prefix("nvcf-validate-")
        .tempdir()
        .context("creating a temporary directory")?;
    let (tools, entry, env, out, select, skip, caps) = (
        tools.clone(),
        inputs.entry.to_path_buf(),
        environment.to_string(),
        work.path().join("speculated"),
        predicted.clone(),
        skip_deps(inputs.opts),
        inputs.opts.clone(),
    );
    let handle = std::thread::spawn(move || template(&tools, &entry, &env, &out, &select, skip, &caps));
    Ok(Early {
        work,
        predicted,
        handle: Some(handle),
    })
}

/// A `helmfile template` started by `start_template_guessed`.
pub struct Early {
    work: tempfile::TempDir,
    predicted: Pick,
    handle: Option<std::thread::JoinHandle<Result<String>>>,
}

impl Early {
    fn dir(&self) -> PathBuf {
        self.work.path().join("speculated")
    }

    fn wait(&mut self) -> Result<String> {
        match self.handle.take() {
            Some(h) => h.join().expect("template thread"),
            None => Ok(String::new()),
        }
    }
}

impl Drop for Early {
    /// Never leave helmfile writing into a directory that is being removed.
    fn drop(&mut self) {
        let _ = self.wait();
    }
}

fn skip_deps(opts: &Options) -> bool {
    opts.offline || opts.chart_mirror.is_some()
}

/// Render one environment from its loaded state. `entry` must be absolute (helmfile's output
/// directories are keyed by the sha1 of each state file's absolute path).
pub fn render_env(
    tools: &Tools,
    inputs: &Inputs,
    environment: &str,
    state: EnvState,
    early: Option<Early>,
) -> Result<EnvRender> {
    render_picked(tools, inputs, environment, state, early, false).map(|(r, _)| r)
}

/// `render_env`, and whether its `helmfile template` vouched that the build printed every release
/// helmfile renders (`witnessed`): it was asked for every release but those the gate renders
/// otherwise, and it rendered exactly the build's local ones. When it did not (or no template
/// ran), the caller asks `helmfile list` instead (`stack::loader::check_complete`).
pub fn render_env_witnessed(
    tools: &Tools,
    inputs: &Inputs,
    environment: &str,
    state: EnvState,
    early: Option<Early>,
) -> Result<(EnvRender, bool)> {
    render_picked(tools, inputs, environment, state, early, true)
}

/// `render_env` (`witness`: false; the releases are rendered by name, as the second renders of
/// an environment's releases, `--api-versions` and `--is-upgrade`, are given a part of the state)
/// or `render_env_witnessed` (`witness`: true).
fn render_picked(
    tools: &Tools,
    inputs: &Inputs,
    environment: &str,
    state: EnvState,
    early: Option<Early>,
    witness: bool,
) -> Result<(EnvRender, bool)> {
    let Inputs {
        entry,
        root,
        lock,
        opts,
        ..
    } = *inputs;
    let work = tempfile::Builder::new()
        .prefix("nvcf-validate-")
        .tempdir()
        .context("creating a temporary directory")?;
    let skip_deps = skip_deps(opts);
    let mut early = early;
    let speculated = early.as_mut().map(|e| (e.predicted.clone(), e.wait()));
    let pull_dir = work.path().join("pulled");
    let plans: Vec<Plan> = state
        .releases
        .iter()
        .map(|r| plan(r, lock, opts, tools, &pull_dir))
        .collect::<Result<_>>()?;

    let out_dir = work.path().join("out");

    // Releases to leave out of `helmfile template` (by name; helmfile selectors AND within one
    // --selector).
    // What helmfile renders: the installed releases with local charts, picked by name and
    // namespace (a remote release of the same name elsewhere is never swept along).
    let local: Vec<&Release> = state
        .releases
        .iter()
        .zip(&plans)
        .filter(|(r, p)| r.installed && matches!(p, Plan::Helmfile))
        .map(|(r, _)| r)
        .collect();
    let wanted: Vec<Selection> = local.iter().map(|r| selection_of(r)).collect();
    // The releases helmfile must not render (the gate renders them from a lock-checked tarball,
    // reports them not rendered, or helmfile refused them): left out of an `AllBut` run, so that
    // helmfile renders every other release it sees.
    let others: Vec<Selection> = state
        .releases
        .iter()
        .zip(&plans)
        .filter(|(r, p)| (r.installed || r.refused.is_some()) && !matches!(p, Plan::Helmfile))
        .map(|(r, _)| selection_of(r))
        .collect();
    // Leaving them out must not leave out a local release (a release without a namespace is left
    // out by name, with every release of that name).
    let leaves_local = |x: &[Selection]| local.iter().any(|l| x.iter().any(|o| selects(o, l)));
    let all_but = witness && !local.is_empty() && !leaves_local(&others);
    let (mut out_dir, mut template_res, mut pick) = match speculated {
        // The early run left out exactly the releases to leave out, and rendered nothing else.
        Some((Pick::AllBut(x), res))
            if witness
                && !leaves_local(&x)
                && others.iter().all(|o| x.iter().any(|p| p == o))
                // and every release it left out is one the build printed outside `local`
                // (never one the build may have missed: the render would not show it)
                && x.iter().all(|p| {
                    state
                        .releases
                        .iter()
                        .any(|r| selection_of(r) == *p && !local.iter().any(|l| std::ptr::eq(*l, r)))
                })
                && rendered_only(&early.as_ref().expect("speculated").dir(), &local) =>
        {
            (early.as_ref().expect("speculated").dir(), res, Pick::AllBut(x))
        }
        _ if all_but => {
            let p = Pick::AllBut(others.clone());
            (
                out_dir.clone(),
                template(tools, entry, environment, &out_dir, &p, skip_deps, opts),
                p,
            )
        }
        _ if !wanted.is_empty() => {
            let p = Pick::Only(wanted.clone());
            (
                out_dir.clone(),
                template(tools, entry, environment, &out_dir, &p, skip_deps, opts),
                p,
            )
        }
        _ => (out_dir, Ok(String::new()), Pick::Only(Vec::new())),
    };
    // An `AllBut` render vouches for the build when helmfile rendered exactly the build's local
    // releases: one "Templating release=NAME" line per local release, name for name, and an
    // output directory only for them. Otherwise (helmfile rendered another release: one the build
    // left out; or fewer) that render is not used: the local releases are rendered by name, and
    // the build is checked against `helmfile list`.
    let mut witnessed = false;
    if let (Pick::AllBut(_), Ok(said)) = (&pick, &template_res) {
        let mut templated = templated_names(said);
        let mut expected: Vec<&str> = local.iter().map(|r| r.name.as_str()).collect();
        templated.sort_unstable();
        expected.sort_unstable();
        witnessed = templated == expected && rendered_only(&out_dir, &local);
        if !witnessed {
            out_dir = work.path().join("out-by-name");
            pick = Pick::Only(wanted.clone());
            template_res = template(tools, entry, environment, &out_dir, &pick, skip_deps, opts);
        }
    }
    let any_helmfile = !wanted.is_empty();
    // When `helm template` fails on releases helmfile names, render the rest without them (a
    // few rounds at most): they are reported as failed, and the rest is judged.
    let mut selection = wanted.clone();
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut render_error = None;
    let mut render_blame: Vec<String> = Vec::new();
    for (r, p) in state.releases.iter().zip(&plans) {
        if let Plan::Refused(why) = p {
            failed.push((r.id(), why.clone()));
        }
    }
    for round in 0..=MAX_TEMPLATE_RETRIES {
        let Err(e) = &template_res else { break };
        let why = crate::stack::failure::explain_template(&format!("{e:#}"), inputs, environment);
        // Tool errors quote templates and values: shown only through `redact::tool_output`.
        let msg = crate::redact::tool_output(&why.message);
        // A release helmfile names without a namespace is one without a namespace, or (when
        // helmfile just does not say, as for `helm dependency build`) every release of that name.
        let named = |r: &&Release| {
            why.blamed.iter().any(|(name, ns)| {
                r.name == *name
                    && match ns {
                        Some(ns) => !r.namespace_unset && r.namespace == *ns,
                        None => {
                            r.namespace_unset || !state.releases.iter().any(|o| o.name == *name && o.namespace_unset)
                        }
                    }
            })
        };
        if why.whole_state {
            // helmfile refuses the state for these releases' sake, whatever is selected.
            render_blame = state.releases.iter().filter(named).map(Release::id).collect();
            render_error = Some(msg);
            break;
        }
        let hit: Vec<&Release> = local
            .iter()
            .copied()
            .filter(|r| selection.iter().any(|s| selects(s, r)))
            .filter(named)
            .collect();
        if hit.is_empty() || round == MAX_TEMPLATE_RETRIES {
            render_error = Some(msg);
            break;
        }
        for r in &hit {
            failed.push((r.id(), msg.clone()));
        }
        selection.retain(|s| !hit.iter().any(|r| selects(s, r)));
        out_dir = work.path().join(format!("out-{round}"));
        template_res = template(
            tools,
            entry,
            environment,
            &out_dir,
            &Pick::Only(selection.clone()),
            skip_deps,
            opts,
        );
    }
    // Every file helm wrote for this environment, together, is bounded like any other input.
    let mut budget = crate::yaml::MAX_INPUT;
    let mut docs = Vec::new();
    let mut counts = Counts::new();
    let mut twins = UpgradeTwins::default();
    if render_error.is_none() && any_helmfile && !selection.is_empty() {
        let sha_of_state: HashMap<String, String> = state
            .state_files
            .iter()
            .map(|f| (abs_sha8(&root.join(f)), f.clone()))
            .collect();
        (docs, counts) = collect_output(&out_dir, root, environment, &state, &sha_of_state, &mut budget)?;
        // The upgrade renders are bounded on their own, like a second render of the same files.
        let mut twin_budget = crate::yaml::MAX_INPUT;
        twins = upgrade_twins(&out_dir, root, environment, &state, &sha_of_state, &mut twin_budget)?;
    }
    // Mirror and online renders of remote charts: one output directory per release.
    let mut remote_reads: Vec<(usize, Vec<crate::stack::ClusterRead>)> = Vec::new();
    for (i, (r, p)) in state.releases.iter().zip(&plans).enumerate() {
        if let Plan::Mirror { tarball, .. } = p {
            match helm_template_tarball(tools, r, tarball, work.path(), root, opts) {
                Ok(dir) => {
                    for (inner, text) in rendered_files(&dir, &mut budget)? {
                        let n = push_docs(&text, &inner, None, environment, r, &mut docs)?;
                        *counts.entry((r.namespace.clone(), r.name.clone())).or_default() += n;
                    }
                    remote_reads.push((i, tarball_cluster_reads(tarball)));
                    remote_reads.push((i, tarball_revision_reads(tarball)));
                }
                Err(e) => failed.push((
                    r.id(),
                    format!(
                        "release {}: helm cannot render the mirror's chart {} {} ({}): ",
                        r.id(),
                        r.chart,
                        r.version.as_deref().unwrap_or("(no version)"),
                        tarball.display()
                    ) + &crate::redact::tool_output(&format!("{e:#}")),
                )),
            }
        }
    }

    let mut state = state;
    for (i, reads) in remote_reads {
        state.releases[i].cluster_reads.extend(reads);
    }
    let status = state
        .releases
        .iter()
        .zip(plans)
        .map(|(r, p)| {
            let n = counts.get(&(r.namespace.clone(), r.name.clone())).copied().unwrap_or(0);
            let failed_here = failed.iter().find(|(id, _)| *id == r.id());
            let (rendered, reason, mirror) = match p {
                Plan::Helmfile | Plan::Mirror { .. } if render_error.is_some() => {
                    (false, Some("render failed".to_string()), None)
                }
                Plan::Helmfile | Plan::Mirror { .. } if failed_here.is_some() => {
                    let why = failed_here.map(|(_, m)| m.lines().next().unwrap_or("").to_string());
                    (false, why.map(|w| format!("render failed: {w}")), None)
                }
                Plan::Helmfile => (true, None, None),
                Plan::Mirror { check, .. } => (
                    true,
                    Some(format!(
                        "rendered from {} after its sha256 matched the lock",
                        check.tarball
                    )),
                    Some(check),
                ),
                Plan::Skip { reason, mirror } => (false, Some(reason), mirror),
                Plan::Refused(why) => (false, Some(format!("render failed: {why}")), None),
            };
            ReleaseStatus {
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                chart: r.chart.clone(),
                version: r.version.clone(),
                installed: r.installed,
                rendered,
                reason,
                objects: n,
                mirror,
            }
        })
        .collect();
    let rendered = EnvRender {
        state,
        docs,
        status,
        render_error,
        render_blame,
        failed,
        twins,
        rendered_for: RenderedFor {
            kube_version: kube_version(opts).unwrap_or_default(),
            api_versions: opts.api_versions.clone(),
            upgrade_rendered: Vec::new(),
        },
    };
    Ok((rendered, witnessed))
}

/// The release names of helmfile's "Templating release=NAME, chart=CHART" lines (one per release
/// it renders; helmfile 0.166 and 1.x print them alike; a line it prints otherwise is not
/// counted, and the render then vouches for nothing).
fn templated_names(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Templating release=")?.split_once(", chart="))
        .map(|(name, _)| name)
        .collect()
}

/// Whether every release directory `helmfile template` wrote under `out`
/// (`<sha8>/<namespace>__<name>`) is one of `local`: a guessed selection may name a release the
/// loaded state does not install (helmfile renders none such, and this makes sure of it). An
/// output that cannot be read is not vouched for (the template then runs again).
fn rendered_only(out: &Path, local: &[&Release]) -> bool {
    if !out.exists() {
        return true;
    }
    let Ok(shas) = std::fs::read_dir(out) else {
        return false;
    };
    for sha in shas {
        let Ok(rels) = sha.and_then(|d| std::fs::read_dir(d.path())) else {
            return false;
        };
        for rel in rels {
            let Ok(rel) = rel else { return false };
            let dname = rel.file_name().to_string_lossy().into_owned();
            let Some((ns, name)) = dname.split_once("__") else {
                return false;
            };
            let ours = local.iter().any(|r| {
                r.name == name
                    && if ns.is_empty() {
                        r.namespace_unset
                    } else {
                        r.namespace == ns && !r.namespace_unset
                    }
            });
            if !ours {
                return false;
            }
        }
    }
    true
}

/// Times `helmfile template` is run again without the releases it failed on.
const MAX_TEMPLATE_RETRIES: usize = 3;

fn abs_sha8(p: &Path) -> String {
    let abs = crate::tools::paths::absolute(p);
    let h = Sha1::digest(abs.to_string_lossy().as_bytes());
    hex::encode(h)[..8].to_string()
}

/// The flags that tell `helm template` which cluster it renders for, as `helmfile apply`'s helm
/// learns it from the API server: `--kube-version` (the policy's Kubernetes version) and one
/// `--api-versions` per served group/version and group/version/kind (`Options::api_versions`).
pub fn capability_flags(opts: &Options) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(k) = kube_version(opts) {
        v.push("--kube-version".to_string());
        v.push(k);
    }
    v.extend(helm_only_flags(opts));
    v
}

/// `v1.35.0` for helm's `--kube-version`; `None` when no version is set.
fn kube_version(opts: &Options) -> Option<String> {
    (!opts.kube_version.is_empty()).then(|| format!("v{}.0", opts.kube_version))
}

/// The flags helmfile has no option of its own for (passed with `--args`): `--api-versions`
/// and, for the upgrade render, `--is-upgrade`.
fn helm_only_flags(opts: &Options) -> Vec<String> {
    let mut v: Vec<String> = opts
        .api_versions
        .iter()
        .map(|a| format!("--api-versions={a}"))
        .collect();
    if opts.is_upgrade {
        v.push("--is-upgrade".into());
    }
    v
}

/// The group/versions and group/version/kinds the CRDs among `docs` serve (what the API server
/// reports once they are installed), sorted.
pub fn rendered_api_versions(docs: &[RenderedDoc]) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    for d in docs.iter().map(|d| &d.body) {
        if d.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            continue;
        }
        let Some(group) = d.pointer("/spec/group").and_then(Value::as_str) else {
            continue;
        };
        let Some(kind) = d.pointer("/spec/names/kind").and_then(Value::as_str) else {
            continue;
        };
        for v in d
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if v.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            if let Some(name) = v.get("name").and_then(Value::as_str) {
                out.insert(format!("{group}/{name}"));
                out.insert(format!("{group}/{name}/{kind}"));
            }
        }
    }
    out.into_iter().collect()
}

/// Whether a chart the environment rendered reads `.Capabilities.APIVersions` (so the API
/// versions its render was given matter), by `charts_mention`: every file of the chart, its
/// vendored subchart archives too; what cannot be read counts as reading them.
pub fn reads_api_versions(root: &Path, state: &EnvState, status: &[ReleaseStatus]) -> bool {
    charts_mention(root, state, status, &[b"APIVersions"])
}

/// Whether a chart the environment rendered holds any of `needles` in one of its files (a local
/// chart's directory, a remote chart's tarball, each with its subcharts, vendored archives too:
/// `stack::chart_files::read_chart`); what cannot be read counts as holding them.
pub fn charts_mention(root: &Path, state: &EnvState, status: &[ReleaseStatus], needles: &[&[u8]]) -> bool {
    use crate::stack::chart_files::{read_chart, LIMITS};
    use std::ops::ControlFlow;
    let holds = |b: &[u8]| needles.iter().any(|n| b.windows(n.len()).any(|w| w == *n));
    let mentions = |chart: &Path| {
        let mut found = false;
        let read = read_chart(chart, LIMITS, &mut |_, bytes| {
            found = holds(bytes);
            if found {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        found || read.is_err()
    };
    let rendered = |r: &Release| {
        status
            .iter()
            .any(|s| s.rendered && s.name == r.name && s.namespace == r.namespace)
    };
    for r in state.releases.iter().filter(|r| rendered(r)) {
        let chart = match &r.chart_ref {
            ChartRef::Local { path } => root.join(path),
            _ => {
                let tarball = status
                    .iter()
                    .find(|s| s.name == r.name && s.namespace == r.namespace)
                    .and_then(|s| s.mirror.as_ref())
                    .map(|m| PathBuf::from(&m.tarball));
                let Some(t) = tarball else { return true };
                t
            }
        };
        if mentions(&chart) {
            return true;
        }
    }
    false
}

fn template(
    tools: &Tools,
    entry: &Path,
    environment: &str,
    out: &Path,
    pick: &Pick,
    skip_deps: bool,
    opts: &Options,
) -> Result<String> {
    // Sealed, helmfile may write the render beneath the output directory's parent (ours).
    let mut cmd = tools.helmfile_writing(entry, environment, &[out.parent().unwrap_or(out)]);
    // Ask the helm front for the upgrade render of each release that may ask for it, beside this
    // one (`upgrade_twins`); not in a render that is itself the upgrade render.
    if !opts.is_upgrade {
        let (up, status) = twin_dirs(out);
        for d in [up, status] {
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
    }
    // Several --selector flags are ORed; within one, conditions are ANDed.
    let selectors: Vec<String> = match pick {
        Pick::Only(select) if select.is_empty() => return Ok(String::new()),
        Pick::Only(select) => select
            .iter()
            .map(|(name, ns)| match ns {
                Some(ns) => format!("name={name},namespace={ns}"),
                None => format!("name={name}"),
            })
            .collect(),
        Pick::AllBut(left_out) => load::exclusion_of(left_out),
    };
    for sel in selectors {
        cmd.arg("--selector").arg(sel);
    }
    cmd.arg("--allow-no-matching-release");
    cmd.arg("template")
        .arg("--include-crds")
        .arg("--output-dir")
        .arg(out)
        .arg("--output-dir-template")
        .arg("{{ .OutputDir }}/{{ .State.AbsPathSHA1 }}/{{ .Release.Namespace }}__{{ .Release.Name }}");
    if skip_deps {
        cmd.arg("--skip-deps");
    }
    // The cluster helm renders for: helmfile's own --kube-version, and the API versions through
    // --args (helmfile appends them to helmDefaults.args, it does not replace them).
    if let Some(k) = kube_version(opts) {
        cmd.arg("--kube-version").arg(k);
    }
    let helm_only = helm_only_flags(opts);
    if !helm_only.is_empty() {
        cmd.arg("--args").arg(helm_only.join(" "));
    }
    let what = format!("helmfile template (environment {environment})");
    // (What went wrong and what to do is said by `stack::failure::explain_template`.)
    run(&mut cmd, &what).map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Objects rendered per release (namespace, name).
type Counts = HashMap<(String, String), usize>;

/// Walk `<out>/<sha8>/<ns>__<name>/<chart>/templates/...` and collect documents.
fn collect_output(
    out: &Path,
    root: &Path,
    environment: &str,
    state: &EnvState,
    sha_of_state: &HashMap<String, String>,
    budget: &mut usize,
) -> Result<(Vec<RenderedDoc>, Counts)> {
    let mut docs = Vec::new();
    let mut counts = Counts::new();
    // helmfile was asked to render releases: a missing or unreadable output directory means it
    // wrote nothing we can read, never "no objects".
    let shas = std::fs::read_dir(out).with_context(|| {
        format!(
            "environment {environment}: helmfile template wrote no readable output directory ({}) for the {} local \
             release(s) it was asked to render; nothing could be validated",
            out.display(),
            state.releases.iter().filter(|r| r.installed && !r.is_remote()).count()
        )
    })?;
    let mut shas: Vec<_> = shas.flatten().collect();
    shas.sort_by_key(|e| e.file_name());
    for sha_dir in shas {
        let sha = sha_dir.file_name().to_string_lossy().into_owned();
        let state_file = sha_of_state.get(&sha);
        let mut rels: Vec<_> = std::fs::read_dir(sha_dir.path())?.flatten().collect();
        rels.sort_by_key(|e| e.file_name());
        for rel_dir in rels {
            let dname = rel_dir.file_name().to_string_lossy().into_owned();
            let Some((ns, name)) = dname.split_once("__") else {
                continue;
            };
            let release = rendered_release(state, state_file, ns, name)?;
            let local = match &release.chart_ref {
                ChartRef::Local { path } => Some(root.join(path)),
                _ => None,
            };
            let mut n = 0;
            for (inner, text) in rendered_files(&rel_dir.path(), budget)? {
                n += push_docs(&text, &inner, local.as_deref(), environment, release, &mut docs)?;
            }
            *counts.entry((release.namespace.clone(), name.to_string())).or_default() += n;
        }
    }
    Ok((docs, counts))
}

/// The release of helmfile's output directory `NS__NAME` under the directory of `state_file`
/// (the state whose absolute path's sha1 names it; `None`: not known, any state's).
fn rendered_release<'a>(state: &'a EnvState, state_file: Option<&String>, ns: &str, name: &str) -> Result<&'a Release> {
    // helmfile names a release without a namespace by an empty one (`__name`).
    let placed = |r: &&Release| {
        r.name == name
            && if ns.is_empty() {
                r.namespace_unset
            } else {
                r.namespace == ns && !r.namespace_unset
            }
    };
    let release = state
        .releases
        .iter()
        .filter(placed)
        .find(|r| state_file.is_none_or(|f| &r.file == f))
        .or_else(|| state.releases.iter().find(placed));
    match release {
        Some(r) => Ok(r),
        None => bail!(
            "helmfile rendered release {}/{name}, which `helmfile build` did not list for this environment",
            if ns.is_empty() { "(no namespace)" } else { ns }
        ),
    }
}

/// The directories beside a `helmfile template` output directory `out` where the helm front
/// writes the upgrade renders (`out.upgrade`) and their exit codes and stderr
/// (`out.upgrade-status`); made by `template`, which is how the front knows it is asked.
fn twin_dirs(out: &Path) -> (PathBuf, PathBuf) {
    let with = |suffix: &str| {
        let mut p = out.as_os_str().to_os_string();
        p.push(suffix);
        PathBuf::from(p)
    };
    (with(".upgrade"), with(".upgrade-status"))
}

/// The upgrade renders the helm front made beside the render in `out` (`tools::mirror::front`):
/// one `SHA/NS__NAME.rc` (and `.stderr`) per release it rendered again with `--is-upgrade`, the
/// objects in `out.upgrade/SHA/NS__NAME`, read like the install render's.
fn upgrade_twins(
    out: &Path,
    root: &Path,
    environment: &str,
    state: &EnvState,
    sha_of_state: &HashMap<String, String>,
    budget: &mut usize,
) -> Result<UpgradeTwins> {
    let (up, status) = twin_dirs(out);
    let mut twins = UpgradeTwins::default();
    let Ok(shas) = std::fs::read_dir(&status) else {
        return Ok(twins);
    };
    let mut shas: Vec<_> = shas.flatten().collect();
    shas.sort_by_key(|e| e.file_name());
    for sha_dir in shas {
        let sha = sha_dir.file_name().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(sha_dir.path())?.flatten().collect();
        files.sort_by_key(|e| e.file_name());
        for f in files {
            let fname = f.file_name().to_string_lossy().into_owned();
            let Some(dname) = fname.strip_suffix(".rc") else {
                continue;
            };
            let Some((ns, name)) = dname.split_once("__") else {
                continue;
            };
            let release = rendered_release(state, sha_of_state.get(&sha), ns, name)?;
            let id = release.id();
            let rc = String::from_utf8_lossy(&read_end(&f.path(), 16)).trim().to_string();
            if rc != "0" {
                let stderr = read_end(&sha_dir.path().join(format!("{dname}.stderr")), 64 * 1024);
                let why = format!("helm exited with {rc}:\n{}", crate::tools::tail(&stderr, b""));
                twins.ran.push((id, Some(why)));
                continue;
            }
            let local = match &release.chart_ref {
                ChartRef::Local { path } => Some(root.join(path)),
                _ => None,
            };
            let dir = up.join(&sha).join(dname);
            if dir.is_dir() {
                for (inner, text) in rendered_files(&dir, budget)? {
                    push_docs(&text, &inner, local.as_deref(), environment, release, &mut twins.docs)?;
                }
            }
            twins.ran.push((id, None));
        }
    }
    Ok(twins)
}

/// At most the last `max` bytes of the file at `p` (nothing when it cannot be read): what helm
/// printed is bounded like any other input.
fn read_end(p: &Path, max: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(p) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if f.seek(SeekFrom::Start(len.saturating_sub(max))).is_err() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let _ = f.take(max).read_to_end(&mut out);
    out
}

/// Add the documents of one rendered template file. `inner` is `<chart>/templates/x.yaml`;
/// `local_chart` the chart directory when the chart is local (to map to a repository path and
/// find the template line).
fn push_docs(
    text: &str,
    inner: &str,
    local_chart: Option<&Path>,
    environment: &str,
    r: &Release,
    docs: &mut Vec<RenderedDoc>,
) -> Result<usize> {
    let in_chart = inner.split_once('/').map(|(_, rest)| rest).unwrap_or(inner);
    let (file, template_src) = match (local_chart, &r.chart_ref) {
        (Some(dir), ChartRef::Local { path }) => {
            let src = std::fs::read_to_string(dir.join(in_chart)).ok();
            (format!("{path}/{in_chart}"), src)
        }
        _ => (inner.to_string(), None),
    };
    let parsed = parse_rendered_file(text, &format!("{file} (release {}, environment {environment})", r.id()))?;
    let mut per_kind: HashMap<String, usize> = HashMap::new();
    let mut n = 0;
    let shared: Option<std::sync::Arc<str>> = template_src.as_deref().map(Into::into);
    let kind_lines = template_src.as_deref().map(TemplateLines::new);
    let expanded = parsed.into_iter().map(|d| {
        let what = format!("{file} (release {}, environment {environment})", r.id());
        objects_of(d.value, &what, d.index, d.line).map(|items| items.into_iter().map(move |v| (v, d.index, d.line)))
    });
    let mut all = Vec::new();
    for items in expanded {
        all.extend(items?);
    }
    for (value, index, doc_line) in all {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let nth = per_kind.entry(kind.clone()).or_default();
        let line = kind_lines.as_ref().map(|t| t.line(&kind, *nth)).or(Some(doc_line));
        *nth += 1;
        docs.push(RenderedDoc {
            body: value,
            default_namespace: Some(r.namespace.clone()),
            prov: Provenance {
                environment: environment.to_string(),
                release: Some(r.id()),
                chart: Some(r.chart.clone()),
                file: Some(file.clone()),
                doc_index: index,
                line,
                template_text: shared.clone(),
                external: false,
            },
        });
        n += 1;
    }
    Ok(n)
}

/// `helm template` of a remote chart's tarball into its own output directory (returned): helm
/// writes each template to `<dir>/<chart>/templates/<file>`, as `helmfile template` does for the
/// local charts. helm runs in the directory of the release's state file (under `root`), where
/// helmfile runs it.
fn helm_template_tarball(
    tools: &Tools,
    r: &Release,
    tarball: &Path,
    work: &Path,
    root: &Path,
    opts: &Options,
) -> Result<PathBuf> {
    // A sealed helm may write only beneath directories that exist when it starts.
    let remote = work.join("remote");
    std::fs::create_dir_all(&remote).with_context(|| format!("cannot create {}", remote.display()))?;
    let out = remote.join(format!("{}__{}", r.namespace, r.name));
    let mut cmd = tools.helm_writing(&[&remote]);
    // helmfile 0.166 runs helm in the directory of the state file that declares the release
    // (`template` and `sync` alike, wherever `helmfile` was started; observed with the pinned
    // helmfile), so a relative path in helmDefaults.args (`--values v.yaml`, `--set-file k=f`)
    // names a file beside that state: this helm runs there too, never in the gate's own working
    // directory. Every path the gate adds is absolute.
    let state_dir = crate::tools::paths::absolute(&root.join(&r.file));
    let state_dir = state_dir.parent().unwrap_or(root).to_path_buf();
    cmd.current_dir(&state_dir);
    cmd.arg("template")
        .arg(&r.name)
        .arg(crate::tools::paths::absolute(tarball))
        .arg("--namespace")
        .arg(&r.namespace)
        .arg("--include-crds")
        .arg("--output-dir")
        .arg(&out)
        .args(capability_flags(opts));
    // The state's `apiVersions:`, as helmfile passes them.
    for a in &r.api_versions {
        cmd.arg("--api-versions").arg(a);
    }
    if r.values.as_object().is_some_and(|m| !m.is_empty()) {
        let vf = work.join(format!("{}__{}.values.json", r.namespace, r.name));
        std::fs::write(&vf, serde_json::to_vec(&r.values)?)?;
        cmd.arg("--values").arg(vf);
    }
    for (name, value) in &r.set {
        cmd.arg("--set-json").arg(format!("{name}={value}"));
    }
    // The post-renderer helmfile would hand helm (a plugin, run on the rendered stream); one set
    // in helmDefaults.args arrives with them.
    if let Some(p) = &r.post_renderer {
        if !p.input.starts_with("helmDefaults.args") {
            cmd.arg("--post-renderer").arg(&p.name);
        }
        for a in &p.args {
            cmd.arg("--post-renderer-args").arg(a);
        }
    }
    // helmDefaults.args last, as helmfile appends them to its own flags (a later `--set`,
    // `--kube-version` or `--api-versions` wins or adds as it does there); helm runs in the
    // directory helmfile's helm runs in (the state file's, above), so relative paths they name
    // (`-f values.yaml`) are the same files.
    cmd.args(&r.helm_args);
    run(
        &mut cmd,
        &format!("helm template of {} from {}", r.id(), tarball.display()),
    )?;
    Ok(out)
}

/// The `lookup` calls in a remote chart's templates (its tarball, already checked against the
/// lock, read in place with its vendored subchart archives: `stack::load::lookup_calls`), as for
/// a local chart (`stack::load::cluster_reads`), each named by its place in the tarball; a
/// tarball not read to its end counts as one that may call it.
fn tarball_cluster_reads(tarball: &Path) -> Vec<crate::stack::ClusterRead> {
    let (calls, read) = crate::stack::load::lookup_calls(tarball);
    tarball_reads(tarball, calls, read, crate::stack::load::LOOKUP_WORDS, "`lookup`")
}

/// The reads of the release revision in a remote chart's templates (its tarball, already checked
/// against the lock, subcharts and vendored archives included: `stack::load::revision_calls`), as
/// for a local chart, each named by its place in the tarball; a tarball not read to its end counts
/// as one that reads it.
fn tarball_revision_reads(tarball: &Path) -> Vec<crate::stack::ClusterRead> {
    let (reads, read) = crate::stack::load::revision_calls(tarball);
    tarball_reads(
        tarball,
        reads,
        read,
        crate::stack::load::REVISION_WORDS,
        "reads of the release revision",
    )
}

/// `hits` (template, line) in the remote chart `tarball` as cluster reads, each `words`; `read`,
/// when the tarball was not read to its end (`for_what` it was read), one more.
fn tarball_reads(
    tarball: &Path,
    hits: Vec<(String, usize)>,
    read: std::result::Result<(), crate::stack::chart_files::Unread>,
    words: &str,
    for_what: &str,
) -> Vec<crate::stack::ClusterRead> {
    let name = tarball.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let at = |what: String| crate::stack::ClusterRead {
        file: None,
        line: None,
        what,
    };
    let mut out: Vec<crate::stack::ClusterRead> = hits
        .into_iter()
        .map(|(inner, line)| at(format!("the chart's template {inner} line {line} (in {name}) {words}")))
        .collect();
    if let Err(why) = read {
        out.push(at(format!(
            "its chart tarball {name} was not read to its end for {for_what}: {why}"
        )));
    }
    out
}

/// Every file below a render output directory, sorted, as (path relative to `dir` with `/`
/// separators, text). A chart that renders no template leaves no directory: no files. Each file
/// is read within what is left of `budget` (bytes), never whole when it is larger.
fn rendered_files(dir: &Path, budget: &mut usize) -> Result<Vec<(String, String)>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.with_context(|| format!("cannot read the render output directory {}", dir.display()))?;
        if e.file_type().is_file() {
            files.push(e.path().to_path_buf());
        }
    }
    files.sort();
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let inner = f.strip_prefix(dir).unwrap_or(&f).to_string_lossy().replace('\\', "/");
        let what = format!("rendered {inner}");
        let file = std::fs::File::open(&f).with_context(|| format!("cannot read rendered {}", f.display()))?;
        let text = crate::yaml::read_bounded(file, *budget, &what)?;
        *budget -= text.len();
        out.push((inner, text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(name: &str, namespace: Option<&str>) -> Release {
        serde_json::from_value(serde_json::json!({
            "name": name, "namespace": namespace.unwrap_or("default"), "namespace_unset": namespace.is_none(),
            "chart": "./charts/a", "chart_ref": ChartRef::Local { path: "charts/a".into() }, "version": null,
            "devel": false, "installed": true, "needs": [], "declared_values": [], "values": null, "set": [],
            "file": "helmfile.yaml", "line": null
        }))
        .unwrap()
    }

    /// helmfile's account of what it rendered: one line per release, read by name; anything
    /// else it prints (helm's `wrote` lines, a hook's output) is not counted.
    #[test]
    fn templated_releases_are_read_from_helmfiles_own_lines() {
        let said = "Templating release=nvcf-pki, chart=charts/nvcf-pki\nwrote /tmp/x/a.yaml\n\
                    Templating release=a, chart=oci://r/c\n  Templating release=b, chart=./b\n\
                    Templating release=c\nxTemplating release=d, chart=./d\n";
        assert_eq!(templated_names(said), ["nvcf-pki", "a", "b"]);
        assert!(templated_names("").is_empty());
    }

    /// What the helm front leaves for a successful upgrade render of `SHA/NS__NAME` (`at`) of chart
    /// `chart` beside the render in `out`: its exit code 0 and one ConfigMap `up`.
    fn twin(out: &Path, at: &str, chart: &str) {
        let (up, status) = twin_dirs(out);
        let templates = up.join(at).join(chart).join("templates");
        std::fs::create_dir_all(&templates).unwrap();
        std::fs::write(
            templates.join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: up\n",
        )
        .unwrap();
        let rc = status.join(format!("{at}.rc"));
        std::fs::create_dir_all(rc.parent().unwrap()).unwrap();
        std::fs::write(rc, "0\n").unwrap();
    }

    /// The upgrade renders the front left beside a render: a release whose upgrade render
    /// succeeded gives its objects, one that failed the tail of helm's stderr (bounded), a status
    /// still being written (`.rc.part`, the install failed) nothing; a status naming a release the
    /// build did not list is an error, as in the install render.
    #[test]
    fn the_upgrade_renders_beside_a_render_are_read_like_it() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let (up, status) = twin_dirs(&out);
        assert_eq!(up, d.path().join("out.upgrade"));
        let state = EnvState {
            releases: vec![
                release("a", Some("ns")),
                release("b", Some("ns")),
                release("c", Some("ns")),
            ],
            ..Default::default()
        };
        let sha = HashMap::new();
        let read = || {
            upgrade_twins(
                &out,
                d.path(),
                "default",
                &state,
                &sha,
                &mut crate::yaml::MAX_INPUT.to_owned(),
            )
        };
        // Not asked for: nothing.
        let t = read().unwrap();
        assert!(t.ran.is_empty() && t.docs.is_empty());
        twin(&out, "1e4a340a/ns__a", "a");
        std::fs::write(status.join("1e4a340a/ns__b.rc"), "1\n").unwrap();
        let noise = "x".repeat(200_000);
        std::fs::write(
            status.join("1e4a340a/ns__b.stderr"),
            format!("{noise}\nError: execution error at (b/templates/t.yaml:1:4): no upgrade path\n"),
        )
        .unwrap();
        std::fs::write(status.join("1e4a340a/ns__c.rc.part"), "0\n").unwrap();
        let t = read().unwrap();
        assert_eq!(t.docs.len(), 1);
        assert_eq!(t.docs[0].prov.release.as_deref(), Some("ns/a"));
        assert_eq!(t.docs[0].body["metadata"]["name"], "up");
        assert_eq!(t.ran.len(), 2, "{:?}", t.ran);
        assert_eq!(t.ran[0], ("ns/a".to_string(), None));
        let why = t.ran[1].1.as_deref().unwrap();
        assert_eq!(t.ran[1].0, "ns/b");
        assert!(
            why.starts_with("helm exited with 1:") && why.contains("no upgrade path"),
            "{why}"
        );
        assert!(why.len() < 70_000, "{}", why.len());
        // helm's stderr is kept to its last 12 lines, as for every tool error, lines of a few KiB
        // whole.
        let long = format!("Error: {}", "y".repeat(4000));
        std::fs::write(status.join("1e4a340a/ns__b.stderr"), format!("{noise}\n{long}\n")).unwrap();
        let t = read().unwrap();
        assert!(t.ran[1].1.as_deref().unwrap().contains(&long));
        std::fs::write(status.join("1e4a340a/ns__z.rc"), "0\n").unwrap();
        assert!(format!("{:#}", read().unwrap_err()).contains("ns/z"));
    }

    /// A status names its release as helmfile's output directory does: `NS__NAME`, `__NAME` for a
    /// release without a namespace (never `default__NAME`), and in the state file whose path's
    /// sha1 names the directory above it.
    #[test]
    fn an_upgrade_render_is_the_release_of_its_state_file_and_namespace() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let (_, status) = twin_dirs(&out);
        let mut other = release("a", Some("ns"));
        other.file = "sub.yaml".into();
        other.chart_ref = ChartRef::Local {
            path: "charts/b".into(),
        };
        let state = EnvState {
            releases: vec![release("a", Some("ns")), other, release("d", None)],
            ..Default::default()
        };
        let sha: HashMap<String, String> = [("5ub5ha00".to_string(), "sub.yaml".to_string())].into();
        let read = || {
            upgrade_twins(
                &out,
                d.path(),
                "default",
                &state,
                &sha,
                &mut crate::yaml::MAX_INPUT.to_owned(),
            )
        };
        twin(&out, "5ub5ha00/ns__a", "b");
        std::fs::write(status.join("5ub5ha00/__d.rc"), "0\n").unwrap();
        let t = read().unwrap();
        assert_eq!(t.docs[0].prov.file.as_deref(), Some("charts/b/templates/cm.yaml"));
        assert_eq!(t.ran.len(), 2, "{:?}", t.ran);
        assert_eq!(t.ran[0].0, "default/d");
        std::fs::write(status.join("5ub5ha00/default__d.rc"), "0\n").unwrap();
        assert!(read().is_err());
    }

    /// A guessed early render is used only when it holds nothing but the releases to render.
    #[test]
    fn an_early_render_holding_another_release_is_not_used() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("speculated");
        let (a, b) = (release("a", Some("ns")), release("b", None));
        assert!(rendered_only(&out, &[&a]), "nothing rendered: nothing extra");
        std::fs::create_dir_all(out.join("1e4a340a/ns__a/a/templates")).unwrap();
        std::fs::create_dir_all(out.join("1e4a340a/__b/a/templates")).unwrap();
        assert!(rendered_only(&out, &[&a, &b]));
        // `b` rendered but not to be installed; `a` in another namespace; an unreadable name.
        assert!(!rendered_only(&out, &[&a]));
        assert!(!rendered_only(&out, &[&release("a", Some("other")), &b]));
        assert!(!rendered_only(&out, &[&a, &release("b", Some("default"))]));
        std::fs::create_dir_all(out.join("1e4a340a/stray")).unwrap();
        assert!(!rendered_only(&out, &[&a, &b]));
    }
}
