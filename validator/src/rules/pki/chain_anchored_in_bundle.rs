//! `chain-anchored-in-bundle`: every serving certificate workers verify by the published bundle
//! (the router's TLS Secret, the Gateway listener certificate that terminates worker gRPC) can
//! verify against that bundle. A real chain (a Secret's `tls.crt`, rendered or declared in the
//! policy) goes through rustls-webpki exactly as a worker's client runs it (path to a bundle root,
//! validity, serverAuth); a Certificate on paper is judged by where its issuer's CA comes from: a
//! self-signed issuer (directly, or behind a CA issuer whose CA it minted) makes a root in the
//! cluster at issuance, which no bundle rendered before it can hold.

use super::*;

pub(super) const ANCHORED: &str = "chain-anchored-in-bundle";
/// CA issuers followed upwards before giving up (a loop or a long chain of CA issuers).
const MAX_ISSUER_HOPS: usize = 4;

/// A TLS Secret workers verify against the published bundle, and why.
pub(super) struct Guarded {
    pub(super) ns: String,
    pub(super) secret: String,
    pub(super) why: String,
}

/// The Secrets workers verify by bundle: each router's serving Secret (`--tls-cert-path`, QUIC
/// ends there) and the certificate of the Gateway listener that terminates its gRPC dial host.
pub(super) fn guarded(g: &Graph, routers: &[RouterWorkload<'_>]) -> Vec<Guarded> {
    let mut out: Vec<Guarded> = Vec::new();
    let mut push = |ns: &str, secret: &str, why: String| {
        if !out.iter().any(|x| x.ns == ns && x.secret == secret) {
            out.push(Guarded {
                ns: ns.to_string(),
                secret: secret.to_string(),
                why,
            });
        }
    };
    for r in routers {
        if let Some(s) = router_tls_secret(g, r) {
            push(
                ns_of(r.obj),
                &s,
                format!("the serving Secret of {} (--tls-cert-path)", r.describe()),
            );
        }
        let Some(host) = r.flag(F_GRPC_DIAL).and_then(https_host) else {
            continue;
        };
        if let Terminator::Listener { gw, listener } = grpc_terminator(g, &host) {
            let lname = listener.get("name").and_then(Value::as_str).unwrap_or("?");
            for cref in items(listener, "/tls/certificateRefs") {
                if cref.get("kind").and_then(Value::as_str).unwrap_or("Secret") != "Secret" {
                    continue;
                }
                let Some(name) = cref.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let ns = cref.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(gw));
                push(
                    ns,
                    name,
                    format!(
                        "the certificate of listener `{lname}` of {} (TLS for the gRPC dial host {host})",
                        gw.display()
                    ),
                );
            }
        }
    }
    out
}

/// The published trust bundles (ConfigMaps) that parse, with their PEM.
fn published(g: &Graph) -> Vec<(&Object, Vec<u8>)> {
    g.objects
        .iter()
        .filter(|o| is_bundle_configmap(o))
        .filter_map(|o| {
            let pem = o.str_at("/data/ca.crt")?.as_bytes().to_vec();
            pki::parse_bundle(&pem).ok()?; // unusable bundles are trust-bundle-valid's finding
            Some((o, pem))
        })
        .collect()
}

fn issuer_of<'a>(g: &'a Graph, cert: &Object) -> Option<&'a Object> {
    let kind = cert.str_at("/spec/issuerRef/kind").unwrap_or("Issuer");
    let group = cert.str_at("/spec/issuerRef/group").unwrap_or(CM);
    let name = cert.str_at("/spec/issuerRef/name")?;
    if group != CM {
        return None;
    }
    match kind {
        "Issuer" => g.get(CM, "Issuer", Some(ns_of(cert)), name),
        "ClusterIssuer" => g.get(CM, "ClusterIssuer", None, name),
        _ => None,
    }
}

/// The self-signed issuer at the top of `cert`'s issuance, with the path to it, if any.
fn self_signed_origin<'a>(g: &'a Graph, cert: &'a Object) -> Option<Vec<&'a Object>> {
    let mut path = Vec::new();
    let mut cur = cert;
    for _ in 0..MAX_ISSUER_HOPS {
        let issuer = issuer_of(g, cur)?;
        path.push(issuer);
        if issuer.at("/spec/selfSigned").is_some() {
            return Some(path);
        }
        let ca_secret = issuer.str_at("/spec/ca/secretName")?;
        // An Issuer reads its namespace; a ClusterIssuer cert-manager's cluster resource
        // namespace, which the render does not say: any Certificate writing that name.
        let next = g.objects.iter().find(|o| {
            is_certificate(o)
                && o.str_at("/spec/secretName") == Some(ca_secret)
                && (issuer.kind == "ClusterIssuer" || o.namespace == issuer.namespace)
        })?;
        path.push(next);
        cur = next;
    }
    None
}

pub(super) fn check_anchored(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = Vec::new();
    let bundles = published(g);
    for gd in guarded(g, ctx.routers()) {
        if let Some(cert) = g.objects.iter().find(|o| {
            is_certificate(o)
                && o.namespace.as_deref() == Some(gd.ns.as_str())
                && o.str_at("/spec/secretName") == Some(gd.secret.as_str())
        }) {
            if let Some(path) = self_signed_origin(g, cert) {
                let chain: Vec<String> = path.iter().map(|o| o.display()).collect();
                out.push(
                    Finding::object_at(
                        ANCHORED,
                        cert,
                        "issuerRef",
                        format!(
                            "{} writes {}/{}, {}, but its issuance ends in a self-signed issuer ({}): the root is \
                             minted in the cluster when cert-manager first issues it, so no trust bundle rendered \
                             before that can hold it, and workers verifying by the published bundle fail with \
                             UnknownIssuer",
                            cert.display(),
                            gd.ns,
                            gd.secret,
                            gd.why,
                            chain.join(" -> ")
                        ),
                    )
                    .with_help(
                        "issue it from the CA the bundle publishes (the OpenBao ClusterIssuer in mode managed, the \
                         customer's issuer in mode issuer); self-signed issuers are for OpenBao's own bootstrap \
                         listener only",
                    ),
                );
            }
            continue;
        }
        let Some(secret) = g.get("", "Secret", Some(&gd.ns), &gd.secret) else {
            continue; // customer-created, no chain given: nothing to judge
        };
        let Some(raw) = secret
            .str_at("/data/tls.crt")
            .or_else(|| secret.str_at("/stringData/tls.crt"))
        else {
            continue;
        };
        let Some(chain) = pki::pem_text_of(raw).and_then(|p| pki::parse_bundle(&p).ok()) else {
            continue; // an unreadable chain is san-covers-advertised-name's "cannot judge"
        };
        for (b, pem) in &bundles {
            let Ok(roots) = pki::verify::roots_store(pem) else {
                continue;
            };
            if let Err(r) = pki::verify::verify_anchor(&roots, &chain, ctx.now) {
                let fp = pki::fingerprint::bundle_fingerprint(pem).unwrap_or_default();
                out.push(
                    Finding::object_at(
                        ANCHORED,
                        secret,
                        "tls.crt",
                        format!(
                            "the tls.crt chain of {}, {}, does not verify against the published bundle {} ({fp}) as \
                             workers verify it (rustls-webpki, serverAuth): {r}",
                            secret.display(),
                            gd.why,
                            b.display()
                        ),
                    )
                    .with_help(
                        "publish the root that issued this chain in the trust bundle (pki.trustBundleFile), or \
                         re-issue the certificate from a CA the bundle holds, with serverAuth",
                    ),
                );
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
    fn a_chain_to_another_root_is_refused_with_the_webpki_reason_and_the_bundle_fingerprint() {
        let f = run(ANCHORED, &fixture("fires-chain-anchored-in-bundle-other-root"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(f[0].message.contains("UnknownIssuer"), "{}", f[0].message);
        assert!(f[0].message.contains("sha256:"), "{}", f[0].message);
        assert!(run(ANCHORED, &fixture("silent-chain-anchored-in-bundle-same-root")).is_empty());
    }

    #[test]
    fn self_signed_origin_is_followed_through_a_ca_issuer_and_bounded() {
        let f = run(ANCHORED, &fixture("fires-chain-anchored-in-bundle-self-signed"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("ClusterIssuer bootstrap-selfsigned"),
            "{}",
            f[0].message
        );
        // A loop of CA issuers ends at the hop limit, without a finding and without hanging.
        let looped = "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: a, namespace: n}\nspec: {ca: {secretName: sa}}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: ca, namespace: n}\nspec: {secretName: sa, issuerRef: {name: a}}\n";
        let g = crate::testkit::graph("e", looped);
        let c = g.objects.iter().find(|o| o.kind == "Certificate").unwrap();
        assert!(self_signed_origin(&g, c).is_none());
    }

    fn router(name: &str, ns: &str, secret: &str, dial: &str) -> String {
        format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  template:\n    spec:\n      containers:\n        - name: router\n          image: nvcr.io/nvidia/nvcf/stargate:1.4.2\n          args: [--listen-addr=0.0.0.0:50071, \"--grpc-pylon-dial-addr={dial}\", --tls-cert-path=/tls/tls.crt, --tls-key-path=/tls/tls.key]\n          volumeMounts: [{{name: tls, mountPath: /tls, readOnly: true}}]\n      volumes: [{{name: tls, secret: {{secretName: {secret}}}}}]\n"
        )
    }

    fn guarded_of(yaml: &str) -> Vec<(String, String)> {
        let g = crate::testkit::graph("e", yaml);
        guarded(&g, &crate::router::routers(&g))
            .into_iter()
            .map(|g| (g.ns, g.secret))
            .collect()
    }

    #[test]
    fn guarded_secrets_are_each_named_once_by_namespace_and_name() {
        let inside = "https://request-router.nvcf.svc:443";
        let yaml = router("a", "nvcf", "request-router-tls", inside)
            + &router("b", "nvcf", "request-router-tls", inside)
            + &router("c", "other", "request-router-tls", inside)
            + &router("d", "nvcf", "second-tls", inside);
        let pair = |ns: &str, s: &str| (ns.to_string(), s.to_string());
        assert_eq!(
            guarded_of(&yaml),
            vec![
                pair("nvcf", "request-router-tls"),
                pair("other", "request-router-tls"),
                pair("nvcf", "second-tls")
            ]
        );
        // The listener that terminates the gRPC dial host adds its certificate Secrets, not other
        // kinds of certificateRefs.
        let gateway = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: edge}\nspec:\n  gatewayClassName: envoy\n  listeners:\n    - name: worker-grpc\n      protocol: HTTPS\n      port: 443\n      hostname: grpc.nvcf.example.com\n      tls:\n        certificateRefs: [{name: worker-grpc-tls}, {kind: ConfigMap, name: not-a-certificate}]\n      allowedRoutes: {namespaces: {from: All}}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: worker, namespace: nvcf}\nspec:\n  parentRefs: [{name: gw, namespace: edge, sectionName: worker-grpc}]\n  hostnames: [grpc.nvcf.example.com]\n  rules: [{backendRefs: [{name: request-router, port: 50071}]}]\n";
        let yaml = router("a", "nvcf", "request-router-tls", "https://grpc.nvcf.example.com:443") + gateway;
        assert_eq!(
            guarded_of(&yaml),
            vec![pair("nvcf", "request-router-tls"), pair("edge", "worker-grpc-tls")]
        );
    }

    /// A namespaced CA Issuer reads its CA Secret in its own namespace: the Certificate that
    /// writes it there is followed up to its self-signed issuer; one in another namespace is not.
    #[test]
    fn a_namespaced_ca_issuer_is_followed_in_its_own_namespace() {
        let issuers = |ca_ns: &str| {
            format!(
                "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {{name: request-router, namespace: nvcf}}\nspec: {{secretName: request-router-tls, issuerRef: {{name: nvcf-ca}}}}\n---\napiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {{name: nvcf-ca, namespace: nvcf}}\nspec: {{ca: {{secretName: nvcf-root}}}}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {{name: nvcf-root, namespace: {ca_ns}}}\nspec: {{isCA: true, secretName: nvcf-root, issuerRef: {{kind: Issuer, name: selfsigned}}}}\n---\napiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {{name: selfsigned, namespace: {ca_ns}}}\nspec: {{selfSigned: {{}}}}\n"
            )
        };
        let yaml = router("r", "nvcf", "request-router-tls", "https://request-router.nvcf.svc:443");
        let f = run(ANCHORED, &(yaml.clone() + &issuers("nvcf")));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message
                .contains("(Issuer nvcf/nvcf-ca -> Certificate nvcf/nvcf-root -> Issuer nvcf/selfsigned)"),
            "{}",
            f[0].message
        );
        let f = run(ANCHORED, &(yaml + &issuers("other")));
        assert!(f.is_empty(), "{}", messages(&f));
    }

    /// The Certificate judged is the one writing the guarded Secret in its namespace, not the first
    /// Certificate of the graph (here OpenBao's self-signed bootstrap CA).
    #[test]
    fn the_certificate_of_the_guarded_secret_is_judged_and_no_other() {
        let yaml = "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: bootstrap-ca, namespace: nvcf}\nspec: {isCA: true, secretName: bootstrap-ca, issuerRef: {kind: ClusterIssuer, name: selfsigned}}\n---\napiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: selfsigned}\nspec: {selfSigned: {}}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: request-router, namespace: nvcf}\nspec: {secretName: request-router-tls, issuerRef: {kind: ClusterIssuer, name: openbao}}\n---\napiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: openbao}\nspec: {vault: {server: \"https://openbao.openbao.svc:8200\", path: pki_int/sign/router}}\n".to_string()
            + &router("r", "nvcf", "request-router-tls", "https://request-router.nvcf.svc:443");
        let f = run(ANCHORED, &yaml);
        assert!(f.is_empty(), "{}", messages(&f));
    }
}
