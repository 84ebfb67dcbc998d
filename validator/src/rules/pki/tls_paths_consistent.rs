//! `tls-paths-consistent`: the router's TLS flags point at files its mounts actually provide.

use super::*;

const PATHS: &str = "tls-paths-consistent";
/// Keys cert-manager writes into a TLS Secret.
const TLS_KEYS: &[&str] = &["tls.crt", "tls.key", "ca.crt"];

pub(super) fn check_paths(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let tls_by_ns = tls_secrets_by_namespace(g);
    let mut out = router_identity::undetermined(ctx.routers(), PATHS, router_identity::PATH_FLAGS);
    for r in ctx.routers() {
        let obj = r.obj;
        let cert = r.flag(F_CERT).filter(|p| !p.is_empty());
        let key = r.flag(F_KEY).filter(|p| !p.is_empty());
        match (cert, key) {
            (None, None) => continue,
            // An argument the gate cannot read may be the missing flag: reported as undetermined.
            (Some(_), None) | (None, Some(_)) if r.unknown.iter().any(|(f, _, _)| f.is_none()) => continue,
            (Some(_), None) | (None, Some(_)) => {
                let (set, unset) = if cert.is_some() {
                    (F_CERT, F_KEY)
                } else {
                    (F_KEY, F_CERT)
                };
                out.push(Finding::object_at(PATHS, obj, set, format!(
                    "{} sets {set} but not {unset}: the router needs both (or neither) and the half-set pair either fails \
                     at start or leaves QUIC without the intended certificate; set {unset} to the other file of the same \
                     mounted TLS Secret",
                    r.describe()
                )));
                continue;
            }
            (Some(_), Some(_)) => {}
        }
        let Some(pod) = obj.pod_spec_of(r.container) else {
            continue;
        };
        let tls = tls_by_ns.get(ns_of(obj)).cloned().unwrap_or_default();
        for (flag, path, want) in [
            (F_CERT, cert.unwrap_or(""), "tls.crt"),
            (F_KEY, key.unwrap_or(""), "tls.key"),
        ] {
            let Some(m) = mounted_at(pod, r.container, path) else {
                out.push(Finding::object_at(
                    PATHS,
                    obj,
                    flag,
                    format!(
                    "{flag}={path} of {} is not inside any volume mounted in the container; mount the TLS Secret as a \
                     directory and point {flag} at its {want}",
                    r.describe()
                ),
                ));
                continue;
            };
            if m.volume.is_none_or(|v| volume_secrets(v).is_empty()) {
                let kind = m
                    .volume
                    .and_then(|v| v.as_object())
                    .and_then(|o| o.keys().find(|k| *k != "name").cloned())
                    .unwrap_or_else(|| "undeclared".into());
                out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} points into volume {} ({kind}) mounted at {}, not a secret or projected volume \
                     holding the TLS Secret; mount the Secret and point {flag} at its {want}",
                    r.describe(),
                    m.volume_name(),
                    m.mount_path
                )));
                continue;
            }
            if m.sub_path().is_some() {
                continue; // tls-mount-reloadable reports subPath mounts
            }
            match secret_file(g, obj, &m) {
                None => out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} names {} inside volume {} (mounted at {}), but the volume projects no such file; \
                     point {flag} at {}/{want}",
                    r.describe(),
                    if m.rel.is_empty() { "the mount directory itself".to_string() } else { format!("`{}`", m.rel) },
                    m.volume_name(),
                    m.mount_path,
                    m.mount_path
                ))),
                Some((secret, k)) if tls.contains(&secret) && !TLS_KEYS.contains(&k.as_str()) => out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} names `{k}` inside volume {} (mounted at {}), but the TLS Secret {secret} has only \
                     the keys tls.crt, tls.key and ca.crt; point {flag} at {}/{want}",
                    r.describe(),
                    m.volume_name(),
                    m.mount_path,
                    m.mount_path
                ))),
                Some((secret, k)) if tls.contains(&secret) && k != want => out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} reads key `{k}` of the TLS Secret {secret}, but the {} is in `{want}`; point {flag} \
                     at {}/{want}",
                    r.describe(),
                    if want == "tls.crt" { "certificate chain" } else { "private key" },
                    m.mount_path
                ))),
                Some(_) => {}
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
    fn paths_findings_say_what_to_set() {
        let f = run(PATHS, &fixture("fires-tls-paths-consistent-half-set"));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.contains("sets --tls-cert-path but not --tls-key-path"),
            "{}",
            f[0].message
        );
        let f = run(PATHS, &fixture("fires-tls-paths-consistent-wrong-key"));
        let all = messages(&f);
        assert_eq!(f.len(), 2, "{all}");
        assert!(all.contains("names `cert.pem` inside volume tls"), "{all}");
        assert!(
            all.contains(
                "reads key `tls.crt` of the TLS Secret request-router-tls, but the private key is in `tls.key`"
            ),
            "{all}"
        );
        let f = run(PATHS, &fixture("fires-tls-paths-consistent-emptydir"));
        assert_eq!(f.len(), 2, "{}", messages(&f));
        assert!(
            f[0].message.contains("points into volume tls (emptyDir)"),
            "{}",
            f[0].message
        );
    }

    /// A path behind a subPath mount is tls-mount-reloadable's finding (mount the whole volume),
    /// not a second one here, even when the subPath shows the wrong key.
    #[test]
    fn a_sub_path_mount_is_left_to_the_reload_rule() {
        let text = fixture("fires-tls-mount-reloadable-subpath").replace("subPath: tls.crt", "subPath: tls.key");
        let f = run(PATHS, &text);
        assert!(f.is_empty(), "{}", messages(&f));
        let f = run("tls-mount-reloadable", &text);
        assert_eq!(f.len(), 2, "{}", messages(&f));
    }
}
