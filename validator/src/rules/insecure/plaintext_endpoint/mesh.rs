//! Service-mesh policies that turn TLS off for the stack's services: an Istio `DestinationRule`
//! whose traffic policy (its own, a port's or a subset's) has `tls.mode: DISABLE` for a host that
//! is one of the stack's Services, and a `PeerAuthentication` whose mTLS mode (workload or port
//! level) is `DISABLE` or `PERMISSIVE` in a namespace where the stack runs pods, or in Istio's root
//! namespace, where it applies to the whole mesh.

use super::*;

/// Istio's root namespace when `meshConfig.rootNamespace` is not set: a PeerAuthentication there
/// is mesh-wide. Source: istio.io reference/config/istio.mesh.v1alpha1 (MeshConfig.rootNamespace,
/// default `istio-system`) and reference/config/security/peer_authentication.
const ISTIO_ROOT_NAMESPACE: &str = "istio-system";

/// `name.ns.svc.cluster.local` of the host a DestinationRule in `ns` names, as Istio resolves a
/// short name (the rule's namespace) and a partial one; wildcards are kept (`*.ns.svc.cluster.local`).
fn full_host(host: &str, ns: &str) -> String {
    let dots = host.matches('.').count();
    if host == "*" || host.ends_with(".svc.cluster.local") {
        host.to_string()
    } else if host.ends_with(".svc") {
        format!("{host}.cluster.local")
    } else if dots == 0 {
        format!("{host}.{ns}.svc.cluster.local")
    } else if dots == 1 {
        format!("{host}.svc.cluster.local")
    } else {
        host.to_string()
    }
}

/// The stack's Services a DestinationRule host reaches.
fn services_of<'g>(g: &'g Graph, host: &str, ns: &str) -> Vec<&'g Object> {
    let want = full_host(host, ns);
    rendered(g)
        .filter(|o| o.group().is_empty() && o.kind == "Service")
        .filter(|s| {
            let fqdn = format!(
                "{}.{}.svc.cluster.local",
                s.name,
                s.namespace.as_deref().unwrap_or("default")
            );
            match want.strip_prefix('*') {
                Some(suffix) => fqdn.ends_with(suffix),
                None => fqdn == want,
            }
        })
        .collect()
}

/// `tls.mode: DISABLE` in a DestinationRule, for each place a traffic policy may sit.
pub(super) fn destination_rule(g: &Graph, dr: &Object) -> Vec<Finding> {
    let ns = dr.namespace.as_deref().unwrap_or("default");
    let Some(host) = dr.str_at("/spec/host") else {
        return Vec::new();
    };
    let services = services_of(g, host, ns);
    let Some(first) = services.first() else {
        return Vec::new();
    };
    let mut policies: Vec<(String, &Value)> = Vec::new();
    if let Some(p) = dr.at("/spec/trafficPolicy") {
        policies.push(("trafficPolicy".into(), p));
    }
    for (i, s) in dr
        .at("/spec/subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(p) = s.get("trafficPolicy") {
            policies.push((format!("subsets[{i}].trafficPolicy"), p));
        }
    }
    let mut out = Vec::new();
    for (at, p) in policies {
        let mut places = vec![(format!("{at}.tls.mode"), p.pointer("/tls/mode"))];
        for (i, port) in p
            .get("portLevelSettings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            places.push((
                format!("{at}.portLevelSettings[{i}].tls.mode"),
                port.pointer("/tls/mode"),
            ));
        }
        for (path, mode) in places {
            if mode.and_then(Value::as_str) != Some("DISABLE") {
                continue;
            }
            let more = match services.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            };
            out.push(
                Finding::object_at(PLAINTEXT_ENDPOINT, dr, "DISABLE", format!(
                    "{}: `{path}: DISABLE` for host `{host}` makes the mesh's clients speak plaintext to {}{more}: the stack's traffic to it crosses the network unencrypted",
                    dr.display(), first.display()
                ))
                .with_help("use tls.mode ISTIO_MUTUAL (or SIMPLE/MUTUAL with the CA bundle that signed the service's certificate); remove the DISABLE override"),
            );
        }
    }
    out
}

/// mTLS `DISABLE`/`PERMISSIVE` in a PeerAuthentication where the stack runs pods (or mesh-wide).
pub(super) fn peer_authentication(g: &Graph, pa: &Object) -> Vec<Finding> {
    let ns = pa.namespace.as_deref().unwrap_or("default");
    let mesh_wide = ns == ISTIO_ROOT_NAMESPACE;
    let stack_pods = rendered(g).any(|o| o.namespace.as_deref() == Some(ns) && o.pod_spec().is_some());
    if !mesh_wide && !stack_pods {
        return Vec::new();
    }
    let mut places = vec![("mtls.mode".to_string(), pa.at("/spec/mtls/mode"))];
    for (port, m) in pa
        .at("/spec/portLevelMtls")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        places.push((format!("portLevelMtls.{port}.mode"), m.get("mode")));
    }
    let scope = if mesh_wide {
        "the whole mesh (Istio's root namespace), the stack's namespaces included".to_string()
    } else {
        format!("the stack's pods in namespace `{ns}`")
    };
    let mut out = Vec::new();
    for (path, mode) in places {
        let effect = match mode.and_then(Value::as_str) {
            Some("DISABLE") => "turns mutual TLS off: sidecars accept and send plaintext",
            Some("PERMISSIVE") => "accepts plaintext connections beside mutual TLS: any client may skip TLS",
            _ => continue,
        };
        let mode = mode.and_then(Value::as_str).unwrap_or_default();
        out.push(
            Finding::object_at(
                PLAINTEXT_ENDPOINT,
                pa,
                mode,
                format!("{}: `{path}: {mode}` {effect}, for {scope}", pa.display()),
            )
            .with_help("set the mode to STRICT (or remove the override so the mesh-wide STRICT applies)"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_resolve_as_istio_resolves_them() {
        assert_eq!(full_host("router", "nvcf"), "router.nvcf.svc.cluster.local");
        assert_eq!(full_host("router.nvcf", "x"), "router.nvcf.svc.cluster.local");
        assert_eq!(full_host("router.nvcf.svc", "x"), "router.nvcf.svc.cluster.local");
        assert_eq!(full_host("*.nvcf.svc.cluster.local", "x"), "*.nvcf.svc.cluster.local");
        assert_eq!(full_host("api.example.com", "x"), "api.example.com");
    }
}
