//! The LLM request router as the rules see it: its command-line contract (flag names), one parse
//! of a container's flags, and discovery of the workload containers that run it. The PKI rules
//! (SANs, TLS paths, reloadable mounts) and the worker-route rule read the router through this
//! module, so a flag spelled in a `sh -c` script, as `--flag value`, as Go's `-flag=value` or
//! through a `$(VAR)` from the container's env means the same to all of them.
//!
//! `insecure-flag` and `plaintext-endpoint` keep their own, deliberately broader command-line
//! reading (`-flag`, normalised names, shell punctuation stripped, non-string scalars): they hunt
//! for any client's insecure switch, not for the router's contract. They share
//! [`command_line`] (which elements form a command line, in order) and the flag names.

use crate::graph::{Graph, Object};
use serde_json::Value;

/// gRPC listen address (workers, clients).
pub const LISTEN_ADDR: &str = "--listen-addr";
/// QUIC reverse-tunnel listen address.
pub const REVERSE_TUNNEL_LISTEN_ADDR: &str = "--reverse-tunnel-listen-addr";
/// How the router reaches its backends.
pub const BACKEND_CONNECTIVITY: &str = "--backend-connectivity";
/// Per-pod hostname the router advertises (`{pod_name}` expands to the pod's name).
pub const ADVERTISED_HOSTNAME_TEMPLATE: &str = "--advertised-hostname-template";
/// gRPC address workers dial to register.
pub const GRPC_PYLON_DIAL_ADDR: &str = "--grpc-pylon-dial-addr";
/// QUIC reverse-tunnel address workers dial.
pub const REVERSE_TUNNEL_PYLON_DIAL_ADDR: &str = "--reverse-tunnel-pylon-dial-addr";
/// Serving certificate file.
pub const TLS_CERT_PATH: &str = "--tls-cert-path";
/// Serving key file.
pub const TLS_KEY_PATH: &str = "--tls-key-path";

/// Flags only the router takes: a container passing any of them is a router container.
/// (`--listen-addr` and `--backend-connectivity` are too generic to identify it.)
pub const IDENTIFYING_FLAGS: &[&str] = &[
    ADVERTISED_HOSTNAME_TEMPLATE,
    GRPC_PYLON_DIAL_ADDR,
    REVERSE_TUNNEL_PYLON_DIAL_ADDR,
    TLS_CERT_PATH,
    TLS_KEY_PATH,
    REVERSE_TUNNEL_LISTEN_ADDR,
];

/// What `{pod_name}` in the router's templates stands for: the pod's own name. An env entry
/// from the downward API `metadata.name` reads as this placeholder, so `$(POD_NAME)` in a flag
/// means "this pod" exactly as the router's own `{pod_name}` does.
pub const POD_NAME_PLACEHOLDER: &str = "{pod_name}";

/// The environment variable the router reads its pod name from (upstream `--pod-name`,
/// `env = "POD_NAME"`): `{pod_name}` in `--advertised-hostname-template` expands to it.
pub const POD_NAME_ENV: &str = "POD_NAME";

/// The router binary's gRPC listen port when `--listen-addr` is not given.
pub const DEFAULT_GRPC_PORT: u16 = 50071;

/// The port of a listen address (`0.0.0.0:50071`, `:50071`, `[::]:50071`).
pub fn listen_port(addr: &str) -> Option<u16> {
    addr.trim().rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

/// The gRPC ports the graph's router containers listen on (each one's `--listen-addr`, or the
/// binary's default); the default alone when the graph runs no router (`--manifests` input that
/// holds only Services and routes).
pub fn grpc_listen_ports(routers: &[RouterWorkload<'_>]) -> Vec<u16> {
    let mut out: Vec<u16> = routers
        .iter()
        .map(|r| r.flag(LISTEN_ADDR).and_then(listen_port).unwrap_or(DEFAULT_GRPC_PORT))
        .collect();
    if out.is_empty() {
        out.push(DEFAULT_GRPC_PORT);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The elements of a container's command line, in order: `command`, then `args`.
pub fn command_line(container: &Value) -> impl Iterator<Item = &Value> {
    ["command", "args"]
        .into_iter()
        .flat_map(|k| container.get(k).and_then(Value::as_array).into_iter().flatten())
}

/// An environment variable's value as the kubelet would give it, if the gate can know it.
#[derive(Debug, Clone)]
pub enum EnvValue {
    Known(String),
    /// From a Secret the render holds: its value, which judging may use but no message, report or
    /// snapshot may ever show, and where it comes from (`Secret ns/name key k`), which they may.
    Secret {
        value: String,
        from: String,
    },
    /// Why not (a Secret or ConfigMap that is not rendered, a missing key, a field or resource
    /// reference known only in the running pod).
    Unknown(String),
}

/// One variable of a container's environment, in the order the kubelet sets them.
#[derive(Debug, Clone)]
pub struct EnvEntry {
    pub name: String,
    pub value: EnvValue,
    /// The ConfigMap, Secret or downward API field it comes from (None: a literal `value`).
    pub from: Option<String>,
    /// What to look for in the template to point at the line (the variable, or the `envFrom`
    /// source's name).
    pub needle: String,
}

/// The keys of a rendered Secret as the kubelet reads them: `stringData` (which the API server
/// merges into `data`, winning over a `data` key of the same name) and `data` decoded from
/// base64 (as the API server requires it). A `data` value that is not base64 is `Err` (the
/// reason, never the value). Bytes that are not UTF-8 are read lossily (Go hands them on as they
/// are; no switch spelling has them).
pub fn secret_data(secret: &Object) -> std::collections::BTreeMap<String, Result<String, String>> {
    use base64::Engine as _;
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in secret.at("/data").and_then(Value::as_object).into_iter().flatten() {
        let text = v.as_str().unwrap_or_default();
        let clean: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let read = match base64::engine::general_purpose::STANDARD.decode(clean) {
            Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Err(_) => Err(format!(
                "its `data` key `{k}` is not base64, so the API server would refuse it"
            )),
        };
        out.insert(k.clone(), read);
    }
    for (k, v) in secret
        .at("/stringData")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        out.insert(k.clone(), Ok(text));
    }
    out
}

/// The pod a container runs in, as far as the downward API needs it: its namespace and, when the
/// holder is a workload whose pod template sits where Kubernetes keeps it, that template (labels,
/// annotations, `spec.serviceAccountName`). A bare namespace (`"nvcf".into()`) knows no template:
/// every `fieldRef` but name and namespace is then unknown.
#[derive(Debug, Clone, Copy)]
pub struct Pod<'a> {
    pub ns: &'a str,
    pub template: Option<&'a Value>,
    /// The holder's kind (a StatefulSet's controller adds the pod-name label to each pod).
    pub kind: &'a str,
}

impl<'a> From<&'a str> for Pod<'a> {
    fn from(ns: &'a str) -> Pod<'a> {
        Pod {
            ns,
            template: None,
            kind: "",
        }
    }
}

impl<'a> Pod<'a> {
    /// The pod of a workload object: its namespace and pod template (built-in kinds; a bare Pod
    /// is its own template).
    pub fn of(obj: &'a Object) -> Pod<'a> {
        let template = match obj.kind.as_str() {
            "Pod" => Some(&obj.body),
            "CronJob" => obj.at("/spec/jobTemplate/spec/template"),
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "ReplicationController" => {
                obj.at("/spec/template")
            }
            _ => None,
        };
        Pod {
            ns: obj.namespace.as_deref().unwrap_or(""),
            template,
            kind: obj.kind.as_str(),
        }
    }

    /// The pod container `c` of `obj` runs in: [`Pod::of`], or for another kind, the pod template
    /// (`{metadata, spec}`) around the pod spec that holds `c` (an Argo Rollout's, one of an
    /// object's several).
    pub fn of_container(obj: &'a Object, c: &Value) -> Pod<'a> {
        let mut pod = Pod::of(obj);
        if pod.template.is_none() {
            if let Some(spec) = obj.pod_spec_of(c) {
                pod.template = obj
                    .found_pod_specs()
                    .find(|(_, v)| std::ptr::eq(*v, spec))
                    .and_then(|(ptr, _)| ptr.strip_suffix("/spec"))
                    .and_then(|t| obj.at(t))
                    .filter(|t| t.get("metadata").is_some());
            }
        }
        pod
    }

    /// The value the downward API gives `fieldPath` (`metadata.labels['app']`,
    /// `metadata.annotations['x']`, `spec.serviceAccountName`), when the render decides it.
    pub fn field(&self, path: &str) -> Option<String> {
        let t = self.template?;
        let keyed = |prefix: &str| {
            path.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix("']").or_else(|| r.strip_suffix("\"]")))
                .and_then(|r| r.strip_prefix('\'').or_else(|| r.strip_prefix('"')))
        };
        if let Some(k) = keyed("metadata.labels[") {
            if self.kind == "StatefulSet" && k == STATEFULSET_POD_NAME_LABEL {
                return Some(POD_NAME_PLACEHOLDER.to_string());
            }
            return t
                .pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(k) = keyed("metadata.annotations[") {
            return t
                .pointer("/metadata/annotations")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        match path {
            "spec.serviceAccountName" => Some(
                t.pointer("/spec/serviceAccountName")
                    .and_then(Value::as_str)
                    .unwrap_or("default")
                    .to_string(),
            ),
            _ => None,
        }
    }
}

/// The container's environment as the kubelet builds it (`envFrom` sources in order, then `env`
/// entries in order, each later one overriding, `env` values expanded with what came before).
/// `g` gives the rendered ConfigMaps and Secrets (None: none are known); the pod gives the
/// namespace they are looked up in and the downward API's fields.
struct Env {
    vars: std::collections::HashMap<String, EnvValue>,
    /// Every variable set, in order (a name set twice appears twice; `vars` holds the last).
    entries: Vec<EnvEntry>,
    /// `envFrom` sources whose keys the gate cannot list (a Secret or ConfigMap not rendered): any
    /// variable not otherwise defined may come from one of them.
    opaque: Vec<String>,
}

/// One `$(VAR)` expansion: the text (references the gate cannot read kept as written), those
/// references (name, why), and the Secret values substituted (value, where from).
struct Expansion {
    text: String,
    unknown: Vec<(String, String)>,
    secrets: Vec<(String, String)>,
}

fn pointer_key(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

fn optional(r: &Value) -> bool {
    r.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

impl Env {
    fn set(&mut self, name: String, value: EnvValue, from: Option<String>, needle: &str) {
        self.vars.insert(name.clone(), value.clone());
        self.entries.push(EnvEntry {
            name,
            value,
            from,
            needle: needle.to_string(),
        });
    }

    fn of(g: Option<&Graph>, pod: Pod<'_>, container: &Value) -> Env {
        let ns = pod.ns;
        let mut env = Env {
            vars: Default::default(),
            entries: Vec::new(),
            opaque: Vec::new(),
        };
        let cm = |name: &str| g.and_then(|g| g.get("", "ConfigMap", Some(ns), name));
        let secret = |name: &str| g.and_then(|g| g.get("", "Secret", Some(ns), name)).map(secret_data);
        for src in container.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
            let prefix = src.get("prefix").and_then(Value::as_str).unwrap_or("");
            if let Some(name) = src.pointer("/configMapRef/name").and_then(Value::as_str) {
                match cm(name).and_then(|o| o.at("/data")).and_then(Value::as_object) {
                    Some(data) => {
                        for (k, v) in data {
                            let v = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
                            let from = format!("ConfigMap {name}");
                            env.set(format!("{prefix}{k}"), EnvValue::Known(v), Some(from), name);
                        }
                    }
                    None => env
                        .opaque
                        .push(format!("ConfigMap {ns}/{name} (envFrom), which is not rendered")),
                }
            } else if let Some(name) = src.pointer("/secretRef/name").and_then(Value::as_str) {
                match secret(name) {
                    Some(data) => {
                        for (k, v) in data {
                            let from = format!("Secret {ns}/{name} key `{k}` (envFrom)");
                            let value = match v {
                                Ok(value) => EnvValue::Secret {
                                    value,
                                    from: from.clone(),
                                },
                                Err(why) => EnvValue::Unknown(format!("it comes from Secret {ns}/{name}: {why}")),
                            };
                            env.set(format!("{prefix}{k}"), value, Some(from), name);
                        }
                    }
                    None => env
                        .opaque
                        .push(format!("Secret {ns}/{name} (envFrom), which is not rendered")),
                }
            }
        }
        for e in container.get("env").and_then(Value::as_array).into_iter().flatten() {
            let Some(name) = e.get("name").and_then(Value::as_str) else {
                continue;
            };
            let mut from = None;
            let value = if let Some(v) = e.get("value") {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                let x = env.expand(&text, true);
                // A reference to a variable nothing defines is passed on as written.
                let unknown = x
                    .unknown
                    .iter()
                    .find(|(var, _)| env.vars.contains_key(var) || !env.opaque.is_empty());
                match (unknown, x.secrets.is_empty()) {
                    (Some((var, why)), _) => EnvValue::Unknown(format!("it refers to $({var}): {why}")),
                    (None, true) => EnvValue::Known(x.text),
                    (None, false) => {
                        let froms: Vec<String> = x.secrets.into_iter().map(|(_, f)| f).collect();
                        from = Some(froms.join(", "));
                        EnvValue::Secret {
                            value: x.text,
                            from: froms.join(", "),
                        }
                    }
                }
            } else if let Some(r) = e.pointer("/valueFrom/configMapKeyRef") {
                let cm_name = r.get("name").and_then(Value::as_str).unwrap_or_default();
                let key = r.get("key").and_then(Value::as_str).unwrap_or_default();
                from = Some(format!("ConfigMap {cm_name}"));
                match cm(cm_name) {
                    Some(o) => match o.at(&format!("/data/{}", pointer_key(key))) {
                        Some(Value::String(v)) => EnvValue::Known(v.clone()),
                        Some(v) => EnvValue::Known(v.to_string()),
                        // The kubelet leaves an optional reference to a missing key unset.
                        None if optional(r) => continue,
                        None => EnvValue::Unknown(format!(
                            "ConfigMap {ns}/{cm_name} has no key `{key}` (the kubelet would not start the container)"
                        )),
                    },
                    None => EnvValue::Unknown(format!("it comes from ConfigMap {ns}/{cm_name}, which is not rendered")),
                }
            } else if let Some(r) = e.pointer("/valueFrom/secretKeyRef") {
                let s_name = r.get("name").and_then(Value::as_str).unwrap_or_default();
                let key = r.get("key").and_then(Value::as_str).unwrap_or_default();
                let src = format!("Secret {ns}/{s_name} key `{key}`");
                from = Some(src.clone());
                match secret(s_name) {
                    Some(data) => match data.get(key) {
                        Some(Ok(value)) => EnvValue::Secret {
                            value: value.clone(),
                            from: src,
                        },
                        Some(Err(why)) => EnvValue::Unknown(format!("it comes from Secret {ns}/{s_name}: {why}")),
                        None if optional(r) => continue,
                        None => EnvValue::Unknown(format!(
                            "Secret {ns}/{s_name} has no key `{key}` (the kubelet would not start the container)"
                        )),
                    },
                    None => EnvValue::Unknown(format!("it comes from Secret {ns}/{s_name}, which is not rendered")),
                }
            } else if let Some(field) = e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str) {
                from = Some(format!("the pod's `{field}`"));
                match field {
                    // The pod's own name, which is what the router's `{pod_name}` stands for: a
                    // per-pod value the rules expand per replica, as they expand the template.
                    "metadata.name" => EnvValue::Known(POD_NAME_PLACEHOLDER.to_string()),
                    "metadata.namespace" => EnvValue::Known(ns.to_string()),
                    // Labels, annotations and the service account from the pod template.
                    f => match pod.field(f) {
                        Some(v) => EnvValue::Known(v),
                        None if pod.template.is_none() => EnvValue::Unknown(
                            "it comes from a field or resource reference, known only in the running pod".into(),
                        ),
                        None => EnvValue::Unknown(format!(
                            "it comes from the downward API field `{f}`, which the pod template does not decide (known only in the running pod)"
                        )),
                    },
                }
            } else if e.pointer("/valueFrom/fieldRef").is_some() || e.pointer("/valueFrom/resourceFieldRef").is_some() {
                EnvValue::Unknown("it comes from a field or resource reference, known only in the running pod".into())
            } else if e.get("valueFrom").is_some() {
                EnvValue::Unknown("it comes from a source the gate does not read".into())
            } else {
                EnvValue::Known(String::new())
            };
            env.set(name.to_string(), value, from, name);
        }
        env
    }

    /// Kubernetes' `$(VAR)` expansion of `text` (`$$` is a literal `$`; a reference to an
    /// undefined variable stays as written). The references whose value is unknown (kept as
    /// written) come back with the reason, as do references to undefined variables. With
    /// `secrets`, a variable from a rendered Secret is substituted (and listed in `secrets`);
    /// without, it is unknown like any value the reader may not use.
    fn expand(&self, text: &str, secrets: bool) -> Expansion {
        let mut out = String::with_capacity(text.len());
        let mut unknown = Vec::new();
        let mut used = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(a) = after.strip_prefix('$') {
                out.push('$');
                rest = a;
            } else if let Some(body) = after.strip_prefix('(') {
                match body.find(')') {
                    Some(j) => {
                        let name = &body[..j];
                        match self.vars.get(name) {
                            Some(EnvValue::Known(v)) => out.push_str(v),
                            Some(EnvValue::Secret { value, from }) if secrets => {
                                out.push_str(value);
                                used.push((value.clone(), from.clone()));
                            }
                            Some(EnvValue::Secret { from, .. }) => {
                                out.push_str(&format!("$({name})"));
                                unknown.push((name.to_string(), format!("it comes from {from}")));
                            }
                            Some(EnvValue::Unknown(why)) => {
                                out.push_str(&format!("$({name})"));
                                unknown.push((name.to_string(), why.clone()));
                            }
                            None => {
                                out.push_str(&format!("$({name})"));
                                let why = match self.opaque.first() {
                                    Some(src) => format!("it may come from {src}"),
                                    None => {
                                        "the container's env does not define it (Kubernetes passes it on as written)"
                                            .into()
                                    }
                                };
                                unknown.push((name.to_string(), why));
                            }
                        }
                        rest = &body[j + 1..];
                    }
                    None => {
                        out.push_str("$(");
                        rest = body;
                    }
                }
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        Expansion {
            text: out,
            unknown,
            secrets: used,
        }
    }
}

/// A container's flags as the router reads them, with what the gate could not read.
#[derive(Debug, Default, Clone)]
pub struct Flags {
    /// `(--name, value)`, in order, names in their `--` form whatever the dashes written; `None`
    /// for a flag without a value.
    pub flags: Vec<(String, Option<String>)>,
    /// Arguments or values the gate could not determine: `(flag, text, why)`, with `flag` None
    /// when the whole argument is unknown (it may be any flag).
    pub unknown: Vec<(Option<String>, String, String)>,
    /// Flags written after the argument where Go's flag parsing stops (`--`, the first
    /// non-flag): `(--name, where it stopped)`. The router does not read them as flags.
    pub ignored: Vec<(String, String)>,
}

/// A word of the command line: its text, the `$(VAR)` references in it the gate could not read
/// (name, why), and whether it came from a shell script (read leniently).
type Word = (String, Vec<(String, String)>, bool);

/// The flags of a container from `command` + `args` after Kubernetes' `$(VAR)` expansion from its
/// env (ConfigMaps from `g`, in namespace `ns`), read as Go's `flag` package reads them: `-f`,
/// `--f`, `-f=v`, `--f=v`, `-f v` (the router's flags all take a value, so the next argument is
/// the value whatever it looks like), parsing stopping at `--` or the first non-flag. With a
/// `command`, its first element is the program; without, `args` start the flags (the image's
/// entrypoint is the program). A shell script (`sh -c "…"`) is split into words and read
/// leniently: every word that looks like a flag counts, wherever it is.
pub fn read_flags(g: Option<&Graph>, ns: &str, container: &Value) -> Flags {
    let env = Env::of(g, ns.into(), container);
    let command: Vec<&str> = container
        .get("command")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let has_command = container
        .get("command")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let program = command.first().map(|p| p.rsplit('/').next().unwrap_or(p)).unwrap_or("");
    let shell = crate::shell::is_shell(program);
    // Words, each with the unknown references of the element it came from.
    let mut words: Vec<Word> = Vec::new();
    for (i, el) in command_line(container).filter_map(Value::as_str).enumerate() {
        if has_command && i == 0 {
            continue;
        }
        let x = env.expand(el, false);
        let (text, unknown) = (x.text, x.unknown);
        let script = shell || (text.contains(char::is_whitespace) && (text.starts_with('-') || text.contains(" -")));
        if script {
            for w in text.split_whitespace() {
                let u = unknown
                    .iter()
                    .filter(|(n, _)| w.contains(&format!("$({n})")))
                    .cloned()
                    .collect();
                words.push((w.to_string(), u, true));
            }
        } else {
            words.push((text, unknown, false));
        }
    }
    let mut out = Flags::default();
    let mut stopped: Option<String> = None;
    let mut i = 0;
    while i < words.len() {
        let (w, unknown, script) = &words[i];
        i += 1;
        // A whole argument the gate cannot read: it may be any flag.
        if !unknown.is_empty() && w.starts_with("$(") && !w.contains('=') {
            for (var, why) in unknown {
                out.unknown.push((None, w.clone(), format!("$({var}): {why}")));
            }
            continue;
        }
        let lenient = *script;
        let is_flag = w.len() >= 2 && w.starts_with('-') && w != "--" && !w.starts_with("---");
        if !is_flag {
            if !lenient && stopped.is_none() {
                stopped = Some(if w == "--" { "--".to_string() } else { w.clone() });
            }
            continue;
        }
        let body = w.trim_start_matches('-');
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
            None => (format!("--{body}"), None),
        };
        let known = KNOWN_FLAGS.contains(&name.as_str());
        let (value, value_unknown) = match inline {
            Some(v) => (Some(v), unknown.clone()),
            None => match words.get(i) {
                // The router's flags take a value: the next argument, whatever it looks like.
                Some((n, u, _)) if known || !n.starts_with('-') => {
                    i += 1;
                    (Some(n.clone()), u.clone())
                }
                _ => (None, Vec::new()),
            },
        };
        if let Some(stop) = &stopped {
            out.ignored.push((name, stop.clone()));
            continue;
        }
        for (var, why) in value_unknown {
            out.unknown.push((
                Some(name.clone()),
                value.clone().unwrap_or_default(),
                format!("$({var}): {why}"),
            ));
        }
        out.flags.push((name, value));
    }
    out
}

/// Every flag of the router's contract (all take a value).
const KNOWN_FLAGS: &[&str] = &[
    LISTEN_ADDR,
    REVERSE_TUNNEL_LISTEN_ADDR,
    BACKEND_CONNECTIVITY,
    ADVERTISED_HOSTNAME_TEMPLATE,
    GRPC_PYLON_DIAL_ADDR,
    REVERSE_TUNNEL_PYLON_DIAL_ADDR,
    TLS_CERT_PATH,
    TLS_KEY_PATH,
];

/// One element of a container's command line (or exec command) after Kubernetes' `$(VAR)`
/// expansion: its text, the references whose value the gate cannot know (name, why), and the
/// values of rendered Secrets substituted into it (value, where from): `text` may hold them, so
/// no message may show it without [`hide_secrets`].
#[derive(Debug, Clone)]
pub struct Expanded {
    pub text: String,
    pub unknown: Vec<(String, String)>,
    pub secrets: Vec<(String, String)>,
}

/// The one container model every rule reads: `items` (a container's `command` + `args`, or a
/// probe's or hook's exec command) expanded as the kubelet expands them, from the container's
/// env as the kubelet builds it (`envFrom` with prefixes, `env` in order, earlier entries,
/// rendered ConfigMaps and Secrets of `g` in the pod's namespace, the downward API). References
/// to variables the env does not define stay as written and are not unknown (Kubernetes passes
/// them on so; a shell's `$(cmd)` is one).
pub fn expand_items<'a, 'p>(
    g: Option<&Graph>,
    pod: impl Into<Pod<'p>>,
    container: &Value,
    items: impl Iterator<Item = &'a Value>,
) -> Vec<Expanded> {
    expand_items_with(g, pod.into(), container, items, true)
}

/// [`expand_items`] with references to a Secret's variables kept as written (and unknown): for a
/// reader that traces a value to its Secret by the variable's name.
pub fn expand_items_keeping_secrets<'a, 'p>(
    g: Option<&Graph>,
    pod: impl Into<Pod<'p>>,
    container: &Value,
    items: impl Iterator<Item = &'a Value>,
) -> Vec<Expanded> {
    expand_items_with(g, pod.into(), container, items, false)
}

fn expand_items_with<'a>(
    g: Option<&Graph>,
    pod: Pod<'_>,
    container: &Value,
    items: impl Iterator<Item = &'a Value>,
    secrets: bool,
) -> Vec<Expanded> {
    let env = Env::of(g, pod, container);
    items
        .map(|v| {
            let raw = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
            let x = env.expand(&raw, secrets);
            let unknown = x
                .unknown
                .into_iter()
                .filter(|(name, _)| env.vars.contains_key(name) || !env.opaque.is_empty())
                .filter(|(name, _)| {
                    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                })
                .collect();
            Expanded {
                text: x.text,
                unknown,
                secrets: x.secrets,
            }
        })
        .collect()
}

/// The container's environment as the kubelet builds it, every variable in the order it is set
/// (a later one of the same name overrides): literal values expanded, rendered ConfigMaps and
/// Secrets (`envFrom` with prefixes, `configMapKeyRef`, `secretKeyRef`; an optional reference to
/// a missing key leaves the variable unset), the downward API. Values from Secrets are
/// [`EnvValue::Secret`]: judge them, never show them.
pub fn container_env<'p>(g: Option<&Graph>, pod: impl Into<Pod<'p>>, container: &Value) -> Vec<EnvEntry> {
    Env::of(g, pod.into(), container).entries
}

/// The effective environment: each variable's last setting (what the process sees), in the
/// order first set.
pub fn effective_env<'p>(g: Option<&Graph>, pod: impl Into<Pod<'p>>, container: &Value) -> Vec<EnvEntry> {
    let all = container_env(g, pod, container);
    let mut out: Vec<EnvEntry> = Vec::new();
    for e in all {
        match out.iter_mut().find(|o| o.name == e.name) {
            Some(o) => *o = e,
            None => out.push(e),
        }
    }
    out
}

/// Every value of a rendered Secret the container's environment holds (value, what to show
/// instead: `value of Secret ns/name key `k``): what [`hide_secrets`] removes from anything shown
/// about the container.
pub fn secret_values<'p>(g: Option<&Graph>, pod: impl Into<Pod<'p>>, container: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Env::of(g, pod.into(), container)
        .entries
        .into_iter()
        .filter_map(|e| match e.value {
            EnvValue::Secret { value, from } if !value.is_empty() => Some((value, format!("value of {from}"))),
            _ => None,
        })
        .collect();
    // Longest first, so a value that contains another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
    out
}

/// `text` with every Secret value of `secrets` (value, label) replaced by `<label>`, wherever it
/// stands as a whole token (not inside a longer run of letters and digits, so a value `1` leaves
/// `port 8081` alone). Messages about a container that reads Secrets pass through this.
pub fn hide_secrets(text: &str, secrets: &[(String, String)]) -> String {
    // Each value is first replaced by a marker of private-use characters (which no later value
    // can match inside), the markers by the labels at the end.
    let marker = |i: usize| format!("{}\u{E001}", "\u{E000}".repeat(i + 1));
    let mut out = text.to_string();
    for (n, (value, _)) in secrets.iter().enumerate() {
        if value.is_empty() {
            continue;
        }
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
        let (starts, ends) = (value.chars().next(), value.chars().last());
        let mut result = String::with_capacity(out.len());
        let mut last = 0;
        for (i, _) in out.match_indices(value.as_str()) {
            if i < last {
                continue;
            }
            let before = out[..i].chars().last();
            let after = out[i + value.len()..].chars().next();
            if (word(before) && word(starts)) || (word(after) && word(ends)) {
                continue;
            }
            result.push_str(&out[last..i]);
            result.push_str(&marker(n));
            last = i + value.len();
        }
        result.push_str(&out[last..]);
        out = result;
    }
    // Longest marker first: a shorter one is a suffix of it.
    for (n, (_, label)) in secrets.iter().enumerate().rev() {
        out = out.replace(&marker(n), &format!("<{label}>"));
    }
    out
}

/// Flags of a container (`read_flags` without rendered ConfigMaps: `$(VAR)` resolves from
/// literal env values only).
pub fn parse_flags(container: &Value) -> Vec<(String, Option<String>)> {
    read_flags(None, "", container).flags
}

/// One container that runs the router, in a workload the stack renders.
#[derive(Clone)]
pub struct RouterWorkload<'a> {
    pub obj: &'a Object,
    /// `containers`, `initContainers` or `ephemeralContainers`.
    pub list: &'static str,
    pub container: &'a Value,
    pub flags: Vec<(String, Option<String>)>,
    /// What the gate could not read of its command line (see `Flags`).
    pub unknown: Vec<(Option<String>, String, String)>,
    pub ignored: Vec<(String, String)>,
    /// What the router's `{pod_name}` expands to in this container (env `POD_NAME`).
    pub pod_name: PodName,
}

/// What the router's `{pod_name}` stands for in one container: upstream reads it from env
/// `POD_NAME` (the downward API's `metadata.name` in its chart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodName {
    /// Each pod's own name (`POD_NAME` from `metadata.name`, or not set: the contract's reading).
    PerPod,
    /// One literal name, the same in every pod of the workload.
    Literal(String),
    /// The gate cannot tell (why).
    Unknown(String),
}

fn pod_name_of(g: Option<&Graph>, ns: &str, container: &Value) -> PodName {
    let env = Env::of(g, ns.into(), container);
    match env.vars.get(POD_NAME_ENV) {
        None => match env.opaque.first() {
            Some(src) => PodName::Unknown(format!("{POD_NAME_ENV} may come from {src}")),
            None => PodName::PerPod,
        },
        Some(EnvValue::Known(v)) if v == POD_NAME_PLACEHOLDER => PodName::PerPod,
        Some(EnvValue::Known(v)) => PodName::Literal(v.clone()),
        Some(EnvValue::Unknown(why)) => PodName::Unknown(format!("{POD_NAME_ENV}: {why}")),
        Some(EnvValue::Secret { from, .. }) => PodName::Unknown(format!("{POD_NAME_ENV}: it comes from {from}")),
    }
}

/// The label a StatefulSet's controller sets on each pod to its name (Kubernetes
/// `apps/v1` StatefulSet, `statefulset.kubernetes.io/pod-name`), so a Service can select one pod.
pub const STATEFULSET_POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label a StatefulSet's controller sets on each pod to its ordinal (Kubernetes >= 1.28).
pub const STATEFULSET_POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// An autoscaler kind that sets a workload's replica count: where its maximum and its target sit,
/// the defaults its controller applies, and where those facts come from.
pub struct AutoscalerKind {
    pub group: &'static str,
    pub kind: &'static str,
    /// JSON pointer of the maximum replica count.
    pub max: &'static str,
    /// The maximum when the field is absent (`None`: required by the kind's schema).
    pub default_max: Option<u64>,
    /// The target's kind when `scaleTargetRef.kind` is absent (`None`: required).
    pub default_target_kind: Option<&'static str>,
    /// Where the facts come from; data for the reader and the table's test.
    pub source: &'static str,
}

/// The autoscalers that can raise a workload's pod count: one table, data with sources.
pub static AUTOSCALERS: &[AutoscalerKind] = &[
    AutoscalerKind {
        group: "autoscaling",
        kind: "HorizontalPodAutoscaler",
        max: "/spec/maxReplicas",
        default_max: None,
        default_target_kind: None,
        source: "Kubernetes autoscaling/v2 HorizontalPodAutoscalerSpec: maxReplicas and scaleTargetRef.kind required",
    },
    AutoscalerKind {
        group: "keda.sh",
        kind: "ScaledObject",
        max: "/spec/maxReplicaCount",
        default_max: Some(100),
        default_target_kind: Some("Deployment"),
        source: "KEDA ScaledObject specification (keda.sh/docs/latest/reference/scaledobject-spec): \
                 maxReplicaCount default 100, scaleTargetRef.kind default Deployment, same namespace",
    },
];

/// Every autoscaler of the graph targeting `obj`, with the maximum it allows.
pub fn autoscalers_of<'g>(g: &'g Graph, obj: &'g Object) -> impl Iterator<Item = (&'g Object, u64)> + 'g {
    let ns = obj.namespace.as_deref().unwrap_or("default");
    AUTOSCALERS.iter().flat_map(move |a| {
        g.of(a.group, a.kind)
            .filter(move |h| h.namespace.as_deref().unwrap_or("default") == ns)
            .filter(move |h| {
                let kind = h.str_at("/spec/scaleTargetRef/kind").or(a.default_target_kind);
                kind.is_some_and(|k| k.eq_ignore_ascii_case(&obj.kind))
                    && h.str_at("/spec/scaleTargetRef/name") == Some(obj.name.as_str())
            })
            .filter_map(move |h| {
                let max = match h.at(a.max) {
                    Some(v) => v.as_u64(),
                    None => a.default_max,
                };
                max.map(|m| (h, m))
            })
    })
}

/// How many pods a workload can run: `spec.replicas` (default 1), or more when an autoscaler
/// targeting it allows more (an HPA's `maxReplicas`, a KEDA ScaledObject's `maxReplicaCount`:
/// [`AUTOSCALERS`]). A number from the input: callers bound what they do with it.
pub fn pod_count(g: &Graph, obj: &Object) -> u64 {
    let replicas = obj.at("/spec/replicas").and_then(Value::as_u64).unwrap_or(1);
    let scaled = autoscalers_of(g, obj).map(|(_, m)| m).max().unwrap_or(0);
    replicas.max(scaled)
}

/// The name of the workload's pod `ordinal` as the router expands `{pod_name}`, when the render
/// decides it: a StatefulSet's `<name>-<ordinal>`, or the literal `POD_NAME` of any workload.
pub fn pod_name(obj: &Object, pod_name: &PodName, ordinal: u64) -> Option<String> {
    match pod_name {
        PodName::Literal(n) => Some(n.clone()),
        PodName::PerPod if obj.kind == "StatefulSet" => Some(format!("{}-{ordinal}", obj.name)),
        _ => None,
    }
}

/// The labels pod `ordinal` of a workload carries: its template's labels, plus for a StatefulSet
/// the per-pod labels its controller adds.
pub fn pod_labels(obj: &Object, ordinal: u64) -> serde_json::Map<String, Value> {
    let mut labels = obj
        .at("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if obj.kind == "StatefulSet" {
        labels.insert(
            STATEFULSET_POD_NAME_LABEL.into(),
            Value::String(format!("{}-{ordinal}", obj.name)),
        );
        labels.insert(STATEFULSET_POD_INDEX_LABEL.into(), Value::String(ordinal.to_string()));
    }
    labels
}

impl RouterWorkload<'_> {
    /// The value of the first occurrence of a flag; `Some("")` for a flag given without a value.
    pub fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_deref().unwrap_or(""))
    }

    /// `Kind ns/name (container c)`, for messages.
    pub fn describe(&self) -> String {
        let c = self.container.get("name").and_then(Value::as_str).unwrap_or("?");
        format!("{} (container {c})", self.obj.display())
    }
}

/// Every router container of the graph: any container list of any object with a pod spec that
/// the stack renders (policy externals excluded) and that passes one of [`IDENTIFYING_FLAGS`]
/// (after `$(VAR)` expansion, in either dash form, read by Go's rules or written where Go stops
/// reading flags). Callers narrow it (kinds, container list) where their rule needs less.
pub fn routers(g: &Graph) -> Vec<RouterWorkload<'_>> {
    let mut out = Vec::new();
    for obj in g.objects.iter().filter(|o| !o.prov.external) {
        let ns = obj.namespace.as_deref().unwrap_or("default");
        for (list, container) in obj.containers() {
            let f = read_flags(Some(g), ns, container);
            let identifying = |n: &String| IDENTIFYING_FLAGS.contains(&n.as_str());
            if f.flags.iter().any(|(n, _)| identifying(n)) || f.ignored.iter().any(|(n, _)| identifying(n)) {
                out.push(RouterWorkload {
                    obj,
                    list,
                    container,
                    flags: f.flags,
                    unknown: f.unknown,
                    ignored: f.ignored,
                    pod_name: pod_name_of(Some(g), ns, container),
                });
            }
        }
    }
    out
}

/// At most this many replicas' advertised names are checked (the count is read from input).
pub const MAX_REPLICAS_CHECKED: u64 = 1024;

/// The names the router's pods advertise (`--advertised-hostname-template`, `{pod_name}` expanded
/// to each pod's name ([`pod_name`]), `{namespace}` to the workload's namespace), for every pod the
/// workload (and an autoscaler targeting it, [`pod_count`]) can run, at most
/// [`MAX_REPLICAS_CHECKED`]; workers send them as HTTP/2 `:authority` on the gRPC leg while TLS
/// (SNI) uses the dial host.
pub fn advertised_names(g: &Graph, router: &RouterWorkload<'_>) -> Vec<String> {
    let Some(template) = router.flag(ADVERTISED_HOSTNAME_TEMPLATE).filter(|t| !t.is_empty()) else {
        return Vec::new();
    };
    let obj = router.obj;
    let ns = obj.namespace.as_deref().unwrap_or("default");
    if !template.contains(POD_NAME_PLACEHOLDER) {
        return vec![template.replace("{namespace}", ns).to_ascii_lowercase()];
    }
    let count = pod_count(g, obj).clamp(1, MAX_REPLICAS_CHECKED);
    let mut names: Vec<String> = (0..count)
        .filter_map(|i| pod_name(obj, &router.pod_name, i))
        .map(|pod| {
            template
                .replace(POD_NAME_PLACEHOLDER, &pod)
                .replace("{namespace}", ns)
                .to_ascii_lowercase()
        })
        .collect();
    names.dedup();
    names
}

#[cfg(test)]
#[path = "router_flag_tests.rs"]
mod flag_tests;

#[cfg(test)]
#[path = "router_pod_tests.rs"]
mod pod_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    #[test]
    fn every_autoscaler_of_the_table_raises_the_pod_count() {
        let sts = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: r, namespace: n}\nspec: {replicas: 2}\n";
        let count = |extra: &str| {
            let g = testkit::graph("e", &format!("{sts}---\n{extra}"));
            let obj = g.objects.iter().find(|o| o.kind == "StatefulSet").unwrap();
            pod_count(&g, obj)
        };
        let hpa = |max: u64| {
            format!("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {{name: h, namespace: n}}\nspec: {{scaleTargetRef: {{kind: StatefulSet, name: r}}, maxReplicas: {max}}}\n")
        };
        let keda = |rest: &str| {
            format!("apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {{name: k, namespace: n}}\nspec: {{scaleTargetRef: {{{rest}}}}}\n")
        };
        let keda_max = |rest: &str, max: u64| {
            format!("apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {{name: k, namespace: n}}\nspec: {{maxReplicaCount: {max}, scaleTargetRef: {{{rest}}}}}\n")
        };
        assert_eq!(
            count("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n"),
            2
        );
        assert_eq!(count(&hpa(3)), 3);
        assert_eq!(
            count(&hpa(1)),
            2,
            "an autoscaler below replicas does not lower the range"
        );
        assert_eq!(count(&keda_max("kind: statefulset, name: r", 5)), 5);
        // KEDA's defaults: maxReplicaCount 100; without a kind the target is a Deployment.
        assert_eq!(count(&keda("kind: StatefulSet, name: r")), 100);
        assert_eq!(count(&keda("name: r")), 2);
        assert_eq!(count(&keda("kind: StatefulSet, name: other")), 2);
        for a in AUTOSCALERS {
            assert!(!a.source.trim().is_empty() && a.max.starts_with('/'), "{}", a.kind);
        }
    }

    #[test]
    fn routers_are_rendered_containers_with_an_identifying_flag() {
        let yaml = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: r, namespace: nvcf}
spec:
  template:
    spec:
      initContainers:
        - name: setup
          command: ["sh", "-c", "exec router --tls-cert-path /tls/tls.crt --listen-addr"]
      containers:
        - name: sidecar
          args: ["--listen-addr=:8080", "--backend-connectivity", "direct"]
        - name: router
          args: ["--grpc-pylon-dial-addr", "grpc.example.com:443", "--grpc-pylon-dial-addr=second"]
"#;
        let policy = testkit::policy(
            "externals:\n  - {apiVersion: apps/v1, kind: Deployment, namespace: nvcf, name: ext, spec: {template: \
             {spec: {containers: [{name: c, args: [\"--tls-key-path=/k\"]}]}}}}\n",
        );
        let g = testkit::with_externals(testkit::graph("default", yaml), &policy);
        let all = routers(&g);
        let found: Vec<_> = all
            .iter()
            .map(|r| {
                (
                    r.list,
                    r.describe(),
                    r.flag(TLS_CERT_PATH),
                    r.flag(GRPC_PYLON_DIAL_ADDR),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                (
                    "initContainers",
                    "DaemonSet nvcf/r (container setup)".to_string(),
                    Some("/tls/tls.crt"),
                    None
                ),
                (
                    "containers",
                    "DaemonSet nvcf/r (container router)".to_string(),
                    None,
                    Some("grpc.example.com:443")
                ),
            ]
        );
        assert_eq!(all[0].flag(LISTEN_ADDR), Some(""), "a flag without a value");
    }

    #[test]
    fn env_expansion_as_kubernetes_does_it() {
        let c = serde_json::json!({
            "args": ["$(A)", "--tls-cert-path=$(DIR)/tls.crt", "--tls-key-path=$$(DIR)/k", "--advertised-hostname-template=$(NOPE)", "--listen-addr=$(IP):1"],
            "env": [
                {"name": "DIR", "value": "/tls"},
                {"name": "A", "value": "--grpc-pylon-dial-addr=https://$(DIR):443"},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            ],
        });
        let f = read_flags(None, "ns", &c);
        let get = |n: &str| f.flags.iter().find(|(k, _)| k == n).and_then(|(_, v)| v.clone());
        assert_eq!(get(GRPC_PYLON_DIAL_ADDR).as_deref(), Some("https:///tls:443"));
        assert_eq!(get(TLS_CERT_PATH).as_deref(), Some("/tls/tls.crt"));
        assert_eq!(get(TLS_KEY_PATH).as_deref(), Some("$(DIR)/k"), "$$ escapes");
        assert_eq!(
            get(ADVERTISED_HOSTNAME_TEMPLATE).as_deref(),
            Some("$(NOPE)"),
            "undefined: as written"
        );
        let unknown: Vec<(Option<&str>, &str)> = f
            .unknown
            .iter()
            .map(|(fl, _, why)| (fl.as_deref(), why.as_str()))
            .collect();
        assert_eq!(unknown.len(), 2, "{unknown:?}");
        assert!(unknown[0].0 == Some(ADVERTISED_HOSTNAME_TEMPLATE) && unknown[0].1.contains("does not define"));
        assert!(unknown[1].0 == Some(LISTEN_ADDR) && unknown[1].1.contains("field"));
        // A whole argument from a Secret may be any flag.
        let c = serde_json::json!({"args": ["$(X)"], "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]});
        let f = read_flags(None, "ns", &c);
        assert!(
            f.flags.is_empty() && f.unknown[0].0.is_none() && f.unknown[0].2.contains("Secret"),
            "{f:?}"
        );
    }

    #[test]
    fn flags_as_gos_flag_package_reads_them() {
        let c = serde_json::json!({
            "command": ["/stargate"],
            "args": ["-tls-cert-path", "-weird", "--tls-key-path=/k", "-listen-addr", ":50071", "positional", "--advertised-hostname-template=x", "--", "--grpc-pylon-dial-addr=y"],
        });
        let f = read_flags(None, "", &c);
        assert_eq!(
            f.flags,
            vec![
                (TLS_CERT_PATH.to_string(), Some("-weird".to_string())),
                (TLS_KEY_PATH.to_string(), Some("/k".to_string())),
                (LISTEN_ADDR.to_string(), Some(":50071".to_string())),
            ]
        );
        assert_eq!(
            f.ignored,
            vec![
                (ADVERTISED_HOSTNAME_TEMPLATE.to_string(), "positional".to_string()),
                (GRPC_PYLON_DIAL_ADDR.to_string(), "positional".to_string()),
            ]
        );
        // Without `command`, args start the flags; `--` ends them.
        let c = serde_json::json!({"args": ["--tls-cert-path=/c", "--", "--tls-key-path=/k"]});
        let f = read_flags(None, "", &c);
        assert_eq!(f.flags.len(), 1);
        assert_eq!(f.ignored, vec![(TLS_KEY_PATH.to_string(), "--".to_string())]);
        // The program itself is not a flag, and `command` elements after it are arguments.
        let c = serde_json::json!({"command": ["/stargate", "-tls-cert-path=/c"]});
        assert_eq!(
            parse_flags(&c),
            vec![(TLS_CERT_PATH.to_string(), Some("/c".to_string()))]
        );
    }
}
