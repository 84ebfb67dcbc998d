//! Which server a plaintext finding is about, for one cause, one finding (the `fold` module): a
//! server configuration whose listener serves plaintext (a ConfigMap), the workloads that mount
//! it or run a plaintext server themselves (`server -dev`, a `*_LOCAL_CONFIG` with TLS off), and
//! the address a client dials, followed through the Service it reaches to the workloads that
//! Service selects. Every finding about one plaintext server (its configuration, its advertised
//! address, every client that dials it, in any release) gets that server's key; a dial address
//! that reaches no known plaintext server is keyed by the Service and port (or host and port) it
//! dials, so copies of one address fold and unrelated addresses never do.

use super::dial::{self, Dial};
use super::*;

/// The plaintext servers of one graph.
pub(super) struct Servers<'g> {
    g: &'g Graph,
    /// ConfigMaps (namespace, name) holding a server configuration with a plaintext listener.
    configs: Vec<(Option<&'g str>, &'g str)>,
    /// Workloads that serve plaintext themselves (dev server, local configuration).
    workloads: Vec<(&'g str, Option<&'g str>, &'g str)>,
}

/// The key of a ConfigMap holding a plaintext listener.
pub(super) fn config_key(cm: &Object) -> String {
    format!(
        "listener:ConfigMap/{}/{}",
        cm.namespace.as_deref().unwrap_or(""),
        cm.name
    )
}

fn workload_key(w: &Object) -> String {
    format!("server:{}/{}/{}", w.kind, w.namespace.as_deref().unwrap_or(""), w.name)
}

/// Labels of a workload's pods.
fn pod_labels(w: &Object) -> Option<&serde_json::Map<String, Value>> {
    let ptr = match w.kind.as_str() {
        "Pod" => "/metadata/labels",
        "CronJob" => "/spec/jobTemplate/spec/template/metadata/labels",
        _ => "/spec/template/metadata/labels",
    };
    w.at(ptr).and_then(Value::as_object)
}

/// Names of the ConfigMaps a workload's pods mount or read variables from.
fn configmaps_used(w: &Object) -> Vec<&str> {
    let mut out = Vec::new();
    for v in w
        .pod_specs()
        .into_iter()
        .flat_map(|spec| spec.get("volumes").and_then(Value::as_array).into_iter().flatten())
    {
        let sources = crate::graph::volumes::volume_sources(v).into_iter();
        out.extend(
            sources
                .filter(|s| s.kind == crate::graph::volumes::SourceKind::ConfigMap)
                .map(|s| s.name),
        );
    }
    for (_, c) in w.containers() {
        for e in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
            if let Some(n) = e.pointer("/configMapRef/name").and_then(Value::as_str) {
                out.push(n);
            }
        }
        for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
            if let Some(n) = e.pointer("/valueFrom/configMapKeyRef/name").and_then(Value::as_str) {
                out.push(n);
            }
        }
    }
    out
}

impl<'g> Servers<'g> {
    /// `serves_plaintext(workload)`: whether a workload runs a plaintext server itself (decided by
    /// the rule, which reports it).
    pub fn new(g: &'g Graph, serves_plaintext: impl Fn(&Object) -> bool) -> Servers<'g> {
        let mut configs = Vec::new();
        let mut workloads = Vec::new();
        for o in rendered(g) {
            if o.kind == "ConfigMap" && o.group().is_empty() {
                let data = o.at("/data").and_then(Value::as_object);
                if data
                    .into_iter()
                    .flatten()
                    .any(|(_, v)| v.as_str().is_some_and(disables_tls))
                {
                    configs.push((o.namespace.as_deref(), o.name.as_str()));
                }
            } else if o.pod_spec().is_some() && serves_plaintext(o) {
                workloads.push((o.kind.as_str(), o.namespace.as_deref(), o.name.as_str()));
            }
        }
        Servers { g, configs, workloads }
    }

    /// The key of a workload that serves plaintext (through a mounted configuration or by
    /// itself), if it does.
    pub fn plaintext_server(&self, w: &Object) -> Option<String> {
        let ns = w.namespace.as_deref();
        if let Some(cm) = configmaps_used(w)
            .into_iter()
            .find(|n| self.configs.iter().any(|(cns, cn)| *cns == ns && cn == n))
        {
            return Some(format!("listener:ConfigMap/{}/{cm}", ns.unwrap_or("")));
        }
        self.workloads
            .iter()
            .any(|(k, wns, n)| *k == w.kind && *wns == ns && *n == w.name)
            .then(|| workload_key(w))
    }

    /// A workload as a server: its plaintext key, or its own.
    pub fn of_workload(&self, w: &Object) -> String {
        self.plaintext_server(w).unwrap_or_else(|| workload_key(w))
    }

    /// The cause of dialing `d` from namespace `ns` without TLS.
    pub fn dial_cause(&self, ns: Option<&str>, d: &Dial) -> String {
        if let Some((svc, p)) = dial::service_port(self.g, ns, d) {
            let selector = svc
                .at("/spec/selector")
                .and_then(Value::as_object)
                .filter(|s| !s.is_empty());
            if let Some(sel) = selector {
                let selected = rendered(self.g).filter(|w| {
                    w.pod_spec().is_some()
                        && w.namespace == svc.namespace
                        && pod_labels(w).is_some_and(|l| sel.iter().all(|(k, v)| l.get(k) == Some(v)))
                });
                if let Some(key) = selected.filter_map(|w| self.plaintext_server(w)).next() {
                    return key;
                }
            }
            let port = p.get("port").and_then(Value::as_u64).unwrap_or_default();
            return format!(
                "dial:Service/{}/{}:{port}",
                svc.namespace.as_deref().unwrap_or(""),
                svc.name
            );
        }
        let host = d.host.to_ascii_lowercase();
        let port = d.port.unwrap_or(if d.http { 80 } else { 0 });
        format!("dial:{}:{port}", host.trim_end_matches('.'))
    }
}
