//! Rule family: pki. Certificates workers verify, trust bundles they anchor in, and TLS material
//! the router must reload in place. Names are matched with X.509 rules as rustls-webpki applies
//! them (`crate::pki::names`); real certificates (bundles, a pre-created Secret's public chain)
//! go through the same strict parser as `nvcf-validate fingerprint` and `cert verify`.
//!
//! Shared model, built per check from the graph:
//! - `RouterWorkload` (`crate::router`): a workload container that passes the router's contract
//!   flags.
//! - `Identity`: what a TLS Secret will hold — the cert-manager Certificate that writes it (names
//!   on paper) or a public chain given in a Secret's `tls.crt` (a real certificate). Unknown
//!   Secrets (customer-created, no chain given) yield no identity and no finding.
//!
//! One file per rule (its check and unit tests) with its explain text beside it as markdown; the
//! identity model and small readers are here, mounts, bundles and listeners in their own files.

pub(crate) mod bundles;
mod certificate_issuer_resolves;
mod certificate_renewal_window;
mod certificate_server_auth;
mod chain_anchored_in_bundle;
mod example_material_confined;
mod listeners;
pub(crate) mod mounts;
mod router_identity;
mod san_covers_advertised_name;
mod tls_mount_reloadable;
mod tls_paths_consistent;
mod trust_bundle_fingerprint;
mod trust_bundle_valid;
mod vault_issuer_secure;
mod vault_token_static;
use bundles::*;
use listeners::*;
use mounts::*;

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use crate::pki::{self, names, CertInfo};
use crate::router::{
    RouterWorkload, ADVERTISED_HOSTNAME_TEMPLATE as F_TEMPLATE, GRPC_PYLON_DIAL_ADDR as F_GRPC_DIAL,
    TLS_CERT_PATH as F_CERT, TLS_KEY_PATH as F_KEY,
};
use rustls_pki_types::CertificateDer;
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::IpAddr;

pub static RULES: &[Rule] = &[
    Rule {
        id: "san-covers-advertised-name",
        family: "pki",
        severity: Severity::Error,
        summary:
            "an SNI name workers will present (advertised hostname expansions, gRPC dial host where TLS ends at the \
                  router, TLS/HTTPS listener hostnames) is not covered by the serving Certificate's SANs (X.509 rules)",
        explain: include_str!("san-covers-advertised-name.md"),
        scope: Scope::Objects,
        check: san_covers_advertised_name::check_san,
    },
    Rule {
        id: "certificate-server-auth",
        family: "pki",
        severity: Severity::Error,
        summary:
            "a serving Certificate lacks `server auth` usage, or its key algorithm/CN/names/duration cannot be issued \
                  by the OpenBao role that signs it",
        explain: include_str!("certificate-server-auth.md"),
        scope: Scope::Objects,
        check: certificate_server_auth::check_server_auth,
    },
    Rule {
        id: "certificate-issuer-resolves",
        family: "pki",
        severity: Severity::Error,
        summary: "an issuerRef names no Issuer/ClusterIssuer in the stack and none is declared external",
        explain: include_str!("certificate-issuer-resolves.md"),
        scope: Scope::Objects,
        check: certificate_issuer_resolves::check_issuer_resolves,
    },
    Rule {
        id: "certificate-renewal-window",
        family: "pki",
        severity: Severity::Error,
        summary: "a Certificate's duration is under 1h, its renewBefore under 5m, or renewBefore is not shorter than \
                  its duration (cert-manager refuses it)",
        explain: include_str!("certificate-renewal-window.md"),
        scope: Scope::Objects,
        check: certificate_renewal_window::check_renewal_window,
    },
    Rule {
        id: "vault-issuer-secure",
        family: "pki",
        severity: Severity::Error,
        summary: "a Vault issuer is not https, has no CA bundle, does not use a `/sign/` path, or authenticates with \
                  something other than a ServiceAccount (a static token is vault-token-static's finding)",
        explain: include_str!("vault-issuer-secure.md"),
        scope: Scope::Objects,
        check: vault_issuer_secure::check_vault,
    },
    Rule {
        id: "vault-token-static",
        family: "pki",
        severity: Severity::Error,
        summary: "something authenticates to OpenBao/Vault with a static token from a Secret, env, script or values \
                  (BAO_TOKEN, VAULT_TOKEN, tokenSecretRef, a mounted token file); never waived when required, a warning \
                  when optional (one-time bootstrap)",
        explain: include_str!("vault-token-static.md"),
        scope: Scope::StateAndObjects,
        check: vault_token_static::check_token,
    },
    Rule {
        id: "trust-bundle-valid",
        family: "pki",
        severity: Severity::Error,
        summary:
            "a trust bundle is empty, holds anything but CERTIFICATE blocks (a private key above all), or holds a \
                  non-CA or expired certificate; duplicates and not-yet-valid CAs are warnings",
        explain: include_str!("trust-bundle-valid.md"),
        scope: Scope::Objects,
        check: trust_bundle_valid::check_bundle,
    },
    Rule {
        id: "trust-bundle-fingerprint",
        family: "pki",
        severity: Severity::Error,
        summary: "a recorded fingerprint differs from `nvcf-trust-bundle-v1` of the bundle it describes",
        explain: include_str!("trust-bundle-fingerprint.md"),
        scope: Scope::Objects,
        check: trust_bundle_fingerprint::check_fingerprint,
    },
    Rule {
        id: "chain-anchored-in-bundle",
        family: "pki",
        severity: Severity::Error,
        summary: "a serving certificate workers verify by the published bundle (router Secret, worker gRPC listener) \
                  does not verify to it with serverAuth (rustls-webpki, a Secret's or the policy's chain), or is issued \
                  from a self-signed issuer",
        explain: include_str!("chain-anchored-in-bundle.md"),
        scope: Scope::Objects,
        check: chain_anchored_in_bundle::check_anchored,
    },
    Rule {
        id: "example-material-confined",
        family: "pki",
        severity: Severity::Error,
        summary: "a committed example certificate (examples/pki) is published or used in an environment not marked \
                  as an example (nvcf.io/example-material: allowed)",
        explain: include_str!("example-material-confined.md"),
        scope: Scope::Objects,
        check: example_material_confined::check_examples,
    },
    Rule {
        id: "tls-mount-reloadable",
        family: "pki",
        severity: Severity::Error,
        summary:
            "a server's TLS Secret is mounted with subPath, via env, cert and key from different volumes, or the pod \
                  template carries a checksum of it",
        explain: include_str!("tls-mount-reloadable.md"),
        scope: Scope::Objects,
        check: tls_mount_reloadable::check_reloadable,
    },
    Rule {
        id: "tls-paths-consistent",
        family: "pki",
        severity: Severity::Error,
        summary: "`--tls-cert-path`/`--tls-key-path` are half-set or point outside a mounted TLS volume",
        explain: include_str!("tls-paths-consistent.md"),
        scope: Scope::Objects,
        check: tls_paths_consistent::check_paths,
    },
];

const CM: &str = "cert-manager.io";
const GW: &str = "gateway.networking.k8s.io";
pub(crate) const FP_ANNOTATION: &str = "nvcf.io/trust-bundle-fingerprint";
const TRUST_BUNDLE: &str = "nvcf-trust-bundle";
pub(crate) const WORKER_PROFILE: &str = "nvcf-worker-profile";
pub(crate) const ROLE_CONFIGMAP: &str = "openbao-pki-role";
/// Label naming a contract object's role, so a contract ConfigMap is found by its role as well as
/// by its contract name (values `trust-bundle`, `worker-profile`, `openbao-pki-role`).
const CONTRACT_LABEL: &str = "nvcf.io/contract";

/// Whether `o` is the ConfigMap playing the contract role `role` (contract name `name`).
fn is_contract(o: &Object, name: &str, role: &str) -> bool {
    o.kind == "ConfigMap"
        && o.group().is_empty()
        && (o.name == name
            || o.body
                .pointer("/metadata/labels")
                .and_then(|l| l.get(CONTRACT_LABEL))
                .and_then(Value::as_str)
                == Some(role))
}

pub(crate) fn is_trust_bundle(o: &Object) -> bool {
    is_contract(o, TRUST_BUNDLE, "trust-bundle")
}

pub(crate) fn is_worker_profile(o: &Object) -> bool {
    is_contract(o, WORKER_PROFILE, "worker-profile")
}

fn is_role_configmap(o: &Object) -> bool {
    is_contract(o, ROLE_CONFIGMAP, "openbao-pki-role")
}

fn ns_of(o: &Object) -> &str {
    o.namespace.as_deref().unwrap_or("default")
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

fn items<'a>(v: &'a Value, ptr: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(ptr).and_then(Value::as_array).into_iter().flatten()
}

fn strings(v: &Value, ptr: &str) -> Vec<String> {
    items(v, ptr).filter_map(Value::as_str).map(str::to_string).collect()
}

/// A YAML boolean that may have been written as a string.
fn boolean(v: Option<&Value>) -> Option<bool> {
    match v? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// `[a, b, …]` for messages (bounded).
fn list(v: &[String]) -> String {
    const MAX: usize = 8;
    let mut s = v.iter().take(MAX).cloned().collect::<Vec<_>>().join(", ");
    if v.len() > MAX {
        s.push_str(&format!(", … ({} more)", v.len() - MAX));
    }
    format!("[{s}]")
}

fn is_certificate(o: &Object) -> bool {
    o.kind == "Certificate" && o.group() == CM
}

fn is_issuer(o: &Object) -> bool {
    (o.kind == "Issuer" || o.kind == "ClusterIssuer") && o.group() == CM
}

fn is_workload(o: &Object) -> bool {
    !o.prov.external && o.pod_spec().is_some()
}

enum Identity<'a> {
    /// A cert-manager Certificate (names on paper).
    Cert(&'a Object),
    /// A real leaf from a Secret's public `tls.crt`.
    Chain {
        secret: &'a Object,
        leaf: CertificateDer<'static>,
        info: CertInfo,
    },
}

impl Identity<'_> {
    fn dns_names(&self) -> Vec<String> {
        match self {
            Identity::Cert(c) => strings(&c.body, "/spec/dnsNames"),
            Identity::Chain { info, .. } => info.dns_sans.clone(),
        }
    }

    fn ip_names(&self) -> Vec<IpAddr> {
        match self {
            Identity::Cert(c) => strings(&c.body, "/spec/ipAddresses")
                .iter()
                .filter_map(|s| s.parse().ok())
                .collect(),
            Identity::Chain { info, .. } => info.ip_sans.clone(),
        }
    }

    /// X.509 coverage of a concrete name; a wildcard name `*.S` (a Gateway hostname that stands
    /// for every one-label name under S) is covered only by the same wildcard SAN.
    fn covers(&self, name: &str) -> bool {
        if name.starts_with("*.") {
            return self.dns_names().iter().any(|s| s.eq_ignore_ascii_case(name));
        }
        match self {
            Identity::Cert(_) => names::covers(&self.dns_names(), &self.ip_names(), name),
            Identity::Chain { leaf, .. } => names::cert_covers(leaf, name),
        }
    }

    fn describe(&self) -> String {
        let mut sans = self.dns_names();
        sans.extend(self.ip_names().iter().map(IpAddr::to_string));
        match self {
            Identity::Cert(c) => format!(
                "Certificate {}/{} {} {}",
                ns_of(c),
                c.name,
                if self.ip_names().is_empty() { "dnsNames" } else { "SANs" },
                list(&sans)
            ),
            Identity::Chain { secret, info, .. } => {
                format!(
                    "the tls.crt leaf `{}` of {} (subjectAltNames {})",
                    info.subject,
                    secret.display(),
                    list(&sans)
                )
            }
        }
    }
}

/// What the Secret `ns/name` will hold, if the stack says so.
fn identity<'a>(g: &'a Graph, ns: &str, secret: &str) -> Option<Identity<'a>> {
    if let Some(c) = g.objects.iter().find(|o| {
        is_certificate(o) && o.namespace.as_deref() == Some(ns) && o.str_at("/spec/secretName") == Some(secret)
    }) {
        return Some(Identity::Cert(c));
    }
    let s = g.get("", "Secret", Some(ns), secret)?;
    let raw = s.str_at("/data/tls.crt").or_else(|| s.str_at("/stringData/tls.crt"))?;
    let pem = pki::pem_text_of(raw)?;
    let leaf = pki::parse_bundle(&pem).ok()?.into_iter().next()?;
    let info = pki::describe(leaf.as_ref()).ok()?;
    Some(Identity::Chain { secret: s, leaf, info })
}

/// "`*.S` covers exactly one label" hint when a wildcard SAN sits above `name` at the wrong depth.
fn depth_hint(sans: &[String], name: &str) -> String {
    let lname = name.to_ascii_lowercase();
    for s in sans {
        if let Some(suffix) = s.to_ascii_lowercase().strip_prefix("*.") {
            if let Some(prefix) = lname.strip_suffix(&format!(".{suffix}")) {
                if prefix.contains('.') {
                    return format!(" ({s} covers exactly one label, not `{prefix}`)");
                }
            }
        }
    }
    String::new()
}

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;
