//! `plaintext-endpoint`: plaintext dial addresses (`http://`, or `host:port` reaching a TLS or
//! gRPC port) in flags, environment and ConfigMaps, and ConfigMaps that configure a plaintext
//! OpenBao listener or a worker profile dialing gRPC without TLS.

use super::*;

/// A plaintext dial address: `http://` or scheme-less `host:port` reaching a Service port that
/// serves TLS or gRPC, or explicit `http://` to any host that is not loopback (unless the policy's
/// `settings.plaintextAllowed` lists it with a reason). Its cause is the server it reaches.
#[allow(clippy::too_many_arguments)]
pub(super) fn plaintext_dial(
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
pub(super) fn leaves(v: &Value) -> Vec<(String, &str)> {
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
pub(super) fn http_words(text: &str) -> Vec<&str> {
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
pub(super) fn configmap_dials(ctx: &Ctx, servers: &Servers, obj: &Object) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(data) = obj.at("/data").and_then(Value::as_object) else {
        return out;
    };
    let who = obj.display();
    // A ConfigMap value is no container's: each address is judged where it is written.
    let judge = |what: &str, needle: &str, value: &str| {
        plaintext_dial(ctx, servers, obj, (&Value::Null, ""), &who, what, needle, value)
    };
    for (key, v) in data {
        let Some(text) = v.as_str() else { continue };
        if key == "profile.yaml" || dial::is_listen_name(key) {
            continue;
        }
        if dial::parse_dial(text).is_some() {
            out.extend(judge(&format!("key `{key}`"), key, text));
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
                        out.extend(judge(&what, leaf, leaf));
                    }
                    continue;
                }
                for w in http_words(leaf) {
                    if !seen.contains(&w) {
                        seen.push(w);
                        out.extend(judge(&what, w, w));
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
                    out.extend(judge(&format!("key `{key}` (`{k}`)"), v, v));
                }
            }
        }
        for w in http_words(text) {
            if !seen.iter().any(|s| s.contains(w)) {
                seen.push(w);
                out.extend(judge(&format!("key `{key}`"), w, w));
            }
        }
    }
    out
}

pub(super) fn dial_addr_finding(obj: &Object, needle: &str, who: &str, value: &str) -> Finding {
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
pub(super) fn configmap_plaintext(obj: &Object) -> Vec<(bool, Finding)> {
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
