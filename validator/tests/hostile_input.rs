//! Manifests as an attacker or a careless template would write them (issue 10, items 3, 6, 7):
//! each case reproduces an input that passed, crashed or was misread before, through the real
//! binary (`check --manifests … --format json`).

mod support;

use serde_json::Value;
use std::path::Path;
use support::run::{command, run, Run};

fn check_text(name: &str, text: &[u8], env: &[(&str, &str)]) -> Run {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join(name), text).unwrap();
    check_in(d.path(), name, env)
}

fn check_in(dir: &Path, name: &str, env: &[(&str, &str)]) -> Run {
    // The registry these inputs use is allowed, so only what the input itself does is reported
    // (an absent allow-list allows nothing).
    let policy = dir.join("hostile-policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\nsettings:\n  allowedImageRegistries: [registry.example.com]\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    run(
        dir,
        &["check", "--manifests", name, "--format", "json", "--policy", policy],
        env,
        None,
    )
}

fn rules(r: &Run) -> Vec<String> {
    let Some(rep) = r.report() else { return Vec::new() };
    rep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

fn finding(r: &Run, rule: &str) -> Value {
    r.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .cloned()
        .unwrap_or_else(|| panic!("no {rule} finding: {:?} {}", rules(r), r.stderr))
}

const POD: &str = r#"{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: x}, spec: {containers: [{name: c, image: "registry.example.com/i:1.0", args: ["--quic-insecure"]}]}}"#;

#[test]
fn content_on_the_document_marker_line_is_read() {
    let r = check_text("m.yaml", format!("--- {POD}\n").as_bytes(), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(finding(&r, "insecure-flag")["source"]["line"], 1);
    // Two documents, each on its own marker line: both are objects.
    let r = check_text(
        "m.yaml",
        format!("--- {POD}\n--- {}\n", POD.replace("name: p,", "name: q,")).as_bytes(),
        &[],
    );
    assert_eq!(r.json()["summary"]["objects"], 2, "{}", r.stderr);
}

#[test]
fn a_line_helm_splits_at_but_yaml_does_not_is_exit_2() {
    // helm starts a new manifest at `---apiVersion: v1`; a YAML parser reads one ConfigMap.
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, namespace: x}}\ndata:\n  k: |\n    v\n---{POD}\n"
    );
    let r = check_text("m.yaml", text.as_bytes(), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    // This refusal, at this line: a YAML syntax error at line 7 would also say "line 7".
    assert!(
        r.stderr.contains("line 7: `---{apiVersion: v1")
            && r.stderr
                .contains("starts a new document for helm (which splits at every line beginning with ---)"),
        "{}",
        r.stderr
    );
}

#[test]
fn every_yaml_line_break_ends_a_line() {
    for br in ["\r", "\r\n", "\u{85}", "\u{2028}", "\u{2029}"] {
        let pod = format!(
            "# c{br}apiVersion: v1{br}kind: Pod{br}metadata:{br}  name: p{br}  namespace: x{br}spec:{br}  containers:{br}  - name: c{br}    image: registry.example.com/i:1.0{br}    args: [--quic-insecure]{br}"
        );
        let r = check_text("cr.yaml", pod.as_bytes(), &[]);
        assert_eq!(r.code, 1, "{br:?}: {}", r.stderr);
        assert_eq!(finding(&r, "insecure-flag")["source"]["line"], 11, "{br:?}");
        // Two documents: helm cuts rendered manifests only at `\n---`, so after any other break
        // it reads the first document alone (`sigs.k8s.io/yaml` ignores the rest) where a YAML
        // parser reads both. Neither reading is judged: exit 2 at the hidden document's line.
        let text = format!("apiVersion: v1{br}kind: ConfigMap{br}metadata: {{name: a, namespace: x}}{br}---{br}{pod}");
        let r = check_text("cr.yaml", text.as_bytes(), &[]);
        if br == "\r\n" {
            assert_eq!(r.code, 1, "{br:?}: {}", r.stderr);
            assert_eq!(finding(&r, "insecure-flag")["source"]["line"], 15, "{br:?}");
            assert_eq!(r.json()["summary"]["objects"], 2, "{br:?}");
        } else {
            assert_eq!(r.code, 2, "{br:?}: {}", r.stderr);
            assert!(
                r.stderr.contains("line 6") && r.stderr.contains("helm does not see"),
                "{br:?}: {}",
                r.stderr
            );
        }
    }
}

#[test]
fn merge_keys_are_applied() {
    let inline = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\nspec:\n  containers:\n  - <<: {name: c, image: \"registry.example.com/i:1.0\", args: [\"--quic-insecure\"]}\n";
    let r = check_text("m.yaml", inline.as_bytes(), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(rules(&r), vec!["insecure-flag"], "{}", r.stderr);
    // `- <<: *base`: the container takes the anchored container's image (read with a literal `<<`
    // key, it had none and image-pinned fired).
    let anchored = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: x}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      initContainers:\n      - &base {name: init, image: \"registry.example.com/i:1.0\"}\n      containers:\n      - <<: *base\n        name: c\n        args: [\"--quic-insecure\"]\n";
    let r = check_text("m.yaml", anchored.as_bytes(), &[]);
    assert_eq!(rules(&r), vec!["insecure-flag"], "{}", r.stderr);
    assert_eq!(finding(&r, "insecure-flag")["source"]["line"], 14);
}

#[test]
fn yaml_1_1_scalars_are_read_as_the_api_server_receives_them() {
    // helm and kubectl send `name: off` as the boolean false, which the API server refuses; the
    // gate must not judge it as an object named "off".
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: off, namespace: x}\n";
    let r = check_text("m.yaml", text.as_bytes(), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("metadata.name"), "{}", r.stderr);
    let r = check_text("m.yaml", text.replace("name: off", "name: 'off'").as_bytes(), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn objects_without_identity_are_exit_2() {
    for (field, text) in [
        ("apiVersion", "apiVersion: \"\"\nkind: Pod\nmetadata: {name: p}\n"),
        ("kind", "apiVersion: v1\nkind: ''\nmetadata: {name: p}\n"),
        ("metadata.name", "apiVersion: v1\nkind: Pod\nmetadata: {name: \"\"}\n"),
    ] {
        let r = check_text("e.yaml", text.as_bytes(), &[]);
        assert_eq!(r.code, 2, "{field}");
        assert!(r.stderr.contains(field) && r.stderr.contains("e.yaml"), "{}", r.stderr);
    }
}

#[test]
fn deep_nesting_is_refused_while_parsing() {
    let mut text = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: ");
    text.push_str(&"[".repeat(200_000));
    let r = check_text("deep.yaml", text.as_bytes(), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nested deeper"), "{}", r.stderr);
}

#[test]
fn replicas_from_the_input_are_never_enumerated() {
    let fixtures = support::repo().join("validator/tests/fixtures/pki");
    let exact =
        std::fs::read_to_string(fixtures.join("fires-san-covers-advertised-name-exact-pod-names.yaml")).unwrap();
    let wildcard =
        std::fs::read_to_string(fixtures.join("silent-san-covers-advertised-name-wildcard-one-label.yaml")).unwrap();
    for replicas in ["2147483647", "9223372036854775807", "18446744073709551615"] {
        let r = check_text(
            "sts.yaml",
            exact
                .replace("replicas: 3", &format!("replicas: {replicas}"))
                .as_bytes(),
            &[],
        );
        assert_eq!(r.code, 1, "{replicas}: {}", r.stderr);
        let msg = finding(&r, "san-covers-advertised-name")["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            msg.contains("request-router-2.") && msg.contains("more replicas"),
            "{msg}"
        );
        let r = check_text(
            "sts.yaml",
            wildcard
                .replace("replicas: 5", &format!("replicas: {replicas}"))
                .as_bytes(),
            &[],
        );
        assert!(
            !rules(&r).contains(&"san-covers-advertised-name".to_string()),
            "{replicas}: {:?}",
            rules(&r)
        );
    }
    // The names the Certificate lists are enough for two replicas and not for three.
    let r = check_text("sts.yaml", exact.replace("replicas: 3", "replicas: 2").as_bytes(), &[]);
    assert!(
        !rules(&r).contains(&"san-covers-advertised-name".to_string()),
        "{:?}",
        rules(&r)
    );
    let r = check_text("sts.yaml", exact.as_bytes(), &[]);
    let msg = finding(&r, "san-covers-advertised-name")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("request-router-2.") && !msg.contains("more replicas"),
        "{msg}"
    );
}

#[test]
fn a_panic_is_exit_2_with_a_message() {
    let r = check_text(
        "m.yaml",
        format!("--- {POD}\n").as_bytes(),
        &[("NVCF_VALIDATE_DEBUG_PANIC", "1")],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("internal error"), "{}", r.stderr);
}

#[test]
fn a_document_over_the_size_limit_is_exit_2() {
    // One ConfigMap of 9 MiB: larger than any object the API server stores.
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, namespace: x}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big, namespace: x}}\ndata:\n  k: \"{}\"\n",
        "x".repeat(9 << 20)
    );
    let r = check_text("big.yaml", text.as_bytes(), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("big.yaml")
            && r.stderr.contains("starts at line 4")
            && r.stderr.contains("8 MiB limit for one document"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.len() < 2000, "{}", r.stderr.len());
}

#[test]
fn standard_input_over_the_limit_is_refused_without_being_read_whole() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    // Spawned here rather than through `run`: the stream is written while the gate reads it.
    let mut child = command(d.path())
        .args(["check", "--manifests", "-", "--format", "json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // An endless stream (10 GB would do the same): a comment line repeated until the reader stops.
    let writer = std::thread::spawn(move || {
        let line = [b"# padding\n".as_slice(); 6554].concat();
        let mut sent: u64 = 0;
        while stdin.write_all(&line).is_ok() {
            sent += line.len() as u64;
            if sent > 4 << 30 {
                break;
            }
        }
        sent
    });
    let out = child.wait_with_output().unwrap();
    let sent = writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("standard input") && stderr.contains("more than 512 MiB"),
        "{stderr}"
    );
    // It stopped at the limit (plus what the pipe holds), not at the end of the stream.
    let limit = nvcf_validate::yaml::MAX_INPUT as u64;
    assert!(sent < limit + (8 << 20), "{sent} bytes were written");
}

#[test]
fn errors_quote_no_key_and_at_most_a_capped_excerpt() {
    let key = "-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBMHcCAQEEIBMHcCAQEEIBMHcCAQEEIBMHcCAQEEIB\\n-----END EC PRIVATE KEY-----";
    let long = format!("v{}", "0".repeat(5000));
    let cases = [
        // A value that cannot be decoded as its tag says.
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: !!int \"{key}\", namespace: x}}\n"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: !!int \"{long}\", namespace: x}}\n"),
        // An anchor that was never defined, named by a key or a 5 KB name.
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: *MHcCAQEEIBMHcCAQEEIBMHcCAQEEIBMHcCAQEEIB, namespace: x}\n"
            .to_string(),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: *{long}, namespace: x}}\n"),
        // A line helm starts a manifest at.
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, namespace: x}}\n---{}\n",
            key.replace("\\n", "")
        ),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, namespace: x}}\n---{long}\n"),
    ];
    for text in &cases {
        let r = check_text("e.yaml", text.as_bytes(), &[]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("e.yaml"), "{}", r.stderr);
        assert!(
            !r.stderr.contains("MHcC") && !r.stderr.contains("BEGIN"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains(&"0".repeat(200)), "{}", r.stderr);
        assert!(r.stderr.len() < 1500, "{} bytes: {}", r.stderr.len(), r.stderr);
    }
}
