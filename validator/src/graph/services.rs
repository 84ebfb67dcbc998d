//! Services followed to the pods they select, as kube-proxy and the EndpointSlice controller do:
//! a Service's selector picks the pods whose labels hold every selector pair in its namespace, and a
//! named `targetPort` is looked up among each selected pod's `containerPorts` (so one Service port
//! may reach different numbers in different pods). A numeric `targetPort` is used as is; absent,
//! it is the Service `port`.

use super::{Graph, Object};
use serde_json::Value;

/// Where a workload keeps the labels of the pods it creates.
fn pod_labels(o: &Object) -> Option<&serde_json::Map<String, Value>> {
    let at = match o.kind.as_str() {
        "Pod" => "/metadata/labels",
        "CronJob" => "/spec/jobTemplate/spec/template/metadata/labels",
        _ => "/spec/template/metadata/labels",
    };
    o.at(at).and_then(Value::as_object)
}

/// What a Service port's `targetPort` reaches.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// The container port numbers (one per distinct number the selected pods map it to).
    pub ports: Vec<u64>,
    /// A named target port no selected pod declares (or a Service that selects no rendered pod):
    /// what it reaches is unknown.
    pub unresolved: Option<String>,
}

impl Graph {
    /// The rendered workloads (any object with a pod template) whose pods `svc` selects. A Service
    /// without a selector selects none (its endpoints are managed by hand).
    pub fn selected_workloads(&self, svc: &Object) -> Vec<&Object> {
        let Some(sel) = svc
            .at("/spec/selector")
            .and_then(Value::as_object)
            .filter(|s| !s.is_empty())
        else {
            return Vec::new();
        };
        let ns = svc.namespace.as_deref().unwrap_or("default");
        self.objects
            .iter()
            .filter(|o| o.namespace.as_deref().unwrap_or("default") == ns)
            .filter(|o| o.pod_spec().is_some())
            .filter(|o| pod_labels(o).is_some_and(|l| sel.iter().all(|(k, v)| l.get(k) == Some(v))))
            .collect()
    }

    /// The container ports the Service port `p` of `svc` delivers to.
    pub fn target_ports(&self, svc: &Object, p: &Value) -> Target {
        let mut t = Target::default();
        match p.get("targetPort").or_else(|| p.get("port")) {
            Some(Value::Number(n)) => t.ports.extend(n.as_u64()),
            Some(Value::String(s)) => match s.parse::<u64>() {
                Ok(n) => t.ports.push(n),
                Err(_) => {
                    for w in self.selected_workloads(svc) {
                        for (_, c) in w.containers() {
                            for cp in c.get("ports").and_then(Value::as_array).into_iter().flatten() {
                                if cp.get("name").and_then(Value::as_str) == Some(s.as_str()) {
                                    if let Some(n) = cp.get("containerPort").and_then(Value::as_u64) {
                                        if !t.ports.contains(&n) {
                                            t.ports.push(n);
                                        }
                                    }
                                }
                            }
                        }
                    }
                    if t.ports.is_empty() {
                        t.unresolved = Some(s.clone());
                    }
                }
            },
            _ => {}
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::{Graph, Object};
    use serde_json::json;

    fn obj(v: serde_json::Value) -> Object {
        Object::from_value(v, Some("nvcf"), Default::default()).expect("object")
    }

    #[test]
    fn named_target_ports_resolve_through_the_selected_pods() {
        let pod = |name: &str, app: &str, port: u64| {
            obj(
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "nvcf"},
                "spec": {"template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [
                    {"name": "c", "image": "x:1", "ports": [{"name": "worker-grpc", "containerPort": port}]}]}}}}),
            )
        };
        let svc = obj(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "nvcf"},
            "spec": {"selector": {"app": "router"}, "ports": [
                {"name": "a", "port": 443, "targetPort": "worker-grpc"},
                {"name": "b", "port": 8080},
                {"name": "c", "port": 9000, "targetPort": "nope"}]}}),
        );
        let g = Graph::new(
            "e",
            vec![pod("router", "router", 50071), pod("other", "other", 1234), svc.clone()],
        );
        let ports = svc.at("/spec/ports").unwrap().as_array().unwrap();
        assert_eq!(g.target_ports(&svc, &ports[0]).ports, [50071]);
        assert_eq!(g.target_ports(&svc, &ports[1]).ports, [8080]);
        let t = g.target_ports(&svc, &ports[2]);
        assert!(t.ports.is_empty());
        assert_eq!(t.unresolved.as_deref(), Some("nope"));
        assert_eq!(g.selected_workloads(&svc).len(), 1);
    }
}
