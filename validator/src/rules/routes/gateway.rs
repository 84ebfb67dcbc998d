//! Gateways, listeners and parentRef attachment: what a Gateway controller decides for a route's
//! `Accepted` condition (Gateway API: parentRef defaults, `sectionName`/`port`, listener protocol and
//! `allowedRoutes`, hostname intersection).

use super::{ns_of, str_of, GW_GROUP};
use crate::graph::{Graph, Object};
use serde_json::Value;
use std::collections::BTreeMap;

/// One listener of a Gateway.
#[derive(Debug, Clone)]
pub struct Listener<'a> {
    pub name: &'a str,
    pub port: Option<u64>,
    pub protocol: &'a str,
    pub hostname: Option<&'a str>,
    pub raw: &'a Value,
}

impl<'a> Listener<'a> {
    /// TLS mode of an HTTPS/TLS listener (`Terminate` by default).
    pub fn tls_mode(&self) -> &'a str {
        self.raw
            .pointer("/tls/mode")
            .and_then(Value::as_str)
            .unwrap_or("Terminate")
    }

    /// Hostname that takes part in route matching: only HTTP, HTTPS and TLS listeners have one.
    pub fn match_hostname(&self) -> Option<&'a str> {
        match self.protocol {
            "HTTP" | "HTTPS" | "TLS" => self.hostname,
            _ => None,
        }
    }

    /// `listener `name` of Gateway ns/name` for messages.
    pub fn describe(&self, gw: &Object) -> String {
        format!("listener `{}` of Gateway {}/{}", self.name, ns_of(gw), gw.name)
    }
}

/// Listeners of a Gateway, in order. `None` when the Gateway has no `spec.listeners` (only possible
/// for an external Gateway declared without them).
pub fn listeners(gw: &Object) -> Option<Vec<Listener<'_>>> {
    let items = gw.at("/spec/listeners")?.as_array()?;
    Some(
        items
            .iter()
            .map(|l| Listener {
                name: str_of(l, "name").unwrap_or(""),
                port: l.get("port").and_then(Value::as_u64),
                protocol: str_of(l, "protocol").unwrap_or(""),
                hostname: str_of(l, "hostname").filter(|h| !h.is_empty()),
                raw: l,
            })
            .collect(),
    )
}

/// Route kinds a listener protocol can carry (Gateway API core/extended support). `None` for an
/// implementation-specific protocol (domain-prefixed), which this gate does not judge.
pub fn kinds_for_protocol(protocol: &str) -> Option<&'static [&'static str]> {
    Some(match protocol {
        "HTTP" | "HTTPS" => &["HTTPRoute", "GRPCRoute"],
        // TCPRoute on TLS listeners was dropped in Gateway API v1.5.
        "TLS" => &["TLSRoute"],
        "TCP" => &["TCPRoute"],
        "UDP" => &["UDPRoute"],
        p if p.contains('/') => return None,
        _ => &[],
    })
}

/// A route's parentRef with Gateway API defaults applied.
#[derive(Debug, Clone)]
pub struct ParentRef<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub section: Option<&'a str>,
    pub port: Option<u64>,
}

impl ParentRef<'_> {
    pub fn is_gateway(&self) -> bool {
        self.group == GW_GROUP && self.kind == "Gateway"
    }

    /// Needles leading from the route's document start to this parentRef's lines.
    pub fn path(&self) -> Vec<String> {
        let mut p = vec!["parentRefs:".to_string(), format!("name: {}", self.name)];
        if let Some(s) = self.section {
            p.push(format!("sectionName: {s}"));
        }
        p
    }

    /// `sectionName: x, port: n` qualifiers for messages.
    pub fn qualifiers(&self) -> String {
        let mut q = Vec::new();
        if let Some(s) = self.section {
            q.push(format!("sectionName `{s}`"));
        }
        if let Some(p) = self.port {
            q.push(format!("port {p}"));
        }
        if q.is_empty() {
            String::new()
        } else {
            format!(" ({})", q.join(", "))
        }
    }
}

/// parentRefs of a route (entries without a name are skipped: the API server rejects them).
pub fn parent_refs(route: &Object) -> Vec<ParentRef<'_>> {
    let route_ns = ns_of(route);
    route
        .at("/spec/parentRefs")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|p| {
                    Some(ParentRef {
                        group: str_of(p, "group").unwrap_or(GW_GROUP),
                        kind: str_of(p, "kind").unwrap_or("Gateway"),
                        namespace: str_of(p, "namespace").filter(|n| !n.is_empty()).unwrap_or(route_ns),
                        name: str_of(p, "name")?,
                        section: str_of(p, "sectionName").filter(|s| !s.is_empty()),
                        port: p.get("port").and_then(Value::as_u64),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Hostnames a route asks for (`spec.hostnames`; HTTPRoute, GRPCRoute and TLSRoute only).
pub fn route_hostnames(route: &Object) -> Vec<&str> {
    match route.kind.as_str() {
        "HTTPRoute" | "GRPCRoute" | "TLSRoute" => route
            .at("/spec/hostnames")
            .and_then(Value::as_array)
            .map(|h| h.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// What a Gateway controller would write in the route's status for one parentRef.
#[derive(Debug)]
pub enum Attach<'a> {
    /// Not a Gateway parent (a Service for mesh routing, a ListenerSet, …): not judged here.
    NotJudged,
    /// Accepted on these listeners (none named for an external Gateway declared without
    /// listeners, which is trusted as given).
    Accepted { listeners: Vec<Listener<'a>> },
    Rejected {
        reason: &'static str,
        detail: String,
        help: String,
    },
}

/// Resolve one parentRef of `route` against the graph.
pub fn attach<'a>(graph: &'a Graph, route: &'a Object, pr: &ParentRef<'_>) -> Attach<'a> {
    if !pr.is_gateway() {
        return Attach::NotJudged;
    }
    let Some(gw) = graph.get(GW_GROUP, "Gateway", Some(pr.namespace), pr.name) else {
        return Attach::Rejected {
            reason: "NoMatchingParent",
            detail: format!(
                "Gateway {}/{} is neither rendered by the stack nor declared in validator-policy.yaml externals",
                pr.namespace, pr.name
            ),
            help: format!(
                "Fix the parentRef name/namespace, render the Gateway, or declare it in validator-policy.yaml externals \
                 (apiVersion gateway.networking.k8s.io/v1, kind Gateway, namespace {}, name {}, spec.listeners) if it \
                 exists outside the stack.",
                pr.namespace, pr.name
            ),
        };
    };
    let all = match listeners(gw) {
        Some(all) => all,
        // Declared external without listeners: trusted as given.
        None if gw.prov.external => return Attach::Accepted { listeners: Vec::new() },
        None => Vec::new(),
    };

    // 1. sectionName / port select listeners.
    let selected: Vec<Listener<'a>> = all
        .iter()
        .filter(|l| pr.section.is_none_or(|s| l.name == s) && pr.port.is_none_or(|p| l.port == Some(p)))
        .cloned()
        .collect();
    if selected.is_empty() {
        let have: Vec<String> = all
            .iter()
            .map(|l| format!("`{}` ({} {})", l.name, l.protocol, opt_port(l.port)))
            .collect();
        let wanted = match (pr.section, pr.port) {
            (Some(s), Some(p)) => format!("no listener named `{s}` on port {p}"),
            (Some(s), None) => format!("no listener named `{s}`"),
            (None, Some(p)) => format!("no listener on port {p}"),
            (None, None) => "no listeners".to_string(),
        };
        return Attach::Rejected {
            reason: "NoMatchingParent",
            detail: format!(
                "Gateway {}/{} has {wanted}; its listeners: {}",
                pr.namespace,
                pr.name,
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ),
            help: "Set parentRefs[].sectionName to the name of an existing listener (and port, if set, to its port), \
                   or add the listener to the Gateway."
                .to_string(),
        };
    }

    // 2. Protocol/kinds and namespaces (allowedRoutes).
    let route_ns = ns_of(route);
    let mut refusals = Vec::new();
    let (mut kind_refused, mut ns_refused) = (false, false);
    let mut allowed = Vec::new();
    for l in selected {
        let verdict = match kind_allowed(&l, &route.kind) {
            Err(why) => {
                kind_refused = true;
                Err(why)
            }
            Ok(()) => namespace_allowed(graph, gw, &l, route_ns).inspect_err(|_| ns_refused = true),
        };
        match verdict {
            Ok(()) => allowed.push(l),
            Err(why) => refusals.push(format!("{} {why}", l.describe(gw))),
        }
    }
    if allowed.is_empty() {
        let mut help = Vec::new();
        if kind_refused {
            help.push(format!(
                "Attach the {} to a listener whose protocol carries it (HTTPRoute/GRPCRoute: HTTP or HTTPS; TLSRoute: \
                 TLS; TCPRoute: TCP; UDPRoute: UDP) and whose allowedRoutes.kinds (if set) lists it.",
                route.kind
            ));
        }
        if ns_refused {
            help.push(format!(
                "Admit namespace {route_ns} in the listener's allowedRoutes.namespaces: `from: All`, or `from: Selector` \
                 with a selector matching the namespace's labels (every namespace carries \
                 kubernetes.io/metadata.name: {route_ns}); or move the route into the Gateway's namespace."
            ));
        }
        return Attach::Rejected {
            reason: "NotAllowedByListeners",
            detail: refusals.join("; "),
            help: help.join(" "),
        };
    }

    // 3. Hostname intersection.
    let hosts = route_hostnames(route);
    let (matching, rest): (Vec<_>, Vec<_>) = allowed
        .into_iter()
        .partition(|l| hostnames_intersect(l.match_hostname(), &hosts));
    if matching.is_empty() {
        let lh: Vec<String> = rest
            .iter()
            .map(|l| format!("`{}` ({})", l.name, l.match_hostname().unwrap_or("any")))
            .collect();
        return Attach::Rejected {
            reason: "NoMatchingListenerHostname",
            detail: format!(
                "route hostnames [{}] intersect no listener hostname of Gateway {}/{}: {}",
                hosts.join(", "),
                pr.namespace,
                pr.name,
                lh.join(", ")
            ),
            help: "Make at least one spec.hostnames entry match the listener hostname (a listener `*.example.com` \
                   matches one or more labels in front of example.com), or change the listener hostname."
                .to_string(),
        };
    }
    Attach::Accepted { listeners: matching }
}

fn opt_port(p: Option<u64>) -> String {
    p.map_or_else(|| "no port".to_string(), |p| p.to_string())
}

/// The listener admits this route kind (protocol and allowedRoutes.kinds).
pub fn kind_allowed(l: &Listener<'_>, route_kind: &str) -> Result<(), String> {
    let listed: Vec<(&str, &str)> = l
        .raw
        .pointer("/allowedRoutes/kinds")
        .and_then(Value::as_array)
        .map(|ks| {
            ks.iter()
                .filter_map(|k| Some((str_of(k, "group").unwrap_or(GW_GROUP), str_of(k, "kind")?)))
                .collect()
        })
        .unwrap_or_default();
    if !listed.is_empty() && !listed.iter().any(|(g, k)| *g == GW_GROUP && *k == route_kind) {
        let names: Vec<&str> = listed.iter().map(|(_, k)| *k).collect();
        return Err(format!(
            "admits only {} (allowedRoutes.kinds), not {route_kind}",
            names.join(", ")
        ));
    }
    match kinds_for_protocol(l.protocol) {
        None => Ok(()),
        Some(kinds) if kinds.contains(&route_kind) => Ok(()),
        Some([]) => Err(format!("has protocol `{}`, which carries no route kind", l.protocol)),
        Some(kinds) => Err(format!(
            "has protocol {}, which carries {} but not {route_kind}",
            l.protocol,
            kinds.join("/")
        )),
    }
}

/// The listener admits routes from `route_ns` (allowedRoutes.namespaces; `from: Same` by default).
pub fn namespace_allowed(graph: &Graph, gw: &Object, l: &Listener<'_>, route_ns: &str) -> Result<(), String> {
    let gw_ns = ns_of(gw);
    let from = l
        .raw
        .pointer("/allowedRoutes/namespaces/from")
        .and_then(Value::as_str)
        .unwrap_or("Same");
    match from {
        "All" => Ok(()),
        "Same" if route_ns == gw_ns => Ok(()),
        "Same" => Err(format!(
            "allows routes from namespace {gw_ns} only (allowedRoutes.namespaces.from: Same)"
        )),
        "Selector" => {
            let Some(sel) = l.raw.pointer("/allowedRoutes/namespaces/selector") else {
                return Err("has allowedRoutes.namespaces.from: Selector without a selector".to_string());
            };
            let labels = namespace_labels(graph, route_ns);
            if selector_matches(sel, &labels) {
                Ok(())
            } else {
                Err(format!(
                    "selects namespaces by {} and namespace {route_ns} has labels {{{}}}",
                    compact(sel),
                    labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
        other => Err(format!("has unknown allowedRoutes.namespaces.from `{other}`")),
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Labels of a namespace: its Namespace object's labels when the stack renders it (or it is declared
/// external), plus `kubernetes.io/metadata.name`, which the API server sets on every namespace.
pub fn namespace_labels(graph: &Graph, ns: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    if let Some(obj) = graph.get("", "Namespace", None, ns) {
        if let Some(map) = obj.at("/metadata/labels").and_then(Value::as_object) {
            for (k, v) in map {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                labels.insert(k.clone(), v);
            }
        }
    }
    labels.insert("kubernetes.io/metadata.name".to_string(), ns.to_string());
    labels
}

/// Kubernetes LabelSelector semantics (matchLabels AND matchExpressions; empty selector: everything).
pub fn selector_matches(sel: &Value, labels: &BTreeMap<String, String>) -> bool {
    let labels_ok = sel.get("matchLabels").and_then(Value::as_object).is_none_or(|m| {
        m.iter()
            .all(|(k, v)| v.as_str().is_some_and(|v| labels.get(k).is_some_and(|l| l == v)))
    });
    let exprs_ok = sel.get("matchExpressions").and_then(Value::as_array).is_none_or(|es| {
        es.iter().all(|e| {
            let key = str_of(e, "key").unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let have = labels.get(key).map(String::as_str);
            match str_of(e, "operator").unwrap_or("") {
                "In" => have.is_some_and(|h| values.contains(&h)),
                "NotIn" => have.is_none_or(|h| !values.contains(&h)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        })
    });
    labels_ok && exprs_ok
}

/// Gateway API hostname intersection between a listener hostname and a route's hostnames: no
/// hostname on either side matches; otherwise at least one route hostname must intersect.
pub fn hostnames_intersect(listener: Option<&str>, route: &[&str]) -> bool {
    match listener {
        None => true,
        Some(l) => route.is_empty() || route.iter().any(|r| patterns_intersect(l, r)),
    }
}

/// Two Gateway API hostname patterns (`*.` wildcards match one or more labels) share a hostname.
pub fn patterns_intersect(a: &str, b: &str) -> bool {
    let (a, b) = (
        a.trim_end_matches('.').to_ascii_lowercase(),
        b.trim_end_matches('.').to_ascii_lowercase(),
    );
    match (a.strip_prefix("*."), b.strip_prefix("*.")) {
        (None, None) => a == b,
        (Some(_), None) => pattern_matches(&a, &b),
        (None, Some(_)) => pattern_matches(&b, &a),
        (Some(sa), Some(sb)) => sa == sb || sa.ends_with(&format!(".{sb}")) || sb.ends_with(&format!(".{sa}")),
    }
}

/// A Gateway API hostname pattern matches a concrete hostname (`*.example.com` matches
/// `a.example.com` and `a.b.example.com`, not `example.com`).
pub fn pattern_matches(pattern: &str, host: &str) -> bool {
    let (p, h) = (
        pattern.trim_end_matches('.').to_ascii_lowercase(),
        host.trim_end_matches('.').to_ascii_lowercase(),
    );
    match p.strip_prefix("*.") {
        Some(suffix) => h.len() > suffix.len() + 1 && h.ends_with(&format!(".{suffix}")),
        None => p == h,
    }
}
