//! The rendered objects of one environment, with provenance, indexed by group/kind/namespace/name.
//!
//! Rendering and parsing happen once (see `render`); rules only read this graph.

pub mod kinds;
pub mod services;
pub mod volumes;

use serde_json::Value;
use std::collections::BTreeMap;

use crate::render::Provenance;

/// One Kubernetes object.
#[derive(Debug, Clone)]
pub struct Object {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// The whole document.
    pub body: Value,
    pub prov: Provenance,
    /// The containers a CustomResourceDefinition of the graph types as such for this object's
    /// kind (JSON pointer, list name: `crate::pod_shape::at_schema_paths`); None when no schema is
    /// at hand. Set by [`Graph::push`].
    pub schema_containers: Option<Vec<(String, &'static str)>>,
    /// Those of [`Object::schema_containers`] whose list the schema says holds patches merged by
    /// name into the operator's own containers (`crate::pod_shape::schema_patch_paths`): JSON
    /// pointers. Set by [`Graph::push`].
    pub schema_patches: Vec<String>,
    /// Where the body holds pod specs and containers by shape (`crate::pod_shape::places`),
    /// found on first use and kept: several rules ask for every object's containers, and the
    /// body, read once by `from_value`, never changes.
    places: std::sync::OnceLock<crate::pod_shape::Places>,
    /// The pod spec patches the body holds as text (`crate::pod_shape::spec_patches`: an Argo
    /// `podSpecPatch`, any string of that shape), read on first use and kept; their containers
    /// are among [`Object::containers`].
    spec_patches: std::sync::OnceLock<Vec<crate::pod_shape::SpecPatch>>,
}

/// Identity of an object: group (empty for core), kind, namespace (None if cluster-scoped), name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjKey {
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = if self.group.is_empty() {
            String::new()
        } else {
            format!(".{}", self.group)
        };
        match &self.namespace {
            Some(ns) => write!(f, "{}{g} {ns}/{}", self.kind, self.name),
            None => write!(f, "{}{g} {}", self.kind, self.name),
        }
    }
}

/// The API group of an apiVersion (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    match api_version.rsplit_once('/') {
        Some((g, _)) => g,
        None => "",
    }
}

impl Object {
    /// Build an object from a parsed document. Returns `None` for documents that are not
    /// Kubernetes objects (no kind / name). `default_ns` is the release namespace.
    pub fn from_value(body: Value, default_ns: Option<&str>, prov: Provenance) -> Option<Object> {
        let api_version = body.get("apiVersion")?.as_str()?.to_string();
        let kind = body.get("kind")?.as_str()?.to_string();
        let meta = body.get("metadata")?;
        let name = meta.get("name")?.as_str()?.to_string();
        // Built-in cluster-scoped kinds never get a namespace; custom kinds get theirs from their
        // CustomResourceDefinition, placed later by the engine (the `scope` module).
        let namespace = if kinds::builtin(group_of(&api_version), &kind) == Some(true) {
            None
        } else {
            meta.get("namespace")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| default_ns.map(str::to_string))
        };
        Some(Object {
            api_version,
            kind,
            namespace,
            name,
            body,
            prov,
            schema_containers: None,
            schema_patches: Vec::new(),
            places: std::sync::OnceLock::new(),
            spec_patches: std::sync::OnceLock::new(),
        })
    }

    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    pub fn key(&self) -> ObjKey {
        ObjKey {
            group: self.group().to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// `kind namespace/name` for messages.
    pub fn display(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// JSON-pointer lookup in the body (`/spec/template/spec`).
    pub fn at(&self, pointer: &str) -> Option<&Value> {
        self.body.pointer(pointer)
    }

    /// String at a JSON pointer.
    pub fn str_at(&self, pointer: &str) -> Option<&str> {
        self.at(pointer).and_then(Value::as_str)
    }

    pub fn annotations(&self) -> Option<&serde_json::Map<String, Value>> {
        self.at("/metadata/annotations").and_then(Value::as_object)
    }

    /// Kinds that hold data, not workloads: text in a ConfigMap or Secret and the schema of a
    /// CRD may look like containers but run nothing.
    fn holds_no_pods(&self) -> bool {
        matches!(self.kind.as_str(), "ConfigMap" | "Secret" | "CustomResourceDefinition")
    }

    /// Whether the kind keeps its pod template where Kubernetes' workload kinds do.
    fn builtin_workload(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "Pod"
                | "CronJob"
                | "Deployment"
                | "StatefulSet"
                | "DaemonSet"
                | "ReplicaSet"
                | "Job"
                | "ReplicationController"
        )
    }

    /// The pod spec of a workload: where the built-in kinds keep it, and for any other kind
    /// (Argo Rollouts, KEDA ScaledJob, Knative, a CRD nobody here knows) the first value of pod
    /// spec shape (`crate::pod_shape`). An object may hold several ([`Object::pod_specs`]); a
    /// container's own is [`Object::pod_spec_of`].
    pub fn pod_spec(&self) -> Option<&Value> {
        match self.kind.as_str() {
            "Pod" => self.at("/spec"),
            "CronJob" => self.at("/spec/jobTemplate/spec/template/spec"),
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "ReplicationController" => {
                self.at("/spec/template/spec")
            }
            _ => self.pod_specs().into_iter().next(),
        }
    }

    /// Every pod spec the object holds: the built-in kinds' one, and for any other kind each value
    /// of pod spec shape (an Argo Workflow's templates, a Tekton Pipeline's embedded tasks, …)
    /// and each pod spec whose containers the kind's CRD schema types as containers.
    pub fn pod_specs(&self) -> Vec<&Value> {
        if self.builtin_workload() {
            return self.pod_spec().into_iter().collect();
        }
        if self.holds_no_pods() {
            return Vec::new();
        }
        let mut out: Vec<&Value> = self.found_pod_specs().map(|(_, v)| v).collect();
        for (ptr, _) in self.schema_containers.iter().flatten() {
            // `…/containers/3`: the pod spec is the object holding the list.
            let parts: Vec<&str> = ptr.rsplitn(3, '/').collect();
            if let [_, list, parent] = parts[..] {
                if crate::pod_shape::POD_LISTS.contains(&list) {
                    if let Some(spec) = self.at(parent).filter(|v| v.is_object()) {
                        if !out.iter().any(|s| std::ptr::eq(*s, spec)) {
                            out.push(spec);
                        }
                    }
                }
            }
        }
        out
    }

    /// The pod spec that holds container `c` (by identity: `c` from [`Object::containers`]), else
    /// the object's first ([`Object::pod_spec`]): volumes and the service account a container
    /// sees are its own pod's.
    pub fn pod_spec_of(&self, c: &Value) -> Option<&Value> {
        self.pod_specs()
            .into_iter()
            .find(|spec| {
                crate::pod_shape::POD_LISTS.iter().any(|list| {
                    spec.get(*list)
                        .and_then(Value::as_array)
                        .is_some_and(|items| items.iter().any(|x| std::ptr::eq(x, c)))
                })
            })
            .or_else(|| self.pod_spec())
    }

    /// The pod spec patches the object holds as text (none for the built-in workload kinds and
    /// the kinds that hold data), read once.
    pub fn spec_patches(&self) -> &[crate::pod_shape::SpecPatch] {
        self.spec_patches.get_or_init(|| {
            if self.builtin_workload() || self.holds_no_pods() {
                Vec::new()
            } else {
                crate::pod_shape::spec_patches(&self.body)
            }
        })
    }

    /// Whether container `c` (from [`Object::containers`]) is an entry of a pod spec patch the
    /// object holds as text: merged by name into the container of that name.
    pub fn in_spec_patch(&self, c: &Value) -> bool {
        self.spec_patches().iter().any(|p| {
            let read = p.read.as_ref().ok();
            crate::pod_shape::POD_LISTS.iter().any(|list| {
                read.and_then(|v| v.get(*list))
                    .and_then(Value::as_array)
                    .is_some_and(|items| items.iter().any(|x| std::ptr::eq(x, c)))
            })
        })
    }

    /// The pod spec patches the object holds as text that cannot be read: (JSON pointer, why).
    pub fn unreadable_spec_patches(&self) -> impl Iterator<Item = (&str, &str)> {
        self.spec_patches()
            .iter()
            .filter_map(|p| p.read.as_ref().err().map(|why| (p.ptr.as_str(), why.as_str())))
    }

    /// [`crate::pod_shape::places`] of the body, walked once.
    fn places(&self) -> &crate::pod_shape::Places {
        self.places.get_or_init(|| crate::pod_shape::places(&self.body))
    }

    /// Every value of pod spec shape in the body with its JSON pointer, whatever the kind
    /// (`crate::pod_shape::find`'s pod specs, from the walk kept with the object).
    pub fn found_pod_specs(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.places()
            .pod_specs
            .iter()
            .filter_map(|ptr| self.at(ptr).map(|v| (ptr.as_str(), v)))
    }

    /// Every container the object runs, with the list (or key) that holds it (`containers`,
    /// `initContainers`, `ephemeralContainers`; `steps`, `sidecars`, `container`, `script` in
    /// other kinds): the built-in kinds' pod spec, and for any other kind every pod spec and
    /// container-shaped value found by shape (`crate::pod_shape`), and every value its CRD's
    /// schema types as a container (an operator's container patch without `image` included).
    pub fn containers(&self) -> Vec<(&'static str, &Value)> {
        let mut out = Vec::new();
        if self.builtin_workload() {
            if let Some(spec) = self.pod_spec() {
                for list in crate::pod_shape::POD_LISTS {
                    if let Some(items) = spec.get(list).and_then(Value::as_array) {
                        out.extend(items.iter().map(|c| (list, c)));
                    }
                }
            }
            return out;
        }
        if self.holds_no_pods() {
            return out;
        }
        out = self
            .places()
            .containers
            .iter()
            .filter_map(|(ptr, list)| self.at(ptr).map(|c| (*list, c)))
            .collect();
        for (ptr, label) in self.schema_containers.iter().flatten() {
            if let Some(c) = self.at(ptr) {
                if !out.iter().any(|(_, x)| std::ptr::eq(*x, c)) {
                    out.push((label, c));
                }
            }
        }
        for patch in self.spec_patches() {
            for list in crate::pod_shape::POD_LISTS {
                let items = patch
                    .read
                    .as_ref()
                    .ok()
                    .and_then(|v| v.get(list))
                    .and_then(Value::as_array);
                out.extend(items.into_iter().flatten().map(|c| (crate::pod_shape::PATCH_LABEL, c)));
            }
        }
        out
    }

    /// The best line for a needle (e.g. a flag or a key) in the template source; falls back to
    /// the object's own line. Use it so findings point at the line to edit.
    ///
    /// Searched in order: this object's own document (the `---`-delimited block around its line)
    /// from the object's line on, then from the document's start, then the whole file (a template
    /// may hold several documents). Comment lines never match.
    pub fn line_of(&self, needle: &str) -> Option<usize> {
        self.line_of_path(&[needle], |line, needle| line.contains(needle))
    }

    /// Like `line_of` for a path of needles (`listeners:`, `name: grpc`, `port: 443`): each is
    /// searched after the previous one's line, and the last one found wins. `matches` decides
    /// whether a line holds a needle.
    pub fn line_of_path<S: AsRef<str>>(&self, path: &[S], matches: impl Fn(&str, &str) -> bool) -> Option<usize> {
        let Some(arc) = self.prov.template_text.as_ref() else {
            return self.prov.line;
        };
        let src = SourceLines::of(arc);
        let text: &str = arc;
        let n = src.len();
        let line = |i: usize| src.line(text, i);
        let code = |l: &str| {
            let t = l.trim_start();
            !(t.starts_with('#') || t.starts_with("{{/*") || t.starts_with("{{- /*"))
        };
        let follow = |from: usize, end: usize| {
            let mut hit = None;
            let mut at = from;
            for needle in path {
                match (at..end).find(|&i| code(line(i)) && matches(line(i), needle.as_ref())) {
                    Some(i) => {
                        hit = Some(i + 1);
                        at = i; // flow style keeps several needles on one line
                    }
                    None => break,
                }
            }
            hit
        };
        if let Some(own) = self.prov.line.filter(|l| *l >= 1 && *l <= n) {
            let (start, end) = src.document_around(own - 1);
            if let Some(hit) = follow(own - 1, end).or_else(|| follow(start, end)) {
                return Some(hit);
            }
            // In a file of many documents (a `--manifests` dump), another document's line would be
            // a wrong answer, and searching the whole file for every finding would make the run
            // quadratic: only template-sized files are searched as a whole.
            if src.separators() > WHOLE_FILE_SEARCH_MAX_DOCS {
                return self.prov.line;
            }
        }
        follow(0, n).or(self.prov.line)
    }
}

/// Files with more `---` separators than this are not searched as a whole by `line_of`.
const WHOLE_FILE_SEARCH_MAX_DOCS: usize = 64;

/// The lines of a source text (split at every line break YAML accepts) and its document marker
/// lines, computed once per text and shared by every object that points into it. Found by text,
/// not by the parser, because the text is often a chart template (Go template source, not YAML);
/// libyaml decides document markers by the same column-0 rule.
#[derive(Debug)]
pub struct SourceLines {
    /// Byte range of each line, without its line break.
    ranges: Vec<(usize, usize)>,
    /// 0-based indexes of document marker lines, ascending: every form YAML accepts (`---` or
    /// `...` followed by nothing, a space or a tab: `---\t`, `--- # c`, `--- {…}`), see
    /// `yaml::is_document_marker`.
    seps: Vec<usize>,
}

type LineCache = std::collections::HashMap<usize, (std::sync::Weak<str>, std::sync::Arc<SourceLines>)>;
static LINE_CACHE: std::sync::Mutex<Option<LineCache>> = std::sync::Mutex::new(None);

impl SourceLines {
    pub fn new(text: &str) -> SourceLines {
        let starts = crate::yaml::line_starts(text);
        let mut ranges = Vec::with_capacity(starts.len());
        let mut seps = Vec::new();
        for (i, &s) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(text.len());
            let l = &text[s..end];
            let trimmed = l.trim_end_matches(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']);
            if i + 1 == starts.len() && trimmed.is_empty() && i > 0 {
                break; // the text ends with a line break
            }
            if crate::yaml::is_document_marker(trimmed) {
                seps.push(i);
            }
            ranges.push((s, s + trimmed.len()));
        }
        SourceLines { ranges, seps }
    }

    /// The shared line index of a text (built on first use, reused while the text lives).
    pub fn of(text: &std::sync::Arc<str>) -> std::sync::Arc<SourceLines> {
        let key = text.as_ptr() as usize;
        let mut guard = LINE_CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let cache = guard.get_or_insert_with(Default::default);
        if let Some((weak, lines)) = cache.get(&key) {
            if weak.upgrade().is_some_and(|t| std::sync::Arc::ptr_eq(&t, text)) {
                return lines.clone();
            }
        }
        if cache.len() >= 4096 {
            cache.retain(|_, (w, _)| w.strong_count() > 0);
        }
        let lines = std::sync::Arc::new(SourceLines::new(text));
        cache.insert(key, (std::sync::Arc::downgrade(text), lines.clone()));
        lines
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Line `i` (0-based) of `text`, the text this index was built from.
    pub fn line<'t>(&self, text: &'t str, i: usize) -> &'t str {
        let (s, e) = self.ranges[i];
        &text[s..e]
    }

    pub fn separators(&self) -> usize {
        self.seps.len()
    }

    /// The 0-based line range `[start, end)` of the document holding line `i`: after the previous
    /// separator (a separator with content belongs to its document) up to the next one.
    pub fn document_around(&self, i: usize) -> (usize, usize) {
        let before = self.seps.partition_point(|&s| s < i);
        let start = match (before, self.seps.get(before)) {
            (_, Some(&s)) if s == i => i, // `--- {…}` on the object's own line
            (0, _) => 0,
            (b, _) => self.seps[b - 1] + 1,
        };
        let after = self.seps.partition_point(|&s| s <= i);
        let end = self.seps.get(after).copied().unwrap_or(self.ranges.len());
        (start, end)
    }
}

/// All objects of one environment.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub environment: String,
    pub objects: Vec<Object>,
    index: BTreeMap<ObjKey, Vec<usize>>,
    /// The container paths the graph's CustomResourceDefinitions give each group/kind, in the
    /// order the CRDs were pushed (`crate::pod_shape::schema_container_paths`): kept as CRDs
    /// arrive so that pushing an object looks its kind up instead of scanning every object.
    crd_paths: BTreeMap<(String, String), Vec<Vec<String>>>,
    /// The subset of `crd_paths` whose lists hold patches merged by name
    /// (`crate::pod_shape::schema_patch_paths`).
    crd_patch_paths: BTreeMap<(String, String), Vec<Vec<String>>>,
}

impl Graph {
    pub fn new(environment: impl Into<String>, objects: Vec<Object>) -> Graph {
        let mut g = Graph {
            environment: environment.into(),
            objects: Vec::new(),
            index: BTreeMap::new(),
            crd_paths: BTreeMap::new(),
            crd_patch_paths: BTreeMap::new(),
        };
        for o in objects {
            g.push(o);
        }
        g
    }

    pub fn push(&mut self, mut o: Object) {
        // A CRD's schema locates the containers of its kind's objects, whichever comes first.
        if o.group() == "apiextensions.k8s.io" && o.kind == "CustomResourceDefinition" {
            let (group, kind) = (o.str_at("/spec/group"), o.str_at("/spec/names/kind"));
            let paths = crate::pod_shape::schema_container_paths(&o.body);
            let patches = crate::pod_shape::schema_patch_paths(&o.body);
            if let (Some(group), Some(kind), false) = (group, kind, paths.is_empty()) {
                for obj in self.objects.iter_mut().filter(|x| x.group() == group && x.kind == kind) {
                    let found = crate::pod_shape::at_schema_paths(&obj.body, &paths);
                    obj.schema_containers.get_or_insert_with(Vec::new).extend(found);
                    let merged = crate::pod_shape::at_schema_paths(&obj.body, &patches);
                    obj.schema_patches.extend(merged.into_iter().map(|(p, _)| p));
                }
                let key = (group.to_string(), kind.to_string());
                self.crd_paths.entry(key.clone()).or_default().extend(paths);
                self.crd_patch_paths.entry(key).or_default().extend(patches);
            }
        } else if let Some(paths) = self.crd_paths.get(&(o.group().to_string(), o.kind.clone())) {
            o.schema_containers = Some(crate::pod_shape::at_schema_paths(&o.body, paths));
            if let Some(patches) = self.crd_patch_paths.get(&(o.group().to_string(), o.kind.clone())) {
                let merged = crate::pod_shape::at_schema_paths(&o.body, patches);
                o.schema_patches = merged.into_iter().map(|(p, _)| p).collect();
            }
        }
        self.index.entry(o.key()).or_default().push(self.objects.len());
        self.objects.push(o);
    }

    /// Look an object up. `group` is the API group ("" for core), `namespace` None for
    /// cluster-scoped kinds. Returns the first object with that identity.
    pub fn get(&self, group: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<&Object> {
        self.get_all(group, kind, namespace, name).next()
    }

    /// Every object with that identity (more than one means two writers).
    pub fn get_all<'a>(
        &'a self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> impl Iterator<Item = &'a Object> + 'a {
        let key = ObjKey {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        };
        self.index
            .get(&key)
            .into_iter()
            .flatten()
            .map(move |&i| &self.objects[i])
    }

    /// Objects of a kind (any group) — rules usually filter by kind first.
    pub fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Object> + 'a {
        self.objects.iter().filter(move |o| o.kind == kind)
    }

    /// Objects of a group and kind.
    pub fn of<'a>(&'a self, group: &'a str, kind: &'a str) -> impl Iterator<Item = &'a Object> + 'a {
        self.objects
            .iter()
            .filter(move |o| o.kind == kind && o.group() == group)
    }

    /// Identities rendered more than once, with their objects.
    pub fn duplicates(&self) -> impl Iterator<Item = (&ObjKey, Vec<&Object>)> {
        self.index
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, v)| (k, v.iter().map(|&i| &self.objects[i]).collect()))
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn namespace_defaults_and_cluster_scope() {
        let p = Provenance::default();
        let cm = Object::from_value(
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}),
            Some("nvcf"),
            p.clone(),
        )
        .unwrap();
        assert_eq!(cm.namespace.as_deref(), Some("nvcf"));
        let ci = Object::from_value(
            json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"a","namespace":"x"}}),
            Some("nvcf"),
            p,
        )
        .unwrap();
        assert_eq!(ci.namespace, None);
        let g = Graph::new("e", vec![cm.clone(), ci, cm]);
        assert!(g.get("", "ConfigMap", Some("nvcf"), "a").is_some());
        assert!(g.get("rbac.authorization.k8s.io", "ClusterRole", None, "a").is_some());
        assert_eq!(g.duplicates().count(), 1);
    }
}

#[cfg(test)]
mod line_tests {
    use super::*;
    use serde_json::json;

    /// Object `B` of `text`, its document starting at `line`.
    fn b_at(text: &std::sync::Arc<str>, line: usize) -> Object {
        let prov = Provenance {
            line: Some(line),
            template_text: Some(text.clone()),
            ..Provenance::default()
        };
        Object::from_value(
            json!({"apiVersion":"v1","kind":"B","metadata":{"name":"b"}}),
            None,
            prov,
        )
        .unwrap()
    }

    #[test]
    fn line_of_prefers_the_objects_own_document() {
        let o = b_at(&"kind: A\nimage: x\n---\nkind: B\nimage: y\n".into(), 4);
        assert_eq!(o.line_of("image:"), Some(5));
        assert_eq!(o.line_of("kind: A"), Some(1));
        assert_eq!(o.line_of("absent"), Some(4));
        // Comments never match; a path is followed line after line.
        let o = b_at(
            &"kind: B\n# image: in a comment\nspec:\n  image: z\n  port: 1\n".into(),
            1,
        );
        assert_eq!(o.line_of("image:"), Some(4));
        assert_eq!(o.line_of_path(&["spec:", "port:"], |l, n| l.contains(n)), Some(5));
    }

    #[test]
    fn every_document_marker_form_bounds_a_document() {
        // `---\t`, `--- # c`, `--- {…}` and `...` all end the document before them.
        let text =
            "kind: A\nimage: a\n---\t\nkind: B\n--- # c\nkind: C\n--- {kind: D, image: d}\n...\nkind: E\nimage: e\n";
        let src = SourceLines::new(text);
        assert_eq!(src.separators(), 4);
        assert_eq!(src.document_around(3), (3, 4));
        assert_eq!(src.document_around(5), (5, 6));
        assert_eq!(src.document_around(6), (6, 7));
        assert_eq!(src.document_around(8), (8, 10));
        let arc: std::sync::Arc<str> = text.into();
        let at = |line: usize| b_at(&arc, line);
        // B's document has no image: the search falls back to the whole file, never to the
        // document after the tab-marked separator being read as part of A's.
        assert_eq!(
            at(4).line_of_path(&["kind: B", "image:"], |l, n| l.contains(n)),
            Some(4)
        );
        assert_eq!(at(7).line_of("image:"), Some(7));
        assert_eq!(at(9).line_of("image:"), Some(10));
    }
}
