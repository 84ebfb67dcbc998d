//! `helmfile build` output: one state document per state file, attributed by helmfile's own
//! `#  Source:` line. Read here, at the tools layer, because reading a remote chart's
//! dependencies (`remote.rs`) and loading the state (`stack::load`) both need it.

use anyhow::{bail, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One state document of `helmfile build` output.
#[derive(Debug, Clone)]
pub struct StateDoc {
    /// Absolute path of the state file.
    pub path: PathBuf,
    pub doc: Value,
}

/// Read `helmfile build` output: one YAML document per state file, each led by its
/// `#  Source: /abs/path` comment. Documents are the YAML parser's own (`yaml::spanned_documents`),
/// never a split of the text; a document without exactly one `Source` line before its content, or
/// with no content, is refused (a state helmfile printed but we could not attribute would go
/// unjudged).
pub fn parse_build(text: &str) -> Result<Vec<StateDoc>> {
    let mut docs = Vec::new();
    let starts = crate::yaml::line_starts(text);
    for (i, d) in crate::yaml::spanned_documents(text)?.into_iter().enumerate() {
        let head = &text[d.head.clone()];
        let sources: Vec<&str> = crate::yaml::lines(head)
            .into_iter()
            .filter_map(|l| l.strip_prefix('#')?.trim_start().strip_prefix("Source:"))
            .map(str::trim)
            .collect();
        let line = starts.partition_point(|&s| s <= d.span.start);
        let source = match (sources.as_slice(), d.value.is_null()) {
            ([one], false) if Path::new(one).is_absolute() => one.to_string(),
            ([one], true) => bail!(
                "document {i} (line {line}) names state file {} but has no content; helmfile prints every state it \
                 loaded in full, so the state's path (a `---` line in a file or directory name?) or helmfile's output \
                 cannot be read reliably; rename the path",
                crate::redact::cap(one, crate::redact::MAX_VALUE)
            ),
            ([], _) => bail!(
                "document {i} (line {line}) has no `#  Source:` line naming its state file, so its releases cannot be \
                 attributed; a state path with a `---` line in its name (directory or file) splits helmfile's output: \
                 rename it"
            ),
            (many, _) => bail!(
                "document {i} (line {line}) has {} `#  Source:` lines where helmfile prints one; a state path with a \
                 line break in its name cannot be read reliably: rename it",
                many.len()
            ),
        };
        docs.push(StateDoc {
            path: PathBuf::from(source),
            doc: d.value,
        });
    }
    Ok(docs)
}
