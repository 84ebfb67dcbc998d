//! Secrets a workload writes at run time: a certificate generator (a chart's admission-webhook
//! hook Job running kube-webhook-certgen, an operator's bootstrap Job) whose pods run as a
//! ServiceAccount that RBAC allows to create Secrets in the namespace, and whose command line or
//! environment names the Secret. Recognised by those two facts, not by the program's name.

use crate::graph::{Graph, Object};
use crate::router;
use serde_json::Value;

const RBAC: &str = "rbac.authorization.k8s.io";

fn items<'a>(v: &'a Value, ptr: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(ptr).and_then(Value::as_array).into_iter().flatten()
}

fn has(list: &Value, want: &str) -> bool {
    list.as_array()
        .is_some_and(|l| l.iter().filter_map(Value::as_str).any(|x| x == want || x == "*"))
}

/// Whether a Role's or ClusterRole's rules allow creating Secrets (core group). `resourceNames`
/// cannot restrict `create` (Kubernetes RBAC: a create request names no object), so they do not
/// narrow it.
fn creates_secrets(role: &Object) -> bool {
    items(&role.body, "/rules").any(|r| {
        r.get("apiGroups").is_some_and(|g| has(g, ""))
            && r.get("resources").is_some_and(|x| has(x, "secrets"))
            && r.get("verbs").is_some_and(|v| has(v, "create"))
    })
}

/// Whether ServiceAccount `ns/sa` may create Secrets in `ns`: a RoleBinding in `ns` or a
/// ClusterRoleBinding naming it, whose role allows it.
fn sa_creates_secrets(g: &Graph, ns: &str, sa: &str) -> bool {
    let names_sa = |b: &Object| {
        let bns = b.namespace.as_deref().unwrap_or(ns);
        items(&b.body, "/subjects").any(|s| {
            s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
                && s.get("name").and_then(Value::as_str) == Some(sa)
                && s.get("namespace").and_then(Value::as_str).unwrap_or(bns) == ns
        })
    };
    let role = |b: &Object| {
        let name = b.str_at("/roleRef/name").unwrap_or_default();
        match b.str_at("/roleRef/kind") {
            Some("Role") => g.get(RBAC, "Role", b.namespace.as_deref(), name),
            Some("ClusterRole") => g.get(RBAC, "ClusterRole", None, name),
            _ => None,
        }
    };
    let bound = g
        .of(RBAC, "RoleBinding")
        .filter(|b| b.namespace.as_deref() == Some(ns))
        .chain(g.of(RBAC, "ClusterRoleBinding"));
    bound
        .filter(|b| names_sa(b))
        .any(|b| role(b).is_some_and(creates_secrets))
}

/// Whether a command-line word or an environment value names Secret `name`: the word itself or
/// a flag's value (`--secret-name=NAME`).
fn names(word: &str, name: &str) -> bool {
    word == name || word.rsplit_once('=').is_some_and(|(_, v)| v == name)
}

/// The rendered workload in `ns` that writes Secret `name` at run time, if any: `Kind name`.
pub(super) fn written_by_workload(g: &Graph, ns: &str, name: &str) -> Option<String> {
    for obj in g
        .objects
        .iter()
        .filter(|o| !o.prov.external && o.namespace.as_deref() == Some(ns))
    {
        for (_, c) in obj.containers() {
            let pod = router::Pod::of_container(obj, c);
            let words: Vec<String> = router::expand_items(Some(g), pod, c, router::command_line(c))
                .into_iter()
                .flat_map(|e| e.text.split_whitespace().map(str::to_string).collect::<Vec<_>>())
                .collect();
            let in_env = router::effective_env(Some(g), pod, c)
                .into_iter()
                .any(|e| matches!(e.value, router::EnvValue::Known(ref v) if v == name));
            if !(in_env || words.iter().any(|w| names(w.trim_matches(['"', '\'']), name))) {
                continue;
            }
            let spec = obj.pod_spec_of(c);
            let sa = spec
                .and_then(|s| s.get("serviceAccountName").or_else(|| s.get("serviceAccount")))
                .and_then(Value::as_str)
                .unwrap_or("default");
            if sa_creates_secrets(g, ns, sa) {
                return Some(format!("{} {}", obj.kind, obj.name));
            }
        }
    }
    None
}
