//! Rule family: secrets. Every TLS Secret the stack uses is produced by something the gate can
//! see (`tls-secret-resolves`), and private keys never enter the repository, its values, its policy or
//! what it renders (the README's promise); the gate enforces it without ever echoing a key.

use super::{Rule, Scope};
use crate::finding::Severity;
use serde_json::Value;

mod private_key_in_render;
mod tls_secret_resolves;

pub const PRIVATE_KEY_IN_RENDER: &str = "private-key-in-render";
pub const TLS_SECRET_RESOLVES: &str = "tls-secret-resolves";

pub static RULES: &[Rule] = &[
    Rule {
        id: TLS_SECRET_RESOLVES,
        family: "secrets",
        severity: Severity::Error,
        summary: "a workload mounts, or a Gateway listener references, a TLS Secret that nothing produces (not rendered, not written by a Certificate or the Gateway shim, not external)",
        explain: include_str!("tls-secret-resolves.md"),
        scope: Scope::Objects,
        check: tls_secret_resolves::tls_secret_resolves,
    },
    Rule {
    id: PRIVATE_KEY_IN_RENDER,
    family: "secrets",
    severity: Severity::Error,
    summary: "private key material in rendered objects, state values or the policy (never waivable)",
    explain: include_str!("private-key-in-render.md"),
    scope: Scope::StateAndObjects,
    check: private_key_in_render::private_key_in_render,
},
];

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
                    stack.push((join(&crate::redact::cap(k, 60)), c));
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

    pub(super) fn pem_key() -> String {
        // Structure only: the gate looks for the armour, not for a valid key.
        format!(
            "-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----\n",
            "MHcCAQEEIB".repeat(6)
        )
    }

    pub(super) fn b64(s: &str) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let b = s.as_bytes();
        let mut out = String::new();
        for c in b.chunks(3) {
            let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
            for i in 0..4 {
                if i <= c.len() {
                    out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn pem_and_base64_keys_are_found_certificates_are_not() {
        assert_eq!(key_material(&pem_key()), Some("a PEM private key block"));
        assert_eq!(
            key_material(&b64(&pem_key())),
            Some("a base64-encoded PEM private key block")
        );
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        assert_eq!(key_material(cert), None);
        assert_eq!(key_material(&b64(cert)), None);
        assert_eq!(key_material("PRIVATE KEY----- mentioned in prose"), None);
        let v = serde_json::json!({"a": [{"b": pem_key()}], "c": "x"});
        assert_eq!(
            key_places(&v, "values"),
            vec![("values.a[0].b".to_string(), "a PEM private key block")]
        );
    }
}
