//! Differential test: the validator reads YAML as helm does. Every document of `yaml_corpus/` is
//! read by the real helm (a chart whose template does `.Files.Get | fromYaml | toJson`, i.e.
//! `sigs.k8s.io/yaml` over go-yaml v2, as helm and kubectl read manifests) and by
//! `nvcf_validate::yaml::documents`; the JSON must agree byte for byte (printed as Go prints it:
//! sorted keys, numbers as float64), and where helm refuses a document the validator must too.
//!
//! `fromYaml` reads the first document of a stream (yaml.v2's `Unmarshal`), so for multi-document
//! files the first document is compared; files named `*.seq.yaml` hold a top-level sequence and
//! go through `fromYamlArray`.

mod support;

use nvcf_validate::yaml;
use std::collections::BTreeMap;
use std::process::Command;

const TEMPLATE: &str = r#"{{- range $path, $_ := .Files.Glob "corpus/*" }}
{{- if hasSuffix ".seq.yaml" $path }}
# {{ base $path }} {{ $.Files.Get $path | fromYamlArray | toJson | b64enc }}
{{- else }}
# {{ base $path }} {{ $.Files.Get $path | fromYaml | toJson | b64enc }}
{{- end }}
{{- end }}
"#;

fn b64decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::new();
    for chunk in s.as_bytes().chunks(4) {
        let pad = chunk.iter().filter(|&&c| c == b'=').count();
        let mut acc = 0u32;
        for &c in &chunk[..4 - pad] {
            acc = (acc << 6) | val(c) as u32;
        }
        acc <<= 6 * pad as u32;
        out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8][..3 - pad]);
    }
    out
}

/// What helm printed per corpus file.
fn helm_reads(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, String> {
    let d = tempfile::tempdir().unwrap();
    let chart = d.path().join("yamlread");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::create_dir_all(chart.join("corpus")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: yamlread\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(chart.join("templates/read.yaml"), TEMPLATE).unwrap();
    for (name, text) in files {
        std::fs::write(chart.join("corpus").join(name), text).unwrap();
    }
    let out = Command::new(support::tool("helm"))
        .args(["template", "x"])
        .arg(&chart)
        .env("HELM_CACHE_HOME", d.path().join("cache"))
        .env("HELM_CONFIG_HOME", d.path().join("config"))
        .env("HELM_DATA_HOME", d.path().join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "helm template: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| !l.starts_with("Source:"))
        .map(|l| {
            let (name, b64) = l.split_once(' ').unwrap();
            (name.to_string(), String::from_utf8(b64decode(b64.trim())).unwrap())
        })
        .collect()
}

/// What the validator reads, in the same form; `ERROR` where it refuses.
fn validator_reads(name: &str, text: &[u8]) -> String {
    let seq = name.ends_with(".seq.yaml");
    let Ok(text) = std::str::from_utf8(text) else {
        return "ERROR".into();
    };
    let docs = match yaml::documents(text) {
        Ok(d) => d,
        Err(_) => return "ERROR".into(),
    };
    // yaml.v2's Unmarshal reads the stream's first document (an empty one reads as nothing).
    let first = docs.into_iter().next().filter(|d| d.index == 0).map(|d| d.value);
    match (first, seq) {
        (None, false) => "{}".into(),
        (None, true) => "[]".into(),
        (Some(v), false) if v.is_object() => yaml::resolve::go_json(&v),
        (Some(v), true) if v.is_array() => yaml::resolve::go_json(&v),
        _ => "ERROR".into(),
    }
}

fn helm_verdict(name: &str, json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let refused = if name.ends_with(".seq.yaml") {
        // fromYamlArray returns `[error text]` when it cannot read the text.
        v.as_array()
            .is_some_and(|a| a.len() == 1 && a[0].as_str().is_some_and(|s| s.starts_with("error")))
    } else {
        v.get("Error").is_some()
    };
    if refused {
        "ERROR".into()
    } else {
        json.to_string()
    }
}

#[test]
fn the_validator_reads_yaml_as_helm_does() {
    let dir = support::repo().join("validator/tests/yaml_corpus");
    let files: BTreeMap<String, Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    assert!(
        files.len() >= 40,
        "the corpus must stay at least 40 documents, has {}",
        files.len()
    );
    let helm = helm_reads(&files);
    assert_eq!(
        helm.len(),
        files.len(),
        "helm read every corpus file: {:?}",
        helm.keys()
    );
    let mut mismatches = Vec::new();
    let mut refused = 0;
    for (name, text) in &files {
        let theirs = helm_verdict(name, &helm[name]);
        let ours = validator_reads(name, text);
        if theirs == "ERROR" {
            refused += 1;
        }
        if theirs != ours {
            mismatches.push(format!("{name}:\n  helm:      {theirs}\n  validator: {ours}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        files.len(),
        mismatches.join("\n")
    );
    // The corpus keeps cases on both sides of the line.
    assert!(refused >= 3 && refused < files.len() / 2, "{refused} refused");
}
