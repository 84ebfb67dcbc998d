//! Parsing rendered YAML into objects with provenance: helm's output directories (one directory
//! per release, one file per template) and pre-rendered manifests given with `--manifests`.

use crate::render::Provenance;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// One rendered document before it becomes an `Object`: the body, the namespace it falls back to
/// (its release's), and where it came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RenderedDoc {
    pub body: Value,
    pub default_namespace: Option<String>,
    pub prov: Provenance,
}

/// Split one rendered template file into documents. `rel_file` names it in messages.
pub fn parse_rendered_file(text: &str, rel_file: &str) -> Result<Vec<crate::yaml::Doc>> {
    crate::yaml::manifest_documents(text).with_context(|| format!("rendered output of {rel_file} is not valid YAML"))
}

/// The best line of the `nth` document of kind `kind` in a template source: the nth line that
/// declares `kind: <kind>` at the start of a line, else the first `kind:` line, else 1.
pub fn template_line(template: &str, kind: &str, nth: usize) -> usize {
    TemplateLines::new(template).line(kind, nth)
}

/// The `kind:` lines of one template source, found in one pass so that looking up the line of
/// each rendered object costs no rescan of the template (a template may render thousands).
#[derive(Debug, Default)]
pub struct TemplateLines {
    by_kind: std::collections::HashMap<String, Vec<usize>>,
    first_kind_line: Option<usize>,
}

impl TemplateLines {
    pub fn new(template: &str) -> TemplateLines {
        let mut t = TemplateLines::default();
        for (i, l) in crate::yaml::lines(template).into_iter().enumerate() {
            let Some(v) = l.trim_start().strip_prefix("kind:") else {
                continue;
            };
            t.first_kind_line.get_or_insert(i + 1);
            let k = v.trim().trim_matches(|c| c == '"' || c == '\'');
            t.by_kind.entry(k.to_string()).or_default().push(i + 1);
        }
        t
    }

    pub fn line(&self, kind: &str, nth: usize) -> usize {
        match self.by_kind.get(kind) {
            Some(m) if !m.is_empty() => m[nth.min(m.len() - 1)],
            _ => self.first_kind_line.unwrap_or(1),
        }
    }
}

/// The Kubernetes objects of one document, as the API clients (kubectl, and helm through the
/// same client library) read it: a document with a top-level `items` key is a list whatever its
/// `kind` (apimachinery's unstructured decoder looks only for `items`), and its items are the
/// objects; an item without `kind` and `apiVersion` takes the list's `apiVersion` and its `kind`
/// without the `List` suffix, as the decoder sets them. `items: null` is an empty list. A list
/// inside a list, or `items` that is neither a sequence nor null, is refused. Anything that is
/// not an object with apiVersion, kind and metadata.name is an error: the gate does not skip
/// what it cannot judge.
pub fn objects_of(doc: Value, file: &str, index: usize, line: usize) -> Result<Vec<Value>> {
    Ok(objects_with_lines(doc, &[], file, index, line)?
        .into_iter()
        .map(|(v, _)| v)
        .collect())
}

/// Like `objects_of`, with the line of each object: a list's items at their own lines
/// (`item_lines` from the parser), else the document's line.
pub fn objects_with_lines(
    doc: Value,
    item_lines: &[usize],
    file: &str,
    index: usize,
    line: usize,
) -> Result<Vec<(Value, usize)>> {
    let items: Vec<(Value, usize)> = match doc {
        Value::Object(mut m) if m.contains_key("items") => {
            let list_kind = m.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
            let list_api = m
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let items = match m.remove("items") {
                Some(Value::Array(items)) => items,
                Some(Value::Null) => Vec::new(),
                _ => bail!(
                    "{file}: document {index} (line {line}) has a top-level `items` that is not a list; kubectl and \
                     helm read every document with `items` as a list of objects and refuse this one"
                ),
            };
            let item_kind = list_kind.strip_suffix("List").unwrap_or(&list_kind).to_string();
            let mut out = Vec::with_capacity(items.len());
            for (i, mut v) in items.into_iter().enumerate() {
                let at = item_lines.get(i).copied().unwrap_or(line);
                if let Value::Object(item) = &mut v {
                    if item.contains_key("items") {
                        bail!(
                            "{file}: document {index}, item {i} (line {at}) is itself a list (`items`): nested lists \
                             are refused; put each object in the outer list or in its own document"
                        );
                    }
                    let unset = |k: &str| item.get(k).and_then(Value::as_str).is_none_or(str::is_empty);
                    if unset("kind") && unset("apiVersion") {
                        item.insert("kind".into(), Value::String(item_kind.clone()));
                        item.insert("apiVersion".into(), Value::String(list_api.clone()));
                    }
                }
                out.push((v, at));
            }
            out
        }
        doc => vec![(doc, line)],
    };
    for (body, at) in &items {
        let field = |p: &str| body.pointer(p).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
        let missing: Vec<&str> = [
            ("apiVersion", "/apiVersion"),
            ("kind", "/kind"),
            ("metadata.name", "/metadata/name"),
        ]
        .into_iter()
        .filter(|(_, p)| field(p).is_none())
        .map(|(n, _)| n)
        .collect();
        if !missing.is_empty() {
            bail!(
                "{file}: document {index} (line {at}) is not a Kubernetes object: {} missing or empty (every object needs apiVersion, kind and metadata.name)",
                missing.join(", ")
            );
        }
    }
    Ok(items)
}

/// Read `--manifests PATH|-`: a file, a directory (every `.yaml`/`.yml`/`.json` file below it,
/// sorted), or standard input. All of it together is bounded by `yaml::MAX_INPUT`, enforced while
/// reading: a larger input is refused without being read whole.
pub fn read_manifests(path: &str, environment: &str) -> Result<Vec<RenderedDoc>> {
    let mut budget = crate::yaml::MAX_INPUT;
    // A regular file's size says at once whether it fits (a growing file or a FIFO is still cut
    // off by the bounded reader).
    let mut read = |r: &mut dyn std::io::Read, size: Option<u64>, what: &str| -> Result<String> {
        if size.is_some_and(|n| n > budget as u64) {
            return Err(crate::yaml::too_large(what, budget));
        }
        let text = crate::yaml::read_bounded(r, budget, what)?;
        budget -= text.len();
        Ok(text)
    };
    let mut inputs: Vec<(String, String)> = Vec::new();
    if path == "-" {
        let text = read(&mut std::io::stdin().lock(), None, "--manifests - (standard input)")?;
        inputs.push(("<stdin>".into(), text));
    } else {
        let p = Path::new(path);
        if p.is_dir() {
            // Symbolic links are followed (kubectl reads a linked file as the file); a link that
            // loops or leads nowhere is refused, never skipped.
            let mut files: Vec<_> = walkdir::WalkDir::new(p)
                .follow_links(true)
                .into_iter()
                .map(|e| {
                    e.map_err(|err| match err.loop_ancestor() {
                        Some(a) => anyhow::anyhow!(
                            "--manifests {path}: the symbolic link {} loops back to {}; remove the loop",
                            err.path().map(|p| p.display().to_string()).unwrap_or_default(),
                            a.display()
                        ),
                        None => anyhow::anyhow!(
                            "--manifests {path}: cannot read {} ({err}); a symbolic link that leads nowhere is \
                             refused, not skipped",
                            err.path().map(|p| p.display().to_string()).unwrap_or_default()
                        ),
                    })
                })
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .filter(|e| e.file_type().is_file())
                .filter(|e| {
                    matches!(
                        e.path().extension().and_then(|x| x.to_str()),
                        Some("yaml" | "yml" | "json")
                    )
                })
                .map(|e| e.path().to_path_buf())
                .collect();
            files.sort();
            if files.is_empty() {
                bail!("--manifests {path}: the directory has no .yaml, .yml or .json files");
            }
            for f in files {
                let mut file =
                    std::fs::File::open(&f).with_context(|| format!("cannot read manifest file {}", f.display()))?;
                let size = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
                let text = read(&mut file, size, &format!("manifest file {}", f.display()))?;
                inputs.push((f.display().to_string(), text));
            }
        } else {
            let mut file = std::fs::File::open(p).with_context(|| format!("cannot read manifest file {path}"))?;
            let size = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
            let text = read(&mut file, size, &format!("manifest file {path}"))?;
            inputs.push((path.to_string(), text));
        }
    }
    let mut out = Vec::new();
    for (file, text) in inputs {
        out.extend(parse_manifests(&file, &text, environment)?);
    }
    Ok(out)
}

/// The objects of one `--manifests` text (`file` names it): its documents as helm and a YAML
/// parser both read them (`yaml::manifest_documents`), `List`s expanded, every document a
/// Kubernetes object. Namespaces are placed later, by the engine.
pub fn parse_manifests(file: &str, text: &str, environment: &str) -> Result<Vec<RenderedDoc>> {
    let docs = crate::yaml::manifest_documents(text).with_context(|| format!("{file}: not valid YAML"))?;
    let shared: std::sync::Arc<str> = text.into();
    let mut out = Vec::new();
    for d in docs {
        for (body, line) in objects_with_lines(d.value, &d.item_lines, file, d.index, d.line)? {
            out.push(RenderedDoc {
                body,
                default_namespace: None,
                prov: Provenance {
                    environment: environment.to_string(),
                    file: Some(file.to_string()),
                    doc_index: d.index,
                    line: Some(line),
                    template_text: Some(shared.clone()),
                    ..Provenance::default()
                },
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_objects_whatever_the_kind() {
        let doc: Value = serde_json::json!({
            "apiVersion": "v1", "kind": "Anything",
            "items": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}},
                {"metadata": {"name": "b"}}
            ]
        });
        let objs = objects_of(doc, "f", 0, 1).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0]["kind"], "Deployment");
        // An item with neither kind nor apiVersion takes the list's, as the decoder sets them.
        assert_eq!(
            (objs[1]["apiVersion"].as_str(), objs[1]["kind"].as_str()),
            (Some("v1"), Some("Anything"))
        );
        let cm_list =
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": [{"metadata": {"name": "c"}}]});
        assert_eq!(objects_of(cm_list, "f", 0, 1).unwrap()[0]["kind"], "ConfigMap");
        let empty = serde_json::json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, "items": null});
        assert!(objects_of(empty, "f", 0, 1).unwrap().is_empty());
        let nested = serde_json::json!({"kind": "List", "apiVersion": "v1", "items": [{"kind": "List", "apiVersion": "v1", "items": []}]});
        assert!(format!("{:#}", objects_of(nested, "f", 0, 1).unwrap_err()).contains("nested lists"));
        let scalar = serde_json::json!({"kind": "X", "apiVersion": "v1", "metadata": {"name": "x"}, "items": "a"});
        assert!(objects_of(scalar, "f", 0, 1).is_err());
    }

    #[test]
    fn manifests_follow_symbolic_links_and_refuse_loops() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(
            real.join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: linked}\n",
        )
        .unwrap();
        let dir = d.path().join("m");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(real.join("cm.yaml"), dir.join("file-link.yaml")).unwrap();
        std::os::unix::fs::symlink(&real, dir.join("dir-link")).unwrap();
        let docs = read_manifests(dir.to_str().unwrap(), "").unwrap();
        assert_eq!(docs.len(), 2, "the linked file and the file in the linked directory");
        std::os::unix::fs::symlink(&dir, real.join("back")).unwrap();
        let e = format!("{:#}", read_manifests(dir.to_str().unwrap(), "").unwrap_err());
        assert!(e.contains("loops back"), "{e}");
        std::fs::remove_file(real.join("back")).unwrap();
        std::os::unix::fs::symlink(d.path().join("nowhere.yaml"), dir.join("dangling.yaml")).unwrap();
        let e = format!("{:#}", read_manifests(dir.to_str().unwrap(), "").unwrap_err());
        assert!(e.contains("leads nowhere"), "{e}");
    }

    #[test]
    fn template_lines() {
        let t = "{{- if .Values.a }}\napiVersion: v1\nkind: Service\n---\napiVersion: v1\nkind: Service\n";
        assert_eq!(template_line(t, "Service", 0), 3);
        assert_eq!(template_line(t, "Service", 1), 6);
        assert_eq!(template_line(t, "Service", 5), 6);
        assert_eq!(template_line(t, "ConfigMap", 0), 3);
    }
}
