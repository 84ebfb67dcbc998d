//! Differential test: the validator reads rendered manifests as helm does. Every file of
//! `yaml_corpus/` is read by the real helm as helm reads rendered manifests (`SplitManifests`'
//! regex, then `sigs.k8s.io/yaml` per piece, see `fuzz/helm_oracle.rs`) and by the validator as
//! `check --manifests` reads it (`yaml::manifest_documents`). For every file the validator must
//! read exactly helm's documents -- their count and each one's JSON, byte for byte, printed as Go
//! prints it -- or refuse the file; where helm refuses, the validator must refuse too. The files
//! the validator refuses although helm reads them are listed below with the reason: there a YAML
//! parser (kubectl, a policy engine, a reviewer's editor) reads other documents than helm applies.

mod support;

#[path = "fuzz/helm_oracle.rs"]
mod helm_oracle;

use helm_oracle::{helm_reads, validator_reads};

/// Files helm reads but the validator refuses, because helm's reading and the YAML stream differ.
const REFUSED_THOUGH_HELM_READS: &[(&str, &str)] = &[
    (
        "cr-multi-doc.yaml",
        "CR-only line ends: one piece for helm (first document only), two YAML documents",
    ),
    (
        "md-cr-separators.yaml",
        "CR-only line ends: helm reads the first document only",
    ),
    (
        "md-end-then-content.yaml",
        "helm ignores what follows `...`; YAML refuses a document after `...` without `---`",
    ),
    (
        "md-dashes-glued.yaml",
        "`---b: 2` starts a piece for helm and is text for YAML",
    ),
    (
        "md-keep-chomping.yaml",
        "helm trims the trailing newlines a `|+` scalar keeps",
    ),
    (
        "md-nbsp-after-marker.yaml",
        "helm trims the NBSP that YAML keeps in the key",
    ),
    (
        "md-ls-separators.yaml",
        "U+2028 line ends: helm reads the first document only",
    ),
    (
        "bom-then-nbsp.yaml",
        "helm drops the leading BOM and trims the NBSP after it, which YAML keeps in the key",
    ),
    (
        "md-bom-glued-dashes.yaml",
        "after the BOM, `---x: 1` starts a piece for helm and is text for YAML",
    ),
    (
        "escape-single-quote.yaml",
        "`\\'` in double quotes: an escape for Go's YAML 1.1 parser, an error for libyaml",
    ),
    (
        "md-bom.yaml",
        "a byte order mark after the start of the text: libyaml skips it at any line start, Go only at a piece's start",
    ),
];

#[test]
fn the_validator_reads_manifests_as_helm_does() {
    let dir = support::repo().join("validator/tests/yaml_corpus");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    assert!(
        files.len() >= 60,
        "the corpus must stay at least 60 files, has {}",
        files.len()
    );
    let multi = files.iter().filter(|(n, _)| n.starts_with("md-")).count();
    assert!(multi >= 10, "at least 10 multi-document files (md-*), has {multi}");
    let helm = helm_reads(&support::tool("helm"), &files).unwrap();
    let mut problems = Vec::new();
    let (mut agreed_docs, mut helm_refused, mut multi_docs) = (0, 0, 0);
    for ((name, text), theirs) in files.iter().zip(&helm) {
        let ours = validator_reads(name, text);
        eprintln!(
            "{name:36} helm {:>2} docs{:8} validator {}",
            theirs.len(),
            if theirs.refused() { " refused" } else { "" },
            if ours.refused() { "refused" } else { "reads them" }
        );
        let listed = REFUSED_THOUGH_HELM_READS.iter().find(|(n, _)| n == name);
        match listed {
            Some((_, why)) => {
                if !ours.refused() || theirs.refused() {
                    problems.push(format!("{name} ({why}): expected helm to read it and the validator to refuse it\n  helm:      {theirs}\n  validator: {ours}"));
                }
            }
            None if ours.same(theirs) => {
                if theirs.refused() {
                    helm_refused += 1;
                } else {
                    agreed_docs += theirs.len();
                    if theirs.len() > 1 {
                        multi_docs += 1;
                    }
                }
            }
            None => problems.push(format!("{name}:\n  helm:      {theirs}\n  validator: {ours}")),
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} differ:\n{}",
        problems.len(),
        files.len(),
        problems.join("\n")
    );
    eprintln!("{agreed_docs} documents read alike, {multi_docs} files with several, {helm_refused} files refused by both, {} refused by the validator alone", REFUSED_THOUGH_HELM_READS.len());
    // The corpus keeps cases on every side of the line: read alike (with several documents),
    // refused by both, refused by the validator alone.
    assert!(
        helm_refused >= 3 && helm_refused < files.len() / 2,
        "{helm_refused} refused by helm"
    );
    assert!(multi_docs >= 8, "{multi_docs} files where both read several documents");
    assert!(agreed_docs >= 60, "{agreed_docs} documents read alike");
}
