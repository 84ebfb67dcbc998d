//! Where a container's token comes from: a literal, a Secret (required or `optional`), a mounted
//! Secret volume, a variable of another source.

use super::*;

/// Where a token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
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
    pub(super) fn optional(&self) -> bool {
        match self {
            Source::Literal => false,
            Source::SecretKey(_, _, o) | Source::SecretEnvFrom(_, o) | Source::SecretFile(_, _, o) => *o,
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Source::Literal => "a literal token written into the manifest".into(),
            Source::SecretKey(s, k, _) => format!("Secret `{s}` key `{k}`"),
            Source::SecretEnvFrom(s, _) => format!("Secret `{s}` (envFrom)"),
            Source::SecretFile(s, p, _) => format!("Secret `{s}`, mounted as a volume and read from `{p}`"),
        }
    }

    /// What one cause is keyed by: the Secret (or the literal's variable).
    pub(super) fn key(&self, var: &str) -> String {
        match self {
            Source::Literal => format!("literal:{var}"),
            Source::SecretKey(s, ..) | Source::SecretEnvFrom(s, _) | Source::SecretFile(s, ..) => format!("secret:{s}"),
        }
    }
}

pub(super) fn optional(v: &Value) -> bool {
    v.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

/// Keys of a rendered Secret (`data` and `stringData`).
pub(super) fn secret_keys<'a>(g: &'a Graph, ns: Option<&str>, name: &str) -> Vec<&'a str> {
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
pub(super) fn env_source(e: &Value) -> Option<Source> {
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
pub(super) fn token_sources(g: &Graph, obj: &Object, c: &Value) -> Vec<(String, Source, String)> {
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

/// The Secret whose file a container sees at `path`, as the kubelet lays it out (subPath, items,
/// projected sources: `crate::graph::volumes`): (Secret name, optional). None when no Secret
/// writes that file (a ServiceAccount token, a ConfigMap, a path nothing projects).
pub(super) fn secret_volume(g: &Graph, obj: &Object, c: &Value, path: &str) -> Option<(String, bool)> {
    let m = crate::graph::volumes::mounted_at(obj.pod_spec_of(c)?, c, path)?;
    let h = m.file(&crate::rules::pki::mounts::rendered_keys(g, obj.namespace.as_deref()))?;
    (h.source.kind == crate::graph::volumes::SourceKind::Secret).then(|| (h.source.name.to_string(), h.source.optional))
}

/// A literal `value` of one of the container's variables, for `$NAME` in a path.
pub(super) fn env_literal<'a>(c: &'a Value, name: &str) -> Option<&'a str> {
    c.get("env")?
        .as_array()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
        .get("value")?
        .as_str()
}

/// `$NAME`, `${NAME}`, `${NAME:-…}` → `NAME`.
pub(super) fn variable(v: &str) -> Option<&str> {
    let body = v.strip_prefix('$')?;
    let body = body
        .strip_prefix('{')
        .map(|b| b.split(['}', ':', '-']).next().unwrap_or(b))
        .unwrap_or(body);
    (!body.is_empty() && body.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(body)
}
