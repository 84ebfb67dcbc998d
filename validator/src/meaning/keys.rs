//! Private key material recognised by parsing, in any encoding: PEM armour (any label; the body
//! is decoded and parsed too, so a key under a `CERTIFICATE` label is still a key), DER structures
//! (PKCS#1 RSA, the traditional DSA layout, SEC1 EC, PKCS#8 plain and encrypted, PKCS#12 key
//! stores with a key bag), OpenSSH and PuTTY key files, JWK private keys, wrapped in layers of
//! base64 (standard or URL-safe) or hex, whole or as a token inside larger text.
//!
//! Hostile input: at most `MAX_INPUT` bytes of a value are decoded, at most `MAX_LAYERS` layers
//! are unwrapped and at most `MAX_TOKENS` tokens per layer are tried; DER is read by
//! `der-parser` (bounded recursion and object size). Nothing here ever returns or prints any of
//! the material: only what kind it is.

use base64::Engine as _;
use der_parser::ber::{parse_ber, BerObject, BerObjectContent};

/// Longest value (bytes) decoded; longer text is still searched for PEM armour.
pub const MAX_INPUT: usize = 1 << 20;
/// Layers of encoding (base64, hex, PEM) unwrapped around one key.
pub const MAX_LAYERS: u8 = 4;
/// Shortest token tried as an encoded key: 64 base64 characters hold the 48-byte PKCS#8 of an
/// Ed25519 key, the smallest key structure there is.
const MIN_TOKEN: usize = 64;
/// Tokens of one layer tried as encoded keys.
const MAX_TOKENS: usize = 256;

/// The structure a key was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    PemArmour,
    Pkcs1Rsa,
    Dsa,
    Sec1Ec,
    Pkcs8,
    Pkcs8Encrypted,
    Pkcs12,
    OpenSsh,
    Putty,
    Jwk,
}

/// What was found: the structure, and whether it was wrapped in an encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyMaterial {
    pub format: Format,
    /// Layers of encoding around it (0: as written).
    pub layers: u8,
}

impl KeyMaterial {
    /// A description for messages, never any of the content.
    pub fn describe(&self) -> &'static str {
        use Format::*;
        match (self.format, self.layers > 0) {
            (PemArmour, false) => "a PEM private key block",
            (PemArmour, true) => "a base64-encoded PEM private key block",
            (Pkcs1Rsa, false) => "a PKCS#1 RSA private key",
            (Pkcs1Rsa, true) => "an encoded PKCS#1 RSA private key",
            (Dsa, false) => "a DSA private key",
            (Dsa, true) => "an encoded DSA private key",
            (Sec1Ec, false) => "a SEC1 EC private key",
            (Sec1Ec, true) => "an encoded SEC1 EC private key",
            (Pkcs8, false) => "a PKCS#8 private key",
            (Pkcs8, true) => "an encoded PKCS#8 private key",
            (Pkcs8Encrypted, false) => "an encrypted PKCS#8 private key",
            (Pkcs8Encrypted, true) => "an encoded encrypted PKCS#8 private key",
            (Pkcs12, false) => "a PKCS#12 key store holding a private key",
            (Pkcs12, true) => "an encoded PKCS#12 key store holding a private key",
            (OpenSsh, false) => "an OpenSSH private key",
            (OpenSsh, true) => "an encoded OpenSSH private key",
            (Putty, false) => "a PuTTY private key file",
            (Putty, true) => "an encoded PuTTY private key file",
            (Jwk, false) => "a JWK private key",
            (Jwk, true) => "an encoded JWK private key",
        }
    }
}

/// The private key material `s` holds, if any.
pub fn find(s: &str) -> Option<KeyMaterial> {
    scan(s.as_bytes(), 0)
}

/// The private key material `b` holds, if any.
pub fn find_bytes(b: &[u8]) -> Option<KeyMaterial> {
    scan(b, 0)
}

fn found(format: Format, layers: u8) -> Option<KeyMaterial> {
    Some(KeyMaterial { format, layers })
}

fn scan(b: &[u8], layer: u8) -> Option<KeyMaterial> {
    if pem_key_label(b) {
        return found(Format::PemArmour, layer);
    }
    if b.len() > MAX_INPUT {
        return None;
    }
    if let Some(f) = der(b) {
        return found(f, layer);
    }
    if b.starts_with(b"openssh-key-v1\0") {
        return found(Format::OpenSsh, layer);
    }
    let text = std::str::from_utf8(b).ok()?;
    if text.contains("PuTTY-User-Key-File-") && text.contains("Private-Lines:") {
        return found(Format::Putty, layer);
    }
    if jwk_private(text) {
        return found(Format::Jwk, layer);
    }
    if layer >= MAX_LAYERS {
        return None;
    }
    // PEM bodies of any label: a key under a `CERTIFICATE` label is still a key.
    for body in pem_bodies(text).take(MAX_TOKENS) {
        if let Some(k) = decode_base64(&body).and_then(|d| scan(&d, layer + 1)) {
            return Some(k);
        }
    }
    // Shorter than a token: neither the whole text nor a token in it is tried below.
    if text.len() < MIN_TOKEN {
        return None;
    }
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.len() >= MIN_TOKEN {
        if let Some(k) = decode(&compact).and_then(|d| scan(&d, layer + 1)) {
            return Some(k);
        }
    }
    // Tokens inside larger text (`key = MIIE…`, `"k": "MC4C…"`).
    let tokens = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '-' | '_')))
        .filter(|t| t.len() >= MIN_TOKEN && t.len() != compact.len())
        .take(MAX_TOKENS);
    for t in tokens {
        if let Some(k) = decode(t).and_then(|d| scan(&d, layer + 1)) {
            return Some(k);
        }
    }
    None
}

/// A `-----BEGIN … PRIVATE KEY…-----` line anywhere (RSA, EC, DSA, ENCRYPTED, OPENSSH, PGP
/// `PRIVATE KEY BLOCK`): armour that says it holds a key is a key, even when its body is cut.
fn pem_key_label(b: &[u8]) -> bool {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let mut at = 0;
    while let Some(i) = find_sub(&b[at..], BEGIN) {
        let start = at + i + BEGIN.len();
        let rest = &b[start..];
        let end = find_sub(rest, b"-----").unwrap_or(0).min(80);
        if find_sub(&rest[..end], b"PRIVATE KEY").is_some() {
            return true;
        }
        at = start;
    }
    false
}

fn find_sub(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// The base64 bodies of the PEM blocks of `text` (headers such as `Proc-Type:` skipped).
fn pem_bodies(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split("-----BEGIN ").skip(1).filter_map(|block| {
        let (_, after) = block.split_once("-----")?;
        let (body, _) = after.split_once("-----END ")?;
        // JSON- or YAML-escaped line breaks (`\n`) inside one string.
        let body = body.replace("\\n", "\n");
        Some(body.lines().filter(|l| !l.contains(':')).collect::<Vec<_>>().concat())
    })
}

/// Standard or URL-safe base64 (padding optional), or hex.
fn decode(t: &str) -> Option<Vec<u8>> {
    if t.len() % 2 == 0 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return hex::decode(t).ok();
    }
    decode_base64(t)
}

fn decode_base64(t: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let t: String = t.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let t = t.trim_end_matches('=');
    if t.is_empty() {
        return None;
    }
    if t.contains(['-', '_']) {
        URL_SAFE_NO_PAD.decode(t).ok()
    } else {
        STANDARD_NO_PAD.decode(t).ok()
    }
}

/// A JWK (or a JWK set) with a private member: `d` (RSA, EC, OKP) or `k` of an `oct` key.
fn jwk_private(text: &str) -> bool {
    let t = text.trim();
    if !t.starts_with('{') || !t.contains("\"kty\"") {
        return false;
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(t) else {
        return false;
    };
    let private = |k: &serde_json::Value| {
        k.get("kty").is_some_and(|t| t.is_string())
            && (k.get("d").is_some_and(|d| d.is_string())
                || (k.get("kty").and_then(|t| t.as_str()) == Some("oct") && k.get("k").is_some()))
    };
    private(&v)
        || v.get("keys")
            .and_then(|k| k.as_array())
            .is_some_and(|ks| ks.iter().any(private))
}

const PBES: &str = "1.2.840.113549.1.5.";
const PKCS12_PBE: &str = "1.2.840.113549.1.12.1.";
const PKCS7_DATA: &str = "1.2.840.113549.1.7.1";
const KEY_BAG: &str = "1.2.840.113549.1.12.10.1.1";
const SHROUDED_KEY_BAG: &str = "1.2.840.113549.1.12.10.1.2";

fn int(o: &BerObject) -> Option<u64> {
    matches!(o.content, BerObjectContent::Integer(_))
        .then(|| o.as_u64().ok())
        .flatten()
}

fn is_int(o: &BerObject) -> bool {
    matches!(o.content, BerObjectContent::Integer(_))
}

fn oid(o: &BerObject) -> Option<String> {
    o.as_oid().ok().map(|o| o.to_id_string())
}

fn octets<'a>(o: &BerObject<'a>) -> Option<&'a [u8]> {
    match &o.content {
        BerObjectContent::OctetString(b) => Some(b),
        _ => None,
    }
}

/// The object inside an explicit `[n]` tag.
fn explicit<'a>(o: &BerObject<'a>) -> Option<BerObject<'a>> {
    match &o.content {
        BerObjectContent::Tagged(_, _, inner) => Some((**inner).clone()),
        BerObjectContent::Unknown(any) => parse_ber(any.data).ok().map(|(_, o)| o),
        _ => None,
    }
}

/// Which private key structure the DER (or BER) `b` is, if any: it must parse completely.
fn der(b: &[u8]) -> Option<Format> {
    if b.first() != Some(&0x30) {
        return None;
    }
    let (rest, obj) = parse_ber(b).ok()?;
    if !rest.is_empty() {
        return None;
    }
    let s = obj.as_sequence().ok()?;
    let version = s.first().and_then(int);
    // RSAPrivateKey (RFC 8017 A.1.2): version, n, e, d, p, q, dp, dq, qinv [, otherPrimeInfos].
    if s.len() >= 9 && matches!(version, Some(0 | 1)) && s[..9].iter().all(is_int) {
        return Some(Format::Pkcs1Rsa);
    }
    // OpenSSL's traditional DSA key: version 0, p, q, g, y, x.
    if s.len() == 6 && version == Some(0) && s.iter().all(is_int) {
        return Some(Format::Dsa);
    }
    // ECPrivateKey (RFC 5915): version 1, privateKey OCTET STRING, [0] params, [1] publicKey.
    if (2..=4).contains(&s.len())
        && version == Some(1)
        && octets(&s[1]).is_some()
        && s[2..].iter().all(|o| explicit(o).is_some())
    {
        return Some(Format::Sec1Ec);
    }
    // PrivateKeyInfo / OneAsymmetricKey (RFC 5208, 5958): version, algorithm, privateKey, ….
    if (3..=5).contains(&s.len())
        && matches!(version, Some(0 | 1))
        && s[1].as_sequence().ok().and_then(|a| a.first()).and_then(oid).is_some()
        && octets(&s[2]).is_some()
    {
        return Some(Format::Pkcs8);
    }
    // EncryptedPrivateKeyInfo (RFC 5208 6): a PBE algorithm and the encrypted key.
    if s.len() == 2 && octets(&s[1]).is_some() {
        let alg = s[0]
            .as_sequence()
            .ok()
            .and_then(|a| a.first())
            .and_then(oid)
            .unwrap_or_default();
        if alg.starts_with(PBES) || alg.starts_with(PKCS12_PBE) {
            return Some(Format::Pkcs8Encrypted);
        }
    }
    // PFX (RFC 7292 4): version 3, authSafe ContentInfo, macData; a key bag in a plain part.
    if (2..=3).contains(&s.len()) && version == Some(3) && pkcs12_has_key(&s[1]) {
        return Some(Format::Pkcs12);
    }
    None
}

/// The `data` content of a ContentInfo, as bytes.
fn data_content<'a>(ci: &BerObject<'a>) -> Option<Vec<u8>> {
    let parts = ci.as_sequence().ok()?;
    if parts.first().and_then(oid).as_deref() != Some(PKCS7_DATA) {
        return None;
    }
    let inner = explicit(parts.get(1)?)?;
    match &inner.content {
        BerObjectContent::OctetString(b) => Some(b.to_vec()),
        // BER constructed OCTET STRING: its segments concatenated.
        BerObjectContent::Sequence(segs) | BerObjectContent::Set(segs) => {
            let mut out = Vec::new();
            for s in segs {
                out.extend_from_slice(octets(s)?);
            }
            Some(out)
        }
        BerObjectContent::Unknown(any) => Some(any.data.to_vec()),
        _ => None,
    }
}

fn pkcs12_has_key(auth_safe: &BerObject) -> bool {
    let Some(safe) = data_content(auth_safe) else {
        return false;
    };
    let Ok((_, contents)) = parse_ber(&safe) else {
        return false;
    };
    let Ok(infos) = contents.as_sequence() else {
        return false;
    };
    infos.iter().take(MAX_TOKENS).any(|ci| {
        let Some(bags) = data_content(ci) else {
            return false;
        };
        let Ok((_, bags)) = parse_ber(&bags) else {
            return false;
        };
        bags.as_sequence().is_ok_and(|bags| {
            bags.iter().take(MAX_TOKENS).any(|bag| {
                let id = bag.as_sequence().ok().and_then(|b| b.first()).and_then(oid);
                matches!(id.as_deref(), Some(KEY_BAG | SHROUDED_KEY_BAG))
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use std::process::Command;

    /// Runs the real `openssl` (the oracle for what these formats look like); panics when it fails.
    fn openssl(dir: &std::path::Path, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl must be installed to test key formats");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn pem_body_der(pem: &str) -> Vec<u8> {
        decode_base64(&pem_bodies(pem).next().unwrap()).unwrap()
    }

    /// Every encoding a key may be wrapped in, as (name, text).
    fn encodings(pem: &str, der: &[u8]) -> Vec<(String, String)> {
        let b = |d: &[u8]| STANDARD.encode(d);
        vec![
            ("pem".into(), pem.to_string()),
            ("base64(der)".into(), b(der)),
            ("base64url(der)".into(), URL_SAFE_NO_PAD.encode(der)),
            ("hex(der)".into(), hex::encode(der)),
            ("base64(base64(der))".into(), b(b(der).as_bytes())),
            ("base64(pem)".into(), b(pem.as_bytes())),
            (
                "base64(base64(base64(pem)))".into(),
                b(b(b(pem.as_bytes()).as_bytes()).as_bytes()),
            ),
            (
                "base64 lines".into(),
                b(der)
                    .as_bytes()
                    .chunks(64)
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            (
                "token in config".into(),
                format!("[tls]\nkey = \"{}\"\nverify = true\n", b(der)),
            ),
            ("json-escaped pem".into(), pem.replace('\n', "\\n")),
            (
                "relabelled pem".into(),
                format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", b(der)),
            ),
        ]
    }

    #[test]
    fn keys_are_found_in_every_format_and_encoding_and_certificates_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        openssl(
            d,
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:1024",
                "-out",
                "rsa8.pem",
            ],
        );
        openssl(d, &["rsa", "-in", "rsa8.pem", "-traditional", "-out", "rsa1.pem"]);
        openssl(
            d,
            &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ec1.pem"],
        );
        openssl(d, &["genpkey", "-algorithm", "ED25519", "-out", "ed.pem"]);
        openssl(
            d,
            &[
                "pkcs8", "-topk8", "-in", "ec1.pem", "-passout", "pass:x", "-out", "enc.pem",
            ],
        );
        openssl(
            d,
            &[
                "req", "-x509", "-key", "ec1.pem", "-subj", "/CN=t", "-days", "1", "-out", "cert.pem",
            ],
        );
        openssl(
            d,
            &[
                "pkcs12", "-export", "-inkey", "ec1.pem", "-in", "cert.pem", "-passout", "pass:x", "-out", "ks.p12",
            ],
        );
        openssl(
            d,
            &[
                "pkcs12",
                "-export",
                "-nokeys",
                "-in",
                "cert.pem",
                "-passout",
                "pass:x",
                "-out",
                "trust.p12",
            ],
        );
        openssl(d, &["pkey", "-in", "ec1.pem", "-pubout", "-out", "pub.pem"]);
        let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
        let cases = [
            ("rsa8.pem", Format::Pkcs8),
            ("rsa1.pem", Format::Pkcs1Rsa),
            ("ec1.pem", Format::Sec1Ec),
            ("ed.pem", Format::Pkcs8),
            ("enc.pem", Format::Pkcs8Encrypted),
        ];
        for (file, format) in cases {
            let pem = read(file);
            let der = pem_body_der(&pem);
            assert_eq!(find_bytes(&der).map(|k| k.format), Some(format), "{file} as DER");
            for (how, text) in encodings(&pem, &der) {
                let k = find(&text).unwrap_or_else(|| panic!("{file} as {how} was not found"));
                // Armour that says PRIVATE KEY is recognised by its label; everything else by structure.
                if how.contains("pem") && k.format == Format::PemArmour {
                    continue;
                }
                assert_eq!(k.format, format, "{file} as {how}");
                assert!(k.layers > 0 || how == "pem", "{file} as {how}");
            }
        }
        let p12 = std::fs::read(d.join("ks.p12")).unwrap();
        assert_eq!(find_bytes(&p12).map(|k| k.format), Some(Format::Pkcs12));
        let b = STANDARD.encode(&p12);
        assert_eq!(find(&b).map(|k| k.format), Some(Format::Pkcs12), "base64 key store");
        assert_eq!(
            find(&STANDARD.encode(b.as_bytes())).map(|k| k.format),
            Some(Format::Pkcs12)
        );
        // Silent: a certificate, a public key, a trust store without keys, in every encoding.
        let trust = std::fs::read(d.join("trust.p12")).unwrap();
        assert_eq!(find_bytes(&trust), None, "a PKCS#12 trust store holds no key");
        assert_eq!(find(&STANDARD.encode(&trust)), None);
        for file in ["cert.pem", "pub.pem"] {
            let pem = read(file);
            let der = pem_body_der(&pem);
            for (how, text) in encodings(&pem, &der) {
                assert_eq!(find(&text), None, "{file} as {how}");
            }
        }
    }

    #[test]
    fn other_key_files_and_near_misses() {
        let ssh = format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
            STANDARD.encode(b"openssh-key-v1\0rest")
        );
        assert_eq!(find(&ssh).map(|k| k.format), Some(Format::PemArmour));
        assert_eq!(
            find(
                &STANDARD.encode(
                    b"openssh-key-v1\0none\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
                )
            )
            .map(|k| k.format),
            Some(Format::OpenSsh)
        );
        assert_eq!(
            find("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\nAAAA\n").map(|k| k.format),
            Some(Format::Putty)
        );
        assert_eq!(
            find(r#"{"kty":"EC","crv":"P-256","x":"a","y":"b","d":"c"}"#).map(|k| k.format),
            Some(Format::Jwk)
        );
        assert_eq!(
            find(r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#).map(|k| k.format),
            Some(Format::Jwk)
        );
        assert_eq!(
            find(r#"{"kty":"EC","crv":"P-256","x":"a","y":"b"}"#),
            None,
            "a public JWK"
        );
        assert_eq!(
            find("-----BEGIN PGP PRIVATE KEY BLOCK-----\n").map(|k| k.format),
            Some(Format::PemArmour)
        );
        for silent in [
            "PRIVATE KEY----- mentioned in prose",
            "the private key is mounted from a Secret",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            &"A".repeat(4096),
            &"MII".repeat(100),
        ] {
            assert_eq!(find(silent), None, "{silent}");
        }
    }

    #[test]
    fn layers_and_sizes_are_bounded() {
        // A PKCS#8 Ed25519 key (structure from RFC 8410 10.3).
        let der = hex::decode(
            "302e020100300506032b657004220420d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842",
        )
        .unwrap();
        assert_eq!(find_bytes(&der).map(|k| k.format), Some(Format::Pkcs8));
        let mut t = STANDARD.encode(&der);
        for _ in 1..MAX_LAYERS {
            t = STANDARD.encode(t.as_bytes());
        }
        assert_eq!(
            find(&t).map(|k| k.layers),
            Some(MAX_LAYERS),
            "{MAX_LAYERS} layers are unwrapped"
        );
        assert_eq!(find(&STANDARD.encode(t.as_bytes())), None, "one more is not");
        // Beyond MAX_INPUT only armour is looked for.
        let big = format!("{}{}", " ".repeat(MAX_INPUT), STANDARD.encode(&der));
        assert_eq!(find(&big), None);
        assert!(find(&format!("{}-----BEGIN PRIVATE KEY-----", " ".repeat(MAX_INPUT))).is_some());
        // Truncated and garbage DER never panics.
        for n in 0..der.len() {
            assert_eq!(find_bytes(&der[..n]), None, "{n}");
        }
    }
}
