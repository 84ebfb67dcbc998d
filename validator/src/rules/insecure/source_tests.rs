//! Generated: one container model, judged by value wherever the value comes from. Sources (a
//! literal, a reference to an earlier variable, a rendered ConfigMap by key and through envFrom
//! with a prefix, a rendered Secret by key from `stringData` and from base64 `data`, through
//! envFrom with a prefix, the downward API) × places (the variable as a switch, a whole `$(VAR)`
//! argument, a switch's `$(VAR)` value, a `sh -c` script's `$VAR`, a probe's exec command) × an
//! insecure value and a safe one: each insecure case is an insecure-flag finding, each safe one
//! none, and no message or help shows a Secret's value. A source the render does not hold (a
//! Secret or ConfigMap that is not rendered) is a finding whatever it may hold.

use super::tests::rule;
use super::*;
use crate::testkit::*;
use base64::Engine as _;
use serde_json::{json, Value};

/// How the value reaches variable `var`: (objects to render beside the workload, the container's
/// `env`, its `envFrom`, the pod template's annotations, whether it is a Secret's value).
struct Source {
    objects: Vec<Value>,
    env: Value,
    env_from: Value,
    annotations: Value,
    secret: bool,
}

const SOURCES: &[&str] = &[
    "literal",
    "earlier variable",
    "ConfigMap key",
    "ConfigMap envFrom prefix",
    "Secret stringData key",
    "Secret base64 data key",
    "Secret envFrom prefix",
    "downward API annotation",
];

fn source(kind: &str, var: &str, value: &str) -> Source {
    let meta = |name: &str| json!({"name": name, "namespace": "nvcf"});
    let b64 = base64::engine::general_purpose::STANDARD.encode(value);
    let mut s = Source {
        objects: Vec::new(),
        env: json!([]),
        env_from: json!([]),
        annotations: json!({}),
        secret: false,
    };
    match kind {
        "literal" => s.env = json!([{"name": var, "value": value}]),
        "earlier variable" => {
            s.env = json!([{"name": "EARLIER", "value": value}, {"name": var, "value": "$(EARLIER)"}]);
        }
        "ConfigMap key" => {
            s.objects
                .push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("opts"), "data": {"k": value}}));
            s.env = json!([{"name": var, "valueFrom": {"configMapKeyRef": {"name": "opts", "key": "k"}}}]);
        }
        "ConfigMap envFrom prefix" => {
            let key = var.strip_prefix("APP_").expect("prefixed");
            s.objects
                .push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("opts"), "data": {key: value}}));
            s.env_from = json!([{"prefix": "APP_", "configMapRef": {"name": "opts"}}]);
        }
        "Secret stringData key" => {
            s.objects.push(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("opts"), "stringData": {"k": value}}),
            );
            s.env = json!([{"name": var, "valueFrom": {"secretKeyRef": {"name": "opts", "key": "k"}}}]);
            s.secret = true;
        }
        "Secret base64 data key" => {
            s.objects
                .push(json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("opts"), "data": {"k": b64}}));
            s.env = json!([{"name": var, "valueFrom": {"secretKeyRef": {"name": "opts", "key": "k"}}}]);
            s.secret = true;
        }
        "Secret envFrom prefix" => {
            let key = var.strip_prefix("APP_").expect("prefixed");
            s.objects
                .push(json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("opts"), "data": {key: b64}}));
            s.env_from = json!([{"prefix": "APP_", "secretRef": {"name": "opts"}}]);
            s.secret = true;
        }
        "downward API annotation" => {
            s.annotations = json!({"example.com/opt": value});
            s.env = json!([{"name": var, "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['example.com/opt']"}}}]);
        }
        // Not rendered: the gate cannot read it.
        "Secret not rendered" => {
            s.env = json!([{"name": var, "valueFrom": {"secretKeyRef": {"name": "elsewhere", "key": "k"}}}]);
        }
        "ConfigMap not rendered" => {
            s.env = json!([{"name": var, "valueFrom": {"configMapKeyRef": {"name": "elsewhere", "key": "k"}}}]);
        }
        other => panic!("unknown source {other}"),
    }
    s
}

/// Where the variable is used: (place, the variable's name, the container's command and args,
/// its readiness probe's exec command, insecure value, safe value).
type Place = (&'static str, &'static str, Value, Value, &'static str, &'static str);

fn places() -> Vec<Place> {
    vec![
        (
            "switch variable",
            "APP_SKIP_TLS_VERIFY",
            json!({"command": ["tool"]}),
            Value::Null,
            "true",
            "false",
        ),
        (
            "whole argument",
            "APP_EXTRA",
            json!({"command": ["tool"], "args": ["serve", "$(APP_EXTRA)"]}),
            Value::Null,
            "--insecure-skip-tls-verify",
            "--log-level=info",
        ),
        (
            "switch value",
            "APP_VERIFY",
            json!({"command": ["tool"], "args": ["--tls-verify=$(APP_VERIFY)"]}),
            Value::Null,
            "false",
            "true",
        ),
        (
            "sh -c script",
            "APP_CURL",
            json!({"command": ["sh", "-c", "exec curl $APP_CURL https://api.corp.example.net/health"]}),
            Value::Null,
            "-fsSk",
            "-fsS",
        ),
        (
            "probe exec",
            "APP_PROBE",
            json!({"command": ["tool"]}),
            json!(["bao", "status", "$(APP_PROBE)"]),
            "-tls-skip-verify",
            "-format=json",
        ),
    ]
}

fn workload(s: &Source, cmd: &Value, probe: &Value) -> String {
    let mut c = json!({"name": "c", "image": "quay.io/example/tool:1.2.3", "env": s.env, "envFrom": s.env_from});
    for (k, v) in cmd.as_object().expect("an object") {
        c[k] = v.clone();
    }
    if !probe.is_null() {
        c["readinessProbe"] = json!({"exec": {"command": probe}});
    }
    let w = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "nvcf"},
        "spec": {"selector": {"matchLabels": {"a": "w"}}, "template": {
            "metadata": {"labels": {"a": "w"}, "annotations": s.annotations}, "spec": {"containers": [c]}}}});
    let mut docs: Vec<String> = s.objects.iter().map(|o| serde_json::to_string(o).unwrap()).collect();
    docs.push(serde_json::to_string(&w).unwrap());
    docs.join("\n---\n")
}

fn run(yaml: &str) -> Vec<Finding> {
    let g = graph("e", yaml);
    let policy = crate::policy::Policy::default();
    (rule(INSECURE_FLAG).check)(&ctx(&g, &policy))
        .into_iter()
        .filter(|f| f.object.as_ref().is_some_and(|o| o.kind == "Deployment"))
        .collect()
}

#[test]
fn every_source_in_every_place_is_judged_by_its_value() {
    let mut checked = 0;
    for kind in SOURCES {
        for (place, var, cmd, probe, bad, good) in places() {
            for (value, fires) in [(bad, true), (good, false)] {
                let s = source(kind, var, value);
                let found = run(&workload(&s, &cmd, &probe));
                let case = format!("{var}={value} from {kind}, used as {place}");
                if fires {
                    assert!(!found.is_empty(), "{case}: not reported");
                } else {
                    assert!(found.is_empty(), "{case}: {found:#?}");
                }
                if s.secret {
                    for f in &found {
                        let help = f.help.as_deref().unwrap_or_default();
                        assert!(
                            !f.message.contains(value) && !help.contains(value),
                            "{case}: a Secret's value is shown: {} / {help}",
                            f.message
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, SOURCES.len() * 5 * 2);
}

#[test]
fn a_source_the_render_does_not_hold_is_a_finding_whatever_it_holds() {
    for kind in ["Secret not rendered", "ConfigMap not rendered"] {
        for (place, var, cmd, probe, ..) in places() {
            // A script's `$VAR` and a probe's exec element `$(VAR)` from such a source fire like
            // the command line's `$(VAR)` (`unreadable`).
            let s = source(kind, var, "");
            let found = run(&workload(&s, &cmd, &probe));
            assert!(
                found.iter().any(|f| f.message.contains("cannot read")),
                "{var} from {kind}, used as {place}: {found:#?}"
            );
        }
    }
}

#[test]
fn a_secret_is_read_as_the_kubelet_reads_it_and_never_shown() {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let yaml = serde_json::to_string(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "namespace": "nvcf"},
        "data": {"both": b64("from-data"), "only": b64("decoded"), "bad": "not base64!"},
        "stringData": {"both": "from-stringData"}}))
    .unwrap();
    let g = graph("e", &yaml);
    let data = router::secret_data(&g.objects[0]);
    assert_eq!(data["both"], Ok("from-stringData".to_string()), "stringData wins");
    assert_eq!(data["only"], Ok("decoded".to_string()));
    assert!(
        data["bad"].as_ref().is_err_and(|why| !why.contains("not base64!")),
        "the reason, not the value"
    );
    let secrets = vec![
        ("1".to_string(), "value of S".to_string()),
        ("s3cr3t-token".to_string(), "value of T".to_string()),
    ];
    let mut sorted = secrets.clone();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
    assert_eq!(
        router::hide_secrets("--on=1 port 8081 x1 `s3cr3t-token` s3cr3t-tokens", &sorted),
        "--on=<value of S> port 8081 x1 `<value of T>` s3cr3t-tokens",
        "a value is hidden where it stands as a whole token"
    );
    // A label never becomes a value's match.
    let tricky = vec![
        ("value of".to_string(), "value of X".to_string()),
        ("of".to_string(), "value of Y".to_string()),
    ];
    assert_eq!(
        router::hide_secrets("a value of b of", &tricky),
        "a <value of X> b <value of Y>"
    );
}

/// A script word is unknown only where the variable comes from a source the gate cannot read: one
/// the container does not set (`$HOME`, the image's) stays silent, one the script sets itself is
/// read, and a table switch whose value is such a variable fires.
#[test]
fn a_script_variable_from_an_unread_source_is_a_finding_and_others_are_not() {
    let secret_env = json!([{"name": "OPTS", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k"}}}]);
    let with = |script: &str| {
        let c = json!({"name": "c", "image": "quay.io/example/tool:1.2.3", "env": secret_env,
            "command": ["sh", "-c", script]});
        let w = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "nvcf"},
            "spec": {"selector": {"matchLabels": {"a": "w"}}, "template": {
                "metadata": {"labels": {"a": "w"}}, "spec": {"containers": [c]}}}});
        run(&serde_json::to_string(&w).unwrap())
    };
    for script in [
        "exec curl $OPTS https://a.corp.example.net",
        "exec curl ${OPTS} https://a.corp.example.net",
        "exec tool --tls-verify=$OPTS",
        "X=$OPTS; exec curl $X https://a.corp.example.net",
        // Double quotes expand (one field): still the unread variable.
        "exec curl \"$OPTS\" https://a.corp.example.net",
    ] {
        let found = with(script);
        assert!(
            found
                .iter()
                .any(|f| f.message.contains("cannot read") && f.message.contains("OPTS")),
            "{script}: {found:#?}"
        );
    }
    for script in [
        "exec curl $HOME https://a.corp.example.net",
        "OPTS=-fsS; exec curl $OPTS https://a.corp.example.net",
        // Single quotes and a backslash make `$OPTS` literal text: no variable is read.
        "exec curl '$OPTS' https://a.corp.example.net",
        "exec curl \\$OPTS https://a.corp.example.net",
        // `key=$OPTS` is no switch: only a switch's value (`--x=$OPTS`) is one.
        "exec tool key=$OPTS",
    ] {
        let found = with(script);
        assert!(
            !found.iter().any(|f| f.message.contains("cannot read")),
            "{script}: {found:#?}"
        );
    }
    // Each word once: the same word twice is one finding, two words are two.
    let unread = |script: &str| {
        with(script)
            .iter()
            .filter(|f| f.message.contains("cannot read"))
            .count()
    };
    assert_eq!(unread("exec curl $OPTS $OPTS https://a.corp.example.net"), 1);
    assert_eq!(
        unread("exec tool --tls-verify=$OPTS --insecure-skip-tls-verify=$OPTS"),
        2
    );
}

/// Every exec place of a container (`EXEC_PLACES`: each probe, each lifecycle hook) is read with
/// the container's model: a whole `$(VAR)` from a source the gate cannot read is a finding there
/// as on the command line, a literal switch fires, and a literal safe value does not.
#[test]
fn every_exec_place_is_read_and_an_unread_reference_there_is_a_finding() {
    let absent = json!({"name": "OPTS", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k"}}});
    let literal = |v: &str| json!({"name": "OPTS", "value": v});
    for (label, ptr) in super::container_commands::EXEC_PLACES {
        for (env, fires, says) in [
            (absent.clone(), true, "cannot read"),
            (literal("--insecure"), true, "`--insecure`"),
            (literal("--log-level=info"), false, ""),
        ] {
            let mut c = json!({"name": "c", "image": "quay.io/example/tool:1.2.3", "command": ["tool"], "env": [env]});
            let mut at = &mut c;
            for key in ptr.trim_start_matches('/').split('/') {
                at = &mut at[key];
            }
            *at = json!(["tool", "check", "$(OPTS)"]);
            let w = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "nvcf"},
                "spec": {"selector": {"matchLabels": {"a": "w"}}, "template": {
                    "metadata": {"labels": {"a": "w"}}, "spec": {"containers": [c]}}}});
            let found = run(&serde_json::to_string(&w).unwrap());
            let place = format!("in its {label} exec command");
            if fires {
                assert!(
                    found
                        .iter()
                        .any(|f| f.message.contains(says) && f.message.contains(&place)),
                    "{label}, {says}: {found:#?}"
                );
            } else {
                assert!(found.is_empty(), "{label}: {found:#?}");
            }
        }
    }
}
