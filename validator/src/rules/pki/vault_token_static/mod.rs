//! `vault-token-static`: something authenticates to OpenBao/Vault with a static token taken from a
//! Secret, the environment or the manifest (`BAO_TOKEN`, `VAULT_TOKEN`, a `tokenSecretRef`, a
//! script that reads a mounted token file) instead of a short-lived Kubernetes auth login.
//!
//! A token the workload needs to run is an error that no waiver accepts (`Finding::unwaivable`):
//! Kubernetes auth is the fix. An optional one (`optional: true` on the `secretKeyRef`,
//! `secretRef` or Secret volume: the documented one-time bootstrap path, such as this stack's
//! provisioner, which logs in through Kubernetes auth when the Secret is absent) is a warning a
//! waiver with a reason can accept. The token's value is never shown.

#[cfg(test)]
mod schema_tests;
mod script;
#[cfg(test)]
mod script_tests;
mod sources;
#[cfg(test)]
mod tests;

use super::*;
use crate::rules::insecure::container_commands::commands_as_written;
use crate::rules::insecure::container_finding;
use crate::rules::{show_path, walk_values};
use crate::shell;
use crate::stack::Release;
use script::*;
use sources::*;

pub(super) const TOKEN: &str = "vault-token-static";

/// `BAO_TOKEN`, `VAULT_TOKEN` and prefixed spellings (`AGENT_VAULT_TOKEN`); not `*_TOKEN_PATH`,
/// `*_TOKEN_FILE` or `VAULT_TOKEN_TTL`, which name no token.
pub(super) fn is_token_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').collect();
    words.last() == Some(&"TOKEN") && words.iter().any(|w| *w == "VAULT" || *w == "BAO")
}

/// `tokenSecretRef` anywhere in a tree (cert-manager Vault issuers, External Secrets Vault stores,
/// chart values), with its path.
fn token_secret_refs(v: &Value, path: Vec<String>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    walk_values(v, path, 65, &mut |path, node| {
        let found = path.last().is_some_and(|k| k == "tokenSecretRef") && !node.is_null() && !is_schema(node);
        if found {
            out.push((show_path(path), node.clone()));
        }
        !found
    });
    out
}

/// An OpenAPI schema of a field (`{type: object, properties: …}`), not a reference to a Secret.
fn is_schema(v: &Value) -> bool {
    v.get("type").is_some_and(Value::is_string) && (v.get("properties").is_some() || v.get("description").is_some())
}

const HELP: &str =
    "log in through OpenBao's Kubernetes auth with a projected, audience-bound ServiceAccount token (`bao \
     write auth/kubernetes/login role=… jwt=@token`); keep a bootstrap token optional, delete its Secret \
     after the first run, and accept the warning with a waiver that says so";

const HELP_REQUIRED: &str =
    "log in through OpenBao's Kubernetes auth with a projected, audience-bound ServiceAccount token \
     (`bao write auth/kubernetes/login role=… jwt=@token`); a token the workload cannot run without is never \
     waived: remove it, or make it an optional one-time bootstrap Secret that is deleted after the first run";

/// The finding for one token: when optional a warning (a waiver may accept it), else an error no
/// waiver or override lowers.
fn judged(f: Finding, src: &Source) -> Finding {
    if src.optional() {
        f.with_severity(Severity::Warning)
    } else {
        f.with_help(HELP_REQUIRED).unwaivable()
    }
}

pub(super) fn check_token(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(state) = ctx.state {
        for r in state.installed() {
            out.extend(state_tokens(ctx, r));
        }
    }
    for obj in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        let hook = obj
            .annotations()
            .and_then(|a| a.get("helm.sh/hook"))
            .and_then(Value::as_str)
            .map(|h| format!(" (a Helm {h} hook)"))
            .unwrap_or_default();
        let cause = |key: String| {
            format!(
                "{}/{}/{}:{key}",
                obj.kind,
                obj.namespace.as_deref().unwrap_or(""),
                obj.name
            )
        };
        for (list, c) in obj.containers() {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
            let who = format!("{}{hook}: {} `{cname}`", obj.display(), list.trim_end_matches('s'));
            for (var, src, needle) in token_sources(ctx.graph, obj, c) {
                let how = src.describe();
                let message = if src.optional() {
                    format!(
                        "{who} takes a static OpenBao/Vault token `{var}` from {how}, marked optional: a bootstrap \
                         path, but while that Secret exists the workload holds a long-lived token"
                    )
                } else {
                    format!(
                        "{who} authenticates to OpenBao/Vault with a static token `{var}` from {how}: the workload \
                         cannot run without a long-lived token (often the root token) that never rotates"
                    )
                };
                let f = container_finding(TOKEN, obj, c, "", &needle, message)
                    .with_help(HELP)
                    .with_cause(cause(src.key(&var)));
                out.push(judged(f, &src));
            }
            for (place, cmds) in commands_as_written(Some(ctx.graph), crate::router::Pod::of_container(obj, c), c) {
                let in_place = if place.is_empty() {
                    "its command line".to_string()
                } else {
                    format!("its {place} exec command")
                };
                for cmd in &cmds {
                    for (what, value) in script_tokens(cmd) {
                        let Some(src) = script_value_source(ctx.graph, obj, c, &value) else {
                            continue;
                        };
                        let how = src.describe();
                        let message = if src.optional() {
                            format!(
                                "{who} passes a static OpenBao/Vault token from {how} ({what} in {in_place}), marked \
                                 optional: a bootstrap path, but while that Secret exists the workload holds a long-lived token"
                            )
                        } else {
                            format!(
                                "{who} authenticates to OpenBao/Vault with a static token from {how} ({what} in \
                                 {in_place}): the workload cannot run without a long-lived token (often the root token) \
                                 that never rotates"
                            )
                        };
                        let needle = what
                            .trim_matches('`')
                            .split(['=', ' ', '…'])
                            .next()
                            .unwrap_or_default()
                            .to_string();
                        let needle = if needle.is_empty() { "login".to_string() } else { needle };
                        let f = container_finding(TOKEN, obj, c, place, &needle, message)
                            .with_help(HELP)
                            .with_cause(cause(src.key(&what)));
                        out.push(judged(f, &src));
                    }
                }
            }
        }
        // A CustomResourceDefinition describes `tokenSecretRef` in its schema; it uses no token.
        if obj.kind == "Secret" || obj.kind == "ConfigMap" || obj.kind == "CustomResourceDefinition" {
            continue;
        }
        let Some(spec) = obj.at("/spec") else { continue };
        for (path, r) in token_secret_refs(spec, vec!["spec".to_string()]) {
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
                     ServiceAccount) instead of a stored token; a required static token is never waived",
                )
                .unwaivable(),
            );
        }
    }
    out
}

/// Tokens in the state values of a release that was not rendered (its objects cannot be judged):
/// a `tokenSecretRef`, or a `BAO_TOKEN`/`VAULT_TOKEN` entry (`{name, value}` or `valueFrom`).
fn state_tokens(ctx: &Ctx, r: &Release) -> Vec<Finding> {
    let id = r.id();
    let rendered = ctx.release_rendered(r);
    if rendered {
        return Vec::new();
    }
    let values = if r.values.is_null() {
        let inline: Vec<Value> = r.declared_values.iter().filter(|v| v.is_object()).cloned().collect();
        crate::stack::load::merged_values(Some(&Value::Array(inline)))
    } else {
        r.values.clone()
    };
    let mut out = Vec::new();
    let finding = |msg: String| {
        Finding::state(TOKEN, Some(ctx.environment), Some(id.clone()), &r.file, r.line, msg).with_help(HELP)
    };
    for (path, v) in token_secret_refs(&values, Vec::new()) {
        let secret = v.get("name").and_then(Value::as_str).unwrap_or("?");
        out.push(
            finding(format!(
                "release {id} (not rendered): value `{path}` authenticates to OpenBao/Vault with the static token in Secret `{secret}`"
            ))
            .with_help(HELP_REQUIRED)
            .unwaivable(),
        );
    }
    for (name, _) in r.set.iter().filter(|(n, _)| n.contains("tokenSecretRef")) {
        out.push(
            finding(format!(
                "release {id} (not rendered): `set {name}` authenticates to OpenBao/Vault with the static token of a Secret"
            ))
            .with_help(HELP_REQUIRED)
            .unwaivable(),
        );
    }
    for (path, var, src) in env_entries(&values) {
        let how = src.describe().replace("the manifest", "the values");
        let f = if src.optional() {
            finding(format!(
                "release {id} (not rendered): value `{path}` gives `{var}` a static OpenBao/Vault token from {how}, marked optional"
            ))
        } else {
            finding(format!(
                "release {id} (not rendered): value `{path}` gives `{var}` a static OpenBao/Vault token from {how}: the workload cannot run without a long-lived token"
            ))
        };
        out.push(judged(f, &src));
    }
    out
}

/// `{name: VAULT_TOKEN, value: …}` / `{name: BAO_TOKEN, valueFrom: {secretKeyRef: …}}` entries
/// anywhere in values: (path, variable, source).
fn env_entries(v: &Value) -> Vec<(String, String, Source)> {
    let mut out = Vec::new();
    walk_values(v, Vec::new(), 64, &mut |path, node| {
        if let Some(name) = node.get("name").and_then(Value::as_str).filter(|n| is_token_env(n)) {
            if let Some(src) = env_source(node) {
                out.push((show_path(path), name.to_string(), src));
            }
        }
        true
    });
    out
}
