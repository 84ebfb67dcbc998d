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
        let contract = (is_trust_bundle(b.obj) || is_worker_profile(b.obj)) && !b.obj.prov.external;
        match recorded {
            Some(r) if r.trim() != computed => {
                out.push(mismatch(b.obj, FP_ANNOTATION, &format!("annotation {FP_ANNOTATION}:"), r, &computed));
            }
            None if contract && is_trust_bundle(b.obj) => out.push(Finding::object_at(FINGERPRINT, b.obj, "annotations", format!(
                "{} records no {FP_ANNOTATION} annotation; the contract requires it so workers and operators can pin the \
                 bundle; set it to {computed}",
                b.obj.display()
            ))),
            _ => {}
        }
        if is_worker_profile(b.obj) {
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
            let ns = b.obj.namespace.as_deref();
            if let Some(tb) = g
                .of_kind("ConfigMap")
                .find(|o| o.namespace.as_deref() == ns && is_trust_bundle(o))
            {
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

    fn cert(name: &str) -> String {
        std::fs::read_to_string(fixture_dir().join(format!("certs/{name}.pem"))).unwrap()
    }

    fn fp(pem: &str) -> String {
        crate::pki::fingerprint::bundle_fingerprint(pem.as_bytes()).unwrap()
    }

    /// profile.yaml publishing `pem`, with `fields` (lines of YAML) before it.
    fn profile_text(pem: &str, fields: &str) -> String {
        let bundle: String = pem.lines().map(|l| format!("  {l}\n")).collect();
        format!("{fields}trustBundle: |\n{bundle}")
    }

    /// A worker profile ConfigMap (no annotation) holding `profile`.
    fn profile_yaml(profile: &str) -> String {
        let body: String = profile.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nvcf-worker-profile\ndata:\n  profile.yaml: |\n{body}"
        )
    }

    #[test]
    fn a_missing_fingerprint_is_owed_only_by_the_stacks_own_contract_objects() {
        let a = cert("root-a");
        let with_fp = profile_text(&a, &format!("trustBundleFingerprint: \"{}\"\n", fp(&a)));
        // The profile owes its field, not the annotation the trust bundle owes.
        let f = run(FINGERPRINT, &profile_yaml(&with_fp));
        assert!(f.is_empty(), "{}", messages(&f));
        let f = run(FINGERPRINT, &profile_yaml(&profile_text(&a, "")));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("profile.yaml has no trustBundleFingerprint"),
            "{}",
            f[0].message
        );
        // Declared external (the policy's externals, with their data): nothing is owed by them.
        let indent = |t: &str, n: usize| -> String { t.lines().map(|l| format!("{}{l}\n", " ".repeat(n))).collect() };
        let policy = crate::testkit::policy(&format!(
            "externals:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: nvcf-trust-bundle\n    namespace: nvcf\n    data:\n      ca.crt: |\n{}  - apiVersion: v1\n    kind: ConfigMap\n    name: nvcf-worker-profile\n    namespace: customer\n    data:\n      profile.yaml: |\n{}",
            indent(&a, 8),
            indent(&profile_text(&a, ""), 8)
        ));
        let g = crate::testkit::with_externals(crate::testkit::graph("e", ""), &policy);
        assert_eq!(g.objects.iter().filter(|o| o.prov.external).count(), 2);
        let f = run_graph(FINGERPRINT, &g, &policy);
        assert!(f.is_empty(), "{}", messages(&f));
    }

    /// The profile is compared with the trust bundle of its namespace, not with another ConfigMap
    /// there or a trust bundle elsewhere.
    #[test]
    fn the_profile_is_compared_with_the_trust_bundle_of_its_namespace() {
        let (a, b) = (cert("root-a"), cert("root-b"));
        let other_ca: String = b.lines().map(|l| format!("    {l}\n")).collect();
        let yaml = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: other-ca}}\ndata:\n  ca.crt: |\n{other_ca}---\n{}---\n{}",
            bundle_yaml(&a, Some(&fp(&a))),
            profile_yaml(&profile_text(&a, &format!("trustBundleFingerprint: \"{}\"\n", fp(&a))))
        );
        let f = run(FINGERPRINT, &yaml);
        assert!(f.is_empty(), "{}", messages(&f));
        let f = run(
            FINGERPRINT,
            &yaml.replace("name: other-ca", "name: other-ca, namespace: elsewhere"),
        );
        assert!(f.is_empty(), "{}", messages(&f));
    }
}
