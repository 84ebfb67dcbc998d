//! The unit-test kit for rules (and anything else that needs an object graph): graphs and
//! contexts from YAML text, the fixture harness over `tests/fixtures/<family>/`, and small builders
//! for helmfile state. Compiled for tests only.

use crate::finding::Finding;
use crate::graph::{Graph, Object, Provenance};
use crate::policy::Policy;
use crate::render::ReleaseStatus;
use crate::rules::{Ctx, Rule, Scope};
use crate::stack::{ChartRef, EnvState, Release, Repository, Stack};
use serde_json::Value;
use std::path::PathBuf;

/// A graph from multi-document YAML; each object gets provenance `fixture.yaml:<line>`,
/// release `nvcf/fixture` and the namespace `nvcf` when it has none.
pub fn graph(env: &str, yaml: &str) -> Graph {
    let docs = crate::yaml::documents(yaml).expect("fixture YAML parses");
    let text: std::sync::Arc<str> = yaml.into();
    let objects = docs
        .into_iter()
        .filter_map(|d| {
            let prov = Provenance {
                environment: env.to_string(),
                release: Some("nvcf/fixture".into()),
                chart: Some("./charts/fixture".into()),
                file: Some("fixture.yaml".into()),
                doc_index: d.index,
                line: Some(d.line),
                template_text: Some(text.clone()),
                external: false,
            };
            Object::from_value(d.value, Some("nvcf"), prov)
        })
        .collect();
    Graph::new(env, objects)
}

/// Add the policy's externals for `env` to a graph, as the engine does.
pub fn with_externals(mut g: Graph, policy: &Policy) -> Graph {
    policy.add_externals(&mut g);
    g
}

/// A context over a graph with no stack (like `--manifests` input), judged at 2026-11-29.
pub fn ctx<'a>(graph: &'a Graph, policy: &'a Policy) -> Ctx<'a> {
    Ctx {
        environment: &graph.environment,
        stack: None,
        state: None,
        graph,
        policy,
        status: &[],
        now: time::macros::datetime!(2026-11-29 12:00 UTC),
    }
}

pub fn fixture_dir(family: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(family)
}

/// The object rules of `rules` over one fixture (`<stem>.yaml`), with its policy
/// (`policy/<stem>.yaml`) when it has one.
pub fn run_fixture(family: &str, stem: &str, rules: &[Rule]) -> Vec<Finding> {
    let dir = fixture_dir(family);
    let text = std::fs::read_to_string(dir.join(format!("{stem}.yaml"))).expect("fixture readable");
    let pfile = dir.join("policy").join(format!("{stem}.yaml"));
    let policy = if pfile.exists() {
        Policy::load(&pfile, &format!("policy/{stem}.yaml")).expect("fixture policy parses")
    } else {
        Policy::default()
    };
    let g = with_externals(graph("fixture", &text), &policy);
    let ctx = ctx(&g, &policy);
    rules
        .iter()
        .filter(|r| r.scope != Scope::State)
        .flat_map(|r| (r.check)(&ctx))
        .collect()
}

/// Runs every fixture of a family: `fires-<id>-*` must report `<id>`, `silent-<id>-*` must
/// report nothing from the family. Returns the findings per fixture stem for snapshots.
pub fn check_family(family: &str, rules: &[Rule]) -> Vec<(String, Vec<Finding>)> {
    let mut stems: Vec<String> = std::fs::read_dir(fixture_dir(family))
        .expect("fixture dir")
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".yaml"))
                .map(str::to_string)
        })
        .collect();
    stems.sort();
    assert!(!stems.is_empty(), "no fixtures for {family}");
    let mut out = Vec::new();
    for stem in stems {
        let (fires, rest) = match (stem.strip_prefix("fires-"), stem.strip_prefix("silent-")) {
            (Some(r), _) => (true, r),
            (_, Some(r)) => (false, r),
            _ => panic!("fixture {family}/{stem}.yaml must be named fires-<rule>-<case> or silent-<rule>-<case>"),
        };
        let id = rules
            .iter()
            .map(|r| r.id)
            .filter(|id| rest.starts_with(&format!("{id}-")))
            .max_by_key(|id| id.len())
            .unwrap_or_else(|| panic!("fixture {family}/{stem}.yaml names no rule of the {family} family"));
        let findings = run_fixture(family, &stem, rules);
        if fires {
            assert!(
                findings.iter().any(|f| f.rule == id),
                "{family}/{stem}.yaml must fire {id}; got {findings:#?}"
            );
        } else {
            assert!(
                findings.is_empty(),
                "{family}/{stem}.yaml must stay silent; got {findings:#?}"
            );
        }
        out.push((stem, findings));
    }
    out
}

/// Every object rule of the family has a firing and a silent fixture.
pub fn every_object_rule_has_fixtures(family: &str, rules: &[Rule]) {
    let names: Vec<String> = std::fs::read_dir(fixture_dir(family))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for r in rules.iter().filter(|r| r.scope != Scope::State) {
        for kind in ["fires", "silent"] {
            assert!(
                names.iter().any(|n| n.starts_with(&format!("{kind}-{}-", r.id))),
                "rule {} has no {kind}-{}-*.yaml fixture",
                r.id,
                r.id
            );
        }
    }
}

pub fn local(path: &str) -> ChartRef {
    ChartRef::Local { path: path.to_string() }
}

pub fn repo(repo: &str, chart: &str, url: &str, oci: bool) -> ChartRef {
    ChartRef::Repo {
        repo: repo.into(),
        chart: chart.into(),
        url: Some(url.into()),
        oci,
    }
}

/// A release declared at `file:line`.
pub fn rel(file: &str, line: usize, namespace: &str, name: &str, chart_ref: ChartRef) -> Release {
    let chart = match &chart_ref {
        ChartRef::Local { path } if path.starts_with("..") => path.clone(),
        ChartRef::Local { path } => format!("./{path}"),
        ChartRef::Repo { repo, chart, .. } => format!("{repo}/{chart}"),
        ChartRef::Oci { url } => url.clone(),
        ChartRef::Other { raw } => raw.clone(),
    };
    Release {
        name: name.into(),
        namespace: namespace.into(),
        chart,
        chart_ref,
        version: None,
        devel: false,
        installed: true,
        needs: Vec::new(),
        declared_values: Vec::new(),
        values: Value::Null,
        set: Vec::new(),
        file: file.into(),
        line: Some(line),
    }
}

pub fn repository(name: &str, url: &str, oci: bool) -> Repository {
    Repository {
        name: name.into(),
        url: url.into(),
        oci,
        file: "helmfile.yaml".into(),
    }
}

pub fn state(releases: Vec<Release>, repositories: Vec<Repository>) -> EnvState {
    let mut files: Vec<String> = Vec::new();
    for r in &releases {
        if !files.contains(&r.file) {
            files.push(r.file.clone());
        }
    }
    EnvState {
        name: "default".into(),
        state_files: files,
        releases,
        repositories,
    }
}

/// A context for state rules.
pub fn state_ctx<'a>(
    graph: &'a Graph,
    policy: &'a Policy,
    stack: &'a Stack,
    state: &'a EnvState,
    status: &'a [ReleaseStatus],
) -> Ctx<'a> {
    Ctx {
        environment: "default",
        stack: Some(stack),
        state: Some(state),
        graph,
        policy,
        status,
        now: time::macros::datetime!(2026-11-29 12:00 UTC),
    }
}

/// Run one rule over a state.
pub fn run_state(
    rule: &Rule,
    state: &EnvState,
    stack: &Stack,
    policy: &Policy,
    status: &[ReleaseStatus],
) -> Vec<Finding> {
    let g = Graph::new("default", Vec::new());
    (rule.check)(&state_ctx(&g, policy, stack, state, status))
}
