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

/// ConfigMap and Secret files as a client reads them (`crate::config_files`): a value that is a
/// dial address; the leaves of a configuration file (YAML, JSON, TOML, INI/properties, HCL:
/// `app.yaml: {auth: {endpoint: auth.nvcf.svc:9090}}`), each judged like a whole value; `http://`
/// URLs in scripts and in text no parser reads (nginx, templates). Markup and prose (an HTML page,
/// Markdown) is not configuration: a hyperlink there is not a dial address. A Secret's address is
/// never shown: the message names the Secret and its key.
pub(super) fn configmap_dials(ctx: &Ctx, servers: &Servers, obj: &Object) -> Vec<Finding> {
    let mut out = Vec::new();
    let who = obj.display();
    for file in crate::config_files::files(obj) {
        let (key, text) = (file.key, file.text.as_ref());
        if key == "profile.yaml" || dial::is_listen_name(key) {
            continue;
        }
        let mut judge = |what: String, needle: &str, value: &str| {
            let needle = if file.secret { key } else { needle };
            let found = plaintext_dial(ctx, servers, obj, (&Value::Null, ""), &who, &what, needle, value);
            // A Secret's value is judged, never shown (nor its host).
            let secret = [(
                value.to_string(),
                format!(
                    "value of Secret {}/{} key `{key}`",
                    obj.namespace.as_deref().unwrap_or(""),
                    obj.name
                ),
            )];
            out.extend(found.map(|f| if file.secret { hide(f, &secret) } else { f }));
        };
        if dial::parse_dial(text).is_some() {
            // A key a container reads as a variable is judged there, with what the reader says
            // of it (a companion `*_PLAINTEXT` switch); otherwise here, as the value it is.
            if !read_as_env(ctx.graph, obj, key) {
                judge(format!("key `{key}`"), key, text);
            }
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        match crate::config_files::read(key, text) {
            crate::config_files::Content::Config(_, doc) => {
                for (path, leaf) in leaves(&doc) {
                    let what = format!("key `{key}` (`{path}`)");
                    if dial::parse_dial(leaf).is_some() {
                        if !seen.contains(&leaf) {
                            seen.push(leaf);
                            judge(what, leaf, leaf);
                        }
                        continue;
                    }
                    if leaf.trim_start().starts_with('<') {
                        continue; // markup inside a value (an HTML snippet): not a dial address
                    }
                    for w in http_words(leaf) {
                        if !seen.contains(&w) {
                            seen.push(w);
                            judge(what.clone(), w, w);
                        }
                    }
                }
            }
            crate::config_files::Content::Markup => {}
            crate::config_files::Content::Script
            | crate::config_files::Content::Other
            | crate::config_files::Content::TooDeep => {
                for w in http_words(text) {
                    if !seen.iter().any(|s| s.contains(w)) {
                        seen.push(w);
                        judge(format!("key `{key}`"), w, w);
                    }
                }
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

/// Whether a rendered container in the namespace of ConfigMap or Secret `obj` reads `key` as an
/// environment variable (`configMapKeyRef`/`secretKeyRef`, or `envFrom` with its prefix) and
/// declares a companion that says whether that address is dialled in plaintext
/// (`PLAINTEXT_COMPANIONS`): the reader decides, and is judged where it reads it.
fn read_as_env(g: &Graph, obj: &Object, key: &str) -> bool {
    let (by_key, whole) = if obj.kind == "Secret" {
        ("/valueFrom/secretKeyRef", "/secretRef/name")
    } else {
        ("/valueFrom/configMapKeyRef", "/configMapRef/name")
    };
    let name = Some(obj.name.as_str());
    rendered(g)
        .filter(|w| w.namespace == obj.namespace)
        .flat_map(|w| w.containers())
        .any(|(_, c)| {
            let list = |k: &str| c.get(k).and_then(Value::as_array).into_iter().flatten();
            let mut vars: Vec<String> = list("env")
                .filter(|e| {
                    e.pointer(by_key).is_some_and(|r| {
                        r.get("name").and_then(Value::as_str) == name
                            && r.get("key").and_then(Value::as_str) == Some(key)
                    })
                })
                .filter_map(|e| e.get("name").and_then(Value::as_str).map(str::to_string))
                .collect();
            vars.extend(
                list("envFrom")
                    .filter(|e| e.pointer(whole).and_then(Value::as_str) == name)
                    .map(|e| format!("{}{key}", e.get("prefix").and_then(Value::as_str).unwrap_or(""))),
            );
            let declared: Vec<&str> = list("env")
                .filter_map(|e| e.get("name").and_then(Value::as_str))
                .collect();
            vars.iter().any(|v| {
                super::containers::PLAINTEXT_COMPANIONS
                    .iter()
                    .any(|(suffix, _)| declared.contains(&format!("{v}{suffix}").as_str()))
            })
        })
}
