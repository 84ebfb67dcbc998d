//! `plaintext-endpoint`: the router's plaintext worker gRPC exposed past the cluster: a TCPRoute to
//! it without a TLS-terminating listener, a LoadBalancer/NodePort Service, an Ingress host without TLS.

use super::*;

/// A Service port that carries the router's worker gRPC (plaintext in the binary): it reaches one
/// of the router's gRPC listen ports (a named `targetPort` resolved through the selected pods'
/// `containerPorts`, `Graph::target_ports`), or its name or appProtocol says gRPC/h2c. A named
/// target port no selected pod declares is judged by its name.
pub(super) fn grpc_port(g: &Graph, svc: Option<&Object>, p: &Value, grpc_ports: &[u16]) -> bool {
    let (name, app) = dial::port_name_and_protocol(p);
    let router = |n: u64| grpc_ports.iter().any(|p| u64::from(*p) == n);
    let target = svc.map(|s| g.target_ports(s, p)).unwrap_or_default();
    let unresolved_named = match (&target.unresolved, svc) {
        (Some(t), _) => t.to_ascii_lowercase().contains("grpc"),
        (None, None) => p
            .get("targetPort")
            .and_then(Value::as_str)
            .is_some_and(|t| t.to_ascii_lowercase().contains("grpc")),
        (None, Some(_)) => false,
    };
    p.get("port").and_then(Value::as_u64).is_some_and(router)
        || target.ports.iter().any(|n| router(*n))
        || p.get("targetPort").and_then(Value::as_u64).is_some_and(router)
        || name.contains("grpc")
        || unresolved_named
        || app.contains("grpc")
        || app.contains("h2c")
}

/// A route of any kind (TCPRoute, HTTPRoute, GRPCRoute) that forwards to a worker gRPC port
/// through a listener that does not terminate TLS (protocol `TCP` or `HTTP`): whichever route kind
/// carries it, worker registration would cross the network in cleartext. A TCPRoute whose parent
/// the render does not resolve counts as plaintext (what it attaches to is unknown); HTTP and gRPC
/// routes are judged on the listeners they resolve to (`route-parent-resolves` reports the rest).
pub(super) fn route_grpc(g: &Graph, route: &Object, grpc_ports: &[u16]) -> Vec<Finding> {
    let ns = route.namespace.as_deref();
    let mut out = Vec::new();
    let listener = match plaintext_listener(g, route) {
        Some(Some(proto)) => proto,
        Some(None) if route.kind == "TCPRoute" => "TCP".to_string(),
        _ => return out,
    };
    let through = if listener == "TCP" {
        "a plain TCP listener".to_string()
    } else {
        format!("a plaintext {listener} listener")
    };
    for rule in route.at("/spec/rules").and_then(Value::as_array).into_iter().flatten() {
        for b in rule.get("backendRefs").and_then(Value::as_array).into_iter().flatten() {
            let kind = b.get("kind").and_then(Value::as_str).unwrap_or("Service");
            let group = b.get("group").and_then(Value::as_str).unwrap_or("");
            let (Some(name), Some(port)) = (
                b.get("name").and_then(Value::as_str),
                b.get("port").and_then(Value::as_u64),
            ) else {
                continue;
            };
            if kind != "Service" || !group.is_empty() {
                continue;
            }
            let bns = b.get("namespace").and_then(Value::as_str).or(ns);
            let svc = g.get("", "Service", bns, name);
            let svc_port = svc
                .and_then(|s| s.at("/spec/ports"))
                .and_then(Value::as_array)
                .and_then(|ps| ps.iter().find(|p| p.get("port").and_then(Value::as_u64) == Some(port)));
            let grpc = match svc_port {
                Some(p) => grpc_port(g, svc, p, grpc_ports),
                None => grpc_ports.iter().any(|g| u64::from(*g) == port),
            };
            if grpc {
                out.push(
                    Finding::object_at(PLAINTEXT_ENDPOINT, route, name, format!("{}: routes worker gRPC to Service {}/{name} port {port} through {through}: registration traffic would cross the network in cleartext", route.display(), bns.unwrap_or("?")))
                        .with_help("expose worker gRPC through an HTTPS listener whose certificate covers the gRPC dial host, with a GRPCRoute to a Service port that has appProtocol kubernetes.io/h2c"),
                );
            }
        }
    }
    out
}

/// The first listener a route's parentRefs select that does not terminate TLS (`Some(Some(protocol))`),
/// none (`None`: every one terminates TLS), or a parent the render does not resolve (`Some(None)`).
pub(super) fn plaintext_listener(g: &Graph, route: &Object) -> Option<Option<String>> {
    let mut unresolved = false;
    let mut any = false;
    for p in route
        .at("/spec/parentRefs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or("Gateway");
        let name = p.get("name").and_then(Value::as_str);
        let ns = p
            .get("namespace")
            .and_then(Value::as_str)
            .or(route.namespace.as_deref());
        let gw = name
            .filter(|_| kind == "Gateway")
            .and_then(|n| g.get("gateway.networking.k8s.io", "Gateway", ns, n));
        let Some(gw) = gw else {
            unresolved = true;
            continue;
        };
        let section = p.get("sectionName").and_then(Value::as_str);
        for l in gw.at("/spec/listeners").and_then(Value::as_array).into_iter().flatten() {
            if section.is_none() || l.get("name").and_then(Value::as_str) == section {
                any = true;
                let proto = l.get("protocol").and_then(Value::as_str).unwrap_or_default();
                let mode = l.pointer("/tls/mode").and_then(Value::as_str).unwrap_or("Terminate");
                let terminates = proto == "HTTPS" || (proto == "TLS" && mode == "Terminate");
                if !terminates && proto != "UDP" {
                    return Some(Some(proto.to_string()));
                }
            }
        }
    }
    (unresolved || !any).then_some(None)
}

/// A LoadBalancer/NodePort Service that exposes the router's plaintext gRPC port (its
/// `--listen-addr` port, 50071 by default).
pub(super) fn exposed_grpc_service(g: &Graph, svc: &Object, grpc_ports: &[u16]) -> Vec<Finding> {
    let ty = svc.str_at("/spec/type").unwrap_or("ClusterIP");
    if ty != "LoadBalancer" && ty != "NodePort" {
        return Vec::new();
    }
    let num = |p: &Value, k: &str| p.get(k).and_then(Value::as_u64);
    // The container port it delivers to: a number, or a name resolved through the selected pods.
    let target = |p: &Value| {
        let reached = g.target_ports(svc, p).ports;
        grpc_ports
            .iter()
            .copied()
            .find(|gp| reached.contains(&u64::from(*gp)) || num(p, "port") == Some(u64::from(*gp)))
    };
    let ports = svc.at("/spec/ports").and_then(Value::as_array).into_iter().flatten();
    ports
        .filter_map(|p| target(p).map(|gp| (p, gp)))
        .map(|(p, gp)| {
            let port = num(p, "port").unwrap_or_default();
            let via = match p.get("targetPort").and_then(Value::as_str).filter(|t| t.parse::<u64>().is_err()) {
                Some(name) => format!(" via targetPort `{name}`"),
                None => String::new(),
            };
            let needle = if via.is_empty() { gp.to_string() } else { format!("port: {port}") };
            Finding::object_at(PLAINTEXT_ENDPOINT, svc, &needle, format!("{}: a {ty} Service exposes the router's plaintext gRPC port (port {port} → {gp}{via}) outside the cluster", svc.display()))
                .with_help("keep the router's gRPC Service ClusterIP and expose worker gRPC through an HTTPS Gateway listener (GRPCRoute, h2c to the router)")
        })
        .collect()
}

/// Whether an Ingress `spec.tls` host covers a rule's host: the same name (ASCII case-insensitive),
/// or a one-label wildcard (`*.example.com` covers `a.example.com`, not `x.a.example.com` nor
/// `example.com`). `tls[].hosts` names what the entry's certificate covers, and ingress-nginx picks
/// the entry for a host by exact name, else by its certificate's SANs, which follow X.509's
/// one-label wildcard matching.
pub(super) fn tls_host_covers(tls: &str, host: &str) -> bool {
    let (t, h) = (tls.to_ascii_lowercase(), host.to_ascii_lowercase());
    if t == h {
        return true;
    }
    match (t.strip_prefix("*."), h.split_once('.')) {
        (Some(base), Some((label, rest))) => !label.is_empty() && label != "*" && rest == base,
        _ => false,
    }
}

/// An Ingress that serves a host without TLS (no `spec.tls` entry covers it: `tls_host_covers`) and sends it to a
/// Service port carrying gRPC or TLS (the router's gRPC port, a `grpc*`/`https*` port or such an
/// appProtocol): clients would reach that backend in cleartext.
pub(super) fn plaintext_ingress(g: &Graph, ing: &Object, grpc_ports: &[u16]) -> Vec<Finding> {
    let ns = ing.namespace.as_deref();
    let tls_hosts: Vec<String> = ing
        .at("/spec/tls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|t| t.get("hosts").and_then(Value::as_array).into_iter().flatten())
        .filter_map(Value::as_str)
        .map(str::to_ascii_lowercase)
        .collect();
    let mut backends: Vec<(Option<&str>, &Value)> = Vec::new();
    if let Some(b) = ing.at("/spec/defaultBackend") {
        backends.push((None, b));
    }
    for rule in ing.at("/spec/rules").and_then(Value::as_array).into_iter().flatten() {
        let host = rule.get("host").and_then(Value::as_str);
        for p in rule
            .pointer("/http/paths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(b) = p.get("backend") {
                backends.push((host, b));
            }
        }
    }
    let mut out = Vec::new();
    for (host, b) in backends {
        if host.is_some_and(|h| tls_hosts.iter().any(|t| tls_host_covers(t, h))) {
            continue;
        }
        let Some(svc_name) = b.pointer("/service/name").and_then(Value::as_str) else {
            continue;
        };
        let want_num = b.pointer("/service/port/number").and_then(Value::as_u64);
        let want_name = b.pointer("/service/port/name").and_then(Value::as_str);
        let Some(svc) = g.get("", "Service", ns, svc_name) else {
            continue;
        };
        let port = svc
            .at("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| {
                (want_num.is_some() && p.get("port").and_then(Value::as_u64) == want_num)
                    || (want_name.is_some() && p.get("name").and_then(Value::as_str) == want_name)
            });
        let Some(p) = port else { continue };
        if !(grpc_port(g, Some(svc), p, grpc_ports) || dial::serves_tls_or_grpc(p)) {
            continue;
        }
        let shown_host = host.unwrap_or("(default backend, any host)");
        let shown_port = want_num
            .map(|n| n.to_string())
            .or(want_name.map(str::to_string))
            .unwrap_or_default();
        let mut f = Finding::object_at(PLAINTEXT_ENDPOINT, ing, svc_name, format!(
                "{}: host `{shown_host}` has no TLS entry but routes to Service {}/{svc_name} port {shown_port}, which carries gRPC or TLS: clients would reach it in cleartext",
                ing.display(), ns.unwrap_or("default")
            ))
            .with_help("list the host under spec.tls with a Secret whose certificate covers it (or expose worker gRPC through an HTTPS Gateway listener and a GRPCRoute)");
        // The backend under this host's rule, not the first one of the Ingress.
        if let (Some(h), Some(src)) = (host, f.source.as_mut()) {
            src.line = ing.line_of_path(&[format!("host: {h}"), svc_name.to_string()], |l, n| l.contains(n));
        }
        out.push(f);
    }
    out
}
