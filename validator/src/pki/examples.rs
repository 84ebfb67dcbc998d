//! Example material: the public certificates committed under `examples/pki/` so the repository's
//! environments render. No real CA signs with them (their keys were deleted when they were made),
//! so a bundle that anchors in one of them makes every worker fail with `UnknownIssuer`, and a
//! Secret chain that carries one was never issued for a real deployment.
//!
//! The list is the files themselves (one place, embedded at build time); a test fails when a PEM
//! is added to `examples/pki/` without being listed here.

use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// Annotation (on the `nvcf-trust-bundle` and `nvcf-worker-profile` ConfigMaps) that marks an
/// environment as an example, where example material is expected. The only accepted value is
/// [`ALLOWED`]. Rendered by `charts/nvcf-pki` from `exampleMaterial: true` (environment value
/// `pki.allowExampleMaterial`). Consumers that hand a profile to real workers refuse it.
pub const MARKER: &str = "nvcf.io/example-material";
pub const ALLOWED: &str = "allowed";

/// (repository path, PEM) of every committed example certificate file.
pub const FILES: &[(&str, &str)] = &[
    (
        "examples/pki/openbao-root-example.pem",
        include_str!("../../../examples/pki/openbao-root-example.pem"),
    ),
    (
        "examples/pki/customer-issuer-root.pem",
        include_str!("../../../examples/pki/customer-issuer-root.pem"),
    ),
    (
        "examples/pki/customer-secret-root.pem",
        include_str!("../../../examples/pki/customer-secret-root.pem"),
    ),
    (
        "examples/pki/customer-secret-request-router-tls.pem",
        include_str!("../../../examples/pki/customer-secret-request-router-tls.pem"),
    ),
    (
        "examples/pki/customer-secret-worker-grpc-tls.pem",
        include_str!("../../../examples/pki/customer-secret-worker-grpc-tls.pem"),
    ),
    (
        "examples/pki/customer-secret-llm-invocation-tls.pem",
        include_str!("../../../examples/pki/customer-secret-llm-invocation-tls.pem"),
    ),
];

/// (SHA-256 of the DER, lowercase hex; repository path) of every example certificate.
fn digests() -> &'static [(String, &'static str)] {
    static D: OnceLock<Vec<(String, &'static str)>> = OnceLock::new();
    D.get_or_init(|| {
        let mut out = Vec::new();
        for (path, pem) in FILES {
            // The files are ours and parsed by a unit test; an unparsable one contributes nothing.
            for der in super::parse_bundle(pem.as_bytes()).unwrap_or_default() {
                out.push((hex::encode(Sha256::digest(der.as_ref())), *path));
            }
        }
        out
    })
}

/// The example file a certificate (by the SHA-256 of its DER) comes from.
pub fn example_file(sha256_hex: &str) -> Option<&'static str> {
    digests().iter().find(|(d, _)| d == sha256_hex).map(|(_, p)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_example_pem_is_listed_and_parses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/pki");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".pem"))
            .map(|n| format!("examples/pki/{n}"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(
            on_disk, listed,
            "list every examples/pki/*.pem in pki/examples.rs FILES"
        );
        for (path, pem) in FILES {
            assert!(
                !super::super::parse_bundle(pem.as_bytes()).unwrap().is_empty(),
                "{path}"
            );
        }
        assert_eq!(digests().len(), FILES.len());
    }

    #[test]
    fn a_certificate_made_now_is_not_example_material() {
        let root = super::super::testcerts::root("Not An Example");
        let der = super::super::parse_bundle(root.pem.as_bytes()).unwrap();
        assert_eq!(example_file(&hex::encode(Sha256::digest(der[0].as_ref()))), None);
        let ex = super::super::parse_bundle(FILES[0].1.as_bytes()).unwrap();
        assert_eq!(
            example_file(&hex::encode(Sha256::digest(ex[0].as_ref()))),
            Some("examples/pki/openbao-root-example.pem")
        );
    }
}
