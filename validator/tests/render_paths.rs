//! The render paths read rendered output alike (issue 10 audit, items 1 and 8), through the real
//! helmfile/helm: a remote chart rendered from `--chart-mirror` is read exactly as the same chart
//! rendered as a local chart (helm writes one file per template for both; helm's stdout is never
//! cut at `# Source:` comments, which a template can forge), a template with CR-only line ends is
//! judged with the right line, and a `helmfile template` that writes no output directory is
//! exit 2.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::run::{run, Run};
use support::tool;

fn check(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-cache", "--format", "json"]);
    run(dir, &all, &[], None)
}

/// (rule, object, line) of every finding.
fn findings(r: &Run) -> Vec<(String, String, Option<u64>)> {
    let Some(rep) = r.report() else { return Vec::new() };
    let mut out: Vec<_> = rep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_string(),
                format!(
                    "{} {}/{}",
                    f["object"]["kind"].as_str().unwrap_or_default(),
                    f["object"]["namespace"].as_str().unwrap_or_default(),
                    f["object"]["name"].as_str().unwrap_or_default()
                ),
                f["source"]["line"].as_u64(),
            )
        })
        .collect();
    out.sort();
    out
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Local chart `a` under `<dir>/charts/a` with one template `templates/<file>`.
fn chart_a(dir: &Path, file: &str, template: &str) {
    write(
        &dir.join("charts/a/Chart.yaml"),
        "apiVersion: v2\nname: a\nversion: 0.1.0\n",
    );
    write(&dir.join("charts/a/templates").join(file), template);
}

/// A Blob holding an insecure container, then a column-0 `# Source:` comment and the head of a
/// Pod, in ONE template document: helm (and every YAML parser) reads one Pod whose later keys
/// win and whose `spec` is the Blob's, insecure container included.
const FORGED_SOURCE: &str = "apiVersion: example.com/v1\nkind: Blob\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: \"docker.io/library/busybox:1.36\"\n    args: [{{ .Values.flag | quote }}]\n# Source: upstream/templates/other.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: blobs.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Blob, plural: blobs, singular: blob, listKind: BlobList}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";

fn chart(dir: &Path) {
    write(
        &dir.join("Chart.yaml"),
        "apiVersion: v2\nname: upstream\nversion: 1.2.3\n",
    );
    write(&dir.join("values.yaml"), "flag: --quic-insecure\n");
    write(&dir.join("templates/pod.yaml"), FORGED_SOURCE);
    write(&dir.join("templates/crd.yaml"), CRD);
}

const POLICY: &str = "version: 1\nsettings:\n  allowedChartRepositories: [https://charts.invalid/upstream]\n  allowedImageRegistries: [docker.io]\n";

/// The chart packaged into a mirror, pinned in the lock, installed from a repository.
fn mirror_stack(d: &Path, values: &str) {
    let src = d.join("src");
    chart(&src);
    let mirror = d.join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    let o = Command::new(tool("helm"))
        .arg("package")
        .arg(&src)
        .arg("--destination")
        .arg(&mirror)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tgz: PathBuf = mirror.join("upstream-1.2.3.tgz");
    let sha = {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(std::fs::read(&tgz).unwrap()))
    };
    write(
        &d.join("helmfile.yaml"),
        &format!(
            "repositories:\n- name: upstream-repo\n  url: https://charts.invalid/upstream\nreleases:\n- name: upstream\n  namespace: ns1\n  chart: upstream-repo/upstream\n  version: 1.2.3\n{values}"
        ),
    );
    write(
        &d.join("charts.lock.yaml"),
        &format!("charts:\n- release: upstream\n  chart: upstream\n  repository: https://charts.invalid/upstream\n  version: 1.2.3\n  sha256: {sha}\n"),
    );
    write(&d.join("validator-policy.yaml"), POLICY);
}

/// The same chart as a local chart.
fn local_stack(d: &Path, values: &str) {
    chart(&d.join("charts/upstream"));
    write(
        &d.join("helmfile.yaml"),
        &format!("releases:\n- name: upstream\n  namespace: ns1\n  chart: ./charts/upstream\n{values}"),
    );
    write(&d.join("validator-policy.yaml"), POLICY);
}

#[test]
fn a_mirror_render_is_read_exactly_as_a_local_one() {
    let (m, l) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    mirror_stack(m.path(), "");
    local_stack(l.path(), "");
    let mirror = check(m.path(), &["--file", "helmfile.yaml", "--chart-mirror", "mirror"]);
    let local = check(l.path(), &["--file", "helmfile.yaml", "--offline"]);
    assert_eq!(mirror.code, 1, "{}", mirror.stderr);
    assert_eq!(local.code, 1, "{}", local.stderr);
    let mirror_report = mirror.json();
    let up = &mirror_report["environments"][0]["releases"][0];
    assert_eq!(up["rendered"], true, "{up}");
    assert!(
        findings(&mirror)
            .iter()
            .any(|(rule, obj, _)| rule == "insecure-flag" && obj == "Pod ns1/p"),
        "{:?}\n{}",
        findings(&mirror),
        mirror.stderr
    );
    // Same objects, same findings (lines differ: the mirror's point into the tarball's files,
    // which the gate cannot open, so they are the rendered document's).
    let strip = |f: Vec<(String, String, Option<u64>)>| f.into_iter().map(|(r, o, _)| (r, o)).collect::<Vec<_>>();
    assert_eq!(strip(findings(&mirror)), strip(findings(&local)));
    let objects = |r: &Run| r.json()["summary"]["objects"].clone();
    assert_eq!(objects(&mirror), objects(&local));
    assert_eq!(objects(&mirror), 2, "the CRD and one Pod (no Blob)");

    // The near miss: the same chart with a harmless flag passes on both paths.
    let (m, l) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let values = "  values:\n  - flag: --verbose\n";
    mirror_stack(m.path(), values);
    local_stack(l.path(), values);
    let mirror = check(m.path(), &["--file", "helmfile.yaml", "--chart-mirror", "mirror"]);
    let local = check(l.path(), &["--file", "helmfile.yaml", "--offline"]);
    assert_eq!(
        findings(&mirror).iter().filter(|f| f.0 == "insecure-flag").count(),
        0,
        "{:?}",
        findings(&mirror)
    );
    assert_eq!(mirror.code, local.code, "{}\n{}", mirror.stderr, local.stderr);
    assert_eq!(mirror.code, 0, "{:?} {}", findings(&mirror), mirror.stderr);
}

#[test]
fn a_template_with_cr_line_ends_is_judged_at_its_line() {
    let d = tempfile::tempdir().unwrap();
    let lines = [
        "# a template written with CR-only line ends",
        "apiVersion: v1",
        "kind: Pod",
        "metadata:",
        "  name: p",
        "spec:",
        "  containers:",
        "  - name: c",
        "    image: \"docker.io/library/busybox:1.36\"",
        "    args:",
        "    - --quic-insecure",
    ];
    chart_a(d.path(), "pod.yaml", &(lines.join("\r") + "\r"));
    write(
        &d.path().join("helmfile.yaml"),
        "releases:\n- name: a\n  namespace: ns1\n  chart: ./charts/a\n",
    );
    write(&d.path().join("validator-policy.yaml"), POLICY);
    let r = check(d.path(), &["--file", "helmfile.yaml", "--offline"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let rep = &r.json();
    let f = rep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "insecure-flag")
        .unwrap_or_else(|| panic!("no insecure-flag: {rep}"));
    assert_eq!(
        (&f["object"]["kind"], &f["object"]["name"]),
        (&"Pod".into(), &"p".into()),
        "{f}"
    );
    assert_eq!(f["source"]["file"], "charts/a/templates/pod.yaml", "{f}");
    assert_eq!(f["source"]["line"], 11, "{f}");
}

#[test]
fn a_template_run_that_writes_no_output_directory_is_exit_2() {
    // The state places the release in ns1 while `helmfile build` loads it and in ns2 while
    // `helmfile template` does (it asks its own command line): the template run, asked for
    // release a in ns1, matches nothing and writes nothing. That is never "no objects".
    let d = tempfile::tempdir().unwrap();
    chart_a(
        d.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    write(
        &d.path().join("helmfile.yaml.gotmpl"),
        "releases:\n- name: a\n  namespace: {{ if contains \"template\" (exec \"sh\" (list \"-c\" \"tr '\\\\0' ' ' < /proc/$PPID/cmdline\")) }}ns2{{ else }}ns1{{ end }}\n  chart: ./charts/a\n",
    );
    write(&d.path().join("validator-policy.yaml"), "version: 1\n");
    let r = check(d.path(), &["--file", "helmfile.yaml.gotmpl", "--offline"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("environment default")
            && r.stderr
                .contains("helmfile template wrote no readable output directory")
            && r.stderr.contains("nothing could be validated"),
        "{}",
        r.stderr
    );
}

#[test]
fn render_errors_quote_no_key_and_are_capped() {
    let key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBMHcCAQEEIBMHcCAQEEIBMHcCAQEEIBMHcCAQEEIB\n-----END EC PRIVATE KEY-----\n";
    for value in [key.to_string(), format!("v{}", "0".repeat(5000))] {
        let d = tempfile::tempdir().unwrap();
        // The template refuses its value, quoting it: helm's error holds the value.
        chart_a(d.path(), "cm.yaml", "{{ fail (printf \"bad value: %s\" .Values.v) }}\n");
        write(
            &d.path().join("values.json"),
            &serde_json::json!({ "v": value }).to_string(),
        );
        write(
            &d.path().join("helmfile.yaml"),
            "releases:\n- name: a\n  namespace: ns1\n  chart: ./charts/a\n  values:\n  - values.json\n",
        );
        write(&d.path().join("validator-policy.yaml"), POLICY);
        let r = check(d.path(), &["--file", "helmfile.yaml", "--offline"]);
        let report = r.report().map(|v| v.to_string()).unwrap_or_default();
        assert!(r.code == 2 || r.code == 1, "{}", r.stderr);
        assert!(
            r.stderr.contains("helmfile") || report.contains("render"),
            "{}\n{report}",
            r.stderr
        );
        for shown in [&r.stderr, &report] {
            assert!(!shown.contains("MHcC") && !shown.contains("BEGIN EC"), "{shown}");
            assert!(!shown.contains(&"0".repeat(400)), "{shown}");
        }
        assert!(r.stderr.len() < 4000, "{} bytes: {}", r.stderr.len(), r.stderr);
    }
}
