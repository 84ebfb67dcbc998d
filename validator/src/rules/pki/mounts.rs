//! Volume mounts and the Secrets behind them, shared by the SAN, reload and path rules. Which
//! source writes the file a container sees at a path is a fact about pods
//! (`crate::graph::volumes`, kubelet semantics: subPath, items, projected sources); this file asks
//! it with the keys the graph rendered.

use super::*;
pub(super) use crate::graph::volumes::{
    mounted_at, sources_at, sub_path, volume_secrets, MountedPath, SourceKind, VolumeSource,
};

/// Whether a Secret or ConfigMap (in `ns`) has a key, as far as the graph rendered it.
pub(crate) fn rendered_keys<'g>(
    g: &'g Graph,
    ns: Option<&'g str>,
) -> impl Fn(&VolumeSource<'_>, &str) -> Option<bool> + 'g {
    move |s, k| g.source_has_key(ns, s, k)
}

/// The Secret and key whose content a container sees at mounted path `m` (None: no Secret
/// writes that file).
pub(super) fn secret_file(g: &Graph, obj: &Object, m: &MountedPath) -> Option<(String, String)> {
    let h = m.file(&rendered_keys(g, obj.namespace.as_deref()))?;
    (h.source.kind == SourceKind::Secret).then(|| (h.source.name.to_string(), h.key))
}

/// The Secret the router's certificate comes from: the Secret behind `--tls-cert-path` (through
/// subPath and items), else the first Secret of the volume that holds the path.
pub(super) fn router_tls_secret(g: &Graph, r: &RouterWorkload) -> Option<String> {
    let pod = r.obj.pod_spec_of(r.container)?;
    let path = r.flag(F_CERT).filter(|p| !p.is_empty())?;
    let m = mounted_at(pod, r.container, path)?;
    secret_file(g, r.obj, &m)
        .map(|(s, _)| s)
        .or_else(|| volume_secrets(m.volume?).first().map(|s| s.name.to_string()))
}

/// Secrets whose content is renewed TLS material, per namespace: written by a Certificate, or of
/// type `kubernetes.io/tls`. One pass over the graph; look namespaces up in the result.
pub(super) fn tls_secrets_by_namespace(g: &Graph) -> std::collections::HashMap<&str, BTreeSet<String>> {
    let mut out: std::collections::HashMap<&str, BTreeSet<String>> = Default::default();
    for o in &g.objects {
        let Some(ns) = o.namespace.as_deref() else { continue };
        if is_certificate(o) {
            if let Some(s) = o.str_at("/spec/secretName") {
                out.entry(ns).or_default().insert(s.to_string());
            }
        } else if o.kind == "Secret" && o.group().is_empty() && o.str_at("/type") == Some("kubernetes.io/tls") {
            out.entry(ns).or_default().insert(o.name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Secret behind `--tls-cert-path` of a router whose container has `mounts` (YAML flow
    /// list) over `volumes` (YAML flow list).
    fn tls_secret_of(cert_path: &str, mounts: &str, volumes: &str) -> Option<String> {
        let yaml = format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: r, namespace: nvcf}}\nspec:\n  template:\n    spec:\n      containers:\n        - name: router\n          image: nvcr.io/nvidia/nvcf/stargate:1.4.2\n          args: [--listen-addr=0.0.0.0:50071, --tls-cert-path={cert_path}]\n          volumeMounts: {mounts}\n      volumes: {volumes}\n"
        );
        let g = crate::testkit::graph("e", &yaml);
        let rs = crate::router::routers(&g);
        assert_eq!(rs.len(), 1);
        router_tls_secret(&g, &rs[0])
    }

    /// A projected volume: Secret `other` (ca.crt only) first, then `cert` with `cert_items`.
    fn projected(cert_items: &str) -> String {
        format!(
            "[{{name: tls, projected: {{sources: [{{secret: {{name: other, items: [{{key: ca.crt, path: ca.crt}}]}}}}, {{secret: {{name: cert, items: {cert_items}}}}}]}}}}]"
        )
    }

    #[test]
    fn the_certificate_secret_is_found_through_sub_paths_and_items() {
        let items = "[{key: tls.crt, path: tls.crt}]";
        // A file mounted by subPath: the subPath names the file inside the volume.
        let file = "[{name: tls, mountPath: /tls/tls.crt, subPath: tls.crt}]";
        assert_eq!(
            tls_secret_of("/tls/tls.crt", file, &projected(items)).as_deref(),
            Some("cert")
        );
        // A directory of the volume mounted by subPath: the file is the subPath's path below it.
        let dir = "[{name: tls, mountPath: /tls, subPath: certs}]";
        let nested_items = "[{key: tls.crt, path: certs/tls.crt}]";
        assert_eq!(
            tls_secret_of("/tls/tls.crt", dir, &projected(nested_items)).as_deref(),
            Some("cert")
        );
        // A nested path is found in the items of the Secret that projects it, not in a Secret
        // without items (whose keys are files at the top of the volume only).
        let nested = "[{name: tls, projected: {sources: [{secret: {name: other}}, {secret: {name: cert, items: [{key: tls.crt, path: certs/tls.crt}]}}]}}]";
        let whole = "[{name: tls, mountPath: /tls}]";
        assert_eq!(
            tls_secret_of("/tls/certs/tls.crt", whole, nested).as_deref(),
            Some("cert")
        );
    }

    #[test]
    fn the_longest_mount_path_holding_the_file_wins() {
        let mounts = "[{name: config, mountPath: /etc}, {name: tls, mountPath: /etc/tls}]";
        let volumes = "[{name: config, secret: {secretName: config}}, {name: tls, secret: {secretName: router-tls}}]";
        assert_eq!(
            tls_secret_of("/etc/tls/tls.crt", mounts, volumes).as_deref(),
            Some("router-tls")
        );
    }

    #[test]
    fn renewed_tls_secrets_are_certificate_targets_and_core_tls_secrets() {
        let yaml = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c, namespace: nvcf}\nspec: {secretName: written}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: tls-typed, namespace: nvcf}\ntype: kubernetes.io/tls\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: opaque, namespace: nvcf}\ntype: Opaque\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: configmap, namespace: nvcf}\ntype: kubernetes.io/tls\n---\napiVersion: example.com/v1\nkind: Secret\nmetadata: {name: other-group, namespace: nvcf}\ntype: kubernetes.io/tls\n";
        let g = crate::testkit::graph("e", yaml);
        let got = tls_secrets_by_namespace(&g);
        let want: BTreeSet<String> = ["tls-typed", "written"].iter().map(|s| s.to_string()).collect();
        assert_eq!(got.get("nvcf"), Some(&want));
        assert_eq!(got.len(), 1);
    }
}
