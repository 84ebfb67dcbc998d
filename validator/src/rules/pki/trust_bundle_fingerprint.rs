//! `trust-bundle-fingerprint`: the bundle's fingerprint annotation and the worker profile agree with its content.

use super::*;

pub(super) const FINGERPRINT: &str = "trust-bundle-fingerprint";

pub(super) fn check_fingerprint(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = Vec::new();
    let mismatch = |obj: &Object, needle: &str, what: &str, recorded: &str, computed: &str| {
        Finding::object_at(FINGERPRINT, obj, needle, format!(
            "{} records {what} {recorded}, but the bundle it describes has nvcf-trust-bundle-v1 fingerprint {computed}; \
             workers that pin the recorded value will refuse the bundle; recompute it with `nvcf-validate fingerprint` (or \
             let the chart compute it) instead of copying it by hand",
            obj.display()
        ))
    };
    for b in bundles(g).into_iter().filter(|b| b.obj.kind == "ConfigMap") {
        let Ok(computed) = pki::fingerprint::bundle_fingerprint(&b.pem) else {
            continue;
        };
        let recorded = b
            .obj
            .annotations()
            .and_then(|a| a.get(FP_ANNOTATION))
            .and_then(Value::as_str);
        let contract = (b.obj.name == TRUST_BUNDLE || b.obj.name == WORKER_PROFILE) && !b.obj.prov.external;
        match recorded {
            Some(r) if r.trim() != computed => {
                out.push(mismatch(b.obj, FP_ANNOTATION, &format!("annotation {FP_ANNOTATION}:"), r, &computed));
            }
            None if contract && b.obj.name == TRUST_BUNDLE => out.push(Finding::object_at(FINGERPRINT, b.obj, "annotations", format!(
                "{} records no {FP_ANNOTATION} annotation; the contract requires it so workers and operators can pin the \
                 bundle; set it to {computed}",
                b.obj.display()
            ))),
            _ => {}
        }
        if b.obj.name == WORKER_PROFILE {
            let p = profile(b.obj).unwrap_or(Value::Null);
            match p.get("trustBundleFingerprint").and_then(Value::as_str) {
                Some(r) if r.trim() != computed => {
                    out.push(mismatch(b.obj, "trustBundleFingerprint", "profile.yaml trustBundleFingerprint", r, &computed))
                }
                None if contract => out.push(Finding::object_at(FINGERPRINT, b.obj, "profile.yaml", format!(
                    "{} profile.yaml has no trustBundleFingerprint; workers need it to pin the bundle; set it to {computed}",
                    b.obj.display()
                ))),
                _ => {}
            }
            // The profile must publish the same bundle as nvcf-trust-bundle.
            if let Some(tb) = g.get("", "ConfigMap", b.obj.namespace.as_deref(), TRUST_BUNDLE) {
                let theirs = tb
                    .str_at("/data/ca.crt")
                    .and_then(|p| pki::fingerprint::bundle_fingerprint(p.as_bytes()).ok());
                if let Some(theirs) = theirs.filter(|t| *t != computed) {
                    out.push(Finding::object_at(FINGERPRINT, b.obj, "trustBundle", format!(
                        "{} publishes a trust bundle with fingerprint {computed}, but {} holds {theirs}; workers registered \
                         from the profile would trust different CAs than the published bundle; render both from the same PEM",
                        b.obj.display(),
                        tb.display()
                    )));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn fingerprint_findings_name_both_values() {
        let f = run(FINGERPRINT, &fixture("fires-trust-bundle-fingerprint-stale-annotation"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        let fp_ab = crate::pki::fingerprint::bundle_fingerprint(
            format!(
                "{}{}",
                std::fs::read_to_string(fixture_dir().join("certs/root-a.pem")).unwrap(),
                std::fs::read_to_string(fixture_dir().join("certs/root-b.pem")).unwrap()
            )
            .as_bytes(),
        )
        .unwrap();
        assert!(
            f[0].message
                .contains(&format!("nvcf-trust-bundle-v1 fingerprint {fp_ab}")),
            "{}",
            f[0].message
        );
        let f = run(FINGERPRINT, &fixture("fires-trust-bundle-fingerprint-profile-differs"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("but ConfigMap nvcf/nvcf-trust-bundle holds"),
            "{}",
            f[0].message
        );
    }
}
