//! The render cache cannot lie: for edits to every class of input helmfile and helm read (the
//! state and its values inside the stack, a chart inside it, a chart, a chart tarball, values, an
//! environment values file and a sub-state outside it, a file a template reads, an environment
//! variable, the helm binary, the policy), the verdict of a warm run equals the verdict of a
//! `--no-cache` run. Each edit turns one image to `:latest`, so each must change the verdict:
//! a cache that missed any input would answer with the previous one.
//!
//! (Every realworld shape is also checked warm against its cold run: `realworld.rs`.)

mod support;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::run::{command, finish};
use support::tool;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A chart whose one template renders a Deployment per entry of `deployments` (name → image).
fn chart(dir: &Path, name: &str, deployments: &[(&str, &str)]) {
    write(
        &dir.join("Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    );
    let mut values = String::from("deployments:\n");
    for (n, image) in deployments {
        values.push_str(&format!("  {n}: {image}\n"));
    }
    write(&dir.join("values.yaml"), &values);
    write(
        &dir.join("templates/deployments.yaml"),
        r#"{{- range $name, $image := .Values.deployments }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
spec:
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      containers:
        - name: main
          image: {{ $image }}
{{- end }}
"#,
    );
}

fn package(chart_dir: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    let o = Command::new(tool("helm"))
        .arg("package")
        .arg(chart_dir)
        .arg("--destination")
        .arg(dest)
        .env("HOME", dest)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

const IMG: &str = "registry.example.com";

/// The workspace: `stack/` (the state's directory) and, beside it, what it reads from outside.
fn workspace(w: &Path) {
    let s = w.join("stack");
    write(
        &s.join("helmfile.yaml.gotmpl"),
        r#"environments:
  default:
    values:
      - ../values/env.yaml
---
helmfiles:
  - path: ../shared/sub.yaml
releases:
  - name: local
    namespace: apps
    chart: ./charts/local
    values:
      - local.yaml.gotmpl
  - name: app
    namespace: apps
    chart: ../charts/app
    values:
      - ../values/app.yaml
"#,
    );
    write(
        &s.join("local.yaml.gotmpl"),
        &format!(
            r#"deployments:
  inroot-state: {IMG}/state:1.0.0
  env-values: {{{{ .Values.envImage }}}}
  env-var: {IMG}/env:{{{{ requiredEnv "APP_TAG" }}}}
  readfile: {{{{ readFile "../outside/image.txt" | trim }}}}
"#
        ),
    );
    write(
        &s.join("validator-policy.yaml"),
        "version: 1\nsettings:\n  localChartRoots: [charts/]\n",
    );
    chart(
        &s.join("charts/local"),
        "local",
        &[
            ("inroot-chart", &format!("{IMG}/chart:1.0.0")),
            ("binary", &format!("{IMG}/binary:2.0.0")),
        ],
    );
    chart(
        &w.join("charts/app"),
        "app",
        &[("outside-chart", &format!("{IMG}/app:1.0.0"))],
    );
    subchart(w, "1.0.0");
    write(
        &w.join("values/env.yaml"),
        &format!("envImage: {IMG}/envvalues:1.0.0\n"),
    );
    write(
        &w.join("values/app.yaml"),
        &format!("deployments:\n  outside-values: {IMG}/values:1.0.0\n"),
    );
    write(&w.join("outside/image.txt"), &format!("{IMG}/readfile:1.0.0\n"));
    write(
        &w.join("shared/sub.yaml"),
        &format!(
            "releases:\n  - name: shared\n    namespace: shared\n    chart: ./chart\n    values:\n      - deployments:\n          sub-state: {IMG}/sub:1.0.0\n"
        ),
    );
    chart(&w.join("shared/chart"), "shared", &[]);
    helm_wrapper(w, false);
}

/// `charts/app/charts/sub-0.1.0.tgz`: a packaged subchart of the outside chart.
fn subchart(w: &Path, tag: &str) {
    let src = w.join("subchart-src/sub");
    chart(&src, "sub", &[("tarball", &format!("{IMG}/tarball:{tag}"))]);
    package(&src, &w.join("charts/app/charts"));
    std::fs::remove_dir_all(w.join("subchart-src")).unwrap();
}

/// The helm the validator runs (`NVCF_HELM`): the real one, and with `rewrite` a build that
/// changes what it writes (as a different helm version might).
fn helm_wrapper(w: &Path, rewrite: bool) -> PathBuf {
    let p = w.join("bin/helm");
    let post = if rewrite {
        r#"out=""; prev=""
for a in "$@"; do [ "$prev" = "--output-dir" ] && out=$a; prev=$a; done
[ -n "$out" ] && [ -d "$out" ] && find "$out" -name '*.yaml' -exec sed -i 's#binary:2.0.0#binary:latest#' {} +
"#
    } else {
        ""
    };
    write(
        &p,
        &format!(
            "#!/bin/sh\n'{}' \"$@\" || exit $?\n{post}exit 0\n",
            tool("helm").display()
        ),
    );
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Exit code and every finding (rule, environment, release, object, message), sorted.
fn verdict(w: &Path, tag: &str, cached: bool) -> (i32, Vec<String>) {
    let mut c = command(&w.join("stack"));
    c.args(["check", "--file", ".", "--offline", "--format", "json"])
        .args(if cached { &[][..] } else { &["--no-cache"][..] })
        .env("HOME", w.join("home"))
        .env("XDG_CACHE_HOME", w.join("cache"))
        // The helm of `helm_wrapper`: the real one, or one that changes what it writes.
        .env("NVCF_HELM", w.join("bin/helm"))
        .env("APP_TAG", tag);
    let r = finish(&mut c, None);
    let report = r.report().unwrap_or_else(|| panic!("no JSON report: {}", r.stderr));
    let mut f: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {} {}",
                f["rule"], f["environment"], f["release"], f["object"]["name"], f["message"]
            )
        })
        .collect();
    f.sort();
    (r.code, f)
}

#[test]
fn warm_verdict_equals_uncached_verdict_for_edits_to_every_input() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path();
    workspace(w);
    std::fs::create_dir_all(w.join("home")).unwrap();
    let latest = |s: &str| s.replace(":1.0.0", ":latest");
    let edit_file = |p: PathBuf| {
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(":1.0.0"), "{}", p.display());
        std::fs::write(&p, latest(&text)).unwrap();
    };
    let mut tag = "1.0.0".to_string();
    let mut before = verdict(w, &tag, true);
    assert_eq!(before, verdict(w, &tag, false), "a cold run stores what it renders");
    assert!(
        before.1.iter().any(|f| f.contains("\"chart-source-allowed\"")),
        "the stack renders: {before:?}"
    );
    type Edit<'a> = (&'a str, Box<dyn Fn(&mut String) + 'a>);
    let edits: Vec<Edit> = vec![
        (
            "a state file inside the stack",
            Box::new(|_| edit_file(w.join("stack/local.yaml.gotmpl"))),
        ),
        (
            "a chart inside the stack",
            Box::new(|_| edit_file(w.join("stack/charts/local/values.yaml"))),
        ),
        (
            "a chart outside the stack",
            Box::new(|_| edit_file(w.join("charts/app/values.yaml"))),
        ),
        ("a chart tarball outside the stack", Box::new(|_| subchart(w, "latest"))),
        (
            "a values file outside the stack",
            Box::new(|_| edit_file(w.join("values/app.yaml"))),
        ),
        (
            "environment values outside the stack",
            Box::new(|_| edit_file(w.join("values/env.yaml"))),
        ),
        (
            "a sub-state outside the stack",
            Box::new(|_| edit_file(w.join("shared/sub.yaml"))),
        ),
        (
            "a file a template reads",
            Box::new(|_| edit_file(w.join("outside/image.txt"))),
        ),
        (
            "an environment variable the state reads",
            Box::new(|t: &mut String| *t = "latest".into()),
        ),
        (
            "the helm binary",
            Box::new(|_| {
                helm_wrapper(w, true);
            }),
        ),
        (
            "the policy",
            Box::new(|_| {
                write(
                    &w.join("stack/validator-policy.yaml"),
                    "version: 1\nsettings:\n  localChartRoots: [vendor/]\n",
                )
            }),
        ),
    ];
    let mut fails = Vec::new();
    for (what, edit) in &edits {
        // Let mtimes move on (the binary's identity is remembered per change time).
        std::thread::sleep(std::time::Duration::from_millis(20));
        edit(&mut tag);
        let warm = verdict(w, &tag, true);
        let cold = verdict(w, &tag, false);
        if warm != cold {
            fails.push(format!("{what}: warm {warm:?}\n  --no-cache {cold:?}"));
        }
        if cold == before {
            fails.push(format!(
                "{what}: the edit changed nothing, so it proves nothing: {cold:?}"
            ));
        }
        before = cold;
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}
