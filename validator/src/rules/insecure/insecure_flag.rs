//! `insecure-flag`: a container argument, environment variable, object field or helmfile state value
//! that turns certificate verification or TLS off.

use super::*;

/// One insecure setting found in a values tree: where, what, and its effect.
struct Hit {
    path: String,
    shown: String,
    effect: &'static str,
}

/// Walk helm values (or an object's spec when `keys_only`): insecure keys at any depth, env-style
/// `{name, value}` entries, and insecure flags in string lists or `-`-prefixed strings.
/// `skip` excludes paths another rule reports.
fn scan_values(
    v: &Value,
    path: &mut Vec<String>,
    keys_only: bool,
    skip: &dyn Fn(&[String]) -> bool,
    hits: &mut Vec<Hit>,
) {
    match v {
        Value::Object(m) => {
            if !keys_only {
                if let (Some(Value::String(name)), Some(val)) = (m.get("name"), m.get("value")) {
                    if let Some(effect) = insecure_setting(name, val) {
                        hits.push(Hit {
                            path: show_path(path),
                            shown: format!("{}: {name}={}", show_path(path), short(val)),
                            effect,
                        });
                    }
                }
            }
            for (k, child) in m {
                // Label maps (`labels`, `matchLabels`, `podLabels`, `nodeSelector`, a Service's
                // `selector`) hold names that
                // identify and select objects (Kubernetes: labels are identifying attributes), never
                // settings: a label called `insecure` turns nothing off.
                let label_map = |v: &Value| v.as_object().is_some_and(|m| m.values().all(Value::is_string));
                if child.is_object()
                    && (norm(k).ends_with("labels")
                        || norm(k) == "nodeselector"
                        || (norm(k) == "selector" && label_map(child)))
                {
                    continue;
                }
                path.push(k.clone());
                if !skip(path) {
                    let scalar = !child.is_object() && !child.is_array();
                    let tls_off = !keys_only
                        && path.len() == 2
                        && norm(&path[0]) == "tls"
                        && norm(k) == "enabled"
                        && falsy(child);
                    if scalar {
                        if let Some(effect) = insecure_setting_in(path, child) {
                            hits.push(Hit {
                                path: show_path(path),
                                shown: format!("{}: {}", show_path(path), short(child)),
                                effect,
                            });
                        } else if tls_off {
                            hits.push(Hit {
                                path: show_path(path),
                                shown: format!("tls.enabled: {}", short(child)),
                                effect: "turns TLS off",
                            });
                        }
                    }
                    if let (false, Value::String(s)) = (keys_only, child) {
                        if s.trim_start().starts_with('-') {
                            let mut words = Vec::new();
                            push_words(s, &mut words);
                            for sw in insecure_flags(&words) {
                                hits.push(Hit {
                                    path: show_path(path),
                                    shown: format!("{}: {}", show_path(path), sw.shown),
                                    effect: sw.effect,
                                });
                            }
                        }
                    }
                    scan_values(child, path, keys_only, skip, hits);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            if !keys_only {
                let words: Vec<String> = items.iter().filter(|i| i.is_string()).map(scalar_text).collect();
                let mut tokens = Vec::new();
                for w in &words {
                    push_words(w, &mut tokens);
                }
                for sw in insecure_flags(&tokens) {
                    hits.push(Hit {
                        path: show_path(path),
                        shown: format!("{}: {}", show_path(path), sw.shown),
                        effect: sw.effect,
                    });
                }
            }
            for (i, item) in items.iter().enumerate() {
                if item.is_object() || item.is_array() {
                    path.push(format!("[{i}]"));
                    scan_values(item, path, keys_only, skip, hits);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

pub(super) fn insecure_flag(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for obj in rendered(ctx.graph) {
        // One switch in one pod template is one cause, however many of its containers, probes
        // and hooks repeat it.
        let cause = |name: &str| {
            format!(
                "{}/{}/{}:{}",
                obj.kind,
                obj.namespace.as_deref().unwrap_or(""),
                obj.name,
                name
            )
        };
        for (list, c) in obj.containers() {
            let who = format!("{}: {} `{}`", obj.display(), list_word(list), container_name(c));
            // Values of rendered Secrets this container reads: judged, never shown.
            let secrets = router::secret_values(Some(ctx.graph), router::Pod::of_container(obj, c), c);
            let mut mine: Vec<Finding> = Vec::new();
            for (place, written, var, reference, why) in
                unreadable(Some(ctx.graph), router::Pod::of_container(obj, c), c)
            {
                let (runs, _) = place_words(place);
                mine.push(
                    container_finding(
                        INSECURE_FLAG,
                        obj,
                        c,
                        place,
                        &written,
                        format!("{who} {runs} `{written}`, which the gate cannot read ({reference}: {why}); it may turn TLS or verification off"),
                    )
                    .with_help(format!("give `{written}` a value the render shows (a literal env value or a rendered ConfigMap key), so the command line can be judged"))
                    .with_cause(cause(&format!("unreadable:{var}"))),
                );
            }
            for (place, cmds) in commands(Some(ctx.graph), router::Pod::of_container(obj, c), c) {
                let (runs, sets) = place_words(place);
                for cmd in &cmds {
                    for (name, value) in &cmd.assigns {
                        if let Some(effect) = insecure_setting(name, &Value::String(value.clone())) {
                            mine.push(
                                container_finding(
                                    INSECURE_FLAG,
                                    obj,
                                    c,
                                    place,
                                    &format!("{name}="),
                                    format!("{who} {sets} `{name}={}`, which {effect}", short(&Value::String(value.clone()))),
                                )
                                .with_help(format!(
                                    "remove `{name}` or set it to false; trust comes from the certificate and the trust bundle"
                                ))
                                .with_cause(cause(&norm(name))),
                            );
                        }
                    }
                    for sw in command_switches(cmd) {
                        let needle = sw
                            .shown
                            .trim_start_matches("curl ")
                            .split(['=', ' '])
                            .next()
                            .unwrap_or(&sw.shown)
                            .to_string();
                        // A switch a Secret's value spells: removed there, where it is written.
                        let help = match secrets.iter().find(|(v, _)| v.contains(needle.as_str())) {
                            Some((_, label)) => format!(
                                "the switch comes from the {label}: remove it there and give the client a certificate it can verify"
                            ),
                            None => format!(
                                "remove `{needle}` and give the client a certificate it can verify"
                            ),
                        };
                        mine.push(
                            container_finding(
                                INSECURE_FLAG,
                                obj,
                                c,
                                place,
                                &needle,
                                format!("{who} {runs} `{}`, which {}", sw.shown, sw.effect),
                            )
                            .with_help(help)
                            .with_cause(cause(&sw.name)),
                        );
                    }
                }
            }
            mine.extend(env_switches(ctx.graph, obj, c, &who, &cause));
            out.extend(std::mem::take(&mut mine).into_iter().map(|f| hide(f, &secrets)));
        }
        if matches!(obj.kind.as_str(), "ConfigMap" | "Secret" | "CustomResourceDefinition") {
            out.extend(super::config_switches::config_file_switches(obj));
            continue;
        }
        if let Some(spec) = obj.at("/spec") {
            let mut hits = Vec::new();
            scan_values(spec, &mut vec!["spec".to_string()], true, &|_| false, &mut hits);
            for h in hits {
                let key = h.path.rsplit('.').next().unwrap_or(&h.path).to_string();
                out.push(
                    Finding::object_at(
                        INSECURE_FLAG,
                        obj,
                        &key,
                        format!("{}: `{}` {}", obj.display(), h.shown, h.effect),
                    )
                    .with_help(format!("set `{}` to false and configure a CA bundle instead", h.path)),
                );
            }
        }
    }
    if let Some(state) = ctx.state {
        out.extend(state_tls_hits(ctx, state));
        for r in state.installed() {
            for h in release_value_hits(r) {
                out.push(
                    Finding::state(
                        INSECURE_FLAG,
                        Some(ctx.environment),
                        Some(r.id()),
                        &r.file,
                        r.line,
                        format!("release {}: value `{}` {}", r.id(), h.shown, h.effect),
                    )
                    .with_help(format!(
                        "remove `{}` from the release's values (or set it false); the charts refuse it at render time",
                        h.path
                    )),
                );
            }
        }
    }
    out
}

/// Chart fetches without TLS verification, as helmfile applies them: a release's effective
/// `insecureSkipTLSVerify` (its own or `helmDefaults`', or `--insecure-skip-tls-verify` in
/// `helmDefaults.args`), and a repository's `skipTLSVerify`.
fn state_tls_hits(ctx: &Ctx, state: &crate::stack::EnvState) -> Vec<Finding> {
    let mut out = Vec::new();
    for repo in state.repositories.iter().filter(|r| r.skip_tls_verify) {
        out.push(
            Finding::state(
                INSECURE_FLAG,
                Some(ctx.environment),
                None,
                &repo.file,
                None,
                format!(
                    "repository `{}` ({}) sets `skipTLSVerify: true`: its index and charts are fetched without verifying the server certificate",
                    repo.name, repo.url
                ),
            )
            .with_help("remove `skipTLSVerify`; give helm the repository's CA with `caFile:` instead"),
        );
    }
    for r in state.installed() {
        if let Some(what) = &r.insecure_tls {
            let f = Finding::state(
                INSECURE_FLAG,
                Some(ctx.environment),
                Some(r.id()),
                &r.file,
                r.line,
                format!(
                    "release {}: `{what}` makes helm fetch its chart without verifying the server certificate",
                    r.id()
                ),
            )
            .with_help("remove it; give helm the repository's CA (`caFile:`) instead");
            // Inherited from helmDefaults: one finding at that line, each release related.
            let f = match what.strip_prefix("helmDefaults.") {
                Some(setting) => f.with_cause_at(
                    format!("helmDefaults@{}:{setting}", r.file),
                    &r.file,
                    r.helm_defaults_line,
                    format!(
                        "{}: `helmDefaults.{setting}` makes helm fetch the chart of every release of this state file without verifying the server certificate",
                        r.file
                    ),
                ),
                None => f,
            };
            out.push(f);
        }
    }
    out
}

/// Insecure settings in a release's values: the merged values (or, when helmfile could not
/// compute them, the inline values) and `set:` entries.
fn release_value_hits(r: &Release) -> Vec<Hit> {
    let bao = is_openbao(r) || server_config::configures_server(&effective_values(r));
    // An OpenBao/Vault server's `global.tlsDisable` is plaintext-endpoint's finding.
    let skip = move |p: &[String]| bao && p.len() == 2 && p[0] == "global" && p[1] == "tlsDisable";
    let mut hits = Vec::new();
    if r.values.is_null() {
        for v in r.declared_values.iter().filter(|v| v.is_object()) {
            scan_values(v, &mut Vec::new(), false, &skip, &mut hits);
        }
    } else {
        scan_values(&r.values, &mut Vec::new(), false, &skip, &mut hits);
    }
    for (name, value) in &r.set {
        let path: Vec<String> = name.split('.').map(str::to_string).collect();
        if skip(&path) {
            continue;
        }
        let last = name.rsplit('.').next().unwrap_or(name);
        let last = last.split('[').next().unwrap_or(last);
        if let Some(effect) = insecure_setting(last, value) {
            hits.push(Hit {
                path: format!("set {name}"),
                shown: format!("set {name}={}", short(value)),
                effect,
            });
        }
        match value {
            Value::String(s) if s.trim_start().starts_with('-') => {
                let mut words = Vec::new();
                push_words(s, &mut words);
                for sw in insecure_flags(&words) {
                    hits.push(Hit {
                        path: format!("set {name}"),
                        shown: format!("set {name}={}", sw.shown),
                        effect: sw.effect,
                    });
                }
            }
            Value::Object(_) | Value::Array(_) => {
                scan_values(value, &mut vec![format!("set {name}")], false, &skip, &mut hits)
            }
            _ => {}
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    use crate::policy::Policy;

    use crate::stack::Stack;
    use crate::testkit::*;
    use serde_json::json;

    #[test]
    fn insecure_state_values() {
        let mut router = rel(
            "helmfile.yaml",
            40,
            "nvcf",
            "request-router",
            local("charts/request-router"),
        );
        router.values = json!({
            "quicInsecure": true,
            "allowInsecureRemoteWatchHttp": "true",
            "extraArgs": ["--listen-addr=0.0.0.0:50071", "--enable-dev-peer-forwarding"],
            "extraEnv": [{"name": "STARGATE_QUIC_INSECURE", "value": "1"}],
            "tls": {"enabled": false},
            "gateway": {"backendTLS": {"insecureSkipVerify": "yes"}},
            // near misses
            "grpcInsecure": false,
            "metrics": {"tls": {"enabled": false}},
            "docs": "the flag --quic-insecure is refused",
        });
        router.set = vec![
            ("workerProfile.insecureSkipVerify".into(), json!("true")),
            ("router.quicInsecure".into(), json!(false)),
        ];
        let mut inline_only = rel("pki/helmfile.yaml", 7, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        inline_only.declared_values = vec![
            json!("values/nvcf-pki.yaml"),
            json!({"workerProfile": {"insecureSkipVerify": true}}),
        ];
        let st = state(vec![router, inline_only], vec![]);
        let f = run(INSECURE_FLAG, &st, &[]);
        let shown: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 8, "{shown:#?}");
        assert!(f.iter().all(|f| f.rule == INSECURE_FLAG && f.object.is_none()));
        assert_eq!(
            f[7].source.as_ref().map(|s| (s.file.as_str(), s.line)),
            Some(("pki/helmfile.yaml", Some(7)))
        );
        insta::assert_json_snapshot!(f);
    }

    #[test]
    fn chart_fetches_without_tls_verification() {
        let mut defaults = rel(
            "helmfile.yaml",
            12,
            "nvcf",
            "a",
            repo("r", "a", "https://charts.example", false),
        );
        defaults.insecure_tls = Some("helmDefaults.insecureSkipTLSVerify: true".into());
        let mut off = rel(
            "helmfile.yaml",
            20,
            "nvcf",
            "b",
            repo("r", "b", "https://charts.example", false),
        );
        off.insecure_tls = Some("helmDefaults.args: --insecure-skip-tls-verify".into());
        off.installed = false; // not installed: not judged
        let mut skip = repository("r", "https://charts.example", false);
        skip.skip_tls_verify = true;
        // near misses: a verifying repository and a release without the setting
        let clean = rel(
            "helmfile.yaml",
            30,
            "nvcf",
            "c",
            repo("v", "c", "https://charts.example", false),
        );
        let st = state(
            vec![defaults, off, clean],
            vec![skip, repository("v", "https://charts.example", false)],
        );
        let f = run(INSECURE_FLAG, &st, &[]);
        let shown: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 2, "{shown:#?}");
        assert!(f.iter().all(|f| f.rule == "insecure-flag"));
        assert!(shown[0].contains("repository `r`") && shown[0].contains("skipTLSVerify"));
        assert!(shown[1].contains("release nvcf/a") && shown[1].contains("helmDefaults.insecureSkipTLSVerify"));
        assert_eq!(f[1].source.as_ref().and_then(|s| s.line), Some(12));
    }

    #[test]
    fn findings_point_at_the_line_in_the_right_document() {
        let yaml = "# --quic-insecure is forbidden\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n    - name: a\n      image: x:1.0.0\n      args: [--quic-insecure]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n    - name: b\n      image: x:1.0.0\n      args: [--quic-insecure]\n";
        let g = crate::testkit::graph("default", yaml);
        let p = Policy::default();
        let f = (rule(INSECURE_FLAG).check)(&crate::testkit::ctx(&g, &p));
        let lines: Vec<Option<usize>> = f.iter().map(|f| f.source.as_ref().unwrap().line).collect();
        assert_eq!(lines, [Some(9), Some(18)]);
    }

    #[test]
    fn state_pass_reports_values_and_object_pass_reports_containers() {
        let g = crate::testkit::graph("default", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n    - {name: a, image: 'x:1.0.0', args: [--quic-insecure]}\n");
        let mut router = rel(
            "helmfile.yaml",
            40,
            "nvcf",
            "request-router",
            local("charts/request-router"),
        );
        router.values = json!({"quicInsecure": true});
        let st = state(vec![router], vec![]);
        let (stack, policy) = (Stack::default(), Policy::default());
        let c = state_ctx(&g, &policy, &stack, &st, &[]);
        let mine = |f: Vec<Finding>| f.into_iter().filter(|f| f.rule == INSECURE_FLAG).collect::<Vec<_>>();
        let state_pass = mine(crate::rules::run(&c, Scope::State));
        assert_eq!(state_pass.len(), 1, "{state_pass:#?}");
        assert!(state_pass[0].object.is_none() && state_pass[0].message.contains("quicInsecure"));
        let object_pass = mine(crate::rules::run(&c, Scope::Objects));
        assert_eq!(object_pass.len(), 1, "{object_pass:#?}");
        assert!(object_pass[0].object.is_some() && object_pass[0].message.contains("--quic-insecure"));
    }

    #[test]
    fn one_switch_of_one_pod_is_one_finding() {
        let f = crate::testkit::run_fixture("insecure", "fires-insecure-flag-one-cause", RULES);
        let f: Vec<&Finding> = f.iter().filter(|f| f.rule == INSECURE_FLAG).collect();
        assert_eq!(f.len(), 1, "{f:#?}");
        let lines: Vec<Option<usize>> = f[0]
            .related
            .iter()
            .map(|r| r.source.as_ref().and_then(|s| s.line))
            .collect();
        // Containers `a` and `b`, each at its own line; the repeat in `b` is not listed twice.
        assert_eq!(lines, [Some(20), Some(23)]);
    }

    #[test]
    fn a_helm_defaults_setting_is_one_finding_at_its_line() {
        let mut releases = Vec::new();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            let mut r = rel(
                "helmfile.yaml",
                10 + 5 * i,
                "nvcf",
                name,
                repo("r", name, "https://charts.example", false),
            );
            r.insecure_tls = Some("helmDefaults.insecureSkipTLSVerify: true".into());
            r.helm_defaults_line = Some(2);
            releases.push(r);
        }
        // A release's own setting is its own finding.
        let mut own = rel(
            "helmfile.yaml",
            40,
            "nvcf",
            "d",
            repo("r", "d", "https://charts.example", false),
        );
        own.insecure_tls = Some("insecureSkipTLSVerify: true".into());
        releases.push(own);
        let f = crate::fold::fold(run(INSECURE_FLAG, &state(releases, vec![]), &[]));
        assert_eq!(f.len(), 2, "{f:#?}");
        assert_eq!(f[0].source.as_ref().and_then(|s| s.line), Some(2));
        assert!(f[0]
            .message
            .contains("`helmDefaults.insecureSkipTLSVerify: true` makes helm fetch the chart of every release"));
        assert_eq!(f[0].release, None);
        let lines: Vec<Option<usize>> = f[0]
            .related
            .iter()
            .map(|r| r.source.as_ref().and_then(|s| s.line))
            .collect();
        assert_eq!(lines, [Some(10), Some(15), Some(20)]);
        assert_eq!(f[1].release.as_deref(), Some("nvcf/d"));
    }
}
