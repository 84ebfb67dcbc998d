//! `check`: render once, build one graph per environment, run the rules, apply the policy.
//!
//! Errors returned from here mean "could not validate" (exit 2). Findings, including state-level
//! findings that explain why helmfile refused to render, come back in the `Report`.

use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use crate::model::Options;
use crate::pipeline;
use crate::policy::{Policy, DEFAULT_POLICY_FILE};
use crate::render::helmfile::EnvRender;
use crate::render::manifests::{read_manifests, RenderedDoc};
use crate::rules::{self, Ctx, Scope};
use crate::schema::SchemaSet;
use crate::sink::{self, Overrides};
use crate::stack::Stack;
use anyhow::{bail, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct CheckArgs {
    pub file: PathBuf,
    pub environments: Vec<String>,
    pub offline: bool,
    pub chart_mirror: Option<PathBuf>,
    pub manifests: Option<String>,
    pub policy: Option<PathBuf>,
    /// Namespace of `--manifests` objects that name none (`--namespace`, default `default`).
    pub namespace: Option<String>,
    pub no_cache: bool,
    pub deny: Vec<String>,
    pub warn: Vec<String>,
    pub allow: Vec<String>,
    pub progress: bool,
    /// Fail (exit 2) when an installed release was not rendered (offline, not in the mirror,
    /// values unknown): for gating an apply, where everything applied must have been seen.
    pub require_rendered: bool,
    /// Judge certificates and waivers at this moment (tests); now when `None`.
    pub now: Option<time::OffsetDateTime>,
}

pub use crate::model::{EnvReport, Report};

/// Where the policy comes from: `--policy`, else `validator-policy.yaml` beside the state.
fn load_policy(args: &CheckArgs) -> Result<Policy> {
    if let Some(p) = &args.policy {
        let display = p.display().to_string();
        if !p.is_file() {
            bail!("policy file {display} not found");
        }
        return Policy::load(p, &display);
    }
    let dir = if args.file.is_dir() {
        args.file.clone()
    } else {
        args.file.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let candidate = dir.join(DEFAULT_POLICY_FILE);
    if candidate.is_file() {
        let display = if dir.as_os_str().is_empty() {
            DEFAULT_POLICY_FILE.to_string()
        } else {
            candidate.display().to_string()
        };
        return Policy::load(&candidate, &display);
    }
    Ok(Policy {
        missing: Some(candidate.display().to_string()),
        ..Policy::default()
    })
}

pub fn check(args: &CheckArgs) -> Result<Report> {
    run(args).map(|(report, _)| report)
}

/// One environment's object graph with the findings about it (after the sink: severities,
/// overrides and waivers applied), for `graph`: the picture is drawn from exactly what the rules
/// judged.
#[derive(Debug)]
pub struct EnvGraph {
    pub name: String,
    pub graph: Graph,
    pub findings: Vec<Finding>,
}

/// Like `check`, and also each environment's graph next to its findings (for `graph` and the
/// diagrams of the markdown report).
pub fn check_graphs(args: &CheckArgs) -> Result<(Report, Vec<EnvGraph>)> {
    let (report, graphs) = run(args)?;
    let mut out: Vec<EnvGraph> = report
        .environments
        .iter()
        .zip(graphs)
        .map(|(e, graph)| EnvGraph {
            name: e.name.clone(),
            graph,
            findings: Vec::new(),
        })
        .collect();
    for f in &report.findings {
        let env = f.environment.as_deref().unwrap_or("manifests");
        if let Some(e) = out.iter_mut().find(|e| e.name == env) {
            e.findings.push(f.clone());
        }
    }
    Ok((report, out))
}

/// The whole pipeline: load, render, one graph per environment, rules, sink. The graphs come
/// back in the order of the report's environments.
fn run(args: &CheckArgs) -> Result<(Report, Vec<Graph>)> {
    let policy = load_policy(args)?;
    let overrides = Overrides::new(&policy, &args.deny, &args.warn, &args.allow)?;
    let now = args.now.unwrap_or_else(time::OffsetDateTime::now_utc);
    let schemas = load_schemas(args, &policy, &overrides)?;

    let (mut findings, environments, graphs) = match &args.manifests {
        Some(path) => {
            let mut docs = read_manifests(path, "")?;
            // Namespace-less objects go where kubectl would put them: `--namespace` (default `default`).
            let ns = args.namespace.clone().unwrap_or_else(|| "default".to_string());
            for d in &mut docs {
                d.default_namespace = Some(ns.clone());
            }
            if docs.is_empty() {
                bail!("--manifests {path}: no Kubernetes objects to validate (empty input)");
            }
            let graph = build_graph("", docs, &policy, None);
            let ctx = Ctx {
                environment: "",
                stack: None,
                state: None,
                graph: &graph,
                policy: &policy,
                status: &[],
                now,
                schemas: schemas.as_ref(),
            };
            let f = rules::run(&ctx, Scope::Objects);
            let env = EnvReport {
                name: "manifests".into(),
                releases: Vec::new(),
                objects: graph.objects.iter().filter(|o| !o.prov.external).count(),
                render_error: None,
                schema_coverage: schemas.as_ref().map(|s| s.for_graph(&graph).coverage(&graph)),
            };
            (f, vec![env], vec![graph])
        }
        None => {
            let opts = Options {
                offline: args.offline,
                chart_mirror: args.chart_mirror.clone(),
                lock_file: policy.settings.lock_file.clone(),
            };
            let (stack, renders) =
                pipeline::load_and_render(&args.file, &args.environments, &opts, !args.no_cache, args.progress)?;
            check_stack(&stack, renders, &policy, now, schemas.as_ref())?
        }
    };
    findings.extend(rules::policy::settings_findings(&policy));
    findings = sink::apply(findings, &policy, &overrides, now.date());
    findings = crate::fold::fold(findings);
    // A render failure is a finding's consequence only while an unwaived error of a state rule
    // stands in that environment (after -A/-W, severities and waivers); otherwise the gate could
    // not validate the environment and says so.
    // The same holds for an environment that rendered no object at all: nothing was judged, so
    // it can never pass.
    let mut unexplained = Vec::new();
    for env in &environments {
        let explained = || {
            findings.iter().any(|f| {
                f.environment.as_deref() == Some(env.name.as_str())
                    && f.waived.is_none()
                    && f.sev() == Severity::Error
                    && rules::find(f.rule).is_some_and(|r| r.scope != Scope::Objects)
            })
        };
        if let Some(err) = &env.render_error {
            if !explained() {
                unexplained.push(format!("environment {}: {err}", env.name));
            }
        } else if args.manifests.is_none() && env.objects == 0 && !explained() {
            let installed = env.releases.iter().filter(|r| r.installed).count();
            let rendered = env.releases.iter().filter(|r| r.installed && r.rendered).count();
            bail!(
                "environment {}: rendered no objects ({rendered} of {installed} installed releases rendered), so \
                 nothing was validated; switch on the templates of its releases, render the remote ones \
                 (--chart-mirror DIR, or online), or leave the environment out with --environment",
                env.name
            );
        }
    }
    // Every environment that failed is named (the others were loaded and checked all the same).
    if !unexplained.is_empty() {
        bail!(
            "{} of {} environments: helmfile could not render the stack, and no standing state finding explains why:\n{}",
            unexplained.len(),
            environments.len(),
            unexplained.join("\n")
        );
    }
    if args.require_rendered {
        let missing: Vec<String> = environments
            .iter()
            .flat_map(|e| e.releases.iter().filter(|r| r.missing()).map(move |r| (e, r)))
            .map(|(e, r)| {
                format!(
                    "  {}: {}/{}: {}",
                    e.name,
                    r.namespace,
                    r.name,
                    r.reason.as_deref().unwrap_or("-")
                )
            })
            .collect();
        if !missing.is_empty() {
            bail!(
                "--require-rendered: these installed releases were not rendered, so they were not validated:\n{}",
                missing.join("\n")
            );
        }
    }
    sort_findings(&mut findings, &environments);
    Ok((Report { environments, findings }, graphs))
}

/// Run the state rules and object rules of every rendered environment.
fn check_stack(
    stack: &Stack,
    renders: Vec<EnvRender>,
    policy: &Policy,
    now: time::OffsetDateTime,
    schemas: Option<&SchemaSet>,
) -> Result<(Vec<Finding>, Vec<EnvReport>, Vec<Graph>)> {
    let mut findings = Vec::new();
    let mut envs = Vec::new();
    let mut graphs = Vec::new();
    let mut texts: HashMap<String, std::sync::Arc<str>> = HashMap::new();
    for r in renders {
        let EnvRender {
            state,
            docs,
            status,
            render_error,
        } = r;
        let graph = build_graph(&state.name, docs, policy, Some((&stack.root, &mut texts)));
        let ctx = Ctx {
            environment: &state.name,
            stack: Some(stack),
            state: Some(&state),
            graph: &graph,
            policy,
            status: &status,
            now,
            schemas,
        };
        // Whether state findings explain a render failure is decided after the sink (`check`).
        findings.extend(rules::run(&ctx, Scope::State));
        if render_error.is_none() {
            findings.extend(rules::run(&ctx, Scope::Objects));
        }
        let schema_coverage = schemas
            .filter(|_| render_error.is_none())
            .map(|s| s.for_graph(&graph).coverage(&graph));
        envs.push(EnvReport {
            name: state.name.clone(),
            objects: graph.objects.iter().filter(|o| !o.prov.external).count(),
            releases: status,
            render_error,
            schema_coverage,
        });
        graphs.push(graph);
    }
    Ok((findings, envs, graphs))
}

/// The schemas `schema-valid` needs, loaded once per run; `None` when the rule is turned off
/// (`-A schema-valid` or the policy's `severity:`), so a run without installed schemas can opt out.
/// They are looked up from the state's directory, or the working directory for `--manifests`.
fn load_schemas(args: &CheckArgs, policy: &Policy, overrides: &Overrides) -> Result<Option<SchemaSet>> {
    if overrides.get("schema-valid") == Some(crate::policy::Level::Allow) {
        return Ok(None);
    }
    let start = match &args.manifests {
        Some(_) => std::env::current_dir().unwrap_or_default(),
        None if args.file.is_dir() => args.file.clone(),
        None => args.file.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let start = if start.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        start
    };
    SchemaSet::load(policy, &start).map(Some)
}

/// Turn rendered documents into a graph, add the policy's externals, and attach template texts
/// (which the cache does not store) for line lookups.
fn build_graph(
    env: &str,
    docs: Vec<RenderedDoc>,
    policy: &Policy,
    templates: Option<(&PathBuf, &mut HashMap<String, std::sync::Arc<str>>)>,
) -> Graph {
    let mut objects = Vec::with_capacity(docs.len());
    let mut templates = templates;
    let scopes = crate::scope::Scopes::new(docs.iter().map(|d| &d.body), policy, env);
    for d in docs {
        let mut prov = d.prov;
        if prov.template_text.is_none() {
            if let (Some((root, cache)), Some(file)) = (templates.as_mut(), prov.file.as_ref()) {
                let text = cache
                    .entry(file.clone())
                    .or_insert_with(|| std::fs::read_to_string(root.join(file)).unwrap_or_default().into())
                    .clone();
                if !text.is_empty() {
                    prov.template_text = Some(text);
                }
            }
        }
        let fallback = d.default_namespace.clone();
        if let Some(mut o) = Object::from_value(d.body, fallback.as_deref(), prov) {
            crate::scope::place(&mut o, &scopes, fallback.as_deref());
            objects.push(o);
        }
    }
    let mut g = Graph::new(env, objects);
    policy.add_externals(&mut g);
    g
}

fn sort_findings(findings: &mut [Finding], envs: &[EnvReport]) {
    let order: HashMap<&str, usize> = envs.iter().enumerate().map(|(i, e)| (e.name.as_str(), i)).collect();
    findings.sort_by(|a, b| {
        let ea = a
            .environment
            .as_deref()
            .and_then(|e| order.get(e))
            .copied()
            .unwrap_or(usize::MAX);
        let eb = b
            .environment
            .as_deref()
            .and_then(|e| order.get(e))
            .copied()
            .unwrap_or(usize::MAX);
        (
            ea,
            &a.release,
            std::cmp::Reverse(a.sev()),
            a.rule,
            &a.source,
            &a.object,
            &a.message,
        )
            .cmp(&(
                eb,
                &b.release,
                std::cmp::Reverse(b.sev()),
                b.rule,
                &b.source,
                &b.object,
                &b.message,
            ))
    });
}

/// Context for errors about the state file, used by the CLI.
pub fn describe(args: &CheckArgs) -> String {
    match &args.manifests {
        Some(m) => format!("manifests {m}"),
        None => format!("stack {}", args.file.display()),
    }
}
