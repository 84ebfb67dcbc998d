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
    let mut out = Vec::new();
    for obj in rendered(ctx.graph) {
        match (obj.group(), obj.kind.as_str()) {
            ("cert-manager.io", "Issuer" | "ClusterIssuer") => {
                if let Some(server) = obj.str_at("/spec/vault/server").filter(|s| is_http(s)) {
                    out.push(
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, "server:", format!("{}: spec.vault.server `{server}` is plain HTTP; cert-manager would send its Vault token and receive signed certificates in cleartext", obj.display()))
                            .with_help("use the OpenBao listener's https:// address and set caBundle (or caBundleSecretRef) to the CA that signed it"),
                    );
                }
            }
            ("", "ConfigMap") => out.extend(configmap_plaintext(obj)),
            ("gateway.networking.k8s.io", "TCPRoute") => out.extend(tcp_route_grpc(ctx.graph, obj)),
            ("", "Service") => out.extend(exposed_grpc_service(obj)),
            _ => {}
        }
        for (list, c) in obj.containers() {
            let who = format!("{}: {} `{}`", obj.display(), list_word(list), container_name(c));
            for f in flag_uses(&cmdline(c)) {
                if f.name == grpc_dial {
                    let v = f.value().unwrap_or_default();
                    if !is_https(v) {
                        out.push(dial_addr_finding(obj, &f.flag, &who, v));
                    }
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
                    out.push(
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, &needle, format!("{who} sets `{name}={text}`{via}: OpenBao/Vault is reached over plain HTTP"))
                            .with_help(format!("set `{name}` to the https:// address of the OpenBao listener and give the client its CA (BAO_CACERT/VAULT_CACERT)")),
                    );
                } else if norm(&name).ends_with(&grpc_dial) && !is_https(&text) {
                    out.push(dial_addr_finding(obj, &needle, &who, &text));
                } else if norm(&name).ends_with("localconfig") && disables_tls(&text) {
                    out.push(
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, &needle, format!("{who}: `{name}`{via} configures a listener with tls_disable: the OpenBao/Vault API would be plaintext"))
                            .with_help("remove tls_disable and set tls_cert_file/tls_key_file on the listener"),
                    );
                }
            }
        }
    }
    if let Some(state) = ctx.state {
        for r in state.installed().filter(|r| is_openbao(r)) {
            out.extend(openbao_values(ctx, r));
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

/// OpenBao server configuration in a ConfigMap with `tls_disable` on, and a worker profile whose
/// gRPC dial address is not https.
fn configmap_plaintext(obj: &Object) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(data) = obj.at("/data").and_then(Value::as_object) else {
        return out;
    };
    for (key, v) in data {
        let Some(text) = v.as_str() else { continue };
        if disables_tls(text) {
            out.push(
                Finding::object_at(PLAINTEXT_ENDPOINT, obj, "tls_disable", format!("{}: `{key}` configures a listener with tls_disable: the OpenBao/Vault API would be plaintext", obj.display()))
                    .with_help("remove tls_disable (OpenBao chart: global.tlsDisable: false and a server config whose listener sets tls_cert_file/tls_key_file)"),
            );
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
                    out.push(
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, k, format!("{}: worker profile `{k}` is `{a}`, not https://: workers would register over plaintext gRPC", obj.display()))
                            .with_help("set the router's gRPC dial address to https://<host>:<port>"),
                    );
                }
            }
        }
    }
    out
}

/// A Service port that carries the router's worker gRPC (plaintext in the binary).
fn grpc_port(p: &Value) -> bool {
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
    num("port") == Some(50071)
        || num("targetPort") == Some(50071)
        || name.contains("grpc")
        || p.get("targetPort")
            .and_then(Value::as_str)
            .is_some_and(|t| t.to_ascii_lowercase().contains("grpc"))
        || app.contains("grpc")
        || app.contains("h2c")
}

/// A TCPRoute that forwards to a gRPC port, unless every listener it attaches to terminates TLS.
fn tcp_route_grpc(g: &Graph, route: &Object) -> Vec<Finding> {
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
                Some(p) => grpc_port(p),
                None => port == 50071,
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

/// A LoadBalancer/NodePort Service that exposes the router's plaintext gRPC port (50071).
fn exposed_grpc_service(svc: &Object) -> Vec<Finding> {
    let ty = svc.str_at("/spec/type").unwrap_or("ClusterIP");
    if ty != "LoadBalancer" && ty != "NodePort" {
        return Vec::new();
    }
    let ports = svc.at("/spec/ports").and_then(Value::as_array).into_iter().flatten();
    ports
        .filter(|p| p.get("port").and_then(Value::as_u64) == Some(50071) || p.get("targetPort").and_then(Value::as_u64) == Some(50071))
        .map(|p| {
            let port = p.get("port").and_then(Value::as_u64).unwrap_or_default();
            Finding::object_at(PLAINTEXT_ENDPOINT, svc, "50071", format!("{}: a {ty} Service exposes the router's plaintext gRPC port (port {port} → 50071) outside the cluster", svc.display()))
                .with_help("keep the router's gRPC Service ClusterIP and expose worker gRPC through an HTTPS Gateway listener (GRPCRoute, h2c to the router)")
        })
        .collect()
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
    if rendered || r.values.is_null() {
        return Vec::new();
    }
    let set = |name: &str| r.set.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v);
    let get = |name: &str| set(name).or_else(|| r.values.pointer(&format!("/{}", name.replace('.', "/"))));
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
    problems
        .into_iter()
        .map(|p| {
            Finding::state(PLAINTEXT_ENDPOINT, Some(ctx.environment), Some(id.clone()), &r.file, r.line, format!("release {id} (OpenBao chart, not rendered): {p}"))
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
