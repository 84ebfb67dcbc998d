//! The gate judges the render `helmfile apply` installs, not helm's defaults: helm is told the
//! policy's Kubernetes version (`.Capabilities.KubeVersion`), the API versions that version
//! serves in every form a template asks (`.Capabilities.APIVersions.Has "apps/v1/Deployment"`),
//! and those of the CRDs the environment renders; a post-renderer plugin runs on the rendered
//! stream as at apply, and an executable post-renderer (which the pinned Helm 4 does not run) is
//! refused (exit 2 naming the release and the input).
//!
//! Each stack here makes a template branch on what differs: the insecure branch (an image with
//! the moving tag `latest`, an `image-pinned` error) renders only under apply's capabilities.

mod support;
use std::path::Path;
use std::process::Command;
use support::run::{command, finish};
use support::{path_with_tools, tool};

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A chart `name` whose template renders a Deployment with image `web:latest` when `condition`
/// (a template expression) holds, else `web:1.0.0`.
fn chart(stack: &Path, name: &str, condition: &str) {
    chart_tag(
        stack,
        name,
        &format!("{{{{ if {condition} }}}}latest{{{{ else }}}}1.0.0{{{{ end }}}}"),
    );
}

/// The line of the image in [`chart_tag`]'s template.
const IMAGE_LINE: usize = 14;

/// A chart `name` whose template renders a Deployment with image `web:` and `tag` (template text)
/// at line [`IMAGE_LINE`] of `templates/deployment.yaml`.
fn chart_tag(stack: &Path, name: &str, tag: &str) {
    let dir = stack.join("charts").join(name);
    write(
        &dir.join("Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    );
    write(
        &dir.join("templates/deployment.yaml"),
        &format!(
            r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: web
          image: registry.example.com/web:{tag}
"#
        ),
    );
}

/// A chart `crds` that installs the CRD of `example.io/v1` `Widget`.
fn crd_chart(stack: &Path) {
    let crd = stack.join("charts/crds");
    write(&crd.join("Chart.yaml"), "apiVersion: v2\nname: crds\nversion: 0.1.0\n");
    write(
        &crd.join("templates/crd.yaml"),
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#,
    );
}

fn state(stack: &Path, releases: &[&str], extra: &str) {
    let mut s = String::from(extra);
    s.push_str("releases:\n");
    for r in releases {
        s.push_str(&format!(
            "  - name: {r}\n    namespace: apps\n    chart: ./charts/{r}\n"
        ));
    }
    write(&stack.join("helmfile.yaml"), &s);
}

/// The gate run in `dir` as every test runs it (`support::run::command`: the pinned tools first
/// on PATH, the pinned clock), with `env` set: `(exit code, the JSON report or null when it wrote
/// none, stderr)`.
fn gate(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> (i32, serde_json::Value, String) {
    let mut c = command(dir);
    c.args(args).envs(env.iter().copied());
    let r = finish(&mut c, None);
    (r.code, r.report().unwrap_or_default(), r.stderr)
}

/// [`gate`] in `stack` with its own HOME and cache (and `HELM_PLUGINS` when given).
fn run_gate(stack: &Path, args: &[&str], plugins: Option<&Path>) -> (i32, serde_json::Value, String) {
    let (home, cache) = (stack.join(".home"), stack.join(".cache"));
    let mut env = vec![("HOME", home.as_path()), ("XDG_CACHE_HOME", cache.as_path())];
    if let Some(plugins) = plugins {
        env.push(("HELM_PLUGINS", plugins));
    }
    gate(stack, args, &env)
}

/// `[(rule, release, text)]` of a report; `text` is the message, after the object's name when
/// `with_name`.
fn findings_of(report: &serde_json::Value, with_name: bool) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let message = f["message"].as_str().unwrap_or("");
            (
                f["rule"].as_str().unwrap_or("").to_string(),
                f["release"].as_str().unwrap_or("").to_string(),
                if with_name {
                    format!("{} {message}", f["object"]["name"].as_str().unwrap_or(""))
                } else {
                    message.to_string()
                },
            )
        })
        .collect()
}

/// `(exit code, [(rule, release, "object-name message")], stderr)` of `check --offline --no-cache`.
fn check(stack: &Path) -> (i32, Vec<(String, String, String)>, String) {
    let args = ["check", "--file", ".", "--offline", "--no-cache", "--format", "json"];
    let (code, report, stderr) = run_gate(stack, &args, None);
    (code, findings_of(&report, true), stderr)
}

fn image_pinned_on(findings: &[(String, String, String)], object: &str) -> bool {
    // The insecure branch: the moving tag `latest` (the registry finding holds in both branches).
    findings
        .iter()
        .any(|(r, _, o)| r == "image-pinned" && o.starts_with(&format!("{object} ")) && o.contains("moving tag"))
}

#[test]
fn templates_see_the_policy_kubernetes_version_and_its_api_versions() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    // Helm's own default is v1.30 (3.x); the policy says 1.35.
    chart(
        s,
        "kube",
        r#"semverCompare ">=1.35-0" .Capabilities.KubeVersion.Version"#,
    );
    // A cluster reports every served kind as group/version/kind; helm's default set has none.
    chart(s, "gvk", r#".Capabilities.APIVersions.Has "apps/v1/Deployment""#);
    // The near miss: a group no built-in and no CRD of the environment serves stays unreported.
    // (helm adds `--api-versions` to its own built-in set, which still lists removed versions such
    // as apps/v1beta2: an object rendered in one is a `schema-valid` finding.)
    chart(s, "absent", r#".Capabilities.APIVersions.Has "example.io/v1""#);
    state(s, &["kube", "gvk", "absent"], "");
    write(
        &s.join("validator-policy.yaml"),
        "version: 1\nsettings:\n  kubernetesVersion: \"1.35\"\n",
    );
    let (code, f, err) = check(s);
    assert_eq!(code, 1, "{f:?}\n{err}");
    assert!(image_pinned_on(&f, "kube"), "KubeVersion is the policy's: {f:?}");
    assert!(image_pinned_on(&f, "gvk"), "apps/v1/Deployment is served: {f:?}");
    assert!(!image_pinned_on(&f, "absent"), "example.io/v1 is not served: {f:?}");
}

#[test]
fn crds_the_environment_renders_are_served_to_its_templates() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    crd_chart(s);
    chart(s, "user", r#".Capabilities.APIVersions.Has "example.io/v1/Widget""#);
    state(s, &["crds", "user"], "");
    let (code, f, err) = check(s);
    assert_eq!(code, 1, "{f:?}\n{err}");
    assert!(image_pinned_on(&f, "user"), "the rendered CRD is served: {f:?}");
}

/// `--namespace` in helmDefaults.args: helm takes the last namespace flag, after the release's
/// own, so apply renders and installs the release elsewhere than the state says. Refused, exit 2,
/// naming the release, the namespace and the fix; the release's own namespace there is not.
#[test]
fn a_namespace_flag_in_helm_defaults_args_is_refused_when_it_moves_the_release() {
    // What the refusal says of helm: the last namespace flag wins.
    let d = tempfile::tempdir().unwrap();
    chart(d.path(), "web", ".Release.Namespace | eq \"b\"");
    let out = Command::new(tool("helm"))
        .args([
            "template",
            "web",
            "charts/web",
            "--namespace",
            "apps",
            "--namespace",
            "b",
        ])
        .current_dir(d.path())
        .env("HOME", d.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("web:latest"), "{out:?}");

    // The silent case ends in a verdict (exit 1: the strict defaults' registry finding, as in
    // every stack here without a policy) and names no namespace flag.
    for (args, code) in [("[\"--namespace\", \"b\"]", 2), ("[\"-n=apps\"]", 1)] {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        chart(s, "web", "false");
        state(s, &["web"], &format!("helmDefaults:\n  args: {args}\n"));
        let (got, f, err) = check(s);
        assert_eq!(got, code, "{args}: {f:?}\n{err}");
        if code == 2 {
            assert!(
                err.contains("apps/web")
                    && err.contains("helmDefaults.args (helmfile.yaml:1) gives `--namespace b`")
                    && err.contains("release's `namespace:`"),
                "{err}"
            );
        } else {
            assert!(!err.contains("namespace flag"), "{err}");
        }
    }
}

/// A post-renderer named by an executable path: the pinned Helm 4 runs only postrenderer/v1
/// plugins and fails on it (`helmfile apply` installs nothing), so the release is refused, exit 2
/// naming the release, the input and the fix.
#[test]
fn an_executable_post_renderer_is_refused_naming_the_release_and_the_input() {
    for (extra, release_extra, input) in [
        ("", "    postRenderer: ./post.sh\n", "postRenderer: ./post.sh"),
        (
            "helmDefaults:\n  postRenderer: ./post.sh\n",
            "",
            "helmDefaults.postRenderer: ./post.sh",
        ),
        (
            "helmDefaults:\n  args: [\"--post-renderer\", \"./post.sh\"]\n",
            "",
            "helmDefaults.args: --post-renderer ./post.sh",
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        chart(s, "web", "false");
        write(&s.join("post.sh"), "#!/bin/sh\ncat\n");
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(s.join("post.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        write(
            &s.join("helmfile.yaml"),
            &format!("{extra}releases:\n  - name: web\n    namespace: apps\n    chart: ./charts/web\n{release_extra}"),
        );
        let (code, f, err) = check(s);
        assert_eq!(code, 2, "{input}: {f:?}\n{err}");
        assert!(
            err.contains("apps/web") && err.contains(input) && err.contains("postrenderer/v1 plugin"),
            "{input}: {err}"
        );
    }
    // The pinned helm itself refuses a path: what the refusal says of apply holds.
    let d = tempfile::tempdir().unwrap();
    chart(d.path(), "web", "false");
    let out = Command::new(tool("helm"))
        .args(["template", "web", "charts/web", "--post-renderer", "./post.sh"])
        .current_dir(d.path())
        .env("HOME", d.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"), "{out:?}");
}

/// A postrenderer/v1 plugin (what Helm 4 runs at apply) with `script` as its command, in
/// `<dir>/plugins/<name>`.
fn plugin(dir: &Path, name: &str, script: &str) -> std::path::PathBuf {
    let plugins = dir.join("plugins");
    let p = plugins.join(name);
    write(
        &p.join("plugin.yaml"),
        &format!(
            "apiVersion: v1\ntype: postrenderer/v1\nname: {name}\nversion: 0.1.0\nruntime: subprocess\n\
             runtimeConfig:\n  platformCommand:\n    - command: ${{HELM_PLUGIN_DIR}}/run.sh\n"
        ),
    );
    write(&p.join("run.sh"), script);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    plugins
}

/// `check` with `HELM_PLUGINS` set (the plugins an apply run on this machine would find).
fn check_with_plugins(stack: &Path, plugins: &Path, cache: bool) -> (i32, Vec<(String, String, String)>, String) {
    let mut args = vec!["check", "--file", ".", "--offline", "--format", "json"];
    if !cache {
        args.push("--no-cache");
    }
    let (code, report, stderr) = run_gate(stack, &args, Some(plugins));
    (code, findings_of(&report, false), stderr)
}

/// A post-renderer plugin runs inside the seal on the rendered stream, as helm runs it at apply:
/// one that adds `--quic-insecure` to the container is an `insecure-flag` finding, wherever it is
/// named (release, helmDefaults, helmDefaults.args, with postRendererArgs); one that passes the
/// stream through is silent. A warm run never answers for a changed plugin (such a state is not
/// cached).
#[test]
fn a_post_renderer_plugin_runs_on_the_rendered_stream() {
    // Adds its first argument to the web container's args (helm hands the plugin the
    // postRendererArgs).
    let inject = r#"#!/bin/sh
exec sed "s/^\( *\)- name: web\$/&\n\1  args: [\"$1\"]/"
"#;
    for (extra, release_extra) in [
        (
            "",
            "    postRenderer: inject\n    postRendererArgs: [\"--quic-insecure\"]\n",
        ),
        (
            "helmDefaults:\n  postRenderer: inject\n  postRendererArgs: [\"--quic-insecure\"]\n",
            "",
        ),
        (
            "helmDefaults:\n  args: [\"--post-renderer\", \"inject\", \"--post-renderer-args\", \"--quic-insecure\"]\n",
            "",
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        chart(s, "web", "false");
        let plugins = plugin(s, "inject", inject);
        write(
            &s.join("helmfile.yaml"),
            &format!("{extra}releases:\n  - name: web\n    namespace: apps\n    chart: ./charts/web\n{release_extra}"),
        );
        let (code, f, err) = check_with_plugins(s, &plugins, false);
        assert_eq!(code, 1, "{extra}{release_extra}: {f:?}\n{err}");
        let insecure = |f: &[(String, String, String)]| {
            f.iter()
                .any(|(r, rel, m)| r == "insecure-flag" && rel == "apps/web" && m.contains("--quic-insecure"))
        };
        assert!(insecure(&f), "{extra}{release_extra}: {f:?}");
        // The near miss: the same plugin, passing the stream through.
        plugin(s, "inject", "#!/bin/sh\ncat\n");
        let (code, f, err) = check_with_plugins(s, &plugins, true);
        assert_eq!(code, 1, "image-pinned only: {f:?}\n{err}");
        assert!(!insecure(&f), "{f:?}");
    }
}

#[test]
fn the_upgrade_render_is_compared_with_the_install_render() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    // Every apply after the first is an upgrade: this chart turns insecure then.
    chart(s, "upgrades", ".Release.IsUpgrade");
    // The near miss: it asks, and renders the same either way.
    chart(s, "same", "and .Release.IsUpgrade .Release.IsInstall");
    state(s, &["upgrades", "same"], "");
    let (code, f, err) = check(s);
    assert_eq!(code, 1, "{f:?}\n{err}");
    let upgrade = |release: &str| {
        f.iter().any(|(r, rel, m)| {
            r == "render-depends-on-cluster" && rel == &format!("apps/{release}") && m.contains("upgrade render")
        })
    };
    assert!(upgrade("upgrades"), "{f:?}");
    assert!(!upgrade("same"), "{f:?}");
}

/// One `render-depends-on-cluster` finding: `(release, file, line, message)`.
type Read = (String, String, Option<u64>, String);

/// Each `render-depends-on-cluster` finding of `check --offline`, with the exit code and stderr.
fn cluster_reads_of(stack: &Path) -> (i32, Vec<Read>, String) {
    let args = ["check", "--file", ".", "--offline", "--no-cache", "--format", "json"];
    let (code, report, stderr) = run_gate(stack, &args, None);
    let found = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["rule"] == "render-depends-on-cluster")
        .map(|f| {
            (
                f["release"].as_str().unwrap_or("").to_string(),
                f["source"]["file"].as_str().unwrap_or("").to_string(),
                f["source"]["line"].as_u64(),
                f["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    (code, found, stderr)
}

/// `helm template` renders `.Release.Revision` as 1, with `--is-upgrade` too; every apply after
/// the first renders the release's next revision (2, 3, …), which no offline render has. So every
/// read of it is a `render-depends-on-cluster` finding at its file and line: a branch on it, a
/// value written into an object (an annotation), the release object taken whole (a variable, a
/// helper given `.Release`, a string key). A chart reading only the release's name and namespace,
/// and release notes reading the revision (never installed), stay silent.
#[test]
fn a_template_reading_the_release_revision_is_reported_at_its_line() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    // Insecure (the moving tag) from the second apply on: passed the gate before.
    chart(s, "branches", "gt (int .Release.Revision) 1");
    // Written into an annotation: the object installed is not the one judged.
    chart_tag(s, "writes", "1.0.0");
    write(
        &s.join("charts/writes/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: writes\n  annotations:\n    revision: {{ .Release.Revision | quote }}\n",
    );
    chart_tag(
        s,
        "whole",
        "{{ $r := .Release }}{{ if gt (int $r.Revision) 1 }}latest{{ else }}1.0.0{{ end }}",
    );
    chart_tag(s, "helper", "{{ include \"tag\" .Release }}");
    write(
        &s.join("charts/helper/templates/_helpers.tpl"),
        "{{- define \"tag\" -}}\n{{ if gt (int (index . \"Revision\")) 1 }}latest{{ else }}1.0.0{{ end }}\n{{- end }}\n",
    );
    // The near miss: the release's name and namespace; the revision in the notes only.
    chart_tag(s, "names", "{{ .Release.Name }}-{{ $.Release.Namespace }}");
    write(
        &s.join("charts/names/templates/NOTES.txt"),
        "Installed {{ .Release.Name }} at revision {{ .Release.Revision }}.\n",
    );
    state(s, &["branches", "writes", "whole", "helper", "names"], "");
    let (code, found, err) = cluster_reads_of(s);
    assert_eq!(code, 1, "{found:?}\n{err}");
    let at = |r: &str, file: &str, line: usize| {
        (
            format!("apps/{r}"),
            format!("charts/{r}/templates/{file}"),
            Some(line as u64),
        )
    };
    let mut got: Vec<(String, String, Option<u64>)> =
        found.iter().map(|(r, f, l, _)| (r.clone(), f.clone(), *l)).collect();
    got.sort();
    assert_eq!(
        got,
        [
            at("branches", "deployment.yaml", IMAGE_LINE),
            at("helper", "_helpers.tpl", 2),
            at("helper", "deployment.yaml", IMAGE_LINE),
            at("whole", "deployment.yaml", IMAGE_LINE),
            at("writes", "cm.yaml", 6),
        ],
        "{found:#?}"
    );
    for (_, _, _, m) in &found {
        assert!(m.contains("reads the release revision"), "{m}");
    }
}

/// A template that reads `.Release.IsUpgrade` without naming it, through the release object taken
/// whole (a computed key, a variable, `with`, `$.Release`, `toJson`, a helper given `.Release`, the
/// key `"Release"` of the root), is rendered as an upgrade too, and its upgrade-only branch is
/// reported; a chart reading only the release's name is not rendered again.
#[test]
fn the_release_object_taken_whole_asks_for_the_upgrade_render() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    let up = "(print \"Is\" \"Upgrade\")";
    let branch = |cond: &str| format!("{{{{ if {cond} }}}}latest{{{{ else }}}}1.0.0{{{{ end }}}}");
    chart(s, "computed", &format!("index .Release {up}"));
    chart_tag(
        s,
        "variable",
        &format!("{{{{ $r := .Release }}}}{}", branch(&format!("get $r {up}"))),
    );
    chart_tag(
        s,
        "with",
        &format!(
            "{{{{ with .Release }}}}{}{{{{ end }}}}",
            branch(&format!("index . {up}"))
        ),
    );
    chart(s, "root", &format!("index $.Release {up}"));
    chart(
        s,
        "json",
        "contains (print \"Is\" \"Upgrade\\\":true\") (toJson .Release)",
    );
    chart_tag(s, "helper", "{{ template \"tag\" .Release }}");
    write(
        &s.join("charts/helper/templates/_helpers.tpl"),
        &format!(
            "{{{{- define \"tag\" -}}}}{}{{{{- end }}}}\n",
            branch(&format!("index . {up}"))
        ),
    );
    chart(s, "key", &format!("index (index . \"Release\") {up}"));
    // The near miss: only the release's name, never rendered again.
    chart(s, "names", "eq .Release.Name \"other\"");
    let all = ["computed", "variable", "with", "root", "json", "helper", "key", "names"];
    state(s, &all, "");
    let (code, found, err) = cluster_reads_of(s);
    assert_eq!(code, 1, "{found:?}\n{err}");
    let differs = |r: &str| {
        found
            .iter()
            .any(|(rel, _, _, m)| rel == &format!("apps/{r}") && m.contains("differs from its install render"))
    };
    for r in &all[..all.len() - 1] {
        assert!(differs(r), "{r}: {found:#?}");
    }
    assert!(!found.iter().any(|(rel, _, _, _)| rel == "apps/names"), "{found:#?}");
}

/// A chart that renders a value as a template (`tpl`) reads what that value's text reads: a value
/// of the state reading `.Release.IsUpgrade` makes the release ask for the upgrade render (its
/// upgrade-only branch is reported), one reading `.Release.Revision` is a finding at the
/// release; a value with template text reading only the release's name is neither.
#[test]
fn values_rendered_by_tpl_are_read_like_templates() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    for r in ["upgrades", "revision", "names"] {
        chart_tag(s, r, "{{ tpl .Values.tag . }}");
    }
    let tag = |cond: &str| format!("'{{{{ if {cond} }}}}latest{{{{ else }}}}1.0.0{{{{ end }}}}'");
    let mut text = String::from("releases:\n");
    for (r, cond) in [
        ("upgrades", ".Release.IsUpgrade"),
        ("revision", "gt (int .Release.Revision) 1"),
        ("names", "eq .Release.Name \"other\""),
    ] {
        // A plain values file: helmfile renders only `.gotmpl` ones (and the state itself).
        write(&s.join(format!("values/{r}.yaml")), &format!("tag: {}\n", tag(cond)));
        text.push_str(&format!(
            "  - name: {r}\n    namespace: apps\n    chart: ./charts/{r}\n    values:\n      - values/{r}.yaml\n"
        ));
    }
    write(&s.join("helmfile.yaml"), &text);
    let (code, found, err) = cluster_reads_of(s);
    assert_eq!(code, 1, "{found:?}\n{err}");
    let says = |r: &str, what: &str| {
        found
            .iter()
            .any(|(rel, _, _, m)| rel == &format!("apps/{r}") && m.contains(what))
    };
    assert!(says("upgrades", "differs from its install render"), "{found:#?}");
    assert!(says("revision", "reads the release revision"), "{found:#?}");
    assert!(!found.iter().any(|(rel, _, _, _)| rel == "apps/names"), "{found:#?}");
}

/// The upgrade render of a release helmfile renders is made by the helm front beside the install
/// render, from the same helm call with `--is-upgrade` (the values files helmfile wrote for it):
/// one `helmfile template` for the environment, not a second one. A chart that fails only as an
/// upgrade is reported (its upgrade render failed), one that renders the same either way is not.
#[test]
fn the_upgrade_render_is_made_beside_the_install_render() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    chart(s, "upgrades", ".Release.IsUpgrade");
    chart(s, "same", "and .Release.IsUpgrade .Release.IsInstall");
    chart(s, "breaks", "false");
    write(
        &s.join("charts/breaks/templates/upgrade.yaml"),
        "{{ if .Release.IsUpgrade }}{{ fail \"no upgrade path from here\" }}{{ end }}\n",
    );
    state(s, &["upgrades", "same", "breaks"], "");
    // helmfile itself, counting its runs (in a directory the seal lets it write).
    let logs = s.join(".logs");
    std::fs::create_dir_all(&logs).unwrap();
    let wrapper = s.join(".bin/helmfile");
    write(
        &wrapper,
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            logs.join("helmfile.log").display(),
            tool("helmfile").display()
        ),
    );
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = ["check", "--file", ".", "--offline", "--no-cache", "--format", "json"];
    let (home, cache) = (s.join(".home"), s.join(".cache"));
    let env = [
        ("HOME", home.as_path()),
        ("XDG_CACHE_HOME", cache.as_path()),
        ("NVCF_HELMFILE", wrapper.as_path()),
        ("NVCF_TEST_SEAL_WRITABLE", logs.as_path()),
    ];
    let (code, report, err) = gate(s, &args, &env);
    let f = findings_of(&report, false);
    assert_eq!(code, 1, "{f:?}\n{err}");
    let upgrade = |release: &str, says: &str| {
        f.iter().any(|(r, rel, m)| {
            r == "render-depends-on-cluster" && rel == &format!("apps/{release}") && m.contains(says)
        })
    };
    // The message names the objects that differ, and only them.
    assert!(
        upgrade("upgrades", "differs from its install render (Deployment upgrades);"),
        "{f:?}"
    );
    assert!(upgrade("breaks", "upgrade render (`--is-upgrade`) failed"), "{f:?}");
    assert!(upgrade("breaks", "no upgrade path from here"), "{f:?}");
    assert!(!upgrade("same", "upgrade render"), "{f:?}");
    let log = std::fs::read_to_string(logs.join("helmfile.log")).unwrap();
    let templates = log.lines().filter(|l| l.split(' ').any(|w| w == "template")).count();
    assert_eq!(templates, 1, "one helmfile template for the environment:\n{log}");
    assert!(!log.contains("--is-upgrade"), "{log}");
}

/// The upgrade render renders only the releases that ask, by name: a remote release beside them
/// (not rendered offline) is never swept into it, so a chart that renders the same either way
/// gets no finding.
#[test]
fn the_upgrade_render_leaves_the_remote_releases_out() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    chart(s, "same", "and .Release.IsUpgrade .Release.IsInstall");
    state(
        s,
        &["same"],
        "repositories:\n  - name: jetstack\n    url: https://charts.jetstack.io\n",
    );
    let mut text = std::fs::read_to_string(s.join("helmfile.yaml")).unwrap();
    text.push_str(
        "  - name: cm\n    namespace: cert-manager\n    chart: jetstack/cert-manager\n    version: v1.16.0\n",
    );
    write(&s.join("helmfile.yaml"), &text);
    let (_, f, err) = check(s);
    assert!(
        !f.iter()
            .any(|(r, rel, _)| r == "render-depends-on-cluster" && rel == "apps/same"),
        "{f:?}\n{err}"
    );
}

/// Every hook whose effect the render does not include is reported in every mode, online too,
/// whatever program it runs, naming the release, the event, the command and the hook's line: a
/// `presync` hook (only apply runs it) running kubectl or a script of the repository, and a
/// `prepare` hook (the render runs it too, but not what it changes besides the render's inputs).
/// A hook on no event helmfile fires never runs and is not reported.
#[test]
fn hooks_outside_the_render_are_reported_online_too() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    chart(s, "web", "false");
    state(s, &["web"], "");
    let text = std::fs::read_to_string(s.join("helmfile.yaml")).unwrap()
        + "    hooks:\n      - events: [presync]\n        command: kubectl\n        args: [apply, -f, extra.yaml]\n      \
           - events: [presync, postsync]\n        command: ./scripts/migrate.sh\n      - events: [prepare]\n        \
           command: sh\n        args: [-c, echo prepared]\n      - events: []\n        command: ./never.sh\n";
    write(&s.join("helmfile.yaml"), &text);
    for offline in [true, false] {
        let mut args = vec!["check", "--file", ".", "--no-cache", "--format", "json"];
        if offline {
            args.push("--offline");
        }
        let (code, report, stderr) = gate(s, &args, &[("HOME", &s.join(".home"))]);
        assert_eq!(code, 1, "offline={offline}: {stderr}");
        let hooks: Vec<(String, u64)> = report["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["rule"] == "render-depends-on-cluster" && f["release"] == "apps/web")
            .map(|f| {
                assert_eq!(f["source"]["file"], "helmfile.yaml", "{f}");
                (
                    f["message"].as_str().unwrap_or("").to_string(),
                    f["source"]["line"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        let has = |text: &str, line: u64| hooks.iter().any(|(m, l)| m.contains(text) && *l == line);
        assert!(
            has(
                "its presync hook runs `kubectl apply -f extra.yaml` when helmfile applies",
                7
            ) && has(
                "its presync/postsync hook runs `./scripts/migrate.sh` when helmfile applies",
                10
            ) && has(
                "its prepare hook runs `sh -c echo prepared` in every helmfile command, this render included",
                12
            ),
            "offline={offline}: {hooks:#?}"
        );
        assert_eq!(
            hooks.len(),
            3,
            "offline={offline}: the hook on no event is reported: {hooks:#?}"
        );
    }
}

/// A relative path in helmDefaults.args (`--values v.yaml`): helmfile 0.166 runs helm in the
/// directory of the state file, wherever `helmfile apply` is started (the oracle below: the real
/// helmfile started elsewhere reads the state's `v.yaml`), so the path is not ambiguous and the
/// gate must resolve it there too. For a remote chart the gate runs helm itself (on the
/// lock-checked tarball): started from another directory holding a decoy `v.yaml`, it must still
/// read the state's. Fires: the state's `v.yaml` takes the insecure branch (`image-pinned`, the
/// moving tag); silent: the state's `v.yaml` takes the safe one while the decoy takes the insecure
/// one; and an absolute `--values` path agrees.
#[test]
fn relative_paths_in_helm_defaults_args_resolve_beside_the_state_file() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().canonicalize().unwrap();
    let home = s.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The chart, packaged into a mirror and pinned in the lock.
    chart(&s.join("src"), "web", ".Values.insecure");
    let mirror = s.join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    let out = Command::new(tool("helm"))
        .args(["package"])
        .arg(s.join("src/charts/web"))
        .arg("-d")
        .arg(&mirror)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    use sha2::Digest as _;
    let sha = hex::encode(sha2::Sha256::digest(
        std::fs::read(mirror.join("web-0.1.0.tgz")).unwrap(),
    ));
    let stack = s.join("stack");
    let elsewhere = s.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let write_state = |args: &str| {
        write(
            &stack.join("helmfile.yaml"),
            &format!(
                "repositories:\n- name: loop\n  url: http://127.0.0.1:9\nhelmDefaults:\n  args: [{args}]\nreleases:\n\
                 - name: web\n  namespace: apps\n  chart: loop/web\n  version: 0.1.0\n"
            ),
        );
    };
    write(
        &stack.join("charts.lock.yaml"),
        &format!(
            "charts:\n  - release: web\n    chart: web\n    repository: http://127.0.0.1:9\n    version: 0.1.0\n    \
             sha256: {sha}\n"
        ),
    );
    // The gate started in `elsewhere` on the stack: does it judge the insecure branch?
    let insecure_judged = || {
        // Started in `elsewhere`, not in the stack: the working directory is what this tests.
        let (code, report, stderr) = gate(
            &elsewhere,
            &[
                "check",
                "--offline",
                "--no-cache",
                "--format",
                "json",
                "--chart-mirror",
                mirror.to_str().unwrap(),
                "--file",
                stack.to_str().unwrap(),
            ],
            &[("HOME", &home), ("XDG_CACHE_HOME", &s.join("cache"))],
        );
        let f = findings_of(&report, true);
        let rendered = report["environments"][0]["releases"][0]["rendered"] == true;
        assert!(code == 1 && rendered, "{code} rendered={rendered}: {f:?}\n{stderr}");
        image_pinned_on(&f, "web")
    };
    let set = |beside_state: bool, in_cwd: bool| {
        write(&stack.join("v.yaml"), &format!("insecure: {beside_state}\n"));
        write(&elsewhere.join("v.yaml"), &format!("insecure: {in_cwd}\n"));
    };

    // The oracle: the real helmfile, started elsewhere, on a local copy of the chart, reads the
    // `v.yaml` beside the state file.
    set(true, false);
    let oracle = s.join("oracle");
    chart(&oracle, "web", ".Values.insecure");
    std::fs::copy(stack.join("v.yaml"), oracle.join("v.yaml")).unwrap();
    write(
        &oracle.join("helmfile.yaml"),
        "helmDefaults:\n  args: [--values, v.yaml]\nreleases:\n- name: web\n  namespace: apps\n  chart: ./charts/web\n",
    );
    let out = Command::new(tool("helmfile"))
        .current_dir(&elsewhere)
        .arg("--file")
        .arg(oracle.join("helmfile.yaml"))
        .args(["--helm-binary"])
        .arg(tool("helm"))
        .arg("template")
        .env("PATH", path_with_tools())
        .env("HOME", &home)
        .output()
        .unwrap();
    let rendered = String::from_utf8_lossy(&out.stdout);
    assert!(rendered.contains("web:latest"), "helmfile read another v.yaml: {out:?}");

    write_state("--values, v.yaml");
    set(true, false);
    assert!(
        insecure_judged(),
        "fires: the gate did not read the v.yaml beside the state"
    );
    set(false, true);
    assert!(
        !insecure_judged(),
        "silent: the gate read the v.yaml of its working directory"
    );
    // An absolute path names the same file wherever helm runs.
    write_state(&format!("--values, {}", stack.join("v.yaml").display()));
    set(true, false);
    assert!(insecure_judged(), "absolute path");
}

/// A chart `parent` (one ConfigMap) vendoring the chart [`chart`] builds as `sub` (a Deployment
/// branching on `condition`) as the archive `charts/sub-0.1.0.tgz`, packaged by the real helm
/// (what `helm dependency build` writes; helm renders it as a subchart), and `extra` as one more
/// template of `sub`. The state installs `parent`.
fn vendoring(stack: &Path, condition: &str, extra: &str) {
    let parent = stack.join("charts/parent");
    write(
        &parent.join("Chart.yaml"),
        "apiVersion: v2\nname: parent\nversion: 0.1.0\n",
    );
    write(
        &parent.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\ndata:\n  a: b\n",
    );
    let src = stack.join(".src");
    chart(&src, "sub", condition);
    write(&src.join("charts/sub/templates/extra.yaml"), extra);
    let o = Command::new(tool("helm"))
        .arg("package")
        .arg(src.join("charts/sub"))
        .arg("--destination")
        .arg(parent.join("charts"))
        .env("PATH", path_with_tools())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(&src).unwrap();
    state(stack, &["parent"], "");
}

/// `check --objects`: (exit code, findings, the objects document, stderr).
fn check_objects(stack: &Path) -> (i32, Vec<(String, String, String)>, serde_json::Value, String) {
    let objects = stack.join(".objects.json");
    let objects_arg = objects.to_str().unwrap();
    let args = [
        "check",
        "--file",
        ".",
        "--offline",
        "--no-cache",
        "--format",
        "json",
        "--objects",
        objects_arg,
    ];
    let (code, report, stderr) = run_gate(stack, &args, None);
    let doc = std::fs::read(&objects).map_or(serde_json::Value::Null, |b| serde_json::from_slice(&b).unwrap());
    (code, findings_of(&report, true), doc, stderr)
}

const NO_LOOKUP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  lookupTable: none\n";

/// A template of a vendored subchart archive that calls `lookup` is `render-depends-on-cluster`,
/// naming the archive and the template's line in it; the same archive whose template only has a
/// `lookupTable:` key is not.
#[test]
fn lookup_in_a_vendored_subchart_archive_is_render_depends_on_cluster() {
    let calls = "{{- $s := lookup \"v1\" \"Secret\" \"apps\" \"s\" }}\n".to_string() + NO_LOOKUP;
    for (extra, fires) in [(calls.as_str(), true), (NO_LOOKUP, false)] {
        let d = tempfile::tempdir().unwrap();
        vendoring(d.path(), "false", extra);
        let (code, f, err) = check(d.path());
        assert_eq!(code, 1, "{f:?}\n{err}");
        let reads: Vec<&String> = f
            .iter()
            .filter(|(r, rel, _)| r == "render-depends-on-cluster" && rel == "apps/parent")
            .map(|(_, _, m)| m)
            .collect();
        if fires {
            assert_eq!(reads.len(), 1, "{f:?}");
            assert!(
                reads[0].contains("templates/extra.yaml line 1")
                    && reads[0].contains("charts/sub-0.1.0.tgz")
                    && reads[0].contains("calls `lookup`"),
                "{reads:?}"
            );
        } else {
            assert!(reads.is_empty(), "{f:?}");
        }
    }
}

/// A vendored subchart archive whose template branches on `.Release.IsUpgrade` is rendered again
/// as an upgrade, and the difference is a finding; one that does not ask is not rendered again.
#[test]
fn a_vendored_subchart_archive_asking_is_upgrade_is_rendered_as_an_upgrade() {
    for (condition, asks) in [(".Release.IsUpgrade", true), ("false", false)] {
        let d = tempfile::tempdir().unwrap();
        vendoring(d.path(), condition, NO_LOOKUP);
        let (code, f, objects, err) = check_objects(d.path());
        assert_eq!(code, 1, "{f:?}\n{err}");
        let upgrade_rendered = &objects["environments"][0]["upgradeRendered"];
        let differs = f.iter().any(|(r, rel, m)| {
            r == "render-depends-on-cluster" && rel == "apps/parent" && m.contains("upgrade render")
        });
        if asks {
            assert_eq!(upgrade_rendered, &serde_json::json!(["apps/parent"]), "{err}");
            assert!(differs, "{f:?}");
        } else {
            assert_eq!(upgrade_rendered, &serde_json::json!([]), "{objects}");
            assert!(!differs, "{f:?}");
        }
    }
}

/// A vendored subchart archive whose template asks `.Capabilities.APIVersions` is rendered again
/// with the CRDs the environment renders, and sees them served; when no chart asks, the
/// environment is not rendered again (its API versions stay the built-in ones).
#[test]
fn a_vendored_subchart_archive_asking_api_versions_sees_the_rendered_crds() {
    for (condition, asks) in [
        (r#".Capabilities.APIVersions.Has "example.io/v1/Widget""#, true),
        ("false", false),
    ] {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        vendoring(s, condition, NO_LOOKUP);
        crd_chart(s);
        state(s, &["crds", "parent"], "");
        let (code, f, objects, err) = check_objects(s);
        assert_eq!(code, 1, "{f:?}\n{err}");
        let served = objects["environments"][0]["apiVersions"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "example.io/v1/Widget"));
        assert_eq!(image_pinned_on(&f, "sub"), asks, "{f:?}");
        assert_eq!(served, asks, "{objects}");
    }
}
