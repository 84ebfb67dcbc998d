//! `plaintext-endpoint`: an endpoint that must speak TLS is plaintext (Vault/OpenBao servers, the
//! OpenBao listener, the workers' gRPC dial address, worker gRPC behind a plain TCP listener).

use super::*;

/// `VAULT_ADDR`, `BAO_ADDR`, `AGENT_INJECT_VAULT_ADDR`, `BAO_API_ADDR`, …
fn is_vault_addr_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').collect();
    words.iter().any(|w| *w == "VAULT" || *w == "BAO") && matches!(words.last(), Some(&"ADDR") | Some(&"ADDRESS"))
}

pub(super) fn plaintext_endpoint(ctx: &Ctx) -> Vec<Finding> {
    // The router's dial flag in any spelling (`--grpc-pylon-dial-addr`, `-grpc_pylon_dial_addr`,
    // `GRPC_PYLON_DIAL_ADDR`): `grpcpylondialaddr`.
    let grpc_dial = norm(router::GRPC_PYLON_DIAL_ADDR);
    // The router's gRPC ports, from its `--listen-addr` (the binary's default when absent).
    let grpc_ports = router::grpc_listen_ports(ctx.graph);
    let mut out = Vec::new();
    // Findings of one root cause: a listener with TLS off, and the plain http:// addresses of the
    // same release that only exist because of it (folded into one finding below).
    let mut causes: Vec<(usize, Cause)> = Vec::new();
    for obj in rendered(ctx.graph) {
        // The unit of one cause: the release, or for `--manifests` input (no release) the file
        // the object was read from, so unrelated inputs are never folded into one finding.
        let release = obj
            .prov
            .release
            .clone()
            .or_else(|| obj.prov.file.as_ref().map(|f| format!("file:{f}")));
        match (obj.group(), obj.kind.as_str()) {
            ("cert-manager.io", "Issuer" | "ClusterIssuer") => {
                if let Some(server) = obj.str_at("/spec/vault/server").filter(|s| is_http(s)) {
                    out.push(
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, "server:", format!("{}: spec.vault.server `{server}` is plain HTTP; cert-manager would send its Vault token and receive signed certificates in cleartext", obj.display()))
                            .with_help("use the OpenBao listener's https:// address and set caBundle (or caBundleSecretRef) to the CA that signed it"),
                    );
                }
            }
            ("", "ConfigMap") => {
                for f in configmap_plaintext(obj) {
                    if f.needle_tls_disable {
                        causes.push((out.len(), Cause::ListenerOff(release.clone())));
                    }
                    out.push(f.finding);
                }
                out.extend(configmap_dials(ctx, obj));
            }
            ("gateway.networking.k8s.io", "TCPRoute") => out.extend(tcp_route_grpc(ctx.graph, obj, &grpc_ports)),
            ("", "Service") => out.extend(exposed_grpc_service(obj, &grpc_ports)),
            ("networking.k8s.io", "Ingress") => out.extend(plaintext_ingress(ctx.graph, obj, &grpc_ports)),
            _ => {}
        }
        for (list, c) in obj.containers() {
            let who = format!("{}: {} `{}`", obj.display(), list_word(list), container_name(c));
            if let Some(shown) = dev_server(&cmdline(c)) {
                out.push(
                    Finding::object_at(PLAINTEXT_ENDPOINT, obj, "-dev", format!("{who} runs `{shown}`: an OpenBao/Vault dev server, in memory, unsealed, with a root token and a plaintext listener"))
                        .with_help("run a real server with a listener that sets tls_cert_file/tls_key_file (or, for a local test only, `-dev-tls`)"),
                );
            }
            let mut dialed: Vec<String> = Vec::new();
            for (place, words) in commands(c) {
                let flags = flag_uses(&words);
                for f in &flags {
                    if f.name == grpc_dial {
                        let v = f.value().unwrap_or_default();
                        if !is_https(v) {
                            out.push(dial_addr_finding(obj, &f.flag, &who, v));
                        }
                        dialed.push(v.to_string());
                    } else if let Some(v) = f.value().filter(|_| !dial::is_listen_name(&f.name)) {
                        let what = format!("{}`{}`", place_word(place), f.flag);
                        if !dialed.iter().any(|d| d == v) {
                            out.extend(plaintext_dial(ctx, obj, &who, &what, &f.flag, v));
                            dialed.push(v.to_string());
                        }
                    }
                }
                // Explicit http:// URLs given as arguments (`curl http://…`).
                for w in &words {
                    if !is_http(w) || dialed.contains(w) {
                        continue;
                    }
                    let what = format!("{}an argument", place_word(place));
                    out.extend(plaintext_dial(ctx, obj, &who, &what, w, w));
                    dialed.push(w.clone());
                }
            }
            for EnvVar {
                name,
                value,
                from,
                needle,
            } in env_of(ctx.graph, obj, c)
            {
                let text = scalar_text(&value);
                let via = from.map(|f| format!(" (from {f})")).unwrap_or_default();
                if is_vault_addr_env(&name) && is_http(&text) && !is_loopback_url(&text) {
                    causes.push((out.len(), Cause::PlainAddr(release.clone())));
                    out.push(
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, &needle, format!("{who} sets `{name}={text}`{via}: OpenBao/Vault is reached over plain HTTP"))
                            .with_help(format!("set `{name}` to the https:// address of the OpenBao listener and give the client its CA (BAO_CACERT/VAULT_CACERT)")),
                    );
                } else if norm(&name).ends_with(&grpc_dial) && !is_https(&text) {
                    out.push(dial_addr_finding(obj, &needle, &who, &text));
                } else if norm(&name).ends_with("localconfig") && disables_tls(&text) {
                    causes.push((out.len(), Cause::ListenerOff(release.clone())));
                    out.push(
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, &needle, format!("{who}: `{name}`{via} configures a listener with tls_disable: the OpenBao/Vault API would be plaintext"))
                            .with_help("remove tls_disable and set tls_cert_file/tls_key_file on the listener"),
                    );
                } else if !dial::is_listen_name(&name) && !dialed.contains(&text) {
                    out.extend(plaintext_dial(
                        ctx,
                        obj,
                        &who,
                        &format!("`{name}`{via}"),
                        &needle,
                        &text,
                    ));
                }
            }
        }
    }
    let mut out = fold_same_cause(out, &causes);
    if let Some(state) = ctx.state {
        // OpenBao/Vault servers by chart name or by what their values configure.
        for r in state
            .installed()
            .filter(|r| is_openbao(r) || server_config::configures_server(&effective_values(r)))
        {
            out.extend(openbao_values(ctx, r));
        }
    }
    out
}

/// Why a finding was reported, where one cause can show in several places.
enum Cause {
    /// A server listener with `tls_disable`, in this release.
    ListenerOff(Option<String>),
    /// A plain `http://` OpenBao/Vault address, in this release.
    PlainAddr(Option<String>),
}

/// One cause, one finding: in each release with a listener whose TLS is off, the first such
/// finding keeps its place and takes every other one of that release (more copies of the
/// configuration, the plain http:// addresses clients then dial) as related locations.
fn fold_same_cause(out: Vec<Finding>, causes: &[(usize, Cause)]) -> Vec<Finding> {
    let mut primary_of: Vec<(Option<&String>, usize)> = Vec::new();
    for (i, c) in causes {
        if let Cause::ListenerOff(r) = c {
            if !primary_of.iter().any(|(pr, _)| *pr == r.as_ref()) {
                primary_of.push((r.as_ref(), *i));
            }
        }
    }
    let mut folded: Vec<(usize, usize)> = Vec::new(); // (finding, into primary)
    for (i, c) in causes {
        let r = match c {
            Cause::ListenerOff(r) | Cause::PlainAddr(r) => r.as_ref(),
        };
        if let Some((_, p)) = primary_of.iter().find(|(pr, _)| *pr == r) {
            if p != i {
                folded.push((*i, *p));
            }
        }
    }
    if folded.is_empty() {
        return out;
    }
    let mut slots: Vec<Option<Finding>> = out.into_iter().map(Some).collect();
    for (i, p) in &folded {
        if let Some(f) = slots[*i].take() {
            if let Some(primary) = slots[*p].take() {
                slots[*p] = Some(primary.with_related([f]));
            }
        }
    }
    slots.into_iter().flatten().collect()
}

/// `bao server -dev` / `vault server -dev` (any path to the binary, any wrapper before it) without
/// `-dev-tls`: the dev server's listener is plaintext.
fn dev_server(words: &[String]) -> Option<String> {
    let server = words.iter().position(|w| w == "server")?;
    let bin = words[..server].iter().rev().find(|w| !w.starts_with('-'))?;
    let bin = bin.rsplit('/').next().unwrap_or(bin);
    if !matches!(bin, "bao" | "vault" | "openbao") {
        return None;
    }
    let after = &words[server + 1..];
    let dev = after.iter().find(|w| {
        let f = w.trim_start_matches('-');
        w.starts_with('-') && (f == "dev" || f.strip_prefix("dev=").is_some_and(truthy_str))
    })?;
    if after.iter().any(|w| {
        let f = w.trim_start_matches('-');
        w.starts_with('-') && (f == "dev-tls" || f.strip_prefix("dev-tls=").is_some_and(truthy_str))
    }) {
        return None;
    }
    Some(format!("{bin} server {dev}"))
}

fn place_word(place: &str) -> String {
    if place.is_empty() {
        String::new()
    } else {
        format!("its {place} exec command's ")
    }
}

/// A plaintext dial address: `http://` or scheme-less `host:port` reaching a Service port that
/// serves TLS or gRPC, or explicit `http://` to any host that is not loopback (unless the policy's
/// `settings.plaintextAllowed` lists it with a reason).
fn plaintext_dial(ctx: &Ctx, obj: &Object, who: &str, what: &str, needle: &str, value: &str) -> Option<Finding> {
    let d = dial::parse_dial(value)?;
    if d.is_loopback() {
        return None;
    }
    if let Some((svc, p)) = dial::service_port(ctx.graph, obj.namespace.as_deref(), &d) {
        if dial::serves_tls_or_grpc(p) {
            let pname = p.get("name").and_then(Value::as_str).unwrap_or("?");
            let app = p
                .get("appProtocol")
                .and_then(Value::as_str)
                .map(|a| format!(", appProtocol {a}"))
                .unwrap_or_default();
            let scheme = if d.http {
                "plain http://"
            } else {
                "no scheme (plaintext)"
            };
            return Some(
                Finding::object_at(PLAINTEXT_ENDPOINT, obj, needle, format!(
                    "{who}: {what} dials `{value}` with {scheme}, but {} port {} (`{pname}`{app}) serves TLS or gRPC: the client would speak cleartext to a TLS endpoint, or carry gRPC unencrypted",
                    svc.display(), d.port.unwrap_or(80)
                ))
                .with_help("dial https://<host>:<port> and give the client the CA that signed the server's certificate"),
            );
        }
    }
    if !d.http {
        return None;
    }
    if ctx.policy.settings.plaintext_allowed(&d.host, d.port).is_some() {
        return None;
    }
    Some(
        Finding::object_at(PLAINTEXT_ENDPOINT, obj, needle, format!(
            "{who}: {what} dials `{value}`, plain http:// to `{}`, which is not loopback: requests and credentials cross the network in cleartext",
            d.host
        ))
        .with_help(format!(
            "use https://; if this endpoint truly must stay plaintext, list it in the policy: settings.plaintextAllowed: [{{host: {}, reason: …}}]",
            d.host
        )),
    )
}

/// ConfigMap values that are dial addresses, and `http://` URLs in configuration text.
fn configmap_dials(ctx: &Ctx, obj: &Object) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(data) = obj.at("/data").and_then(Value::as_object) else {
        return out;
    };
    let who = obj.display();
    for (key, v) in data {
        let Some(text) = v.as_str() else { continue };
        if key == "profile.yaml" || dial::is_listen_name(key) {
            continue;
        }
        if dial::parse_dial(text).is_some() {
            out.extend(plaintext_dial(ctx, obj, &who, &format!("key `{key}`"), key, text));
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        for line in text.lines() {
            let l = line.trim_start();
            if l.starts_with('#') || l.starts_with("//") {
                continue;
            }
            for w in l
                .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '=' | ';' | '(' | ')' | '<' | '>'))
            {
                if is_http(w) && !seen.contains(&w) {
                    seen.push(w);
                    out.extend(plaintext_dial(ctx, obj, &who, &format!("key `{key}`"), w, w));
                }
            }
        }
    }
    out
}

fn dial_addr_finding(obj: &Object, needle: &str, who: &str, value: &str) -> Finding {
    let shown = if value.is_empty() {
        "(empty)".to_string()
    } else {
        format!("`{value}`")
    };
    Finding::object_at(PLAINTEXT_ENDPOINT, obj, needle, format!("{who}: the workers' gRPC dial address {needle} is {shown}, not https://: workers would register over plaintext gRPC"))
        .with_help("set it to https://<grpc dial host>:<port>, where a listener with a certificate covering that host terminates TLS")
}

/// A finding of `configmap_plaintext`, and whether it is a listener's `tls_disable`.
struct Tagged {
    needle_tls_disable: bool,
    finding: Finding,
}

/// OpenBao server configuration in a ConfigMap with `tls_disable` on, and a worker profile whose
/// gRPC dial address is not https.
fn configmap_plaintext(obj: &Object) -> Vec<Tagged> {
    let mut out = Vec::new();
    let Some(data) = obj.at("/data").and_then(Value::as_object) else {
        return out;
    };
    for (key, v) in data {
        let Some(text) = v.as_str() else { continue };
        if disables_tls(text) {
            out.push(Tagged {
                needle_tls_disable: true,
                finding: Finding::object_at(PLAINTEXT_ENDPOINT, obj, "tls_disable", format!("{}: `{key}` configures a listener with tls_disable: the OpenBao/Vault API would be plaintext", obj.display()))
                    .with_help("remove tls_disable (OpenBao chart: global.tlsDisable: false and a server config whose listener sets tls_cert_file/tls_key_file)"),
            });
        }
        if key == "profile.yaml" {
            let Ok(profile) = crate::yaml::value(text) else {
                continue;
            };
            let addr = profile.as_object().and_then(|m| {
                m.iter()
                    .find(|(k, _)| matches!(norm(k).as_str(), "grpcdialaddress" | "grpcdialaddr"))
            });
            if let Some((k, a)) = addr {
                let a = scalar_text(a);
                if !is_https(&a) {
                    out.push(Tagged {
                        needle_tls_disable: false,
                        finding: Finding::object_at(PLAINTEXT_ENDPOINT, obj, k, format!("{}: worker profile `{k}` is `{a}`, not https://: workers would register over plaintext gRPC", obj.display()))
                            .with_help("set the router's gRPC dial address to https://<host>:<port>"),
                    });
                }
            }
        }
    }
    out
}

/// A Service port that carries the router's worker gRPC (plaintext in the binary): it reaches one
/// of the router's gRPC listen ports, or its name or appProtocol says gRPC/h2c.
fn grpc_port(p: &Value, grpc_ports: &[u16]) -> bool {
    let name = p
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let app = p
        .get("appProtocol")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let num = |k: &str| p.get(k).and_then(Value::as_u64);
    let router = |n: Option<u64>| n.is_some_and(|n| grpc_ports.iter().any(|p| u64::from(*p) == n));
    router(num("port"))
        || router(num("targetPort"))
        || name.contains("grpc")
        || p.get("targetPort")
            .and_then(Value::as_str)
            .is_some_and(|t| t.to_ascii_lowercase().contains("grpc"))
        || app.contains("grpc")
        || app.contains("h2c")
}

/// A TCPRoute that forwards to a gRPC port, unless every listener it attaches to terminates TLS.
fn tcp_route_grpc(g: &Graph, route: &Object, grpc_ports: &[u16]) -> Vec<Finding> {
    let ns = route.namespace.as_deref();
    let mut out = Vec::new();
    if attaches_only_to_tls_listeners(g, route) {
        return out;
    }
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
            let svc_port = g
                .get("", "Service", bns, name)
                .and_then(|s| s.at("/spec/ports"))
                .and_then(Value::as_array)
                .and_then(|ps| ps.iter().find(|p| p.get("port").and_then(Value::as_u64) == Some(port)));
            let grpc = match svc_port {
                Some(p) => grpc_port(p, grpc_ports),
                None => grpc_ports.iter().any(|g| u64::from(*g) == port),
            };
            if grpc {
                out.push(
                    Finding::object_at(PLAINTEXT_ENDPOINT, route, name, format!("{}: routes worker gRPC to Service {}/{name} port {port} through a plain TCP listener: registration traffic would cross the network in cleartext", route.display(), bns.unwrap_or("?")))
                        .with_help("expose worker gRPC through an HTTPS listener whose certificate covers the gRPC dial host, with a GRPCRoute to a Service port that has appProtocol kubernetes.io/h2c"),
                );
            }
        }
    }
    out
}

/// Whether every listener a route's parentRefs select is a TLS listener that terminates TLS.
fn attaches_only_to_tls_listeners(g: &Graph, route: &Object) -> bool {
    let mut protocols = Vec::new();
    for p in route
        .at("/spec/parentRefs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or("Gateway");
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            return false;
        };
        if kind != "Gateway" {
            return false;
        }
        let ns = p
            .get("namespace")
            .and_then(Value::as_str)
            .or(route.namespace.as_deref());
        let Some(gw) = g.get("gateway.networking.k8s.io", "Gateway", ns, name) else {
            return false;
        };
        let section = p.get("sectionName").and_then(Value::as_str);
        for l in gw.at("/spec/listeners").and_then(Value::as_array).into_iter().flatten() {
            if section.is_none() || l.get("name").and_then(Value::as_str) == section {
                let proto = l.get("protocol").and_then(Value::as_str).unwrap_or_default();
                let mode = l.pointer("/tls/mode").and_then(Value::as_str).unwrap_or("Terminate");
                protocols.push(proto == "TLS" && mode == "Terminate");
            }
        }
    }
    !protocols.is_empty() && protocols.iter().all(|t| *t)
}

/// A LoadBalancer/NodePort Service that exposes the router's plaintext gRPC port (its
/// `--listen-addr` port, 50071 by default).
fn exposed_grpc_service(svc: &Object, grpc_ports: &[u16]) -> Vec<Finding> {
    let ty = svc.str_at("/spec/type").unwrap_or("ClusterIP");
    if ty != "LoadBalancer" && ty != "NodePort" {
        return Vec::new();
    }
    let num = |p: &Value, k: &str| p.get(k).and_then(Value::as_u64);
    let target = |p: &Value| {
        grpc_ports
            .iter()
            .copied()
            .find(|g| num(p, "targetPort") == Some(u64::from(*g)) || num(p, "port") == Some(u64::from(*g)))
    };
    let ports = svc.at("/spec/ports").and_then(Value::as_array).into_iter().flatten();
    ports
        .filter_map(|p| target(p).map(|g| (p, g)))
        .map(|(p, g)| {
            let port = num(p, "port").unwrap_or_default();
            Finding::object_at(PLAINTEXT_ENDPOINT, svc, &g.to_string(), format!("{}: a {ty} Service exposes the router's plaintext gRPC port (port {port} → {g}) outside the cluster", svc.display()))
                .with_help("keep the router's gRPC Service ClusterIP and expose worker gRPC through an HTTPS Gateway listener (GRPCRoute, h2c to the router)")
        })
        .collect()
}

/// An Ingress that serves a host without TLS (no `spec.tls` entry lists it) and sends it to a
/// Service port carrying gRPC or TLS (the router's gRPC port, a `grpc*`/`https*` port or such an
/// appProtocol): clients would reach that backend in cleartext.
fn plaintext_ingress(g: &Graph, ing: &Object, grpc_ports: &[u16]) -> Vec<Finding> {
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
        if host.is_some_and(|h| tls_hosts.iter().any(|t| *t == h.to_ascii_lowercase())) {
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
        if !(grpc_port(p, grpc_ports) || dial::serves_tls_or_grpc(p)) {
            continue;
        }
        let shown_host = host.unwrap_or("(default backend, any host)");
        let shown_port = want_num
            .map(|n| n.to_string())
            .or(want_name.map(str::to_string))
            .unwrap_or_default();
        out.push(
            Finding::object_at(PLAINTEXT_ENDPOINT, ing, svc_name, format!(
                "{}: host `{shown_host}` has no TLS entry but routes to Service {}/{svc_name} port {shown_port}, which carries gRPC or TLS: clients would reach it in cleartext",
                ing.display(), ns.unwrap_or("default")
            ))
            .with_help("list the host under spec.tls with a Secret whose certificate covers it (or expose worker gRPC through an HTTPS Gateway listener and a GRPCRoute)"),
        );
    }
    out
}

/// The OpenBao release's state values when its chart was not rendered (offline): the chart's
/// defaults disable TLS, so TLS must be visibly switched on in the values.
fn openbao_values(ctx: &Ctx, r: &Release) -> Vec<Finding> {
    let id = r.id();
    let rendered = ctx.status.iter().any(|s| s.id() == id && s.rendered)
        || ctx
            .graph
            .objects
            .iter()
            .any(|o| o.prov.release.as_deref() == Some(id.as_str()));
    let values = effective_values(r);
    if rendered || (values.is_null() && r.set.is_empty()) {
        return Vec::new();
    }
    let set = |name: &str| r.set.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v);
    let get = |name: &str| set(name).or_else(|| values.pointer(&format!("/{}", name.replace('.', "/"))));
    if get("server.enabled").is_some_and(falsy) {
        return Vec::new();
    }
    let mut problems = Vec::new();
    match get("global.tlsDisable") {
        Some(v) if falsy(v) => {}
        Some(v) => problems.push(format!(
            "`global.tlsDisable: {}` serves the API over plain HTTP",
            short(v)
        )),
        None => problems.push("`global.tlsDisable` is not set and the chart defaults it to true".to_string()),
    }
    if get("server.dev.enabled").is_some_and(truthy) {
        problems.push("`server.dev.enabled: true` runs a plaintext in-memory dev server".to_string());
    }
    let config_key = if get("server.ha.enabled").is_some_and(truthy) {
        if get("server.ha.raft.enabled").is_some_and(truthy) {
            "server.ha.raft.config"
        } else {
            "server.ha.config"
        }
    } else {
        "server.standalone.config"
    };
    match get(config_key) {
        None | Some(Value::Null) => problems.push(format!(
            "`{config_key}` is not set, and the chart's default listener has tls_disable = 1"
        )),
        Some(Value::String(s)) if disables_tls(s) => {
            problems.push(format!("`{config_key}` sets tls_disable on the listener"))
        }
        Some(v @ Value::Object(_)) if disables_tls(&v.to_string()) => {
            problems.push(format!("`{config_key}` sets tls_disable on the listener"))
        }
        _ => {}
    }
    let what = if is_openbao(r) {
        "OpenBao chart"
    } else {
        "an OpenBao/Vault server by its values"
    };
    problems
        .into_iter()
        .map(|p| {
            Finding::state(PLAINTEXT_ENDPOINT, Some(ctx.environment), Some(id.clone()), &r.file, r.line, format!("release {id} ({what}, not rendered): {p}"))
                .with_help("set global.tlsDisable: false and a server config whose listener \"tcp\" has tls_cert_file/tls_key_file (the bootstrap Certificate mounted from openbao-issuer)")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::graph::Graph;
    use crate::model::ReleaseStatus;
    use crate::policy::Policy;

    use crate::testkit::*;
    use serde_json::json;

    fn openbao(values: serde_json::Value) -> crate::stack::Release {
        let mut r = rel(
            "helmfile.yaml",
            25,
            "openbao",
            "openbao",
            repo("openbao", "openbao", "https://openbao.github.io/openbao-helm", false),
        );
        r.version = Some("0.23.2".into());
        r.values = values;
        r
    }

    const TLS_CONFIG: &str = "listener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_cert_file = \"/openbao/userconfig/tls/tls.crt\"\n  tls_key_file = \"/openbao/userconfig/tls/tls.key\"\n}\n";

    #[test]
    fn openbao_values_when_not_rendered() {
        // Chart defaults: tlsDisable unset and no config → two findings.
        let f = run(
            PLAINTEXT_ENDPOINT,
            &state(
                vec![openbao(json!({"server": {"standalone": {"enabled": true}}}))],
                vec![],
            ),
            &[],
        );
        assert_eq!(f.len(), 2, "{f:#?}");
        // Explicitly insecure: tlsDisable true, dev mode, ha raft config with tls_disable.
        let bad = openbao(json!({
            "global": {"tlsDisable": true},
            "server": {"dev": {"enabled": true}, "ha": {"enabled": true, "raft": {"enabled": true, "config": "listener \"tcp\" {\n tls_disable = \"1\"\n}"}}}
        }));
        let f = run(PLAINTEXT_ENDPOINT, &state(vec![bad.clone()], vec![]), &[]);
        assert_eq!(f.len(), 3, "{f:#?}");
        insta::assert_json_snapshot!(f);
        // insecure-flag leaves the OpenBao chart's global.tlsDisable to plaintext-endpoint.
        assert!(run(INSECURE_FLAG, &state(vec![bad], vec![]), &[]).is_empty());
        // TLS on: silent; also via `set:`.
        let good = openbao(json!({"global": {"tlsDisable": false}, "server": {"standalone": {"config": TLS_CONFIG}}}));
        assert!(run(PLAINTEXT_ENDPOINT, &state(vec![good], vec![]), &[]).is_empty());
        let mut via_set = openbao(json!({"server": {"standalone": {"config": TLS_CONFIG}}}));
        via_set.set = vec![("global.tlsDisable".into(), json!("false"))];
        assert!(run(PLAINTEXT_ENDPOINT, &state(vec![via_set], vec![]), &[]).is_empty());
        // Rendered (its ConfigMap is checked instead), values unknown, or server disabled: silent.
        let defaults = openbao(json!({}));
        let rendered = ReleaseStatus {
            name: "openbao".into(),
            namespace: "openbao".into(),
            chart: "openbao/openbao".into(),
            installed: true,
            version: None,
            rendered: true,
            reason: None,
            objects: 9,
            mirror: None,
        };
        assert!(run(PLAINTEXT_ENDPOINT, &state(vec![defaults], vec![]), &[rendered]).is_empty());
        assert!(run(
            PLAINTEXT_ENDPOINT,
            &state(vec![openbao(serde_json::Value::Null)], vec![]),
            &[]
        )
        .is_empty());
        assert!(run(
            PLAINTEXT_ENDPOINT,
            &state(vec![openbao(json!({"server": {"enabled": false}}))], vec![]),
            &[]
        )
        .is_empty());
        // A local chart named openbao-issuer is not the upstream server chart.
        let mut issuer = rel(
            "helmfile.yaml",
            18,
            "openbao",
            "openbao-issuer",
            local("charts/openbao-issuer"),
        );
        issuer.values = json!({});
        assert!(run(PLAINTEXT_ENDPOINT, &state(vec![issuer], vec![]), &[]).is_empty());
    }

    #[test]
    fn externals_are_not_checked() {
        let mut g = Graph::new("default", Vec::new());
        let policy = Policy {
            externals: crate::yaml::from_str("- {apiVersion: cert-manager.io/v1, kind: ClusterIssuer, name: legacy, spec: {vault: {server: 'http://vault.example.com'}}}").unwrap(),
            ..Policy::default()
        };
        policy.add_externals(&mut g);
        assert_eq!(g.len(), 1);
        assert!((rule(PLAINTEXT_ENDPOINT).check)(&crate::testkit::ctx(&g, &policy)).is_empty());
    }
}
