//! `vault-token-static`: something authenticates to OpenBao/Vault with a static token taken from a
//! Secret, the environment or the manifest (`BAO_TOKEN`, `VAULT_TOKEN`, a `tokenSecretRef`, a
//! script that reads a mounted token file) instead of a short-lived Kubernetes auth login.
//!
//! A token the workload needs to run is an error that no waiver accepts (`Finding::unwaivable`):
//! Kubernetes auth is the fix. An optional one (`optional: true` on the `secretKeyRef`,
//! `secretRef` or Secret volume: the documented one-time bootstrap path, such as this stack's
//! provisioner, which logs in through Kubernetes auth when the Secret is absent) is a warning a
//! waiver with a reason can accept. The token's value is never shown.

use super::*;
use crate::rules::insecure::{commands, container_finding, shell};
use crate::rules::{show_path, walk_values};
use crate::stack::Release;

pub(super) const TOKEN: &str = "vault-token-static";

/// `BAO_TOKEN`, `VAULT_TOKEN` and prefixed spellings (`AGENT_VAULT_TOKEN`); not `*_TOKEN_PATH`,
/// `*_TOKEN_FILE` or `VAULT_TOKEN_TTL`, which name no token.
pub(super) fn is_token_env(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').collect();
    words.last() == Some(&"TOKEN") && words.iter().any(|w| *w == "VAULT" || *w == "BAO")
}

/// Where a token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// Written into the manifest (or the values) as a literal.
    Literal,
    /// `valueFrom.secretKeyRef` (Secret name, key, optional).
    SecretKey(String, String, bool),
    /// `envFrom.secretRef` whose rendered Secret holds the variable (Secret name, optional).
    SecretEnvFrom(String, bool),
    /// A file of a Secret volume a script reads (Secret name, path, optional).
    SecretFile(String, String, bool),
}

impl Source {
    fn optional(&self) -> bool {
        match self {
            Source::Literal => false,
            Source::SecretKey(_, _, o) | Source::SecretEnvFrom(_, o) | Source::SecretFile(_, _, o) => *o,
        }
    }

    fn describe(&self) -> String {
        match self {
            Source::Literal => "a literal token written into the manifest".into(),
            Source::SecretKey(s, k, _) => format!("Secret `{s}` key `{k}`"),
            Source::SecretEnvFrom(s, _) => format!("Secret `{s}` (envFrom)"),
            Source::SecretFile(s, p, _) => format!("Secret `{s}`, mounted as a volume and read from `{p}`"),
        }
    }

    /// What one cause is keyed by: the Secret (or the literal's variable).
    fn key(&self, var: &str) -> String {
        match self {
            Source::Literal => format!("literal:{var}"),
            Source::SecretKey(s, ..) | Source::SecretEnvFrom(s, _) | Source::SecretFile(s, ..) => format!("secret:{s}"),
        }
    }
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

/// How an `env` entry gets its value, if from a literal or a Secret key.
fn env_source(e: &Value) -> Option<Source> {
    if e.get("value")
        .and_then(Value::as_str)
        .is_some_and(|v| !v.trim().is_empty())
    {
        return Some(Source::Literal);
    }
    let r = e.pointer("/valueFrom/secretKeyRef")?;
    let secret = r.get("name").and_then(Value::as_str).unwrap_or("?");
    let key = r.get("key").and_then(Value::as_str).unwrap_or("?");
    Some(Source::SecretKey(secret.into(), key.into(), optional(r)))
}

/// Token variables of a container's environment: (variable, source, line needle).
fn token_sources(g: &Graph, obj: &Object, c: &Value) -> Vec<(String, Source, String)> {
    let mut out = Vec::new();
    for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = e.get("name").and_then(Value::as_str).filter(|n| is_token_env(n)) else {
            continue;
        };
        if let Some(src) = env_source(e) {
            out.push((name.to_string(), src, name.to_string()));
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
                out.push((
                    name,
                    Source::SecretEnvFrom(secret.into(), optional(r)),
                    secret.to_string(),
                ));
            }
        }
    }
    out
}

/// The Secret volume that holds `path` in a container (the longest mount path that contains
/// it): (Secret name, optional).
fn secret_volume(obj: &Object, c: &Value, path: &str) -> Option<(String, bool)> {
    let mount = c
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| Some((m.get("mountPath")?.as_str()?, m.get("name")?.as_str()?)))
        .filter(|(mp, _)| {
            let mp = mp.trim_end_matches('/');
            path == mp || path.strip_prefix(mp).is_some_and(|r| r.starts_with('/'))
        })
        .max_by_key(|(mp, _)| mp.len())?;
    let vol = obj
        .pod_spec()?
        .get("volumes")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(mount.1))?;
    if let Some(s) = vol.get("secret") {
        return Some((s.get("secretName")?.as_str()?.to_string(), optional(s)));
    }
    vol.pointer("/projected/sources")?.as_array()?.iter().find_map(|src| {
        let s = src.get("secret")?;
        Some((s.get("name")?.as_str()?.to_string(), optional(s)))
    })
}

/// A literal `value` of one of the container's variables, for `$NAME` in a path.
fn env_literal<'a>(c: &'a Value, name: &str) -> Option<&'a str> {
    c.get("env")?
        .as_array()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
        .get("value")?
        .as_str()
}

/// `$NAME`, `${NAME}`, `${NAME:-…}` → `NAME`.
fn variable(v: &str) -> Option<&str> {
    let body = v.strip_prefix('$')?;
    let body = body
        .strip_prefix('{')
        .map(|b| b.split(['}', ':', '-']).next().unwrap_or(b))
        .unwrap_or(body);
    (!body.is_empty() && body.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(body)
}

/// Where a value a script passes as a token comes from, when that is known: a file of a Secret
/// volume (`$(cat /secret/token)`, `$(< …)`, `@/secret/token`), a Secret variable
/// (`$ROOT_TOKEN` from a `secretKeyRef`), or a literal. A token produced at run time (`$(bao write
/// -field=token auth/kubernetes/login …)`) or read from anything else is not a static token.
fn script_value_source(obj: &Object, c: &Value, value: &str) -> Option<Source> {
    let v = value.trim();
    if v.is_empty() || v == "-" {
        return None;
    }
    let file = |path: &str| -> Option<Source> {
        let expanded;
        let path = match path.split_once('/') {
            Some((var, rest)) if variable(var).is_some() => {
                expanded = format!("{}/{rest}", env_literal(c, variable(var)?)?.trim_end_matches('/'));
                expanded.as_str()
            }
            _ => match variable(path) {
                Some(var) => env_literal(c, var)?,
                None => path,
            },
        };
        let (secret, opt) = secret_volume(obj, c, path)?;
        Some(Source::SecretFile(secret, path.to_string(), opt))
    };
    if let Some(inner) = v
        .strip_prefix("$(")
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| v.strip_prefix('`').and_then(|r| r.strip_suffix('`')))
    {
        if let Some(path) = inner.trim().strip_prefix('<') {
            return file(path.trim());
        }
        let cmds = shell::script_commands(inner);
        let cmd = cmds.first()?;
        if !matches!(cmd.name(), "cat" | "head" | "tail") {
            return None;
        }
        let path = cmd.argv.iter().skip(1).rfind(|w| !w.starts_with('-'))?;
        return file(path);
    }
    if let Some(path) = v.strip_prefix('@') {
        return file(path);
    }
    if let Some(var) = variable(v) {
        let e = c
            .get("env")?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(var))?;
        // A token variable of its own is reported as such already.
        return match env_source(e)? {
            Source::SecretKey(..) if !is_token_env(var) => env_source(e),
            _ => None,
        };
    }
    (!v.contains(['$', '`'])).then_some(Source::Literal)
}

/// Tokens a script hands to OpenBao/Vault: `BAO_TOKEN=… bao …`, `export VAULT_TOKEN=…`,
/// `bao login TOKEN`, `vault login token=TOKEN`, curl's `X-Vault-Token` header: (what, value).
fn script_tokens(cmd: &shell::SimpleCommand) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (n, v) in &cmd.assigns {
        if is_token_env(n) {
            out.push((format!("`{n}=…`"), v.clone()));
        }
    }
    let a = &cmd.argv;
    if matches!(cmd.name(), "bao" | "vault" | "openbao") && a.get(1).is_some_and(|w| w == "login") {
        let mut method: Option<&str> = None;
        let mut positional = true;
        let mut i = 2;
        while i < a.len() {
            let w = &a[i];
            let f = w.trim_start_matches('-');
            if w.starts_with('-') {
                if let Some(m) = f.strip_prefix("method=") {
                    method = Some(m);
                } else if f == "method" {
                    method = a.get(i + 1).map(String::as_str);
                    i += 1;
                }
            } else if let Some(t) = w.strip_prefix("token=") {
                out.push((format!("`{} login token=…`", cmd.name()), t.to_string()));
            } else if !w.contains('=') && positional && method.is_none_or(|m| m == "token") {
                out.push((format!("`{} login …`", cmd.name()), w.clone()));
                positional = false;
            }
            i += 1;
        }
    }
    if cmd.name() == "curl" {
        for (i, w) in a.iter().enumerate() {
            let header = match w.as_str() {
                "-H" | "--header" => a.get(i + 1).map(String::as_str),
                _ => w.strip_prefix("-H").or_else(|| w.strip_prefix("--header=")),
            };
            if let Some((k, v)) = header.and_then(|h| h.split_once(':')) {
                if k.trim().eq_ignore_ascii_case("x-vault-token") {
                    out.push(("curl's `X-Vault-Token` header".to_string(), v.trim().to_string()));
                }
            }
        }
    }
    out
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
            for (place, cmds) in commands(c) {
                let in_place = if place.is_empty() {
                    "its command line".to_string()
                } else {
                    format!("its {place} exec command")
                };
                for cmd in &cmds {
                    for (what, value) in script_tokens(cmd) {
                        let Some(src) = script_value_source(obj, c, &value) else {
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

    #[test]
    fn a_secret_read_three_times_by_one_job_is_one_finding() {
        let f = crate::fold::fold(run(TOKEN, &fixture("fires-vault-token-static-script-volume")));
        let all = messages(&f);
        assert_eq!(f.len(), 3, "{all}");
        assert!(
            !all.contains("notarealtoken"),
            "the token's value must never be shown:\n{all}"
        );
        let related: Vec<&str> = f[1].related.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(related.len(), 2, "{related:#?}");
        assert!(related[0].contains("`bao login …`") && related[1].contains("`X-Vault-Token` header"));
        assert!(f.iter().all(|f| f.unwaivable && f.severity.is_none()));
    }

    #[test]
    fn required_tokens_are_never_waived_optional_ones_may_be() {
        let f = run(TOKEN, &fixture("fires-vault-token-static-job-and-hook"))
            .into_iter()
            .chain(run(TOKEN, &fixture("fires-vault-token-static-optional-bootstrap")))
            .collect::<Vec<_>>();
        let policy = crate::policy::Policy::parse(
            "waivers:\n- {rule: vault-token-static, target: {environment: test}, reason: bootstrap only, expires: 2099-01-01}\n",
            "p.yaml", crate::rules::family_of,
        )
        .unwrap();
        let warn = crate::sink::Overrides::new(&policy, &[], &["vault-token-static".into()], &[]).unwrap();
        let out = crate::sink::apply(f, &policy, &warn, time::macros::date!(2026 - 11 - 29));
        let mine: Vec<(Severity, bool)> = out
            .iter()
            .filter(|f| f.rule == TOKEN)
            .map(|f| (f.sev(), f.waived.is_some()))
            .collect();
        // Required: still errors, unwaived, whatever -W says; optional: lowered and waived.
        assert_eq!(
            mine,
            [
                (Severity::Error, false),
                (Severity::Error, false),
                (Severity::Warning, true)
            ]
        );
    }

    #[test]
    fn tokens_in_the_values_of_an_unrendered_release() {
        use crate::testkit::{rel, repo, run_state, state};
        let mut r = rel(
            "helmfile.yaml",
            7,
            "c",
            "issuer",
            repo("example", "issuer", "https://charts.example.com", false),
        );
        r.declared_values = vec![serde_json::json!({
            "issuer": {"vault": {"auth": {"tokenSecretRef": {"name": "root", "key": "token"}}}},
            "env": [
                {"name": "VAULT_TOKEN", "value": "s.notarealtoken"},
                {"name": "BAO_TOKEN", "valueFrom": {"secretKeyRef": {"name": "boot", "key": "token", "optional": true}}},
                {"name": "VAULT_TOKEN_FILE", "value": "/t"}
            ]
        })];
        let st = state(vec![r.clone()], vec![]);
        let p = crate::policy::Policy::default();
        let f = run_state(rule(TOKEN), &st, &crate::stack::Stack::default(), &p, &[]);
        let all = messages(&f);
        assert_eq!(f.len(), 3, "{all}");
        assert!(!all.contains("notarealtoken"), "{all}");
        assert!(f[0].message.contains("`issuer.vault.auth.tokenSecretRef`") && f[0].unwaivable);
        assert!(f[1].message.contains("`env[0]` gives `VAULT_TOKEN`") && f[1].unwaivable);
        assert_eq!(f[2].severity, Some(Severity::Warning));
        // Rendered: its objects are judged instead.
        let status = [crate::render::ReleaseStatus {
            name: "issuer".into(),
            namespace: "c".into(),
            chart: "example/issuer".into(),
            installed: true,
            version: None,
            rendered: true,
            reason: None,
            objects: 1,
            mirror: None,
        }];
        assert!(run_state(rule(TOKEN), &st, &crate::stack::Stack::default(), &p, &status).is_empty());
    }
}
