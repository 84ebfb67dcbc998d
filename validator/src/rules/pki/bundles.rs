//! The trust bundles the stack publishes (the ConfigMap and the worker profile), shared by the bundle rules.

use super::*;

pub(super) struct Bundle<'a> {
    pub(super) obj: &'a Object,
    /// Where in the object (`key ca.crt`, `profile.yaml trustBundle`, `spec.vault.caBundle`).
    pub(super) place: &'static str,
    pub(super) needle: &'static str,
    pub(super) pem: Vec<u8>,
}

pub(crate) fn profile(cm: &Object) -> Option<Value> {
    crate::yaml::value(cm.str_at("/data/profile.yaml")?)
        .ok()
        .filter(Value::is_object)
}

pub(crate) fn is_bundle_configmap(o: &Object) -> bool {
    o.kind == "ConfigMap"
        && o.group().is_empty()
        && (o.name == TRUST_BUNDLE || o.annotations().is_some_and(|a| a.contains_key(FP_ANNOTATION)))
        && o.name != WORKER_PROFILE
}

pub(super) fn bundles(g: &Graph) -> Vec<Bundle<'_>> {
    let mut out = Vec::new();
    for o in &g.objects {
        if is_bundle_configmap(o) {
            if let Some(pem) = o.str_at("/data/ca.crt") {
                out.push(Bundle {
                    obj: o,
                    place: "key ca.crt",
                    needle: "ca.crt",
                    pem: pem.as_bytes().to_vec(),
                });
            } else if !o.prov.external {
                out.push(Bundle {
                    obj: o,
                    place: "key ca.crt (missing)",
                    needle: "data",
                    pem: Vec::new(),
                });
            }
        } else if o.kind == "ConfigMap" && o.name == WORKER_PROFILE {
            match profile(o) {
                Some(p) => {
                    let pem = p.get("trustBundle").and_then(Value::as_str).unwrap_or("");
                    out.push(Bundle {
                        obj: o,
                        place: "profile.yaml trustBundle",
                        needle: "trustBundle",
                        pem: pem.as_bytes().to_vec(),
                    });
                }
                // A profile workers cannot read gives them no bundle: judged as an empty one.
                None if !o.prov.external => out.push(Bundle {
                    obj: o,
                    place: "profile.yaml (missing, or not a YAML mapping)",
                    needle: "profile.yaml",
                    pem: Vec::new(),
                }),
                None => {}
            }
        } else if is_issuer(o) {
            if let Some(b) = o.str_at("/spec/vault/caBundle").filter(|b| !b.trim().is_empty()) {
                // Not base64 of PEM: judged as-is, so it is reported as holding no certificate.
                let pem = pki::pem_text_of(b).unwrap_or_else(|| b.as_bytes().to_vec());
                out.push(Bundle {
                    obj: o,
                    place: "spec.vault.caBundle",
                    needle: "caBundle",
                    pem,
                });
            }
        }
    }
    out
}
