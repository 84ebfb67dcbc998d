//! The LLM request router as the rules see it: its command-line contract (flag names), one parse
//! of a container's flags, and discovery of the workload containers that run it. The PKI rules
//! (SANs, TLS paths, reloadable mounts) and the worker-route rule read the router through this
//! module, so a flag spelled in a `sh -c` script or as `--flag value` means the same to both.
//!
//! `insecure-flag` and `plaintext-endpoint` keep their own, deliberately broader command-line
//! reading (`-flag`, normalised names, shell punctuation stripped, non-string scalars): they hunt
//! for any client's insecure switch, not for the router's contract. They share
//! [`command_line`] (which elements form a command line, in order) and the flag names.

use crate::graph::{Graph, Object};
use serde_json::Value;

/// gRPC listen address (workers, clients).
pub const LISTEN_ADDR: &str = "--listen-addr";
/// QUIC reverse-tunnel listen address.
pub const REVERSE_TUNNEL_LISTEN_ADDR: &str = "--reverse-tunnel-listen-addr";
/// How the router reaches its backends.
pub const BACKEND_CONNECTIVITY: &str = "--backend-connectivity";
/// Per-pod hostname the router advertises (`{pod_name}` expands to the pod's name).
pub const ADVERTISED_HOSTNAME_TEMPLATE: &str = "--advertised-hostname-template";
/// gRPC address workers dial to register.
pub const GRPC_PYLON_DIAL_ADDR: &str = "--grpc-pylon-dial-addr";
/// QUIC reverse-tunnel address workers dial.
pub const REVERSE_TUNNEL_PYLON_DIAL_ADDR: &str = "--reverse-tunnel-pylon-dial-addr";
/// Serving certificate file.
pub const TLS_CERT_PATH: &str = "--tls-cert-path";
/// Serving key file.
pub const TLS_KEY_PATH: &str = "--tls-key-path";

/// Flags only the router takes: a container passing any of them is a router container.
/// (`--listen-addr` and `--backend-connectivity` are too generic to identify it.)
pub const IDENTIFYING_FLAGS: &[&str] = &[
    ADVERTISED_HOSTNAME_TEMPLATE,
    GRPC_PYLON_DIAL_ADDR,
    REVERSE_TUNNEL_PYLON_DIAL_ADDR,
    TLS_CERT_PATH,
    TLS_KEY_PATH,
    REVERSE_TUNNEL_LISTEN_ADDR,
];

/// The router binary's gRPC listen port when `--listen-addr` is not given.
pub const DEFAULT_GRPC_PORT: u16 = 50071;

/// The port of a listen address (`0.0.0.0:50071`, `:50071`, `[::]:50071`).
pub fn listen_port(addr: &str) -> Option<u16> {
    addr.trim().rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

/// The gRPC ports the graph's router containers listen on (each one's `--listen-addr`, or the
/// binary's default); the default alone when the graph runs no router (`--manifests` input that
/// holds only Services and routes).
pub fn grpc_listen_ports(g: &Graph) -> Vec<u16> {
    let mut out: Vec<u16> = routers(g)
        .iter()
        .map(|r| r.flag(LISTEN_ADDR).and_then(listen_port).unwrap_or(DEFAULT_GRPC_PORT))
        .collect();
    if out.is_empty() {
        out.push(DEFAULT_GRPC_PORT);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The elements of a container's command line, in order: `command`, then `args`.
pub fn command_line(container: &Value) -> impl Iterator<Item = &Value> {
    ["command", "args"]
        .into_iter()
        .flat_map(|k| container.get(k).and_then(Value::as_array).into_iter().flatten())
}

/// Flags of a container from `command` + `args`, in `--flag=value` and `--flag value` forms
/// (elements holding several words, as in `sh -c`, are split on whitespace). A flag followed by
/// nothing or by a token starting with `-` has no value (`None`); non-string elements are skipped.
pub fn parse_flags(container: &Value) -> Vec<(String, Option<String>)> {
    let mut tokens: Vec<&str> = Vec::new();
    for t in command_line(container).filter_map(Value::as_str) {
        if t.contains(char::is_whitespace) && t.contains("--") {
            tokens.extend(t.split_whitespace());
        } else {
            tokens.push(t);
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        if t.starts_with("--") {
            if let Some((n, v)) = t.split_once('=') {
                out.push((n.to_string(), Some(v.to_string())));
            } else if tokens.get(i + 1).is_some_and(|n| !n.starts_with('-')) {
                out.push((t.to_string(), Some(tokens[i + 1].to_string())));
                i += 1;
            } else {
                out.push((t.to_string(), None));
            }
        }
        i += 1;
    }
    out
}

/// One container that runs the router, in a workload the stack renders.
pub struct RouterWorkload<'a> {
    pub obj: &'a Object,
    /// `containers`, `initContainers` or `ephemeralContainers`.
    pub list: &'static str,
    pub container: &'a Value,
    pub flags: Vec<(String, Option<String>)>,
}

impl RouterWorkload<'_> {
    /// The value of the first occurrence of a flag; `Some("")` for a flag given without a value.
    pub fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_deref().unwrap_or(""))
    }

    /// `Kind ns/name (container c)`, for messages.
    pub fn describe(&self) -> String {
        let c = self.container.get("name").and_then(Value::as_str).unwrap_or("?");
        format!("{} (container {c})", self.obj.display())
    }
}

/// Every router container of the graph: any container list of any object with a pod spec that
/// the stack renders (policy externals excluded) and that passes one of [`IDENTIFYING_FLAGS`].
/// Callers narrow it (kinds, container list) where their rule needs less.
pub fn routers(g: &Graph) -> Vec<RouterWorkload<'_>> {
    let mut out = Vec::new();
    for obj in g.objects.iter().filter(|o| !o.prov.external) {
        for (list, container) in obj.containers() {
            let flags = parse_flags(container);
            if flags.iter().any(|(n, _)| IDENTIFYING_FLAGS.contains(&n.as_str())) {
                out.push(RouterWorkload {
                    obj,
                    list,
                    container,
                    flags,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::testkit;

    #[test]
    fn routers_are_rendered_containers_with_an_identifying_flag() {
        let yaml = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: r, namespace: nvcf}
spec:
  template:
    spec:
      initContainers:
        - name: setup
          command: ["sh", "-c", "exec router --tls-cert-path /tls/tls.crt --listen-addr"]
      containers:
        - name: sidecar
          args: ["--listen-addr=:8080", "--backend-connectivity", "direct"]
        - name: router
          args: ["--grpc-pylon-dial-addr", "grpc.example.com:443", "--grpc-pylon-dial-addr=second"]
"#;
        let policy = Policy::parse(
            "externals:\n  - {apiVersion: apps/v1, kind: Deployment, namespace: nvcf, name: ext, spec: {template: \
             {spec: {containers: [{name: c, args: [\"--tls-key-path=/k\"]}]}}}}\n",
            "validator-policy.yaml",
        )
        .expect("policy parses");
        let g = testkit::with_externals(testkit::graph("default", yaml), &policy);
        let all = routers(&g);
        let found: Vec<_> = all
            .iter()
            .map(|r| {
                (
                    r.list,
                    r.describe(),
                    r.flag(TLS_CERT_PATH),
                    r.flag(GRPC_PYLON_DIAL_ADDR),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                (
                    "initContainers",
                    "DaemonSet nvcf/r (container setup)".to_string(),
                    Some("/tls/tls.crt"),
                    None
                ),
                (
                    "containers",
                    "DaemonSet nvcf/r (container router)".to_string(),
                    None,
                    Some("grpc.example.com:443")
                ),
            ]
        );
        assert_eq!(all[0].flag(LISTEN_ADDR), Some(""), "a flag without a value");
    }
}
