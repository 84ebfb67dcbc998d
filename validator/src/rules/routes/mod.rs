//! Rule family: routes. Predicts, from rendered manifests alone, the Gateway API conditions a
//! controller would write (`Accepted`, `ResolvedRefs`) and whether the worker-facing contract
//! (gRPC 50071/TCP behind an HTTPS listener, QUIC 50072/UDP behind a UDP listener) is complete.
//!
//! - `gateway`: parentRef → Gateway listener attachment (NoMatchingParent, NotAllowedByListeners,
//!   NoMatchingListenerHostname), hostname matching, namespace selectors.
//! - `backend`: backendRef → Service resolution (BackendNotFound, RefNotPermitted), ReferenceGrants,
//!   listener certificateRefs.
//! - `version`: apiVersions served by a Gateway API release and channel.
//! - `worker`: the router's advertised dial addresses and the routes that carry them.

mod backend;
mod gateway;
mod version;
mod worker;

#[cfg(test)]
mod tests;

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use serde_json::Value;

pub(crate) const GW_GROUP: &str = "gateway.networking.k8s.io";
pub(crate) const ROUTE_KINDS: &[&str] = &["HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"];

pub static RULES: &[Rule] = &[
    Rule {
        id: "route-parent-resolves",
        family: "routes",
        severity: Severity::Error,
        summary: "a route would not be Accepted by its Gateway (NoMatchingParent, NotAllowedByListeners, \
                  NoMatchingListenerHostname), or a TLS listener's certificateRefs would not resolve",
        explain: include_str!("route-parent-resolves.md"),
        scope: Scope::Objects,
        check: check_parents,
    },
    Rule {
        id: "route-backend-resolves",
        family: "routes",
        severity: Severity::Error,
        summary: "a route would not have ResolvedRefs (BackendNotFound, RefNotPermitted); a backend port of the wrong \
                  protocol is a warning",
        explain: include_str!("route-backend-resolves.md"),
        scope: Scope::Objects,
        check: check_backends,
    },
    Rule {
        id: "worker-routes-complete",
        family: "routes",
        severity: Severity::Error,
        summary:
            "the router advertises an external gRPC or QUIC dial address that no Gateway listener + accepted route \
                  carries to its 50071/TCP or 50072/UDP",
        explain: include_str!("worker-routes-complete.md"),
        scope: Scope::Objects,
        check: check_worker,
    },
    Rule {
        id: "gateway-api-version",
        family: "routes",
        severity: Severity::Error,
        summary: "a route apiVersion is not served by the Gateway API version and channel declared in the policy",
        explain: include_str!("gateway-api-version.md"),
        scope: Scope::Objects,
        check: check_version,
    },
];

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// Namespace of a namespaced object (`default` when it has none, as kubectl would apply it).
pub(crate) fn ns_of(o: &Object) -> &str {
    o.namespace.as_deref().unwrap_or("default")
}

pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Routes the stack renders (Gateway API group, the five route kinds).
pub(crate) fn routes(graph: &Graph) -> impl Iterator<Item = &Object> {
    graph
        .objects
        .iter()
        .filter(|o| !o.prov.external && o.group() == GW_GROUP && ROUTE_KINDS.contains(&o.kind.as_str()))
}

/// A finding whose source line is found by following `path` (needles searched in order, each
/// after the previous hit) inside the object's own document of its template text; the object's
/// line when the first needle is not found.
pub(crate) fn finding_at(rule: &'static str, obj: &Object, path: &[String], msg: impl Into<String>) -> Finding {
    let mut f = Finding::object(rule, obj, msg);
    if let Some(src) = f.source.as_mut() {
        src.line = obj.line_of_path(path, line_matches);
    }
    f
}

/// `line` holds `needle` as a YAML key/value, in block or flow style (list dashes, braces and
/// quotes ignored); flags (`--x`) match anywhere in the line.
fn line_matches(line: &str, needle: &str) -> bool {
    if needle.starts_with("--") {
        return line.contains(needle);
    }
    let unquoted = line.replace(['"', '\''], "");
    unquoted.split([',', '{', '}', '[', ']']).any(|seg| {
        let seg = seg.trim_start();
        let seg = seg.strip_prefix("- ").unwrap_or(seg).trim_start();
        seg.strip_prefix(needle)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '#']))
    })
}

// ---------------------------------------------------------------------------------------------
// route-parent-resolves

fn check_parents(ctx: &Ctx) -> Vec<Finding> {
    const ID: &str = "route-parent-resolves";
    let mut out = Vec::new();
    for route in routes(ctx.graph) {
        let refs = gateway::parent_refs(route);
        if refs.is_empty() {
            out.push(
                finding_at(
                    ID,
                    route,
                    &["spec:".to_string()],
                    format!(
                        "{} would never be Accepted: it has no spec.parentRefs, so no Gateway attaches it and no \
                         parent status (Accepted) is ever written — in effect NoMatchingParent",
                        route.display()
                    ),
                )
                .with_help(
                    "Add spec.parentRefs naming the Gateway (and sectionName of the listener) the route is for.",
                ),
            );
            continue;
        }
        for pr in &refs {
            if let gateway::Attach::Rejected { reason, detail, help } = gateway::attach(ctx.graph, route, pr) {
                out.push(
                    finding_at(
                        ID,
                        route,
                        &pr.path(),
                        format!(
                            "{} would not be Accepted by Gateway {}/{}{}: Accepted=False {reason} — {detail}",
                            route.display(),
                            pr.namespace,
                            pr.name,
                            pr.qualifiers()
                        ),
                    )
                    .with_help(help),
                );
            }
        }
    }
    for gw in ctx.graph.of(GW_GROUP, "Gateway").filter(|g| !g.prov.external) {
        for p in backend::certificate_problems(ctx.graph, gw) {
            out.push(
                finding_at(
                    ID,
                    gw,
                    &p.path,
                    format!(
                        "{} listener `{}` would not be ready: ResolvedRefs=False {} — {}; routes attached to it get no \
                         TLS",
                        gw.display(),
                        p.listener,
                        p.reason,
                        p.detail
                    ),
                )
                .with_help(p.help),
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// route-backend-resolves

fn check_backends(ctx: &Ctx) -> Vec<Finding> {
    const ID: &str = "route-backend-resolves";
    let mut out = Vec::new();
    for route in routes(ctx.graph) {
        for b in backend::backend_refs(route) {
            let head = format!("{} would not have ResolvedRefs", route.display());
            match backend::resolve(ctx.graph, route, &b) {
                backend::Backend::RefNotPermitted { detail, help } => out.push(
                    finding_at(
                        ID,
                        route,
                        &b.path(),
                        format!("{head}: ResolvedRefs=False RefNotPermitted — {detail}"),
                    )
                    .with_help(help),
                ),
                backend::Backend::NotFound { detail, help } => out.push(
                    finding_at(
                        ID,
                        route,
                        &b.path(),
                        format!("{head}: ResolvedRefs=False BackendNotFound — {detail}"),
                    )
                    .with_help(help),
                ),
                backend::Backend::Resolved { port: Some(p), .. } => {
                    let proto = backend::port_protocol(p);
                    let wants_udp = route.kind == "UDPRoute";
                    if wants_udp != (proto == "UDP") {
                        let carried = if wants_udp { "UDP datagrams" } else { "TCP streams" };
                        out.push(
                            finding_at(
                                ID,
                                route,
                                &b.path(),
                                format!(
                                    "{}: {} is a {proto} Service port, but a {} carries {carried}; Gateway API leaves this \
                                     to the implementation and common ones reject it (Envoy Gateway: ResolvedRefs=False \
                                     PortNotFound), so traffic would not flow",
                                    route.display(),
                                    b.describe(),
                                    route.kind
                                ),
                            )
                            .with_severity(Severity::Warning)
                            .with_help(format!(
                                "Point the backendRef at the Service port with protocol {} (a Service may expose the \
                                 same number over TCP and UDP as two entries).",
                                if wants_udp { "UDP" } else { "TCP" }
                            )),
                        );
                    }
                }
                backend::Backend::Resolved { port: None, .. } | backend::Backend::NotJudged => {}
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// worker-routes-complete

fn check_worker(ctx: &Ctx) -> Vec<Finding> {
    worker::check(ctx.graph)
}

// ---------------------------------------------------------------------------------------------
// gateway-api-version

fn check_version(ctx: &Ctx) -> Vec<Finding> {
    let gw = &ctx.policy.settings.gateway_api;
    let (major, minor) = gw.minor();
    let minor = if major > 1 { version::NEWEST_MINOR } else { minor };
    let experimental = gw.channel.eq_ignore_ascii_case("experimental");
    let channel = if experimental { "experimental" } else { "standard" };
    let declared =
        format!("Gateway API v{major}.{minor} ({channel} channel, validator-policy.yaml settings.gatewayApi)");
    let mut out = Vec::new();
    for route in routes(ctx.graph) {
        let have = route.api_version.rsplit('/').next().unwrap_or("");
        let served = version::served(&route.kind, minor, experimental);
        if served.contains(&have) {
            continue;
        }
        let (msg, help) = if served.is_empty() {
            let other = version::served(&route.kind, minor, !experimental);
            let newest = version::served(&route.kind, version::NEWEST_MINOR, false);
            (
                format!(
                    "{} uses {}, but {} has no {} at all: the API server would refuse it (no matches for kind {})",
                    route.display(),
                    route.api_version,
                    declared,
                    route.kind,
                    route.kind
                ),
                if !other.is_empty() {
                    format!(
                        "Install the {} channel and declare it in settings.gatewayApi.channel (served there: {}), or \
                         target a Gateway API release whose standard channel serves {} (v1.{}: {}).",
                        if experimental { "standard" } else { "experimental" },
                        other.join(", "),
                        route.kind,
                        version::NEWEST_MINOR,
                        newest.join(", ")
                    )
                } else {
                    format!(
                        "Target a newer Gateway API release (v1.{}: {}).",
                        version::NEWEST_MINOR,
                        newest.join(", ")
                    )
                },
            )
        } else {
            (
                format!(
                    "{} uses {}, which {} does not serve (served: {}): the API server would refuse it",
                    route.display(),
                    route.api_version,
                    declared,
                    served.iter().map(|v| format!("{GW_GROUP}/{v}")).collect::<Vec<_>>().join(", ")
                ),
                format!(
                    "Set apiVersion: {GW_GROUP}/{} (make the apiVersion a chart value that follows the declared Gateway \
                     API version), or change settings.gatewayApi if the cluster runs a different release.",
                    served[0]
                ),
            )
        };
        out.push(finding_at("gateway-api-version", route, &["apiVersion:".to_string()], msg).with_help(help));
    }
    out
}
