//! Gateway listeners and the routes attached to them: which names clients send to a listener, and
//! who terminates TLS for a dial host.

use super::*;

/// The identities behind a terminating listener's certificateRefs; `None` when the listener
/// does not terminate TLS or no reference resolves to something the stack describes.
pub(super) fn listener_identities<'a>(g: &'a Graph, gw: &Object, l: &Value) -> Option<Vec<Identity<'a>>> {
    let proto = l.get("protocol").and_then(Value::as_str)?;
    let terminates =
        proto == "HTTPS" || (proto == "TLS" && str_at(l, "/tls/mode").unwrap_or("Terminate") == "Terminate");
    if !terminates {
        return None;
    }
    let ids: Vec<_> = items(l, "/tls/certificateRefs")
        .filter(|r| r.get("kind").and_then(Value::as_str).unwrap_or("Secret") == "Secret")
        .filter(|r| r.get("group").and_then(Value::as_str).unwrap_or("").is_empty())
        .filter_map(|r| {
            let name = r.get("name").and_then(Value::as_str)?;
            let ns = r.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(gw));
            identity(g, ns, name)
        })
        .collect();
    (!ids.is_empty()).then_some(ids)
}

pub(super) fn route_hostnames(route: &Object) -> Vec<String> {
    strings(&route.body, "/spec/hostnames")
}

pub(super) fn gateway_routes(g: &Graph) -> impl Iterator<Item = &Object> {
    g.objects
        .iter()
        .filter(|o| o.group() == GW && matches!(o.kind.as_str(), "HTTPRoute" | "GRPCRoute" | "TLSRoute"))
}

/// Does parentRef `pr` of `route` attach to listener `l` of `gw` (name, section, port)?
pub(super) fn attaches(route: &Object, pr: &Value, gw: &Object, l: &Value) -> bool {
    let kind = pr.get("kind").and_then(Value::as_str).unwrap_or("Gateway");
    let group = pr.get("group").and_then(Value::as_str).unwrap_or(GW);
    let ns = pr.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(route));
    if kind != "Gateway" || group != GW || ns != ns_of(gw) || pr.get("name").and_then(Value::as_str) != Some(&gw.name) {
        return false;
    }
    let lname = l.get("name").and_then(Value::as_str);
    if let Some(sec) = pr.get("sectionName").and_then(Value::as_str) {
        if Some(sec) != lname {
            return false;
        }
    }
    if let Some(port) = pr.get("port").and_then(Value::as_u64) {
        if l.get("port").and_then(Value::as_u64) != Some(port) {
            return false;
        }
    }
    let proto = l.get("protocol").and_then(Value::as_str).unwrap_or("");
    match route.kind.as_str() {
        "TLSRoute" => proto == "TLS",
        _ => proto == "HTTPS" || proto == "HTTP",
    }
}

/// The names clients will send to a listener: its exact hostname; or, for a wildcard or empty
/// hostname, the hostnames of attached routes intersected with it (a route without hostnames
/// inherits the listener's wildcard); the wildcard itself when no route attaches.
pub(super) fn listener_names(g: &Graph, gw: &Object, l: &Value) -> Vec<String> {
    let lhost = l.get("hostname").and_then(Value::as_str).filter(|h| !h.is_empty());
    if let Some(h) = lhost.filter(|h| !h.starts_with("*.")) {
        return vec![h.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut attached = false;
    for route in gateway_routes(g) {
        if !items(&route.body, "/spec/parentRefs").any(|pr| attaches(route, pr, gw, l)) {
            continue;
        }
        attached = true;
        let hosts = route_hostnames(route);
        if hosts.is_empty() {
            out.extend(lhost.map(str::to_string));
        }
        for h in hosts {
            match lhost {
                None => out.push(h),
                Some(lh) => out.extend(names::gateway_intersection(lh, &h)),
            }
        }
    }
    if !attached {
        out.extend(lhost.map(str::to_string));
    }
    let mut seen = BTreeSet::new();
    out.retain(|n| seen.insert(n.to_ascii_lowercase()));
    out
}

/// Host of an `https://host[:port][/…]` dial address; `None` for plaintext or unparsable values.
pub(super) fn https_host(addr: &str) -> Option<String> {
    let rest = addr.strip_prefix("https://")?;
    let hostport = rest.split('/').next()?;
    let host = if let Some(v6) = hostport.strip_prefix('[') {
        v6.split(']').next()?.to_string()
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h.to_string(),
            _ => hostport.to_string(),
        }
    };
    (!host.is_empty()).then_some(host)
}

pub(super) enum Terminator<'a> {
    Router,
    Listener {
        gw: &'a Object,
        listener: &'a Value,
    },
    /// Carried by a route whose Gateway or listener the stack does not describe: not judged here.
    Unknown,
}

/// Who terminates TLS for the gRPC dial host: the Gateway listener a route carries it through,
/// else the router itself.
pub(super) fn grpc_terminator<'a>(g: &'a Graph, host: &str) -> Terminator<'a> {
    let mut carried = false;
    let mut best: Option<(u8, &'a Object, &'a Value)> = None;
    for route in gateway_routes(g) {
        let hosts = route_hostnames(route);
        let explicit = hosts.iter().any(|h| names::gateway_matches(h, host));
        if !hosts.is_empty() && !explicit {
            continue;
        }
        carried |= explicit;
        for pr in items(&route.body, "/spec/parentRefs") {
            let ns = pr.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(route));
            let Some(name) = pr.get("name").and_then(Value::as_str) else {
                continue;
            };
            let Some(gw) = g.get(GW, "Gateway", Some(ns), name) else {
                carried |= explicit;
                continue;
            };
            for l in items(&gw.body, "/spec/listeners").filter(|l| attaches(route, pr, gw, l)) {
                let rank = match l.get("hostname").and_then(Value::as_str) {
                    Some(h) if h.starts_with("*.") && names::gateway_matches(h, host) => 1,
                    Some(h) if names::gateway_matches(h, host) => 2,
                    Some(_) => continue,
                    None => 0,
                };
                carried = true;
                if best.is_none_or(|(r, _, _)| rank > r) {
                    best = Some((rank, gw, l));
                }
            }
        }
    }
    match best {
        Some((_, gw, l)) => match (l.get("protocol").and_then(Value::as_str), str_at(l, "/tls/mode")) {
            (Some("HTTPS"), _) | (Some("TLS"), None | Some("Terminate")) => Terminator::Listener { gw, listener: l },
            (Some("TLS"), Some("Passthrough")) => Terminator::Router,
            _ => Terminator::Unknown, // plaintext listener: plaintext-endpoint's business
        },
        None if carried => Terminator::Unknown,
        None => Terminator::Router,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::graph;

    const HOST: &str = "grpc.example.com";

    /// Gateway `edge/gw` with `listeners` (a YAML flow list), a Certificate writing Secret
    /// `edge/gw-tls`, and `more` documents.
    fn gateway_graph(listeners: &str, more: &str) -> Graph {
        graph(
            "e",
            &format!(
                "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw, namespace: edge}}\nspec:\n  gatewayClassName: envoy\n  listeners: {listeners}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {{name: gw, namespace: edge}}\nspec: {{secretName: gw-tls, dnsNames: [{HOST}], issuerRef: {{name: ca}}}}\n{more}"
            ),
        )
    }

    fn grpc_route(hostnames: &str, parent: &str) -> String {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {{name: r{}, namespace: nvcf}}\nspec:\n  parentRefs: [{parent}]\n  hostnames: {hostnames}\n",
            hostnames.len() + parent.len()
        )
    }

    fn terminating_listener(g: &Graph) -> String {
        match grpc_terminator(g, HOST) {
            Terminator::Listener { listener, .. } => str_at(listener, "/name").unwrap_or("?").to_string(),
            Terminator::Router => "router".into(),
            Terminator::Unknown => "unknown".into(),
        }
    }

    #[test]
    fn only_terminating_listeners_have_identities() {
        let g = gateway_graph("[]", "");
        let gw = g.objects.iter().find(|o| o.kind == "Gateway").unwrap();
        let refs = "tls: {certificateRefs: [{name: gw-tls}]}";
        for (listener, terminates) in [
            (format!("{{name: a, protocol: HTTPS, port: 443, {refs}}}"), true),
            (format!("{{name: a, protocol: TLS, port: 443, {refs}}}"), true),
            (
                "{name: a, protocol: TLS, port: 443, tls: {mode: Passthrough, certificateRefs: [{name: gw-tls}]}}"
                    .into(),
                false,
            ),
            (format!("{{name: a, protocol: HTTP, port: 80, {refs}}}"), false),
        ] {
            let l: Value = crate::yaml::value(&listener).unwrap();
            assert_eq!(listener_identities(&g, gw, &l).is_some(), terminates, "{listener}");
        }
    }

    #[test]
    fn gateway_routes_are_the_tls_carrying_route_kinds_of_gateway_api() {
        let yaml = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\n---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: UDPRoute\nmetadata: {name: udp}\n---\napiVersion: example.com/v1\nkind: HTTPRoute\nmetadata: {name: foreign}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: grpc}\n";
        let g = graph("e", yaml);
        let names: Vec<&str> = gateway_routes(&g).map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["grpc"]);
    }

    #[test]
    fn a_parent_ref_attaches_by_kind_group_namespace_name_section_port_and_protocol() {
        let g = gateway_graph("[]", "");
        let gw = g.objects.iter().find(|o| o.kind == "Gateway").unwrap();
        let route = |kind: &str| {
            graph(
                "e",
                &format!(
                    "apiVersion: gateway.networking.k8s.io/v1\nkind: {kind}\nmetadata: {{name: r, namespace: nvcf}}\n"
                ),
            )
        };
        let (grpc, tls) = (route("GRPCRoute"), route("TLSRoute"));
        let v = |s: &str| -> Value { crate::yaml::value(s).unwrap() };
        let https = v("{name: a, protocol: HTTPS, port: 443}");
        let http = v("{name: a, protocol: HTTP, port: 80}");
        let tls_l = v("{name: a, protocol: TLS, port: 443}");
        let pr = "name: gw, namespace: edge";
        for (kind_graph, parent, listener, want) in [
            (&grpc, format!("{{{pr}}}"), &https, true),
            (&grpc, format!("{{{pr}}}"), &http, true),
            (&grpc, format!("{{{pr}}}"), &tls_l, false),
            (&tls, format!("{{{pr}}}"), &tls_l, true),
            (&tls, format!("{{{pr}}}"), &https, false),
            (&grpc, format!("{{{pr}, kind: Service}}"), &https, false),
            (&grpc, format!("{{{pr}, group: example.com}}"), &https, false),
            (&grpc, "{name: gw, namespace: nvcf}".to_string(), &https, false),
            (&grpc, "{name: gw}".to_string(), &https, false),
            (&grpc, "{name: other, namespace: edge}".to_string(), &https, false),
            (&grpc, format!("{{{pr}, sectionName: a}}"), &https, true),
            (&grpc, format!("{{{pr}, sectionName: b}}"), &https, false),
            (&grpc, format!("{{{pr}, port: 443}}"), &https, true),
            (&grpc, format!("{{{pr}, port: 8443}}"), &https, false),
        ] {
            let r = kind_graph.objects.first().unwrap();
            assert_eq!(
                attaches(r, &v(&parent), gw, listener),
                want,
                "{} {parent} {listener}",
                r.kind
            );
        }
    }

    #[test]
    fn an_unbracketed_ipv6_host_keeps_a_last_group_that_is_no_port() {
        assert_eq!(https_host("https://fe80::abcd").as_deref(), Some("fe80::abcd"));
        assert_eq!(
            https_host("https://grpc.example.com:443/x").as_deref(),
            Some("grpc.example.com")
        );
    }

    /// The listener that terminates the dial host: an exact hostname over a wildcard over none; a
    /// listener whose hostname does not match is not a candidate.
    #[test]
    fn the_most_specific_matching_listener_terminates() {
        let l = |name: &str, host: Option<&str>| {
            let h = host.map(|h| format!(", hostname: \"{h}\"")).unwrap_or_default();
            format!("{{name: {name}, protocol: HTTPS, port: 443{h}, tls: {{certificateRefs: [{{name: gw-tls}}]}}}}")
        };
        let route = grpc_route(&format!("[{HOST}]"), "{name: gw, namespace: edge}");
        let listeners = |ls: &[String]| format!("[{}]", ls.join(", "));
        for (ls, want) in [
            (vec![l("wild", Some("*.example.com")), l("exact", Some(HOST))], "exact"),
            (vec![l("none", None), l("wild", Some("*.example.com"))], "wild"),
            (
                vec![l("other", Some("other.example.com")), l("wild", Some("*.example.com"))],
                "wild",
            ),
            (vec![l("other", Some("other.example.com")), l("none", None)], "none"),
            (vec![l("other", Some("*.other.com"))], "unknown"),
            // Of equally specific listeners, the first listed.
            (
                vec![l("w1", Some("*.example.com")), l("w2", Some("*.example.com"))],
                "w1",
            ),
        ] {
            let g = gateway_graph(&listeners(&ls), &route);
            assert_eq!(terminating_listener(&g), want, "{ls:?}");
        }
    }

    /// A TLS listener in Passthrough mode hands the TLS of its TLSRoutes to the backend: the router
    /// terminates it.
    #[test]
    fn a_passthrough_listener_leaves_tls_to_the_router() {
        let listener =
            format!("[{{name: pass, protocol: TLS, port: 443, hostname: {HOST}, tls: {{mode: Passthrough}}}}]");
        let route = format!(
            "---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {{name: pass, namespace: nvcf}}\nspec:\n  parentRefs: [{{name: gw, namespace: edge}}]\n  hostnames: [{HOST}]\n"
        );
        let g = gateway_graph(&listener, &route);
        assert_eq!(terminating_listener(&g), "router");
        let g = gateway_graph(&listener.replace("Passthrough", "Terminate"), &route);
        assert_eq!(terminating_listener(&g), "pass");
    }

    /// A route that names the dial host carries it even when no listener of its Gateway takes it,
    /// whatever other routes come after: the terminator is then unknown, not the router.
    #[test]
    fn a_route_naming_the_dial_host_marks_it_carried() {
        let listener = "[{name: a, protocol: HTTPS, port: 443, hostname: \"*.example.com\"}]";
        let explicit = grpc_route(&format!("[{HOST}]"), "{name: gw, namespace: edge, sectionName: b}");
        let to_missing = grpc_route("[]", "{name: missing-gateway, namespace: edge}");
        let g = gateway_graph(listener, &format!("{explicit}{to_missing}"));
        assert_eq!(terminating_listener(&g), "unknown");
        let g = gateway_graph(listener, &to_missing);
        assert_eq!(terminating_listener(&g), "router");
    }
}
