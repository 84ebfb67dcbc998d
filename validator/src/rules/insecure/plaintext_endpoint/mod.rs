//! `plaintext-endpoint`: an endpoint that must speak TLS is plaintext (Vault/OpenBao servers, the
//! OpenBao listener, the workers' gRPC dial address, worker gRPC behind a plain TCP listener).

mod containers;
mod dev;
#[cfg(test)]
mod dial_tests;
mod dials;
mod exposure;
mod mesh;
mod state;
#[cfg(test)]
mod tests;

use super::servers::{self, Servers};
use super::*;
use dev::*;
use dials::*;
use exposure::*;
use state::*;

/// `VAULT_ADDR`, `BAO_ADDR`, `AGENT_INJECT_VAULT_ADDR`, `BAO_API_ADDR`, …
fn is_vault_addr_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').collect();
    words.iter().any(|w| *w == "VAULT" || *w == "BAO") && matches!(words.last(), Some(&"ADDR") | Some(&"ADDRESS"))
}

/// `BAO_API_ADDR`, `VAULT_CLUSTER_ADDR`, `VAULT_REDIRECT_ADDR`: the address a server advertises
/// for itself (a client dialing it reaches that server).
fn is_own_addr_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    ["API", "CLUSTER", "REDIRECT"]
        .iter()
        .any(|w| up.split('_').any(|p| p == *w))
}

/// A workload that serves plaintext itself: a dev server, or a `*_LOCAL_CONFIG` variable whose
/// listener serves plaintext.
fn serves_plaintext(g: &Graph, obj: &Object) -> bool {
    obj.containers().iter().any(|(_, c)| {
        dev_server(c).is_some()
            || env_of(g, obj, c)
                .iter()
                .any(|e| norm(&e.name).ends_with("localconfig") && disables_tls(&scalar_text(&e.value)))
    })
}

pub(super) fn plaintext_endpoint(ctx: &Ctx) -> Vec<Finding> {
    // The router's dial flag in any spelling (`--grpc-pylon-dial-addr`, `-grpc_pylon_dial_addr`,
    // `GRPC_PYLON_DIAL_ADDR`): `grpcpylondialaddr`.
    let grpc_dial = norm(router::GRPC_PYLON_DIAL_ADDR);
    // The router's gRPC ports, from its `--listen-addr` (the binary's default when absent).
    let grpc_ports = router::grpc_listen_ports(ctx.routers());
    let servers = Servers::new(ctx.graph, |o| serves_plaintext(ctx.graph, o));
    // Root causes (a plaintext listener, a dev server) come first, so that each folds the
    // addresses that dial it (`crate::fold` keeps the first finding of a cause).
    let mut roots = Vec::new();
    let mut out = Vec::new();
    for obj in rendered(ctx.graph) {
        let ns = obj.namespace.as_deref();
        match (obj.group(), obj.kind.as_str()) {
            ("cert-manager.io", "Issuer" | "ClusterIssuer") => {
                if let Some(server) = obj.str_at("/spec/vault/server").filter(|s| is_http(s)) {
                    let mut f = Finding::object_at(PLAINTEXT_ENDPOINT, obj, "server:", format!("{}: spec.vault.server `{server}` is plain HTTP; cert-manager would send its Vault token and receive signed certificates in cleartext", obj.display()))
                        .with_help("use the OpenBao listener's https:// address and set caBundle (or caBundleSecretRef) to the CA that signed it");
                    if let Some(d) = dial::parse_dial(server) {
                        f = f.with_cause(servers.dial_cause(ns, &d));
                    }
                    out.push(f);
                }
            }
            ("", "ConfigMap") => {
                for (root, f) in configmap_plaintext(obj) {
                    if root {
                        roots.push(f);
                    } else {
                        out.push(f);
                    }
                }
                out.extend(configmap_dials(ctx, &servers, obj));
            }
            ("", "Secret") => out.extend(configmap_dials(ctx, &servers, obj)),
            ("networking.istio.io", "DestinationRule") => out.extend(mesh::destination_rule(ctx.graph, obj)),
            ("security.istio.io", "PeerAuthentication") => out.extend(mesh::peer_authentication(ctx.graph, obj)),
            ("gateway.networking.k8s.io", "TCPRoute" | "HTTPRoute" | "GRPCRoute") => {
                out.extend(route_grpc(ctx.graph, obj, &grpc_ports))
            }
            ("", "Service") => out.extend(exposed_grpc_service(ctx.graph, obj, &grpc_ports)),
            ("networking.k8s.io", "Ingress") => out.extend(plaintext_ingress(ctx.graph, obj, &grpc_ports)),
            _ => {}
        }
        containers::containers(ctx, &servers, obj, &grpc_dial, &mut roots, &mut out);
    }
    roots.append(&mut out);
    let mut out = roots;
    if let Some(state) = ctx.state {
        for r in state.installed() {
            // OpenBao/Vault servers by chart name or by what their values configure.
            let server = is_openbao(r) || server_config::configures_server(&effective_values(r));
            if server {
                out.extend(openbao_values(ctx, r));
            }
            out.extend(dev_args(ctx, r, server));
        }
    }
    out
}
