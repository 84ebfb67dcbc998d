//! The differential oracle for rendered manifests: many texts read in ONE run of the real helm as
//! helm reads rendered manifests, and by the validator as `check --manifests` reads them.
//!
//! helm (`releaseutil.SplitManifests`) trims the text, cuts it at every match of
//! `(?:^|\s*\n)---\s*`, drops empty pieces, trims each piece and reads it with
//! `sigs.k8s.io/yaml` (yaml.v2's first document of the piece, as JSON); each piece reaches the API
//! server followed by the newline helm writes after it in the release manifest. A tiny chart does
//! exactly that with sprig's `regexSplit` over `.Files.Get`, then `fromYaml | toJson` per piece
//! (`fromYamlArray` for files named `*.seq.yaml`); `fromYaml`'s error map (`{"Error": "error …"}`)
//! and `fromYamlArray`'s `["error …"]` mean helm cannot read the piece.
//!
//! Empty documents are skipped on both sides. `fromYaml` prints an empty document and `{}` alike,
//! so an empty mapping is skipped too (the CLI refuses `{}` as "not a Kubernetes object").
//!
//! Verdict: the validator either reads exactly helm's documents (count and JSON, byte for byte,
//! printed as Go prints them) or refuses the text (exit 2); it must never read other documents.
//! Shared by `tests/yaml_differential.rs` (the corpus) and `fuzz/main.rs` (mutated manifests).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

const TEMPLATE: &str = r#"{{- range $path, $_ := .Files.Glob "corpus/*" }}
# file {{ base $path }}
{{- $seq := hasSuffix ".seq.yaml" $path }}
{{- range $piece := regexSplit `(?:^|\s*\n)---\s*` ($.Files.Get $path | trim) -1 }}
{{- if ne $piece "" }}
{{- $p := printf "%s\n" (trim $piece) }}
# doc {{ if $seq }}{{ $p | fromYamlArray | toJson | b64enc }}{{ else }}{{ $p | fromYaml | toJson | b64enc }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
"#;

/// What one reader made of a text.
#[derive(Debug, Clone)]
pub enum Reading {
    /// The documents, as Go's `encoding/json` prints them, empty ones left out.
    Docs(Vec<String>),
    /// The reader refused the text (why).
    Refused(String),
}

impl Reading {
    pub fn refused(&self) -> bool {
        matches!(self, Reading::Refused(_))
    }

    /// Same documents, or both refused (the reasons may differ).
    pub fn same(&self, other: &Reading) -> bool {
        match (self, other) {
            (Reading::Docs(a), Reading::Docs(b)) => a == b,
            (Reading::Refused(_), Reading::Refused(_)) => true,
            _ => false,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Reading::Docs(d) => d.len(),
            Reading::Refused(_) => 0,
        }
    }
}

impl std::fmt::Display for Reading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reading::Docs(d) => write!(f, "{} documents: {}", d.len(), d.join(" | ")),
            Reading::Refused(why) => write!(f, "refused: {}", why.chars().take(300).collect::<String>()),
        }
    }
}

/// helm's reading of each text (by name), from one `helm template` run.
pub fn helm_reads(helm: &Path, texts: &[(String, Vec<u8>)]) -> Result<Vec<Reading>, String> {
    let d = tempfile::tempdir().map_err(|e| e.to_string())?;
    let chart = d.path().join("yamlread");
    std::fs::create_dir_all(chart.join("templates")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(chart.join("corpus")).map_err(|e| e.to_string())?;
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: yamlread\nversion: 0.1.0\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(chart.join("templates/read.yaml"), TEMPLATE).map_err(|e| e.to_string())?;
    for (name, text) in texts {
        std::fs::write(chart.join("corpus").join(name), text).map_err(|e| e.to_string())?;
    }
    let out = Command::new(helm)
        .args(["template", "x"])
        .arg(&chart)
        .env("HELM_CACHE_HOME", d.path().join("cache"))
        .env("HELM_CONFIG_HOME", d.path().join("config"))
        .env("HELM_DATA_HOME", d.path().join("data"))
        .output()
        .map_err(|e| format!("cannot run helm: {e}"))?;
    if !out.status.success() {
        return Err(format!("helm template: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let text = String::from_utf8(out.stdout).map_err(|e| e.to_string())?;
    let mut per: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("# file ") {
            current = Some(name.trim().to_string());
            per.entry(name.trim().to_string()).or_default();
        } else if let Some(b64) = line.strip_prefix("# doc ") {
            let name = current.clone().ok_or("a document before any file")?;
            let json = String::from_utf8(b64decode(b64.trim())).map_err(|e| e.to_string())?;
            per.entry(name).or_default().push(json);
        }
    }
    texts
        .iter()
        .map(|(name, _)| {
            let pieces = per
                .get(name)
                .ok_or_else(|| format!("helm printed nothing for {name}"))?;
            Ok(helm_verdict(name.ends_with(".seq.yaml"), pieces))
        })
        .collect()
}

fn helm_verdict(seq: bool, pieces: &[String]) -> Reading {
    let mut docs = Vec::new();
    for json in pieces {
        let v: serde_json::Value = match serde_json::from_str(json) {
            Ok(v) => v,
            Err(e) => return Reading::Refused(format!("helm printed no JSON ({e}): {json}")),
        };
        let error = if seq {
            v.as_array()
                .filter(|a| a.len() == 1)
                .and_then(|a| a[0].as_str())
                .filter(|s| s.starts_with("error"))
        } else {
            v.as_object()
                .filter(|m| m.len() == 1)
                .and_then(|m| m.get("Error"))
                .and_then(|e| e.as_str())
                .filter(|s| s.starts_with("error"))
        };
        if let Some(e) = error {
            return Reading::Refused(e.to_string());
        }
        if json != "{}" && json != "[]" && json != "null" {
            docs.push(json.clone());
        }
    }
    Reading::Docs(docs)
}

/// The validator's reading of a text, as `check --manifests` reads it (`yaml::manifest_documents`,
/// every document a mapping; a sequence for `*.seq.yaml`).
pub fn validator_reads(name: &str, text: &[u8]) -> Reading {
    let seq = name.ends_with(".seq.yaml");
    let Ok(text) = std::str::from_utf8(text) else {
        return Reading::Refused("not UTF-8".into());
    };
    let docs = match nvcf_validate::yaml::manifest_documents(text) {
        Ok(d) => d,
        Err(e) => return Reading::Refused(format!("{e:#}")),
    };
    let mut out = Vec::new();
    for d in docs {
        let shape_ok = if seq { d.value.is_array() } else { d.value.is_object() };
        if !shape_ok {
            return Reading::Refused(format!(
                "document at line {} is not a {}",
                d.line,
                if seq { "sequence" } else { "mapping" }
            ));
        }
        let json = nvcf_validate::yaml::resolve::go_json(&d.value);
        if json != "{}" && json != "[]" {
            out.push(json);
        }
    }
    Reading::Docs(out)
}

fn b64decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            _ => 63,
        }
    };
    let mut out = Vec::new();
    for chunk in s.as_bytes().chunks(4) {
        let pad = chunk.iter().filter(|&&c| c == b'=').count();
        let mut acc = 0u32;
        for &c in &chunk[..4 - pad] {
            acc = (acc << 6) | val(c);
        }
        acc <<= 6 * pad as u32;
        out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8][..3 - pad.min(3)]);
    }
    out
}
