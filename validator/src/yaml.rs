//! The one place that knows which YAML parser we use.
//!
//! `serde_yaml` is archived upstream; we use its maintained fork `serde_norway`. Everything else in
//! the crate goes through these functions and works on `serde_json::Value`, so swapping the parser
//! touches this file only.

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One YAML document of a multi-document stream, with the 1-based line where it starts.
#[derive(Debug, Clone)]
pub struct Doc {
    pub value: Value,
    pub line: usize,
    /// Index of the document within its stream (empty documents are counted too).
    pub index: usize,
}

/// Split a multi-document YAML stream on `---` lines, remembering where each document starts.
/// Empty documents (only comments / whitespace) are skipped but still counted.
pub fn documents(text: &str) -> Result<Vec<Doc>> {
    let mut docs = Vec::new();
    let mut chunk = String::new();
    let mut chunk_start = 1usize;
    let mut index = 0usize;
    let mut flush = |chunk: &mut String, start: usize, index: &mut usize| -> Result<()> {
        let body = std::mem::take(chunk);
        let meaningful = body
            .lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        if meaningful {
            let value: Value =
                from_str(&body).with_context(|| format!("YAML document {} (starting at line {start})", *index))?;
            if !value.is_null() {
                docs.push(Doc {
                    value,
                    line: first_content_line(&body, start),
                    index: *index,
                });
            }
        }
        *index += 1;
        Ok(())
    };
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if line == "---" || line.starts_with("--- ") || line == "..." {
            flush(&mut chunk, chunk_start, &mut index)?;
            chunk_start = lineno + 1;
            continue;
        }
        chunk.push_str(line);
        chunk.push('\n');
    }
    flush(&mut chunk, chunk_start, &mut index)?;
    Ok(docs)
}

fn first_content_line(body: &str, start: usize) -> usize {
    body.lines()
        .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|p| start + p)
        .unwrap_or(start)
}

/// Parse one YAML document into any deserialisable type.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T> {
    let de = serde_norway::Deserializer::from_str(text);
    T::deserialize(de).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Parse one YAML document into a JSON value (YAML-only types such as tags are folded).
pub fn value(text: &str) -> Result<Value> {
    from_str(text)
}

/// Serialise to YAML text.
pub fn to_string<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_norway::to_string(v).map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_with_lines() {
        let text = "# c\n---\na: 1\n---\n\n# only comment\n---\nb:\n  c: 2\n";
        let docs = documents(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].line, 3);
        assert_eq!(docs[1].line, 8);
        assert_eq!(docs[1].value["b"]["c"], 2);
    }

    #[test]
    fn malformed_yaml_is_an_error_with_position() {
        let err = documents("a: [1, 2\n").unwrap_err();
        assert!(format!("{err:#}").contains("line"), "{err:#}");
    }
}
