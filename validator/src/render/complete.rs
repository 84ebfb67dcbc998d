//! `helmfile build` must list what the state declares. The releases of a plain (untemplated)
//! state file, read from its text, must each appear in that file's build document, and every
//! plain state file the states include must have a document: a build that leaves a release out
//! would leave it unrendered and unjudged, so it is exit 2, never a smaller pass.

use crate::stack::load::{ScannedRelease, StateDoc};
use anyhow::{bail, Result};
use serde_json::Value;
use std::path::Path;

/// Template actions can legitimately remove releases from a state's text.
fn is_templated(text: &str) -> bool {
    text.contains("{{")
}

/// Check `docs` (one environment's build) against the releases `scanned` from the state's text.
/// `exclude`: release names deliberately left out of the build (OCI releases offline).
pub fn check_build_complete(
    docs: &[StateDoc],
    scanned: &[ScannedRelease],
    exclude: &[String],
    environment: &str,
    entry: &Path,
) -> Result<()> {
    let mut files: Vec<&Path> = scanned.iter().map(|s| s.file.as_path()).collect();
    files.sort();
    files.dedup();
    let mut texts = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            bail!("state file {} cannot be read", file.display());
        };
        texts.push(text);
    }
    // `helmfiles:` entries may narrow a sub-state with `selectors:`; its releases are then not
    // all expected (the entry state's always are).
    let narrowed = texts.iter().any(|t| t.contains("selectors:"));
    for (file, text) in files.into_iter().zip(texts) {
        if is_templated(&text) || file.extension().is_some_and(|x| x == "gotmpl") {
            continue;
        }
        let Some(doc) = docs.iter().find(|d| d.path == file) else {
            bail!(
                "environment {environment}: `helmfile build` printed no state document for {}, which declares \
                 releases; its releases would not be rendered or validated",
                file.display()
            );
        };
        let listed: Vec<&str> = doc
            .doc
            .get("releases")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|r| r.get("name").and_then(Value::as_str)).collect())
            .unwrap_or_default();
        // helmfile leaves out releases whose `condition:` is false or that say `installed: false`:
        // they are not installed, so not expected.
        let expected = |s: &&ScannedRelease| s.condition.is_none() && s.installed != Some(false);
        if narrowed && file != entry {
            continue;
        }
        for s in scanned
            .iter()
            .filter(|s| s.file == file && !exclude.contains(&s.name))
            .filter(expected)
        {
            if !listed.contains(&s.name.as_str()) {
                bail!(
                    "environment {environment}: `helmfile build` did not list release {} declared at {}:{}; it would \
                     not be rendered or validated",
                    s.name,
                    file.display(),
                    s.line
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scanned(file: &Path, name: &str, condition: Option<&str>) -> ScannedRelease {
        ScannedRelease {
            oci: false,
            devel: None,
            name: name.into(),
            namespace: Some("nvcf".into()),
            chart: "./charts/app".into(),
            version: None,
            condition: condition.map(str::to_string),
            installed: None,
            needs: Vec::new(),
            file: file.to_path_buf(),
            line: 3,
        }
    }

    #[test]
    fn a_build_without_a_declared_release_or_state_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("helmfile.yaml");
        std::fs::write(&entry, "releases:\n  - name: a\n  - name: b\n  - name: c\n").unwrap();
        let rels = [
            scanned(&entry, "a", None),
            scanned(&entry, "b", None),
            scanned(&entry, "c", Some("c.enabled")),
        ];
        let doc = |names: &[&str]| StateDoc {
            path: entry.clone(),
            doc: json!({"releases": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}),
        };
        assert!(check_build_complete(&[doc(&["a", "b"])], &rels, &[], "e", &entry).is_ok());
        let e = check_build_complete(&[doc(&["a"])], &rels, &[], "e", &entry).unwrap_err();
        assert!(e.to_string().contains("did not list release b"), "{e}");
        assert!(check_build_complete(&[doc(&["a"])], &rels, &["b".to_string()], "e", &entry).is_ok());
        let e = check_build_complete(&[], &rels, &[], "e", &entry).unwrap_err();
        assert!(e.to_string().contains("printed no state document"), "{e}");
    }
}
