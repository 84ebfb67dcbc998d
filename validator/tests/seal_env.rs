//! The seal cannot be told apart from an apply run by what a template reads (issue 23, item 2).
//!
//! A values `.gotmpl` runs a probe with `exec` (every environment variable, sorted; uid and gid;
//! the working directory; a write into `TMPDIR` and into `HOME` read back) and takes the insecure
//! branch (the moving tag `latest`, an `image-pinned` error) only when the probe prints exactly
//! what it printed under the real helmfile run outside any seal with the same environment (the
//! oracle: `helmfile template` on a reference state in the same directory). It also branches on
//! `env`/`requiredEnv` of the variables a seal by variables would change. The gate must judge the
//! insecure branch. With the namespace switched off (`NVCF_TEST_NO_NAMESPACE`, the seal by
//! variables of earlier versions) the template sees the seal and renders the safe branch: the
//! probe can tell, so the test can fail.

mod support;
use base64::Engine;
use std::path::Path;
use std::process::Command;
use support::run::{exact, finish, NOW};
use support::{path_with_tools, tool};

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The environment of both runs: what an operator's shell might hold.
fn environment(s: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("PATH", path_with_tools()),
        ("HOME", s.join(".home").display().to_string()),
        ("XDG_CACHE_HOME", s.join(".cache").display().to_string()),
        ("KUBECONFIG", s.join(".home/.kube/config").display().to_string()),
        ("HTTPS_PROXY", "http://proxy.example.com:3128".into()),
        ("NO_PROXY", "localhost,.cluster.local".into()),
        ("LANG", "C.UTF-8".into()),
        ("NVCF_VALIDATE_NOW", NOW.into()),
    ]
}

fn stack(s: &Path) {
    let probe = s.join("probe.sh");
    write(
        &probe,
        r#"env | LC_ALL=C sort
echo "uid $(id -u) gid $(id -g) groups $(id -G)"
echo "pwd $(pwd)"
f="${TMPDIR:-/tmp}/nvcf-probe-$$"; echo tmp-write > "$f" && cat "$f" && rm -f "$f"
mkdir -p "$HOME/.cache/probe" && echo home-write > "$HOME/.cache/probe/x" && cat "$HOME/.cache/probe/x"
"#,
    );
    for name in ["app", "ref"] {
        write(
            &s.join(format!("charts/{name}/Chart.yaml")),
            &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        );
    }
    write(
        &s.join("charts/app/templates/deployment.yaml"),
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: web
          image: registry.example.com/web:{{ .Values.tag }}
"#,
    );
    write(
        &s.join("charts/ref/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ref\ndata:\n  seen: {{ .Values.seen | quote }}\n",
    );
    let p = probe.display();
    write(
        &s.join("probe.yaml.gotmpl"),
        &format!("seen: {{{{ exec \"sh\" (list \"{p}\") | b64enc | quote }}}}\n"),
    );
    write(
        &s.join("app.yaml.gotmpl"),
        &format!(
            r#"{{{{ $seen := exec "sh" (list "{p}") }}}}
{{{{ $apply := and (eq $seen (readFile "reference.txt")) (not (env "NVCF_VALIDATE_SEALED")) (eq (env "HTTPS_PROXY") "http://proxy.example.com:3128") (eq (requiredEnv "KUBECONFIG") (printf "%s/.kube/config" (requiredEnv "HOME"))) }}}}
tag: {{{{ if $apply }}}}latest{{{{ else }}}}1.0.0{{{{ end }}}}
"#
        ),
    );
    write(
        &s.join("reference.yaml"),
        "releases:\n- name: ref\n  namespace: apps\n  chart: ./charts/ref\n  values:\n  - probe.yaml.gotmpl\n",
    );
    write(
        &s.join("helmfile.yaml"),
        "releases:\n- name: app\n  namespace: apps\n  chart: ./charts/app\n  values:\n  - app.yaml.gotmpl\n",
    );
    std::fs::create_dir_all(s.join(".home")).unwrap();
}

/// What the probe prints under the real helmfile, unsealed, with the same environment.
fn reference(s: &Path) -> String {
    let out = Command::new(tool("helmfile"))
        .current_dir(s)
        .env_clear()
        .envs(environment(s))
        .args(["--file", "reference.yaml", "--helm-binary"])
        .arg(tool("helm"))
        .args(["--no-color", "template"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = text.lines().find(|l| l.trim_start().starts_with("seen:")).unwrap();
    let b64 = line.split_once(':').unwrap().1.trim().trim_matches('"');
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap()
}

/// The gate with exactly the reference run's environment (`exact`, not `command`): the probe
/// compares every variable, so the gate must start from the same ones and no others.
fn check(s: &Path, extra: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = exact(s, environment(s));
    c.envs(extra.iter().copied()).args([
        "check",
        "--file",
        "helmfile.yaml",
        "--offline",
        "--no-cache",
        "--format",
        "json",
    ]);
    let r = finish(&mut c, None);
    (r.code, r.stdout, r.stderr)
}

fn moving_tag(report: &str) -> bool {
    let r: serde_json::Value = serde_json::from_str(report).unwrap_or_default();
    r["findings"].as_array().into_iter().flatten().any(|f| {
        f["rule"] == "image-pinned"
            && f["object"]["name"] == "app"
            && f["message"].as_str().unwrap_or("").contains("moving tag")
    })
}

#[test]
fn a_template_cannot_tell_the_seal_from_an_apply_run() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    stack(s);
    let seen = reference(s);
    assert!(
        seen.contains("HTTPS_PROXY=http://proxy.example.com:3128") && seen.contains("home-write"),
        "{seen}"
    );
    write(&s.join("reference.txt"), &seen);
    std::fs::remove_dir_all(s.join(".home/.cache/probe")).unwrap();

    let (code, out, err) = check(s, &[]);
    assert!(
        moving_tag(&out),
        "the template told the gate's run from the apply run (it rendered the safe branch):\n{out}\n{err}"
    );
    assert_eq!(code, 1, "{out}\n{err}");
    // Nothing the sealed tools wrote reached HOME or the stack.
    assert!(
        !s.join(".home/.cache/probe").exists(),
        "the probe's write into HOME reached the host"
    );

    // The seal by variables (no namespace): the template sees it and renders the safe branch.
    let (_, out, err) = check(s, &[("NVCF_TEST_NO_NAMESPACE", "1")]);
    assert!(
        !moving_tag(&out),
        "the probe cannot see the seal by variables:\n{out}\n{err}"
    );
    assert!(out.contains("the environment differs from an apply run"), "{out}");
}
