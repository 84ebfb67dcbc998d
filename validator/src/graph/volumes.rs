//! Which file a container sees at a path, laid out as the kubelet lays out its volumes: the mount
//! that holds the path (the longest `mountPath` at or above it), the path inside the volume
//! (`subPath`/`subPathExpr` in front of the rest), and the source that writes the file there.
//!
//! Sources, as the kubelet writes them (Kubernetes API reference, `Volume`, `VolumeMount`,
//! `ProjectedVolumeSource` v1 core; kubelet `pkg/volume/{secret,configmap,projected}`):
//! - a Secret or ConfigMap (`secret`/`configMap` volume, or a `projected` source): with `items`,
//!   only the listed keys, each at its `path`; without, every key as a file at the top of the
//!   volume (keys never contain `/`); `optional` lets the pod start without it;
//! - a projected `serviceAccountToken`, `downwardAPI` item or `clusterTrustBundle`: a file at its
//!   `path`.
//!
//! The kubelet writes a projected volume's sources in order, a later source's file over an
//! earlier one's (`payload[k] = v` in `pkg/volume/projected`); the API server refuses two listed
//! paths that collide, so a listed path names its source unless a later Secret or ConfigMap
//! without `items` has that key, which the graph knows only for Secrets and ConfigMaps it rendered
//! ([`Graph::source_has_key`]). `defaultMode`/`mode` change no path and are not read.

use super::Graph;
use serde_json::Value;

/// What writes a volume's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Secret,
    ConfigMap,
    ServiceAccountToken,
    DownwardApi,
    ClusterTrustBundle,
}

/// One source of a volume's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSource<'a> {
    pub kind: SourceKind,
    /// The Secret's or ConfigMap's name (a ClusterTrustBundle's name or signer; empty otherwise).
    pub name: &'a str,
    /// `optional: true`: the pod starts without it.
    pub optional: bool,
    /// `(key, path)` of each file when they are listed (`items`, a token's or bundle's `path`);
    /// None: every key of the Secret or ConfigMap, each at the top of the volume.
    pub files: Option<Vec<(&'a str, &'a str)>>,
}

impl VolumeSource<'_> {
    /// The key this source writes at `path` inside the volume, when it surely does (a listed path);
    /// `Some(None)` when it does if the Secret/ConfigMap has that key (no `items`).
    fn key_at(&self, path: &str) -> Option<Option<&str>> {
        match &self.files {
            Some(files) => files.iter().find(|(_, p)| norm(p) == path).map(|(k, _)| Some(*k)),
            None if !path.is_empty() && !path.contains('/') => Some(None),
            None => None,
        }
    }

    /// Whether this source writes a file at or below directory `dir` of the volume ("" = all).
    fn under(&self, dir: &str) -> bool {
        dir.is_empty()
            || match &self.files {
                Some(files) => files.iter().any(|(_, p)| {
                    let p = norm(p);
                    p == dir || p.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
                }),
                None => false,
            }
    }
}

/// A relative path as the kubelet cleans it before writing or joining (`./a//b/` is `a/b`).
fn norm(p: &str) -> String {
    let parts: Vec<&str> = p.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    parts.join("/")
}

fn listed(items: Option<&Value>) -> Option<Vec<(&str, &str)>> {
    let items = items?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|i| Some((i.get("key")?.as_str()?, i.get("path")?.as_str()?)))
            .collect(),
    )
}

fn optional(v: &Value) -> bool {
    v.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

/// A Secret or ConfigMap source (`secret`, `configMap` or a projected entry of either).
fn keyed<'a>(kind: SourceKind, v: &'a Value, name_field: &str) -> Option<VolumeSource<'a>> {
    Some(VolumeSource {
        kind,
        name: v.get(name_field)?.as_str()?,
        optional: optional(v),
        files: listed(v.get("items")),
    })
}

/// Every source of a volume's files, in the order the kubelet writes them.
pub fn volume_sources(vol: &Value) -> Vec<VolumeSource<'_>> {
    let mut out = Vec::new();
    if let Some(s) = vol
        .get("secret")
        .and_then(|s| keyed(SourceKind::Secret, s, "secretName"))
    {
        out.push(s);
    }
    if let Some(s) = vol
        .get("configMap")
        .and_then(|s| keyed(SourceKind::ConfigMap, s, "name"))
    {
        out.push(s);
    }
    let sources = vol.pointer("/projected/sources").and_then(Value::as_array);
    for src in sources.into_iter().flatten() {
        if let Some(s) = src.get("secret").and_then(|s| keyed(SourceKind::Secret, s, "name")) {
            out.push(s);
        } else if let Some(s) = src
            .get("configMap")
            .and_then(|s| keyed(SourceKind::ConfigMap, s, "name"))
        {
            out.push(s);
        } else if let Some(p) = src.pointer("/serviceAccountToken/path").and_then(Value::as_str) {
            out.push(VolumeSource {
                kind: SourceKind::ServiceAccountToken,
                name: "",
                optional: false,
                files: Some(vec![("token", p)]),
            });
        } else if let Some(d) = src.get("downwardAPI") {
            let files = d.get("items").and_then(Value::as_array).into_iter().flatten();
            let files = files.filter_map(|i| i.get("path")?.as_str()).map(|p| (p, p)).collect();
            out.push(VolumeSource {
                kind: SourceKind::DownwardApi,
                name: "",
                optional: false,
                files: Some(files),
            });
        } else if let Some(b) = src.get("clusterTrustBundle") {
            let name = ["name", "signerName"].iter().find_map(|k| b.get(*k)?.as_str());
            out.push(VolumeSource {
                kind: SourceKind::ClusterTrustBundle,
                name: name.unwrap_or(""),
                optional: optional(b),
                files: Some(
                    b.get("path")
                        .and_then(Value::as_str)
                        .map(|p| vec![("", p)])
                        .unwrap_or_default(),
                ),
            });
        }
    }
    out
}

/// The Secrets a volume holds (`secret`, or `secret` sources of a projected volume).
pub fn volume_secrets(vol: &Value) -> Vec<VolumeSource<'_>> {
    volume_sources(vol)
        .into_iter()
        .filter(|s| s.kind == SourceKind::Secret)
        .collect()
}

/// A file of a volume and the source that writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held<'a> {
    pub source: VolumeSource<'a>,
    /// The key of the Secret or ConfigMap (a token's `token`; a downward API file's path).
    pub key: String,
}

/// The source that writes `path` (relative, inside the volume), if any. The kubelet writes the
/// sources in order, a later one's file over an earlier one's: the last source that surely writes
/// the path (a listed path, or a key `keys` knows the Secret or ConfigMap has), else the last
/// Secret or ConfigMap without `items` that may (`keys` answers None: not known). A name a listed
/// source writes files below is a directory, no file.
pub fn file_in_volume<'a>(
    vol: &'a Value,
    path: &str,
    keys: &dyn Fn(&VolumeSource<'_>, &str) -> Option<bool>,
) -> Option<Held<'a>> {
    let path = norm(path);
    let path = path.as_str();
    let sources = volume_sources(vol);
    let below = |p: &str| norm(p).strip_prefix(path).is_some_and(|r| r.starts_with('/'));
    if sources.iter().any(|s| s.files.iter().flatten().any(|(_, p)| below(p))) {
        return None;
    }
    let surely = |s: &&VolumeSource<'_>| match s.key_at(path) {
        Some(Some(_)) => true,
        Some(None) => keys(s, path) == Some(true),
        None => false,
    };
    let maybe = |s: &&VolumeSource<'_>| s.key_at(path) == Some(None) && keys(s, path).is_none();
    let s = sources
        .iter()
        .rev()
        .find(surely)
        .or_else(|| sources.iter().rev().find(maybe))?;
    Some(Held {
        key: s.key_at(path).flatten().unwrap_or(path).to_string(),
        source: s.clone(),
    })
}

/// The sources behind `path` inside a volume: the one that writes the file there, else (a
/// directory) every source that writes a file below it; `""` is the whole volume.
pub fn sources_at<'a>(
    vol: &'a Value,
    path: &str,
    keys: &dyn Fn(&VolumeSource<'_>, &str) -> Option<bool>,
) -> Vec<VolumeSource<'a>> {
    if let Some(h) = file_in_volume(vol, path, keys) {
        return vec![h.source];
    }
    let dir = norm(path);
    let dir = dir.as_str();
    volume_sources(vol).into_iter().filter(|s| s.under(dir)).collect()
}

/// A path of a container, seen through the volume mount that holds it.
#[derive(Debug, Clone)]
pub struct MountedPath<'a> {
    /// The `volumeMounts` entry.
    pub mount: &'a Value,
    /// The pod's volume of that name (None: the pod declares none).
    pub volume: Option<&'a Value>,
    /// `mountPath` without a trailing `/`.
    pub mount_path: String,
    /// The path below the mount ("" when the path is the mount itself).
    pub rel: String,
    /// The path inside the volume: `subPath`/`subPathExpr` (as written), then `rel`.
    pub in_volume: String,
}

impl<'a> MountedPath<'a> {
    pub fn volume_name(&self) -> &'a str {
        self.mount.get("name").and_then(Value::as_str).unwrap_or("?")
    }

    /// `subPath` or `subPathExpr`, when set: the kubelet bind-mounts that part of the volume once,
    /// and the mount never sees the volume's later updates.
    pub fn sub_path(&self) -> Option<&'a str> {
        sub_path(self.mount)
    }

    /// The source that writes the file at this path, if any.
    pub fn file(&self, keys: &dyn Fn(&VolumeSource<'_>, &str) -> Option<bool>) -> Option<Held<'a>> {
        file_in_volume(self.volume?, &self.in_volume, keys)
    }
}

/// `subPath` or `subPathExpr` of a `volumeMounts` entry, when set and not empty.
pub fn sub_path(mount: &Value) -> Option<&str> {
    ["subPath", "subPathExpr"]
        .iter()
        .find_map(|k| mount.get(*k)?.as_str())
        .filter(|s| !s.is_empty())
}

/// The mount of `container` (of pod spec `pod`) that holds absolute `path`: the longest
/// `mountPath` equal to it or a directory above it.
pub fn mounted_at<'a>(pod: &'a Value, container: &'a Value, path: &str) -> Option<MountedPath<'a>> {
    let mounts = container.get("volumeMounts").and_then(Value::as_array);
    let (mount, mp, rel) = mounts
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let mp = m.get("mountPath")?.as_str()?.trim_end_matches('/');
            let rel = if path == mp {
                ""
            } else {
                path.strip_prefix(mp)?.strip_prefix('/')?
            };
            Some((m, mp, rel))
        })
        // The first of equally long mount paths, as before the kubelet refuses the pod.
        .rev()
        .max_by_key(|(_, mp, _)| mp.len())?;
    let name = mount.get("name").and_then(Value::as_str);
    let volumes = pod.get("volumes").and_then(Value::as_array);
    let volume = volumes
        .into_iter()
        .flatten()
        .find(|v| v.get("name").and_then(Value::as_str) == name && name.is_some());
    let in_volume = match sub_path(mount) {
        Some(sp) => norm(&format!("{sp}/{rel}")),
        None => norm(rel),
    };
    Some(MountedPath {
        mount,
        volume,
        mount_path: mp.to_string(),
        rel: rel.to_string(),
        in_volume,
    })
}

impl Graph {
    /// Whether the Secret or ConfigMap of `source` in namespace `ns` has `key`, when the graph
    /// rendered it (externals declare only what the policy needs, so they answer nothing); None
    /// for other sources and for what the graph does not hold.
    pub fn source_has_key(&self, ns: Option<&str>, source: &VolumeSource<'_>, key: &str) -> Option<bool> {
        let (kind, fields): (&str, &[&str]) = match source.kind {
            SourceKind::Secret => ("Secret", &["data", "stringData"]),
            SourceKind::ConfigMap => ("ConfigMap", &["data", "binaryData"]),
            _ => return None,
        };
        let o = self.get("", kind, ns, source.name).filter(|o| !o.prov.external)?;
        Some(fields.iter().any(|f| o.body.get(*f).and_then(|d| d.get(key)).is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UNKNOWN: &dyn Fn(&VolumeSource<'_>, &str) -> Option<bool> = &|_, _| None;

    fn held(vol: &Value, path: &str) -> Option<(SourceKind, String, String, bool)> {
        file_in_volume(vol, path, UNKNOWN).map(|h| (h.source.kind, h.source.name.to_string(), h.key, h.source.optional))
    }

    #[test]
    fn items_remap_keys_and_hide_the_rest() {
        let vol = json!({"secret": {"secretName": "bao-root", "items": [{"key": "token", "path": "root/token"}], "defaultMode": 256}});
        assert_eq!(
            held(&vol, "root/token"),
            Some((SourceKind::Secret, "bao-root".into(), "token".into(), false))
        );
        assert_eq!(held(&vol, "./root//token").map(|h| h.2), Some("token".into()));
        let dotted = json!({"secret": {"secretName": "s", "items": [{"key": "k", "path": "./a/./b/"}]}});
        assert_eq!(held(&dotted, "a/b").map(|h| h.2), Some("k".into()));
        // The key is not at its own name when items remap it.
        assert_eq!(held(&vol, "token"), None);
        // Without items every key is at the top, never below.
        let vol = json!({"secret": {"secretName": "s", "optional": true}});
        assert_eq!(
            held(&vol, "token"),
            Some((SourceKind::Secret, "s".into(), "token".into(), true))
        );
        assert_eq!(held(&vol, "a/token"), None);
        assert_eq!(held(&vol, ""), None);
    }

    #[test]
    fn projected_sources_each_write_their_own_files() {
        let vol = json!({"projected": {"sources": [
            {"secret": {"name": "ca", "optional": true, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"serviceAccountToken": {"path": "token", "audience": "openbao"}},
            {"configMap": {"name": "cfg"}},
            {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"clusterTrustBundle": {"signerName": "example.com/s", "path": "bundle.pem"}},
            {"secret": {"name": "root", "items": [{"key": "token", "path": "bao/token"}]}}
        ]}});
        assert_eq!(held(&vol, "ca.crt").map(|h| (h.1, h.3)), Some(("ca".into(), true)));
        assert_eq!(held(&vol, "token").map(|h| h.0), Some(SourceKind::ServiceAccountToken));
        assert_eq!(held(&vol, "labels").map(|h| h.0), Some(SourceKind::DownwardApi));
        assert_eq!(
            held(&vol, "bundle.pem").map(|h| h.0),
            Some(SourceKind::ClusterTrustBundle)
        );
        assert_eq!(
            held(&vol, "bao/token").map(|h| (h.1, h.3)),
            Some(("root".into(), false))
        );
        // An unlisted name may be a key of the items-less ConfigMap.
        assert_eq!(held(&vol, "config.hcl").map(|h| h.0), Some(SourceKind::ConfigMap));
        assert_eq!(
            volume_secrets(&vol).iter().map(|s| s.name).collect::<Vec<_>>(),
            ["ca", "root"]
        );
        // A directory: the sources with files below it.
        let names = |p: &str| sources_at(&vol, p, UNKNOWN).iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(names("bao"), ["root"]);
        assert_eq!(names("ca.crt"), ["ca"]);
        assert_eq!(names("").len(), 6);
        assert!(names("nothing/here").is_empty());
    }

    #[test]
    fn a_later_source_writes_over_an_earlier_one() {
        let vol = json!({"projected": {"sources": [{"secret": {"name": "config"}}, {"secret": {"name": "root"}}]}});
        let keys = |s: &VolumeSource<'_>, k: &str| Some(s.name == "config" && k == "token");
        // Known keys: the one Secret that has it; unknown: the last that may.
        assert_eq!(
            file_in_volume(&vol, "token", &keys).map(|h| h.source.name),
            Some("config")
        );
        assert_eq!(
            file_in_volume(&vol, "token", UNKNOWN).map(|h| h.source.name),
            Some("root")
        );
        assert_eq!(file_in_volume(&vol, "other", &keys), None);
        // A listed path, then a Secret without items: it replaces the file only when it surely
        // has that key.
        let vol = json!({"projected": {"sources": [
            {"secret": {"name": "tls", "items": [{"key": "tls.crt", "path": "tls.crt"}]}},
            {"configMap": {"name": "bundle"}}
        ]}});
        assert_eq!(
            file_in_volume(&vol, "tls.crt", UNKNOWN).map(|h| h.source.name),
            Some("tls")
        );
        let has = |s: &VolumeSource<'_>, _: &str| Some(s.name == "bundle");
        assert_eq!(
            file_in_volume(&vol, "tls.crt", &has).map(|h| h.source.name),
            Some("bundle")
        );
        // A directory of a listed source is no file of an unlisted one.
        let vol = json!({"projected": {"sources": [
            {"secret": {"name": "a"}},
            {"secret": {"name": "b", "items": [{"key": "k", "path": "d/k"}]}}
        ]}});
        assert_eq!(file_in_volume(&vol, "d", UNKNOWN), None);
        assert_eq!(file_in_volume(&vol, "d/k", UNKNOWN).map(|h| h.source.name), Some("b"));
    }

    #[test]
    fn the_path_inside_the_volume_puts_the_sub_path_in_front() {
        let pod = json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}, {"name": "w", "emptyDir": {}}]});
        let c = json!({"volumeMounts": [
            {"name": "v", "mountPath": "/etc/tls/", "subPath": "./certs/"},
            {"name": "v", "mountPath": "/etc/tls/tls.key", "subPathExpr": "key"},
            {"name": "w", "mountPath": "/etc"},
            {"name": "x", "mountPath": "/x"}
        ]});
        let at = |p: &str| mounted_at(&pod, &c, p).map(|m| (m.volume_name(), m.mount_path, m.rel, m.in_volume));
        assert_eq!(
            at("/etc/tls/tls.crt"),
            Some(("v", "/etc/tls".into(), "tls.crt".into(), "certs/tls.crt".into()))
        );
        assert_eq!(
            at("/etc/tls/tls.key"),
            Some(("v", "/etc/tls/tls.key".into(), "".into(), "key".into()))
        );
        assert_eq!(
            at("/etc/tls"),
            Some(("v", "/etc/tls".into(), "".into(), "certs".into()))
        );
        assert_eq!(
            at("/etc/tlsx"),
            Some(("w", "/etc".into(), "tlsx".into(), "tlsx".into()))
        );
        assert_eq!(at("/opt/a"), None);
        assert!(mounted_at(&pod, &c, "/x/a").is_some_and(|m| m.volume.is_none()));
    }

    #[test]
    fn the_graph_knows_the_keys_of_what_it_rendered_only() {
        use SourceKind::*;
        let mut g = crate::testkit::graph(
            "e",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: nvcf}\ndata: {token: eA==}\nstringData: {extra: x}\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: nvcf}\ndata: {ca.crt: x}\nbinaryData: {blob: eA==}\n\
             ---\napiVersion: v1\nkind: Secret\nmetadata: {name: ext, namespace: nvcf}\ndata: {tls.crt: eA==}\n",
        );
        g.objects[2].prov.external = true;
        let src = |kind, name| VolumeSource {
            kind,
            name,
            optional: false,
            files: None,
        };
        let has = |s: VolumeSource<'_>, k: &str| g.source_has_key(Some("nvcf"), &s, k);
        assert_eq!(has(src(Secret, "s"), "token"), Some(true));
        assert_eq!(has(src(Secret, "s"), "extra"), Some(true));
        assert_eq!(has(src(Secret, "s"), "tls.crt"), Some(false));
        assert_eq!(has(src(ConfigMap, "c"), "ca.crt"), Some(true));
        assert_eq!(has(src(ConfigMap, "c"), "blob"), Some(true));
        assert_eq!(has(src(ConfigMap, "c"), "token"), Some(false));
        // A Secret is no ConfigMap of the same name, and the other way round.
        assert_eq!(has(src(Secret, "c"), "ca.crt"), None);
        assert_eq!(has(src(ConfigMap, "s"), "token"), None);
        // An external declares only what the policy needs: its keys are not known.
        assert_eq!(has(src(Secret, "ext"), "tls.crt"), None);
        assert_eq!(has(src(Secret, "ext"), "tls.key"), None);
        // Not rendered, another namespace, a source that has no keys.
        assert_eq!(has(src(Secret, "missing"), "token"), None);
        assert_eq!(g.source_has_key(Some("other"), &src(Secret, "s"), "token"), None);
        assert_eq!(has(src(ServiceAccountToken, ""), "token"), None);
    }
}
