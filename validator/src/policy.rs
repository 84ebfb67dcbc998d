//! The policy file (`validator-policy.yaml`): settings, declared externals, waivers and
//! organisation switches. Parsed once into a validated struct; a bad policy is an error naming the
//! file and the entry.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use time::Date;

pub const DEFAULT_POLICY_FILE: &str = "validator-policy.yaml";

/// Rules that may never be waived unless the policy says otherwise.
pub const DEFAULT_NEVER_WAIVE: &[&str] = &["insecure-flag", "plaintext-endpoint"];

#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Path of the policy file as given / found, `None` for the built-in default.
    pub file: Option<String>,
    pub settings: Settings,
    pub externals: Vec<External>,
    pub waivers: Vec<Waiver>,
    /// Severity overrides by rule id (`error`, `warning`, `allow`); the command line's
    /// `-D/-W/-A` take precedence.
    pub severity: std::collections::BTreeMap<String, Level>,
}

/// A severity override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// `-D`: report as an error.
    Error,
    /// `-W`: report as a warning.
    Warning,
    /// `-A`: do not report.
    Allow,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Settings {
    #[serde(default)]
    pub gateway_api: GatewayApi,
    /// Allowed chart repositories (URL prefixes: `oci://quay.io/jetstack/charts`,
    /// `https://openbao.github.io/openbao-helm`). Empty: any https/oci repository.
    #[serde(default)]
    pub allowed_chart_repositories: Vec<String>,
    /// Allowed image registries (`quay.io`, `nvcr.io`, `docker.io` …). Empty: any registry.
    #[serde(default)]
    pub allowed_image_registries: Vec<String>,
    /// Environments where images must carry a digest (`@sha256:`); `"*"` for all.
    #[serde(default)]
    pub require_image_digests: Vec<String>,
    /// Rules that may never be waived.
    #[serde(default = "default_never_waive")]
    pub never_waive: Vec<String>,
    /// Plain `http://` endpoints accepted anyway by `plaintext-endpoint`, each with a reason.
    #[serde(default)]
    pub plaintext_allowed: Vec<PlaintextAllowed>,
    /// Repository-relative directories local charts may live in (`chart-source-allowed`).
    #[serde(default = "default_local_chart_roots")]
    pub local_chart_roots: Vec<String>,
    /// The chart lock file, relative to the entry state's directory (`chart-digest-pinned`).
    #[serde(default = "default_lock_file")]
    pub lock_file: String,
    /// Kubernetes version objects are validated against (`1.35`); `schema::DEFAULT_KUBERNETES_VERSION`
    /// when unset.
    #[serde(default)]
    pub kubernetes_version: Option<String>,
    /// CRD files (paths relative to the policy file) whose schemas validate their kinds, e.g.
    /// the Gateway API or cert-manager CRDs exported from the cluster.
    #[serde(default)]
    pub crd_files: Vec<String>,
    /// Kinds that must have a schema (`Kind`, `group/Kind`, `group/*` or `*`); an object of such a
    /// kind without one is a `schema-valid` finding instead of a coverage note.
    #[serde(default)]
    pub require_schemas: Vec<String>,
}

fn default_local_chart_roots() -> Vec<String> {
    vec!["charts/".into()]
}

fn default_lock_file() -> String {
    crate::stack::lock::LOCK_FILE.into()
}

/// One plaintext endpoint the policy accepts: `host` is a host name or IP (any port) or
/// `host:port`; the reason is required.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaintextAllowed {
    pub host: String,
    pub reason: String,
}

fn default_never_waive() -> Vec<String> {
    DEFAULT_NEVER_WAIVE.iter().map(|s| s.to_string()).collect()
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gateway_api: GatewayApi::default(),
            allowed_chart_repositories: Vec::new(),
            allowed_image_registries: Vec::new(),
            require_image_digests: Vec::new(),
            never_waive: default_never_waive(),
            plaintext_allowed: Vec::new(),
            local_chart_roots: default_local_chart_roots(),
            lock_file: default_lock_file(),
            kubernetes_version: None,
            crd_files: Vec::new(),
            require_schemas: Vec::new(),
        }
    }
}

impl Settings {
    /// The policy's entry accepting plaintext to `host` (and `port`, when the entry names one).
    pub fn plaintext_allowed(&self, host: &str, port: Option<u16>) -> Option<&PlaintextAllowed> {
        self.plaintext_allowed.iter().find(|a| match a.host.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => {
                h.trim_matches(['[', ']']).eq_ignore_ascii_case(host) && p.parse::<u16>().ok() == port
            }
            _ => a.host.trim_matches(['[', ']']).eq_ignore_ascii_case(host),
        })
    }

    pub fn digests_required(&self, environment: &str) -> bool {
        self.require_image_digests.iter().any(|e| e == "*" || e == environment)
    }

    /// Whether `settings.requireSchemas` covers this kind of this API group.
    pub fn schema_required(&self, group: &str, kind: &str) -> bool {
        self.require_schemas.iter().any(|p| match p.split_once('/') {
            None => p == "*" || p == kind,
            Some((g, k)) => g == group && (k == "*" || k == kind),
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayApi {
    /// `v1.6`, `v1.5`, … (a leading `v` is optional).
    #[serde(default = "default_gw_version")]
    pub version: String,
    /// `standard` or `experimental`.
    #[serde(default = "default_gw_channel")]
    pub channel: String,
}

fn default_gw_version() -> String {
    "v1.6".into()
}
fn default_gw_channel() -> String {
    "standard".into()
}

impl Default for GatewayApi {
    fn default() -> Self {
        GatewayApi {
            version: default_gw_version(),
            channel: default_gw_channel(),
        }
    }
}

impl GatewayApi {
    /// `(major, minor)` of the declared version.
    pub fn minor(&self) -> (u32, u32) {
        let v = self.version.trim_start_matches('v');
        let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (it.next().unwrap_or(1), it.next().unwrap_or(0))
    }
}

/// An object that exists outside the stack (a customer ClusterIssuer, a pre-created Secret, an
/// existing Gateway). The engine adds externals to each environment's graph as objects with
/// `prov.external = true` and `prov.file` = the policy file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct External {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name: String,
    /// Secret type, e.g. `kubernetes.io/tls`.
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    /// Environments where it exists; empty: all.
    #[serde(default)]
    pub environments: Vec<String>,
    /// The object's spec as trusted (e.g. an external Gateway's listeners).
    #[serde(default)]
    pub spec: Option<Value>,
    /// Extra data (e.g. a pre-created Secret's public `tls.crt` chain PEM to check).
    #[serde(default)]
    pub data: Option<Value>,
}

impl External {
    pub fn applies_to(&self, environment: &str) -> bool {
        self.environments.is_empty() || self.environments.iter().any(|e| e == environment)
    }

    /// The external as a Kubernetes document.
    pub fn to_value(&self) -> Value {
        let mut meta = serde_json::Map::new();
        meta.insert("name".into(), Value::String(self.name.clone()));
        if let Some(ns) = &self.namespace {
            meta.insert("namespace".into(), Value::String(ns.clone()));
        }
        let mut doc = serde_json::Map::new();
        doc.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        doc.insert("kind".into(), Value::String(self.kind.clone()));
        doc.insert("metadata".into(), Value::Object(meta));
        if let Some(t) = &self.type_ {
            doc.insert("type".into(), Value::String(t.clone()));
        }
        if let Some(s) = &self.spec {
            doc.insert("spec".into(), s.clone());
        }
        if let Some(d) = &self.data {
            doc.insert("data".into(), d.clone());
        }
        Value::Object(doc)
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Target {
    #[serde(default)]
    pub environment: Option<String>,
    /// `namespace/name`
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Waiver {
    pub rule: String,
    pub target: Target,
    pub reason: String,
    pub expires: Date,
    /// 1-based index of the waiver in the policy's `waivers:` list (for messages).
    pub index: usize,
    /// Line of the waiver's list item in the policy file.
    pub line: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWaiver {
    rule: Option<String>,
    target: Option<Target>,
    reason: Option<String>,
    expires: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    version: Option<u32>,
    #[serde(default)]
    settings: Option<Settings>,
    #[serde(default)]
    externals: Vec<External>,
    #[serde(default)]
    waivers: Vec<RawWaiver>,
    #[serde(default)]
    severity: std::collections::BTreeMap<String, Level>,
}

impl Policy {
    /// Load and validate a policy file. `display` is how the file is named in messages.
    pub fn load(path: &Path, display: &str) -> Result<Policy> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read policy file {display}"))?;
        Policy::parse(&text, display)
    }

    pub fn parse(text: &str, display: &str) -> Result<Policy> {
        let raw: RawPolicy = crate::yaml::from_str(text).with_context(|| {
            format!("{display}: not a valid policy (see `nvcf-validate explain` and the README's policy section)")
        })?;
        if let Some(v) = raw.version {
            if v != 1 {
                bail!("{display}: unsupported policy version {v}; this validator understands version 1");
            }
        }
        let mut waivers = Vec::new();
        let lines = list_item_lines(text, "waivers");
        for (i, w) in raw.waivers.into_iter().enumerate() {
            let n = i + 1;
            let rule = w
                .rule
                .filter(|r| !r.trim().is_empty())
                .with_context(|| format!("{display}: waiver #{n} has no `rule`"))?;
            if crate::rules::find(&rule).is_none() {
                bail!("{display}: waiver #{n} names unknown rule `{rule}` (see `nvcf-validate rules`)");
            }
            let target = w.target.with_context(|| {
                format!(
                    "{display}: waiver #{n} ({rule}) has no `target`; say which environment/release/object it covers"
                )
            })?;
            if target == Target::default() {
                bail!("{display}: waiver #{n} ({rule}) has an empty `target`; name at least an environment, release or object");
            }
            let reason = w.reason.filter(|r| !r.trim().is_empty()).with_context(|| {
                format!("{display}: waiver #{n} ({rule}) has no `reason`; every waiver must say why")
            })?;
            let expires_raw = w.expires.with_context(|| {
                format!("{display}: waiver #{n} ({rule}) has no `expires` date (YYYY-MM-DD); waivers must expire")
            })?;
            let expires_text = match &expires_raw {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let fmt = time::macros::format_description!("[year]-[month]-[day]");
            let expires = Date::parse(expires_text.trim(), &fmt).with_context(|| {
                format!("{display}: waiver #{n} ({rule}): `expires: {expires_text}` is not a date (YYYY-MM-DD)")
            })?;
            waivers.push(Waiver {
                rule,
                target,
                reason,
                expires,
                index: n,
                line: lines.get(i).copied(),
            });
        }
        if let Some(a) = raw
            .settings
            .iter()
            .flat_map(|s| &s.plaintext_allowed)
            .find(|a| a.reason.trim().is_empty() || a.host.trim().is_empty())
        {
            bail!(
                "{display}: settings.plaintextAllowed entry `{}` needs a host and a reason; every accepted plaintext endpoint must say why",
                a.host
            );
        }
        if let Some(s) = &raw.settings {
            let bad = |p: &str| p.trim().is_empty() || p.starts_with('/') || p.split('/').any(|c| c == "..");
            if let Some(r) = s.local_chart_roots.iter().find(|r| bad(r)) {
                bail!("{display}: settings.localChartRoots entry `{r}` must be a directory inside the repository (relative, no `..`)");
            }
            if bad(&s.lock_file) {
                bail!(
                    "{display}: settings.lockFile `{}` must be a file inside the repository (relative, no `..`)",
                    s.lock_file
                );
            }
        }
        for rule in raw.severity.keys() {
            if crate::rules::find(rule).is_none() {
                bail!("{display}: `severity` names unknown rule `{rule}` (see `nvcf-validate rules`)");
            }
        }
        Ok(Policy {
            file: Some(display.to_string()),
            settings: raw.settings.unwrap_or_default(),
            externals: raw.externals,
            waivers,
            severity: raw.severity,
        })
    }

    pub fn externals_for<'a>(&'a self, environment: &'a str) -> impl Iterator<Item = &'a External> + 'a {
        self.externals.iter().filter(move |e| e.applies_to(environment))
    }

    pub fn may_waive(&self, rule: &str) -> bool {
        !self.settings.never_waive.iter().any(|r| r == rule)
    }

    /// Add this policy's externals for the graph's environment to the graph, as objects with
    /// `prov.external = true` pointing at the policy file.
    pub fn add_externals(&self, g: &mut crate::graph::Graph) {
        let env = g.environment.clone();
        for e in self.externals_for(&env) {
            let prov = crate::graph::Provenance {
                environment: env.clone(),
                file: self.file.clone(),
                external: true,
                ..Default::default()
            };
            if let Some(o) = crate::graph::Object::from_value(e.to_value(), None, prov) {
                g.push(o);
            }
        }
    }
}

/// Lines (1-based) of the items of a top-level list `key:` in block style.
fn list_item_lines(text: &str, key: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut indent: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with(&format!("{key}:")) {
            inside = true;
            continue;
        }
        if !inside || line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let ind = line.len() - line.trim_start().len();
        if ind == 0 && !line.starts_with("- ") {
            break;
        }
        if line.trim_start().starts_with("- ") && indent.is_none_or(|x| x == ind) {
            indent = Some(ind);
            out.push(i + 1);
        }
    }
    out
}
