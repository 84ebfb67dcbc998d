//! The commands a container runs, read through the one container model: its command line, its
//! Argo script `source`, its probes' and lifecycle hooks' exec commands, each as simple commands
//! (`crate::shell`), and what of them the gate cannot read.

use super::*;

/// Every command a container runs, as simple commands (`shell`): its command line (`""`:
/// `command` + `args`, `crate::router::command_line`, `sh -c` scripts read), then the `exec`
/// commands of its probes and lifecycle hooks (`readinessProbe`, `lifecycle.preStop`, …), which
/// run in the same image with the same trust (the upstream OpenBao chart's readiness probe is `bao
/// status -tls-skip-verify` once TLS is on). Broader than `crate::router::parse_flags` on purpose
/// (every element, any scalar, `-flag` too): this hunts any client's insecure switch, not the
/// router's contract.
///
/// Every element is expanded as the kubelet expands it (`router::expand_items`: `$(VAR)` from the
/// container's env, earlier entries, rendered ConfigMaps of `g` in `ns`), so `args:
/// ["$(EXTRA)"]` with `EXTRA=--insecure` is judged as `--insecure`. What the gate cannot read is
/// in `unreadable`.
pub(crate) fn commands<'p>(
    g: Option<&Graph>,
    pod: impl Into<router::Pod<'p>>,
    c: &Value,
) -> Vec<(&'static str, Vec<shell::SimpleCommand>)> {
    commands_read(g, pod.into(), c, true)
}

/// [`commands`] with the scripts' `$NAME` left as written (`vault-token-static` traces a
/// token variable to its source by name; a resolved value would read as a literal).
pub(crate) fn commands_as_written<'p>(
    g: Option<&Graph>,
    pod: impl Into<router::Pod<'p>>,
    c: &Value,
) -> Vec<(&'static str, Vec<shell::SimpleCommand>)> {
    commands_read(g, pod.into(), c, false)
}

fn commands_read(
    g: Option<&Graph>,
    pod: router::Pod<'_>,
    c: &Value,
    shell_vars: bool,
) -> Vec<(&'static str, Vec<shell::SimpleCommand>)> {
    // The shell's `$NAME` and `${NAME}` read from the same environment (`shell::resolve`).
    let env: Vec<(String, String)> = router::effective_env(g, pod, c)
        .into_iter()
        .filter_map(|e| match e.value {
            router::EnvValue::Known(v) | router::EnvValue::Secret { value: v, .. } => Some((e.name, v)),
            router::EnvValue::Unknown(_) => None,
        })
        .collect();
    let resolved = |mut cmds: Vec<shell::SimpleCommand>| {
        if shell_vars {
            shell::resolve(&mut cmds, &env);
        }
        cmds
    };
    let expand = |items: &mut dyn Iterator<Item = &Value>| -> Vec<String> {
        let x = if shell_vars {
            router::expand_items(g, pod, c, items)
        } else {
            router::expand_items_keeping_secrets(g, pod, c, items)
        };
        x.into_iter().map(|e| e.text).collect()
    };
    let argv = expand(&mut router::command_line(c));
    let mut out = vec![("", resolved(shell::argv_commands(&argv)))];
    // Argo Workflows' script template: `source` is a script its `command` interpreter runs.
    if let Some(source) = c.get("source").and_then(Value::as_str) {
        out.push((
            "source",
            resolved(shell::argv_commands(&["sh".into(), "-c".into(), source.to_string()])),
        ));
    }
    for (label, ptr) in EXEC_PLACES {
        if let Some(items) = c.pointer(ptr).and_then(Value::as_array) {
            let argv = expand(&mut items.iter());
            out.push((label, resolved(shell::argv_commands(&argv))));
        }
    }
    out
}

/// The exec commands a container runs besides its command line: its probes' and lifecycle hooks'
/// (label, JSON pointer). The kubelet runs them in the container, with its environment; it
/// expands `$(VAR)` in a probe's from the literal `env` values only (`valueFrom` ones give "",
/// `ExpandContainerCommandOnlyStatic`, kubernetes pkg/kubelet/prober/prober.go) and not at all in
/// a hook's (pkg/kubelet/lifecycle/handlers.go). The gate judges them as it judges the command
/// line, so neither today's reading nor a kubelet that resolves every source hides a switch, and
/// a reference it cannot read is a finding here as there (fail closed).
pub(super) const EXEC_PLACES: [(&str, &str); 5] = [
    ("livenessProbe", "/livenessProbe/exec/command"),
    ("readinessProbe", "/readinessProbe/exec/command"),
    ("startupProbe", "/startupProbe/exec/command"),
    ("lifecycle.postStart", "/lifecycle/postStart/exec/command"),
    ("lifecycle.preStop", "/lifecycle/preStop/exec/command"),
];

/// Elements of a container's command line (or a probe's or hook's exec command, [`EXEC_PLACES`])
/// whose expansion the gate cannot know (a `$(VAR)` from a
/// Secret, a field reference, an `envFrom` source it cannot list) and that may be an insecure
/// switch: a whole element that is such a reference (it may be any flag), or a switch of the
/// table whose value is one (`--tls-skip-verify=$(SKIP)`); the same for a script's `$NAME` of such
/// a container variable (`sh -c`, probes, hooks: as unknown as `$(NAME)`). `(place: "" for the
/// command line or an exec place's label, element, variable, reference as written, why)`.
pub(crate) fn unreadable<'p>(
    g: Option<&Graph>,
    pod: impl Into<router::Pod<'p>>,
    c: &Value,
) -> Vec<(&'static str, String, String, String, String)> {
    let pod = pod.into();
    let is_switch = |w: &str| -> Option<String> {
        let (name, value) = w.trim_start_matches('-').split_once('=')?;
        (w.starts_with('-') && switch_def(&norm(name)).is_some()).then(|| value.to_string())
    };
    let mut out = Vec::new();
    let execs = EXEC_PLACES
        .iter()
        .filter_map(|(label, ptr)| Some((*label, c.pointer(ptr)?.as_array()?.iter().collect::<Vec<_>>())));
    for (place, items) in std::iter::once(("", router::command_line(c).collect::<Vec<_>>())).chain(execs) {
        let raw: Vec<String> = items.iter().map(|v| scalar_text(v)).collect();
        for (written, e) in raw.iter().zip(router::expand_items(g, pod, c, items.into_iter())) {
            let Some((var, why)) = e.unknown.first() else { continue };
            let whole = written.trim() == format!("$({var})");
            if whole || is_switch(written).is_some() {
                out.push((place, written.clone(), var.clone(), format!("$({var})"), why.clone()));
            }
        }
    }
    let unknown: Vec<(String, String)> = router::effective_env(g, pod, c)
        .into_iter()
        .filter_map(|e| match e.value {
            router::EnvValue::Unknown(why) => Some((e.name, why)),
            _ => None,
        })
        .collect();
    if unknown.is_empty() {
        return out;
    }
    for (place, cmds) in commands(g, pod, c) {
        for cmd in cmds.iter().filter(|cmd| cmd.script) {
            for (i, w) in cmd.argv.iter().enumerate() {
                // A whole word `$NAME` / `"$NAME"`, or a switch's value (`--x=$NAME`); a quoted
                // `'$NAME'` is literal text, not a variable.
                let Some((before, name, written)) = cmd.variable_at(i) else {
                    continue;
                };
                if !(before.is_empty() || before.ends_with('=') && is_switch(w).is_some()) {
                    continue;
                }
                let Some((var, why)) = unknown.iter().find(|(n, _)| n == name) else {
                    continue;
                };
                if !out.iter().any(|(_, seen, ..)| seen == w) {
                    out.push((place, w.clone(), var.clone(), written.to_string(), why.clone()));
                }
            }
        }
    }
    out
}
