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
//!
//! One file per rule (`route_parent_resolves`, `route_backend_resolves`, `gateway_api_version`;
//! `worker-routes-complete` is `worker`) with its explain text beside it as `<rule-id>.md`.

pub(crate) mod backend;
pub(crate) mod gateway;
mod gateway_api_version;
mod route_backend_resolves;
mod route_parent_resolves;
mod version;
pub(crate) mod worker;

#[cfg(test)]
mod parent_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod worker_tests;

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
        check: route_parent_resolves::check_parents,
    },
    Rule {
        id: "route-backend-resolves",
        family: "routes",
        severity: Severity::Error,
        summary: "a route would not have ResolvedRefs (BackendNotFound, RefNotPermitted); a backend port of the wrong \
                  protocol is a warning",
        explain: include_str!("route-backend-resolves.md"),
        scope: Scope::Objects,
        check: route_backend_resolves::check_backends,
    },
    Rule {
        id: "worker-routes-complete",
        family: "routes",
        severity: Severity::Error,
        summary:
            "the router advertises an external gRPC or QUIC dial address that no Gateway listener + accepted route \
                  carries to its gRPC/QUIC listen ports (from --listen-addr/--reverse-tunnel-listen-addr)",
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
        check: gateway_api_version::check_version,
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
// worker-routes-complete

fn check_worker(ctx: &Ctx) -> Vec<Finding> {
    worker::check(ctx.graph, ctx.routers())
}
