//! `plaintext-endpoint` in containers: an OpenBao/Vault dev server (a root cause), the router's
//! gRPC dial flag, dial addresses in commands and scripts, and the environment (`VAULT_ADDR`,
//! `*_LOCAL_CONFIG`, any other dial address).

use super::*;

/// Judge every container of `obj`: root causes go to `roots`, the rest to `out`.
pub(super) fn containers(
    ctx: &Ctx,
    servers: &Servers,
    obj: &Object,
    grpc_dial: &str,
    all_roots: &mut Vec<Finding>,
    all_out: &mut Vec<Finding>,
) {
    let ns = obj.namespace.as_deref();
    for (list, c) in obj.containers() {
        // Values of rendered Secrets this container reads: judged, never shown.
        let secrets = router::secret_values(Some(ctx.graph), router::Pod::of_container(obj, c), c);
        let (mut my_roots, mut mine) = (Vec::new(), Vec::new());
        let (roots, out) = (&mut my_roots, &mut mine);
        let who = format!("{}: {} `{}`", obj.display(), list_word(list), container_name(c));
        if let Some(shown) = dev_server(c) {
            roots.push(
                container_finding(PLAINTEXT_ENDPOINT, obj, c, "", "-dev", format!("{who} runs `{shown}`: an OpenBao/Vault dev server, in memory, unsealed, with a root token and a plaintext listener"))
                    .with_help("run a real server with a listener that sets tls_cert_file/tls_key_file (or, for a local test only, `-dev-tls`)")
                    .with_cause(servers.of_workload(obj)),
            );
        }
        let mut dialed: Vec<String> = Vec::new();
        for (place, cmds) in commands(Some(ctx.graph), router::Pod::of_container(obj, c), c) {
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
                            out.extend(plaintext_dial(ctx, servers, obj, (c, place), &who, &what, &f.flag, v));
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
                    out.extend(plaintext_dial(ctx, servers, obj, (c, place), &who, &what, w, w));
                    dialed.push(w.clone());
                }
            }
        }
        for var in env_of(ctx.graph, obj, c) {
            let (name, needle) = (&var.name, &var.needle);
            let text = scalar_text(&var.value);
            let (shown, via) = (var.shown(), var.via());
            if is_vault_addr_env(name) && is_http(&text) && !is_loopback_url(&text) {
                // The server's own advertised address is about that server; any other
                // address is about the server it reaches.
                let cause = match dial::parse_dial(&text) {
                    Some(d) if !is_own_addr_env(name) => servers.dial_cause(ns, &d),
                    _ => servers.of_workload(obj),
                };
                out.push(
                    container_finding(PLAINTEXT_ENDPOINT, obj, c, "", needle, format!("{who} sets `{shown}`{via}: OpenBao/Vault is reached over plain HTTP"))
                        .with_help(format!("set `{name}` to the https:// address of the OpenBao listener and give the client its CA (BAO_CACERT/VAULT_CACERT)"))
                        .with_cause(cause),
                );
            } else if norm(name).ends_with(&grpc_dial) && !is_https(&text) {
                out.push(dial_addr_finding(obj, needle, &who, &text));
            } else if norm(name).ends_with("localconfig") && disables_tls(&text) {
                roots.push(
                    container_finding(PLAINTEXT_ENDPOINT, obj, c, "", needle, format!("{who}: `{name}`{via} configures a listener with tls_disable: the OpenBao/Vault API would be plaintext"))
                        .with_help("remove tls_disable and set tls_cert_file/tls_key_file on the listener")
                        .with_cause(servers.of_workload(obj)),
                );
            } else if !dial::is_listen_name(name) && !dialed.contains(&text) {
                // A scheme-less address whose client says itself whether it uses TLS.
                if !is_http(&text) && plaintext_companion(ctx.graph, obj, c, name) == Some(false) {
                    continue;
                }
                let what = match &var.from {
                    Some(f) if var.secret => format!("`{name}` (from {f})"),
                    _ => format!("`{name}`{via}"),
                };
                out.extend(plaintext_dial(ctx, servers, obj, (c, ""), &who, &what, needle, &text));
            }
        }
        all_roots.extend(my_roots.into_iter().map(|f| hide(f, &secrets)));
        all_out.extend(mine.into_iter().map(|f| hide(f, &secrets)));
    }
}

/// Variables that say, beside a dial address `NAME`, whether its client speaks plaintext, so that
/// a scheme-less address means what the switch says, not plaintext: (suffix, source).
pub(super) const PLAINTEXT_COMPANIONS: &[(&str, &str)] = &[(
    "_PLAINTEXT",
    "Argo CD ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_PLAINTEXT, ARGOCD_SERVER_REPO_SERVER_PLAINTEXT \
     (argo-cd docs: operator-manual/argocd-cmd-params-cm.yaml: `*.repo.server.plaintext`, default false: TLS)",
)];

/// Whether the container declares a companion of `name` ([`PLAINTEXT_COMPANIONS`]) and what it
/// says: `Some(true)` plaintext, `Some(false)` TLS (false, or unset: the client's default);
/// `None` without a companion, or when its value cannot be read (the address is judged as written).
fn plaintext_companion(g: &Graph, obj: &Object, c: &Value, name: &str) -> Option<bool> {
    let declared: Vec<&str> = c
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("name").and_then(Value::as_str))
        .collect();
    let companion = PLAINTEXT_COMPANIONS
        .iter()
        .map(|(suffix, _)| format!("{name}{suffix}"))
        .find(|n| declared.contains(&n.as_str()))?;
    if unreadable_env(g, obj, c).iter().any(|(n, ..)| *n == companion) {
        return None;
    }
    Some(
        env_of(g, obj, c)
            .iter()
            .find(|v| v.name == companion)
            .is_some_and(|v| truthy(&v.value)),
    )
}
