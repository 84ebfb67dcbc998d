//! `san-covers-advertised-name`: every name a worker or client sends as SNI is covered by the
//! serving certificate's SANs (listener hostnames, advertised hostname expansions, the gRPC dial host).

mod advertised;
mod grpc_dial;
#[cfg(test)]
mod ordinal_tests;
#[cfg(test)]
mod tests;

use super::*;
use advertised::*;
use grpc_dial::*;

const SAN: &str = "san-covers-advertised-name";

pub(super) fn check_san(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = router_identity::undetermined(ctx.routers(), SAN, router_identity::NAME_FLAGS);
    // Listener hostnames first; remember what was judged so the gRPC check does not repeat it.
    let mut judged: BTreeSet<(String, String, String)> = BTreeSet::new();
    for gw in g.of(GW, "Gateway") {
        for l in items(&gw.body, "/spec/listeners") {
            let Some(ids) = listener_identities(g, gw, l) else {
                continue;
            };
            let lname = l.get("name").and_then(Value::as_str).unwrap_or("?");
            for name in listener_names(g, gw, l) {
                judged.insert((gw.display(), lname.to_string(), name.to_ascii_lowercase()));
                if let Some(id) = ids.iter().find(|id| !id.covers(&name)) {
                    out.push(listener_finding(gw, l, lname, &name, id));
                }
            }
        }
    }
    out.extend(check_ingress_tls(g));
    for r in ctx.routers() {
        out.extend(check_advertised(g, r));
        out.extend(check_grpc_dial(g, r, &judged));
    }
    out
}

/// Ingress TLS: every host of a `spec.tls` entry against the certificate its `secretName` will
/// hold (the Ingress controller presents it for exactly those SNI names).
fn check_ingress_tls(g: &Graph) -> Vec<Finding> {
    let mut out = Vec::new();
    let ingresses = g
        .objects
        .iter()
        .filter(|o| !o.prov.external && o.group() == "networking.k8s.io" && o.kind == "Ingress");
    for ing in ingresses {
        for t in items(&ing.body, "/spec/tls") {
            let Some(secret) = t.get("secretName").and_then(Value::as_str) else {
                continue;
            };
            let Some(id) = identity(g, ns_of(ing), secret) else {
                continue;
            };
            for host in strings(t, "/hosts") {
                if !id.covers(&host) {
                    out.push(
                        Finding::object_at(SAN, ing, &host, format!(
                            "{}: TLS host {host} (Secret {secret}) is not covered by {}{}; add {host}{}",
                            ing.display(),
                            id.describe(),
                            depth_hint(&id.dns_names(), &host),
                            names::one_label_wildcard(&host)
                                .map(|w| format!(" or the one-label wildcard {w}"))
                                .unwrap_or_default()
                        ))
                        .with_help("Clients match the SNI against subjectAltNames only (the CN is ignored); a `*` covers one label."),
                    );
                }
            }
        }
    }
    out
}

fn listener_finding(gw: &Object, l: &Value, lname: &str, name: &str, id: &Identity) -> Finding {
    let lhost = l.get("hostname").and_then(Value::as_str);
    let msg = if name.starts_with("*.") {
        format!(
            "listener `{lname}` of {} serves {name}: Gateway API sends names of any depth under it to this listener, \
             but an X.509 wildcard covers exactly one label and {} has no {name}; add {name} (and exact names or deeper \
             wildcards for deeper hosts), or give the listener a specific hostname",
            gw.display(),
            id.describe()
        )
    } else {
        format!(
            "hostname {name} served by listener `{lname}`{} of {} is not covered by {}{}; add {name}{}",
            lhost
                .filter(|h| !h.eq_ignore_ascii_case(name))
                .map(|h| format!(" ({h})"))
                .unwrap_or_default(),
            gw.display(),
            id.describe(),
            depth_hint(&id.dns_names(), name),
            names::one_label_wildcard(name)
                .map(|w| format!(" or the one-label wildcard {w}"))
                .unwrap_or_default()
        )
    };
    Finding::object_at(SAN, gw, lhost.unwrap_or(lname), msg).with_help(
        "Workers and clients match the SNI against subjectAltNames only (the CN is ignored); a `*` covers one label.",
    )
}
