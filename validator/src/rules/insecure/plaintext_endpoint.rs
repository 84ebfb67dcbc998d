//! `plaintext-endpoint`: an endpoint that must speak TLS is plaintext (Vault/OpenBao servers, the
//! OpenBao listener, the workers' gRPC dial address, worker gRPC behind a plain TCP listener).

use super::servers::{self, Servers};
use super::*;

/// `VAULT_ADDR`, `BAO_ADDR`, `AGENT_INJECT_VAULT_ADDR`, `BAO_API_ADDR`, …
fn is_vault_addr_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').collect();
    words.iter().any(|w| *w == "VAULT" || *w == "BAO") && matches!(words.last(), Some(&"ADDR") | Some(&"ADDRESS"))
}

/// `BAO_API_ADDR`, `VAULT_CLUSTER_ADDR`, `VAULT_REDIRECT_ADDR`: the address a server advertises
/// for itself (a client dialing it reaches that server).
fn is_own_addr_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    ["API", "CLUSTER", "REDIRECT"]
        .iter()
        .any(|w| up.split('_').any(|p| p == *w))
}

/// A workload that serves plaintext itself: a dev server, or a `*_LOCAL_CONFIG` variable whose
/// listener serves plaintext.
fn serves_plaintext(g: &Graph, obj: &Object) -> bool {
    obj.containers().iter().any(|(_, c)| {
        dev_server(c).is_some()
            || env_of(g, obj, c)
                .iter()
                .any(|e| norm(&e.name).ends_with("localconfig") && disables_tls(&scalar_text(&e.value)))
    })
}

pub(super) fn plaintext_endpoint(ctx: &Ctx) -> Vec<Finding> {
    // The router's dial flag in any spelling (`--grpc-pylon-dial-addr`, `-grpc_pylon_dial_addr`,
    // `GRPC_PYLON_DIAL_ADDR`): `grpcpylondialaddr`.
    let grpc_dial = norm(router::GRPC_PYLON_DIAL_ADDR);
    // The router's gRPC ports, from its `--listen-addr` (the binary's default when absent).
    let grpc_ports = router::grpc_listen_ports(ctx.graph);
    let servers = Servers::new(ctx.graph, |o| serves_plaintext(ctx.graph, o));
    // Root causes (a plaintext listener, a dev server) come first, so that each folds the
    // addresses that dial it (`crate::fold` keeps the first finding of a cause).
    let mut roots = Vec::new();
    let mut out = Vec::new();
    for obj in rendered(ctx.graph) {
        let ns = obj.namespace.as_deref();
        match (obj.group(), obj.kind.as_str()) {
            ("cert-manager.io", "Issuer" | "ClusterIssuer") => {
                if let Some(server) = obj.str_at("/spec/vault/server").filter(|s| is_http(s)) {
                    let mut f = Finding::object_at(PLAINTEXT_ENDPOINT, obj, "server:", format!("{}: spec.vault.server `{server}` is plain HTTP; cert-manager would send its Vault token and receive signed certificates in cleartext", obj.display()))
                        .with_help("use the OpenBao listener's https:// address and set caBundle (or caBundleSecretRef) to the CA that signed it");
                    if let Some(d) = dial::parse_dial(server) {
                        f = f.with_cause(servers.dial_cause(ns, &d));
                    }
                    out.push(f);
                }
            }
            ("", "ConfigMap") => {
                for (root, f) in configmap_plaintext(obj) {
                    if root {
                        roots.push(f);
                    } else {
                        out.push(f);
                    }
                }
                out.extend(configmap_dials(ctx, &servers, obj));
            }
            ("gateway.networking.k8s.io", "TCPRoute") => out.extend(tcp_route_grpc(ctx.graph, obj, &grpc_ports)),
            ("", "Service") => out.extend(exposed_grpc_service(obj, &grpc_ports)),
            ("networking.k8s.io", "Ingress") => out.extend(plaintext_ingress(ctx.graph, obj, &grpc_ports)),
            _ => {}
        }
        for (list, c) in obj.containers() {
            let who = format!("{}: {} `{}`", obj.display(), list_word(list), container_name(c));
            if let Some(shown) = dev_server(c) {
                roots.push(
                    container_finding(PLAINTEXT_ENDPOINT, obj, c, "", "-dev", format!("{who} runs `{shown}`: an OpenBao/Vault dev server, in memory, unsealed, with a root token and a plaintext listener"))
                        .with_help("run a real server with a listener that sets tls_cert_file/tls_key_file (or, for a local test only, `-dev-tls`)")
                        .with_cause(servers.of_workload(obj)),
                );
            }
            let mut dialed: Vec<String> = Vec::new();
            for (place, cmds) in commands(c) {
                for cmd in cmds.iter().filter(|c| !c.prints()) {
                    // curl and wget take the URL as an argument, never as a flag's value.
                    let url_client = matches!(cmd.name(), "curl" | "wget");
                    for f in &flag_uses(&cmd.argv) {
                        if f.name == grpc_dial {
                            let v = f.value().unwrap_or_default();
                            if !is_https(v) {
                                out.push(dial_addr_finding(obj, &f.flag, &who, v));
                            }
                            dialed.push(v.to_string());
                            continue;
                        }
                        let value = if url_client { f.inline.as_deref() } else { f.value() };
                        if let Some(v) = value.filter(|_| !dial::is_listen_name(&f.name)) {
                            let what = format!("{}`{}`", place_word(place), f.flag);
                            if !dialed.iter().any(|d| d == v) {
                                out.extend(plaintext_dial(ctx, &servers, obj, (c, place), &who, &what, &f.flag, v));
                                dialed.push(v.to_string());
                            }
                        }
                    }
                    // Explicit http:// URLs given as arguments (`curl http://…`).
                    for w in &cmd.argv {
                        if !is_http(w) || dialed.contains(w) {
                            continue;
                        }
                        let what = if url_client {
                            format!("{}`{}`", place_word(place), cmd.name())
                        } else {
                            format!("{}an argument", place_word(place))
                        };
                        out.extend(plaintext_dial(ctx, &servers, obj, (c, place), &who, &what, w, w));
                        dialed.push(w.clone());
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
                    // The server's own advertised address is about that server; any other
                    // address is about the server it reaches.
                    let cause = match dial::parse_dial(&text) {
                        Some(d) if !is_own_addr_env(&name) => servers.dial_cause(ns, &d),
                        _ => servers.of_workload(obj),
                    };
                    out.push(
                        container_finding(PLAINTEXT_ENDPOINT, obj, c, "", &needle, format!("{who} sets `{name}={text}`{via}: OpenBao/Vault is reached over plain HTTP"))
                            .with_help(format!("set `{name}` to the https:// address of the OpenBao listener and give the client its CA (BAO_CACERT/VAULT_CACERT)"))
                            .with_cause(cause),
                    );
                } else if norm(&name).ends_with(&grpc_dial) && !is_https(&text) {
                    out.push(dial_addr_finding(obj, &needle, &who, &text));
                } else if norm(&name).ends_with("localconfig") && disables_tls(&text) {
                    roots.push(
                        container_finding(PLAINTEXT_ENDPOINT, obj, c, "", &needle, format!("{who}: `{name}`{via} configures a listener with tls_disable: the OpenBao/Vault API would be plaintext"))
                            .with_help("remove tls_disable and set tls_cert_file/tls_key_file on the listener")
                            .with_cause(servers.of_workload(obj)),
                    );
                } else if !dial::is_listen_name(&name) && !dialed.contains(&text) {
                    out.extend(plaintext_dial(
                        ctx,
                        &servers,
                        obj,
                        (c, ""),
                        &who,
                        &format!("`{name}`{via}"),
                        &needle,
                        &text,
                    ));
                }
            }
        }
    }
    roots.append(&mut out);
    let mut out = roots;
    if let Some(state) = ctx.state {
        for r in state.installed() {
            // OpenBao/Vault servers by chart name or by what their values configure.
            let server = is_openbao(r) || server_config::configures_server(&effective_values(r));
            if server {
                out.extend(openbao_values(ctx, r));
            }
            out.extend(dev_args(ctx, r, server));
        }
    }
    out
}

/// `server -dev` without `-dev-tls`, judged by behaviour whatever the binary is called: the
/// `server` subcommand as the first argument of a container that runs its image's entrypoint
/// (`args: [server, -dev]`), as the first argument after any binary (`docker-entrypoint.sh server
/// -dev`), or after a `bao`/`vault`/`openbao` binary anywhere on the command line (`sh -c "exec
/// vault server -dev"`). The dev server's listener is plaintext.
fn dev_server(c: &Value) -> Option<String> {
    let (_, cmds) = commands(c).into_iter().next()?;
    let args_only = args_only(c);
    for (i, cmd) in cmds.iter().enumerate() {
        let a = &cmd.argv;
        let at = if i == 0 && args_only && a.first().is_some_and(|w| w == "server") {
            Some(0)
        } else if a.get(1).is_some_and(|w| w == "server") {
            Some(1)
        } else {
            a.iter().enumerate().skip(1).find_map(|(p, w)| {
                (w == "server" && matches!(shell::basename(&a[p - 1]), "bao" | "vault" | "openbao")).then_some(p)
            })
        };
        let Some(at) = at else { continue };
        if let Some(dev) = dev_flag(&a[at + 1..]) {
            let bin = match at {
                0 => "(image entrypoint)".to_string(),
                p => shell::basename(&a[p - 1]).to_string(),
            };
            return Some(format!("{bin} server {dev}"));
        }
    }
    None
}

/// `-dev`/`--dev`/`-dev=true` among a server's flags, unless `-dev-tls` is on too.
fn dev_flag(after: &[String]) -> Option<&String> {
    let on = |w: &&String, name: &str| {
        let f = w.trim_start_matches('-');
        w.starts_with('-')
            && (f == name
                || f.strip_prefix(name)
                    .and_then(|r| r.strip_prefix('='))
                    .is_some_and(truthy_str))
    };
    let dev = after.iter().find(|w| on(w, "dev"))?;
    (!after.iter().any(|w| on(&w, "dev-tls"))).then_some(dev)
}

/// `-dev` in a release's server arguments (`server.extraArgs: "-dev"`, the upstream OpenBao
/// chart's way to pass server flags), read as a command line from the state values of every
/// installed release: inline `values:`, values files, `set:`. Words under a `server` key, or of a
/// release that is an OpenBao/Vault server (`server`), are that server's flags; elsewhere only a
/// `server` subcommand followed by `-dev` counts.
fn dev_args(ctx: &Ctx, r: &Release, server: bool) -> Vec<Finding> {
    let mut hits: Vec<(String, String, String)> = Vec::new(); // (path, value, flag)
    let mut judge = |path: &str, v: &Value, in_server: bool| {
        let cmds = match v {
            Value::String(s) => shell::script_commands(s),
            Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
                shell::argv_commands(&items.iter().map(scalar_text).collect::<Vec<_>>())
            }
            _ => return,
        };
        for cmd in &cmds {
            let words = &cmd.argv;
            let dev = match words.iter().position(|w| w == "server") {
                Some(p) => dev_flag(&words[p + 1..]),
                None if in_server => dev_flag(words),
                None => None,
            };
            if let Some(dev) = dev {
                hits.push((path.to_string(), short(v), dev.clone()));
                return;
            }
        }
    };
    fn walk(v: &Value, path: &mut Vec<String>, depth: usize, f: &mut dyn FnMut(&str, &Value, bool)) {
        if depth > 32 {
            return;
        }
        if let Value::Object(m) = v {
            for (k, child) in m {
                path.push(k.clone());
                if norm(k).ends_with("args") {
                    let in_server = path.iter().any(|p| norm(p) == "server");
                    f(&show_path(path), child, in_server);
                }
                walk(child, path, depth + 1, f);
                path.pop();
            }
        }
    }
    walk(&effective_values(r), &mut Vec::new(), 0, &mut |p, v, s| {
        judge(p, v, s || server)
    });
    for (name, value) in &r.set {
        let path: Vec<&str> = name.split('.').collect();
        if path
            .last()
            .is_some_and(|l| norm(l.split('[').next().unwrap_or(l)).ends_with("args"))
        {
            let in_server = server || path.iter().any(|p| norm(p) == "server");
            judge(&format!("set {name}"), value, in_server);
        }
    }
    let id = r.id();
    hits.into_iter()
        .map(|(path, value, dev)| {
            Finding::state(PLAINTEXT_ENDPOINT, Some(ctx.environment), Some(id.clone()), &r.file, r.line, format!("release {id}: value `{path}: {value}` starts the OpenBao/Vault server with `{dev}`: a dev server, in memory, unsealed, with a root token and a plaintext listener"))
                .with_help("remove `-dev` from the server's arguments; run a real server whose listener sets tls_cert_file/tls_key_file")
                .with_cause(format!("release:{id}"))
        })
        .collect()
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
/// `settings.plaintextAllowed` lists it with a reason). Its cause is the server it reaches.
#[allow(clippy::too_many_arguments)]
fn plaintext_dial(
    ctx: &Ctx,
    servers: &Servers,
    obj: &Object,
    container: (&Value, &str),
    who: &str,
    what: &str,
    needle: &str,
    value: &str,
) -> Option<Finding> {
    let d = dial::parse_dial(value)?;
    if d.is_loopback() {
        return None;
    }
    let cause = servers.dial_cause(obj.namespace.as_deref(), &d);
    // In a container: the line inside it; otherwise (a ConfigMap) the object's.
    let at = |needle: &str, msg: String| match container {
        (c, place) if !c.is_null() => container_finding(PLAINTEXT_ENDPOINT, obj, c, place, needle, msg),
        _ => Finding::object_at(PLAINTEXT_ENDPOINT, obj, needle, msg),
    };
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
                at(needle, format!(
                    "{who}: {what} dials `{value}` with {scheme}, but {} port {} (`{pname}`{app}) serves TLS or gRPC: the client would speak cleartext to a TLS endpoint, or carry gRPC unencrypted",
                    svc.display(), d.port.unwrap_or(80)
                ))
                .with_help("dial https://<host>:<port> and give the client the CA that signed the server's certificate")
                .with_cause(cause),
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
        at(needle, format!(
            "{who}: {what} dials `{value}`, plain http:// to `{}`, which is not loopback: requests and credentials cross the network in cleartext",
            d.host
        ))
        .with_help(format!(
            "use https://; if this endpoint truly must stay plaintext, list it in the policy: settings.plaintextAllowed: [{{host: {}, reason: …}}]",
            d.host
        ))
        .with_cause(cause),
    )
}

/// String leaves of a structured value, with their paths (`auth.endpoint`, `peers[0]`); listen
/// addresses are not dial addresses and are left out.
fn leaves(v: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    walk_values(v, Vec::new(), 32, &mut |path, node| {
        if path
            .last()
            .is_some_and(|k| !k.starts_with('[') && dial::is_listen_name(k))
        {
            return false;
        }
        if let Value::String(s) = node {
            out.push((show_path(path), s.as_str()));
        }
        true
    });
    out
}

/// `http://` words in free text (scripts, HCL, properties), comment lines skipped.
fn http_words(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        if l.starts_with('#') || l.starts_with("//") {
            continue;
        }
        for w in
            l.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '=' | ';' | '(' | ')' | '<' | '>'))
        {
            if is_http(w) && !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// ConfigMap values as a client reads them: a value that is a dial address; the leaves of a value
/// that is a YAML or JSON document (`app.yaml: {auth: {endpoint: auth.nvcf.svc:9090}}`), each
/// judged like a whole value; the values of `key = value` lines of properties text; and `http://`
/// URLs anywhere in other text (scripts, HCL).
fn configmap_dials(ctx: &Ctx, servers: &Servers, obj: &Object) -> Vec<Finding> {
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
            out.extend(plaintext_dial(
                ctx,
                servers,
                obj,
                (&Value::Null, ""),
                &who,
                &format!("key `{key}`"),
                key,
                text,
            ));
            continue;
        }
        let doc = crate::yaml::value(text).ok().filter(|d| d.is_object() || d.is_array());
        if let Some(doc) = doc {
            let found = leaves(&doc);
            let mut seen: Vec<&str> = Vec::new();
            for (path, leaf) in found {
                let what = format!("key `{key}` (`{path}`)");
                if dial::parse_dial(leaf).is_some() {
                    if !seen.contains(&leaf) {
                        seen.push(leaf);
                        out.extend(plaintext_dial(
                            ctx,
                            servers,
                            obj,
                            (&Value::Null, ""),
                            &who,
                            &what,
                            leaf,
                            leaf,
                        ));
                    }
                    continue;
                }
                for w in http_words(leaf) {
                    if !seen.contains(&w) {
                        seen.push(w);
                        out.extend(plaintext_dial(ctx, servers, obj, (&Value::Null, ""), &who, &what, w, w));
                    }
                }
            }
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        if server_config::listeners(text).is_none() {
            for line in text.lines() {
                let l = line.trim();
                if l.starts_with('#') || l.starts_with('!') || l.starts_with("//") {
                    continue;
                }
                let Some((k, v)) = l.split_once('=') else { continue };
                let k = k.trim();
                let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
                let plain_key = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
                if plain_key && !dial::is_listen_name(k) && dial::parse_dial(v).is_some() && !seen.contains(&v) {
                    seen.push(v);
                    out.extend(plaintext_dial(
                        ctx,
                        servers,
                        obj,
                        (&Value::Null, ""),
                        &who,
                        &format!("key `{key}` (`{k}`)"),
                        v,
                        v,
                    ));
                }
            }
        }
        for w in http_words(text) {
            if !seen.iter().any(|s| s.contains(w)) {
                seen.push(w);
                out.extend(plaintext_dial(
                    ctx,
                    servers,
                    obj,
                    (&Value::Null, ""),
                    &who,
                    &format!("key `{key}`"),
                    w,
                    w,
                ));
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

/// OpenBao server configuration in a ConfigMap whose listener serves plaintext (a root cause:
/// `true`), and a worker profile whose gRPC dial address is not https.
fn configmap_plaintext(obj: &Object) -> Vec<(bool, Finding)> {
    let mut out = Vec::new();
    let Some(data) = obj.at("/data").and_then(Value::as_object) else {
        return out;
    };
    for (key, v) in data {
        let Some(text) = v.as_str() else { continue };
        if disables_tls(text) {
            out.push((
                true,
                Finding::object_at(PLAINTEXT_ENDPOINT, obj, "tls_disable", format!("{}: `{key}` configures a listener with tls_disable: the OpenBao/Vault API would be plaintext", obj.display()))
                    .with_help("remove tls_disable (OpenBao chart: global.tlsDisable: false and a server config whose listener sets tls_cert_file/tls_key_file)")
                    .with_cause(servers::config_key(obj)),
            ));
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
                    out.push((
                        false,
                        Finding::object_at(PLAINTEXT_ENDPOINT, obj, k, format!("{}: worker profile `{k}` is `{a}`, not https://: workers would register over plaintext gRPC", obj.display()))
                            .with_help("set the router's gRPC dial address to https://<host>:<port>"),
                    ));
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

/// Whether an Ingress `spec.tls` host covers a rule's host: the same name (ASCII case-insensitive),
/// or a one-label wildcard (`*.example.com` covers `a.example.com`, not `x.a.example.com` nor
/// `example.com`). `tls[].hosts` names what the entry's certificate covers, and ingress-nginx picks
/// the entry for a host by exact name, else by its certificate's SANs, which follow X.509's
/// one-label wildcard matching.
fn tls_host_covers(tls: &str, host: &str) -> bool {
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
        if !(grpc_port(p, grpc_ports) || dial::serves_tls_or_grpc(p)) {
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

/// The OpenBao release's state values when its chart was not rendered (offline): the chart's
/// defaults disable TLS, so TLS must be visibly switched on in the values.
fn openbao_values(ctx: &Ctx, r: &Release) -> Vec<Finding> {
    let id = r.id();
    let rendered = ctx.release_rendered(r);
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
                // One server, one finding: its defaults, its values and its arguments.
                .with_cause(format!("release:{id}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::graph::Graph;
    use crate::policy::Policy;
    use crate::render::ReleaseStatus;

    use crate::testkit::*;
    use serde_json::json;

    /// Generated: every way of writing a host (loopback in every literal form, and names that
    /// only look like loopback) in every place an OpenBao address is read (env of a container,
    /// a listener `address` in HCL configuration). Loopback is silent; anything else fires.
    #[test]
    fn loopback_is_decided_by_parsing_in_every_place() {
        let loopback = [
            "127.0.0.1",
            "127.8.9.10",
            "[::1]",
            "[::ffff:127.0.0.1]",
            "localhost",
            "LOCALHOST.",
        ];
        let lookalike = [
            "127.bao.corp.example.net",
            "127.0.0.1.nip.io",
            "localhost.example.net",
            "[::ffff:10.0.0.1]",
            "10.0.0.1",
            "127.1",
        ];
        let policy = Policy::default();
        type Make<'a> = &'a dyn Fn(&str) -> String;
        let places: [(&str, Make); 3] = [
            ("BAO_ADDR", &|h| env_pod("BAO_ADDR", &format!("http://{h}:8200"))),
            ("VAULT_ADDR", &|h| env_pod("VAULT_ADDR", &format!("http://{h}:8200"))),
            ("listener", &|h| {
                let hcl = format!("listener \"tcp\" {{\n  address = \"{h}:8200\"\n  tls_disable = 1\n}}\n");
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: openbao}}\ndata:\n  server.hcl: {}\n",
                    serde_json::to_string(&hcl).unwrap()
                )
            }),
        ];
        for (place, make) in places {
            for (hosts, fires) in [(&loopback[..], false), (&lookalike[..], true)] {
                for h in hosts {
                    let g = graph("e", &make(h));
                    let f: Vec<_> = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&g, &policy))
                        .into_iter()
                        .filter(|f| f.rule == PLAINTEXT_ENDPOINT)
                        .collect();
                    assert_eq!(!f.is_empty(), fires, "{place} {h}: {f:#?}");
                }
            }
        }
    }

    fn env_pod(var: &str, value: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: openbao}}\nspec:\n  containers:\n  - name: c\n    image: quay.io/openbao/openbao:2.4.1\n    command: [bao, status]\n    env: [{{name: {var}, value: \"{value}\"}}]\n"
        )
    }

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
            "server": {"dev": {"enabled": true}, "ha": {"enabled": true, "raft": {"enabled": true, "config": "listener \"tcp\" {\n address = \"[::]:8200\"\n tls_disable = \"1\"\n}"}}}
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

    /// The rule's findings over YAML, folded as the engine reports them; objects whose name is a
    /// key of `releases` are placed in that release.
    fn folded(yaml: &str, releases: &[(&str, &str)]) -> Vec<Finding> {
        let mut g = crate::testkit::graph("default", yaml);
        for o in &mut g.objects {
            if let Some((_, r)) = releases.iter().find(|(n, _)| *n == o.name) {
                o.prov.release = Some(r.to_string());
            }
        }
        let p = Policy::default();
        crate::fold::fold((rule(PLAINTEXT_ENDPOINT).check)(&crate::testkit::ctx(&g, &p)))
    }

    const SERVER: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: openbao-config, namespace: openbao}\ndata:\n  server.hcl: |\n    listener \"tcp\" {\n      address = \"[::]:8200\"\n      tls_disable = 1\n    }\n---\napiVersion: v1\nkind: Service\nmetadata: {name: openbao, namespace: openbao}\nspec:\n  selector: {app: openbao}\n  ports: [{name: http, port: 8200}]\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: openbao, namespace: openbao}\nspec:\n  serviceName: openbao\n  selector: {matchLabels: {app: openbao}}\n  template:\n    metadata: {labels: {app: openbao}}\n    spec:\n      containers:\n        - {name: openbao, image: 'quay.io/openbao/openbao:2.4.1'}\n      volumes:\n        - {name: config, configMap: {name: openbao-config}}\n";

    fn client(name: &str, ns: &str, addr: &str) -> String {
        format!("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n        - name: c\n          image: quay.io/x/y:1.0.0\n          env: [{{name: VAULT_ADDR, value: '{addr}'}}]\n")
    }

    #[test]
    fn one_plaintext_server_is_one_finding_across_releases() {
        // A client of another release dials the server through its Service: folded into the
        // listener's finding. An unrelated plain address in another namespace stays its own.
        let yaml = format!(
            "{SERVER}{}{}{}",
            client("issuer-client", "cert-manager", "http://openbao.openbao.svc:8200"),
            client("app-client", "app", "http://openbao.openbao.svc.cluster.local:8200/v1"),
            client("unrelated", "app", "http://corp-vault.example.com:8200"),
        );
        let f = folded(
            &yaml,
            &[
                ("openbao-config", "openbao/openbao"),
                ("openbao", "openbao/openbao"),
                ("issuer-client", "cert-manager/issuer"),
                ("app-client", "app/app"),
                ("unrelated", "app/other"),
            ],
        );
        let shown: Vec<(&str, usize)> = f.iter().map(|f| (f.message.as_str(), f.related.len())).collect();
        assert_eq!(f.len(), 2, "{shown:#?}");
        assert!(
            f[0].message.contains("configures a listener with tls_disable"),
            "{shown:#?}"
        );
        let related: Vec<&str> = f[0]
            .related
            .iter()
            .map(|r| r.object.as_ref().unwrap().name.as_str())
            .collect();
        assert_eq!(related, ["issuer-client", "app-client"]);
        assert!(f[1].message.contains("corp-vault.example.com") && f[1].related.is_empty());
        // Without the Service the address reaches nothing known: the dial stays its own finding.
        let no_service = yaml.replace("kind: Service\n", "kind: ServiceAccount\n");
        assert_eq!(folded(&no_service, &[]).len(), 4);
    }

    #[test]
    fn copies_of_one_address_fold_and_other_servers_do_not() {
        // One http:// value in a ConfigMap, its envFrom consumer and a literal copy: one finding.
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: client-env, namespace: app}\ndata:\n  CALLBACK_URL: http://hooks.example.com/notify\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: client, namespace: app}\nspec:\n  selector: {matchLabels: {app: c}}\n  template:\n    metadata: {labels: {app: c}}\n    spec:\n      containers:\n        - name: a\n          image: quay.io/x/y:1.0.0\n          envFrom: [{configMapRef: {name: client-env}}]\n        - name: b\n          image: quay.io/x/y:1.0.0\n          env: [{name: CALLBACK_URL, value: 'http://hooks.example.com/other'}, {name: AUDIT_URL, value: 'http://audit.example.com/'}]\n";
        let f = folded(yaml, &[]);
        let shown: Vec<(&str, usize)> = f.iter().map(|f| (f.message.as_str(), f.related.len())).collect();
        assert_eq!(shown.len(), 2, "{shown:#?}");
        assert_eq!((shown[0].1, shown[1].1), (2, 0), "{shown:#?}");
        assert!(shown[1].0.contains("audit.example.com"));
    }

    #[test]
    fn unrendered_server_defaults_are_one_finding() {
        let r = openbao(json!({"server": {"standalone": {"enabled": true}, "extraArgs": "-dev"}}));
        let f = run(PLAINTEXT_ENDPOINT, &state(vec![r], vec![]), &[]);
        assert_eq!(f.len(), 3, "tlsDisable default, default config, -dev: {f:#?}");
        let f = crate::fold::fold(f);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].related.len(), 2);
    }

    #[test]
    fn server_arguments_in_state_values() {
        let rel = |chart: crate::stack::ChartRef, values: serde_json::Value| {
            let mut r = crate::testkit::rel("helmfile.yaml", 3, "a", "r", chart);
            r.values = values;
            r
        };
        let local = || crate::testkit::local("charts/app");
        let fired = |r: crate::stack::Release| {
            let status = [ReleaseStatus {
                name: "r".into(),
                namespace: "a".into(),
                chart: "x".into(),
                installed: true,
                version: None,
                rendered: true,
                reason: None,
                objects: 1,
                mirror: None,
            }];
            run(PLAINTEXT_ENDPOINT, &state(vec![r], vec![]), &status)
        };
        // Any chart name, rendered or not: `server.extraArgs`, a list, a `server` subcommand
        // elsewhere, `set:`.
        for values in [
            json!({"server": {"extraArgs": "-dev"}}),
            json!({"server": {"extraArgs": ["-log-level=debug", "--dev"]}}),
            json!({"app": {"args": ["server", "-dev=true"]}}),
        ] {
            let f = fired(rel(local(), values.clone()));
            assert_eq!(f.len(), 1, "{values}: {f:#?}");
            assert!(f[0].message.contains("starts the OpenBao/Vault server with"), "{f:#?}");
        }
        let mut via_set = rel(local(), json!({}));
        via_set.set = vec![("server.extraArgs".into(), json!("-dev"))];
        assert_eq!(fired(via_set).len(), 1);
        // Near misses: dev mode with TLS, other flags, `-dev` of something that is no server.
        for values in [
            json!({"server": {"extraArgs": "-dev -dev-tls"}}),
            json!({"server": {"extraArgs": "-config=/x -log-level=debug"}}),
            json!({"app": {"extraArgs": "--dev"}}),
            json!({"server": {"dev": {"args": "none"}}}),
        ] {
            assert!(fired(rel(local(), values.clone())).is_empty(), "{values}");
        }
    }
}
