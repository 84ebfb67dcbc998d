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
    let rel = match m.sub_path() {
        Some(sp) if m.rel.is_empty() => sp.to_string(),
        _ => m.rel.clone(),
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
