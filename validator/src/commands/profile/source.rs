//! What a worker needs from one rendered environment: the published trust bundle's roots and
//! the router's advertised dial addresses, read from the objects the gate judged (the
//! `nvcf-trust-bundle` ConfigMap and the router's own flags), cross-checked with the
//! `nvcf-worker-profile` ConfigMap. Anything missing, ambiguous or inconsistent is an error:
//! a profile is never written from a guess.

use crate::graph::{Graph, Object};
use crate::pki;
use crate::router;
use crate::rules::pki::{is_trust_bundle, is_worker_profile, FP_ANNOTATION};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::Path;

/// Annotation (or label) on the trust-bundle ConfigMap saying its content is example material
/// (the managed-PKI work marks the committed stand-in with it). Any value but `"false"` counts.
pub const EXAMPLE_MARKER: &str = "nvcf.io/example-material";

/// The worker hand-off of one environment.
#[derive(Debug, Clone)]
pub struct Material {
    /// The bundle's root certificates (self-issued CA certificates), DER, in bundle order.
    pub roots: Vec<Vec<u8>>,
    /// How many certificates of the published bundle are not roots (left out of the profile).
    pub non_roots: usize,
    /// The published bundle's annotation (all certificates, roots or not).
    pub published_fingerprint: String,
    /// `--reverse-tunnel-pylon-dial-addr`: host:port of the router's reverse QUIC tunnel.
    pub quic_dial: String,
    /// `--grpc-pylon-dial-addr`: `https://host:port` of the worker gRPC TLS endpoint.
    pub grpc_dial: String,
    /// The names the router's pods advertise (SNI on QUIC, :authority on gRPC).
    pub advertised: Vec<String>,
}

fn single<'g>(g: &'g Graph, what: &str, pred: impl Fn(&Object) -> bool) -> Result<&'g Object, String> {
    let found: Vec<&Object> = g.objects.iter().filter(|o| !o.prov.external && pred(o)).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "environment {} renders no {what}: is nvcf-pki installed in it (and rendered)?",
            g.environment
        )),
        many => Err(format!(
            "environment {} renders {} {what}s ({}): a profile carries one",
            g.environment,
            many.len(),
            many.iter().map(|o| o.display()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The one value every router workload gives `flag`; an error when they disagree or none does.
fn one_flag(routers: &[router::RouterWorkload<'_>], flag: &str, env: &str) -> Result<String, String> {
    let values: BTreeSet<&str> = routers.iter().filter_map(|r| r.flag(flag)).collect();
    match values.len() {
        1 => Ok(values.into_iter().next().unwrap_or_default().to_string()),
        0 => Err(format!("environment {env}: no router workload passes {flag}")),
        _ => Err(format!(
            "environment {env}: router workloads pass different {flag} values ({}); a profile carries one address",
            values.into_iter().collect::<Vec<_>>().join(", ")
        )),
    }
}

fn is_marked_example(o: &Object) -> bool {
    ["/metadata/annotations", "/metadata/labels"].iter().any(|p| {
        o.body
            .pointer(p)
            .and_then(|m| m.get(EXAMPLE_MARKER))
            .is_some_and(|v| v.as_str() != Some("false"))
    })
}

/// Largest example file read (certificates are a few KiB), and the most files read.
const MAX_EXAMPLE_FILE: u64 = 1 << 20;
const MAX_EXAMPLE_FILES: usize = 256;

/// SHA-256 (hex) of every certificate in the PEM files under `<stack>/examples/` (the repository's
/// committed example material). Unreadable or non-certificate files are skipped: this list only
/// ever adds refusals.
pub fn example_certificates(stack_dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let dir = stack_dir.join("examples");
    for e in walkdir::WalkDir::new(&dir)
        .max_depth(4)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| e.path().extension().is_some_and(|x| x == "pem" || x == "crt"))
        .take(MAX_EXAMPLE_FILES)
    {
        if e.metadata().map_or(true, |m| m.len() > MAX_EXAMPLE_FILE) {
            continue;
        }
        let Ok(bytes) = std::fs::read(e.path()) else { continue };
        let Ok(blocks) = pki::blocks(&bytes) else { continue };
        for b in blocks {
            if let Some(Ok(der)) = b.der {
                out.insert(hex::encode(Sha256::digest(&der)));
            }
        }
    }
    out
}

/// Read the hand-off from `g`. `examples`: hashes of committed example certificates.
pub fn read(g: &Graph, examples: &BTreeSet<String>) -> Result<Material, String> {
    let env = g.environment.as_str();
    let bundle = single(g, "trust-bundle ConfigMap (nvcf-trust-bundle)", is_trust_bundle)?;
    let pem = bundle
        .str_at("/data/ca.crt")
        .ok_or_else(|| format!("{}: no data key ca.crt", bundle.display()))?;
    let certs = pki::parse_bundle(pem.as_bytes()).map_err(|e| format!("{}: ca.crt: {e}", bundle.display()))?;
    let computed = pki::fingerprint::fingerprint_of_ders(certs.iter().map(|c| c.as_ref()));
    let published = bundle
        .annotations()
        .and_then(|a| a.get(FP_ANNOTATION))
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{}: no {FP_ANNOTATION} annotation", bundle.display()))?;
    if published != computed {
        return Err(format!(
            "{}: annotation {FP_ANNOTATION} is {published} but ca.crt's fingerprint is {computed}",
            bundle.display()
        ));
    }
    if is_marked_example(bundle) {
        return Err(format!(
            "{}: the trust bundle is marked {EXAMPLE_MARKER}: example material, not this environment's CA; \
             workers given it would trust a key anyone can read. Publish the real root (docs/operations.md)",
            bundle.display()
        ));
    }
    let mut roots = Vec::new();
    let mut non_roots = 0;
    for c in &certs {
        let info = pki::describe(c.as_ref()).map_err(|e| format!("{}: ca.crt: {e}", bundle.display()))?;
        if examples.contains(&info.sha256) {
            return Err(format!(
                "{}: ca.crt holds {}, a certificate committed under examples/: example material, not the CA \
                 that signs this environment's router; workers given it refuse the real chain. Publish the \
                 real root (docs/operations.md)",
                bundle.display(),
                info.label()
            ));
        }
        if info.is_ca && self_issued(c.as_ref()) {
            roots.push(c.as_ref().to_vec());
        } else {
            non_roots += 1;
        }
    }
    if roots.is_empty() {
        return Err(format!(
            "{}: ca.crt holds no root certificate (no self-issued CA certificate): workers need the root",
            bundle.display()
        ));
    }

    let routers = router::routers(g);
    if routers.is_empty() {
        return Err(format!("environment {env} renders no router workload"));
    }
    let quic_dial = one_flag(&routers, router::REVERSE_TUNNEL_PYLON_DIAL_ADDR, env)?;
    let grpc_dial = one_flag(&routers, router::GRPC_PYLON_DIAL_ADDR, env)?;
    let mut advertised = BTreeSet::new();
    for r in &routers {
        advertised.extend(router::advertised_names(r));
    }

    // The worker-profile ConfigMap must say the same (it is what in-cluster consumers read).
    let wp = single(g, "worker-profile ConfigMap (nvcf-worker-profile)", is_worker_profile)?;
    let text = wp
        .str_at("/data/profile.yaml")
        .ok_or_else(|| format!("{}: no data key profile.yaml", wp.display()))?;
    let v = crate::yaml::value(text).map_err(|e| format!("{}: profile.yaml: {e}", wp.display()))?;
    for (key, want) in [
        ("quicDialAddress", quic_dial.as_str()),
        ("grpcDialAddress", grpc_dial.as_str()),
        ("trustBundleFingerprint", published),
    ] {
        let got = v.get(key).and_then(Value::as_str);
        if got != Some(want) {
            return Err(format!(
                "{}: profile.yaml {key} is {} but the environment publishes {want}",
                wp.display(),
                got.map_or("absent".to_string(), |g| format!("{g:?}"))
            ));
        }
    }
    Ok(Material {
        roots,
        non_roots,
        published_fingerprint: published.to_string(),
        quic_dial,
        grpc_dial,
        advertised: advertised.into_iter().collect(),
    })
}

/// Subject and issuer are the same name (a root, or a self-issued CA certificate).
fn self_issued(der: &[u8]) -> bool {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, c)| c.subject().as_raw() == c.issuer().as_raw())
        .unwrap_or(false)
}
