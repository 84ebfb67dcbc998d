//! `tls-secret-resolves`: every Secret a workload mounts (non-optional) and every Secret a
//! terminating Gateway listener references is produced by something the gate can see: rendered,
//! written by a cert-manager Certificate, written by the cert-manager Gateway shim (an annotated
//! Gateway), written at run time by a rendered workload that names it and whose ServiceAccount
//! may create Secrets there (`writers`), or declared external in the policy. Otherwise the TLS rules have nothing to judge
//! (and the pod never starts, or the listener never serves).

use super::TLS_SECRET_RESOLVES;
use crate::finding::Finding;
use crate::graph::{Graph, Object};
use crate::rules::Ctx;
use serde_json::Value;

const CM: &str = "cert-manager.io";
const GW: &str = "gateway.networking.k8s.io";
const SHIM_ANNOTATIONS: &[&str] = &["cert-manager.io/issuer", "cert-manager.io/cluster-issuer"];

fn ns_of(o: &Object) -> &str {
    o.namespace.as_deref().unwrap_or("default")
}

fn items<'a>(v: &'a Value, ptr: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(ptr).and_then(Value::as_array).into_iter().flatten()
}

/// Whether something in the graph produces the Secret `ns/name`, and what.
fn producer(g: &Graph, ns: &str, name: &str) -> Option<String> {
    if let Some(s) = g.get("", "Secret", Some(ns), name) {
        return Some(if s.prov.external {
            "declared external".into()
        } else {
            "rendered".into()
        });
    }
    if let Some(c) = g.objects.iter().find(|o| {
        o.kind == "Certificate"
            && o.group() == CM
            && o.namespace.as_deref() == Some(ns)
            && o.str_at("/spec/secretName") == Some(name)
    }) {
        return Some(format!("written by Certificate {}", c.name));
    }
    g.of(GW, "Gateway")
        .filter(|gw| {
            gw.annotations()
                .is_some_and(|a| SHIM_ANNOTATIONS.iter().any(|k| a.contains_key(*k)))
        })
        .find(|gw| {
            items(&gw.body, "/spec/listeners").any(|l| {
                items(l, "/tls/certificateRefs").any(|r| {
                    r.get("name").and_then(Value::as_str) == Some(name)
                        && r.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(gw)) == ns
                })
            })
        })
        .map(|gw| format!("written by the cert-manager Gateway shim for Gateway {}", gw.name))
        .or_else(|| super::writers::written_by_workload(g, ns, name).map(|w| format!("written at run time by {w}")))
}

const HELP: &str = "render it (a cert-manager Certificate with this secretName), fix the name, or, when the \
                    customer creates it, declare it under `externals:` in the policy (kind Secret, its namespace \
                    and name, type kubernetes.io/tls, and its public tls.crt chain)";

/// A Secret's public `tls.crt` (rendered, or given with a declared external) that does not parse
/// leaves the chain and SAN rules nothing to judge: reported, never skipped. The message names
/// the PEM block and the reason, never its content.
fn unreadable_chains(g: &Graph) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in g.of("", "Secret") {
        let Some(raw) = s.str_at("/data/tls.crt").or_else(|| s.str_at("/stringData/tls.crt")) else {
            continue;
        };
        let problem = match crate::pki::pem_text_of(raw) {
            None => "is neither PEM nor base64 of PEM".to_string(),
            Some(pem) => match crate::pki::parse_bundle(&pem) {
                Ok(_) => continue,
                Err(e) => e.to_string(),
            },
        };
        let origin = if s.prov.external {
            " (declared external in the policy)"
        } else {
            ""
        };
        out.push(
            Finding::object_at(
                TLS_SECRET_RESOLVES,
                s,
                "tls.crt",
                format!(
                    "{}{origin}: its public tls.crt cannot be read ({problem}), so the certificate it serves cannot be judged",
                    s.display()
                ),
            )
            .with_help("give the Secret's public chain as PEM CERTIFICATE blocks (leaf first), or leave tls.crt out"),
        );
    }
    out
}

pub(super) fn tls_secret_resolves(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = unreadable_chains(g);
    for obj in g.objects.iter().filter(|o| !o.prov.external) {
        for pod in obj.pod_specs() {
            for vol in items(pod, "/volumes") {
                let vname = vol.get("name").and_then(Value::as_str).unwrap_or("?");
                let refs = crate::graph::volumes::volume_secrets(vol)
                    .into_iter()
                    .map(|s| (s.name, s.optional));
                for (name, optional) in refs {
                    if optional || producer(g, ns_of(obj), name).is_some() {
                        continue;
                    }
                    out.push(
                        Finding::object_at(
                            TLS_SECRET_RESOLVES,
                            obj,
                            name,
                            format!(
                                "{}: volume `{vname}` mounts Secret {}/{name}, which nothing produces (not rendered, no workload writes it, \
                                 no Certificate writes it, not declared external): the pod would not start, and \
                                 the certificate it serves cannot be judged",
                                obj.display(),
                                ns_of(obj)
                            ),
                        )
                        .with_help(HELP),
                    );
                }
            }
        }
        if obj.group() == GW && obj.kind == "Gateway" {
            for l in items(&obj.body, "/spec/listeners") {
                let lname = l.get("name").and_then(Value::as_str).unwrap_or("?");
                for r in items(l, "/tls/certificateRefs") {
                    let kind = r.get("kind").and_then(Value::as_str).unwrap_or("Secret");
                    let group = r.get("group").and_then(Value::as_str).unwrap_or("");
                    let Some(name) = r.get("name").and_then(Value::as_str) else {
                        continue;
                    };
                    if kind != "Secret" || !group.is_empty() {
                        continue;
                    }
                    let ns = r.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(obj));
                    if producer(g, ns, name).is_some() {
                        continue;
                    }
                    out.push(
                        Finding::object_at(
                            TLS_SECRET_RESOLVES,
                            obj,
                            name,
                            format!(
                                "{}: listener `{lname}` references TLS Secret {ns}/{name}, which nothing produces \
                                 (not rendered, no Certificate writes it, the Gateway has no cert-manager shim \
                                 annotation, not declared external): the listener would not serve, and its \
                                 certificate cannot be judged",
                                obj.display()
                            ),
                        )
                        .with_help(HELP),
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    const PODS: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: r, namespace: nvcf}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: x}]\n      volumes:\n      - {name: a, secret: {secretName: by-cert}}\n      - {name: b, secret: {secretName: rendered}}\n      - {name: c, secret: {secretName: missing}}\n      - {name: d, secret: {secretName: opt, optional: true}}\n      - {name: e, projected: {sources: [{secret: {name: missing-projected}}, {configMap: {name: x}}]}}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: cert, namespace: nvcf}\nspec: {secretName: by-cert}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: elsewhere, namespace: other}\nspec: {secretName: missing}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: rendered, namespace: nvcf}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: gwns}\nspec:\n  listeners:\n  - {name: l1, protocol: HTTPS, tls: {certificateRefs: [{name: gw-missing}]}}\n  - {name: l2, protocol: HTTPS, tls: {certificateRefs: [{name: by-cert, namespace: nvcf}]}}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: shim, namespace: gwns, annotations: {cert-manager.io/cluster-issuer: ca}}\nspec:\n  listeners:\n  - {name: l, protocol: HTTPS, tls: {certificateRefs: [{name: shim-written}]}}\n";

    #[test]
    fn unproduced_secrets_fire_produced_and_optional_ones_do_not() {
        let g = crate::testkit::graph("e", PODS);
        let p = Policy::default();
        let f = tls_secret_resolves(&crate::testkit::ctx(&g, &p));
        let msgs: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 3, "{msgs:#?}");
        assert!(msgs[0].contains("Secret nvcf/missing,"), "{}", msgs[0]);
        assert!(msgs[1].contains("Secret nvcf/missing-projected"), "{}", msgs[1]);
        assert!(
            msgs[2].contains("listener `l1`") && msgs[2].contains("gwns/gw-missing"),
            "{}",
            msgs[2]
        );
    }

    /// Only a Gateway API Gateway's listeners are judged, and only their references to core
    /// Secrets: a `Gateway` kind of another group, and references of another kind or group, are
    /// not Secrets this rule can resolve (near misses of `l1` above, which fires).
    #[test]
    fn only_gateway_api_listeners_referencing_core_secrets_are_judged() {
        let yaml = "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: istio, namespace: gwns}\nspec:\n  listeners:\n  - {name: l, tls: {certificateRefs: [{name: gw-missing}]}}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: gwns}\nspec:\n  listeners:\n  - {name: cm, tls: {certificateRefs: [{kind: ConfigMap, name: gw-missing}]}}\n  - {name: grouped, tls: {certificateRefs: [{group: example.io, kind: Secret, name: gw-missing}]}}\n  - {name: core, tls: {certificateRefs: [{group: \"\", kind: Secret, name: gw-missing}]}}\n";
        let g = crate::testkit::graph("e", yaml);
        let p = Policy::default();
        let f = tls_secret_resolves(&crate::testkit::ctx(&g, &p));
        let msgs: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(msgs.len(), 1, "{msgs:#?}");
        assert!(
            msgs[0].contains("Gateway gwns/gw") && msgs[0].contains("listener `core`"),
            "{msgs:#?}"
        );
    }

    #[test]
    fn an_external_chain_that_does_not_parse_is_a_finding() {
        let pod = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: nvcf}\n";
        for (crt, fires) in [
            (
                "-----BEGIN CERTIFICATE-----\\nbm90IGEgY2VydA==\\n-----END CERTIFICATE-----\\n",
                true,
            ),
            ("not pem at all", true),
        ] {
            let p = Policy::parse(
                &format!("externals:\n- {{apiVersion: v1, kind: Secret, namespace: nvcf, name: s, type: kubernetes.io/tls, data: {{tls.crt: \"{crt}\"}}}}\n"),
                "p.yaml", crate::rules::family_of,
            )
            .unwrap();
            let g = crate::testkit::with_externals(crate::testkit::graph("e", pod), &p);
            let f = tls_secret_resolves(&crate::testkit::ctx(&g, &p));
            assert_eq!(!f.is_empty(), fires, "{crt}: {f:#?}");
            assert!(
                f[0].message.contains("declared external") && f[0].message.contains("cannot be read"),
                "{}",
                f[0].message
            );
        }
    }

    #[test]
    fn a_misspelt_external_is_a_finding_and_the_right_one_resolves() {
        let pod = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: request-router, namespace: nvcf}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: x}]\n      volumes: [{name: tls, secret: {secretName: request-router-tls}}]\n";
        for (declared, fires) in [("request-router-tsl", 1), ("request-router-tls", 0)] {
            let p = Policy::parse(
                &format!("externals:\n- {{apiVersion: v1, kind: Secret, namespace: nvcf, name: {declared}, type: kubernetes.io/tls}}\n"),
                "p.yaml", crate::rules::family_of,
            )
            .unwrap();
            let g = crate::testkit::with_externals(crate::testkit::graph("e", pod), &p);
            assert_eq!(
                tls_secret_resolves(&crate::testkit::ctx(&g, &p)).len(),
                fires,
                "{declared}"
            );
        }
    }
}
