//! `helmfile build` must list what the state declares. The releases of a plain (untemplated)
//! state file, read from its text, must each appear in that file's build document, and every
//! plain state file the states include must have a document: a build that leaves a release out
//! would leave it unrendered and unjudged, so it is exit 2, never a smaller pass.

use crate::stack::load::{ScannedRelease, StateDoc};
use anyhow::{bail, Result};
use serde_json::Value;
use std::path::Path;

/// Template control structures that can legitimately remove releases from a state's text.
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
) -> Result<()> {
    let mut files: Vec<&Path> = scanned.iter().map(|s| s.file.as_path()).collect();
    files.sort();
    files.dedup();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            bail!("state file {} cannot be read", file.display());
        };
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
