//! `nvcf-validate graph` end to end: the repository's stack rendered with the real helmfile/helm,
//! its pictures read by their real consumers (Graphviz `dot` lays out the DOT to SVG; the real
//! mermaid parser, `tests/mermaid/check.mjs`, parses the mermaid), a mutated stack whose broken
//! edge carries its rule, hostile names, bad input, and the generated docs kept fresh.
//!
//! `dot` (Debian package graphviz) and the mermaid parser (`npm ci` in tests/mermaid) are
//! installed by ./ci/test.

mod support;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use support::run::{run, schema_errors, Run, AFTER_EXAMPLES, BIN};
use support::{copy_dir, repo};

const ENVIRONMENTS: &[&str] = &["default", "split-cluster", "customer-issuer", "customer-secret"];

/// One render cache for this file's runs, filled once with every environment of the
/// repository's stack before any test reads it (tests run in parallel: without this each would
/// render the same environments at the same time).
fn cache() -> &'static Path {
    static C: OnceLock<tempfile::TempDir> = OnceLock::new();
    C.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        fill(d.path(), &repo(), &[]);
        d
    })
    .path()
}

/// Render `envs` (all when empty) of the stack in `dir` into the cache at `cache`.
/// (The clock is the one of every other run of this file; what is filled is the render, which
/// does not depend on it.)
fn fill(cache: &Path, dir: &Path, envs: &[&str]) {
    let mut args = vec!["graph", "--file", "helmfile.yaml", "--offline", "--format", "json"];
    for e in envs {
        args.extend(["-e", e]);
    }
    let r = run(
        dir,
        &args,
        &[
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
            ("NVCF_VALIDATE_NOW", AFTER_EXAMPLES),
        ],
        None,
    );
    assert!((0..=1).contains(&r.code), "{}", r.stderr);
}

/// A copy of the repository's stack whose UDPRoute sends QUIC to a port the router Service does
/// not have (50073), rendered once for the tests that read it.
fn broken_stack() -> &'static Path {
    static B: OnceLock<tempfile::TempDir> = OnceLock::new();
    B.get_or_init(|| {
        let d = stack_copy();
        let udp = d.path().join("charts/request-router/templates/udproute.yaml");
        let text = std::fs::read_to_string(&udp).unwrap();
        assert!(text.contains("port: 50072"));
        std::fs::write(&udp, text.replace("port: 50072", "port: 50073")).unwrap();
        fill(cache(), d.path(), &["split-cluster", "default"]);
        d
    })
    .path()
}

fn graph(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["graph"];
    all.extend_from_slice(args);
    let cache = cache().to_str().unwrap();
    run(
        dir,
        &all,
        &[("XDG_CACHE_HOME", cache), ("NVCF_VALIDATE_NOW", AFTER_EXAMPLES)],
        None,
    )
}

/// The repository's stack (or a copy of it) for one environment, in a format.
fn draw(dir: &Path, env: &str, format: &str) -> Run {
    graph(
        dir,
        &["--file", "helmfile.yaml", "--offline", "-e", env, "--format", format],
    )
}

/// A copy of the repository's stack (state, charts, values, policy, lock).
fn stack_copy() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in ["helmfile.yaml", "charts.lock.yaml", "validator-policy.yaml"] {
        std::fs::copy(repo().join(f), d.path().join(f)).unwrap();
    }
    for dir in ["charts", "values", "ci", "examples"] {
        copy_dir(&repo().join(dir), &d.path().join(dir));
    }
    d
}

/// `from label → edge → to label` with the edge's rules, of the only environment.
fn edges(doc: &Value) -> Vec<(String, String, String, Vec<String>)> {
    let env = &doc["environments"][0];
    let label = |id: &Value| -> String {
        let n = env["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| &n["id"] == id)
            .unwrap();
        n["label"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    env["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                label(&e["from"]),
                e["label"].as_str().unwrap().to_string(),
                label(&e["to"]),
                e["marks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["rule"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

/// The edge `from -label-> to` (substrings of the node labels); panics with every edge if absent.
fn edge<'a>(all: &'a [(String, String, String, Vec<String>)], from: &str, label: &str, to: &str) -> &'a [String] {
    all.iter()
        .find(|(f, l, t, _)| f.contains(from) && l == label && t.contains(to))
        .map(|e| e.3.as_slice())
        .unwrap_or_else(|| panic!("no edge {from} -{label}-> {to} in\n{all:#?}"))
}

/// The JSON output against its schema (validator/schema/graph.schema.json).
fn follows_the_schema(doc: &Value) {
    let errors = schema_errors(doc, &repo().join("validator/schema/graph.schema.json"));
    assert!(errors.is_empty(), "{errors:#?}");
}

fn mermaid_parses(files: &[PathBuf]) {
    let dir = repo().join("validator/tests/mermaid");
    assert!(
        dir.join("node_modules/mermaid").is_dir(),
        "the mermaid parser is not installed: run `npm ci --prefix validator/tests/mermaid` (./ci/test does)"
    );
    let out = Command::new("node")
        .arg(dir.join("check.mjs"))
        .args(files)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "mermaid rejected a diagram:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Graphviz lays the DOT out to SVG; returns the SVG.
fn dot_svg(dot: &str) -> String {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("Graphviz `dot` not found: install the Debian package graphviz (./ci/test does)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(dot.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "dot refused the graph: {err}"
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn split_cluster_shows_the_whole_worker_path_and_trust_path() {
    let r = draw(&repo(), "split-cluster", "json");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["schema"], "nvcf-validate/graph/v1");
    follows_the_schema(&doc);
    let e = edges(&doc);
    // gRPC: dial host → Gateway HTTPS listener → GRPCRoute → router Service → router.
    edge(
        &e,
        "gRPC dial address | https://grpc.workers.nvcf.example.com:443",
        "dials",
        "listener worker-grpc HTTPS:443",
    );
    edge(
        &e,
        "listener worker-grpc HTTPS:443",
        "attaches",
        "GRPCRoute nvcf/request-router-worker-grpc",
    );
    edge(
        &e,
        "GRPCRoute nvcf/request-router-worker-grpc",
        "routes to",
        "Service nvcf/request-router |",
    );
    edge(
        &e,
        "Service nvcf/request-router |",
        "routes to",
        "StatefulSet nvcf/request-router",
    );
    // Each pod's advertised name (:authority): its own GRPCRoute → its own Service → the router.
    for pod in ["request-router-0", "request-router-1"] {
        edge(
            &e,
            "listener worker-grpc HTTPS:443",
            "attaches",
            &format!("GRPCRoute nvcf/{pod}-worker-grpc | {pod}.router.workers.nvcf.example.com"),
        );
        edge(
            &e,
            &format!("GRPCRoute nvcf/{pod}-worker-grpc"),
            "routes to",
            &format!("Service nvcf/{pod} |"),
        );
        edge(
            &e,
            &format!("Service nvcf/{pod} |"),
            "routes to",
            "StatefulSet nvcf/request-router",
        );
    }
    // QUIC: each pod's dial host → its own Gateway's UDP listener → its UDPRoute → its Service.
    for (i, pod) in ["request-router-0", "request-router-1"].iter().enumerate() {
        let listener = format!("Gateway nvcf-gateway/nvcf-gateway-quic-{i} | listener worker-quic UDP:50072");
        edge(
            &e,
            "QUIC dial address | {pod_name}.router.workers.nvcf.example.com:50072",
            "dials",
            &listener,
        );
        edge(&e, &listener, "attaches", &format!("UDPRoute nvcf/{pod}-worker-quic"));
        edge(
            &e,
            &format!("UDPRoute nvcf/{pod}-worker-quic"),
            "routes to",
            &format!("Service nvcf/{pod} |"),
        );
    }
    // Trust: OpenBao role → issuer → Certificate → Secret → router mount; bundle → worker profile.
    edge(
        &e,
        "ConfigMap openbao/openbao-pki-role",
        "signs",
        "ClusterIssuer openbao |",
    );
    edge(
        &e,
        "ClusterIssuer openbao |",
        "signs",
        "Certificate nvcf/request-router",
    );
    edge(
        &e,
        "Certificate nvcf/request-router",
        "writes",
        "Secret nvcf/request-router-tls",
    );
    edge(
        &e,
        "Secret nvcf/request-router-tls",
        "mounts",
        "StatefulSet nvcf/request-router",
    );
    // cert-manager trusts OpenBao's listener through the bootstrap CA.
    edge(
        &e,
        "Secret cert-manager/openbao-bootstrap-ca",
        "trusts",
        "ClusterIssuer openbao |",
    );
    edge(
        &e,
        "ConfigMap nvcf/nvcf-trust-bundle",
        "trusts",
        "ConfigMap nvcf/nvcf-worker-profile",
    );
    edge(&e, "ConfigMap nvcf/nvcf-worker-profile", "dials", "gRPC dial address");
    edge(
        &e,
        "StatefulSet nvcf/request-router",
        "presents",
        "request-router-0.router.workers.nvcf.example.com",
    );
    assert!(
        e.iter().all(|x| x.3.is_empty()),
        "the repository's stack has no finding on the picture"
    );
}

#[test]
fn a_mutated_stack_shows_the_broken_edge_with_its_rule() {
    let d = broken_stack();

    let r = draw(d, "split-cluster", "json");
    assert_eq!(r.code, 1, "an error finding is exit 1: {}", r.stderr);
    let e = edges(&r.json());
    assert_eq!(
        edge(
            &e,
            "UDPRoute nvcf/request-router-0-worker-quic",
            "routes to",
            "Service nvcf/request-router-0 |"
        ),
        ["route-backend-resolves"]
    );
    assert_eq!(
        edge(&e, "QUIC dial address", "dials", "listener worker-quic"),
        ["worker-routes-complete"]
    );
    assert!(edge(&e, "GRPCRoute", "routes to", "Service nvcf/request-router |").is_empty());
    assert!(edge(&e, "gRPC dial address", "dials", "listener worker-grpc").is_empty());

    // The same picture in the other formats, read by their real consumers.
    let m = draw(d, "split-cluster", "mermaid");
    assert_eq!(m.code, 1);
    assert!(m.stdout.contains("routes to: route-backend-resolves"));
    // Outside the stack: a new file there would change the render cache key.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("broken.mmd");
    std::fs::write(&file, &m.stdout).unwrap();
    mermaid_parses(&[file]);
    let dot = draw(d, "split-cluster", "dot");
    let svg = dot_svg(&dot.stdout);
    assert!(
        svg.contains("routes to: route&#45;backend&#45;resolves") || svg.contains("routes to: route-backend-resolves")
    );
    assert!(svg.contains("#d1242f"), "the broken edge is drawn red");
}

#[test]
fn every_environment_parses_as_mermaid_and_lays_out_as_dot() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for env in ENVIRONMENTS {
        let m = draw(&repo(), env, "mermaid");
        assert_eq!(m.code, 0, "{env}: {}", m.stderr);
        let f = tmp.path().join(format!("{env}.mmd"));
        std::fs::write(&f, &m.stdout).unwrap();
        files.push(f);
        let d = draw(&repo(), env, "dot");
        assert_eq!(d.code, 0, "{env}: {}", d.stderr);
        assert!(dot_svg(&d.stdout).contains("<svg"));
    }
    // Every environment at once: one diagram, a subgraph per environment.
    let all = graph(
        &repo(),
        &["--file", "helmfile.yaml", "--offline", "--format", "mermaid"],
    );
    assert_eq!(all.code, 0, "{}", all.stderr);
    for env in ENVIRONMENTS {
        assert!(all.stdout.contains(&format!("environment {env}")));
    }
    let f = tmp.path().join("all.mmd");
    std::fs::write(&f, &all.stdout).unwrap();
    files.push(f);
    mermaid_parses(&files);
}

/// Names no chart would render, but an input might: every output must stay well-formed.
const HOSTILE: &str = r##"
apiVersion: v1
kind: ConfigMap
metadata: {name: openbao-pki-role, namespace: openbao}
data:
  role.json: '{"allowed_domains": ["a\"b", "x<script>alert(1)</script>y", "p|q", "l1\nl2", "t```t", "#quot;", "a;b end", "}]) end\\N\\G"]}'
  issuer: "evil\"] --> x[\"pwn"
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: "c\"1", namespace: nvcf}
spec:
  secretName: "s|<b>`x`</b>"
  dnsNames: ["a\"b", "q\n```\nflowchart", "%% comment", "click n0 call alert()"]
  issuerRef: {kind: ClusterIssuer, name: "i\\\"j"}
"##;

fn hostile_diagram() -> nvcf_validate::diagram::Diagram {
    use nvcf_validate::graph::{Graph, Object};
    use nvcf_validate::render::Provenance;
    let docs = nvcf_validate::yaml::documents(HOSTILE).unwrap();
    let objects: Vec<Object> = docs
        .into_iter()
        .filter_map(|d| Object::from_value(d.value, Some("nvcf"), Provenance::default()))
        .collect();
    assert_eq!(objects.len(), 2);
    let g = Graph::new("e\"v<1>|`", objects);
    nvcf_validate::diagram::model::build(&g, &[])
}

#[test]
fn hostile_names_cannot_break_any_format() {
    use nvcf_validate::diagram::{render, Format};
    let d = [hostile_diagram()];
    assert!(d[0].nodes.len() >= 4 && d[0].edges.len() >= 3, "{:#?}", d[0]);
    let tmp = tempfile::tempdir().unwrap();
    let m = render(&d, Format::Mermaid);
    assert!(!m.contains("```"), "no code fence can be closed:\n{m}");
    assert!(!m.contains("<script") && !m.contains("<b>"));
    // Exactly the statements we wrote: one per node, one per edge, nothing injected.
    let nodes = m
        .lines()
        .filter(|l| l.trim_start().starts_with("e0n") && l.contains("[\""))
        .count();
    let links = m.lines().filter(|l| l.contains(" -->|")).count();
    assert_eq!((nodes, links), (d[0].nodes.len(), d[0].edges.len()), "{m}");
    let f = tmp.path().join("hostile.mmd");
    std::fs::write(&f, &m).unwrap();
    mermaid_parses(&[f]);

    let svg = dot_svg(&render(&d, Format::Dot));
    assert!(
        svg.contains("x&lt;script&gt;alert(1)&lt;/script&gt;y"),
        "the name is shown as text"
    );
    assert!(!svg.contains("<script"));
    let j: Value = serde_json::from_str(&render(&d, Format::Json)).unwrap();
    follows_the_schema(&j);
    let labels = j.to_string();
    assert!(labels.contains(r#"a\"b"#), "JSON keeps the names exactly");
}

#[test]
fn bad_input_is_exit_2_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let r = graph(tmp.path(), &["--file", "nope/helmfile.yaml", "--offline"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("nvcf-validate graph: could not draw stack nope/helmfile.yaml"),
        "{}",
        r.stderr
    );

    let r = draw(&repo(), "no-such-environment", "json");
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no-such-environment"), "{}", r.stderr);
    assert!(r.stdout.is_empty());

    let r = draw(&repo(), "split-cluster", "svg");
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("mermaid") && r.stderr.contains("dot"), "{}", r.stderr);

    let out = tmp.path().join("missing-dir/graph.mmd");
    let r = graph(
        &repo(),
        &[
            "--file",
            "helmfile.yaml",
            "--offline",
            "-e",
            "split-cluster",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("cannot write to") && r.stderr.contains("missing-dir"),
        "{}",
        r.stderr
    );

    let policy = tmp.path().join("policy.yaml");
    std::fs::write(&policy, "waivers: [{rule: nope}]\n").unwrap();
    let r = graph(
        &repo(),
        &[
            "--file",
            "helmfile.yaml",
            "--offline",
            "-e",
            "split-cluster",
            "--policy",
            policy.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("policy.yaml"), "{}", r.stderr);
}

#[test]
fn generated_diagrams_in_docs_and_readme_are_fresh() {
    let out = Command::new(repo().join("ci/diagrams"))
        .arg("--check")
        .env("NVCF_VALIDATE", BIN)
        .env("XDG_CACHE_HOME", cache())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_markdown_report_embeds_the_collapsed_diagram_of_an_environment_with_findings() {
    let d = broken_stack();
    let r = run(
        d,
        &[
            "check",
            "--file",
            "helmfile.yaml",
            "--offline",
            "--format",
            "markdown",
            "-e",
            "split-cluster",
            "-e",
            "default",
        ],
        &[
            ("XDG_CACHE_HOME", cache().to_str().unwrap()),
            ("NVCF_VALIDATE_NOW", AFTER_EXAMPLES),
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let md = r.stdout;
    // Only split-cluster has a finding on its picture (default has no worker routes).
    assert_eq!(md.matches("```mermaid").count(), 1, "{md}");
    assert!(md.contains("<code>split-cluster</code>"), "{md}");
    let block = md.split("```mermaid\n").nth(1).unwrap().split("```").next().unwrap();
    assert!(block.contains("routes to: route-backend-resolves"), "{block}");
    // Collapsed: the trust path has no finding and is left out, with a count.
    assert!(!block.contains("openbao-pki-role"), "{block}");
    assert!(block.contains("without findings not shown"), "{block}");
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("comment.mmd");
    std::fs::write(&f, block).unwrap();
    mermaid_parses(&[f]);
}

#[test]
fn in_cluster_workers_dial_each_pod_by_its_headless_name() {
    let r = draw(&repo(), "default", "json");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let e = edges(&r.json());
    edge(
        &e,
        "QUIC dial address | {pod_name}.request-router-headless.nvcf.svc.cluster.local:50072",
        "dials",
        "Service nvcf/request-router-headless |",
    );
    // No Gateway listener for an in-cluster address.
    assert!(!e
        .iter()
        .any(|(f, l, t, _)| f.contains("QUIC dial") && l == "dials" && t.contains("listener")));
}
