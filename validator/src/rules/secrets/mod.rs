//! Rule family: secrets. Every TLS Secret the stack uses is produced by something the gate can
//! see (`tls-secret-resolves`), and private keys never enter the repository, its values, its policy or
//! what it renders (the README's promise); the gate enforces it without ever echoing a key.

use super::{Rule, Scope};
use crate::finding::Severity;

mod private_key_in_render;
mod tls_secret_resolves;
mod writers;

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

#[cfg(test)]
mod key_tests;

#[cfg(test)]
mod tests {
    use crate::redact::{key_material, key_places};

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
