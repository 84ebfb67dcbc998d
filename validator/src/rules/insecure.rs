//! Rule family: insecure transport.
//!
//! - `insecure-flag`: a container argument, environment variable, object field or helmfile state
//!   value that turns certificate verification or TLS off.
//! - `plaintext-endpoint`: an endpoint that must speak TLS is plaintext (Vault/OpenBao servers,
//!   the OpenBao listener, the workers' gRPC dial address, worker gRPC behind a plain TCP
//!   listener).
//!
//! Both rules have `Scope::StateAndObjects`: the object part runs on every graph (and on
//! `--manifests` input); the state part reads the helmfile state values in the state pass, which
//! also runs when rendering failed — the charts refuse insecure values at render time, so the
//! state values are where such a mistake is visible even when nothing renders.
//!
//! The helpers here (truthiness, command-line and flag parsing, environment resolution, value
//! walks, HCL assignments) are shared by both rules.

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use crate::router;
use crate::stack::{ChartRef, Release};
use serde_json::Value;

pub static RULES: &[Rule] = &[
    Rule {
        id: INSECURE_FLAG,
        family: "insecure transport",
        severity: Severity::Error,
        summary: "a container arg/env, object field or state value turns TLS or certificate verification off",
        explain: INSECURE_FLAG_DOC,
        scope: Scope::StateAndObjects,
        check: insecure_flag,
    },
    Rule {
        id: PLAINTEXT_ENDPOINT,
        family: "insecure transport",
        severity: Severity::Error,
        summary:
            "a TLS-required endpoint is plaintext (http:// Vault/OpenBao, tls_disable, gRPC dial address, TCP listener)",
        explain: PLAINTEXT_ENDPOINT_DOC,
        scope: Scope::StateAndObjects,
        check: plaintext_endpoint,
    },
];

const INSECURE_FLAG: &str = "insecure-flag";
const PLAINTEXT_ENDPOINT: &str = "plaintext-endpoint";

const INSECURE_FLAG_DOC: &str = r#"## What it does
Refuses any switch that turns TLS or certificate verification off:
- container `command`/`args` (also inside `sh -c` scripts): `--quic-insecure`,
  `--insecure-skip-tls-verify`, `--allow-insecure-remote-watch-http`,
  `--enable-dev-peer-forwarding`, `--tls-skip-verify`, `--insecure`, … in every spelling
  (`--flag`, `--flag=true`, `--flag true`, `-flag`); `--flag=false` is accepted;
- container environment (literal, `envFrom` and `configMapKeyRef` from rendered ConfigMaps):
  `STARGATE_QUIC_INSECURE`, `*_INSECURE`, `*_SKIP_VERIFY`, `VAULT_SKIP_VERIFY`, `BAO_SKIP_VERIFY`
  set to `true`/`1`/`yes`/`on` (any case), and `NODE_TLS_REJECT_UNAUTHORIZED=0`;
- object fields under `spec` (e.g. a ServiceMonitor's `tlsConfig.insecureSkipVerify: true`,
  an APIService's `insecureSkipTLSVerify: true`);
- helmfile state values (merged values, inline values and `set:`), keys matched at any depth and
  in any case: `insecureSkipVerify`, `stargateQUICInsecure`, `grpcInsecure`, `quicInsecure`,
  `allowInsecureTransport`, `tlsDisable`, `skipTLSVerify`, `insecure`, …; a top-level
  `tls.enabled: false`; insecure flags in argument lists (`extraArgs`); env-style
  `{name, value}` entries.

## Why it matters
Workers trust the router only through its certificate. One `--quic-insecure` (which the
reference stack rendered silently when PKI was off) or one `*_SKIP_VERIFY=true` lets anyone on
the path impersonate the control plane. The charts refuse these values at render time; this rule
names the exact value and file even when rendering stops there.

## How to fix
Remove the flag or set it explicitly false (`--quic-insecure=false`, `quicInsecure: false`), and
make the certificate verifiable instead: serve a certificate that chains to the published trust
bundle and covers the name the client dials (see `san-covers-advertised-name`).

## Example
```yaml
# fires
args: ["--quic-insecure"]
env: [{name: STARGATE_QUIC_INSECURE, value: "True"}]
# silent
args: ["--quic-insecure=false", "--tls-cert-path=/etc/tls/tls.crt"]
```
"#;

const PLAINTEXT_ENDPOINT_DOC: &str = r#"## What it does
Refuses TLS-required endpoints that are plaintext:
- a cert-manager `Issuer`/`ClusterIssuer` whose `spec.vault.server` is `http://`;
- container env `VAULT_ADDR`/`BAO_ADDR` (and `*_VAULT_ADDR`, `BAO_API_ADDR`, …) set to `http://`
  (loopback addresses excepted: an in-pod agent or test server);
- an OpenBao/Vault listener with `tls_disable` = `1`/`true`/`"1"`/`"true"` in rendered server
  configuration (the upstream chart's ConfigMap key `extraconfig-from-values.hcl`, or
  `*_LOCAL_CONFIG` env JSON); for an OpenBao release that was not rendered (offline), the state
  values: `global.tlsDisable` not explicitly `false`, `server.dev.enabled`, or a server
  configuration (`server.standalone.config`, `server.ha.config`, `server.ha.raft.config`) that
  is missing (the chart default has `tls_disable = 1`) or sets `tls_disable`;
- a router `--grpc-pylon-dial-addr` (or the worker profile's `grpcDialAddress`) that does not
  start with `https://` (workers dial plaintext gRPC otherwise);
- worker gRPC behind a plain TCP listener: a `TCPRoute` whose backend is a Service port named
  `grpc` or on 50071 (unless every parent listener terminates TLS), and a `LoadBalancer`/
  `NodePort` Service exposing port 50071.

## Why it matters
The router's gRPC listener is plaintext in the binary; TLS must end in front of it. OpenBao issues
the router's identity: a plaintext OpenBao or Vault issuer leaks tokens and signed certificates
to anyone on the path. The reference stack spoke plain HTTP to OpenBao and never checked the
worker dial address.

## How to fix
Use `https://` addresses with a CA bundle; turn the OpenBao listener's TLS on
(`global.tlsDisable: false` and a listener with `tls_cert_file`/`tls_key_file` from the bootstrap
Certificate); expose worker gRPC through an HTTPS Gateway listener and a GRPCRoute to a Service
port with `appProtocol: kubernetes.io/h2c`.

## Example
```yaml
# fires
spec: {vault: {server: http://openbao.openbao.svc:8200, path: pki_int/sign/router}}
args: ["--grpc-pylon-dial-addr=router.example.com:443"]
# silent
spec: {vault: {server: https://openbao.openbao.svc:8200, path: pki_int/sign/router}}
args: ["--grpc-pylon-dial-addr=https://router.example.com:443"]
```
"#;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// `true`, `1`, `yes`, `on`, `y`, `t` (any case) — what Go's and Helm's parsers, and shells,
/// take as "on".
pub(crate) fn truthy_str(s: &str) -> bool {
    matches!(
        s.trim().to_ascii_lowercase().as_str(),
        "true" | "1" | "yes" | "on" | "y" | "t"
    )
}

pub(crate) fn falsy_str(s: &str) -> bool {
    matches!(
        s.trim().to_ascii_lowercase().as_str(),
        "false" | "0" | "no" | "off" | "n" | "f"
    )
}

/// Truthiness of a YAML value: booleans, the number 1, and truthy strings.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() == Some(1.0),
        Value::String(s) => truthy_str(s),
        _ => false,
    }
}

/// Explicitly off: `false`, `0`, falsy strings.
pub(crate) fn falsy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !*b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => falsy_str(s),
        _ => false,
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A name (flag, env var, values key) reduced to lowercase ASCII alphanumerics, so
/// `--quic-insecure`, `QUIC_INSECURE` and `quicInsecure` compare equal.
fn norm(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// What a switch (normalised name) turns off when it is on, if it is an insecure switch.
fn insecure_effect(n: &str) -> Option<&'static str> {
    const EXACT: &[(&str, &str)] = &[
        (
            "allowinsecureremotewatchhttp",
            "allows the router's remote watch over plain HTTP",
        ),
        (
            "enabledevpeerforwarding",
            "enables development-only peer forwarding without TLS",
        ),
        ("allowinsecuretransport", "allows plaintext transport"),
        ("kubeletinsecuretls", "turns off kubelet certificate verification"),
    ];
    if let Some((_, e)) = EXACT.iter().find(|(k, _)| *k == n) {
        return Some(e);
    }
    if n.ends_with("quicinsecure") {
        return Some("turns off certificate verification on the reverse QUIC tunnel");
    }
    if n.ends_with("grpcinsecure") {
        return Some("turns off TLS on the workers' gRPC connection");
    }
    if n.ends_with("tlsdisable") || n.ends_with("disabletls") {
        return Some("turns TLS off");
    }
    if [
        "insecure",
        "skipverify",
        "skiptlsverify",
        "insecureskiptlsverify",
        "noverify",
    ]
    .iter()
    .any(|s| n.ends_with(s))
    {
        return Some("turns off TLS certificate verification");
    }
    None
}

/// Switches whose *false* value turns verification off (`NODE_TLS_REJECT_UNAUTHORIZED=0`).
/// (`insecureSkipTLSVerify` ends in `tlsverify` too, but its false is the safe value.)
fn verify_switch(n: &str) -> bool {
    !n.contains("skip")
        && !n.contains("insecure")
        && [
            "tlsrejectunauthorized",
            "pythonhttpsverify",
            "tlsverify",
            "verifytls",
            "sslverify",
            "verifyssl",
        ]
        .iter()
        .any(|s| n.ends_with(s))
}

/// If `name = value` (a key, env var or inline flag value) is an insecure setting, what it does.
fn insecure_setting(name: &str, value: &Value) -> Option<&'static str> {
    let n = norm(name);
    if truthy(value) {
        if let Some(e) = insecure_effect(&n) {
            return Some(e);
        }
    }
    if falsy(value) && verify_switch(&n) {
        return Some("turns off TLS certificate verification");
    }
    None
}

/// The command line of a container (`crate::router::command_line`). An entry holding several
/// words (a `sh -c` script, `"--flag value"`) is split on whitespace with quotes and shell
/// punctuation stripped. Broader than `crate::router::parse_flags` on purpose (every element, any
/// scalar, `-flag` too): this hunts any client's insecure switch, not the router's contract.
fn cmdline(c: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for a in router::command_line(c) {
        push_words(&scalar_text(a), &mut out);
    }
    out
}

fn push_words(s: &str, out: &mut Vec<String>) {
    let t = s.trim();
    if t.contains(char::is_whitespace) {
        out.extend(
            t.split_whitespace()
                .map(|w| {
                    w.trim_matches(|c| matches!(c, '"' | '\'' | ';' | '&' | '|' | '(' | ')' | '`'))
                        .to_string()
                })
                .filter(|w| !w.is_empty()),
        );
    } else if !t.is_empty() {
        out.push(t.to_string());
    }
}

/// One flag on a command line.
#[derive(Debug)]
struct FlagUse {
    /// As written, without the value (`--quic-insecure`).
    flag: String,
    /// Normalised name (`quicinsecure`).
    name: String,
    /// `--flag=value`
    inline: Option<String>,
    /// The next token when it is not itself a flag (`--flag value`).
    next: Option<String>,
}

impl FlagUse {
    /// The flag's value: the inline one, else the next token.
    fn value(&self) -> Option<&str> {
        self.inline.as_deref().or(self.next.as_deref())
    }

    /// Whether a switch-type flag is on. `--flag=false` is off; a following `false` is not read
    /// as the value by Go's flag parsers (it becomes a positional argument), so it stays on.
    fn on(&self) -> bool {
        match &self.inline {
            Some(v) => !falsy_str(v),
            None => true,
        }
    }
}

fn flag_uses(tokens: &[String]) -> Vec<FlagUse> {
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let body = match t.strip_prefix("--").or_else(|| t.strip_prefix('-')) {
            Some(b) if b.starts_with(|c: char| c.is_ascii_alphabetic()) => b,
            _ => continue,
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let next = if inline.is_none() {
            tokens.get(i + 1).filter(|n| !n.starts_with('-')).cloned()
        } else {
            None
        };
        let flag = format!("{}{name}", &t[..t.len() - body.len()]);
        out.push(FlagUse {
            flag,
            name: norm(name),
            inline,
            next,
        });
    }
    out
}

/// An insecure switch among flags: (the flag as written with its value, what it does).
fn insecure_flags(tokens: &[String]) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for f in flag_uses(tokens) {
        let effect = if f.on() { insecure_effect(&f.name) } else { None }.or_else(|| {
            match (&f.inline, verify_switch(&f.name)) {
                (Some(v), true) if falsy_str(v) => Some("turns off TLS certificate verification"),
                _ => None,
            }
        });
        if let Some(e) = effect {
            let shown = match (&f.inline, &f.next) {
                (Some(v), _) => format!("{}={v}", f.flag),
                (None, Some(n)) if truthy_str(n) || falsy_str(n) => format!("{} {n}", f.flag),
                _ => f.flag.clone(),
            };
            out.push((shown, e));
        }
    }
    out
}

/// One environment variable of a container.
struct EnvVar {
    name: String,
    value: Value,
    /// The ConfigMap it was resolved from (`envFrom`, `configMapKeyRef`).
    from: Option<String>,
    /// What to look for in the template to point at the line (the variable, or the `envFrom`
    /// ConfigMap's name).
    needle: String,
}

/// A container's environment: literal `env`, and `envFrom` ConfigMaps and `configMapKeyRef`s
/// resolved in the graph.
fn env_of(g: &Graph, obj: &Object, c: &Value) -> Vec<EnvVar> {
    let ns = obj.namespace.as_deref();
    let cm_data = |name: &str| {
        g.get("", "ConfigMap", ns, name)
            .and_then(|cm| cm.at("/data"))
            .and_then(Value::as_object)
    };
    let mut out = Vec::new();
    for from in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = from.pointer("/configMapRef/name").and_then(Value::as_str) else {
            continue;
        };
        let prefix = from.get("prefix").and_then(Value::as_str).unwrap_or_default();
        for (k, v) in cm_data(name).into_iter().flatten() {
            out.push(EnvVar {
                name: format!("{prefix}{k}"),
                value: v.clone(),
                from: Some(format!("ConfigMap {name}")),
                needle: name.to_string(),
            });
        }
    }
    for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        if let Some(v) = e.get("value") {
            out.push(EnvVar {
                name: name.to_string(),
                value: v.clone(),
                from: None,
                needle: name.to_string(),
            });
        } else if let Some(r) = e.pointer("/valueFrom/configMapKeyRef") {
            let (Some(cm), Some(key)) = (
                r.get("name").and_then(Value::as_str),
                r.get("key").and_then(Value::as_str),
            ) else {
                continue;
            };
            if let Some(v) = cm_data(cm).and_then(|d| d.get(key)) {
                out.push(EnvVar {
                    name: name.to_string(),
                    value: v.clone(),
                    from: Some(format!("ConfigMap {cm}")),
                    needle: name.to_string(),
                });
            }
        }
    }
    out
}

fn container_name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("?")
}

/// Singular of a pod spec's container list name, for messages.
fn list_word(list: &str) -> &'static str {
    match list {
        "initContainers" => "initContainer",
        "ephemeralContainers" => "ephemeralContainer",
        _ => "container",
    }
}

/// Objects produced by the stack (policy externals excluded).
fn rendered(g: &Graph) -> impl Iterator<Item = &Object> {
    g.objects.iter().filter(|o| !o.prov.external)
}

/// Values assigned to `key` in HCL or JSON configuration text (`key = 1`, `key = "true"`,
/// `"key": true`), with the 1-based line; `#` and `//` comment lines are skipped.
fn config_assignments<'a>(text: &'a str, key: &str) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim_start();
        if l.starts_with('#') || l.starts_with("//") {
            continue;
        }
        let l = l.split(" #").next().unwrap_or(l);
        for (at, _) in l.match_indices(key) {
            let before = l[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let rest = l[at + key.len()..].trim_start_matches('"').trim_start();
            let Some(rest) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':')) else {
                continue;
            };
            let value = rest
                .trim_start()
                .split(|c: char| c.is_whitespace() || c == ',' || c == '}')
                .next()
                .unwrap_or_default();
            out.push((i + 1, value.trim_matches(|c| c == '"' || c == '\'')));
        }
    }
    out
}

/// Whether `text` turns a listener's TLS off (`tls_disable` truthy).
fn disables_tls(text: &str) -> bool {
    config_assignments(text, "tls_disable")
        .iter()
        .any(|(_, v)| truthy_str(v))
}

fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let host = rest.split('/').next().unwrap_or_default();
    let host = if let Some(h) = host.strip_prefix('[') {
        h.split(']').next().unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost") || host.starts_with("127.") || host == "::1"
}

fn is_http(url: &str) -> bool {
    url.trim().get(..7).is_some_and(|p| p.eq_ignore_ascii_case("http://"))
}

fn is_https(url: &str) -> bool {
    url.trim().get(..8).is_some_and(|p| p.eq_ignore_ascii_case("https://"))
}

/// `a.b[0].c` for messages.
fn show_path(path: &[String]) -> String {
    let mut s = String::new();
    for p in path {
        if p.starts_with('[') {
            s.push_str(p);
        } else {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(p);
        }
    }
    s
}

fn short(v: &Value) -> String {
    let t = scalar_text(v);
    if t.chars().count() > 60 {
        format!("{}…", t.chars().take(60).collect::<String>())
    } else {
        t
    }
}

// ---------------------------------------------------------------------------------------------
// insecure-flag
// ---------------------------------------------------------------------------------------------

/// One insecure setting found in a values tree: where, what, and its effect.
struct Hit {
    path: String,
    shown: String,
    effect: &'static str,
}

/// Walk helm values (or an object's spec when `keys_only`): insecure keys at any depth, env-style
/// `{name, value}` entries, and insecure flags in string lists or `-`-prefixed strings.
/// `skip` excludes paths another rule reports.
fn scan_values(
    v: &Value,
    path: &mut Vec<String>,
    keys_only: bool,
    skip: &dyn Fn(&[String]) -> bool,
    hits: &mut Vec<Hit>,
) {
    match v {
        Value::Object(m) => {
            if !keys_only {
                if let (Some(Value::String(name)), Some(val)) = (m.get("name"), m.get("value")) {
                    if let Some(effect) = insecure_setting(name, val) {
                        hits.push(Hit {
                            path: show_path(path),
                            shown: format!("{}: {name}={}", show_path(path), short(val)),
                            effect,
                        });
                    }
                }
            }
            for (k, child) in m {
                path.push(k.clone());
                if !skip(path) {
                    let scalar = !child.is_object() && !child.is_array();
                    let tls_off = !keys_only
                        && path.len() == 2
                        && norm(&path[0]) == "tls"
                        && norm(k) == "enabled"
                        && falsy(child);
                    if scalar {
                        if let Some(effect) = insecure_setting(k, child) {
                            hits.push(Hit {
                                path: show_path(path),
                                shown: format!("{}: {}", show_path(path), short(child)),
                                effect,
                            });
                        } else if tls_off {
                            hits.push(Hit {
                                path: show_path(path),
                                shown: format!("tls.enabled: {}", short(child)),
                                effect: "turns TLS off",
                            });
                        }
                    }
                    if let (false, Value::String(s)) = (keys_only, child) {
                        if s.trim_start().starts_with('-') {
                            let mut words = Vec::new();
                            push_words(s, &mut words);
                            for (shown, effect) in insecure_flags(&words) {
                                hits.push(Hit {
                                    path: show_path(path),
                                    shown: format!("{}: {shown}", show_path(path)),
                                    effect,
                                });
                            }
                        }
                    }
                    scan_values(child, path, keys_only, skip, hits);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            if !keys_only {
                let words: Vec<String> = items.iter().filter(|i| i.is_string()).map(scalar_text).collect();
                let mut tokens = Vec::new();
                for w in &words {
                    push_words(w, &mut tokens);
                }
                for (shown, effect) in insecure_flags(&tokens) {
                    hits.push(Hit {
                        path: show_path(path),
                        shown: format!("{}: {shown}", show_path(path)),
                        effect,
                    });
                }
            }
            for (i, item) in items.iter().enumerate() {
                if item.is_object() || item.is_array() {
                    path.push(format!("[{i}]"));
                    scan_values(item, path, keys_only, skip, hits);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn insecure_flag(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for obj in rendered(ctx.graph) {
        for (list, c) in obj.containers() {
            let who = format!("{}: {} `{}`", obj.display(), list_word(list), container_name(c));
            for (shown, effect) in insecure_flags(&cmdline(c)) {
                let needle = shown.split(['=', ' ']).next().unwrap_or(&shown).to_string();
                out.push(
                    Finding::object_at(
                        INSECURE_FLAG,
                        obj,
                        &needle,
                        format!("{who} runs with `{shown}`, which {effect}"),
                    )
                    .with_help(format!(
                        "remove `{needle}` (or set `{needle}=false`) and give the client a certificate it can verify"
                    )),
                );
            }
            for EnvVar {
                name,
                value,
                from,
                needle,
            } in env_of(ctx.graph, obj, c)
            {
                if let Some(effect) = insecure_setting(&name, &value) {
                    let via = from.map(|f| format!(" (from {f})")).unwrap_or_default();
                    out.push(
                        Finding::object_at(
                            INSECURE_FLAG,
                            obj,
                            &needle,
                            format!("{who} sets `{name}={}`{via}, which {effect}", short(&value)),
                        )
                        .with_help(format!(
                            "remove `{name}` or set it to false; trust comes from the certificate and the trust bundle"
                        )),
                    );
                }
            }
        }
        if matches!(obj.kind.as_str(), "ConfigMap" | "Secret" | "CustomResourceDefinition") {
            continue;
        }
        if let Some(spec) = obj.at("/spec") {
            let mut hits = Vec::new();
            scan_values(spec, &mut vec!["spec".to_string()], true, &|_| false, &mut hits);
            for h in hits {
                let key = h.path.rsplit('.').next().unwrap_or(&h.path).to_string();
                out.push(
                    Finding::object_at(
                        INSECURE_FLAG,
                        obj,
                        &key,
                        format!("{}: `{}` {}", obj.display(), h.shown, h.effect),
                    )
                    .with_help(format!("set `{}` to false and configure a CA bundle instead", h.path)),
                );
            }
        }
    }
    if let Some(state) = ctx.state {
        for r in state.installed() {
            for h in release_value_hits(r) {
                out.push(
                    Finding::state(
                        INSECURE_FLAG,
                        Some(ctx.environment),
                        Some(r.id()),
                        &r.file,
                        r.line,
                        format!("release {}: value `{}` {}", r.id(), h.shown, h.effect),
                    )
                    .with_help(format!(
                        "remove `{}` from the release's values (or set it false); the charts refuse it at render time",
                        h.path
                    )),
                );
            }
        }
    }
    out
}

/// Insecure settings in a release's values: the merged values (or, when helmfile could not
/// compute them, the inline values) and `set:` entries.
fn release_value_hits(r: &Release) -> Vec<Hit> {
    let bao = is_openbao(r);
    // The OpenBao chart's `global.tlsDisable` is plaintext-endpoint's finding.
    let skip = move |p: &[String]| bao && p.len() == 2 && p[0] == "global" && p[1] == "tlsDisable";
    let mut hits = Vec::new();
    if r.values.is_null() {
        for v in r.declared_values.iter().filter(|v| v.is_object()) {
            scan_values(v, &mut Vec::new(), false, &skip, &mut hits);
        }
    } else {
        scan_values(&r.values, &mut Vec::new(), false, &skip, &mut hits);
    }
    for (name, value) in &r.set {
        let path: Vec<String> = name.split('.').map(str::to_string).collect();
        if skip(&path) {
            continue;
        }
        let last = name.rsplit('.').next().unwrap_or(name);
        let last = last.split('[').next().unwrap_or(last);
        if let Some(effect) = insecure_setting(last, value) {
            hits.push(Hit {
                path: format!("set {name}"),
                shown: format!("set {name}={}", short(value)),
                effect,
            });
        }
        match value {
            Value::String(s) if s.trim_start().starts_with('-') => {
                let mut words = Vec::new();
                push_words(s, &mut words);
                for (shown, effect) in insecure_flags(&words) {
                    hits.push(Hit {
                        path: format!("set {name}"),
                        shown: format!("set {name}={shown}"),
                        effect,
                    });
                }
            }
            Value::Object(_) | Value::Array(_) => {
                scan_values(value, &mut vec![format!("set {name}")], false, &skip, &mut hits)
            }
            _ => {}
        }
    }
    hits
}

// ---------------------------------------------------------------------------------------------
// plaintext-endpoint
// ---------------------------------------------------------------------------------------------

/// The upstream OpenBao (or HashiCorp Vault) server chart.
fn is_openbao(r: &Release) -> bool {
    let chart = match &r.chart_ref {
        ChartRef::Repo { chart, .. } => chart.as_str(),
        ChartRef::Oci { url } => url.rsplit('/').next().unwrap_or_default(),
        ChartRef::Other { raw } => raw.rsplit('/').next().unwrap_or_default(),
        ChartRef::Local { .. } => return false,
    };
    let chart = chart.split(':').next().unwrap_or(chart);
    let chart = chart
        .strip_suffix(".tgz")
        .map(|c| c.rsplit_once('-').map(|(n, _)| n).unwrap_or(c))
        .unwrap_or(chart);
    chart == "openbao" || chart == "vault"
}

/// `VAULT_ADDR`, `BAO_ADDR`, `AGENT_INJECT_VAULT_ADDR`, `BAO_API_ADDR`, …
fn is_vault_addr_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').collect();
    words.iter().any(|w| *w == "VAULT" || *w == "BAO") && matches!(words.last(), Some(&"ADDR") | Some(&"ADDRESS"))
}

fn plaintext_endpoint(ctx: &Ctx) -> Vec<Finding> {
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
    use super::*;
    use crate::graph::Graph;
    use crate::policy::Policy;
    use crate::render::ReleaseStatus;
    use crate::rules::ownership::testkit::*;
    use crate::stack::Stack;
    use serde_json::json;

    fn rule(id: &str) -> &'static Rule {
        RULES.iter().find(|r| r.id == id).unwrap()
    }

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn fixtures_fire_and_stay_silent() {
        every_object_rule_has_fixtures("insecure", RULES);
        for (stem, findings) in check_family("insecure", RULES) {
            insta::assert_json_snapshot!(stem, findings);
        }
    }

    #[test]
    fn flag_spellings() {
        let on = |args: &[&str]| {
            insecure_flags(&words(args))
                .into_iter()
                .map(|(s, _)| s)
                .collect::<Vec<_>>()
        };
        assert_eq!(on(&["--quic-insecure"]), ["--quic-insecure"]);
        assert_eq!(on(&["--quic-insecure=true"]), ["--quic-insecure=true"]);
        assert_eq!(on(&["--quic-insecure=TRUE"]), ["--quic-insecure=TRUE"]);
        assert_eq!(on(&["--quic-insecure", "true"]), ["--quic-insecure true"]);
        assert_eq!(
            on(&["--quic-insecure", "false"]),
            ["--quic-insecure false"],
            "a separate false is a positional argument"
        );
        assert_eq!(on(&["-insecure"]), ["-insecure"]);
        assert_eq!(on(&["--tls-verify=false"]), ["--tls-verify=false"]);
        assert!(on(&[
            "--quic-insecure=false",
            "--insecure-skip-tls-verify=0",
            "--insecure-port=0",
            "--tls-verify=true",
            "--",
            "-",
            "-5"
        ])
        .is_empty());
        let mut shell = Vec::new();
        push_words("exec router --enable-dev-peer-forwarding; sleep 1", &mut shell);
        assert_eq!(
            on(&shell.iter().map(String::as_str).collect::<Vec<_>>()),
            ["--enable-dev-peer-forwarding"]
        );
    }

    #[test]
    fn truthiness_and_config_text() {
        for t in [
            json!(true),
            json!(1),
            json!("True"),
            json!("1"),
            json!("yes"),
            json!("ON"),
        ] {
            assert!(truthy(&t), "{t}");
        }
        for f in [
            json!(false),
            json!(0),
            json!("false"),
            json!("0"),
            json!("no"),
            json!("off"),
            json!(null),
            json!("maybe"),
            json!(2),
        ] {
            assert!(!truthy(&f), "{f}");
        }
        assert!(disables_tls("listener \"tcp\" {\n  tls_disable = 1\n}"));
        assert!(disables_tls("listener \"tcp\" { tls_disable = \"true\" }"));
        assert!(disables_tls("{\"listener\":[{\"tcp\":{\"tls_disable\":\"1\"}}]}"));
        assert!(!disables_tls(
            "listener \"tcp\" {\n  # tls_disable = 1\n  tls_disable = false\n  tls_disable_client_certs = true\n}"
        ));
        assert!(!disables_tls("x_tls_disable = 1"));
        assert!(
            is_loopback_url("http://127.0.0.1:8200")
                && is_loopback_url("http://[::1]:8200")
                && is_loopback_url("http://localhost")
        );
        assert!(!is_loopback_url("http://openbao.openbao.svc:8200"));
    }

    fn run(rule_id: &str, st: &crate::stack::EnvState, status: &[ReleaseStatus]) -> Vec<Finding> {
        run_state(rule(rule_id), st, &Stack::default(), &Policy::default(), status)
    }

    #[test]
    fn insecure_state_values() {
        let mut router = rel(
            "helmfile.yaml",
            40,
            "nvcf",
            "request-router",
            local("charts/request-router"),
        );
        router.values = json!({
            "quicInsecure": true,
            "allowInsecureRemoteWatchHttp": "true",
            "extraArgs": ["--listen-addr=0.0.0.0:50071", "--enable-dev-peer-forwarding"],
            "extraEnv": [{"name": "STARGATE_QUIC_INSECURE", "value": "1"}],
            "tls": {"enabled": false},
            "gateway": {"backendTLS": {"insecureSkipVerify": "yes"}},
            // near misses
            "grpcInsecure": false,
            "metrics": {"tls": {"enabled": false}},
            "docs": "the flag --quic-insecure is refused",
        });
        router.set = vec![
            ("workerProfile.insecureSkipVerify".into(), json!("true")),
            ("router.quicInsecure".into(), json!(false)),
        ];
        let mut inline_only = rel("pki/helmfile.yaml", 7, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        inline_only.declared_values = vec![
            json!("values/nvcf-pki.yaml"),
            json!({"workerProfile": {"insecureSkipVerify": true}}),
        ];
        let st = state(vec![router, inline_only], vec![]);
        let f = run(INSECURE_FLAG, &st, &[]);
        let shown: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 8, "{shown:#?}");
        assert!(f.iter().all(|f| f.rule == INSECURE_FLAG && f.object.is_none()));
        assert_eq!(
            f[7].source.as_ref().map(|s| (s.file.as_str(), s.line)),
            Some(("pki/helmfile.yaml", Some(7)))
        );
        insta::assert_json_snapshot!(f);
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
    fn findings_point_at_the_line_in_the_right_document() {
        let yaml = "# --quic-insecure is forbidden\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n    - name: a\n      image: x:1.0.0\n      args: [--quic-insecure]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n    - name: b\n      image: x:1.0.0\n      args: [--quic-insecure]\n";
        let g = crate::testutil::graph("default", yaml);
        let p = Policy::default();
        let f = (rule(INSECURE_FLAG).check)(&crate::testutil::ctx(&g, &p));
        let lines: Vec<Option<usize>> = f.iter().map(|f| f.source.as_ref().unwrap().line).collect();
        assert_eq!(lines, [Some(9), Some(18)]);
    }

    #[test]
    fn state_pass_reports_values_and_object_pass_reports_containers() {
        let g = crate::testutil::graph("default", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n    - {name: a, image: 'x:1.0.0', args: [--quic-insecure]}\n");
        let mut router = rel(
            "helmfile.yaml",
            40,
            "nvcf",
            "request-router",
            local("charts/request-router"),
        );
        router.values = json!({"quicInsecure": true});
        let st = state(vec![router], vec![]);
        let (stack, policy) = (Stack::default(), Policy::default());
        let c = ctx(&g, &policy, &stack, &st, &[]);
        let mine = |f: Vec<Finding>| f.into_iter().filter(|f| f.rule == INSECURE_FLAG).collect::<Vec<_>>();
        let state_pass = mine(crate::rules::run(&c, Scope::State));
        assert_eq!(state_pass.len(), 1, "{state_pass:#?}");
        assert!(state_pass[0].object.is_none() && state_pass[0].message.contains("quicInsecure"));
        let object_pass = mine(crate::rules::run(&c, Scope::Objects));
        assert_eq!(object_pass.len(), 1, "{object_pass:#?}");
        assert!(object_pass[0].object.is_some() && object_pass[0].message.contains("--quic-insecure"));
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
        assert!((rule(PLAINTEXT_ENDPOINT).check)(&crate::testutil::ctx(&g, &policy)).is_empty());
    }
}
