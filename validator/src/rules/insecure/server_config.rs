//! OpenBao/Vault server configuration, recognised by what it is rather than by a chart's name: HCL
//! (or the JSON form) with `listener` blocks, parsed with `hcl-rs`. Wherever such text appears (any
//! ConfigMap key, `BAO_LOCAL_CONFIG`/`VAULT_LOCAL_CONFIG`, a release's values), it is a server's
//! configuration and its listeners are judged.

use super::*;

/// One `listener "<type>" { … }` block.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Listener {
    /// `tcp`, `unix`, …
    pub kind: String,
    /// `tls_disable` is on (true, 1, "true", "1", …).
    pub tls_disable: bool,
    /// `address` as written, when it is a literal string.
    pub address: Option<String>,
}

impl Listener {
    /// Serves plaintext beyond the pod: TLS off on a listener that is not a unix socket and not
    /// bound to loopback. A `tcp` listener without `address` binds `127.0.0.1:8200` (the
    /// OpenBao/Vault default); a template address (`{{ GetPrivateIP }}:8200`) is not loopback.
    pub fn plaintext_on_network(&self) -> bool {
        self.tls_disable && self.kind != "unix" && !self.address.as_deref().map_or(self.kind == "tcp", loopback_address)
    }
}

/// `127.0.0.1:8100`, `localhost:8200`, `[::1]:8200`, `[::ffff:127.0.0.1]:8200`: decided by
/// parsing the host (`crate::meaning::host`), so `127.bao.corp.example.net:8200` is a DNS name.
fn loopback_address(a: &str) -> bool {
    crate::meaning::host::is_loopback(crate::meaning::host::split_authority(a).0)
}

/// The listeners of a server configuration, or `None` when `text` is not HCL/JSON with at least
/// one `listener` block.
pub(super) fn listeners(text: &str) -> Option<Vec<Listener>> {
    let t = text.trim_start();
    let out = if t.starts_with('{') {
        json_listeners(&serde_json::from_str::<Value>(t).ok()?)
    } else {
        hcl_listeners(&hcl::parse(text).ok()?)
    };
    (!out.is_empty()).then_some(out)
}

fn hcl_on(e: &hcl::Expression) -> bool {
    match e {
        hcl::Expression::Bool(b) => *b,
        hcl::Expression::Number(n) => n.as_f64() == Some(1.0),
        hcl::Expression::String(s) => truthy_str(s),
        hcl::Expression::Parenthesis(inner) => hcl_on(inner),
        _ => false,
    }
}

fn hcl_str(e: &hcl::Expression) -> Option<String> {
    match e {
        hcl::Expression::String(s) => Some(s.clone()),
        // `"${…}:8200"` and other templates: kept as written, never loopback.
        hcl::Expression::TemplateExpr(t) => Some(t.to_string()),
        _ => None,
    }
}

fn hcl_listeners(body: &hcl::Body) -> Vec<Listener> {
    let mut out = Vec::new();
    for b in body.blocks().filter(|b| b.identifier() == "listener") {
        let kind = b.labels().first().map(|l| l.as_str().to_string()).unwrap_or_default();
        let tls_disable = b
            .body()
            .attributes()
            .any(|a| a.key() == "tls_disable" && hcl_on(a.expr()));
        let address = b
            .body()
            .attributes()
            .find(|a| a.key() == "address")
            .and_then(|a| hcl_str(a.expr()));
        out.push(Listener {
            kind,
            tls_disable,
            address,
        });
    }
    // `listener = { tcp = { … } }` (attribute form).
    for a in body.attributes().filter(|a| a.key() == "listener") {
        if let hcl::Expression::Object(o) = a.expr() {
            for (k, v) in o {
                let (tls_disable, address) = match v {
                    hcl::Expression::Object(inner) => (
                        inner
                            .iter()
                            .any(|(ik, iv)| ik.to_string() == "tls_disable" && hcl_on(iv)),
                        inner
                            .iter()
                            .find(|(ik, _)| ik.to_string() == "address")
                            .and_then(|(_, iv)| hcl_str(iv)),
                    ),
                    _ => (false, None),
                };
                out.push(Listener {
                    kind: k.to_string(),
                    tls_disable,
                    address,
                });
            }
        }
    }
    out
}

/// `{"listener": {"tcp": {…}}}` or `{"listener": [{"tcp": {…}}, …]}`.
fn json_listeners(v: &Value) -> Vec<Listener> {
    let mut out = Vec::new();
    let items: Vec<&Value> = match v.get("listener") {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(o @ Value::Object(_)) => vec![o],
        _ => Vec::new(),
    };
    for item in items {
        for (kind, cfg) in item.as_object().into_iter().flatten() {
            let cfgs: Vec<&Value> = match cfg {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            for c in cfgs {
                out.push(Listener {
                    kind: kind.clone(),
                    tls_disable: c.get("tls_disable").is_some_and(truthy),
                    address: c.get("address").and_then(Value::as_str).map(str::to_string),
                });
            }
        }
    }
    out
}

/// Whether `text` configures a listener that serves plaintext beyond the pod
/// (`Listener::plaintext_on_network`). Server configuration is parsed; text that is not HCL/JSON
/// at all (a script, a template fragment) falls back to a line scan for `tls_disable`, so nothing
/// unparseable passes silently. Configuration of another format (YAML, TOML, INI) that names no
/// listener configures none: its `tls_disable` is a client's switch, which insecure-flag reports.
pub(super) fn disables_tls(text: &str) -> bool {
    match listeners(text) {
        Some(ls) => ls.iter().any(Listener::plaintext_on_network),
        None if hcl::parse(text).is_ok() || serde_json::from_str::<Value>(text).is_ok() => false,
        None if !text.contains("listener")
            && matches!(
                crate::config_files::read("", text),
                crate::config_files::Content::Config(..)
            ) =>
        {
            false
        }
        None => config_assignments(text, "tls_disable")
            .iter()
            .any(|(_, v)| truthy_str(v)),
    }
}

/// Whether a release's values configure an OpenBao/Vault server, whatever its chart is called:
/// the server chart's values shape (`server.standalone`/`server.ha`/`server.dev`) or any string
/// value holding a server configuration with a listener.
pub(super) fn configures_server(values: &Value) -> bool {
    let shape = values.get("server").and_then(Value::as_object).is_some_and(|s| {
        ["standalone", "ha", "dev"]
            .iter()
            .any(|k| s.get(*k).is_some_and(Value::is_object))
    });
    shape || holds_config(values, 0)
}

/// Bounded by the YAML reader's own nesting limit: every value it can produce is searched.
fn holds_config(v: &Value, depth: usize) -> bool {
    if depth > crate::yaml::MAX_DEPTH {
        return false;
    }
    match v {
        Value::String(s) => s.contains("listener") && listeners(s).is_some(),
        Value::Array(a) => a.iter().any(|x| holds_config(x, depth + 1)),
        Value::Object(m) => m.values().any(|x| holds_config(x, depth + 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_are_parsed_as_hcl_and_json() {
        let l = listeners("ui = true\nlistener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_disable = 1\n}\nlistener \"unix\" {\n  address = \"/run/bao.sock\"\n}\nstorage \"raft\" { path = \"/data\" }\n").unwrap();
        assert_eq!(
            l,
            [
                Listener {
                    kind: "tcp".into(),
                    tls_disable: true,
                    address: Some("[::]:8200".into()),
                },
                Listener {
                    kind: "unix".into(),
                    tls_disable: false,
                    address: Some("/run/bao.sock".into()),
                }
            ]
        );
        let any = "address = \"0.0.0.0:8200\"";
        assert!(disables_tls(&format!(
            "listener \"tcp\" {{ {any}\n tls_disable = \"true\" }}"
        )));
        assert!(disables_tls(
            "{\"listener\":[{\"tcp\":{\"address\":\"[::]:8200\",\"tls_disable\":\"1\"}}]}"
        ));
        assert!(disables_tls(
            "{\"listener\":{\"tcp\":{\"address\":\"10.0.0.1:8200\",\"tls_disable\":true}}}"
        ));
        assert!(disables_tls(
            "listener \"tcp\" {\n address = \"{{ GetPrivateIP }}:8200\"\n tls_disable = 1\n}"
        ));
        // Loopback-bound (an agent's local listener; a tcp listener's default address is
        // 127.0.0.1:8200) and unix-socket listeners serve nothing beyond the pod.
        for local in [
            "listener \"tcp\" {\n address = \"127.0.0.1:8100\"\n tls_disable = true\n}",
            "listener \"tcp\" {\n address = \"[::1]:8100\"\n tls_disable = true\n}",
            "listener \"tcp\" {\n address = \"localhost:8100\"\n tls_disable = true\n}",
            "listener \"tcp\" { tls_disable = 1 }",
            "listener \"unix\" {\n address = \"/run/agent.sock\"\n tls_disable = true\n}",
            "{\"listener\":{\"unix\":{\"address\":\"/run/a.sock\",\"tls_disable\":true}}}",
        ] {
            assert!(!disables_tls(local), "{local}");
        }
        assert!(!disables_tls(
            "listener \"tcp\" {\n  # tls_disable = 1\n  tls_disable = false\n  tls_disable_client_certs = true\n}"
        ));
        // Outside a listener block it is not a listener setting.
        assert!(!disables_tls(
            "tls_disable = 1\nlistener \"tcp\" { tls_cert_file = \"/t/tls.crt\" }"
        ));
        assert!(listeners("storage \"raft\" {}").is_none());
        assert!(listeners("not: [hcl").is_none());
        // Not configuration at all: the line scan still sees it.
        assert!(disables_tls(
            "cat > /cfg <<EOF\nlistener \"tcp\" {\n tls_disable = 1\nEOF\n"
        ));
        assert!(configures_server(
            &serde_json::json!({"server": {"ha": {"enabled": true}}})
        ));
        assert!(configures_server(
            &serde_json::json!({"vault": {"cfg": "listener \"tcp\" {}"}})
        ));
        assert!(!configures_server(
            &serde_json::json!({"server": {"port": 80}, "text": "listener"})
        ));
        // A configuration as deep as the YAML reader nests is still found.
        let mut deep = serde_json::json!("listener \"tcp\" {}");
        for _ in 0..crate::yaml::MAX_DEPTH {
            deep = serde_json::json!({ "v": deep });
        }
        assert!(configures_server(&deep));
    }
}
