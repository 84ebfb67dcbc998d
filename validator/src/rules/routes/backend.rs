//! backendRefs and certificateRefs: what a Gateway controller decides for `ResolvedRefs`
//! (Service and port exist, cross-namespace references granted by a ReferenceGrant).

use super::{ns_of, str_of, GW_GROUP};
use crate::graph::{Graph, Object};
use serde_json::Value;

/// A route's backendRef with Gateway API defaults applied.
#[derive(Debug, Clone)]
pub struct BackendRef<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub port: Option<u64>,
    /// Index of the rule and of the ref within it, for messages.
    pub rule: usize,
    pub index: usize,
}

impl BackendRef<'_> {
    pub fn is_service(&self) -> bool {
        self.group.is_empty() && self.kind == "Service"
    }

    /// `backendRef Service ns/name port N (rules[i].backendRefs[j])`.
    pub fn describe(&self) -> String {
        let port = self
            .port
            .map_or_else(|| "without port".to_string(), |p| format!("port {p}"));
        format!(
            "backendRef {} {}/{} {port} (rules[{}].backendRefs[{}])",
            self.kind, self.namespace, self.name, self.rule, self.index
        )
    }

    /// Needles leading from the route's document start to this backendRef's lines.
    pub fn path(&self) -> Vec<String> {
        let mut p = vec!["backendRefs:".to_string(), format!("name: {}", self.name)];
        if let Some(port) = self.port {
            p.push(format!("port: {port}"));
        }
        p
    }
}

/// backendRefs of every rule of a route.
pub fn backend_refs(route: &Object) -> Vec<BackendRef<'_>> {
    let route_ns = ns_of(route);
    let mut out = Vec::new();
    let rules = route
        .at("/spec/rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (ri, rule) in rules.iter().enumerate() {
        let refs = rule
            .get("backendRefs")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (bi, b) in refs.iter().enumerate() {
            let Some(name) = str_of(b, "name") else { continue };
            out.push(BackendRef {
                group: str_of(b, "group").unwrap_or(""),
                kind: str_of(b, "kind").unwrap_or("Service"),
                namespace: str_of(b, "namespace").filter(|n| !n.is_empty()).unwrap_or(route_ns),
                name,
                port: b.get("port").and_then(Value::as_u64),
                rule: ri,
                index: bi,
            });
        }
    }
    out
}

/// What a controller decides for one backendRef.
#[derive(Debug)]
pub enum Backend<'a> {
    /// Not a core Service (ServiceImport, implementation-specific backends): not judged here.
    NotJudged,
    RefNotPermitted {
        detail: String,
        help: String,
    },
    NotFound {
        detail: String,
        help: String,
    },
    /// Resolved. `port` is the Service's port entry; `None` for an external Service declared
    /// without ports (trusted as given).
    Resolved {
        service: &'a Object,
        port: Option<&'a Value>,
    },
}

/// Resolve one backendRef of `route`.
pub fn resolve<'a>(graph: &'a Graph, route: &Object, b: &BackendRef<'_>) -> Backend<'a> {
    if !b.is_service() {
        return Backend::NotJudged;
    }
    let route_ns = ns_of(route);
    if b.namespace != route_ns && !granted(graph, (&route.kind, route_ns), b.namespace, ("", "Service", b.name)) {
        return Backend::RefNotPermitted {
            detail: format!(
                "{} crosses from namespace {route_ns} to {} and no ReferenceGrant in {} allows {} from {route_ns} to Service {}",
                b.describe(),
                b.namespace,
                b.namespace,
                route.kind,
                b.name
            ),
            help: format!(
                "Add a ReferenceGrant in namespace {} with from: [{{group: gateway.networking.k8s.io, kind: {}, namespace: {route_ns}}}] \
                 and to: [{{group: \"\", kind: Service, name: {}}}], or move the route next to the Service.",
                b.namespace, route.kind, b.name
            ),
        };
    }
    let Some(svc) = graph.get("", "Service", Some(b.namespace), b.name) else {
        return Backend::NotFound {
            detail: format!(
                "{}: Service {}/{} is neither rendered by the stack nor declared in validator-policy.yaml externals",
                b.describe(),
                b.namespace,
                b.name
            ),
            help:
                "Point the backendRef at a Service the stack renders (name and namespace), or declare the Service in \
                   validator-policy.yaml externals if it exists outside the stack."
                    .to_string(),
        };
    };
    let ports = svc.at("/spec/ports").and_then(Value::as_array);
    let Some(port) = b.port else {
        return Backend::NotFound {
            detail: format!(
                "{} has no port; a backendRef to a Service must name the Service port",
                b.describe()
            ),
            help: format!("Set port to one of the Service's ports ({}).", list_ports(ports)),
        };
    };
    let Some(ports) = ports else {
        if svc.prov.external {
            return Backend::Resolved {
                service: svc,
                port: None,
            };
        }
        return Backend::NotFound {
            detail: format!("{}: Service {}/{} declares no ports", b.describe(), b.namespace, b.name),
            help: "Give the Service a port the route can reference.".to_string(),
        };
    };
    // A Service may expose one number twice (TCP and UDP): prefer the entry of the route's protocol.
    let wanted = if route.kind == "UDPRoute" { "UDP" } else { "TCP" };
    let same_number: Vec<&Value> = ports
        .iter()
        .filter(|p| p.get("port").and_then(Value::as_u64) == Some(port))
        .collect();
    match same_number
        .iter()
        .find(|p| port_protocol(p) == wanted)
        .or(same_number.first())
    {
        Some(p) => Backend::Resolved {
            service: svc,
            port: Some(p),
        },
        None => Backend::NotFound {
            detail: format!(
                "{}: Service {}/{} has no port {port} (its ports: {})",
                b.describe(),
                b.namespace,
                b.name,
                list_ports(Some(ports))
            ),
            help:
                "Set the backendRef port to the Service port (spec.ports[].port, not the targetPort or containerPort)."
                    .to_string(),
        },
    }
}

/// Protocol of a Service port entry (`TCP` by default).
pub fn port_protocol(p: &Value) -> &str {
    str_of(p, "protocol").unwrap_or("TCP")
}

fn list_ports(ports: Option<&Vec<Value>>) -> String {
    let list: Vec<String> = ports
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    let n = p.get("port")?.as_u64()?;
                    Some(match str_of(p, "name") {
                        Some(name) => format!("{n}/{} `{name}`", port_protocol(p)),
                        None => format!("{n}/{}", port_protocol(p)),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    }
}

/// A ReferenceGrant in `to_ns` allows `from = (kind, namespace)` (group gateway.networking.k8s.io)
/// to reach `to = (group, kind, name)`.
pub fn granted(graph: &Graph, from: (&str, &str), to_ns: &str, to: (&str, &str, &str)) -> bool {
    graph
        .objects
        .iter()
        .filter(|o| o.kind == "ReferenceGrant" && o.group() == GW_GROUP && ns_of(o) == to_ns)
        .any(|g| {
            let list = |key: &str| {
                g.at(&format!("/spec/{key}"))
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
            };
            let from_ok = list("from").iter().any(|f| {
                str_of(f, "group") == Some(GW_GROUP)
                    && str_of(f, "kind") == Some(from.0)
                    && str_of(f, "namespace") == Some(from.1)
            });
            let to_ok = list("to").iter().any(|t| {
                str_of(t, "group").unwrap_or("") == to.0
                    && str_of(t, "kind") == Some(to.1)
                    && str_of(t, "name").filter(|n| !n.is_empty()).is_none_or(|n| n == to.2)
            });
            from_ok && to_ok
        })
}

/// A problem with a listener's certificateRefs (Gateway listener condition `ResolvedRefs=False`).
#[derive(Debug)]
pub struct CertProblem {
    pub listener: String,
    pub reason: &'static str,
    pub detail: String,
    pub help: String,
    pub path: Vec<String>,
}

/// certificateRefs of TLS-terminating listeners (HTTPS, TLS mode Terminate) of a rendered Gateway
/// must name a Secret the stack writes (a cert-manager Certificate's secretName, or a Secret object)
/// or one declared external, in the Gateway's namespace or granted by a ReferenceGrant.
pub fn certificate_problems(graph: &Graph, gw: &Object) -> Vec<CertProblem> {
    let mut out = Vec::new();
    let gw_ns = ns_of(gw);
    for l in super::gateway::listeners(gw).unwrap_or_default() {
        let terminates = l.protocol == "HTTPS" || (l.protocol == "TLS" && l.tls_mode() == "Terminate");
        if !terminates {
            continue;
        }
        let base = vec!["listeners:".to_string(), format!("name: {}", l.name)];
        let refs = l
            .raw
            .pointer("/tls/certificateRefs")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if refs.is_empty() {
            if l.raw
                .pointer("/tls/options")
                .and_then(Value::as_object)
                .is_some_and(|o| !o.is_empty())
            {
                continue; // implementation-specific certificate source
            }
            out.push(CertProblem {
                listener: l.name.to_string(),
                reason: "InvalidCertificateRef",
                detail: format!(
                    "{} terminates TLS ({}) but has no tls.certificateRefs",
                    l.describe(gw),
                    l.protocol
                ),
                help:
                    "Set tls.certificateRefs to the Secret a cert-manager Certificate writes (spec.secretName) in the \
                       Gateway's namespace."
                        .to_string(),
                path: base.clone(),
            });
            continue;
        }
        for r in refs {
            let (group, kind) = (str_of(r, "group").unwrap_or(""), str_of(r, "kind").unwrap_or("Secret"));
            let Some(name) = str_of(r, "name") else { continue };
            if !(group.is_empty() && kind == "Secret") {
                continue;
            }
            let ns = str_of(r, "namespace").filter(|n| !n.is_empty()).unwrap_or(gw_ns);
            let mut path = base.clone();
            path.extend(["certificateRefs:".to_string(), format!("name: {name}")]);
            if ns != gw_ns && !granted(graph, ("Gateway", gw_ns), ns, ("", "Secret", name)) {
                out.push(CertProblem {
                    listener: l.name.to_string(),
                    reason: "RefNotPermitted",
                    detail: format!(
                        "{} references Secret {ns}/{name} across namespaces and no ReferenceGrant in {ns} allows Gateway from {gw_ns}",
                        l.describe(gw)
                    ),
                    help: format!(
                        "Add a ReferenceGrant in namespace {ns} with from: [{{group: gateway.networking.k8s.io, kind: Gateway, \
                         namespace: {gw_ns}}}] and to: [{{group: \"\", kind: Secret, name: {name}}}], or issue the \
                         Certificate into namespace {gw_ns}."
                    ),
                    path,
                });
                continue;
            }
            // cert-manager's gateway shim writes a Certificate for each listener's Secret in the
            // Gateway's namespace when the Gateway carries an issuer annotation.
            if ns == gw_ns && gateway_shim(gw) {
                continue;
            }
            if let Some(problem) = secret_problem(graph, ns, name) {
                out.push(CertProblem {
                    listener: l.name.to_string(),
                    reason: "InvalidCertificateRef",
                    detail: format!("{} references Secret {ns}/{name}, which {problem}", l.describe(gw)),
                    help: format!(
                        "Render a cert-manager Certificate in namespace {ns} with spec.secretName: {name} (covering the \
                         listener hostname), or declare the Secret (type kubernetes.io/tls) in validator-policy.yaml \
                         externals if it is created outside the stack."
                    ),
                    path,
                });
            }
        }
    }
    out
}

/// Whether cert-manager's gateway shim issues this Gateway's listener certificates.
fn gateway_shim(gw: &Object) -> bool {
    gw.annotations().is_some_and(|a| {
        ["cert-manager.io/issuer", "cert-manager.io/cluster-issuer"]
            .iter()
            .any(|k| a.get(*k).and_then(Value::as_str).is_some_and(|v| !v.is_empty()))
    })
}

/// Why a listener's Secret would not resolve, if it would not.
fn secret_problem(graph: &Graph, ns: &str, name: &str) -> Option<String> {
    let by_certificate = graph.objects.iter().any(|o| {
        o.kind == "Certificate"
            && o.group() == "cert-manager.io"
            && ns_of(o) == ns
            && o.str_at("/spec/secretName") == Some(name)
    });
    if by_certificate {
        return None;
    }
    match graph.get("", "Secret", Some(ns), name) {
        None => Some(
            "no cert-manager Certificate in the stack writes (spec.secretName) and which is not declared in \
             validator-policy.yaml externals"
                .to_string(),
        ),
        Some(s) => match s.str_at("/type") {
            Some(t) if t != "kubernetes.io/tls" => Some(format!(
                "has type {t}; a listener certificate must be kubernetes.io/tls"
            )),
            _ => None,
        },
    }
}
