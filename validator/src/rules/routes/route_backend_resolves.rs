//! `route-backend-resolves`: every backendRef of a route resolves to a Service port it may use
//! (ResolvedRefs).

use super::*;

pub(super) fn check_backends(ctx: &Ctx) -> Vec<Finding> {
    const ID: &str = "route-backend-resolves";
    let mut out = Vec::new();
    for route in routes(ctx.graph) {
        for b in backend::backend_refs(route) {
            let head = format!("{} would not have ResolvedRefs", route.display());
            match backend::resolve(ctx.graph, route, &b) {
                backend::Backend::RefNotPermitted { detail, help } => out.push(
                    finding_at(
                        ID,
                        route,
                        &b.path(),
                        format!("{head}: ResolvedRefs=False RefNotPermitted — {detail}"),
                    )
                    .with_help(help),
                ),
                backend::Backend::NotFound { detail, help } => out.push(
                    finding_at(
                        ID,
                        route,
                        &b.path(),
                        format!("{head}: ResolvedRefs=False BackendNotFound — {detail}"),
                    )
                    .with_help(help),
                ),
                backend::Backend::Resolved { port: Some(p), .. } => {
                    let proto = backend::port_protocol(p);
                    let wants_udp = route.kind == "UDPRoute";
                    if wants_udp != (proto == "UDP") {
                        let carried = if wants_udp { "UDP datagrams" } else { "TCP streams" };
                        out.push(
                            finding_at(
                                ID,
                                route,
                                &b.path(),
                                format!(
                                    "{}: {} is a {proto} Service port, but a {} carries {carried}; Gateway API leaves this \
                                     to the implementation and common ones reject it (Envoy Gateway: ResolvedRefs=False \
                                     PortNotFound), so traffic would not flow",
                                    route.display(),
                                    b.describe(),
                                    route.kind
                                ),
                            )
                            .with_severity(Severity::Warning)
                            .with_help(format!(
                                "Point the backendRef at the Service port with protocol {} (a Service may expose the \
                                 same number over TCP and UDP as two entries).",
                                if wants_udp { "UDP" } else { "TCP" }
                            )),
                        );
                    }
                }
                backend::Backend::Resolved { port: None, .. } | backend::Backend::NotJudged => {}
            }
        }
    }
    out
}
