//! A container's environment as the insecure rules judge it: the router's one container model
//! (`router::effective_env`: literal `env` expanded, `envFrom` and key references to rendered
//! ConfigMaps and Secrets, the downward API's `fieldRef` to the pod template), each variable as
//! the process sees it (a later setting of a name overrides an earlier one).

use super::*;

/// One environment variable of a container whose value the gate can read.
pub(super) struct EnvVar {
    pub name: String,
    pub value: Value,
    /// The ConfigMap, Secret or downward API field it was resolved from.
    pub from: Option<String>,
    /// What to look for in the template to point at the line (the variable, or the `envFrom`
    /// source's name).
    pub needle: String,
    /// It comes from a Secret: judge `value`, never show it.
    pub secret: bool,
}

impl EnvVar {
    /// `NAME=value` as a message may show it: a Secret's value never.
    pub fn shown(&self) -> String {
        if self.secret {
            format!(
                "{}=<value of {}>",
                self.name,
                self.from.as_deref().unwrap_or("a Secret")
            )
        } else {
            format!("{}={}", self.name, short(&self.value))
        }
    }

    /// ` (from …)` for messages, empty for a literal; a Secret is named in [`EnvVar::shown`].
    pub fn via(&self) -> String {
        match (&self.from, self.secret) {
            (Some(f), false) => format!(" (from {f})"),
            _ => String::new(),
        }
    }
}

/// A container's readable environment: every variable the kubelet sets whose value the render
/// decides (literal, rendered ConfigMap or Secret, downward API field of the template).
pub(super) fn env_of(g: &Graph, obj: &Object, c: &Value) -> Vec<EnvVar> {
    router::effective_env(Some(g), router::Pod::of_container(obj, c), c)
        .into_iter()
        .filter_map(|e| {
            let (value, secret) = match e.value {
                router::EnvValue::Known(v) => (v, false),
                router::EnvValue::Secret { value, .. } => (value, true),
                router::EnvValue::Unknown(_) => return None,
            };
            Some(EnvVar {
                name: e.name,
                value: Value::String(value),
                from: e.from,
                needle: e.needle,
                secret,
            })
        })
        .collect()
}

/// Variables of a container's environment the gate cannot read (a Secret or ConfigMap the render
/// does not hold, a missing key, a field known only in the running pod): (name, line needle, why).
pub(super) fn unreadable_env(g: &Graph, obj: &Object, c: &Value) -> Vec<(String, String, String)> {
    router::effective_env(Some(g), router::Pod::of_container(obj, c), c)
        .into_iter()
        .filter_map(|e| match e.value {
            router::EnvValue::Unknown(why) => Some((e.name, e.needle, why)),
            _ => None,
        })
        .collect()
}

/// `insecure-flag` in a container's environment: a variable of the switch table set to its
/// insecure value (a Secret's value judged, never shown), and one whose value the gate cannot read.
pub(super) fn env_switches(
    g: &Graph,
    obj: &Object,
    c: &Value,
    who: &str,
    cause: &dyn Fn(&str) -> String,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for var in env_of(g, obj, c) {
        if let Some(effect) = insecure_setting(&var.name, &var.value) {
            let (name, via) = (&var.name, var.via());
            out.push(
                container_finding(
                    INSECURE_FLAG,
                    obj,
                    c,
                    "",
                    &var.needle,
                    format!("{who} sets `{}`{via}, which {effect}", var.shown()),
                )
                .with_help(format!(
                    "remove `{name}` or set it to false; trust comes from the certificate and the trust bundle"
                ))
                .with_cause(cause(&norm(name))),
            );
        }
    }
    // A switch of the table whose value the gate cannot read may be on.
    for (name, needle, why) in unreadable_env(g, obj, c) {
        let n = norm(&name);
        if insecure_effect(&n).is_none() && !verify_switch(&n) {
            continue;
        }
        out.push(
            container_finding(
                INSECURE_FLAG,
                obj,
                c,
                "",
                &needle,
                format!("{who} sets `{name}`, a switch that can turn TLS or verification off, to a value the gate cannot read ({why})"),
            )
            .with_help(format!(
                "give `{name}` a value the render shows (a literal, or a key of a ConfigMap or Secret the stack renders), or remove it"
            ))
            .with_cause(cause(&format!("unreadable:{}", norm(&name)))),
        );
    }
    out
}

/// `f` with every value of `secrets` (value, label: a container's rendered Secret values,
/// `router::secret_values`) replaced by `<label>`, and the host of one that is a dial address by
/// `<host in …>`, in every text it carries: whatever a message quotes of a command line or a
/// variable, a Secret's value is never shown.
pub(crate) fn hide(mut f: Finding, secrets: &[(String, String)]) -> Finding {
    if secrets.is_empty() {
        return f;
    }
    // A dial address's host is shown on its own too (`plain http:// to `host``).
    let mut all = secrets.to_vec();
    for (value, label) in secrets {
        if let Some(d) = dial::parse_dial(value).filter(|d| !d.host.is_empty()) {
            let from = label.strip_prefix("value of ").unwrap_or(label);
            all.push((d.host.clone(), format!("host in {from}")));
        }
    }
    all.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
    let secrets = &all[..];
    f.message = router::hide_secrets(&f.message, secrets);
    f.help = f.help.map(|h| router::hide_secrets(&h, secrets));
    for r in &mut f.related {
        r.message = router::hide_secrets(&r.message, secrets);
    }
    if let Some((_, m)) = f.cause.as_mut().and_then(|c| c.at.as_mut()) {
        *m = router::hide_secrets(m, secrets);
    }
    f
}
