//! The unit-test kit for rules (and anything else that needs an object graph): graphs and
//! contexts from YAML text, the fixture harness over `tests/fixtures/<family>/`, and small builders
//! for helmfile state. Compiled for tests only.

use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use crate::policy::Policy;
use crate::render::Provenance;
use crate::render::ReleaseStatus;
use crate::rules::{Ctx, Rule, Scope};
use crate::stack::{ChartRef, EnvState, Release, Repository, Stack};
use serde_json::Value;
use std::path::PathBuf;

/// A graph from multi-document YAML; each object gets provenance `fixture.yaml:<line>`,
/// release `nvcf/fixture` and the namespace `nvcf` when it has none.
pub fn graph(env: &str, yaml: &str) -> Graph {
    let docs = crate::yaml::documents(yaml).expect("fixture YAML parses");
    // Custom kinds are placed with the scopes the fixtures' default policy declares, as the
    // engine places them with the run's policy.
    let scopes = crate::scope::Scopes::new(docs.iter().map(|d| &d.value), &default_fixture_policy(), env);
    let text: std::sync::Arc<str> = yaml.into();
    // Lists (any document with `items`) are their items, as the API clients read them; a
    // document that is not a valid object or list is left for the rules to see as it is.
    let expanded = docs.into_iter().flat_map(|d| {
        let (index, line) = (d.index, d.line);
        match crate::render::manifests::objects_with_lines(d.value.clone(), &d.item_lines, "fixture.yaml", index, line)
        {
            Ok(items) => items.into_iter().map(|(v, l)| (v, index, l)).collect::<Vec<_>>(),
            Err(_) => vec![(d.value, index, line)],
        }
    });
    let objects = expanded
        .filter_map(|(value, doc_index, line)| {
            let prov = Provenance {
                environment: env.to_string(),
                release: Some("nvcf/fixture".into()),
                chart: Some("./charts/fixture".into()),
                file: Some("fixture.yaml".into()),
                doc_index,
                line: Some(line),
                template_text: Some(text.clone()),
                external: false,
            };
            let mut o = Object::from_value(value, Some("nvcf"), prov)?;
            crate::scope::place(&mut o, &scopes, Some("nvcf"));
            Some(o)
        })
        .collect();
    Graph::new(env, objects)
}

/// The rule registry's families (`Policy::parse` takes them from its caller), for the tests of
/// layers below the rules that parse a policy.
pub fn family_of(id: &str) -> Option<&'static str> {
    crate::rules::family_of(id)
}

/// A policy from its text (as `validator-policy.yaml`), for tests that need one.
pub fn policy(text: &str) -> Policy {
    Policy::parse(text, "validator-policy.yaml", family_of).unwrap_or_else(|e| panic!("{e:#}"))
}

/// `tests/fixtures/policy/default.yaml`: the policy of fixtures without their own.
pub fn default_fixture_policy() -> Policy {
    let default = fixture_dir("policy").join("default.yaml");
    Policy::load(&default, "policy/default.yaml", crate::rules::family_of)
        .expect("tests/fixtures/policy/default.yaml parses")
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
        schemas: None,
        routers_found: Default::default(),
    }
}

pub fn fixture_dir(family: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(family)
}

/// The findings of every object rule of `rules` over one fixture (`<stem>.yaml`), with its policy
/// (`policy/<stem>.yaml`) when it has one, folded by cause (`crate::fold`).
pub fn run_fixture(family: &str, stem: &str, rules: &[Rule]) -> Vec<Finding> {
    let dir = fixture_dir(family);
    let text = std::fs::read_to_string(dir.join(format!("{stem}.yaml"))).expect("fixture readable");
    let pfile = dir.join("policy").join(format!("{stem}.yaml"));
    let policy = if pfile.exists() {
        Policy::load(&pfile, &format!("policy/{stem}.yaml"), crate::rules::family_of).expect("fixture policy parses")
    } else {
        default_fixture_policy()
    };
    let g = with_externals(graph("fixture", &text), &policy);
    let ctx = ctx(&g, &policy);
    // One cause, one finding, as the engine reports them.
    crate::fold::fold(
        rules
            .iter()
            .filter(|r| r.scope != Scope::State)
            .flat_map(|r| (r.check)(&ctx))
            .collect(),
    )
}

/// One fixture of a family, as the runner judged it.
pub struct FixtureRun {
    pub stem: String,
    /// `fires-…` (else `silent-…`).
    pub fires: bool,
    /// The rule the fixture is about.
    pub rule: &'static str,
    /// Findings of every object rule of the family over the fixture, in rule order.
    pub findings: Vec<Finding>,
}

/// What a silent fixture must be clean of.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Silent {
    /// Every rule of the family (its fixtures are complete, valid stacks of objects).
    Family,
    /// Its own rule only (its fixtures are deliberately small and trip the family's other rules).
    Rule,
}

/// The fixture runner of the rule unit tests, one for every family. Each
/// `tests/fixtures/<family>/*.yaml`:
/// - is named for a rule of `rules` (`crate::rules::fixture_rule`) and starts with a header
///   comment saying what it shows;
/// - `fires-<rule>-<case>`: makes its rule report; each `# expect: TEXT` header line appears in
///   one of the rule's messages or help texts; its findings have the rule's default severity, or
///   are warnings when the header says `# severity: warning`;
/// - `silent-<rule>-<case>`: leaves its rule (or, with `Silent::Family`, the whole family) silent.
///
/// Every object rule of `rules` has a firing and a silent fixture. Fails listing every problem;
/// returns the runs, in file name order, for snapshots.
pub fn check_fixtures(family: &str, rules: &[Rule], silent: Silent) -> Vec<FixtureRun> {
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
    let mut failures = Vec::new();
    let mut runs = Vec::new();
    for stem in stems {
        let file = format!("{family}/{stem}.yaml");
        let Some((fires, rule)) = crate::rules::fixture_rule(&stem).filter(|(_, r)| rules.iter().any(|m| m.id == r.id))
        else {
            failures.push(format!(
                "{file}: name is not fires-<rule-id>-<case> / silent-<rule-id>-<case> for a rule of this family"
            ));
            continue;
        };
        let text = std::fs::read_to_string(fixture_dir(family).join(format!("{stem}.yaml"))).expect("fixture readable");
        let header: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
        if header.is_empty() {
            failures.push(format!("{file}: no header comment saying what it shows"));
        }
        let findings = run_fixture(family, &stem, rules);
        let mine: Vec<&Finding> = findings.iter().filter(|f| f.rule == rule.id).collect();
        if fires {
            if mine.is_empty() {
                failures.push(format!("{file}: expected {} to fire; got {findings:#?}", rule.id));
            }
            // A firing fixture states what it must produce (tests/fixtures.rs also checks that
            // every finding of its rule is one it states).
            if !header.iter().any(|l| l.starts_with("# expect: ")) {
                failures.push(format!(
                    "{file}: states no expected finding (`# expect: TEXT` header line)"
                ));
            }
            for want in header.iter().filter_map(|l| l.strip_prefix("# expect: ")) {
                let hit = mine
                    .iter()
                    .any(|f| f.message.contains(want) || f.help.as_deref().is_some_and(|h| h.contains(want)));
                if !hit {
                    failures.push(format!(
                        "{file}: no {} finding contains `{want}`; got {mine:#?}",
                        rule.id
                    ));
                }
            }
            let warning = header.iter().any(|l| l.trim() == "# severity: warning");
            let want = if warning { Some(Severity::Warning) } else { None };
            if let Some(f) = mine.iter().find(|f| f.severity != want) {
                failures.push(format!(
                    "{file}: expected severity {want:?} for {}, got {:?}: {}",
                    rule.id, f.severity, f.message
                ));
            }
        } else {
            let offending: Vec<&Finding> = match silent {
                Silent::Family => findings.iter().collect(),
                Silent::Rule => mine,
            };
            if !offending.is_empty() {
                failures.push(format!("{file}: expected to stay silent; got {offending:#?}"));
            }
        }
        runs.push(FixtureRun {
            stem,
            fires,
            rule: rule.id,
            findings,
        });
    }
    for r in rules.iter().filter(|r| r.scope != Scope::State) {
        for fires in [true, false] {
            if !runs.iter().any(|run| run.rule == r.id && run.fires == fires) {
                let kind = if fires { "fires" } else { "silent" };
                failures.push(format!("rule {} has no {kind}-{}-*.yaml fixture", r.id, r.id));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    runs
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
        namespace_unset: false,
        chart,
        chart_ref,
        version: None,
        devel: false,
        insecure_tls: None,
        devel_from_defaults: false,
        helm_defaults_line: None,
        installed: true,
        needs: Vec::new(),
        declared_values: Vec::new(),
        values: Value::Null,
        set: Vec::new(),
        file: file.into(),
        line: Some(line),
        refused: None,
        cluster_reads: Vec::new(),
        chart_dependencies: Vec::new(),
        helm_args: Vec::new(),
        api_versions: Vec::new(),
        post_renderer: None,
    }
}

pub fn repository(name: &str, url: &str, oci: bool) -> Repository {
    Repository {
        name: name.into(),
        url: url.into(),
        oci,
        file: "helmfile.yaml".into(),
        skip_tls_verify: false,
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
        ..Default::default()
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
        schemas: None,
        routers_found: Default::default(),
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

/// The developer opt-out of [`require`]: set on a machine that lacks a kernel feature or a tool
/// to let the tests that need it end early (saying so) instead of failing. Never set in `ci/test`.
pub const ALLOW_MISSING: &str = "NVCF_TESTS_ALLOW_MISSING";

/// Whether a test's precondition (a kernel feature, a tool) holds. When it does not, the test
/// FAILS naming what is missing, so a runner without it cannot pass by testing nothing; only
/// with [`ALLOW_MISSING`] set does this print why and return `false` (the caller returns).
pub fn require(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var_os(ALLOW_MISSING).is_some_and(|v| !v.is_empty()) {
        eprintln!("{what} is missing here; {ALLOW_MISSING} is set, so this test checks nothing");
        return false;
    }
    panic!("{what} is missing on this machine, so this test cannot run; install/enable it, or set {ALLOW_MISSING}=1 to let it end early on a developer machine (never in CI)");
}
