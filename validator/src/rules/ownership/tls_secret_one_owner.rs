//! `tls-secret-one-owner`: every TLS Secret has one writer (a Certificate, a rendered Secret or a pre-created one).

use super::*;

/// Who writes a TLS Secret, in precedence order (the first writer is the owner).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum WriterKind {
    PreCreated,
    RenderedSecret,
    Certificate,
}

struct Writer<'a> {
    kind: WriterKind,
    obj: &'a Object,
    /// How it writes, for messages (`Certificate nvcf/router (spec.secretName)`).
    how: String,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Secrets written by cert-manager's gateway-shim / ingress-shim for an annotated object.
fn shim_secrets(o: &Object) -> Vec<(String, String)> {
    let annotated = o.annotations().is_some_and(|a| {
        a.contains_key("cert-manager.io/issuer")
            || a.contains_key("cert-manager.io/cluster-issuer")
            || a.get("kubernetes.io/tls-acme").and_then(Value::as_str) == Some("true")
    });
    let ns = o.namespace.clone().unwrap_or_default();
    let mut out = Vec::new();
    if !annotated {
        return out;
    }
    match (o.group(), o.kind.as_str()) {
        ("gateway.networking.k8s.io", "Gateway") => {
            for l in o.at("/spec/listeners").and_then(Value::as_array).into_iter().flatten() {
                if l.pointer("/tls/mode").and_then(Value::as_str).unwrap_or("Terminate") != "Terminate"
                    || l.get("hostname").is_none()
                {
                    continue;
                }
                for r in l
                    .pointer("/tls/certificateRefs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if str_of(r, "kind").unwrap_or("Secret") == "Secret" && str_of(r, "group").unwrap_or("").is_empty()
                    {
                        if let Some(name) = str_of(r, "name") {
                            out.push((str_of(r, "namespace").unwrap_or(&ns).to_string(), name.to_string()));
                        }
                    }
                }
            }
        }
        ("networking.k8s.io", "Ingress") => {
            for t in o.at("/spec/tls").and_then(Value::as_array).into_iter().flatten() {
                if let Some(name) = str_of(t, "secretName") {
                    out.push((ns.clone(), name.to_string()));
                }
            }
        }
        _ => {}
    }
    out.sort();
    out.dedup();
    out
}

pub(super) fn tls_secret_one_owner(ctx: &Ctx) -> Vec<Finding> {
    // (namespace, secret name) → writers
    let mut writers: BTreeMap<(String, String), Vec<Writer>> = BTreeMap::new();
    let mut tls_secrets: std::collections::BTreeSet<(String, String)> = Default::default();
    for o in &ctx.graph.objects {
        let ns = o.namespace.clone().unwrap_or_default();
        match (o.group(), o.kind.as_str()) {
            ("cert-manager.io", "Certificate") if !o.prov.external => {
                if let Some(s) = o.str_at("/spec/secretName") {
                    tls_secrets.insert((ns.clone(), s.to_string()));
                    let how = format!("Certificate {ns}/{} (spec.secretName)", o.name);
                    writers.entry((ns, s.to_string())).or_default().push(Writer {
                        kind: WriterKind::Certificate,
                        obj: o,
                        how,
                    });
                }
            }
            ("", "Secret") => {
                let tls = o.str_at("/type") == Some("kubernetes.io/tls")
                    || ["/data/tls.crt", "/stringData/tls.crt"]
                        .iter()
                        .any(|p| o.at(p).is_some());
                if tls {
                    tls_secrets.insert((ns.clone(), o.name.clone()));
                }
                let (kind, how) = if o.prov.external {
                    (
                        WriterKind::PreCreated,
                        format!(
                            "Secret {ns}/{} declared pre-created in {}",
                            o.name,
                            o.prov.file.as_deref().unwrap_or("the policy")
                        ),
                    )
                } else {
                    (
                        WriterKind::RenderedSecret,
                        format!("Secret {ns}/{} rendered by {}", o.name, writer(o)),
                    )
                };
                writers
                    .entry((ns, o.name.clone()))
                    .or_default()
                    .push(Writer { kind, obj: o, how });
            }
            _ if !o.prov.external => {
                for (sns, s) in shim_secrets(o) {
                    tls_secrets.insert((sns.clone(), s.clone()));
                    let how = format!(
                        "{} via cert-manager's {} shim (certificate for {sns}/{s})",
                        o.display(),
                        o.kind
                    );
                    writers.entry((sns, s)).or_default().push(Writer {
                        kind: WriterKind::Certificate,
                        obj: o,
                        how,
                    });
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (key, mut ws) in writers {
        if ws.len() < 2 || !tls_secrets.contains(&key) {
            continue;
        }
        ws.sort_by_key(|w| w.kind);
        let owner = &ws[0];
        for (i, w) in ws.iter().enumerate().skip(1) {
            // Two rendered Secrets of one identity are object-one-owner's finding.
            if w.kind == WriterKind::RenderedSecret && ws[..i].iter().any(|p| p.kind == WriterKind::RenderedSecret) {
                continue;
            }
            // Two pre-created declarations are one object outside the stack.
            if w.kind == WriterKind::PreCreated {
                continue;
            }
            let (msg, help) = match owner.kind {
                WriterKind::PreCreated => (
                    format!("{} writes TLS Secret {}/{}, which {} declares pre-created: the stack would overwrite the customer's certificate", w.how, key.0, key.1, owner.obj.prov.file.as_deref().unwrap_or("the policy")),
                    "in secret mode the customer owns the Secret: render no Certificate or Secret for it (or remove the external declaration if the stack should own it)",
                ),
                _ => (
                    format!("{} is a second writer of TLS Secret {}/{}; it is already written by {}", w.how, key.0, key.1, owner.how),
                    "keep one writer per TLS Secret: give each Certificate its own secretName and do not render the Secret itself",
                ),
            };
            let needle = match (w.kind, w.obj.kind.as_str()) {
                (WriterKind::Certificate, "Certificate") | (WriterKind::Certificate, "Ingress") => "secretName:",
                (WriterKind::Certificate, _) => "certificateRefs:",
                _ => "kind: Secret",
            };
            out.push(Finding::object_at(TLS_SECRET_ONE_OWNER, w.obj, needle, msg).with_help(help));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    use crate::graph::Graph;
    use crate::policy::Policy;

    #[test]
    fn shim_annotated_gateway_alone_is_one_writer() {
        let yaml = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: nvcf\n  namespace: nvcf-gateway\n  annotations: {cert-manager.io/cluster-issuer: openbao}\nspec:\n  listeners:\n    - {name: llm, protocol: HTTPS, port: 443, hostname: llm.example.com, tls: {certificateRefs: [{name: llm-tls}]}}\n    - {name: raw, protocol: TLS, port: 8443, hostname: raw.example.com, tls: {mode: Passthrough, certificateRefs: [{name: llm-tls}]}}\n";
        let g = crate::testkit::graph("default", yaml);
        let p = Policy::default();
        assert!((rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p)).is_empty());
        // The same Gateway plus an Ingress annotated for the ingress-shim writing the same Secret.
        let ingress = "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: llm\n  namespace: nvcf-gateway\n  annotations: {cert-manager.io/issuer: local}\nspec:\n  tls: [{hosts: [llm.example.com], secretName: llm-tls}]\n";
        let g = crate::testkit::graph("default", &format!("{yaml}{ingress}"));
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].message
                .starts_with("Ingress nvcf-gateway/llm via cert-manager's Ingress shim"),
            "{}",
            f[0].message
        );
    }

    /// cert-manager's shims write a Secret only for an annotated object, for a Terminate
    /// listener with a hostname, and for a reference to a core Secret: each near miss below is
    /// beside a Certificate writing the same Secret and must not count as a second writer.
    #[test]
    fn shims_write_only_what_cert_manager_writes() {
        let cert = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c, namespace: gw}\nspec: {secretName: a-tls}\n";
        let near = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: g\n  namespace: gw\n  annotations: {cert-manager.io/cluster-issuer: ca}\nspec:\n  listeners:\n    - {name: no-host, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: a-tls}]}}\n    - {name: cm, protocol: HTTPS, port: 443, hostname: a.example.com, tls: {certificateRefs: [{kind: ConfigMap, name: a-tls}]}}\n    - {name: grouped, protocol: HTTPS, port: 443, hostname: b.example.com, tls: {certificateRefs: [{group: example.io, kind: Secret, name: a-tls}]}}\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: no-acme\n  namespace: gw\n  annotations: {kubernetes.io/tls-acme: \"false\"}\nspec:\n  tls: [{hosts: [a.example.com], secretName: a-tls}]\n";
        let p = Policy::default();
        let g = crate::testkit::graph("default", &format!("{cert}{near}"));
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p));
        assert!(f.is_empty(), "{f:#?}");
        // `kubernetes.io/tls-acme: "true"` does switch the Ingress shim on.
        let acme = near.replace("\"false\"", "\"true\"");
        let g = crate::testkit::graph("default", &format!("{cert}{acme}"));
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].message
                .starts_with("Ingress gw/no-acme via cert-manager's Ingress shim"),
            "{}",
            f[0].message
        );
    }

    /// Every writer after the first is reported, each at the line that makes it a writer; a
    /// Secret that is not a TLS Secret (no tls type, no tls.crt) is not this rule's.
    #[test]
    fn every_further_writer_is_reported_where_it_writes_and_only_for_tls_secrets() {
        let yaml = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: a, namespace: gw}\nspec: {secretName: a-tls}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: b, namespace: gw}\nspec: {secretName: a-tls}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: g\n  namespace: gw\n  annotations: {cert-manager.io/cluster-issuer: ca}\nspec:\n  listeners:\n    - name: l\n      hostname: a.example.com\n      tls:\n        certificateRefs: [{name: a-tls}]\n";
        let g = crate::testkit::graph("default", yaml);
        let p = Policy::default();
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p));
        let got: Vec<(&str, Option<usize>)> = f
            .iter()
            .map(|f| {
                (
                    f.object.as_ref().unwrap().name.as_str(),
                    f.source.as_ref().unwrap().line,
                )
            })
            .collect();
        assert_eq!(got, vec![("b", Some(9)), ("g", Some(22))], "{f:#?}");
        // An Opaque Secret declared pre-created and rendered too: object ownership, not TLS.
        let opaque = "apiVersion: v1\nkind: Secret\nmetadata: {name: settings, namespace: nvcf}\ntype: Opaque\n";
        let g = Graph::new("default", vec![obj(opaque, "", true), obj(opaque, "nvcf/app", false)]);
        assert!((rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p)).is_empty());
    }

    #[test]
    fn externals_are_not_object_owners_but_are_tls_secret_owners() {
        let secret =
            "apiVersion: v1\nkind: Secret\nmetadata: {name: router-tls, namespace: nvcf}\ntype: kubernetes.io/tls\n";
        let g = Graph::new(
            "default",
            vec![obj(secret, "", true), obj(secret, "nvcf/nvcf-pki", false)],
        );
        let p = Policy::default();
        let c = crate::testkit::ctx(&g, &p);
        assert!((rule(OBJECT_ONE_OWNER).check)(&c).is_empty());
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&c);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].release.as_deref(), Some("nvcf/nvcf-pki"));
        assert!(
            f[0].message.contains("validator-policy.yaml declares pre-created"),
            "{}",
            f[0].message
        );
        // Only the external: one writer, silent.
        let g = Graph::new("default", vec![obj(secret, "", true)]);
        assert!((rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p)).is_empty());
        // A Certificate or a shim-annotated Ingress declared external writes nothing the stack
        // installs: beside the stack's own Certificate of the same Secret, still one writer.
        let cert = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c, namespace: nvcf}\nspec: {secretName: router-tls}\n";
        let ingress = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, namespace: nvcf, annotations: {cert-manager.io/issuer: ca}}\nspec: {tls: [{secretName: router-tls}]}\n";
        let g = Graph::new(
            "default",
            vec![
                obj(cert, "", true),
                obj(ingress, "", true),
                obj(cert, "nvcf/nvcf-pki", false),
            ],
        );
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p));
        assert!(f.is_empty(), "{f:#?}");
        // The near miss: the same Ingress rendered by a release is a second writer.
        let g = Graph::new(
            "default",
            vec![obj(ingress, "nvcf/gw", false), obj(cert, "nvcf/nvcf-pki", false)],
        );
        assert_eq!(
            (rule(TLS_SECRET_ONE_OWNER).check)(&crate::testkit::ctx(&g, &p)).len(),
            1
        );
    }
}
