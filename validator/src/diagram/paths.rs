//! Drawing the picture from the object graph: the trust path (OpenBao role → issuer →
//! Certificate → Secret → mounts), the router's advertised names, the worker path (dial address
//! → Gateway listener → route → Service → router) and the trust bundle → worker profile.

use super::model::{Edge, EdgeKind, Node, NodeKind, NodeObject};
use crate::graph::volumes::volume_secrets;
use crate::graph::{Graph, Object};
use crate::router::{self, RouterWorkload};
use crate::rules::pki::bundles::{is_bundle_configmap, profile};
use crate::rules::pki::{FP_ANNOTATION, ROLE_CONFIGMAP, WORKER_PROFILE};
use crate::rules::routes::backend::{backend_refs, resolve, Backend};
use crate::rules::routes::gateway::{attach, listeners, parent_refs, pattern_matches, Attach};
use crate::rules::routes::worker::{in_cluster, parse_addr};
use crate::rules::routes::{routes, GW_GROUP};
use serde_json::Value;
use std::collections::BTreeMap;

const CM: &str = "cert-manager.io";
/// Where cert-manager resolves a ClusterIssuer's Secret references by default.
const CLUSTER_RESOURCE_NAMESPACE: &str = "cert-manager";
/// At most this many expansions of an advertised-name template are drawn (replicas is input).
const MAX_EXPANSIONS: u64 = 4;

/// Node identity while building: an object key, or a name for what is not an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Obj(String, Option<String>, String),
    Listener(String, String, String),
    Name(NodeKind, String),
}

struct Builder {
    nodes: Vec<Node>,
    index: BTreeMap<Key, usize>,
    edges: Vec<(usize, usize, EdgeKind)>,
    seen: std::collections::BTreeSet<(usize, usize, EdgeKind)>,
}

fn obj_key(o: &Object) -> Key {
    Key::Obj(o.kind.clone(), o.namespace.clone(), o.name.clone())
}

fn node_object(o: &Object) -> NodeObject {
    NodeObject {
        kind: o.kind.clone(),
        namespace: o.namespace.clone(),
        name: o.name.clone(),
    }
}

fn ns_of(o: &Object) -> &str {
    o.namespace.as_deref().unwrap_or("default")
}

fn title(kind: &str, ns: Option<&str>, name: &str) -> String {
    match ns {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

impl Builder {
    fn add(&mut self, key: Key, node: impl FnOnce() -> Node) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let mut n = node();
        n.id = format!("n{}", self.nodes.len());
        self.nodes.push(n);
        self.index.insert(key, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn object(&mut self, kind: NodeKind, o: &Object, details: Vec<String>) -> usize {
        self.add(obj_key(o), || {
            let mut label = vec![title(&o.kind, o.namespace.as_deref(), &o.name)];
            label.extend(details);
            Node {
                id: String::new(),
                kind,
                label,
                object: Some(node_object(o)),
                external: o.prov.external,
                missing: false,
                marks: Vec::new(),
            }
        })
    }

    /// An object that is referenced but absent; it is still keyed by its identity, so the
    /// finding about the reference finds it.
    fn absent(&mut self, kind: NodeKind, k: &str, ns: Option<&str>, name: &str) -> usize {
        let key = Key::Obj(k.to_string(), ns.map(str::to_string), name.to_string());
        self.add(key, || Node {
            id: String::new(),
            kind,
            label: vec![title(k, ns, name), "not rendered, not external".into()],
            object: Some(NodeObject {
                kind: k.to_string(),
                namespace: ns.map(str::to_string),
                name: name.to_string(),
            }),
            external: false,
            missing: true,
            marks: Vec::new(),
        })
    }

    fn name(&mut self, kind: NodeKind, text: String, label: Vec<String>, missing: bool) -> usize {
        self.add(Key::Name(kind, text), || Node {
            id: String::new(),
            kind,
            label,
            object: None,
            external: false,
            missing,
            marks: Vec::new(),
        })
    }

    fn edge(&mut self, from: usize, to: usize, kind: EdgeKind) {
        if self.seen.insert((from, to, kind)) {
            self.edges.push((from, to, kind));
        }
    }
}
// ---------------------------------------------------------------------------------------------
// Trust: OpenBao role → issuer → Certificate → Secret

fn is_issuer(o: &Object) -> bool {
    (o.kind == "Issuer" || o.kind == "ClusterIssuer") && o.group() == CM
}

fn issuer_details(o: &Object) -> Vec<String> {
    let mut d = Vec::new();
    if let Some(spec) = o.at("/spec").and_then(Value::as_object) {
        for kind in ["vault", "ca", "selfSigned", "acme"] {
            if spec.contains_key(kind) {
                d.push(match o.str_at("/spec/vault/path").filter(|_| kind == "vault") {
                    Some(p) => format!("vault {p}"),
                    None => kind.to_string(),
                });
            }
        }
    }
    d
}

fn trust_path(g: &Graph, b: &mut Builder) {
    for o in g.objects.iter().filter(|o| is_issuer(o)) {
        b.object(NodeKind::Issuer, o, issuer_details(o));
    }
    for cm in g.of_kind("ConfigMap").filter(|cm| cm.name == ROLE_CONFIGMAP) {
        let params: Option<Value> = cm.str_at("/data/role.json").and_then(|t| serde_json::from_str(t).ok());
        let mut details = vec!["OpenBao signing role".to_string()];
        if let Some(p) = &params {
            if let Some(domains) = p.get("allowed_domains") {
                let all: Vec<&str> = match domains {
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    Value::String(s) => s.split(',').map(str::trim).collect(),
                    _ => Vec::new(),
                };
                let mut list = all.iter().take(3).copied().collect::<Vec<_>>().join(", ");
                if all.len() > 3 {
                    list.push_str(&format!(", … {} more", all.len() - 3));
                }
                details.push(format!("allowed_domains: {list}"));
            }
        }
        if let Some(path) = cm.str_at("/data/path") {
            details.push(format!("path {path}"));
        }
        let role = b.object(NodeKind::OpenbaoRole, cm, details);
        if let Some(issuer) = cm.str_at("/data/issuer").map(str::trim) {
            let (kind, name) = issuer.split_once('/').unwrap_or(("ClusterIssuer", issuer));
            let ns = (kind == "Issuer").then(|| ns_of(cm).to_string());
            let i = match g.get(CM, kind, ns.as_deref(), name) {
                Some(o) => b.object(NodeKind::Issuer, o, issuer_details(o)),
                None => b.absent(NodeKind::Issuer, kind, ns.as_deref(), name),
            };
            b.edge(role, i, EdgeKind::Signs);
        }
    }
    for c in g.of(CM, "Certificate") {
        let mut details: Vec<String> = c
            .at("/spec/dnsNames")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).take(6).map(str::to_string).collect())
            .unwrap_or_default();
        let n = c.at("/spec/dnsNames").and_then(Value::as_array).map_or(0, Vec::len);
        if n > 6 {
            details.push(format!("… {} more", n - 6));
        }
        let cert = b.object(NodeKind::Certificate, c, details);
        let ns = ns_of(c).to_string();
        if let Some(name) = c.str_at("/spec/issuerRef/name") {
            let kind = c.str_at("/spec/issuerRef/kind").unwrap_or("Issuer");
            let group = c.str_at("/spec/issuerRef/group").unwrap_or(CM);
            let ins = (kind != "ClusterIssuer").then_some(ns.as_str());
            let i = match g.get(group, kind, ins, name) {
                Some(o) => b.object(NodeKind::Issuer, o, issuer_details(o)),
                None => b.absent(NodeKind::Issuer, kind, ins, name),
            };
            b.edge(i, cert, EdgeKind::Signs);
        }
        if let Some(secret) = c.str_at("/spec/secretName") {
            let s = secret_node(g, b, &ns, secret);
            b.edge(cert, s, EdgeKind::Writes);
        }
    }
}

/// The CA a Vault issuer trusts for OpenBao's listener (`caBundleSecretRef`): drawn when the stack
/// has that Secret (written by a Certificate, rendered or external). A ClusterIssuer's references
/// resolve in cert-manager's cluster resource namespace, `cert-manager` unless reconfigured.
fn issuer_trust(g: &Graph, b: &mut Builder) {
    for o in g.objects.iter().filter(|o| is_issuer(o)) {
        let Some(name) = o.str_at("/spec/vault/caBundleSecretRef/name") else {
            continue;
        };
        let ns = o
            .namespace
            .clone()
            .unwrap_or_else(|| CLUSTER_RESOURCE_NAMESPACE.to_string());
        let known = b
            .index
            .contains_key(&Key::Obj("Secret".into(), Some(ns.clone()), name.to_string()))
            || g.get("", "Secret", Some(&ns), name).is_some();
        if known {
            let s = secret_node(g, b, &ns, name);
            let i = b.object(NodeKind::Issuer, o, issuer_details(o));
            b.edge(s, i, EdgeKind::Trusts);
        }
    }
}

/// The Secret `ns/name`: the rendered or external object when there is one, else the Secret a
/// Certificate writes, else absent.
fn secret_node(g: &Graph, b: &mut Builder, ns: &str, name: &str) -> usize {
    match g.get("", "Secret", Some(ns), name) {
        Some(o) => b.object(NodeKind::Secret, o, Vec::new()),
        None => {
            let written = g
                .of(CM, "Certificate")
                .any(|c| c.namespace.as_deref() == Some(ns) && c.str_at("/spec/secretName") == Some(name));
            if written {
                let key = Key::Obj("Secret".into(), Some(ns.to_string()), name.to_string());
                b.add(key, || Node {
                    id: String::new(),
                    kind: NodeKind::Secret,
                    label: vec![title("Secret", Some(ns), name)],
                    object: Some(NodeObject {
                        kind: "Secret".into(),
                        namespace: Some(ns.to_string()),
                        name: name.to_string(),
                    }),
                    external: false,
                    missing: false,
                    marks: Vec::new(),
                })
            } else {
                b.absent(NodeKind::Secret, "Secret", Some(ns), name)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Workloads: Secret → workload (mounts), workload → advertised names (presents)

fn workloads(g: &Graph, routers: &[RouterWorkload<'_>], b: &mut Builder) {
    for o in g.objects.iter().filter(|o| !o.prov.external) {
        let pods = o.pod_specs();
        if pods.is_empty() {
            continue;
        }
        let is_router = routers.iter().any(|r| std::ptr::eq(r.obj, o));
        // Every pod spec's volumes (an object may hold several).
        let vols: Vec<&Value> = pods
            .iter()
            .flat_map(|pod| pod.get("volumes").and_then(Value::as_array).into_iter().flatten())
            .collect();
        let ns = ns_of(o).to_string();
        // The router: every Secret it mounts (a missing one is a finding's target); other
        // workloads: only Secrets the picture already holds (TLS material).
        let mut mounted = Vec::new();
        for v in vols {
            for s in volume_secrets(v).into_iter().map(|s| s.name) {
                let known = b
                    .index
                    .contains_key(&Key::Obj("Secret".into(), Some(ns.clone()), s.to_string()));
                if is_router || known {
                    mounted.push(s.to_string());
                }
            }
        }
        if !is_router && mounted.is_empty() {
            continue;
        }
        let replicas = o.at("/spec/replicas").and_then(Value::as_u64);
        let details = match (o.kind.as_str(), replicas) {
            ("StatefulSet" | "Deployment", Some(n)) => vec![format!("replicas {n}")],
            _ => Vec::new(),
        };
        let w = b.object(NodeKind::Workload, o, details);
        for s in mounted {
            let sn = secret_node(g, b, &ns, &s);
            b.edge(sn, w, EdgeKind::Mounts);
        }
    }
    for r in routers {
        let Some(template) = r.flag(router::ADVERTISED_HOSTNAME_TEMPLATE).filter(|t| !t.is_empty()) else {
            continue;
        };
        let w = b.object(NodeKind::Workload, r.obj, Vec::new());
        let ns = ns_of(r.obj);
        let pods = pod_names(g, r);
        let names: Vec<String> = if template.contains("{pod_name}") && !pods.is_empty() {
            let replicas = router::pod_count(g, r.obj).max(1);
            let mut v: Vec<String> = pods
                .iter()
                .map(|pod| template.replace("{pod_name}", pod).replace("{namespace}", ns))
                .collect();
            v.dedup();
            if replicas > MAX_EXPANSIONS && pods.len() as u64 == MAX_EXPANSIONS {
                v.push(format!("… {} more replicas: {template}", replicas - MAX_EXPANSIONS));
            }
            v
        } else {
            vec![template.replace("{namespace}", ns)]
        };
        for n in names {
            let id = b.name(
                NodeKind::AdvertisedName,
                n.clone(),
                vec!["advertised name (QUIC SNI)".into(), n],
                false,
            );
            b.edge(w, id, EdgeKind::Presents);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Workers: dial address → listener → route → Service → router

#[derive(Clone, Copy)]
struct Leg {
    label: &'static str,
    listener_protocol: &'static str,
    profile_key: &'static str,
    dial_flag: &'static str,
}

const LEGS: [Leg; 2] = [
    Leg {
        label: "gRPC dial address",
        listener_protocol: "HTTPS",
        profile_key: "grpcDialAddress",
        dial_flag: router::GRPC_PYLON_DIAL_ADDR,
    },
    Leg {
        label: "QUIC dial address",
        listener_protocol: "UDP",
        profile_key: "quicDialAddress",
        dial_flag: router::REVERSE_TUNNEL_PYLON_DIAL_ADDR,
    },
];

fn worker_path(g: &Graph, routers: &[RouterWorkload<'_>], b: &mut Builder) {
    // Every Gateway listener, with the Secrets TLS listeners present.
    for gw in g.of(GW_GROUP, "Gateway") {
        for l in listeners(gw).unwrap_or_default() {
            let li = listener_node(b, gw, l.name, l.protocol, l.port, l.hostname);
            let refs = l
                .raw
                .pointer("/tls/certificateRefs")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for r in refs {
                let kind = r.get("kind").and_then(Value::as_str).unwrap_or("Secret");
                let Some(name) = r.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if kind != "Secret" {
                    continue;
                }
                let ns = r
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(ns_of(gw))
                    .to_string();
                let s = secret_node(g, b, &ns, name);
                b.edge(s, li, EdgeKind::Mounts);
            }
        }
    }
    // Routes: listener → route (attaches), route → Service (routes to).
    for route in routes(g) {
        let ri = b.object(NodeKind::Route, route, route_details(route));
        for pr in parent_refs(route) {
            match attach(g, route, &pr) {
                Attach::NotJudged => {}
                Attach::Accepted { listeners: ls } => {
                    let gw = g.get(GW_GROUP, "Gateway", Some(pr.namespace), pr.name);
                    match gw {
                        Some(gw) if !ls.is_empty() => {
                            for l in ls {
                                let li = listener_node(b, gw, l.name, l.protocol, l.port, l.hostname);
                                b.edge(li, ri, EdgeKind::Attaches);
                            }
                        }
                        Some(gw) => {
                            let gi = b.object(NodeKind::Listener, gw, vec!["listeners not declared".into()]);
                            b.edge(gi, ri, EdgeKind::Attaches);
                        }
                        None => {}
                    }
                }
                Attach::Rejected { reason, .. } => {
                    // Draw the edge the route asks for, to the listeners it names (or the
                    // Gateway when it names none or the Gateway is absent): it is the broken one.
                    let gw = g.get(GW_GROUP, "Gateway", Some(pr.namespace), pr.name);
                    let targets: Vec<usize> = match gw {
                        Some(gw) => listeners(gw)
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|l| {
                                pr.section.is_none_or(|s| s == l.name) && pr.port.is_none_or(|p| l.port == Some(p))
                            })
                            .map(|l| listener_node(b, gw, l.name, l.protocol, l.port, l.hostname))
                            .collect(),
                        None => Vec::new(),
                    };
                    if targets.is_empty() {
                        let what = match pr.section {
                            Some(s) => format!("listener `{s}`"),
                            None => "a listener".into(),
                        };
                        let t = b.name(
                            NodeKind::Listener,
                            format!("{}/{}#{}", pr.namespace, pr.name, pr.section.unwrap_or("")),
                            vec![
                                title("Gateway", Some(pr.namespace), pr.name),
                                format!("{what}: {reason}"),
                            ],
                            true,
                        );
                        b.edge(t, ri, EdgeKind::Attaches);
                    } else {
                        for t in targets {
                            b.edge(t, ri, EdgeKind::Attaches);
                        }
                    }
                }
            }
        }
        for br in backend_refs(route) {
            match resolve(g, route, &br) {
                Backend::Resolved { service, .. } => {
                    let si = b.object(NodeKind::Service, service, service_details(service));
                    b.edge(ri, si, EdgeKind::RoutesTo);
                }
                Backend::RefNotPermitted { .. } => {
                    let si = match g.get("", "Service", Some(br.namespace), br.name) {
                        Some(s) => b.object(NodeKind::Service, s, service_details(s)),
                        None => b.absent(NodeKind::Service, "Service", Some(br.namespace), br.name),
                    };
                    b.edge(ri, si, EdgeKind::RoutesTo);
                }
                Backend::NotFound { .. } => {
                    let si = match g.get("", "Service", Some(br.namespace), br.name) {
                        // The Service exists but not its port.
                        Some(s) => b.object(NodeKind::Service, s, service_details(s)),
                        None => b.absent(NodeKind::Service, "Service", Some(br.namespace), br.name),
                    };
                    b.edge(ri, si, EdgeKind::RoutesTo);
                }
                Backend::NotJudged => {}
            }
        }
    }
    // Services that select a router's pods (a per-pod Service selects one by the label its
    // controller sets): Service → router (routes to).
    for r in routers {
        let pods: Vec<serde_json::Map<String, Value>> = (0..router::pod_count(g, r.obj).clamp(1, MAX_EXPANSIONS))
            .map(|i| router::pod_labels(r.obj, i))
            .collect();
        let w = b.object(NodeKind::Workload, r.obj, Vec::new());
        for s in g.of("", "Service") {
            if s.namespace != r.obj.namespace {
                continue;
            }
            let selects = match s.at("/spec/selector").and_then(Value::as_object) {
                Some(sel) if !sel.is_empty() => pods.iter().any(|l| sel.iter().all(|(k, v)| l.get(k) == Some(v))),
                _ => false,
            };
            if selects {
                let si = b.object(NodeKind::Service, s, service_details(s));
                b.edge(si, w, EdgeKind::RoutesTo);
            }
        }
    }
    // Dial addresses: from the router's flags and the worker profile, to the listeners that take
    // them (outside the cluster only: in-cluster workers need no Gateway).
    let mut dials: Vec<(Leg, String, Option<usize>)> = Vec::new();
    for r in routers {
        for leg in LEGS {
            if let Some(addr) = r.flag(leg.dial_flag).filter(|a| !a.is_empty()) {
                dials.push((leg, addr.to_string(), None));
            }
        }
    }
    for cm in g.of_kind("ConfigMap").filter(|c| c.name == WORKER_PROFILE) {
        let Some(p) = profile(cm) else { continue };
        let pi = b.object(NodeKind::WorkerProfile, cm, profile_details(&p));
        for leg in LEGS {
            if let Some(addr) = p.get(leg.profile_key).and_then(Value::as_str).filter(|a| !a.is_empty()) {
                // The profile writes `{namespace}` where the router's flag has it expanded.
                dials.push((leg, addr.replace("{namespace}", ns_of(cm)), Some(pi)));
            }
        }
    }
    // A per-pod dial address (`{pod_name}`) leads each worker to its pod's own path.
    let pods: Vec<String> = routers.first().map(|r| pod_names(g, r)).unwrap_or_default();
    for (leg, addr, from) in dials {
        let di = b.name(
            NodeKind::DialAddress,
            format!("{}|{}", leg.label, addr),
            vec![leg.label.to_string(), addr.clone()],
            false,
        );
        if let Some(p) = from {
            b.edge(p, di, EdgeKind::Dials);
        }
        let expanded: Vec<String> = if addr.contains(router::POD_NAME_PLACEHOLDER) && !pods.is_empty() {
            pods.iter()
                .map(|p| addr.replace(router::POD_NAME_PLACEHOLDER, p))
                .collect()
        } else {
            vec![addr.clone()]
        };
        for one in &expanded {
            dial_targets(g, b, leg, di, one);
        }
    }
}

/// The names of a router workload's first pods (at most [`MAX_EXPANSIONS`]), when the render
/// decides them (`crate::router::pod_name`).
fn pod_names(g: &Graph, r: &RouterWorkload<'_>) -> Vec<String> {
    (0..router::pod_count(g, r.obj).clamp(1, MAX_EXPANSIONS))
        .filter_map(|i| router::pod_name(r.obj, &r.pod_name, i))
        .collect()
}

/// The UDPRoutes that name `host` for DNS (external-dns reads the hostname annotation of
/// UDPRoutes, which have no hostnames of their own): their Gateway's address is the host's.
fn dns_named_routes<'g>(g: &'g Graph, host: &str) -> Vec<&'g Object> {
    routes(g)
        .filter(|r| r.kind == "UDPRoute")
        .filter(|r| {
            r.annotations().is_some_and(|a| {
                EXTERNAL_DNS_HOSTNAME.iter().any(|k| {
                    a.get(*k)
                        .and_then(Value::as_str)
                        .is_some_and(|v| v.split(',').any(|h| h.trim().eq_ignore_ascii_case(host)))
                })
            })
        })
        .collect()
}

/// external-dns' hostname annotation (the `alpha` spelling before v0.22, and the current one).
const EXTERNAL_DNS_HOSTNAME: [&str; 2] = [
    "external-dns.alpha.kubernetes.io/hostname",
    "external-dns.kubernetes.io/hostname",
];

/// Edges from dial address node `di` to where the address `addr` leads.
fn dial_targets(g: &Graph, b: &mut Builder, leg: Leg, di: usize, addr: &str) {
    let a = parse_addr(addr);
    if in_cluster(g, &a.host) {
        // In-cluster workers reach a Service by its cluster DNS name (or a pod by its name
        // under a headless Service): draw that hop.
        for svc in g.of("", "Service") {
            let ns = ns_of(svc);
            let svc_dns = format!("{}.{ns}.svc", svc.name);
            let pod_dns = a
                .host
                .split_once('.')
                .is_some_and(|(_, rest)| rest.starts_with(&svc_dns) && svc.str_at("/spec/clusterIP") == Some("None"));
            if a.host == format!("{}.{ns}", svc.name) || a.host.starts_with(&svc_dns) || pod_dns {
                let si = b.object(NodeKind::Service, svc, service_details(svc));
                b.edge(di, si, EdgeKind::Dials);
            }
        }
        return;
    }
    // A UDP dial host named by a UDPRoute for DNS leads to that route's Gateway listeners only.
    let named: Vec<(String, String)> = if leg.listener_protocol == "UDP" {
        dns_named_routes(g, &a.host)
            .iter()
            .flat_map(|r| {
                parent_refs(r)
                    .into_iter()
                    .map(|p| (p.namespace.to_string(), p.name.to_string()))
                    .collect::<Vec<_>>()
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut found = false;
    for gw in g.of(GW_GROUP, "Gateway") {
        if !named.is_empty() && !named.iter().any(|(ns, n)| ns == ns_of(gw) && n == &gw.name) {
            continue;
        }
        for l in listeners(gw).unwrap_or_default() {
            let host_ok = leg.listener_protocol != "HTTPS" || l.hostname.is_none_or(|h| pattern_matches(h, &a.host));
            if l.protocol == leg.listener_protocol && l.port.is_some() && l.port == a.port.map(u64::from) && host_ok {
                let li = listener_node(b, gw, l.name, l.protocol, l.port, l.hostname);
                b.edge(di, li, EdgeKind::Dials);
                found = true;
            }
        }
    }
    if !found {
        let port = a.port.map_or_else(|| "?".to_string(), |p| p.to_string());
        let t = b.name(
            NodeKind::Listener,
            format!("none:{}:{port}:{}", leg.listener_protocol, a.host),
            vec![
                format!("no {} listener", leg.listener_protocol),
                format!("for {}:{port}", a.host),
            ],
            true,
        );
        b.edge(di, t, EdgeKind::Dials);
    }
}

fn listener_node(
    b: &mut Builder,
    gw: &Object,
    name: &str,
    protocol: &str,
    port: Option<u64>,
    host: Option<&str>,
) -> usize {
    let key = Key::Listener(ns_of(gw).to_string(), gw.name.clone(), name.to_string());
    b.add(key, || {
        let port = port.map_or_else(|| "?".to_string(), |p| p.to_string());
        let mut label = vec![
            title("Gateway", gw.namespace.as_deref(), &gw.name),
            format!("listener {name} {protocol}:{port}"),
        ];
        if let Some(h) = host {
            label.push(h.to_string());
        }
        Node {
            id: String::new(),
            kind: NodeKind::Listener,
            label,
            // The Gateway: findings about a listener point at its Gateway.
            object: Some(node_object(gw)),
            external: gw.prov.external,
            missing: false,
            marks: Vec::new(),
        }
    })
}

fn route_details(route: &Object) -> Vec<String> {
    route
        .at("/spec/hostnames")
        .and_then(Value::as_array)
        .map(|h| h.iter().filter_map(Value::as_str).take(3).map(str::to_string).collect())
        .unwrap_or_default()
}

fn service_details(s: &Object) -> Vec<String> {
    let ports: Vec<String> = s
        .at("/spec/ports")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .take(6)
                .map(|p| {
                    let n = p.get("port").and_then(Value::as_u64).unwrap_or(0);
                    let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                    format!("{n}/{proto}")
                })
                .collect()
        })
        .unwrap_or_default();
    if ports.is_empty() {
        Vec::new()
    } else {
        vec![ports.join(" ")]
    }
}

// ---------------------------------------------------------------------------------------------
// Trust bundle → worker profile

fn short_fp(fp: &str) -> String {
    let s: String = fp.chars().take(19).collect();
    if fp.chars().count() > 19 {
        format!("{s}…")
    } else {
        s
    }
}

fn profile_details(p: &Value) -> Vec<String> {
    let mut d = vec!["worker profile".to_string()];
    if let Some(m) = p.get("trustMode").and_then(Value::as_str) {
        d.push(format!("trust mode {m}"));
    }
    if let Some(fp) = p.get("trustBundleFingerprint").and_then(Value::as_str) {
        d.push(short_fp(fp));
    }
    d
}

fn bundle(g: &Graph, b: &mut Builder) {
    // The ConfigMaps the bundle rules judge as published bundles.
    let bundles: Vec<&Object> = g.objects.iter().filter(|o| is_bundle_configmap(o)).collect();
    let profiles: Vec<&Object> = g.of_kind("ConfigMap").filter(|o| o.name == WORKER_PROFILE).collect();
    for bo in bundles {
        let details = bo
            .annotations()
            .and_then(|a| a.get(FP_ANNOTATION))
            .and_then(Value::as_str)
            .map(short_fp);
        let details = std::iter::once("trust bundle".to_string()).chain(details).collect();
        let bi = b.object(NodeKind::TrustBundle, bo, details);
        for p in profiles.iter().filter(|p| p.namespace == bo.namespace) {
            let d = profile(p).map(|v| profile_details(&v)).unwrap_or_default();
            let pi = b.object(NodeKind::WorkerProfile, p, d);
            b.edge(bi, pi, EdgeKind::Trusts);
        }
    }
}

/// Nodes and edges of one environment's picture, without findings.
pub(super) fn draw(graph: &Graph) -> (Vec<Node>, Vec<Edge>) {
    let mut b = Builder {
        nodes: Vec::new(),
        index: BTreeMap::new(),
        edges: Vec::new(),
        seen: Default::default(),
    };
    trust_path(graph, &mut b);
    issuer_trust(graph, &mut b);
    let routers = router::routers(graph);
    workloads(graph, &routers, &mut b);
    worker_path(graph, &routers, &mut b);
    bundle(graph, &mut b);
    let edges = b
        .edges
        .into_iter()
        .map(|(f, t, k)| Edge {
            from: format!("n{f}"),
            to: format!("n{t}"),
            label: k,
            marks: Vec::new(),
        })
        .collect();
    (b.nodes, edges)
}
