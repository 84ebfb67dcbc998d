//! Tokens a container's scripts set or read (`export VAULT_TOKEN=…`, `$(cat /vault/token)`),
//! traced to their source.

use super::*;

/// Where a value a script passes as a token comes from, when that is known: a file of a Secret
/// volume (`$(cat /secret/token)`, `$(< …)`, `@/secret/token`), a Secret variable
/// (`$ROOT_TOKEN` from a `secretKeyRef`), or a literal. A token produced at run time (`$(bao write
/// -field=token auth/kubernetes/login …)`) or read from anything else is not a static token.
pub(super) fn script_value_source(g: &Graph, obj: &Object, c: &Value, value: &str) -> Option<Source> {
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
        let (secret, opt) = secret_volume(g, obj, c, path)?;
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
pub(super) fn script_tokens(cmd: &shell::SimpleCommand) -> Vec<(String, String)> {
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
