//! Volume mounts and the Secrets behind them, shared by the SAN, reload and path rules.

use super::*;

pub(super) struct Mount<'a> {
    pub(super) mount: &'a Value,
    pub(super) volume: Option<&'a Value>,
    pub(super) mount_path: String,
    /// Path of the file relative to the mount (empty when the path is the mount itself).
    pub(super) rel: String,
}

impl Mount<'_> {
    pub(super) fn volume_name(&self) -> &str {
        self.mount.get("name").and_then(Value::as_str).unwrap_or("?")
    }

    pub(super) fn sub_path(&self) -> Option<&str> {
        self.mount
            .get("subPath")
            .or_else(|| self.mount.get("subPathExpr"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
}

/// The mount of `container` that holds `path` (longest mountPath wins).
pub(super) fn mount_for<'a>(pod: &'a Value, container: &'a Value, path: &str) -> Option<Mount<'a>> {
    let mut best: Option<Mount<'a>> = None;
    for m in items(container, "/volumeMounts") {
        let Some(mp) = m.get("mountPath").and_then(Value::as_str) else {
            continue;
        };
        let mp = mp.trim_end_matches('/');
        let rel = if path == mp {
            String::new()
        } else if let Some(r) = path.strip_prefix(mp).and_then(|r| r.strip_prefix('/')) {
            r.to_string()
        } else {
            continue;
        };
        if best.as_ref().is_some_and(|b| b.mount_path.len() >= mp.len()) {
            continue;
        }
        let name = m.get("name").and_then(Value::as_str).unwrap_or("");
        let volume = items(pod, "/volumes").find(|v| v.get("name").and_then(Value::as_str) == Some(name));
        best = Some(Mount {
            mount: m,
            volume,
            mount_path: mp.to_string(),
            rel,
        });
    }
    best
}

/// `(secret name, items)` of every Secret a volume projects.
pub(crate) fn volume_secrets(vol: &Value) -> Vec<(&str, Option<&Vec<Value>>)> {
    let mut out = Vec::new();
    if let Some(name) = str_at(vol, "/secret/secretName") {
        out.push((name, vol.pointer("/secret/items").and_then(Value::as_array)));
    }
    for src in items(vol, "/projected/sources") {
        if let Some(name) = str_at(src, "/secret/name") {
            out.push((name, src.pointer("/secret/items").and_then(Value::as_array)));
        }
    }
    out
}

/// The Secret and key whose content appears at `rel` inside a volume.
pub(super) fn secret_key_at(vol: &Value, rel: &str) -> Option<(String, String)> {
    for (secret, its) in volume_secrets(vol) {
        match its {
            Some(its) => {
                if let Some(it) = its.iter().find(|i| i.get("path").and_then(Value::as_str) == Some(rel)) {
                    return Some((secret.to_string(), it.get("key").and_then(Value::as_str)?.to_string()));
                }
            }
            None if !rel.contains('/') && !rel.is_empty() => return Some((secret.to_string(), rel.to_string())),
            None => {}
        }
    }
    None
}

/// The Secret the router's certificate comes from: the Secret behind `--tls-cert-path`.
pub(super) fn router_tls_secret(r: &RouterWorkload) -> Option<String> {
    let pod = r.obj.pod_spec_of(r.container)?;
    let path = r.flag(F_CERT).filter(|p| !p.is_empty())?;
    let m = mount_for(pod, r.container, path)?;
    let vol = m.volume?;
    // A subPath mount shows the volume from that path down: the file lies at subPath/rel in it.
    let rel = match m.sub_path() {
        Some(sp) if m.rel.is_empty() => sp.to_string(),
        Some(sp) => format!("{}/{}", sp.trim_end_matches('/'), m.rel),
        None => m.rel.clone(),
    };
    secret_key_at(vol, &rel)
        .map(|(s, _)| s)
        .or_else(|| volume_secrets(vol).first().map(|(s, _)| s.to_string()))
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
        router_tls_secret(&rs[0])
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
    fn a_secret_without_items_holds_top_level_keys_only() {
        let vol: Value = serde_json::json!({"secret": {"secretName": "router-tls"}});
        assert_eq!(
            secret_key_at(&vol, "tls.crt"),
            Some(("router-tls".to_string(), "tls.crt".to_string()))
        );
        assert_eq!(secret_key_at(&vol, "certs/tls.crt"), None);
        assert_eq!(secret_key_at(&vol, ""), None);
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
