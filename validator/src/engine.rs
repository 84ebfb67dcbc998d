//! `check`: render once, build one graph per environment, run the rules, apply the policy.
//!
//! Errors returned from here mean "could not validate" (exit 2). Findings, including state-level
//! findings that explain why helmfile refused to render, come back in the `Report`.

use crate::diagram::EnvGraph;
use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use crate::pipeline;
use crate::policy::{Policy, DEFAULT_POLICY_FILE};
use crate::render::helmfile::EnvRender;
use crate::render::manifests::{read_manifests, RenderedDoc};
use crate::render::RenderedFor;
use crate::report::{EnvReport, Report};
use crate::rules::{self, Ctx, Scope};
use crate::schema::SchemaSet;
use crate::sink::{self, Overrides};
use crate::stack::{Options, Stack};
use anyhow::{bail, Result};
use std::collections::HashMap;
use std::path::PathBuf;

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

/// A run that could not validate everything (exit 2), with the report of what it did validate:
/// the environments that loaded with their findings, and those that failed with their error
/// (`EnvReport::render_error`). Every format prints it next to the cause.
#[derive(Debug)]
pub struct Incomplete {
    pub report: Report,
    pub cause: String,
}

impl std::fmt::Display for Incomplete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.cause)
    }
}

impl std::error::Error for Incomplete {}

/// What the run must still answer for after the rules: a release that was not rendered because
/// helmfile refused it or `helm template` failed on it (`release`), or an environment that could
/// not be loaded or rendered at all (`release: None`).
#[derive(Debug)]
struct Need {
    environment: String,
    release: Option<String>,
    message: String,
}

/// Where the policy comes from: `--policy`, else `validator-policy.yaml` beside the state.
fn load_policy(args: &CheckArgs) -> Result<Policy> {
    if let Some(p) = &args.policy {
        let display = p.display().to_string();
        if !p.is_file() {
            bail!("policy file {display} not found");
        }
        return Policy::load(p, &display, crate::rules::family_of);
    }
    let dir = crate::stack::loader::stack_dir(&args.file);
    let candidate = dir.join(DEFAULT_POLICY_FILE);
    if candidate.is_file() {
        let display = if dir.as_os_str().is_empty() {
            DEFAULT_POLICY_FILE.to_string()
        } else {
            candidate.display().to_string()
        };
        return Policy::load(&candidate, &display, crate::rules::family_of);
    }
    Ok(Policy {
        missing: Some(candidate.display().to_string()),
        ..Policy::default()
    })
}

pub fn check(args: &CheckArgs) -> Result<Report> {
    run(args).map(|(report, _, _)| report)
}

/// Like `check`, and also the objects each environment's rules judged, with the cluster helm
/// rendered them for (`check --objects`).
pub fn check_objects(args: &CheckArgs) -> Result<(Report, Vec<crate::report::objects::Judged>)> {
    let (report, graphs, rendered_for) = run(args)?;
    let judged = report
        .environments
        .iter()
        .zip(graphs.into_iter().zip(rendered_for))
        .map(|(e, (graph, rendered_for))| crate::report::objects::Judged {
            name: e.name.clone(),
            graph,
            rendered_for,
        })
        .collect();
    Ok((report, judged))
}

/// Like `check`, and also each environment's graph next to its findings (for `graph` and the
/// diagrams of the markdown report).
pub fn check_graphs(args: &CheckArgs) -> Result<(Report, Vec<EnvGraph>)> {
    let (report, graphs, _) = run(args)?;
    let out = env_graphs(&report, graphs);
    Ok((report, out))
}

/// Each environment's graph next to its findings, from a check's report and graphs (in the
/// order of the report's environments).
pub fn env_graphs(report: &Report, graphs: Vec<Graph>) -> Vec<EnvGraph> {
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
    out
}

/// The whole pipeline: load, render, one graph per environment, rules, sink. The graphs come
/// back in the order of the report's environments, each with the cluster it was rendered for.
fn run(args: &CheckArgs) -> Result<(Report, Vec<Graph>, Vec<RenderedFor>)> {
    // What the offline seal does not enforce here: its probes each start a process (the only
    // ones of a warm run), so they run beside the rest instead of after the rules.
    let seal = (args.offline && args.manifests.is_none()).then(|| std::thread::spawn(crate::tools::seal::weaknesses));
    let policy = load_policy(args)?;
    let overrides = Overrides::new(&policy, &args.deny, &args.warn, &args.allow)?;
    let now = args.now.unwrap_or_else(time::OffsetDateTime::now_utc);
    let schemas = load_schemas(args, &policy, &overrides)?;

    // The entry state file, as the user's messages name it (relative to the working directory).
    let mut entry = args.file.display().to_string();
    let (mut findings, environments, graphs, needs, rendered_for) = match &args.manifests {
        Some(path) => {
            let docs = read_manifests(path, "")?;
            if docs.is_empty() {
                bail!("--manifests {path}: no Kubernetes objects to validate (empty input)");
            }
            let ns = args.namespace.clone().unwrap_or_else(|| "default".to_string());
            let graph = manifests_graph(docs, &ns, &policy);
            let ctx = Ctx {
                environment: "",
                stack: None,
                state: None,
                graph: &graph,
                policy: &policy,
                status: &[],
                now,
                schemas: schemas.as_ref(),
                routers_found: Default::default(),
            };
            let f = rules::run(&ctx, Scope::Objects);
            let env = EnvReport {
                name: "manifests".into(),
                releases: Vec::new(),
                objects: graph.objects.iter().filter(|o| !o.prov.external).count(),
                render_error: None,
                schema_coverage: schemas.as_ref().map(|s| s.for_graph(&graph).coverage(&graph)),
            };
            (f, vec![env], vec![graph], Vec::new(), vec![RenderedFor::default()])
        }
        None => {
            let opts = Options {
                offline: args.offline,
                chart_mirror: args.chart_mirror.clone(),
                lock_file: policy.settings.lock_file.clone(),
                kube_version: policy
                    .settings
                    .kubernetes_version
                    .as_deref()
                    .and_then(crate::schema::normalise_version)
                    .unwrap_or_else(|| crate::schema::DEFAULT_KUBERNETES_VERSION.to_string()),
                api_versions: schemas.as_ref().map(SchemaSet::api_versions).unwrap_or_default(),
                is_upgrade: false,
            };
            let (stack, renders) =
                pipeline::load_and_render(&args.file, &args.environments, &opts, !args.no_cache, args.progress)?;
            entry =
                crate::tools::paths::relative(&stack.entry, &crate::tools::paths::absolute(std::path::Path::new(".")));
            check_stack(&stack, renders, &policy, now, schemas.as_ref())?
        }
    };
    findings.extend(rules::policy::settings_findings(&policy));
    if let Some(seal) = seal {
        let weaknesses = seal.join().expect("seal probe thread panicked");
        findings.extend(rules::policy::seal_findings(&weaknesses));
    }
    findings = sink::apply(findings, &policy, &overrides, now.date());
    // A release that was not rendered because helmfile refused it or `helm template` failed on
    // it is a finding's consequence only while an unwaived error of a state rule about that same
    // release stands in that environment (after -A/-W, severities and waivers): an unrelated
    // finding explains nothing. An environment that could not be loaded or rendered at all is
    // never explained. Otherwise the gate could not validate and says so (exit 2), with the
    // report of everything it did validate.
    let standing = |env: &str, release: &str| {
        findings.iter().any(|f| {
            f.environment.as_deref() == Some(env)
                && f.release.as_deref() == Some(release)
                && f.waived.is_none()
                && f.sev() == Severity::Error
                && rules::find(f.rule).is_some_and(|r| r.scope != Scope::Objects)
        })
    };
    let mut unexplained: Vec<(&str, String)> = needs
        .iter()
        .filter(|n| n.release.as_deref().is_none_or(|r| !standing(&n.environment, r)))
        .map(|n| {
            let line = match &n.release {
                Some(r) => format!("environment {}: release {r}: {}", n.environment, n.message),
                None => format!("environment {}: {}", n.environment, n.message),
            };
            (n.environment.as_str(), line)
        })
        .collect();
    // The same holds for an environment that rendered no object at all: nothing was judged, so
    // it can never pass.
    for env in &environments {
        let explained = findings.iter().any(|f| {
            f.environment.as_deref() == Some(env.name.as_str())
                && f.waived.is_none()
                && f.sev() == Severity::Error
                && rules::find(f.rule).is_some_and(|r| r.scope != Scope::Objects)
        });
        let answered = unexplained.iter().any(|(e, _)| *e == env.name);
        if env.render_error.is_none() && args.manifests.is_none() && env.objects == 0 && !explained && !answered {
            let installed = env.releases.iter().filter(|r| r.installed).count();
            let rendered = env.releases.iter().filter(|r| r.installed && r.rendered).count();
            unexplained.push((
                env.name.as_str(),
                format!(
                    "environment {}: rendered no objects ({rendered} of {installed} installed releases rendered) from \
                     {entry}, so nothing was validated; switch on the templates of its releases, render the remote \
                     ones (--chart-mirror DIR, or online), or leave the environment out with --environment",
                    env.name
                ),
            ));
        }
    }
    // One cause, one finding (after the sink, so waivers and severities were decided per finding;
    // after the explanations above, which ask about each release's own findings).
    findings = crate::fold::fold(findings);
    let mut cause = None;
    // Every environment that failed is named (the others were loaded and checked all the same).
    if !unexplained.is_empty() {
        let mut named: Vec<&str> = unexplained.iter().map(|(e, _)| *e).collect();
        named.sort();
        named.dedup();
        // Cause first: each environment's first line (the file, the release or object, the fix),
        // then how many failed, then helmfile's own words for each.
        let (heads, words): (Vec<&str>, Vec<String>) = unexplained
            .iter()
            .map(|(e, l)| {
                let (head, rest) = l.split_once('\n').unwrap_or((l.as_str(), ""));
                (
                    head,
                    if rest.is_empty() {
                        String::new()
                    } else {
                        format!("environment {e}: {rest}")
                    },
                )
            })
            .unzip();
        let words: Vec<String> = words.into_iter().filter(|w| !w.is_empty()).collect();
        cause = Some(
            format!(
            "{}\n({} of {} environments: helmfile could not render the stack, and no standing state finding explains \
             why{})\n{}",
            heads.join("\n"),
            named.len(),
            environments.len(),
            if words.is_empty() { "" } else { "; helmfile's words follow" },
            words.join("\n")
        )
            .trim_end()
            .to_string(),
        );
    } else if args.require_rendered {
        let missing: Vec<String> = environments
            .iter()
            .flat_map(|e| e.releases.iter().filter(|r| r.missing()).map(move |r| (e, r)))
            .map(|(e, r)| {
                format!(
                    "  environment {}: release {}/{}: {}",
                    e.name,
                    r.namespace,
                    r.name,
                    r.reason.as_deref().unwrap_or("-")
                )
            })
            .collect();
        if let Some((first, rest)) = missing.split_first() {
            // Cause first: the first release with its reason and the fix, then the others.
            cause = Some(format!(
                "--require-rendered: {entry}: {}: not validated; render it (--chart-mirror DIR holding \
                 <chart>-<version>.tgz that matches charts.lock.yaml, or online) or leave its environment out with \
                 --environment{}",
                first.trim(),
                if rest.is_empty() {
                    String::new()
                } else {
                    format!(
                        "\nthese installed releases were not rendered either:\n{}",
                        rest.join("\n")
                    )
                }
            ));
        }
    }
    sort_findings(&mut findings, &environments);
    if let Some(cause) = cause {
        return Err(Incomplete {
            report: Report { environments, findings },
            cause,
        }
        .into());
    }
    Ok((Report { environments, findings }, graphs, rendered_for))
}

/// Findings, environment reports, graphs, what is left to answer for, and the cluster each
/// environment was rendered for, of a stack's check.
type Checked = (Vec<Finding>, Vec<EnvReport>, Vec<Graph>, Vec<Need>, Vec<RenderedFor>);

/// Run the state rules and object rules of every rendered environment.
fn check_stack(
    stack: &Stack,
    renders: Vec<EnvRender>,
    policy: &Policy,
    now: time::OffsetDateTime,
    schemas: Option<&SchemaSet>,
) -> Result<Checked> {
    let mut findings = Vec::new();
    let mut envs = Vec::new();
    let mut graphs = Vec::new();
    let mut needs = Vec::new();
    let mut rendered = Vec::new();
    let mut texts: HashMap<String, std::sync::Arc<str>> = HashMap::new();
    for r in renders {
        let EnvRender {
            state,
            docs,
            status,
            render_error,
            failed,
            render_blame,
            rendered_for,
            twins: _,
        } = r;
        rendered.push(rendered_for);
        // What was not judged and must be answered for by a finding (see `run`).
        let env = state.name.clone();
        if let Some(err) = &render_error {
            let blamed: Vec<Option<String>> = match render_blame.is_empty() {
                true => vec![None],
                false => render_blame.into_iter().map(Some).collect(),
            };
            for release in blamed {
                needs.push(Need {
                    environment: env.clone(),
                    release,
                    message: err.clone(),
                });
            }
        }
        let mut refused: Vec<(String, String)> = state
            .releases
            .iter()
            .filter_map(|r| r.refused.clone().map(|why| (r.id(), why)))
            .collect();
        refused.dedup();
        for (release, message) in refused.into_iter().chain(failed) {
            needs.push(Need {
                environment: env.clone(),
                release: Some(release),
                message,
            });
        }
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
            routers_found: Default::default(),
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
    Ok((findings, envs, graphs, needs, rendered))
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
        None => crate::stack::loader::stack_dir(&args.file),
    };
    let start = if start.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        start
    };
    SchemaSet::load(policy, &start).map(Some)
}

/// The graph of `--manifests` objects: namespace-less objects go where kubectl would put them
/// (`namespace`, from `--namespace`, default `default`), scopes as for a stack. Public for the
/// fuzzer, which must judge inputs exactly as `check --manifests` does.
pub fn manifests_graph(mut docs: Vec<RenderedDoc>, namespace: &str, policy: &Policy) -> Graph {
    for d in &mut docs {
        d.default_namespace = Some(namespace.to_string());
    }
    build_graph("", docs, policy, None)
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
