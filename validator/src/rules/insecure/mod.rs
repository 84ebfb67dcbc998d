//! Rule family: insecure transport.
//!
//! - `insecure-flag`: a container argument, environment variable, object field or helmfile state
//!   value that turns certificate verification or TLS off.
//! - `plaintext-endpoint`: an endpoint that must speak TLS is plaintext (Vault/OpenBao servers,
//!   the OpenBao listener, the workers' gRPC dial address, worker gRPC behind a plain TCP
//!   listener, dial addresses); its findings are keyed by the server they are about (`servers`).
//!
//! Both rules have `Scope::StateAndObjects`: the object part runs on every graph (and on
//! `--manifests` input); the state part reads the helmfile state values in the state pass, which
//! also runs when rendering failed — the charts refuse insecure values at render time, so the
//! state values are where such a mistake is visible even when nothing renders.
//!
//! One file per rule (its check and unit tests) with its explain text beside it as markdown. The
//! helpers here (command-line and flag parsing, environment resolution, value walks), in `shell`
//! (scripts as simple commands, also used by `vault-token-static`) and in `switches` (truthiness,
//! insecure switch names, HCL assignments) are shared by both rules.

use super::{show_path, walk_values, Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use crate::router;
use crate::stack::{ChartRef, Release};
use serde_json::Value;

#[cfg(test)]
pub(crate) mod admission;
mod config_switches;
pub(crate) mod container_commands;
mod dial;
mod env;
mod insecure_flag;
mod plaintext_endpoint;
mod server_config;
mod servers;
use crate::shell;
mod switches;
use container_commands::{commands, unreadable};
use env::*;
use server_config::disables_tls;
use switches::*;

pub static RULES: &[Rule] = &[
    Rule {
        id: INSECURE_FLAG,
        family: "insecure transport",
        severity: Severity::Error,
        summary: "a container arg/env, script (probes and hooks too), object field or state value turns TLS or \
                  certificate verification off",
        explain: include_str!("insecure-flag.md"),
        scope: Scope::StateAndObjects,
        check: |ctx| {
            let mut out = crate::rules::unreadable_spec_patches(ctx, INSECURE_FLAG, "arguments and environment");
            out.extend(insecure_flag::insecure_flag(ctx));
            out
        },
    },
    Rule {
        id: PLAINTEXT_ENDPOINT,
        family: "insecure transport",
        severity: Severity::Error,
        summary:
            "a TLS-required endpoint is plaintext (http:// Vault/OpenBao, a listener serving plaintext beyond the \
                  pod, a dev server, gRPC dial address, TCP listener, Ingress without TLS, plaintext dial address)",
        explain: include_str!("plaintext-endpoint.md"),
        scope: Scope::StateAndObjects,
        check: plaintext_endpoint::plaintext_endpoint,
    },
];

const INSECURE_FLAG: &str = "insecure-flag";
const PLAINTEXT_ENDPOINT: &str = "plaintext-endpoint";

/// Whether a container runs its image's entrypoint with `args` only (no `command`): its first
/// argument is then a subcommand of a binary the manifest does not name.
fn args_only(c: &Value) -> bool {
    c.get("command").and_then(Value::as_array).is_none_or(|a| a.is_empty())
}

fn push_words(s: &str, out: &mut Vec<String>) {
    let t = s.trim();
    if t.contains(char::is_whitespace) {
        out.extend(
            t.split_whitespace()
                .map(|w| {
                    w.trim_matches(|c| matches!(c, '"' | '\'' | ';' | '&' | '|' | '(' | ')' | '`'))
                        .to_string()
                })
                .filter(|w| !w.is_empty()),
        );
    } else if !t.is_empty() {
        out.push(t.to_string());
    }
}

/// One flag on a command line.
#[derive(Debug)]
struct FlagUse {
    /// As written, without the value (`--quic-insecure`).
    flag: String,
    /// Normalised name (`quicinsecure`).
    name: String,
    /// `--flag=value`
    inline: Option<String>,
    /// The next token when it is not itself a flag (`--flag value`).
    next: Option<String>,
}

impl FlagUse {
    /// The flag's value: the inline one, else the next token.
    fn value(&self) -> Option<&str> {
        self.inline.as_deref().or(self.next.as_deref())
    }

    /// Whether a switch-type flag is on. `--flag=false` is off; a following `false` is not read
    /// as the value by Go's flag parsers (it becomes a positional argument), so it stays on.
    fn on(&self) -> bool {
        match &self.inline {
            Some(v) => !falsy_str(v),
            None => true,
        }
    }
}

fn flag_uses(tokens: &[String]) -> Vec<FlagUse> {
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let body = match t.strip_prefix("--").or_else(|| t.strip_prefix('-')) {
            Some(b) if b.starts_with(|c: char| c.is_ascii_alphabetic()) => b,
            _ => continue,
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let next = if inline.is_none() {
            tokens.get(i + 1).filter(|n| !n.starts_with('-')).cloned()
        } else {
            None
        };
        let flag = format!("{}{name}", &t[..t.len() - body.len()]);
        out.push(FlagUse {
            flag,
            name: norm(name),
            inline,
            next,
        });
    }
    out
}

/// An insecure switch found on a command line.
#[derive(Debug)]
struct Switch {
    /// The flag as written with its value (`--quic-insecure=true`, `-k`).
    shown: String,
    /// Normalised name (`quicinsecure`), what one cause is keyed by.
    name: String,
    effect: &'static str,
}

/// Insecure switches among flags.
fn insecure_flags(tokens: &[String]) -> Vec<Switch> {
    let mut out = Vec::new();
    for f in flag_uses(tokens) {
        let effect = if f.on() { insecure_effect(&f.name) } else { None }.or_else(|| {
            match (&f.inline, verify_switch(&f.name)) {
                (Some(v), true) if falsy_str(v) => Some("turns off TLS certificate verification"),
                _ => None,
            }
        });
        if let Some(effect) = effect {
            let shown = match (&f.inline, &f.next) {
                (Some(v), _) => format!("{}={v}", f.flag),
                (None, Some(n)) if truthy_str(n) || falsy_str(n) => format!("{} {n}", f.flag),
                _ => f.flag.clone(),
            };
            out.push(Switch {
                shown,
                name: f.name,
                effect,
            });
        }
    }
    out
}

/// curl's short options that take a value: a `k` after one of them in a cluster (`-ok`) is that
/// value, not `--insecure`.
pub(crate) const CURL_SHORT_WITH_VALUE: &str = "AbcCdDeEFHKmoPQrTuUwxXyYz";

/// The insecure switches of one simple command: its flags (not those of `echo`/`printf`, which
/// only print them), and curl's `-k` in any short-option cluster (`-fsSk`).
fn command_switches(cmd: &shell::SimpleCommand) -> Vec<Switch> {
    if cmd.prints() {
        return Vec::new();
    }
    let mut out = insecure_flags(&cmd.argv);
    for sw in &mut out {
        if let Some(e) = command_effect(cmd.name(), &sw.name) {
            sw.effect = e;
        }
    }
    if cmd.name() == "curl" {
        for w in cmd.argv.iter().skip(1) {
            let Some(cluster) = w.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
                continue;
            };
            for ch in cluster.chars() {
                if ch == 'k' {
                    out.push(Switch {
                        shown: format!("curl {w}"),
                        name: "insecure".into(),
                        effect: "turns off TLS certificate verification",
                    });
                    break;
                }
                if !ch.is_ascii_alphanumeric() || CURL_SHORT_WITH_VALUE.contains(ch) {
                    break;
                }
            }
        }
    }
    out
}

/// A finding about one container of `obj`, pointing at the line of `needle` inside that
/// container (and inside its probe or hook `place`, when given), so that the same flag in two
/// containers points at two lines.
pub(crate) fn container_finding(
    rule: &'static str,
    obj: &Object,
    c: &Value,
    place: &str,
    needle: &str,
    message: String,
) -> Finding {
    let mut f = Finding::object(rule, obj, message);
    let name = format!("name: {}", container_name(c));
    let place = place.rsplit('.').next().unwrap_or(place);
    let mut path = vec![name.as_str()];
    let place_key = format!("{place}:");
    if !place.is_empty() {
        path.push(&place_key);
    }
    path.push(needle);
    let line = obj.line_of_path(&path, |line, n| match n.strip_prefix("name: ") {
        // `name: x`, `- name: "x"`, `{name: x, …}`: the container's own name, not a prefix of it.
        Some(want) => line.match_indices("name:").any(|(i, _)| {
            let v = line[i + 5..].trim_start();
            let v = v.split([',', '}', ' ', '\t']).next().unwrap_or_default();
            v.trim_matches(|c| c == '"' || c == '\'') == want
        }),
        None => line.contains(n),
    });
    if let Some(src) = f.source.as_mut() {
        src.line = line;
    }
    f
}

fn container_name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("?")
}

/// Singular of a pod spec's container list name, for messages.
/// How a message says where a command runs: (`runs …`, `sets …`) for the command line (`""`), an
/// Argo script's `source`, or an exec place (`readinessProbe`, `lifecycle.preStop`).
fn place_words(place: &str) -> (String, String) {
    match place {
        "" => ("runs with".into(), "sets, in its command line,".into()),
        "source" => (
            "runs, in its script source,".into(),
            "sets, in its script source,".into(),
        ),
        p => (
            format!("runs, in its {p} exec command,"),
            format!("sets, in its {p} exec command,"),
        ),
    }
}

fn list_word(list: &str) -> &'static str {
    match list {
        "initContainers" => "initContainer",
        "ephemeralContainers" => "ephemeralContainer",
        "steps" | "step" => "step",
        "sidecars" | "sidecar" => "sidecar",
        "script" => "script",
        crate::pod_shape::PATCH_LABEL => "podSpecPatch container",
        _ => "container",
    }
}

/// Objects produced by the stack (policy externals excluded).
fn rendered(g: &Graph) -> impl Iterator<Item = &Object> {
    g.objects.iter().filter(|o| !o.prov.external)
}

/// The URL's host is loopback: read as every other dial is (`dial::parse_dial`, which takes an
/// unbracketed IPv6 host as Go's net/url does), else by `crate::meaning::host`.
fn is_loopback_url(url: &str) -> bool {
    match dial::parse_dial(url) {
        Some(d) => d.is_loopback(),
        None => crate::meaning::host::is_loopback(crate::meaning::host::url_host(url)),
    }
}

fn is_http(url: &str) -> bool {
    url.trim().get(..7).is_some_and(|p| p.eq_ignore_ascii_case("http://"))
}

fn is_https(url: &str) -> bool {
    url.trim().get(..8).is_some_and(|p| p.eq_ignore_ascii_case("https://"))
}

fn short(v: &Value) -> String {
    let t = scalar_text(v);
    if t.chars().count() > 60 {
        format!("{}…", t.chars().take(60).collect::<String>())
    } else {
        t
    }
}

/// A release's values as the state gives them: the merged values helmfile computed or, when it
/// could not, the inline `values:` maps merged in order (values files are not read here).
fn effective_values(r: &Release) -> Value {
    if !r.values.is_null() {
        return r.values.clone();
    }
    let inline: Vec<Value> = r.declared_values.iter().filter(|v| v.is_object()).cloned().collect();
    if inline.is_empty() {
        return Value::Null;
    }
    crate::stack::load::merged_values(Some(&Value::Array(inline)))
}

/// The upstream OpenBao (or HashiCorp Vault) server chart.
fn is_openbao(r: &Release) -> bool {
    let chart = match &r.chart_ref {
        ChartRef::Repo { chart, .. } => chart.as_str(),
        ChartRef::Oci { url } => url.rsplit('/').next().unwrap_or_default(),
        ChartRef::Other { raw } => raw.rsplit('/').next().unwrap_or_default(),
        ChartRef::Local { .. } => return false,
    };
    let chart = chart.split(':').next().unwrap_or(chart);
    let chart = chart
        .strip_suffix(".tgz")
        .map(|c| c.rsplit_once('-').map(|(n, _)| n).unwrap_or(c))
        .unwrap_or(chart);
    chart == "openbao" || chart == "vault"
}

#[cfg(test)]
mod config_tests;
#[cfg(test)]
mod dial_tests;
#[cfg(test)]
mod mod_tests;
#[cfg(test)]
mod server_tests;
#[cfg(test)]
mod source_tests;
#[cfg(test)]
mod value_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::render::ReleaseStatus;
    use crate::stack::Stack;
    use crate::testkit::*;

    pub(super) fn rule(id: &str) -> &'static Rule {
        RULES.iter().find(|r| r.id == id).unwrap()
    }

    pub(super) fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn fixtures_fire_and_stay_silent() {
        for run in check_fixtures("insecure", RULES, Silent::Family) {
            insta::assert_json_snapshot!(run.stem, run.findings);
        }
    }

    #[test]
    fn flag_spellings() {
        let on = |args: &[&str]| {
            insecure_flags(&words(args))
                .into_iter()
                .map(|s| s.shown)
                .collect::<Vec<_>>()
        };
        assert_eq!(on(&["--quic-insecure"]), ["--quic-insecure"]);
        assert_eq!(on(&["--quic-insecure=true"]), ["--quic-insecure=true"]);
        assert_eq!(on(&["--quic-insecure=TRUE"]), ["--quic-insecure=TRUE"]);
        assert_eq!(on(&["--quic-insecure", "true"]), ["--quic-insecure true"]);
        assert_eq!(
            on(&["--quic-insecure", "false"]),
            ["--quic-insecure false"],
            "a separate false is a positional argument"
        );
        assert_eq!(on(&["-insecure"]), ["-insecure"]);
        assert_eq!(on(&["--tls-verify=false"]), ["--tls-verify=false"]);
        assert!(on(&[
            "--quic-insecure=false",
            "--insecure-skip-tls-verify=0",
            "--insecure-port=0",
            "--tls-verify=true",
            "--",
            "-",
            "-5"
        ])
        .is_empty());
        // Per simple command: `echo`/`printf` only print their words; curl's `-k` in a cluster,
        // but not as another option's value (`-ok` writes to a file named `k`).
        let switches = |argv: &[&str]| {
            shell::argv_commands(&words(argv))
                .iter()
                .flat_map(command_switches)
                .map(|s| s.shown)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            switches(&["sh", "-c", "exec router --enable-dev-peer-forwarding; sleep 1"]),
            ["--enable-dev-peer-forwarding"]
        );
        assert_eq!(
            switches(&["sh", "-c", "curl -fsSk https://a; curl -k https://b; curl --insecure https://c; wget --no-check-certificate https://d"]),
            ["curl -fsSk", "curl -k", "--insecure", "--no-check-certificate"]
        );
        assert!(switches(&[
            "sh",
            "-c",
            "echo do not use -insecure here; printf '%s' --quic-insecure; curl -ok https://a; curl -fsSL https://b; sort -k 2 f"
        ])
        .is_empty());
    }

    pub(super) fn run(rule_id: &str, st: &crate::stack::EnvState, status: &[ReleaseStatus]) -> Vec<Finding> {
        run_state(rule(rule_id), st, &Stack::default(), &Policy::default(), status)
    }
}
