//! `example-material-confined`: the example certificates committed under `examples/pki/` appear
//! only in environments explicitly marked as examples (annotation `nvcf.io/example-material:
//! allowed` on the published trust bundle). Checked wherever a certificate reaches workers or
//! stands for a serving identity: the trust bundle, the worker profile, a Vault issuer's caBundle,
//! and every Secret's `tls.crt` chain (rendered, or declared in the policy).

use super::*;
use crate::pki::examples;
use sha2::{Digest, Sha256};

pub(super) const EXAMPLE: &str = "example-material-confined";

/// Whether the environment is marked as an example: its published trust bundle or worker profile
/// (the chart renders the marker on both) carries the marker with the value `allowed`.
pub(crate) fn marked_as_example(g: &Graph) -> bool {
    g.objects
        .iter()
        .filter(|o| is_bundle_configmap(o) || is_worker_profile(o))
        .any(|o| {
            o.annotations()
                .and_then(|a| a.get(examples::MARKER))
                .and_then(Value::as_str)
                == Some(examples::ALLOWED)
        })
}

/// (index, example file) of each example certificate in `pem` (parse errors: other rules').
fn example_certs(pem: &[u8]) -> Vec<(usize, &'static str)> {
    pki::parse_bundle(pem)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(i, d)| examples::example_file(&hex::encode(Sha256::digest(d.as_ref()))).map(|f| (i + 1, f)))
        .collect()
}

pub(super) fn check_examples(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    if marked_as_example(g) {
        return Vec::new();
    }
    let mut places: Vec<(&Object, String, &str, Vec<u8>)> = bundles(g)
        .into_iter()
        .map(|b| (b.obj, b.place.to_string(), b.needle, b.pem))
        .collect();
    for s in g.objects.iter().filter(|o| o.kind == "Secret" && o.group().is_empty()) {
        if let Some(pem) = s
            .str_at("/data/tls.crt")
            .or_else(|| s.str_at("/stringData/tls.crt"))
            .and_then(pki::pem_text_of)
        {
            places.push((s, "tls.crt".to_string(), "tls.crt", pem));
        }
    }
    let mut out = Vec::new();
    for (obj, place, needle, pem) in places {
        for (i, file) in example_certs(&pem) {
            out.push(
                Finding::object_at(
                    EXAMPLE,
                    obj,
                    needle,
                    format!(
                        "{} {place}: certificate {i} is the repository's example `{file}`, in environment `{}`, which \
                         is not marked as an example: no real CA signs with it, so workers anchored in it (or \
                         verifying it) fail with UnknownIssuer",
                        obj.display(),
                        ctx.environment
                    ),
                )
                .with_help(format!(
                    "publish your own CA (docs/pki.md: `nvcf-validate ca init`, then pki.trustBundleFile) and your own \
                     chains; only a demonstration environment may keep the examples, by setting \
                     pki.allowExampleMaterial: true (it renders {}: {} on the trust bundle and the worker profile)",
                    examples::MARKER,
                    examples::ALLOWED
                )),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_marker_must_say_allowed_and_sit_on_the_published_bundle() {
        let example = examples::FILES[0].1;
        let plain = bundle_yaml(example, None);
        let f = run(EXAMPLE, &plain);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("examples/pki/openbao-root-example.pem"),
            "{}",
            f[0].message
        );
        let marked = plain.replace(
            "  name: nvcf-trust-bundle\n",
            "  name: nvcf-trust-bundle\n  annotations: {nvcf.io/example-material: allowed}\n",
        );
        assert!(run(EXAMPLE, &marked).is_empty());
        let wrong_value = marked.replace(": allowed}", ": \"yes\"}");
        assert_eq!(run(EXAMPLE, &wrong_value).len(), 1);
        // A root made now is not example material.
        assert!(run(EXAMPLE, &bundle_yaml(&crate::pki::testcerts::root("Mine").pem, None)).is_empty());
    }

    /// A core Secret's `tls.crt` is judged; the same key under a ConfigMap (no bundle key) or
    /// under a `Secret` kind of another API group is not a served certificate.
    #[test]
    fn only_a_core_secret_serves_its_tls_crt() {
        let example = examples::FILES[0].1;
        let indented: String = example.lines().map(|l| format!("    {l}\n")).collect();
        let doc = |api: &str, kind: &str| {
            format!("apiVersion: {api}\nkind: {kind}\nmetadata: {{name: s, namespace: nvcf}}\nstringData:\n  tls.crt: |\n{indented}")
        };
        let f = run(EXAMPLE, &doc("v1", "Secret"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(run(EXAMPLE, &doc("v1", "ConfigMap")).is_empty());
        assert!(run(EXAMPLE, &doc("example.io/v1", "Secret")).is_empty());
    }
}
