//! "Could not judge" is visible: a router flag that carries its identity (advertised hostname,
//! dial hosts, TLS paths) but whose value the gate cannot determine — a `$(VAR)` the container's
//! env does not define with a literal or a rendered ConfigMap, a shell `$VAR`/`${VAR}` — is a
//! finding of the rule that would have judged it, never silence. So is a whole argument the gate
//! cannot read (`$(ARGS)` from a Secret: it may be any identity flag) and an identity flag written
//! after the point where Go's flag parsing stops (`--`, the first non-flag argument).

use super::*;
use crate::router::REVERSE_TUNNEL_PYLON_DIAL_ADDR as F_QUIC_DIAL;

/// Flags judged by `san-covers-advertised-name` and `tls-paths-consistent` respectively.
pub(super) const NAME_FLAGS: &[&str] = &[F_TEMPLATE, F_GRPC_DIAL, F_QUIC_DIAL];
pub(super) const PATH_FLAGS: &[&str] = &[F_CERT, F_KEY];

/// Findings (as `rule`) for the router flags in `flags` whose value cannot be determined: a value
/// with a `$(VAR)` the gate cannot read (`crate::router::read_flags` says why), a shell variable,
/// a whole argument that cannot be read (it may set any of `flags`), or a flag written where Go's
/// flag parsing has already stopped.
pub(super) fn undetermined(routers: &[RouterWorkload<'_>], rule: &'static str, flags: &[&str]) -> Vec<Finding> {
    let mut out = Vec::new();
    let help = |what: &str| {
        format!(
            "give {what} a literal value, or a $(VAR) whose env entry is a literal or a key of a rendered ConfigMap"
        )
    };
    for r in routers {
        for flag in flags {
            let Some(v) = r.flag(flag).filter(|v| !v.is_empty()) else {
                continue;
            };
            let mut why: Vec<String> = r
                .unknown
                .iter()
                .filter(|(f, _, _)| f.as_deref() == Some(*flag))
                .map(|(_, _, w)| w.clone())
                .collect();
            why.dedup();
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
                .with_help(help(flag)),
            );
        }
        for (_, text, why) in r.unknown.iter().filter(|(f, _, _)| f.is_none()) {
            out.push(
                Finding::object_at(
                    rule,
                    r.obj,
                    text,
                    format!(
                        "{}: the argument `{text}` cannot be determined ({why}), so it may set {}: the router's identity \
                         cannot be judged",
                        r.describe(),
                        flags.join(" or ")
                    ),
                )
                .with_help(help("the argument")),
            );
        }
        for (flag, stop) in r.ignored.iter().filter(|(f, _)| flags.contains(&f.as_str())) {
            out.push(
                Finding::object_at(
                    rule,
                    r.obj,
                    flag.trim_start_matches('-'),
                    format!(
                        "{}: {flag} comes after `{stop}`, where Go's flag parsing stops, so the router does not read it \
                         as a flag: the router's identity cannot be judged",
                        r.describe()
                    ),
                )
                .with_help(format!("put {flag} before any argument that is not a flag, and before `--`")),
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
        let names = undetermined(&crate::router::routers(&g), "san-covers-advertised-name", NAME_FLAGS);
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
        let paths = undetermined(&crate::router::routers(&g), "tls-paths-consistent", PATH_FLAGS);
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
        assert!(undetermined(&crate::router::routers(&g), "tls-paths-consistent", PATH_FLAGS).is_empty());
    }
}
