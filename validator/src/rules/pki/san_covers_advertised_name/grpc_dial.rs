//! The workers' gRPC dial host against the SANs of the certificate that serves it.

use super::*;

/// gRPC: the dial host against whoever terminates TLS for it.
pub(super) fn check_grpc_dial(
    g: &Graph,
    r: &RouterWorkload,
    judged: &BTreeSet<(String, String, String)>,
) -> Vec<Finding> {
    let Some(addr) = r.flag(F_GRPC_DIAL) else {
        return Vec::new();
    };
    let Some(host) = https_host(addr) else {
        return Vec::new();
    };
    let ip_note = if host.parse::<IpAddr>().is_ok() {
        " (an IP: workers send no SNI and match iPAddress SANs)"
    } else {
        ""
    };
    match grpc_terminator(g, &host) {
        Terminator::Unknown => Vec::new(),
        Terminator::Listener { gw, listener } => {
            let lname = listener.get("name").and_then(Value::as_str).unwrap_or("?");
            if judged.contains(&(gw.display(), lname.to_string(), host.to_ascii_lowercase())) {
                return Vec::new();
            }
            let Some(ids) = listener_identities(g, gw, listener) else {
                return Vec::new();
            };
            let Some(id) = ids.iter().find(|id| !id.covers(&host)) else {
                return Vec::new();
            };
            vec![Finding::object_at(
                SAN,
                r.obj,
                F_GRPC_DIAL,
                format!(
                    "gRPC dial host {host}{ip_note} of {} ends TLS at listener `{lname}` of {}, whose {} does not cover it{}; \
                     add {host} to that certificate",
                    r.describe(),
                    gw.display(),
                    id.describe(),
                    depth_hint(&id.dns_names(), &host)
                ),
            )]
        }
        Terminator::Router => {
            let Some(secret) = router_tls_secret(g, r) else {
                return Vec::new();
            };
            let Some(id) = identity(g, ns_of(r.obj), &secret) else {
                return Vec::new();
            };
            if id.covers(&host) {
                return Vec::new();
            }
            let is_ip = !ip_note.is_empty();
            let fix = match (&id, is_ip) {
                (Identity::Cert(c), false) => format!(
                    "add {host} to spec.dnsNames of Certificate {}/{}, or terminate TLS at a Gateway HTTPS listener with a \
                     GRPCRoute for {host}",
                    ns_of(c),
                    c.name
                ),
                (Identity::Cert(c), true) => format!("add {host} to spec.ipAddresses of Certificate {}/{}", ns_of(c), c.name),
                (Identity::Chain { secret, .. }, _) => {
                    format!("have the certificate in {} reissued with {host} in its subjectAltNames", secret.display())
                }
            };
            vec![Finding::object_at(
                SAN,
                r.obj,
                F_GRPC_DIAL,
                format!(
                    "gRPC dial host {host}{ip_note} of {} is carried by no Gateway route, so TLS ends at the router; {} does \
                     not cover it{}; {fix}",
                    r.describe(),
                    id.describe(),
                    depth_hint(&id.dns_names(), &host)
                ),
            )]
        }
    }
}
