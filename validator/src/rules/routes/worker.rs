//! The worker-facing contract: when the router advertises dial addresses outside the cluster, each
//! needs a Gateway listener on its port with an accepted route that reaches the router.

use super::backend::{backend_refs, port_protocol, resolve, Backend};
use super::gateway::{attach, listeners, parent_refs, pattern_matches, route_hostnames, Attach, Listener};
use super::{finding_at, ns_of, routes, str_of, GW_GROUP};
use crate::finding::Finding;
use crate::graph::{Graph, Object};
use crate::router::{self, RouterWorkload};
use serde_json::Value;

/// One of the two worker legs.
struct Leg {
    label: &'static str,
    dial_flag: &'static str,
    listen_flag: &'static str,
    default_listen_port: u64,
    listener_protocol: &'static str,
    route_kinds: &'static [&'static str],
    service_protocol: &'static str,
    /// gRPC: the listener (and route) hostnames must match the dial host (SNI / :authority).
    check_host: bool,
}

const GRPC: Leg = Leg {
    label: "gRPC",
    dial_flag: router::GRPC_PYLON_DIAL_ADDR,
    listen_flag: router::LISTEN_ADDR,
    default_listen_port: 50071,
    listener_protocol: "HTTPS",
    route_kinds: &["GRPCRoute", "HTTPRoute"],
    service_protocol: "TCP",
    check_host: true,
};

const QUIC: Leg = Leg {
    label: "QUIC",
    dial_flag: router::REVERSE_TUNNEL_PYLON_DIAL_ADDR,
    listen_flag: router::REVERSE_TUNNEL_LISTEN_ADDR,
    default_listen_port: 50072,
    listener_protocol: "UDP",
    route_kinds: &["UDPRoute"],
    service_protocol: "UDP",
    check_host: false,
};

/// What this rule asks of a router container (`crate::router`), beside its flags.
impl RouterWorkload<'_> {
    fn listen_port(&self, leg: &Leg) -> u64 {
        self.flag(leg.listen_flag)
            .and_then(|a| parse_addr(a).port)
            .map(u64::from)
            .unwrap_or(leg.default_listen_port)
    }

    /// The Service port `p` of `svc` delivers to the router's `port`/`protocol`.
    fn reached_by(&self, graph: &Graph, svc: &Object, p: &Value, port: u64, protocol: &str) -> bool {
        if ns_of(svc) != ns_of(self.obj) || port_protocol(p) != protocol {
            return false;
        }
        // Some pod of the workload (a per-pod Service selects one by a label its controller sets).
        // The first ordinals suffice: per-pod labels differ only in the ordinal.
        let count = router::pod_count(graph, self.obj).clamp(1, router::MAX_REPLICAS_CHECKED);
        let selects = match svc.at("/spec/selector").and_then(Value::as_object) {
            Some(sel) if !sel.is_empty() => (0..count).any(|i| {
                let labels = router::pod_labels(self.obj, i);
                sel.iter().all(|(k, v)| labels.get(k) == Some(v))
            }),
            _ => false,
        };
        if !selects {
            return false;
        }
        match p.get("targetPort").or_else(|| p.get("port")) {
            Some(Value::Number(n)) => n.as_u64() == Some(port),
            Some(Value::String(name)) => match name.parse::<u64>() {
                Ok(n) => n == port,
                Err(_) => self.container.get("ports").and_then(Value::as_array).is_some_and(|ps| {
                    ps.iter().any(|cp| {
                        str_of(cp, "name") == Some(name.as_str())
                            && cp.get("containerPort").and_then(Value::as_u64) == Some(port)
                    })
                }),
            },
            _ => false,
        }
    }

    /// A Service (and its port) that reaches the router's `port`/`protocol`, for help texts.
    fn service_for<'g>(&self, graph: &'g Graph, port: u64, protocol: &str) -> Option<(&'g Object, u64)> {
        graph.of("", "Service").find_map(|s| {
            let ps = s.at("/spec/ports")?.as_array()?;
            let p = ps.iter().find(|p| self.reached_by(graph, s, p, port, protocol))?;
            Some((s, p.get("port")?.as_u64()?))
        })
    }
}

/// The routers this rule judges: the app containers (`containers`, not init or ephemeral ones) of
/// StatefulSets, Deployments and DaemonSets, the kinds whose pod labels a Service selects at
/// `spec.template.metadata.labels`. Containers without a dial flag yield no leg in `check`.
fn routers<'r, 'g>(all: &'r [RouterWorkload<'g>]) -> impl Iterator<Item = &'r RouterWorkload<'g>> {
    all.iter()
        .filter(|r| matches!(r.obj.kind.as_str(), "StatefulSet" | "Deployment" | "DaemonSet") && r.list == "containers")
}

/// A dial or listen address: `[scheme://]host[:port][/path]`.
#[derive(Debug, PartialEq, Eq)]
pub struct Addr {
    pub scheme: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

pub fn parse_addr(raw: &str) -> Addr {
    let raw = raw.trim();
    let (scheme, rest) = match raw.split_once("://") {
        Some((s, r)) => (Some(s.to_ascii_lowercase()), r),
        None => (None, raw),
    };
    let authority = rest.split('/').next().unwrap_or("");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (v6, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, p.parse().ok()),
            _ => (authority, None),
        }
    };
    let port = port.or(match scheme.as_deref() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    });
    Addr {
        scheme,
        host: host.trim_end_matches('.').to_ascii_lowercase(),
        port,
    }
}

/// Workers inside the cluster reach this host without a Gateway: cluster DNS names, single-label
/// names, loopback, or the in-cluster name of a Service of the graph.
pub fn in_cluster(graph: &Graph, host: &str) -> bool {
    if host.is_empty() || crate::meaning::host::is_loopback(host) {
        return true;
    }
    if crate::meaning::host::ip(host).is_some() {
        return false;
    }
    if !host.contains('.')
        || [".svc", ".svc.cluster.local", ".cluster.local"]
            .iter()
            .any(|s| host.ends_with(s))
    {
        return true;
    }
    graph.of("", "Service").any(|s| {
        let ns = ns_of(s);
        host == format!("{}.{ns}", s.name) || host.starts_with(&format!("{}.{ns}.svc.", s.name))
    })
}

/// The check over `graph` and its router containers (`router::routers`).
pub fn check(graph: &Graph, all: &[RouterWorkload<'_>]) -> Vec<Finding> {
    let mut out = Vec::new();
    for router in routers(all) {
        for leg in [&GRPC, &QUIC] {
            if let Some(raw) = router.flag(leg.dial_flag) {
                out.extend(check_leg(graph, router, leg, raw));
            }
        }
    }
    out
}

fn check_leg(graph: &Graph, router: &RouterWorkload<'_>, leg: &Leg, raw: &str) -> Option<Finding> {
    let dial = parse_addr(raw);
    if in_cluster(graph, &dial.host) {
        return None;
    }
    let listen = router.listen_port(leg);
    let target = format!("{listen}/{}", leg.service_protocol);
    let head = format!(
        "{} advertises the external {} dial address `{raw}` ({}), but workers outside the cluster could not reach \
         the router's {target}",
        router.obj.display(),
        leg.label,
        leg.dial_flag
    );
    let path = [leg.dial_flag.to_string()];
    let Some(port) = dial.port.map(u64::from) else {
        return Some(
            finding_at(
                "worker-routes-complete",
                router.obj,
                &path,
                format!("{head}: the address has no port"),
            )
            .with_help(format!("Write the {} dial address as host:port.", leg.label)),
        );
    };

    let mut reasons = Vec::new();
    let mut on_port = false;
    for gw in graph.of(GW_GROUP, "Gateway") {
        let Some(ls) = listeners(gw) else {
            reasons.push(format!(
                "Gateway {}/{} is declared external without spec.listeners (declare its listeners in \
                 validator-policy.yaml so the contract can be checked)",
                ns_of(gw),
                gw.name
            ));
            continue;
        };
        for l in ls.iter().filter(|l| l.port == Some(port)) {
            on_port = true;
            if l.protocol != leg.listener_protocol {
                reasons.push(if leg.check_host && l.protocol == "TCP" {
                    format!(
                        "{} is a plain TCP listener: a TCPRoute there would carry worker gRPC in cleartext and does not \
                         count (TLS must end at an HTTPS listener)",
                        l.describe(gw)
                    )
                } else {
                    format!("{} has protocol {}, not {}", l.describe(gw), l.protocol, leg.listener_protocol)
                });
                continue;
            }
            if leg.check_host {
                if let Some(h) = l.hostname.filter(|h| !pattern_matches(h, &dial.host)) {
                    reasons.push(format!(
                        "{} has hostname {h}, which does not match {}",
                        l.describe(gw),
                        dial.host
                    ));
                    continue;
                }
            }
            match carrying_route(graph, router, leg, gw, l, &dial.host, listen) {
                Ok(()) => return None,
                Err(why) => reasons.push(why),
            }
        }
    }
    if !on_port {
        reasons.insert(
            0,
            format!("no Gateway listener (rendered or declared external) listens on port {port}"),
        );
    }
    let svc = router.service_for(graph, listen, leg.service_protocol).map_or_else(
        || format!("<router Service> port for {target}"),
        |(s, p)| format!("Service {}/{} port {p}", ns_of(s), s.name),
    );
    let help = if leg.check_host {
        format!(
            "Workers need an HTTPS listener on port {port} whose hostname is unset or matches {} (TLS terminated there, \
             tls.certificateRefs to a Certificate covering it) and a GRPCRoute Accepted on it (hostnames unset or \
             [{}, <advertised-name pattern>]) with a backendRef to {svc} (h2c, appProtocol kubernetes.io/h2c). Workers \
             send the pod's advertised name as :authority, so the route's hostnames intersected with the listener's \
             must accept every advertised name too (e.g. listener *.workers.<domain>, route hostnames [{}, \
             *.router.workers.<domain>]). In this stack: request-router workerRoutes.grpc and the gateway-routes \
             listeners.",
            dial.host, dial.host, dial.host
        )
    } else {
        format!(
            "Workers need a UDP listener on port {port} and a UDPRoute Accepted on it with a backendRef to {svc} (UDP). \
             In this stack: request-router workerRoutes.quic and the gateway-routes listeners."
        )
    };
    Some(
        finding_at(
            "worker-routes-complete",
            router.obj,
            &path,
            format!("{head}: {}", reasons.join("; ")),
        )
        .with_help(help),
    )
}

/// Gateway API: the hostnames a route matches requests against on listener `l` are the
/// intersection of its `hostnames` with the listener's hostname (either side unset: the other;
/// both unset: any host). `None` stands for "any host".
pub(crate) fn effective_hostnames(l: &Listener<'_>, route: &[&str]) -> Option<Vec<String>> {
    match (l.match_hostname().filter(|h| !h.is_empty()), route.is_empty()) {
        (None, true) => None,
        (Some(lh), true) => Some(vec![lh.to_ascii_lowercase()]),
        (None, false) => Some(route.iter().map(|h| h.to_ascii_lowercase()).collect()),
        (Some(lh), false) => Some(
            route
                .iter()
                .filter_map(|r| crate::pki::names::gateway_intersection(lh, r))
                .collect(),
        ),
    }
}

/// The first advertised name no route Accepted on listener `l` of `gw` (of the leg's kinds, reaching
/// the router) would route as `:authority`, as a reason; `None` when every advertised name is
/// routed (or none is advertised). One route may carry the dial host and another each pod's name.
fn unroutable_authority(
    graph: &Graph,
    router: &RouterWorkload<'_>,
    leg: &Leg,
    gw: &Object,
    l: &Listener<'_>,
    listen: u64,
) -> Option<String> {
    let names = router::advertised_names(graph, router);
    if names.is_empty() {
        return None;
    }
    let mut effective: Vec<String> = Vec::new();
    for route in routes(graph).filter(|r| leg.route_kinds.contains(&r.kind.as_str())) {
        for pr in parent_refs(route) {
            if !(pr.is_gateway() && pr.namespace == ns_of(gw) && pr.name == gw.name) {
                continue;
            }
            let Attach::Accepted { listeners, .. } = attach(graph, route, &pr) else {
                continue;
            };
            if !listeners.iter().any(|x| x.name == l.name) {
                continue;
            }
            let reaches = backend_refs(route).iter().any(|b| {
                matches!(resolve(graph, route, b), Backend::Resolved { service, port: Some(p) }
                    if router.reached_by(graph, service, p, listen, leg.service_protocol))
            });
            if !reaches {
                continue;
            }
            match effective_hostnames(l, &route_hostnames(route)) {
                None => return None,
                Some(hs) => effective.extend(hs),
            }
        }
    }
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !effective.iter().any(|e| pattern_matches(e, n)))
        .collect();
    let first = missing.first()?;
    Some(format!(
        "the effective hostnames of the routes on listener `{}` that reach the router [{}] (route hostnames \
         intersected with the listener's) do not accept the advertised name {first}{} as :authority, so the Gateway \
         answers 404 for it",
        l.name,
        effective.join(", "),
        if missing.len() > 1 {
            format!(" (and {} more)", missing.len() - 1)
        } else {
            String::new()
        }
    ))
}

/// A route of the leg's kinds is Accepted on listener `l` of `gw` and reaches the router.
fn carrying_route(
    graph: &Graph,
    router: &RouterWorkload<'_>,
    leg: &Leg,
    gw: &Object,
    l: &Listener<'_>,
    host: &str,
    listen: u64,
) -> Result<(), String> {
    let mut why = Vec::new();
    for route in routes(graph).filter(|r| leg.route_kinds.contains(&r.kind.as_str())) {
        for pr in parent_refs(route) {
            if !(pr.is_gateway() && pr.namespace == ns_of(gw) && pr.name == gw.name) {
                continue;
            }
            match attach(graph, route, &pr) {
                Attach::Accepted { listeners, .. } if listeners.iter().any(|x| x.name == l.name) => {
                    let hosts = route_hostnames(route);
                    if leg.check_host && !hosts.is_empty() && !hosts.iter().any(|h| pattern_matches(h, host)) {
                        why.push(format!(
                            "{} is attached but its hostnames [{}] do not match {host}",
                            route.display(),
                            hosts.join(", ")
                        ));
                        continue;
                    }
                    let mut misses = Vec::new();
                    for b in backend_refs(route) {
                        match resolve(graph, route, &b) {
                            Backend::Resolved { service, port: Some(p) } => {
                                if router.reached_by(graph, service, p, listen, leg.service_protocol) {
                                    if leg.check_host {
                                        if let Some(miss) = unroutable_authority(graph, router, leg, gw, l, listen) {
                                            return Err(format!(
                                                "{}: {} is attached but {miss}",
                                                l.describe(gw),
                                                route.display()
                                            ));
                                        }
                                    }
                                    return Ok(());
                                }
                                misses.push(format!(
                                    "{} is {}/{} of a Service that does not deliver to the router's {listen}/{}",
                                    b.describe(),
                                    p.get("port").and_then(Value::as_u64).unwrap_or(0),
                                    port_protocol(p),
                                    leg.service_protocol
                                ));
                            }
                            Backend::Resolved { port: None, .. } => misses.push(format!(
                                "{} names an external Service declared without ports",
                                b.describe()
                            )),
                            Backend::RefNotPermitted { .. } => {
                                misses.push(format!("{} is not permitted (RefNotPermitted)", b.describe()))
                            }
                            Backend::NotFound { .. } => {
                                misses.push(format!("{} does not resolve (BackendNotFound)", b.describe()))
                            }
                            Backend::NotJudged => misses.push(format!("{} is not a Service", b.describe())),
                        }
                    }
                    if misses.is_empty() {
                        misses.push("it has no backendRefs".to_string());
                    }
                    why.push(format!("{} is attached but {}", route.display(), misses.join(", ")));
                }
                Attach::Rejected { reason, .. } if pr.section.is_none_or(|s| s == l.name) => {
                    why.push(format!(
                        "{} targets it but would not be Accepted ({reason})",
                        route.display()
                    ));
                }
                _ => {}
            }
        }
    }
    if why.is_empty() {
        why.push(format!("no {} is attached to it", leg.route_kinds.join(" or ")));
    }
    Err(format!("{}: {}", l.describe(gw), why.join("; ")))
}
