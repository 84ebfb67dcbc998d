//! The trust bundle a probe verifies against: read once, parsed and fingerprinted by crate::pki
//! (the same strict parser as `fingerprint` and `cert verify`).

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;

use crate::pki::{self, PemError};

/// A bundle read from a file: its certificates and `nvcf-trust-bundle-v1` fingerprint.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub path: String,
    roots: RootCertStore,
    pub certs: Vec<CertificateDer<'static>>,
    /// `sha256:<hex>`; `None` when the bundle holds no certificate.
    pub fingerprint: Option<String>,
}

/// Why a bundle cannot be used at all (exit 2): unreadable, or not a bundle of certificates.
/// The message never contains block content (a pasted private key is named, not shown).
#[derive(Debug)]
pub struct BundleError(pub String);

pub fn load(path: &str) -> Result<Bundle, BundleError> {
    let bytes = std::fs::read(path).map_err(|e| BundleError(format!("cannot read bundle {path}: {e}")))?;
    parse(path, &bytes)
}

/// A bundle with no PEM block at all is accepted here as an EMPTY bundle: the probe refuses it
/// with the reason EmptyBundle (exit 1) instead of calling it unusable input.
pub fn parse(path: &str, pem: &[u8]) -> Result<Bundle, BundleError> {
    let certs = match pki::parse_bundle(pem) {
        Ok(c) => c,
        Err(PemError::NoCertificates) => vec![],
        Err(e) => return Err(BundleError(format!("bundle {path}: {e}"))),
    };
    let roots = if certs.is_empty() {
        RootCertStore::empty()
    } else {
        pki::verify::roots_store(pem).map_err(|e| BundleError(format!("bundle {path}: {e}")))?
    };
    let fingerprint =
        (!certs.is_empty()).then(|| pki::fingerprint::fingerprint_of_ders(certs.iter().map(|c| c.as_ref())));
    Ok(Bundle {
        path: path.to_string(),
        roots,
        certs,
        fingerprint,
    })
}

impl Bundle {
    /// A root store holding exactly the bundle's certificates (nothing else, ever).
    pub fn roots(&self) -> RootCertStore {
        self.roots.clone()
    }
}
