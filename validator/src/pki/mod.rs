//! PEM, X.509, webpki verification and the trust-bundle fingerprint.
//!
//! Everything that touches certificate bytes lives here, so rules and commands share one strict
//! parser: every PEM block must be a `CERTIFICATE` that parses as X.509. Errors name the block
//! (its 1-based index and its label) and never its content, so a private key pasted into a bundle
//! is reported without echoing a single byte of it.

pub mod examples;
pub mod fingerprint;
pub mod names;
pub mod verify;

use rustls_pki_types::CertificateDer;
use sha2::{Digest, Sha256};
use std::fmt;
use std::net::IpAddr;

/// Why a PEM input could not be used. `Display` never includes block content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemError {
    /// No PEM block at all (empty input, or text without `-----BEGIN`).
    NoCertificates,
    /// Block `index` (1-based) is not a `CERTIFICATE` block; `label` is its (sanitised) label.
    NotCertificate { index: usize, label: String },
    /// The PEM structure is broken (unterminated block, mismatched END, bad base64).
    Malformed { index: usize, reason: &'static str },
    /// Block `index` is a `CERTIFICATE` block whose DER is not an X.509 certificate.
    BadCertificate { index: usize, reason: String },
}

impl PemError {
    /// True when the offending block is a private key of any kind.
    pub fn is_private_key(&self) -> bool {
        matches!(self, PemError::NotCertificate { label, .. } if is_private_key_label(label))
    }
}

impl fmt::Display for PemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PemError::NoCertificates => write!(f, "no PEM CERTIFICATE block found (empty bundle)"),
            PemError::NotCertificate { index, label } if is_private_key_label(label) => write!(
                f,
                "PEM block {index} is a {label} block: a private key, not a CERTIFICATE (its content is not shown); \
                 remove it and treat the key as exposed"
            ),
            PemError::NotCertificate { index, label } => write!(
                f,
                "PEM block {index} is a {label} block, not a CERTIFICATE (its content is not shown); \
                 a certificate bundle holds CERTIFICATE blocks only"
            ),
            PemError::Malformed { index, reason } => write!(f, "PEM block {index} is malformed: {reason}"),
            PemError::BadCertificate { index, reason } => {
                write!(
                    f,
                    "PEM block {index} is labelled CERTIFICATE but is not an X.509 certificate: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for PemError {}

pub(crate) fn is_private_key_label(label: &str) -> bool {
    label.contains("PRIVATE KEY")
}

/// One PEM block. `der` is only decoded for `CERTIFICATE` blocks (other blocks, keys above all,
/// are never decoded: their content is not needed to refuse them).
#[derive(Debug, Clone)]
pub struct Block {
    /// 1-based position in the input.
    pub index: usize,
    /// Sanitised label (`CERTIFICATE`, `PRIVATE KEY`, …).
    pub label: String,
    /// The decoded DER of a `CERTIFICATE` block, or why it could not be decoded; `None` for
    /// other labels.
    pub der: Option<Result<Vec<u8>, &'static str>>,
}

impl Block {
    pub fn is_certificate(&self) -> bool {
        self.label == "CERTIFICATE"
    }
}

/// Split PEM text into blocks. Text outside blocks is ignored (comments, `subject=` lines);
/// structural errors (BEGIN without END, END without BEGIN, mismatched labels) are errors.
/// Returns an empty list when there is no block at all.
pub fn blocks(pem: &[u8]) -> Result<Vec<Block>, PemError> {
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None; // (label, base64 body)
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("-----BEGIN ") {
            let index = out.len() + 1;
            if open.is_some() {
                return Err(PemError::Malformed {
                    index,
                    reason: "BEGIN line inside an unterminated block",
                });
            }
            let label = rest.strip_suffix("-----").ok_or(PemError::Malformed {
                index,
                reason: "BEGIN line does not end with -----",
            })?;
            open = Some((sanitise_label(label), String::new()));
        } else if let Some(rest) = line.strip_prefix("-----END ") {
            let index = out.len() + 1;
            let (label, body) = open.take().ok_or(PemError::Malformed {
                index,
                reason: "END line without a BEGIN line",
            })?;
            let end_label = sanitise_label(rest.strip_suffix("-----").unwrap_or(rest));
            if end_label != label {
                return Err(PemError::Malformed {
                    index,
                    reason: "END label does not match the BEGIN label",
                });
            }
            let der = (label == "CERTIFICATE").then(|| base64_decode(&body));
            out.push(Block { index, label, der });
        } else if let Some((_, body)) = open.as_mut() {
            // Only CERTIFICATE bodies are ever decoded; RFC 1421 headers (`Proc-Type:`) inside
            // one make it bad base64, which is reported, never guessed around.
            body.push_str(line);
        }
    }
    if open.is_some() {
        return Err(PemError::Malformed {
            index: out.len() + 1,
            reason: "block has no END line",
        });
    }
    Ok(out)
}

/// Labels are shown in messages: keep only plain label characters, bounded length.
fn sanitise_label(label: &str) -> String {
    let s: String = label
        .chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_uppercase() || c.is_ascii_digit() || c == ' ' || c == '-' {
                c
            } else {
                '?'
            }
        })
        .collect();
    if s.is_empty() {
        "(unlabelled)".into()
    } else {
        s
    }
}

/// Strict standard base64 (whitespace ignored, padding optional at the very end).
fn base64_decode(s: &str) -> Result<Vec<u8>, &'static str> {
    fn val(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some((c - b'A') as u32),
            b'a'..=b'z' => Some((c - b'a' + 26) as u32),
            b'0'..=b'9' => Some((c - b'0' + 52) as u32),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let bytes: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let trimmed: &[u8] = {
        let mut end = bytes.len();
        let mut pads = 0;
        while end > 0 && bytes[end - 1] == b'=' && pads < 2 {
            end -= 1;
            pads += 1;
        }
        &bytes[..end]
    };
    if trimmed.is_empty() {
        return Err("empty base64 body");
    }
    if trimmed.len() % 4 == 1 {
        return Err("invalid base64 length");
    }
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let (mut acc, mut nbits) = (0u32, 0u32);
    for &c in trimmed {
        let v = val(c).ok_or("invalid base64 character")?;
        acc = (acc << 6) | v;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((acc >> nbits) as u8);
            acc &= (1 << nbits) - 1;
        }
    }
    Ok(out)
}

/// Decode base64 that may wrap PEM (Kubernetes Secret `data`, Vault `caBundle`).
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    base64_decode(s).ok()
}

/// Strict bundle parser: every block must be a `CERTIFICATE` that parses as X.509, and there
/// must be at least one. The error names the first offending block, never its content.
pub fn parse_bundle(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let blocks = blocks(pem)?;
    if blocks.is_empty() {
        return Err(PemError::NoCertificates);
    }
    // Refuse any non-certificate block before decoding anything.
    if let Some(b) = blocks.iter().find(|b| !b.is_certificate()) {
        return Err(PemError::NotCertificate {
            index: b.index,
            label: b.label.clone(),
        });
    }
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        let der = match b.der {
            Some(Ok(der)) => der,
            Some(Err(reason)) => return Err(PemError::Malformed { index: b.index, reason }),
            None => unreachable!("only CERTIFICATE blocks remain"),
        };
        if let Err(reason) = describe(&der) {
            return Err(PemError::BadCertificate { index: b.index, reason });
        }
        out.push(CertificateDer::from(der));
    }
    Ok(out)
}

/// What the rules and commands need to know about one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// RFC 4514-style subject (`CN=…, O=…`).
    pub subject: String,
    pub issuer: String,
    /// basicConstraints cA=true.
    pub is_ca: bool,
    /// Unix seconds.
    pub not_before: i64,
    pub not_after: i64,
    pub dns_sans: Vec<String>,
    pub ip_sans: Vec<IpAddr>,
    /// `None` when the certificate has no extendedKeyUsage extension (any purpose).
    pub server_auth: Option<bool>,
    /// SHA-256 of the DER, lowercase hex.
    pub sha256: String,
}

impl CertInfo {
    /// A short, public identification for messages: subject and the first 16 hex chars of the
    /// SHA-256 of the DER.
    pub fn label(&self) -> String {
        let subject = if self.subject.is_empty() {
            "(empty subject)"
        } else {
            &self.subject
        };
        format!("`{subject}` (sha256 {}…)", &self.sha256[..16])
    }
}

/// Parse one DER certificate.
pub fn describe(der: &[u8]) -> Result<CertInfo, String> {
    let (rest, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| format!("{e}"))?;
    if !rest.is_empty() {
        return Err("trailing data after the certificate".into());
    }
    let mut dns_sans = Vec::new();
    let mut ip_sans = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                x509_parser::extensions::GeneralName::DNSName(d) => dns_sans.push(d.to_string()),
                x509_parser::extensions::GeneralName::IPAddress(b) => match b.len() {
                    4 => ip_sans.push(IpAddr::from(<[u8; 4]>::try_from(*b).expect("length checked"))),
                    16 => ip_sans.push(IpAddr::from(<[u8; 16]>::try_from(*b).expect("length checked"))),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    let server_auth = match cert.extended_key_usage() {
        Ok(Some(eku)) => Some(eku.value.server_auth || eku.value.any),
        _ => None,
    };
    Ok(CertInfo {
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        is_ca: cert.is_ca(),
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        dns_sans,
        ip_sans,
        server_auth,
        sha256: hex::encode(Sha256::digest(der)),
    })
}

/// Format unix seconds as RFC 3339 (UTC), for messages.
pub fn rfc3339(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| format!("@{unix}"))
}

/// Public certificates from PEM text or from base64 of PEM text (Kubernetes Secret `data`,
/// Vault `caBundle`). `None` when the value is neither.
pub fn pem_text_of(value: &str) -> Option<Vec<u8>> {
    if value.contains("-----BEGIN") {
        return Some(value.as_bytes().to_vec());
    }
    let decoded = decode_base64(value)?;
    let s = std::str::from_utf8(&decoded).ok()?;
    s.contains("-----BEGIN").then_some(decoded)
}

#[cfg(test)]
pub(crate) mod testcerts {
    //! Certificates generated at test time (rcgen); nothing here is committed key material.
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
    use time::OffsetDateTime;

    pub struct Ca {
        pub params: CertificateParams,
        pub key: KeyPair,
        pub pem: String,
    }

    fn ca_params(cn: &str) -> CertificateParams {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p
    }

    pub fn root(cn: &str) -> Ca {
        let params = ca_params(cn);
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { params, key, pem }
    }

    pub fn root_valid(cn: &str, not_before: OffsetDateTime, not_after: OffsetDateTime) -> Ca {
        let mut params = ca_params(cn);
        params.not_before = not_before;
        params.not_after = not_after;
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { params, key, pem }
    }

    pub fn intermediate(cn: &str, parent: &Ca) -> Ca {
        let params = ca_params(cn);
        let key = KeyPair::generate().unwrap();
        let pem = params
            .signed_by(&key, &Issuer::from_params(&parent.params, &parent.key))
            .unwrap()
            .pem();
        Ca { params, key, pem }
    }

    /// A leaf for `names` signed by `ca`. `ekus`: `None` = no EKU extension.
    pub fn leaf(names: &[&str], ca: &Ca, ekus: Option<Vec<ExtendedKeyUsagePurpose>>) -> String {
        let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        p.distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("leaf"));
        if let Some(e) = ekus {
            p.extended_key_usages = e;
        }
        let key = KeyPair::generate().unwrap();
        p.signed_by(&key, &Issuer::from_params(&ca.params, &ca.key))
            .unwrap()
            .pem()
    }

    pub fn leaf_valid(names: &[&str], ca: &Ca, not_before: OffsetDateTime, not_after: OffsetDateTime) -> String {
        let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        p.not_before = not_before;
        p.not_after = not_after;
        let key = KeyPair::generate().unwrap();
        p.signed_by(&key, &Issuer::from_params(&ca.params, &ca.key))
            .unwrap()
            .pem()
    }

    /// A throwaway private key in PEM, generated now (never committed).
    pub fn throwaway_key_pem() -> String {
        KeyPair::generate().unwrap().serialize_pem()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_bundle_and_ignores_text_between_blocks() {
        let a = testcerts::root("A");
        let b = testcerts::root("B");
        let text = format!("# roots\n{}\nsubject=CN = B\n{}", a.pem, b.pem);
        let certs = parse_bundle(text.as_bytes()).unwrap();
        assert_eq!(certs.len(), 2);
        let info = describe(certs[0].as_ref()).unwrap();
        assert_eq!(info.subject, "CN=A");
        assert!(info.is_ca);
    }

    #[test]
    fn a_private_key_is_refused_without_echoing_it() {
        let a = testcerts::root("A");
        let key = testcerts::throwaway_key_pem();
        let err = parse_bundle(format!("{}{key}", a.pem).as_bytes()).unwrap_err();
        assert!(err.is_private_key());
        assert_eq!(
            err,
            PemError::NotCertificate {
                index: 2,
                label: "PRIVATE KEY".into()
            }
        );
        let msg = err.to_string();
        let body_line = key.lines().nth(1).unwrap();
        assert!(!msg.contains(&body_line[..20]), "{msg}");
        assert!(msg.contains("block 2") && msg.contains("PRIVATE KEY"), "{msg}");
    }

    #[test]
    fn structural_errors() {
        assert_eq!(parse_bundle(b"").unwrap_err(), PemError::NoCertificates);
        assert_eq!(parse_bundle(b"just text\n").unwrap_err(), PemError::NoCertificates);
        let a = testcerts::root("A");
        let cut = &a.pem[..a.pem.len() - 30];
        assert!(matches!(
            parse_bundle(cut.as_bytes()).unwrap_err(),
            PemError::Malformed { index: 1, .. }
        ));
        let bad = "-----BEGIN CERTIFICATE-----\nAAAA!!!!\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            parse_bundle(bad.as_bytes()).unwrap_err(),
            PemError::Malformed { .. }
        ));
        let notx509 = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            parse_bundle(notx509.as_bytes()).unwrap_err(),
            PemError::BadCertificate { index: 1, .. }
        ));
        let mismatch = a.pem.replace("END CERTIFICATE", "END X509 CRL");
        assert!(matches!(
            parse_bundle(mismatch.as_bytes()).unwrap_err(),
            PemError::Malformed { .. }
        ));
    }

    #[test]
    fn base64_roundtrip_matches_known_vectors() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("aGk=\n").unwrap(), b"hi");
        assert!(base64_decode("a").is_err());
        assert!(base64_decode("").is_err());
    }

    #[test]
    fn pem_text_of_accepts_plain_and_base64() {
        let a = testcerts::root("A");
        assert!(pem_text_of(&a.pem).is_some());
        let b64 = {
            // encode with a tiny local encoder to avoid a dependency
            const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut s = String::new();
            for c in a.pem.as_bytes().chunks(3) {
                let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
                for i in 0..4 {
                    if i <= c.len() {
                        s.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
                    } else {
                        s.push('=');
                    }
                }
            }
            s
        };
        assert_eq!(pem_text_of(&b64).unwrap(), a.pem.as_bytes());
        assert!(pem_text_of("not pem").is_none());
    }
}
