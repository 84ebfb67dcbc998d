//! `vault-issuer-secure`: a Vault/OpenBao issuer talks TLS to OpenBao and authenticates without a static token.

use super::*;

const VAULT: &str = "vault-issuer-secure";

pub(super) fn check_vault(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for iss in ctx.graph.objects.iter().filter(|o| is_issuer(o) && !o.prov.external) {
        let Some(v) = iss.at("/spec/vault") else { continue };
        let who = iss.display();
        let server = str_at(v, "/server").unwrap_or("");
        if !server.to_ascii_lowercase().starts_with("https://") {
            out.push(Finding::object_at(VAULT, iss, "server", format!(
                "{who} talks to Vault/OpenBao at `{server}`, not https: the CSR, the signed certificate and the \
                 ServiceAccount token cross the network in clear; set spec.vault.server to https://… and turn the OpenBao \
                 listener's TLS on"
            )));
        }
        let has_bundle = str_at(v, "/caBundle").is_some_and(|s| !s.trim().is_empty());
        let has_ref = v.pointer("/caBundleSecretRef").is_some_and(|r| !r.is_null());
        if !has_bundle && !has_ref {
            out.push(Finding::object_at(VAULT, iss, "vault:", format!(
                "{who} has neither caBundle nor caBundleSecretRef: cert-manager then trusts the system roots for the OpenBao \
                 listener instead of the stack's bootstrap CA; set caBundleSecretRef (or caBundle) to the CA that signed \
                 OpenBao's serving certificate"
            )));
        } else if has_bundle && has_ref {
            out.push(Finding::object_at(
                VAULT,
                iss,
                "caBundle",
                format!(
                "{who} sets both caBundle and caBundleSecretRef; cert-manager accepts only one: keep caBundleSecretRef"
            ),
            ));
        }
        let path = str_at(v, "/path").unwrap_or("");
        if !path.contains("/sign/") {
            out.push(Finding::object_at(VAULT, iss, "path", format!(
                "{who} uses path `{path}`, which is not a `<mount>/sign/<role>` path: cert-manager submits a CSR and needs \
                 the role-constrained sign endpoint (issue/ generates keys in OpenBao, sign-verbatim/ bypasses the role); \
                 set path: <intermediate mount>/sign/<role>"
            )));
        }
        let auth = v.get("auth");
        let sa = auth
            .and_then(|a| a.pointer("/kubernetes/serviceAccountRef/name"))
            .and_then(Value::as_str);
        // A static token (tokenSecretRef) is vault-token-static's finding: one cause, one finding.
        let static_token = auth.is_some_and(|a| a.get("tokenSecretRef").is_some_and(|t| !t.is_null()));
        if sa.is_none() && !static_token {
            let method = match auth {
                Some(a) if a.get("appRole").is_some() => "AppRole with a stored secret ID",
                Some(a) if a.pointer("/kubernetes/secretRef").is_some() => {
                    "a long-lived ServiceAccount token Secret (kubernetes.secretRef)"
                }
                Some(a) if a.get("clientCertificate").is_some() => "a client certificate stored in a Secret",
                _ => "no auth method",
            };
            out.push(Finding::object_at(VAULT, iss, "auth", format!(
                "{who} authenticates to OpenBao with {method}; use auth.kubernetes with serviceAccountRef (a short-lived, \
                 audience-bound token cert-manager requests for a dedicated ServiceAccount) and a Kubernetes auth role bound \
                 to it"
            )));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn vault_issuer_problems_are_each_reported() {
        let f = run(VAULT, &fixture("fires-vault-issuer-secure-http-token"));
        let all = messages(&f);
        assert_eq!(f.len(), 3, "{all}");
        for want in [
            "not https",
            "neither caBundle nor caBundleSecretRef",
            "not a `<mount>/sign/<role>` path",
        ] {
            assert!(all.contains(want), "missing `{want}` in\n{all}");
        }
        // The static token is reported once, by vault-token-static.
        let token = run(
            super::super::vault_token_static::TOKEN,
            &fixture("fires-vault-issuer-secure-http-token"),
        );
        assert_eq!(token.len(), 1, "{}", messages(&token));
    }

    /// A Vault issuer over https with a sign/ path: `vault` (YAML lines under `spec.vault:`, indented
    /// four spaces) completes it.
    fn issuer(api: &str, kind: &str, vault: &str) -> String {
        format!(
            "apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: openbao\nspec:\n  vault:\n    server: https://openbao.openbao.svc:8200\n    path: pki_int/sign/nvcf-router\n{vault}"
        )
    }

    const SA: &str =
        "    auth:\n      kubernetes:\n        role: cert-manager\n        serviceAccountRef: {name: openbao-issuer}\n";

    #[test]
    fn only_cert_manager_issuers_of_the_stack_are_judged() {
        // The same insecure `spec.vault` on a kind of another group is not a cert-manager issuer.
        let other = issuer(
            "vault.example.com/v1",
            "ClusterIssuer",
            "    server: http://openbao:8200\n",
        );
        assert!(run(VAULT, &other).is_empty());
        let f = run(
            VAULT,
            &issuer(
                "cert-manager.io/v1",
                "ClusterIssuer",
                "    server: http://openbao:8200\n",
            ),
        );
        assert!(!f.is_empty());
    }

    #[test]
    fn a_ca_bundle_secret_ref_counts_unless_it_is_null() {
        let with_ref = format!("    caBundleSecretRef: {{name: openbao-bootstrap-ca, key: ca.crt}}\n{SA}");
        let f = run(VAULT, &issuer("cert-manager.io/v1", "Issuer", &with_ref));
        assert!(f.is_empty(), "{}", messages(&f));
        let null_ref = format!("    caBundleSecretRef: null\n{SA}");
        let f = run(VAULT, &issuer("cert-manager.io/v1", "Issuer", &null_ref));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("neither caBundle nor caBundleSecretRef"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn each_auth_method_without_a_service_account_is_named() {
        let bundle = "    caBundleSecretRef: {name: openbao-bootstrap-ca, key: ca.crt}\n";
        for (auth, method) in [
            (
                "    auth:\n      appRole: {path: approle, roleId: x, secretRef: {name: s, key: k}}\n",
                "AppRole with a stored secret ID",
            ),
            (
                "    auth:\n      kubernetes: {role: r, secretRef: {name: sa-token, key: token}}\n",
                "a long-lived ServiceAccount token Secret (kubernetes.secretRef)",
            ),
            (
                "    auth:\n      clientCertificate: {secretName: client-cert}\n",
                "a client certificate stored in a Secret",
            ),
            ("    auth: {}\n", "no auth method"),
            ("", "no auth method"),
        ] {
            let f = run(
                VAULT,
                &issuer("cert-manager.io/v1", "Issuer", &format!("{bundle}{auth}")),
            );
            assert_eq!(f.len(), 1, "{auth}: {}", messages(&f));
            assert!(
                f[0].message
                    .contains(&format!("authenticates to OpenBao with {method};")),
                "{auth}: {}",
                f[0].message
            );
        }
    }
}
