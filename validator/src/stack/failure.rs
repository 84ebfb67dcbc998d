//! When an environment's state cannot be loaded: a message a user can act on (the state file,
//! the release and its chart when helmfile names them, the mode, and the fix), and the state
//! helmfile refused when it refused a release declared twice (which the `release-one-owner`
//! rule then reports like any other second declaration).

use super::load::{absolute, classify_chart, relative, release_line};
use super::loader::Inputs;
use super::{ChartRef, EnvState, Release};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// helmfile's "in FILE: duplicate release "NAME" found in namespace "NS"": (file, name, namespace).
fn duplicate(text: &str) -> Option<(String, String, String)> {
    let at = text.find("duplicate release \"")?;
    let rest = &text[at + "duplicate release \"".len()..];
    let name = rest.split('"').next()?.to_string();
    let ns_at = rest.find("found in namespace \"")?;
    let ns = rest[ns_at + "found in namespace \"".len()..]
        .split('"')
        .next()?
        .to_string();
    let before = &text[..at];
    let file = before
        .rfind("in ")
        .map(|i| before[i + 3..].trim().trim_end_matches(':').trim().to_string())?;
    Some((file, name, ns))
}

/// The state helmfile refused because a release is declared twice in one state file: both
/// declarations, with their lines, so `release-one-owner` reports the second.
pub fn duplicate_state(e: &anyhow::Error, inputs: &Inputs, env: &str) -> Option<EnvState> {
    let text = format!("{e:#}");
    let (file, name, ns) = duplicate(&text)?;
    let path = absolute(Path::new(&file));
    let path = if path.is_file() {
        path
    } else {
        absolute(&inputs.root.join(&file))
    };
    let source = std::fs::read_to_string(&path).ok()?;
    let rel = relative(&path, inputs.root);
    let mut state = EnvState {
        name: env.to_string(),
        state_files: vec![rel.clone()],
        ..Default::default()
    };
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    for nth in 0..2 {
        // The chart as the text declares it, when it can be read plainly; otherwise the
        // declaration counts only as an owner (not installed: nothing else is judged on it).
        let scanned = inputs
            .scanned
            .iter()
            .filter(|s| s.file == path && s.name == name)
            .nth(nth);
        let chart = scanned.map(|s| s.chart.clone()).filter(|c| !c.contains("{{"));
        state.releases.push(Release {
            name: name.clone(),
            namespace: if ns.is_empty() { "default".into() } else { ns.clone() },
            namespace_unset: ns.is_empty(),
            chart_ref: match &chart {
                Some(c) => classify_chart(c, &dir, inputs.root, &[]),
                None => ChartRef::Other { raw: String::new() },
            },
            installed: chart.is_some(),
            chart: chart.unwrap_or_default(),
            version: scanned.and_then(|s| s.version.clone()),
            devel: false,
            insecure_tls: None,
            devel_from_defaults: false,
            helm_defaults_line: None,
            needs: Vec::new(),
            declared_values: Vec::new(),
            values: Value::Null,
            set: Vec::new(),
            file: rel.clone(),
            line: release_line(&source, &name, nth),
        });
    }
    Some(state)
}

fn mode(inputs: &Inputs) -> String {
    match (&inputs.opts.chart_mirror, inputs.opts.offline) {
        (Some(d), _) => format!("--chart-mirror {}", d.display()),
        (None, true) => "--offline".into(),
        (None, false) => "online".into(),
    }
}

/// The state file helmfile names in its error (`in ./x.yaml: …`), else the entry.
fn state_file(text: &str, inputs: &Inputs) -> String {
    let named = text.lines().find_map(|l| {
        let l = l.trim();
        let rest = l.strip_prefix("in ")?;
        let (file, _) = rest.split_once(": ")?;
        Some(PathBuf::from(file))
    });
    let p = named
        .map(|p| if p.is_absolute() { p } else { absolute(&p) })
        .unwrap_or_else(|| inputs.entry.to_path_buf());
    relative(&p, inputs.root)
}

/// A chart reference helmfile or helm names in the error (`oci://…`, a registry URL).
fn chart_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .find(|w| w.starts_with("oci://") || w.starts_with("https://") || w.starts_with("http://"))
        .map(|w| w.trim_end_matches([':', ',', ']']).to_string())
}

/// The release of the scanned state whose chart the error names.
fn release_for(chart: &str, inputs: &Inputs) -> Option<String> {
    inputs.scanned.iter().find_map(|s| {
        let leaf = s.chart.rsplit('/').next().unwrap_or(&s.chart);
        (!leaf.is_empty() && chart.contains(leaf)).then(|| {
            format!(
                "release {}/{} (chart {}{})",
                s.namespace.as_deref().unwrap_or("default"),
                s.name,
                s.chart,
                s.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default()
            )
        })
    })
}

/// Say what failed and what to do, keeping helmfile's last lines below for reference.
pub fn explain(e: &anyhow::Error, inputs: &Inputs, env: &str) -> String {
    let text = format!("{e:#}");
    let file = state_file(&text, inputs);
    let mode = mode(inputs);
    let head = if let Some(var) = required_env(&text) {
        format!(
            "{file}: the state requires the environment variable {var} (`requiredEnv`), which is not set; \
             set {var} (any placeholder value will do for a check) and run again"
        )
    } else if text.contains("nvcf-validate --offline: `git") {
        format!(
            "{file}: the state loads a remote helmfile (`git::…` in `helmfiles:`), which cannot be fetched --offline \
             (offline runs are sealed); vendor that state into the repository, or run online"
        )
    } else if text.contains("nvcf-validate --offline: `") {
        format!(
            "{file}: a hook or template of the state runs a command that --offline refuses (offline runs are sealed: \
             no network, no cluster); guard it with an environment, or run online"
        )
    } else if duplicate(&text).is_some() {
        format!("{file}: helmfile refuses a release declared twice in one state (see release-one-owner)")
    } else if network(&text) {
        let chart = chart_in(&text);
        let what = chart
            .as_deref()
            .and_then(|c| release_for(c, inputs))
            .or_else(|| chart.map(|c| format!("chart {c}")))
            .unwrap_or_else(|| "a chart or repository".into());
        let fix = if inputs.opts.offline || inputs.opts.chart_mirror.is_some() {
            "put the chart in a mirror (--chart-mirror DIR with <chart>-<version>.tgz) or run online"
        } else {
            "run with --offline (remote charts are then reported as pinned but not rendered) or --chart-mirror DIR"
        };
        format!("{file}: loading {what} needs the network, which this run ({mode}) does not give helmfile; {fix}")
    } else if text.contains("no releases found that matches specified selector") && text.contains("environment(") {
        format!("{file}: environment {env} is not declared by any state here, or declares no releases; check -e {env}")
    } else {
        format!("{file}: helmfile could not load or render environment {env} ({mode})")
    };
    format!("{head}\n{text}")
}

fn required_env(text: &str) -> Option<String> {
    let at = text.find("required env var `")?;
    let rest = &text[at + "required env var `".len()..];
    rest.split('`').next().map(str::to_string)
}

fn network(text: &str) -> bool {
    [
        "no such host",
        "proxyconnect",
        "dial tcp",
        "connection refused",
        "i/o timeout",
        "failed to do request",
        "Could not resolve host",
        "could not read Username",
    ]
    .iter()
    .any(|n| text.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_helmfile_duplicate_and_required_env() {
        let t = "helmfile build failed:\n  in helmfile.d/20-b.yaml.gotmpl: duplicate release \"b\" found in namespace \"nb\": there were 2 releases";
        assert_eq!(
            duplicate(t),
            Some(("helmfile.d/20-b.yaml.gotmpl".into(), "b".into(), "nb".into()))
        );
        assert_eq!(duplicate("no duplicate here"), None);
        let r = "error calling requiredEnv: required env var `NVCF_TOKEN` is not set";
        assert_eq!(required_env(r).as_deref(), Some("NVCF_TOKEN"));
        assert!(network(
            "proxyconnect tcp: dial tcp 127.0.0.1:9: connect: connection refused"
        ));
        assert!(!network("template: parse error"));
        assert_eq!(
            chart_in("Head \"https://ghcr.io/v2/x/charts/app/manifests/1.2.3\": proxy").as_deref(),
            Some("https://ghcr.io/v2/x/charts/app/manifests/1.2.3")
        );
    }
}
