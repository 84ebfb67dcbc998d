//! What the gate may echo from its input. Every finding message passes through [`message`] in the
//! sink, and parse errors of outside input through [`error_text`]: URL userinfo is replaced by
//! `***`, quoted values are capped, and the whole text is bounded, so a password in a URL, a key
//! pasted into the wrong field or a 10 MB value never reaches a report, a log or a SARIF upload.

use serde_json::Value;

/// Longest value echoed whole (characters).
pub const MAX_VALUE: usize = 120;
/// Longest message echoed whole (characters).
pub const MAX_MESSAGE: usize = 2000;

/// `s` cut to `max` characters, saying how long it was.
pub fn cap(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({n} characters)")
}

/// Replace the userinfo of every `scheme://user:password@host` in `s` with `***`.
pub fn redact_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c == '`' || c == '\'' || c == '"' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Cap every `` `…` `` and `"…"` quoted value of `s` at [`MAX_VALUE`] characters.
fn cap_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_MESSAGE * 2));
    let mut rest = s;
    while let Some(open) = rest.find(['`', '"']) {
        let q = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        match after.find(q) {
            Some(close) => {
                out.push_str(&cap(&after[..close], MAX_VALUE));
                out.push(q);
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&cap(after, MAX_VALUE));
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A finding message as it may be shown: userinfo redacted, quoted values and the whole capped.
pub fn message(s: &str) -> String {
    cap(&cap_quoted(&redact_userinfo(s)), MAX_MESSAGE)
}

/// A parse error of outside input (policy, state) as it may be shown: parser messages quote the
/// offending value, which may be a secret pasted into the wrong field, so quoted values longer
/// than 40 characters are replaced by their length and the whole is bounded.
pub fn error_text(e: &dyn std::fmt::Display) -> String {
    let s = redact_userinfo(&e.to_string());
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(open) = rest.find(['`', '"']) {
        let q = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        let close = after.find(q).unwrap_or(after.len());
        let v = &after[..close];
        if v.chars().count() > 40 {
            out.push_str(&format!("<{} characters, not shown>", v.chars().count()));
        } else {
            out.push_str(v);
        }
        if close < after.len() {
            out.push(q);
            rest = &after[close + 1..];
        } else {
            rest = "";
        }
    }
    out.push_str(rest);
    cap(&out, 400)
}

/// Longest value of a configuration file (policy, lock) echoed whole in an error (characters).
pub const MAX_CONFIG_VALUE: usize = 60;

/// Whether `s` looks like key material or a token: a PEM block or header, base64 that decodes to a
/// private key, or a run of 32 or more base64/hex characters mixing letters and digits (a key or
/// token pasted into the wrong field). Such values are never echoed.
pub fn key_like(s: &str) -> bool {
    if crate::meaning::keys::find(s).is_some()
        || s.contains("-----BEGIN")
        || s.to_ascii_uppercase().contains("PRIVATE KEY")
    {
        return true;
    }
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '/' || c == '='))
        .any(|run| {
            run.len() >= 32 && run.bytes().any(|b| b.is_ascii_digit()) && run.bytes().any(|b| b.is_ascii_alphabetic())
        })
}

/// A value of a configuration file (policy, lock) as an error may echo it: a key-like value only
/// by its length, any other with URL userinfo redacted and capped at [`MAX_CONFIG_VALUE`].
pub fn config_value(s: &str) -> String {
    if key_like(s) {
        format!("<{} characters, not shown>", s.chars().count())
    } else {
        cap(&redact_userinfo(s), MAX_CONFIG_VALUE)
    }
}

/// Whether `s` holds what may be key or token material: PEM armour, or a run of ASCII letters and
/// digits that mixes upper and lower case with digits (20 or more) or is long (32 or more). Key
/// and token bodies (base64, base64url, vault tokens) hold such runs between their rare `+/-_.`;
/// names, paths, hostnames, temporary file names and hex digests do not.
pub fn looks_secret(s: &str) -> bool {
    if s.contains("-----BEGIN") || s.contains("PRIVATE KEY") {
        return true;
    }
    s.split(|c: char| !c.is_ascii_alphanumeric()).any(|run| {
        let mixed = run.bytes().any(|b| b.is_ascii_uppercase()) && run.bytes().any(|b| b.is_ascii_lowercase());
        mixed && (run.len() >= 32 || (run.len() >= 20 && run.bytes().any(|b| b.is_ascii_digit())))
    })
}

/// A piece of outside input quoted in an error message: userinfo redacted, at most `max`
/// characters, and never anything that looks like key or token material ([`looks_secret`]),
/// which is replaced by its length.
pub fn excerpt(s: &str, max: usize) -> String {
    if looks_secret(s) {
        return format!("<{} characters, not shown>", s.chars().count());
    }
    cap(&redact_userinfo(s), max)
}

/// The output of a failed tool run (helm, helmfile) as it may be shown: each line through
/// userinfo redaction, secret-looking runs hidden and the line capped at 300 characters, and
/// the whole bounded by [`MAX_MESSAGE`]. Tool errors quote templates and values, so they are
/// outside input like any other.
pub fn tool_output(s: &str) -> String {
    let lines: Vec<String> = s
        .split('\n')
        .map(|l| {
            if looks_secret(l) {
                let indent: String = l.chars().take_while(|c| c.is_whitespace()).collect();
                format!(
                    "{indent}<a line of {} characters that may hold a secret, not shown>",
                    l.chars().count()
                )
            } else {
                cap(&redact_userinfo(l), 300)
            }
        })
        .collect();
    cap(&lines.join("\n"), MAX_MESSAGE)
}

/// What kind of private key material `s` holds, if any, recognised by parsing in any encoding
/// (`crate::meaning::keys`). Never returns any of the content.
pub fn key_material(s: &str) -> Option<&'static str> {
    crate::meaning::keys::find(s).map(|k| k.describe())
}

/// Every place (a dotted path below `root`) in `v` whose string holds private key material, with
/// what it holds. Iterative, so a deeply nested value cannot exhaust the stack.
pub fn key_places(v: &Value, root: &str) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, &Value)> = vec![(root.to_string(), v)];
    while let Some((path, v)) = stack.pop() {
        let join = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        match v {
            Value::String(s) => {
                if let Some(what) = key_material(s) {
                    out.push((path, what));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate().rev() {
                    stack.push((format!("{path}[{i}]"), c));
                }
            }
            Value::Object(m) => {
                for (k, c) in m.iter().rev() {
                    if key_material(k).is_some() {
                        out.push((join("<key>"), "a PEM private key block (as a map key)"));
                    }
                    stack.push((join(&cap(k, 60)), c));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_redacted_and_the_rest_kept() {
        assert_eq!(
            redact_userinfo("BAO_ADDR=http://root:s3cret@openbao.nvcf:8200/v1 and https://a@b/c?x=y@z"),
            "BAO_ADDR=http://***@openbao.nvcf:8200/v1 and https://***@b/c?x=y@z"
        );
        assert_eq!(redact_userinfo("http://openbao:8200"), "http://openbao:8200");
        assert_eq!(redact_userinfo("`http://u:p@h`"), "`http://***@h`");
        assert_eq!(redact_userinfo("no url here"), "no url here");
    }

    #[test]
    fn long_values_and_messages_are_capped() {
        let long = "a".repeat(10_000);
        let m = message(&format!("sets `X={long}`: plain"));
        assert!(m.len() < 200, "{m}");
        assert!(m.contains("(10002 characters)"), "{m}");
        assert!(m.ends_with("`: plain"), "{m}");
        let m = message(&"b".repeat(5000));
        assert!(m.chars().count() < MAX_MESSAGE + 40, "{}", m.len());
        assert_eq!(message("short `v` and \"w\""), "short `v` and \"w\"");
    }

    #[test]
    fn parse_errors_do_not_echo_long_values() {
        let key = format!("-----BEGIN PRIVATE KEY-----{}", "Q".repeat(300));
        let e = format!("invalid type: string \"{key}\", expected u32 at line 1");
        let shown = error_text(&e);
        assert!(!shown.contains("QQQQ"), "{shown}");
        assert!(shown.contains("<327 characters, not shown>"), "{shown}");
        assert_eq!(error_text(&"unknown field `foo`"), "unknown field `foo`");
    }

    #[test]
    fn config_values_hide_keys_and_tokens_and_cap_the_rest() {
        let pem = format!("-----BEGIN PRIVATE KEY----- {}", "Q".repeat(300));
        assert_eq!(
            config_value(&pem),
            format!("<{} characters, not shown>", pem.chars().count())
        );
        assert!(key_like("x -----BEGIN RSA"));
        assert!(key_like("an ec private key"));
        assert!(key_like("hvs.CAESIJm1x2y3z4A5b6C7d8E9f0G1h2I3j4K5"), "a token");
        assert!(key_like(&"0123456789abcdef".repeat(4)), "a long hex run");
        assert!(!key_like(&"abcdefgh".repeat(8)), "letters only");
        assert!(!key_like(&"01234567".repeat(8)), "digits only");
        assert!(!key_like("0123456789abcdef0123456789abcde"), "31 characters");
        assert!(!key_like("oci://quay.io/jetstack/charts"));
        assert!(!key_like(
            "request-router-0.request-router-headless.nvcf.svc.cluster.local"
        ));
        assert_eq!(config_value("charts/"), "charts/");
        assert_eq!(config_value("http://u:p@h"), "http://***@h");
        let long = "x".repeat(100);
        assert_eq!(
            config_value(&long),
            format!("{}… (100 characters)", "x".repeat(MAX_CONFIG_VALUE))
        );
    }

    #[test]
    fn excerpts_hide_key_and_token_material() {
        assert!(looks_secret("-----BEGIN EC PRIVATE KEY-----"));
        assert!(looks_secret("x MHcCAQEEIBMHcCAQEEIBMHcCAQEEIBMH y"));
        assert!(looks_secret("x MHcCAQEEIBMHcCAQ9EEIB/x y"));
        assert!(looks_secret("hvs.CAESIJ7xkq9Wq3R2mZ0aBcDeFgHi"));
        for plain in [
            "request-router-headless.nvcf.svc.cluster.local",
            "sha256:6376144c2dd54c900f790dae51c3f38b40b00c20c59d691b0ba9c8b02389d226",
            "nvcr.io/nvidia/nvcf/stargate:1.4.2",
            "tag:yaml.org,2002:int",
            "CustomResourceDefinition",
            "/tmp/nvcf-validate-5Sx8eI/out/f11dab98/ns1__a",
            "/tmp/helmfile1871101340/ns1-a-values-86f44669d8",
        ] {
            assert!(!looks_secret(plain), "{plain}");
        }
        assert_eq!(excerpt("MHcCAQEEIBMHcCAQEEIBMHc9", 60), "<24 characters, not shown>");
        let long = excerpt(&"a".repeat(5000), 60);
        assert!(long.len() < 100 && long.contains("(5000 characters)"), "{long}");
        assert_eq!(excerpt("http://u:p@h/x", 60), "http://***@h/x");
        let out = tool_output(&format!(
            "Error: x\n  value: {}\n  {}",
            "-----BEGIN PRIVATE KEY-----",
            "b".repeat(5000)
        ));
        assert!(!out.contains("BEGIN") && out.contains("may hold a secret"), "{out}");
        assert!(out.len() < 500, "{}", out.len());
    }
}
