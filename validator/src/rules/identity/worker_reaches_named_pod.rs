//! `worker-reaches-named-pod`: a worker that names router pod X reaches pod X, on both transports.
//!
//! Each router pod advertises its own name (`--advertised-hostname-template`, `{pod_name}` = the
//! pod's name), and its own QUIC dial address when that carries `{pod_name}`. A worker registered
//! with pod X sends X's name as HTTP/2 `:authority` (gRPC, routed by the Gateway) and dials X's
//! QUIC address. Judged from the render, per pod the workload (and an autoscaler's maxReplicas)
//! can run:
//!
//! - gRPC: on the listeners that take the gRPC dial address, the route that wins X's name
//!   (Gateway API precedence: an exact hostname over a wildcard, the longer over the shorter) must
//!   send it to Services that select exactly pod X (a StatefulSet's controller labels each pod
//!   with `statefulset.kubernetes.io/pod-name`);
//! - QUIC: X's dial host must lead to X alone: a headless Service's pod DNS name
//!   (`<hostname>.<service>.<ns>.svc…`), a Service selecting X alone, or, outside the cluster, a
//!   UDPRoute that names the host for DNS (external-dns' hostname annotation) on a UDP listener
//!   of the dial port whose routes all select X alone. One dial address for several pods fails.
//!
//! Work is bounded by the graph, never by the replica count read from it: the pods judged one by
//! one are at most one more than the Services of the namespace (by pigeonhole, that many pods
//! cannot each have a Service of their own), and routes are indexed per listener once.

use crate::finding::Finding;
use crate::graph::{Graph, Object};
use crate::router::{self, RouterWorkload};
use crate::rules::routes::backend::{backend_refs, resolve, Backend};
use crate::rules::routes::gateway::{attach, listeners, parent_refs, pattern_matches, route_hostnames, Attach};
use crate::rules::routes::worker::{effective_hostnames, in_cluster, parse_addr};
use crate::rules::routes::{finding_at, ns_of, routes, GW_GROUP};
use crate::rules::Ctx;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

mod quic;

use quic::quic_leg;

pub(super) const ID: &str = "worker-reaches-named-pod";

/// At most this many failing pods are named per workload and transport (the rest are counted).
const SHOWN: usize = 4;

/// One pod a router workload can run.
struct Pod<'g> {
    workload: &'g Object,
    ordinal: u64,
    name: Option<String>,
    labels: Map<String, Value>,
    /// The pod's DNS hostname and subdomain (a StatefulSet's: its name and `serviceName`).
    hostname: Option<String>,
    subdomain: Option<String>,
}

impl Pod<'_> {
    fn describe(&self) -> String {
        match &self.name {
            Some(n) => format!("pod {n}"),
            None => format!("pod {} of {}", self.ordinal, self.workload.display()),
        }
    }
}

/// Every pod of every router workload, the pods judged one by one per workload, and the
/// Services' selections (computed once per Service).
struct Pods<'g> {
    all: Vec<Pod<'g>>,
    selected: HashMap<(String, String), Vec<usize>>,
}

impl<'g> Pods<'g> {
    /// The router pods in the Service's namespace that its selector selects (none without a
    /// selector: its endpoints are not the gate's to know).
    fn of_service(&mut self, svc: &Object) -> &[usize] {
        let key = (ns_of(svc).to_string(), svc.name.clone());
        let all = &self.all;
        self.selected.entry(key).or_insert_with(|| {
            let Some(sel) = svc
                .at("/spec/selector")
                .and_then(Value::as_object)
                .filter(|s| !s.is_empty())
            else {
                return Vec::new();
            };
            all.iter()
                .enumerate()
                .filter(|(_, p)| ns_of(p.workload) == ns_of(svc))
                .filter(|(_, p)| sel.iter().all(|(k, v)| p.labels.get(k) == Some(v)))
                .map(|(i, _)| i)
                .collect()
        })
    }

    fn names(&self, idx: &[usize]) -> String {
        let shown: Vec<String> = idx.iter().take(SHOWN).map(|&i| self.all[i].describe()).collect();
        let more = idx.len().saturating_sub(SHOWN);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    }
}

/// One route carrying gRPC on one listener: its effective hostnames there (`None`: any host).
struct Carried<'g> {
    route: &'g Object,
    hostnames: Option<Vec<String>>,
}

/// The gRPC routes Accepted on each listener, built once: `(gateway ns, gateway, listener)`.
fn grpc_index(g: &Graph) -> BTreeMap<(String, String, String), Vec<Carried<'_>>> {
    let mut index: BTreeMap<(String, String, String), Vec<Carried<'_>>> = BTreeMap::new();
    for route in routes(g).filter(|r| matches!(r.kind.as_str(), "GRPCRoute" | "HTTPRoute")) {
        for pr in parent_refs(route) {
            let Attach::Accepted { listeners: ls, .. } = attach(g, route, &pr) else {
                continue;
            };
            for l in ls {
                index
                    .entry((pr.namespace.to_string(), pr.name.to_string(), l.name.to_string()))
                    .or_default()
                    .push(Carried {
                        route,
                        hostnames: effective_hostnames(&l, &route_hostnames(route)),
                    });
            }
        }
    }
    index
}

/// How specific a route hostname is for Gateway API precedence: an exact name before any
/// wildcard, then the longer before the shorter; "any host" last.
fn specificity(h: Option<&str>) -> (u8, usize) {
    match h {
        None => (0, 0),
        Some(h) if h.starts_with('*') => (1, h.len()),
        Some(h) => (2, h.len()),
    }
}

pub(super) fn check(ctx: &Ctx) -> Vec<Finding> {
    judge(ctx.graph, ctx.routers())
}

/// The check over a graph alone (its routers found here), for the unit tests.
#[cfg(test)]
pub(super) fn check_graph(g: &Graph) -> Vec<Finding> {
    judge(g, &router::routers(g))
}

fn judge<'g>(g: &'g Graph, all: &[RouterWorkload<'g>]) -> Vec<Finding> {
    let routers: Vec<&RouterWorkload<'g>> = all
        .iter()
        .filter(|r| matches!(r.obj.kind.as_str(), "StatefulSet" | "Deployment") && r.list == "containers")
        .collect();
    if routers.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // The pods: per workload, at most one more than the Services of its namespace.
    let mut pods = Pods {
        all: Vec::new(),
        selected: HashMap::new(),
    };
    let mut judged: Vec<(usize, std::ops::Range<usize>, u64)> = Vec::new();
    for (ri, r) in routers.iter().enumerate() {
        if routers[..ri].iter().any(|o| std::ptr::eq(o.obj, r.obj)) {
            continue;
        }
        let services = g.of("", "Service").filter(|s| ns_of(s) == ns_of(r.obj)).count() as u64;
        let count = router::pod_count(g, r.obj).max(1);
        let n = count.min(services + 1);
        let start = pods.all.len();
        for i in 0..n {
            let name = router::pod_name(r.obj, &r.pod_name, i);
            let (hostname, subdomain) = if r.obj.kind == "StatefulSet" {
                (name.clone(), r.obj.str_at("/spec/serviceName").map(str::to_string))
            } else {
                (
                    r.obj.str_at("/spec/template/spec/hostname").map(str::to_string),
                    r.obj.str_at("/spec/template/spec/subdomain").map(str::to_string),
                )
            };
            pods.all.push(Pod {
                workload: r.obj,
                ordinal: i,
                name,
                labels: router::pod_labels(r.obj, i),
                hostname,
                subdomain,
            });
        }
        judged.push((ri, start..pods.all.len(), count));
    }
    let index = grpc_index(g);
    for (ri, range, count) in judged {
        let r = &routers[ri];
        let mut grpc = Vec::new();
        let mut quic = Vec::new();
        for p in range.clone() {
            if let Some(f) = grpc_leg(g, r, &index, &mut pods, p) {
                grpc.push(f);
            }
            if let Some(f) = quic_leg(g, r, &mut pods, p, range.len()) {
                quic.push(f);
            }
        }
        for mut leg in [grpc, quic] {
            let more = leg.len().saturating_sub(SHOWN);
            leg.truncate(SHOWN);
            if more > 0 {
                if let Some(last) = leg.last_mut() {
                    last.message
                        .push_str(&format!(" (and {more} more pods of {} like it)", r.obj.display()));
                }
            }
            out.extend(leg);
        }
        if count > range.len() as u64 {
            out.push(
                Finding::object_at(
                    ID,
                    r.obj,
                    "replicas",
                    format!(
                        "{} can run {count} pods ({}), but its namespace renders {} Services: at most that many pods \
                         can each have a Service of their own, so the pods beyond ordinal {} cannot each be reached \
                         by their name",
                        r.obj.display(),
                        count_source(g, r.obj),
                        range.len().saturating_sub(1),
                        range.len().saturating_sub(1)
                    ),
                )
                .with_help(
                    "Render a Service and worker routes per pod for every ordinal below the replica count (with an \
                     autoscaler: below its maxReplicas), or lower maxReplicas to the per-pod objects rendered.",
                ),
            );
        }
    }
    out
}

/// Where a workload's pod count comes from, for messages.
fn count_source(g: &Graph, obj: &Object) -> String {
    let replicas = obj.at("/spec/replicas").and_then(Value::as_u64).unwrap_or(1);
    let count = router::pod_count(g, obj);
    if count > replicas {
        let (hpa, field) = router::autoscalers_of(g, obj)
            .find(|(_, m)| *m == count)
            .map(|(h, _)| {
                let field = router::AUTOSCALERS
                    .iter()
                    .find(|a| a.kind == h.kind)
                    .and_then(|a| a.max.rsplit('/').next())
                    .unwrap_or("maxReplicas");
                (h.display(), field)
            })
            .unwrap_or_else(|| ("an autoscaler".into(), "maxReplicas"));
        format!("{hpa} allows {field} {count}")
    } else {
        format!("replicas {replicas}")
    }
}

/// Why pod `p` is not the one ordinal below the workload's replicas, for messages.
fn which(g: &Graph, pods: &Pods<'_>, p: usize) -> String {
    let pod = &pods.all[p];
    let replicas = pod.workload.at("/spec/replicas").and_then(Value::as_u64).unwrap_or(1);
    if pod.ordinal >= replicas && pod.workload.kind == "StatefulSet" {
        format!("{} ({})", pod.describe(), count_source(g, pod.workload))
    } else {
        pod.describe()
    }
}

/// gRPC: the route winning pod `p`'s advertised name on the listeners of the gRPC dial address
/// must send it to Services selecting exactly `p`.
fn grpc_leg(
    g: &Graph,
    r: &RouterWorkload<'_>,
    index: &BTreeMap<(String, String, String), Vec<Carried<'_>>>,
    pods: &mut Pods<'_>,
    p: usize,
) -> Option<Finding> {
    let template = r.flag(router::ADVERTISED_HOSTNAME_TEMPLATE).filter(|t| !t.is_empty())?;
    let dial = parse_addr(r.flag(router::GRPC_PYLON_DIAL_ADDR).filter(|d| !d.is_empty())?);
    if in_cluster(g, &dial.host) {
        // No Gateway routes by :authority there: nothing of this leg to judge.
        return None;
    }
    let pod_name = pods.all[p].name.clone()?;
    let name = template
        .replace(router::POD_NAME_PLACEHOLDER, &pod_name)
        .replace("{namespace}", ns_of(r.obj))
        .to_ascii_lowercase();
    // The listeners that take the dial address (HTTPS on its port, hostname matching it).
    let mut keys = Vec::new();
    for gw in g.of(GW_GROUP, "Gateway") {
        for l in listeners(gw).unwrap_or_default() {
            if l.protocol == "HTTPS"
                && l.port.is_some()
                && l.port == dial.port.map(u64::from)
                && l.hostname.is_none_or(|h| pattern_matches(h, &dial.host))
            {
                keys.push((ns_of(gw).to_string(), gw.name.clone(), l.name.to_string()));
            }
        }
    }
    if keys.is_empty() {
        // No listener takes the dial address: worker-routes-complete says so.
        return None;
    }
    // The winning routes for the name: the most specific matching effective hostname.
    let mut best: Option<(u8, usize)> = None;
    let mut winners: Vec<&Object> = Vec::new();
    for key in &keys {
        for c in index.get(key).into_iter().flatten() {
            let matched: Vec<Option<&str>> = match &c.hostnames {
                None => vec![None],
                Some(hs) => hs
                    .iter()
                    .filter(|h| pattern_matches(h, &name))
                    .map(|h| Some(h.as_str()))
                    .collect(),
            };
            for h in matched {
                let s = specificity(h);
                match best {
                    Some(b) if s < b => {}
                    Some(b) if s == b => {
                        if !winners.iter().any(|w| std::ptr::eq(*w, c.route)) {
                            winners.push(c.route);
                        }
                    }
                    _ => {
                        best = Some(s);
                        winners = vec![c.route];
                    }
                }
            }
        }
    }
    let who = which(g, pods, p);
    if winners.is_empty() {
        let listeners: Vec<String> = keys
            .iter()
            .map(|(n, gw, l)| format!("`{l}` of Gateway {n}/{gw}"))
            .collect();
        return Some(
            Finding::object_at(
                ID,
                r.obj,
                router::ADVERTISED_HOSTNAME_TEMPLATE,
                format!(
                    "{who} advertises {name} (gRPC :authority), but no route on listener {} carries it: a worker \
                     registered with that pod gets 404 (missing per-pod route)",
                    listeners.join(", ")
                ),
            )
            .with_help(help_grpc()),
        );
    }
    for route in &winners {
        for b in backend_refs(route) {
            match resolve(g, route, &b) {
                Backend::Resolved { service, .. } => {
                    let sel = pods.of_service(service).to_vec();
                    if sel != [p] {
                        let what = match sel.as_slice() {
                            [] => "which selects no router pod".to_string(),
                            [one] => format!("which selects {}, another pod", pods.all[*one].describe()),
                            many => format!("which selects {} pods ({})", many.len(), pods.names(many)),
                        };
                        return Some(
                            finding_at(
                                ID,
                                route,
                                &["backendRefs:".to_string(), format!("name: {}", b.name)],
                                format!(
                                    "{} carries the advertised name {name} of {who} (gRPC :authority) to Service \
                                     {}/{}, {what}: a worker that names that pod may reach another",
                                    route.display(),
                                    ns_of(service),
                                    service.name
                                ),
                            )
                            .with_help(help_grpc()),
                        );
                    }
                }
                Backend::NotFound { .. } => {
                    return Some(
                        finding_at(
                            ID,
                            route,
                            &["backendRefs:".to_string(), format!("name: {}", b.name)],
                            format!(
                                "{} carries the advertised name {name} of {who} (gRPC :authority) to Service {}/{}, \
                                 which is not rendered (missing per-pod Service)",
                                route.display(),
                                b.namespace,
                                b.name
                            ),
                        )
                        .with_help(help_grpc()),
                    );
                }
                _ => {}
            }
        }
    }
    None
}

fn help_grpc() -> &'static str {
    "Give every pod a Service that selects it alone (for a StatefulSet: the chart's selector plus \
     statefulset.kubernetes.io/pod-name: <pod>) and a GRPCRoute whose hostname is the pod's advertised name with a \
     backendRef to that Service; keep the shared Service for the gRPC dial host only. In this stack: request-router \
     renders both for every ordinal below replicas (or the autoscaler's maxReplicas)."
}
