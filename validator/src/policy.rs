//! The policy file (`validator-policy.yaml`): settings, declared externals, waivers and
//! organisation switches. Read once with the reader manifests use (`yaml::located`: anchors and
//! merge keys as helm applies them, a key written twice refused), scanned for private keys and
//! turned into a validated struct from that same parse; a bad policy is an error naming the file,
//! the line and the entry, never echoing a key-like value.

use crate::redact::config_value;
use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use time::Date;

pub const DEFAULT_POLICY_FILE: &str = "validator-policy.yaml";

/// Rules that may never be waived or lowered, whatever the policy says: `settings.neverWaive`
/// only adds to this list (a policy file is edited in the same pull requests it gates).
pub const DEFAULT_NEVER_WAIVE: &[&str] = &["insecure-flag", "plaintext-endpoint", "private-key-in-render"];

/// The allow-list entry that allows everything; the report shows it as a warning.
pub const ALLOW_ALL: &str = "*";

/// The family of a rule id, `None` for an unknown id: `rules::family_of`, passed in by the caller
/// (the policy sits below the rules, so it does not import them).
pub type FamilyOf = fn(&str) -> Option<&'static str>;

/// Gateway API channels (`settings.gatewayApi.channel`).
pub const GATEWAY_API_CHANNELS: &[&str] = &["standard", "experimental"];

#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Path of the policy file as given / found, `None` for the built-in default.
    pub file: Option<String>,
    /// Where a policy file was looked for and not found (the strict defaults then apply, and the
    /// report says so with a `policy-file-missing` finding).
    pub missing: Option<String>,
    /// Places in the policy file that hold private key material (path, what): reported as
    /// `private-key-in-render` findings, never echoed.
    pub key_places: Vec<(String, &'static str)>,
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
    /// `https://openbao.github.io/openbao-helm`). Absent or empty: none; `"*"`: any (a warning).
    #[serde(default)]
    pub allowed_chart_repositories: Vec<String>,
    /// Allowed image registries (`quay.io`, `nvcr.io`, `docker.io` …). Absent or empty: none;
    /// `"*"`: any (a warning).
    #[serde(default)]
    pub allowed_image_registries: Vec<String>,
    /// Environments where images must carry a digest (`@sha256:`); `"*"` for all.
    #[serde(default)]
    pub require_image_digests: Vec<String>,
    /// Scopes of custom kinds whose CustomResourceDefinition the stack does not render
    /// (`cert-manager.io/Certificate: Namespaced`, `gateway.networking.k8s.io/GatewayClass:
    /// Cluster`); built-in kinds are known and cannot be re-declared.
    #[serde(default)]
    pub kind_scopes: std::collections::BTreeMap<String, KindScope>,
    /// Rules that may never be waived, in addition to the built-in `DEFAULT_NEVER_WAIVE`.
    #[serde(default)]
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
    /// What a version tag of an image looks like (`image-pinned`): a regular expression the whole
    /// tag must match (`\d{8}-[0-9a-f]{7}` for date-and-commit tags). Unset: the default shape of
    /// `crate::meaning::tags` (some part is `MAJOR.MINOR` or longer). A tag that is not a
    /// version is a moving tag.
    #[serde(default)]
    pub image_version_tag: Option<String>,
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

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gateway_api: GatewayApi::default(),
            allowed_chart_repositories: Vec::new(),
            allowed_image_registries: Vec::new(),
            require_image_digests: Vec::new(),
            kind_scopes: Default::default(),
            never_waive: Vec::new(),
            plaintext_allowed: Vec::new(),
            local_chart_roots: default_local_chart_roots(),
            lock_file: default_lock_file(),
            kubernetes_version: None,
            crd_files: Vec::new(),
            require_schemas: Vec::new(),
            image_version_tag: None,
        }
    }
}

/// Whether `list` (an allow-list of the policy) admits anything for which `entry_matches` holds.
/// Absent or empty admits nothing; `"*"` admits everything.
pub fn allow_list_admits(list: &[String], entry_matches: impl Fn(&str) -> bool) -> bool {
    list.iter().any(|e| e.trim() == ALLOW_ALL || entry_matches(e))
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

/// A CustomResourceDefinition's `spec.scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum KindScope {
    Namespaced,
    Cluster,
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
    /// `(major, minor)` of `[v]MAJOR.MINOR[.PATCH]`, `None` when the version is not of that shape.
    fn parts(&self) -> Option<(u32, u32)> {
        let v = self.version.strip_prefix('v').unwrap_or(&self.version);
        let nums: Vec<&str> = v.split('.').collect();
        if !(2..=3).contains(&nums.len())
            || nums
                .iter()
                .any(|n| n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        Some((nums[0].parse().ok()?, nums[1].parse().ok()?))
    }

    /// `(major, minor)` of the declared version (`validate` has refused any other shape).
    pub fn minor(&self) -> (u32, u32) {
        self.parts().unwrap_or((1, 0))
    }

    /// The version is a Gateway API v1 release (`v1.6`, `1.5`, `v1.4.1`; later minors are judged
    /// like the newest one the validator knows) and the channel one of `GATEWAY_API_CHANNELS`.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.parts().is_none_or(|(major, _)| major != 1) {
            return Err(format!(
                "settings.gatewayApi.version `{}` is not a Gateway API v1 release (v1.MINOR, e.g. v1.6)",
                config_value(&self.version)
            ));
        }
        if !GATEWAY_API_CHANNELS.contains(&self.channel.as_str()) {
            return Err(format!(
                "settings.gatewayApi.channel `{}` is not {}",
                config_value(&self.channel),
                GATEWAY_API_CHANNELS.join(" or ")
            ));
        }
        Ok(())
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
    pub fn load(path: &Path, display: &str, family_of: FamilyOf) -> Result<Policy> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read policy file {display}"))?;
        Policy::parse(&text, display, family_of)
    }

    /// Parse and validate a policy. `family_of` (`rules::family_of`) says which rule ids exist
    /// and which of them report on the policy itself (the `policy` family: the policy may not
    /// lower those).
    pub fn parse(text: &str, display: &str, family_of: FamilyOf) -> Result<Policy> {
        let doc = crate::yaml::located(text).map_err(|e| {
            anyhow!(
                "{display}: not a valid policy (see `nvcf-validate explain` and the README's policy section): {}",
                crate::redact::error_text(&format!("{e:#}"))
            )
        })?;
        // The key scan reads the same parse as the settings: a policy that cannot be read is
        // refused above, never accepted without its scan.
        let key_places = crate::redact::key_places(&doc.value, "");
        let raw: RawPolicy = doc.typed(display)?;
        let at = |pointer: &str| match doc.line(pointer) {
            Some(l) => format!("{display}:{l}"),
            None => display.to_string(),
        };
        if let Some(v) = raw.version {
            if v != 1 {
                bail!(
                    "{}: unsupported policy version {v}; this validator understands version 1",
                    at("/version")
                );
            }
        }
        let known_rule = |rule: &str, pointer: &str, what: &str| -> Result<()> {
            if family_of(rule).is_none() {
                bail!(
                    "{}: {what} names unknown rule `{}` (see `nvcf-validate rules`)",
                    at(pointer),
                    config_value(rule)
                );
            }
            Ok(())
        };
        let settings = raw.settings.unwrap_or_default();
        for (i, rule) in settings.never_waive.iter().enumerate() {
            known_rule(rule, &format!("/settings/neverWaive/{i}"), "settings.neverWaive")?;
        }
        let mut waivers = Vec::new();
        for (i, w) in raw.waivers.into_iter().enumerate() {
            let n = i + 1;
            let item = format!("/waivers/{i}");
            let here = at(&item);
            let rule = w
                .rule
                .filter(|r| !r.trim().is_empty())
                .ok_or_else(|| anyhow!("{here}: waiver #{n} has no `rule`"))?;
            known_rule(&rule, &format!("{item}/rule"), &format!("waiver #{n}"))?;
            let target = w.target.ok_or_else(|| {
                anyhow!("{here}: waiver #{n} ({rule}) has no `target`; say which environment/release/object it covers")
            })?;
            if target == Target::default() {
                bail!("{here}: waiver #{n} ({rule}) has an empty `target`; name at least an environment, release or object");
            }
            let reason = w
                .reason
                .filter(|r| !r.trim().is_empty())
                .ok_or_else(|| anyhow!("{here}: waiver #{n} ({rule}) has no `reason`; every waiver must say why"))?;
            if !crate::meaning::text::says_something(&reason) {
                bail!(
                    "{here}: waiver #{n} ({rule}): its `reason` has no words (only blanks, punctuation or invisible \
                     characters such as zero-width spaces); every waiver must say why in words"
                );
            }
            let expires_raw = w.expires.ok_or_else(|| {
                anyhow!("{here}: waiver #{n} ({rule}) has no `expires` date (YYYY-MM-DD); waivers must expire")
            })?;
            let expires_text = match &expires_raw {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let fmt = time::macros::format_description!("[year]-[month]-[day]");
            let expires = Date::parse(expires_text.trim(), &fmt).map_err(|_| {
                anyhow!(
                    "{}: waiver #{n} ({rule}): `expires` ({}) is not a date (YYYY-MM-DD)",
                    at(&format!("{item}/expires")),
                    config_value(&expires_text)
                )
            })?;
            waivers.push(Waiver {
                rule,
                target,
                reason,
                expires,
                index: n,
                line: doc.line(&item),
            });
        }
        if let Some(shape) = &settings.image_version_tag {
            if let Err(e) = crate::meaning::tags::compile_shape(shape) {
                bail!(
                    "{}: settings.imageVersionTag `{}` {e}; give a regular expression a version tag matches",
                    at("/settings/imageVersionTag"),
                    config_value(shape)
                );
            }
        }
        for (i, a) in settings.plaintext_allowed.iter().enumerate() {
            if !crate::meaning::text::says_something(&a.reason) || a.host.trim().is_empty() {
                bail!(
                    "{}: settings.plaintextAllowed entry `{}` needs a host and a reason; every accepted plaintext endpoint must say why",
                    at(&format!("/settings/plaintextAllowed/{i}")),
                    config_value(&a.host)
                );
            }
        }
        let bad = |p: &str| p.trim().is_empty() || p.starts_with('/') || p.split('/').any(|c| c == "..");
        for (i, r) in settings.local_chart_roots.iter().enumerate() {
            if bad(r) {
                bail!(
                    "{}: settings.localChartRoots entry `{}` must be a directory inside the repository (relative, no `..`)",
                    at(&format!("/settings/localChartRoots/{i}")),
                    config_value(r)
                );
            }
        }
        if bad(&settings.lock_file) {
            bail!(
                "{}: settings.lockFile `{}` must be a file inside the repository (relative, no `..`)",
                at("/settings/lockFile"),
                config_value(&settings.lock_file)
            );
        }
        if let Err(e) = settings.gateway_api.validate() {
            let field = if e.contains(".channel") { "channel" } else { "version" };
            bail!("{}: {e}", at(&format!("/settings/gatewayApi/{field}")));
        }
        for (i, p) in settings.require_schemas.iter().enumerate() {
            let parts: Vec<&str> = p.split('/').collect();
            if parts.len() > 2 || parts.iter().any(|x| x.is_empty() || x.contains(char::is_whitespace)) {
                bail!(
                    "{}: settings.requireSchemas entry `{}` is not `Kind`, `group/Kind`, `group/*` or `*`",
                    at(&format!("/settings/requireSchemas/{i}")),
                    config_value(p)
                );
            }
        }
        let policy = Policy {
            file: Some(display.to_string()),
            missing: None,
            key_places,
            settings,
            externals: raw.externals,
            waivers,
            severity: raw.severity,
        };
        for (rule, level) in &policy.severity {
            let pointer = format!("/severity/{}", crate::yaml::pointer_segment(rule));
            known_rule(rule, &pointer, "`severity`")?;
            if *level == Level::Error {
                continue;
            }
            if policy.never_waived(rule) {
                bail!(
                    "{}: `severity` lowers `{rule}`, which may never be waived or lowered (settings.neverWaive); fix the finding instead",
                    at(&pointer)
                );
            }
            if family_of(rule) == Some("policy") {
                bail!(
                    "{}: `severity` lowers `{rule}`, which reports on this policy itself: the policy cannot hide its own findings (an operator can, visibly, with -W/-A on the command line)",
                    at(&pointer)
                );
            }
        }
        Ok(policy)
    }

    pub fn externals_for<'a>(&'a self, environment: &'a str) -> impl Iterator<Item = &'a External> + 'a {
        self.externals.iter().filter(move |e| e.applies_to(environment))
    }

    /// Whether `rule` may never be waived or lowered by anyone: the built-in list and what the
    /// policy's `neverWaive` adds.
    pub fn never_waived(&self, rule: &str) -> bool {
        DEFAULT_NEVER_WAIVE.contains(&rule) || self.settings.never_waive.iter().any(|r| r == rule)
    }

    /// Add this policy's externals for the graph's environment to the graph, as objects with
    /// `prov.external = true` pointing at the policy file.
    pub fn add_externals(&self, g: &mut crate::graph::Graph) {
        let env = g.environment.clone();
        for e in self.externals_for(&env) {
            let prov = crate::render::Provenance {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Policy {
        Policy::parse(text, "p.yaml", crate::testkit::family_of).unwrap_or_else(|e| panic!("{e:#}"))
    }

    fn refused(text: &str) -> String {
        format!(
            "{:#}",
            Policy::parse(text, "p.yaml", crate::testkit::family_of).expect_err("refused")
        )
    }

    #[test]
    fn defaults_allow_nothing_and_keep_the_repository_layout() {
        for p in [
            Policy::default(),
            parse(""),
            parse("version: 1\n"),
            parse("settings: {}\n"),
        ] {
            let s = &p.settings;
            assert!(s.allowed_chart_repositories.is_empty() && s.allowed_image_registries.is_empty());
            assert!(
                s.never_waive.is_empty(),
                "the built-in list is not copied into the setting"
            );
            assert_eq!(s.local_chart_roots, vec!["charts/".to_string()]);
            assert_eq!(s.lock_file, "charts.lock.yaml");
            assert_eq!(
                (s.gateway_api.version.as_str(), s.gateway_api.channel.as_str()),
                ("v1.6", "standard")
            );
            assert!(p.waivers.is_empty() && p.externals.is_empty() && p.severity.is_empty());
        }
        let g = parse("settings: {gatewayApi: {channel: experimental}}\n")
            .settings
            .gateway_api;
        assert_eq!((g.version.as_str(), g.channel.as_str()), ("v1.6", "experimental"));
        let g = parse("settings: {gatewayApi: {version: v1.4}}\n").settings.gateway_api;
        assert_eq!((g.version.as_str(), g.channel.as_str()), ("v1.4", "standard"));
        assert_eq!(parse("").file.as_deref(), Some("p.yaml"));
    }

    #[test]
    fn allow_lists_admit_nothing_when_empty_and_everything_only_with_a_star() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            !allow_list_admits(&[], |_| true),
            "empty admits nothing, even for a permissive matcher"
        );
        assert!(allow_list_admits(&list(&[" * "]), |_| false));
        assert!(allow_list_admits(&list(&["quay.io"]), |e| e == "quay.io"));
        assert!(!allow_list_admits(&list(&["quay.io"]), |e| e == "nvcr.io"));
        assert!(
            !allow_list_admits(&list(&["*x"]), |_| false),
            "only a whole `*` allows all"
        );
    }

    #[test]
    fn plaintext_allowed_hosts_ports_and_ipv6() {
        let p = parse(
            "settings:\n  plaintextAllowed:\n\
             \x20 - {host: Metrics.example.net, reason: r0}\n\
             \x20 - {host: 'legacy.example.net:9090', reason: r1}\n\
             \x20 - {host: 'fd00::1', reason: r2}\n\
             \x20 - {host: '[fd00::2]:8080', reason: r3}\n\
             \x20 - {host: '[fd00::3]', reason: r4}\n",
        );
        let s = &p.settings;
        let hit = |host: &str, port: Option<u16>| s.plaintext_allowed(host, port).map(|a| a.reason.as_str());
        // A host alone: any port, ASCII case-insensitive.
        assert_eq!(hit("metrics.example.net", Some(80)), Some("r0"));
        assert_eq!(hit("metrics.example.net", None), Some("r0"));
        // host:port: that port only.
        assert_eq!(hit("legacy.example.net", Some(9090)), Some("r1"));
        assert_eq!(hit("legacy.example.net", Some(9091)), None);
        assert_eq!(hit("legacy.example.net", None), None);
        assert_eq!(hit("other.example.net", Some(9090)), None);
        // A bare IPv6 address is a host (any port), not `fd00:` with port 1.
        assert_eq!(hit("fd00::1", Some(8200)), Some("r2"));
        assert_eq!(hit("fd00:", Some(1)), None);
        // Bracketed IPv6 with and without a port.
        assert_eq!(hit("fd00::2", Some(8080)), Some("r3"));
        assert_eq!(hit("fd00::2", Some(8081)), None);
        assert_eq!(hit("fd00::3", Some(1234)), Some("r4"));
        // Every entry needs a host and a reason.
        for bad in ["{host: x, reason: ''}", "{host: ' ', reason: r}"] {
            let e = refused(&format!(
                "settings:\n  plaintextAllowed:\n  - {{host: ok, reason: r}}\n  - {bad}\n"
            ));
            assert!(e.starts_with("p.yaml:4: settings.plaintextAllowed entry"), "{e}");
        }
        let e = refused("settings:\n  plaintextAllowed: [{host: x}]\n");
        assert!(e.contains("missing field `reason`"), "{e}");
    }

    #[test]
    fn digests_are_required_where_listed() {
        let s = parse("settings: {requireImageDigests: [prod, stage]}\n").settings;
        assert!(s.digests_required("prod") && s.digests_required("stage"));
        assert!(!s.digests_required("default") && !s.digests_required("pro"));
        let s = parse("settings: {requireImageDigests: ['*']}\n").settings;
        assert!(s.digests_required("anything"));
        assert!(!Settings::default().digests_required("prod"));
    }

    #[test]
    fn require_schemas_patterns() {
        let s = parse("settings: {requireSchemas: [Widget, cert-manager.io/*, gateway.networking.k8s.io/HTTPRoute]}\n")
            .settings;
        assert!(s.schema_required("example.io", "Widget"), "a bare kind: any group");
        assert!(s.schema_required("", "Widget"));
        assert!(!s.schema_required("example.io", "Gadget"));
        assert!(s.schema_required("cert-manager.io", "Certificate") && s.schema_required("cert-manager.io", "Issuer"));
        assert!(
            !s.schema_required("acme.cert-manager.io", "Order"),
            "a group is matched whole"
        );
        assert!(s.schema_required("gateway.networking.k8s.io", "HTTPRoute"));
        assert!(!s.schema_required("gateway.networking.k8s.io", "GRPCRoute"));
        assert!(!s.schema_required("other.io", "HTTPRoute"), "group/Kind needs both");
        let all = parse("settings: {requireSchemas: ['*']}\n").settings;
        assert!(all.schema_required("x.io", "Y") && all.schema_required("", "Pod"));
        assert!(!Settings::default().schema_required("", "Pod"));
        for bad in ["a/b/c", "/Kind", "group/", "''", "'a b'"] {
            let e = refused(&format!("settings:\n  requireSchemas:\n  - Pod\n  - {bad}\n"));
            assert!(e.starts_with("p.yaml:4: settings.requireSchemas entry"), "{bad}: {e}");
        }
    }

    #[test]
    fn gateway_api_version_and_channel_are_validated() {
        for (v, want) in [
            ("v1.6", (1, 6)),
            ("1.5", (1, 5)),
            ("v1.4.1", (1, 4)),
            ("v1.12", (1, 12)),
        ] {
            let g = parse(&format!("settings:\n  gatewayApi: {{version: '{v}'}}\n"))
                .settings
                .gateway_api;
            assert_eq!(g.minor(), want, "{v}");
        }
        for v in [
            "v1", "v2.0", "v0.8", "v1.x", "v1.6.", "v1..6", "1.6.0.1", "latest", "v+1.6", "''",
        ] {
            let e = refused(&format!(
                "settings:\n  gatewayApi:\n    channel: standard\n    version: '{v}'\n"
            ));
            assert!(e.starts_with("p.yaml:4: settings.gatewayApi.version"), "{v}: {e}");
        }
        for c in ["Standard", "beta", "''"] {
            let e = refused(&format!(
                "settings:\n  gatewayApi:\n    version: v1.6\n    channel: {c}\n"
            ));
            assert!(e.starts_with("p.yaml:4: settings.gatewayApi.channel"), "{c}: {e}");
            assert!(e.contains("standard or experimental"), "{e}");
        }
        // Unquoted, YAML reads 1.5 as a number: refused with a hint, never read as "1.5" by luck.
        let e = refused("settings:\n  gatewayApi: {version: 1.50}\n");
        assert!(e.contains("p.yaml:2") && e.contains("quote the value"), "{e}");
    }

    #[test]
    fn rule_ids_are_checked_with_their_line() {
        let e = refused("settings:\n  neverWaive:\n  - image-pinned\n  - image-pined\n");
        assert!(
            e.starts_with("p.yaml:4: settings.neverWaive names unknown rule `image-pined`"),
            "{e}"
        );
        let e = refused("severity:\n  image-pinned: warning\n  no-such-rule: error\n");
        assert!(
            e.starts_with("p.yaml:3: `severity` names unknown rule `no-such-rule`"),
            "{e}"
        );
        let e = refused(
            "waivers:\n- {rule: image-pinned, target: {environment: d}, reason: r, expires: 2027-01-01}\n\
             - {rule: imagepinned, target: {environment: d}, reason: r, expires: 2027-01-01}\n",
        );
        assert!(
            e.starts_with("p.yaml:3: waiver #2 names unknown rule `imagepinned`"),
            "{e}"
        );
        let p = parse("settings: {neverWaive: [image-pinned]}\n");
        assert_eq!(p.settings.never_waive, vec!["image-pinned".to_string()]);
    }

    #[test]
    fn waivers_keep_their_index_line_and_fields() {
        let p = parse(
            "version: 1\n\
             waivers:\n\
             # a comment\n\
             - rule: image-pinned\n\
             \x20 target: {environment: default, release: nvcf/router, kind: Job, namespace: ns, name: j}\n\
             \x20 reason: upstream has no digest yet\n\
             \x20 expires: 2027-01-31\n\
             - {rule: object-one-owner, target: {name: x}, reason: r2, expires: '2026-12-01'}\n",
        );
        assert_eq!(p.waivers.len(), 2);
        let w = &p.waivers[0];
        assert_eq!((w.index, w.line, w.rule.as_str()), (1, Some(4), "image-pinned"));
        assert_eq!(
            w.target,
            Target {
                environment: Some("default".into()),
                release: Some("nvcf/router".into()),
                kind: Some("Job".into()),
                namespace: Some("ns".into()),
                name: Some("j".into()),
            }
        );
        assert_eq!(w.reason, "upstream has no digest yet");
        assert_eq!(w.expires, time::macros::date!(2027 - 01 - 31));
        let w = &p.waivers[1];
        assert_eq!((w.index, w.line), (2, Some(8)));
        assert_eq!(w.expires, time::macros::date!(2026 - 12 - 01));
        // A waiver written through a merge key keeps the line of its list item.
        let p = parse(
            "waivers:\n\
             - &w {rule: image-pinned, target: {environment: a}, reason: r, expires: 2027-01-01}\n\
             - <<: *w\n\
             \x20 target: {environment: b}\n",
        );
        assert_eq!(p.waivers[1].target.environment.as_deref(), Some("b"));
        assert_eq!(p.waivers[1].rule, "image-pinned");
        assert_eq!((p.waivers[1].index, p.waivers[1].line), (2, Some(3)));
    }

    #[test]
    fn incomplete_waivers_are_refused_at_their_line() {
        let ok = "- {rule: image-pinned, target: {environment: d}, reason: r, expires: 2027-01-01}\n";
        for (bad, want) in [
            (
                "{rule: ' ', target: {environment: d}, reason: r, expires: 2027-01-01}",
                "waiver #2 has no `rule`",
            ),
            (
                "{target: {environment: d}, reason: r, expires: 2027-01-01}",
                "waiver #2 has no `rule`",
            ),
            (
                "{rule: image-pinned, reason: r, expires: 2027-01-01}",
                "waiver #2 (image-pinned) has no `target`",
            ),
            (
                "{rule: image-pinned, target: {}, reason: r, expires: 2027-01-01}",
                "has an empty `target`",
            ),
            (
                "{rule: image-pinned, target: {name: x}, reason: ' ', expires: 2027-01-01}",
                "has no `reason`",
            ),
            // Zero-width spaces, a word joiner and a byte order mark: invisible, not words.
            (
                "{rule: image-pinned, target: {name: x}, reason: \"\\u200B\\u200B\\u2060\\uFEFF\", expires: 2027-01-01}",
                "its `reason` has no words",
            ),
            (
                "{rule: image-pinned, target: {name: x}, reason: '...', expires: 2027-01-01}",
                "its `reason` has no words",
            ),
            ("{rule: image-pinned, target: {name: x}, reason: r}", "has no `expires`"),
        ] {
            let e = refused(&format!("waivers:\n{ok}- {bad}\n"));
            assert!(e.starts_with("p.yaml:3: ") && e.contains(want), "{bad}: {e}");
        }
        let e = refused(&format!(
            "waivers:\n{ok}- rule: image-pinned\n  target: {{name: x}}\n  reason: r\n  expires: soon\n"
        ));
        assert!(
            e.starts_with("p.yaml:6: waiver #2 (image-pinned): `expires` (soon) is not a date"),
            "{e}"
        );
        let e = refused(&format!(
            "waivers:\n{ok}- {{rule: image-pinned, target: {{name: x}}, reason: r, expires: 20270101}}\n"
        ));
        assert!(e.contains("`expires` (20270101) is not a date"), "{e}");
        let e = refused(&format!(
            "waivers:\n{ok}- {{rule: image-pinned, target: {{nmae: x}}, reason: r, expires: 2027-01-01}}\n"
        ));
        assert!(
            e.starts_with("p.yaml:3: `waivers[1].target.nmae`: unknown field `nmae`"),
            "{e}"
        );
    }

    #[test]
    fn version_other_than_one_is_refused() {
        assert!(parse("version: 1\n").waivers.is_empty());
        let e = refused("# policy\nversion: 2\n");
        assert!(e.starts_with("p.yaml:2: unsupported policy version 2"), "{e}");
    }

    #[test]
    fn local_chart_roots_and_lock_file_stay_inside_the_repository() {
        let p = parse("settings: {localChartRoots: [charts/, vendor/charts], lockFile: locks/charts.lock.yaml}\n");
        assert_eq!(
            p.settings.local_chart_roots,
            vec!["charts/".to_string(), "vendor/charts".into()]
        );
        assert_eq!(p.settings.lock_file, "locks/charts.lock.yaml");
        assert_eq!(
            parse("settings: {localChartRoots: [a..b/]}\n")
                .settings
                .local_chart_roots,
            vec!["a..b/".to_string()]
        );
        for bad in ["''", "/abs/charts", "charts/../..", ".."] {
            let e = refused(&format!("settings:\n  localChartRoots:\n  - charts/\n  - {bad}\n"));
            assert!(e.starts_with("p.yaml:4: settings.localChartRoots entry"), "{bad}: {e}");
            let e = refused(&format!("settings:\n  lockFile: {bad}\n"));
            assert!(e.starts_with("p.yaml:2: settings.lockFile"), "{bad}: {e}");
        }
    }

    #[test]
    fn severity_may_raise_anything_and_lower_neither_never_waived_rules_nor_findings_about_the_policy() {
        let p = parse("severity: {insecure-flag: error, policy-allows-any: error, image-pinned: warning, object-one-owner: allow}\n");
        assert_eq!(p.severity.get("insecure-flag"), Some(&Level::Error));
        assert_eq!(p.severity.get("image-pinned"), Some(&Level::Warning));
        assert_eq!(p.severity.get("object-one-owner"), Some(&Level::Allow));
        for (rule, level) in [("insecure-flag", "warning"), ("private-key-in-render", "allow")] {
            let e = refused(&format!("severity:\n  image-pinned: warning\n  {rule}: {level}\n"));
            assert!(
                e.starts_with(&format!(
                    "p.yaml:3: `severity` lowers `{rule}`, which may never be waived"
                )),
                "{e}"
            );
        }
        let e = refused("settings: {neverWaive: [image-pinned]}\nseverity: {image-pinned: warning}\n");
        assert!(
            e.contains("`severity` lowers `image-pinned`, which may never be waived"),
            "{e}"
        );
        for rule in ["policy-allows-any", "waiver-expired", "waiver-unused"] {
            let e = refused(&format!("severity:\n  {rule}: allow\n"));
            assert!(
                e.starts_with(&format!(
                    "p.yaml:2: `severity` lowers `{rule}`, which reports on this policy itself"
                )),
                "{e}"
            );
        }
        let e = refused("severity: {image-pinned: off}\n");
        assert!(e.contains("`severity.image-pinned`"), "{e}");
    }

    #[test]
    fn externals_apply_to_their_environments_and_become_documents() {
        let p = parse(
            "externals:\n\
             - {apiVersion: cert-manager.io/v1, kind: ClusterIssuer, name: customer-ca, environments: [a, b]}\n\
             - apiVersion: v1\n\
             \x20 kind: Secret\n\
             \x20 namespace: nvcf\n\
             \x20 name: router-tls\n\
             \x20 type: kubernetes.io/tls\n\
             \x20 spec: {x: 1}\n\
             \x20 data: {tls.crt: abc}\n",
        );
        let names = |env: &str| p.externals_for(env).map(|e| e.name.clone()).collect::<Vec<_>>();
        assert_eq!(names("a"), ["customer-ca", "router-tls"]);
        assert_eq!(names("b"), ["customer-ca", "router-tls"]);
        assert_eq!(names("c"), ["router-tls"], "no environments: all");
        assert_eq!(
            p.externals[0].to_value(),
            serde_json::json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "customer-ca"}})
        );
        assert_eq!(
            p.externals[1].to_value(),
            serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "router-tls", "namespace": "nvcf"},
                               "type": "kubernetes.io/tls", "spec": {"x": 1}, "data": {"tls.crt": "abc"}})
        );
        let mut g = crate::graph::Graph::new("c", Vec::new());
        p.add_externals(&mut g);
        assert_eq!(g.objects.len(), 1);
        let o = &g.objects[0];
        assert!(o.prov.external);
        assert_eq!(
            (o.prov.environment.as_str(), o.prov.file.as_deref()),
            ("c", Some("p.yaml"))
        );
        assert_eq!((o.kind.as_str(), o.name.as_str()), ("Secret", "router-tls"));
    }

    #[test]
    fn merge_keys_and_anchors_apply_as_for_manifests() {
        let p = parse(
            "settings:\n  allowedImageRegistries: &regs [nvcr.io, quay.io]\n  allowedChartRepositories: *regs\n\
             externals:\n\
             - &gw {apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, namespace: nvcf, name: gw}\n\
             - <<: *gw\n\
             \x20 name: gw2\n",
        );
        assert_eq!(p.settings.allowed_chart_repositories, ["nvcr.io", "quay.io"]);
        assert_eq!(p.externals[1].name, "gw2");
        assert_eq!(p.externals[1].kind, "Gateway");
        assert_eq!(p.externals[1].namespace.as_deref(), Some("nvcf"));
        // YAML 1.1 as helm reads it: `yes` is a boolean, so it is not a reason.
        let e = refused("settings:\n  plaintextAllowed: [{host: a, reason: yes}]\n");
        assert!(
            e.contains("p.yaml:2") && e.contains("invalid type: boolean `true`"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_keys_multiple_documents_and_non_mappings_are_refused() {
        let e = refused("settings:\n  allowedImageRegistries: [nvcr.io]\nwaivers: []\nwaivers: []\n");
        assert!(
            e.contains("key `waivers` is written twice in one mapping (lines 3 and 4)"),
            "{e}"
        );
        let e = refused("settings: {allowedImageRegistries: [a], allowedImageRegistries: ['*']}\n");
        assert!(e.contains("key `allowedImageRegistries` is written twice"), "{e}");
        let e = refused("version: 1\n---\nversion: 1\n");
        assert!(e.contains("expected one YAML document, found 2"), "{e}");
        let e = refused("- a\n");
        assert_eq!(e, "p.yaml: not a mapping at the top level");
        let e = refused("a: [1\n");
        assert!(e.starts_with("p.yaml: not a valid policy"), "{e}");
        let e = refused("version: 1\nwaiver: []\n");
        assert!(
            e.starts_with("p.yaml:2: ") && e.contains("unknown field `waiver`"),
            "{e}"
        );
    }

    #[test]
    fn the_key_scan_and_the_settings_come_from_one_parse() {
        let key = "-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBMHcCAQEEIB\\n-----END EC PRIVATE KEY-----\\n";
        let p = parse(&format!(
            "externals:\n- {{apiVersion: v1, kind: Secret, name: s, data: {{tls.key: \"{key}\"}}}}\n"
        ));
        assert_eq!(
            p.key_places,
            vec![("externals[0].data.tls.key".to_string(), "a PEM private key block")]
        );
        // What the reader refuses is refused whole: never a policy whose key scan found nothing.
        let e = refused(&format!(
            "externals:\n- {{apiVersion: v1, kind: Secret, name: s, data: {{tls.key: \"{key}\", weight: .inf}}}}\n"
        ));
        assert!(e.contains("infinity or NaN") && !e.contains("MHcC"), "{e}");
    }

    #[test]
    fn errors_never_echo_key_like_values_and_cap_the_rest() {
        let pem = format!("-----BEGIN PRIVATE KEY----- {}", "Q".repeat(3000));
        let token = "hvs.CAESIJm1x2y3z4A5b6C7d8E9f0G1h2I3j4K5l6M7n8O9p0";
        let long = "x".repeat(3000);
        let cases = [
            format!("settings:\n  lockFile: \"/{pem}\"\n"),
            format!("settings:\n  lockFile: \"/{token}\"\n"),
            format!("settings:\n  localChartRoots: [\"/{pem}\"]\n"),
            format!("settings:\n  plaintextAllowed: [{{host: \"{pem}\", reason: ''}}]\n"),
            format!("settings:\n  plaintextAllowed: [{{host: \"{long}\", reason: ''}}]\n"),
            format!("settings:\n  gatewayApi: {{version: \"{pem}\"}}\n"),
            format!("settings:\n  gatewayApi: {{channel: \"{long}\"}}\n"),
            format!("settings:\n  neverWaive: [\"{pem}\"]\n"),
            format!("settings:\n  requireSchemas: [\"a/{long}/\"]\n"),
            format!("severity: {{\"{pem}\": error}}\n"),
            format!("version: \"{pem}\"\n"),
            format!("waivers:\n- {{rule: \"{token}\", target: {{name: x}}, reason: r, expires: 2027-01-01}}\n"),
            format!("waivers:\n- {{rule: image-pinned, target: {{name: x}}, reason: r, expires: \"{pem}\"}}\n"),
            format!("externals: \"{pem}\"\n"),
            format!("\"{pem}\": 1\n"),
        ];
        for text in &cases {
            let e = refused(text);
            assert!(!e.contains("QQQQ") && !e.contains("CAESIJm1"), "{e}");
            assert!(e.len() < 500, "{} bytes: {e}", e.len());
            assert!(!e.contains(&"x".repeat(61)), "{e}");
        }
        // Short ordinary values are shown, so the message helps.
        let e = refused("settings:\n  lockFile: ../charts.lock.yaml\n");
        assert!(e.contains("`../charts.lock.yaml`"), "{e}");
    }

    #[test]
    fn load_reads_the_file_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("validator-policy.yaml");
        std::fs::write(&path, "settings: {allowedImageRegistries: [nvcr.io]}\n").unwrap();
        let p = Policy::load(&path, "shown.yaml", crate::testkit::family_of).unwrap();
        assert_eq!(p.file.as_deref(), Some("shown.yaml"));
        assert_eq!(p.settings.allowed_image_registries, ["nvcr.io"]);
        let e = Policy::load(&dir.path().join("nope.yaml"), "nope.yaml", crate::testkit::family_of).unwrap_err();
        assert!(format!("{e:#}").contains("cannot read policy file nope.yaml"), "{e:#}");
    }
}
