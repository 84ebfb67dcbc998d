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

/// What a switch (normalised name) turns off when it is on, if it is an insecure switch.
pub(super) fn insecure_effect(n: &str) -> Option<&'static str> {
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
        ("nocheckcertificate", "turns off TLS certificate verification"),
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
pub(super) fn verify_switch(n: &str) -> bool {
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
        assert!(
            is_loopback_url("http://127.0.0.1:8200")
                && is_loopback_url("http://[::1]:8200")
                && is_loopback_url("http://localhost")
        );
        assert!(!is_loopback_url("http://openbao.openbao.svc:8200"));
    }
}
