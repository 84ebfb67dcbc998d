//! A printable summary of a presented certificate (public fields only, via crate::pki), so a
//! refusal can show what the server actually sent.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CertSummary {
    pub subject: String,
    pub issuer: String,
    /// `dns:<name>` / `ip:<addr>` entries of subjectAltName.
    pub sans: Vec<String>,
    pub not_before: String,
    pub not_after: String,
    pub is_ca: bool,
    /// Whether the extendedKeyUsage allows serverAuth; `None` when the extension is absent
    /// (any purpose).
    pub server_auth: Option<bool>,
    /// SHA-256 of the DER, lowercase hex.
    pub sha256: String,
}

/// Summarise one DER certificate; a certificate that does not parse still gets its hash.
pub fn summarize(der: &[u8]) -> CertSummary {
    match crate::pki::describe(der) {
        Ok(i) => CertSummary {
            subject: i.subject,
            issuer: i.issuer,
            sans: i
                .dns_sans
                .iter()
                .map(|d| format!("dns:{d}"))
                .chain(i.ip_sans.iter().map(|ip| format!("ip:{ip}")))
                .collect(),
            not_before: crate::pki::rfc3339(i.not_before),
            not_after: crate::pki::rfc3339(i.not_after),
            is_ca: i.is_ca,
            server_auth: i.server_auth,
            sha256: i.sha256,
        },
        Err(e) => CertSummary {
            subject: format!("(certificate does not parse: {e})"),
            issuer: String::new(),
            sans: vec![],
            not_before: String::new(),
            not_after: String::new(),
            is_ca: false,
            server_auth: None,
            sha256: {
                use sha2::{Digest, Sha256};
                hex::encode(Sha256::digest(der))
            },
        },
    }
}
