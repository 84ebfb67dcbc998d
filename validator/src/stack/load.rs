//! Building the state model from the real `helmfile build` output.
//!
//! `helmfile build` prints every state file it loaded (`helmfiles:` included) as one YAML
//! document preceded by a `#  Source: /abs/path` comment. We read releases, repositories and
//! environments from there (helmfile has already resolved environments and templating), and find
//! the line of each release declaration in the source file so findings point at it.

use super::{ChartRef, EnvState, Release, Repository};
use crate::tools::{run, Tools};
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// One state document of `helmfile build` output.
#[derive(Debug, Clone)]
pub struct StateDoc {
    /// Absolute path of the state file.
    pub path: PathBuf,
    pub doc: Value,
}

/// Run `helmfile build` for an environment and split its output into state documents.
pub fn build(tools: &Tools, entry: &Path, environment: &str, exclude: &[String]) -> Result<Vec<StateDoc>> {
    let mut cmd = tools.helmfile(entry, environment);
    if let Some(sel) = exclude_selector(exclude) {
        cmd.arg("--selector").arg(sel).arg("--allow-no-matching-release");
    }
    cmd.arg("build").arg("--embed-values");
    let out = run(
        &mut cmd,
        &format!("helmfile build of {} (environment {environment})", entry.display()),
    )?;
    parse_build(&String::from_utf8_lossy(&out.stdout)).with_context(|| {
        format!(
            "reading `helmfile build` output for {} (environment {environment})",
            entry.display()
        )
    })
}

/// A helmfile selector leaving out releases by name (`name!=a,name!=b`: conditions within one
/// selector are ANDed).
pub fn exclude_selector(names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let mut v: Vec<String> = names.iter().map(|n| format!("name!={n}")).collect();
    v.sort();
    v.dedup();
    Some(v.join(","))
}

pub fn parse_build(text: &str) -> Result<Vec<StateDoc>> {
    let mut docs = Vec::new();
    for chunk in text.split("\n---\n").flat_map(|c| c.strip_prefix("---\n").or(Some(c))) {
        let source = chunk.lines().find_map(|l| {
            l.trim_start_matches('#')
                .trim()
                .strip_prefix("Source:")
                .map(|s| s.trim().to_string())
        });
        let Some(source) = source else { continue };
        let doc = crate::yaml::value(chunk).with_context(|| format!("state document of {source}"))?;
        docs.push(StateDoc {
            path: PathBuf::from(source),
            doc,
        });
    }
    Ok(docs)
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

/// The environments of an entry state that declares them plainly: an `environments:` block with
/// literal names, no `bases:` and no templating in the names. `None` when helmfile must be asked.
pub fn plain_environment_names(entry: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(entry).ok()?;
    if text.lines().any(|l| l.starts_with("bases:")) {
        return None;
    }
    let names = declared_keys(&text, "environments");
    let plain = |n: &String| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    };
    (!names.is_empty() && names.iter().all(plain)).then_some(names)
}

/// Keys of a top-level block map `key:` at its first indentation level.
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
                skip_tls_verify: truthy(r.get("skipTLSVerify")) || truthy(r.get("insecure_skip_tls_verify")),
            });
        }
        let defaults = d.doc.get("helmDefaults");
        let defaults_line = source
            .lines()
            .position(|l| l.starts_with("helmDefaults:"))
            .map(|i| i + 1);
        for r in d.doc.get("releases").and_then(Value::as_array).into_iter().flatten() {
            let name = str_of(r, "name");
            let declared_ns = r
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .or_else(|| {
                    defaults
                        .and_then(|h| h.get("namespace"))
                        .and_then(Value::as_str)
                        .filter(|n| !n.is_empty())
                        .map(str::to_string)
                });
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
            let set = r
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
                values: merged_values(r.get("values")),
                set,
                file: rel.clone(),
                line,
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

/// Add releases that were left out of helmfile's view (see `scan_releases`: OCI charts we keep
/// helmfile away from, releases a false `condition:` hides) to a state, in declaration order.
pub fn add_scanned(state: &mut EnvState, scanned: &[ScannedRelease], docs: &[StateDoc], root: &Path) {
    let root_abs = absolute(root);
    for s in scanned {
        let rel = relative(&s.file, &root_abs);
        // Only state files helmfile loaded for this environment, and only what plain YAML
        // reading can know (no template expressions).
        if !state.state_files.contains(&rel)
            || s.name.contains("{{")
            || s.namespace.as_deref().is_some_and(|n| n.contains("{{"))
        {
            continue;
        }
        let doc = docs.iter().find(|d| d.path == s.file);
        let values = doc.and_then(|d| d.doc.get("renderedvalues")).unwrap_or(&Value::Null);
        let declared = s.namespace.clone().or_else(|| {
            doc.and_then(|d| d.doc.get("helmDefaults"))
                .and_then(|h| h.get("namespace"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        let unset = declared.is_none();
        let namespace = declared.unwrap_or_else(|| "default".into());
        if state
            .releases
            .iter()
            .any(|r| r.name == s.name && r.namespace == namespace && r.file == rel)
        {
            continue;
        }
        let repos: Vec<Repository> = state.repositories.iter().filter(|r| r.file == rel).cloned().collect();
        let dir = s.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let installed = s.installed.unwrap_or(true)
            && s.condition
                .as_deref()
                .is_none_or(|c| condition_holds(values, c) != Some(false));
        state.releases.push(Release {
            name: s.name.clone(),
            namespace,
            chart: s.chart.clone(),
            chart_ref: classify_chart(&s.chart, &dir, &root_abs, &repos),
            version: s.version.clone(),
            devel: s
                .devel
                .unwrap_or_else(|| truthy(doc.and_then(|d| d.doc.get("helmDefaults")).and_then(|h| h.get("devel")))),
            insecure_tls: None,
            devel_from_defaults: s.devel.is_none()
                && truthy(doc.and_then(|d| d.doc.get("helmDefaults")).and_then(|h| h.get("devel"))),
            helm_defaults_line: None,
            namespace_unset: unset,
            installed,
            needs: s.needs.clone(),
            declared_values: Vec::new(),
            values: Value::Null,
            set: Vec::new(),
            file: rel,
            line: Some(s.line),
        });
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

pub fn absolute(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    abs.canonicalize().unwrap_or_else(|_| normalize(&abs))
}

/// Lexical normalisation (`a/./b/../c` → `a/c`) without touching the file system.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` relative to `root` (with `..` segments when outside), using `/` separators.
pub fn relative(path: &Path, root: &Path) -> String {
    let path = normalize(path);
    let root = normalize(root);
    let pc: Vec<_> = path.components().collect();
    let rc: Vec<_> = root.components().collect();
    let common = pc.iter().zip(rc.iter()).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), rc.len() - common).collect();
    parts.extend(
        pc[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn plain_environment_names_or_ask_helmfile() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("helmfile.yaml");
        std::fs::write(
            &f,
            "# c\nenvironments:\n  default:\n    values: [a.yaml]\n  split-cluster: {}\n---\nreleases: []\n",
        )
        .unwrap();
        assert_eq!(
            plain_environment_names(&f),
            Some(vec!["default".to_string(), "split-cluster".to_string()])
        );
        std::fs::write(&f, "bases: [envs.yaml]\nreleases: []\n").unwrap();
        assert_eq!(plain_environment_names(&f), None);
        std::fs::write(&f, "environments:\n  {{ .Values.x }}: {}\n").unwrap();
        assert_eq!(plain_environment_names(&f), None);
        std::fs::write(&f, "releases: []\n").unwrap();
        assert_eq!(plain_environment_names(&f), None);
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
}

/// A release found by reading a state file's text rather than through helmfile. helmfile is the
/// authority (the helm front lets it load every release offline); the text is only read for
/// releases helmfile refuses to load (so the rules can say why), to name the release in a load
/// error, and to start `helmfile template` early.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScannedRelease {
    pub oci: bool,
    pub devel: Option<bool>,
    pub name: String,
    pub namespace: Option<String>,
    pub chart: String,
    pub version: Option<String>,
    pub condition: Option<String>,
    pub installed: Option<bool>,
    pub needs: Vec<String>,
    /// Absolute path of the state file and the line of `- name:`.
    pub file: PathBuf,
    pub line: usize,
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
/// scalars are understood; that is all the OCI pre-scan needs.
fn block_items(text: &str, key: &str) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    let mut inside = false;
    let mut item_indent: Option<usize> = None;
    let mut open_list: Option<(String, usize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent == 0 && !line.starts_with('-') {
            inside = line.starts_with(&format!("{key}:"));
            item_indent = None;
            open_list = None;
            continue;
        }
        if !inside {
            continue;
        }
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("- ").or(if t == "-" { Some("") } else { None }) {
            if item_indent.is_none_or(|ii| ii == indent) {
                item_indent = Some(indent);
                open_list = None;
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

/// Every release declared in the state files' text (entry and `helmfiles:`), as far as plain
/// YAML reading can tell. helmfile stays the authority; this fills in what it does not print
/// (releases it pulls while loading, and releases a selector or a false condition hides).
pub fn scan_releases(entry: &Path) -> Vec<ScannedRelease> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let entry = absolute(entry);
    let mut queue = if entry.is_dir() {
        let mut v = super::loader::state_files_in(&entry);
        v.reverse();
        v
    } else {
        vec![entry]
    };
    while let Some(file) = queue.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        for h in block_items(&text, "helmfiles") {
            if let Some(p) = h.scalars.get("path").or(h.bare.as_ref()) {
                if !p.contains("{{") && !p.contains("://") {
                    queue.push(absolute(&dir.join(p)));
                }
            }
        }
        let oci_repos: Vec<String> = block_items(&text, "repositories")
            .into_iter()
            .filter(|r| {
                r.scalars.get("oci").is_some_and(|v| v == "true")
                    || r.scalars.get("url").is_some_and(|u| u.starts_with("oci://"))
            })
            .filter_map(|r| r.scalars.get("name").cloned())
            .collect();
        for r in block_items(&text, "releases") {
            let (Some(name), Some(chart)) = (r.scalars.get("name"), r.scalars.get("chart")) else {
                continue;
            };
            let oci = chart.starts_with("oci://")
                || chart
                    .split_once('/')
                    .is_some_and(|(repo, _)| oci_repos.iter().any(|o| o == repo));
            out.push(ScannedRelease {
                oci,
                devel: r.scalars.get("devel").map(|v| v == "true"),
                name: name.clone(),
                namespace: r.scalars.get("namespace").cloned(),
                chart: chart.clone(),
                version: r.scalars.get("version").cloned(),
                condition: r.scalars.get("condition").cloned(),
                installed: r.scalars.get("installed").map(|v| v != "false"),
                needs: r.lists.get("needs").cloned().unwrap_or_default(),
                file: file.clone(),
                line: r.line,
            });
        }
    }
    out
}

/// Look a dotted path (`certManager.enabled`) up in a state's rendered environment values.
pub fn condition_holds(values: &Value, condition: &str) -> Option<bool> {
    let mut v = values;
    for part in condition.split('.') {
        v = v.get(part)?;
    }
    v.as_bool()
}

#[cfg(test)]
mod scan_tests {
    use super::*;

    #[test]
    fn scans_oci_releases_across_helmfiles() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(
            root.join("helmfile.yaml"),
            "repositories:\n  - name: jetstack\n    url: quay.io/jetstack/charts\n    oci: true\n  - name: bao\n    url: https://x\nhelmfiles:\n  - path: sub/h.yaml\nreleases:\n  - name: cert-manager\n    namespace: cert-manager\n    chart: jetstack/cert-manager\n    version: v1.19.1 # pinned\n    condition: certManager.enabled\n    needs:\n      - a/b\n  - name: openbao\n    chart: bao/openbao\n",
        )
        .unwrap();
        std::fs::write(
            root.join("sub/h.yaml"),
            "releases:\n- name: direct\n  chart: \"oci://r.example/c/direct\"\n  needs: [x, y]\n",
        )
        .unwrap();
        let mut s: Vec<_> = scan_releases(&root.join("helmfile.yaml"))
            .into_iter()
            .filter(|r| r.oci)
            .collect();
        s.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].name, "cert-manager");
        assert_eq!(s[0].version.as_deref(), Some("v1.19.1"));
        assert_eq!(s[0].condition.as_deref(), Some("certManager.enabled"));
        assert_eq!(s[0].needs, vec!["a/b"]);
        assert_eq!(s[0].line, 10);
        assert_eq!(s[1].name, "direct");
        assert_eq!(s[1].needs, vec!["x", "y"]);
    }
}
