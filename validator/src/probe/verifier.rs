//! The certificate verifier the probes hand to rustls. The chain verdict is crate::pki's
//! (`pki::verify::verify_parsed`, the worker's rustls-webpki path) against a root store built
//! from the bundle ALONE: no system roots, no fallback. It records the chain the server
//! presented and the specific reason a verification failed, so the probe can report it even
//! when the transport (QUIC) reduces the failure to a TLS alert number.

use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::reason::Reason;
use crate::pki::verify::{verify_parsed, Refusal};

/// What the verifier saw during one handshake.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// The chain as presented: leaf first, then what the server sent as intermediates.
    pub chain: Vec<CertificateDer<'static>>,
    /// The verification refusal, if verification ran and failed.
    pub refusal: Option<(Reason, String)>,
    /// True once verification succeeded.
    pub verified: bool,
}

#[derive(Debug)]
pub struct RecordingVerifier {
    roots: RootCertStore,
    /// The name the probe verifies (also the SNI rustls sends).
    name: String,
    provider: Arc<CryptoProvider>,
    seen: Mutex<Seen>,
}

impl RecordingVerifier {
    pub fn new(roots: RootCertStore, name: &str, provider: Arc<CryptoProvider>) -> Self {
        RecordingVerifier {
            roots,
            name: name.to_string(),
            provider,
            seen: Mutex::new(Seen::default()),
        }
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn record(&self, f: impl FnOnce(&mut Seen)) {
        if let Ok(mut s) = self.seen.lock() {
            f(&mut s);
        }
    }
}

/// The rustls error the handshake aborts with (it picks the TLS alert sent to the server).
fn rustls_error(r: &Refusal) -> rustls::Error {
    let ce = match r.reason {
        "UnknownIssuer" => CertificateError::UnknownIssuer,
        "NotValidForName" => CertificateError::NotValidForName,
        "Expired" => CertificateError::Expired,
        "NotValidYet" => CertificateError::NotValidYet,
        "InvalidPurpose" => CertificateError::InvalidPurpose,
        "BadSignature" => CertificateError::BadSignature,
        "BadEncoding" => CertificateError::BadEncoding,
        "Revoked" => CertificateError::Revoked,
        _ => CertificateError::ApplicationVerificationFailure,
    };
    rustls::Error::InvalidCertificate(ce)
}

impl ServerCertVerifier for RecordingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let chain: Vec<CertificateDer<'static>> = std::iter::once(end_entity)
            .chain(intermediates.iter())
            .map(|c| c.clone().into_owned())
            .collect();
        self.record(|s| s.chain = chain.clone());
        // rustls hands back the name the probe gave it; anything else is a bug, refuse.
        if ServerName::try_from(self.name.as_str()).ok().as_ref() != Some(server_name) {
            let detail = format!(
                "internal: handshake name {:?} is not the probed name {:?}",
                server_name.to_str(),
                self.name
            );
            self.record(|s| s.refusal = Some((Reason::HandshakeFailed, detail)));
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ));
        }
        let at = time::OffsetDateTime::from_unix_timestamp(now.as_secs().min(i64::MAX as u64) as i64)
            .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
        match verify_parsed(&self.roots, &chain, &self.name, at) {
            Ok(_) => {
                self.record(|s| s.verified = true);
                Ok(ServerCertVerified::assertion())
            }
            Err(r) => {
                let reason = Reason::from_code(r.reason).unwrap_or(Reason::BadCertificate);
                let detail = if reason == Reason::BadCertificate {
                    r.to_string()
                } else {
                    r.message.clone()
                };
                self.record(|s| s.refusal = Some((reason, detail)));
                Err(rustls_error(&r))
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
