//! Shared by both rules: truthiness as Go and Helm read it, the names of switches that turn TLS or
//! verification off, and assignments in HCL/JSON configuration text.

use super::*;

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

pub(super) fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A name (flag, env var, values key) reduced to lowercase ASCII alphanumerics, so
/// `--quic-insecure`, `QUIC_INSECURE` and `quicInsecure` compare equal.
pub(super) fn norm(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// How a switch's normalised name is recognised.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Name {
    /// The whole name (`nocheckcertificate`).
    Exact(&'static str),
    /// The end of the name, whatever prefixes it (`tlsskipverify` in `vaultTLSSkipVerify`).
    Suffix(&'static str),
}

/// Which value makes a switch insecure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// On (`true`, `1`, a bare flag): `--insecure-skip-tls-verify`.
    On,
    /// Off (`false`, `0`): `NODE_TLS_REJECT_UNAUTHORIZED=0`, `--tls-verify=false`.
    Off,
}

/// One switch that turns TLS or verification off: how its name is recognised, which value is the
/// insecure one, what the consuming software then does (the message says this, so it must be
/// what the setting does, not what its name suggests), and where that fact comes from.
#[derive(Debug)]
pub(crate) struct SwitchDef {
    pub name: Name,
    pub when: When,
    pub effect: &'static str,
    /// Where the fact comes from; data for the reader and the table's test, not for messages.
    #[cfg_attr(not(test), allow(dead_code))]
    pub source: &'static str,
}

const SKIP_VERIFY: &str = "turns off TLS certificate verification";

/// The one table of insecure switches shared by flags, environment variables, values keys and
/// configuration files (normalised names: lowercase ASCII alphanumerics, so `--tls-skip-verify`,
/// `TLS_SKIP_VERIFY`, `tlsSkipVerify` and `tls_skip_verify` are one entry). The first entry that
/// matches decides: exact names and specific suffixes come before the general ones.
pub(crate) static SWITCHES: &[SwitchDef] = &[
    SwitchDef {
        name: Name::Exact("allowinsecureremotewatchhttp"),
        when: When::On,
        effect: "allows the router's remote watch over plain HTTP",
        source: "NVIDIA nvcf request-router flags (design/facts.md: router command line)",
    },
    SwitchDef {
        name: Name::Exact("enabledevpeerforwarding"),
        when: When::On,
        effect: "enables development-only peer forwarding without TLS",
        source: "NVIDIA nvcf request-router flags (design/facts.md: router command line)",
    },
    SwitchDef {
        name: Name::Exact("allowinsecuretransport"),
        when: When::On,
        effect: "allows plaintext transport",
        source: "nvcf-pki / request-router chart values (charts/*/values.yaml)",
    },
    SwitchDef {
        name: Name::Exact("kubeletinsecuretls"),
        when: When::On,
        effect: "turns off kubelet certificate verification",
        source: "metrics-server --kubelet-insecure-tls (kubernetes-sigs/metrics-server README)",
    },
    SwitchDef {
        name: Name::Exact("nocheckcertificate"),
        when: When::On,
        effect: SKIP_VERIFY,
        source: "wget --no-check-certificate (GNU Wget manual)",
    },
    SwitchDef {
        name: Name::Suffix("quicinsecure"),
        when: When::On,
        effect: "turns off certificate verification on the reverse QUIC tunnel",
        source: "NVIDIA nvcf stargate --quic-insecure / STARGATE_QUIC_INSECURE (design/facts.md)",
    },
    SwitchDef {
        name: Name::Suffix("grpcinsecure"),
        when: When::On,
        effect: "turns off TLS on the workers' gRPC connection",
        source: "NVIDIA nvcf worker gRPC client settings (design/facts.md)",
    },
    SwitchDef {
        name: Name::Suffix("serverinsecure"),
        when: When::On,
        effect: "serves the API without TLS (plaintext HTTP and gRPC); it does not turn off certificate \
                 verification",
        source: "Argo CD argocd-cmd-params-cm `server.insecure` / ARGOCD_SERVER_INSECURE / argocd-server \
                 --insecure (argo-cd docs: operator-manual/argocd-cmd-params-cm.yaml, server commands)",
    },
    SwitchDef {
        name: Name::Suffix("tlsdisable"),
        when: When::On,
        effect: "turns TLS off",
        source: "OpenBao/Vault listener tls_disable, VAULT_TLS_DISABLE (openbao docs: configuration/listener/tcp)",
    },
    SwitchDef {
        name: Name::Suffix("disabletls"),
        when: When::On,
        effect: "turns TLS off",
        source: "common spelling of the same switch (e.g. Consul/NATS `disable_tls`)",
    },
    SwitchDef {
        name: Name::Suffix("insecureskiptlsverify"),
        when: When::On,
        effect: SKIP_VERIFY,
        source: "kubeconfig insecure-skip-tls-verify, kubectl --insecure-skip-tls-verify (client-go clientcmd)",
    },
    SwitchDef {
        name: Name::Suffix("skiptlsverify"),
        when: When::On,
        effect: SKIP_VERIFY,
        source: "OpenBao/Vault tls_skip_verify, VAULT_SKIP_VERIFY; Terraform/Helm skipTLSVerify (openbao docs)",
    },
    SwitchDef {
        name: Name::Suffix("skipverify"),
        when: When::On,
        effect: SKIP_VERIFY,
        source: "Go crypto/tls Config.InsecureSkipVerify (pkg.go.dev/crypto/tls); VAULT_SKIP_VERIFY",
    },
    SwitchDef {
        name: Name::Suffix("noverify"),
        when: When::On,
        effect: SKIP_VERIFY,
        source: "openssl/ldap style `no_verify` switches",
    },
    SwitchDef {
        name: Name::Suffix("insecure"),
        when: When::On,
        effect: SKIP_VERIFY,
        source: "curl -k/--insecure (curl manual), grpcurl -insecure, argocd CLI --insecure, helm --insecure-…",
    },
    SwitchDef {
        name: Name::Suffix("tlsrejectunauthorized"),
        when: When::Off,
        effect: SKIP_VERIFY,
        source: "Node.js NODE_TLS_REJECT_UNAUTHORIZED=0 (nodejs.org docs: cli environment variables)",
    },
    SwitchDef {
        name: Name::Suffix("pythonhttpsverify"),
        when: When::Off,
        effect: SKIP_VERIFY,
        source: "CPython PYTHONHTTPSVERIFY=0 (PEP 493)",
    },
    SwitchDef {
        name: Name::Suffix("tlsverify"),
        when: When::Off,
        effect: SKIP_VERIFY,
        source: "Docker DOCKER_TLS_VERIFY, podman/skopeo --tls-verify=false (containers docs)",
    },
    SwitchDef {
        name: Name::Suffix("verifytls"),
        when: When::Off,
        effect: SKIP_VERIFY,
        source: "common spelling of verify switches (`verify_tls: false`)",
    },
    SwitchDef {
        name: Name::Suffix("sslverify"),
        when: When::Off,
        effect: SKIP_VERIFY,
        source: "git http.sslVerify / GIT_SSL_NO_VERIFY's positive form (git-config docs)",
    },
    SwitchDef {
        name: Name::Suffix("verifyssl"),
        when: When::Off,
        effect: SKIP_VERIFY,
        source: "common spelling of verify switches (`verify_ssl: false`)",
    },
];

impl SwitchDef {
    /// The normalised name (or suffix) the entry is recognised by.
    pub(crate) fn name_str(&self) -> &'static str {
        match self.name {
            Name::Exact(n) | Name::Suffix(n) => n,
        }
    }
}

/// The table's entry for a normalised name, if any.
pub(crate) fn switch_def(n: &str) -> Option<&'static SwitchDef> {
    SWITCHES.iter().find(|d| match d.name {
        Name::Exact(e) => n == e,
        Name::Suffix(s) => n.ends_with(s),
    })
}

/// What a switch (normalised name) does when it is on, if it is an insecure switch of the `On`
/// kind.
pub(super) fn insecure_effect(n: &str) -> Option<&'static str> {
    switch_def(n).filter(|d| d.when == When::On).map(|d| d.effect)
}

/// Switches whose *false* value turns verification off (`NODE_TLS_REJECT_UNAUTHORIZED=0`). A name
/// that says `skip` or `insecure` is a negative switch whose false is the safe value
/// (`insecureSkipTLSVerify` ends in `tlsverify` too).
pub(super) fn verify_switch(n: &str) -> bool {
    !n.contains("skip") && !n.contains("insecure") && switch_def(n).is_some_and(|d| d.when == When::Off)
}

/// What a flag does on one program when its meaning there differs from the table's
/// (`argocd-server --insecure` serves plaintext; `curl --insecure` skips verification).
pub(super) fn command_effect(program: &str, n: &str) -> Option<&'static str> {
    const BY_PROGRAM: &[(&str, &str, &str)] = &[(
        "argocd-server",
        "insecure",
        "serves the API without TLS (plaintext HTTP and gRPC); it does not turn off certificate verification",
    )];
    let program = program.rsplit('/').next().unwrap_or(program);
    BY_PROGRAM
        .iter()
        .find(|(p, f, _)| *p == program && *f == n)
        .map(|(_, _, e)| *e)
}

/// If `name = value` (a key, env var or inline flag value) is an insecure setting, what it does.
pub(super) fn insecure_setting(name: &str, value: &Value) -> Option<&'static str> {
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

/// [`insecure_setting`] for the key at the end of `path` (object keys; `[i]` list indices
/// skipped), read with its parent's name first: `server.insecure` is Argo CD's switch that serves
/// the API without TLS (`configs.params.server.insecure` in its chart's values), `tls.verify:
/// false` turns verification off, where the last key alone (`insecure`, `verify`) says less.
pub(super) fn insecure_setting_in<S: AsRef<str>>(path: &[S], value: &Value) -> Option<&'static str> {
    let keys: Vec<&str> = path.iter().map(AsRef::as_ref).filter(|p| !p.starts_with('[')).collect();
    if let [.., parent, key] = keys.as_slice() {
        if let Some(e) = insecure_setting(&format!("{parent}{key}"), value) {
            return Some(e);
        }
    }
    keys.last().and_then(|k| insecure_setting(k, value))
}

/// Values assigned to `key` in HCL or JSON configuration text (`key = 1`, `key = "true"`,
/// `"key": true`), with the 1-based line; `#` and `//` comment lines are skipped.
pub(super) fn config_assignments<'a>(text: &'a str, key: &str) -> Vec<(usize, &'a str)> {
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

#[cfg(test)]
mod tests {

    use super::*;
    use serde_json::json;

    #[test]
    fn the_switch_table_is_data_with_sources() {
        for d in SWITCHES {
            let n = match d.name {
                Name::Exact(n) | Name::Suffix(n) => n,
            };
            assert_eq!(norm(n), n, "{n}: names are normalised");
            assert!(!d.source.trim().is_empty() && !d.effect.is_empty(), "{n}");
        }
        // One spelling per consumer, one entry: flags, env vars, keys and config files agree.
        for spelling in [
            "tls_skip_verify",
            "--insecure-skip-tls-verify",
            "insecureSkipVerify",
            "skipTLSVerify",
            "VAULT_SKIP_VERIFY",
        ] {
            assert_eq!(
                insecure_setting(spelling, &json!(true)),
                Some(SKIP_VERIFY),
                "{spelling}"
            );
            assert_eq!(insecure_setting(spelling, &json!(false)), None, "{spelling}");
        }
        assert_eq!(
            insecure_setting("NODE_TLS_REJECT_UNAUTHORIZED", &json!("0")),
            Some(SKIP_VERIFY)
        );
        assert_eq!(insecure_setting("insecureSkipTLSVerify", &json!(false)), None);
        // What the setting does, not what its name suggests.
        for argo in ["server.insecure", "ARGOCD_SERVER_INSECURE", "serverInsecure"] {
            let e = insecure_setting(argo, &json!("true")).unwrap();
            assert!(e.starts_with("serves the API without TLS"), "{argo}: {e}");
        }
        assert_eq!(
            command_effect("/usr/local/bin/argocd-server", "insecure"),
            insecure_setting("server.insecure", &json!(true))
        );
        assert_eq!(command_effect("curl", "insecure"), None);
        // A key read with its parent: Argo CD's chart value serves plaintext, it does not skip
        // verification; `tls.verify: false` is verification off; list indices are skipped.
        let e = insecure_setting_in(&["configs", "params", "server", "insecure"], &json!(true)).unwrap();
        assert!(e.starts_with("serves the API without TLS"), "{e}");
        assert_eq!(
            insecure_setting_in(&["tls", "verify"], &json!(false)),
            Some(SKIP_VERIFY)
        );
        assert_eq!(insecure_setting_in(&["verify"], &json!(false)), None);
        assert_eq!(
            insecure_setting_in(&["clients", "[0]", "insecure"], &json!(true)),
            Some(SKIP_VERIFY)
        );
        assert_eq!(insecure_setting_in(&["server", "insecure"], &json!(false)), None);
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
        assert_eq!(
            config_assignments("a = 1\nx_tls_disable = 1\n tls_disable = \"1\"", "tls_disable"),
            [(3, "1")]
        );
        // Comment lines of either kind are skipped; a JSON value ends at `,` or `}`.
        assert_eq!(
            config_assignments("# tls_disable = 1\n// tls_disable = 1\ntls_disable = 0", "tls_disable"),
            [(3, "0")]
        );
        assert_eq!(
            config_assignments(
                "{\"tls_disable\": true}\n{\"tls_disable\":\"1\",\"x\":2}",
                "tls_disable"
            ),
            [(1, "true"), (2, "1")]
        );
        assert!(
            is_loopback_url("http://127.0.0.1:8200")
                && is_loopback_url("http://[::1]:8200")
                && is_loopback_url("http://localhost")
        );
        assert!(!is_loopback_url("http://openbao.openbao.svc:8200"));
        // Read as the other dials are: an unbracketed IPv6 host takes its last group for the port.
        assert!(is_loopback_url("http://::1:8200"));
        assert!(!is_loopback_url("http://fd00::5:8200"));
    }
}
