//! Server-certificate verification exactly as a worker's rustls client performs it: path building
//! to the given roots only, validity at a given moment, the serverAuth EKU, then the name.
//! The verdict comes from rustls's own webpki glue (`verify_server_cert_signed_by_trust_anchor`,
//! `verify_server_name`), so the reason codes are the ones a worker logs.

use super::{describe, parse_bundle, PemError};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, RootCertStore};
use std::fmt;
use time::OffsetDateTime;

/// A successful verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub name: String,
    pub leaf_subject: String,
    pub leaf_not_after: i64,
    /// Intermediates presented after the leaf.
    pub intermediates: usize,
    /// Issuer of the top-most presented certificate: the trust anchor's subject.
    pub anchor_subject: String,
}

impl fmt::Display for Verified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "verified: {} (leaf `{}`, expires {}, {} intermediate(s), anchored at `{}`)",
            self.name,
            self.leaf_subject,
            super::rfc3339(self.leaf_not_after),
            self.intermediates,
            self.anchor_subject
        )
    }
}

/// A refused or unusable verification. `reason` is a stable code: the rustls/webpki verdicts
/// `UnknownIssuer`, `NotValidForName`, `Expired`, `NotValidYet`, `InvalidPurpose`,
/// `BadSignature`, `UnsupportedSignatureAlgorithm`, `BadEncoding`, `UnhandledCriticalExtension`,
/// `Revoked`, webpki names without a rustls equivalent (`CaUsedAsEndEntity`,
/// `NameConstraintViolation`, …), `Other`; or an input problem: `UnreadableBundle`, `UnreadableChain`, `InvalidName`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: &'static str,
    pub message: String,
}

impl Refusal {
    /// True when the inputs could not be used (the CLI exits 2), false for a real verdict (1).
    pub fn is_input_error(&self) -> bool {
        matches!(self.reason, "UnreadableBundle" | "UnreadableChain" | "InvalidName")
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

/// A rustls root store holding exactly the certificates of a PEM bundle (strict parsing).
pub fn roots_store(pem: &[u8]) -> Result<RootCertStore, PemError> {
    let mut store = RootCertStore::empty();
    for (i, der) in parse_bundle(pem)?.into_iter().enumerate() {
        store.add(der).map_err(|e| PemError::BadCertificate {
            index: i + 1,
            reason: format!("not usable as a trust anchor: {e}"),
        })?;
    }
    Ok(store)
}

fn unix_time(at: OffsetDateTime) -> UnixTime {
    UnixTime::since_unix_epoch(std::time::Duration::from_secs(at.unix_timestamp().max(0) as u64))
}

/// Verify `chain_pem` (leaf first, then intermediates; the root is not needed) for `name` against
/// exactly the roots in `roots_pem`, at `at`.
pub fn verify_server(roots_pem: &[u8], chain_pem: &[u8], name: &str, at: OffsetDateTime) -> Result<Verified, Refusal> {
    let roots = roots_store(roots_pem).map_err(|e| Refusal {
        reason: "UnreadableBundle",
        message: format!("roots bundle: {e}"),
    })?;
    let chain = parse_bundle(chain_pem).map_err(|e| Refusal {
        reason: "UnreadableChain",
        message: format!("chain: {e}"),
    })?;
    verify_parsed(&roots, &chain, name, at)
}

/// Like `verify_server`, over already parsed inputs (the live probes reuse it).
pub fn verify_parsed(
    roots: &RootCertStore,
    chain: &[CertificateDer<'static>],
    name: &str,
    at: OffsetDateTime,
) -> Result<Verified, Refusal> {
    let server_name = ServerName::try_from(name.to_string()).map_err(|_| Refusal {
        reason: "InvalidName",
        message: format!("`{name}` is neither a DNS name nor an IP address a client could verify"),
    })?;
    let (leaf, intermediates) = chain.split_first().ok_or(Refusal {
        reason: "UnreadableChain",
        message: "chain: no certificate".into(),
    })?;
    let infos: Vec<_> = chain.iter().filter_map(|c| describe(c.as_ref()).ok()).collect();
    let leaf_info = infos.first().cloned();
    let parsed = rustls::server::ParsedCertificate::try_from(leaf).map_err(|e| refusal(e, name, &infos, at))?;
    let algs = rustls::crypto::ring::default_provider()
        .signature_verification_algorithms
        .all;
    rustls::client::verify_server_cert_signed_by_trust_anchor(&parsed, roots, intermediates, unix_time(at), algs)
        .map_err(|e| refusal(e, name, &infos, at))?;
    rustls::client::verify_server_name(&parsed, &server_name).map_err(|e| refusal(e, name, &infos, at))?;
    let leaf_info = leaf_info.ok_or(Refusal {
        reason: "UnreadableChain",
        message: "chain: leaf does not parse".into(),
    })?;
    Ok(Verified {
        name: name.to_string(),
        leaf_subject: leaf_info.subject.clone(),
        leaf_not_after: leaf_info.not_after,
        intermediates: intermediates.len(),
        anchor_subject: infos.last().map(|i| i.issuer.clone()).unwrap_or_default(),
    })
}

/// The path check alone, as a worker's rustls client runs it before the name: `chain` (leaf
/// first) builds to one of `roots`, every certificate valid at `at`, serverAuth allowed along the
/// path. Used where the names are judged elsewhere (a Secret's chain against the published bundle).
pub fn verify_anchor(
    roots: &RootCertStore,
    chain: &[CertificateDer<'static>],
    at: OffsetDateTime,
) -> Result<(), Refusal> {
    let (leaf, intermediates) = chain.split_first().ok_or(Refusal {
        reason: "UnreadableChain",
        message: "chain: no certificate".into(),
    })?;
    let infos: Vec<_> = chain.iter().filter_map(|c| describe(c.as_ref()).ok()).collect();
    let parsed = rustls::server::ParsedCertificate::try_from(leaf).map_err(|e| refusal(e, "", &infos, at))?;
    let algs = rustls::crypto::ring::default_provider()
        .signature_verification_algorithms
        .all;
    rustls::client::verify_server_cert_signed_by_trust_anchor(&parsed, roots, intermediates, unix_time(at), algs)
        .map_err(|e| refusal(e, "", &infos, at))
}

/// webpki reason names passed through as codes (a fixed list, so codes stay stable strings).
fn known_code(code: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "CaUsedAsEndEntity",
        "EndEntityUsedAsCa",
        "NameConstraintViolation",
        "PathLenConstraintViolated",
        "MaximumPathDepthExceeded",
        "UnsupportedCertVersion",
        "ExtensionValueInvalid",
    ];
    KNOWN.iter().find(|k| **k == code).copied().unwrap_or("Other")
}

/// Map a rustls error to a stable reason code and a message that says what to change.
fn refusal(e: rustls::Error, name: &str, chain: &[super::CertInfo], at: OffsetDateTime) -> Refusal {
    let at_s = super::rfc3339(at.unix_timestamp());
    let leaf = chain.first().map(|c| c.label()).unwrap_or_else(|| "the leaf".into());
    let top = chain.last();
    let ce = match e {
        rustls::Error::InvalidCertificate(ce) => ce,
        other => {
            return Refusal {
                reason: "Other",
                message: other.to_string(),
            }
        }
    };
    #[allow(deprecated)]
    let (reason, message) = match &ce {
        CertificateError::UnknownIssuer => (
            "UnknownIssuer",
            match top {
                Some(t) => format!(
                    "no path from {leaf} to a root of the bundle: the top-most presented certificate {} is issued by `{}`, \
                     which is not in the roots bundle (add the missing intermediate to the chain, or the right root to the bundle)",
                    t.label(),
                    t.issuer
                ),
                None => "no path to a root of the bundle".into(),
            },
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            let sans = chain.first().map(|c| {
                let mut v = c.dns_sans.clone();
                v.extend(c.ip_sans.iter().map(|i| i.to_string()));
                v
            });
            (
                "NotValidForName",
                format!(
                    "{leaf} is not valid for `{name}`: its subjectAltNames are {:?} (the subject CN is never used; a `*` covers exactly one label)",
                    sans.unwrap_or_default()
                ),
            )
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            let which = chain.iter().find(|c| c.not_after < at.unix_timestamp());
            (
                "Expired",
                match which {
                    Some(c) => format!("{} expired at {} (judged at {at_s})", c.label(), super::rfc3339(c.not_after)),
                    None => format!("a certificate of the path has expired (judged at {at_s})"),
                },
            )
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            let which = chain.iter().find(|c| c.not_before > at.unix_timestamp());
            (
                "NotValidYet",
                match which {
                    Some(c) => format!("{} is not valid before {} (judged at {at_s})", c.label(), super::rfc3339(c.not_before)),
                    None => format!("a certificate of the path is not valid yet (judged at {at_s})"),
                },
            )
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            let which = chain.iter().find(|c| c.server_auth == Some(false));
            (
                "InvalidPurpose",
                match which {
                    Some(c) => format!(
                        "{} has an extendedKeyUsage without serverAuth; workers require serverAuth (cert-manager: add `server auth` to spec.usages; OpenBao: server_flag=true)",
                        c.label()
                    ),
                    None => "a certificate of the path does not allow serverAuth".into(),
                },
            )
        }
        CertificateError::BadSignature => ("BadSignature", "a signature in the chain does not verify".into()),
        CertificateError::UnsupportedSignatureAlgorithm
        | CertificateError::UnsupportedSignatureAlgorithmContext { .. }
        | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            ("UnsupportedSignatureAlgorithm", "a certificate is signed with an algorithm workers do not accept".into())
        }
        CertificateError::BadEncoding => ("BadEncoding", "a certificate of the chain is not valid DER".into()),
        CertificateError::UnhandledCriticalExtension => {
            ("UnhandledCriticalExtension", "a certificate carries a critical extension workers do not understand".into())
        }
        CertificateError::Revoked => ("Revoked", "a certificate is revoked".into()),
        CertificateError::Other(inner) => {
            // webpki errors without a rustls equivalent (CaUsedAsEndEntity, PathLenConstraintViolated,
            // NameConstraintViolation, …): keep webpki's own name as the reason.
            let detail = inner.to_string();
            let code = detail.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or("");
            let hint = match code {
                "CaUsedAsEndEntity" => " (a CA certificate was presented as the server's leaf: put the leaf first in the chain)",
                "EndEntityUsedAsCa" => " (a non-CA certificate sits where an issuer is needed)",
                "NameConstraintViolation" => " (a CA in the path is name-constrained and does not permit this name)",
                _ => "",
            };
            return Refusal { reason: known_code(code), message: format!("webpki refused the chain: {detail}{hint}") };
        }
        other => ("Other", format!("{other:?}")),
    };
    Refusal { reason, message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::testcerts::{self, Ca};
    use rcgen::ExtendedKeyUsagePurpose as Eku;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-29 12:00 UTC);

    fn pki() -> (Ca, Ca) {
        let root = testcerts::root("Test Root");
        let int = testcerts::intermediate("Test Intermediate", &root);
        (root, int)
    }

    #[test]
    fn verifies_a_chain_with_an_intermediate() {
        let (root, int) = pki();
        let leaf = testcerts::leaf(&["*.h.nvcf.svc"], &int, Some(vec![Eku::ServerAuth]));
        let chain = format!("{leaf}{}", int.pem);
        let v = verify_server(root.pem.as_bytes(), chain.as_bytes(), "r-0.h.nvcf.svc", NOW).unwrap();
        assert_eq!(v.intermediates, 1);
        assert_eq!(v.anchor_subject, "CN=Test Root");
        assert!(v.to_string().starts_with("verified: r-0.h.nvcf.svc"), "{v}");
    }

    #[test]
    fn verdicts_are_webpki_reasons() {
        let (root, int) = pki();
        let other_root = testcerts::root("Other Root");
        let leaf = testcerts::leaf(&["*.h.nvcf.svc"], &int, Some(vec![Eku::ServerAuth]));
        let chain = format!("{leaf}{}", int.pem);
        let r = |roots: &str, chain: &str, name: &str, at| {
            verify_server(roots.as_bytes(), chain.as_bytes(), name, at).unwrap_err()
        };

        assert_eq!(
            r(&root.pem, &leaf, "r-0.h.nvcf.svc", NOW).reason,
            "UnknownIssuer",
            "missing intermediate"
        );
        assert_eq!(
            r(&other_root.pem, &chain, "r-0.h.nvcf.svc", NOW).reason,
            "UnknownIssuer"
        );
        let nv = r(&root.pem, &chain, "a.b.h.nvcf.svc", NOW);
        assert_eq!(nv.reason, "NotValidForName");
        assert!(nv.message.contains("*.h.nvcf.svc"), "{}", nv.message);

        let client_only = testcerts::leaf(&["*.h.nvcf.svc"], &int, Some(vec![Eku::ClientAuth]));
        let p = r(&root.pem, &format!("{client_only}{}", int.pem), "r-0.h.nvcf.svc", NOW);
        assert_eq!(p.reason, "InvalidPurpose", "{p}");

        let short = testcerts::leaf_valid(
            &["x.example.com"],
            &root,
            datetime!(2020-01-01 0:00 UTC),
            datetime!(2021-01-01 0:00 UTC),
        );
        let e = r(&root.pem, &short, "x.example.com", NOW);
        assert_eq!(e.reason, "Expired");
        assert!(e.message.contains("2021-01-01"), "{}", e.message);
        assert_eq!(
            r(&root.pem, &short, "x.example.com", datetime!(2019-06-01 0:00 UTC)).reason,
            "NotValidYet"
        );
        let ca_as_leaf = r(&root.pem, &int.pem, "x.example.com", NOW);
        assert_eq!(ca_as_leaf.reason, "CaUsedAsEndEntity", "{ca_as_leaf}");
    }

    #[test]
    fn the_anchor_check_builds_the_path_and_needs_server_auth_but_no_name() {
        let (root, int) = pki();
        let other = testcerts::root("Other Root");
        let leaf = testcerts::leaf(&["a.example.com"], &int, Some(vec![Eku::ServerAuth]));
        let chain = parse_bundle(format!("{leaf}{}", int.pem).as_bytes()).unwrap();
        let roots = roots_store(root.pem.as_bytes()).unwrap();
        assert_eq!(verify_anchor(&roots, &chain, NOW), Ok(()));
        let wrong = roots_store(other.pem.as_bytes()).unwrap();
        assert_eq!(verify_anchor(&wrong, &chain, NOW).unwrap_err().reason, "UnknownIssuer");
        let client = testcerts::leaf(&["a.example.com"], &int, Some(vec![Eku::ClientAuth]));
        let chain = parse_bundle(format!("{client}{}", int.pem).as_bytes()).unwrap();
        assert_eq!(verify_anchor(&roots, &chain, NOW).unwrap_err().reason, "InvalidPurpose");
        assert_eq!(verify_anchor(&roots, &[], NOW).unwrap_err().reason, "UnreadableChain");
    }

    #[test]
    fn unusable_inputs_are_input_errors() {
        let (root, int) = pki();
        let leaf = testcerts::leaf(&["a.example.com"], &int, None);
        let key = testcerts::throwaway_key_pem();
        let e = verify_server(
            format!("{}{key}", root.pem).as_bytes(),
            leaf.as_bytes(),
            "a.example.com",
            NOW,
        )
        .unwrap_err();
        assert_eq!(e.reason, "UnreadableBundle");
        assert!(e.is_input_error());
        assert!(!e.message.contains(&key.lines().nth(1).unwrap()[..16]));
        assert_eq!(
            verify_server(root.pem.as_bytes(), b"", "a.example.com", NOW)
                .unwrap_err()
                .reason,
            "UnreadableChain"
        );
        assert_eq!(
            verify_server(root.pem.as_bytes(), leaf.as_bytes(), "not a name!", NOW)
                .unwrap_err()
                .reason,
            "InvalidName"
        );
        assert!(roots_store(root.pem.as_bytes()).unwrap().len() == 1);
    }
}
