//! The `nvcf-trust-bundle-v1` fingerprint of a trust bundle (facts.md):
//!
//! 1. decode the PEM; every block must be `CERTIFICATE` and parse as X.509 (else: error);
//! 2. SHA-256 of each certificate's DER as 64 lowercase hex characters;
//! 3. deduplicate and sort as strings;
//! 4. text: the line `nvcf-trust-bundle-v1`, then one hash per line, every line ending in `\n`;
//! 5. SHA-256 of that text, as `sha256:` + lowercase hex. Zero certificates: error.
//!
//! The fingerprint is independent of certificate order, duplicates and text between blocks, and
//! changes with any certificate added or removed.

use super::PemError;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

pub const ALGORITHM: &str = "nvcf-trust-bundle-v1";

/// The fingerprint of a PEM bundle, `sha256:<64 hex>`.
pub fn bundle_fingerprint(pem: &[u8]) -> Result<String, PemError> {
    let certs = super::parse_bundle(pem)?;
    Ok(fingerprint_of_ders(certs.iter().map(|c| c.as_ref())))
}

/// The fingerprint of already decoded certificates (callers must have refused non-certificate
/// blocks and an empty list themselves; `parse_bundle` does both).
pub fn fingerprint_of_ders<'a>(ders: impl IntoIterator<Item = &'a [u8]>) -> String {
    let hashes: BTreeSet<String> = ders.into_iter().map(|d| hex::encode(Sha256::digest(d))).collect();
    let mut text = String::with_capacity(21 + 65 * hashes.len());
    text.push_str(ALGORITHM);
    text.push('\n');
    for h in &hashes {
        text.push_str(h);
        text.push('\n');
    }
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// True when `s` has the shape of a fingerprint (`sha256:` + 64 lowercase hex).
pub fn is_well_formed(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::testcerts;

    #[test]
    fn order_duplicates_and_interleaved_text_do_not_matter() {
        let a = testcerts::root("A");
        let b = testcerts::root("B");
        let ab = bundle_fingerprint(format!("{}{}", a.pem, b.pem).as_bytes()).unwrap();
        let ba = bundle_fingerprint(format!("# b\n{}\n# a\n{}{}", b.pem, a.pem, b.pem).as_bytes()).unwrap();
        assert_eq!(ab, ba);
        assert!(is_well_formed(&ab), "{ab}");
        let only_a = bundle_fingerprint(a.pem.as_bytes()).unwrap();
        assert_ne!(ab, only_a);
    }

    #[test]
    fn matches_the_algorithm_text_computed_by_hand() {
        let a = testcerts::root("A");
        let der = crate::pki::parse_bundle(a.pem.as_bytes()).unwrap().remove(0);
        let h = hex::encode(Sha256::digest(der.as_ref()));
        let expected = format!(
            "sha256:{}",
            hex::encode(Sha256::digest(format!("nvcf-trust-bundle-v1\n{h}\n")))
        );
        assert_eq!(bundle_fingerprint(a.pem.as_bytes()).unwrap(), expected);
    }

    #[test]
    fn refuses_keys_and_empty_bundles() {
        let a = testcerts::root("A");
        let key = testcerts::throwaway_key_pem();
        assert!(bundle_fingerprint(format!("{}{key}", a.pem).as_bytes())
            .unwrap_err()
            .is_private_key());
        assert_eq!(bundle_fingerprint(b"\n").unwrap_err(), PemError::NoCertificates);
        assert!(!is_well_formed("sha256:ABC"));
    }
}
