//! `route-parent-resolves`: every route would be Accepted by the Gateway listeners it names, and
//! every TLS listener's certificateRefs resolve.

use super::*;

pub(super) fn check_parents(ctx: &Ctx) -> Vec<Finding> {
    const ID: &str = "route-parent-resolves";
    let mut out = Vec::new();
    for route in routes(ctx.graph) {
        let refs = gateway::parent_refs(route);
        if refs.is_empty() {
            out.push(
                finding_at(
                    ID,
                    route,
                    &["spec:".to_string()],
                    format!(
                        "{} would never be Accepted: it has no spec.parentRefs, so no Gateway attaches it and no \
                         parent status (Accepted) is ever written — in effect NoMatchingParent",
                        route.display()
                    ),
                )
                .with_help(
                    "Add spec.parentRefs naming the Gateway (and sectionName of the listener) the route is for.",
                ),
            );
            continue;
        }
        for pr in &refs {
            if let gateway::Attach::Rejected { reason, detail, help } = gateway::attach(ctx.graph, route, pr) {
                out.push(
                    finding_at(
                        ID,
                        route,
                        &pr.path(),
                        format!(
                            "{} would not be Accepted by Gateway {}/{}{}: Accepted=False {reason} — {detail}",
                            route.display(),
                            pr.namespace,
                            pr.name,
                            pr.qualifiers()
                        ),
                    )
                    .with_help(help),
                );
            }
        }
    }
    for gw in ctx.graph.of(GW_GROUP, "Gateway").filter(|g| !g.prov.external) {
        for p in backend::certificate_problems(ctx.graph, gw) {
            out.push(
                finding_at(
                    ID,
                    gw,
                    &p.path,
                    format!(
                        "{} listener `{}` would not be ready: ResolvedRefs=False {} — {}; routes attached to it get no \
                         TLS",
                        gw.display(),
                        p.listener,
                        p.reason,
                        p.detail
                    ),
                )
                .with_help(p.help),
            );
        }
    }
    out
}
