//! `gateway-api-version`: every route apiVersion is served by the Gateway API release and channel
//! the policy declares.

use super::*;

pub(super) fn check_version(ctx: &Ctx) -> Vec<Finding> {
    let gw = &ctx.policy.settings.gateway_api;
    let (major, minor) = gw.minor();
    let minor = if major > 1 { version::NEWEST_MINOR } else { minor };
    let experimental = gw.channel.eq_ignore_ascii_case("experimental");
    let channel = if experimental { "experimental" } else { "standard" };
    let declared =
        format!("Gateway API v{major}.{minor} ({channel} channel, validator-policy.yaml settings.gatewayApi)");
    let mut out = Vec::new();
    for route in routes(ctx.graph) {
        let have = route.api_version.rsplit('/').next().unwrap_or("");
        let served = version::served(&route.kind, minor, experimental);
        if served.contains(&have) {
            continue;
        }
        let (msg, help) = if served.is_empty() {
            let other = version::served(&route.kind, minor, !experimental);
            let newest = version::served(&route.kind, version::NEWEST_MINOR, false);
            (
                format!(
                    "{} uses {}, but {} has no {} at all: the API server would refuse it (no matches for kind {})",
                    route.display(),
                    route.api_version,
                    declared,
                    route.kind,
                    route.kind
                ),
                if !other.is_empty() {
                    format!(
                        "Install the {} channel and declare it in settings.gatewayApi.channel (served there: {}), or \
                         target a Gateway API release whose standard channel serves {} (v1.{}: {}).",
                        if experimental { "standard" } else { "experimental" },
                        other.join(", "),
                        route.kind,
                        version::NEWEST_MINOR,
                        newest.join(", ")
                    )
                } else {
                    format!(
                        "Target a newer Gateway API release (v1.{}: {}).",
                        version::NEWEST_MINOR,
                        newest.join(", ")
                    )
                },
            )
        } else {
            (
                format!(
                    "{} uses {}, which {} does not serve (served: {}): the API server would refuse it",
                    route.display(),
                    route.api_version,
                    declared,
                    served.iter().map(|v| format!("{GW_GROUP}/{v}")).collect::<Vec<_>>().join(", ")
                ),
                format!(
                    "Set apiVersion: {GW_GROUP}/{} (make the apiVersion a chart value that follows the declared Gateway \
                     API version), or change settings.gatewayApi if the cluster runs a different release.",
                    served[0]
                ),
            )
        };
        out.push(finding_at("gateway-api-version", route, &["apiVersion:".to_string()], msg).with_help(help));
    }
    out
}
