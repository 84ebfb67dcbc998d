//! "Could not judge" is visible: a router flag that carries its identity (advertised hostname,
//! dial hosts, TLS paths) but whose value the gate cannot determine — a `$(VAR)` the container's
//! env does not define with a literal or a rendered ConfigMap, a shell `$VAR`/`${VAR}` — is a
//! finding of the rule that would have judged it, never silence.

use super::*;
use crate::router::REVERSE_TUNNEL_PYLON_DIAL_ADDR as F_QUIC_DIAL;

/// Flags judged by `san-covers-advertised-name` and `tls-paths-consistent` respectively.
pub(super) const NAME_FLAGS: &[&str] = &[F_TEMPLATE, F_GRPC_DIAL, F_QUIC_DIAL];
pub(super) const PATH_FLAGS: &[&str] = &[F_CERT, F_KEY];

/// Why the value of an env var `name` of `container` (in `obj`) cannot be known, if it cannot.
fn env_unknown(g: &Graph, obj: &Object, container: &Value, name: &str) -> Option<String> {
    let ns = ns_of(obj);
    if let Some(e) = items(container, "/env").find(|e| str_at(e, "/name") == Some(name)) {
        if e.get("value").is_some_and(Value::is_string) {
            return None;
        }
        if let (Some(cm), Some(key)) = (
            str_at(e, "/valueFrom/configMapKeyRef/name"),
            str_at(e, "/valueFrom/configMapKeyRef/key"),
        ) {
            return match g.get("", "ConfigMap", Some(ns), cm) {
                Some(o)
                    if o.at(&format!("/data/{}", key.replace('~', "~0").replace('/', "~1")))
                        .is_some() =>
                {
                    None
                }
                Some(_) => Some(format!("ConfigMap {ns}/{cm} has no key `{key}`")),
                None => Some(format!("it comes from ConfigMap {ns}/{cm}, which is not rendered")),
            };
        }
        return Some("it comes from a Secret, a field or a resource reference the gate does not read".into());
    }
    for src in items(container, "/envFrom") {
        if let Some(cm) = str_at(src, "/configMapRef/name") {
            let prefix = str_at(src, "/prefix").unwrap_or("");
            if let Some(key) = name.strip_prefix(prefix) {
                if let Some(o) = g.get("", "ConfigMap", Some(ns), cm) {
                    if o.at(&format!("/data/{}", key.replace('~', "~0").replace('/', "~1")))
                        .is_some()
                    {
                        return None;
                    }
                }
            }
        }
    }
    Some("the container's env does not define it".into())
}

/// The `$(NAME)` references of a value (Kubernetes expansion; `$$(` is an escape).
fn references(v: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = v;
    while let Some(i) = rest.find("$(") {
        if rest[..i].ends_with('$') {
            rest = &rest[i + 2..];
            continue;
        }
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                out.push(&after[..j]);
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
    out
}

/// Findings (as `rule`) for the router flags in `flags` whose value cannot be determined.
pub(super) fn undetermined(g: &Graph, rule: &'static str, flags: &[&str]) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in routers(g) {
        for flag in flags {
            let Some(v) = r.flag(flag).filter(|v| !v.is_empty()) else {
                continue;
            };
            let mut why: Vec<String> = references(v)
                .into_iter()
                .filter_map(|n| env_unknown(g, r.obj, r.container, n).map(|w| format!("$({n}): {w}")))
                .collect();
            let shell = v.replace("$(", "");
            if shell.contains('$') {
                why.push("a shell variable is expanded at run time".into());
            }
            if why.is_empty() {
                continue;
            }
            out.push(
                Finding::object_at(
                    rule,
                    r.obj,
                    flag,
                    format!(
                        "{}: {flag} is `{v}`, which cannot be determined ({}): the router's identity cannot be judged",
                        r.describe(),
                        why.join("; ")
                    ),
                )
                .with_help(format!(
                    "give {flag} a literal value, or a $(VAR) whose env entry is a literal or a key of a rendered ConfigMap"
                )),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTER: &str = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: r, namespace: nvcf}\nspec:\n  template:\n    spec:\n      containers:\n      - name: router\n        image: x\n        args: [\"--advertised-hostname-template=$(HOST)\", \"--grpc-pylon-dial-addr=$(DIAL)\", \"--tls-cert-path=$(CERT)\", \"--tls-key-path=/tls/tls.key\", \"--reverse-tunnel-pylon-dial-addr=$QUIC\"]\n        env:\n        - {name: HOST, value: \"{pod_name}.example.com\"}\n        - {name: DIAL, valueFrom: {secretKeyRef: {name: s, key: k}}}\n        - {name: CERT, valueFrom: {configMapKeyRef: {name: paths, key: cert}}}\n";

    #[test]
    fn unresolvable_identity_flags_are_reported_and_resolvable_ones_are_not() {
        let g = crate::testkit::graph("e", ROUTER);
        let names = undetermined(&g, "san-covers-advertised-name", NAME_FLAGS);
        let msgs: Vec<&str> = names.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(names.len(), 2, "{msgs:#?}");
        assert!(
            msgs[0].contains("--grpc-pylon-dial-addr") && msgs[0].contains("Secret"),
            "{}",
            msgs[0]
        );
        assert!(
            msgs[1].contains("--reverse-tunnel-pylon-dial-addr") && msgs[1].contains("shell"),
            "{}",
            msgs[1]
        );
        let paths = undetermined(&g, "tls-paths-consistent", PATH_FLAGS);
        assert_eq!(paths.len(), 1, "{paths:#?}");
        assert!(
            paths[0].message.contains("ConfigMap nvcf/paths, which is not rendered"),
            "{}",
            paths[0].message
        );
        let with_cm = format!(
            "{ROUTER}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: paths, namespace: nvcf}}\ndata: {{cert: /tls/tls.crt}}\n"
        );
        let g = crate::testkit::graph("e", &with_cm);
        assert!(undetermined(&g, "tls-paths-consistent", PATH_FLAGS).is_empty());
        assert_eq!(references("a$(X)b$$(Y)$(Z"), vec!["X"]);
    }
}
