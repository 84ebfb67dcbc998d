//! Why a probe refused: stable reason codes (printed, asserted by tests, documented in
//! docs/probes.md). The certificate codes are the ones a worker's rustls-webpki reaches.

use std::fmt;

/// The specific reason a probe did not pass. `code()` is the stable, machine-readable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The chain does not lead to a root in the bundle (wrong bundle, missing intermediate).
    UnknownIssuer,
    /// No subjectAltName of the leaf covers the server name (the subject CN is never used).
    NotValidForName,
    /// A certificate of the chain is past its notAfter.
    Expired,
    /// A certificate of the chain is before its notBefore.
    NotValidYet,
    /// A certificate of the chain has an extended key usage without serverAuth.
    InvalidPurpose,
    /// Any other certificate defect (bad signature, bad encoding, unsupported algorithm, ...).
    BadCertificate,
    /// The bundle holds no certificate: nothing could ever verify, so the probe does not connect.
    EmptyBundle,
    /// The host name did not resolve, or the network is unreachable.
    Unreachable,
    /// TCP: nothing listens on the port (connection refused / reset on connect).
    ConnectionRefused,
    /// No (complete) answer within `--timeout`.
    Timeout,
    /// The peer answered with something that is not TLS, or closed without a TLS response.
    NotTls,
    /// Client and server share no application protocol (ALPN).
    AlpnMismatch,
    /// The handshake failed for another reason (alert from the server, incompatible peer, ...).
    HandshakeFailed,
}

impl Reason {
    pub const ALL: &'static [Reason] = &[
        Reason::UnknownIssuer,
        Reason::NotValidForName,
        Reason::Expired,
        Reason::NotValidYet,
        Reason::InvalidPurpose,
        Reason::BadCertificate,
        Reason::EmptyBundle,
        Reason::Unreachable,
        Reason::ConnectionRefused,
        Reason::Timeout,
        Reason::NotTls,
        Reason::AlpnMismatch,
        Reason::HandshakeFailed,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Reason::UnknownIssuer => "UnknownIssuer",
            Reason::NotValidForName => "NotValidForName",
            Reason::Expired => "Expired",
            Reason::NotValidYet => "NotValidYet",
            Reason::InvalidPurpose => "InvalidPurpose",
            Reason::BadCertificate => "BadCertificate",
            Reason::EmptyBundle => "EmptyBundle",
            Reason::Unreachable => "Unreachable",
            Reason::ConnectionRefused => "ConnectionRefused",
            Reason::Timeout => "Timeout",
            Reason::NotTls => "NotTls",
            Reason::AlpnMismatch => "AlpnMismatch",
            Reason::HandshakeFailed => "HandshakeFailed",
        }
    }

    /// The reason for a code as the PKI verifier names it ("UnknownIssuer", ...).
    pub fn from_code(code: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.code() == code)
    }

    /// What an operator should do about it.
    pub fn help(self) -> &'static str {
        match self {
            Reason::UnknownIssuer => {
                "the server's chain must lead to a root in the bundle: probe with the published \
                 trust bundle (ConfigMap nvcf-trust-bundle, key ca.crt) and make sure the server \
                 sends its intermediate (tls.crt = leaf + intermediates)"
            }
            Reason::NotValidForName => {
                "issue the router Certificate with dnsNames covering the name workers present as \
                 SNI, or probe with that name (--server-name); only subjectAltNames count and a \
                 wildcard covers exactly one label"
            }
            Reason::Expired | Reason::NotValidYet => {
                "check cert-manager renewed the Certificate (kubectl describe certificate) and \
                 that the server reloaded it; check the clocks"
            }
            Reason::InvalidPurpose => {
                "the Certificate needs `server auth` in usages and the signing role must set \
                 server_flag=true"
            }
            Reason::BadCertificate => "re-issue the certificate; the server presented a defective chain",
            Reason::EmptyBundle => {
                "pass the trust bundle PEM workers use (ConfigMap nvcf-trust-bundle, key ca.crt); \
                 it must hold at least one CERTIFICATE"
            }
            Reason::Unreachable => "check the address: DNS name, route and firewall",
            Reason::ConnectionRefused => "nothing listens there: check the Service/Gateway listener and the port",
            Reason::Timeout => {
                "check the address, the port and firewalls (UDP for QUIC); raise --timeout on slow links"
            }
            Reason::NotTls => {
                "the port is plaintext: probe the TLS endpoint (the Gateway listener or the TLS \
                 proxy in front of the router's gRPC port), not the router's own h2c port"
            }
            Reason::AlpnMismatch => {
                "pass the protocol the server speaks with --alpn (repeatable), or --no-alpn for a \
                 server that negotiates none"
            }
            Reason::HandshakeFailed => "see the detail; check the server's TLS configuration and logs",
        }
    }

    /// True for reasons about the presented certificate chain (as opposed to transport).
    pub fn is_certificate(self) -> bool {
        matches!(
            self,
            Reason::UnknownIssuer
                | Reason::NotValidForName
                | Reason::Expired
                | Reason::NotValidYet
                | Reason::InvalidPurpose
                | Reason::BadCertificate
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A refusal: the reason and a sentence naming what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: Reason,
    pub detail: String,
}

impl Failure {
    pub fn new(reason: Reason, detail: impl Into<String>) -> Self {
        Failure {
            reason,
            detail: detail.into(),
        }
    }
}

/// Map a rustls certificate error to a reason (the rustls verifier and the worker agree on
/// these because both are rustls-webpki underneath).
pub fn from_certificate_error(e: &rustls::CertificateError) -> Reason {
    use rustls::CertificateError as C;
    match e {
        C::UnknownIssuer => Reason::UnknownIssuer,
        C::NotValidForName | C::NotValidForNameContext { .. } => Reason::NotValidForName,
        C::Expired | C::ExpiredContext { .. } => Reason::Expired,
        C::NotValidYet | C::NotValidYetContext { .. } => Reason::NotValidYet,
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => Reason::InvalidPurpose,
        _ => Reason::BadCertificate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for r in Reason::ALL {
            assert_eq!(Reason::from_code(r.code()), Some(*r));
            assert!(seen.insert(r.code()), "duplicate code {}", r.code());
            assert!(!r.help().is_empty());
        }
        assert_eq!(Reason::from_code("Nope"), None);
    }

    #[test]
    fn certificate_errors_map_to_worker_reasons() {
        use rustls::CertificateError as C;
        assert_eq!(from_certificate_error(&C::UnknownIssuer), Reason::UnknownIssuer);
        assert_eq!(from_certificate_error(&C::NotValidForName), Reason::NotValidForName);
        assert_eq!(from_certificate_error(&C::Expired), Reason::Expired);
        assert_eq!(from_certificate_error(&C::NotValidYet), Reason::NotValidYet);
        assert_eq!(from_certificate_error(&C::InvalidPurpose), Reason::InvalidPurpose);
        assert_eq!(from_certificate_error(&C::BadSignature), Reason::BadCertificate);
    }
}
