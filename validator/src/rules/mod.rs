//! The rule registry. One folder per rule family: its `mod.rs` holds the family's `RULES` list and
//! the helpers its rules share; each rule has its own file (the pure check function over the stack
//! model and the object graph, and its unit tests) and its explain text beside it as
//! `<rule-id>.md` (`include_str!`), the same text `explain`, `rules` and SARIF print. Each rule is
//! a static `Rule` with its id, family, default severity, summary, explain text, scope and check.
//!
//! Adding a rule to a family touches the rule file, its markdown, the family's `RULES`, its
//! fixtures and snapshots; adding a family adds its folder and one line to `registry()`.

pub mod identity;
pub mod insecure;
pub mod ownership;
pub mod pinning;
pub mod pki;
pub mod policy;
pub mod render;
pub mod routes;
pub mod schema;
pub mod secrets;

use crate::finding::{Finding, Severity};
use crate::graph::Graph;
use crate::policy::Policy;
use crate::render::ReleaseStatus;
use crate::router::RouterWorkload;
use crate::stack::{EnvState, Stack};
use std::sync::OnceLock;

/// What a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The helmfile state (releases, needs, chart references, state values). Runs before
    /// rendering, and is skipped for `--manifests` input (no state).
    State,
    /// Rendered objects. Runs on every environment's graph, and on `--manifests` input.
    Objects,
    /// Both (e.g. insecure switches in container args *and* in state values, which charts refuse
    /// at render time): runs in both passes, and `run` hands it only the state in the state pass
    /// (empty graph) and only the graph in the object pass (no state), so each part reports once
    /// and the state part still reports when rendering failed.
    StateAndObjects,
}

pub struct Rule {
    /// Contract id (kebab-case), e.g. `san-covers-advertised-name`.
    pub id: &'static str,
    /// Family, e.g. `ownership`, `pinning`, `insecure transport`, `pki`, `routes`.
    pub family: &'static str,
    pub severity: Severity,
    /// One line: what the rule refuses.
    pub summary: &'static str,
    /// Markdown with the sections `What it does`, `Why it matters`, `How to fix`, `Example`.
    pub explain: &'static str,
    pub scope: Scope,
    pub check: fn(&Ctx) -> Vec<Finding>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("id", &self.id).finish()
    }
}

/// Everything a rule may read. Rules are pure: no I/O, no clock except `now`.
pub struct Ctx<'a> {
    pub environment: &'a str,
    /// The whole stack (all environments), `None` for `--manifests` input.
    pub stack: Option<&'a Stack>,
    /// This environment's state, `None` for `--manifests` input.
    pub state: Option<&'a EnvState>,
    /// Rendered objects of this environment plus the policy's externals (`prov.external`).
    pub graph: &'a Graph,
    pub policy: &'a Policy,
    /// Per-release render status of this environment (rendered or why not; mirror checks).
    pub status: &'a [ReleaseStatus],
    /// The moment certificates are judged at (expiry).
    pub now: time::OffsetDateTime,
    /// Kubernetes and CRD schemas (`schema-valid`); `None` when schema validation is off.
    pub schemas: Option<&'a crate::schema::SchemaSet>,
    /// The graph's router containers, found on first use by [`Ctx::routers`] (rules of four
    /// families read them; finding them reads every container's flags). Start it empty:
    /// `Default::default()`.
    pub routers_found: OnceLock<Vec<RouterWorkload<'a>>>,
}

impl<'a> Ctx<'a> {
    /// `router::routers` of this context's graph, found once per context.
    pub fn routers(&self) -> &[RouterWorkload<'a>] {
        self.routers_found.get_or_init(|| crate::router::routers(self.graph))
    }

    /// This context over `graph` with `stack` and `state` (a rule of both scopes sees one at a
    /// time): the routers already found are kept when the graph is the same.
    fn narrowed<'b>(&'b self, graph: &'b Graph, stack: Option<&'b Stack>, state: Option<&'b EnvState>) -> Ctx<'b> {
        let routers_found = OnceLock::new();
        if std::ptr::eq(graph, self.graph) {
            let _ = routers_found.set(self.routers().to_vec());
        }
        Ctx {
            environment: self.environment,
            stack,
            state,
            graph,
            policy: self.policy,
            status: self.status,
            now: self.now,
            schemas: self.schemas,
            routers_found,
        }
    }

    /// Whether release `r` has rendered objects in this environment (its status says so, or
    /// objects carry it): rules that judge a release's state values do so only when it has not.
    pub fn release_rendered(&self, r: &crate::stack::Release) -> bool {
        let id = r.id();
        self.status.iter().any(|s| s.id() == id && s.rendered)
            || self
                .graph
                .objects
                .iter()
                .any(|o| o.prov.release.as_deref() == Some(id.as_str()))
    }
}

/// Every node of a value tree, depth first, with its path from `path` (object keys, `[i]` for
/// array items; [`show_path`] prints it), at most `max_depth` levels below the root. `visit`
/// returns whether to look inside the node. The one walk of the rules that search values.
pub fn walk_values<'v>(
    v: &'v serde_json::Value,
    mut path: Vec<String>,
    max_depth: usize,
    visit: &mut dyn FnMut(&[String], &'v serde_json::Value) -> bool,
) {
    fn go<'v>(
        v: &'v serde_json::Value,
        path: &mut Vec<String>,
        depth: usize,
        max_depth: usize,
        visit: &mut dyn FnMut(&[String], &'v serde_json::Value) -> bool,
    ) {
        if depth > max_depth || !visit(path, v) {
            return;
        }
        match v {
            serde_json::Value::Object(m) => {
                for (k, c) in m {
                    path.push(k.clone());
                    go(c, path, depth + 1, max_depth, visit);
                    path.pop();
                }
            }
            serde_json::Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    path.push(format!("[{i}]"));
                    go(c, path, depth + 1, max_depth, visit);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    go(v, &mut path, 0, max_depth, visit);
}

/// `a.b[0].c` for messages, from a [`walk_values`] path.
pub fn show_path(path: &[String]) -> String {
    let mut s = String::new();
    for p in path {
        if !p.starts_with('[') && !s.is_empty() {
            s.push('.');
        }
        s.push_str(p);
    }
    s
}

/// A pod spec patch an object holds as text that the gate cannot read (`Object::spec_patches`):
/// whatever it sets (`sets`: images, arguments, environment) is merged into the pod and cannot be
/// judged, so it is a finding of each rule that would judge it (fail closed).
pub(crate) fn unreadable_spec_patches(ctx: &Ctx, rule: &'static str, sets: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for obj in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        for (ptr, why) in obj.unreadable_spec_patches() {
            let field = ptr.rsplit('/').next().unwrap_or(ptr);
            out.push(
                Finding::object_at(
                    rule,
                    obj,
                    field,
                    format!(
                        "{}: the pod spec patch at `{ptr}` cannot be read ({why}); the {sets} it sets cannot be judged",
                        obj.display()
                    ),
                )
                .with_help("write the patch as a YAML or JSON mapping the render shows (Argo expressions only inside values), or set the fields in the template itself"),
            );
        }
    }
    out
}

/// Every rule, in catalog order.
pub fn registry() -> Vec<&'static Rule> {
    catalog().to_vec()
}

/// The catalog, gathered once (the sink and the reports look a rule up for every finding).
fn catalog() -> &'static [&'static Rule] {
    static CATALOG: std::sync::OnceLock<Vec<&'static Rule>> = std::sync::OnceLock::new();
    CATALOG.get_or_init(|| {
        ownership::RULES
            .iter()
            .chain(pinning::RULES)
            .chain(insecure::RULES)
            .chain(pki::RULES)
            .chain(routes::RULES)
            .chain(identity::RULES)
            .chain(render::RULES)
            .chain(secrets::RULES)
            .chain(schema::RULES)
            .chain(policy::RULES)
            .collect()
    })
}

pub fn find(id: &str) -> Option<&'static Rule> {
    catalog().iter().copied().find(|r| r.id == id)
}

/// The family of a rule id, `None` when no rule has it: what `Policy::parse` is given to know
/// the rule ids (the policy sits below the rules and does not import them).
pub fn family_of(id: &str) -> Option<&'static str> {
    find(id).map(|r| r.family)
}

/// The fixture naming convention, shared by every fixture runner (unit and CLI): a fixture file
/// stem or stack directory named `fires-<rule-id>[-<case>]` must make that rule report, one named
/// `silent-<rule-id>[-<case>]` must not. Returns whether it fires and the rule (the longest
/// registered id that follows the prefix), or `None` when the name follows no registered rule.
pub fn fixture_rule(name: &str) -> Option<(bool, &'static Rule)> {
    let (fires, rest) = match (name.strip_prefix("fires-"), name.strip_prefix("silent-")) {
        (Some(r), _) => (true, r),
        (_, Some(r)) => (false, r),
        _ => return None,
    };
    registry()
        .into_iter()
        .filter(|r| rest == r.id || rest.strip_prefix(r.id).is_some_and(|c| c.starts_with('-')))
        .max_by_key(|r| r.id.len())
        .map(|r| (fires, r))
}

/// Run every rule of `scope` and return findings tagged with the rule's environment.
pub fn run(ctx: &Ctx, scope: Scope) -> Vec<Finding> {
    let mut out = Vec::new();
    let empty = Graph::new(ctx.environment, Vec::new());
    for rule in registry()
        .into_iter()
        .filter(|r| r.scope == scope || r.scope == Scope::StateAndObjects)
    {
        let found = match (rule.scope, scope) {
            (Scope::StateAndObjects, Scope::State) => (rule.check)(&ctx.narrowed(&empty, ctx.stack, ctx.state)),
            (Scope::StateAndObjects, _) => (rule.check)(&ctx.narrowed(ctx.graph, None, None)),
            _ => (rule.check)(ctx),
        };
        for mut f in found {
            debug_assert_eq!(f.rule, rule.id, "rule {} reported a finding as {}", rule.id, f.rule);
            if f.environment.is_none() && !ctx.environment.is_empty() {
                f.environment = Some(ctx.environment.to_string());
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod admission_tests;
#[cfg(test)]
mod meaning_tests;
#[cfg(test)]
mod shapes_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case_and_documented() {
        let mut seen = std::collections::BTreeSet::new();
        for r in registry() {
            assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
            assert!(
                r.id.split('-')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())),
                "{}",
                r.id
            );
            for section in ["What it does", "Why it matters", "How to fix", "Example"] {
                assert!(
                    r.explain.contains(section),
                    "rule {} explain text lacks section `{section}`",
                    r.id
                );
            }
        }
    }
}
