//! Schemas for rendered objects: the Kubernetes OpenAPI schema of one Kubernetes version, the
//! CRDs the policy declares (`settings.crdFiles`) and the CRDs an environment renders.
//!
//! The Kubernetes schemas are JSON Schema (draft 2020-12, strict) files installed by `ci/setup`
//! into `.tools/schemas/kubernetes/v<major.minor>/_definitions.json` (from the pinned
//! `kubernetes-validate` wheel). They are parsed once per run; each kind's validator is compiled
//! once per run (on first use) with the `jsonschema` crate and shared by every environment.
//!
//! The supported minors (`KUBE_SCHEMA_EMBED` in `ci/tools.lock`) are built into the binary
//! (`builtin`), so a copied binary validates anywhere. `$NVCF_SCHEMAS` (a directory laid out like
//! `.tools/schemas`) overrides them. Another minor is read from an installed directory:
//! `$NVCF_SCHEMAS`, then `.tools/schemas` in the start directory (the state's, or the working
//! directory for `--manifests`) or any parent, then `.tools/schemas` above the `nvcf-validate`
//! executable.

pub mod builtin;
pub mod crd;
pub mod removed;

use crate::graph::{group_of, Graph, Object};
use crate::policy::Policy;
use anyhow::{bail, Context, Result};
use crd::CrdVersion;
use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Kubernetes minor validated against when the policy names none: the oldest minor the
/// Kubernetes project still supports when this was written (1.35, 1.36, 1.37), so a field only
/// newer servers know is reported.
pub const DEFAULT_KUBERNETES_VERSION: &str = "1.35";

/// The `$id` of the Kubernetes definitions document.
const DEFS_URI: &str = "https://kubernetes.io/api/_definitions.json";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// At most this many problems are reported per object (the rest are counted).
pub const MAX_ISSUES_PER_OBJECT: usize = 20;

/// A compiled validator, or why the schema could not be compiled.
pub type Compiled = Arc<Result<Validator, String>>;

/// Every schema of one run.
pub struct SchemaSet {
    /// `1.35`.
    pub kubernetes_version: String,
    /// The definitions file (for messages).
    pub defs_file: PathBuf,
    registry: jsonschema::Registry<'static>,
    /// `(group, version, kind)` → definition name.
    builtin: HashMap<(String, String, String), String>,
    /// CRDs from the policy's `settings.crdFiles`.
    declared: Vec<CrdVersion>,
    cache: Mutex<HashMap<String, Compiled>>,
}

impl std::fmt::Debug for SchemaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaSet")
            .field("kubernetes_version", &self.kubernetes_version)
            .field("kinds", &self.builtin.len())
            .field("declared_crds", &self.declared.len())
            .finish()
    }
}

/// Which schema an object is validated against.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    Kubernetes(&'a str),
    Crd(&'a CrdVersion),
}

/// One problem in one object: where (path segments) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub path: Vec<Segment>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// Per environment: which kinds had no schema (report coverage).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    pub kubernetes_version: String,
    /// Objects that have a schema (validated).
    pub validated: usize,
    pub without_schema: Vec<KindCount>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KindCount {
    pub api_version: String,
    pub kind: String,
    pub objects: usize,
}

/// `v1.35.2` / `1.35` → `1.35`.
pub fn normalise_version(v: &str) -> Option<String> {
    let v = v.trim().trim_start_matches('v');
    let mut it = v.split('.');
    let major: u32 = it.next()?.parse().ok()?;
    let minor: u32 = it.next()?.parse().ok()?;
    Some(format!("{major}.{minor}"))
}

/// The installed schema directory (`.tools/schemas`), see the module docs.
pub fn locate(start: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCF_SCHEMAS").map(PathBuf::from) {
        return Some(p);
    }
    let above = |dir: &Path| {
        dir.ancestors()
            .map(|d| d.join(".tools/schemas"))
            .find(|p| p.join("kubernetes").is_dir())
    };
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    above(&start).or_else(|| {
        let exe = std::env::current_exe().ok()?;
        above(exe.parent()?)
    })
}

/// The definitions of `version` from an installed schema directory (`locate`): its text and path.
fn read_installed(version: &str, start: &Path) -> Result<(String, PathBuf)> {
    let built_in = builtin::versions().join(", ");
    let Some(dir) = locate(start) else {
        bail!(
            "schema-valid: no schemas for Kubernetes {version}: not built into this binary (built in: {built_in}) and \
             none installed (looked in $NVCF_SCHEMAS, .tools/schemas above {} and above the nvcf-validate binary); set \
             settings.kubernetesVersion to a built-in version, run ./ci/setup to install the pinned schemas, or pass \
             -A schema-valid to skip schema validation",
            start.display()
        );
    };
    let defs_file = dir
        .join("kubernetes")
        .join(format!("v{version}"))
        .join("_definitions.json");
    if !defs_file.is_file() {
        let installed: Vec<String> = std::fs::read_dir(dir.join("kubernetes"))
            .map(|rd| {
                let mut v: Vec<String> = rd
                    .flatten()
                    .filter(|e| e.path().join("_definitions.json").is_file())
                    .map(|e| e.file_name().to_string_lossy().trim_start_matches('v').to_string())
                    .collect();
                v.sort();
                v
            })
            .unwrap_or_default();
        bail!(
            "schema-valid: no schemas for Kubernetes {version} in {} (installed: {}; built into this binary: \
             {built_in}{}); set settings.kubernetesVersion to an installed version, or add it to KUBE_SCHEMA_VERSIONS \
             in ci/tools.lock and run ./ci/setup",
            dir.display(),
            if installed.is_empty() {
                "none".to_string()
            } else {
                installed.join(", ")
            },
            if std::env::var_os("NVCF_SCHEMAS").is_some() {
                ", overridden by $NVCF_SCHEMAS"
            } else {
                ""
            }
        );
    }
    let text = std::fs::read_to_string(&defs_file)
        .with_context(|| format!("cannot read Kubernetes schemas {}", defs_file.display()))?;
    Ok((text, defs_file))
}

impl SchemaSet {
    /// What a cluster of this Kubernetes version with the policy's CRDs reports as served, in
    /// helm's `--api-versions` forms: `group/version` (`v1` for the core group) and
    /// `group/version/Kind`, sorted.
    pub fn api_versions(&self) -> Vec<String> {
        let mut out = std::collections::BTreeSet::new();
        let builtin = self
            .builtin
            .keys()
            .map(|(g, v, k)| (g.as_str(), v.as_str(), k.as_str()));
        let declared = self
            .declared
            .iter()
            .map(|c| (c.group.as_str(), c.version.as_str(), c.kind.as_str()));
        for (g, v, k) in builtin.chain(declared) {
            let gv = if g.is_empty() {
                v.to_string()
            } else {
                format!("{g}/{v}")
            };
            out.insert(format!("{gv}/{k}"));
            out.insert(gv);
        }
        out.into_iter().collect()
    }

    /// Load the Kubernetes schemas of the policy's version and the policy's CRD files.
    pub fn load(policy: &Policy, start: &Path) -> Result<SchemaSet> {
        let wanted = policy
            .settings
            .kubernetes_version
            .as_deref()
            .unwrap_or(DEFAULT_KUBERNETES_VERSION);
        let version = normalise_version(wanted).with_context(|| {
            format!("policy settings.kubernetesVersion `{wanted}` is not a Kubernetes version like `1.35`")
        })?;
        // $NVCF_SCHEMAS overrides the built-in schemas; without it a built-in minor is used as is,
        // and any other minor is looked up in an installed .tools/schemas.
        let overridden = std::env::var_os("NVCF_SCHEMAS").is_some();
        let (text, defs_file) = match builtin::definitions(&version).filter(|_| !overridden) {
            Some(text) => (
                text,
                PathBuf::from(format!("(built in) kubernetes/v{version}/_definitions.json")),
            ),
            None => read_installed(&version, start)?,
        };
        let defs: Value = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not JSON; run ./ci/setup to reinstall the schemas",
                defs_file.display()
            )
        })?;
        let mut builtin = HashMap::new();
        for (name, def) in defs.get("$defs").and_then(Value::as_object).into_iter().flatten() {
            for gvk in def
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let s = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                builtin.insert((s("group"), s("version"), s("kind")), name.clone());
            }
        }
        if builtin.is_empty() {
            bail!(
                "{}: no Kubernetes kinds in it; run ./ci/setup to reinstall the schemas",
                defs_file.display()
            );
        }
        let registry = jsonschema::Registry::new()
            .add(DEFS_URI, jsonschema::Resource::from_contents(defs))
            .and_then(|b| b.prepare())
            .map_err(|e| anyhow::anyhow!("{}: {e}", defs_file.display()))?;
        let declared = load_crd_files(policy)?;
        Ok(SchemaSet {
            kubernetes_version: version,
            defs_file,
            registry,
            builtin,
            declared,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The schemas of one environment: these plus the CRDs it renders.
    pub fn for_graph<'a>(&'a self, graph: &Graph) -> EnvSchemas<'a> {
        let mut rendered = Vec::new();
        let mut problems = Vec::new();
        for (i, o) in graph.objects.iter().enumerate() {
            if o.kind == "CustomResourceDefinition" && o.api_version == "apiextensions.k8s.io/v1" {
                match crd::versions(&o.body, &format!("CRD {} (rendered)", o.name), &object_meta_uri()) {
                    Ok(v) => rendered.extend(v),
                    Err(e) => problems.push((i, e)),
                }
            }
        }
        EnvSchemas {
            set: self,
            rendered,
            problems,
        }
    }

    fn compile(&self, key: String, schema: impl FnOnce() -> Value) -> Compiled {
        if let Some(c) = self.cache.lock().expect("schema cache lock").get(&key) {
            return c.clone();
        }
        let built = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .with_registry(&self.registry)
            .build(&schema())
            .map_err(|e| e.to_string());
        let c: Compiled = Arc::new(built);
        self.cache.lock().expect("schema cache lock").insert(key, c.clone());
        c
    }
}

fn object_meta_uri() -> String {
    format!("{DEFS_URI}#/$defs/{OBJECT_META}")
}

/// CRDs from `settings.crdFiles` (paths relative to the policy file). A file may hold several
/// documents and `kind: List` exports (`kubectl get crd … -o yaml`).
fn load_crd_files(policy: &Policy) -> Result<Vec<CrdVersion>> {
    let base = policy
        .file
        .as_deref()
        .and_then(|f| Path::new(f).parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in &policy.settings.crd_files {
        let path = base.join(f);
        let shown = path.display().to_string();
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("policy settings.crdFiles: cannot read {shown}"))?;
        let docs = crate::yaml::documents(&text).with_context(|| format!("settings.crdFiles: {shown} is not YAML"))?;
        let mut found = 0;
        for d in docs {
            let items: Vec<&Value> = if d.value.get("kind").and_then(Value::as_str) == Some("List") {
                d.value
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .collect()
            } else {
                vec![&d.value]
            };
            for item in items {
                if item.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
                    || item.get("apiVersion").and_then(Value::as_str) != Some("apiextensions.k8s.io/v1")
                {
                    bail!(
                        "settings.crdFiles: {shown} (document at line {}) is not an apiextensions.k8s.io/v1 \
                         CustomResourceDefinition; list only CRD files there",
                        d.line
                    );
                }
                let name = item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?");
                let v = crd::versions(item, &format!("{f} (CRD {name})"), &object_meta_uri())
                    .map_err(|e| anyhow::anyhow!("settings.crdFiles: {shown}: {e}"))?;
                found += v.len();
                out.extend(v);
            }
        }
        if found == 0 {
            bail!("settings.crdFiles: {shown} holds no CRD version with a schema");
        }
    }
    Ok(out)
}

/// The schemas one environment's objects are validated against.
pub struct EnvSchemas<'a> {
    set: &'a SchemaSet,
    rendered: Vec<CrdVersion>,
    /// Rendered CRDs that could not be read: (object index, why).
    pub problems: Vec<(usize, String)>,
}

impl<'a> EnvSchemas<'a> {
    pub fn kubernetes_version(&self) -> &str {
        &self.set.kubernetes_version
    }

    /// The schema of an apiVersion/kind: a CRD the environment renders, then a CRD the policy
    /// declares, then the Kubernetes schema.
    pub fn find(&self, api_version: &str, kind: &str) -> Option<Source<'_>> {
        let group = group_of(api_version);
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let crd = |c: &&CrdVersion| c.group == group && c.version == version && c.kind == kind;
        if let Some(c) = self
            .rendered
            .iter()
            .find(crd)
            .or_else(|| self.set.declared.iter().find(crd))
        {
            return Some(Source::Crd(c));
        }
        self.set
            .builtin
            .get_key_value(&(group.to_string(), version.to_string(), kind.to_string()))
            .map(|(_, name)| Source::Kubernetes(name.as_str()))
    }

    /// `Some(versions)` when `api_version` is in a group the Kubernetes API server serves itself
    /// (a built-in group of this version's schema) and no CRD of the environment or the policy
    /// defines `kind` there, yet Kubernetes serves no such version/kind: the API server refuses
    /// the object. `versions`: the group/versions in which it serves `kind` (may be empty).
    pub fn unserved_builtin(&self, api_version: &str, kind: &str) -> Option<Vec<String>> {
        if self.find(api_version, kind).is_some() {
            return None;
        }
        let group = group_of(api_version);
        if !self.set.builtin.keys().any(|(g, _, _)| g == group) {
            return None;
        }
        let mut served: Vec<String> = self
            .set
            .builtin
            .keys()
            .filter(|(g, _, k)| g == group && k == kind)
            .map(|(g, v, _)| if g.is_empty() { v.clone() } else { format!("{g}/{v}") })
            .collect();
        served.sort();
        Some(served)
    }

    /// The compiled validator of a source (compiled once per run).
    pub fn validator(&self, source: Source<'_>) -> Compiled {
        match source {
            Source::Kubernetes(name) => self.set.compile(format!("k8s:{name}"), || {
                json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "$ref": format!("{DEFS_URI}#/$defs/{name}"),
                })
            }),
            Source::Crd(c) => {
                use sha2::Digest;
                let text = serde_json::to_string(&c.schema).unwrap_or_default();
                let key = format!("crd:{}", hex::encode(sha2::Sha256::digest(text.as_bytes())));
                self.set.compile(key, || c.schema.clone())
            }
        }
    }

    /// Kinds without a schema, and how many objects were validated.
    pub fn coverage(&self, graph: &Graph) -> Coverage {
        let mut missing: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        let mut known: HashMap<(&str, &str), bool> = HashMap::new();
        let mut validated = 0;
        for o in graph.objects.iter().filter(|o| !o.prov.external) {
            let has = *known
                .entry((o.api_version.as_str(), o.kind.as_str()))
                .or_insert_with(|| self.find(&o.api_version, &o.kind).is_some());
            if has {
                validated += 1;
            } else {
                *missing.entry((o.api_version.as_str(), o.kind.as_str())).or_default() += 1;
            }
        }
        Coverage {
            kubernetes_version: self.set.kubernetes_version.clone(),
            validated,
            without_schema: missing
                .into_iter()
                .map(|((a, k), n)| KindCount {
                    api_version: a.to_string(),
                    kind: k.to_string(),
                    objects: n,
                })
                .collect(),
        }
    }
}

impl Source<'_> {
    /// For messages: `Kubernetes 1.35 schema` / `CRD certificates.cert-manager.io (rendered)`.
    pub fn describe(&self, kubernetes_version: &str) -> String {
        match self {
            Source::Kubernetes(_) => format!("the Kubernetes {kubernetes_version} schema"),
            Source::Crd(c) => c.origin.clone(),
        }
    }
}

/// Validate one object body. Messages never include the object's values (a Secret's data must
/// not be echoed), only field names and what the schema expects.
pub fn validate(v: &Validator, body: &Value) -> Vec<Issue> {
    if v.is_valid(body) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for e in v.iter_errors(body) {
        let base: Vec<Segment> = e
            .instance_path()
            .iter()
            .map(|s| match s {
                jsonschema::paths::LocationSegment::Property(p) => Segment::Key(p.into_owned()),
                jsonschema::paths::LocationSegment::Index(i) => Segment::Index(i),
            })
            .collect();
        match e.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for k in unexpected {
                    let mut path = base.clone();
                    path.push(Segment::Key(k.clone()));
                    out.push(Issue {
                        path,
                        message: "unknown field".into(),
                    });
                }
            }
            ValidationErrorKind::Required { property } => {
                let mut path = base.clone();
                path.push(Segment::Key(property.as_str().unwrap_or("?").to_string()));
                out.push(Issue {
                    path,
                    message: "missing required field".into(),
                });
            }
            ValidationErrorKind::Type { kind } if yaml11_scalar(kind, e.instance()) => {}
            ValidationErrorKind::Type { kind } => out.push(Issue {
                path: base,
                message: format!("wrong type: expected {}", type_names(kind)),
            }),
            ValidationErrorKind::Enum { options } => out.push(Issue {
                path: base,
                message: format!("value is not one of {options}"),
            }),
            ValidationErrorKind::Pattern { pattern } => out.push(Issue {
                path: base,
                message: format!("value does not match the pattern `{pattern}`"),
            }),
            _ => out.push(Issue {
                path: base,
                message: e.masked().to_string(),
            }),
        }
    }
    out
}

/// When our YAML layer reads YAML 1.2 scalars and the API server's decoder YAML 1.1, an unquoted
/// `0440` is the octal integer 288 and `yes`/`off` are booleans there, strings here. Such a string
/// where the schema wants an integer/boolean is what the API server reads as one, so it is no type
/// error. (A quoted `"0440"` then slips through: the price of not seeing quotes.) Once `yaml.rs`
/// resolves YAML 1.1 scalars itself (checked once, at run time), this leniency is off.
fn yaml11_scalar(kind: &jsonschema::error::TypeKind, instance: &Value) -> bool {
    use jsonschema::error::TypeKind;
    use jsonschema::JsonType;
    static YAML12: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let yaml12 = *YAML12.get_or_init(|| crate::yaml::value("a: 0440").is_ok_and(|v| v["a"].is_string()));
    let Some(s) = instance.as_str().filter(|_| yaml12) else {
        return false;
    };
    let wants = |t: JsonType| match kind {
        TypeKind::Single(x) => *x == t,
        TypeKind::Multiple(ts) => ts.contains(t),
    };
    let octal = s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| (b'0'..=b'7').contains(&b));
    let boolean = matches!(
        s,
        "yes" | "Yes" | "YES" | "no" | "No" | "NO" | "on" | "On" | "ON" | "off" | "Off" | "OFF" | "y" | "Y" | "n" | "N"
    );
    (octal && wants(JsonType::Integer)) || (boolean && wants(JsonType::Boolean))
}

fn type_names(kind: &jsonschema::error::TypeKind) -> String {
    use jsonschema::error::TypeKind;
    let names: Vec<String> = match kind {
        TypeKind::Single(t) => vec![t.to_string()],
        TypeKind::Multiple(ts) => ts.iter().map(|t| t.to_string()).filter(|t| t != "null").collect(),
    };
    names.join(" or ")
}

/// `spec.ports[0].protocl`.
pub fn display_path(path: &[Segment]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Segment::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Segment::Index(i) => {
                s.push_str(&format!("[{i}]"));
            }
        }
    }
    if s.is_empty() {
        "(object)".into()
    } else {
        s
    }
}

/// The template line of a path: each key is searched as `key:` after the previous one's line.
pub fn line_of(obj: &Object, path: &[Segment]) -> Option<usize> {
    let keys: Vec<String> = path
        .iter()
        .filter_map(|s| match s {
            Segment::Key(k) => Some(format!("{k}:")),
            Segment::Index(_) => None,
        })
        .collect();
    if keys.is_empty() {
        return obj.prov.line;
    }
    obj.line_of_path(&keys, |line, needle| {
        let t = line.trim_start().trim_start_matches("- ").trim_start();
        t.starts_with(needle) || t.starts_with(&format!("\"{}\":", needle.trim_end_matches(':')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_normalise() {
        assert_eq!(normalise_version("v1.35.2").as_deref(), Some("1.35"));
        assert_eq!(normalise_version("1.33").as_deref(), Some("1.33"));
        assert_eq!(normalise_version("latest"), None);
    }

    /// The installed Kubernetes schemas (./ci/setup), found from the crate directory.
    fn installed() -> SchemaSet {
        SchemaSet::load(&Policy::default(), Path::new(env!("CARGO_MANIFEST_DIR")))
            .expect("Kubernetes schemas installed by ./ci/setup")
    }

    #[test]
    fn messages_name_fields_never_values() {
        let set = installed();
        let g = crate::testkit::graph(
            "t",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\n\
             data:\n  tls.key: [\"-----BEGIN PRIVATE KEY-----MIIEv\"]\nstringDat: {a: b}\n",
        );
        let env = set.for_graph(&g);
        let src = env.find("v1", "Secret").expect("Secret has a schema");
        let v = env.validator(src);
        let issues = validate(v.as_ref().as_ref().unwrap(), &g.objects[0].body);
        let shown: Vec<String> = issues
            .iter()
            .map(|i| format!("{}: {}", display_path(&i.path), i.message))
            .collect();
        assert!(
            shown.contains(&"data.tls.key: wrong type: expected string".to_string()),
            "{shown:?}"
        );
        assert!(shown.contains(&"stringDat: unknown field".to_string()), "{shown:?}");
        assert!(!shown.concat().contains("PRIVATE"), "a value was echoed: {shown:?}");
    }

    #[test]
    fn kinds_resolve_by_group_version_and_kind() {
        let set = installed();
        let g = Graph::new("t", Vec::new());
        let env = set.for_graph(&g);
        assert!(matches!(
            env.find("apps/v1", "StatefulSet"),
            Some(Source::Kubernetes(_))
        ));
        assert!(env.find("apps/v1beta1", "StatefulSet").is_none(), "not served by 1.35");
        assert!(env.find("cert-manager.io/v1", "Certificate").is_none());
        // One compiled validator per kind per run.
        let a = env.validator(env.find("v1", "Service").unwrap());
        let b = env.validator(env.find("v1", "Service").unwrap());
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn paths_display_like_kubectl() {
        let p = vec![
            Segment::Key("spec".into()),
            Segment::Key("ports".into()),
            Segment::Index(0),
            Segment::Key("protocl".into()),
        ];
        assert_eq!(display_path(&p), "spec.ports[0].protocl");
    }
}
