//! `certificate-issuer-resolves`: a Certificate's issuerRef names an issuer the stack renders or declares.

use super::*;

const ISSUER: &str = "certificate-issuer-resolves";

fn issuer_exists(g: &Graph, group: &str, kind: &str, ns: &str, name: &str) -> bool {
    g.get(group, kind, Some(ns), name).is_some() || g.get(group, kind, None, name).is_some()
}

pub(super) fn check_issuer_resolves(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = Vec::new();
    for c in g.objects.iter().filter(|o| is_certificate(o) && !o.prov.external) {
        let Some(name) = c.str_at("/spec/issuerRef/name").filter(|n| !n.is_empty()) else {
            out.push(Finding::object_at(
                ISSUER,
                c,
                "issuerRef",
                format!(
                    "{} has no spec.issuerRef.name; name the Issuer or ClusterIssuer that signs it",
                    c.display()
                ),
            ));
            continue;
        };
        let group = c
            .str_at("/spec/issuerRef/group")
            .filter(|s| !s.is_empty())
            .unwrap_or(CM);
        let kind = c
            .str_at("/spec/issuerRef/kind")
            .filter(|s| !s.is_empty())
            .unwrap_or("Issuer");
        if group == CM && kind != "Issuer" && kind != "ClusterIssuer" {
            out.push(Finding::object_at(
                ISSUER,
                c,
                "issuerRef",
                format!(
                    "{} has issuerRef kind {kind} in group {CM}; only Issuer and ClusterIssuer exist there",
                    c.display()
                ),
            ));
            continue;
        }
        if issuer_exists(g, group, kind, ns_of(c), name) {
            continue;
        }
        let other = if kind == "Issuer" { "ClusterIssuer" } else { "Issuer" };
        let hint = if group == CM && issuer_exists(g, CM, other, ns_of(c), name) {
            format!(" (a {other} {name} exists: set issuerRef.kind: {other})")
        } else if kind == "Issuer" {
            format!(" (an Issuer must be in the Certificate's namespace {})", ns_of(c))
        } else {
            String::new()
        };
        out.push(Finding::object_at(ISSUER, c, "issuerRef", format!(
            "{} is issued by {kind} {name} (group {group}), which the stack does not render and the policy does not declare \
             as external{hint}; cert-manager will leave it unissued. Render the issuer, fix issuerRef, or declare it under \
             `externals:` in the policy",
            c.display()
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    use crate::policy::Policy;

    use crate::testkit;

    #[test]
    fn issuer_hints_point_at_the_fix() {
        let f = run(ISSUER, &fixture("fires-certificate-issuer-resolves-issuer-kind"));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message
                .contains("(a ClusterIssuer openbao exists: set issuerRef.kind: ClusterIssuer)"),
            "{}",
            f[0].message
        );
        // A policy external resolves it.
        let p = Policy::parse(
            "externals:\n  - apiVersion: cert-manager.io/v1\n    kind: ClusterIssuer\n    name: corp-pki\n",
            "validator-policy.yaml",
            crate::rules::family_of,
        )
        .unwrap();
        let g = testkit::with_externals(
            testkit::graph("customer-issuer", &fixture("fires-certificate-issuer-resolves-missing")),
            &p,
        );
        assert!(run_graph(ISSUER, &g, &p).is_empty());
    }

    fn certificate(issuer_ref: &str) -> String {
        format!(
            "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {{name: router, namespace: nvcf}}\nspec:\n  secretName: router-tls\n  issuerRef: {issuer_ref}\n"
        )
    }

    #[test]
    fn an_issuer_of_another_group_is_looked_up_in_that_group() {
        // An out-of-tree issuer (its own group and kind) that the stack renders resolves.
        let external = "---\napiVersion: awspca.cert-manager.io/v1beta1\nkind: AWSPCAClusterIssuer\nmetadata: {name: corp-pca}\nspec: {arn: x}\n";
        let yaml = certificate("{group: awspca.cert-manager.io, kind: AWSPCAClusterIssuer, name: corp-pca}") + external;
        let f = run(ISSUER, &yaml);
        assert!(f.is_empty(), "{}", messages(&f));
        // Without it rendered, the finding names the kind and group, not a cert-manager kind error.
        let f = run(
            ISSUER,
            &certificate("{group: awspca.cert-manager.io, kind: AWSPCAClusterIssuer, name: corp-pca}"),
        );
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message
                .contains("issued by AWSPCAClusterIssuer corp-pca (group awspca.cert-manager.io)"),
            "{}",
            f[0].message
        );
        // An empty group is cert-manager's.
        let issuer = "---\napiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: ca, namespace: nvcf}\nspec: {ca: {secretName: ca}}\n";
        let f = run(ISSUER, &(certificate("{group: \"\", name: ca}") + issuer));
        assert!(f.is_empty(), "{}", messages(&f));
    }

    #[test]
    fn a_kind_cert_manager_does_not_have_is_named() {
        let f = run(
            ISSUER,
            &certificate("{group: cert-manager.io, kind: CertificateIssuer, name: openbao}"),
        );
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains(
                "has issuerRef kind CertificateIssuer in group cert-manager.io; only Issuer and ClusterIssuer"
            ),
            "{}",
            f[0].message
        );
    }
}
