//! Building the state model from the real `helmfile build` output.
//!
//! `helmfile build` prints every state file it loaded (`helmfiles:` included) as one YAML
//! document preceded by a `#  Source: /abs/path` comment. We read releases, repositories and
//! environments from there (helmfile has already resolved environments and templating), and find
//! the line of each release declaration in the source file so findings point at it.

use super::{ChartRef, EnvState, Release, Repository};
use crate::render::tools::{run, Tools};
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
pub fn build(tools: &Tools, entry: &Path, environment: &str) -> Result<Vec<StateDoc>> {
    let mut cmd = tools.helmfile(entry, environment);
    cmd.arg("build");
    let out = run(&mut cmd, &format!("helmfile build of {} (environment {environment})", entry.display()))?;
    parse_build(&String::from_utf8_lossy(&out.stdout))
        .with_context(|| format!("reading `helmfile build` output for {} (environment {environment})", entry.display()))
}

pub fn parse_build(text: &str) -> Result<Vec<StateDoc>> {
    let mut docs = Vec::new();
    for chunk in text.split("\n---\n").flat_map(|c| c.strip_prefix("---\n").or(Some(c))) {
        let source = chunk
            .lines()
            .find_map(|l| l.trim_start_matches('#').trim().strip_prefix("Source:").map(|s| s.trim().to_string()));
        let Some(source) = source else { continue };
        let doc = crate::yaml::value(chunk).with_context(|| format!("state document of {source}"))?;
        docs.push(StateDoc { path: PathBuf::from(source), doc });
    }
    Ok(docs)
}

/// Environment names declared by the entry state (the last build document is the entry: helmfile
/// prints sub-states first). A state without `environments:` has just `default`.
pub fn environment_names(docs: &[StateDoc], entry: &Path) -> Vec<String> {
    let entry_abs = absolute(entry);
    let doc = docs.iter().find(|d| d.path == entry_abs).or(docs.last());
    let mut names: Vec<String> = doc
        .and_then(|d| d.doc.get("environments"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if names.is_empty() {
        names.push("default".into());
    }
    names
}

/// Turn build documents into the environment's state. `root` is the directory of the entry state.
pub fn env_state(environment: &str, docs: &[StateDoc], root: &Path, entry: &Path) -> EnvState {
    let root_abs = absolute(root);
    let entry_abs = absolute(entry);
    let mut state = EnvState { name: environment.to_string(), ..EnvState::default() };
    // Entry first, then the sub-states in the order helmfile printed them.
    let mut ordered: Vec<&StateDoc> = docs.iter().filter(|d| d.path == entry_abs).collect();
    ordered.extend(docs.iter().filter(|d| d.path != entry_abs));
    let mut line_cursor: HashMap<(PathBuf, String), usize> = HashMap::new();
    for d in ordered {
        let rel = relative(&d.path, &root_abs);
        if !state.state_files.contains(&rel) {
            state.state_files.push(rel.clone());
        }
        let state_dir = d.path.parent().map(Path::to_path_buf).unwrap_or_else(|| root_abs.clone());
        let source = std::fs::read_to_string(&d.path).unwrap_or_default();
        let mut repos = Vec::new();
        for r in d.doc.get("repositories").and_then(Value::as_array).into_iter().flatten() {
            let name = r.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let url = r.get("url").and_then(Value::as_str).unwrap_or_default().to_string();
            let oci = r.get("oci").and_then(Value::as_bool).unwrap_or(false) || url.starts_with("oci://");
            repos.push(Repository { name, url, oci, file: rel.clone() });
        }
        for r in d.doc.get("releases").and_then(Value::as_array).into_iter().flatten() {
            let name = str_of(r, "name");
            let namespace = r
                .get("namespace")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| d.doc.get("helmDefaults").and_then(|h| h.get("namespace")).and_then(Value::as_str).map(str::to_string))
                .unwrap_or_else(|| "default".to_string());
            let chart = str_of(r, "chart");
            let chart_ref = classify_chart(&chart, &state_dir, &root_abs, &repos);
            let key = (d.path.clone(), name.clone());
            let nth = line_cursor.entry(key).or_insert(0);
            let line = release_line(&source, &name, *nth);
            *nth += 1;
            let installed = match r.get("installed") {
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) => s != "false",
                _ => true,
            };
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
                        .filter_map(|e| Some((e.get("name")?.as_str()?.to_string(), e.get("value").cloned().unwrap_or(Value::Null))))
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
                devel: r.get("devel").and_then(Value::as_bool).unwrap_or(false),
                installed,
                needs,
                declared_values: r.get("values").and_then(Value::as_array).cloned().unwrap_or_default(),
                values: Value::Null,
                set,
                file: rel.clone(),
                line,
            });
        }
        state.repositories.extend(repos);
    }
    state
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Classify a chart reference. Local paths become repository-relative (normalised).
pub fn classify_chart(chart: &str, state_dir: &Path, root: &Path, repos: &[Repository]) -> ChartRef {
    if let Some(rest) = chart.strip_prefix("oci://") {
        return ChartRef::Oci { url: format!("oci://{rest}") };
    }
    if chart.contains("://") || chart.ends_with(".tgz") {
        return ChartRef::Other { raw: chart.to_string() };
    }
    let looks_local = chart.starts_with("./") || chart.starts_with("../") || chart.starts_with('/') || state_dir.join(chart).is_dir();
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
    ChartRef::Local { path: relative(&abs, root) }
}

/// The line of the `nth` declaration `name: <release>` in a state file's source (1-based).
pub fn release_line(source: &str, release: &str, nth: usize) -> Option<usize> {
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start().trim_start_matches('-').trim_start();
            t.strip_prefix("name:")
                .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\'') == release)
                .unwrap_or(false)
        })
        .nth(nth)
        .map(|(i, _)| i + 1)
}

pub fn absolute(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().map(|d| d.join(p)).unwrap_or_else(|_| p.to_path_buf()) };
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
    let mut parts: Vec<String> = std::iter::repeat("..".to_string()).take(rc.len() - common).collect();
    parts.extend(pc[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
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
        std::fs::write(root.join("helmfile.yaml"), "releases:\n  - name: r1\n    chart: ./charts/a\n  - name: cm\n    chart: jetstack/cert-manager\n").unwrap();
        std::fs::write(root.join("sub/helmfile.yaml"), "releases:\n- name: r1\n  chart: ../charts/a\n").unwrap();
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
        assert_eq!(st.releases[0].chart_ref, ChartRef::Local { path: "charts/a".into() });
        assert_eq!(st.releases[1].chart_ref, ChartRef::Repo { repo: "jetstack".into(), chart: "cert-manager".into(), url: Some("https://charts.jetstack.io".into()), oci: false });
        assert!(!st.releases[1].installed);
        assert_eq!(st.releases[2].file, "sub/helmfile.yaml");
        assert_eq!(st.releases[2].line, Some(2));
        assert_eq!(st.releases[2].chart_ref, ChartRef::Local { path: "charts/a".into() });
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative(Path::new("/a/b/c"), Path::new("/a")), "b/c");
        assert_eq!(relative(Path::new("/x/c"), Path::new("/a/b")), "../../x/c");
    }
}
