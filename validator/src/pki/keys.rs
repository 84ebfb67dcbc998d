//! What counts as private key material: a PEM private key block, or base64 that decodes to one.
//! The lowest layer that needs the fact (redaction refuses to echo such a value; the
//! `private-key-in-render` rule and the policy's key scan report where it is) holds it.

/// Longest string inspected for base64-wrapped key material (larger values are still searched
/// for a PEM header, but not decoded).
const MAX_DECODE: usize = 1 << 20;

/// What kind of private key material `s` holds, if any: a PEM private key block, or base64 that
/// decodes to one (Kubernetes Secret `data`). Never returns any of the content.
pub fn key_material(s: &str) -> Option<&'static str> {
    if has_pem_key(s.as_bytes()) {
        return Some("a PEM private key block");
    }
    let t = s.trim();
    if t.len() >= 64
        && t.len() <= MAX_DECODE
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=' || b.is_ascii_whitespace())
    {
        if let Some(bytes) = super::decode_base64(t) {
            if has_pem_key(&bytes) {
                return Some("a base64-encoded PEM private key block");
            }
        }
    }
    None
}

fn has_pem_key(b: &[u8]) -> bool {
    const END: &[u8] = b"PRIVATE KEY-----";
    b.windows(END.len()).any(|w| w == END) && b.windows(11).any(|w| w == b"-----BEGIN ")
}
