//! `vault-token-static`: something authenticates to OpenBao/Vault with a static token taken from a
//! Secret or from the environment (`BAO_TOKEN`, `VAULT_TOKEN`, a `tokenSecretRef`) instead of a
//! short-lived Kubernetes auth login.
//!
//! A token the workload needs to run is an error. An optional one (`optional: true` on the
//! `secretKeyRef`/`secretRef`: the documented one-time bootstrap path, such as this stack's
//! provisioner, which logs in through Kubernetes auth when the Secret is absent) is a warning a
//! waiver with a reason can accept. The token's value is never shown.

use super::*;

pub(super) const TOKEN: &str = "vault-token-static";

/// `BAO_TOKEN`, `VAULT_TOKEN` and prefixed spellings (`AGENT_VAULT_TOKEN`); not `*_TOKEN_PATH`,
/// `*_TOKEN_FILE` or `VAULT_TOKEN_TTL`, which name no token.
pub(super) fn is_token_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').collect();
    words.last() == Some(&"TOKEN") && words.iter().any(|w| *w == "VAULT" || *w == "BAO")
}

/// How a container gets one token variable.
enum Source<'a> {
    /// A literal `value` in the manifest.
    Literal,
    /// `valueFrom.secretKeyRef` (Secret name, key, optional).
    SecretKey(&'a str, &'a str, bool),
    /// `envFrom.secretRef` whose rendered Secret holds the variable (Secret name, optional).
    SecretEnvFrom(&'a str, bool),
}

fn optional(v: &Value) -> bool {
    v.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

/// Keys of a rendered Secret (`data` and `stringData`).
fn secret_keys<'a>(g: &'a Graph, ns: Option<&str>, name: &str) -> Vec<&'a str> {
    let Some(s) = g.get("", "Secret", ns, name) else {
        return Vec::new();
    };
    ["/data", "/stringData"]
        .iter()
        .filter_map(|p| s.at(p).and_then(Value::as_object))
        .flat_map(|m| m.keys().map(String::as_str))
        .collect()
}

fn token_sources<'a>(g: &'a Graph, obj: &Object, c: &'a Value) -> Vec<(String, Source<'a>)> {
    let mut out = Vec::new();
    for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = e.get("name").and_then(Value::as_str).filter(|n| is_token_env(n)) else {
            continue;
        };
        if e.get("value")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.trim().is_empty())
        {
            out.push((name.to_string(), Source::Literal));
        } else if let Some(r) = e.pointer("/valueFrom/secretKeyRef") {
            let secret = r.get("name").and_then(Value::as_str).unwrap_or("?");
            let key = r.get("key").and_then(Value::as_str).unwrap_or("?");
            out.push((name.to_string(), Source::SecretKey(secret, key, optional(r))));
        }
    }
    for from in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
        let Some(r) = from.get("secretRef") else { continue };
        let Some(secret) = r.get("name").and_then(Value::as_str) else {
            continue;
        };
        let prefix = from.get("prefix").and_then(Value::as_str).unwrap_or_default();
        for k in secret_keys(g, obj.namespace.as_deref(), secret) {
            let name = format!("{prefix}{k}");
            if is_token_env(&name) {
                out.push((name, Source::SecretEnvFrom(secret, optional(r))));
            }
        }
    }
    out
}

/// `tokenSecretRef` anywhere in an object's spec (cert-manager Vault issuers, External Secrets
/// Vault stores, …), with its path.
fn token_secret_refs(v: &Value, path: &mut Vec<String>, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                path.push(k.clone());
                if k == "tokenSecretRef" && !child.is_null() {
                    out.push((path.join("."), child.clone()));
                } else {
                    token_secret_refs(child, path, out);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(format!("[{i}]"));
                token_secret_refs(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

pub(super) fn check_token(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for obj in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        let hook = obj
            .annotations()
            .and_then(|a| a.get("helm.sh/hook"))
            .and_then(Value::as_str)
            .map(|h| format!(" (a Helm {h} hook)"))
            .unwrap_or_default();
        for (list, c) in obj.containers() {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
            let who = format!("{}{hook}: {} `{cname}`", obj.display(), list.trim_end_matches('s'));
            for (var, src) in token_sources(ctx.graph, obj, c) {
                let (how, opt, needle) = match src {
                    Source::Literal => (
                        "a literal token written into the manifest".to_string(),
                        false,
                        var.clone(),
                    ),
                    Source::SecretKey(s, k, opt) => (format!("Secret `{s}` key `{k}`"), opt, var.clone()),
                    Source::SecretEnvFrom(s, opt) => (format!("Secret `{s}` (envFrom)"), opt, s.to_string()),
                };
                let mut f = Finding::object_at(
                    TOKEN,
                    obj,
                    &needle,
                    if opt {
                        format!(
                            "{who} takes a static OpenBao/Vault token `{var}` from {how}, marked optional: a bootstrap \
                             path, but while that Secret exists the workload holds a long-lived token"
                        )
                    } else {
                        format!(
                            "{who} authenticates to OpenBao/Vault with a static token `{var}` from {how}: the workload \
                             cannot run without a long-lived token (often the root token) that never rotates"
                        )
                    },
                )
                .with_help(
                    "log in through OpenBao's Kubernetes auth with a projected, audience-bound ServiceAccount token (`bao \
                     write auth/kubernetes/login role=… jwt=@token`); keep a bootstrap token optional, delete its Secret \
                     after the first run, and accept the warning with a waiver that says so",
                );
                if opt {
                    f = f.with_severity(Severity::Warning);
                }
                out.push(f);
            }
        }
        if obj.kind == "Secret" || obj.kind == "ConfigMap" {
            continue;
        }
        let Some(spec) = obj.at("/spec") else { continue };
        let mut refs = Vec::new();
        token_secret_refs(spec, &mut vec!["spec".to_string()], &mut refs);
        for (path, r) in refs {
            let secret = r.get("name").and_then(Value::as_str).unwrap_or("?");
            out.push(
                Finding::object_at(
                    TOKEN,
                    obj,
                    "tokenSecretRef",
                    format!(
                        "{}: `{path}` authenticates to OpenBao/Vault with the static token in Secret `{secret}`",
                        obj.display()
                    ),
                )
                .with_help(
                    "use Kubernetes auth (cert-manager: auth.kubernetes with serviceAccountRef and a role bound to that \
                     ServiceAccount) instead of a stored token",
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn token_variable_names() {
        for n in ["BAO_TOKEN", "VAULT_TOKEN", "vault_token", "AGENT_VAULT_TOKEN"] {
            assert!(is_token_env(n), "{n}");
        }
        for n in [
            "BAO_TOKEN_PATH",
            "VAULT_TOKEN_FILE",
            "GITHUB_TOKEN",
            "TOKEN",
            "VAULTTOKEN",
            "BAO_ADDR",
        ] {
            assert!(!is_token_env(n), "{n}");
        }
    }

    #[test]
    fn required_is_an_error_optional_a_warning_and_no_token_is_shown() {
        let f = run(TOKEN, &fixture("fires-vault-token-static-job-and-hook"));
        let all = messages(&f);
        assert_eq!(f.iter().map(|f| f.severity).collect::<Vec<_>>(), [None, None], "{all}");
        assert!(
            !all.contains("s.rootroot"),
            "the token's value must never be shown:\n{all}"
        );
        let f = run(TOKEN, &fixture("fires-vault-token-static-optional-bootstrap"));
        assert_eq!(
            f.iter().map(|f| f.severity).collect::<Vec<_>>(),
            [Some(Severity::Warning)]
        );
    }
}
