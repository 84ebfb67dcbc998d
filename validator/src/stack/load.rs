//! Building the state model from the real `helmfile build` output.
//!
//! `helmfile build` prints every state file it loaded (`helmfiles:` included) as one YAML
//! document led by a `#  Source: /abs/path` comment. We read releases, repositories and
//! environments from there (helmfile has already resolved environments and templating), and
//! `helmfile list` says which releases helmfile sees, so a build that leaves one out is caught
//! (`stack::complete`). The state files' text is read only to find the line of each release
//! declaration (locations in findings) and the order environments are declared in.

use super::chart_files;
use super::failure::Refusal;
use super::{ChartRef, EnvState, PostRenderer, Release, Repository};
use crate::tools::build::{parse_build, StateDoc};
use crate::tools::paths::{absolute, normalize, relative};
use crate::tools::{run, Tools};
use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A release as `helmfile list --output json` prints it: helmfile's own view of the releases
/// of an environment across every state it loaded (sub-helmfile `selectors:` applied).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Listed {
    pub name: String,
    /// Empty for a release without a namespace.
    #[serde(default)]
    pub namespace: String,
    /// False when the release's `condition:` is false.
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "yes")]
    pub installed: bool,
    #[serde(default)]
    pub chart: String,
    #[serde(default)]
    pub version: String,
}

fn yes() -> bool {
    true
}

impl Listed {
    /// The chart is a directory for certain: a path (`./`, `../`, `/`), never `repo/chart`.
    pub fn local_chart(&self) -> bool {
        self.chart.starts_with("./") || self.chart.starts_with("../") || self.chart.starts_with('/')
    }
}

/// Run `helmfile build` for an environment, leaving out the releases helmfile refused (see
/// `exclusion`), and read its state documents.
pub fn build(tools: &Tools, entry: &Path, environment: &str, exclude: &[Refusal]) -> Result<Vec<StateDoc>> {
    let mut cmd = tools.helmfile(entry, environment);
    for sel in exclusion(exclude) {
        cmd.arg("--selector").arg(sel);
    }
    if !exclude.is_empty() {
        cmd.arg("--allow-no-matching-release");
    }
    cmd.arg("build").arg("--embed-values");
    let out = run(
        &mut cmd,
        &format!("helmfile build of {} (environment {environment})", entry.display()),
    )?;
    parse_build(&String::from_utf8_lossy(&out.stdout)).with_context(|| {
        format!(
            "reading `helmfile build` output for {} (environment {environment}); a state path with a line break or \
             a `---` line in its name (directory or file) would make it unreadable: rename it",
            entry.display()
        )
    })
}

/// `helmfile list --skip-charts --output json` for an environment, with the same releases left
/// out as `build` (it prepares no chart, so it pulls nothing and refuses no OCI version).
pub fn list(tools: &Tools, entry: &Path, environment: &str, exclude: &[Refusal]) -> Result<Vec<Listed>> {
    let mut cmd = tools.helmfile(entry, environment);
    for sel in exclusion(exclude) {
        cmd.arg("--selector").arg(sel);
    }
    if !exclude.is_empty() {
        cmd.arg("--allow-no-matching-release");
    }
    cmd.arg("list").arg("--skip-charts").arg("--output").arg("json");
    let out = run(
        &mut cmd,
        &format!("helmfile list of {} (environment {environment})", entry.display()),
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        // `--allow-no-matching-release` with nothing left prints nothing.
        return Ok(Vec::new());
    }
    serde_json::from_str(text.trim()).with_context(|| {
        format!(
            "reading `helmfile list --output json` for {} (environment {environment})",
            entry.display()
        )
    })
}

/// helmfile selectors that leave out exactly the refused releases. Selectors are ORed and the
/// conditions within one are ANDed, and a release has one name, so "not one of these" is: one
/// selector for every other name, plus, per refused name whose namespaces are known, one for its
/// releases in the other namespaces. A release refused without a namespace (helmfile's selectors
/// cannot say "no namespace") leaves out every release of its name; the loader says so.
pub fn exclusion(refused: &[Refusal]) -> Vec<String> {
    let pairs: Vec<(String, Option<String>)> = refused.iter().map(|r| (r.name.clone(), r.namespace.clone())).collect();
    exclusion_of(&pairs)
}

/// helmfile selectors that leave out exactly the releases (name, namespace) of `left_out` (see
/// `exclusion`; a release given without a namespace leaves out every release of its name).
pub fn exclusion_of(left_out: &[(String, Option<String>)]) -> Vec<String> {
    if left_out.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<&str> = left_out.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    names.dedup();
    let mut out = vec![names.iter().map(|n| format!("name!={n}")).collect::<Vec<_>>().join(",")];
    for n in names {
        let of: Vec<&Option<String>> = left_out.iter().filter(|(m, _)| m == n).map(|(_, ns)| ns).collect();
        if of.iter().any(|ns| ns.as_deref().is_none_or(str::is_empty)) {
            continue;
        }
        let mut ns: Vec<&str> = of.iter().filter_map(|ns| ns.as_deref()).collect();
        ns.sort();
        ns.dedup();
        let mut sel = format!("name={n}");
        for s in ns {
            sel.push_str(&format!(",namespace!={s}"));
        }
        out.push(sel);
    }
    out
}

/// Environment names declared by the entry state (the last build document is the entry: helmfile
/// prints sub-states first). A state without `environments:` has just `default`.
pub fn environment_names(docs: &[StateDoc], entry: &Path) -> Vec<String> {
    let entry_abs = absolute(entry);
    if entry_abs.is_dir() {
        // A directory of states: every environment one of its top-level states declares.
        let mut names: Vec<String> = Vec::new();
        for d in docs.iter().filter(|d| d.path.parent() == Some(entry_abs.as_path())) {
            let text = std::fs::read_to_string(&d.path).unwrap_or_default();
            let mut declared = declared_keys(&text, "environments");
            let printed: Vec<String> = d
                .doc
                .get("environments")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            declared.retain(|n| printed.contains(n));
            declared.extend(
                printed
                    .into_iter()
                    .filter(|n| !declared.contains(n))
                    .collect::<Vec<_>>(),
            );
            for n in declared {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        if names.is_empty() {
            names.push("default".into());
        }
        return names;
    }
    let doc = docs.iter().find(|d| d.path == entry_abs).or(docs.last());
    let mut names: Vec<String> = doc
        .and_then(|d| d.doc.get("environments"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if names.is_empty() {
        names.push("default".into());
    }
    // helmfile prints maps sorted; keep the order the state declares when we can read it.
    if let Ok(text) = std::fs::read_to_string(&entry_abs) {
        let declared = declared_keys(&text, "environments");
        let mut a = declared.clone();
        let mut b = names.clone();
        a.sort();
        b.sort();
        if a == b {
            return declared;
        }
    }
    names
}

/// The environments the entry's text appears to declare (its `environments:` keys; for a
/// directory of states, every state's). A guess, used for nothing but starting their loads
/// while helmfile's own list is computed (`pipeline`): the environments checked are always those
/// helmfile prints.
pub fn guessed_environments(entry: &Path) -> Vec<String> {
    let files = if entry.is_dir() {
        super::loader::state_files_in(entry)
    } else {
        vec![entry.to_path_buf()]
    };
    let mut out: Vec<String> = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for n in declared_keys(&text, "environments") {
            let plain = !n.is_empty()
                && n.len() <= 63
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
            if plain && !out.contains(&n) && out.len() < 32 {
                out.push(n);
            }
        }
    }
    out
}

/// Most releases `guessed_local_releases` guesses (each is one `--selector` of the early template).
const MAX_GUESSED_RELEASES: usize = 64;

/// The releases with a directory chart (`./`, `../`, `/`) that the entry state's own text
/// declares, as (name, namespace when written): what `helmfile template` is started on before
/// helmfile has even listed the releases. A guess that only saves time, never one that decides
/// anything: `render::helmfile::render_env` uses that render only when the loaded state's installed
/// local releases are exactly the guessed ones and nothing else was rendered, and renders again
/// otherwise. `None` (then the template waits for `helmfile list`) when the text cannot be read
/// plainly: a template action (`{{`), `bases:` or `helmfiles:` (which bring releases of their
/// own), a document that does not parse, a release whose name, namespace or chart is not a plain
/// string, or an `installed:` that is not a literal boolean. A release with `installed: false` is
/// left out; one with a `condition:` is kept (helmfile renders it only when the condition holds).
pub fn guessed_local_releases(entry: &Path) -> Option<Vec<(String, Option<String>)>> {
    guessed_releases(entry).map(|g| g.local)
}

/// What the entry state's plain text declares (see `guessed_local_releases`, which gives up on
/// the same texts): the installed releases with a directory chart, and the other installed ones
/// (a repository or OCI chart, or a chart path not written `./`, `../` or `/`), which the early
/// `helmfile template` leaves out with selectors so that it renders every other release helmfile
/// sees (`render::helmfile::start_template_guessed`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Guess {
    pub local: Vec<(String, Option<String>)>,
    pub other: Vec<(String, Option<String>)>,
}

/// See [`Guess`].
pub fn guessed_releases(entry: &Path) -> Option<Guess> {
    let files = if entry.is_dir() {
        super::loader::state_files_in(entry)
    } else {
        vec![entry.to_path_buf()]
    };
    let plain = |v: &Value| v.as_str().filter(|t| !t.is_empty()).map(str::to_string);
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut other: Vec<(String, Option<String>)> = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).ok()?;
        if text.contains("{{") || text.len() > 1 << 20 {
            return None;
        }
        for doc in crate::yaml::documents(&text).ok()? {
            let top = doc.value.as_object()?;
            if top.contains_key("bases") || top.contains_key("helmfiles") {
                return None;
            }
            let Some(releases) = top.get("releases") else {
                continue;
            };
            for r in releases.as_array()? {
                let chart = plain(r.get("chart")?)?;
                let name = plain(r.get("name")?)?;
                let namespace = match r.get("namespace") {
                    None => None,
                    Some(n) => Some(plain(n)?),
                };
                let installed = match r.get("installed") {
                    None => true,
                    Some(i) => i.as_bool()?,
                };
                let local = chart.starts_with("./") || chart.starts_with("../") || chart.starts_with('/');
                if installed && local {
                    out.push((name, namespace));
                } else if installed {
                    other.push((name, namespace));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    other.sort();
    other.dedup();
    (out.len() <= MAX_GUESSED_RELEASES && other.len() <= MAX_GUESSED_RELEASES).then_some(Guess { local: out, other })
}

/// Keys of a top-level block map `key:` at its first indentation level, as the text spells them.
/// Only ever used to order the environment names helmfile printed (never to add or drop one)
/// and to guess which environments to start loading early (`guessed_environments`).
fn declared_keys(text: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut indent: Option<usize> = None;
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let ind = line.len() - line.trim_start().len();
        if ind == 0 {
            inside = line.starts_with(&format!("{key}:"));
            continue;
        }
        if !inside {
            continue;
        }
        if indent.is_none_or(|i| i == ind) {
            if let Some((k, _)) = line.trim().split_once(':') {
                indent = Some(ind);
                out.push(k.trim().trim_matches(|c| c == '"' || c == '\'').to_string());
            }
        }
    }
    out
}

/// Turn build documents into the environment's state. `root` is the directory of the entry state.
pub fn env_state(environment: &str, docs: &[StateDoc], root: &Path, entry: &Path) -> EnvState {
    let root_abs = absolute(root);
    let entry_abs = absolute(entry);
    let mut state = EnvState {
        name: environment.to_string(),
        ..EnvState::default()
    };
    // Entry first, then the sub-states in the order helmfile printed them.
    let mut ordered: Vec<&StateDoc> = docs.iter().filter(|d| d.path == entry_abs).collect();
    ordered.extend(docs.iter().filter(|d| d.path != entry_abs));
    let mut line_cursor: HashMap<(PathBuf, String), usize> = HashMap::new();
    for d in ordered {
        let rel = relative(&d.path, &root_abs);
        if !state.state_files.contains(&rel) {
            state.state_files.push(rel.clone());
        }
        let state_dir = d
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root_abs.clone());
        let source = std::fs::read_to_string(&d.path).unwrap_or_default();
        let mut repos = Vec::new();
        for r in d
            .doc
            .get("repositories")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = r.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let url = r.get("url").and_then(Value::as_str).unwrap_or_default().to_string();
            let oci = r.get("oci").and_then(Value::as_bool).unwrap_or(false) || url.starts_with("oci://");
            repos.push(Repository {
                name,
                url,
                oci,
                file: rel.clone(),
                // (helmfile 0.166 refuses the state with `insecure_skip_tls_verify`: see
                // `failure::unknown_field`.)
                skip_tls_verify: truthy(r.get("skipTLSVerify")),
            });
        }
        let env_line = source
            .lines()
            .position(|l| l.starts_with("environments:"))
            .map_or(1, |i| i + 1);
        let own = d.doc.pointer(&format!(
            "/environments/{}/values",
            environment.replace('~', "~0").replace('/', "~1")
        ));
        for (path, v) in [
            (format!("environments.{environment}.values"), own),
            ("renderedvalues".to_string(), d.doc.get("renderedvalues")),
        ] {
            if let Some(v) = v.filter(|v| !v.is_null()) {
                state.environment_values.push(crate::stack::StateValues {
                    file: rel.clone(),
                    line: env_line,
                    path,
                    value: v.clone(),
                });
            }
        }
        let defaults = d.doc.get("helmDefaults");
        let defaults_line = source
            .lines()
            .position(|l| l.starts_with("helmDefaults:"))
            .map(|i| i + 1);
        for r in d.doc.get("releases").and_then(Value::as_array).into_iter().flatten() {
            let name = str_of(r, "name");
            // helmfile 0.166 has no `helmDefaults.namespace` (it refuses the state): a release is
            // placed by its own `namespace:` alone.
            let declared_ns = r
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_string);
            let namespace_unset = declared_ns.is_none();
            let namespace = declared_ns.unwrap_or_else(|| "default".to_string());
            let chart = str_of(r, "chart");
            let chart_ref = classify_chart(&chart, &state_dir, &root_abs, &repos);
            let key = (d.path.clone(), name.clone());
            let nth = line_cursor.entry(key).or_insert(0);
            let line = release_line(&source, &name, *nth);
            *nth += 1;
            let mut installed = match r.get("installed") {
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) => s != "false",
                _ => true,
            };
            if let Some(cond) = r.get("condition").and_then(Value::as_str) {
                let values = d.doc.get("renderedvalues").unwrap_or(&Value::Null);
                if condition_holds(values, cond) == Some(false) {
                    installed = false;
                }
            }
            let needs = r
                .get("needs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            let set: Vec<(String, Value)> = r
                .get("set")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|e| {
                            Some((
                                e.get("name")?.as_str()?.to_string(),
                                e.get("value").cloned().unwrap_or(Value::Null),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut cluster_reads = cluster_reads(&chart_ref, &root_abs, defaults);
            cluster_reads.extend(revision_reads(&chart_ref, &root_abs));
            // Each hook at the line of its `command:`, looked for from the release's declaration on.
            let from = line.unwrap_or(1).saturating_sub(1);
            let after: String = source.lines().skip(from).map(|l| format!("{l}\n")).collect();
            cluster_reads.extend(hook_actions(r).into_iter().map(|(command, mut read)| {
                if let Some((l, _)) = hook_command_at(&after, &command) {
                    read.file = Some(rel.clone());
                    read.line = Some(from + l);
                }
                read
            }));
            let values = merged_values(r.get("values"));
            cluster_reads.extend(values_revision_read(&values, &set));
            let chart_dependencies = chart_dependencies(&chart_ref, &root_abs);
            let helm_args = helmfile_args(
                defaults
                    .and_then(|h| h.get("args"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str),
            );
            let refused = post_renderer(r, defaults).err().or_else(|| {
                let at = format!("{rel}{}", defaults_line.map(|l| format!(":{l}")).unwrap_or_default());
                namespace_override(&helm_args, &namespace, &at)
            });
            state.releases.push(Release {
                name,
                namespace,
                chart,
                chart_ref,
                version: r.get("version").and_then(|v| match v {
                    Value::String(s) if !s.is_empty() => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                }),
                devel: effective_devel(r, defaults),
                insecure_tls: insecure_tls(r, defaults),
                devel_from_defaults: devel_from_defaults(r, defaults),
                helm_defaults_line: defaults_line,
                namespace_unset,
                installed,
                needs,
                declared_values: r.get("values").and_then(Value::as_array).cloned().unwrap_or_default(),
                values,
                set,
                file: rel.clone(),
                line,
                refused,
                post_renderer: post_renderer(r, defaults).ok().flatten(),
                helm_args,
                api_versions: state_api_versions(r, &d.doc),
                cluster_reads,
                chart_dependencies,
            });
        }
        state.repositories.extend(repos);
    }
    state
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    }
}

/// `devel` as helmfile applies it: the release's own when it sets one, else `helmDefaults.devel`.
pub fn effective_devel(release: &Value, defaults: Option<&Value>) -> bool {
    match release.get("devel") {
        Some(v @ (Value::Bool(_) | Value::String(_))) => truthy(Some(v)),
        _ => truthy(defaults.and_then(|h| h.get("devel"))),
    }
}

/// Whether `devel` is on only through `helmDefaults.devel`.
pub fn devel_from_defaults(release: &Value, defaults: Option<&Value>) -> bool {
    !matches!(release.get("devel"), Some(Value::Bool(_) | Value::String(_)))
        && truthy(defaults.and_then(|h| h.get("devel")))
}

/// Where a release's applied form depends on the cluster (`Release::cluster_reads`): every
/// `lookup` call in its local chart's templates (subcharts included, vendored archives too:
/// [`lookup_calls`]), and `helmDefaults.reuseValues: true`. A chart not read to its end (past a
/// bound of [`chart_files::LIMITS`], or a file that cannot be read) is one that may call it.
pub fn cluster_reads(chart: &ChartRef, root: &Path, defaults: Option<&Value>) -> Vec<crate::stack::ClusterRead> {
    use crate::stack::ClusterRead;
    let mut out = Vec::new();
    if truthy(defaults.and_then(|h| h.get("reuseValues"))) {
        out.push(ClusterRead {
            file: None,
            line: None,
            what: "helmDefaults.reuseValues: true".into(),
        });
    }
    let ChartRef::Local { path } = chart else { return out };
    let (calls, read) = lookup_calls(&root.join(path));
    out.extend(placed(
        path,
        root.join(path).is_file(),
        calls,
        "lookup",
        LOOKUP_WORDS,
        read.err().map(|why| format!("{why}, not read to its end for `lookup`")),
    ));
    out
}

/// Why a `lookup` call is reported, after what calls it.
pub const LOOKUP_WORDS: &str =
    "calls `lookup`, which reads the live cluster at apply time; offline it returns nothing, so what is \
     judged here may not be what is installed";

/// Every `lookup` call in the templates of the chart at `chart` (a directory or a chart archive,
/// its subcharts included, vendored archives too), as (its file's path inside the chart, line),
/// with why the reading stopped when it did (`chart_files::read_chart`; the calls found before
/// are kept). A template is a file with a `templates` path component; a call is `lookup` where a
/// template can call it: after `{{`, `(` or `|`, followed by a space (a `lookupTable:` key or a
/// comment is not one).
pub fn lookup_calls(chart: &Path) -> (Vec<(String, usize)>, Result<(), chart_files::Unread>) {
    template_lines(chart, &|_, text| {
        text.lines()
            .enumerate()
            .filter(|(_, l)| calls_lookup(l))
            .map(|(i, _)| i + 1)
            .collect()
    })
}

/// The reads of the release revision ([`reads_revision`]) in the templates of the chart at `chart`
/// (a directory or a chart archive, subcharts and vendored archives included), as [`lookup_calls`];
/// `NOTES.txt`, which helm renders into the release notes and never installs, is left out.
pub fn revision_calls(chart: &Path) -> (Vec<(String, usize)>, Result<(), chart_files::Unread>) {
    template_lines(chart, &|inner, text| {
        if inner.ends_with("NOTES.txt") {
            Vec::new()
        } else {
            reads_revision(text)
        }
    })
}

/// The lines `find` gives for each template of the chart at `chart` (a file with a `templates`
/// path component, read by `chart_files::read_chart`: subcharts and vendored archives included,
/// within its bounds), as (the file's path inside the chart, line), with why the reading stopped
/// when it did (the lines found before are kept).
fn template_lines(
    chart: &Path,
    find: &dyn Fn(&str, &str) -> Vec<usize>,
) -> (Vec<(String, usize)>, Result<(), chart_files::Unread>) {
    let mut hits = Vec::new();
    let read = chart_files::read_chart(chart, chart_files::LIMITS, &mut |inner, bytes| {
        if inner.split('/').any(|c| c == "templates") {
            for line in find(inner, &String::from_utf8_lossy(bytes)) {
                hits.push((inner.to_string(), line));
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    (hits, read)
}

/// The subchart archive a file found by `chart_files::read_chart` is in (its path inside the
/// chart, the outermost one; empty when the chart itself is an archive) and the file's path
/// inside that archive, or `None` for a file that is on disk itself.
fn archive_of(inner: &str, chart_is_archive: bool) -> Option<(&str, &str)> {
    if chart_is_archive {
        return Some(("", inner));
    }
    let mut end = 0;
    for part in inner.split('/') {
        end += part.len();
        if chart_files::is_subchart_archive(&inner[..end]) {
            return Some((&inner[..end], inner.get(end + 1..).unwrap_or("")));
        }
        end += 1;
    }
    None
}

/// What [`revision_reads`] names a read of the release's revision (`ClusterRead::what`).
pub const REVISION_READ: &str = "the release revision";

/// Why a read of the release revision is reported, after what reads it.
pub const REVISION_WORDS: &str = "reads the release revision (`.Release.Revision`, or the release object whole): \
     helm renders it as 1 here, and as the release's next revision (2, 3, …) at every `helmfile apply` after the \
     first, so what is judged here is not what is installed";

/// Where a local chart's templates (subcharts and vendored subchart archives included;
/// `NOTES.txt`, which helm renders into the release notes and never installs, left out) read the
/// release's revision, at each line ([`reads_revision`]), as [`REVISION_READ`]; a read inside a
/// vendored archive is placed at the archive, naming the template and line. helm renders
/// `.Release.Revision` as 1 in `helm template`, `--is-upgrade` or not (`pkg/action/install.go`),
/// and as the last revision + 1 at every upgrade (`pkg/action/upgrade.go`): no offline render has
/// the value applied, so every read is reported, a value only written into an annotation as well
/// (the cluster gets a different object than the one judged, and rules read annotations: the
/// downward API, reload triggers). A chart not read to its end counts as one that reads it.
pub fn revision_reads(chart: &ChartRef, root: &Path) -> Vec<crate::stack::ClusterRead> {
    let ChartRef::Local { path } = chart else {
        return Vec::new();
    };
    let (reads, read) = revision_calls(&root.join(path));
    placed(
        path,
        root.join(path).is_file(),
        reads,
        REVISION_READ,
        REVISION_WORDS,
        read.err()
            .map(|why| format!("{why}, not read to its end for reads of the release revision")),
    )
}

/// The reads (`hits`, from [`template_lines`]) of the local chart at `path` as cluster reads: at
/// the template's file and line as `what` (which the rule words), or, inside a vendored archive
/// (or a chart that is an archive), at the archive, the template and line named, with `words`;
/// `unread`, when the chart was not read to its end, one more at the chart.
fn placed(
    path: &str,
    chart_is_archive: bool,
    hits: Vec<(String, usize)>,
    what: &str,
    words: &str,
    unread: Option<String>,
) -> Vec<crate::stack::ClusterRead> {
    use crate::stack::ClusterRead;
    let mut out: Vec<ClusterRead> = hits
        .into_iter()
        .map(|(inner, line)| match archive_of(&inner, chart_is_archive) {
            None => ClusterRead {
                file: Some(format!("{path}/{inner}")),
                line: Some(line),
                what: what.into(),
            },
            Some((archive, rest)) => ClusterRead {
                file: Some(if archive.is_empty() {
                    path.to_string()
                } else {
                    format!("{path}/{archive}")
                }),
                line: None,
                what: format!(
                    "the template {rest} line {line} of the chart archive {} {words}",
                    if archive.is_empty() { path } else { archive }
                ),
            },
        })
        .collect();
    out.extend(unread.map(|what| ClusterRead {
        file: Some(path.to_string()),
        line: None,
        what,
    }));
    out
}

/// Most values of a release read for template text ([`value_strings`]); past it, the values
/// count as reading the revision and as asking for the upgrade render.
const MAX_VALUE_STRINGS: usize = 100_000;

/// Every string of a release's values (`values`) and `set:` entries, keys and names included:
/// what a chart may render as a template with `tpl`. `None` past [`MAX_VALUE_STRINGS`] values or
/// 64 levels of nesting (not read whole).
pub fn value_strings<'a>(values: &'a Value, set: &'a [(String, Value)]) -> Option<Vec<&'a str>> {
    fn walk<'a>(v: &'a Value, depth: usize, seen: &mut usize, out: &mut Vec<&'a str>) -> bool {
        *seen += 1;
        if depth > 64 || *seen > MAX_VALUE_STRINGS {
            return false;
        }
        match v {
            Value::String(s) => {
                out.push(s);
                true
            }
            Value::Array(a) => a.iter().all(|x| walk(x, depth + 1, seen, out)),
            Value::Object(m) => m.iter().all(|(k, x)| {
                out.push(k);
                walk(x, depth + 1, seen, out)
            }),
            _ => true,
        }
    }
    let (mut seen, mut out) = (0, Vec::new());
    let whole = walk(values, 0, &mut seen, &mut out)
        && set.iter().all(|(name, v)| {
            out.push(name);
            walk(v, 0, &mut seen, &mut out)
        });
    whole.then_some(out)
}

/// A release whose values hold template text that reads the release revision ([`reads_revision`]
/// on each string of [`value_strings`]): a chart renders such a value with `tpl`, so it reads
/// the revision as a template does (one read, at the release). Values too large to read count as
/// reading it; template text that a chart never renders is reported too (the gate does not follow
/// which values reach `tpl`).
pub fn values_revision_read(values: &Value, set: &[(String, Value)]) -> Option<crate::stack::ClusterRead> {
    let what = match value_strings(values, set) {
        None => format!(
            "its values (more than {MAX_VALUE_STRINGS} strings or 64 levels deep) were not read for template text \
             (what a chart renders with `tpl`) that reads the release revision"
        ),
        Some(strings) if strings.iter().any(|s| !reads_revision(s).is_empty()) => {
            format!("a value holds template text (what a chart renders with `tpl`) that {REVISION_WORDS}")
        }
        Some(_) => return None,
    };
    Some(crate::stack::ClusterRead {
        file: None,
        line: None,
        what,
    })
}

/// The built-in objects of a template's root other than `.Release`: a field chain that starts at
/// one of them (`.Values.image.Revision`) is not the release.
const NOT_THE_RELEASE: &[&str] = &["Values", "Chart", "Capabilities", "Files", "Template", "Subcharts"];

/// The lines (1-based, each once) of a Go template `text` where an action (not a comment, not the
/// text around actions) reads the release's revision, by structure:
///
/// - a field `Revision` of anything but another built-in object (`.Release.Revision`,
///   `$.Release.Revision`, `$r.Revision`, `.Revision` in `with .Release`, `(.Release).Revision`);
/// - the release object taken whole, which holds the revision: `.Release` (any receiver) not
///   followed by a field (`.Release | toJson`, `$r := .Release`, `with .Release`,
///   `template "x" .Release`);
/// - the key `"Revision"` or `"Release"` as a string (`index .Release "Revision"`, `index . "Release"`).
///
/// A key computed at render time (`index . (print "Rel" "ease")`) is not seen.
pub fn reads_revision(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut lines: Vec<usize> = Vec::new();
    // Hits come in order: the newlines are counted from the last one.
    let (mut counted, mut line) = (0, 1);
    let mut hit = |i: usize| {
        line += b[counted..i].iter().filter(|&&c| c == b'\n').count();
        counted = i;
        if lines.last() != Some(&line) {
            lines.push(line);
        }
    };
    let mut i = 0;
    while let Some(open) = text[i..].find("{{").map(|o| i + o + 2) {
        i = open;
        // A comment: `{{/* … */}}`, `{{- /* … */ -}}`.
        let body = text[i..].trim_start_matches('-').trim_start();
        if body.starts_with("/*") {
            let from = text.len() - body.len();
            i = text[from..].find("*/").map_or(text.len(), |e| from + e + 2);
            continue;
        }
        // The action's tokens, up to its `}}` (never inside a string).
        while i < b.len() {
            match b[i] {
                b'}' if b.get(i + 1) == Some(&b'}') => {
                    i += 2;
                    break;
                }
                q @ (b'"' | b'`' | b'\'') => {
                    let start = i + 1;
                    let mut j = start;
                    while j < b.len() && b[j] != q {
                        if q != b'`' && b[j] == b'\\' {
                            j += 1;
                        }
                        j += 1;
                    }
                    let s = &text[start..j.min(b.len())];
                    if q != b'\'' && (s == "Revision" || s == "Release") {
                        hit(i);
                    }
                    i = (j + 1).min(b.len());
                }
                b'.' | b'$' => {
                    let start = i;
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'.' | b'$')) {
                        i += 1;
                    }
                    let chain = &text[start..i];
                    // The fields after the receiver (`$`, `$r` or the dot).
                    let fields: Vec<&str> = chain.split('.').skip(1).filter(|f| !f.is_empty()).collect();
                    let root_field = chain.starts_with('.') || chain.starts_with("$.");
                    if root_field && fields.first().is_some_and(|f| NOT_THE_RELEASE.contains(f)) {
                        continue;
                    }
                    if fields.contains(&"Revision") || fields.last() == Some(&"Release") {
                        hit(start);
                    }
                }
                _ => i += 1,
            }
        }
    }
    lines
}

/// The hook events helmfile fires while it renders (`helmfile template`, as the gate runs it, and
/// `build`/`list`, which fire `prepare` alone): observed with the pinned helmfile 0.166. Every
/// other event (`preapply`, `presync`, `postsync`, `preuninstall`, `postuninstall`) fires only
/// when helmfile applies, syncs or deletes.
pub const RENDER_EVENTS: &[&str] = &["prepare", "cleanup"];
/// The events helmfile 0.166 fires at all; a hook whose events are none of these never runs.
const HELMFILE_EVENTS: &[&str] = &[
    "prepare",
    "preapply",
    "presync",
    "preuninstall",
    "postuninstall",
    "postsync",
    "cleanup",
];

/// The hooks of a release whose effect the render does not include, by when helmfile runs them
/// (not by which program they run): each one, with its events and command, as a
/// `render-depends-on-cluster` read.
///
/// - A hook on an event helmfile fires only at apply, sync or delete never runs in a render:
///   whatever it changes (the cluster, the host, files) is outside what is judged.
/// - A `prepare` or `cleanup` hook runs in the render too, as at apply: what it leaves for the
///   render to read is judged, and nothing else it changes (the cluster, the network, the host);
///   the seal refuses writes outside the run, host Unix sockets and `kubectl`/container CLIs on
///   `PATH` in every mode (a refusal that fails the hook fails the run) and TCP offline, but online
///   a cluster reached over the network by another client is not prevented.
///
/// A hook on no event helmfile fires never runs and is not reported.
pub fn hook_actions(release: &Value) -> Vec<(String, crate::stack::ClusterRead)> {
    let mut out = Vec::new();
    for h in release.get("hooks").and_then(Value::as_array).into_iter().flatten() {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let command = text(h.get("command"));
        let strings = |key: &str| -> Vec<String> {
            h.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let (args, events) = (strings("args"), strings("events"));
        let fired: Vec<&str> = events
            .iter()
            .map(String::as_str)
            .filter(|e| HELMFILE_EVENTS.contains(e))
            .collect();
        if fired.is_empty() || command.trim().is_empty() {
            continue;
        }
        let at_apply: Vec<&str> = fired.iter().copied().filter(|e| !RENDER_EVENTS.contains(e)).collect();
        let mut line = std::iter::once(command.clone())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ");
        if line.chars().count() > 120 {
            line = line.chars().take(117).collect::<String>() + "...";
        }
        let line = crate::redact::tool_output(&line);
        let what = if at_apply.is_empty() {
            format!(
                "its {} hook runs `{line}` in every helmfile command, this render included: only the files it leaves \
                 for the render are judged, not what else it changes (the cluster, the network, the host; the seal \
                 refuses writes outside the run and host sockets, offline also TCP, but online a cluster reached \
                 over the network is not prevented); move that change into a chart, or waive with the reason it \
                 is safe",
                fired.join("/")
            )
        } else {
            format!(
                "its {} hook runs `{line}` when helmfile applies, syncs or deletes, never in a render: what it changes \
                 (the cluster, the host, files) is not judged here; move that change into a chart, or waive with the \
                 reason it is safe",
                fired.join("/")
            )
        };
        out.push((
            command,
            crate::stack::ClusterRead {
                file: None,
                line: None,
                what,
            },
        ));
    }
    out
}

/// The repository dependencies of a local chart (`Chart.yaml` `dependencies:` whose
/// `repository` is not empty and not `file://`, which are local) with what `Chart.lock` pins for
/// each (an entry of the same name; helm refuses a lock out of sync with `Chart.yaml`). A chart
/// without a readable `Chart.yaml` has none here (helm refuses it itself).
pub fn chart_dependencies(chart: &ChartRef, root: &Path) -> Vec<crate::stack::ChartDependency> {
    let ChartRef::Local { path } = chart else {
        return Vec::new();
    };
    let dir = root.join(path);
    let read = |f: &str| {
        std::fs::File::open(dir.join(f))
            .ok()
            .and_then(|h| crate::yaml::read_bounded(h, 1 << 20, f).ok())
            .and_then(|t| crate::yaml::value(&t).ok())
    };
    let Some(doc) = read("Chart.yaml") else {
        return Vec::new();
    };
    let lock = read("Chart.lock");
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let mut out = Vec::new();
    for d in doc.get("dependencies").and_then(Value::as_array).into_iter().flatten() {
        let repository = text(d.get("repository"));
        if repository.is_empty() || repository.starts_with("file://") {
            continue;
        }
        let name = text(d.get("name"));
        let locked = lock
            .as_ref()
            .and_then(|l| l.get("dependencies"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|e| text(e.get("name")) == name)
            .map(|e| text(e.get("version")));
        out.push(crate::stack::ChartDependency {
            chart_file: format!("{path}/Chart.yaml"),
            name,
            version: text(d.get("version")),
            repository,
            locked,
        });
    }
    out
}

/// A template line that calls `lookup`.
fn calls_lookup(line: &str) -> bool {
    let mut from = 0;
    while let Some(i) = line[from..].find("lookup").map(|i| i + from) {
        from = i + "lookup".len();
        let before = line[..i].trim_end_matches([' ', '\t']);
        // After `{{`, `(`, `|` or an assignment (`$x := lookup …`).
        let called = ["{{", "{{-", "(", "|", "="].iter().any(|p| before.ends_with(p));
        if called && line[from..].starts_with([' ', '\t']) {
            return true;
        }
    }
    false
}

/// What rewrites a release's manifests after helm renders them, at apply time: a post-renderer
/// (the release's `postRenderer`, `helmDefaults.postRenderer`, or `--post-renderer` in
/// `helmDefaults.args`, with `postRendererArgs`). The pinned Helm 4 takes the name of an installed
/// postrenderer/v1 plugin and runs it on the rendered stream, `helm template --output-dir`
/// included, so the gate's render runs it too (inside the seal). An executable path is no plugin
/// name: helm fails on it ("plugin … not found"), so `helmfile apply` installs nothing for the
/// release; it is refused (`Err`, these words naming the input) rather than judged.
pub fn post_renderer(release: &Value, defaults: Option<&Value>) -> Result<Option<PostRenderer>, String> {
    fn named(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
    }
    fn strings(v: Option<&Value>) -> Option<Vec<String>> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
    }
    let args = strings(release.get("postRendererArgs"))
        .or_else(|| strings(defaults.and_then(|h| h.get("postRendererArgs"))))
        .unwrap_or_default();
    let (name, input) = if let Some(p) = named(release.get("postRenderer")) {
        (p.to_string(), format!("postRenderer: {p}"))
    } else if let Some(p) = named(defaults.and_then(|h| h.get("postRenderer"))) {
        (p.to_string(), format!("helmDefaults.postRenderer: {p}"))
    } else {
        let words: Vec<&str> = defaults
            .and_then(|h| h.get("args"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .flat_map(str::split_whitespace)
            .collect();
        let Some(at) = words
            .iter()
            .position(|a| *a == "--post-renderer" || a.starts_with("--post-renderer="))
        else {
            return Ok(None);
        };
        let value = words[at]
            .strip_prefix("--post-renderer=")
            .or(words.get(at + 1).copied())
            .unwrap_or("");
        (value.to_string(), format!("helmDefaults.args: --post-renderer {value}"))
    };
    // Helm 4's plugin names: letters, digits, `_` and `-`.
    let plugin_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !plugin_name {
        return Err(format!(
            "its post-renderer ({input}) is not a plugin name: the pinned Helm 4 runs only an installed \
             postrenderer/v1 plugin named by --post-renderer and fails on anything else (\"plugin … not found\"), \
             so `helmfile apply` installs nothing for this release; package the post-renderer as a \
             postrenderer/v1 plugin (`helm plugin install DIR`) and name it, or remove it"
        ));
    }
    Ok(Some(PostRenderer { name, args, input }))
}

/// A namespace flag in `helmDefaults.args` that names another namespace than the release's: helmfile
/// passes the release's `--namespace` first and these args after it, and helm takes the last, so
/// `helmfile apply` renders (`.Release.Namespace`) and installs the release into the args'
/// namespace while the state, and the gate's judgement of its objects, say the release's
/// (observed with the pinned helmfile: `helm template r charts/app --namespace a --namespace b`
/// renders namespace `b`). Its words for the refusal (`at`: the state file and line of the
/// helmDefaults), `None` when no such flag is given.
fn namespace_override(helm_args: &[String], namespace: &str, at: &str) -> Option<String> {
    let mut last: Option<&str> = None;
    let mut words = helm_args.iter().map(String::as_str);
    while let Some(w) = words.next() {
        last = match w {
            "--namespace" | "-n" => words.next().or(Some("")),
            _ => match w.strip_prefix("--namespace=") {
                Some(v) => Some(v),
                None if w.starts_with("-n") && !w.starts_with("--") => {
                    Some(w[2..].strip_prefix('=').unwrap_or(&w[2..]))
                }
                None => last,
            },
        };
    }
    let given = last?;
    (given != namespace).then(|| {
        format!(
            "helmDefaults.args ({at}) gives `--namespace {given}`: helm takes the last namespace flag, so `helmfile \
             apply` renders and installs this release into namespace `{given}`, not `{namespace}` as the state \
             says and the gate would judge it; set the release's `namespace:` and remove the flag from \
             helmDefaults.args"
        )
    })
}

/// `helmDefaults.args` as helmfile 0.166 passes them to helm (after its own flags and those of
/// `--args`): the entries joined by spaces and cut at each space (so `"--set a=b c"` loses `c`);
/// a word starting with `-` is a flag, with its value after `=` or in the next word when that is
/// no flag; words no flag takes are dropped; flags are grouped by name in the order each name
/// first appears, every occurrence kept (`--set a=1 --skip-tests --set=b=2` becomes `--set a=1
/// --set=b=2 --skip-tests`). Observed with the pinned helmfile (`tests/apply_oracle.rs` holds it
/// to that on a remote chart).
pub fn helmfile_args<'a>(entries: impl Iterator<Item = &'a str>) -> Vec<String> {
    let joined = entries.collect::<Vec<_>>().join(" ");
    let words: Vec<&str> = joined.split(' ').filter(|w| !w.is_empty()).collect();
    let flag = |w: &str| w.starts_with('-');
    // (name, occurrences: value and whether it was a separate word)
    let mut groups: Vec<(&str, Vec<(&str, bool)>)> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !flag(w) {
            continue;
        }
        let (name, value, spaced) = match w.split_once('=') {
            Some((n, v)) => (n, v, false),
            None => match words.get(i + 1) {
                Some(next) if !flag(next) => (*w, *next, true),
                _ => (*w, "", false),
            },
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, occ)) => occ.push((value, spaced)),
            None => groups.push((name, vec![(value, spaced)])),
        }
    }
    let mut out = Vec::new();
    for (name, occ) in groups {
        for (value, spaced) in occ {
            match (value.is_empty(), spaced) {
                (true, _) => out.push(name.to_string()),
                (false, true) => out.extend([name.to_string(), value.to_string()]),
                (false, false) => out.push(format!("{name}={value}")),
            }
        }
    }
    out
}

/// The `--api-versions` helmfile 0.166 passes `helm template` for a release from the state: the
/// release's `apiVersions:`, else the state's (observed with the pinned helmfile; its
/// `kubeVersion:` keys are not, as the gate always gives helmfile `--kube-version`, which wins).
pub fn state_api_versions(release: &Value, doc: &Value) -> Vec<String> {
    let list = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let own = list(release.get("apiVersions"));
    if own.is_empty() {
        list(doc.get("apiVersions"))
    } else {
        own
    }
}

/// What turns TLS verification off for a release's chart fetches (helmfile ORs the release's
/// `insecureSkipTLSVerify` with `helmDefaults.insecureSkipTLSVerify`, and passes
/// `helmDefaults.args` to every helm call).
pub fn insecure_tls(release: &Value, defaults: Option<&Value>) -> Option<String> {
    if truthy(release.get("insecureSkipTLSVerify")) {
        return Some("insecureSkipTLSVerify: true".into());
    }
    if truthy(defaults.and_then(|h| h.get("insecureSkipTLSVerify"))) {
        return Some("helmDefaults.insecureSkipTLSVerify: true".into());
    }
    let args = defaults.and_then(|h| h.get("args")).and_then(Value::as_array);
    args.into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .flat_map(str::split_whitespace)
        .find(|a| *a == "--insecure-skip-tls-verify" || *a == "--insecure-skip-tls-verify=true")
        .map(|a| format!("helmDefaults.args: {a}"))
}

/// Add the releases helmfile refused while loading (and the loader left out of the build) to a
/// state, so the rules judge them: a release declared twice in one state file (both declarations,
/// for `release-one-owner`; their chart is not known, so nothing else is judged on them), or an
/// OCI release whose version helmfile refuses, described by helmfile's own `list` (name,
/// namespace, chart, version). Each carries helmfile's refusal in `refused`.
pub fn add_refused(
    state: &mut EnvState,
    refused: &[(Refusal, Vec<Listed>)],
    docs: &[StateDoc],
    root: &Path,
    entry: &Path,
) {
    use super::failure::RefusalKind;
    let root_abs = absolute(root);
    for (r, listed) in refused {
        let file = r.file.clone().unwrap_or_else(|| absolute(entry));
        let rel = relative(&file, &root_abs);
        if !state.state_files.contains(&rel) {
            state.state_files.push(rel.clone());
        }
        // Locations only: the line of each `- name:` declaration of the release.
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        let doc = docs.iter().find(|d| d.path == file);
        let defaults = doc.and_then(|d| d.doc.get("helmDefaults"));
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut reason = format!("helmfile refuses it: {}", crate::redact::cap(&r.message, 300));
        if r.namespace.as_deref().is_none_or(str::is_empty) {
            reason.push_str(&format!(
                " (helmfile's selectors cannot single out a release without a namespace, so every release named {} \
                 was left out of this environment until it is fixed)",
                r.name
            ));
        }
        let blank = |namespace: &str, nth: usize| Release {
            name: r.name.clone(),
            namespace: if namespace.is_empty() {
                "default".into()
            } else {
                namespace.to_string()
            },
            namespace_unset: namespace.is_empty(),
            chart: String::new(),
            chart_ref: ChartRef::Other { raw: String::new() },
            version: None,
            devel: false,
            insecure_tls: None,
            devel_from_defaults: false,
            helm_defaults_line: None,
            installed: false,
            needs: Vec::new(),
            declared_values: Vec::new(),
            values: Value::Null,
            set: Vec::new(),
            file: rel.clone(),
            line: release_line(&source, &r.name, nth),
            refused: Some(reason.clone()),
            cluster_reads: Vec::new(),
            chart_dependencies: Vec::new(),
            helm_args: Vec::new(),
            api_versions: Vec::new(),
            post_renderer: None,
        };
        match r.kind {
            RefusalKind::Duplicate => {
                let ns = r.namespace.clone().unwrap_or_default();
                for nth in 0..2 {
                    state.releases.push(blank(&ns, nth));
                }
            }
            RefusalKind::OciVersion => {
                let repos: Vec<Repository> = state.repositories.iter().filter(|x| x.file == rel).cloned().collect();
                for (nth, l) in listed.iter().enumerate() {
                    let mut rel_ = blank(&l.namespace, nth);
                    rel_.chart_ref = classify_chart(&l.chart, &dir, &root_abs, &repos);
                    rel_.chart = l.chart.clone();
                    rel_.version = Some(l.version.clone()).filter(|v| !v.is_empty());
                    // What `list` does not print (the release's own `devel:`) is taken from
                    // `helmDefaults` alone.
                    rel_.devel = effective_devel(&Value::Null, defaults);
                    rel_.insecure_tls = insecure_tls(&Value::Null, defaults);
                    rel_.installed = l.installed && l.enabled;
                    state.releases.push(rel_);
                }
            }
        }
    }
    let order: HashMap<String, usize> = state
        .state_files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.clone(), i))
        .collect();
    state.releases.sort_by_key(|r| {
        (
            order.get(&r.file).copied().unwrap_or(usize::MAX),
            r.line.unwrap_or(usize::MAX),
        )
    });
}

/// The values helm receives: `helmfile build --embed-values` lists every values entry of a
/// release already rendered; later entries override earlier ones, maps merge deeply (as helm
/// merges `--values` files).
pub fn merged_values(list: Option<&Value>) -> Value {
    let mut out = Value::Object(Default::default());
    for v in list.and_then(Value::as_array).into_iter().flatten() {
        if v.is_object() {
            deep_merge(&mut out, v);
        }
    }
    out
}

fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => deep_merge(existing, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Classify a chart reference. Local paths become repository-relative (normalised).
pub fn classify_chart(chart: &str, state_dir: &Path, root: &Path, repos: &[Repository]) -> ChartRef {
    if let Some(rest) = chart.strip_prefix("oci://") {
        return ChartRef::Oci {
            url: format!("oci://{rest}"),
        };
    }
    if chart.contains("://") || chart.ends_with(".tgz") {
        return ChartRef::Other { raw: chart.to_string() };
    }
    let looks_local =
        chart.starts_with("./") || chart.starts_with("../") || chart.starts_with('/') || state_dir.join(chart).is_dir();
    if !looks_local {
        if let Some((repo, name)) = chart.split_once('/') {
            let r = repos.iter().find(|r| r.name == repo);
            return ChartRef::Repo {
                repo: repo.to_string(),
                chart: name.to_string(),
                url: r.map(|r| r.url.clone()),
                oci: r.map(|r| r.oci).unwrap_or(false),
            };
        }
    }
    let abs = normalize(&state_dir.join(chart));
    ChartRef::Local {
        path: relative(&abs, root),
    }
}

/// The line of the `nth` declaration of release `release` under `releases:` in a state file's
/// source (1-based).
pub fn release_line(source: &str, release: &str, nth: usize) -> Option<usize> {
    block_items(source, "releases")
        .into_iter()
        .filter(|i| i.scalars.get("name").map(String::as_str) == Some(release))
        .nth(nth)
        .map(|i| i.line)
}

/// The release whose declaration (an item of the top-level `releases:` block) holds line `line`
/// (1-based) of a state file's text, with the line of its declaration: where a template error or a
/// hook helmfile names by position alone belongs. `None` outside every release item.
pub fn release_at(source: &str, line: usize) -> Option<(String, usize)> {
    let item = block_items(source, "releases")
        .into_iter()
        .take_while(|i| i.line <= line)
        .last()?;
    // The block ends at the next top-level key.
    let ended = source
        .lines()
        .enumerate()
        .skip(item.line)
        .take(line.saturating_sub(item.line))
        .any(|(_, l)| !l.is_empty() && !l.starts_with([' ', '-', '#', '\t']) && !l.starts_with("{{"));
    let name = item.scalars.get("name")?.clone();
    (!ended).then_some((name, item.line))
}

/// The releases of a state file's text that declare `key` (`dependencies:`), by name.
pub fn releases_with(source: &str, key: &str) -> Vec<String> {
    block_items(source, "releases")
        .into_iter()
        .filter(|i| i.lists.contains_key(key) || i.scalars.contains_key(key))
        .filter_map(|i| i.scalars.get("name").cloned())
        .collect()
}

/// The first list item of a state file's text that is a URL helmfile downloads itself
/// (`- https://…`, `- git::…`, `- s3://…`, `- path: https://…`): its line (1-based) and the URL.
pub fn first_remote_entry(source: &str) -> Option<(usize, String)> {
    source.lines().enumerate().find_map(|(i, l)| {
        let t = l.trim_start().strip_prefix("- ")?.trim();
        let v = unquote(t.strip_prefix("path:").unwrap_or(t));
        ["http://", "https://", "git::", "s3://"]
            .iter()
            .any(|p| v.starts_with(p))
            .then(|| (i + 1, crate::redact::cap(&crate::redact::redact_userinfo(&v), 200)))
    })
}

/// A hook whose `command:` is `command` (as written, or its last path segment) in a state file's
/// text: its line (1-based) and its events as written (`events: [a, b]` or a block list).
pub fn hook_command_at(source: &str, command: &str) -> Option<(usize, Vec<String>)> {
    let lines: Vec<&str> = source.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let Some(at) = lines.iter().position(|l| {
        let t = l.trim_start().trim_start_matches("- ").trim_start();
        t.strip_prefix("command:")
            .map(unquote)
            .is_some_and(|c| c == command || c.rsplit('/').next() == Some(command))
    }) else {
        return flow_hook_command_at(source, command);
    };
    // The hook item: from the `- ` that opens it to the next line indented no deeper.
    let start = (0..=at)
        .rev()
        .find(|&i| lines[i].trim_start().starts_with("- ") && (i == at || indent(lines[i]) < indent(lines[at])))?;
    let item_indent = indent(lines[start]);
    let mut events = Vec::new();
    let mut open = None;
    for (i, l) in lines.iter().enumerate().skip(start) {
        if i > start && !l.trim().is_empty() && indent(l) <= item_indent {
            break;
        }
        let t = l.trim_start().trim_start_matches("- ");
        if let Some(v) = t.strip_prefix("events:") {
            let v = v.trim();
            if v.is_empty() {
                open = Some(indent(l));
            } else {
                events.extend(
                    v.trim_matches(['[', ']'])
                        .split(',')
                        .map(unquote)
                        .filter(|e| !e.is_empty()),
                );
            }
        } else if let (Some(oi), Some(v)) = (open, l.trim_start().strip_prefix("- ")) {
            if indent(l) >= oi {
                events.push(unquote(v));
            }
        } else if !l.trim().is_empty() {
            open = None;
        }
    }
    Some((at + 1, events))
}

/// [`hook_command_at`] for a hook written as a flow mapping (`{events: [prepare], command: x}`,
/// inside `hooks: [...]` or as `- {...}`): the line of its `command:` and the mapping's events.
fn flow_hook_command_at(source: &str, command: &str) -> Option<(usize, Vec<String>)> {
    let b = source.as_bytes();
    let mut from = 0;
    while let Some(i) = source[from..].find("command:").map(|i| from + i) {
        from = i + 1;
        if !source[..i].trim_end().ends_with(['{', ',']) {
            continue;
        }
        let rest = &source[i + "command:".len()..];
        let c = unquote(&rest[..rest.find([',', '}', '\n']).unwrap_or(rest.len())]);
        if !(c == command || c.rsplit('/').next() == Some(command)) {
            continue;
        }
        // The mapping that holds it: the nearest `{` before it not closed in between.
        let mut depth = 0usize;
        let open = (0..i).rev().find(|&j| match b[j] {
            b'}' | b']' => {
                depth += 1;
                false
            }
            b'{' | b'[' if depth > 0 => {
                depth -= 1;
                false
            }
            c => c == b'{',
        })?;
        let (item, _) = flow_mapping(source, open);
        let line = source[..i].matches('\n').count() + 1;
        return Some((line, item.lists.get("events").cloned().unwrap_or_default()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The early template's guess reads only plain text, and gives up on anything else.
    #[test]
    fn local_releases_are_guessed_only_from_plain_text() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("helmfile.yaml");
        let guess = |text: &str| {
            std::fs::write(&f, text).unwrap();
            guessed_local_releases(&f)
        };
        let s = |n: &str, ns: Option<&str>| (n.to_string(), ns.map(str::to_string));
        assert_eq!(
            guess(
                "environments:\n  prod: {}\n---\nreleases:\n  - name: b\n    namespace: nb\n    chart: ./charts/b\n    \
                 condition: b.enabled\n  - name: a\n    chart: ../charts/a\n  - name: cm\n    namespace: cm\n    \
                 chart: jetstack/cert-manager\n  - name: unused\n    chart: ./charts/unused\n    installed: false\n"
            ),
            Some(vec![s("a", None), s("b", Some("nb"))])
        );
        assert_eq!(guess("environments:\n  prod: {}\n"), Some(vec![]));
        // The releases the early template leaves out: installed, and not a directory chart.
        std::fs::write(
            &f,
            "releases:\n  - name: cm\n    namespace: cm\n    chart: jetstack/cert-manager\n  - name: p\n    \
             chart: charts/p\n  - name: gone\n    chart: oci://r/c\n    installed: false\n  - name: a\n    chart: ./a\n",
        )
        .unwrap();
        assert_eq!(
            guessed_releases(&f),
            Some(Guess {
                local: vec![s("a", None)],
                other: vec![s("cm", Some("cm")), s("p", None)]
            })
        );
        for unreadable in [
            "releases:\n  - name: a-{{ .Environment.Name }}\n    chart: ./charts/a\n",
            "bases:\n  - base.yaml\n---\nreleases:\n  - name: a\n    chart: ./charts/a\n",
            "helmfiles:\n  - sub/helmfile.yaml\n",
            "releases:\n  - name: a\n    chart: ./charts/a\n    installed: \"false\"\n",
            "releases:\n  - name: a\n    namespace: [x]\n    chart: ./charts/a\n",
            "releases:\n  - name: a\n",
            "releases: {a: b}\n",
            "releases: [\n",
        ] {
            assert_eq!(guess(unreadable), None, "{unreadable}");
        }
        assert_eq!(guessed_local_releases(&d.path().join("absent.yaml")), None);
    }

    #[test]
    fn parses_build_output_and_lines() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("charts/a")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(
            root.join("helmfile.yaml"),
            "releases:\n  - name: r1\n    chart: ./charts/a\n  - name: cm\n    chart: jetstack/cert-manager\n",
        )
        .unwrap();
        std::fs::write(
            root.join("sub/helmfile.yaml"),
            "releases:\n- name: r1\n  chart: ../charts/a\n",
        )
        .unwrap();
        let out = format!(
            "---\n#  Source: {r}/sub/helmfile.yaml\n\nreleases:\n- chart: ../charts/a\n  name: r1\n  namespace: ns1\n---\n#  Source: {r}/helmfile.yaml\n\nenvironments:\n  default: {{}}\n  prod: {{}}\nrepositories:\n- name: jetstack\n  url: https://charts.jetstack.io\nreleases:\n- chart: ./charts/a\n  name: r1\n  namespace: ns1\n  needs: [x]\n- chart: jetstack/cert-manager\n  version: v1.16.0\n  name: cm\n  namespace: cert-manager\n  installed: false\n",
            r = root.display()
        );
        let docs = parse_build(&out).unwrap();
        assert_eq!(docs.len(), 2);
        let entry = root.join("helmfile.yaml");
        assert_eq!(environment_names(&docs, &entry), vec!["default", "prod"]);
        let st = env_state("prod", &docs, &root, &entry);
        assert_eq!(st.state_files, vec!["helmfile.yaml", "sub/helmfile.yaml"]);
        assert_eq!(st.releases.len(), 3);
        assert_eq!(st.releases[0].line, Some(2));
        assert_eq!(
            st.releases[0].chart_ref,
            ChartRef::Local {
                path: "charts/a".into()
            }
        );
        assert_eq!(
            st.releases[1].chart_ref,
            ChartRef::Repo {
                repo: "jetstack".into(),
                chart: "cert-manager".into(),
                url: Some("https://charts.jetstack.io".into()),
                oci: false
            }
        );
        assert!(!st.releases[1].installed);
        assert_eq!(st.releases[2].file, "sub/helmfile.yaml");
        assert_eq!(st.releases[2].line, Some(2));
        assert_eq!(
            st.releases[2].chart_ref,
            ChartRef::Local {
                path: "charts/a".into()
            }
        );
    }

    #[test]
    fn environment_names_are_what_helmfile_printed() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let entry = root.join("helmfile.yaml");
        // `prod` is hidden from a reading of the text (a column-0 template action inside
        // `environments:`); helmfile printed it, so it is checked.
        std::fs::write(
            &entry,
            "environments:\n  default: {}\n{{ if true }}\n  prod: {}\n{{ end }}\n",
        )
        .unwrap();
        let out = format!(
            "---\n#  Source: {}\n\nenvironments:\n  default: {{}}\n  prod: {{}}\n",
            entry.display()
        );
        let docs = parse_build(&out).unwrap();
        assert_eq!(environment_names(&docs, &entry), vec!["default", "prod"]);
        // The text's order is used only when it names exactly what helmfile printed.
        std::fs::write(&entry, "environments:\n  zeta: {}\n  default: {}\n").unwrap();
        let out = format!(
            "---\n#  Source: {}\n\nenvironments:\n  default: {{}}\n  zeta: {{}}\n",
            entry.display()
        );
        let docs = parse_build(&out).unwrap();
        assert_eq!(environment_names(&docs, &entry), vec!["zeta", "default"]);
    }

    #[test]
    fn build_output_is_read_by_the_yaml_parser_not_split_by_hand() {
        // A state path with a `---` line in it (`sub\n---\nx/helmfile.yaml`): helmfile's Source
        // comment breaks across documents; that is refused, never a dropped state.
        let out = "---\n#  Source: /s/sub\n---\nx/helmfile.yaml\n\nreleases:\n- name: bad\n---\n#  Source: /s/helmfile.yaml\n\nreleases: []\n";
        assert!(parse_build(out).is_err());
        let out = "---\n#  Source: /s/sub\n---\n#  Source: /s/helmfile.yaml\n\nreleases: []\n";
        let e = parse_build(out).unwrap_err().to_string();
        assert!(e.contains("no content"), "{e}");
        let out = "---\nreleases: []\n";
        let e = parse_build(out).unwrap_err().to_string();
        assert!(e.contains("no `#  Source:` line"), "{e}");
        let out = "---\n#  Source: /a\n#  Source: /b\nreleases: []\n";
        let e = parse_build(out).unwrap_err().to_string();
        assert!(e.contains("2 `#  Source:` lines"), "{e}");
        // A value with `---` and `#  Source:` lines inside a block scalar is content, not a boundary.
        let out = "---\n#  Source: /s/helmfile.yaml\n\nreleases:\n- name: a\n  values:\n  - note: |-\n      x\n      ---\n      #  Source: /evil\n";
        let docs = parse_build(out).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].path, PathBuf::from("/s/helmfile.yaml"));
        assert_eq!(
            docs[0].doc["releases"][0]["values"][0]["note"],
            "x\n---\n#  Source: /evil"
        );
    }

    #[test]
    fn local_chart_dependencies_with_what_the_lock_pins() {
        let d = tempfile::tempdir().unwrap();
        let chart = d.path().join("charts/app");
        std::fs::create_dir_all(&chart).unwrap();
        std::fs::write(
            chart.join("Chart.yaml"),
            "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: ~17.0.0\n  repository: https://charts.example.com\n- name: common\n  version: ^2\n  repository: file://../common\n- name: vendored\n  version: 1.0.0\n- name: pg\n  version: 12.1.0\n  repository: oci://registry.example.com/charts\n",
        )
        .unwrap();
        let chart_ref = ChartRef::Local {
            path: "charts/app".into(),
        };
        let deps = chart_dependencies(&chart_ref, d.path());
        let got: Vec<(&str, &str, Option<&str>)> = deps
            .iter()
            .map(|d| (d.name.as_str(), d.version.as_str(), d.locked.as_deref()))
            .collect();
        assert_eq!(got, [("redis", "~17.0.0", None), ("pg", "12.1.0", None)]);
        std::fs::write(
            chart.join("Chart.lock"),
            "dependencies:\n- name: redis\n  repository: https://charts.example.com\n  version: 17.0.4\ndigest: sha256:00\n",
        )
        .unwrap();
        let deps = chart_dependencies(&chart_ref, d.path());
        assert_eq!(deps[0].locked.as_deref(), Some("17.0.4"));
        assert_eq!(deps[0].chart_file, "charts/app/Chart.yaml");
        // A remote chart is not read.
        assert!(chart_dependencies(
            &ChartRef::Oci {
                url: "oci://r/x".into()
            },
            d.path()
        )
        .is_empty());
    }

    #[test]
    fn every_hook_that_runs_is_reported_by_when_it_runs_not_by_its_program() {
        let release = serde_json::json!({"hooks": [
            {"events": ["prepare"], "command": "kubectl", "args": ["apply", "-f", "crds/"]},
            {"events": ["presync", "postsync"], "command": "sh", "args": ["-c", "./migrate.sh && echo ok"]},
            {"events": ["prepare", "cleanup"], "command": "./gen-values.sh"},
            {"events": ["preapply", "cleanup"], "command": "/usr/local/bin/notify"},
            {"events": [], "command": "echo", "args": ["never runs"]},
            {"events": ["presynk"], "command": "echo", "args": ["a typo: never runs"]},
            {"events": ["cleanup"], "command": ""}
        ]});
        let got: Vec<String> = hook_actions(&release).into_iter().map(|(_, r)| r.what).collect();
        assert_eq!(got.len(), 4, "{got:#?}");
        assert!(
            got[0].starts_with(
                "its prepare hook runs `kubectl apply -f crds/` in every helmfile command, this render included"
            ),
            "{}",
            got[0]
        );
        assert!(got[1].starts_with("its presync/postsync hook runs `sh -c ./migrate.sh && echo ok` when helmfile applies, syncs or deletes, never in a render"), "{}", got[1]);
        assert!(
            got[2].starts_with("its prepare/cleanup hook runs `./gen-values.sh` in every helmfile command"),
            "{}",
            got[2]
        );
        // Any event only apply fires makes it an apply-time hook.
        assert!(
            got[3].starts_with("its preapply/cleanup hook runs `/usr/local/bin/notify` when helmfile applies"),
            "{}",
            got[3]
        );
        assert!(got.iter().all(|w| w.contains("waive with the reason it is safe")));
        assert!(hook_actions(&serde_json::json!({"name": "x"})).is_empty());
    }

    #[test]
    fn a_namespace_flag_in_the_args_that_moves_the_release_is_refused() {
        let refused =
            |a: &[&str], ns: &str| namespace_override(&helmfile_args(a.iter().copied()), ns, "helmfile.yaml:2");
        for args in [
            &["--namespace", "b"][..],
            &["--namespace=b"],
            &["-n", "b"],
            &["-n=b"],
            &["-nb"],
            &["--namespace a --set x=1 --namespace b"],
        ] {
            let why = refused(args, "a").unwrap_or_else(|| panic!("{args:?} not refused"));
            assert!(
                why.contains("(helmfile.yaml:2) gives `--namespace b`")
                    && why.contains("not `a`")
                    && why.contains("namespace:"),
                "{why}"
            );
        }
        // The release's own namespace, or no namespace flag: nothing moves.
        for args in [
            &["--namespace", "a"][..],
            &["-na"],
            &["--set", "n=b", "--no-hooks"],
            &[],
        ] {
            assert_eq!(refused(args, "a"), None, "{args:?}");
        }
    }

    #[test]
    fn helmdefaults_args_are_passed_as_helmfile_passes_them() {
        let got = |a: &[&str]| helmfile_args(a.iter().copied());
        assert_eq!(
            got(&[
                "--set",
                "x=from args",
                "--kube-version=1.31.0",
                "--timeout 5m",
                "--api-versions",
                "a/v1",
                "--set=y=2",
                "-f",
                "v.yaml"
            ]),
            [
                "--set",
                "x=from",
                "--set=y=2",
                "--kube-version=1.31.0",
                "--timeout",
                "5m",
                "--api-versions",
                "a/v1",
                "-f",
                "v.yaml"
            ]
        );
        assert_eq!(
            got(&[
                "--set",
                "x=1",
                "--skip-tests",
                "--set",
                "x=2",
                "a-stray",
                "--kube-version",
                "--set=x=3"
            ]),
            [
                "--set",
                "x=1",
                "--set",
                "x=2",
                "--set=x=3",
                "--skip-tests",
                "--kube-version"
            ]
        );
        assert!(got(&[]).is_empty());
        // The state's apiVersions: the release's own, else the state file's.
        let doc = serde_json::json!({"apiVersions": ["s/v1"]});
        assert_eq!(
            state_api_versions(&serde_json::json!({"apiVersions": ["r/v1"]}), &doc),
            ["r/v1"]
        );
        assert_eq!(state_api_versions(&serde_json::json!({}), &doc), ["s/v1"]);
    }

    #[test]
    fn lookup_calls_are_found_where_a_template_calls_them() {
        assert!(calls_lookup(
            r#"{{- $s := lookup "v1" "Secret" .Release.Namespace "x" }}"#
        ));
        assert!(calls_lookup(r#"{{ if (lookup "v1" "Namespace" "" "a") }}"#));
        assert!(!calls_lookup("dnsLookup: true"));
        assert!(!calls_lookup("{{/* no lookup here */}}"));
        assert!(!calls_lookup("{{ .Values.lookupTable }}"));
    }

    /// Each shape that reads the release revision, at its line; the nearby texts that do not.
    #[test]
    fn revision_reads_are_found_by_structure() {
        let reads = |t: &str| reads_revision(t);
        for t in [
            "{{ if gt (int .Release.Revision) 1 }}x{{ end }}",
            "{{ $.Release.Revision }}",
            "{{- with .Release }}{{ .Revision }}{{ end }}",
            "{{ $r := .Release }}",
            "{{ .Release | toJson }}",
            "{{ toYaml $.Release }}",
            "{{ template \"x\" .Release }}",
            "{{ include \"x\" $ctx.Release }}",
            "{{ index .Release \"Revision\" }}",
            "{{ index . `Release` }}",
            "{{ (.Release).Revision }}",
            "{{.Release}}",
            "{{ $r.Revision }}",
        ] {
            assert_eq!(reads(t), [1], "{t}");
        }
        for t in [
            "{{ .Release.Name }}-{{ .Release.Namespace }} {{ $.Release.Service }}",
            "{{ .Release.IsUpgrade }}",
            "{{/* .Release.Revision */}}",
            "{{- /* .Release\n .Release.Revision */ -}}",
            "Revision: 3 .Release.Revision \"Release\"",
            "{{ .Values.image.Revision }} {{ $.Values.Release }} {{ .Chart.Release }}",
            "{{ \"}} .Release.Revision\" }}",
            "{{ .ReleaseNotes }} {{ .Revisions }} {{ \"Revisions\" }}",
            "{{ printf \"%s\" 'R' }}",
        ] {
            assert!(reads(t).is_empty(), "{t}: {:?}", reads(t));
        }
        // The line of each read, once per line; an action over several lines; an unterminated one.
        let text = "a: {{ .Release.Name }}\nb: {{ .Release.Revision }} {{ .Release.Revision }}\nc: {{\n  .Release\n}}\n{{ \"é\" }} {{ $.Release";
        assert_eq!(reads(text), [2, 4, 6]);
        assert!(reads("{{ \"unterminated").is_empty());
    }

    /// Values (and `set:` strings) with template text reading the revision are one read at the
    /// release; values too deep to read count as reading it; plain values and the name do not.
    #[test]
    fn values_holding_template_text_that_reads_the_revision_are_a_read() {
        let set = |v: &str| vec![("a.b".to_string(), Value::String(v.into()))];
        let reads = |values: Value, set: &[(String, Value)]| values_revision_read(&values, set).map(|r| r.what);
        use serde_json::json;
        assert!(reads(json!({"tag": "{{ .Release.Revision }}"}), &[])
            .is_some_and(|w| w.starts_with("a value holds template text")));
        assert!(reads(json!({"l": [{"{{ $.Release }}": 1}]}), &[]).is_some());
        assert!(reads(Value::Null, &set("{{ index .Release \"Revision\" }}")).is_some());
        assert_eq!(
            reads(
                json!({"tag": ".Release.Revision", "n": "{{ .Release.Name }}"}),
                &set("1")
            ),
            None
        );
        let mut deep = json!("x");
        for _ in 0..70 {
            deep = json!([deep]);
        }
        assert!(reads(deep, &[]).is_some_and(|w| w.contains("were not read")));
    }

    /// A chart's templates are read, subcharts included, not its notes or other files.
    #[test]
    fn revision_reads_name_the_template_and_line() {
        let d = tempfile::tempdir().unwrap();
        let write = |p: &str, t: &str| {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        };
        write("c/Chart.yaml", "name: c\n");
        write("c/values.yaml", "x: \"{{ .Release.Revision }}\"\n");
        write(
            "c/templates/a.yaml",
            "kind: ConfigMap\ndata:\n  r: {{ .Release.Revision | quote }}\n",
        );
        write("c/templates/NOTES.txt", "revision {{ .Release.Revision }}\n");
        write("c/charts/s/templates/b.yaml", "\n{{ $r := .Release }}\n");
        write(
            "c/templates/big.yaml",
            &" ".repeat(chart_files::LIMITS.file_bytes as usize + 1),
        );
        let chart = ChartRef::Local { path: "c".into() };
        let mut got: Vec<(Option<String>, Option<usize>, String)> = revision_reads(&chart, d.path())
            .into_iter()
            .map(|r| (r.file, r.line, r.what))
            .collect();
        let unread = got.pop().unwrap();
        assert_eq!(
            got,
            [
                (
                    Some("c/charts/s/templates/b.yaml".into()),
                    Some(2),
                    REVISION_READ.to_string()
                ),
                (Some("c/templates/a.yaml".into()), Some(3), REVISION_READ.to_string()),
            ]
        );
        // A file larger than helm reads stops the reading: a read of its own, at the chart.
        assert_eq!((unread.0.as_deref(), unread.1), (Some("c"), None));
        assert!(
            unread.2.contains("templates/big.yaml")
                && unread
                    .2
                    .ends_with("not read to its end for reads of the release revision"),
            "{}",
            unread.2
        );
        let remote = ChartRef::Oci {
            url: "oci://r.example.com/c".into(),
        };
        assert!(revision_reads(&remote, d.path()).is_empty());
    }

    /// A read of the revision inside a vendored subchart archive (what `helm dependency build`
    /// writes, and helm renders) is found and placed at the archive, naming the template and line;
    /// the same archive reading only the release name is not a read.
    #[test]
    fn a_revision_read_in_a_vendored_subchart_archive_is_placed_at_the_archive() {
        let tgz = |template: &str| {
            chart_files::tests::tgz(&[
                ("sub/Chart.yaml", b"apiVersion: v2\nname: sub\nversion: 1.0.0\n"),
                ("sub/templates/cm.yaml", template.as_bytes()),
            ])
        };
        let d = tempfile::tempdir().unwrap();
        let chart = d.path().join("c");
        std::fs::create_dir_all(chart.join("charts")).unwrap();
        std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: c\nversion: 0.1.0\n").unwrap();
        let reads = |template: &str| {
            std::fs::write(chart.join("charts/sub-1.0.0.tgz"), tgz(template)).unwrap();
            revision_reads(&ChartRef::Local { path: "c".into() }, d.path())
        };
        let r = reads("kind: ConfigMap\ndata:\n  r: {{ .Release.Revision | quote }}\n");
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(
            (r[0].file.as_deref(), r[0].line),
            (Some("c/charts/sub-1.0.0.tgz"), None)
        );
        assert!(
            r[0].what.starts_with("the template templates/cm.yaml line 3 of the chart archive charts/sub-1.0.0.tgz reads the release revision"),
            "{}",
            r[0].what
        );
        assert!(reads("kind: ConfigMap\ndata:\n  r: {{ .Release.Name | quote }}\n").is_empty());
    }

    /// A `lookup` in a directory is placed at its file and line; one inside a vendored archive
    /// (nested ones too) at the outermost archive, the file there is; a chart not read to its end
    /// is a read of its own.
    #[test]
    fn cluster_reads_place_a_call_at_the_file_on_disk() {
        assert_eq!(archive_of("charts/a/templates/x.yaml", false), None);
        assert_eq!(
            archive_of("charts/a/charts/b-1.0.0.tgz/charts/c.tgz/templates/x.yaml", false),
            Some(("charts/a/charts/b-1.0.0.tgz", "charts/c.tgz/templates/x.yaml"))
        );
        assert_eq!(archive_of("templates/x.yaml", true), Some(("", "templates/x.yaml")));
        let d = tempfile::tempdir().unwrap();
        let chart = d.path().join("charts/app");
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::create_dir_all(chart.join("charts")).unwrap();
        std::fs::write(
            chart.join("templates/a.yaml"),
            "x: 1\n{{ lookup \"v1\" \"Secret\" \"\" \"\" }}\n",
        )
        .unwrap();
        std::fs::write(chart.join("charts/sub-1.0.0.tgz"), "not gzip").unwrap();
        let reads = cluster_reads(
            &ChartRef::Local {
                path: "charts/app".into(),
            },
            d.path(),
            None,
        );
        let places: Vec<(Option<&str>, Option<usize>, &str)> = reads
            .iter()
            .map(|r| (r.file.as_deref(), r.line, r.what.as_str()))
            .collect();
        assert_eq!(
            places,
            [(
                Some("charts/app"),
                None,
                "`charts/sub-1.0.0.tgz` is not a gzip-compressed tar archive, not read to its end for `lookup`"
            ),],
            "sorted: charts/ before templates/, where the reading stopped"
        );
        std::fs::remove_file(chart.join("charts/sub-1.0.0.tgz")).unwrap();
        let reads = cluster_reads(
            &ChartRef::Local {
                path: "charts/app".into(),
            },
            d.path(),
            None,
        );
        assert_eq!(reads.len(), 1, "{reads:?}");
        assert_eq!(
            (reads[0].file.as_deref(), reads[0].line, reads[0].what.as_str()),
            (Some("charts/app/templates/a.yaml"), Some(2), "lookup")
        );
    }

    #[test]
    fn exclusion_selectors_leave_out_exactly_the_refused_releases() {
        use crate::stack::failure::RefusalKind;
        let r = |name: &str, ns: Option<&str>| Refusal {
            name: name.into(),
            namespace: ns.map(str::to_string),
            file: None,
            kind: RefusalKind::Duplicate,
            message: String::new(),
        };
        assert!(exclusion(&[]).is_empty());
        assert_eq!(
            exclusion(&[r("b", Some("x")), r("a", Some("y")), r("a", Some("z"))]),
            vec![
                "name!=a,name!=b",
                "name=a,namespace!=y,namespace!=z",
                "name=b,namespace!=x"
            ]
        );
        // Without a namespace helmfile's selectors cannot keep the others of that name.
        assert_eq!(exclusion(&[r("a", Some("")), r("c", None)]), vec!["name!=a,name!=c"]);
    }

    #[test]
    fn values_merge_deeply_in_order() {
        let list = serde_json::json!([{"a": {"x": 1, "y": 2}, "b": 1}, "file.yaml", {"a": {"y": 3}, "c": [1]}]);
        assert_eq!(
            merged_values(Some(&list)),
            serde_json::json!({"a": {"x": 1, "y": 3}, "b": 1, "c": [1]})
        );
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative(Path::new("/a/b/c"), Path::new("/a")), "b/c");
        assert_eq!(relative(Path::new("/x/c"), Path::new("/a/b")), "../../x/c");
    }

    /// Flow-style releases are found at their line like block style: a flow sequence over several
    /// lines (quotes, nested lists, a `{{ }}` action and a comment inside), `- {…}` items, and a
    /// hook written as a flow mapping.
    #[test]
    fn flow_style_releases_and_hooks_have_their_lines() {
        let src = "repositories: [{name: r, url: 'https://x.example.com/a,b'}]\nreleases: [{name: a, chart: ./c},\n                     {name: \"b\", chart: '{x}', needs: [a, \"c\"]}, # a comment, {name: no}\n\n  {name: c, version:                    {{ .Values.v }},\n   hooks: [{events: [prepare, cleanup], command: kubectl, args: [apply]}]}]\n\
                   environments:\n  default: {}\n";
        assert_eq!(release_line(src, "a", 0), Some(2));
        assert_eq!(release_line(src, "b", 0), Some(3));
        assert_eq!(release_line(src, "c", 0), Some(5));
        assert_eq!(release_line(src, "no", 0), None);
        assert_eq!(release_at(src, 6), Some(("c".to_string(), 5)));
        assert_eq!(release_at(src, 7), None);
        assert_eq!(
            hook_command_at(src, "kubectl"),
            Some((6, vec!["prepare".to_string(), "cleanup".to_string()]))
        );
        let items = block_items(src, "releases");
        assert_eq!(
            items[1].lists.get("needs"),
            Some(&vec!["a".to_string(), "c".to_string()])
        );
        let dashed = "releases:\n- {name: a, chart: ./c}\n- {name: b,\n   chart: ./c, hooks: [{command: /usr/bin/x}]}\n- name: c\n                        chart: ./c\n";
        assert_eq!(release_line(dashed, "a", 0), Some(2));
        assert_eq!(release_line(dashed, "b", 0), Some(3));
        assert_eq!(release_line(dashed, "c", 0), Some(5));
        assert_eq!(release_at(dashed, 4), Some(("b".to_string(), 3)));
        assert_eq!(hook_command_at(dashed, "x"), Some((4, vec![])));
    }
}

/// One item of a top-level block list (`releases:`, `repositories:`, `helmfiles:`): its scalar
/// keys and its string lists, with the item's line.
#[derive(Debug, Default)]
struct Item {
    line: usize,
    scalars: HashMap<String, String>,
    lists: HashMap<String, Vec<String>>,
    /// For `helmfiles: - path.yaml` short items.
    bare: Option<String>,
}

fn unquote(s: &str) -> String {
    let s = s.split(" #").next().unwrap_or(s).trim();
    s.trim_matches(|c| c == '"' || c == '\'').to_string()
}

/// Read the items of top-level `key:` written in block style. Only plain scalars and lists of
/// scalars are understood: this finds the line of a release declaration (`release_line`) for
/// locations in findings, nothing else.
fn block_items(text: &str, key: &str) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    let mut inside = false;
    let mut item_indent: Option<usize> = None;
    let mut open_list: Option<(String, usize)> = None;
    // A flow collection read whole (`flow_items`): its lines are not read again.
    let mut skip_to = 0usize;
    let mut offset = 0usize;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end();
        if start < skip_to || line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        // Where `rest`, a suffix of `line`, starts in `text`.
        let at = |rest: &str| start + line.len() - rest.len();
        if indent == 0 && !line.starts_with('-') {
            inside = line.starts_with(&format!("{key}:"));
            item_indent = None;
            open_list = None;
            let rest = line.get(key.len() + 1..).unwrap_or("").trim_start();
            if inside && rest.starts_with('[') {
                // `releases: [{name: a, chart: ./c}, …]`
                let (flow, end) = flow_items(text, at(rest));
                items.extend(flow);
                skip_to = end;
                inside = false;
            }
            continue;
        }
        if !inside {
            continue;
        }
        let t = line.trim_start();
        if item_indent.is_none() && t.starts_with('[') {
            let (flow, end) = flow_items(text, at(t));
            items.extend(flow);
            skip_to = end;
            inside = false;
            continue;
        }
        if let Some(rest) = t.strip_prefix("- ").or(if t == "-" { Some("") } else { None }) {
            if item_indent.is_none_or(|ii| ii == indent) {
                item_indent = Some(indent);
                open_list = None;
                let rest = rest.trim_start();
                if rest.starts_with('{') && !rest.starts_with("{{") {
                    // `- {name: a, chart: ./c}`, on one line or more.
                    let (it, end) = flow_mapping(text, at(rest));
                    items.push(it);
                    skip_to = end;
                    continue;
                }
                let mut it = Item {
                    line: i + 1,
                    ..Item::default()
                };
                match rest.split_once(':') {
                    Some((k, v)) if !k.contains(' ') && !rest.starts_with('{') => {
                        it.scalars.insert(k.trim().to_string(), unquote(v));
                    }
                    _ if !rest.is_empty() => it.bare = Some(unquote(rest)),
                    _ => {}
                }
                items.push(it);
                continue;
            }
            if let (Some((list, li)), Some(it)) = (&open_list, items.last_mut()) {
                if indent >= *li {
                    it.lists.entry(list.clone()).or_default().push(unquote(rest));
                }
            }
            continue;
        }
        let Some(it) = items.last_mut() else { continue };
        if item_indent.is_some_and(|ii| indent == ii + 2) {
            if let Some((k, v)) = t.split_once(':') {
                let v = v.trim();
                if v.is_empty() {
                    open_list = Some((k.trim().to_string(), indent));
                } else if v.starts_with('[') {
                    let inner = v.trim_start_matches('[').split(']').next().unwrap_or("");
                    it.lists.insert(
                        k.trim().to_string(),
                        inner.split(',').map(unquote).filter(|s| !s.is_empty()).collect(),
                    );
                    open_list = None;
                } else {
                    it.scalars.insert(k.trim().to_string(), unquote(v));
                    open_list = None;
                }
            }
        }
    }
    items
}

/// Where what starts at byte `i` of `text` ends, when it cannot hold a flow indicator: a quoted
/// scalar or a `{{ … }}` template action; `i` itself when neither starts there.
fn flow_skip(text: &str, i: usize) -> usize {
    let b = text.as_bytes();
    match b[i] {
        q @ (b'\'' | b'"') => {
            let mut j = i + 1;
            while j < b.len() {
                if q == b'"' && b[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if b[j] == q {
                    if q == b'\'' && b.get(j + 1) == Some(&b'\'') {
                        j += 2;
                        continue;
                    }
                    return j + 1;
                }
                j += 1;
            }
            b.len()
        }
        b'{' if b.get(i + 1) == Some(&b'{') => text[i..].find("}}").map_or(b.len(), |e| i + e + 2),
        _ => i,
    }
}

/// The parts of the flow collection whose opening bracket is at byte `at` of `text`, split at its
/// own commas: (byte offset of the part's first non-blank character, the part trimmed), and the
/// byte after its closing bracket. Quotes, nested collections, comments and `{{ … }}` template
/// actions are kept whole.
fn flow_parts(text: &str, at: usize) -> (Vec<(usize, &str)>, usize) {
    let b = text.as_bytes();
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut from = at + 1;
    let mut i = at;
    while i < b.len() {
        let skipped = flow_skip(text, i);
        if skipped != i {
            i = skipped;
            continue;
        }
        match b[i] {
            b'#' if i > at && b[i - 1].is_ascii_whitespace() => {
                let blank = text[from..i].trim().is_empty();
                i = text[i..].find('\n').map_or(b.len(), |e| i + e);
                if blank {
                    // A comment before the part, not in it.
                    from = i;
                }
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' | b',' if depth == 1 => {
                let part = &text[from..i];
                let lead = part.len() - part.trim_start().len();
                if !part.trim().is_empty() {
                    parts.push((from + lead, part.trim()));
                }
                from = i + 1;
                if b[i] != b',' {
                    return (parts, i + 1);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    (parts, b.len())
}

/// The item of a flow mapping (`{name: a, chart: ./c, needs: [b]}`) whose `{` is at byte `at` of
/// `text`, at the line of its `{`, and the byte after its `}`.
fn flow_mapping(text: &str, at: usize) -> (Item, usize) {
    let mut it = Item {
        line: text[..at].matches('\n').count() + 1,
        ..Item::default()
    };
    let (parts, end) = flow_parts(text, at);
    for (off, part) in parts {
        let Some((k, v)) = part.split_once(':') else { continue };
        let v = v.trim();
        if v.starts_with('[') {
            let (list, _) = flow_parts(text, off + part.len() - v.len());
            it.lists
                .insert(unquote(k), list.into_iter().map(|(_, s)| unquote(s)).collect());
        } else if !v.starts_with('{') {
            it.scalars.insert(unquote(k), unquote(v));
        }
    }
    (it, end)
}

/// The items of a flow sequence (`releases: [{name: a}, {name: b}]`, over any number of lines)
/// whose `[` is at byte `at` of `text`, each at the line it starts on, and the byte after its `]`.
fn flow_items(text: &str, at: usize) -> (Vec<Item>, usize) {
    let (parts, end) = flow_parts(text, at);
    let items = parts
        .into_iter()
        .map(|(off, part)| match part.starts_with('{') && !part.starts_with("{{") {
            true => flow_mapping(text, off).0,
            false => Item {
                line: text[..off].matches('\n').count() + 1,
                bare: Some(unquote(part)),
                ..Item::default()
            },
        })
        .collect();
    (items, end)
}

/// Look a dotted path (`certManager.enabled`) up in a state's rendered environment values.
pub fn condition_holds(values: &Value, condition: &str) -> Option<bool> {
    let mut v = values;
    for part in condition.split('.') {
        v = v.get(part)?;
    }
    v.as_bool()
}
