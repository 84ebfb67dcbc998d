//! `tls-mount-reloadable`: the router reads its certificate from a whole-volume Secret mount that renews in place.

use super::*;

const RELOAD: &str = "tls-mount-reloadable";

pub(super) fn check_reloadable(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let tls_by_ns = tls_secrets_by_namespace(g);
    let all_routers = ctx.routers();
    let mut out = Vec::new();
    for obj in g.objects.iter().filter(|o| is_workload(o)) {
        if obj.pod_spec().is_none() {
            continue;
        }
        let mut tls = tls_by_ns.get(ns_of(obj)).cloned().unwrap_or_default();
        let mine: Vec<&RouterWorkload> = all_routers.iter().filter(|r| std::ptr::eq(r.obj, obj)).collect();
        tls.extend(mine.iter().filter_map(|r| router_tls_secret(g, r)));
        if tls.is_empty() {
            continue;
        }
        let keys = rendered_keys(g, obj.namespace.as_deref());
        let mut uses_tls = false;
        for (_, c) in obj.containers() {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
            // A container's volumes are its own pod spec's (an object may hold several).
            let Some(pod) = obj.pod_spec_of(c) else { continue };
            for m in items(c, "/volumeMounts") {
                let vname = m.get("name").and_then(Value::as_str).unwrap_or("");
                let Some(vol) = items(pod, "/volumes").find(|v| v.get("name").and_then(Value::as_str) == Some(vname))
                else {
                    continue;
                };
                let mut in_vol = volume_secrets(vol)
                    .into_iter()
                    .map(|s| s.name)
                    .filter(|s| tls.contains(*s));
                let Some(first) = in_vol.next() else { continue };
                uses_tls = true;
                let Some(sp) = sub_path(m) else { continue };
                // What the subPath shows: the file or directory of the volume there. Another
                // source's file (a config file of the same projected volume) is no TLS material;
                // a subPathExpr, or a path no source writes, is judged by the whole volume.
                let behind = if sp.contains("$(") {
                    Vec::new()
                } else {
                    sources_at(vol, sp, &keys)
                };
                let secret = if behind.is_empty() {
                    first
                } else {
                    let Some(s) = behind
                        .iter()
                        .find(|s| s.kind == SourceKind::Secret && tls.contains(s.name))
                    else {
                        continue;
                    };
                    s.name
                };
                out.push(Finding::object_at(RELOAD, obj, &format!("subPath: {sp}"), format!(
                    "container {cname} of {} mounts the TLS Secret {secret} (volume {vname}) with subPath {sp}: subPath \
                     mounts never receive updates, so the renewed certificate never reaches the process; mount the whole \
                     volume as a directory and point the path flags into it",
                    obj.display()
                )));
            }
            for e in items(c, "/env") {
                let Some(secret) = str_at(e, "/valueFrom/secretKeyRef/name").filter(|s| tls.contains(*s)) else {
                    continue;
                };
                uses_tls = true;
                let var = e.get("name").and_then(Value::as_str).unwrap_or("?");
                out.push(Finding::object_at(RELOAD, obj, "secretKeyRef", format!(
                    "container {cname} of {} reads the TLS Secret {secret} through env {var}: environment variables are \
                     fixed at start, so renewals never reach the process; mount the Secret as a volume instead",
                    obj.display()
                )));
            }
            for e in items(c, "/envFrom") {
                let Some(secret) = str_at(e, "/secretRef/name").filter(|s| tls.contains(*s)) else {
                    continue;
                };
                uses_tls = true;
                out.push(Finding::object_at(RELOAD, obj, "secretRef", format!(
                    "container {cname} of {} imports the TLS Secret {secret} with envFrom: environment variables are fixed \
                     at start, so renewals never reach the process; mount the Secret as a volume instead",
                    obj.display()
                )));
            }
        }
        // Cert and key from different volumes or Secrets.
        for r in &mine {
            let (Some(cp), Some(kp)) = (
                r.flag(F_CERT).filter(|p| !p.is_empty()),
                r.flag(F_KEY).filter(|p| !p.is_empty()),
            ) else {
                continue;
            };
            let Some(pod) = obj.pod_spec_of(r.container) else {
                continue;
            };
            let (Some(cm), Some(km)) = (mounted_at(pod, r.container, cp), mounted_at(pod, r.container, kp)) else {
                continue;
            };
            // The Secret each file comes from, through subPath and items.
            let key_of = |m: &MountedPath| secret_file(g, obj, m).map(|(s, _)| s);
            let (cs, ks) = (key_of(&cm), key_of(&km));
            if cm.volume_name() != km.volume_name() {
                out.push(Finding::object_at(RELOAD, obj, F_KEY, format!(
                    "{} reads {F_CERT} from volume {} and {F_KEY} from volume {}: keys of one Secret flip together only \
                     within one volume, so during a renewal the router can load a certificate with the other key; mount one \
                     volume with both tls.crt and tls.key",
                    r.describe(),
                    cm.volume_name(),
                    km.volume_name()
                )));
            } else if let (Some(cs), Some(ks)) = (cs, ks) {
                if cs != ks {
                    out.push(Finding::object_at(RELOAD, obj, F_KEY, format!(
                        "{} takes the certificate from Secret {cs} and the key from Secret {ks}: they renew independently, \
                         so the pair will not match after a renewal; take both from the one Secret cert-manager writes",
                        r.describe()
                    )));
                }
            }
        }
        // Restart-on-change annotations.
        if !uses_tls && mine.is_empty() {
            continue;
        }
        let tmpl_ann = obj.at("/spec/template/metadata/annotations").and_then(Value::as_object);
        for k in tmpl_ann.into_iter().flatten().map(|(k, _)| k) {
            let lk = k.to_ascii_lowercase();
            if lk.contains("checksum")
                && (["tls", "cert", "secret"].iter().any(|w| lk.contains(w))
                    || tls.iter().any(|s| lk.contains(&s.to_ascii_lowercase())))
            {
                out.push(Finding::object_at(RELOAD, obj, k, format!(
                    "the pod template of {} carries annotation {k}, a checksum of TLS material: every renewal changes it \
                     and restarts all pods (dropping every worker tunnel), although the router reloads certificates in \
                     place; remove the annotation",
                    obj.display()
                )));
            }
        }
        let meta_ann = obj.annotations();
        for (k, v) in meta_ann.into_iter().flatten().chain(tmpl_ann.into_iter().flatten()) {
            let val = v.as_str().unwrap_or("");
            let hit = match k.as_str() {
                "secret.reloader.stakater.com/reload" => val
                    .split(',')
                    .map(str::trim)
                    .find(|s| tls.contains(*s))
                    .map(str::to_string),
                "reloader.stakater.com/auto" | "secret.reloader.stakater.com/auto" if val == "true" && uses_tls => {
                    Some("its TLS Secret".to_string())
                }
                _ => None,
            };
            if let Some(what) = hit {
                out.push(Finding::object_at(RELOAD, obj, k, format!(
                    "{} has annotation {k}: {val}, which restarts its pods whenever {what} is renewed; the router reloads \
                     certificates in place, so drop the annotation (or exclude the TLS Secret from it)",
                    obj.display()
                )));
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
    fn reloadable_reports_each_way_of_freezing_the_certificate() {
        let cases = [
            ("fires-tls-mount-reloadable-subpath", 2, "with subPath tls.crt"),
            ("fires-tls-mount-reloadable-env", 1, "through env TLS_KEY"),
            (
                "fires-tls-mount-reloadable-checksum",
                1,
                "annotation checksum/tls-secret",
            ),
            (
                "fires-tls-mount-reloadable-split-volumes",
                1,
                "from volume tls-crt and --tls-key-path from volume tls-key",
            ),
            // A directory by subPath: the pair is read at certs/… of the volume, behind it.
            ("fires-tls-mount-reloadable-subpath-directory", 2, "with subPath certs"),
        ];
        for (name, n, want) in cases {
            let f = run(RELOAD, &fixture(name));
            assert_eq!(f.len(), n, "{name}: {}", messages(&f));
            assert!(f[0].message.contains(want), "{name}: {}", f[0].message);
        }
        // Reloader restarts on renewal too.
        let text = fixture("silent-tls-mount-reloadable-whole-volume")
            .replace("metadata:\n  name: request-router\n", "metadata:\n  name: request-router\n  annotations:\n    secret.reloader.stakater.com/reload: request-router-tls\n");
        let f = run(RELOAD, &text);
        assert_eq!(f.len(), 1, "{}", messages(&f));
    }

    /// A subPath is judged by what it shows: a TLS Secret's file (the pair split across two
    /// Secrets of one projected volume, each file mounted by subPath), another source's file
    /// (silent), or what the gate cannot expand (`subPathExpr`: the volume's TLS Secret).
    #[test]
    fn a_sub_path_shows_the_file_of_the_source_that_writes_it() {
        let base = fixture("silent-tls-mount-reloadable-subpath-config-file");
        assert!(run(RELOAD, &base).is_empty(), "{}", messages(&run(RELOAD, &base)));
        let split = base
            .replace(
                "              mountPath: /etc/stargate/tls\n              readOnly: true\n",
                "              mountPath: /etc/stargate/tls/certs/tls.crt\n              subPath: certs/tls.crt\n            - name: tls\n              mountPath: /etc/stargate/tls/certs/tls.key\n              subPath: certs/tls.key\n",
            )
            .replace(
                "items: [{key: tls.crt, path: certs/tls.crt}, {key: tls.key, path: certs/tls.key}]",
                "items: [{key: tls.crt, path: certs/tls.crt}]\n              - secret:\n                  name: other-key\n                  items: [{key: tls.key, path: certs/tls.key}]",
            );
        let f = run(RELOAD, &split);
        let all = messages(&f);
        assert_eq!(f.len(), 2, "{all}");
        assert!(all.contains("with subPath certs/tls.crt"), "{all}");
        assert!(
            all.contains("takes the certificate from Secret request-router-tls and the key from Secret other-key"),
            "{all}"
        );
        let expr = base.replace("subPath: stargate.yaml", "subPathExpr: $(POD_NAME)");
        let f = run(RELOAD, &expr);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message
                .contains("request-router-tls (volume tls) with subPath $(POD_NAME)"),
            "{}",
            f[0].message
        );
    }

    /// Reloader's auto mode restarts a workload on a change of any Secret it uses: only when it is
    /// on ("true") and the workload mounts a TLS Secret.
    #[test]
    fn reloader_auto_counts_only_when_on() {
        let base = fixture("silent-tls-mount-reloadable-whole-volume");
        let with = |key: &str, val: &str| {
            base.replace(
                "metadata:\n  name: request-router\n",
                &format!("metadata:\n  name: request-router\n  annotations:\n    {key}: \"{val}\"\n"),
            )
        };
        for key in ["reloader.stakater.com/auto", "secret.reloader.stakater.com/auto"] {
            let f = run(RELOAD, &with(key, "true"));
            assert_eq!(f.len(), 1, "{key}: {}", messages(&f));
            assert!(
                f[0].message.contains(&format!(
                    "annotation {key}: true, which restarts its pods whenever its TLS Secret is renewed"
                )),
                "{}",
                f[0].message
            );
            let f = run(RELOAD, &with(key, "false"));
            assert!(f.is_empty(), "{key}: {}", messages(&f));
        }
    }
}
