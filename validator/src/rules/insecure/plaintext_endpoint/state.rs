//! `plaintext-endpoint` in the helmfile state: an OpenBao release whose values leave TLS off
//! (when its chart was not rendered) and `-dev` in a release's server arguments.

use super::*;

/// `-dev` in a release's server arguments (`server.extraArgs: "-dev"`, the upstream OpenBao
/// chart's way to pass server flags), read as a command line from the state values of every
/// installed release: inline `values:`, values files, `set:`. Words under a `server` key, or of a
/// release that is an OpenBao/Vault server (`server`), are that server's flags; elsewhere only a
/// `server` subcommand followed by `-dev` counts.
pub(super) fn dev_args(ctx: &Ctx, r: &Release, server: bool) -> Vec<Finding> {
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
    // Bounded by the YAML reader's own nesting limit: every value it can produce is walked.
    fn walk(v: &Value, path: &mut Vec<String>, depth: usize, f: &mut dyn FnMut(&str, &Value, bool)) {
        if depth > crate::yaml::MAX_DEPTH {
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

/// The OpenBao release's state values when its chart was not rendered (offline): the chart's
/// defaults disable TLS, so TLS must be visibly switched on in the values.
pub(super) fn openbao_values(ctx: &Ctx, r: &Release) -> Vec<Finding> {
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
