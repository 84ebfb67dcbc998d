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

pub(crate) mod backend;
pub(crate) mod gateway;
mod version;
pub(crate) mod worker;

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
        explain: EXPLAIN_PARENT,
        scope: Scope::Objects,
        check: check_parents,
    },
    Rule {
        id: "route-backend-resolves",
        family: "routes",
        severity: Severity::Error,
        summary: "a route would not have ResolvedRefs (BackendNotFound, RefNotPermitted); a backend port of the wrong \
                  protocol is a warning",
        explain: EXPLAIN_BACKEND,
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
        explain: EXPLAIN_WORKER,
        scope: Scope::Objects,
        check: check_worker,
    },
    Rule {
        id: "gateway-api-version",
        family: "routes",
        severity: Severity::Error,
        summary: "a route apiVersion is not served by the Gateway API version and channel declared in the policy",
        explain: EXPLAIN_VERSION,
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

// ---------------------------------------------------------------------------------------------
// Documentation (printed by `explain`, `rules` and SARIF)

const EXPLAIN_PARENT: &str = r#"## What it does
Predicts the `Accepted` condition a Gateway controller would write for every HTTPRoute, GRPCRoute,
TLSRoute, TCPRoute and UDPRoute the stack renders, one parentRef at a time, using the Gateway API rules:

- parentRef defaults: `group: gateway.networking.k8s.io`, `kind: Gateway`, `namespace` = the route's.
  A Gateway that is neither rendered nor declared in `validator-policy.yaml` externals, or no listener
  matching `sectionName` (listener name) and `port` → `Accepted=False NoMatchingParent`. A route
  without any parentRef is reported too: nothing would ever attach it.
- listener protocol vs route kind (HTTPRoute/GRPCRoute → `HTTP`/`HTTPS`, TLSRoute → `TLS`,
  TCPRoute → `TCP`, UDPRoute → `UDP`), `allowedRoutes.kinds`, and `allowedRoutes.namespaces`
  (`from: Same` by default, `All`, `Selector` against the route namespace's labels; a namespace the
  stack does not render still carries `kubernetes.io/metadata.name`) → `NotAllowedByListeners`.
- hostnames: a listener hostname and the route's `spec.hostnames` must intersect (`*.example.com`
  matches one or more labels; no hostname on either side matches everything) →
  `NoMatchingListenerHostname`.

Gateways declared external in the policy are trusted as given there: their `spec.listeners` are
checked when declared; without listeners every parentRef to them is trusted.

It also checks the **Gateway listener** condition `ResolvedRefs`: a TLS-terminating listener (HTTPS,
or TLS with `mode: Terminate`) must reference, in `tls.certificateRefs`, a Secret that a cert-manager
Certificate in the stack writes (`spec.secretName`), a Secret the stack renders, or one declared
external — in the Gateway's namespace, or granted by a ReferenceGrant there (`to: kind Secret`).
Otherwise the Gateway gets `ResolvedRefs=False InvalidCertificateRef` or `RefNotPermitted`.

## Why it matters
A route that is not Accepted carries no traffic, and nothing fails at `helm install` time: the
reference deployments found out only on a live cluster, when workers could not register. A listener
whose certificate does not resolve is not programmed, so every route on it is dead.

## How to fix
Make `parentRefs[].name/namespace/sectionName` name a real listener; give the listener the protocol
the route kind needs; admit the route's namespace (`allowedRoutes.namespaces.from: All` or a
`Selector`) and kind; make route and listener hostnames intersect. For certificates, issue a
Certificate into the Gateway's namespace with `spec.secretName` equal to the certificateRef name, or
add a ReferenceGrant in the Secret's namespace. Declare Gateways and Secrets that exist outside the
stack in `validator-policy.yaml` externals.

## Example
```yaml
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: worker-grpc, namespace: nvcf}
spec:
  parentRefs:
    - {name: nvcf-gateway, namespace: nvcf-gateway, sectionName: worker-grpc}
```
with a listener `worker-grpc` that keeps the default `allowedRoutes.namespaces.from: Same` gives
`GRPCRoute nvcf/worker-grpc would not be Accepted … Accepted=False NotAllowedByListeners — listener
`worker-grpc` of Gateway nvcf-gateway/nvcf-gateway allows routes from namespace nvcf-gateway only`.
Fix: `allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels:
{kubernetes.io/metadata.name: nvcf}}}}`.
"#;

const EXPLAIN_BACKEND: &str = r#"## What it does
Predicts the route condition `ResolvedRefs` for every backendRef to a core Service (`group: ""`,
`kind: Service`, the defaults):

- the Service must be rendered by the stack or declared external, and `port` must be set and equal
  one of its `spec.ports[].port` (not the targetPort) → otherwise `ResolvedRefs=False BackendNotFound`;
- a backendRef into another namespace needs a ReferenceGrant in the Service's namespace with
  `from: {group: gateway.networking.k8s.io, kind: <route kind>, namespace: <route namespace>}` and
  `to: {group: "", kind: Service}` (optionally the Service name) → otherwise `RefNotPermitted`;
- protocol: a UDPRoute whose backend port is not `protocol: UDP`, or a TCP-based route
  (TCPRoute, GRPCRoute, HTTPRoute, TLSRoute) whose backend port is UDP, is reported as a
  **warning**. Gateway API leaves this to implementations; common ones reject it (Envoy Gateway:
  `PortNotFound`).

Backends of other kinds (ServiceImport, implementation-specific) are not judged.

## Why it matters
A route with an unresolved backend is Accepted but answers with errors (HTTP 500, refused
connections or dropped datagrams). Nothing fails at install time.

## How to fix
Use the Service's name, namespace and `spec.ports[].port`. Keep routes in the Service's namespace,
or add the ReferenceGrant in the Service's namespace. For QUIC, reference the Service port with
`protocol: UDP` (a Service can expose 50072 over TCP and UDP as two entries).

## Example
```yaml
kind: UDPRoute
spec:
  rules:
    - backendRefs: [{name: request-router, port: 50071}]
```
where `request-router` exposes 50071 over TCP only: warning `… is a TCP Service port, but a UDPRoute
carries UDP datagrams … (Envoy Gateway: ResolvedRefs=False PortNotFound)`. Fix: `port: 50072`
(the UDP port).
"#;

const EXPLAIN_WORKER: &str = r#"## What it does
Finds the router (a StatefulSet or Deployment whose container args carry `--grpc-pylon-dial-addr`
or `--reverse-tunnel-pylon-dial-addr`). For each dial address whose host is **outside the cluster**
(not `*.svc`, `*.svc.cluster.local`, `*.cluster.local`, a single-label name, loopback, or the
in-cluster name of a rendered Service) it requires a Gateway (rendered, or external with declared
listeners) with:

- gRPC (`https://host:port`, default port 443): an **HTTPS** listener on that port whose hostname is
  absent or matches the dial host (TLS ends at the listener), and a GRPCRoute or HTTPRoute that
  would be Accepted on that listener (hostnames absent or matching the dial host) with a backendRef
  that resolves to a Service selecting the router's pods on a TCP port delivering to the router's
  `--listen-addr` port (50071);
- QUIC (`host:port`): a **UDP** listener on that port and a UDPRoute Accepted there whose backendRef
  resolves to a Service port with `protocol: UDP` delivering to `--reverse-tunnel-listen-addr` (50072).

A plain TCP listener with a TCPRoute does not count for gRPC: it would carry worker gRPC in
cleartext (that is `plaintext-endpoint`'s finding). In-cluster workers (the `default` environment)
need no routes and are not checked. DNS (that the dial host resolves to the Gateway) is not checked.

## Why it matters
In split-cluster installs the workers live in another cluster. The reference deployments shipped
without the worker routes and found out only on a live cluster: workers could not register (gRPC)
or open the reverse tunnel (QUIC).

## How to fix
Enable the worker routes (request-router `workerRoutes.grpc` / `workerRoutes.quic`) and the matching
Gateway listeners (gateway-routes): an HTTPS listener with the gRPC dial host and its certificate,
a GRPCRoute to the router Service's 50071 (h2c), a UDP listener and a UDPRoute to 50072/UDP.

## Example
Router args `--grpc-pylon-dial-addr=https://grpc.nvcf.example.com:443` and
`--reverse-tunnel-pylon-dial-addr=quic.nvcf.example.com:50072` with a Gateway that only has a
UDP listener on 50072 and a UDPRoute: `StatefulSet nvcf/request-router advertises the external gRPC
dial address … no Gateway listener (rendered or declared external) listens on port 443`.
"#;

const EXPLAIN_VERSION: &str = r#"## What it does
Checks that each route's apiVersion is served by the Gateway API release and channel declared in
`validator-policy.yaml` (`settings.gatewayApi.version`, default `v1.6`; `channel`, default
`standard`). Served versions, from the upstream CRDs and release notes:

| kind | standard | experimental only |
|---|---|---|
| HTTPRoute | `v1`, `v1beta1` | — |
| GRPCRoute | `v1` since v1.1 | `v1alpha2` up to v1.1 |
| TLSRoute | `v1` since v1.5 | `v1alpha2` up to v1.5, `v1alpha3` in v1.4–v1.5 |
| TCPRoute, UDPRoute | `v1` since v1.6 | `v1alpha2` (deprecated in v1.6) |

On v1.6 standard, `v1alpha2` TCPRoute/UDPRoute is present in the CRD but not served; up to v1.5
TCPRoute/UDPRoute exist only in the experimental channel. Releases newer than v1.6 are judged like
v1.6.

## Why it matters
An apiVersion the cluster's CRDs do not serve makes `helmfile apply` fail halfway (`no matches for
kind`), or silently targets CRDs that the installed controller does not watch.

## How to fix
Make route apiVersions chart values derived from the declared Gateway API version (the charts'
`gatewayApi.version`/`channel`), and keep them in step with `settings.gatewayApi` in the policy.

## Example
`apiVersion: gateway.networking.k8s.io/v1alpha2` + `kind: UDPRoute` with the default policy (v1.6
standard): `UDPRoute nvcf/worker-quic uses gateway.networking.k8s.io/v1alpha2, which Gateway API v1.6
(standard channel …) does not serve (served: gateway.networking.k8s.io/v1)`. Fix:
`apiVersion: gateway.networking.k8s.io/v1`.
"#;
